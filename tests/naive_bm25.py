"""Slow, obviously-correct references for sentient_kernels.lexical and sentient_kernels.bm25.

Documents are dicts ``{term: tf}``; an index is just the list of them by row.
Scores follow the formula of :mod:`sentient_kernels.bm25` operation by operation (same
order, float64), so they are bit-identical to the kernel's.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from sentient_core.encoder.hashing import _tokens, token_hash

TF_MAX = 65535


def term_counts(text: str) -> tuple[dict[int, int], int]:
    """``{term hash: count}`` (saturated) of the encoder's content tokens, and their number."""
    toks = _tokens(text)
    counts = Counter(token_hash(t) for t in toks)
    return {h: min(c, TF_MAX) for h, c in counts.items()}, len(toks)


def segment(docs: list[dict[int, int]], rows: list[int]) -> dict[int, list[tuple[int, int]]]:
    """term → [(row, tf), ...] ascending by row."""
    out: dict[int, list[tuple[int, int]]] = {}
    for row, doc in sorted(zip(rows, docs, strict=True)):
        for h, tf in doc.items():
            out.setdefault(h, []).append((row, tf))
    return dict(sorted(out.items()))


def idf(n_docs: float, df: int) -> float:
    n_eff = max(n_docs, df)
    return math.log(1.0 + (n_eff - df + 0.5) / (df + 0.5))


def scores(
    docs: list[dict[int, int]],
    doc_len: list[int],
    query: list[tuple[int, float]],
    valid: list[bool] | None = None,
    n_docs: float | None = None,
    avgdl: float | None = None,
    k1: float = 1.2,
    b: float = 0.75,
    df: list[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 of every row (Lucene idf), summed in query order; and each query term's idf.

    ``df`` (one per query term) replaces the counted document frequencies (a part
    of a corpus scored with the whole corpus's statistics).
    """
    n = len(docs)
    live = [i for i in range(n) if valid is None or valid[i]]
    if n_docs is None:
        n_docs = float(len(live))
    if avgdl is None:
        avgdl = float(np.mean([doc_len[i] for i in live])) if live else 0.0
    dfs = doc_freqs(docs, [h for h, _ in query], valid) if df is None else list(df)
    idfs = [idf(n_docs, df) if df > 0 else 0.0 for df in dfs]  # a term no row holds: 0
    out = np.zeros(n)
    for i in live:
        acc = 0.0
        for (h, w), term_idf in zip(query, idfs, strict=True):
            tf = docs[i].get(h, 0)
            if tf == 0:
                continue
            ratio = doc_len[i] / avgdl if avgdl > 0.0 else 1.0
            acc += (w * term_idf) * (tf / (tf + k1 * (1.0 - b + b * ratio)))
        out[i] = acc
    return out, np.array(idfs)


def doc_freqs(docs: list[dict[int, int]], terms: list[int], valid: list[bool] | None) -> list[int]:
    """Number of valid documents holding each term."""
    live = [i for i in range(len(docs)) if valid is None or valid[i]]
    return [sum(1 for i in live if h in docs[i]) for h in terms]


def topk(score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with a positive score, by (score desc, row asc), first k."""
    rows = np.flatnonzero(score > 0)
    order = np.lexsort((rows, -score[rows]))[:k]
    return rows[order], score[rows[order]]


def hybrid(
    score: np.ndarray,
    ceiling: float,
    codes: np.ndarray,
    query_code: np.ndarray,
    alpha: float,
    k: int,
    valid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Valid rows by (bm25/ceiling + α·cos)/(1 + α), cosines by fsum; first k."""
    q = query_code.astype(np.float64)
    qnorm = math.sqrt(math.fsum(q * q))
    rows = np.arange(len(score)) if valid is None else np.flatnonzero(valid)
    cos = np.array([math.fsum(codes[r].astype(np.float64) * q) / qnorm for r in rows])
    h = (score[rows] / ceiling + alpha * cos) / (1.0 + alpha)
    order = np.lexsort((rows, -h))[:k]
    return rows[order], h[order]


def tf_factor(tf: int, dl: int, avgdl: float, k1: float, b: float) -> float:
    """BM25's tf factor, as :func:`scores` computes it (a ratio of 1 when ``avgdl`` is 0)."""
    ratio = dl / avgdl if avgdl > 0.0 else 1.0
    return tf / (tf + k1 * (1.0 - b + b * ratio))


def block_bounds(
    postings: dict[int, list[tuple[int, int]]],
    doc_len: list[int],
    avgdl_ref: float,
    k1: float,
    b: float,
    block: int,
) -> tuple[list[list[float]], list[float]]:
    """Per term (ascending): the largest tf factor of each run of ``block`` postings, and of all.

    ``postings`` is :func:`segment`'s form; rows beyond ``doc_len`` have length 0.
    """
    blocks, terms = [], []
    for plist in postings.values():
        facs = [
            tf_factor(tf, doc_len[r] if r < len(doc_len) else 0, avgdl_ref, k1, b)
            for r, tf in plist
        ]
        blocks.append([max(facs[i : i + block]) for i in range(0, len(facs), block)])
        terms.append(max(facs))
    return blocks, terms
