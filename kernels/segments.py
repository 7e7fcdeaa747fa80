"""Inverted-index segments: for each term, the ascending rows holding it.

A :class:`Segment` is an immutable inverted index over some rows: for each
term (ascending 64-bit hash, see :mod:`sentient_kernels.lexical`) the ascending rows
that hold it, with their term frequencies. An index grows by building a
segment from newly added rows (:func:`build_segment`) and merging segments
(:func:`merge_segments`, every row of the newer segment above every row of
the older). BM25 scoring over a list of segments lives in :mod:`sentient_kernels.bm25`
and :mod:`sentient_kernels.maxscore`, which take the list as Numba typed lists
(:func:`pack`).

A packed segment also carries :class:`Bounds`: its posting lists cut into
blocks of :data:`BLOCK` postings and, per block and per term, the largest BM25
tf factor of their postings (computed by :func:`sentient_kernels.bounds.term_bounds`),
with which :mod:`sentient_kernels.maxscore` skips what cannot reach a top-k.

Building and merging are pure integer work: the result does not depend on
batch sizes or on how segments were merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import types
from numba.typed import List

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit
from sentient_kernels.lexical import TermCounts

__all__ = [
    "BLOCK",
    "Bounds",
    "Packed",
    "Segment",
    "build_segment",
    "empty_segment",
    "merge_segments",
    "no_bounds",
    "pack",
]

# Integer work only: no fast-math needed.
_jit = jit(fastmath=False)

_TERMS = types.Array(types.uint64, 1, "C")
_STARTS = types.Array(types.int64, 1, "C")
_ROWS = types.Array(types.int32, 1, "C")
_TFS = types.Array(types.uint16, 1, "C")
_FLOATS = types.Array(types.float64, 1, "C")

BLOCK = 64
"""Postings per block of :class:`Bounds` (a list's last block may hold fewer)."""


class Segment(NamedTuple):
    """An inverted index over some rows.

    Attributes
    ----------
    terms : (T,) uint64
        Distinct term hashes, strictly ascending.
    starts : (T + 1,) int64
        Term ``j`` owns postings ``starts[j]:starts[j + 1]``; ``starts[0] == 0``.
    rows : (P,) int32
        Rows holding the term, strictly ascending within a term.
    tfs : (P,) uint16
        The term's frequency in that row (>= 1).
    """

    terms: np.ndarray
    starts: np.ndarray
    rows: np.ndarray
    tfs: np.ndarray


class Bounds(NamedTuple):
    """Blocks of a segment's posting lists and bounds of their postings' BM25 tf factors.

    Term ``t``'s postings ``starts[t]:starts[t + 1]`` are cut into blocks of
    :data:`BLOCK` from its first posting: its blocks are ``blocks[t]:blocks[t + 1]``.
    The tf factor of a posting is ``tf / (tf + k1·(1 − b + b·dl/avgdl))``; at
    another ``avgdl`` it is at most the stored bound times
    ``max(1, avgdl / params[0])`` (the factor is at most 1 whatever the parameters).

    Attributes
    ----------
    blocks : (T + 1,) int64
        First block of each term.
    block_f : (NB,) float64
        Largest tf factor of the block's postings (with ``params``).
    term_f : (T,) float64
        Largest tf factor of the term's postings.
    params : (3,) float64
        ``avgdl_ref, k1, b`` the factors were computed with (``avgdl_ref`` =
        inf: lengths taken as 0, a bound at any ``avgdl``; k1 = NaN: factors of 1).
    """

    blocks: np.ndarray
    block_f: np.ndarray
    term_f: np.ndarray
    params: np.ndarray


# --------------------------------------------------------------------- kernels


@_jit
def _slot(h, mask):
    """Home slot of a term hash in a table of ``mask + 1`` slots (its low bits are mixed)."""
    return np.int64(h & np.uint64(mask))


@_jit
def _group_terms(doc_lo, doc_hi, terms):
    """Local id of every posting's term (first-seen order) and the distinct terms.

    An open-addressing table (linear probing, at most half full, doubled as
    it fills) maps each term hash to a local id.
    """
    size = 1024
    keys = np.empty(size, dtype=np.uint64)
    ids = np.full(size, -1, dtype=np.int64)
    distinct = np.empty(64, dtype=np.uint64)
    n_terms = 0
    total = 0
    for d in range(doc_lo.size):
        total += doc_hi[d] - doc_lo[d]
    local = np.empty(total, dtype=np.int64)
    q = 0
    for d in range(doc_lo.size):
        for p in range(doc_lo[d], doc_hi[d]):
            h = terms[p]
            mask = size - 1
            slot = _slot(h, mask)
            while ids[slot] != -1 and keys[slot] != h:
                slot = (slot + 1) & mask
            if ids[slot] == -1:
                if n_terms == distinct.size:
                    grown = np.empty(2 * distinct.size, dtype=np.uint64)
                    grown[:n_terms] = distinct[:n_terms]
                    distinct = grown
                distinct[n_terms] = h
                keys[slot] = h
                ids[slot] = n_terms
                n_terms += 1
                if 2 * n_terms > size:  # rehash into a table twice as large
                    size *= 2
                    mask = size - 1
                    keys = np.empty(size, dtype=np.uint64)
                    ids = np.full(size, -1, dtype=np.int64)
                    for j in range(n_terms):
                        s2 = _slot(distinct[j], mask)
                        while ids[s2] != -1:
                            s2 = (s2 + 1) & mask
                        keys[s2] = distinct[j]
                        ids[s2] = j
                local[q] = n_terms - 1
            else:
                local[q] = ids[slot]
            q += 1
    return local, distinct[:n_terms]


@_jit
def _build_segment(doc_lo, doc_hi, terms, tfs, doc_rows):
    """Invert documents (ascending rows) into one segment; see :func:`build_segment`.

    Postings are grouped by term with a hash table, counting-sorted by local
    term id in document order (so rows stay ascending within a term), then the
    groups are laid out in ascending term-hash order.
    """
    local, distinct = _group_terms(doc_lo, doc_hi, terms)
    n_terms = distinct.size
    total = local.size
    counts = np.zeros(n_terms + 1, dtype=np.int64)
    for q in range(total):
        counts[local[q] + 1] += 1
    order = np.argsort(distinct)  # local id of the j-th smallest term
    rank = np.empty(n_terms, dtype=np.int64)
    out_terms = np.empty(n_terms, dtype=np.uint64)
    out_starts = np.empty(n_terms + 1, dtype=np.int64)
    pos = 0
    for j in range(n_terms):
        t = order[j]
        rank[t] = j
        out_terms[j] = distinct[t]
        out_starts[j] = pos
        pos += counts[t + 1]
    out_starts[n_terms] = total
    fill = out_starts[:n_terms].copy()
    out_rows = np.empty(total, dtype=np.int32)
    out_tfs = np.empty(total, dtype=np.uint16)
    q = 0
    for d in range(doc_lo.size):
        row = np.int32(doc_rows[d])
        for p in range(doc_lo[d], doc_hi[d]):
            j = rank[local[q]]
            w = fill[j]
            out_rows[w] = row
            out_tfs[w] = tfs[p]
            fill[j] = w + 1
            q += 1
    return out_terms, out_starts, out_rows, out_tfs


@_jit
def _merge_segments(a_terms, a_starts, a_rows, a_tfs, b_terms, b_starts, b_rows, b_tfs):
    """Merge two segments whose rows do not interleave (all of ``b`` above all of ``a``)."""
    na = a_terms.size
    nb = b_terms.size
    total = a_rows.size + b_rows.size
    terms = np.empty(na + nb, dtype=np.uint64)
    starts = np.empty(na + nb + 1, dtype=np.int64)
    rows = np.empty(total, dtype=np.int32)
    tfs = np.empty(total, dtype=np.uint16)
    i = 0
    j = 0
    t = 0
    p = 0
    while i < na or j < nb:
        take_a = j >= nb or (i < na and a_terms[i] <= b_terms[j])
        take_b = i >= na or (j < nb and b_terms[j] <= a_terms[i])
        starts[t] = p
        if take_a:
            terms[t] = a_terms[i]
            for q in range(a_starts[i], a_starts[i + 1]):
                rows[p] = a_rows[q]
                tfs[p] = a_tfs[q]
                p += 1
            i += 1
        if take_b:
            terms[t] = b_terms[j]
            for q in range(b_starts[j], b_starts[j + 1]):
                rows[p] = b_rows[q]
                tfs[p] = b_tfs[q]
                p += 1
            j += 1
        t += 1
    starts[t] = p
    return terms[:t].copy(), starts[: t + 1].copy(), rows, tfs


@_jit
def _block_layout(starts):
    """First block of each term (``(T + 1,)``) when its postings are cut into blocks of BLOCK."""
    n_terms = starts.size - 1
    blocks = np.empty(n_terms + 1, dtype=np.int64)
    nb = 0
    for t in range(n_terms):
        blocks[t] = nb
        nb += (starts[t + 1] - starts[t] + BLOCK - 1) // BLOCK
    blocks[n_terms] = nb
    return blocks


# --------------------------------------------------------------------- wrappers


def build_segment(counts: TermCounts, rows: np.ndarray) -> Segment:
    """Invert the terms of a batch of texts into a :class:`Segment`.

    Parameters
    ----------
    counts : TermCounts
        The texts' terms (distinct and ascending within each text).
    rows : (n,) int64
        The row of each text, strictly ascending, in ``[0, 2**31)``.

    Returns
    -------
    Segment
        Every term of the batch with the ascending rows holding it.
    """
    offsets = check_array("counts.offsets", counts.offsets, dtype=np.int64, ndim=1, min_rows=1)
    n = offsets.shape[0] - 1
    terms = check_array("counts.terms", counts.terms, dtype=np.uint64, ndim=1)
    tfs = check_array("counts.tfs", counts.tfs, dtype=np.uint16, shape=(terms.shape[0],))
    rows = check_array("rows", rows, dtype=np.int64, shape=(n,))
    if offsets[0] != 0 or offsets[-1] != terms.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError("counts.offsets must rise from 0 to len(counts.terms)")
    if n and (rows[0] < 0 or rows[-1] >= 2**31 or (np.diff(rows) <= 0).any()):
        raise ValueError("rows must be strictly ascending within [0, 2**31)")
    for t in range(n):  # cheap next to the build: one vectorised check per text
        part = terms[offsets[t] : offsets[t + 1]]
        if part.size > 1 and (part[1:] <= part[:-1]).any():
            raise ValueError(f"counts.terms of text {t} must be strictly ascending")
    if tfs.size and tfs.min() == 0:
        raise ValueError("counts.tfs must be >= 1")
    return _segment_unchecked(offsets[:-1], offsets[1:], terms, tfs, rows)


def _segment_unchecked(
    doc_lo: np.ndarray, doc_hi: np.ndarray, terms: np.ndarray, tfs: np.ndarray, rows: np.ndarray
) -> Segment:
    doc_lo = np.ascontiguousarray(doc_lo)
    doc_hi = np.ascontiguousarray(doc_hi)
    return Segment(*_build_segment(doc_lo, doc_hi, terms, tfs, rows))


def build_segment_unchecked(
    doc_lo: np.ndarray, doc_hi: np.ndarray, terms: np.ndarray, tfs: np.ndarray, rows: np.ndarray
) -> Segment:
    """Unchecked :func:`build_segment` over texts ``terms[doc_lo[d]:doc_hi[d]]`` (valid by construction)."""
    return _segment_unchecked(doc_lo, doc_hi, terms, tfs, rows)


def _check_segment(name: str, seg: object) -> Segment:
    if not isinstance(seg, Segment):
        raise TypeError(
            f"{name} must be a sentient_kernels.lexical.Segment, got {type(seg).__name__}"
        )
    terms = check_array(f"{name}.terms", seg.terms, dtype=np.uint64, ndim=1)
    starts = check_array(f"{name}.starts", seg.starts, dtype=np.int64, shape=(terms.shape[0] + 1,))
    rows = check_array(f"{name}.rows", seg.rows, dtype=np.int32, ndim=1)
    check_array(f"{name}.tfs", seg.tfs, dtype=np.uint16, shape=(rows.shape[0],))
    if starts[0] != 0 or starts[-1] != rows.shape[0] or (np.diff(starts) <= 0).any():
        raise ValueError(f"{name}.starts must rise strictly from 0 to len({name}.rows)")
    if terms.size > 1 and (terms[1:] <= terms[:-1]).any():
        raise ValueError(f"{name}.terms must be strictly ascending")
    return seg


def merge_segments(older: Segment, newer: Segment) -> Segment:
    """One segment holding the postings of both.

    Parameters
    ----------
    older, newer : Segment
        Every row of ``newer`` must be above every row of ``older`` (so each
        merged posting list stays ascending).

    Returns
    -------
    Segment
    """
    older = _check_segment("older", older)
    newer = _check_segment("newer", newer)
    if older.rows.size and newer.rows.size and int(newer.rows.min()) <= int(older.rows.max()):
        raise ValueError("every row of newer must be above every row of older")
    return merge_unchecked(older, newer)


def merge_unchecked(older: Segment, newer: Segment) -> Segment:
    """Unchecked :func:`merge_segments` (the caller guarantees the row order)."""
    return Segment(*_merge_segments(*older, *newer))


def empty_segment() -> Segment:
    """A segment with no terms."""
    return Segment(
        np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint16)
    )


def no_bounds(seg: Segment) -> Bounds:
    """:class:`Bounds` that assume nothing: every factor at most 1 (correct for any query)."""
    blocks = _block_layout(seg.starts)
    nan = float("nan")
    return Bounds(
        blocks,
        np.ones(int(blocks[-1])),
        np.ones(seg.terms.shape[0]),
        np.array([float("inf"), nan, nan]),
    )


class Packed(NamedTuple):
    """Segments as the kernels take them: one Numba typed list per field.

    ``blocks``, ``block_f``, ``term_f`` and ``params`` are the segments' :class:`Bounds`.
    """

    terms: List
    starts: List
    rows: List
    tfs: List
    blocks: List
    block_f: List
    term_f: List
    params: List


def pack(
    segments: Sequence[Segment],
    *,
    check: bool = True,
    bounds: Sequence[Bounds] | None = None,
) -> Packed:
    """Typed lists of the segments' arrays, to pass to the kernels.

    ``check=False`` skips validating each segment (for segments valid by
    construction). ``bounds`` gives each segment's :class:`Bounds` (valid
    by construction, see :func:`sentient_kernels.bounds.term_bounds`);
    without them every segment gets :func:`no_bounds` (correct, but
    :mod:`sentient_kernels.maxscore` then skips little).
    """
    out = Packed(
        List.empty_list(_TERMS),
        List.empty_list(_STARTS),
        List.empty_list(_ROWS),
        List.empty_list(_TFS),
        List.empty_list(_STARTS),
        List.empty_list(_FLOATS),
        List.empty_list(_FLOATS),
        List.empty_list(_FLOATS),
    )
    if bounds is not None and len(bounds) != len(segments):
        raise ValueError(f"bounds must hold one entry per segment ({len(segments)})")
    for i, seg in enumerate(segments):
        if check:
            seg = _check_segment(f"segments[{i}]", seg)
        bnd = bounds[i] if bounds is not None else no_bounds(seg)
        out.terms.append(seg.terms)
        out.starts.append(seg.starts)
        out.rows.append(seg.rows)
        out.tfs.append(seg.tfs)
        out.blocks.append(bnd.blocks)
        out.block_f.append(bnd.block_f)
        out.term_f.append(bnd.term_f)
        out.params.append(bnd.params)
    return out


def _warmup() -> None:
    counts = TermCounts(
        np.array([0, 2, 3], dtype=np.int64),
        np.array([3, 9, 9], dtype=np.uint64),
        np.array([1, 2, 1], dtype=np.uint16),
        np.array([3, 1], dtype=np.int64),
    )
    seg = build_segment(counts, np.array([0, 1], dtype=np.int64))
    more = build_segment(counts, np.array([2, 3], dtype=np.int64))
    pack([merge_segments(seg, more), empty_segment()])
    _block_layout(seg.starts)
