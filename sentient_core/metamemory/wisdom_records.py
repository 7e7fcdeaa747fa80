"""Wisdom's records: a cluster of surprise events on one (domain, action), its state
machine's edges and gates, and where the records live (the ``wisdom`` sub-database).
:mod:`sentient_core.metamemory.wisdom` moves them (the book); this module only says what
they are."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.metamemory.debts import DEBTS
from sentient_core.store.keyspace import digest_key
from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime, key_u64, u64_key
from sentient_core.store.table import IdTable, register

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "MAX_EPISODES",
    "MAX_HISTORY",
    "MAX_SESSIONS",
    "MAX_USE_WINDOW",
    "RULES",
    "TRANSITIONS",
    "WISDOM",
    "WISDOM_STATES",
    "WisdomRecord",
    "WisdomRules",
    "WisdomState",
    "WisdomTransition",
    "find",
    "put",
    "score",
]

WisdomState = Literal["candidate", "provisional", "trusted", "demoted"]
WISDOM_STATES: tuple[str, ...] = ("candidate", "provisional", "trusted", "demoted")
MAX_EPISODES = 64
"""Episode ids kept per record (the newest; ``episode_count`` counts them all)."""
MAX_SESSIONS = 32
MAX_HISTORY = 32
MAX_USE_WINDOW = 32

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
        Supporting episodes since the last promotion (a judged success of a request
        its advice influenced counts as one).
    uses_succeeded, uses_failed : int
        Judged outcomes of the requests its advice influenced (this epoch).
    recent_uses : str
        The latest of those outcomes, oldest first (``s`` success, ``f`` failure).
    cited_debts : tuple of int
        Resolved debts cited at promotion.
    history : tuple of WisdomTransition
        The newest :data:`MAX_HISTORY` transitions.
    created, updated : float
    """

    v: int = 1
    id: NonNegInt
    domain: Name
    action: Name
    state: WisdomState = "candidate"
    lesson: Annotated[str, msgspec.Meta(max_length=4000)] = ""
    episodes: Annotated[tuple[NonNegInt, ...], msgspec.Meta(max_length=MAX_EPISODES)] = ()
    sessions: Annotated[tuple[str, ...], msgspec.Meta(max_length=MAX_SESSIONS)] = ()
    episode_count: NonNegInt = 0
    magnitude_sum: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
    total_episodes: NonNegInt = 0
    contradictions: NonNegInt = 0
    support: NonNegInt = 0
    uses_succeeded: NonNegInt = 0
    uses_failed: NonNegInt = 0
    recent_uses: Annotated[str, msgspec.Meta(max_length=MAX_USE_WINDOW, pattern="^[sf]*$")] = ""
    cited_debts: Annotated[tuple[NonNegInt, ...], msgspec.Meta(max_length=64)] = ()
    history: Annotated[tuple[WisdomTransition, ...], msgspec.Meta(max_length=MAX_HISTORY)] = ()
    created: UnixTime
    updated: UnixTime


WISDOM: IdTable[WisdomRecord] = IdTable(
    "wisdom", b"wis/", RecordCodec(WisdomRecord, 1, "wisdom record"), field="id", label="wisdom"
)
"""Every wisdom record, by id (ids count up from 0). Write through :func:`put`, which
keeps the index by cluster that :func:`find` reads."""
_INDEX = b"key/"
"""``_INDEX + digest(domain, action)`` → the 8-byte id of that cluster's record."""


def _cites_existing_debts(txn: Txn) -> Iterator[str]:
    known = {d.id for d in DEBTS.iter(txn)}
    for w in WISDOM.iter(txn):
        missing = [d for d in w.cited_debts if d not in known]
        if missing:
            yield f"wisdom {w.id} cites missing debt(s) {missing[:5]}"


register(WISDOM, check=_cites_existing_debts)


def put(txn: Txn, record: WisdomRecord) -> None:
    """Write (or replace) record ``record.id`` and its (domain, action) index entry."""
    WISDOM.put(txn, record)
    txn.put(WISDOM.db, digest_key(_INDEX, record.domain, record.action), u64_key(record.id))


def find(txn: Txn, domain: str, action: str) -> WisdomRecord | None:
    """The record of the cluster (domain, action), or None."""
    raw = txn.get(WISDOM.db, digest_key(_INDEX, domain, action))
    if raw is None:
        return None
    rec = WISDOM.get(txn, key_u64(bytes(raw)))
    return rec if rec is not None and (rec.domain, rec.action) == (domain, action) else None


TRANSITIONS: dict[tuple[str, str], str] = {
    ("candidate", "provisional"): "promotion",
    ("candidate", "demoted"): "contradicted",
    ("provisional", "trusted"): "further support",
    ("provisional", "demoted"): "contradicted or a cited debt reopened",
    ("trusted", "demoted"): "contradicted or a cited debt reopened",
    ("demoted", "candidate"): "new episodes after demotion",
}
"""Every legal transition and what drives it."""


class WisdomRules(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Gates of the state machine (SPEC §5)."""

    min_episodes: Annotated[int, msgspec.Meta(ge=1)] = 4
    min_sessions: Annotated[int, msgspec.Meta(ge=1)] = 2
    min_score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.72
    min_cited: Annotated[int, msgspec.Meta(ge=1)] = 1
    trust_support: Annotated[int, msgspec.Meta(ge=1)] = 2
    wrong_uses: Annotated[int, msgspec.Meta(ge=1)] = 2
    """Failed uses (judged failures of requests it influenced) among the last
    :attr:`use_window` that demote a record when they also outnumber the successful ones
    there: wisdom right before and wrong now is wrong now."""
    use_window: Annotated[int, msgspec.Meta(ge=1, le=MAX_USE_WINDOW)] = 8


RULES = WisdomRules()


def score(record: WisdomRecord, rules: WisdomRules = RULES) -> float:
    """Mean surprise magnitude of the epoch's episodes × ``min(1, sessions / min_sessions)``."""
    if record.episode_count == 0:
        return 0.0
    mean = record.magnitude_sum / record.episode_count
    return min(1.0, mean) * min(1.0, len(record.sessions) / rules.min_sessions)
