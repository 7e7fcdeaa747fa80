"""Credit state of traces and why traces left at the strength floor: functions over a Txn.

Strength itself lives on the :class:`~sentient_core.store.records.TraceRecord`;
the hysteresis state behind it (rolling credit, streak, direction of the
streak; :mod:`kernels.credit`) lives here, one :class:`CreditRecord` per trace
that ever received a signal (a trace without one has credit 0, no streak).
A trace retired at the floor gets a :class:`FloorRecord` saying whether a
correcting trace superseded it, and on which surprise events.

Both live in the ``scorer`` sub-database, the learned-ranking state, under
their own key prefixes (:mod:`sentient_core.store.keyspace`)::

    b"credit/" + u64(trace id)  -> CreditRecord
    b"floor/"  + u64(trace id)  -> FloorRecord

(:mod:`sentient_core.store.scorer` keeps its snapshots under ``b"snapshot/"``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import msgspec

from sentient_core.store.keyspace import iter_prefix, number_key, number_of
from sentient_core.store.records import RecordCodec

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CREDIT",
    "CREDIT_PREFIX",
    "DB",
    "FLOOR",
    "FLOOR_PREFIX",
    "CreditRecord",
    "FloorRecord",
    "get",
    "get_floor",
    "iter_floors",
    "iter_records",
    "put",
    "put_floor",
]

DB = "scorer"
CREDIT_PREFIX = b"credit/"
FLOOR_PREFIX = b"floor/"

NonNeg = Annotated[int, msgspec.Meta(ge=0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
# |credit| <= 1 / (1 - 0.85) < 6.7 for evidence in [0, 1]: 10 is "finite, sane".
Credit = Annotated[float, msgspec.Meta(ge=-10.0, le=10.0)]
Direction = Annotated[int, msgspec.Meta(ge=-1, le=1)]


class CreditRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The credit state of one trace (see :mod:`kernels.credit`).

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
    trace: NonNeg
    row: NonNeg
    credit: Credit = 0.0
    streak: NonNeg = 0
    last_dir: Direction = 0
    events: NonNeg = 0
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
    trace: NonNeg
    superseded_by: Annotated[int, msgspec.Meta(ge=-1)] = -1
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    surprise_ids: Annotated[tuple[NonNeg, ...], msgspec.Meta(max_length=64)] = ()
    strength: Annotated[float, msgspec.Meta(ge=0.05, le=1.5)] = 0.05
    time: UnixTime


CREDIT: RecordCodec[CreditRecord] = RecordCodec(CreditRecord, 1, "credit record")
FLOOR: RecordCodec[FloorRecord] = RecordCodec(FloorRecord, 1, "floor record")


def get(txn: Txn, trace_id: int) -> CreditRecord | None:
    """The credit record of ``trace_id``, or None (no signal yet)."""
    raw = txn.get(DB, number_key(CREDIT_PREFIX, trace_id))
    return None if raw is None else CREDIT.decode(bytes(raw), where=f"scorer/credit/{trace_id}")


def put(txn: Txn, record: CreditRecord) -> None:
    """Write (or replace) the credit record of ``record.trace``."""
    txn.put(DB, number_key(CREDIT_PREFIX, record.trace), CREDIT.encode(record))


def iter_records(txn: Txn) -> Iterator[CreditRecord]:
    """Every credit record, in trace id order."""
    for key, value in iter_prefix(txn, DB, CREDIT_PREFIX):
        yield CREDIT.decode(value, where=f"scorer/credit/{number_of(CREDIT_PREFIX, key)}")


def get_floor(txn: Txn, trace_id: int) -> FloorRecord | None:
    """Why ``trace_id`` was retired at the floor, or None."""
    raw = txn.get(DB, number_key(FLOOR_PREFIX, trace_id))
    return None if raw is None else FLOOR.decode(bytes(raw), where=f"scorer/floor/{trace_id}")


def put_floor(txn: Txn, record: FloorRecord) -> None:
    """Write the floor record of ``record.trace``."""
    txn.put(DB, number_key(FLOOR_PREFIX, record.trace), FLOOR.encode(record))


def iter_floors(txn: Txn) -> Iterator[FloorRecord]:
    """Every floor record, in trace id order."""
    for key, value in iter_prefix(txn, DB, FLOOR_PREFIX):
        yield FLOOR.decode(value, where=f"scorer/floor/{number_of(FLOOR_PREFIX, key)}")
