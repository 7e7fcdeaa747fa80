"""Numba kernels of sentient-core: pure functions over arrays, no I/O.

Modules
-------
sedenion     Cayley–Dickson sedenion algebra (single and batched).
smf          Sedenion Memory Field: 16-axis orientation, entropy, update from oscillators.
prsc         Prime-resonance oscillator bank (mean-field Kuramoto-style ticks).
holographic  Exact top-k cosine search over float32 code rows.
holographic_one  The same top-k for one query over a small matrix, in one serial dispatch.
topk_parts   What every exact top-k scan shares: dots, norms, the final score, the heap.
interference The interference picture of a prime state (display only).
quantized    int8 codes (¼ the memory) whose top-k equals holographic's exactly.
dot_i8       Exact int8 × int16 row dots (VNNI ``vpdpbusd`` when the CPU has it), row prefetch.
overlay      Scored top-k: the learned scorer's overlay inside the cosine scan.
overlay_q8   The same scored top-k, bit for bit, scanning int8 codes.
scorer       Bounded learned recall scorer (score, rank, SGD on judged outcomes).
credit       Memory credit with hysteresis (strength changes from surprise events).
tick         Fused observer tick: PRSC step + SMF update per step, in one call.
text         Tokenise/hash/count UTF-8 text into hashed codes and keyword ranks.
text_one     One text encoded end to end (code, excitation, strongest primes) in one call.
text_batch   A batch analysed in one pass: codes, excitations, strongest primes, keywords, terms.
keyword_pick Each text's top keywords picked from its candidate spans (numbers dropped), for one decode.
spaces       Whitespace runs collapsed over UTF-8 bytes (content digests of a batch).
lexical      Hashed terms per text (the encoder's tokens), counted, and their storage form.
segments     Inverted-index segments over rows (build, merge).
bounds       Per-block bounds of BM25's tf factors (what lets MaxScore skip postings).
bm25         Exact BM25 top-k over posting segments, and a BM25 + cosine hybrid.
maxscore     The same BM25 top-k, skipping postings that cannot reach it (block-max MaxScore).
maxscore_hybrid  The same hybrid top-k on MaxScore.
doc_freqs    Each query term's document frequency over one part of a corpus (shards).
maxscore_scored  The scored hybrid top-k (the learned scorer's overlay) on MaxScore.
postings     Group row numbers by key (posting lists) in one counting-sort pass.
colrows      Stored column rows unpacked into the memory mirror's arrays in one pass.
unchecked    The raw kernels behind the wrappers, without checks, for hot paths
             and for calling from your own ``@njit`` code (preconditions stated).
checks       The argument checks of the wrappers (and ``count_finite`` for kernels).
config       The one place for Numba flags (cache, fastmath, parallel).

Every public function outside :mod:`sentient_kernels.unchecked` checks its arguments
(dtype, shape, contiguity, finiteness) and raises ``TypeError``/``ValueError``
naming the bad one. Importing this package needs only numpy and numba. Call
:func:`sentient_kernels.warmup.warmup` once at start-up to compile (or load from the
on-disk cache) every kernel.
"""

from sentient_kernels import (
    bm25,
    bounds,
    checks,
    colrows,
    config,
    credit,
    doc_freqs,
    dot_i8,
    holographic,
    holographic_one,
    interference,
    keyword_pick,
    lexical,
    maxscore,
    maxscore_hybrid,
    maxscore_scored,
    overlay,
    overlay_q8,
    postings,
    prsc,
    quantized,
    scorer,
    sedenion,
    segments,
    smf,
    spaces,
    text,
    text_batch,
    text_one,
    tick,
    topk_parts,
    unchecked,
)

__all__ = [
    "bm25",
    "bounds",
    "checks",
    "colrows",
    "config",
    "credit",
    "doc_freqs",
    "dot_i8",
    "holographic",
    "holographic_one",
    "interference",
    "keyword_pick",
    "lexical",
    "maxscore",
    "maxscore_hybrid",
    "maxscore_scored",
    "overlay",
    "overlay_q8",
    "postings",
    "prsc",
    "quantized",
    "scorer",
    "sedenion",
    "segments",
    "smf",
    "spaces",
    "text",
    "text_batch",
    "text_one",
    "tick",
    "topk_parts",
    "unchecked",
]
