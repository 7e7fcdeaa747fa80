"""Recall that prefers a semantic note where it answers as well as the traces it condenses.

:func:`prefer_notes` takes the top-k hits any recall returned and, going down the
ranking, puts a live note in place of a hit it cites when the note *answers as
well*, judged from the question alone (the answer is not known at recall time):

* the note holds the hit's best sentence for the question (the sentence of the
  hit with the highest :func:`~sentient_core.relevance.relevance`), and
* the note's relevance to the question is at least the hit's.

Among several such notes the most relevant wins (ties: the lowest id). A note
appears once, at the rank of its first hit; later hits it also cites are left
out (the note stands for them), so the result can be shorter than k. Nothing is
added that recall did not rank: the note only condenses evidence already in the
top k. ``evaluate --condense`` measures what this costs and saves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from sentient_core.analysis import split_sentences
from sentient_core.layers.notes import NOTES, NoteRecord, cited_by
from sentient_core.relevance import relevance

if TYPE_CHECKING:
    from sentient_core.memory import Hit
    from sentient_core.store.env import Store

__all__ = ["Answer", "prefer_notes"]


class Answer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One result of :func:`prefer_notes`: a trace as recall ranked it, or a note in its place.

    Attributes
    ----------
    kind : {"trace", "note"}
    id : int
        The trace id or the note id.
    text : str
    score : float
        The recall score of the (first) hit it stands at.
    stands_for : tuple of int
        For a note: the hits of this recall it replaced.
    """

    kind: Literal["trace", "note"]
    id: int
    text: str
    score: float
    stands_for: tuple[int, ...] = ()


def _best_sentence(question: str, text: str) -> str:
    best, best_r = "", -1.0
    for sentence in split_sentences(text):
        r = relevance(question, sentence)
        if r > best_r:
            best, best_r = sentence, r
    return best


def prefer_notes(question: str, hits: Sequence[Hit], store: Store) -> list[Answer]:
    """``hits`` with notes in place of the hits they answer as well as (module docstring)."""
    if not store.has_db("layers"):  # an older store opened read-only: no notes yet
        return [
            Answer(kind="trace", id=h.record.id, text=h.record.text, score=h.score) for h in hits
        ]
    with store.read() as txn:
        citing = {h.record.id: cited_by(txn, h.record.id) for h in hits}
        notes: dict[int, NoteRecord] = {}
        for ids in citing.values():
            for n in ids:
                if n not in notes:
                    rec = NOTES.get(txn, n)
                    if rec is not None and rec.state == "semantic":
                        notes[n] = rec
    out: list[Answer] = []
    stands: dict[int, list[int]] = {}  # note id → the hits it replaced, in rank order
    for h in hits:
        tid = h.record.id
        chosen = _chosen(question, h, citing[tid], notes)
        if chosen is None:
            out.append(Answer(kind="trace", id=tid, text=h.record.text, score=h.score))
        elif chosen in stands:
            stands[chosen].append(tid)  # the note already stands higher up
        else:
            stands[chosen] = [tid]
            out.append(Answer(kind="note", id=chosen, text=notes[chosen].text, score=h.score))
    return [
        msgspec.structs.replace(a, stands_for=tuple(stands[a.id])) if a.kind == "note" else a
        for a in out
    ]


def _chosen(question: str, hit: Hit, citing: list[int], notes: dict[int, NoteRecord]) -> int | None:
    """The most relevant live note among ``citing`` that answers as well as ``hit``."""
    live = [notes[n] for n in citing if n in notes]
    if not live:
        return None
    text = hit.record.text
    hit_r = relevance(question, text)
    best = _best_sentence(question, text)
    if not best:
        return None
    choice: tuple[float, int] | None = None
    for note in live:
        note_r = relevance(question, note.text)
        holds = any(best in s.text for s in note.sentences)
        if (
            holds
            and note_r >= hit_r
            and (choice is None or (-note_r, note.id) < (-choice[0], choice[1]))
        ):
            choice = (note_r, note.id)
    return None if choice is None else choice[1]
