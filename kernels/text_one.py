"""One text encoded end to end in one kernel call: code, excitation, strongest primes.

The observer encodes one text at a time (``process_text``), and there the
kernels were the smaller part of the cost: three dispatches (the encode kernel
with its 15 arguments, the excitation CSR, the dominant order), four scratch
arrays allocated from Python and a fancy-index gather each cost about as much
as the work. :func:`_encode_one` runs the very same kernels in one call
(:func:`sentient_kernels.text._encode_kernel`,
:func:`sentient_kernels.excitation._excitation_csr` and ``_dominant_order``), so its
results are bit-identical to the batch path's; only the Python around them goes.
:func:`encode_one` is the checked wrapper; the encoder, which builds every
argument itself, calls the kernel as ``sentient_kernels.unchecked.text_encode_one``.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit
from sentient_kernels.excitation import _dominant_order, _excitation_csr
from sentient_kernels.text import _check_batch, _encode_kernel

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
    buf: np.ndarray,
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
) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Encode one text in one kernel call: code, excitation and strongest primes.

    The same results as :func:`sentient_kernels.text.encode` on a one-text batch
    followed by :func:`sentient_kernels.excitation.excitation_csr` and
    :func:`sentient_kernels.excitation.dominant_order` (the same kernels run).

    Parameters
    ----------
    buf : numpy.ndarray
        uint8, the text lowercased and UTF-8 encoded.
    word_cp, stop_table, min_chars, max_chars
        As for :func:`sentient_kernels.text.encode`.
    code_dim : int
        Length of the code, ≥ 1.
    bank_primes : numpy.ndarray
        int64 (n_bank,), n_bank ≥ 1: the oscillator bank's primes.
    bigram_weight, primes_per_token
        As for :func:`sentient_kernels.text.encode`.
    gain : float
        Amount of the strongest prime (finite, > 0).
    n_dominant : int
        How many strongest primes to return (≥ 0).

    Returns
    -------
    tuple
        ``(code, n_tokens, indices, primes, amounts, phases, dominant)``: the
        float32 (code_dim,) code, the token count, the excitation as bank
        indices, their primes, amounts and phases in [0, 2π), and the
        ``n_dominant`` strongest primes, strongest first (ties: smaller prime).

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """
    offsets = np.array([0, getattr(buf, "size", 0)], dtype=np.int64)
    buf, _offsets, word_cp, stop_table, min_chars, max_chars = _check_batch(
        buf, offsets, word_cp, stop_table, min_chars, max_chars
    )
    code_dim = check_int("code_dim", code_dim, lo=1, hi=1 << 31)
    bank_primes = check_array("bank_primes", bank_primes, dtype=np.int64, ndim=1, min_rows=1)
    bigram_weight = check_scalar("bigram_weight", bigram_weight, lo=0.0)
    primes_per_token = check_int("primes_per_token", primes_per_token, lo=1, hi=2)
    gain = check_scalar("gain", gain, lo=0.0, lo_open=True)
    n_dominant = check_int("n_dominant", n_dominant, lo=0)
    code, n_tokens, idx, primes, amounts, phases, dominant = _encode_one(
        buf,
        word_cp,
        stop_table,
        min_chars,
        max_chars,
        code_dim,
        bigram_weight,
        bank_primes,
        primes_per_token,
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
    buf = np.frombuffer(b"tides follow the moon tides", dtype=np.uint8)
    _encode_one(buf, word_cp, stop, 2, 40, 8, 0.5, bank, 2, 0.3, 2)
    encode_one(buf, word_cp, stop, 2, 40, 8, bank, bigram_weight=0.5, primes_per_token=2, gain=0.3)
