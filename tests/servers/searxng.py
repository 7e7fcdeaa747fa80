"""A loopback SearXNG-compatible search server for tests (plain HTTP, 127.0.0.1 only).

``GET /search?q=QUERY&format=json`` answers ``{"query": QUERY, "results": [...]}``
as a SearXNG instance's JSON API does, each result with ``url``, ``title``,
``content`` and the extra fields SearXNG sends (``engine``, ``score``,
``category``). The results are the ``results`` given (a list, or
``fn(query) -> list``). Every request's query is recorded in :attr:`queries`.

Answers other than a good one, for the hostile cases (:attr:`mode`)::

    ok          the results
    garbage     a body that is not JSON
    no-results  a JSON object without a ``results`` array
    bad-items   results whose entries are malformed (a number as url, no url, a huge url)
                besides the good ones
    status      HTTP 500
    huge        a JSON body of ``huge_bytes`` (a results array of padding)
    html        ``format=json`` disabled: SearXNG's 403 HTML page
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["SearxngServer", "result"]

Results = Sequence[dict[str, Any]] | Callable[[str], Sequence[dict[str, Any]]]


def result(url: str, title: str = "", content: str = "") -> dict[str, Any]:
    """One result as SearXNG sends it (with fields the client must ignore)."""
    return {
        "url": url,
        "title": title,
        "content": content,
        "engine": "loopback",
        "engines": ["loopback"],
        "score": 1.0,
        "category": "general",
        "parsed_url": list(urlsplit(url)),
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        args = parse_qs(parts.query)
        query = args.get("q", [""])[0]
        with owner.lock:
            owner.queries.append(query)
            owner.formats.append(args.get("format", [""])[0])
        if parts.path != "/search":
            return self._send(404, "text/plain", b"not found")
        mode = owner.mode
        if mode == "status":
            return self._send(500, "text/plain", b"engine error")
        if mode == "html":
            return self._send(403, "text/html", b"<html><body>Forbidden</body></html>")
        if mode == "garbage":
            return self._send(200, "application/json", b"{not json at all")
        if mode == "no-results":
            return self._send(200, "application/json", json.dumps({"query": query}).encode())
        if mode == "huge":
            pad = b'{"results": [' + b'{"url": "https://x.example/"},' * (owner.huge_bytes // 29)
            return self._send(200, "application/json", pad + b'{"url": "https://x.example/"}]}')
        items = list(owner.results(query) if callable(owner.results) else owner.results)
        if mode == "bad-items":
            items = [{"url": 42}, {"title": "no url"}, {"url": "https://a/" + "x" * 5000}, *items]
        body = json.dumps({"query": query, "number_of_results": len(items), "results": items})
        self._send(200, "application/json", body.encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: SearxngServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class SearxngServer:
    """Loopback SearXNG JSON API (context manager); :attr:`url` is its base URL."""

    def __init__(self, results: Results = (), *, mode: str = "ok", huge_bytes: int = 5 << 20):
        self.results = results
        self.mode = mode
        self.huge_bytes = huge_bytes
        self.queries: list[str] = []
        self.formats: list[str] = []
        self.lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> SearxngServer:
        self._server = _Server(self)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = None
