"""A shard's side of the scored recall: its per-row scorer table and its scored top-k.

:class:`ScoredTable` is :class:`~sentient_core.metamemory.recall.ScoredRecall`'s factor
table for one shard's rows, built by the same operations (so every row's static
score is the one a single memory computes for that trace) from the shard's own
column blocks and a :class:`~sentient_core.metamemory.factors.FactorContext` the
cluster's meta-memory owner hands it (credit, open debts and superseded traces
of this shard, by local id). The source-weight column is set per domain from the
weights the owner sends. The search is the single memory's: the scored hybrid
(:func:`sentient_core.memory.lexical.rank_rows` with the overlay, the whole
corpus's BM25 statistics given) for a text, the scored cosine scan for a code.
"""

from __future__ import annotations

import numpy as np

from sentient_core.cluster.wire import CorpusStats, ShardHits
from sentient_core.memory import lexical
from sentient_core.memory.writer import MemoryView
from sentient_core.metamemory.factors import (
    FACTOR_NAMES,
    FactorContext,
    factor_columns,
    trace_source_key,
)
from sentient_core.store.colblocks import scorer_columns
from sentient_core.store.columns import ScorerColumns
from sentient_kernels.overlay import topk_scored
from sentient_kernels.scored_hybrid import Overlay

__all__ = ["ScoredTable"]

_QUERY_DEPENDENT = ("relevance", "smf_similarity", "recency")
_SOURCE_COL = FACTOR_NAMES.index("source_weight")
_RECENCY_COL = FACTOR_NAMES.index("recency")
_TABLE_BLOCK = 1 << 16


class ScoredTable:
    """One shard's scorer table (see the module docstring); one per :class:`ShardServer`."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.domain_key: tuple | None = None
        self.static = np.zeros(0)
        self.valid = np.zeros(0, dtype=np.uint8)
        self.static_max = -np.inf
        self.src_keys: list[str] = []
        self._base = np.zeros(0)
        self._src_idx = np.zeros(0, dtype=np.int64)
        self._entry = np.zeros(0, dtype=np.int64)
        self._column = np.zeros(0)
        self._cols: ScorerColumns | None = None
        self._ctx: FactorContext | None = None

    def build(self, view: MemoryView, key: tuple, ctx: FactorContext, w: np.ndarray) -> list[str]:
        """Rebuild the per-row static factors unless ``key`` (with the view's rows and
        generation) is the table's; returns the shard's source keys."""
        m, n = view.mirror, view.n
        full_key = (n, view.generation, *key)
        if full_key == self.key:
            return self.src_keys
        with view.store.read() as txn:
            cols = scorer_columns(txn)
        static_w = np.asarray(w, dtype=np.float64).copy()
        static_w[[FACTOR_NAMES.index(c) for c in (*_QUERY_DEPENDENT, "source_weight")]] = 0.0
        name_keys = [trace_source_key(src) for src in cols.source_names]
        keys = sorted(set(name_keys))
        index = {k: i for i, k in enumerate(keys)}
        key_of_name = np.array([index[k] for k in name_keys], dtype=np.int64)
        self._base = np.zeros(n)
        self.valid = np.zeros(n, dtype=np.uint8)
        self.src_keys = keys
        self._src_idx = np.full(n, len(keys), dtype=np.int64)
        self._entry = np.full(n, -1, dtype=np.int64)
        for lo in range(0, len(cols), _TABLE_BLOCK):
            part = cols.take(slice(lo, lo + _TABLE_BLOCK))
            at = part.rows
            if n:
                ok = (at < n) & (m.row_id[np.minimum(at, n - 1)] == part.ids)
            else:
                ok = np.zeros(at.shape, dtype=np.bool_)
            if not ok.any():
                continue
            feats, veto = factor_columns(part, ctx)
            at = at[ok]
            self._base[at] = feats[ok] @ static_w
            self.valid[at] = ~veto[ok] & (m.valid[at] != 0)
            self._src_idx[at] = key_of_name[part.source_ids[ok]]
            self._entry[at] = lo + np.flatnonzero(ok)
        self._cols, self._ctx = cols, ctx
        self.key = full_key
        self.domain_key = None
        return keys

    def set_domain(self, weights: dict[str, float], w_src: float) -> None:
        """The source-weight column for a domain's weights (after the owner's advice)."""
        domain_key = (tuple(sorted(weights.items())), float(w_src))
        if domain_key == self.domain_key:
            return
        table = np.array(
            [min(2.0, max(0.0, weights.get(k, 1.0))) / 2.0 if k else 0.5 for k in self.src_keys]
            + [0.5]
        )
        self._column = table[self._src_idx]
        self.static = self._base + w_src * self._column
        live = self.valid != 0
        self.static_max = float(self.static[live].max()) if live.any() else -np.inf
        self.domain_key = domain_key

    def search(
        self,
        view: MemoryView,
        code: np.ndarray,
        terms: np.ndarray | None,
        weights: np.ndarray | None,
        df: np.ndarray | None,
        corpus: CorpusStats | None,
        k: int,
        overlay_args: tuple[float, float, float, float],
        upto: int,
        base: np.int64,
    ) -> ShardHits:
        """The scored top-k of this shard (text: the scored hybrid with the whole corpus's
        BM25 statistics; ``terms`` None: the scored cosine scan), with the rows' codes."""
        m = view.mirror
        n = min(upto, view.n, self.static.shape[0])
        w_cos, w_rec, now, recency_s = overlay_args
        if n == 0:
            return ShardHits(ids=np.zeros(0, np.int64), scores=np.zeros(0))
        lex = None
        if terms is not None:
            assert weights is not None and corpus is not None
            overlay = Overlay(
                self.static[:n], m.last_access[:n], w_cos, w_rec, now, recency_s, self.static_max
            )
            rows, scores, lex, _ = lexical.rank_rows(
                view.lexical.packed,
                n,
                self.valid[:n],
                m.doc_len,
                float(corpus.n_docs),
                float(corpus.avgdl),
                terms,
                weights,
                k,
                "hybrid",
                m.codes,
                code,
                overlay=overlay,
                df=df,
            )
        else:
            rows, scores = topk_scored(
                m.codes[:n],
                code,
                k,
                valid=self.valid[:n],
                static=self.static[:n],
                last_access=m.last_access[:n],
                w_cos=w_cos,
                w_rec=w_rec,
                now=now,
                recency_s=recency_s,
            )
        # The rows' codes, not their cosines: a product over other rows can round a row's
        # dot product differently (BLAS blocks rows), so the caller computes them over the
        # merged hits, as one memory does over its hits.
        return ShardHits(ids=base | m.row_id[rows], scores=scores, lexical=lex, codes=m.codes[rows])

    def df(self, view: MemoryView, terms: np.ndarray) -> np.ndarray:
        """Document frequencies over the scorer's candidates (its ``valid``), as the
        single memory's scored hybrid counts them."""
        from sentient_kernels import doc_freqs

        n = min(view.n, self.valid.shape[0])
        if n == 0 or terms.size == 0:
            return np.zeros(terms.size, dtype=np.int64)
        return doc_freqs.doc_freqs_unchecked(view.lexical.packed, n, self.valid, terms)

    def factors(
        self, view: MemoryView, rows: np.ndarray, now: float, recency_s: float
    ) -> np.ndarray:
        """The factors of ``rows`` as the table saw them (its snapshot of the columns and
        the context), with the domain's source-weight column and the recency at ``now``;
        zeros for a row it lacks (relevance is the caller's)."""
        out = self._factors(rows)
        last = view.mirror.last_access
        for j, r in enumerate(rows.tolist()):
            out[j, _RECENCY_COL] = float(np.exp(-max(0.0, now - last[r]) / recency_s))
        return out

    def _factors(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros((rows.shape[0], len(FACTOR_NAMES)))
        entry = self._entry[rows]
        have = np.flatnonzero(entry >= 0)
        if have.size and self._cols is not None and self._ctx is not None:
            order = np.argsort(entry[have], kind="stable")
            feats, _ = factor_columns(self._cols.take(entry[have][order]), self._ctx)
            out[have[order]] = feats
        out[:, _SOURCE_COL] = self._column[rows]
        return out
