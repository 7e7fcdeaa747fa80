"""Decoded trace records kept between recalls while the store has not changed.

A recall over a small memory spends most of its time decoding the hits' records
(msgpack, primes) rather than ranking. :class:`RecordCache` keeps the decoded
records of recent hits, stamped with the store's last committed write
transaction (:meth:`~sentient_core.store.env.Store.write_stamp`, LMDB's
``last_txnid``: it advances on every commit by any process). The cache is
valid only while that stamp is unchanged, so a write anywhere — a touch, a
credit change, a retirement by another process — empties it before the next
read; nothing stale is ever returned.

The stamp is read *before* the read transaction that fills the cache begins,
so records are never newer than a stamp says: if a write commits in between,
the stamp taken is already out of date and the next lookup empties the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sentient_core.store import traces

if TYPE_CHECKING:
    from sentient_core.store.env import Store
    from sentient_core.store.records import TraceRecord

__all__ = ["MAX_RECORDS", "RecordCache"]

_MISSING = object()  # not cached (None is a cached answer: no such trace)

MAX_RECORDS = 4096
"""Records kept at most; the cache is emptied when a fill would exceed it."""


class RecordCache:
    """Trace records by id, valid while the store's write stamp is unchanged (module docstring).

    Safe to share between threads: lookups and fills hold a lock, the read runs outside it.
    """

    __slots__ = ("_lock", "_records", "_stamp", "hits", "misses")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[int, TraceRecord | None] = {}
        self._stamp = -1
        self.hits = 0
        self.misses = 0

    def get_many(self, store: Store, ids: Sequence[int]) -> list[TraceRecord | None]:
        """The records of ``ids`` (None: no such trace), as one read transaction would give."""
        stamp = store.write_stamp()
        with self._lock:
            if stamp != self._stamp:
                self._records.clear()
                self._stamp = stamp
            records = self._records
            try:  # every one cached, the common case of a repeated recall: one C-level map
                out: list = list(map(records.__getitem__, ids))
            except KeyError:
                get = records.get
                out = [get(i, _MISSING) for i in ids]
            else:
                self.hits += len(out)
                return out
        missing = list(dict.fromkeys(i for i, r in zip(ids, out, strict=True) if r is _MISSING))
        with store.read() as txn:
            fresh = dict(zip(missing, traces.get_many(txn, missing), strict=True))
        with self._lock:
            if self._stamp == stamp:  # else a newer stamp emptied it: keep nothing old
                if len(self._records) + len(fresh) > MAX_RECORDS:
                    self._records.clear()
                self._records.update(fresh)
        self.hits += len(ids) - len(missing)
        self.misses += len(missing)
        return [fresh[i] if r is _MISSING else r for i, r in zip(ids, out, strict=True)]
