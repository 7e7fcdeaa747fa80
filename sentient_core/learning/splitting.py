"""Cutting a document's text into passages that are exact slices of it.

:func:`passage_spans` gives ``(start, end)`` character offsets into the text;
each passage is ``text[start:end]`` exactly (the original whitespace between
its sentences or paragraphs included), never re-joined text, so a passage can
always be traced back to the very characters it came from.

Rules: paragraphs (blank-line separated) are kept whole when they fit and
consecutive ones are packed together while the slice spanning them fits;
a longer paragraph is cut at sentence ends and its sentences packed the same
way; a longer sentence is cut at the last space that leaves at least half the
limit (else at the limit, mid-word). Every passage starts and ends with a
non-space character and is 1..``max_chars`` characters long.
"""

from __future__ import annotations

import re

from sentient_core.errors import ArgumentError

__all__ = ["PASSAGE_CHARS", "passage_spans", "split_passages", "split_sentences"]

PASSAGE_CHARS = 600

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# A sentence ends at . ! ? (optionally closed by a quote/bracket) before whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (paragraph breaks also end a sentence), stripped, non-empty."""
    out: list[str] = []
    for a, b in _paragraphs(text):
        out.extend(text[s:e] for s, e in _sentences(text, a, b))
    return out


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Stripped, non-empty paragraph spans (as ``_PARAGRAPH.split`` would cut them)."""
    out = []
    start = 0
    for m in _PARAGRAPH.finditer(text):
        out.append(_strip(text, start, m.start()))
        start = m.end()
    out.append(_strip(text, start, len(text)))
    return [(a, b) for a, b in out if a < b]


def _sentences(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Stripped, non-empty sentence spans inside the paragraph ``text[a:b]``."""
    out = []
    start = a
    for m in _SENTENCE_END.finditer(text, a, b):
        end = m.start() + len(m.group(0).rstrip())
        out.append(_strip(text, start, end))
        start = m.end()
    out.append(_strip(text, start, b))
    return [(s, e) for s, e in out if s < e]


def _hard_split(text: str, a: int, b: int, max_chars: int) -> list[tuple[int, int]]:
    out = []
    while b - a > max_chars:
        cut = text.rfind(" ", a, a + max_chars + 1)
        if cut - a <= max_chars // 2:  # no usable space: cut mid-word rather than emit a sliver
            cut = a + max_chars
        out.append(_strip(text, a, cut))
        a, b = _strip(text, cut, b)
    if a < b:
        out.append((a, b))
    return out


def _pack(spans: list[tuple[int, int]], max_chars: int) -> list[tuple[int, int]]:
    """Merge consecutive spans while the slice covering them fits."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and e - out[-1][0] <= max_chars:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def passage_spans(text: str, max_chars: int = PASSAGE_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of each passage of ``text``; ``text[start:end]`` is the passage.

    Raises
    ------
    ArgumentError
        ``max_chars`` below 20.
    """
    if max_chars < 20:
        raise ArgumentError(f"max_chars must be >= 20, got {max_chars}")
    pieces: list[tuple[int, int]] = []
    for a, b in _paragraphs(text):
        if b - a <= max_chars:
            pieces.append((a, b))
            continue
        sentences: list[tuple[int, int]] = []
        for s, e in _sentences(text, a, b):
            sentences.extend(_hard_split(text, s, e, max_chars))
        pieces.extend(_pack(sentences, max_chars))
    return _pack(pieces, max_chars)


def split_passages(text: str, max_chars: int = PASSAGE_CHARS) -> list[str]:
    """The passages of ``text`` (see :func:`passage_spans`), as strings."""
    return [text[a:b] for a, b in passage_spans(text, max_chars)]
