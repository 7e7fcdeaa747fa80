"""Scored recall: the learned scorer's ranking Σ w_k f_k over the memory, in one scan.

:meth:`ScoredRecall.recall` ranks every active trace by

    w_relevance · relevance + w_recency · exp(−age / 24 h) + static

where ``static`` is the weighted sum of the factors that depend neither on the
query nor on the clock (strength, importance, access, efficacy, the source's
weight in the domain, surprise, open debt, the bias), one float per code row,
and ``relevance`` is the memory's own default ranking score:

* a text query: the hybrid ``(bm25/ceiling + α·cos)/(1 + α)`` of
  :meth:`HolographicMemory.recall`, with the overlay added inside the BM25 +
  cosine selection (:mod:`sentient_kernels.scored_hybrid`): with the baseline weights
  and no evidence yet, the kernel's order is the hybrid's;
* a code (or a text without content words): the code cosine, with the overlay
  inside the streaming cosine scan (:func:`sentient_kernels.overlay.topk_scored`).

A text query then re-ranks its candidates: the kernel selects the
``max(k, RERANK_POOL)`` best (exactly, over every active trace), and each of the
:data:`RERANK_POOL` first one's relevance factor becomes the mean of that hybrid
score and the judge's calibrated relevance
(:func:`sentient_core.relevance.relevance`, idf over those candidates: which of
the question's words tell them apart), the same check the offline answerer ranks
its passages by and the scorer is trained on; they are ordered by the score so
changed, and a larger ``k`` continues in the kernel's order. The pool does not
depend on ``k``, so every top-k is a prefix of the top-(k+1) (issue 22: with a
pool of ``4k`` the top 1 could differ from the first of the top 5). On the Q/A
sets in ``bench/data`` this lifts ingest's answer@1 and learn mode's answer@5
(``python cli.py evaluate``, which also prints the latency); the content terms
of a candidate are kept per trace, so a trace is read once.

Vetoed rows (retired, superseded at the floor, no text, an unsafe source) are
never candidates. The SMF similarity is 0 (recall has no query orientation).

``static`` is a per-row factor table built in bulk
(:func:`~sentient_core.store.colblocks.scorer_columns`: from the column blocks, which
keep the counts, the blank flag and an interned source per row, against 6.9 s at 10⁶
traces decoding every record, as a store without the blocks' second layout still
does). The factors are computed 65,536 traces at a time and the table keeps one float
a row (a hit's factors are computed again from the same snapshot of the columns):
0.5–0.7 s and +119 MB at 10⁶ traces, against 1.2–1.6 s and +225 MB holding the
whole (traces × factors) matrix (the first :meth:`ScoredRecall.hits` on
``bench/ten_million.py``'s 1M store, opened read-only; at 10⁷ traces the matrix and its
transient copies were ~4 GB).
It is rebuilt when a trace is stored or
retired, the scorer trains a batch or credit changes; the source-weight column
alone is rebuilt when the domain's weights differ. Use counts and success counts
changed in between (recall touches, judged outcomes) reach the usage priors at
the next rebuild: rebuilding on every touch would cost the table per recall. The
selection and the re-rank cost 1.22× the hybrid at 10⁶ traces and 2.6× at 10⁵
(``bench/scored_recall.py --memory``: 23.7 vs 19.5 ms, 6.8 vs 2.6 ms; the
selection alone was 1.03× at 10⁶). Explanations use the same table as the score,
so contributions add up to it.

:meth:`ScoredRecall.explain` gives each factor's contribution ``w_k · f_k`` to the
score of each recalled trace (``recall --explain``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from sentient_core.analysis import query_words
from sentient_core.memory import lexical
from sentient_core.metamemory.domain import GENERAL, domain_of
from sentient_core.metamemory.factors import (
    FACTOR_NAMES,
    RECENCY_HOURS,
    FactorContext,
    context_for_memory,
    factor_columns,
    trace_source_key,
)
from sentient_core.metamemory.sources import WEIGHTS
from sentient_core.relevance import PassageTerms, relevance_among
from sentient_core.store import traces as store_traces
from sentient_core.store.colblocks import scorer_columns
from sentient_kernels.overlay import topk_scored
from sentient_kernels.overlay_q8 import topk_scored_quantised
from sentient_kernels.scored_hybrid import Overlay

if TYPE_CHECKING:
    from sentient_core.analysis import QueryWords
    from sentient_core.memory import HolographicMemory
    from sentient_core.memory.mirror import Mirror
    from sentient_core.memory.writer import MemoryView
    from sentient_core.metamemory.core import MetaMemory
    from sentient_core.store.columns import ScorerColumns
    from sentient_core.store.txn import Txn

__all__ = [
    "RERANK_POOL",
    "TABLE_BLOCK",
    "FactorTable",
    "RerankTerms",
    "ScoredHit",
    "ScoredRecall",
    "explained",
]

_RELEVANCE_COL = FACTOR_NAMES.index("relevance")
_RECENCY_COL = FACTOR_NAMES.index("recency")
_SOURCE_COL = FACTOR_NAMES.index("source_weight")

RERANK_POOL = 20
"""A text query re-ranks its this many best candidates, whatever ``k`` (see the module
docstring)."""


QUERY_DEPENDENT = ("relevance", "smf_similarity", "recency")
"""Factors computed per query (never in the static sum)."""

TABLE_BLOCK = 1 << 16
"""Traces whose factors are computed at a time: the table keeps one float a row, not
the (traces × factors) matrix (1.1 GB at 10M traces, and three transient copies of it)."""

_TERMS_CACHED = 2048  # traces whose terms are kept: ~11 kB each for a 1,650-character chunk


class FactorTable:
    """Per-row static factors of one mirror's rows.

    For every row: the weighted sum of the factors that depend neither on the query
    nor on the clock (``static``), whether it is a candidate (``valid``: no veto),
    and what gives a hit's factors again (the snapshot of the scorer's columns and
    the context it was built from). :class:`ScoredRecall` and each shard of a sharded
    memory (:mod:`sentient_core.cluster.scored_shard`) build it with this code, so a
    row's static score is the same number in both.

    Attributes
    ----------
    key : tuple or None
        What the table was built for (the caller's: rows, generation, scorer, credit).
    static : ndarray of float64
        Each row's static score with the current domain's source weights.
    valid : ndarray of uint8
        1 for a row that is a candidate (in the mirror, active, no veto).
    static_max : float
        The largest ``static`` of a valid row (``-inf``: none).
    src_keys : list of str
        The distinct source keys of the rows.
    """

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.static = np.zeros(0)
        self.valid = np.zeros(0, dtype=np.uint8)
        self.static_max = -np.inf
        self.src_keys: list[str] = []
        self._domain_key: tuple | None = None
        self._base = np.zeros(0)
        self._src_idx = np.zeros(0, dtype=np.int64)
        self._entry = np.zeros(0, dtype=np.int64)  # each row's entry in _cols, -1: none
        self._column = np.zeros(0)
        self._cols: ScorerColumns | None = None
        self._ctx: FactorContext | None = None

    def build(
        self,
        cols: ScorerColumns,
        ctx: FactorContext,
        mirror: Mirror,
        n: int,
        w: np.ndarray,
        key: tuple,
    ) -> None:
        """The static factors of rows ``[0, n)`` of ``mirror`` from the scorer's columns
        ``cols`` and the context ``ctx`` (no domain: the source-weight column is set by
        :meth:`set_domain`), weighted by ``w``; the table is then ``key``'s."""
        static_w = np.asarray(w, dtype=np.float64).copy()
        static_w[[FACTOR_NAMES.index(c) for c in (*QUERY_DEPENDENT, "source_weight")]] = 0.0
        # Source keys per distinct source, gathered per row (no loop over the traces).
        name_keys = [trace_source_key(src) for src in cols.source_names]
        keys = sorted(set(name_keys))
        index = {k: i for i, k in enumerate(keys)}
        key_of_name = np.array([index[k] for k in name_keys], dtype=np.int64)
        self._base = np.zeros(n)
        self.valid = np.zeros(n, dtype=np.uint8)
        self.src_keys = keys
        self._src_idx = np.full(n, len(keys), dtype=np.int64)  # len(keys): no source
        self._entry = np.full(n, -1, dtype=np.int64)
        for lo in range(0, len(cols), TABLE_BLOCK):
            part = cols.take(slice(lo, lo + TABLE_BLOCK))
            # Rows of this mirror only (a trace stored after it was built waits for a
            # rebuild).
            at = part.rows
            if n:
                ok = (at < n) & (mirror.row_id[np.minimum(at, n - 1)] == part.ids)
            else:
                ok = np.zeros(at.shape, dtype=np.bool_)
            if not ok.any():
                continue
            feats, veto = factor_columns(part, ctx)
            at = at[ok]
            self._base[at] = feats[ok] @ static_w
            self.valid[at] = ~veto[ok] & (mirror.valid[at] != 0)
            self._src_idx[at] = key_of_name[part.source_ids[ok]]
            self._entry[at] = lo + np.flatnonzero(ok)
        self._cols, self._ctx = cols, ctx
        self.key = key
        self._domain_key = None

    def set_domain(self, weights: Mapping[str, float], w_src: float) -> None:
        """The source-weight column for a domain's ``weights`` (source key → weight),
        weighted by ``w_src``: ``static`` and ``static_max`` follow."""
        domain_key = (tuple(sorted(weights.items())), float(w_src))
        if domain_key == self._domain_key:
            return
        # The only domain-dependent factor: a lookup per source, gathered per row.
        table = np.array(
            [min(2.0, max(0.0, weights.get(k, 1.0))) / 2.0 if k else 0.5 for k in self.src_keys]
            + [0.5]
        )
        self._column = table[self._src_idx]
        self.static = self._base + float(w_src) * self._column
        live = self.valid != 0
        self.static_max = float(self.static[live].max()) if live.any() else -np.inf
        self._domain_key = domain_key

    def row_factors(self, rows: np.ndarray) -> np.ndarray:
        """The factors of ``rows`` as the table saw them (its snapshot of the columns and
        the context), with the domain's source-weight column; zeros for a row it lacks
        (the query-dependent columns are the caller's)."""
        out = np.zeros((rows.shape[0], len(FACTOR_NAMES)))
        entry = self._entry[rows]
        have = np.flatnonzero(entry >= 0)
        if have.size and self._cols is not None and self._ctx is not None:
            # Increasing entries keep the id order the factor lookups by id rely on.
            order = np.argsort(entry[have], kind="stable")
            feats, _ = factor_columns(self._cols.take(entry[have][order]), self._ctx)
            out[have[order]] = feats
        out[:, _SOURCE_COL] = self._column[rows]
        return out


class RerankTerms:
    """The re-rank's relevance factor, with recently read traces' content terms kept."""

    def __init__(self) -> None:
        self._terms: OrderedDict[int, PassageTerms] = OrderedDict()

    def factor(self, words: QueryWords, records: Sequence[Any], hybrid: list[float]) -> list[float]:
        """Each candidate's relevance factor: the mean of its hybrid score and its
        calibrated relevance to the question (idf over the candidates); a record's terms
        are cached by its id."""
        cached: list[str | PassageTerms | None] = []
        for rec in records:
            if rec is None or not rec.text:
                cached.append(None)
                continue
            got = self._terms.get(rec.id)
            if got is None or got.text != rec.text:
                cached.append(rec.text)  # read by relevance_among, kept below
            else:
                self._terms.move_to_end(rec.id)
                cached.append(got)
        scores, terms = relevance_among(words, cached)
        for rec, given, t in zip(records, cached, terms, strict=True):
            if isinstance(given, str) and t is not None:
                self._terms[rec.id] = t
                if len(self._terms) > _TERMS_CACHED:
                    self._terms.popitem(last=False)
        return [h if r is None else (h + r) / 2.0 for h, r in zip(hybrid, scores, strict=True)]


class ScoredHit(msgspec.Struct, frozen=True):
    """One recalled trace: its score, its cosine, its normalised BM25 (None for a code
    query) and each factor's contribution."""

    record: Any
    row: int
    score: float
    cosine: float
    contributions: dict[str, float]
    lexical: float | None = None


class ScoredRecall:
    """Recall ranked by the learned scorer (see the module docstring).

    Parameters
    ----------
    memory : HolographicMemory
    meta : MetaMemory
        Its scorer's weights, credit, source weights and debts.
    """

    def __init__(self, memory: HolographicMemory, meta: MetaMemory) -> None:
        self.memory = memory
        self.meta = meta
        # The int8 codes the full scans read, if the memory keeps them (fixed at its open).
        self._compact = memory.compact_codes
        self._lock = threading.Lock()
        self._table = FactorTable()
        self._rerank = RerankTerms()

    def _refresh(
        self, txn: Txn, view: MemoryView, domain: str, now: float, w: np.ndarray, version: int
    ) -> None:
        """Rebuild the per-row factors when the memory, the scorer (``version``, weights
        ``w``) or the credit changed; then the source-weight column for ``domain`` when
        its weights changed. Reads through ``txn``, the recall's one read transaction."""
        m, n = view.mirror, view.n
        key = (n, view.generation, version, self._credit_mark())
        table = self._table
        if key != table.key:
            # No domain here: the source-weight column is filled per domain below.
            ctx = context_for_memory(txn, domain="", now=now)
            table.build(scorer_columns(txn), ctx, m, n, w, key)
        weights = {sw.source: sw.weight for sw in WEIGHTS.iter(txn, domain)}
        if domain:
            # Wisdom's advice caps the weights of the sources it found wrong (a use).
            weights = self.meta.advisor.recall_weights(domain, weights, set(table.src_keys) - {""})
        table.set_domain(weights, float(w[_SOURCE_COL]))

    def _credit_mark(self) -> tuple[int, int]:
        return id(self.meta.credit), self.meta.credit.version

    def recall(
        self, query: str | np.ndarray, k: int = 10, *, domain: str = "", now: float | None = None
    ) -> list[ScoredHit]:
        """The ``k`` traces with the highest scored rank, best first (ties: the older row).

        Thread-safe: one recall at a time per instance (a server shares one), each
        against the factor table it refreshed.
        """
        with self._lock:
            return self._recall(query, k, domain=domain, now=now)

    def _recall(
        self, query: str | np.ndarray, k: int, *, domain: str, now: float | None
    ) -> list[ScoredHit]:
        # The query is read once (its words, then memory's view, code and terms) and
        # every stored record the recall needs is read in one transaction.
        now = time.time() if now is None else float(now)
        words = query_words(query) if isinstance(query, str) else None
        if not domain:
            domain = domain_of(words) if words is not None else GENERAL
        mq = self.memory.query(query)
        view = mq.view
        if mq.code is None or view.n == 0:
            return []
        scorer = self.meta.scorer
        w = np.asarray(scorer.weights, dtype=np.float64)
        version = scorer.version
        m = view.mirror
        w_cos = float(w[_RELEVANCE_COL])
        w_rec = float(w[_RECENCY_COL])
        recency_s = RECENCY_HOURS * 3600.0
        lex: np.ndarray | None = None
        with view.store.read() as txn:
            self._refresh(txn, view, domain, now, w, version)
            # The rows the factor table covers (the view's: a trace stored since waits
            # for the next recall's view).
            table = self._table
            n = min(view.n, table.static.shape[0])
            q8 = self._compact.scan(m.codes, n) if self._compact is not None else None
            if words is not None and mq.terms.size:
                overlay = Overlay(
                    table.static[:n],
                    m.last_access[:n],
                    w_cos,
                    w_rec,
                    now,
                    recency_s,
                    table.static_max,
                )
                rows, scores, lex, _ = lexical.search(
                    view.lexical,
                    m,
                    n,
                    mq.terms,
                    mq.weights,
                    max(k, RERANK_POOL),
                    "hybrid",
                    mq.code,
                    overlay=overlay,
                    valid=table.valid[:n],
                    compact=q8,
                )
            else:
                # From the int8 copy when the memory keeps one: the same rows and scores.
                scan = (
                    topk_scored
                    if q8 is None
                    else partial(topk_scored_quantised, q8.quantised, gather=q8.gather)
                )
                rows, scores = scan(
                    m.codes[:n],
                    mq.code,
                    k,
                    valid=table.valid[:n],
                    static=table.static[:n],
                    last_access=m.last_access[:n],
                    w_cos=w_cos,
                    w_rec=w_rec,
                    now=now,
                    recency_s=recency_s,
                )
            records = store_traces.get_many(txn, m.row_id[rows].tolist())
        q = mq.code.astype(np.float64)
        q /= np.linalg.norm(q)
        cosines = (m.codes[rows].astype(np.float64) @ q).tolist()
        # The kernel's order: score desc, row asc.
        order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), int(rows[i])))
        if lex is None:
            rel_factor = cosines
        else:
            # The first RERANK_POOL of the kernel's order are re-ranked; the rest follow.
            alpha = lexical.HYBRID_ALPHA
            hybrid = [
                (float(x) + alpha * c) / (1.0 + alpha)
                for x, c in zip(lex.tolist(), cosines, strict=True)
            ]
            head, tail = order[:RERANK_POOL], order[RERANK_POOL:]
            assert words is not None
            factor = self._rerank.factor(
                words, [records[i] for i in head], [hybrid[i] for i in head]
            )
            rel_factor = list(hybrid)
            for i, f in zip(head, factor, strict=True):
                rel_factor[i] = f
            # The kernel scored the hybrid; the score moves by the factor's change.
            scores = scores + w_cos * (np.asarray(rel_factor) - np.asarray(hybrid))
            order = sorted(head, key=lambda i: (-float(scores[i]), int(rows[i]))) + tail
        order = order[:k]
        feats = self._table.row_factors(rows[order])
        out = []
        for j, i in enumerate(order):
            r, s, rec = int(rows[i]), float(scores[i]), records[i]
            f = feats[j]
            f[_RELEVANCE_COL] = rel_factor[i]
            f[_RECENCY_COL] = float(np.exp(-max(0.0, now - m.last_access[r]) / recency_s))
            contrib = {name: float(w[j] * f[j]) for j, name in enumerate(FACTOR_NAMES)}
            out.append(
                ScoredHit(
                    record=rec,
                    row=r,
                    score=s,
                    cosine=cosines[i],
                    contributions=contrib,
                    lexical=None if lex is None else float(lex[i]),
                )
            )
        return out

    def hits(
        self, query: str | np.ndarray, k: int = 10, *, threshold: float = 0.0, touch: bool = False
    ) -> list[Any]:
        """:meth:`recall` as memory :class:`~sentient_core.memory.Hit` s scoring at least
        ``threshold``; ``touch`` bumps their use counts as :meth:`HolographicMemory.recall`
        does."""
        from sentient_core.memory import Hit

        hits = [
            Hit(record=h.record, score=h.score, row=h.row, lexical=h.lexical, cosine=h.cosine)
            for h in self.recall(query, k)
            # A trace retired by another process since the factor table was built is gone.
            if h.record is not None and not h.record.retired and h.score >= threshold
        ]
        return self.memory.touch(hits) if touch and hits else hits

    def explain(self, query: str, k: int = 10, **kw: Any) -> list[dict[str, Any]]:
        """:meth:`recall` as plain dicts: id, score, cosine, every factor's contribution."""
        return explained(self.recall(query, k, **kw))


def explained(hits: Sequence[ScoredHit]) -> list[dict[str, Any]]:
    """Scored hits as plain dicts: id, score, cosine, every non-zero factor's contribution,
    source and the text's start (what ``recall --explain`` prints)."""
    return [
        {
            "id": h.record.id if h.record is not None else -1,
            "score": h.score,
            "cosine": h.cosine,
            "contributions": {k2: v for k2, v in h.contributions.items() if v != 0.0},
            "source": h.record.source if h.record is not None else "",
            "text": h.record.text[:200] if h.record is not None else "",
        }
        for h in hits
    ]
