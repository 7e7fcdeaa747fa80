"""The free run: the default offline learner, no questions, N iterations on a fresh store.

Also the pieces the learn mode shares with it: the budget caps with the daily
caps lifted, the learner settings of an evaluation session, and the two
figures read back from a run (iterations from the audit log, tool calls from
the budget's persisted spend).

The free run builds the learner the way ``cli.py learn`` does without
``--corpus`` or ``--llm`` (offline answerer over the documentation that ships
with Python), with ``interval_s=0`` and the daily caps lifted; runs longer than
a session's 100 iterations are split into sessions on the same store. Every
figure comes from the store and the audit log (:mod:`.audit`). Follow-up
questions of a reflection that came after the last iteration (the closing
reflection of the run) had no chance to be asked and are not counted as drops.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from sentient_core.autonomy.budget import Budget, BudgetCaps
from sentient_core.autonomy.judge import JudgeSettings
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.audit import (
    audit_run,
    duplicate_count,
    link_stats,
    near_duplicate_count,
    near_repeat_count,
    repeat_count,
    silent_drops,
)
from sentient_core.evaluation.report import FreeRunReport, Spread, SuccessEntry
from sentient_core.evaluation.strict import objections
from sentient_core.events import (
    ChaperoneResponseEvent,
    IterationEvent,
    JudgeEvent,
    QueryEvent,
    ReflectEvent,
    SkipEvent,
    read_events,
)
from sentient_core.learning.learner import MAX_SESSION_ITERATIONS, LearnerConfig
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.vocab import Source

__all__ = [
    "PASSAGE_PREVIEW",
    "count_iterations",
    "learner_settings",
    "lifted_caps",
    "run_free",
    "spent_tool_calls",
]

PASSAGE_PREVIEW = 120
"""Characters of a stored passage shown per success verdict."""

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def lifted_caps() -> BudgetCaps:
    """The default caps with the two daily caps lifted (0 = unlimited)."""
    d = BudgetCaps()
    return BudgetCaps(
        daily_tokens=0,
        daily_tool_calls=0,
        per_tick_tokens=d.per_tick_tokens,
        per_tick_initiatives=d.per_tick_initiatives,
        per_initiative_tokens=d.per_initiative_tokens,
    )


def learner_settings(
    session: str,
    corpus_dirs: tuple[str, ...],
    docs: bool,
    n: int,
    *,
    metamemory: bool = True,
    judge: JudgeSettings | None = None,
    commit_routes: int = 0,
    recipes: bool = False,
    repair: bool = True,
) -> LearnerSettings:
    return LearnerSettings(
        learner=LearnerConfig(
            interval_s=0,
            max_iterations=n,
            session=session,
            commit_routes=commit_routes,
            recipes=recipes,
            skill_repair=repair,
        ),
        caps=lifted_caps(),
        corpus_dirs=corpus_dirs,
        include_python_docs=docs,
        metamemory=metamemory,
        judge=judge or JudgeSettings(),
    )


def count_iterations(events: Sequence[object]) -> int:
    """Iterations run: an ``iteration`` event ends each, a ``skip`` event each skipped one."""
    return sum(1 for e in events if isinstance(e, (IterationEvent, SkipEvent)))


def spent_tool_calls(core: Core, days: set[str]) -> int:
    budget = Budget(core.store, lifted_caps())
    return sum(budget.spend_on(d).tool_calls for d in days)


def run_free(
    iterations: int,
    data_dir: Path,
    *,
    corpus_dirs: Sequence[str | os.PathLike[str]] = (),
    include_python_docs: bool = True,
    progress: Progress = _quiet,
) -> FreeRunReport:
    """The default offline learner, no questions, ``iterations`` on a fresh store."""
    if iterations < 1:
        raise ArgumentError(f"iterations must be >= 1, got {iterations}")
    t0 = time.perf_counter()
    dirs = tuple(str(Path(d).resolve()) for d in corpus_dirs)
    stopped = ""
    days: set[str] = set()
    with Core(data_dir, durable=False) as core:
        remaining, session = iterations, 0
        while remaining > 0 and not stopped:
            n = min(remaining, MAX_SESSION_ITERATIONS)
            session += 1
            with build_learner(
                core, learner_settings(f"evaluate-free-{session}", dirs, include_python_docs, n)
            ) as learner:
                days.add(learner.budget.day())
                stats = learner.run(n)
                days.add(learner.budget.day())
            remaining -= n
            if stats.stopped_by and stats.stopped_by != "max_iterations":
                stopped = stats.stopped_by
            progress(f"free run: {iterations - remaining}/{iterations} iterations")
        events = [e for _, e in read_events(core.store)]
        audit = audit_run(core.store, events)
        graph = link_stats(core.store, audit.traces)
        book = QuestionBook(core.store)
        held = [r.question for r in book.records() if r.status in ("queued", "waiting")]
        calls = spent_tool_calls(core, days)
    last_iteration = max(
        (i for i, e in enumerate(events) if isinstance(e, IterationEvent)), default=-1
    )
    own: list[str] = []
    for i, e in enumerate(events):
        # Follow-ups of a reflection after the last iteration had no chance to be asked.
        if isinstance(e, ReflectEvent) and i < last_iteration:
            own.extend(e.followups)
    own = list(dict.fromkeys(own))
    raised = set(own)
    asked_q = {e.id: e.question for e in events if isinstance(e, QueryEvent)}
    followup_outcomes = Counter(
        e.outcome for e in events if isinstance(e, JudgeEvent) and asked_q.get(e.id) in raised
    )
    dropped = silent_drops(own, events, held)
    n_queries, repeats = repeat_count(e for e in events if isinstance(e, QueryEvent))
    near = near_repeat_count(e for e in events if isinstance(e, QueryEvent))
    text_of = {t.id: t.text for t in audit.traces}
    judged = {e.id: e for e in events if isinstance(e, JudgeEvent)}
    successes = tuple(
        SuccessEntry(
            request=r.id,
            asked=r.label,
            source=r.source,
            # The first (most relevant) passage, under the source shown beside it.
            passage=" ".join(text_of.get(r.trace_ids[0], r.passage).split())[:PASSAGE_PREVIEW]
            if r.trace_ids
            else " ".join(r.passage.split())[:PASSAGE_PREVIEW],
            more=max(0, len(r.trace_ids) - 1),
            linked=r.linked,
            # Everything the request stored is the answer the reader judges.
            objections=objections(
                r.label,
                r.source,
                "\n\n".join(text_of[t] for t in r.trace_ids if t in text_of) or r.passage,
            ),
            relevance=judged[r.id].relevance if r.id in judged else None,
            focus=judged[r.id].focus if r.id in judged else None,
        )
        for r in audit.requests
        if r.outcome == "success"
    )
    outcomes = Counter(r.outcome for r in audit.requests if r.outcome)
    origin = {
        e.id: answer_origin(e.sources) for e in events if isinstance(e, ChaperoneResponseEvent)
    }
    answered_from = Counter(origin.get(e.id, "none") for e in events if isinstance(e, QueryEvent))
    successes_from = Counter(origin.get(s.request, "none") for s in successes)
    corpus = (
        *dirs,
        *(("python docs (pydoc topics + stdlib docstrings)",) if include_python_docs else ()),
    )
    return FreeRunReport(
        iterations=count_iterations(events),
        queries=n_queries,
        repeat_queries=repeats,
        repeat_query_rate=repeats / n_queries if n_queries else None,
        duplicate_stores=duplicate_count(audit.traces),
        near_duplicate_stores=near_duplicate_count(audit.traces),
        near_repeat_queries=near,
        near_repeat_rate=near / n_queries if n_queries else None,
        chunks_stored=len(audit.traces),
        tool_calls=calls,
        own_questions=len(own),
        silent_drops=len(dropped),
        silent_dropped=tuple(dropped),
        outcomes=dict(sorted(outcomes.items())),
        successes=successes,
        unlinked=audit.unlinked,
        corpus=corpus,
        stopped_by=stopped,
        seconds=time.perf_counter() - t0,
        links=graph,
        answered_from=dict(answered_from),
        successes_from=dict(successes_from),
        strict_accepted=sum(not s.objections for s in successes),
        strict_objections=dict(Counter(o for s in successes for o in s.objections)),
        followup_outcomes=dict(sorted(followup_outcomes.items())),
        success_relevance=Spread.of([s.relevance for s in successes if s.relevance is not None]),
        success_focus=Spread.of([s.focus for s in successes if s.focus is not None]),
        focus_by_reader=_median_focus(successes),
    )


def _median_focus(successes: Sequence[SuccessEntry]) -> dict[str, float]:
    """Median focus of the successes the strict reader accepts and of those it objects to."""
    out = {}
    for name, objected in (("accepted", False), ("objected", True)):
        spread = Spread.of(
            [s.focus for s in successes if s.focus is not None and bool(s.objections) == objected]
        )
        if spread is not None:
            out[name] = spread.median
    return out


def answer_origin(sources: Sequence[Source]) -> str:
    """Where an answer came from (see :class:`FreeRunReport`): a local file is the
    user's, a ``corpus`` document the shipped documentation."""
    kinds = {
        "user" if s.kind == "local" else "shipped" if s.kind == "corpus" else "elsewhere"
        for s in sources
    }
    if not kinds:
        return "none"
    return kinds.pop() if len(kinds) == 1 else "mixed"
