"""Posting lists: group row numbers by key in one counting-sort pass.

A memory keeps, for every prime, the ascending code rows of the traces that
name it. :func:`bucket_rows` builds all those lists at once from flat
``(row, key)`` pairs: the caller sizes the buckets (``starts``, from a
``bincount`` of the keys) and the kernel drops it into place, keeping rows
ascending inside a bucket and a row once per key.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit

__all__ = ["bucket_rows", "group_rows"]


@jit()
def _bucket_rows(rows, keys, starts, out, fill):
    """Counting sort of ``rows`` (ascending) into buckets ``keys``; drops repeats.

    ``starts[k]`` is where bucket ``k`` begins in ``out``; ``fill`` (B,) must
    be zero and receives each bucket's length. Returns 0, or (checking as it
    goes, so ``out`` may be partly written) 1 if ``starts`` decreases or leaves
    ``out``, 2 if a key is outside [0, B), 3 if the rows are not ascending, 4
    if a bucket overflows into the next one.
    """
    n_buckets = starts.size - 1
    if starts[0] < 0 or starts[n_buckets] > out.size:
        return 1
    for k in range(n_buckets):
        if starts[k + 1] < starts[k]:
            return 1
    for i in range(rows.size):
        if i > 0 and rows[i] < rows[i - 1]:
            return 3
        k = keys[i]
        if k < 0 or k >= n_buckets:
            return 2
        pos = starts[k] + fill[k]
        # Rows ascend, so a row repeated for one key is the bucket's last entry.
        if fill[k] > 0 and out[pos - 1] == rows[i]:
            continue
        if pos >= starts[k + 1]:
            return 4
        out[pos] = rows[i]
        fill[k] += 1
    return 0


_ERRORS = {
    1: "starts must be non-decreasing with starts[0] >= 0 and starts[-1] <= len(out)",
    2: "keys must lie in [0, len(starts) - 1)",
    3: "rows must be ascending (non-decreasing)",
    4: "starts leaves too little room: a bucket holds more distinct rows than its slot",
}


def bucket_rows(
    rows: np.ndarray, keys: np.ndarray, starts: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """Group ascending ``rows`` by ``keys`` into ``out``, each row once per key.

    Bucket ``k`` is written to ``out[starts[k]:starts[k] + fill[k]]``: its rows
    in ascending order, a row repeated for the same key kept once.

    Parameters
    ----------
    rows : numpy.ndarray
        int64 (n,), ascending (non-decreasing).
    keys : numpy.ndarray
        int64 (n,), bucket of each row, in [0, B).
    starts : numpy.ndarray
        int64 (B + 1,), non-decreasing, within ``out``: bucket ``k`` may use
        ``out[starts[k]:starts[k + 1]]`` (e.g. the cumulative sum of
        ``np.bincount(keys, minlength=B)`` after a leading 0).
    out : numpy.ndarray
        int64 (≥ starts[B],), writeable; receives the buckets.

    Returns
    -------
    numpy.ndarray
        int64 (B,): ``fill``, the number of rows in each bucket.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it). Order, key range and
        bucket room are checked during the pass, so ``out`` may have been
        partly written when a ValueError is raised.
    """
    rows = check_array("rows", rows, dtype=np.int64, ndim=1)
    check_array("keys", keys, dtype=np.int64, shape=rows.shape)
    starts = check_array("starts", starts, dtype=np.int64, ndim=1, min_rows=1)
    check_array("out", out, dtype=np.int64, ndim=1)
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    fill = np.zeros(starts.shape[0] - 1, dtype=np.int64)
    status = _bucket_rows(rows, keys, starts, out, fill)
    if status:
        raise ValueError(_ERRORS[status])
    return fill


@jit()
def _group_rows(rows, counts, keys, n_keys, starts, out):
    """Counting sort of the entries of ascending ``rows`` (``counts[i]`` keys each, in
    ``keys``) by key; a key repeated within a row (or for a repeated row) counts once. Returns 0, or 1 if a key
    is outside [0, n_keys), 2 if the rows are not ascending, 3 if the counts do not sum
    to the keys given."""
    total = 0
    for i in range(rows.size):
        if i > 0 and rows[i] < rows[i - 1]:
            return 2
        total += counts[i]
    if total != keys.size:
        return 3
    size = np.zeros(n_keys, dtype=np.int64)
    last = np.full(n_keys, -1, dtype=np.int64)  # the last row counted under each key
    at = 0
    for i in range(rows.size):
        r = rows[i]
        for j in range(at, at + counts[i]):
            k = keys[j]
            if k < 0 or k >= n_keys:
                return 1
            if last[k] != r:  # a key repeated within a row (or a row repeated) counts once
                last[k] = r
                size[k] += 1
        at += counts[i]
    starts[0] = 0
    for k in range(n_keys):
        starts[k + 1] = starts[k] + size[k]
    fill = starts[:-1].copy()
    at = 0
    for i in range(rows.size):
        r = rows[i]
        for j in range(at, at + counts[i]):
            k = keys[j]
            # Rows ascend, so a row already filed under k is the bucket's last entry.
            if fill[k] > starts[k] and out[fill[k] - 1] == r:
                continue
            out[fill[k]] = r
            fill[k] += 1
        at += counts[i]
    return 0


_GROUP_ERRORS = {
    1: "keys must lie in [0, n_keys)",
    2: "rows must be ascending (non-decreasing)",
    3: "counts must sum to the number of keys",
}


def group_rows(
    rows: np.ndarray, counts: np.ndarray, keys: np.ndarray, n_keys: int
) -> tuple[np.ndarray, np.ndarray]:
    """Posting lists of every key: the ascending rows whose entries name it.

    Row ``rows[i]`` names the ``counts[i]`` keys that follow the previous rows' in
    ``keys`` (a flat array, as :class:`~sentient_core.store.columns.TraceColumns`
    keeps primes). Equivalent to :func:`bucket_rows` over ``np.repeat(rows, counts)``,
    without building that array or sizing the buckets first.

    Parameters
    ----------
    rows : numpy.ndarray
        int64 (n,), ascending (non-decreasing).
    counts : numpy.ndarray
        int64 (n,), >= 0.
    keys : numpy.ndarray
        int64 (counts.sum(),), each in [0, n_keys).
    n_keys : int
        Number of possible keys (e.g. the largest prime + 1).

    Returns
    -------
    starts : numpy.ndarray
        int64 (n_keys + 1,): key ``k``'s rows are ``out[starts[k]:starts[k + 1]]``.
    out : numpy.ndarray
        int64 (distinct (row, key) pairs,).

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    rows = check_array("rows", rows, dtype=np.int64, ndim=1)
    check_array("counts", counts, dtype=np.int64, shape=rows.shape)
    keys = check_array("keys", keys, dtype=np.int64, ndim=1)
    if n_keys < 0:
        raise ValueError(f"n_keys must be >= 0, got {n_keys}")
    if counts.size and int(counts.min()) < 0:
        raise ValueError("counts must be >= 0")
    starts = np.empty(n_keys + 1, dtype=np.int64)
    out = np.empty(keys.shape[0], dtype=np.int64)
    status = _group_rows(rows, counts, keys, n_keys, starts, out)
    if status:
        raise ValueError(_GROUP_ERRORS[status])
    return starts, out[: starts[n_keys]]


def _warmup() -> None:
    group_rows(
        np.array([0, 1], dtype=np.int64),
        np.array([2, 1], dtype=np.int64),
        np.array([1, 1, 0], dtype=np.int64),
        2,
    )
    rows = np.array([0, 1, 1, 2], dtype=np.int64)
    keys = np.array([0, 1, 1, 0], dtype=np.int64)
    starts = np.array([0, 2, 4], dtype=np.int64)
    _bucket_rows(rows, keys, starts, np.empty(4, dtype=np.int64), np.zeros(2, dtype=np.int64))
