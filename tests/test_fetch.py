"""Fetcher end to end through a real loopback HTTPS server with a test CA.

The test configuration explicitly allows the server: ``allow_private_addresses``
and the host names ``localhost`` / ``content.test`` added to the allow-list.
Good content is saved inside the incoming dir; every hostile route is refused
by the named check (or fails with :class:`FetchError`), and nothing is written
anywhere else.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import httpcore
import httpx
import pypdf
import pytest

from sentient_core.learning.fetch import (
    Fetcher,
    FetchError,
    FetchResult,
    FetchStatusError,
    FetchTimeout,
    _PinnedBackend,
)
from sentient_core.learning.safety import (
    CHECKS,
    DEFAULT_ALLOWED_DOMAINS,
    Refusal,
    SafetyFilter,
    SafetyPolicy,
)
from tests.servers.content import CONTENT, ContentServer, closed_port


@pytest.fixture(scope="module")
def server() -> Iterator[ContentServer]:
    with ContentServer(hang_s=3.0, drip_s=0.05, stream_limit_s=10.0) as srv:
        yield srv


def _policy(root: Path, port: int | None = None, **overrides) -> SafetyPolicy:
    """The test configuration: the loopback server's names, its port, private addresses."""
    overrides.setdefault("rate_limit_requests", 1000)
    if port is not None:
        overrides.setdefault("allowed_host_ports", (f"localhost:{port}", f"content.test:{port}"))
    return SafetyPolicy(
        incoming_dir=str(root / "incoming"),
        allowed_domains=(*DEFAULT_ALLOWED_DOMAINS, "localhost", "content.test"),
        allow_private_addresses=True,
        **overrides,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` except the incoming dir, with its content hash."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == "incoming":
            continue
        out[str(rel)] = hashlib.sha256(p.read_bytes()).digest() if p.is_file() else b"dir"
    return out


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    """A tmp dir with a decoy file outside the incoming dir; asserts nothing changed outside."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "decoy.txt").write_text("do not touch\n")
    before = _snapshot(tmp_path)
    yield tmp_path
    assert _snapshot(tmp_path) == before


def _fetcher(server: ContentServer, root: Path, **kw) -> tuple[Fetcher, SafetyFilter]:
    safety = SafetyFilter(
        _policy(root, server.port, **kw.pop("policy", {})), **kw.pop("safety", {})
    )
    return Fetcher(safety, verify=server.ca_path, **kw), safety


def _incoming(root: Path) -> list[str]:
    d = root / "incoming"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


# ---------------------------------------------------------------------------- good content


@pytest.mark.parametrize(
    ("path", "mime", "ext"),
    [
        ("/page.html", "text/html", ".html"),
        ("/paper.pdf", "application/pdf", ".pdf"),
        ("/data.json", "application/json", ".json"),
        ("/notes.md", "text/markdown", ".md"),
        ("/plain.txt", "text/plain", ".txt"),
        ("/html-charset", "text/html", ".html"),
    ],
)
def test_fetch_good_content(
    server: ContentServer, sandbox: Path, path: str, mime: str, ext: str
) -> None:
    fetcher, safety = _fetcher(server, sandbox)
    with fetcher:
        result = fetcher.fetch(server.url(path))
    assert isinstance(result, FetchResult)
    assert (result.mime, result.data, result.bytes) == (
        mime,
        CONTENT[path][1],
        len(CONTENT[path][1]),
    )
    assert result.final_url == result.url == server.url(path)
    saved = Path(result.saved_path)
    assert saved.suffix == ext and saved.read_bytes() == result.data
    assert saved.parent == (sandbox / "incoming").resolve()
    assert _incoming(sandbox) == [saved.name]  # no temp files left behind
    assert safety.counters() == dict.fromkeys(CHECKS, 0)
    assert safety.files_left() == 49


def test_fetched_pdf_is_a_real_pdf(server: ContentServer, sandbox: Path) -> None:
    fetcher, _ = _fetcher(server, sandbox)
    with fetcher:
        result = fetcher.fetch(server.url("/paper.pdf"))
        back = fetcher.read_local(result.saved_path)
    text = pypdf.PdfReader(io.BytesIO(result.data)).pages[0].extract_text()
    assert "Holographic memory" in text
    assert (back.mime, back.data) == ("application/pdf", result.data)


def test_redirects_within_the_limit_are_followed(server: ContentServer, sandbox: Path) -> None:
    fetcher, safety = _fetcher(server, sandbox)
    with fetcher:
        result = fetcher.fetch(server.url("/hop/5"))
    assert result.redirects == 5
    assert result.final_url == server.url("/page.html")
    assert result.data == CONTENT["/page.html"][1]
    assert safety.counters()["redirect"] == 0


def test_connects_to_the_checked_address(server: ContentServer, sandbox: Path) -> None:
    # content.test has no real DNS entry: success proves the connection used the
    # address the safety filter resolved and approved, not a second lookup.
    fetcher, _ = _fetcher(server, sandbox, safety={"resolver": lambda host: ["127.0.0.1"]})
    with fetcher:
        assert fetcher.fetch(server.url("/page.html", host="content.test")).bytes > 0
    # An approved but different address is what gets dialled (nothing listens there).
    other, _ = _fetcher(server, sandbox / "b", safety={"resolver": lambda host: ["127.0.0.2"]})
    with other, pytest.raises(FetchError, match="network error"):
        other.fetch(server.url("/page.html"))


def test_pinned_backend_refuses_unchecked_hosts(server: ContentServer) -> None:
    with pytest.raises(httpcore.ConnectError, match="no safety-checked address"):
        _PinnedBackend().connect_tcp("localhost", server.port, timeout=1.0)


def test_saving_replaces_a_planted_symlink(server: ContentServer, sandbox: Path) -> None:
    url = server.url("/page.html")
    incoming = sandbox / "incoming"
    incoming.mkdir()
    name = hashlib.sha256(url.encode()).hexdigest()[:32] + ".html"
    (incoming / name).symlink_to(sandbox / "outside" / "decoy.txt")
    fetcher, _ = _fetcher(server, sandbox)
    with fetcher:
        result = fetcher.fetch(url)
    saved = Path(result.saved_path)
    assert saved.name == name and not saved.is_symlink()
    assert saved.read_bytes() == CONTENT["/page.html"][1]
    # the sandbox fixture checks that outside/decoy.txt is unchanged


# ---------------------------------------------------------------------------- ports


def test_a_port_not_allow_listed_is_refused_before_any_request(
    server: ContentServer, sandbox: Path
) -> None:
    # localhost is an allowed domain and the server really listens there: only
    # the port check stands between the URL and the request.
    safety = SafetyFilter(_policy(sandbox))
    served = len(server.requests)
    with Fetcher(safety, verify=server.ca_path) as fetcher, pytest.raises(Refusal) as info:
        fetcher.fetch(server.url("/page.html"))
    assert info.value.check == "port" and str(server.port) in info.value.reason
    assert len(server.requests) == served
    assert safety.counters() == {name: int(name == "port") for name in CHECKS}
    assert _incoming(sandbox) == []


# ---------------------------------------------------------------------------- hostile routes

HOSTILE_ROUTES = [
    ("/hop/6", "redirect", ""),
    ("/loop", "redirect", ""),
    ("/loop/a", "redirect", ""),
    ("/redirect/offlist", "redirect", "domain_allowlist"),
    ("/redirect/private-ip", "redirect", "ip_literal"),
    ("/redirect/metadata", "redirect", "ip_literal"),
    ("/redirect/downgrade", "redirect", "scheme"),
    ("/redirect/userinfo", "redirect", "userinfo"),
    ("/redirect/backslash", "redirect", "scheme"),
    ("/redirect/other-port", "redirect", "port"),
    ("/redirect/superscript-port", "redirect", "port"),
    ("/redirect/two-locations", "redirect", ""),
    ("/octet", "mime", ""),
    ("/image.png", "mime", ""),
    ("/notype", "mime", ""),
    ("/oversize/declared", "max_bytes", ""),
    ("/oversize/stream", "max_bytes", ""),
]


@pytest.mark.parametrize(("path", "check", "inner"), HOSTILE_ROUTES)
def test_hostile_route_refused(
    server: ContentServer, sandbox: Path, path: str, check: str, inner: str
) -> None:
    fetcher, safety = _fetcher(server, sandbox)
    with fetcher, pytest.raises(Refusal) as info:
        fetcher.fetch(server.url(path))
    assert (info.value.check, info.value.inner) == (check, inner)
    assert info.value.reason
    assert safety.counters() == {name: int(name == check) for name in CHECKS}
    assert _incoming(sandbox) == []
    assert safety.files_left() == 50


def test_private_ip_redirect_target_is_really_reachable(server: ContentServer) -> None:
    # The refused redirect above points at a live server: only the check stopped it.
    with httpx.Client(verify=server.client_context(), trust_env=False) as client:
        assert client.get(server.url("/page.html", host="127.0.0.1")).status_code == 200


def test_endless_stream_stops_when_the_client_leaves(sandbox: Path) -> None:
    # A server of its own, so no other test's stream can end in the meantime.
    with ContentServer(stream_limit_s=10.0) as srv:
        fetcher, _ = _fetcher(srv, sandbox)
        with fetcher, pytest.raises(Refusal, match="max_bytes"):
            fetcher.fetch(srv.url("/oversize/stream"))
        assert srv.stream_ended.wait(10.0)
        assert srv.stream_ends == ["client disconnected"]


@pytest.mark.parametrize(
    ("path", "status", "cls"),
    [
        ("/status/500", 500, FetchStatusError),
        ("/status/404", 404, FetchStatusError),
        ("/status/403", 403, FetchStatusError),
        ("/redirect/no-location", 302, FetchError),
    ],
)
def test_http_errors(
    server: ContentServer, sandbox: Path, path: str, status: int, cls: type
) -> None:
    fetcher, safety = _fetcher(server, sandbox)
    with fetcher, pytest.raises(FetchError) as info:
        fetcher.fetch(server.url(path))
    assert type(info.value) is cls and info.value.status == status
    assert safety.counters() == dict.fromkeys(CHECKS, 0)  # a failure, not a refusal
    assert _incoming(sandbox) == []


def test_server_down(server: ContentServer, sandbox: Path) -> None:
    port = closed_port()
    fetcher, safety = _fetcher(
        server, sandbox, policy={"allowed_host_ports": (f"localhost:{port}",)}
    )
    with fetcher, pytest.raises(FetchError) as info:
        fetcher.fetch(f"https://localhost:{port}/page.html")
    assert not isinstance(info.value, FetchTimeout) and info.value.status is None
    assert "network error" in info.value.reason
    assert safety.counters() == dict.fromkeys(CHECKS, 0)


def test_read_timeout(server: ContentServer, sandbox: Path) -> None:
    fetcher, _ = _fetcher(server, sandbox, timeout=httpx.Timeout(0.2, connect=2.0))
    with fetcher, pytest.raises(FetchTimeout, match="ReadTimeout"):
        fetcher.fetch(server.url("/slow"))
    assert _incoming(sandbox) == []


def test_slow_drip_hits_the_deadline(server: ContentServer, sandbox: Path) -> None:
    ticks = iter(range(10**6))  # a clock that advances one second per reading
    fetcher, _ = _fetcher(server, sandbox, max_duration_s=5.0, clock=lambda: float(next(ticks)))
    with fetcher, pytest.raises(FetchTimeout, match="longer than 5 s"):
        fetcher.fetch(server.url("/drip"))
    assert _incoming(sandbox) == []


def test_bad_certificate_is_a_fetch_error(server: ContentServer, sandbox: Path) -> None:
    safety = SafetyFilter(_policy(sandbox, server.port))
    # The system CAs do not know the test CA.
    with Fetcher(safety) as fetcher, pytest.raises(FetchError, match="network error"):
        fetcher.fetch(server.url("/page.html"))
    with pytest.raises(ValueError, match="verify=False"):
        Fetcher(safety, verify=False)


# ---------------------------------------------------------------------------- quotas end to end


def test_51st_file_and_rate_limit_end_to_end(server: ContentServer, sandbox: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 7.0  # at most 9 requests in any 60 s: never rate limited
        return now[0]

    fetcher, safety = _fetcher(
        server, sandbox, policy={"rate_limit_requests": 10}, safety={"clock": clock}
    )
    with fetcher:
        for i in range(50):
            fetcher.fetch(server.url(f"/page.html?copy={i}"))
        served = len(server.requests)
        with pytest.raises(Refusal) as info:
            fetcher.fetch(server.url("/page.html?copy=50"))
    assert info.value.check == "file_count"
    assert len(server.requests) == served  # refused before any request
    assert len(_incoming(sandbox)) == 50
    assert safety.counters() == {name: int(name == "file_count") for name in CHECKS}


def test_11th_request_within_60_s_end_to_end(server: ContentServer, sandbox: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    fetcher, safety = _fetcher(
        server, sandbox, policy={"rate_limit_requests": 10}, safety={"clock": clock}
    )
    with fetcher:
        for _ in range(10):
            fetcher.fetch(server.url("/plain.txt"))
        served = len(server.requests)
        with pytest.raises(Refusal) as info:
            fetcher.fetch(server.url("/plain.txt"))
    assert info.value.check == "rate_limit"
    assert len(server.requests) == served
    assert safety.counters() == {name: int(name == "rate_limit") for name in CHECKS}
