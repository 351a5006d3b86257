"""Terrace: a serverless, TFC-API-compatible platform for OpenTofu and Terraform."""

__version__ = "0.1.0"  # as pyproject.toml; sent as X-Terrace-Version
