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

from sentient_core.analysis import (
    paragraph_spans,
    sentence_spans,
    sentences_in,
    split_sentences,
    strip_span,
)
from sentient_core.errors import ArgumentError

__all__ = [
    "PASSAGE_CHARS",
    "heading_spans",
    "passage_headings",
    "passage_spans",
    "sentence_spans",
    "split_passages",
    "split_sentences",
    "term_blocks",
    "with_heading",
]

PASSAGE_CHARS = 600


def _hard_split(text: str, a: int, b: int, max_chars: int) -> list[tuple[int, int]]:
    out = []
    while b - a > max_chars:
        cut = text.rfind(" ", a, a + max_chars + 1)
        if cut - a <= max_chars // 2:  # no usable space: cut mid-word rather than emit a sliver
            cut = a + max_chars
        out.append(strip_span(text, a, cut))
        a, b = strip_span(text, cut, b)
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
    for a, b in paragraph_spans(text):
        if b - a <= max_chars:
            pieces.append((a, b))
            continue
        sentences: list[tuple[int, int]] = []
        for s, e in sentences_in(text, a, b):
            sentences.extend(_hard_split(text, s, e, max_chars))
        pieces.extend(_pack(sentences, max_chars))
    return _pack(pieces, max_chars)


def split_passages(text: str, max_chars: int = PASSAGE_CHARS) -> list[str]:
    """The passages of ``text`` (see :func:`passage_spans`), as strings."""
    return [text[a:b] for a, b in passage_spans(text, max_chars)]


# Section headings of the formats a corpus commonly holds (nothing is guessed from
# indentation alone: a paragraph before a code block would look like one):
# Markdown "# Title"; reStructuredText / pydoc text, a title line underlined
# with one repeated punctuation character; deb-changelog(5) entry lines
# "package (version) distribution; urgency=...".
_MARKDOWN_HEADING = re.compile(r"^#{1,6}[ \t]+\S[^\n]*$", re.MULTILINE)
_UNDERLINED = re.compile(r"^([^\s\n][^\n]*)\n([=\-~*^#\"'+`])\2{2,}[ \t]*$", re.MULTILINE)
_DEB_ENTRY = re.compile(
    r"^[a-z0-9][a-z0-9+.\-]+ \([^()\s]+\)(?: [^;\n]+)?;[^\n]*urgency=[^\n]*$", re.MULTILINE
)
HEADING_CHARS = 200
"""Longer lines are never headings."""


def heading_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each section heading line in ``text``, in order (see the formats above).

    An underlined title's span is its title line (without the underline).
    """
    found: set[tuple[int, int]] = set()
    for m in _MARKDOWN_HEADING.finditer(text):
        found.add((m.start(), m.end()))
    for m in _UNDERLINED.finditer(text):
        title = m.group(1).rstrip()
        # The underline is about as long as the title (a rule of its own is not one).
        if len(m.group(0)) - len(m.group(1)) - 1 >= 0.6 * len(title):
            found.add((m.start(1), m.start(1) + len(title)))
    for m in _DEB_ENTRY.finditer(text):
        found.add((m.start(), m.end()))
    return sorted((a, b) for a, b in found if 0 < b - a <= HEADING_CHARS)


TERM_WORDS = 4
"""A definition-list term has at most this many words."""


def term_blocks(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, block_end)`` of each definition-list term line and the block it heads.

    The structure of API references and manual pages (``setdefault(key[,
    default])``, ``w(here)``, ``-v, --verbose``): a short line of at most
    :data:`TERM_WORDS` words, alone in its paragraph (blank lines around it),
    followed by a block indented deeper; the block ends at the next line
    indented no deeper than the term.
    """
    lines: list[tuple[int, int]] = []  # (start, end) of each line
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1

    def indent(k: int) -> int:
        a, b = lines[k]
        return len(text[a:b]) - len(text[a:b].lstrip())

    def blank(k: int) -> bool:
        a, b = lines[k]
        return not text[a:b].strip()

    out = []
    n = len(lines)
    for k in range(n - 2):
        a, b = lines[k]
        term = text[a:b].strip()
        if (
            not term
            or (k > 0 and not blank(k - 1))
            or not blank(k + 1)
            or blank(k + 2)
            or len(term) > 80
            or len(term.split()) > TERM_WORDS
            or term[-1] in ":.,;!?"
            or term[0] in "*-+>|#"
            or indent(k + 2) <= indent(k)
        ):
            continue
        end = n
        for m in range(k + 2, n):
            if not blank(m) and indent(m) <= indent(k):
                end = m
                break
        block_end = lines[end][0] if end < n else len(text)
        out.append((a + indent(k), a + indent(k) + len(term), block_end))
    return out


def passage_headings(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """For each passage span, the context it lies in, one line each ("" when none):
    the heading of its section (unless the passage starts with it), then the
    definition-list term whose block it starts in (see :func:`term_blocks`)."""
    heads = heading_spans(text)
    terms = term_blocks(text)
    out: list[str] = []
    j = -1  # the last heading starting at or before the current passage
    t = -1  # the last term starting before it
    for start, _end in spans:
        while j + 1 < len(heads) and heads[j + 1][0] <= start:
            j += 1
        while t + 1 < len(terms) and terms[t + 1][0] < start:
            t += 1
        lines = []
        section_start = -1
        if j >= 0 and heads[j][1] <= start and heads[j][0] != start:
            a, b = heads[j]
            lines.append(text[a:b].strip())
            section_start = a
        if j >= 0:
            section_start = max(section_start, heads[j][0])
        if t >= 0:
            a, b, block_end = terms[t]
            if b <= start < block_end and a > section_start:
                lines.append(text[a:b])
        out.append("\n".join(lines))
    return out


def with_heading(heading: str, passage: str) -> str:
    """The passage under its section heading (one line above it), or alone."""
    return f"{heading}\n{passage}" if heading else passage
