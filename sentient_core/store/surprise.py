"""Surprise events, append-only: functions over a :class:`~sentient_core.store.txn.Txn`.

A surprise event (SPEC §5) records that something the core expected turned out
otherwise: memory predicted one answer and grounded evidence said another, a
judged answer was irrelevant or contradicted, or the user said it was wrong.
Events live in the ``surprise`` sub-database under 8-byte big-endian sequence
keys (like the audit log, :mod:`sentient_core.store.log`); an event's ``id`` is
its sequence number, assigned by :func:`append`. Nothing is ever rewritten or
deleted: the credit, source and wisdom records cite events by id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.store import log
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import RecordCodec, key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CAUSES",
    "CODEC",
    "DB",
    "SOURCE_PATTERN",
    "Cause",
    "SurpriseBasis",
    "SurpriseEvent",
    "append",
    "count",
    "get",
    "iter_events",
    "next_id",
    "recent",
]

DB = "surprise"

Cause = Literal[
    "disagreement", "irrelevant", "contradicted", "ungrounded_contradicted", "user_feedback"
]
CAUSES: tuple[str, ...] = (
    "disagreement",
    "irrelevant",
    "contradicted",
    "ungrounded_contradicted",
    "user_feedback",
)
"""Why an event fired: memory's answer disagreed with grounded evidence
(``disagreement``); the judged answer did not answer the question
(``irrelevant``); a grounded source contradicted it (``contradicted``); an
ungrounded answer (an LLM's) was contradicted by grounded evidence
(``ungrounded_contradicted``); the user said so (``user_feedback``)."""

SOURCE_PATTERN = r"^[a-z]+:."
"""A source id is ``KIND:REF`` (see :attr:`sentient_core.vocab.Source.id`)."""

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
TraceRef = Annotated[int, msgspec.Meta(ge=-1)]
SourceId = Annotated[str, msgspec.Meta(pattern=SOURCE_PATTERN, max_length=1000)]
Text = Annotated[str, msgspec.Meta(max_length=4000)]


class SurpriseBasis(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How a magnitude was computed: the rule and its inputs.

    Attributes
    ----------
    rule : str
        Name of the rule, e.g. ``"disagreement.version"``, ``"judge.relevance"``,
        ``"user"``.
    inputs : dict of str to str
        The named inputs the rule used (tokens compared, scores, ...), as text.
    detail : str
        One human-readable sentence.
    """

    rule: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    inputs: dict[str, str] = msgspec.field(default_factory=dict)
    detail: Text = ""


class SurpriseEvent(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One surprise event (SPEC §5).

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
        Sequence number in the log (-1 until :func:`append` assigns it).
    context : str
        What was going on (the question asked, the request).
    action : str
        What the core did that turned out wrong (``"recall"``, ``"answer"``,
        ``"fetch_content"`` ...); wisdom clusters on (domain, action).
    expected, actual : str
        What was expected (memory's answer) and what arrived (the evidence).
    magnitude : float
        Surprise ``s`` in [0, 1].
    basis : SurpriseBasis
        How ``magnitude`` was computed.
    domain : str
        The knowledge domain (see :func:`sentient_core.metamemory.domain_of`).
    time : float
        Unix seconds.
    session : str
        Learner session ("" outside one).
    source_memory : int
        The trace that predicted ``expected`` (-1: none).
    source : str
        The source that was wrong, ``KIND:REF`` (``llm:host/model``,
        ``memory:recall``, ``web:docs.python.org`` ...).
    cause : str
        One of :data:`CAUSES`.
    correcting_memory : int
        The trace holding the evidence that corrected it (-1: none).
    correcting_source : str
        The source that was right ("" if none).
    """

    v: int = 1
    id: TraceRef = -1
    context: Text
    action: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    expected: Text = ""
    actual: Text = ""
    magnitude: Unit
    basis: SurpriseBasis
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    time: UnixTime
    session: Annotated[str, msgspec.Meta(max_length=200)] = ""
    source_memory: TraceRef = -1
    source: SourceId
    cause: Cause
    correcting_memory: TraceRef = -1
    correcting_source: Annotated[str, msgspec.Meta(pattern=r"^$|" + SOURCE_PATTERN)] = ""


CODEC: RecordCodec[SurpriseEvent] = RecordCodec(SurpriseEvent, 1, "surprise event")


def next_id(txn: Txn) -> int:
    """The id the next appended event gets."""
    cur = txn.cursor(DB)
    return key_u64(bytes(cur.key())) + 1 if cur.last() else 0


def append(txn: Txn, event: SurpriseEvent) -> SurpriseEvent:
    """Append ``event`` (its ``id`` is ignored) and return it with its sequence number as id.

    Raises
    ------
    CorruptRecordError
        A field is out of bounds (nothing is written).
    """
    stored = msgspec.structs.replace(event, id=next_id(txn))
    seq = log.append(txn, DB, CODEC.encode(stored))
    if seq != stored.id:  # pragma: no cover - one writer: cannot differ
        raise CorruptRecordError(f"surprise log moved while appending ({seq} != {stored.id})")
    return stored


def get(txn: Txn, event_id: int) -> SurpriseEvent | None:
    """The event with id ``event_id``, or None."""
    if event_id < 0:
        return None
    raw = txn.get(DB, u64_key(event_id))
    return None if raw is None else _decode(event_id, raw)


def _decode(seq: int, raw: bytes | memoryview) -> SurpriseEvent:
    event = CODEC.decode(bytes(raw), where=f"surprise/{seq}")
    if event.id != seq:
        raise CorruptRecordError(f"surprise/{seq} holds event id {event.id}")
    return event


def iter_events(txn: Txn, after: int = -1) -> Iterator[SurpriseEvent]:
    """Events with ``id > after``, oldest first."""
    for seq, raw in log.iter_after(txn, DB, after):
        yield _decode(seq, raw)


def recent(txn: Txn, n: int, *, domain: str | None = None) -> list[SurpriseEvent]:
    """The ``n`` newest events (of ``domain`` if given), newest first.

    Scans backwards from the newest event; with a domain filter it reads until
    it has found ``n`` of that domain or reached the oldest event.
    """
    out: list[SurpriseEvent] = []
    if n <= 0:
        return out
    cur = txn.cursor(DB)
    found = cur.last()
    while found and len(out) < n:
        event = _decode(key_u64(bytes(cur.key())), cur.value())
        if domain is None or event.domain == domain:
            out.append(event)
        found = cur.prev()
    return out


def count(txn: Txn) -> int:
    """Number of events stored."""
    return txn.entries(DB)
