"""Surprise events: building them (checked), recording them, counting them.

A :class:`SurpriseEvent` (SPEC §5) records that something the core expected
turned out otherwise: memory predicted one answer and grounded evidence said
another, a judged answer was irrelevant or contradicted, or the user said it
was wrong. It is made with :func:`make_event` (every bound checked, the
source's kind one of :data:`~sentient_core.vocab.SOURCE_KINDS`) or, for a
detected disagreement, :func:`~sentient_core.metamemory.disagreement.from_disagreement`;
:class:`SurpriseLog` appends it to the store and counts events by cause. Source
ids are compared through :func:`source_key`, which keeps the part of a source
that its track record belongs to (a web source is its host, not the page).

Events live in the ``surprise`` sub-database under 8-byte big-endian sequence
keys (:data:`EVENTS`); an event's ``id`` is its sequence number. Nothing is
ever rewritten or deleted: the credit, source and wisdom records cite events by id.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

import msgspec

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.metamemory.base import Counts, publish
from sentient_core.store.records import RecordCodec, UnixTime
from sentient_core.store.table import IdTable, register
from sentient_core.vocab import SOURCE_KINDS

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "CAUSES",
    "EVENTS",
    "SOURCE_PATTERN",
    "Cause",
    "SurpriseBasis",
    "SurpriseEvent",
    "SurpriseLog",
    "check_event",
    "check_source",
    "make_event",
    "source_key",
]

MAX_KEY = 200

Cause = Literal[
    "disagreement", "irrelevant", "contradicted", "ungrounded_contradicted", "user_feedback"
]
CAUSES: tuple[str, ...] = (
    "disagreement",
    "irrelevant",
    "contradicted",
    "ungrounded_contradicted",
    "user_feedback",
)
"""Why an event fired: memory's answer disagreed with grounded evidence
(``disagreement``); the judged answer did not answer the question
(``irrelevant``); a grounded source contradicted it (``contradicted``); an
ungrounded answer (an LLM's) was contradicted by grounded evidence
(``ungrounded_contradicted``); the user said so (``user_feedback``)."""

SOURCE_PATTERN = r"^[a-z]+:."
"""A source id is ``KIND:REF`` (see :attr:`sentient_core.vocab.Source.id`)."""

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
TraceRef = Annotated[int, msgspec.Meta(ge=-1)]
SourceId = Annotated[str, msgspec.Meta(pattern=SOURCE_PATTERN, max_length=1000)]
Text = Annotated[str, msgspec.Meta(max_length=4000)]


class SurpriseBasis(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How a magnitude was computed: the rule and its inputs.

    Attributes
    ----------
    rule : str
        Name of the rule, e.g. ``"disagreement.version"``, ``"judge.relevance"``,
        ``"user"``.
    inputs : dict of str to str
        The named inputs the rule used (tokens compared, scores, ...), as text.
    detail : str
        One human-readable sentence.
    """

    rule: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    inputs: dict[str, str] = msgspec.field(default_factory=dict)
    detail: Text = ""


class SurpriseEvent(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One surprise event (SPEC §5).

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
        Sequence number in the log (-1 until :meth:`SurpriseLog.record` assigns it).
    context : str
        What was going on (the question asked, the request).
    action : str
        What the core did that turned out wrong (``"recall"``, ``"answer"``,
        ``"fetch_content"`` ...); wisdom clusters on (domain, action).
    expected, actual : str
        What was expected (memory's answer) and what arrived (the evidence).
    magnitude : float
        Surprise ``s`` in [0, 1].
    basis : SurpriseBasis
        How ``magnitude`` was computed.
    domain : str
        The knowledge domain (see :func:`sentient_core.metamemory.domain_of`).
    time : float
        Unix seconds.
    session : str
        Learner session ("" outside one).
    source_memory : int
        The trace that predicted ``expected`` (-1: none).
    source : str
        The source that was wrong, ``KIND:REF`` (``llm:host/model``,
        ``memory:recall``, ``web:docs.python.org`` ...).
    cause : str
        One of :data:`CAUSES`.
    correcting_memory : int
        The trace holding the evidence that corrected it (-1: none).
    correcting_source : str
        The source that was right ("" if none).
    """

    v: int = 1
    id: TraceRef = -1
    context: Text
    action: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    expected: Text = ""
    actual: Text = ""
    magnitude: Unit
    basis: SurpriseBasis
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    time: UnixTime
    session: Annotated[str, msgspec.Meta(max_length=200)] = ""
    source_memory: TraceRef = -1
    source: SourceId
    cause: Cause
    correcting_memory: TraceRef = -1
    correcting_source: Annotated[str, msgspec.Meta(pattern=r"^$|" + SOURCE_PATTERN)] = ""


# The whole sub-database, keys 0, 1, 2 ... like the audit log (sentient_core.store.log).
EVENTS: IdTable[SurpriseEvent] = IdTable(
    "surprise", b"", RecordCodec(SurpriseEvent, 1, "surprise event"), field="id", label="surprise"
)
"""Every surprise event, by id (its sequence number in the log)."""
register(
    EVENTS,
    traces=lambda ev: (
        (f"surprise event {ev.id}", ev.source_memory),
        (f"surprise event {ev.id}", ev.correcting_memory),
    ),
)


def check_source(source: str, *, name: str = "source", empty: bool = False) -> str:
    """``source`` if it is a ``KIND:REF`` source id of a known kind (or "" with ``empty``)."""
    if not isinstance(source, str):
        raise ArgumentTypeError(f"{name} must be a source id string, got {type(source).__name__}")
    if empty and source == "":
        return source
    kind, sep, ref = source.partition(":")
    if not sep or not ref or kind not in SOURCE_KINDS:
        raise ArgumentError(
            f"{name} must be KIND:REF with KIND one of {', '.join(SOURCE_KINDS)}, got {source!r}"
        )
    return source


def source_key(source: str) -> str:
    """The part of a source id that a track record is kept for.

    ``web:https://docs.python.org/3/x.html`` → ``web:docs.python.org`` (a site
    earns trust, not a page); ``llm:HOST/MODEL``, ``local:PATH``,
    ``corpus:…``, ``memory:…`` and ``summary:…`` stay as they are. Cut to 200
    characters.
    """
    check_source(source)
    kind, _, ref = source.partition(":")
    if kind == "web":
        host = urlsplit(ref if "://" in ref else f"https://{ref}").hostname or ref
        return f"web:{host.lower()}"[:MAX_KEY]
    return source[:MAX_KEY]


def check_event(event: SurpriseEvent) -> SurpriseEvent:
    """``event`` if every field is within its bounds and its sources are known kinds.

    Raises
    ------
    ArgumentError
        A field is out of bounds (msgspec checks bounds only when decoding).
    """
    if not isinstance(event, SurpriseEvent):
        raise ArgumentTypeError(f"expected a SurpriseEvent, got {type(event).__name__}")
    try:
        msgspec.convert(msgspec.to_builtins(event), SurpriseEvent)
    except msgspec.ValidationError as exc:
        raise ArgumentError(f"invalid surprise event: {exc}") from None
    check_source(event.source)
    check_source(event.correcting_source, name="correcting_source", empty=True)
    return event


def make_event(
    *,
    context: str,
    action: str,
    magnitude: float,
    basis: SurpriseBasis,
    domain: str,
    source: str,
    cause: str,
    time: float,
    expected: str = "",
    actual: str = "",
    session: str = "",
    source_memory: int = -1,
    correcting_memory: int = -1,
    correcting_source: str = "",
) -> SurpriseEvent:
    """A checked :class:`SurpriseEvent` (id -1 until recorded); see its attributes.

    Raises
    ------
    ArgumentError
        A value is out of bounds, ``cause`` is not one of
        :data:`CAUSES`, or a source is malformed.
    """
    if cause not in CAUSES:
        raise ArgumentError(f"cause must be one of {', '.join(CAUSES)}, got {cause!r}")
    return check_event(
        SurpriseEvent(
            context=context[:4000],
            action=action,
            expected=expected[:4000],
            actual=actual[:4000],
            magnitude=magnitude,
            basis=basis,
            domain=domain,
            time=time,
            session=session,
            source_memory=source_memory,
            source=source,
            cause=cause,  # type: ignore[arg-type]
            correcting_memory=correcting_memory,
            correcting_source=correcting_source,
        )
    )


class SurpriseLog:
    """Records surprise events in the store's ``surprise`` log and counts them.

    Parameters
    ----------
    store : Store
    emit : Emitter, optional
        Publishes a ``metamemory`` event per recorded surprise.
    clock : callable
        Unix time (for callers that want :meth:`now`).

    Counters: ``events``, ``by_cause.<cause>`` for every cause, ``magnitude_sum``.
    """

    def __init__(
        self,
        store: Store,
        *,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._emit = emit
        self._clock = clock
        self._counts = Counts(("events", "magnitude_sum", *(f"by_cause.{c}" for c in CAUSES)))

    def now(self) -> float:
        """The log's clock."""
        return float(self._clock())

    def record(self, event: SurpriseEvent) -> SurpriseEvent:
        """Append ``event`` in one write transaction; returns it with its id."""
        check_event(event)
        stored = self._store.write(lambda txn: EVENTS.append(txn, event))
        self.noted([stored])
        return stored

    def record_in(self, txn: Txn, event: SurpriseEvent) -> SurpriseEvent:
        """Append ``event`` inside the caller's write transaction (call :meth:`noted` after
        it committed: nothing is counted or published here, the transaction may be re-run)."""
        return EVENTS.append(txn, check_event(event))

    def noted(self, events: Sequence[SurpriseEvent]) -> None:
        """Count and publish events whose transaction committed."""
        for e in events:
            self._counts.add("events")
            self._counts.add(f"by_cause.{e.cause}")
            self._counts.add("magnitude_sum", e.magnitude)
            publish(
                self._emit,
                "surprise",
                "recorded",
                subject=f"surprise:{e.id}",
                domain=e.domain,
                after=e.magnitude,
                detail=f"{e.cause}: {e.basis.detail or e.basis.rule}"[:500],
            )

    def get(self, event_id: int) -> SurpriseEvent | None:
        """The event with id ``event_id``, or None."""
        with self._store.read() as txn:
            return EVENTS.get(txn, event_id)

    def recent(self, n: int, *, domain: str | None = None) -> list[SurpriseEvent]:
        """The ``n`` newest events (of ``domain`` if given), newest first.

        Scans backwards from the newest event; with a domain filter it reads until
        it has found ``n`` of that domain or reached the oldest event.
        """
        if n <= 0:
            return []
        with self._store.read() as txn:
            newest = EVENTS.iter(txn, reverse=True)
            return list(
                itertools.islice((e for e in newest if domain is None or e.domain == domain), n)
            )

    def events(self, after: int = -1) -> list[SurpriseEvent]:
        """Every event with ``id > after``, oldest first."""
        with self._store.read() as txn:
            return list(EVENTS.iter(txn, after=after))

    def counters(self) -> dict[str, float]:
        """What this log recorded in this process."""
        return self._counts.as_dict()
