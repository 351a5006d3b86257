"""Benchmarks and estimates (python -m bench ...)."""
