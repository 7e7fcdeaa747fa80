"""What an encoding is: the excitation, one encoded text, a batch, and the encoder interface."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sentient_core.errors import ArgumentTypeError
from sentient_kernels import excitation as excitation_kernels

__all__ = [
    "EncodedBatch",
    "EncodedText",
    "Excitation",
    "TextEncoder",
    "batch",
    "check_texts",
    "dominant",
    "read_only",
]


@dataclass(frozen=True, slots=True, eq=False)
class Excitation:
    """What a text does to the oscillator bank.

    Attributes
    ----------
    indices : np.ndarray
        int64 (m,), ascending indices into the bank of the excited primes.
    primes : np.ndarray
        int64 (m,), the primes themselves (``bank_primes[indices]``).
    amounts : np.ndarray
        float64 (m,), amplitude increments in (0, gain]; the strongest prime gets ``gain``.
    phases : np.ndarray
        float64 (m,), target phases in [0, 2π) the excitation pulls toward.
    """

    indices: np.ndarray
    primes: np.ndarray
    amounts: np.ndarray
    phases: np.ndarray

    def __len__(self) -> int:
        return int(self.indices.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class EncodedText:
    """One encoded text.

    Attributes
    ----------
    excitation : Excitation
        Prime excitation for the observer (empty when the text has no content).
    code : np.ndarray
        float32 (code_dim,), unit L2 norm, or all zeros for a text without content.
    dominant_primes : tuple[int, ...]
        The most strongly excited primes, strongest first (ties: smaller prime first).
    n_tokens : int
        Content tokens (``char-compat``: characters that map to a bank prime).
    """

    excitation: Excitation
    code: np.ndarray
    dominant_primes: tuple[int, ...]
    n_tokens: int


@dataclass(frozen=True, slots=True, eq=False)
class EncodedBatch:
    """Many encoded texts in flat arrays (CSR layout for the excitations).

    Text ``i`` owns excitation entries ``offsets[i]:offsets[i + 1]``.

    Attributes
    ----------
    codes : np.ndarray
        float32 (n, code_dim).
    offsets : np.ndarray
        int64 (n + 1,).
    indices, amounts, phases : np.ndarray
        Concatenated :class:`Excitation` fields (int64, float64, float64).
    n_tokens : np.ndarray
        int64 (n,).
    bank_primes : np.ndarray
        int64 (N,), the encoder's bank.
    n_dominant : int
        Length of :attr:`EncodedText.dominant_primes`.
    """

    codes: np.ndarray
    offsets: np.ndarray
    indices: np.ndarray
    amounts: np.ndarray
    phases: np.ndarray
    n_tokens: np.ndarray
    bank_primes: np.ndarray
    n_dominant: int

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def excitation(self, i: int) -> Excitation:
        """Excitation of text ``i``."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        idx = self.indices[lo:hi]
        return Excitation(
            indices=read_only(idx),
            primes=read_only(self.bank_primes[idx]),
            amounts=read_only(self.amounts[lo:hi]),
            phases=read_only(self.phases[lo:hi]),
        )

    def item(self, i: int) -> EncodedText:
        """Text ``i`` as an :class:`EncodedText`."""
        exc = self.excitation(i)
        return EncodedText(
            excitation=exc,
            code=read_only(self.codes[i].copy()),
            dominant_primes=dominant(exc, self.n_dominant),
            n_tokens=int(self.n_tokens[i]),
        )


def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only (encodings are shared, never changed)."""
    a.setflags(write=False)
    return a


def dominant(exc: Excitation, k: int) -> tuple[int, ...]:
    """The ``k`` most strongly excited primes, strongest first (ties: smaller prime)."""
    return tuple(exc.primes[excitation_kernels.dominant_order(exc.amounts, exc.primes, k)].tolist())


def check_texts(texts: Iterable[str]) -> list[str]:
    """``texts`` as a list of str (a single str or bytes is refused)."""
    if isinstance(texts, (str, bytes)):
        raise ArgumentTypeError("texts must be a sequence of str, not a single str/bytes")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ArgumentTypeError(f"texts[{i}] must be str, got {type(t).__name__}")
    return out


def batch(
    codes: np.ndarray,
    n_tokens: np.ndarray,
    ex_re: np.ndarray | None,
    ex_im: np.ndarray | None,
    bank_primes: np.ndarray,
    gain: float,
    n_dominant: int,
) -> EncodedBatch:
    """Assemble an :class:`EncodedBatch`; per-(text, prime) sums become CSR excitations."""
    n = codes.shape[0]
    if ex_re is None or ex_im is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
        idx, amounts, phases = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    else:
        offsets, idx, amounts, phases = excitation_kernels.excitation_csr(ex_re, ex_im, gain)
    return EncodedBatch(
        codes=codes,
        offsets=offsets,
        indices=idx,
        amounts=amounts,
        phases=phases,
        n_tokens=n_tokens,
        bank_primes=bank_primes,
        n_dominant=n_dominant,
    )


class TextEncoder(Protocol):
    """What the observer, memory and evaluation need from an encoder."""

    name: str
    bank_primes: np.ndarray
    code_dim: int
    fingerprint: str

    def encode(self, text: str) -> EncodedText: ...

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_many(self, texts: Sequence[str]) -> EncodedBatch: ...
