"""Who may talk to the server, and with how many bytes: an ASGI middleware.

Model (what each secret protects is in ``docs/security.md``)
-----------------------------------------------------------
* **Host**: the ``Host`` header must name this server (loopback names and the
  bound address, plus ``server.allowed_hosts``), on its port. A DNS-rebinding
  page (``Host: attacker.example``) gets 403 before anything runs.
* **Origin**: a request carrying ``Origin`` must come from this server's own
  origin; a cross-site ``Sec-Fetch-Site`` on a state-changing request is refused.
* **Credentials**, on every address, loopback included: the token
  (``Authorization: Bearer …`` or ``X-Sentient-Token``) allows everything; a
  panel *session* (a cookie obtained with the token or a one-time login code,
  see :mod:`~sentient_core.server.sessions`) allows what the panel does, and a
  session request that changes state must echo the session's own CSRF token in
  ``X-CSRF-Token``. Without credentials only ``/health``, the login page and
  the panel's static files answer: everything else is 401.
* **Size**: the headers are at most 16 KiB (431); a JSON body is at most ``max_body_bytes``, an upload at most
  ``max_upload_bytes``. Checked from ``Content-Length`` and while reading a
  chunked body; past the limit the server reads at most :data:`LINGER_BYTES`
  more (dropped), answers 413 and closes the connection (never the rest).
* **Disconnects**: a client that goes away mid-body or mid-response leaves one
  debug line, never a traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from starlette.requests import ClientDisconnect

from sentient_core.server.sessions import LoginCodes, Session, Sessions

if TYPE_CHECKING:
    from sentient_core.server.stream import EventFeed

__all__ = [
    "LOG",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "Credentials",
    "Guard",
    "SecurityPolicy",
    "is_loopback",
    "plan",
]

LOG = logging.getLogger("uvicorn.error.sentient")
"""The server's own log lines (under uvicorn's, so they share its handler and level)."""

TOKEN_ENV = "SENTIENT_SERVER_TOKEN"
TOKEN_FILE = "server.token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PUBLIC_PATHS = frozenset({"/health", "/", "/login"})
"""Answered without credentials: liveness, and the login page and its form."""
UPLOAD_PATHS = frozenset({"/ingest"})
LINGER_BYTES = 128 * 1024
"""How much of an over-limit body is still read (and dropped) before the 413 and the
close: a client that has sent its whole body by then reads the answer, not a reset
(closing on unread bytes makes the kernel reset the connection). Past it, the
connection is closed; nothing more is read."""
LINGER_SECONDS = 0.5
"""After a refusal that closes the connection (413, 431) is sent whole, how long the
server waits (reading nothing) before it closes: a client still sending reads the
answer before the reset that closing on its unread bytes causes (it lost the answer
to that reset under load). What it can push
meanwhile is bounded by the connection's receive window
(:data:`sentient_core.server.run.RECEIVE_WINDOW`)."""
MAX_HEADER_BYTES = 16 * 1024
"""All request headers together (names and values); more is a 431."""
SESSION_LIFETIME_S = 24 * 3600.0
SESSION_IDLE_S = 8 * 3600.0
LOGIN_CODE_TTL_S = 3600.0

HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        b" connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class SecurityPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What :class:`Guard` enforces (see the module docstring).

    Attributes
    ----------
    port : int
        The bound port (``Host`` must carry it, or none).
    hosts : frozenset of str
        Accepted ``Host`` names (lower case, IPv6 without brackets).
    any_ip : bool
        Bound to a wildcard address: any IP literal is an accepted ``Host``.
    token : str
        The server token (allows everything).
    max_body_bytes, max_upload_bytes : int
    session_lifetime_s, session_idle_s : float
        How long a panel session lives, and how long it may go unused.
    """

    port: int
    hosts: frozenset[str]
    any_ip: bool = False
    token: str
    max_body_bytes: int
    max_upload_bytes: int
    session_lifetime_s: float = SESSION_LIFETIME_S
    session_idle_s: float = SESSION_IDLE_S

    @property
    def cookie(self) -> str:
        """The cookie's name (cookies ignore ports: one per port keeps servers apart)."""
        return f"sentient_{self.port}"

    def with_port(self, port: int) -> SecurityPolicy:
        """The same policy for the port actually bound (port 0 picks one)."""
        return msgspec.structs.replace(self, port=port)

    def token_matches(self, offered: str) -> bool:
        """Whether ``offered`` is the server token (constant time)."""
        return bool(offered) and hmac.compare_digest(
            offered.encode("utf-8", "surrogatepass"), self.token.encode()
        )


class Credentials(msgspec.Struct, frozen=True):
    """What a request proved: ``kind`` is ``token``, ``session`` or "" (nothing)."""

    kind: str = ""
    session: Session | None = None


def _write_token(data_dir: Path, token: str) -> Path:
    path = data_dir / TOKEN_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return path


def plan(server, data_dir: Path, env: Mapping[str, str] = os.environ) -> tuple[SecurityPolicy, str]:
    """The policy for a :class:`~sentient_core.config.ServerSection`, and a notice to print.

    The token comes from ``SENTIENT_SERVER_TOKEN``, else ``server.token_file``,
    else is generated; it is always written to ``DATA_DIR/server.token``
    (mode 0600) for local clients. Every request but ``/health`` needs it (or
    a panel session obtained with it), on loopback too.
    """
    host = server.host.strip("[]").lower()
    token = env.get(TOKEN_ENV, "").strip()
    source = f"${TOKEN_ENV}"
    if not token and server.token_file:
        try:
            token = Path(server.token_file).expanduser().read_text().strip()
        except OSError as exc:
            raise OSError(f"server.token_file {server.token_file}: {exc.strerror}") from None
        source = server.token_file
    if not token:
        token = secrets.token_urlsafe(32)
        source = "a new random token"
    if len(token) < 16:
        raise ValueError(f"the server token from {source} is shorter than 16 characters")
    path = _write_token(data_dir, token)
    wildcard = host in ("0.0.0.0", "::")
    hosts = {
        "localhost",
        "127.0.0.1",
        "::1",
        host,
        *(h.lower().strip("[]") for h in server.allowed_hosts),
    }
    policy = SecurityPolicy(
        port=server.port,
        hosts=frozenset(hosts),
        any_ip=wildcard,
        token=token,
        max_body_bytes=server.max_body_bytes,
        max_upload_bytes=server.max_upload_bytes,
        session_lifetime_s=server.session_lifetime_s,
        session_idle_s=server.session_idle_s,
    )
    notice = (
        f"API clients send the token ({source}; also in {path}, mode 0600):"
        " Authorization: Bearer TOKEN"
    )
    return policy, notice


def _split_host(value: str) -> tuple[str, int | None]:
    """``(name, port)`` of a Host header (port None if absent, -1 if malformed)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, -1
        name, rest = value[1:end], value[end + 1 :]
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
        rest = ":" + port
    else:
        name, rest = value, ""
    if not rest:
        return name, None
    digits = rest[1:]
    if not rest.startswith(":") or not (
        0 < len(digits) <= 5 and digits.isascii() and digits.isdigit()
    ):
        return name, -1
    return name, int(digits)


class Guard:
    """The ASGI middleware enforcing a :class:`SecurityPolicy` around ``app``.

    Attributes
    ----------
    sessions : Sessions
        The panel sessions (in memory: a restart ends them all).
    codes : LoginCodes
        One-time login codes (:meth:`login_url` issues one).
    refused : dict
        Refusals by status code (``/metrics``).
    """

    def __init__(self, app, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy
        self.sessions = Sessions(policy.session_lifetime_s, policy.session_idle_s)
        self.codes = LoginCodes(LOGIN_CODE_TTL_S)
        self.refused: dict[str, int] = {}
        self.disconnects = 0
        self.feed: EventFeed | None = None  # the live stream's, set by create_app

    def login_url(self, base: str) -> str:
        """``base`` with a new one-time login code (``base/?token=CODE``)."""
        return f"{base.rstrip('/')}/?token={self.codes.issue()}"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if sum(len(k) + len(v) for k, v in scope["headers"]) > MAX_HEADER_BYTES:
            return await self._refuse(
                send,
                431,
                "request headers too large",
                f"limit {MAX_HEADER_BYTES} bytes",
                close=True,
            )
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method = scope["method"]
        path = scope["path"]
        p = self.policy
        name, port = _split_host(headers.get("host", ""))
        host_ok = (name in p.hosts or (p.any_ip and _is_ip(name))) and port in (None, p.port)
        if not host_ok:
            return await self._refuse(send, 403, "host not allowed", headers.get("host", ""))
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{headers['host']}":
            return await self._refuse(send, 403, "cross-origin request refused", origin)
        if method not in SAFE_METHODS and headers.get("sec-fetch-site") == "cross-site":
            return await self._refuse(send, 403, "cross-site request refused", path)
        creds = self._credentials(headers)
        scope.setdefault("state", {})["credentials"] = creds
        if not creds.kind and path not in PUBLIC_PATHS and not path.startswith("/static/"):
            return await self._refuse(send, 401, "credentials required", "the token or a session")
        if creds.kind == "session" and method not in SAFE_METHODS:
            assert creds.session is not None
            sent = headers.get("x-csrf-token", "").encode("latin-1")
            if not hmac.compare_digest(sent, creds.session.csrf.encode()):
                return await self._refuse(send, 403, "missing or wrong X-CSRF-Token", path)
        limit = p.max_upload_bytes if path in UPLOAD_PATHS else p.max_body_bytes
        length = headers.get("content-length")
        if length is not None and (not _is_count(length) or int(length) > limit):
            if _is_count(length) and int(length) <= limit + LINGER_BYTES:
                await _drain(receive, int(length))
            return await self._refuse(
                send, 413, "request body too large", f"limit {limit} bytes", close=True
            )
        started = False
        refused = False
        gone = False
        seen = 0

        async def limited_receive():
            nonlocal seen, refused, gone
            if refused or gone:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.disconnect":
                gone = True
            elif message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit and not started:
                    # Answer 413 and close: at most LINGER_BYTES more of the body are
                    # read (so a client that was nearly done reads the answer instead
                    # of a reset), never the rest. The app sees the client gone.
                    if message.get("more_body", False):
                        await _drain(receive, limit + LINGER_BYTES - seen)
                    refused = True
                    await self._refuse(
                        send, 413, "request body too large", f"limit {limit} bytes", close=True
                    )
                    return {"type": "http.disconnect"}
            return message

        async def secured_send(message):
            nonlocal started, gone
            if refused or gone:
                return
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            try:
                await send(message)
            except OSError:  # the client went away while we wrote
                gone = True

        try:
            await self.app(scope, limited_receive, secured_send)
        except ClientDisconnect:
            gone = True
        except Exception as exc:
            if not (refused or gone):
                raise
            LOG.debug("%s %s: client gone (%s)", method, path, type(exc).__name__)
        if gone:
            self.disconnects += 1
            LOG.debug("%s %s: the client disconnected before the response was sent", method, path)

    def _credentials(self, headers: dict[str, str]) -> Credentials:
        p = self.policy
        offered = headers.get("x-sentient-token", "")
        bearer = headers.get("authorization", "")
        if bearer[:7].lower() == "bearer ":
            offered = bearer[7:].strip()
        if offered and p.token_matches(offered):
            return Credentials("token")
        for part in headers.get("cookie", "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == p.cookie:
                session = self.sessions.get(value)
                if session is not None:
                    return Credentials("session", session)
        return Credentials()

    async def _refuse(
        self, send, status: int, error: str, detail: str = "", *, close: bool = False
    ) -> None:
        self.refused[str(status)] = self.refused.get(str(status), 0) + 1
        body = json.dumps({"error": error, "detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *HEADERS,
        ]
        if close:
            headers.append((b"connection", b"close"))
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": close})
            if close:
                # A lingering close: the answer is out; give the client time to read it
                # before the close resets a connection it is still sending on.
                await asyncio.sleep(LINGER_SECONDS)
                await send({"type": "http.response.body", "body": b""})
        except OSError:
            self.disconnects += 1


async def _drain(receive, budget: int) -> None:
    """Read and drop body messages until the body ends, the client goes, or
    ``budget`` bytes were read."""
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _is_count(value: str) -> bool:
    """A Content-Length: ASCII digits only (``"²".isdigit()`` is true), at most 18 of them."""
    return 0 < len(value) <= 18 and value.isascii() and value.isdigit()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
