"""One learner over one data directory, shared by the HTTP handlers and the control socket.

:class:`LearnerHost` owns the event bus (one for the life of the server, so
the live stream spans sessions), the current :class:`Learner` and a flusher
thread that commits published events to the audit log soon after they happen
(the stream is the log). Every verb is thread-safe; control verbs are
serialised, so concurrent ``start`` calls start one loop. A finished or
stopped session is replaced by a new one (a new session id) at the next start.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from sentient_core.analysis import content_terms, query_words
from sentient_core.config import Effective, log_unsafe
from sentient_core.control import (
    ActivityTracker,
    Command,
    LearnerStatus,
    learner_status,
    pause_learner,
    resume_learner,
)
from sentient_core.core import Core
from sentient_core.errors import ArgumentError, exhaustion
from sentient_core.events import EventBus
from sentient_core.ingest import SUPPORTED
from sentient_core.learning.learner import Learner
from sentient_core.learning.session import build_learner, incoming_dir
from sentient_core.relevance import relevance
from sentient_core.safetext import safe_path_text
from sentient_core.server.health import Health
from sentient_core.server.schemas import (
    FocusListReply,
    FocusReply,
    IngestReply,
    LinkedTrace,
    LinksReply,
    QuestionReply,
    QuestionsReply,
    RecallExplain,
    RecallHit,
    RecallMiss,
    RecallReply,
)

__all__ = ["Flusher", "LearnerHost", "UploadRefused"]


class UploadRefused(ArgumentError):
    """An ``/ingest`` upload's name has no supported extension (the server answers 415)."""


class Flusher:
    """Commit published events to the audit log ``delay_s`` after the first one pending.

    One thread; a burst of events becomes one commit. The learner still
    flushes at the end of each step, so nothing depends on this thread.
    """

    def __init__(self, bus: EventBus, delay_s: float, health: Health | None = None) -> None:
        self.bus = bus
        self.delay_s = delay_s
        self.health = health
        self.commits = 0
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._unsubscribe = bus.subscribe(lambda _e: self._wake.set())
        self._thread = threading.Thread(target=self._run, name="sentient-flusher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._closed.is_set():
            self._wake.wait()
            self._wake.clear()
            if self.delay_s > 0:
                self._closed.wait(self.delay_s)
            try:
                if self.bus.flush():
                    self.commits += 1
                    if self.health is not None:
                        self.health.clear("audit log")
                elif self.bus.pending:
                    # Another thread is between write_in and confirm: try again shortly.
                    self._closed.wait(0.01)
                    self._wake.set()
            except Exception as exc:  # the learner flushes too and reports its own failures
                reason = exhaustion(exc)
                if reason is not None and self.health is not None:
                    self.health.report("audit log", reason)
                self._closed.wait(0.5)

    def close(self) -> None:
        """Stop the thread, then flush what is left."""
        self._unsubscribe()
        self._closed.set()
        self._wake.set()
        self._thread.join(5.0)
        with contextlib.suppress(Exception):
            self.bus.flush()


def _safe_upload_name(name: str) -> str:
    """The last path component of ``name``, with nothing but [A-Za-z0-9._-] kept."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(c if (c.isalnum() and c.isascii()) or c in "._-" else "_" for c in base)
    cleaned = cleaned.lstrip(".")[:120]
    if not cleaned or Path(cleaned).suffix.lower() not in SUPPORTED:
        raise UploadRefused(
            f"{name!r}: unsupported file type (supported: {', '.join(sorted(SUPPORTED))})"
        )
    return cleaned


class LearnerHost:
    """The served learner and everything the endpoints do with the core.

    Parameters
    ----------
    core : Core
        Opened in this process (never across a fork).
    effective : Effective
        The settings in force (learner, chaperone, safety, budget, server).
    env : mapping
        Where the kill switch is read.
    clock : callable
    """

    def __init__(
        self,
        core: Core,
        effective: Effective,
        *,
        env: Mapping[str, str] = os.environ,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.core = core
        self.effective = effective
        self.data_dir = str(core.data_dir)
        self._env = env
        self._clock = clock
        self.bus = EventBus(core.store, clock=clock)
        self.activity = ActivityTracker(self.bus)
        self._lock = threading.RLock()
        self._ingest_lock = threading.Lock()
        self._sessions = 0
        self.started = 0
        self.unsafe = log_unsafe(effective, self.bus)
        self.learner: Learner = self._build()
        self.health = Health()
        self.flusher = Flusher(
            self.bus, effective.settings.server.flush_delay_ms / 1000.0, self.health
        )
        self.bus.flush()

    def _build(self) -> Learner:
        self._sessions += 1
        session = time.strftime("s%Y%m%d-%H%M%S", time.gmtime(self._clock()))
        settings = self.effective.learner_settings(
            self.core.data_dir, f"{session}-{self._sessions}"
        )
        return build_learner(self.core, settings, events=self.bus, env=self._env, clock=self._clock)

    # -- control (also the control socket's verbs) ----------------------------------------

    def status(self) -> LearnerStatus:
        """The current learner's status (never waits for a control verb)."""
        learner = self.learner
        return learner_status(
            learner, mode="serve", data_dir=self.data_dir, activity=self.activity.latest()
        )

    def degraded(self) -> tuple[str, ...]:
        """What ran out, as ``where: reason`` lines (empty: healthy).

        The current session's learner stopped by a full disk, a full map or
        missing descriptors counts until a new session starts.
        """
        stats = self.learner.stats
        mine: tuple[str, ...] = ()
        if stats.stopped_by.startswith(("store:", "resource:")):
            mine = (f"learner: {stats.error or stats.stopped_by}",)
        return tuple(sorted(mine + self.health.reasons()))

    def start(self) -> Command:
        """Start a session's loop; never a second one (a new session after a finished one)."""
        with self._lock:
            learner = self.learner
            if learner.running:
                return Command(
                    ok=False, state=learner.state, message="already running (one loop at a time)"
                )
            if learner.iteration > 0:
                learner.close()
                learner = self.learner = self._build()
            learner.start()
            self.started += 1
            return Command(
                ok=True, state=learner.state, message=f"started {learner.config.session}"
            )

    def pause(self) -> Command:
        with self._lock:
            return pause_learner(self.learner)

    def resume(self) -> Command:
        with self._lock:
            return resume_learner(self.learner)

    def stop(self) -> Command:
        """Stop the loop after its current step and wait for it."""
        with self._lock:
            learner = self.learner
            if not learner.running:
                return Command(ok=False, state=learner.state, message="not running")
            learner.stop()
            return Command(ok=True, state=learner.state, message="stopped")

    # -- requests ---------------------------------------------------------------------------

    def ask(self, question: str) -> QuestionReply:
        """Hand a question to curiosity; the reply (and an event) says what became of it."""
        with self._lock:
            learner = self.learner
            learner.ask(question)
        record = learner.curiosity.book.get(question)
        status = "queued" if record is None or record.status == "asked" else record.status
        return QuestionReply(
            question=question,
            status=status,
            reason=record.reason if record is not None else "",
            session=learner.config.session,
            closed=record.closed if record is not None else "",
        )

    def focus(self, topic: str, questions=(), condition: str = "") -> FocusReply:
        """Declare a focus goal for the pursuit drive, with its resolution criteria."""
        pursuit = self._pursuit()
        before = pursuit.find(topic)
        goal = pursuit.add(topic, questions=tuple(questions), condition=condition)
        action = "declared" if before is None else "reopened" if before.status != "open" else ""
        if action:
            self._focus_event(goal, action)
        return _focus_reply(goal)

    def focus_list(self) -> FocusListReply:
        """Every goal with its criteria checked against the learner's question book."""
        from sentient_core.learning.goals import goal_rows

        return FocusListReply(goals=goal_rows(self._pursuit().goals(), self.learner.curiosity.book))

    def focus_end(self, verb: str, goal: str, reason: str = "") -> FocusReply:
        """``done`` (resolved by the user) or ``close`` (given up) one goal, by id or topic.

        Raises
        ------
        NotFoundError
            No such goal.
        """
        pursuit = self._pursuit()
        found = pursuit.find(goal)
        goal_id = found.id if found is not None else goal
        before = pursuit.get(goal_id)
        if before.status != "open":
            return _focus_reply(before)
        if verb == "done":
            ended = pursuit.resolve(goal_id, by="done", reason=reason or "the user said it is done")
        else:
            ended = pursuit.close(goal_id, reason=reason or "closed")
        self._focus_event(ended, "resolved" if verb == "done" else "closed")
        return _focus_reply(ended)

    def questions(self) -> QuestionsReply:
        """The user's questions and how each one's latest asking ended."""
        from sentient_core.learning.goals import user_questions

        return QuestionsReply(questions=user_questions(self.learner.curiosity.book))

    def _pursuit(self):
        pursuit = self.learner.pursuit
        if pursuit is None:  # build_learner always gives one
            raise ArgumentError("this learner has no pursuit drive to take focus goals")
        return pursuit

    def _focus_event(self, goal, action: str) -> None:
        from sentient_core.events import FocusEvent

        emit = self.bus.emitter(session=self.learner.config.session)
        emit.emit(FocusEvent, goal=goal.id, topic=goal.topic, action=action, reason=goal.reason)

    def recall(
        self,
        query: str,
        k: int,
        explain: bool,
        threshold: float = 0.0,
        rank: str = "scored",
        spread: int | None = None,
    ) -> RecallReply:
        """The ``k`` traces ``cli.py recall`` ranks first for ``query`` (the same
        :meth:`Core.recall`; ``scored`` uses the learner's meta-memory) — no use count
        bumped (:meth:`record_miss` records it if it found nothing relevant).
        ``spread``: link hops (None: ``server.recall_spread``)."""
        from sentient_kernels import smf

        if spread is None:
            spread = self.effective.settings.server.recall_spread
        hits = self.core.recall(query, k, rank=rank, threshold=threshold, spread=spread)
        if explain:
            terms = set(query_words(query).content)
            now = self.core.observer.smf
        out = []
        for position, h in enumerate(hits, 1):
            r = h.record
            why = None
            if explain:
                shared = sorted(terms & set(content_terms(r.text)))
                why = RecallExplain(
                    cosine=h.cosine if h.cosine is not None else h.score,
                    relevance=relevance(query, r.text),
                    shared_terms=tuple(shared),
                    smf_similarity=smf.similarity_pair(_as_array(r.smf), now),
                    strength=r.strength,
                    use_count=r.use_count,
                    age_s=max(0.0, self._clock() - r.created),
                )
            out.append(
                RecallHit(
                    rank=position,
                    id=r.id,
                    score=h.score,
                    kind=r.kind,
                    source=r.source,
                    topic=r.topic,
                    text=r.text[:2000],
                    explain=why,
                )
            )
        return RecallReply(query=query, k=k, hits=out)

    def record_miss(self, reply: RecallReply) -> RecallReply:
        """``reply`` with its miss, when none of its hits is relevant to the query (the
        miss is recorded, as ``cli.py recall`` records one)."""
        missed = self.core.misses.note_texts(reply.query, [h.text for h in reply.hits], "api")
        if missed is None:
            return reply
        miss = RecallMiss(
            subject=missed.subject,
            count=missed.count,
            status=missed.status,
            question=missed.question,
        )
        return msgspec.structs.replace(reply, miss=miss)

    def links(self, trace_id: int) -> LinksReply | None:
        """Trace ``trace_id`` and its linked neighbours (None: no such trace)."""
        memory = self.core.memory
        rec = memory.get(trace_id)
        if rec is None:
            return None
        book = getattr(self.learner.curiosity, "book", None)
        answered = {r.answered_by for r in book.records("answered")} if book is not None else set()
        out = []
        for lk in sorted(memory.links(trace_id), key=lambda lk: (-lk.weight, lk.dst)):
            n = memory.get(lk.dst)
            if n is None:
                continue
            out.append(
                LinkedTrace(
                    id=n.id,
                    weight=lk.weight,
                    kind=n.kind,
                    source=n.source,
                    topic=n.topic,
                    text=n.text[:300],
                    answered=n.id in answered,
                    retired=n.retired,
                )
            )
        return LinksReply(id=rec.id, topic=rec.topic, text=rec.text[:2000], neighbours=out)

    def logs(self, count: int) -> list[dict]:
        """The chaperone's interaction log, the last ``count`` entries, oldest first."""
        chaperone = self.learner.chaperone
        return [msgspec.to_builtins(i) for i in chaperone.interactions(count)]

    def upload_path(self, name: str) -> Path:
        """Where an upload called ``name`` is saved (inside the incoming dir)."""
        folder = incoming_dir(self.core.data_dir) / "uploads"
        folder.mkdir(exist_ok=True)
        return folder / _safe_upload_name(name)

    def ingest(self, path: Path) -> IngestReply:
        """Ingest a saved upload as ``cli.py ingest`` does (same extraction and limits)."""
        with self._ingest_lock:
            summary = self.core.ingest([path])
        return IngestReply(
            name=path.name,
            files=summary.files,
            chunks=summary.chunks,
            duplicates=summary.duplicates,
            unchanged=summary.unchanged,
            bytes=summary.bytes,
            skipped=tuple(
                f"{safe_path_text(Path(s.path).name)}: {s.reason}" for s in summary.skipped
            ),
            stopped_by=summary.stopped_by,
        )

    def close(self) -> None:
        """Stop the loop, flush the log and close the chaperone's clients (not the core)."""
        with self._lock:
            self.learner.close()
        self.flusher.close()
        self.activity.unsubscribe()


def _as_array(values):
    import numpy as np

    return np.asarray(values, dtype=np.float64)


def _focus_reply(goal) -> FocusReply:
    return FocusReply(
        id=goal.id,
        topic=goal.topic,
        status=goal.status,
        condition=goal.condition,
        questions=goal.questions,
        reason=goal.reason,
    )
