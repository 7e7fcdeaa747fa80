"""Fetch web content and read local files through the safety filter.

:class:`Fetcher` is the chaperone's only way to the network and to local
files. One :meth:`Fetcher.fetch` runs::

    rate_limit → file_count (quota left?) → URL checks → resolve + private_address
    → GET (redirects followed by hand, every hop re-checked) → mime → max_bytes
    (Content-Length, then the running total while streaming) → file_count
    → write a new file inside the incoming dir (temp file + os.replace)

Exceptions::

    Refusal        (sentient_core.learning.safety) a safety check said no
    FetchError     the fetch or read failed for another reason; ``.target``, ``.reason``
    ├── FetchTimeout        connect/read timeout or the whole-fetch deadline
    └── FetchStatusError    the server answered with HTTP status >= 400 (``.status``)

DNS rebinding: the addresses checked are the addresses connected to. The
default client's connection pool uses a network backend that only connects to
the addresses the safety filter approved for that host (a host it has no
approved addresses for cannot be connected to at all), so a second, different
DNS answer is never used. TLS still verifies the certificate against the host
*name*. A caller-supplied ``client`` or ``transport`` does its own resolution;
with those the residual risk is a DNS answer that changes between the check
and the connection (mitigated only by the short time between the two).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import httpcore
import httpx
import msgspec

from sentient_core.confine import ConfinedDir, ConfinementError, ConfinementFailed
from sentient_core.errors import ArgumentError, SentientError
from sentient_core.learning.safety import Refusal, SafetyFilter, Target

__all__ = [
    "EXTENSION_MIME",
    "MIME_EXTENSION",
    "FetchError",
    "FetchResult",
    "FetchStatusError",
    "FetchTimeout",
    "Fetcher",
    "LocalFile",
    "Refusal",
    "mime_for_path",
]

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]

#: File extension written for each allowed content type.
MIME_EXTENSION: dict[str, str] = {
    "text/html": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "application/pdf": ".pdf",
    "application/json": ".json",
}
#: Content type of a local file, by extension.
EXTENSION_MIME: dict[str, str] = {
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".pdf": "application/pdf",
    ".json": "application/json",
}

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_READ_CHUNK = 64 * 1024


def mime_for_path(path: str | os.PathLike[str]) -> str | None:
    """Content type of a local file from its extension, or ``None`` when unknown."""
    return EXTENSION_MIME.get(Path(path).suffix.lower())


class FetchResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Content fetched from an allowed source and saved in the incoming dir.

    Attributes
    ----------
    url, final_url : str
        The URL asked for and the one that served the content (after redirects).
    mime : str
        Bare media type from the response.
    data : bytes
        The content.
    saved_path : str
        The new file inside the incoming dir.
    bytes : int
        ``len(data)``.
    redirects : int
        Redirect hops followed.
    """

    url: str
    final_url: str
    mime: str
    data: bytes
    saved_path: str
    bytes: NonNegInt
    redirects: NonNegInt = 0


class LocalFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A local file read from an allowed directory.

    Attributes
    ----------
    path : str
        Where the file is: the allowed dir joined with the resolved components
        (symlinks inside the dir and ``..`` resolved).
    mime : str
        Content type from the extension.
    data : bytes
        The content.
    bytes : int
        ``len(data)``.
    """

    path: str
    mime: str
    data: bytes
    bytes: NonNegInt


class FetchError(SentientError):
    """A fetch or local read failed for a reason other than a safety refusal.

    Attributes
    ----------
    target : str
        The URL or path.
    reason : str
        What went wrong, in words.
    status : int or None
        HTTP status when the server answered.
    """

    def __init__(self, target: str, reason: str, status: int | None = None) -> None:
        self.target = target
        self.reason = reason
        self.status = status
        super().__init__(f"{target}: {reason}")

    def __reduce__(self):
        return (type(self), (self.target, self.reason, self.status))


class FetchTimeout(FetchError):
    """A connect/read timeout, or the whole fetch took longer than its deadline."""


class FetchStatusError(FetchError):
    """The server answered with an HTTP error status (>= 400)."""


class _PinnedBackend(httpcore.SyncBackend):
    """Connects only to the addresses the safety filter approved for a host."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def pin(self, host: str, addresses: tuple[str, ...]) -> None:
        with self._lock:
            self._pins[host] = addresses

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        with self._lock:
            addresses = self._pins.get(host.lower().rstrip("."), ())
        if not addresses:
            raise httpcore.ConnectError(f"no safety-checked address for host {host!r}")
        last: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectTimeout:
                raise
            except httpcore.ConnectError as exc:
                last = exc
        assert last is not None
        raise last


_HELD_LOCATION = "sentient_core.location"


class _LocationGuard(httpx.BaseTransport):
    """Moves a redirect's ``Location`` header out of httpx's way, into the response extensions.

    httpx parses the Location of every redirect response itself, even when it
    does not follow it, and turns one it cannot parse (``https://host:¹²³/``)
    into a ``RemoteProtocolError``: a bare network error instead of a counted
    refusal. With the header held aside, the fetcher hands the raw value to
    :meth:`SafetyFilter.check_redirect`, so every hop gets exactly the checks a
    first URL gets.
    """

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if response.status_code in _REDIRECT_STATUSES and "location" in response.headers:
            response.extensions = {
                **response.extensions,
                _HELD_LOCATION: tuple(response.headers.get_list("location")),
            }
            del response.headers["location"]
        return response

    def close(self) -> None:
        self._inner.close()


def _ssl_context(verify: bool | str | os.PathLike[str] | ssl.SSLContext) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        # Safety depends on knowing who answered: certificate checks stay on.
        raise ArgumentError("verify=False is not allowed; pass a CA bundle path or an SSLContext")
    if verify is True:
        return httpx.create_ssl_context()
    return ssl.create_default_context(cafile=os.fspath(verify))


class Fetcher:
    """Fetch URLs and read local files, every step gated by a :class:`SafetyFilter`.

    Parameters
    ----------
    safety : SafetyFilter
        The checks (and the incoming dir, from its policy).
    client : httpx.Client, optional
        Use this client (its resolution is not pinned; see the module notes).
    transport : httpx.BaseTransport, optional
        Build the client on this transport (unit tests: ``httpx.MockTransport``).
    timeout : httpx.Timeout
        Per-request timeouts.
    verify : bool, str, path or ssl.SSLContext
        ``True`` (system/certifi CAs), a CA bundle path or an SSL context. Never ``False``.
    user_agent : str
        Sent with every request.
    max_duration_s : float
        Deadline for a whole fetch (all hops and the body), against slow drips.
    clock : callable
        Monotonic seconds, for the deadline.
    """

    def __init__(
        self,
        safety: SafetyFilter,
        *,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout = httpx.Timeout(30.0, connect=10.0),  # noqa: B008 - immutable
        verify: bool | str | os.PathLike[str] | ssl.SSLContext = True,
        user_agent: str = "sentient-core/0.1",
        max_duration_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if client is not None and transport is not None:
            raise ArgumentError("pass either client or transport, not both")
        self.safety = safety
        self.timeout = timeout
        self.user_agent = user_agent
        self.max_duration_s = max_duration_s
        self._clock = clock
        self._backend: _PinnedBackend | None = None
        self._owns_client = client is None
        if client is None:
            if transport is None:
                transport, self._backend = self._pinned_transport(_ssl_context(verify))
            # trust_env=False: no proxies or .netrc from the environment. The guard
            # keeps redirect Locations away from httpx's own URL parser (see _LocationGuard).
            client = httpx.Client(
                transport=_LocationGuard(transport), timeout=timeout, trust_env=False
            )
        self._client = client
        self.incoming_dir = Path(safety.policy.incoming_dir)

    @staticmethod
    def _pinned_transport(context: ssl.SSLContext) -> tuple[httpx.HTTPTransport, _PinnedBackend]:
        backend = _PinnedBackend()
        transport = httpx.HTTPTransport(verify=context, trust_env=False)
        # httpx has no public hook for the network backend; swap in an identical
        # pool that connects through the pinned backend.
        transport._pool.close()
        transport._pool = httpcore.ConnectionPool(
            ssl_context=context, keepalive_expiry=5.0, network_backend=backend
        )
        return transport, backend

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the HTTP client if this fetcher created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ network
    def fetch(self, url: str) -> FetchResult:
        """Fetch ``url`` and save it in the incoming dir.

        Raises
        ------
        Refusal
            A safety check refused (``check`` names it).
        FetchError
            Network failure, timeout (:class:`FetchTimeout`), HTTP >= 400
            (:class:`FetchStatusError`), or the file could not be saved.
        """
        safety = self.safety
        safety.check_rate()
        if safety.files_left() == 0:
            safety.count_file()  # refuses: no point downloading what cannot be kept
        target = safety.check_url(url)
        addresses = self._resolve(url, target)
        self._pin(target, addresses)
        deadline = self._clock() + self.max_duration_s
        seen = {target.url}
        hops = 0
        while True:
            try:
                outcome = self._request(url, target, deadline)
            except httpx.TimeoutException as exc:
                raise FetchTimeout(target.url, f"timed out ({type(exc).__name__})") from exc
            except httpx.HTTPError as exc:
                raise FetchError(target.url, f"network error: {type(exc).__name__}: {exc}") from exc
            if isinstance(outcome, str):
                hops += 1
                try:
                    target, addresses = safety.check_redirect(target.url, outcome, hops, seen)
                except OSError as exc:
                    raise FetchError(outcome, f"could not resolve redirect target: {exc}") from exc
                seen.add(target.url)
                self._pin(target, addresses)
                continue
            mime, data = outcome
            break
        safety.count_file()
        saved = self._save(target.url, mime, data)
        return FetchResult(
            url=url,
            final_url=target.url,
            mime=mime,
            data=data,
            saved_path=str(saved),
            bytes=len(data),
            redirects=hops,
        )

    def _resolve(self, url: str, target: Target) -> tuple[str, ...]:
        try:
            return self.safety.check_host(target.host)
        except OSError as exc:
            raise FetchError(url, f"could not resolve {target.host}: {exc}") from exc

    def _pin(self, target: Target, addresses: tuple[str, ...]) -> None:
        if self._backend is not None:
            self._backend.pin(target.host, addresses)

    def _request(self, url: str, target: Target, deadline: float) -> str | tuple[str, bytes]:
        """One GET: the redirect Location (str), or ``(mime, data)`` of an accepted body."""
        safety = self.safety
        headers = {
            "User-Agent": self.user_agent,
            "Accept": ", ".join(safety.policy.allowed_mime),
            # Identity: the size limit then bounds what is read, not a decompressed bomb.
            "Accept-Encoding": "identity",
        }
        if self._clock() > deadline:
            raise FetchTimeout(target.url, f"took longer than {self.max_duration_s:g} s")
        with self._client.stream(
            "GET", target.url, headers=headers, follow_redirects=False, timeout=self.timeout
        ) as response:
            status = response.status_code
            if status in _REDIRECT_STATUSES:
                held = response.extensions.get(_HELD_LOCATION) or ()
                if len(set(held)) > 1:
                    raise safety.refuse(
                        "redirect",
                        f"HTTP {status} redirect with {len(held)} different Location headers",
                        " | ".join(held),
                    )
                location = held[0] if held else response.headers.get("location")
                if not location:
                    raise FetchError(target.url, f"HTTP {status} redirect without Location", status)
                return location
            if status >= 400:
                raise FetchStatusError(
                    target.url, f"HTTP {status} {response.reason_phrase}", status
                )
            if not 200 <= status < 300:
                raise FetchError(target.url, f"unexpected HTTP {status}", status)
            mime = safety.check_mime(response.headers.get("content-type"))
            declared = response.headers.get("content-length")
            if declared is not None and declared.strip().isdigit():
                safety.check_size(int(declared))
            limit = safety.policy.max_bytes
            chunks: list[bytes] = []
            total = 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                if total > limit:
                    # Leaving the with-block closes the connection: the rest is never read.
                    safety.check_size(total)
                chunks.append(chunk)
                if self._clock() > deadline:
                    raise FetchTimeout(
                        target.url,
                        f"took longer than {self.max_duration_s:g} s ({total} bytes read)",
                    )
            return mime, b"".join(chunks)

    def _save(self, final_url: str, mime: str, data: bytes) -> Path:
        """Write ``data`` to a new file inside the incoming dir; returns its path.

        Written relative to the incoming dir's descriptor (opened from ``/``
        without following symlinks): a temp file created with ``O_EXCL`` and
        ``O_NOFOLLOW``, then renamed over the target name, so a symlink planted
        at the name (or a dir swapped for a symlink) is never written through.
        """
        name = hashlib.sha256(final_url.encode()).hexdigest()[:32] + MIME_EXTENSION.get(
            mime, ".bin"
        )
        try:
            self.incoming_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FetchError(final_url, f"could not create {self.incoming_dir}: {exc}") from exc
        try:
            with ConfinedDir(self.incoming_dir) as incoming:
                incoming.replace_file(name, data)
                saved = Path(incoming.path) / name
        except ConfinementError as exc:
            raise FetchError(
                final_url, f"could not save into {self.incoming_dir}: {exc.reason}"
            ) from None
        return saved

    # ------------------------------------------------------------------ local files
    def read_local(self, path: str | os.PathLike[str]) -> LocalFile:
        """Read a local file from an allowed directory.

        The file is opened through :meth:`SafetyFilter.open_local` (confined to
        the allowed dir's descriptor, see :mod:`sentient_core.confine`) and the
        bytes returned are read from that very descriptor.

        Raises
        ------
        Refusal
            ``local_path`` (outside, symlink escape, ``..`` above the dir, hard
            link, symlink loop, not a regular file, changed while being opened),
            ``mime`` (unknown extension), ``max_bytes``, ``file_count``.
        FetchError
            The file does not exist or cannot be read.
        """
        safety = self.safety
        subject = os.fspath(path) if isinstance(path, (str, os.PathLike)) else repr(path)
        try:
            handle = safety.open_local(path)
        except ConfinementFailed as exc:
            raise FetchError(str(subject), exc.reason) from None
        with handle:
            mime = mime_for_path(handle.path)
            if mime is None:
                suffix = Path(handle.path).suffix or "(no extension)"
                raise safety.refuse("mime", f"file type {suffix} is not allowed", str(subject))
            mime = safety.check_mime(mime)
            safety.check_size(handle.stat.st_size)
            try:
                data = handle.read(safety.policy.max_bytes)
            except ConfinementFailed as exc:
                raise FetchError(str(subject), exc.reason) from None
        safety.check_size(len(data))
        safety.count_file()
        return LocalFile(path=handle.path, mime=mime, data=data, bytes=len(data))
