"""Slow, obviously-correct references of the :mod:`sentient_kernels.text` functions, pure Python.

They work from the same arrays as the kernels (UTF-8 bytes, offsets, the
word-character table, the stop-word set) but decode text with Python's codec
and count with ``collections.Counter``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np

MASK64 = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
GOLDEN = 0x9E3779B97F4A7C15
SALT_CODE = 0xC2B2AE3D27D4EB4F
SALT_PRIME_A = 0x165667B19E3779F9
SALT_PRIME_B = 0xD6E8FEB86659FD93
SALT_BIGRAM = 0xFF51AFD7ED558CCD
PHASE_STEPS = 4096


def mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def token_hash(data: bytes) -> int:
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK64
    return mix64(h ^ ((len(data) * GOLDEN) & MASK64))


def reduce32(x: int, n: int) -> int:
    return ((x & 0xFFFFFFFF) * n) >> 32


def tokens(data: bytes, base: int, word_cp, stop: set[int], min_chars: int, max_chars: int):
    """Content tokens of one text: [(hash, start byte, end byte)], offsets from ``base``."""
    text = data.decode("utf-8", "surrogatepass")
    out = []
    pos = base
    current: list[str] = []
    start = pos
    for ch in [*text, None]:
        is_word = ch is not None and ord(ch) < len(word_cp) and bool(word_cp[ord(ch)])
        if is_word:
            if not current:
                start = pos
            current.append(ch)
        elif current:
            token = "".join(current).encode("utf-8", "surrogatepass")
            h = token_hash(token)
            if min_chars <= len(current) <= max_chars and h not in stop:
                out.append((h, start, pos))
            current = []
        if ch is not None:
            pos += len(ch.encode("utf-8", "surrogatepass"))
    return out


def _texts(buf, offsets):
    data = bytes(buf)
    for t in range(len(offsets) - 1):
        lo, hi = int(offsets[t]), int(offsets[t + 1])
        yield data[lo:hi], lo


def encode(
    buf,
    offsets,
    word_cp,
    stop: set[int],
    min_chars: int,
    max_chars: int,
    code_dim: int,
    bigram_weight: float,
    n_bank: int,
    primes_per_token: int,
):
    """(codes float64 (n, code_dim), n_tokens (n,), sums complex (n, n_bank))."""
    n = len(offsets) - 1
    codes = np.zeros((n, code_dim))
    n_tokens = np.zeros(n, dtype=np.int64)
    sums = np.zeros((n, n_bank), dtype=np.complex128)
    for t, (data, lo) in enumerate(_texts(buf, offsets)):
        hashes = [h for h, _, _ in tokens(data, lo, word_cp, stop, min_chars, max_chars)]
        n_tokens[t] = len(hashes)
        acc = codes[t]

        def add(h: int, weight: float, acc=acc) -> None:
            m = mix64(h ^ SALT_CODE)
            acc[reduce32(m, code_dim)] += -weight if m >> 63 else weight

        for h, tf in Counter(hashes).items():
            w = 1.0 + math.log(tf)
            add(h, w)
            if n_bank:
                ma = mix64(h ^ SALT_PRIME_A)
                first = reduce32(ma, n_bank)
                picks = [(first, ma >> 52)]
                if primes_per_token > 1 and n_bank > 1:
                    mb = mix64(h ^ SALT_PRIME_B)
                    picks.append(((first + 1 + reduce32(mb, n_bank - 1)) % n_bank, mb >> 52))
                for idx, q in picks:
                    angle = q * 2.0 * math.pi / PHASE_STEPS
                    sums[t, idx] += w * complex(math.cos(angle), math.sin(angle))
        if bigram_weight > 0:
            pairs = [mix64(((a * SALT_BIGRAM) & MASK64) ^ b) for a, b in itertools.pairwise(hashes)]
            for h, tf in Counter(pairs).items():
                add(h, bigram_weight * (1.0 + math.log(tf)))
        norm = math.sqrt(float(acc @ acc))
        if norm > 0:
            acc /= norm
    return codes, n_tokens, sums


def keywords(buf, offsets, word_cp, stop: set[int], min_chars: int, max_chars: int, n_cand: int):
    """Per text, the byte spans of its top ``n_cand`` tokens (count desc, first occurrence asc)."""
    out = []
    for data, lo in _texts(buf, offsets):
        found = tokens(data, lo, word_cp, stop, min_chars, max_chars)
        counts = Counter(h for h, _, _ in found)
        first: dict[int, tuple[int, int, int]] = {}
        for position, (h, start, end) in enumerate(found):
            first.setdefault(h, (position, start, end))
        ranked = sorted(counts, key=lambda h: (-counts[h], first[h][0]))[:n_cand]
        out.append([first[h][1:] for h in ranked])
    return out


def excitation_csr(ex_re, ex_im, gain: float):
    """Per text: [(bank index, amount, phase in [0, 2π))] of the primes kept."""
    out = []
    for re_row, im_row in zip(ex_re, ex_im, strict=True):
        amps = [math.hypot(float(r), float(i)) for r, i in zip(re_row, im_row, strict=True)]
        peak = max(amps, default=0.0)
        entries = []
        if peak > 0.0:
            for p, amp in enumerate(amps):
                if amp > peak * 1e-12:
                    phase = math.atan2(float(im_row[p]), float(re_row[p])) % (2.0 * math.pi)
                    entries.append((p, gain * amp / peak, phase))
        out.append(entries)
    return out


def dominant_order(amounts, primes, k: int) -> list[int]:
    """Positions by amount descending, then prime ascending, then position."""
    m = len(amounts)
    return sorted(range(m), key=lambda i: (-float(amounts[i]), int(primes[i]), i))[:k]
