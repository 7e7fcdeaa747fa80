"""The HTTP API and the panel: Starlette routes over a :class:`LearnerHost`.

Routes::

    GET  /                    the panel with a session; else the login page (401)
    GET  /?token=CODE         exchange a one-time login code (or the token) for a session
    POST /login               the login form (token=…): the same exchange
    GET  /panel/session       this session's CSRF token (a new session with the token)
    POST /panel/logout        end this session
    GET  /static/…            the panel's files (package data, no network, no build step)
    POST /learning/start|stop|pause|resume
    GET  /learning/status     session stats, budget against its caps, gate counters
    GET  /learning/logs?count=N   the chaperone's interaction log
    GET  /learning/stream     SSE: every audit-log event, id = its sequence
    POST /ask  GET /questions (the user's questions and how each ended)
    POST /focus  GET /focus  POST /focus/close|done  (focus goals and their criteria)
    GET /recall?q=…&k=…&explain=1&spread=H  POST /ingest?name=FILE
    GET  /traces/{id}/links   a trace's neighbours in the link graph (reflection writes it)
    GET  /health  GET /metrics

Every query string and body is decoded by one typed layer (the msgspec structs
of :mod:`~sentient_core.server.schemas`): a bad value is a 400 naming it,
never a 500. A resource that runs out (disk, map, file descriptors) is a 503
with one log line, and ``/health`` says ``degraded``. Blocking work (the
learner, LMDB) runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import secrets
from collections.abc import Callable
from importlib import resources
from urllib.parse import parse_qs

import msgspec
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sentient_core import __version__
from sentient_core.errors import exhaustion
from sentient_core.server.host import LearnerHost, UploadRefused
from sentient_core.server.metrics import CONTENT_TYPE, render_metrics
from sentient_core.server.schemas import (
    AskRequest,
    CommandReply,
    EmptyQuery,
    FocusEndRequest,
    FocusRequest,
    HealthReply,
    IngestQuery,
    LogsQuery,
    LogsReply,
    PageQuery,
    RecallRequest,
    SessionReply,
    StatusReply,
    StreamQuery,
    to_json,
)
from sentient_core.server.security import Credentials, Guard, SecurityPolicy
from sentient_core.server.sessions import Session
from sentient_core.server.stream import EventFeed, last_seq

__all__ = ["STATIC", "create_app", "loop_error_handler"]

STATIC = resources.files("sentient_core.server") / "static"
LOG = logging.getLogger(__name__)
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


def _error(status: int, error: str, detail: str = "", headers: dict | None = None) -> Response:
    return JSONResponse(
        {"error": error, "detail": detail},
        status_code=status,
        headers={"cache-control": "no-store", **(headers or {})},
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


def _query(request: Request, cls, extra: dict[str, str] | None = None):
    """The query string as ``cls``: unknown, repeated or out-of-bound values are a 400."""
    items = request.query_params.multi_items()
    params = dict(items)
    if len(params) != len(items):
        twice = sorted({k for k, _ in items if sum(1 for j, _ in items if j == k) > 1})
        raise _HTTPError(400, "invalid query", f"given more than once: {', '.join(twice)}")
    params.update(extra or {})
    try:
        return msgspec.convert(params, cls, strict=False)
    except msgspec.ValidationError as exc:
        raise _HTTPError(400, "invalid query", str(exc)) from None


def _credentials(request: Request) -> Credentials:
    return request.scope.get("state", {}).get("credentials") or Credentials()


def _login_page(message: str = "") -> Response:
    text = (STATIC / "login.html").read_text()
    text = text.replace("{{message}}", html.escape(message))
    return HTMLResponse(text, status_code=401, headers={"cache-control": "no-store"})


def _set_cookie(response: Response, policy: SecurityPolicy, session: Session) -> None:
    response.set_cookie(
        policy.cookie,
        session.id,
        max_age=int(policy.session_lifetime_s),
        httponly=True,
        samesite="strict",
        path="/",
        secure=False,
    )


class _Stream(EventSourceResponse):
    """An SSE response that gives its stream slot back however it ends."""

    def __init__(self, feed: EventFeed, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._feed = feed

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._feed.release()


def loop_error_handler(health) -> Callable[[asyncio.AbstractEventLoop, dict], None]:
    """The event loop's exception handler: what asyncio reports with a traceback that is
    a server's ordinary weather says one line (``health``: the server's health board)."""

    def loop_errors(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        # asyncio reports an accept() that ran out of descriptors with a traceback;
        # it pauses accepting and retries by itself: say it in one line instead.
        exc = context.get("exception")
        if isinstance(exc, ValueError) and "_start_serving" in repr(context.get("handle")):
            # Such a retry that fires after the listening socket was closed (the server
            # stopping while it waited out EMFILE) has nothing left to do.
            LOG.debug("accept retry after the listening socket closed: %s", exc)
            return
        reason = exhaustion(exc) if exc is not None else None
        if reason is None:
            loop.default_exception_handler(context)
            return
        health.report("accept", reason, transient=True)

    return loop_errors


def create_app(host: LearnerHost, policy: SecurityPolicy, feed: EventFeed | None = None) -> Guard:
    """The ASGI application: the routes behind the :class:`Guard`.

    ``feed`` (default: a new one over the host's bus, capped at
    ``server.max_stream_clients``) serves the live stream; it is attached to
    the event loop at start-up.
    """
    cap = host.effective.settings.server.max_stream_clients
    state: dict = {"feed": feed or EventFeed(host.bus, host.core.store, cap)}

    def panel(session: Session) -> Response:
        text = (STATIC / "index.html").read_text().replace("{{csrf}}", session.csrf)
        return HTMLResponse(
            text.replace("{{version}}", __version__), headers={"cache-control": "no-store"}
        )

    def exchange(secret: str) -> Response:
        """A valid token or unused login code becomes a session and a redirect to /."""
        if not (policy.token_matches(secret) or guard.codes.redeem(secret)):
            guard.refused["401"] = guard.refused.get("401", 0) + 1
            return _login_page(
                "That login link was used already or has expired, or the token is wrong."
                " Ask the server for a new link (sentient learner login) or enter the token."
            )
        response = RedirectResponse("/", status_code=303, headers={"cache-control": "no-store"})
        _set_cookie(response, policy, guard.sessions.create())
        return response

    async def page(request: Request) -> Response:
        q = _query(request, PageQuery)
        if q.token:
            return exchange(q.token)
        creds = _credentials(request)
        if creds.session is not None:
            return panel(creds.session)
        if creds.kind == "token":
            made = guard.sessions.create()
            response = panel(made)
            _set_cookie(response, policy, made)
            return response
        return _login_page()

    async def login(request: Request) -> Response:
        _query(request, EmptyQuery)
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise _HTTPError(415, "expected a form (application/x-www-form-urlencoded)")
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
        return exchange((form.get("token") or [""])[0].strip())

    async def session(request: Request) -> Response:
        _query(request, EmptyQuery)
        creds = _credentials(request)
        if creds.session is not None:
            return _json(SessionReply(csrf=creds.session.csrf))
        made = guard.sessions.create()
        response = _json(SessionReply(csrf=made.csrf))
        _set_cookie(response, policy, made)
        return response

    async def logout(request: Request) -> Response:
        _query(request, EmptyQuery)
        creds = _credentials(request)
        if creds.session is not None:
            guard.sessions.revoke(creds.session.id)
        response = _json({"ok": True})
        response.delete_cookie(policy.cookie, path="/", httponly=True, samesite="strict")
        return response

    async def control(request: Request) -> Response:
        _query(request, EmptyQuery)
        verb = request.path_params["verb"]
        if verb not in VERBS:
            raise _HTTPError(404, "not found", request.url.path)
        done = await run_in_threadpool(getattr(host, verb))
        return _json(CommandReply(ok=done.ok, state=done.state, message=done.message))

    async def status(request: Request) -> Response:
        _query(request, EmptyQuery)
        st = await run_in_threadpool(host.status)
        reply = StatusReply(
            **msgspec.structs.asdict(st),
            last_seq=await run_in_threadpool(last_seq, host.core.store),
            stream_clients=state["feed"].clients,
            degraded=host.degraded(),
            unsafe=tuple(host.unsafe),
            version=__version__,
        )
        return _json(reply)

    async def logs(request: Request) -> Response:
        q = _query(request, LogsQuery)
        return _json(LogsReply(entries=await run_in_threadpool(host.logs, q.count)))

    async def stream(request: Request) -> Response:
        header = request.headers.get("last-event-id")
        q = _query(request, StreamQuery, {"after": header} if header else None)
        feed = state["feed"]
        if not feed.admit():
            raise _HTTPError(
                503,
                "too many live-stream clients",
                f"at most {feed.max_clients} (server.max_stream_clients); retry later",
            )
        return _Stream(feed, feed.messages(q.after), ping=15, headers={"cache-control": "no-store"})

    async def ask(request: Request) -> Response:
        _query(request, EmptyQuery)
        body = await _decode(request, AskRequest)
        return _json(await run_in_threadpool(host.ask, body.question))

    async def focus(request: Request) -> Response:
        _query(request, EmptyQuery)
        body = await _decode(request, FocusRequest)
        try:
            return _json(
                await run_in_threadpool(host.focus, body.topic, body.questions, body.condition)
            )
        except ValueError as exc:
            raise _HTTPError(400, "focus refused", str(exc)) from None

    async def focus_list(request: Request) -> Response:
        _query(request, EmptyQuery)
        return _json(await run_in_threadpool(host.focus_list))

    async def focus_end(request: Request) -> Response:
        _query(request, EmptyQuery)
        verb = request.path_params["verb"]
        if verb not in ("close", "done"):
            raise _HTTPError(404, "not found", request.url.path)
        body = await _decode(request, FocusEndRequest)
        try:
            return _json(await run_in_threadpool(host.focus_end, verb, body.goal, body.reason))
        except KeyError as exc:
            raise _HTTPError(404, "no such focus goal", str(exc)) from None

    async def questions(request: Request) -> Response:
        _query(request, EmptyQuery)
        return _json(await run_in_threadpool(host.questions))

    async def recall(request: Request) -> Response:
        q = _query(request, RecallRequest)
        reply = await run_in_threadpool(
            host.recall, q.q, q.k, q.explain, q.threshold, q.rank, q.spread
        )
        # A recall that found nothing relevant is recorded (a step after the recall's own).
        return _json(await run_in_threadpool(host.record_miss, reply))

    async def trace_links(request: Request) -> Response:
        _query(request, EmptyQuery)
        trace_id = request.path_params["trace_id"]
        reply = await run_in_threadpool(host.links, trace_id)
        if reply is None:
            raise _HTTPError(404, "no such trace", str(trace_id))
        return _json(reply)

    async def ingest(request: Request) -> Response:
        q = _query(request, IngestQuery)
        try:
            target = host.upload_path(q.name)
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
        if reply.stopped_by:  # the store could not be written: what was committed stays
            host.health.report("ingest", reply.stopped_by)
            return _json(reply, 503)
        return _json(reply, 200 if reply.files or not reply.skipped else 422)

    async def health(request: Request) -> Response:
        _query(request, EmptyQuery)
        reasons = host.degraded()
        return _json(
            HealthReply(
                ok=not reasons,
                version=__version__,
                status="degraded" if reasons else "ok",
                reasons=reasons,
            )
        )

    async def metrics(request: Request) -> Response:
        _query(request, EmptyQuery)
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
            panel_sessions=len(guard.sessions),
            disconnects=guard.disconnects,
            degraded=len(host.degraded()),
        )
        return Response(text, media_type=CONTENT_TYPE, headers={"cache-control": "no-store"})

    def handle(fn):
        where = fn.__name__

        async def wrapped(request: Request) -> Response:
            try:
                response = await fn(request)
            except _HTTPError as exc:
                return _error(exc.status, exc.error, exc.detail)
            except ClientDisconnect:
                raise  # the Guard notes it quietly
            except Exception as exc:
                reason = exhaustion(exc)
                if reason is None:
                    raise
                host.health.report(where, reason)
                return _error(
                    503, "the server ran out of a resource", reason, {"retry-after": "60"}
                )
            if response.status_code < 500:
                host.health.clear(where)
            return response

        return wrapped

    routes = [
        Route("/", handle(page), methods=["GET"]),
        Route("/login", handle(login), methods=["POST"]),
        Route("/panel/session", handle(session), methods=["GET"]),
        Route("/panel/logout", handle(logout), methods=["POST"]),
        Route("/learning/{verb:str}", handle(control), methods=["POST"]),
        Route("/learning/status", handle(status), methods=["GET"]),
        Route("/learning/logs", handle(logs), methods=["GET"]),
        Route("/learning/stream", handle(stream), methods=["GET"]),
        Route("/ask", handle(ask), methods=["POST"]),
        Route("/focus", handle(focus), methods=["POST"]),
        Route("/focus", handle(focus_list), methods=["GET"]),
        Route("/focus/{verb:str}", handle(focus_end), methods=["POST"]),
        Route("/questions", handle(questions), methods=["GET"]),
        Route("/recall", handle(recall), methods=["GET"]),
        Route("/traces/{trace_id:int}/links", handle(trace_links), methods=["GET"]),
        Route("/ingest", handle(ingest), methods=["POST"]),
        Route("/health", handle(health), methods=["GET"]),
        Route("/metrics", handle(metrics), methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]

    loop_errors = loop_error_handler(host.health)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(loop_errors)
        state["feed"].attach(loop)
        try:
            yield
        finally:
            state["feed"].close()
            guard.sessions.revoke_all()

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
