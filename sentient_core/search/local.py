"""The offline provider: the files of the allowed directories, ranked for a query.

Walks the directories local reads may come from (the safety policy's
``allowed_read_dirs``: the incoming dir, ``corpus_dirs`` and
``safety.allowed_dirs``) with :func:`sentient_core.ingest.iter_files` — dot-files
skipped, symlinks leaving a directory not followed, hard links skipped unless
allowed — and reads each file through :class:`~sentient_core.confine.ConfinedDir`
(from the directory's descriptor, the file the walk found and nothing else), as the
offline answerer does. Each file's name (its words) and text are ranked by BM25
with the memory's own lexical tools (:func:`sentient_core.memory.terms.count`, a
posting segment and :func:`sentient_kernels.bm25.topk`); only files sharing a
content word with the query are candidates. Files that cannot be read or extracted
are skipped. Nothing leaves the machine; the learner still reads a candidate only
through the safety filter (``read_local``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentient_core.confine import ConfinedDir, ConfinementError
from sentient_core.ingest import IngestError, extract_bytes, iter_files
from sentient_core.memory import terms as memory_terms
from sentient_core.memory.lexical import query_terms
from sentient_core.search.types import MAX_TARGET_CHARS, SearchHit, SearchResults
from sentient_kernels import bm25
from sentient_kernels.segments import build_segment

__all__ = ["LocalProvider"]

_SEPARATORS = re.compile(r"[._\-]+")
SNIPPET_CHARS = 300


class LocalProvider:
    """Search the files of some directories (see the module docstring).

    Parameters
    ----------
    dirs : sequence of path
        The directories (missing ones are fine).
    max_results : int
        Candidates returned, best first.
    max_files : int
        Files read per search at most (the walk stops there).
    max_file_bytes : int
        Larger files are skipped.
    allow_hardlinks : bool
        Read files with more than one name (wire it to ``SafetyPolicy.allow_hardlinks``).
    """

    name = "local"

    def __init__(
        self,
        dirs: Sequence[str | os.PathLike[str]],
        *,
        max_results: int = 10,
        max_files: int = 5000,
        max_file_bytes: int = 10 << 20,
        allow_hardlinks: bool = False,
    ) -> None:
        self.dirs = tuple(os.fspath(d) for d in dirs)
        self.max_results = max_results
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.allow_hardlinks = allow_hardlinks

    def close(self) -> None:
        """Nothing to release."""

    def _documents(self) -> list[tuple[str, str]]:
        """``(path, name words + text)`` of every readable file, in walk order."""
        out: list[tuple[str, str]] = []
        with contextlib.ExitStack() as stack:
            roots: dict[str, ConfinedDir] = {}
            for entry in iter_files(self.dirs, allow_hardlinks=self.allow_hardlinks):
                if entry.skip_reason is not None:
                    continue
                if len(out) >= self.max_files:
                    break
                try:
                    root = roots.get(entry.root)
                    if root is None:
                        root = stack.enter_context(
                            ConfinedDir(entry.root, allow_hardlinks=self.allow_hardlinks)
                        )
                        roots[entry.root] = root
                    with root.open_file(entry.rel) as handle:
                        if handle.stat.st_size > self.max_file_bytes:
                            continue
                        data = handle.read(self.max_file_bytes)
                    text = extract_bytes(entry.path, data)
                except (ConfinementError, IngestError):
                    continue
                name = _SEPARATORS.sub(" ", Path(entry.path).stem)
                out.append((entry.path, f"{name}\n{text}"))
        return out

    def search(self, query: str) -> SearchResults:
        """The files best matching ``query`` by BM25 over name and text."""
        terms, weights = query_terms(query)
        docs = [d for d in self._documents() if len(d[0]) <= MAX_TARGET_CHARS]
        if not docs or terms.size == 0:
            return SearchResults()
        counts = memory_terms.count([text for _, text in docs])
        segment = build_segment(counts, np.arange(len(docs), dtype=np.int64))
        rows, _, _ = bm25.topk(
            [segment],
            terms,
            self.max_results,
            doc_len=np.minimum(counts.lengths, 2**31 - 1).astype(np.int32),
            query_weights=weights,
        )
        hits = []
        for row in rows.tolist():
            path, text = docs[row]
            body = text.partition("\n")[2]
            hits.append(
                SearchHit(
                    url=path,
                    title=Path(path).name[:300],
                    snippet=" ".join(body.split())[:SNIPPET_CHARS],
                    provider=self.name,
                    local=True,
                )
            )
        return SearchResults(hits=tuple(hits))
