"""Run the server: the core, the learner host, the control socket, uvicorn on a bound socket.

:class:`Server` opens everything in this process (LMDB is never carried
across a fork: uvicorn runs here with one worker, no reloader). The socket is
bound before uvicorn starts, so ``port 0`` works and the printed URL is exact.
:meth:`Server.run` serves in the calling (main) thread until SIGINT/SIGTERM;
:meth:`Server.start` serves from a thread (tests, benchmarks) until :meth:`stop`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import uvicorn

from sentient_core.config import Effective
from sentient_core.control import ControlReply, ControlServer, check_free, handler_for
from sentient_core.core import Core
from sentient_core.errors import SentientError
from sentient_core.server.app import create_app
from sentient_core.server.host import LearnerHost
from sentient_core.server.security import plan
from sentient_core.server.stream import EventFeed

__all__ = ["Server", "ServerError"]


class ServerError(SentientError):
    """The server cannot start (address in use, a bad token source)."""


class _Uvicorn(uvicorn.Server):
    """uvicorn that ends the live streams first when asked to exit, and returns
    (instead of re-raising SIGINT/SIGTERM) so the learner and the store close cleanly."""

    feed: EventFeed | None = None
    signal: int | None = None

    def handle_exit(self, sig, frame) -> None:
        if self.feed is not None:
            self.feed.shutdown()
        self.signal = sig
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: do not wait for connections
        else:
            self.should_exit = True


RECEIVE_WINDOW = 128 * 1024
"""Each connection's receive buffer (set on the listening socket, so accepted ones
inherit it; Linux doubles it). A fixed size bounds what a client can push past a
refused body while the server lingers over its 413
(:data:`~sentient_core.server.security.LINGER_SECONDS`): Linux's autotuning grew it
to megabytes. 2 × 128 KiB still streams an upload at ~5 MB/s over a 50 ms round
trip."""


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_WINDOW)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


class Server:
    """Everything ``cli.py serve`` runs, on one data directory.

    Parameters
    ----------
    data_dir : path
    effective : Effective
        Settings (the ``server`` section says where to listen).
    env : mapping
        Token and kill switch.
    log_level : str
        uvicorn's (``warning`` keeps the terminal for the learner's notices).

    Raises
    ------
    LearnerBusyError
        Another process runs a learner on ``data_dir``.
    ServerError
        The address cannot be bound, or the token source is unusable.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        effective: Effective,
        *,
        env: Mapping[str, str] = os.environ,
        log_level: str = "warning",
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        server = effective.settings.server
        self._target: list = []
        check_free(self.data_dir)  # before the store is opened: a second learner writes nothing
        self.control: ControlServer | None = None
        self.core: Core | None = None
        self.host: LearnerHost | None = None
        self.sock: socket.socket | None = None
        try:
            # The store first: it is created only in an empty directory.
            self.core = Core(self.data_dir)
            self.control = ControlServer(self.data_dir, self._handle, mode="serve")
            try:
                policy, self.notice = plan(server, self.data_dir, env)
            except (OSError, ValueError) as exc:
                raise ServerError(str(exc)) from None
            self.host = LearnerHost(self.core, effective, env=env)
            self.sock = _bind(server.host, server.port)
            self.port = self.sock.getsockname()[1]
            self.policy = policy.with_port(self.port)
            self.app = create_app(self.host, self.policy)
            config = uvicorn.Config(
                self.app,
                log_level=log_level,
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=3,
                ws="none",
            )
            self.server = _Uvicorn(config)
            self.server.feed = self.app.feed
            shown = f"[{server.host}]" if ":" in server.host else server.host
            self.url = f"http://{shown}:{self.port}/"
            self._target.append(handler_for(self.host))
        except BaseException:
            self.close()
            raise
        self._thread: threading.Thread | None = None

    def _handle(self, op: str) -> ControlReply:
        if not self._target:
            return ControlReply(ok=op == "ping", state="starting", message="starting up")
        if op == "login":
            assert self.host is not None  # set before _target
            return ControlReply(ok=True, state=self.host.status().state, message=self.login_url())
        return self._target[0](op)

    def login_url(self) -> str:
        """A panel URL carrying a new one-time login code (single use, one hour)."""
        return self.app.login_url(self.url)

    def run(self) -> None:
        """Serve in this thread until SIGINT/SIGTERM, then close everything."""
        try:
            assert self.sock is not None  # bound by __init__, None only after close()
            self.server.run(sockets=[self.sock])
        finally:
            self.close()

    def start(self, timeout: float = 30.0) -> Server:
        """Serve from a background thread; returns once it accepts connections."""
        assert self.sock is not None  # bound by __init__, None only after close()
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServerError("the server thread did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """End the streams, stop uvicorn's thread and close everything."""
        if self._thread is not None:
            if self.app.feed is not None:
                self.app.feed.shutdown()
            self.server.should_exit = True
            self._thread.join(15.0)
            self._thread = None
        self.close()

    def close(self) -> None:
        """Stop the learner, close the core, release the data directory (idempotent)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.host is not None:
            self.host.close()
            self.host = None
        if self.core is not None:
            self.core.close()
            self.core = None
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
