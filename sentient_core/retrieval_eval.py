"""Known-item retrieval quality of the text encoders on text that ships with Python.

Corpus
    The documentation that ships with Python (:func:`sentient_core.pydocs.documents`):
    the ``pydoc_data.topics`` documents plus the docstrings (≥ 200 characters)
    of the public top-level stdlib modules, in sorted name order.

Units
    ``level="doc"``: one code per document. ``level="chunk"``: every document is
    cut into windows of 2000 characters overlapping by 200 (a document of at
    most 2000 characters is one chunk) and each chunk gets a code.

Queries
    A seeded RNG picks a document (uniformly among those with ≥ 12 words) and a
    random window of 12 consecutive whitespace-separated words in it. The target
    is the document (doc level) or every chunk that contains the whole window
    (chunk level; chunks merely overlapping it if none does). Units are ranked by
    exact cosine (matmul + stable argsort); recall@k counts queries with a target
    in the top k.

Score distributions
    *related*: query vs its best target; *unrelated query*: query vs a random unit
    of another document; *unrelated doc*: a random unit vs a random unit of
    another document.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec
import numpy as np

from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.errors import ArgumentError
from sentient_core.pydocs import PyDoc, documents

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_OVERLAP",
    "QUERY_WORDS",
    "EvalReport",
    "ScoreSummary",
    "Throughput",
    "chunk_spans",
    "format_report",
    "load_corpus",
    "measure_throughput",
    "run_eval",
]

CHUNK_CHARS = 2000
CHUNK_OVERLAP = 200
QUERY_WORDS = 12


class ScoreSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Median and 10th/90th percentiles of a set of cosine scores."""

    n: int
    median: float
    p10: float
    p90: float

    @classmethod
    def of(cls, scores: np.ndarray) -> ScoreSummary:
        """Summarise an array of scores."""
        s = np.asarray(scores, dtype=np.float64)
        if s.size == 0:
            return cls(n=0, median=float("nan"), p10=float("nan"), p90=float("nan"))
        p10, med, p90 = np.percentile(s, [10, 50, 90])
        return cls(n=int(s.size), median=float(med), p10=float(p10), p90=float(p90))


class EvalReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Result of :func:`run_eval`."""

    encoder: str
    encoder_options: dict[str, float | int | bool | str]
    level: str
    code_dim: int
    seed: int
    n_docs: int
    n_units: int
    n_queries: int
    recall_at_1: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    recall_at_10: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    mrr: float
    related: ScoreSummary
    unrelated_query: ScoreSummary
    unrelated_doc: ScoreSummary
    encode_seconds: float

    def as_dict(self) -> dict:
        """Plain-builtins view (JSON-ready)."""
        return msgspec.to_builtins(self)


class Throughput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Encoder speed on a batch of texts (best of ``repeats``)."""

    encoder: str
    n_texts: int
    mb: float
    seconds: float
    texts_per_s: float
    mb_per_s: float

    def as_dict(self) -> dict:
        """Plain-builtins view (JSON-ready)."""
        return msgspec.to_builtins(self)


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------


def load_corpus() -> tuple[PyDoc, ...]:
    """The evaluation documents: Python's shipped docs (:func:`sentient_core.pydocs.documents`)."""
    return documents()


def chunk_spans(
    n_chars: int, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP
) -> list[tuple[int, int]]:
    """Fixed-window chunk spans ``[start, end)`` covering ``n_chars`` characters.

    Parameters
    ----------
    n_chars : int
        Text length.
    size, overlap : int
        Window length and overlap between consecutive windows (``0 <= overlap < size``).
    """
    if not 0 <= overlap < size:
        raise ArgumentError(f"need 0 <= overlap < size, got overlap={overlap}, size={size}")
    if n_chars <= size:
        return [(0, n_chars)]
    spans, start, step = [], 0, size - overlap
    while True:
        end = min(start + size, n_chars)
        spans.append((start, end))
        if end == n_chars:
            return spans
        start += step


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------

_WORD_RE = re.compile(r"\S+")


def _units(docs: Sequence[PyDoc], level: str) -> tuple[list[str], np.ndarray, list[list]]:
    """Unit texts, the document of each unit, and per document its (start, end, unit) spans."""
    texts: list[str] = []
    owner: list[int] = []
    spans_by_doc: list[list] = []
    for d, doc in enumerate(docs):
        spans = [(0, len(doc.text))] if level == "doc" else chunk_spans(len(doc.text))
        mine = []
        for start, end in spans:
            mine.append((start, end, len(texts)))
            texts.append(doc.text[start:end])
            owner.append(d)
        spans_by_doc.append(mine)
    return texts, np.asarray(owner, dtype=np.int64), spans_by_doc


def _queries(
    docs: Sequence[PyDoc], spans_by_doc: list[list], n_queries: int, rng: np.random.Generator
) -> tuple[list[str], np.ndarray, list[list[int]]]:
    words_by_doc = [[(m.start(), m.end()) for m in _WORD_RE.finditer(d.text)] for d in docs]
    eligible = np.asarray([i for i, w in enumerate(words_by_doc) if len(w) >= QUERY_WORDS])
    if eligible.size < 2:
        raise ArgumentError("corpus needs at least two documents of >= 12 words")
    texts, doc_of, targets = [], [], []
    for _ in range(n_queries):
        d = int(eligible[rng.integers(eligible.size)])
        words = words_by_doc[d]
        w0 = int(rng.integers(len(words) - QUERY_WORDS + 1))
        start, end = words[w0][0], words[w0 + QUERY_WORDS - 1][1]
        text = docs[d].text[start:end]
        inside = [u for s, e, u in spans_by_doc[d] if s <= start and end <= e]
        overlapping = [u for s, e, u in spans_by_doc[d] if s < end and start < e]
        texts.append(text)
        doc_of.append(d)
        targets.append(inside or overlapping)
    return texts, np.asarray(doc_of, dtype=np.int64), targets


def _random_other(
    owner: np.ndarray, docs_excluded: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each excluded document, a random unit belonging to some other document."""
    picks = rng.integers(owner.size, size=docs_excluded.size)
    clash = owner[picks] == docs_excluded
    while clash.any():
        picks[clash] = rng.integers(owner.size, size=int(clash.sum()))
        clash = owner[picks] == docs_excluded
    return picks


def run_eval(
    encoder_name: str = "token",
    n_queries: int = 500,
    seed: int = 0,
    *,
    level: Literal["doc", "chunk"] = "chunk",
    encoder_options: dict | None = None,
    corpus: Sequence[PyDoc] | None = None,
) -> EvalReport:
    """Known-item retrieval with ``encoder_name`` (see the module notes).

    Parameters
    ----------
    encoder_name : str
        A name accepted by :func:`sentient_core.encoder.get_encoder`.
    n_queries : int
        Number of 12-word query windows (sampled with replacement over documents).
    seed : int
        Seed for query and unrelated-pair sampling; the same seed gives the same
        queries for every encoder.
    level : {"chunk", "doc"}
        Rank 2000-character chunks or whole documents.
    encoder_options : dict, optional
        Keyword options for the encoder (``code_dim``, ``bigrams``, ...).
    corpus : sequence of PyDoc, optional
        Defaults to :func:`load_corpus`.
    """
    if level not in ("doc", "chunk"):
        raise ArgumentError(f"level must be 'doc' or 'chunk', got {level!r}")
    if n_queries < 1:
        raise ArgumentError(f"n_queries must be >= 1, got {n_queries}")
    options = dict(encoder_options or {})
    encoder: TextEncoder = get_encoder(encoder_name, **options)
    docs = load_corpus() if corpus is None else tuple(corpus)
    rng = np.random.default_rng(seed)

    unit_texts, owner, spans_by_doc = _units(docs, level)
    q_texts, q_doc, targets = _queries(docs, spans_by_doc, n_queries, rng)

    t0 = time.perf_counter()
    unit_codes = encoder.encode_batch(unit_texts)
    q_codes = encoder.encode_batch(q_texts)
    encode_seconds = time.perf_counter() - t0

    scores = q_codes @ unit_codes.T  # (n_queries, n_units), exact cosine of unit rows
    order = np.argsort(-scores, axis=1, kind="stable")
    rank_of = np.empty_like(order)
    np.put_along_axis(rank_of, order, np.arange(order.shape[1])[None, :], axis=1)
    best_rank = np.array([rank_of[i, t].min() for i, t in enumerate(targets)])
    related = np.array([scores[i, t].max() for i, t in enumerate(targets)])

    other_q = _random_other(owner, q_doc, rng)
    unrelated_query = scores[np.arange(n_queries), other_q]
    first = rng.integers(owner.size, size=n_queries)
    second = _random_other(owner, owner[first], rng)
    unrelated_doc = np.einsum("ij,ij->i", unit_codes[first], unit_codes[second])

    return EvalReport(
        encoder=encoder_name,
        encoder_options={
            k: v for k, v in options.items() if isinstance(v, (int, float, bool, str))
        },
        level=level,
        code_dim=int(unit_codes.shape[1]),
        seed=seed,
        n_docs=len(docs),
        n_units=len(unit_texts),
        n_queries=n_queries,
        recall_at_1=float(np.mean(best_rank < 1)),
        recall_at_10=float(np.mean(best_rank < 10)),
        mrr=float(np.mean(1.0 / (best_rank + 1))),
        related=ScoreSummary.of(related),
        unrelated_query=ScoreSummary.of(unrelated_query),
        unrelated_doc=ScoreSummary.of(unrelated_doc),
        encode_seconds=encode_seconds,
    )


def measure_throughput(
    encoder_name: str = "token",
    texts: Sequence[str] | None = None,
    *,
    repeats: int = 3,
    encoder_options: dict | None = None,
    fresh_encoder: bool = False,
) -> Throughput:
    """Time ``encode_batch`` on ``texts`` (default: the corpus cut into 2000-char chunks).

    Parameters
    ----------
    fresh_encoder : bool
        Build a new encoder for every repeat so its token cache starts cold.
    """
    if texts is None:
        texts = [
            d.text[s:e] for d in load_corpus() for s, e in chunk_spans(len(d.text)) if e - s > 0
        ]
    texts = list(texts)
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    options = dict(encoder_options or {})
    encoder = get_encoder(encoder_name, **options)
    best = float("inf")
    for _ in range(max(1, repeats)):
        if fresh_encoder:
            encoder = get_encoder(encoder_name, **options)
        t0 = time.perf_counter()
        encoder.encode_batch(texts)
        best = min(best, time.perf_counter() - t0)
    mb = n_bytes / 1e6
    return Throughput(
        encoder=encoder_name,
        n_texts=len(texts),
        mb=mb,
        seconds=best,
        texts_per_s=len(texts) / best,
        mb_per_s=mb / best,
    )


def format_report(reports: EvalReport | Sequence[EvalReport]) -> str:
    """A small fixed-width table of one or more reports."""
    if isinstance(reports, EvalReport):
        reports = [reports]
    head = (
        f"{'encoder':<12} {'level':<5} {'dim':>4} {'units':>6} {'queries':>7} "
        f"{'R@1':>6} {'R@10':>6} {'MRR':>6}  "
        f"{'related med [p10,p90]':<22} {'unrel q-doc med [p10,p90]':<26} "
        f"{'unrel doc-doc med [p10,p90]':<28}"
    )
    lines = [head, "-" * len(head)]

    def fmt(s: ScoreSummary) -> str:
        return f"{s.median:.3f} [{s.p10:.3f},{s.p90:.3f}]"

    lines.extend(
        f"{r.encoder:<12} {r.level:<5} {r.code_dim:>4} {r.n_units:>6} {r.n_queries:>7} "
        f"{r.recall_at_1:>6.3f} {r.recall_at_10:>6.3f} {r.mrr:>6.3f}  "
        f"{fmt(r.related):<22} {fmt(r.unrelated_query):<26} {fmt(r.unrelated_doc):<28}"
        for r in reports
    )
    return "\n".join(lines)
