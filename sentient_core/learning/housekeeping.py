"""The loop's housekeeping after each reflection: condensation, then skill repair.

Kept out of :mod:`.learner` so the loop only calls them; the gates themselves are
:class:`~sentient_core.layers.Condenser` and
:class:`~sentient_core.learning.repair.RepairDriver`. Each step counts its gate in
the session's :attr:`~sentient_core.vocab.SessionStats.promotion`, and a store error
is reported as an event, not raised: the loop goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from sentient_core.autonomy.funnel import count_promotion
from sentient_core.errors import SentientError
from sentient_core.events import ErrorEvent

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.layers import Condenser
    from sentient_core.learning.repair import RepairDriver
    from sentient_core.vocab import SessionStats

__all__ = ["condense_step", "repair_step"]

R = TypeVar("R")


def _guarded(where: str, step: Callable[[], R], emit: Emitter) -> R | None:
    try:
        return step()
    except SentientError as err:
        emit.emit(ErrorEvent, where=where, error=f"{type(err).__name__}: {err}")
        return None


def condense_step(condenser: Condenser | None, stats: SessionStats, emit: Emitter) -> None:
    """One condensation pass, counted in ``stats.promotion["condensation"]`` (passed: notes
    written or revised; vetoed: candidates refused)."""
    run = _guarded("condense", condenser.run, emit) if condenser is not None else None
    if run is not None:
        count_promotion(
            stats,
            "condensation",
            passed=run.promoted + run.revised,
            vetoed=sum(run.vetoed.values()),
            retired=run.retired,
        )


def repair_step(driver: RepairDriver | None, stats: SessionStats, emit: Emitter) -> None:
    """One repair pass, counted in ``stats.promotion["repair"]`` (passed: recipes
    rewritten; vetoed: inconclusive or needing access) when it diagnosed or retired any."""
    run = _guarded("repair", driver.run, emit) if driver is not None else None
    if run is not None and (run.rewritten or run.needs_access or run.inconclusive or run.retired):
        count_promotion(
            stats,
            "repair",
            passed=run.rewritten,
            vetoed=run.needs_access + run.inconclusive,
            retired=run.retired,
        )
