"""The real-model lane is its own run: ``pytest --llm-lane`` (``make test-llm``) runs the
tests marked ``llm`` and nothing else; every other run deselects them (they need a
llama.cpp server and a model that the lane builds and fetches)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # The test process is a program of its own: like the CLI, it asks idle OpenMP
    # threads to sleep (kernels no longer do this at import), so parallel kernels do
    # not leave spinning threads on the two cores the rest of the suite needs.
    from sentient_kernels.config import prefer_passive_threads
    from sentient_kernels.warmup import warmup

    prefer_passive_threads()
    # Every kernel compiled (or loaded) before any test runs, one process at a time
    # (warmup's cross-process lock): test workers compiling a cold cache at once could
    # corrupt Numba's cache index (see sentient_kernels.warmup.compile_lock).
    warmup()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--llm-lane",
        action="store_true",
        help="run only the tests against a real local model (see `make test-llm`)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lane = bool(config.getoption("--llm-lane"))
    keep = [i for i in items if ("llm" in i.keywords) == lane]
    drop = [i for i in items if ("llm" in i.keywords) != lane]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
