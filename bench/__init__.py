"""Benchmarks: each module of this package with ``run() -> rows`` reports figures; ``python -m
bench`` (``make bench``) runs them all and prints one table. A row is ``(name, value)`` or
``(name, value, unit)``."""
