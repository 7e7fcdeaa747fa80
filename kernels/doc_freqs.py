"""Document frequencies of query terms over one part of a corpus (a shard's segments).

A corpus split in parts (:mod:`sentient_core.cluster`) is scored as a whole when
every part uses the whole corpus's statistics: :func:`doc_freqs` counts, in one
part, the valid rows holding each query term — exactly what
:func:`sentient_kernels.maxscore.topk` counts for its idf — so the parts' sums are
the ``df`` argument of the BM25, hybrid and scored kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentient_kernels.bm25 import K1, B, _check_query
from sentient_kernels.checks import check_array
from sentient_kernels.config import jit
from sentient_kernels.maxscore import _ALL, _df, _lower_bound, retired_rows
from sentient_kernels.segments import Packed, Segment

__all__ = ["doc_freqs", "doc_freqs_unchecked"]

# The same counts as maxscore's (no fast-math there either).
_jit = jit(fastmath=False)


@_jit
def _doc_freqs(terms, starts, rows, qterms, n, has_mask, valid, bad, out):
    """``out[j]``: the valid rows below ``n`` holding ``qterms[j]`` (as :func:`_plan` counts)."""
    for j in range(qterms.size):
        df = 0
        for s in range(len(terms)):
            seg_terms = terms[s]
            t = np.searchsorted(seg_terms, qterms[j])
            if t >= seg_terms.size or seg_terms[t] != qterms[j]:
                continue
            seg_rows = rows[s]
            a = starts[s][t]
            z = starts[s][t + 1]
            if seg_rows[z - 1] >= n:
                z = _lower_bound(seg_rows, a, z, n)
            df += _df(seg_rows, a, z, has_mask, valid, bad)
        out[j] = df


# --------------------------------------------------------------------- wrappers


def doc_freqs_unchecked(
    packed: Packed, n: int, valid: np.ndarray | None, terms: np.ndarray
) -> np.ndarray:
    """Document frequency (int64) of each of ``terms`` (uint64) over the valid rows below
    ``n`` (unchecked): what :func:`sentient_kernels.maxscore.topk_unchecked` counts, for a corpus split in parts
    (shards) whose sums are handed back as ``df``."""
    has_mask = valid is not None
    out = np.zeros(terms.shape[0], dtype=np.int64)
    _doc_freqs(
        packed.terms,
        packed.starts,
        packed.rows,
        terms,
        n,
        has_mask,
        valid if has_mask else _ALL,
        retired_rows(valid, n),
        out,
    )
    return out


def doc_freqs(
    segments: Sequence[Segment] | Packed,
    query_terms: np.ndarray,
    *,
    doc_len: np.ndarray,
    valid: np.ndarray | None = None,
) -> np.ndarray:
    """Number of valid rows holding each query term (rows below ``len(doc_len)``).

    Parameters
    ----------
    segments : sequence of Segment, or Packed
    query_terms : (Q,) uint64
    doc_len : (n,) int32
        Gives ``n`` (and the bounds when ``segments`` are packed here).
    valid : (n,) bool or uint8, optional
        Rows with ``valid == 0`` do not count.

    Returns
    -------
    (Q,) int64
        The ``df`` the kernels count: summed over the parts of a corpus, the ``df``
        argument of :func:`sentient_kernels.maxscore.topk` and
        :func:`sentient_kernels.bm25.scores`.
    """
    terms = check_array("query_terms", query_terms, dtype=np.uint64, ndim=1)
    q = _check_query(segments, np.unique(terms), None, doc_len, valid, None, None, K1, B)
    return doc_freqs_unchecked(q.packed, q.n, q.valid if q.has_mask else None, terms)


def _warmup() -> None:
    from sentient_kernels.bm25 import warmup_index

    seg, doc_len, terms, _ = warmup_index()
    doc_freqs([seg], terms, doc_len=doc_len)
    doc_freqs([seg], terms, doc_len=doc_len, valid=np.ones(doc_len.shape[0], dtype=np.uint8))
