"""The offline answerer's passage index: documents cut into passages, encoded, indexed.

A :class:`Block` holds one document's (or file's) passages with their spans,
section headings, codes and term counts; :func:`encode_blocks` builds blocks
in one encoder batch; :func:`assemble` joins blocks into the immutable
:class:`PassageIndex` that :class:`~sentient_core.learning.offline.CorpusAnswerer`
swaps whole on refresh. The shipped Python docs are encoded once per process
for the default encoder (:func:`default_doc_blocks`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

import msgspec
import numpy as np

from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.learning.splitting import passage_headings, passage_spans, with_heading
from sentient_core.memory import terms as memory_terms
from sentient_core.pydocs import documents as pydoc_documents
from sentient_core.store import terms as store_terms
from sentient_core.vocab import Source
from sentient_kernels.bm25 import K1, B
from sentient_kernels.bounds import term_bounds
from sentient_kernels.lexical import TermCounts
from sentient_kernels.segments import Packed, build_segment_unchecked, pack

__all__ = [
    "Block",
    "PassageIndex",
    "assemble",
    "build_doc_blocks",
    "default_doc_blocks",
    "encode_blocks",
]


class Block(msgspec.Struct, frozen=True):
    """Passages of one document or file: their spans, codes (unit or zero rows) and terms."""

    source: Source
    passages: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    codes: np.ndarray
    terms: TermCounts
    # The heading of each passage's section ("" for none), indexed with it.
    headings: tuple[str, ...] = ()
    # (dev, inode, mtime_ns, size) of a file, to skip unchanged ones.
    stamp: tuple[int, ...] = ()


def encode_blocks(
    encoder: TextEncoder, docs: Sequence[tuple[Source, str]], max_chars: int
) -> list[Block]:
    texts: list[str] = []
    headings: list[str] = []
    spans: list[tuple[int, int]] = []
    ranges: list[tuple[Source, int, int]] = []
    for source, text in docs:
        cut = passage_spans(text, max_chars)
        ranges.append((source, len(texts), len(texts) + len(cut)))
        texts.extend(text[a:b] for a, b in cut)
        headings.extend(passage_headings(text, cut))
        spans.extend(cut)
    # A passage is ranked with its section's heading (a changelog entry's version
    # line, a page title): the words that say what the passage is about.
    indexed = [with_heading(h, t) for h, t in zip(headings, texts, strict=True)]
    codes = (
        encoder.encode_batch(indexed)
        if indexed
        else np.zeros((0, encoder.code_dim), dtype=np.float32)
    )
    counts = memory_terms.count(indexed)
    return [
        Block(
            source=src,
            passages=tuple(texts[a:b]),
            spans=tuple(spans[a:b]),
            codes=codes[a:b],
            terms=_slice_terms(counts, a, b),
            headings=tuple(headings[a:b]),
        )
        for src, a, b in ranges
    ]


def _slice_terms(counts: TermCounts, a: int, b: int) -> TermCounts:
    lo, hi = int(counts.offsets[a]), int(counts.offsets[b])
    return TermCounts(
        counts.offsets[a : b + 1] - lo, counts.terms[lo:hi], counts.tfs[lo:hi], counts.lengths[a:b]
    )


@functools.cache
def default_doc_blocks(code_dim: int, max_chars: int) -> tuple[tuple[Block, ...], float]:
    """Shipped-docs index for the default encoder, built once per process."""
    return build_doc_blocks(get_encoder("token", code_dim=code_dim), max_chars)


def build_doc_blocks(encoder: TextEncoder, max_chars: int) -> tuple[tuple[Block, ...], float]:
    t0 = time.perf_counter()
    docs = [(Source("corpus", d.ref), d.text) for d in pydoc_documents()]
    blocks = tuple(encode_blocks(encoder, docs, max_chars))
    return blocks, time.perf_counter() - t0


class PassageIndex(msgspec.Struct, frozen=True):
    """An immutable snapshot: swapped whole by refresh(), so answer() needs no lock."""

    passages: tuple[str, ...]
    sources: tuple[Source, ...]
    spans: tuple[tuple[int, int], ...]
    headings: tuple[str, ...]
    codes: np.ndarray
    packed: Packed
    doc_len: np.ndarray
    avgdl: float


def assemble(blocks: Sequence[Block], code_dim: int) -> PassageIndex:
    """One immutable index over ``blocks`` (in order): passages, codes, a BM25 segment."""
    passages: list[str] = []
    sources: list[Source] = []
    spans: list[tuple[int, int]] = []
    headings: list[str] = []
    for b in blocks:
        passages.extend(b.passages)
        sources.extend([b.source] * len(b.passages))
        spans.extend(b.spans)
        headings.extend(b.headings or ("",) * len(b.passages))
    dim = code_dim
    codes = (
        np.ascontiguousarray(np.concatenate([b.codes for b in blocks]), dtype=np.float32)
        if blocks
        else np.zeros((0, dim), dtype=np.float32)
    )
    counts = store_terms.concat([b.terms for b in blocks]) if blocks else None
    if counts is None or not passages:
        packed, doc_len, avgdl = pack([], check=False), np.zeros(0, np.int32), 0.0
    else:
        seg = build_segment_unchecked(
            counts.offsets[:-1],
            counts.offsets[1:],
            counts.terms,
            counts.tfs,
            np.arange(len(passages), dtype=np.int64),
        )
        doc_len = np.minimum(counts.lengths, 2**31 - 1).astype(np.int32)
        packed = pack([seg], check=False, bounds=[term_bounds(seg, doc_len, K1, B)])
        avgdl = float(doc_len.mean())
    return PassageIndex(
        passages=tuple(passages),
        sources=tuple(sources),
        spans=tuple(spans),
        headings=tuple(headings),
        codes=codes,
        packed=packed,
        doc_len=doc_len,
        avgdl=avgdl,
    )
