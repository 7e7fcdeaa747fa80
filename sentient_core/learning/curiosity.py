"""Curiosity: find the core's own knowledge gaps (SPEC §4).

Gap sources, in priority order:

question        an explicit user question that memory cannot already answer
memory_miss     a recall that found nothing above ``miss_threshold``: every
                queued question is probed in one batched recall; a follow-up
                the core raised itself (reflection) that memory cannot answer
                is a miss, and misses can be reported with :meth:`note_miss`
coherence_drop  the observer's coherence fell ``coherence_drop`` below its recent
                mean: ask how the latest topic fits with the rest
smf_imbalance   an SMF axis below ``axis_fraction · |s|``: the axis question
                (e.g. wisdom → "What is the nature of deep understanding?"),
                lowest axes first, each axis resting ``axis_cooldown``
                iterations after it was asked

Intensity = min(1, 0.5 + 0.1·#gaps) when there is at least one gap, else 0;
an iteration whose intensity is below ``min_intensity`` (0.3) is skipped.
Every source keeps a counter, so a gap type that never fires shows up as a
zero instead of as silence.
"""

from __future__ import annotations

from collections import Counter, deque

import msgspec
import numpy as np

from kernels.smf import AXES
from sentient_core.errors import ArgumentError
from sentient_core.vocab import GAP_PRIORITY, Gap, gap_rank

__all__ = ["AXIS_QUESTIONS", "Curiosity", "CuriosityConfig", "CuriositySignal"]

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


class CuriosityConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Thresholds of gap detection (defaults from SPEC §4)."""

    axis_fraction: float = 0.15
    axis_gaps: int = 2
    axis_cooldown: int = 5
    miss_threshold: float = 0.25
    coherence_drop: float = 0.05
    min_intensity: float = 0.3
    max_questions: int = 32


class CuriositySignal(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The gaps found in one iteration, best first, and the resulting intensity."""

    gaps: tuple[Gap, ...]
    intensity: float
    skip: bool


class Curiosity:
    """Detect knowledge gaps from the observer's state and from memory.

    Parameters
    ----------
    observer : Observer
        Its SMF orientation and coherence history are read (never written).
    memory : HolographicMemory
        Probed (read-only, ``touch=False``) for queued questions.
    """

    def __init__(self, observer, memory, config: CuriosityConfig | None = None) -> None:
        self.observer = observer
        self.memory = memory
        self.config = config or CuriosityConfig()
        self._questions: deque[tuple[str, str]] = deque(maxlen=self.config.max_questions)
        self._misses: deque[tuple[str, float]] = deque(maxlen=self.config.max_questions)
        self._axis_asked: dict[int, int] = {}
        self._iteration = 0
        self.fired: Counter[str] = Counter()

    # -- inputs ---------------------------------------------------------------------------

    def ask(self, question: str, *, origin: str = "user") -> None:
        """Queue an explicit question (``origin``: "user", "followup", "focus"…)."""
        q = " ".join(str(question).split())
        if not q:
            raise ArgumentError("question must not be empty")
        if all(q != existing for existing, _ in self._questions):
            self._questions.append((q, origin))

    def note_miss(self, query: str, best_score: float) -> None:
        """Record a recall elsewhere that found nothing above the threshold."""
        if best_score < self.config.miss_threshold:
            self._misses.append((" ".join(query.split()), float(best_score)))

    @property
    def pending_questions(self) -> list[str]:
        return [q for q, _ in self._questions]

    # -- detection ------------------------------------------------------------------------

    def detect(self) -> CuriositySignal:
        """Find this iteration's gaps (consumes queued questions and misses)."""
        self._iteration += 1
        gaps: list[Gap] = []
        gaps.extend(self._question_gaps())
        gaps.extend(self._miss_gaps())
        gaps.extend(self._coherence_gaps())
        gaps.extend(self._axis_gaps())
        gaps.sort(key=lambda g: (-g.priority, gap_rank(g.type), g.topic))
        for g in gaps:
            self.fired[g.type] += 1
        intensity = min(1.0, 0.5 + 0.1 * len(gaps)) if gaps else 0.0
        return CuriositySignal(tuple(gaps), intensity, intensity < self.config.min_intensity)

    def _question_gaps(self) -> list[Gap]:
        if not self._questions:
            return []
        questions = list(self._questions)
        self._questions.clear()
        best = self._probe([q for q, _ in questions])
        out = []
        for (q, origin), score in zip(questions, best, strict=True):
            if score >= self.config.miss_threshold:
                continue  # memory already answers it: not a gap
            if origin == "user":
                out.append(
                    Gap(
                        type="question",
                        topic=_topic_of(q),
                        question=q,
                        priority=GAP_PRIORITY["question"],
                        detail=f"asked by the user; best recall {score:.2f}",
                    )
                )
            else:
                # A follow-up the core raised itself that its memory cannot
                # answer: that is a memory miss.
                self._misses.append((q, score))
        return out

    def _miss_gaps(self) -> list[Gap]:
        out = []
        while self._misses:
            q, score = self._misses.popleft()
            out.append(
                Gap(
                    type="memory_miss",
                    topic=_topic_of(q),
                    question=q,
                    priority=GAP_PRIORITY["memory_miss"],
                    detail=f"best recall {score:.2f} < {self.config.miss_threshold}",
                )
            )
        return out

    def _coherence_gaps(self) -> list[Gap]:
        drop = self.observer.coherence_drop()
        if drop < self.config.coherence_drop:
            return []
        recent = self.memory.recent(1)
        topic = recent[0].topic if recent and recent[0].topic else "recent observations"
        return [
            Gap(
                type="coherence_drop",
                topic=topic,
                question=f"How does {topic} fit with what I already know?",
                priority=GAP_PRIORITY["coherence_drop"],
                detail=f"coherence {self.observer.coherence:.3f}, {drop:.3f} below recent mean",
            )
        ]

    def _axis_gaps(self) -> list[Gap]:
        s = self.observer.smf
        norm = float(np.linalg.norm(s))
        low = [k for k in range(16) if abs(s[k]) < self.config.axis_fraction * norm]
        ready = [
            k
            for k in low
            if self._iteration - self._axis_asked.get(k, -(10**9)) > self.config.axis_cooldown
        ]
        ready.sort(key=lambda k: (abs(float(s[k])), k))
        out = []
        for k in ready[: self.config.axis_gaps]:
            self._axis_asked[k] = self._iteration
            axis = AXES[k]
            out.append(
                Gap(
                    type="smf_imbalance",
                    topic=axis,
                    question=AXIS_QUESTIONS[axis],
                    priority=GAP_PRIORITY["smf_imbalance"],
                    detail=f"{axis} = {s[k]:+.3f} < {self.config.axis_fraction}·|s|",
                )
            )
        return out

    def _probe(self, questions: list[str]) -> list[float]:
        """Best recall score of each question (one batched recall, no use-count bump)."""
        if self.memory.count == 0:
            return [0.0] * len(questions)
        hits = self.memory.recall_batch(questions, k=1, touch=False)
        return [h[0].score if h else 0.0 for h in hits]


def _topic_of(question: str, words: int = 6) -> str:
    from sentient_core.ingest.keywords import STOP_WORDS, tokenize

    toks = [t for t in tokenize(question) if t not in STOP_WORDS]
    return " ".join(toks[:words]) or question[:60]
