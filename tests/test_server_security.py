"""The security model's parts: sessions, login codes, the token plan, and what a refusal leaves.

Every attack, request by request against a real ``cli.py serve``, is in
:mod:`tests.hostile` (``tests/test_server_hostile.py``).
"""

from __future__ import annotations

import re

import httpx
import pytest

from sentient_core.server.sessions import LoginCodes, Sessions
from tests.servers.sentient import served
from tests.test_breaker import Clock


def test_a_session_ends_after_its_lifetime_or_idle_time_and_when_revoked():
    clock = Clock()
    sessions = Sessions(lifetime_s=100, idle_s=30, clock=clock)
    a = sessions.create()
    b = sessions.create()
    assert a.id != b.id and a.csrf != b.csrf  # per client
    clock.t += 20
    assert sessions.get(a.id) == a  # used: its idle clock restarts
    clock.t += 20
    assert sessions.get(a.id) == a
    assert sessions.get(b.id) is None  # idle 40 s > 30 s
    clock.t += 25
    assert sessions.get(a.id) == a
    clock.t += 25
    assert sessions.get(a.id) == a  # 90 s after login
    clock.t += 15  # 105 s after login: past its lifetime, however busy
    assert sessions.get(a.id) is None
    c = sessions.create()
    assert sessions.revoke(c.id) and sessions.get(c.id) is None and not sessions.revoke(c.id)
    d, e = sessions.create(), sessions.create()
    assert sessions.revoke_all() == 2 and sessions.get(d.id) is None and sessions.get(e.id) is None
    assert sessions.get("") is None and sessions.get("nonsense") is None


def test_sessions_are_capped_and_the_least_recently_used_goes_first():
    sessions = Sessions(lifetime_s=100, idle_s=100, capacity=3, clock=Clock())
    first, second, third = (sessions.create() for _ in range(3))
    assert sessions.get(first.id) == first  # now second is the least recently used
    sessions.create()
    assert len(sessions) == 3
    assert sessions.get(second.id) is None and sessions.get(first.id) == first
    assert sessions.get(third.id) == third


def test_a_login_code_works_once_and_expires():
    clock = Clock()
    codes = LoginCodes(ttl_s=60, capacity=2, clock=clock)
    code = codes.issue()
    assert codes.redeem(code) and not codes.redeem(code)
    late = codes.issue()
    clock.t += 61
    assert not codes.redeem(late)
    old, mid, new = codes.issue(), codes.issue(), codes.issue()  # capacity 2: the oldest goes
    assert not codes.redeem(old) and codes.redeem(mid) and codes.redeem(new)
    assert not codes.redeem("") and not codes.redeem("x" * 32)


def test_login_link_sets_a_cookie_and_a_restart_ends_every_session(tmp_path):
    with served(tmp_path) as s:
        link = s.server.login_url()
        r = httpx.get(link, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=" in cookie
        value = cookie.split(";")[0]
        page = httpx.get(s.url + "/", headers={"Cookie": value})
        assert page.status_code == 200
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text).group(1)
        assert csrf not in httpx.get(s.url + "/").text  # the login page shows no secret
        got = httpx.get(s.url + "/panel/session", headers={"Cookie": value}).json()
        assert got == {"csrf": csrf}
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        data, port = s.host.core.data_dir, s.server.port
    from sentient_core.config import load
    from sentient_core.server import Server

    again = Server(data, load(data, env={}, flags={"server.port": (port, "--port")}), env={})
    again.start()
    try:
        assert (
            httpx.get(again.url + "learning/status", headers={"Cookie": value}).status_code == 401
        )
        assert httpx.get(link, follow_redirects=False).status_code == 401  # nor the old link
    finally:
        again.stop()


def test_the_token_opens_a_session_through_the_api_and_logout_ends_it(tmp_path):
    with served(tmp_path) as s:
        r = s.client.get("/panel/session")
        value = r.headers["set-cookie"].split(";")[0]
        csrf = r.json()["csrf"]
        headers = {"Cookie": value, "X-CSRF-Token": csrf}
        assert httpx.post(s.url + "/learning/pause", headers=headers).status_code == 200
        assert httpx.post(s.url + "/panel/logout", headers=headers).status_code == 200
        assert httpx.get(s.url + "/learning/status", headers={"Cookie": value}).status_code == 401
        assert 'sentient_http_refused_total{status="401"}' in s.client.get("/metrics").text


def test_refusals_leave_no_trace(tmp_path):
    with served(tmp_path) as s:
        r = s.client.post("/ask", json={"question": "sneaky?"}, headers={"Host": "evil.example"})
        assert r.status_code == 403
        r = s.anon.post("/ask", json={"question": "sneaky too?"})
        assert r.status_code == 401
        book = s.host.learner.curiosity.book
        assert book.get("sneaky?") is None and book.get("sneaky too?") is None
        assert 'sentient_http_refused_total{status="403"}' in s.client.get("/metrics").text


def test_a_second_server_on_the_same_data_dir_is_refused(tmp_path):
    from sentient_core.config import load
    from sentient_core.control import LearnerBusyError
    from sentient_core.server import Server

    with served(tmp_path) as s:
        data = s.host.core.data_dir
        with pytest.raises(LearnerBusyError, match="already runs"):
            Server(data, load(data, env={}), env={})


def test_the_token_is_kept_in_a_0600_file_and_never_printed(tmp_path):
    import stat

    from sentient_core.config import ServerSection
    from sentient_core.server.security import TOKEN_FILE, plan

    policy, notice = plan(ServerSection(host="0.0.0.0"), tmp_path, env={})
    assert policy.any_ip and policy.token not in notice  # the token is never printed
    saved = tmp_path / TOKEN_FILE
    assert saved.read_text().strip() == policy.token and str(saved) in notice
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    given, notice = plan(
        ServerSection(host="192.0.2.10"), tmp_path, env={"SENTIENT_SERVER_TOKEN": "t" * 20}
    )
    assert given.token == "t" * 20 and "t" * 20 not in notice
    assert "192.0.2.10" in given.hosts and not given.any_ip
    assert given.token_matches("t" * 20) and not given.token_matches("t" * 19)
    loop, notice = plan(ServerSection(), tmp_path, env={})
    assert loop.token not in notice and loop.token != policy.token
    with pytest.raises(ValueError, match="shorter than 16"):
        plan(ServerSection(), tmp_path, env={"SENTIENT_SERVER_TOKEN": "short"})
