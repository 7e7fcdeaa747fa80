"""sentient_kernels.lexical and sentient_kernels.bm25 against the references in tests/naive_bm25.py,
invariants (hypothesis), bm25s agreement on a small corpus, argument errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.encoder.hashing import STOP_TABLE as _STOP_TABLE
from sentient_core.encoder.hashing import WORD_TABLE as _WORD_TABLE
from sentient_core.encoder.hashing import _tokens
from sentient_core.ingest.keywords import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS
from sentient_kernels import bm25, lexical, segments
from tests.naive import bm25 as naive

WORDS = [f"w{i}" for i in range(60)] + ["the", "and", "of", "x", "Überfluß", "naïve", "2024"]


def _batch(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


def counts_of(texts: list[str]) -> lexical.TermCounts:
    buf, offsets = _batch(texts)
    return lexical.term_counts(
        buf, offsets, _WORD_TABLE.get(True), _STOP_TABLE, MIN_TOKEN_CHARS, MAX_TOKEN_CHARS
    )


def random_texts(rng, n: int, max_words: int = 30) -> list[str]:
    # Zipf-like picks so terms repeat inside and across texts.
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    p /= p.sum()
    return [
        " ".join(rng.choice(WORDS, size=int(rng.integers(0, max_words)), p=p)) for _ in range(n)
    ]


def docs_of(counts: lexical.TermCounts) -> list[dict[int, int]]:
    out = []
    for t in range(counts.offsets.size - 1):
        lo, hi = counts.offsets[t], counts.offsets[t + 1]
        out.append(dict(zip(counts.terms[lo:hi].tolist(), counts.tfs[lo:hi].tolist(), strict=True)))
    return out


def segment_dict(seg: segments.Segment) -> dict[int, list[tuple[int, int]]]:
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


def query_of(text: str) -> tuple[np.ndarray, np.ndarray]:
    c = counts_of([text])
    return c.terms, c.tfs.astype(np.float64)


# ------------------------------------------------------------------ terms


def test_term_counts_match_the_encoders_tokens():
    rng = np.random.default_rng(0)
    texts = [
        *random_texts(rng, 50),
        "",
        "the and of",
        "CVE-2024-11053 fixed in 7.88.1-10+deb12u10",
        "x" * 41 + " ok " + "y" * 40,
        "Ünïcödé wörds and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 mixed",
        "repeat " * 70000,
    ]
    got = counts_of(texts)
    for t, text in enumerate(texts):
        want, n_tokens = naive.term_counts(text)
        assert docs_of(got)[t] == want
        assert got.lengths[t] == n_tokens == len(_tokens(text))
        part = got.terms[got.offsets[t] : got.offsets[t + 1]]
        assert (np.diff(part.astype(np.float64)) > 0).all() or part.size <= 1
    assert docs_of(got)[-1] == {naive.term_counts("repeat")[0].popitem()[0]: lexical.TF_MAX}


def test_pack_round_trips_and_rejects_damage():
    rng = np.random.default_rng(1)
    counts = counts_of([*random_texts(rng, 40), ""])
    buf, starts = lexical.pack_terms(counts)
    sizes = np.diff(counts.offsets)
    assert starts[-1] == buf.size == 8 * int((1 + sizes + (sizes + 3) // 4).sum())
    back = lexical.unpack_terms(buf, starts)
    for a, b in zip(counts, back, strict=True):
        np.testing.assert_array_equal(a, b)
    frozen = np.frombuffer(buf.tobytes(), dtype=np.uint8)  # as read from the store
    for a, b in zip(counts, lexical.unpack_terms(frozen, starts), strict=True):
        np.testing.assert_array_equal(a, b)
    bad = buf.copy()
    bad[starts[3]] += 1  # claims one more term than its size holds
    with pytest.raises(ValueError, match="value 3"):
        lexical.unpack_terms(bad, starts)
    with pytest.raises(ValueError, match="starts"):
        lexical.unpack_terms(buf, starts[::-1].copy())


# ------------------------------------------------------------------ segments


@pytest.mark.parametrize("n", [0, 1, 7, 300, 3000])
def test_build_segment_matches_reference(n):
    rng = np.random.default_rng(n)
    counts = counts_of(random_texts(rng, n, 40))
    rows = np.sort(rng.choice(10 * n + 1, size=n, replace=False)).astype(np.int64)
    seg = segments.build_segment(counts, rows)
    assert segment_dict(seg) == naive.segment(docs_of(counts), rows.tolist())
    assert seg.rows.dtype == np.int32 and seg.tfs.dtype == np.uint16


def test_merging_equals_building_at_once():
    rng = np.random.default_rng(5)
    counts = counts_of(random_texts(rng, 500))
    rows = np.arange(500, dtype=np.int64) * 2
    whole = segments.build_segment(counts, rows)
    cuts = [0, 1, 90, 91, 300, 500]
    merged = None
    for a, b in itertools.pairwise(cuts):
        part = lexical.TermCounts(
            counts.offsets[a : b + 1] - counts.offsets[a],
            counts.terms[counts.offsets[a] : counts.offsets[b]],
            counts.tfs[counts.offsets[a] : counts.offsets[b]],
            counts.lengths[a:b],
        )
        seg = segments.build_segment(part, rows[a:b])
        merged = seg if merged is None else segments.merge_segments(merged, seg)
    for x, y in zip(whole, merged, strict=True):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="above every row of older"):
        segments.merge_segments(whole, whole)


# ------------------------------------------------------------------ BM25


def _index(rng, n, n_segments=1):
    counts = counts_of(random_texts(rng, n, 40))
    rows = np.arange(n, dtype=np.int64)
    cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, size=n_segments - 1)]))
    segs = []
    for a, b in itertools.pairwise(cuts):
        part = lexical.TermCounts(
            counts.offsets[a : b + 1] - counts.offsets[a],
            counts.terms[counts.offsets[a] : counts.offsets[b]],
            counts.tfs[counts.offsets[a] : counts.offsets[b]],
            counts.lengths[a:b],
        )
        segs.append(segments.build_segment(part, rows[a:b]))
    return counts, segs, counts.lengths.astype(np.int32)


@pytest.mark.parametrize(
    ("n", "n_segments", "masked", "k1", "b"),
    [
        (1, 1, False, 1.2, 0.75),
        (50, 1, False, 1.2, 0.75),
        (400, 5, True, 1.2, 0.75),
        (400, 3, False, 1.5, 0.3),
        (1000, 9, True, 0.0, 1.0),
        (1000, 2, True, 2.0, 0.0),
    ],
)
def test_scores_and_topk_are_bit_identical_to_the_reference(n, n_segments, masked, k1, b):
    rng = np.random.default_rng(n + n_segments)
    counts, segs, doc_len = _index(rng, n, n_segments)
    docs = docs_of(counts)
    valid = rng.random(n) > 0.2 if masked else None
    for query in ("w0 w3 w3 w17 zzz", "w1", "naïve 2024 w59", "w0 w1 w2 w3 w4 w5 w6"):
        terms, weights = query_of(query)
        got, idf = bm25.scores(
            segs, terms, doc_len=doc_len, query_weights=weights, valid=valid, k1=k1, b=b
        )
        want, want_idf = naive.scores(
            docs,
            doc_len.tolist(),
            list(zip(terms.tolist(), weights.tolist(), strict=True)),
            None if valid is None else valid.tolist(),
            k1=k1,
            b=b,
        )
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(idf, want_idf)
        for k in (1, 3, 10, n + 5):
            rows, top, ceil = bm25.topk(
                segs, terms, k, doc_len=doc_len, query_weights=weights, valid=valid, k1=k1, b=b
            )
            want_rows, want_top = naive.topk(want, k)
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_array_equal(top, want_top)
            assert ceil == pytest.approx(float(np.dot(weights, want_idf)), rel=1e-15)
            assert (top <= ceil).all()


def test_rows_beyond_doc_len_and_masked_rows_never_count():
    rng = np.random.default_rng(9)
    counts, segs, doc_len = _index(rng, 300, 3)
    terms, weights = query_of("w0 w2 w5")
    short = doc_len[:200].copy()
    got, _ = bm25.scores(segs, terms, doc_len=short, query_weights=weights)
    want, _ = naive.scores(
        docs_of(counts)[:200],
        short.tolist(),
        list(zip(terms.tolist(), weights.tolist(), strict=True)),
    )
    np.testing.assert_array_equal(got, want)
    valid = np.zeros(300, dtype=np.bool_)
    valid[::7] = True
    rows, _, _ = bm25.topk(segs, terms, 300, doc_len=doc_len, query_weights=weights, valid=valid)
    assert rows.size and (rows % 7 == 0).all()


@pytest.mark.parametrize("masked", [False, True])
def test_hybrid_matches_reference_and_prunes_nothing_it_needs(masked):
    rng = np.random.default_rng(12)
    n = 800
    _, segs, doc_len = _index(rng, n, 4)
    codes = rng.standard_normal((n, 24)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes[5] = 0.0
    valid = rng.random(n) > 0.25 if masked else None
    terms, weights = query_of("w3 w8 w8 w40")
    qcode = rng.standard_normal(24).astype(np.float32)
    score, idf = bm25.scores(segs, terms, doc_len=doc_len, query_weights=weights, valid=valid)
    ceil = float(np.dot(weights, idf))
    for alpha in (0.05, 0.3, 1.0, 50.0):
        for k in (1, 5, 40, n + 3):
            rows, h, rel, cos = bm25.hybrid_topk(
                segs,
                terms,
                k,
                doc_len=doc_len,
                codes=codes,
                query_code=qcode,
                alpha=alpha,
                query_weights=weights,
                valid=valid,
            )
            want_rows, want_h = naive.hybrid(score, ceil, codes, qcode, alpha, k, valid)
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_allclose(h, want_h, rtol=0, atol=1e-12)
            np.testing.assert_allclose(rel, score[rows] / ceil, rtol=1e-15)
            np.testing.assert_allclose((rel + alpha * cos) / (1 + alpha), h, atol=1e-15)


def test_hybrid_of_rows_sharing_no_term_ranks_by_cosine():
    rng = np.random.default_rng(13)
    _, segs, doc_len = _index(rng, 50)
    codes = rng.standard_normal((50, 8)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    terms, _ = query_of("nowhere")
    rows, h, rel, cos = bm25.hybrid_topk(
        segs, terms, 5, doc_len=doc_len, codes=codes, query_code=codes[7], alpha=0.25
    )
    assert rows[0] == 7 and h[0] == pytest.approx(0.2)
    np.testing.assert_allclose(h, 0.25 * cos / 1.25, rtol=1e-15)
    assert list(cos) == sorted(cos, reverse=True)
    assert (rel == 0).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS[:12]), max_size=12), min_size=1, max_size=30),
    st.lists(st.sampled_from(WORDS[:14]), min_size=1, max_size=5),
    st.integers(1, 8),
    st.integers(0, 2**32 - 1),
)
def test_invariants(doc_words, query_words, k, seed):
    """Segmentation never matters; masked rows never come back; top-k is a prefix of top-(k+1)."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(w) for w in doc_words]
    counts = counts_of(texts)
    n = len(texts)
    rows = np.arange(n, dtype=np.int64)
    whole = [segments.build_segment(counts, rows)]
    cut = int(rng.integers(0, n + 1))
    parts = [
        segments.build_segment(
            lexical.TermCounts(
                counts.offsets[a : b + 1] - counts.offsets[a],
                counts.terms[counts.offsets[a] : counts.offsets[b]],
                counts.tfs[counts.offsets[a] : counts.offsets[b]],
                counts.lengths[a:b],
            ),
            rows[a:b],
        )
        for a, b in ((0, cut), (cut, n))
    ]
    doc_len = counts.lengths.astype(np.int32)
    terms, weights = query_of(" ".join(query_words))
    if terms.size == 0:
        return
    valid = rng.random(n) > 0.3
    kw = {"doc_len": doc_len, "query_weights": weights, "valid": valid}
    a = bm25.topk(whole, terms, k, **kw)
    b = bm25.topk(parts, terms, k, **kw)
    c = bm25.topk(whole, terms, k + 1, **kw)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], c[0][: a[0].size])
    assert valid[a[0]].all()
    assert (a[1] > 0).all() and (a[1] < a[2]).all()
    assert list(a[1]) == sorted(a[1], reverse=True)


def test_agrees_with_bm25s_on_the_same_tokens():
    bm25s = pytest.importorskip("bm25s")
    rng = np.random.default_rng(21)
    texts = [*random_texts(rng, 200, 50), "w1 unique term here", ""]
    tokens = [_tokens(t) for t in texts]
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(tokens, show_progress=False)
    counts = counts_of(texts)
    seg = segments.build_segment(counts, np.arange(len(texts), dtype=np.int64))
    doc_len = counts.lengths.astype(np.int32)
    for q in ("w1 w2 w30", "unique term", "w0 w0 w5"):
        q_tokens = _tokens(q)
        theirs = retriever.get_scores(q_tokens)
        terms, weights = query_of(q)
        ours, _ = bm25.scores([seg], terms, doc_len=doc_len, query_weights=weights)
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-6)


def test_arguments_are_checked_by_name():
    rng = np.random.default_rng(0)
    counts, segs, doc_len = _index(rng, 20)
    terms, _ = query_of("w1 w2")
    with pytest.raises(TypeError, match="doc_len"):
        bm25.topk(segs, terms, 3, doc_len=doc_len.astype(np.int64))
    with pytest.raises(ValueError, match="query_terms must be distinct"):
        bm25.topk(segs, np.repeat(terms, 2), 3, doc_len=doc_len)
    with pytest.raises(ValueError, match="valid"):
        bm25.topk(segs, terms, 3, doc_len=doc_len, valid=np.ones(3, np.uint8))
    with pytest.raises(ValueError, match="k must be >= 1"):
        bm25.topk(segs, terms, 0, doc_len=doc_len)
    with pytest.raises(ValueError, match="b must be <= 1"):
        bm25.topk(segs, terms, 3, doc_len=doc_len, b=1.5)
    with pytest.raises(TypeError, match="segments\\[0\\]"):
        bm25.topk([("not", "a", "segment", "!")], terms, 3, doc_len=doc_len)
    codes = np.ones((20, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="norm <= 1"):
        bm25.hybrid_topk(
            segs, terms, 3, doc_len=doc_len, codes=codes, query_code=codes[0], alpha=0.5
        )
    with pytest.raises(ValueError, match="rows must be strictly ascending"):
        segments.build_segment(counts, np.zeros(20, dtype=np.int64))
    with pytest.raises(ValueError, match="offsets must fall on character boundaries"):
        buf, _ = _batch(["é"])
        lexical.term_counts(buf, np.array([0, 1, 2], np.int64), _WORD_TABLE.get(False), _STOP_TABLE)
