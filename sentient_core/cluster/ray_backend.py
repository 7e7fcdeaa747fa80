"""Shards in Ray actors: :class:`RayShards` (the only module that imports ``ray``).

One actor per shard; each actor builds its :class:`ShardServer` in its own
worker process from the shard's LMDB data directory, so the environment is
opened after the worker started (never inherited across a fork). The actors
are created with ``max_restarts=-1``: Ray restarts a dead one, which opens the
same directory again (a committed trace is in LMDB, so nothing committed is
lost). Read calls (searches, statistics, ``fetch``, ``info``, ``refresh``)
are idempotent and retried across a restart (``max_task_retries``); writes are
not retried by Ray (a write whose actor died raises
:class:`ShardUnavailableError`: whether it committed is the caller's question).

``ray`` is an optional extra (``pip install sentient-core[cluster]``).

Starting a local Ray (:func:`init_ray`): two CPUs by default, no dashboard, the
object store capped (:data:`OBJECT_STORE_BYTES`; Ray reserves ~30% of RAM in
/dev/shm otherwise) and its temporary directory under the data directory. Ray
≥ 2.60 turns on token authentication for a new local cluster and writes the
token to ``~/.ray/auth_token``: on a machine whose ``HOME`` is not writable,
point ``HOME`` at a writable directory or set ``RAY_AUTH_MODE=disabled``
(anyone who reaches the cluster's ports can then run code in it) before the
first call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
import ray.exceptions

from sentient_core.cluster.local import shard_dir
from sentient_core.cluster.shard import ShardServer
from sentient_core.encoder import TextEncoder
from sentient_core.errors import ArgumentError, SentientError

__all__ = [
    "OBJECT_STORE_BYTES",
    "READ_METHODS",
    "RayShards",
    "ShardUnavailableError",
    "init_ray",
]

# Enough for a batch of queries' hits and a store_batch of codes in flight; Ray's own
# default is ~30% of RAM in /dev/shm.
OBJECT_STORE_BYTES = 200 * 2**20

# ShardServer methods that change nothing a caller can see (or, for refresh and
# scored_prepare, converge to the same state when run twice): Ray may run them again
# on a restarted actor. Everything else is a write and runs at most once.
READ_METHODS = frozenset(
    {
        "info",
        "refresh",
        "lex_stats",
        "search_lexical",
        "search_cosine",
        "search_smf",
        "search_primes",
        "fetch",
        "scored_prepare",
        "scored_stats",
        "search_scored",
        "scored_factors",
    }
)

# Retries of a read across actor restarts. A restart (a new worker process importing
# sentient_core, opening the store, building the mirror) took 2-3.6 s on 2 cores and
# used up to 3 retries ("the actor is restarting"); 20 leaves room for bigger shards.
# Ray fails the call at once if the actor is dead for good (its constructor raised).
READ_RETRIES = 20

# Unix socket paths must fit in 107 bytes; the longest Ray makes under its temp dir is
# "/session_2026-12-07_10-25-59_472317_<pid>/sockets/plasma_store" (64 with a 7-digit pid).
_MAX_TEMP_DIR = 43

# How long close() waits for the stores to close before it kills the actors.
_CLOSE_WAIT_S = 10.0


class ShardUnavailableError(SentientError):
    """A shard's actor died during a call that is not retried (a write), or stays dead."""


def init_ray(
    root: str | os.PathLike[str],
    *,
    address: str | None = None,
    num_cpus: int = 2,
    object_store_memory: int = OBJECT_STORE_BYTES,
    temp_dir: str | os.PathLike[str] | None = None,
) -> bool:
    """Start a local Ray for the shards under ``root``, or join ``address``.

    Does nothing if Ray is already initialised in this process. Returns True if
    this call started or joined Ray (the caller then owns :func:`ray.shutdown`).

    Parameters
    ----------
    root : path-like
        The sharded memory's data directory; a local Ray keeps its temporary
        files in ``root/ray`` unless ``temp_dir`` is given.
    address : str, optional
        An existing cluster (``"auto"`` or ``"host:port"``); the other settings
        are the cluster's own then.
    num_cpus : int
        CPUs a local Ray schedules on.
    object_store_memory : int
        Bytes of the local object store (in /dev/shm).
    temp_dir : path-like, optional
        Absolute, at most 43 characters (Ray's socket paths live under it).
    """
    if ray.is_initialized():
        return False
    if address is not None:
        ray.init(address=address, log_to_driver=False)
        return True
    tmp = Path(temp_dir) if temp_dir is not None else Path(root) / "ray"
    tmp = tmp.absolute()
    if len(str(tmp)) > _MAX_TEMP_DIR:
        raise ArgumentError(
            f"Ray's temporary directory {str(tmp)!r} is longer than {_MAX_TEMP_DIR} characters"
            " (its socket paths would pass the 107-byte limit): pass a shorter temp_dir"
        )
    tmp.mkdir(parents=True, exist_ok=True)
    ray.init(
        num_cpus=num_cpus,
        include_dashboard=False,
        object_store_memory=int(object_store_memory),
        _temp_dir=str(tmp),
        log_to_driver=False,
    )
    return True


@ray.remote(max_restarts=-1)
class _ShardActor:
    """The worker side: one :class:`ShardServer`, its methods run by name."""

    def __init__(self, shard: int, path: str, options: dict[str, Any]) -> None:
        self._server = ShardServer(shard, path, **options)

    @ray.method(max_task_retries=READ_RETRIES)
    def read(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if method not in READ_METHODS:
            raise ArgumentError(f"{method!r} is not a read call of a shard server")
        return getattr(self._server, method)(*args, **kwargs)

    @ray.method(max_task_retries=0)
    def write(self, method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if method.startswith("_") or method in READ_METHODS:
            raise ArgumentError(f"{method!r} is not a write call of a shard server")
        return getattr(self._server, method)(*args, **kwargs)

    @ray.method(max_task_retries=READ_RETRIES)
    def pid(self) -> int:
        """The actor's process id (a restart changes it)."""
        return os.getpid()


class RayShards:
    """Shard servers in Ray actors, one per shard (see the module docstring).

    Build it with :meth:`open`. :meth:`call` and :meth:`map` take the
    :class:`ShardServer` method names :class:`~sentient_core.cluster.local.LocalShards`
    takes; :meth:`map` sends every shard its call before waiting for any.

    Parameters
    ----------
    actors : sequence of actor handles
        Actor ``i`` serves shard ``i``.
    owns_ray : bool
        :meth:`close` shuts Ray down too (it was started for these shards).
    """

    def __init__(self, actors: Sequence[Any], *, owns_ray: bool = False) -> None:
        actors = list(actors)
        if not actors:
            raise ArgumentError("a sharded memory needs at least one shard")
        self._actors = actors
        self._owns_ray = owns_ray
        self._closed = False

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
        address: str | None = None,
        num_cpus: int = 2,
        object_store_memory: int = OBJECT_STORE_BYTES,
        temp_dir: str | os.PathLike[str] | None = None,
        **store_options: object,
    ) -> RayShards:
        """Open (or create) ``count`` shards in ``root/shard-0000`` ..., one actor each.

        Starts Ray first unless it is running (:func:`init_ray` with ``address``,
        ``num_cpus``, ``object_store_memory``, ``temp_dir``). ``root`` must be a
        path every node running an actor sees (on one machine: any local path).
        ``encoder`` and ``clock`` are pickled to the actors. Returns when every
        shard has opened its store (an error opening one is raised here).
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ArgumentError(f"count must be an integer >= 1, got {count!r}")
        root = Path(root).absolute()
        started = init_ray(
            root,
            address=address,
            num_cpus=num_cpus,
            object_store_memory=object_store_memory,
            temp_dir=temp_dir,
        )
        options: dict[str, Any] = dict(
            code_dim=code_dim, encoder=encoder, readonly=readonly, clock=clock, **store_options
        )
        # Any: ray's stubs type the decorated class as the plain one (no .remote).
        remote: Any = _ShardActor
        actors = [remote.remote(i, str(shard_dir(root, i)), options) for i in range(count)]
        shards = cls(actors, owns_ray=started)
        try:
            shards.map("info", {s: () for s in range(count)})  # each store is open
        except BaseException:
            shards.close()
            raise
        return shards

    @property
    def size(self) -> int:
        return len(self._actors)

    def actor(self, shard: int) -> Any:
        """The actor handle of shard ``shard`` (to kill it in a fault trial, say)."""
        return self._actors[shard]

    def call(self, shard: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._get(shard, self._submit(shard, method, args, kwargs))

    def map(
        self,
        method: str,
        args: Mapping[int, Sequence[Any]],
        kwargs: Mapping[str, Any] | None = None,
    ) -> dict[int, Any]:
        kw = dict(kwargs or {})
        refs = {s: self._submit(s, method, a, kw) for s, a in sorted(args.items())}
        # Wait for every reply before raising (no call is left running behind an error).
        ray.wait(list(refs.values()), num_returns=len(refs))
        return {s: self._get(s, ref) for s, ref in refs.items()}

    def _submit(self, shard: int, method: str, args: Sequence[Any], kwargs: Any) -> Any:
        if self._closed:
            raise ArgumentError("these shards are closed")
        actor = self._actors[shard]
        side = actor.read if method in READ_METHODS else actor.write
        return side.remote(method, tuple(args), dict(kwargs))

    @staticmethod
    def _get(shard: int, ref: Any) -> Any:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            # The shard server raised: the caller sees its exception, not Ray's wrapper.
            cause = e.cause
            if isinstance(cause, Exception):
                raise cause from None
            raise
        except ray.exceptions.RayActorError as e:
            raise ShardUnavailableError(f"shard {shard}'s actor died during the call: {e}") from e

    def close(self) -> None:
        """Stop the actors (their stores close with their processes) and, if
        :meth:`open` started Ray, shut it down."""
        if self._closed:
            return
        self._closed = True
        if not ray.is_initialized():
            return  # Ray was shut down under them: the actors are gone with it
        # Close every store (its write transaction ends cleanly), then end the actors.
        refs = [a.write.remote("close", (), {}) for a in self._actors]
        ray.wait(refs, num_returns=len(refs), timeout=_CLOSE_WAIT_S)
        for a in self._actors:
            ray.kill(a, no_restart=True)
        if self._owns_ray:
            ray.shutdown()

    def __enter__(self) -> RayShards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
