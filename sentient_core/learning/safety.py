"""The safety filter: a registry of named checks, each with a fire counter (SPEC §4).

Everything the chaperone fetches or reads passes through one :class:`SafetyFilter`.
A check that fails raises :class:`Refusal` carrying the check's name and a
reason in plain words, bumps that check's counter and calls the optional
``on_refusal`` callback (the chaperone logs it to the audit trail), so a silent
veto always shows up as a number.

Checks, in the order :meth:`SafetyFilter.check_url` runs the URL ones::

    scheme            a well-formed https URL with a host (no backslashes,
                      control characters, ``https:/x``, bad ports …)
    userinfo          no ``user:password@`` in the authority
    ip_literal        the host is a name, never an address in any spelling
                      (dotted, decimal, hex, octal, short, IPv6, mapped)
    domain_allowlist  the host is an allowed domain or a subdomain of one,
                      compared by DNS labels after IDNA normalisation
    port              no port but the scheme's default (443), unless the policy's
                      ``allowed_host_ports`` lists that host:port; a port must be
                      ASCII digits (``:٨٠``, ``:¹²³``, ``:+443``, ``:4_43`` are refused)
    parsers           two independent URL parsers (httpx's and urllib's) read
                      the same scheme, host, port and no user info as the
                      strict parser above; any disagreement or parse error refuses
    private_address   every address the host resolves to is public
    redirect          each redirect hop passes all of the above; at most
                      ``max_redirects`` hops
    mime              the Content-Type is on the allow-list
    max_bytes         the content is at most ``max_bytes`` (declared and streamed)
    file_count        at most ``max_files_per_session`` files per session
    rate_limit        at most ``rate_limit_requests`` requests per sliding window
    local_path        local reads stay inside the allowed directories: opened
                      through :mod:`sentient_core.confine` (component by component
                      from the allowed dir's descriptor, no symlink followed by
                      the kernel, ``..`` never above the dir, no hard links unless
                      allowed), so a path swapped meanwhile is refused, not followed

Typical use::

    safety = SafetyFilter(SafetyPolicy(incoming_dir="/data/incoming"))
    safety.check_rate()
    target = safety.check_url("https://arxiv.org/abs/2401.00001")
    addresses = safety.check_host(target.host)
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import threading
import time
import unicodedata
import urllib.parse
from collections import deque
from collections.abc import Callable, Collection, Iterable
from pathlib import Path, PurePosixPath
from typing import Annotated
from urllib.parse import unquote

import httpx
import idna
import msgspec

from sentient_core.confine import (
    ConfinedDir,
    ConfinedFile,
    ConfinementFailed,
    ConfinementRefused,
    expand_path,
)
from sentient_core.errors import ArgumentError, NotFoundError, SentientError

__all__ = [
    "CHECKS",
    "DEFAULT_ALLOWED_DOMAINS",
    "DEFAULT_ALLOWED_MIME",
    "ConfinementFailed",
    "Refusal",
    "RefusalCallback",
    "Resolver",
    "SafetyFilter",
    "SafetyPolicy",
    "Target",
    "system_resolver",
]

DEFAULT_ALLOWED_DOMAINS: tuple[str, ...] = (
    "arxiv.org",
    "github.com",
    "raw.githubusercontent.com",
    "wikipedia.org",
    "docs.python.org",
    "developer.mozilla.org",
    "stackoverflow.com",
    "nature.com",
    "sciencedirect.com",
    "semanticscholar.org",
    "huggingface.co",
    "pytorch.org",
)

DEFAULT_ALLOWED_MIME: tuple[str, ...] = (
    "text/plain",
    "text/html",
    "text/markdown",
    "application/pdf",
    "application/json",
)

#: The registry: every check's name and what it enforces, in evaluation order.
CHECKS: dict[str, str] = {
    "scheme": "a well-formed https URL with a host",
    "userinfo": "no user name or password in the URL",
    "ip_literal": "the host is a name, not an IP address in any spelling",
    "domain_allowlist": "the host is an allowed domain or one of its subdomains",
    "port": "only the default port, unless the host:port is allow-listed; ASCII digits only",
    "parsers": "independent URL parsers agree on scheme, host and port",
    "private_address": "the host resolves only to public addresses",
    "redirect": "every redirect hop passes the URL and address checks; bounded hop count",
    "mime": "the content type is on the allow-list",
    "max_bytes": "the content is not larger than the size limit",
    "file_count": "no more files per session than the limit",
    "rate_limit": "no more requests per sliding window than the limit",
    "local_path": "local reads stay inside the allowed directories",
}

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
PositiveFloat = Annotated[float, msgspec.Meta(gt=0.0)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]

#: A resolver maps a host name to the IP addresses (strings) it resolves to.
Resolver = Callable[[str], Iterable[str]]
#: ``on_refusal(check, reason, subject)``.
RefusalCallback = Callable[[str, str, str], None]

_MAX_URL_CHARS = 8192
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# ASCII controls, space and DEL: parsers strip or keep them differently.
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]")
_LABEL_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# WHATWG URL: a host whose last label is a number (decimal or 0x-hex) is parsed
# as an IPv4 address, whatever the other labels are.
_NUMERIC_LABEL_RE = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_DEFAULT_PORTS = {"https": 443, "http": 80}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# Pseudo-filesystems whose files are never content, whatever the allow-list says.
_SYSTEM_ROOTS = (("/", "proc"), ("/", "sys"), ("/", "dev"))


def _normalise_domain(domain: str) -> str:
    """Lower-case, strip one trailing dot and IDNA-encode an allow-list entry."""
    name = domain.strip().lower()
    name = name.removesuffix(".")
    if not name.isascii():
        try:
            name = idna.encode(name).decode("ascii")
        except idna.IDNAError as exc:
            raise ArgumentError(f"allowed domain {domain!r} is not a valid name: {exc}") from None
    if not name or not all(_LABEL_RE.match(label) for label in name.split(".")):
        raise ArgumentError(f"allowed domain {domain!r} is not a valid DNS name")
    return name


def _normalise_host_port(entry: str) -> str:
    """``host:port`` with the host normalised like a domain and the port in 1..65535."""
    host, sep, port = entry.strip().rpartition(":")
    if not sep or not host:
        raise ArgumentError(f"allowed host:port {entry!r} has no ':port'")
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ArgumentError(f"allowed host:port {entry!r}: port must be 1-65535 in ASCII digits")
    return f"{_normalise_domain(host)}:{int(port)}"


def _normalise_dir(path: str, what: str) -> str:
    """A configured directory with ``~`` expanded (bad values raise ArgumentError)."""
    try:
        return expand_path(path)
    except ArgumentError:
        raise ArgumentError(f"{what} must be a non-empty path without NUL bytes") from None


class SafetyPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the safety filter allows.

    Attributes
    ----------
    incoming_dir : str
        Where fetched content is written (and, by default, the only readable dir).
    allowed_domains : tuple of str
        Allowed domains; their subdomains are allowed too (normalised to
        lower-case IDNA without a trailing dot).
    https_only : bool
        Refuse every scheme but https (``False`` also admits http).
    allow_private_addresses : bool
        Admit hosts resolving to private/loopback/… addresses. Only test
        configurations set this (together with adding their host names).
    allowed_mime : tuple of str
        Allowed Content-Types (parameters such as ``charset`` are ignored).
    max_bytes : int
        Largest content accepted, in bytes.
    max_files_per_session : int
        Files fetched or read per session.
    rate_limit_requests, rate_limit_window_s : int, float
        At most this many requests in any window of this many seconds.
    max_redirects : int
        Redirect hops followed per fetch.
    allowed_read_dirs : tuple of str
        Directories local reads may come from; empty means ``(incoming_dir,)``.
        ``~`` is expanded here and in ``incoming_dir``.
    allowed_host_ports : tuple of str
        ``host:port`` pairs that may be fetched on a port other than the
        scheme's default (exact host, normalised; e.g. a test server's
        ``localhost:8443``). Empty by default: only port 443.
    allow_hardlinks : bool
        Read local files that have more than one name (hard links). Off by
        default: another name may be outside the allowed dirs.
    """

    incoming_dir: NonEmpty
    allowed_domains: tuple[str, ...] = DEFAULT_ALLOWED_DOMAINS
    https_only: bool = True
    allow_private_addresses: bool = False
    allowed_mime: tuple[str, ...] = DEFAULT_ALLOWED_MIME
    max_bytes: PositiveInt = 10 * 1024 * 1024
    max_files_per_session: PositiveInt = 50
    rate_limit_requests: PositiveInt = 10
    rate_limit_window_s: PositiveFloat = 60.0
    max_redirects: NonNegInt = 5
    allowed_read_dirs: tuple[str, ...] = ()
    allowed_host_ports: tuple[str, ...] = ()
    allow_hardlinks: bool = False

    def __post_init__(self) -> None:
        # Normalise once here so every comparison later is exact.
        domains = tuple(dict.fromkeys(_normalise_domain(d) for d in self.allowed_domains))
        mime = tuple(dict.fromkeys(m.strip().lower() for m in self.allowed_mime))
        incoming = _normalise_dir(self.incoming_dir, "incoming_dir")
        read_dirs = tuple(
            dict.fromkeys(
                _normalise_dir(d, "allowed_read_dirs entry")
                for d in (self.allowed_read_dirs or (incoming,))
            )
        )
        host_ports = tuple(dict.fromkeys(_normalise_host_port(e) for e in self.allowed_host_ports))
        msgspec.structs.force_setattr(self, "incoming_dir", incoming)
        msgspec.structs.force_setattr(self, "allowed_domains", domains)
        msgspec.structs.force_setattr(self, "allowed_mime", mime)
        msgspec.structs.force_setattr(self, "allowed_read_dirs", read_dirs)
        msgspec.structs.force_setattr(self, "allowed_host_ports", host_ports)


class Target(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A URL that passed the URL checks.

    Attributes
    ----------
    url : str
        The URL to request, with the host in its checked, normalised form.
    scheme : str
        ``https`` (or ``http`` when the policy admits it).
    host : str
        Lower-case ASCII (IDNA) host name, no trailing dot.
    port : int
        Explicit or default port.
    """

    url: str
    scheme: str
    host: str
    port: int


class Refusal(SentientError):
    """A safety check refused a request.

    Attributes
    ----------
    check : str
        Name of the check that fired (a key of :data:`CHECKS`).
    reason : str
        What was wrong, in words.
    subject : str
        The URL, host, path or value that was refused.
    inner : str
        For ``redirect`` refusals, the check that refused the hop ("" otherwise).
    """

    def __init__(self, check: str, reason: str, subject: str = "", inner: str = "") -> None:
        self.check = check
        self.reason = reason
        self.subject = subject
        self.inner = inner
        super().__init__(f"{check}: {reason}")

    def __reduce__(self):
        return (type(self), (self.check, self.reason, self.subject, self.inner))


class _Violation(Exception):
    """Internal: a check failed; turned into a counted :class:`Refusal` by the caller."""

    def __init__(self, check: str, reason: str) -> None:
        self.check = check
        self.reason = reason
        super().__init__(f"{check}: {reason}")


def system_resolver(host: str) -> list[str]:
    """Resolve ``host`` with :func:`socket.getaddrinfo`; raises :class:`OSError` on failure."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _host_key(host: str) -> str:
    """A host as another parser reported it, normalised like ours (for comparison only)."""
    name = host.lower().removesuffix(".")
    if name.isascii():
        return name
    try:
        return idna.encode(name).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return "<invalid:" + name + ">"


def _whatwg_ipv4(host: str) -> str | None:
    """The address a WHATWG parser reads from ``127.1``/``0x7f.1``/``2130706433``, if any."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    try:
        numbers = [
            int(p, 16) if p[:2] == "0x" else int(p, 8) if p[:1] == "0" and len(p) > 1 else int(p)
            for p in parts
        ]
    except ValueError:
        return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(value))


def _address_class(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``address`` is not a public address, or ``None`` when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        # Addresses that embed an IPv4 address reach that address: judge it instead.
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            inner = _address_class(embedded)
            return None if inner is None else f"{inner}, via the embedded IPv4 {embedded}"
    for label, hit in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared CGNAT", isinstance(address, ipaddress.IPv4Address) and address in _CGNAT),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("non-global", not address.is_global),
    ):
        if hit:
            return label
    return None


class SafetyFilter:
    """Named safety checks with fire counters.

    Parameters
    ----------
    policy : SafetyPolicy
        What is allowed.
    clock : callable
        Monotonic seconds, for the rate limit (injectable for tests).
    resolver : callable, optional
        ``resolver(host) -> iterable of IP strings``; default :func:`system_resolver`.
    on_refusal : callable, optional
        ``on_refusal(check, reason, subject)`` called for every refusal.
    """

    def __init__(
        self,
        policy: SafetyPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        resolver: Resolver | None = None,
        on_refusal: RefusalCallback | None = None,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._resolver = resolver if resolver is not None else system_resolver
        self.on_refusal = on_refusal
        self._lock = threading.Lock()
        self._fired = dict.fromkeys(CHECKS, 0)
        self._requests: deque[float] = deque()
        self._files = 0
        self._domains = tuple(tuple(d.split(".")) for d in policy.allowed_domains)
        self._mime = frozenset(policy.allowed_mime)
        self._host_ports = frozenset(policy.allowed_host_ports)
        # Each allowed dir resolved once; reads are opened from its descriptor. The
        # outermost dirs come first, so a path under two of them gets the larger one.
        dirs = [
            ConfinedDir(d, allow_hardlinks=policy.allow_hardlinks) for d in policy.allowed_read_dirs
        ]
        self._read_dirs = tuple(sorted(dirs, key=lambda d: len(Path(d.path).parts)))

    # ------------------------------------------------------------------ registry
    def counters(self) -> dict[str, int]:
        """How many times each check fired (every check listed, zeros included)."""
        with self._lock:
            return dict(self._fired)

    def refuse(self, check: str, reason: str, subject: str = "", inner: str = "") -> Refusal:
        """Count a refusal by ``check``, report it, and return the exception to raise."""
        if check not in CHECKS:
            raise NotFoundError(f"unknown safety check {check!r}")
        with self._lock:
            self._fired[check] += 1
        refusal = Refusal(check, reason, subject, inner)
        if self.on_refusal is not None:
            try:
                self.on_refusal(check, reason, subject)
            except Exception as exc:
                # A failing logger must not turn a refusal into something else.
                raise refusal from exc
        return refusal

    # ------------------------------------------------------------------ URLs
    def check_url(self, url: str) -> Target:
        """Run scheme → userinfo → ip_literal → domain_allowlist; raise the first failure."""
        try:
            return self._url_checks(url)
        except _Violation as v:
            raise self.refuse(v.check, v.reason, url) from None

    def check_addresses(self, host: str, addresses: Iterable[str]) -> tuple[str, ...]:
        """Refuse unless every address of ``host`` is public; returns them normalised."""
        try:
            return self._address_checks(host, addresses)
        except _Violation as v:
            raise self.refuse(v.check, v.reason, host) from None

    def check_host(self, host: str) -> tuple[str, ...]:
        """Resolve ``host`` and :meth:`check_addresses`; resolver errors (OSError) propagate."""
        return self.check_addresses(host, self._resolver(host))

    def check_redirect(
        self, current: str, location: str, hop: int, seen: Collection[str] = ()
    ) -> tuple[Target, tuple[str, ...]]:
        """Check redirect hop number ``hop`` (1-based) from ``current`` to ``location``.

        Runs every URL check and the address check on the new target; any
        failure is reported as a ``redirect`` refusal naming the inner check.
        Returns the checked target and its addresses. Resolver errors propagate.
        """
        try:
            if hop > self.policy.max_redirects:
                raise _Violation(
                    "redirect", f"more than {self.policy.max_redirects} redirects (hop {hop})"
                )
            if _CONTROL_RE.search(location.strip()) or "\\" in location:
                raise _Violation("scheme", "Location header has control characters or backslashes")
            location = location.strip()
            absolute = location if _SCHEME_RE.match(location) else None
            if absolute is None:
                # Relative reference: resolve against the URL that was requested.
                try:
                    absolute = str(httpx.URL(current).join(location))
                except httpx.InvalidURL as exc:
                    raise _Violation("scheme", f"Location cannot be resolved: {exc}") from None
            target = self._url_checks(absolute)
            if target.url in seen:
                raise _Violation("redirect", f"redirect loop back to {target.url}")
            addresses = self._address_checks(target.host, self._resolver(target.host))
        except _Violation as v:
            inner = "" if v.check == "redirect" else v.check
            reason = (
                v.reason
                if v.check == "redirect"
                else f"redirect hop {hop} to {location!r} refused by {v.check}: {v.reason}"
            )
            raise self.refuse("redirect", reason, location, inner) from None
        return target, addresses

    def _url_checks(self, url: str) -> Target:
        policy = self.policy
        # -- scheme: the URL must be unambiguous before anything else is looked at.
        if not isinstance(url, str) or not url:
            raise _Violation("scheme", "empty URL")
        if len(url) > _MAX_URL_CHARS:
            raise _Violation("scheme", f"URL longer than {_MAX_URL_CHARS} characters")
        if _CONTROL_RE.search(url):
            raise _Violation("scheme", "URL contains whitespace or control characters")
        if "\\" in url:
            # WHATWG reads "\" as "/" but httpx does not: refuse the ambiguity.
            raise _Violation("scheme", "URL contains a backslash")
        match = _SCHEME_RE.match(url)
        if match is None:
            raise _Violation("scheme", "URL has no scheme (expected https://)")
        scheme = match.group(1).lower()
        allowed = ("https",) if policy.https_only else ("https", "http")
        if scheme not in allowed:
            raise _Violation(
                "scheme", f"scheme {scheme!r} is not allowed (only {'/'.join(allowed)})"
            )
        rest = url[match.end() :]
        if not rest.startswith("//"):
            raise _Violation("scheme", f"{scheme}: must be followed by // and a host")
        authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        # -- userinfo
        if "@" in authority:
            raise _Violation("userinfo", "URL carries a user name or password before '@'")
        if not authority:
            raise _Violation("scheme", "URL has no host")
        # -- ip_literal: a bracketed host is an IPv6 (or IPvFuture) literal, whole or broken.
        if authority.startswith("["):
            literal = authority.split("]", 1)[0] + ("]" if "]" in authority else "")
            raise _Violation("ip_literal", f"host {literal} is an IPv6 address literal")
        # A host has no ':' (outside brackets), so the first one starts the port.
        host_part, sep, port_text = authority.partition(":")
        # (percent-decoded and lower-cased first: "%31%32%37.0.0.1" is 127.0.0.1)
        raw_host = unquote(host_part).lower()
        bare = raw_host.removesuffix(".")
        if raw_host.startswith("["):
            raise _Violation("ip_literal", f"host {raw_host} is an IPv6 address literal")
        try:
            address = ipaddress.ip_address(bare)
        except ValueError:
            address = None
        if address is not None:
            raise _Violation("ip_literal", f"host {bare} is an IP address, not a name")
        labels = bare.split(".")
        if labels and _NUMERIC_LABEL_RE.match(labels[-1]):
            decoded = _whatwg_ipv4(bare)
            meaning = f" (= {decoded})" if decoded else ""
            raise _Violation(
                "ip_literal", f"host {bare} is read as an IPv4 address{meaning}, not a name"
            )
        # -- domain_allowlist
        host = bare
        if "%" in host_part:
            raise _Violation("domain_allowlist", f"host {host_part!r} is percent-encoded")
        if not host.isascii():
            try:
                host = idna.encode(host).decode("ascii")
            except idna.IDNAError as exc:
                raise _Violation(
                    "domain_allowlist",
                    f"host {bare!r} is not a valid internationalised name ({exc})",
                ) from None
        labels = host.split(".")
        if not all(_LABEL_RE.match(label) for label in labels):
            raise _Violation("domain_allowlist", f"host {bare!r} is not a valid DNS name")
        if not any(tuple(labels[-len(d) :]) == d for d in self._domains):
            shown = bare if host == bare else f"{bare} ({host})"
            raise _Violation(
                "domain_allowlist", f"host {shown} is not an allowed domain or a subdomain of one"
            )
        # -- port
        default_port = _DEFAULT_PORTS[scheme]
        port = self._port_check(host, port_text if sep else None, default_port)
        # -- parsers: httpx (which makes the request) and urllib must read the same URL.
        try:
            parsed = httpx.URL(url)
            checked = parsed.copy_with(host=host)
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            raise _Violation("parsers", f"httpx cannot parse the URL ({exc})") from None
        try:
            split = urllib.parse.urlsplit(url)
            views = {
                "httpx": (
                    parsed.scheme,
                    bool(parsed.userinfo),
                    _host_key(parsed.raw_host.decode("ascii", "replace")),
                    parsed.port or _DEFAULT_PORTS.get(parsed.scheme),
                ),
                "urllib": (
                    split.scheme.lower(),
                    split.username is not None or split.password is not None,
                    _host_key(split.hostname or ""),
                    split.port or _DEFAULT_PORTS.get(split.scheme.lower()),
                ),
            }
        except (ValueError, UnicodeError) as exc:
            raise _Violation("parsers", f"urllib cannot parse the URL ({exc})") from None
        mine = (scheme, False, host, port)
        for name, view in views.items():
            if view != mine:
                raise _Violation(
                    "parsers",
                    f"URL parsers disagree: strict reads scheme/userinfo/host/port {mine}, "
                    f"{name} reads {view}",
                )
        return Target(url=str(checked), scheme=scheme, host=host, port=port)

    def _port_check(self, host: str, text: str | None, default: int) -> int:
        """The port of ``host`` (``text`` after ':'; ``None`` when there is no ':')."""
        if text is None:
            return default
        if text == "":
            raise _Violation("port", "empty port after ':'")
        if not text.isascii():
            odd = ", ".join(
                dict.fromkeys(
                    f"{c!r} {unicodedata.name(c, f'U+{ord(c):04X}')}" for c in text if ord(c) > 127
                )
            )
            raise _Violation("port", f"port {text!r} is written with non-ASCII characters ({odd})")
        if not text.isdigit():
            raise _Violation("port", f"port {text!r} is not a decimal number")
        if len(text) > 1 and text[0] == "0":
            raise _Violation("port", f"port {text!r} has leading zeros")
        value = int(text)
        if not 0 < value < 65536:
            raise _Violation("port", f"port {value} is out of range (1-65535)")
        if value != default and f"{host}:{value}" not in self._host_ports:
            raise _Violation(
                "port",
                f"port {value} is not allowed for {host}: only the default port {default}, "
                f"unless allowed_host_ports lists {host}:{value}",
            )
        return value

    def _address_checks(self, host: str, addresses: Iterable[str]) -> tuple[str, ...]:
        normalised: list[str] = []
        for text in addresses:
            try:
                address = ipaddress.ip_address(str(text))
            except ValueError:
                raise _Violation(
                    "private_address", f"{host} resolved to {text!r}, which is not an IP address"
                ) from None
            if not self.policy.allow_private_addresses:
                why = _address_class(address)
                if why is not None:
                    raise _Violation(
                        "private_address",
                        f"{host} resolves to {address}, not a public address ({why})",
                    )
            normalised.append(str(address))
        if not normalised:
            raise _Violation("private_address", f"{host} resolved to no address")
        return tuple(dict.fromkeys(normalised))

    # ------------------------------------------------------------------ content
    def check_mime(self, content_type: str | None) -> str:
        """Refuse a Content-Type off the allow-list; returns the bare media type."""
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if not media:
            raise self.refuse("mime", "no content type given", content_type or "")
        if media not in self._mime:
            raise self.refuse(
                "mime",
                f"content type {media} is not allowed ({', '.join(sorted(self._mime))})",
                content_type or "",
            )
        return media

    def check_size(self, n: int) -> None:
        """Refuse content of more than ``max_bytes`` bytes."""
        if n > self.policy.max_bytes:
            raise self.refuse(
                "max_bytes",
                f"content of {n} bytes or more exceeds the limit of {self.policy.max_bytes} bytes",
                str(n),
            )

    # ------------------------------------------------------------------ quotas
    def files_left(self) -> int:
        """Files that may still be fetched or read in this session."""
        with self._lock:
            return max(0, self.policy.max_files_per_session - self._files)

    def count_file(self) -> None:
        """Count one more file in this session; refuse beyond the per-session limit."""
        with self._lock:
            over = self._files >= self.policy.max_files_per_session
            if not over:
                self._files += 1
        if over:
            limit = self.policy.max_files_per_session
            raise self.refuse(
                "file_count",
                f"the session already has {limit} files (limit {limit})",
                str(limit + 1),
            )

    def new_session(self) -> None:
        """Start a new session: the file count goes back to zero (the rate window stays)."""
        with self._lock:
            self._files = 0

    def check_rate(self) -> None:
        """Record one request; refuse it when the sliding window is already full."""
        now = self._clock()
        window = self.policy.rate_limit_window_s
        with self._lock:
            while self._requests and now - self._requests[0] >= window:
                self._requests.popleft()
            full = len(self._requests) >= self.policy.rate_limit_requests
            if not full:
                self._requests.append(now)
            wait = window - (now - self._requests[0]) if full else 0.0
        if full:
            raise self.refuse(
                "rate_limit",
                f"{self.policy.rate_limit_requests} requests in the last {window:g} s already "
                f"(next slot in {wait:.1f} s)",
                f"{now:.3f}",
            )

    # ------------------------------------------------------------------ local files
    def open_local(self, path: str | os.PathLike[str]) -> ConfinedFile:
        """Open a local file for reading, only inside an allowed dir; close the result.

        ``~`` is expanded; a relative path is taken from the incoming dir. The
        path is mapped to an allowed dir by path components (lexically, or
        after resolving it when it reaches the dir through a symlink) and then
        opened only through :meth:`ConfinedDir.open_file`: from the dir's
        descriptor, component by component, symlinks resolved here and only
        while they stay inside, ``..`` never above the dir, hard links refused
        unless the policy allows them, and every entry on the way checked again
        after the open. What comes back is a descriptor of a regular file whose
        inode was reached inside the dir.

        Raises
        ------
        Refusal
            ``local_path``: outside, under /proc, /sys or /dev, a symlink leading
            out, a symlink loop, a hard link, not a regular file, or changed while
            it was being opened.
        ConfinementFailed
            Inside, but missing or unreadable (the fetcher reports a FetchError).
        """
        subject = path if isinstance(path, str) else repr(path)
        try:
            subject = os.fspath(path)
            expanded = expand_path(subject)
        except (ArgumentError, TypeError):
            raise self.refuse(
                "local_path", "empty path, NUL byte in path, or not a path", repr(subject)
            ) from None
        candidate = (
            expanded
            if os.path.isabs(expanded)
            else os.path.join(self.policy.incoming_dir, expanded)
        )
        located = self._locate(candidate, subject)
        if located is None:
            real = None
            # Only a hint for finding the dir (the open below is what is trusted):
            # a path that reaches an allowed dir through a symlink.
            with contextlib.suppress(OSError, ValueError):
                real = os.path.realpath(candidate)
            if real is not None and real != candidate:
                located = self._locate(real, subject)
        if located is None:
            dirs = ", ".join(d.path for d in self._read_dirs)
            raise self.refuse(
                "local_path", f"{subject} is outside the allowed dirs: {dirs}", subject
            )
        root, rel = located
        try:
            return root.open_file(rel)
        except ConfinementRefused as exc:
            raise self.refuse("local_path", exc.reason, subject) from None

    def _locate(self, path: str, subject: str) -> tuple[ConfinedDir, tuple[str, ...]] | None:
        """The allowed dir ``path`` is in (by components) and its components below it."""
        parts = PurePosixPath(path).parts
        for root in _SYSTEM_ROOTS:
            if parts[: len(root)] == root:
                shown = "" if path == subject else f" ({path})"
                where = "/".join(root) if len(root) < 2 else "/" + "/".join(root[1:])
                raise self.refuse(
                    "local_path",
                    f"{subject}{shown} is in system pseudo-filesystem {where}",
                    subject,
                )
        for root in self._read_dirs:
            rel = root.relative_parts(parts)
            if rel is not None:
                return root, rel
        return None
