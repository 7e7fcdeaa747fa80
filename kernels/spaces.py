"""Whitespace runs collapsed, over the UTF-8 bytes of a batch of texts.

A text's content digest (:mod:`sentient_core.store.content`) hashes
``" ".join(text.split())``: its words separated by single spaces. Python
builds that through a list of word strings (~20 µs for a 2,000-character
chunk); :func:`collapse_spaces` writes the same bytes for a whole batch in one
pass. Whitespace is what ``str.split()`` splits on, given as a table of code
points (``space_cp[cp]``; beyond the table: not whitespace), which the caller
builds from ``str.isspace`` (the same definition).
"""

from __future__ import annotations

import codecs

import numpy as np

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit

__all__ = ["collapse_spaces"]


@jit(fastmath=False)
def _collapse(buf, offsets, space_cp, out, out_offsets):
    """Each text's words joined by single spaces into ``out``; its span in ``out_offsets``."""
    n_table = space_cp.size
    pos = np.int64(0)
    out_offsets[0] = 0
    for t in range(offsets.size - 1):
        lo, hi = offsets[t], offsets[t + 1]
        start = pos
        gap = np.int64(0)  # 1: whitespace seen since the last word character
        i = lo
        while i < hi:
            b = buf[i]
            if b < 0x80:
                # ASCII, branch-free: a space goes out before a word byte that follows a
                # gap (and is overwritten when nothing follows), the byte unless it is
                # whitespace.
                space = np.int64(space_cp[b])
                out[pos] = 0x20
                pos += gap & (1 - space) & np.int64(pos > start)
                out[pos] = b
                pos += 1 - space
                gap = space
                i += 1
                continue
            if b < 0xE0:
                cp = ((np.int64(b) & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F)
                width = 2
            elif b < 0xF0:
                cp = (
                    ((np.int64(b) & 0x0F) << 12)
                    | ((np.int64(buf[i + 1]) & 0x3F) << 6)
                    | (np.int64(buf[i + 2]) & 0x3F)
                )
                width = 3
            else:
                cp = np.int64(-1)  # 4-byte sequences are never whitespace
                width = 4
            if cp >= 0 and cp < n_table and space_cp[cp]:
                gap = np.int64(1)
            else:
                if gap and pos > start:
                    out[pos] = 0x20
                    pos += 1
                gap = np.int64(0)
                for k in range(width):
                    out[pos] = buf[i + k]
                    pos += 1
            i += width
        out_offsets[t + 1] = pos


def collapse_spaces_unchecked(
    buf: np.ndarray, offsets: np.ndarray, space_cp: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`collapse_spaces` without the checks (arguments valid by construction)."""
    out = np.empty(buf.shape[0] + 1, dtype=np.uint8)  # + 1: the tentative space
    out_offsets = np.empty(offsets.shape[0], dtype=np.int64)
    _collapse(buf, offsets, space_cp, out, out_offsets)
    return out[: out_offsets[-1]], out_offsets


def collapse_spaces(
    buf: np.ndarray, offsets: np.ndarray, space_cp: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The words of each text joined by single spaces (``" ".join(text.split())``, as UTF-8).

    Parameters
    ----------
    buf : numpy.ndarray
        uint8 (B,): the UTF-8 (``surrogatepass``) bytes of every text, concatenated.
    offsets : numpy.ndarray
        int64 (n + 1,): text ``t`` is ``buf[offsets[t]:offsets[t + 1]]``
        (non-decreasing, within ``buf``, on character boundaries).
    space_cp : numpy.ndarray
        bool (C,), C ≥ 128: ``space_cp[cp]`` marks whitespace code points
        (beyond the table: not whitespace).

    Returns
    -------
    out : numpy.ndarray
        uint8: the collapsed texts, concatenated.
    out_offsets : numpy.ndarray
        int64 (n + 1,): text ``t`` is ``out[out_offsets[t]:out_offsets[t + 1]]``.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    offsets = check_array("offsets", offsets, dtype=np.int64, ndim=1, min_rows=1)
    if offsets[0] < 0 or offsets[-1] > buf.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError(
            f"offsets must be non-decreasing within [0, {buf.shape[0]}] (the length of buf)"
        )
    # A sequence cut by the end of buf would make the kernel read past it.
    try:
        codecs.utf_8_decode(buf.data, "surrogatepass", True)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"buf must be UTF-8 (surrogatepass): {exc.reason} at byte {exc.start}"
        ) from None
    inside = offsets[offsets < buf.shape[0]]
    if ((buf[inside] & 0xC0) == 0x80).any():
        raise ValueError("offsets must fall on character boundaries of buf (UTF-8)")
    space_cp = check_array("space_cp", space_cp, dtype=np.bool_, ndim=1, min_rows=128)
    return collapse_spaces_unchecked(buf, offsets, space_cp)


def _warmup() -> None:
    """Compile :func:`_collapse` with the signature content digests use."""
    space = np.zeros(128, dtype=np.bool_)
    space[[9, 10, 32]] = True
    space.setflags(write=False)  # the content module's table is frozen (its own Numba type)
    buf = np.frombuffer(b" tides  follow\tthe moon ", dtype=np.uint8)
    offsets = np.array([0, buf.size], dtype=np.int64)
    collapse_spaces_unchecked(buf, offsets, space)
    collapse_spaces(buf, offsets, space)
