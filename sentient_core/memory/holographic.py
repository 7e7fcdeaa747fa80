"""The holographic memory: traces kept in the store, recalled from an in-RAM mirror.

Every trace is a :class:`~sentient_core.store.TraceRecord` plus one float32 code
row (its hologram, stored L2-normalised) in the store. :class:`HolographicMemory`
keeps a mirror of what recall needs in RAM (:mod:`~sentient_core.memory.mirror`)
and an inverted index of the traces' terms (:mod:`~sentient_core.memory.lexical`),
ranks exactly over them (:mod:`~sentient_core.memory.recall`: BM25 plus the code
cosine by default, BM25 or cosine alone on request), then reads the winners'
records from the store, so returned records are always current.
Links live in :mod:`~sentient_core.memory.links`; update, retire, prune and
decay in :mod:`~sentient_core.memory.lifecycle`.

Consistency
-----------
Every change is ONE write transaction (:meth:`Store.write`); the mirror is
changed only after that transaction committed. A failed transaction (an
exception in it, a full disk) leaves both the store and the mirror as they
were. Transactions may be re-run by the store after growing the map, so they
never touch the mirror themselves. :meth:`HolographicMemory.write` makes a
caller's own writes part of such a transaction (:mod:`~sentient_core.memory.unit`).

Threads
-------
One re-entrant lock serialises every write together with its mirror update,
so mirror updates happen in commit order. Reads (all ``recall*``, ``recent``,
``spread``, ``get``) take no lock: they take one reference to the current
mirror and use its first ``n`` rows. Appends fill rows beyond ``n`` before
publishing the new ``n`` (or publish a grown copy), so a reader never sees a
half-written row; retirement clears mask bytes in place, so a concurrent read
sees a trace either before or after its retirement. Records are re-read from
the store, and a hit whose record turns out retired is dropped (and masked).

Processes
---------
One process writes (the store's one-writer convention); others open the store
read-only, build their own :class:`HolographicMemory` and call :meth:`refresh`
to pick up what was committed since: new traces are appended incrementally
(codes never change once written); a retirement bumps a generation number in
the store and makes :meth:`refresh` reload the mirror fully. Strength and
last-access values in a reader's mirror are those of its last full load (they
only steer :meth:`decay` and :meth:`prune`, which the writer runs); returned
records are read fresh. ``refresh`` is also how a writer adopts traces that
other code put into the store without going through this class.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from sentient_core.encoder import TextEncoder
from sentient_core.memory import columns as _columns
from sentient_core.memory import lifecycle as _lifecycle
from sentient_core.memory import links as _links
from sentient_core.memory import recall as _recall
from sentient_core.memory import storing as _storing
from sentient_core.memory import unit as _unit
from sentient_core.memory.compact import CompactCodes
from sentient_core.memory.types import Hit, NewTrace, PrunePolicy, Stored, check_ids
from sentient_core.memory.unit import MemoryTxn
from sentient_core.memory.writer import MemoryView, Writer
from sentient_core.store import traces
from sentient_core.store.env import Store
from sentient_core.store.records import LinkRecord, TraceRecord

__all__ = ["HolographicMemory", "MemoryTxn"]

T = TypeVar("T")


class HolographicMemory:
    """Traces in a :class:`~sentient_core.store.Store`, recalled from an in-RAM mirror.

    Parameters
    ----------
    store : Store
        An open store (read-only is fine for recall; writes then raise
        :class:`~sentient_core.store.StoreUsageError`). The memory does not own
        it: close the store yourself.
    encoder : TextEncoder, optional
        Computes codes and dominant primes from text. Default: the ``"token"``
        encoder with the store's ``code_dim`` (built on first use).
    clock : callable, optional
        Returns the current unix time (``time.time``); injectable for tests.
    compact_codes : bool, optional
        Single cosine recalls scan an int8 copy of the codes and re-score a
        few rows in float32: the same hits and scores (:mod:`~sentient_core.memory.compact`).

    Raises
    ------
    EncoderMismatchError
        ``encoder.code_dim`` differs from the store's.
    CorruptRecordError, SchemaVersionError
        A trace record does not decode, or traces and code rows disagree.

    Notes
    -----
    See the module docstring for the consistency, thread and process rules.
    Opening reads all code rows in one copy per block and decodes each trace
    record once (without its text).
    """

    def __init__(
        self,
        store: Store,
        *,
        encoder: TextEncoder | None = None,
        clock: Callable[[], float] = time.time,
        compact_codes: bool = False,
    ) -> None:
        self._w = Writer(store, encoder, clock, compact_codes)

    # -- the mirror ------------------------------------------------------------------------

    def refresh(self, *, full: bool = False) -> int:
        """Pick up what was committed to the store since the mirror was built.

        New traces are appended (codes are read only for the new rows); if a
        retirement happened since (the store's generation changed) or ``full``,
        the mirror is rebuilt from scratch.

        Parameters
        ----------
        full : bool
            Rebuild even if nothing was retired (also refreshes strength and
            last-access values changed by another process).

        Returns
        -------
        int
            Number of traces the mirror gained.
        """
        return self._w.refresh(full)

    def view(self) -> MemoryView:
        """The current generation of the read state (mirror, lexical and prime indexes).

        A view stays consistent while it is held: traces stored later are not
        in it (their rows lie beyond its ``n``), a trace retired later is masked.
        """
        return self._w.view()

    # -- encoder -----------------------------------------------------------------------------

    @property
    def encoder(self) -> TextEncoder:
        """The encoder used for text (built on first access if none was given)."""
        return self._w.encoder

    # -- storing -----------------------------------------------------------------------------

    def store(
        self,
        text: str,
        *,
        code: np.ndarray | None = None,
        smf: Sequence[float] | np.ndarray | None = None,
        primes: Sequence[int] | None = None,
        kind: str = "observed",
        source: str = "",
        importance: float = 0.5,
        tags: Sequence[str] = (),
        topic: str = "",
        keywords: Sequence[str] = (),
    ) -> TraceRecord:
        """Store one trace (one write transaction); see :class:`NewTrace` for the fields.

        Returns
        -------
        TraceRecord
            The stored record (with its id and row).
        """
        item = NewTrace(
            text=text,
            code=code,
            smf=None if smf is None else tuple(np.asarray(smf, dtype=np.float64).tolist()),
            primes=None if primes is None else tuple(primes),
            kind=kind,
            source=source,
            importance=importance,
            tags=tuple(tags),
            topic=topic,
            keywords=tuple(keywords),
        )
        return self.store_batch([item])[0]

    def store_batch(self, items: Sequence[NewTrace]) -> list[TraceRecord]:
        """Store many traces in ONE write transaction.

        Codes and primes missing from the items are computed by one encoder
        call (``encode_many`` if primes are wanted, else ``encode_batch``);
        every code is stored L2-normalised.

        Parameters
        ----------
        items : sequence of NewTrace

        Returns
        -------
        list of TraceRecord
            The stored records, in the order of ``items``.

        Raises
        ------
        ValueError, TypeError
            A field is invalid (wrong code shape, non-finite values, importance
            outside [0, 1], empty kind, a prime < 2, ...).
        EncoderMismatchError
            Codes must be computed and the store's codes come from another encoder.
        """
        items = list(items)
        if not items:
            return []
        prepared = _storing.prepare(self._w, items)  # encoded outside the lock
        return self.write(lambda tx: tx.store_batch(prepared))

    def store_unique(
        self,
        items: Sequence[NewTrace],
        *,
        near: float | None = None,
        not_a_use: Callable[[int, int], bool] | None = None,
    ) -> list[Stored]:
        """Store only the items memory does not hold yet (ONE write transaction).

        An item is a duplicate when an active trace holds the same text
        (whitespace aside), or, with ``near``, when its code has cosine ≥ ``near``
        with an active trace's or one of its five nearest traces holds
        :data:`~sentient_core.memory.types.NEAR_SHINGLES` of the smaller text's
        5-word shingles; a duplicate stores nothing and bumps that trace's
        ``use_count``. Repeats inside ``items`` are stored once.

        Parameters
        ----------
        items : sequence of NewTrace
        near : float, optional
            Near-duplicate threshold in (0, 1] (e.g. 0.95); None checks exact
            content only (cheap for large batches).
        not_a_use : callable, optional
            ``not_a_use(i, holder_id)``: True when item ``i`` found in trace
            ``holder_id`` is not a use of it (re-ingesting the file that trace
            came from), so its ``use_count`` stays.

        Returns
        -------
        list of Stored
            One per item, in order: the new trace or the one already holding it.
        """
        items = list(items)
        if not items:
            return []
        _storing.check_near(near)
        prepared = _storing.prepare(self._w, items)  # encoded outside the lock
        return self.write(lambda tx: tx.store_unique(prepared, near=near, not_a_use=not_a_use))

    def prepare(self, cols: _columns.TraceColumns) -> _storing.Prepared:
        """Check and assemble traces given by column (no transaction), for
        ``tx.store_unique``/``tx.store_batch`` in :meth:`write` (see :mod:`.columns`)."""
        return _columns.prepare(self._w.store.code_dim, float(self._w.clock()), cols)

    def write(self, fn: Callable[[MemoryTxn], T]) -> T:
        """Run ``fn(tx)`` as ONE write transaction: memory's steps and the caller's writes.

        ``tx`` is a :class:`~sentient_core.memory.unit.MemoryTxn`: ``tx.txn`` is the
        store transaction (for the caller's own writes: a file record, an audit
        event), and ``tx.store_unique``, ``tx.store_batch`` and ``tx.retire`` are
        memory's steps, returning what they did. Everything commits together or
        not at all; the mirror takes the changes after the commit. ``fn``'s
        return value is returned.

        ``fn`` must be re-runnable: after growing the map the store runs it again
        from scratch with a fresh ``tx`` (see :mod:`~sentient_core.memory.unit`).
        Do what must happen once (encoding, observing, publishing) outside it.

        Raises
        ------
        StoreUsageError
            Read-only store, or a write (``write``, ``store``, ``retire``, ...)
            started from inside ``fn``.
        """
        return _unit.write(self._w, fn)

    # -- reading -----------------------------------------------------------------------------

    def get(self, trace_id: int) -> TraceRecord | None:
        """The trace ``trace_id`` as stored (retired ones too), or None."""
        with self._w.store.read() as txn:
            return traces.get(txn, int(trace_id))

    @property
    def datastore(self) -> Store:
        """The :class:`~sentient_core.store.Store` this memory lives in."""
        return self._w.store

    @property
    def compact_codes(self) -> CompactCodes | None:
        """The int8 codes full scans read when opened with ``compact_codes=True``, else None."""
        return self._w.compact

    @property
    def count(self) -> int:
        """Number of active (non-retired) traces in the mirror."""
        return self._w.mirror.active

    @property
    def total(self) -> int:
        """Number of traces in the mirror, retired ones included."""
        return self._w.mirror.n

    @property
    def generation(self) -> int:
        """The retirement generation the mirror reflects (see :class:`MemoryState`)."""
        return self._w.state.generation

    # -- recall ------------------------------------------------------------------------------

    def query(self, query: str | np.ndarray) -> _recall.MemoryQuery:
        """Read ``query`` once for a search: the current :meth:`view`, the query's code
        (None for a text without content words) and, for a text, its BM25 terms."""
        return _recall.query(self._w, query)

    def query_code(self, query: str | np.ndarray) -> np.ndarray | None:
        """The code recall compares with: a text's (None if it has no content words),
        or a checked code (shape, finiteness, not all zeros)."""
        return _recall.query_code(self._w, query)

    def touch(self, hits: Sequence[Hit]) -> list[Hit]:
        """Bump ``use_count`` and ``last_access`` of the hits' traces (one write
        transaction), as ``recall(..., touch=True)`` does; the hits with the new records."""
        return _recall.touch_hits(self._w, [list(hits)])[0]

    def recall(
        self,
        query: str | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
        rank: str | None = None,
    ) -> list[Hit]:
        """The ``k`` active traces most relevant to ``query``, best first (exact).

        Parameters
        ----------
        query : str or ndarray (code_dim,)
            A text (its terms and its code from the memory's encoder) or a code.
        k : int
        threshold : float
            Hits scoring below it are dropped.
        touch : bool
            Bump ``use_count`` and ``last_access`` of the returned traces (one
            write transaction). Needs a writable store.
        rank : {"hybrid", "bm25", "cosine"}, optional
            How to rank (see :class:`Hit` for each score's scale). Default:
            ``"hybrid"`` for a text (BM25 over the traces sharing a query term,
            plus the code cosine), ``"cosine"`` for a code (the only rank a code
            query allows). ``"bm25"`` and ``"hybrid"`` return only traces
            sharing a content word with the query.

        Returns
        -------
        list of Hit
            Ties are broken by the lower row (older trace). A text without
            content words recalls nothing.
        """
        return _recall.recall(self._w, query, k, threshold, touch, rank)

    def recall_batch(
        self,
        queries: Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
        rank: str | None = None,
    ) -> list[list[Hit]]:
        """:meth:`recall` for several queries (cosine: one pass over the codes).

        Parameters
        ----------
        queries : sequence of str, or ndarray (Q, code_dim)
        k, threshold, touch, rank
            As in :meth:`recall`; ``touch`` bumps once per query a trace is
            returned for, all in one write transaction.

        Returns
        -------
        list of list of Hit
            One list per query.
        """
        return _recall.recall_batch(self._w, queries, k, threshold, touch, rank)

    def recall_by_smf(
        self, s: np.ndarray | Sequence[float], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """The ``k`` active traces whose stored SMF orientation is most similar to ``s``.

        Parameters
        ----------
        s : (16,) float
            An SMF orientation (need not be unit; a ~zero field matches nothing).
        k : int
        touch : bool
            As in :meth:`recall`.

        Returns
        -------
        list of Hit
            Score = cosine (:func:`sentient_kernels.smf.similarity`); ties go to the lower row.
        """
        return _recall.recall_by_smf(self._w, s, k, touch)

    def recall_by_primes(
        self, primes: Iterable[int], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """Active traces sharing dominant primes with ``primes``.

        Ranked by the number of shared primes, then recency (newer ``created``
        first), then the higher id. Served by the in-RAM inverted index.

        Parameters
        ----------
        primes : iterable of int
        k : int
        touch : bool
            As in :meth:`recall`.

        Returns
        -------
        list of Hit
            Score = shared primes / distinct query primes, in (0, 1].
        """
        return _recall.recall_by_primes(self._w, primes, k, touch)

    def recent(self, n: int = 10) -> list[TraceRecord]:
        """The ``n`` newest active traces (highest ids first)."""
        return _recall.recent(self._w, n)

    # -- links -------------------------------------------------------------------------------

    def link(
        self, a: int, b: int, weight: float = 1.0, *, directed: bool = False
    ) -> list[LinkRecord]:
        """Entangle two active traces (one write transaction).

        Parameters
        ----------
        a, b : int
            Trace ids (distinct, both active).
        weight : float
            In (0, 1], so activation never grows along a path.
        directed : bool
            False (default): links ``a -> b`` and ``b -> a`` (entanglement is
            symmetric). True: only ``a -> b``.

        Returns
        -------
        list of LinkRecord
            The links written (an existing link is replaced).

        Raises
        ------
        UnknownTraceError, RetiredTraceError
        """
        return _links.link(self._w, a, b, weight, directed)

    def unlink(self, a: int, b: int, *, directed: bool = False) -> int:
        """Remove the link ``a -> b`` (and ``b -> a`` unless ``directed``); returns how many."""
        return _links.unlink(self._w, a, b, directed)

    def links(self, trace_id: int) -> list[LinkRecord]:
        """Links out of ``trace_id``, ordered by destination id.

        Raises
        ------
        UnknownTraceError
        """
        return _links.links_of(self._w, trace_id)

    def spread(
        self,
        seed_ids: Iterable[int],
        hops: int = 2,
        decay: float = 0.5,
        limit: int = 50,
    ) -> list[tuple[int, float]]:
        """Spreading activation over the links from ``seed_ids``.

        Each seed starts with activation 1. At each hop every node activated in
        the previous hop sends ``activation × decay × weight`` along each of its
        out-links; a node's result is the sum of everything it received over all
        hops. Seeds are not listed. Deterministic: nodes are visited in id order.

        Parameters
        ----------
        seed_ids : iterable of int
        hops : int
            Number of propagation steps (>= 0).
        decay : float
            Per-hop factor in (0, 1].
        limit : int
            At most this many results.

        Returns
        -------
        list of (int, float)
            ``(trace id, activation)``, highest activation first, ties by id.

        Raises
        ------
        UnknownTraceError
            A seed is not a trace.
        """
        return _links.spread(self._w, seed_ids, hops, decay, limit)

    # -- lifecycle ---------------------------------------------------------------------------

    def update(self, records: Sequence[TraceRecord]) -> None:
        """Replace trace records in one write transaction, keeping the mirror in step.

        This is how judged outcomes change ``success_count``/``failure_count``
        and credit changes ``strength``. Identity and content fields (``id``,
        ``row``, ``created``, ``text``, ``primes``) cannot change, nor can
        ``retired`` (use :meth:`retire`).

        Raises
        ------
        UnknownTraceError
            A record's id is not in the store.
        ValueError
            An immutable field differs from the stored record.
        CorruptRecordError
            A field is out of bounds.
        """
        _lifecycle.update(self._w, records)

    def retire(self, ids: Iterable[int]) -> list[int]:
        """Retire traces (one write transaction): mark them, mask them, delete their links.

        Retired traces stay in the store (their rows too) and can be read with
        :meth:`get`, but are never recalled, listed or linked again. To retire
        together with other writes, use ``tx.retire`` inside :meth:`write`.

        Returns
        -------
        list of int
            The ids retired now (already retired ones are skipped), ascending.

        Raises
        ------
        UnknownTraceError
            An id is not a trace.
        """
        wanted = check_ids(ids, "ids")
        return self.write(lambda tx: tx.retire(wanted)) if wanted else []

    def prune(self, policy: PrunePolicy) -> list[int]:
        """Retire the lowest-value traces beyond ``policy.max_active`` (one write transaction).

        Eligible: active traces outside the ``keep_newest`` newest (highest
        ids) whose strength is below ``min_strength``. They are retired lowest
        strength first, then least recently accessed, then lowest id, until at
        most ``max_active`` remain or no eligible trace is left.

        Returns
        -------
        list of int
            The retired ids, ascending.

        Raises
        ------
        ValueError
            The policy is out of bounds.
        """
        return _lifecycle.prune(self._w, policy)

    def decay(self, now: float | None = None, half_life_days: float = 30.0) -> int:
        """Let the strength of unused traces fade toward the floor (one write transaction).

        ``s ← 0.05 + (s − 0.05) · 2^(−Δ / h)`` with ``h = half_life_days`` days and
        ``Δ = now − max(last_access, previous decay time)`` (never negative).
        Measuring Δ from the previous decay makes repeated calls compose: decaying
        at t1 and then at t2 equals decaying once at t2. A recall (which sets
        ``last_access``) restarts the clock of a trace. Efficacy counters are
        never touched.

        Parameters
        ----------
        now : float, optional
            Unix time; the memory's clock if omitted.
        half_life_days : float
            > 0.

        Returns
        -------
        int
            Number of traces whose strength changed.
        """
        return _lifecycle.decay(self._w, now, half_life_days)
