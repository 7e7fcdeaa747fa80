"""The learner end to end through real loopback servers.

An OpenAI-compatible chat server (canned completions with usage counts) and an
HTTPS content server with a throw-away CA, both on 127.0.0.1 and explicitly
allowed by this test configuration. Fault modes: server down, timeout, 500,
garbage JSON, slow drip, oversize — the learner records each failure and goes on.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.events import ChaperoneResponseEvent, QueryEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.safety import DEFAULT_ALLOWED_DOMAINS, SafetyPolicy
from sentient_core.learning.session import (
    FetcherSettings,
    LearnerSettings,
    build_learner,
    incoming_dir,
)
from tests.servers.content import ContentServer
from tests.servers.openai import OpenAIServer, closed_port_url

ANSWERS = {
    "tides": "Tides are caused by the moon's gravity. I am certain this is correct.",
    "oscillator": "Coupled oscillators synchronise above a critical coupling.",
}


@pytest.fixture(scope="module")
def content():
    with ContentServer(hang_s=2.0, drip_s=0.05, stream_limit_s=10.0) as srv:
        yield srv


_OPEN: list = []


@pytest.fixture(autouse=True)
def _close_learners():
    """Close every learner's network clients (sockets) at the end of each test."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def _learner(
    core, *, llm_url=None, content=None, caps=None, iterations=20, timeout_s=None, llm_opts=None
):
    policy = SafetyPolicy(
        incoming_dir=str(incoming_dir(core.data_dir)),
        allowed_domains=(*DEFAULT_ALLOWED_DOMAINS, "localhost"),
        allowed_host_ports=(f"localhost:{content.port}",) if content is not None else (),
        allow_private_addresses=True,  # test configuration only: loopback servers
        rate_limit_requests=1000,
    )
    fetcher = FetcherSettings(
        ca_bundle=content.ca_path if content is not None else "",
        **(
            {"timeout_s": timeout_s, "connect_timeout_s": timeout_s, "max_duration_s": 2.0}
            if timeout_s is not None
            else {}
        ),
    )
    # Fast LLM failures: one retry, short backoff and timeout.
    llm = (
        LLMConfig(
            base_url=llm_url,
            **{"max_retries": 1, "backoff_s": 0.01, "timeout_s": 1.0, **(llm_opts or {})},
        )
        if llm_url
        else None
    )
    learner = build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(
                interval_s=0, session="e2e", max_iterations=iterations, reflect_every=0
            ),
            llm=llm,
            safety=policy,
            caps=caps or BudgetCaps(daily_tool_calls=0, daily_tokens=0),
            fetcher=fetcher,
            include_python_docs=False,
        ),
        env={},
    )
    _OPEN.append(learner)
    return learner


def _judged(core) -> list[tuple[str, str]]:
    return [(e.id, e.outcome) for _, e in read_events(core.store) if e.kind == "judge"]


def test_grounded_fetches_of_every_format_succeed_and_are_integrated(tmp_path, content):
    with Core(tmp_path / "d") as core:
        learner = _learner(core, content=content)
        for path in ("/page.html", "/paper.pdf", "/data.json", "/notes.md"):
            learner.ask(f"Please learn {content.url(path)}")
        stats = learner.run(4)
        assert stats.requests.get("fetch_content") == 4
        fetches = {
            e.id
            for _, e in read_events(core.store)
            if e.kind == "query" and e.type == "fetch_content"
        }
        assert [o for i, o in _judged(core) if i in fetches] == ["success"] * 4
        sources = {r.source for r in core.memory.recent(100)}
        assert {
            "web:" + content.url(p) for p in ("/page.html", "/paper.pdf", "/data.json", "/notes.md")
        } <= sources
        hits = core.memory.recall("kuramoto oscillators synchronise coupling", k=1, touch=False)
        assert hits and hits[0].record.source == "web:" + content.url("/page.html")
        saved = list(incoming_dir(core.data_dir).iterdir())
        assert len(saved) == 4


def test_llm_only_answer_is_could_not_verify_and_records_usage(tmp_path):
    with OpenAIServer(ANSWERS) as llm, Core(tmp_path / "d") as core:
        learner = _learner(core, llm_url=llm.base_url)
        learner.ask("What causes ocean tides?")
        stats = learner.run(1)
        judged = dict(_judged(core))
        assert "could_not_verify" in judged.values()
        assert "success" not in judged.values()
        assert stats.tokens > 0
        assert learner.budget.today().tokens == stats.tokens


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/redirect/offlist", "refused"),
        ("/octet", "refused"),
        ("/oversize/declared", "refused"),
        ("/oversize/stream", "refused"),
        ("/status/500", "failed"),
        ("/slow", "failed"),
        ("/drip", "failed"),
    ],
)
def test_content_faults_are_recorded_and_the_loop_goes_on(tmp_path, content, path, expected):
    with Core(tmp_path / "d") as core:
        learner = _learner(core, content=content, timeout_s=0.5)
        learner.ask(f"Please learn {content.url(path)}")
        learner.ask(f"Please learn {content.url('/notes.md')}")
        stats = learner.run(2)
        assert stats.iterations == 2
        if expected == "refused":
            assert stats.refused >= 1
            assert any(e.kind == "refusal" for _, e in read_events(core.store))
        else:
            assert stats.failed >= 1
            assert "failure" in stats.outcomes
        # … and the next initiative still learned the good page
        assert any(r.source == "web:" + content.url("/notes.md") for r in core.memory.recent(50))
        outside = [
            p for p in Path(tmp_path).rglob("*") if p.is_file() and "incoming" not in p.parts
        ]
        assert all(p.name in ("data.mdb", "lock.mdb", "codes.f32") for p in outside)


@pytest.mark.parametrize(
    "fault",
    [
        "down",
        pytest.param("timeout", marks=pytest.mark.slow),
        "500",
        "garbage",
        pytest.param("drip", marks=pytest.mark.slow),
        "oversize",
    ],
)
def test_llm_faults_fall_back_and_the_loop_goes_on(tmp_path, fault):
    with OpenAIServer(ANSWERS) as llm, Core(tmp_path / "d") as core:
        url = closed_port_url() if fault == "down" else llm.base_url
        if fault != "down":
            options = {
                "timeout": {"hang_s": 3.0},
                "drip": {"drip_s": 0.3},
                "oversize": {"size": 5_000_000},
            }
            llm.fault(fault, times=50, **options.get(fault, {}))
        learner = _learner(core, llm_url=url)
        learner.ask("What causes ocean tides?")
        learner.ask("How do coupled oscillators behave?")
        stats = learner.run(2)
        assert stats.iterations == 2 and stats.queries >= 2
        assert "success" not in stats.outcomes  # nothing grounded happened
        responses = [e for _, e in read_events(core.store) if isinstance(e, ChaperoneResponseEvent)]
        recorded = [e for e in responses if e.fallback or "LLM failed" in e.error]
        assert len(recorded) == len(responses) >= 2, "every LLM failure must be recorded"


def test_a_slow_model_is_cut_at_the_question_deadline_not_the_call_timeout(tmp_path):
    # Every answer would come after 0.5 s; a call may take 2 s, a question 0.25 s.
    with OpenAIServer(ANSWERS) as llm_server, Core(tmp_path / "d") as core:
        llm_server.fault("timeout", times=50, hang_s=0.5)
        learner = _learner(
            core,
            llm_url=llm_server.base_url,
            llm_opts={
                "timeout_s": 2.0,
                "question_deadline_s": 0.25,
                "max_retries": 0,
                "breaker_failures": 1000,
            },
        )
        for q in ("What causes ocean tides?", "How do coupled oscillators behave?"):
            learner.ask(q)
        learner.run(2)
        events = [e for _, e in read_events(core.store)]
    errors = [e.error for e in events if isinstance(e, ChaperoneResponseEvent)]
    asked = sum(isinstance(e, QueryEvent) for e in events)
    assert asked >= 2 and len(errors) == asked
    limits = [float(re.search(r"no response within ([0-9.e-]+) s", m).group(1)) for m in errors]
    assert all(0.0 < x <= 0.25 for x in limits), errors


def test_budget_stops_at_the_daily_token_cap_exactly(tmp_path):
    with OpenAIServer(ANSWERS) as llm, Core(tmp_path / "d") as core:
        learner = _learner(
            core, llm_url=llm.base_url, caps=BudgetCaps(daily_tokens=1200, per_initiative_tokens=0)
        )
        # Enough distinct questions that the loop never runs out of things to ask.
        for i in range(60):
            learner.ask(f"What is known about topic number {i}?")
        stats = learner.run(20)
        assert stats.stopped_by.startswith("budget:")
        assert learner.budget.today().tokens <= 1200
