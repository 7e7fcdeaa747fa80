"""Prime excitations of encoded text: per-prime sums to CSR, and the strongest primes.

:func:`sentient_kernels.text.encode` accumulates, per text and per prime of the bank, a
complex sum of its tokens' phases; :func:`excitation_csr` turns those sums into
the sparse excitations the observer takes and :func:`dominant_order` ranks
them. Deterministic (no fast-math). The unchecked kernels are in
:mod:`sentient_kernels.unchecked` (``text_excitation_csr``, ``text_dominant_order``).
"""

from __future__ import annotations

import math

import numpy as np

from sentient_kernels import checks
from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit

__all__ = ["dominant_order", "excitation_csr"]

# No fast-math: reassociated float sums could differ between CPUs.
_jit = jit(fastmath=False)


@_jit
def _excitation_csr(ex_re, ex_im, gain):
    """Per-(text, prime) complex sums → CSR (offsets, bank indices, amounts, phases).

    Amounts are scaled so each text's strongest prime gets ``gain``; primes whose
    sum cancelled to below 1e-12 of the peak are dropped; phases are in [0, 2π).
    """
    n, n_bank = ex_re.shape
    offsets = np.zeros(n + 1, dtype=np.int64)
    amp = np.empty(n_bank, dtype=np.float64)
    idx = np.empty(n * n_bank, dtype=np.int64)
    amounts = np.empty(n * n_bank, dtype=np.float64)
    phases = np.empty(n * n_bank, dtype=np.float64)
    two_pi = 2.0 * math.pi
    m = 0
    for t in range(n):
        peak = 0.0
        for p in range(n_bank):
            amp[p] = math.hypot(ex_re[t, p], ex_im[t, p])
            peak = max(peak, amp[p])
        if peak > 0.0:
            for p in range(n_bank):
                if amp[p] > peak * 1e-12:
                    idx[m] = p
                    amounts[m] = gain * amp[p] / peak
                    phase = math.atan2(ex_im[t, p], ex_re[t, p])
                    if phase < 0.0:
                        phase += two_pi
                    phases[m] = 0.0 if phase >= two_pi else phase
                    m += 1
        offsets[t + 1] = m
    return offsets, idx[:m].copy(), amounts[:m].copy(), phases[:m].copy()


@_jit
def _dominant_order(amounts, primes, k):
    """Positions of the ``k`` largest amounts, largest first, ties by smaller prime."""
    m = amounts.size
    order = np.arange(m)
    for i in range(1, m):  # insertion sort: m is at most the bank size
        j = i
        while j > 0:
            a, b = order[j - 1], order[j]
            if amounts[b] > amounts[a] or (amounts[b] == amounts[a] and primes[b] < primes[a]):
                order[j - 1], order[j] = b, a
                j -= 1
            else:
                break
    return order[: min(k, m)]


@_jit
def _dominant_order_checked(amounts, primes, k):
    """:func:`_dominant_order`, or (1, empty) if the lengths differ or an amount is NaN or ±inf."""
    m = amounts.size
    if primes.size != m or checks.count_finite(amounts) != m:
        return 1, np.empty(0, dtype=np.int64)
    return 0, _dominant_order(amounts, primes, k)


# Public wrappers


def excitation_csr(
    ex_re: np.ndarray, ex_im: np.ndarray, gain: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-(text, prime) complex sums → CSR excitations.

    For each text the strongest prime (largest ``|re + i im|``) gets amount
    ``gain`` and the others ``gain · |sum| / peak``; primes whose sum is at
    most 1e-12 of the peak are dropped; phases are ``arg(sum)`` in [0, 2π).

    Parameters
    ----------
    ex_re, ex_im : numpy.ndarray
        float64 (n, N), finite (as :func:`encode` returns them).
    gain : float
        Amount of each text's strongest prime, finite and > 0.

    Returns
    -------
    offsets : numpy.ndarray
        int64 (n + 1,): text ``t`` owns entries ``offsets[t]:offsets[t + 1]``.
    indices, amounts, phases : numpy.ndarray
        int64, float64, float64 (offsets[n],): bank index (ascending within a
        text), amount and phase of each entry.
    """
    ex_re = check_array("ex_re", ex_re, dtype=np.float64, ndim=2)
    ex_im = check_array("ex_im", ex_im, dtype=np.float64, shape=ex_re.shape)
    gain = check_scalar("gain", gain, lo=0.0, lo_open=True)
    return _excitation_csr(ex_re, ex_im, gain)


def dominant_order(amounts: np.ndarray, primes: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest amounts, largest first; ties by the smaller prime.

    Parameters
    ----------
    amounts : numpy.ndarray
        float64 (m,), finite.
    primes : numpy.ndarray
        int64 (m,).
    k : int
        How many positions (≥ 0; at most m are returned).

    Returns
    -------
    numpy.ndarray
        int64 (min(k, m),) indices into ``amounts``.
    """
    if (
        amounts.__class__ is _NDARRAY
        and primes.__class__ is _NDARRAY
        and amounts.dtype == _F64
        and primes.dtype == _I64
        and amounts.strides == _VECTOR_STRIDES
        and primes.strides == _VECTOR_STRIDES
        and k.__class__ is int
        and k >= 0
    ):
        bad, order = _dominant_order_checked(amounts, primes, k)
        if not bad:
            return order
    amounts = check_array("amounts", amounts, dtype=np.float64, ndim=1)
    check_array("primes", primes, dtype=np.int64, shape=amounts.shape)
    k = check_int("k", k, lo=0)
    return _dominant_order(amounts, primes, k)


_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_VECTOR_STRIDES = (8,)


def _warmup() -> None:
    """Compile the excitation kernels with the signatures the encoder uses."""
    ex = np.zeros((1, 4))
    _offsets, _idx, amounts, _phases = _excitation_csr(ex, ex.copy(), 0.3)
    primes = np.arange(amounts.size, dtype=np.int64)
    _dominant_order(amounts, primes, 2)
    _dominant_order_checked(amounts, primes, 2)
    amounts.setflags(write=False)  # EncodedBatch hands out read-only views
    primes.setflags(write=False)
    _dominant_order(amounts, primes, 2)
    _dominant_order_checked(amounts, primes, 2)
