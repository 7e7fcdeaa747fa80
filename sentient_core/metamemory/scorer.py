"""The learned recall scorer: bounded SGD on judged outcomes, one snapshot per batch, replay.

``w = baseline + delta`` over :data:`~sentient_core.metamemory.factors.FACTORS`;
only ``delta`` is learned, by :func:`sentient_kernels.scorer.sgd_batch` (logistic loss,
learning rate 0.01, each outcome weighted by ``0.5^(age / 21 days)``,
gradient components clipped to ±1, every ``delta_k`` kept in ±0.5, vetoes and
other non-learnable factors never changed). Training is deterministic: the
same batches in the same order give bit-identical weights.

After each batch :meth:`ScorerModel.train` writes ONE
:class:`ScorerSnapshot` (model version, baseline version, weights, outcome
count, mean loss, time, settings and a digest of the batch) in the same
transaction as nothing else: the model in RAM changes only once it committed.
Snapshots are never rewritten; they live in the ``scorer`` sub-database under
``b"snapshot/" + u64(model version)`` (:data:`SNAPSHOTS`). :func:`replay` rebuilds the model from the snapshots
(checking that they chain), and, given the batches, re-trains from zero and
checks every snapshot bit for bit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.metamemory.base import Counts, ReplayError, publish
from sentient_core.metamemory.factors import BASELINE_VERSION, BASELINES, FACTORS, Factor
from sentient_core.store.errors import StoreUsageError
from sentient_core.store.records import RecordCodec, UnixTime
from sentient_core.store.table import IdTable, register
from sentient_kernels import scorer as scorer_kernels

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "DAY",
    "SNAPSHOTS",
    "JudgedOutcome",
    "ScorerModel",
    "ScorerSnapshot",
    "batch_arrays",
    "batches_of",
    "replay",
]

DAY = 86400.0
LR = 0.01
HALF_LIFE_DAYS = 21.0
GRAD_CLIP = 1.0
BOUND = 0.5

Positive = Annotated[int, msgspec.Meta(ge=1)]
Floats = Annotated[tuple[float, ...], msgspec.Meta(min_length=1, max_length=256)]


class ScorerSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The scorer after one training batch.

    Attributes
    ----------
    v : int
        Record schema version (1).
    model_version : int
        1 for the first batch, then +1 per batch.
    baseline_version : int
        Version of the baseline weights the deltas are relative to.
    factors : tuple of str
        Factor names, in column order.
    baseline, delta : tuple of float
        Baseline weights and learned offsets; the weights are their sum.
    outcome_count : int
        Judged outcomes in the batch.
    mean_loss : float
        Mean age-weighted logistic loss of the batch (before each update).
    time : float
        Unix seconds at training (outcome ages are measured from it).
    lr, half_life_days, grad_clip : float
        The training settings used.
    batch_digest : str
        BLAKE2b-128 hex digest of the batch (features, labels, ages), so a replay
        from the batches can check it is fed the same data.
    batch_features, batch_labels, batch_times : tuple
        The batch itself (one row of factor values, one label and one judging
        time per outcome), so the store alone can re-train every snapshot.
    """

    v: int = 1
    model_version: Positive
    baseline_version: Positive
    factors: Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=256)]
    baseline: Floats
    delta: Floats
    outcome_count: Positive
    mean_loss: Annotated[float, msgspec.Meta(ge=0.0)]
    time: UnixTime
    lr: Annotated[float, msgspec.Meta(gt=0.0)]
    half_life_days: Annotated[float, msgspec.Meta(gt=0.0)]
    grad_clip: Annotated[float, msgspec.Meta(gt=0.0)]
    batch_digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]
    batch_features: tuple[tuple[float, ...], ...] = ()
    batch_labels: tuple[bool, ...] = ()
    batch_times: tuple[float, ...] = ()

    @property
    def weights(self) -> tuple[float, ...]:
        """``baseline + delta``, factor by factor."""
        return tuple(b + d for b, d in zip(self.baseline, self.delta, strict=True))


# The credit records share the sub-database under other prefixes (metamemory.credit).
SNAPSHOTS: IdTable[ScorerSnapshot] = IdTable(
    "scorer",
    b"snapshot/",
    RecordCodec(ScorerSnapshot, 1, "scorer snapshot"),
    field="model_version",
    label="scorer/snapshot",
)
"""Every snapshot, by model version (1, 2, 3 ...)."""


def _chained(txn: Txn) -> Iterator[str]:
    for version, snap in enumerate(SNAPSHOTS.iter(txn), 1):
        if snap.model_version != version:
            yield f"scorer: snapshot {version} missing (found {snap.model_version})"
            return


register(SNAPSHOTS, check=_chained)


def _append(txn: Txn, snapshot: ScorerSnapshot) -> None:
    """Store ``snapshot``; its model version must be one above the latest stored.

    Raises
    ------
    StoreUsageError
        The version does not follow the latest one (a snapshot is never replaced).
    """
    last = SNAPSHOTS.next_id(txn) - 1
    expected = max(last, 0) + 1
    if snapshot.model_version != expected:
        raise StoreUsageError(
            f"scorer snapshot version {snapshot.model_version} does not follow the stored"
            f" latest ({last if last >= 0 else 'none'}); expected {expected}"
        )
    SNAPSHOTS.put(txn, snapshot)


class JudgedOutcome(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One judged outcome: the factors of the trace that was used, and whether it worked.

    Attributes
    ----------
    features : tuple of float
        One value per factor (a row of :func:`~sentient_core.metamemory.factors.factor_matrix`).
    label : bool
        True for a ``success`` verdict, False for ``failure`` (other verdicts
        are not outcomes).
    time : float
        When it was judged (unix seconds); its age weights it.
    trace : int
        The trace (-1: not recorded).
    """

    features: tuple[float, ...]
    label: bool
    time: Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
    trace: Annotated[int, msgspec.Meta(ge=-1)] = -1


def batch_arrays(
    outcomes: Sequence[JudgedOutcome], now: float, n_factors: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features, labels, age_days)`` of a batch, as the kernel takes them.

    Raises
    ------
    ArgumentError
        An empty batch, a row of the wrong length, or a non-finite feature.
    """
    if not outcomes:
        raise ArgumentError("a training batch needs at least one judged outcome")
    for i, o in enumerate(outcomes):
        if not isinstance(o, JudgedOutcome):
            raise ArgumentTypeError(
                f"outcomes[{i}] must be a JudgedOutcome, got {type(o).__name__}"
            )
        if len(o.features) != n_factors:
            raise ArgumentError(
                f"outcomes[{i}] has {len(o.features)} features; the model has {n_factors}"
            )
    features = np.array([o.features for o in outcomes], dtype=np.float64)
    if not np.isfinite(features).all():
        raise ArgumentError("outcome features must be finite")
    labels = np.array([1.0 if o.label else 0.0 for o in outcomes], dtype=np.float64)
    ages = np.array([max(0.0, now - o.time) / DAY for o in outcomes], dtype=np.float64)
    return features, labels, ages


def _digest(features: np.ndarray, labels: np.ndarray, ages: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in (features, labels, ages):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


class ScorerModel:
    """A bounded, learned linear scorer over :data:`FACTORS`.

    Parameters
    ----------
    factors : tuple of Factor
    baseline_version : int
    lr, half_life_days, grad_clip : float
        SGD settings (SPEC: 0.01, 21 days).
    bound : float
        Every learnable ``delta_k`` stays in ``[-bound, +bound]`` (SPEC: 0.5).
    emit : Emitter, optional

    Attributes
    ----------
    baseline, delta : ndarray of float64, shape (F,)
    learnable, veto : ndarray of bool, shape (F,)
    lo, hi : ndarray of float64, shape (F,)
        Bounds of ``delta``.
    version : int
        Model version (0 before the first batch; one per trained batch).

    Counters: ``batches``, ``outcomes``, ``loss_sum``, ``last_loss``, ``replays``.
    """

    def __init__(
        self,
        factors: tuple[Factor, ...] = FACTORS,
        *,
        baseline_version: int = BASELINE_VERSION,
        lr: float = LR,
        half_life_days: float = HALF_LIFE_DAYS,
        grad_clip: float = GRAD_CLIP,
        bound: float = BOUND,
        emit: Emitter | None = None,
    ) -> None:
        if not factors:
            raise ArgumentError("a scorer needs at least one factor")
        self.factors = tuple(factors)
        self.names = tuple(f.name for f in self.factors)
        self.baseline_version = int(baseline_version)
        self.lr = float(lr)
        self.half_life_days = float(half_life_days)
        self.grad_clip = float(grad_clip)
        n = len(self.factors)
        if self.factors == FACTORS and self.baseline_version != BASELINE_VERSION:
            if self.baseline_version not in BASELINES:
                raise ArgumentError(f"unknown baseline version {self.baseline_version}")
            self.baseline = np.array(BASELINES[self.baseline_version], dtype=np.float64)
        else:
            self.baseline = np.array([f.baseline for f in self.factors], dtype=np.float64)
        self.delta = np.zeros(n, dtype=np.float64)
        self.learnable = np.array([f.learnable for f in self.factors], dtype=np.bool_)
        self.veto = np.array([f.veto for f in self.factors], dtype=np.bool_)
        self.lo, self.hi = scorer_kernels.default_bounds(n, bound)
        # Non-learnable factors have no room to move at all.
        self.lo[~self.learnable] = 0.0
        self.hi[~self.learnable] = 0.0
        self.version = 0
        self._emit = emit
        self._counts = Counts(("batches", "outcomes", "loss_sum", "last_loss", "replays"))

    @property
    def weights(self) -> np.ndarray:
        """``baseline + delta`` (a copy)."""
        return self.baseline + self.delta

    def counters(self) -> dict[str, float]:
        """What this model did in this process."""
        return self._counts.as_dict()

    # -- ranking -----------------------------------------------------------------------------

    def score(self, features: np.ndarray, veto: np.ndarray) -> np.ndarray:
        """Scores of candidates (``-inf`` where vetoed), via :func:`sentient_kernels.scorer.score`."""
        return scorer_kernels.score(features, self.baseline, self.delta, veto)

    def rank(self, features: np.ndarray, veto: np.ndarray, k: int) -> np.ndarray:
        """Indices of the top-k non-vetoed candidates, best first (:func:`sentient_kernels.scorer.rank`)."""
        return scorer_kernels.rank(features, self.baseline, self.delta, veto, k)

    def loss(self, outcomes: Sequence[JudgedOutcome], now: float) -> float:
        """Mean age-weighted logistic loss of ``outcomes`` under the current weights."""
        features, labels, ages = batch_arrays(outcomes, now, len(self.factors))
        return scorer_kernels.logistic_loss(
            features, labels, self.baseline, self.delta, ages, self.half_life_days
        )

    # -- training ----------------------------------------------------------------------------

    def step(self, outcomes: Sequence[JudgedOutcome], now: float) -> ScorerSnapshot:
        """Train on one batch in RAM and return its snapshot (nothing stored).

        The batch is applied in the given order; ``now`` is the training time
        outcome ages are measured from.
        """
        features, labels, ages = batch_arrays(outcomes, now, len(self.factors))
        delta = self.delta.copy()
        loss = scorer_kernels.sgd_batch(
            delta,
            self.baseline,
            features,
            labels,
            ages,
            self.learnable,
            self.lo,
            self.hi,
            lr=self.lr,
            grad_clip=self.grad_clip,
            half_life_days=self.half_life_days,
        )
        snap = ScorerSnapshot(
            model_version=self.version + 1,
            baseline_version=self.baseline_version,
            factors=self.names,
            baseline=tuple(float(x) for x in self.baseline),
            delta=tuple(float(x) for x in delta),
            outcome_count=len(outcomes),
            mean_loss=float(loss),
            time=float(now),
            lr=self.lr,
            half_life_days=self.half_life_days,
            grad_clip=self.grad_clip,
            batch_digest=_digest(features, labels, ages),
            batch_features=tuple(tuple(float(x) for x in o.features) for o in outcomes),
            batch_labels=tuple(bool(o.label) for o in outcomes),
            batch_times=tuple(float(o.time) for o in outcomes),
        )
        self._adopt(snap)
        return snap

    def train(self, store: Store, outcomes: Sequence[JudgedOutcome], now: float) -> ScorerSnapshot:
        """Train on one batch and write its snapshot (one write transaction).

        If the write fails the model keeps its previous weights and version.
        """
        saved = (self.delta.copy(), self.version)
        snap = self.step(outcomes, now)
        try:
            store.write(lambda txn: _append(txn, snap))
        except BaseException:
            self.delta, self.version = saved
            raise
        self._counts.add("batches")
        self._counts.add("outcomes", snap.outcome_count)
        self._counts.add("loss_sum", snap.mean_loss)
        self._counts.set("last_loss", snap.mean_loss)
        publish(
            self._emit,
            "scorer",
            "trained",
            subject=f"model:{snap.model_version}",
            after=snap.mean_loss,
            detail=f"{snap.outcome_count} outcome(s)",
        )
        return snap

    def _adopt(self, snap: ScorerSnapshot) -> None:
        self.delta = np.array(snap.delta, dtype=np.float64)
        self.version = snap.model_version

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def load(cls, store: Store, **kwargs: object) -> ScorerModel:
        """The model the store's snapshots describe (a fresh one before the first batch)."""
        with store.read() as txn:
            snaps = list(SNAPSHOTS.iter(txn))
        return replay(snaps, **kwargs) if snaps else cls(**kwargs)  # type: ignore[arg-type]


def replay(
    snapshots: Sequence[ScorerSnapshot],
    batches: Sequence[Sequence[JudgedOutcome]] | None = None,
    **kwargs: object,
) -> ScorerModel:
    """Rebuild a model from its snapshots.

    Parameters
    ----------
    snapshots : sequence of ScorerSnapshot
        Versions 1, 2, … in order (all of them).
    batches : sequence of outcome batches, optional
        The batch of each snapshot. When given, the model is re-trained from
        zero batch by batch and every snapshot must be reproduced bit for bit
        (digest, loss and delta).
    **kwargs
        Passed to :class:`ScorerModel` (factors …); the settings recorded in the
        first snapshot override lr, half-life and gradient clip.

    Raises
    ------
    ReplayError
        The snapshots do not chain (a gap, other factors or baseline, a delta
        outside the bounds) or a re-trained batch differs.
    """
    if not snapshots:
        raise ReplayError("nothing to replay: no snapshots")
    first = snapshots[0]
    kwargs = {
        **kwargs,
        "baseline_version": first.baseline_version,
        "lr": first.lr,
        "half_life_days": first.half_life_days,
        "grad_clip": first.grad_clip,
    }
    model = ScorerModel(**kwargs)  # type: ignore[arg-type]
    model._counts.add("replays")
    if batches is not None and len(batches) != len(snapshots):
        raise ReplayError(f"{len(batches)} batches for {len(snapshots)} snapshots")
    for i, snap in enumerate(snapshots):
        _check_link(model, snap, i + 1)
        if batches is not None:
            again = model.step(batches[i], snap.time)
            if (again.batch_digest, again.mean_loss, again.delta) != (
                snap.batch_digest,
                snap.mean_loss,
                snap.delta,
            ):
                raise ReplayError(
                    f"re-training batch {i + 1} does not reproduce snapshot {snap.model_version}"
                )
        else:
            model._adopt(snap)
    return model


def batches_of(snapshots: Sequence[ScorerSnapshot]) -> list[list[JudgedOutcome]]:
    """The training batch each snapshot recorded, for :func:`replay` from the store alone.

    Raises
    ------
    ReplayError
        A snapshot does not hold its whole batch.
    """
    out = []
    for snap in snapshots:
        n = snap.outcome_count
        if not (len(snap.batch_features) == len(snap.batch_labels) == len(snap.batch_times) == n):
            raise ReplayError(f"snapshot {snap.model_version} does not hold its batch")
        out.append(
            [
                JudgedOutcome(features=f, label=y, time=t)
                for f, y, t in zip(
                    snap.batch_features, snap.batch_labels, snap.batch_times, strict=True
                )
            ]
        )
    return out


def _check_link(model: ScorerModel, snap: ScorerSnapshot, version: int) -> None:
    if snap.model_version != version:
        raise ReplayError(f"snapshot {version} is missing (found version {snap.model_version})")
    if snap.factors != model.names:
        raise ReplayError(f"snapshot {version} has factors {snap.factors}; the model {model.names}")
    if snap.baseline_version != model.baseline_version or snap.baseline != tuple(
        float(x) for x in model.baseline
    ):
        raise ReplayError(f"snapshot {version} was trained against another baseline")
    delta = np.array(snap.delta, dtype=np.float64)
    if ((delta < model.lo) | (delta > model.hi)).any():
        raise ReplayError(f"snapshot {version} has a delta outside the bounds")
