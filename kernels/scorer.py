"""Bounded learned recall scorer: score, rank, and SGD on judged outcomes.

A candidate's ranking score is ``Σ_k w_k f_k`` over F factors (relevance, SMF
similarity, recency, strength, ...), with ``w = baseline + delta``. Only the
offset ``delta`` is learned, by per-sample SGD on the logistic loss of judged
outcomes; each ``delta_k`` stays inside ``[delta_lo_k, delta_hi_k]`` and factors
marked non-learnable never change. A veto removes a candidate whatever its score.

The kernels use strict IEEE arithmetic (``fastmath=False``) and a fixed
summation order, so training is deterministic and does not depend on the vector
width the compiler picks; it agrees with the naive per-sample Python loop in
``tests/naive_scorer.py`` to ~1e-16.
"""

from __future__ import annotations

import math

import numpy as np

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_HALF_LIFE_DAYS",
    "DEFAULT_LR",
    "default_bounds",
    "logistic_loss",
    "rank",
    "score",
    "sgd_batch",
]

DEFAULT_BOUND = 0.5
DEFAULT_LR = 0.01
DEFAULT_HALF_LIFE_DAYS = 21.0

# Status codes returned by the SGD kernel (0 = ok); the wrapper turns them into errors.
_BAD_FEATURES = 1
_BAD_LABEL = 2
_BAD_AGE = 3
_BAD_LOGIT = 4


# --------------------------------------------------------------------- kernels


@jit(fastmath=False)
def _sigmoid_and_loss(z, y):
    """Stable ``p = σ(z)`` and logistic loss ``ℓ = softplus(z) − y z`` from one exp.

    With ``e = exp(−|z|)``: ``p = 1/(1+e)`` (z ≥ 0) or ``e/(1+e)`` (z < 0), and
    ``ℓ = max(t, 0) + log1p(e)`` with ``t = z`` (y = 0) or ``t = −z`` (y = 1),
    which never overflows and never forms inf − inf.
    """
    e = math.exp(-abs(z))
    # Selects on operands, not branches on results: the signs of z and of the
    # label are random from sample to sample, so branches would mispredict.
    p = (1.0 if z >= 0.0 else e) / (1.0 + e)
    t = -z if y == 1.0 else z
    return p, (t if t > 0.0 else 0.0) + math.log1p(e)


@jit(fastmath=False)
def _logit(baseline, d, features, b):
    """``z = Σ_k (baseline_k + d_k) f_bk`` as four interleaved partial sums.

    A fixed order (so results never depend on the vector width the compiler
    picks) with a 4× shorter dependency chain than one running sum: the SGD is
    sequential, so this chain is on every sample's critical path.
    """
    f = baseline.shape[0]
    f4 = f - f % 4
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for k in range(0, f4, 4):
        s0 += (baseline[k] + d[k]) * features[b, k]
        s1 += (baseline[k + 1] + d[k + 1]) * features[b, k + 1]
        s2 += (baseline[k + 2] + d[k + 2]) * features[b, k + 2]
        s3 += (baseline[k + 3] + d[k + 3]) * features[b, k + 3]
    for k in range(f4, f):
        s0 += (baseline[k] + d[k]) * features[b, k]
    return (s0 + s1) + (s2 + s3)


@jit(fastmath=False)
def _score(features, baseline, delta, veto, out):
    for c in range(features.shape[0]):
        out[c] = -np.inf if veto[c] != 0 else _logit(baseline, delta, features, c)


@jit(fastmath=False)
def _rank(scores, k, out):
    """Top-k of ``scores`` (> -inf only), best first, ties by lower index; returns count."""
    order = np.argsort(-scores, kind="mergesort")  # stable: equal scores keep index order
    count = 0
    for t in range(order.shape[0]):
        if count == k:
            break
        c = order[t]
        if scores[c] == -np.inf:
            break
        out[count] = c
        count += 1
    return count


@jit(fastmath=False)
def _sgd(
    delta, baseline, features, labels, age_days, learnable, lo, hi, lr, grad_clip, half_life, bad
):
    """Sequential SGD; ``delta`` is only written if every sample is valid.

    Returns (status, mean weighted loss); on status != 0, ``bad[0]`` is the sample.
    Validation happens here, during the one pass, instead of separate numpy
    passes over the batch.
    """
    b_count, f = features.shape
    d = delta.copy()
    total = 0.0
    for b in range(b_count):
        y = labels[b]
        if y != 0.0 and y != 1.0:
            bad[0] = b
            return _BAD_LABEL, 0.0
        age = age_days[b]
        if not (age >= 0.0 and age < np.inf):
            bad[0] = b
            return _BAD_AGE, 0.0
        z = _logit(baseline, d, features, b)
        if not math.isfinite(z):
            # NaN/inf features always make z non-finite. Finite features can
            # also overflow it: ±inf is legal (the sigmoid saturates), but
            # partial sums of opposite infinite signs give NaN, which has no
            # meaningful gradient.
            for k in range(f):
                if not math.isfinite(features[b, k]):
                    bad[0] = b
                    return _BAD_FEATURES, 0.0
            if z != z:
                bad[0] = b
                return _BAD_LOGIT, 0.0
        omega = np.exp2(-(age / half_life))  # = 0.5^(age/half_life), cheaper than pow
        p, loss = _sigmoid_and_loss(z, y)
        total += omega * loss
        r = omega * (p - y)
        for k in range(f):
            g = min(max(r * features[b, k], -grad_clip), grad_clip)
            stepped = min(max(d[k] - lr * g, lo[k]), hi[k])
            # A select, not a branch: the loop stays branch-free, and a
            # non-learnable entry keeps its exact bits.
            d[k] = stepped if learnable[k] != 0 else d[k]
    for k in range(f):
        delta[k] = d[k]
    return 0, total / b_count


@jit(fastmath=False)
def _loss(features, labels, baseline, delta, age_days, half_life):
    total = 0.0
    for b in range(features.shape[0]):
        z = _logit(baseline, delta, features, b)
        omega = np.exp2(-(age_days[b] / half_life))
        total += omega * _sigmoid_and_loss(z, labels[b])[1]
    return total / features.shape[0]


# --------------------------------------------------------------------- wrappers


def _check_mask(name: str, x: object, n: int) -> np.ndarray:
    """Accept bool or uint8 (no copy: bool is viewed as uint8)."""
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        return check_array(name, x, dtype=np.bool_, shape=(n,)).view(np.uint8)
    return check_array(name, x, dtype=np.uint8, shape=(n,))


def _check_weights(features, baseline, delta, *, finite_features=True):
    features = check_array("features", features, dtype=np.float64, ndim=2, finite=finite_features)
    f = features.shape[1]
    baseline = check_array("baseline", baseline, dtype=np.float64, shape=(f,))
    delta = check_array("delta", delta, dtype=np.float64, shape=(f,))
    return features, baseline, delta


def _check_labels(labels: object, n: int) -> np.ndarray:
    labels = check_array("labels", labels, dtype=np.float64, shape=(n,))
    if not ((labels == 0.0) | (labels == 1.0)).all():
        raise ValueError("labels must be 0.0 or 1.0")
    return labels


def _check_ages(age_days: object, n: int) -> np.ndarray:
    age_days = check_array("age_days", age_days, dtype=np.float64, shape=(n,))
    if (age_days < 0.0).any():
        raise ValueError("age_days must be >= 0")
    return age_days


def default_bounds(n_factors: int, bound: float = DEFAULT_BOUND) -> tuple[np.ndarray, np.ndarray]:
    """Bounds ``(delta_lo, delta_hi) = (-bound, +bound)`` for every factor.

    Parameters
    ----------
    n_factors : int
        F, >= 1.
    bound : float
        Half-width, > 0 (default 0.5).

    Returns
    -------
    delta_lo, delta_hi : (F,) float64
    """
    n_factors = check_int("n_factors", n_factors, lo=1)
    bound = check_scalar("bound", bound, lo=0.0, lo_open=True)
    return np.full(n_factors, -bound), np.full(n_factors, bound)


def score(
    features: np.ndarray, baseline: np.ndarray, delta: np.ndarray, veto: np.ndarray
) -> np.ndarray:
    """Ranking score ``Σ_k (baseline_k + delta_k) f_ck`` of every candidate.

    Parameters
    ----------
    features : (C, F) float64
    baseline, delta : (F,) float64
    veto : (C,) bool or uint8
        Nonzero = removed (safety veto, invalid, excluded status).

    Returns
    -------
    (C,) float64
        Scores; ``-inf`` for vetoed candidates.
    """
    features, baseline, delta = _check_weights(features, baseline, delta)
    veto = _check_mask("veto", veto, features.shape[0])
    out = np.empty(features.shape[0])
    _score(features, baseline, delta, veto, out)
    return out


def rank(
    features: np.ndarray,
    baseline: np.ndarray,
    delta: np.ndarray,
    veto: np.ndarray,
    k: int,
) -> np.ndarray:
    """Indices of the top-k non-vetoed candidates, best first (ties: lower index).

    Parameters
    ----------
    features, baseline, delta, veto
        As in :func:`score`.
    k : int
        >= 1.

    Returns
    -------
    (k',) int64
        ``k' = min(k, number of non-vetoed candidates)``. A vetoed candidate is
        never returned, whatever its raw score.
    """
    scores = score(features, baseline, delta, veto)
    k = check_int("k", k, lo=1)
    out = np.empty(min(k, scores.shape[0]), dtype=np.int64)
    count = _rank(scores, k, out)
    return out[:count]


def sgd_batch(
    delta: np.ndarray,
    baseline: np.ndarray,
    features: np.ndarray,
    labels: np.ndarray,
    age_days: np.ndarray,
    learnable: np.ndarray,
    delta_lo: np.ndarray,
    delta_hi: np.ndarray,
    lr: float = DEFAULT_LR,
    grad_clip: float = 1.0,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
) -> float:
    """Train ``delta`` in place by sequential per-sample SGD on the logistic loss.

    For each sample in the given order, with the current ``delta``:
    ``z = Σ (baseline + delta)_k f_k``, ``p = σ(z)``,
    ``ω = 0.5^(age / half_life_days)``, ``g_k = clip(ω (p − y) f_k, ±grad_clip)``,
    and for learnable k only ``delta_k ← clip(delta_k − lr g_k, lo_k, hi_k)``.
    Deterministic; one kernel call for the whole batch.

    Parameters
    ----------
    delta : (F,) float64
        Learned offsets, updated in place; must start within the bounds (after
        changing bounds use ``np.clip(delta, lo, hi, out=delta)``). Left
        untouched if any sample is invalid.
    baseline : (F,) float64
    features : (B, F) float64
        B >= 1. NaN/inf, and rows so large that the logit becomes inf − inf,
        are detected during the pass (ValueError).
    labels : (B,) float64
        Judged outcome, 0.0 or 1.0.
    age_days : (B,) float64
        Age of each outcome, >= 0.
    learnable : (F,) bool or uint8
        Zero = never changed (vetoes, structural validity, status exclusions).
    delta_lo, delta_hi : (F,) float64
        Bounds, ``delta_lo <= delta_hi`` (see :func:`default_bounds`).
    lr, grad_clip, half_life_days : float
        > 0.

    Returns
    -------
    float
        Mean over the batch of ``ω · loss`` using each sample's pre-update
        prediction, i.e. ``(1/B) Σ ω_b ℓ_b``.
    """
    features, baseline, delta = _check_weights(features, baseline, delta, finite_features=False)
    b_count, f = features.shape
    if b_count == 0:
        raise ValueError("features must have at least 1 row (an empty batch has no loss)")
    # Labels and ages are checked inside the kernel's single pass (finite=False here).
    labels = check_array("labels", labels, dtype=np.float64, shape=(b_count,), finite=False)
    age_days = check_array("age_days", age_days, dtype=np.float64, shape=(b_count,), finite=False)
    learnable = _check_mask("learnable", learnable, f)
    delta_lo = check_array("delta_lo", delta_lo, dtype=np.float64, shape=(f,))
    delta_hi = check_array("delta_hi", delta_hi, dtype=np.float64, shape=(f,))
    if (delta_lo > delta_hi).any():
        k = int(np.argmax(delta_lo > delta_hi))
        raise ValueError(
            f"delta_lo must be <= delta_hi (factor {k}: {delta_lo[k]} > {delta_hi[k]})"
        )
    outside = (delta < delta_lo) | (delta > delta_hi)
    if outside.any():
        k = int(np.argmax(outside))
        raise ValueError(
            f"delta must start within [delta_lo, delta_hi] (factor {k}: {delta[k]} not in"
            f" [{delta_lo[k]}, {delta_hi[k]}]); clip it after changing bounds"
        )
    lr = check_scalar("lr", lr, lo=0.0, lo_open=True)
    grad_clip = check_scalar("grad_clip", grad_clip, lo=0.0, lo_open=True)
    half_life_days = check_scalar("half_life_days", half_life_days, lo=0.0, lo_open=True)
    bad = np.zeros(1, dtype=np.int64)
    status, loss = _sgd(
        delta,
        baseline,
        features,
        labels,
        age_days,
        learnable,
        delta_lo,
        delta_hi,
        lr,
        grad_clip,
        half_life_days,
        bad,
    )
    if status == _BAD_LABEL:
        raise ValueError(f"labels must be 0.0 or 1.0 (sample {bad[0]}: {labels[bad[0]]})")
    if status == _BAD_AGE:
        raise ValueError(f"age_days must be finite and >= 0 (sample {bad[0]}: {age_days[bad[0]]})")
    if status == _BAD_FEATURES:
        raise ValueError(f"features contains non-finite value(s) (NaN or inf) in row {bad[0]}")
    if status == _BAD_LOGIT:
        raise ValueError(
            f"features row {bad[0]} overflows the logit to inf - inf (rescale the factors)"
        )
    return float(loss)


def logistic_loss(
    features: np.ndarray,
    labels: np.ndarray,
    baseline: np.ndarray,
    delta: np.ndarray,
    age_days: np.ndarray | None = None,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
) -> float:
    """Mean weighted logistic loss ``(1/B) Σ ω_b ℓ_b`` without training.

    Parameters
    ----------
    features : (B, F) float64, B >= 1
    labels : (B,) float64 in {0, 1}
    baseline, delta : (F,) float64
    age_days : (B,) float64 >= 0, optional
        Default all zero (every ω = 1).
    half_life_days : float
        > 0.

    Returns
    -------
    float
    """
    features, baseline, delta = _check_weights(features, baseline, delta)
    b_count = features.shape[0]
    if b_count == 0:
        raise ValueError("features must have at least 1 row (an empty batch has no loss)")
    labels = _check_labels(labels, b_count)
    if age_days is None:
        age_days = np.zeros(b_count)
    age_days = _check_ages(age_days, b_count)
    half_life_days = check_scalar("half_life_days", half_life_days, lo=0.0, lo_open=True)
    return float(_loss(features, labels, baseline, delta, age_days, half_life_days))


def _warmup() -> None:
    f = 3
    features = np.ones((2, f))
    baseline = np.zeros(f)
    delta = np.zeros(f)
    veto = np.zeros(2, dtype=np.bool_)
    rank(features, baseline, delta, veto, 1)
    lo, hi = default_bounds(f)
    labels = np.array([0.0, 1.0])
    ages = np.zeros(2)
    sgd_batch(delta, baseline, features, labels, ages, np.ones(f, dtype=np.bool_), lo, hi)
    logistic_loss(features, labels, baseline, delta, ages)
