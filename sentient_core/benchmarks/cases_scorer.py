"""Benchmark cases for sentient_kernels.scorer (bounded SGD on judged outcomes).

Full scale: 1M samples × 20 factors per ``sgd_batch`` call. Peers do the same
per-sample logistic-regression SGD (lr 0.01, weights from zero, no intercept,
each sample weighted by 0.5^(age/21 d)):

* river ``LogisticRegression`` with ``learn_one`` over dict features
  (``optim.SGD(0.01)``, ``intercept_lr=0``, ``clip_gradient=1``), on fewer
  samples (``peer_items``); the dicts are built outside the timing.
* scikit-learn ``SGDClassifier(loss="log_loss")`` ``partial_fit`` (constant
  lr 0.01, no penalty, no intercept, no shuffling), on the full batch.

Features lie in [0, 1], so |ω (p − y) f| ≤ 1: neither our per-component
gradient clip nor river's loss-gradient clip ever binds, and the checks compare
the learned weights of ours (bounds widened so they never bind) and the peer
after the same samples. Ours additionally computes the mean loss and enforces
bounds and the learnable mask, which the peers do not.
"""

from __future__ import annotations

import numpy as np

from sentient_core.benchmarks import peers
from sentient_core.benchmarks.cases import Case
from sentient_kernels import scorer

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = ("scorer.sgd_batch",)

F = 20
FULL_SAMPLES = 1_000_000
FULL_RIVER_SAMPLES = 20_000
LR = 0.01
HALF_LIFE = 21.0


def _make_data(n: int) -> dict:
    rng = np.random.default_rng(777)
    features = rng.random((n, F))
    true_w = rng.standard_normal(F)
    logits = (features - 0.5) @ true_w
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(np.float64)
    ages = rng.random(n) * 60.0
    return {
        "features": features,
        "labels": labels,
        "ages": ages,
        "weights": 0.5 ** (ages / HALF_LIFE),
        "baseline": np.zeros(F),
        "learnable": np.ones(F, dtype=np.bool_),
    }


def _ours_on(data: dict, n: int, *, wide: bool) -> np.ndarray:
    delta = np.zeros(F)
    lo, hi = (np.full(F, -1e9), np.full(F, 1e9)) if wide else scorer.default_bounds(F)
    scorer.sgd_batch(
        delta,
        data["baseline"],
        data["features"][:n],
        data["labels"][:n],
        data["ages"][:n],
        data["learnable"],
        lo,
        hi,
        lr=LR,
        grad_clip=1.0,
        half_life_days=HALF_LIFE,
    )
    return delta


def cases(scale: float) -> list[Case]:
    n = max(1000, round(FULL_SAMPLES * scale))
    n_river = max(200, round(FULL_RIVER_SAMPLES * scale))
    full = n >= FULL_SAMPLES
    data = _make_data(n)
    lo, hi = scorer.default_bounds(F)
    delta = np.zeros(F)
    size = f"{n / 1e6:g}M samples × {F} factors"
    target = "≥ 10M samples/s and ≥ 200× river"

    def ours():
        delta[:] = 0.0
        return scorer.sgd_batch(
            delta,
            data["baseline"],
            data["features"],
            data["labels"],
            data["ages"],
            data["learnable"],
            lo,
            hi,
            lr=LR,
            grad_clip=1.0,
            half_life_days=HALF_LIFE,
        )

    out = []

    river_name = f"river LogisticRegression.learn_one ({n_river / 1e3:g}k samples)"
    if peers.load("river") is None:
        out.append(
            Case(
                kernel="scorer.sgd_batch",
                size=size,
                ours=ours,
                peer=None,
                peer_name=river_name,
                items=n,
                item_unit="samples",
                peer_items=n_river,
                target=target,
                repeat=5,
                peer_missing="river",
            )
        )
    else:
        from river import linear_model, optim

        names = [f"f{k}" for k in range(F)]
        dicts = [dict(zip(names, row, strict=True)) for row in data["features"][:n_river].tolist()]
        ys = [bool(v) for v in data["labels"][:n_river]]
        ws = data["weights"][:n_river].tolist()

        def river_model():
            return linear_model.LogisticRegression(
                optimizer=optim.SGD(LR), intercept_lr=0.0, clip_gradient=1.0
            )

        def river_fit():
            model = river_model()
            for x, y, w in zip(dicts, ys, ws, strict=True):
                model.learn_one(x, y, w)
            return model

        def river_check():
            model = river_fit()
            got = np.array([model.weights.get(name, 0.0) for name in names])
            want = _ours_on(data, n_river, wide=True)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)

        def river_met(o: float, p: float | None) -> bool:
            if not full or p is None:
                return False
            return n / o >= 10e6 and (p / n_river) / (o / n) >= 200.0

        out.append(
            Case(
                kernel="scorer.sgd_batch",
                size=size,
                ours=ours,
                peer=river_fit,
                peer_name=river_name,
                items=n,
                item_unit="samples",
                peer_items=n_river,
                target=target,
                target_met=river_met,
                repeat=5,
                check=river_check,
            )
        )

    sklearn_name = "sklearn SGDClassifier(log_loss).partial_fit"
    sklearn_target = "report only (Cython SGD, no bounds/mask/loss)"
    if peers.load("sklearn") is None:
        out.append(
            Case(
                kernel="scorer.sgd_batch",
                size=size,
                ours=ours,
                peer=None,
                peer_name=sklearn_name,
                items=n,
                item_unit="samples",
                target=sklearn_target,
                repeat=5,
                peer_missing="sklearn",
            )
        )
    else:
        from sklearn.linear_model import SGDClassifier

        classes = np.array([0.0, 1.0])

        def sklearn_fit():
            model = SGDClassifier(
                loss="log_loss",
                penalty=None,
                learning_rate="constant",
                eta0=LR,
                fit_intercept=False,
                shuffle=False,
            )
            model.partial_fit(
                data["features"], data["labels"], classes=classes, sample_weight=data["weights"]
            )
            return model

        def sklearn_check():
            got = sklearn_fit().coef_[0]
            want = _ours_on(data, n, wide=True)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)

        out.append(
            Case(
                kernel="scorer.sgd_batch",
                size=size,
                ours=ours,
                peer=sklearn_fit,
                peer_name=sklearn_name,
                items=n,
                item_unit="samples",
                target=sklearn_target,
                repeat=5,
                check=sklearn_check,
            )
        )
    return out
