"""Wisdom that acts: provisional and trusted wisdom weigh the sources the loop uses.

A wisdom record clusters surprise events on one (domain, action); its episodes
name the source that was wrong each time. Its **advice** is to weigh that
source down: the source most of its episodes name (:func:`advice_of`), capped
at :data:`WISDOM_WEIGHT` of the record's state. The loop reads advice in three
places, each a *use* published as a ``metamemory`` event (component
``wisdom``, action ``used:<kind>``, subject ``wisdom:<id>``):

route
    In the record's own domain the source's weight is at most the cap: a model
    the wisdom distrusts there is not asked (the chaperone's
    :data:`~sentient_core.learning.chaperone.DISTRUST_BELOW`), a corpus file it
    distrusts ranks its passages lower.
prior
    In a domain where the source has no weight of its own yet, a *trusted*
    record about the same source elsewhere sets its starting weight (a model
    that lied about curl starts out distrusted on openssl).
recall
    The scored recall's source-weight factor of the domain's traces reads the
    same capped weights (:func:`capped_weights`), so a trace from a source the
    wisdom distrusts ranks lower.

Credit comes only from outcomes, never from being read: the judged outcome of
a request a use influenced is the wisdom's support (a success) or evidence
against it (a failure); :meth:`WisdomBook.use_outcome
<sentient_core.metamemory.wisdom.WisdomBook.use_outcome>` demotes a record
whose latest uses (:attr:`~sentient_core.metamemory.wisdom.WisdomRules.use_window`)
failed at least ``wrong_uses`` times and more often than they succeeded: right
before, wrong now.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import msgspec

from sentient_core.metamemory.base import publish
from sentient_core.metamemory.surprise import EVENTS
from sentient_core.metamemory.wisdom import WISDOM, WisdomRecord

if TYPE_CHECKING:
    from collections.abc import Callable

    from sentient_core.events import Emitter
    from sentient_core.metamemory.sources import SourceWeights
    from sentient_core.metamemory.wisdom import WisdomBook
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "WISDOM_WEIGHT",
    "Advice",
    "WisdomAdvisor",
    "active_advice",
    "advice_of",
    "capped_weights",
]

WISDOM_WEIGHT: dict[str, float] = {"provisional": 0.45, "trusted": 0.25}
"""The most a source weighs where wisdom of this state advises against it (below the
chaperone's 0.5 under which a model is not asked)."""


class Advice(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What one active wisdom record says: weigh ``avoid`` in ``domain`` at most ``weight``."""

    wisdom: int
    state: str
    domain: str
    action: str
    avoid: str
    weight: float
    episodes: int


def advice_of(txn: Txn, rec: WisdomRecord) -> Advice | None:
    """The advice of an active (provisional or trusted) record: the source most of its
    episodes name as wrong; None for another state or episodes that name none."""
    cap = WISDOM_WEIGHT.get(rec.state)
    if cap is None:
        return None
    wrong: Counter[str] = Counter()
    for event_id in rec.episodes:
        event = EVENTS.get(txn, event_id)
        if event is not None and event.source:
            wrong[event.source] += 1
    if not wrong:
        return None
    (source, n), *_ = sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))
    return Advice(
        wisdom=rec.id,
        state=rec.state,
        domain=rec.domain,
        action=rec.action,
        avoid=source,
        weight=cap,
        episodes=n,
    )


def active_advice(txn: Txn) -> list[Advice]:
    """The advice of every provisional and trusted record, by record id."""
    out = []
    for rec in WISDOM.iter(txn):
        advice = advice_of(txn, rec)
        if advice is not None:
            out.append(advice)
    return out


def _pick(
    advice: list[Advice], domain: str, source: str, has_weight: bool
) -> tuple[Advice, str] | None:
    """The advice that applies to ``source`` in ``domain`` (the strictest), and how."""
    here = [a for a in advice if a.domain == domain and a.avoid == source]
    if here:
        return min(here, key=lambda a: (a.weight, a.wisdom)), "route"
    if has_weight:
        return None
    elsewhere = [a for a in advice if a.avoid == source and a.state == "trusted"]
    if elsewhere:
        return min(elsewhere, key=lambda a: (a.weight, a.wisdom)), "prior"
    return None


def capped_weights(
    advice: list[Advice], domain: str, weights: dict[str, float], sources: set[str]
) -> tuple[dict[str, float], list[tuple[Advice, str]]]:
    """``weights`` (a domain's recorded source weights) with the advice applied to
    ``sources`` (the sources of the traces being ranked); and the advice used."""
    out = dict(weights)
    used = []
    for source in sorted(sources):
        picked = _pick(advice, domain, source, source in weights)
        if picked is None:
            continue
        a, _ = picked
        out[source] = min(weights.get(source, 1.0), a.weight)
        used.append((a, "recall"))
    return out, used


class WisdomAdvisor:
    """Wisdom's advice for one learner: effective source weights, the uses, their credit.

    Parameters
    ----------
    store : Store
    sources : SourceWeights
    wisdom : WisdomBook
    advance : callable
        Offers a wisdom record its next promotion (:meth:`MetaMemory.advance`).
    emit : Emitter, optional
        Uses are published through it.
    enabled : bool
        False reads no advice (the ablation): every weight is the recorded one.
    """

    def __init__(
        self,
        store: Store,
        sources: SourceWeights,
        wisdom: WisdomBook,
        advance: Callable[[WisdomRecord], object],
        *,
        emit: Emitter | None = None,
        enabled: bool = True,
    ) -> None:
        self.store = store
        self.sources = sources
        self.wisdom = wisdom
        self._advance = advance
        self.emit = emit
        self.enabled = enabled
        self._advice: list[Advice] = []
        self._stamp: object = None
        self._request = ""
        # Per request: the (record, kind, domain) uses published, credited at settle.
        self._uses: dict[str, set[tuple[int, str, str]]] = {}
        self.uses: Counter[str] = Counter()
        """Uses by kind (route, prior, recall) in this process."""
        self.outcomes: Counter[str] = Counter()
        """Outcomes credited to wisdom (success, failure)."""

    def advice(self) -> list[Advice]:
        """The active advice, re-read when wisdom changed in this process."""
        if not self.enabled:
            return []
        stamp = tuple(sorted(self.wisdom.counters().items()))
        if stamp != self._stamp:
            with self.store.read() as txn:
                self._advice = active_advice(txn)
            self._stamp = stamp
        return self._advice

    def begin(self, request_id: str) -> None:
        """A request starts: uses from now on are credited with its judged outcome."""
        self._request = request_id

    def weight(self, domain: str, source: str) -> float:
        """The weight of ``source`` in ``domain`` with wisdom's advice applied (a use is
        published once per request and record)."""
        rec = self.sources.record(domain, source)
        recorded = rec.weight if rec is not None else None
        advice = self.advice()
        picked = _pick(advice, domain, source, rec is not None) if advice else None
        base = 1.0 if recorded is None else recorded
        if picked is None:
            return base
        a, kind = picked
        effective = min(base, a.weight)
        self._use(a, kind, domain, source, base, effective)
        return effective

    def recall_weights(
        self, domain: str, weights: dict[str, float], sources: set[str]
    ) -> dict[str, float]:
        """A domain's source weights for the scored recall's factor, advice applied."""
        advice = self.advice()
        if not advice:
            return weights
        out, used = capped_weights(advice, domain, weights, sources)
        for a, kind in used:
            self._use(a, kind, domain, a.avoid, weights.get(a.avoid, 1.0), out[a.avoid])
        return out

    def _use(
        self, a: Advice, kind: str, domain: str, source: str, before: float, after: float
    ) -> None:
        used = self._uses.setdefault(self._request, set())
        if (a.wisdom, kind, domain) in used:
            return
        used.add((a.wisdom, kind, domain))
        self.uses[kind] += 1
        publish(
            self.emit,
            "wisdom",
            f"used:{kind}",
            subject=f"wisdom:{a.wisdom}",
            domain=domain,
            before=before,
            after=after,
            detail=f"{a.state} wisdom on ({a.domain}, {a.action}) weighs {source} at most"
            f" {a.weight:g} (request {self._request or '-'})",
        )

    def settle(self, request_id: str, outcome: str) -> list[WisdomRecord]:
        """Credit the wisdom that influenced ``request_id`` with its judged ``outcome``
        (success supports it, failure counts against it; anything else is neither)."""
        used = self._uses.pop(request_id, set())
        if self._request == request_id:
            self._request = ""
        if outcome not in ("success", "failure") or not used:
            return []
        kinds: dict[int, list[str]] = {}
        for wisdom_id, kind, _ in sorted(used):
            kinds.setdefault(wisdom_id, []).append(kind)
        out = []
        for wisdom_id, kind in ((w, "+".join(dict.fromkeys(k))) for w, k in kinds.items()):
            self.outcomes[outcome] += 1
            out.append(
                self.wisdom.use_outcome(
                    wisdom_id,
                    success=outcome == "success",
                    reason=f"request {request_id} ({kind}) judged {outcome}",
                )
            )
            if outcome == "success":
                self._advance(out[-1])
        return out
