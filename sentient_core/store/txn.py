"""Transactions handed out by :meth:`Store.read` and :meth:`Store.write`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import lmdb

from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import COUNTERS, Counters

if TYPE_CHECKING:
    from sentient_core.store.codefile import CodeFile
    from sentient_core.store.records import StoreMeta

__all__ = ["COUNTERS_KEY", "TRACE_VERSION_KEY", "StoreHandle", "Txn"]

COUNTERS_KEY = b"counters"
"""Key of the :class:`Counters` record in ``meta``."""

TRACE_VERSION_KEY = b"trace-version"
"""Key in ``meta`` of the schema version all trace records were upgraded to (8-byte
big-endian); absent in a store from before trace records had version 2."""


class StoreHandle(Protocol):
    """What a transaction reads of its store (a :class:`~sentient_core.store.env.Store`)."""

    path: Path

    @property
    def code_dim(self) -> int: ...

    @property
    def block_rows(self) -> int: ...

    durable: bool
    readonly: bool
    code_file: CodeFile | None
    meta: StoreMeta

    def db(self, name: str) -> lmdb._Database: ...

    def has_db(self, name: str) -> bool: ...

    def adopt_code_file(self) -> CodeFile: ...


class Txn:
    """A transaction handed out by :meth:`Store.read` and :meth:`Store.write`.

    Attributes
    ----------
    raw : lmdb.Transaction
        The py-lmdb transaction, for direct ``get``/``put``/``cursor`` calls
        (pass ``db=txn.db(name)``).
    store : StoreHandle
        The store it belongs to.
    write : bool
        Whether writes are allowed.
    """

    __slots__ = ("raw", "store", "write")

    def __init__(self, raw: lmdb.Transaction, store: StoreHandle, write: bool) -> None:
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
