"""sentient_kernels.scorer: bounded SGD against the per-sample Python loop, vetoes, bounds."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_kernels import scorer
from tests.naive import scorer as naive


def _problem(seed, b=300, f=7, age_max=60.0):
    rng = np.random.default_rng(seed)
    return {
        "delta": rng.uniform(-0.2, 0.2, f),
        "baseline": rng.standard_normal(f),
        "features": rng.random((b, f)),
        "labels": (rng.random(b) < 0.4).astype(np.float64),
        "age_days": rng.random(b) * age_max,
        "learnable": rng.random(f) < 0.7,
        "delta_lo": np.full(f, -0.5),
        "delta_hi": np.full(f, 0.5),
    }


def _run(p, **kw):
    delta = p["delta"].copy()
    loss = scorer.sgd_batch(
        delta,
        p["baseline"],
        p["features"],
        p["labels"],
        p["age_days"],
        p["learnable"],
        p["delta_lo"],
        p["delta_hi"],
        **kw,
    )
    return delta, loss


def _naive(p, **kw):
    return naive.sgd_batch(
        p["delta"],
        p["baseline"],
        p["features"],
        p["labels"],
        p["age_days"],
        p["learnable"],
        p["delta_lo"],
        p["delta_hi"],
        **kw,
    )


# ------------------------------------------------------------------ SGD vs naive


@pytest.mark.parametrize("seed", range(4))
def test_sgd_matches_naive_loop(seed):
    p = _problem(seed)
    delta, loss = _run(p)
    want_delta, want_loss = _naive(p)
    np.testing.assert_allclose(delta, want_delta, rtol=0, atol=1e-12)
    assert loss == pytest.approx(want_loss, abs=1e-12)


def test_sgd_matches_naive_with_clipping_and_bounds_active():
    # Large features, big lr and tight bounds: both gradient clipping and the
    # delta bounds bind on most steps.
    p = _problem(7, b=400, f=5)
    p["features"] = np.random.default_rng(7).standard_normal((400, 5)) * 40.0
    p["delta_lo"] = np.array([-0.1, -0.5, -0.05, -1.0, 0.0])
    p["delta_hi"] = np.array([0.1, 0.3, 0.05, 1.0, 0.2])
    p["delta"] = np.clip(p["delta"], p["delta_lo"], p["delta_hi"])
    kw = {"lr": 0.3, "grad_clip": 0.25, "half_life_days": 5.0}
    delta, loss = _run(p, **kw)
    want_delta, want_loss = _naive(p, **kw)
    np.testing.assert_allclose(delta, want_delta, rtol=0, atol=1e-12)
    assert loss == pytest.approx(want_loss, abs=1e-12)


def test_loss_is_computed_with_pre_update_predictions():
    p = _problem(3, b=50)
    p["learnable"][:] = True
    _, loss = _run(p)
    before = naive.logistic_loss(
        p["features"], p["labels"], p["baseline"], p["delta"], p["age_days"]
    )
    # Single sample: the returned loss is exactly the loss before the update.
    one = {key: (v[:1] if key in ("features", "labels", "age_days") else v) for key, v in p.items()}
    _, loss_one = _run(one)
    assert loss_one == pytest.approx(
        naive.logistic_loss(
            one["features"], one["labels"], one["baseline"], one["delta"], one["age_days"]
        ),
        abs=1e-15,
    )
    assert loss != pytest.approx(before, abs=1e-9)  # later samples saw updated delta


def test_sgd_is_deterministic():
    p = _problem(5, b=2000, f=20)
    a, la = _run(p)
    b, lb = _run(p)
    np.testing.assert_array_equal(a, b)
    assert la == lb


def test_non_learnable_factors_are_bit_identical():
    p = _problem(6, f=6)
    p["learnable"] = np.array([1, 0, 1, 0, 0, 1], dtype=np.uint8)
    p["delta"][1] = -0.0
    p["delta"][3] = 0.1234567890123
    before = p["delta"].copy()
    delta, _ = _run(p, lr=5.0)
    frozen = p["learnable"] == 0
    assert delta[frozen].tobytes() == before[frozen].tobytes()
    assert not np.array_equal(delta[~frozen], before[~frozen])


@settings(deadline=None, max_examples=150)
@given(
    seed=st.integers(0, 2**32 - 1),
    b=st.integers(1, 40),
    f=st.integers(1, 8),
    scale=st.sampled_from([1e-3, 1.0, 1e3, 1e150, 1e300, 1e307]),
    lr=st.sampled_from([1e-4, 0.01, 10.0, 1e6]),
    grad_clip=st.sampled_from([1e-3, 1.0, 1e9]),
)
def test_bounds_hold_and_frozen_entries_never_move(seed, b, f, scale, lr, grad_clip):
    rng = np.random.default_rng(seed)
    lo = -rng.uniform(0.0, 1.0, f)
    hi = rng.uniform(0.0, 1.0, f)
    delta = rng.uniform(lo, hi)
    learnable = rng.random(f) < 0.5
    before = delta.copy()
    if scale < 1e300:
        features = rng.standard_normal((b, f)) * scale
    else:
        # Positive weights and same-sign rows: z may overflow to ±inf (legal),
        # never to inf − inf = NaN (rejected, tested separately).
        features = rng.standard_normal(b)[:, None] * rng.random((b, f)) * scale
    labels = (rng.random(b) < 0.5).astype(np.float64)
    ages = rng.random(b) * 100
    loss = scorer.sgd_batch(
        delta,
        rng.uniform(1.0, 2.0, f),
        features,
        labels,
        ages,
        learnable,
        lo,
        hi,
        lr=lr,
        grad_clip=grad_clip,
    )
    assert np.all(lo <= delta) and np.all(delta <= hi)
    assert delta[~learnable].tobytes() == before[~learnable].tobytes()
    assert loss >= 0.0  # may be inf when an overflowed logit has the wrong sign


def test_logit_overflowing_to_nan_is_rejected():
    features = np.array([[0.1, 0.2], [1e308, -1e308]])
    delta = np.zeros(2)
    with pytest.raises(ValueError, match=r"features row 1 overflows"):
        scorer.sgd_batch(
            delta,
            np.array([10.0, 10.0]),
            features,
            np.ones(2),
            np.zeros(2),
            np.ones(2, np.bool_),
            *scorer.default_bounds(2),
        )
    assert np.array_equal(delta, np.zeros(2))


def test_age_weighting_halves_the_step_after_one_half_life():
    f = 4
    baseline = np.array([0.2, -0.1, 0.05, 0.3])
    features = np.array([[0.5, 0.25, 1.0, 0.75]])
    labels = np.array([1.0])
    lo, hi = scorer.default_bounds(f)
    learnable = np.ones(f, dtype=np.bool_)
    steps = {}
    for age in (0.0, 21.0, 42.0):
        delta = np.zeros(f)
        scorer.sgd_batch(delta, baseline, features, labels, np.array([age]), learnable, lo, hi)
        steps[age] = delta
    p = 1.0 / (1.0 + math.exp(-float(baseline @ features[0])))
    for age, omega in ((0.0, 1.0), (21.0, 0.5), (42.0, 0.25)):
        expected = -0.01 * omega * (p - 1.0) * features[0]
        np.testing.assert_allclose(steps[age], expected, rtol=1e-14, atol=0)
    np.testing.assert_allclose(steps[21.0], 0.5 * steps[0.0], rtol=1e-14)


def test_learns_the_sign_of_generating_weights():
    # Separable data pushes delta towards the bounds; 300 samples per epoch keep
    # it inside them for a few epochs so every epoch must lower the loss.
    rng = np.random.default_rng(21)
    f, b = 6, 300
    true_w = np.array([2.0, -2.0, 1.5, -1.5, 3.0, -3.0])
    features = rng.standard_normal((b, f))
    labels = (features @ true_w > 0).astype(np.float64)
    ages = np.zeros(b)
    baseline = np.zeros(f)
    delta = np.zeros(f)
    lo, hi = scorer.default_bounds(f)
    learnable = np.ones(f, dtype=np.bool_)
    losses = [scorer.logistic_loss(features, labels, baseline, delta)]
    for _ in range(4):
        scorer.sgd_batch(delta, baseline, features, labels, ages, learnable, lo, hi)
        losses.append(scorer.logistic_loss(features, labels, baseline, delta))
    assert all(b < a for a, b in itertools.pairwise(losses))
    assert losses[-1] < 0.6 * losses[0]
    np.testing.assert_array_equal(np.sign(delta), np.sign(true_w))
    assert np.all(np.abs(delta) <= 0.5)


# ------------------------------------------------------------------ score / rank


def test_score_and_rank_match_naive():
    rng = np.random.default_rng(30)
    features = rng.random((200, 9))
    baseline = rng.standard_normal(9)
    delta = rng.uniform(-0.5, 0.5, 9)
    veto = rng.random(200) < 0.2
    got = scorer.score(features, baseline, delta, veto)
    want = naive.score(features, baseline, delta, veto)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert np.all(got[veto] == -np.inf)
    for k in (1, 5, 160, 500):
        np.testing.assert_array_equal(
            scorer.rank(features, baseline, delta, veto, k),
            naive.rank(features, baseline, delta, veto, k),
        )


def test_vetoed_candidate_with_highest_score_is_never_ranked():
    rng = np.random.default_rng(31)
    features = rng.random((50, 4))
    features[17] = 1e6  # by far the highest raw score
    baseline = np.ones(4)
    delta = np.zeros(4)
    veto = np.zeros(50, dtype=np.uint8)
    assert scorer.rank(features, baseline, delta, veto, 1)[0] == 17
    veto[17] = 1
    for k in (1, 10, 50):
        assert 17 not in scorer.rank(features, baseline, delta, veto, k)
    assert scorer.rank(features, baseline, delta, veto, 50).shape == (49,)


@settings(deadline=None, max_examples=100)
@given(seed=st.integers(0, 2**32 - 1), c=st.integers(1, 30), k=st.integers(1, 35))
def test_rank_never_returns_vetoed_and_breaks_ties_by_index(seed, c, k):
    rng = np.random.default_rng(seed)
    features = rng.integers(0, 3, (c, 3)).astype(np.float64)  # many exact ties
    baseline = np.array([1.0, 0.5, 0.25])
    delta = np.zeros(3)
    veto = rng.random(c) < 0.3
    got = scorer.rank(features, baseline, delta, veto, k)
    assert not veto[got].any()
    np.testing.assert_array_equal(got, naive.rank(features, baseline, delta, veto, k))


def test_all_vetoed_gives_empty_ranking():
    out = scorer.rank(np.ones((3, 2)), np.ones(2), np.zeros(2), np.ones(3, np.bool_), 2)
    assert out.shape == (0,)
    assert out.dtype == np.int64


def test_logistic_loss_matches_naive_and_default_ages():
    p = _problem(40)
    got = scorer.logistic_loss(p["features"], p["labels"], p["baseline"], p["delta"], p["age_days"])
    want = naive.logistic_loss(p["features"], p["labels"], p["baseline"], p["delta"], p["age_days"])
    assert got == pytest.approx(want, abs=1e-12)
    zero_age = naive.logistic_loss(
        p["features"], p["labels"], p["baseline"], p["delta"], np.zeros(300)
    )
    assert scorer.logistic_loss(
        p["features"], p["labels"], p["baseline"], p["delta"]
    ) == pytest.approx(zero_age, abs=1e-12)


def test_extreme_logits_give_finite_loss():
    features = np.array([[1e300], [-1e300], [1e300], [-1e300]])
    labels = np.array([1.0, 0.0, 0.0, 1.0])
    loss = scorer.logistic_loss(features, labels, np.ones(1), np.zeros(1))
    assert loss == pytest.approx(0.5e300, rel=1e-12)  # two perfect, two ~1e300 each


def test_default_bounds():
    lo, hi = scorer.default_bounds(3)
    np.testing.assert_array_equal(lo, [-0.5, -0.5, -0.5])
    np.testing.assert_array_equal(hi, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="n_factors"):
        scorer.default_bounds(0)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("key", "value", "exc", "fragment"),
    [
        ("labels", np.array([0.0, 0.5, 1.0]), ValueError, "labels"),
        ("labels", np.array([0.0, np.nan, 1.0]), ValueError, "labels"),
        ("labels", np.array([0, 1, 1]), TypeError, "labels"),
        ("age_days", np.array([1.0, -0.5, 2.0]), ValueError, "age_days"),
        ("age_days", np.array([1.0, np.inf, 2.0]), ValueError, "age_days"),
        ("age_days", np.array([1.0, 2.0]), ValueError, "age_days"),
        ("features", np.ones((3, 2)), ValueError, "baseline"),  # F is taken from features
        ("features", np.ones((3, 4), np.float32), TypeError, "features"),
        (
            "features",
            np.array([[1.0] * 4, [1.0, np.nan, 1, 1], [1.0] * 4]),
            ValueError,
            "features.*row 1",
        ),
        (
            "features",
            np.array([[1.0] * 4, [1.0] * 4, [np.inf, 0, 0, 0]]),
            ValueError,
            "features.*row 2",
        ),
        ("features", np.ones((0, 4)), ValueError, "features"),
        ("features", np.ones((3, 8))[:, ::2], ValueError, "features"),
        ("delta_lo", np.array([0.1, -0.5, -0.5, -0.5]), ValueError, "delta"),
        ("delta_lo", np.array([0.6, -0.5, -0.5, -0.5]), ValueError, "delta_lo"),
        ("delta_hi", np.ones(3), ValueError, "delta_hi"),
        ("learnable", np.ones(4, np.int32), TypeError, "learnable"),
        ("baseline", np.ones(5), ValueError, "baseline"),
    ],
)
def test_sgd_rejects_bad_inputs_and_leaves_delta_untouched(key, value, exc, fragment):
    args = {
        "delta": np.zeros(4),
        "baseline": np.ones(4),
        "features": np.ones((3, 4)),
        "labels": np.array([0.0, 1.0, 1.0]),
        "age_days": np.zeros(3),
        "learnable": np.ones(4, np.bool_),
        "delta_lo": np.full(4, -0.5),
        "delta_hi": np.full(4, 0.5),
    }
    args[key] = value
    with pytest.raises(exc, match=fragment):
        scorer.sgd_batch(**args)
    assert np.array_equal(args["delta"], np.zeros(4))


@pytest.mark.parametrize("name", ["lr", "grad_clip", "half_life_days"])
def test_sgd_rejects_non_positive_hyperparameters(name):
    f = 2
    lo, hi = scorer.default_bounds(f)
    with pytest.raises(ValueError, match=name):
        scorer.sgd_batch(
            np.zeros(f),
            np.ones(f),
            np.ones((1, f)),
            np.ones(1),
            np.zeros(1),
            np.ones(f, np.bool_),
            lo,
            hi,
            **{name: 0.0},
        )


def test_score_and_rank_validate():
    with pytest.raises(ValueError, match="features"):
        scorer.score(np.array([[np.nan]]), np.ones(1), np.zeros(1), np.zeros(1, np.bool_))
    with pytest.raises(ValueError, match="veto"):
        scorer.score(np.ones((2, 1)), np.ones(1), np.zeros(1), np.zeros(3, np.bool_))
    with pytest.raises(TypeError, match="veto"):
        scorer.score(np.ones((2, 1)), np.ones(1), np.zeros(1), np.zeros(2))
    with pytest.raises(ValueError, match="delta"):
        scorer.score(np.ones((2, 2)), np.ones(2), np.zeros(3), np.zeros(2, np.bool_))
    with pytest.raises(ValueError, match="k"):
        scorer.rank(np.ones((2, 1)), np.ones(1), np.zeros(1), np.zeros(2, np.bool_), 0)
    with pytest.raises(ValueError, match="labels"):
        scorer.logistic_loss(np.ones((2, 1)), np.array([0.0, 2.0]), np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="age_days"):
        scorer.logistic_loss(
            np.ones((2, 1)), np.array([0.0, 1.0]), np.ones(1), np.zeros(1), np.array([0.0, -1.0])
        )


def test_warmup_runs():
    scorer._warmup()
