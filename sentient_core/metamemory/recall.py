"""Scored recall: the learned scorer's ranking Σ w_k f_k over the memory, in one scan.

:meth:`ScoredRecall.recall` ranks every active trace by

    w_relevance · cosine(code, query) + w_recency · exp(−age / 24 h) + static

inside the streaming top-k scan (:func:`kernels.overlay.topk_scored`), where
``static`` is the weighted sum of the factors that depend neither on the query nor
on the clock (strength, importance, access, efficacy, the source's weight in the
domain, surprise, open debt, the bias), one float per code row. Vetoed rows
(retired, superseded at the floor, no text, an unsafe source) are never
candidates. The relevance factor is the code cosine here (the scorer is trained
with the judge's relevance; both are in [0, 1] for the traces that matter), and
the SMF similarity is 0 (recall has no query orientation).

``static`` is built from the trace records (one read of the store per refresh,
a Python pass over the records: seconds at 10⁵ traces), refreshed when the
memory, the scorer, the credit records or the domain change. The scan itself
costs what cosine-only recall costs (``bench/scored_recall.py``).

:meth:`ScoredRecall.explain` gives each factor's contribution ``w_k · f_k`` to the
score of each recalled trace (``recall --explain``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from kernels.overlay import topk_scored
from sentient_core.metamemory.factors import (
    FACTOR_NAMES,
    RECENCY_HOURS,
    context_for,
    factor_matrix,
)
from sentient_core.store import traces as store_traces

if TYPE_CHECKING:
    from sentient_core.memory import HolographicMemory
    from sentient_core.metamemory.core import MetaMemory
    from sentient_core.store.records import TraceRecord

__all__ = ["ScoredHit", "ScoredRecall"]

_QUERY_DEPENDENT = ("relevance", "smf_similarity", "recency")


class ScoredHit(msgspec.Struct, frozen=True):
    """One recalled trace: its score, its cosine and each factor's contribution."""

    record: Any
    row: int
    score: float
    cosine: float
    contributions: dict[str, float]


class ScoredRecall:
    """Recall ranked by the learned scorer (see the module docstring).

    Parameters
    ----------
    memory : HolographicMemory
    meta : MetaMemory
        Its scorer's weights, credit, source weights and debts.
    """

    def __init__(self, memory: HolographicMemory, meta: MetaMemory) -> None:
        self.memory = memory
        self.meta = meta
        self._key: tuple | None = None
        self._static = np.zeros(0)
        self._valid = np.zeros(0, dtype=np.uint8)
        self._features = np.zeros((0, len(FACTOR_NAMES)))

    def _weights(self) -> np.ndarray:
        return np.asarray(self.meta.scorer.weights, dtype=np.float64)

    def _refresh(self, domain: str, now: float) -> None:
        m = self.memory._m
        n = m.n
        key = (n, self.memory.generation, self.meta.scorer.version, domain, self._credit_mark())
        if key == self._key:
            return
        store = self.memory.datastore
        rows = np.flatnonzero(m.valid[:n])
        records: list[TraceRecord] = []
        with store.read() as txn:
            for r in rows.tolist():
                rec = store_traces.get(txn, int(m.row_id[r]))
                if rec is not None:
                    records.append(rec)
            ctx = context_for(txn, records, domain=domain, now=now)
        feats, veto = factor_matrix(records, ctx)
        w = self._weights()
        cols = [FACTOR_NAMES.index(c) for c in _QUERY_DEPENDENT]
        static_w = w.copy()
        static_w[cols] = 0.0
        self._static = np.zeros(n)
        self._valid = np.zeros(n, dtype=np.uint8)
        self._features = np.zeros((n, len(FACTOR_NAMES)))
        at = np.array([rec.row for rec in records], dtype=np.int64)
        if at.size:
            self._static[at] = feats @ static_w
            self._valid[at] = ~veto
            self._features[at] = feats
        self._key = key

    def _credit_mark(self) -> tuple[int, float]:
        c = self.meta.credit.credit
        return int(c.shape[0]), float(np.abs(c).sum())

    def recall(
        self, query: str | np.ndarray, k: int = 10, *, domain: str = "", now: float | None = None
    ) -> list[ScoredHit]:
        """The ``k`` traces with the highest scored rank, best first (ties: the older row)."""
        from sentient_core.memory.recall import query_code
        from sentient_core.metamemory.domain import domain_of

        now = time.time() if now is None else float(now)
        if not domain:
            domain = domain_of(query) if isinstance(query, str) else "general"
        code = query_code(self.memory, query)
        if code is None or self.memory._m.n == 0:
            return []
        self._refresh(domain, now)
        m = self.memory._m
        n = m.n
        w = self._weights()
        w_cos = float(w[FACTOR_NAMES.index("relevance")])
        w_rec = float(w[FACTOR_NAMES.index("recency")])
        rows, scores = topk_scored(
            m.codes[:n],
            code,
            k,
            valid=self._valid[:n],
            static=self._static[:n],
            last_access=m.last_access[:n],
            w_cos=w_cos,
            w_rec=w_rec,
            now=now,
            recency_s=RECENCY_HOURS * 3600.0,
        )
        q = code.astype(np.float64)
        q /= np.linalg.norm(q)
        out = []
        for r, s in zip(rows.tolist(), scores.tolist(), strict=True):
            rec = self.memory.get(int(m.row_id[r]))
            cos = float(m.codes[r].astype(np.float64) @ q)
            f = self._features[r].copy()
            f[FACTOR_NAMES.index("relevance")] = cos
            f[FACTOR_NAMES.index("recency")] = float(
                np.exp(-max(0.0, now - m.last_access[r]) / (RECENCY_HOURS * 3600.0))
            )
            contrib = {name: float(w[j] * f[j]) for j, name in enumerate(FACTOR_NAMES)}
            out.append(ScoredHit(record=rec, row=r, score=s, cosine=cos, contributions=contrib))
        return out

    def explain(self, query: str, k: int = 10, **kw: Any) -> list[dict[str, Any]]:
        """:meth:`recall` as plain dicts: id, score, cosine, every factor's contribution."""
        return [
            {
                "id": h.record.id if h.record is not None else -1,
                "score": h.score,
                "cosine": h.cosine,
                "contributions": {k2: v for k2, v in h.contributions.items() if v != 0.0},
                "source": h.record.source if h.record is not None else "",
                "text": h.record.text[:200] if h.record is not None else "",
            }
            for h in self.recall(query, k, **kw)
        ]
