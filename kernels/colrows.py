"""Unpack stored column rows into the memory mirror's arrays in one pass.

The store keeps every trace's mirror fields as fixed-width little-endian rows
(``sentient_core.store.colblocks``, 208 bytes). Opening a memory used to join every
stored block into one buffer, view it as a structured array and copy field by field:
three passes over the bytes and a fresh buffer the size of all of them.
:func:`unpack_rows` reads a run of rows (a small staging buffer the caller refills
block by block) and writes each field straight to its array, and the dominant primes
to a flat list, as the mirror's prime index wants them.

The row layout is fixed here by byte offset and checked against the store's dtype by
the wrapper's caller (tests compare with the structured-array path).
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit

__all__ = ["ROW_BYTES", "unpack_rows"]

ROW_BYTES = 208
"""Bytes per stored row (``colblocks.DTYPE.itemsize``)."""

# 8-byte words of a row: id 0, created 1, last_access 2, strength 3, importance 4, smf 10..25;
# bytes: retired 40, nprimes 41, wide 42; uint16 slots: primes 32..39.
_W_ID, _W_CREATED, _W_LAST, _W_STRENGTH, _W_IMPORTANCE, _W_SMF = 0, 1, 2, 3, 4, 10
_B_RETIRED, _B_NPRIMES, _B_WIDE = 40, 41, 42
_H_PRIMES = 32
_SLOT = 8
_AXES = 16


@jit()
def _unpack(raw, f64, i64, u16, first, row_id, valid, times, smf, counts, primes, at):
    """Rows of ``raw`` (m, 208) → rows ``first .. first + m - 1`` of the arrays.

    ``times`` holds four float64 columns (created, last access, strength, importance);
    the primes go to ``primes[at:]``. Returns the new ``at``, or -1 for a row without a
    trace (id < 0), -2 for a row whose primes are kept in its record (``wide``), -3 for
    a prime count above the slots, -4 if ``primes`` has no room.
    """
    m = raw.shape[0]
    created, last_access, strength, importance = times
    for i in range(m):
        r = first + i
        rid = i64[i, _W_ID]
        if rid < 0:
            return -1
        if raw[i, _B_WIDE] != 0:
            return -2
        c = np.int64(raw[i, _B_NPRIMES])
        if c > _SLOT:
            return -3
        if at + c > primes.size:
            return -4
        row_id[r] = rid
        valid[r] = 0 if raw[i, _B_RETIRED] != 0 else 1
        created[r] = f64[i, _W_CREATED]
        last_access[r] = f64[i, _W_LAST]
        strength[r] = f64[i, _W_STRENGTH]
        importance[r] = f64[i, _W_IMPORTANCE]
        for a in range(_AXES):
            smf[r, a] = f64[i, _W_SMF + a]
        counts[r] = c
        for j in range(c):
            primes[at + j] = u16[i, _H_PRIMES + j]
        at += c
    return at


_ERRORS = {
    -1: "a stored row has no trace (id < 0)",
    -2: "a stored row keeps its primes in its record (wide)",
    -3: "a stored row names more primes than its slots",
    -4: "primes has no room for the rows' primes",
}


def unpack_rows(
    raw: np.ndarray,
    first: int,
    row_id: np.ndarray,
    valid: np.ndarray,
    times: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    smf: np.ndarray,
    counts: np.ndarray,
    primes: np.ndarray,
    at: int,
) -> int:
    """Write ``m`` stored rows into rows ``first .. first + m - 1`` of the outputs.

    Parameters
    ----------
    raw : numpy.ndarray
        uint8 (m, 208), C-contiguous, 8-byte aligned: stored rows back to back.
    first : int
        Row of ``raw[0]``.
    row_id : numpy.ndarray
        int64 (R,): each row's trace id.
    valid : numpy.ndarray
        uint8 (R,): 0 for a retired trace, else 1.
    times : tuple of numpy.ndarray
        float64 (R,) each: created, last access, strength, importance.
    smf : numpy.ndarray
        float64 (R, 16).
    counts : numpy.ndarray
        int64 (R,): the number of primes of each row.
    primes : numpy.ndarray
        int64 (P,): the rows' primes, in row order, from ``at`` on.
    at : int
        Where the first row's primes go.

    Returns
    -------
    int
        Where the next row's primes go.

    Raises
    ------
    ValueError
        A bad argument, or a row the caller must read another way (the message says
        which: no trace, primes kept in the record).
    """
    raw = check_array("raw", raw, dtype=np.uint8, ndim=2)
    if raw.shape[1] != ROW_BYTES:
        raise ValueError(f"raw must have {ROW_BYTES} bytes a row, got {raw.shape[1]}")
    if raw.ctypes.data % 8:
        raise ValueError("raw must be 8-byte aligned")
    check_array("row_id", row_id, dtype=np.int64, ndim=1, finite=False, writeable=True)
    rows = row_id.shape[0]
    check_array("valid", valid, dtype=np.uint8, shape=(rows,), finite=False, writeable=True)
    if len(times) != 4:
        raise ValueError(f"times must hold 4 arrays, got {len(times)}")
    names = ("created", "last_access", "strength", "importance")
    for name, column in zip(names, times, strict=True):
        check_array(name, column, dtype=np.float64, shape=(rows,), finite=False, writeable=True)
    check_array("smf", smf, dtype=np.float64, shape=(rows, _AXES), finite=False, writeable=True)
    check_array("counts", counts, dtype=np.int64, shape=(rows,), finite=False, writeable=True)
    check_array("primes", primes, dtype=np.int64, ndim=1, finite=False, writeable=True)
    if not 0 <= first <= rows - raw.shape[0]:
        raise ValueError(f"rows {first}..{first + raw.shape[0]} do not fit {rows} rows")
    if not 0 <= at <= primes.size:
        raise ValueError(f"at must be in [0, {primes.size}], got {at}")
    flat = raw.reshape(-1)
    m = raw.shape[0]
    done = _unpack(
        raw,
        flat.view(np.float64).reshape(m, ROW_BYTES // 8),
        flat.view(np.int64).reshape(m, ROW_BYTES // 8),
        flat.view(np.uint16).reshape(m, ROW_BYTES // 2),
        first,
        row_id,
        valid,
        tuple(times),
        smf,
        counts,
        primes,
        at,
    )
    if done < 0:
        raise ValueError(_ERRORS[done])
    return done


def _warmup() -> None:
    raw = np.zeros((2, ROW_BYTES), dtype=np.uint8)
    times = (np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2))
    unpack_rows(
        raw,
        0,
        np.zeros(2, dtype=np.int64),
        np.zeros(2, dtype=np.uint8),
        times,
        np.zeros((2, _AXES)),
        np.zeros(2, dtype=np.int64),
        np.zeros(16, dtype=np.int64),
        0,
    )
