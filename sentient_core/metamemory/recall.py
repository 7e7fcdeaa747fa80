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
``k × RERANK_POOL`` best (at most ``RERANK_MAX``, at least ``k``; exactly, over
every active trace), and each one's
relevance factor becomes the mean of that hybrid score and the judge's
calibrated relevance (:func:`sentient_core.relevance.relevance`, idf over the
candidates: which of the question's words tell them apart), the same check the
offline answerer ranks its passages by and the scorer is trained on; the ``k``
best by the score so changed are returned. On the Q/A sets in ``bench/data``
this lifts ingest's answer@1 on debian from 0.87 to 0.97 and learn mode's
answer@5 on pydoc from 0.88 to 0.90, at about 1 ms per recall on those stores
(``python cli.py evaluate``, the latency line); the content terms of a candidate
are kept per trace, so a trace is read once.

Vetoed rows (retired, superseded at the floor, no text, an unsafe source) are
never candidates. The SMF similarity is 0 (recall has no query orientation).

``static`` is a per-row factor table built from the trace records in bulk
(:func:`~sentient_core.store.columns.scorer_columns`, only the fields the factors
need: 0.6 s at 10⁵ traces, 5.9 s at 10⁶), rebuilt when a trace is stored or
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
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from sentient_core.memory import lexical
from sentient_core.metamemory.factors import (
    FACTOR_NAMES,
    RECENCY_HOURS,
    context_for_memory,
    factor_columns,
    trace_source_key,
)
from sentient_core.metamemory.sources import WEIGHTS
from sentient_core.relevance import PassageTerms, TermStats, passage_terms, relevance
from sentient_core.store import traces as store_traces
from sentient_core.store.columns import scorer_columns
from sentient_kernels.overlay import topk_scored
from sentient_kernels.scored_hybrid import Overlay

if TYPE_CHECKING:
    from sentient_core.memory import HolographicMemory
    from sentient_core.memory.writer import MemoryView
    from sentient_core.metamemory.core import MetaMemory

__all__ = ["RERANK_MAX", "RERANK_POOL", "ScoredHit", "ScoredRecall", "rerank_pool"]

_QUERY_DEPENDENT = ("relevance", "smf_similarity", "recency")

RERANK_POOL = 4
"""A text query re-ranks the ``k ×`` this best candidates (see the module docstring)."""
RERANK_MAX = 400
"""…but no more than this many (or ``k``, if larger): a large ``k`` must not cost four
times its records and relevance checks."""


def rerank_pool(k: int) -> int:
    """How many candidates a text query of ``k`` results re-ranks."""
    return max(k, min(k * RERANK_POOL, RERANK_MAX))


_TERMS_CACHED = 2048  # traces whose terms are kept: ~11 kB each for a 1,650-character chunk, ~22 MB


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
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._static = np.zeros(0)
        self._valid = np.zeros(0, dtype=np.uint8)
        self._features = np.zeros((0, len(FACTOR_NAMES)))
        self._static_max = -np.inf
        self._base_static = np.zeros(0)
        self._src_keys: list[str] = []
        self._src_idx = np.zeros(0, dtype=np.int64)
        self._domain_key: tuple | None = None
        self._terms: OrderedDict[int, PassageTerms] = OrderedDict()

    def _weights(self) -> np.ndarray:
        return np.asarray(self.meta.scorer.weights, dtype=np.float64)

    def _refresh(self, view: MemoryView, domain: str, now: float) -> None:
        """Rebuild the per-row factors when the memory, the scorer or the credit changed;
        then the source-weight column for ``domain`` when its weights changed."""
        m, n = view.mirror, view.n
        key = (n, view.generation, self.meta.scorer.version, self._credit_mark())
        store = self.memory.datastore
        if key != self._key:
            with store.read() as txn:
                cols = scorer_columns(txn)
                # No domain here: the source-weight column is filled per domain below.
                ctx = context_for_memory(txn, domain="", now=now)
            feats, veto = factor_columns(cols, ctx)
            w = self._weights()
            static_w = w.copy()
            static_w[[FACTOR_NAMES.index(c) for c in (*_QUERY_DEPENDENT, "source_weight")]] = 0.0
            memo: dict[str, str] = {}
            src_keys = [memo.setdefault(src, trace_source_key(src)) for src in cols.sources]
            keys = sorted(set(memo.values()))
            index = {k: i for i, k in enumerate(keys)}
            # Rows of this mirror only (a trace stored after it was built waits for refresh).
            at = cols.rows
            ok = (at < n) & (m.row_id[np.minimum(at, max(n - 1, 0))] == cols.ids) if n else at < 0
            at = at[ok]
            self._base_static = np.zeros(n)
            self._valid = np.zeros(n, dtype=np.uint8)
            self._features = np.zeros((n, len(FACTOR_NAMES)))
            self._src_keys = keys
            self._src_idx = np.full(n, len(keys), dtype=np.int64)  # len(keys): no source
            if at.size:
                self._base_static[at] = feats[ok] @ static_w
                self._valid[at] = ~veto[ok] & (m.valid[at] != 0)
                self._features[at] = feats[ok]
                self._src_idx[at] = np.fromiter(
                    (index[k] for k, keep in zip(src_keys, ok.tolist(), strict=True) if keep),
                    dtype=np.int64,
                    count=int(at.size),
                )
            self._key = key
            self._domain_key = None
        with store.read() as txn:
            weights = {w.source: w.weight for w in WEIGHTS.iter(txn, domain)}
        domain_key = tuple(sorted(weights.items()))  # the column depends on these alone
        if domain_key == self._domain_key:
            return
        # The only domain-dependent factor: a lookup per source, gathered per row.
        table = np.array(
            [min(2.0, max(0.0, weights.get(k, 1.0))) / 2.0 if k else 0.5 for k in self._src_keys]
            + [0.5]
        )
        column = table[self._src_idx]
        col = FACTOR_NAMES.index("source_weight")
        self._features[:, col] = column
        self._static = self._base_static + self._weights()[col] * column
        live = self._valid != 0
        self._static_max = float(self._static[live].max()) if live.any() else -np.inf
        self._domain_key = domain_key

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
        from sentient_core.metamemory.domain import domain_of

        now = time.time() if now is None else float(now)
        if not domain:
            domain = domain_of(query) if isinstance(query, str) else "general"
        code = self.memory.query_code(query)
        view = self.memory.view()
        if code is None or view.n == 0:
            return []
        self._refresh(view, domain, now)
        m = view.mirror
        # The rows the factor table covers (the view's: a trace stored since waits
        # for the next recall's view).
        n = min(view.n, self._static.shape[0])
        w = self._weights()
        w_cos = float(w[FACTOR_NAMES.index("relevance")])
        w_rec = float(w[FACTOR_NAMES.index("recency")])
        recency_s = RECENCY_HOURS * 3600.0
        lex: np.ndarray | None = None
        terms, weights = lexical.query_terms(query) if isinstance(query, str) else (None, None)
        if terms is not None and weights is not None and terms.size:
            overlay = Overlay(
                self._static[:n],
                m.last_access[:n],
                w_cos,
                w_rec,
                now,
                recency_s,
                self._static_max,
            )
            rows, scores, lex, _ = lexical.search(
                view.lexical,
                m,
                n,
                terms,
                weights,
                rerank_pool(k),
                "hybrid",
                code,
                overlay=overlay,
                valid=self._valid[:n],
            )
        else:
            rows, scores = topk_scored(
                m.codes[:n],
                code,
                k,
                valid=self._valid[:n],
                static=self._static[:n],
                last_access=m.last_access[:n],
                w_cos=w_cos,
                w_rec=w_rec,
                now=now,
                recency_s=recency_s,
            )
        q = code.astype(np.float64)
        q /= np.linalg.norm(q)
        alpha = lexical.HYBRID_ALPHA
        with self.memory.datastore.read() as txn:  # one transaction for every hit's record
            records = [store_traces.get(txn, int(m.row_id[r])) for r in rows.tolist()]
        cosines = [float(m.codes[r].astype(np.float64) @ q) for r in rows.tolist()]
        col = FACTOR_NAMES.index("relevance")
        if lex is None:
            rel_factor = cosines
        else:
            hybrid = [
                (float(x) + alpha * c) / (1.0 + alpha)
                for x, c in zip(lex.tolist(), cosines, strict=True)
            ]
            assert isinstance(query, str)
            rel_factor = self._rerank_factor(query, records, hybrid)
            # The kernel scored the hybrid; the score moves by the factor's change.
            scores = scores + w_cos * (np.asarray(rel_factor) - np.asarray(hybrid))
        order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), int(rows[i])))[:k]
        out = []
        for i in order:
            r, s, rec = int(rows[i]), float(scores[i]), records[i]
            f = self._features[r].copy()
            f[col] = rel_factor[i]
            f[FACTOR_NAMES.index("recency")] = float(
                np.exp(-max(0.0, now - m.last_access[r]) / (RECENCY_HOURS * 3600.0))
            )
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

    def _rerank_factor(self, query: str, records: list[Any], hybrid: list[float]) -> list[float]:
        """Each candidate's relevance factor: the mean of its hybrid score and its
        calibrated relevance to ``query`` (idf over the candidates)."""
        terms = [self._passage_terms(rec) for rec in records]
        stats = TermStats(t for t in terms if t is not None)
        return [
            h if t is None else (h + relevance(query, t, stats)) / 2.0
            for h, t in zip(hybrid, terms, strict=True)
        ]

    def _passage_terms(self, rec: Any) -> PassageTerms | None:
        if rec is None or not rec.text:
            return None
        got = self._terms.get(rec.id)
        if got is None or got.text != rec.text:
            got = passage_terms(rec.text)
            self._terms[rec.id] = got
            if len(self._terms) > _TERMS_CACHED:
                self._terms.popitem(last=False)
        else:
            self._terms.move_to_end(rec.id)
        return got

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
            if h.record is not None and h.score >= threshold
        ]
        return self.memory.touch(hits) if touch and hits else hits

    def explain(self, query: str, k: int = 10, **kw: Any) -> list[dict[str, Any]]:
        """:meth:`recall` as plain dicts: id, score, cosine, every factor's contribution."""
        return [
            {
                "id": h.record.id if h.record is not None else -1,
                "score": h.score,
                "cosine": h.cosine,
                "contributions": {k2: v for k2, v in h.contributions.items() if v != 0.0},
                "source": h.record.source if h.record is not None else "",
                "text": h.record.text[:200] if h.record is not None else "",
            }
            for h in self.recall(query, k, **kw)
        ]
