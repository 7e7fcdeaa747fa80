"""sentient_kernels.overlay.topk_scored against the plain-Python reference: random seeded
problems, ties, vetoes, negative weights, the screening path (k small, many rows)."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_kernels.overlay import topk_scored
from tests import naive_overlay


def _problem(seed, m=3000, d=64, ties=False):
    rng = np.random.default_rng(seed)
    codes = rng.standard_normal((m, d))
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    codes = codes.astype(np.float32)
    if ties:
        codes[m // 2 :] = codes[: m - m // 2]  # every row twice
    return {
        "codes": codes,
        "query": rng.standard_normal(d).astype(np.float32),
        "valid": rng.random(m) < 0.9,
        "static": rng.uniform(-0.5, 0.5, m) if not ties else np.zeros(m),
        "last_access": 1.7e9 - rng.uniform(0, 5 * 86400, m),
        "now": 1.7e9,
        "recency_s": 86400.0,
    }


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("w_cos", "w_rec"), [(1.0, 0.3), (2.0, -0.4), (0.5, 0.0), (-1.0, 1.0)])
@pytest.mark.parametrize("k", [1, 10, 200])
def test_scored_topk_equals_the_reference(seed, w_cos, w_rec, k):
    p = _problem(seed)
    rows, scores = topk_scored(k=k, w_cos=w_cos, w_rec=w_rec, **p)
    ref_rows, ref_scores = naive_overlay.topk_scored(k=k, w_cos=w_cos, w_rec=w_rec, **p)
    np.testing.assert_allclose(scores, ref_scores, rtol=0, atol=1e-12)
    assert rows.tolist() == ref_rows.tolist()


def test_ties_go_to_the_lower_row_and_vetoed_rows_never_appear():
    p = _problem(7, ties=True)
    p["last_access"][:] = p["now"]
    rows, _ = topk_scored(k=50, w_cos=1.0, w_rec=0.2, **p)
    ref, _ = naive_overlay.topk_scored(k=50, w_cos=1.0, w_rec=0.2, **p)
    assert rows.tolist() == ref.tolist()
    assert all(p["valid"][r] for r in rows)


def test_the_overlay_changes_the_order_cosine_alone_would_give():
    p = _problem(3)
    p["valid"][:] = True
    by_cos, _ = topk_scored(k=5, w_cos=1.0, w_rec=0.0, **{**p, "static": np.zeros(3000)})
    demoted = np.zeros(3000)
    demoted[by_cos[0]] = -10.0  # a superseded / distrusted trace
    rows, _ = topk_scored(k=5, w_cos=1.0, w_rec=0.0, **{**p, "static": demoted})
    assert by_cos[0] not in rows.tolist() and rows[0] == by_cos[1]


def test_bad_arguments_raise():
    p = _problem(0, m=10)
    with pytest.raises(ValueError):
        topk_scored(k=1, w_cos=float("nan"), w_rec=0.0, **p)
    with pytest.raises(ValueError):
        topk_scored(k=1, w_cos=1.0, w_rec=0.0, **{**p, "query": np.zeros(64, np.float32)})
    bad = {**p, "codes": p["codes"].copy()}
    bad["valid"] = np.ones(10, dtype=bool)
    bad["codes"][7, 3] = np.nan
    with pytest.raises(ValueError, match="row 7"):
        topk_scored(k=3, w_cos=1.0, w_rec=0.0, **bad)
    p["valid"][:] = False
    rows, scores = topk_scored(k=3, w_cos=1.0, w_rec=0.0, **p)
    assert rows.size == 0 and scores.size == 0


@pytest.mark.parametrize("m", [1, 7, 1000, 2048])
def test_one_block_takes_the_serial_scan_with_the_same_answer(m):
    # Up to one block of rows the scan runs without a parallel region (nothing to share).
    p = _problem(11, m=m)
    for k in (1, 10):
        rows, scores = topk_scored(k=k, w_cos=1.0, w_rec=0.3, **p)
        ref_rows, ref_scores = naive_overlay.topk_scored(k=k, w_cos=1.0, w_rec=0.3, **p)
        np.testing.assert_allclose(scores, ref_scores, rtol=0, atol=1e-12)
        assert rows.tolist() == ref_rows.tolist()
