"""An int8 copy of the mirror's codes for cosine recall with the same exact answers.

With ``HolographicMemory(store, compact_codes=True)`` the cosine recall of one
query (``rank="cosine"``, or a code query) scans int8 codes and re-scores a
few candidates from the mirror's float32 rows
(:func:`sentient_kernels.quantized.exact_topk_quantised`): the hits, their
order and their scores are those of the float32 scan. Batched recall and the
lexical rankings keep the float32 kernels.

The copy is built lazily and grows with the mirror: a search quantises the
rows published since the last one (codes never change once written, so rows
already quantised stay valid; retirements only change the ``valid`` mask,
which is passed through). It adds a quarter of the float32 codes' memory in
RAM; the float32 rows are the store's mapped code file (schema 2,
:mod:`sentient_core.store.codefile`), page cache the OS may drop and read
again, of which a recall then touches only the re-scored candidates' pages.

A writable open with compact codes makes the store keep an int8 copy on disk
(:mod:`sentient_core.store.codes_q8`, written with every append from then on);
a memory of such a store maps it instead of quantising anything: no quantisation
at the first recall, and the int8 rows are page cache too.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from sentient_kernels import quantized

if TYPE_CHECKING:
    from sentient_core.store.codes_q8 import Q8Files

__all__ = ["CompactCodes"]

# Rows of room added at a time: growth copies the arrays, so not for every append.
_GROW_ROWS = 65536


class CompactCodes:
    """int8 codes of rows ``[0, n)`` of a memory's mirror: the store's int8 copy mapped
    when it keeps one (:mod:`sentient_core.store.codes_q8`), else quantised here and
    extended on demand."""

    def __init__(self, gather: quantized.Gather | None = None) -> None:
        # How full scans read their few candidates' float32 rows: from the store's code
        # file when it has one (pread: no mapped page faulted in), else by indexing.
        self.gather = gather
        self._lock = threading.Lock()
        self._q: quantized.QuantisedCodes | None = None
        self.n = 0
        self._stored: Q8Files | None = None

    @property
    def stored(self) -> bool:
        """Whether the rows come from the store's int8 copy."""
        return self._stored is not None

    def use_stored(self, q8: Q8Files) -> None:
        """Read the rows from the store's int8 copy from now on (it keeps every row)."""
        with self._lock:
            self._stored, self._q, self.n = q8, None, 0

    def rows(self, codes: np.ndarray, n: int) -> quantized.QuantisedCodes:
        """The quantised rows ``[0, n)`` of ``codes`` (quantising only the new ones)."""
        stored = self._stored
        if stored is not None:
            return stored.view(n)  # mapped, written with the float32 rows
        with self._lock:
            if n < self.n:  # a rebuilt, shorter mirror: start again
                self._q, self.n = None, 0
            if n > self.n:
                new = quantized.quantise(np.ascontiguousarray(codes[self.n : n]))
                q = self._q
                if q is None or q.codes.shape[0] < n:
                    room = max(
                        n, self.n + _GROW_ROWS, 0 if q is None else q.codes.shape[0] * 3 // 2
                    )
                    grown = quantized.QuantisedCodes(
                        np.empty((room, codes.shape[1]), dtype=np.int8),
                        np.empty(room, dtype=np.float32),
                        np.empty(room, dtype=np.float32),
                        np.empty(room, dtype=np.float32),
                    )
                    if q is not None:
                        for old, dst in zip(q, grown, strict=True):
                            dst[: self.n] = old[: self.n]
                    q = self._q = grown
                for part, dst in zip(new, q, strict=True):
                    dst[self.n : n] = part
                self.n = n
            assert self._q is not None
            # Views of the first n rows: a later growth makes new arrays, and
            # appends write only beyond n, so these stay as they are.
            return quantized.QuantisedCodes(*(a[:n] for a in self._q))

    def topk(
        self, codes: np.ndarray, n: int, query: np.ndarray, k: int, valid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k of ``query`` over unit rows ``codes[:n]`` (``valid[:n]`` masks).

        The same rows and scores as ``holographic.topk_cosine(codes[:n], query,
        k, normalized=True, valid=valid[:n])``.
        """
        q = self.rows(codes, n)
        return quantized.exact_topk_quantised(
            q, codes[:n], query, k, normalized=True, valid=valid[:n], gather=self.gather
        )

    def scan(self, codes: np.ndarray, n: int) -> quantized.CompactScan:
        """What a full scan of rows ``[0, n)`` needs from the int8 copy (lexical.search)."""
        return quantized.CompactScan(self.rows(codes, n), self.gather)
