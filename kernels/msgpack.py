"""Decode many small msgpack arrays of unsigned integers in one pass.

Trace records store their primes as a msgpack array of small unsigned ints.
Loading a memory decodes hundreds of thousands of them; :func:`parse_uint_arrays`
reads the common encoding (what msgpack writers emit for arrays shorter than
65,536 of ints below 2**32) straight into one flat array, and reports anything
else so the caller can fall back to a full decoder (msgspec), which also
reports malformed data.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit

__all__ = ["parse_uint_arrays"]


@jit()
def _parse_uint_arrays(buf, starts, counts, out):
    """Parse consecutive msgpack arrays of unsigned ints (message r from starts[r]).

    Returns the number of values written to ``out``; -1 for anything but
    fixarray/array16 headers with positive fixint/uint8/16/32 elements that
    fill each message exactly (or more values than ``out`` holds); -2 if
    ``starts`` decreases or leaves ``buf`` (nothing parsed).
    """
    end = buf.size
    n_msg = starts.size
    for r in range(n_msg):
        stop = starts[r + 1] if r + 1 < n_msg else end
        if starts[r] < 0 or stop < starts[r] or stop > end:
            return -2
    k = 0
    for r in range(n_msg):
        i = starts[r]
        stop = starts[r + 1] if r + 1 < n_msg else end
        if i >= stop:
            return -1
        h = np.int64(buf[i])
        if 0x90 <= h <= 0x9F:
            n = h - 0x90
            i += 1
        elif h == 0xDC and i + 2 < stop:
            n = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
            i += 3
        else:
            return -1
        for _ in range(n):
            if i >= stop or k >= out.size:
                return -1
            t = np.int64(buf[i])
            if t <= 0x7F:
                v = t
                i += 1
            elif t == 0xCC and i + 1 < stop:
                v = np.int64(buf[i + 1])
                i += 2
            elif t == 0xCD and i + 2 < stop:
                v = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
                i += 3
            elif t == 0xCE and i + 4 < stop:
                v = np.int64(0)
                for j in range(1, 5):
                    v = (v << 8) | np.int64(buf[i + j])
                i += 5
            else:
                return -1
            out[k] = v
            k += 1
        if i != stop:
            return -1
        counts[r] = n
    return k


def parse_uint_arrays(
    buf: np.ndarray, starts: np.ndarray, counts: np.ndarray, out: np.ndarray
) -> int:
    """Parse consecutive msgpack arrays of unsigned ints into one flat array.

    Message ``r`` is ``buf[starts[r]:starts[r + 1]]`` (the last one runs to
    the end of ``buf``) and must be exactly one msgpack array.

    Parameters
    ----------
    buf : numpy.ndarray
        uint8 (B,), the messages back to back.
    starts : numpy.ndarray
        int64 (n,), non-decreasing, within [0, B].
    counts : numpy.ndarray
        int64 (n,), writeable; receives the length of each array.
    out : numpy.ndarray
        int64 (m,), writeable; receives the values of every array in order
        (``m = B`` always suffices: each value takes at least one byte).

    Returns
    -------
    int
        The number of values written, or -1 if some message is not in the
        simple encoding: a fixarray or array16 header followed by positive
        fixint, uint8, uint16 or uint32 elements that end exactly at the
        message's end (so also for an empty or malformed message), or if
        ``out`` is too short. Decode with a full msgpack decoder then;
        ``counts`` and ``out`` hold partial results.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    starts = check_array("starts", starts, dtype=np.int64, ndim=1)
    check_array("counts", counts, dtype=np.int64, shape=starts.shape)
    check_array("out", out, dtype=np.int64, ndim=1)
    for name, arr in (("counts", counts), ("out", out)):
        if not arr.flags.writeable:
            raise ValueError(f"{name} must be writeable")
    k = int(_parse_uint_arrays(buf, starts, counts, out))
    if k == -2:
        raise ValueError(f"starts must be non-decreasing within [0, {buf.shape[0]}] (len(buf))")
    return k


def _warmup() -> None:
    buf = np.frombuffer(bytes([0x92, 0x02, 0xCC, 0xFF, 0x90]), dtype=np.uint8)
    starts = np.array([0, 4], dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    out = np.empty(buf.size, dtype=np.int64)
    _parse_uint_arrays(buf, starts, counts, out)  # read-only buf (np.frombuffer of bytes)
    _parse_uint_arrays(buf.copy(), starts, counts, out)
