"""Event bus and persisted audit log: every step of the loop, for eavesdroppers.

In-process listeners subscribe to an :class:`EventBus`; every published event
is also appended to the store's ``events`` sub-database (8-byte sequence keys),
so another process can follow a running learner with :func:`follow` (what
``cli.py eavesdrop`` does). Events are batched into one write transaction per
:meth:`EventBus.flush` (the learner flushes at the end of each step), so the
audit log costs one commit per step, not per event.

Retention: the log keeps the newest ``max_events`` entries (default 200,000,
~100 MB). When a flush takes it past that by more than 10 %, the oldest entries
are deleted in the same transaction. Sequence numbers keep growing, so a
follower never sees a number reused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.store import Store, log
from sentient_core.store.records import key_u64, u64_key

__all__ = ["Event", "EventBus", "follow", "read_events"]

EVENTS_DB = "events"
DEFAULT_MAX_EVENTS = 200_000


class Event(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One audit-log entry.

    Attributes
    ----------
    v : int
        Schema version.
    t : float
        Unix time (from the bus's clock).
    session : str
        Learner session id ("" outside a session).
    iteration : int
        Loop iteration (-1 outside an iteration).
    kind : str
        Step or happening: ``curiosity``, ``query``, ``chaperone.request``,
        ``chaperone.response``, ``refusal``, ``ingest``, ``integrate``,
        ``judge``, ``learn``, ``reflect``, ``budget``, ``error``, ``session``…
    data : dict
        Step details (JSON-compatible).
    """

    v: int = 1
    t: float
    session: str = ""
    iteration: int = -1
    kind: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


_ENC = msgspec.msgpack.Encoder()
_DEC = msgspec.msgpack.Decoder(Event)

Listener = Callable[[Event], None]


class EventBus:
    """Publish events to listeners and (on flush) to the persisted audit log.

    Parameters
    ----------
    store : Store, optional
        Where the audit log lives; ``None`` keeps events in memory only.
    clock : callable
        Unix time source (injectable for deterministic tests).
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
        self.session = ""
        self.iteration = -1

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event; returns an unsubscribe function."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def publish(self, kind: str, **data: Any) -> Event:
        """Publish an event (listeners now; the audit log at the next flush)."""
        event = Event(
            t=self._clock(), session=self.session, iteration=self.iteration, kind=kind, data=data
        )
        with self._lock:
            listeners = list(self._listeners)
            if self._store is not None:
                self._pending.append(_ENC.encode(event))
            self.published += 1
        for listener in listeners:
            listener(event)
        return event

    def flush(self) -> int:
        """Append pending events to the audit log in one write transaction; returns how many."""
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch or self._store is None:
            return 0

        def write(txn) -> int:
            for raw in batch:
                log.append(txn, EVENTS_DB, raw)
            excess = txn.entries(EVENTS_DB) - self.max_events
            if excess <= self.max_events // 10:
                return 0
            cur = txn.cursor(EVENTS_DB)
            removed = 0
            cur.first()
            while removed < excess and cur.delete():
                removed += 1
            return removed

        self.pruned += self._store.write(write)
        return len(batch)


def read_events(store: Store, after: int = -1, limit: int | None = None) -> list[tuple[int, Event]]:
    """Events with sequence number > ``after`` (oldest first), as ``(seq, event)``."""
    out: list[tuple[int, Event]] = []
    with store.read() as txn:
        cur = txn.cursor(EVENTS_DB)
        found = cur.set_range(u64_key(after + 1)) if after >= 0 else cur.first()
        while found:
            out.append((key_u64(bytes(cur.key())), _DEC.decode(bytes(cur.value()))))
            if limit is not None and len(out) >= limit:
                break
            found = cur.next()
    return out


def follow(
    store: Store,
    *,
    after: int = -1,
    poll: float = 0.2,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[tuple[int, Event]]:
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
