"""Request and response bodies of the HTTP API: frozen msgspec structs with bounds.

Requests forbid unknown fields; a body that does not decode, or breaks a
bound, is a 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from sentient_core.control import LearnerStatus

__all__ = [
    "MAX_QUESTION_CHARS",
    "AskRequest",
    "CommandReply",
    "ErrorReply",
    "FocusReply",
    "FocusRequest",
    "HealthReply",
    "IngestReply",
    "LogsReply",
    "QuestionReply",
    "RecallExplain",
    "RecallHit",
    "RecallReply",
    "RecallRequest",
    "SessionReply",
    "StatusReply",
]

MAX_QUESTION_CHARS = 1000
MAX_TOPIC_CHARS = 200


def _text(max_chars: int):
    return Annotated[str, msgspec.Meta(min_length=1, max_length=max_chars, pattern=r"\S")]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class _Reply(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class AskRequest(_Request):
    """``POST /ask``: a question for the learner."""

    question: _text(MAX_QUESTION_CHARS)


class FocusRequest(_Request):
    """``POST /focus``: a topic the pursuit drive keeps working on."""

    topic: _text(MAX_TOPIC_CHARS)


class RecallRequest(_Request):
    """``GET /recall?q=…&k=…&explain=…``."""

    q: _text(MAX_QUESTION_CHARS)
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    threshold: Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)] = 0.0
    explain: bool = False


class ErrorReply(_Reply):
    """Every 4xx/5xx body: what was wrong, in words."""

    error: str
    detail: str = ""


class CommandReply(_Reply):
    """What a control verb did (``ok`` false: nothing to do, with the reason)."""

    ok: bool
    state: str
    message: str


class QuestionReply(_Reply):
    """What became of an asked question (an event says it on the stream too)."""

    question: str
    status: str
    reason: str = ""
    session: str = ""


class FocusReply(_Reply):
    """The focus goal declared (an existing goal for the same topic is returned)."""

    id: str
    topic: str
    status: str


class RecallExplain(_Reply):
    """Why a trace was recalled: the ranking cosine and the evidence beside it."""

    cosine: float
    relevance: float
    shared_terms: tuple[str, ...]
    smf_similarity: float
    strength: float
    use_count: int
    age_s: float


class RecallHit(_Reply):
    """One recalled trace (text clipped to 2000 characters)."""

    rank: int
    id: int
    score: float
    kind: str
    source: str
    topic: str
    text: str
    explain: RecallExplain | None = None


class RecallReply(_Reply):
    """``GET /recall``."""

    query: str
    k: int
    hits: list[RecallHit]


class IngestReply(_Reply):
    """``POST /ingest``: what ingesting the upload did (as ``cli.py ingest`` reports it)."""

    name: str
    files: int
    chunks: int
    duplicates: int
    unchanged: int
    bytes: int
    skipped: tuple[str, ...] = ()
    stopped_by: str = ""


class StatusReply(LearnerStatus, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``GET /learning/status``: the learner's status and the server's side of it.

    Attributes
    ----------
    last_seq : int
        The newest audit-log sequence number (-1: empty); a panel replays from near it.
    stream_clients : int
        Connected live-stream clients.
    unsafe : tuple of str
        ``unsafe_`` settings in force (also logged at start).
    version : str
    """

    last_seq: int = -1
    stream_clients: int = 0
    unsafe: tuple[str, ...] = ()
    version: str = ""


class LogsReply(_Reply):
    """``GET /learning/logs``: the chaperone's interaction log, oldest first."""

    entries: list[dict[str, Any]]


class SessionReply(_Reply):
    """``GET /panel/session``: the CSRF token the panel echoes (the cookie is set too)."""

    csrf: str


class HealthReply(_Reply):
    """``GET /health``."""

    ok: bool
    version: str


def to_json(value: Any) -> bytes:
    """JSON bytes of a struct (or anything msgspec encodes)."""
    return _ENC.encode(value)


_ENC = msgspec.json.Encoder()
