"""Benchmark cases for relevance recall (BM25, hybrid, cosine) against bm25s.

For each size (100k and 1M traces at full scale) a store is built once per
process in a temporary directory (``durable=False``, batches of 50k through
:meth:`HolographicMemory.store_batch`, codes and terms computed by the memory).
Each trace is 40–80 words drawn from a Zipf(1.1) law over a 50k-word
synthetic vocabulary (no stop words, so every word is a term); a query is 2–6
words from the same law. bm25s indexes the very same token ids
(``k1 = 1.2, b = 0.75, method="lucene"``, as ours) and saves its index.

Rows (one query per timed call, the same 64 queries in the same order on both
sides, so the medians are per-query latencies):

* ``lexical.recall[hybrid]``, ``[bm25]``, ``[cosine]``: ``memory.recall(q, 10,
  touch=False, rank=...)`` of a text query against bm25s ``retrieve`` (k = 10,
  one thread); the bm25 row checks first that both pick rows of equal BM25
  score.
* ``lexical.open``: opening the memory (``HolographicMemory(store)``: mirror
  and lexical index from the stored terms) against ``bm25s.BM25.load`` of its
  saved index.

:func:`latency` times the same queries interleaved (ours in every rank, the
default scored recall, bm25s, and the BM25/hybrid/scored ranking alone with
MaxScore and with the exhaustive accumulation it replaced) and gives median and
p95 per side, for the report.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np

from sentient_core.analysis import STOP_WORDS
from sentient_core.benchmarks import peers
from sentient_core.benchmarks.cases import Case
from sentient_core.memory import HolographicMemory, NewTrace

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = (
    "lexical.open",
    "lexical.recall[bm25]",
    "lexical.recall[cosine]",
    "lexical.recall[hybrid]",
)

__all__ = ["KERNELS", "LATENCY_ROWS", "build", "cases", "latency"]

D = 256
K = 10
FULL_SIZES = (100_000, 1_000_000)
BATCH = 50_000
VOCAB = 50_000
N_QUERIES = 64
RANKS = ("hybrid", "bm25", "cosine")

_BUILT: dict[int, dict] = {}


def _cleanup() -> None:
    for entry in _BUILT.values():
        entry["store"].close()
        shutil.rmtree(entry["dir"], ignore_errors=True)
    _BUILT.clear()


atexit.register(_cleanup)


def _vocabulary(rng: np.random.Generator) -> np.ndarray:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: list[str] = []
    seen: set[str] = set(STOP_WORDS)
    while len(words) < VOCAB:
        n = int(rng.integers(3, 11))
        w = "".join(rng.choice(letters, size=n))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return np.array(words)


def _zipf_ids(rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    return np.searchsorted(cdf, rng.random(size), side="right").astype(np.int32)


def build(rows: int) -> dict:
    """Build (once) a store of ``rows`` traces and the bm25s index of the same tokens."""
    if rows in _BUILT:
        return _BUILT[rows]
    from sentient_core.store import Store

    directory = tempfile.mkdtemp(prefix=f"sentient-bench-lexical-{rows}-")
    rng = np.random.default_rng(20250107)
    vocab = _vocabulary(rng)
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.1
    cdf = np.cumsum(p / p.sum())
    map_size = max(1 << 26, rows * (4 * D + 3000) * 2)
    store = Store.open(f"{directory}/store", code_dim=D, durable=False, map_size=map_size)
    builder = HolographicMemory(store)
    doc_ids: list[np.ndarray] = []
    t0 = time.perf_counter()
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        lengths = rng.integers(40, 81, size=n)
        flat = _zipf_ids(rng, cdf, int(lengths.sum()))
        cuts = np.cumsum(lengths)[:-1]
        docs = np.split(flat, cuts)
        doc_ids.extend(docs)
        builder.store_batch([NewTrace(text=" ".join(vocab[d])) for d in docs])
    build_s = time.perf_counter() - t0
    del builder
    queries = [
        " ".join(vocab[_zipf_ids(rng, cdf, int(rng.integers(2, 7)))]) for _ in range(N_QUERIES)
    ]
    entry = {
        "store": store,
        "dir": directory,
        "build_s": build_s,
        "vocab": vocab,
        "queries": queries,
        "bm25s": None,
    }
    bm25s = peers.load("bm25s")
    if bm25s is not None:
        from bm25s.tokenization import Tokenized

        t0 = time.perf_counter()
        ids = {str(w): i for i, w in enumerate(vocab.tolist())}
        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        retriever.index(Tokenized(ids=doc_ids, vocab=ids), show_progress=False)
        retriever.save(f"{directory}/bm25s")
        entry["bm25s"] = retriever
        entry["bm25s_ids"] = ids
        entry["bm25s_build_s"] = time.perf_counter() - t0
    del doc_ids
    _BUILT[rows] = entry
    return entry


def _bm25s_query(entry: dict, text: str):
    """The query as bm25s token ids (a repeated word counts twice, as our query weights)."""
    from bm25s.tokenization import Tokenized

    ids = entry["bm25s_ids"]
    return Tokenized(ids=[[ids[w] for w in text.split()]], vocab=ids)


def _size_cases(rows: int) -> list[Case]:
    entry = build(rows)
    store = entry["store"]
    memory = HolographicMemory(store)
    queries = entry["queries"]
    label = f"{rows / 1e6:g}M traces, k={K}"
    target = "report only (latency per query, same queries)"
    out: list[Case] = []
    bm25s = peers.load("bm25s")
    retriever = entry["bm25s"]

    def cycling(fn):
        counter = itertools.cycle(range(len(queries)))
        return lambda: fn(queries[next(counter)])

    def peer_fn():
        if retriever is None:
            return None
        return cycling(
            lambda q: retriever.retrieve(
                _bm25s_query(entry, q), k=K, show_progress=False, n_threads=1
            )
        )

    def check_bm25():
        for q in queries[:8]:
            hits = memory.recall(q, K, touch=False, rank="bm25")
            _, theirs = retriever.retrieve(
                _bm25s_query(entry, q), k=K, show_progress=False, n_threads=1
            )
            ours = np.array([h.score for h in hits])
            ours *= _ceiling(memory, q)
            np.testing.assert_allclose(np.sort(ours)[::-1], theirs[0][: ours.size], rtol=2e-5)

    for rank in RANKS:

        def ours(q: str, rank: str = rank):
            return memory.recall(q, K, touch=False, rank=rank)

        out.append(
            Case(
                kernel=f"lexical.recall[{rank}]",
                size=label,
                ours=cycling(ours),
                peer=peer_fn(),
                peer_name="bm25s retrieve (1 thread)",
                items=1,
                item_unit="queries",
                target=target,
                repeat=N_QUERIES,
                check=check_bm25 if rank == "bm25" and retriever is not None else None,
                peer_missing=None if bm25s is not None else "bm25s",
                notes={"build_s": entry["build_s"]},
            )
        )

    def ours_open():
        return HolographicMemory(store)

    def peer_open():
        assert bm25s is not None  # the peer runs only when bm25s loaded
        return bm25s.BM25.load(f"{entry['dir']}/bm25s", show_progress=False)

    out.append(
        Case(
            kernel="lexical.open",
            size=f"{rows / 1e6:g}M traces",
            ours=ours_open,
            peer=peer_open if retriever is not None else None,
            peer_name="bm25s BM25.load (saved index)",
            items=rows,
            item_unit="traces",
            target="report only (mirror + lexical index from stored terms)",
            repeat=3 if rows >= 500_000 else 5,
            peer_missing=None if bm25s is not None else "bm25s",
        )
    )
    return out


def _ceiling(memory: HolographicMemory, q: str) -> float:
    """Σ w·idf of a query (bm25 hits carry bm25/ceiling; bm25s reports raw scores)."""
    from sentient_core.memory import lexical
    from sentient_kernels import bm25 as bm25_kernels

    terms, weights = lexical.query_terms(q)
    view = memory.view()
    _, idf = bm25_kernels.scores(
        view.lexical.packed,
        terms,
        doc_len=np.ascontiguousarray(view.mirror.doc_len[: view.n]),
        query_weights=weights,
        valid=np.ascontiguousarray(view.valid),
    )
    return bm25_kernels.ceiling(idf, weights)


def _search(memory: HolographicMemory, q: str, rank: str, exhaustive: bool, k: int = K):
    """The ranking alone (no hit records): MaxScore, or every posting accumulated."""
    from sentient_core.memory import lexical

    mq = memory.query(q)
    v = mq.view
    return lexical.search(
        v.lexical, v.mirror, v.n, mq.terms, mq.weights, k, rank, mq.code, exhaustive=exhaustive
    )


def _scorer(memory: HolographicMemory):
    """The default scored recall of ``memory``, its factor table built (seconds at 1M)."""
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall

    scored = ScoredRecall(memory, MetaMemory(memory))
    scored.recall("warm", K)
    return scored


def _search_scored(scored, q: str, now: float, exhaustive: bool):
    """The scored selection alone, as :meth:`ScoredRecall.recall` calls it (its table)."""
    from sentient_core.memory import lexical
    from sentient_core.metamemory.factors import FACTOR_NAMES, RECENCY_HOURS
    from sentient_core.metamemory.recall import RERANK_POOL
    from sentient_kernels.scored_hybrid import Overlay

    mq = scored.memory.query(q)
    v = mq.view
    n = min(v.n, scored._static.shape[0])
    w = np.asarray(scored.meta.scorer.weights, dtype=np.float64)
    overlay = Overlay(
        scored._static[:n],
        v.mirror.last_access[:n],
        float(w[FACTOR_NAMES.index("relevance")]),
        float(w[FACTOR_NAMES.index("recency")]),
        now,
        RECENCY_HOURS * 3600.0,
        scored._static_max,
    )
    return lexical.search(
        v.lexical,
        v.mirror,
        n,
        mq.terms,
        mq.weights,
        max(K, RERANK_POOL),
        "hybrid",
        mq.code,
        overlay=overlay,
        valid=scored._valid[:n],
        exhaustive=exhaustive,
    )


LATENCY_ROWS = (
    "hybrid",
    "bm25",
    "cosine",
    "scored",
    "bm25s",
    "search hybrid",
    "search hybrid exhaustive",
    "search bm25",
    "search bm25 exhaustive",
    "search hybrid k=20",
    "search scored",
    "search scored exhaustive",
)
"""What :func:`latency` times: ``memory.recall`` per rank, the default scored
recall (:class:`~sentient_core.metamemory.recall.ScoredRecall`, factor table
built beforehand), bm25s ``retrieve``, and
:func:`sentient_core.memory.lexical.search` alone (MaxScore, and the exhaustive
accumulation it replaced, which gives the same rows and scores; for the scored
selection that is checked on every query). The scored selection asks for 20 rows
(the scored recall's re-rank pool): ``search hybrid k=20`` is its peer."""


def latency(rows: int, repeat: int = 1) -> dict[str, dict[str, float]]:
    """Median and p95 per query (ms) of each row of :data:`LATENCY_ROWS`, interleaved.

    For every query, each variant runs once in turn (A/B/A/B…), so a load
    change on the machine touches every variant alike.
    """
    entry = build(rows)
    memory = HolographicMemory(entry["store"])
    retriever = entry["bm25s"]

    def recall(rank: str) -> Callable[[str], object]:
        return lambda q: memory.recall(q, K, touch=False, rank=rank)

    def search(rank: str, exhaustive: bool) -> Callable[[str], object]:
        return lambda q: _search(memory, q, rank, exhaustive)

    scored = _scorer(memory)
    now = time.time()  # one clock for both selections: the same recency, so the same result
    last: dict[bool, tuple] = {}

    def search_scored(exhaustive: bool) -> Callable[[str], object]:
        def run(q: str) -> object:
            last[exhaustive] = out = _search_scored(scored, q, now, exhaustive)
            return out

        return run

    calls: dict[str, Callable[[str], object]] = {rank: recall(rank) for rank in RANKS}
    calls["scored"] = lambda q: scored.recall(q, K)
    for rank in ("hybrid", "bm25"):
        calls[f"search {rank}"] = search(rank, False)
        calls[f"search {rank} exhaustive"] = search(rank, True)
    calls["search hybrid k=20"] = lambda q: _search(memory, q, "hybrid", False, 20)
    calls["search scored"] = search_scored(False)
    calls["search scored exhaustive"] = search_scored(True)
    if retriever is not None:
        calls["bm25s"] = lambda q: retriever.retrieve(
            _bm25s_query(entry, q), k=K, show_progress=False, n_threads=1
        )
    samples: dict[str, list[float]] = {name: [] for name in LATENCY_ROWS if name in calls}
    for q in entry["queries"] * repeat:
        for name in samples:
            fn = calls[name]
            t0 = time.perf_counter()
            fn(q)
            samples[name].append(time.perf_counter() - t0)
        for a, b in zip(last[False], last[True], strict=True):  # the same, bit for bit
            assert np.array_equal(a, b), q
    out = {}
    for name, xs in samples.items():
        ms = sorted(x * 1e3 for x in xs)
        out[name] = {
            "median_ms": statistics.median(ms),
            "p95_ms": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
        }
    return out


def cases(scale: float) -> list[Case]:
    sizes = sorted({max(1000, round(s * scale)) for s in FULL_SIZES})
    out: list[Case] = []
    for rows in sizes:
        out.extend(_size_cases(rows))
    return out
