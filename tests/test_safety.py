"""Safety filter: a table of hostile inputs, each refused by the named check with a
reason and a counter bump; allowed inputs pass; the registry, rate window, file
quota, callback and policy normalisation.

The table (:data:`HOSTILE`) is module-level so its outcome counts can be quoted::

    PYTHONPATH=. python -m tests.test_safety      # prints the outcome table

Network-shaped cases run through :class:`Fetcher` on an ``httpx.MockTransport``
with an injected resolver: nothing here leaves the process (the end-to-end
versions through a real loopback HTTPS server are in ``test_fetch.py``).
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import msgspec
import pytest

from sentient_core.learning.fetch import Fetcher, FetchError
from sentient_core.learning.safety import (
    CHECKS,
    DEFAULT_ALLOWED_DOMAINS,
    Refusal,
    SafetyFilter,
    SafetyPolicy,
    Target,
)
from sentient_core.learning.safety.urls import UrlRules

MiB = 1024 * 1024
#: Stands in for a public address; never connected to (MockTransport answers).
PUBLIC = "93.184.216.34"


@dataclass(frozen=True)
class Case:
    """One hostile input: what kind of check it goes through, the input, the check expected."""

    kind: str
    subject: str
    check: str
    inner: str = ""

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.subject}"[:80]


def _cases(kind: str, check: str, subjects: list[str], inner: str = "") -> list[Case]:
    return [Case(kind, s, check, inner) for s in subjects]


HOSTILE: list[Case] = [
    # -- scheme tricks
    *_cases(
        "url",
        "scheme",
        [
            "http://arxiv.org/abs/1",
            "HTTP://arxiv.org/",
            "hTtP://arxiv.org/",
            "file:///etc/passwd",
            "ftp://arxiv.org/pub",
            "data:text/html,<script>alert(1)</script>",
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "gopher://arxiv.org/",
            "wss://arxiv.org/",
            "arxiv.org/abs/1",
            "//arxiv.org/abs/1",
            "https:/arxiv.org/abs/1",
            "https:arxiv.org",
            "https:///arxiv.org",
            "https://",
            "https:\\\\arxiv.org",
            "https://evil.com\\@arxiv.org/",
            "https://arxiv.org\\.evil.com/",
            " https://arxiv.org/",
            "https://arxiv.org/\tx",
            "ht\ntps://arxiv.org/",
            "https://arxiv.org\x00.evil.com/",
            "",
        ],
    ),
    # -- userinfo
    *_cases(
        "url",
        "userinfo",
        [
            "https://user:pass@arxiv.org/",
            "https://arxiv.org@evil.com/",
            "https://arxiv.org:443@evil.com/",
            "https://@arxiv.org/",
            "https://user@127.0.0.1/",
        ],
    ),
    # -- IP literals in every spelling
    *_cases(
        "url",
        "ip_literal",
        [
            "https://127.0.0.1/",
            "https://10.0.0.1/",
            "https://169.254.169.254/latest/meta-data/",
            "https://8.8.8.8/",
            "https://127.0.0.1./",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0x7f.1/",
            "https://0177.0.0.1/",
            "https://0177.1/",
            "https://127.1/",
            "https://0/",
            "https://%31%32%37.0.0.1/",
            "https://1.2.3.4.5/",
            "https://arxiv.0x10/",
            "https://[::1]/",
            "https://[0:0:0:0:0:0:0:1]:443/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://[fe80::1%25eth0]/",
        ],
    ),
    # -- look-alike domains
    *_cases(
        "url",
        "domain_allowlist",
        [
            "https://evilarxiv.org/",
            "https://arxiv.org.evil.com/",
            "https://arxiv.org-evil.com/",
            "https://wikipedia.org.evil.com/wiki/X",
            "https://evilwikipedia.org/",
            "https://arxiv.com/",
            "https://xn--arxv-nza.org/",
            "https://arxıv.org/",
            "https://аrxiv.org/",
            "https://ａｒｘｉｖ.org/",
            "https://arxiv.org../",
            "https://.arxiv.org/",
            "https://arxiv.org%2eevil.com/",
            "https://arxiv_org.evil.com/",
            "https://evil.com#@arxiv.org",
            "https://evil.com?.arxiv.org",
            "https://localhost/",
            "https://raw.githubusercontent.com.evil.io/",
        ],
    ),
    # -- ports: only 443 unless allow-listed; ASCII digits only; one canonical spelling
    *_cases(
        "url",
        "port",
        [
            "https://github.com:6379/",
            "https://github.com:22/",
            "https://arxiv.org:8080/abs/1",
            "https://docs.python.org:80/3/",
            "https://en.wikipedia.org.:8443/wiki/X",
            "https://github.com:65535/",
            "https://arxiv.org:99999/",
            "https://arxiv.org:0/",
            "https://arxiv.org:ssh/",
            "https://github.com:/",
            "https://github.com:0443/",
            "https://github.com:+443/",
            "https://github.com:4_43/",
            "https://github.com:443:80/",
            "https://github.com:٨٠/",
            "https://github.com:٤٤٣/",
            "https://github.com:۴۴۳/",
            "https://github.com:४४३/",
            "https://github.com:¹²³/",
            "https://github.com:６３７９/",
            "https://github.com:𝟒𝟒𝟑/",
            "https://github.com:443١/",
        ],
    ),
    # -- names resolving to private addresses (injected resolver)
    *_cases(
        "address",
        "private_address",
        [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "0.0.0.0",
            "240.0.0.1",
            "255.255.255.255",
            "::1",
            "fe80::1",
            "fc00::1",
            "::ffff:10.0.0.1",
            "2002:7f00:1::",
            "64:ff9b::a00:1",
            f"{PUBLIC},10.0.0.1",
            "",
            "not-an-ip",
        ],
    ),
    # -- redirects and content, through the Fetcher on a MockTransport
    Case("fetch", "redirect_offlist", "redirect", "domain_allowlist"),
    Case("fetch", "redirect_lookalike", "redirect", "domain_allowlist"),
    Case("fetch", "redirect_private_ip", "redirect", "ip_literal"),
    Case("fetch", "redirect_private_name", "redirect", "private_address"),
    Case("fetch", "redirect_downgrade", "redirect", "scheme"),
    Case("fetch", "redirect_userinfo", "redirect", "userinfo"),
    Case("fetch", "redirect_other_port", "redirect", "port"),
    Case("fetch", "redirect_relative_other_port", "redirect", "port"),
    Case("fetch", "redirect_superscript_port", "redirect", "port"),
    Case("fetch", "redirect_loop", "redirect"),
    Case("fetch", "redirect_too_many", "redirect"),
    Case("fetch", "name_resolves_private", "private_address"),
    Case("fetch", "oversize_content_length", "max_bytes"),
    Case("fetch", "oversize_chunked_stream", "max_bytes"),
    Case("fetch", "mime_octet_stream", "mime"),
    Case("fetch", "mime_png", "mime"),
    Case("fetch", "mime_missing", "mime"),
    Case("fetch", "mime_two_types", "mime"),
    # -- content checks called directly
    *_cases(
        "mime",
        "mime",
        ["application/octet-stream", "image/svg+xml", "text/javascript", "text/htmlx", ""],
    ),
    *_cases("size", "max_bytes", [str(10 * MiB + 1), str(2**40)]),
    # -- local paths (tmp layout built by _layout)
    *_cases(
        "local",
        "local_path",
        [
            "../outside/secret.txt",
            "sub/../../outside/secret.txt",
            "../../../../../../etc/passwd",
            "{outside}/secret.txt",
            "{incoming}-evil/file.txt",
            "{incoming}/../outside/secret.txt",
            "escape.txt",
            "linkdir/secret.txt",
            "/etc/passwd",
            "/proc/self/environ",
            "/proc/1/cmdline",
            "/sys/kernel/hostname",
            "/dev/zero",
            "sub",
            "fifo.txt",
            "",
            "a\x00.txt",
            "loop.txt",
            "hard.txt",
            "rel-escape.txt",
            "sub/up/outside/secret.txt",
        ],
    ),
    Case("local", "script.sh", "mime"),
    Case("local", "huge.txt", "max_bytes"),
    # -- quotas
    Case("files", "51st file of the session", "file_count"),
    Case("rate", "11th request within 60 s", "rate_limit"),
]

ALLOWED_URLS = [
    "https://arxiv.org/abs/2401.00001",
    "https://ARXIV.org/abs/1",
    "HTTPS://arxiv.org/",
    "https://export.arxiv.org/api/query?search_query=all:electron",
    "https://en.wikipedia.org./wiki/Prime_number",
    "https://de.wikipedia.org:443/wiki/Primzahl#Eigenschaften",
    "https://bücher.wikipedia.org/",
    "https://a.b.c.github.com/x/y",
    "https://raw.githubusercontent.com/python/cpython/main/README.rst",
    "https://docs.python.org/3/library/ipaddress.html",
    "https://huggingface.co/docs",
    "https://www.nature.com/articles/x",
]


def _policy(root: Path, **overrides) -> SafetyPolicy:
    return SafetyPolicy(incoming_dir=str(root / "incoming"), **overrides)


def _layout(root: Path) -> Path:
    """incoming/{a.txt, sub/, escape.txt -> outside, linkdir -> outside, hard.txt, fifo.txt, ...}."""
    incoming = root / "incoming"
    outside = root / "outside"
    (incoming / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "incoming-evil").mkdir()
    (root / "incoming-evil" / "file.txt").write_text("next door\n")
    (outside / "secret.txt").write_text("secret\n")
    (incoming / "a.txt").write_text("allowed\n")
    (incoming / "sub" / "b.md").write_text("# allowed\n")
    (incoming / "inside-link.txt").symlink_to(incoming / "a.txt")
    (incoming / "escape.txt").symlink_to(outside / "secret.txt")
    (incoming / "linkdir").symlink_to(outside, target_is_directory=True)
    (incoming / "loop.txt").symlink_to(incoming / "loop.txt")
    os.link(outside / "secret.txt", incoming / "hard.txt")  # a second name, inside
    (incoming / "rel-escape.txt").symlink_to("../outside/secret.txt")
    (incoming / "sub" / "up").symlink_to("../..", target_is_directory=True)
    (incoming / "script.sh").write_text("echo hi\n")
    os.mkfifo(incoming / "fifo.txt")
    with open(incoming / "huge.txt", "wb") as f:
        f.truncate(10 * MiB + 1)  # sparse: no real disk use
    return incoming


def _resolver(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
    def resolve(host: str) -> list[str]:
        return table.get(host, [PUBLIC])

    return resolve


def _scenario(
    name: str,
) -> tuple[Callable[[httpx.Request], httpx.Response], dict[str, list[str]], list]:
    """A MockTransport handler, the resolver table and a list that records pulled chunks."""
    pulled: list[int] = []

    def redirect(location: str | bytes) -> Callable[[httpx.Request], httpx.Response]:
        return lambda request: httpx.Response(302, headers={"Location": location})

    def endless():
        while True:
            pulled.append(1)
            yield b"x" * 65536

    resolve: dict[str, list[str]] = {}
    if name == "redirect_offlist":
        handler = redirect("https://evil.example/page")
    elif name == "redirect_lookalike":
        handler = redirect("https://arxiv.org.evil.com/abs/1")
    elif name == "redirect_private_ip":
        handler = redirect("https://10.0.0.1/admin")
    elif name == "redirect_private_name":
        handler = redirect("https://intranet.arxiv.org/")
        resolve = {"intranet.arxiv.org": ["10.1.2.3"]}
    elif name == "redirect_downgrade":
        handler = redirect("http://arxiv.org/abs/1")
    elif name == "redirect_userinfo":
        handler = redirect("https://admin:admin@arxiv.org/")
    elif name == "redirect_other_port":
        handler = redirect("https://arxiv.org:22/")
    elif name == "redirect_relative_other_port":
        handler = redirect("//arxiv.org:6379/x")
    elif name == "redirect_superscript_port":
        handler = redirect("https://arxiv.org:¹²³/".encode())  # a UTF-8 header value
    elif name == "redirect_loop":

        def handler(request: httpx.Request) -> httpx.Response:
            back = "/abs/2" if request.url.path == "/abs/1" else "/abs/1"
            return httpx.Response(302, headers={"Location": back})
    elif name == "redirect_too_many":

        def handler(request: httpx.Request) -> httpx.Response:
            n = int(request.url.params.get("n", "0"))
            return httpx.Response(302, headers={"Location": f"/abs/1?n={n + 1}"})

    elif name == "name_resolves_private":
        handler = redirect("/never-asked")
        resolve = {"arxiv.org": ["10.0.0.8"]}
    elif name == "oversize_content_length":

        def handler(request: httpx.Request) -> httpx.Response:
            headers = {"Content-Type": "text/plain", "Content-Length": str(10 * MiB + 1)}
            return httpx.Response(200, headers=headers, content=endless())

    elif name == "oversize_chunked_stream":

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, headers={"Content-Type": "text/plain"}, content=endless())

    else:
        content_type = {
            "mime_octet_stream": "application/octet-stream",
            "mime_png": "image/png",
            "mime_missing": None,
            "mime_two_types": "text/html, application/octet-stream",
        }[name]

        def handler(request: httpx.Request) -> httpx.Response:
            headers = {} if content_type is None else {"Content-Type": content_type}
            return httpx.Response(200, headers=headers, content=b"data")

    return handler, resolve, pulled


@dataclass
class Outcome:
    case: Case
    refusal: Refusal | None
    counters: dict[str, int]
    written: list[str]
    note: str = ""


def run_case(case: Case, root: Path) -> Outcome:
    """Run one hostile case against a fresh filter in ``root``; never raises Refusal."""
    incoming = _layout(root)
    clock = [1000.0]
    resolve_table: dict[str, list[str]] = {}
    if case.kind == "address":
        resolve_table = {"arxiv.org": [a for a in case.subject.split(",") if a]}
    safety = SafetyFilter(_policy(root), clock=lambda: clock[0], resolver=_resolver(resolve_table))
    before = {p for p in root.rglob("*")}
    refusal: Refusal | None = None
    note = ""
    try:
        if case.kind == "url":
            safety.check_url(case.subject)
        elif case.kind == "address":
            safety.check_host("arxiv.org")
        elif case.kind == "fetch":
            handler, table, pulled = _scenario(case.subject)
            safety = SafetyFilter(_policy(root), clock=lambda: clock[0], resolver=_resolver(table))
            calls: list[str] = []

            def counting(request: httpx.Request, handler=handler) -> httpx.Response:
                calls.append(str(request.url))
                return handler(request)

            with Fetcher(safety, transport=httpx.MockTransport(counting)) as fetcher:
                try:
                    fetcher.fetch("https://arxiv.org/abs/1")
                finally:
                    note = f"{len(calls)} requests, {len(pulled)} chunks pulled"
        elif case.kind == "mime":
            safety.check_mime(case.subject)
        elif case.kind == "size":
            safety.check_size(int(case.subject))
        elif case.kind == "local":
            path = case.subject.format(incoming=incoming, outside=root / "outside")
            with Fetcher(safety, transport=httpx.MockTransport(lambda r: httpx.Response(500))) as f:
                f.read_local(path)
        elif case.kind == "files":
            for _ in range(50):
                safety.count_file()
            safety.count_file()
        elif case.kind == "rate":
            for _ in range(10):
                safety.check_rate()
                clock[0] += 5.0  # ten requests within 50 s
            safety.check_rate()
        else:
            raise AssertionError(case.kind)
    except Refusal as exc:
        refusal = exc
    after = {p for p in root.rglob("*")}
    written = sorted(str(p.relative_to(root)) for p in after - before)
    return Outcome(case, refusal, safety.counters(), written, note)


def run_table(cases: list[Case] = HOSTILE) -> list[Outcome]:
    """Run every case, each in its own temporary directory."""
    outcomes = []
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            outcomes.append(run_case(case, Path(tmp)))
    return outcomes


def outcome_counts(outcomes: list[Outcome]) -> Counter[str]:
    """Refusals by the check that fired (``<none>`` for an input that got through)."""
    return Counter(o.refusal.check if o.refusal else "<none>" for o in outcomes)


def format_table(outcomes: list[Outcome]) -> str:
    lines = [f"{'expected':<17} {'fired':<17} input / reason"]
    for o in outcomes:
        fired = o.refusal.check if o.refusal else "<none>"
        reason = o.refusal.reason if o.refusal else ""
        lines.append(f"{o.case.check:<17} {fired:<17} {o.case.id!r}: {reason[:90]}")
    counts = outcome_counts(outcomes)
    lines.append(
        f"{len(outcomes)} hostile inputs; refused by check: "
        + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- the table


#: Checks no hostile input reaches: ``parsers`` compares the strict parser's reading
#: with httpx's and urllib's, and the strict checks before it leave nothing they
#: read differently (the fuzz tests in test_url_fuzz.py look for such inputs).
#: test_parsers_check_catches_a_strict_parser_regression exercises it.
BACKSTOP_CHECKS = {"parsers"}


def test_table_is_large_and_covers_every_family() -> None:
    assert len(HOSTILE) >= 45
    expected = {c.check for c in HOSTILE}
    assert expected == set(CHECKS) - BACKSTOP_CHECKS, set(CHECKS) - expected
    assert len({c.id for c in HOSTILE}) == len(HOSTILE)  # no duplicates


@pytest.mark.parametrize("case", HOSTILE, ids=[c.id for c in HOSTILE])
def test_hostile_input_refused_by_named_check(case: Case, tmp_path: Path) -> None:
    outcome = run_case(case, tmp_path)
    assert outcome.refusal is not None, f"{case.id} got through"
    assert outcome.refusal.check == case.check, outcome.refusal
    assert outcome.refusal.inner == case.inner, outcome.refusal
    assert outcome.refusal.reason.strip()
    assert str(outcome.refusal).startswith(case.check + ": ")
    # Exactly one check fired exactly once: the one named.
    assert outcome.counters == {name: int(name == case.check) for name in CHECKS}
    assert outcome.written == []  # nothing written anywhere


def test_outcome_table(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = run_table()
    counts = outcome_counts(outcomes)
    assert "<none>" not in counts
    assert counts == Counter(c.check for c in HOSTILE)
    with capsys.disabled():
        print("\n" + format_table(outcomes).splitlines()[-1])


def test_unbounded_stream_is_cut_right_after_the_limit(tmp_path: Path) -> None:
    outcome = run_case(Case("fetch", "oversize_chunked_stream", "max_bytes"), tmp_path)
    # 10 MiB / 64 KiB = 160 chunks fit; the 161st crosses the limit and stops the read.
    assert outcome.note == "1 requests, 161 chunks pulled"
    declared = run_case(Case("fetch", "oversize_content_length", "max_bytes"), tmp_path / "d")
    assert declared.note == "1 requests, 0 chunks pulled"  # refused on the header alone


@pytest.mark.parametrize(
    ("name", "requests"),
    [("redirect_loop", 2), ("redirect_too_many", 6), ("name_resolves_private", 0)],
)
def test_redirect_and_resolution_refusals_stop_early(
    name: str, requests: int, tmp_path: Path
) -> None:
    outcome = run_case(Case("fetch", name, ""), tmp_path)
    assert outcome.note.startswith(f"{requests} requests")


def test_refusal_reasons_are_specific(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    with pytest.raises(Refusal, match=r"127\.0\.0\.1") as info:
        safety.check_url("https://2130706433/")
    assert info.value.subject == "https://2130706433/"
    with pytest.raises(Refusal, match="loopback"):
        safety.check_addresses("x.arxiv.org", ["127.0.0.1"])
    with pytest.raises(Refusal, match="shared CGNAT"):
        safety.check_addresses("x.arxiv.org", ["100.100.1.1"])
    with pytest.raises(Refusal, match=r"loopback, via the embedded IPv4 127\.0\.0\.1"):
        safety.check_addresses("x.arxiv.org", ["::ffff:127.0.0.1"])


# ---------------------------------------------------------------------------- allowed inputs


@pytest.mark.parametrize("url", ALLOWED_URLS)
def test_allowed_urls_pass(url: str, tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    target = safety.check_url(url)
    assert isinstance(target, Target)
    assert target.scheme == "https"
    assert target.host == target.host.lower() and not target.host.endswith(".")
    assert httpx.URL(target.url).host == target.host or target.host.startswith("xn--")
    assert safety.counters() == dict.fromkeys(CHECKS, 0)


def test_normalised_target(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path, allowed_host_ports=("EN.wikipedia.org.:8443",)))
    t = safety.check_url("HTTPS://En.Wikipedia.ORG.:8443/wiki/X?y=1#z")
    assert (t.host, t.port) == ("en.wikipedia.org", 8443)
    assert t.url == "https://en.wikipedia.org:8443/wiki/X?y=1#z"
    explicit = safety.check_url("https://en.wikipedia.org:443/wiki/X")
    assert (explicit.port, explicit.url) == (443, "https://en.wikipedia.org/wiki/X")
    idn = safety.check_url("https://Bücher.wikipedia.org/")
    assert idn.host == "xn--bcher-kva.wikipedia.org"


def test_public_addresses_and_private_when_allowed(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    addrs = safety.check_addresses("arxiv.org", [PUBLIC, "2606:4700::6810:84e5", PUBLIC])
    assert addrs == (PUBLIC, "2606:4700::6810:84e5")
    relaxed = SafetyFilter(_policy(tmp_path, allow_private_addresses=True))
    assert relaxed.check_addresses("localhost", ["127.0.0.1", "::1"]) == ("127.0.0.1", "::1")
    # Allowing private addresses does not allow unknown names or IP literals.
    with pytest.raises(Refusal) as info:
        relaxed.check_url("https://127.0.0.1/")
    assert info.value.check == "ip_literal"
    assert safety.counters()["private_address"] == 0


def test_allowed_local_files(tmp_path: Path) -> None:
    incoming = _layout(tmp_path)
    safety = SafetyFilter(_policy(tmp_path))
    with Fetcher(safety, transport=httpx.MockTransport(lambda r: httpx.Response(500))) as f:
        a = f.read_local("a.txt")
        assert (a.data, a.mime, a.bytes) == (b"allowed\n", "text/plain", 8)
        assert f.read_local("sub/../sub/b.md").mime == "text/markdown"
        # A symlink that stays inside is fine; the resolved path is reported.
        assert f.read_local("inside-link.txt").path == str((incoming / "a.txt").resolve())
        assert f.read_local(incoming / "a.txt").data == b"allowed\n"
        with pytest.raises(FetchError, match="no such file"):
            f.read_local("missing.txt")
    assert safety.counters() == dict.fromkeys(CHECKS, 0)
    assert safety.files_left() == 46


def test_extra_read_dirs_replace_the_default(tmp_path: Path) -> None:
    _layout(tmp_path)
    outside = tmp_path / "outside"
    policy = _policy(tmp_path, allowed_read_dirs=(str(outside),))
    safety = SafetyFilter(policy)
    (outside / "notes.txt").write_text("notes\n")
    with safety.open_local(outside / "notes.txt") as handle:
        assert handle.path == str((outside / "notes.txt").resolve())
        assert handle.read(100) == b"notes\n"
    # secret.txt has a second name (incoming/hard.txt): refused, unless hard links are allowed.
    with pytest.raises(Refusal, match="hard links"):
        safety.open_local(outside / "secret.txt")
    relaxed = SafetyFilter(msgspec.structs.replace(policy, allow_hardlinks=True))
    with relaxed.open_local(outside / "secret.txt") as handle:
        assert handle.read(100) == b"secret\n"
    # Relative paths are still taken from the incoming dir, which is no longer readable.
    with pytest.raises(Refusal) as info:
        safety.open_local("a.txt")
    assert info.value.check == "local_path"


# ---------------------------------------------------------------------------- quotas


def test_rate_limit_window_slides(tmp_path: Path) -> None:
    now = [0.0]
    safety = SafetyFilter(_policy(tmp_path), clock=lambda: now[0])
    for t in range(10):
        now[0] = float(t)
        safety.check_rate()
    now[0] = 59.99
    with pytest.raises(Refusal, match="next slot in"):
        safety.check_rate()
    now[0] = 60.0  # the request at t=0 left the window
    safety.check_rate()
    with pytest.raises(Refusal):
        safety.check_rate()
    now[0] = 61.0  # t=1 leaves
    safety.check_rate()
    assert safety.counters()["rate_limit"] == 2


def test_file_quota_and_new_session(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path, max_files_per_session=3))
    for left in (2, 1, 0):
        safety.count_file()
        assert safety.files_left() == left
    with pytest.raises(Refusal) as info:
        safety.count_file()
    assert info.value.check == "file_count"
    safety.new_session()
    assert safety.files_left() == 3
    safety.count_file()


def test_fetch_refuses_before_network_when_quota_or_rate_exhausted(tmp_path: Path) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200, headers={"Content-Type": "text/plain"}, content=b"ok")

    now = [0.0]
    policy = _policy(tmp_path, max_files_per_session=2, rate_limit_requests=3)
    safety = SafetyFilter(policy, clock=lambda: now[0], resolver=_resolver({}))
    with Fetcher(safety, transport=httpx.MockTransport(handler)) as fetcher:
        fetcher.fetch("https://arxiv.org/a")
        fetcher.fetch("https://arxiv.org/b")
        with pytest.raises(Refusal) as info:
            fetcher.fetch("https://arxiv.org/c")
        assert info.value.check == "file_count"
        with pytest.raises(Refusal) as info:
            fetcher.fetch("https://arxiv.org/d")
        assert info.value.check == "rate_limit"
    assert calls == ["https://arxiv.org/a", "https://arxiv.org/b"]


# ---------------------------------------------------------------------------- registry, callback


def test_registry_and_counters(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    assert list(safety.counters()) == list(CHECKS)
    assert all(CHECKS.values())
    for url in ("http://arxiv.org/", "ftp://x/", "https://evil.com/"):
        with pytest.raises(Refusal):
            safety.check_url(url)
    counters = safety.counters()
    assert (counters["scheme"], counters["domain_allowlist"]) == (2, 1)
    with pytest.raises(KeyError):
        safety.refuse("no_such_check", "x")


def test_first_failing_url_check_wins(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    for url, check in [
        ("http://user@127.0.0.1/", "scheme"),
        ("https://user@127.0.0.1/", "userinfo"),
        ("https://127.0.0.1/", "ip_literal"),
        ("https://evil.com/", "domain_allowlist"),
    ]:
        with pytest.raises(Refusal) as info:
            safety.check_url(url)
        assert info.value.check == check


def test_on_refusal_callback(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str]] = []
    safety = SafetyFilter(_policy(tmp_path), on_refusal=lambda *a: seen.append(a))
    with pytest.raises(Refusal):
        safety.check_url("https://evil.com/x")
    with pytest.raises(Refusal):
        safety.check_mime("image/png")
    assert [(c, s) for c, _, s in seen] == [
        ("domain_allowlist", "https://evil.com/x"),
        ("mime", "image/png"),
    ]
    assert all(reason for _, reason, _ in seen)

    def broken(*args: str) -> None:
        raise RuntimeError("log is down")

    failing = SafetyFilter(_policy(tmp_path), on_refusal=broken)
    with pytest.raises(Refusal) as info:
        failing.check_url("https://evil.com/")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert failing.counters()["domain_allowlist"] == 1


def test_refusal_pickles() -> None:
    r = Refusal("redirect", "hop 2 refused", "https://evil.example/", "domain_allowlist")
    back = pickle.loads(pickle.dumps(r))
    assert (back.check, back.reason, back.subject, back.inner) == (
        "redirect",
        "hop 2 refused",
        "https://evil.example/",
        "domain_allowlist",
    )


# ---------------------------------------------------------------------------- policy


def test_policy_defaults_and_normalisation(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    assert policy.allowed_domains == DEFAULT_ALLOWED_DOMAINS
    assert policy.allowed_read_dirs == (policy.incoming_dir,)
    assert (policy.max_bytes, policy.max_files_per_session, policy.rate_limit_requests) == (
        10 * MiB,
        50,
        10,
    )
    assert (
        policy.rate_limit_window_s == 60.0
        and policy.https_only
        and not policy.allow_private_addresses
    )
    custom = _policy(
        tmp_path,
        allowed_domains=("Example.ORG.", "bücher.de", "example.org"),
        allowed_mime=("Text/Plain",),
    )
    assert custom.allowed_domains == ("example.org", "xn--bcher-kva.de")
    assert custom.allowed_mime == ("text/plain",)
    with pytest.raises(ValueError, match="not a valid DNS name"):
        _policy(tmp_path, allowed_domains=("evil.com/",))
    with pytest.raises(AttributeError):
        policy.https_only = False  # type: ignore[misc]


def test_policy_decoding_is_strict(tmp_path: Path) -> None:
    raw = msgspec.json.encode({"incoming_dir": str(tmp_path), "max_bytes": 1024})
    policy = msgspec.json.decode(raw, type=SafetyPolicy)
    assert policy.max_bytes == 1024 and policy.allowed_read_dirs == (str(tmp_path),)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"incoming_dir": "x", "surprise": 1}', type=SafetyPolicy)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"incoming_dir": "x", "max_bytes": 0}', type=SafetyPolicy)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"incoming_dir": ""}', type=SafetyPolicy)


def test_http_allowed_only_when_https_only_is_off(tmp_path: Path) -> None:
    relaxed = SafetyFilter(_policy(tmp_path, https_only=False))
    assert relaxed.check_url("http://arxiv.org/").port == 80
    with pytest.raises(Refusal):
        relaxed.check_url("ftp://arxiv.org/")


# ---------------------------------------------------------------------------- ports, parsers


def test_port_refusals_name_the_problem(tmp_path: Path) -> None:
    safety = SafetyFilter(_policy(tmp_path))
    for url, words in [
        ("https://github.com:٨٠/", "ARABIC-INDIC DIGIT EIGHT"),
        ("https://github.com:¹²³/", "SUPERSCRIPT ONE"),
        ("https://github.com:６３７９/", "FULLWIDTH DIGIT SIX"),
        ("https://github.com:6379/", "only the default port 443"),
        ("https://github.com:0443/", "leading zeros"),
        ("https://github.com:+443/", "not a decimal number"),
        ("https://github.com:70000/", "out of range"),
    ]:
        with pytest.raises(Refusal, match=words) as info:
            safety.check_url(url)
        assert info.value.check == "port"
    assert safety.counters()["port"] == 7


def test_allowed_host_ports_are_exact_and_normalised(tmp_path: Path) -> None:
    policy = _policy(tmp_path, allowed_host_ports=("GitHub.com.:8443", "bücher.de:8080"))
    assert policy.allowed_host_ports == ("github.com:8443", "xn--bcher-kva.de:8080")
    safety = SafetyFilter(policy)
    assert safety.check_url("https://github.com:8443/x").port == 8443
    for url in ("https://api.github.com:8443/", "https://github.com:8444/"):
        with pytest.raises(Refusal) as info:
            safety.check_url(url)
        assert info.value.check == "port"
    # A host:port entry does not allow the host itself.
    with pytest.raises(Refusal) as info:
        SafetyFilter(_policy(tmp_path, allowed_host_ports=("evil.com:8443",))).check_url(
            "https://evil.com:8443/"
        )
    assert info.value.check == "domain_allowlist"
    for bad in ("github.com", "github.com:0", "github.com:٨٠", ":443", "github.com:99999"):
        with pytest.raises(ValueError, match="host:port"):
            _policy(tmp_path, allowed_host_ports=(bad,))


class _StrictPortRegression(UrlRules):
    """The strict parser as it would be if its port check regressed to int()."""

    def _port_check(self, host: str, text: str | None, default: int) -> int:
        try:
            return default if text is None else int(text)
        except ValueError:
            return default


class _PortIgnored(UrlRules):
    """The strict parser as it would be if it forgot the port altogether."""

    def _port_check(self, host: str, text: str | None, default: int) -> int:
        return default


def _with_url_rules(rules: type[UrlRules], policy: SafetyPolicy, **kw) -> SafetyFilter:
    """A filter whose URL checks are ``rules`` (the strict checks live in UrlRules)."""
    safety = SafetyFilter(policy, **kw)
    safety._urls = rules(policy, safety._resolver)
    return safety


def test_parsers_check_catches_a_strict_parser_regression(tmp_path: Path) -> None:
    # No hostile input gets past the strict checks to this one (BACKSTOP_CHECKS);
    # here the strict port check is broken on purpose and the parsers check holds.
    safety = _with_url_rules(_StrictPortRegression, _policy(tmp_path))
    for url in ("https://github.com:٨٠/", "https://github.com:+443/", "https://github.com:4_43/"):
        with pytest.raises(Refusal) as info:
            safety.check_url(url)
        assert info.value.check == "parsers", url
        assert "urllib cannot parse" in info.value.reason or "disagree" in info.value.reason
    # Reading another port than httpx and urllib do is a disagreement.
    ignored = _with_url_rules(_PortIgnored, _policy(tmp_path), resolver=lambda host: [PUBLIC])
    with pytest.raises(Refusal, match="disagree") as info:
        ignored.check_url("https://github.com:6379/")
    assert info.value.check == "parsers"
    assert ignored.check_url("https://github.com/").port == 443  # agreement: allowed
    # The same comparison on a redirect hop.
    with pytest.raises(Refusal) as info:
        ignored.check_redirect("https://github.com/", "https://github.com:22/", 1)
    assert (info.value.check, info.value.inner) == ("redirect", "parsers")
    assert safety.counters()["parsers"] == 3
    assert ignored.counters()["parsers"] == 1 and ignored.counters()["redirect"] == 1


def test_urls_suggested_in_answers_get_the_same_checks(tmp_path: Path) -> None:
    from sentient_core.learning.query import QueryFormulator, extract_urls
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse

    content = (
        "See https://github.com:6379/x, https://arxiv.org:٨٠/ and "
        "https://[::1]:8080/admin. Also (https://en.wikipedia.org/wiki/Foo_(bar))."
    )
    assert extract_urls(content) == [
        "https://github.com:6379/x",
        "https://arxiv.org:٨٠/",
        "https://[::1]:8080/admin",
        "https://en.wikipedia.org/wiki/Foo_(bar)",
    ]
    q = QueryFormulator(followups_per_iteration=10)
    req = ChaperoneRequest(id="r", type="question", question="q")
    q.observe(req, ChaperoneResponse(request_id="r", type="question", ok=True, content=content))
    suggested = [r.url for r in q.followups()]
    assert suggested == extract_urls(content)[:2]
    safety = SafetyFilter(_policy(tmp_path))
    checks = []
    for url in extract_urls(content):
        try:
            safety.check_url(url)
            checks.append("allowed")
        except Refusal as exc:
            checks.append(exc.check)
    assert checks == ["port", "port", "ip_literal", "allowed"]


if __name__ == "__main__":
    print(format_table(run_table()))
    sys.exit(0)
