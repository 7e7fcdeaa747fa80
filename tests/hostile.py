"""The hostile set: every attack on ``serve`` we know of, against a real ``cli.py serve``.

:func:`launch` starts ``python cli.py serve`` in a child process (its log
captured to a file) over a fresh data directory with a small corpus;
:func:`run_all` runs :data:`CASES` and the attacks that need more than one
request (disconnect storms, a chunked body cut at the limit, concurrent
starts, a start/stop storm, the stream cap, fuzzed parameter values) and
returns one :class:`Row` per attack: what it must get and what it got. The
log is then read for tracebacks and 5xx answers, which must be none.

``tests/test_server_hostile.py`` asserts every row; ``bench/security_table.py``
prints the table that ``docs/security.md`` shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.servers.sentient import write_corpus

ROOT = Path(__file__).resolve().parent.parent
BODY_LIMIT = 4096
UPLOAD_LIMIT = 65536
STREAM_CAP = 4
SETTINGS = f"""[learner]
interval_s = 0.05

[chaperone]
corpus_dirs = ["{{corpus}}"]
include_python_docs = false

[server]
host = "127.0.0.1"
port = 0
flush_delay_ms = 2
max_body_bytes = {BODY_LIMIT}
max_upload_bytes = {UPLOAD_LIMIT}
max_stream_clients = {STREAM_CAP}
"""


@dataclass
class Target:
    """A running ``cli.py serve`` child and what a test knows of it."""

    proc: subprocess.Popen
    data: Path
    log: Path
    url: str
    port: int
    token: str
    client: httpx.Client = field(init=False)  # carries the token
    anon: httpx.Client = field(init=False)  # carries nothing, keeps no cookie

    def __post_init__(self) -> None:
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        self.anon = httpx.Client(base_url=self.url, timeout=30)
        self.anon.event_hooks["response"] = [lambda r: self.anon.cookies.clear()]

    def login_url(self) -> str:
        """A new one-time panel link, asked of the server over its control socket."""
        from sentient_core.control import request

        reply = request(self.data, "login")
        assert reply.ok, reply.message
        return reply.message

    def session(self) -> dict[str, str]:
        """Log in through a one-time link as a browser does: the cookie and the CSRF token."""
        with httpx.Client(timeout=30) as browser:
            r = browser.get(self.login_url(), follow_redirects=False)
            assert r.status_code == 303, r.status_code
            cookie = r.headers["set-cookie"].split(";")[0]
            page = browser.get(self.url + "/", headers={"Cookie": cookie})
            m = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
            assert m, page.status_code
            return {"cookie": cookie, "csrf": m.group(1)}

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        self.client.close()
        self.anon.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def child_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTIENT_")}
    env.update(PYTHONPATH=str(ROOT), SENTIENT_HOME=str(data), **extra)
    return env


@contextlib.contextmanager
def launch(
    root: Path,
    settings: str = SETTINGS,
    *,
    log_level: str = "info",
    preexec_fn: Callable[[], None] | None = None,
    timeout: float = 240.0,
) -> Iterator[Target]:
    """``cli.py serve --port 0`` on ``root/data`` (a corpus in ``root/corpus``)."""
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    corpus = write_corpus(root / "corpus")
    (data / "sentient.toml").write_text(settings.replace("{corpus}", str(corpus)))
    log = root / "serve.log"
    out = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "cli.py", "serve", "--log-level", log_level],
        cwd=ROOT,
        env=child_env(data),
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
    )
    out.close()
    deadline = time.monotonic() + timeout
    url = ""
    while not url:
        m = re.search(r"serving (http://[^ ]+?)/ ", log.read_text(errors="replace"))
        if m:
            url = m.group(1)
        elif proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"serve did not start:\n{log.read_text(errors='replace')}")
        else:
            time.sleep(0.05)
    token = (data / "server.token").read_text().strip()
    target = Target(proc, data, log, url, int(url.rsplit(":", 1)[1]), token)
    try:
        yield target
    finally:
        target.stop()


# -- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One attack: what it must get and what it got (``detail``: the measurement behind it)."""

    group: str
    attack: str
    expected: str
    observed: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.expected == self.observed


@dataclass(frozen=True)
class Case:
    """A single request and the status it must get."""

    group: str
    attack: str
    expected: int
    send: Callable[[Target, dict], httpx.Response]


def _get(path: str, **kw) -> Callable[[Target, dict], httpx.Response]:
    return lambda t, c: t.anon.get(path, **kw)


def _post(path: str, **kw) -> Callable[[Target, dict], httpx.Response]:
    return lambda t, c: t.anon.post(path, **kw)


def _tok(method: str, path: str, **kw) -> Callable[[Target, dict], httpx.Response]:
    return lambda t, c: t.client.request(method, path, **kw)


def _cookie(method: str, path: str, csrf: bool = True, **headers: str):
    def send(t: Target, c: dict) -> httpx.Response:
        h = {"Cookie": c["panel"]["cookie"], **headers}
        if csrf:
            h["X-CSRF-Token"] = c["panel"]["csrf"]
        return t.anon.request(method, path, headers=h)

    return send


def _forged_cookie(t: Target, c: dict) -> httpx.Response:
    forged = f"sentient_{t.port}={secrets.token_urlsafe(32)}"
    return t.anon.get("/learning/status", headers={"Cookie": forged})


def _other_sessions_csrf(t: Target, c: dict) -> httpx.Response:
    headers = {"Cookie": c["panel"]["cookie"], "X-CSRF-Token": c["other"]["csrf"]}
    return t.anon.post("/learning/pause", headers=headers)


def _replayed_code(t: Target, c: dict) -> httpx.Response:
    link = t.login_url()
    first = t.anon.get(link.replace(t.url, ""), follow_redirects=False)
    assert first.status_code == 303, first.status_code
    return t.anon.get(link.replace(t.url, ""), follow_redirects=False)


def _logged_out_cookie(t: Target, c: dict) -> httpx.Response:
    gone = t.session()
    headers = {"Cookie": gone["cookie"], "X-CSRF-Token": gone["csrf"]}
    assert t.anon.post("/panel/logout", headers=headers).status_code == 200
    return t.anon.get("/learning/status", headers={"Cookie": gone["cookie"]})


def _anon(method: str, path: str) -> Callable[[Target, dict], httpx.Response]:
    return lambda t, c: t.anon.request(method, path)


NO_CREDENTIALS = [
    ("GET", "/learning/status"),
    ("GET", "/learning/logs"),
    ("GET", "/learning/stream"),
    ("GET", "/recall?q=tides"),
    ("GET", "/metrics"),
    ("GET", "/panel/session"),
    ("POST", "/learning/start"),
    ("POST", "/learning/pause"),
    ("POST", "/panel/logout"),
    ("POST", "/ask"),
    ("POST", "/focus"),
    ("POST", "/ingest?name=a.txt"),
]

CASES: list[Case] = [
    *(Case("credentials", f"{m} {p}, no credentials", 401, _anon(m, p)) for m, p in NO_CREDENTIALS),
    Case("credentials", "GET / (panel), no credentials: the login page", 401, _get("/")),
    Case("credentials", "GET /health, no credentials", 200, _get("/health")),
    Case("credentials", "GET /static/panel.js, no credentials", 200, _get("/static/panel.js")),
    Case("credentials", "GET status, a forged session cookie", 401, _forged_cookie),
    Case("credentials", "GET status, the cookie of a logged-out session", 401, _logged_out_cookie),
    Case("credentials", "GET /?token=CODE a second time (replayed link)", 401, _replayed_code),
    Case("credentials", "GET /?token=<never issued>", 401, _get("/", params={"token": "x" * 32})),
    Case(
        "credentials",
        "GET status?token=TOKEN (the token in an API URL)",
        401,
        lambda t, c: t.anon.get("/learning/status", params={"token": t.token}),
    ),
    Case(
        "credentials",
        "POST /learning/pause, wrong token",
        401,
        _post("/learning/pause", headers={"Authorization": "Bearer " + "nope" * 8}),
    ),
    Case(
        "credentials",
        "POST /login, wrong token",
        401,
        _post("/login", data={"token": "nope" * 8}),
    ),
    Case(
        "credentials",
        "POST /login, the token",
        303,
        lambda t, c: t.anon.post("/login", data={"token": t.token}, follow_redirects=False),
    ),
    Case("credentials", "GET status, the token", 200, _tok("GET", "/learning/status")),
    Case("credentials", "GET status, a panel session", 200, _cookie("GET", "/learning/status")),
    Case(
        "csrf",
        "POST pause, session, no X-CSRF-Token",
        403,
        _cookie("POST", "/learning/pause", csrf=False),
    ),
    Case("csrf", "POST pause, session, another session's CSRF token", 403, _other_sessions_csrf),
    Case(
        "csrf",
        "POST pause, session + its CSRF token, same Origin",
        200,
        lambda t, c: _cookie("POST", "/learning/pause", Origin=t.url)(t, c),
    ),
    Case(
        "origin",
        "POST pause, session + CSRF, Origin http://evil.example",
        403,
        _cookie("POST", "/learning/pause", Origin="http://evil.example"),
    ),
    Case(
        "origin",
        "POST pause, session + CSRF, Sec-Fetch-Site: cross-site",
        403,
        _cookie("POST", "/learning/pause", **{"Sec-Fetch-Site": "cross-site"}),
    ),
    Case(
        "origin",
        "POST pause, token, Origin http://evil.example",
        403,
        _tok("POST", "/learning/pause", headers={"Origin": "http://evil.example"}),
    ),
    Case(
        "origin",
        "GET stream, token, Origin http://evil.example",
        403,
        _tok("GET", "/learning/stream", headers={"Origin": "http://evil.example"}),
    ),
    Case(
        "host",
        "GET status, Host: evil.example (DNS rebinding)",
        403,
        _tok("GET", "/learning/status", headers={"Host": "evil.example"}),
    ),
    Case(
        "host",
        "GET /, Host: evil.example:PORT",
        403,
        lambda t, c: t.anon.get("/", headers={"Host": f"evil.example:{t.port}"}),
    ),
    Case(
        "host",
        "GET status, Host: 127.0.0.1 on another port",
        403,
        _tok("GET", "/learning/status", headers={"Host": "127.0.0.1:1"}),
    ),
    Case(
        "host",
        "GET status, Host: 127.0.0.1:² (a non-ASCII digit)",
        403,
        _tok("GET", "/learning/status", headers={"Host": "127.0.0.1:\u00b2".encode("latin-1")}),
    ),
    *(
        Case(
            "values",
            f"GET /learning/logs?count={shown}",
            400,
            _tok("GET", "/learning/logs?count=" + v),
        )
        for shown, v in (
            ("² (superscript two)", "%C2%B2"),
            ("9×50 (50 digits)", "9" * 50),
            ("-1", "-1"),
            ("0", "0"),
            ("nan", "nan"),
            ("1&count=2 (repeated)", "1&count=2"),
        )
    ),
    *(
        Case("values", f"GET /recall?{shown}", 400, _tok("GET", "/recall?" + v))
        for shown, v in (
            ("q= (empty)", "q="),
            ("q=x×1001", "q=" + "x" * 1001),
            ("q=x&k=١٢ (Arabic-Indic digits)", "q=x&k=%D9%A1%D9%A2"),
            ("q=x&k=10^60", "q=x&k=1" + "0" * 60),
            ("q=x&threshold=nan", "q=x&threshold=nan"),
            ("q=x&threshold=inf", "q=x&threshold=inf"),
            ("q=x&explain=maybe", "q=x&explain=maybe"),
            ("q=x&evil=1 (unknown parameter)", "q=x&evil=1"),
        )
    ),
    Case("values", "GET stream?after=-2", 400, _tok("GET", "/learning/stream?after=-2")),
    Case(
        "values",
        "GET stream, Last-Event-ID: ²",
        400,
        _tok("GET", "/learning/stream", headers={"Last-Event-ID": "\u00b2".encode("latin-1")}),
    ),
    Case("values", "GET status?x=1 (unknown parameter)", 400, _tok("GET", "/learning/status?x=1")),
    Case(
        "values",
        "POST /ask, body not UTF-8",
        400,
        _tok(
            "POST",
            "/ask",
            content=b'{"question":"\xff\xfe"}',
            headers={"Content-Type": "application/json"},
        ),
    ),
    Case(
        "values",
        "POST /ask, question NaN",
        400,
        _tok(
            "POST",
            "/ask",
            content=b'{"question":NaN}',
            headers={"Content-Type": "application/json"},
        ),
    ),
    Case(
        "values",
        "POST /focus, topic of 201 characters",
        400,
        _tok("POST", "/focus", json={"topic": "t" * 201}),
    ),
    Case(
        "values",
        "POST /ask, text/plain body",
        415,
        _tok("POST", "/ask", content=b'{"question":"x"}', headers={"Content-Type": "text/plain"}),
    ),
    Case("values", "POST /ingest, no name", 400, _tok("POST", "/ingest", content=b"x")),
    Case(
        "traversal",
        "POST /ingest?name=../../sentient.toml (not a supported type)",
        415,
        _tok("POST", "/ingest?name=../../sentient.toml", content=b"[learner]\n"),
    ),
    Case(
        "size",
        "POST /ask, JSON body past max_body_bytes (Content-Length)",
        413,
        _tok("POST", "/ask", json={"question": "q" * (BODY_LIMIT + 10)}),
    ),
    Case(
        "size",
        "POST /ingest, upload past max_upload_bytes (Content-Length)",
        413,
        _tok("POST", "/ingest?name=big.txt", content=b"x" * (UPLOAD_LIMIT + 1)),
    ),
    Case(
        "size",
        "POST /ingest, chunked upload past max_upload_bytes",
        413,
        lambda t, c: t.client.post(
            "/ingest?name=big.txt", content=iter([b"x" * 1024] * (UPLOAD_LIMIT // 1024 + 2))
        ),
    ),
]


# -- attacks of more than one request ---------------------------------------------------------


def _connect(t: Target, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", t.port), timeout=timeout)
    return sock


def _status_of(raw: bytes) -> str:
    m = re.match(rb"HTTP/1\.[01] (\d{3})", raw)
    return m.group(1).decode() if m else "no answer"


def _raw_exchange(t: Target, request: bytes) -> str:
    with _connect(t) as sock:
        sock.sendall(request)
        data = b""
        with contextlib.suppress(OSError):
            while b"\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
    return _status_of(data)


def _head(t: Target, method: str, path: str, extra: str = "", auth: bool = True) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{t.port}"]
    if auth:
        lines.append(f"Authorization: Bearer {t.token}")
    if extra:
        lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def half_bodies(t: Target, n: int = 20) -> Row:
    """``n`` clients send half of a JSON body to /ask and hang up."""
    before = t.log_text().count("Traceback")
    for _ in range(n):
        with _connect(t) as sock:
            sock.sendall(
                _head(t, "POST", "/ask", "Content-Type: application/json\r\nContent-Length: 200")
                + b'{"question": "half a bo'
            )
            time.sleep(0.01)
    return _tracebacks_since(t, before, f"{n} clients send half a JSON body to /ask and hang up")


def mid_stream_and_response(t: Target, n: int = 10) -> Row:
    """Hang up mid-SSE (after the first event) and mid-response (after the headers)."""
    before = t.log_text().count("Traceback")
    for i in range(n):
        with _connect(t) as sock:
            if i % 2:
                sock.sendall(_head(t, "GET", "/learning/stream?after=-1"))
            else:
                sock.sendall(_head(t, "GET", "/recall?q=tides%20moon&k=100&explain=1"))
            sock.recv(64)
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
    return _tracebacks_since(
        t, before, f"{n} clients hang up mid-stream (SSE) or mid-response (reset)"
    )


def _tracebacks_since(t: Target, before: int, attack: str) -> Row:
    time.sleep(0.5)  # the server has seen every hang-up
    after = t.log_text().count("Traceback")
    return Row("disconnects", attack, "0 tracebacks", f"{after - before} tracebacks")


def chunked_cut(t: Target, total: int = 50 * 1024 * 1024, step: int = 16 * 1024) -> Row:
    """A chunked 50 MiB body to /ask: how far past the limit the client gets before the close."""
    sock = _connect(t, timeout=30)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    sent = 0
    answer = b""
    closed_at = -1
    chunk = f"{step:x}\r\n".encode() + b"x" * step + b"\r\n"
    try:
        sock.sendall(
            _head(t, "POST", "/ask", "Content-Type: application/json\r\nTransfer-Encoding: chunked")
        )
        sock.setblocking(False)
        while sent < total and closed_at < 0:
            try:
                n = sock.send(chunk)
            except BlockingIOError:
                n = 0
            except OSError:  # reset: the server closed with our bytes unread
                closed_at = sent
                break
            if n and n < len(chunk):
                # Finish this chunk (blocking, bounded) so the framing stays valid.
                sock.setblocking(True)
                sock.settimeout(5)
                try:
                    sock.sendall(chunk[n:])
                except OSError:
                    closed_at = sent + n
                    break
                sock.setblocking(False)
                n = len(chunk)
            sent += n and step
            import select

            readable, _, _ = select.select([sock], [], [], 0 if n else 0.05)
            if readable:
                try:
                    got = sock.recv(65536)
                except OSError:
                    closed_at = sent
                    break
                if not got:
                    closed_at = sent
                    break
                answer += got
    finally:
        sock.close()
    past = closed_at - BODY_LIMIT
    status = _status_of(answer)
    if closed_at < 0:
        observed = "never closed"
    elif past <= 1024 * 1024:
        observed = f"{status}, closed within 1 MiB past the limit"
    else:
        observed = f"{status}, closed {past / 2**20:.1f} MiB past the limit"
    return Row(
        "size",
        "POST /ask, chunked 50 MiB body without Content-Length",
        "413, closed within 1 MiB past the limit",
        observed,
        f"client had sent {max(closed_at, 0) / 1024:.0f} KiB (limit {BODY_LIMIT // 1024} KiB)",
    )


TRAVERSALS = (
    "/static/../app.py",
    "/static/../../../../etc/passwd",
    "/static/%2e%2e/app.py",
    "/static/..%2fapp.py",
    "/static/%2e%2e%2f%2e%2e%2fsentient.toml",
    "/static/....//app.py",
)


def traversals(t: Target) -> list[Row]:
    """Paths sent as written (an HTTP client would normalise the dots away)."""
    return [
        Row(
            "traversal",
            f"GET {path} (raw, no credentials)",
            "404",
            _raw_exchange(t, _head(t, "GET", path, auth=False)),
        )
        for path in TRAVERSALS
    ]


def nearly_done_uploads(t: Target, n: int = 20) -> Row:
    """Uploads that overshoot the limit a little, sent whole: each client must read
    the 413, not a connection reset (closing on unread bytes resets)."""
    body = b"x" * (UPLOAD_LIMIT + 64 * 1024)
    answered = 0
    for _ in range(n):
        with _connect(t) as sock:
            head = _head(t, "POST", "/ingest?name=big.txt", f"Content-Length: {len(body)}")
            try:
                sock.sendall(head + body)
                data = b""
                while b"\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                continue
            answered += _status_of(data) == "413"
    return Row(
        "size",
        f"{n} uploads 64 KiB past max_upload_bytes, sent whole (Content-Length)",
        f"{n} of {n} read the 413",
        f"{answered} of {n} read the 413",
    )


def oversized_headers(t: Target) -> list[Row]:
    big = _head(t, "GET", "/learning/status", "X-Padding: " + "a" * 100_000)
    non_ascii_length = (
        _head(t, "POST", "/ask", "Content-Type: application/json\r\nContent-Length: \u00b2") + b"{}"
    )
    return [
        Row("size", "GET status with a 100 kB header", "431", _raw_exchange(t, big)),
        Row(
            "values",
            "POST /ask, Content-Length: ² (a non-ASCII digit)",
            "400",
            _raw_exchange(t, non_ascii_length),
        ),
    ]


def concurrent_starts(t: Target, n: int = 64) -> Row:
    replies: list[bool] = []
    gate = threading.Barrier(n)

    def start() -> None:
        with httpx.Client(
            base_url=t.url, headers={"Authorization": f"Bearer {t.token}"}, timeout=60
        ) as c:
            gate.wait()
            r = c.post("/learning/start")
            replies.append(r.status_code == 200 and r.json()["ok"])

    threads = [threading.Thread(target=start) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    state = t.client.get("/learning/status").json()["state"]
    t.client.post("/learning/stop")
    return Row(
        "concurrency",
        f"{n} concurrent POST /learning/start (token)",
        "1 started, running",
        f"{sum(replies)} started, {state}",
    )


def start_stop_storm(t: Target, threads: int = 8, each: int = 25) -> Row:
    codes: list[int] = []

    def storm(i: int) -> None:
        with httpx.Client(
            base_url=t.url, headers={"Authorization": f"Bearer {t.token}"}, timeout=60
        ) as c:
            for j in range(each):
                verb = ("start", "stop", "pause", "resume")[(i + j) % 4]
                codes.append(c.post(f"/learning/{verb}").status_code)

    pool = [threading.Thread(target=storm, args=(i,)) for i in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    t.client.post("/learning/stop")
    deadline = time.monotonic() + 30
    while (
        t.client.get("/learning/status").json()["state"] != "idle" and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    state = t.client.get("/learning/status").json()["state"]
    bad = sum(c != 200 for c in codes)
    return Row(
        "concurrency",
        f"start/stop/pause/resume storm ({threads} threads x {each})",
        "all 200, ends idle",
        f"{'all 200' if not bad else f'{bad} not 200'}, ends {state}",
    )


def stream_cap(t: Target) -> Row:
    socks = []
    try:
        for _ in range(STREAM_CAP):
            s = _connect(t)
            s.sendall(_head(t, "GET", "/learning/stream?after=-1"))
            assert _status_of(s.recv(64)) == "200"
            socks.append(s)
        over = _raw_exchange(t, _head(t, "GET", "/learning/stream"))
    finally:
        for s in socks:
            s.close()
    # The server frees a slot once it has seen the hang-up: wait for that (bounded).
    deadline = time.monotonic() + 15
    while True:
        with t.client.stream("GET", "/learning/stream") as r:
            again = str(r.status_code)
        if again != "503" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return Row(
        "exhaustion",
        f"stream client {STREAM_CAP + 1} (cap {STREAM_CAP}), then one after they left",
        "503, then 200",
        f"{over}, then {again}",
    )


# -- fuzzed parameter values ------------------------------------------------------------------

FUZZ_PARAMS = {
    ("GET", "/learning/logs"): ("count",),
    ("GET", "/learning/stream"): ("after",),
    ("GET", "/recall"): ("q", "k", "threshold", "explain"),
    ("POST", "/ingest"): ("name",),
    ("GET", "/learning/status"): ("x",),
    ("GET", "/"): ("token",),
    ("GET", "/panel/session"): ("v",),
}

_ATOMS = [
    "",
    "0",
    "-0",
    "1",
    "-1",
    "5",
    "100",
    "1000",
    "1001",
    "2" * 19,
    "9" * 50,
    "1e3",
    "1.5",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e999",
    "0x10",
    "+5",
    "1_0",
    " 5",
    "5 ",
    "\u00b2",
    "\u0661\u0662",
    "\uff15",
    "true",
    "false",
    "yes",
    "\x00",
    "%",
    "%%",
    "%ff",
    "../../etc/passwd",
    "a.txt",
    ".txt",
    "x.pdf",
    "\u202e",
    "\ud7ff",
    "q" * 1001,
    "🙂" * 300,
]


def fuzz_value(rng: random.Random) -> str:
    """A parameter value a hostile client might send (percent-encoded by httpx)."""
    kind = rng.random()
    if kind < 0.45:
        return rng.choice(_ATOMS)
    if kind < 0.65:
        return str(rng.choice([-1, 1]) * rng.getrandbits(rng.choice([4, 16, 63, 64, 200])))
    if kind < 0.75:
        return repr(rng.uniform(-1e6, 1e6))
    n = rng.choice([1, 3, 10, 40, 300])
    return "".join(
        chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x2FFF)])) for _ in range(n)
    )


def fuzz(t: Target, values: int = 10_000, seed: int = 20) -> Row:
    """``values`` random parameter values over every endpoint's parameters: no 5xx."""
    rng = random.Random(seed)
    endpoints = list(FUZZ_PARAMS.items())
    statuses: dict[int, int] = {}
    sent = 0
    with httpx.Client(
        base_url=t.url, headers={"Authorization": f"Bearer {t.token}"}, timeout=60
    ) as c:
        while sent < values:
            (method, path), names = rng.choice(endpoints)
            params = {n: fuzz_value(rng) for n in names if rng.random() < 0.8} or {
                names[0]: fuzz_value(rng)
            }
            sent += len(params)
            content = b"x" if path == "/ingest" else None
            try:
                # A stream answers forever: read the status, then hang up.
                with c.stream(
                    method, path, params=params, content=content, follow_redirects=False
                ) as r:
                    code = r.status_code
            except httpx.HTTPError:
                code = -1
            statuses[code] = statuses.get(code, 0) + 1
    five = sum(v for k, v in statuses.items() if k >= 500 or k < 0)
    spread = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
    return Row(
        "values",
        f"{values:,} fuzzed parameter values over {len(endpoints)} endpoints",
        "0 responses >= 500",
        f"{five} responses >= 500",
        spread,
    )


def run_all(t: Target, *, fuzz_values: int = 10_000) -> list[Row]:
    """Every attack against ``t``; the last rows count 5xx and tracebacks in its log."""
    ctx = {"panel": t.session(), "other": t.session()}
    rows: list[Row] = []
    statuses: list[int] = []
    for case in CASES:
        code = case.send(t, ctx).status_code
        statuses.append(code)
        rows.append(Row(case.group, case.attack, str(case.expected), str(code)))
    free = sum(
        1
        for case, code in zip(CASES, statuses, strict=True)
        if "no credentials" in case.attack and code < 400 and case.expected >= 400
    )
    rows.append(
        Row(
            "credentials",
            "state changes and data reads that succeeded without credentials",
            "0",
            str(free),
        )
    )
    rows.append(
        Row(
            "credentials",
            "two logins: distinct session cookies and CSRF tokens",
            "distinct",
            "distinct"
            if ctx["panel"]["cookie"] != ctx["other"]["cookie"]
            and ctx["panel"]["csrf"] != ctx["other"]["csrf"]
            else "shared",
        )
    )
    rows += traversals(t)
    rows += oversized_headers(t)
    rows.append(half_bodies(t))
    rows.append(mid_stream_and_response(t))
    rows.append(chunked_cut(t))
    rows.append(nearly_done_uploads(t))
    rows.append(stream_cap(t))
    rows.append(concurrent_starts(t))
    rows.append(start_stop_storm(t))
    rows.append(fuzz(t, fuzz_values))
    five = sum(code >= 500 for code in statuses)
    rows.append(Row("log", "responses >= 500 over the table above", "0", str(five)))
    return rows


def close_and_check(t: Target) -> list[Row]:
    """Stop the server (SIGINT), then read its log and ``check`` its store."""
    code = t.stop()
    text = t.log_text()
    check = subprocess.run(
        [sys.executable, "cli.py", "check", "--json"],
        cwd=ROOT,
        env=child_env(t.data),
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        clean = json.loads(check.stdout).get("ok") is True
    except ValueError:
        clean = False
    return [
        Row(
            "log",
            "tracebacks in the server log over the whole run",
            "0",
            str(text.count("Traceback")),
        ),
        Row(
            "log",
            '"Exception in ASGI application" in the log',
            "0",
            str(text.count("Exception in ASGI")),
        ),
        Row("log", "serve exits on SIGINT", "0", str(code)),
        Row(
            "log",
            "`check` on the store afterwards",
            "clean",
            "clean" if clean and check.returncode == 0 else f"exit {check.returncode}",
        ),
    ]


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    out = ["| group | attack | expected | observed |", "| --- | --- | --- | --- |"]
    for r in rows:
        mark = "" if r.ok else " ✗"
        detail = f" ({r.detail})" if r.detail else ""
        attack = r.attack.replace("|", "\\|")
        out.append(f"| {r.group} | {attack} | {r.expected} | {r.observed}{mark}{detail} |")
    return "\n".join(out)
