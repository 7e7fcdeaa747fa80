"""A user's verdict on a trace (``cli.py feedback TRACE_ID --wrong|--right``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sentient_core.metamemory.credit import CreditSignal
from sentient_core.metamemory.domain import domain_of
from sentient_core.metamemory.loop import source_id
from sentient_core.metamemory.surprise import SurpriseBasis, make_event

if TYPE_CHECKING:
    from sentient_core.metamemory.core import MetaMemory
    from sentient_core.store.records import TraceRecord

__all__ = ["feedback"]


def feedback(
    meta: MetaMemory,
    trace: TraceRecord,
    *,
    right: bool,
    note: str = "",
    session: str = "",
    domain: str = "",
) -> dict[str, Any]:
    """A user's verdict on a trace: ``--wrong`` is a surprise event (s = 1), a judged
    failure and a negative credit signal; ``--right`` a judged success and a positive
    credit signal (not a surprise: nothing was unexpected). ``domain``: the event's
    domain (default: the domain of the trace's text)."""
    before = trace.strength
    if right:
        result = meta.credit.apply([CreditSignal(trace=trace.id, direction=1, magnitude=1.0)])
        meta.record_outcome([trace.id], "success")
        event_id = -1
    else:
        event = make_event(
            context=note or f"user feedback on trace {trace.id}",
            action="recall",
            magnitude=1.0,
            basis=SurpriseBasis(rule="user", inputs={"note": note[:500]}, detail="the user"),
            domain=domain or domain_of(trace.text[:500]),
            source=source_id(trace.source),
            cause="user_feedback",
            time=time.time(),
            session=session,
            source_memory=trace.id,
        )
        seen = meta.observe(event)
        result = seen.credit
        meta.record_outcome([trace.id], "failure")
        event_id = seen.event.id
    after = next((a for t, _, a in result.changes if t == trace.id), before)
    return {
        "trace": trace.id,
        "verdict": "right" if right else "wrong",
        "surprise_event": event_id,
        "strength_before": before,
        "strength_after": after,
        "credit": meta.credit.state(trace.id)[0],
    }
