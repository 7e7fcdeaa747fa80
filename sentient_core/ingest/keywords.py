"""Deterministic tokens, keywords and a topic line for a chunk of text.

Tokens and stop words are :mod:`sentient_core.analysis`'s (re-exported here for
the ingest API); they are shared with the text encoder, so both must stay
stable: changing them changes every stored prime encoding.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from operator import itemgetter

from sentient_core.analysis import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS, tokenize
from sentient_core.errors import ArgumentError

MAX_TOPIC_CHARS = 80

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_SENTENCE_PUNCT = ".,;:!?"


def keywords(text: str, k: int = 8) -> list[str]:
    """Return the ``k`` most frequent non-stop-word tokens.

    Ties are broken by first occurrence; pure numbers are not keywords.
    """
    counts = Counter(tokenize(text))
    for word in STOP_WORDS.intersection(counts):
        del counts[word]
    # Counter keeps first-insertion order and heapq.nlargest is documented to
    # equal sorted(..., reverse=True)[:n] (stable), so equal counts stay in
    # order of first occurrence. Asking for a few extra leaves room for the
    # pure numbers we drop; only if that is not enough do we sort everything.
    n = min(len(counts), 2 * k + 8)
    ranked = heapq.nlargest(n, counts.items(), key=itemgetter(1))
    top = [token for token, _ in ranked if not token.isdigit()][:k]
    if len(top) < k and n < len(counts):
        ranked = sorted(counts.items(), key=itemgetter(1), reverse=True)
        top = [token for token, _ in ranked if not token.isdigit()][:k]
    return top


def heading(text: str) -> str | None:
    """Return the first heading-like line of ``text``, or ``None``.

    Heading-like: a Markdown ``#`` heading, a line underlined with ``===`` or
    ``---``, or a short line (at most 80 characters and 12 words, with a letter,
    not ending in sentence punctuation) standing alone between blank lines or
    at the start of the text before a blank line.
    """
    lines = text.split("\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line[0] == "#":
            match = _ATX_HEADING.match(raw)
            if match:
                return _clip(match.group(1).strip())
        below = lines[i + 1] if i < last else ""
        if below[:4].lstrip()[:1] in ("=", "-") and _SETEXT_UNDERLINE.match(below):
            if _short(line):
                return _clip(line)
        elif (
            i < last
            and not below.strip()
            and (i == 0 or not lines[i - 1].strip())
            and line[-1] not in _SENTENCE_PUNCT
            and _short(line)
        ):
            return _clip(line)
    return None


def _short(line: str) -> bool:
    return (
        len(line) <= MAX_TOPIC_CHARS
        and len(line.split()) <= 12
        and any(ch.isalpha() for ch in line)
        and not _SETEXT_UNDERLINE.match(line)
    )


def _clip(line: str) -> str:
    return line[:MAX_TOPIC_CHARS].rstrip()


def topic_and_keywords(text: str, k: int = 8) -> tuple[str, list[str]]:
    """Return a topic line and the top ``k`` keywords of a text.

    Parameters
    ----------
    text : str
        Usually one chunk.
    k : int
        Number of keywords.

    Returns
    -------
    topic : str
        The first heading-like line (see :func:`heading`), else the top three
        keywords joined by spaces, else ``""``.
    keywords : list of str
        Most frequent non-stop-word tokens, ties by first occurrence.
    """
    if k < 0:
        raise ArgumentError(f"k must be >= 0, got {k}")
    top = keywords(text, max(k, 3))
    topic = heading(text) or " ".join(top[:3])
    return topic, top[:k]


__all__ = [
    "MAX_TOKEN_CHARS",
    "MIN_TOKEN_CHARS",
    "STOP_WORDS",
    "heading",
    "keywords",
    "tokenize",
    "topic_and_keywords",
]
