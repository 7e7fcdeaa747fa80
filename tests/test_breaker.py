"""A bounded model: one deadline per call across retries, a live 'waiting' notice,
and a circuit breaker that falls back to the offline corpus at once after
repeated failures (through a real loopback server that hangs)."""

from __future__ import annotations

import pytest

from sentient_core.autonomy.breaker import CircuitBreaker
from sentient_core.core import Core
from sentient_core.events import BreakerEvent, ModelWaitEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMClient, LLMConfig, LLMUnavailable
from sentient_core.learning.session import LearnerSettings, build_learner
from tests.servers.openai import OpenAIServer
from tests.test_learner import CORPUS


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_breaker_opens_half_opens_and_closes():
    clock = Clock()
    b = CircuitBreaker(failures=3, cool_down_s=60, clock=clock)
    assert b.allow() == (True, None) and b.state == "closed"
    assert [b.failure() for _ in range(3)] == [None, None, "open"]
    assert b.state == "open" and b.allow() == (False, None) and b.skipped == 1
    clock.t = 59.9
    assert b.allow()[0] is False
    clock.t = 60.0
    assert b.allow() == (True, "half-open")  # one trial …
    assert b.allow() == (False, None)  # … and only one
    assert b.failure() == "open"  # a failed trial opens it again at once
    clock.t = 120.0
    assert b.allow() == (True, "half-open")
    assert b.success() == "closed" and b.state == "closed"
    assert b.success() is None  # already closed
    with pytest.raises(ValueError):
        CircuitBreaker(failures=0)


def test_one_deadline_bounds_a_call_across_retries():
    with OpenAIServer() as server:
        server.fault("timeout", times=20, hang_s=5.0)
        cfg = LLMConfig(
            base_url=server.base_url,
            timeout_s=1.0,
            deadline_s=2.5,
            max_retries=10,
            retry_timeouts=True,
        )
        with LLMClient(cfg, environ={}) as llm, pytest.raises(LLMUnavailable, match="deadline"):
            llm.ask("anything?")
    # Eleven attempts were allowed; the 2.5 s deadline over 1 s attempts ends it at three.
    assert llm.total_usage.attempts <= 3


def _learner(core, corpus_dir, server):
    llm = LLMConfig(
        base_url=server.base_url,
        timeout_s=0.6,
        deadline_s=0.8,
        max_retries=3,
        backoff_s=0.01,
        breaker_failures=2,
        breaker_cool_down_s=3600,
    )
    settings = LearnerSettings(
        learner=LearnerConfig(interval_s=0, session="hung", reflect_every=0),
        llm=llm,
        corpus_dirs=(str(corpus_dir),),
        include_python_docs=False,
    )
    learner = build_learner(core, settings, env={})
    learner.chaperone.wait_notice_s = 0.25
    return learner


@pytest.fixture
def corpus_dir(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    for name, text in CORPUS.items():
        (d / name).write_text(text)
    return d


def test_a_hung_model_opens_the_circuit_and_answers_come_offline(tmp_path, corpus_dir):
    # Each question has its own passage in the corpus (new content, so a `success`
    # verdict the judge would check with the model), asked twice in other words.
    questions = [
        "How do honey bees communicate the direction of flowers?",
        "What causes ocean tides?",
        "Why do volcanoes erupt?",
        "What does the angle of the waggle dance encode?",
        "When do spring tides happen?",
        "What is rhyolitic magma like?",
    ]
    with OpenAIServer() as server, Core(tmp_path / "d") as core:
        server.fault("timeout", times=100, hang_s=3.0)
        with _learner(core, corpus_dir, server) as learner:
            for q in questions:
                learner.ask(q)
            learner.run(3)
            counters = learner.chaperone.counters
            judge = learner.judge.counters()
        events = [e for _, e in read_events(core.store)]
    opened = [e for e in events if isinstance(e, BreakerEvent) and e.state == "open"]
    waits = [e for e in events if isinstance(e, ModelWaitEvent)]
    # Two failed calls (each cut by the 0.6 s timeout: a timed-out request is not
    # retried, so the 0.8 s deadline is never reached) open the circuit: the
    # chaperone's question, then the judge's check of the offline answer (one
    # model, one breaker). Every later question goes to the offline corpus and
    # every later verdict stays deterministic, without calling the model.
    assert counters["llm_calls"] == 1 and judge["model_calls"] == 1
    assert judge["model_errors"] == 1 and judge["model_skips"] >= 1
    assert counters["breaker_skips"] >= 4
    assert len(opened) == 1 and opened[0].failures == 2
    # Notices come only while a call runs, and say when it gives up (one attempt).
    assert waits and all(w.deadline_s == 0.6 for w in waits)
    assert {w.id for w in waits} <= {e.id for e in events if e.kind == "query"}
