"""Compatibility only: the reference design's character-level encoder.

It barely discriminates (see :mod:`sentient_core.retrieval_eval`) and must not
be the default; it is kept to compare with the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar

import msgspec
import numpy as np

from sentient_core.encoder.bank import DEFAULT_BANK_PRIMES, check_bank
from sentient_core.encoder.hashing import ENCODING_VERSION, fingerprint
from sentient_core.encoder.types import EncodedBatch, EncodedText, batch, check_texts
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_kernels.prsc import first_primes

__all__ = ["CHAR_TO_PRIME", "CharEncoderConfig", "CharPrimeEncoder"]


class CharEncoderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Settings of :class:`CharPrimeEncoder` (meanings as in :class:`TokenEncoderConfig`)."""

    code_dim: Annotated[int, msgspec.Meta(ge=8, le=65536)] = 256
    excitation_gain: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.3
    n_dominant: Annotated[int, msgspec.Meta(ge=0, le=4096)] = 8


# Reference character table: a→2, b→3, c→5, ..., z→101, then 0→103, ..., 9→151.
_CHAR_TABLE = "abcdefghijklmnopqrstuvwxyz0123456789"
#: Character → prime of :class:`CharPrimeEncoder` (k-th table character → k-th prime).
CHAR_TO_PRIME: dict[str, int] = {
    c: int(p) for c, p in zip(_CHAR_TABLE, first_primes(len(_CHAR_TABLE)), strict=True)
}


class CharPrimeEncoder:
    """Compatibility-only: the reference design's character-level encoder.

    Each character of the lowercased text maps to a fixed prime
    (:data:`CHAR_TO_PRIME`: the k-th character of ``a..z0..9`` → the k-th prime,
    so a→2, b→3, c→5, …). A character whose prime is not in the bank, and any
    character outside the table, excites nothing, as in the reference.
    Amplitude per prime = number of occurrences; target phase 0.

    The code approximates the reference's intensity map by the L2-normalised
    prime-amplitude vector, bank index ``i`` placed at dimension ``i mod code_dim``.
    Letter-frequency vectors of unrelated English texts are nearly parallel, so
    this code barely discriminates: use it only to compare with the reference.

    Parameters
    ----------
    bank_primes : array-like of int, optional
        Default :data:`DEFAULT_BANK_PRIMES`.
    **config
        Fields of :class:`CharEncoderConfig`.
    """

    name: ClassVar[str] = "char-compat"

    def __init__(self, bank_primes: object = None, **config: object) -> None:
        self.bank_primes = check_bank(DEFAULT_BANK_PRIMES if bank_primes is None else bank_primes)
        try:
            self.config = msgspec.convert(config, CharEncoderConfig)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"invalid CharPrimeEncoder option: {exc}") from None
        self.code_dim = self.config.code_dim
        #: Changes whenever codes for the same text could change (store it with the codes).
        self.fingerprint = fingerprint(
            self.name,
            ENCODING_VERSION,
            msgspec.structs.asdict(self.config),
            self.bank_primes.tolist(),
            CHAR_TO_PRIME,
        )
        pos = {int(p): i for i, p in enumerate(self.bank_primes)}
        # Byte → bank index (or -1). Table characters are ASCII; everything else is -1.
        self._byte_to_bank = np.full(256, -1, dtype=np.int64)
        for c, p in CHAR_TO_PRIME.items():
            if p in pos:
                self._byte_to_bank[ord(c)] = pos[p]

    def __repr__(self) -> str:
        return f"CharPrimeEncoder(n_bank={self.bank_primes.size}, code_dim={self.code_dim})"

    def _encode(self, texts: list[str], *, excitation: bool) -> EncodedBatch:
        n, n_bank = len(texts), self.bank_primes.size
        counts = np.zeros((n, n_bank), dtype=np.float64)
        for i, text in enumerate(texts):
            # Non-ASCII bytes are ≥ 0x80 and map to -1 like every non-table character.
            raw = np.frombuffer(text.lower().encode("utf-8", "surrogatepass"), dtype=np.uint8)
            bank_idx = self._byte_to_bank[raw]
            counts[i] = np.bincount(bank_idx[bank_idx >= 0], minlength=n_bank)
        codes = np.zeros((n, self.code_dim), dtype=np.float64)
        np.add.at(codes, (slice(None), np.arange(n_bank) % self.code_dim), counts)  # type: ignore[arg-type]  # numpy's stubs reject a (slice, array) index
        norms = np.linalg.norm(codes, axis=1, keepdims=True)
        np.divide(codes, norms, out=codes, where=norms > 0)
        return batch(
            codes.astype(np.float32),
            counts.sum(axis=1).astype(np.int64),
            counts if excitation else None,
            np.zeros_like(counts) if excitation else None,
            self.bank_primes,
            self.config.excitation_gain,
            self.config.n_dominant,
        )

    def encode(self, text: str) -> EncodedText:
        """Encode one text; see the class notes."""
        if not isinstance(text, str):
            raise ArgumentTypeError(f"text must be str, got {type(text).__name__}")
        return self._encode([text], excitation=True).item(0)

    def encode_many(self, texts: Sequence[str]) -> EncodedBatch:
        """Encode many texts (codes and CSR excitations)."""
        return self._encode(check_texts(texts), excitation=True)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Codes only: float32 array (len(texts), code_dim)."""
        return self._encode(check_texts(texts), excitation=False).codes
