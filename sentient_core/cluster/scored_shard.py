"""A shard's side of the scored recall: its per-row scorer table and its scored top-k.

:class:`ScoredTable` is :class:`~sentient_core.metamemory.recall.ScoredRecall`'s factor
table (:class:`~sentient_core.metamemory.recall.FactorTable`) for one shard's rows,
built by the same code (so every row's static
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
from sentient_core.metamemory.factors import FACTOR_NAMES, FactorContext
from sentient_core.metamemory.recall import FactorTable
from sentient_core.store.colblocks import scorer_columns
from sentient_kernels.overlay import topk_scored
from sentient_kernels.scored_hybrid import Overlay

__all__ = ["ScoredTable"]

_RECENCY_COL = FACTOR_NAMES.index("recency")


class ScoredTable(FactorTable):
    """One shard's scorer table (see the module docstring); one per :class:`ShardServer`."""

    def build_for(
        self, view: MemoryView, key: tuple, ctx: FactorContext, w: np.ndarray
    ) -> list[str]:
        """Rebuild the per-row static factors unless ``key`` (with the view's rows and
        generation) is the table's; returns the shard's source keys."""
        full_key = (view.n, view.generation, *key)
        if full_key != self.key:
            with view.store.read() as txn:
                cols = scorer_columns(txn)
            self.build(cols, ctx, view.mirror, view.n, w, full_key)
        return self.src_keys

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
        out = self.row_factors(rows)
        last = view.mirror.last_access
        for j, r in enumerate(rows.tolist()):
            out[j, _RECENCY_COL] = float(np.exp(-max(0.0, now - last[r]) / recency_s))
        return out
