"""A real model for the llm lane: llama-cpp-python's server, and a proxy that counts its usage.

:class:`LlamaServer` starts ``python -m llama_cpp.server`` (from the cached venv
that ``scripts/llm-lane-setup.sh`` builds) on a free loopback port with the
SmolLM2-135M model, and waits until ``/v1/models`` answers. It can be killed
mid-answer and started again.

:class:`UsageProxy` sits between the client and the server on another loopback
port, forwards every request unchanged and adds up the ``usage`` blocks of the
server's replies: an account of the tokens that does not come from our client.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO

import httpx

__all__ = ["LlamaServer", "UsageProxy", "lane_paths"]


def lane_paths() -> tuple[str, str]:
    """(server python, model path) from the environment ``make test-llm`` sets."""
    py = os.environ.get("SENTIENT_LLAMA_PYTHON", "")
    model = os.environ.get("SENTIENT_LLAMA_MODEL", "")
    if not (py and Path(py).exists() and model and Path(model).exists()):
        raise RuntimeError(
            "the llm lane needs SENTIENT_LLAMA_PYTHON and SENTIENT_LLAMA_MODEL"
            " (run it with `make test-llm`, which builds and fetches them)"
        )
    return py, model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``llama_cpp.server`` on loopback (a context manager)."""

    def __init__(self, *, n_ctx: int = 2048, threads: int = 2, log: Path | None = None) -> None:
        self.python, self.model = lane_paths()
        self.n_ctx = n_ctx
        self.threads = threads
        self.log = log
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._out: BinaryIO | None = None
        self.start_s = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 120.0) -> LlamaServer:
        if self.log is not None and self._out is None:
            self._out = open(self.log, "ab")  # noqa: SIM115  (closed by stop)
        out = self._out if self._out is not None else subprocess.DEVNULL
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [
                self.python,
                "-m",
                "llama_cpp.server",
                "--model",
                self.model,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                str(self.n_ctx),
                "--n_threads",
                str(self.threads),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    self.start_s = time.monotonic() - t0
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama_cpp.server not up within {timeout_s} s")

    def kill(self) -> None:
        """SIGKILL (a crash, not a shutdown)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner.lock:
            owner.arrived += 1
        owner.in_flight.set()
        try:
            r = owner.http.post(
                owner.upstream + self.path,
                content=body,
                headers={"Content-Type": "application/json"},
            )
        except httpx.HTTPError:
            self.close_connection = True
            return  # the upstream died: the client sees the connection close
        data = r.content
        if r.status_code == 200:
            try:
                usage = json.loads(data).get("usage") or {}
            except ValueError:
                usage = {}
            with owner.lock:
                owner.replies += 1
                owner.usage_total += int(usage.get("total_tokens") or 0)
        with owner.lock:
            owner.requests += 1
        try:
            self.send_response(r.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first
        self.close_connection = True


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: UsageProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class UsageProxy:
    """Forward to ``upstream`` (``http://host:port``) and count the usage it reports."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.lock = threading.Lock()
        self.arrived = 0  # requests received (counted before forwarding)
        self.in_flight = threading.Event()  # set when a request arrives
        self.requests = 0  # requests the upstream answered
        self.replies = 0
        self.usage_total = 0
        self.http = httpx.Client(timeout=httpx.Timeout(600.0))
        self._server = _ProxyServer(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> UsageProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self.http.close()
