"""sentient_kernels.maxscore / maxscore_hybrid / bounds: the same top-k as the exhaustive kernels.

Every result is compared bit for bit with :func:`sentient_kernels.bm25.topk` and
:func:`sentient_kernels.bm25.hybrid_topk` (which add every posting into an
accumulator: today's exact ranking) and with the references of
``tests/naive_bm25.py``, on seeded corpora built to break pruning: lists of many
blocks, duplicate documents (exact ties) and documents one token apart (near
ties), retired rows (a few: looked up; many: scanned), several segments (some
merged), rows beyond ``doc_len``, ``k`` above the number of candidates, one-term
and many-term queries, bounds computed at a stale mean length or without
lengths, and other ``k1``/``b`` than the bounds'.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sentient_core.memory.lexical import LexicalIndex
from sentient_kernels import bm25, bounds, maxscore, maxscore_hybrid, segments
from sentient_kernels.lexical import TermCounts
from tests.naive import bm25 as naive


def _counts(docs: list[np.ndarray]) -> TermCounts:
    """TermCounts of documents given as arrays of term ids (ids are the hashes)."""
    offsets, terms, tfs, lengths = [0], [], [], []
    for d in docs:
        u, c = np.unique(d, return_counts=True)
        terms.extend(u.tolist())
        tfs.extend(c.tolist())
        offsets.append(len(terms))
        lengths.append(len(d))
    return TermCounts(
        np.array(offsets, np.int64),
        np.array(terms, np.uint64),
        np.array(tfs, np.uint16),
        np.array(lengths, np.int64),
    )


def _part(counts: TermCounts, a: int, b: int) -> TermCounts:
    lo, hi = counts.offsets[a], counts.offsets[b]
    return TermCounts(
        counts.offsets[a : b + 1] - lo, counts.terms[lo:hi], counts.tfs[lo:hi], counts.lengths[a:b]
    )


def corpus(rng, n: int, vocab: int, zipf: float = 1.2) -> list[np.ndarray]:
    """Zipf documents of 0-40 terms (a few terms hold many blocks), with duplicates and near twins."""
    p = 1.0 / np.arange(1, vocab + 1) ** zipf
    p /= p.sum()
    docs = [rng.choice(vocab, size=int(rng.integers(0, 41)), p=p) + 1 for _ in range(n)]
    for i in rng.integers(1, n, size=n // 10):  # exact ties: copies of an earlier document
        docs[i] = docs[int(rng.integers(0, i))].copy()
    for i in rng.integers(1, n, size=n // 10):  # near ties: one rare token more
        docs[i] = np.append(docs[int(rng.integers(0, i))], vocab + 5)
    return docs


def index(rng, docs, n_segments: int, merge: bool = False):
    """Segments over ``docs`` (rows 0..n-1), cut at random, optionally merged pairwise."""
    counts = _counts(docs)
    n = len(docs)
    cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, size=n_segments - 1)]))
    segs = [
        segments.build_segment(_part(counts, a, b), np.arange(a, b, dtype=np.int64))
        for a, b in itertools.pairwise(cuts)
    ]
    if merge and len(segs) > 1:
        segs = [segments.merge_segments(segs[0], segs[1]), *segs[2:]]
    return counts, segs, counts.lengths.astype(np.int32)


def queries(rng, vocab: int):
    """Distinct ids and weights: one frequent term, one rare, absent ones, many, repeats."""
    yield np.array([1], np.uint64), np.array([1.0])
    yield np.array([1], np.uint64), np.array([3.0])
    yield np.array([vocab], np.uint64), np.array([1.0])
    yield np.array([vocab + 99], np.uint64), np.array([1.0])
    yield np.array([1, 2, 3], np.uint64), np.array([1.0, 1.0, 2.0])
    yield np.array([1, 2, vocab + 5], np.uint64), np.array([1.0, 1.0, 1.0])
    for _ in range(4):
        q = np.unique(rng.integers(1, vocab + 6, size=int(rng.integers(1, 9)))).astype(np.uint64)
        yield q, rng.integers(1, 4, size=q.size).astype(np.float64)


def _mask(rng, n: int, kind: str):
    if kind == "none":
        return None
    valid = np.ones(n, dtype=np.uint8)
    if kind == "few":
        valid[rng.integers(0, n, size=3)] = 0
    else:
        valid[rng.random(n) < 0.4] = 0
    return valid


CASES = [
    # (n, vocab, segments, merge, mask, k1, b)
    (1, 3, 1, False, "none", 1.2, 0.75),
    (300, 8, 1, False, "none", 1.2, 0.75),
    (2000, 12, 4, True, "few", 1.2, 0.75),
    (2000, 40, 7, False, "many", 1.2, 0.75),
    (3000, 6, 3, True, "many", 0.0, 1.0),
    (1500, 25, 2, False, "few", 2.0, 0.0),
    (1500, 25, 5, False, "none", 0.9, 0.4),
]


@pytest.mark.parametrize(("n", "vocab", "nseg", "merge", "mask", "k1", "b"), CASES)
def test_topk_is_bit_identical_to_the_exhaustive_kernel_and_the_reference(
    n, vocab, nseg, merge, mask, k1, b
):
    rng = np.random.default_rng(n + vocab + nseg)
    docs = corpus(rng, n, vocab)
    counts, segs, doc_len = index(rng, docs, nseg, merge)
    valid = _mask(rng, n, mask)
    ref_docs = [dict(zip(d.tolist(), t.tolist(), strict=True)) for d, t in _pairs(counts)]
    for terms, weights in queries(rng, vocab):
        score, _ = naive.scores(
            ref_docs,
            doc_len.tolist(),
            list(zip(terms.tolist(), weights.tolist(), strict=True)),
            None if valid is None else valid.astype(bool).tolist(),
            k1=k1,
            b=b,
        )
        for k in (1, 2, 10, 37, n + 4):
            kw = dict(doc_len=doc_len, query_weights=weights, valid=valid, k1=k1, b=b)
            rows, top, ceil = maxscore.topk(segs, terms, k, **kw)
            want_rows, want_top, want_ceil = bm25.topk(segs, terms, k, **kw)
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_array_equal(top, want_top)
            assert ceil == want_ceil
            ref_rows, ref_top = naive.topk(score, k)
            np.testing.assert_array_equal(rows, ref_rows)
            np.testing.assert_array_equal(top, ref_top)


def _pairs(counts: TermCounts):
    for t in range(counts.offsets.size - 1):
        lo, hi = counts.offsets[t], counts.offsets[t + 1]
        yield counts.terms[lo:hi], counts.tfs[lo:hi]


@pytest.mark.parametrize(("n", "vocab", "nseg", "merge", "mask", "k1", "b"), CASES)
def test_hybrid_is_bit_identical_to_the_exhaustive_kernel(n, vocab, nseg, merge, mask, k1, b):
    rng = np.random.default_rng(7 * n + vocab)
    docs = corpus(rng, n, vocab)
    _, segs, doc_len = index(rng, docs, nseg, merge)
    valid = _mask(rng, n, mask)
    codes = rng.standard_normal((n, 16)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes[rng.integers(0, n, size=n // 20)] = codes[0]  # cosine ties
    codes[n // 2] = 0.0
    packed = bounds.pack_with_bounds(segs, doc_len, k1, b)
    for (terms, weights), alpha in zip(queries(rng, vocab), itertools.cycle((0.2, 0.01, 3.0))):
        qcode = codes[int(rng.integers(0, n))].copy() if n > 1 else codes[0] + 1.0
        if not qcode.any():
            qcode[0] = 1.0
        for k in (1, 10, n + 4):
            kw = dict(
                doc_len=doc_len,
                codes=codes,
                query_code=qcode,
                alpha=alpha,
                query_weights=weights,
                valid=valid,
                k1=k1,
                b=b,
            )
            got = maxscore_hybrid.hybrid_topk(packed, terms, k, **kw)
            want = bm25.hybrid_topk(segs, terms, k, **kw)
            for x, y in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, y)
            score, idf = bm25.scores(
                segs, terms, doc_len=doc_len, query_weights=weights, valid=valid, k1=k1, b=b
            )
            ceil = float(np.dot(weights, idf))
            if ceil > 0:  # the reference divides by it
                ref_rows, ref_h = naive.hybrid(score, ceil, codes, qcode, alpha, k, valid)
                np.testing.assert_allclose(got[1], ref_h, rtol=0, atol=1e-12)
                assert got[0].size == ref_rows.size


def test_rows_beyond_doc_len_never_count():
    rng = np.random.default_rng(3)
    docs = corpus(rng, 900, 10)
    _, segs, doc_len = index(rng, docs, 3)
    for terms, weights in queries(rng, 10):
        for n in (1, 64, 65, 500):
            kw = dict(doc_len=doc_len[:n], query_weights=weights)
            got = maxscore.topk(segs, terms, 20, **kw)
            want = bm25.topk(segs, terms, 20, **kw)
            for x, y in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, y)
            assert (got[0] < n).all()


@pytest.mark.parametrize("ref_scale", [0.25, 0.9, 1.0, 1.7, None])
def test_bounds_at_any_reference_length_give_the_same_top_k(ref_scale):
    """Bounds computed at a stale mean length (or with no lengths) stay bounds."""
    rng = np.random.default_rng(11)
    docs = corpus(rng, 2500, 9)
    _, segs, doc_len = index(rng, docs, 3)
    avgdl = float(doc_len.mean())
    if ref_scale is None:
        bnds = [bounds.term_bounds(s, None, bm25.K1, bm25.B) for s in segs]
    else:
        bnds = [bounds.term_bounds(s, doc_len, bm25.K1, bm25.B, avgdl * ref_scale) for s in segs]
    packed = segments.pack(segs, bounds=bnds)
    plain = segments.pack(segs)  # no bounds: every factor at most 1
    for terms, weights in queries(rng, 9):
        want = bm25.topk(segs, terms, 10, doc_len=doc_len, query_weights=weights)
        for p in (packed, plain):
            got = maxscore.topk(p, terms, 10, doc_len=doc_len, query_weights=weights)
            for x, y in zip(got, want, strict=True):
                np.testing.assert_array_equal(x, y)


def test_bounds_match_the_reference_and_bound_every_posting():
    rng = np.random.default_rng(5)
    docs = corpus(rng, 700, 6)
    _, segs, doc_len = index(rng, docs, 2)
    short = doc_len[:600]  # rows beyond it count as length 0
    for seg in segs:
        bnd = bounds.term_bounds(seg, short, 1.2, 0.75, 33.0)
        want_blocks, want_terms = naive.block_bounds(
            _segment_dict(seg), short.tolist(), 33.0, 1.2, 0.75, segments.BLOCK
        )
        for t, blocks in enumerate(want_blocks):
            got = bnd.block_f[bnd.blocks[t] : bnd.blocks[t + 1]]
            np.testing.assert_array_equal(got, blocks)
        np.testing.assert_array_equal(bnd.term_f, want_terms)
        assert bnd.params.tolist() == [33.0, 1.2, 0.75]
        # At another mean length each factor stays under the stored one times the scale.
        for avgdl in (10.0, 33.0, 70.0):
            scale = bounds.factor_scale(bnd.params, avgdl, 1.2, 0.75)
            for t, plist in enumerate(_segment_dict(seg).values()):
                for i, (r, tf) in enumerate(plist):
                    dl = int(short[r]) if r < short.size else 0
                    f = naive.tf_factor(tf, dl, avgdl, 1.2, 0.75)
                    assert f <= bnd.block_f[bnd.blocks[t] + i // segments.BLOCK] * scale * (
                        1 + 1e-12
                    )
        assert bounds.factor_scale(bnd.params, 33.0, 1.5, 0.75) < 0  # other k1: no bound
        assert bounds.factor_scale(bnd.params, 0.0, 1.2, 0.75) < 0  # ratio 1 for every row


def _segment_dict(seg: segments.Segment) -> dict[int, list[tuple[int, int]]]:
    return {
        int(h): list(
            zip(
                seg.rows[seg.starts[j] : seg.starts[j + 1]].tolist(),
                seg.tfs[seg.starts[j] : seg.starts[j + 1]].tolist(),
                strict=True,
            )
        )
        for j, h in enumerate(seg.terms.tolist())
    }


def test_a_growing_index_ranks_as_the_exhaustive_kernel():
    """LexicalIndex through appends (binary-counter merges, bounds at the then mean length)."""
    rng = np.random.default_rng(21)
    docs = corpus(rng, 3000, 15)
    counts = _counts(docs)
    doc_len = np.zeros(4096, dtype=np.int32)
    index_ = LexicalIndex()
    total = 0
    start = 0
    for size in (1, 1, 2, 100, 7, 900, 1, 1500, 488):
        stop = start + size
        part = _part(counts, start, stop)
        rows = np.arange(start, stop, dtype=np.int64)
        doc_len[rows] = part.lengths
        total += int(part.lengths.sum())
        keep = np.ones(size, dtype=bool)
        index_.add(part, rows, keep, doc_len, total / stop)
        start = stop
    assert len(index_.segments) > 1
    n = start
    valid = np.ones(4096, dtype=np.uint8)
    valid[rng.integers(0, n, size=40)] = 0
    avgdl = float(doc_len[:n][valid[:n] != 0].mean())
    n_docs = float(np.count_nonzero(valid[:n]))
    codes = rng.standard_normal((n, 8)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    for terms, weights in queries(rng, 15):
        args = (index_.packed, n, valid, doc_len, n_docs, avgdl, terms, weights)
        got = maxscore.topk_unchecked(*args, 10)
        want = bm25.topk(
            index_.packed,
            terms,
            10,
            doc_len=doc_len[:n],
            query_weights=weights,
            valid=valid[:n],
            n_docs=n_docs,
            avgdl=avgdl,
        )
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        got_h = maxscore_hybrid.hybrid_unchecked(*args, 10, codes, codes[3], 0.2)
        want_h = bm25.hybrid_topk(
            index_.packed,
            terms,
            10,
            doc_len=doc_len[:n],
            codes=codes,
            query_code=codes[3],
            alpha=0.2,
            query_weights=weights,
            valid=valid[:n],
            n_docs=n_docs,
            avgdl=avgdl,
        )
        for x, y in zip(got_h, want_h, strict=True):
            np.testing.assert_array_equal(x, y)


def test_arguments_are_checked_by_name():
    rng = np.random.default_rng(1)
    _, segs, doc_len = index(rng, corpus(rng, 20, 4), 1)
    terms = np.array([1, 2], np.uint64)
    with pytest.raises(ValueError, match="k"):
        maxscore.topk(segs, terms, 0, doc_len=doc_len)
    with pytest.raises(ValueError, match="query_terms"):
        maxscore.topk(segs, np.array([1, 1], np.uint64), 3, doc_len=doc_len)
    codes = np.eye(20, 4, dtype=np.float32)
    with pytest.raises(ValueError, match="query_code"):
        maxscore_hybrid.hybrid_topk(
            segs,
            terms,
            3,
            doc_len=doc_len,
            codes=codes,
            query_code=np.zeros(4, np.float32),
            alpha=0.2,
        )
    with pytest.raises(ValueError, match="alpha"):
        maxscore_hybrid.hybrid_topk(
            segs, terms, 3, doc_len=doc_len, codes=codes, query_code=codes[0], alpha=0.0
        )
    with pytest.raises(ValueError, match="bounds"):
        segments.pack(segs, bounds=[])
