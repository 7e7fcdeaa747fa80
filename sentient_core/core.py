"""The assembled core: one store, its holographic memory and the observer.

:class:`Core` is what the CLI (and an embedding application) opens on a data
directory. It owns the LMDB :class:`~sentient_core.store.Store`; the observer's
state is restored from the store at open and saved back at close.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.memory import HolographicMemory
from sentient_core.memory import terms as memory_terms
from sentient_core.misses import MissLog
from sentient_core.observer import Observer
from sentient_core.recall import DEFAULT_RANK, MemoryRanking, Ranking, ScoredRanking, recall
from sentient_core.store import Store, content, default_data_dir
from sentient_core.store import traces as store_traces

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from sentient_core.integrate import IngestSummary
    from sentient_core.memory import Hit
    from sentient_core.metamemory import MetaMemory
    from sentient_core.metamemory.debts import DebtRecord
    from sentient_core.metamemory.sources import SourceWeight
    from sentient_core.metamemory.wisdom import WisdomRecord

__all__ = ["CODE_DIM", "Core"]

#: Hologram length of every store created by the core (the encoder's default).
CODE_DIM = 256


class Core:
    """Store + memory + observer on one data directory.

    Parameters
    ----------
    data_dir : path, optional
        The data directory; default :func:`~sentient_core.store.default_data_dir`
        (``$SENTIENT_HOME`` or the user's data dir).
    readonly : bool
        Open for reading only (a second process may read while a learner writes).
    create : bool, optional
        Create the store when ``data_dir`` is missing or empty; default
        ``not readonly``. ``False`` opens an existing store for writing and
        raises :class:`~sentient_core.store.StoreNotFoundError` instead of
        creating one (commands that only use a store must not make one).
    durable : bool
        Sync every commit to disk (default). ``False`` trades the last
        transactions on power loss for speed; a process crash still loses nothing.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        readonly: bool = False,
        create: bool | None = None,
        durable: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.readonly = readonly
        self._misses: MissLog | None = None
        self.store = Store.open(
            self.data_dir,
            code_dim=CODE_DIM,
            readonly=readonly,
            create=not readonly if create is None else create,
            durable=durable,
        )
        try:
            # ONE encoder for the observer, the memory and (through the observer)
            # every integrator: the codes stored and the excitations applied must
            # come from the same tokenisation and prime bank.
            self.encoder: TextEncoder = get_encoder("token", code_dim=CODE_DIM)
            if not readonly:
                # A store written before content digests (or lexical terms)
                # existed gets them once; older trace records are rewritten once.
                with self.store.read() as txn:
                    backfill = content.missing(txn)
                    backfill_terms = memory_terms.missing(txn)
                    upgrade = store_traces.needs_upgrade(txn)
                if upgrade:
                    self.store.write(store_traces.upgrade)
                if backfill:
                    self.store.write(store_traces.backfill_digests)
                if backfill_terms:
                    self.store.write(memory_terms.backfill)
            self.observer = Observer.load(self.store, encoder=self.encoder)
            self.memory = HolographicMemory(self.store, encoder=self.encoder)
        except BaseException:
            self.store.close()
            raise
        self._meta: MetaMemory | None = None
        self._scored: ScoredRanking | None = None
        self._rankings: dict[str, MemoryRanking] = {}

    # -- the façade: what the CLI, the server and an embedding application ask of a core -----

    def ingest(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        progress: Callable[..., None] | None = None,
    ) -> IngestSummary:
        """Extract, chunk and store files and folders as ``cli.py ingest`` does (same
        extraction, caps and idempotence); see :meth:`Integrator.ingest`."""
        from sentient_core.integrate import Integrator

        return Integrator(self.memory, self.observer).ingest(
            [os.fspath(p) for p in paths], progress=progress
        )

    def feedback(self, trace_id: int, *, right: bool, note: str = "") -> dict[str, Any]:
        """A user's verdict on trace ``trace_id`` (see :func:`sentient_core.metamemory.feedback`).

        Raises
        ------
        NotFoundError
            No such trace, or it is retired.
        """
        from sentient_core.errors import NotFoundError
        from sentient_core.metamemory.feedback import feedback

        rec = self.memory.get(int(trace_id))
        if rec is None or rec.retired:
            state = "retired" if rec is not None else "not a trace"
            raise NotFoundError(f"trace {trace_id} is {state}")
        return feedback(self.meta, rec, right=right, note=note)

    def debts(self, *, status: str | None = None, domain: str | None = None) -> list[DebtRecord]:
        """Meta-memory's epistemic debts (all, or those of one status or domain)."""
        return self.meta.debts.debts(status=status, domain=domain)

    def sources(self, domain: str | None = None) -> list[SourceWeight]:
        """Meta-memory's source weights (all, or one domain's), by domain, then the
        heaviest source first."""
        from sentient_core.metamemory.sources import WEIGHTS

        with self.store.read() as txn:
            rows = list(WEIGHTS.iter(txn, domain) if domain else WEIGHTS.iter(txn))
        return sorted(rows, key=lambda r: (r.domain, -r.weight, r.source))

    def wisdom(self, *, state: str | None = None) -> list[WisdomRecord]:
        """Meta-memory's wisdom records (all, or those in one state)."""
        return self.meta.wisdom.records(state=state)

    def status(self) -> dict[str, Any]:
        """What the core holds: traces (active and in all), the code size, the observer's
        coherence and SMF orientation."""
        return {
            "path": str(self.data_dir),
            "traces": self.memory.count,
            "total": self.memory.total,
            "code_dim": self.store.code_dim,
            "coherence": float(self.observer.coherence),
            "smf": self.observer.orientation(),
        }

    # -- recall -------------------------------------------------------------------------------

    @property
    def meta(self) -> MetaMemory:
        """The meta-memory over this core's memory (built on first use; a learner
        session installs its own with :meth:`use_meta`)."""
        if self._meta is None:
            from sentient_core.metamemory import MetaMemory

            self._meta = MetaMemory(self.memory)
        return self._meta

    def use_meta(self, meta: MetaMemory) -> None:
        """Rank ``scored`` recalls with ``meta`` from now on (the running learner's, so
        that the server, the CLI and the learner in one process rank alike)."""
        self._meta = meta

    def ranking(self, rank: str | Ranking = DEFAULT_RANK) -> Ranking:
        """The :class:`~sentient_core.recall.Ranking` called ``rank`` (or ``rank`` itself).

        Raises
        ------
        ArgumentError
            An unknown name (see :data:`sentient_core.recall.RANKS`).
        """
        if not isinstance(rank, str):
            return rank
        if rank != "scored":
            ranking = self._rankings.get(rank)
            if ranking is None:
                ranking = self._rankings[rank] = MemoryRanking(self.memory, rank)
            return ranking
        meta = self.meta
        if self._scored is None or self._scored.meta is not meta:
            self._scored = ScoredRanking(self.memory, meta)
        return self._scored

    def recall(
        self,
        query: str | np.ndarray,
        k: int = 5,
        *,
        rank: str | Ranking = DEFAULT_RANK,
        threshold: float = 0.0,
        touch: bool = False,
        spread: int = 0,
    ) -> list[Hit]:
        """The ``k`` traces most relevant to ``query``, best first — as ``cli.py recall``
        and ``GET /recall`` rank them.

        Parameters
        ----------
        query : str or ndarray (code_dim,)
        k : int
        rank : str or Ranking
            ``"scored"`` (default: the learned scorer with meta-memory's factors),
            ``"hybrid"``, ``"bm25"``, ``"cosine"``, or a ranking of your own.
        threshold : float
            Hits scoring below it are dropped.
        touch : bool
            Bump the returned traces' use counts (needs a writable core).
        spread : int
            Link hops recall spreads along from its hits (0: none; see
            :mod:`sentient_core.memory.spreading`).

        Returns
        -------
        list of Hit
        """
        return recall(self.ranking(rank), query, k, threshold=threshold, touch=touch, spread=spread)

    @property
    def misses(self) -> MissLog:
        """The recall misses recorded in this store (:class:`~sentient_core.misses.MissLog`):
        ``core.misses.note(query, core.recall(query), "me")`` records a recall that found
        nothing relevant, as ``cli.py recall`` and ``GET /recall`` do (needs a writable
        core); a subject missed again makes the learner curious about it."""
        if self._misses is None:
            self._misses = MissLog(self.store)
        return self._misses

    def save(self) -> None:
        """Persist the observer state (one write transaction)."""
        if not self.readonly:
            self.observer.save(self.store)

    def close(self) -> None:
        """Stop the observer's ticker, save its state and close the store."""
        if self.store.closed:
            return
        try:
            self.observer.stop()
            self.save()
        finally:
            self.store.close()

    def __enter__(self) -> Core:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
