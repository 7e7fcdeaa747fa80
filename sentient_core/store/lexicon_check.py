"""``check`` of the lexical snapshot (:mod:`sentient_core.store.lexicon`) against a rebuild.

The snapshot is right when, over the rows it covers that have stored terms of
its tokenisation:

* its postings are exactly those of the rows' stored terms, for every row it
  holds postings of (rows are whole: all of a row's terms or none);
* it holds every active (not retired) row that has terms (a row retired
  before the snapshot may be left out: the mirror masks it anyway);
* its lengths are the terms' lengths, and its block bounds are what
  :func:`sentient_kernels.bounds.term_bounds` computes from its segments at
  their stored parameters.

Rows without stored terms of the snapshot's tokenisation (a store not yet
backfilled) cannot be verified here and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.store import colblocks, lexicon
from sentient_core.store import terms as store_terms
from sentient_core.store.columns import iter_chunks
from sentient_core.store.errors import CorruptRecordError
from sentient_kernels.bounds import term_bounds
from sentient_kernels.segments import Segment, build_segment_unchecked, merge_segments

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["problems"]

_INT32_MAX = 2**31 - 1


def problems(txn: Txn) -> Iterator[str]:
    """What is wrong with the stored snapshot (nothing when there is none)."""
    try:
        snap = lexicon.read(txn)
    except CorruptRecordError as exc:
        yield f"lexicon: {exc} (the index is rebuilt on open)"
        return
    if snap is None:
        return
    n = txn.counters().row_count
    if snap.rows > n:
        yield f"lexicon: the snapshot covers {snap.rows} rows; the store holds {n}"
        return
    if store_terms.stamp(txn) != snap.fingerprint:
        return  # the stored terms are another tokenisation's: nothing to compare with
    row_id, retired = _row_owners(txn, n)
    row_id, retired = row_id[: snap.rows], retired[: snap.rows]
    ids, counts = store_terms.read_from(txn, 0)
    pos = np.minimum(np.searchsorted(ids, row_id), max(ids.size - 1, 0))
    known = ids[pos] == row_id if ids.size else np.zeros(snap.rows, dtype=bool)
    rows = np.flatnonzero(known)
    lengths = np.minimum(counts.lengths[pos[rows]], _INT32_MAX)
    bad_len = rows[snap.doc_len[rows] != lengths]
    if bad_len.size:
        yield f"lexicon: {bad_len.size} row length(s) differ from the terms (first: {bad_len[:5].tolist()})"
    want = build_segment_unchecked(
        counts.offsets[pos[rows]], counts.offsets[pos[rows] + 1], counts.terms, counts.tfs, rows
    )
    try:
        held = snap.segments[0] if snap.segments else _empty()
        for seg in snap.segments[1:]:
            held = merge_segments(held, seg)
    except ValueError as exc:
        yield f"lexicon: the snapshot's segments do not stack ({exc})"
        return
    present = np.zeros(snap.rows, dtype=bool)
    present[held.rows] = True
    unverified = ~known
    if not _same(_only(held, ~unverified[held.rows]), _only(want, present[want.rows])):
        yield "lexicon: the snapshot's postings differ from the stored terms' (rebuilt on check)"
    lost = np.flatnonzero(~present & ~retired & known)
    lost = lost[np.isin(lost, want.rows)]  # rows with no terms have no postings
    if lost.size:
        yield f"lexicon: {lost.size} active row(s) missing from the snapshot (first: {lost[:5].tolist()})"
    for i, (seg, bnd) in enumerate(zip(snap.segments, snap.bounds, strict=True)):
        ref, k1, b = (float(x) for x in bnd.params)
        again = term_bounds(seg, snap.doc_len, k1, b, avgdl_ref=ref)
        if not all(np.array_equal(x, y) for x, y in zip(again, bnd, strict=True)):
            yield f"lexicon: segment {i}'s block bounds are not those of its postings"


def _row_owners(txn: Txn, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Trace id and retired flag of every code row."""
    cols = colblocks.load(txn, n)
    parts = [cols] if cols is not None else list(iter_chunks(txn))
    row_id = np.full(n, -1, dtype=np.int64)
    retired = np.zeros(n, dtype=bool)
    for c in parts:
        row_id[c.rows] = c.ids
        retired[c.rows] = c.retired
    return row_id, retired


def _empty() -> Segment:
    return Segment(
        np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint16)
    )


def _only(seg: Segment, keep: np.ndarray) -> Segment:
    """The postings ``keep`` (by posting) of a segment, terms left without any dropped."""
    cum = np.zeros(keep.shape[0] + 1, dtype=np.int64)
    np.cumsum(keep, out=cum[1:])
    per_term = np.diff(cum[seg.starts])
    held = per_term > 0
    starts = np.zeros(int(held.sum()) + 1, dtype=np.int64)
    np.cumsum(per_term[held], out=starts[1:])
    return Segment(seg.terms[held], starts, seg.rows[keep], seg.tfs[keep])


def _same(a: Segment, b: Segment) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
