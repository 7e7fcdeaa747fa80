"""Code rows: fixed-length float32 vectors kept in contiguous blocks.

Row ``r`` lives in block ``r // block_rows`` at position ``r % block_rows``.
Each block is ONE LMDB value (key: 8-byte big-endian block number) holding
its rows back to back, C order, native little-endian float32. Every block
except the last is full; appending rewrites the partially filled last block
and adds new ones.

Reading therefore costs one copy per block and no per-row Python work: with a
``buffers=True`` read transaction (the default of :meth:`Store.read`) a block
is a memoryview into the map, and :func:`iter_blocks` hands it out as a numpy
view without copying at all (valid only inside the transaction).

The number of rows is ``Counters.row_count`` in ``meta``, updated by
:func:`append_rows` in the same transaction as the blocks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import BLOCK_ROWS, key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "BLOCK_ROWS",
    "append_rows",
    "iter_blocks",
    "read_all",
    "read_row",
    "read_rows",
    "row_count",
    "set_row",
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
    dim, per_block = store.code_dim, store.block_rows
    db = store.db("codes")
    put = txn.raw.put
    block, offset = divmod(first, per_block)
    done = 0
    if offset:
        key = u64_key(block)
        old = _block_array(txn.raw.get(key, db=db), dim, block, txn)
        if old.shape[0] != offset:
            raise CorruptRecordError(
                f"code block {block} holds {old.shape[0]} rows but the counters say {offset};"
                " run check_integrity"
            )
        done = min(per_block - offset, n)
        merged = np.empty((offset + done, dim), dtype=_F32)
        merged[:offset] = old
        merged[offset:] = rows[:done]
        put(key, merged.data, db=db)
        block += 1
    while done < n:
        # Row slices of a C-contiguous array are contiguous: handed to LMDB as-is.
        if not put(u64_key(block), rows[done : done + per_block].data, db=db, append=True):
            raise CorruptRecordError(
                f"code block {block} already exists although the counters end before it;"
                " run check_integrity"
            )
        done += per_block
        block += 1
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

    With a ``buffers=True`` transaction each block is a read-only view into
    the map (zero copy), valid only until the transaction ends.
    """
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


def set_row(txn: Txn, row: int, vec: np.ndarray) -> None:
    """Overwrite row ``row`` (which must exist) with ``vec`` (shape (code_dim,), float32)."""
    total = row_count(txn)
    if not 0 <= row < total:
        raise IndexError(f"row {row} out of range for {total} rows")
    if not isinstance(vec, np.ndarray) or vec.ndim != 1:
        raise ArgumentError("vec must be a 1-dimensional numpy array")
    vec2 = _check_rows(txn, vec.reshape(1, -1), "vec")
    per_block, dim = txn.store.block_rows, txn.store.code_dim
    block, offset = divmod(row, per_block)
    db = txn.store.db("codes")
    key = u64_key(block)
    rows = _block_array(txn.raw.get(key, db=db), dim, block, txn).copy()
    rows[offset] = vec2[0]
    txn.raw.put(key, rows.data, db=db)
