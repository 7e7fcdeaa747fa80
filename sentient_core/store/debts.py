"""Epistemic debts: functions over a :class:`~sentient_core.store.txn.Txn`.

An epistemic debt (SPEC §5) is a recorded uncertainty: a pattern the core
could not settle, the competing hypotheses, a discriminating test that would
settle it, how fragile the knowledge resting on it is, its status and the
chain of evidence attached so far. Debts live in the ``debts`` sub-database
under ``b"debt/" + u64(id)``; ids count up from 0 and are never reused. The
rules (resolution, reopening, priority) are in
:mod:`sentient_core.metamemory.debts`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.store.keyspace import iter_prefix, last_number, number_key, number_of
from sentient_core.store.records import RecordCodec

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CODEC",
    "DB",
    "DEBT_STATUSES",
    "TEST_KINDS",
    "DebtEvidence",
    "DebtRecord",
    "DebtStatus",
    "DiscriminatingTest",
    "get",
    "iter_debts",
    "next_id",
    "put",
]

DB = "debts"
PREFIX = b"debt/"

DebtStatus = Literal["open", "resolved", "deferred"]
DEBT_STATUSES: tuple[str, ...] = ("open", "resolved", "deferred")
TestKind = Literal["question", "read_local", "fetch_content"]
TEST_KINDS: tuple[str, ...] = ("question", "read_local", "fetch_content")

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
Text = Annotated[str, msgspec.Meta(max_length=4000)]


class DiscriminatingTest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A concrete request the chaperone can run to settle a debt.

    Attributes
    ----------
    kind : {"question", "read_local", "fetch_content"}
        The chaperone request type it becomes.
    question : str
        The question to ask (always set: it is also the gap's question).
    path : str
        The file to read (``read_local``).
    url : str
        The URL to fetch (``fetch_content``).
    """

    kind: TestKind
    question: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
    path: Annotated[str, msgspec.Meta(max_length=4096)] = ""
    url: Annotated[str, msgspec.Meta(max_length=4096)] = ""


class DebtEvidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One piece of evidence attached to a debt (kept as provenance forever).

    Attributes
    ----------
    source : str
        Where it came from (a source id, ``KIND:REF``).
    confidence : float
        How strongly it settles the debt, in [0, 1].
    supports : int
        Index of the hypothesis it supports (-1: none in particular).
    note : str
    trace : int
        The trace holding it (-1: none).
    surprise_id : int
        The surprise event it came with (-1: none).
    attempt : bool
        Whether a curiosity attempt on this debt's test produced it.
    time : float
    """

    source: Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
    confidence: Unit
    supports: Annotated[int, msgspec.Meta(ge=-1)] = -1
    note: Text = ""
    trace: Annotated[int, msgspec.Meta(ge=-1)] = -1
    surprise_id: Annotated[int, msgspec.Meta(ge=-1)] = -1
    attempt: bool = False
    time: UnixTime


class DebtRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One epistemic debt.

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
    pattern : str
        What is uncertain, in words.
    hypotheses : tuple of str
        The competing hypotheses (at least two).
    test : DiscriminatingTest or None
        What would settle it (None: nothing concrete known yet).
    fragility : float
        How much rests on it, in [0, 1].
    domain : str
    status : {"open", "resolved", "deferred"}
    evidence : tuple of DebtEvidence
        Every piece of evidence ever attached, oldest first.
    counted_from : int
        Index into ``evidence`` where the current accounting starts (a reopen
        moves it to the end: old evidence stays as provenance but no longer
        counts toward resolving again).
    failed_attempts : int
        Attempts at the test that did not settle it.
    reopened : int
        Times it was reopened.
    opened, updated : float
        Unix seconds.
    resolved_at : float or None
        When it was last resolved.
    resolved_by_attempt : bool
        Whether the last resolution came from a curiosity attempt.
    verdict : int
        The hypothesis the last resolution favours (-1: the evidence named none).
    source_memory : int
        A trace the debt is about (-1: none).
    surprise_id : int
        The surprise event that opened it (-1: none).
    """

    v: int = 1
    id: NonNeg
    pattern: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    hypotheses: Annotated[tuple[Text, ...], msgspec.Meta(min_length=2, max_length=16)]
    test: DiscriminatingTest | None = None
    fragility: Unit
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    status: DebtStatus = "open"
    evidence: Annotated[tuple[DebtEvidence, ...], msgspec.Meta(max_length=1000)] = ()
    counted_from: NonNeg = 0
    failed_attempts: NonNeg = 0
    reopened: NonNeg = 0
    opened: UnixTime
    updated: UnixTime
    resolved_at: UnixTime | None = None
    resolved_by_attempt: bool = False
    verdict: Annotated[int, msgspec.Meta(ge=-1)] = -1
    source_memory: Annotated[int, msgspec.Meta(ge=-1)] = -1
    surprise_id: Annotated[int, msgspec.Meta(ge=-1)] = -1


CODEC: RecordCodec[DebtRecord] = RecordCodec(DebtRecord, 1, "debt record")


def next_id(txn: Txn) -> int:
    """The id the next new debt gets."""
    return last_number(txn, DB, PREFIX) + 1


def put(txn: Txn, record: DebtRecord) -> None:
    """Write (or replace) debt ``record.id``."""
    txn.put(DB, number_key(PREFIX, record.id), CODEC.encode(record))


def get(txn: Txn, debt_id: int) -> DebtRecord | None:
    """Debt ``debt_id``, or None."""
    if debt_id < 0:
        return None
    raw = txn.get(DB, number_key(PREFIX, debt_id))
    return None if raw is None else CODEC.decode(bytes(raw), where=f"debts/{debt_id}")


def iter_debts(txn: Txn) -> Iterator[DebtRecord]:
    """Every debt, in id order."""
    for key, value in iter_prefix(txn, DB, PREFIX):
        yield CODEC.decode(value, where=f"debts/{number_of(PREFIX, key)}")
