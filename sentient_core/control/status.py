"""What a running learner reports: one :class:`LearnerStatus` for the CLI and the server.

:class:`Activity` follows a bus and remembers the latest event, so "what is it
doing now" is one field, not a scan of the log.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Literal

import msgspec

from sentient_core.autonomy.funnel import funnel, promotion_gates
from sentient_core.events import Event, EventBus
from sentient_core.layers import layer_summary
from sentient_core.liveview import render
from sentient_core.vocab import SessionStats

__all__ = [
    "META_ROWS",
    "Activity",
    "ActivityTracker",
    "LearnerStatus",
    "learner_status",
    "meta_memory_tables",
]

Mode = Literal["serve", "learn"]


class Activity(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The latest event: its kind, iteration, time and one readable line."""

    kind: str = ""
    iteration: int = -1
    t: float = 0.0
    line: str = ""


class LearnerStatus(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A learner's state, counters and spend, JSON-ready.

    Attributes
    ----------
    mode : str
        ``serve`` or ``learn`` (which process runs it).
    pid : int
    data_dir : str
    state : str
        ``idle``, ``running``, ``pausing``, ``paused`` or ``stopping``.
    session : str
    iteration, max_iterations : int
        Iterations begun in this session and its cap.
    interval_s : float
    stats : SessionStats
    activity : Activity
    budget : dict
        :meth:`Budget.report`: today's spend, the caps, what remains.
    gates : dict
        The AND-gates' counters: chaperone, safety checks, judge (with a shadow
        judge's agreement), curiosity, budget; the session's ``funnel`` (passed /
        reached at each gate, in order) and the ``judge_mode``.
    memory : dict
        ``traces`` (active) and ``total``.
    observer : dict
        ``coherence`` and ``smf`` (axis → value).
    questions : dict
        The question book's records by status.
    user_questions : dict
        The user's questions by how their latest asking ended (``open``, ``answered``,
        ``already_known``, ``not_found``; :mod:`sentient_core.learning.closing`).
    focus : dict
        Focus goals by status (``open``, ``resolved``, ``closed``).
    meta_memory : dict or None
        With meta-memory on: ``sources``, ``debts`` and ``wisdom``, each a list of
        flat rows (at most :data:`META_ROWS`: the lowest weights, the open debts
        first, the most advanced wisdom) for the panel's tables; None when off.
    """

    mode: Mode
    pid: int
    data_dir: str
    state: str
    session: str
    iteration: int
    max_iterations: int
    interval_s: float
    stats: SessionStats
    activity: Activity
    budget: dict[str, Any]
    gates: dict[str, Any]
    memory: dict[str, int]
    observer: dict[str, Any]
    questions: dict[str, int]
    meta_memory: dict[str, list[dict[str, Any]]] | None = None
    user_questions: dict[str, int] = msgspec.field(default_factory=dict)
    focus: dict[str, int] = msgspec.field(default_factory=dict)


META_ROWS = 50
"""Rows per meta-memory table in a status snapshot."""

_WISDOM_ORDER = {"trusted": 0, "provisional": 1, "candidate": 2, "demoted": 3}


def meta_memory_tables(store) -> dict[str, list[dict[str, Any]]]:
    """The panel's meta-memory tables read from ``store`` (see :class:`LearnerStatus`)."""
    from sentient_core.metamemory.debts import DEBTS
    from sentient_core.metamemory.sources import WEIGHTS
    from sentient_core.metamemory.wisdom import WISDOM

    with store.read() as txn:
        weights = sorted(WEIGHTS.iter(txn), key=lambda r: (r.weight, r.domain, r.source))
        debt_rows = sorted(DEBTS.iter(txn), key=lambda r: (r.status != "open", -r.updated))
        wisdom_rows = sorted(
            WISDOM.iter(txn), key=lambda r: (_WISDOM_ORDER.get(r.state, 9), -r.updated)
        )
    return {
        "sources": [
            {
                "domain": r.domain,
                "source": r.source,
                "weight": round(r.weight, 3),
                "punished": r.punished,
                "rewarded": r.rewarded,
            }
            for r in weights[:META_ROWS]
        ],
        "debts": [
            {
                "id": r.id,
                "status": r.status,
                "domain": r.domain,
                "hypotheses": " | ".join(r.hypotheses)[:200],
                "test": (r.test.path or r.test.url or r.test.question)[:200] if r.test else "",
                "evidence": len(r.evidence),
            }
            for r in debt_rows[:META_ROWS]
        ],
        "wisdom": [
            {
                "id": r.id,
                "state": r.state,
                "domain": r.domain,
                "action": r.action,
                "episodes": r.episode_count,
                "cites debts": ", ".join(str(d) for d in r.cited_debts),
            }
            for r in wisdom_rows[:META_ROWS]
        ],
    }


class ActivityTracker:
    """Follows a bus; :meth:`latest` is the newest event a person would see (thread-safe)."""

    def __init__(self, bus: EventBus) -> None:
        self._lock = threading.Lock()
        self._latest = Activity()
        self.unsubscribe = bus.subscribe(self._see)

    def _see(self, event: Event) -> None:
        line = render(event)
        if line is None:
            return
        latest = Activity(kind=event.kind, iteration=event.iteration, t=event.t, line=line)
        with self._lock:
            self._latest = latest

    def latest(self) -> Activity:
        """The newest event with a readable line (an empty :class:`Activity` before any)."""
        with self._lock:
            return self._latest


def learner_status(learner, *, mode: Mode, data_dir: str, activity: Activity) -> LearnerStatus:
    """Snapshot ``learner`` (a :class:`~sentient_core.learning.learner.Learner`)."""
    chaperone = learner.chaperone
    safety = getattr(chaperone, "safety", None)
    curiosity = learner.curiosity
    book = getattr(curiosity, "book", None)
    gates: dict[str, Any] = {
        "chaperone": chaperone.counters,
        "safety": safety.counters() if safety is not None else {},
        "judge": learner.judge.counters(),
        "curiosity": dict(curiosity.fired),
        "budget_refusals": dict(learner.budget.refusals),
        # This session's gates in order: what passed each of what reached it.
        "funnel": {g.gate: f"{g.passed} / {g.reached}" for g in funnel(learner.stats)},
        "judge_mode": "shadow" if learner.judge.shadow is not None else "live",
        # The layers' verification gates this session, and live records per layer.
        "promotion": {g.gate: f"{g.passed} / {g.reached}" for g in promotion_gates(learner.stats)},
        "layers": layer_summary(learner.memory.datastore, learner.memory.count),
        # Recalls that found nothing relevant (CLI, API, the learner's own checks), by
        # what became of their subjects.
        "misses": curiosity.misses.summary(),
    }
    observer = learner.observer
    return LearnerStatus(
        mode=mode,
        pid=os.getpid(),
        data_dir=data_dir,
        state=learner.state,
        session=learner.config.session,
        iteration=learner.iteration,
        max_iterations=learner.config.max_iterations,
        interval_s=learner.config.interval_s,
        stats=msgspec.structs.replace(learner.stats),
        activity=activity,
        budget=learner.budget.report(),
        gates=gates,
        memory={"traces": learner.memory.count, "total": learner.memory.total},
        observer={"coherence": observer.coherence, "smf": observer.orientation()},
        questions=book.counts() if book is not None else {},
        user_questions=learner.closing.summary() if hasattr(learner, "closing") else {},
        focus=_focus_counts(getattr(learner, "pursuit", None)),
        meta_memory=(
            meta_memory_tables(learner.memory.datastore)
            if getattr(learner, "meta", None) is not None
            else None
        ),
    )


def _focus_counts(pursuit) -> dict[str, int]:
    """Focus goals by status (none without a pursuit drive)."""
    out = {"open": 0, "resolved": 0, "closed": 0}
    for goal in pursuit.goals() if pursuit is not None else ():
        out[goal.status] += 1
    return out
