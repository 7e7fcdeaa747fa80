"""Content digests: which trace holds a given text, so the same content is stored once.

``content`` maps a 16-byte BLAKE2b digest of a trace's text (whitespace runs
collapsed, so reflowed copies match) to the id of the active trace holding it.
Storing adds the digest in the same transaction as the trace; retiring a trace
removes its digest (a text stored again after its trace was superseded is new
again). Functions over a :class:`~sentient_core.store.txn.Txn`.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sentient_core.store.records import key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["digest", "lookup", "missing", "put", "remove"]

DB = "content"


def digest(text: str) -> bytes:
    """The content key of ``text`` (whitespace-insensitive, exact otherwise)."""
    normal = " ".join(text.split())
    return hashlib.blake2b(normal.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def lookup(txn: Txn, key: bytes) -> int | None:
    """Id of the trace holding content ``key``, or None (also for an older read-only store)."""
    if not txn.store.has_db(DB):
        return None
    raw = txn.raw.get(key, db=txn.db(DB))
    return None if raw is None else key_u64(bytes(raw))


def put(txn: Txn, key: bytes, trace_id: int) -> bool:
    """Record that trace ``trace_id`` holds content ``key`` (the first holder is kept);
    whether it became the holder."""
    return bool(txn.raw.put(key, u64_key(trace_id), db=txn.db(DB), overwrite=False))


def remove(txn: Txn, key: bytes, trace_id: int) -> bool:
    """Forget content ``key`` if trace ``trace_id`` is its holder; whether it was."""
    if lookup(txn, key) != trace_id:
        return False
    return bool(txn.raw.delete(key, db=txn.db(DB)))


def missing(txn: Txn) -> bool:
    """Whether the store has traces but no content digests (written before digests existed)."""
    return txn.counters().trace_count > 0 and (not txn.store.has_db(DB) or txn.entries(DB) == 0)
