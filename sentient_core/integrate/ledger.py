"""The files of one ingest run: unchanged ones skipped, changed ones superseding their old traces.

Every ingested file leaves a record (:mod:`sentient_core.store.files`): its
size, mtime, a digest of its bytes and the traces holding its chunks. A file
whose bytes did not change (and whose traces are all still active) is skipped
as *unchanged*: nothing is stored, no use count moves, the observer does not
see it. A *changed* file's chunks go through the content digests as usual
(unchanged paragraphs are found in the traces that already hold them, without
counting a use), and its old traces that hold none of its new chunks are
retired (*superseded*) in the same transaction that writes its new record. A
trace another file's record still names, or one that came from elsewhere (a
learned passage), is never retired. Should a run stop between the chunks'
commit and that transaction, ingesting the file again finishes the job: its
chunks are found in memory and the old record is still there.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from sentient_core.memory import HolographicMemory, MemoryTxn, Stored
from sentient_core.store import files as store_files
from sentient_core.store import traces as store_traces

if TYPE_CHECKING:
    from sentient_core.integrate.summary import IngestSummary

__all__ = ["FileLedger", "Plan", "bytes_digest", "file_digest"]


def bytes_digest(data: bytes) -> str:
    """BLAKE2b-128 hex digest of a file's bytes (what a file record keeps)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_digest(path: str) -> str:
    """:func:`bytes_digest` of a file, read in blocks (for files too large to hold)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, lambda: hashlib.blake2b(digest_size=16)).hexdigest()


class _Track:
    """A file being ingested: its new record, once all its chunks are committed."""

    __slots__ = ("digest", "ids", "mtime_ns", "old", "outstanding", "queued", "size")

    def __init__(
        self, digest: str, size: int, mtime_ns: int, old: store_files.FileRecord | None
    ) -> None:
        self.digest, self.size, self.mtime_ns, self.old = digest, size, mtime_ns, old
        self.ids: list[int] = []
        self.outstanding = 0
        self.queued = False


class _Unread:
    """Marks a source whose record :meth:`FileLedger.prefetch` did not read."""


_UNREAD = _Unread()

Plan = dict[str, tuple[_Track, tuple[int, ...]]]
"""Files one commit completes: their tracks and the ids of their chunks committed before."""


class FileLedger:
    """Tracks the files of one ingest run (see the module docstring).

    Counts go to the caller's summary: ``unchanged``, ``changed``, ``superseded``.
    """

    def __init__(self, memory: HolographicMemory) -> None:
        self.memory = memory
        self._tracks: dict[str, _Track] = {}
        self._known: dict[str, store_files.FileRecord | None] = {}

    def __contains__(self, source: str) -> bool:
        return source in self._tracks

    def prefetch(self, sources: Iterable[str]) -> None:
        """Read the records of ``sources`` now, in one read transaction, for :meth:`start`.

        Done before a run's first commit: a read between two background commits
        waits for the GIL after each LMDB call (measured ~1 ms a file). A source
        started once takes its record from the store again (the run may have
        written it).
        """
        with self.memory.datastore.read() as txn:
            self._known = {s: store_files.get(txn, s) for s in sources}

    def start(self, source: str, digest: str, summary: IngestSummary) -> bool:
        """Whether the file is unchanged (skip it); otherwise it is tracked from now on."""
        old = self._known.pop(source, _UNREAD)
        if old is _UNREAD:
            with self.memory.datastore.read() as txn:
                old = store_files.get(txn, source)
        assert not isinstance(old, _Unread)
        if old is not None and old.digest == digest:
            with self.memory.datastore.read() as txn:
                recs = (store_traces.get(txn, i) for i in old.trace_ids)
                if all(r is not None and not r.retired for r in recs):
                    summary.unchanged += 1
                    return True
        try:
            st = os.stat(source)
            size, mtime_ns = st.st_size, st.st_mtime_ns
        except (OSError, ValueError):  # gone meanwhile, or an unencodable name
            size, mtime_ns = 0, 0
        self._tracks[source] = _Track(digest, size, mtime_ns, old)
        return False

    def drop(self, source: str) -> None:
        """Forget the file (it failed; nothing of it is recorded)."""
        self._tracks.pop(source, None)

    def chunk_queued(self, source: str) -> None:
        """One more of the file's chunks waits for a commit."""
        self._tracks[source].outstanding += 1

    def all_queued(self, source: str, summary: IngestSummary) -> None:
        """All of the file's chunks are queued; finish it if they are all committed."""
        track = self._tracks.get(source)
        if track is not None:
            track.queued = True
            if track.outstanding == 0:
                self._finish(source, track, summary)

    def not_a_use(self, sources: Sequence[str]) -> Callable[[int, int], bool] | None:
        """For a commit of chunks from ``sources``: is chunk ``i`` found in ``holder`` a use?

        Not when the holder is one of the file's own old traces (re-ingesting it).
        """
        olds = [t.old if (t := self._tracks.get(s)) is not None else None for s in sources]
        if not any(olds):
            return None
        return lambda i, holder: (old := olds[i]) is not None and holder in old.trace_ids

    def plan(self, sources: Sequence[str]) -> Plan:
        """The files a commit of chunks from ``sources`` completes: all their chunks are
        queued and those not committed yet are all in it.

        Decided when the batch is handed to its commit (the ledger may move on while
        it runs in the background); :meth:`finish_in` writes their records.
        """
        counts = Counter(s for s in sources if s in self._tracks)
        return {
            s: (t, tuple(t.ids))
            for s, c in counts.items()
            if (t := self._tracks[s]).queued and t.outstanding == c
        }

    def finish_in(
        self, tx: MemoryTxn, plan: Plan, sources: Sequence[str], outcomes: Sequence[Stored]
    ) -> list[tuple[str, int]]:
        """Inside the commit of chunks from ``sources``: write the record of every file
        of ``plan`` (:meth:`plan`, the files this commit completes) and retire its
        stale traces, in ``tx``.

        Changes nothing in RAM (``tx``'s function may run again) and reads only
        ``plan``, so it may run on another thread; returns ``(source, traces
        retired)`` per file finished, for :meth:`committed`.
        """
        if not plan:
            return []
        new_ids: dict[str, list[int]] = {s: [] for s in plan}
        for source, o in zip(sources, outcomes, strict=True):
            if source in new_ids:
                new_ids[source].append(o.record.id)
        return [
            (source, self._write(tx, source, track, [*ids, *new_ids[source]]))
            for source, (track, ids) in plan.items()
        ]

    def committed(
        self,
        sources: Sequence[str],
        outcomes: Sequence[Stored],
        summary: IngestSummary,
        done: Sequence[tuple[str, int]] = (),
    ) -> None:
        """A commit of chunks from ``sources`` happened, finishing the files of ``done``
        (:meth:`finish_in` in the same transaction); finish every other file now complete."""
        for source, o in zip(sources, outcomes, strict=True):
            track = self._tracks.get(source)
            if track is not None:
                track.ids.append(o.record.id)
                track.outstanding -= 1
        for source, retired in done:
            self._count(self._tracks.pop(source), retired, summary)
        for source, track in list(self._tracks.items()):
            if track.queued and track.outstanding == 0:
                self._finish(source, track, summary)

    def _finish(self, source: str, track: _Track, summary: IngestSummary) -> None:
        """Write the file's record and retire its stale traces in a transaction of their own."""
        del self._tracks[source]
        retired = self.memory.write(lambda tx: self._write(tx, source, track, track.ids))
        self._count(track, retired, summary)

    @staticmethod
    def _count(track: _Track, retired: int, summary: IngestSummary) -> None:
        if track.old is not None:
            summary.changed += track.old.digest != track.digest
        summary.superseded += retired

    @staticmethod
    def _write(tx: MemoryTxn, source: str, track: _Track, trace_ids: Sequence[int]) -> int:
        """Write the file's record; retire its old traces that hold none of its chunks
        (and that no other file's record names); how many were retired."""
        ids = tuple(dict.fromkeys(trace_ids))
        record = store_files.FileRecord(
            source=source,
            size=track.size,
            mtime_ns=track.mtime_ns,
            digest=track.digest,
            trace_ids=ids,
            ingested_at=time.time(),
        )
        stale: list[int] = []
        if track.old is not None:
            keep = set(ids)
            stale = [i for i in track.old.trace_ids if i not in keep]
        if stale:
            txn = tx.txn
            own = {
                i
                for i in stale
                if (r := store_traces.get(txn, i)) is not None and r.source == source
            }
            for other in store_files.iter_records(txn):
                if other.source != source:
                    own.difference_update(other.trace_ids)
            stale = sorted(own)
        store_files.put(tx.txn, record)
        return len(tx.retire(stale))
