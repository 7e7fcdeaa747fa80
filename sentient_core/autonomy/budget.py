"""The autonomy budget: five spend caps, a kill switch, spend per UTC day (SPEC §4).

The learner asks the budget before each tick (:meth:`Budget.check_tick`) and
before each initiative (:meth:`Budget.check_initiative`), and commits what the
initiative really spent afterwards (:meth:`Budget.commit`). Caps (0 = unlimited):

==========================  =======  ==========================================
cap                         default  environment override
==========================  =======  ==========================================
``daily_tokens``            20000    ``SENTIENT_AUTONOMOUS_DAILY_TOKENS``
``daily_tool_calls``        50       ``SENTIENT_AUTONOMOUS_DAILY_TOOL_CALLS``
``per_tick_tokens``         16000    ``SENTIENT_AUTONOMOUS_PER_TICK_TOKENS``
``per_tick_initiatives``    8        ``SENTIENT_AUTONOMOUS_PER_TICK_INITIATIVES``
``per_initiative_tokens``   2000     ``SENTIENT_AUTONOMOUS_PER_INITIATIVE_TOKENS``
==========================  =======  ==========================================

Kill switch: ``SENTIENT_AUTONOMOUS=0`` (or ``false``/``off``/``no``) refuses
every tick and initiative. It is read from the environment mapping at every
check, so flipping it stops a running learner at its next check.

Spend of one UTC day is one :class:`DaySpend` record in the store's ``budget``
sub-database under ``b"day:YYYY-MM-DD"``; a new UTC day starts from zero.
Every commit is one write transaction that re-reads the record inside the
transaction, so no increment is lost.

Errors: :class:`BudgetConfigError` (a ``ValueError``) for a bad cap or a bad
environment value (the message names the variable); ``ValueError`` for a bad
argument (negative spend, unknown status).
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.store import RecordCodec, Store

__all__ = [
    "BUDGET_DB",
    "CAP_ENV",
    "CAP_NAMES",
    "KILL_SWITCH_ENV",
    "Budget",
    "BudgetCaps",
    "BudgetConfigError",
    "DaySpend",
    "Decision",
    "autonomy_enabled",
    "day_key",
    "utc_day",
]

BUDGET_DB = "budget"
KILL_SWITCH_ENV = "SENTIENT_AUTONOMOUS"
_KILL_VALUES = frozenset({"0", "false", "off", "no"})

CAP_NAMES: tuple[str, ...] = (
    "daily_tokens",
    "daily_tool_calls",
    "per_tick_tokens",
    "per_tick_initiatives",
    "per_initiative_tokens",
)
"""The five caps, in the order they are checked (after the kill switch)."""

CAP_ENV: dict[str, str] = {name: f"SENTIENT_AUTONOMOUS_{name.upper()}" for name in CAP_NAMES}
"""Environment variable overriding each cap."""

# 1e12 tokens is "unbounded in practice"; the bound only keeps garbage out.
Cap = Annotated[int, msgspec.Meta(ge=0, le=10**12)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]
Day = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]
Status = Literal["done", "failed", "skipped"]


class BudgetConfigError(ArgumentError):
    """A cap is negative or not an integer (names the cap or environment variable)."""


class BudgetCaps(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The five spend caps; 0 means unlimited.

    Attributes
    ----------
    daily_tokens, daily_tool_calls : int
        Per UTC day.
    per_tick_tokens, per_tick_initiatives : int
        Per learner tick (between two :meth:`Budget.begin_tick` calls).
    per_initiative_tokens : int
        Largest estimate one initiative may ask for.
    """

    daily_tokens: Cap = 20000
    daily_tool_calls: Cap = 50
    per_tick_tokens: Cap = 16000
    per_tick_initiatives: Cap = 8
    per_initiative_tokens: Cap = 2000

    def __post_init__(self) -> None:
        # msgspec checks Meta bounds only when decoding; a cap built in code is checked here.
        for name in CAP_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**12:
                raise BudgetConfigError(
                    f"budget cap {name} must be an integer in [0, 10**12] (0 = unlimited),"
                    f" got {value!r}"
                )

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **defaults: int) -> BudgetCaps:
        """Caps from ``defaults`` (else the built-in defaults), overridden by ``env``.

        An unset or blank variable keeps the default.

        Raises
        ------
        BudgetConfigError
            A variable is not a non-negative integer (the message names it).
        """
        values: dict[str, int] = dict(defaults)
        for name, var in CAP_ENV.items():
            raw = env.get(var)
            if raw is None or not raw.strip():
                continue
            try:
                value = int(raw.strip(), 10)
            except ValueError:
                raise BudgetConfigError(
                    f"{var}={raw!r} is not an integer (a token or call count; 0 = unlimited)"
                ) from None
            if not 0 <= value <= 10**12:
                raise BudgetConfigError(f"{var}={raw!r} must be in [0, 10**12] (0 = unlimited)")
            values[name] = value
        return cls(**values)


def autonomy_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """False when the kill switch ``SENTIENT_AUTONOMOUS`` is 0/false/off/no (any case)."""
    return env.get(KILL_SWITCH_ENV, "").strip().lower() not in _KILL_VALUES


class Decision(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The budget's answer to a check.

    Attributes
    ----------
    allowed : bool
    cap : str
        Which rule refused (``"kill_switch"`` or a name in :data:`CAP_NAMES`);
        ``""`` when allowed.
    reason : str
        Human-readable explanation with the numbers.
    """

    allowed: bool
    cap: str = ""
    reason: str = ""


_ALLOWED = Decision(allowed=True, reason="within budget")


class DaySpend(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What autonomy spent on one UTC day (the persisted record).

    Attributes
    ----------
    v : int
        Record schema version (1).
    day : str
        ``YYYY-MM-DD`` (UTC).
    tokens, tool_calls : int
        Committed spend.
    initiatives_done, initiatives_failed, initiatives_skipped : int
        Committed initiatives by status (a skipped one never adds spend).
    """

    v: int = 1
    day: Day
    tokens: NonNeg = 0
    tool_calls: NonNeg = 0
    initiatives_done: NonNeg = 0
    initiatives_failed: NonNeg = 0
    initiatives_skipped: NonNeg = 0


DAY_SPEND = RecordCodec(DaySpend, 1, "budget day record")


def utc_day(t: float) -> str:
    """The UTC calendar day of unix time ``t`` as ``YYYY-MM-DD``."""
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def day_key(day: str) -> bytes:
    """Key of a day's :class:`DaySpend` in the ``budget`` sub-database."""
    return b"day:" + day.encode("ascii")


def _over(spent: int, extra: int, cap: int) -> bool:
    """True if ``cap`` is set and is already used up or would be exceeded by ``extra``."""
    return cap > 0 and (spent >= cap or spent + extra > cap)


class Budget:
    """Per-UTC-day and per-tick spend against :class:`BudgetCaps`, persisted in a store.

    Parameters
    ----------
    store : Store or None
        Where spend is persisted (``budget`` sub-database); None keeps it in memory.
    caps : BudgetCaps, optional
        Defaults to ``BudgetCaps.from_env(env)``.
    clock : callable
        Unix time source; the UTC day is taken from it (injectable for tests).
    env : mapping
        Where the kill switch is read, at every check.

    Notes
    -----
    Per-tick counters count the initiatives committed as ``done`` or
    ``failed`` since the last :meth:`begin_tick` (a skipped initiative did not
    run, so it does not use a slot), and their tokens. Commit after every
    initiative that was allowed, or the per-tick caps cannot see it.
    """

    def __init__(
        self,
        store: Store | None = None,
        caps: BudgetCaps | None = None,
        *,
        clock: Callable[[], float] = time.time,
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.store = store
        self.caps = BudgetCaps.from_env(env) if caps is None else caps
        self._clock = clock
        self._env = env
        self._lock = threading.Lock()
        self._memory: dict[str, DaySpend] = {}
        self.ticks = 0
        self.tick_tokens = 0
        self.tick_initiatives = 0
        # Refusals per rule: a silent veto shows up as a number (SPEC §5).
        self.refusals: dict[str, int] = dict.fromkeys(("kill_switch", *CAP_NAMES), 0)

    # -- reading -----------------------------------------------------------------------------

    def enabled(self) -> bool:
        """Whether the kill switch allows autonomy right now."""
        return autonomy_enabled(self._env)

    def day(self) -> str:
        """The current UTC day (from the injected clock)."""
        return utc_day(self._clock())

    def spend_on(self, day: str) -> DaySpend:
        """The spend recorded for ``day`` (zero if nothing was committed that day)."""
        if self.store is None:
            return self._memory.get(day) or DaySpend(day=day)
        with self.store.read() as txn:
            raw = txn.get(BUDGET_DB, day_key(day))
            return (
                DaySpend(day=day)
                if raw is None
                else DAY_SPEND.decode(raw, where=f"budget/day:{day}")
            )

    def today(self) -> DaySpend:
        """The spend of the current UTC day."""
        return self.spend_on(self.day())

    def remaining(self) -> dict[str, int | None]:
        """What is left under each cap now (None = unlimited).

        ``per_initiative_tokens`` is the cap itself (it does not get used up).
        """
        caps, spent = self.caps, self.today()
        used = {
            "daily_tokens": spent.tokens,
            "daily_tool_calls": spent.tool_calls,
            "per_tick_tokens": self.tick_tokens,
            "per_tick_initiatives": self.tick_initiatives,
            "per_initiative_tokens": 0,
        }
        out: dict[str, int | None] = {}
        for name in CAP_NAMES:
            cap = getattr(caps, name)
            out[name] = None if cap == 0 else max(0, cap - used[name])
        return out

    def report(self) -> dict[str, Any]:
        """Today's spend, the caps, what remains and the kill switch, JSON-ready."""
        return {
            "enabled": self.enabled(),
            "today": msgspec.to_builtins(self.today()),
            "caps": msgspec.to_builtins(self.caps),
            "remaining": self.remaining(),
            "tick": {
                "ticks": self.ticks,
                "tokens": self.tick_tokens,
                "initiatives": self.tick_initiatives,
            },
            "refusals": dict(self.refusals),
        }

    # -- checks ------------------------------------------------------------------------------

    def begin_tick(self) -> None:
        """Start a new tick: reset the per-tick counters."""
        with self._lock:
            self.ticks += 1
            self.tick_tokens = 0
            self.tick_initiatives = 0

    def check_tick(self) -> Decision:
        """May a tick run? Refused by the kill switch or an exhausted daily cap.

        Per-tick caps start fresh at :meth:`begin_tick`, so they are checked
        per initiative only.
        """
        if not self.enabled():
            return self._refuse("kill_switch", f"autonomy is switched off ({KILL_SWITCH_ENV}=0)")
        caps, spent = self.caps, self.today()
        if _over(spent.tokens, 0, caps.daily_tokens):
            return self._refuse(
                "daily_tokens",
                f"daily token cap used up on {spent.day}: {spent.tokens} of {caps.daily_tokens}",
            )
        if _over(spent.tool_calls, 0, caps.daily_tool_calls):
            return self._refuse(
                "daily_tool_calls",
                f"daily tool-call cap used up on {spent.day}:"
                f" {spent.tool_calls} of {caps.daily_tool_calls}",
            )
        return _ALLOWED

    def check_initiative(self, estimated_tokens: int, tool_calls: int = 1) -> Decision:
        """May an initiative estimated at ``estimated_tokens`` and ``tool_calls`` run?

        Order: kill switch, daily tokens, daily tool calls, per-tick tokens,
        per-tick initiatives, per-initiative tokens. A cap refuses when it is
        used up or when this initiative's estimate would exceed it.

        Raises
        ------
        ValueError
            Negative ``estimated_tokens`` or ``tool_calls``.
        """
        estimated_tokens, tool_calls = _counts(estimated_tokens, tool_calls)
        if not self.enabled():
            return self._refuse("kill_switch", f"autonomy is switched off ({KILL_SWITCH_ENV}=0)")
        caps, spent = self.caps, self.today()
        if _over(spent.tokens, estimated_tokens, caps.daily_tokens):
            return self._refuse(
                "daily_tokens",
                f"daily token cap: {spent.tokens} of {caps.daily_tokens} spent on {spent.day},"
                f" this initiative needs ~{estimated_tokens}",
            )
        if _over(spent.tool_calls, tool_calls, caps.daily_tool_calls):
            return self._refuse(
                "daily_tool_calls",
                f"daily tool-call cap: {spent.tool_calls} of {caps.daily_tool_calls} used on"
                f" {spent.day}, this initiative needs {tool_calls}",
            )
        with self._lock:
            tick_tokens, tick_initiatives = self.tick_tokens, self.tick_initiatives
        if _over(tick_tokens, estimated_tokens, caps.per_tick_tokens):
            return self._refuse(
                "per_tick_tokens",
                f"per-tick token cap: {tick_tokens} of {caps.per_tick_tokens} spent this tick,"
                f" this initiative needs ~{estimated_tokens}",
            )
        if caps.per_tick_initiatives > 0 and tick_initiatives >= caps.per_tick_initiatives:
            return self._refuse(
                "per_tick_initiatives",
                f"per-tick initiative cap: {tick_initiatives} of {caps.per_tick_initiatives}"
                " already ran this tick",
            )
        if caps.per_initiative_tokens > 0 and estimated_tokens > caps.per_initiative_tokens:
            return self._refuse(
                "per_initiative_tokens",
                f"per-initiative token cap: this initiative needs ~{estimated_tokens},"
                f" the cap is {caps.per_initiative_tokens}",
            )
        return _ALLOWED

    def _refuse(self, cap: str, reason: str) -> Decision:
        with self._lock:
            self.refusals[cap] += 1
        return Decision(allowed=False, cap=cap, reason=reason)

    # -- committing --------------------------------------------------------------------------

    def commit(self, spent_tokens: int, tool_calls: int, status: Status) -> DaySpend:
        """Record what an initiative spent, in one write transaction.

        Spend is added always when ``done``, when ``failed`` only if something
        was spent (tokens or tool calls), never when ``skipped``. The status is
        counted in every case. ``done`` and ``failed`` initiatives use a
        per-tick slot.

        Returns
        -------
        DaySpend
            The day's record after the commit.

        Raises
        ------
        ValueError
            Unknown ``status`` or negative spend.
        """
        if status not in ("done", "failed", "skipped"):
            raise ArgumentError(f"status must be 'done', 'failed' or 'skipped', got {status!r}")
        spent_tokens, tool_calls = _counts(spent_tokens, tool_calls)
        counts = status == "done" or (status == "failed" and (spent_tokens or tool_calls))
        add_tokens, add_calls = (spent_tokens, tool_calls) if counts else (0, 0)
        day = self.day()

        def bump(old: DaySpend) -> DaySpend:
            return msgspec.structs.replace(
                old,
                tokens=old.tokens + add_tokens,
                tool_calls=old.tool_calls + add_calls,
                initiatives_done=old.initiatives_done + (status == "done"),
                initiatives_failed=old.initiatives_failed + (status == "failed"),
                initiatives_skipped=old.initiatives_skipped + (status == "skipped"),
            )

        with self._lock:
            if self.store is None:
                new = bump(self._memory.get(day) or DaySpend(day=day))
                self._memory[day] = new
            else:
                key = day_key(day)

                def write(txn) -> DaySpend:
                    raw = txn.get(BUDGET_DB, key)
                    old = (
                        DaySpend(day=day)
                        if raw is None
                        else DAY_SPEND.decode(raw, where=f"budget/day:{day}")
                    )
                    record = bump(old)
                    txn.put(BUDGET_DB, key, DAY_SPEND.encode(record))
                    return record

                new = self.store.write(write)
            if status != "skipped":
                self.tick_initiatives += 1
                self.tick_tokens += add_tokens
        return new


def _counts(tokens: int, tool_calls: int) -> tuple[int, int]:
    """Validate a token and a tool-call count (any integral type; numpy ints too)."""
    out = []
    for name, value in (("tokens", tokens), ("tool_calls", tool_calls)):
        try:
            number = -1 if isinstance(value, bool) else operator.index(value)
        except TypeError:
            number = -1
        if number < 0:
            raise ArgumentError(f"{name} must be a non-negative integer, got {value!r}")
        out.append(number)
    return out[0], out[1]
