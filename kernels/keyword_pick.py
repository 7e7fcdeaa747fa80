"""Each text's top keywords picked from its candidate spans, laid out for one decode.

The batch kernels rank each text's distinct tokens and return the byte spans of
the best candidates (:func:`sentient_kernels.text.keywords`,
:func:`sentient_kernels.text_batch.analyse`). A keyword list drops pure numbers
(``str.isdigit``) and keeps the first ``k`` others. Decoding every span and
testing it in Python cost more than the analysis itself, so :func:`pick` walks
the spans here and writes the kept words of all texts into one buffer — words
separated by ``0x00``, texts ended by ``0x01`` — which Python decodes and splits
in two calls.

Only what the bytes decide is decided here: an ASCII span is a number exactly
when it is all ``0``–``9``. A text whose walk meets a span with a byte ≥ 0x80
(``str.isdigit`` knows Unicode digits) or < 0x02 (a separator), or an empty
span, before it has ``k`` words is left to the caller (status 1), and so is a text whose candidates
ran out with fewer than ``k`` words while all ``n_cand`` slots were used (status
2: the caller ranks the whole text again).
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit

__all__ = ["CALLER_RANKS", "CALLER_TESTS", "KEPT", "pick", "pick_unchecked"]

_jit = jit(fastmath=False)

KEPT = 0
"""Status of a text whose words are in the buffer."""
CALLER_TESTS = 1
"""Status of a text with a span the bytes cannot judge (its words are not in the buffer)."""
CALLER_RANKS = 2
"""Status of a text left with fewer than ``k`` words after ``n_cand`` candidates."""


@_jit
def _pick(buf, cand_start, cand_end, n_used, k, out, status):
    """Write the kept words into ``out`` and each text's status; return the bytes used."""
    n, n_cand = cand_start.shape
    pos = 0
    for t in range(n):
        got = 0
        state = KEPT
        mark = pos
        for c in range(n_used[t]):
            if got == k:
                break
            a, b = cand_start[t, c], cand_end[t, c]
            if b <= a:  # an empty word would not survive the split
                state = CALLER_TESTS
                break
            number = True
            for i in range(a, b):
                x = buf[i]
                if x >= 0x80 or x < 0x02:
                    state = CALLER_TESTS
                    break
                if x < 0x30 or x > 0x39:
                    number = False
            if state != KEPT:
                break
            if number:
                continue
            if got:
                out[pos] = 0
                pos += 1
            out[pos : pos + b - a] = buf[a:b]
            pos += b - a
            got += 1
        if state == KEPT and got < k and n_used[t] == n_cand:
            state = CALLER_RANKS
        if state != KEPT:
            pos = mark  # the caller finds this text's words itself
        status[t] = state
        out[pos] = 1
        pos += 1
    return pos


def pick_unchecked(
    buf: np.ndarray, cand_start: np.ndarray, cand_end: np.ndarray, n_used: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pick` without the checks (spans from the batch kernels, valid by construction)."""
    n, n_cand = cand_start.shape
    used = np.arange(n_cand) < n_used[:, None]
    room = int(np.where(used, cand_end - cand_start, 0).sum()) + n * (n_cand + 1)
    out = np.empty(room, dtype=np.uint8)
    status = np.empty(n, dtype=np.int8)
    end = _pick(buf, cand_start, cand_end, n_used, k, out, status)
    return out[:end], status


def pick(
    buf: np.ndarray, cand_start: np.ndarray, cand_end: np.ndarray, n_used: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` candidates of each text that are not ASCII numbers, in one buffer.

    Parameters
    ----------
    buf : numpy.ndarray
        uint8: the texts' bytes.
    cand_start, cand_end : numpy.ndarray
        int64 (n, n_cand): byte spans of each text's candidates, best first.
    n_used : numpy.ndarray
        int64 (n,): candidates used per text (≤ n_cand).
    k : int
        Words wanted per text (≥ 0).

    Returns
    -------
    words : numpy.ndarray
        uint8: per text its kept words joined by ``0x00``, then ``0x01``.
    status : numpy.ndarray
        int8 (n,): :data:`KEPT`, :data:`CALLER_TESTS` or :data:`CALLER_RANKS`
        (then the text's words are not in ``words``: its part is empty).

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    cand_start = check_array("cand_start", cand_start, dtype=np.int64, ndim=2)
    cand_end = check_array("cand_end", cand_end, dtype=np.int64, ndim=2)
    n_used = check_array("n_used", n_used, dtype=np.int64, ndim=1)
    k = check_int("k", k, lo=0)
    n, n_cand = cand_start.shape
    if cand_end.shape != (n, n_cand) or n_used.shape != (n,):
        raise ValueError("cand_start, cand_end and n_used must describe the same texts")
    if n_used.size and (n_used.min() < 0 or n_used.max() > n_cand):
        raise ValueError(f"n_used must be in [0, {n_cand}]")
    used = np.arange(n_cand) < n_used[:, None]
    a, b = cand_start[used], cand_end[used]
    if a.size and (a.min() < 0 or (b < a).any() or b.max() > buf.size):
        raise ValueError("candidate spans must lie within buf")
    return pick_unchecked(buf, cand_start, cand_end, n_used, k)


def _warmup() -> None:
    """Compile :func:`_pick` with the signature the token encoder uses."""
    buf = np.frombuffer(b"tides 42 moon", dtype=np.uint8)
    spans = np.array([[0, 6, 9]], dtype=np.int64)
    pick(buf, spans, np.array([[5, 8, 13]], dtype=np.int64), np.array([3], dtype=np.int64), 2)
