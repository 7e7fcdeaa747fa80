"""The HTTP API and the panel: Starlette routes over a :class:`LearnerHost`.

Routes::

    GET  /                    the panel (sets the session cookie, embeds the CSRF token)
    GET  /panel/session       a fresh cookie and CSRF token (the panel after a restart)
    GET  /static/…            the panel's files (package data, no network, no build step)
    POST /learning/start|stop|pause|resume
    GET  /learning/status     session stats, budget against its caps, gate counters
    GET  /learning/logs?count=N   the chaperone's interaction log
    GET  /learning/stream     SSE: every audit-log event, id = its sequence
    POST /ask  POST /focus  GET /recall?q=…&k=…&explain=1  POST /ingest?name=FILE
    GET  /health  GET /metrics

Blocking work (the learner, LMDB) runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from importlib import resources

import msgspec
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sentient_core import __version__
from sentient_core.server.host import LearnerHost, UploadRefused
from sentient_core.server.metrics import CONTENT_TYPE, render_metrics
from sentient_core.server.schemas import (
    AskRequest,
    CommandReply,
    FocusRequest,
    HealthReply,
    LogsReply,
    RecallRequest,
    SessionReply,
    StatusReply,
    to_json,
)
from sentient_core.server.security import Guard, SecurityPolicy
from sentient_core.server.stream import EventFeed, last_seq, parse_after

__all__ = ["STATIC", "create_app"]

STATIC = resources.files("sentient_core.server") / "static"
MAX_LOG_COUNT = 1000
VERBS = frozenset({"start", "stop", "pause", "resume"})


class _HTTPError(Exception):
    """Internal: becomes a JSON error reply."""

    def __init__(self, status: int, error: str, detail: str = "") -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.detail = detail


def _json(value, status: int = 200) -> Response:
    return Response(
        to_json(value),
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store"},
    )


def _error(status: int, error: str, detail: str = "") -> Response:
    return JSONResponse(
        {"error": error, "detail": detail},
        status_code=status,
        headers={"cache-control": "no-store"},
    )


async def _decode(request: Request, cls):
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise _HTTPError(415, "expected Content-Type: application/json", ctype or "none")
    raw = await request.body()
    try:
        return msgspec.json.decode(raw, type=cls)
    except msgspec.ValidationError as exc:
        raise _HTTPError(400, "invalid request", str(exc)) from None
    except msgspec.DecodeError as exc:
        raise _HTTPError(400, "body is not JSON", str(exc)) from None


def _query(request: Request, cls):
    params = dict(request.query_params)
    try:
        return msgspec.convert(params, cls, strict=False)
    except msgspec.ValidationError as exc:
        raise _HTTPError(400, "invalid query", str(exc)) from None


def _page(policy: SecurityPolicy, request: Request) -> Response:
    auth = request.scope.get("state", {}).get("auth", "")
    if policy.require_token and not auth:
        body = (STATIC / "login.html").read_text()
        return HTMLResponse(body, status_code=401, headers={"cache-control": "no-store"})
    html = (STATIC / "index.html").read_text().replace("{{csrf}}", policy.csrf)
    html = html.replace("{{version}}", __version__)
    response = HTMLResponse(html, headers={"cache-control": "no-store"})
    _set_cookie(response, policy)
    return response


def _set_cookie(response: Response, policy: SecurityPolicy) -> None:
    response.set_cookie(
        policy.cookie, policy.secret, httponly=True, samesite="strict", path="/", secure=False
    )


def create_app(host: LearnerHost, policy: SecurityPolicy, feed: EventFeed | None = None) -> Guard:
    """The ASGI application: the routes behind the :class:`Guard`.

    ``feed`` (default: a new one over the host's bus) serves the live stream;
    it is attached to the event loop at start-up.
    """
    state: dict = {"feed": feed or EventFeed(host.bus, host.core.store)}

    async def control(request: Request) -> Response:
        verb = request.path_params["verb"]
        if verb not in VERBS:
            raise _HTTPError(404, "not found", request.url.path)
        done = await run_in_threadpool(getattr(host, verb))
        return _json(CommandReply(ok=done.ok, state=done.state, message=done.message))

    async def status(request: Request) -> Response:
        st = await run_in_threadpool(host.status)
        reply = StatusReply(
            **msgspec.structs.asdict(st),
            last_seq=await run_in_threadpool(last_seq, host.core.store),
            stream_clients=state["feed"].clients,
            unsafe=tuple(host.unsafe),
            version=__version__,
        )
        return _json(reply)

    async def logs(request: Request) -> Response:
        raw = request.query_params.get("count", "100")
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_LOG_COUNT:
            raise _HTTPError(
                400, "invalid query", f"count must be an integer in [1, {MAX_LOG_COUNT}]"
            )
        return _json(LogsReply(entries=await run_in_threadpool(host.logs, int(raw))))

    async def stream(request: Request) -> Response:
        try:
            after = parse_after(
                request.headers.get("last-event-id"), request.query_params.get("after")
            )
        except ValueError as exc:
            raise _HTTPError(400, "invalid Last-Event-ID / after", str(exc)) from None
        return EventSourceResponse(
            state["feed"].messages(after), ping=15, headers={"cache-control": "no-store"}
        )

    async def ask(request: Request) -> Response:
        body = await _decode(request, AskRequest)
        return _json(await run_in_threadpool(host.ask, body.question))

    async def focus(request: Request) -> Response:
        body = await _decode(request, FocusRequest)
        try:
            return _json(await run_in_threadpool(host.focus, body.topic))
        except ValueError as exc:
            raise _HTTPError(400, "focus refused", str(exc)) from None

    async def recall(request: Request) -> Response:
        q = _query(request, RecallRequest)
        return _json(await run_in_threadpool(host.recall, q.q, q.k, q.explain, q.threshold))

    async def ingest(request: Request) -> Response:
        name = request.query_params.get("name", "")
        if not name:
            raise _HTTPError(400, "missing ?name=FILE (its extension picks the extractor)")
        try:
            target = host.upload_path(name)
        except UploadRefused as exc:
            raise _HTTPError(415, "unsupported upload", str(exc)) from None
        tmp = target.with_name(f".upload-{secrets.token_hex(8)}")
        try:
            with tmp.open("wb") as f:
                async for chunk in request.stream():
                    await run_in_threadpool(f.write, chunk)
            if tmp.stat().st_size == 0:
                raise _HTTPError(400, "empty upload")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        reply = await run_in_threadpool(host.ingest, target)
        return _json(reply, 200 if reply.files or not reply.skipped else 422)

    async def health(request: Request) -> Response:
        return _json(HealthReply(ok=True, version=__version__))

    async def metrics(request: Request) -> Response:
        st = await run_in_threadpool(host.status)
        feed = state["feed"]
        text = render_metrics(
            st,
            events_published=host.bus.published,
            audit_commits=host.flusher.commits,
            stream_clients=feed.clients if feed else 0,
            stream_sent=feed.sent if feed else 0,
            refused=guard.refused,
            sessions_started=host.started,
        )
        return Response(text, media_type=CONTENT_TYPE, headers={"cache-control": "no-store"})

    async def page(request: Request) -> Response:
        return _page(policy, request)

    async def session(request: Request) -> Response:
        auth = request.scope.get("state", {}).get("auth", "")
        if policy.require_token and not auth:
            raise _HTTPError(401, "token required")
        response = _json(SessionReply(csrf=policy.csrf))
        _set_cookie(response, policy)
        return response

    def handle(fn):
        async def wrapped(request: Request) -> Response:
            try:
                return await fn(request)
            except _HTTPError as exc:
                return _error(exc.status, exc.error, exc.detail)

        return wrapped

    routes = [
        Route("/", handle(page), methods=["GET"]),
        Route("/panel/session", handle(session), methods=["GET"]),
        Route("/learning/{verb:str}", handle(control), methods=["POST"]),
        Route("/learning/status", handle(status), methods=["GET"]),
        Route("/learning/logs", handle(logs), methods=["GET"]),
        Route("/learning/stream", handle(stream), methods=["GET"]),
        Route("/ask", handle(ask), methods=["POST"]),
        Route("/focus", handle(focus), methods=["POST"]),
        Route("/recall", handle(recall), methods=["GET"]),
        Route("/ingest", handle(ingest), methods=["POST"]),
        Route("/health", handle(health), methods=["GET"]),
        Route("/metrics", handle(metrics), methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state["feed"].attach(asyncio.get_running_loop())
        try:
            yield
        finally:
            state["feed"].close()

    async def not_found(request: Request, exc) -> Response:
        return _error(404, "not found", request.url.path)

    async def not_allowed(request: Request, exc) -> Response:
        return _error(405, "method not allowed", request.method)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: not_allowed},
    )
    guard = Guard(app, policy)
    guard.feed = state["feed"]
    return guard
