"""A configured model may add a disagreement signal the deterministic detector missed.

:func:`~sentient_core.metamemory.disagreement.detect_disagreement` finds conflicting
values next to the question's identifiers. Where it finds none (or only a weak
one), :class:`ModelDisagreement` asks the model whether the two passages give
conflicting answers to the question, and which values conflict, as JSON
(:data:`SCHEMA`). A ``conflict: true`` reply whose two values are non-empty,
different, and each found in its own passage becomes a
:class:`~sentient_core.metamemory.disagreement.Disagreement` of kind ``model``
with magnitude :data:`MODEL_SIGNAL`. The model is never asked when the
detector already found a strong disagreement, and its answer never removes
one: it can only add.

Any failure (no reply, an open circuit, a reply that is not the JSON asked for,
values the passages do not hold) adds nothing and is counted.
"""

from __future__ import annotations

import json
from typing import Any

from sentient_core.errors import SentientError
from sentient_core.metamemory.base import Counts
from sentient_core.metamemory.disagreement import Disagreement

__all__ = ["MODEL_SIGNAL", "SCHEMA", "ModelDisagreement"]

MODEL_SIGNAL = 0.35
"""Magnitude of a model-only disagreement: inside SPEC's band 0.25 ≤ s < 0.55, so
a source is punished on it only after ≥ 2 failures in its last 8 events, never at
once, and credit moves only with a second consistent signal."""

MAX_PASSAGE_CHARS = 2000
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "conflict": {"type": "boolean"},
        "memory_value": {"type": "string"},
        "evidence_value": {"type": "string"},
    },
    "required": ["conflict", "memory_value", "evidence_value"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You compare two passages that answer the same question. Reply with JSON only: "
    '{"conflict": true|false, "memory_value": "...", "evidence_value": "..."}. '
    "conflict is true only when the passages give different answers to the question "
    "(a different version, date, number or name); then memory_value and evidence_value "
    "are the conflicting values, copied exactly from passage A and passage B. "
    'Otherwise conflict is false and both values are "".'
)


class ModelDisagreement:
    """Asks a chat model whether two passages disagree (see the module docstring).

    Parameters
    ----------
    llm : object
        With ``chat_json(messages, schema=, name=, max_tokens=, temperature=)``
        (:class:`~sentient_core.learning.llm.LLMClient`).
    breaker : CircuitBreaker, optional
        The model's circuit (shared with the chaperone and the judge).
    emit : Emitter, optional
        For the breaker's events.
    max_tokens : int
    """

    def __init__(
        self, llm: Any, *, breaker: Any = None, emit: Any = None, max_tokens: int = 120
    ) -> None:
        self.llm = llm
        self.breaker = breaker
        self.emit = emit
        self.max_tokens = max_tokens
        self._counts = Counts(("calls", "conflicts", "agreements", "errors", "skips", "garbage"))

    def counters(self) -> dict[str, float]:
        """Calls, conflicts added, agreements, errors, circuit skips, unusable replies."""
        return self._counts.as_dict()

    def check(self, question: str, predicted: str, evidence: str) -> Disagreement | None:
        """A ``model`` disagreement between ``predicted`` and ``evidence``, or None."""
        if self.breaker is not None and not self.breaker.enter(self.emit):
            self._counts.add("skips")
            return None
        messages = [
            {"role": "system", "content": _SYSTEM},
            {
                "role": "user",
                "content": f"Question: {question[:1000]}\n\n"
                f"Passage A (memory): {predicted[:MAX_PASSAGE_CHARS]}\n\n"
                f"Passage B (new evidence): {evidence[:MAX_PASSAGE_CHARS]}",
            },
        ]
        self._counts.add("calls")
        try:
            reply = self.llm.chat_json(
                messages,
                schema=SCHEMA,
                name="disagreement",
                max_tokens=self.max_tokens,
                temperature=0.0,
            )
        except (SentientError, OSError, ValueError) as exc:
            self._counts.add("errors")
            if self.breaker is not None:
                self.breaker.failed(self.emit, f"disagreement model unavailable ({exc})"[:300])
            return None
        if self.breaker is not None:
            self.breaker.succeeded(self.emit)
        parsed = _parse(getattr(reply, "text", ""))
        if parsed is None:
            self._counts.add("garbage")
            return None
        conflict, mine, theirs = parsed
        if not conflict:
            self._counts.add("agreements")
            return None
        # The values must be the passages' own: a model's paraphrase is no evidence.
        if (
            not mine
            or not theirs
            or mine == theirs
            or mine not in predicted
            or theirs not in evidence
        ):
            self._counts.add("garbage")
            return None
        self._counts.add("conflicts")
        return Disagreement(
            magnitude=MODEL_SIGNAL,
            explanation=f"the model says memory's {mine!r} conflicts with the evidence's {theirs!r}",
            anchor=question[:200],
            expected=mine[:200],
            actual=theirs[:200],
            kind="model",
            strong=False,
            distance=0,
        )


def _parse(text: object) -> tuple[bool, str, str] | None:
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("conflict"), bool):
        return None
    mine, theirs = data.get("memory_value", ""), data.get("evidence_value", "")
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return None
    return data["conflict"], mine.strip(), theirs.strip()
