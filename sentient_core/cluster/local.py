"""In-process shards: every :class:`ShardServer` in this process (no Ray).

For tests, single-box users and as the reference a remote backend must equal.
Calls run one after the other in shard order (the kernels use the cores within
a call already).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sentient_core.cluster.shard import ShardServer
from sentient_core.encoder import TextEncoder
from sentient_core.errors import ArgumentError

__all__ = ["LocalShards", "shard_dir"]


def shard_dir(root: str | os.PathLike[str], shard: int) -> Path:
    """The data directory of shard ``shard`` under ``root``: ``root/shard-0003``."""
    return Path(root) / f"shard-{int(shard):04d}"


class LocalShards:
    """Shard servers held in this process.

    Parameters
    ----------
    servers : sequence of ShardServer
        Server ``i`` must serve shard ``i``.
    """

    def __init__(self, servers: Sequence[ShardServer]) -> None:
        servers = list(servers)
        if not servers:
            raise ArgumentError("a sharded memory needs at least one shard")
        for i, s in enumerate(servers):
            if s.shard != i:
                raise ArgumentError(f"server {i} serves shard {s.shard}; list them by shard index")
        self._servers = servers

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        count: int,
        *,
        code_dim: int | None = None,
        encoder: TextEncoder | None = None,
        readonly: bool = False,
        clock: Callable[[], float] = time.time,
        **store_options: object,
    ) -> LocalShards:
        """Open (or create) ``count`` shards in ``root/shard-0000`` ... (see :func:`shard_dir`)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ArgumentError(f"count must be an integer >= 1, got {count!r}")
        servers: list[ShardServer] = []
        try:
            for i in range(count):  # one at a time: the ones opened are closed on an error
                server = ShardServer(
                    i,
                    shard_dir(root, i),
                    code_dim=code_dim,
                    encoder=encoder,
                    readonly=readonly,
                    clock=clock,
                    **store_options,
                )
                servers.append(server)
        except BaseException:
            for s in servers:
                s.close()
            raise
        return cls(servers)

    @property
    def size(self) -> int:
        return len(self._servers)

    def server(self, shard: int) -> ShardServer:
        """The server object of shard ``shard`` (in-process only)."""
        return self._servers[shard]

    def call(self, shard: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._servers[shard], method)(*args, **kwargs)

    def map(
        self,
        method: str,
        args: Mapping[int, Sequence[Any]],
        kwargs: Mapping[str, Any] | None = None,
    ) -> dict[int, Any]:
        kw = dict(kwargs or {})
        return {s: getattr(self._servers[s], method)(*a, **kw) for s, a in sorted(args.items())}

    def close(self) -> None:
        for s in self._servers:
            s.close()

    def __enter__(self) -> LocalShards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
