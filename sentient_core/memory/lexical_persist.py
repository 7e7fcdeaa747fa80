"""When the lexical index is persisted, and reading it back (``lexicon`` sub-database).

Opening a store rebuilt the inverted index from one stored ``terms`` value per
trace (1.7 s of a 1M-trace open). The index is now kept as a snapshot
(:mod:`sentient_core.store.lexicon`, a mapped file): the segments and block bounds of the
in-RAM :class:`~sentient_core.memory.lexical.LexicalIndex`, the rows' lengths,
the rows it covers and the tokenisation fingerprint. The loader takes it when
its fingerprint is this tokenisation's and it covers no more rows than the
mirror holds, and folds in the rows above it from their stored terms; a
missing, foreign or undecodable snapshot means today's rebuild (never a wrong
index: terms of a row never change, retirements are the mirror's mask).

When it is written (the caller is :class:`~sentient_core.memory.writer.Writer`):

* **on a writable open**, when the rows above the snapshot are at least
  :data:`TAIL_MIN` (a store without one — an older store — gets it on its first
  writable open: the migration). That open pays for the write (≈ the bytes of
  the postings, once); the next opens read the snapshot.
* **after appends**, when the rows above it reach the rows it covers (and
  :data:`TAIL_MIN`): the snapshot doubles, so writing costs O(1) amortised per
  trace (each write copies the whole index once, the writes' sizes form a
  geometric series) and an open never folds more than half of the store.
  A smaller fraction would bound the fold tighter but multiply the writes on
  the integration path; the writable open catches up instead.

A failed write (disk or map full) leaves the older snapshot in place: it is
only a cache of what the terms hold.

The prime index's snapshot (:mod:`sentient_core.store.prime_snapshot`, a mapped
file) is written with it, over the same rows (:func:`save_primes`), and so is the
checkpoint of the mirror's columns (:mod:`sentient_core.store.colfile`,
:func:`save_columns`), which a writable open also writes when it is missing, unusable,
:data:`TAIL_MIN` rows behind, or when many of its blocks changed since
(:func:`columns_due`: a decay rewrites most of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentient_core.memory.terms import FINGERPRINT
from sentient_core.store import colblocks, colfile, lexicon, prime_snapshot
from sentient_core.store.errors import CorruptRecordError, StoreFullError, StoreIOError

if TYPE_CHECKING:
    from sentient_core.memory.lexical import LexicalIndex
    from sentient_core.memory.mirror import Mirror, PrimeIndex
    from sentient_core.store.env import Store

__all__ = [
    "TAIL_MIN",
    "columns_due",
    "due_after_append",
    "due_on_open",
    "read",
    "save",
    "save_columns",
    "save_primes",
]

TAIL_MIN = 16384
"""Rows above the snapshot worth a write (folding them costs an open ~30 ms at 1M)."""


def read(store: Store, n: int) -> lexicon.Snapshot | None:
    """The stored snapshot if it is usable for a mirror of ``n`` rows, else None."""
    # Any snapshot of this tokenisation covering at most n rows is right for the mirror
    # (rows below n are the same in every later snapshot of the store).
    with store.read() as txn:
        try:
            snap = lexicon.read(txn)
        except CorruptRecordError:
            return None  # rebuilt (and rewritten by the next writable open); check reports it
    if snap is None or snap.fingerprint != FINGERPRINT or not 0 < snap.rows <= n:
        return None
    return snap


def due_on_open(covered: int, n: int) -> bool:
    """Whether a writable open of ``n`` rows whose snapshot covers ``covered`` writes one."""
    return n - covered >= TAIL_MIN


def due_after_append(covered: int, n: int) -> bool:
    """Whether ``n`` rows after an append are worth a new snapshot (see the module docstring)."""
    return n - covered >= max(TAIL_MIN, covered)


def save(store: Store, index: LexicalIndex, m: Mirror) -> bool:
    """Write the snapshot of ``index`` over the mirror's published rows (``m.n``).

    Returns False (nothing written) when the write failed for want of room.
    The caller holds the memory's write lock and no read transaction.
    """
    n = m.n
    snap = lexicon.Snapshot(n, FINGERPRINT, m.doc_len[:n], list(index.segments), list(index.bounds))
    try:
        store.write(lambda txn: lexicon.write(txn, snap))
    except (StoreFullError, StoreIOError, OSError):  # the map, or the disk for the file
        return False
    return True


def save_primes(store: Store, primes: PrimeIndex, n: int) -> bool:
    """Write the snapshot of the prime index over rows ``[0, n)`` (every row it holds).

    Returns False (the older snapshot stays) when the disk refused the write.
    """
    starts, out = primes.flat()
    try:
        prime_snapshot.write(
            store.path, store.meta.created, prime_snapshot.PrimeSnapshot(n, starts, out)
        )
    except OSError:
        return False
    return True


def columns_due(store: Store) -> bool:
    """Whether a writable open should write the column checkpoint: none is usable, or the
    rows above it or the rows of the blocks changed since reach :data:`TAIL_MIN` (and an
    eighth of its rows, for the changed ones)."""
    with store.read() as txn:
        n = txn.counters().row_count
        if not n or not colblocks.enabled(txn):
            return False
        ckpt = colfile.open_checkpoint(txn, store.path, store.meta.created, n)
        if ckpt is None:
            return n >= TAIL_MIN
        ckpt.close()
        dirty = txn.entries(colblocks.DIRTY_DB) * colblocks.BLOCK
    return n - ckpt.rows >= TAIL_MIN or dirty >= max(TAIL_MIN, ckpt.rows // 8)


def save_columns(store: Store) -> bool:
    """Write the checkpoint of the mirror's columns over every stored row (in a write
    transaction of its own: the blocks it unpacks are the committed ones).

    Returns False (the older checkpoint stays named) when the disk or the map refused.
    """
    try:
        store.write(lambda txn: colfile.write(txn, store.path, store.meta.created))
    except (StoreFullError, StoreIOError, OSError):
        return False
    return True
