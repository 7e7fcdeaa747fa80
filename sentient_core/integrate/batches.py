"""Batches of chunks: pending, analysed, observed, and committed on the commit thread.

The part of :class:`~sentient_core.integrate.pipeline.Integrator` that turns
the pending chunks into one write transaction per batch (:class:`Batches`, a
mixin): ``encode`` and ``observe`` on the caller's thread, ``keywords``, ``code``
and ``commit`` on the commit thread while the caller goes on with the next
batch (:mod:`sentient_core.integrate.background`), and the in-memory texts'
batches the learner prepares and commits with its own writes
(:meth:`Batches.prepare_texts`, :meth:`Batches.commit_texts`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import msgspec

from sentient_core.ingest import chunk_text, safe_path_text
from sentient_core.integrate.assemble import Assembler, as_items
from sentient_core.integrate.background import Committer
from sentient_core.integrate.ledger import FileLedger
from sentient_core.integrate.summary import IngestSummary, StageTimes
from sentient_core.memory import HolographicMemory, MemoryTxn, NewTrace, Stored
from sentient_core.memory.storing import Prepared
from sentient_core.observer import Observer
from sentient_core.store import StoreFullError, StoreIOError

__all__ = ["Batches", "Pending", "TextBatch", "tally"]


class Pending:
    """Chunks waiting for the next commit, with the file each came from."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.sources: list[str] = []
        self.tags: list[tuple[str, ...] | None] = []

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, text: str, source: str, tags: tuple[str, ...] | None = None) -> None:
        self.texts.append(text)
        self.sources.append(source)
        self.tags.append(tags)

    def clear(self) -> None:
        self.texts.clear()
        self.sources.clear()
        self.tags.clear()


class TextBatch(msgspec.Struct, frozen=True):
    """Chunks of texts, encoded and observed once, ready to commit (:meth:`Integrator.prepare_texts`).

    Attributes
    ----------
    items : tuple of NewTrace
        One per chunk, in order: code, primes, the observer's SMF orientation
        after the chunk's tick, topic, keywords, source and tags.
    bytes : int
        UTF-8 bytes of the texts.
    stages : StageTimes
        Time spent chunking, encoding, finding keywords, observing and assembling.
    prepared : Prepared or None
        The same items checked and assembled for memory (when the encoder
        analyses batches: :meth:`~sentient_core.encoder.TokenPrimeEncoder.analyse_many`).
    """

    items: tuple[NewTrace, ...]
    bytes: int
    stages: StageTimes
    prepared: Prepared | None = None


class Batches:
    """Pending chunks made batches and committed (mixed into the Integrator, which
    sets these attributes)."""

    memory: HolographicMemory
    observer: Observer
    kind: str
    importance: float
    tags: tuple[str, ...]
    chunk_size: int
    chunk_overlap: int
    near: float | None
    background: bool
    _files: FileLedger
    _commits: Committer
    _streams: dict[str, list[int]]
    _mark: tuple[int, int, int, int]

    def prepare_texts(
        self,
        texts: Sequence[str],
        *,
        source: str = "",
        tags: tuple[str, ...] | None = None,
    ) -> TextBatch:
        """Chunk, encode, observe and assemble ``texts`` as ONE batch (nothing is stored).

        This is the part of :meth:`ingest_texts` that must happen once: the
        observer is excited and ticked by every chunk here. Store the batch with
        :meth:`commit_texts` inside a
        :meth:`~sentient_core.memory.HolographicMemory.write`.
        """
        source = safe_path_text(source)
        stages = StageTimes()
        pending = Pending()
        size = 0
        for text in texts:
            t = time.perf_counter()
            chunks = chunk_text(text, self.chunk_size, self.chunk_overlap)
            stages.chunk += time.perf_counter() - t
            for c in chunks:
                pending.add(c.text, source, tags)
            size += len(text.encode())
        if not pending:
            return TextBatch((), size, stages)
        made = self._assembler().assemble(pending.texts, pending.sources, pending.tags, stages)
        if isinstance(made, list):
            return TextBatch(tuple(made), size, stages)
        t = time.perf_counter()
        items = tuple(as_items(made))
        stages.code += time.perf_counter() - t
        return TextBatch(items, size, stages, made)

    def commit_texts(self, tx: MemoryTxn, batch: TextBatch) -> IngestSummary:
        """Store a prepared batch in ``tx`` (memory's copies are not stored again);
        the summary of this one commit.

        Re-runnable (it only writes through ``tx``), as a function given to
        :meth:`~sentient_core.memory.HolographicMemory.write` must be. Texts are
        not files: no file record is written.
        """
        t = time.perf_counter()
        summary = IngestSummary(bytes=batch.bytes, stages=msgspec.structs.replace(batch.stages))
        if batch.items:
            made = batch.prepared if batch.prepared is not None else batch.items
            tally(summary, tx.store_unique(made, near=self.near))
        summary.stages.commit = time.perf_counter() - t
        summary.seconds = summary.stages.total()
        return summary

    def _assembler(self) -> Assembler:
        # Made per batch: it sees the integrator's current settings.
        return Assembler(self.memory, self.observer, self.kind, self.importance, self.tags)

    @contextmanager
    def _committing(self) -> Iterator[None]:
        """A :class:`Committer` for one run; waited for and stopped when it ends."""
        self._commits = Committer(self.background)
        try:
            with self._commits:
                yield
        finally:
            self._commits = Committer(False)

    def _drain(self, summary: IngestSummary) -> None:
        """Wait for the batch committing in the background and count it (or raise its error).

        A store error stops the run where committing in line would have stopped it:
        in the file whose chunk handed that batch over. The files counted, skipped
        or found unchanged since then are uncounted (nothing of them was stored or
        observed: the observer sees a batch only after the one before committed).
        """
        try:
            self._commits.wait()
        except (StoreIOError, StoreFullError):
            files, size, skipped, unchanged = self._mark
            summary.files, summary.bytes, summary.unchanged = files, size, unchanged
            del summary.skipped[skipped:]
            raise
        finally:
            summary.stages.wait = self._commits.waited

    def _flush(self, pending: Pending, summary: IngestSummary) -> None:
        """Encode, observe, assemble and commit the pending chunks, in ONE transaction with
        the records of the files they complete.

        The commit runs in the background (:class:`Committer`) while the caller goes
        on; the batch before it is waited for first (its error raised here), before
        the observer sees this batch's chunks: the observer and the store see the
        batches in the same order as committing in line. Chunks memory already
        holds are not stored again
        (:meth:`~sentient_core.memory.HolographicMemory.store_unique`).
        """
        if not pending:
            return
        st = summary.stages
        asm = self._assembler()
        # While a batch commits it has a core: the analysis takes the other one.
        threads = 1 if self._commits.busy else 0
        analysed = asm.analyse(pending.texts, pending.sources, pending.tags, st, threads)
        self._drain(summary)
        observed = asm.observe(analysed, st)
        sources = analysed.sources
        files = self._files
        not_a_use = files.not_a_use(sources)
        plan = files.plan(sources)
        memory, near = self.memory, self.near

        def work() -> tuple[list[Stored], list[tuple[str, int]], StageTimes]:
            # Keywords, digests, records and the transaction: none of it touches the
            # observer or the ledger, so it runs on the commit thread.
            times = StageTimes()
            made = asm.finish(observed, times)

            def commit(tx: MemoryTxn) -> tuple[list[Stored], list[tuple[str, int]]]:
                outcomes = tx.store_unique(made, near=near, not_a_use=not_a_use)
                return outcomes, files.finish_in(tx, plan, sources, outcomes)

            t = time.perf_counter()
            outcomes, finished = memory.write(commit)
            times.commit = time.perf_counter() - t
            return outcomes, finished, times

        def done(
            result: tuple[list[Stored], list[tuple[str, int]], StageTimes], seconds: float
        ) -> None:
            outcomes, finished, times = result
            st.keywords += times.keywords
            st.code += times.code
            st.commit += times.commit
            if self._commits.background:
                st.offloaded += seconds
            tally(summary, outcomes)
            for s, o in zip(sources, outcomes, strict=True):
                if o.new and (ids := self._streams.get(s)) is not None:
                    ids.append(o.record.id)
            files.committed(sources, outcomes, summary, finished)

        pending.clear()
        # Where an in-line run would stand if this commit failed (see _drain).
        self._mark = (summary.files, summary.bytes, len(summary.skipped), summary.unchanged)
        self._commits.submit(work, done)


def tally(summary: IngestSummary, outcomes: Sequence[Stored]) -> None:
    """Count one commit's outcomes into ``summary``."""
    for o in outcomes:
        (summary.ids if o.new else summary.known).append(o.record.id)
    new = sum(o.new for o in outcomes)
    summary.chunks += new
    summary.duplicates += len(outcomes) - new
    summary.commits += 1
