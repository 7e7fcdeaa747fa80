"""Source weights per (domain, source): punished when a source is wrong, rewarded when it corrects.

Rules (SPEC §5), applied to each surprise event of domain ``d`` whose wrong
source is ``x`` (both as :func:`~sentient_core.metamemory.surprise.source_key`)
and whose magnitude is ``s``:

* ``s < 0.25``: ignored (counted on the source's record, nothing else).
* otherwise the event enters ``d``'s window of recent events (the wrong
  source of each, oldest dropped after :data:`WINDOW_MAX`), and
  ``x`` is punished if ``s ≥ 0.55``, or if ``0.25 ≤ s < 0.55`` and ``x``
  failed at least twice among ``d``'s last 8 events (this one included) —
  but only once at least two *different passages* of ``x`` (the events'
  wrong traces) were wrong in ``d``: a wrong passage is the passage's own
  failure (its credit and strength, :mod:`~sentient_core.metamemory.credit`),
  and rolls up to its file, page or model only when another of its passages
  fails too, so a right passage is not punished for a wrong neighbour. An
  event naming no wrong trace is about the source itself. Otherwise the
  failure is only noted.
* the correcting source (when the event names one other than ``x``) is
  rewarded if ``s ≥ 0.30``.

Step sizes (all in :class:`SourceRules`, the one place they live):
multiplicative, ``w ← w·(1 − 0.25·s)`` for a punishment and
``w ← min(2, w·(1 + 0.10·s))`` for a reward. Multiplicative steps keep ``w`` in
(0, 2] without clipping at 0 and make a change relative to the trust already
there; a punishment is 2.5 times a reward of the same ``s``, so a source must
correct others about 2.5 times for each time it is wrong to hold its weight
(ten failures at ``s = 1`` take 1.0 to 0.056). Weight never reaches exactly 0:
silencing a source is the caller's cut-off, not an accident of arithmetic.
Unknown pairs weigh 1.0.

Storage: the ``sources`` sub-database holds one :class:`SourceWeight` per pair
under ``b"w/" + digest(domain) + digest(source)`` (:data:`WEIGHTS`) and one
:class:`DomainWindow` per domain under ``b"d/" + digest(domain)`` (:data:`WINDOWS`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.metamemory.base import Counts, publish
from sentient_core.metamemory.surprise import check_event, source_key
from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime
from sentient_core.store.table import NameTable, register

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.metamemory.surprise import SurpriseEvent
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "RULES",
    "WEIGHTS",
    "WINDOWS",
    "WINDOW_MAX",
    "DomainWindow",
    "SourceDecision",
    "SourceRules",
    "SourceWeight",
    "SourceWeights",
]

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
WINDOW_MAX = 64
"""Most entries a :class:`DomainWindow` may hold (the rules use the last 8)."""

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class SourceWeight(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How much one source is trusted in one domain.

    Attributes
    ----------
    v : int
        Record schema version (1).
    domain, source : str
        The pair (the source as a normalised source key, e.g. ``web:docs.python.org``).
    weight : float
        In [0, 2]; 1 is the default.
    punished, rewarded : int
        Times the weight went down / up.
    failures, corrections : int
        Surprise events in which this source was wrong / was the correcting one.
    ignored : int
        Events about it below the noise threshold.
    updated : float
        Unix seconds of the last change.
    last_event : int
        The last surprise event that touched it (-1: none).
    wrong_passages : tuple of int
        The distinct traces of this source that were wrong in this domain, least
        recently wrong first (at most :data:`PASSAGES_KEPT`).
    """

    v: int = 1
    domain: Name
    source: Name
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 1.0
    punished: NonNegInt = 0
    rewarded: NonNegInt = 0
    failures: NonNegInt = 0
    corrections: NonNegInt = 0
    ignored: NonNegInt = 0
    updated: UnixTime
    last_event: Annotated[int, msgspec.Meta(ge=-1)] = -1
    wrong_passages: Annotated[tuple[NonNegInt, ...], msgspec.Meta(max_length=64)] = ()


PASSAGES_KEPT = 64
"""Most wrong passages a :class:`SourceWeight` lists (the oldest are dropped)."""


class DomainWindow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The wrong source of each recent (non-ignored) surprise event of a domain, oldest first.

    Attributes
    ----------
    v : int
        Record schema version (1).
    domain : str
    failed : tuple of str
        Source keys, one per event, at most :data:`WINDOW_MAX` (oldest dropped).
    updated : float
    """

    v: int = 1
    domain: Name
    failed: Annotated[tuple[Name, ...], msgspec.Meta(max_length=WINDOW_MAX)] = ()
    updated: UnixTime


# One domain's weights are one key range: the domain's digest comes first.
WEIGHTS: NameTable[SourceWeight] = NameTable(
    "sources",
    b"w/",
    RecordCodec(SourceWeight, 1, "source weight"),
    fields=("domain", "source"),
    label="sources",
)
"""Every :class:`SourceWeight`, by (domain, source); a pair without one weighs the default."""
WINDOWS: NameTable[DomainWindow] = NameTable(
    "sources",
    b"d/",
    RecordCodec(DomainWindow, 1, "domain window"),
    fields=("domain",),
    label="sources/window",
)
"""Every domain's :class:`DomainWindow`, by domain."""
register(WEIGHTS)
register(WINDOWS)


class SourceRules(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Thresholds and step sizes of source weighting (see the module docstring)."""

    ignore_below: Unit = 0.25
    punish_at: Unit = 0.55
    repeat_failures: Annotated[int, msgspec.Meta(ge=1)] = 2
    wrong_passages: Annotated[int, msgspec.Meta(ge=1)] = 2
    window: Annotated[int, msgspec.Meta(ge=1, le=WINDOW_MAX)] = 8
    reward_at: Unit = 0.30
    punish_rate: Unit = 0.25
    reward_rate: Unit = 0.10
    default: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = 1.0
    ceiling: Annotated[float, msgspec.Meta(gt=0.0, le=2.0)] = 2.0

    def punished(self, weight: float, s: float) -> float:
        """Weight after a punishment of magnitude ``s``."""
        return max(0.0, weight * (1.0 - self.punish_rate * s))

    def rewarded(self, weight: float, s: float) -> float:
        """Weight after a reward of magnitude ``s``."""
        return min(self.ceiling, weight * (1.0 + self.reward_rate * s))


RULES = SourceRules()
"""The rules of SPEC §5 with this module's step sizes."""

Action = Literal["punished", "noted", "ignored", "rewarded", "unrewarded"]


class SourceDecision(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one event did to one source.

    ``action``: ``punished`` / ``noted`` (a failure below the bar) / ``ignored``
    (below 0.25) for the wrong source; ``rewarded`` / ``unrewarded`` (below
    0.30) for the correcting one. ``failures`` is the wrong source's count in
    the domain's window (0 for the correcting source).
    """

    domain: str
    source: str
    action: Action
    before: float
    after: float
    failures: int = 0
    surprise_id: int = -1


class SourceWeights:
    """Per-(domain, source) weights in the ``sources`` sub-database.

    Parameters
    ----------
    store : Store
    rules : SourceRules
    emit : Emitter, optional
    clock : callable

    Counters: ``events``, ``ignored``, ``noted``, ``punished``, ``rewarded``,
    ``unrewarded``.
    """

    def __init__(
        self,
        store: Store,
        *,
        rules: SourceRules = RULES,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.rules = rules
        self._emit = emit
        self._clock = clock
        self._counts = Counts(("events", "ignored", "noted", "punished", "rewarded", "unrewarded"))

    # -- reading -----------------------------------------------------------------------------

    def weight(self, domain: str, source: str) -> float:
        """The weight of ``source`` in ``domain`` (the default for an unknown pair)."""
        with self._store.read() as txn:
            rec = WEIGHTS.get(txn, domain, source_key(source))
        return self.rules.default if rec is None else rec.weight

    def record(self, domain: str, source: str) -> SourceWeight | None:
        """The stored record of the pair, or None."""
        with self._store.read() as txn:
            return WEIGHTS.get(txn, domain, source_key(source))

    def weights(self, domain: str) -> dict[str, float]:
        """Every stored weight of ``domain``, by source key (sorted by key)."""
        with self._store.read() as txn:
            return dict(sorted((r.source, r.weight) for r in WEIGHTS.iter(txn, domain)))

    def rank(self, domain: str, sources: Iterable[str]) -> list[tuple[str, float]]:
        """``sources`` ordered by their weight in ``domain``, best first (ties keep input order).

        For the chaperone: which source to ask first. Each source is given as a
        source id and returned as given, with its weight.
        """
        given = list(dict.fromkeys(sources))
        with self._store.read() as txn:
            weighted = []
            for i, src in enumerate(given):
                rec = WEIGHTS.get(txn, domain, source_key(src))
                weighted.append((src, self.rules.default if rec is None else rec.weight, i))
        weighted.sort(key=lambda t: (-t[1], t[2]))
        return [(src, w) for src, w, _ in weighted]

    def window(self, domain: str) -> tuple[str, ...]:
        """The wrong sources of ``domain``'s recent counted events, oldest first."""
        with self._store.read() as txn:
            rec = WINDOWS.get(txn, domain)
        return () if rec is None else rec.failed

    def counters(self) -> dict[str, float]:
        """What these weights did in this process."""
        return self._counts.as_dict()

    # -- applying ----------------------------------------------------------------------------

    def observe(self, event: SurpriseEvent) -> list[SourceDecision]:
        """Apply the rules to one surprise event, in one write transaction."""
        decisions = self._store.write(lambda txn: self.observe_in(txn, event))
        self.noted(decisions)
        return decisions

    def observe_in(self, txn: Txn, event: SurpriseEvent) -> list[SourceDecision]:
        """Apply the rules inside the caller's write transaction (then call :meth:`noted`)."""
        check_event(event)
        rules = self.rules
        now = float(self._clock())
        d, s = event.domain, event.magnitude
        wrong = source_key(event.source)
        out = []
        rec = WEIGHTS.get(txn, d, wrong) or SourceWeight(
            domain=d, source=wrong, weight=rules.default, updated=now
        )
        replace = msgspec.structs.replace
        if s < rules.ignore_below:
            WEIGHTS.put(
                txn, replace(rec, ignored=rec.ignored + 1, updated=now, last_event=event.id)
            )
            out.append(
                SourceDecision(
                    domain=d,
                    source=wrong,
                    action="ignored",
                    before=rec.weight,
                    after=rec.weight,
                    surprise_id=event.id,
                )
            )
        else:
            win = WINDOWS.get(txn, d)
            failed = ((win.failed if win is not None else ()) + (wrong,))[-WINDOW_MAX:]
            WINDOWS.put(txn, DomainWindow(domain=d, failed=failed, updated=now))
            failures = failed[-rules.window :].count(wrong)
            passages = rec.wrong_passages
            if event.source_memory >= 0:
                kept = (p for p in passages if p != event.source_memory)
                passages = (*kept, event.source_memory)[-PASSAGES_KEPT:]
            # An event naming no wrong trace is about the source itself.
            rolls_up = event.source_memory < 0 or len(passages) >= rules.wrong_passages
            punish = rolls_up and (s >= rules.punish_at or failures >= rules.repeat_failures)
            after = rules.punished(rec.weight, s) if punish else rec.weight
            WEIGHTS.put(
                txn,
                replace(
                    rec,
                    weight=after,
                    punished=rec.punished + punish,
                    failures=rec.failures + 1,
                    updated=now,
                    last_event=event.id,
                    wrong_passages=passages,
                ),
            )
            out.append(
                SourceDecision(
                    domain=d,
                    source=wrong,
                    action="punished" if punish else "noted",
                    before=rec.weight,
                    after=after,
                    failures=failures,
                    surprise_id=event.id,
                )
            )
        if event.correcting_source:
            right = source_key(event.correcting_source)
            if right != wrong:
                out.append(self._reward(txn, event, right, now))
        return out

    def _reward(self, txn: Txn, event: SurpriseEvent, right: str, now: float) -> SourceDecision:
        rules = self.rules
        d, s = event.domain, event.magnitude
        rec = WEIGHTS.get(txn, d, right) or SourceWeight(
            domain=d, source=right, weight=rules.default, updated=now
        )
        reward = s >= rules.reward_at
        after = rules.rewarded(rec.weight, s) if reward else rec.weight
        WEIGHTS.put(
            txn,
            msgspec.structs.replace(
                rec,
                weight=after,
                rewarded=rec.rewarded + reward,
                corrections=rec.corrections + 1,
                updated=now,
                last_event=event.id,
            ),
        )
        return SourceDecision(
            domain=d,
            source=right,
            action="rewarded" if reward else "unrewarded",
            before=rec.weight,
            after=after,
            surprise_id=event.id,
        )

    def noted(self, decisions: Iterable[SourceDecision]) -> None:
        """Count and publish decisions whose transaction committed."""
        events = set()
        for dec in decisions:
            events.add(dec.surprise_id)
            self._counts.add(dec.action)
            if dec.action in ("punished", "rewarded"):
                publish(
                    self._emit,
                    "sources",
                    dec.action,
                    subject=dec.source,
                    domain=dec.domain,
                    before=dec.before,
                    after=dec.after,
                    detail=f"surprise {dec.surprise_id}, {dec.failures} failure(s) in window",
                )
        self._counts.add("events", len(events))
