"""The embedded default chaperone: extractive answers from a local corpus, no LLM.

Corpus
    Text files (.txt, .md, .json, .html/.htm, .pdf) under the given folders — by
    default the incoming dir — walked with :func:`sentient_core.ingest.iter_files`
    (symlinks leaving a root are not followed, dot-files skipped, hard links
    skipped unless allowed). Every file is opened through
    :class:`sentient_core.confine.ConfinedDir` (from the folder's descriptor,
    component by component, never through a symlink leading out), its bytes
    read from that descriptor and extracted with
    :func:`sentient_core.ingest.extract_bytes`; a folder or file swapped while
    being read is refused, not followed. Files that cannot be read or extracted
    are skipped and listed in :attr:`CorpusAnswerer.skipped` with the reason.
    Plus, unless disabled, the documentation that ships with Python: every
    ``pydoc_data.topics`` topic (the language reference pages ``help()`` shows)
    and the docstring (≥ 200 characters) of each public top-level stdlib module.
    Module docstrings are read from the source files with :mod:`tokenize`, never
    by importing the modules: no import side effects and ~100 MB less memory
    than importing the whole stdlib.

Passages
    Paragraphs (blank-line separated) packed up to ``passage_chars`` (600)
    characters; a longer paragraph is cut at sentence ends, a longer sentence at
    a space (:mod:`sentient_core.learning.splitting`). Each passage is an exact
    slice of its document's text: the **document text** is what
    :func:`sentient_core.ingest.extract_bytes` returns for a file's bytes (for
    the shipped docs, :attr:`sentient_core.pydocs.PyDoc.text`), with no further
    normalisation, and ``passages[i] == document_text[start:end]`` for
    ``(start, end) = spans[i]``. Each passage keeps its own source:
    ``Source("corpus", "pydoc:topic:<name>")`` / ``"pydoc:module:<name>"`` for
    the shipped docs, ``Source("local", <path>)`` for a file.

Ranking
    By the memory's lexical ranking (:func:`sentient_core.memory.lexical.rank_rows`)
    over an inverted index of the passages' terms: ``rank="bm25"`` scores BM25
    divided by the question's ceiling (the idf-weighted share of the question
    a passage covers, in [0, 1]); ``rank="hybrid"`` (the default, as for
    :meth:`HolographicMemory.recall`; chosen on the pydoc Q/A set, see
    ``bench/offline_answers.py``) mixes in the cosine of the token encoder's
    codes (``code_dim`` 1024). Only passages sharing at least one content word
    with the question are answers. Then (``rerank=True``, the default) the
    ``k × 8`` best candidates are re-ordered by that score plus the judge's own
    check, the calibrated relevance of each passage under its heading
    (:func:`sentient_core.relevance.relevance`, idf over this index): the
    passage the judge will accept comes first, not one that merely shares
    frequent words. On the Q/A sets in ``bench/data`` this lifts top-1 from
    0.70 to 0.75 (pydoc) and 0.86 to 0.95 (debian); ``bench/offline_answers.py``
    measures both orders in one run.

Everything is deterministic: files in walk order, stable tie-breaking (lower
row first), no randomness.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Sequence
from typing import Annotated

import msgspec
import numpy as np

from sentient_core.confine import ConfinedDir, ConfinementError
from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.errors import ArgumentError
from sentient_core.ingest import IngestError, extract_bytes, iter_files
from sentient_core.learning.corpus_index import (
    Block,
    PassageIndex,
    assemble,
    build_doc_blocks,
    default_doc_blocks,
    encode_blocks,
)
from sentient_core.learning.overview import overview
from sentient_core.learning.splitting import (
    PASSAGE_CHARS,
    passage_spans,
    split_passages,
    split_sentences,
    with_heading,
)
from sentient_core.learning.subjects import defines, overview_subject, subject_of
from sentient_core.memory import lexical
from sentient_core.relevance import TermStats, relevance
from sentient_core.safetext import safe_path_text
from sentient_core.vocab import Source
from sentient_kernels.holographic import topk_cosine

__all__ = [
    "DEFAULT_CODE_DIM",
    "PASSAGE_CHARS",
    "CorpusAnswerer",
    "CorpusStats",
    "OfflineAnswer",
    "passage_spans",
    "split_passages",
    "split_sentences",
    "summarize_extractive",
]

DEFAULT_CODE_DIM = 1024
DEFAULT_MAX_FILE_BYTES = 16 << 20
DEFAULT_MAX_PASSAGES = 200_000
_CANDIDATE_FACTOR = 8  # candidates ranked per answer slot before dropping verbatim repeats

#: Never read for docstrings (no doc value, or an interpreter/IDE internal).


class OfflineAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """An extractive answer.

    ``passages[i]`` came from ``sources[i]``, where it is the slice
    ``spans[i] = (start, end)`` of the document text (see the module
    docstring), ranked with score ``scores[i]`` (see :class:`CorpusAnswerer`),
    best first; ``headings[i]`` is the heading of its section ("" when none,
    or when the passage holds it), which is not part of the slice; ``text`` is
    the passages, each under its heading, joined by blank lines. Empty when
    nothing scored above the threshold. ``margin`` is how far the first
    passage's ranking key (score, plus relevance when re-ranked) beats the best
    candidate *not* given (the whole key when there was none): how clearly the
    corpus holds one answer rather than several near-equal ones.
    """

    text: str
    sources: tuple[Source, ...] = ()
    scores: tuple[float, ...] = ()
    passages: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    headings: tuple[str, ...] = ()
    margin: float | None = None


class CorpusStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Size of the index and what building it cost."""

    passages: Annotated[int, msgspec.Meta(ge=0)]
    doc_passages: Annotated[int, msgspec.Meta(ge=0)]
    files: Annotated[int, msgspec.Meta(ge=0)]
    skipped: Annotated[int, msgspec.Meta(ge=0)]
    code_dim: Annotated[int, msgspec.Meta(ge=1)]
    docs_build_s: Annotated[float, msgspec.Meta(ge=0.0)]
    refresh_s: Annotated[float, msgspec.Meta(ge=0.0)]


def summarize_extractive(
    text: str, max_sentences: int = 3, *, encoder: TextEncoder | None = None
) -> str:
    """The ``max_sentences`` sentences most similar to the whole text, in original order.

    Ties go to the earlier sentence. Returns ``""`` for text without sentences.
    """
    if max_sentences < 1:
        raise ArgumentError(f"max_sentences must be >= 1, got {max_sentences}")
    sentences = split_sentences(text)
    if len(sentences) <= max_sentences:
        return " ".join(sentences)
    enc = encoder or _default_encoder(DEFAULT_CODE_DIM)
    codes = enc.encode_batch([text, *sentences])
    whole, rows = codes[0], np.ascontiguousarray(codes[1:])
    if not whole.any():
        chosen = list(range(max_sentences))  # no content words at all: the opening
    else:
        idx, _ = topk_cosine(rows, whole, max_sentences, normalized=True)
        chosen = sorted(idx.tolist())
    return " ".join(sentences[i] for i in chosen)


def _rank(
    index: PassageIndex,
    terms: np.ndarray,
    weights: np.ndarray,
    k: int,
    rank: str,
    code: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The ``k`` best passages of ``index`` by ``rank`` (memory's lexical ranking)."""
    n = len(index.passages)
    return lexical.rank_rows(
        index.packed,
        n,
        None,
        index.doc_len,
        float(n),
        index.avgdl,
        terms,
        weights,
        k,
        rank,
        index.codes if code is not None else None,
        code,
    )


@functools.cache
def _default_encoder(code_dim: int) -> TextEncoder:
    return get_encoder("token", code_dim=code_dim)


class CorpusAnswerer:
    """Answer questions with passages of a local corpus (extractive, with sources).

    Parameters
    ----------
    dirs : sequence of path
        Folders (or files) whose text files are indexed, e.g. the incoming dir.
        Missing folders are fine (nothing indexed until they appear).
    include_python_docs : bool
        Also index the documentation that ships with Python.
    encoder : TextEncoder, optional
        Default: the token encoder with ``code_dim`` 1024 (the shipped-docs part
        of its index is then built once per process and shared).
    passage_chars : int
        Largest passage.
    max_file_bytes : int
        Larger files are skipped.
    max_passages : int
        Cap on file passages (the index never grows without bound); files past
        it are skipped with a reason.
    allow_hardlinks : bool
        Index files that have more than one name (off by default: a hard link
        may name a file outside the folder; wire it to
        ``SafetyPolicy.allow_hardlinks``).
    rank : {"bm25", "hybrid"}
        How passages are ranked (see the module docstring). The score of a
        passage (``OfflineAnswer.scores``, and what ``min_score`` cuts) is
        its normalised BM25 in [0, 1] (``"bm25"``), or
        ``(bm25 + α·cosine)/(1 + α)`` (``"hybrid"``, α as the memory's).
    """

    def __init__(
        self,
        dirs: Sequence[str | os.PathLike[str]],
        *,
        include_python_docs: bool = True,
        encoder: TextEncoder | None = None,
        passage_chars: int = PASSAGE_CHARS,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_passages: int = DEFAULT_MAX_PASSAGES,
        allow_hardlinks: bool = False,
        rank: str = "hybrid",
        rerank: bool = True,
    ):
        if rank not in ("bm25", "hybrid"):
            raise ArgumentError(f"rank must be 'bm25' or 'hybrid', got {rank!r}")
        self.rank = rank
        self.rerank = rerank
        self._term_stats: tuple[tuple[str, ...], TermStats] | None = None
        self._names: tuple[PassageIndex, dict[str, list[int]]] | None = None
        if isinstance(dirs, (str, os.PathLike)):
            dirs = [dirs]
        self.dirs = tuple(os.fspath(d) for d in dirs)
        self.passage_chars = passage_chars
        self.max_file_bytes = max_file_bytes
        self.max_passages = max_passages
        self.allow_hardlinks = allow_hardlinks
        self._encoder = encoder or _default_encoder(DEFAULT_CODE_DIM)
        self._lock = threading.Lock()  # serialises refresh(); answer() reads a snapshot
        self._doc_blocks: tuple[Block, ...] = ()
        docs_s = 0.0
        if include_python_docs:
            if encoder is None:
                self._doc_blocks, docs_s = default_doc_blocks(DEFAULT_CODE_DIM, passage_chars)
            else:
                self._doc_blocks, docs_s = build_doc_blocks(encoder, passage_chars)
        self._docs_build_s = docs_s
        self._file_blocks: dict[str, Block] = {}
        self.skipped: list[tuple[str, str]] = []
        self._refresh_s = 0.0
        self._index = assemble((), self.code_dim)
        self.refresh()

    @property
    def code_dim(self) -> int:
        return int(self._encoder.code_dim)

    @property
    def stats(self) -> CorpusStats:
        """Index size and build times (docs: once per process for the default encoder)."""
        index = self._index
        n_doc = sum(len(b.passages) for b in self._doc_blocks)
        return CorpusStats(
            passages=len(index.passages),
            doc_passages=n_doc,
            files=len(self._file_blocks),
            skipped=len(self.skipped),
            code_dim=self.code_dim,
            docs_build_s=self._docs_build_s,
            refresh_s=self._refresh_s,
        )

    @property
    def passages(self) -> tuple[str, ...]:
        """Every indexed passage (the same tuple until the next refresh)."""
        return self._index.passages

    def term_stats(self) -> TermStats:
        """Document frequencies of content terms over :attr:`passages` (idf for relevance);
        built on first use and again after a refresh changed the index."""
        with self._lock:
            passages = self._index.passages
            cached = self._term_stats
            if cached is None or cached[0] is not passages:
                cached = (passages, TermStats(passages))
                self._term_stats = cached
            return cached[1]

    @property
    def sources(self) -> tuple[Source, ...]:
        """The source of each passage (aligned with :attr:`passages`)."""
        return self._index.sources

    def sections(self) -> tuple[tuple[str, ...], tuple[Source, ...], tuple[str, ...]]:
        """Every passage, its source and its section heading, from one index (a refresh
        in between cannot misalign them)."""
        index = self._index
        return index.passages, index.sources, index.headings

    def __len__(self) -> int:
        return len(self._index.passages)

    def context(self, source: Source, start: int, end: int, chars: int) -> tuple[str, int, int]:
        """The document text of ``source`` from ``start - chars`` to ``end + chars``, as far
        as its indexed passages cover it (they are slices of the document text; the
        whitespace between two passages comes back as newlines), with the offsets it
        spans; ``("", start, end)`` when no passage of ``source`` covers ``[start, end)``."""
        index = self._index
        parts = sorted(
            (a, b, text)
            for text, src, (a, b) in zip(index.passages, index.sources, index.spans, strict=True)
            if src == source and b > start - chars and a < end + chars
        )
        out, lo, hi = "", -1, -1
        for a, b, text in parts:
            if lo < 0:
                out, lo, hi = text, a, b
            elif a <= hi:  # overlapping: extend
                if b > hi:
                    out += text[hi - a :]
                    hi = b
            else:
                # Passages skip the whitespace between them: fill it with as many
                # newlines, so offsets into the result stay offsets of the document.
                out += "\n" * (a - hi) + text
                hi = b
        if lo < 0 or lo > start or hi < end:
            return "", start, end
        a, b = max(lo, start - chars), min(hi, end + chars)
        return out[a - lo : b - lo], a, b

    def refresh(self) -> int:
        """Re-scan the folders: index new or changed files, drop deleted ones.

        Unchanged files (same device, inode, mtime and size, from ``fstat`` of
        the confined descriptor) are not read again. Never raises for a bad or
        vanishing file: it is skipped with a reason.

        Returns
        -------
        int
            Number of files (re)read.
        """
        with self._lock, contextlib.ExitStack() as stack:
            t0 = time.perf_counter()
            old = self._file_blocks
            blocks: dict[str, Block] = {}
            skipped: list[tuple[str, str]] = []
            todo: list[tuple[str, tuple[int, ...], bytes]] = []
            order: list[str] = []
            roots: dict[str, ConfinedDir] = {}
            entries = (
                iter_files(self.dirs, allow_hardlinks=self.allow_hardlinks) if self.dirs else ()
            )
            for entry in entries:
                path = entry.path
                if entry.skip_reason is not None:
                    if entry.skip_reason != "not found":
                        skipped.append((path, entry.skip_reason))
                    continue
                # Read through the one confined path: from the walked folder's
                # descriptor, the file the walker found and nothing else.
                try:
                    root = roots.get(entry.root)
                    if root is None:
                        root = ConfinedDir(entry.root, allow_hardlinks=self.allow_hardlinks)
                        stack.enter_context(root)
                        roots[entry.root] = root
                    with root.open_file(entry.rel) as handle:
                        st = handle.stat
                        stamp: tuple[int, ...] = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
                        prev = old.get(path)
                        if prev is not None and prev.stamp == stamp:
                            order.append(path)
                            blocks[path] = prev
                            continue
                        if st.st_size > self.max_file_bytes:
                            skipped.append(
                                (
                                    path,
                                    f"{st.st_size} bytes exceeds the cap of {self.max_file_bytes}",
                                )
                            )
                            continue
                        data = handle.read(self.max_file_bytes)
                except ConfinementError as exc:
                    skipped.append((path, exc.reason))
                    continue
                if len(data) > self.max_file_bytes:
                    skipped.append((path, f"more than the cap of {self.max_file_bytes} bytes"))
                    continue
                order.append(path)
                todo.append((path, stamp, data))
            n_passages = sum(len(b.passages) for b in blocks.values())
            fresh: list[tuple[Source, str]] = []
            stamps: list[tuple[int, ...]] = []
            fresh_paths: list[str] = []
            for path, stamp, data in todo:
                try:
                    text = extract_bytes(path, data)
                except IngestError as err:
                    skipped.append((path, err.reason))
                    continue
                except Exception as exc:  # a bad file is skipped, never the refresh
                    skipped.append((path, f"cannot extract: {type(exc).__name__}: {exc}"))
                    continue
                n_new = len(text) // self.passage_chars + 1  # estimate, to enforce the cap early
                if n_passages + n_new > self.max_passages:
                    skipped.append((path, f"index full ({self.max_passages} passages)"))
                    continue
                n_passages += n_new
                # The source is what is stored and shown: a name of any bytes as safe
                # text. Blocks are keyed by the real path (what the next walk sees).
                fresh.append((Source("local", safe_path_text(path)), text))
                stamps.append(stamp)
                fresh_paths.append(path)
            for block, stamp, path in zip(
                encode_blocks(self._encoder, fresh, self.passage_chars),
                stamps,
                fresh_paths,
                strict=True,
            ):
                blocks[path] = msgspec.structs.replace(block, stamp=stamp)
            # Keep walk order for determinism regardless of which files were re-read.
            self._file_blocks = {p: blocks[p] for p in order if p in blocks}
            ordered = list(self._file_blocks.values())
            self.skipped = skipped
            self._index = assemble([*self._doc_blocks, *ordered], self.code_dim)
            self._refresh_s = time.perf_counter() - t0
            return len(fresh)

    def answer(
        self, question: str, k: int = 3, min_score: float = 0.12, scope: str = ""
    ) -> OfflineAnswer:
        """Up to ``k`` passages most relevant to ``question`` scoring at least ``min_score``
        (``scope``: only passages of the source with that id, a recipe's).

        Passages repeated verbatim (the same text in two places) are given once.
        A passage sharing no content word with the question is never returned.
        """
        if k < 1:
            raise ArgumentError(f"k must be >= 1, got {k}")
        index = self._index
        terms, weights = lexical.query_terms(question)
        n = len(index.passages)
        if n == 0 or terms.size == 0:
            return OfflineAnswer(text="")
        code = None
        if self.rank == "hybrid":
            code = self._encoder.encode_batch([question])[0]
        # Scoped, every passage is ranked: the source's best may lie below the global pool.
        pool = n if scope else min(n, k * _CANDIDATE_FACTOR)
        rows, scores, rel, _ = _rank(index, terms, weights, pool, self.rank, code)
        candidates: list[tuple[int, float]] = []
        seen: set[str] = set()
        for i, s, r in zip(rows.tolist(), scores.tolist(), rel.tolist(), strict=True):
            if s < min_score or (not self.rerank and len(candidates) > k):
                break  # scores are sorted best first
            text = index.passages[i]
            if text in seen or r <= 0.0 or (scope and index.sources[i].id != scope):
                continue
            seen.add(text)
            candidates.append((i, float(s)))
        keys = [s for _, s in candidates]
        if self.rerank and candidates:
            stats = self.term_stats()
            keys = [
                s + relevance(question, with_heading(index.headings[i], index.passages[i]), stats)
                for i, s in candidates
            ]
            order = sorted(range(len(candidates)), key=lambda n: (-keys[n], n))
            candidates = [candidates[n] for n in order]
            keys = [keys[n] for n in order]
        subject = overview_subject(question)
        trim: dict[int, int] = {}  # passage -> where its answer starts
        joins: dict[int, int] = {}  # passage -> the next one its answer runs through
        openings: list[int] = []
        margin = None
        if keys:
            margin = keys[0] - (keys[k] if len(keys) > k else 0.0)
        if subject and not scope:  # an overview may bring in another source's opening
            ov = overview(index, subject, candidates, keys, k, min_score, self._named(subject))
            candidates, margin, trim, openings = ov.candidates, ov.margin, ov.trim, ov.openings
            joins = ov.joins
        candidates = candidates[:k]
        picked = [i for i, _ in candidates]
        picked_scores = [s for _, s in candidates]
        # A named document's opening is headed by its name when it has no heading (the
        # provenance a reader needs: asyncore's docs never say "asyncore").
        headings = [
            "" if i in trim else index.headings[i] or (subject if i in openings else "")
            for i in picked
        ]
        spans = []
        texts = []
        for i in picked:
            start, end = index.spans[i][0] + trim.get(i, 0), index.spans[i][1]
            text = index.passages[i][trim.get(i, 0) :]
            if i in joins:  # the document text on through the next passage
                joined, a, b = self.context(index.sources[i], start, index.spans[joins[i]][1], 0)
                if joined:
                    text, start, end = joined, a, b
            texts.append(text)
            spans.append((start, end))
        return OfflineAnswer(
            text="\n\n".join(with_heading(h, t) for h, t in zip(headings, texts, strict=True)),
            sources=tuple(index.sources[i] for i in picked),
            scores=tuple(picked_scores),
            passages=tuple(texts),
            spans=tuple(spans),
            headings=tuple(headings),
            margin=margin,
        )

    def defines(self, phrase: str) -> bool:
        """Whether a passage among the best for ``phrase`` is where it is defined: the
        phrase starts a word of its document's name, its heading or its opening."""
        if self._named(phrase):
            return True  # a document's name (asyncore's docs never say "asyncore")
        index = self._index
        terms, weights = lexical.query_terms(phrase)
        n = len(index.passages)
        if n == 0 or terms.size == 0:
            return False
        rows, _, _, _ = _rank(index, terms, weights, min(n, 16), "bm25", None)
        return any(
            defines(phrase, index.sources[i], index.headings[i], index.passages[i])
            for i in rows.tolist()
        )

    def _named(self, subject: str) -> list[int]:
        """The first passage of each document named for ``subject`` (a user's file by
        :func:`subject_of`, a shipped module by its name), in index order."""
        index = self._index
        cached = self._names
        if cached is None or cached[0] is not index:
            names: dict[str, list[int]] = {}
            seen: set[Source] = set()
            for i, source in enumerate(index.sources):
                if source in seen:
                    continue
                seen.add(source)
                name = subject_of(source)
                if not name and source.kind == "corpus" and source.ref.startswith("pydoc:module:"):
                    name = source.ref.rsplit(":", 1)[-1].casefold()
                if name:
                    names.setdefault(name, []).append(i)
            cached = self._names = (index, names)
        # A user's file before a shipped module of the same name (sqlite3).
        found = cached[1].get(subject.casefold(), [])
        return sorted(found, key=lambda i: index.sources[i].kind != "local")

    def summarize(self, text: str, max_sentences: int = 3) -> str:
        """Extractive summary (see :func:`summarize_extractive`) with this encoder."""
        return summarize_extractive(text, max_sentences, encoder=self._encoder)
