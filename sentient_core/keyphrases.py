"""Salient key phrases of a text, and well-formed questions about them.

Curiosity and reflection ask about what a passage is *about*, never about its
raw first line or a stop-word-like keyword ("What is required?"). A key phrase
is a run of one to three content words inside one clause (no stop word,
punctuation or line break inside), scored by how often it occurs in the text
times the summed inverse document frequency of its words
(:class:`~sentient_core.relevance.TermStats`), so rare, repeated subject words
win over common ones.

Lines that are bookkeeping rather than content — e-mail addresses, URLs,
signature lines (``-- Name <mail>  date``), dates and version strings — and
lines of code, listings or table rows (fewer than half their tokens plain
words) are dropped before phrases are collected, as are tokens with digits, tokens of
fewer than three letters and words that only shape a sentence.
"""

from __future__ import annotations

import re
from collections import Counter

from sentient_core.analysis import (
    PHRASE_WORD,
    PLAIN_WORD,
    QUESTION_WORDS,
    STOP_WORDS,
    is_adverb,
    query_words,
    stem,
)
from sentient_core.relevance import TermStats

__all__ = [
    "GENERIC_WORDS",
    "RELATION_WORDS",
    "SINGLE_WORD_DF",
    "key_phrases",
    "near_repeat",
    "overview_subject",
    "question_about",
    "topic_terms",
]

SINGLE_WORD_DF = 0.03
"""A one-word phrase must occur in at most this share of the collection's documents."""

GENERIC_WORDS: frozenset[str] = frozenset(
    """
    also another available based called case cases certain changes change common
    completely consider contains current deep default defined different does done
    example examples first following found further general given good great high however
    important include includes including instead large last least less little long made
    make makes many new next normal note number often old one order others part possible
    previous provided rather real related required result same second see seen set several
    show shown similar simple since small special specific still sure take takes thing
    things third true two usually value values various well whole within without work
    works yes
    allow allows allowed become becomes came come comes gave give gives giving go goes
    going gone keep keeps kept need needs needed put puts seem seems want wants went
    provide provides appear appears happen happens refer refers
    anything anybody anyone something somebody someone everything everybody everyone
    nothing nobody whatever whenever wherever whoever
    total nice exactly arg args kwargs param params foo bar baz qux spam eggs ham
    problem usage summary overview introduction description details background
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Words that are too general to be what a passage is about."""

RELATION_WORDS: frozenset[str] = frozenset(
    """
    among amongst amid besides beside across along alongside around behind beneath
    beyond despite onto toward towards throughout via versus unlike near
    according concerning depending excluding pending preceding regarding
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Prepositions the encoder's stop words leave out, and participles used as ones:
they relate a phrase to another and never end or start one ("implied relationships
among", "besides keywords", "forked child depending" were free-run questions)."""

_NOISE_LINE = re.compile(
    r"""@|https?://|www\.|^\s*--\s|\b\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\s+\d{4}\b|
    \b\d{4}-\d{2}-\d{2}\b|\b\d{2}:\d{2}:\d{2}\b""",
    re.IGNORECASE | re.VERBOSE,
)
# Hyphens do not split: "left-hand" and "built-in" stay one token, which is not
# a plain word and so ends a phrase (no "hand side", no "standard built").
_CLAUSE = re.compile(r"[.,;:!?()\[\]{}<>\"'`|/\\=*#+~^&$%—–]+|\s-+\s|\n\s*\n")


def _code_like(line: str) -> bool:
    """A line of code, a listing or a table row rather than prose: an interactive
    session's line (``>>>``, ``...``); of three or more tokens, all in capitals (a
    list of commands or constants: "HELO EHLO MAIL RCPT DATA"); of four or more,
    fewer than half plain words ("drwxr-xr-x 2 root wheel 1024 Jan 3 1994 bin",
    "dropwhile(pred, seq) --> seq[n], seq[n+1], starting when pred fails")."""
    tokens = line.split()
    if tokens and tokens[0] in (">>>", "..."):
        return True
    if len(tokens) >= 3 and all(t.isupper() for t in tokens):
        return True
    return len(tokens) >= 4 and 2 * sum(bool(PLAIN_WORD.fullmatch(t)) for t in tokens) < len(tokens)


def _clauses(text: str) -> list[list[str]]:
    """Lower-cased word runs of the text, one list per clause, noise lines dropped."""
    out = []
    kept = "\n".join(
        line for line in text.splitlines() if not (_NOISE_LINE.search(line) or _code_like(line))
    )
    # The first line ends a clause: a stored passage carries its section heading on
    # its own first line ("Basic customization" over "Virtual subclassing ...").
    first, _, rest = kept.partition("\n")
    for clause in [*_CLAUSE.split(first), *_CLAUSE.split(rest)]:
        words: list[str] = []
        for token in clause.split():
            word = token.lower()
            if PHRASE_WORD.fullmatch(word):
                words.append(word)
                continue
            # A token with digits, underscores or too few letters ends a phrase.
            if words:
                out.append(words)
            words = []
        if words:
            out.append(words)
    return out


def _content(word: str) -> bool:
    return not (
        word in STOP_WORDS
        or word in QUESTION_WORDS
        or word in GENERIC_WORDS
        or word in RELATION_WORDS
        or is_adverb(word)
    )


# A phrase is a noun phrase more often than not when it neither starts with a
# verb nor ends with a participle or an adverb ("perform sql queries", "unless
# otherwise stated", "additional rules apply" are not things to ask about).
_LEADING_VERBS: frozenset[str] = frozenset(
    """
    add apply avoid build call check create define find get handle install let load
    make perform read remove run send set start stop try use write
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
_TRAILING = re.compile(r"(?:ed|ly)$")
_TRAILING_VERBS: frozenset[str] = frozenset({"apply", "applies", "stated", "unless", "otherwise"})


def _noun_like(words: list[str]) -> bool:
    if words[0] in _LEADING_VERBS or words[-1] in _TRAILING_VERBS:
        return False
    return not (len(words) > 1 and _TRAILING.search(words[-1]))


def key_phrases(text: str, stats: TermStats | None = None, k: int = 5) -> list[str]:
    """The ``k`` most salient phrases of ``text`` (1–3 content words), best first.

    Parameters
    ----------
    text : str
    stats : TermStats, optional
        Document frequencies for idf weights; without it, frequency alone ranks.
    k : int

    Returns
    -------
    list of str
        Lower-case phrases; a phrase contained in a better one is left out.
    """
    # Counted by stem ("context managers" is "context manager"), shown in the
    # surface form seen most often.
    counts: Counter[tuple[str, ...]] = Counter()
    surfaces: dict[tuple[str, ...], Counter[str]] = {}
    for words in _clauses(text):
        run: list[str] = []
        for word in [*words, ""]:
            if word and _content(word):
                run.append(word)
                continue
            for n in (1, 2, 3):
                for i in range(len(run) - n + 1):
                    gram = run[i : i + n]
                    if not _noun_like(gram):
                        continue
                    key = tuple(stem(w) for w in gram)
                    if len(set(key)) < n:
                        # "debugger commands commands": a heading run into the line
                        # under it, not a phrase anyone writes.
                        continue
                    counts[key] += 1
                    surfaces.setdefault(key, Counter())[" ".join(gram)] += 1
            run = []
    if not counts:
        return []

    if stats is not None and stats.documents >= 20:
        # A single word must be distinctive to stand for a whole passage: one that
        # most documents use ("object", "self", "format") says nothing about this one.
        limit = SINGLE_WORD_DF * stats.documents
        counts = Counter(
            {key: n for key, n in counts.items() if len(key) > 1 or stats.df(key[0]) <= limit}
        )
        if not counts:
            return []

    def weight(key: tuple[str, ...]) -> float:
        # Summed idf already favours longer phrases; a recurring multi-word term
        # ("context manager") should also beat the single words it is made of.
        idf = sum(stats.idf(w) for w in key) if stats is not None else float(len(key))
        return counts[key] * idf * (1.0 + 0.5 * (len(key) - 1))

    ranked = sorted(counts, key=lambda key: (-weight(key), -len(key), key))
    chosen: list[tuple[str, ...]] = []
    for key in ranked:
        if any(_inside(key, c) or _inside(c, key) for c in chosen):
            continue
        chosen.append(key)
        if len(chosen) >= k:
            break
    return [surfaces[key].most_common(1)[0][0] for key in chosen]


def _inside(small: tuple[str, ...], big: tuple[str, ...]) -> bool:
    """Whether ``small`` is a contiguous run of ``big``."""
    n = len(small)
    return any(big[i : i + n] == small for i in range(len(big) - n + 1))


def question_about(phrase: str) -> str:
    """A well-formed question about a key phrase."""
    return f"What is known about {phrase}?"


_OVERVIEW = re.compile(r"what is known about (.+?)\??$", re.IGNORECASE)


def overview_subject(question: str) -> str:
    """The subject of an overview question (``What is known about curl?`` → ``curl``;
    "" for any other question): :func:`question_about` read back."""
    m = _OVERVIEW.match(question.strip())
    return " ".join(m.group(1).split()).casefold() if m else ""


def topic_terms(question: str) -> tuple[str, ...]:
    """What a question is about, as its content terms in order (stems; stop, question
    and generic words dropped): ``What is known about nearest enclosing loops?`` →
    ``("nearest", "enclos", "loop")``."""
    words = query_words(question)
    return tuple(
        s
        for t, s in zip(words.tokens, words.stems, strict=True)
        if t not in STOP_WORDS and t not in QUESTION_WORDS and t not in GENERIC_WORDS
    )


def near_repeat(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two topics (:func:`topic_terms`) ask about the same subject another way:
    one's terms hold all of the other's — the same stems ("context managers",
    "context manager"), a phrase under its head ("loop", "nearest enclosing loop")
    or a phrase it extends ("loop", "loop terminates"). Two modifiers of one head
    ("private name", "module name") are different subjects; a topic naming a
    version, an id or a number (a term with a digit) is its own unless the same."""
    if not a or not b:
        return False
    if any(c.isdigit() for t in (*a, *b) for c in t):
        return a == b
    sa, sb = set(a), set(b)
    return sa <= sb or sb <= sa
