"""Holographic memory: traces in the store, recalled from an in-RAM mirror.

Modules
-------
types        records (NewTrace, Hit, PrunePolicy, MemoryState), constants, errors
mirror       the RAM mirror (arrays by code row) and the prime index
lexical      the inverted index of the traces' terms: BM25 and the BM25 + cosine hybrid
recall       a query read once (MemoryQuery); exact top-k by relevance (hybrid, BM25, cosine), by SMF, by primes; recent traces
links        links between traces, spreading activation
lifecycle    update, retire, prune, decay
writer       the one writer: lock, commit, in-RAM state, the views it publishes
storing      storing traces (new only, or every item)
columns      many traces prepared from columns (one check per column)
unit         a unit of work: memory's steps and the caller's writes in one transaction (MemoryTxn)
holographic  :class:`HolographicMemory`, the public face of all of the above

Efficacy is not retrieval (SPEC §5): recall bumps ``use_count`` and
``last_access`` only; ``success_count``/``failure_count`` change only through
:meth:`HolographicMemory.update` (judged outcomes).
"""

from sentient_core.memory.holographic import HolographicMemory
from sentient_core.memory.recall import MemoryQuery
from sentient_core.memory.types import (
    MEMORY_STATE,
    STATE_KEY,
    STRENGTH_CEILING,
    STRENGTH_FLOOR,
    EncoderMismatchError,
    Hit,
    HolographicMemoryError,
    MemoryState,
    NewTrace,
    PrunePolicy,
    RetiredTraceError,
    Stored,
    UnknownTraceError,
)
from sentient_core.memory.unit import MemoryTxn

__all__ = [
    "MEMORY_STATE",
    "STATE_KEY",
    "STRENGTH_CEILING",
    "STRENGTH_FLOOR",
    "EncoderMismatchError",
    "Hit",
    "HolographicMemory",
    "HolographicMemoryError",
    "MemoryQuery",
    "MemoryState",
    "MemoryTxn",
    "NewTrace",
    "PrunePolicy",
    "RetiredTraceError",
    "Stored",
    "UnknownTraceError",
]
