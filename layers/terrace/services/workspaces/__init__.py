"""Workspaces, their variables and their lock."""
