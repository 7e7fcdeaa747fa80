"""The oscillator bank an encoder excites: the default primes and the check of a given bank."""

from __future__ import annotations

import math

import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.store.records import MAX_PRIME
from sentient_kernels.prsc import first_primes

__all__ = ["DEFAULT_BANK_PRIMES", "check_bank"]

#: The SPEC's oscillator bank: 64 primes, 2..311.
DEFAULT_BANK_PRIMES: np.ndarray = first_primes(64)
DEFAULT_BANK_PRIMES.setflags(write=False)


def _is_prime(p: int) -> bool:
    if p < 2:
        return False
    return all(p % d for d in range(2, math.isqrt(p) + 1))


def check_bank(bank_primes: object) -> np.ndarray:
    """``bank_primes`` as a read-only int64 array of distinct primes up to
    :data:`~sentient_core.store.records.MAX_PRIME` (else ArgumentError)."""
    arr = np.asarray(bank_primes)
    if arr.ndim != 1 or arr.size == 0:
        raise ArgumentError(f"bank_primes must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentTypeError(f"bank_primes must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if np.unique(arr).size != arr.size:
        raise ArgumentError("bank_primes contains duplicates")
    if arr.max() > MAX_PRIME:
        # A trace stores its dominant primes as uint16 (sentient_core.store.records).
        raise ArgumentError(f"bank_primes must be at most {MAX_PRIME}, got {int(arr.max())}")
    bad = [int(p) for p in arr if not _is_prime(int(p))]
    if bad:
        raise ArgumentError(f"bank_primes contains non-primes: {bad[:5]}")
    arr.setflags(write=False)
    return arr
