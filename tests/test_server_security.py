"""The security model, request by request, against real servers on loopback.

:data:`CASES` is the table the report shows (``python bench/security_table.py``
prints it): each row is a request, the status it must get, and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from tests.servers.sentient import Served, served

UPLOAD_LIMIT = 4096
EXTRA = f"max_upload_bytes = {UPLOAD_LIMIT}\nmax_body_bytes = 2048\n"


@dataclass(frozen=True)
class Case:
    name: str
    server: str  # "open" (loopback default) or "token" (require_token = true)
    request: Callable[[Served, dict], httpx.Response]
    expected: int


def _panel(s: Served) -> dict:
    """What a browser gets from GET /: the session cookie and the CSRF token."""
    r = httpx.get(s.url + "/")  # a client of its own: the test clients keep no cookie
    cookie = r.headers.get("set-cookie", "")
    m = re.search(r'name="csrf-token" content="([^"]+)"', r.text)
    name, _, rest = cookie.partition("=")
    return {"cookie": f"{name}={rest.split(';')[0]}", "csrf": m.group(1) if m else ""}


def _raw(s: Served, method: str, path: str, **headers: str) -> httpx.Response:
    return s.anon.request(method, path, headers=headers)


def _chunks(n: int):
    sent = 0
    while sent < n:
        yield b"x" * 1024
        sent += 1024


CASES = [
    Case(
        "read status, no credentials, loopback",
        "open",
        lambda s, p: s.anon.get("/learning/status"),
        200,
    ),
    Case("POST pause, no credentials", "open", lambda s, p: s.anon.post("/learning/pause"), 401),
    Case(
        "POST pause, wrong token",
        "open",
        lambda s, p: s.anon.post("/learning/pause", headers={"Authorization": "Bearer nope" * 4}),
        401,
    ),
    Case("POST pause, right token", "open", lambda s, p: s.client.post("/learning/pause"), 200),
    Case(
        "POST pause, right token, Origin http://evil.example",
        "open",
        lambda s, p: s.client.post("/learning/pause", headers={"Origin": "http://evil.example"}),
        403,
    ),
    Case(
        "POST pause, panel cookie, no X-CSRF-Token",
        "open",
        lambda s, p: _raw(s, "POST", "/learning/pause", Cookie=p["cookie"]),
        403,
    ),
    Case(
        "POST pause, panel cookie, wrong X-CSRF-Token",
        "open",
        lambda s, p: _raw(
            s, "POST", "/learning/pause", Cookie=p["cookie"], **{"X-CSRF-Token": "x"}
        ),
        403,
    ),
    Case(
        "POST pause, panel cookie + X-CSRF-Token, same Origin",
        "open",
        lambda s, p: _raw(
            s,
            "POST",
            "/learning/pause",
            Cookie=p["cookie"],
            **{"X-CSRF-Token": p["csrf"], "Origin": s.url},
        ),
        200,
    ),
    Case(
        "POST pause, cookie + CSRF, Origin http://evil.example (cross-site form/fetch)",
        "open",
        lambda s, p: _raw(
            s,
            "POST",
            "/learning/pause",
            Cookie=p["cookie"],
            **{"X-CSRF-Token": p["csrf"], "Origin": "http://evil.example"},
        ),
        403,
    ),
    Case(
        "POST pause, cookie + CSRF, Sec-Fetch-Site: cross-site",
        "open",
        lambda s, p: _raw(
            s,
            "POST",
            "/learning/pause",
            Cookie=p["cookie"],
            **{"X-CSRF-Token": p["csrf"], "Sec-Fetch-Site": "cross-site"},
        ),
        403,
    ),
    Case(
        "GET status, Host: evil.example (DNS rebinding)",
        "open",
        lambda s, p: s.client.get("/learning/status", headers={"Host": "evil.example"}),
        403,
    ),
    Case(
        "GET /, Host: evil.example:PORT (DNS rebinding)",
        "open",
        lambda s, p: s.anon.get("/", headers={"Host": f"evil.example:{s.server.port}"}),
        403,
    ),
    Case(
        "GET status, Host: 127.0.0.1 on another port",
        "open",
        lambda s, p: s.client.get("/learning/status", headers={"Host": "127.0.0.1:1"}),
        403,
    ),
    Case(
        "GET stream, Origin http://evil.example",
        "open",
        lambda s, p: s.client.get("/learning/stream", headers={"Origin": "http://evil.example"}),
        403,
    ),
    Case(
        "POST /ask, JSON body past max_body_bytes (Content-Length)",
        "open",
        lambda s, p: s.client.post("/ask", json={"question": "q" * 5000}),
        413,
    ),
    Case(
        "POST /ingest, upload past max_upload_bytes (Content-Length)",
        "open",
        lambda s, p: s.client.post(
            "/ingest", params={"name": "big.txt"}, content=b"x" * (UPLOAD_LIMIT + 1)
        ),
        413,
    ),
    Case(
        "POST /ingest, chunked upload past max_upload_bytes (no Content-Length)",
        "open",
        lambda s, p: s.client.post(
            "/ingest", params={"name": "big.txt"}, content=_chunks(UPLOAD_LIMIT + 2048)
        ),
        413,
    ),
    Case(
        "POST /ask, token, text/plain body",
        "open",
        lambda s, p: s.client.post(
            "/ask", content=b'{"question":"x"}', headers={"Content-Type": "text/plain"}
        ),
        415,
    ),
    Case(
        "GET status, no credentials, require_token",
        "token",
        lambda s, p: s.anon.get("/learning/status"),
        401,
    ),
    Case(
        "GET metrics, no credentials, require_token",
        "token",
        lambda s, p: s.anon.get("/metrics"),
        401,
    ),
    Case(
        "GET health, no credentials, require_token",
        "token",
        lambda s, p: s.anon.get("/health"),
        200,
    ),
    Case(
        "GET / (panel), no credentials, require_token", "token", lambda s, p: s.anon.get("/"), 401
    ),
    Case(
        "GET /?token=TOKEN (panel login)",
        "token",
        lambda s, p: s.anon.get("/", params={"token": s.token}),
        200,
    ),
    Case(
        "GET status with the cookie from /?token=",
        "token",
        lambda s, p: _raw(s, "GET", "/learning/status", Cookie=p["cookie"]),
        200,
    ),
    Case(
        "GET status, Bearer token, require_token",
        "token",
        lambda s, p: s.client.get("/learning/status"),
        200,
    ),
]


def _token_panel(s: Served) -> dict:
    r = httpx.get(s.url + "/", params={"token": s.token})
    name, _, rest = r.headers.get("set-cookie", "").partition("=")
    return {"cookie": f"{name}={rest.split(';')[0]}", "csrf": ""}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    with (
        served(tmp_path_factory.mktemp("open"), EXTRA) as open_,
        served(tmp_path_factory.mktemp("token"), EXTRA + "require_token = true\n") as token,
    ):
        open_.client.post("/learning/start")
        yield {"open": (open_, _panel(open_)), "token": (token, _token_panel(token))}
        open_.client.post("/learning/stop")


def run_case(case: Case, servers: dict) -> int:
    s, panel = servers[case.server]
    return case.request(s, panel).status_code


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_security_table(servers, case):
    assert run_case(case, servers) == case.expected


def test_refusals_leave_no_trace_and_headers_are_set(servers):
    s, _ = servers["open"]
    before = s.status()["stats"]
    r = s.anon.post("/ask", json={"question": "sneaky?"}, headers={"Host": "evil.example"})
    assert r.status_code == 403
    assert s.host.learner.curiosity.book.get("sneaky?") is None
    r = httpx.get(s.url + "/")
    assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=strict" in r.headers["set-cookie"]
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert before["iterations"] <= s.status()["stats"]["iterations"]
    assert 'sentient_http_refused_total{status="403"}' in s.client.get("/metrics").text


def test_a_second_server_on_the_same_data_dir_is_refused(tmp_path):
    from sentient_core.config import load
    from sentient_core.control import LearnerBusyError
    from sentient_core.server import Server

    with served(tmp_path) as s:
        data = s.host.core.data_dir
        with pytest.raises(LearnerBusyError, match="already runs"):
            Server(data, load(data, env={}), env={})


def test_binding_beyond_loopback_requires_a_token_generated_and_printed_once(tmp_path):
    import stat

    from sentient_core.config import ServerSection
    from sentient_core.server.security import TOKEN_FILE, plan

    policy, notice = plan(ServerSection(host="0.0.0.0"), tmp_path, env={})
    assert policy.require_token and policy.any_ip
    assert policy.token in notice and "printed once" in notice
    saved = tmp_path / TOKEN_FILE
    assert saved.read_text().strip() == policy.token
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    given, notice = plan(
        ServerSection(host="192.0.2.10"), tmp_path, env={"SENTIENT_SERVER_TOKEN": "t" * 20}
    )
    assert given.require_token and given.token == "t" * 20 and "t" * 20 not in notice
    assert "192.0.2.10" in given.hosts and not given.any_ip
    loop, notice = plan(ServerSection(), tmp_path, env={})
    assert not loop.require_token and loop.token not in notice
    with pytest.raises(ValueError, match="shorter than 16"):
        plan(ServerSection(), tmp_path, env={"SENTIENT_SERVER_TOKEN": "short"})
