"""The search step in a real learner run: how many questions a newly found source answers.

Starts two loopback servers in this process — a SearXNG-compatible JSON API
(``tests/servers/searxng.py``) and the HTTPS content server with its test CA
(``tests/servers/content.py``) — and runs the learner on a fresh store with
``[search] provider = "searxng"`` pointed at the first. The user asks
:data:`QUESTIONS`; the offline corpus (an empty incoming dir, plus Python's docs
unless ``--no-pydocs``) holds none of the answers. For every query the search
server answers the same mix: hostile and disallowed URLs (off the allow-list, user
info, IP literals, http, a backslash trick, another port, a redirect to 127.0.0.1),
an allowed page about something else, and — for three of the four questions — the
allowed page that answers it. Prints the session's search counters, the questions
answered from a found source, and the hostile paths the content server saw (must
be 0)::

    PYTHONPATH=. python bench/search_loop.py [--iterations N] [--no-pydocs]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.events import read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.safety import DEFAULT_ALLOWED_DOMAINS, SafetyPolicy
from sentient_core.learning.session import (
    FetcherSettings,
    LearnerSettings,
    build_learner,
    incoming_dir,
)
from sentient_core.search import SearchSettings
from tests.servers.content import ContentServer
from tests.servers.searxng import SearxngServer, result

PAGES = {
    "/kuramoto.html": (
        "The Kuramoto model",
        "Kuramoto oscillators synchronise when the coupling strength between the oscillators"
        " exceeds a critical coupling value; below it their phases drift apart.",
    ),
    "/tides.html": (
        "Tides",
        "Ocean tides are caused by the gravity of the Moon and the Sun pulling on the oceans"
        " while the Earth rotates, which raises two tidal bulges a day.",
    ),
    "/photosynthesis.html": (
        "Photosynthesis",
        "Photosynthesis converts light energy into chemical energy: chlorophyll in the"
        " chloroplasts absorbs light, and the plant builds glucose from carbon dioxide and water.",
    ),
    "/bread.html": (
        "Bread",
        "Bread rises because yeast ferments sugar into carbon dioxide, which the gluten"
        " network of the dough traps in small bubbles.",
    ),
}
QUESTIONS = {
    "When do Kuramoto oscillators synchronise?": "/kuramoto.html",
    "What causes ocean tides?": "/tides.html",
    "How does photosynthesis convert light energy?": "/photosynthesis.html",
    "What is the airspeed velocity of an unladen swallow?": None,
}


def _page(title: str, text: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>{text}</p></body></html>"
    ).encode()


def _routes() -> dict:
    return {
        path: (lambda body: lambda h: h.send_body(200, body, "text/html; charset=utf-8"))(
            _page(*page)
        )
        for path, page in PAGES.items()
    }


def run(iterations: int, pydocs: bool) -> dict:
    with ContentServer(_routes()) as content:
        port = content.port
        hostile = [
            "https://evil.example/secret-offlist",
            f"https://user:pw@localhost:{port}/secret-userinfo",
            f"https://127.0.0.1:{port}/secret-ip",
            f"https://0x7f.1:{port}/secret-hex-ip",
            f"http://localhost:{port}/secret-http",
            f"https://localhost:{port}\\@evil.example/secret-backslash",
            f"https://localhost:{port + 1}/secret-port",
            content.url("/redirect/private-ip"),  # allowed itself; its redirect is refused
        ]

        def answer(query: str) -> list:
            right = QUESTIONS.get(query)
            items = [result(u, "a result") for u in hostile] + [
                result(content.url("/bread.html"), "Bread")
            ]
            if right:
                items.append(result(content.url(right), PAGES[right][0], PAGES[right][1][:80]))
            return items

        with (
            SearxngServer(answer) as searx,
            tempfile.TemporaryDirectory() as tmp,
            Core(Path(tmp) / "store") as core,
        ):
            policy = SafetyPolicy(
                incoming_dir=str(incoming_dir(core.data_dir)),
                allowed_domains=(*DEFAULT_ALLOWED_DOMAINS, "localhost"),
                allowed_host_ports=(f"localhost:{port}",),
                allow_private_addresses=True,  # the loopback content server
                rate_limit_requests=1000,
            )
            learner = build_learner(
                core,
                LearnerSettings(
                    learner=LearnerConfig(interval_s=0, session="bench-search"),
                    safety=policy,
                    caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                    fetcher=FetcherSettings(ca_bundle=content.ca_path),
                    include_python_docs=pydocs,
                    search=SearchSettings(provider="searxng", url=searx.url, fetch=3),
                ),
                env={},
            )
            with learner:
                for q in QUESTIONS:
                    learner.ask(q)
                stats = learner.run(iterations)
            book = {q: learner.curiosity.book.get(q) for q in QUESTIONS}
            events = [e for _, e in read_events(core.store)]
        requested = list(content.requests)
    found = [e for e in events if e.kind == "question" and "found by search" in e.reason]
    return {
        "iterations": stats.iterations,
        "search": dict(stats.search),
        "filtered": _sum_filtered(events),
        "answered_from_found": sorted({e.question for e in found}),
        "user_answered": sorted(q for q, r in book.items() if r and r.status == "answered"),
        "hostile_requested": [p for p in requested if "secret" in p or p == "/page.html"],
        "pages_requested": sorted(set(requested)),
    }


def _sum_filtered(events) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events:
        if e.kind == "search":
            for check, n in e.filtered.items():
                out[check] = out.get(check, 0) + n
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--no-pydocs", action="store_true", help="no Python docs in the corpus")
    args = ap.parse_args(argv)
    r = run(args.iterations, not args.no_pydocs)
    s = r["search"]
    print(f"iterations: {r['iterations']}")
    print(
        f"searches: {s.get('searches', 0)}, candidates {s.get('results', 0)},"
        f" allowed {s.get('allowed', 0)}, filtered {s.get('filtered', 0)},"
        f" read {s.get('fetched', 0)}, errors {s.get('errors', 0)}"
    )
    print("filtered by check: " + ", ".join(f"{c} {n}" for c, n in r["filtered"].items()))
    print(f"questions answered from a newly found source: {s.get('answered', 0)}")
    for q in r["answered_from_found"]:
        print(f"  {q}")
    print(f"user questions answered: {len(r['user_answered'])} of {len(QUESTIONS)}")
    print(f"content-server paths requested: {', '.join(r['pages_requested'])}")
    print(f"hostile or disallowed URLs fetched: {len(r['hostile_requested'])}")
    return 0 if not r["hostile_requested"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
