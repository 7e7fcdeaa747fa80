"""Source weights per (domain, source) and each domain's recent failures: functions over a Txn.

The ``sources`` sub-database holds two record kinds under their own prefixes
(:mod:`sentient_core.store.keyspace`)::

    b"w/" + digest(domain) + digest(source)  -> SourceWeight   (one per pair)
    b"d/" + digest(domain)                   -> DomainWindow   (one per domain)

so the weights of one domain are one key range. A pair without a record has
the default weight (1.0). The rules that change them are in
:mod:`sentient_core.metamemory.sources`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import msgspec

from sentient_core.store.keyspace import digest_key, iter_prefix, name_digest
from sentient_core.store.records import RecordCodec

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "DB",
    "WEIGHT",
    "WINDOW",
    "WINDOW_MAX",
    "DomainWindow",
    "SourceWeight",
    "get_weight",
    "get_window",
    "iter_weights",
    "put_weight",
    "put_window",
]

DB = "sources"
WEIGHT_PREFIX = b"w/"
WINDOW_PREFIX = b"d/"
WINDOW_MAX = 64
"""Most entries a :class:`DomainWindow` may hold (the rules use the last 8)."""

NonNeg = Annotated[int, msgspec.Meta(ge=0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class SourceWeight(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How much one source is trusted in one domain.

    Attributes
    ----------
    v : int
        Record schema version (1).
    domain, source : str
        The pair (the source as a normalised source key, e.g. ``web:docs.python.org``).
    weight : float
        In [0, 2]; 1 is the default.
    punished, rewarded : int
        Times the weight went down / up.
    failures, corrections : int
        Surprise events in which this source was wrong / was the correcting one.
    ignored : int
        Events about it below the noise threshold.
    updated : float
        Unix seconds of the last change.
    last_event : int
        The last surprise event that touched it (-1: none).
    """

    v: int = 1
    domain: Name
    source: Name
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 1.0
    punished: NonNeg = 0
    rewarded: NonNeg = 0
    failures: NonNeg = 0
    corrections: NonNeg = 0
    ignored: NonNeg = 0
    updated: UnixTime
    last_event: Annotated[int, msgspec.Meta(ge=-1)] = -1


class DomainWindow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The wrong source of each recent (non-ignored) surprise event of a domain, oldest first.

    Attributes
    ----------
    v : int
        Record schema version (1).
    domain : str
    failed : tuple of str
        Source keys, one per event, at most :data:`WINDOW_MAX` (oldest dropped).
    updated : float
    """

    v: int = 1
    domain: Name
    failed: Annotated[tuple[Name, ...], msgspec.Meta(max_length=WINDOW_MAX)] = ()
    updated: UnixTime


WEIGHT: RecordCodec[SourceWeight] = RecordCodec(SourceWeight, 1, "source weight")
WINDOW: RecordCodec[DomainWindow] = RecordCodec(DomainWindow, 1, "domain window")


def _weight_key(domain: str, source: str) -> bytes:
    return WEIGHT_PREFIX + name_digest(domain) + name_digest(source)


def get_weight(txn: Txn, domain: str, source: str) -> SourceWeight | None:
    """The record of ``(domain, source)``, or None (default weight)."""
    raw = txn.get(DB, _weight_key(domain, source))
    if raw is None:
        return None
    rec = WEIGHT.decode(bytes(raw), where=f"sources/{domain}/{source}")
    return rec if (rec.domain, rec.source) == (domain, source) else None


def put_weight(txn: Txn, record: SourceWeight) -> None:
    """Write (or replace) the record of ``(record.domain, record.source)``."""
    txn.put(DB, _weight_key(record.domain, record.source), WEIGHT.encode(record))


def iter_weights(txn: Txn, domain: str | None = None) -> Iterator[SourceWeight]:
    """Every weight record, or those of ``domain`` (key order, i.e. by digest)."""
    prefix = WEIGHT_PREFIX if domain is None else WEIGHT_PREFIX + name_digest(domain)
    for _, value in iter_prefix(txn, DB, prefix):
        rec = WEIGHT.decode(value, where="sources")
        if domain is None or rec.domain == domain:
            yield rec


def get_window(txn: Txn, domain: str) -> DomainWindow | None:
    """The recent-failure window of ``domain``, or None."""
    raw = txn.get(DB, digest_key(WINDOW_PREFIX, domain))
    if raw is None:
        return None
    rec = WINDOW.decode(bytes(raw), where=f"sources/window/{domain}")
    return rec if rec.domain == domain else None


def put_window(txn: Txn, record: DomainWindow) -> None:
    """Write (or replace) the window of ``record.domain``."""
    txn.put(DB, digest_key(WINDOW_PREFIX, record.domain), WINDOW.encode(record))
