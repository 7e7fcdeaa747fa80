"""Code rows: fixed-length float32 vectors, appended, never changed.

Where they live depends on the store's schema version:

* **2** (every store this code creates or has opened writable): the flat file
  ``codes.f32`` beside ``data.mdb`` (:mod:`sentient_core.store.codefile`); a reader
  maps it (:attr:`Store.code_file`) instead of copying it.
* **1** (an older store opened read-only): the ``codes`` sub-database, row ``r`` in
  block ``r // block_rows`` at position ``r % block_rows``, each block ONE LMDB value
  (key: 8-byte big-endian block number) holding its rows back to back, C order,
  native little-endian float32; every block except the last is full. With a
  ``buffers=True`` read transaction a block is a memoryview into the map, handed out
  by :func:`iter_blocks` as a numpy view (valid only inside the transaction).

Either way the number of rows is ``Counters.row_count`` in ``meta``, raised by
:func:`append_rows` in the same transaction that writes the rows; rows below it
never change, so a later snapshot reads the same rows below an earlier count.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.store import codes_q8
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import (
    BLOCK_ROWS,
    META_KEY,
    META_PEEK,
    SCHEMA_VERSION,
    key_u64,
    u64_key,
)

if TYPE_CHECKING:
    from sentient_core.store.codefile import CodeFile
    from sentient_core.store.txn import Txn

__all__ = [
    "BLOCK_ROWS",
    "append_rows",
    "code_file",
    "iter_blocks",
    "iter_stored_blocks",
    "migrate",
    "read_all",
    "read_row",
    "read_rows",
    "row_count",
]


if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("sentient_core.store stores native float32 and needs a little-endian machine")

_F32 = np.dtype(np.float32)


def _check_rows(txn: Txn, rows: object, name: str = "rows") -> np.ndarray:
    dim = txn.store.code_dim
    if not isinstance(rows, np.ndarray) or rows.dtype != _F32:
        got = rows.dtype if isinstance(rows, np.ndarray) else type(rows).__name__
        raise ArgumentTypeError(f"{name} must be a float32 numpy array, got {got}")
    if rows.ndim != 2 or rows.shape[1] != dim:
        raise ArgumentError(f"{name} must have shape (n, {dim}), got {rows.shape}")
    if rows.size and not np.isfinite(rows).all():
        raise ArgumentError(f"{name} contains non-finite values (NaN or inf)")
    return np.ascontiguousarray(rows)


def code_file(txn: Txn) -> CodeFile | None:
    """The file ``txn``'s rows are in, or None when they are in the ``codes`` blocks.

    A schema-1 store opened read-only reads its blocks; when another process has
    migrated it since (the snapshot's header says 2 or 3), the file is adopted."""
    store = txn.store
    if store.code_file is None:
        raw = txn.raw.get(META_KEY, db=store.db("meta"))
        if raw is not None and META_PEEK.decode(raw).schema_version in (2, SCHEMA_VERSION):
            return store.adopt_code_file()
    return store.code_file


def row_count(txn: Txn) -> int:
    """Number of code rows as of ``txn``."""
    return txn.counters().row_count


def append_rows(txn: Txn, rows: np.ndarray) -> int:
    """Append rows and return the index of the first one.

    Parameters
    ----------
    txn : Txn
        A write transaction.
    rows : ndarray, shape (n, code_dim), float32
        Finite values; ``n`` may be 0.

    Returns
    -------
    int
        Row index of ``rows[0]`` (the row count before the call).
    """
    rows = _check_rows(txn, rows)
    counters = txn.counters()
    first = counters.row_count
    n = rows.shape[0]
    if n == 0:
        return first
    store = txn.store
    if store.code_file is None:  # only a read-only open leaves a schema-1 store as it is
        raise StoreUsageError(f"the store at {store.path} keeps schema-1 code blocks: read-only")
    # Into the file before LMDB commits the count (codefile.py: the commit point).
    store.code_file.write(first, rows, durable=store.durable)
    if codes_q8.enabled(txn):  # the int8 copy follows in the same transaction
        from sentient_kernels.quantized import quantise

        codes_q8.files(store).write(first, quantise(rows), durable=store.durable)
    txn.set_counters(msgspec.structs.replace(counters, row_count=first + n))
    return first


def _block_array(value: bytes | memoryview | None, dim: int, block: int, txn: Txn) -> np.ndarray:
    """View a stored block as an (r, dim) array (no copy)."""
    if value is None:
        raise CorruptRecordError(
            f"code block {block} is missing from the store at {txn.store.path}"
        )
    if len(value) % (4 * dim):
        raise CorruptRecordError(
            f"code block {block} has {len(value)} bytes, not a multiple of a {dim}-float row"
        )
    return np.frombuffer(value, dtype=_F32).reshape(-1, dim)


def iter_blocks(txn: Txn) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, block)`` for every block, in row order.

    Blocks of a schema-1 store are read-only views into LMDB's map with a
    ``buffers=True`` transaction (zero copy), valid only until the transaction
    ends; a schema-2 store's are ``block_rows`` rows of the mapped file.
    """
    per_block = txn.store.block_rows
    mapped_file = code_file(txn)
    if mapped_file is not None:
        n = row_count(txn)
        mapped = mapped_file.rows(n)
        for start in range(0, n, per_block):
            yield start, mapped[start : start + per_block]
        return
    yield from iter_stored_blocks(txn)


def iter_stored_blocks(txn: Txn) -> Iterator[tuple[int, np.ndarray]]:
    """The blocks of the ``codes`` sub-database (schema 1), as :func:`iter_blocks`."""
    dim, per_block = txn.store.code_dim, txn.store.block_rows
    cursor = txn.raw.cursor(db=txn.store.db("codes"))
    for key, value in cursor.iternext():
        block = key_u64(key)
        yield block * per_block, _block_array(value, dim, block, txn)


def read_all(txn: Txn, out: np.ndarray | None = None, rows: int | None = None) -> np.ndarray:
    """All code rows (or the first ``rows``) as one (M, code_dim) float32 array.

    Parameters
    ----------
    txn : Txn
        Any transaction; ``buffers=True`` saves one copy per block.
    out : ndarray, optional
        Preallocated C-contiguous float32 array with at least M rows to
        fill (e.g. reused between calls); the first M rows are returned.
    rows : int, optional
        Read only the first ``rows`` rows (at most the stored count): rows never
        change once written, so a later snapshot than the caller's gives the
        same rows below its count.

    Returns
    -------
    ndarray, shape (M, code_dim), float32
        A copy that outlives the transaction.
    """
    stored = row_count(txn)
    if rows is not None and not 0 <= rows <= stored:
        raise StoreUsageError(f"rows must be in [0, {stored}] (the stored rows), got {rows}")
    total = stored if rows is None else rows
    dim = txn.store.code_dim
    if out is None:
        out = np.empty((total, dim), dtype=_F32)
    elif (
        out.dtype != _F32
        or out.ndim != 2
        or out.shape[1] != dim
        or out.shape[0] < total
        or not out.flags.c_contiguous
    ):
        raise StoreUsageError(
            f"out must be a C-contiguous float32 array of shape (>= {total}, {dim}),"
            f" got {out.dtype} {out.shape}"
        )
    filled = 0
    for start, block in iter_blocks(txn):
        if filled == total:
            break  # the first ``rows`` rows are in
        stop = start + block.shape[0]
        if start != filled or stop > stored:
            raise CorruptRecordError(
                f"code blocks of the store at {txn.store.path} disagree with the row count"
                f" {stored} (block at row {start}); run check_integrity"
            )
        stop = min(stop, total)
        out[start:stop] = block[: stop - start]
        filled = stop
    if filled != total:
        raise CorruptRecordError(
            f"code blocks of the store at {txn.store.path} hold {filled} rows; the counters"
            f" say {total}; run check_integrity"
        )
    return out[:total]


def read_rows(txn: Txn, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` as a new (stop - start, code_dim) float32 array."""
    total = row_count(txn)
    if not 0 <= start <= stop <= total:
        raise IndexError(f"rows {start}:{stop} out of range for {total} rows")
    dim, per_block = txn.store.code_dim, txn.store.block_rows
    mapped_file = code_file(txn)
    if mapped_file is not None:
        return mapped_file.rows(stop)[start:stop].copy()
    out = np.empty((stop - start, dim), dtype=_F32)
    if stop == start:
        return out
    db = txn.store.db("codes")
    for block in range(start // per_block, (stop - 1) // per_block + 1):
        rows = _block_array(txn.raw.get(u64_key(block), db=db), dim, block, txn)
        base = block * per_block
        lo, hi = max(start, base), min(stop, base + rows.shape[0])
        out[lo - start : hi - start] = rows[lo - base : hi - base]
    return out


def read_row(txn: Txn, row: int) -> np.ndarray:
    """One row as a new (code_dim,) float32 array."""
    return read_rows(txn, row, row + 1)[0]


def migrate(txn: Txn, code_file: CodeFile, durable: bool) -> int:
    """Copy every row of the ``codes`` sub-database into ``code_file`` (schema 1 → 2).

    Runs inside the write transaction that then empties the sub-database and raises
    the schema version; returns the rows copied.
    """
    n = 0
    for start, block in iter_stored_blocks(txn):
        if start != n:
            raise CorruptRecordError(
                f"code blocks of the store at {txn.store.path} skip rows {n}..{start};"
                " run check_integrity"
            )
        code_file.write(start, np.ascontiguousarray(block), durable=False)
        n = start + block.shape[0]
    if n != row_count(txn):
        raise CorruptRecordError(
            f"code blocks of the store at {txn.store.path} hold {n} rows; the counters say"
            f" {row_count(txn)}; run check_integrity"
        )
    if durable and n:
        code_file.sync()
    return n
