"""The LMDB environment behind a sentient-core data directory.

One :class:`Store` = one LMDB environment = one data directory holding
``data.mdb`` and ``lock.mdb``. The environment has one named sub-database per
domain (:data:`DB_NAMES`); a header record in ``meta`` marks the directory as a
sentient-core store and fixes the schema version and the code dimension.

Transactions
------------
* :meth:`Store.write` runs ``fn(txn)`` inside ONE write transaction and commits
  it; either everything ``fn`` wrote is committed or nothing is. When the map
  is full it aborts, doubles the map and runs ``fn`` again from scratch, so
  ``fn`` must be re-runnable: it may only change the store through ``txn`` and
  must not depend on side effects of an earlier, aborted run.
* :meth:`Store.read` yields a read transaction: a consistent snapshot that a
  concurrent writer (in this or another process) never disturbs.

Concurrency
-----------
LMDB allows one writer and many readers. Inside a process the store takes a
lock so that one thread writes at a time; across processes LMDB serialises
writers itself, but by convention only one process (the learner) writes and
the others (recall, CLI, tests) only read. Readers never block the writer.

Processes
---------
Open the store in the process that uses it: after ``fork``, never across it.
A Store records the pid that opened it and raises :class:`ForkedStoreError`
when used from another process. (py-lmdb also refuses to open the same
files a second time in a forked child while the inherited handle exists,
so a child must be started with ``spawn``/``subprocess`` or fork before the
parent opens the store.)

Durability
----------
``durable=True`` (the default) fsyncs on every commit: a committed transaction
survives a crash of the machine. ``durable=False`` skips the fsync (for
benchmarks and bulk loads): a killed *process* still loses nothing committed,
because the data is already in the OS page cache, but an OS crash or power
loss may lose the last commits (never corrupts the store).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb
import msgspec
import numpy as np

from sentient_core.errors import ArgumentTypeError, NotFoundError
from sentient_core.store import codes as _codes
from sentient_core.store.errors import (
    CorruptRecordError,
    ForkedStoreError,
    NotAStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    StoreFullError,
    StoreNotFoundError,
    StoreUsageError,
)
from sentient_core.store.records import (
    COUNTERS,
    FORMAT_NAME,
    LINKS,
    META_DECODER,
    META_PEEK,
    SCHEMA_VERSION,
    TRACES,
    Counters,
    LinkRecord,
    StoreMeta,
    TraceRecord,
    encode_meta,
    key_u64,
    link_key,
    u64_key,
)

__all__ = [
    "COUNTERS_KEY",
    "DB_NAMES",
    "DEFAULT_MAP_SIZE",
    "DEFAULT_MAX_MAP_SIZE",
    "META_KEY",
    "Store",
    "Txn",
    "default_data_dir",
]

DB_NAMES: tuple[str, ...] = (
    "meta",
    "traces",
    "codes",
    "links",
    "state",
    "scorer",
    "surprise",
    "debts",
    "wisdom",
    "sources",
    "budget",
    "events",
)
"""Named sub-databases every store has (SPEC §2)."""

MAX_DBS = 64
"""LMDB ``max_dbs``: room for sub-databases added by later schema versions."""

META_KEY = b"store"
"""Key of the :class:`StoreMeta` header in ``meta``."""

COUNTERS_KEY = b"counters"
"""Key of the :class:`Counters` record in ``meta``."""

DEFAULT_MAP_SIZE = 1 << 30
DEFAULT_MAX_MAP_SIZE = 1 << 40

# Files LMDB itself may leave in a directory before the first commit.
_LMDB_FILES = frozenset({"data.mdb", "lock.mdb"})

T = TypeVar("T")


def default_data_dir() -> Path:
    """The data directory used when none is given.

    Returns
    -------
    pathlib.Path
        ``$SENTIENT_HOME`` if set; else ``$XDG_DATA_HOME/sentient-core`` (if
        that variable is an absolute path, as the XDG spec requires); else
        ``~/.local/share/sentient-core``.
    """
    home = os.environ.get("SENTIENT_HOME", "").strip()
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sentient-core"
    return Path.home() / ".local" / "share" / "sentient-core"


def _check_new_layout(path: Path, code_dim: object, block_rows: object) -> None:
    if code_dim is None:
        raise StoreUsageError(f"creating a new store at {path} needs code_dim")
    for name, value, hi in (("code_dim", code_dim, 1 << 16), ("block_rows", block_rows, 1 << 20)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise StoreUsageError(f"{name} must be an integer in [1, {hi}], got {value!r}")


def _abort_quietly(txn: lmdb.Transaction) -> None:
    """Abort ``txn``; a no-op if it already ended (a failed commit frees it)."""
    with contextlib.suppress(lmdb.Error):
        txn.abort()


class Txn:
    """A transaction handed out by :meth:`Store.read` and :meth:`Store.write`.

    Attributes
    ----------
    raw : lmdb.Transaction
        The py-lmdb transaction, for direct ``get``/``put``/``cursor`` calls
        (pass ``db=txn.db(name)``).
    store : Store
        The store it belongs to.
    write : bool
        Whether writes are allowed.
    """

    __slots__ = ("raw", "store", "write")

    def __init__(self, raw: lmdb.Transaction, store: Store, write: bool) -> None:
        self.raw = raw
        self.store = store
        self.write = write

    def db(self, name: str) -> lmdb._Database:
        """Handle of the sub-database ``name`` (see :meth:`Store.db`)."""
        return self.store.db(name)

    def get(self, name: str, key: bytes) -> bytes | memoryview | None:
        """Value of ``key`` in sub-database ``name``, or None."""
        return self.raw.get(key, db=self.store.db(name))

    def put(self, name: str, key: bytes, value: bytes) -> None:
        """Set ``key`` to ``value`` in sub-database ``name``."""
        self.raw.put(key, value, db=self.store.db(name))

    def delete(self, name: str, key: bytes) -> bool:
        """Delete ``key`` from sub-database ``name``; False if it was absent."""
        return self.raw.delete(key, db=self.store.db(name))

    def cursor(self, name: str) -> lmdb.Cursor:
        """A cursor over sub-database ``name``."""
        return self.raw.cursor(db=self.store.db(name))

    def entries(self, name: str) -> int:
        """Number of keys in sub-database ``name`` (O(1), from LMDB's stats)."""
        return int(self.raw.stat(self.store.db(name))["entries"])

    def counters(self) -> Counters:
        """The store counters as of this transaction."""
        raw = self.raw.get(COUNTERS_KEY, db=self.store.db("meta"))
        if raw is None:
            raise CorruptRecordError(f"store at {self.store.path} has no counters record")
        return COUNTERS.decode(raw, where=f"{self.store.path} meta/counters")

    def set_counters(self, counters: Counters) -> None:
        """Replace the store counters (write transactions only)."""
        self.raw.put(COUNTERS_KEY, COUNTERS.encode(counters), db=self.store.db("meta"))


class Store:
    """A sentient-core store: one LMDB environment in one data directory.

    Create or open one with :meth:`Store.open`; use it as a context manager or
    call :meth:`close`. See the module docstring for the transaction,
    concurrency, process and durability rules.

    Attributes
    ----------
    path : pathlib.Path
        The data directory.
    meta : StoreMeta
        The header record.
    code_dim : int
        Length of every code row.
    block_rows : int
        Code rows per LMDB value.
    readonly : bool
    durable : bool
    map_grows : int
        Times this process grew the map after ``MapFullError``.
    map_adopts : int
        Times this process re-mapped because another process grew the map.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise ArgumentTypeError("use Store.open(path, ...) to open or create a store")

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        code_dim: int | None = None,
        readonly: bool = False,
        create: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int = DEFAULT_MAX_MAP_SIZE,
        durable: bool = True,
        block_rows: int = _codes.BLOCK_ROWS,
    ) -> Store:
        """Open the store at ``path``, creating it if allowed.

        Parameters
        ----------
        path : path-like, optional
            Data directory; :func:`default_data_dir` when omitted.
        code_dim : int, optional
            Code row length. Required to create a store; when opening an
            existing one it must match (or be omitted).
        readonly : bool
            Open for reading only (never creates anything).
        create : bool
            Create the store if the directory is missing or empty.
        map_size : int
            Initial LMDB map size in bytes; grows on demand up to ``max_map_size``.
        max_map_size : int
            Largest map :meth:`write` will grow to before raising StoreFullError.
        durable : bool
            fsync on every commit (see module docstring).
        block_rows : int
            Rows per code block for a new store (an existing store keeps its own).

        Raises
        ------
        NotAStoreError
            ``path`` is a file, or a non-empty directory that is not a store.
        StoreNotFoundError
            No store at ``path`` and ``readonly`` or not ``create``.
        SchemaVersionError
            The store was written by a newer sentient-core.
        StoreUsageError
            ``code_dim`` missing for a new store or different from the store's,
            or the store is already open in this process.
        """
        self = object.__new__(cls)
        self.path = Path(default_data_dir() if path is None else path).expanduser()
        self.readonly = readonly
        self.durable = durable
        self._max_map_size = int(max_map_size)
        self._pid = os.getpid()
        self._env = None
        self._dbs: dict[str, lmdb._Database] = {}
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._active_readers = 0
        self._remapping = False
        self._local = threading.local()
        self.map_grows = 0
        self.map_adopts = 0
        fresh = self._check_directory(create=create, code_dim=code_dim, block_rows=block_rows)
        if fresh:
            self.path.mkdir(parents=True, exist_ok=True)
        self._env = self._open_env(map_size)
        try:
            self._load_or_init(code_dim=code_dim, block_rows=block_rows)
        except BaseException:
            self._env.close()
            self._env = None
            raise
        return self

    def _check_directory(self, *, create: bool, code_dim: int | None, block_rows: int) -> bool:
        """Classify the directory; True if a new store will be created in it."""
        path = self.path
        if path.exists() and not path.is_dir():
            raise NotAStoreError(
                f"{path} is not a sentient-core store: it is a file, not a directory"
            )
        data = path / "data.mdb"
        if data.is_file() and data.stat().st_size > 0:
            return False
        if path.is_dir():
            others = sorted(p.name for p in path.iterdir() if p.name not in _LMDB_FILES)
            if others:
                shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
                raise NotAStoreError(
                    f"{path} is not a sentient-core store: the directory is not empty"
                    f" ({len(others)} entries: {shown}) and has no data.mdb;"
                    " choose an empty or new directory"
                )
        if self.readonly or not create:
            why = "open read-only" if self.readonly else "create=False"
            raise StoreNotFoundError(
                f"no sentient-core store at {path} ({why}, so none was created)"
            )
        _check_new_layout(path, code_dim, block_rows)
        return True

    def _open_env(self, map_size: int) -> lmdb.Environment:
        try:
            return lmdb.open(
                str(self.path),
                map_size=int(map_size),
                subdir=True,
                readonly=self.readonly,
                create=not self.readonly,
                max_dbs=MAX_DBS,
                sync=self.durable,
                metasync=self.durable,
                lock=True,
            )
        except (lmdb.InvalidError, lmdb.VersionMismatchError) as exc:
            raise NotAStoreError(
                f"{self.path} is not a sentient-core store: data.mdb is not a"
                f" readable LMDB file ({exc})"
            ) from exc
        except lmdb.Error as exc:
            if "already open" in str(exc):
                raise StoreUsageError(
                    f"the store at {self.path} is already open in this process;"
                    " share that Store object instead of opening it again"
                ) from exc
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc

    def _load_or_init(self, *, code_dim: int | None, block_rows: int) -> None:
        env = self._env
        with env.begin() as txn:
            names = {
                bytes(k).decode("utf-8", "replace") for k in txn.cursor().iternext(values=False)
            }
        if not names:
            # An LMDB environment with nothing in it: new, or a creation that
            # crashed before its first commit.
            if self.readonly:
                raise StoreNotFoundError(
                    f"no sentient-core store at {self.path} (the LMDB files are empty)"
                )
            _check_new_layout(self.path, code_dim, block_rows)
            self._init_new(code_dim, block_rows)
            return
        if "meta" not in names:
            raise NotAStoreError(
                f"{self.path} is not a sentient-core store: it is an LMDB environment"
                f" without a meta database (it has {', '.join(sorted(names)[:5])})"
            )
        try:
            self._dbs["meta"] = env.open_db(b"meta", create=False)
        except lmdb.Error as exc:  # e.g. a plain key named "meta" in someone else's LMDB
            raise NotAStoreError(
                f"{self.path} is not a sentient-core store: its 'meta' is not a database ({exc})"
            ) from exc
        with env.begin() as txn:
            raw = txn.get(META_KEY, db=self._dbs["meta"])
        self.meta = self._decode_meta(raw)
        if code_dim is not None and code_dim != self.meta.code_dim:
            raise StoreUsageError(
                f"the store at {self.path} has code_dim {self.meta.code_dim}; caller asked for {code_dim}"
            )
        missing = [n for n in DB_NAMES if n not in names]
        if missing and self.readonly:
            raise CorruptRecordError(
                f"the store at {self.path} lacks sub-database(s) {', '.join(missing)}"
            )
        if missing:
            with env.begin(write=True) as txn:
                for name in missing:
                    env.open_db(name.encode(), txn=txn, create=True)
        for name in DB_NAMES:
            if name not in self._dbs:
                self._dbs[name] = env.open_db(name.encode(), create=False)
        with self.read() as txn:
            txn.counters()  # fail at open, not at first use, if the counters are bad

    def _decode_meta(self, raw: bytes | None) -> StoreMeta:
        where = f"{self.path}"
        if raw is None:
            raise NotAStoreError(f"{where} is not a sentient-core store: meta has no header record")
        try:
            peek = META_PEEK.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise NotAStoreError(
                f"{where} is not a sentient-core store: bad header ({exc})"
            ) from exc
        if peek.format != FORMAT_NAME:
            raise NotAStoreError(
                f"{where} is not a sentient-core store: header format is {peek.format!r}"
            )
        if peek.schema_version != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"store at {where} has schema version {peek.schema_version}; this sentient-core"
                f" understands {SCHEMA_VERSION}; upgrade sentient-core"
            )
        try:
            return META_DECODER.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CorruptRecordError(f"store header at {where} is invalid: {exc}") from exc

    def _init_new(self, code_dim: int, block_rows: int) -> None:
        meta = StoreMeta(
            format=FORMAT_NAME,
            schema_version=SCHEMA_VERSION,
            code_dim=int(code_dim),
            block_rows=int(block_rows),
            created=time.time(),
        )
        raw_meta = encode_meta(meta)  # validates the bounds of code_dim / block_rows
        env = self._env
        with env.begin(write=True) as txn:
            for name in DB_NAMES:
                self._dbs[name] = env.open_db(name.encode(), txn=txn, create=True)
            txn.put(META_KEY, raw_meta, db=self._dbs["meta"])
            txn.put(COUNTERS_KEY, COUNTERS.encode(Counters()), db=self._dbs["meta"])
        self.meta = meta

    # -- properties and lifetime -------------------------------------------------------------

    @property
    def code_dim(self) -> int:
        """Length of every code row."""
        return self.meta.code_dim

    @property
    def block_rows(self) -> int:
        """Code rows per LMDB value."""
        return self.meta.block_rows

    @property
    def map_size(self) -> int:
        """Current LMDB map size of this process, in bytes."""
        return int(self._usable_env().info()["map_size"])

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._env is None

    def db(self, name: str) -> lmdb._Database:
        """Handle of the named sub-database.

        Raises
        ------
        KeyError
            ``name`` is not one of :data:`DB_NAMES` (the message lists them).
        """
        try:
            return self._dbs[name]
        except KeyError:
            raise NotFoundError(
                f"no sub-database {name!r}; the store has: {', '.join(DB_NAMES)}"
            ) from None

    def close(self) -> None:
        """Close the environment (idempotent).

        In a process other than the one that opened the store (after ``fork``)
        the handle is only dropped: closing it there would disturb the
        parent's reader slots.
        """
        env, self._env = self._env, None
        if env is not None and os.getpid() == self._pid:
            env.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._env is None else ("read-only" if self.readonly else "read-write")
        return f"<Store {str(self.path)!r} {state}>"

    def _usable_env(self) -> lmdb.Environment:
        env = self._env
        if env is None:
            raise StoreClosedError(f"the store at {self.path} is closed")
        if os.getpid() != self._pid:
            raise ForkedStoreError(
                f"the store at {self.path} was opened in process {self._pid} and used in"
                f" process {os.getpid()}; open the store in the process that uses it"
                " (after fork, never across it)"
            )
        return env

    # -- transactions ----------------------------------------------------------------------

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
            yield Txn(raw, self, False)
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
                return env.begin(buffers=buffers)
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
                        result = fn(Txn(raw, self, True))
                        raw.commit()
                        return result
                    except lmdb.MapFullError:
                        try:
                            self._grow(raw)
                        finally:
                            _abort_quietly(raw)
                    except BaseException:
                        _abort_quietly(raw)
                        raise
            finally:
                local.writing = False

    def _grow(self, failed: lmdb.Transaction) -> None:
        """Abort ``failed`` (a write txn that hit MapFullError) and double the map."""
        current = self.map_size
        if current >= self._max_map_size:
            raise StoreFullError(
                f"the store at {self.path} is full: the map is {current} bytes and"
                f" max_map_size is {self._max_map_size}"
            )
        self._remap(size=min(current * 2, self._max_map_size), abort=failed)
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
        env = self._env
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

    # -- traces, codes, links ------------------------------------------------------------

    def counters(self, txn: Txn) -> Counters:
        """The store counters (next id, trace and row counts) as of ``txn``."""
        return txn.counters()

    def put_traces(
        self, txn: Txn, records: Sequence[TraceRecord], codes: np.ndarray
    ) -> list[TraceRecord]:
        """Add traces and their code rows, and update the counters.

        Ids and rows are assigned here (``next_id + i`` and ``row_count + i``);
        the ``id``/``row`` of the given records are ignored.

        Parameters
        ----------
        txn : Txn
            A write transaction.
        records : sequence of TraceRecord
        codes : ndarray, shape (len(records), code_dim), float32

        Returns
        -------
        list of TraceRecord
            The stored records, with their ids and rows.
        """
        if len(records) != (codes.shape[0] if getattr(codes, "ndim", 0) == 2 else -1):
            raise StoreUsageError(
                f"put_traces needs one code row per record: {len(records)} records,"
                f" codes of shape {getattr(codes, 'shape', None)}"
            )
        before = txn.counters()
        first_row = _codes.append_rows(txn, codes)
        db = self.db("traces")
        put = txn.raw.put
        replace = msgspec.structs.replace
        stored = []
        next_id = before.next_id
        for i, record in enumerate(records):
            rec = replace(record, id=next_id + i, row=first_row + i)
            if not put(u64_key(rec.id), TRACES.encode(rec), db=db, append=True):
                raise CorruptRecordError(
                    f"trace id {rec.id} is not above the ids already in the store at"
                    f" {self.path}; the counters are stale (run check_integrity)"
                )
            stored.append(rec)
        n = len(stored)
        txn.set_counters(
            Counters(
                next_id=next_id + n,
                trace_count=before.trace_count + n,
                row_count=first_row + n,
            )
        )
        return stored

    def update_trace(self, txn: Txn, record: TraceRecord) -> None:
        """Replace an existing trace record (same id, same row).

        Raises
        ------
        KeyError
            No trace with that id.
        StoreUsageError
            The record's row differs from the stored one.
        """
        old = self.get_trace(txn, record.id)
        if old is None:
            raise NotFoundError(f"no trace {record.id} in the store at {self.path}")
        if old.row != record.row:
            raise StoreUsageError(
                f"trace {record.id} owns code row {old.row}; an update cannot move it to {record.row}"
            )
        txn.raw.put(u64_key(record.id), TRACES.encode(record), db=self.db("traces"))

    def get_trace(self, txn: Txn, trace_id: int) -> TraceRecord | None:
        """The trace with id ``trace_id``, or None."""
        raw = txn.raw.get(u64_key(trace_id), db=self.db("traces"))
        if raw is None:
            return None
        return TRACES.decode(raw, where=f"traces/{trace_id}")

    def iter_traces(
        self, txn: Txn, start: int = 0, stop: int | None = None
    ) -> Iterator[TraceRecord]:
        """Traces with ``start <= id < stop`` in id order."""
        cursor = txn.raw.cursor(db=self.db("traces"))
        if not cursor.set_range(u64_key(start)):
            return
        decode = TRACES.decode
        for key, value in cursor.iternext():
            trace_id = key_u64(key)
            if stop is not None and trace_id >= stop:
                return
            yield decode(value, where=f"traces/{trace_id}")

    def trace_count(self, txn: Txn) -> int:
        """Number of trace records (from the counters)."""
        return txn.counters().trace_count

    def put_link(self, txn: Txn, link: LinkRecord) -> None:
        """Add or replace the link ``link.src -> link.dst``.

        Raises
        ------
        KeyError
            Either end is not a trace in the store.
        """
        db = self.db("traces")
        for end in (link.src, link.dst):
            if txn.raw.get(u64_key(end), db=db) is None:
                raise NotFoundError(f"link {link.src}->{link.dst}: no trace {end} in the store")
        txn.raw.put(link_key(link.src, link.dst), LINKS.encode(link), db=self.db("links"))

    def get_link(self, txn: Txn, src: int, dst: int) -> LinkRecord | None:
        """The link ``src -> dst``, or None."""
        raw = txn.raw.get(link_key(src, dst), db=self.db("links"))
        return None if raw is None else LINKS.decode(raw, where=f"links/{src}->{dst}")

    def delete_link(self, txn: Txn, src: int, dst: int) -> bool:
        """Remove the link ``src -> dst``; False if there was none."""
        return txn.raw.delete(link_key(src, dst), db=self.db("links"))

    def iter_links(self, txn: Txn, src: int | None = None) -> Iterator[LinkRecord]:
        """All links (``src`` None) or the links out of ``src``, in key order."""
        cursor = txn.raw.cursor(db=self.db("links"))
        if not cursor.set_range(link_key(0 if src is None else src, 0)):
            return
        prefix = None if src is None else u64_key(src)
        for key, value in cursor.iternext():
            if prefix is not None and bytes(key[:8]) != prefix:
                return
            yield LINKS.decode(value, where="links")

    def append(self, txn: Txn, name: str, value: bytes) -> int:
        """Append ``value`` to a log-like sub-database under the next integer key.

        Keys are 8-byte big-endian sequence numbers (first 0). Meant for
        ``events``, ``surprise`` and the like. Returns the sequence number.
        """
        db = self.db(name)
        cursor = txn.raw.cursor(db=db)
        seq = key_u64(cursor.key()) + 1 if cursor.last() else 0
        if not txn.raw.put(u64_key(seq), value, db=db, append=True):
            raise StoreUsageError(f"sub-database {name!r} does not hold 8-byte sequence keys")
        return seq
