"""Learned recall-scorer snapshots: functions over a :class:`~sentient_core.store.txn.Txn`.

After each training batch the scorer writes ONE :class:`ScorerSnapshot` (SPEC
§1, "Bounded scorer SGD"): the model version (1, 2, 3 ... one per batch), the
baseline version, the weights, how many outcomes the batch had, their mean
loss and the time. Snapshots are never rewritten; replaying them reproduces
the model (:func:`sentient_core.metamemory.scorer.replay`).

They live in the ``scorer`` sub-database under ``b"snapshot/" + u64(model
version)`` (the credit records share the sub-database under other prefixes,
see :mod:`sentient_core.store.credit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import msgspec

from sentient_core.store.errors import StoreUsageError
from sentient_core.store.keyspace import iter_prefix, last_number, number_key, number_of
from sentient_core.store.records import RecordCodec

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CODEC",
    "DB",
    "PREFIX",
    "ScorerSnapshot",
    "append",
    "get",
    "iter_snapshots",
    "latest",
]

DB = "scorer"
PREFIX = b"snapshot/"

Positive = Annotated[int, msgspec.Meta(ge=1)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
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


CODEC: RecordCodec[ScorerSnapshot] = RecordCodec(ScorerSnapshot, 1, "scorer snapshot")


def append(txn: Txn, snapshot: ScorerSnapshot) -> None:
    """Store ``snapshot``; its model version must be one above the latest stored.

    Raises
    ------
    StoreUsageError
        The version does not follow the latest one (a snapshot is never replaced).
    """
    last = last_number(txn, DB, PREFIX)
    expected = max(last, 0) + 1
    if snapshot.model_version != expected:
        raise StoreUsageError(
            f"scorer snapshot version {snapshot.model_version} does not follow the stored"
            f" latest ({last if last >= 0 else 'none'}); expected {expected}"
        )
    txn.put(DB, number_key(PREFIX, snapshot.model_version), CODEC.encode(snapshot))


def get(txn: Txn, model_version: int) -> ScorerSnapshot | None:
    """The snapshot of ``model_version``, or None."""
    raw = txn.get(DB, number_key(PREFIX, model_version))
    if raw is None:
        return None
    return CODEC.decode(bytes(raw), where=f"scorer/snapshot/{model_version}")


def latest(txn: Txn) -> ScorerSnapshot | None:
    """The newest snapshot, or None before the first batch."""
    last = last_number(txn, DB, PREFIX)
    return None if last < 0 else get(txn, last)


def iter_snapshots(txn: Txn) -> Iterator[ScorerSnapshot]:
    """Every snapshot, oldest first."""
    for key, value in iter_prefix(txn, DB, PREFIX):
        yield CODEC.decode(value, where=f"scorer/snapshot/{number_of(PREFIX, key)}")
