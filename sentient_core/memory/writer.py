"""Memory's one writer and the read views it publishes.

:class:`Writer` owns what changes: the store handle, the write lock, the clock,
memory's state record and the current in-RAM indexes (the
:class:`~sentient_core.memory.mirror.Mirror`, the prime index and the lexical
index). Every change is one call to :meth:`Writer.commit`: one write
transaction, then (lock still held) the in-RAM update, so updates happen in
commit order and a failed transaction leaves RAM as it was. The steps of a
unit of work (:mod:`~sentient_core.memory.unit`) describe their in-RAM update
as :class:`Change` values, which :meth:`Writer.apply` makes after the commit.

Readers never see the writer's attributes move under them: :meth:`Writer.view`
hands out a :class:`MemoryView`, one generation of the read state (the
indexes and how many rows of them are published). Appends write rows beyond a
view's ``n`` and publish a new ``n`` (or a grown copy) afterwards, so a view
stays consistent for as long as a reader holds it; retirement clears mask
bytes in place, so a view sees a trace either before or after its retirement.

The recall functions (:mod:`~sentient_core.memory.recall`), the learned
scorer's recall (:mod:`sentient_core.metamemory.recall`) and benchmarks read
through views; the write modules (storing, lifecycle, links) go through the
writer. Nothing outside this package touches either's internals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import msgspec
import numpy as np

from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.memory import lexical, lexical_persist
from sentient_core.memory import terms as mem_terms
from sentient_core.memory.compact import CompactCodes
from sentient_core.memory.mirror import Mirror, PrimeIndex, load
from sentient_core.memory.record_cache import RecordCache
from sentient_core.memory.types import EncoderMismatchError, MemoryState, read_state
from sentient_core.store import codes as store_codes
from sentient_core.store import codes_q8, colblocks, traces
from sentient_core.store.columns import TraceColumns
from sentient_core.store.records import TraceRecord
from sentient_kernels.lexical import TermCounts

if TYPE_CHECKING:
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = ["Change", "MemoryView", "Writer"]

T = TypeVar("T")


class MemoryView:
    """One generation of memory's read state: rows ``[0, n)`` of the indexes.

    Attributes
    ----------
    mirror : Mirror
        Arrays by code row (codes, validity mask, ids, SMF, times, strengths).
    n : int
        Rows published when the view was taken; a reader uses these only.
    lexical : LexicalIndex
        The inverted index of the traces' terms (BM25).
    primes : PrimeIndex
        Rows by dominant prime.
    code_dim : int
    generation : int
        The retirement generation the view reflects.
    store : Store
        Where the rows' records are (a reader opens its own read transaction).
    """

    __slots__ = ("code_dim", "generation", "lexical", "mirror", "n", "primes", "store")

    def __init__(
        self,
        mirror: Mirror,
        n: int,
        lexicon: lexical.LexicalIndex,
        primes: PrimeIndex,
        store: Store,
        generation: int,
    ) -> None:
        self.mirror = mirror
        self.n = n
        self.lexical = lexicon
        self.primes = primes
        self.store = store
        self.code_dim = store.code_dim
        self.generation = generation

    @property
    def active(self) -> int:
        """Active (non-retired) traces in the mirror."""
        return self.mirror.active

    @property
    def codes(self) -> np.ndarray:
        """The published code rows (float32, L2-normalised)."""
        return self.mirror.codes[: self.n]

    @property
    def valid(self) -> np.ndarray:
        """1 for the rows of active traces (uint8), for the published rows."""
        return self.mirror.valid[: self.n]


class Change(msgspec.Struct, frozen=True):
    """The in-RAM update one memory step owes once its transaction committed.

    Attributes
    ----------
    stored : list of TraceRecord
        Traces appended (in row order), with their unit ``codes`` and term ``counts``.
    codes : ndarray (len(stored), code_dim) or None
    counts : TermCounts or None
    masked : tuple of int
        Rows of traces retired.
    state : MemoryState or None
        Memory's state record as the step wrote it (None: unchanged).
    """

    stored: list[TraceRecord] = []
    codes: np.ndarray | None = None
    counts: TermCounts | None = None
    masked: tuple[int, ...] = ()
    state: MemoryState | None = None


class Writer:
    """The store, lock, clock, state and indexes of one memory (see the module docstring).

    Parameters
    ----------
    store : Store
    encoder : TextEncoder or None
        Built on first use when None (the ``"token"`` encoder of the store's ``code_dim``).
    clock : callable
        Unix time.
    compact : bool
        Keep an int8 copy of the codes for single cosine recalls (same answers).
    """

    # Set by rebuild (at open and on a full refresh).
    mirror: Mirror
    primes: PrimeIndex
    lexical: lexical.LexicalIndex
    lex_rows: int  # rows the stored lexical snapshot covers (0: none usable)
    next_id: int
    state: MemoryState

    def __init__(
        self,
        store: Store,
        encoder: TextEncoder | None,
        clock: Callable[[], float],
        compact: bool = False,
    ) -> None:
        if encoder is not None and encoder.code_dim != store.code_dim:
            raise EncoderMismatchError(
                f"encoder {encoder.name!r} makes {encoder.code_dim}-dim codes; the store at"
                f" {store.path} holds {store.code_dim}-dim codes"
            )
        self.store = store
        self.clock = clock
        self.lock = threading.RLock()
        self._encoder = encoder
        if not store.readonly:
            # A store written before the column blocks gets them once (then the mirror
            # loads without decoding a record).
            with store.read() as txn:
                missing = store.has_db(colblocks.DB) and not colblocks.enabled(txn)
            if missing:
                store.write(traces.backfill_columns)
        # int8 codes for single cosine recalls (memory/compact.py): the store's int8 copy,
        # made now by a writable open (then kept with every append), else built lazily.
        code_file = store.code_file
        gather = None if code_file is None else code_file.read_rows
        self.compact = CompactCodes(gather) if compact else None
        if compact and not store.readonly:
            store.write(codes_q8.enable)
        # The hits' decoded records between recalls while nothing is written (record_cache.py).
        self.records = RecordCache()
        # buffers=False: py-lmdb makes bytes faster than memoryviews, and the trace
        # scan dominates the load; code blocks cost one extra memcpy that way.
        with store.read(buffers=False) as txn:
            self.rebuild(txn)
        # A store without a snapshot of its lexical index (an older one), or with many rows
        # above it, gets one now: the next open reads it (memory/lexical_persist.py).
        if not store.readonly and lexical_persist.due_on_open(self.lex_rows, self.mirror.n):
            self.persist_lexicon()
        elif not store.readonly and lexical_persist.due_on_open(
            self.primes.snapshot_rows, self.mirror.n
        ):  # a prime snapshot missing (an older store, a backup) or far behind
            with self.lock:
                lexical_persist.save_primes(self.store, self.primes, self.mirror.n)
        if not store.readonly and lexical_persist.columns_due(store):
            with self.lock:  # the checkpoint of the mirror's columns (store/colfile.py)
                lexical_persist.save_columns(store)

    # -- reading ----------------------------------------------------------------------------

    def view(self) -> MemoryView:
        """The current generation (one reference to each index; take it once per search)."""
        m = self.mirror
        return MemoryView(m, m.n, self.lexical, self.primes, self.store, self.state.generation)

    @property
    def encoder(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = get_encoder("token", code_dim=self.store.code_dim)
        return self._encoder

    def checked_encoder(self) -> TextEncoder:
        """The encoder, if the store's codes came from it (else EncoderMismatchError)."""
        # Compared on every use: a refresh may bring the stamp another process wrote.
        enc = self.encoder
        state = self.state
        if state.encoder_fingerprint and state.encoder_fingerprint != enc.fingerprint:
            raise EncoderMismatchError(
                f"the store at {self.store.path} holds codes made by encoder"
                f" {state.encoder!r} (fingerprint {state.encoder_fingerprint}); this memory"
                f" uses {enc.name!r} (fingerprint {enc.fingerprint}); open it with the"
                " same encoder and options"
            )
        return enc

    # -- writing ----------------------------------------------------------------------------

    def commit(
        self, write: Callable[[Txn], T], mirror: Callable[[Mirror, T], None] | None = None
    ) -> T:
        """Run ``write`` in one transaction; then, lock still held, ``mirror(m, result)``.

        ``write`` may run more than once (the store re-runs a transaction after
        growing its map), so it never touches RAM; ``mirror`` runs once, after
        the commit.
        """
        with self.lock:
            result = self.store.write(write)
            if mirror is not None:
                mirror(self.mirror, result)
            return result

    def apply(self, changes: Sequence[Change]) -> None:
        """Make the in-RAM updates of committed steps, in the order they ran (under the lock)."""
        with self.lock:
            for change in changes:
                if change.state is not None:
                    self.state = change.state
                stored = change.stored
                if stored and stored[0].row == self.mirror.n and stored[0].id == self.next_id:
                    assert change.codes is not None and change.counts is not None
                    self.append(
                        TraceColumns.of_records(stored),
                        change.codes,
                        stored[-1].row + 1,
                        change.counts,
                    )
                    self.next_id = stored[-1].id + 1
                elif stored:
                    self.refresh(False)  # rows committed around us: read everything up to now
                if change.masked:
                    self.mirror.mask(list(change.masked))
            if lexical_persist.due_after_append(self.lex_rows, self.mirror.n):
                self.persist_lexicon()

    def persist_lexicon(self) -> None:
        """Store snapshots of the lexical and the prime index over the published rows
        (lock held)."""
        with self.lock:
            if lexical_persist.save(self.store, self.lexical, self.mirror):
                self.lex_rows = self.mirror.n
                lexical_persist.save_primes(self.store, self.primes, self.mirror.n)
                lexical_persist.save_columns(self.store)

    def mask(self, rows: list[int], seen: Mirror) -> None:
        """Mask ``rows`` (traces found retired by another process) in the current
        mirror and in ``seen``, an older one a reader may still hold."""
        with self.lock:
            self.mirror.mask(rows)
            seen.valid[rows] = 0

    # -- loading ----------------------------------------------------------------------------

    def rebuild(self, txn: Txn) -> None:
        """(Re)build the mirror, prime index and lexical index from one snapshot."""
        m, primes = load(txn, self.store.code_dim, self.store)
        self._follow_int8_copy(txn)
        snapshot = lexical_persist.read(self.store, m.n)
        self.lexical = lexical.load(txn, m, snapshot)
        self.lex_rows = 0 if snapshot is None else snapshot.rows
        self.mirror, self.primes = m, primes
        self.next_id = txn.counters().next_id
        self.state = read_state(txn)

    def refresh(self, full: bool) -> int:
        """See :meth:`HolographicMemory.refresh`."""
        with self.lock, self.store.read(buffers=False) as txn:
            before = self.mirror.n
            state = read_state(txn)
            if full or state.generation != self.state.generation:
                self.rebuild(txn)
                return self.mirror.n - before
            self.state = state
            self._follow_int8_copy(txn)  # another process may have made it since
            counters = txn.counters()
            if counters.next_id == self.next_id:
                return 0
            recs = list(traces.iter_range(txn, start=self.next_id))
            mapped = self.mirror.mapped  # a mapped mirror views the file's new rows
            self.append(
                TraceColumns.of_records(recs),
                None if mapped else store_codes.read_rows(txn, before, counters.row_count),
                counters.row_count,
                mem_terms.for_records(txn, recs),
            )
            self.next_id = counters.next_id
            return self.mirror.n - before

    def _follow_int8_copy(self, txn: Txn) -> None:
        """Compact codes read the store's int8 copy once it keeps one (codes_q8.py)."""
        compact = self.compact
        kept = self.store.code_file is not None and codes_q8.enabled(txn)
        if compact is not None and not compact.stored and kept:
            compact.use_stored(codes_q8.files(self.store))

    def append(
        self, cols: TraceColumns, new_codes: np.ndarray | None, n_rows: int, counts: TermCounts
    ) -> None:
        """Add rows ``[mirror.n, n_rows)`` (committed) and the traces that own them.

        ``counts`` holds the terms of the traces of ``cols`` (same order), which
        go into the lexical index. The current mirror gets the rows when they
        fit, else a grown copy becomes current (readers holding the old one
        keep a consistent view). Call with the lock held.
        """
        m = self.mirror
        start = m.n
        grown = m.with_room(n_rows)
        code_file = self.store.code_file
        if grown.mapped and code_file is not None:
            grown.codes = code_file.rows(n_rows)  # committed to the file before LMDB
        else:
            assert new_codes is not None
            grown.codes[start:n_rows] = new_codes
        grown.put(cols, n_rows, str(self.store.path))
        if cols.primes.size:
            self.primes.add(np.repeat(cols.rows, cols.prime_counts), cols.primes)
        lexical.append(grown, self.lexical, counts, cols.rows)
        grown.n = n_rows  # publish: readers see the new rows only from here on
        self.mirror = grown
