"""Curiosity from link structure: a densely linked subject with one unanswered neighbour.

Reflection links learned traces whose contents are related and whose SMF
orientations agree (:mod:`~sentient_core.learning.reflect`). The graph says
which subjects belong together; when a subject's neighbourhood is known except
for one member, that member is the obvious next thing to learn.

Definitions (all read from one store snapshot of the question book and links):

answered trace
    An active trace that is the ``answered_by`` of an answered question of the
    :class:`~sentient_core.learning.questions.QuestionBook` (the passage the
    judge accepted as a question's answer).
link gap
    A *subject* trace S among the ``window`` newest active traces with at least
    ``min_degree`` active linked neighbours, **all but exactly one** of them
    answered. The one unanswered neighbour U is the gap, unless its subject is
    known after all: U's candidate subjects are its stored topic (a heading, or
    its top keywords) and its three most salient phrases
    (:func:`~sentient_core.keyphrases.key_phrases`); when any of them is a
    question the book holds (any status) or a near-repeat of one, U is covered
    (another passage answered its subject). Otherwise the first candidate the
    sources define (``usable``), else U's most salient phrase, becomes
    ``What is known about <subject>?``, of gap type
    ``link`` (:data:`sentient_core.vocab.GAP_PRIORITY`: 0.55, after open
    debts and before the SMF field-balance heuristic: the graph is evidence
    about memory's own content, the field only a balance heuristic).

The scan
runs only when memory or the answered set changed since the last one, and
raises at most ``per_pass`` questions.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from sentient_core.keyphrases import key_phrases, question_about
from sentient_core.learning.questions import QuestionBook
from sentient_core.store import links as store_links
from sentient_core.store import traces

__all__ = ["MIN_DEGREE", "LinkGap", "LinkGaps", "find_link_gaps"]

MIN_DEGREE = 3
"""Linked neighbours a subject needs to count as densely linked (reflection caps a
trace's links at 5: 3 is a majority of a full neighbourhood)."""


class LinkGap(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One link gap (see the module docstring).

    Attributes
    ----------
    subject : int
        The densely linked trace S.
    neighbour : int
        Its one unanswered neighbour U.
    degree, answered : int
        S's active neighbours, and how many of them are answered (``degree - 1``).
    phrases : tuple of str
        U's candidate subjects, best first (its topic, then its salient phrases).
    salient : str
        U's most salient phrase (asked when no candidate is ``usable``).
    """

    subject: int
    neighbour: int
    degree: int
    answered: int
    phrases: tuple[str, ...]
    salient: str


def find_link_gaps(
    memory,
    book: QuestionBook,
    *,
    min_degree: int = MIN_DEGREE,
    window: int = 200,
) -> list[LinkGap]:
    """Every link gap among the ``window`` newest traces, by subject id, one per neighbour.

    Parameters
    ----------
    memory : HolographicMemory
    book : QuestionBook
    min_degree : int
        Neighbours a subject needs.
    window : int
        Newest active traces considered as subjects.
    """
    answered = {r.answered_by for r in book.records("answered") if r.answered_by >= 0}
    subjects = sorted(r.id for r in memory.recent(window))
    out: list[LinkGap] = []
    seen: set[int] = set()
    with memory.datastore.read() as txn:
        for s in subjects:
            ends = sorted({lk.dst for lk in store_links.iter_from(txn, s)})
            if len(ends) < min_degree:
                continue
            recs = [r for r in traces.get_many(txn, ends) if r is not None and not r.retired]
            if len(recs) < min_degree:
                continue
            open_ = [r for r in recs if r.id not in answered]
            if len(open_) != 1 or open_[0].id in seen:
                continue
            u = open_[0]
            seen.add(u.id)
            topic = " ".join(u.topic.split())
            salient = key_phrases(u.text, k=3)
            phrases = tuple(dict.fromkeys(p for p in (topic, *salient) if p))
            if salient:
                out.append(
                    LinkGap(
                        subject=s,
                        neighbour=u.id,
                        degree=len(recs),
                        answered=len(recs) - 1,
                        phrases=phrases,
                        salient=salient[0],
                    )
                )
    return out


class LinkGaps:
    """Curiosity's link-gap source (``Curiosity(links=...)``).

    Parameters
    ----------
    memory : HolographicMemory
    min_degree, window : int
        See :func:`find_link_gaps`.
    per_pass : int
        At most this many new questions per scan.
    """

    def __init__(
        self, memory, *, min_degree: int = MIN_DEGREE, window: int = 200, per_pass: int = 1
    ) -> None:
        self.memory = memory
        self.min_degree = min_degree
        self.window = window
        self.per_pass = per_pass
        self._mark: tuple[int, int] | None = None
        self.found = 0
        """Link gaps seen by the scans (before the book and ``usable`` filter them)."""

    def questions(
        self,
        book: QuestionBook,
        usable: Callable[[str], bool],
        covered: Callable[[str], bool] = lambda question: False,
    ) -> list[tuple[LinkGap, str]]:
        """New link-gap questions, at most ``per_pass``, each with its gap (see the
        module docstring: a neighbour with a subject in ``book`` or ``covered`` by one
        raises nothing). None when neither memory nor the answered set changed since
        the last scan."""
        mark = (int(self.memory.total), len(book.records("answered")))
        if mark == self._mark:
            return []
        self._mark = mark
        gaps = find_link_gaps(self.memory, book, min_degree=self.min_degree, window=self.window)
        self.found += len(gaps)
        out = []
        for g in gaps:
            asks = [question_about(p) for p in g.phrases]
            if any(book.get(q) is not None or covered(q) for q in asks):
                continue  # the neighbour's subject is known after all
            out.append((g, next((q for q in asks if usable(q)), question_about(g.salient))))
            if len(out) >= self.per_pass:
                break
        return out
