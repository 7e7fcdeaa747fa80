"""The autonomous learner: one loop, chaperone-gated, budgeted, judged (SPEC §4).

One iteration::

    budget.check_tick → observer ticks → curiosity.detect (+ focus goals) → drive (≤ 3)
    → for each initiative: budget.check_initiative → query → chaperone
      → ingest + integrate (grounded or answered content becomes learned traces)
      → judge → budget.commit → learn-from-outcome → a user's unanswered question's
      next route, or a search for a new source, in the same iteration → every ``reflect_every``
      iterations (and at a session's end): reflect → follow-ups to curiosity → condense
      agreeing episodes into semantic notes (:mod:`sentient_core.layers`)

Every step is published on the event bus and appended to the audit log (one flush
per iteration). Control: :meth:`Learner.start` runs the loop in one background
thread (a second start, or resume, never starts another), :meth:`pause`/:meth:`resume`,
:meth:`stop`; :meth:`run` runs N iterations synchronously (the CLI and the tests use
it). With an injected clock and seed, a session is deterministic.
"""

from __future__ import annotations

import contextlib
import errno
import threading
import time
from typing import TYPE_CHECKING

import msgspec

from sentient_core.errors import SentientError, exhaustion
from sentient_core.events import (
    BudgetEvent,
    CuriosityEvent,
    Emitter,
    ErrorEvent,
    GapSummary,
    IterationEvent,
    JudgeEvent,
    LearnEvent,
    QueryEvent,
    QuestionEvent,
    ReflectEvent,
    SessionEvent,
    SkipEvent,
)
from sentient_core.learning.closing import QuestionClosing
from sentient_core.learning.commitment import TaskCommitment
from sentient_core.learning.curiosity import Curiosity
from sentient_core.learning.goals import GoalLoop
from sentient_core.learning.housekeeping import condense_step, repair_step
from sentient_core.learning.idle import idle_reasons
from sentient_core.learning.integration import AnswerIntegration, Integrated
from sentient_core.learning.llm import tokens_since, usage_of
from sentient_core.learning.loop_config import (
    MAX_SESSION_ITERATIONS,
    IterationReport,
    LearnerConfig,
)
from sentient_core.learning.parts import Drives, Gate, Knowledge, Runtime
from sentient_core.learning.query import QueryFormulator
from sentient_core.learning.reflect import reflect
from sentient_core.store import StoreFullError, StoreIOError
from sentient_core.vocab import (
    ChaperoneRequest,
    ChaperoneResponse,
    IterationOutcome,
    SessionStats,
)

if TYPE_CHECKING:
    from sentient_core.autonomy.budget import Status
    from sentient_core.metamemory.loop import LoopMeta

__all__ = [
    "MAX_SESSION_ITERATIONS",
    "Drives",
    "Gate",
    "IterationReport",
    "Knowledge",
    "Learner",
    "LearnerConfig",
    "Runtime",
]


class Learner:
    """Runs the learning loop over a core, a chaperone, a budget and a judge.

    Parameters
    ----------
    knowledge : Knowledge
        Memory, observer and integrator: the core being taught.
    gate : Gate
        Chaperone, budget and judge: what every initiative passes.
    drives : Drives
        Drive, curiosity and pursuit: what proposes initiatives.
    runtime : Runtime
        The event bus, and injectable time (deterministic tests).
    config : LearnerConfig, optional
    metamemory : LoopMeta, optional
        Learning from error (:mod:`sentient_core.metamemory.loop`); None: off.

    Each collaborator is also an attribute (``memory``, ``chaperone``, ``drive``,
    ``events``, ``clock``, ...); ``meta`` is the meta-memory.
    """

    def __init__(
        self,
        knowledge: Knowledge,
        gate: Gate,
        drives: Drives,
        runtime: Runtime,
        *,
        config: LearnerConfig | None = None,
        metamemory: LoopMeta | None = None,
    ) -> None:
        self.config = config or LearnerConfig()
        self.memory, self.observer = knowledge.memory, knowledge.observer
        self.integrator, self.condenser = knowledge.integrator, knowledge.condenser
        self.chaperone, self.budget, self.judge = gate.chaperone, gate.budget, gate.judge
        self.search = gate.search_step()  # new sources for what the usual route did not answer
        self.drive, self.pursuit = drives.drive, drives.pursuit
        self.curiosity = drives.curiosity or Curiosity(self.observer, self.memory)
        self.recipes, self.repair = drives.recipe_use(), drives.repair  # tried first; mended
        self.events = events = runtime.events
        self.clock, self.sleep = runtime.clock, runtime.sleep
        self.answers = AnswerIntegration(
            self.integrator, self.observer, events, self.chaperone, self.judge
        )
        self.meta = metamemory
        self.query = QueryFormulator(session=self.config.session)
        self.commitment = TaskCommitment(self.config.commit_routes)
        # Every user question ends in one closing event; focus goals end when criteria hold.
        self.closing = QuestionClosing(
            self.curiosity, self.memory, self.judge, self.commitment, metamemory
        )
        self.goals = GoalLoop(self.pursuit, self.curiosity.book)
        self.stats = SessionStats()
        # Events of this session outside any iteration; each step gets its own scope (.at).
        self._emit: Emitter = events.emitter(session=self.config.session)
        self._iteration = 0
        self._reflected_at = 0
        self._thread: threading.Thread | None = None
        self._control = threading.Lock()
        self._stop = threading.Event()
        self._stop_reason = "stop"
        self._resume = threading.Event()
        self._resume.set()
        self._parked = threading.Event()
        self._active = threading.Event()  # inside run(), in any thread

    # -- control ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a loop runs: the background thread, or :meth:`run` in any thread."""
        return self._active.is_set() or (self._thread is not None and self._thread.is_alive())

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    @property
    def state(self) -> str:
        """``idle`` (no loop), ``running``, ``pausing`` (the current iteration finishes
        first), ``paused`` (the loop waits; no iteration starts) or ``stopping``."""
        if not self.running:
            return "idle"
        if self._stop.is_set():
            return "stopping"
        if self.paused:
            return "paused" if self._parked.is_set() else "pausing"
        return "running"

    @property
    def iteration(self) -> int:
        """Iterations begun in this session."""
        return self._iteration

    def start(self) -> bool:
        """Start the loop in a background thread; False if one is already running."""
        with self._control:
            if self.running:
                return False
            self._stop.clear()
            self._stop_reason = "stop"
            self._resume.set()
            self._thread = threading.Thread(target=self._loop, name="sentient-learner", daemon=True)
            self._thread.start()
            return True

    def pause(self) -> None:
        """Pause after the current iteration (the thread keeps waiting, no new loop)."""
        self._resume.clear()
        self._emit.emit(SessionEvent, state="paused")

    def resume(self) -> None:
        """Resume a paused loop. Never starts a second loop."""
        self._resume.set()
        self._emit.emit(SessionEvent, state="resumed")

    def stop(self, timeout: float | None = 10.0, *, reason: str = "stop") -> None:
        """Stop the loop after the current step and wait for the thread.

        ``reason`` becomes ``stats.stopped_by`` (``learn`` says ``interrupted``
        after Ctrl-C).
        """
        self._stop_reason = reason
        self._stop.set()
        self._resume.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self.events.flush()

    def close(self) -> None:
        """Stop the loop and close the chaperone's network clients."""
        self.stop()
        for name in ("fetcher", "llm", "searcher"):
            part = getattr(self.chaperone, name, None)
            close = getattr(part, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _loop(self) -> None:
        try:
            self.run(self.config.max_iterations, background=True)
        except Exception as err:  # the thread must report, not die silently
            self._emit.emit(ErrorEvent, where="loop", error=f"{type(err).__name__}: {err}")
            self.events.flush()

    # -- running ----------------------------------------------------------------------------

    def run(self, iterations: int | None = None, *, background: bool = False) -> SessionStats:
        """Run up to ``iterations`` (capped by ``max_iterations`` per session).

        With ``background``, :meth:`pause`, :meth:`resume` and :meth:`stop` from
        other threads steer this run (the loop thread uses it; so does ``learn``,
        which runs it in the main thread and serves the control channel).
        """
        self._active.set()
        try:
            return self._run(iterations, background)
        finally:
            self._active.clear()

    def _run(self, iterations: int | None, background: bool) -> SessionStats:
        limit = self.config.max_iterations
        todo = limit if iterations is None else min(iterations, limit - self._iteration)
        self._emit.emit(SessionEvent, state="started", iterations=todo)
        for n in range(max(todo, 0)):
            if background and not self._resume.is_set():
                self._parked.set()
                self._resume.wait()
                self._parked.clear()
            if self._stop.is_set():
                self.stats.stopped_by = self.stats.stopped_by or self._stop_reason
                break
            try:
                report = self.step()
            except (StoreIOError, StoreFullError) as err:
                # The disk is full (or the map cannot grow): nothing of the failed
                # write was committed. Say so and stop cleanly; retrying cannot help.
                self.stats.stopped_by = (
                    f"store:{'full' if isinstance(err, StoreFullError) else 'io'}"
                )
                self.stats.error = str(err)
                self._emit.emit(ErrorEvent, where="store", error=str(err))
                break
            except OSError as err:
                # Out of file descriptors, memory or space outside the store: the
                # same clean stop, with what ran out.
                reason = exhaustion(err)
                if reason is None:
                    raise
                self.stats.stopped_by = f"resource:{errno.errorcode.get(err.errno or 0, 'OS')}"
                self.stats.error = reason
                self._emit.emit(ErrorEvent, where="resource", error=reason)
                break
            if report.stopped_by:
                self.stats.stopped_by = report.stopped_by
                break
            if n + 1 < todo and self.config.interval_s > 0:
                if background:
                    self._stop.wait(self.config.interval_s)
                else:
                    self.sleep(self.config.interval_s)
        else:
            if self._iteration >= limit and not self.stats.stopped_by:
                self.stats.stopped_by = "max_iterations"
        if (
            self.config.reflect_every
            and self._iteration > self._reflected_at
            and not self.stats.stopped_by.startswith(("budget:kill_switch", "store:", "resource:"))
        ):
            # Consolidate what this session learned since the last reflection.
            self._reflect(self._emit)
        if self.meta is not None and not self.stats.stopped_by.startswith(("store:", "resource:")):
            self.meta.close()  # train the scorer on the session's last judged outcomes
        self.stats.idle = idle_reasons(self)  # every gate fired, or says why it did not
        self._emit.emit(SessionEvent, state="ended", stats=msgspec.structs.replace(self.stats))
        try:
            self.events.flush()
        except (StoreIOError, StoreFullError):
            if not self.stats.stopped_by.startswith(("store:", "resource:")):
                raise
            # The audit log cannot be written either; the listeners saw every event.
        return self.stats

    def ask(self, question: str) -> None:
        """Hand an explicit user question to curiosity; events say what became of it
        (:meth:`QuestionClosing.ask <sentient_core.learning.closing.QuestionClosing.ask>`)."""
        self.closing.ask(question, self._emit)

    def step(self) -> IterationReport:
        """One iteration of the loop (see the module docstring)."""
        t0 = time.perf_counter()
        waited = 0.0
        self._iteration += 1
        it = self._iteration
        emit = self._emit.at(it)
        report = IterationReport(iteration=it)
        self.budget.begin_tick()
        decision = self.budget.check_tick()
        if not decision.allowed:
            self.stats.budget_stops += 1
            emit.emit(BudgetEvent, allowed=False, cap=decision.cap, reason=decision.reason)
            report.stopped_by = f"budget:{decision.cap}"
            self.events.flush()
            return report
        self.observer.tick(self.config.ticks_per_iteration)
        self.goals.sync()  # open goals' questions in the book; ended goals' dropped
        signal = self.curiosity.detect()
        self.closing.reopened(emit)
        gaps = list(signal.gaps)
        # A user's question is served first: in an iteration that asks one (or
        # finds memory answering it), requests go to the user's questions only. The loop's own gaps
        # stay in the question book and its follow-ups stay pending for an
        # iteration without one (what the user asked about is what gets stored).
        user_first = any(g.type == "question" for g in gaps) or any(
            a.origin == "user" for a in signal.answered
        )
        if user_first:
            gaps = [g for g in gaps if g.type == "question"]
        # Pursuit is a drive of its own: its (rare) initiatives do not compete
        # with curiosity's cap of 3 proposals per tick.
        pursued = self.goals.propose() if not user_first else []
        for g in [*gaps, *pursued]:
            self.stats.gaps[g.type] = self.stats.gaps.get(g.type, 0) + 1
        report.gaps, report.intensity = len(gaps) + len(pursued), signal.intensity
        emit.emit(
            CuriosityEvent,
            gaps=tuple(GapSummary(g.type, g.topic, g.question) for g in [*gaps, *pursued]),
            intensity=signal.intensity,
        )
        requests: list[ChaperoneRequest] = [] if user_first else self.query.followups()
        proposals = self.drive.propose(gaps) if gaps else []
        for a in signal.answered:
            emit.emit(
                QuestionEvent,
                question=a.question,
                status="answered",
                reason="memory already answers it",
                trace_id=a.trace_id,
                relevance=a.relevance,
                origin=a.origin,
            )
            if self.meta is not None and self._meta_contradicts(a.question, a.trace_id, emit):
                # Grounded evidence contradicts memory's answer: the question is open again.
                self.curiosity.book.update(a.question, status="queued", answered_by=-1)
                emit.emit(
                    QuestionEvent,
                    question=a.question,
                    status="queued",
                    reason=f"memory's answer (trace {a.trace_id}) is contradicted by the corpus",
                    origin=a.origin,
                )
        # Questions cut by the cap stay queued in the book for the next tick: never lost.
        for g in proposals:
            self.curiosity.mark_asked(g.question)
            if g.type == "question":
                emit.emit(QuestionEvent, question=g.question, status="asked")
        requests.extend(self.recipes.first(map(self.query.from_gap, [*pursued, *proposals]), emit))
        if not requests and (signal.skip or not gaps):
            self.stats.skipped += 1
            self.stats.iterations += 1
            report.skipped = True
            emit.emit(SkipEvent, reason=f"intensity {signal.intensity:.2f} below threshold")
            self.events.flush()
            report.overhead_s = time.perf_counter() - t0
            return report
        for req in requests:
            # Answers from the local corpus cost no tokens and no tool calls: only
            # calls that leave the process (LLM, web) count against the caps.
            calls = self.chaperone.may_call_out(req)
            decision = self.budget.check_initiative(
                self.config.initiative_tokens if calls else 0, calls
            )
            if not decision.allowed:
                self.stats.budget_stops += 1
                self.budget.commit(0, 0, "skipped")
                emit.emit(BudgetEvent, allowed=False, cap=decision.cap, reason=decision.reason)
                if decision.cap.startswith("daily") or decision.cap == "kill_switch":
                    report.stopped_by = f"budget:{decision.cap}"
                break
            waited += self._initiative(req, report, emit)
            requests.extend([*self.commitment.routes(), *self.search.requests(self.stats, emit)])
        self.stats.iterations += 1
        if self.config.reflect_every and it % self.config.reflect_every == 0:
            self._reflect(emit)
        spend = self.budget.today()
        emit.emit(
            IterationEvent,
            initiatives=report.initiatives,
            ingested=report.ingested,
            outcomes=tuple(report.outcomes),
            coherence=self.observer.coherence,
            smf=self.observer.orientation(),
            traces=self.memory.count,
            tokens_today=spend.tokens,
            tool_calls_today=spend.tool_calls,
        )
        self.events.flush()
        report.overhead_s = time.perf_counter() - t0 - waited
        return report

    def _initiative(self, req: ChaperoneRequest, report: IterationReport, emit: Emitter) -> float:
        """Run one request through chaperone → ingest → judge → learn; returns time waited."""
        report.initiatives += 1
        self.stats.initiatives += 1
        self.stats.queries += 1
        self.stats.requests[req.type] = self.stats.requests.get(req.type, 0) + 1
        emit.emit(
            QueryEvent,
            id=req.id,
            type=req.type,
            topic=req.topic,
            question=req.question,
            url=req.url,
            path=req.path,
        )
        usage_before = usage_of(self.chaperone.llm)
        prediction = self.meta.predict(req) if self.meta is not None else None
        llm = self.chaperone.llm
        # One model deadline for the whole question: answer, summary and judge.
        with llm.question() if llm is not None else contextlib.nullcontext():
            t = time.perf_counter()
            response: ChaperoneResponse = self.chaperone.handle(req, emit)
            waited = time.perf_counter() - t
            done = Integrated()
            if response.refused:
                self.stats.refused += 1
            elif not response.ok:
                self.stats.failed += 1
            elif response.content.strip() and not (
                self.meta is not None and req.gap_type == "debt" and req.type != "question"
            ):
                # A debt's discriminating read is a check (meta-memory weighs its content
                # as evidence), not new knowledge: its content is not integrated.
                done = self.answers.integrate(req, response, emit)
            report.ingested += done.new
            self.stats.ingested += done.new
            verdict = self.judge.judge(
                IterationOutcome.from_response(
                    response,
                    integrated_chunks=done.new,
                    known_chunks=done.known,
                    known_trace=done.known_trace,
                    best_known=done.best_known,
                    relevance=done.relevance,
                    question=req.question,
                    answer=done.text if done.text else None,
                ),
                emit,
            )
        report.outcomes.append(verdict.outcome)
        self.stats.outcomes[verdict.outcome] = self.stats.outcomes.get(verdict.outcome, 0) + 1
        self.stats.gates[verdict.gate] = self.stats.gates.get(verdict.gate, 0) + 1
        emit.emit(
            JudgeEvent,
            id=req.id,
            outcome=verdict.outcome,
            basis=verdict.basis,
            reason=verdict.reason,
            relevance=verdict.relevance,
            focus=verdict.focus,
            gate=verdict.gate,
        )
        status: Status = (
            "done"
            if verdict.outcome in ("success", "could_not_verify")
            else "skipped"
            if response.refused
            else "failed"
        )
        # Every model call of the iteration (answer, summary, judge) in one count.
        tokens, estimated = tokens_since(self.chaperone.llm, usage_before, response.tokens)
        self.stats.tokens += tokens
        self.stats.tokens_estimated += estimated
        self.budget.commit(tokens, response.tool_calls, status)
        self.closing.record(req, response, verdict, done)  # answered, known, or waiting
        if self.meta is not None:
            self._meta_observe(req, response, verdict, done, prediction, emit)
        self.recipes.judged(req, response, verdict, emit, self.stats)  # a reuse, or a birth
        self._learn(req, response, verdict.outcome, emit)
        routed = self.commitment.consider(req, verdict, self.curiosity.book, emit)
        searching = self.search.consider(
            req, verdict, done, routed, self.curiosity, self.stats, emit
        )
        # A user question ends unless a route or a search is still to come.
        self.closing.close(req, response, verdict, done, routed, emit, searching=searching)
        return waited

    def _meta_contradicts(self, question: str, trace_id: int, emit: Emitter) -> bool:
        assert self.meta is not None
        try:
            return self.meta.check_answer(
                question, trace_id, store=self.answers.passage_store(emit)
            )
        except SentientError as err:
            emit.emit(ErrorEvent, where="metamemory", error=f"{type(err).__name__}: {err}")
            return False

    def _meta_observe(self, req, response, verdict, done, prediction, emit: Emitter) -> None:
        """Feed the judged initiative to meta-memory; its failure is an error event."""
        assert self.meta is not None
        try:
            self.meta.observe(
                req,
                response,
                verdict,
                stored=done.stored,
                prediction=prediction,
                relevance_of_best=done.relevance,
                store=self.answers.passage_store(emit),
            )
        except SentientError as err:
            emit.emit(ErrorEvent, where="metamemory", error=f"{type(err).__name__}: {err}")

    def _learn(
        self, req: ChaperoneRequest, response: ChaperoneResponse, outcome: str, emit: Emitter
    ) -> None:
        """Learn from the outcome: follow-ups, focus progress, concepts."""
        self.query.observe(req, response)
        if outcome == "success":
            self.stats.concepts += 1
        self.goals.judged(req, outcome, emit)  # focus progress; goals whose criteria hold
        emit.emit(LearnEvent, id=req.id, outcome=outcome, followups=self.query.pending)

    def _not_a_followup(self, question: str) -> bool:
        return self.curiosity.folded(question) or not self.chaperone.supported(question)

    def _reflect(self, emit: Emitter) -> None:
        self._reflected_at = self._iteration
        known = frozenset(rec.key for rec in self.curiosity.book.records())
        # Not asked: a subject known under other words, or a phrase nothing defines.
        r = reflect(self.memory, self.observer, asked=known, folded=self._not_a_followup)
        for q in r.followups:
            self.curiosity.ask(q, origin="followup")
        self.stats.reflections += 1
        self.stats.links += r.links
        emit.emit(
            ReflectEvent,
            traces=r.traces,
            links=r.links,
            dominant_axis=r.dominant_axis,
            insights=r.insights,
            followups=r.followups,
        )
        condense_step(self.condenser, self.stats, emit)
        repair_step(self.repair, self.stats, emit)
