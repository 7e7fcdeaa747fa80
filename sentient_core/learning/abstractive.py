"""The model's side of condensation: an abstractive note, asked within the budget.

:func:`model_summarizer` turns the learner's chat model into the ``summarize``
callable of :class:`~sentient_core.layers.Condenser`: one single-turn call per
new note, checked against the budget first and committed to it after (a model
call is a call out, like an initiative's). A refused budget or a failed call
gives None: the note stays extractive. Whatever the model writes is only kept
if every sentence of it is carried by a cited trace (the condenser checks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sentient_core.errors import SentientError

if TYPE_CHECKING:
    from sentient_core.autonomy.budget import Budget
    from sentient_core.learning.llm import LLMClient

__all__ = ["SYSTEM_NOTE", "model_summarizer"]

SYSTEM_NOTE = (
    "You condense notes. Given a subject and sentences from independent sources that agree"
    " about it, write at most three short sentences stating only what those sentences say"
    " about the subject. Add nothing they do not say. No preamble."
)
NOTE_TOKENS = 160
"""Completion tokens of one note."""


def model_summarizer(
    llm: LLMClient, budget: Budget, *, estimate: int = 500
) -> Callable[[str, Sequence[str]], str | None]:
    """``summarize(subject, sentences)`` over ``llm``, charged to ``budget`` (module docstring)."""

    def summarize(subject: str, sentences: Sequence[str]) -> str | None:
        if not budget.check_initiative(estimate, 1).allowed:
            return None
        listed = "\n".join(f"- {' '.join(s.split())}" for s in sentences)
        try:
            reply = llm.chat(
                [
                    {"role": "system", "content": SYSTEM_NOTE},
                    {"role": "user", "content": f"Subject: {subject}\nSentences:\n{listed}"},
                ],
                max_tokens=NOTE_TOKENS,
                temperature=0.0,
            )
        except SentientError:
            budget.commit(0, 1, "failed")
            return None
        budget.commit(reply.total_tokens, 1, "done")
        return reply.text

    return summarize
