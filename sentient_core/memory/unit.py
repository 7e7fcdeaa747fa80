"""A unit of work: memory's steps and the caller's own writes in ONE write transaction.

:func:`write` (behind :meth:`HolographicMemory.write`) runs ``fn(tx)`` in one
store write transaction, with the writer's lock held. ``tx`` is a
:class:`MemoryTxn`: the store transaction itself (``tx.txn``, for the caller's
own lower-level writes: a file record, an audit event, credit records) and
memory's steps (:meth:`MemoryTxn.store_unique`, :meth:`MemoryTxn.store_batch`,
:meth:`MemoryTxn.retire`), each returning what it did. Everything commits
together or not at all.

Why a transaction *function* and not a context manager: LMDB cannot grow its
map inside a transaction, so on ``MapFullError`` the store aborts, doubles the
map and runs ``fn`` again from scratch (:meth:`Store.write`). ``fn`` must
therefore be re-runnable: change the store only through ``tx``, keep what must
happen once (encoding, observing, publishing) outside it, and return what the
caller needs instead of storing it elsewhere.

Each run gets a fresh :class:`MemoryTxn`; its steps write through ``tx.txn`` and
record the in-RAM update they owe (:class:`~sentient_core.memory.writer.Change`).
Only the committed run's changes are applied (:meth:`Writer.apply`), after the
commit and before the lock is released, so a re-run or a failed transaction
leaves the mirror as it was. Memory never calls caller code other than ``fn``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from sentient_core.memory import lifecycle as _lifecycle
from sentient_core.memory import storing as _storing
from sentient_core.memory.types import NewTrace, Stored, check_ids
from sentient_core.memory.writer import Change, Writer
from sentient_core.store.errors import StoreUsageError
from sentient_core.store.records import TraceRecord
from sentient_core.store.txn import Txn

__all__ = ["MemoryTxn", "write"]

T = TypeVar("T")

Items = Sequence[NewTrace] | _storing.Prepared
"""What a storing step takes: items, or items already prepared outside the transaction."""


class MemoryTxn:
    """One run of a unit of work (see the module docstring).

    Attributes
    ----------
    txn : Txn
        The store's write transaction, for the caller's own writes. Valid only
        inside the function it was given to.
    """

    __slots__ = ("_changes", "_open", "_w", "txn")

    def __init__(self, w: Writer, txn: Txn) -> None:
        self._w = w
        self.txn = txn
        self._changes: list[Change] = []
        self._open = True

    def _prepared(self, items: Items) -> _storing.Prepared:
        if not self._open:
            raise StoreUsageError("this MemoryTxn's transaction has ended")
        if isinstance(items, _storing.Prepared):
            return items
        return _storing.prepare(self._w, items)

    def store_batch(self, items: Items) -> list[TraceRecord]:
        """Store every item (see :meth:`HolographicMemory.store_batch`); the stored
        records, in the order of ``items``."""
        if not isinstance(items, _storing.Prepared) and not items:
            return []
        stored, change = _storing.store_batch(self._w, self.txn, self._prepared(items))
        self._changes.append(change)
        return stored

    def store_unique(
        self,
        items: Items,
        *,
        near: float | None = None,
        not_a_use: Callable[[int, int], bool] | None = None,
    ) -> list[Stored]:
        """Store only the items memory does not hold yet (see
        :meth:`HolographicMemory.store_unique`); one :class:`Stored` per item, in order.

        Content already committed, or stored by an earlier step of this
        transaction, is found by its digest; near-duplicates are searched among
        the traces of the mirror (committed before this transaction).
        """
        if not isinstance(items, _storing.Prepared) and not items:
            return []
        _storing.check_near(near)
        prepared = self._prepared(items)
        out, change = _storing.store_unique(self._w, self.txn, prepared, near, not_a_use)
        self._changes.append(change)
        return out

    def retire(self, ids: Iterable[int]) -> list[int]:
        """Retire traces (see :meth:`HolographicMemory.retire`); the ids retired now, ascending."""
        wanted = sorted(set(check_ids(ids, "ids")))
        if not self._open:
            raise StoreUsageError("this MemoryTxn's transaction has ended")
        if not wanted:
            return []
        done, change = _lifecycle.retire(self.txn, wanted)
        self._changes.append(change)
        return done


def write(w: Writer, fn: Callable[[MemoryTxn], T]) -> T:
    """See :meth:`HolographicMemory.write`."""

    def run(txn: Txn) -> tuple[T, list[Change]]:
        tx = MemoryTxn(w, txn)  # a fresh one per run: a re-run starts with no changes
        try:
            return fn(tx), tx._changes
        finally:
            tx._open = False

    result, _ = w.commit(run, lambda _, out: w.apply(out[1]))
    return result
