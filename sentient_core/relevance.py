"""Does a passage answer a question? A calibrated, idf-weighted relevance score.

The judge (is this passage worth storing as the answer?), curiosity (does memory
already answer this question?) and the evaluation use this one check.

Score
    The content terms of the question (word tokens, stop words and question
    words dropped, lightly stemmed) are weighted by their inverse document
    frequency in a reference collection (:class:`TermStats`): rare terms such
    as ``CVE-2025-0167`` or ``nonlocal`` carry the question, common ones such as
    ``version`` or ``statement`` little. The score is the weighted share of
    those terms that occur in the passage, in [0, 1]::

        relevance(q, p) = Σ_{t ∈ q ∩ p} idf(t) / Σ_{t ∈ q} idf(t)

    A question without content terms scores 0 (nothing to check it against).
    The noun a question asks for (``which date``, ``what version``, see
    :data:`ANSWER_TYPES`) names the kind of answer, not the subject: a
    passage holding a value of that kind (a date, a version string, …) counts
    as mentioning it. Words inside URLs do not count, a question with a single content term
    needs it mentioned twice for full score (once is a passing mention), and
    an identifier the question names (``CVE-2024-2004``, ``__debug__``,
    ``7.88.1-10``) must occur in the passage whole, or the score is 0.

Calibration
    :data:`RELEVANT` is chosen on labelled question–passage pairs built from the
    Q/A sets in ``bench/data`` (a passage is relevant when it contains one of
    the question's verified answer strings) for precision ≥ 0.9;
    ``bench/calibrate_relevance.py`` prints the precision/recall curve and
    reproduces the choice. Relevance alone reaches it on changelogs (debian:
    1.00 at every threshold up to 0.85) but not on prose documentation (pydoc:
    0.84–0.88 at every threshold: a passage *about* the question scores like
    one holding its answer), so the judge also asks a ranked source's answer to
    be decisive: its best passage beats the best one it did not give by
    :data:`DECISIVE` of the answerer's ranking key (score + relevance). The
    script prints that margin's curve at :data:`RELEVANT` (on the odd and the
    even questions apart) and the (relevance, margin) pairs that reach the
    target on every set and half; its docstring says how both defaults were
    read off them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from sentient_core.analysis import (
    QUESTION_WORDS,
    QueryWords,
    content_terms,
    identifiers,
    query_words,
    stem,
)

__all__ = [
    "ANSWER_TYPES",
    "DECISIVE",
    "QUESTION_WORDS",
    "RELEVANT",
    "THIN_TERMS",
    "PassageTerms",
    "TermStats",
    "asked_kinds",
    "content_terms",
    "focus",
    "identifiers",
    "passage_terms",
    "relevance",
    "relevance_among",
    "stem",
    "substance",
]

RELEVANT = 0.5
"""Relevance at or above which a passage answers a question (see Calibration)."""

DECISIVE = 0.3
"""Ranking margin at or above which a ranked source holds one clear answer (see Calibration)."""

SINGLE_TERM_MENTIONS = 2
"""A question with one content term needs that many mentions for full relevance."""

_URL = re.compile(r"\S+://\S+")


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
ANSWER_TYPES: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        rf"\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\b|\b{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}\b"
        r"|\b\d{4}-\d{2}-\d{2}\b",
        re.IGNORECASE,
    ),
    "year": re.compile(r"\b(?:1[89]|20)\d{2}\b"),
    "version": re.compile(r"\b\d+(?:[.:~+-]\w+)+"),
    "number": re.compile(r"\b\d+(?:\.\d+)?\b"),
}
"""Answer kinds a question can ask for by name (``on which date``, ``what version``),
each with the pattern of a value of that kind (dates as changelogs, RFC 2822 and
ISO 8601 write them)."""


def asked_kinds(question: str | QueryWords) -> set[str]:
    """The :data:`ANSWER_TYPES` a question asks for by name (``which date`` → {"date"})."""
    words = question if isinstance(question, QueryWords) else query_words(question)
    return set(words.asks_for) & ANSWER_TYPES.keys()


# The stem a found value kind counts as (stemmed once, not per passage).
_KIND_STEMS = {kind: stem(kind) for kind in ANSWER_TYPES}


class PassageTerms(NamedTuple):
    """What :func:`relevance` reads of a passage, computed once (:func:`passage_terms`):
    a caller scoring many questions against the same passages keeps these."""

    text: str
    folded: str
    counts: Counter[str]


def passage_terms(passage: str) -> PassageTerms:
    """The passage's content-term counts (words inside URLs left out) and folded text."""
    # A word inside a URL is not the passage talking about it.
    return PassageTerms(passage, passage.casefold(), Counter(content_terms(_URL.sub(" ", passage))))


class TermStats:
    """Document frequencies of content terms over a collection, for idf weights.

    Parameters
    ----------
    texts : iterable of str or PassageTerms, optional
        Documents to count at once (more can be added with :meth:`add`).
    """

    def __init__(self, texts: Iterable[str | PassageTerms] = ()) -> None:
        self.documents = 0
        self._df: Counter[str] = Counter()
        for text in texts:
            self.add(text)

    def add(self, text: str | PassageTerms) -> None:
        """Count one more document."""
        self.documents += 1
        self._df.update(
            text.counts.keys() if isinstance(text, PassageTerms) else set(content_terms(text))
        )

    def df(self, term: str) -> int:
        """Documents counted that contain ``term`` (a stem)."""
        return self._df.get(term, 0)

    def idf(self, term: str) -> float:
        """``ln(1 + N / (1 + df))``: positive, largest for terms the collection lacks."""
        return math.log1p(self.documents / (1.0 + self._df.get(term, 0)))


def _question_parts(
    words: QueryWords,
) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A question's content terms, identifiers, the terms of each identifier (once per
    identifier, as :func:`relevance` weighs them) and the answer kinds it names."""
    kinds = tuple(k for k in dict.fromkeys(words.asks_for) if k in ANSWER_TYPES)
    return frozenset(words.content), words.identifiers, words.identifier_terms, kinds


def relevance(
    question: str | QueryWords, passage: str | PassageTerms, stats: TermStats | None = None
) -> float:
    """The idf-weighted share of the question's content terms found in the passage.

    Parameters
    ----------
    question : str or QueryWords
        The question, or its :func:`~sentient_core.analysis.query_words` (read once by
        a caller scoring it against many passages).
    passage : str or PassageTerms
        The passage, or its :func:`passage_terms` (the same score, without re-reading it).
    stats : TermStats, optional
        Where idf weights come from; without it every term weighs 1.

    Returns
    -------
    float
        In [0, 1]; 0 when the question has no content terms.
    """
    words = question if isinstance(question, QueryWords) else query_words(question)
    terms, idents, ident_terms, kinds = _question_parts(words)
    if not terms:
        return 0.0
    text, folded, counts = passage if isinstance(passage, PassageTerms) else passage_terms(passage)
    weight = (lambda t: 1.0) if stats is None else stats.idf
    # An identifier (CVE-2024-2004, 7.88.1-10+deb12u5, __debug__) names one thing:
    # its parts scattered over the passage do not; it must be there whole. Found
    # whole, it weighs as much as its parts together once more.
    if any(ident not in folded for ident in idents):
        return 0.0
    whole = sum(weight(t) for t in ident_terms)
    total = sum(weight(t) for t in terms) + whole
    if total <= 0.0:
        return 0.0
    # The kind of answer asked for is there when a value of that kind is.
    found = [_KIND_STEMS[kind] for kind in kinds if ANSWER_TYPES[kind].search(text)]
    if found:
        counts = counts.copy()
        counts.update(found)
    score = (sum(weight(t) for t in terms if counts[t]) + whole) / total
    if len(terms) == 1:
        # One word mentioned in passing is not a passage about it: ask for two mentions.
        (term,) = terms
        score *= min(1.0, counts[term] / SINGLE_TERM_MENTIONS)
    return score


THIN_TERMS = 8
"""A passage with fewer content terms than this beyond the question's says next to nothing
(a changelog entry holding only its signature line): not an answer a reader learns from."""


def substance(question: str, passage: str) -> int:
    """How many distinct content terms ``passage`` has that ``question`` does not."""
    return len(set(content_terms(passage)) - set(content_terms(question)))


LEAD_CHARS = 200
"""How much of a passage's first line counts as its lead (a heading, a title, a first sentence)."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def focus(
    question: str | QueryWords, passage: str | PassageTerms, stats: TermStats | None = None
) -> float:
    """How much of the passage is *about* the question, in [0, 1].

    :func:`relevance` asks whether the question's terms are there; it saturates at
    1.00 for a one-subject question ("What is known about curl?") whenever the
    subject is named twice. ``focus`` grades where and how often: the mean of the
    idf-weighted share of the question's content terms in the passage's lead (its
    first line, at most :data:`LEAD_CHARS` characters: a heading or a definition
    names its subject there) and the share of its sentences and lines that name one
    of them (a passage about X keeps returning to X; a list mentions it once).
    0 for a question without content terms. ``bench/relevance_spread.py`` measures
    how well it tells answer-holding passages from the rest.
    """
    words = question if isinstance(question, QueryWords) else query_words(question)
    terms = frozenset(words.content)
    if not terms:
        return 0.0
    text = passage.text if isinstance(passage, PassageTerms) else passage
    weight = (lambda t: 1.0) if stats is None else stats.idf
    total = sum(weight(t) for t in terms)
    if total <= 0.0:
        return 0.0
    stripped = text.strip()
    lead = Counter(content_terms(_URL.sub(" ", stripped.split("\n", 1)[0][:LEAD_CHARS])))
    lead_share = sum(weight(t) for t in terms if lead[t]) / total
    pieces = [p for p in _SENTENCE.split(stripped) if p.strip()]
    naming = sum(1 for p in pieces if terms & set(content_terms(_URL.sub(" ", p))))
    spread = naming / len(pieces) if pieces else 0.0
    return 0.5 * lead_share + 0.5 * spread


def relevance_among(
    question: str | QueryWords, passages: list[str | PassageTerms | None]
) -> tuple[list[float | None], list[PassageTerms | None]]:
    """:func:`relevance` of each passage, idf over the passages themselves (which of the
    question's words tell them apart), in one call.

    Returns the scores (None for a None passage) and each passage's terms (those
    given, or read here from a text), for a caller that keeps them.
    """
    words = question if isinstance(question, QueryWords) else query_words(question)
    terms = [passage_terms(p) if isinstance(p, str) else p for p in passages]
    stats = TermStats([t for t in terms if t is not None])
    return [None if t is None else relevance(words, t, stats) for t in terms], terms
