"""The interface every shard backend offers :class:`~sentient_core.cluster.memory.ShardedMemory`.

A backend runs :class:`~sentient_core.cluster.shard.ShardServer` methods by
name: :meth:`Shards.call` on one shard, :meth:`Shards.map` on several at once
(a remote backend sends them all before waiting for any, so a fan-out costs one
round trip). Arguments and results are plain arrays and msgspec structs (they
pickle). :class:`~sentient_core.cluster.local.LocalShards` runs them in this
process; a Ray backend (one actor per shard) implements the same three calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["Shards"]


class Shards(Protocol):
    """Shard servers reachable by index ``0 .. size − 1``."""

    @property
    def size(self) -> int:
        """Number of shards."""
        ...

    def call(self, shard: int, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` on shard ``shard``; its result."""
        ...

    def map(
        self,
        method: str,
        args: Mapping[int, Sequence[Any]],
        kwargs: Mapping[str, Any] | None = None,
    ) -> dict[int, Any]:
        """``method(*args[s], **kwargs)`` on every shard ``s`` of ``args``; results by shard.

        Raises the first error a shard raised (by shard index).
        """
        ...

    def close(self) -> None:
        """Release the shards (close their stores / stop their servers)."""
        ...
