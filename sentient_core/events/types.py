"""The typed events (one frozen struct per kind, a tagged union on ``kind``) and their codec."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from sentient_core.errors import SentientError
from sentient_core.safetext import safe_path_text
from sentient_core.vocab import Basis, Outcome, SessionStats, Source

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "EVENTS_DB",
    "EVENT_VERSION",
    "BreakerEvent",
    "BudgetEvent",
    "ChaperoneRequestEvent",
    "ChaperoneResponseEvent",
    "CommitmentEvent",
    "CuriosityEvent",
    "ErrorEvent",
    "Event",
    "EventLogError",
    "FocusEvent",
    "GapSummary",
    "IntegrateEvent",
    "IterationEvent",
    "JudgeEvent",
    "LayerEvent",
    "LearnEvent",
    "LegacyEvent",
    "MetaMemoryEvent",
    "ModelWaitEvent",
    "QueryEvent",
    "QuestionClosedEvent",
    "QuestionEvent",
    "RecipeEvent",
    "ReflectEvent",
    "RefusalEvent",
    "SearchEvent",
    "SessionEvent",
    "ShadowJudgeEvent",
    "SkipEvent",
    "UnsafeSettingEvent",
    "decode_event",
]

EVENTS_DB = "events"
DEFAULT_MAX_EVENTS = 200_000
EVENT_VERSION = 2


class EventLogError(SentientError):
    """An audit-log entry cannot be read (a newer schema, or corrupt bytes)."""


# Subclasses repeat frozen=True: msgspec inherits it, but type checkers
# (PEP 681 dataclass_transform) would read them as non-frozen.
class _Base(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag_field="kind"
):
    """Fields every event has.

    Attributes
    ----------
    v : int
        Event schema version.
    t : float
        Unix time (from the bus's clock).
    session : str
        Learner session id ("" outside a session).
    iteration : int
        Loop iteration (-1 outside an iteration).
    """

    v: int = EVENT_VERSION
    t: float
    session: str = ""
    iteration: int = -1

    @property
    def kind(self) -> str:
        """The event's tag (``"query"``, ``"judge"`` …)."""
        return self.__struct_config__.tag  # type: ignore[return-value]


class GapSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A gap as shown in a :class:`CuriosityEvent`."""

    type: str
    topic: str
    question: str


class SessionEvent(_Base, frozen=True, tag="session"):
    """A session started, paused, resumed or ended (``stats`` at the end)."""

    state: Literal["started", "paused", "resumed", "ended"]
    iterations: int = 0
    stats: SessionStats | None = None


class QuestionEvent(_Base, frozen=True, tag="question"):
    """What became of a question: every user question ends in such an event
    (and a question the core raised itself, when memory settles it).

    ``status``: ``queued`` (waiting for a drive to pick it), ``asked`` (handed
    to the chaperone), ``answered`` (it was answered before; or, where curiosity
    lets memory settle questions — the learner does not —, memory already
    answers it: ``trace_id`` and ``relevance`` say with what), ``waiting``
    (it failed before and backs off until memory or the sources change),
    ``dropped`` (with the ``reason``) or ``reopened`` (a user's question closed
    before is open again: the sources changed, or the user asked it again). How a
    user's question ended is a :class:`QuestionClosedEvent`.
    """

    question: str
    status: Literal["queued", "asked", "answered", "waiting", "dropped", "reopened"] = "queued"
    reason: str = ""
    trace_id: int = -1
    relevance: float = 0.0
    origin: str = "user"


_Line = Annotated[str, msgspec.Meta(max_length=300)]


class QuestionClosedEvent(_Base, frozen=True, tag="question.closed"):
    """How a user's question ended: exactly one per asking (a re-opened question ends again).

    ``outcome``: ``answered`` (the judge called the answer a success: ``trace_id``,
    ``passage`` and ``source`` say with what), ``already_known`` (memory held the
    answer: the trace and its passage) or ``not_found`` (every route tried failed:
    ``tried`` lists each attempt and the gate that stopped it, ``reason`` why it
    stopped; it re-opens when the sources change). ``attempts``: judged asks.
    """

    question: str
    outcome: Literal["answered", "already_known", "not_found"]
    trace_id: int = -1
    passage: Annotated[str, msgspec.Meta(max_length=600)] = ""
    source: _Line = ""
    tried: Annotated[tuple[_Line, ...], msgspec.Meta(max_length=16)] = ()
    reason: Annotated[str, msgspec.Meta(max_length=600)] = ""
    attempts: Annotated[int, msgspec.Meta(ge=0)] = 0


class FocusEvent(_Base, frozen=True, tag="focus"):
    """A focus goal changed: ``declared``, ``resolved`` (its criteria held: ``held``
    names them with their figures; or the user said ``focus done``), ``closed``
    (the user gave it up) or ``reopened`` (declared again after it ended)."""

    goal: str
    topic: str
    action: Literal["declared", "resolved", "closed", "reopened"]
    held: tuple[_Line, ...] = ()
    reason: str = ""


class CuriosityEvent(_Base, frozen=True, tag="curiosity"):
    """The gaps curiosity (and the pursuit drive) found in one iteration."""

    gaps: tuple[GapSummary, ...] = ()
    intensity: float = 0.0


class SkipEvent(_Base, frozen=True, tag="skip"):
    """An iteration did nothing, and why."""

    reason: str


class QueryEvent(_Base, frozen=True, tag="query"):
    """A request the learner is about to hand to the chaperone."""

    id: str
    type: str
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""


class ChaperoneRequestEvent(_Base, frozen=True, tag="chaperone.request"):
    """The chaperone received a request."""

    id: str
    type: str
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""
    text_chars: int = 0
    gap_type: str = ""


class ChaperoneResponseEvent(_Base, frozen=True, tag="chaperone.response"):
    """The chaperone's response (content shortened to ``preview``)."""

    id: str
    type: str
    ok: bool
    refused: bool = False
    check: str = ""
    reason: str = ""
    error: str = ""
    grounded: bool = False
    sources: tuple[Source, ...] = ()
    saved_path: str = ""
    mime: str = ""
    bytes: int = 0
    tokens: int = 0
    elapsed_s: float = 0.0
    content_chars: int = 0
    preview: str = ""
    fallback: str = ""


class RefusalEvent(_Base, frozen=True, tag="refusal"):
    """A safety check refused a request."""

    id: str
    type: str
    check: str
    reason: str
    url: str = ""
    path: str = ""


class ErrorEvent(_Base, frozen=True, tag="error"):
    """Something failed; ``where`` names the stage (``loop``, ``llm``, ``chaperone`` …)."""

    where: str
    error: str
    id: str = ""
    type: str = ""


class ModelWaitEvent(_Base, frozen=True, tag="model.wait"):
    """Still waiting for the model (published every few seconds of a call)."""

    id: str
    elapsed_s: float
    deadline_s: float


class BreakerEvent(_Base, frozen=True, tag="model.breaker"):
    """The model's circuit breaker moved: ``open`` (failures in a row; answers come
    from the offline corpus at once for ``cool_down_s``), ``half-open`` (a trial
    call), ``closed`` (the model answers again)."""

    state: Literal["open", "half-open", "closed"]
    failures: int = 0
    cool_down_s: float = 0.0
    reason: str = ""


class IntegrateEvent(_Base, frozen=True, tag="integrate"):
    """A passage became traces (``chunks`` new ones; ``known`` memory already held).

    ``trace_ids`` are the new traces, ``known_ids`` the traces that already held
    the other chunks (their use count went up).
    """

    id: str
    chunks: int
    source: str
    grounded: bool
    known: int = 0
    relevance: float | None = None
    trace_ids: tuple[int, ...] = ()
    known_ids: tuple[int, ...] = ()
    smf: dict[str, float] = msgspec.field(default_factory=dict)


class JudgeEvent(_Base, frozen=True, tag="judge"):
    """The judge's verdict on one initiative (``relevance`` and ``focus``: what the
    stored passage was judged on; ``gate``: the gate that stopped it, or ``learned``;
    see :class:`~sentient_core.vocab.Verdict`)."""

    id: str
    outcome: Outcome
    basis: Basis
    reason: str
    relevance: float | None = None
    focus: float | None = None
    gate: str = ""


class ShadowJudgeEvent(_Base, frozen=True, tag="judge.shadow"):
    """A shadow judge's verdict on an initiative the live judge ruled on (``live``):
    logged to audit a judge before it drives learning; nothing acts on it."""

    id: str
    outcome: Outcome
    basis: Basis
    reason: str
    gate: str
    live: Outcome
    agrees: bool


class CommitmentEvent(_Base, frozen=True, tag="commitment"):
    """The task-commitment drive on a user's question the judge did not call answered:
    the ``route`` it takes next (and why), or ``route == ""``: it gave up, and why."""

    question: str
    route: str
    gate: str
    reason: str


class SearchEvent(_Base, frozen=True, tag="search"):
    """The learner searched for a new source for ``question``
    (:mod:`sentient_core.learning.searching`): the ``provider``'s candidates
    (``results``; ``dropped``: malformed entries of its answer), how many the safety
    filter allowed, why the others were filtered (``filtered``: check → count; each
    one is also a ``refusal`` event), and how many of the allowed ones go to be
    fetched (``fetching``). ``error``: the search failed (nothing was fetched)."""

    id: str
    question: str
    query: str
    provider: str
    results: int = 0
    dropped: int = 0
    allowed: int = 0
    filtered: dict[str, int] = msgspec.field(default_factory=dict)
    fetching: int = 0
    error: str = ""


class RecipeEvent(_Base, frozen=True, tag="recipe"):
    """A recipe (:mod:`sentient_core.recipes`) was born, tried first on a request, judged on
    that reuse, or changed state: ``action`` is ``born``, ``tried``, ``verified``,
    ``failed``, ``inconclusive``, ``rewritten`` or ``retired``; ``before``/``after`` are its
    states (equal when none changed); ``request`` the request id it is about;
    ``question_kind`` and ``domain`` the recipe's key."""

    recipe: int
    action: str
    request: str = ""
    question_kind: str = ""
    domain: str = ""
    before: str = ""
    after: str = ""
    reason: str = ""


class BudgetEvent(_Base, frozen=True, tag="budget"):
    """The budget refused a tick or an initiative."""

    allowed: bool
    cap: str
    reason: str


class LearnEvent(_Base, frozen=True, tag="learn"):
    """The learner drew its conclusions from one initiative."""

    id: str
    outcome: Outcome
    followups: int = 0


class ReflectEvent(_Base, frozen=True, tag="reflect"):
    """A reflection: links made, insights, follow-up questions."""

    traces: int
    links: int
    dominant_axis: str
    insights: tuple[str, ...] = ()
    followups: tuple[str, ...] = ()


class IterationEvent(_Base, frozen=True, tag="iteration"):
    """An iteration ended: what it did and the state after it (the SMF
    orientation by axis name, traces in memory, today's budget spend)."""

    initiatives: int
    ingested: int
    outcomes: tuple[str, ...] = ()
    coherence: float = 0.0
    smf: dict[str, float] = msgspec.field(default_factory=dict)
    traces: int = -1
    tokens_today: int = -1
    tool_calls_today: int = -1


class UnsafeSettingEvent(_Base, frozen=True, tag="config.unsafe"):
    """A safety check was loosened on purpose by an ``unsafe_`` setting (logged at start)."""

    key: str
    value: str
    source: str


class MetaMemoryEvent(_Base, frozen=True, tag="metamemory"):
    """Meta-memory changed something: ``component`` did ``action`` to ``subject``."""

    component: Literal["surprise", "credit", "sources", "debts", "wisdom", "scorer"]
    action: str
    subject: str = ""
    domain: str = ""
    before: float = 0.0
    after: float = 0.0
    detail: str = ""


class LayerEvent(_Base, frozen=True, tag="layer"):
    """A record moved between memory's layers (SPEC §6): ``action`` (``promoted``,
    ``revised``, ``demoted``, ``retired``, ``rejected``) on ``record`` (``note:3``) of
    ``layer``, why, and the evidence (trace ids) it rests on."""

    layer: Literal["episodic", "semantic", "procedural", "guards", "meta"]
    record: str
    action: str
    subject: str = ""
    reason: str = ""
    evidence: tuple[int, ...] = ()


Event = (
    SessionEvent
    | QuestionEvent
    | QuestionClosedEvent
    | FocusEvent
    | CuriosityEvent
    | SkipEvent
    | QueryEvent
    | ChaperoneRequestEvent
    | ChaperoneResponseEvent
    | RefusalEvent
    | ErrorEvent
    | IntegrateEvent
    | ModelWaitEvent
    | BreakerEvent
    | JudgeEvent
    | ShadowJudgeEvent
    | CommitmentEvent
    | SearchEvent
    | RecipeEvent
    | BudgetEvent
    | LearnEvent
    | ReflectEvent
    | IterationEvent
    | UnsafeSettingEvent
    | MetaMemoryEvent
    | LayerEvent
)
"""Every event the loop emits (a tagged union on ``kind``)."""


class LegacyEvent(msgspec.Struct, frozen=True, kw_only=True):
    """A v1 audit-log entry whose kind or fields have no typed event."""

    v: int = 1
    t: float
    session: str = ""
    iteration: int = -1
    kind: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class _Peek(msgspec.Struct):
    v: int = 0


_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(Event)
_PEEK = msgspec.msgpack.Decoder(_Peek)
_LEGACY = msgspec.msgpack.Decoder(LegacyEvent)
# v1 field names that changed when events became typed.
_V1_RENAMES = {"stage": "where"}
_V1_DROPPED = {"session"}  # chaperone.request carried the session in its data


def decode_event(raw: bytes, seq: int = -1) -> Event | LegacyEvent:
    """One stored audit-log entry (see the module docstring for versions)."""
    try:
        return _DEC.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        error = exc
    try:
        version = _PEEK.decode(raw).v
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise EventLogError(f"audit-log entry {seq} does not decode: {error}") from None
    if version > EVENT_VERSION:
        raise EventLogError(
            f"audit-log entry {seq} has event schema v{version}; this sentient-core reads"
            f" up to v{EVENT_VERSION}: upgrade sentient-core"
        )
    if version != 1:
        raise EventLogError(f"audit-log entry {seq} (v{version}) is invalid: {error}")
    old = _LEGACY.decode(raw)
    fields = {_V1_RENAMES.get(k, k): v for k, v in old.data.items() if k not in _V1_DROPPED}
    fields.update(kind=old.kind, t=old.t, session=old.session, iteration=old.iteration, v=1)
    try:
        return msgspec.convert(fields, Event)
    except msgspec.ValidationError:
        return old


def _encode(event: Event) -> bytes:
    """msgpack of an event; strings that cannot be UTF-8 (lone surrogates from a
    file name or a JSON escape) are stored escaped instead of failing the log.

    An event built with a value out of its bounds (a Struct is not validated when it is
    made) would be written and then make its audit-log entry undecodable: it is checked
    by decoding it back, and stored instead as an ``error`` event that keeps its kind,
    the reason and its fields as text.
    """
    try:
        raw = _ENC.encode(event)
    except UnicodeEncodeError:
        raw = _ENC.encode(_safe_strings(msgspec.to_builtins(event)))
    try:
        _DEC.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        shown = _safe_strings(repr(msgspec.to_builtins(event)))[:1500]
        return _ENC.encode(
            ErrorEvent(
                t=event.t,
                session=event.session,
                iteration=event.iteration,
                where="event-log",
                error=f"invalid {event.kind} event not logged as such ({exc}): {shown}",
            )
        )
    return raw


def _safe_strings(value: Any) -> Any:
    if isinstance(value, str):
        return safe_path_text(value) if not value.isprintable() else value
    if isinstance(value, dict):
        return {k: _safe_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe_strings(v) for v in value]
    return value
