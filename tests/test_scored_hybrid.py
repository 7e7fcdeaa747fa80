"""sentient_kernels.scored_hybrid against the naive reference (tests/naive_overlay.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_kernels import bm25
from sentient_kernels.scored_hybrid import scored_hybrid_topk
from tests import naive_overlay
from tests.test_bm25 import _index, query_of


def _case(seed, n=600, d=24, masked=True):
    rng = np.random.default_rng(seed)
    _, segs, doc_len = _index(rng, n, 3)
    codes = rng.standard_normal((n, d)).astype(np.float32)
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes[7] = 0.0  # a row without a code: cosine 0
    valid = rng.random(n) > 0.2 if masked else np.ones(n, dtype=bool)
    qcode = rng.standard_normal(d).astype(np.float32)
    last_access = 1.7e9 - rng.uniform(0, 5 * 86400, n)
    last_access[3] = 1.7e9 + 100.0  # accessed "after now": age clamps to 0
    return rng, segs, doc_len, codes, valid, qcode, last_access


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(
    ("w_rel", "w_rec", "static_scale"),
    [
        (1.0, 0.2, 0.05),  # the scorer's baseline: relevance dominates
        (1.0, 0.2, 2.0),  # static factors dominate: rows sharing no term win
        (0.3, -0.5, 0.5),  # negative recency weight
        (-0.4, 0.1, 0.2),  # a relevance weight SGD drove below zero
        (0.0, 0.0, 1.0),  # static alone
    ],
)
def test_scored_hybrid_matches_the_reference(masked, w_rel, w_rec, static_scale):
    rng, segs, doc_len, codes, valid, qcode, last_access = _case(
        int(abs(w_rel) * 10 + static_scale * 7 + masked), masked=masked
    )
    n = codes.shape[0]
    static = rng.uniform(-static_scale, static_scale, n)
    terms, weights = query_of("w3 w8 w8 w40")
    score, idf = bm25.scores(segs, terms, doc_len=doc_len, query_weights=weights, valid=valid)
    ceil = float(np.dot(weights, idf))
    for alpha in (0.1, 0.5, 3.0):
        for k in (1, 5, 40, n + 3):
            rows, s, rel, _cos = scored_hybrid_topk(
                segs,
                terms,
                k,
                doc_len=doc_len,
                codes=codes,
                query_code=qcode,
                alpha=alpha,
                static=static,
                last_access=last_access,
                w_rel=w_rel,
                w_rec=w_rec,
                now=1.7e9,
                query_weights=weights,
                valid=valid,
            )
            want_rows, want_s = naive_overlay.scored_hybrid(
                score,
                ceil,
                codes,
                qcode,
                alpha,
                k,
                valid=valid,
                static=static,
                last_access=last_access,
                w_rel=w_rel,
                w_rec=w_rec,
                now=1.7e9,
                recency_s=86400.0,
            )
            np.testing.assert_array_equal(rows, want_rows)
            np.testing.assert_allclose(s, want_s, rtol=0, atol=1e-12)
            np.testing.assert_allclose(rel, score[rows] / ceil, rtol=1e-15)


def test_with_zero_overlay_it_is_the_hybrid():
    _rng, segs, doc_len, codes, valid, qcode, last_access = _case(5)
    terms, weights = query_of("w1 w2 w9")
    n = codes.shape[0]
    for k in (1, 10, n):
        got = scored_hybrid_topk(
            segs,
            terms,
            k,
            doc_len=doc_len,
            codes=codes,
            query_code=qcode,
            alpha=0.4,
            static=np.zeros(n),
            last_access=last_access,
            w_rel=1.0,
            w_rec=0.0,
            now=1.7e9,
            query_weights=weights,
            valid=valid,
        )
        want = bm25.hybrid_topk(
            segs,
            terms,
            k,
            doc_len=doc_len,
            codes=codes,
            query_code=qcode,
            alpha=0.4,
            query_weights=weights,
            valid=valid,
        )
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_strong_static_factor_lifts_a_row_sharing_no_term():
    _rng, segs, doc_len, codes, _valid, qcode, last_access = _case(9, masked=False)
    terms, weights = query_of("w3 w8")
    score, _ = bm25.scores(segs, terms, doc_len=doc_len, query_weights=weights)
    outsider = int(np.flatnonzero(score == 0)[0])
    static = np.zeros(codes.shape[0])
    static[outsider] = 5.0
    rows, *_ = scored_hybrid_topk(
        segs,
        terms,
        3,
        doc_len=doc_len,
        codes=codes,
        query_code=qcode,
        alpha=0.2,
        static=static,
        last_access=last_access,
        w_rel=1.0,
        w_rec=0.2,
        now=1.7e9,
        query_weights=weights,
    )
    assert rows[0] == outsider


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("static", np.full(600, np.nan), "static"),
        ("last_access", np.zeros(5), "last_access"),
        ("w_rel", float("inf"), "w_rel"),
        ("recency_s", 0.0, "recency_s"),
        ("query_code", np.zeros(24, dtype=np.float32), "query_code"),
    ],
)
def test_bad_inputs_are_refused(field, value, match):
    _rng, segs, doc_len, codes, _valid, qcode, last_access = _case(2)
    kw = dict(
        doc_len=doc_len,
        codes=codes,
        query_code=qcode,
        alpha=0.5,
        static=np.zeros(600),
        last_access=last_access,
        w_rel=1.0,
        w_rec=0.2,
        now=1.7e9,
        recency_s=86400.0,
    )
    kw[field] = value
    terms, _ = query_of("w3")
    with pytest.raises(ValueError, match=match):
        scored_hybrid_topk(segs, terms, 3, **kw)
