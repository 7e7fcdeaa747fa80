"""The judge fails toward silence: success only for grounded, integrated content; an
ungrounded answer is could_not_verify (or failure when a judge model says it is
contradicted); an unreachable or garbage-returning judge model — fake, and a real
loopback OpenAI-compatible server (or none at all) — never yields success."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from sentient_core.autonomy.judge import MAX_JUDGED_CHARS, VERDICT_SCHEMA, Judge, parse_verdict
from sentient_core.learning.llm import LLMClient, LLMConfig
from sentient_core.vocab import (
    BASES,
    GROUNDING_KINDS,
    OUTCOMES,
    ChaperoneResponse,
    IterationOutcome,
    Source,
    Verdict,
)
from tests.servers.openai import OpenAIServer, closed_port_url

# -- fakes -------------------------------------------------------------------------------------


class Reply:
    def __init__(self, text):
        self.text = text


class FakeLLM:
    """Replies with a fixed text and records the calls."""

    def __init__(self, text):
        self.text = text
        self.calls: list[tuple[list, dict]] = []

    def chat(self, messages, **kw):
        self.calls.append((messages, kw))
        return Reply(self.text)


class RaisingLLM:
    def __init__(self, exc: Exception):
        self.exc = exc

    def chat(self, messages, **kw):
        raise self.exc


class NoTextLLM:
    def chat(self, messages, **kw):
        return object()


def outcome(**kw) -> IterationOutcome:
    base = dict(
        request_type="question",
        ok=True,
        source_kinds=("llm",),
        content_chars=40,
        answer="Sedenions are 16-dimensional.",
        question="What are sedenions?",
    )
    return IterationOutcome(**{**base, **kw})


GROUNDED_FETCH = dict(
    request_type="fetch_content",
    grounded=True,
    source_kinds=("web",),
    integrated_chunks=3,
    content_chars=5000,
    question="",  # a requested fetch answers no question
)

GROUNDED_ANSWER = dict(
    grounded=True,
    source_kinds=("corpus",),
    integrated_chunks=1,
    content_chars=600,
    answer=(
        "Sedenions form a 16-dimensional non-associative algebra over the real numbers,"
        " obtained from the octonions by the Cayley-Dickson construction; they have zero divisors."
    ),
)


# -- the deterministic rails ----------------------------------------------------------------------


def test_llm_answer_claiming_success_without_grounding_is_could_not_verify():
    o = outcome(answer="I have verified this and it definitely worked. Success!")
    assert Judge().judge(o) == Verdict(
        outcome="could_not_verify",
        basis="fail_safe",
        reason="ungrounded answer and no judge model to check it",
        gate="grounding",
    )


def test_llm_answer_integrated_but_ungrounded_is_still_could_not_verify():
    o = outcome(integrated_chunks=5)  # storing an LLM answer does not ground it
    assert Judge().judge(o).outcome == "could_not_verify"


@pytest.mark.parametrize("rtype", ["fetch_content", "read_local", "question", "summarize"])
def test_failed_request_is_failure(rtype):
    o = outcome(
        request_type=rtype, ok=False, error="ConnectError: connection refused", content_chars=0
    )
    v = Judge().judge(o)
    assert (v.outcome, v.basis) == ("failure", "deterministic")
    assert "connection refused" in v.reason


def test_failed_fetch_mentions_fetch():
    v = Judge().judge(outcome(request_type="fetch_content", ok=False, error="HTTP 500"))
    assert v.reason == "the fetch failed: HTTP 500"


def test_grounded_integrated_fetch_is_success():
    v = Judge().judge(outcome(**GROUNDED_FETCH))
    assert (v.outcome, v.basis) == ("success", "deterministic")
    assert "3 chunk" in v.reason


@pytest.mark.parametrize(
    ("rtype", "kind"), [("read_local", "local"), ("question", "corpus"), ("summarize", "web")]
)
def test_other_grounded_integrated_requests_are_success(rtype, kind):
    o = outcome(**{**GROUNDED_FETCH, "request_type": rtype, "source_kinds": (kind, "summary")})
    assert Judge().judge(o).outcome == "success"


def test_grounded_but_nothing_integrated_is_could_not_verify():
    v = Judge().judge(outcome(**{**GROUNDED_FETCH, "integrated_chunks": 0}))
    assert (v.outcome, v.basis) == ("could_not_verify", "deterministic")
    assert "nothing was integrated" in v.reason


@pytest.mark.parametrize(
    "change",
    [
        {"source_kinds": ()},
        {"source_kinds": ("llm",)},
        {"source_kinds": ("summary", "memory")},
        {"content_chars": 0},
    ],
)
def test_grounded_flag_alone_is_not_enough(change):
    v = Judge(FakeLLM('{"verdict": "supported"}')).judge(outcome(**{**GROUNDED_FETCH, **change}))
    assert (v.outcome, v.basis) == ("could_not_verify", "deterministic")


def test_refused_is_not_applicable():
    for extra in ({}, {"ok": False}, GROUNDED_FETCH):
        o = outcome(**{**extra, "refused": True})
        v = Judge(FakeLLM('{"verdict": "contradicted"}')).judge(o)
        assert (v.outcome, v.basis) == ("not_applicable", "deterministic")


def test_ok_with_error_is_not_success():
    v = Judge().judge(outcome(**GROUNDED_FETCH, error="truncated"))
    assert (v.outcome, v.basis) == ("could_not_verify", "deterministic")


# -- the judge model (fakes) -------------------------------------------------------------------------


def test_contradicted_is_failure_by_llm():
    llm = FakeLLM('{"verdict": "contradicted"}')
    v = Judge(llm).judge(outcome())
    assert (v.outcome, v.basis) == ("failure", "llm")
    (messages, kw) = llm.calls[0]
    assert kw == {"max_tokens": 32, "temperature": 0.0}
    assert messages[0]["role"] == "system" and "verdict" in messages[0]["content"]
    assert "What are sedenions?" in messages[1]["content"]
    assert "Sedenions are 16-dimensional." in messages[1]["content"]


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "supported"}',
        ' {"verdict":"supported", "reason": "well known"}\n',
        '{"verdict": "unsupported"}',
    ],
)
def test_judge_model_never_produces_success(text):
    v = Judge(FakeLLM(text)).judge(outcome())
    assert (v.outcome, v.basis) == ("could_not_verify", "llm")


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionRefusedError("refused"),
        TimeoutError("timed out"),
        RuntimeError("boom"),
        ValueError("bad"),
        KeyError("text"),
    ],
)
def test_unreachable_judge_model_is_could_not_verify(exc):
    j = Judge(RaisingLLM(exc))
    v = j.judge(outcome())
    assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe")
    assert type(exc).__name__ in v.reason
    assert (j.model_calls, j.model_errors, j.model_garbage) == (1, 1, 0)


GARBAGE = [
    "",
    "supported",
    "Yes, the answer is supported.",
    "It is not contradicted.",
    '{"verdict": "Supported"}',
    '{"verdict": "success"}',
    '{"verdict": true}',
    '{"verdict": null}',
    '{"outcome": "supported"}',
    '["supported"]',
    '{"verdict": "supported"} then {"verdict": "contradicted"}',
    '{"verdict": "supported"',
    "null",
    "\x00\xff",
    "{" * 10000,
]


# A JSON verdict inside other text is read (a small model wraps it); prose never is.
TOLERATED = [
    ('```json\n{"verdict": "contradicted"}\n```', "contradicted"),
    ('Sure! {"verdict": "unsupported"} is my answer.', "unsupported"),
    ('{"verdict": "supported"} {"verdict": "supported"}', "supported"),
    ('{"reason": {"x": 1}} {"verdict": "contradicted", "reason": "wrong year"}', "contradicted"),
]


@pytest.mark.parametrize(("text", "want"), TOLERATED)
def test_a_json_verdict_inside_text_is_read(text, want):
    assert parse_verdict(text) == want
    j = Judge(FakeLLM(text))
    v = j.judge(outcome())
    assert j.model_garbage == 0 and v.basis == "llm"
    assert v.outcome == ("failure" if want == "contradicted" else "could_not_verify")


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_from_the_judge_model_is_could_not_verify(text):
    j = Judge(FakeLLM(text))
    v = j.judge(outcome())
    assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe")
    assert j.model_garbage == 1


@pytest.mark.parametrize("llm", [NoTextLLM(), FakeLLM(None), FakeLLM(b'{"verdict": "supported"}')])
def test_reply_without_text_is_could_not_verify(llm):
    v = Judge(llm).judge(outcome())
    assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe")


def test_model_not_asked_without_an_answer_or_when_rails_decide():
    llm = FakeLLM('{"verdict": "contradicted"}')
    j = Judge(llm)
    assert j.judge(outcome(answer="  ")).basis == "fail_safe"
    j.judge(outcome(**GROUNDED_FETCH))
    j.judge(outcome(ok=False))
    j.judge(outcome(refused=True))
    assert llm.calls == []


def test_long_texts_are_cut():
    llm = FakeLLM('{"verdict": "unsupported"}')
    Judge(llm).judge(outcome(question="q" * 10_000, answer="a" * 10_000))
    content = llm.calls[0][0][1]["content"]
    assert content.count("q") == MAX_JUDGED_CHARS
    assert content.count("a") == MAX_JUDGED_CHARS


def test_keyboard_interrupt_is_not_swallowed():
    with pytest.raises(KeyboardInterrupt):
        Judge(RaisingLLM(KeyboardInterrupt())).judge(outcome())


def test_counters():
    j = Judge(FakeLLM('{"verdict": "contradicted"}'))
    j.judge(outcome(**GROUNDED_FETCH))
    j.judge(outcome())
    j.judge(outcome(refused=True))
    c = msgspec.json.decode(msgspec.json.encode(j.counters()))
    assert c["outcomes"] == {"success": 1, "failure": 1, "could_not_verify": 0, "not_applicable": 1}
    assert c["bases"] == {"deterministic": 2, "llm": 1, "fail_safe": 0}
    assert c["model_calls"] == 1


def test_from_response():
    text = (
        "The arXiv abstract describes sedenion algebras, their zero divisors and subalgebras. " * 3
    )
    resp = ChaperoneResponse(
        request_id="r1",
        type="fetch_content",
        ok=True,
        content=text,
        sources=(Source("web", "https://arxiv.org/abs/1"),),
        grounded=True,
    )
    o = IterationOutcome.from_response(resp, integrated_chunks=1, question="q?")
    assert o == IterationOutcome(
        request_type="fetch_content",
        ok=True,
        request_id="r1",
        grounded=True,
        source_kinds=("web",),
        integrated_chunks=1,
        content_chars=len(text),
        answer=text,
        question="q?",
    )
    assert Judge().judge(o).outcome == "success"


def test_a_thin_answer_is_not_counted_as_learned():
    # A changelog entry holding only its signature line: nothing beyond the question's words.
    thin = "python3.11 (3.11.2-6+deb12u8) bookworm; urgency=medium * Non-maintainer upload."
    o = outcome(
        **{**GROUNDED_ANSWER, "answer": thin, "relevance": 1.0},
        question="What is known about python3.11 3.11.2-6+deb12u8?",
    )
    v = Judge().judge(o)
    assert v.outcome == "could_not_verify" and v.reason.startswith("thin:")
    # A precise question may rightly have a short answer: only overviews are held to it.
    short = outcome(
        **{**GROUNDED_ANSWER, "answer": "Quokkas live on Rottnest Island.", "relevance": 1.0},
        question="Where do quokkas live?",
    )
    assert Judge().judge(short).outcome == "success"
    ok = Judge().judge(outcome(**{**GROUNDED_ANSWER, "relevance": 1.0}))
    assert ok.outcome == "success" and "focus" in ok.reason
    # The verdict says what it judged: the gate's relevance and the passage's focus.
    assert ok.relevance == 1.0 and ok.focus is not None and 0.0 < ok.focus <= 1.0


# -- table: success only when grounded and integrated ------------------------------------------------

MODELS = {
    "none": lambda: None,
    "supported": lambda: FakeLLM('{"verdict": "supported"}'),
    "unsupported": lambda: FakeLLM('{"verdict": "unsupported"}'),
    "contradicted": lambda: FakeLLM('{"verdict": "contradicted"}'),
    "garbage": lambda: FakeLLM("sure!"),
    "raising": lambda: RaisingLLM(OSError("down")),
}


SUBSTANTIVE = "An answer naming enough: tides rise twice daily under lunar and solar gravity."


def test_table_never_success_unless_grounded_and_integrated():
    judges = {name: Judge(make()) for name, make in MODELS.items()}
    kinds_options = [
        (),
        ("llm",),
        ("web",),
        ("local",),
        ("corpus",),
        ("summary", "memory"),
        ("llm", "web"),
    ]
    seen = set()
    n = 0
    for rtype, ok, refused, grounded, error, kinds, chunks, chars, model in itertools.product(
        ["question", "fetch_content", "read_local", "summarize"],
        [True, False],
        [True, False],
        [True, False],
        ["", "boom"],
        kinds_options,
        [0, 1, 7],
        [0, 120],
        list(MODELS),
    ):
        o = IterationOutcome(
            request_type=rtype,
            ok=ok,
            refused=refused,
            grounded=grounded,
            error=error,
            source_kinds=kinds,
            integrated_chunks=chunks,
            content_chars=chars,
            answer=SUBSTANTIVE if chars else "",
            question="A question?",
        )
        v = judges[model].judge(o)
        n += 1
        assert v.outcome in OUTCOMES and v.basis in BASES
        really_grounded = (
            grounded and chunks > 0 and chars > 0 and bool(GROUNDING_KINDS.intersection(kinds))
        )
        # A model can only lower a grounded success (never raise anything to success).
        lowered = model in ("unsupported", "contradicted")
        want_success = ok and not refused and not error and really_grounded and not lowered
        assert (v.outcome == "success") == want_success, o
        if refused:
            assert v.outcome == "not_applicable"
        elif not ok:
            assert v.outcome == "failure" and v.basis == "deterministic"
        if v.basis == "llm":
            assert model in ("supported", "unsupported", "contradicted")
            assert not grounded or model != "supported"
            assert v.outcome == ("failure" if model == "contradicted" else "could_not_verify")
        if model in ("none", "garbage", "raising"):
            assert v.basis != "llm"
            assert v.outcome != "failure" or not ok
        seen.add((v.outcome, v.basis))
    assert n == 4 * 2 * 2 * 2 * 2 * 7 * 3 * 2 * 6
    assert seen == {
        ("not_applicable", "deterministic"),
        ("failure", "deterministic"),
        ("success", "deterministic"),
        ("could_not_verify", "deterministic"),
        ("could_not_verify", "fail_safe"),
        ("could_not_verify", "llm"),
        ("failure", "llm"),
    }


# -- a real judge model over loopback HTTP ---------------------------------------------------------


def client(base_url: str, timeout_s: float = 5.0) -> LLMClient:
    cfg = LLMConfig(base_url=base_url, model="judge", timeout_s=timeout_s, max_retries=1)
    return LLMClient(cfg, sleep=lambda s: None)


@pytest.mark.parametrize(
    ("reply", "want"),
    [
        ('{"verdict": "contradicted"}', ("failure", "llm")),
        ('{"verdict": "supported"}', ("could_not_verify", "llm")),
        ('{"verdict": "unsupported"}', ("could_not_verify", "llm")),
        ("It is supported, I am sure.", ("could_not_verify", "fail_safe")),
        ('```json\n{"verdict": "contradicted"}\n```', ("failure", "llm")),
    ],
)
def test_loopback_judge_model_replies(reply, want):
    with OpenAIServer(default=reply) as srv, client(srv.base_url) as llm:
        v = Judge(llm).judge(outcome())
    assert (v.outcome, v.basis) == want
    (req,) = srv.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["temperature"] == 0.0 and req.body["max_tokens"] == 32
    assert "What are sedenions?" in req.body["messages"][1]["content"]


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("garbage", {}),
        ("no_choices", {}),
        ("empty_content", {}),
        ("500", {}),
        ("500", {"status": 401}),
        ("429", {"retry_after": 0.01}),
        ("timeout", {"hang_s": 2.0}),
        ("oversize", {"size": 2 << 20}),
    ],
)
def test_loopback_judge_model_faults_are_could_not_verify(mode, options):
    with OpenAIServer(default='{"verdict": "supported"}') as srv:
        srv.fault(mode, times=2, **options)  # every attempt (1 + 1 retry) misbehaves
        with client(srv.base_url, timeout_s=0.3) as llm:
            j = Judge(llm)
            v = j.judge(outcome(answer="Verified: it worked."))
    assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe")
    assert j.model_errors == 1
    assert srv.requests, "the judge model was really asked"


def test_loopback_grounded_success_does_not_need_the_model():
    with OpenAIServer(default='{"verdict": "contradicted"}') as srv, client(srv.base_url) as llm:
        v = Judge(llm).judge(outcome(**GROUNDED_FETCH))
    assert (v.outcome, v.basis) == ("success", "deterministic")
    assert srv.requests == []


def test_judge_model_server_down_is_could_not_verify_never_success():
    with client(closed_port_url()) as llm:
        j = Judge(llm)
        verdicts = [
            j.judge(outcome(answer=a))
            for a in ("It worked.", "Success: verified.", "The fetch succeeded.")
        ]
    for v in verdicts:
        assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe")
        assert "LLMUnavailable" in v.reason
    assert j.model_errors == 3
    assert j.outcomes["success"] == 0


# -- relevance and novelty ------------------------------------------------------------------------


def test_an_irrelevant_passage_is_a_failure_even_when_grounded():
    v = Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.2))
    assert (v.outcome, v.basis) == ("failure", "deterministic") and "irrelevant" in v.reason
    assert Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.95)).outcome == "success"
    # The threshold is the judge's: a stricter judge refuses what the default accepts.
    assert (
        Judge(relevant=0.99).judge(outcome(**GROUNDED_ANSWER, relevance=0.95)).outcome == "failure"
    )


def test_an_ambiguous_ranked_answer_is_could_not_verify_not_success():
    # The corpus ranked a passage it did not give within DECISIVE of its best: stored,
    # but not claimed as learned.
    v = Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.9, margin=0.05))
    assert (v.outcome, v.basis) == ("could_not_verify", "deterministic")
    assert v.reason.startswith("ambiguous") and "0.05" in v.reason
    assert Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.9, margin=0.5)).outcome == (
        "success"
    )
    # A source that does not rank (a fetch, a model) gives no margin: nothing changes.
    assert Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.9, margin=None)).outcome == (
        "success"
    )
    # The threshold is the judge's; relevance and novelty decide first.
    assert (
        Judge(decisive=0.0).judge(outcome(**GROUNDED_ANSWER, relevance=0.9, margin=0.05)).outcome
        == "success"
    )
    assert (
        Judge().judge(outcome(**GROUNDED_ANSWER, relevance=0.2, margin=0.05)).outcome == "failure"
    )
    known = {**GROUNDED_ANSWER, "integrated_chunks": 0}
    v = Judge().judge(outcome(**known, relevance=0.9, margin=0.05, known_chunks=1, known_trace=3))
    assert v.outcome == "not_applicable" and v.reason.startswith("already known")
    # ... and says the tie makes it no answer to the question (the learner does not
    # count the question answered); a decisive or unranked source says nothing more.
    assert "within 0.05 < 0.30 of its best: not an answer to the question" in v.reason
    assert not v.decisive  # the task-commitment drive asks for the runners-up
    best = {**GROUNDED_ANSWER, "integrated_chunks": 1, "best_known": True}
    v = Judge().judge(outcome(**best, relevance=0.9, margin=0.05, known_chunks=1, known_trace=3))
    assert v.reason.startswith("already known: memory holds the best passage") and not v.decisive
    for margin in (0.3, None):
        v = Judge().judge(
            outcome(**known, relevance=0.9, margin=margin, known_chunks=1, known_trace=3)
        )
        assert v.reason == "already known: memory holds this content (trace 3); nothing new stored"
        assert v.decisive
    assert Judge().decisive_margin(None) and Judge().decisive_margin(0.3)
    assert not Judge().decisive_margin(0.29)


def test_new_chunks_below_a_best_passage_memory_held_are_already_known():
    base = {**GROUNDED_ANSWER, "integrated_chunks": 2}
    v = Judge().judge(
        outcome(**base, relevance=0.9, known_chunks=1, known_trace=4, best_known=True)
    )
    assert (v.outcome, v.basis) == ("not_applicable", "deterministic")
    assert v.reason.startswith("already known: memory holds the best passage (trace 4)")
    assert "2 chunk(s)" in v.reason
    # A known passage ranked below a new best one does not make it known.
    v = Judge().judge(outcome(**base, relevance=0.9, known_chunks=1, best_known=False))
    assert v.outcome == "success"


def test_content_already_in_memory_is_already_known_not_success():
    v = Judge().judge(
        outcome(
            **{**GROUNDED_ANSWER, "integrated_chunks": 0},
            relevance=0.9,
            known_chunks=1,
            known_trace=7,
        )
    )
    assert (
        v.outcome == "not_applicable" and v.reason.startswith("already known") and "7" in v.reason
    )


@pytest.mark.parametrize(
    ("said", "expected"),
    [("contradicted", "failure"), ("unsupported", "could_not_verify"), ("supported", "success")],
)
def test_a_model_can_lower_a_grounded_success_but_never_raise_one(said, expected):
    llm = FakeLLM(f'{{"verdict": "{said}"}}')
    v = Judge(llm).judge(outcome(**GROUNDED_ANSWER, relevance=0.9))
    assert v.outcome == expected and len(llm.calls) == 1
    # Whatever the model says, a failure stays a failure (it is not even asked).
    llm2 = FakeLLM('{"verdict": "supported"}')
    assert Judge(llm2).judge(outcome(**GROUNDED_ANSWER, relevance=0.1)).outcome == "failure"
    assert llm2.calls == []


def test_a_broken_model_leaves_a_grounded_success_alone():
    for llm in (FakeLLM("I think so"), RaisingLLM(RuntimeError("down"))):
        assert Judge(llm).judge(outcome(**GROUNDED_ANSWER, relevance=0.9)).outcome == "success"


# -- structured output: detected once per server ---------------------------------------------------

PROSE = "You've already provided a concise answer, so I would say it looks fine."
JSON_VERDICT = '{"verdict": "contradicted"}'


@pytest.mark.parametrize("status", [400, 422, 500])
@pytest.mark.parametrize(
    ("formats", "mode", "refused"),
    [
        (("json_schema", "json_object"), "json_schema", 0),
        (("json_object",), "json_object", 1),  # llama-cpp-python's own form (it sends 500)
        ((), "plain", 2),
    ],
)
def test_the_judge_asks_for_json_the_way_the_server_takes_it(formats, mode, refused, status):
    # A model that answers prose unless generation is constrained to the schema.
    server = OpenAIServer(
        default=PROSE, formats=formats, structured=JSON_VERDICT, format_refusal=status
    )
    with (
        server as srv,
        client(srv.base_url) as llm,
    ):
        j = Judge(llm)
        first = j.judge(outcome())
        second = j.judge(outcome())
        assert llm.format_mode == mode
        assert llm.total_usage.format_refusals == refused
    sent = [r.body.get("response_format", {}).get("type", "plain") for r in srv.requests]
    tried = ["json_schema", "json_object", "plain"][: refused + 1]
    assert sent == [*tried, mode]  # detected on the first call, remembered for the second
    if mode == "plain":  # prose: the verdict stays where the rails put it
        assert (first.outcome, first.basis) == ("could_not_verify", "fail_safe")
        assert j.model_garbage == 2
    else:
        assert (first.outcome, first.basis) == (second.outcome, second.basis) == ("failure", "llm")
        sch = srv.requests[refused].body["response_format"]
        schema = sch["json_schema"]["schema"] if mode == "json_schema" else sch["schema"]
        assert schema == VERDICT_SCHEMA


def test_a_400_for_another_reason_is_not_taken_for_a_missing_feature():
    # Every way refused (say, the context is too long): the error surfaces, no mode is kept.
    with OpenAIServer(default=PROSE) as srv, client(srv.base_url) as llm:
        srv.fault("500", times=3, status=400)
        j = Judge(llm)
        v = j.judge(outcome())
        assert (v.outcome, v.basis) == ("could_not_verify", "fail_safe") and j.model_errors == 1
        assert llm.format_mode is None


def test_a_server_error_while_detecting_is_retried_not_taken_for_a_refusal():
    with (
        OpenAIServer(default=PROSE, structured=JSON_VERDICT) as srv,
        client(srv.base_url) as llm,
    ):
        srv.fault("500")  # a 500 that does not name response_format
        v = Judge(llm).judge(outcome())
        assert (v.outcome, v.basis) == ("failure", "llm")
        assert llm.format_mode == "json_schema" and llm.total_usage.format_refusals == 0
    assert [r.body["response_format"]["type"] for r in srv.requests] == ["json_schema"] * 2
