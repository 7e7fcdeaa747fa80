"""Every model token counted once, through one path (issue 12.4), over a real loopback server.

The answer, the summary and the judge's call all go through the client; the
learner charges the client's totals for the iteration to the budget and the
session stats. The fake server reports ``usage`` (or not), so the sums can be
compared with what it sent.
"""

from __future__ import annotations

import pytest

from sentient_core.core import Core
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMClient, LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from tests.servers.openai import OpenAIServer

QUESTION = "What is the waggle dance of honey bees?"
ANSWER = "Honey bees dance to show other bees the direction and distance of flowers."


def _learner(core, server):
    settings = LearnerSettings(
        learner=LearnerConfig(interval_s=0, session="tokens", reflect_every=0),
        llm=LLMConfig(base_url=server.base_url, timeout_s=5.0, max_retries=1),
        include_python_docs=False,
    )
    return build_learner(core, settings, env={})


@pytest.mark.parametrize("usage", [True, False])
def test_session_tokens_equal_the_servers_usage_judge_calls_included(tmp_path, usage):
    canned = {"waggle": ANSWER}
    with (
        OpenAIServer(canned, structured='{"verdict": "unsupported"}') as server,
        Core(tmp_path / "d") as core,
    ):
        if not usage:
            server.fault("no_usage", times=100)
        with _learner(core, server) as learner:
            learner.ask(QUESTION)
            learner.run(1)
            stats = learner.stats
            spent = learner.budget.today().tokens
            client = learner.chaperone.llm.total_usage
            judge = learner.judge.counters()
        kinds = ["judge" if "response_format" in r.body else "answer" for r in server.requests]
    assert kinds.count("judge") == judge["model_calls"] >= 1 and kinds.count("answer") >= 1
    assert stats.tokens == spent == client.total_tokens > 0
    if usage:
        assert stats.tokens == server.usage_total and stats.tokens_estimated == 0
    else:  # no usage from the server: a marked estimate (chars / 4), never a silent zero
        assert server.usage_total == 0 and stats.tokens_estimated == stats.tokens


def test_latency_percentiles_are_nearest_rank_over_replies():
    with (
        OpenAIServer() as server,
        LLMClient(LLMConfig(base_url=server.base_url), environ={}) as llm,
    ):
        assert llm.latency() == {"n": 0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
        server.fault("drip", times=3, drip_s=0.001, drip_bytes=400)  # some slower replies
        xs = sorted(llm.ask(f"question {i}?").elapsed_s for i in range(10))
        got = llm.latency()
    # Nearest rank over the ten replies' own elapsed times.
    assert got == {"n": 10, "p50": xs[4], "p90": xs[8], "p99": xs[9], "max": xs[9]}
