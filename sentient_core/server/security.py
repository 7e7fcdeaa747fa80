"""Who may talk to the server, and with how many bytes: an ASGI middleware.

Model
-----
* **Host**: the ``Host`` header must name this server (loopback names and the
  bound address, plus ``server.allowed_hosts``), on its port. A DNS-rebinding
  page (``Host: attacker.example``) gets 403 before anything runs.
* **Origin**: a request carrying ``Origin`` must come from this server's own
  origin; a cross-site ``Sec-Fetch-Site`` on a state-changing request is refused.
* **Credentials**: the token (``Authorization: Bearer …`` or ``X-Sentient-Token``)
  allows everything. The panel page sets an HttpOnly ``SameSite=Strict`` cookie
  holding a per-server secret and embeds a CSRF token; a cookie request that
  changes state must echo that token in ``X-CSRF-Token``. Without credentials,
  a loopback server answers reads; one bound elsewhere (or with
  ``require_token``) answers only ``/health`` and the login page.
* **Size**: a JSON body is at most ``max_body_bytes``, an upload at most
  ``max_upload_bytes`` (413, checked from ``Content-Length`` and while reading).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import msgspec

if TYPE_CHECKING:
    from sentient_core.server.stream import EventFeed

__all__ = ["TOKEN_ENV", "TOKEN_FILE", "Guard", "SecurityPolicy", "is_loopback", "plan"]

TOKEN_ENV = "SENTIENT_SERVER_TOKEN"
TOKEN_FILE = "server.token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_PATHS = frozenset({"/health"})
PAGE_PATHS = frozenset({"/", "/panel/session"})
UPLOAD_PATHS = frozenset({"/ingest"})

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
    require_token : bool
        No reads without credentials either.
    secret, csrf : str
        The panel cookie's value and the CSRF token the panel echoes.
    max_body_bytes, max_upload_bytes : int
    """

    port: int
    hosts: frozenset[str]
    any_ip: bool = False
    token: str
    require_token: bool
    secret: str
    csrf: str
    max_body_bytes: int
    max_upload_bytes: int

    @property
    def cookie(self) -> str:
        """The cookie's name (cookies ignore ports: one per port keeps servers apart)."""
        return f"sentient_{self.port}"

    def with_port(self, port: int) -> SecurityPolicy:
        """The same policy for the port actually bound (port 0 picks one)."""
        return msgspec.structs.replace(self, port=port)


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
    (mode 0600) for local clients. A generated token the server requires is
    printed once, in the notice.
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
    generated = not token
    if generated:
        token = secrets.token_urlsafe(32)
    if len(token) < 16:
        raise ValueError(f"the server token from {source} is shorter than 16 characters")
    path = _write_token(data_dir, token)
    wildcard = host in ("0.0.0.0", "::")
    required = server.require_token or not is_loopback(host)
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
        require_token=required,
        secret=secrets.token_urlsafe(32),
        csrf=secrets.token_urlsafe(32),
        max_body_bytes=server.max_body_bytes,
        max_upload_bytes=server.max_upload_bytes,
    )
    if required and generated:
        notice = (
            f"token (printed once; also in {path}, mode 0600): {token}\n"
            "every request needs it: Authorization: Bearer TOKEN, or open the panel once"
            " at /?token=TOKEN"
        )
    elif required:
        notice = f"every request needs the token from {source} (also in {path})"
    else:
        notice = (
            f"loopback only; state-changing API calls need the token in {path}"
            " (Authorization: Bearer …); the panel gets a session cookie"
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
    if not rest.startswith(":") or not rest[1:].isdigit():
        return name, -1
    return name, int(rest[1:])


class Guard:
    """The ASGI middleware enforcing a :class:`SecurityPolicy` around ``app``."""

    def __init__(self, app, policy: SecurityPolicy) -> None:
        self.app = app
        self.policy = policy
        self.refused: dict[str, int] = {}
        self.feed: EventFeed | None = None  # the live stream's, set by create_app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
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
        auth = self._credentials(scope, headers)
        scope.setdefault("state", {})["auth"] = auth
        if auth == "":
            public = path in OPEN_PATHS or path == "/" or path.startswith("/static/")
            if p.require_token and not public:
                return await self._refuse(send, 401, "token required", path)
            if method not in SAFE_METHODS:
                return await self._refuse(
                    send, 401, "state-changing requests need the token or the panel's session"
                )
        elif auth == "cookie" and method not in SAFE_METHODS:
            sent = headers.get("x-csrf-token", "")
            if not hmac.compare_digest(sent.encode(), p.csrf.encode()):
                return await self._refuse(send, 403, "missing or wrong X-CSRF-Token", path)
        limit = p.max_upload_bytes if path in UPLOAD_PATHS else p.max_body_bytes
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await self._refuse(send, 413, "request body too large", f"limit {limit} bytes")
        started = False
        refused = False
        seen = 0

        async def limited_receive():
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit and not started:
                    # Answer 413 now; the app sees the client gone and its replies are dropped.
                    refused = True
                    await self._refuse(send, 413, "request body too large", f"limit {limit} bytes")
                    return {"type": "http.disconnect"}
            return message

        async def secured_send(message):
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        try:
            await self.app(scope, limited_receive, secured_send)
        except Exception:
            if not refused:
                raise

    def _credentials(self, scope, headers: dict[str, str]) -> str:
        """``token``, ``cookie`` or "" (none valid)."""
        p = self.policy
        offered = headers.get("x-sentient-token", "")
        bearer = headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            offered = bearer[7:].strip()
        if not offered and scope["path"] in PAGE_PATHS:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            offered = (query.get("token") or [""])[0]
        if offered and hmac.compare_digest(offered.encode(), p.token.encode()):
            return "token"
        for part in headers.get("cookie", "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == p.cookie and hmac.compare_digest(value.encode(), p.secret.encode()):
                return "cookie"
        return ""

    async def _refuse(self, send, status: int, error: str, detail: str = "") -> None:
        self.refused[str(status)] = self.refused.get(str(status), 0) + 1
        body = json.dumps({"error": error, "detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
