"""Global trace ids: (shard, local id) packed in one non-negative int64.

Layout: the top :data:`SHARD_BITS` (16) of the 63 value bits hold the shard
index, the low :data:`LOCAL_BITS` (47) the trace's id in its shard's store::

    global = shard << 47 | local

So shard 0's traces keep their own ids (a one-shard memory's ids are the
single store's), at most 65,536 shards, and at most 2**47 − 1 (≈ 1.4 × 10**14)
trace ids per shard. Ordering by global id orders by shard, then by local id;
within a shard local ids ascend with the code rows, so "ties by global id"
agrees with a single store that holds the shards' traces in that order.
"""

from __future__ import annotations

import numpy as np

from sentient_core.errors import ArgumentError

__all__ = [
    "LOCAL_BITS",
    "MAX_LOCAL",
    "MAX_SHARDS",
    "SHARD_BITS",
    "local_of",
    "pack",
    "pack_many",
    "shard_of",
    "unpack_many",
]

SHARD_BITS = 16
LOCAL_BITS = 47
MAX_SHARDS = 1 << SHARD_BITS
MAX_LOCAL = (1 << LOCAL_BITS) - 1
_LOCAL_MASK = np.int64(MAX_LOCAL)


def _check_shard(shard: int) -> int:
    if isinstance(shard, bool) or not isinstance(shard, (int, np.integer)):
        raise ArgumentError(f"a shard index must be an integer, got {shard!r}")
    if not 0 <= shard < MAX_SHARDS:
        raise ArgumentError(f"shard index {shard} is outside [0, {MAX_SHARDS}) ({SHARD_BITS} bits)")
    return int(shard)


def pack(shard: int, local: int) -> int:
    """The global id of trace ``local`` of shard ``shard``.

    Raises
    ------
    ArgumentError
        ``shard`` outside ``[0, 2**16)`` or ``local`` outside ``[0, 2**47)``: the id
        would not fit its field of the int64.
    """
    shard = _check_shard(shard)
    if isinstance(local, bool) or not isinstance(local, (int, np.integer)):
        raise ArgumentError(f"a local trace id must be an integer, got {local!r}")
    if not 0 <= local <= MAX_LOCAL:
        raise ArgumentError(
            f"local trace id {local} of shard {shard} does not fit the {LOCAL_BITS} bits a"
            f" global id gives it (at most {MAX_LOCAL}): seal this shard and start another"
        )
    return (shard << LOCAL_BITS) | int(local)


def pack_many(shard: int, local: np.ndarray) -> np.ndarray:
    """:func:`pack` over an array of local ids (int64 out)."""
    shard = _check_shard(shard)
    loc = np.asarray(local, dtype=np.int64)
    if loc.size and (int(loc.min()) < 0 or int(loc.max()) > MAX_LOCAL):
        bad = int(loc.max()) if int(loc.max()) > MAX_LOCAL else int(loc.min())
        raise ArgumentError(
            f"local trace id {bad} of shard {shard} does not fit the {LOCAL_BITS} bits a"
            f" global id gives it (at most {MAX_LOCAL})"
        )
    return (np.int64(shard) << np.int64(LOCAL_BITS)) | loc


def shard_of(gid: int) -> int:
    """The shard a global id belongs to."""
    if isinstance(gid, bool) or not isinstance(gid, (int, np.integer)) or gid < 0:
        raise ArgumentError(f"a global trace id must be a non-negative integer, got {gid!r}")
    if gid >= 1 << (SHARD_BITS + LOCAL_BITS):
        raise ArgumentError(f"global trace id {gid} does not fit 63 bits")
    return int(gid) >> LOCAL_BITS


def local_of(gid: int) -> int:
    """The trace id within its shard."""
    shard_of(gid)  # checks it
    return int(gid) & MAX_LOCAL


def unpack_many(gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(shards, local ids) of an array of global ids (int64 each)."""
    g = np.asarray(gids, dtype=np.int64)
    if g.size and int(g.min()) < 0:
        raise ArgumentError(f"global trace ids must be non-negative, got {int(g.min())}")
    return g >> np.int64(LOCAL_BITS), g & _LOCAL_MASK
