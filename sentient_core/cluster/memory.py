"""A memory split over shards, recalled as one: :class:`ShardedMemory`.

It offers the recall a single :class:`~sentient_core.memory.HolographicMemory`
offers (``recall``, ``recall_batch``: cosine, BM25 and the BM25 + cosine
hybrid, ``k``, ``threshold``, ``touch``; ``recall_by_smf``, ``recall_by_primes``)
over N shards behind a
:class:`~sentient_core.cluster.backend.Shards` backend, with the same results
as one memory holding every shard's traces in global-id order:

* cosine: each shard's exact top-k, merged by (score desc, global id asc)
  (:mod:`~sentient_core.cluster.merge`): the same ids and scores, bit for bit;
* BM25 and hybrid, in two phases: every shard reports its active traces, their
  total length and the document frequency of the query terms
  (:meth:`ShardServer.lex_stats`); every shard then scores with the sums
  (N, avgdl, df: the single memory's statistics) and the top-k are merged as
  above. Phase 2 searches no row a shard appended after phase 1 counted, and a
  shard that retired traces between the phases (its generation moved) scores
  nothing: both phases run again.

Ids: a hit's ``record.id`` is the trace's **global id**
(:mod:`~sentient_core.cluster.ids`); ``record.row`` and ``hit.row`` are its code
row within its shard. :meth:`get`, :meth:`update` and :meth:`retire` take
global ids (records with global ids).

Writes: :meth:`store_batch` stores into one shard (the writer's home shard by
default) in one transaction of that shard's writer; its read view has the new
traces when the call returns, so a recall right after it sees them
(read-your-writes).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import numpy as np

from sentient_core.cluster import ids as gids
from sentient_core.cluster.backend import Shards
from sentient_core.cluster.local import LocalShards
from sentient_core.cluster.merge import corpus_stats, merge_by_primes, merge_topk, query_df
from sentient_core.cluster.wire import LexQuery, LexStats, ShardHits, ShardInfo
from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.errors import ArgumentError, ArgumentTypeError, SentientError
from sentient_core.memory import terms as mem_terms
from sentient_core.memory.types import (
    Hit,
    NewTrace,
    as_code,
    check_ids,
    check_k,
    check_rank,
    check_threshold,
)
from sentient_core.store.errors import StoreUsageError
from sentient_core.store.records import SMF_AXES, TraceRecord

__all__ = ["ShardedMemory"]

# A hit found retired or gone when its record is read (another process retired it
# after the shard's mirror was built): the shard refreshes and the search runs
# again, at most this many times.
_RETRIES = 8


class _Stale(Exception):
    """A shard retired traces between a recall's two phases (internal: it runs again)."""


class _Text(msgspec.Struct, frozen=True):
    """A text query read once: its code (None: no content words), terms and weights."""

    code: np.ndarray | None
    terms: np.ndarray
    weights: np.ndarray


class ShardedMemory:
    """Recall over shards with a single memory's API and results (see the module docstring).

    Parameters
    ----------
    shards : Shards
        The backend (:class:`~sentient_core.cluster.local.LocalShards`, ...).
    home : int
        The shard :meth:`store_batch` writes to by default (this writer's own).
    encoder : TextEncoder, optional
        Encodes query texts; default the ``"token"`` encoder with the shards'
        ``code_dim`` (the shards' own default).

    Raises
    ------
    ArgumentError
        The shards disagree on ``code_dim``, or ``home`` is not a shard.
    """

    def __init__(
        self, shards: Shards, *, home: int = 0, encoder: TextEncoder | None = None
    ) -> None:
        self._shards = shards
        infos = self.infos()
        dims = {i.code_dim for i in infos}
        if len(dims) != 1:
            raise ArgumentError(f"the shards hold codes of different lengths: {sorted(dims)}")
        self._code_dim = dims.pop()
        self._home = self._check_shard(home)
        self._encoder = encoder
        self._readonly = any(i.readonly for i in infos)

    @classmethod
    def open_local(
        cls,
        root: str | os.PathLike[str],
        count: int,
        *,
        code_dim: int | None = None,
        home: int = 0,
        encoder: TextEncoder | None = None,
        **store_options: Any,
    ) -> ShardedMemory:
        """``count`` in-process shards under ``root`` (created if missing; see
        :meth:`LocalShards.open`). Close it with :meth:`close`."""
        shards = LocalShards.open(root, count, code_dim=code_dim, encoder=encoder, **store_options)
        try:
            return cls(shards, home=home, encoder=encoder)
        except BaseException:
            shards.close()
            raise

    @classmethod
    def open_ray(
        cls,
        root: str | os.PathLike[str],
        count: int,
        *,
        code_dim: int | None = None,
        home: int = 0,
        encoder: TextEncoder | None = None,
        **options: Any,
    ) -> ShardedMemory:
        """``count`` shards under ``root``, one Ray actor each (see
        :meth:`~sentient_core.cluster.ray_backend.RayShards.open`; needs the ``cluster``
        extra). Close it with :meth:`close`."""
        from sentient_core.cluster.ray_backend import RayShards  # ray is optional

        shards = RayShards.open(root, count, code_dim=code_dim, encoder=encoder, **options)
        try:
            return cls(shards, home=home, encoder=encoder)
        except BaseException:
            shards.close()
            raise

    def close(self) -> None:
        """Close the backend (every shard's store)."""
        self._shards.close()

    def __enter__(self) -> ShardedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- state -------------------------------------------------------------------------------

    @property
    def shards(self) -> Shards:
        return self._shards

    @property
    def size(self) -> int:
        """Number of shards."""
        return self._shards.size

    @property
    def home(self) -> int:
        """The shard :meth:`store_batch` writes to by default."""
        return self._home

    @property
    def code_dim(self) -> int:
        return self._code_dim

    @property
    def encoder(self) -> TextEncoder:
        """The encoder query texts are read with (built on first use)."""
        if self._encoder is None:
            self._encoder = get_encoder("token", code_dim=self._code_dim)
        return self._encoder

    def infos(self) -> list[ShardInfo]:
        """Every shard's :class:`ShardInfo`, by shard index."""
        got = self._shards.map("info", {s: () for s in range(self._shards.size)})
        return [got[s] for s in range(self._shards.size)]

    @property
    def count(self) -> int:
        """Active traces over every shard."""
        return sum(i.active for i in self.infos())

    @property
    def total(self) -> int:
        """Traces over every shard, retired ones included."""
        return sum(i.n for i in self.infos())

    def refresh(self, *, full: bool = False) -> int:
        """Every shard picks up what other processes committed (see
        :meth:`HolographicMemory.refresh`); returns the rows gained."""
        got = self._shards.map("refresh", {s: (full,) for s in range(self._shards.size)})
        return sum(got.values())

    def _check_shard(self, shard: object) -> int:
        if isinstance(shard, bool) or not isinstance(shard, (int, np.integer)):
            raise ArgumentError(f"shard must be an integer, got {shard!r}")
        if not 0 <= shard < self._shards.size:
            raise ArgumentError(f"shard {shard} is not one of the {self._shards.size} shards")
        return int(shard)

    # -- writes ------------------------------------------------------------------------------

    def store_batch(
        self, items: Sequence[NewTrace], *, shard: int | None = None
    ) -> list[TraceRecord]:
        """Store ``items`` in ONE write transaction of one shard (default: :attr:`home`).

        Returns the stored records with their global ids. A recall after this
        returns sees them.
        """
        target = self._home if shard is None else self._check_shard(shard)
        items = list(items)
        if not items:
            return []
        recs = self._shards.call(target, "store_batch", items)
        return [_with_id(r, gids.pack(target, r.id)) for r in recs]

    def store(self, text: str, *, shard: int | None = None, **fields: Any) -> TraceRecord:
        """Store one trace (see :meth:`store_batch` and :class:`NewTrace` for the fields)."""
        return self.store_batch([NewTrace(text=text, **fields)], shard=shard)[0]

    def retire(self, ids: Sequence[int]) -> list[int]:
        """Retire traces by global id (one transaction per shard touched); returns the
        global ids retired now, ascending."""
        by_shard = _group(check_ids(ids, "ids"))
        for s in by_shard:
            self._check_shard(s)
        got = self._shards.map("retire", {s: (loc,) for s, loc in by_shard.items()})
        return sorted(gids.pack(s, i) for s, done in got.items() for i in done)

    def update(self, records: Sequence[TraceRecord]) -> None:
        """Replace records given with global ids, each by its shard's writer
        (see :meth:`HolographicMemory.update`)."""
        by_shard: dict[int, list[TraceRecord]] = {}
        for r in records:
            by_shard.setdefault(gids.shard_of(r.id), []).append(_with_id(r, gids.local_of(r.id)))
        self._shards.map("update", {s: (recs,) for s, recs in by_shard.items()})

    # -- reads -------------------------------------------------------------------------------

    def get(self, trace_id: int) -> TraceRecord | None:
        """The trace with global id ``trace_id`` as stored (retired ones too), or None."""
        shard = gids.shard_of(trace_id)
        if shard >= self._shards.size:
            return None
        rec = self._shards.call(shard, "fetch", [gids.local_of(trace_id)])[0]
        return None if rec is None else _with_id(rec, int(trace_id))

    def recall(
        self,
        query: str | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
        rank: str | None = None,
    ) -> list[Hit]:
        """The ``k`` active traces most relevant to ``query`` over every shard, best first.

        As :meth:`HolographicMemory.recall` (the same ranks, scores and ties, by
        global id), with global ids in the hits' records.
        """
        if isinstance(query, str):
            return self.recall_batch([query], k, threshold=threshold, touch=touch, rank=rank)[0]
        check_rank(rank, False)
        code = self._code(query)
        return self.recall_batch(code[None, :], k, threshold=threshold, touch=touch, rank=rank)[0]

    def recall_batch(
        self,
        queries: Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
        rank: str | None = None,
    ) -> list[list[Hit]]:
        """:meth:`recall` for several queries: one call per shard per phase for the batch."""
        k = check_k("k", k)
        threshold = check_threshold(threshold)
        self._check_touch(touch)
        if isinstance(queries, np.ndarray):
            rank = check_rank(rank, False)
            codes = self._codes(queries)
            return self._finish(lambda: self._cosine(codes, k), threshold, touch)
        texts = list(queries)
        if not all(isinstance(t, str) for t in texts):
            raise ArgumentTypeError("queries must be a sequence of str or a 2-d float array")
        rank = check_rank(rank, True)
        read = self._read_texts(texts, rank != "cosine")
        if rank == "cosine":
            live = [j for j, t in enumerate(read) if t.code is not None]
            found = [t.code for t in read if t.code is not None]
            text_codes = np.stack(found) if found else None

            def search() -> list[ShardHits]:
                out = [_NONE] * len(read)
                if text_codes is not None:
                    for j, h in zip(live, self._cosine(text_codes, k), strict=True):
                        out[j] = h
                return out

            return self._finish(search, threshold, touch)
        return self._finish(lambda: self._lexical(read, k, rank), threshold, touch)

    def recall_by_smf(
        self, s: np.ndarray | Sequence[float], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """The ``k`` active traces whose SMF orientation is most similar to ``s``, over every
        shard (as :meth:`HolographicMemory.recall_by_smf`; ties by global id)."""
        k = check_k("k", k)
        self._check_touch(touch)
        q = np.asarray(s, dtype=np.float64)
        if q.shape != (SMF_AXES,) or not np.isfinite(q).all():
            raise ArgumentError(f"s must be {SMF_AXES} finite floats, got shape {q.shape}")

        def search() -> list[ShardHits]:
            got = self._everyone("search_smf", q, k)
            return [merge_topk([got[i] for i in sorted(got)], k)]

        return self._finish(search, -math.inf, touch)[0]

    def recall_by_primes(
        self, primes: Iterable[int], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """Active traces sharing dominant primes with ``primes``, over every shard (as
        :meth:`HolographicMemory.recall_by_primes`: shared primes, then newer ``created``,
        then the higher global id)."""
        k = check_k("k", k)
        self._check_touch(touch)
        query = sorted(set(check_ids(primes, "primes")))
        if not query:
            return []

        def search() -> list[ShardHits]:
            got = self._everyone("search_primes", query, k)
            return [merge_by_primes([got[i] for i in sorted(got)], k)]

        return self._finish(search, -math.inf, touch)[0]

    # -- the phases --------------------------------------------------------------------------

    def _check_touch(self, touch: bool) -> None:
        if touch and self._readonly:
            raise StoreUsageError(
                "a shard's store is open read-only, so recall cannot bump use counts;"
                " pass touch=False"
            )

    def _code(self, q: object) -> np.ndarray:
        code = as_code(q, self._code_dim, "query")
        if not code.any():
            raise ArgumentError("query must not be all zeros (its cosine is undefined)")
        return code

    def _codes(self, queries: np.ndarray) -> np.ndarray:
        dim = self._code_dim
        if queries.ndim != 2 or queries.shape[1] != dim:
            raise ArgumentError(f"queries must have shape (Q, {dim}), got {queries.shape}")
        codes = np.ascontiguousarray(queries, dtype=np.float32)
        if not np.isfinite(codes).all():
            raise ArgumentError("queries contains non-finite values (NaN or inf)")
        live = codes.any(axis=1)
        if not live.all():
            raise ArgumentError(
                f"queries row {int(np.argmin(live))} is all zeros (its cosine is undefined)"
            )
        return codes

    def _read_texts(self, texts: list[str], terms: bool) -> list[_Text]:
        if not texts:
            return []
        codes = self.encoder.encode_batch(texts)
        out = []
        for j, t in enumerate(texts):
            code = codes[j] if codes[j].any() else None
            if terms:
                c = mem_terms.count([t])
                out.append(_Text(code, c.terms, c.tfs.astype(np.float64)))
            else:
                out.append(_Text(code, _NO_TERMS, _NO_WEIGHTS))
        return out

    def _everyone(self, method: str, *args: Any) -> dict[int, Any]:
        return self._shards.map(method, {s: args for s in range(self._shards.size)})

    def _cosine(self, codes: np.ndarray, k: int) -> list[ShardHits]:
        got = self._everyone("search_cosine", codes, k)
        return [merge_topk([got[s][j] for s in sorted(got)], k) for j in range(codes.shape[0])]

    def _lexical(self, read: list[_Text], k: int, rank: str) -> list[ShardHits]:
        live = [
            j
            for j, t in enumerate(read)
            if t.terms.size and not (rank == "hybrid" and t.code is None)
        ]
        out = [_NONE] * len(read)
        if not live:
            return out
        union = np.unique(np.concatenate([read[j].terms for j in live]))
        stats: dict[int, LexStats] = self._everyone("lex_stats", union)  # phase 1
        corpus = corpus_stats(stats)
        queries = [
            LexQuery(
                terms=read[j].terms,
                weights=read[j].weights,
                df=query_df(stats, union, read[j].terms),
                code=read[j].code if rank == "hybrid" else None,
            )
            for j in live
        ]
        got = self._shards.map(  # phase 2: no row above what phase 1 counted
            "search_lexical",
            {s: (queries, k, rank, corpus, st.n, st.generation) for s, st in stats.items()},
        )
        if any(g is None for g in got.values()):
            # A shard retired traces between the phases: its counts are stale.
            raise _Stale
        for i, j in enumerate(live):
            out[j] = merge_topk([got[s][i] for s in sorted(got)], k)
        return out

    def _finish(self, search: Any, threshold: float, touch: bool) -> list[list[Hit]]:
        """Run ``search`` (the merged top-k of every query), read the winners' records,
        bump them if ``touch``; run it again after a refresh if a winner turned out retired."""
        for _ in range(_RETRIES):
            try:
                merged: list[ShardHits] = search()
            except _Stale:
                continue
            hits = self._read(merged, threshold)
            if hits is not None:
                return self._touch(hits) if touch else hits
        raise SentientError(
            f"recall met traces retired under it {_RETRIES} times in a row (among its hits,"
            " or between its two phases): retirements keep coming; try again"
        )

    def _read(self, merged: list[ShardHits], threshold: float) -> list[list[Hit]] | None:
        kept = []
        for h in merged:
            keep = h.scores >= threshold
            kept.append((h, np.flatnonzero(keep)))
        wanted = np.unique(np.concatenate([h.ids[i] for h, i in kept] or [_NO_IDS]))
        shard_of, local = gids.unpack_many(wanted)
        groups = {int(s): local[shard_of == s].tolist() for s in np.unique(shard_of)}
        got = self._shards.map("fetch", {s: (loc,) for s, loc in groups.items()})
        records: dict[int, TraceRecord] = {}
        stale = set()
        for s, recs in got.items():
            base = s << gids.LOCAL_BITS
            for loc, rec in zip(groups[s], recs, strict=True):
                if rec is None or rec.retired:
                    stale.add(s)
                else:
                    records[base | loc] = _with_id(rec, base | loc)
        if stale:
            # Retired by another process since that shard's mirror was built.
            self._shards.map("refresh", {s: (True,) for s in sorted(stale)})
            return None
        out = []
        for h, idx in kept:
            lex = None if h.lexical is None else h.lexical.tolist()
            cos = None if h.cosine is None else h.cosine.tolist()
            out.append(
                [
                    Hit(
                        record=(rec := records[int(h.ids[i])]),
                        score=float(h.scores[i]),
                        row=rec.row,
                        lexical=None if lex is None else lex[i],
                        cosine=None if cos is None else cos[i],
                    )
                    for i in idx.tolist()
                ]
            )
        return out

    def _touch(self, groups: list[list[Hit]]) -> list[list[Hit]]:
        """Bump use_count/last_access of every hit (once per group it is in), by its shard."""
        by_shard = _group([h.record.id for hits in groups for h in hits])
        if not by_shard:
            return groups
        got = self._shards.map("touch", {s: (loc,) for s, loc in by_shard.items()})
        new = {gids.pack(s, r.id): r for s, recs in got.items() for r in recs}
        replace = msgspec.structs.replace
        return [
            [
                replace(h, record=_with_id(new[h.record.id], h.record.id))
                if h.record.id in new
                else h
                for h in hits
            ]
            for hits in groups
        ]


_NO_IDS = np.zeros(0, dtype=np.int64)
_NO_TERMS = np.zeros(0, dtype=np.uint64)
_NO_WEIGHTS = np.zeros(0)
_NONE = ShardHits(ids=_NO_IDS, scores=np.zeros(0))


def _with_id(rec: TraceRecord, trace_id: int) -> TraceRecord:
    return msgspec.structs.replace(rec, id=int(trace_id))


def _group(global_ids: Sequence[int]) -> dict[int, list[int]]:
    """Local ids by shard, in the order given."""
    out: dict[int, list[int]] = {}
    for g in global_ids:
        out.setdefault(gids.shard_of(g), []).append(gids.local_of(g))
    return out
