"""Recall misses: a recall that found nothing relevant is remembered, so the core gets curious.

A recall — ``cli.py recall``, ``GET /recall``, :meth:`Core.recall` with
``record_miss``, or the learner's own check of memory for a question it is about
to ask — *misses* when none of its hits passes the relevance check
(:func:`~sentient_core.relevance.relevance` ≥ :data:`~sentient_core.relevance.RELEVANT`:
the share of the query's content terms a passage holds). A query without content
terms ("what is it?") names nothing to look for and is never a miss.

Misses are pooled by **subject**: the query's content terms
(:func:`~sentient_core.keyphrases.topic_terms`, stems), sorted — "coroutine
cancellation" and "cancellation of coroutines?" are one subject. Each subject
has one :class:`MissRecord` (how often, the latest query, who asked, its state)
in the store's ``state`` sub-database under ``misses/<hash>``, so a miss in the
CLI reaches a learner running in another process. Curiosity reads the open
records each iteration; a subject missed :data:`REPEATS` times or more becomes
a ``memory_miss`` gap (SPEC §4 priority 0.8) and its question goes to the
question book::

    open ──repeated──▶ asked ──the book answers it──▶ answered
                          └── a new miss after an answer: counted, not re-asked

At most :data:`MAX_SUBJECTS` subjects are kept: a new one evicts the oldest
answered subject, else the oldest seen only once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal, TypeVar

import msgspec

from sentient_core.keyphrases import question_about, topic_terms
from sentient_core.relevance import RELEVANT, relevance
from sentient_core.store import RecordCodec

if TYPE_CHECKING:
    from sentient_core.memory import Hit
    from sentient_core.store import Store

__all__ = [
    "MAX_SUBJECTS",
    "REPEATS",
    "MissLog",
    "MissRecord",
    "MissStatus",
    "best_relevance",
    "miss_question",
    "subject_of",
]

STATE_DB = "state"
_PREFIX = b"misses/"
_HEADER_KEY = b"misses"

REPEATS = 2
"""Misses on one subject before it becomes a ``memory_miss`` gap."""

MAX_SUBJECTS = 512
MAX_QUERY_CHARS = 500
MissStatus = Literal["open", "asked", "answered"]
_T = TypeVar("_T")
Check = Callable[[str, "Hit"], float]
"""``(query, hit) -> relevance`` (curiosity's ``answers``)."""
Origin = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class MissRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One subject memory could not answer, and what became of it.

    Attributes
    ----------
    subject : str
        The query's content terms (stems), sorted and space-joined: the pooling key.
    query : str
        The latest query that missed (at most :data:`MAX_QUERY_CHARS` characters).
    count : int
        Misses on the subject, ever (after an answer too).
    best : float
        The best relevance the latest miss found, in [0, 1).
    first, last : float
        Unix times of the first and the latest miss.
    origins : tuple of str
        Who recalled (``cli``, ``api``, ``learner``, ``library`` …), first seen first.
    status : {"open", "asked", "answered"}
    question : str
        The question curiosity asked about it ("" while open).
    """

    v: int = 1
    subject: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    count: Annotated[int, msgspec.Meta(ge=1)] = 1
    best: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.0
    first: float = 0.0
    last: float = 0.0
    origins: Annotated[tuple[Origin, ...], msgspec.Meta(max_length=8)] = ()
    status: MissStatus = "open"
    question: str = ""


class _Header(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    v: int = 1
    misses: Annotated[int, msgspec.Meta(ge=0)] = 0


_RECORD = RecordCodec(MissRecord, 1, "recall miss record")
_HEADER = RecordCodec(_Header, 1, "recall miss header")


def subject_of(query: str) -> str:
    """The pooling key of a query: its content terms (stems), sorted; "" without any."""
    return " ".join(sorted(set(topic_terms(query))))[:MAX_QUERY_CHARS]


def best_relevance(query: str, hits: Sequence[Hit], check: Check | None = None) -> float:
    """The best relevance of ``hits`` to ``query`` (``check(query, hit)``, default
    :func:`~sentient_core.relevance.relevance` of its text, every term weighing 1);
    0 for no hits."""
    if check is None:
        return max((relevance(query, h.record.text) for h in hits), default=0.0)
    return max((float(check(query, h)) for h in hits), default=0.0)


def miss_question(query: str) -> str:
    """What curiosity asks about a missed query: the query itself when it is a
    question, else "What is known about <query>?"."""
    shown = " ".join(query.split())
    return shown if shown.endswith("?") else question_about(shown)


def _key(subject: str) -> bytes:
    return (
        _PREFIX + hashlib.blake2b(subject.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    )


class MissLog:
    """The persisted record of recall misses (see the module docstring).

    Parameters
    ----------
    store : Store or None
        Where misses live (``state`` sub-database); None keeps them in memory.
    clock : callable
        Unix time source (injectable for tests).

    Every read goes to the store (a miss may come from another process); every
    change is one write transaction.
    """

    def __init__(self, store: Store | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock
        self._lock = threading.Lock()
        self._memory: dict[bytes, MissRecord] = {}
        self._misses = 0
        self.checked = 0
        """Recalls checked by :meth:`note` in this process (misses or not)."""

    # -- writing -----------------------------------------------------------------------------

    def note(
        self,
        query: str,
        hits: Sequence[Hit],
        origin: str,
        *,
        check: Check | None = None,
        threshold: float = RELEVANT,
    ) -> MissRecord | None:
        """Check one recall; record a miss when no hit reaches ``threshold``.

        Returns the subject's record after the miss, or None when a hit was
        relevant or the query names nothing (no content terms).
        """
        subject = self._checking(query)
        if not subject:
            return None
        best = best_relevance(query, hits, check)
        return None if best >= threshold else self.record(query, best, origin, subject=subject)

    def note_texts(
        self, query: str, texts: Sequence[str], origin: str, *, threshold: float = RELEVANT
    ) -> MissRecord | None:
        """:meth:`note` for a recall already rendered as the hits' texts (an API reply)."""
        subject = self._checking(query)
        if not subject:
            return None
        best = max((relevance(query, t) for t in texts), default=0.0)
        return None if best >= threshold else self.record(query, best, origin, subject=subject)

    def _checking(self, query: str) -> str:
        """Count one recall checked; the query's subject ("" when it names nothing)."""
        self.checked += 1
        return subject_of(query)

    def record(
        self, query: str, best: float, origin: str, *, subject: str = ""
    ) -> MissRecord | None:
        """Record one miss on ``query``'s subject (best relevance ``best``)."""
        subject = subject or subject_of(query)
        if not subject:
            return None
        shown = " ".join(query.split())[:MAX_QUERY_CHARS]
        now = self._clock()
        key = _key(subject)

        def change(space: _Space, header: _Header) -> tuple[MissRecord, _Header]:
            old = space.get(key)
            clipped = min(max(float(best), 0.0), 1.0)
            if old is None:
                recs = space.all()
                if len(recs) >= MAX_SUBJECTS:
                    space.delete(_key(_victim(recs).subject))
                rec = MissRecord(
                    subject=subject,
                    query=shown,
                    best=clipped,
                    first=now,
                    last=now,
                    origins=(origin,),
                )
            else:
                origins = old.origins if origin in old.origins else (*old.origins, origin)[-8:]
                rec = msgspec.structs.replace(
                    old, query=shown, count=old.count + 1, best=clipped, last=now, origins=origins
                )
            space.put(key, rec)
            return rec, msgspec.structs.replace(header, misses=header.misses + 1)

        return self._update(change)

    def mark(self, subject: str, status: MissStatus, question: str = "") -> MissRecord | None:
        """Move a subject to ``status`` (with the question asked about it); None if unknown."""
        key = _key(subject)

        def change(space: _Space, header: _Header) -> tuple[MissRecord | None, _Header]:
            old = space.get(key)
            if old is None:
                return None, header
            rec = msgspec.structs.replace(old, status=status, question=question or old.question)
            space.put(key, rec)
            return rec, header

        return self._update(change)

    # -- reading -----------------------------------------------------------------------------

    def records(self, status: MissStatus | None = None) -> list[MissRecord]:
        """Subjects (only those with ``status``), oldest first miss first."""
        if self.store is None:
            recs = list(self._memory.values())
        else:
            with self.store.read() as txn:
                recs = _Space(txn).all()
        return sorted(
            (r for r in recs if status is None or r.status == status),
            key=lambda r: (r.first, r.subject),
        )

    def due(self, repeats: int = REPEATS) -> list[MissRecord]:
        """Open subjects missed at least ``repeats`` times, most missed first."""
        return sorted(
            (r for r in self.records("open") if r.count >= repeats),
            key=lambda r: (-r.count, r.first),
        )

    def summary(self) -> dict[str, int]:
        """``misses`` (recorded, ever), ``subjects`` and subjects by status."""
        recs = self.records()
        out = {"misses": self._total(), "subjects": len(recs), "open": 0, "asked": 0, "answered": 0}
        for r in recs:
            out[r.status] += 1
        return out

    # -- storage -----------------------------------------------------------------------------

    def _total(self) -> int:
        if self.store is None:
            return self._misses
        with self.store.read() as txn:
            raw = txn.get(STATE_DB, _HEADER_KEY)
        return 0 if raw is None else _HEADER.decode(raw, where="state/misses").misses

    def _update(self, change: Callable[[_Space, _Header], tuple[_T, _Header]]) -> _T:
        """Apply ``change(space, header)`` in one write transaction; returns its result."""
        with self._lock:
            if self.store is None:
                result, header = change(_Space(None, self._memory), _Header(misses=self._misses))
                self._misses = header.misses
                return result

            def write(txn) -> _T:
                raw = txn.get(STATE_DB, _HEADER_KEY)
                header = _Header() if raw is None else _HEADER.decode(raw, where="state/misses")
                result, header = change(_Space(txn), header)
                txn.put(STATE_DB, _HEADER_KEY, _HEADER.encode(header))
                return result

            return self.store.write(write)


class _Space:
    """The records a change sees: a write transaction's, or the in-memory dict."""

    def __init__(self, txn, memory: dict[bytes, MissRecord] | None = None) -> None:
        self.txn = txn
        self.memory = memory

    def get(self, key: bytes) -> MissRecord | None:
        if self.memory is not None:
            return self.memory.get(key)
        raw = self.txn.get(STATE_DB, key)
        return None if raw is None else _RECORD.decode(bytes(raw), where="state/misses")

    def put(self, key: bytes, rec: MissRecord) -> None:
        if self.memory is not None:
            self.memory[key] = rec
        else:
            self.txn.put(STATE_DB, key, _RECORD.encode(rec))

    def delete(self, key: bytes) -> None:
        if self.memory is not None:
            self.memory.pop(key, None)
        else:
            self.txn.delete(STATE_DB, key)

    def all(self) -> list[MissRecord]:
        if self.memory is not None:
            return list(self.memory.values())
        recs = []
        cur = self.txn.cursor(STATE_DB)
        found = cur.set_range(_PREFIX)
        while found and bytes(cur.key()).startswith(_PREFIX):
            recs.append(_RECORD.decode(bytes(cur.value()), where="state/misses"))
            found = cur.next()
        return recs


def _victim(recs: list[MissRecord]) -> MissRecord:
    """The subject a full log forgets: the oldest answered, else the oldest missed once."""
    answered = [r for r in recs if r.status == "answered"]
    pool = answered or [r for r in recs if r.count == 1] or recs
    return min(pool, key=lambda r: (r.last, r.subject))
