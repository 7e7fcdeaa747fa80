"""Slow, obviously-correct reference for sentient_kernels.overlay: every score in float64 with
``math.fsum`` dots, then a sort by (-score, row)."""

from __future__ import annotations

import math

import numpy as np


def _ranked(codes, query, k, valid, now, last_access, recency_s, score_of):
    """Rows by ``score_of(row, cosine, recency)`` over valid rows, best first, ties to the
    lower row."""
    q = query.astype(np.float64)
    qnorm = math.sqrt(math.fsum(q * q))
    scored = []
    for i in range(codes.shape[0]):
        if not valid[i]:
            continue
        cos = math.fsum(codes[i].astype(np.float64) * q) / qnorm
        recency = math.exp(-max(0.0, now - float(last_access[i])) / recency_s)
        scored.append((-score_of(i, cos, recency), i))
    scored.sort()
    top = scored[:k]
    return np.array([i for _, i in top], dtype=np.int64), np.array([-s for s, _ in top])


def topk_scored(codes, query, k, *, valid, static, last_access, w_cos, w_rec, now, recency_s):
    return _ranked(
        codes,
        query,
        k,
        valid,
        now,
        last_access,
        recency_s,
        lambda i, cos, recency: w_cos * cos + float(static[i]) + w_rec * recency,
    )


def scored_hybrid(
    score,
    ceiling,
    codes,
    query,
    alpha,
    k,
    *,
    valid,
    static,
    last_access,
    w_rel,
    w_rec,
    now,
    recency_s,
):
    """Every valid row by w_rel·(bm25/ceiling + α·cos)/(1 + α) + static + w_rec·recency."""

    def score_of(i, cos, recency):
        rel = float(score[i]) / ceiling if ceiling > 0 else 0.0
        return w_rel * (rel + alpha * cos) / (1.0 + alpha) + float(static[i]) + w_rec * recency

    return _ranked(codes, query, k, valid, now, last_access, recency_s, score_of)
