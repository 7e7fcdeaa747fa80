"""Why a gate did nothing this session: every stage either fires or says why it could not.

The session's funnel (:mod:`sentient_core.autonomy.funnel`) shows the gates that
stopped something and the promotion gates that saw candidates. A gate that did
neither is not silent either: at the session's end :func:`idle_reasons` names it
with the reason, read off the learner's own state (a cap not reached, no judge
model configured, recipes off, no search provider …), into
:attr:`SessionStats.idle <sentient_core.vocab.SessionStats.idle>`; the session's
end, ``status`` and ``/learning/status`` show them.
"""

from __future__ import annotations

from typing import Any

from sentient_core.vocab import GATES

__all__ = ["PROMOTION_GATES", "STAGES", "idle_reasons"]

PROMOTION_GATES: tuple[str, ...] = ("condensation", "recipe verification", "repair")
"""The layers' verification gates (SPEC §6), as counted in ``SessionStats.promotion``."""

STAGES: tuple[str, ...] = ("search", "wisdom")
"""Loop stages beyond the funnel that report when they did nothing."""


def _funnel_reason(gate: str, learner: Any) -> str:
    """Why funnel ``gate`` stopped nothing this session."""
    llm = getattr(learner.chaperone, "llm", None)
    if gate == "budget":
        spent = learner.budget.report()
        caps, today = spent["caps"], spent["today"]
        calls = caps.get("daily_tool_calls") or "no cap"
        tokens = caps.get("daily_tokens") or "no cap"
        return (
            f"no cap was reached ({today.get('tool_calls', 0)} tool call(s) of {calls},"
            f" {today.get('tokens', 0)} token(s) of {tokens})"
        )
    if gate == "safety":
        return "no request named a URL or file the safety filter refuses"
    if gate == "source":
        return "every source asked gave an answer"
    if gate == "grounding":
        return (
            "no model answered: every answer came from the local corpus"
            if llm is None
            else "every answer was grounded, or the model's was corroborated"
        )
    if gate == "model":
        return (
            "no judge model is configured: the deterministic rails decide"
            if getattr(learner.judge, "llm", None) is None
            else "the judge model upheld every verdict it was asked about"
        )
    return "every initiative that reached it passed"


def _promotion_reason(gate: str, learner: Any) -> str:
    config, stats = learner.config, learner.stats
    if gate == "condensation":
        if not config.condense:
            return "off ([learner] condense = false)"
        if not stats.reflections:
            return "no reflection ran this session (it condenses after one; reflect_every)"
        return "no subject was named by two independent sources"
    if not config.recipes:
        return "recipes are off ([learner] recipes = false)"
    if gate == "repair":
        if not config.skill_repair:
            return "off ([learner] skill_repair = false)"
        return "no advisory recipe to repair"
    return "no recipe was reused this session"


def _stage_reason(stage: str, learner: Any) -> str | None:
    """Why loop ``stage`` did nothing, or None when it acted."""
    if stage == "search":
        if learner.stats.search.get("searches"):
            return None
        if getattr(learner.search, "provider", None) is None:
            return "no search provider is configured ([search] provider = none)"
        return "no user question or memory miss went unanswered by the usual route"
    meta = learner.meta
    if meta is None:
        return "meta-memory is off (--no-metamemory)"
    advisor = meta.meta.advisor
    if sum(advisor.uses.values()):
        return None
    if not advisor.enabled:
        return "off ([learner] use_wisdom = false)"
    states = [r.state for r in meta.meta.wisdom.records()]
    active = sum(s in ("provisional", "trusted") for s in states)
    if not active:
        return (
            f"no provisional or trusted wisdom yet ({states.count('candidate')} candidate(s):"
            " 4 episodes over 2 sessions and a resolved debt promote one)"
        )
    return f"{active} active record(s), none about a source or domain asked this session"


def idle_reasons(learner: Any) -> dict[str, str]:
    """Every funnel gate that stopped nothing, promotion gate that saw no candidate and
    loop stage that did not act this session, with why (see the module docstring)."""
    stats = learner.stats
    out: dict[str, str] = {}
    reached = stats.budget_stops + sum(stats.gates.values())
    for gate in GATES:
        stopped = stats.gates.get(gate, 0) + (stats.budget_stops if gate == "budget" else 0)
        if stopped:
            continue
        out[gate] = "no initiative reached it" if not reached else _funnel_reason(gate, learner)
    for gate in PROMOTION_GATES:
        if not stats.promotion.get(gate, {}).get("reached"):
            out[gate] = _promotion_reason(gate, learner)
    for stage in STAGES:
        why = _stage_reason(stage, learner)
        if why is not None:
            out[stage] = why
    return out
