"""Every user question ends: one closing event per asking (issue 24, item 7).

The learner records the judge's verdict on every question it asked in the question book
(:meth:`QuestionClosing.record`). For a *user's* question it then decides whether this
asking has ended (:meth:`QuestionClosing.close`) and says so with one
:class:`~sentient_core.events.QuestionClosedEvent`:

answered        the judge called the answer a success: the trace, its passage and source
already_known   memory held the answer (the judge's "already known", or the question
                was answered before and the user asks it again): the trace and its passage
not_found       the verdict failed and no route is left: the task-commitment drive
                (:mod:`~sentient_core.learning.commitment`) gave up or is off. The event
                lists every attempt of this asking (the route and the gate that stopped
                it) and why it stopped. Asking the same sources again would only fail
                again (a failed question returns only once the sources change, after its
                back-off), so the question is not left hanging: it ends here.

A closed ``not_found`` question is re-opened — a ``QuestionEvent`` with status
``reopened`` — when the sources change (the question book sends it back to the queue;
:meth:`QuestionClosing.reopened` notices), or when the user asks it again; it then ends
again with its own closing event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentient_core.events import Emitter, QuestionClosedEvent, QuestionEvent
from sentient_core.learning.questions import MAX_TRIED, QuestionRecord

if TYPE_CHECKING:
    from sentient_core.autonomy.judge import Judge
    from sentient_core.learning.commitment import TaskCommitment
    from sentient_core.learning.curiosity import Curiosity
    from sentient_core.learning.integration import Integrated
    from sentient_core.metamemory.loop import LoopMeta
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Verdict

__all__ = ["QuestionClosing"]

_PASSAGE = 600


class QuestionClosing:
    """Records verdicts on asked questions and ends each user question's asking.

    Parameters
    ----------
    curiosity : Curiosity
        Its question book is where outcomes are recorded.
    memory : HolographicMemory
        Read for the passage of an already-known answer.
    judge : Judge
        Its decisive margin says whether known content settles a question.
    commitment : TaskCommitment
        Whether a route is left, and why it gave up.
    meta : LoopMeta or None
        Told when a question keeps failing.

    Attributes
    ----------
    closed : dict
        Closing events emitted by this object, by outcome.
    reopened_count : int
        Questions re-opened.
    """

    def __init__(
        self,
        curiosity: Curiosity,
        memory,
        judge: Judge,
        commitment: TaskCommitment,
        meta: LoopMeta | None = None,
    ) -> None:
        self.curiosity, self.memory, self.judge = curiosity, memory, judge
        self.commitment, self.meta = commitment, meta
        self.closed: dict[str, int] = {"answered": 0, "already_known": 0, "not_found": 0}
        self.reopened_count = 0

    @property
    def book(self):
        return self.curiosity.book

    def ask(self, question: str, emit: Emitter) -> None:
        """A user asks ``question``: an event says what became of it.

        New: ``queued``. Answered before: ``answered`` and its closing event
        (``already_known``, the trace that answered it). Closed ``not_found`` before (or
        waiting from an older version): ``reopened``, asked again. A question the core
        raised itself becomes the user's (so it ends with a closing event)."""
        rec = self.curiosity.ask(question, origin="user")
        if rec.origin != "user" and rec.status in ("queued", "waiting", "dropped"):
            rec = self.book.update(rec.question, origin="user", gap_type="question")
        if rec.status == "answered":
            self._emit_question(emit, rec, "answered", rec.reason)
            self._close(emit, rec, "already_known", rec.answered_by, reason=rec.reason)
            return
        if rec.status in ("waiting", "dropped") and rec.origin == "user":
            self._reopen(emit, rec, "asked again by the user")
            return
        if rec.status == "asked" and rec.closed:
            # Handed out once and ended (a session stopped before its request ran, or
            # it closed): asked again, it goes back to the queue.
            self._reopen(emit, rec, "asked again by the user")
            return
        status = "queued" if rec.status == "asked" else rec.status
        self._emit_question(emit, rec, status, rec.reason)

    def record(
        self,
        req: ChaperoneRequest,
        response: ChaperoneResponse,
        verdict: Verdict,
        done: Integrated,
    ) -> None:
        """The judge's verdict on an asked question, in the book (answered, already
        known, or waiting with back-off)."""
        if req.type != "question" or req.gap_type == "followup":
            return
        cur = self.curiosity
        if verdict.outcome == "success":
            cur.record_outcome(req.question, "success", answered_by=done.first_new)
        elif (
            done.known
            and verdict.outcome == "not_applicable"
            and self.judge.decisive_margin(response.margin)
        ):
            # Already known: memory held the answer, the question is settled.
            cur.record_outcome(
                req.question,
                "success",
                answered_by=done.known_trace,
                reason=f"already known: memory held the answer (trace {done.known_trace})",
            )
        else:
            # What it stored was not claimed: it must not answer this question later.
            cur.record_outcome(req.question, verdict.outcome, unverified=done.new_ids)
            rec = self.book.get(req.question)
            if self.meta is not None and verdict.outcome == "failure" and rec is not None:
                self.meta.question_failing(req.question, rec.failures)

    def close(
        self,
        req: ChaperoneRequest,
        response: ChaperoneResponse,
        verdict: Verdict,
        done: Integrated,
        next_route: ChaperoneRequest | None,
        emit: Emitter,
        *,
        searching: bool = False,
    ) -> None:
        """After the verdict (and the task-commitment drive's choice ``next_route``) on a
        user's question: end its asking when it is answered, known, or out of routes
        (``searching``: a search for it is queued, another route)."""
        if req.type != "question" or req.gap_type == "followup":
            return
        rec = self.book.get(req.question)
        if rec is None or rec.origin != "user" or rec.closed:
            return
        attempt = f"{req.route or 'asked'}: {verdict.outcome} at the {verdict.gate or '?'} gate"
        rec = self.book.update(rec.question, tried=(*rec.tried, attempt[:300])[-MAX_TRIED:])
        if rec.status == "answered":
            known = rec.reason.startswith("already known")
            source = response.sources[0].ref if response.sources else ""
            passage = "" if known else done.text
            self._close(
                emit,
                rec,
                "already_known" if known else "answered",
                rec.answered_by,
                passage=passage,
                source=source,
                reason=rec.reason,
            )
        elif next_route is None and not searching:
            self._close(emit, rec, "not_found", -1, reason=self._why_not_found(rec, verdict))

    def reopened(self, emit: Emitter) -> None:
        """User questions closed ``not_found`` that the book sent back to the queue
        (the sources changed): open again, and the user is told."""
        for rec in self.book.records("queued"):
            if rec.origin == "user" and rec.closed == "not_found":
                self._reopen(emit, rec, "the sources changed since it was not found")

    def summary(self) -> dict[str, int]:
        """The user's questions in the book by how their latest asking ended (``open``:
        not ended yet)."""
        out = {"open": 0, "answered": 0, "already_known": 0, "not_found": 0}
        for rec in self.book.records():
            if rec.origin == "user":
                out[rec.closed or "open"] += 1
        return out

    # -- helpers ------------------------------------------------------------------------------

    def _why_not_found(self, rec: QuestionRecord, verdict: Verdict) -> str:
        """Why the asking stopped: the routes, the back-off, what re-opens it."""
        key = " ".join(rec.question.casefold().split())
        routes = (
            self.commitment.why.get(key, f"no route for the {verdict.gate} gate")
            if self.commitment.max_routes
            else "no other route: the task-commitment drive is off (learner.commit_routes = 0)"
        )
        wait = max(0, rec.retry_after - self.book.step)
        return (
            f"{routes}; the sources would answer the same again, so it waits (back-off"
            f" {wait} step(s), failure {rec.failures}) and re-opens when the sources change"
        )

    def _reopen(self, emit: Emitter, rec: QuestionRecord, why: str) -> None:
        self.book.update(
            rec.question, status="queued", closed="", tried=(), reason=f"re-opened: {why}"
        )
        self.commitment.forget(rec.question)
        self.reopened_count += 1
        self._emit_question(emit, rec, "reopened", why)

    def _close(
        self,
        emit: Emitter,
        rec: QuestionRecord,
        outcome: str,
        trace_id: int,
        *,
        passage: str = "",
        source: str = "",
        reason: str = "",
    ) -> None:
        if not passage and trace_id >= 0:
            found = self.memory.get(trace_id)
            passage = found.text if found is not None else ""
        if rec.closed != outcome:
            rec = self.book.update(rec.question, closed=outcome)
        self.closed[outcome] += 1
        emit.emit(
            QuestionClosedEvent,
            question=rec.question,
            outcome=outcome,
            trace_id=trace_id,
            passage=" ".join(passage.split())[:_PASSAGE],
            source=source[:300],
            tried=tuple(t[:300] for t in rec.tried),
            reason=reason[:600],
            attempts=len(rec.tried),
        )

    @staticmethod
    def _emit_question(emit: Emitter, rec: QuestionRecord, status: str, reason: str) -> None:
        emit.emit(
            QuestionEvent,
            question=rec.question,
            status=status,
            reason=reason,
            trace_id=rec.answered_by,
        )
