"""Append-only logs (``events``, ``surprise`` …): functions over a :class:`~sentient_core.store.env.Txn`.

Keys are 8-byte big-endian sequence numbers, the first one 0; a number is
never reused, even after the oldest entries were pruned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from sentient_core.store.errors import StoreUsageError
from sentient_core.store.records import key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["append", "iter_after", "iter_newest", "prune_oldest"]


def append(txn: Txn, name: str, value: bytes) -> int:
    """Append ``value`` to the log sub-database ``name``; returns its sequence number."""
    db = txn.db(name)
    cursor = txn.raw.cursor(db=db)
    seq = key_u64(cursor.key()) + 1 if cursor.last() else 0
    if not txn.raw.put(u64_key(seq), value, db=db, append=True):
        raise StoreUsageError(f"sub-database {name!r} does not hold 8-byte sequence keys")
    return seq


def iter_after(txn: Txn, name: str, after: int = -1) -> Iterator[tuple[int, bytes]]:
    """``(seq, value)`` with ``seq > after``, oldest first (values copied out of the map)."""
    cur = txn.cursor(name)
    found = cur.set_range(u64_key(after + 1)) if after >= 0 else cur.first()
    while found:
        yield key_u64(bytes(cur.key())), bytes(cur.value())
        found = cur.next()


def iter_newest(txn: Txn, name: str) -> Iterator[tuple[int, bytes]]:
    """``(seq, value)``, newest first (values copied out of the map)."""
    cur = txn.cursor(name)
    found = cur.last()
    while found:
        yield key_u64(bytes(cur.key())), bytes(cur.value())
        found = cur.prev()


def prune_oldest(txn: Txn, name: str, keep: int) -> int:
    """Delete the oldest entries of ``name`` so that at most ``keep`` remain; returns how many."""
    excess = txn.entries(name) - keep
    cur = txn.cursor(name)
    removed = 0
    cur.first()
    while removed < excess and cur.delete():
        removed += 1
    return removed
