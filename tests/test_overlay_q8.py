"""sentient_kernels.overlay_q8.topk_scored_quantised: the same rows and scores, bit for bit,
as the float32 scored scan (tests/test_overlay.py checks that one against the naive
reference), over random problems, planted ties and near ties, vetoes, negative weights,
several blocks, and k above the valid rows."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_kernels.overlay import topk_scored
from sentient_kernels.overlay_q8 import topk_scored_quantised
from sentient_kernels.quantized import quantise
from tests import naive_overlay


def _problem(seed, m=3000, d=64, ties=False, near=False):
    rng = np.random.default_rng(seed)
    codes = rng.standard_normal((m, d))
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    if ties:
        codes[m // 2 :] = codes[: m - m // 2]  # every row twice
    if near:
        # Rows a hair from each other: the int8 rows cannot tell them apart.
        codes[1::2] = codes[::2][: m // 2] + rng.standard_normal((m // 2, d)) * 1e-7
        codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes = codes.astype(np.float32)
    return {
        "codes": codes,
        "query": rng.standard_normal(d).astype(np.float32),
        "valid": (rng.random(m) < 0.9).astype(np.uint8),
        "static": rng.uniform(-0.5, 0.5, m) if not (ties or near) else np.zeros(m),
        "last_access": 1.7e9 - rng.uniform(0, 5 * 86400, m),
        "now": 1.7e9,
        "recency_s": 86400.0,
    }


def _both(p, **kw):
    got = topk_scored_quantised(quantise(p["codes"]), **p, **kw)
    want = topk_scored(**p, **kw)
    return got, want


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    ("w_cos", "w_rec"), [(1.0, 0.3), (2.0, -0.4), (0.5, 0.0), (-1.0, 1.0), (0.0, 0.2)]
)
@pytest.mark.parametrize("k", [1, 10, 200])
def test_equals_the_float32_scan_bit_for_bit(seed, w_cos, w_rec, k):
    (rows, scores), (want_rows, want_scores) = _both(_problem(seed), k=k, w_cos=w_cos, w_rec=w_rec)
    assert rows.tolist() == want_rows.tolist()
    assert np.array_equal(scores, want_scores)


@pytest.mark.parametrize("kind", ["ties", "near"])
@pytest.mark.parametrize("seed", range(3))
def test_planted_ties_and_near_ties(kind, seed):
    p = _problem(seed, ties=kind == "ties", near=kind == "near")
    p["last_access"][:] = p["now"]  # equal recency: the ties stay ties
    for k in (1, 7, 64):
        (rows, scores), (want_rows, want_scores) = _both(p, k=k, w_cos=1.0, w_rec=0.2)
        assert rows.tolist() == want_rows.tolist()
        assert np.array_equal(scores, want_scores)
        ref_rows, _ = naive_overlay.topk_scored(k=k, w_cos=1.0, w_rec=0.2, **p)
        assert rows.tolist() == ref_rows.tolist()


def test_many_blocks_a_few_valid_rows_and_k_above_them():
    p = _problem(11, m=40_000, d=32)
    for k in (5, 300):
        (rows, scores), (want_rows, want_scores) = _both(p, k=k, w_cos=1.0, w_rec=0.05)
        assert rows.tolist() == want_rows.tolist() and np.array_equal(scores, want_scores)
    p["valid"][:] = 0
    p["valid"][[3, 19_999, 39_999]] = 1
    (rows, scores), (want_rows, want_scores) = _both(p, k=10, w_cos=1.0, w_rec=0.05)
    assert rows.tolist() == want_rows.tolist()
    assert sorted(rows.tolist()) == [3, 19_999, 39_999]
    assert np.array_equal(scores, want_scores)
    p["valid"][:] = 0
    rows, scores = topk_scored_quantised(quantise(p["codes"]), k=3, w_cos=1.0, w_rec=0.0, **p)
    assert rows.size == 0 and scores.size == 0


def test_only_a_few_float32_rows_are_read():
    # The float32 rows outside the candidates are never read: NaN there changes nothing,
    # while the float32 scan must read (and reject) them.
    p = _problem(5, m=20_000, d=64)
    q8 = quantise(p["codes"])
    want_rows, want_scores = topk_scored(k=10, w_cos=1.0, w_rec=0.1, **p)
    poisoned = p["codes"].copy()
    keep = set(want_rows.tolist())
    far = [i for i in range(0, 20_000, 97) if i not in keep]
    poisoned[far] = np.nan
    rows, scores = topk_scored_quantised(q8, **{**p, "codes": poisoned}, k=10, w_cos=1.0, w_rec=0.1)
    assert rows.tolist() == want_rows.tolist() and np.array_equal(scores, want_scores)
    with pytest.raises(ValueError, match="non-finite"):
        topk_scored(**{**p, "codes": poisoned}, k=10, w_cos=1.0, w_rec=0.1)


def test_bad_input_is_refused_with_a_clear_error():
    p = _problem(2, m=50, d=8)
    q8 = quantise(p["codes"])
    with pytest.raises(ValueError, match="all zeros"):
        topk_scored_quantised(q8, **{**p, "query": np.zeros(8, np.float32)}, k=3, w_cos=1, w_rec=0)
    with pytest.raises(ValueError, match="w_rec"):
        topk_scored_quantised(q8, **p, k=3, w_cos=1.0, w_rec=float("nan"))
    with pytest.raises(ValueError, match="recency_s"):
        topk_scored_quantised(q8, **{**p, "recency_s": 0.0}, k=3, w_cos=1.0, w_rec=0.0)
    with pytest.raises(TypeError, match="quantise"):
        topk_scored_quantised(p["codes"], **p, k=3, w_cos=1.0, w_rec=0.0)


def test_gather_reads_the_candidates_rows_and_nothing_else():
    # With gather, the float32 rows come only from it: full_codes full of NaN changes nothing
    # (both kernels), and gather is asked for a few ascending rows.
    from sentient_kernels.quantized import exact_topk_quantised

    p = _problem(8, m=20_000, d=64)
    q8 = quantise(p["codes"])
    asked = []

    def gather(rows):
        assert np.all(np.diff(rows) > 0)
        asked.append(rows.size)
        return p["codes"][rows]

    blank = np.full_like(p["codes"], np.nan)
    want = topk_scored(**p, k=10, w_cos=1.0, w_rec=0.1)
    got = topk_scored_quantised(
        q8, **{**p, "codes": blank}, k=10, w_cos=1.0, w_rec=0.1, gather=gather
    )
    assert got[0].tolist() == want[0].tolist() and np.array_equal(got[1], want[1])
    from sentient_kernels.holographic import topk_cosine

    want = topk_cosine(p["codes"], p["query"], 10, normalized=True, valid=p["valid"])
    got = exact_topk_quantised(
        q8, blank, p["query"], 10, normalized=True, valid=p["valid"], gather=gather
    )
    assert got[0].tolist() == want[0].tolist() and np.array_equal(got[1], want[1])
    assert len(asked) == 2 and all(10 <= n < 2_000 for n in asked)
    with pytest.raises(ValueError, match="gather"):
        exact_topk_quantised(q8, blank, p["query"], 10, gather=lambda rows: p["codes"][rows][:, :3])
