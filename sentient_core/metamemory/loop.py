"""Meta-memory in the learning loop: what the learner calls, and what each call feeds.

:class:`LoopMeta` sits between the learner and :class:`~sentient_core.metamemory.MetaMemory`.
The learner calls it at three points of one initiative; everything else is here.

``predict(request)`` (before the chaperone is asked)
    Memory's answer to a question: the best recalled trace (``touch=False``),
    kept when its relevance to the question reaches the judge's threshold.

``observe(...)`` (after the judge's verdict)
    * **Ungrounded answer contradicted.** An LLM answer (not grounded) is
      corroborated against the local corpus through the chaperone
      (:meth:`~sentient_core.learning.chaperone.Chaperone.corroborate`, a
      grounded read that costs no tokens). When the deterministic detector finds
      conflicting values next to the question's key terms — a *strong* anchor:
      an identifier of the question such as a CVE id or a version, never only
      its words (measured: the loop's own vague questions, "What is known about
      X?", otherwise find dates of different entries) —, the corpus passage is
      integrated, and a surprise event (cause ``ungrounded_contradicted``) names
      the LLM as the wrong source and its stored answer as the wrong memory, the
      passage's source and trace as the correction.
    * **The model's signal.** With a model configured, where the detector finds
      no strong conflict the model is asked once per observation whether the
      two passages conflict (:mod:`~sentient_core.metamemory.model_check`); it
      may add a ``disagreement.model`` signal of magnitude 0.35, never remove
      the detector's (it is not asked then).
    * **Memory contradicted.** Memory's prediction against every new grounded
      passage in its context: a conflict is a ``disagreement`` event (the wrong
      source is the source the predicted trace came from); no conflict and a
      successful verdict is a judged success of the predicted trace.
    * **Irrelevant.** A grounded answer the judge found irrelevant is an
      ``irrelevant`` event with ``s = 0.5·(threshold − relevance)/threshold``
      (weak evidence: below 0.55, so a source is punished only when it repeats).
    * **Memory's answer contradicted.** Where curiosity lets memory settle a
      question (``CuriosityConfig.memory_settles``; not the learner's), the answering
      trace is corroborated the same way (:meth:`LoopMeta.check_answer`); a conflict
      re-opens the question, and a trace judged wrong more often than right no
      longer answers questions for curiosity (:meth:`LoopMeta.answers`).
    * **Failing questions.** A question judged a failure :data:`FAILING_AFTER`
      times opens a debt (no answer in the sources, or one the loop misses);
      its test is asking again, and a success verdict resolves it.
    * **Debts.** Every conflict opens an epistemic debt (the two values as
      hypotheses; the discriminating test is reading the corpus file again, or
      asking the question when the correction has no file) with the passage as
      its first evidence (confidence :data:`CORROBORATION`). Open debts are
      curiosity's ``debt`` gaps; when the learner runs a debt's test (a read's
      content is a check, not integrated as new traces), the content is evidence for the hypothesis whose value it supports
      (confidence :data:`TEST_EVIDENCE`), or a failed attempt. A new conflict on a
      question whose debt is resolved, naming another value than the resolution,
      reopens it and demotes the wisdom citing it
      (:mod:`~sentient_core.metamemory.corrections`).
    * **Judged outcomes.** Success/failure counts of the predicted or
      contradicted traces, and a scorer outcome (the trace's factors, the label)
      per judged prediction; every :data:`SCORER_BATCH` outcomes one scorer
      batch is trained and its snapshot written.

``weight(question, source)`` (for the chaperone)
    The source's weight in the question's domain.

Domains: :func:`~sentient_core.metamemory.domain.domain_of` of the question with
the chaperone's corpus term statistics (the most specific subject term), or the
request's focus goal (``focus:…``) for focus requests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from sentient_core.keyphrases import overview_subject
from sentient_core.metamemory.corrections import (
    CORROBORATION,
    FAILING,
    TEST_EVIDENCE,
    debt_attempt,
    open_or_reopen,
)
from sentient_core.metamemory.debts import DebtRecord, DiscriminatingTest
from sentient_core.metamemory.disagreement import detect_disagreement, from_disagreement
from sentient_core.metamemory.domain import domain_of
from sentient_core.metamemory.factors import context_for, factor_matrix
from sentient_core.metamemory.model_check import ModelDisagreement
from sentient_core.metamemory.scorer import JudgedOutcome
from sentient_core.metamemory.surprise import SurpriseBasis, make_event
from sentient_core.relevance import relevance
from sentient_core.vocab import GROUNDING_KINDS

if TYPE_CHECKING:
    from sentient_core.metamemory.core import MetaMemory
    from sentient_core.metamemory.disagreement import Disagreement
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Gap, Passage

__all__ = [
    "CORROBORATION",
    "MAX_ATTEMPTS",
    "SCORER_BATCH",
    "TEST_EVIDENCE",
    "LoopMeta",
    "PassageStore",
    "Prediction",
    "source_id",
]

PassageStore = Callable[["ChaperoneRequest", "Passage", bool], Sequence[int]]
"""``(request, passage, grounded) -> ids of its (new or known) traces``, from the learner."""

MAX_ATTEMPTS = 3
"""Failed attempts of a debt's test before the debt is deferred."""

FAILING_AFTER = 2
"""Failed verdicts on one question that open a debt about it."""

SCORER_BATCH = 8
"""Judged outcomes per scorer training batch."""

MODEL_CHECKS_PER_OBSERVATION = 1
"""Model disagreement checks per observed response (each is a model call)."""

PREDICT_K = 5
"""BM25 candidates memory's prediction is chosen from (by relevance)."""

IRRELEVANT_SCALE = 0.5
"""``s`` of an irrelevant answer is this times its relative shortfall."""


class Prediction(msgspec.Struct, frozen=True):
    """Memory's answer to a question before the chaperone was asked."""

    question: str
    trace: int
    text: str
    source: str
    relevance: float

    @classmethod
    def of(cls, question: str, rec: Any, relevance: float) -> Prediction:
        """Trace ``rec`` as memory's answer to ``question``."""
        return cls(question, rec.id, rec.text, source_id(rec.source), relevance)


def source_id(source: str) -> str:
    """A trace's source as a ``KIND:REF`` id, or ``memory:recall`` for a free-form one."""
    from sentient_core.metamemory.surprise import check_source

    try:
        return check_source(source)
    except Exception:  # a free-form source (a path given to ingest)
        return "memory:recall"


def _stored(store: PassageStore | None, req: ChaperoneRequest, passage: Passage) -> int:
    """The first trace id holding ``passage`` once ``store`` integrated it; -1 without one."""
    ids = store(req, passage, True) if store is not None else ()
    return ids[0] if ids else -1


class LoopMeta:
    """Meta-memory hooks of one learner (see the module docstring).

    Parameters
    ----------
    meta : MetaMemory
    memory : HolographicMemory
    chaperone : Chaperone
        Its term statistics pick domains; :meth:`Chaperone.corroborate` gives
        grounded passages for ungrounded answers.
    threshold : float
        The judge's relevance threshold.
    session : str
    clock : callable
    """

    def __init__(
        self,
        meta: MetaMemory,
        memory: Any,
        chaperone: Any,
        *,
        threshold: float,
        session: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.meta = meta
        self.memory = memory
        self.chaperone = chaperone
        self.threshold = threshold
        self.session = session
        self.clock = clock
        self._outcomes: list[JudgedOutcome] = []
        self._checks = 0
        self.model_check: ModelDisagreement | None = None
        """Set when a model is configured: it may add disagreement signals."""
        self._model_asks = 0

    # -- for the chaperone -----------------------------------------------------------------

    def domain(self, question: str, focus: str | None = None) -> str:
        stats = self.chaperone.term_stats() if question.strip() else None
        return domain_of(question, focus, stats)

    def weight(self, question: str, source: str) -> float:
        """The weight of ``source`` in the domain of ``question``, with wisdom's advice
        applied (:class:`~sentient_core.metamemory.advice.WisdomAdvisor`: a use)."""
        return self.meta.advisor.weight(self.domain(question), source)

    # -- for curiosity ------------------------------------------------------------------------

    def gaps(self, limit: int = 3) -> list[Gap]:
        """Open debts as ``debt`` gaps, best first; a debt whose test failed
        :data:`MAX_ATTEMPTS` times is deferred instead (it stops asking)."""
        for debt in self.meta.debts.debts(status="open"):
            if debt.failed_attempts >= MAX_ATTEMPTS:
                self.meta.debts.defer(debt.id)
        return self.meta.debts.gaps(limit)

    @staticmethod
    def answers(question: str, hit: Any) -> bool:
        """Whether a recalled trace may answer a question for curiosity: not when it was
        judged wrong more often than right (contradicted by grounded evidence, or by the
        user), so the question is asked instead of answered by it."""
        rec = hit.record
        return not rec.failure_count > rec.success_count

    # -- before the chaperone ----------------------------------------------------------------

    def predict(self, req: ChaperoneRequest) -> Prediction | None:
        """Memory's answer to a question request, if one passes the relevance check.

        Called before the chaperone is asked: wisdom used from now on is credited with
        this request's judged outcome (:meth:`observe`)."""
        self.meta.advisor.begin(req.id)
        q = req.question.strip()
        if req.type != "question" or not q or overview_subject(q):
            # An overview ("What is known about sqlite3?") has no one answer to contradict:
            # two entries of a changelog name different versions of the same subject.
            return None
        # BM25 alone: the relevance check below needs the question's words in the
        # trace, so a trace sharing none cannot pass it (and the hybrid's cosine
        # pass over every trace is what made a 100k-trace step slow).
        # The best by relevance of BM25's first few: the top one may share the question's
        # frame and miss its identifier ("… fixed CVE-2024-1105" for CVE-2025-0167).
        hits = self.memory.recall(q, k=PREDICT_K, touch=False, rank="bm25")
        stats = self.chaperone.term_stats()
        scored = [(relevance(q, h.record.text, stats), -i, h.record) for i, h in enumerate(hits)]
        best = max(scored, default=None, key=lambda t: (t[0], t[1]))
        if best is None or best[0] < self.threshold:
            return None
        return Prediction.of(q, best[2], best[0])

    def check_answer(
        self, question: str, trace_id: int, *, store: PassageStore | None = None
    ) -> bool:
        """Memory answered ``question`` with trace ``trace_id`` (curiosity found it answers):
        corroborate it against the local corpus (``store`` integrates a correction). True
        when grounded evidence contradicts it (a ``disagreement`` event, a debt, a judged
        failure): the question should be asked again."""
        from sentient_core.vocab import ChaperoneRequest

        q = question.strip()
        rec = self.memory.get(trace_id)
        if not q or rec is None or rec.retired:
            return False
        self._checks += 1
        self._model_asks = 0
        req = ChaperoneRequest(
            id=f"meta-{self._checks}",
            type="question",
            question=q,
            gap_type="corroborate",
            session=self.session,
        )
        stats = self.chaperone.term_stats()
        pred = Prediction.of(q, rec, relevance(q, rec.text, stats))
        for passage in self.chaperone.corroborate(q):
            if relevance(q, passage.text, stats) < self.threshold:
                continue
            found = self._disagreement(q, rec.text, passage.text)
            if found is None:
                continue
            right = _stored(store, req, passage)
            if right == rec.id:
                continue
            self._conflict(
                req,
                found,
                domain=self.domain(q),
                action="recall",
                cause="disagreement",
                wrong_source=pred.source,
                wrong_trace=rec.id,
                passage=passage,
                right_trace=right,
            )
            self.meta.record_outcome([rec.id], "failure")
            self._judged(pred, label=False)
            self._flush_scorer()
            return True
        return False

    # -- after the verdict --------------------------------------------------------------------

    def observe(
        self,
        req: ChaperoneRequest,
        response: ChaperoneResponse,
        verdict: Any,
        *,
        stored: Sequence[tuple[Passage, Sequence[int]]],
        prediction: Prediction | None,
        relevance_of_best: float | None,
        store: PassageStore | None = None,
    ) -> None:
        """Feed one judged initiative to meta-memory; ``store`` integrates a correction."""
        try:
            if req.gap_type == "debt":
                debt_attempt(self.meta, req, response, verdict, now=float(self.clock()))
            if req.type != "question" or not req.question.strip() or not response.ok:
                self._flush_scorer()
                return
            q = req.question.strip()
            self._model_asks = 0
            focus = req.topic if req.gap_type == "focus" else None
            domain = self.domain(q, focus)
            if not response.grounded:
                self._ungrounded(req, response, stored, domain, store)
            else:
                grounded = [
                    (p, ids) for p, ids in stored if p.source.kind in GROUNDING_KINDS and ids
                ]
                if prediction is not None:
                    self._check_prediction(req, prediction, grounded, verdict, domain)
                if (
                    verdict.outcome == "failure"
                    and relevance_of_best is not None
                    and relevance_of_best < self.threshold
                    and response.sources
                ):
                    self._irrelevant(req, response, relevance_of_best, domain)
            self._flush_scorer()
        finally:
            # Wisdom that influenced the request: credit from its judged outcome only.
            self.meta.advisor.settle(req.id, verdict.outcome)

    def _ungrounded(
        self,
        req: ChaperoneRequest,
        response: ChaperoneResponse,
        stored: Sequence[tuple[Passage, Sequence[int]]],
        domain: str,
        store: PassageStore | None,
    ) -> None:
        q = req.question.strip()
        answer = response.content
        wrong_source = response.sources[0].id if response.sources else ""
        if not answer.strip() or not wrong_source:
            return
        wrong_trace = next((ids[0] for _, ids in stored if ids), -1)
        for passage in self.chaperone.corroborate(q):
            if relevance(q, passage.text, self.chaperone.term_stats()) < self.threshold:
                continue
            found = self._disagreement(q, answer, passage.text)
            if found is None:
                continue
            right = _stored(store, req, passage)
            self._conflict(
                req,
                found,
                domain=domain,
                action="answer",
                cause="ungrounded_contradicted",
                wrong_source=wrong_source,
                wrong_trace=wrong_trace,
                passage=passage,
                right_trace=right,
            )
            if wrong_trace >= 0:
                self.meta.record_outcome([wrong_trace], "failure")
            return

    def _check_prediction(
        self,
        req: ChaperoneRequest,
        pred: Prediction,
        grounded: Sequence[tuple[Passage, Sequence[int]]],
        verdict: Any,
        domain: str,
    ) -> None:
        q = req.question.strip()
        # Stored passages in their context (a changelog entry's version line), as corroborated.
        evidence = self.chaperone.with_context(tuple(p for p, _ in grounded))
        for (passage, ids), wide in zip(grounded, evidence, strict=True):
            if pred.trace in ids:
                continue  # the evidence is memory's own copy
            found = self._disagreement(q, pred.text, wide.text)
            if found is None:
                continue
            self._conflict(
                req,
                found,
                domain=domain,
                action="recall",
                cause="disagreement",
                wrong_source=pred.source,
                wrong_trace=pred.trace,
                passage=passage,
                right_trace=ids[0],
            )
            self.meta.record_outcome([pred.trace], "failure")
            self._judged(pred, label=False)
            return
        if verdict.outcome == "success" and grounded:
            self.meta.record_outcome([pred.trace], "success")
            self._judged(pred, label=True)

    def _disagreement(self, question: str, predicted: str, evidence: str) -> Disagreement | None:
        """A disagreement to act on: the detector's strong one; else, with a model
        configured, the model's (at most :data:`MODEL_CHECKS_PER_OBSERVATION` asked per
        observed response). The model is never asked to confirm the detector: it can
        add a signal, never remove one."""
        found = detect_disagreement(question, predicted, evidence, self.chaperone.term_stats())
        if found is not None and found.strong:
            return found
        if self.model_check is None or self._model_asks >= MODEL_CHECKS_PER_OBSERVATION:
            return None
        self._model_asks += 1
        return self.model_check.check(question, predicted, evidence)

    def _irrelevant(
        self, req: ChaperoneRequest, response: ChaperoneResponse, r: float, domain: str
    ) -> None:
        s = IRRELEVANT_SCALE * max(0.0, min(1.0, (self.threshold - r) / self.threshold))
        event = make_event(
            context=req.question,
            action=req.type,
            magnitude=s,
            basis=SurpriseBasis(
                rule="judge.relevance",
                inputs={"relevance": f"{r:.4f}", "threshold": f"{self.threshold:.4f}"},
                detail=f"{IRRELEVANT_SCALE} × (threshold − relevance) / threshold",
            ),
            domain=domain,
            source=response.sources[0].id,
            cause="irrelevant",
            time=float(self.clock()),
            session=self.session,
        )
        self.meta.observe(event)

    def _conflict(
        self,
        req: ChaperoneRequest,
        found: Disagreement,
        *,
        domain: str,
        action: str,
        cause: str,
        wrong_source: str,
        wrong_trace: int,
        passage: Passage,
        right_trace: int,
    ) -> None:
        q = req.question.strip()
        event = from_disagreement(
            q,
            found,
            domain=domain,
            source=wrong_source,
            time=float(self.clock()),
            action=action,
            session=self.session,
            source_memory=wrong_trace,
            correcting_memory=right_trace,
            correcting_source=passage.source.id,
            cause=cause,
        )
        seen = self.meta.observe(event)
        open_or_reopen(
            self.meta,
            question=q,
            found=found,
            domain=domain,
            passage=passage,
            wrong_trace=wrong_trace,
            right_trace=right_trace,
            surprise_id=seen.event.id,
            now=float(self.clock()),
        )

    def question_failing(self, question: str, failures: int) -> DebtRecord | None:
        """A question failed ``failures`` times: from :data:`FAILING_AFTER` on it is a debt
        (once per question) — do the sources hold an answer the loop misses, or none? Its
        test is asking it again; a success verdict on that test resolves it."""
        q = question.strip()
        if failures < FAILING_AFTER or not q:
            return None
        pattern = (FAILING + q)[:1000]
        if any(d.pattern == pattern for d in self.meta.debts.debts()):
            return None
        return self.meta.debts.open(
            pattern=pattern,
            hypotheses=(
                "the sources hold no answer to it",
                "the sources hold an answer the loop does not find",
            ),
            domain=self.domain(q),
            fragility=min(1.0, failures / 5.0),
            test=DiscriminatingTest(kind="question", question=q[:1000]),
        )

    # -- scorer -------------------------------------------------------------------------------

    def _judged(self, pred: Prediction, *, label: bool) -> None:
        rec = self.memory.get(pred.trace)
        if rec is None:
            return
        now = float(self.clock())
        with self.memory.datastore.read() as txn:
            ctx = context_for(
                txn,
                [rec],
                domain=self.domain(pred.question),
                now=now,
                relevance={rec.id: pred.relevance},
            )
        features, _ = factor_matrix([rec], ctx)
        feats = tuple(float(x) for x in features[0])
        self._outcomes.append(JudgedOutcome(features=feats, label=label, time=now, trace=rec.id))

    def _flush_scorer(self, *, force: bool = False) -> None:
        if len(self._outcomes) >= SCORER_BATCH or (force and self._outcomes):
            batch, self._outcomes = self._outcomes, []
            self.meta.train_scorer(batch, float(self.clock()))

    def close(self) -> None:
        """Train on the outcomes still pending (end of a session)."""
        self._flush_scorer(force=True)
