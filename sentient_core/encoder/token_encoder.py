"""The default encoder: stable-hashed content tokens → bank primes and a hashed code.

The work runs as one Numba kernel per batch over the concatenated UTF-8 bytes
(:mod:`sentient_kernels.text`); this module builds its arguments and assembles the results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, ClassVar, NamedTuple

import msgspec
import numpy as np

from sentient_core.analysis import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS
from sentient_core.encoder.bank import DEFAULT_BANK_PRIMES, check_bank
from sentient_core.encoder.hashing import (
    ASTRAL_LEAD,
    ENCODING_VERSION,
    STOP_TABLE,
    WORD_TABLE,
    fingerprint,
)
from sentient_core.encoder.types import (
    EncodedBatch,
    EncodedText,
    Excitation,
    batch,
    check_texts,
    read_only,
)
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.ingest.keywords import keywords as _python_keywords
from sentient_kernels import keyword_pick, text_batch, unchecked
from sentient_kernels import text as text_kernels
from sentient_kernels.lexical import TermCounts

__all__ = ["TextAnalysis", "TokenEncoderConfig", "TokenPrimeEncoder"]


class TokenEncoderConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Settings of :class:`TokenPrimeEncoder` (the bank is passed separately).

    Attributes
    ----------
    code_dim : int
        Length of the float32 code.
    bigrams : bool
        Also hash adjacent content-token pairs into the code (not into the excitation).
    bigram_weight : float
        Weight of a bigram feature relative to a unigram with the same tf.
    primes_per_token : int
        Distinct bank primes each token excites (1 or 2; one if the bank has one prime).
    excitation_gain : float
        Amount given to the most strongly excited prime; the others scale with their amplitude.
    n_dominant : int
        How many primes :attr:`EncodedText.dominant_primes` lists.
    """

    code_dim: Annotated[int, msgspec.Meta(ge=8, le=65536)] = 256
    bigrams: bool = True
    bigram_weight: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.5
    primes_per_token: Annotated[int, msgspec.Meta(ge=1, le=2)] = 2
    excitation_gain: Annotated[float, msgspec.Meta(gt=0.0, le=1.0)] = 0.3
    n_dominant: Annotated[int, msgspec.Meta(ge=0, le=4096)] = 8


class TextAnalysis(NamedTuple):
    """What :meth:`TokenPrimeEncoder.analyse_many` finds in a batch of texts.

    Attributes
    ----------
    batch : EncodedBatch
        As :meth:`TokenPrimeEncoder.encode_many`.
    dominant : list of tuple of int
        Each text's dominant primes (``batch.item(i).dominant_primes``).
    keywords : list of list of str
        As :meth:`TokenPrimeEncoder.keywords_many`.
    terms : TermCounts
        The texts' lexical terms (:func:`sentient_core.memory.terms.count`).
    """

    batch: EncodedBatch
    dominant: list[tuple[int, ...]]
    keywords: list[list[str]]
    terms: TermCounts


def lowered_utf8(texts: Sequence[str]) -> list[bytes]:
    """``t.lower().encode("utf-8", "surrogatepass")`` of each text.

    An ASCII text is encoded first and lowered as bytes (the same bytes: ASCII
    lowers alone), about four times faster than ``str.lower`` on a 2 kB chunk.
    """
    return [
        t.encode().lower() if t.isascii() else t.lower().encode("utf-8", "surrogatepass")
        for t in texts
    ]


def _keywords(
    texts: list[str],
    joined: bytes,
    cand_start: np.ndarray,
    cand_end: np.ndarray,
    counts: np.ndarray,
    k: int,
    n_cand: int,
) -> list[list[str]]:
    """The top ``k`` keywords of each text from the kernel's candidate spans in ``joined``
    (pure numbers dropped; the Python ranking when they leave fewer than ``k``)."""
    words, status = keyword_pick.pick_unchecked(
        np.frombuffer(joined, dtype=np.uint8), cand_start, cand_end, counts, k
    )
    # One decode and two splits for the batch; the kernel leaves the rare texts
    # whose words it cannot judge from their bytes to _text_keywords.
    parts = words.tobytes().decode("utf-8", "surrogatepass").split("\x01")
    out: list[list[str]] = []
    for t, state in enumerate(status.tolist()):
        if state == keyword_pick.KEPT:
            out.append(parts[t].split("\x00") if parts[t] else [])
        elif state == keyword_pick.CALLER_RANKS:
            out.append(_python_keywords(texts[t], k))
        else:
            c = int(counts[t])
            spans = zip(cand_start[t, :c].tolist(), cand_end[t, :c].tolist(), strict=True)
            out.append(_text_keywords(texts[t], joined, spans, c, k, n_cand))
    return out


def _text_keywords(
    text: str, joined: bytes, spans: Iterable[tuple[int, int]], c: int, k: int, n_cand: int
) -> list[str]:
    """The top ``k`` keywords of one text from its ``c`` candidate spans in ``joined``."""
    top: list[str] = []
    if k:  # decode only as many candidates as it takes
        for a, b in spans:
            word = joined[a:b].decode("utf-8", "surrogatepass")
            if not word.isdigit():
                top.append(word)
                if len(top) == k:
                    break
    if len(top) < k and c == n_cand:
        top = _python_keywords(text, k)  # many numbers among the top: rare
    return top


class TokenPrimeEncoder:
    """Default encoder: stable-hashed content tokens → bank primes and a hashed code.

    Parameters
    ----------
    bank_primes : array-like of int, optional
        The oscillator bank (distinct primes). Default: :data:`DEFAULT_BANK_PRIMES`.
    **config
        Fields of :class:`TokenEncoderConfig` (``code_dim``, ``bigrams``, ...).

    Raises
    ------
    ValueError
        For an unknown or out-of-range option, or a bank that is not distinct primes.
    """

    name: ClassVar[str] = "token"

    def __init__(self, bank_primes: object = None, **config: object) -> None:
        self.bank_primes = check_bank(DEFAULT_BANK_PRIMES if bank_primes is None else bank_primes)
        try:
            self.config = msgspec.convert(config, TokenEncoderConfig)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"invalid TokenPrimeEncoder option: {exc}") from None
        self.code_dim = self.config.code_dim
        self._bigram_weight = self.config.bigram_weight if self.config.bigrams else 0.0
        #: Changes whenever codes for the same text could change (store it with the codes).
        self.fingerprint = fingerprint(
            self.name,
            ENCODING_VERSION,
            msgspec.structs.asdict(self.config),
            self.bank_primes.tolist(),
            sorted(STOP_WORDS),
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
        )

    def __repr__(self) -> str:
        return f"TokenPrimeEncoder(n_bank={self.bank_primes.size}, config={self.config!r})"

    def _run(
        self, buf: np.ndarray, offsets: np.ndarray, *, excitation: bool, astral: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n, n_bank = offsets.size - 1, int(self.bank_primes.size)
        codes = np.zeros((n, self.code_dim), dtype=np.float32)
        n_tokens = np.zeros(n, dtype=np.int64)
        shape = (n, n_bank) if excitation else (0, n_bank)
        ex_re, ex_im = np.zeros(shape), np.zeros(shape)
        # The encoder builds every argument itself (see the unchecked preconditions).
        unchecked.text_encode(
            buf,
            offsets,
            WORD_TABLE.get(True) if astral else WORD_TABLE.bmp,
            STOP_TABLE,
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            self.code_dim,
            self._bigram_weight,
            n_bank,
            self.config.primes_per_token,
            excitation,
            codes,
            n_tokens,
            ex_re,
            ex_im,
        )
        return codes, n_tokens, ex_re, ex_im

    def _encode(self, texts: list[str], *, excitation: bool) -> EncodedBatch:
        parts = lowered_utf8(texts)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
        # Lead bytes 0xF0.. start 4-byte (astral) sequences.
        astral = bool(buf.size) and bool((buf >= 0xF0).any())
        codes, n_tokens, ex_re, ex_im = self._run(
            buf, offsets, excitation=excitation, astral=astral
        )
        return batch(
            codes,
            n_tokens,
            ex_re if excitation else None,
            ex_im if excitation else None,
            self.bank_primes,
            self.config.excitation_gain,
            self.config.n_dominant,
        )

    def keywords_many(self, texts: Sequence[str], k: int = 8) -> list[list[str]]:
        """Top-``k`` keywords of each text, as :func:`sentient_core.ingest.keywords.keywords`.

        Same result (most frequent non-stop-word tokens, ties by first
        occurrence, pure numbers dropped) from one Numba pass over the batch
        instead of a Python tokenise-and-count per text.
        """
        texts = check_texts(texts)
        if k < 0:
            raise ArgumentError(f"k must be >= 0, got {k}")
        if not texts:
            return []
        parts = lowered_utf8(texts)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        joined = b"".join(parts)
        buf = np.frombuffer(joined, dtype=np.uint8)
        astral = bool(buf.size) and bool((buf >= 0xF0).any())
        n_cand = 2 * k + 8  # room for the pure numbers dropped below
        cand_start, cand_end, counts = text_kernels.keywords(
            buf,
            offsets,
            WORD_TABLE.get(True) if astral else WORD_TABLE.bmp,
            STOP_TABLE,
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            n_cand,
        )
        return _keywords(texts, joined, cand_start, cand_end, counts, k, n_cand)

    def analyse_many(self, texts: Sequence[str], k: int = 8, *, threads: int = 0) -> TextAnalysis:
        """:meth:`encode_many`, :meth:`keywords_many` and the texts' lexical terms
        (:func:`sentient_core.memory.terms.count`) in one kernel pass
        (:func:`sentient_kernels.text_batch.analyse`): the same results.

        ``threads``: texts analysed on this many threads at once (0: Numba's
        thread count); the results do not depend on it.
        """
        texts = check_texts(texts)
        if k < 0:
            raise ArgumentError(f"k must be >= 0, got {k}")
        if threads < 0:
            raise ArgumentError(f"threads must be >= 0, got {threads}")
        parts = lowered_utf8(texts)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        joined = b"".join(parts)
        buf = np.frombuffer(joined, dtype=np.uint8)
        astral = bool(buf.size) and bool((buf >= 0xF0).any())
        n_cand = 2 * k + 8  # as keywords_many
        cfg = self.config
        a = text_batch.analyse_unchecked(
            buf,
            offsets,
            WORD_TABLE.get(True) if astral else WORD_TABLE.bmp,
            STOP_TABLE,
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            self.code_dim,
            self.bank_primes,
            self._bigram_weight,
            cfg.primes_per_token,
            cfg.excitation_gain,
            cfg.n_dominant,
            n_cand,
            threads,
        )
        dominant = a.dominant.tolist()
        used = a.n_dominant_used.tolist()
        return TextAnalysis(
            batch=EncodedBatch(
                codes=a.codes,
                offsets=a.ex_offsets,
                indices=a.ex_indices,
                amounts=a.ex_amounts,
                phases=a.ex_phases,
                n_tokens=a.n_tokens,
                bank_primes=self.bank_primes,
                n_dominant=cfg.n_dominant,
            ),
            dominant=[tuple(row[:u]) for row, u in zip(dominant, used, strict=True)],
            keywords=_keywords(texts, joined, a.cand_start, a.cand_end, a.n_cand_used, k, n_cand),
            terms=TermCounts(a.term_offsets, a.terms, a.tfs, a.n_tokens),
        )

    def encode(self, text: str) -> EncodedText:
        """Encode one text (excitation, code, dominant primes).

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise ArgumentTypeError(f"text must be str, got {type(text).__name__}")
        data = text.lower().encode("utf-8", "surrogatepass")
        astral = not data.isascii() and ASTRAL_LEAD.search(data) is not None
        # One kernel call (the batch path's kernels, fused): the observer encodes
        # texts one by one, and three dispatches cost as much as the encoding.
        code, n_tokens, idx, primes, amounts, phases, dominant = unchecked.text_encode_one(
            np.frombuffer(data, dtype=np.uint8),
            WORD_TABLE.get(True) if astral else WORD_TABLE.bmp,
            STOP_TABLE,
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            self.code_dim,
            self._bigram_weight,
            self.bank_primes,
            self.config.primes_per_token,
            self.config.excitation_gain,
            self.config.n_dominant,
        )
        return EncodedText(
            excitation=Excitation(
                indices=read_only(idx),
                primes=read_only(primes),
                amounts=read_only(amounts),
                phases=read_only(phases),
            ),
            code=read_only(code),
            dominant_primes=tuple(dominant.tolist()),
            n_tokens=int(n_tokens),
        )

    def encode_many(self, texts: Sequence[str]) -> EncodedBatch:
        """Encode many texts (codes and CSR excitations) in one kernel call."""
        return self._encode(check_texts(texts), excitation=True)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Codes only: float32 array (len(texts), code_dim), rows unit-norm or zero."""
        return self._encode(check_texts(texts), excitation=False).codes
