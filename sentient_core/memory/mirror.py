"""The in-RAM mirror of the memory: arrays by code row, and the prime index.

:class:`Mirror` holds what recall needs, indexed by code row: the code matrix
(one contiguous float32 array, capacity grows ×1.5), a ``valid`` mask (uint8;
0 for retired traces and rows without a trace), row → trace id, and per row the
SMF orientation, ``created``, ``last_access``, ``strength``, ``importance`` and
the length in tokens (``doc_len``, for BM25; ``lex_total`` sums it over the
active rows).
:class:`PrimeIndex` maps each prime to the ascending rows of the traces whose
dominant primes include it (retired rows stay; lookups filter with the mask).

:func:`load` builds both from one read transaction (the code blocks in one copy
each, the trace columns decoded in bulk by :mod:`sentient_core.store.columns`);
the :class:`~sentient_core.memory.writer.Writer` appends the rows committed
since (:meth:`Mirror.with_room`, :meth:`Mirror.put`, :meth:`PrimeIndex.add`). Rows ``[0, n)`` of a mirror
are published: appends write rows beyond ``n`` first and publish the new ``n``
last (or return a grown copy), so a concurrent reader never sees a half-written row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store import codes as store_codes
from sentient_core.store import colblocks
from sentient_core.store.columns import TraceColumns, iter_chunks
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import SMF_AXES
from sentient_kernels.postings import bucket_rows

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["Mirror", "Postings", "PrimeIndex", "load"]

MIN_CAPACITY = 1024


class Mirror:
    """Arrays indexed by code row; rows ``[0, n)`` are meaningful (published)."""

    __slots__ = (
        "active",
        "codes",
        "created",
        "doc_len",
        "importance",
        "last_access",
        "lex_total",
        "n",
        "row_id",
        "smf",
        "strength",
        "valid",
    )

    def __init__(self, capacity: int, dim: int) -> None:
        self.n = 0
        self.active = 0
        self.codes = np.empty((capacity, dim), dtype=np.float32)
        self.valid = np.zeros(capacity, dtype=np.uint8)
        self.row_id = np.full(capacity, -1, dtype=np.int64)
        self.smf = np.zeros((capacity, SMF_AXES), dtype=np.float64)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.last_access = np.zeros(capacity, dtype=np.float64)
        self.strength = np.zeros(capacity, dtype=np.float64)
        self.importance = np.zeros(capacity, dtype=np.float64)
        self.doc_len = np.zeros(capacity, dtype=np.int32)
        self.lex_total = 0

    @property
    def capacity(self) -> int:
        return self.codes.shape[0]

    def with_room(self, rows: int) -> Mirror:
        """This mirror if ``rows`` rows fit, else a grown copy (never shared with readers)."""
        if rows <= self.capacity:
            return self
        grown = Mirror(max(rows, self.capacity + self.capacity // 2, MIN_CAPACITY), self.dim)
        n = self.n
        for name in ("codes", "valid", "row_id", "smf", "created", "last_access", "strength"):
            getattr(grown, name)[:n] = getattr(self, name)[:n]
        grown.importance[:n] = self.importance[:n]
        grown.doc_len[:n] = self.doc_len[:n]
        grown.n, grown.active, grown.lex_total = n, self.active, self.lex_total
        return grown

    @property
    def dim(self) -> int:
        return self.codes.shape[1]

    def mask(self, rows: list[int]) -> None:
        """Exclude ``rows`` from recall (their traces were retired)."""
        for row in rows:
            if self.valid[row]:
                self.valid[row] = 0
                self.active -= 1
                self.lex_total -= int(self.doc_len[row])

    def put(self, f: TraceColumns, n_rows: int, where: str) -> None:
        """Write the fields of traces whose rows are below ``n_rows`` (rows not yet published)."""
        rows = f.rows
        if rows.size == 0:
            return
        if int(rows.min()) < 0 or int(rows.max()) >= n_rows:
            bad = int(f.ids[np.argmax((rows < 0) | (rows >= n_rows))])
            raise CorruptRecordError(
                f"trace {bad} of the store at {where} claims a code row outside the"
                f" {n_rows} stored rows; run check_integrity"
            )
        first, last = int(rows[0]), int(rows[-1])
        at: slice | np.ndarray = rows
        if last - first + 1 == rows.size and (np.diff(rows) == 1).all():
            at = slice(first, last + 1)  # the usual case: consecutive rows, no gather
            clash = (self.row_id[at] != -1).any()
        else:
            clash = (self.row_id[rows] != -1).any() or np.unique(rows).size != rows.size
        if clash:
            raise CorruptRecordError(
                f"two traces of the store at {where} claim the same code row; run check_integrity"
            )
        self.row_id[at] = f.ids
        self.valid[at] = ~f.retired
        self.smf[at] = f.smf
        self.created[at] = f.created
        self.last_access[at] = f.last_access
        self.strength[at] = f.strength
        self.importance[at] = f.importance
        self.active += int(f.rows.size - np.count_nonzero(f.retired))


class Postings:
    """Rows of one prime, ascending; :attr:`rows` is always a consistent array."""

    __slots__ = ("_buf", "rows")

    def __init__(self, rows: np.ndarray) -> None:
        self._buf = rows
        self.rows = rows

    def extend(self, new: np.ndarray) -> None:
        n = self.rows.shape[0]
        need = n + new.shape[0]
        buf = self._buf
        if need > buf.shape[0]:
            buf = np.empty(max(need, 2 * buf.shape[0], 16), dtype=np.int64)
            buf[:n] = self.rows
        buf[n:need] = new
        self._buf = buf
        self.rows = buf[:need]


_DIRECT_KEYS = 1 << 22  # primes below this are bucketed by value (a 32 MB count table at most)


def _postings_from(rows: np.ndarray, primes: np.ndarray) -> dict[int, np.ndarray]:
    """Group ``rows`` by ``primes``: prime → ascending rows, each row once."""
    if primes.size == 0:
        return {}
    if rows.size > 1 and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")
        rows, primes = rows[order], primes[order]
    if int(primes.max()) < _DIRECT_KEYS:
        values = np.flatnonzero(np.bincount(primes))
        lookup = np.zeros(int(primes.max()) + 1, dtype=np.int64)
        lookup[values] = np.arange(values.size)
        keys = lookup[primes]
    else:
        values, keys = np.unique(primes, return_inverse=True)
    counts = np.bincount(keys, minlength=values.size)
    starts = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    out = np.empty(primes.size, dtype=np.int64)
    fill = bucket_rows(rows, keys.astype(np.int64), starts, out)
    return {
        int(p): out[starts[j] : starts[j] + fill[j]].copy() for j, p in enumerate(values.tolist())
    }


class PrimeIndex:
    """Prime → :class:`Postings` (the ascending rows of the traces naming that prime)."""

    __slots__ = ("postings",)

    def __init__(self, postings: dict[int, Postings] | None = None) -> None:
        self.postings: dict[int, Postings] = {} if postings is None else postings

    @classmethod
    def build(cls, rows: np.ndarray, primes: np.ndarray) -> PrimeIndex:
        """Index of ``primes[i]`` occurring in row ``rows[i]``."""
        return cls({p: Postings(r) for p, r in _postings_from(rows, primes).items()})

    def add(self, rows: np.ndarray, primes: np.ndarray) -> None:
        """Add occurrences in rows above every row indexed so far (lock held by the caller)."""
        for p, r in _postings_from(rows, primes).items():
            post = self.postings.get(p)
            if post is None:
                self.postings[p] = Postings(r)
            else:
                post.extend(r)

    def rows_of(self, primes: list[int]) -> list[np.ndarray]:
        """The posting arrays of those of ``primes`` that occur at all."""
        return [post.rows for q in primes if (post := self.postings.get(q)) is not None]


def load(txn: Txn, code_dim: int) -> tuple[Mirror, PrimeIndex]:
    """Build the whole mirror and the prime index from one snapshot."""
    where = str(txn.store.path)
    n = txn.counters().row_count
    mirror = Mirror(max(MIN_CAPACITY, n + n // 2), code_dim)
    store_codes.read_all(txn, out=mirror.codes)
    # The raw column blocks when the store keeps them (one frombuffer), else a decode of
    # every trace record.
    blocks = colblocks.load(txn, n)
    row_parts, prime_parts = [], []
    for cols in [blocks] if blocks is not None else iter_chunks(txn):
        mirror.put(cols, n, where)
        row_parts.append(np.repeat(cols.rows, cols.prime_counts))
        prime_parts.append(cols.primes)
    mirror.n = n
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
    primes = np.concatenate(prime_parts) if prime_parts else np.zeros(0, np.int64)
    return mirror, PrimeIndex.build(rows, primes)
