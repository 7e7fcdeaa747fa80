"""Slow, obviously-correct reference of :func:`sentient_kernels.postings.bucket_rows`, pure Python."""

from __future__ import annotations


def bucket_rows(rows, keys, n_buckets: int) -> list[list[int]]:
    """For each key, the distinct rows paired with it, ascending."""
    pairs = list(zip((int(r) for r in rows), (int(k) for k in keys), strict=True))
    return [sorted({r for r, k in pairs if k == b}) for b in range(n_buckets)]
