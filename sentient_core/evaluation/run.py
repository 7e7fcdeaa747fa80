"""The modes of ``evaluate``, each on a fresh temporary store.

ingest
    :class:`~sentient_core.integrate.Integrator` ingests every file of the
    corpus dir (as ``cli.py ingest DIR``); then each question is recalled as
    ``cli.py recall`` does by default — the learned scorer over the hybrid
    (:class:`~sentient_core.metamemory.recall.ScoredRecall`), touching no trace —
    and scored (see :mod:`.report`).
bm25s (peer, with ``ingest``)
    bm25s indexes the very chunk texts the ingest-mode store holds (its own
    tokenizer, English stop-words, no stemmer) and retrieves the top-k of each
    question; results scoring 0 (no query term in the chunk) are not counted.
learn
    The offline learner over the corpus dir only (no Python docs; daily
    budget caps lifted, the per-tick caps at their defaults). For each
    question in turn: ``learner.ask(q)``, then up to ``iterations_per_question``
    iterations (``learner.step()``), stopping early once the question is
    settled — a verdict on a request asking it (learned, already known, or
    failed: a failed question backs off, see :mod:`sentient_core.learning.questions`),
    or a ``question`` event saying it is answered (from memory, or before),
    waiting (it failed before and backs off) or dropped; none is run when
    ``ask`` already says so. Reflection keeps its own cadence (every ``reflect_every``
    iterations, and at the end of a session). A session runs at most 100
    iterations; when the next question would not fit, the session is ended
    (``learner.run(0)``: its closing reflection) and a new learner is built on
    the same store, as a user would start another session. After the last
    question every question is recalled exactly as in ingest mode; the rank
    right after a question's own iterations is reported too.
free run
    The default offline learner, no questions, N iterations on a fresh store
    with the daily caps lifted (:mod:`.free`).

All figures other than answer@k come from the store and the audit log
(:mod:`.audit`), not from the learner's counters.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from sentient_core.autonomy.judge import JudgeSettings
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.audit import (
    audit_run,
    duplicate_count,
    names_question,
    near_duplicate_count,
    near_repeat_count,
    read_traces,
    repeat_count,
    silent_drops,
)
from sentient_core.evaluation.condensed import measure_condensation
from sentient_core.evaluation.free import (
    count_iterations,
    learner_settings,
    lifted_caps,
    run_free,
    spent_tool_calls,
)
from sentient_core.evaluation.qa import QAItem, first_answer, load_qa, normalize, sample
from sentient_core.evaluation.report import (
    EvaluationReport,
    FreeRunReport,
    Latency,
    ModeReport,
    QuestionResult,
    per_answered,
)
from sentient_core.evaluation.spreading import measure_spread
from sentient_core.evaluation.verdicts import book_answers, judge_report
from sentient_core.events import (
    JudgeEvent,
    QueryEvent,
    QuestionEvent,
    read_events,
)
from sentient_core.integrate import Integrator
from sentient_core.learning.learner import MAX_SESSION_ITERATIONS
from sentient_core.learning.session import build_learner

if TYPE_CHECKING:
    from sentient_core.memory import Hit

__all__ = [
    "MODES",
    "evaluate",
    "lifted_caps",
    "run_bm25",
    "run_free",
    "run_ingest",
    "run_learn",
]

MODES = ("ingest", "learn", "both")

#: Events of the request pipeline itself: naming a question there is not "settling" it.
_PIPELINE_KINDS = frozenset(
    {"query", "chaperone.request", "chaperone.response", "refusal", "error", "integrate", "judge"}
)

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _latency(samples: Sequence[float]) -> Latency | None:
    if not samples:
        return None
    ms = sorted(s * 1e3 for s in samples)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return Latency(
        queries=len(ms), median_ms=statistics.median(ms), p95_ms=p95, mean_ms=statistics.fmean(ms)
    )


def _rank(texts: Sequence[str], answers: Sequence[str]) -> tuple[int | None, str | None]:
    """1-based rank of the first text holding an answer, and the answer found."""
    for i, text in enumerate(texts):
        found = first_answer(text, answers)
        if found is not None:
            return i + 1, found
    return None, None


class _DefaultRecall:
    """What ``recall`` answers by default: the learned scorer's rank over the hybrid
    (:class:`~sentient_core.metamemory.recall.ScoredRecall`), never touching a trace."""

    def __init__(self, core: Core) -> None:
        from sentient_core.metamemory import MetaMemory
        from sentient_core.metamemory.recall import ScoredRecall

        self._scored = ScoredRecall(core.memory, MetaMemory(core.memory))

    def hits(self, q: str, k: int) -> list[Hit]:
        return self._scored.hits(q, k)

    def texts(self, q: str, k: int) -> list[str]:
        return [h.record.text for h in self.hits(q, k)]


def _scored(
    mode: str, items: Sequence[QAItem], ranked: Sequence[tuple[int | None, str | None]], k: int
) -> dict:
    n = len(items)
    at1 = sum(1 for r, _ in ranked if r == 1)
    atk = sum(1 for r, _ in ranked if r is not None)
    return {
        "mode": mode,
        "questions": n,
        "k": k,
        "answer_at_1": at1 / n if n else 0.0,
        "answer_at_k": atk / n if n else 0.0,
        "answered": atk,
    }


def run_ingest(
    items: Sequence[QAItem],
    corpus: str | os.PathLike[str],
    k: int,
    data_dir: Path,
    *,
    condense: bool = False,
    spread: int = 0,
) -> tuple[ModeReport, list[str]]:
    """Ingest mode; returns the report and the stored chunk texts (for the bm25s peer).
    ``condense``: then condense once and measure recall with notes in place."""
    t0 = time.perf_counter()
    with Core(data_dir, durable=False) as core:
        Integrator(core.memory, core.observer).ingest([corpus])
        recall = _DefaultRecall(core)
        if items:
            recall.texts(items[0].q, k)  # warm (not timed)
        times: list[float] = []
        ranked = []
        for item in items:
            t = time.perf_counter()
            texts = recall.texts(item.q, k)
            times.append(time.perf_counter() - t)
            ranked.append(_rank(texts, item.answers))
        records = read_traces(core.store)
        spreading = measure_spread(core.memory, items, k, recall.hits, spread) if spread else None
        condensed = measure_condensation(core.memory, items, k, recall.hits) if condense else None
    base = _scored("ingest", items, ranked, k)
    report = ModeReport(
        **base,
        chunks_stored=len(records),
        chars_stored=sum(len(r.text) for r in records),
        tool_calls=0,
        iterations=0,
        chunks_per_answered=per_answered(len(records), base["answered"]),
        tool_calls_per_answered=0.0 if base["answered"] else None,
        iterations_per_answered=0.0 if base["answered"] else None,
        duplicate_stores=duplicate_count(records),
        near_duplicate_stores=near_duplicate_count(records),
        condensation=condensed,
        spread=spreading,
        latency=_latency(times),
        seconds=time.perf_counter() - t0,
        results=tuple(
            QuestionResult(q=it.q, rank=r, answer=a)
            for it, (r, a) in zip(items, ranked, strict=True)
        ),
    )
    return report, [r.text for r in records if not r.retired]


def run_bm25(items: Sequence[QAItem], chunks: Sequence[str], k: int) -> ModeReport:
    """The bm25s peer over ``chunks`` (raises ImportError when bm25s is missing)."""
    import bm25s

    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(list(chunks), stopwords="en", return_ids=False, show_progress=False),
        show_progress=False,
    )
    kk = min(k, len(chunks))

    def search(q: str) -> list[str]:
        if kk == 0:
            return []
        tokens = bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        docs, scores = retriever.retrieve(tokens, k=kk, show_progress=False, n_threads=1)
        return [
            chunks[int(d)]
            for d, s in zip(docs[0].tolist(), scores[0].tolist(), strict=True)
            if s > 0
        ]

    if items:
        search(items[0].q)  # warm (not timed)
    times: list[float] = []
    ranked = []
    for item in items:
        t = time.perf_counter()
        texts = search(item.q)
        times.append(time.perf_counter() - t)
        ranked.append(_rank(texts, item.answers))
    return ModeReport(
        **_scored("bm25s", items, ranked, k),
        latency=_latency(times),
        seconds=time.perf_counter() - t0,
        results=tuple(
            QuestionResult(q=it.q, rank=r, answer=a)
            for it, (r, a) in zip(items, ranked, strict=True)
        ),
    )


class _Watch:
    """Follows the live events to tell when the current question is settled."""

    def __init__(self) -> None:
        self.question = ""
        self.ids: set[str] = set()
        self.settled = False

    def start(self, question: str) -> None:
        self.question, self.ids, self.settled = normalize(question), set(), False

    def __call__(self, event: object) -> None:
        if self.settled or not self.question:
            return
        if isinstance(event, QueryEvent):
            if normalize(event.question) == self.question:
                self.ids.add(event.id)
        elif isinstance(event, JudgeEvent):
            if event.id in self.ids:
                # Learned, already known, or failed (it then backs off): this turn is over.
                self.settled = True
        elif isinstance(event, QuestionEvent):
            # queued and asked are on the way; answered, waiting, dropped settle it.
            if event.status not in ("queued", "asked") and names_question(event, self.question):
                self.settled = True
        elif getattr(event, "kind", "") not in _PIPELINE_KINDS and names_question(
            event, self.question
        ):
            self.settled = True  # an event kind the loop may add later


def run_learn(
    items: Sequence[QAItem],
    corpus: str | os.PathLike[str],
    k: int,
    data_dir: Path,
    *,
    iterations_per_question: int = 3,
    progress: Progress = _quiet,
    metamemory: bool = True,
    judge: JudgeSettings | None = None,
    commit_routes: int = 0,
    condense: bool = False,
    recipes: bool = False,
    session: str = "evaluate-learn",
    after_event: int = -1,
    repair: bool = True,
    spread: int = 0,
) -> ModeReport:
    """Learn mode (see the module docstring); ``metamemory`` False is the ablation,
    ``judge`` the judge's settings (a shadow judge's agreement is reported),
    ``commit_routes`` the task-commitment drive's routes per question (0: off),
    ``condense``: condense what was learned once at the end and measure recall with notes,
    ``recipes`` whether recipes are tried first and learned. On a store that already
    holds a run (a second pass, :mod:`.second_pass`), ``session`` names this run's
    sessions apart and only the audit-log events after ``after_event`` are counted;
    ``repair`` False keeps the skill-repair driver out (a scenario runs it itself)."""
    if not 1 <= iterations_per_question <= MAX_SESSION_ITERATIONS:
        raise ArgumentError(
            f"iterations_per_question must be in [1, {MAX_SESSION_ITERATIONS}],"
            f" got {iterations_per_question}"
        )
    t0 = time.perf_counter()
    corpus_dirs = (str(Path(corpus).resolve()),)
    watch = _Watch()
    after: list[tuple[int | None, int]] = []
    days: set[str] = set()
    stopped = ""
    with Core(data_dir, durable=False) as core:
        recall = _DefaultRecall(core)
        learner = None
        sessions = used = 0
        try:
            for n_q, item in enumerate(items):
                if learner is None or used + iterations_per_question > MAX_SESSION_ITERATIONS:
                    if learner is not None:
                        learner.run(0)  # end the session: its closing reflection
                        learner.close()
                    sessions += 1
                    learner = build_learner(
                        core,
                        learner_settings(
                            f"{session}-{sessions}",
                            corpus_dirs,
                            False,
                            MAX_SESSION_ITERATIONS,
                            metamemory=metamemory,
                            judge=judge,
                            commit_routes=commit_routes,
                            recipes=recipes,
                            repair=repair,
                        ),
                    )
                    learner.events.subscribe(watch)
                    used = 0
                days.add(learner.budget.day())
                watch.start(item.q)
                learner.ask(item.q)
                ran = 0
                while ran < iterations_per_question and not watch.settled:
                    step = learner.step()
                    ran += 1
                    used += 1
                    if step.stopped_by:
                        stopped = step.stopped_by
                        break
                days.add(learner.budget.day())
                rank, _ = _rank(recall.texts(item.q, k), item.answers)
                after.append((rank, ran))
                if (n_q + 1) % 10 == 0:
                    progress(f"learn: {n_q + 1}/{len(items)} questions, {core.memory.count} traces")
                if stopped:
                    break
        finally:
            if learner is not None:
                if not stopped:
                    learner.run(0)
                learner.close()
        events = [e for _, e in read_events(core.store, after_event)]
        audit = audit_run(core.store, events)
        ranked = [_rank(recall.texts(it.q, k), it.answers) for it in items]
        spreading = measure_spread(core.memory, items, k, recall.hits, spread) if spread else None
        condensed = measure_condensation(core.memory, items, k, recall.hits) if condense else None
        calls = spent_tool_calls(core, days)
        book = book_answers(core, items, events)
    iterations = count_iterations(events)
    base = _scored("learn", items, ranked, k)
    answered = base["answered"]
    n_queries, repeats = repeat_count(e for e in events if isinstance(e, QueryEvent))
    near = near_repeat_count(e for e in events if isinstance(e, QueryEvent))
    asked = [it.q for it in items[: len(after)]]
    dropped = silent_drops(asked, events)
    records = audit.traces
    results = []
    for i, (it, (r, a)) in enumerate(zip(items, ranked, strict=True)):
        r_after, ran = after[i] if i < len(after) else (None, 0)
        results.append(
            QuestionResult(
                q=it.q, rank=r, answer=a, rank_after_own_iterations=r_after, iterations=ran
            )
        )
    return ModeReport(
        **base,
        chunks_stored=len(records),
        chars_stored=sum(len(r.text) for r in records),
        tool_calls=calls,
        iterations=iterations,
        chunks_per_answered=per_answered(len(records), answered),
        tool_calls_per_answered=per_answered(calls, answered),
        iterations_per_answered=per_answered(iterations, answered),
        duplicate_stores=duplicate_count(records),
        near_duplicate_stores=near_duplicate_count(records),
        queries=n_queries,
        repeat_queries=repeats,
        repeat_query_rate=repeats / n_queries if n_queries else None,
        near_repeat_queries=near,
        near_repeat_rate=near / n_queries if n_queries else None,
        silent_drops=len(dropped),
        silent_dropped=tuple(dropped),
        answer_at_k_after_own_iterations=(
            sum(1 for r, _ in after if r is not None) / len(items) if items else 0.0
        ),
        judge=msgspec.structs.replace(
            judge_report(items, audit, events),
            book_answered=len(book),
            book_verified=sum(book),
            book_precision=sum(book) / len(book) if book else None,
        ),
        condensation=condensed,
        spread=spreading,
        stopped_by=stopped,
        seconds=time.perf_counter() - t0,
        results=tuple(results),
    )


def evaluate(
    qa_file: str | os.PathLike[str] | None = None,
    corpus: str | os.PathLike[str] | None = None,
    *,
    mode: str = "both",
    k: int = 5,
    iterations_per_question: int = 3,
    sample_size: int | None = None,
    seed: int = 0,
    free_run: int = 0,
    free_corpus: Sequence[str | os.PathLike[str]] = (),
    progress: Progress = _quiet,
    metamemory: bool = True,
    judge: JudgeSettings | None = None,
    commit_routes: int = 0,
    condense: bool = False,
    recipes: bool = False,
    spread: int = 0,
) -> EvaluationReport:
    """Run the requested modes (each on a fresh temporary store) and the optional free run.

    Parameters
    ----------
    qa_file : path, optional
        A Q/A file (see :mod:`.qa`); needs ``corpus``.
    corpus : path, optional
        The folder the answers come from (ingested, or read by the learner).
    mode : {"ingest", "learn", "both"}
        ``ingest`` and ``both`` also run the bm25s peer when it is installed.
    k : int
        Passages recalled per question.
    iterations_per_question : int
        Learn mode: at most this many iterations per question.
    sample_size : int, optional
        Evaluate a fixed sample (``seed``) of the questions.
    free_run : int
        Also run the default offline learner for this many iterations (0: no).
    free_corpus : sequence of path
        Extra corpus dirs for the free run (besides the Python docs).
    progress : callable
        Called with a line of progress now and then.
    metamemory : bool
        Learn mode with learning from error (False: ``--no-metamemory``).
    judge : JudgeSettings, optional
        Learn mode's judge (``mode="shadow"``: beside the default one, its agreement
        reported).
    commit_routes : int
        Learn mode: routes the task-commitment drive tries per question (0: off).
    condense : bool
        Ingest and learn modes: condense the store once at the end and report recall
        with semantic notes in place against plain recall (:mod:`.condensed`).
    recipes : bool
        Learn mode with recipes (:mod:`sentient_core.recipes`).
    spread : int
        Ingest and learn modes: also recall spread this many link hops (:mod:`.spreading`).

    Raises
    ------
    ArgumentError
        A bad argument (the message says which), or an invalid Q/A file.
    """
    if mode not in MODES:
        raise ArgumentError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if k < 1:
        raise ArgumentError(f"k must be >= 1, got {k}")
    if free_run < 0:
        raise ArgumentError(f"free_run must be >= 0, got {free_run}")
    if qa_file is None and not free_run:
        raise ArgumentError("give a Q/A file (with a corpus dir), a free run, or both")
    if qa_file is not None and (corpus is None or not Path(corpus).is_dir()):
        raise ArgumentError(f"corpus must be a directory, got {corpus!r}")
    t0 = time.perf_counter()
    items: list[QAItem] = []
    total = 0
    if qa_file is not None:
        everything = load_qa(qa_file)
        total = len(everything)
        items = sample(everything, sample_size, seed)
    modes: list[ModeReport] = []
    missing: list[str] = []
    free: FreeRunReport | None = None
    with tempfile.TemporaryDirectory(prefix="sentient-evaluate-") as tmp:
        work = Path(tmp)
        if items and mode in ("ingest", "both"):
            progress(f"ingest: {corpus} into a fresh store")
            ingest, chunks = run_ingest(
                items,
                corpus,  # type: ignore[arg-type]
                k,
                work / "ingest",
                condense=condense,
                spread=spread,
            )
            modes.append(ingest)
            try:
                progress(f"bm25s: indexing the same {len(chunks)} chunks")
                peer = run_bm25(items, chunks, k)
            except ImportError:
                missing.append("bm25s")
            else:
                modes.append(peer)
        if items and mode in ("learn", "both"):
            progress(
                f"learn: {len(items)} questions, ≤ {iterations_per_question} iteration(s) each"
            )
            learn = run_learn(
                items,
                corpus,  # type: ignore[arg-type]
                k,
                work / "learn",
                iterations_per_question=iterations_per_question,
                progress=progress,
                metamemory=metamemory,
                judge=judge,
                commit_routes=commit_routes,
                condense=condense,
                recipes=recipes,
                spread=spread,
            )
            modes.insert(1 if mode == "both" else 0, learn)
        if free_run:
            progress(f"free run: {free_run} iterations of the default offline learner")
            free = run_free(free_run, work / "free", corpus_dirs=free_corpus, progress=progress)
    return EvaluationReport(
        qa_file=str(qa_file or ""),
        corpus=str(corpus or ""),
        questions=len(items),
        sampled_from=total,
        k=k,
        iterations_per_question=iterations_per_question if mode != "ingest" else 0,
        modes=tuple(modes),
        free_run=free,
        missing_peers=tuple(missing),
        python=sys.version.split()[0],
        seconds=time.perf_counter() - t0,
    )
