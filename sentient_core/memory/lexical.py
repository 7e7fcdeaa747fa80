"""Lexical ranking of the memory: an inverted index over the traces' terms.

:class:`LexicalIndex` holds the posting :class:`~sentient_kernels.segments.Segment`\\ s of
the active traces (terms from :mod:`sentient_core.store.terms`: the token
encoder's content tokens, hashed). It is exact and incremental: traces
appended by ``store_batch``/``store_unique``/``refresh`` get a new segment at
once (segments are merged like a binary counter, so there are O(log n) of
them and every posting is copied O(log n) times); retired traces are excluded
by the mirror's ``valid`` mask, in the document frequencies too. The mirror
keeps each row's length in tokens (``doc_len``) and their sum over the
active traces (``lex_total``), which give BM25's ``N`` and ``avgdl``.
Opening (:func:`load`) takes the persisted snapshot of the index when the
store has a usable one (:mod:`sentient_core.memory.lexical_persist`: its
segments as they were, read with one copy) and reads the stored terms of
the rows above it only, in chunks of 65536 traces, keeping one segment per
chunk (no merging: a few large segments cost a query nothing noticeable),
inverting each chunk on a worker thread while the next is read.

Every segment carries the bounds of its postings' BM25 tf factors per block
of 64 postings (:func:`sentient_kernels.bounds.term_bounds`, computed when
the segment is built or merged, at the memory's mean length then; kept in
RAM and in the persisted snapshot), with which the BM25, hybrid and scored ranks skip the
postings that cannot reach the top-k (block-max MaxScore, :mod:`sentient_kernels.maxscore`,
:mod:`sentient_kernels.maxscore_hybrid` and :mod:`sentient_kernels.maxscore_scored`): the
same rows and scores, bit for bit, as adding every posting of the query's terms into an
accumulator (``exhaustive=True``; the scored hybrid with a relevance weight <= 0 always).

Ranks (:data:`RANKS`)
---------------------
``"bm25"``
    Score = BM25 / ceiling (:mod:`sentient_kernels.bm25`, k1 = :data:`K1`, b = :data:`B`):
    the idf-weighted share of the query's terms a trace covers, discounted by
    tf saturation and length, in [0, 1]. Only traces sharing a query term.
``"hybrid"`` (the default for a text query)
    Score = (BM25 / ceiling + α · cosine) / (1 + α), α = :data:`HYBRID_ALPHA`,
    in [−α/(1+α), 1], over every active trace (one sharing no query term
    scores α · cosine / (1 + α), so the best of those still come back when
    fewer than k traces share a term).
``"cosine"``
    Score = cosine of the codes, over every active trace (the only rank for a
    query given as a code).

Publication: :meth:`LexicalIndex.add` builds and merges segments aside and
publishes them as one new :class:`~sentient_kernels.segments.Packed` tuple; a reader takes
that tuple once and ignores rows at or above the mirror's published ``n``, so
a concurrent append never shows it a half-built segment. (Its ``N`` and
``avgdl`` are the writer's latest, which may already count rows it does not
see yet.)
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.memory import terms as mem_terms
from sentient_core.memory.types import RANKS
from sentient_core.store import terms as store_terms
from sentient_core.store import traces
from sentient_core.store.errors import CorruptRecordError
from sentient_kernels import bm25, maxscore, maxscore_hybrid, maxscore_scored, unchecked
from sentient_kernels.bounds import term_bounds
from sentient_kernels.lexical import TermCounts
from sentient_kernels.scored_hybrid import Overlay, finish_scored_hybrid
from sentient_kernels.segments import (
    Bounds,
    Packed,
    Segment,
    build_segment_unchecked,
    merge_unchecked,
    pack,
)

if TYPE_CHECKING:
    from sentient_core.memory.mirror import Mirror
    from sentient_core.store.lexicon import Snapshot
    from sentient_core.store.txn import Txn
    from sentient_kernels.quantized import CompactScan

__all__ = ["HYBRID_ALPHA", "K1", "RANKS", "B", "LexicalIndex", "load", "query_terms", "search"]

"""Ways :meth:`HolographicMemory.recall` can rank (see the module docstring)."""

K1 = bm25.K1
B = bm25.B
HYBRID_ALPHA = 0.2
"""Weight of the cosine in the hybrid score (chosen on the pydoc Q/A set; see the README)."""

_INT32_MAX = 2**31 - 1


class LexicalIndex:
    """Posting segments over the memory's rows, published as one packed tuple.

    Attributes
    ----------
    packed : sentient_kernels.segments.Packed
        What a reader hands to the kernels (replaced whole on every change).
    """

    __slots__ = ("_bounds", "_segments", "packed")

    def __init__(self) -> None:
        self._segments: list[Segment] = []
        self._bounds: list[Bounds] = []
        self.packed = pack([], check=False)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def bounds(self) -> tuple[Bounds, ...]:
        """Each segment's block bounds (same order as :attr:`segments`)."""
        return tuple(self._bounds)

    @property
    def postings(self) -> int:
        """Number of (term, row) postings held."""
        return sum(int(s.rows.size) for s in self._segments)

    def add(
        self,
        counts: TermCounts,
        rows: np.ndarray,
        keep: np.ndarray,
        doc_len: np.ndarray,
        avgdl: float,
        *,
        merge: bool = True,
    ) -> None:
        """Index texts ``keep`` of ``counts`` at ``rows`` (ascending, above every row held).

        ``doc_len`` (int32, by row) holds the lengths of ``rows`` already and
        ``avgdl`` is the memory's mean length (for the segment's
        :class:`~sentient_kernels.segments.Bounds`).
        ``merge=False`` (a bulk load in large chunks) keeps the new segment
        apart: a few large segments cost a query nothing noticeable, merging
        them would cost the load a copy of every posting per level. The caller
        holds the memory's write lock.
        """
        docs = np.flatnonzero(keep)
        if docs.size == 0:
            return
        built = _build(counts, rows, docs, doc_len, avgdl)
        self.add_segment(*built, doc_len, avgdl, merge=merge)

    def add_segment(
        self,
        seg: Segment,
        bounds: Bounds,
        doc_len: np.ndarray,
        avgdl: float,
        *,
        merge: bool = True,
    ) -> None:
        """Add a built segment (rows above every row held) and its bounds; see :meth:`add`."""
        if seg.rows.size == 0:
            return
        segments = [*self._segments, seg]
        bounds_ = [*self._bounds, bounds]
        # Binary-counter merging: a segment is merged into its older neighbour
        # once it is at least as large, so sizes halve from oldest to newest.
        # A merged segment's block bounds are computed again (a pass as long as the merge's copy).
        while merge and len(segments) > 1 and segments[-2].rows.size <= segments[-1].rows.size:
            newer = segments.pop()
            bounds_.pop()
            segments[-1] = merge_unchecked(segments[-1], newer)
            bounds_[-1] = term_bounds(segments[-1], doc_len, K1, B, avgdl)
        self._segments = segments
        self._bounds = bounds_
        self.packed = pack(segments, check=False, bounds=bounds_)  # publish


def _build(
    counts: TermCounts, rows: np.ndarray, docs: np.ndarray, doc_len: np.ndarray, avgdl: float
) -> tuple[Segment, Bounds]:
    seg = build_segment_unchecked(
        counts.offsets[docs], counts.offsets[docs + 1], counts.terms, counts.tfs, rows[docs]
    )
    return seg, term_bounds(seg, doc_len, K1, B, avgdl)


def _add(
    m: Mirror, index: LexicalIndex, counts: TermCounts, rows: np.ndarray, merge: bool = True
) -> None:
    """Record lengths and index the active ones of ``rows`` (their mirror fields are set)."""
    lengths = np.minimum(counts.lengths, _INT32_MAX)
    m.doc_len[rows] = lengths
    keep = m.valid[rows] != 0
    m.lex_total += int(lengths[keep].sum())
    index.add(counts, rows, keep, m.doc_len, _avgdl(m), merge=merge)


def _avgdl(m: Mirror) -> float:
    return m.lex_total / m.active if m.active > 0 else 0.0


def append(m: Mirror, index: LexicalIndex, counts: TermCounts, rows: np.ndarray) -> None:
    """Index newly appended rows (before the mirror publishes its new ``n``)."""
    if rows.size:
        _add(m, index, counts, rows)


def load(txn: Txn, m: Mirror, snapshot: Snapshot | None = None) -> LexicalIndex:
    """Build the index of every trace of the mirror from one snapshot of the store.

    With a ``snapshot`` of the index (:mod:`sentient_core.memory.lexical_persist`:
    rows ``[0, snapshot.rows)``, at most the mirror's ``n``) its segments are
    taken as they are and only the rows above it are read; without one every
    row is. Rows are read from the stored terms, chunk by chunk in trace-id
    order; a chunk in which some trace has no terms of this tokenisation (a
    store from before terms, not yet backfilled, e.g. opened read-only) is
    tokenised from its texts.
    """
    index = LexicalIndex()
    n = m.n
    m.lex_total = 0
    if n == 0:
        return index
    covered = 0
    if snapshot is not None and 0 < snapshot.rows <= n:
        covered = snapshot.rows
        m.doc_len[:covered] = snapshot.doc_len
        # Every length less the retired rows' (few: one pass over the mask, no gather of
        # the active rows' lengths).
        lens = snapshot.doc_len
        retired = lens[m.valid[:covered] == 0]
        m.lex_total = int(lens.sum(dtype=np.int64)) - int(retired.sum(dtype=np.int64))
        for seg, bounds in zip(snapshot.segments, snapshot.bounds, strict=True):
            index.add_segment(seg, bounds, m.doc_len, _avgdl(m), merge=False)
    if covered < n:
        _fold(txn, m, index, covered)
    return index


def _fold(txn: Txn, m: Mirror, index: LexicalIndex, first: int) -> None:
    """Index rows ``[first, m.n)`` from their stored terms (see :func:`load`)."""
    n = m.n
    row_id = m.row_id[first:n]
    by_id = first + np.argsort(row_id, kind="stable")  # rows in trace-id order
    ids_sorted = m.row_id[by_id]
    if ids_sorted[0] < 0:
        raise CorruptRecordError(
            f"the store at {txn.store.path} has code rows that belong to no trace;"
            " run check_integrity"
        )
    stored = mem_terms.usable(txn)
    # The inversion (a nogil kernel) of one chunk runs on a worker thread
    # while this thread reads and decodes the next one from LMDB.
    kept = int((m.valid[:first] != 0).sum())
    with ThreadPoolExecutor(1, thread_name_prefix="lexical-load") as pool:
        pending = []
        for a in range(0, n - first, store_terms.CHUNK):
            ids = ids_sorted[a : a + store_terms.CHUNK]
            lo, hi = int(ids[0]), int(ids[-1]) + 1
            got, counts = store_terms.read_from(txn, lo, hi) if stored else (None, None)
            if got is None or counts is None or got.size != ids.size or (got != ids).any():
                recs = list(traces.iter_range(txn, lo, hi))
                counts = mem_terms.count([r.text for r in recs])
            rows = by_id[a : a + store_terms.CHUNK].astype(np.int64)
            if rows.size > 1 and (rows[1:] <= rows[:-1]).any():
                order = np.argsort(rows, kind="stable")
                rows, counts = rows[order], mem_terms.select(counts, order)
            lengths = np.minimum(counts.lengths, _INT32_MAX)
            m.doc_len[rows] = lengths
            keep = m.valid[rows] != 0
            m.lex_total += int(lengths[keep].sum())
            docs = np.flatnonzero(keep)
            kept += docs.size
            # Bounds at the mean length so far (any reference is correct; a close one is tight).
            ref = m.lex_total / kept if kept else 0.0
            pending.append(pool.submit(_build, counts, rows, docs, m.doc_len, ref))
        for job in pending:
            index.add_segment(*job.result(), m.doc_len, _avgdl(m), merge=False)


def query_terms(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Distinct term hashes of a query (ascending) and their counts as weights."""
    counts = mem_terms.count([text])
    return counts.terms, counts.tfs.astype(np.float64)


class _Scratch(threading.local):
    """Per-thread query buffers; ``acc`` and ``seen`` are all zero between queries."""

    def __init__(self) -> None:
        self.acc = np.zeros(0)
        self.touched = np.zeros(0, dtype=np.int64)
        self.seen = np.zeros(0, dtype=np.uint8)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.acc.shape[0] < n:
            size = max(n, 2 * self.acc.shape[0], 1024)
            self.acc = np.zeros(size)
            self.touched = np.empty(size, dtype=np.int64)
            self.seen = np.zeros(size, dtype=np.uint8)
        return self.acc, self.touched, self.seen


_SCRATCH = _Scratch()


def search(
    index: LexicalIndex,
    m: Mirror,
    n: int,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    rank: str,
    code: np.ndarray | None,
    overlay: Overlay | None = None,
    valid: np.ndarray | None = None,
    exhaustive: bool = False,
    compact: CompactScan | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Top-k active rows below ``n`` of the mirror by ``rank`` ("bm25" or "hybrid").

    With an ``overlay`` (hybrid only) the learned scorer's factors join the
    score inside the selection (:mod:`sentient_kernels.scored_hybrid`); ``valid``
    (uint8 over the rows, default the mirror's) then also drops vetoed rows.
    BM25's statistics stay the memory's (every active row counts in N and avgdl).
    ``exhaustive`` and ``compact`` (the int8 copy of the first ``n`` code rows):
    see :func:`rank_rows`.
    """
    active = m.active
    return rank_rows(
        index.packed,
        n,
        m.valid if valid is None else valid,
        m.doc_len,
        float(active),
        m.lex_total / active if active > 0 else 0.0,
        terms,
        weights,
        k,
        rank,
        m.codes,
        code,
        overlay=overlay,
        exhaustive=exhaustive,
        compact=compact,
    )


def rank_rows(
    packed: Packed,
    n: int,
    valid: np.ndarray | None,
    doc_len: np.ndarray,
    n_docs: float,
    avgdl: float,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    rank: str,
    codes: np.ndarray | None,
    code: np.ndarray | None,
    alpha: float = HYBRID_ALPHA,
    overlay: Overlay | None = None,
    exhaustive: bool = False,
    compact: CompactScan | None = None,
    df: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Top-k rows below ``n`` by "bm25" or "hybrid" (unchecked: inputs valid by construction).

    ``valid`` (uint8, None for all rows), ``doc_len`` (int32) and ``codes``
    (float32 unit rows) are indexed by row; ``code`` is the query's code
    (hybrid only). Returns rows, scores, the normalised BM25 of each row and
    (hybrid) its cosine. An ``overlay`` (hybrid, with ``valid``) adds the
    learned scorer's factors inside the selection
    (:func:`sentient_kernels.scored_hybrid.finish_scored_hybrid`).

    BM25, the hybrid and the scored hybrid with ``w_rel > 0`` skip the postings
    that cannot reach the top-k (:mod:`sentient_kernels.maxscore`,
    :mod:`sentient_kernels.maxscore_scored`); the scored hybrid with ``w_rel <= 0``
    (no bound: a weaker BM25 may win), and every rank with ``exhaustive`` (the
    same results, bit for bit: a reference for tests and benchmarks), add every
    posting of the query's terms into an accumulator (:mod:`sentient_kernels.bm25`).
    ``compact``, the int8 copy of ``codes[:n]``, serves the full cosine scan the
    pruned hybrids may need for rows without a query term (the same answer).
    ``df`` (int64, one per query term): document frequencies given instead of
    counted here; with ``n_docs`` and ``avgdl`` the statistics of the whole corpus
    these rows are part of (a shard's: :mod:`sentient_core.cluster`).
    """
    lexical_only = rank == "bm25" or code is None or codes is None
    if not exhaustive and lexical_only:
        rows, raw, idf = maxscore.topk_unchecked(
            packed, n, valid, doc_len, n_docs, avgdl, terms, weights, k, K1, B, df
        )
        ceil = bm25.ceiling(idf, weights)
        rel = raw / ceil if ceil > 0 else raw
        return rows, rel, rel, None
    if not exhaustive and (overlay is None or valid is None):
        assert codes is not None and code is not None
        return maxscore_hybrid.hybrid_unchecked(
            packed, n, valid, doc_len, n_docs, avgdl, terms, weights, k, codes[:n], code, alpha,
            compact=compact, df=df,
        )  # fmt: skip
    if not exhaustive and overlay is not None and maxscore_scored.applies(overlay):
        assert codes is not None and code is not None and valid is not None
        return maxscore_scored.scored_unchecked(
            packed,
            n,
            valid,
            doc_len,
            n_docs,
            avgdl,
            terms,
            weights,
            k,
            codes[:n],
            code,
            alpha,
            overlay,
            compact=compact,
            df=df,
        )
    acc, touched, seen = _SCRATCH.get(n)
    idf = np.empty(terms.shape[0])
    has_mask = valid is not None
    nt = unchecked.bm25_accumulate_df(
        packed.terms,
        packed.starts,
        packed.rows,
        packed.tfs,
        terms,
        weights,
        n,
        has_mask,
        valid if has_mask else _ALL,
        doc_len,
        n_docs,
        avgdl,
        K1,
        B,
        acc,
        touched,
        idf,
        bm25.NO_DF if df is None else df,
    )
    ceil = bm25.ceiling(idf, weights)
    if lexical_only:
        rows = np.empty(min(k, nt), dtype=np.int64)
        raw = np.empty(rows.shape[0])
        unchecked.bm25_select(acc, touched, nt, k, rows, raw)
        rel = raw / ceil if ceil > 0 else raw
        return rows, rel, rel, None
    assert codes is not None and code is not None
    if overlay is not None and valid is not None:
        return finish_scored_hybrid(
            acc, touched, nt, ceil, codes[:n], code, alpha, k, valid[:n], overlay, seen
        )
    return bm25.finish_hybrid(
        acc,
        touched,
        nt,
        ceil,
        codes[:n],
        code,
        alpha,
        k,
        None if valid is None else valid[:n],
        seen,
    )


_ALL = np.ones(1, dtype=np.uint8)
