"""The LMDB environment behind a sentient-core data directory.

One :class:`Store` = one LMDB environment = one data directory holding
``data.mdb`` and ``lock.mdb``. The environment has one named sub-database per
domain (:data:`DB_NAMES`); a header record in ``meta`` marks the directory as a
sentient-core store and fixes the schema version and the code dimension.

Transactions
------------
(Implemented in :mod:`sentient_core.store.transactions`, a base class of :class:`Store`.)

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

import os
import shutil
import threading
import time
from pathlib import Path

import lmdb

from sentient_core.errors import ArgumentTypeError, NotFoundError
from sentient_core.store import (
    codefile,
    codes_q8,
    colfile,
    lexicon,
    migrate,
    prime_snapshot,
)
from sentient_core.store.codefile import CodeFile
from sentient_core.store.errors import (
    CorruptRecordError,
    ForkedStoreError,
    NotAStoreError,
    StoreClosedError,
    StoreError,
    StoreNotFoundError,
    StoreUsageError,
)
from sentient_core.store.location import default_data_dir
from sentient_core.store.records import (
    BLOCK_ROWS,
    COUNTERS,
    FORMAT_NAME,
    META_KEY,
    SCHEMA_VERSION,
    TRACE_VERSION,
    Counters,
    StoreMeta,
    decode_meta,
    encode_meta,
    u64_key,
)
from sentient_core.store.transactions import Transactions
from sentient_core.store.txn import COUNTERS_KEY, TRACE_VERSION_KEY, Txn

__all__ = [
    "DB_NAMES",
    "DEFAULT_MAP_SIZE",
    "DEFAULT_MAX_MAP_SIZE",
    "INCOMING_DIR",
    "META_KEY",
    "Store",
    "Txn",
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
    "content",
    "files",
    "terms",
    "layers",
    "recipes",
    "columns",
    "column_sources",
    "lexicon",
    "column_dirty",
)
"""Named sub-databases every store has (SPEC §2)."""

ADDED_LATER: frozenset[str] = frozenset(
    {
        "content",
        "files",
        "terms",
        "layers",
        "recipes",
        "columns",
        "column_sources",
        "lexicon",
        "column_dirty",
    }
)
"""Sub-databases added after schema version 1 was released: a read-only open of
an older store works without them (readers then see them as absent)."""

MAX_DBS = 64
"""LMDB ``max_dbs``: room for sub-databases added by later schema versions."""


DEFAULT_MAP_SIZE = 1 << 30
DEFAULT_MAX_MAP_SIZE = 1 << 40

# Files LMDB itself may leave in a directory before the first commit.
_LMDB_FILES = frozenset(
    {
        "data.mdb",
        "lock.mdb",
        codefile.FILE_NAME,
        prime_snapshot.FILE_NAME,
        colfile.FILE_NAME,
        lexicon.FILE_NAME,
        *codes_q8.NAMES,
    }
)

INCOMING_DIR = "incoming"
"""The folder of a data directory the learner reads a user's own sources from."""

DATA_DIR_FILES = frozenset(
    {"sentient.toml", "control.lock", "control.sock", "server.token", INCOMING_DIR}
)
"""Entries of the data directory besides the store's own: a new store may be created
beside them (a user writes ``sentient.toml``, or drops files into ``incoming/``, before
the first run)."""


def _check_new_layout(path: Path, code_dim: object, block_rows: object) -> None:
    if code_dim is None:
        raise StoreUsageError(f"creating a new store at {path} needs code_dim")
    for name, value, hi in (("code_dim", code_dim, 1 << 16), ("block_rows", block_rows, 1 << 20)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise StoreUsageError(f"{name} must be an integer in [1, {hi}], got {value!r}")


class Store(Transactions):
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
    code_file : CodeFile or None
        The code rows' file (schema 2); None for a schema-1 store opened read-only,
        whose rows are in the ``codes`` sub-database.
    """

    # Set by :meth:`open` (the constructor is closed: a half-made Store must not exist).
    path: Path
    meta: StoreMeta
    readonly: bool
    durable: bool
    map_grows: int
    map_adopts: int
    code_file: CodeFile | None
    _max_map_size: int
    _pid: int
    _env: lmdb.Environment | None
    _dbs: dict[str, lmdb._Database]
    _write_lock: threading.Lock
    _cond: threading.Condition
    _active_readers: int
    _remapping: bool
    _local: threading.local

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
        block_rows: int = BLOCK_ROWS,
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
        self._dbs = {}
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._active_readers = 0
        self._remapping = False
        self._local = threading.local()
        self.map_grows = 0
        self.map_adopts = 0
        self.code_file = None
        fresh = self._check_directory(create=create, code_dim=code_dim, block_rows=block_rows)
        if fresh:
            self.path.mkdir(parents=True, exist_ok=True)
        self._env = self._open_env(map_size)
        try:
            self._load_or_init(code_dim=code_dim, block_rows=block_rows)
            self._attach_code_file()
        except BaseException:
            self._env.close()
            self._env = None
            if self.code_file is not None:
                self.code_file.close()
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
            known = _LMDB_FILES | DATA_DIR_FILES
            others = sorted(p.name for p in path.iterdir() if p.name not in known)
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
        env = self._usable_env()
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
            assert code_dim is not None  # refused by _check_new_layout
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
        self.meta = decode_meta(raw, str(self.path))
        if code_dim is not None and code_dim != self.meta.code_dim:
            raise StoreUsageError(
                f"the store at {self.path} has code_dim {self.meta.code_dim}; caller asked for {code_dim}"
            )
        missing = [n for n in DB_NAMES if n not in names]
        if self.readonly:
            # A store from before a sub-database was added reads fine; the first
            # writable open adds it. Anything else missing is damage.
            damaged = [n for n in missing if n not in ADDED_LATER]
            if damaged:
                raise CorruptRecordError(
                    f"the store at {self.path} lacks sub-database(s) {', '.join(damaged)}"
                )
            missing = []
        if missing:
            with env.begin(write=True) as txn:
                for name in missing:
                    env.open_db(name.encode(), txn=txn, create=True)
        for name in DB_NAMES:
            if name not in self._dbs and (name in names or not self.readonly):
                self._dbs[name] = env.open_db(name.encode(), create=False)
        with self.read() as txn:
            txn.counters()  # fail at open, not at first use, if the counters are bad

    def _init_new(self, code_dim: int, block_rows: int) -> None:
        meta = StoreMeta(
            format=FORMAT_NAME,
            schema_version=SCHEMA_VERSION,
            code_dim=int(code_dim),
            block_rows=int(block_rows),
            created=time.time(),
        )
        raw_meta = encode_meta(meta)  # validates the bounds of code_dim / block_rows
        env = self._usable_env()
        with env.begin(write=True) as txn:
            for name in DB_NAMES:
                self._dbs[name] = env.open_db(name.encode(), txn=txn, create=True)
            txn.put(META_KEY, raw_meta, db=self._dbs["meta"])
            txn.put(COUNTERS_KEY, COUNTERS.encode(Counters()), db=self._dbs["meta"])
            txn.put(TRACE_VERSION_KEY, u64_key(TRACE_VERSION), db=self._dbs["meta"])
            # A new store keeps the mirror's columns as raw blocks from its first trace
            # (the value is colblocks.LAYOUT, the blocks' row layout).
            txn.put(b"columns", b"\x02", db=self._dbs["meta"])
        self.meta = meta

    def adopt_code_file(self) -> CodeFile:
        """The code file of a schema-1 store this process opened read-only and another
        process migrated since (its blocks are gone): rows are read from the file from
        now on. Returns :attr:`code_file`."""
        if self.code_file is None:
            self.code_file = CodeFile(self.path, self.code_dim, writable=False)
        return self.code_file

    def _attach_code_file(self) -> None:
        """Open the code file; migrate an older store at its first writable open
        (:mod:`sentient_core.store.migrate`)."""
        self.meta, self.code_file = migrate.attach(self)

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
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._env is None

    def db(self, name: str) -> lmdb._Database:
        """Handle of the named sub-database.

        Raises
        ------
        NotFoundError
            ``name`` is not one of :data:`DB_NAMES` (the message lists them), or
            the store is an older one opened read-only that does not have it yet.
        """
        try:
            return self._dbs[name]
        except KeyError:
            if name in DB_NAMES:
                raise NotFoundError(
                    f"the store at {self.path} predates sub-database {name!r}; open it"
                    " writable once to add it"
                ) from None
            raise NotFoundError(
                f"no sub-database {name!r}; the store has: {', '.join(DB_NAMES)}"
            ) from None

    def has_db(self, name: str) -> bool:
        """Whether sub-database ``name`` exists in this store (see :data:`ADDED_LATER`)."""
        return name in self._dbs

    def copy(self, dest: str | os.PathLike[str], *, compact: bool = True) -> Path:
        """A consistent copy of the whole environment into ``dest`` (new or empty).

        Taken from one snapshot (LMDB's own read transaction), so a writer in
        this or another process may go on while it runs; ``compact`` drops free
        pages. Returns the destination.

        Raises
        ------
        StoreUsageError
            ``dest`` exists and is not an empty directory.
        """
        target = Path(dest).expanduser()
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise StoreUsageError(
                f"backup destination {target} exists and is not an empty directory"
            )
        target.mkdir(parents=True, exist_ok=True)
        # Registered as a reader: a map growth in this process waits for the copy.
        with self.read():
            self._usable_env().copy(str(target), compact=compact)
            if self.code_file is not None:
                # LMDB's copy is a snapshot of its own, taken after ours: every row it
                # counts was in the file before it committed, so the rows the file holds
                # now cover it (rows never change; those above its count are unused).
                self.code_file.copy_to(target, self.code_file.stored_rows())
                if (self.path / codes_q8.NAMES[0]).exists():  # the int8 copy, likewise
                    for f in codes_q8.files(self).files:
                        f.copy_to(target, f.stored_rows())
        # The prime index's snapshot holds only rows that never change: valid for the copy.
        snapshot = self.path / prime_snapshot.FILE_NAME
        if snapshot.exists():
            shutil.copyfile(snapshot, target / prime_snapshot.FILE_NAME)
        # The column checkpoint: used by the copy only if its token is the one the copy's
        # meta names (a checkpoint written since LMDB's snapshot is not: store/colfile.py).
        checkpoint = self.path / colfile.FILE_NAME
        if checkpoint.exists():
            shutil.copyfile(checkpoint, target / colfile.FILE_NAME)
        # The lexical snapshot covers committed rows only, whose terms never change.
        lexical = self.path / lexicon.FILE_NAME
        if lexical.exists():
            shutil.copyfile(lexical, target / lexicon.FILE_NAME)
        return target

    def close(self) -> None:
        """Close the environment (idempotent).

        In a process other than the one that opened the store (after ``fork``)
        the handle is only dropped: closing it there would disturb the
        parent's reader slots.
        """
        env, self._env = self._env, None
        if env is not None and os.getpid() == self._pid:
            env.close()
            if self.code_file is not None:
                self.code_file.close()
            codes_q8.close(self)

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
