"""Physical floors for benchmark rows: the least work the hardware needs for the same bytes.

A scan cannot run faster than this machine can read the bytes it scans, so a
scan row is timed against a plain streaming read of the same array in the same
rounds (:attr:`~sentient_core.benchmarks.cases.Case.floor`); the row then says
what fraction of the limit it reaches, instead of a GB/s figure that depends
on how loaded the machine was. Measured in the same run, never a constant:
bandwidth on this shared 2-core machine moves by 2× from one hour to the next.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import prange

from sentient_kernels.config import jit

__all__ = ["copy_through", "stream_read"]


@jit(parallel=True)
def _sum_words(words):
    """Read every 8-byte word once, in parallel (the sum only keeps the reads alive)."""
    total = np.int64(0)
    for i in prange(words.shape[0]):
        total += words[i]
    return total


@jit()
def _sum_bytes(data):
    total = np.int64(0)
    for i in range(data.shape[0]):
        total += data[i]
    return total


def stream_read(array: np.ndarray) -> Callable[[], object]:
    """A callable that reads every byte of ``array`` once, on every core.

    Parameters
    ----------
    array : numpy.ndarray
        C-contiguous array (any dtype) that the measured kernel scans.

    Returns
    -------
    callable
        Zero-argument callable; its time is the bandwidth floor of a scan of
        ``array`` (``array.nbytes`` ÷ this machine's parallel read bandwidth).
    """
    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    whole = flat.size - flat.size % 8
    words = flat[:whole].view(np.int64)
    tail = flat[whole:]

    def read() -> int:
        return int(_sum_words(words)) + int(_sum_bytes(tail))

    return read


def copy_through(inputs: tuple[np.ndarray, np.ndarray], out: np.ndarray) -> Callable[[], object]:
    """A callable that reads two arrays and writes one, on one thread (``numpy.add``).

    The memory traffic of a one-thread binary batch kernel (``out = f(a, b)``
    row by row) with no arithmetic to speak of: its floor when bandwidth, not
    the arithmetic, is the limit.
    """
    a, b = inputs
    if a.shape != b.shape or a.shape != out.shape:
        raise ValueError("copy_through needs arrays of one shape")

    def run() -> object:
        return np.add(a, b, out=out)

    return run
