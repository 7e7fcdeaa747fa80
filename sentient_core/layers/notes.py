"""Semantic notes: what independent sources agree on about one subject, condensed.

A note is the semantic layer's record (SPEC §6). It is written only by the
verification gate of :mod:`sentient_core.layers.condense`: at least two live
episodic traces from different sources name the same salient key phrase and the
deterministic disagreement check finds no conflict between any two of them. The
note's text is extractive: sentences lifted from those traces, each keeping the
trace, its source and its character offsets, so every word of a note can be
traced back to a passage a source gave.

States::

    semantic ──supporting trace retired, or a disagreeing trace──▶ retired

Nothing is deleted: a retired note stays, with the reason and the debt it
opened (:attr:`NoteRecord.debt`). A later condensation over the same subject
writes a new note (a new id) whose ``replaces`` names the retired one.

Storage: the ``layers`` sub-database holds notes under ``b"note/" + u64(id)``
(:data:`NOTES`), an index from a subject's stems to its newest note under
``b"nsub/" + digest(subject key)`` and, for recall, one empty-valued key
``b"ncite/" + u64(trace) + u64(note)`` per trace a live note cites.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.store.keyspace import digest_key, iter_prefix
from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime, key_u64, u64_key
from sentient_core.store.table import IdTable, register

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "NOTES",
    "NoteRecord",
    "NoteSentence",
    "NoteState",
    "cited_by",
    "find",
    "put",
]

NoteState = Literal["semantic", "retired"]
MAX_SENTENCES = 32
MAX_CITES = 64

Text = Annotated[str, msgspec.Meta(max_length=4000)]


class NoteSentence(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One sentence of a note and where it was lifted from.

    ``text == trace.text[start:end]`` for the trace as it was when the note was written.
    """

    trace: NonNegInt
    source: Annotated[str, msgspec.Meta(max_length=1000)]
    start: NonNegInt
    end: NonNegInt
    text: Text


class NoteRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A condensed note (see the module docstring).

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
    subject : str
        The key phrase the sources agree about, as written (``"target list"``).
    key : tuple of str
        Its stems (``("target", "list")``): what the index and recall match on.
    state : {"semantic", "retired"}
    sentences : tuple of NoteSentence
        The note's text, sentence by sentence, each with its provenance.
    cites : tuple of int
        The supporting traces (the evidence of the promotion).
    sources : tuple of str
        Their distinct sources (at least two).
    mode : {"extractive", "abstractive"}
        Abstractive: a model wrote :attr:`summary` from the sentences, and every sentence
        of it was found carried by a cited trace (``sentences`` stay as its evidence).
    summary : str
        The model's note ("" for an extractive one).
    reason : str
        Why it was promoted (the gate's evidence in words).
    retired_reason : str
    debt : int
        The debt its retirement opened (-1: none).
    replaces : int
        The retired note on the same subject this one follows (-1: none).
    created, updated : float
    """

    v: int = 1
    id: NonNegInt
    subject: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    key: Annotated[tuple[str, ...], msgspec.Meta(min_length=1, max_length=3)]
    state: NoteState = "semantic"
    sentences: Annotated[
        tuple[NoteSentence, ...], msgspec.Meta(min_length=1, max_length=MAX_SENTENCES)
    ]
    cites: Annotated[tuple[NonNegInt, ...], msgspec.Meta(min_length=2, max_length=MAX_CITES)]
    sources: Annotated[tuple[str, ...], msgspec.Meta(min_length=2, max_length=MAX_CITES)]
    mode: Literal["extractive", "abstractive"] = "extractive"
    summary: Text = ""
    reason: Text = ""
    retired_reason: Text = ""
    debt: int = -1
    replaces: int = -1
    created: UnixTime
    updated: UnixTime

    @property
    def text(self) -> str:
        """The note as recall returns it: the model's summary, or its sentences one per line."""
        if self.mode == "abstractive" and self.summary:
            return self.summary
        return "\n".join(s.text for s in self.sentences)


NOTES: IdTable[NoteRecord] = IdTable(
    "layers", b"note/", RecordCodec(NoteRecord, 1, "note"), field="id", label="note"
)
"""Every note, by id. Write through :func:`put`, which keeps both indexes."""
_SUBJECT = b"nsub/"
_CITE = b"ncite/"


def _cited_traces(note: NoteRecord) -> Iterator[tuple[str, int]]:
    for t in note.cites:
        yield f"note {note.id}", t


register(NOTES, traces=_cited_traces)


def put(txn: Txn, note: NoteRecord) -> None:
    """Write ``note``, its subject index entry and (live notes only) its citation keys."""
    NOTES.put(txn, note)
    txn.put(NOTES.db, digest_key(_SUBJECT, *note.key), u64_key(note.id))
    for t in note.cites:
        key = _CITE + u64_key(t) + u64_key(note.id)
        if note.state == "semantic":
            txn.put(NOTES.db, key, b"")
        else:
            txn.delete(NOTES.db, key)


def find(txn: Txn, key: tuple[str, ...]) -> NoteRecord | None:
    """The newest note on subject ``key`` (stems), live or retired, or None."""
    raw = txn.get(NOTES.db, digest_key(_SUBJECT, *key))
    if raw is None:
        return None
    note = NOTES.get(txn, key_u64(bytes(raw)))
    return note if note is not None and note.key == key else None


def cited_by(txn: Txn, trace_id: int) -> list[int]:
    """Ids of the live notes citing trace ``trace_id``, ascending."""
    prefix = _CITE + u64_key(trace_id)
    return [key_u64(bytes(k)[len(prefix) :]) for k, _ in iter_prefix(txn, NOTES.db, prefix)]
