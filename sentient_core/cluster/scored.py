"""The learned scorer's recall over shards, with one meta-memory owner for the cluster.

:class:`ShardedScoredRecall` ranks as :class:`~sentient_core.metamemory.recall.ScoredRecall`
does (``w_relevance · relevance + w_recency · recency + static``, a text's
``RERANK_POOL`` best re-ranked by calibrated relevance) over a
:class:`~sentient_core.cluster.memory.ShardedMemory`, with the same hits, scores
and factors as one memory holding the shards' traces in global-id order (and the
same meta-memory state).

The meta-memory (:class:`~sentient_core.metamemory.MetaMemory`: credit, source
weights, debts, wisdom, the scorer) has one owner for the cluster: one data
directory and its writer, its trace references global ids. One scorer and one
table of source weights keep every shard's scores on one scale, which is what
makes the merge exact; the owner's data is small (per source, per debt, per
judged trace), so one writer is no bottleneck. Per recall the owner's state is
read once here: the scorer's weights, the domain's source weights (after
wisdom's caps, over every shard's sources) and, when the scorer, the credit or
a shard changed, the factor context, handed to each shard by local id
(:meth:`ShardServer.scored_prepare`). Each shard builds its factor table as one
memory does (:mod:`~sentient_core.cluster.scored_shard`), a text's BM25
statistics are gathered first (phase 1: document frequencies over the scorer's
candidates, as one memory counts them), each shard returns its scored top-k
(pool), merged by (score desc, global id asc), and the re-rank runs here on the
merged pool (idf over the same candidates as one memory's).

Not here yet: credit changes of a trace's strength go through the owner's
:class:`CreditBook`, which writes to its own memory, not to the owning shard.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import msgspec
import numpy as np

from sentient_core.analysis import QueryWords, query_words
from sentient_core.cluster import ids as gids
from sentient_core.cluster.memory import ShardedMemory
from sentient_core.cluster.merge import corpus_stats, merge_topk, query_df
from sentient_core.cluster.wire import LexQuery, ShardHits
from sentient_core.memory import lexical
from sentient_core.memory.types import Hit
from sentient_core.metamemory import MetaMemory
from sentient_core.metamemory.domain import GENERAL, domain_of
from sentient_core.metamemory.factors import (
    FACTOR_NAMES,
    RECENCY_HOURS,
    FactorContext,
    context_for_memory,
)
from sentient_core.metamemory.recall import RERANK_POOL, RerankTerms, ScoredHit, explained
from sentient_core.metamemory.sources import WEIGHTS

__all__ = ["ShardedScoredRecall"]

_RELEVANCE_COL = FACTOR_NAMES.index("relevance")
_RECENCY_COL = FACTOR_NAMES.index("recency")
_SOURCE_COL = FACTOR_NAMES.index("source_weight")
_RETRIES = 8


class ShardedScoredRecall:
    """Scored recall over shards (see the module docstring).

    Parameters
    ----------
    memory : ShardedMemory
    meta : MetaMemory
        The cluster's meta-memory owner (its store is not a shard; trace ids in its
        records are global ids).
    """

    def __init__(self, memory: ShardedMemory, meta: MetaMemory) -> None:
        self.memory = memory
        self.meta = meta
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._src_keys: set[str] = set()
        self._rerank = RerankTerms()

    def _prepare(self, now: float, w: np.ndarray, version: int) -> None:
        """Every shard's factor table current (the owner's context split by shard)."""
        infos = self.memory.infos()
        credit = self.meta.credit
        # A shard's incarnation: a restarted server (Ray) has no table until prepared again.
        key = (
            version,
            id(credit),
            credit.version,
            tuple((i.n, i.generation, i.incarnation) for i in infos),
        )
        if key == self._key:
            return
        with self.meta.memory.datastore.read() as txn:
            ctx = context_for_memory(txn, domain="", now=now)
        size = self.memory.size
        parts = {
            s: FactorContext(
                now=ctx.now,
                credit={gids.local_of(t): v for t, v in ctx.credit.items() if _in_shard(t, s)},
                open_debt_traces=frozenset(
                    gids.local_of(t) for t in ctx.open_debt_traces if _in_shard(t, s)
                ),
                superseded=frozenset(gids.local_of(t) for t in ctx.superseded if _in_shard(t, s)),
            )
            for s in range(size)
        }
        shard_key = (version, id(credit), credit.version)
        got = self.memory.shards.map("scored_prepare", {s: (shard_key, parts[s], w) for s in parts})
        self._src_keys = {k for keys in got.values() for k in keys}
        self._key = key

    def recall(
        self, query: str | np.ndarray, k: int = 10, *, domain: str = "", now: float | None = None
    ) -> list[ScoredHit]:
        """The ``k`` traces with the highest scored rank over every shard, best first
        (ties: the lower global id); records carry global ids, ``row`` is the shard's row."""
        with self._lock:
            return self._recall(query, k, domain=domain, now=now)

    def _recall(
        self, query: str | np.ndarray, k: int, *, domain: str, now: float | None
    ) -> list[ScoredHit]:
        now = time.time() if now is None else float(now)
        words = query_words(query) if isinstance(query, str) else None
        if not domain:
            domain = domain_of(words) if words is not None else GENERAL
        mem = self.memory
        if isinstance(query, str):
            read = mem._read_texts([query], True)[0]
            code, terms, qweights = read.code, read.terms, read.weights
        else:
            code, terms, qweights = mem._code(query), None, None
        if code is None or mem.total == 0:
            return []
        scorer = self.meta.scorer
        w = np.asarray(scorer.weights, dtype=np.float64)
        w_cos = float(w[_RELEVANCE_COL])
        w_rec = float(w[_RECENCY_COL])
        w_src = float(w[_SOURCE_COL])
        recency_s = RECENCY_HOURS * 3600.0
        self._prepare(now, w, scorer.version)
        with self.meta.memory.datastore.read() as txn:
            weights = {sw.source: sw.weight for sw in WEIGHTS.iter(txn, domain)}
        if domain:
            weights = self.meta.advisor.recall_weights(domain, weights, self._src_keys - {""})
        ov = (w_cos, w_rec, now, recency_s)
        text = words is not None and terms is not None and terms.size > 0
        merged = None
        for _ in range(_RETRIES):
            merged = self._search(code, terms, qweights, k, ov, weights, w_src, text)
            if merged is not None:
                break
        if merged is None:
            return []
        return self._finish(merged, code, words if text else None, k, w, now)

    def _search(
        self,
        code: np.ndarray,
        terms: np.ndarray | None,
        qweights: np.ndarray | None,
        k: int,
        ov: tuple[float, float, float, float],
        weights: dict[str, float],
        w_src: float,
        text: bool,
    ) -> ShardHits | None:
        shards = self.memory.shards
        everyone = range(self.memory.size)
        if not text:
            got = shards.map(
                "search_scored", {s: (code, None, None, k, ov, weights, w_src) for s in everyone}
            )
            return merge_topk([got[s] for s in sorted(got)], k)
        assert terms is not None and qweights is not None
        stats = shards.map("scored_stats", {s: (terms, weights, w_src) for s in everyone})
        q = LexQuery(terms=terms, weights=qweights, df=query_df(stats, terms, terms), code=code)
        pool = max(k, RERANK_POOL)
        corpus = corpus_stats(stats)
        got = shards.map(
            "search_scored",
            {
                s: (code, q, corpus, pool, ov, weights, w_src, st.n, st.generation)
                for s, st in stats.items()
            },
        )
        if any(g is None for g in got.values()):
            return None  # a retirement between the phases: run them again
        return merge_topk([got[s] for s in sorted(got)], pool)

    def _finish(
        self,
        merged: ShardHits,
        code: np.ndarray,
        words: QueryWords | None,
        k: int,
        w: np.ndarray,
        now: float,
    ) -> list[ScoredHit]:
        """The single memory's re-rank and hits over the merged candidates."""
        gid = merged.ids.tolist()
        shard_of, local = gids.unpack_many(merged.ids)
        groups: dict[int, list[int]] = {}
        for s, loc in zip(shard_of.tolist(), local.tolist(), strict=True):
            groups.setdefault(s, []).append(loc)
        got = self.memory.shards.map("fetch", {s: (loc,) for s, loc in groups.items()})
        by_gid: dict[int, Any] = {}
        for s, recs in got.items():
            for loc, rec in zip(groups[s], recs, strict=True):
                g = gids.pack(s, loc)
                by_gid[g] = None if rec is None else _with_id(rec, g)
        records = [by_gid[g] for g in gid]
        scores = merged.scores
        q = code.astype(np.float64)
        q /= np.linalg.norm(q)
        hit_codes = merged.codes if merged.codes is not None else np.zeros((0, q.size), np.float32)
        # One product over the merged hits in their order: one memory's over its own.
        cosines = (hit_codes.astype(np.float64) @ q).tolist()
        lex = merged.lexical
        w_cos = float(w[_RELEVANCE_COL])
        order = sorted(range(len(gid)), key=lambda i: (-float(scores[i]), gid[i]))
        if lex is None or words is None:
            rel_factor = cosines
        else:
            alpha = lexical.HYBRID_ALPHA
            hybrid = [
                (float(x) + alpha * c) / (1.0 + alpha)
                for x, c in zip(lex.tolist(), cosines, strict=True)
            ]
            head, tail = order[:RERANK_POOL], order[RERANK_POOL:]
            factor = self._rerank.factor(
                words, [records[i] for i in head], [hybrid[i] for i in head]
            )
            rel_factor = list(hybrid)
            for i, f in zip(head, factor, strict=True):
                rel_factor[i] = f
            scores = scores + w_cos * (np.asarray(rel_factor) - np.asarray(hybrid))
            order = sorted(head, key=lambda i: (-float(scores[i]), gid[i])) + tail
        order = order[:k]
        feats = self._factors([gid[i] for i in order], [records[i] for i in order], now)
        out = []
        for j, i in enumerate(order):
            f = feats[j]
            f[_RELEVANCE_COL] = rel_factor[i]
            contrib = {name: float(w[c] * f[c]) for c, name in enumerate(FACTOR_NAMES)}
            rec = records[i]
            out.append(
                ScoredHit(
                    record=rec,
                    row=-1 if rec is None else rec.row,
                    score=float(scores[i]),
                    cosine=cosines[i],
                    contributions=contrib,
                    lexical=None if lex is None else float(lex[i]),
                )
            )
        return out

    def _factors(self, hit_gids: list[int], records: list[Any], now: float) -> np.ndarray:
        out = np.zeros((len(hit_gids), len(FACTOR_NAMES)))
        rows: dict[int, list[tuple[int, int]]] = {}
        for j, (g, rec) in enumerate(zip(hit_gids, records, strict=True)):
            if rec is not None:
                rows.setdefault(gids.shard_of(g), []).append((j, rec.row))
        recency_s = RECENCY_HOURS * 3600.0
        got = self.memory.shards.map(
            "scored_factors", {s: ([r for _, r in at], now, recency_s) for s, at in rows.items()}
        )
        for s, at in rows.items():
            for (j, _), f in zip(at, got[s], strict=True):
                out[j] = f
        return out

    def hits(
        self, query: str | np.ndarray, k: int = 10, *, threshold: float = 0.0, touch: bool = False
    ) -> list[Hit]:
        """:meth:`recall` as memory hits scoring at least ``threshold`` (as
        :meth:`ScoredRecall.hits`); ``touch`` bumps them in their shards."""
        hits = [
            Hit(record=h.record, score=h.score, row=h.row, lexical=h.lexical, cosine=h.cosine)
            for h in self.recall(query, k)
            if h.record is not None and not h.record.retired and h.score >= threshold
        ]
        return self.memory._touch([hits])[0] if touch and hits else hits

    def explain(self, query: str, k: int = 10, **kw: Any) -> list[dict[str, Any]]:
        """:meth:`recall` as plain dicts: global id, score, cosine, every factor's contribution."""
        return explained(self.recall(query, k, **kw))


def _in_shard(gid: int, shard: int) -> bool:
    return 0 <= gid < 1 << 63 and gids.shard_of(gid) == shard


def _with_id(rec: Any, trace_id: int) -> Any:
    return msgspec.structs.replace(rec, id=int(trace_id))
