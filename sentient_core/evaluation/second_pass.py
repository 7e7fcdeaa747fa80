"""``evaluate --second-pass``: what recipes save on questions of kinds already answered.

The Q/A set is split by kind (:func:`~sentient_core.recipes.kind_of`): within each
kind, in file order, questions go alternately to half A and half B (a kind asked
once goes to A: it can teach, not be reused). Then, with the task-commitment
drive as given (``commit_routes``):

1. **first pass** — learn mode on A with recipes on, on a fresh store: recipes
   are born of its judged successes;
2. the store is copied twice (closed first, so each copy is the same state);
3. **second pass with recipes** — learn mode on B on one copy, recipes on;
4. **second pass without** — learn mode on B on the other copy, recipes off.

Both second passes start from the same memory and differ only in recipes. Their
figures count the audit-log events after the first pass only (queries and
iterations); answer@k is each copy's recall of B's questions at its end.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from sentient_core.autonomy.judge import JudgeSettings
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.qa import QAItem
from sentient_core.evaluation.report import ModeReport, per_answered
from sentient_core.events import RecipeEvent, read_events
from sentient_core.recipes import RECIPES, kind_of, layer_counts

__all__ = ["PassFigures", "SecondPassReport", "format_second_pass", "run_second_pass", "split"]

Progress = Callable[[str], None]


class PassFigures(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One pass: its questions, what recall answers at its end, what it asked.

    ``recipe_actions`` counts the pass's ``recipe`` events by action (born, tried,
    verified, failed, inconclusive, retired).
    """

    questions: int
    answered: int
    answer_at_1: float
    answer_at_k: float
    queries: int
    queries_per_answered: float | None
    iterations: int
    judge_precision: float | None
    recipe_actions: dict[str, int]


class SecondPassReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The three passes (see the module docstring)."""

    qa_file: str
    corpus: str
    k: int
    iterations_per_question: int
    commit_routes: int
    kinds: int
    first: PassFigures
    with_recipes: PassFigures
    without_recipes: PassFigures
    recipes_after_first: dict[str, int]
    queries_per_answered_change: float | None
    """(with − without) / without: −0.30 is the issue's target."""
    seconds: float


def split(items: Sequence[QAItem]) -> tuple[list[QAItem], list[QAItem]]:
    """Half A and half B (see the module docstring)."""
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        by_kind[kind_of(item.q)].append(i)
    to_b: set[int] = set()
    for members in by_kind.values():
        to_b.update(members[1::2])
    return (
        [it for i, it in enumerate(items) if i not in to_b],
        [it for i, it in enumerate(items) if i in to_b],
    )


def _figures(report: ModeReport, events: Sequence[object]) -> PassFigures:
    actions = Counter(e.action for e in events if isinstance(e, RecipeEvent))
    queries = report.queries or 0
    return PassFigures(
        questions=report.questions,
        answered=report.answered,
        answer_at_1=report.answer_at_1,
        answer_at_k=report.answer_at_k,
        queries=queries,
        queries_per_answered=per_answered(queries, report.answered),
        iterations=report.iterations or 0,
        judge_precision=report.judge.precision if report.judge is not None else None,
        recipe_actions=dict(sorted(actions.items())),
    )


def _last_event(data_dir: Path) -> tuple[int, dict[str, int], int]:
    """The audit log's last sequence number, recipes per state, and recipes."""
    with Core(data_dir, durable=False) as core:
        seq = max((n for n, _ in read_events(core.store)), default=-1)
        with core.store.read() as txn:
            return seq, layer_counts(txn), RECIPES.count(txn)


def run_second_pass(
    items: Sequence[QAItem],
    corpus: str | os.PathLike[str],
    k: int,
    work: Path,
    *,
    iterations_per_question: int = 3,
    commit_routes: int = 0,
    metamemory: bool = True,
    judge: JudgeSettings | None = None,
    progress: Progress | None = None,
    qa_file: str = "",
) -> SecondPassReport:
    """The three passes in ``work`` (see the module docstring).

    Raises
    ------
    ArgumentError
        The split leaves half B empty (every kind is asked once).
    """
    from sentient_core.evaluation.run import run_learn

    say = progress or (lambda _: None)
    t0 = time.perf_counter()
    half_a, half_b = split(items)
    if not half_b:
        raise ArgumentError("no kind of question is asked twice: the second pass would be empty")
    common = {
        "iterations_per_question": iterations_per_question,
        "commit_routes": commit_routes,
        "metamemory": metamemory,
        "judge": judge,
    }
    say(f"second pass: first pass on {len(half_a)} questions (recipes on)")
    first = run_learn(half_a, corpus, k, work / "first", recipes=True, **common)  # type: ignore[arg-type]
    seq, states, _ = _last_event(work / "first")
    with Core(work / "first", durable=False) as core:
        first_events = [e for _, e in read_events(core.store)]
    passes = {}
    for name, on in (("with", True), ("without", False)):
        copy = work / f"second-{name}"
        shutil.copytree(work / "first", copy)
        say(f"second pass: {len(half_b)} other questions of the same kinds, recipes {name}")
        report = run_learn(
            half_b,
            corpus,
            k,
            copy,
            recipes=on,
            session="evaluate-second",
            after_event=seq,
            **common,  # type: ignore[arg-type]
        )
        with Core(copy, durable=False) as core:
            events = [e for _, e in read_events(core.store, seq)]
        passes[name] = _figures(report, events)
    with_, without = passes["with"], passes["without"]
    change = None
    if with_.queries_per_answered is not None and without.queries_per_answered:
        change = with_.queries_per_answered / without.queries_per_answered - 1.0
    return SecondPassReport(
        qa_file=qa_file,
        corpus=str(corpus),
        k=k,
        iterations_per_question=iterations_per_question,
        commit_routes=commit_routes,
        kinds=len({kind_of(it.q) for it in items}),
        first=_figures(first, first_events),
        with_recipes=with_,
        without_recipes=without,
        recipes_after_first=states,
        queries_per_answered_change=change,
        seconds=time.perf_counter() - t0,
    )


def _row(name: str, f: PassFigures) -> str:
    qpa = "—" if f.queries_per_answered is None else f"{f.queries_per_answered:.3f}"
    prec = "—" if f.judge_precision is None else f"{f.judge_precision:.3f}"
    acts = ", ".join(f"{k} {v}" for k, v in f.recipe_actions.items()) or "none"
    return (
        f"{name:<24} {f.questions:>4} {f.answer_at_1:>6.3f} {f.answer_at_k:>6.3f}"
        f" {f.queries:>7} {qpa:>8} {prec:>9}  recipes: {acts}"
    )


def format_second_pass(r: SecondPassReport) -> str:
    """The report as text."""
    change = (
        "—" if r.queries_per_answered_change is None else f"{r.queries_per_answered_change:+.1%}"
    )
    states = ", ".join(f"{k} {v}" for k, v in r.recipes_after_first.items())
    return "\n".join(
        [
            f"second pass: {r.qa_file} over {r.corpus} ({r.kinds} kinds; k={r.k},"
            f" ≤ {r.iterations_per_question} iteration(s) per question,"
            f" commit routes {r.commit_routes})",
            f"{'pass':<24} {'Qs':>4} {'a@1':>6} {'a@k':>6} {'queries':>7} {'q/ans':>8}"
            f" {'judge prec':>9}",
            _row("first (half A)", r.first),
            _row("second, with recipes", r.with_recipes),
            _row("second, without", r.without_recipes),
            f"recipes after the first pass: {states}",
            f"queries per answered question, second pass: {change} with recipes"
            f" (target −30% at equal answer@k); {r.seconds:.1f} s",
        ]
    )
