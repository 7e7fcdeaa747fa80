"""Drives: curiosity (≤ 3 proposals per tick) and pursuit of focus goals (SPEC §4).

:class:`CuriosityDrive` picks at most three gaps per tick out of what curiosity
found: highest priority first; equal priorities by gap type (a user's question
first, see :data:`sentient_core.vocab.GAP_PRIORITY`), then topic; one gap per topic.

:class:`Pursuit` keeps the user-declared focus goals (``cli.py focus "topic"``)
in the store's ``state`` sub-database under ``b"focus/goals"`` and proposes an
initiative for every open goal that has stalled:

* a goal never advanced (``progress_count == 0``) gets an *advance-question*
  ("What is known about {topic}?"); a newly added goal has had no progress,
  so it gets one right away — declaring a focus is asking for it;
* a goal advanced before but not for :data:`STALL_S` (7 days) gets a
  *check-resolution* question (``detail="check_resolution"``).

A goal gets ONE initiative per stall: :meth:`Pursuit.propose` stamps
``last_proposed``, and the goal is due again only after another 7 days
without progress (measured from its last progress or its last proposal,
whichever is later). Otherwise a goal the learner cannot advance would be
proposed on every tick.

A goal may carry resolution criteria (:mod:`sentient_core.autonomy.criteria`: a
question set and a condition); the learner checks them after every judged outcome
(:mod:`sentient_core.learning.goals`) and calls :meth:`Pursuit.resolve` when they hold.
The user ends a goal with :meth:`Pursuit.resolve` (``focus done``) or :meth:`Pursuit.close`
(``focus close``). A goal that is not open proposes nothing.

Errors: ``ValueError`` for an empty or over-long topic or too many goals,
``KeyError`` for an unknown goal id.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Literal, TypeVar

import msgspec

from sentient_core.autonomy.criteria import MAX_GOAL_QUESTIONS, Criteria, parse_condition
from sentient_core.errors import ArgumentError, NotFoundError
from sentient_core.store import RecordCodec, Store
from sentient_core.vocab import GAP_PRIORITY, Gap, gap_rank

__all__ = [
    "FOCUS_KEY",
    "FOCUS_PRIORITY",
    "MAX_CURIOSITY_PROPOSALS",
    "MAX_GOALS",
    "MAX_TOPIC_CHARS",
    "STALL_S",
    "STATE_DB",
    "CuriosityDrive",
    "FocusGoal",
    "FocusGoals",
    "Pursuit",
    "normalise_topic",
]

MAX_CURIOSITY_PROPOSALS = 3
"""Hard cap on curiosity proposals per tick (SPEC §4)."""

STATE_DB = "state"
FOCUS_KEY = b"focus/goals"
STALL_S = 7 * 86400.0
"""A goal with no progress for this long (seconds) gets an initiative."""

MAX_GOALS = 256
MAX_TOPIC_CHARS = 300

FOCUS_PRIORITY = GAP_PRIORITY["focus"]

_R = TypeVar("_R")
"""Priority of pursuit initiatives: below an explicit user question, above
every gap curiosity finds on its own."""

UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]
Topic = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOPIC_CHARS)]
GoalQuestion = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
Line = Annotated[str, msgspec.Meta(max_length=300)]
GoalStatus = Literal["open", "resolved", "closed"]


def normalise_topic(topic: str) -> str:
    """Topic key for de-duplication: whitespace collapsed, case folded."""
    return " ".join(topic.split()).casefold()


def _priority(gap: Gap) -> float:
    p = gap.priority
    return p if p == p else 0.0  # a NaN would make the order depend on the input order


class CuriosityDrive:
    """Choose at most ``max_proposals`` (≤ 3) gaps per tick.

    Parameters
    ----------
    max_proposals : int
        In ``[0, 3]``.

    Attributes
    ----------
    seen, proposed, dropped_duplicate, dropped_cap : int
        Running counters (a silent veto shows up as a number).
    """

    def __init__(self, max_proposals: int = MAX_CURIOSITY_PROPOSALS) -> None:
        if (
            isinstance(max_proposals, bool)
            or not isinstance(max_proposals, int)
            or not 0 <= max_proposals <= MAX_CURIOSITY_PROPOSALS
        ):
            raise ArgumentError(
                f"max_proposals must be an integer in [0, {MAX_CURIOSITY_PROPOSALS}],"
                f" got {max_proposals!r}"
            )
        self.max_proposals = max_proposals
        self.seen = 0
        self.proposed = 0
        self.dropped_duplicate = 0
        self.dropped_cap = 0

    @staticmethod
    def order_key(gap: Gap) -> tuple:
        """Sort key: priority (high first), type rank, topic, then every other field.

        The trailing fields make the order total, so the result never depends
        on the order the gaps arrived in.
        """
        return (
            -_priority(gap),
            gap_rank(gap.type),
            normalise_topic(gap.topic),
            gap.topic,
            gap.question,
            gap.detail,
            gap.url,
            gap.path,
        )

    def propose(self, gaps: Sequence[Gap]) -> list[Gap]:
        """The gaps to pursue this tick, best first, one per topic, at most ``max_proposals``.

        A gap with a blank topic is keyed by its question instead.
        """
        chosen: list[Gap] = []
        topics: set[str] = set()
        duplicates = 0
        for gap in sorted(gaps, key=self.order_key):
            key = normalise_topic(gap.topic) or "?" + normalise_topic(gap.question)
            if key in topics:
                duplicates += 1
                continue
            topics.add(key)
            chosen.append(gap)
        self.seen += len(gaps)
        self.dropped_duplicate += duplicates
        self.dropped_cap += max(0, len(chosen) - self.max_proposals)
        chosen = chosen[: self.max_proposals]
        self.proposed += len(chosen)
        return chosen


class FocusGoal(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A user-declared focus goal.

    Attributes
    ----------
    id : str
        ``g1``, ``g2``, ... (never reused).
    topic : str
        As declared, whitespace collapsed.
    created : float
        Unix time it was added (or re-opened).
    last_progress : float or None
        Unix time of the last recorded progress; None if never.
    status : {"open", "resolved", "closed"}
        ``resolved``: its criteria held, or the user said it is done; ``closed``: the
        user gave it up.
    progress_count : int
        Times progress was recorded (judged successes on its topic).
    last_proposed : float or None
        Unix time :meth:`Pursuit.propose` last proposed an initiative for it.
    resolved_at : float or None
        Unix time it was resolved or closed (None while open).
    questions : tuple of str
        Its question set (resolution criteria; :mod:`~sentient_core.autonomy.criteria`).
    condition : str
        Its condition, canonical ("" : none; with questions that means
        ``questions answered``).
    ended_by : {"", "criteria", "done", "close"}
        What ended it: its criteria held (the loop), ``focus done`` or ``focus close``.
    held : tuple of str
        The criteria that held when it was resolved, with their figures.
    reason : str
        Why it ended, in words.
    """

    id: str
    topic: Topic
    created: UnixTime
    last_progress: UnixTime | None = None
    status: GoalStatus = "open"
    progress_count: NonNeg = 0
    last_proposed: UnixTime | None = None
    resolved_at: UnixTime | None = None
    questions: Annotated[tuple[GoalQuestion, ...], msgspec.Meta(max_length=MAX_GOAL_QUESTIONS)] = ()
    condition: Annotated[str, msgspec.Meta(max_length=200)] = ""
    ended_by: Literal["", "criteria", "done", "close"] = ""
    held: Annotated[tuple[Line, ...], msgspec.Meta(max_length=8)] = ()
    reason: Line = ""

    @property
    def criteria(self) -> Criteria:
        """Its parsed resolution criteria (empty: only the user ends it)."""
        return parse_condition(self.condition, questions=len(self.questions))


class FocusGoals(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The persisted record under ``state/focus/goals`` (v2 added the criteria fields
    of :class:`FocusGoal`, all with defaults: a v1 record reads as goals without
    criteria and is written back as v2)."""

    v: int = 2
    next_id: Annotated[int, msgspec.Meta(ge=1)] = 1
    goals: Annotated[list[FocusGoal], msgspec.Meta(max_length=MAX_GOALS)] = msgspec.field(
        default_factory=list
    )


FOCUS_GOALS = RecordCodec(FocusGoals, 2, "focus goals record", reads=(1,))


class Pursuit:
    """User-declared focus goals, persisted, and the initiatives for stalled ones.

    Parameters
    ----------
    store : Store or None
        Where the goals live (``state`` sub-database); None keeps them in memory.
    clock : callable
        Unix time source (injectable for tests).
    stall_s : float
        Seconds without progress before a goal is proposed again (7 days).

    Attributes
    ----------
    proposed_advance, proposed_check : int
        Initiatives proposed by this object, by kind.
    """

    def __init__(
        self,
        store: Store | None = None,
        clock: Callable[[], float] = time.time,
        *,
        stall_s: float = STALL_S,
    ) -> None:
        if not stall_s > 0:
            raise ArgumentError(f"stall_s must be positive, got {stall_s!r}")
        self.store = store
        self._clock = clock
        self.stall_s = float(stall_s)
        self._memory = FocusGoals()
        self._lock = threading.Lock()
        self.proposed_advance = 0
        self.proposed_check = 0

    # -- persistence -------------------------------------------------------------------------

    def _load(self) -> FocusGoals:
        if self.store is None:
            return self._memory
        with self.store.read() as txn:
            raw = txn.get(STATE_DB, FOCUS_KEY)
            return FocusGoals() if raw is None else FOCUS_GOALS.decode(raw, where="state/focus")

    def _update(self, fn: Callable[[FocusGoals], tuple[FocusGoals, _R]]) -> _R:
        """Apply ``fn(old) -> (new, result)`` in one write transaction; returns ``result``."""
        with self._lock:
            if self.store is None:
                new, result = fn(self._memory)
                FOCUS_GOALS.encode(new)  # the same bounds as a persisted record
                self._memory = new
                return result

            def write(txn) -> _R:
                raw = txn.get(STATE_DB, FOCUS_KEY)
                old = FocusGoals() if raw is None else FOCUS_GOALS.decode(raw, where="state/focus")
                new, result = fn(old)
                txn.put(STATE_DB, FOCUS_KEY, FOCUS_GOALS.encode(new))
                return result

            return self.store.write(write)

    # -- goals -------------------------------------------------------------------------------

    def goals(self, *, include_resolved: bool = True) -> list[FocusGoal]:
        """All goals in the order they were added (open ones only if asked)."""
        goals = self._load().goals
        return list(goals) if include_resolved else [g for g in goals if g.status == "open"]

    def get(self, goal_id: str) -> FocusGoal:
        """The goal with id ``goal_id``.

        Raises
        ------
        KeyError
            No such goal.
        """
        for goal in self._load().goals:
            if goal.id == goal_id:
                return goal
        raise NotFoundError(f"no focus goal {goal_id!r}")

    def find(self, topic: str) -> FocusGoal | None:
        """The goal whose normalised topic equals ``topic``'s (e.g. a proposed Gap's), or None."""
        key = normalise_topic(topic)
        for goal in self._load().goals:
            if normalise_topic(goal.topic) == key:
                return goal
        return None

    def add(self, topic: str, *, questions: Sequence[str] = (), condition: str = "") -> FocusGoal:
        """Declare a focus goal; an existing one with the same normalised topic is returned.

        ``questions`` and ``condition`` are its resolution criteria
        (:mod:`~sentient_core.autonomy.criteria`). Declaring an existing goal again adds
        the new questions to its set and replaces its condition when one is given.
        Adding the topic of a resolved or closed goal re-opens it (same id, progress
        kept, ``created`` reset): the user declared it again.

        Raises
        ------
        ValueError
            Blank or longer than :data:`MAX_TOPIC_CHARS` topic, :data:`MAX_GOALS` goals
            already kept, too many questions, or a condition outside the language.
        """
        shown = " ".join(str(topic).split())
        if not shown:
            raise ArgumentError("a focus goal needs a topic")
        if len(shown) > MAX_TOPIC_CHARS:
            raise ArgumentError(f"a focus topic is at most {MAX_TOPIC_CHARS} characters")
        asked = _questions(questions)
        key = normalise_topic(shown)
        now = self._clock()

        def criteria(goal: FocusGoal | None) -> dict:
            old = goal.questions if goal is not None else ()
            keys = {normalise_topic(q).rstrip(" ?") for q in old}
            merged = (*old, *(q for q in asked if normalise_topic(q).rstrip(" ?") not in keys))
            if len(merged) > MAX_GOAL_QUESTIONS:
                raise ArgumentError(f"a focus goal holds at most {MAX_GOAL_QUESTIONS} questions")
            text = condition if condition.strip() or goal is None else goal.condition
            return {
                "questions": merged,
                "condition": parse_condition(text, questions=len(merged)).text(),
            }

        def fn(old: FocusGoals) -> tuple[FocusGoals, FocusGoal]:
            for i, goal in enumerate(old.goals):
                if normalise_topic(goal.topic) != key:
                    continue
                if goal.status == "open":
                    new = msgspec.structs.replace(goal, **criteria(goal))
                else:
                    new = msgspec.structs.replace(
                        goal,
                        status="open",
                        created=now,
                        resolved_at=None,
                        last_proposed=None,
                        ended_by="",
                        held=(),
                        reason="",
                        **criteria(goal),
                    )
                if new == goal:
                    return old, goal
                goals = list(old.goals)
                goals[i] = new
                return msgspec.structs.replace(old, goals=goals), new
            if len(old.goals) >= MAX_GOALS:
                raise ArgumentError(
                    f"{MAX_GOALS} focus goals are kept already; resolve or remove one first"
                )
            added = FocusGoal(id=f"g{old.next_id}", topic=shown, created=now, **criteria(None))
            record = msgspec.structs.replace(
                old, next_id=old.next_id + 1, goals=[*old.goals, added]
            )
            return record, added

        return self._update(fn)

    def _change(self, goal_id: str, change: Callable[[FocusGoal], FocusGoal]) -> FocusGoal:
        def fn(old: FocusGoals) -> tuple[FocusGoals, FocusGoal]:
            for i, goal in enumerate(old.goals):
                if goal.id == goal_id:
                    goals = list(old.goals)
                    goals[i] = change(goal)
                    return msgspec.structs.replace(old, goals=goals), goals[i]
            raise NotFoundError(f"no focus goal {goal_id!r}")

        return self._update(fn)

    def record_progress(self, goal_id: str) -> FocusGoal:
        """Note progress on a goal now (e.g. a judged success on its topic).

        Raises
        ------
        KeyError
            No such goal.
        """
        now = self._clock()
        return self._change(
            goal_id,
            lambda g: msgspec.structs.replace(
                g, last_progress=now, progress_count=g.progress_count + 1
            ),
        )

    def resolve(
        self, goal_id: str, *, held: Sequence[str] = (), by: str = "done", reason: str = ""
    ) -> FocusGoal:
        """Mark a goal resolved (it proposes nothing more until re-added).

        ``by``: ``criteria`` (the loop: ``held`` names the criteria that held) or
        ``done`` (the user said so). An already resolved goal is returned unchanged.

        Raises
        ------
        KeyError
            No such goal.
        """
        return self._end(goal_id, "resolved", by, held, reason)

    def close(self, goal_id: str, *, reason: str = "") -> FocusGoal:
        """Give a goal up without resolving it (``focus close``): it proposes nothing more.

        Raises
        ------
        KeyError
            No such goal.
        """
        return self._end(goal_id, "closed", "close", (), reason)

    def _end(
        self, goal_id: str, status: GoalStatus, by: str, held: Sequence[str], reason: str
    ) -> FocusGoal:
        now = self._clock()
        lines = tuple(" ".join(h.split())[:300] for h in held)[:8]
        return self._change(
            goal_id,
            lambda g: (
                g
                if g.status != "open"
                else msgspec.structs.replace(
                    g,
                    status=status,
                    resolved_at=now,
                    ended_by=by,
                    held=lines,
                    reason=" ".join(reason.split())[:300],
                )
            ),
        )

    def remove(self, goal_id: str) -> FocusGoal:
        """Forget a goal entirely.

        Raises
        ------
        KeyError
            No such goal.
        """

        def fn(old: FocusGoals) -> tuple[FocusGoals, FocusGoal]:
            for i, goal in enumerate(old.goals):
                if goal.id == goal_id:
                    goals = [*old.goals[:i], *old.goals[i + 1 :]]
                    return msgspec.structs.replace(old, goals=goals), goal
            raise NotFoundError(f"no focus goal {goal_id!r}")

        return self._update(fn)

    # -- proposals ---------------------------------------------------------------------------

    def due(self, goal: FocusGoal, now: float) -> bool:
        """Whether ``goal`` is due for an initiative at time ``now``."""
        if goal.status != "open":
            return False
        anchor = max(goal.last_progress or 0.0, goal.last_proposed or 0.0)
        if goal.progress_count == 0 and goal.last_proposed is None:
            return True  # new: no progress yet, never proposed
        return now - anchor >= self.stall_s

    def initiative(self, goal: FocusGoal) -> Gap:
        """The initiative for a stalled goal: advance-question or check-resolution."""
        topic = goal.topic
        if goal.progress_count == 0:
            return Gap(
                type="focus",
                topic=topic,
                question=f"What is known about {topic}?",
                priority=FOCUS_PRIORITY,
                detail="advance_question",
            )
        return Gap(
            type="focus",
            topic=topic,
            question=f"Is the goal '{topic}' resolved? What is now known about {topic},"
            " and what is still open?",
            priority=FOCUS_PRIORITY,
            detail="check_resolution",
        )

    def propose(self, *, mark: bool = True) -> list[Gap]:
        """One initiative per open goal that is due, oldest goal first.

        With ``mark`` (the default) the proposed goals get ``last_proposed =
        now`` in one write transaction, so each stall yields one initiative;
        ``mark=False`` only looks.
        """
        now = self._clock()
        peek = self._due_goals(self._load().goals, now)
        if not mark or not peek:  # nothing due: no write transaction on a quiet tick
            return [self.initiative(g) for g in peek]

        def fn(old: FocusGoals) -> tuple[FocusGoals, list[FocusGoal]]:
            due = self._due_goals(old.goals, now)
            if not due:
                return old, []
            ids = {g.id for g in due}
            goals = [
                msgspec.structs.replace(g, last_proposed=now) if g.id in ids else g
                for g in old.goals
            ]
            return msgspec.structs.replace(old, goals=goals), due

        due = self._update(fn)
        gaps = [self.initiative(g) for g in due]
        for gap in gaps:
            if gap.detail == "check_resolution":
                self.proposed_check += 1
            else:
                self.proposed_advance += 1
        return gaps

    def _due_goals(self, goals: Sequence[FocusGoal], now: float) -> list[FocusGoal]:
        return sorted(
            (g for g in goals if self.due(g, now)), key=lambda g: (g.created, int(g.id[1:]))
        )


def _questions(questions: Sequence[str]) -> tuple[str, ...]:
    """A goal's questions, whitespace collapsed, blank ones refused."""
    out = tuple(" ".join(str(q).split()) for q in questions)
    if any(not q for q in out):
        raise ArgumentError("a focus question must not be blank")
    if any(len(q) > 1000 for q in out):
        raise ArgumentError("a focus question is at most 1000 characters")
    if len(out) > MAX_GOAL_QUESTIONS:
        raise ArgumentError(f"a focus goal holds at most {MAX_GOAL_QUESTIONS} questions")
    return out
