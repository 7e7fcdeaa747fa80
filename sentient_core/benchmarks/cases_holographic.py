"""Benchmark cases for sentient_kernels.holographic (exact top-k cosine over float32 codes).

Full scale: 1M codes × 256 float32 (1 GB, L2-normalized so inner product =
cosine for faiss), k = 10. Peers: faiss ``IndexFlatIP`` (exhaustive, same
normalized codes), numpy (BLAS matmul + argpartition + final sort), and a
numba parallel streaming sum over the same matrix, which measures how fast this
machine can read the matrix at all (the bandwidth ceiling).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import prange

from sentient_core.benchmarks import floors, peers
from sentient_core.benchmarks.cases import Case
from sentient_kernels import holographic
from sentient_kernels.config import jit

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = (
    "holographic.topk_cosine[cosine]",
    "holographic.topk_cosine[normalized]",
    "holographic.topk_cosine_batch[normalized]",
)

D = 256
K = 10
N_BATCH = 16
FULL_ROWS = 1_000_000

# The 1 GB matrix is built once per process and shared by every case (and by
# the pytest-benchmark suite), keyed by its row count.
_DATA: dict[int, dict] = {}


@jit(parallel=True)
def _stream_sum(codes):
    """Read every element once, in parallel (the bandwidth reference)."""
    total = 0.0
    for i in prange(codes.shape[0]):
        acc = np.float32(0.0)
        for j in range(codes.shape[1]):
            acc += codes[i, j]
        total += float(acc)  # float64, as before (float32 + float64)
    return total


def _data(rows: int) -> dict:
    if rows not in _DATA:
        rng = np.random.default_rng(20240501)
        codes = rng.standard_normal((rows, D), dtype=np.float32)
        holographic.normalize_rows(codes, out=codes)
        queries = rng.standard_normal((N_BATCH, D), dtype=np.float32)
        holographic.normalize_rows(queries, out=queries)
        _DATA[rows] = {"codes": codes, "query": queries[0].copy(), "queries": queries}
    return _DATA[rows]


def _numpy_topk(scores: np.ndarray, k: int) -> np.ndarray:
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.lexsort((top, -scores[top]))]


def _numpy_topk_rows(scores: np.ndarray, k: int) -> np.ndarray:
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def _same_topk(codes, query, ours_idx, peer_idx, atol=1e-5) -> None:
    """Ours and a float32 peer must pick rows of equal exact score (near-ties may swap)."""
    q = query.astype(np.float64)
    ours = codes[ours_idx].astype(np.float64) @ q
    peer = codes[np.asarray(peer_idx)].astype(np.float64) @ q
    np.testing.assert_allclose(ours, peer, rtol=0, atol=atol)


def cases(scale: float) -> list[Case]:
    rows = max(1000, round(FULL_ROWS * scale))
    full = rows >= FULL_ROWS
    data = _data(rows)
    codes, query, queries = data["codes"], data["query"], data["queries"]
    k = min(K, rows)
    nbytes = codes.nbytes
    size = f"{rows / 1e6:g}M×{D} f32, k={k}"
    size_batch = f"{rows / 1e6:g}M×{D} f32, {N_BATCH} queries, k={k}"
    # Every row scans the codes once: its floor is reading them at this machine's bandwidth.
    floor: dict[str, Any] = {
        "floor": floors.stream_read(codes),
        "floor_name": f"parallel stream read of the {nbytes / 1e9:.2f} GB of codes",
    }

    def ours_normalized():
        return holographic.topk_cosine(codes, query, k, normalized=True)

    def ours_full():
        return holographic.topk_cosine(codes, query, k)

    def ours_batch():
        return holographic.topk_cosine_batch(codes, queries, k, normalized=True)

    def numpy_ip():
        return _numpy_topk(codes @ query, k)

    def numpy_batch():
        return _numpy_topk_rows(queries @ codes.T, k)

    def stream():
        return _stream_sum(codes)

    def faster(o: float, p: float | None) -> bool:
        return full and p is not None and p > o

    def check_numpy():
        _same_topk(codes, query, ours_normalized()[0], numpy_ip())

    def check_numpy_batch():
        ours = ours_batch()[0]
        peer = numpy_batch()
        for q in range(N_BATCH):
            _same_topk(codes, queries[q], ours[q], peer[q])

    target_single = "faster than faiss IndexFlatIP and numpy; ≥ 70% of stream GB/s"
    out = []

    faiss = peers.load("faiss")
    faiss_name = "faiss IndexFlatIP"
    faiss_missing = None if faiss is not None else "faiss"
    if faiss is None:
        peer_faiss = peer_faiss_batch = None
        check_faiss = check_faiss_batch = None
    else:
        index = faiss.IndexFlatIP(D)
        index.add(codes)

        def peer_faiss():
            return index.search(query[None, :], k)

        def peer_faiss_batch():
            return index.search(queries, k)

        def check_faiss():
            _same_topk(codes, query, ours_normalized()[0], peer_faiss()[1][0])

        def check_faiss_batch():
            ours = ours_batch()[0]
            peer = peer_faiss_batch()[1]
            for q in range(N_BATCH):
                _same_topk(codes, queries[q], ours[q], peer[q])

    out.append(
        Case(
            kernel="holographic.topk_cosine[normalized]",
            size=size,
            ours=ours_normalized,
            peer=peer_faiss,
            peer_name=faiss_name,
            items=rows,
            item_unit="rows",
            nbytes=nbytes,
            **floor,
            target=target_single,
            target_met=faster,
            check=check_faiss,
            peer_missing=faiss_missing,
        )
    )
    out.append(
        Case(
            kernel="holographic.topk_cosine[normalized]",
            size=size,
            ours=ours_normalized,
            peer=numpy_ip,
            peer_name="numpy codes@q + argpartition",
            items=rows,
            item_unit="rows",
            nbytes=nbytes,
            **floor,
            target=target_single,
            target_met=faster,
            check=check_numpy,
        )
    )
    out.append(
        Case(
            kernel="holographic.topk_cosine[normalized]",
            size=size,
            ours=ours_normalized,
            peer=stream,
            peer_name="numba prange stream sum",
            items=rows,
            item_unit="rows",
            nbytes=nbytes,
            **floor,
            target="≥ 70% of stream GB/s",
            target_met=lambda o, p: full and p is not None and p / o >= 0.7,
        )
    )
    out.append(
        Case(
            kernel="holographic.topk_cosine[cosine]",
            size=size,
            ours=ours_full,
            peer=peer_faiss,
            peer_name=faiss_name + " (on normalized codes)",
            items=rows,
            item_unit="rows",
            nbytes=nbytes,
            **floor,
            target="report only (faiss skips the row norms)",
            check=None
            if check_faiss is None
            else lambda: _same_topk(codes, query, ours_full()[0], peer_faiss()[1][0]),
            peer_missing=faiss_missing,
        )
    )
    out.append(
        Case(
            kernel="holographic.topk_cosine_batch[normalized]",
            size=size_batch,
            ours=ours_batch,
            peer=peer_faiss_batch,
            peer_name=faiss_name,
            items=rows * N_BATCH,
            item_unit="row·queries",
            nbytes=nbytes,
            **floor,
            target="report only",
            repeat=5,
            check=check_faiss_batch,
            peer_missing=faiss_missing,
        )
    )
    out.append(
        Case(
            kernel="holographic.topk_cosine_batch[normalized]",
            size=size_batch,
            ours=ours_batch,
            peer=numpy_batch,
            peer_name="numpy Q@codes.T + argpartition",
            items=rows * N_BATCH,
            item_unit="row·queries",
            nbytes=nbytes,
            **floor,
            target="report only",
            repeat=5,
            check=check_numpy_batch,
        )
    )
    return out
