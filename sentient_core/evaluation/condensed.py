"""What condensation buys on a Q/A set: recall with notes in place against plain recall.

Both are measured on the same store after one condensation pass, over the same
top-k hits of the default recall: :func:`~sentient_core.layers.prefer_notes`
only replaces hits, so any change in answer@k is what the notes lost or gained,
and the characters returned per answered question are what a reader saves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from sentient_core.evaluation.qa import QAItem, first_answer
from sentient_core.layers import Condenser, prefer_notes

if TYPE_CHECKING:
    from sentient_core.memory import Hit, HolographicMemory

__all__ = ["CondensationReport", "measure_condensation"]


class CondensationReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Recall with semantic notes against recall without, on the same store (``--condense``).

    Attributes
    ----------
    notes : int
        Live notes after the condensation pass.
    candidates, vetoed_disagreement, vetoed_few_sentences, vetoed_duplicate : int
        The pass's condensation gate: subjects named by ≥ 2 sources, and those refused.
    answer_at_k, answer_at_k_notes : float
        answer@k of the plain top k, and of the same top k with notes in place.
    chars_per_answered, chars_per_answered_notes : float or None
        Characters recall returned per answered question, each over its own answered set.
    chars_change : float or None
        ``chars_per_answered_notes / chars_per_answered - 1`` (negative: fewer characters).
    replaced : int
        Hits a note stood in for, over all questions.
    note_answers : int
        Answered questions whose answer is found in a note.
    lost, gained : tuple of str
        Questions answered without notes but not with them, and the reverse.
    seconds : float
        The condensation pass.
    """

    notes: int
    candidates: int
    vetoed_disagreement: int
    vetoed_few_sentences: int
    vetoed_duplicate: int
    answer_at_k: float
    answer_at_k_notes: float
    chars_per_answered: float | None
    chars_per_answered_notes: float | None
    chars_change: float | None
    replaced: int
    note_answers: int
    lost: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()
    seconds: float = 0.0


def measure_condensation(
    memory: HolographicMemory,
    items: Sequence[QAItem],
    k: int,
    hits: Callable[[str, int], Sequence[Hit]],
) -> CondensationReport:
    """Condense ``memory`` once, then compare recall with and without notes on ``items``.

    ``hits(question, k)`` is the recall under test (the default: the learned scorer's).
    """
    t0 = time.perf_counter()
    run = Condenser(memory).run()
    seconds = time.perf_counter() - t0
    plain_n = notes_n = plain_chars = notes_chars = replaced = note_answers = 0
    lost: list[str] = []
    gained: list[str] = []
    for item in items:
        top = list(hits(item.q, k))
        plain = [h.record.text for h in top]
        answers = prefer_notes(item.q, top, memory.datastore)
        a_plain = any(first_answer(t, item.answers) for t in plain)
        a_notes = any(first_answer(a.text, item.answers) for a in answers)
        replaced += sum(len(a.stands_for) for a in answers if a.kind == "note")
        if a_plain:
            plain_n += 1
            plain_chars += sum(len(t) for t in plain)
        if a_notes:
            notes_n += 1
            notes_chars += sum(len(a.text) for a in answers)
            note_answers += any(
                a.kind == "note" and first_answer(a.text, item.answers) for a in answers
            )
        if a_plain and not a_notes:
            lost.append(item.q)
        elif a_notes and not a_plain:
            gained.append(item.q)
    n = len(items)
    before = plain_chars / plain_n if plain_n else None
    after = notes_chars / notes_n if notes_n else None
    return CondensationReport(
        notes=run.promoted + run.revised + run.unchanged,
        candidates=run.candidates,
        vetoed_disagreement=run.vetoed["disagreement"],
        vetoed_few_sentences=run.vetoed["few_sentences"],
        vetoed_duplicate=run.vetoed["duplicate"],
        answer_at_k=plain_n / n if n else 0.0,
        answer_at_k_notes=notes_n / n if n else 0.0,
        chars_per_answered=before,
        chars_per_answered_notes=after,
        chars_change=after / before - 1.0 if before and after is not None else None,
        replaced=replaced,
        note_answers=note_answers,
        lost=tuple(lost),
        gained=tuple(gained),
        seconds=seconds,
    )
