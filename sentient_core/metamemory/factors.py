"""The recall scorer's factors and the pure function that computes them for candidate traces.

Each factor is one column of the feature matrix the learned scorer ranks with
(:mod:`sentient_core.metamemory.scorer`). :data:`FACTORS` names them with their
baseline weight and whether SGD may change that weight; the three *veto*
columns (status exclusion, structural validity, safety) are never learnable,
weigh 0 in the score, and a 1 in any of them removes the candidate whatever
its score (SPEC §1).

:func:`factor_matrix` is pure: it reads only the trace records and a
:class:`FactorContext` holding what the other stores say (source weights of
the domain, credit, open debts, superseded traces) and what recall measured
(relevance, SMF similarity), so recall can call it later without this module
touching a store. :func:`context_for` gathers such a context from a read
transaction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.metamemory.credit import CREDITS, FLOORS, ranked_credit
from sentient_core.metamemory.debts import DEBTS
from sentient_core.metamemory.sources import WEIGHTS
from sentient_core.metamemory.surprise import source_key
from sentient_core.store.columns import ScorerColumns
from sentient_core.store.records import TraceRecord

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "BASELINES",
    "BASELINE_VERSION",
    "FACTORS",
    "FACTOR_NAMES",
    "RECENCY_HOURS",
    "Factor",
    "FactorContext",
    "context_for",
    "context_for_memory",
    "factor_columns",
    "factor_matrix",
    "trace_source_key",
]

RECENCY_HOURS = 24.0
"""Recency is ``exp(−age / 24 h)``, age since the trace was last accessed."""
ACCESS_SATURATION = 100
"""``access = log1p(use_count) / log1p(100)``, capped at 1."""
STRENGTH_CEILING = 1.5
MIN_JUDGED = 2
"""Efficacy counts from this many judged outcomes: one verdict is not a record."""


class Factor(NamedTuple):
    """One scorer factor: its column name, baseline weight, learnability and veto role."""

    name: str
    baseline: float
    learnable: bool
    veto: bool
    doc: str


# Baseline weights, version 2: the factors that carry meta-memory's evidence about a
# trace (strength from credit, its source's weight, surprise, an open debt) keep their
# weight; the usage priors (recency, importance, access, efficacy) start at a tenth of
# version 1's and must earn weight from judged outcomes. They are the same for every
# query, so at version 1's weights they outvoted relevance: on the Q/A sets in
# bench/data, learn mode's answer@1 under the scored recall fell from the hybrid's
# 0.71 to 0.61 (pydoc) and 0.70 to 0.65 (debian); at a tenth, 0.70 and 0.70.
FACTORS: tuple[Factor, ...] = (
    Factor("relevance", 1.0, True, False, "question-passage relevance (or recall score), [0, 1]"),
    Factor("smf_similarity", 0.3, True, False, "SMF orientation similarity mapped to [0, 1]"),
    Factor("recency", 0.02, True, False, "exp(-age / 24 h) since the last access"),
    Factor("strength", 0.3, True, False, "strength / 1.5"),
    Factor("importance", 0.02, True, False, "importance, [0, 1]"),
    Factor("access", 0.01, True, False, "log1p(use_count) / log1p(100), capped at 1"),
    Factor(
        "efficacy",
        0.02,
        True,
        False,
        "(success - failure) / (success + failure + 1), from 2 judged outcomes (else 0)",
    ),
    Factor("source_weight", 0.3, True, False, "weight of the trace's source in the domain / 2"),
    Factor(
        "surprise",
        -0.3,
        True,
        False,
        "evidence against the trace: 0 for one signal, (run - 1) / 3 of consistent ones",
    ),
    Factor("open_debt", -0.1, True, False, "1 if an open epistemic debt is about the trace"),
    Factor("bias", 0.0, True, False, "constant 1 (the intercept of the logistic model)"),
    Factor("status_excluded", 0.0, False, True, "veto: retired or superseded"),
    Factor("invalid", 0.0, False, True, "veto: structurally invalid (no text)"),
    Factor("unsafe", 0.0, False, True, "veto: its source is refused by the safety policy"),
)
"""The factors, in column order (SPEC §1: relevance, SMF similarity, recency,
strength, importance, access count, source weight, status, surprise, open-debt flag …)."""

FACTOR_NAMES: tuple[str, ...] = tuple(f.name for f in FACTORS)
BASELINE_VERSION = 2
"""Version of the baseline weights above; a snapshot records which it was trained against."""

BASELINES: dict[int, tuple[float, ...]] = {
    1: (1.0, 0.3, 0.2, 0.3, 0.2, 0.1, 0.2, 0.3, -0.3, -0.1, 0.0, 0.0, 0.0, 0.0),
    BASELINE_VERSION: tuple(f.baseline for f in FACTORS),
}
"""The baseline weights of :data:`FACTORS` by version: a store's snapshots trained
against an earlier baseline still replay (the model keeps that baseline)."""

_COL = {name: i for i, name in enumerate(FACTOR_NAMES)}


class FactorContext(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the other stores and recall say about the candidates (all optional).

    Attributes
    ----------
    now : float
        Unix time the recency is measured at.
    relevance, smf_similarity : dict of int to float
        Per trace id, in [0, 1] (missing: 0).
    source_weights : dict of str to float
        Per source key (:func:`~sentient_core.metamemory.surprise.source_key`)
        in [0, 2] (missing: 1).
    credit : dict of int to float
        Per trace id, the credit recall ranks by (missing: 0;
        :func:`~sentient_core.metamemory.credit.ranked_credit` of the stored state).
    open_debt_traces : frozenset of int
        Traces an open debt is about.
    superseded : frozenset of int
        Traces retired at the floor or superseded.
    unsafe_sources : frozenset of str
        Source keys the safety policy refuses.
    """

    now: float
    relevance: dict[int, float] = msgspec.field(default_factory=dict)
    smf_similarity: dict[int, float] = msgspec.field(default_factory=dict)
    source_weights: dict[str, float] = msgspec.field(default_factory=dict)
    credit: dict[int, float] = msgspec.field(default_factory=dict)
    open_debt_traces: frozenset[int] = frozenset()
    superseded: frozenset[int] = frozenset()
    unsafe_sources: frozenset[str] = frozenset()


def trace_source_key(source: str) -> str:
    """The source key a trace's ``source`` is weighed under ("" for none): its
    :func:`~sentient_core.metamemory.surprise.source_key`, or the free-form
    source itself (a path) when it has no kind."""
    if not source:
        return ""
    try:
        return source_key(source)
    except (ArgumentError, ArgumentTypeError):
        return source  # a trace stored with a free-form source (a path): its own key


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x))) if math.isfinite(x) else 0.0


def factor_matrix(
    records: Sequence[TraceRecord], context: FactorContext
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(C, F)`` factor matrix and the ``(C,)`` veto mask of candidate traces.

    Parameters
    ----------
    records : sequence of TraceRecord
        The candidates, in the order their rows should have.
    context : FactorContext

    Returns
    -------
    features : ndarray of float64, shape (C, F)
        Columns in :data:`FACTORS` order; every value finite, in [-1, 1].
    veto : ndarray of bool, shape (C,)
        True where a veto column is 1.
    """
    if not isinstance(context, FactorContext):
        raise ArgumentTypeError(f"context must be a FactorContext, got {type(context).__name__}")
    out = np.zeros((len(records), len(FACTORS)), dtype=np.float64)
    for i, rec in enumerate(records):
        if not isinstance(rec, TraceRecord):
            raise ArgumentTypeError(f"records[{i}] must be a TraceRecord, got {type(rec).__name__}")
        tid = rec.id
        age_h = max(0.0, context.now - rec.last_access) / 3600.0
        judged = rec.success_count + rec.failure_count
        key = trace_source_key(rec.source)
        row = out[i]
        row[_COL["relevance"]] = _unit(context.relevance.get(tid, 0.0))
        row[_COL["smf_similarity"]] = _unit(context.smf_similarity.get(tid, 0.0))
        row[_COL["recency"]] = math.exp(-age_h / RECENCY_HOURS)
        row[_COL["strength"]] = rec.strength / STRENGTH_CEILING
        row[_COL["importance"]] = rec.importance
        row[_COL["access"]] = min(1.0, math.log1p(rec.use_count) / math.log1p(ACCESS_SATURATION))
        row[_COL["efficacy"]] = (
            (rec.success_count - rec.failure_count) / (judged + 1) if judged >= MIN_JUDGED else 0.0
        )
        row[_COL["source_weight"]] = min(2.0, max(0.0, context.source_weights.get(key, 1.0))) / 2.0
        row[_COL["surprise"]] = _unit(-context.credit.get(tid, 0.0))
        row[_COL["open_debt"]] = float(tid in context.open_debt_traces)
        row[_COL["bias"]] = 1.0
        row[_COL["status_excluded"]] = float(rec.retired or tid in context.superseded)
        row[_COL["invalid"]] = float(not rec.text.strip())
        row[_COL["unsafe"]] = float(bool(key) and key in context.unsafe_sources)
    vetoes = [i for i, f in enumerate(FACTORS) if f.veto]
    veto = out[:, vetoes].any(axis=1) if len(records) else np.zeros(0, dtype=bool)
    return out, np.ascontiguousarray(veto, dtype=np.bool_)


def factor_columns(columns: ScorerColumns, context: FactorContext) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factor_matrix` of every trace in ``columns``, vectorised (same values).

    For the scorer's table over the whole memory: no :class:`TraceRecord` is built
    (:func:`sentient_core.store.columns.scorer_columns` decodes only the fields the
    factors need). ``factor_matrix`` is its reference in the tests.
    """
    if not isinstance(context, FactorContext):
        raise ArgumentTypeError(f"context must be a FactorContext, got {type(context).__name__}")
    ids = columns.ids
    n = int(ids.shape[0])
    out = np.zeros((n, len(FACTORS)), dtype=np.float64)

    def by_id(values: Mapping[int, float]) -> np.ndarray:
        col = np.zeros(n)
        if values and n:
            keys = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
            vals = np.fromiter(values.values(), dtype=np.float64, count=len(values))
            at = np.searchsorted(ids, keys)
            hit = (at < n) & (ids[np.minimum(at, n - 1)] == keys)
            col[at[hit]] = vals[hit]
        return col

    def member(id_set: frozenset[int]) -> np.ndarray:
        if not id_set:
            return np.zeros(n, dtype=bool)
        return np.isin(ids, np.fromiter(id_set, dtype=np.int64, count=len(id_set)))

    def unit(x: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(x), np.clip(x, 0.0, 1.0), 0.0)

    # Per distinct source, then gathered per trace (no Python loop over the traces).
    name_keys = [trace_source_key(src) for src in columns.source_names]
    sid = columns.source_ids
    judged = columns.success_count + columns.failure_count
    age_h = np.maximum(0.0, context.now - columns.last_access) / 3600.0
    out[:, _COL["relevance"]] = unit(by_id(context.relevance))
    out[:, _COL["smf_similarity"]] = unit(by_id(context.smf_similarity))
    out[:, _COL["recency"]] = np.exp(-age_h / RECENCY_HOURS)
    out[:, _COL["strength"]] = columns.strength / STRENGTH_CEILING
    out[:, _COL["importance"]] = columns.importance
    out[:, _COL["access"]] = np.minimum(
        1.0, np.log1p(columns.use_count) / math.log1p(ACCESS_SATURATION)
    )
    out[:, _COL["efficacy"]] = np.where(
        judged >= MIN_JUDGED,
        (columns.success_count - columns.failure_count) / (judged + 1),
        0.0,
    )
    weight_of = np.array(
        [min(2.0, max(0.0, context.source_weights.get(k, 1.0))) / 2.0 for k in name_keys]
    )
    out[:, _COL["source_weight"]] = weight_of[sid] if n else 0.0
    out[:, _COL["surprise"]] = unit(-by_id(context.credit))
    out[:, _COL["open_debt"]] = member(context.open_debt_traces)
    out[:, _COL["bias"]] = 1.0
    out[:, _COL["status_excluded"]] = columns.retired | member(context.superseded)
    out[:, _COL["invalid"]] = columns.blank
    unsafe = context.unsafe_sources
    unsafe_of = np.array([float(bool(k) and k in unsafe) for k in name_keys])
    out[:, _COL["unsafe"]] = unsafe_of[sid] if n else 0.0
    vetoes = [i for i, f in enumerate(FACTORS) if f.veto]
    veto = out[:, vetoes].any(axis=1) if n else np.zeros(0, dtype=bool)
    return out, np.ascontiguousarray(veto, dtype=np.bool_)


def context_for(
    txn: Txn,
    records: Sequence[TraceRecord],
    *,
    domain: str,
    now: float,
    relevance: Mapping[int, float] | None = None,
    smf_similarity: Mapping[int, float] | None = None,
    credit: Mapping[int, float] | None = None,
    unsafe_sources: frozenset[str] = frozenset(),
) -> FactorContext:
    """A :class:`FactorContext` for ``records`` from the stores, in one read transaction.

    Source weights come from the ``sources`` records of ``domain``, credit (when
    not given) from the credit records, open debts and floor records from
    their stores.
    """
    ids = {r.id for r in records}
    weights = {w.source: w.weight for w in WEIGHTS.iter(txn, domain)}
    if credit is None:
        credit = {}
        for tid in ids:
            rec = CREDITS.get(txn, tid)
            if rec is not None:
                credit[tid] = ranked_credit(rec)
    debts = frozenset(
        d.source_memory for d in DEBTS.iter(txn) if d.status == "open" and d.source_memory in ids
    )
    superseded = frozenset(tid for tid in ids if FLOORS.get(txn, tid) is not None)
    return FactorContext(
        now=now,
        relevance=dict(relevance or {}),
        smf_similarity=dict(smf_similarity or {}),
        source_weights=weights,
        credit=dict(credit),
        open_debt_traces=debts,
        superseded=superseded,
        unsafe_sources=unsafe_sources,
    )


def context_for_memory(txn: Txn, *, domain: str, now: float) -> FactorContext:
    """A :class:`FactorContext` for every trace of the store (as :func:`context_for` over
    all of them): credit, open debts and floor records are read by iterating their
    stores once, not looked up per trace."""
    return FactorContext(
        now=now,
        source_weights={w.source: w.weight for w in WEIGHTS.iter(txn, domain)} if domain else {},
        credit={rec.trace: ranked_credit(rec) for rec in CREDITS.iter(txn)},
        open_debt_traces=frozenset(d.source_memory for d in DEBTS.iter(txn) if d.status == "open"),
        superseded=frozenset(f.trace for f in FLOORS.iter(txn)),
    )
