"""Wisdom: repeated surprise on one (domain, action) becomes a generalisation, under a state machine.

States and the only legal transitions (:data:`TRANSITIONS`)::

    candidate ──promote──▶ provisional ──trust──▶ trusted
        │                      │                     │
        └──────contradicted────┴─contradicted or a ──┘
                               ▼  cited debt reopened
                            demoted ──new episode──▶ candidate

* A surprise event on a (domain, action) with no record opens a ``candidate``.
  Every event on it is an episode; on a ``demoted`` record an episode starts a
  new epoch (counts since then) as a ``candidate`` again.
* ``candidate → provisional`` needs, in the current epoch, at least 4
  episodes across at least 2 sessions, a score of at least 0.72, no
  contradiction, and at least one cited debt, every cited debt resolved.
  The score is the mean surprise magnitude of the epoch's episodes times
  ``min(1, sessions / 2)``: a pattern of strong surprises seen in more than
  one session.
* ``provisional → trusted`` needs further support: at least 2 episodes since
  the promotion, no contradiction, the score still at least 0.72, and every
  cited debt still resolved.
* A contradiction demotes a candidate, provisional or trusted record; a
  cited debt that reopens demotes a provisional or trusted one.

Anything else — skipping a state, going back up from ``demoted``, a
transition to the same state, promoting without the evidence — raises
:class:`~sentient_core.metamemory.base.IllegalTransitionError` (its
subclass :class:`~sentient_core.metamemory.base.GateNotMetError` when the
edge exists but its conditions do not hold) and changes nothing.

Storage: the ``wisdom`` sub-database holds the records under ``b"wis/" +
u64(id)`` (:data:`WISDOM`) and an index from a cluster to its record under
``b"key/" + digest(domain, action)`` (an 8-byte id value).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.metamemory.base import (
    Counts,
    GateNotMetError,
    IllegalTransitionError,
    UnknownRecordError,
    publish,
)
from sentient_core.metamemory.debts import DEBTS
from sentient_core.metamemory.wisdom_records import (
    MAX_EPISODES,
    MAX_HISTORY,
    MAX_SESSIONS,
    RULES,
    TRANSITIONS,
    WISDOM,
    WISDOM_STATES,
    WisdomRecord,
    WisdomRules,
    WisdomState,
    WisdomTransition,
    find,
    put,
    score,
)

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.metamemory.surprise import SurpriseEvent
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = [
    "MAX_EPISODES",
    "MAX_HISTORY",
    "MAX_SESSIONS",
    "RULES",
    "TRANSITIONS",
    "WISDOM",
    "WISDOM_STATES",
    "WisdomBook",
    "WisdomRecord",
    "WisdomRules",
    "WisdomState",
    "WisdomTransition",
    "find",
    "put",
    "score",
]


class WisdomBook:
    """Wisdom records in the ``wisdom`` sub-database (see the module docstring).

    Parameters
    ----------
    store : Store
        Also read for the status of cited debts.
    rules : WisdomRules
    emit : Emitter, optional
    clock : callable

    Counters: ``episodes``, ``candidates``, ``promotions`` (to provisional),
    ``trusted``, ``demotions``, ``recandidacies``, ``contradictions``,
    ``refused`` (illegal or gated transitions attempted).
    """

    def __init__(
        self,
        store: Store,
        *,
        rules: WisdomRules = RULES,
        emit: Emitter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.rules = rules
        self._emit = emit
        self._clock = clock
        self._counts = Counts(
            (
                "episodes",
                "candidates",
                "promotions",
                "trusted",
                "demotions",
                "recandidacies",
                "contradictions",
                "refused",
                "use_successes",
                "use_failures",
            )
        )

    def counters(self) -> dict[str, float]:
        """What this book did in this process."""
        return self._counts.as_dict()

    # -- reading -----------------------------------------------------------------------------

    def get(self, wisdom_id: int) -> WisdomRecord:
        """Record ``wisdom_id``.

        Raises
        ------
        UnknownRecordError
        """
        with self._store.read() as txn:
            return self._get(txn, wisdom_id)

    def _get(self, txn: Txn, wisdom_id: int) -> WisdomRecord:
        rec = WISDOM.get(txn, wisdom_id)
        if rec is None:
            raise UnknownRecordError(f"no wisdom record {wisdom_id}")
        return rec

    def find(self, domain: str, action: str) -> WisdomRecord | None:
        """The record of the cluster (domain, action), or None."""
        with self._store.read() as txn:
            return find(txn, domain, action)

    def records(self, *, state: str | None = None) -> list[WisdomRecord]:
        """Every record (in ``state`` if given), by id."""
        with self._store.read() as txn:
            return [r for r in WISDOM.iter(txn) if state is None or r.state == state]

    def score(self, record: WisdomRecord) -> float:
        """:func:`score` under this book's rules."""
        return score(record, self.rules)

    # -- episodes ----------------------------------------------------------------------------

    def observe(self, event: SurpriseEvent) -> WisdomRecord:
        """Add a recorded surprise event as an episode of its (domain, action) cluster."""
        old, new = self._store.write(lambda txn: self.observe_in(txn, event))
        self.noted(old, new)
        return new

    def observe_in(
        self, txn: Txn, event: SurpriseEvent
    ) -> tuple[WisdomRecord | None, WisdomRecord]:
        """:meth:`observe` inside the caller's transaction; returns (before, after) for
        :meth:`noted`."""
        if event.id < 0:
            raise ArgumentError("only a recorded surprise event (id >= 0) can be an episode")
        now = float(self._clock())
        old = find(txn, event.domain, event.action)
        rec = old
        if rec is None:
            rec = WisdomRecord(
                id=WISDOM.next_id(txn),
                domain=event.domain,
                action=event.action,
                created=now,
                updated=now,
            )
        elif rec.state == "demoted":
            rec = self._moved(rec, "candidate", "new episode after demotion", now)
            rec = msgspec.structs.replace(
                rec,
                episodes=(),
                sessions=(),
                episode_count=0,
                magnitude_sum=0.0,
                contradictions=0,
                support=0,
                uses_succeeded=0,
                uses_failed=0,
                recent_uses="",
                cited_debts=(),
            )
        sessions = rec.sessions
        if event.session not in sessions:
            sessions = (*sessions, event.session)[-MAX_SESSIONS:]
        lesson = (
            f"{event.action} in {event.domain} surprises: expected {event.expected[:200]!r},"
            f" got {event.actual[:200]!r} ({event.cause})"
        )
        rec = msgspec.structs.replace(
            rec,
            episodes=(*rec.episodes, event.id)[-MAX_EPISODES:],
            sessions=sessions,
            episode_count=rec.episode_count + 1,
            magnitude_sum=rec.magnitude_sum + event.magnitude,
            total_episodes=rec.total_episodes + 1,
            support=rec.support + (rec.state in ("provisional", "trusted")),
            lesson=lesson,
            updated=now,
        )
        put(txn, rec)
        return old, rec

    # -- transitions -------------------------------------------------------------------------

    def transition(
        self, wisdom_id: int, target: str, reason: str = "", *, cited_debts: Iterable[int] = ()
    ) -> WisdomRecord:
        """Move record ``wisdom_id`` to ``target`` if the state machine allows it now.

        Parameters
        ----------
        wisdom_id : int
        target : {"provisional", "trusted", "demoted", "candidate"}
        reason : str
            Why (kept in the record's history).
        cited_debts : iterable of int
            For a promotion to ``provisional``: the resolved debts it cites.

        Raises
        ------
        IllegalTransitionError
            No such edge from the record's state (or an unknown state).
        GateNotMetError
            The edge exists but its conditions do not hold (the message says which).
        """
        cited = tuple(dict.fromkeys(int(d) for d in cited_debts))

        def write(txn: Txn) -> tuple[WisdomRecord, WisdomRecord]:
            old = self._get(txn, wisdom_id)
            new = self._checked(txn, old, target, reason, cited)
            put(txn, new)
            return old, new

        try:
            old, new = self._store.write(write)
        except IllegalTransitionError:
            self._counts.add("refused")
            raise
        self.noted(old, new)
        return new

    def promote(self, wisdom_id: int, cited_debts: Iterable[int], reason: str = "") -> WisdomRecord:
        """``candidate → provisional``, citing resolved debts (see :meth:`transition`)."""
        return self.transition(wisdom_id, "provisional", reason, cited_debts=cited_debts)

    def trust(self, wisdom_id: int, reason: str = "") -> WisdomRecord:
        """``provisional → trusted`` (see :meth:`transition`)."""
        return self.transition(wisdom_id, "trusted", reason)

    def contradict(self, wisdom_id: int, reason: str) -> WisdomRecord:
        """Record a contradiction; a candidate, provisional or trusted record is demoted."""

        def write(txn: Txn) -> tuple[WisdomRecord, WisdomRecord]:
            old = self._get(txn, wisdom_id)
            rec = msgspec.structs.replace(old, contradictions=old.contradictions + 1)
            if rec.state != "demoted":
                rec = self._moved(rec, "demoted", f"contradicted: {reason}", float(self._clock()))
            put(txn, rec)
            return old, rec

        old, new = self._store.write(write)
        self._counts.add("contradictions")
        self.noted(old, new)
        return new

    def use_outcome(self, wisdom_id: int, *, success: bool, reason: str) -> WisdomRecord:
        """The judged outcome of a request this record's advice influenced
        (:mod:`~sentient_core.metamemory.advice`): a success is support, a failure counts
        against it, and :attr:`WisdomRules.wrong_uses` failures outnumbering the successes
        among its last :attr:`WisdomRules.use_window` uses demote it (a contradiction by
        outcomes). Being read is never credit."""

        def write(txn: Txn) -> tuple[WisdomRecord, WisdomRecord]:
            old = self._get(txn, wisdom_id)
            window = (old.recent_uses + ("s" if success else "f"))[-self.rules.use_window :]
            if success:
                rec = msgspec.structs.replace(
                    old,
                    uses_succeeded=old.uses_succeeded + 1,
                    recent_uses=window,
                    support=old.support + (old.state in ("provisional", "trusted")),
                )
            else:
                rec = msgspec.structs.replace(
                    old, uses_failed=old.uses_failed + 1, recent_uses=window
                )
                failed, succeeded = window.count("f"), window.count("s")
                if (
                    rec.state in ("provisional", "trusted")
                    and failed >= self.rules.wrong_uses
                    and failed > succeeded
                ):
                    rec = msgspec.structs.replace(rec, contradictions=rec.contradictions + 1)
                    rec = self._moved(
                        rec,
                        "demoted",
                        f"contradicted by outcomes: {failed} of its last {len(window)} use(s)"
                        f" failed; last: {reason}",
                        float(self._clock()),
                    )
            put(txn, rec)
            return old, rec

        old, new = self._store.write(write)
        self._counts.add("use_successes" if success else "use_failures")
        if new.state == "demoted" and old.state != "demoted":
            self._counts.add("contradictions")
        self.noted(old, new)
        return new

    def debt_reopened(self, debt_id: int) -> list[WisdomRecord]:
        """Demote every provisional or trusted record citing ``debt_id``; returns them."""

        def write(txn: Txn) -> list[tuple[WisdomRecord, WisdomRecord]]:
            now = float(self._clock())
            out = []
            for rec in WISDOM.iter(txn):
                if rec.state in ("provisional", "trusted") and debt_id in rec.cited_debts:
                    new = self._moved(rec, "demoted", f"cited debt {debt_id} reopened", now)
                    put(txn, new)
                    out.append((rec, new))
            return out

        changed = self._store.write(write)
        for old, new in changed:
            self.noted(old, new)
        return [new for _, new in changed]

    def advance(self, wisdom_id: int, cited_debts: Iterable[int] = ()) -> WisdomRecord | None:
        """Take the next upward transition if its gates hold now, else None (never raises
        for unmet gates): ``candidate → provisional`` (with ``cited_debts``) or
        ``provisional → trusted``."""
        rec = self.get(wisdom_id)
        target = {"candidate": "provisional", "provisional": "trusted"}.get(rec.state)
        if target is None:
            return None
        with self._store.read() as txn:
            try:
                self._checked(txn, rec, target, "", tuple(cited_debts))
            except GateNotMetError:
                return None
        return self.transition(wisdom_id, target, "gates met", cited_debts=cited_debts)

    def _moved(self, rec: WisdomRecord, target: str, reason: str, now: float) -> WisdomRecord:
        step = WisdomTransition(
            source=rec.state,
            target=target,  # type: ignore[arg-type]
            reason=reason[:2000],
            time=now,
        )
        return msgspec.structs.replace(
            rec,
            state=target,
            history=(*rec.history, step)[-MAX_HISTORY:],
            updated=now,
        )

    def _checked(
        self, txn: Txn, rec: WisdomRecord, target: str, reason: str, cited: tuple[int, ...]
    ) -> WisdomRecord:
        """The record after ``rec.state → target``, or the error saying why not."""
        if target not in WISDOM_STATES or (rec.state, target) not in TRANSITIONS:
            raise IllegalTransitionError(
                f"wisdom {rec.id}: no transition {rec.state} → {target}; legal from"
                f" {rec.state}: {', '.join(t for s, t in TRANSITIONS if s == rec.state)}"
            )
        now = float(self._clock())
        why = reason or TRANSITIONS[(rec.state, target)]
        rules = self.rules
        if target == "provisional":
            problems = self._promotion_problems(txn, rec, cited)
            if problems:
                raise GateNotMetError(f"wisdom {rec.id} cannot be promoted: {'; '.join(problems)}")
            moved = self._moved(rec, target, why, now)
            return msgspec.structs.replace(moved, cited_debts=cited, support=0)
        if target == "trusted":
            problems = []
            if rec.support < rules.trust_support:
                problems.append(
                    f"{rec.support} supporting episode(s) since promotion < {rules.trust_support}"
                )
            if rec.contradictions:
                problems.append(f"{rec.contradictions} contradiction(s)")
            if score(rec, rules) < rules.min_score:
                problems.append(f"score {score(rec, rules):.3f} < {rules.min_score}")
            problems += self._unresolved(txn, rec.cited_debts)
            if problems:
                raise GateNotMetError(f"wisdom {rec.id} cannot be trusted: {'; '.join(problems)}")
            return self._moved(rec, target, why, now)
        if target == "candidate":
            raise GateNotMetError(
                f"wisdom {rec.id}: a demoted record becomes a candidate again only through a new"
                " episode (observe)"
            )
        return self._moved(rec, target, why, now)  # demotion: always allowed from here

    def _promotion_problems(self, txn: Txn, rec: WisdomRecord, cited: tuple[int, ...]) -> list[str]:
        rules = self.rules
        problems = []
        if rec.episode_count < rules.min_episodes:
            problems.append(f"{rec.episode_count} episode(s) < {rules.min_episodes}")
        if len(rec.sessions) < rules.min_sessions:
            problems.append(f"{len(rec.sessions)} session(s) < {rules.min_sessions}")
        if score(rec, rules) < rules.min_score:
            problems.append(f"score {score(rec, rules):.3f} < {rules.min_score}")
        if rec.contradictions:
            problems.append(f"{rec.contradictions} contradiction(s)")
        if len(cited) < rules.min_cited:
            problems.append(f"cites {len(cited)} resolved debt(s) < {rules.min_cited}")
        problems += self._unresolved(txn, cited)
        return problems

    @staticmethod
    def _unresolved(txn: Txn, cited: Iterable[int]) -> list[str]:
        out = []
        for d in cited:
            debt = DEBTS.get(txn, d)
            if debt is None:
                out.append(f"cited debt {d} does not exist")
            elif debt.status != "resolved":
                out.append(f"cited debt {d} is {debt.status}")
        return out

    def noted(self, old: WisdomRecord | None, new: WisdomRecord) -> None:
        """Count and publish one committed change."""
        c = self._counts
        if old is None or new.total_episodes > old.total_episodes:
            c.add("episodes")
        if old is None:
            c.add("candidates")
        before = "none" if old is None else old.state
        if before == new.state:
            return
        what = {
            ("candidate", "provisional"): "promotions",
            ("provisional", "trusted"): "trusted",
            ("demoted", "candidate"): "recandidacies",
        }.get((before, new.state), "demotions" if new.state == "demoted" else "")
        if what:
            c.add(what)
        publish(
            self._emit,
            "wisdom",
            new.state,
            subject=f"wisdom:{new.id}",
            domain=new.domain,
            after=score(new, self.rules),
            detail=f"{before} → {new.state}: {new.history[-1].reason if new.history else ''}"[:500],
        )
