"""Meta-memory wired into the loop, through real parts: a real LMDB store (Core), the
loopback OpenAI-compatible test server, the Debian changelogs of bench/data as the local
corpus, the learner built by build_learner, and the CLI in-process.

* A model's wrong version, contradicted by the corpus, becomes a surprise event, a
  punished (model, domain) weight, a rewarded corpus file, a debt that its discriminating
  test (curiosity's ``debt`` gap, run by the learner) resolves, and ``metamemory`` events.
* ``--no-metamemory`` records nothing of it.
* ``feedback --wrong`` moves strength only on the second signal; ``status``, ``sources``,
  ``debts``, ``wisdom``, ``scorer`` read it all back; the store stays consistent.
* The closed-loop experiment (``evaluate --scenario lying-source``) on the whole debian set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.evaluation.lying import (
    RunReport,
    ScenarioReport,
    format_scenario,
    lie_about,
    run_lying_source,
)
from sentient_core.evaluation.qa import load_qa
from sentient_core.events import MetaMemoryEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.metamemory import MetaMemory
from sentient_core.store import check_integrity
from tests.servers.openai import OpenAIServer

DEBIAN = Path(__file__).resolve().parents[1] / "bench" / "data" / "debian"
CORPUS = DEBIAN / "corpus"
CURL = [q for q in load_qa(DEBIAN / "qa.json") if q.source == "curl.changelog.txt"]
CVE_Q = CURL[0]  # "Which version of the Debian curl package fixed CVE-2025-0167?"
RIGHT = CVE_Q.answers[0].strip("()")  # 7.88.1-10+deb12u11
WRONG = "7.88.1-10+deb12u18"  # no such version in the changelog


def _learner(core: Core, llm_url: str, *, metamemory: bool = True, session: str = "mm"):
    return build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session=session, max_iterations=100),
            llm=LLMConfig(base_url=llm_url, max_retries=1, backoff_s=0.01, timeout_s=5.0),
            caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
            corpus_dirs=(str(CORPUS),),
            include_python_docs=False,
            metamemory=metamemory,
        ),
        env={},
    )


def _lie():
    # The judge's structured check gets a verdict object (a judge may only lower).
    return OpenAIServer(
        {CVE_Q.q: f"The Debian curl package fixed CVE-2025-0167 in version {WRONG}."},
        structured='{"verdict": "supported"}',
    )


def _cli(data: Path, *args: str) -> dict | list:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--data-dir", str(data), *args, "--json"]) == 0
    return json.loads(out.getvalue())


def test_a_lie_contradicted_by_the_corpus_runs_through_every_stage(tmp_path):
    data = tmp_path / "d"
    with _lie() as llm, Core(data) as core:
        learner = _learner(core, llm.base_url)
        learner.ask(CVE_Q.q)
        for _ in range(6):
            learner.step()
        learner.run(0)
        learner.close()
        events = [e for _, e in read_events(core.store)]
        meta = [e for e in events if isinstance(e, MetaMemoryEvent)]
        mm = MetaMemory(core.memory)
        surprises = mm.surprises.events()
        assert [e.cause for e in surprises] == ["ungrounded_contradicted"]
        ev = surprises[0]
        assert (ev.expected, ev.actual, ev.domain) == (WRONG, RIGHT, "curl")
        assert ev.source.startswith("llm:") and ev.correcting_source.endswith("curl.changelog.txt")
        assert ev.basis.rule.startswith("disagreement") and 0.55 <= ev.magnitude <= 1.0
        wrong, right = core.memory.get(ev.source_memory), core.memory.get(ev.correcting_memory)
        assert WRONG in wrong.text and RIGHT in right.text
        # One signal moves no strength; two judged failures are counted (the judge's, and
        # the resolved debt's verdict against it, below), and the debt supersedes it.
        assert (wrong.failure_count, wrong.strength) == (2, 1.0)
        assert wrong.retired and right.success_count >= 1
        # One wrong passage is the passage's failure, not yet its model's: the model's
        # weight rolls up from a second wrong passage; the correcting file is rewarded.
        assert (
            mm.sources.weight("curl", ev.source)
            == 1.0
            < mm.sources.weight("curl", ev.correcting_source)
        )
        assert mm.sources.weight("git", ev.source) == 1.0
        # The debt was a curiosity gap; the learner ran its test (a read of the file).
        (debt,) = mm.debts.debts()
        assert debt.hypotheses == (WRONG, RIGHT) and debt.test.kind == "read_local"
        assert debt.status == "resolved" and debt.verdict == 1
        assert any(e.attempt for e in debt.evidence)
        queries = [e for e in events if e.kind == "query"]
        assert any(q.type == "read_local" and q.path == debt.test.path for q in queries)
        actions = {(e.component, e.action) for e in meta}
        assert {("surprise", "recorded"), ("sources", "rewarded")} <= actions
        assert ("sources", "punished") not in actions
        assert {("debts", "opened"), ("debts", "resolved")} <= actions
        assert check_integrity(core.store).ok

    status = _cli(data, "status")
    assert status["metamemory"]["surprise"]["by_cause"] == {"ungrounded_contradicted": 1}
    assert status["metamemory"]["debts"]["resolved"] == 1
    assert status["metamemory"]["sources"]["punished"] == 0  # one wrong passage of the model
    rows = _cli(data, "sources", "--domain", "curl")
    assert {r["source"].split(":")[0] for r in rows} == {"llm", "local"}
    assert [d["status"] for d in _cli(data, "debts")] == ["resolved"]
    assert _cli(data, "wisdom")[0]["state"] == "candidate"

    # The resolved debt superseded the lie: it is retired, with the reason, and the user's
    # word on the correction still counts (its second positive signal moves it).
    with Core(data, readonly=True) as core, core.store.read() as txn:
        from sentient_core.metamemory.credit_records import FLOORS

        floor = FLOORS.get(txn, ev.source_memory)
        assert floor.superseded_by == ev.correcting_memory
        assert floor.reason.startswith(f"debt {debt.id} resolved on {RIGHT!r}")
    assert status["metamemory"]["credit"]["superseded"] == 1
    right_fb = _cli(data, "feedback", str(ev.correcting_memory), "--right")
    assert right_fb["strength_after"] > 1.0  # its second positive signal
    with Core(data, readonly=True) as core:
        assert core.memory.get(ev.source_memory).failure_count == 2
        assert check_integrity(core.store).ok


def test_feedback_on_a_fresh_trace_needs_two_signals(tmp_path):
    data = tmp_path / "d"
    with Core(data) as core:
        tid = core.memory.store("The Debian curl package fixed CVE-2025-0167 in 9.9.").id
    one = _cli(data, "feedback", str(tid), "--wrong")
    assert one["strength_after"] == one["strength_before"] == 1.0 and one["credit"] == -1.0
    two = _cli(data, "feedback", str(tid), "--wrong")
    assert two["strength_after"] < 1.0
    status = _cli(data, "status")
    assert status["metamemory"]["surprise"]["by_cause"] == {"user_feedback": 2}


def test_no_metamemory_records_nothing(tmp_path):
    with _lie() as llm, Core(tmp_path / "d") as core:
        learner = _learner(core, llm.base_url, metamemory=False)
        assert learner.meta is None and learner.chaperone.source_weight is None
        learner.ask(CVE_Q.q)
        for _ in range(4):
            learner.step()
        learner.close()
        assert not any(isinstance(e, MetaMemoryEvent) for _, e in read_events(core.store))
        mm = MetaMemory(core.memory)
        assert mm.surprises.events() == [] and mm.debts.debts() == []


def test_closed_loop_lying_source_experiment():
    r = run_lying_source(DEBIAN / "qa.json", CORPUS, iterations=2)
    on, off = r.on, r.off
    assert r.lying_domain == "curl" and on.held_out_lying >= 5
    # Answers: strictly better with meta-memory, on the lying domain and overall.
    assert on.answer_at_1_lying > off.answer_at_1_lying
    assert on.answer_at_1 > off.answer_at_1
    # Sources: the liar falls below 0.5 for curl within 10 events; honest ones hold.
    assert on.llm_weight_lying < 0.5 and 1 <= on.events_to_below_half <= 10
    assert on.corpus_weight_lying >= 1.0 and on.llm_weight_other_min >= 0.9
    assert on.llm_distrusted >= 1  # the chaperone stopped asking it about curl
    # Credit: no trace moved on a single signal; after the user's review of the training
    # answers (a second, consistent signal) the lies lose strength, the corrections gain.
    assert on.moved_by_one_signal == 0 and on.credited_traces >= 2
    assert on.review_wrong >= 1 and on.strength_down >= 1 and on.strength_up >= 1
    assert off.review_right == off.review_wrong == 0 and off.strength_down == 0
    # Debts: every one resolved with provenance, or still open with a test.
    assert on.debts_opened >= 1
    assert on.debts_resolved + on.debts_open_with_test + on.debts_deferred == on.debts_opened
    assert on.debts_open_without_test == 0
    assert on.promotions_citing_unresolved == 0
    # The ablation learns nothing from error.
    assert off.surprise_by_cause == {} and off.llm_weight_lying == 1.0
    assert off.debts_opened == 0 and off.credited_traces == 0


def test_lying_about_openssl_answers_at_k_1_as_at_k_5():
    # Issue 22's regression: with the model lying about openssl, answer@1 on the lies was
    # 0.400 asked with k = 1 while k = 5 put 4 of 5 right first on the same store (the
    # re-rank pool depended on k). Measured 2026-12-02: 0.800 with meta-memory, 0.000 off.
    r = run_lying_source(DEBIAN / "qa.json", CORPUS, lying_file="openssl.changelog.txt")
    assert r.lying_domain == "openssl" and r.on.held_out_lying >= 5
    assert r.on.answer_at_1_lying >= 0.8 > r.off.answer_at_1_lying
    assert r.on.answer_at_1_other == 1.0


@pytest.mark.parametrize("bad", [["--scenario", "nope"]])
def test_evaluate_rejects_an_unknown_scenario(bad, capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", *bad])


def _offline(core: Core):
    return build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session="off", max_iterations=100),
            caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
            corpus_dirs=(str(CORPUS),),
            include_python_docs=False,
        ),
        env={},
    )


def _wrong_in_memory(core: Core) -> int:
    return core.memory.store(
        f"The Debian curl package fixed CVE-2025-0167 in version {WRONG}.",
        source="llm:127.0.0.1:9/m",
    ).id


def test_a_follow_up_memory_would_answer_wrongly_is_asked_and_memory_corrected(tmp_path):
    # The learner lets no recalled trace settle a question: the follow-up is asked,
    # memory's (wrong) answer is the prediction the corpus's answer contradicts.
    with Core(tmp_path / "d") as core:
        wrong = _wrong_in_memory(core)
        learner = _offline(core)
        assert learner.curiosity.config.memory_settles == "none"
        learner.curiosity.ask(CVE_Q.q, origin="followup")
        for _ in range(8):  # a follow-up waits behind the SMF gaps
            learner.step()
        learner.run(0)
        learner.close()
        events = [e for _, e in read_events(core.store)]
        said = [e.status for e in events if e.kind == "question" and e.question == CVE_Q.q]
        assert "answered" not in said
        assert [e for e in events if e.kind == "query" and e.question == CVE_Q.q]
        (ev,) = [e for e in MetaMemory(core.memory).surprises.events() if e.cause == "disagreement"]
        assert (ev.source_memory, ev.expected, ev.actual) == (wrong, WRONG, RIGHT)
        # Judged wrong by the prediction check and by the resolved debt: superseded.
        assert core.memory.get(wrong).failure_count == 2 and core.memory.get(wrong).retired


def test_memorys_wrong_answer_is_contradicted_and_the_question_reopened(tmp_path):
    import msgspec

    with Core(tmp_path / "d") as core:
        wrong = _wrong_in_memory(core)
        learner = _offline(core)
        # Opted in: the core's own follow-ups may be settled by memory (never the
        # user's questions); meta-memory checks memory's answer against the corpus.
        learner.curiosity.config = msgspec.structs.replace(
            learner.curiosity.config, memory_settles="own"
        )
        learner.curiosity.ask(CVE_Q.q, origin="followup")
        for _ in range(8):  # a follow-up waits behind the SMF gaps
            learner.step()
        learner.run(0)  # the session's end trains the scorer on its judged outcomes
        learner.close()
        events = [e for _, e in read_events(core.store)]
        said = [
            (e.status, e.trace_id) for e in events if e.kind == "question" and e.question == CVE_Q.q
        ]
        assert ("answered", wrong) in said  # curiosity: memory answers it ...
        assert any(s == "queued" for s, _ in said[said.index(("answered", wrong)) :])  # ... not
        mm = MetaMemory(core.memory)
        (ev,) = [e for e in mm.surprises.events() if e.cause == "disagreement"]
        assert (ev.source_memory, ev.source, ev.expected, ev.actual) == (
            wrong,
            "llm:127.0.0.1:9/m",
            WRONG,
            RIGHT,
        )
        rec = core.memory.get(wrong)
        assert rec.failure_count == 2 and rec.strength == 1.0 and rec.retired
        # The reopened question is settled by the corpus's correction this time:
        # asked again, or answered by the correcting trace meta-memory stored.
        asked = [e for e in events if e.kind == "query" and e.question == CVE_Q.q]
        reopened = said[said.index(("answered", wrong)) + 1 :]
        assert asked or ("answered", ev.correcting_memory) in reopened
        assert mm.sources.weight("curl", "llm:127.0.0.1:9/m") == 1.0  # one wrong passage
        assert RIGHT in core.memory.get(ev.correcting_memory).text
    scorer = _cli(tmp_path / "d", "scorer")
    # The session's judged predictions (memory's contradicted answer among them, label 0)
    # are one batch at the session's end, and the snapshots replay to identical weights.
    assert (scorer["snapshots"], scorer["replay_identical"]) == (1, True)
    with Core(tmp_path / "d", readonly=True) as core, core.store.read() as txn:
        from sentient_core.metamemory.scorer import SNAPSHOTS

        (snap,) = SNAPSHOTS.iter(txn)
        assert False in snap.batch_labels and snap.outcome_count == scorer["outcomes"]


def test_an_irrelevant_grounded_answer_is_a_weak_surprise(tmp_path):
    qs = [
        "Which version of the Debian curl package fixed CVE-1999-0001?",
        "Which version of the Debian curl package fixed CVE-1999-0002?",
    ]
    with Core(tmp_path / "d") as core:
        learner = _offline(core)
        for q in qs:
            learner.ask(q)
            learner.step()
        learner.close()
        mm = MetaMemory(core.memory)
        events = [e for e in mm.surprises.events() if e.cause == "irrelevant"]
        assert [e.context for e in events] == qs
        for e in events:
            r, thr = float(e.basis.inputs["relevance"]), float(e.basis.inputs["threshold"])
            assert e.magnitude == pytest.approx(0.5 * (thr - r) / thr) and e.magnitude < 0.55
        src = events[0].source
        rec = mm.sources.record("curl", src)
        # 0.25 <= s < 0.55: noted on the first failure, punished on the second.
        assert rec is not None and rec.failures == 2 and rec.punished == 1


def test_a_repeatedly_failing_question_is_a_debt_its_test_settles(tmp_path):
    hopeless = "Which version of the Debian curl package fixed CVE-1999-0001?"
    with Core(tmp_path / "d") as core:
        learner = _offline(core)
        meta = learner.meta
        assert meta.question_failing(hopeless, 1) is None  # one failure is not a pattern
        hard = meta.question_failing(hopeless, 2)
        easy = meta.question_failing(CVE_Q.q, 3)
        assert meta.question_failing(hopeless, 3) is None  # once per question
        assert hard.test.kind == "question" and hard.domain == "curl"
        for _ in range(8):
            learner.step()
        learner.close()
        queries = [e for _, e in read_events(core.store) if e.kind == "query"]
        asked = [q.question for q in queries if q.question in (hopeless, CVE_Q.q)]
        assert hopeless in asked and CVE_Q.q in asked  # curiosity ran both tests
        mm = MetaMemory(core.memory)
        easy, hard = mm.debts.get(easy.id), mm.debts.get(hard.id)
        # The corpus answers the CVE question: a success verdict resolves its debt.
        assert easy.status == "resolved" and easy.verdict == 1 and easy.evidence[-1].attempt
        # The hopeless one keeps failing: failed attempts, then deferred (it stops asking).
        assert hard.status in ("open", "deferred") and hard.failed_attempts >= 1
        assert hard.status == "deferred" or hard.failed_attempts < 3


def test_the_live_view_shows_metamemory_events():
    from sentient_core.liveview import render

    line = render(
        MetaMemoryEvent(
            t=0.0,
            session="s",
            iteration=3,
            component="sources",
            action="punished",
            subject="llm:127.0.0.1/m",
            domain="curl",
            before=1.0,
            after=0.8,
        )
    )
    assert line == "[iter 3] meta-memory sources punished: llm:127.0.0.1/m [curl] 1.000 → 0.800"


@given(st.text(min_size=1, max_size=30).filter(str.strip))
def test_a_lie_never_contains_the_answer(answer):
    # A lie holding the right string would be scored right (it was "<answer>-wrong").
    try:
        lie = lie_about(answer)
    except ArgumentError:
        # Only an answer no shape-keeping change can leave out (no digit, no ASCII
        # letter: "ü", "-") is refused, never lied about with the truth inside.
        assert not any(c.isdecimal() or (c.isascii() and c.isalpha()) for c in answer)
        return
    assert answer.casefold() not in lie.casefold() and len(lie) >= len(answer) - 1


def test_the_lies_keep_their_shape():
    assert lie_about("7.88.1-10+deb12u5") == "7.88.1-10+deb12u12"
    assert lie_about("05 Mar 2024") == "08 Mar 2024"
    assert lie_about("gzip") == "ngpw"


def test_an_empty_set_prints_a_dash_not_a_zero():
    # A run whose held-out questions all come from the lying file: no "other" set.
    numbers = {f: 0 for f in RunReport.__struct_fields__}
    one = RunReport(
        **{
            **numbers,
            "metamemory": True,
            "answer_at_1": 1.0,
            "answer_at_1_lying": 1.0,
            "answer_at_1_other": None,
            "surprise_by_cause": {},
            "scorer_replay_identical": None,
        }
    )
    report = ScenarioReport(
        lying_file="curl.changelog.txt", lying_domain="curl", train=3, held_out=3, on=one, off=one
    )
    lines = {x.split()[0]: x for x in format_scenario(report).splitlines()[2:]}
    assert lines["answer_at_1_other"].split()[1:] == ["—", "—"]
    assert lines["surprise_by_cause"].split()[1:] == ["—", "—"]
    assert lines["answer_at_1"].split()[1:] == ["1.000", "1.000"]
