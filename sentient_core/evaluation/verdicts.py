"""What the judge's verdicts in a learn run were worth, checked against the Q/A answers.

:func:`judge_report` (precision and recall of the success verdicts on Q/A questions,
the learner's own successes, a shadow judge's agreement: :func:`shadow_report`) and
:func:`book_answers` (do the questions the question book counts answered hold an
answer in what settled them?) read the audit (:mod:`.audit`) and the events, never
the learner's counters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sentient_core.core import Core
from sentient_core.evaluation.qa import QAItem, first_answer, normalize
from sentient_core.evaluation.report import JudgeReport, ShadowReport
from sentient_core.events import IntegrateEvent, JudgeEvent, QueryEvent, ShadowJudgeEvent
from sentient_core.learning.questions import QuestionBook

__all__ = ["book_answers", "judge_report", "shadow_report"]


def shadow_report(items: Sequence[QAItem], audit, events: Sequence[object]) -> ShadowReport | None:
    """How a shadow judge's verdicts compare with the live ones, and what its successes
    on Q/A questions hold."""
    shadow = {e.id: e for e in events if isinstance(e, ShadowJudgeEvent)}
    if not shadow:
        return None
    qa = {normalize(it.q): it for it in items}
    pairs: Counter[str] = Counter()
    success = verified = 0
    for r in audit.requests:
        seen = shadow.get(r.id)
        if seen is None:
            continue
        pairs[f"{seen.live}->{seen.outcome}"] += 1
        item = qa.get(normalize(r.question)) if r.question else None
        if seen.outcome == "success" and item is not None:
            success += 1
            verified += r.linked and first_answer(r.passage, item.answers) is not None
    agreed = sum(1 for e in shadow.values() if e.agrees)
    return ShadowReport(
        judged=len(shadow),
        agreed=agreed,
        agreement=agreed / len(shadow),
        pairs=dict(sorted(pairs.items())),
        qa_success=success,
        qa_verified=verified,
        precision=verified / success if success else None,
    )


def judge_report(items: Sequence[QAItem], audit, events: Sequence[object] = ()) -> JudgeReport:
    """The judge's verdicts over a run, checked against the Q/A answers (precision, recall,
    own successes), with a shadow judge's when there was one."""
    qa = {normalize(it.q): it for it in items}
    outcomes: Counter[str] = Counter(r.outcome for r in audit.requests if r.outcome)
    qa_success = qa_verified = own = stored_answer = 0
    own_types: Counter[str] = Counter()
    for r in audit.requests:
        item = qa.get(normalize(r.question)) if r.question else None
        holds = item is not None and r.linked and first_answer(r.passage, item.answers) is not None
        stored_answer += holds
        if r.outcome != "success":
            continue
        if item is None:
            own += 1
            own_types[r.type] += 1
            continue
        qa_success += 1
        qa_verified += holds
    return JudgeReport(
        outcomes=dict(sorted(outcomes.items())),
        qa_success=qa_success,
        qa_verified=qa_verified,
        precision=qa_verified / qa_success if qa_success else None,
        qa_answer_stored=stored_answer,
        recall=qa_verified / stored_answer if stored_answer else None,
        own_success=own,
        own_success_by_type=dict(sorted(own_types.items())),
        unlinked=audit.unlinked,
        shadow=shadow_report(items, audit, events),
    )


def _settles(verdict: JudgeEvent) -> bool:
    """A verdict the question book may count as answering: success, or already known."""
    return verdict.outcome == "success" or verdict.reason.startswith("already known")


def book_answers(core: Core, items: Sequence[QAItem], events: Sequence[object]) -> list[bool]:
    """For each Q/A question the question book counts answered: do the traces its settling
    request stored or found already known (the judge's success or "already known") hold
    an answer?"""
    asked: dict[str, str] = {}  # request id -> normalised question
    traces: dict[str, set[int]] = {}  # request id -> traces stored or found known
    settling: dict[str, set[int]] = {}  # normalised question -> its settling requests' traces
    for e in events:  # a request's query, integrations and verdict come in that order
        if isinstance(e, QueryEvent) and e.question:
            asked[e.id] = normalize(e.question)
        elif isinstance(e, IntegrateEvent):
            traces.setdefault(e.id, set()).update((*e.trace_ids, *e.known_ids))
        elif isinstance(e, JudgeEvent) and e.id in asked and _settles(e):
            settling.setdefault(asked[e.id], set()).update(traces.get(e.id, ()))
    book = QuestionBook(core.store)
    out = []
    for it in items:
        rec = book.get(it.q)
        if rec is None or rec.status != "answered":
            continue
        found = [core.memory.get(t) for t in sorted(settling.get(normalize(it.q), ()))]
        out.append(any(t is not None and first_answer(t.text, it.answers) for t in found))
    return out
