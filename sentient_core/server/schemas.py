"""Request and response bodies of the HTTP API: frozen msgspec structs with bounds.

Requests forbid unknown fields; a body that does not decode, or breaks a
bound, is a 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from sentient_core.control import LearnerStatus

__all__ = [
    "MAX_QUESTION_CHARS",
    "AskRequest",
    "CommandReply",
    "EmptyQuery",
    "ErrorReply",
    "FocusEndRequest",
    "FocusListReply",
    "FocusReply",
    "FocusRequest",
    "HealthReply",
    "IngestQuery",
    "IngestReply",
    "LinkedTrace",
    "LinksReply",
    "LogsQuery",
    "LogsReply",
    "PageQuery",
    "QuestionReply",
    "QuestionsReply",
    "RecallExplain",
    "RecallHit",
    "RecallMiss",
    "RecallReply",
    "RecallRequest",
    "SessionReply",
    "StatusReply",
    "StreamQuery",
]

MAX_QUESTION_CHARS = 1000
MAX_TOPIC_CHARS = 200
MAX_LOG_COUNT = 1000
MAX_SEQ = 2**62


# Non-blank text of bounded length (type aliases, so that type checkers read them).
_QuestionText = Annotated[
    str, msgspec.Meta(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=r"\S")
]
_TopicText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOPIC_CHARS, pattern=r"\S")]


# Subclasses repeat frozen=True: msgspec inherits it, but type checkers
# (PEP 681 dataclass_transform) would read them as non-frozen.
class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class _Reply(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pass


class AskRequest(_Request, frozen=True):
    """``POST /ask``: a question for the learner."""

    question: _QuestionText


class FocusRequest(_Request, frozen=True):
    """``POST /focus``: a topic the pursuit drive keeps working on, and its resolution
    criteria (:mod:`sentient_core.autonomy.criteria`): questions and a condition."""

    topic: _TopicText
    questions: Annotated[list[_QuestionText], msgspec.Meta(max_length=16)] = msgspec.field(
        default_factory=list
    )
    condition: Annotated[str, msgspec.Meta(max_length=200)] = ""


class FocusEndRequest(_Request, frozen=True):
    """``POST /focus/close`` or ``/focus/done``: the goal (its id or topic) and why."""

    goal: _TopicText
    reason: Annotated[str, msgspec.Meta(max_length=300)] = ""


class RecallRequest(_Request, frozen=True):
    """``GET /recall?q=…&k=…&rank=…&explain=…`` (rank as ``cli.py recall --rank``)."""

    q: _QuestionText
    k: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    rank: Literal["scored", "hybrid", "bm25", "cosine"] = "scored"
    threshold: Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)] = 0.0
    explain: bool = False
    spread: Annotated[int, msgspec.Meta(ge=0, le=3)] | None = None
    """Link hops recall spreads along (None: ``server.recall_spread``)."""


class EmptyQuery(_Request, frozen=True):
    """A route that takes no query parameters (any given is a 400)."""


class PageQuery(_Request, frozen=True):
    """``GET /?token=…``: the token or a one-time login code, exchanged for a session."""

    token: Annotated[str, msgspec.Meta(max_length=256)] = ""


class LogsQuery(_Request, frozen=True):
    """``GET /learning/logs?count=N``."""

    count: Annotated[int, msgspec.Meta(ge=1, le=MAX_LOG_COUNT)] = 100


class StreamQuery(_Request, frozen=True):
    """``GET /learning/stream?after=N`` (or ``Last-Event-ID: N``): replay after sequence N."""

    after: Annotated[int, msgspec.Meta(ge=-1, le=MAX_SEQ)] = -1


class IngestQuery(_Request, frozen=True):
    """``POST /ingest?name=FILE``: the file's name (its extension picks the extractor)."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=255, pattern=r"\S")]


class ErrorReply(_Reply, frozen=True):
    """Every 4xx/5xx body: what was wrong, in words."""

    error: str
    detail: str = ""


class CommandReply(_Reply, frozen=True):
    """What a control verb did (``ok`` false: nothing to do, with the reason)."""

    ok: bool
    state: str
    message: str


class QuestionReply(_Reply, frozen=True):
    """What became of an asked question (an event says it on the stream too); ``closed``:
    how it ended when it already has (``already_known`` for a question answered before),
    else "" — ``GET /questions`` and the ``question.closed`` event say it later."""

    question: str
    status: str
    reason: str = ""
    session: str = ""
    closed: str = ""


class FocusReply(_Reply, frozen=True):
    """The focus goal declared, closed or done (declaring an existing goal's topic returns
    it, with any new questions added)."""

    id: str
    topic: str
    status: str
    condition: str = ""
    questions: tuple[str, ...] = ()
    reason: str = ""


class FocusListReply(_Reply, frozen=True):
    """``GET /focus``: every goal, its criteria checked (as ``sentient focus list --json``)."""

    goals: list[dict[str, Any]]


class QuestionsReply(_Reply, frozen=True):
    """``GET /questions``: the user's questions and how each one's latest asking ended."""

    questions: list[dict[str, Any]]


class RecallExplain(_Reply, frozen=True):
    """Why a trace was recalled: the ranking cosine and the evidence beside it."""

    cosine: float
    relevance: float
    shared_terms: tuple[str, ...]
    smf_similarity: float
    strength: float
    use_count: int
    age_s: float


class RecallHit(_Reply, frozen=True):
    """One recalled trace (text clipped to 2000 characters)."""

    rank: int
    id: int
    score: float
    kind: str
    source: str
    topic: str
    text: str
    explain: RecallExplain | None = None


class RecallMiss(_Reply, frozen=True):
    """A recall whose hits hold nothing relevant, as recorded (:mod:`sentient_core.misses`)."""

    subject: str
    count: int
    status: str
    question: str = ""


class RecallReply(_Reply, frozen=True):
    """``GET /recall``; ``miss`` when no hit passed the relevance check (the learner
    looks for a subject missed again)."""

    query: str
    k: int
    hits: list[RecallHit]
    miss: RecallMiss | None = None


class LinkedTrace(_Reply, frozen=True):
    """One neighbour of a trace in the link graph (text clipped to 300 characters).

    ``answered``: it is the passage an answered question of the question book was
    answered by (what curiosity's link gaps count)."""

    id: int
    weight: float
    kind: str
    source: str
    topic: str
    text: str
    answered: bool
    retired: bool


class LinksReply(_Reply, frozen=True):
    """``GET /traces/{id}/links``: a trace and its linked neighbours, strongest link first."""

    id: int
    topic: str
    text: str
    neighbours: list[LinkedTrace]


class IngestReply(_Reply, frozen=True):
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
    degraded : tuple of str
        What ran out (disk, map, file descriptors), as ``/health`` says it; empty when healthy.
    unsafe : tuple of str
        ``unsafe_`` settings in force (also logged at start).
    version : str
    """

    last_seq: int = -1
    stream_clients: int = 0
    degraded: tuple[str, ...] = ()
    unsafe: tuple[str, ...] = ()
    version: str = ""


class LogsReply(_Reply, frozen=True):
    """``GET /learning/logs``: the chaperone's interaction log, oldest first."""

    entries: list[dict[str, Any]]


class SessionReply(_Reply, frozen=True):
    """``GET /panel/session``: the CSRF token the panel echoes (the cookie is set too)."""

    csrf: str


class HealthReply(_Reply, frozen=True):
    """``GET /health``: ``ok`` and ``status`` "ok", or ``status`` "degraded" with the reasons."""

    ok: bool
    version: str
    status: str = "ok"
    reasons: tuple[str, ...] = ()


def to_json(value: Any) -> bytes:
    """JSON bytes of a struct (or anything msgspec encodes)."""
    return _ENC.encode(value)


_ENC = msgspec.json.Encoder()
