"""The closed-loop experiment of learning from error: a model that lies about one domain.

Setup (``evaluate --scenario lying-source``)
    * A loopback OpenAI-compatible server (:class:`LyingServer`, 127.0.0.1
      only) answers every question of a Q/A set in one sentence. For the
      questions whose answer lives in the *lying file* (one package's Debian
      changelog, ``curl.changelog.txt`` by default) it names a wrong value: a
      version that does not exist in the file (the right one with its last
      number raised by 7) or a date moved by 3 days. Every other question it
      answers correctly.
    * The local corpus (the Debian changelogs) holds the right values. It is the
      only corpus: no Python docs.
    * The Q/A set is split deterministically: of each package's questions the
      first ``train_share`` are *training* questions, the rest are *held out*.
      The learner is asked every training question, then every held-out one
      (each with up to ``iterations`` iterations), exactly as a user would ask;
      it never sees an answer.
    * Between the two halves (meta-memory on), a user reviews the default
      recall's top :data:`REVIEWED` answers to each *training* question (the
      first lines ``recall`` shows), as ``cli.py feedback`` does: right when
      one holds the answer, wrong when it gives another value for the question
      (the disagreement detector against the right one), nothing when it gives
      none. Held-out answers are never shown. (Reading only the top answer
      reviews no lie once recall ranks the right passages first: the
      calibrated-relevance re-rank of :mod:`sentient_core.metamemory.recall`
      puts them first for every training question.)
    * The same run twice, each on a fresh store: meta-memory on, and off
      (``--no-metamemory``, the ablation).

Scored (from the store, never from the learner's counters)
    * answer@1 on the held-out questions: the top trace of the default recall
      (the learned scorer over the hybrid,
      :class:`~sentient_core.metamemory.recall.ScoredRecall`, as ``recall``
      and ``evaluate``) holds the right answer, overall and for the lying
      domain; the MRR (top 10) of the first trace holding it under the default
      recall, the hybrid alone (no scorer) and cosine-only recall.
    * The lying model's weight for the lying domain after the run, and after how
      many surprise events of that domain it first fell below 0.5; the corpus
      file's weight there; the model's lowest weight in any other domain.
    * Debts opened / resolved / open with a discriminating test; wisdom
      promotions, each with its cited debts' status; surprise events by cause;
      credit changes; whether the scorer's snapshots re-train to identical
      weights.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.free import lifted_caps
from sentient_core.evaluation.liar import MODEL, LyingServer, lie_about, sentence
from sentient_core.evaluation.qa import QAItem, first_answer, load_qa
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.relevance import TermStats
from sentient_core.vocab import Source, model_ref

__all__ = ["LyingServer", "ScenarioReport", "format_scenario", "lie_about", "run_lying_source"]


class RunReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One run (meta-memory on or off)."""

    metamemory: bool
    held_out: int
    held_out_lying: int
    answer_at_1: float | None
    answer_at_1_lying: float | None
    answer_at_1_other: float | None
    llm_asked: int
    llm_distrusted: int
    llm_weight_lying: float
    events_to_below_half: int
    corpus_weight_lying: float
    llm_weight_other_min: float
    surprise_by_cause: dict[str, int]
    strength_down: int
    strength_up: int
    retired: int
    credited_traces: int
    moved_by_one_signal: int
    debts_opened: int
    debts_resolved: int
    debts_open_with_test: int
    debts_open_without_test: int
    debts_deferred: int
    wisdom_promotions: int
    promotions_citing_unresolved: int
    review_right: int
    review_wrong: int
    review_not_an_answer: int
    mrr_default: float
    mrr_hybrid: float
    mrr_cosine: float
    scorer_snapshots: int
    scorer_replay_identical: bool | None
    seconds: float


class ScenarioReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    lying_file: str
    lying_domain: str
    train: int
    held_out: int
    on: RunReport
    off: RunReport


def _split(items: Sequence[QAItem], share: float) -> tuple[list[QAItem], list[QAItem]]:
    by_file: dict[str, list[QAItem]] = {}
    for it in items:
        by_file.setdefault(it.source or "", []).append(it)
    train: list[QAItem] = []
    held: list[QAItem] = []
    for group in by_file.values():
        n = max(1, round(share * len(group)))
        train.extend(group[:n])
        held.extend(group[n:])
    # Interleave the packages: a user does not ask one package's questions in a row.
    return _interleave(train, by_file), _interleave(held, by_file)


def _interleave(items: list[QAItem], by_file: dict[str, list[QAItem]]) -> list[QAItem]:
    order = {f: i for i, f in enumerate(by_file)}
    rank: Counter[str] = Counter()
    keyed = []
    for it in items:
        f = it.source or ""
        keyed.append((rank[f], order[f], it))
        rank[f] += 1
    return [it for _, _, it in sorted(keyed, key=lambda t: (t[0], t[1]))]


def _ranks(core: Core, held: Sequence[QAItem], k: int = 10) -> dict[str, list[int | None]]:
    """Rank (1-based, None beyond ``k``) of the first trace holding the answer, per held-out
    question, under the default recall (the learned scorer over the hybrid), the hybrid
    alone and cosine-only recall."""
    scored = _default_recall(core)

    def rank(texts: list[str], answers: Sequence[str]) -> int | None:
        return next(
            (i + 1 for i, t in enumerate(texts) if first_answer(t, answers) is not None), None
        )

    out: dict[str, list[int | None]] = {"default": [], "hybrid": [], "cosine": []}
    for it in held:
        out["default"].append(rank([h.record.text for h in scored.hits(it.q, k)], it.answers))
        for name in ("hybrid", "cosine"):
            hits = core.memory.recall(it.q, k=k, touch=False, rank=name)
            out[name].append(rank([h.record.text for h in hits], it.answers))
    return out


def _default_recall(core: Core) -> Any:
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall

    return ScoredRecall(core.memory, MetaMemory(core.memory))


def _mrr(ranks: Sequence[int | None]) -> float:
    return sum(1.0 / r for r in ranks if r) / len(ranks) if ranks else 0.0


def _answered_at_1(scored: Any, item: QAItem) -> bool:
    hits = scored.hits(item.q, 1)
    return bool(hits) and first_answer(hits[0].record.text, item.answers) is not None


def _run(
    metamemory: bool,
    train: Sequence[QAItem],
    held: Sequence[QAItem],
    corpus: Path,
    lying_file: str,
    server: LyingServer,
    data_dir: Path,
    iterations: int,
    review: bool = True,
) -> RunReport:
    t0 = time.perf_counter()
    marks: Counter[str] = Counter()
    llm_id = Source("llm", model_ref(server.base_url, MODEL)).id
    asked_before = sum(server.asked.values())
    with Core(data_dir, durable=False) as core:
        settings = LearnerSettings(
            learner=LearnerConfig(interval_s=0, max_iterations=100, session="lying-1"),
            llm=LLMConfig(base_url=server.base_url, model=MODEL, max_retries=1, timeout_s=10.0),
            caps=lifted_caps(),
            corpus_dirs=(str(corpus),),
            include_python_docs=False,
            metamemory=metamemory,
        )
        learner = build_learner(core, settings)
        used = 0
        sessions = 1
        try:
            for item in [*train, *held]:
                if used + iterations > 100:
                    learner.run(0)
                    learner.close()
                    sessions += 1
                    learner = build_learner(
                        core,
                        msgspec.structs.replace(
                            settings,
                            learner=LearnerConfig(
                                interval_s=0, max_iterations=100, session=f"lying-{sessions}"
                            ),
                        ),
                    )
                    used = 0
                learner.ask(item.q)
                for _ in range(iterations):
                    learner.step()
                    used += 1
                if review and learner.meta is not None and item is train[-1]:
                    marks = _user_review(core, learner.meta.meta, train, corpus)
            learner.run(0)
            distrusted = learner.chaperone.counters.get("distrusted", 0)
        finally:
            learner.close()
        scored = _default_recall(core)
        right = [_answered_at_1(scored, it) for it in held]
        ranks = _ranks(core, held)
        lying = [r for r, it in zip(right, held, strict=True) if it.source == lying_file]
        other = [r for r, it in zip(right, held, strict=True) if it.source != lying_file]
        return _measure(
            core,
            metamemory=metamemory,
            held=held,
            right=right,
            lying=lying,
            other=other,
            llm_id=llm_id,
            corpus_file=corpus / lying_file,
            lying_questions=[it.q for it in [*train, *held] if it.source == lying_file],
            llm_asked=sum(server.asked.values()) - asked_before,
            distrusted=int(distrusted),
            ranks=ranks,
            marks=marks,
            seconds=time.perf_counter() - t0,
        )


REVIEWED = 3
"""Answers to each training question the user reads in the review (``recall``'s first lines)."""


def _user_review(core: Core, meta: Any, train: Sequence[QAItem], corpus: Path) -> Counter[str]:
    """A user reads the default recall's top :data:`REVIEWED` answers to each training
    question and says whether each is right (``cli.py feedback``, in the question's
    domain): the second, consistent signal that moves a trace's strength. A passage that
    gives no value for the question (no conflict with the right answer) is not marked.
    Held-out answers are never shown."""
    from sentient_core.learning.offline import CorpusAnswerer
    from sentient_core.metamemory import domain_of
    from sentient_core.metamemory.disagreement import detect_disagreement
    from sentient_core.metamemory.feedback import feedback
    from sentient_core.metamemory.recall import ScoredRecall

    scored = ScoredRecall(core.memory, meta)  # the learner's own meta-memory
    stats = TermStats(CorpusAnswerer([corpus], include_python_docs=False).passages)
    marks: Counter[str] = Counter()
    for it in train:
        truth = sentence(it.q, it.answers[0])
        for hit in scored.hits(it.q, REVIEWED):
            text = hit.record.text
            right = first_answer(text, it.answers) is not None
            # "Wrong" only for a passage that gives another value next to the question's
            # identifiers than the right one (as the disagreement detector reads it); one
            # that gives none (a fragment of the right entry, another entry) is no answer.
            if not right and detect_disagreement(it.q, text, truth, stats) is None:
                marks["not an answer"] += 1
                continue
            feedback(
                meta,
                hit.record,
                right=right,
                note=f"review of the answer to {it.q!r}",
                session="review",
                domain=domain_of(it.q, None, stats),
            )
            marks["right" if right else "wrong"] += 1
    return marks


def _measure(core: Core, **kw: Any) -> RunReport:
    from sentient_core.metamemory import MetaMemory, ScorerModel, batches_of, domain_of, replay
    from sentient_core.metamemory.credit import CREDITS, FLOORS
    from sentient_core.metamemory.scorer import SNAPSHOTS
    from sentient_core.metamemory.sources import WEIGHTS
    from sentient_core.metamemory.surprise import EVENTS

    def rate(xs: list[bool]) -> float | None:
        return sum(xs) / len(xs) if xs else None  # no question: no rate (printed "—")

    mm = MetaMemory(core.memory)
    llm_id: str = kw["llm_id"]
    from sentient_core.learning.offline import CorpusAnswerer

    stats = TermStats(
        CorpusAnswerer([kw["corpus_file"].parent], include_python_docs=False).passages
    )
    domains = Counter(domain_of(q, None, stats) for q in kw["lying_questions"])
    lying_domain = domains.most_common(1)[0][0] if domains else ""
    with core.store.read() as txn:
        events = list(EVENTS.iter(txn))
        weights = list(WEIGHTS.iter(txn))
        snaps = list(SNAPSHOTS.iter(txn))
    # After how many surprise events naming the model in the lying domain did its weight
    # first fall below 0.5? Re-run the rules over the logged events in order.
    from sentient_core.metamemory.sources import RULES
    from sentient_core.metamemory.surprise import source_key

    w, n_events, below = 1.0, 0, 0
    window: list[str] = []
    for e in events:
        if e.domain != lying_domain or e.magnitude < RULES.ignore_below:
            continue
        window = [*window, source_key(e.source)][-RULES.window :]
        if source_key(e.source) != source_key(llm_id):
            continue
        n_events += 1
        if e.magnitude >= RULES.punish_at or window.count(source_key(llm_id)) >= 2:
            w = RULES.punished(w, e.magnitude)
        if w < 0.5 and not below:
            below = n_events
    by_cause = Counter(e.cause for e in events)
    corpus_id = Source("local", str(kw["corpus_file"])).id
    llm_w = {r.domain: r.weight for r in weights if r.source == source_key(llm_id)}
    corpus_w = {r.domain: r.weight for r in weights if r.source == source_key(corpus_id)}
    debts = mm.debts.debts()
    promotions = [
        (rec, step)
        for rec in mm.wisdom.records()
        for step in rec.history
        if step.target == "provisional"
    ]
    unresolved = sum(
        1
        for rec, _ in promotions
        if not rec.cited_debts or any(mm.debts.get(d).status != "resolved" for d in rec.cited_debts)
    )
    identical: bool | None = None
    if snaps:
        again = replay(snaps, batches_of(snaps))
        identical = again.weights.tobytes() == ScorerModel.load(core.store).weights.tobytes()
    credited = retired = one_signal_moved = 0
    with core.store.read() as txn:
        from sentient_core.store import traces as store_traces

        for rec in CREDITS.iter(txn):
            credited += 1
            tr = store_traces.get(txn, rec.trace)
            if rec.events == 1 and tr is not None and tr.strength != 1.0:
                one_signal_moved += 1  # must stay 0: one signal never moves strength
        retired = sum(1 for _ in FLOORS.iter(txn))
    down = sum(1 for t in core.memory.recent(10**6) if t.strength < 1.0)
    up = sum(1 for t in core.memory.recent(10**6) if t.strength > 1.0)
    return RunReport(
        metamemory=kw["metamemory"],
        held_out=len(kw["held"]),
        held_out_lying=len(kw["lying"]),
        answer_at_1=rate(kw["right"]),
        answer_at_1_lying=rate(kw["lying"]),
        answer_at_1_other=rate(kw["other"]),
        llm_asked=kw["llm_asked"],
        llm_distrusted=kw["distrusted"],
        llm_weight_lying=llm_w.get(lying_domain, 1.0),
        events_to_below_half=below,
        corpus_weight_lying=corpus_w.get(lying_domain, 1.0),
        # A domain without a weight record holds the prior, 1.0.
        llm_weight_other_min=min((v for d, v in llm_w.items() if d != lying_domain), default=1.0),
        surprise_by_cause=dict(sorted(by_cause.items())),
        strength_down=down,
        strength_up=up,
        retired=retired,
        credited_traces=credited,
        moved_by_one_signal=one_signal_moved,
        debts_opened=len(debts),
        debts_resolved=sum(1 for d in debts if d.status == "resolved"),
        debts_open_with_test=sum(1 for d in debts if d.status == "open" and d.test is not None),
        debts_open_without_test=sum(1 for d in debts if d.status == "open" and d.test is None),
        debts_deferred=sum(1 for d in debts if d.status == "deferred"),
        wisdom_promotions=len(promotions),
        promotions_citing_unresolved=unresolved,
        review_right=kw["marks"]["right"],
        review_wrong=kw["marks"]["wrong"],
        review_not_an_answer=kw["marks"]["not an answer"],
        mrr_default=_mrr(kw["ranks"]["default"]),
        mrr_hybrid=_mrr(kw["ranks"]["hybrid"]),
        mrr_cosine=_mrr(kw["ranks"]["cosine"]),
        scorer_snapshots=len(snaps),
        scorer_replay_identical=identical,
        seconds=kw["seconds"],
    )


def run_lying_source(
    qa_file: str | Path,
    corpus: str | Path,
    *,
    lying_file: str = "curl.changelog.txt",
    train_share: float = 0.5,
    iterations: int = 2,
    sample_size: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> ScenarioReport:
    """Run the experiment (see the module docstring) with meta-memory on, then off."""
    corpus = Path(corpus).resolve()
    if not corpus.is_dir():
        raise ArgumentError(f"corpus must be a directory, got {str(corpus)!r}")
    if not 0.0 < train_share < 1.0:
        raise ArgumentError(f"train_share must be in (0, 1), got {train_share}")
    items = load_qa(qa_file)
    if sample_size is not None:
        per: dict[str, list[QAItem]] = {}
        for it in items:
            per.setdefault(it.source or "", []).append(it)
        items = [it for group in per.values() for it in group[:sample_size]]
    if not any(it.source == lying_file for it in items):
        raise ArgumentError(f"no question of the Q/A set has source {lying_file!r}")
    train, held = _split(items, train_share)
    replies = {
        it.q: sentence(it.q, lie_about(it.answers[0]))
        if it.source == lying_file
        else sentence(it.q, it.answers[0])
        for it in items
    }
    runs = {}
    with LyingServer(replies) as server, tempfile.TemporaryDirectory(prefix="sentient-lying-") as t:
        for on in (True, False):
            progress(f"lying-source: meta-memory {'on' if on else 'off'}")
            runs[on] = _run(
                on, train, held, corpus, lying_file, server, Path(t) / str(on), iterations
            )
    from sentient_core.learning.offline import CorpusAnswerer
    from sentient_core.metamemory import domain_of

    stats = TermStats(CorpusAnswerer([corpus], include_python_docs=False).passages)
    lying_q = next(it.q for it in items if it.source == lying_file)
    return ScenarioReport(
        lying_file=lying_file,
        lying_domain=domain_of(lying_q, None, stats),
        train=len(train),
        held_out=len(held),
        on=runs[True],
        off=runs[False],
    )


def format_scenario(r: ScenarioReport) -> str:
    """The on/off table."""
    rows = [f for f in RunReport.__struct_fields__ if f != "metamemory"]
    lines = [
        f"lying-source: the model lies about {r.lying_file} (domain {r.lying_domain!r});"
        f" {r.train} training and {r.held_out} held-out questions",
        f"{'':<32} {'meta-memory on':>18} {'off':>18}",
    ]
    for name in rows:
        a, b = getattr(r.on, name), getattr(r.off, name)

        def f(x: object) -> str:
            if x is None:
                return "—"
            if isinstance(x, float):
                return f"{x:.3f}"
            if isinstance(x, dict):
                return ",".join(f"{k}={v}" for k, v in x.items()) or "—"
            return str(x)

        lines.append(f"{name:<32} {f(a):>18} {f(b):>18}")
    return "\n".join(lines)
