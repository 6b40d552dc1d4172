"""Benchmarks for numcheck (run as `python -m bench.<name>` from the repository root)."""
