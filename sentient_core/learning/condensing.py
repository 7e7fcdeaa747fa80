"""The learner's condensation step: after reflection, verified episodes condense into notes.

Kept out of :mod:`.learner` so the loop only calls it; the gate itself is
:class:`~sentient_core.layers.Condenser`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentient_core.errors import SentientError
from sentient_core.events import ErrorEvent

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.layers import Condenser
    from sentient_core.vocab import SessionStats

__all__ = ["condense_step"]


def condense_step(condenser: Condenser | None, stats: SessionStats, emit: Emitter) -> None:
    """One condensation pass, its gate counted in ``stats.promotion["condensation"]``;
    a store error is reported as an event, not raised (the loop goes on)."""
    if condenser is None:
        return
    try:
        run = condenser.run()
    except SentientError as err:
        emit.emit(ErrorEvent, where="condense", error=f"{type(err).__name__}: {err}")
        return
    c = stats.promotion.setdefault("condensation", {"reached": 0, "passed": 0, "vetoed": 0})
    vetoed = sum(run.vetoed.values())
    c["reached"] += run.promoted + run.revised + vetoed
    c["passed"] += run.promoted + run.revised
    c["vetoed"] += vetoed
    c["retired"] = c.get("retired", 0) + run.retired
