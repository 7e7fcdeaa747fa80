"""The observer's background clock: ``tick(n)`` at a fixed rate from one daemon thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Ticker"]


class Ticker:
    """Runs ``tick(n)`` at a fixed rate in a background thread; at most one such thread.

    When the thread falls behind, it runs the missed ticks in one call, at most
    one second's worth; older missed ticks are dropped.

    Parameters
    ----------
    name : str
        The thread's name.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_event: threading.Event | None = None

    @property
    def running(self) -> bool:
        """Whether the thread is running."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self, rate: float, tick: Callable[[int], object]) -> bool:
        """Call ``tick`` ``rate`` times per second; False (a no-op) if already running."""
        with self._lock:
            if self.running:
                return False
            stop_event = threading.Event()
            thread = threading.Thread(
                target=self._run, args=(rate, stop_event, tick), name=self._name, daemon=True
            )
            self._stop_event = stop_event
            self._thread = thread
            thread.start()
            return True

    def stop(self, timeout: float | None) -> None:
        """Stop the thread (if any) and wait for it to finish."""
        # Join under the lock so that a concurrent start() cannot overlap the
        # old thread with a new one (the thread never takes this lock).
        with self._lock:
            thread, stop_event = self._thread, self._stop_event
            self._thread = None
            self._stop_event = None
            if thread is not None and stop_event is not None:
                stop_event.set()
                if thread is not threading.current_thread():
                    thread.join(timeout)

    @staticmethod
    def _run(rate: float, stop_event: threading.Event, tick: Callable[[int], object]) -> None:
        period = 1.0 / rate
        max_batch = max(1, int(rate))
        due = time.monotonic() + period
        while not stop_event.is_set():
            wait = due - time.monotonic()
            if wait > 0.0 and stop_event.wait(wait):
                break
            owed = 1 + int((time.monotonic() - due) * rate)
            if owed > max_batch:
                owed = max_batch
                due = time.monotonic() + period
            else:
                due += owed * period
            tick(owed)
