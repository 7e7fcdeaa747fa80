"""Benchmark cases for :mod:`sentient_kernels.sedenion` (batched products).

Rows
----
``sedenion.mul_batch`` on 1M random pairs (target ≥ 25M products/s and ≥ 30×
the best numpy) against three numpy formulations of the same product, each
chunked so its temporaries stay in cache and written into a preallocated output:

* einsum over the 16×16×16 structure tensor, in its fastest order
  (``a ⊗ T`` then contract with ``b``; the one-shot three-operand einsum is ~5×
  slower);
* outer product ``a ⊗ b`` (N×256) times the 256×16 structure matrix (BLAS);
* left-multiplication matrices ``L(a)`` (gathered with ``np.take``, signed)
  times ``b`` as a batched matmul — the fastest numpy form we found.

In the outer+matmul row our time is inflated (~2×): OpenBLAS worker threads keep
spinning for ~0.1 s after each peer call and take the cores our next call needs.
The other rows time the same call undisturbed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sentient_core.benchmarks import floors
from sentient_core.benchmarks.cases import Case
from sentient_kernels import sedenion

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = ("sedenion.mul_batch",)

DIM = 16
TARGET_RATE = 25e6
TARGET_RATIO = 30.0


def numpy_einsum(tensor: np.ndarray, chunk: int = 4096) -> Callable:
    def product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        tmp = np.empty((chunk, DIM, DIM))
        for s in range(0, a.shape[0], chunk):
            m = min(chunk, a.shape[0] - s)
            np.einsum("ni,ijk->njk", a[s : s + m], tensor, out=tmp[:m])
            np.einsum("njk,nj->nk", tmp[:m], b[s : s + m], out=out[s : s + m])

    return product


def numpy_outer_matmul(matrix: np.ndarray, chunk: int = 32768) -> Callable:
    def product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        outer = np.empty((chunk, DIM, DIM))
        for s in range(0, a.shape[0], chunk):
            m = min(chunk, a.shape[0] - s)
            np.multiply(a[s : s + m, :, None], b[s : s + m, None, :], out=outer[:m])
            np.matmul(outer[:m].reshape(m, DIM * DIM), matrix, out=out[s : s + m])

    return product


def numpy_left_matrix(chunk: int = 1024) -> Callable:
    # (ab)_k = Σ_j L[k, j] b_j with L[k, j] = SIGN[k^j, j] a_(k^j).
    k, j = np.meshgrid(np.arange(DIM), np.arange(DIM), indexing="ij")
    index = (k ^ j).ravel()
    signs = sedenion.SIGN[k ^ j, j].astype(np.float64)

    def product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        left = np.empty((chunk, DIM, DIM))
        for s in range(0, a.shape[0], chunk):
            m = min(chunk, a.shape[0] - s)
            np.take(a[s : s + m], index, axis=1, out=left[:m].reshape(m, DIM * DIM))
            left[:m] *= signs
            np.matmul(left[:m], b[s : s + m, :, None], out=out[s : s + m, :, None])

    return product


def cases(scale: float) -> list[Case]:
    n = max(1000, round(1_000_000 * scale))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, DIM))
    b = rng.standard_normal((n, DIM))
    ours_out = np.empty_like(a)
    peer_out = np.empty_like(a)
    # The product reads a and b and writes out, row by row on one thread: its
    # floor is the same traffic with no arithmetic (a + b -> out).
    floor = floors.copy_through((a, b), np.empty_like(a))

    def ours() -> None:
        sedenion.mul_batch(a, b, out=ours_out)

    def met(ours_s: float, peer_s: float | None) -> bool:
        fast = n / ours_s >= TARGET_RATE
        return fast and peer_s is not None and peer_s / ours_s >= TARGET_RATIO

    peers = [
        ("numpy einsum (16×16×16 tensor)", numpy_einsum(sedenion.structure_tensor())),
        ("numpy outer+matmul (256×16)", numpy_outer_matmul(sedenion.structure_matrix())),
        ("numpy L(a)·b (take + batched matmul)", numpy_left_matrix()),
    ]
    out = []
    for name, product in peers:

        def peer(product=product) -> None:
            product(a, b, peer_out)

        def check(product=product) -> None:
            rows = min(n, 4096)
            want = sedenion.mul_batch(a[:rows], b[:rows])
            got = np.empty_like(want)
            product(a[:rows], b[:rows], got)
            np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)

        out.append(
            Case(
                kernel="sedenion.mul_batch",
                size=f"{n:,} pairs",
                ours=ours,
                peer=peer,
                peer_name=name,
                items=n,
                item_unit="products",
                nbytes=2 * a.nbytes,
                floor=floor,
                floor_name="numpy a + b -> out on one thread (same bytes read and written)",
                target="≥ 25M products/s and ≥ 30× peer",
                target_met=met,
                check=check,
            )
        )
    return out
