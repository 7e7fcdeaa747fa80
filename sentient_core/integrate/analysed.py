"""What a run of chunks is before the observer sees it: analysed once, sliced and joined.

The analysis of a chunk — code, excitation, dominant primes, topic line and
keywords, terms, content digest — depends on the chunk alone, so it can be made
where the chunk is made (the loading thread, :mod:`sentient_core.integrate.loading`,
one file at a time) and joined into the batches commits take, which span files
(:func:`join`). Only the observer (whose state each chunk changes) and the store
need the batch in order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from sentient_core.encoder import EncodedBatch, TokenPrimeEncoder
from sentient_core.ingest.keywords import heading
from sentient_core.integrate.summary import StageTimes
from sentient_core.store import content
from sentient_kernels.lexical import TermCounts

__all__ = ["ChunkAnalysis", "analyse", "join", "topic_lines"]

KEYWORDS = 8
"""Keywords kept per chunk."""


class ChunkAnalysis(NamedTuple):
    """``n`` chunks analysed (see the module docstring).

    Attributes
    ----------
    batch : EncodedBatch
        Codes and excitations (:meth:`TokenPrimeEncoder.encode_many`).
    dominant : list of tuple of int
    topics : list of str
    keywords : list of tuple of str
    terms : TermCounts
    digests : list of bytes
    """

    batch: EncodedBatch
    dominant: list[tuple[int, ...]]
    topics: list[str]
    keywords: list[tuple[str, ...]]
    terms: TermCounts
    digests: list[bytes]


def topic_lines(
    texts: Sequence[str], tops: Sequence[list[str]], k: int
) -> list[tuple[str, list[str]]]:
    """(topic, keywords) per text from its top ``max(k, 3)`` keywords: the first
    heading-like line, else the top three keywords (as ``topic_and_keywords``)."""
    return [(heading(x) or " ".join(top[:3]), top[:k]) for x, top in zip(texts, tops, strict=True)]


def analyse(encoder: TokenPrimeEncoder, texts: list[str], st: StageTimes) -> ChunkAnalysis:
    """Analyse ``texts``: one kernel pass (``encode``), topic lines (``keywords``) and
    content digests (``code``), timed into ``st``."""
    t = time.perf_counter()
    found = encoder.analyse_many(texts, KEYWORDS)
    st.encode += time.perf_counter() - t
    t = time.perf_counter()
    topics = topic_lines(texts, found.keywords, KEYWORDS)
    st.keywords += time.perf_counter() - t
    t = time.perf_counter()
    digests = content.digests(texts)
    st.code += time.perf_counter() - t
    return ChunkAnalysis(
        found.batch,
        found.dominant,
        [topic for topic, _ in topics],
        [tuple(words) for _, words in topics],
        found.terms,
        digests,
    )


def _csr(offsets: np.ndarray, lo: int, hi: int, base: int) -> tuple[np.ndarray, slice]:
    """Rows ``lo:hi`` of a CSR: their offsets (less the first row's, plus ``base``)
    and the slice of entries they own."""
    start = int(offsets[lo])
    return offsets[lo + 1 : hi + 1] - start + base, slice(start, int(offsets[hi]))


def join(parts: Sequence[tuple[ChunkAnalysis, int, int]]) -> ChunkAnalysis:
    """Chunks ``lo:hi`` of each analysis, in order, as one analysis."""
    if len(parts) == 1 and parts[0][1] == 0 and parts[0][2] == len(parts[0][0].digests):
        return parts[0][0]
    first = parts[0][0].batch
    ex_off, tm_off = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    ex_take, tm_take = [], []
    ex_base = tm_base = 0
    for a, lo, hi in parts:
        offs, take = _csr(a.batch.offsets, lo, hi, ex_base)
        ex_off.append(offs)
        ex_take.append((a.batch, take))
        ex_base += take.stop - take.start
        offs, take = _csr(a.terms.offsets, lo, hi, tm_base)
        tm_off.append(offs)
        tm_take.append((a.terms, take))
        tm_base += take.stop - take.start
    batch = EncodedBatch(
        codes=np.concatenate([a.batch.codes[lo:hi] for a, lo, hi in parts]),
        offsets=np.concatenate(ex_off),
        indices=np.concatenate([b.indices[s] for b, s in ex_take]),
        amounts=np.concatenate([b.amounts[s] for b, s in ex_take]),
        phases=np.concatenate([b.phases[s] for b, s in ex_take]),
        n_tokens=np.concatenate([a.batch.n_tokens[lo:hi] for a, lo, hi in parts]),
        bank_primes=first.bank_primes,
        n_dominant=first.n_dominant,
    )
    terms = TermCounts(
        np.concatenate(tm_off),
        np.concatenate([t.terms[s] for t, s in tm_take]),
        np.concatenate([t.tfs[s] for t, s in tm_take]),
        np.concatenate([a.terms.lengths[lo:hi] for a, lo, hi in parts]),
    )
    return ChunkAnalysis(
        batch,
        [d for a, lo, hi in parts for d in a.dominant[lo:hi]],
        [d for a, lo, hi in parts for d in a.topics[lo:hi]],
        [d for a, lo, hi in parts for d in a.keywords[lo:hi]],
        terms,
        [d for a, lo, hi in parts for d in a.digests[lo:hi]],
    )
