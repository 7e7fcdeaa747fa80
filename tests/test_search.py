"""The search step (issue 24, item 4): providers, the safety filter on every candidate,
the budget, and the learner finding a new source end to end.

Real HTTP throughout: a loopback SearXNG-compatible server (tests/servers/searxng.py)
and the HTTPS content server with its test CA (tests/servers/content.py).
"""

from __future__ import annotations

import os

import httpx
import pytest

from sentient_core.autonomy.budget import Budget, BudgetCaps
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.events import EventBus, read_events
from sentient_core.learning.chaperone import Chaperone
from sentient_core.learning.fetch import Fetcher
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.safety import DEFAULT_ALLOWED_DOMAINS, SafetyFilter, SafetyPolicy
from sentient_core.learning.searching import SearchStep
from sentient_core.learning.session import (
    FetcherSettings,
    LearnerSettings,
    build_learner,
    incoming_dir,
)
from sentient_core.search import (
    LocalProvider,
    SearchError,
    SearchHit,
    SearchResponseError,
    SearchResults,
    SearchSettings,
    SearchTimeout,
    SearxngProvider,
    provider_from,
)
from sentient_core.vocab import ChaperoneRequest, SessionStats
from tests.servers.content import ContentServer, closed_port
from tests.servers.searxng import SearxngServer, result

ANSWER_PAGE = (
    b"<!doctype html><html><head><title>Kuramoto model</title></head><body>"
    b"<h1>The Kuramoto model</h1><p>Kuramoto oscillators synchronise when the coupling"
    b" strength between the oscillators exceeds a critical coupling value; below it their"
    b" phases drift apart.</p><h2>Unrelated</h2><p>"
    + b"Bread rises because yeast ferments sugar into carbon dioxide and the gluten holds it. " * 9
    + b"</p></body></html>"
)
QUESTION = "When do Kuramoto oscillators synchronise?"


# ----------------------------------------------------------------------------- providers


def test_searxng_provider_reads_results_over_http_and_ignores_extra_fields():
    items = [result(f"https://docs.python.org/{i}", f"T{i}", f"snippet {i}") for i in range(5)]
    with SearxngServer(items) as srv:
        provider = SearxngProvider(srv.url + "/", max_results=3)
        try:
            found = provider.search("python  loops")
        finally:
            provider.close()
        assert srv.queries == ["python  loops"] and srv.formats == ["json"]
    assert [h.url for h in found.hits] == [f"https://docs.python.org/{i}" for i in range(3)]
    assert found.hits[1] == SearchHit(
        url="https://docs.python.org/1", title="T1", snippet="snippet 1", provider="searxng"
    )
    assert found.dropped == 0


def test_searxng_malformed_entries_are_dropped_and_counted():
    with SearxngServer([result("https://github.com/a", "A")], mode="bad-items") as srv:
        provider = SearxngProvider(srv.url)
        found = provider.search("q")
        provider.close()
    assert [h.url for h in found.hits] == ["https://github.com/a"]
    assert found.dropped == 3


@pytest.mark.parametrize("mode", ["garbage", "no-results", "status", "html", "huge"])
def test_searxng_hostile_answers_raise_search_response_error(mode):
    with SearxngServer([result("https://github.com/a")], mode=mode) as srv:
        provider = SearxngProvider(srv.url)
        with pytest.raises(SearchResponseError) as info:
            provider.search("q")
        provider.close()
    assert info.value.provider == "searxng" and info.value.reason


def test_searxng_unreachable_and_timeout_are_search_errors():
    provider = SearxngProvider(f"http://127.0.0.1:{closed_port()}", timeout_s=2.0)
    with pytest.raises(SearchError) as info:
        provider.search("q")
    provider.close()
    assert not isinstance(info.value, SearchResponseError)

    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no answer", request=request)

    slow = SearxngProvider("http://search.invalid", transport=httpx.MockTransport(hang))
    with pytest.raises(SearchTimeout):
        slow.search("q")
    slow.close()


def test_provider_from_settings():
    assert provider_from(SearchSettings()) is None
    assert isinstance(provider_from(SearchSettings(provider="local"), ["/nowhere"]), LocalProvider)
    with pytest.raises(ArgumentError, match=r"search\.url"):
        provider_from(SearchSettings(provider="searxng"))
    with pytest.raises(ArgumentError, match="http"):
        provider_from(SearchSettings(provider="searxng", url="file:///etc/passwd"))
    made = provider_from(SearchSettings(provider="searxng", url="http://localhost:8888"))
    assert isinstance(made, SearxngProvider)
    made.close()


def test_local_provider_ranks_files_by_name_and_text(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (a / "tides.md").write_text("The moon's gravity raises the ocean tides twice a day.")
    (a / "sub" / "bread.txt").write_text("Yeast ferments sugar; the dough rises.")
    (b / "kuramoto-oscillators.txt").write_text("Coupled phases lock above a critical value.")
    (b / ".hidden.txt").write_text("oscillators oscillators oscillators")
    outside = tmp_path / "outside.txt"
    outside.write_text("oscillators synchronise oscillators")
    os.symlink(outside, b / "link.txt")  # leads out of b: not followed
    found = LocalProvider([a, b]).search("kuramoto oscillators")
    assert [h.url for h in found.hits] == [str(b / "kuramoto-oscillators.txt")]
    assert found.hits[0].local and found.hits[0].provider == "local"
    assert "critical value" in found.hits[0].snippet
    assert [h.url for h in LocalProvider([a, b]).search("ocean tides moon").hits] == [
        str(a / "tides.md")
    ]
    assert LocalProvider([a, b]).search("quantum chromodynamics").hits == ()


# ----------------------------------------------------------------------------- the filter


class _Fixed:
    """A provider answering fixed hits (the filter test needs no network)."""

    name = "fixed"

    def __init__(self, hits):
        self.hits = tuple(hits)
        self.queries: list[str] = []

    def search(self, query: str) -> SearchResults:
        self.queries.append(query)
        return SearchResults(hits=self.hits)

    def close(self) -> None:
        pass


def _step(core, tmp_path, hits, caps=None):
    incoming = incoming_dir(core.data_dir)
    extra = tmp_path / "notes"
    extra.mkdir(exist_ok=True)
    safety = SafetyFilter(
        SafetyPolicy(incoming_dir=str(incoming), allowed_read_dirs=(str(incoming), str(extra))),
        resolver=lambda host: ["10.0.0.7"] if host == "internal.github.com" else ["140.82.1.1"],
    )
    chaperone = Chaperone(safety, Fetcher(safety))
    chaperone.searcher = _Fixed(hits)
    budget = Budget(core.store, caps or BudgetCaps(daily_tool_calls=10), env={})
    return SearchStep(chaperone, budget, fetch=2), safety, budget, extra


def _web(url):
    return SearchHit(url=url, provider="fixed")


def test_every_candidate_is_vetted_by_the_safety_filter_before_any_fetch(tmp_path):
    with Core(tmp_path / "d") as core:
        (tmp_path / "notes").mkdir()
        good_file = tmp_path / "notes" / "good.txt"
        good_file.write_text("x")
        (tmp_path / "secret.txt").write_text("y")
        hits = [
            _web("https://github.com/ok"),
            _web("https://evil.example/page"),
            _web("https://user:pw@github.com/x"),
            _web("https://140.82.1.1/x"),
            _web("http://github.com/x"),
            _web("https://github.com:8443/x"),
            _web("https://internal.github.com/x"),
            SearchHit(url=str(tmp_path / "secret.txt"), provider="fixed", local=True),
            SearchHit(url=str(good_file), provider="fixed", local=True),
            _web("https://docs.python.org/ok"),
        ]
        step, safety, budget, _ = _step(core, tmp_path, hits)
        bus = EventBus(core.store)
        emit = bus.emitter(session="s")
        stats = SessionStats()
        step._queued.append(ChaperoneRequest(id="q1", type="question", question=QUESTION))
        reads = step.requests(stats, emit)
        bus.flush()
        events = [e for _, e in read_events(core.store)]
        tool_calls = budget.today().tool_calls
    assert [(r.type, r.url or r.path, r.route, r.question) for r in reads] == [
        ("fetch_content", "https://github.com/ok", "search", QUESTION),
        ("read_local", str(good_file), "search", QUESTION),
    ]
    (search,) = [e for e in events if e.kind == "search"]
    assert search.results == 10 and search.allowed == 3 and search.fetching == 2
    assert search.filtered == {
        "domain_allowlist": 1,
        "userinfo": 1,
        "ip_literal": 1,
        "scheme": 1,
        "port": 1,
        "private_address": 1,
        "local_path": 1,
    }
    refused = [(e.check, e.url or e.path) for e in events if e.kind == "refusal"]
    assert len(refused) == 7 and all(e.type == "search" for e in events if e.kind == "refusal")
    counters = safety.counters()
    assert all(counters[c] == n for c, n in search.filtered.items())
    assert stats.search == {
        "searches": 1,
        "results": 10,
        "allowed": 3,
        "filtered": 7,
        "fetched": 0,
        "answered": 0,
        "errors": 0,
    }
    assert tool_calls == 1  # the search is a tool call


def test_a_search_the_budget_refuses_is_not_run(tmp_path):
    with Core(tmp_path / "d") as core:
        step, _, budget, _ = _step(
            core, tmp_path, [_web("https://github.com/ok")], caps=BudgetCaps(daily_tool_calls=1)
        )
        budget.commit(0, 1, "done")  # the day's one tool call is spent
        bus = EventBus(core.store)
        stats = SessionStats()
        step._queued.append(ChaperoneRequest(id="q1", type="question", question=QUESTION))
        assert step.requests(stats, bus.emitter()) == []
        bus.flush()
        events = [e for _, e in read_events(core.store)]
    assert step.chaperone.searcher.queries == []
    assert [e.cap for e in events if e.kind == "budget"] == ["daily_tool_calls"]
    assert stats.budget_stops == 1 and not stats.search


# ----------------------------------------------------------------------------- end to end


def _learner(core, content, search: SearchSettings, extra_dirs=()):
    policy = SafetyPolicy(
        incoming_dir=str(incoming_dir(core.data_dir)),
        allowed_read_dirs=(str(incoming_dir(core.data_dir)), *map(str, extra_dirs)),
        allowed_domains=(*DEFAULT_ALLOWED_DOMAINS, "localhost"),
        allowed_host_ports=(f"localhost:{content.port}",) if content is not None else (),
        allow_private_addresses=True,  # test configuration only: loopback servers
        rate_limit_requests=1000,
    )
    return build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session="search", reflect_every=0),
            safety=policy,
            caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
            fetcher=FetcherSettings(ca_bundle=content.ca_path if content is not None else ""),
            include_python_docs=False,
            search=search,
        ),
        env={},
    )


def test_learner_answers_a_question_from_a_page_found_on_searxng_and_fetches_nothing_hostile(
    tmp_path,
):
    routes = {
        "/answer.html": lambda h: h.send_body(200, ANSWER_PAGE, "text/html; charset=utf-8"),
    }
    with ContentServer(routes) as content:
        port = content.port
        hits = [
            result("https://evil.example/secret0", "Kuramoto", "off the allow-list"),
            result(content.url("/redirect/private-ip"), "Kuramoto", "redirects to 127.0.0.1"),
            result(content.url("/answer.html"), "Kuramoto model", "oscillators synchronise"),
            result(f"https://user:pw@localhost:{port}/secret1"),
            result(f"https://127.0.0.1:{port}/secret2"),
            result(f"http://localhost:{port}/secret3"),
            result(f"https://localhost:{port}\\@evil.example/secret4"),
            result(f"https://localhost:{port + 1}/secret5"),
            result(f"https://0x7f.1:{port}/secret6"),
        ]
        with SearxngServer(hits) as searx, Core(tmp_path / "d") as core:
            settings = SearchSettings(provider="searxng", url=searx.url, fetch=3)
            learner = _learner(core, content, settings)
            with learner:
                learner.ask(QUESTION)
                stats = learner.run(2)
            events = [e for _, e in read_events(core.store)]
            sources = {r.source for r in core.memory.recent(50)}
            texts = [r.text for r in core.memory.recent(50)]
            book = learner.curiosity.book.get(QUESTION)
            queries = list(searx.queries)
        requested = list(content.requests)
    assert queries == [QUESTION]
    # Fetched: the allowed page, and the allowed URL whose redirect was refused. Nothing else.
    assert sorted(requested) == ["/answer.html", "/redirect/private-ip"]
    assert not any("secret" in p or p == "/page.html" for p in requested)
    (search,) = [e for e in events if e.kind == "search"]
    assert (search.results, search.allowed, search.fetching) == (9, 2, 2)
    assert sum(search.filtered.values()) == 7
    refusals = [e for e in events if e.kind == "refusal"]
    assert {e.check for e in refusals if e.type == "fetch_content"} == {"redirect"}
    assert stats.search["answered"] == 1 and stats.search["fetched"] == 2
    assert "web:" + content.url("/answer.html") in sources
    assert book is not None and book.status == "answered" and book.answered_by >= 0
    answered = [e for e in events if e.kind == "question" and e.status == "answered"]
    assert answered and "found by search" in answered[0].reason
    assert all("Bread" not in text for text in texts)  # only what answers is stored


def test_learner_finds_a_local_file_with_the_offline_provider(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kuramoto.md").write_text(ANSWER_PAGE.decode().replace("<p>", "\n\n"))
    (notes / "bread.txt").write_text("Bread rises because yeast ferments sugar.")
    with Core(tmp_path / "d") as core:
        learner = _learner(core, None, SearchSettings(provider="local"), extra_dirs=[notes])
        with learner:
            learner.ask(QUESTION)
            stats = learner.run(2)
        events = [e for _, e in read_events(core.store)]
        sources = {r.source for r in core.memory.recent(50)}
        book = learner.curiosity.book.get(QUESTION)
    reads = [e for e in events if e.kind == "query" and e.type == "read_local"]
    assert [e.path for e in reads] == [str(notes / "kuramoto.md")]
    assert stats.search["answered"] == 1
    assert f"local:{notes / 'kuramoto.md'}" in sources
    assert book is not None and book.status == "answered"


def test_reads_cut_off_by_the_budget_are_offered_again_and_a_full_tick_defers_the_search(
    tmp_path,
):
    from sentient_core.learning.curiosity import Curiosity
    from sentient_core.learning.integration import Integrated
    from sentient_core.vocab import Verdict

    with Core(tmp_path / "d") as core:
        caps = BudgetCaps(daily_tool_calls=10, per_tick_initiatives=2)
        step, _, budget, _ = _step(core, tmp_path, [_web("https://github.com/ok")], caps=caps)
        emit = EventBus(core.store).emitter()
        stats = SessionStats()
        budget.begin_tick()
        budget.commit(0, 0, "done")  # one of the tick's two slots used: no room to search
        step._queued.append(ChaperoneRequest(id="q1", type="question", question=QUESTION))
        assert step.requests(stats, emit) == [] and step.chaperone.searcher.queries == []
        budget.begin_tick()
        (read,) = step.requests(stats, emit)  # a new tick: the search runs
        assert step.chaperone.searcher.queries == [QUESTION]
        assert step.requests(stats, emit) == []  # not twice in one tick
        budget.begin_tick()
        assert step.requests(stats, emit) == [read]  # never judged: offered again
        curiosity = Curiosity(core.observer, core.memory)
        verdict = Verdict(outcome="failure", basis="deterministic", reason="x", gate="relevance")
        step.consider(read, verdict, Integrated(), None, curiosity, stats, emit)
        budget.begin_tick()
        assert step.requests(stats, emit) == []
        assert stats.search["fetched"] == 1 and stats.search["answered"] == 0
