"""The control channel: a Unix socket in the data directory, served by the learner's process.

Whichever process runs the learner (``serve`` or ``learn``) holds an exclusive
``flock`` on ``DATA_DIR/control.lock`` for its lifetime (so at most one learner
runs per data directory, and the lock vanishes with the process, however it
ends) and serves ``DATA_DIR/control.sock`` (mode 0600; a peer of another user
is refused by its credentials). One request per connection: a JSON
:class:`ControlRequest` line in, a JSON :class:`ControlReply` line out.

A socket file nobody serves (its process was killed) is stale: a client finds
the lock free, removes the file and says no learner is running.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import msgspec

from sentient_core.errors import SentientError

__all__ = [
    "LOCK_NAME",
    "SOCKET_NAME",
    "ControlError",
    "ControlReply",
    "ControlRequest",
    "ControlServer",
    "LearnerBusyError",
    "NoLearnerError",
    "check_free",
    "request",
]

SOCKET_NAME = "control.sock"
LOCK_NAME = "control.lock"
MAX_MESSAGE = 1 << 20
"""Largest reply a client reads (a request is at most 4 KiB)."""

Op = Literal["status", "pause", "resume", "stop", "ping", "login"]


class ControlError(SentientError):
    """The control channel failed (no answer, a malformed reply)."""


class NoLearnerError(ControlError):
    """No learner runs on the data directory (``stale`` if a dead one left its socket)."""

    def __init__(self, message: str, *, stale: bool = False) -> None:
        super().__init__(message)
        self.stale = stale


class LearnerBusyError(ControlError):
    """Another process already runs a learner on the data directory."""


class ControlRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One command for the learner."""

    op: Op


class ControlReply(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The answer: ``ok``, the learner's ``state`` after the command, a ``message``
    and, for ``status``, the whole :class:`~sentient_core.control.status.LearnerStatus`."""

    ok: bool
    state: str = ""
    message: str = ""
    status: dict | None = None


Handler = Callable[[str], ControlReply]

_REQ = msgspec.json.Decoder(ControlRequest)
_REPLY = msgspec.json.Decoder(ControlReply)
_ENC = msgspec.json.Encoder()


def _sock_path(directory: Path, dir_fd: int | None) -> str:
    """A path to ``directory/control.sock`` short enough for ``sun_path`` (108 bytes)."""
    path = str(directory / SOCKET_NAME)
    if len(path.encode()) < 100 or dir_fd is None:
        return path
    return f"/proc/self/fd/{dir_fd}/{SOCKET_NAME}"


def _lock_owner(lock_path: Path) -> str:
    with contextlib.suppress(OSError):
        return lock_path.read_text().strip()
    return ""


def _lock_is_free(lock_path: Path) -> bool:
    """Whether no process holds the learner lock (tested without keeping it)."""
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def check_free(data_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`LearnerBusyError` if a live process runs a learner on ``data_dir``.

    A cheap early check (it creates nothing); :class:`ControlServer` takes the lock.
    """
    lock_path = Path(data_dir) / LOCK_NAME
    if not _lock_is_free(lock_path):
        owner = _lock_owner(lock_path) or "another process"
        raise LearnerBusyError(
            f"a learner already runs on {data_dir} ({owner}); control it with"
            " `sentient learner status|pause|resume|stop`"
        )


class ControlServer:
    """Serve the control socket of ``data_dir`` for one learner process.

    Parameters
    ----------
    data_dir : path
    handler : callable
        ``handler(op)`` → :class:`ControlReply`; runs in the channel's thread.
    mode : str
        Written into the lock file with the pid (``serve`` or ``learn``).

    Raises
    ------
    LearnerBusyError
        Another live process holds the data directory's learner lock.
    """

    def __init__(self, data_dir: str | os.PathLike[str], handler: Handler, *, mode: str) -> None:
        self.directory = Path(data_dir)
        self.handler = handler
        self._lock_path = self.directory / LOCK_NAME
        self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            owner = _lock_owner(self._lock_path) or "another process"
            raise LearnerBusyError(
                f"a learner already runs on {self.directory} ({owner}); control it with"
                " `sentient learner status|pause|resume|stop`"
            ) from None
        os.ftruncate(self._lock_fd, 0)
        os.write(self._lock_fd, f"pid {os.getpid()}, {mode}\n".encode())
        self._dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.path = self.directory / SOCKET_NAME
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._bind()
        except BaseException:
            self._sock.close()
            self._release()
            raise
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="sentient-control", daemon=True)
        self._thread.start()

    def _bind(self) -> None:
        # We hold the lock, so a socket file here is a dead process's: replace it.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SOCKET_NAME, dir_fd=self._dir_fd)
        old = os.umask(0o177)  # born 0600: no moment at which others could connect
        try:
            self._sock.bind(_sock_path(self.directory, self._dir_fd))
        finally:
            os.umask(old)
        os.chmod(SOCKET_NAME, 0o600, dir_fd=self._dir_fd)
        self._inode = os.stat(SOCKET_NAME, dir_fd=self._dir_fd).st_ino
        self._sock.listen(8)
        self._sock.settimeout(0.2)

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                continue
            with conn:
                conn.settimeout(5.0)
                with contextlib.suppress(OSError):
                    self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            conn.sendall(_ENC.encode(ControlReply(ok=False, message="not your learner")) + b"\n")
            return
        data = b""
        while b"\n" not in data and len(data) <= 4096:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        try:
            op = _REQ.decode(data.split(b"\n", 1)[0]).op
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            reply = ControlReply(ok=False, message=f"bad request: {exc}")
        else:
            try:
                reply = self.handler(op)
            except Exception as exc:  # the channel must answer, whatever the learner did
                reply = ControlReply(ok=False, message=f"{type(exc).__name__}: {exc}")
        conn.sendall(_ENC.encode(reply) + b"\n")

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)

    def close(self) -> None:
        """Stop serving, remove the socket file (if still ours) and release the lock."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join(5.0)
        self._sock.close()
        with contextlib.suppress(OSError):
            if os.stat(SOCKET_NAME, dir_fd=self._dir_fd).st_ino == self._inode:
                os.unlink(SOCKET_NAME, dir_fd=self._dir_fd)
        with contextlib.suppress(OSError):
            os.close(self._dir_fd)
        self._release()

    def __enter__(self) -> ControlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request(data_dir: str | os.PathLike[str], op: Op, *, timeout: float = 30.0) -> ControlReply:
    """Send ``op`` to the learner running on ``data_dir``.

    Raises
    ------
    NoLearnerError
        Nobody serves the socket (a stale one is removed, and ``stale`` set).
    ControlError
        The learner did not answer in ``timeout`` seconds, or answered garbage.
    """
    directory = Path(data_dir)
    lock_path = directory / LOCK_NAME
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise NoLearnerError(f"no learner is running on {directory} (no such directory)") from None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            try:
                s.connect(_sock_path(directory, dir_fd))
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise _no_learner(directory, lock_path, dir_fd, exc) from None
            s.sendall(_ENC.encode(ControlRequest(op)) + b"\n")
            data = b""
            while not data.endswith(b"\n") and len(data) < MAX_MESSAGE:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except TimeoutError:
        raise ControlError(f"the learner on {directory} did not answer in {timeout:g} s") from None
    finally:
        os.close(dir_fd)
    try:
        return _REPLY.decode(data.strip())
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ControlError(f"malformed reply from the learner on {directory}: {exc}") from None


def _no_learner(directory: Path, lock_path: Path, dir_fd: int, exc: OSError) -> NoLearnerError:
    if exc.errno == errno.ENOENT and _lock_is_free(lock_path):
        return NoLearnerError(f"no learner is running on {directory}")
    if _lock_is_free(lock_path):
        with contextlib.suppress(OSError):
            os.unlink(SOCKET_NAME, dir_fd=dir_fd)
        return NoLearnerError(
            f"no learner is running on {directory} (removed a stale {SOCKET_NAME}"
            " left by a process that ended)",
            stale=True,
        )
    owner = _lock_owner(lock_path) or "another process"
    return NoLearnerError(
        f"a learner holds {directory} ({owner}) but does not answer on {SOCKET_NAME}"
    )


def describe(reply: ControlReply) -> str:
    """One line for a reply (what ``learner pause`` prints)."""
    return reply.message or json.dumps({"ok": reply.ok, "state": reply.state})
