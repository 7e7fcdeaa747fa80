"""One shard: an LMDB data directory (a :class:`Store`) and its :class:`HolographicMemory`.

A :class:`ShardServer` holds the shard's read mirror and runs the kernels on
it; it is also the shard's one writer (LMDB's one-writer rule: whoever owns the
home shard writes through its server). Every method takes and returns plain
arrays, msgspec structs (:mod:`sentient_core.cluster.wire`) or trace records,
so the same object can live in this process (:class:`~sentient_core.cluster.local.LocalShards`)
or in a Ray actor, and the search calls take a whole batch of queries.

Ids: the server speaks global ids (:mod:`sentient_core.cluster.ids`) in its
hits and takes local ids (the store's own) for fetch, touch, retire.

Exactness: cosine hits are :func:`sentient_kernels.holographic.topk_cosine_batch`'s
exact top-k of the shard's active rows (ties to the lower row, which is the
lower local id); BM25 and hybrid hits are
:func:`sentient_core.memory.lexical.rank_rows`' with the corpus statistics
given (:class:`~sentient_core.cluster.wire.LexQuery`'s ``df``,
:class:`~sentient_core.cluster.wire.CorpusStats`), so every score is the one a
single memory holding every shard's traces computes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from sentient_core.cluster import ids as gids
from sentient_core.cluster.scored_shard import ScoredTable
from sentient_core.cluster.wire import CorpusStats, LexQuery, LexStats, ShardHits, ShardInfo
from sentient_core.encoder import TextEncoder
from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory
from sentient_core.memory import lexical as mem_lexical
from sentient_core.memory.mirror import Mirror
from sentient_core.memory.recall import topk_desc
from sentient_core.memory.types import Hit, NewTrace
from sentient_core.memory.writer import MemoryView
from sentient_core.metamemory.factors import FactorContext
from sentient_core.store import traces
from sentient_core.store.env import Store
from sentient_core.store.records import TraceRecord
from sentient_kernels import doc_freqs, holographic, unchecked
from sentient_kernels import smf as smf_kernels

__all__ = ["ShardServer"]

_NO_IDS = np.zeros(0, dtype=np.int64)
_NO_SCORES = np.zeros(0)


def _empty(lexical: bool) -> ShardHits:
    return ShardHits(
        ids=_NO_IDS,
        scores=_NO_SCORES,
        lexical=_NO_SCORES if lexical else None,
        cosine=None if lexical else _NO_SCORES,
    )


class ShardServer:
    """Serves one shard: its store, its memory's read mirror, its writes.

    Parameters
    ----------
    shard : int
        Its index (the high bits of its traces' global ids).
    path : path-like
        Its LMDB data directory (created if missing, unless ``readonly``).
    code_dim : int, optional
        Required to create the store.
    encoder : TextEncoder, optional
        Encodes the texts stored here (every shard of a memory uses the same one).
    readonly : bool
        Open the store read-only (recall only; ``touch`` must be False).
    clock : callable
        The memory's clock (``time.time``; injectable for tests).
    store_options
        Passed to :meth:`Store.open` (``durable``, ``map_size``, ...).
    """

    def __init__(
        self,
        shard: int,
        path: str | os.PathLike[str],
        *,
        code_dim: int | None = None,
        encoder: TextEncoder | None = None,
        readonly: bool = False,
        clock: Callable[[], float] = time.time,
        **store_options: object,
    ) -> None:
        self._base = np.int64(gids.pack(shard, 0))  # checks the index
        self._scored: ScoredTable | None = None
        # One scored call at a time: a call sets the domain's column and reads it.
        self._scored_lock = threading.Lock()
        self.shard = int(shard)
        # Tells this server object from a restarted one over the same directory (the
        # scorer table a caller prepared lives in the old one only).
        self.incarnation = int.from_bytes(os.urandom(8), "little") >> 1
        self.store = Store.open(path, code_dim=code_dim, readonly=readonly, **store_options)  # type: ignore[arg-type]
        try:
            self.memory = HolographicMemory(self.store, encoder=encoder, clock=clock)
        except BaseException:
            self.store.close()
            raise

    def close(self) -> None:
        """Close the store (the server is unusable afterwards)."""
        self.store.close()

    # -- state -------------------------------------------------------------------------------

    def info(self) -> ShardInfo:
        """Rows, active traces, their total length and the generation of the read view."""
        v = self.memory.view()
        m = v.mirror
        return ShardInfo(
            shard=self.shard,
            path=str(self.store.path),
            n=v.n,
            active=int(m.active),
            lex_total=int(m.lex_total),
            code_dim=v.code_dim,
            generation=v.generation,
            readonly=self.store.readonly,
            incarnation=self.incarnation,
        )

    def refresh(self, full: bool = False) -> int:
        """Pick up what other processes committed to this shard's store (see
        :meth:`HolographicMemory.refresh`); returns the rows gained."""
        return self.memory.refresh(full=full)

    # -- recall ------------------------------------------------------------------------------

    def lex_stats(self, terms: np.ndarray) -> LexStats:
        """Phase 1: this shard's N, total length and document frequency of each term.

        ``terms`` (uint64) may be the union of a whole batch's query terms.
        """
        v = self.memory.view()
        m, n = v.mirror, v.n
        t = np.ascontiguousarray(terms, dtype=np.uint64)
        df = (
            doc_freqs.doc_freqs_unchecked(v.lexical.packed, n, m.valid, t)
            if n and t.size
            else np.zeros(t.size, dtype=np.int64)
        )
        return LexStats(
            n=n,
            active=int(m.active),
            lex_total=int(m.lex_total),
            df=df,
            generation=v.generation,
        )

    def search_lexical(
        self,
        queries: Sequence[LexQuery],
        k: int,
        rank: str,
        stats: CorpusStats,
        upto: int | None = None,
        generation: int | None = None,
    ) -> list[ShardHits] | None:
        """Phase 2: each query's exact top-k here by ``rank`` ("bm25" or "hybrid"),
        scored with the whole corpus's statistics.

        ``upto``: the view's ``n`` phase 1 counted (rows appended since are not
        searched, so the statistics cover exactly the rows scored); default the
        current view. ``generation``: the retirement generation phase 1 counted at;
        if a retirement has happened since, nothing is scored and None returned (the
        statistics are stale: run both phases again).
        """
        v = self.memory.view()
        if generation is not None and v.generation != generation:
            return None
        m = v.mirror
        n = v.n if upto is None else min(int(upto), v.n)
        out = []
        for q in queries:
            if n == 0:
                out.append(_empty(True))
                continue
            rows, scores, rel, cos = mem_lexical.rank_rows(
                v.lexical.packed,
                n,
                m.valid,
                m.doc_len,
                float(stats.n_docs),
                float(stats.avgdl),
                q.terms,
                q.weights,
                k,
                rank,
                m.codes,
                q.code if rank == "hybrid" else None,
                df=q.df,
            )
            out.append(
                ShardHits(
                    ids=self._gids(m, rows),
                    scores=scores,
                    lexical=rel,
                    cosine=cos,
                )
            )
        return out

    def search_cosine(self, codes: np.ndarray, k: int) -> list[ShardHits]:
        """Each query code's exact cosine top-k of this shard's active traces.

        ``codes`` (Q, code_dim) float32, no row all zero.
        """
        v = self.memory.view()
        q = np.ascontiguousarray(codes, dtype=np.float32)
        m, n = v.mirror, v.n
        if n == 0 or v.active == 0:
            return [_empty(False) for _ in range(q.shape[0])]
        if n <= holographic.ONE_BLOCK_ROWS:
            # A small shard: the serial kernel a single memory's recall dispatches once
            # (the same scores and order as the batch scan, without its parallel start-up).
            out = []
            kk = min(k, n)
            for j in range(q.shape[0]):
                rows = np.empty(kk, dtype=np.int64)
                scores = np.empty(kk)
                got = unchecked.holographic_topk_cosine(
                    m.codes[:n], q[j], k, True, True, m.valid[:n], rows, scores
                )
                if got < 0:
                    break  # a bad query or row: the checked scan below names it
                rows, scores = rows[:got], scores[:got]
                out.append(ShardHits(ids=self._gids(m, rows), scores=scores, cosine=scores))
            else:
                return out
        rows2, scores2 = holographic.topk_cosine_batch(
            v.codes, q, k, normalized=True, valid=v.valid
        )
        return [
            ShardHits(ids=self._gids(m, rows2[j]), scores=scores2[j], cosine=scores2[j])
            for j in range(q.shape[0])
        ]

    def _gids(self, m: Mirror, rows: np.ndarray) -> np.ndarray:
        """Global ids of mirror rows (local ids < 2**47 by :meth:`store_batch`'s check)."""
        return self._base | m.row_id[rows]

    def search_smf(self, s: np.ndarray, k: int) -> ShardHits:
        """The exact top-k active traces by SMF similarity to ``s`` ((16,) float64, finite),
        as :meth:`HolographicMemory.recall_by_smf` ranks them (ties to the lower row)."""
        v = self.memory.view()
        m, n = v.mirror, v.n
        valid = m.valid[:n]
        live = int(np.count_nonzero(valid))
        if live == 0:
            return ShardHits(ids=_NO_IDS, scores=_NO_SCORES)
        scores = smf_kernels.similarity(np.ascontiguousarray(s, dtype=np.float64), m.smf[:n])
        scores[valid == 0] = -np.inf
        rows = topk_desc(scores, min(k, live))
        return ShardHits(ids=self._gids(m, rows), scores=scores[rows])

    def search_primes(self, primes: Sequence[int], k: int) -> ShardHits:
        """The top-k active traces sharing dominant primes with ``primes`` (distinct,
        ascending), as :meth:`HolographicMemory.recall_by_primes` ranks them: shared
        primes desc, then ``created`` desc, then the higher row."""
        query = list(primes)
        v = self.memory.view()
        m, n = v.mirror, v.n
        lists = v.primes.rows_of(query)
        cat = np.concatenate(lists) if lists else _NO_IDS
        cat = cat[(cat >= 0) & (cat < n)]
        rows, overlap = np.unique(cat, return_counts=True)
        keep = m.valid[rows] != 0
        rows, overlap = rows[keep], overlap[keep]
        order = np.lexsort((-rows, -m.created[rows], -overlap))[:k]
        rows, overlap = rows[order], overlap[order]
        return ShardHits(
            ids=self._gids(m, rows),
            scores=overlap / max(1, len(query)),
            created=m.created[rows].astype(np.float64),
        )

    # -- the scored recall (the cluster's meta-memory owner sends what it knows) ---------------

    def scored_prepare(self, key: tuple, ctx: FactorContext, w: np.ndarray) -> list[str]:
        """Build this shard's scorer table unless ``key`` (scorer version, credit mark)
        and the view's rows and generation are its own; ``ctx`` by local id. Returns the
        shard's source keys (the owner caps the domain's weights over all of them)."""
        with self._scored_lock:
            if self._scored is None:
                self._scored = ScoredTable()
            return self._scored.build_for(self.memory.view(), key, ctx, w)

    def scored_stats(self, terms: np.ndarray, weights: dict[str, float], w_src: float) -> LexStats:
        """Phase 1 of a scored text recall: N, total length (the memory's) and each term's
        document frequency over the scorer's candidates (as one memory's scored hybrid)."""
        with self._scored_lock:
            table = self._table()
            table.set_domain(weights, w_src)
            v = self.memory.view()
            df = table.df(v, np.ascontiguousarray(terms, dtype=np.uint64))
        m = v.mirror
        return LexStats(
            n=v.n,
            active=int(m.active),
            lex_total=int(m.lex_total),
            df=df,
            generation=v.generation,
        )

    def search_scored(
        self,
        code: np.ndarray,
        query: LexQuery | None,
        corpus: CorpusStats | None,
        k: int,
        overlay_args: tuple[float, float, float, float],
        weights: dict[str, float],
        w_src: float,
        upto: int | None = None,
        generation: int | None = None,
    ) -> ShardHits | None:
        """This shard's scored top-k (``query`` None: the scored cosine scan of ``code``);
        None if a retirement happened since phase 1 (``generation``)."""
        with self._scored_lock:
            table = self._table()
            table.set_domain(weights, w_src)
            v = self.memory.view()
            if generation is not None and v.generation != generation:
                return None
            return self._search_scored(table, v, code, query, corpus, k, overlay_args, upto)

    def _search_scored(
        self,
        table: ScoredTable,
        v: MemoryView,
        code: np.ndarray,
        query: LexQuery | None,
        corpus: CorpusStats | None,
        k: int,
        overlay_args: tuple[float, float, float, float],
        upto: int | None,
    ) -> ShardHits:
        return table.search(
            v,
            code,
            None if query is None else query.terms,
            None if query is None else query.weights,
            None if query is None else query.df,
            corpus,
            k,
            overlay_args,
            v.n if upto is None else int(upto),
            self._base,
        )

    def scored_factors(self, rows: Sequence[int], now: float, recency_s: float) -> np.ndarray:
        """Each row's factors as the scorer table saw them, recency at ``now``."""
        with self._scored_lock:
            return self._table().factors(
                self.memory.view(), np.asarray(rows, dtype=np.int64), now, recency_s
            )

    def _table(self) -> ScoredTable:
        if self._scored is None:
            raise ArgumentError("scored_prepare must run before a scored search")
        return self._scored

    def fetch(self, local_ids: Sequence[int]) -> list[TraceRecord | None]:
        """The records of ``local_ids`` as stored now (None: no such trace)."""
        with self.store.read() as txn:
            return traces.get_many(txn, [int(i) for i in local_ids])

    # -- writes (this server is the shard's one writer) ----------------------------------------

    def store_batch(self, items: Sequence[NewTrace]) -> list[TraceRecord]:
        """Store ``items`` in one write transaction; the read view has them on return.

        Raises
        ------
        ArgumentError
            The new traces' ids would not fit a global id's 47 bits: seal this
            shard and write to another.
        """
        v = self.memory.view()
        top = int(v.mirror.row_id[v.n - 1]) if v.n else -1
        if top + len(items) > gids.MAX_LOCAL:
            raise ArgumentError(
                f"shard {self.shard} is full: its trace ids would pass {gids.MAX_LOCAL}, the"
                f" most a global id's {gids.LOCAL_BITS} bits hold; seal it and write to another"
            )
        return self.memory.store_batch(items)

    def retire(self, local_ids: Sequence[int]) -> list[int]:
        """Retire traces (local ids); returns those retired now."""
        return self.memory.retire(local_ids)

    def touch(self, local_ids: Sequence[int]) -> list[TraceRecord]:
        """Bump use_count/last_access once per listed id (one transaction); the new records."""
        recs = self.fetch(sorted(set(local_ids)))
        by_id = {r.id: r for r in recs if r is not None and not r.retired}
        hits = [Hit(record=by_id[i], score=0.0, row=by_id[i].row) for i in local_ids if i in by_id]
        return [h.record for h in self.memory.touch(hits)]

    def update(self, records: Sequence[TraceRecord]) -> None:
        """Replace records (local ids) in one transaction (credit, outcomes)."""
        self.memory.update(records)


def as_local(rec: TraceRecord, local_id: int) -> TraceRecord:
    """``rec`` with its local id again (a record a caller got with its global id)."""
    return msgspec.structs.replace(rec, id=int(local_id))
