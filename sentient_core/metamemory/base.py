"""What every meta-memory component shares: the error tree, counters and event publishing.

Errors
------
::

    MetaMemoryError              base class (a SentientError)
    ├── UnknownRecordError       no debt / wisdom record with that id (also a KeyError)
    ├── DebtStateError           the debt is not in a state that allows this
    ├── IllegalTransitionError   a wisdom transition the state machine does not have
    │   └── GateNotMetError      a legal transition whose conditions do not hold
    ├── CreditConflictError      a trace changed between reading and writing credit
    └── ReplayError              scorer snapshots that do not chain or reproduce

Bad argument values raise :class:`~sentient_core.errors.ArgumentError`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

from sentient_core.errors import ArgumentError, SentientError

if TYPE_CHECKING:
    from sentient_core.events import Emitter

__all__ = [
    "Component",
    "Counts",
    "CreditConflictError",
    "DebtStateError",
    "GateNotMetError",
    "IllegalTransitionError",
    "MetaMemoryError",
    "ReplayError",
    "UnknownRecordError",
    "check_unit",
    "publish",
]

Component = Literal["surprise", "credit", "sources", "debts", "wisdom", "scorer"]


class MetaMemoryError(SentientError):
    """Base class of the errors raised by :mod:`sentient_core.metamemory`."""


class UnknownRecordError(MetaMemoryError, KeyError):
    """No record (debt, wisdom) with the given id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DebtStateError(MetaMemoryError):
    """The debt's status does not allow the operation (e.g. reopening an open debt)."""


class IllegalTransitionError(MetaMemoryError):
    """A wisdom state change that the state machine does not have."""


class GateNotMetError(IllegalTransitionError):
    """A legal wisdom transition whose conditions (episodes, score, debts …) do not hold."""


class CreditConflictError(MetaMemoryError):
    """A trace's strength or status changed between planning and writing a credit batch."""


class ReplayError(MetaMemoryError):
    """Scorer snapshots that do not form a chain, or a replay that does not reproduce them."""


class Counts:
    """Named counters of one component (ints, and floats for sums such as losses).

    Every stage exposes what it did, so a silent veto shows up as a number
    (SPEC §5: a learning loop is a product of AND-gates).
    """

    __slots__ = ("_values",)

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        self._values: dict[str, float] = dict.fromkeys(names, 0)

    def add(self, name: str, n: float = 1) -> None:
        """Add ``n`` to counter ``name`` (created at 0)."""
        self._values[name] = self._values.get(name, 0) + n

    def set(self, name: str, value: float) -> None:
        """Set counter ``name`` (for gauges such as the last loss)."""
        self._values[name] = value

    def get(self, name: str) -> float:
        """The value of ``name`` (0 if never counted)."""
        return self._values.get(name, 0)

    def as_dict(self) -> dict[str, float]:
        """A copy of every counter, sorted by name."""
        return dict(sorted(self._values.items()))


def check_unit(name: str, value: object) -> float:
    """``value`` as a float in [0, 1], or ArgumentError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentError(f"{name} must be a number in [0, 1], got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ArgumentError(f"{name} must be in [0, 1], got {value!r}")
    return x


def publish(
    emit: Emitter | None,
    component: Component,
    action: str,
    *,
    subject: str = "",
    domain: str = "",
    before: float = 0.0,
    after: float = 0.0,
    detail: str = "",
) -> None:
    """Publish a :class:`~sentient_core.events.MetaMemoryEvent` if there is an emitter."""
    if emit is None:
        return
    from sentient_core.events import MetaMemoryEvent

    emit.emit(
        MetaMemoryEvent,
        component=component,
        action=action,
        subject=subject,
        domain=domain,
        before=float(before),
        after=float(after),
        detail=detail,
    )
