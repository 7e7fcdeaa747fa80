"""A loopback OpenAI-compatible chat-completions server for tests.

``POST /v1/chat/completions`` answers from canned replies (the first canned key,
in insertion order, found case-insensitively in the last user message; else
the default "I don't know") with deterministic ``usage`` counts (whitespace
words). Every request is recorded (path, headers, JSON body).

Fault modes are queued per test with :meth:`OpenAIServer.fault`; each request
consumes one queued fault (``times`` requests per call), later requests are
served normally::

    with OpenAIServer({"with statement": "It manages a context."}) as srv:
        srv.fault("500", times=2)          # two 500s, then OK
        srv.fault("429", retry_after=0.01)
        ...

Modes: ``500`` (any ``status``), ``429`` (``Retry-After``), ``timeout`` (sleeps
``hang_s``, released early when the server stops), ``garbage`` (not JSON),
``no_choices``, ``empty_content``, ``no_usage`` (a good answer without
``usage``), ``drip`` (a chunked body, one byte every ``drip_s``), ``oversize``
(a body of ``size`` bytes; ``chunked=True`` for no Content-Length).
:func:`closed_port_url` gives a base URL where nothing listens ("down").

Structured output: a request with ``response_format`` whose ``type`` is not in
``formats`` gets HTTP ``format_refusal`` (400) (as a server without that feature answers); one that
is accepted gets ``structured`` as its answer when set (constrained generation),
else the usual answer.

Only 127.0.0.1 is ever bound.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["DEFAULT_ANSWER", "Fault", "OpenAIServer", "RecordedRequest", "closed_port_url"]

DEFAULT_ANSWER = "I don't know"
FAULT_MODES = frozenset(
    {
        "500",
        "429",
        "timeout",
        "garbage",
        "no_choices",
        "empty_content",
        "no_usage",
        "drip",
        "oversize",
    }
)


@dataclass(frozen=True)
class Fault:
    """One queued misbehaviour (see the module docstring for the modes)."""

    mode: str
    status: int = 500
    retry_after: float | None = None
    hang_s: float = 5.0
    drip_s: float = 0.05
    drip_bytes: int = 200
    size: int = 4 << 20
    chunked: bool = False


@dataclass
class RecordedRequest:
    """What the server received."""

    path: str
    headers: dict[str, str]
    body: dict = field(default_factory=dict)


def closed_port_url() -> str:
    """A ``http://127.0.0.1:PORT/v1`` base URL where nothing listens (server down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _words(text: str) -> int:
    return len(text.split())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        owner._record(RecordedRequest(self.path, dict(self.headers.items()), body))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, b'{"error": "not found"}')
            return
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") not in owner.formats:
            msg = b'{"error": {"message": "response_format type not supported"}}'
            self._send(owner.format_refusal, msg)
            return
        fault = owner._next_fault()
        try:
            if fault is None or fault.mode == "no_usage":
                self._answer(body, usage=fault is None)
            else:
                self._misbehave(fault, body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up (deadline, size cap): expected in fault tests

    def do_GET(self) -> None:
        self._send(404, b'{"error": "not found"}')

    def _send(self, status: int, data: bytes, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _completion(self, body: dict, *, usage: bool, content: str | None = None) -> bytes:
        owner = self.server.owner
        messages = body.get("messages") or []
        prompt = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        answer = owner.answer_for(messages) if content is None else content
        fmt = body.get("response_format")
        if content is None and owner.structured is not None and fmt:
            answer = owner.structured_for(fmt)
        out: dict = {
            "id": f"chatcmpl-{owner.served}",
            "object": "chat.completion",
            "model": owner.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
        }
        if usage:
            p, c = _words(prompt), _words(answer)
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
            with owner._lock:
                owner.usage_total += p + c
        return json.dumps(out).encode()

    def _answer(self, body: dict, *, usage: bool) -> None:
        self._send(200, self._completion(body, usage=usage))
        self.server.owner._served()

    def _misbehave(self, fault: Fault, body: dict) -> None:
        stop = self.server.owner._stop
        mode = fault.mode
        if mode in ("500", "429"):
            status = 429 if mode == "429" else fault.status
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            self._send(status, b'{"error": {"message": "try again later"}}', extra)
        elif mode == "timeout":
            stop.wait(fault.hang_s)  # bounded, and released when the server stops
            self._answer(body, usage=True)
        elif mode == "garbage":
            self._send(200, b"<html>this is not json{{{")
        elif mode == "no_choices":
            self._send(200, b'{"id": "x", "object": "chat.completion", "model": "m"}')
        elif mode == "empty_content":
            self._send(200, self._completion(body, usage=True, content=""))
        elif mode == "drip":
            self._chunked_headers()
            data = self._completion(body, usage=True).ljust(fault.drip_bytes)
            for i in range(len(data)):
                if stop.wait(fault.drip_s):
                    return
                self._chunk(data[i : i + 1])
            self._chunk(b"")
        elif mode == "oversize":
            filler = b" " * 65536
            if fault.chunked:
                self._chunked_headers()
                for _ in range(fault.size // len(filler) + 1):
                    if stop.is_set():
                        return
                    self._chunk(filler)
                self._chunk(b"")
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(fault.size))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                sent = 0
                while sent < fault.size and not stop.is_set():
                    n = min(len(filler), fault.size - sent)
                    self.wfile.write(filler[:n])
                    sent += n

    def _chunked_headers(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True  # server_close() joins handler threads: no thread outlives a test

    def __init__(self, owner: OpenAIServer):
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request, client_address) -> None:
        import sys

        self.owner.errors.append(repr(sys.exc_info()[1]))


class OpenAIServer:
    """Loopback chat-completions server (a context manager).

    Parameters
    ----------
    canned : mapping of str to str, optional
        Substring of the last user message (case-insensitive) → answer.
    default : str
        Answer when nothing matches.
    model : str
        Model name reported in responses.
    formats : iterable of str
        ``response_format`` types accepted (others get HTTP 400).
    structured : str or mapping of str to str, optional
        The answer to a request whose ``response_format`` was accepted; a mapping
        answers by the JSON schema's ``name`` (``"*"``: any other, or none given).
    format_refusal : int
        The status of a refused ``response_format`` (llama-cpp-python sends 500).
    """

    def __init__(
        self,
        canned: Mapping[str, str] | None = None,
        *,
        default: str = DEFAULT_ANSWER,
        model: str = "test-model",
        formats: Iterable[str] = ("json_schema", "json_object"),
        structured: str | Mapping[str, str] | None = None,
        format_refusal: int = 400,
    ):
        self.formats = frozenset(formats)
        self.format_refusal = format_refusal
        self.structured = structured
        self.canned = dict(canned or {})
        self.default = default
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self.served = 0
        self.usage_total = 0  # total_tokens of every usage block sent
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> OpenAIServer:
        """Bind 127.0.0.1 on a free port and serve in a thread."""
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hanging handlers, join every thread, close the socket."""
        if self._server is None:
            return
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join()
        self._server = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -------------------------------------------------------------- behaviour

    def structured_for(self, response_format: object) -> str:
        """The structured answer for a request's ``response_format``."""
        if isinstance(self.structured, str) or self.structured is None:
            return self.structured or ""
        name = ""
        if isinstance(response_format, dict):
            name = str((response_format.get("json_schema") or {}).get("name", ""))
        return self.structured.get(name, self.structured.get("*", ""))

    def fault(self, mode: str, times: int = 1, **options: object) -> None:
        """Queue ``times`` requests that misbehave in ``mode`` (see module docs)."""
        if mode not in FAULT_MODES:
            raise ValueError(f"unknown fault mode {mode!r}; known: {sorted(FAULT_MODES)}")
        f = Fault(mode, **options)  # type: ignore[arg-type]  # options are Fault's fields
        with self._lock:
            self._faults.extend([f] * times)

    @property
    def pending_faults(self) -> int:
        """Queued faults not yet consumed by a request."""
        with self._lock:
            return len(self._faults)

    def answer_for(self, messages: list) -> str:
        """The canned answer for a conversation (by its last user message)."""
        last = ""
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "user":
                last = str(m.get("content", ""))
        low = last.lower()
        for key, answer in self.canned.items():
            if key.lower() in low:
                return answer
        return self.default

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    def _served(self) -> None:
        with self._lock:
            self.served += 1
