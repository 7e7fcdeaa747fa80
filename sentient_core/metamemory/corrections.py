"""Debts in the loop: opened by a conflict, settled by their tests, reopened by new evidence.

Self-correction runs both ways:

* **Opening.** A conflict between memory (or a model's answer) and a grounded
  passage opens a debt about the question: the two values as hypotheses, the
  passage as the first evidence (:data:`CORROBORATION`), and the discriminating
  test — reading the passage's file again, or asking the question.
* **Settling.** When the learner runs a debt's test (:func:`debt_attempt`), the
  content is evidence for the hypothesis whose value it supports
  (:data:`TEST_EVIDENCE`), or a failed attempt; enough evidence resolves it, and
  the domain's wisdom candidates may then cite it.
* **Reopening.** A new conflict on a question whose debt is *resolved* is new
  evidence about that resolution (:func:`open_or_reopen`). When its value is not
  the one the resolution favoured — a source that was right turned wrong, a
  changelog corrected — the debt reopens, with the new evidence and its
  provenance (source, surprise id) attached, and every provisional or trusted
  wisdom record citing it is demoted (:meth:`MetaMemory.reopen_debt`). The open
  debt is a ``debt`` gap again: the loop re-runs its test, which is how what
  rested on it gets re-checked. New evidence that agrees with the resolution
  opens nothing.
* **Dependants.** When a debt resolves (:func:`settle_dependants`), the traces
  it rests on are judged by the verdict: the trace it is about and every
  evidence trace that supported another value get a judged failure, those that
  supported the verdict a success. Where a trace holding the verdict exists, a
  losing trace is superseded by it — retired with a floor record naming the
  debt (nothing is deleted) — so recall stops answering with the losing value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from sentient_core.metamemory.debts import DebtEvidence, DebtRecord, DiscriminatingTest
from sentient_core.metamemory.disagreement import detect_disagreement

if TYPE_CHECKING:
    from sentient_core.metamemory.core import MetaMemory
    from sentient_core.metamemory.disagreement import Disagreement
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage

__all__ = [
    "CORROBORATION",
    "FAILING",
    "FAILING_SUCCESS",
    "TEST_EVIDENCE",
    "debt_attempt",
    "open_or_reopen",
    "settle_dependants",
]

CORROBORATION = 0.4
"""Evidence confidence of the grounded passage that revealed a conflict."""

TEST_EVIDENCE = 0.4
"""Evidence confidence of a discriminating test's content that supports one hypothesis
(with the corroboration: 0.8 ≥ 0.70, the debt resolves)."""

FAILING = "failing question: "
"""Pattern prefix of the debt a repeatedly failing question opens."""

FAILING_SUCCESS = 0.8
"""Evidence confidence of a success verdict on a failing question's debt (it resolves)."""


def _resolved_on(meta: MetaMemory, pattern: str, domain: str) -> DebtRecord | None:
    """The newest resolved debt about ``pattern`` in ``domain``, or None."""
    found = [d for d in meta.debts.debts(status="resolved", domain=domain) if d.pattern == pattern]
    return found[-1] if found else None


def open_or_reopen(
    meta: MetaMemory,
    *,
    question: str,
    found: Disagreement,
    domain: str,
    passage: Passage,
    wrong_trace: int,
    right_trace: int,
    surprise_id: int,
    now: float,
) -> DebtRecord | None:
    """The debt a conflict about ``question`` leads to (see the module docstring):
    a new one, a resolved one reopened by this evidence, or None when the evidence
    agrees with the resolution already reached."""
    pattern = question[:1000]
    evidence = DebtEvidence(
        source=passage.source.id,
        confidence=CORROBORATION,
        supports=1,
        note=found.explanation[:4000],
        trace=right_trace,
        surprise_id=surprise_id,
        time=now,
    )
    resolved = _resolved_on(meta, pattern, domain)
    if resolved is not None:
        favoured = resolved.hypotheses[resolved.verdict] if resolved.verdict >= 0 else ""
        if found.actual == favoured:
            return None  # the new passage confirms the resolution
        debt, _ = meta.reopen_debt(
            resolved.id,
            f"new evidence from {passage.source.id} (surprise {surprise_id}) gives"
            f" {found.actual!r}; the resolution favoured {favoured!r}",
            hypothesis=found.actual,
        )
        if found.actual in debt.hypotheses:
            supports = debt.hypotheses.index(found.actual)
            return _attached(meta, debt.id, msgspec.structs.replace(evidence, supports=supports))
        return debt
    if passage.source.kind == "local":
        test = DiscriminatingTest(
            kind="read_local", question=pattern, path=passage.source.ref[:4096]
        )
    else:
        test = DiscriminatingTest(kind="question", question=pattern)
    debt = meta.debts.open(
        pattern=pattern,
        hypotheses=(found.expected, found.actual),
        domain=domain,
        fragility=found.magnitude,
        test=test,
        source_memory=wrong_trace,
        surprise_id=surprise_id,
    )
    return _attached(meta, debt.id, evidence)


def _attached(meta: MetaMemory, debt_id: int, evidence: DebtEvidence) -> DebtRecord:
    """Attach ``evidence``; a debt it resolves settles its dependants."""
    before = meta.debts.get(debt_id).status
    debt = meta.debts.attach(debt_id, evidence)
    if debt.status == "resolved" and before != "resolved":
        settle_dependants(meta, debt)
    return debt


def settle_dependants(meta: MetaMemory, debt: DebtRecord) -> tuple[list[int], list[int]]:
    """A debt resolved on ``debt.verdict``: judge the traces that rest on it (see the
    module docstring); returns (failed, succeeded) trace ids."""
    if debt.status != "resolved" or debt.verdict < 0:
        return [], []
    winner = debt.hypotheses[debt.verdict]
    lost: list[int] = []
    won: list[int] = []
    for e in debt.evidence:
        if e.trace >= 0 and 0 <= e.supports < len(debt.hypotheses):
            (won if e.supports == debt.verdict else lost).append(e.trace)
    about = meta.memory.get(debt.source_memory) if debt.source_memory >= 0 else None
    if about is not None and winner not in about.text:
        lost.append(about.id)
    lost = [t for t in dict.fromkeys(lost) if t not in won and meta.memory.get(t) is not None]
    won = [t for t in dict.fromkeys(won) if meta.memory.get(t) is not None]
    meta.record_outcome(lost, "failure")
    meta.record_outcome(won, "success")
    successor = next((t for t in won if winner in _text(meta, t)), -1)
    if successor >= 0 and lost:
        _supersede(meta, debt, lost, successor, winner)
    return lost, won


def _text(meta: MetaMemory, trace_id: int) -> str:
    rec = meta.memory.get(trace_id)
    return "" if rec is None else rec.text


def _supersede(
    meta: MetaMemory, debt: DebtRecord, lost: list[int], successor: int, winner: str
) -> None:
    """Retire the live ``lost`` traces, each with a floor record naming the debt."""
    from sentient_core.metamemory.credit_records import FLOORS, FloorRecord

    now = float(debt.resolved_at or debt.updated)
    records = [meta.memory.get(t) for t in lost]
    live = {r.id: r for r in records if r is not None and not r.retired}

    def write(tx) -> None:
        for tid, rec in live.items():
            FLOORS.put(
                tx.txn,
                FloorRecord(
                    trace=tid,
                    superseded_by=successor,
                    reason=(
                        f"debt {debt.id} resolved on {winner[:200]!r}, which this trace"
                        f" contradicts; superseded by trace {successor}, which holds it"
                    )[:2000],
                    strength=rec.strength,
                    time=now,
                ),
            )
        tx.retire(list(live))

    if live:
        meta.memory.write(write)


def debt_attempt(
    meta: MetaMemory,
    req: ChaperoneRequest,
    response: ChaperoneResponse,
    verdict: Any,
    *,
    now: float,
) -> None:
    """A debt's discriminating test ran: its content is evidence, or a failed attempt.

    For a failing question's debt the evidence is the judge's verdict: a success
    supports "the sources hold an answer" at :data:`FAILING_SUCCESS`."""
    debt = _debt_of(meta, req)
    if debt is None:
        return
    content = response.content if response.ok else ""
    if debt.pattern.startswith(FAILING):
        supports = 1 if verdict.outcome == "success" else None
    else:
        supports = _supported(debt, content) if content.strip() else None
    if supports is None:
        meta.debts.fail_attempt(debt.id)
        return
    source = response.sources[0].id if response.sources else "local:" + (req.path or "?")
    updated = _attached(
        meta,
        debt.id,
        DebtEvidence(
            source=source,
            confidence=FAILING_SUCCESS if debt.pattern.startswith(FAILING) else TEST_EVIDENCE,
            supports=supports,
            note=f"the discriminating test ({req.type}) supports {debt.hypotheses[supports]!r}",
            attempt=True,
            time=now,
        ),
    )
    if updated.status == "resolved":
        # The wisdom of this domain may now cite it.
        for rec in meta.wisdom.records(state="candidate"):
            if rec.domain == updated.domain:
                meta.advance(rec)


def _debt_of(meta: MetaMemory, req: ChaperoneRequest) -> DebtRecord | None:
    for debt in meta.debts.debts(status="open"):
        t = debt.test
        if t is None:
            continue
        if (req.path and t.path == req.path) or (
            req.type == "question" and t.question == req.question
        ):
            return debt
    return None


def _supported(debt: DebtRecord, content: str) -> int | None:
    """The hypothesis the content supports: its value is in the content and the detector
    finds no conflict with it next to the question's key terms, while it does find one
    with every other hypothesis."""
    q = debt.pattern
    agree = []
    for i, value in enumerate(debt.hypotheses):
        claim = f"{q.rstrip('?')}: {value}."
        if value in content and detect_disagreement(q, claim, content) is None:
            agree.append(i)
    return agree[0] if len(agree) == 1 else None
