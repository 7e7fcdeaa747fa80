"""Moving an older store to this version's layout, at its first writable open.

* **Schema 1 → 3**: the code rows move from the ``codes`` sub-database into
  ``codes.f32`` (:func:`sentient_core.store.codes.migrate`) in one transaction: the
  rows reach the file first, then the blocks go and the header says 3; a crash before
  the commit leaves the store at 1, and the next open migrates again.
* **Schema 2 → 3**: nothing moves. Schema 3 adds the checkpoint of the mirror's
  columns (:mod:`sentient_core.store.colfile`), which the memory's writable open
  writes, and the marks of the column blocks written below it, which only a process of
  schema 3 makes: the version keeps older processes out. The lexical snapshot became
  a mapped file (:mod:`sentient_core.store.lexicon`): its LMDB values are dropped here
  and the memory's writable open writes the file.

A read-only open leaves an older store as it is (schema 1 is read from its blocks,
schema 2 without a checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import msgspec

from sentient_core.store import codes, colblocks, lexicon
from sentient_core.store.codefile import CodeFile
from sentient_core.store.records import META_KEY, SCHEMA_VERSION, StoreMeta, encode_meta
from sentient_core.store.txn import StoreHandle

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

T = TypeVar("T")


class Store(StoreHandle, Protocol):
    """What a migration uses of its :class:`~sentient_core.store.env.Store` (a protocol:
    env imports this module)."""

    def write(self, fn: Callable[[Txn], T]) -> T: ...


__all__ = ["attach"]


def _drop_lmdb_lexicon(txn: Txn) -> None:
    """Free the values a schema-2 store kept its lexical snapshot in (now a file)."""
    if txn.store.has_db(lexicon.DB):
        txn.raw.drop(txn.db(lexicon.DB), delete=False)


def attach(store: Store) -> tuple[StoreMeta, CodeFile | None]:
    """The store's header and code file after migrating it when it is older and open
    for writing (the code file is None for a schema-1 store opened read-only)."""
    meta = store.meta
    if meta.schema_version >= 2:
        code_file = CodeFile(store.path, store.code_dim, writable=not store.readonly)
        if meta.schema_version == 2 and not store.readonly:
            meta = _to_schema_3(store)
        return meta, code_file
    if store.readonly:
        return meta, None  # read from the blocks as they are
    code_file = CodeFile(store.path, store.code_dim, writable=True)
    new_meta = msgspec.structs.replace(meta, schema_version=SCHEMA_VERSION)

    def move(txn: Txn) -> None:
        codes.migrate(txn, code_file, store.durable)
        txn.raw.drop(store.db("codes"), delete=False)
        _drop_lmdb_lexicon(txn)
        txn.raw.put(META_KEY, encode_meta(new_meta), db=store.db("meta"))

    try:
        store.write(move)
    except BaseException:
        code_file.close()
        raise
    return new_meta, code_file


def _to_schema_3(store: Store) -> StoreMeta:
    new_meta = msgspec.structs.replace(store.meta, schema_version=SCHEMA_VERSION)

    def bump(txn: Txn) -> None:
        colblocks.forget(txn)  # no checkpoint of schema 2 exists; be sure none is named
        _drop_lmdb_lexicon(txn)
        txn.raw.put(META_KEY, encode_meta(new_meta), db=store.db("meta"))

    store.write(bump)
    return new_meta
