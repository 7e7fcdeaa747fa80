"""What a word is, once: tokens, stop and question words, stems, identifiers, phrase words.

Every part of the core that reads text for its words takes them from here —
the encoder and BM25's hashed terms (:func:`tokenize`, :data:`STOP_WORDS`),
the question–passage relevance check (:func:`content_terms`, :func:`stem`,
:func:`identifiers`), the question's domain (:data:`IDENTIFIER_RUN`) and key
phrases (:data:`PHRASE_WORD`) — so they cannot disagree on what a query's
words are. :func:`tokenize` and :data:`STOP_WORDS` also fix every stored
prime encoding and hashed term: changing them changes every store. The Numba
text kernels (:mod:`sentient_kernels.text`) find the same tokens from a word-character
table built from this definition (``tests/test_encoder.py`` checks that they agree).

Definitions
-----------
token        a maximal run of 2–40 Unicode word characters, lower-cased
stop word    an English function word (:data:`STOP_WORDS`)
content term the Snowball (Porter 2) stem of a token that is neither a stop
             word nor a question word (:data:`QUESTION_WORDS`)
identifier   joined tokens with a digit or an underscore (``CVE-2024-2004``,
             ``7.88.1-10+deb12u5``, ``__debug__``), case-folded
phrase word  three or more letters, no digit or underscore (a key phrase is a
             run of them, see :mod:`sentient_core.keyphrases`)
shingle      a run of :data:`SHINGLE_WORDS` consecutive tokens (two texts that share
             most of theirs say the same thing: :func:`shared_shingles`)

A question is read once: :func:`query_words` gives its :class:`QueryWords`
(tokens, stems, content terms, identifiers, the value kinds it asks for, its
identifier runs), which recall hands to the domain, the relevance check and the
re-rank instead of each re-reading the text.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

import snowballstemmer

__all__ = [
    "IDENTIFIER",
    "IDENTIFIER_RUN",
    "MAX_TOKEN_CHARS",
    "MIN_TOKEN_CHARS",
    "MONTHS",
    "PHRASE_WORD",
    "PLAIN_WORD",
    "QUESTION_WORDS",
    "STOP_WORDS",
    "QueryWords",
    "content_terms",
    "identifiers",
    "is_adverb",
    "paragraph_spans",
    "query_words",
    "sentence_spans",
    "sentences_in",
    "shared_shingles",
    "shingles",
    "split_sentences",
    "stem",
    "strip_span",
    "tokenize",
]

MIN_TOKEN_CHARS = 2
MAX_TOKEN_CHARS = 40

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

QUESTION_WORDS: frozenset[str] = frozenset(
    """
    what which who whom whose when where why how does do did is are was were can could
    should would will explain describe tell mean means meaning known know kind kinds
    type types use used using way ways
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Words that shape a question but say nothing about its subject."""

MONTHS: frozenset[str] = frozenset(
    """
    jan feb mar apr may jun jul aug sep sept oct nov dec january february march april
    june july august september october november december
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Month names and abbreviations: part of a date (a value), never a subject."""

# Adverbs ("essentially render", "automatically generate", "textually preceding"
# were free-run phrases; "came directly before" a domain) by their suffixes; long
# enough to spare nouns (rally, tally).
_ADVERB = re.compile(
    r"^\w{3,}(?:ally|ently|antly|ously|ively|ately|fully|ably|ibly|ingly|edly|ctly|ptly|rtly|stly|htly)$"
)


def is_adverb(word: str) -> bool:
    """Whether a lower-case word is an adverb by its suffix (``directly``, ``usually``)."""
    return _ADVERB.match(word) is not None


_STEMMER = snowballstemmer.stemmer("english")

IDENTIFIER_RUN = re.compile(r"[\w.+~:-]+")
"""A run of word characters and ``. + ~ : -`` (a looser identifier: the domain reads
the lower-cased question's runs and keeps those with a digit or an underscore)."""

PHRASE_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
"""A word a key phrase may hold: three or more letters, no digit or underscore."""

PLAIN_WORD = re.compile(r"[^\W\d_]+[.,;:!?]?", re.UNICODE)
"""A plain word, perhaps with sentence punctuation (prose rather than code or a listing)."""


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


@functools.lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """The Snowball (Porter 2) stem: ``raises``/``raised``/``raise`` match, ``loops``/``loop``."""
    return _STEMMER.stemWord(token)


IDENTIFIER = re.compile(r"[\w+]+(?:[-.:][\w+]+)+|\b_\w+_\b|\b\w*_\w*\b")


def identifiers(text: str) -> list[str]:
    """Case-folded identifiers in ``text``: joined tokens with a digit or an underscore."""
    out = []
    for match in IDENTIFIER.finditer(text):
        ident = match.group(0).strip(".:-")
        if any(c.isdigit() or c == "_" for c in ident) and len(ident) >= 3:
            out.append(ident.casefold())
    return out


def content_terms(text: str) -> list[str]:
    """Stemmed content tokens of ``text`` (stop words and question words dropped), in order."""
    return [stem(t) for t in tokenize(text) if t not in STOP_WORDS and t not in QUESTION_WORDS]


_ASKS_FOR = re.compile(r"\b(?:which|what)\s+(\w+)", re.IGNORECASE)


class QueryWords(NamedTuple):
    """A question's words, read once (:func:`query_words`).

    Attributes
    ----------
    text : str
    tokens : tuple of str
        :func:`tokenize`'s tokens, in order.
    stems : tuple of str
        The stem of each token (aligned with ``tokens``).
    content : tuple of str
        :func:`content_terms`: the stems of the tokens that are neither stop nor
        question words, in order.
    identifiers : tuple of str
        :func:`identifiers`, distinct, in order.
    identifier_terms : tuple of str
        The distinct content terms of each identifier, identifier after identifier.
    asks_for : tuple of str
        The case-folded word after each "which" / "what" (``which date`` → ``date``).
    runs : tuple of str
        :data:`IDENTIFIER_RUN` runs of the lower-cased text holding a digit or an
        underscore, ``.:-~+`` stripped from their ends, at least three characters.
    run_tokens : frozenset of str
        The tokens inside those runs.
    modifiers : frozenset of str
        Tokens that qualify rather than name a subject: month names (part of a
        date) and adverbs (:func:`is_adverb`).
    """

    text: str
    tokens: tuple[str, ...]
    stems: tuple[str, ...]
    content: tuple[str, ...]
    identifiers: tuple[str, ...]
    identifier_terms: tuple[str, ...]
    asks_for: tuple[str, ...]
    runs: tuple[str, ...]
    run_tokens: frozenset[str]
    modifiers: frozenset[str] = frozenset()


@functools.lru_cache(maxsize=1 << 12)
def query_words(text: str) -> QueryWords:
    """Read ``text`` as a question once (see :class:`QueryWords`)."""
    tokens = tuple(tokenize(text))
    stems = tuple(stem(t) for t in tokens)
    content = tuple(
        s
        for t, s in zip(tokens, stems, strict=True)
        if t not in STOP_WORDS and t not in QUESTION_WORDS
    )
    idents = tuple(dict.fromkeys(identifiers(text)))
    ident_terms = tuple(t for ident in idents for t in dict.fromkeys(content_terms(ident)))
    runs = []
    inside: set[str] = set()
    for m in IDENTIFIER_RUN.finditer(text.lower()):
        run = m.group(0).strip(".:-~+")
        if len(run) >= 3 and any(c.isdigit() or c == "_" for c in run):
            runs.append(run)
            inside.update(tokenize(run))
    return QueryWords(
        text=text,
        tokens=tokens,
        stems=stems,
        content=content,
        identifiers=idents,
        identifier_terms=ident_terms,
        asks_for=tuple(m.group(1).casefold() for m in _ASKS_FOR.finditer(text)),
        runs=tuple(runs),
        run_tokens=frozenset(inside),
        modifiers=frozenset(t for t in tokens if t in MONTHS or is_adverb(t)),
    )


SHINGLE_WORDS = 5


def shingles(text: str, n: int = SHINGLE_WORDS) -> frozenset[int]:
    """The hashes of ``text``'s runs of ``n`` consecutive tokens (a text of fewer
    tokens: its whole token run as one shingle; no token: none)."""
    toks = tokenize(text)
    if len(toks) < n:
        return frozenset({hash(tuple(toks))}) if toks else frozenset()
    return frozenset(hash(tuple(toks[i : i + n])) for i in range(len(toks) - n + 1))


def shared_shingles(a: frozenset[int], b: frozenset[int]) -> float:
    """The share of the smaller text's shingles the other one has too, in [0, 1]."""
    if not a or not b:
        return 0.0
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & big) / len(small)


# Sentences: what the passage splitter, condensation and recall all cut text into.
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# A sentence ends at . ! ? (optionally closed by a quote/bracket) before whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (paragraph breaks also end a sentence), stripped, non-empty."""
    return [text[s:e] for s, e in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence :func:`split_sentences` gives, in order."""
    return [span for a, b in paragraph_spans(text) for span in sentences_in(text, a, b)]


def strip_span(text: str, a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` narrowed past the white space at both ends of ``text[a:b]``."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Stripped, non-empty paragraph spans (as ``_PARAGRAPH.split`` would cut them)."""
    out = []
    start = 0
    for m in _PARAGRAPH.finditer(text):
        out.append(strip_span(text, start, m.start()))
        start = m.end()
    out.append(strip_span(text, start, len(text)))
    return [(a, b) for a, b in out if a < b]


def sentences_in(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Stripped, non-empty sentence spans inside the paragraph ``text[a:b]``."""
    out = []
    start = a
    for m in _SENTENCE_END.finditer(text, a, b):
        end = m.start() + len(m.group(0).rstrip())
        out.append(strip_span(text, start, end))
        start = m.end()
    out.append(strip_span(text, start, b))
    return [(s, e) for s, e in out if s < e]
