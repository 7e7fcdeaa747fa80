"""The per-file time budget of extraction (see the time policy of :mod:`.extract`)."""

from __future__ import annotations

import os
from collections.abc import Callable

from sentient_core.errors import ArgumentError
from sentient_core.ingest.errors import TimeBudgetExceeded

__all__ = ["DEFAULT_TIME_BUDGET", "TIME_BUDGET_BYTES", "Clock", "Deadline"]

DEFAULT_TIME_BUDGET = 10.0
"""Seconds one file's extraction may take (for inputs up to :data:`TIME_BUDGET_BYTES`)."""

TIME_BUDGET_BYTES = 5 << 20
"""Inputs larger than this get a proportionally larger budget (the slowest HTML
we measured, bench/html_scaling.py, runs at about 2 MiB per CPU second)."""

Clock = Callable[[], float]


class Deadline:
    """The per-file time budget: ``check`` raises once it is spent."""

    __slots__ = ("budget", "clock", "path", "start")

    def __init__(
        self, path: str | os.PathLike[str], budget: float | None, clock: Clock, size: int
    ) -> None:
        if budget is not None and not budget > 0:
            raise ArgumentError(f"time_budget must be > 0 seconds or None, got {budget!r}")
        self.path = path
        self.budget = None if budget is None else budget * max(1.0, size / TIME_BUDGET_BYTES)
        self.clock = clock
        self.start = clock() if budget is not None else 0.0

    def check(self, stage: str) -> None:
        if self.budget is None:
            return
        elapsed = self.clock() - self.start
        if elapsed > self.budget:
            raise TimeBudgetExceeded(
                self.path,
                f"extraction exceeded its time budget of {self.budget:.3g} s "
                f"(stopped in {stage} after {elapsed:.2f} s)",
            )
