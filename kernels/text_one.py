"""One text encoded end to end in one kernel call: code, excitation, strongest primes.

The observer encodes one text at a time (``process_text``), and there the
kernels were the smaller part of the cost: three dispatches (the encode kernel
with its 15 arguments, the excitation CSR, the dominant order), four scratch
arrays allocated from Python and a fancy-index gather each cost about as much
as the work. :func:`_encode_one` runs the very same kernels in one call
(:func:`sentient_kernels.text._encode_kernel`,
:func:`sentient_kernels.excitation._excitation_csr` and ``_dominant_order``), so its
results are bit-identical to the batch path's; only the Python around them goes.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.config import jit
from sentient_kernels.excitation import _dominant_order, _excitation_csr
from sentient_kernels.text import _encode_kernel

__all__ = ["encode_one"]


@jit(fastmath=False)
def _encode_one(
    buf,
    word_cp,
    stop_table,
    min_chars,
    max_chars,
    code_dim,
    bigram_weight,
    bank_primes,
    k_primes,
    gain,
    n_dominant,
):
    """Encode ``buf`` (one lowercased UTF-8 text) as the encoder's batch path does.

    Returns ``(code, n_tokens, indices, primes, amounts, phases, dominant)``:
    the (code_dim,) float32 code, the token count, the excitation as bank
    indices, their primes, amounts and phases, and the ``n_dominant`` strongest
    primes, strongest first.
    """
    n_bank = bank_primes.size
    offsets = np.zeros(2, dtype=np.int64)
    offsets[1] = buf.size
    codes = np.zeros((1, code_dim), dtype=np.float32)
    n_tokens = np.zeros(1, dtype=np.int64)
    ex_re = np.zeros((1, n_bank))
    ex_im = np.zeros((1, n_bank))
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
        k_primes,
        True,
        codes,
        n_tokens,
        ex_re,
        ex_im,
    )
    _offsets, idx, amounts, phases = _excitation_csr(ex_re, ex_im, gain)
    primes = bank_primes[idx]
    dominant = primes[_dominant_order(amounts, primes, n_dominant)]
    return codes[0], n_tokens[0], idx, primes, amounts, phases, dominant


def encode_one(
    data: bytes,
    word_cp: np.ndarray,
    stop_table: np.ndarray,
    min_chars: int,
    max_chars: int,
    code_dim: int,
    bigram_weight: float,
    bank_primes: np.ndarray,
    k_primes: int,
    gain: float,
    n_dominant: int,
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Encode one lowercased UTF-8 text in one kernel call (see :func:`_encode_one`).

    Parameters
    ----------
    data : bytes
        The text, lowercased and UTF-8 encoded.
    word_cp, stop_table : numpy.ndarray
        The encoder's word-character table (bool, indexed by code point) and
        frozen stop-word hash table (uint64).
    min_chars, max_chars, code_dim, k_primes, n_dominant : int
        Token length bounds, code width, primes per token, strongest primes kept.
    bigram_weight, gain : float
        Weight of bigram features; amount of each text's strongest prime.
    bank_primes : numpy.ndarray
        The encoder's int64 prime bank.

    Returns
    -------
    tuple
        ``(code, n_tokens, indices, primes, amounts, phases, dominant)``.

    Notes
    -----
    No checks beyond what the encoder guarantees by construction: it is the
    encoder's own fast path (:meth:`TokenPrimeEncoder.encode`), not a public kernel.
    """
    code, n_tokens, idx, primes, amounts, phases, dominant = _encode_one(
        np.frombuffer(data, dtype=np.uint8),
        word_cp,
        stop_table,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight,
        bank_primes,
        k_primes,
        gain,
        n_dominant,
    )
    return code, int(n_tokens), idx, primes, amounts, phases, dominant


def _warmup() -> None:
    """Compile :func:`_encode_one` with the signature the encoder uses."""
    word_cp = np.zeros(128, dtype=np.bool_)
    word_cp[ord("a") : ord("z") + 1] = True
    stop = np.zeros(16, dtype=np.uint64)
    stop.setflags(write=False)  # the encoder's tables and bank are frozen (their own Numba type)
    bank = np.array([2, 3, 5, 7], dtype=np.int64)
    bank.setflags(write=False)
    encode_one(b"tides follow the moon tides", word_cp, stop, 2, 40, 8, 0.5, bank, 2, 0.3, 2)
