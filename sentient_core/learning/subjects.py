"""What a document, a section or a question is about: subjects that stand on their own.

A user's file is about what its name says (:func:`subject_of`), a changelog entry
about its package and version (:func:`heading_subject`), a shipped document about
its module or its title (:func:`title_of`); an overview question names its subject
(:func:`overview_subject`); a passage *defines* a subject when it is the
document's name or its title (:func:`defines`). The offline answerer and the
chaperone's corpus topics read them.
"""

from __future__ import annotations

import re

from sentient_core.analysis import content_terms
from sentient_core.keyphrases import overview_subject
from sentient_core.vocab import Source

__all__ = ["defines", "heading_subject", "overview_subject", "subject_of", "title_of"]

_NAME_SUBJECT = re.compile(r"[a-z][a-z0-9+_. -]{0,38}[a-z0-9+]")
_NOT_SUBJECTS = frozenset(
    """
    readme index license licence copying copyright changelog changes news notes todo
    authors contributing install makefile manual document doc docs file data text main
    """.split()  # noqa: SIM905 - a word list reads better than quoted strings
)
_EXTENSION = re.compile(r"[a-z][a-z0-9]{0,4}")


def subject_of(source: Source) -> str:
    """What a user's file is about by its name, lower-cased: the name without its
    extension and without the generic parts that follow the subject
    (``curl.changelog.txt`` → ``curl``, ``python3.11.changelog.txt`` →
    ``python3.11``); "" for a generic name (``README.md``, ``notes.txt``) or a
    source that is not a local file."""
    if source.kind != "local":
        return ""
    parts = source.ref.rsplit("/", 1)[-1].casefold().split(".")
    if len(parts) > 1 and _EXTENSION.fullmatch(parts[-1]):
        parts.pop()
    while len(parts) > 1 and parts[-1] in _NOT_SUBJECTS:
        parts.pop()
    name = ".".join(parts)
    return name if _NAME_SUBJECT.fullmatch(name) and name not in _NOT_SUBJECTS else ""


_CHANGELOG_HEAD = re.compile(r"^([a-z0-9][a-z0-9+.-]*) \(([^()\s]+)\)")


def heading_subject(heading: str) -> str:
    """A section heading as a subject a question can name: a Debian changelog entry's
    package and version (``curl (7.88.1-10) unstable; urgency=medium`` → ``curl
    7.88.1-10``), else the heading itself when it is short (1–8 words); else ""."""
    head = " ".join(heading.split())
    m = _CHANGELOG_HEAD.match(head)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    head = head.strip(" .:;#=-*")
    return head if 0 < len(head.split()) <= 8 and len(head) <= 80 else ""


def defines(subject: str, source: Source, heading: str, passage: str) -> bool:
    """Whether a passage is where ``subject`` is defined: it starts a word of the
    document's name, or the passage's title (its heading, else its underlined first
    line; quotes and a leading article aside) starts with it; a bare word must be
    the name or the title (``heapq``, ``Lambdas``)."""
    name = source.ref.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    bare = " " not in subject.strip()
    if bare and content_terms(name.split(".", 1)[0]) == content_terms(subject):
        return True  # a bare word is a document's name ("sockets" is not "socketserver")
    starts = re.compile(rf"(?<![a-z0-9]){re.escape(subject)}", re.IGNORECASE)
    if not bare and starts.search(name):
        return True
    line = heading
    if not line:
        # A first line is a title only when a rule of *, =, ~, - or ^ underlines it
        # (reST, as Python's docs write them); else it is a sentence ("Guess the MIME
        # type of a file." does not define "guess").
        first, _, rest = passage.lstrip().partition("\n")
        line = first[:100] if _UNDERLINE.match(rest) else ""
    title = " ".join(_ARTICLE.sub("", _QUOTES.sub(" ", line)).split()).casefold()
    if bare:
        # A bare word is defined by a title that is that word ("Lambdas"), not by one
        # it starts ("Structure of a program" does not define "structure").
        return bool(title) and content_terms(title) == content_terms(subject)
    return bool(title) and title.startswith(subject.casefold())


_UNDERLINE = re.compile(r"\s*([*=~^-])\1{2,}\s*(?:\n|$)")
_QUOTES = re.compile(r"[\"'“”‘’*`]+|\([^)]*\)")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def title_of(source: Source, opening: str) -> str:
    """What a shipped document is about: a module's name (``pydoc:module:shelve`` →
    ``shelve``), else its title line without quotes, asides or a leading article
    (``The "assert" statement`` → ``assert statement``); "" when there is none or it
    runs past six words."""
    ref = source.ref
    if ref.startswith("pydoc:module:"):
        return ref.rsplit(":", 1)[-1]
    line = opening.strip().split("\n", 1)[0]
    title = " ".join(_ARTICLE.sub("", _QUOTES.sub(" ", line)).split()).strip(" .:;-")
    if not title or len(title.split()) > 6:
        return ""
    return title if title.isupper() else title[0].lower() + title[1:]
