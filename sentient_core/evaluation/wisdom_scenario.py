"""``evaluate --scenario wisdom``: wisdom from earlier sessions changes a later one, and wrong
wisdom is demoted by the outcomes of its own uses.

Setup
    A loopback OpenAI-compatible model (:class:`~sentient_core.evaluation.liar.LyingServer`)
    lies about two packages of the Debian Q/A set — ``curl`` and ``openssl`` (a version
    raised by 7, a date moved) — and answers the ``tiff`` questions correctly. The local
    corpus (the Debian changelogs) holds the right values; the chaperone asks the
    model first unless meta-memory says not to.

History (sessions ``w1``, ``w2``)
    The curl questions, two in the first session and the rest in the second,
    meta-memory on. The model's answers are
    checked against the corpus; contradictions are surprises on (curl, answer), debts
    open and their tests resolve them; wisdom on (curl, answer) forms and climbs as far as
    its gates allow (SPEC §5: 4 episodes, 2 sessions, a cited resolved debt, then
    support).

Later session (``w3``), two arms on copies of the history store
    The openssl questions — a domain the model was never asked about — with wisdom
    used (``use_wisdom``) and without (the ablation). With it, trusted wisdom that the
    model lies is a prior on its weight in the new domain: the model is not asked, the
    corpus answers. Without it the model starts at weight 1 in openssl and is asked
    until its own surprises there distrust it. Reported: the model's calls, answer@1 of
    the openssl questions in memory (the default scored recall), the wisdom uses.

Wrong wisdom (session ``w4``, the arm with wisdom)
    The corpus copy never held ``tiff.changelog.txt`` (so nothing about tiff reached
    memory before); the tiff questions are asked, and the model knows tiff. The prior
    now keeps the model out where only it can answer:
    the corpus answers fail, each a failed use of the wisdom, until failures outnumber
    its successes among its latest uses and it is demoted; the model is asked again.
    Reported: the question at which it was demoted, the model's calls before and after,
    answer@1 of the tiff questions asked before and after.
"""

from __future__ import annotations

import shutil
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
from sentient_core.events import MetaMemoryEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner

__all__ = ["WisdomScenarioReport", "format_wisdom_scenario", "run_wisdom_scenario"]

HISTORY_FILE = "curl.changelog.txt"
NEW_DOMAIN_FILE = "openssl.changelog.txt"
WRONG_FILE = "tiff.changelog.txt"
FIRST_DAY = 2
"""History questions of the first session (each a lie the corpus contradicts; three
such surprises distrust the model in the domain, and wisdom needs two sessions)."""


class ArmReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The later session on the new domain, with or without wisdom."""

    use_wisdom: bool
    questions: int
    model_asked: int
    lies_caught: int
    """Surprises in the new domain this session (the model's answers the corpus contradicted)."""
    answer_at_1: float
    uses: dict[str, int]
    model_weight_after: float


class WrongReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The wrong-wisdom session: the model knows what the corpus lost."""

    questions: int
    demoted_at: int
    """1-based question during which the wisdom was demoted (0: never)."""
    model_asked_before: int
    model_asked_after: int
    answer_at_1_before: float
    """Share of the questions up to the demotion that memory answered right after each."""
    answer_at_1_after: float
    failed_uses: int
    reason: str


class CorrectionReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The corrected-changelog session: a resolved debt's source changes its value."""

    question: str
    old_value: str
    new_value: str
    debt: int
    debt_reopened: bool
    debt_status_after: str
    debt_verdict_after: str
    wisdom_cited_it: bool
    wisdom_after: str
    wisdom_reason: str
    answer_at_1_old_before: bool
    answer_at_1_new_after: bool
    iterations: int


class WisdomScenarioReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    history_questions: int
    wisdom_id: int
    wisdom_after_history: str
    wisdom_history: list[str]
    with_wisdom: ArmReport
    without_wisdom: ArmReport
    wisdom_after_later: str
    wrong: WrongReport
    correction: CorrectionReport
    seconds: float


def _corrected(value: str) -> str:
    """A corrected value: the last number raised by 20 (a version no entry has)."""
    import re

    last = list(re.finditer(r"\d+", value))[-1]
    return value[: last.start()] + str(int(last.group(0)) + 20) + value[last.end() :]


def _correction(
    tmp: Path,
    docs: Path,
    server: LyingServer,
    item: QAItem,
    iterations: int,
) -> CorrectionReport:
    """On a copy of the history store: the corpus corrects the value of ``item``'s answer
    (the debt about it was resolved on the old one); the user asks it again."""
    from sentient_core.metamemory import MetaMemory

    store = tmp / "corrected"
    shutil.copytree(tmp / "history", store)
    fixed = docs  # corrected in place, as a user's file is: the debt's test reads it
    old = item.answers[0].strip("()")
    new = _corrected(old)
    path = fixed / HISTORY_FILE
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise ArgumentError(f"the correction needs {old!r} once in {HISTORY_FILE}")
    path.write_text(text.replace(old, new), encoding="utf-8")
    fixed_item = QAItem(q=item.q, answers=(new,), source=item.source)
    with Core(store, durable=False) as core:
        mm = MetaMemory(core.memory)
        debt = next(d for d in mm.debts.debts(status="resolved") if d.pattern == item.q)
        rec = mm.wisdom.find("curl", "answer")
        if rec is None:
            raise ArgumentError("no wisdom on (curl, answer) to correct")
        before = _answered_at_1(core, [item]) == 1.0
        settings = _settings(server, fixed, "w5", True)
        _session(core, settings, [item], iterations)
        # The reopened debt is a debt gap: the next session runs its test.
        _session(core, settings, [], 0)
        learner = build_learner(core, settings)
        try:
            steps = 0
            while steps < 3 * iterations and mm.debts.get(debt.id).status == "open":
                learner.step()
                steps += 1
            learner.run(0)
        finally:
            learner.close()
        after_debt = mm.debts.get(debt.id)
        after_rec = mm.wisdom.get(rec.id)
        return CorrectionReport(
            question=item.q,
            old_value=old,
            new_value=new,
            debt=debt.id,
            debt_reopened=after_debt.reopened > debt.reopened,
            debt_status_after=after_debt.status,
            debt_verdict_after=(
                after_debt.hypotheses[after_debt.verdict] if after_debt.verdict >= 0 else ""
            ),
            wisdom_cited_it=debt.id in rec.cited_debts,
            wisdom_after=after_rec.state,
            wisdom_reason=after_rec.history[-1].reason if after_rec.history else "",
            answer_at_1_old_before=before,
            answer_at_1_new_after=_answered_at_1(core, [fixed_item]) == 1.0,
            iterations=steps,
        )


def _replies(items: Sequence[QAItem]) -> dict[str, str]:
    out = {}
    for it in items:
        answer = it.answers[0]
        lie = it.source in (HISTORY_FILE, NEW_DOMAIN_FILE)
        out[it.q] = sentence(it.q, lie_about(answer) if lie else answer)
    return out


def _settings(server: LyingServer, corpus: Path, session: str, use_wisdom: bool) -> LearnerSettings:
    return LearnerSettings(
        learner=LearnerConfig(
            interval_s=0, max_iterations=100, session=session, use_wisdom=use_wisdom
        ),
        llm=LLMConfig(base_url=server.base_url, model=MODEL, max_retries=1, timeout_s=10.0),
        caps=lifted_caps(),
        corpus_dirs=(str(corpus),),
        include_python_docs=False,
    )


def _session(
    core: Core,
    settings: LearnerSettings,
    items: Sequence[QAItem],
    iterations: int,
    after_each: Callable[[int], None] | None = None,
) -> None:
    learner = build_learner(core, settings)
    try:
        for i, item in enumerate(items):
            learner.ask(item.q)
            for _ in range(iterations):
                learner.step()
            if after_each is not None:
                after_each(i)
        learner.run(0)
    finally:
        learner.close()


def _answered_at_1(core: Core, items: Sequence[QAItem]) -> float:
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall

    if not items:
        return 0.0
    scored = ScoredRecall(core.memory, MetaMemory(core.memory))
    right = 0
    for it in items:
        hits = scored.hits(it.q, 1)
        right += bool(hits) and first_answer(hits[0].record.text, it.answers) is not None
    return right / len(items)


def _uses(core: Core, session: str) -> dict[str, int]:
    out: Counter[str] = Counter()
    for _, e in read_events(core.store):
        if (
            isinstance(e, MetaMemoryEvent)
            and e.component == "wisdom"
            and e.action.startswith("used:")
            and e.session == session
        ):
            out[e.action.removeprefix("used:")] += 1
    return dict(out)


def _surprises(core: Core, domain: str, session: str) -> int:
    from sentient_core.metamemory.surprise import EVENTS

    with core.store.read() as txn:
        return sum(1 for e in EVENTS.iter(txn) if e.domain == domain and e.session == session)


def _wisdom(core: Core) -> Any:
    from sentient_core.metamemory import MetaMemory

    return MetaMemory(core.memory).wisdom.find("curl", "answer")


def _model_weight(core: Core, domain: str, server: LyingServer) -> float:
    from sentient_core.metamemory import MetaMemory
    from sentient_core.vocab import Source, model_ref

    llm = Source("llm", model_ref(server.base_url, MODEL)).id
    return MetaMemory(core.memory).sources.weight(domain, llm)


def _asked(server: LyingServer, items: Sequence[QAItem]) -> int:
    return sum(server.asked[it.q] for it in items)


def run_wisdom_scenario(
    qa_file: str | Path,
    corpus: str | Path,
    *,
    iterations: int = 3,
    progress: Callable[[str], None] = lambda line: None,
) -> WisdomScenarioReport:
    """Run the scenario of the module docstring; every store lives in a temporary dir."""
    t0 = time.perf_counter()
    items = load_qa(qa_file)
    by: dict[str, list[QAItem]] = {}
    for it in items:
        by.setdefault(it.source, []).append(it)
    for name in (HISTORY_FILE, NEW_DOMAIN_FILE, WRONG_FILE):
        if not by.get(name) or not (Path(corpus) / name).is_file():
            raise ArgumentError(f"the wisdom scenario needs questions about {name} and the file")
    history, later, wrong = by[HISTORY_FILE], by[NEW_DOMAIN_FILE], by[WRONG_FILE]
    with tempfile.TemporaryDirectory(prefix="sentient-wisdom-") as tmp_name:
        tmp = Path(tmp_name)
        docs = tmp / "corpus"
        # The user's corpus never had tiff's changelog: only the model knows tiff.
        shutil.copytree(corpus, docs, ignore=shutil.ignore_patterns(WRONG_FILE))
        with LyingServer(_replies([*history, *later, *wrong])) as server:
            progress(f"wisdom: history, {len(history)} curl questions in two sessions")
            # A first day of two questions, then the rest: every surprise of the first
            # day must not distrust the model before a second session sees it lie.
            half = FIRST_DAY
            with Core(tmp / "history", durable=False) as core:
                for session, part in (("w1", history[:half]), ("w2", history[half:])):
                    _session(core, _settings(server, docs, session, True), part, iterations)
                rec = _wisdom(core)
            if rec is None:
                raise ArgumentError("no wisdom formed on (curl, answer) in the history sessions")
            after_history = rec.state
            arms = {}
            for use in (True, False):
                progress(f"wisdom: later session on openssl, use_wisdom={use}")
                store = tmp / ("with" if use else "without")
                shutil.copytree(tmp / "history", store)
                before = _asked(server, later)
                with Core(store, durable=False) as core:
                    _session(core, _settings(server, docs, "w3", use), later, iterations)
                    arms[use] = ArmReport(
                        use_wisdom=use,
                        questions=len(later),
                        model_asked=_asked(server, later) - before,
                        lies_caught=_surprises(core, "openssl", "w3"),
                        answer_at_1=_answered_at_1(core, later),
                        uses=_uses(core, "w3"),
                        model_weight_after=_model_weight(core, "openssl", server),
                    )
                    if use:
                        after_later = _wisdom(core).state
            progress("wisdom: tiff, which only the model knows")
            with Core(tmp / "with", durable=False) as core:
                states: list[str] = []
                asked: list[int] = []
                answered: list[float] = []

                def watch(i: int) -> None:
                    # Right after question i's iterations: the wisdom's state, the model's
                    # calls for it, and whether memory now answers it.
                    states.append(_wisdom(core).state)
                    asked.append(server.asked[wrong[i].q])
                    answered.append(_answered_at_1(core, [wrong[i]]))

                _session(core, _settings(server, docs, "w4", True), wrong, iterations, watch)
                final = _wisdom(core)
                demoted_at = next((i + 1 for i, s in enumerate(states) if s == "demoted"), 0)
                cut = demoted_at if demoted_at else len(wrong)
                wrong_report = WrongReport(
                    questions=len(wrong),
                    demoted_at=demoted_at,
                    model_asked_before=sum(asked[:cut]),
                    model_asked_after=sum(asked[cut:]),
                    answer_at_1_before=_mean(answered[:cut]),
                    answer_at_1_after=_mean(answered[cut:]),
                    failed_uses=final.uses_failed,
                    reason=final.history[-1].reason if final.history else "",
                )
                history_lines = [f"{h.source} → {h.target}: {h.reason}" for h in final.history]
            progress("wisdom: curl's changelog corrects a resolved answer")
            correction = _correction(tmp, docs, server, history[0], iterations)
    return WisdomScenarioReport(
        history_questions=len(history),
        wisdom_id=rec.id,
        wisdom_after_history=after_history,
        wisdom_history=history_lines,
        with_wisdom=arms[True],
        without_wisdom=arms[False],
        wisdom_after_later=after_later,
        wrong=wrong_report,
        correction=correction,
        seconds=round(time.perf_counter() - t0, 3),
    )


def format_wisdom_scenario(r: WisdomScenarioReport) -> str:
    """The report as text."""
    a, b, w = r.with_wisdom, r.without_wisdom, r.wrong
    lines = [
        f"wisdom: history of {r.history_questions} curl questions (two sessions):"
        f" wisdom {r.wisdom_id} on (curl, answer) is {r.wisdom_after_history}",
        f"later session, {a.questions} openssl questions (a domain the model was never asked"
        " about; it lies there too):",
        f"{'':<22}{'with wisdom':>14}{'without':>14}",
        f"{'model asked':<22}{a.model_asked:>14}{b.model_asked:>14}",
        f"{'lies caught':<22}{a.lies_caught:>14}{b.lies_caught:>14}",
        f"{'answer@1':<22}{a.answer_at_1:>14.3f}{b.answer_at_1:>14.3f}",
        f"{'model weight after':<22}{a.model_weight_after:>14.3f}{b.model_weight_after:>14.3f}",
        f"{'wisdom uses':<22}{_kinds(a.uses):>14}{_kinds(b.uses):>14}",
        f"wisdom after the later session: {r.wisdom_after_later}",
        f"wrong wisdom: tiff, which only the model knows ({w.questions} questions):",
        f"  demoted during question {w.demoted_at or 'never'}; failed uses {w.failed_uses};"
        f" {w.reason}",
        f"  model asked {w.model_asked_before} before, {w.model_asked_after} after;"
        f" answer@1 {w.answer_at_1_before:.3f} before, {w.answer_at_1_after:.3f} after",
        "wisdom transitions: " + "; ".join(r.wisdom_history),
        f"corrected changelog: {r.correction.question!r} was {r.correction.old_value}, now"
        f" {r.correction.new_value}; debt {r.correction.debt} (cited by the wisdom:"
        f" {r.correction.wisdom_cited_it}) reopened: {r.correction.debt_reopened}, then"
        f" {r.correction.debt_status_after} on {r.correction.debt_verdict_after or '—'};"
        f" wisdom {r.correction.wisdom_after} ({r.correction.wisdom_reason}); answer@1 old"
        f" value before {r.correction.answer_at_1_old_before}, new value after"
        f" {r.correction.answer_at_1_new_after}",
        f"{r.seconds:.1f} s",
    ]
    return "\n".join(lines)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _kinds(uses: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(uses.items())) or "—"
