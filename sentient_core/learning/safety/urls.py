"""The URL checks (scheme to parsers), the address check, and redirect hops.

:class:`UrlRules` holds one policy's rules; each check that fails is reported
through the ``refuse`` it is given (the filter's counted
:meth:`~sentient_core.learning.safety.SafetyFilter.refuse`), and the
:class:`~sentient_core.learning.safety.policy.Refusal` it returns is raised.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
import urllib.parse
from collections.abc import Callable, Collection, Iterable
from urllib.parse import unquote

import httpx
import idna
import msgspec

from sentient_core.learning.safety.policy import DNS_LABEL_RE, Refusal, SafetyPolicy

__all__ = ["Refuse", "Resolver", "Target", "UrlRules", "system_resolver"]

#: A resolver maps a host name to the IP addresses (strings) it resolves to.
Resolver = Callable[[str], Iterable[str]]
#: ``refuse(check, reason, subject, inner)``: count a refusal and return it to raise.
Refuse = Callable[[str, str, str, str], Refusal]

_MAX_URL_CHARS = 8192
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# ASCII controls, space and DEL: parsers strip or keep them differently.
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]")
# WHATWG URL: a host whose last label is a number (decimal or 0x-hex) is parsed
# as an IPv4 address, whatever the other labels are.
_NUMERIC_LABEL_RE = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_DEFAULT_PORTS = {"https": 443, "http": 80}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


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


class _Violation(Exception):
    """Internal: a check failed; the public methods of :class:`UrlRules` refuse it."""

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


class UrlRules:
    """The URL, address and redirect checks of one :class:`SafetyPolicy`.

    Parameters
    ----------
    policy : SafetyPolicy
    resolver : callable
        ``resolver(host) -> iterable of IP strings``, for redirect targets.
    """

    def __init__(self, policy: SafetyPolicy, resolver: Resolver) -> None:
        self.policy = policy
        self.resolver = resolver
        self._domains = tuple(tuple(d.split(".")) for d in policy.allowed_domains)
        self._host_ports = frozenset(policy.allowed_host_ports)

    def check_url(self, url: str, refuse: Refuse) -> Target:
        """The checked :class:`Target` of ``url``; the first failed check is refused."""
        try:
            return self._url_checks(url)
        except _Violation as v:
            raise refuse(v.check, v.reason, url, "") from None

    def check_addresses(
        self, host: str, addresses: Iterable[str], refuse: Refuse
    ) -> tuple[str, ...]:
        """``addresses`` normalised, unless one of them is not public (refused)."""
        try:
            return self._address_checks(host, addresses)
        except _Violation as v:
            raise refuse(v.check, v.reason, host, "") from None

    def check_redirect(
        self, current: str, location: str, hop: int, seen: Collection[str], refuse: Refuse
    ) -> tuple[Target, tuple[str, ...]]:
        """Target and addresses of redirect hop ``hop``; any failure is a ``redirect`` refusal."""
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
            addresses = self._address_checks(target.host, self.resolver(target.host))
        except _Violation as v:
            inner = "" if v.check == "redirect" else v.check
            reason = (
                v.reason
                if v.check == "redirect"
                else f"redirect hop {hop} to {location!r} refused by {v.check}: {v.reason}"
            )
            raise refuse("redirect", reason, location, inner) from None
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
        if not all(DNS_LABEL_RE.match(label) for label in labels):
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
