"""Benchmark cases for :mod:`sentient_kernels.smf` (Sedenion Memory Field).

Rows
----
* ``smf.update_batch``: B = 100k sequential updates from N = 64 oscillators in
  one call (target < 1 µs per update). Amplitudes are uniform in [0, 0.3], so
  about two thirds of the oscillators are active (A > 0.1) and pay for cos/sin;
  every nonzero amplitude pays for a log. The peer is numpy vectorised over the
  64 oscillators with a Python loop over updates, run on fewer updates (the
  ratio is per update).
* ``smf.similarity``: one field against 1M stored fields vs numpy
  (``others @ s`` over the product of norms, zero-norm rows masked).
"""

from __future__ import annotations

import math

import numpy as np

from sentient_core.benchmarks import floors
from sentient_core.benchmarks.cases import Case
from sentient_kernels import smf

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = (
    "smf.similarity",
    "smf.update_batch",
)

DIM = 16
N_OSC = 64


def numpy_delta(amp: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """Δ of SPEC §1 with numpy over the oscillators."""
    n = amp.shape[0]
    if n == 0:
        return 0.1 * smf.initial()
    var = float(np.var(amp))
    total = float(amp.sum())
    active = amp > 0.1
    n_active = int(np.count_nonzero(active))
    order = float(np.abs(np.exp(1j * phase[active]).sum())) / n_active if n_active else 0.0
    sq = amp * amp
    size = float(sq.sum())
    h = 0.0
    if math.sqrt(size) >= 1e-10:
        p = sq[sq > 0.0] / size
        h = float(-(p * np.log2(p)).sum())
    d = np.empty(DIM)
    d[0] = 0.3 * order
    d[1] = max(0.0, 0.2 - 0.5 * var)
    d[2] = 0.2 * var
    d[3] = min(0.3, 0.3 * n_active / n)
    d[4] = 0.1 * var
    d[5] = min(0.3, 0.05 * total)
    d[6] = 0.15 * (order + d[3])
    d[7] = max(0.0, 0.3 - 0.1 * h)
    d[8] = 0.2 if order > 0.9 else 0.0
    d[9] = 0.05
    d[10] = 0.2 if (order > 0.7 and var < 0.1) else 0.0
    d[11] = 0.1 * order
    d[12] = 0.2 if total > 0.5 * n else 0.05
    d[13] = 0.05
    d[14] = min(0.2, 0.2 * n_active / 16)
    d[15] = 0.2 * (d[0] + d[1] + d[7])
    return d


def numpy_update_batch(s: np.ndarray, amps: np.ndarray, phases: np.ndarray, eta: float):
    s = s.copy()
    for amp, phase in zip(amps, phases, strict=True):
        s = (1.0 - eta) * s + eta * numpy_delta(amp, phase)
        s /= max(float(np.linalg.norm(s)), 1e-10)
    return s


def numpy_similarity(s: np.ndarray, others: np.ndarray) -> np.ndarray:
    ns = float(np.linalg.norm(s))
    no = np.sqrt(np.einsum("ij,ij->i", others, others))
    dots = others @ s
    ok = (no >= 1e-10) & (ns >= 1e-10)
    out = np.zeros(others.shape[0])
    np.divide(dots, no * ns, out=out, where=ok)
    return out


def _update_case(scale: float) -> Case:
    n_updates = max(100, round(100_000 * scale))
    peer_updates = max(20, n_updates // 50)
    rng = np.random.default_rng(0)
    amps = rng.uniform(0.0, 0.3, (n_updates, N_OSC))
    phases = rng.uniform(0.0, 2.0 * math.pi, (n_updates, N_OSC))
    start = smf.initial()

    def ours() -> None:
        smf.update_batch(start, amps, phases, 0.1)

    def peer() -> None:
        numpy_update_batch(start, amps[:peer_updates], phases[:peer_updates], 0.1)

    def check() -> None:
        got = smf.update_batch(start, amps[:peer_updates], phases[:peer_updates], 0.1)
        want = numpy_update_batch(start, amps[:peer_updates], phases[:peer_updates], 0.1)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12)

    return Case(
        kernel="smf.update_batch",
        size=f"{n_updates:,} updates × {N_OSC} osc",
        ours=ours,
        peer=peer,
        peer_name="numpy over oscillators, loop over updates",
        items=n_updates,
        item_unit="updates",
        peer_items=peer_updates,
        nbytes=amps.nbytes + phases.nbytes,
        target="< 1 µs/update",
        target_met=lambda ours_s, _peer_s: ours_s / n_updates < 1e-6,
        check=check,
    )


def _similarity_case(scale: float) -> Case:
    m = max(1000, round(1_000_000 * scale))
    rng = np.random.default_rng(1)
    others = rng.standard_normal((m, DIM))
    others[::1000] = 0.0
    s = smf.normalize(rng.standard_normal(DIM))
    out = np.empty(m)

    def ours() -> None:
        smf.similarity(s, others, out=out)

    def peer() -> None:
        numpy_similarity(s, others)

    def check() -> None:
        np.testing.assert_allclose(
            smf.similarity(s, others), numpy_similarity(s, others), rtol=0.0, atol=1e-14
        )

    return Case(
        kernel="smf.similarity",
        size=f"1 vs {m:,} fields",
        ours=ours,
        peer=peer,
        peer_name="numpy matvec / norms",
        items=m,
        item_unit="rows",
        nbytes=others.nbytes,
        check=check,
        floor=floors.stream_read(others),
        floor_name=f"parallel stream read of the {others.nbytes / 1e6:.0f} MB of fields",
    )


def cases(scale: float) -> list[Case]:
    return [_update_case(scale), _similarity_case(scale)]
