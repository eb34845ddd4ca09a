"""Benchmark harnesses (``python -m bench.<name>``)."""
