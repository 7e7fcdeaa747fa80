"""The observer's recent history: coherence and SMF entropy after each of the last ticks.

Two ring buffers of ``capacity`` values. The tick kernel writes straight into
them when the ticks' slots are contiguous, otherwise into scratch arrays that
are then copied in (:meth:`History.window`, :meth:`History.advance`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["History"]


class History:
    """Coherence and SMF entropy of the last ``capacity`` ticks, oldest first.

    Not thread-safe: the observer calls it under its lock.
    """

    __slots__ = ("_coh", "_count", "_ent", "_pos", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._coh = np.zeros(capacity)
        self._ent = np.zeros(capacity)
        self._pos = 0
        self._count = 0

    def window(self, n: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """Where the values of ``n`` ticks go: (coherence, entropy, direct).

        Only the last ``capacity`` ticks are kept, so the arrays hold
        ``min(n, capacity)`` values. ``direct``: they are views of the rings
        (no copy needed); else scratch arrays for :meth:`advance` to copy in.
        """
        size = self.capacity
        m = n if n < size else size
        pos = self._pos
        if pos + m <= size:
            return self._coh[pos : pos + m], self._ent[pos : pos + m], True
        return np.empty(m), np.empty(m), False

    def advance(self, coh: np.ndarray, ent: np.ndarray, direct: bool) -> None:
        """Take in the values written to :meth:`window`'s arrays."""
        size = self.capacity
        m = coh.shape[0]
        pos = self._pos
        if not direct:
            head = size - pos
            self._coh[pos:] = coh[:head]
            self._coh[: m - head] = coh[head:]
            self._ent[pos:] = ent[:head]
            self._ent[: m - head] = ent[head:]
        self._pos = (pos + m) % size
        self._count = min(size, self._count + m)

    def coherence(self) -> np.ndarray:
        """Recorded coherence values, oldest first (a copy)."""
        return self._values(self._coh)

    def entropy(self) -> np.ndarray:
        """Recorded entropy values, oldest first (a copy)."""
        return self._values(self._ent)

    def restore(self, coh: np.ndarray, ent: np.ndarray) -> None:
        """Start from saved values (oldest first, at most ``capacity`` each)."""
        count = coh.shape[0]
        self._coh[:count] = coh
        self._ent[:count] = ent
        self._count = count
        self._pos = count % self.capacity

    def _values(self, ring: np.ndarray) -> np.ndarray:
        if self._count < self.capacity:
            return ring[: self._count].copy()
        return np.concatenate([ring[self._pos :], ring[: self._pos]])
