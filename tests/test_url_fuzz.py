"""Hypothesis fuzzing of the URL checks (issue 8, item 11).

Property: ``SafetyFilter.check_url`` (and a redirect hop through
``check_redirect``) either refuses with a named, counted check (exactly one
counter moves, the one named) or returns a target that two independent
parsers — httpx's (which makes the request) and urllib's — read with the same
scheme, host and port as the target, with no user info, on an allow-listed
host and an allowed port. Nothing else ever comes out (no ``ValueError``, no
``UnicodeError``). URL extraction from text keeps IPv6 literals whole.

Inputs are URL-shaped: mixed-script digits in ports, unicode/IDNA hosts,
user info, backslashes, percent-encoding, IPv4 literals in every notation,
IPv6 literals with zones, whitespace and control characters, ports out of
range, many ``@ : # ?``, plus arbitrary text. A few hundred per target run in
the normal suite; ``@pytest.mark.slow`` runs 10,000 per target and counts them.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections import Counter

import httpx
import idna
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sentient_core.learning.query import extract_urls
from sentient_core.learning.safety import (
    CHECKS,
    DEFAULT_ALLOWED_DOMAINS,
    Refusal,
    SafetyFilter,
    SafetyPolicy,
)

PUBLIC = "93.184.216.34"
EXTRA_PORT = "github.com:8443"

# -------------------------------------------------------------------------- strategies

_DIGIT_SETS = [
    "0123456789",
    "٠١٢٣٤٥٦٧٨٩",  # Arabic-Indic
    "۰۱۲۳۴۵۶۷۸۹",  # Extended Arabic-Indic
    "०१२३४५६७८९",  # Devanagari
    "০১২৩৪৫৬৭৮৯",  # Bengali
    "０１２３４５６７８９",  # fullwidth
    "⁰¹²³⁴⁵⁶⁷⁸⁹",  # superscripts
    "₀₁₂₃₄₅₆₇₈₉",  # subscripts
    "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",  # mathematical bold
    "①②③",  # circled
]
_ANY_DIGIT = "".join(_DIGIT_SETS)

ports = st.one_of(
    st.integers(min_value=0, max_value=70_000).map(str),
    st.sampled_from(
        [
            *("443", "8443", "0443", "80", "8080", "6379", "22", "", "+443", "-1", "4_43"),
            *(" 443", "443 ", "0x1bb", "1e3", "65536", "99999999999999999999", "443:80", "00"),
        ]
    ),
    st.text(alphabet=_ANY_DIGIT, min_size=1, max_size=6),
    st.sampled_from(_DIGIT_SETS).flatmap(
        lambda digits: st.integers(1, 65535).map(
            lambda n: "".join(digits[int(c)] if int(c) < len(digits) else c for c in str(n))
        )
    ),
)

_ALLOWED = list(DEFAULT_ALLOWED_DOMAINS)
_LOOKALIKE = [
    "evilarxiv.org",
    "arxiv.org.evil.com",
    "arxiv.org-evil.com",
    "xn--arxv-nza.org",
    "arxıv.org",
    "аrxiv.org",
    "ａｒｘｉｖ.org",
    "arxiv\u3002org",
    "arxiv\uff0eorg",
    "BÜCHER.wikipedia.org",
    "bücher.wikipedia.org",
    "\u212aernel.github.com",
    "İ.github.com",
    "faß.github.com",
    "arxiv.org.",
    "arxiv.org..",
    ".arxiv.org",
    "%61rxiv.org",
    "arxiv.org%2eevil.com",
    "arxiv_org.evil.com",
    "localhost",
    "github.com\u200b",
    "github.com\u00a0",
    "git\u00adhub.com",
    "xn--.github.com",
    "xn--a.github.com",
    "a" * 64 + ".github.com",
]


def _ipv4_spellings(n: int) -> list[str]:
    a, b, c, d = (n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255
    return [
        f"{a}.{b}.{c}.{d}",
        str(n),
        hex(n),
        f"0{a:o}.{b}.{c}.{d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"{hex(a)}.{b}.{c}.{d}",
        f"{a}.{b}.{c}.{d}.",
        f"{a}.{b}.{c}.{d}.{a}",
        "%" + "%".join(f"{ord(ch):02x}" for ch in f"{a}.{b}.{c}.{d}"),
    ]


ipv4_hosts = st.integers(0, 2**32 - 1).flatmap(lambda n: st.sampled_from(_ipv4_spellings(n)))
ipv6_hosts = st.one_of(
    st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
    st.ip_addresses(v=6).map(lambda a: f"[{a.exploded}]"),
    st.ip_addresses(v=4).map(lambda a: f"[::ffff:{a}]"),
    st.sampled_from(["[fe80::1%25eth0]", "[::1", "::1]", "[::1]]", "[]", "[v1.x]", "[github.com]"]),
)
unicode_hosts = st.tuples(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#"),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(_ALLOWED),
).map(lambda t: f"{t[0]}.{t[1]}")
hosts = st.one_of(
    st.sampled_from(_ALLOWED),
    st.tuples(
        st.sampled_from(["www", "en", "a.b", "API", "x-y", "1", "0x1"]), st.sampled_from(_ALLOWED)
    ).map(".".join),
    st.sampled_from(_LOOKALIKE),
    ipv4_hosts,
    ipv6_hosts,
    unicode_hosts,
)
# Mostly well-formed, so the later checks (and acceptance) are reached often.
schemes = st.sampled_from(
    ["https"] * 24 + ["HTTPS", "hTtPs", "http", "ftp", "", "javascript", "https:"]
)
separators = st.sampled_from(["://"] * 24 + [":/", ":", ":///", ":\\\\", "//", ":\\/"])
userinfo = st.sampled_from(
    [""] * 12 + ["user@", "user:pass@", "@", "github.com@", "a%40b@", ":@", "arxiv.org:443@"]
)
_clean_tail = st.tuples(
    st.sampled_from(["", "/", "/", "?", "#"]),
    st.text(alphabet="/?#@:[]%.-_~!$&'()*+,;=aZ09é\u3002", max_size=12),
).map("".join)
_noisy_tail = st.text(
    alphabet="/?#@:[]\\%.-_~ \t\n\x00\x7f\u3002\uff0e\u200b\u00a0\u2028é", max_size=16
)


def _weighted(*pairs: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """Pick a strategy by weight (one_of would merge repeated branches into one)."""
    return st.sampled_from([s for weight, s in pairs for _ in range(weight)]).flatmap(lambda s: s)


tails = _weighted((7, _clean_tail), (1, _noisy_tail))


@st.composite
def urls(draw) -> str:
    scheme, sep, info, host = draw(schemes), draw(separators), draw(userinfo), draw(hosts)
    port = draw(_weighted((2, st.none()), (1, ports)))
    url = f"{scheme}{sep}{info}{host}{'' if port is None else ':' + port}{draw(tails)}"
    if draw(st.sampled_from([False] * 39 + [True])):  # now and then a stray character
        pos = draw(st.integers(0, len(url)))
        url = url[:pos] + draw(st.characters(blacklist_categories=("Cs",))) + url[pos:]
    return url


url_inputs = _weighted((7, urls()), (1, st.text(max_size=40)))

# -------------------------------------------------------------------------- the property


def _policy() -> SafetyPolicy:
    return SafetyPolicy(incoming_dir="/nonexistent/incoming", allowed_host_ports=(EXTRA_PORT,))


def _safety() -> SafetyFilter:
    return SafetyFilter(_policy(), resolver=lambda host: [PUBLIC])


def _ascii_host(host: str) -> str:
    name = host.lower().removesuffix(".")
    return name if name.isascii() else idna.encode(name).decode("ascii")


def _allowed_host(host: str) -> bool:
    labels = host.split(".")
    return any(labels[-len(d.split(".")) :] == d.split(".") for d in DEFAULT_ALLOWED_DOMAINS)


def _assert_agreed(url: str, target) -> None:
    """httpx and urllib read ``url`` like the target, and the target is allowed."""
    h = httpx.URL(url)
    u = urllib.parse.urlsplit(url)
    assert h.scheme == u.scheme.lower() == target.scheme == "https", url
    assert not h.userinfo and u.username is None and u.password is None, url
    assert _ascii_host(h.raw_host.decode("ascii")) == _ascii_host(u.hostname or "") == target.host
    assert (h.port or 443) == (u.port or 443) == target.port, url
    assert _allowed_host(target.host), url
    assert target.port == 443 or f"{target.host}:{target.port}" == EXTRA_PORT, url
    try:
        ipaddress.ip_address(target.host)
    except ValueError:
        pass
    else:  # pragma: no cover - would be a failure
        raise AssertionError(f"IP literal allowed: {url}")


def check_one(safety: SafetyFilter, url: str, outcomes: Counter) -> None:
    """The property for one input, through check_url and as a redirect hop."""
    before = safety.counters()
    try:
        target = safety.check_url(url)
    except Refusal as refusal:
        after = safety.counters()
        moved = {k: after[k] - before[k] for k in CHECKS if after[k] != before[k]}
        assert moved == {refusal.check: 1}, (url, moved)
        assert refusal.reason.strip(), url
        outcomes[refusal.check] += 1
    else:
        _assert_agreed(url, target)
        assert safety.check_url(target.url) == target  # the rebuilt URL passes as itself
        outcomes["allowed"] += 1
    # The same input as a redirect Location: the same checks, reported as redirect.
    before = safety.counters()
    try:
        hop, addresses = safety.check_redirect("https://github.com/a/b", url, 1)
    except Refusal as refusal:
        after = safety.counters()
        moved = {k: after[k] - before[k] for k in CHECKS if after[k] != before[k]}
        assert refusal.check == "redirect" and moved == {"redirect": 1}, (url, moved)
        assert refusal.inner in ("", *CHECKS), refusal
    else:
        _assert_agreed(hop.url, hop)
        assert addresses == (PUBLIC,)


def _run(n: int, strategy, check) -> Counter:
    outcomes: Counter = Counter()

    @settings(
        max_examples=n,
        deadline=None,
        derandomize=True,  # the short runs assert that each outcome occurs: no flaky seed
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(strategy)
    def run(value) -> None:
        outcomes["inputs"] += 1
        check(value, outcomes)

    run()
    return outcomes


def _url_target(n: int) -> Counter:
    safety = _safety()
    return _run(n, url_inputs, lambda url, out: check_one(safety, url, out))


# -------------------------------------------------------------------------- URL extraction

ipv6_urls = st.tuples(
    st.sampled_from(["https", "http", "HTTPS"]),
    st.ip_addresses(v=6),
    st.one_of(st.none(), st.integers(1, 65535)),
    st.sampled_from(["", "/", "/x", "/a/b?c=1#f", "/p(q)"]),
).map(lambda t: f"{t[0]}://[{t[1]}]{'' if t[2] is None else f':{t[2]}'}{t[3]}")


def check_extraction(args: tuple[str, str, str], outcomes: Counter) -> None:
    before, url, after = args
    text = f"{before} {url}{after}"
    found = extract_urls(text)
    safety = _safety()
    for got in found:
        assert got in text
        try:
            urllib.parse.urlsplit(got)  # a parser reads it as a URL ...
        except ValueError:
            with pytest.raises(Refusal):  # ... or the filter refuses it
                safety.check_url(got)
    # The IPv6 URL is found whole (a following sentence mark is not part of it).
    assert url in found, (text, found)
    with pytest.raises(Refusal) as info:
        safety.check_url(url)
    assert info.value.check in ("ip_literal", "scheme"), info.value
    outcomes[info.value.check] += 1


extraction_inputs = st.tuples(
    st.text(max_size=10),
    ipv6_urls,
    st.sampled_from(["", ".", ",", ")", " and more", "\n", ". Next", "!", ";"]),
)

# -------------------------------------------------------------------------- tests


def test_url_property_short_run() -> None:
    outcomes = _url_target(400)
    assert outcomes["inputs"] >= 400
    assert outcomes["allowed"] > 0 and outcomes["port"] > 0, outcomes


def test_extraction_keeps_ipv6_urls_whole_short_run() -> None:
    outcomes = _run(200, extraction_inputs, check_extraction)
    assert outcomes["inputs"] >= 200


@pytest.mark.slow
def test_url_property_10k(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = _url_target(10_000)
    with capsys.disabled():
        print(f"\nURL fuzz: {dict(sorted(outcomes.items()))}")
    assert outcomes["inputs"] >= 10_000
    # Every family of refusal showed up, and allowed URLs were checked too.
    for check in ("scheme", "userinfo", "ip_literal", "domain_allowlist", "port"):
        assert outcomes[check] > 0, (check, outcomes)
    assert outcomes["allowed"] >= 100, outcomes


@pytest.mark.slow
def test_extraction_10k(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = _run(10_000, extraction_inputs, check_extraction)
    with capsys.disabled():
        print(f"\nextraction fuzz: {dict(sorted(outcomes.items()))}")
    assert outcomes["inputs"] >= 10_000


@given(st.lists(url_inputs, max_size=4).map(" ".join))
@settings(max_examples=100, deadline=None, database=None)
def test_extract_urls_never_raises(text: str) -> None:
    for url in extract_urls(text):
        assert url in text
        assert url.lower().startswith(("http://", "https://"))
