"""Directed links between traces: functions over a :class:`~sentient_core.store.env.Txn`.

A link ``src -> dst`` is one :class:`~sentient_core.store.records.LinkRecord`
in the ``links`` sub-database under the 16-byte key ``src‖dst`` (two 8-byte
big-endian ids), so the links out of a trace are one contiguous key range.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

from sentient_core.errors import NotFoundError
from sentient_core.store import traces
from sentient_core.store.records import LINKS, LinkRecord, link_key, split_link_key, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["delete", "delete_touching", "get", "iter_from", "put"]

DB = "links"


def put(txn: Txn, link: LinkRecord) -> None:
    """Add or replace the link ``link.src -> link.dst``.

    Raises
    ------
    NotFoundError
        Either end is not a trace in the store (also a ``KeyError``).
    """
    for end in (link.src, link.dst):
        if not traces.exists(txn, end):
            raise NotFoundError(f"link {link.src}->{link.dst}: no trace {end} in the store")
    txn.raw.put(link_key(link.src, link.dst), LINKS.encode(link), db=txn.db(DB))


def get(txn: Txn, src: int, dst: int) -> LinkRecord | None:
    """The link ``src -> dst``, or None."""
    raw = txn.raw.get(link_key(src, dst), db=txn.db(DB))
    return None if raw is None else LINKS.decode(raw, where=f"links/{src}->{dst}")


def delete(txn: Txn, src: int, dst: int) -> bool:
    """Remove the link ``src -> dst``; False if there was none."""
    return bool(txn.raw.delete(link_key(src, dst), db=txn.db(DB)))


def delete_touching(txn: Txn, ids: Collection[int]) -> int:
    """Remove every link into or out of a trace in ``ids``; returns how many.

    Links *to* a trace can start anywhere, so this is one pass over the link keys.
    """
    gone = set(ids)
    if not gone:
        return 0
    doomed = [
        bytes(key)
        for key in txn.cursor(DB).iternext(values=False)
        if not gone.isdisjoint(split_link_key(key))
    ]
    db = txn.db(DB)
    for key in doomed:
        txn.raw.delete(key, db=db)
    return len(doomed)


def iter_from(txn: Txn, src: int | None = None) -> Iterator[LinkRecord]:
    """All links (``src`` None) or the links out of ``src``, in key order."""
    cursor = txn.raw.cursor(db=txn.db(DB))
    if not cursor.set_range(link_key(0 if src is None else src, 0)):
        return
    prefix = None if src is None else u64_key(src)
    for key, value in cursor.iternext():
        if prefix is not None and bytes(key[:8]) != prefix:
            return
        yield LINKS.decode(value, where="links")
