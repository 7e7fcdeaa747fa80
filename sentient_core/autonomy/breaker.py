"""A circuit breaker for the model: after repeated failures, stop waiting on it for a while.

A hung or failing model must not cost every question its full deadline.
:class:`CircuitBreaker` counts consecutive failures; at ``failures`` it
*opens*: for ``cool_down_s`` seconds the chaperone does not call the model at
all and answers from the offline corpus at once. When the cool-down is over it
is *half-open*: the next call is a trial — success *closes* it, failure opens
it again for another cool-down. The chaperone and the judge share one breaker
(one model): a model that hangs on questions is not waited on for verdicts
either. Every transition is published as a ``model.breaker`` event
(:meth:`CircuitBreaker.enter`, :meth:`failed`, :meth:`succeeded`), so the live
view says what is going on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

from sentient_core.errors import ArgumentError
from sentient_core.events import BreakerEvent, Emitter

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half-open"]


class CircuitBreaker:
    """Closed → open after ``failures`` consecutive failures → half-open after the cool-down.

    Parameters
    ----------
    failures : int
        Consecutive failures that open the breaker (>= 1).
    cool_down_s : float
        Seconds it stays open before a trial call is allowed.
    clock : callable
        Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        failures: int = 3,
        cool_down_s: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ArgumentError(f"failures must be an integer >= 1, got {failures!r}")
        if not cool_down_s >= 0:
            raise ArgumentError(f"cool_down_s must be >= 0, got {cool_down_s!r}")
        self.failures = failures
        self.cool_down_s = float(cool_down_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._open_until: float | None = None
        self._trial = False
        self.opened = 0
        self.skipped = 0

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> BreakerState:
        if self._open_until is None:
            return "closed"
        return "open" if self._clock() < self._open_until else "half-open"

    def remaining_s(self) -> float:
        """Seconds of cool-down left (0 unless open)."""
        with self._lock:
            if self._open_until is None:
                return 0.0
            return max(0.0, self._open_until - self._clock())

    def allow(self) -> tuple[bool, BreakerState | None]:
        """May the model be called now? And the state it moved to, if it moved.

        Open: no (counted in :attr:`skipped`). Half-open: yes, once (the trial);
        further callers wait for the trial's outcome as if open.
        """
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return True, None
            if state == "half-open" and not self._trial:
                self._trial = True
                return True, "half-open"
            self.skipped += 1
            return False, None

    def success(self) -> BreakerState | None:
        """A call succeeded; returns ``"closed"`` if that closed the breaker."""
        with self._lock:
            self._consecutive = 0
            if self._open_until is None:
                return None
            self._open_until, self._trial = None, False
            return "closed"

    def failure(self) -> BreakerState | None:
        """A call failed; returns ``"open"`` if that opened the breaker."""
        with self._lock:
            self._consecutive += 1
            trial, self._trial = self._trial, False
            if trial or (self._open_until is None and self._consecutive >= self.failures):
                self._open_until = self._clock() + self.cool_down_s
                self.opened += 1
                return "open"
            return None

    # -------------------------------------------------- with events (chaperone, judge)
    def enter(self, emit: Emitter | None) -> bool:
        """:meth:`allow`, publishing the move to half-open (a trial call) as an event."""
        allowed, moved = self.allow()
        if moved is not None and emit is not None:
            emit.emit(BreakerEvent, state=moved, reason="cool-down over: one trial call")
        return allowed

    def failed(self, emit: Emitter | None, message: str) -> None:
        """:meth:`failure`, publishing the breaker opening (with ``message``) as an event."""
        if self.failure() == "open" and emit is not None:
            emit.emit(
                BreakerEvent,
                state="open",
                failures=self.failures,
                cool_down_s=self.cool_down_s,
                reason=message[:200],
            )

    def succeeded(self, emit: Emitter | None) -> None:
        """:meth:`success`, publishing the breaker closing as an event."""
        if self.success() == "closed" and emit is not None:
            emit.emit(BreakerEvent, state="closed")
