"""Stable hashing of tokens and encoders, and the lookup tables the token kernel reads.

Hashes use fixed 64-bit integer arithmetic, never Python's salted ``hash()``,
so they are the same in every process (see :mod:`sentient_core.encoder`).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable

import numpy as np

from sentient_core.analysis import STOP_WORDS, tokenize
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_kernels.text import FNV_OFFSET, FNV_PRIME, GOLDEN, MASK64

__all__ = [
    "ASTRAL_LEAD",
    "ENCODING_VERSION",
    "STOP_TABLE",
    "WORD_TABLE",
    "fingerprint",
    "token_hash",
]


#: Bump when the token or char encoding changes for the same configuration
#: (stored codes made by another version are not comparable).
ENCODING_VERSION = 1


def fingerprint(*parts: object) -> str:
    """Short stable digest of an encoder's identity (name, version, settings, bank, ...)."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(repr(part).encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _tokens(text: str) -> list[str]:
    """Content tokens of ``text`` in order: ``tokenize(text)`` minus ``STOP_WORDS``.

    The reference for what the kernel of :class:`TokenPrimeEncoder` extracts.
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be str, got {type(text).__name__}")
    return [t for t in tokenize(text) if t not in STOP_WORDS]


def _mix64_int(x: int) -> int:
    """SplitMix64 finaliser on a Python int (reference for the kernel's ``_mix64``)."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def token_hash(token: str) -> int:
    """Stable 64-bit hash of a token.

    64-bit FNV-1a over the token's UTF-8 bytes, then ``mix64(fnv xor (n · G))`` with
    ``n`` the byte count, ``G = 0x9E3779B97F4A7C15`` and ``mix64`` the SplitMix64
    finaliser (FNV alone has weak low bits, and buckets use them).

    Parameters
    ----------
    token : str
        Any string (normally one lowercase token).
    """
    data = token.encode("utf-8", "surrogatepass")
    acc = FNV_OFFSET
    for byte in data:
        acc = ((acc ^ byte) * FNV_PRIME) & MASK64
    return _mix64_int(acc ^ ((len(data) * GOLDEN) & MASK64))


def _stop_table(words: Iterable[str]) -> np.ndarray:
    """Open-addressing set of stop-word hashes (0 marks an empty slot; linear probing)."""
    hashes = sorted({token_hash(w) for w in words})
    if 0 in hashes:
        raise ArgumentError("a stop-word hashes to 0, the empty-slot marker")
    size = 1 << max(4, (4 * len(hashes) - 1).bit_length())  # load factor <= 1/4
    table = np.zeros(size, dtype=np.uint64)
    for h in hashes:
        slot = h & (size - 1)
        while table[slot]:
            slot = (slot + 1) & (size - 1)
        table[slot] = h
    table.setflags(write=False)
    return table


STOP_TABLE = _stop_table(STOP_WORDS)


class _WordTable:
    """Which code points ``re``'s ``\\w`` matches, as a bool array indexed by code point.

    Built from ``re`` itself, so the kernels tokenise exactly like
    :func:`~sentient_core.analysis.tokenize`. :attr:`bmp` (the Basic Multilingual
    Plane, ~10 ms) is built at import and read as a plain attribute on every
    encode; the table with the astral planes (~0.5 s) only when a text needs it
    (:meth:`get`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bmp = self._build(0, 0x10000)
        self._full: np.ndarray | None = None

    @staticmethod
    def _build(lo: int, hi: int) -> np.ndarray:
        chars = "".join(map(chr, range(lo, hi)))
        marked = re.sub(r"\W", "\x00", chars)
        return np.frombuffer(marked.encode("utf-32-le", "surrogatepass"), dtype=np.uint32) != 0

    def get(self, astral: bool) -> np.ndarray:
        """The table for a text with (``astral``) or without code points beyond the BMP."""
        if not astral:
            return self.bmp
        with self._lock:
            if self._full is None:
                self._full = np.concatenate([self.bmp, self._build(0x10000, 0x110000)])
            return self._full


WORD_TABLE = _WordTable()
# Lead bytes of 4-byte UTF-8 sequences (code points beyond the BMP).
ASTRAL_LEAD = re.compile(rb"[\xf0-\xff]")
