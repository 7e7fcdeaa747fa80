"""What a strict reader objects to in a success, checked by machine (issue 22, item 7).

A reader who holds "learned" to a high bar rejects a success when

lifted     the question's subject is a phrase of its own answer and names neither
           the answering document nor its title: the question was taken from the
           passage that answers it ("juggle multiple communication")
bare word  the subject is one word the answering document is not named or titled
           for: an arbitrary mention answered it ("certificate" → a list of SSL
           constants)
thin       the answer says next to nothing beyond the question's own words (fewer
           than :data:`THIN_TERMS` other content terms: a changelog entry holding only
           its signature line)

Only overview questions ("What is known about X?") are checked; the user's own
questions are taken as asked. :func:`objections` gives the reasons, none for a
success a strict reader accepts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sentient_core.learning.subjects import defines, overview_subject
from sentient_core.relevance import THIN_TERMS, substance
from sentient_core.vocab import Source

if TYPE_CHECKING:
    from sentient_core.vocab import SourceKind

__all__ = ["OBJECTIONS", "THIN_TERMS", "objections"]

OBJECTIONS = ("lifted", "bare word", "thin")


def objections(question: str, source_id: str, passage: str) -> tuple[str, ...]:
    """The strict reader's objections to a success: ``question`` answered by ``passage``
    (the stored text) from ``source_id`` (``kind:ref``, as stored with a trace)."""
    subject = overview_subject(question)
    if not subject:
        return ()
    kind, _, ref = source_id.partition(":")
    source = Source(cast("SourceKind", kind), ref)
    # The stored passage carries its heading on its first line, as the answer gave it.
    heading, _, body = passage.partition("\n")
    named = defines(subject, source, heading, body) or defines(subject, source, "", passage)
    out = []
    if not named and " " in subject and subject in " ".join(passage.casefold().split()):
        out.append("lifted")
    if not named and " " not in subject.strip():
        out.append("bare word")
    if substance(subject, passage) < THIN_TERMS:
        out.append("thin")
    return tuple(out)
