"""The question book: what curiosity asked, with what outcome, persisted across sessions.

Every question the learner considers — a user's, a reflection's follow-up, an
SMF-axis or coherence question — has one :class:`QuestionRecord`, keyed by its
normalised text (case folded, whitespace collapsed, trailing ``?`` dropped), in
the store's ``state`` sub-database under ``questions/<hash>``. The book keeps a
step counter (one step per learner iteration, across sessions) for back-off.

Life of a question::

    queued ──asked──▶ asked ──success──▶ answered            (never asked again)
      ▲                  └──failure───▶ waiting ──due──▶ queued
      └──────────────────────────────────┘
    (any) ──drop(reason)──▶ dropped

A *user's* question also records how each asking ended (:attr:`QuestionRecord.closed`,
set by :mod:`sentient_core.learning.closing`): ``answered``, ``already_known`` or
``not_found``. A ``not_found`` one is ``waiting`` like any failed question, so the
sources changing sends it back to the queue (re-opened).

A failed question waits ``min(2^(failures−1), MAX_BACKOFF)`` steps, and then
returns to the queue only if the sources changed since it failed (their marks
differ): asking the same sources the same question again would only fail again.
If only memory changed, curiosity checks whether memory now answers it (then it
is ``answered`` without being asked) and otherwise leaves it waiting, where it
lets memory settle questions (``CuriosityConfig.memory_settles``; the learner
does not: it leaves the question waiting). A question memory already answers is
then ``answered`` without being asked.

The book is a write-through cache: records are read once at open; every change
is one write transaction. One process (the learner) writes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.store import RecordCodec, Store

__all__ = [
    "MAX_BACKOFF",
    "MAX_TRIED",
    "MAX_UNVERIFIED",
    "QuestionBook",
    "QuestionRecord",
    "QuestionStatus",
    "normalise_question",
]

STATE_DB = "state"
_PREFIX = b"questions/"
_HEADER_KEY = b"questions"

MAX_BACKOFF = 64
"""Longest wait of a failed question, in steps (iterations)."""

MAX_QUESTION_CHARS = 1000

MAX_UNVERIFIED = 32
"""Unverified traces remembered per question (the latest)."""

MAX_TRIED = 16
"""Attempts remembered per asking of a user's question."""

QuestionStatus = Literal["queued", "asked", "answered", "waiting", "dropped"]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]


class QuestionRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One question and its history.

    Attributes
    ----------
    v : int
        Record schema version (2 added ``closed`` and ``tried``; a v1 record reads
        with them empty).
    question : str
        The text as first asked.
    origin : str
        Who raised it: ``user``, ``followup``, ``curiosity``, ``focus`` …
    gap_type : str
        The gap type it was raised as (``question``, ``smf_imbalance`` …).
    status : {"queued", "asked", "answered", "waiting", "dropped"}
    seq : int
        Order of first registration (queued questions are served oldest first).
    asked, failures : int
        Times handed to the chaperone; failed outcomes.
    last_outcome : str
        The judge's last verdict on it ("" before any).
    retry_after : int
        Step from which a waiting question may return.
    memory_mark, sources_mark : str
        What memory and the sources looked like when it last failed.
    answered_by : int
        Trace id that answered it (-1 if none recorded).
    reason : str
        Why it is waiting, answered or dropped, in words.
    unverified : tuple of int
        Traces its own requests stored without a success verdict (an ambiguous or
        unverified answer; the last :data:`MAX_UNVERIFIED`): they never count as
        memory answering it, or the question would be "answered" by the very passages
        the judge would not claim.
    closed : {"", "answered", "already_known", "not_found"}
        How a user's question's latest asking ended ("" while it is open).
    tried : tuple of str
        The judged attempts of its latest asking (route and the gate that stopped
        it; the last :data:`MAX_TRIED`).
    """

    v: int = 2
    question: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUESTION_CHARS)]
    origin: str = "user"
    gap_type: str = "question"
    status: QuestionStatus = "queued"
    seq: NonNeg = 0
    asked: NonNeg = 0
    failures: NonNeg = 0
    last_outcome: str = ""
    retry_after: NonNeg = 0
    memory_mark: str = ""
    sources_mark: str = ""
    answered_by: int = -1
    reason: str = ""
    unverified: tuple[int, ...] = ()
    closed: Literal["", "answered", "already_known", "not_found"] = ""
    tried: Annotated[tuple[str, ...], msgspec.Meta(max_length=MAX_TRIED)] = ()

    @property
    def key(self) -> str:
        return normalise_question(self.question)


class _Header(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    v: int = 1
    step: NonNeg = 0
    next_seq: NonNeg = 0


_RECORD = RecordCodec(QuestionRecord, 2, "question record", reads=(1,))
_HEADER = RecordCodec(_Header, 1, "question book header")


def normalise_question(question: str) -> str:
    """The key of a question: case folded, whitespace collapsed, trailing ``?`` dropped."""
    return " ".join(str(question).split()).casefold().rstrip(" ?")


def _key_bytes(key: str) -> bytes:
    return _PREFIX + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class QuestionBook:
    """Persisted registry of questions (see the module docstring).

    Parameters
    ----------
    store : Store, optional
        Where the book lives; None keeps it in memory (tests, read-only use).
    """

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self._lock = threading.RLock()
        self._records: dict[str, QuestionRecord] = {}
        self._header = _Header()
        if store is not None:
            with store.read() as txn:
                raw = txn.get(STATE_DB, _HEADER_KEY)
                if raw is not None:
                    self._header = _HEADER.decode(raw, where=f"{store.path} state/questions")
                cur = txn.cursor(STATE_DB)
                found = cur.set_range(_PREFIX)
                while found and bytes(cur.key()).startswith(_PREFIX):
                    rec = _RECORD.decode(bytes(cur.value()), where=f"{store.path} state/questions")
                    self._records[rec.key] = rec
                    found = cur.next()

    # -- reading ----------------------------------------------------------------------------

    @property
    def step(self) -> int:
        """Learner iterations counted so far, across sessions."""
        return self._header.step

    def get(self, question: str) -> QuestionRecord | None:
        """The record of ``question`` (any phrasing with the same key), or None."""
        return self._records.get(normalise_question(question))

    def records(self, status: QuestionStatus | None = None) -> list[QuestionRecord]:
        """Records (only those with ``status`` if given), oldest first."""
        recs = [r for r in self._records.values() if status is None or r.status == status]
        return sorted(recs, key=lambda r: r.seq)

    def counts(self) -> dict[str, int]:
        """Number of records by status."""
        out = dict.fromkeys(("queued", "asked", "answered", "waiting", "dropped"), 0)
        for r in self._records.values():
            out[r.status] += 1
        return out

    def due(
        self, memory_mark: str, sources_mark: str
    ) -> tuple[list[QuestionRecord], list[QuestionRecord]]:
        """Waiting questions whose back-off is over: (sources changed, only memory changed)."""
        step = self.step
        over = [r for r in self.records("waiting") if r.retry_after <= step]
        sources = [r for r in over if r.sources_mark != sources_mark]
        memory = [
            r for r in over if r.sources_mark == sources_mark and r.memory_mark != memory_mark
        ]
        return sources, memory

    # -- writing ----------------------------------------------------------------------------

    def advance(self) -> int:
        """Count one learner iteration; returns the new step."""
        with self._lock:
            header = msgspec.structs.replace(self._header, step=self._header.step + 1)
            self._write([], header)
            return header.step

    def register(
        self, question: str, *, origin: str = "user", gap_type: str = "question"
    ) -> tuple[QuestionRecord, bool]:
        """Add ``question`` as queued if the book does not know it.

        Returns
        -------
        (QuestionRecord, bool)
            Its record, and whether it was new. A known question keeps its
            record (answered stays answered, waiting keeps waiting).
        """
        text = " ".join(str(question).split())
        if not text:
            raise ArgumentError("question must not be empty")
        if len(text) > MAX_QUESTION_CHARS:
            raise ArgumentError(
                f"question is {len(text)} characters; at most {MAX_QUESTION_CHARS} are kept"
            )
        with self._lock:
            old = self._records.get(normalise_question(text))
            if old is not None:
                return old, False
            seq = self._header.next_seq
            rec = QuestionRecord(question=text, origin=origin, gap_type=gap_type, seq=seq)
            self._write([rec], msgspec.structs.replace(self._header, next_seq=seq + 1))
            return rec, True

    def update(self, question: str, **changes: object) -> QuestionRecord:
        """Replace fields of a known question's record (one write transaction)."""
        with self._lock:
            old = self._records.get(normalise_question(question))
            if old is None:
                raise ArgumentError(f"unknown question {question!r}")
            new = msgspec.structs.replace(old, **changes)
            self._write([new], None)
            return new

    def requeue(self, records: Iterable[QuestionRecord]) -> list[QuestionRecord]:
        """Put waiting questions back in the queue (one write transaction)."""
        with self._lock:
            new = [msgspec.structs.replace(r, status="queued", reason="") for r in records]
            if new:
                self._write(new, None)
            return new

    def record_outcome(
        self,
        question: str,
        outcome: str,
        *,
        memory_mark: str,
        sources_mark: str,
        answered_by: int = -1,
        reason: str = "",
        unverified: Iterable[int] = (),
    ) -> QuestionRecord | None:
        """The judge's verdict on an asked question: answered, or waiting with back-off.

        ``unverified``: traces the request stored although the verdict was not a
        success (see :attr:`QuestionRecord.unverified`). Returns None for a question
        the book does not know (nothing recorded).
        """
        with self._lock:
            old = self._records.get(normalise_question(question))
            if old is None:
                return None
            if outcome == "success":
                new = msgspec.structs.replace(
                    old,
                    status="answered",
                    last_outcome=outcome,
                    answered_by=answered_by,
                    reason=reason or "answered by a grounded, relevant, new passage",
                )
            else:
                failures = old.failures + 1
                wait = min(2 ** (failures - 1), MAX_BACKOFF)
                new = msgspec.structs.replace(
                    old,
                    status="waiting",
                    last_outcome=outcome,
                    failures=failures,
                    retry_after=self.step + wait,
                    memory_mark=memory_mark,
                    sources_mark=sources_mark,
                    reason=reason
                    or f"{outcome}; waits {wait} step(s), then returns once the sources change",
                    unverified=(*old.unverified, *unverified)[-MAX_UNVERIFIED:],
                )
            self._write([new], None)
            return new

    def _write(self, records: list[QuestionRecord], header: _Header | None) -> None:
        """Persist ``records`` (and the header) in one transaction, then update the cache."""
        if self.store is not None:
            encoded = [(_key_bytes(r.key), _RECORD.encode(r)) for r in records]
            head = None if header is None else _HEADER.encode(header)

            def write(txn) -> None:
                for key, value in encoded:
                    txn.put(STATE_DB, key, value)
                if head is not None:
                    txn.put(STATE_DB, _HEADER_KEY, head)

            self.store.write(write)
        for r in records:
            self._records[r.key] = r
        if header is not None:
            self._header = header


MarkSource = Callable[[], str]
