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
      of each sum: the arguments of ``sentient_kernels.prsc.excite(state, indices,
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
accumulation); the kernels live in :mod:`sentient_kernels.text`.

Modules
-------
types          :class:`Excitation`, :class:`EncodedText`, :class:`EncodedBatch`, :class:`TextEncoder`
token_encoder  :class:`TokenPrimeEncoder` (default) and its :class:`TokenEncoderConfig`
char_encoder   :class:`CharPrimeEncoder` (compatibility only) and :data:`CHAR_TO_PRIME`
hashing        :func:`token_hash`, encoder fingerprints, the kernel's stop-word and word tables
bank           :data:`DEFAULT_BANK_PRIMES` and the check of a given bank
registry       :func:`get_encoder` and :data:`ENCODER_NAMES`
"""

from sentient_core.encoder.bank import DEFAULT_BANK_PRIMES
from sentient_core.encoder.char_encoder import CHAR_TO_PRIME, CharEncoderConfig, CharPrimeEncoder
from sentient_core.encoder.hashing import ENCODING_VERSION, token_hash
from sentient_core.encoder.registry import ENCODER_NAMES, get_encoder
from sentient_core.encoder.token_encoder import TokenEncoderConfig, TokenPrimeEncoder
from sentient_core.encoder.types import EncodedBatch, EncodedText, Excitation, TextEncoder

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
