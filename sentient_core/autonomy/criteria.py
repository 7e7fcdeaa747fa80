"""Resolution criteria of a focus goal: a question set and a small condition language.

A focus goal (:class:`~sentient_core.autonomy.drives.FocusGoal`) may carry

* a **question set**: up to :data:`MAX_GOAL_QUESTIONS` questions the user writes. The
  loop asks them like any question (they go through the question book, the chaperone
  and the judge); one is *answered* when the judge called its answer a success, or
  memory already held the answer (the judge's "already known");
* a **condition**: clauses joined by ``and``, every one of which must hold::

      questions answered     every question of the set is answered
      successes >= N         N judged successes on the goal's topic (1 <= N <= 100)

  Case and spacing do not matter; ``all questions answered`` and ``N successes`` are
  accepted spellings. A goal with questions and no condition has the condition
  ``questions answered``; a goal with neither has no criteria: only the user ends it
  (``sentient focus done ID``).

A judged success counts for a goal's topic when the request was raised for the goal
(its pursuit initiative or one of its questions) or when the question names every
content word of the topic (``"coupled oscillators"``: a question with both words).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import msgspec

from sentient_core.errors import ArgumentError

__all__ = [
    "CONDITION_GRAMMAR",
    "MAX_GOAL_QUESTIONS",
    "MAX_SUCCESSES",
    "Check",
    "Criteria",
    "evaluate",
    "parse_condition",
    "topic_words",
]

MAX_GOAL_QUESTIONS = 16
"""Questions a goal's set holds at most."""

MAX_SUCCESSES = 100
"""The largest N of ``successes >= N``."""

CONDITION_GRAMMAR = "'questions answered', 'successes >= N' (1-100), joined by 'and'"

_SUCCESSES = (re.compile(r"successes\s*>=\s*(\d+)"), re.compile(r"(\d+)\s+successes"))
_ANSWERED = ("questions answered", "all questions answered")


class Criteria(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A parsed condition: whether every question must be answered, and the
    judged successes on the topic it needs (0: none)."""

    answers: bool = False
    successes: int = 0

    @property
    def empty(self) -> bool:
        return not self.answers and not self.successes

    def text(self) -> str:
        """The canonical condition (what a goal stores and ``focus list`` shows)."""
        parts = ["questions answered"] if self.answers else []
        if self.successes:
            parts.append(f"successes >= {self.successes}")
        return " and ".join(parts)


class Check(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One evaluation of a goal's criteria: ``held`` and ``missing`` name each clause
    with its figures; ``resolved`` when there are criteria and none is missing."""

    resolved: bool
    held: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


def parse_condition(text: str, *, questions: int) -> Criteria:
    """Parse a condition (see the module docstring) for a goal with ``questions`` questions.

    An empty ``text`` is ``questions answered`` when there are questions, else no criteria.

    Raises
    ------
    ArgumentError
        A clause outside the language, a count out of range, or ``questions answered``
        on a goal without questions.
    """
    shown = " ".join(str(text).split()).casefold()
    if not shown:
        return Criteria(answers=questions > 0)
    answers, successes = False, 0
    for clause in (c.strip() for c in shown.split(" and ")):
        if clause in _ANSWERED:
            if not questions:
                raise ArgumentError(
                    "the condition 'questions answered' needs questions (--question)"
                )
            answers = True
            continue
        match = next((m for p in _SUCCESSES if (m := p.fullmatch(clause))), None)
        if match is None:
            raise ArgumentError(f"unknown condition {clause!r}; expected {CONDITION_GRAMMAR}")
        n = int(match.group(1))
        if not 1 <= n <= MAX_SUCCESSES:
            raise ArgumentError(f"successes >= {n}: N must be in [1, {MAX_SUCCESSES}]")
        successes = max(successes, n)
    return Criteria(answers=answers, successes=successes)


def topic_words(text: str) -> frozenset[str]:
    """The content words of a topic or question (stop words dropped)."""
    from sentient_core.analysis import STOP_WORDS, tokenize

    return frozenset(t for t in tokenize(text) if t not in STOP_WORDS)


def evaluate(
    criteria: Criteria,
    questions: Sequence[str],
    successes: int,
    answered_by: Callable[[str], int | None],
) -> Check:
    """Evaluate ``criteria`` for a goal.

    Parameters
    ----------
    criteria : Criteria
    questions : sequence of str
        The goal's question set.
    successes : int
        Judged successes counted on the goal's topic so far.
    answered_by : callable
        ``question -> trace id`` of its judged answer (-1 when memory held it without
        a recorded trace), or None while it is not answered.
    """
    held: list[str] = []
    missing: list[str] = []
    if criteria.answers:
        traces = [answered_by(q) for q in questions]
        done = [t for t in traces if t is not None]
        cited = ", ".join(str(t) for t in done if t >= 0)
        line = f"questions answered: {len(done)} of {len(questions)}" + (
            f" (traces {cited})" if cited else ""
        )
        (held if len(done) == len(questions) else missing).append(line)
    if criteria.successes:
        line = f"successes >= {criteria.successes}: {successes} judged on the topic"
        (held if successes >= criteria.successes else missing).append(line)
    return Check(
        resolved=not criteria.empty and not missing, held=tuple(held), missing=tuple(missing)
    )
