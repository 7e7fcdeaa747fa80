"""A loopback HTTPS content server for tests, with a test CA.

Serves good content (html, pdf, json, markdown, plain text) and hostile routes
(redirects off the allow-list, to private addresses, loops; wrong or missing
MIME types; oversize bodies, declared or endlessly chunked; a slow drip; a
slow first byte; error statuses). TLS uses a throw-away CA from ``trustme``;
clients trust it through :attr:`ContentServer.ca_path` (a PEM bundle) or
:meth:`ContentServer.client_context`::

    with ContentServer() as srv:
        fetcher = Fetcher(safety, verify=srv.ca_path)
        fetcher.fetch(srv.url("/page.html"))

The certificate names ``localhost``, ``content.test`` and ``127.0.0.1``
(``content.test`` lets a test prove the client connects to the address the
safety filter checked: it is not resolvable by real DNS). Only 127.0.0.1 is
ever bound. Every handler is bounded in time and stops when the client
disconnects or the server stops; :attr:`ContentServer.stream_ends` records
why each endless stream ended.

Routes (``routes=`` replaces or adds entries; a route is ``fn(handler)``)::

    /page.html /paper.pdf /data.json /notes.md /plain.txt /html-charset
    /hop/N                 N redirect hops, then /page.html
    /loop                  redirects to itself        /loop/a <-> /loop/b
    /redirect/offlist      -> https://evil.example/page.html
    /redirect/private-ip   -> https://127.0.0.1:PORT/page.html (really reachable)
    /redirect/metadata     -> https://169.254.169.254/latest/meta-data/
    /redirect/downgrade    -> http://localhost:PORT/page.html
    /redirect/userinfo     -> https://user:pw@localhost:PORT/page.html
    /redirect/backslash    -> https://localhost:PORT\\@evil.example/
    /redirect/other-port   -> https://localhost:PORT+1/page.html (same host, another port)
    /redirect/superscript-port -> https://localhost:¹²³/page.html (latin-1 header bytes)
    /redirect/two-locations    two different Location headers
    /redirect/no-location  302 without Location
    /octet /image.png      wrong MIME          /notype   no Content-Type
    /oversize/declared     Content-Length: oversize (body sent lazily)
    /oversize/stream       chunked text/plain, forever (until disconnect/stop/time bound)
    /drip                  chunked text/plain, one chunk every drip_s
    /slow                  headers only after hang_s
    /status/N              HTTP N
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme

from tests.pdfgen import text_pdf

__all__ = ["CONTENT", "ContentServer", "Route", "closed_port"]

Route = Callable[["_Handler"], None]

#: Bodies of the good routes (path -> (content type, body)).
CONTENT: dict[str, tuple[str, bytes]] = {
    "/page.html": (
        "text/html; charset=utf-8",
        b"<!doctype html><html><head><title>Oscillators</title></head><body>"
        b"<h1>Coupled oscillators</h1><p>Kuramoto oscillators synchronise when the "
        b"coupling exceeds a critical value.</p></body></html>",
    ),
    "/paper.pdf": (
        "application/pdf",
        text_pdf([["Holographic memory", "Superposed patterns are recalled by correlation."]]),
    ),
    "/data.json": (
        "application/json",
        json.dumps({"topic": "primes", "facts": ["2 is the only even prime"]}).encode(),
    ),
    "/notes.md": (
        "text/markdown; charset=utf-8",
        b"# Sedenions\n\nSixteen-dimensional algebra; not a division algebra.\n",
    ),
    "/plain.txt": ("text/plain", b"Plain text about entropy and coherence.\n"),
    "/html-charset": (
        "TEXT/HTML; Charset=UTF-8",
        b"<html><body><p>case and params</p></body></html>",
    ),
}

_CHUNK = b"x" * 65536


def closed_port() -> int:
    """A loopback port where nothing listens (a "server down")."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection ends on its own
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        owner = self.server.owner
        owner._record(self.path)
        path = self.path.split("?", 1)[0]  # the query only makes distinct URLs
        route = owner.routes.get(path)
        if route is None:
            match = re.fullmatch(r"/(hop|status)/(\d+)", path)
            kinds = {"hop": _hop, "status": _status}
            route = kinds[match.group(1)] if match else _not_found
        try:
            route(self)
        except OSError:
            # The client went away (size cap, deadline, refusal): expected here.
            self.close_connection = True

    # helpers used by routes ------------------------------------------------
    @property
    def owner(self) -> ContentServer:
        return self.server.owner

    def send_body(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str | None, status: int = 302) -> None:
        self.send_response(status)
        if location is not None:
            self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def chunked_headers(self, content_type: str = "text/plain") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def _static(path: str) -> Route:
    content_type, body = CONTENT[path]
    return lambda h: h.send_body(200, body, content_type)


def _typed(content_type: str | None) -> Route:
    return lambda h: h.send_body(200, b"\x89PNG\r\n\x1a\n not really content", content_type)


def _to(location: Callable[[ContentServer], str | None]) -> Route:
    return lambda h: h.redirect(location(h.owner))


def _two_locations(h: _Handler) -> None:
    h.send_response(302)
    h.send_header("Location", h.owner.url("/page.html"))
    h.send_header("Location", "https://evil.example/")
    h.send_header("Content-Length", "0")
    h.end_headers()


def _hop(h: _Handler) -> None:
    n = int(h.path.split("?", 1)[0].rsplit("/", 1)[1])
    h.redirect("/page.html" if n <= 1 else f"/hop/{n - 1}")


def _status(h: _Handler) -> None:
    code = int(h.path.split("?", 1)[0].rsplit("/", 1)[1])
    h.send_body(code, b"status %d\n" % code, "text/plain")


def _not_found(h: _Handler) -> None:
    h.send_body(404, b"not found\n", "text/plain")


def _oversize_declared(h: _Handler) -> None:
    owner = h.owner
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Content-Length", str(owner.oversize))
    h.send_header("Connection", "close")
    h.end_headers()
    h.close_connection = True
    sent = 0
    while sent < owner.oversize and not owner.stopping.is_set():
        n = min(len(_CHUNK), owner.oversize - sent)
        h.wfile.write(_CHUNK[:n])
        sent += n


def _endless_stream(h: _Handler) -> None:
    owner = h.owner
    h.chunked_headers()
    end = time.monotonic() + owner.stream_limit_s
    reason = "time bound"
    try:
        while time.monotonic() < end:
            if owner.stopping.is_set():
                reason = "server stopped"
                break
            h.chunk(_CHUNK)
    except OSError:
        reason = "client disconnected"
        raise
    finally:
        owner._stream_ended(reason)


def _drip(h: _Handler) -> None:
    owner = h.owner
    h.chunked_headers()
    for i in range(owner.drip_chunks):
        if owner.stopping.wait(owner.drip_s):
            return
        h.chunk(b"drip %d\n" % i)
    h.chunk(b"")


def _slow(h: _Handler) -> None:
    owner = h.owner
    if owner.stopping.wait(owner.hang_s):
        return
    h.send_body(200, b"finally\n", "text/plain")


def default_routes() -> dict[str, Route]:
    """The routes listed in the module docstring."""
    routes: dict[str, Route] = {path: _static(path) for path in CONTENT}
    routes.update(
        {
            "/loop": _to(lambda s: "/loop"),
            "/loop/a": _to(lambda s: "/loop/b"),
            "/loop/b": _to(lambda s: "/loop/a"),
            "/redirect/offlist": _to(lambda s: "https://evil.example/page.html"),
            "/redirect/private-ip": _to(lambda s: f"https://127.0.0.1:{s.port}/page.html"),
            "/redirect/metadata": _to(lambda s: "https://169.254.169.254/latest/meta-data/"),
            "/redirect/downgrade": _to(lambda s: f"http://localhost:{s.port}/page.html"),
            "/redirect/userinfo": _to(lambda s: f"https://user:pw@localhost:{s.port}/page.html"),
            "/redirect/backslash": _to(lambda s: f"https://localhost:{s.port}\\@evil.example/"),
            "/redirect/other-port": _to(lambda s: f"https://localhost:{s.port + 1}/page.html"),
            "/redirect/superscript-port": _to(lambda s: "https://localhost:¹²³/page.html"),
            "/redirect/two-locations": _two_locations,
            "/redirect/no-location": _to(lambda s: None),
            "/octet": _typed("application/octet-stream"),
            "/image.png": _typed("image/png"),
            "/notype": _typed(None),
            "/oversize/declared": _oversize_declared,
            "/oversize/stream": _endless_stream,
            "/drip": _drip,
            "/slow": _slow,
        }
    )
    return routes


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True

    def __init__(self, owner: ContentServer, context: ssl.SSLContext) -> None:
        self.owner = owner
        self._context = context
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request, client_address) -> None:
        # TLS handshake here, in the connection's own thread, so a stuck client
        # cannot block the accept loop.
        request.settimeout(5.0)
        # No Nagle: headers and body go out at once (no 40 ms delayed-ACK stalls).
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            tls = self._context.wrap_socket(request, server_side=True)
        except OSError:
            return
        self.owner._track(tls, True)
        try:
            self.RequestHandlerClass(tls, client_address, self)
        except OSError:
            pass
        finally:
            self.owner._track(tls, False)
            tls.close()


class ContentServer:
    """Loopback HTTPS content server (context manager).

    Parameters
    ----------
    routes : mapping, optional
        Extra or replacement routes (path -> ``fn(handler)``).
    oversize : int
        Declared length of ``/oversize/declared`` (default 10 MiB + 1).
    drip_s, drip_chunks : float, int
        Interval and count of ``/drip`` chunks.
    hang_s : float
        Delay before ``/slow`` answers.
    stream_limit_s : float
        Time bound of ``/oversize/stream`` if the client never disconnects.
    """

    def __init__(
        self,
        routes: Mapping[str, Route] | None = None,
        *,
        oversize: int = 10 * 1024 * 1024 + 1,
        drip_s: float = 0.2,
        drip_chunks: int = 50,
        hang_s: float = 5.0,
        stream_limit_s: float = 20.0,
    ) -> None:
        self.routes = default_routes()
        self.routes.update(routes or {})
        self.oversize = oversize
        self.drip_s = drip_s
        self.drip_chunks = drip_chunks
        self.hang_s = hang_s
        self.stream_limit_s = stream_limit_s
        self.stopping = threading.Event()
        self.requests: list[str] = []
        self.stream_ends: list[str] = []
        self.stream_ended = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[ssl.SSLSocket] = set()
        self._ca = trustme.CA()
        self._cert = self._ca.issue_cert("localhost", "content.test", "127.0.0.1")
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.ca_path = ""
        self.port = 0

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> ContentServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._cert.configure_cert(context)
        self._tmp = tempfile.TemporaryDirectory(prefix="content-ca-")
        path = Path(self._tmp.name) / "ca.pem"
        self._ca.cert_pem.write_to_path(str(path))
        self.ca_path = str(path)
        self._server = _Server(self, context)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving, end every open connection and join all threads."""
        if self._server is None:
            return
        self.stopping.set()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            # Plain socket shutdown (not SSLSocket's): wakes a blocked reader
            # without touching the TLS object another thread is using.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join()
        self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # ------------------------------------------------------------------ for tests
    def url(self, path: str, host: str = "localhost") -> str:
        """``https://HOST:PORT/path``."""
        return f"https://{host}:{self.port}{path}"

    def client_context(self) -> ssl.SSLContext:
        """An SSL context trusting this server's test CA."""
        context = ssl.create_default_context()
        self._ca.configure_trust(context)
        return context

    def _record(self, path: str) -> None:
        with self._lock:
            self.requests.append(path)

    def _track(self, sock: ssl.SSLSocket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(sock)
            else:
                self._connections.discard(sock)

    def _stream_ended(self, reason: str) -> None:
        with self._lock:
            self.stream_ends.append(reason)
        self.stream_ended.set()
