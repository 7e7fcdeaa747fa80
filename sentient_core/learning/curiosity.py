"""Curiosity: find the core's own knowledge gaps, and remember what it asked (SPEC §4).

Gap sources, in priority order (:data:`sentient_core.vocab.GAP_PRIORITY`):

question        an explicit user question
memory_miss     a question the core raised itself (a reflection's follow-up),
                or a subject recalls keep missing: a recall (CLI, API, the
                learner's own check of memory for a queued question) whose hits
                hold nothing relevant is recorded in the store's miss log
                (:mod:`sentient_core.misses`); a subject missed ``miss_repeats``
                times becomes this gap and its question is queued
debt            an open epistemic debt of meta-memory (``debts``): its
                discriminating test, priority from the debt formula
coherence_drop  the observer's coherence fell ``coherence_drop`` below its recent
                mean: ask about the unexplored topic of the sources nearest to
                the latest trace (as for an SMF axis, below; nothing without one)
link            a densely linked subject with one unanswered neighbour: ask about
                that neighbour (``links``, :mod:`~sentient_core.learning.link_gaps`)
smf_imbalance   an SMF axis below ``axis_fraction · |s|``, lowest axes first,
                each axis resting ``axis_cooldown`` iterations after it was
                asked. The gap is mapped onto something the sources can answer:
                of the topics the corpus offers (``topics``) that the book has
                not settled, the one most related to the axis question (e.g.
                wisdom → "What is the nature of deep understanding?") — the
                first unexplored one when none is related; with a ``field``
                (:mod:`~sentient_core.learning.field_gaps`), the one whose
                passage loads the axis most. Only without any topic left is the
                abstract axis question itself asked.

Every question goes through the :class:`~sentient_core.learning.questions.QuestionBook`,
which persists across sessions: a question answered (by the chaperone, or by
memory already) is never asked again; a failed one waits with back-off and
returns only once memory or the sources changed; queued questions wait in the
book, oldest first, until a drive picks them. A recalled trace may settle a
question without asking (``CuriosityConfig.memory_settles``: the relevance
check ``answers``, the judge's in the learner); the learner turns that off, as
relevance alone was not precise enough to claim an answer (see
:class:`CuriosityConfig`): every question is asked, and the judge says whether
its answer was new or already known.

Intensity = min(1, 0.5 + 0.1·#gaps) when there is at least one gap, else 0;
an iteration whose intensity is below ``min_intensity`` (0.3) is skipped.
Every source keeps a counter, so a gap type that never fires shows up as a
zero instead of as silence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
import numpy as np

from sentient_core.keyphrases import key_phrases, near_repeat, question_about, topic_terms
from sentient_core.learning.query import extract_paths, extract_urls
from sentient_core.learning.questions import QuestionBook, QuestionRecord
from sentient_core.misses import REPEATS, MissLog, MissRecord, miss_question
from sentient_core.relevance import relevance
from sentient_core.vocab import GAP_PRIORITY, Gap, gap_rank
from sentient_kernels.smf import AXES

if TYPE_CHECKING:
    from sentient_core.learning.chaperone import CorpusTopic
    from sentient_core.learning.field_gaps import FieldGaps
    from sentient_core.learning.link_gaps import LinkGaps
    from sentient_core.memory import Hit

__all__ = ["AXIS_QUESTIONS", "Answered", "Curiosity", "CuriosityConfig", "CuriositySignal"]

AXIS_QUESTIONS: dict[str, str] = {
    "coherence": "What are the principles of logical consistency?",
    "identity": "What constitutes personal identity and continuity?",
    "duality": "How do complementary opposites relate in nature?",
    "structure": "What are fundamental patterns of organization?",
    "change": "What are the mechanisms of transformation?",
    "life": "What defines living systems?",
    "harmony": "What creates balance and resonance?",
    "wisdom": "What is the nature of deep understanding?",
    "infinity": "How do finite systems represent the infinite?",
    "creation": "What are the principles of emergence and genesis?",
    "truth": "How is truth established and verified?",
    "love": "What is the nature of connection and care?",
    "power": "How does capacity and influence operate?",
    "time": "What is the nature of temporal experience?",
    "space": "How does extension and locality work?",
    "consciousness": "What is the nature of awareness?",
}

# The gap type a question raised by each origin becomes while memory cannot answer it.
_GAP_OF_ORIGIN = {"user": "question", "focus": "focus"}


class CuriosityConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Thresholds of gap detection (defaults from SPEC §4).

    ``memory_settles`` says whose queued or waiting questions a recalled trace may
    settle as answered without asking: ``"all"``, ``"own"`` (not the user's) or
    ``"none"``. The learner :func:`~sentient_core.learning.session.build_learner`
    builds uses ``"none"``: a recalled trace passing the judge's relevance check
    held the answer for 0.74 of the pydoc questions and 0.95 of the debian ones
    (memory holding the answer to 86 and 97 of them), and for 17 of the 35 own
    questions a 40-iteration free run settled that way (read by hand).

    ``user_share``: of the corpus topics curiosity asks about on its own, the share
    drawn from the user's sources (the incoming dir, ``--corpus`` folders) while
    any is left; the shipped documentation gets the rest.
    """

    axis_fraction: float = 0.15
    axis_gaps: int = 2
    axis_cooldown: int = 5
    answer_threshold: float = 0.25
    miss_repeats: Annotated[int, msgspec.Meta(ge=1)] = REPEATS
    probe_k: int = 3
    memory_settles: Literal["all", "own", "none"] = "all"
    coherence_drop: float = 0.05
    min_intensity: float = 0.3
    max_questions: int = 32
    user_share: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.85


class Answered(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A queued question that memory already answers (so it is not a gap)."""

    question: str
    origin: str
    trace_id: int
    relevance: float


class CuriositySignal(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The gaps found in one iteration, best first, the resulting intensity, and
    the queued questions memory turned out to answer already."""

    gaps: tuple[Gap, ...]
    intensity: float
    skip: bool
    answered: tuple[Answered, ...] = ()


AnswerCheck = Callable[[str, "Hit"], float]
"""``(question, hit) -> relevance``: how well a recalled trace answers a question."""


def _cosine(question: str, hit: Hit) -> float:
    return float(hit.score)


class Curiosity:
    """Detect knowledge gaps from the observer's state, memory and the question book.

    Parameters
    ----------
    observer : Observer
        Its SMF orientation and coherence history are read (never written).
    memory : HolographicMemory
        Probed (read-only, ``touch=False``) for queued questions.
    config : CuriosityConfig, optional
    book : QuestionBook, optional
        Where questions and their outcomes live; default: an in-memory book.
    answers : callable, optional
        ``(question, hit) -> relevance``; memory answers a question when its best
        hit's relevance reaches ``config.answer_threshold``. Default: the cosine.
    sources_mark : callable, optional
        A string that changes when the sources (corpus, models) change.
    topics : callable, optional
        What the sources can answer (the chaperone's corpus topics).
    debts : callable, optional
        Open epistemic debts as ``debt`` gaps (meta-memory's).
    misses : MissLog, optional
        Where recall misses are recorded and read (the store's; default in memory).
    field : FieldGaps, optional
        Maps an SMF-axis gap onto the topics whose passage loads the axis
        (:mod:`~sentient_core.learning.field_gaps`); None: the most related topic.
    links : LinkGaps, optional
        Raises ``link`` gaps from the link graph; None: none.
    """

    def __init__(
        self,
        observer,
        memory,
        config: CuriosityConfig | None = None,
        *,
        book: QuestionBook | None = None,
        answers: AnswerCheck = _cosine,
        sources_mark: Callable[[], str] = lambda: "",
        topics: Callable[[], Sequence[CorpusTopic]] = tuple,
        debts: Callable[[], Sequence[Gap]] = tuple,
        supported: Callable[[str], bool] = lambda question: True,
        misses: MissLog | None = None,
        field: FieldGaps | None = None,
        links: LinkGaps | None = None,
    ) -> None:
        self.observer = observer
        self.memory = memory
        self.config = config or CuriosityConfig()
        self.book = book if book is not None else QuestionBook()
        self.answers = answers
        self.sources_mark = sources_mark
        self.topics = topics
        self.debts = debts
        self.supported = supported
        self.field = field  # orders topics for an SMF-axis gap by their field (field_gaps)
        self.links = links
        self._unsupported: set[str] = set()
        self.misses = misses if misses is not None else MissLog()
        # Queued questions whose memory check was recorded (once each per process).
        self._checked: set[str] = set()
        self._axis_asked: dict[int, int] = {}
        # Topics asked this session, by whether they were the user's (see _answerable).
        self._topics_asked: Counter[bool] = Counter()
        self._iteration = 0
        self.fired: Counter[str] = Counter()

    # -- inputs ---------------------------------------------------------------------------

    def ask(self, question: str, *, origin: str = "user") -> QuestionRecord:
        """Register a question (``origin``: "user", "followup", "focus"…); returns its record.

        A new question is queued. A known one keeps its state: answered stays
        answered (it is not asked again), waiting keeps its back-off.
        """
        gap_type = _GAP_OF_ORIGIN.get(origin, "memory_miss")
        rec, _ = self.book.register(question, origin=origin, gap_type=gap_type)
        return rec

    def note_miss(
        self, query: str, hits: Sequence[Hit], origin: str = "library"
    ) -> MissRecord | None:
        """Check a recall made elsewhere: record a miss when no hit is relevant
        (the same check as ``answers``); returns the subject's record, or None."""
        return self.misses.note(
            query,
            hits,
            origin,
            check=self.answers,
            threshold=self.config.answer_threshold,
        )

    def folded(self, question: str) -> bool:
        """Whether ``question`` asks about the subject of a question the book holds
        another way (:func:`~sentient_core.keyphrases.near_repeat`: "loop" after
        "nearest enclosing loop"): curiosity does not ask it three ways."""
        known = [topic_terms(r.question) for r in self.book.records() if r.question != question]
        return _near_any(topic_terms(question), known)

    def mark_asked(self, question: str) -> None:
        """A drive picked ``question``: it is now with the chaperone."""
        rec = self.book.get(question)
        if rec is not None:
            self.book.update(question, status="asked", asked=rec.asked + 1)

    def record_outcome(
        self,
        question: str,
        outcome: str,
        answered_by: int = -1,
        unverified: Sequence[int] = (),
        reason: str = "",
    ) -> None:
        """The judge's verdict on an asked question (answered, or waiting with back-off);
        ``unverified``: traces stored for it without a success, which never answer it."""
        self.book.record_outcome(
            question,
            outcome,
            reason=reason,
            memory_mark=self._memory_mark(),
            sources_mark=self.sources_mark(),
            answered_by=answered_by,
            unverified=unverified,
        )

    @property
    def pending_questions(self) -> list[str]:
        return [r.question for r in self.book.records("queued")]

    def _memory_mark(self) -> str:
        return str(self.memory.total)

    # -- detection ------------------------------------------------------------------------

    def detect(self) -> CuriositySignal:
        """Find this iteration's gaps (one step of the question book)."""
        self._iteration += 1
        self.book.advance()
        memory_mark = self._memory_mark()
        changed_sources, changed_memory = self.book.due(memory_mark, self.sources_mark())
        # New sources may answer what failed before: back to the queue.
        self.book.requeue(changed_sources)
        answered = self._answered_now(changed_memory, memory_mark)
        self._coherence_question()
        self._link_questions()
        self._axis_questions()
        gaps, answered_queued = self._queued_gaps()
        answered.extend(answered_queued)
        gaps.extend(self._miss_gaps())
        gaps.extend(self.debts())
        gaps.sort(key=lambda g: (-g.priority, gap_rank(g.type), g.topic))
        for g in gaps:
            self.fired[g.type] += 1
        intensity = min(1.0, 0.5 + 0.1 * len(gaps)) if gaps else 0.0
        return CuriositySignal(
            tuple(gaps), intensity, intensity < self.config.min_intensity, tuple(answered)
        )

    def _queued_gaps(self) -> tuple[list[Gap], list[Answered]]:
        """Queued questions memory cannot answer become gaps; the others are answered."""
        # The user's questions first (oldest first, then the core's own): a backlog of
        # own follow-ups must never keep a user's question out of the first
        # ``max_questions``.
        queued = sorted(self.book.records("queued"), key=lambda r: r.origin != "user")
        queued = queued[: self.config.max_questions]
        if not queued:
            return [], []
        # "How does X fit with what I know?" is about the latest trace itself:
        # recalling that trace does not answer it.
        # "Please learn URL" / "read notes.md" asks for that source itself: text
        # recalled from elsewhere does not answer it (the fetch is idempotent).
        askable = [
            r for r in queued if r.gap_type != "coherence_drop" and not _names_a_source(r.question)
        ]
        # Memory is checked for the questions it may settle, and once for every other
        # new one: a check that finds nothing relevant is a recorded miss.
        probed = [r for r in askable if self._settles(r) or r.key not in self._checked]
        found = dict(zip((r.key for r in probed), self._probe(probed), strict=True))
        for rec in probed:
            if rec.key not in self._checked:
                self._checked.add(rec.key)
                best = found[rec.key][1]
                if best < self.config.answer_threshold and self.memory.count > 0:
                    # Counted; already queued, so it is being asked (no gap of its own).
                    missed = self.misses.record(rec.question, best, "learner")
                    if missed is not None and missed.status == "open":
                        self.misses.mark(missed.subject, "asked", rec.question)
        gaps, answered = [], []
        for rec in queued:
            trace_id, relevance = found.get(rec.key, (-1, 0.0))
            if not self._settles(rec):
                trace_id = -1
            if trace_id >= 0 and relevance >= self.config.answer_threshold:
                self.book.update(
                    rec.question,
                    status="answered",
                    answered_by=trace_id,
                    reason=f"memory already answers it (trace {trace_id}, relevance {relevance:.2f})",
                )
                answered.append(Answered(rec.question, rec.origin, trace_id, relevance))
                continue
            detail = (
                f"asked by the user; best recall {relevance:.2f}"
                if rec.origin == "user"
                else f"{rec.origin}; best recall {relevance:.2f} < {self.config.answer_threshold}"
            )
            gaps.append(
                Gap(
                    type=rec.gap_type,  # type: ignore[arg-type]
                    topic=_topic_of(rec.question),
                    question=rec.question,
                    priority=GAP_PRIORITY.get(rec.gap_type, 0.5),
                    detail=detail,
                )
            )
        return gaps, answered

    def _answered_now(self, waiting: list[QuestionRecord], memory_mark: str) -> list[Answered]:
        """Waiting questions that memory, which changed since they failed, now answers."""
        if not waiting:
            return []
        out = []
        for rec in [r for r in waiting if not self._settles(r) or _names_a_source(r.question)]:
            self.book.update(rec.question, memory_mark=memory_mark)
        waiting = [r for r in waiting if self._settles(r) and not _names_a_source(r.question)]
        best = self._probe(waiting)
        for rec, (trace_id, score) in zip(waiting, best, strict=True):
            if trace_id >= 0 and score >= self.config.answer_threshold:
                self.book.update(
                    rec.question,
                    status="answered",
                    answered_by=trace_id,
                    reason=f"memory answers it now (trace {trace_id}, relevance {score:.2f})",
                )
                out.append(Answered(rec.question, rec.origin, trace_id, score))
            else:
                self.book.update(rec.question, memory_mark=memory_mark)
        return out

    def _settles(self, rec: QuestionRecord) -> bool:
        """Whether memory may settle this question (``config.memory_settles``)."""
        mode = self.config.memory_settles
        return mode == "all" or (mode == "own" and rec.origin != "user")

    def _miss_gaps(self) -> list[Gap]:
        """Subjects recalls missed ``miss_repeats`` times: their questions are queued
        (``memory_miss``); a subject whose question the book answered is closed."""
        for miss in self.misses.records("asked"):
            rec = self.book.get(miss.question)
            if rec is not None and rec.status == "answered":
                self.misses.mark(miss.subject, "answered")
        out = []
        for miss in self.misses.due(self.config.miss_repeats):
            question = miss_question(miss.query)
            rec, new = self.book.register(question, origin="recall", gap_type="memory_miss")
            self.misses.mark(
                miss.subject, "answered" if rec.status == "answered" else "asked", question
            )
            if not new or rec.status != "queued":
                continue  # the book had it (a queued question memory missed): no new gap
            origins = ", ".join(miss.origins)
            out.append(
                Gap(
                    type="memory_miss",
                    topic=_topic_of(question),
                    question=rec.question,
                    priority=GAP_PRIORITY["memory_miss"],
                    detail=f"recall missed it {miss.count} times ({origins});"
                    f" best relevance {miss.best:.2f} < {self.config.answer_threshold}",
                )
            )
        return out

    def _coherence_question(self) -> None:
        drop = self.observer.coherence_drop()
        if drop < self.config.coherence_drop:
            return
        recent = self.memory.recent(1)
        # The latest trace's most salient phrase, never its raw first line.
        phrases = key_phrases(recent[0].text) if recent else []
        if not phrases:
            return
        # "How does X fit with what I already know?" succeeded 0 times in 25 (three free
        # runs): nothing answers it. A drop asks instead about the unexplored topic of the
        # sources nearest to what was just learned.
        question, reason = self._answerable(phrases[0], why=f"coherence fell after {phrases[0]!r}")
        if reason:
            rec, new = self.book.register(question, origin="curiosity", gap_type="coherence_drop")
            if new:
                self.book.update(rec.question, reason=reason)

    def _link_questions(self) -> None:
        if self.links is None:
            return
        for g, question in self.links.questions(self.book, self.supported, self.folded):
            rec, new = self.book.register(question, origin="curiosity", gap_type="link")
            if new:
                reason = (
                    f"trace {g.subject} has {g.degree} linked neighbours, {g.answered} answered;"
                    f" trace {g.neighbour} is not"
                )
                self.book.update(rec.question, reason=reason)

    def _axis_questions(self) -> None:
        s = self.observer.smf
        norm = float(np.linalg.norm(s))
        low = [k for k in range(16) if abs(s[k]) < self.config.axis_fraction * norm]
        ready = [
            k
            for k in low
            if self._iteration - self._axis_asked.get(k, -(10**9)) > self.config.axis_cooldown
        ]
        ready.sort(key=lambda k: (abs(float(s[k])), k))
        for k in ready[: self.config.axis_gaps]:
            self._axis_asked[k] = self._iteration
            axis = AXES[k]
            question, reason = self._answerable(
                f"{axis} {AXIS_QUESTIONS[axis]}", why=f"SMF axis {axis} is low", axis=k
            )
            question = question or AXIS_QUESTIONS[axis]
            rec, new = self.book.register(question, origin="curiosity", gap_type="smf_imbalance")
            if new and reason:
                self.book.update(rec.question, reason=reason)

    def _answerable(self, about: str, why: str, axis: int = -1) -> tuple[str, str]:
        """An unexplored topic of the sources for a gap (its question, and why), the
        one most related to ``about``; "" as the reason when no topic is left.

        The user's sources come first: while user topics are left, a share
        :attr:`CuriosityConfig.user_share` of the topics asked are theirs, the shipped
        documentation the rest (all of it when the user gave none).
        """
        topics = self.topics()
        fresh = [
            t
            for t in topics
            if self.book.get(question_about(t.phrase)) is None
            and question_about(t.phrase) not in self._unsupported
        ]
        if not fresh:
            return "", ""
        user = [t for t in fresh if t.user]
        shipped = [t for t in fresh if not t.user]
        share = self.config.user_share
        asked = self._topics_asked
        mine = user and (not shipped or asked[True] < share * (sum(asked.values()) + 1))
        pools = (user, shipped) if mine else (shipped, user)
        # The book's subjects, read once for every candidate below (not per topic).
        known = [topic_terms(r.question) for r in self.book.records()]
        topic = None
        for pool in pools:
            # The most related topic that stands on its own (a name or a title, or a
            # phrase the sources define) and is no subject asked another way.
            # An axis gap with a field: the topics whose passage loads the axis most.
            by_field = self.field.order(axis, pool, topics) if self.field and axis >= 0 else None
            order = by_field or sorted(
                range(len(pool)), key=lambda i: (-relevance(about, pool[i].context), i)
            )
            for i in order:
                t = pool[i]
                question = question_about(t.phrase)
                if not (t.named or self.supported(question)):
                    self._unsupported.add(question)
                elif not _near_any(topic_terms(question), known):
                    topic = t
                    break
            if topic is not None:
                break
        if topic is None:
            return "", ""
        asked[topic.user] += 1
        field = self.field if axis >= 0 else None
        loads = field is not None and field.pick(axis, topic, topics) and field.steer
        return (
            question_about(topic.phrase),
            f"{why}; mapped onto the unexplored topic {topic.phrase!r} of {topic.source}"
            + (" (its passage loads the axis)" if loads else ""),
        )

    def _probe(self, records: list[QuestionRecord]) -> list[tuple[int, float]]:
        """(trace id, relevance) of each question's best recall (-1, 0.0 when none),
        never one of the question's own unverified traces."""
        if self.memory.count == 0:
            return [(-1, 0.0)] * len(records)
        questions = [r.question for r in records]
        # BM25 candidates: the answers check is a term relevance (a trace sharing no
        # word of the question cannot pass it), and BM25 alone skips the hybrid's
        # cosine pass over every trace.
        hits = self.memory.recall_batch(questions, k=self.config.probe_k, touch=False, rank="bm25")
        out = []
        for rec, found in zip(records, hits, strict=True):
            q, own = rec.question, set(rec.unverified)
            # The best answer among the top hits (the top-ranked one need not be it).
            scored = [
                (self.answers(q, h), -i, h.record.id)
                for i, h in enumerate(found)
                if h.record.id not in own
            ]
            best = max(scored, default=(0.0, 0, -1))
            out.append((best[2], best[0]) if best[2] >= 0 else (-1, 0.0))
        return out


def _near_any(terms: tuple[str, ...], known: Sequence[tuple[str, ...]]) -> bool:
    """Whether a topic's ``terms`` repeat any of the ``known`` topics another way."""
    return bool(terms) and any(near_repeat(terms, k) for k in known)


def _names_a_source(question: str) -> bool:
    """Whether a question asks for a named URL or local file (a fetch, not a recall)."""
    return bool(extract_urls(question) or extract_paths(question))


def _topic_of(question: str, words: int = 6) -> str:
    from sentient_core.analysis import STOP_WORDS, tokenize

    toks = [t for t in tokenize(question) if t not in STOP_WORDS]
    return " ".join(toks[:words]) or question[:60]
