"""Numba kernels of sentient-core: pure functions over arrays, no I/O.

Modules
-------
sedenion     Cayley–Dickson sedenion algebra (single and batched).
smf          Sedenion Memory Field: 16-axis orientation, entropy, update from oscillators.
prsc         Prime-resonance oscillator bank (mean-field Kuramoto-style ticks).
holographic  Exact top-k cosine search over float32 code rows.
scorer       Bounded learned recall scorer (score, rank, SGD on judged outcomes).
credit       Memory credit with hysteresis (strength changes from surprise events).
tick         Fused observer tick: PRSC step + SMF update per step, in one call.
text         Tokenise/hash/count UTF-8 text into hashed codes and keyword ranks.

Importing this package needs only numpy and numba. Call :func:`kernels.warmup.warmup`
once at start-up to compile (or load from the on-disk cache) every kernel.
"""

from kernels import credit, holographic, prsc, scorer, sedenion, smf, text, tick

__all__ = ["credit", "holographic", "prsc", "scorer", "sedenion", "smf", "text", "tick"]
