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
flushes once per step, so the audit log costs one commit per step. Any thread may
flush (a server flushes soon after each publish so a live stream lags by one
commit, not one step); listeners registered with
:meth:`EventBus.subscribe_logged` get each committed ``(seq, raw)`` entry.

Modules: :mod:`~sentient_core.events.types` (the event structs and their codec),
:mod:`~sentient_core.events.bus` (the bus, :func:`read_events`, :func:`follow`).

Retention: the log keeps the newest ``max_events`` entries (default 200,000).
When a flush takes it past that by more than 10 %, the oldest entries are
deleted in the same transaction. Sequence numbers are never reused.

Versions: entries are written with ``v = 2``. Entries of the untyped v1 log
(``kind`` + a ``data`` dict) are converted to their typed event when read; a
v1 entry whose kind or fields are unknown comes back as a :class:`LegacyEvent`.
An entry from a newer schema raises :class:`EventLogError` naming the version.
"""

from sentient_core.events.bus import (
    Emitter,
    EventBus,
    LogListener,
    follow,
    last_session_end,
    read_events,
)
from sentient_core.events.types import (
    DEFAULT_MAX_EVENTS,
    EVENT_VERSION,
    EVENTS_DB,
    BreakerEvent,
    BudgetEvent,
    ChaperoneRequestEvent,
    ChaperoneResponseEvent,
    CommitmentEvent,
    CuriosityEvent,
    ErrorEvent,
    Event,
    EventLogError,
    FocusEvent,
    GapSummary,
    IntegrateEvent,
    IterationEvent,
    JudgeEvent,
    LayerEvent,
    LearnEvent,
    LegacyEvent,
    MetaMemoryEvent,
    ModelWaitEvent,
    QueryEvent,
    QuestionClosedEvent,
    QuestionEvent,
    RecipeEvent,
    ReflectEvent,
    RefusalEvent,
    SearchEvent,
    SessionEvent,
    ShadowJudgeEvent,
    SkipEvent,
    UnsafeSettingEvent,
    decode_event,
)

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
    "Emitter",
    "ErrorEvent",
    "Event",
    "EventBus",
    "EventLogError",
    "FocusEvent",
    "GapSummary",
    "IntegrateEvent",
    "IterationEvent",
    "JudgeEvent",
    "LayerEvent",
    "LearnEvent",
    "LegacyEvent",
    "LogListener",
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
    "follow",
    "last_session_end",
    "read_events",
]
