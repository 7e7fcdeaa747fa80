"""The learner against a real local model: llama-cpp-python's server with SmolLM2-135M (issue 12).

Only in the llm lane (``make test-llm`` builds the server into a cached venv and
fetches the model; ``pytest --llm-lane`` selects these tests). Token counts are
checked against a proxy that adds up the server's own ``usage`` blocks. Each
test prints the figures it measured (run with ``-s`` to see them).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from sentient_core.autonomy.judge import Judge
from sentient_core.core import Core
from sentient_core.events import BreakerEvent, ChaperoneResponseEvent, ErrorEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMClient, LLMConfig, LLMError, LLMUnavailable
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.vocab import IterationOutcome
from tests.servers.llama import LlamaServer, UsageProxy

pytestmark = pytest.mark.llm

ROOT = Path(__file__).resolve().parent.parent
QA = json.loads((ROOT / "bench" / "data" / "pydoc" / "qa.json").read_text())
LONG_ASK = "Write a detailed essay of at least 400 words on the history of the Python language."


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(log=log) as srv:
        print(f"\nllama_cpp.server up in {srv.start_s:.1f} s (log: {log})")
        yield srv


def _from_llm(e: ChaperoneResponseEvent) -> bool:
    return [s.kind for s in e.sources] == ["llm"]


def _upstream(server: LlamaServer) -> str:
    return server.base_url.removesuffix("/v1")


def _settings(base_url: str, corpus: Path | None = None, **llm) -> LearnerSettings:
    cfg = {"timeout_s": 120.0, "deadline_s": 240.0, "max_retries": 1, **llm}
    return LearnerSettings(
        learner=LearnerConfig(interval_s=0, session="real-model", reflect_every=0),
        llm=LLMConfig(base_url=base_url, **cfg),
        corpus_dirs=(str(corpus),) if corpus is not None else (),
        include_python_docs=False,
    )


def test_answers_arrive_and_every_token_is_the_servers(llama, tmp_path):
    questions = [QA[i]["q"] for i in (0, 1, 2)]
    with UsageProxy(_upstream(llama)) as proxy, Core(tmp_path / "d") as core:
        with build_learner(core, _settings(proxy.base_url), env={}) as learner:
            for q in questions:
                learner.ask(q)
            learner.run(2)
            stats = learner.stats
            judge = learner.judge.counters()
            latency = learner.chaperone.llm.latency()
            fmt = learner.chaperone.llm.format_mode
            spent = learner.budget.today().tokens
        events = [e for _, e in read_events(core.store)]
    answers = [e for e in events if isinstance(e, ChaperoneResponseEvent) and _from_llm(e)]
    print(
        f"\nreal model: {len(answers)} answer(s), judge {judge['outcomes']} via {fmt},"
        f" {judge['model_calls']} judge call(s), {judge['model_garbage']} unparsed;"
        f" tokens {stats.tokens} (client) vs {proxy.usage_total} (server usage);"
        f" latency p50 {latency['p50']:.1f} s p90 {latency['p90']:.1f} s max {latency['max']:.1f} s"
    )
    assert len(answers) >= 3 and all(e.content_chars > 0 for e in answers)
    assert judge["model_calls"] >= 3 and judge["model_garbage"] == 0
    assert fmt == "json_object"  # llama-cpp-python refuses json_schema, takes its own form
    assert stats.tokens == proxy.usage_total == spent > 0 and stats.tokens_estimated == 0


def test_the_judge_reaches_a_verdict_at_least_nine_times_in_ten(llama):
    # Right and wrong answers to real questions (Python's own documentation).
    cases = []
    for i, item in enumerate(QA[:20]):
        cases.append((item["q"], item["answers"][0], True))
        wrong = QA[(i + 7) % len(QA)]["answers"][0]
        cases.append((item["q"], wrong, False))
    with LLMClient(LLMConfig(base_url=llama.base_url, timeout_s=120.0), environ={}) as llm:
        judge = Judge(llm)
        said = []
        for q, a, right in cases:
            v = judge.judge(
                IterationOutcome(
                    request_type="question",
                    ok=True,
                    grounded=False,
                    question=q,
                    answer=a,
                    source_kinds=("llm",),
                )
            )
            said.append((right, v.basis, v.outcome))
    parsed = sum(b == "llm" for _, b, _ in said)
    lowered_right = sum(r and o == "failure" for r, _, o in said)
    lowered_wrong = sum(not r and o == "failure" for r, _, o in said)
    print(
        f"\njudge: {parsed}/{len(said)} replies parsed into a verdict"
        f" ({judge.model_garbage} unparsed, {judge.model_errors} errors);"
        f" 'contradicted' for {lowered_wrong}/20 wrong and {lowered_right}/20 right answers"
    )
    assert judge.model_errors == 0
    assert parsed >= 0.9 * len(said)


def test_a_server_killed_mid_answer_falls_back_and_the_next_server_answers(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "python.txt").write_text(
        "Python was created by Guido van Rossum and first released in 1991. "
        "The history of the Python language began at CWI in the Netherlands."
    )
    server = LlamaServer(log=tmp_path / "server.log").start()
    try:
        with UsageProxy(_upstream(server)) as proxy, Core(tmp_path / "d") as core:
            # One failure opens the circuit: the iteration that asks a user's question
            # makes only that one call to the model (its own gaps wait).
            settings = _settings(
                proxy.base_url,
                corpus,
                answer_max_tokens=500,
                breaker_failures=1,
                breaker_cool_down_s=0.0,
            )
            with build_learner(core, settings, env={}) as learner:

                def kill_when_asked() -> None:
                    proxy.in_flight.wait(60)
                    threading.Event().wait(0.5)  # generation under way
                    server.kill()

                killer = threading.Thread(target=kill_when_asked)
                killer.start()
                learner.ask(LONG_ASK)
                learner.run(1)
                killer.join()
                events = [e for _, e in read_events(core.store)]
                errors = [e for e in events if isinstance(e, ErrorEvent) and e.where == "llm"]
                responses = [e for e in events if isinstance(e, ChaperoneResponseEvent)]
                print(f"\nkilled mid-answer: {errors[0].error[:160]}")
                assert errors and "LLMUnavailable" in errors[0].error
                assert responses[0].ok and responses[0].fallback == "offline"
                # A new server on the same port: the same learner gets model answers again.
                server.start()
                proxy.in_flight.clear()
                learner.ask(QA[3]["q"])
                learner.run(1)
                events = [e for _, e in read_events(core.store)]
                later = [e for e in events if isinstance(e, ChaperoneResponseEvent)][-1]
                moves = [e.state for e in events if isinstance(e, BreakerEvent)]
                print(f"breaker: {moves}")
                assert later.ok and _from_llm(later)
                # The dead server opened the circuit; the trial call to the new one closed it.
                assert moves[0] == "open" and moves[-1] == "closed"
    finally:
        server.stop()


def test_a_slow_answer_is_given_up_once_not_retried_into_a_queue(llama):
    # One attempt's timeout, far below the answer's time: one request, no retries piling
    # up behind the abandoned one (a one-slot server goes on computing it).
    with UsageProxy(_upstream(llama)) as proxy:
        cfg = LLMConfig(
            base_url=proxy.base_url, timeout_s=1.0, max_retries=3, answer_max_tokens=500
        )
        with LLMClient(cfg, environ={}) as llm:
            with pytest.raises(LLMUnavailable, match="not retried") as info:
                llm.ask(LONG_ASK)
            usage = llm.total_usage
        print(f"\nslow answer: {info.value}; {proxy.arrived} request(s) reached the server")
    assert usage.attempts == 1 and usage.retries == 0 and proxy.arrived == 1


def test_a_prompt_longer_than_the_context_is_an_error_not_a_retry_loop(llama):
    context = " ".join(["The sedenion field rotates through sixteen axes."] * 600)  # ~4800 tokens
    with UsageProxy(_upstream(llama)) as proxy:
        cfg = LLMConfig(base_url=proxy.base_url, timeout_s=120.0, max_retries=3)
        with LLMClient(cfg, environ={}) as llm:
            with pytest.raises(LLMError) as info:
                llm.ask("What rotates?", context=context)
            usage = llm.total_usage
    print(f"\ncontext too long: {type(info.value).__name__}: {str(info.value)[:200]}")
    assert "context" in str(info.value).lower()
    assert usage.replies == 0 and proxy.arrived == usage.attempts <= 4
