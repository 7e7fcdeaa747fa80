"""Which passages of an answer are worth storing: the relevance gate before integration.

A question's answer may come back as several passages from different sources.
Each is scored against the question with the calibrated relevance
(:func:`sentient_core.relevance.relevance`, idf weights from the sources'
collection). An answer whose best passage reaches the threshold is relevant,
and its passages reaching :data:`LESSER_SHARE` of the threshold are integrated,
best first, each under its own source: the answerer ranked them for this
question, and the one holding the answer is often not the one that repeats its
words most (on pydoc's Q/A set, ``__class_getitem__`` is in a passage at
relevance 0.44 beside one at 0.66). An answer whose best passage falls short
stores nothing. An answer to no question (a requested fetch or read, a
summary) is kept whole; a source found by search is read for its question
(:data:`SEARCH_ROUTE`, :func:`asked`), cut into passages (:func:`found_passages`). Storing irrelevant text is what made most of the old
loop's "successes" noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from sentient_core.learning.splitting import passage_headings, passage_spans
from sentient_core.relevance import TermStats, relevance
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage, Source

__all__ = [
    "LESSER_SHARE",
    "SEARCH_ROUTE",
    "Selection",
    "asked",
    "found_passages",
    "passages_of",
    "select",
]

LESSER_SHARE = 0.5
"""A relevant answer's lesser passages are kept from this share of the threshold up.
Measured on the Q/A sets in ``bench/data`` (``python cli.py evaluate``, learn mode):
at 1 (every passage must reach the threshold) pydoc's answer@5 is 0.89, at 0.5 and
at any share down to 0.02, 0.90; debian's chunks stay 48 at 0.5 (52 at 0.02)."""


class Selection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The passages to integrate and how relevant the best one was.

    Attributes
    ----------
    keep : tuple of Passage
        Relevant passages (all of them when there was no question), best first.
    relevance : float or None
        The best passage's relevance; None when there was no question to check.
    """

    keep: tuple[Passage, ...]
    relevance: float | None


def passages_of(request: ChaperoneRequest, response: ChaperoneResponse) -> tuple[Passage, ...]:
    """The response's passages; a response without any becomes one passage of its content."""
    if response.passages:
        return response.passages
    source = response.sources[0] if response.sources else Source("local", request.type)
    return (Passage(text=response.content, source=source),)


def select(
    question: str,
    passages: Sequence[Passage],
    *,
    stats: TermStats | None,
    threshold: float,
) -> Selection:
    """Keep the passages that answer ``question`` (all of them for an empty question)."""
    passages = [p for p in passages if p.text.strip()]
    if not question.strip():
        return Selection(tuple(passages), None)
    scored = sorted(
        ((relevance(question, p.shown, stats), i, p) for i, p in enumerate(passages)),
        key=lambda t: (-t[0], t[1]),
    )
    best = scored[0][0] if scored else 0.0
    if best < threshold:
        return Selection((), best)
    return Selection(tuple(p for r, _, p in scored if r >= LESSER_SHARE * threshold), best)


SEARCH_ROUTE = "search"
"""The ``route`` of a request reading a source found by search."""


def asked(req: ChaperoneRequest) -> str:
    """The question the content of ``req`` must answer to be stored ("" for none): a
    question's, or a found source's (a plain fetch or read is kept whole)."""
    return req.question if req.type == "question" or req.route == SEARCH_ROUTE else ""


def found_passages(response: ChaperoneResponse) -> tuple[Passage, ...]:
    """The text of a found source as passages (exact slices, under their headings), so
    the relevance check scores the passage that answers, not the whole page."""
    out = []
    for p in response.passages:
        spans = passage_spans(p.text)
        heads = passage_headings(p.text, spans)
        base = max(p.start, 0)
        for (a, b), head in zip(spans, heads, strict=True):
            out.append(
                Passage(
                    text=p.text[a:b], source=p.source, start=base + a, end=base + b, heading=head
                )
            )
    return tuple(out)
