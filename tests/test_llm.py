"""LLM client against a real loopback OpenAI-compatible server: replies, usage,
retries/backoff, Retry-After, every fault mode, and the API key's handling."""

from __future__ import annotations

import logging
import math
import re

import httpx
import msgspec
import pytest

from sentient_core.errors import ArgumentError
from sentient_core.learning.llm import (
    SYSTEM_ANSWER,
    LLMBadResponse,
    LLMClient,
    LLMConfig,
    LLMError,
    LLMHTTPError,
    LLMReply,
    LLMUnavailable,
)
from tests.servers.openai import OpenAIServer, closed_port_url

CANNED = {"with statement": "The with statement wraps a block in a context manager."}


class Sleeps(list):
    """Records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server():
    with OpenAIServer(CANNED) as srv:
        yield srv


@pytest.fixture
def sleeps():
    return Sleeps()


def client_for(base_url: str, sleeps: Sleeps, **cfg) -> LLMClient:
    return LLMClient(LLMConfig(base_url=base_url, **cfg), sleep=sleeps, environ={})


def test_ask_returns_the_answer_with_usage_and_sends_the_limits(server, sleeps):
    with client_for(server.base_url, sleeps, model="m1") as llm:
        reply = llm.ask("What does the with statement do?", context="Python syntax")
        usage = llm.total_usage
    assert isinstance(reply, LLMReply)
    assert reply.text == CANNED["with statement"]
    assert reply.model == "test-model"
    assert reply.attempts == 1 and not reply.estimated
    assert reply.finish_reason == "stop"
    body = server.requests[0].body
    assert server.requests[0].path == "/v1/chat/completions"
    assert body["model"] == "m1"
    assert body["max_tokens"] == 500 and body["temperature"] == 0.7
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_ANSWER}
    assert "Python syntax" in body["messages"][1]["content"]
    # The server counts whitespace words of the whole prompt and of the answer.
    prompt_words = sum(len(m["content"].split()) for m in body["messages"])
    assert reply.prompt_tokens == prompt_words
    assert reply.completion_tokens == len(CANNED["with statement"].split())
    assert reply.total_tokens == reply.prompt_tokens + reply.completion_tokens
    assert usage.requests == usage.replies == usage.attempts == 1
    assert usage.total_tokens == reply.total_tokens and usage.failures == 0
    assert sleeps == []


def test_unmatched_question_gets_the_default_answer(server, sleeps):
    with client_for(server.base_url, sleeps) as llm:
        assert llm.ask("Something else entirely").text == "I don't know"


def test_summarize_sends_only_the_first_4000_chars_with_300_tokens(server, sleeps):
    text = "word " * 3000  # 15000 chars
    with client_for(server.base_url, sleeps) as llm:
        llm.summarize(text)
    body = server.requests[0].body
    assert body["max_tokens"] == 300
    assert body["messages"][-1]["content"] == text[:4000]


def test_retries_on_500_then_succeeds_with_exponential_backoff(server, sleeps):
    server.fault("500", times=2)
    with client_for(server.base_url, sleeps) as llm:
        reply = llm.ask("with statement?")
        usage = llm.total_usage
    assert reply.text == CANNED["with statement"]
    assert reply.attempts == 3
    assert sleeps == [0.5, 1.0]
    assert len(server.requests) == 3
    assert usage.retries == 2 and usage.attempts == 3 and usage.failures == 0


def test_backoff_is_capped(server, sleeps):
    server.fault("500", times=5, status=503)
    with client_for(server.base_url, sleeps, max_retries=5, backoff_max_s=1.5) as llm:
        assert llm.ask("x").attempts == 6
    assert sleeps == [0.5, 1.0, 1.5, 1.5, 1.5]


def test_503_retry_after_is_honoured_when_small(server, sleeps):
    server.fault("500", status=503, retry_after=0.2)
    server.fault("500", status=503, retry_after=900)
    with client_for(server.base_url, sleeps) as llm:
        assert llm.ask("x").attempts == 3
    assert sleeps == [0.2, 1.0]


def test_persistent_500_raises_http_error_after_bounded_attempts(server, sleeps):
    server.fault("500", times=10)
    with client_for(server.base_url, sleeps, max_retries=2) as llm:
        with pytest.raises(LLMHTTPError) as info:
            llm.ask("x")
        usage = llm.total_usage
    assert info.value.status == 500
    assert "try again later" in info.value.body
    assert len(server.requests) == 3
    assert usage.failures == 1 and usage.replies == 0


def test_429_honours_a_small_retry_after(server, sleeps):
    server.fault("429", retry_after=0.25)
    with client_for(server.base_url, sleeps) as llm:
        reply = llm.ask("with statement")
    assert reply.attempts == 2
    assert sleeps == [0.25]


def test_429_without_retry_after_uses_backoff(server, sleeps):
    server.fault("429")
    with client_for(server.base_url, sleeps) as llm:
        assert llm.ask("x").attempts == 2
    assert sleeps == [0.5]


def test_429_with_a_long_retry_after_gives_up_at_once(server, sleeps):
    server.fault("429", retry_after=3600)
    with client_for(server.base_url, sleeps) as llm, pytest.raises(LLMHTTPError) as info:
        llm.ask("x")
    assert info.value.status == 429 and info.value.retry_after == 3600
    assert sleeps == [] and len(server.requests) == 1


def test_other_4xx_is_not_retried(server, sleeps):
    with (
        client_for(server.base_url.replace("/v1", "/v2"), sleeps) as llm,
        pytest.raises(LLMHTTPError) as info,
    ):
        llm.ask("x")
    assert info.value.status == 404
    assert len(server.requests) == 1 and sleeps == []


def test_server_down_raises_unavailable_after_retries(sleeps):
    with client_for(closed_port_url(), sleeps, max_retries=2) as llm:
        with pytest.raises(LLMUnavailable, match="ConnectError") as info:
            llm.ask("x")
        assert llm.total_usage.attempts == 3
    assert "3 attempt(s)" in str(info.value)
    assert sleeps == [0.5, 1.0]


def test_a_timed_out_request_is_not_retried_by_default(server, sleeps):
    # A one-slot server goes on computing it: a retry would queue behind it.
    server.fault("timeout", times=2, hang_s=5.0)
    with (
        client_for(server.base_url, sleeps, timeout_s=0.2, max_retries=3) as llm,
        pytest.raises(LLMUnavailable, match=r"no response within 0\.2 s .* not retried"),
    ):
        llm.ask("x")
    assert len(server.requests) == 1 and sleeps == []


def test_timeout_retried_when_asked_then_raises_unavailable(server, sleeps):
    server.fault("timeout", times=2, hang_s=5.0)
    with (
        client_for(
            server.base_url, sleeps, timeout_s=0.2, max_retries=1, retry_timeouts=True
        ) as llm,
        pytest.raises(LLMUnavailable, match=r"no response within 0\.2 s"),
    ):
        llm.ask("x")
    assert len(server.requests) == 2 and sleeps == [0.5]


def test_a_connect_timeout_is_retried(sleeps):
    calls = []

    def handler(request):
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectTimeout("connect timed out", request=request)
        return httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": "fine"}}]}
        )

    cfg = LLMConfig(base_url="http://llm.invalid/v1", max_retries=2)
    with LLMClient(cfg, transport=httpx.MockTransport(handler), sleep=sleeps, environ={}) as llm:
        assert llm.ask("x").text == "fine"
    assert len(calls) == 2 and sleeps == [0.5]


def test_slow_drip_is_cut_off_at_the_deadline(server, sleeps):
    # 400 bytes at one per 50 ms would take 20 s; each read is quick, so only the
    # whole-response deadline can stop it.
    server.fault("drip", drip_s=0.05, drip_bytes=400)
    with (
        client_for(server.base_url, sleeps, timeout_s=0.3, max_retries=0) as llm,
        pytest.raises(LLMUnavailable, match="deadline"),
    ):
        llm.ask("x")


def test_slow_drip_once_then_ok_recovers_on_retry(server, sleeps):
    server.fault("drip", drip_s=0.05, drip_bytes=400)
    with client_for(
        server.base_url, sleeps, timeout_s=0.3, max_retries=1, retry_timeouts=True
    ) as llm:
        assert llm.ask("with statement").text == CANNED["with statement"]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("garbage", "not a chat completion"),
        ("no_choices", "no choices"),
        ("empty_content", "empty completion"),
    ],
)
def test_bad_bodies_raise_bad_response_without_retry(server, sleeps, mode, message):
    server.fault(mode)
    with client_for(server.base_url, sleeps) as llm:
        with pytest.raises(LLMBadResponse, match=message):
            llm.ask("x")
        assert llm.total_usage.failures == 1
    assert len(server.requests) == 1 and sleeps == []


@pytest.mark.parametrize("chunked", [False, True])
def test_oversize_body_is_refused(server, sleeps, chunked):
    server.fault("oversize", size=4 << 20, chunked=chunked)
    with (
        client_for(server.base_url, sleeps, max_response_bytes=64 << 10) as llm,
        pytest.raises(LLMBadResponse, match="exceeds the cap"),
    ):
        llm.ask("x")


def test_missing_usage_is_estimated_from_characters(server, sleeps):
    server.fault("no_usage")
    with client_for(server.base_url, sleeps) as llm:
        reply = llm.ask("with statement")
        usage = llm.total_usage
    body = server.requests[0].body
    prompt_chars = sum(len(m["content"]) for m in body["messages"])
    assert reply.estimated
    assert reply.prompt_tokens == math.ceil(prompt_chars / 4)
    assert reply.completion_tokens == math.ceil(len(reply.text) / 4)
    assert reply.total_tokens == reply.prompt_tokens + reply.completion_tokens
    assert usage.estimated_replies == 1


def test_api_key_is_sent_from_the_environment_and_never_logged(server, sleeps, monkeypatch, caplog):
    secret = "sk-test-7f3a9c1e5b"
    monkeypatch.setenv("SENTIENT_LLM_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    llm = LLMClient(LLMConfig(base_url=server.base_url), sleep=sleeps)
    with llm:
        llm.ask("with statement")
        server.fault("500")
        server.fault("garbage")
        try:
            llm.ask("x")
        except LLMError as exc:
            errors.append(f"{exc!s} {exc!r}")
        text = repr(llm) + repr(llm.config) + repr(vars(llm)) + repr(llm.total_usage)
    auth = [r.headers.get("Authorization") for r in server.requests]
    assert auth == [f"Bearer {secret}"] * 3
    assert errors
    assert secret not in caplog.text
    assert all(secret not in e for e in errors)
    assert secret not in text


def test_no_key_in_the_environment_sends_no_authorization(server, sleeps, monkeypatch):
    monkeypatch.delenv("SENTIENT_LLM_API_KEY", raising=False)
    with LLMClient(LLMConfig(base_url=server.base_url), sleep=sleeps) as llm:
        llm.ask("x")
    assert "Authorization" not in server.requests[0].headers


def test_config_bounds_are_enforced_on_decode():
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"timeout_s": 0}, LLMConfig)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"max_retries": -1}, LLMConfig)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"no_such_field": 1}, LLMConfig)
    cfg = LLMConfig()
    assert cfg.base_url == "http://localhost:1234/v1"
    assert (cfg.timeout_s, cfg.answer_max_tokens, cfg.temperature) == (30.0, 500, 0.7)
    assert (cfg.summary_max_tokens, cfg.summary_input_chars) == (300, 4000)


def test_lenient_parsing_of_server_variants_with_mock_transport(sleeps):
    """Servers differ: legacy ``text`` choices, usage without total, extra fields."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "choices": [{"text": "  legacy answer  ", "logprobs": None}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 2},
                "system_fingerprint": "x",
            },
        )

    cfg = LLMConfig(base_url="http://llm.invalid/v1")
    with LLMClient(cfg, transport=httpx.MockTransport(handler), sleep=sleeps, environ={}) as llm:
        reply = llm.ask("q")
    assert reply.text == "legacy answer"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.total_tokens) == (7, 2, 9)
    assert reply.model == "local-model" and not reply.estimated


def test_wrong_types_in_the_body_are_a_bad_response(sleeps):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": "nope"})

    cfg = LLMConfig(base_url="http://llm.invalid/v1")
    with (
        LLMClient(cfg, transport=httpx.MockTransport(handler), sleep=sleeps, environ={}) as llm,
        pytest.raises(LLMBadResponse),
    ):
        llm.ask("q")


def test_calls_for_one_question_share_one_deadline(server, sleeps):
    # Each call alone may take timeout_s = 0.6 s; the question allows 1.0 s in all.
    server.fault("timeout", hang_s=5.0, times=2)
    with client_for(server.base_url, sleeps, timeout_s=0.6, max_retries=0) as llm:
        clock = llm._monotonic
        with llm.question(1.0) as end:
            t0 = clock()
            with pytest.raises(LLMUnavailable) as first:
                llm.ask("first")  # cut by its own timeout (0.6 s)
            with pytest.raises(LLMUnavailable) as second:
                llm.summarize("second")  # only what is left of the question's 1.0 s
            left = end - t0 - 0.6
            assert clock() >= end
            with pytest.raises(LLMUnavailable, match="question's deadline"):
                llm.ask("third")  # not even sent
        usage = llm.total_usage

    def limit(info) -> float:
        return float(re.search(r"no response within ([0-9.e-]+) s", str(info.value)).group(1))

    assert limit(first) == 0.6
    assert 0.0 < limit(second) <= left + 1e-6  # the rest of the question, not another 0.6 s
    assert usage.requests == 2 and usage.skipped_past_deadline == 1
    assert len(server.requests) == 2
    # Outside a question each call has its own deadline again.
    with client_for(server.base_url, sleeps, timeout_s=0.6, max_retries=0) as llm:
        assert llm.ask("with statement").text == CANNED["with statement"]


def test_a_nested_question_keeps_the_outer_earlier_end(server, sleeps):
    with client_for(server.base_url, sleeps) as llm:
        with llm.question(5.0) as outer, llm.question(60.0) as inner:
            assert inner == outer
        with pytest.raises(ArgumentError), llm.question(0.0):
            pass
