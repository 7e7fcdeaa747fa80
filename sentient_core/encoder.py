"""Text → prime excitations and fixed-length holographic codes.

Two encoders share one interface (:class:`TextEncoder`):

``"token"`` (default, :class:`TokenPrimeEncoder`)
    Tokens are those of :func:`sentient_core.ingest.keywords.tokenize`
    (lowercase ``\\w+`` runs of 2–40 characters) minus
    :data:`~sentient_core.ingest.keywords.STOP_WORDS`. Each content token gets a
    stable 64-bit hash (:func:`token_hash`: 64-bit FNV-1a over its UTF-8 bytes,
    finished with the SplitMix64 mixer). Then

    * **excitation** – each distinct token excites ``primes_per_token`` distinct
      primes of the bank, chosen by its hash, with phases from the same hash
      (quantised to 2π/4096). Complex amplitudes ``w · e^{iθ}`` (``w = 1 + ln tf``)
      are summed per prime; the :class:`Excitation` holds bank indices, amounts
      scaled so that the strongest prime gets ``excitation_gain``, and the phase
      of each sum: the arguments of ``kernels.prsc.excite(state, indices,
      amounts, phases, pull)``.
    * **code** ("hologram") – signed feature hashing of the tokens (weight
      ``1 + ln tf``) and, by default, of adjacent content-token bigrams
      (weight ``bigram_weight · (1 + ln tf)``) into ``code_dim`` dimensions,
      L2-normalised, float32. A text without content tokens has the **zero
      code** (cosine 0 with everything) and an empty excitation.

``"char-compat"`` (:class:`CharPrimeEncoder`)
    The reference design's character-level encoder, kept **only for
    compatibility and comparison**; it barely discriminates (see
    :mod:`sentient_core.retrieval_eval`) and must not be the default.

Determinism: hashes use fixed 64-bit integer arithmetic, never Python's salted
``hash()``, and features are accumulated in sorted-hash order without fast-math,
so codes are bit-identical across processes. Across machines, buckets, signs and
prime picks are exact; floats can differ only if the platform's ``log``/``cos``
(used once for small lookup tables) round differently.

Speed: the token encoder runs as one Numba kernel per batch over the
concatenated UTF-8 bytes (tokenising, hashing, stop-word filtering, tf counting,
accumulation); the kernels live in :mod:`kernels.text`.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar, Protocol

import msgspec
import numpy as np

from kernels import text as text_kernels
from kernels import unchecked
from kernels.prsc import first_primes
from kernels.text import FNV_OFFSET, FNV_PRIME, GOLDEN, MASK64
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.ingest.keywords import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS, tokenize
from sentient_core.ingest.keywords import keywords as _python_keywords

__all__ = [
    "CHAR_TO_PRIME",
    "DEFAULT_BANK_PRIMES",
    "ENCODER_NAMES",
    "ENCODING_VERSION",
    "CharEncoderConfig",
    "CharPrimeEncoder",
    "EncodedBatch",
    "EncodedText",
    "Excitation",
    "TextEncoder",
    "TokenEncoderConfig",
    "TokenPrimeEncoder",
    "get_encoder",
    "token_hash",
]


#: Bump when the token or char encoding changes for the same configuration
#: (stored codes made by another version are not comparable).
ENCODING_VERSION = 1


def _fingerprint(*parts: object) -> str:
    """Short stable digest of an encoder's identity (name, version, settings, bank, ...)."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(repr(part).encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


# ---------------------------------------------------------------------------
# Primes
# ---------------------------------------------------------------------------


#: The SPEC's oscillator bank: 64 primes, 2..311.
DEFAULT_BANK_PRIMES: np.ndarray = first_primes(64)
DEFAULT_BANK_PRIMES.setflags(write=False)


def _is_prime(p: int) -> bool:
    if p < 2:
        return False
    return all(p % d for d in range(2, math.isqrt(p) + 1))


def _check_bank(bank_primes: object) -> np.ndarray:
    arr = np.asarray(bank_primes)
    if arr.ndim != 1 or arr.size == 0:
        raise ArgumentError(f"bank_primes must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentTypeError(f"bank_primes must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if np.unique(arr).size != arr.size:
        raise ArgumentError("bank_primes contains duplicates")
    bad = [int(p) for p in arr if not _is_prime(int(p))]
    if bad:
        raise ArgumentError(f"bank_primes contains non-primes: {bad[:5]}")
    arr.setflags(write=False)
    return arr


# ---------------------------------------------------------------------------
# Tokens and stable hashing
# ---------------------------------------------------------------------------


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


_STOP_TABLE = _stop_table(STOP_WORDS)


class _WordTable:
    """Which code points ``re``'s ``\\w`` matches, as a bool array indexed by code point.

    Built from ``re`` itself, so the kernel tokenises exactly like
    :func:`~sentient_core.ingest.keywords.tokenize`. The BMP (~10 ms) is built on
    first use; the astral planes (~0.5 s) only when a text needs them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: np.ndarray | None = None

    @staticmethod
    def _build(lo: int, hi: int) -> np.ndarray:
        chars = "".join(map(chr, range(lo, hi)))
        marked = re.sub(r"\W", "\x00", chars)
        return np.frombuffer(marked.encode("utf-32-le", "surrogatepass"), dtype=np.uint32) != 0

    def get(self, astral: bool) -> np.ndarray:
        table = self._table
        if table is not None and (not astral or table.size > 0x10000):
            return table
        with self._lock:
            if self._table is None:
                self._table = self._build(0, 0x10000)
            if astral and self._table.size == 0x10000:
                self._table = np.concatenate([self._table, self._build(0x10000, 0x110000)])
            return self._table


_WORD_TABLE = _WordTable()
# Lead bytes of 4-byte UTF-8 sequences (code points beyond the BMP).
_ASTRAL_LEAD = re.compile(rb"[\xf0-\xff]")


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


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
            indices=_ro(idx),
            primes=_ro(self.bank_primes[idx]),
            amounts=_ro(self.amounts[lo:hi]),
            phases=_ro(self.phases[lo:hi]),
        )

    def item(self, i: int) -> EncodedText:
        """Text ``i`` as an :class:`EncodedText`."""
        exc = self.excitation(i)
        return EncodedText(
            excitation=exc,
            code=_ro(self.codes[i].copy()),
            dominant_primes=_dominant(exc, self.n_dominant),
            n_tokens=int(self.n_tokens[i]),
        )


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _dominant(exc: Excitation, k: int) -> tuple[int, ...]:
    return tuple(exc.primes[text_kernels.dominant_order(exc.amounts, exc.primes, k)].tolist())


def _check_texts(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, (str, bytes)):
        raise ArgumentTypeError("texts must be a sequence of str, not a single str/bytes")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ArgumentTypeError(f"texts[{i}] must be str, got {type(t).__name__}")
    return out


def _batch(
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
        offsets, idx, amounts, phases = text_kernels.excitation_csr(ex_re, ex_im, gain)
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


# ---------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------


class TextEncoder(Protocol):
    """What the observer, memory and evaluation need from an encoder."""

    name: str
    bank_primes: np.ndarray
    code_dim: int
    fingerprint: str

    def encode(self, text: str) -> EncodedText: ...

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_many(self, texts: Sequence[str]) -> EncodedBatch: ...


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
        self.bank_primes = _check_bank(DEFAULT_BANK_PRIMES if bank_primes is None else bank_primes)
        try:
            self.config = msgspec.convert(config, TokenEncoderConfig)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"invalid TokenPrimeEncoder option: {exc}") from None
        self.code_dim = self.config.code_dim
        self._bigram_weight = self.config.bigram_weight if self.config.bigrams else 0.0
        #: Changes whenever codes for the same text could change (store it with the codes).
        self.fingerprint = _fingerprint(
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
            _WORD_TABLE.get(astral),
            _STOP_TABLE,
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
        parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
        # Lead bytes 0xF0.. start 4-byte (astral) sequences.
        astral = bool(buf.size) and bool((buf >= 0xF0).any())
        codes, n_tokens, ex_re, ex_im = self._run(
            buf, offsets, excitation=excitation, astral=astral
        )
        return _batch(
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
        texts = _check_texts(texts)
        if k < 0:
            raise ArgumentError(f"k must be >= 0, got {k}")
        if not texts:
            return []
        parts = [t.lower().encode("utf-8", "surrogatepass") for t in texts]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        joined = b"".join(parts)
        buf = np.frombuffer(joined, dtype=np.uint8)
        astral = bool(buf.size) and bool((buf >= 0xF0).any())
        n_cand = 2 * k + 8  # room for the pure numbers dropped below
        cand_start, cand_end, counts = text_kernels.keywords(
            buf,
            offsets,
            _WORD_TABLE.get(astral),
            _STOP_TABLE,
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            n_cand,
        )
        out: list[list[str]] = []
        for t in range(len(texts)):
            words = [
                joined[a:b].decode("utf-8", "surrogatepass")
                for a, b in zip(
                    cand_start[t, : counts[t]].tolist(),
                    cand_end[t, : counts[t]].tolist(),
                    strict=True,
                )
            ]
            top = [w for w in words if not w.isdigit()][:k]
            if len(top) < k and counts[t] == n_cand:
                top = _python_keywords(texts[t], k)  # many numbers among the top: rare
            out.append(top)
        return out

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
        astral = not data.isascii() and _ASTRAL_LEAD.search(data) is not None
        codes, n_tokens, ex_re, ex_im = self._run(
            np.frombuffer(data, dtype=np.uint8),
            np.array([0, len(data)], dtype=np.int64),
            excitation=True,
            astral=astral,
        )
        _, idx, amounts, phases = unchecked.text_excitation_csr(
            ex_re, ex_im, self.config.excitation_gain
        )
        primes = self.bank_primes[idx]
        return EncodedText(
            excitation=Excitation(
                indices=_ro(idx), primes=_ro(primes), amounts=_ro(amounts), phases=_ro(phases)
            ),
            code=_ro(codes[0]),
            dominant_primes=tuple(
                primes[
                    unchecked.text_dominant_order(amounts, primes, self.config.n_dominant)
                ].tolist()
            ),
            n_tokens=int(n_tokens[0]),
        )

    def encode_many(self, texts: Sequence[str]) -> EncodedBatch:
        """Encode many texts (codes and CSR excitations) in one kernel call."""
        return self._encode(_check_texts(texts), excitation=True)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Codes only: float32 array (len(texts), code_dim), rows unit-norm or zero."""
        return self._encode(_check_texts(texts), excitation=False).codes


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
        self.bank_primes = _check_bank(DEFAULT_BANK_PRIMES if bank_primes is None else bank_primes)
        try:
            self.config = msgspec.convert(config, CharEncoderConfig)
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"invalid CharPrimeEncoder option: {exc}") from None
        self.code_dim = self.config.code_dim
        #: Changes whenever codes for the same text could change (store it with the codes).
        self.fingerprint = _fingerprint(
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
        np.add.at(codes, (slice(None), np.arange(n_bank) % self.code_dim), counts)
        norms = np.linalg.norm(codes, axis=1, keepdims=True)
        np.divide(codes, norms, out=codes, where=norms > 0)
        return _batch(
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
        return self._encode(_check_texts(texts), excitation=True)

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Codes only: float32 array (len(texts), code_dim)."""
        return self._encode(_check_texts(texts), excitation=False).codes


_ENCODERS: dict[str, type] = {
    TokenPrimeEncoder.name: TokenPrimeEncoder,
    CharPrimeEncoder.name: CharPrimeEncoder,
}
#: Names accepted by :func:`get_encoder`; the first is the default.
ENCODER_NAMES: tuple[str, ...] = tuple(_ENCODERS)


def get_encoder(name: str = "token", **kw: object) -> TextEncoder:
    """Build an encoder by name.

    Parameters
    ----------
    name : str
        ``"token"`` (default) or ``"char-compat"`` (reference compatibility only).
    **kw
        Passed to the encoder's constructor (``bank_primes``, ``code_dim``, ...).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones) or a bad option.
    """
    try:
        cls = _ENCODERS[name]
    except (KeyError, TypeError):
        raise ArgumentError(
            f"unknown encoder {name!r}; known encoders: {', '.join(ENCODER_NAMES)}"
        ) from None
    return cls(**kw)
