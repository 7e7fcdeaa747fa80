"""A batch of texts analysed in one pass: codes, excitations, strongest primes, keywords, terms.

Integration needs, for every chunk, what three kernels computed separately —
:func:`sentient_kernels.text.encode` (code, token count, per-prime sums, then
:func:`~sentient_kernels.excitation.excitation_csr` and
:func:`~sentient_kernels.excitation.dominant_order`),
:func:`sentient_kernels.text.keywords` (top tokens by count) and
:func:`sentient_kernels.lexical.term_counts` (distinct terms with their counts).
Each scanned and sorted the same tokens again. :func:`analyse` scans a text
once and sorts its tokens once (a stable sort, so each distinct token's first
occurrence comes with it), then derives all of them from that sort, calling the
very kernels of those modules for the code, the excitation and the dominant
order: the results are bit-identical to theirs (``tests/test_text_batch.py``
checks that against them and against the pure-Python references).

Deterministic: no fast-math, no parallel reductions (texts run in parallel, each
writing only its own results). The batch layout (``buf``,
``offsets``, ``word_cp``, ``stop_table``, ``min_chars``, ``max_chars``) is
:mod:`sentient_kernels.text`'s.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.excitation import _dominant_order, _excitation_csr
from sentient_kernels.lexical import TF_MAX
from sentient_kernels.text import (
    _add_sorted_features,
    _check_batch,
    _excite_sorted,
    _scan_text,
)
from sentient_kernels.token_hash import _U_SALT_BIGRAM, _mix64

__all__ = ["Analysis", "analyse"]

_jit = jit(fastmath=False)
_jit_parallel = jit(parallel=True, fastmath=False)


class Analysis(NamedTuple):
    """What :func:`analyse` finds in a batch of ``n`` texts.

    Attributes
    ----------
    codes : (n, code_dim) float32
        As :func:`sentient_kernels.text.encode`.
    n_tokens : (n,) int64
        Content tokens per text.
    ex_offsets : (n + 1,) int64
        Text ``t`` owns excitation entries ``ex_offsets[t]:ex_offsets[t + 1]``.
    ex_indices, ex_amounts, ex_phases : int64, float64, float64
        As :func:`sentient_kernels.excitation.excitation_csr`.
    dominant : (n, n_dominant) int64
        The strongest primes of each text, strongest first (ties: smaller prime),
        in its first ``n_dominant_used[t]`` slots.
    n_dominant_used : (n,) int64
    cand_start, cand_end : (n, n_cand) int64
        Byte spans of each text's top distinct tokens, as :func:`sentient_kernels.text.keywords`.
    n_cand_used : (n,) int64
    term_offsets : (n + 1,) int64
    terms : uint64
    tfs : uint16
        As :func:`sentient_kernels.lexical.term_counts` (the lengths are ``n_tokens``).
    """

    codes: np.ndarray
    n_tokens: np.ndarray
    ex_offsets: np.ndarray
    ex_indices: np.ndarray
    ex_amounts: np.ndarray
    ex_phases: np.ndarray
    dominant: np.ndarray
    n_dominant_used: np.ndarray
    cand_start: np.ndarray
    cand_end: np.ndarray
    n_cand_used: np.ndarray
    term_offsets: np.ndarray
    terms: np.ndarray
    tfs: np.ndarray


# Sorting a chunk's few hundred token hashes is most of the kernel's work: a
# counting pass on the top bits spreads them over about as many buckets as
# there are hashes (hashes are uniform), and an insertion sort finishes each
# bucket. Stable, so it is an argsort with first occurrences kept in order;
# beyond _MAX_BUCKET_BITS a text is long enough for the library sort.
_MIN_BUCKET_BITS = 4
_MAX_BUCKET_BITS = 16


@_jit
def _bucket_argsort(keys, m, order, counts):
    """Stable argsort of ``keys[:m]`` (uint64) into ``order[:m]``; ``counts`` is scratch
    of at least ``2 ** _MAX_BUCKET_BITS + 1`` int64."""
    bits = _MIN_BUCKET_BITS
    while bits < _MAX_BUCKET_BITS and (1 << bits) < m:
        bits += 1
    if (1 << bits) < m // 4:
        order[:m] = np.argsort(keys[:m], kind="mergesort")
        return
    shift = np.uint64(64 - bits)
    n_buckets = 1 << bits
    counts[: n_buckets + 1] = 0
    for j in range(m):
        counts[np.int64(keys[j] >> shift) + 1] += 1
    for b in range(n_buckets):
        counts[b + 1] += counts[b]
    for j in range(m):
        bucket = np.int64(keys[j] >> shift)
        order[counts[bucket]] = j
        counts[bucket] += 1
    # Each bucket is now order[start:counts[b]] in input order; insertion-sort it.
    start = 0
    for b in range(n_buckets):
        end = counts[b]
        for i in range(start + 1, end):
            cur = order[i]
            key = keys[cur]
            j = i
            while j > start and keys[order[j - 1]] > key:
                order[j] = order[j - 1]
                j -= 1
            order[j] = cur
        start = end


@_jit
def _smallest(keys, ng, k, out):
    """Positions of the ``min(k, ng)`` smallest of ``keys[:ng]`` (distinct), ascending,
    into ``out``; returns how many."""
    top = 0
    if k <= 0:
        return 0
    for g in range(ng):
        key = keys[g]
        if top == k and key >= keys[out[top - 1]]:
            continue
        j = top if top < k else k - 1
        while j > 0 and keys[out[j - 1]] > key:
            out[j] = out[j - 1]
            j -= 1
        out[j] = g
        if top < k:
            top += 1
    return top


@_jit
def _analyse_texts(
    lo,
    hi,
    buf,
    offsets,
    word_cp,
    stop_table,
    min_chars,
    max_chars,
    code_dim,
    bigram_weight,
    k_primes,
    cap,
    ex_re,
    ex_im,
    codes_out,
    n_tokens_out,
    cand_start,
    cand_end,
    n_cand_out,
    terms,
    tfs,
    n_terms,
):
    """Texts ``lo:hi`` of :func:`_analyse`, with scratch of their own (``cap`` tokens).

    Text ``t`` writes its distinct terms at ``offsets[t] // 2 + t`` of ``terms``/``tfs``
    and their number into ``n_terms[t]``: a text of b bytes has at most b // 2 + 1
    tokens, so these slots never overlap and texts can run on any thread.
    """
    n_bank = ex_re.shape[1]
    width_cap = cand_start.shape[1]
    toks = np.empty(cap, dtype=np.uint64)
    bufs = (toks, np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64))
    starts, ends = bufs[1], bufs[2]
    srt = np.empty(cap, dtype=np.uint64)
    big = np.empty(cap, dtype=np.uint64)
    g_first = np.empty(cap, dtype=np.int64)
    g_key = np.empty(cap, dtype=np.int64)
    acc = np.zeros(code_dim, dtype=np.float64)
    order = np.empty(cap, dtype=np.int64)
    pair_order = np.empty(cap, dtype=np.int64)
    pairs = np.empty(cap, dtype=np.uint64)
    scratch = np.empty((1 << _MAX_BUCKET_BITS) + 1, dtype=np.int64)
    ranked = np.empty(max(width_cap, 1), dtype=np.int64)
    for t in range(lo, hi):
        m = _scan_text(buf, offsets, t, word_cp, stop_table, min_chars, max_chars, bufs)
        n_tokens_out[t] = m
        n_cand_out[t] = 0
        n_terms[t] = 0
        if m == 0:
            continue
        # Stable: each run of equal hashes starts at the token's first occurrence.
        _bucket_argsort(toks, m, order, scratch)
        for j in range(m):
            srt[j] = toks[order[j]]
        uni = srt[:m]
        # The code and the per-prime sums, as text._encode_kernel computes them.
        acc[:] = 0.0
        _add_sorted_features(uni, 1.0, acc, code_dim)
        _excite_sorted(uni, n_bank, k_primes, ex_re[t], ex_im[t])
        if bigram_weight > 0.0 and m > 1:
            for j in range(m - 1):
                big[j] = _mix64((toks[j] * _U_SALT_BIGRAM) ^ toks[j + 1])
            _bucket_argsort(big, m - 1, pair_order, scratch)
            for j in range(m - 1):
                pairs[j] = big[pair_order[j]]
            _add_sorted_features(pairs[: m - 1], bigram_weight, acc, code_dim)
        norm = 0.0
        for d in range(code_dim):
            norm += acc[d] * acc[d]
        if norm > 0.0:
            inv = 1.0 / math.sqrt(norm)
            for d in range(code_dim):
                codes_out[t, d] = np.float32(acc[d] * inv)
        # Distinct terms with their counts (lexical._term_counts) and, per group,
        # the keyword rank key (text._keyword_kernel): count desc, first occurrence asc.
        pos = offsets[t] // 2 + t
        ng = 0
        i = 0
        while i < m:
            h = uni[i]
            j = i + 1
            while j < m and uni[j] == h:
                j += 1
            terms[pos + ng] = h
            tfs[pos + ng] = min(j - i, TF_MAX)
            g_first[ng] = order[i]
            g_key[ng] = (m - (j - i)) * (m + 1) + order[i]
            ng += 1
            i = j
        n_terms[t] = ng
        top = _smallest(g_key, ng, width_cap, ranked)
        for c in range(top):
            first = g_first[ranked[c]]
            cand_start[t, c] = starts[first]
            cand_end[t, c] = ends[first]
        n_cand_out[t] = top


@_jit_parallel
def _analyse(
    buf,
    offsets,
    word_cp,
    stop_table,
    min_chars,
    max_chars,
    code_dim,
    bigram_weight,
    bank_primes,
    k_primes,
    gain,
    codes_out,
    n_tokens_out,
    dominant_out,
    n_dominant_out,
    cand_start,
    cand_end,
    n_cand_out,
    n_parts,
):
    """One scan and one stable sort per text; returns (excitation CSR, terms CSR).

    Writes the codes, token counts, dominant primes and keyword spans into the
    ``*_out`` arrays (see :class:`Analysis`). The texts are cut into ``n_parts``
    contiguous parts run in parallel; every text's results depend on that text
    alone and land in places of their own, so any ``n_parts`` gives the same bits.
    """
    n = offsets.size - 1
    n_bank = bank_primes.size
    max_bytes = 0
    for t in range(n):
        max_bytes = max(max_bytes, offsets[t + 1] - offsets[t])
    cap = max_bytes // 2 + 1  # as text._token_buffers
    ex_re = np.zeros((n, n_bank))
    ex_im = np.zeros((n, n_bank))
    # Text t's terms in slot offsets[t] // 2 + t (see _analyse_texts), then packed.
    room = buf.size // 2 + n + 1
    slot_terms = np.empty(room, dtype=np.uint64)
    slot_tfs = np.empty(room, dtype=np.uint16)
    n_terms = np.zeros(n, dtype=np.int64)
    for p in prange(n_parts):
        _analyse_texts(
            p * n // n_parts,
            (p + 1) * n // n_parts,
            buf,
            offsets,
            word_cp,
            stop_table,
            min_chars,
            max_chars,
            code_dim,
            bigram_weight,
            k_primes,
            cap,
            ex_re,
            ex_im,
            codes_out,
            n_tokens_out,
            cand_start,
            cand_end,
            n_cand_out,
            slot_terms,
            slot_tfs,
            n_terms,
        )
    term_offsets = np.zeros(n + 1, dtype=np.int64)
    for t in range(n):
        term_offsets[t + 1] = term_offsets[t] + n_terms[t]
    terms = np.empty(term_offsets[n], dtype=np.uint64)
    tfs = np.empty(term_offsets[n], dtype=np.uint16)
    for t in range(n):
        base = offsets[t] // 2 + t
        lo = term_offsets[t]
        for j in range(n_terms[t]):
            terms[lo + j] = slot_terms[base + j]
            tfs[lo + j] = slot_tfs[base + j]
    ex_offsets, idx, amounts, phases = _excitation_csr(ex_re, ex_im, gain)
    primes = bank_primes[idx]
    k = dominant_out.shape[1]
    for t in range(n):
        lo, hi = ex_offsets[t], ex_offsets[t + 1]
        best = _dominant_order(amounts[lo:hi], primes[lo:hi], k)
        for c in range(best.size):
            dominant_out[t, c] = primes[lo + best[c]]
        n_dominant_out[t] = best.size
    return ex_offsets, idx, amounts, phases, term_offsets, terms, tfs


def analyse_unchecked(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
    code_dim: int,
    bank_primes: np.ndarray,
    bigram_weight: float,
    primes_per_token: int,
    gain: float,
    n_dominant: int,
    n_cand: int,
    parts: int = 0,
) -> Analysis:
    """:func:`analyse` without the checks, for callers whose arguments are valid by
    construction (the token encoder's own batch)."""
    n = offsets.shape[0] - 1
    if parts < 1:
        parts = numba.get_num_threads()
    parts = min(parts, n)
    codes = np.zeros((n, code_dim), dtype=np.float32)
    n_tokens = np.zeros(n, dtype=np.int64)
    dominant = np.zeros((n, n_dominant), dtype=np.int64)
    n_dom = np.zeros(n, dtype=np.int64)
    cand_start = np.zeros((n, n_cand), dtype=np.int64)
    cand_end = np.zeros((n, n_cand), dtype=np.int64)
    n_cand_used = np.zeros(n, dtype=np.int64)
    ex_offsets, idx, amounts, phases, term_offsets, terms, tfs = _analyse(
        buf,
        offsets,
        word_cp,
        stop_table,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight,
        bank_primes,
        primes_per_token,
        gain,
        codes,
        n_tokens,
        dominant,
        n_dom,
        cand_start,
        cand_end,
        n_cand_used,
        parts,
    )
    return Analysis(
        codes,
        n_tokens,
        ex_offsets,
        idx,
        amounts,
        phases,
        dominant,
        n_dom,
        cand_start,
        cand_end,
        n_cand_used,
        term_offsets,
        terms,
        tfs,
    )


def analyse(
    buf: np.ndarray,
    offsets: np.ndarray,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
    code_dim: int,
    bank_primes: np.ndarray,
    *,
    bigram_weight: float = 0.0,
    primes_per_token: int = 1,
    gain: float = 1.0,
    n_dominant: int = 8,
    n_cand: int = 8,
    parts: int = 0,
) -> Analysis:
    """Codes, excitations, strongest primes, keyword candidates and terms of a batch, in one pass.

    Equal to :func:`sentient_kernels.text.encode` (with ``n_bank = bank_primes.size``),
    then :func:`~sentient_kernels.excitation.excitation_csr` with ``gain`` and
    :func:`~sentient_kernels.excitation.dominant_order` per text, plus
    :func:`sentient_kernels.text.keywords` with ``n_cand`` and
    :func:`sentient_kernels.lexical.term_counts`, bit for bit.

    Parameters
    ----------
    buf, offsets, word_cp, stop_table, min_chars, max_chars
        The batch (see :mod:`sentient_kernels.text`).
    code_dim : int
        Length of each code, ≥ 1.
    bank_primes : numpy.ndarray
        int64 (n_bank,), n_bank ≥ 1: the oscillator bank's primes.
    bigram_weight, primes_per_token
        As for :func:`sentient_kernels.text.encode`.
    gain : float
        Amount of each text's strongest prime (finite, > 0).
    n_dominant : int
        Strongest primes kept per text (≥ 0).
    n_cand : int
        Keyword candidates kept per text (≥ 0).
    parts : int
        Contiguous parts of the batch analysed in parallel (0: one per Numba
        thread). Any number gives the same bits: each text's results depend on
        it alone.

    Returns
    -------
    Analysis

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    buf, offsets, word_cp, stop_table, min_chars, max_chars = _check_batch(
        buf, offsets, word_cp, stop_table, min_chars, max_chars
    )
    code_dim = check_int("code_dim", code_dim, lo=1, hi=(1 << 32) - 1)
    bank_primes = check_array("bank_primes", bank_primes, dtype=np.int64, ndim=1, min_rows=1)
    if bank_primes.shape[0] >= 1 << 32:
        raise ValueError("bank_primes must hold fewer than 2**32 primes")
    bigram_weight = check_scalar("bigram_weight", bigram_weight, lo=0.0)
    primes_per_token = check_int("primes_per_token", primes_per_token, lo=1, hi=2)
    gain = check_scalar("gain", gain, lo=0.0, lo_open=True)
    n_dominant = check_int("n_dominant", n_dominant, lo=0)
    n_cand = check_int("n_cand", n_cand, lo=0)
    parts = check_int("parts", parts, lo=0)
    return analyse_unchecked(
        buf,
        offsets,
        word_cp,
        stop_table,
        min_chars,
        max_chars,
        code_dim,
        bank_primes,
        bigram_weight,
        primes_per_token,
        gain,
        n_dominant,
        n_cand,
        parts,
    )


def _warmup() -> None:
    """Compile :func:`_analyse` with the signature the token encoder uses."""
    word_cp = np.zeros(128, dtype=np.bool_)
    word_cp[ord("a") : ord("z") + 1] = True
    stop = np.zeros(16, dtype=np.uint64)
    stop.setflags(write=False)  # the encoder's tables and bank are frozen (their own Numba type)
    bank = np.array([2, 3, 5, 7], dtype=np.int64)
    bank.setflags(write=False)
    buf = np.frombuffer(b"tides follow the moon tides", dtype=np.uint8)
    offsets = np.array([0, buf.size], dtype=np.int64)
    analyse_unchecked(buf, offsets, word_cp, stop, 2, 40, 8, bank, 0.5, 2, 0.3, 2, 4)
    analyse(buf, offsets, word_cp, stop, 2, 40, 8, bank, bigram_weight=0.5, primes_per_token=2)
