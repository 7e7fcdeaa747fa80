"""Epistemic debts: recorded uncertainties that resolve themselves when evidence arrives.

Life of a debt
    :meth:`DebtBook.open` records it (status ``open``). :meth:`DebtBook.attach`
    adds evidence; every piece is kept forever as provenance. A debt resolves
    automatically when the counted evidence reaches :data:`RESOLVE_AT` (0.70):
    the confidences of evidence that supports one hypothesis are summed per
    hypothesis (evidence that names none counts for every hypothesis), and the
    best hypothesis' sum decides — evidence for competing hypotheses is never
    added together. :meth:`DebtBook.reopen` reopens a resolved (or deferred)
    debt: the old evidence stays but stops counting (``counted_from`` moves to
    the end), so resolving again needs new evidence. :meth:`DebtBook.defer`
    parks an open debt; :meth:`DebtBook.fail_attempt` counts an attempt at its
    test that settled nothing.

Priority (for curiosity, SPEC §5)
    ``(0.50·f + 0.30·t + 0.20·a) / (1 + 0.5·k) + bonus`` with ``f`` the
    fragility, ``t = 1.0`` if a discriminating test exists else ``0.15``,
    ``a = min(1, age / 7 days)`` (:data:`AGE_HORIZON_DAYS`), ``k`` the failed
    attempts. The *resolution bonus* rewards a domain where attempts have been
    paying off: ``min(0.10, 0.025 · n)`` with ``n`` the debts of the same domain
    that a curiosity attempt resolved (:data:`RESOLVE_BONUS_STEP`,
    :data:`RESOLVE_BONUS_CAP`). The cap keeps the virtuous cycle from
    becoming a runaway: four successes already earn the most a domain can get,
    less than what one failed attempt takes away from a fresh testable debt.

Gaps
    :func:`to_gap` turns an open debt into a ``debt`` :class:`~sentient_core.vocab.Gap`
    whose question (and ``path``/``url``) is the discriminating test, so the
    chaperone can run it.

Storage
    One :class:`DebtRecord` per debt in the ``debts`` sub-database under
    ``b"debt/" + u64(id)`` (:data:`DEBTS`); ids count up from 0, never reused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.metamemory.base import (
    Counts,
    DebtStateError,
    UnknownRecordError,
    check_unit,
    publish,
)
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime
from sentient_core.store.table import IdTable, register
from sentient_core.vocab import Gap

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "AGE_HORIZON_DAYS",
    "DEBTS",
    "DEBT_STATUSES",
    "RESOLVE_AT",
    "RESOLVE_BONUS_CAP",
    "RESOLVE_BONUS_STEP",
    "TEST_KINDS",
    "DebtBook",
    "DebtEvidence",
    "DebtRecord",
    "DebtStatus",
    "DiscriminatingTest",
    "base_priority",
    "evidence_support",
    "to_gap",
]

RESOLVE_AT = 0.70
"""Counted evidence confidence at which a debt resolves."""
AGE_HORIZON_DAYS = 7.0
"""Age at which a debt's normalised age ``a`` reaches 1."""
RESOLVE_BONUS_STEP = 0.025
"""Priority bonus per debt of the domain resolved by a curiosity attempt."""
RESOLVE_BONUS_CAP = 0.10
"""The most bonus a domain can earn (see the module docstring)."""
TESTED = 1.0
UNTESTED = 0.15
DAY = 86400.0

DebtStatus = Literal["open", "resolved", "deferred"]
DEBT_STATUSES: tuple[str, ...] = ("open", "resolved", "deferred")
TestKind = Literal["question", "read_local", "fetch_content"]
TEST_KINDS: tuple[str, ...] = ("question", "read_local", "fetch_content")

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
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
    id: NonNegInt
    pattern: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    hypotheses: Annotated[tuple[Text, ...], msgspec.Meta(min_length=2, max_length=16)]
    test: DiscriminatingTest | None = None
    fragility: Unit
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    status: DebtStatus = "open"
    evidence: Annotated[tuple[DebtEvidence, ...], msgspec.Meta(max_length=1000)] = ()
    counted_from: NonNegInt = 0
    failed_attempts: NonNegInt = 0
    reopened: NonNegInt = 0
    opened: UnixTime
    updated: UnixTime
    resolved_at: UnixTime | None = None
    resolved_by_attempt: bool = False
    verdict: Annotated[int, msgspec.Meta(ge=-1)] = -1
    source_memory: Annotated[int, msgspec.Meta(ge=-1)] = -1
    surprise_id: Annotated[int, msgspec.Meta(ge=-1)] = -1


DEBTS: IdTable[DebtRecord] = IdTable(
    "debts", b"debt/", RecordCodec(DebtRecord, 1, "debt record"), field="id", label="debts"
)
"""Every debt, by id (ids count up from 0 and are never reused)."""
register(DEBTS, traces=lambda debt: ((f"debt {debt.id}", debt.source_memory),))


def evidence_support(record: DebtRecord) -> tuple[float, int]:
    """``(support, hypothesis)``: the best hypothesis' counted evidence sum and its index
    (-1 when only evidence naming no hypothesis counted)."""
    counted = record.evidence[record.counted_from :]
    shared = sum(e.confidence for e in counted if e.supports < 0)
    best, verdict = shared, -1
    for h in range(len(record.hypotheses)):
        total = shared + sum(e.confidence for e in counted if e.supports == h)
        if total > best:
            best, verdict = total, h
    return best, verdict


def base_priority(record: DebtRecord, now: float) -> float:
    """``(0.50·f + 0.30·t + 0.20·a) / (1 + 0.5·k)`` (no bonus)."""
    t = TESTED if record.test is not None else UNTESTED
    a = min(1.0, max(0.0, now - record.opened) / (AGE_HORIZON_DAYS * DAY))
    return (0.50 * record.fragility + 0.30 * t + 0.20 * a) / (1.0 + 0.5 * record.failed_attempts)


def to_gap(record: DebtRecord, priority: float) -> Gap:
    """The curiosity gap of an open debt: its discriminating test as a ``debt`` gap.

    Without a test the question asks which hypothesis holds. ``detail`` is
    ``debt:<id>`` so the outcome can be attached back to the debt.

    Raises
    ------
    DebtStateError
        The debt is not open.
    """
    if record.status != "open":
        raise DebtStateError(f"debt {record.id} is {record.status}; only open debts are gaps")
    test = record.test
    if test is not None:
        question = test.question
    else:
        options = "; or ".join(h.rstrip(".?") for h in record.hypotheses)
        question = f"Which is true: {options}?"
    return Gap(
        type="debt",
        topic=record.domain,
        question=question[:1000],
        priority=min(1.0, max(0.0, priority)),
        detail=f"debt:{record.id}",
        url=test.url if test is not None else "",
        path=test.path if test is not None else "",
    )


class DebtBook:
    """Epistemic debts in the ``debts`` sub-database (see the module docstring).

    Parameters
    ----------
    store : Store
    emit : Emitter, optional
    clock : callable

    Counters: ``opened``, ``evidence``, ``resolved``, ``reopened``,
    ``deferred``, ``attempts_failed``.
    """

    def __init__(
        self,
        store: Store,
        *,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._emit = emit
        self._clock = clock
        self._counts = Counts(
            ("opened", "evidence", "resolved", "reopened", "deferred", "attempts_failed")
        )

    def counters(self) -> dict[str, float]:
        """What this book did in this process."""
        return self._counts.as_dict()

    # -- reading -----------------------------------------------------------------------------

    def get(self, debt_id: int) -> DebtRecord:
        """Debt ``debt_id``.

        Raises
        ------
        UnknownRecordError
        """
        with self._store.read() as txn:
            return self._get(txn, debt_id)

    def _get(self, txn: Txn, debt_id: int) -> DebtRecord:
        rec = DEBTS.get(txn, debt_id)
        if rec is None:
            raise UnknownRecordError(f"no debt {debt_id}")
        return rec

    def debts(self, *, status: str | None = None, domain: str | None = None) -> list[DebtRecord]:
        """Every debt (of ``status`` / ``domain`` if given), by id."""
        with self._store.read() as txn:
            return [
                d
                for d in DEBTS.iter(txn)
                if (status is None or d.status == status) and (domain is None or d.domain == domain)
            ]

    def resolution_bonus(self, domain: str) -> float:
        """``min(CAP, STEP · n)``, ``n`` = debts of ``domain`` a curiosity attempt resolved."""
        n = sum(1 for d in self.debts(status="resolved", domain=domain) if d.resolved_by_attempt)
        return min(RESOLVE_BONUS_CAP, RESOLVE_BONUS_STEP * n)

    def priority(self, record: DebtRecord, now: float | None = None) -> float:
        """The debt's priority for curiosity (base priority plus the domain's bonus)."""
        now = float(self._clock()) if now is None else now
        return base_priority(record, now) + self.resolution_bonus(record.domain)

    def gaps(self, limit: int = 3, now: float | None = None) -> list[Gap]:
        """The ``limit`` open debts of highest priority as ``debt`` gaps, best first (ties: id)."""
        now = float(self._clock()) if now is None else now
        open_debts = self.debts(status="open")
        bonus = {d: self.resolution_bonus(d) for d in {r.domain for r in open_debts}}
        ranked = sorted(
            open_debts, key=lambda r: (-(base_priority(r, now) + bonus[r.domain]), r.id)
        )
        return [to_gap(r, base_priority(r, now) + bonus[r.domain]) for r in ranked[:limit]]

    # -- changing ----------------------------------------------------------------------------

    def open(
        self,
        *,
        pattern: str,
        hypotheses: Sequence[str],
        domain: str,
        fragility: float,
        test: DiscriminatingTest | None = None,
        source_memory: int = -1,
        surprise_id: int = -1,
    ) -> DebtRecord:
        """Record a new open debt (one write transaction)."""
        rec = self._store.write(
            lambda txn: self.open_in(
                txn,
                pattern=pattern,
                hypotheses=hypotheses,
                domain=domain,
                fragility=fragility,
                test=test,
                source_memory=source_memory,
                surprise_id=surprise_id,
            )
        )
        self.noted("opened", rec)
        return rec

    def open_in(
        self,
        txn: Txn,
        *,
        pattern: str,
        hypotheses: Sequence[str],
        domain: str,
        fragility: float,
        test: DiscriminatingTest | None = None,
        source_memory: int = -1,
        surprise_id: int = -1,
    ) -> DebtRecord:
        """:meth:`open` inside the caller's transaction (then call ``noted("opened", rec)``)."""
        if isinstance(hypotheses, str) or len(hypotheses) < 2:
            raise ArgumentError("a debt needs at least two competing hypotheses")
        if test is not None and not isinstance(test, DiscriminatingTest):
            raise ArgumentTypeError(f"test must be a DiscriminatingTest, got {type(test).__name__}")
        now = float(self._clock())
        rec = DebtRecord(
            id=DEBTS.next_id(txn),
            pattern=pattern,
            hypotheses=tuple(hypotheses),
            test=test,
            fragility=check_unit("fragility", fragility),
            domain=domain,
            opened=now,
            updated=now,
            source_memory=source_memory,
            surprise_id=surprise_id,
        )
        self._put(txn, rec)
        return rec

    def _put(self, txn: Txn, rec: DebtRecord) -> None:
        try:
            DEBTS.put(txn, rec)
        except CorruptRecordError as exc:  # a bound of the record: the caller's value
            raise ArgumentError(str(exc)) from None

    def _change(
        self, debt_id: int, fn: Callable[[DebtRecord, float], DebtRecord], detail: str = ""
    ) -> DebtRecord:
        def write(txn: Txn) -> tuple[DebtRecord, DebtRecord]:
            old = self._get(txn, debt_id)
            new = fn(old, float(self._clock()))
            self._put(txn, new)
            return old, new

        old, new = self._store.write(write)
        self._note_change(old, new, detail)
        return new

    def attach(self, debt_id: int, evidence: DebtEvidence) -> DebtRecord:
        """Attach evidence; the debt resolves when its counted support reaches 0.70.

        Evidence on a resolved debt is kept as provenance and changes nothing else.
        """
        if not isinstance(evidence, DebtEvidence):
            raise ArgumentTypeError(f"evidence must be DebtEvidence, got {type(evidence).__name__}")
        check_unit("evidence.confidence", evidence.confidence)

        def add(rec: DebtRecord, now: float) -> DebtRecord:
            if evidence.supports >= len(rec.hypotheses):
                raise ArgumentError(
                    f"evidence supports hypothesis {evidence.supports}; debt {rec.id} has"
                    f" {len(rec.hypotheses)}"
                )
            new = msgspec.structs.replace(rec, evidence=(*rec.evidence, evidence), updated=now)
            support, verdict = evidence_support(new)
            if new.status != "resolved" and support >= RESOLVE_AT - 1e-12:
                new = msgspec.structs.replace(
                    new,
                    status="resolved",
                    resolved_at=now,
                    resolved_by_attempt=any(e.attempt for e in new.evidence[new.counted_from :]),
                    verdict=verdict,
                )
            return new

        self._counts.add("evidence")
        return self._change(debt_id, add)

    def reopen(self, debt_id: int, reason: str = "", *, hypothesis: str = "") -> DebtRecord:
        """Reopen a resolved or deferred debt; its evidence stops counting (kept as provenance).

        ``hypothesis``: a value the new evidence names that none of the hypotheses is (a
        corrected changelog's version): it joins them, so evidence can support it.

        Raises
        ------
        DebtStateError
            The debt is already open.
        """

        def reopen(rec: DebtRecord, now: float) -> DebtRecord:
            if rec.status == "open":
                raise DebtStateError(f"debt {rec.id} is already open")
            hypotheses = rec.hypotheses
            if hypothesis and hypothesis not in hypotheses and len(hypotheses) < 16:
                hypotheses = (*hypotheses, hypothesis[:4000])
            return msgspec.structs.replace(
                rec,
                status="open",
                hypotheses=hypotheses,
                counted_from=len(rec.evidence),
                reopened=rec.reopened + (rec.status == "resolved"),
                resolved_by_attempt=False,
                verdict=-1,
                updated=now,
            )

        return self._change(debt_id, reopen, reason)

    def defer(self, debt_id: int) -> DebtRecord:
        """Park an open debt (it is no gap until reopened).

        Raises
        ------
        DebtStateError
            The debt is not open.
        """

        def defer(rec: DebtRecord, now: float) -> DebtRecord:
            if rec.status != "open":
                raise DebtStateError(
                    f"debt {rec.id} is {rec.status}; only an open debt is deferred"
                )
            return msgspec.structs.replace(rec, status="deferred", updated=now)

        return self._change(debt_id, defer)

    def fail_attempt(self, debt_id: int) -> DebtRecord:
        """Count an attempt at the debt's test that settled nothing (``k`` + 1).

        Raises
        ------
        DebtStateError
            The debt is not open.
        """

        def fail(rec: DebtRecord, now: float) -> DebtRecord:
            if rec.status != "open":
                raise DebtStateError(f"debt {rec.id} is {rec.status}; attempts are on open debts")
            return msgspec.structs.replace(
                rec, failed_attempts=rec.failed_attempts + 1, updated=now
            )

        return self._change(debt_id, fail)

    # -- bookkeeping -------------------------------------------------------------------------

    def _note_change(self, old: DebtRecord, new: DebtRecord, detail: str = "") -> None:
        if new.failed_attempts > old.failed_attempts:
            self.noted("attempts_failed", new, detail)
        if new.status == old.status:
            return
        what = {"resolved": "resolved", "deferred": "deferred", "open": "reopened"}[new.status]
        self.noted(what, new, detail)

    def noted(self, what: str, rec: DebtRecord, detail: str = "") -> None:
        """Count and publish one committed change (``opened``, ``resolved`` …)."""
        self._counts.add(what)
        support, _ = evidence_support(rec)
        publish(
            self._emit,
            "debts",
            what,
            subject=f"debt:{rec.id}",
            domain=rec.domain,
            after=support,
            detail=(detail or rec.pattern)[:200],
        )
