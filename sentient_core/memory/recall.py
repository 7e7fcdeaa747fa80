"""Recall: exact top-k over the mirror, then the winners' records read from the store.

Text queries rank by relevance (:mod:`sentient_core.memory.lexical`: the
BM25 + cosine hybrid by default, or BM25 or the cosine alone); code queries
by cosine.

Functions over memory's :class:`~sentient_core.memory.writer.Writer` (the
public methods of :class:`~sentient_core.memory.HolographicMemory` call them).
Reads take no lock: each search takes one :class:`~sentient_core.memory.writer.MemoryView`
and uses its first ``n`` rows. A hit whose record turns
out retired (by another process since the mirror was built) is masked and the
search is run again, so returned records are always current and active.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.memory import lexical
from sentient_core.memory import terms as mem_terms
from sentient_core.memory.mirror import Mirror
from sentient_core.memory.types import (
    Hit,
    as_code,
    check_ids,
    check_k,
    check_rank,
    check_threshold,
)
from sentient_core.store import traces
from sentient_core.store.errors import StoreUsageError
from sentient_core.store.records import SMF_AXES, TraceRecord
from sentient_core.store.txn import Txn
from sentient_kernels import holographic, unchecked
from sentient_kernels import smf as smf_kernels

if TYPE_CHECKING:
    from sentient_core.memory.writer import MemoryView, Writer

__all__ = [
    "MemoryQuery",
    "query",
    "recall",
    "recall_batch",
    "recall_by_primes",
    "recall_by_smf",
    "recent",
]


class MemoryQuery(NamedTuple):
    """A query read once for memory's rankings (:func:`query`).

    Attributes
    ----------
    view : MemoryView
        The generation it searches.
    code : ndarray or None
        The query's code (float32, ``code_dim``); None for a text without content words.
    terms, weights : ndarray
        Its BM25 term hashes (ascending, uint64) and their counts; empty for a code.
    """

    view: MemoryView
    code: np.ndarray | None
    terms: np.ndarray
    weights: np.ndarray


_NO_TERMS = (np.zeros(0, dtype=np.uint64), np.zeros(0))


def query(w: Writer, q: str | np.ndarray, terms: bool = True) -> MemoryQuery:
    """Read ``q`` once: the current view, its code and (a text, unless ``terms`` is
    False) its BM25 terms."""
    view = w.view()
    if isinstance(q, str):
        code = w.checked_encoder().encode_batch([q])[0]
        if not terms:
            return MemoryQuery(view, code if code.any() else None, *_NO_TERMS)
        counts = mem_terms.count([q])
        return MemoryQuery(
            view, code if code.any() else None, counts.terms, counts.tfs.astype(np.float64)
        )
    code = as_code(q, view.code_dim, "query")
    if not code.any():
        raise ArgumentError("query must not be all zeros (its cosine is undefined)")
    return MemoryQuery(view, code, *_NO_TERMS)


def query_code(w: Writer, q: str | np.ndarray) -> np.ndarray | None:
    """The code of a text or a checked code; None for a text without content words."""
    return query(w, q, terms=False).code


def recall(
    w: Writer,
    q: str | np.ndarray,
    k: int,
    threshold: float,
    touch: bool,
    rank: str | None = None,
) -> list[Hit]:
    """See :meth:`HolographicMemory.recall`."""
    k = check_k("k", k)
    threshold = check_threshold(threshold)
    check_touch(w, touch)
    text = isinstance(q, str)
    rank = check_rank(rank, text)
    code = None if text or w.compact is not None else _plain_code(q, w.store.code_dim)
    if code is not None:
        hits = _cosine_of_code(w, code, k, threshold)
    else:
        mq = query(w, q, terms=rank != "cosine")
        hits = _ranked(w, mq, k, threshold, rank)
    return touch_hits(w, [hits])[0] if touch and hits else hits


def _plain_code(q: object, dim: int) -> np.ndarray | None:
    """``q`` itself if it is a C-contiguous float32 ``(dim,)`` array (the kernel checks its
    values), else None (:func:`as_code` converts and checks it)."""
    if type(q) is np.ndarray and q.dtype == _F32 and q.shape == (dim,) and q.flags.c_contiguous:
        return q
    return None


_F32 = np.dtype(np.float32)


def _cosine_of_code(w: Writer, code: np.ndarray, k: int, threshold: float) -> list[Hit]:
    """A code query's cosine top-k in one kernel dispatch: :func:`_ranked`'s answer.

    Only for a memory of at most one scan block (``holographic.ONE_BLOCK_ROWS``
    rows: the serial kernel); a larger one takes the checked path and its parallel
    scan. The mirror's arrays are float32 C-contiguous codes and a uint8 mask by
    construction (:class:`~sentient_core.memory.mirror.Mirror`), so the unchecked
    kernel reads them directly, and the query's values are checked by the kernel
    itself (zero or non-finite: status -2). Any status but a count takes the
    checked path, which raises the error a checked recall raises.
    """
    while True:
        m = w.mirror
        n = m.n
        kk = min(k, n)
        if kk == 0 or n > holographic.ONE_BLOCK_ROWS:
            break
        ids = np.empty(kk, dtype=np.int64)
        scores = np.empty(kk)
        got = unchecked.holographic_topk_cosine(
            m.codes[:n], code, k, True, True, m.valid[:n], ids, scores
        )
        if got < 0:  # -2: a zero or non-finite query; -3: a non-finite row (named there)
            break
        if got < kk:
            ids, scores = ids[:got], scores[:got]
        hits = read_hits(w, m, ids, scores, threshold, cosine=scores)
        if hits is not None:
            return hits
    return _ranked(w, query(w, code, terms=False), k, threshold, "cosine")


def _ranked(w: Writer, mq: MemoryQuery, k: int, threshold: float, rank: str) -> list[Hit]:
    """The ``k`` best of ``mq`` by ``rank`` (bm25/hybrid: :mod:`~sentient_core.memory.lexical`).

    A hit found retired by another process is masked and the search runs again
    on a fresh view.
    """
    if rank == "cosine":
        empty = mq.code is None
    else:
        empty = mq.terms.size == 0 or (rank == "hybrid" and mq.code is None)
    if empty:
        return []
    v = mq.view
    while True:
        m, n = v.mirror, v.n
        if n == 0:
            return []
        if rank == "cosine":
            assert mq.code is not None
            if w.compact is not None:
                rows, scores = w.compact.topk(m.codes, n, mq.code, k, m.valid)
            else:
                rows, scores = holographic.topk_cosine(
                    m.codes[:n], mq.code, k, normalized=True, valid=m.valid[:n]
                )
            hits = read_hits(w, m, rows, scores, threshold, cosine=scores)
        else:
            code = mq.code if rank == "hybrid" else None
            q8 = w.compact.scan(m.codes, n) if w.compact is not None and code is not None else None
            rows, scores, rel, cos = lexical.search(
                v.lexical, m, n, mq.terms, mq.weights, k, rank, code, compact=q8
            )
            hits = read_hits(w, m, rows, scores, threshold, lexical=rel, cosine=cos)
        if hits is not None:
            return hits
        v = w.view()


def recall_batch(
    w: Writer,
    queries: Sequence[str] | np.ndarray,
    k: int,
    threshold: float,
    touch: bool,
    rank: str | None = None,
) -> list[list[Hit]]:
    """See :meth:`HolographicMemory.recall_batch`."""
    k = check_k("k", k)
    threshold = check_threshold(threshold)
    check_touch(w, touch)
    dim = w.store.code_dim
    if isinstance(queries, np.ndarray):
        rank = check_rank(rank, False)
        if queries.ndim != 2 or queries.shape[1] != dim:
            raise ArgumentError(f"queries must have shape (Q, {dim}), got {queries.shape}")
        qcodes = np.ascontiguousarray(queries, dtype=np.float32)
        if not np.isfinite(qcodes).all():
            raise ArgumentError("queries contains non-finite values (NaN or inf)")
        live = qcodes.any(axis=1)
        if not live.all():
            raise ArgumentError(
                f"queries row {int(np.argmin(live))} is all zeros (its cosine is undefined)"
            )
    else:
        texts = list(queries)
        if not all(isinstance(t, str) for t in texts):
            raise ArgumentTypeError("queries must be a sequence of str or a 2-d float array")
        rank = check_rank(rank, True)
        if rank != "cosine":
            ranked = [_ranked(w, query(w, t), k, threshold, rank) for t in texts]
            return touch_hits(w, ranked) if touch else ranked
        qcodes = (
            w.checked_encoder().encode_batch(texts) if texts else np.zeros((0, dim), np.float32)
        )
        live = qcodes.any(axis=1)
    out: list[list[Hit]] = [[] for _ in range(qcodes.shape[0])]
    live_idx = np.flatnonzero(live)
    while live_idx.size:
        v = w.view()
        m, n = v.mirror, v.n
        if n == 0:
            break
        rows, scores = holographic.topk_cosine_batch(
            m.codes[:n],
            np.ascontiguousarray(qcodes[live_idx]),
            k,
            normalized=True,
            valid=m.valid[:n],
        )
        results = [
            read_hits(w, m, rows[j], scores[j], threshold, cosine=scores[j])
            for j in range(rows.shape[0])
        ]
        done = [r for r in results if r is not None]
        if len(done) == len(results):
            for j, q in enumerate(live_idx):
                out[q] = done[j]
            break
    return touch_hits(w, out) if touch else out


def recall_by_smf(w: Writer, s: np.ndarray | Sequence[float], k: int, touch: bool) -> list[Hit]:
    """See :meth:`HolographicMemory.recall_by_smf`."""
    k = check_k("k", k)
    check_touch(w, touch)
    q = np.asarray(s, dtype=np.float64)
    if q.shape != (SMF_AXES,) or not np.isfinite(q).all():
        raise ArgumentError(f"s must be {SMF_AXES} finite floats, got shape {q.shape}")
    while True:
        v = w.view()
        m, n = v.mirror, v.n
        valid = m.valid[:n]
        live = int(np.count_nonzero(valid))
        if live == 0:
            return []
        scores = smf_kernels.similarity(np.ascontiguousarray(q), m.smf[:n])
        scores[valid == 0] = -np.inf
        rows = topk_desc(scores, min(k, live))
        hits = read_hits(w, m, rows, scores[rows], -math.inf)
        if hits is not None:
            break
    return touch_hits(w, [hits])[0] if touch else hits


def recall_by_primes(w: Writer, primes: Iterable[int], k: int, touch: bool) -> list[Hit]:
    """See :meth:`HolographicMemory.recall_by_primes`."""
    k = check_k("k", k)
    check_touch(w, touch)
    query = sorted(set(check_ids(primes, "primes")))
    if not query:
        return []
    while True:
        v = w.view()
        m, n = v.mirror, v.n
        lists = v.primes.rows_of(query)
        cat = np.concatenate(lists) if lists else np.zeros(0, np.int64)
        # Rows appended after we took the mirror (and never a row outside the mirror,
        # whatever a damaged prime snapshot holds: store/prime_snapshot.py).
        cat = cat[(cat >= 0) & (cat < n)]
        if cat.size == 0:
            return []
        rows, overlap = np.unique(cat, return_counts=True)
        keep = m.valid[rows] != 0
        rows, overlap = rows[keep], overlap[keep]
        if rows.size == 0:
            return []
        order = np.lexsort((-rows, -m.created[rows], -overlap))[:k]
        rows, overlap = rows[order], overlap[order]
        hits = read_hits(w, m, rows, overlap / len(query), -math.inf)
        if hits is not None:
            break
    return touch_hits(w, [hits])[0] if touch else hits


def recent(w: Writer, n: int) -> list[TraceRecord]:
    """See :meth:`HolographicMemory.recent`."""
    n = check_k("n", n)
    v = w.view()
    m, total = v.mirror, v.n
    valid = m.valid
    rows: list[int] = []
    stop = total
    while stop > 0 and len(rows) < n:
        start = max(0, stop - max(4 * n, 1024))
        # Rows are assigned in id order, so the highest rows are the newest traces.
        found = np.flatnonzero(valid[start:stop])[::-1] + start
        rows.extend(found[: n - len(rows)].tolist())
        stop = start
    ids = m.row_id[np.array(rows, dtype=np.int64)].tolist()
    with w.store.read() as txn:
        recs = traces.get_many(txn, ids)
    return [r for r in recs if r is not None and not r.retired]


def read_hits(
    w: Writer,
    m: Mirror,
    rows: np.ndarray,
    scores: np.ndarray,
    threshold: float,
    *,
    lexical: np.ndarray | None = None,
    cosine: np.ndarray | None = None,
) -> list[Hit] | None:
    """Read the records of ranked rows; None if some turned out retired (they get masked).

    ``lexical`` and ``cosine`` (aligned with ``rows``) fill the hits' score components.
    """
    # Lists, not masks: a recall's few hits cost less as Python objects than as array ops.
    score_l = scores.tolist()
    row_l = rows.tolist()
    id_l = m.row_id[rows].tolist()
    none = [None] * len(score_l)
    lex = none if lexical is None else lexical.tolist()
    cos = score_l if cosine is scores else none if cosine is None else cosine.tolist()
    if score_l and not min(score_l) >= threshold:
        keep = [i for i, s in enumerate(score_l) if s >= threshold]
        score_l, row_l, id_l, lex, cos = (
            [col[i] for i in keep] for col in (score_l, row_l, id_l, lex, cos)
        )
    recs = w.records.get_many(w.store, id_l)
    stale = [row for row, rec in zip(row_l, recs, strict=True) if rec is None or rec.retired]
    if stale:
        # Retired by another process since our mirror was built: mask and search again.
        w.mask(stale, m)
        return None
    return [
        Hit(record=rec, score=score, row=row, lexical=lx, cosine=cs)
        for row, rec, score, lx, cs in zip(row_l, recs, score_l, lex, cos, strict=True)
        if rec is not None  # never None here (stale is empty): for the type checker
    ]


def check_touch(w: Writer, touch: bool) -> None:
    store = w.store
    if touch and store.readonly:
        raise StoreUsageError(
            f"the store at {store.path} is open read-only, so recall cannot bump"
            " use counts; pass touch=False"
        )


def touch_hits(w: Writer, groups: list[list[Hit]]) -> list[list[Hit]]:
    """Bump use_count/last_access of every hit (once per group it is in), one txn."""
    bumps = Counter(h.record.id for hits in groups for h in hits)
    if not bumps:
        return groups
    now = float(w.clock())
    replace = msgspec.structs.replace

    def write(txn: Txn) -> dict[int, TraceRecord]:
        out = {}
        for tid in sorted(bumps):
            rec = traces.get(txn, tid)
            if rec is None:
                continue
            new = replace(rec, use_count=rec.use_count + bumps[tid], last_access=now)
            traces.update(txn, new)
            out[tid] = new
        return out

    def mirror_it(m: Mirror, updated: dict[int, TraceRecord]) -> None:
        m.last_access[np.array([r.row for r in updated.values()], dtype=np.int64)] = now

    updated = w.commit(write, mirror_it)
    return [
        [replace(h, record=updated.get(h.record.id, h.record)) for h in hits] for hits in groups
    ]


def topk_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, by (score desc, position asc); deterministic."""
    m = scores.shape[0]
    if k < m:
        kth = np.partition(scores, m - k)[m - k]
        above = np.flatnonzero(scores > kth)
        ties = np.flatnonzero(scores == kth)[: k - above.size]
        cand = np.concatenate((above, ties))
    else:
        cand = np.arange(m)
    return cand[np.lexsort((cand, -scores[cand]))]
