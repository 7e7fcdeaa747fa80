"""Focus goals in the loop: their questions asked, their progress counted, their criteria
checked, and a goal whose criteria hold resolved (issue 24, item 6).

Each iteration, before curiosity looks for gaps, :meth:`GoalLoop.sync` registers the
questions of every open goal in the question book (origin ``focus``): they are asked
through the normal loop — chaperone, judge, back-off — like any question. The
questions of a goal that ended (resolved by the loop, ``focus done`` or ``focus
close``, possibly from another process) are dropped from the book, so an ended goal
proposes nothing; :meth:`GoalLoop.propose` adds the pursuit drive's initiatives.

After every judged outcome, :meth:`GoalLoop.judged` counts a success on a goal's topic
(:mod:`sentient_core.autonomy.criteria` says which count) as progress and checks the
criteria of every open goal; when they hold it calls
:meth:`~sentient_core.autonomy.drives.Pursuit.resolve` and emits a
:class:`~sentient_core.events.FocusEvent` naming the criteria that held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from sentient_core.autonomy.criteria import evaluate, topic_words
from sentient_core.autonomy.drives import FocusGoal, Pursuit, normalise_topic
from sentient_core.events import Emitter, FocusEvent
from sentient_core.learning.questions import QuestionBook, normalise_question
from sentient_core.vocab import ChaperoneRequest, Gap

if TYPE_CHECKING:
    from sentient_core.autonomy.criteria import Check

__all__ = ["GoalLoop", "check_goal", "goal_rows", "user_questions"]


def check_goal(goal: FocusGoal, book: QuestionBook) -> Check:
    """Evaluate ``goal``'s criteria against the question book's judged outcomes."""

    def answered_by(question: str) -> int | None:
        rec = book.get(question)
        return rec.answered_by if rec is not None and rec.status == "answered" else None

    return evaluate(goal.criteria, goal.questions, goal.progress_count, answered_by)


def goal_rows(goals: list[FocusGoal], book: QuestionBook) -> list[dict]:
    """Each goal as JSON-ready data (``focus list --json``, ``GET /focus``), with its
    criteria checked against the question book (``check``: held and missing clauses) and
    the state of each of its questions."""
    import msgspec

    rows = []
    for g in goals:
        check = check_goal(g, book)
        row = msgspec.to_builtins(g)
        row["check"] = {"held": list(check.held), "missing": list(check.missing)}
        row["questions_state"] = [
            {"question": q, "status": rec.status if (rec := book.get(q)) else "not asked yet"}
            for q in g.questions
        ]
        rows.append(row)
    return rows


def user_questions(book: QuestionBook) -> list[dict]:
    """The user's questions, oldest first, with how their latest asking ended (``closed``:
    "" while open), the attempts and the reason (``GET /questions``)."""
    return [
        {
            "question": r.question,
            "status": r.status,
            "closed": r.closed,
            "trace_id": r.answered_by,
            "tried": list(r.tried),
            "reason": r.reason,
        }
        for r in book.records()
        if r.origin == "user"
    ]


class GoalLoop:
    """The learner's side of focus goals (see the module docstring).

    Parameters
    ----------
    pursuit : Pursuit or None
        The goals (None: no goals, every method does nothing).
    book : QuestionBook
        Where the goals' questions are asked and their outcomes recorded.

    Attributes
    ----------
    resolved : int
        Goals this loop resolved because their criteria held.
    """

    def __init__(self, pursuit: Pursuit | None, book: QuestionBook) -> None:
        self.pursuit = pursuit
        self.book = book
        self.resolved = 0

    def sync(self) -> None:
        """Register the open goals' questions; drop the pending ones of ended goals."""
        if self.pursuit is None:
            return
        for goal in self.pursuit.goals():
            for q in goal.questions:
                rec = self.book.get(q)
                if goal.status == "open":
                    if rec is None:
                        self.book.register(q, origin="focus", gap_type="focus")
                    elif rec.status == "dropped" and rec.origin == "focus":
                        self.book.update(q, status="queued", reason="")  # the goal is back
                elif rec is not None and rec.origin == "focus" and rec.status in _PENDING:
                    self.book.update(
                        q, status="dropped", reason=f"focus goal {goal.id} {goal.status}"
                    )

    def propose(self) -> list[Gap]:
        """The pursuit drive's initiatives; a stalled goal with a question that failed
        before (waiting) is asked that question again instead of "is it resolved?" or
        "what is known?" (once per stall: the pursuit drive's 7-day rule)."""
        if self.pursuit is None:
            return []
        out = []
        for gap in self.pursuit.propose():
            goal = self.pursuit.find(gap.topic)
            left = [] if goal is None else [q for q in goal.questions if self._waiting(q)]
            if left:
                gap = msgspec.structs.replace(gap, question=left[0])
            out.append(gap)
        return out

    def judged(self, req: ChaperoneRequest, outcome: str, emit: Emitter) -> None:
        """Count a judged success as progress on the goals it is about; resolve every
        open goal whose criteria now hold."""
        if self.pursuit is None:
            return
        goals = self.pursuit.goals(include_resolved=False)
        if outcome == "success":
            for goal in goals:
                if _about(goal, req):
                    self.pursuit.record_progress(goal.id)
            goals = self.pursuit.goals(include_resolved=False)
        for goal in goals:
            if goal.criteria.empty:
                continue
            check = check_goal(goal, self.book)
            if not check.resolved:
                continue
            self.pursuit.resolve(goal.id, held=check.held, by="criteria", reason="criteria held")
            self.resolved += 1
            emit.emit(
                FocusEvent,
                goal=goal.id,
                topic=goal.topic,
                action="resolved",
                held=check.held,
                reason=f"its criteria held ({goal.condition}); it proposes nothing more",
            )
            self.sync()  # its questions still waiting are dropped now

    def _waiting(self, question: str) -> bool:
        rec = self.book.get(question)
        return rec is not None and rec.status == "waiting"


_PENDING = ("queued", "waiting")


def _about(goal: FocusGoal, req: ChaperoneRequest) -> bool:
    """Whether a judged request counts for ``goal``'s topic (see the criteria module)."""
    if req.gap_type == "focus" and normalise_topic(req.topic) == normalise_topic(goal.topic):
        return True
    key = normalise_question(req.question) if req.question else ""
    if key and any(normalise_question(q) == key for q in goal.questions):
        return True
    words = topic_words(goal.topic)
    return bool(words) and bool(req.question) and words <= topic_words(req.question)
