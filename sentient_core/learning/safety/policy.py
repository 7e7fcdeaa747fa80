"""What the safety filter allows (:class:`SafetyPolicy`), the names of its checks, and the refusal.

:data:`CHECKS` is the registry: every check's name and what it enforces, in
evaluation order; a :class:`Refusal` names the check that fired.
"""

from __future__ import annotations

import re
from typing import Annotated

import idna
import msgspec

from sentient_core.confine import expand_path
from sentient_core.errors import ArgumentError, SentientError

__all__ = [
    "CHECKS",
    "DEFAULT_ALLOWED_DOMAINS",
    "DEFAULT_ALLOWED_MIME",
    "DNS_LABEL_RE",
    "Refusal",
    "SafetyPolicy",
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

#: One DNS label of a lower-case ASCII (IDNA) host name.
DNS_LABEL_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def _normalise_domain(domain: str) -> str:
    """Lower-case, strip one trailing dot and IDNA-encode an allow-list entry."""
    name = domain.strip().lower()
    name = name.removesuffix(".")
    if not name.isascii():
        try:
            name = idna.encode(name).decode("ascii")
        except idna.IDNAError as exc:
            raise ArgumentError(f"allowed domain {domain!r} is not a valid name: {exc}") from None
    if not name or not all(DNS_LABEL_RE.match(label) for label in name.split(".")):
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
