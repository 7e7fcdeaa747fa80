"""The stored credit state of traces: :class:`CreditRecord` (rolling credit, streak)
and :class:`FloorRecord` (why a trace left at the strength floor), and their tables.

:mod:`sentient_core.metamemory.credit` owns the logic that writes them.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime
from sentient_core.store.table import IdTable, register

__all__ = ["CREDITS", "FLOORS", "CreditRecord", "FloorRecord"]

# |credit| <= 1 / (1 - 0.85) < 6.7 for evidence in [0, 1]: 10 is "finite, sane".
Credit = Annotated[float, msgspec.Meta(ge=-10.0, le=10.0)]
Direction = Annotated[int, msgspec.Meta(ge=-1, le=1)]


class CreditRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The credit state of one trace (see :mod:`sentient_kernels.credit`).

    Attributes
    ----------
    v : int
        Record schema version (1).
    trace, row : int
        The trace and its code row (the in-RAM arrays are indexed by row).
    credit : float
        Rolling signed evidence.
    streak : int
        Length of the current run of same-direction signals.
    last_dir : int
        Direction of that run (-1, +1; 0 before the first signal).
    events : int
        Credit events applied to this trace (signals and noise).
    updated : float
        Unix seconds of the last change.
    """

    v: int = 1
    trace: NonNegInt
    row: NonNegInt
    credit: Credit = 0.0
    streak: NonNegInt = 0
    last_dir: Direction = 0
    events: NonNegInt = 0
    updated: UnixTime


class FloorRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Why a trace was retired at the strength floor (the trace itself stays).

    Attributes
    ----------
    v : int
        Record schema version (1).
    trace : int
        The retired trace.
    superseded_by : int
        The correcting trace that superseded it (-1: retired without one).
    reason : str
        In words, e.g. ``"strength reached the floor 0.05 after 3 surprise events;
        superseded by trace 17 (web:docs.python.org)"``.
    surprise_ids : tuple of int
        The surprise events that drove it down, oldest first (at most 64).
    strength : float
        Its strength when retired (the floor).
    time : float
        Unix seconds.
    """

    v: int = 1
    trace: NonNegInt
    superseded_by: Annotated[int, msgspec.Meta(ge=-1)] = -1
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    surprise_ids: Annotated[tuple[NonNegInt, ...], msgspec.Meta(max_length=64)] = ()
    strength: Annotated[float, msgspec.Meta(ge=0.05, le=1.5)] = 0.05
    time: UnixTime


# Both in the ``scorer`` sub-database (the learned-ranking state), one record per trace.
CREDITS: IdTable[CreditRecord] = IdTable(
    "scorer",
    b"credit/",
    RecordCodec(CreditRecord, 1, "credit record"),
    field="trace",
    label="scorer/credit",
)
"""The :class:`CreditRecord` of every trace that ever received a signal, by trace id."""
FLOORS: IdTable[FloorRecord] = IdTable(
    "scorer",
    b"floor/",
    RecordCodec(FloorRecord, 1, "floor record"),
    field="trace",
    label="scorer/floor",
)
"""The :class:`FloorRecord` of every trace retired at the floor, by trace id."""
register(CREDITS, traces=lambda rec: (("a credit record", rec.trace),))
register(
    FLOORS,
    traces=lambda rec: (
        ("a floor record", rec.trace),
        (f"the floor record of trace {rec.trace}", rec.superseded_by),
    ),
)
