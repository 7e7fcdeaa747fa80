"""Chaperone end to end through real parts: the safety filter and fetcher against the
loopback HTTPS content server, the LLM client against the loopback OpenAI server,
the offline answerer over the Python docs and the incoming dir, and the event bus
with a real store. All four request types, LLM fault modes falling back offline,
refusals with their check, failures, the capped interaction log and the events."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sentient_core.events import EventBus, read_events
from sentient_core.learning.chaperone import OFFLINE_SUMMARY_REF, Chaperone, extract_data
from sentient_core.learning.fetch import Fetcher
from sentient_core.learning.llm import LLMClient, LLMConfig
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.safety import SafetyFilter, SafetyPolicy
from sentient_core.store import Store
from sentient_core.vocab import ChaperoneRequest, Source, model_ref
from tests.servers.content import ContentServer
from tests.servers.openai import OpenAIServer, closed_port_url

LLM_ANSWER = "Kuramoto oscillators lock phase above a critical coupling."
CANNED = {"oscillator": LLM_ANSWER, "holographic memory stores": "A short summary."}
WITH_Q = "How does the with statement use a context manager?"


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def content():
    with ContentServer(drip_s=0.05, drip_chunks=200) as srv:
        yield srv


@pytest.fixture
def llm_server():
    with OpenAIServer(CANNED) as srv:
        yield srv


@pytest.fixture
def incoming(tmp_path) -> Path:
    path = tmp_path / "incoming"
    path.mkdir()
    return path


@pytest.fixture
def safety(incoming, content) -> SafetyFilter:
    policy = SafetyPolicy(
        incoming_dir=str(incoming),
        allowed_domains=("localhost",),
        allowed_host_ports=(f"localhost:{content.port}",),  # the server's non-default port
        allow_private_addresses=True,  # test configuration: the content server is loopback
        rate_limit_requests=1000,
    )
    return SafetyFilter(policy, resolver=lambda host: ["127.0.0.1"])


@pytest.fixture
def fetcher(content, safety):
    with Fetcher(safety, verify=content.ca_path, max_duration_s=0.5) as f:
        yield f


@pytest.fixture
def answerer(incoming) -> CorpusAnswerer:
    return CorpusAnswerer([incoming])


@pytest.fixture
def bus():
    events = []
    b = EventBus()
    b.subscribe(events.append)
    b.seen = events  # type: ignore[attr-defined]
    return b


def make_llm(base_url: str, **cfg) -> LLMClient:
    return LLMClient(LLMConfig(base_url=base_url, **cfg), sleep=lambda s: None, environ={})


@pytest.fixture
def llm(llm_server):
    with make_llm(llm_server.base_url) as client:
        yield client


def req(kind: str, n: int = 0, **fields) -> ChaperoneRequest:
    return ChaperoneRequest(id=f"r{n}", type=kind, **fields)


def kinds(bus) -> list[str]:
    return [e.kind for e in bus.seen]


# --------------------------------------------------------------------------- question


def test_question_with_an_llm_is_answered_by_the_llm_and_not_grounded(
    safety, fetcher, llm, answerer, bus
):
    chap = Chaperone(safety, fetcher, llm=llm, answerer=answerer, events=bus)
    r = chap.handle(req("question", question="Why do oscillators synchronise?"))
    assert r.ok and not r.refused and r.error == ""
    assert r.content == LLM_ANSWER
    # The configured host and model, never the model name the response claims.
    assert r.sources == (Source("llm", model_ref(llm.config.base_url, llm.config.model)),)
    assert r.sources[0].id.startswith("llm:127.0.0.1:")
    assert r.grounded is False
    assert r.tokens > 0 and r.tokens == llm.total_usage.total_tokens
    assert kinds(bus) == ["chaperone.request", "chaperone.response"]
    assert chap.counters["llm_calls"] == 1 and chap.counters["offline_answers"] == 0


def test_question_offline_is_answered_from_the_python_docs_and_grounded(
    safety, fetcher, answerer, bus
):
    chap = Chaperone(safety, fetcher, answerer=answerer, events=bus)
    r = chap.handle(req("question", question=WITH_Q))
    assert r.ok and r.grounded
    assert "context manager" in r.content
    assert r.sources and all(s.kind == "corpus" and s.ref.startswith("pydoc:") for s in r.sources)
    assert len(set(r.sources)) == len(r.sources)
    assert r.tokens == 0
    assert chap.counters["offline_answers"] == 1


def test_question_uses_the_topic_when_there_is_no_question(safety, fetcher, answerer):
    r = Chaperone(safety, fetcher, answerer=answerer).handle(
        req("question", topic="global statement identifiers")
    )
    assert r.ok and r.grounded


def test_question_with_nothing_above_threshold_fails_cleanly(safety, fetcher, answerer):
    chap = Chaperone(safety, fetcher, answerer=answerer)
    r = chap.handle(req("question", question="zxqvbl florbix quuxnarf"))
    assert not r.ok and not r.refused and r.content == "" and r.sources == ()
    assert "no passage" in r.error
    empty = chap.handle(req("question", 1))
    assert not empty.ok and "without a question" in empty.error


@pytest.mark.parametrize("mode", ["down", "500", "garbage", "no_choices", "timeout", "drip"])
def test_llm_failure_falls_back_to_the_offline_answer_and_is_recorded(
    safety, fetcher, answerer, bus, llm_server, mode
):
    if mode == "down":
        base, cfg = closed_port_url(), {}
    else:
        base, cfg = llm_server.base_url, {"timeout_s": 0.3, "max_retries": 1}
        # 500s fail both attempts; bad bodies and timed-out requests are not retried.
        times = 2 if mode == "500" else 1
        llm_server.fault(mode, times=times, **({"hang_s": 3.0} if mode == "timeout" else {}))
    with make_llm(base, **cfg) as llm:
        chap = Chaperone(safety, fetcher, llm=llm, answerer=answerer, events=bus)
        r = chap.handle(req("question", question=WITH_Q))
    assert mode == "down" or llm_server.pending_faults == 0
    assert r.ok and r.grounded and r.error == ""
    assert r.sources[0].kind == "corpus"
    assert "context manager" in r.content
    c = chap.counters
    assert (c["llm_calls"], c["llm_errors"], c["fallbacks"], c["ok"]) == (1, 1, 1, 1)
    assert kinds(bus) == ["chaperone.request", "error", "chaperone.response"]
    err = bus.seen[1]
    assert err.where == "llm" and err.error.startswith(
        ("LLMUnavailable", "LLMBadResponse", "LLMHTTPError")
    )
    assert bus.seen[2].fallback == "offline"
    assert [i.kind for i in chap.interactions()] == ["request", "error", "response"]


def test_llm_failure_without_an_answerer_is_a_failed_response(safety, fetcher):
    with make_llm(closed_port_url(), max_retries=0) as llm:
        r = Chaperone(safety, fetcher, llm=llm).handle(req("question", question="anything"))
    assert not r.ok and "LLMUnavailable" in r.error


def test_no_llm_and_no_answerer(safety, fetcher):
    r = Chaperone(safety, fetcher).handle(req("question", question="anything"))
    assert not r.ok and "no LLM and no offline answerer" in r.error


# --------------------------------------------------------------------------- fetch_content


@pytest.mark.parametrize(
    ("path", "mime", "needle"),
    [
        ("/page.html", "text/html", "Kuramoto oscillators synchronise"),
        ("/paper.pdf", "application/pdf", "Superposed patterns"),
        ("/data.json", "application/json", "2 is the only even prime"),
        ("/notes.md", "text/markdown", "Sixteen-dimensional algebra"),
    ],
)
def test_fetch_content_is_grounded_text_saved_in_incoming(
    safety, fetcher, content, incoming, bus, path, mime, needle
):
    chap = Chaperone(safety, fetcher, events=bus)
    url = content.url(path)
    r = chap.handle(req("fetch_content", url=url))
    assert r.ok and r.grounded and not r.refused and r.error == ""
    assert needle in r.content
    assert r.sources == (Source("web", url),)
    assert r.mime == mime and r.bytes > 0
    saved = Path(r.saved_path)
    assert saved.parent == incoming.resolve() and saved.is_file()
    assert saved.stat().st_size == r.bytes
    assert kinds(bus) == ["chaperone.request", "chaperone.response"]
    assert bus.seen[1].saved_path == r.saved_path


def test_fetch_follows_allowed_redirects_and_reports_the_final_url(safety, fetcher, content):
    r = Chaperone(safety, fetcher).handle(req("fetch_content", url=content.url("/hop/2")))
    assert r.ok and r.sources == (Source("web", content.url("/page.html")),)


@pytest.mark.parametrize(
    ("url", "check"),
    [
        ("https://evil.example/page.html", "domain_allowlist"),
        ("http://localhost/page.html", "scheme"),
        ("https://user:pw@localhost/page.html", "userinfo"),
        ("https://127.0.0.1/page.html", "ip_literal"),
        ("/redirect/offlist", "redirect"),
        ("/octet", "mime"),
        ("/oversize/declared", "max_bytes"),
    ],
)
def test_refusals_carry_the_check_and_are_logged(safety, fetcher, content, bus, url, check):
    if url.startswith("/"):
        url = content.url(url)
    chap = Chaperone(safety, fetcher, events=bus)
    r = chap.handle(req("fetch_content", 7, url=url))
    assert r.refused and not r.ok and not r.grounded
    assert r.check == check and r.reason
    assert r.content == "" and r.saved_path == ""
    assert kinds(bus) == ["chaperone.request", "refusal", "chaperone.response"]
    refusal = bus.seen[1]
    assert (refusal.check, refusal.reason, refusal.url) == (check, r.reason, url)
    logged = [i for i in chap.interactions() if i.kind == "refusal"]
    assert len(logged) == 1 and logged[0].data["check"] == check
    assert logged[0].request_id == "r7"
    assert chap.counters["refused"] == 1
    assert safety.counters()[check] >= 1


def test_fetch_failures_are_failed_responses(safety, fetcher, content):
    chap = Chaperone(safety, fetcher)
    r = chap.handle(req("fetch_content", url=content.url("/status/500")))
    assert not r.ok and not r.refused and "FetchStatusError" in r.error
    slow = chap.handle(req("fetch_content", 1, url=content.url("/drip")))
    assert not slow.ok and "FetchTimeout" in slow.error
    nourl = chap.handle(req("fetch_content", 2))
    assert not nourl.ok and "needs a url" in nourl.error
    assert chap.counters["failed"] == 3


def test_fetch_server_down_is_a_failed_response(incoming, content):
    port = int(closed_port_url().rsplit(":", 1)[1].split("/")[0])
    policy = SafetyPolicy(
        incoming_dir=str(incoming),
        allowed_domains=("localhost",),
        allowed_host_ports=(f"localhost:{port}",),  # allowed: nothing listens there
        allow_private_addresses=True,
    )
    safety = SafetyFilter(policy, resolver=lambda host: ["127.0.0.1"])
    with Fetcher(safety, verify=content.ca_path, max_duration_s=0.5) as fetcher:
        r = Chaperone(safety, fetcher).handle(
            req("fetch_content", url=f"https://localhost:{port}/page.html")
        )
    assert not r.ok and not r.refused and "FetchError" in r.error


def test_fetched_content_becomes_answerable_offline(safety, fetcher, content, answerer):
    chap = Chaperone(safety, fetcher, answerer=answerer)
    q = "Which sixteen-dimensional algebra is not a division algebra?"
    fetched = chap.handle(req("fetch_content", url=content.url("/notes.md")))
    assert fetched.ok
    r = chap.handle(req("question", 1, question=q))
    assert r.ok and Source("local", fetched.saved_path) == r.sources[0]
    assert "Sedenions" in r.content


# --------------------------------------------------------------------------- read_local


def test_read_local_reads_allowed_files_only(safety, fetcher, incoming, tmp_path, bus):
    (incoming / "sub").mkdir()
    note = incoming / "sub" / "note.md"
    note.write_text("# Field notes\n\nThe orientation field has sixteen axes.\n")
    (tmp_path / "secret.txt").write_text("do not read")
    os.symlink(tmp_path / "secret.txt", incoming / "escape.txt")
    (incoming / "binary.txt").write_bytes(b"\x00\x01" * 50)
    chap = Chaperone(safety, fetcher, events=bus)

    r = chap.handle(req("read_local", path="sub/note.md"))
    assert r.ok and r.grounded and "sixteen axes" in r.content
    assert r.sources == (Source("local", str(note.resolve())),)
    assert r.mime == "text/markdown" and r.bytes == note.stat().st_size

    for i, path in enumerate(
        ["../secret.txt", "escape.txt", str(tmp_path / "secret.txt"), "/proc/self/environ"]
    ):
        bad = chap.handle(req("read_local", 10 + i, path=path))
        assert bad.refused and bad.check == "local_path", path
        assert "do not read" not in bad.content

    missing = chap.handle(req("read_local", 20, path="nope.txt"))
    assert not missing.ok and not missing.refused and "FetchError" in missing.error
    binary = chap.handle(req("read_local", 21, path="binary.txt"))
    assert not binary.ok and "MismatchedContent" in binary.error and binary.bytes == 100
    assert kinds(bus).count("refusal") == 4
    assert chap.counters["by_type"] == {"read_local": 7}


# --------------------------------------------------------------------------- summarize

LONG = (
    "Holographic memory stores each trace as a fixed-length code. "
    "The stock market closed higher on Tuesday. "
    "Recall in holographic memory ranks every stored code by cosine. "
    "A good code makes related traces score high in holographic memory. "
    "Bananas are rich in potassium."
)


def test_summarize_text_with_the_llm(safety, fetcher, llm, llm_server):
    r = Chaperone(safety, fetcher, llm=llm).handle(req("summarize", text=LONG))
    assert r.ok and not r.grounded
    assert r.content == "A short summary."
    assert r.sources == (Source("summary", model_ref(llm.config.base_url, llm.config.model)),)
    assert r.tokens > 0
    body = llm_server.requests[-1].body
    assert body["max_tokens"] == 300 and body["messages"][-1]["content"] == LONG


def test_summarize_text_offline_is_extractive_and_not_grounded(safety, fetcher, answerer):
    r = Chaperone(safety, fetcher, answerer=answerer).handle(req("summarize", text=LONG))
    assert r.ok and not r.grounded
    assert r.sources == (Source("summary", OFFLINE_SUMMARY_REF),)
    assert "Bananas" not in r.content and "holographic memory" in r.content


def test_summarize_a_local_file_offline_is_grounded(safety, fetcher, incoming):
    (incoming / "long.txt").write_text(LONG)
    r = Chaperone(safety, fetcher).handle(req("summarize", path="long.txt"))
    assert r.ok and r.grounded
    assert r.sources == (
        Source("summary", OFFLINE_SUMMARY_REF),
        Source("local", str((incoming / "long.txt").resolve())),
    )


def test_summarize_a_url_with_the_llm_keeps_the_web_source(safety, fetcher, llm, content):
    url = content.url("/page.html")
    r = Chaperone(safety, fetcher, llm=llm).handle(req("summarize", url=url))
    assert r.ok and not r.grounded and r.saved_path
    assert r.sources == (
        Source("summary", model_ref(llm.config.base_url, llm.config.model)),
        Source("web", url),
    )


def test_summarize_falls_back_offline_when_the_llm_fails(safety, fetcher, incoming, bus):
    (incoming / "long.txt").write_text(LONG)
    with make_llm(closed_port_url(), max_retries=0) as llm:
        chap = Chaperone(safety, fetcher, llm=llm, events=bus)
        r = chap.handle(req("summarize", path="long.txt"))
    assert r.ok and r.grounded and r.error == ""
    assert r.sources[0] == Source("summary", OFFLINE_SUMMARY_REF)
    assert chap.counters["fallbacks"] == 1
    assert "error" in kinds(bus)


def test_summarize_refusal_and_nothing_to_summarize(safety, fetcher):
    chap = Chaperone(safety, fetcher)
    r = chap.handle(req("summarize", url="https://evil.example/x.html"))
    assert r.refused and r.check == "domain_allowlist"
    r = chap.handle(req("summarize", 1))
    assert not r.ok and "needs text" in r.error


# --------------------------------------------------------------------------- logging


def test_interaction_log_is_capped_and_stamped_by_the_clock(safety, fetcher, answerer):
    ticks = iter(range(1000, 2000))
    chap = Chaperone(safety, fetcher, answerer=answerer, log_size=5, clock=lambda: next(ticks))
    for i in range(4):
        chap.handle(req("question", i, question=WITH_Q))
    log = chap.interactions()
    assert len(log) == 5  # 8 entries made, the 5 newest kept
    assert [e.seq for e in log] == [3, 4, 5, 6, 7]
    assert [e.t for e in log] == [1003.0, 1004.0, 1005.0, 1006.0, 1007.0]
    assert (log[-1].kind, log[-1].request_id) == ("response", "r3")
    assert [e.kind for e in chap.interactions(last=2)] == ["request", "response"]
    assert chap.interactions(last=0) == []
    assert log[-1].data["preview"] and len(log[-1].data["preview"]) <= 200
    with pytest.raises(ValueError):
        Chaperone(safety, fetcher, log_size=0)


def test_every_type_produces_a_response_and_events_reach_the_audit_log(
    safety, fetcher, content, incoming, answerer, tmp_path
):
    (incoming / "a.txt").write_text(LONG)
    with Store.open(str(tmp_path / "store"), code_dim=256) as store:
        bus = EventBus(store)
        chap = Chaperone(safety, fetcher, answerer=answerer, events=bus)
        requests = [
            req("question", 0, question=WITH_Q),
            req("fetch_content", 1, url=content.url("/plain.txt")),
            req("read_local", 2, path="a.txt"),
            req("summarize", 3, text=LONG),
            req("fetch_content", 4, url="https://evil.example/"),
        ]
        responses = [chap.handle(r) for r in requests]
        assert bus.flush() == 11
        events = [e for _, e in read_events(store)]
    assert [r.request_id for r in responses] == ["r0", "r1", "r2", "r3", "r4"]
    assert [r.type for r in responses] == [q.type for q in requests]
    assert [r.ok for r in responses] == [True, True, True, True, False]
    assert responses[4].refused
    assert [e.kind for e in events] == [
        *["chaperone.request", "chaperone.response"] * 4,
        "chaperone.request",
        "refusal",
        "chaperone.response",
    ]
    assert [e.id for e in events[::2][:4]] == ["r0", "r1", "r2", "r3"]
    assert events[9].check == "domain_allowlist"
    c = chap.counters
    assert (c["requests"], c["ok"], c["refused"], c["failed"]) == (5, 4, 1, 0)
    assert c["by_type"] == {"question": 1, "fetch_content": 2, "read_local": 1, "summarize": 1}


def test_an_unexpected_exception_becomes_a_failed_response(safety, bus):
    class BrokenFetcher:
        def fetch(self, url):
            raise RuntimeError("disk on fire")

    chap = Chaperone(safety, BrokenFetcher(), events=bus)
    r = chap.handle(req("fetch_content", url="https://localhost/x"))
    assert not r.ok and r.error == "internal error: RuntimeError: disk on fire"
    assert chap.counters["internal_errors"] == 1
    assert kinds(bus) == ["chaperone.request", "error", "chaperone.response"]


def test_extract_data_matches_extract_text(tmp_path):
    from sentient_core.ingest import IngestError, extract_text
    from tests.pdfgen import text_pdf

    samples = {
        "a.html": b"<html><head><meta charset='latin-1'></head><body><p>caf\xe9</p></body></html>",
        "b.json": b'{"k": "v", "n": [1, "two"]}',
        "c.md": b"\xef\xbb\xbf# Title\r\n\r\nBody\r\n",
        "d.pdf": text_pdf([["Page one"], ["Page two"]]),
        "e.txt": b"plain",
    }
    for name, data in samples.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert extract_data(str(path), data) == extract_text(path).text, name
    for name, data in {"x.txt": b"", "y.json": b"{oops", "z.pdf": b"nope", "w.exe": b"MZ"}.items():
        with pytest.raises(IngestError):
            extract_data(name, data)


def test_a_model_name_from_a_response_never_becomes_provenance(safety, fetcher, answerer):
    # The server claims a path-like model name; the configured one has markup in it.
    with OpenAIServer(model="../../../etc/passwd") as server:
        llm = make_llm(server.base_url, model="evil/<script>..")
        chap = Chaperone(safety, fetcher, llm=llm, answerer=answerer)
        r = chap.handle(req("question", question="Why do oscillators synchronise?"))
        llm.close()
        host = server.base_url.split("://")[1].split("/")[0]
    assert r.ok and len(r.sources) == 1
    ref = r.sources[0].ref
    assert "etc" not in ref and "passwd" not in ref and "<" not in ref and "/." not in ref
    assert ref == f"{host}/evil_script"
    assert r.passages[0].source.id == f"llm:{host}/evil_script"
