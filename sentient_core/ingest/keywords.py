"""Deterministic tokens, keywords and a topic line for a chunk of text.

:func:`tokenize` and :data:`STOP_WORDS` are shared with the text encoder, so
both must stay stable: changing them changes every stored prime encoding.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from operator import itemgetter

from sentient_core.errors import ArgumentError

MIN_TOKEN_CHARS = 2
MAX_TOKEN_CHARS = 40
MAX_TOPIC_CHARS = 80

# English function words; "don", "isn", ... are what tokenize leaves of "don't", "isn't".
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can could couldn did didn do does doesn
    doing don down during each either else etc even ever every few for from further get
    gets got had hadn has hasn have haven having he her here hers herself him himself
    his how however i if in into is isn it its itself just ll let like may me might more
    most must mustn my myself neither no nor not now of off often on once only or other
    our ours ourselves out over own per quite rather re same shall shan she should
    shouldn so some such than that the their theirs them themselves then there these
    they this those through thus to too under until up upon us very ve was wasn we were
    weren what when where whether which while who whom whose why will with within
    without won would wouldn yet you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better than 175 quoted strings
)

# A whole run of word characters of length 2..40: \b on both sides stops the
# pattern from matching a piece of a longer run.
_TOKEN = re.compile(rf"\b\w{{{MIN_TOKEN_CHARS},{MAX_TOKEN_CHARS}}}\b")
_ASCII_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if (48 <= c <= 57 or 97 <= c <= 122 or c == 95) else 32
    for c in range(256)
)
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_SENTENCE_PUNCT = ".,;:!?"


def tokenize(text: str) -> list[str]:
    """Split text into lowercase word tokens.

    Tokens are maximal runs of Unicode word characters (letters, digits,
    underscore) of 2 to 40 characters; numbers are kept.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        Tokens in text order.
    """
    if text.isascii():
        # Same tokens, about 4x faster: one C pass maps A-Z to a-z and every
        # non-word byte to a space, then split() finds the runs.
        runs = text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
        return [run for run in runs if MIN_TOKEN_CHARS <= len(run) <= MAX_TOKEN_CHARS]
    return _TOKEN.findall(text.lower())


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
