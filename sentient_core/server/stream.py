"""The live stream: every audit-log entry as a Server-Sent Event whose ``id`` is its sequence.

The stream *is* the audit log. A client first gets what the log holds after
its ``Last-Event-ID`` (or ``?after=``), read in a worker thread, then every
entry as it is committed (the bus hands each commit's ``(seq, raw)`` entries to
:class:`EventFeed`, which fans them out on the event loop). Entries are
deduplicated by sequence, so the hand-over between replay and live misses
nothing and repeats nothing; a gap in the sequence (two threads' commits
announced out of order) or a client too slow to keep up is served by reading
the log again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio.to_thread
import msgspec

from sentient_core.events import EVENTS_DB, EventBus, decode_event
from sentient_core.store import Store, log

__all__ = ["EventFeed", "last_seq"]

REPLAY_BATCH = 500
QUEUE_SIZE = 256
_LAG = object()
_END = object()
_JSON = msgspec.json.Encoder()


def _read_raw(store: Store, after: int, limit: int) -> list[tuple[int, bytes]]:
    out = []
    with store.read() as txn:
        for seq, raw in log.iter_after(txn, EVENTS_DB, after):
            out.append((seq, raw))
            if len(out) >= limit:
                break
    return out


def last_seq(store: Store) -> int:
    """The newest sequence number in the audit log (-1 if empty)."""
    with store.read() as txn:
        cur = txn.cursor(EVENTS_DB)
        return int.from_bytes(bytes(cur.key()), "big") if cur.last() else -1


def _message(seq: int, raw: bytes) -> dict:
    """One SSE message: ``id`` = sequence, ``data`` = the typed event as JSON."""
    try:
        data = _JSON.encode(decode_event(raw, seq)).decode()
    except Exception as exc:  # a corrupt entry must not end everyone's stream
        data = _JSON.encode({"kind": "unreadable", "seq": seq, "error": str(exc)}).decode()
    return {"id": str(seq), "data": data}


class EventFeed:
    """Fan committed audit-log entries out to SSE clients (see the module docstring).

    Parameters
    ----------
    bus : EventBus
        Whose commits are followed.
    store : Store
        Where the log is replayed from.

    Call :meth:`attach` with the server's event loop once it runs (entries
    arrive from other threads and are handed to it).
    """

    def __init__(self, bus: EventBus, store: Store, max_clients: int = 32) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sent = 0
        self.max_clients = max_clients
        self.admitted = 0  # streams admitted and not yet ended (on the event loop only)
        self.turned_away = 0
        self._clients: set[asyncio.Queue] = set()
        self._unsubscribe = bus.subscribe_logged(self._committed)

    @property
    def clients(self) -> int:
        return len(self._clients)

    def admit(self) -> bool:
        """Take a stream slot (False: :attr:`max_clients` are connected); call on the
        event loop, and :meth:`release` once that stream's response has ended."""
        if self.admitted >= self.max_clients:
            self.turned_away += 1
            return False
        self.admitted += 1
        return True

    def release(self) -> None:
        """Give back a slot taken by :meth:`admit`."""
        self.admitted -= 1

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand committed entries to ``loop`` from now on."""
        self.loop = loop

    def _committed(self, entries: list[tuple[int, bytes]]) -> None:
        loop = self.loop
        if self._clients and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._fan_out, list(entries))

    def shutdown(self) -> None:
        """End every stream soon (from any thread)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.end_streams)

    def _fan_out(self, entries: list[tuple[int, bytes]]) -> None:
        for queue in list(self._clients):
            try:
                queue.put_nowait(entries)
            except asyncio.QueueFull:
                # Too slow: drop what it has queued and let it re-read the log.
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(_LAG)

    async def _replay(self, after: int) -> AsyncIterator[tuple[int, bytes]]:
        while True:
            batch = await anyio.to_thread.run_sync(_read_raw, self.store, after, REPLAY_BATCH)
            for entry in batch:
                yield entry
                after = entry[0]
            if len(batch) < REPLAY_BATCH:
                return

    async def messages(self, after: int) -> AsyncIterator[dict]:
        """SSE messages for every entry after ``after``, then live, until cancelled."""
        queue: asyncio.Queue = asyncio.Queue(QUEUE_SIZE)
        self._clients.add(queue)
        # An id from beyond this log (another store) would hide every new entry.
        last = min(after, await anyio.to_thread.run_sync(last_seq, self.store))
        try:
            async for seq, raw in self._replay(last):
                last = seq
                self.sent += 1
                yield _message(seq, raw)
            while True:
                entries = await queue.get()
                if entries is _END:
                    return
                # Lagging, or a gap: commits of two threads announced out of order
                # (sequences are contiguous). The log has both: read it.
                if entries is _LAG or entries[0][0] > last + 1:
                    async for seq, raw in self._replay(last):
                        last = seq
                        self.sent += 1
                        yield _message(seq, raw)
                    if entries is _LAG:
                        continue
                for seq, raw in entries:
                    if seq > last:
                        last = seq
                        self.sent += 1
                        yield _message(seq, raw)
        finally:
            self._clients.discard(queue)

    def end_streams(self) -> None:
        """End every client's stream (server shutdown); call on the event loop."""
        for queue in list(self._clients):
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(_END)

    def close(self) -> None:
        """Stop following the bus."""
        self._unsubscribe()
