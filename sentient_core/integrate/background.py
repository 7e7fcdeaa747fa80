"""Committing a batch on a background thread while the next one is prepared.

A durable commit spends most of its time outside Python (LMDB's page writes and
commit, the code file's ``fdatasync``, the index kernels), which release the GIL:
on two cores the caller can read, extract and encode the next batch meanwhile.

:class:`Committer` keeps at most ONE batch in flight, on one thread, so batches
commit in the order they were handed over and LMDB's one-writer rule holds. The
caller hands a batch over with :meth:`Committer.submit` and collects it with
:meth:`Committer.wait`, which runs the batch's ``done`` callback on the caller's
thread (everything the caller keeps in RAM is changed there, never on the
commit thread) or raises the commit's error there: nothing is lost or
swallowed. ``submit`` waits for the batch before it, so a caller that waits
before changing what the next batch depends on (the observer) sees exactly
the order of a synchronous run.

With ``background=False`` the batch commits inside :meth:`submit` (the
synchronous reference the tests compare against).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["Committer"]


class Committer:
    """One batch in flight at a time, committed in order (see the module docstring).

    Parameters
    ----------
    background : bool
        Commit on a background thread (True) or inside :meth:`submit`.
    """

    def __init__(self, background: bool = True) -> None:
        self.background = background
        self._pool: ThreadPoolExecutor | None = None
        self._inflight: tuple[Future, Callable[[Any, float], None]] | None = None
        #: Seconds the caller spent blocked in :meth:`wait` for a background commit
        #: (what overlapping did not hide; 0 when committing in line).
        self.waited = 0.0

    def __enter__(self) -> Committer:
        return self

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        self.close(failing=error)

    @property
    def busy(self) -> bool:
        """Whether a batch is in flight."""
        return self._inflight is not None

    def submit(self, commit: Callable[[], Any], done: Callable[[Any, float], None]) -> None:
        """Commit a batch: ``commit()`` (the write transaction), then, on the caller's
        thread, ``done(result, seconds)`` with the seconds ``commit`` took.

        Waits for the batch in flight first (raising its error, if it failed,
        before this batch is handed over).
        """
        self.wait()
        if not self.background:
            result, seconds = _timed(commit)
            done(result, seconds)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentient-commit")
        self._inflight = (self._pool.submit(_timed, commit), done)

    def wait(self) -> None:
        """Wait for the batch in flight (if any) and run its ``done``; or raise its error."""
        if self._inflight is None:
            return
        future, done = self._inflight
        self._inflight = None
        t = time.perf_counter()
        try:
            result, seconds = future.result()
        finally:
            self.waited += time.perf_counter() - t
        done(result, seconds)

    def close(self, *, failing: BaseException | None = None) -> None:
        """Wait for the batch in flight and stop the thread.

        ``failing``: the error the caller is raising. The batch in flight is still
        waited for (never left running); if it failed too, its error is added to
        ``failing`` as a note instead of replacing it.
        """
        try:
            try:
                self.wait()
            except BaseException as err:
                if failing is None:
                    raise
                failing.add_note(f"and the batch committing in the background failed: {err!r}")
        finally:
            self._inflight = None
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t
