"""The recipe book: births, reuses judged, and the state machine of :mod:`.records`.

Only two things change a recipe's counts or state, and both are judged outcomes:

* :meth:`RecipeBook.born` — the judge's ``success`` on a request asking a question
  whose (kind, domain) has no standing recipe (or only an advisory one, which the
  new recipe supersedes: it retires).
* :meth:`RecipeBook.judged` — the judge's verdict on a request the recipe was
  tried first on (:meth:`RecipeBook.tried` counts the trial; it credits nothing).

:meth:`RecipeBook.transition`, :meth:`RecipeBook.rewrite` and
:meth:`RecipeBook.retire` are the explicit edges (the repair driver's, issue 23
item 4); anything :data:`~sentient_core.recipes.records.TRANSITIONS` does not list
raises :class:`~sentient_core.metamemory.base.IllegalTransitionError` and changes
nothing. Every change is a :class:`~sentient_core.events.RecipeEvent`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.events import RecipeEvent
from sentient_core.metamemory.base import Counts, IllegalTransitionError, UnknownRecordError
from sentient_core.recipes.records import (
    MAX_EVIDENCE,
    MAX_HISTORY,
    MAX_REVISIONS,
    RECIPE_STATES,
    RECIPES,
    ROUTES,
    TRANSITIONS,
    RecipeRecord,
    RecipeRevision,
    RecipeTransition,
    find,
    put,
    records,
)

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.store.env import Store
    from sentient_core.store.txn import Txn

__all__ = ["FAILED", "RecipeBook"]

FAILED = ("failure", "could_not_verify")
"""Verdicts that fail a recipe's verification on reuse (``not_applicable`` — memory
already held the answer, or the request was refused — neither credits nor blames)."""


def _evidence(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(i)[:200] for i in ids if i)[-MAX_EVIDENCE:]


class RecipeBook:
    """Recipes in the ``recipes`` sub-database (see the module docstring).

    Parameters
    ----------
    store : Store
    emit : Emitter, optional
        Where events go when a call gives none.
    clock : callable

    Counters (:meth:`counters`): ``born``, ``tried``, ``verified``, ``failed``,
    ``inconclusive``, ``demoted``, ``confirmed``, ``rewritten``, ``retired``,
    ``refused`` (illegal transitions attempted).
    """

    def __init__(
        self, store: Store, *, emit: Emitter | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._store = store
        self._emit = emit
        self._clock = clock
        self._counts = Counts(
            (
                "born",
                "tried",
                "verified",
                "failed",
                "inconclusive",
                "demoted",
                "confirmed",
                "rewritten",
                "retired",
                "refused",
            )
        )

    def counters(self) -> dict[str, float]:
        """What this book did in this process."""
        return self._counts.as_dict()

    # -- reading -----------------------------------------------------------------------------

    def get(self, recipe_id: int) -> RecipeRecord:
        """Recipe ``recipe_id``.

        Raises
        ------
        UnknownRecordError
        """
        with self._store.read() as txn:
            return self._get(txn, recipe_id)

    @staticmethod
    def _get(txn: Txn, recipe_id: int) -> RecipeRecord:
        rec = RECIPES.get(txn, recipe_id)
        if rec is None:
            raise UnknownRecordError(f"no recipe {recipe_id}")
        return rec

    def find(self, kind: str, domain: str) -> RecipeRecord | None:
        """The recipe standing for (kind, domain) — any state but retired — or None.
        Reading never changes a recipe."""
        with self._store.read() as txn:
            return find(txn, kind, domain)

    def records(self, *, state: str | None = None) -> list[RecipeRecord]:
        """Every recipe (in ``state`` if given), by id."""
        with self._store.read() as txn:
            return [r for r in records(txn) if state is None or r.state == state]

    # -- judged outcomes ---------------------------------------------------------------------

    def born(
        self,
        *,
        kind: str,
        domain: str,
        request_type: str,
        source: str,
        route: str,
        query_shape: str,
        request_id: str,
        emit: Emitter | None = None,
    ) -> RecipeRecord | None:
        """A judged success on ``request_id``: the recipe born of it (confirmed), or None
        when a confirmed or draft recipe already stands for (kind, domain) — only a
        judged reuse credits that one. An advisory recipe standing there is retired,
        superseded by the new one."""
        if not kind or not domain:
            raise ArgumentError("a recipe needs a kind and a domain")
        if route not in ROUTES:
            raise ArgumentError(f"route must be one of {ROUTES}, got {route!r}")

        def write(txn: Txn) -> tuple[RecipeRecord | None, RecipeRecord | None]:
            old = find(txn, kind, domain)
            if old is not None and old.state != "advisory":
                return None, None
            now = float(self._clock())
            rid = RECIPES.next_id(txn)
            retired = None
            if old is not None:
                retired = self._moved(
                    old, "retired", f"superseded by recipe {rid}", (request_id,), now
                )
                RECIPES.put(txn, retired)
            rec = msgspec.convert(
                {
                    "id": rid,
                    "kind": kind[:200],
                    "domain": domain[:200],
                    "state": "confirmed",
                    "request_type": request_type,
                    "source": source[:1000],
                    "route": route,
                    "query_shape": query_shape[:200],
                    "born_of": request_id[:200],
                    "history": [
                        {
                            "source": "none",
                            "target": "confirmed",
                            "reason": "born of a judge-verified success",
                            "evidence": list(_evidence((request_id,))),
                            "time": now,
                        }
                    ],
                    "created": now,
                    "updated": now,
                },
                RecipeRecord,
            )
            put(txn, rec)
            return retired, rec

        retired, rec = self._store.write(write)
        if retired is not None:
            self._noted("retired", retired, "advisory", request_id, emit)
        if rec is not None:
            self._noted("born", rec, "none", request_id, emit)
        return rec

    def tried(self, recipe_id: int, request_id: str, emit: Emitter | None = None) -> RecipeRecord:
        """Recipe ``recipe_id`` is tried first on ``request_id``: a use, never a credit."""

        def write(txn: Txn) -> RecipeRecord:
            rec = self._get(txn, recipe_id)
            rec = msgspec.structs.replace(rec, trials=rec.trials + 1)
            put(txn, rec)
            return rec

        rec = self._store.write(write)
        self._noted("tried", rec, rec.state, request_id, emit)
        return rec

    def judged(
        self,
        recipe_id: int,
        request_id: str,
        outcome: str,
        reason: str = "",
        emit: Emitter | None = None,
    ) -> RecipeRecord:
        """The judge's ``outcome`` on ``request_id``, which tried recipe ``recipe_id``
        first: ``success`` → support + 1 (a draft is confirmed); ``failure`` or
        ``could_not_verify`` → failures + 1 and a confirmed or draft recipe becomes
        advisory; ``not_applicable`` → inconclusive + 1."""

        def write(txn: Txn) -> tuple[str, str, RecipeRecord]:
            old = self._get(txn, recipe_id)
            now = float(self._clock())
            why = f"reuse on {request_id} judged {outcome}" + (f": {reason}" if reason else "")
            if outcome == "success":
                rec = msgspec.structs.replace(old, support=old.support + 1, updated=now)
                if rec.state == "draft":
                    rec = self._moved(rec, "confirmed", why, (request_id,), now)
                action = "verified"
            elif outcome in FAILED:
                rec = msgspec.structs.replace(old, failures=old.failures + 1, updated=now)
                if rec.state in ("confirmed", "draft"):
                    rec = self._moved(rec, "advisory", why, (request_id,), now)
                action = "failed"
            else:
                rec = msgspec.structs.replace(old, inconclusive=old.inconclusive + 1, updated=now)
                action = "inconclusive"
            put(txn, rec)
            return action, old.state, rec

        action, before, rec = self._store.write(write)
        self._noted(action, rec, before, request_id, emit, reason=outcome)
        return rec

    # -- explicit edges ----------------------------------------------------------------------

    def transition(
        self,
        recipe_id: int,
        target: str,
        reason: str = "",
        evidence: Iterable[str] = (),
        emit: Emitter | None = None,
    ) -> RecipeRecord:
        """Move recipe ``recipe_id`` to ``target`` along a legal edge.

        Raises
        ------
        IllegalTransitionError
            No such edge from the recipe's state (skipping a state, leaving
            ``retired``, staying put, or an unknown state); nothing changes.
        """
        ev = _evidence(evidence)

        def write(txn: Txn) -> tuple[str, RecipeRecord]:
            old = self._get(txn, recipe_id)
            self._check(old, target)
            why = reason or TRANSITIONS[(old.state, target)]
            rec = self._moved(old, target, why, ev, float(self._clock()))
            put(txn, rec)
            return old.state, rec

        try:
            before, rec = self._store.write(write)
        except IllegalTransitionError:
            self._counts.add("refused")
            raise
        action = {"retired": "retired", "advisory": "failed", "confirmed": "verified"}
        self._noted(action.get(target, "rewritten"), rec, before, ev[-1] if ev else "", emit)
        return rec

    def retire(
        self, recipe_id: int, reason: str, evidence: Iterable[str] = (), emit: Emitter | None = None
    ) -> RecipeRecord:
        """``advisory`` or ``draft`` → ``retired`` (see :meth:`transition`)."""
        return self.transition(recipe_id, "retired", reason, evidence, emit)

    def rewrite(
        self,
        recipe_id: int,
        reason: str,
        *,
        evidence: Iterable[str] = (),
        route: str | None = None,
        source: str | None = None,
        query_shape: str | None = None,
        emit: Emitter | None = None,
    ) -> RecipeRecord:
        """``advisory → draft`` with a new procedure; the old one is kept in ``revisions``.

        Raises
        ------
        IllegalTransitionError
            The recipe is not advisory.
        ArgumentError
            An unknown route.
        """
        if route is not None and route not in ROUTES:
            raise ArgumentError(f"route must be one of {ROUTES}, got {route!r}")
        ev = _evidence(evidence)

        def write(txn: Txn) -> RecipeRecord:
            old = self._get(txn, recipe_id)
            self._check(old, "draft")
            now = float(self._clock())
            revision = RecipeRevision(
                request_type=old.request_type,
                source=old.source,
                route=old.route,
                query_shape=old.query_shape,
                reason=reason[:2000],
                time=now,
            )
            rec = msgspec.structs.replace(
                old,
                route=old.route if route is None else route,
                source=old.source if source is None else source[:1000],
                query_shape=old.query_shape if query_shape is None else query_shape[:200],
                revisions=(*old.revisions, revision)[-MAX_REVISIONS:],
            )
            rec = self._moved(rec, "draft", reason, ev, now)
            put(txn, rec)
            return rec

        try:
            rec = self._store.write(write)
        except IllegalTransitionError:
            self._counts.add("refused")
            raise
        self._noted("rewritten", rec, "advisory", ev[-1] if ev else "", emit)
        return rec

    # -- internals ---------------------------------------------------------------------------

    @staticmethod
    def _check(rec: RecipeRecord, target: str) -> None:
        if target not in RECIPE_STATES or (rec.state, target) not in TRANSITIONS:
            legal = ", ".join(t for s, t in TRANSITIONS if s == rec.state) or "none"
            raise IllegalTransitionError(
                f"recipe {rec.id}: no transition {rec.state} → {target}; legal from"
                f" {rec.state}: {legal}"
            )

    @staticmethod
    def _moved(
        rec: RecipeRecord, target: str, reason: str, evidence: tuple[str, ...], now: float
    ) -> RecipeRecord:
        step = RecipeTransition(
            source=rec.state,
            target=target,  # type: ignore[arg-type]
            reason=reason[:2000],
            evidence=evidence,
            time=now,
        )
        return msgspec.structs.replace(
            rec, state=target, history=(*rec.history, step)[-MAX_HISTORY:], updated=now
        )

    def _noted(
        self,
        action: str,
        rec: RecipeRecord,
        before: str,
        request_id: str,
        emit: Emitter | None,
        *,
        reason: str = "",
    ) -> None:
        """Count and publish one committed change."""
        self._counts.add(action)
        if before != rec.state:
            moved = {"advisory": "demoted", "confirmed": "confirmed", "retired": "retired"}
            if rec.state in moved and action != moved[rec.state]:
                self._counts.add(moved[rec.state])
        out = emit or self._emit
        if out is None:
            return
        last = rec.history[-1].reason if rec.history and before != rec.state else reason
        out.emit(
            RecipeEvent,
            recipe=rec.id,
            action=action,
            request=request_id[:200],
            question_kind=rec.kind,
            domain=rec.domain,
            before=before,
            after=rec.state,
            reason=last[:500],
        )
