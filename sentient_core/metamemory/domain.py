"""Knowledge domains: what a question is about, as one short stable name.

Source weights, surprise windows and wisdom are kept per domain, so a domain
must be coarse enough to collect events (every question about the Debian curl
package is ``curl``) and fine enough to separate sources that are good at one
thing and bad at another (``curl`` is not ``vim``).

:func:`domain_of` derives it like this:

1. A focus goal, when given, is the domain: ``focus:`` plus its lower-cased
   words (``focus:coupled oscillators``).
2. Otherwise the question's *subject terms* are its content words (stemmed;
   stop words, question words and :data:`FRAME_WORDS` such as "version",
   "date" or "fixed" dropped) and its *named identifiers* — identifiers that
   start with three letters and have no ``-`` or ``:`` (``python3.11``,
   ``libxml2``, ``__debug__``), which name a thing rather than a version or a
   CVE. Tokens that are part of a version or an id (``1378``, ``deb12u2``),
   month names (part of a date) and adverbs (``directly``) are not subject terms.
3. The domain is the subject term with the highest idf in the given
   :class:`~sentient_core.relevance.TermStats` (the rarest, so the most
   specific; ties: alphabetical), among terms the collection holds at most in
   :data:`MAX_SHARE` of its documents. A named identifier beats a word (it
   names the package or object asked about). Without stats every term weighs
   the same and the first subject term of the question wins.
4. A question with no subject term is in :data:`GENERAL`.

Domains are stems (``generat``, ``curl``): stable across inflections.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sentient_core.analysis import QUESTION_WORDS, STOP_WORDS, QueryWords, query_words, stem
from sentient_core.errors import ArgumentTypeError
from sentient_core.keyphrases import GENERIC_WORDS

if TYPE_CHECKING:
    from sentient_core.relevance import TermStats

__all__ = ["FRAME_WORDS", "GENERAL", "MAX_SHARE", "domain_of", "subject_terms"]

GENERAL = "general"
"""The domain of a question with no subject term."""

MAX_SHARE = 0.5
"""A term in more than this share of the collection's documents cannot be a domain."""

FRAME_WORDS: frozenset[str] = frozenset(
    stem(w)
    for w in """
    version versions release released date dates day year time when fixed fix fixes
    package packages upload uploaded number many much count value values name named
    change changed changes add added new drop dropped remove removed delete deleted
    introduce introduced came come comes first last previous next
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
"""Words that frame a factual question (what kind of value is asked) rather than name its
subject: "Which *version* of the curl *package fixed* ...", "On which *date* ...", "which
version *dropped* the patch", "which version *came* before"."""

_NAMED = re.compile(r"^[a-z_]{3}[\w.]*$")


def _named_identifiers(words: QueryWords) -> list[str]:
    """The question's identifier runs that name a thing (no ``-`` or ``:``)."""
    return [run for run in words.runs if _NAMED.match(run) and "-" not in run and ":" not in run]


def subject_terms(question: str | QueryWords) -> list[str]:
    """The subject terms of ``question`` in order: named identifiers first, then stems."""
    words = question if isinstance(question, QueryWords) else query_words(question)
    subject = []
    for word, term in zip(words.tokens, words.stems, strict=True):
        if word in words.run_tokens or any(c.isdigit() for c in word):
            continue
        if word in STOP_WORDS or word in QUESTION_WORDS or word in GENERIC_WORDS:
            continue
        if word in words.modifiers:  # a date's month, "came directly before"
            continue
        if term in FRAME_WORDS or len(term) < 2:
            continue
        subject.append(term)
    return list(dict.fromkeys([*_named_identifiers(words), *subject]))


def domain_of(
    question: str | QueryWords, focus: str | None = None, stats: TermStats | None = None
) -> str:
    """The knowledge domain of a question (see the module docstring).

    Parameters
    ----------
    question : str or QueryWords
        The question, or its :func:`~sentient_core.analysis.query_words`.
    focus : str, optional
        A user-declared focus goal the question serves; it is the domain.
    stats : TermStats, optional
        Document frequencies of the collection (the chaperone's term stats);
        picks the most specific subject term.

    Returns
    -------
    str
        ``focus:…``, a subject term, or :data:`GENERAL`.
    """
    if not isinstance(question, (str, QueryWords)):
        raise ArgumentTypeError(f"question must be str, got {type(question).__name__}")
    if focus is not None and focus.strip():
        return "focus:" + " ".join(focus.lower().split())[:190]
    words = question if isinstance(question, QueryWords) else query_words(question)
    terms = subject_terms(words)
    if not terms:
        return GENERAL
    named = _named_identifiers(words)
    if stats is None:
        return (named or terms)[0][:200]
    limit = MAX_SHARE * stats.documents
    usable = [t for t in terms if stats.df(t) <= limit] or terms
    best = min(usable, key=lambda t: (t not in named, -stats.idf(t), t))
    return best[:200]
