"""What the server says about itself when a resource runs out.

A full disk, a map that cannot grow, too many open files: each is reported
once as one log line (never a traceback), kept as a *reason* that
``/health`` and ``/learning/status`` show (the server is then ``degraded``),
and the request that met it gets a 503 naming it. A condition that passes by
itself (file descriptors freed) is shown for :data:`TRANSIENT_S` seconds
after it was last seen; a lasting one (the store cannot be written) stays
until a learner session starts again and runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sentient_core.server.security import LOG

__all__ = ["TRANSIENT_S", "Health"]

TRANSIENT_S = 60.0


class Health:
    """Reasons the server is degraded, by where they were met.

    Parameters
    ----------
    clock : callable
        Seconds (monotonic).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._reasons: dict[str, tuple[str, float | None]] = {}  # where -> (reason, expiry)
        self.reported = 0

    def report(self, where: str, reason: str, *, transient: bool = False) -> None:
        """Record that ``where`` met ``reason``; logs one line when ``where`` was not
        degraded yet (the reason's wording may change while it lasts — a disk's free
        megabytes — without a new line; ``/health`` shows the latest)."""
        expiry = self._clock() + TRANSIENT_S if transient else None
        with self._lock:
            old = self._reasons.get(where)
            self._reasons[where] = (reason, expiry)
            new = old is None
            self.reported += 1
        if new:
            LOG.error("%s: %s", where, reason)

    def clear(self, where: str) -> None:
        """``where`` works again."""
        with self._lock:
            self._reasons.pop(where, None)

    def reasons(self) -> tuple[str, ...]:
        """``where: reason`` for each live reason, sorted."""
        now = self._clock()
        with self._lock:
            for where in [
                w for w, (_, exp) in self._reasons.items() if exp is not None and now >= exp
            ]:
                del self._reasons[where]
            return tuple(f"{w}: {r}" for w, (r, _) in sorted(self._reasons.items()))
