"""Typed messages of the learning loop (msgspec; frozen; unknown fields rejected).

These are the contracts between curiosity, the chaperone, the judge and the
learner. Every request the learner makes is a :class:`ChaperoneRequest`; every
answer, refusal or failure comes back as a :class:`ChaperoneResponse`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "GAP_TYPES",
    "QUERY_TYPES",
    "SOURCE_KINDS",
    "ChaperoneRequest",
    "ChaperoneResponse",
    "Gap",
    "Source",
]

QueryType = Literal["question", "fetch_content", "read_local", "summarize"]
QUERY_TYPES: tuple[str, ...] = ("question", "fetch_content", "read_local", "summarize")

GapType = Literal["question", "memory_miss", "coherence_drop", "smf_imbalance", "debt", "focus"]
GAP_TYPES: tuple[str, ...] = (
    "question",
    "memory_miss",
    "coherence_drop",
    "smf_imbalance",
    "debt",
    "focus",
)

SourceKind = Literal["llm", "web", "local", "summary", "memory", "corpus"]
SOURCE_KINDS: tuple[str, ...] = ("llm", "web", "local", "summary", "memory", "corpus")

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]


class Gap(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A knowledge gap found by curiosity."""

    type: GapType
    topic: str
    question: str
    priority: Unit = 0.5
    detail: str = ""
    url: str = ""
    path: str = ""


class ChaperoneRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the learner asks the chaperone for.

    ``question`` for *question*; ``url`` for *fetch_content*; ``path`` (relative
    to the incoming dir, or absolute — the safety filter decides) for
    *read_local*; ``text`` (or ``path``/``url`` of content to summarise) for
    *summarize*.
    """

    id: str
    type: QueryType
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""
    text: str = ""
    gap_type: str = ""
    session: str = ""


class Source(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where a piece of content came from (the real origin, never a made-up name)."""

    kind: SourceKind
    ref: str


class ChaperoneResponse(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The chaperone's answer to one request.

    ``ok`` — content was produced. ``refused`` — a safety check (``check``)
    or the budget stopped it, with ``reason``. ``grounded`` — the content comes
    from a grounding action that really happened: fetched from an allowed
    source or read from an allowed file (an LLM-only answer is never grounded).
    ``saved_path`` — where fetched content was written (inside the incoming dir).
    """

    request_id: str
    type: QueryType
    ok: bool
    content: str = ""
    sources: tuple[Source, ...] = ()
    refused: bool = False
    check: str = ""
    reason: str = ""
    error: str = ""
    grounded: bool = False
    saved_path: str = ""
    mime: str = ""
    bytes: NonNeg = 0
    tokens: NonNeg = 0
    elapsed_s: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
