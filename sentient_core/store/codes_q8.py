"""The code rows' int8 copy on disk: exact cosine top-k over a quarter of the bytes.

A store keeps it once a memory asked for compact codes on a writable open
(``HolographicMemory(store, compact_codes=True)``): :func:`enable` quantises every
stored row once (:func:`sentient_kernels.quantized.quantise`) and sets :data:`MARK`
in ``meta``; from then on every append, by any process, quantises its rows and
writes them in the same transaction as the float32 rows
(:func:`sentient_core.store.codes.append_rows`), so the copy always holds exactly
the stored rows and a reader maps it instead of quantising at its first recall.

Four files of fixed-width rows beside ``codes.f32``, the arrays of
:class:`~sentient_kernels.quantized.QuantisedCodes`: ``codes.q8`` (int8,
``code_dim`` a row), ``codes.q8.scale``, ``codes.q8.bound`` and ``codes.q8.norm``
(float32). Written and committed like the float32 rows
(:mod:`sentient_core.store.codefile`: into the files first, LMDB's row count the
commit point).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store.codefile import CodeFile

if TYPE_CHECKING:
    from sentient_core.store.txn import StoreHandle, Txn
    from sentient_kernels.quantized import QuantisedCodes

# The kernels (numba) are imported where they are used: opening a store does not need them.

__all__ = ["MARK", "NAMES", "Q8Files", "close", "enable", "enabled", "files", "problems"]

MARK = b"codes_q8"
"""Key in ``meta`` present once the store keeps the int8 copy."""

NAMES = ("codes.q8", "codes.q8.scale", "codes.q8.bound", "codes.q8.norm")
"""The copy's files, in the order of :class:`~sentient_kernels.quantized.QuantisedCodes`."""

_CHUNK = 65536  # rows quantised at a time when the copy is first made


class Q8Files:
    """The four files of a store's int8 copy."""

    def __init__(self, store: StoreHandle, writable: bool) -> None:
        dim = store.code_dim
        self.files = (
            CodeFile(store.path, dim, writable=writable, name=NAMES[0], dtype=np.int8),
            *(CodeFile(store.path, 1, writable=writable, name=name) for name in NAMES[1:]),
        )

    def write(self, first: int, q: QuantisedCodes, *, durable: bool) -> None:
        """Write the quantised rows from row ``first`` on."""
        for f, part in zip(self.files, q, strict=True):
            f.write(first, np.ascontiguousarray(part).reshape(part.shape[0], -1), durable=durable)

    def view(self, n: int) -> QuantisedCodes:
        """Rows ``[0, n)`` mapped (no copy)."""
        from sentient_kernels.quantized import QuantisedCodes

        codes, *rest = (f.rows(n) for f in self.files)
        return QuantisedCodes(codes, *(a.reshape(-1) for a in rest))

    def stored_rows(self) -> int:
        """Whole rows every file holds."""
        return min(f.stored_rows() for f in self.files)

    def close(self) -> None:
        for f in self.files:
            f.close()


def enabled(txn: Txn) -> bool:
    """Whether the store keeps the int8 copy (of every row, as of ``txn``)."""
    return txn.get("meta", MARK) is not None


_OPEN: weakref.WeakKeyDictionary[StoreHandle, Q8Files] = weakref.WeakKeyDictionary()


def files(store: StoreHandle) -> Q8Files:
    """The store's int8 files (opened once per store object; :func:`close` closes them)."""
    q8 = _OPEN.get(store)
    if q8 is None:
        q8 = _OPEN[store] = Q8Files(store, writable=not store.readonly)
    return q8


def close(store: StoreHandle) -> None:
    """Close the store's int8 files, if they were opened."""
    q8 = _OPEN.pop(store, None)
    if q8 is not None:
        q8.close()


def enable(txn: Txn) -> int:
    """Make the int8 copy of every stored row and mark the store as keeping it (a write
    transaction; nothing when it already does). Returns the rows quantised."""
    from sentient_kernels.quantized import quantise

    if enabled(txn):
        return 0
    store = txn.store
    code_file = store.code_file
    n = txn.counters().row_count
    q8 = files(store)
    if n:
        assert code_file is not None  # a writable store has schema 2
        rows = code_file.rows(n)
        for start in range(0, n, _CHUNK):
            q8.write(
                start, quantise(np.ascontiguousarray(rows[start : start + _CHUNK])), durable=False
            )
        if store.durable:
            for f in q8.files:
                f.sync()
    txn.put("meta", MARK, b"\x01")
    return n


def problems(txn: Txn) -> list[str]:
    """What is wrong with the int8 copy: files shorter than the rows, or rows that are not
    the quantisation of the stored float32 rows (nothing when the store keeps none)."""
    from sentient_kernels.quantized import quantise

    store = txn.store
    if not enabled(txn) or store.code_file is None:
        return []
    n = txn.counters().row_count
    q8 = files(store)
    have = q8.stored_rows()
    if have < n:
        return [f"codes: the int8 copy holds {have} rows; the counters say {n}"]
    rows, held = store.code_file.rows(n), q8.view(n)
    for start in range(0, n, _CHUNK):
        want = quantise(np.ascontiguousarray(rows[start : start + _CHUNK]))
        for name, got, exp in zip(NAMES, held, want, strict=True):
            part = got[start : start + _CHUNK]
            if not np.array_equal(part, exp):
                bad = start + int(
                    np.flatnonzero((part != exp).reshape(part.shape[0], -1).any(axis=1))[0]
                )
                return [f"codes: row {bad} of {name} is not the quantisation of its float32 row"]
    return []
