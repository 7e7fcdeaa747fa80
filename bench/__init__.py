"""Benchmarks: pytest-benchmark suites and same-run peer comparisons."""
