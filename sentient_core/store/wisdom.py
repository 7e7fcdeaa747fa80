"""Wisdom records (clusters of surprise on one (domain, action)): functions over a Txn.

The ``wisdom`` sub-database holds the records under ``b"wis/" + u64(id)`` and
an index from a cluster key to its record under ``b"key/" + digest(domain,
action)`` (8-byte id value). Ids count up from 0. The state machine
(candidate → provisional → trusted → demoted) is enforced in
:mod:`sentient_core.metamemory.wisdom`; this module only stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.store.keyspace import (
    digest_key,
    iter_prefix,
    last_number,
    number_key,
    number_of,
)
from sentient_core.store.records import RecordCodec, key_u64, u64_key

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "CODEC",
    "DB",
    "MAX_EPISODES",
    "MAX_HISTORY",
    "MAX_SESSIONS",
    "WISDOM_STATES",
    "WisdomRecord",
    "WisdomState",
    "WisdomTransition",
    "find",
    "get",
    "iter_wisdom",
    "next_id",
    "put",
]

DB = "wisdom"
PREFIX = b"wis/"
KEY_PREFIX = b"key/"

WisdomState = Literal["candidate", "provisional", "trusted", "demoted"]
WISDOM_STATES: tuple[str, ...] = ("candidate", "provisional", "trusted", "demoted")
MAX_EPISODES = 64
"""Episode ids kept per record (the newest; ``episode_count`` counts them all)."""
MAX_SESSIONS = 32
MAX_HISTORY = 32

NonNeg = Annotated[int, msgspec.Meta(ge=0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class WisdomTransition(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One state change, with why it happened."""

    source: WisdomState
    target: WisdomState
    reason: Annotated[str, msgspec.Meta(max_length=2000)]
    time: UnixTime


class WisdomRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A cluster of surprise events on one (domain, action) and what it became.

    Counts with an "epoch" meaning start again when a demoted record becomes a
    candidate again (``total_episodes`` never does).

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
    domain, action : str
        The cluster key.
    state : {"candidate", "provisional", "trusted", "demoted"}
    lesson : str
        The generalisation, in words (from the newest episode).
    episodes : tuple of int
        Surprise ids of this epoch (the newest :data:`MAX_EPISODES`).
    sessions : tuple of str
        Distinct sessions of this epoch's episodes.
    episode_count : int
        Episodes this epoch.
    magnitude_sum : float
        Sum of their surprise magnitudes.
    total_episodes : int
        Episodes ever.
    contradictions : int
        Contradictions this epoch.
    support : int
        Supporting episodes since the last promotion.
    cited_debts : tuple of int
        Resolved debts cited at promotion.
    history : tuple of WisdomTransition
        The newest :data:`MAX_HISTORY` transitions.
    created, updated : float
    """

    v: int = 1
    id: NonNeg
    domain: Name
    action: Name
    state: WisdomState = "candidate"
    lesson: Annotated[str, msgspec.Meta(max_length=4000)] = ""
    episodes: Annotated[tuple[NonNeg, ...], msgspec.Meta(max_length=MAX_EPISODES)] = ()
    sessions: Annotated[tuple[str, ...], msgspec.Meta(max_length=MAX_SESSIONS)] = ()
    episode_count: NonNeg = 0
    magnitude_sum: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
    total_episodes: NonNeg = 0
    contradictions: NonNeg = 0
    support: NonNeg = 0
    cited_debts: Annotated[tuple[NonNeg, ...], msgspec.Meta(max_length=64)] = ()
    history: Annotated[tuple[WisdomTransition, ...], msgspec.Meta(max_length=MAX_HISTORY)] = ()
    created: UnixTime
    updated: UnixTime


CODEC: RecordCodec[WisdomRecord] = RecordCodec(WisdomRecord, 1, "wisdom record")


def next_id(txn: Txn) -> int:
    """The id the next new record gets."""
    return last_number(txn, DB, PREFIX) + 1


def put(txn: Txn, record: WisdomRecord) -> None:
    """Write (or replace) record ``record.id`` and its (domain, action) index entry."""
    txn.put(DB, number_key(PREFIX, record.id), CODEC.encode(record))
    txn.put(DB, digest_key(KEY_PREFIX, record.domain, record.action), u64_key(record.id))


def get(txn: Txn, wisdom_id: int) -> WisdomRecord | None:
    """Record ``wisdom_id``, or None."""
    if wisdom_id < 0:
        return None
    raw = txn.get(DB, number_key(PREFIX, wisdom_id))
    return None if raw is None else CODEC.decode(bytes(raw), where=f"wisdom/{wisdom_id}")


def find(txn: Txn, domain: str, action: str) -> WisdomRecord | None:
    """The record of the cluster (domain, action), or None."""
    raw = txn.get(DB, digest_key(KEY_PREFIX, domain, action))
    if raw is None:
        return None
    rec = get(txn, key_u64(bytes(raw)))
    return rec if rec is not None and (rec.domain, rec.action) == (domain, action) else None


def iter_wisdom(txn: Txn) -> Iterator[WisdomRecord]:
    """Every record, in id order."""
    for key, value in iter_prefix(txn, DB, PREFIX):
        yield CODEC.decode(value, where=f"wisdom/{number_of(PREFIX, key)}")
