"""Lexical terms of texts: hashed content tokens with their counts, and their storage form.

The terms of a text are its content tokens exactly as the token encoder sees
them (:mod:`sentient_kernels.text`: lowercased UTF-8, runs of word characters of
``min_chars``..``max_chars`` characters, stop words dropped), each identified
by its 64-bit token hash, with the number of times it occurs (its term
frequency, saturated at :data:`TF_MAX`) and the text's length in tokens
(:func:`term_counts`). :func:`pack_terms`/:func:`unpack_terms` give the
word-aligned byte form a store keeps per text. Inverted-index segments over
terms are in :mod:`sentient_kernels.segments`, BM25 in :mod:`sentient_kernels.bm25`.

Exactness: terms are 64-bit hashes, so two different tokens share a term only
on a 64-bit hash collision (about n²/2⁶⁵ for n distinct tokens).
"""

from __future__ import annotations

import codecs
import sys
from typing import NamedTuple

import numpy as np

from sentient_kernels.checks import check_array, check_int
from sentient_kernels.config import jit
from sentient_kernels.text import _scan_text, _token_buffers

__all__ = ["TF_MAX", "TermCounts", "pack_terms", "term_counts", "unpack_terms"]

TF_MAX = 65535
"""Largest stored term frequency (uint16); higher counts saturate here."""

_BIG_ENDIAN = sys.byteorder == "big"

# Integer work only: no fast-math needed.
_jit = jit(fastmath=False)


class TermCounts(NamedTuple):
    """The terms of a batch of texts (CSR: text ``t`` owns ``offsets[t]:offsets[t + 1]``).

    Attributes
    ----------
    offsets : (n + 1,) int64
    terms : (P,) uint64
        Distinct term hashes of each text, ascending within the text.
    tfs : (P,) uint16
        Occurrences of each term in its text (>= 1, saturated at :data:`TF_MAX`).
    lengths : (n,) int64
        Content tokens of each text (its BM25 document length; not saturated).
    """

    offsets: np.ndarray
    terms: np.ndarray
    tfs: np.ndarray
    lengths: np.ndarray


# --------------------------------------------------------------------- kernels


@_jit
def _term_counts(
    buf, offsets, word_cp, stop_table, min_chars, max_chars, out_offsets, out_terms, out_tfs, lens
):
    """Distinct sorted term hashes and their counts per text; returns the postings written.

    ``out_terms``/``out_tfs`` need room for every token of the batch (at most
    ``Σ (len_t // 2 + 1)``); ``out_offsets`` (n + 1,) and ``lens`` (n,) are written.
    """
    n = offsets.size - 1
    bufs = _token_buffers(offsets)
    toks = bufs[0]
    pos = 0
    out_offsets[0] = 0
    for t in range(n):
        m = _scan_text(buf, offsets, t, word_cp, stop_table, min_chars, max_chars, bufs)
        lens[t] = m
        if m > 0:
            srt = np.sort(toks[:m])
            i = 0
            while i < m:
                h = srt[i]
                j = i + 1
                while j < m and srt[j] == h:
                    j += 1
                out_terms[pos] = h
                out_tfs[pos] = min(j - i, TF_MAX)
                pos += 1
                i = j
        out_offsets[t + 1] = pos
    return pos


@_jit
def _pack(offsets, terms, tfs, lengths, words, halves, out_starts):
    """Serialise each text's terms (layout in :func:`pack_terms`) into ``words``/``halves``.

    ``words`` and ``halves`` are uint64 and uint16 views of one buffer.
    """
    pos = 0  # in 8-byte words
    n = offsets.size - 1
    for t in range(n):
        out_starts[t] = 8 * pos
        lo = offsets[t]
        m = offsets[t + 1] - lo
        words[pos] = np.uint64(m) | (np.uint64(min(lengths[t], 0xFFFFFFFF)) << np.uint64(32))
        pos += 1
        for p in range(m):
            words[pos + p] = terms[lo + p]
        pos += m
        h0 = 4 * pos
        padded = (m + 3) // 4
        for p in range(m):
            halves[h0 + p] = tfs[lo + p]
        for p in range(m, 4 * padded):
            halves[h0 + p] = 0
        pos += padded
    out_starts[n] = 8 * pos


@_jit
def _unpack(words, halves, starts, out_offsets, out_terms, out_tfs, out_lengths):
    """Parse serialised terms; returns the postings read, or -1 - t if value ``t`` is malformed."""
    n = starts.size - 1
    k = np.int64(0)
    out_offsets[0] = 0
    for t in range(n):
        if starts[t] % 8 != 0 or starts[t + 1] % 8 != 0:
            return -1 - t
        pos = starts[t] // 8
        size = starts[t + 1] // 8 - pos
        if size < 1:
            return -1 - t
        head = words[pos]
        m = np.int64(head & np.uint64(0xFFFFFFFF))
        length = np.int64(head >> np.uint64(32))
        if size != 1 + m + (m + 3) // 4 or k + m > out_terms.size:
            return -1 - t
        pos += 1
        for p in range(m):
            h = words[pos + p]
            if p > 0 and h <= out_terms[k + p - 1]:
                return -1 - t
            out_terms[k + p] = h
        h0 = 4 * (pos + m)
        total = np.int64(0)
        for p in range(m):
            tf = halves[h0 + p]
            if tf == 0:
                return -1 - t
            out_tfs[k + p] = tf
            total += np.int64(tf)
        if length < total and length < 0xFFFFFFFF:
            return -1 - t  # fewer tokens than counted occurrences
        k += m
        out_offsets[t + 1] = k
        out_lengths[t] = length
    return k


# --------------------------------------------------------------------- wrappers


def _check_text_batch(buf, offsets, word_cp, stop_table, min_chars, max_chars):
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    offsets = check_array("offsets", offsets, dtype=np.int64, ndim=1, min_rows=1)
    if offsets[0] < 0 or offsets[-1] > buf.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError(
            f"offsets must be non-decreasing within [0, {buf.shape[0]}] (the length of buf)"
        )
    # The scanner reads a whole UTF-8 sequence at each lead byte: a truncated
    # sequence, or a text starting inside a character, would read past buf.
    try:
        codecs.utf_8_decode(buf, "surrogatepass", True)
    except UnicodeDecodeError as exc:
        raise ValueError(f"buf must be UTF-8: {exc.reason} at byte {exc.start}") from None
    inside = offsets[offsets < buf.shape[0]]
    if ((buf[inside] & 0xC0) == 0x80).any():
        raise ValueError("offsets must fall on character boundaries of buf (UTF-8)")
    word_cp = check_array("word_cp", word_cp, dtype=np.bool_, ndim=1, min_rows=128)
    stop_table = check_array("stop_table", stop_table, dtype=np.uint64, ndim=1, min_rows=1)
    size = stop_table.shape[0]
    if size & (size - 1) or (stop_table != 0).all():
        raise ValueError("stop_table must have a power-of-two size and at least one empty (0) slot")
    min_chars = check_int("min_chars", min_chars, lo=1)
    max_chars = check_int("max_chars", max_chars, lo=min_chars)
    return buf, offsets, word_cp, stop_table, min_chars, max_chars


def count_terms(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
) -> TermCounts:
    """Unchecked :func:`term_counts` for callers whose inputs are valid by construction."""
    n = offsets.shape[0] - 1
    cap = int(buf.shape[0]) // 2 + n + 1
    out_offsets = np.empty(n + 1, dtype=np.int64)
    terms = np.empty(cap, dtype=np.uint64)
    tfs = np.empty(cap, dtype=np.uint16)
    lengths = np.empty(n, dtype=np.int64)
    used = _term_counts(
        buf, offsets, word_cp, stop_table, min_chars, max_chars, out_offsets, terms, tfs, lengths
    )
    return TermCounts(out_offsets, terms[:used].copy(), tfs[:used].copy(), lengths)


def term_counts(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int = 2,
    max_chars: int = 40,
) -> TermCounts:
    """The terms of every text of a batch, with their frequencies and the text lengths.

    Parameters
    ----------
    buf : (B,) uint8
        The lowercased UTF-8 bytes of all texts, concatenated.
    offsets : (n + 1,) int64
        Text ``t`` is ``buf[offsets[t]:offsets[t + 1]]`` (non-decreasing, on
        character boundaries).
    word_cp : (C,) bool, C >= 128
        ``word_cp[cp]``: code point ``cp`` is a word character (beyond the
        table: not).
    stop_table : (S,) uint64
        Open-addressing set of stop-word hashes (power-of-two size, 0 = empty
        slot), as the token encoder builds it.
    min_chars, max_chars : int
        Token length bounds in characters.

    Returns
    -------
    TermCounts
        Per text: distinct term hashes ascending, their counts, and the number
        of content tokens.
    """
    checked = _check_text_batch(buf, offsets, word_cp, stop_table, min_chars, max_chars)
    return count_terms(*checked)


def pack_terms(counts: TermCounts) -> tuple[np.ndarray, np.ndarray]:
    """Serialise the terms of each text (the value the store keeps per trace).

    Layout of text ``t``, little-endian, in 8-byte words: one word holding the
    number of terms ``m`` (low 32 bits) and the length in tokens (high 32
    bits, saturated at 2**32 − 1); ``m`` words of term hashes (ascending);
    ``m`` u16 term frequencies, zero-padded to a whole word. So every value is
    ``8 (1 + m + ⌈m/4⌉)`` bytes and values laid end to end stay word-aligned.

    Returns
    -------
    buf : (B,) uint8
    starts : (n + 1,) int64
        Text ``t`` is ``buf[starts[t]:starts[t + 1]]``.
    """
    offsets = check_array("counts.offsets", counts.offsets, dtype=np.int64, ndim=1, min_rows=1)
    terms = check_array("counts.terms", counts.terms, dtype=np.uint64, ndim=1)
    tfs = check_array("counts.tfs", counts.tfs, dtype=np.uint16, shape=(terms.shape[0],))
    n = offsets.shape[0] - 1
    lengths = check_array("counts.lengths", counts.lengths, dtype=np.int64, shape=(n,))
    if offsets[0] != 0 or offsets[-1] != terms.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError("counts.offsets must rise from 0 to len(counts.terms)")
    if lengths.size and lengths.min() < 0:
        raise ValueError("counts.lengths must be >= 0")
    sizes = np.diff(offsets)
    n_words = int((1 + sizes + (sizes + 3) // 4).sum())
    words = np.empty(n_words, dtype=np.uint64)
    starts = np.empty(n + 1, dtype=np.int64)
    _pack(offsets, terms, tfs, lengths, words, words.view(np.uint16), starts)
    if words.dtype.byteorder == ">" or (words.dtype.byteorder == "=" and _BIG_ENDIAN):
        words = words.byteswap()  # pragma: no cover - big-endian machines
    return words.view(np.uint8), starts


def unpack_terms(buf: np.ndarray, starts: np.ndarray) -> TermCounts:
    """Parse what :func:`pack_terms` wrote (checked: sizes, ascending terms, tfs >= 1).

    Parameters
    ----------
    buf : (B,) uint8
        Values laid end to end (each a whole number of 8-byte words).
    starts : (n + 1,) int64
        Value ``t`` is ``buf[starts[t]:starts[t + 1]]`` (non-decreasing, within ``buf``).

    Raises
    ------
    ValueError
        A value is malformed (the message names it).
    """
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    starts = check_array("starts", starts, dtype=np.int64, ndim=1, min_rows=1)
    if starts[0] < 0 or starts[-1] > buf.shape[0] or (np.diff(starts) < 0).any():
        raise ValueError(f"starts must be non-decreasing within [0, {buf.shape[0]}]")
    if buf.shape[0] % 8:
        raise ValueError("buf must hold whole 8-byte words (values as pack_terms writes them)")
    if buf.ctypes.data % 8:
        buf = buf.copy()  # word views need an aligned buffer
    words = buf.view("<u8").astype(np.uint64, copy=False)
    halves = buf.view("<u2").astype(np.uint16, copy=False)
    n = starts.shape[0] - 1
    cap = int(buf.shape[0]) // 8
    offsets = np.empty(n + 1, dtype=np.int64)
    terms = np.empty(cap, dtype=np.uint64)
    tfs = np.empty(cap, dtype=np.uint16)
    lengths = np.empty(n, dtype=np.int64)
    k = _unpack(words, halves, starts, offsets, terms, tfs, lengths)
    if k < 0:
        raise ValueError(f"value {-1 - k} is not a serialised term list")
    return TermCounts(offsets, terms[:k].copy(), tfs[:k].copy(), lengths)


def _warmup() -> None:
    word_cp = np.zeros(128, dtype=np.bool_)
    word_cp[ord("a") : ord("z") + 1] = True
    stop = np.zeros(16, dtype=np.uint64)
    stop.setflags(write=False)  # the encoder's stop table is frozen (its own Numba type)
    buf = np.frombuffer(b"tides follow the moon tides", dtype=np.uint8)
    offsets = np.array([0, 12, buf.size], dtype=np.int64)
    counts = count_terms(buf, offsets, word_cp, stop, 2, 40)
    buf, starts = pack_terms(counts)
    # Stored values arrive as read-only bytes (np.frombuffer): their own Numba type.
    unpack_terms(np.frombuffer(buf.tobytes(), dtype=np.uint8), starts)
