"""The in-RAM mirror of the memory: arrays by code row, and the prime index.

:class:`Mirror` holds what recall needs, indexed by code row: the code matrix
(one contiguous float32 array: a view of the store's mapped code file,
:mod:`sentient_core.store.codefile`, or for a schema-1 store opened read-only a
copy), a ``valid`` mask (uint8;
0 for retired traces and rows without a trace), row → trace id, and per row the
SMF orientation, ``created``, ``last_access``, ``strength``, ``importance`` and
the length in tokens (``doc_len``, for BM25; ``lex_total`` sums it over the
active rows).
:class:`PrimeIndex` maps each prime to the ascending rows of the traces whose
dominant primes include it (retired rows stay; lookups filter with the mask).

:func:`load` builds both from one read transaction (the codes mapped, not read;
the column blocks unpacked straight into the arrays by
:func:`sentient_kernels.colrows.unpack_rows`, or for an older store the records
decoded in bulk by :mod:`sentient_core.store.columns`);
the :class:`~sentient_core.memory.writer.Writer` appends the rows committed
since (:meth:`Mirror.with_room`, :meth:`Mirror.put`, :meth:`PrimeIndex.add`). Rows ``[0, n)`` of a mirror
are published: appends write rows beyond ``n`` first and publish the new ``n``
last (or return a grown mirror), so a concurrent reader never sees a half-written row.

Growth without a copy: every array is a view of an anonymous memory mapping that
reserves :data:`RESERVE_FACTOR` times the rows it starts with (address space only,
``MAP_NORESERVE``: a page costs memory once a row on it is written). Growing within
the reservation makes longer views of the same memory (:meth:`Mirror.with_room`); a
reader keeps its shorter views, valid because the mapping is never unmapped while a
view holds it. Only outgrowing the reservation copies, into a new one of
:data:`RESERVE_FACTOR` times the rows, so a memory growing to ten million traces never
holds two copies of its codes but once per reservation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store import codes as store_codes
from sentient_core.store import colblocks, colfile, prime_snapshot
from sentient_core.store.codefile import MAP_NORESERVE
from sentient_core.store.columns import TraceColumns, iter_chunks
from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import SMF_AXES
from sentient_kernels import colrows
from sentient_kernels.postings import bucket_rows, group_rows

if TYPE_CHECKING:
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = ["Mirror", "Postings", "PrimeIndex", "load"]

MIN_CAPACITY = 1024
DIRTY_UNMAPPED = 0.5
"""Share of a column checkpoint's rows changed since it was taken above which an open
unpacks every block instead of mapping it (store/colfile.py)."""
RESERVE_FACTOR = 8
"""Rows of address space a mirror reserves per row it is created with."""

# (name, row shape, dtype, fill of a new row) of every per-row array.
_ARRAYS: tuple[tuple[str, tuple[int, ...], str, float], ...] = (
    ("valid", (), "uint8", 0),
    ("row_id", (), "int64", -1),
    ("smf", (SMF_AXES,), "float64", 0),
    ("created", (), "float64", 0),
    ("last_access", (), "float64", 0),
    ("strength", (), "float64", 0),
    ("importance", (), "float64", 0),
    ("doc_len", (), "int32", 0),
)


def _reserve(rows: int, row_shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A (rows, *row_shape) array over an anonymous mapping that commits no memory up
    front (zero pages until written)."""
    import mmap

    item = np.dtype(dtype).itemsize * int(np.prod(row_shape, dtype=np.int64))
    size = max(1, rows * item)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE
    buf = mmap.mmap(-1, size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(
        buf, dtype=dtype, count=rows * int(np.prod(row_shape, dtype=np.int64))
    ).reshape((rows, *row_shape))


class Mirror:
    """Arrays indexed by code row; rows ``[0, n)`` are meaningful (published)."""

    __slots__ = (
        "_dim",
        "_full",
        "_mapped",
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

    codes: np.ndarray
    valid: np.ndarray
    row_id: np.ndarray
    smf: np.ndarray
    created: np.ndarray
    last_access: np.ndarray
    strength: np.ndarray
    importance: np.ndarray
    doc_len: np.ndarray
    _full: dict[str, np.ndarray]

    def __init__(
        self,
        capacity: int,
        dim: int,
        *,
        reserve: int | None = None,
        mapped: bool = False,
        fill: bool = True,
    ) -> None:
        reserve = max(capacity, reserve if reserve is not None else RESERVE_FACTOR * capacity)
        self.n = 0
        self.active = 0
        self.lex_total = 0
        self._dim = dim
        # ``mapped``: the codes are a view of the store's code file (set by the caller,
        # re-viewed as rows are committed), not rows of a reservation of this mirror.
        self._mapped = mapped
        # The whole reservation of each array; the attributes are views of its first
        # ``capacity`` rows. A system that refuses the address space (strict overcommit)
        # gets a reservation of exactly the capacity: growing then copies, as before.
        try:
            self._full = self._reserved(reserve, dim, mapped)
        except (OSError, ValueError, OverflowError):
            self._full = self._reserved(capacity, dim, mapped)
        # ``fill``: the new rows' initial values (else the caller writes every row below
        # ``capacity``, e.g. mapping a checkpoint over the first ones: load_checkpoint).
        for name, _, _, value in _ARRAYS:
            if fill and value:
                self._full[name][:capacity] = value
        if mapped:
            self.codes = np.empty((0, dim), dtype=np.float32)
        self._views(capacity)

    @staticmethod
    def _reserved(rows: int, dim: int, mapped: bool) -> dict[str, np.ndarray]:
        full = {} if mapped else {"codes": _reserve(rows, (dim,), "float32")}
        for name, shape, dtype, _ in _ARRAYS:
            full[name] = _reserve(rows, shape, dtype)
        return full

    def _views(self, capacity: int) -> None:
        for name, full in self._full.items():
            setattr(self, name, full[:capacity])

    @property
    def mapped(self) -> bool:
        """Whether :attr:`codes` is a view of the store's code file."""
        return self._mapped

    @property
    def capacity(self) -> int:
        return self.valid.shape[0]

    @property
    def reserved(self) -> int:
        """Rows the mirror can grow to without a copy."""
        return self._full["valid"].shape[0]

    def with_room(self, rows: int) -> Mirror:
        """This mirror if ``rows`` rows fit, else a grown one: longer views of the same
        reserved memory (no copy) while the reservation holds them, a copy into a new
        reservation otherwise. A reader keeps the mirror it took. (A mapped mirror's
        codes are not copied: the caller gives it a longer view of the file.)"""
        if rows <= self.capacity:
            return self
        capacity = max(rows, self.capacity + self.capacity // 2, MIN_CAPACITY)
        if capacity > self.reserved:
            grown = Mirror(capacity, self.dim, mapped=self._mapped)
            n = self.n
            for name in self._full:
                getattr(grown, name)[:n] = getattr(self, name)[:n]
        else:
            grown = Mirror.__new__(Mirror)
            grown._full, grown._dim, grown._mapped = self._full, self._dim, self._mapped
            for name, _, _, fill in _ARRAYS:
                if fill:  # the new rows' initial value (their pages were never written)
                    self._full[name][self.capacity : capacity] = fill
            grown._views(capacity)
        if self._mapped:
            grown.codes = self.codes
        grown.n, grown.active, grown.lex_total = self.n, self.active, self.lex_total
        return grown

    @property
    def dim(self) -> int:
        return self._dim

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

    __slots__ = ("postings", "snapshot_rows")

    def __init__(self, postings: dict[int, Postings] | None = None) -> None:
        self.postings: dict[int, Postings] = {} if postings is None else postings
        self.snapshot_rows = 0  # rows read from the stored snapshot (0: none was used)

    @classmethod
    def build(cls, rows: np.ndarray, primes: np.ndarray) -> PrimeIndex:
        """Index of ``primes[i]`` occurring in row ``rows[i]``."""
        return cls({p: Postings(r) for p, r in _postings_from(rows, primes).items()})

    @classmethod
    def of_counts(cls, rows: np.ndarray, counts: np.ndarray, primes: np.ndarray) -> PrimeIndex:
        """Index of the ``counts[i]`` primes of row ``rows[i]`` (``primes`` flat, as
        :class:`~sentient_core.store.columns.TraceColumns` keeps them): one counting sort
        (:func:`sentient_kernels.postings.group_rows`) when the rows ascend."""
        if primes.size == 0:
            return cls()
        n_keys = int(primes.max()) + 1
        if n_keys > _DIRECT_KEYS or (rows.size > 1 and (rows[1:] < rows[:-1]).any()):
            return cls.build(np.repeat(rows, counts), primes)
        starts, out = group_rows(rows, counts, primes, n_keys)
        # Each list a view of ``out`` of exactly its length: extending one reallocates it.
        used = np.flatnonzero(starts[1:] > starts[:-1]).tolist()
        return cls({p: Postings(out[starts[p] : starts[p + 1]]) for p in used})

    @classmethod
    def of_snapshot(cls, starts: np.ndarray, out: np.ndarray) -> PrimeIndex:
        """Index whose prime ``p`` lists ``out[starts[p]:starts[p + 1]]`` (each list a view:
        extending one reallocates it alone)."""
        used = np.flatnonzero(starts[1:] > starts[:-1]).tolist()
        return cls({p: Postings(out[starts[p] : starts[p + 1]]) for p in used})

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, out)`` of :meth:`of_snapshot` for this index (keys in order)."""
        keys = sorted(self.postings)
        n_keys = keys[-1] + 1 if keys else 0
        sizes = np.zeros(n_keys, dtype=np.int64)
        lists = [self.postings[p].rows for p in keys]
        sizes[keys] = [r.shape[0] for r in lists]
        starts = np.zeros(n_keys + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        out = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
        return starts, out.astype(np.int64, copy=False)

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


_STAGE_ROWS = 128 * colblocks.BLOCK  # 26 KB a block, 3.3 MB staged: cache-sized passes


def _unpack_blocks(
    txn: Txn, mirror: Mirror, n: int, where: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Fill rows ``[0, n)`` of ``mirror`` from the stored column blocks, copied a few
    thousand rows at a time into one staging buffer and unpacked by one kernel call
    each (:func:`sentient_kernels.colrows.unpack_rows`); return each row's prime count
    and the flat primes. None when the store keeps no blocks or a row keeps its
    primes in its record (then the caller reads the other way)."""
    values = colblocks.raw_values(txn)
    if values is None:
        return None
    row_bytes = colrows.ROW_BYTES
    stage = np.empty((_STAGE_ROWS, row_bytes), dtype=np.uint8)
    counts = np.zeros(n, dtype=np.int64)
    primes = np.empty(n * colblocks.SLOT, dtype=np.int64)
    times = (mirror.created[:n], mirror.last_access[:n], mirror.strength[:n], mirror.importance[:n])
    row_id, valid, smf = mirror.row_id[:n], mirror.valid[:n], mirror.smf[:n]
    done = staged = at = 0

    def flush() -> int:
        return colrows.unpack_rows(
            stage[:staged], done, row_id, valid, times, smf, counts, primes, at
        )

    try:
        for value in values:
            if done + staged >= n:
                break
            size = len(value)
            if size % row_bytes:
                raise CorruptRecordError(
                    f"{where} columns: a block of {size} bytes is not whole rows;"
                    " run check_integrity"
                )
            take = min(size // row_bytes, n - done - staged)
            stage[staged : staged + take] = np.frombuffer(
                value, dtype=np.uint8, count=take * row_bytes
            ).reshape(take, row_bytes)
            staged += take
            if staged + colblocks.BLOCK > _STAGE_ROWS:
                at, done, staged = flush(), done + staged, 0
        if staged:
            at, done, staged = flush(), done + staged, 0
    except ValueError as exc:
        if "wide" in str(exc):
            mirror.row_id[:n] = -1  # start again from the records' primes
            return None
        raise CorruptRecordError(f"{where} columns: {exc}; run check_integrity") from exc
    if done < n:
        raise CorruptRecordError(
            f"{where} columns: rows missing for stored traces; run check_integrity"
        )
    mirror.active = int(np.count_nonzero(mirror.valid[:n]))
    return counts, primes[:at]


def load(
    txn: Txn, code_dim: int, store: Store | None = None, *, checkpoint: bool = True
) -> tuple[Mirror, PrimeIndex]:
    """Build the whole mirror and the prime index from one snapshot (``store``: the
    column checkpoint is mapped when it matches the snapshot, store/colfile.py, and a
    schema-1 store's codes are read through a snapshot of their own that returns
    buffers, saving a copy)."""
    where = str(txn.store.path)
    n = txn.counters().row_count
    code_file = store_codes.code_file(txn)
    ckpt = None
    if store is not None and checkpoint:
        ckpt = colfile.open_checkpoint(txn, store.path, store.meta.created, n)
        dirty = 0 if ckpt is None else colblocks.BLOCK * txn.entries(colblocks.DIRTY_DB)
        if ckpt is not None and dirty >= DIRTY_UNMAPPED * ckpt.rows:
            # Most of it changed since (a decay): rewriting mapped pages copies each one
            # first; unpacking every block into fresh memory is cheaper.
            ckpt.close()
            ckpt = None
    capacity = max(MIN_CAPACITY, n + n // 2)
    mirror = Mirror(capacity, code_dim, mapped=code_file is not None, fill=ckpt is None)
    if code_file is not None:
        mirror.codes = code_file.rows(n)  # mapped: no copy (store/codefile.py)
    elif store is None:
        store_codes.read_all(txn, out=mirror.codes)
    else:
        # Codes below row n never change, so a second (buffers=True) snapshot reads the
        # same rows straight from the map: one copy instead of two.
        with store.read(buffers=True) as view:
            store_codes.read_all(view, out=mirror.codes, rows=n)
    if ckpt is not None:
        assert store is not None
        try:
            index = _from_checkpoint(txn, store, mirror, ckpt, n)
        finally:
            ckpt.close()
        if index is not None:
            return mirror, index
        return load(txn, code_dim, store, checkpoint=False)  # a wide row: decode records
    # The raw column blocks when the store keeps them (unpacked straight into the
    # mirror), else a decode of every trace record.
    unpacked = _unpack_blocks(txn, mirror, n, where)
    if unpacked is not None:
        mirror.n = n
        counts, primes = unpacked
        return mirror, _prime_index(store, n, None, counts, primes)
    blocks = colblocks.load(txn, n)
    row_parts, count_parts, prime_parts = [], [], []
    for cols in [blocks] if blocks is not None else iter_chunks(txn):
        mirror.put(cols, n, where)
        row_parts.append(cols.rows)
        count_parts.append(cols.prime_counts)
        prime_parts.append(cols.primes)
    mirror.n = n

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    primes = joined(prime_parts)
    return mirror, _prime_index(store, n, joined(row_parts), joined(count_parts), primes)


def _runs(blocks: list[int]) -> list[tuple[int, int]]:
    """Ascending ``blocks`` as ``[first, stop)`` runs of consecutive numbers (one unpack
    each: after a decay every block is dirty, and one call reads them all)."""
    runs: list[tuple[int, int]] = []
    for b in blocks:
        if runs and runs[-1][1] == b:
            runs[-1] = (runs[-1][0], b + 1)
        else:
            runs.append((b, b + 1))
    return runs


def _from_checkpoint(
    txn: Txn, store: Store, mirror: Mirror, ckpt: colfile.Checkpoint, n: int
) -> PrimeIndex | None:
    """Fill rows ``[0, n)`` of ``mirror`` (made with ``fill=False``) from the column
    checkpoint (mapped over the arrays' first rows), the blocks changed below it since,
    and the blocks above it; return the prime index (the prime snapshot and the rows
    above it), or None when a row keeps its primes in its record."""
    r = ckpt.rows
    full = mirror._full
    for name, _, _ in colfile.COLUMNS:
        if not colfile.map_over(full[name], ckpt, name):
            colfile.read_into(full[name], ckpt, name)
    for name, _, _, value in _ARRAYS:
        if value:  # the rows above the checkpoint start as a new mirror's
            full[name][r : mirror.capacity] = value
    cols = {name: getattr(mirror, name) for name, _, _ in colfile.COLUMNS}
    for lo, hi in _runs(colblocks.dirty_blocks(txn)):  # changed since: read from LMDB
        lo, hi = lo * colblocks.BLOCK, min(hi * colblocks.BLOCK, r)
        if lo < hi and colfile.unpack(txn, lo, hi, cols) is None:
            return None
    snap = prime_snapshot.read(store.path, store.meta.created, n)
    snap_rows = 0 if snap is None else snap.rows
    start = min(r, snap_rows)  # the rows above both (their primes: the index's tail)
    counts = np.zeros(n - start, dtype=np.int64)
    primes = np.empty((n - start) * colblocks.SLOT, dtype=np.int64)
    got = colfile.unpack(txn, start, n, cols, (counts, primes))
    if got is None:
        return None
    mirror.n = n
    mirror.active = int(np.count_nonzero(mirror.valid[:n]))
    if snap is None:
        return PrimeIndex.of_counts(np.arange(n, dtype=np.int64), counts, primes[:got])
    index = PrimeIndex.of_snapshot(snap.starts, snap.out)
    index.snapshot_rows = snap_rows
    skip = snap_rows - start
    tail = primes[int(counts[:skip].sum()) : got]
    if tail.size:
        rows = np.repeat(np.arange(snap_rows, n, dtype=np.int64), counts[skip:])
        index.add(rows, tail)
    return index


def _prime_index(
    store: Store | None,
    n: int,
    rows: np.ndarray | None,
    counts: np.ndarray,
    primes: np.ndarray,
) -> PrimeIndex:
    """The prime index of rows ``[0, n)`` (``rows[i]`` names ``counts[i]`` of ``primes``;
    None: rows ``0 … n-1`` in order): the stored snapshot (store/prime_snapshot.py)
    and the rows above it, or one counting sort over every row."""
    snap = None if store is None else prime_snapshot.read(store.path, store.meta.created, n)
    if snap is None:
        every = np.arange(n, dtype=np.int64) if rows is None else rows
        return PrimeIndex.of_counts(every, counts, primes)
    index = PrimeIndex.of_snapshot(snap.starts, snap.out)
    r = index.snapshot_rows = snap.rows
    if rows is None:  # rows 0 … n-1 in order: the tail's entries follow the first r rows'
        tail_rows = np.repeat(np.arange(r, n, dtype=np.int64), counts[r:])
        tail = primes[int(counts[:r].sum()) :]
    else:
        entry_rows = np.repeat(rows, counts)
        above = entry_rows >= r
        order = np.argsort(entry_rows[above], kind="stable")
        tail_rows, tail = entry_rows[above][order], primes[above][order]
    if tail.size:
        index.add(tail_rows, tail)
    return index
