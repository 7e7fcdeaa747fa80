"""Surprise events: building them (checked), recording them, counting them.

A :class:`~sentient_core.store.surprise.SurpriseEvent` is made with
:func:`make_event` (every bound checked, the source's kind one of
:data:`~sentient_core.vocab.SOURCE_KINDS`) or, for a detected disagreement,
:func:`from_disagreement`; :class:`SurpriseLog` appends it to the store and
counts events by cause. Source ids are compared through :func:`source_key`,
which keeps the part of a source that its track record belongs to (a web
source is its host, not the page).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import msgspec

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.metamemory.base import Counts, publish
from sentient_core.store import surprise as store_surprise
from sentient_core.store.surprise import CAUSES, SurpriseBasis, SurpriseEvent
from sentient_core.vocab import SOURCE_KINDS

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.metamemory.disagreement import Disagreement
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "SurpriseLog",
    "check_event",
    "check_source",
    "from_disagreement",
    "make_event",
    "source_key",
]

MAX_KEY = 200


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
        :data:`~sentient_core.store.surprise.CAUSES`, or a source is malformed.
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


def from_disagreement(
    question: str,
    found: Disagreement,
    *,
    domain: str,
    source: str,
    time: float,
    action: str = "recall",
    session: str = "",
    source_memory: int = -1,
    correcting_memory: int = -1,
    correcting_source: str = "",
    cause: str = "disagreement",
) -> SurpriseEvent:
    """The surprise event of a detected :class:`~sentient_core.metamemory.disagreement.Disagreement`.

    ``expected``/``actual`` are the two conflicting values, the magnitude and
    its basis come from the detector. Use ``cause="ungrounded_contradicted"``
    when the wrong side was an ungrounded (LLM) answer.
    """
    return make_event(
        context=question,
        action=action,
        expected=found.expected,
        actual=found.actual,
        magnitude=found.magnitude,
        basis=found.basis(),
        domain=domain,
        source=source,
        cause=cause,
        time=time,
        session=session,
        source_memory=source_memory,
        correcting_memory=correcting_memory,
        correcting_source=correcting_source,
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
        stored = self._store.write(lambda txn: store_surprise.append(txn, event))
        self.noted([stored])
        return stored

    def record_in(self, txn: Txn, event: SurpriseEvent) -> SurpriseEvent:
        """Append ``event`` inside the caller's write transaction (call :meth:`noted` after
        it committed: nothing is counted or published here, the transaction may be re-run)."""
        return store_surprise.append(txn, check_event(event))

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
            return store_surprise.get(txn, event_id)

    def recent(self, n: int, *, domain: str | None = None) -> list[SurpriseEvent]:
        """The ``n`` newest events (of ``domain`` if given), newest first."""
        with self._store.read() as txn:
            return store_surprise.recent(txn, n, domain=domain)

    def events(self, after: int = -1) -> list[SurpriseEvent]:
        """Every event with ``id > after``, oldest first."""
        with self._store.read() as txn:
            return list(store_surprise.iter_events(txn, after))

    def counters(self) -> dict[str, float]:
        """What this log recorded in this process."""
        return self._counts.as_dict()
