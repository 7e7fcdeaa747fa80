"""Token hashes: 64-bit FNV-1a finished by SplitMix64, their salts, and the stop-word set.

What every text kernel hashes a token with (:mod:`sentient_kernels.text`,
:mod:`~sentient_kernels.text_batch`, :mod:`~sentient_kernels.lexical`): a token's
UTF-8 bytes through FNV-1a, finished with the SplitMix64 mixer (:func:`_mix64`);
salts separate the streams derived from one token hash (code bucket and sign,
prime picks, bigrams). :func:`_reduce` maps a hash to a bucket without a division,
and the stop words are an open-addressing set of hashes (:func:`build_stop_table`,
probed by :func:`_is_stop`). Deterministic, no fast-math.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.config import jit

__all__ = ["FNV_OFFSET", "FNV_PRIME", "GOLDEN", "MASK64", "build_stop_table"]

_jit = jit(fastmath=False)

_MASK64 = (1 << 64) - 1
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_GOLDEN = 0x9E3779B97F4A7C15
# Salts separate the streams derived from one token hash.
_SALT_CODE = 0xC2B2AE3D27D4EB4F
_SALT_PRIME_A = 0x165667B19E3779F9
_SALT_PRIME_B = 0xD6E8FEB86659FD93
_SALT_BIGRAM = 0xFF51AFD7ED558CCD

FNV_OFFSET, FNV_PRIME, GOLDEN, MASK64 = _FNV_OFFSET, _FNV_PRIME, _GOLDEN, _MASK64

_U_FNV_OFFSET = np.uint64(_FNV_OFFSET)
_U_FNV_PRIME = np.uint64(_FNV_PRIME)
_U_GOLDEN = np.uint64(_GOLDEN)
_U_SALT_CODE = np.uint64(_SALT_CODE)
_U_SALT_A = np.uint64(_SALT_PRIME_A)
_U_SALT_B = np.uint64(_SALT_PRIME_B)
_U_SALT_BIGRAM = np.uint64(_SALT_BIGRAM)
_U_M1 = np.uint64(0xBF58476D1CE4E5B9)
_U_M2 = np.uint64(0x94D049BB133111EB)


@_jit
def _mix64(x):
    x ^= x >> np.uint64(30)
    x *= _U_M1
    x ^= x >> np.uint64(27)
    x *= _U_M2
    return x ^ (x >> np.uint64(31))


@_jit
def _reduce(x, n):
    """Map a hash to [0, n) by its low 32 bits (multiply-shift, no division); n < 2**32."""
    return np.int64(((x & np.uint64(0xFFFFFFFF)) * np.uint64(n)) >> np.uint64(32))


@_jit
def _is_stop(h, stop_table):
    mask = np.uint64(stop_table.size - 1)
    slot = h & mask
    while True:
        v = stop_table[slot]
        if v == h:
            return True
        if v == 0:
            return False
        slot = (slot + np.uint64(1)) & mask


# Sizes reduced to a bucket by a 32-bit multiply-shift (see _reduce).
_MAX_REDUCE = (1 << 32) - 1


def build_stop_table(hashes) -> np.ndarray:
    """Build the stop-word set the kernels take: open addressing, linear probing.

    Parameters
    ----------
    hashes : iterable of int
        Token hashes (64-bit, nonzero: 0 marks an empty slot).

    Returns
    -------
    numpy.ndarray
        Read-only uint64 table whose size is a power of two (≥ 16) at most a
        quarter full.
    """
    values = sorted({int(h) for h in hashes})
    if values and (values[0] <= 0 or values[-1] > _MASK64):
        raise ValueError("hashes must be nonzero 64-bit unsigned integers")
    size = 1 << max(4, (4 * len(values) - 1).bit_length())
    table = np.zeros(size, dtype=np.uint64)
    for h in values:
        slot = h & (size - 1)
        while table[slot]:
            slot = (slot + 1) & (size - 1)
        table[slot] = h
    table.setflags(write=False)
    return table
