"""The assembled core: one store, its holographic memory and the observer.

:class:`Core` is what the CLI (and an embedding application) opens on a data
directory. It owns the LMDB :class:`~sentient_core.store.Store`; the observer's
state is restored from the store at open and saved back at close.
"""

from __future__ import annotations

import os
from pathlib import Path

from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.memory import HolographicMemory
from sentient_core.memory import terms as memory_terms
from sentient_core.observer import Observer
from sentient_core.store import Store, content, default_data_dir

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
                # existed gets them once.
                with self.store.read() as txn:
                    backfill = content.missing(txn)
                    backfill_terms = memory_terms.missing(txn)
                if backfill:
                    self.store.write(content.backfill)
                if backfill_terms:
                    self.store.write(memory_terms.backfill)
            self.observer = Observer.load(self.store, encoder=self.encoder)
            self.memory = HolographicMemory(self.store, encoder=self.encoder)
        except BaseException:
            self.store.close()
            raise

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
