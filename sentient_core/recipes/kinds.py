"""The kind of a question: its template, the same for every question asked the same way.

A recipe is keyed by (kind, domain). The kind keeps a question's *frame* — its
question words, stop words and :data:`~sentient_core.metamemory.domain.FRAME_WORDS`
("which version of the … package fixed …") — and replaces every run of other
words (the subject, an identifier, a number) by ``*``::

    "Which version of the Debian curl package fixed CVE-2025-0167?"
    → "which version of the * package fixed *"

So two questions about different CVEs of one package share kind and domain
(:func:`~sentient_core.metamemory.domain.domain_of`: ``curl``), and a question
about another package shares the kind but not the domain.
"""

from __future__ import annotations

import re

from sentient_core.analysis import QUESTION_WORDS, STOP_WORDS, stem
from sentient_core.metamemory.domain import FRAME_WORDS

__all__ = ["MAX_KIND", "kind_of"]

MAX_KIND = 200
_WORD = re.compile(r"[^\W_][\w.+:/-]*")


def _frame(word: str) -> bool:
    return word in QUESTION_WORDS or word in STOP_WORDS or stem(word) in FRAME_WORDS


def kind_of(question: str) -> str:
    """The template of ``question`` (see the module docstring); "" when it has no word."""
    out: list[str] = []
    for word in _WORD.findall(question.casefold()):
        word = word.rstrip(".:/-+")
        token = word if word and _frame(word) and not any(c.isdigit() for c in word) else "*"
        if token != "*" or not out or out[-1] != "*":
            out.append(token)
    return " ".join(out)[:MAX_KIND]
