"""The learning loop through real parts: LMDB store, offline chaperone over real files, events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import numpy as np
import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.events import read_events
from sentient_core.learning.curiosity import Curiosity
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.query import QueryFormulator
from sentient_core.learning.reflect import reflect
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.memory import NewTrace
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Gap, Source
from tests.servers.openai import OpenAIServer

ROOT = Path(__file__).resolve().parent.parent

CORPUS = {
    "tides.md": "# Tides\n\nOcean tides are caused by the gravitational pull of the moon and the sun. "
    "Spring tides happen when the sun and moon align. Neap tides happen at quarter moons.",
    "bees.txt": "Honey bees communicate the direction of flowers with a waggle dance. "
    "The angle of the dance encodes the direction relative to the sun.",
    "volcano.txt": "Volcanoes erupt when magma rises through the crust. Basaltic magma is "
    "runny, while rhyolitic magma is viscous and explosive.",
}


class FixedClock:
    def __init__(self, t: float = 1_800_000_000.0, step: float = 1.0) -> None:
        self.t, self.step = t, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


@pytest.fixture
def corpus_dir(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    for name, text in CORPUS.items():
        (d / name).write_text(text)
    return d


_OPEN: list = []


@pytest.fixture(autouse=True)
def _close_learners():
    yield
    while _OPEN:
        _OPEN.pop().close()


def _learner(core, corpus_dir, **kw):
    config = kw.pop("config", LearnerConfig(interval_s=0, session="t", reflect_every=2))
    learner = build_learner(
        core,
        LearnerSettings(
            learner=config,
            corpus_dirs=(str(corpus_dir),),
            include_python_docs=False,
            caps=kw.pop("caps", None),
            llm=kw.pop("llm", None),
        ),
        clock=kw.pop("clock", FixedClock()),
        env=kw.pop("env", {}),
        **kw,
    )
    _OPEN.append(learner)
    return learner


def test_learner_is_built_from_typed_parts_and_hands_meta_memory_its_passage_store(
    tmp_path, corpus_dir
):
    import inspect

    from sentient_core.learning.learner import Learner

    params = list(inspect.signature(Learner.__init__).parameters)[1:]
    assert params == ["knowledge", "gate", "drives", "runtime", "config", "metamemory"]
    with Core(tmp_path / "data") as core:
        learner = _learner(core, corpus_dir)
        assert (learner.memory, learner.observer) == (core.memory, core.observer)
        assert learner.pursuit is not None and learner.curiosity is not None
        # Nothing is set on meta-memory from outside: the learner passes its store
        # to the calls that integrate a correction.
        assert learner.meta is not None and not hasattr(learner.meta, "store_passage")
        assert "store" in inspect.signature(learner.meta.observe).parameters
        assert "store" in inspect.signature(learner.meta.check_answer).parameters


def test_offline_session_learns_grounded_content_and_logs_every_step(tmp_path, corpus_dir):
    with Core(tmp_path / "data") as core:
        learner = _learner(core, corpus_dir)
        learner.ask("Why do ocean tides happen with the moon?")
        stats = learner.run(4)
        assert stats.iterations == 4 and stats.queries >= 4
        assert stats.outcomes.get("success", 0) >= 1
        assert stats.ingested == core.memory.count > 0
        learned = core.memory.recent(100)
        assert all(r.kind == "learned" and r.importance == pytest.approx(0.6) for r in learned)
        assert any("tides" in r.source for r in learned)
        kinds = {e.kind for _, e in read_events(core.store)}
    for kind in (
        "session",
        "curiosity",
        "query",
        "chaperone.request",
        "chaperone.response",
        "integrate",
        "judge",
        "learn",
        "iteration",
        "reflect",
    ):
        assert kind in kinds, kind


def test_sessions_are_deterministic_under_seed_and_clock(tmp_path, corpus_dir):
    runs = []
    for name in ("a", "b"):
        with Core(tmp_path / name) as core:
            learner = _learner(core, corpus_dir)
            learner.ask("How do honey bees tell direction?")
            learner.run(4)
            runs.append(
                [
                    (
                        e.t,
                        e.kind,
                        e.iteration,
                        json.dumps(
                            {
                                k: v
                                for k, v in msgspec.to_builtins(e).items()
                                if k not in ("elapsed_s", "stats")
                            },
                            sort_keys=True,
                            default=str,
                        ),
                    )
                    for _, e in read_events(core.store)
                ]
            )
    assert runs[0] == runs[1]


def test_every_gap_type_fires(tmp_path, corpus_dir):
    from sentient_core.learning.chaperone import CorpusTopic

    # What the sources can answer: a coherence drop (and a low axis) maps onto one.
    topics = [CorpusTopic(f"topic {i}", f"local:/c/{i}.txt", f"volcano {i}") for i in range(400)]
    with Core(tmp_path / "data") as core:
        cur = Curiosity(core.observer, core.memory, topics=lambda: topics)
        # smf_imbalance: a fresh field is e0, every other axis is below 0.15|s|
        first = cur.detect()
        assert "smf_imbalance" in {g.type for g in first.gaps}
        # question: a user question memory cannot answer
        cur.ask("How do volcanoes erupt?")
        assert "question" in {g.type for g in cur.detect().gaps}
        # memory_miss: a follow-up the core raised that memory cannot answer …
        core.memory.store_batch([NewTrace(text=CORPUS["bees.txt"], kind="learned")])
        cur.ask("What causes volcanic magma to explode?", origin="followup")
        assert "memory_miss" in {g.type for g in cur.detect().gaps}
        # … and one it can answer is not a gap at all, but answered from memory
        known = "honey bees waggle dance direction flowers sun"
        cur.ask(known, origin="followup")
        signal = cur.detect()
        assert known not in {g.question for g in signal.gaps}
        assert [a.question for a in signal.answered] == [known]
        assert cur.book.get(known).status == "answered"
        # coherence_drop: excite the bank hard, then let coherence fall below its mean
        core.observer.tick(300)
        for _ in range(20):
            core.observer.process_text("volcano magma tides bees dance moon sun crust")
            core.observer.tick(1)
        drops = 0
        for _ in range(200):
            core.observer.tick(5)
            drops += any(g.type == "coherence_drop" for g in cur.detect().gaps)
        assert drops > 0
        assert all(
            cur.fired[t] > 0 for t in ("smf_imbalance", "question", "memory_miss", "coherence_drop")
        )


def test_a_request_for_a_named_source_is_never_answered_from_other_memory(tmp_path):
    # CI once saw "Please learn https://…/notes.md" answered by a trace from
    # another page that shared its words, so notes.md was never fetched.
    with Core(tmp_path / "data") as core:
        cur = Curiosity(core.observer, core.memory)
        core.memory.store_batch(
            [
                NewTrace(
                    text="Please learn the notes: localhost notes md learn please", kind="learned"
                )
            ]
        )
        named = ("Please learn https://localhost:8443/notes.md", "Please read notes.md")
        control = "please learn localhost notes md"
        for q in (*named, control):
            cur.ask(q)
        signal = cur.detect()
        assert {a.question for a in signal.answered} == {control}
        assert set(named) <= {g.question for g in signal.gaps}


def test_memory_settles_only_the_questions_configured(tmp_path):
    from sentient_core.learning.curiosity import CuriosityConfig

    text = CORPUS["bees.txt"]
    user_q = "honey bees waggle dance direction flowers sun"
    own_q = "bees waggle dance flowers direction sun honey"
    expected = {"all": {user_q, own_q}, "own": {own_q}, "none": set()}
    for mode, settled in expected.items():
        with Core(tmp_path / mode) as core:
            core.memory.store_batch([NewTrace(text=text, kind="learned")])
            cur = Curiosity(core.observer, core.memory, CuriosityConfig(memory_settles=mode))
            cur.ask(user_q)
            cur.ask(own_q, origin="followup")
            signal = cur.detect()
            assert {a.question for a in signal.answered} == settled, mode
            assert {user_q, own_q} - settled <= {g.question for g in signal.gaps}, mode


def test_a_backlog_of_own_questions_never_keeps_a_users_question_out(tmp_path):
    from sentient_core.learning.curiosity import CuriosityConfig

    with Core(tmp_path / "data") as core:
        cur = Curiosity(core.observer, core.memory, CuriosityConfig(max_questions=4))
        for i in range(6):
            cur.ask(f"What is known about topic number {i}?", origin="followup")
        cur.ask("Which bees dance?")
        questions = {g.question for g in cur.detect().gaps}
        assert "Which bees dance?" in questions
        assert len([q for q in questions if q.startswith("What is known")]) == 3
    # build_learner: no question is settled from memory, with or without a model.
    for llm in (None, LLMConfig(base_url="http://127.0.0.1:9/v1")):
        with Core(tmp_path / f"d{llm is None}") as core:
            learner = build_learner(core, LearnerSettings(llm=llm, include_python_docs=False))
            try:
                assert learner.curiosity.config.memory_settles == "none"
                assert learner.curiosity.config.answer_threshold == learner.judge.relevant
            finally:
                learner.close()


def test_memory_answers_with_the_best_of_its_top_hits(tmp_path):
    from sentient_core.learning.curiosity import CuriosityConfig

    def answers(question, hit):
        return 1.0 if question == q and "resonator" in hit.record.text else 0.0

    q = "quokka island"
    got = {}
    for k in (1, 3):
        with Core(tmp_path / f"k{k}") as core:
            filler, answer = core.memory.store_batch(
                [
                    NewTrace(text="quokka quokka quokka island island", kind="learned"),
                    NewTrace(text="The resonator of a quokka on the island hums.", kind="learned"),
                ]
            )
            # The filler ranks first; only a look past it finds the answer.
            assert core.memory.recall(q, k=1, touch=False)[0].record.id == filler.id
            cur = Curiosity(
                core.observer,
                core.memory,
                CuriosityConfig(probe_k=k, answer_threshold=0.5),
                answers=answers,
            )
            cur.ask(q, origin="followup")
            got[k] = [a.trace_id for a in cur.detect().answered if a.question == q]
            expected_answer = answer.id
    assert got == {1: [], 3: [expected_answer]}


def test_all_four_request_types_are_produced():
    q = QueryFormulator(session="s")
    assert (
        q.from_gap(Gap(type="question", topic="t", question="What is a tide?")).type == "question"
    )
    assert (
        q.from_gap(
            Gap(type="focus", topic="t", question="q", url="https://docs.python.org/3/")
        ).type
        == "fetch_content"
    )
    assert (
        q.from_gap(Gap(type="focus", topic="t", question="q", path="notes.md")).type == "read_local"
    )
    assert (
        q.from_gap(Gap(type="question", topic="t", question="learn https://arxiv.org/abs/1")).type
        == "fetch_content"
    )
    # A user naming a file gets it read; the chaperone's safety filter decides.
    named = q.from_gap(Gap(type="question", topic="t", question="Please read notes/tides.md"))
    assert (named.type, named.path) == ("read_local", "notes/tides.md")
    req = ChaperoneRequest(id="x", type="question", question="q")
    answer = ChaperoneResponse(
        request_id="x",
        type="question",
        ok=True,
        grounded=True,
        content="see https://en.wikipedia.org/wiki/Tide for more",
        sources=(Source("local", "/data/incoming/tides.md"),),
    )
    q.observe(req, answer)
    fetched = ChaperoneRequest(
        id="y", type="fetch_content", url="https://en.wikipedia.org/wiki/Tide"
    )
    q.observe(
        fetched,
        ChaperoneResponse(
            request_id="y", type="fetch_content", ok=True, grounded=True, content="x" * 5000
        ),
    )
    followups = []
    while q.pending:
        followups.extend(q.followups())
    # The corpus file an answer came from is not read whole afterwards (that is ingesting).
    assert [r.type for r in followups] == ["fetch_content", "summarize"]
    assert all(q.produced[t] > 0 for t in ("question", "fetch_content", "read_local", "summarize"))


def test_reflection_links_connected_traces_and_feeds_followups(tmp_path):
    with Core(tmp_path / "data") as core:
        rng = np.random.default_rng(0)
        base = rng.standard_normal(16)
        items = []
        for i, word in enumerate(("magma", "crust", "basalt", "eruption")):
            v = base + 0.05 * rng.standard_normal(16)
            v /= np.linalg.norm(v)
            items.append(
                NewTrace(text=f"{word} notes {i}", smf=tuple(v), kind="learned", keywords=(word,))
            )
        core.memory.store_batch(items)
        wisdom_before = core.observer.smf[7]
        asked: set[str] = set()
        r = reflect(core.memory, core.observer, asked=asked)
        assert r.links == 6 and r.traces == 4  # every pair of the 4 aligned traces
        assert 1 <= len(r.followups) <= 3
        assert core.observer.smf[7] > wisdom_before
        assert np.linalg.norm(core.observer.smf) == pytest.approx(1.0)
        cur = Curiosity(core.observer, core.memory)
        for f in r.followups:
            cur.ask(f, origin="followup")
        assert set(cur.pending_questions) == set(r.followups)
        # a second reflection does not link the same pairs again
        assert reflect(core.memory, core.observer, asked=asked).links == 0


def test_start_stop_pause_resume_never_runs_two_loops(tmp_path, corpus_dir):
    with Core(tmp_path / "data") as core:
        learner = _learner(
            core,
            corpus_dir,
            config=LearnerConfig(interval_s=0.05, session="bg", max_iterations=100),
        )
        assert learner.start() is True
        assert learner.start() is False
        learner.pause()
        learner.resume()
        learner.resume()
        threads = [t for t in threading.enumerate() if t.name == "sentient-learner"]
        assert len(threads) == 1
        learner.stop()
        assert not learner.running
        assert learner.stats.iterations >= 1


def test_budget_caps_stop_work_exactly_and_kill_switch(tmp_path, corpus_dir):
    # Calls that leave the process (here: to a loopback LLM) count as tool calls.
    with OpenAIServer() as llm, Core(tmp_path / "data") as core:
        caps = BudgetCaps(daily_tool_calls=3)
        learner = _learner(core, corpus_dir, caps=caps, llm=LLMConfig(base_url=llm.base_url))
        for i in range(12):
            learner.ask(f"What is known about topic {i}?")
        stats = learner.run(10)
        assert stats.stopped_by == "budget:daily_tool_calls"
        assert learner.budget.today().tool_calls == 3 == learner.chaperone.counters["llm_calls"]
        assert stats.queries == 3
    with Core(tmp_path / "killed") as core:
        learner = _learner(core, corpus_dir, env={"SENTIENT_AUTONOMOUS": "0"})
        stats = learner.run(5)
        assert stats.stopped_by == "budget:kill_switch"
        assert stats.queries == 0 and core.memory.count == 0


@pytest.mark.slow
def test_cli_learn_and_eavesdrop_from_another_process(tmp_path, corpus_dir):
    data = tmp_path / "data"
    Core(data).close()  # create the store so the eavesdropper can open it first
    env_py = [sys.executable, "cli.py", "--data-dir", str(data)]
    eaves = subprocess.Popen(
        [*env_py, "eavesdrop", "--json", "--until-end", "--seconds", "120", "--poll", "0.05"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        learn = subprocess.run(
            [
                *env_py,
                "learn",
                "--iterations",
                "3",
                "--interval",
                "0.2",
                "--corpus",
                str(corpus_dir),
                "--ask",
                "Why do tides happen?",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert learn.returncode == 0, learn.stderr
        out, _err = eaves.communicate(timeout=120)
    finally:
        eaves.kill()
    assert "summary: 3 iteration(s)" in learn.stdout
    assert "[iter 1] curiosity" in learn.stdout and "judge:" in learn.stdout
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds.count("iteration") == 3
    assert kinds[-1] == "session" and events[-1]["state"] == "ended"


def test_cli_budget_and_focus(tmp_path, capsys):
    from sentient_core.cli import main

    data = str(tmp_path / "data")
    Core(data).close()
    assert main(["focus", "coupled oscillators", "--data-dir", data]) == 0
    assert "focus goal g1: coupled oscillators" in capsys.readouterr().out
    assert main(["focus", "--json", "--data-dir", data]) == 0
    goals = json.loads(capsys.readouterr().out)
    assert [g["topic"] for g in goals] == ["coupled oscillators"]
    assert main(["budget", "--json", "--data-dir", data]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["caps"]["daily_tokens"] == 20000 and report["today"]["tokens"] == 0
    assert main(["budget", "--data-dir", data]) == 0
    out = capsys.readouterr().out
    assert "daily_tokens" in out and "autonomy ON" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "/no/such/dir"], "not a directory"),
        (["--llm", "localhost:1234"], "expected an http(s) base URL"),
    ],
)
def test_cli_learn_rejects_bad_arguments(tmp_path, capsys, args, message):
    from sentient_core.cli import main

    assert main(["learn", "--iterations", "1", "--data-dir", str(tmp_path / "d"), *args]) == 2
    assert message in capsys.readouterr().err


def test_live_view_names_llm_failures_and_fallbacks():
    from sentient_core.events import ChaperoneResponseEvent, ErrorEvent, LearnEvent
    from sentient_core.liveview import render
    from sentient_core.vocab import Source

    err = ErrorEvent(t=0.0, iteration=2, where="llm", error="LLMUnavailable: refused")
    assert render(err) == "[iter 2] ERROR in llm: LLMUnavailable: refused"
    resp = ChaperoneResponseEvent(
        t=0.0,
        iteration=2,
        id="q-1",
        type="question",
        ok=True,
        grounded=True,
        content_chars=10,
        fallback="offline",
        sources=(Source("corpus", "pydoc:topic:types"),),
    )
    assert "offline fallback" in render(resp)
    assert render(LearnEvent(t=0.0, id="q-1", outcome="success")) is None


def test_offline_answers_spend_no_tool_calls(tmp_path, corpus_dir):
    # The default budget must fit several `make run`s a day: the local corpus is free.
    with Core(tmp_path / "data") as core:
        learner = _learner(core, corpus_dir, caps=BudgetCaps(daily_tool_calls=1))
        stats = learner.run(6)
        assert stats.queries >= 3 and stats.stopped_by != "budget:daily_tool_calls"
        assert learner.budget.today().tool_calls == 0


def test_cli_learn_explains_a_spent_cap_and_the_kill_switch(
    tmp_path, capsys, monkeypatch, corpus_dir
):
    from sentient_core.cli import main

    data = str(tmp_path / "d")
    monkeypatch.setenv("SENTIENT_AUTONOMOUS_DAILY_TOOL_CALLS", "2")
    llm = OpenAIServer().start()
    args = [
        "learn",
        "--iterations",
        "3",
        "--interval",
        "0",
        "--corpus",
        str(corpus_dir),
        "--llm",
        llm.base_url,
        "--ask",
        "What is known about tides?",
        "--ask",
        "What is known about bees?",
        "--ask",
        "What is known about magma?",
        "--data-dir",
        data,
    ]
    try:
        assert main(args) == 0
    finally:
        llm.stop()
    out = capsys.readouterr().out
    assert "stopped by: budget:daily_tool_calls" in out
    assert "raise SENTIENT_AUTONOMOUS_DAILY_TOOL_CALLS" in out
    monkeypatch.setenv("SENTIENT_AUTONOMOUS", "0")
    assert main(args) == 0
    assert "kill switch is on" in capsys.readouterr().out


def test_audit_log_keeps_the_newest_events_and_sequence_numbers_grow(tmp_path):
    from sentient_core.events import EventBus, QuestionEvent

    with Core(tmp_path / "d") as core:
        bus = EventBus(core.store, clock=FixedClock(), max_events=50)
        emit = bus.emitter(session="s")
        for i in range(200):
            emit.emit(QuestionEvent, question=str(i))
            if i % 7 == 0:
                bus.flush()
        bus.flush()
        events = read_events(core.store)
        seqs = [s for s, _ in events]
        assert 50 <= len(events) <= 55 and bus.pruned == 200 - len(events)
        assert seqs == sorted(seqs) and seqs[-1] == 199
        assert [int(e.question) for _, e in events] == list(range(200 - len(events), 200))


def test_an_answer_from_a_file_whose_name_is_not_utf8_is_stored_safely(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    name = os.fsdecode(b"quokka\xff.txt")
    (corpus / name).write_text(
        "The quokkaflux resonator calibrates the brindlewave sensor array every morning. "
        "Calibrating the quokkaflux resonator takes twelve minutes."
    )
    with Core(tmp_path / "data") as core:
        learner = _learner(core, corpus)
        learner.ask("How long does calibrating the quokkaflux resonator take?")
        stats = learner.run(1)
        assert stats.outcomes.get("success", 0) >= 1
        sources = {r.source for r in core.memory.recent(20)}
        assert any(s.endswith("quokka\\xff.txt") and s.startswith("local:") for s in sources)
        kinds = [e.kind for _, e in read_events(core.store)]
        assert "integrate" in kinds  # the audit log took the name too


def test_an_iteration_with_a_user_question_spends_its_requests_on_it(tmp_path, corpus_dir):
    from sentient_core.events import QueryEvent

    def queries(core, iteration):
        return [
            e
            for _, e in read_events(core.store)
            if isinstance(e, QueryEvent) and e.iteration == iteration
        ]

    with Core(tmp_path / "data") as core:
        learner = _learner(core, corpus_dir)
        first = learner.step()  # no user question: the loop's own gaps
        assert queries(core, first.iteration)
        pending = learner.query.pending
        user_q = "Why do volcanoes erupt?"
        learner.ask(user_q)
        asked = learner.step()
        # Only the user's question is asked; own gaps and follow-ups wait.
        assert [(q.type, q.question) for q in queries(core, asked.iteration)] == [
            ("question", user_q)
        ]
        assert learner.query.pending == pending
        after = learner.step()  # the question is settled: the loop's own work resumes
        assert any(q.question != user_q for q in queries(core, after.iteration))


def _ask_one(learner, core, question):
    """Ask ``question``, run one iteration; its (judge event, integrate events)."""
    from sentient_core.events import IntegrateEvent, JudgeEvent, QueryEvent

    learner.ask(question)
    learner.step()
    events = [e for _, e in read_events(core.store)]
    ids = {e.id for e in events if isinstance(e, QueryEvent) and e.question == question}
    (verdict,) = [e for e in events if isinstance(e, JudgeEvent) and e.id in ids]
    return verdict, [e for e in events if isinstance(e, IntegrateEvent) and e.id in ids]


def _wombat_corpus(tmp_path):
    """Five files answer the wombat question equally well (the answerer gives three):
    which one holds "the" answer, the corpus cannot say. One file on quokkas."""
    d = tmp_path / "corpus"
    d.mkdir()
    for n, who in enumerate(("rangers", "surveyors", "farmers", "keepers", "hikers")):
        (d / f"wombat{n}.txt").write_text(
            f"Wombat burrows: {who} report that wombat burrows reach a depth of two metres."
        )
    (d / "quokka.txt").write_text(
        "Quokka diet. The quokka eats grasses, sedges and leaves of shrubs on Rottnest Island."
    )
    return d


def test_an_answer_the_corpus_ranks_no_clearer_than_its_alternatives_is_not_success(tmp_path):
    d = _wombat_corpus(tmp_path)
    with Core(tmp_path / "data") as core:
        learner = _learner(core, d)
        wombat, stored = _ask_one(learner, core, "What depth do wombat burrows reach?")
        assert sum(e.chunks for e in stored) == 3  # stored all the same
        assert (wombat.outcome, wombat.basis) == ("could_not_verify", "deterministic")
        assert wombat.reason.startswith("ambiguous")
        rec = learner.curiosity.book.get("What depth do wombat burrows reach?")
        assert rec is not None and rec.status != "answered"
        quokka, stored = _ask_one(learner, core, "What does the quokka eat on Rottnest Island?")
        assert quokka.outcome == "success" and sum(e.chunks for e in stored) == 1


def test_an_ambiguous_answer_memory_already_holds_does_not_settle_the_question(tmp_path):
    d = _wombat_corpus(tmp_path)
    with Core(tmp_path / "data") as core:
        learner = _learner(core, d)
        first, _ = _ask_one(learner, core, "What depth do wombat burrows reach?")
        assert first.outcome == "could_not_verify"
        # The same tie again: its best passage is in memory now, but which of the five
        # holds "the" answer the corpus still cannot say.
        question = "Which depth do the wombat burrows reach?"
        again, _ = _ask_one(learner, core, question)
        assert again.outcome == "not_applicable"
        assert again.reason.startswith("already known: memory holds")
        assert "not an answer to the question" in again.reason
        rec = learner.curiosity.book.get(question)
        assert rec is not None and rec.status == "waiting" and rec.answered_by == -1


def test_new_passages_ranked_below_one_memory_holds_are_not_a_success(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "diet.txt").write_text("Quokka diet: the quokka eats grasses, sedges and leaves.")
    (d / "grasses.txt").write_text(
        "Rottnest grasses: many animals eat the grasses of Rottnest, the quokka among them,"
        " and the grasses dry out in summer."
    )
    with Core(tmp_path / "data") as core:
        learner = _learner(core, d)
        first, first_int = _ask_one(learner, core, "What does the quokka diet hold?")
        assert first.outcome == "success"
        assert [e.source.rsplit("/", 1)[-1] for e in first_int] == ["diet.txt"]
        question = "Which grasses and leaves does the quokka eat?"
        second, second_int = _ask_one(learner, core, question)
        # The second question's best passage is the one already learned; the lesser
        # passage is stored, but the answer was memory's already.
        assert [(e.source.rsplit("/", 1)[-1], e.chunks, e.known) for e in second_int] == [
            ("diet.txt", 0, 1),
            ("grasses.txt", 1, 0),
        ]
        assert second.outcome == "not_applicable"
        assert second.reason.startswith("already known: memory holds the best passage")
        assert "not an answer" not in second.reason  # the corpus ranks it clearly first
        rec = learner.curiosity.book.get(question)
        assert rec is not None and rec.status == "answered"
        assert rec.reason.startswith("already known: memory held the answer (trace")


def test_a_lesser_passage_of_a_relevant_answer_is_stored_beside_the_best(tmp_path):
    from sentient_core.learning.passages import LESSER_SHARE
    from sentient_core.relevance import RELEVANT, relevance

    d = tmp_path / "corpus"
    d.mkdir()
    diet = "Quokka diet: the quokka eats grasses, sedges and leaves."
    grasses = (
        "Rottnest grasses: many animals eat the grasses of Rottnest, the quokka among them,"
        " and the grasses dry out in summer."
    )
    (d / "diet.txt").write_text(diet)
    (d / "grasses.txt").write_text(grasses)
    question = "What does the quokka diet of grasses hold?"
    with Core(tmp_path / "data") as core:
        learner = _learner(core, d)
        stats = learner.chaperone.term_stats()
        assert relevance(question, diet, stats) >= RELEVANT
        assert LESSER_SHARE * RELEVANT <= relevance(question, grasses, stats) < RELEVANT
        verdict, stored = _ask_one(learner, core, question)
        assert verdict.outcome == "success"
        assert [(e.source.rsplit("/", 1)[-1], e.chunks) for e in stored] == [
            ("diet.txt", 1),
            ("grasses.txt", 1),
        ]
        assert sorted(r.text for r in core.memory.recent(10)) == sorted([diet, grasses])


def test_an_own_question_is_never_answered_by_what_its_unclaimed_answer_stored(tmp_path):
    from sentient_core.events import IntegrateEvent, QueryEvent

    d = _wombat_corpus(tmp_path)
    question = "What depth do wombat burrows reach?"
    with Core(tmp_path / "data") as core:
        learner = _learner(core, d)
        # The learner's own question (curiosity's, not a user's: those memory may answer).
        learner.curiosity.ask(question, origin="curiosity")
        learner.step()
        events = [e for _, e in read_events(core.store)]
        ids = {e.id for e in events if isinstance(e, QueryEvent) and e.question == question}
        own = {
            t for e in events if isinstance(e, IntegrateEvent) and e.id in ids for t in e.trace_ids
        }
        rec = learner.curiosity.book.get(question)
        assert (rec.status, rec.last_outcome) == ("waiting", "could_not_verify")
        assert len(own) == 3 and set(rec.unverified) == own  # ambiguous: stored, not claimed
        # Memory changes (the user stores a note; the sources stay as they were), the
        # back-off passes, and curiosity checks whether memory answers the question now.
        before = core.memory.total
        core.memory.store("Kangaroo notes: kangaroos hop.", source="local:/notes/kangaroo.txt")
        for _ in range(3):
            learner.step()
        assert core.memory.total > before
        rec = learner.curiosity.book.get(question)
        assert rec.answered_by not in own
        assert rec.status != "answered"
