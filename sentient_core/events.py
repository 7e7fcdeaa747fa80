"""Typed events, the event bus and the persisted audit log: every step of the loop.

Each kind of event is one frozen msgspec ``Struct`` in the tagged union
:data:`Event` (the tag is the ``kind`` field: ``"query"``, ``"judge"`` …), so
listeners, the live view and ``eavesdrop --json`` match on types, and an event
with a missing or misspelt field fails where it is made, not where it is read.

Events are stamped with the time, the learner session and the loop iteration
by an :class:`Emitter`: a small immutable scope object handed explicitly to
whoever publishes (``bus.emitter(session=…)``, then ``.at(iteration)``). No
code changes shared attributes to make events pick up a session implicitly.

In-process listeners subscribe to an :class:`EventBus`; every published event
is also appended to the store's ``events`` sub-database (8-byte sequence keys)
at the next :meth:`EventBus.flush`, so another process can follow a running
learner with :func:`follow` (what ``cli.py eavesdrop`` does). The learner
flushes once per step, so the audit log costs one commit per step.

Retention: the log keeps the newest ``max_events`` entries (default 200,000).
When a flush takes it past that by more than 10 %, the oldest entries are
deleted in the same transaction. Sequence numbers are never reused.

Versions: entries are written with ``v = 2``. Entries of the untyped v1 log
(``kind`` + a ``data`` dict) are converted to their typed event when read; a
v1 entry whose kind or fields are unknown comes back as a :class:`LegacyEvent`.
An entry from a newer schema raises :class:`EventLogError` naming the version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar

import msgspec

from sentient_core.errors import ArgumentError, SentientError
from sentient_core.safetext import safe_path_text
from sentient_core.store import Store, Txn, log
from sentient_core.vocab import Basis, Outcome, SessionStats, Source

__all__ = [
    "EVENTS_DB",
    "EVENT_VERSION",
    "BreakerEvent",
    "BudgetEvent",
    "ChaperoneRequestEvent",
    "ChaperoneResponseEvent",
    "CuriosityEvent",
    "Emitter",
    "ErrorEvent",
    "Event",
    "EventBus",
    "EventLogError",
    "GapSummary",
    "IntegrateEvent",
    "IterationEvent",
    "JudgeEvent",
    "LearnEvent",
    "LegacyEvent",
    "ModelWaitEvent",
    "QueryEvent",
    "QuestionEvent",
    "ReflectEvent",
    "RefusalEvent",
    "SessionEvent",
    "SkipEvent",
    "follow",
    "read_events",
]

EVENTS_DB = "events"
DEFAULT_MAX_EVENTS = 200_000
EVENT_VERSION = 2


class EventLogError(SentientError):
    """An audit-log entry cannot be read (a newer schema, or corrupt bytes)."""


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


class SessionEvent(_Base, tag="session"):
    """A session started, paused, resumed or ended (``stats`` at the end)."""

    state: Literal["started", "paused", "resumed", "ended"]
    iterations: int = 0
    stats: SessionStats | None = None


class QuestionEvent(_Base, tag="question"):
    """What became of a question: every user question ends in such an event
    (and a question the core raised itself, when memory answers it).

    ``status``: ``queued`` (waiting for a drive to pick it), ``asked`` (handed
    to the chaperone), ``answered`` (memory already answers it, ``trace_id``
    and ``relevance`` say with what; or it was answered before), ``waiting``
    (it failed before and backs off until memory or the sources change) or
    ``dropped`` (with the ``reason``).
    """

    question: str
    status: Literal["queued", "asked", "answered", "waiting", "dropped"] = "queued"
    reason: str = ""
    trace_id: int = -1
    relevance: float = 0.0
    origin: str = "user"


class CuriosityEvent(_Base, tag="curiosity"):
    """The gaps curiosity (and the pursuit drive) found in one iteration."""

    gaps: tuple[GapSummary, ...] = ()
    intensity: float = 0.0


class SkipEvent(_Base, tag="skip"):
    """An iteration did nothing, and why."""

    reason: str


class QueryEvent(_Base, tag="query"):
    """A request the learner is about to hand to the chaperone."""

    id: str
    type: str
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""


class ChaperoneRequestEvent(_Base, tag="chaperone.request"):
    """The chaperone received a request."""

    id: str
    type: str
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""
    text_chars: int = 0
    gap_type: str = ""


class ChaperoneResponseEvent(_Base, tag="chaperone.response"):
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


class RefusalEvent(_Base, tag="refusal"):
    """A safety check refused a request."""

    id: str
    type: str
    check: str
    reason: str
    url: str = ""
    path: str = ""


class ErrorEvent(_Base, tag="error"):
    """Something failed; ``where`` names the stage (``loop``, ``llm``, ``chaperone`` …)."""

    where: str
    error: str
    id: str = ""
    type: str = ""


class ModelWaitEvent(_Base, tag="model.wait"):
    """Still waiting for the model (published every few seconds of a call)."""

    id: str
    elapsed_s: float
    deadline_s: float


class BreakerEvent(_Base, tag="model.breaker"):
    """The model's circuit breaker moved: ``open`` (failures in a row; answers come
    from the offline corpus at once for ``cool_down_s``), ``half-open`` (a trial
    call), ``closed`` (the model answers again)."""

    state: Literal["open", "half-open", "closed"]
    failures: int = 0
    cool_down_s: float = 0.0
    reason: str = ""


class IntegrateEvent(_Base, tag="integrate"):
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


class JudgeEvent(_Base, tag="judge"):
    """The judge's verdict on one initiative."""

    id: str
    outcome: Outcome
    basis: Basis
    reason: str


class BudgetEvent(_Base, tag="budget"):
    """The budget refused a tick or an initiative."""

    allowed: bool
    cap: str
    reason: str


class LearnEvent(_Base, tag="learn"):
    """The learner drew its conclusions from one initiative."""

    id: str
    outcome: Outcome
    followups: int = 0


class ReflectEvent(_Base, tag="reflect"):
    """A reflection: links made, insights, follow-up questions."""

    traces: int
    links: int
    dominant_axis: str
    insights: tuple[str, ...] = ()
    followups: tuple[str, ...] = ()


class IterationEvent(_Base, tag="iteration"):
    """An iteration ended."""

    initiatives: int
    ingested: int
    outcomes: tuple[str, ...] = ()
    coherence: float = 0.0


Event = (
    SessionEvent
    | QuestionEvent
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
    | BudgetEvent
    | LearnEvent
    | ReflectEvent
    | IterationEvent
)
"""Every event the loop emits (a tagged union on ``kind``)."""

E = TypeVar("E", bound=_Base)


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
    file name or a JSON escape) are stored escaped instead of failing the log."""
    try:
        return _ENC.encode(event)
    except UnicodeEncodeError:
        return _ENC.encode(_safe_strings(msgspec.to_builtins(event)))


def _safe_strings(value: Any) -> Any:
    if isinstance(value, str):
        return safe_path_text(value) if not value.isprintable() else value
    if isinstance(value, dict):
        return {k: _safe_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe_strings(v) for v in value]
    return value


Listener = Callable[[Event], None]


class Emitter:
    """Stamps and publishes events for one scope (a session, an iteration).

    Immutable: :meth:`at` returns a new emitter for another iteration.
    """

    __slots__ = ("_bus", "iteration", "session")

    def __init__(self, bus: EventBus, session: str = "", iteration: int = -1) -> None:
        self._bus = bus
        self.session = session
        self.iteration = iteration

    def at(self, iteration: int) -> Emitter:
        """The same session, another iteration (-1: outside any iteration)."""
        return Emitter(self._bus, self.session, iteration)

    def make(self, cls: type[E], **fields: Any) -> E:
        """A ``cls`` event from ``fields``, stamped with this scope (not published)."""
        return cls(t=self._bus.now(), session=self.session, iteration=self.iteration, **fields)

    def emit(self, cls: type[E], **fields: Any) -> E:
        """Make a ``cls`` event from ``fields``, stamped with this scope, and publish it."""
        event = self.make(cls, **fields)
        self._bus.publish(event)  # type: ignore[arg-type]
        return event

    def flush(self) -> int:
        """Flush the bus (see :meth:`EventBus.flush`)."""
        return self._bus.flush()


class EventBus:
    """Publish events to listeners and (on flush) to the persisted audit log.

    Parameters
    ----------
    store : Store, optional
        Where the audit log lives; ``None`` keeps events in memory only.
    clock : callable
        Unix time source (injectable for deterministic tests).
    max_events : int
        Entries the audit log keeps (oldest pruned first).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        clock: Callable[[], float] = time.time,
        max_events: int = DEFAULT_MAX_EVENTS,
    ):
        if max_events < 1:
            raise ArgumentError(f"max_events must be >= 1, got {max_events}")
        self._store = store
        self.max_events = max_events
        self.pruned = 0
        self._clock = clock
        self._listeners: list[Listener] = []
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self.published = 0

    def now(self) -> float:
        """The bus's clock."""
        return self._clock()

    def emitter(self, *, session: str = "", iteration: int = -1) -> Emitter:
        """An :class:`Emitter` stamping ``session`` and ``iteration``."""
        return Emitter(self, session, iteration)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns an unsubscribe function."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def publish(self, event: Event) -> Event:
        """Publish a stamped event (listeners now; the audit log at the next flush)."""
        with self._lock:
            listeners = list(self._listeners)
            if self._store is not None:
                self._pending.append(_encode(event))
            self.published += 1
        for listener in listeners:
            listener(event)
        return event

    def write_in(self, txn: Txn, events: Sequence[Event]) -> int:
        """Append the pending events, then ``events``, in the caller's write transaction.

        For audit events that must commit with the change they describe (the
        traces an integrate event names). Nothing is published or dropped here:
        after the caller's transaction committed, call :meth:`confirm` with the
        returned count and the same events. If the transaction is re-run (map
        growth) this runs again; if it fails, the pending events stay pending.
        Returns how many pending events were written.
        """
        if self._store is None:
            return 0
        with self._lock:
            batch = list(self._pending)
        for raw in batch:
            log.append(txn, EVENTS_DB, raw)
        for event in events:
            log.append(txn, EVENTS_DB, _encode(event))
        return len(batch)

    def confirm(self, written: int, events: Sequence[Event]) -> None:
        """After :meth:`write_in`'s transaction committed: drop the ``written`` pending
        events it stored and publish ``events`` to the listeners."""
        with self._lock:
            del self._pending[:written]
            listeners = list(self._listeners)
            self.published += len(events)
        for event in events:
            for listener in listeners:
                listener(event)

    def flush(self) -> int:
        """Append pending events to the audit log in one write transaction; returns how many."""
        with self._lock:
            batch, self._pending = self._pending, []
        store = self._store
        if not batch or store is None:
            return 0

        def write(txn) -> int:
            for raw in batch:
                log.append(txn, EVENTS_DB, raw)
            if txn.entries(EVENTS_DB) - self.max_events <= self.max_events // 10:
                return 0
            return log.prune_oldest(txn, EVENTS_DB, self.max_events)

        self.pruned += store.write(write)
        return len(batch)


def read_events(
    store: Store, after: int = -1, limit: int | None = None
) -> list[tuple[int, Event | LegacyEvent]]:
    """Events with sequence number > ``after`` (oldest first), as ``(seq, event)``."""
    out: list[tuple[int, Event | LegacyEvent]] = []
    with store.read() as txn:
        for seq, raw in log.iter_after(txn, EVENTS_DB, after):
            out.append((seq, decode_event(raw, seq)))
            if limit is not None and len(out) >= limit:
                break
    return out


def follow(
    store: Store,
    *,
    after: int = -1,
    poll: float = 0.2,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[tuple[int, Event | LegacyEvent]]:
    """Yield events as another process appends them, until ``stop()`` is true.

    The reader re-opens a read transaction each poll, so it sees every commit
    of the writer (LMDB readers never block the writer).
    """
    last = after
    while True:
        batch = read_events(store, last)
        for seq, event in batch:
            last = seq
            yield seq, event
        if stop():
            return
        if not batch:
            sleep(poll)
