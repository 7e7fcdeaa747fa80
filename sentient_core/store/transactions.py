"""Transactions of a :class:`~sentient_core.store.env.Store` and growth of its LMDB map.

:class:`Transactions` is the part of :class:`~sentient_core.store.env.Store`
that runs read and write transactions (see the rules in
:mod:`sentient_core.store.env`): readers registered per thread, one writer at a
time in a process, a write re-run from scratch after the map is doubled on
``MapFullError``, and re-mapping when another process grew the map.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar, cast

import lmdb

from sentient_core.store.errors import StoreFullError, StoreIOError, StoreUsageError
from sentient_core.store.txn import StoreHandle, Txn

__all__ = ["Transactions"]

T = TypeVar("T")

_IO_MESSAGES = (
    "No space left on device",
    "Disk quota exceeded",
    "File too large",
    "Input/output error",
    "Read-only file system",
)


def _is_io_error(exc: BaseException) -> bool:
    """Whether an LMDB error is the OS refusing a write (disk full, limits, I/O)."""
    return isinstance(exc, lmdb.DiskError) or any(m in str(exc) for m in _IO_MESSAGES)


def _abort_quietly(txn: lmdb.Transaction) -> None:
    """Abort ``txn``; a no-op if it already ended (a failed commit frees it)."""
    with contextlib.suppress(lmdb.Error):
        txn.abort()


class Transactions:
    """Read and write transactions and map growth (a base of :class:`Store`).

    Uses the attributes :meth:`Store.open` sets and :meth:`Store._usable_env`.
    """

    path: Path
    readonly: bool
    map_grows: int
    map_adopts: int
    _max_map_size: int
    _write_lock: threading.Lock
    _cond: threading.Condition
    _active_readers: int
    _remapping: bool
    _local: threading.local

    def _usable_env(self) -> lmdb.Environment:
        raise NotImplementedError

    def write_stamp(self) -> int:
        """The id of the last write transaction committed to the store, by any process.

        It grows with every commit (LMDB's ``last_txnid``), so an unchanged stamp means
        nothing was written since it was read.
        """
        return int(self._usable_env().info()["last_txnid"])

    @property
    def map_size(self) -> int:
        """Current LMDB map size of this process, in bytes."""
        return int(self._usable_env().info()["map_size"])

    @contextmanager
    def read(self, *, buffers: bool = True) -> Iterator[Txn]:
        """A read transaction (a consistent snapshot).

        Parameters
        ----------
        buffers : bool
            With True (default) ``txn.raw.get`` and cursors return memoryviews
            into the map instead of copies. They are valid only until the
            transaction ends: copy out (``bytes(v)``, ``np.array(...)``,
            decode) anything you keep. The store's own readers always copy.

        Yields
        ------
        Txn
        """
        env = self._usable_env()
        raw = self._enter_read(env, buffers)
        try:
            yield Txn(raw, cast("StoreHandle", self), False)
        finally:
            raw.abort()
            self._exit_read()

    def _enter_read(self, env: lmdb.Environment, buffers: bool) -> lmdb.Transaction:
        """Register this thread as a reader and begin a read transaction."""
        local = self._local
        while True:
            with self._cond:
                # A thread already holding a read txn must not wait for a
                # re-map: the re-map is waiting for that very txn to end.
                if not getattr(local, "depth", 0):
                    while self._remapping:
                        self._cond.wait()
                self._active_readers += 1
            local.depth = getattr(local, "depth", 0) + 1
            try:
                return env.begin(buffers=buffers)  # type: ignore[call-overload]  # bool, not Literal
            except lmdb.MapResizedError:
                # Another process grew the map beyond ours. Re-mapping needs
                # no transaction open in this process, so step out first.
                self._exit_read()
                if getattr(local, "writing", False):
                    self._remap(adopt=True)
                else:
                    with self._write_lock:
                        self._remap(adopt=True)
            except BaseException:
                self._exit_read()
                raise

    def _exit_read(self) -> None:
        self._local.depth -= 1
        with self._cond:
            self._active_readers -= 1
            if self._active_readers == 0:
                self._cond.notify_all()

    def write(self, fn: Callable[[Txn], T]) -> T:
        """Run ``fn(txn)`` in one write transaction and commit it.

        Parameters
        ----------
        fn : callable
            Receives a :class:`Txn`; its return value is returned. ``fn`` must be
            re-runnable: on ``MapFullError`` the transaction is aborted, the map
            doubled and ``fn`` called again from scratch. It must not catch
            ``lmdb.MapFullError`` itself.

        Raises
        ------
        StoreFullError
            The write does not fit even at ``max_map_size``.
        StoreIOError
            The OS refused the write (disk full, file-size limit, I/O error);
            nothing of it was committed.
        StoreUsageError
            Read-only store, ``write`` called from inside ``fn``, or called while
            this thread holds a read transaction (reading inside ``fn`` is fine:
            use ``txn``, or ``read()`` for a snapshot from before the write).
        """
        env = self._usable_env()
        if self.readonly:
            raise StoreUsageError(f"the store at {self.path} is open read-only")
        local = self._local
        if getattr(local, "writing", False):
            raise StoreUsageError("Store.write() called inside a write; use the txn you were given")
        if getattr(local, "depth", 0):
            raise StoreUsageError(
                "Store.write() called while this thread holds a read transaction; finish"
                " reading first (a write may have to grow the map, which needs every read"
                " transaction of this process closed)"
            )
        with self._write_lock:
            local.writing = True
            try:
                while True:
                    try:
                        raw = env.begin(write=True)
                    except lmdb.MapResizedError:
                        self._remap(adopt=True)
                        continue
                    try:
                        result = fn(Txn(raw, cast("StoreHandle", self), True))
                        raw.commit()
                        return result
                    except lmdb.MapFullError:
                        try:
                            self._grow(raw)
                        finally:
                            _abort_quietly(raw)
                    except lmdb.Error as exc:
                        _abort_quietly(raw)
                        if _is_io_error(exc):
                            raise self._io_error(exc) from exc
                        raise
                    except BaseException:
                        _abort_quietly(raw)
                        raise
            finally:
                local.writing = False

    def _io_error(self, exc: BaseException) -> StoreIOError:
        try:
            free = shutil.disk_usage(self.path).free
        except OSError:
            free = -1
        return StoreIOError(str(self.path), str(exc), free)

    def _grow(self, failed: lmdb.Transaction) -> None:
        """Abort ``failed`` (a write txn that hit MapFullError) and double the map."""
        current = self.map_size
        if current >= self._max_map_size:
            raise StoreFullError(
                f"the store at {self.path} is full: the map is {current} bytes and"
                f" max_map_size is {self._max_map_size}"
            )
        try:
            self._remap(size=min(current * 2, self._max_map_size), abort=failed)
        except lmdb.Error as exc:
            if _is_io_error(exc):
                raise self._io_error(exc) from exc
            raise
        self.map_grows += 1

    def _remap(
        self, *, size: int = 0, adopt: bool = False, abort: lmdb.Transaction | None = None
    ) -> None:
        """Change this process's map size; waits until no read txn is active.

        The caller holds the write lock, so no other write txn is active;
        ``abort`` (the write txn that hit MapFullError) is aborted once the
        readers are out: py-lmdb's abort can be starved for seconds by reader
        threads in tight loops, so they are held at the gate first.

        With ``adopt``, pick up a map another process grew (doubling our own
        at the same time, so that a reader does not re-map on every commit of
        a growing writer; LMDB raises a too small size to what is in use).
        """
        env = self._usable_env()
        if getattr(self._local, "depth", 0) > 0:
            raise StoreUsageError(
                f"the map of the store at {self.path} must be resized, which needs every"
                " read transaction of this process closed, but this thread holds one"
            )
        with self._cond:
            while self._remapping:
                self._cond.wait()
            self._remapping = True
            try:
                while self._active_readers:
                    self._cond.wait()
                if abort is not None:
                    _abort_quietly(abort)
                if adopt:
                    env.set_mapsize(0)
                    env.set_mapsize(int(env.info()["map_size"]) * 2)
                    self.map_adopts += 1
                else:
                    env.set_mapsize(size)
            finally:
                self._remapping = False
                self._cond.notify_all()
