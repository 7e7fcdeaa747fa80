"""The event bus, the audit log it appends to, and readers of that log."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sentient_core.errors import ArgumentError
from sentient_core.events.types import (
    DEFAULT_MAX_EVENTS,
    EVENTS_DB,
    Event,
    LegacyEvent,
    SessionEvent,
    _Base,
    _encode,
    decode_event,
)
from sentient_core.store import Store, Txn, log

__all__ = ["Emitter", "EventBus", "LogListener", "follow", "last_session_end", "read_events"]

E = TypeVar("E", bound=_Base)

Listener = Callable[[Event], None]
LogListener = Callable[[list[tuple[int, bytes]]], None]


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

    Notes
    -----
    Any thread may publish and flush. Flushes are serialised, and the pending
    events are taken inside the write transaction, so the log keeps publish
    order. Between :meth:`write_in` and :meth:`confirm` another thread's flush
    writes nothing (the events it would write may already be in the caller's
    commit); the publishing thread flushes them itself later.
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
        self._logged: list[LogListener] = []
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        # The thread between write_in and confirm (its pending events may be committed).
        self._unconfirmed: threading.Thread | None = None
        self._written = threading.local()
        self.published = 0

    def now(self) -> float:
        """The bus's clock."""
        return self._clock()

    @property
    def pending(self) -> int:
        """Events published but not yet in the audit log."""
        with self._lock:
            return len(self._pending)

    def emitter(self, *, session: str = "", iteration: int = -1) -> Emitter:
        """An :class:`Emitter` stamping ``session`` and ``iteration``."""
        return Emitter(self, session, iteration)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns an unsubscribe function."""
        return self._add(self._listeners, listener)

    def subscribe_logged(self, listener: LogListener) -> Callable[[], None]:
        """Call ``listener(entries)`` with the ``(seq, raw)`` audit-log entries of every
        commit that appended some (after it committed, in the committing thread);
        returns an unsubscribe function. ``raw`` decodes with :func:`decode_event`."""
        return self._add(self._logged, listener)

    def _add(self, where: list, listener) -> Callable[[], None]:
        with self._lock:
            where.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in where:
                    where.remove(listener)

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

    def _may_take(self) -> bool:
        """Whether this thread may write the pending events (lock held)."""
        owner = self._unconfirmed
        return owner is None or owner is threading.current_thread() or not owner.is_alive()

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
            batch: list[bytes] = []
            if self._may_take():
                batch = list(self._pending)
                self._unconfirmed = threading.current_thread()
        entries = [(log.append(txn, EVENTS_DB, raw), raw) for raw in batch]
        for event in events:
            raw = _encode(event)
            entries.append((log.append(txn, EVENTS_DB, raw), raw))
        self._written.entries = entries
        return len(batch)

    def confirm(self, written: int, events: Sequence[Event]) -> None:
        """After :meth:`write_in`'s transaction committed: drop the ``written`` pending
        events it stored and publish ``events`` to the listeners."""
        entries = getattr(self._written, "entries", [])
        self._written.entries = []
        with self._lock:
            del self._pending[:written]
            if self._unconfirmed is threading.current_thread():
                self._unconfirmed = None
            listeners = list(self._listeners)
            logged = list(self._logged)
            self.published += len(events)
        for event in events:
            for listener in listeners:
                listener(event)
        if entries:
            for log_listener in logged:
                log_listener(entries)

    def flush(self) -> int:
        """Append pending events to the audit log in one write transaction; returns how many.

        Returns 0 without writing while another thread is between
        :meth:`write_in` and :meth:`confirm`.
        """
        store = self._store
        if store is None:
            with self._lock:
                self._pending.clear()
            return 0
        me = threading.current_thread()
        with self._flushing:
            entries: list[tuple[int, bytes]] = []

            def write(txn) -> int:
                with self._lock:
                    batch: list[bytes] = []
                    if self._may_take():
                        batch = list(self._pending)
                        self._unconfirmed = me  # until the del below
                entries[:] = [(log.append(txn, EVENTS_DB, raw), raw) for raw in batch]
                if not batch or txn.entries(EVENTS_DB) - self.max_events <= self.max_events // 10:
                    return 0
                return log.prune_oldest(txn, EVENTS_DB, self.max_events)

            with self._lock:
                if not self._pending or not self._may_take():
                    return 0
            try:
                self.pruned += store.write(write)
            except BaseException:
                with self._lock:
                    if self._unconfirmed is me:
                        self._unconfirmed = None
                raise
            with self._lock:
                del self._pending[: len(entries)]
                if self._unconfirmed is me:
                    self._unconfirmed = None
                logged = list(self._logged)
        if entries:
            for log_listener in logged:
                log_listener(entries)
        return len(entries)


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


def last_session_end(store: Store) -> SessionEvent | None:
    """The audit log's newest ``session`` event with ``state="ended"`` (read from the end)."""
    with store.read() as txn:
        for seq, raw in log.iter_newest(txn, EVENTS_DB):
            event = decode_event(raw, seq)
            if isinstance(event, SessionEvent) and event.state == "ended":
                return event
    return None


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
