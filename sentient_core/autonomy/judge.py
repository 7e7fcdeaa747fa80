"""The judge: did an iteration really learn something? (SPEC §4)

Each iteration's outcome becomes a :class:`Verdict` — ``success``,
``failure``, ``could_not_verify`` or ``not_applicable`` — with its basis
(``deterministic``, ``llm`` or ``fail_safe``). The judge fails toward
silence: a missed learning opportunity is cheap, a fabricated success
poisons memory. Deterministic rails decide first, in this order:

1. refused (safety filter or budget) → ``not_applicable``: the loop did not try;
2. not ok (a failed fetch/read, an error) → ``failure``;
3. ok but also reporting an error → ``could_not_verify`` (inconsistent);
4. grounded, but naming no web/local/corpus source or with no content →
   ``could_not_verify``;
5. grounded, answering a question, but not *relevant* (the calibrated
   question–passage relevance is below :data:`sentient_core.relevance.RELEVANT`)
   → ``failure``: the source did not answer the question (nothing was stored);
6. grounded and relevant, but every chunk already in memory, or the *best*
   (most relevant) passage already in memory → ``not_applicable`` with the
   reason "already known": memory held the source's best passage (the holder's use
   count went up); new passages ranked below it are stored but are not what was
   asked. When the source's ranking is not :meth:`Judge.decisive_margin` the reason
   says so, and the learner does not count the question answered, as for a
   success (``evaluate``'s "answered per question book": on pydoc's Q/A set 60 of
   the 63 questions counted answered hold an answer in what settled them; counting
   these too, 66 of 72; debian 96 of 96, and 98 of 98);
7. grounded but nothing integrated for another reason → ``could_not_verify``;
8. grounded, relevant and new, but *ambiguous*: the ranked source (the local
   corpus) has a passage it did not give within :data:`sentient_core.relevance.DECISIVE`
   of its best one (``margin``) → ``could_not_verify``: stored, not claimed as
   learned (calibrated with ``bench/calibrate_relevance.py``);
9. grounded, relevant, new and decisive (at least one chunk stored) →
   ``success`` — the only way to success;
10. ungrounded (e.g. an LLM-only answer) without a judge model, or without
    an answer to judge → ``could_not_verify`` (``fail_safe``).

A judge model can only lower a verdict, never raise one. It is asked about
the ungrounded middle, which it may turn into ``failure`` (the answer is
contradicted, basis ``llm``) or leave at ``could_not_verify``; and about a
grounded success, which it may lower to ``failure`` (contradicted) or
``could_not_verify`` (unsupported). A model that raises (unreachable,
timeout, HTTP error) or replies with anything but the strict JSON object
``{"verdict": "contradicted"|"unsupported"|"supported"}`` changes nothing it
could only have lowered, and leaves an ungrounded answer at
``could_not_verify`` (``fail_safe``). With a circuit breaker (the chaperone's:
one model) the judge does not call a model whose circuit is open — the verdict
stays where the rails put it — and its own failures count toward opening it.

The model is duck-typed: any object with ``chat(messages, max_tokens=...,
temperature=...)`` returning something with a ``text`` attribute (such as
:class:`sentient_core.learning.llm.LLMClient`). When it also has ``chat_json``
(structured output: a JSON schema the server constrains generation to, see
:meth:`~sentient_core.learning.llm.LLMClient.chat_json`) the verdict is asked
for that way, so a small local model that would answer in prose still gives the
JSON. The reply is then parsed: the exact object, or else the first JSON
object found in the text (a code fence, a sentence around it). Prose is never
read for keywords: "not contradicted" must not become "contradicted".
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Protocol

import msgspec

from sentient_core.autonomy.breaker import CircuitBreaker
from sentient_core.events import Emitter, ShadowJudgeEvent
from sentient_core.keyphrases import overview_subject
from sentient_core.relevance import DECISIVE, RELEVANT, THIN_TERMS, focus, substance
from sentient_core.vocab import (
    BASES,
    GROUNDING_KINDS,
    OUTCOMES,
    Basis,
    Gate,
    IterationOutcome,
    Outcome,
    Verdict,
)

__all__ = [
    "MAX_JUDGED_CHARS",
    "VERDICT_SCHEMA",
    "ChatModel",
    "Judge",
    "JudgeSettings",
    "parse_verdict",
]

NonNeg = Annotated[int, msgspec.Meta(ge=0)]

MAX_JUDGED_CHARS = 4000
"""Question and answer are cut to this many characters for the judge model."""


class ChatReply(Protocol):
    @property
    def text(self) -> str: ...


class ChatModel(Protocol):
    """What the judge needs from a model (duck-typed)."""

    def chat(
        self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float
    ) -> ChatReply: ...


class _ModelReply(msgspec.Struct, frozen=True):
    # Extra keys (a "reason", say) are ignored; the verdict must be exact.
    verdict: Literal["contradicted", "unsupported", "supported"]


_REPLY = msgspec.json.Decoder(_ModelReply)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["contradicted", "unsupported", "supported"]}
    },
    "required": ["verdict"],
    "additionalProperties": False,
}
"""The JSON schema of the judge model's reply."""

_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_verdict(text: str) -> str | None:
    """The verdict in a model's reply, or None.

    The exact JSON object; else the verdict objects found inside the text (a
    code fence, a sentence around it), if they all agree.
    """
    text = text.strip()
    try:
        return _REPLY.decode(text).verdict
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    found = set()
    for candidate in _OBJECT.findall(text):
        try:
            found.add(_REPLY.decode(candidate).verdict)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found.pop() if len(found) == 1 else None


_SYSTEM = (
    "You check an answer for factual support. You have no tools and no sources."
    " Reply with exactly one JSON object and nothing else:"
    ' {"verdict": "contradicted"} if the answer is wrong,'
    ' {"verdict": "supported"} if it is well established,'
    ' {"verdict": "unsupported"} if you cannot tell.'
)


class JudgeSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How the loop's judge is built (``[judge]`` in the config, ``--judge-mode``).

    Attributes
    ----------
    mode : {"live", "shadow"}
        ``live``: this judge drives learning. ``shadow``: the default judge (the
        deterministic rails at their calibrated thresholds, no model) drives, and
        this one judges every outcome beside it, logged only — so a new judge (a
        model, other thresholds) can be audited before it drives (``evaluate``
        reports the agreement).
    relevant, decisive : float
        The relevance gate and the decisive margin
        (:data:`~sentient_core.relevance.RELEVANT`, :data:`~sentient_core.relevance.DECISIVE`).
    model : bool
        Ask the configured chat model to lower verdicts (when there is one).
    """

    mode: Literal["live", "shadow"] = "live"
    relevant: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = RELEVANT
    decisive: Annotated[float, msgspec.Meta(ge=0.0, le=2.0)] = DECISIVE
    model: bool = True

    def build(self, llm: ChatModel | None, breaker: CircuitBreaker | None = None) -> Judge:
        """The judge that drives, with the shadow beside it in ``shadow`` mode."""
        mine = Judge(
            llm=llm if self.model else None,
            relevant=self.relevant,
            decisive=self.decisive,
            breaker=breaker,
        )
        if self.mode == "live":
            return mine
        return Judge(breaker=breaker, shadow=mine)


def _v(outcome: Outcome, basis: Basis, reason: str, gate: Gate, decisive: bool = True) -> Verdict:
    return Verdict(outcome=outcome, basis=basis, reason=reason, gate=gate, decisive=decisive)


class Judge:
    """Judge iteration outcomes; deterministic rails first, an optional model for the middle.

    Parameters
    ----------
    llm : ChatModel, optional
        Judge model for ungrounded answers (can only ever say failure or
        could_not_verify). None: ungrounded answers are could_not_verify.
    max_tokens : int
        Reply budget for the judge model.
    relevant : float
        Relevance a stored passage needs (default :data:`sentient_core.relevance.RELEVANT`).
    decisive : float
        Ranking margin a ranked source's answer needs (default
        :data:`sentient_core.relevance.DECISIVE`).
    breaker : CircuitBreaker, optional
        Shared with the chaperone: while open the model is not asked.

    Attributes
    ----------
    outcomes, bases : dict[str, int]
        Verdicts given, by outcome and by basis.
    model_calls, model_errors, model_garbage, model_skips : int
        Judge-model calls, calls that raised, replies that did not parse, calls
        not made because the breaker was open.
    """

    def __init__(
        self,
        llm: ChatModel | None = None,
        *,
        max_tokens: int = 32,
        relevant: float = RELEVANT,
        decisive: float = DECISIVE,
        breaker: CircuitBreaker | None = None,
        shadow: Judge | None = None,
    ) -> None:
        self.llm = llm
        self.breaker = breaker
        self.shadow = shadow
        self.shadow_agreed = 0
        self.shadow_disagreed = 0
        self.max_tokens = max_tokens
        self.relevant = relevant
        self.decisive = decisive
        self.outcomes: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.bases: dict[str, int] = dict.fromkeys(BASES, 0)
        self.model_calls = 0
        self.model_errors = 0
        self.model_garbage = 0
        self.model_skips = 0
        self._emit: Emitter | None = None

    def decisive_margin(self, margin: float | None) -> bool:
        """Whether a ranked source's margin (None: it does not rank) names one clear answer."""
        return margin is None or margin >= self.decisive

    def judge(self, outcome: IterationOutcome, emit: Emitter | None = None) -> Verdict:
        """The verdict on one iteration (see the module docstring for the rails).

        ``emit`` publishes the breaker's transitions caused by the judge's calls, and
        a ``shadow`` judge's verdict (:class:`~sentient_core.events.ShadowJudgeEvent`),
        which is only logged: nothing acts on it.
        """
        self._emit = emit
        try:
            verdict = self._judge(outcome)
        finally:
            self._emit = None
        if outcome.relevance is not None and verdict.relevance is None:
            verdict = msgspec.structs.replace(
                verdict, relevance=outcome.relevance, focus=self._focus(outcome)
            )
        self.outcomes[verdict.outcome] += 1
        self.bases[verdict.basis] += 1
        if self.shadow is not None:
            self._in_shadow(outcome, verdict, emit)
        return verdict

    def _in_shadow(self, outcome: IterationOutcome, live: Verdict, emit: Emitter | None) -> None:
        """The shadow judge's verdict on the same outcome, logged beside the live one."""
        assert self.shadow is not None
        seen = self.shadow.judge(outcome, emit)
        agrees = seen.outcome == live.outcome
        if agrees:
            self.shadow_agreed += 1
        else:
            self.shadow_disagreed += 1
        if emit is not None:
            emit.emit(
                ShadowJudgeEvent,
                id=outcome.request_id,
                outcome=seen.outcome,
                basis=seen.basis,
                reason=seen.reason,
                gate=seen.gate,
                live=live.outcome,
                agrees=agrees,
            )

    @staticmethod
    def _focus(o: IterationOutcome) -> float | None:
        """How much the stored passage is about the question (None: no passage stored)."""
        if not (o.question.strip() and o.answer.strip()):
            return None
        return focus(o.question, o.answer)

    def counters(self) -> dict[str, Any]:
        """All counters, JSON-ready."""
        return {
            "outcomes": dict(self.outcomes),
            "bases": dict(self.bases),
            "model_calls": self.model_calls,
            "model_errors": self.model_errors,
            "model_garbage": self.model_garbage,
            "model_skips": self.model_skips,
            **(
                {"shadow": {"agreed": self.shadow_agreed, "disagreed": self.shadow_disagreed}}
                if self.shadow is not None
                else {}
            ),
        }

    def _judge(self, o: IterationOutcome) -> Verdict:
        if o.refused:
            return _v(
                "not_applicable",
                "deterministic",
                "the request was refused; nothing was tried",
                "safety",
            )
        if not o.ok:
            what = {"fetch_content": "fetch", "read_local": "read"}.get(o.request_type, "request")
            detail = f": {o.error}" if o.error else ""
            return _v("failure", "deterministic", f"the {what} failed{detail}", "source")
        if o.error:
            return _v(
                "could_not_verify",
                "deterministic",
                f"the response is ok but reports an error ({o.error}); not counted as success",
                "source",
            )
        if o.grounded:
            return self._grounded(o)
        return self._ungrounded(o)

    def _tie(self, o: IterationOutcome) -> str:
        if self.decisive_margin(o.margin):
            return ""
        return (
            f"; but the source ranks a passage it did not give within {o.margin:.2f}"
            f" < {self.decisive:.2f} of its best: not an answer to the question"
        )

    def _grounded(self, o: IterationOutcome) -> Verdict:
        if not GROUNDING_KINDS.intersection(o.source_kinds):
            return _v(
                "could_not_verify",
                "deterministic",
                "marked grounded but names no web, local or corpus source",
                "grounding",
            )
        if o.content_chars == 0:
            return _v(
                "could_not_verify",
                "deterministic",
                "grounded but the content was empty",
                "grounding",
            )
        if o.relevance is not None and o.relevance < self.relevant:
            return _v(
                "failure",
                "deterministic",
                f"irrelevant: the best passage answers the question with relevance"
                f" {o.relevance:.2f} < {self.relevant:.2f}; nothing stored",
                "relevance",
            )
        if o.integrated_chunks == 0 and o.known_chunks > 0:
            holder = f" (trace {o.known_trace})" if o.known_trace >= 0 else ""
            return _v(
                "not_applicable",
                "deterministic",
                f"already known: memory holds this content{holder}; nothing new stored{self._tie(o)}",
                "novelty",
                self.decisive_margin(o.margin),
            )
        if o.best_known and o.known_chunks > 0:
            holder = f" (trace {o.known_trace})" if o.known_trace >= 0 else ""
            return _v(
                "not_applicable",
                "deterministic",
                f"already known: memory holds the best passage{holder};"
                f" {o.integrated_chunks} chunk(s) ranked below it stored{self._tie(o)}",
                "novelty",
                self.decisive_margin(o.margin),
            )
        if o.integrated_chunks == 0:
            return _v(
                "could_not_verify",
                "deterministic",
                "grounded content, but nothing was integrated",
                "novelty",
            )
        if not self.decisive_margin(o.margin):
            return _v(
                "could_not_verify",
                "deterministic",
                f"ambiguous: the source ranks a passage it did not give within {o.margin:.2f}"
                f" < {self.decisive:.2f} of its best; {o.integrated_chunks} chunk(s) stored,"
                " not counted as learned",
                "decisive",
            )
        # "What is known about X?" answered by a line that only names X says nothing; a
        # precise question ("Where do quokkas live?") may rightly have a short answer.
        beyond = substance(o.question, o.answer) if overview_subject(o.question) else THIN_TERMS
        if beyond < THIN_TERMS:
            return _v(
                "could_not_verify",
                "deterministic",
                f"thin: the stored passage says {beyond} thing(s) beyond the question's own"
                f" words (< {THIN_TERMS}); {o.integrated_chunks} chunk(s) stored, not counted"
                " as learned",
                "substance",
            )
        about = self._focus(o)
        relevant = (
            ""
            if o.relevance is None
            else f", relevant ({o.relevance:.2f}"
            + ("" if about is None else f", focus {about:.2f}")
            + ")"
        )
        verdict = _v(
            "success",
            "deterministic",
            f"grounded{relevant} and new: {o.integrated_chunks} chunk(s) integrated",
            "learned",
        )
        if o.relevance is not None:  # what it rests on, read once
            verdict = msgspec.structs.replace(verdict, relevance=o.relevance, focus=about)
        if self.llm is None or not o.question.strip():
            return verdict
        # The model may only lower a success: contradicted → failure, unsupported → cnv.
        said, _ = self._ask_model(o)
        if said == "contradicted":
            return _v(
                "failure",
                "llm",
                "the judge model says the passage contradicts the question",
                "model",
            )
        if said == "unsupported":
            return _v(
                "could_not_verify",
                "llm",
                "the judge model cannot confirm the passage answers it",
                "model",
            )
        return verdict

    def _ask_model(self, o: IterationOutcome) -> tuple[str | None, str]:
        """The model's verdict on the answer (None when it failed), and why it failed."""
        messages = [
            {"role": "system", "content": _SYSTEM},
            {
                "role": "user",
                "content": f"Question: {o.question[:MAX_JUDGED_CHARS]}\n\n"
                f"Answer: {o.answer[:MAX_JUDGED_CHARS]}",
            },
        ]
        if self.breaker is not None and not self.breaker.enter(self._emit):
            self.model_skips += 1
            left = self.breaker.remaining_s()
            return None, f"judge model not asked: its circuit is open ({left:.0f} s left)"
        self.model_calls += 1
        structured = getattr(self.llm, "chat_json", None)
        try:
            if structured is not None:
                reply = structured(
                    messages,
                    schema=VERDICT_SCHEMA,
                    name="verdict",
                    max_tokens=self.max_tokens,
                    temperature=0.0,
                )
            else:
                reply = self.llm.chat(messages, max_tokens=self.max_tokens, temperature=0.0)  # type: ignore[union-attr]
            text = reply.text
        except Exception as exc:  # unreachable, timeout, HTTP error, bad client: all fail safe
            self.model_errors += 1
            why = f"judge model unavailable ({type(exc).__name__}: {exc})"[:300]
            if self.breaker is not None:
                self.breaker.failed(self._emit, why)
            return None, why
        if self.breaker is not None:
            self.breaker.succeeded(self._emit)
        verdict = parse_verdict(text) if isinstance(text, str) else None
        if verdict is None:
            self.model_garbage += 1
            return None, f"judge model reply is not the expected JSON: {str(text)[:80]!r}"
        return verdict, ""

    def _ungrounded(self, o: IterationOutcome) -> Verdict:
        if self.llm is None:
            return _v(
                "could_not_verify",
                "fail_safe",
                "ungrounded answer and no judge model to check it",
                "grounding",
            )
        if not o.answer.strip():
            return _v(
                "could_not_verify",
                "fail_safe",
                "ungrounded and there is no answer to check",
                "grounding",
            )
        verdict, why = self._ask_model(o)
        if verdict is None:
            return _v("could_not_verify", "fail_safe", why, "grounding")
        if verdict == "contradicted":
            return _v(
                "failure",
                "llm",
                "the judge model says the ungrounded answer is contradicted",
                "model",
            )
        # "supported" by a model is still not grounding: never success.
        return _v(
            "could_not_verify",
            "llm",
            f"the judge model says {verdict}; an ungrounded answer is never counted as success",
            "grounding",
        )
