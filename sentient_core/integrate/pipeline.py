"""Memory integration: files → text → chunks → codes → observer → LMDB, stage by stage.

This is the pipeline behind ``cli.py ingest`` and ``cli.py profile``. Each stage
is timed separately so that a profile shows where the time goes:

read      raw bytes from disk (read once; a file over the cap is refused from
          its size before a byte is read)
extract   bytes → text (txt/md/json, html via lxml, pdf via pypdf), within a
          per-file time budget
chunk     text → 2000-char chunks with 200 overlap (sentence breaks)
encode    the batch's chunks → codes, prime excitations and dominant primes,
          keyword candidates and lexical terms: one kernel pass, each chunk
          tokenised once, the chunks on both cores unless a batch is committing
          (:mod:`sentient_kernels.text_batch`); the keywords picked from their
          candidates in one more (:mod:`sentient_kernels.keyword_pick`)
keywords  chunk → topic line and keywords
observe   excite the oscillators with each chunk and tick once (PRSC + SMF),
          the whole batch in one kernel call (:meth:`Observer.observe_batch`;
          the same trajectory, bit for bit, as chunk after chunk)
code      content digests (one kernel pass) and trace records checked by column
          (:mod:`sentient_core.memory.columns`)
commit    ONE durable LMDB write transaction per batch of chunks: its traces,
          codes, terms and digests, and the records of the files it completes

With an encoder other than the token encoder the stages from ``encode`` to
``code`` run chunk by chunk (:mod:`sentient_core.integrate.assemble`); that is
the reference the batch path is tested against (``tests/test_integrate_batch.py``:
byte-identical stores, the same observer state).

Overlap: ``keywords``, ``code`` and ``commit`` of batch i run on ONE commit
thread (:mod:`sentient_core.integrate.background`) while the caller reads,
extracts, chunks and encodes batch i+1 (LMDB's commit, the fsync and the
kernels release the GIL). The caller waits for batch i before it lets the
observer see batch i+1, and hands batches over in order, one in flight: the
store gets the same transactions in the same order and the observer the same
trajectory as committing in line (``background=False``; tested byte for byte,
also when a commit fails). A commit's error is raised in the caller and stops
the run where an in-line commit would have. Stage seconds are wall time on the
thread that ran them; :class:`~sentient_core.integrate.summary.StageTimes` says
which ran off the caller's thread (``offloaded``) and how long the caller
waited (``wait``).

Failure policy: a file that cannot be read or extracted is reported by name
with the reason and skipped before anything of it is stored; no single file
stops the run (the extractors raise only ``IngestError``). Paths become stored
and shown text through :func:`~sentient_core.ingest.safe_path_text`, so a
file name that is not valid UTF-8 is stored as ``bad\\xff.txt``, never a
crash. Chunks are committed in batches that may span files; only plain-text files larger than
``stream_threshold`` are streamed (never held whole), and if such a file fails
part-way (it changed on disk, an I/O error) the traces already committed from
it are retired in one compensating transaction, so nothing of a bad file stays
recallable. Peak memory is bounded by one batch plus one text block.

Idempotence: an unchanged file is skipped, a changed one supersedes its old
traces (:mod:`sentient_core.integrate.ledger`). A file's record (and the
retirement of its superseded traces) is written in the transaction of the batch
holding its last chunks, so a crash leaves either the whole batch with those
records or none of it; ingesting again finishes the job (content digests find
what was stored).

Once, then re-runnable: ``observe`` changes the observer, so the stages up to
``code`` run once, outside any transaction; only ``commit`` runs inside one (which the
store may re-run after growing its map). :meth:`Integrator.prepare_texts` and
:meth:`Integrator.commit_texts` expose that split, so a caller can commit a
text's traces together with its own writes (the learner's audit event) in one
:meth:`~sentient_core.memory.HolographicMemory.write`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from sentient_core.errors import ArgumentError
from sentient_core.ingest import (
    DEFAULT_TIME_BUDGET,
    MAX_WHOLE_FILE_BYTES,
    IngestError,
    chunk_text,
    iter_chunks,
    iter_files,
    iter_text,
    kind_of,
    safe_path_text,
)
from sentient_core.integrate.background import Committer
from sentient_core.integrate.batches import Batches, Pending, TextBatch
from sentient_core.integrate.ledger import FileLedger, file_digest
from sentient_core.integrate.loader import Loaded, LoadSettings, load
from sentient_core.integrate.summary import (
    STAGES,
    IngestSummary,
    Progress,
    SkippedFile,
    StageTimes,
)
from sentient_core.memory import HolographicMemory
from sentient_core.observer import Observer
from sentient_core.store import StoreFullError, StoreIOError

__all__ = [
    "STAGES",
    "IngestSummary",
    "Integrator",
    "Progress",
    "SkippedFile",
    "StageTimes",
    "TextBatch",
]

#: Plain-text files above this size are streamed instead of read whole.
STREAM_THRESHOLD = 16 << 20
DEFAULT_BATCH = 512


class Integrator(Batches):
    """Ingest files into a :class:`HolographicMemory` through an :class:`Observer`.

    Parameters
    ----------
    memory : HolographicMemory
        Where traces go (its store receives one write transaction per batch).
    observer : Observer
        Excited by every chunk and ticked once per chunk; the SMF orientation
        after that tick is stored with the trace.
    kind : str
        Trace kind recorded for ingested chunks.
    importance : float
        Importance recorded for ingested chunks.
    batch : int
        Chunks per commit.
    near : float, optional
        Also treat a chunk whose code has cosine ≥ ``near`` with a stored trace
        as already known (the learner uses 0.95). Exact duplicates are never
        stored twice either way.
    time_budget : float or None
        Seconds the extraction of one file may take before it is refused
        (``None``: no limit); see :mod:`sentient_core.ingest.extract`.
    max_file_bytes : int
        Cap for files read whole (every format except large plain text,
        which is streamed); larger files are refused before reading.
    background : bool
        Commit each batch on a background thread while the next one is read,
        extracted and encoded (:mod:`~sentient_core.integrate.background`); the
        same transactions in the same order, and the observer sees the chunks in
        the same order, as committing in line (``False``).
    """

    def __init__(
        self,
        memory: HolographicMemory,
        observer: Observer,
        *,
        kind: str = "observed",
        importance: float = 0.5,
        tags: tuple[str, ...] = (),
        batch: int = DEFAULT_BATCH,
        chunk_size: int = 2000,
        chunk_overlap: int = 200,
        stream_threshold: int = STREAM_THRESHOLD,
        near: float | None = None,
        time_budget: float | None = DEFAULT_TIME_BUDGET,
        max_file_bytes: int = MAX_WHOLE_FILE_BYTES,
        background: bool = True,
    ) -> None:
        if batch < 1:
            raise ArgumentError(f"batch must be >= 1, got {batch}")
        if time_budget is not None and not time_budget > 0:
            raise ArgumentError(f"time_budget must be > 0 seconds or None, got {time_budget!r}")
        if max_file_bytes < 1:
            raise ArgumentError(f"max_file_bytes must be >= 1, got {max_file_bytes}")
        self.memory = memory
        self.observer = observer
        self.kind = kind
        self.importance = importance
        self.tags = tuple(tags)
        self.batch = batch
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.stream_threshold = stream_threshold
        self.near = near
        self.time_budget = time_budget
        self.max_file_bytes = max_file_bytes
        self.background = background
        self._files = FileLedger(memory)
        self._commits = Committer(False)
        # Streamed files being read: the ids of their chunks committed so far.
        self._streams: dict[str, list[int]] = {}
        self._started: set[str] = set()
        self._mark = (0, 0, 0, 0)

    # -- public -------------------------------------------------------------

    def ingest(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        progress: Callable[[Progress], None] | None = None,
        stop: Callable[[], object] | None = None,
    ) -> IngestSummary:
        """Ingest files and folders (recursively); return what was done.

        Bad files are listed in ``summary.skipped`` with the reason; they never
        stop the run. A store that cannot be written (disk full, file-size limit,
        I/O error, map at its maximum) stops it: ``summary.stopped_by`` says why,
        and the summary counts what was committed before. ``stop`` is asked
        before each file; once it returns true the run commits what it has and
        ends with ``summary.interrupted`` set (the CLI's Ctrl-C).
        """
        summary = IngestSummary()
        self._files = FileLedger(self.memory)
        self._started.clear()
        try:
            with self._committing():
                return self._ingest(paths, summary, progress, stop)
        finally:
            self._files = FileLedger(self.memory)
            self._streams.clear()
            self._started.clear()

    def _ingest(
        self,
        paths: Iterable[str | os.PathLike[str]],
        summary: IngestSummary,
        progress: Callable[[Progress], None] | None,
        stop: Callable[[], object] | None = None,
    ) -> IngestSummary:
        entries = list(iter_files(paths))
        files = []
        for e in entries:
            if e.skipped:
                summary.skipped.append(
                    SkippedFile(safe_path_text(e.path), e.skip_reason or "skipped")
                )
            else:
                files.append(e.path)
        sizes = [_size(p) for p in files]
        t_start = time.perf_counter()
        # Resolved and their records read before the first commit runs alongside:
        # every call that releases the GIL then waits for it again (~1 ms a file).
        sources = [safe_path_text(Path(p).resolve()) for p in files]
        self._files.prefetch(sources)
        return self._ingest_files(files, sources, sizes, summary, progress, stop, t_start)

    def _ingest_files(
        self,
        files: list[str],
        sources: list[str],
        sizes: list[int],
        summary: IngestSummary,
        progress: Callable[[Progress], None] | None,
        stop: Callable[[], object] | None,
        t_start: float,
    ) -> IngestSummary:
        """:meth:`_ingest` over the files found."""
        pending = Pending()
        bytes_total = sum(sizes)
        bytes_done = 0
        for i, (path, source, size) in enumerate(zip(files, sources, sizes, strict=True)):
            if stop is not None and stop():
                summary.interrupted = True
                break
            try:
                ok = self._ingest_file(path, source, size, pending, summary)
            except (StoreIOError, StoreFullError) as err:
                summary.stopped_by = str(err)
                pending.clear()
                break
            if ok:
                summary.files += 1
                summary.bytes += size
            bytes_done += size
            if progress is not None:
                progress(
                    Progress(
                        files_done=i + 1,
                        files_total=len(files),
                        bytes_done=bytes_done,
                        bytes_total=bytes_total,
                        chunks=summary.chunks + len(pending),
                        elapsed=time.perf_counter() - t_start,
                        current=safe_path_text(path),
                    )
                )
        if not summary.stopped_by:
            try:
                self._flush(pending, summary)
                self._drain(summary)
            except (StoreIOError, StoreFullError) as err:
                summary.stopped_by = str(err)
        else:
            self._drain(summary)  # nothing in flight after an error: a no-op
        summary.seconds = time.perf_counter() - t_start
        return summary

    def ingest_texts(
        self,
        texts: Sequence[str],
        *,
        source: str = "",
        tags: tuple[str, ...] | None = None,
    ) -> IngestSummary:
        """Chunk and integrate in-memory texts (no file stages); ``tags`` replace the default.

        Commits every ``batch`` chunks. To commit them together with other
        writes, use :meth:`prepare_texts` and :meth:`commit_texts`.

        ``source`` is stored through :func:`~sentient_core.ingest.safe_path_text`.
        """
        source = safe_path_text(source)
        summary = IngestSummary()
        t0 = time.perf_counter()
        pending = Pending()
        with self._committing():
            for text in texts:
                t = time.perf_counter()
                chunks = chunk_text(text, self.chunk_size, self.chunk_overlap)
                summary.stages.chunk += time.perf_counter() - t
                for c in chunks:
                    pending.add(c.text, source, tags)
                    if len(pending) >= self.batch:
                        self._flush(pending, summary)
                summary.bytes += len(text.encode())
            self._flush(pending, summary)
            self._drain(summary)
        summary.seconds = time.perf_counter() - t0
        return summary

    # -- stages -------------------------------------------------------------

    def _streamed(self, path: str, size: int) -> bool:
        """Whether the file is streamed (large plain text) rather than read whole."""
        return size > self.stream_threshold and kind_of(path) in ("txt", "md")

    def _ingest_file(
        self,
        path: str,
        source: str,
        size: int,
        pending: Pending,
        summary: IngestSummary,
    ) -> bool:
        """Queue (and commit as batches fill) one file's chunks; whether it was ingested.

        ``source``: the path resolved (as stored).
        """
        st = summary.stages
        shown = safe_path_text(path)
        if source in self._files:  # named twice in this run (a folder and a file in it)
            return False
        if source in self._started:
            self._drain(summary)  # its record may be in the batch committing now
        self._started.add(source)
        if self._streamed(path, size):
            try:
                t = time.perf_counter()
                digest = file_digest(path)
                st.read += time.perf_counter() - t
                if self._files.start(source, digest, summary):
                    return False
                t = time.perf_counter()
                pieces: Iterable[str] = iter_text(path)
                st.extract += time.perf_counter() - t
            except (IngestError, OSError) as err:
                self._files.drop(source)
                why = err.reason if isinstance(err, IngestError) else f"cannot read: {err}"
                summary.skipped.append(SkippedFile(shown, why))
                return False
            if not self._ingest_streamed(shown, source, pieces, pending, summary):
                self._files.drop(source)
                return False
            self._files.all_queued(source, summary)
            return True
        got = self._loaded(path, summary)
        if not got.digest:  # not read
            summary.skipped.append(SkippedFile(shown, got.failed))
            return False
        if self._files.start(source, got.digest, summary):
            return False
        if got.failed:
            self._files.drop(source)
            summary.skipped.append(SkippedFile(shown, got.failed))
            return False
        # Whole file in hand and chunked before anything is queued, so a failure
        # leaves nothing of this file behind.
        if not got.chunks:
            summary.skipped.append(SkippedFile(shown, "no text to ingest"))
            self._files.drop(source)
            return False
        for c in got.chunks:
            pending.add(c, source)
            self._files.chunk_queued(source)
            if len(pending) >= self.batch:
                self._flush(pending, summary)
        self._files.all_queued(source, summary)
        return True

    def _loaded(self, path: str, summary: IngestSummary) -> Loaded:
        """The file read whole, digested, extracted and chunked."""
        st = summary.stages
        got = load(path, self._load_settings())
        read, extract, chunk = got.seconds
        st.read += read
        st.extract += extract
        st.chunk += chunk
        return got

    def _load_settings(self) -> LoadSettings:
        return LoadSettings(
            self.max_file_bytes, self.time_budget, self.chunk_size, self.chunk_overlap
        )

    def _ingest_streamed(
        self,
        path: str,
        source: str,
        pieces: Iterable[str],
        pending: Pending,
        summary: IngestSummary,
    ) -> bool:
        st = summary.stages
        self._streams[source] = []  # the ids of its chunks, as their batches commit
        n = 0
        try:
            it: Iterator = iter_chunks(pieces, self.chunk_size, self.chunk_overlap)
            while True:
                t = time.perf_counter()
                c = next(it, None)
                st.chunk += time.perf_counter() - t
                if c is None:
                    break
                n += 1
                pending.add(c.text, source)
                self._files.chunk_queued(source)
                if len(pending) >= self.batch:
                    self._flush(pending, summary)
        except (IngestError, OSError, UnicodeError) as err:
            reason = err.reason if isinstance(err, IngestError) else f"{type(err).__name__}: {err}"
            self._drop_source(pending, source)
            self._drain(summary)  # its chunks in the batch committing now are committed first
            committed_ids = self._streams.pop(source)
            if committed_ids:
                self.memory.retire(committed_ids)
                summary.chunks -= len(committed_ids)
            summary.skipped.append(SkippedFile(path, f"failed part-way: {reason}"))
            return False
        finally:
            self._streams.pop(source, None)
        if n == 0:
            summary.skipped.append(SkippedFile(path, "no text to ingest"))
            return False
        return True

    @staticmethod
    def _drop_source(pending: Pending, source: str) -> None:
        keep = [
            (t, s, g)
            for t, s, g in zip(pending.texts, pending.sources, pending.tags, strict=True)
            if s != source
        ]
        pending.clear()
        for t, s, g in keep:
            pending.add(t, s, g)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
