"""Memory over several shards with a single memory's API and results (issue 26).

Modules
-------
ids      Global trace ids: (shard, local id) packed in one int64 (16 + 47 bits).
wire     What shard servers take and return: arrays and msgspec structs (they pickle).
shard    :class:`ShardServer`: one LMDB data directory, its memory's read mirror, its writer.
backend  :class:`Shards`: the interface a backend offers (``call``, ``map``, ``close``).
local    :class:`LocalShards`: every shard server in this process.
ray_backend  :class:`RayShards`: one Ray actor per shard (the ``cluster`` extra; imported
         only on ``from sentient_core.cluster.ray_backend import RayShards``).
merge    Exact merges: top-k by (score desc, global id asc), corpus statistics.
memory   :class:`ShardedMemory`: recall by cosine, BM25, the hybrid, SMF, primes over the shards.
scored   :class:`ShardedScoredRecall`: the learned scorer's recall, one meta-memory owner.
scored_shard  A shard's scorer table and scored top-k.
"""

from sentient_core.cluster.backend import Shards
from sentient_core.cluster.ids import LOCAL_BITS, MAX_LOCAL, MAX_SHARDS, SHARD_BITS
from sentient_core.cluster.local import LocalShards, shard_dir
from sentient_core.cluster.memory import ShardedMemory
from sentient_core.cluster.scored import ShardedScoredRecall
from sentient_core.cluster.shard import ShardServer

__all__ = [
    "LOCAL_BITS",
    "MAX_LOCAL",
    "MAX_SHARDS",
    "SHARD_BITS",
    "LocalShards",
    "ShardServer",
    "ShardedMemory",
    "ShardedScoredRecall",
    "Shards",
    "shard_dir",
]
