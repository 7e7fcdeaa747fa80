"""Benchmark cases for sentient_kernels.quantized (int8 codes, exact top-k).

The codes are :mod:`cases_holographic`'s matrix (1M × 256 float32, unit rows,
built once per process) and its first 100k rows. Every row compares, in the
same run, our exact int8 search with:

- our float32 exact scan (``holographic.topk_cosine``), the answer it must equal;
- faiss ``IndexScalarQuantizer`` QT_8bit (SQ8), whose answer is approximate: its
  recall@k against the exact top-k over the 16 queries is in the peer's name;
- a float16 scan (estimate only, no re-score): Numba has no float16 type on the
  CPU, so the scan converts the half bits in software; it is a lower bound on
  the cost of an exact float16 path built the same way as the int8 one.

The check before timing asserts that our ids and scores are bit-identical to
the float32 kernel's for all 16 queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from sentient_core.benchmarks import cases_holographic, floors, peers
from sentient_core.benchmarks.cases import Case
from sentient_kernels import holographic, quantized
from sentient_kernels.config import jit

KERNELS = ("quantized.exact_topk[normalized]",)
"""The kernels this module's cases time (``bench --only`` builds only the modules naming one)."""

K = 10
FULL_ROWS = cases_holographic.FULL_ROWS
SMALL_ROWS = 100_000

_QUANTISED: dict[int, quantized.QuantisedCodes] = {}


@jit(inline=True)
def _half_to_f32_bits(h):
    """float16 bits → float32 bits, for zero and normal halves (unit-row codes have no others)."""
    mag = np.uint32(h & 0x7FFF)
    sign = np.uint32(h & 0x8000) << np.uint32(16)
    if mag == 0:
        return sign
    return sign | ((mag + np.uint32(112 << 10)) << np.uint32(13))


@jit(parallel=True)
def _f16_scan(half_bits, query, out):
    """float32 dot of every float16 row (as uint16 bits) with ``query``."""
    m, d = half_bits.shape
    nblocks = 64
    for b in prange(nblocks):
        bits = np.empty(d, dtype=np.uint32)
        row_f = bits.view(np.float32)
        for i in range(b * m // nblocks, (b + 1) * m // nblocks):
            for j in range(d):
                bits[j] = _half_to_f32_bits(half_bits[i, j])
            acc = np.float32(0.0)
            for j in range(d):
                acc += row_f[j] * query[j]
            out[i] = acc


def _quantised(codes: np.ndarray) -> quantized.QuantisedCodes:
    rows = codes.shape[0]
    if rows not in _QUANTISED:
        full = _QUANTISED.get(FULL_ROWS)
        if full is not None and rows <= FULL_ROWS:
            # A prefix of the full matrix: slice its quantised rows (contiguous views).
            _QUANTISED[rows] = quantized.QuantisedCodes(*(a[:rows] for a in full))
        else:
            _QUANTISED[rows] = quantized.quantise(codes)
    return _QUANTISED[rows]


def _recall(peer_ids: np.ndarray, exact_ids: np.ndarray) -> float:
    hits = sum(
        len(set(p.tolist()) & set(e.tolist())) for p, e in zip(peer_ids, exact_ids, strict=True)
    )
    return hits / exact_ids.size


def _size_cases(codes: np.ndarray, queries: np.ndarray, full: bool) -> list[Case]:
    rows, d = codes.shape
    k = min(K, rows)
    query = queries[0]
    qc = _quantised(codes)
    size = f"{rows / 1e6:g}M×{d} int8, k={k}"
    qbytes = qc.codes.nbytes + 12 * rows
    # The scan reads the int8 codes and 12 bytes of row metadata: its floor is
    # reading the codes at this machine's bandwidth.
    floor: dict[str, Any] = {
        "floor": floors.stream_read(qc.codes),
        "floor_name": f"parallel stream read of the {qc.codes.nbytes / 1e6:,.1f} MB of int8 codes",
    }

    def ours():
        return quantized.exact_topk_quantised(qc, codes, query, k, normalized=True)

    def float32_scan():
        return holographic.topk_cosine(codes, query, k, normalized=True)

    exact = [holographic.topk_cosine(codes, q, k, normalized=True) for q in queries]

    def check_identical():
        for q, (ids, scores) in zip(queries, exact, strict=True):
            got = quantized.exact_topk_quantised(qc, codes, q, k, normalized=True)
            np.testing.assert_array_equal(got[0], ids)
            np.testing.assert_array_equal(got[1], scores)

    out = [
        Case(
            kernel="quantized.exact_topk[normalized]",
            size=size,
            ours=ours,
            peer=float32_scan,
            peer_name="holographic.topk_cosine (float32, same answer)",
            items=rows,
            item_unit="rows",
            nbytes=qbytes,
            target="≥ 2× faster than the float32 scan at 1M, identical ids and scores",
            target_met=lambda o, p: full and p is not None and p / o >= 2.0,
            check=check_identical,
            **floor,
        )
    ]

    faiss = peers.load("faiss")
    if faiss is None:
        out.append(
            Case(
                kernel="quantized.exact_topk[normalized]",
                size=size,
                ours=ours,
                peer=None,
                peer_name="faiss IndexScalarQuantizer SQ8",
                peer_missing="faiss",
            )
        )
    else:
        index = faiss.IndexScalarQuantizer(
            d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.train(codes)
        index.add(codes)
        sq8_ids = index.search(queries, k)[1]
        recall = _recall(sq8_ids, np.stack([e[0] for e in exact]))

        def sq8():
            return index.search(query[None, :], k)

        out.append(
            Case(
                kernel="quantized.exact_topk[normalized]",
                size=size,
                ours=ours,
                peer=sq8,
                peer_name=f"faiss SQ8 (recall@{k} {recall:.3f}; ours 1.000)",
                items=rows,
                item_unit="rows",
                nbytes=qbytes,
                target="≤ 1.2× faiss SQ8 time",
                target_met=lambda o, p: p is not None and o <= 1.2 * p,
                check=check_identical,
            )
        )

    half = codes.astype(np.float16).view(np.uint16)
    scores = np.empty(rows, dtype=np.float32)

    def f16_scan():
        _f16_scan(half, query, scores)

    out.append(
        Case(
            kernel="quantized.exact_topk[normalized]",
            size=size,
            ours=ours,
            peer=f16_scan,
            peer_name="float16 scan (software half→float, estimate only)",
            items=rows,
            item_unit="rows",
            nbytes=qbytes,
            target="report only (float16 = ½ the float32 memory, int8 ¼)",
        )
    )
    return out


def cases(scale: float) -> list[Case]:
    rows = max(1000, round(FULL_ROWS * scale))
    data = cases_holographic._data(rows)
    codes, queries = data["codes"], data["queries"]
    out = []
    small = max(1000, round(SMALL_ROWS * scale))
    if small < rows:
        _quantised(codes)  # quantise the full matrix once; the prefix slices it
        out.extend(_size_cases(codes[:small], queries, full=False))
    out.extend(_size_cases(codes, queries, full=rows >= FULL_ROWS))
    return out
