"""The benchmark run is a program of its own: like ``sentient``, it asks idle OpenMP
threads to sleep, so one timed side's parallel kernel does not leave threads spinning
on the cores the next side needs (importing ``kernels`` does not set this)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    from sentient_kernels.config import prefer_passive_threads

    prefer_passive_threads()
