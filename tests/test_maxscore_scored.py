"""sentient_kernels.maxscore_scored: the scored hybrid on MaxScore, bit for bit the exhaustive one.

Every result is compared bit for bit (rows, scores, lexical part, cosine) with
:func:`sentient_kernels.scored_hybrid.scored_hybrid_topk` (every posting added into an
accumulator: today's scored recall) and its scores with the reference of
``tests/naive_overlay.py``, on the corpora of ``tests/test_maxscore.py`` (lists of
many blocks, duplicate documents and near twins) with codes, static factors and
access times that repeat with the document (exact ties broken by the row, near
ties), retired rows (few and many), several segments (some merged, some appended),
``k`` above the valid rows, a static factor from negligible to dominant (rows
sharing no term win: the overlay scan runs), a negative recency weight, accesses
"after now". A relevance weight <= 0 has no bound: the memory's ranking keeps the
exhaustive path (tested through :func:`sentient_core.memory.lexical.rank_rows` and
the scored recall of a real store).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sentient_core.memory import lexical
from sentient_core.memory.lexical import LexicalIndex
from sentient_kernels import bm25, bounds, maxscore_scored
from sentient_kernels.maxscore_scored import scored_topk
from sentient_kernels.scored_hybrid import Overlay, scored_hybrid_topk
from tests import naive_overlay
from tests.test_maxscore import _counts, _mask, _part, corpus, index, queries

NOW = 1.7e9


def _per_document(rng, docs, d: int, static_scale: float):
    """Codes, static and last access drawn per distinct document: copies tie exactly."""
    keys: dict[tuple, int] = {}
    which = np.array([keys.setdefault(tuple(sorted(x.tolist())), len(keys)) for x in docs])
    u = len(keys)
    codes = rng.standard_normal((u, d)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes[rng.integers(0, u, size=max(1, u // 20))] = codes[0]  # cosine ties across documents
    static = rng.uniform(-static_scale, static_scale, u)
    static[rng.integers(0, u, size=max(1, u // 10))] = static[0]
    last = NOW - rng.uniform(0, 5 * 86400, u)
    last[rng.integers(0, u, size=max(1, u // 20))] = NOW + 50.0  # "after now": age 0
    return codes[which], static[which], last[which]


CASES = [
    # (n, vocab, segments, merge, mask)
    (1, 3, 1, False, "none"),
    (300, 8, 1, False, "none"),
    (2000, 12, 4, True, "few"),
    (2000, 40, 7, False, "many"),
    (3000, 6, 3, True, "many"),
    (1500, 25, 2, False, "few"),
]

WEIGHTS = [
    # (w_rel, w_rec, static_scale, code dimension: 3 puts many cosines near 1, where a
    # cosine bound a few % short would show)
    (1.0, 0.2, 0.0, 16),  # a fresh store: every static alike
    (1.0, 0.2, 0.05, 16),  # the scorer's baseline: relevance dominates
    (1.0, 0.2, 0.05, 3),
    (0.7, 0.6, 0.02, 3),  # recency weighs as much as relevance
    (0.7, -0.5, 0.3, 16),  # negative recency weight
    (1.0, 0.2, 3.0, 16),  # static dominates: rows sharing no term win
    (1e-7, 0.0, 1e-6, 16),  # a relevance weight SGD drove near zero
]


@pytest.mark.parametrize(("n", "vocab", "nseg", "merge", "mask"), CASES)
@pytest.mark.parametrize(("w_rel", "w_rec", "static_scale", "d"), WEIGHTS)
def test_scored_is_bit_identical_to_the_exhaustive_kernel(
    n, vocab, nseg, merge, mask, w_rel, w_rec, static_scale, d
):
    rng = np.random.default_rng(n + 3 * vocab + int(static_scale * 10) + d)
    docs = corpus(rng, n, vocab)
    _, segs, doc_len = index(rng, docs, nseg, merge)
    valid = _mask(rng, n, mask)
    codes, static, last = _per_document(rng, docs, d, static_scale)
    packed = bounds.pack_with_bounds(segs, doc_len, bm25.K1, bm25.B)
    for (terms, weights), alpha in zip(queries(rng, vocab), itertools.cycle((0.2, 0.01, 3.0))):
        qcode = codes[int(rng.integers(0, n))].copy()
        for k in (1, 10, 37, n + 4):
            kw = dict(
                doc_len=doc_len,
                codes=codes,
                query_code=qcode,
                alpha=alpha,
                static=static,
                last_access=last,
                w_rel=w_rel,
                w_rec=w_rec,
                now=NOW,
                query_weights=weights,
                valid=valid,
            )
            got = scored_topk(packed, terms, k, **kw)
            want = scored_hybrid_topk(segs, terms, k, **kw)
            for x, y in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, y)
            score, idf = bm25.scores(
                segs, terms, doc_len=doc_len, query_weights=weights, valid=valid
            )
            ref_rows, ref_s = naive_overlay.scored_hybrid(
                score,
                float(np.dot(weights, idf)),
                codes,
                qcode,
                alpha,
                k,
                valid=np.ones(n, bool) if valid is None else valid.astype(bool),
                static=static,
                last_access=last,
                w_rel=w_rel,
                w_rec=w_rec,
                now=NOW,
                recency_s=86400.0,
            )
            assert got[0].size == ref_rows.size
            np.testing.assert_allclose(got[1], ref_s, rtol=0, atol=1e-12)


def _grown(rng, n_docs: int, vocab: int):
    """A LexicalIndex grown by appends (merged and appended segments) and its lengths."""
    docs = corpus(rng, n_docs, vocab)
    counts = _counts(docs)
    doc_len = np.zeros(4096, dtype=np.int32)
    index_ = LexicalIndex()
    total, start = 0, 0
    for size in (1, 2, 100, 7, 900, 1, 1500, 489):
        stop = start + size
        part = _part(counts, start, stop)
        rows = np.arange(start, stop, dtype=np.int64)
        doc_len[rows] = part.lengths
        total += int(part.lengths.sum())
        index_.add(part, rows, np.ones(size, dtype=bool), doc_len, total / stop)
        start = stop
    assert len(index_.segments) > 1
    return docs, index_, doc_len


@pytest.mark.parametrize(
    ("w_rel", "w_rec", "static_scale", "pruned"),
    [
        (1.0, 0.2, 0.05, True),
        (0.5, -0.3, 2.0, True),
        (-0.4, 0.1, 0.2, False),  # no bound for a negative relevance weight: exhaustive
        (0.0, 0.2, 0.5, False),  # relevance weightless: exhaustive
    ],
)
def test_the_memory_ranking_equals_its_exhaustive_path(w_rel, w_rec, static_scale, pruned):
    """rank_rows through appends and retired rows; w_rel <= 0 falls back to the accumulator."""
    rng = np.random.default_rng(31)
    docs, index_, doc_len = _grown(rng, 3000, 15)
    n = len(docs)
    valid = np.ones(4096, dtype=np.uint8)
    valid[rng.integers(0, n, size=60)] = 0  # retired or vetoed
    active = valid[:n] != 0
    n_docs, avgdl = float(active.sum()), float(doc_len[:n][active].mean())
    codes, static, last = _per_document(rng, docs, 8, static_scale)
    overlay = Overlay(static, last, w_rel, w_rec, NOW, 86400.0, float(static[active].max()))
    assert maxscore_scored.applies(overlay) == pruned
    for terms, weights in queries(rng, 15):
        for k in (1, 20, n + 1):
            args = (index_.packed, n, valid, doc_len, n_docs, avgdl, terms, weights, k, "hybrid")
            got = lexical.rank_rows(*args, codes, codes[5], overlay=overlay)
            want = lexical.rank_rows(*args, codes, codes[5], overlay=overlay, exhaustive=True)
            for x, y in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, y)


def test_a_static_max_that_is_no_bound_is_not_pruned_with():
    """No finite static_max (no valid row reported): the exhaustive path."""
    o = Overlay(np.zeros(3), np.zeros(3), 1.0, 0.2, 0.0, 86400.0, float("-inf"))
    assert not maxscore_scored.applies(o)
    assert maxscore_scored.applies(o._replace(static_max=0.0))


def test_the_default_scored_recall_equals_its_exhaustive_path(tmp_path, monkeypatch):
    """ScoredRecall on a real store: the same hits and scores with the pruning turned off."""
    from sentient_core.memory import HolographicMemory
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.recall import ScoredRecall
    from sentient_core.store import Store
    from tests.test_memory import random_texts

    t0 = 1_700_000_000.0
    clock = iter(np.arange(t0, t0 + 10_000, 7.0))
    with Store.open(tmp_path / "s", code_dim=256) as store:
        mem = HolographicMemory(store, clock=lambda: float(next(clock)))
        texts = random_texts(150, seed=5)
        for i, t in enumerate(texts):
            mem.store(t, source=("local:/a.txt", "web:x.org")[i % 2], importance=(i % 7) / 7)
        scored = ScoredRecall(mem, MetaMemory(mem))
        questions = [" ".join(t.split()[2:6]) for t in texts[::15]]
        for q in questions:
            for k in (1, 5, 30):
                got = scored.recall(q, k, now=t0 + 3600.0)
                with monkeypatch.context() as m:
                    m.setattr(maxscore_scored, "applies", lambda overlay: False)
                    want = scored.recall(q, k, now=t0 + 3600.0)
                assert [(h.row, h.score, h.lexical) for h in got] == [
                    (h.row, h.score, h.lexical) for h in want
                ]


def test_arguments_are_checked_by_name():
    rng = np.random.default_rng(1)
    _, segs, doc_len = index(rng, corpus(rng, 20, 4), 1)
    terms = np.array([1, 2], np.uint64)
    codes = np.eye(20, 4, dtype=np.float32)
    kw = dict(
        doc_len=doc_len,
        codes=codes,
        query_code=codes[0],
        alpha=0.2,
        static=np.zeros(20),
        last_access=np.zeros(20),
        w_rel=1.0,
        w_rec=0.1,
        now=0.0,
    )
    scored_topk(segs, terms, 3, **kw)
    for name, value in (("w_rel", -0.5), ("w_rel", 0.0), ("k", 0), ("recency_s", 0.0)):
        bad = {**kw, name: value} if name != "k" else kw
        with pytest.raises(ValueError, match=name):
            scored_topk(segs, terms, 0 if name == "k" else 3, **bad)
    with pytest.raises(ValueError, match="static"):
        scored_topk(segs, terms, 3, **{**kw, "static": np.zeros(19)})


@pytest.mark.parametrize("alpha", [0.2, 3.0])
def test_rows_of_equal_bm25_are_ordered_by_the_overlay_and_cosine_alone(alpha):
    """Every row holds the query's term once at one of two lengths: BM25 cannot prune, the
    per-row bounds (own static, recency, the float32 cosine estimate) decide; 3-d codes put
    many cosines near 1, so a bound a few per cent short drops a winner."""
    rng = np.random.default_rng(int(alpha * 10))
    n = 3000
    docs = [np.array([1] + [2 + i % 40] * int(rng.integers(1, 3))) for i in range(n)]
    _, segs, doc_len = index(rng, docs, 3, True)
    valid = _mask(rng, n, "few")
    codes, static, last = _per_document(rng, [np.array([i]) for i in range(n)], 3, 0.01)
    last = NOW - rng.uniform(0, 2 * 86400, n)
    packed = bounds.pack_with_bounds(segs, doc_len, bm25.K1, bm25.B)
    terms = np.array([1], np.uint64)
    for w_rec, k in itertools.product((0.0, 0.05, 0.3), (1, 10, 50)):
        qcode = codes[int(rng.integers(0, n))] + rng.normal(0, 0.05, 3).astype(np.float32)
        kw = dict(
            doc_len=doc_len,
            codes=codes,
            query_code=qcode,
            alpha=alpha,
            static=static,
            last_access=last,
            w_rel=1.0,
            w_rec=w_rec,
            now=NOW,
            valid=valid,
        )
        got = scored_topk(packed, terms, k, **kw)
        want = scored_hybrid_topk(segs, terms, k, **kw)
        for x, y in zip(got, want, strict=True):
            np.testing.assert_array_equal(x, y)
