"""Text kernels: tokenise, hash, count and accumulate features over UTF-8 bytes.

The numeric heart of :mod:`sentient_core.encoder` (the token encoder and the
batched keyword ranking). Pure functions over arrays: the caller passes the
lowercased UTF-8 bytes of a batch, the ``\\w`` code-point table and the
stop-word hash table. Deterministic: no fast-math, no parallel reductions, so
codes are bit-identical across processes.

Hashing: 64-bit FNV-1a over a token's UTF-8 bytes, finished with the
SplitMix64 mixer (``_mix64``); salts separate the streams derived from one
token hash (code bucket and sign, prime picks, bigrams).

Public, checked functions: :func:`encode` (codes, token counts and per-prime
excitation sums of a batch), :func:`keywords` (top tokens of each text),
and the per-prime sums it returns go on to :mod:`sentient_kernels.excitation`. Their
kernels, without the checks, are in :mod:`sentient_kernels.unchecked` (``text_*``).

The batch layout shared by :func:`encode` and :func:`keywords`:

``buf`` : uint8 (B,)
    The lowercased UTF-8 (``surrogatepass``) bytes of every text, concatenated.
``offsets`` : int64 (n + 1,)
    Text ``t`` is ``buf[offsets[t]:offsets[t + 1]]``; non-decreasing, within
    ``buf``, on character boundaries.
``word_cp`` : bool (C,), C ≥ 128
    ``word_cp[cp]`` marks the code points that make up tokens (beyond the table:
    not a token character).
``stop_table`` : uint64 (T,)
    Open-addressing set of stop-word token hashes (see :func:`build_stop_table`).
``min_chars``, ``max_chars`` : int
    Tokens of other lengths (in code points) are dropped.
"""

from __future__ import annotations

import codecs
import math

import numpy as np

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit

__all__ = [
    "FNV_OFFSET",
    "FNV_PRIME",
    "GOLDEN",
    "MASK64",
    "PHASE_BITS",
    "build_stop_table",
    "dominant_order",
    "encode",
    "excitation_csr",
    "keywords",
]

# The per-prime post-processing of encode's sums lives in sentient_kernels.excitation,
# the token hashes and the stop-word set in sentient_kernels.token_hash; re-exported
# here, where the encoder (and the other text kernels) have always found them.
from sentient_kernels.excitation import dominant_order, excitation_csr
from sentient_kernels.token_hash import (
    _MAX_REDUCE,
    _U_FNV_OFFSET,
    _U_FNV_PRIME,
    _U_GOLDEN,
    _U_SALT_A,
    _U_SALT_B,
    _U_SALT_BIGRAM,
    _U_SALT_CODE,
    FNV_OFFSET,
    FNV_PRIME,
    GOLDEN,
    MASK64,
    _is_stop,
    _mix64,
    _reduce,
    build_stop_table,
)

# 1 + ln(tf) for small counts, computed once so the kernel rarely calls log.
_TF_TABLE = np.array([0.0] + [1.0 + math.log(c) for c in range(1, 4096)], dtype=np.float64)
_TF_TABLE.setflags(write=False)

# Token phases are quantised to 2π/4096 and read from tables (no sin/cos per token).
_PHASE_BITS = 12
_PHASE_COS = np.cos(np.arange(1 << _PHASE_BITS) * (2.0 * math.pi / (1 << _PHASE_BITS)))
_PHASE_SIN = np.sin(np.arange(1 << _PHASE_BITS) * (2.0 * math.pi / (1 << _PHASE_BITS)))
_PHASE_COS.setflags(write=False)
_PHASE_SIN.setflags(write=False)

# ---------------------------------------------------------------------------
# Kernel (pure function over arrays; deterministic: no fastmath, no parallel reductions)
# ---------------------------------------------------------------------------
# _TF_TABLE and _PHASE_* are compiled in as constants (defined in this module,
# so editing them invalidates Numba's cache); the stop-word table and token length
# bounds come from ingest.keywords and are therefore passed as arguments.

# No fast-math: reassociated float sums could differ between CPUs.
_jit = jit(fastmath=False)

_U_PHASE_SHIFT = np.uint64(64 - _PHASE_BITS)


@_jit
def _tf_weight(count):
    if count < _TF_TABLE.size:
        return _TF_TABLE[count]
    return 1.0 + math.log(count)


@_jit
def _add_sorted_features(hashes, scale, acc, code_dim):
    """acc[bucket(h)] += sign(h) · scale · (1 + ln tf) for each distinct h (sorted input)."""
    m = hashes.size
    i = 0
    while i < m:
        h = hashes[i]
        j = i + 1
        while j < m and hashes[j] == h:
            j += 1
        mixed = _mix64(h ^ _U_SALT_CODE)
        bucket = _reduce(mixed, code_dim)
        w = scale * _tf_weight(j - i)
        if mixed >> np.uint64(63):
            acc[bucket] -= w
        else:
            acc[bucket] += w
        i = j


@_jit
def _excite_sorted(hashes, n_bank, k_primes, ex_re, ex_im):
    """Sum (1 + ln tf) · e^{iθ} onto the primes each distinct token picks (sorted input)."""
    m = hashes.size
    i = 0
    while i < m:
        h = hashes[i]
        j = i + 1
        while j < m and hashes[j] == h:
            j += 1
        w = _tf_weight(j - i)
        ma = _mix64(h ^ _U_SALT_A)
        first = _reduce(ma, n_bank)
        q = np.int64(ma >> _U_PHASE_SHIFT)
        ex_re[first] += w * _PHASE_COS[q]
        ex_im[first] += w * _PHASE_SIN[q]
        if k_primes > 1 and n_bank > 1:
            mb = _mix64(h ^ _U_SALT_B)
            # A second, different prime: offset 1..n_bank-1 from the first.
            second = (first + 1 + _reduce(mb, n_bank - 1)) % n_bank
            q = np.int64(mb >> _U_PHASE_SHIFT)
            ex_re[second] += w * _PHASE_COS[q]
            ex_im[second] += w * _PHASE_SIN[q]
        i = j


@_jit
def _scan_tokens(buf, lo, hi, word_cp, stop_table, min_chars, max_chars, hashes, starts, ends):
    """Content tokens of ``buf[lo:hi]`` (lowercased UTF-8), in order; returns how many.

    A token is a run of code points with ``word_cp[cp]`` (beyond the table: not
    word) of ``min_chars``..``max_chars`` characters whose hash is not a stop
    word. Writes each token's hash and byte span ``[starts[m], ends[m])``.
    """
    n_table = word_cp.size
    m = 0
    in_tok = False
    h = _U_FNV_OFFSET
    n_bytes = 0
    n_chars = 0
    tok_start = lo
    i = lo
    while i <= hi:
        width = 1
        if i == hi:
            is_word = False
        else:
            b = np.int64(buf[i])
            if b < 0x80:
                is_word = word_cp[b]
            else:
                if b < 0xE0:
                    cp = ((b & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F)
                    width = 2
                elif b < 0xF0:
                    cp = (
                        ((b & 0x0F) << 12)
                        | ((np.int64(buf[i + 1]) & 0x3F) << 6)
                        | (np.int64(buf[i + 2]) & 0x3F)
                    )
                    width = 3
                else:
                    cp = (
                        ((b & 0x07) << 18)
                        | ((np.int64(buf[i + 1]) & 0x3F) << 12)
                        | ((np.int64(buf[i + 2]) & 0x3F) << 6)
                        | (np.int64(buf[i + 3]) & 0x3F)
                    )
                    width = 4
                is_word = cp < n_table and word_cp[cp]
        if is_word:
            if not in_tok:
                in_tok = True
                h = _U_FNV_OFFSET
                n_bytes = 0
                n_chars = 0
                tok_start = i
            for k in range(width):
                h = (h ^ np.uint64(buf[i + k])) * _U_FNV_PRIME
            n_bytes += width
            n_chars += 1
            i += width
            # The rest of a run of ASCII word bytes in a tight loop (most of any text).
            while i < hi:
                c = buf[i]
                if c >= 0x80 or not word_cp[c]:
                    break
                h = (h ^ np.uint64(c)) * _U_FNV_PRIME
                n_bytes += 1
                n_chars += 1
                i += 1
            continue
        elif in_tok:
            in_tok = False
            if min_chars <= n_chars <= max_chars:
                hf = _mix64(h ^ (np.uint64(n_bytes) * _U_GOLDEN))
                if not _is_stop(hf, stop_table):
                    hashes[m] = hf
                    starts[m] = tok_start
                    ends[m] = i
                    m += 1
        i += width
    return m


@_jit
def _token_buffers(offsets):
    """(hashes, starts, ends) with room for the tokens of the batch's longest text.

    A token and the separator after it take at least two bytes, so a text of
    b bytes holds at most b // 2 + 1 tokens.
    """
    max_bytes = 0
    for t in range(offsets.size - 1):
        max_bytes = max(max_bytes, offsets[t + 1] - offsets[t])
    cap = max_bytes // 2 + 1
    return (
        np.empty(cap, dtype=np.uint64),
        np.empty(cap, dtype=np.int64),
        np.empty(cap, dtype=np.int64),
    )


@_jit
def _scan_text(buf, offsets, t, word_cp, stop_table, min_chars, max_chars, bufs):
    """:func:`_scan_tokens` of text ``t`` into ``bufs`` (from :func:`_token_buffers`)."""
    return _scan_tokens(
        buf, offsets[t], offsets[t + 1], word_cp, stop_table, min_chars, max_chars, *bufs
    )


@_jit
def _encode_kernel(
    buf,
    offsets,
    word_cp,
    stop_table,
    min_chars,
    max_chars,
    code_dim,
    bigram_weight,
    n_bank,
    k_primes,
    want_excitation,
    codes_out,
    n_tokens_out,
    ex_re,
    ex_im,
):
    """Tokenise, hash, filter, count and accumulate every text of a batch.

    ``buf[offsets[t]:offsets[t + 1]]`` is text ``t``, lowercased, UTF-8. Token
    characters are the code points with ``word_cp[cp]`` (beyond the table: not
    word). Writes ``codes_out[t]`` (unit norm or left zero), ``n_tokens_out[t]``
    and, if ``want_excitation``, per-prime sums into ``ex_re[t]``/``ex_im[t]``.
    """
    n = offsets.size - 1
    bufs = _token_buffers(offsets)
    toks = bufs[0]
    big = np.empty(toks.size, dtype=np.uint64)
    acc = np.zeros(code_dim, dtype=np.float64)
    for t in range(n):
        m = _scan_text(buf, offsets, t, word_cp, stop_table, min_chars, max_chars, bufs)
        n_tokens_out[t] = m
        if m == 0:
            continue
        acc[:] = 0.0
        uni = np.sort(toks[:m])
        _add_sorted_features(uni, 1.0, acc, code_dim)
        if want_excitation:
            _excite_sorted(uni, n_bank, k_primes, ex_re[t], ex_im[t])
        if bigram_weight > 0.0 and m > 1:
            for j in range(m - 1):
                big[j] = _mix64((toks[j] * _U_SALT_BIGRAM) ^ toks[j + 1])
            pairs = np.sort(big[: m - 1])
            _add_sorted_features(pairs, bigram_weight, acc, code_dim)
        norm = 0.0
        for d in range(code_dim):
            norm += acc[d] * acc[d]
        if norm > 0.0:
            inv = 1.0 / math.sqrt(norm)
            for d in range(code_dim):
                codes_out[t, d] = np.float32(acc[d] * inv)


@_jit
def _keyword_kernel(
    buf, offsets, word_cp, stop_table, min_chars, max_chars, cand_start, cand_end, n_cand
):
    """Rank each text's content tokens by (count desc, first occurrence asc).

    Same tokenisation as :func:`_encode_kernel` (``buf`` is lowercased UTF-8).
    Writes, for text ``t``, the byte spans of its top ``cand_start.shape[1]``
    distinct tokens into ``cand_start[t]``/``cand_end[t]`` and their number into
    ``n_cand[t]`` (the caller decodes the spans and drops pure numbers).
    """
    n = offsets.size - 1
    width_cap = cand_start.shape[1]
    bufs = _token_buffers(offsets)
    hs, starts, ends = bufs
    g_first = np.empty(hs.size, dtype=np.int64)
    g_key = np.empty(hs.size, dtype=np.int64)
    for t in range(n):
        m = _scan_text(buf, offsets, t, word_cp, stop_table, min_chars, max_chars, bufs)
        n_cand[t] = 0
        if m == 0:
            continue
        # Stable sort by hash: each group's first entry is its first occurrence.
        order = np.argsort(hs[:m], kind="mergesort")
        ng = 0
        count = 0
        for j in range(m):
            if j == 0 or hs[order[j]] != hs[order[j - 1]]:
                if j > 0:
                    g_key[ng - 1] = (m - count) * (m + 1) + g_first[ng - 1]
                g_first[ng] = order[j]
                ng += 1
                count = 0
            count += 1
        g_key[ng - 1] = (m - count) * (m + 1) + g_first[ng - 1]
        ranked = np.argsort(g_key[:ng])
        top = min(ng, width_cap)
        for c in range(top):
            first = g_first[ranked[c]]
            cand_start[t, c] = starts[first]
            cand_end[t, c] = ends[first]
        n_cand[t] = top


#: Phase quantisation bits (the hash constants are sentient_kernels.token_hash's).
PHASE_BITS = _PHASE_BITS


# -- public wrappers -----------------------------------------------------------


def _check_batch(
    buf: object,
    offsets: object,
    word_cp: object,
    stop_table: object,
    min_chars: object,
    max_chars: object,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    buf = check_array("buf", buf, dtype=np.uint8, ndim=1)
    offsets = check_array("offsets", offsets, dtype=np.int64, ndim=1, min_rows=1)
    if offsets[0] < 0 or offsets[-1] > buf.shape[0] or (np.diff(offsets) < 0).any():
        raise ValueError(
            f"offsets must be non-decreasing within [0, {buf.shape[0]}] (the length of buf)"
        )
    # The scanner reads a whole UTF-8 sequence at each byte it takes for a lead
    # byte: a sequence cut by the end of buf, or a text starting inside a
    # character, would make it read past the end of buf.
    try:
        codecs.utf_8_decode(buf.data, "surrogatepass", True)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"buf must be UTF-8 (surrogatepass): {exc.reason} at byte {exc.start}"
        ) from None
    inside = offsets[offsets < buf.shape[0]]
    if ((buf[inside] & 0xC0) == 0x80).any():
        raise ValueError("offsets must fall on character boundaries of buf (UTF-8)")
    # ASCII bytes index the table directly: it must cover them.
    word_cp = check_array("word_cp", word_cp, dtype=np.bool_, ndim=1, min_rows=128)
    stop_table = check_array("stop_table", stop_table, dtype=np.uint64, ndim=1, min_rows=1)
    size = stop_table.shape[0]
    if size & (size - 1) or (stop_table != 0).all():
        raise ValueError(
            "stop_table must have a power-of-two size and at least one empty (0) slot"
            " (use sentient_kernels.text.build_stop_table)"
        )
    min_chars = check_int("min_chars", min_chars, lo=0)
    max_chars = check_int("max_chars", max_chars, lo=0)
    return buf, offsets, word_cp, stop_table, min_chars, max_chars


def encode(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
    code_dim: int,
    *,
    bigram_weight: float = 0.0,
    n_bank: int = 0,
    primes_per_token: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tokenise, hash, count and accumulate every text of a batch in one pass.

    A token is a run of ``word_cp`` code points of ``min_chars``..``max_chars``
    characters whose hash (64-bit FNV-1a of its UTF-8 bytes, mixed with its
    byte length) is not in ``stop_table``. Each distinct token adds
    ``±(1 + ln tf)`` to one of ``code_dim`` buckets (bucket and sign from its
    hash), each distinct adjacent pair ``±bigram_weight · (1 + ln tf)``; the
    code is then L2-normalised (left zero for a text without tokens).

    Parameters
    ----------
    buf, offsets, word_cp, stop_table, min_chars, max_chars
        The batch (see the module docstring).
    code_dim : int
        Length of each code, in [1, 2**32).
    bigram_weight : float
        Weight of adjacent-token features, finite and ≥ 0 (0: none).
    n_bank : int
        Oscillator bank size; 0 computes no excitation. Otherwise each distinct
        token adds ``(1 + ln tf) e^{iθ}`` (θ from its hash) to the sums of
        ``primes_per_token`` distinct bank indices.
    primes_per_token : int
        1 or 2.

    Returns
    -------
    codes : numpy.ndarray
        float32 (n, code_dim), rows of unit norm or zero.
    n_tokens : numpy.ndarray
        int64 (n,) content tokens per text.
    ex_re, ex_im : numpy.ndarray
        float64 (n, n_bank): real and imaginary parts of the per-prime sums.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it), including ``buf`` that is
        not UTF-8 and offsets outside ``buf`` or inside a character.
    """
    buf, offsets, word_cp, stop_table, min_chars, max_chars = _check_batch(
        buf, offsets, word_cp, stop_table, min_chars, max_chars
    )
    code_dim = check_int("code_dim", code_dim, lo=1, hi=_MAX_REDUCE)
    bigram_weight = check_scalar("bigram_weight", bigram_weight, lo=0.0)
    n_bank = check_int("n_bank", n_bank, lo=0, hi=_MAX_REDUCE)
    primes_per_token = check_int("primes_per_token", primes_per_token, lo=1, hi=2)
    n = offsets.shape[0] - 1
    codes = np.zeros((n, code_dim), dtype=np.float32)
    n_tokens = np.zeros(n, dtype=np.int64)
    ex_re = np.zeros((n, n_bank))
    ex_im = np.zeros((n, n_bank))
    _encode_kernel(
        buf,
        offsets,
        word_cp,
        stop_table,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight,
        n_bank,
        primes_per_token,
        n_bank > 0,
        codes,
        n_tokens,
        ex_re,
        ex_im,
    )
    return codes, n_tokens, ex_re, ex_im


def keywords(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
    n_cand: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each text's top ``n_cand`` distinct tokens by (count desc, first occurrence asc).

    Tokens as in :func:`encode`.

    Returns
    -------
    starts, ends : numpy.ndarray
        int64 (n, n_cand): byte span ``buf[starts[t, c]:ends[t, c]]`` of the
        first occurrence of text ``t``'s ``c``-th token.
    counts : numpy.ndarray
        int64 (n,): how many of the ``n_cand`` slots of each text are used.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (see :func:`encode`).
    """
    buf, offsets, word_cp, stop_table, min_chars, max_chars = _check_batch(
        buf, offsets, word_cp, stop_table, min_chars, max_chars
    )
    n_cand = check_int("n_cand", n_cand, lo=0)
    n = offsets.shape[0] - 1
    starts = np.zeros((n, n_cand), dtype=np.int64)
    ends = np.zeros((n, n_cand), dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    _keyword_kernel(buf, offsets, word_cp, stop_table, min_chars, max_chars, starts, ends, counts)
    return starts, ends, counts


def _warmup() -> None:
    """Compile the text kernels with the signatures the encoder uses."""
    word_cp = np.zeros(128, dtype=np.bool_)
    word_cp[ord("a") : ord("z") + 1] = True
    stop = np.zeros(16, dtype=np.uint64)
    stop.setflags(write=False)  # the encoder's stop table is frozen (its own Numba type)
    buf = np.frombuffer(b"tides follow the moon tides", dtype=np.uint8)
    offsets = np.array([0, buf.size], dtype=np.int64)
    codes = np.zeros((1, 8), dtype=np.float32)
    n_tok = np.zeros(1, dtype=np.int64)
    ex = np.zeros((1, 4))
    _encode_kernel(
        buf, offsets, word_cp, stop, 2, 40, 8, 0.5, 4, 2, True, codes, n_tok, ex, ex.copy()
    )
    starts = np.zeros((1, 4), dtype=np.int64)
    _keyword_kernel(buf, offsets, word_cp, stop, 2, 40, starts, starts.copy(), n_tok)
