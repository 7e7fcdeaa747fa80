"""BM25 with given corpus statistics (``df``, ``n_docs``, ``avgdl``): a part scores as the whole.

A corpus is cut into parts (shards) of very different sizes, each indexed on
its own rows ``0..m-1``. Every part's scores with the whole corpus's
statistics (the summed :func:`sentient_kernels.doc_freqs.doc_freqs`, the total
valid rows and the total length over them) must equal the whole index's scores
bit for bit (exhaustive and MaxScore kernels, BM25 and the hybrid), the naive
reference with the same given ``df`` too, and the per-part top-k merged by
(score desc, global row asc) must be the whole's top-k.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sentient_core.memory.lexical import rank_rows
from sentient_kernels import bm25, bounds, doc_freqs, maxscore, maxscore_hybrid, segments
from tests.naive import bm25 as naive
from tests.test_maxscore import _counts, _mask, _pairs, corpus, queries


def _index(docs: list[np.ndarray]):
    counts = _counts(docs)
    seg = segments.build_segment(counts, np.arange(len(docs), dtype=np.int64))
    return counts, [seg], counts.lengths.astype(np.int32)


def _split(rng, n: int, parts: int) -> list[np.ndarray]:
    """Row ranges of very different sizes (one part tiny, maybe empty)."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=parts - 1, replace=False))
    cuts[0] = min(int(cuts[0]), 3)  # a tiny first part
    edges = [0, *cuts.tolist(), n]
    return [np.arange(a, b) for a, b in itertools.pairwise(edges)]


def _merge(parts, k):
    """Per-part (rows, scores) with global rows, merged by (score desc, row asc)."""
    rows = np.concatenate([r for r, _ in parts])
    scores = np.concatenate([s for _, s in parts])
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


CASES = [
    # (n, vocab, parts, mask)
    (400, 8, 2, "none"),
    (1500, 25, 4, "few"),
    (2000, 12, 3, "many"),
]


@pytest.mark.parametrize(("n", "vocab", "nparts", "mask"), CASES)
def test_a_part_scores_as_the_whole_with_the_whole_statistics(n, vocab, nparts, mask):
    rng = np.random.default_rng(n + 31 * nparts)
    docs = corpus(rng, n, vocab)
    counts, segs, doc_len = _index(docs)
    valid = _mask(rng, n, mask)
    live = np.ones(n, np.uint8) if valid is None else valid
    n_docs = float(np.count_nonzero(live))
    avgdl = int(doc_len[live != 0].sum()) / n_docs
    codes = rng.standard_normal((n, 16)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes[rng.integers(0, n, size=n // 10)] = codes[1]  # cosine ties across parts
    ref_docs = [dict(zip(d.tolist(), t.tolist(), strict=True)) for d, t in _pairs(counts)]
    ranges = _split(rng, n, nparts)
    parts = []
    for rr in ranges:
        _, psegs, plen = _index([docs[i] for i in rr])
        pvalid = None if valid is None else np.ascontiguousarray(valid[rr])
        packed = bounds.pack_with_bounds(psegs, plen, bm25.K1, bm25.B)
        parts.append((rr, psegs, packed, plen, pvalid))
    checked = 0
    for terms, weights in queries(rng, vocab):
        df = sum(doc_freqs.doc_freqs(p[1], terms, doc_len=p[3], valid=p[4]) for p in parts).astype(
            np.int64
        )
        whole_df = doc_freqs.doc_freqs(segs, terms, doc_len=doc_len, valid=valid)
        np.testing.assert_array_equal(df, whole_df)
        assert df.tolist() == naive.doc_freqs(
            ref_docs, terms.tolist(), None if valid is None else valid.astype(bool).tolist()
        )
        stats = dict(n_docs=n_docs, avgdl=avgdl, query_weights=weights, valid=valid)
        whole, whole_idf = bm25.scores(segs, terms, doc_len=doc_len, **stats)
        qcode = codes[int(rng.integers(0, n))].copy()
        for k in (1, 7, n + 3):
            got_bm, got_hy = [], []
            for rr, psegs, packed, plen, pvalid in parts:
                pstats = dict(stats, valid=pvalid, df=df)
                score, idf = bm25.scores(psegs, terms, doc_len=plen, **pstats)
                np.testing.assert_array_equal(score, whole[rr])  # bit for bit
                np.testing.assert_array_equal(idf, whole_idf)
                ref, _ = naive.scores(
                    [ref_docs[i] for i in rr],
                    plen.tolist(),
                    list(zip(terms.tolist(), weights.tolist(), strict=True)),
                    None if pvalid is None else pvalid.astype(bool).tolist(),
                    n_docs=n_docs,
                    avgdl=avgdl,
                    df=df.tolist(),
                )
                np.testing.assert_array_equal(score, ref)
                rows, top, ceil = maxscore.topk(packed, terms, k, doc_len=plen, **pstats)
                want = bm25.topk(psegs, terms, k, doc_len=plen, **pstats)
                np.testing.assert_array_equal(rows, want[0])
                np.testing.assert_array_equal(top, want[1])
                assert ceil == want[2] == bm25.ceiling(whole_idf, weights)
                got_bm.append((rr[rows], top))
                hkw = dict(pstats, codes=np.ascontiguousarray(codes[rr]), query_code=qcode)
                hy = maxscore_hybrid.hybrid_topk(packed, terms, k, doc_len=plen, alpha=0.2, **hkw)
                hy_want = bm25.hybrid_topk(psegs, terms, k, doc_len=plen, alpha=0.2, **hkw)
                for x, y in zip(hy, hy_want, strict=True):
                    np.testing.assert_array_equal(x, y)
                got_hy.append((rr[hy[0]], hy[1]))
            want_rows, want_top, _ = maxscore.topk(segs, terms, k, doc_len=doc_len, **stats)
            rows, top = _merge(got_bm, k)
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_array_equal(top, want_top)
            want_h = maxscore_hybrid.hybrid_topk(
                segs, terms, k, doc_len=doc_len, codes=codes, query_code=qcode, alpha=0.2, **stats
            )
            rows, top = _merge(got_hy, k)
            np.testing.assert_array_equal(rows, want_h[0])
            np.testing.assert_array_equal(top, want_h[1])
            checked += 1
    assert checked >= 30


def test_rank_rows_takes_the_given_df_on_every_path():
    """The memory's entry point: pruned and exhaustive, BM25 and hybrid, with a given df."""
    rng = np.random.default_rng(5)
    n = 600
    docs = corpus(rng, n, 10)
    _, segs, doc_len = _index(docs)
    packed = bounds.pack_with_bounds(segs, doc_len, bm25.K1, bm25.B)
    valid = np.ones(n, np.uint8)
    valid[rng.integers(0, n, size=20)] = 0
    codes = rng.standard_normal((n, 8)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    changed = 0
    for terms, weights in queries(rng, 10):
        # A larger corpus (this one a third of it, say): its N, avgdl and df.
        df = doc_freqs.doc_freqs(packed, terms, doc_len=doc_len, valid=valid) * 3 + 1
        n_docs, avgdl = 3.0 * n, 11.5
        score, idf = bm25.scores(
            segs, terms, doc_len=doc_len, query_weights=weights, valid=valid,
            n_docs=n_docs, avgdl=avgdl, df=df,
        )  # fmt: skip
        ceil = bm25.ceiling(idf, weights)
        want_rows, want_raw = naive.topk(score, 9)
        for rank in ("bm25", "hybrid"):
            args = (packed, n, valid, doc_len, n_docs, avgdl, terms, weights, 9, rank)
            fast = rank_rows(*args, codes, codes[4], df=df)
            slow = rank_rows(*args, codes, codes[4], df=df, exhaustive=True)
            plain = rank_rows(*args, codes, codes[4])
            for x, y in zip(fast, slow, strict=True):
                if x is not None:
                    np.testing.assert_array_equal(x, y)
            if rank == "bm25" and ceil > 0:
                np.testing.assert_array_equal(fast[0], want_rows)
                np.testing.assert_array_equal(fast[1], want_raw / ceil)
            changed += not np.array_equal(fast[1], plain[1])
    assert changed > 0  # the given statistics are used (the comparisons above are not vacuous)


def test_df_is_checked():
    seg, doc_len, terms, _ = bm25.warmup_index()
    with pytest.raises(ValueError, match="df"):
        bm25.scores([seg], terms, doc_len=doc_len, df=np.array([1, -1], np.int64))
    with pytest.raises((ValueError, TypeError), match="df"):
        maxscore.topk([seg], terms, 2, doc_len=doc_len, df=np.array([1], np.int64))
    with pytest.raises((ValueError, TypeError), match="df"):
        bm25.topk([seg], terms, 2, doc_len=doc_len, df=np.array([1.0, 2.0]))
    with pytest.raises((ValueError, TypeError), match="query_terms"):
        doc_freqs.doc_freqs([seg], terms.astype(np.int64), doc_len=doc_len)
    # A term no row of this part holds still gets its given idf (the ceiling counts it).
    absent = np.array([9, 3, 12345], dtype=np.uint64)
    _, _, ceil = maxscore.topk([seg], absent, 2, doc_len=doc_len, n_docs=10.0, avgdl=2.0,
                               df=np.array([1, 1, 4], np.int64))  # fmt: skip
    _, idf = bm25.scores([seg], absent, doc_len=doc_len, n_docs=10.0, avgdl=2.0,
                         df=np.array([1, 1, 4], np.int64))  # fmt: skip
    assert idf[2] == naive.idf(10.0, 4) and ceil == pytest.approx(idf.sum(), rel=0, abs=0)
