"""Readable one-line renderings of learner events (``cli.py learn`` and ``eavesdrop``)."""

from __future__ import annotations

import time

from sentient_core.autonomy.funnel import describe
from sentient_core.events import (
    BreakerEvent,
    BudgetEvent,
    ChaperoneRequestEvent,
    ChaperoneResponseEvent,
    CommitmentEvent,
    CuriosityEvent,
    ErrorEvent,
    Event,
    FocusEvent,
    IntegrateEvent,
    IterationEvent,
    JudgeEvent,
    LayerEvent,
    LearnEvent,
    LegacyEvent,
    MetaMemoryEvent,
    ModelWaitEvent,
    QueryEvent,
    QuestionClosedEvent,
    QuestionEvent,
    RecipeEvent,
    ReflectEvent,
    RefusalEvent,
    SearchEvent,
    SessionEvent,
    ShadowJudgeEvent,
    SkipEvent,
    UnsafeSettingEvent,
)

__all__ = ["render"]


def _clip(text: str, n: int = 90) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _body(e: Event | LegacyEvent) -> str | None:
    match e:
        case SessionEvent(state="ended", stats=stats) if stats is not None:
            # The gates' funnel, and any gate that stopped everything: never silent.
            return "\n  ".join(["session ended", *describe(stats)])
        case SessionEvent(state=state, iterations=n):
            return f"session {state}" + (f" ({n} iteration(s))" if state == "started" else "")
        case QuestionEvent(question=q, status=status, reason=reason, origin=origin):
            why = f" ({_clip(reason, 70)})" if reason else ""
            who = "" if origin == "user" else f"{origin} "
            return f"{who}question {status}: {_clip(q, 80)}{why}"
        case QuestionClosedEvent(question=q, outcome=outcome, trace_id=tid, reason=reason):
            if outcome == "not_found":
                tried = f" after {e.attempts} attempt(s): {'; '.join(e.tried)}" if e.tried else ""
                return f"question NOT FOUND: {_clip(q, 70)}{tried} — {_clip(reason, 160)}"
            what = "answered" if outcome == "answered" else "already known"
            src = f" from {_clip(e.source, 50)}" if e.source else ""
            return f"question {what} (trace {tid}{src}): {_clip(q, 70)} — {_clip(e.passage, 80)}"
        case FocusEvent(goal=gid, topic=topic, action=action, held=held, reason=reason):
            why = "; ".join(held) or reason
            return f"focus goal {gid} {action}: {_clip(topic, 60)}" + (
                f" — {_clip(why, 120)}" if why else ""
            )
        case CuriosityEvent(gaps=gaps, intensity=intensity):
            if not gaps:
                return f"curiosity: no gaps (intensity {intensity:.2f})"
            more = f" (+{len(gaps) - 1} more)" if len(gaps) > 1 else ""
            return (
                f"curiosity: {len(gaps)} gap(s), intensity {intensity:.2f}: "
                f"{gaps[0].type} — {_clip(gaps[0].question, 70)}{more}"
            )
        case SkipEvent(reason=reason):
            return f"skipped: {reason}"
        case QueryEvent():
            what = e.question or e.url or e.path or e.topic
            return f"query {e.id} {e.type}: {_clip(what, 80)}"
        case ChaperoneRequestEvent() | LearnEvent():
            return None  # the query and judge lines already say it
        case ChaperoneResponseEvent():
            if e.refused:
                return None  # the refusal line says it
            if not e.ok:
                return f"chaperone ✗ {e.type}: {_clip(e.error, 80)}"
            kind, ref = (e.sources[0].kind, e.sources[0].ref) if e.sources else ("", "")
            grounded = "grounded" if e.grounded else "not grounded"
            fallback = f", {e.fallback} fallback" if e.fallback else ""
            return (
                f"chaperone ✓ {kind} {_clip(ref, 50)} "
                f"({e.content_chars} chars, {grounded}{fallback})"
            )
        case RefusalEvent(check=check, reason=reason):
            return f"refused by {check}: {_clip(reason, 80)}"
        case IntegrateEvent(chunks=chunks, source=source):
            return f"ingest+integrate: {chunks} chunk(s) from {_clip(source, 60)}"
        case JudgeEvent(outcome=outcome, basis=basis, reason=reason, gate=gate):
            at = "" if gate in ("", "learned") else f" at the {gate} gate"
            return f"judge: {outcome} ({basis}){at} — {_clip(reason, 70)}"
        case ShadowJudgeEvent(outcome=outcome, live=live, agrees=agrees, reason=reason):
            verdict = "agrees" if agrees else f"disagrees (live: {live})"
            return f"judge (shadow): {outcome}, {verdict} — {_clip(reason, 60)}"
        case CommitmentEvent(question=q, route=route, reason=reason):
            did = f"tries {route}" if route else "gives up"
            return f"commitment: {did} for {_clip(q, 60)} — {_clip(reason, 60)}"
        case SearchEvent(provider=provider, results=n, allowed=allowed, fetching=f, error=err):
            if err:
                return f"search ({provider}): failed — {_clip(err, 70)}"
            cut = ", ".join(f"{c} {k}" for c, k in sorted(e.filtered.items()))
            return f"search ({provider}): {n} found, {allowed} allowed, reading {f}" + (
                f"; filtered: {cut}" if cut else ""
            )
        case RecipeEvent(recipe=rid, action=action, before=before, after=after):
            moved = f" ({before} → {after})" if before != after else f" [{after}]"
            return f"recipe {rid}: {action}{moved} — {_clip(e.question_kind, 50)} in {e.domain}"
        case BudgetEvent(cap=cap, reason=reason):
            return f"budget: {cap} — {_clip(reason, 80)}"
        case ReflectEvent():
            return (
                f"reflect: {e.links} link(s) among {e.traces} trace(s); "
                f"dominant axis {e.dominant_axis}; follow-ups: {', '.join(e.followups) or 'none'}"
            )
        case IterationEvent():
            outs = ", ".join(e.outcomes) or "none"
            return (
                f"iteration done: {e.initiatives} initiative(s), {e.ingested} chunk(s),"
                f" outcomes: {outs}, coherence {e.coherence:.3f}"
            )
        case ModelWaitEvent(elapsed_s=elapsed, deadline_s=deadline):
            return f"waiting for the model… {elapsed:.0f} s (gives up at {deadline:.0f} s)"
        case BreakerEvent(state="open", failures=n, cool_down_s=cool, reason=reason):
            return (
                f"model circuit OPEN after {n} failure(s) in a row: offline answers for"
                f" {cool:.0f} s ({_clip(reason, 60)})"
            )
        case BreakerEvent(state=state):
            return f"model circuit {state}" + (
                ": one trial call" if state == "half-open" else ": the model answers again"
            )
        case ErrorEvent(where=where, error=error):
            return f"ERROR in {where}: {_clip(error, 120)}"
        case UnsafeSettingEvent(key=key, value=value, source=source):
            return f"UNSAFE setting {key} = {value} ({source})"
        case MetaMemoryEvent(component=c, action=a, subject=subj, domain=d, before=b, after=x):
            where = f" [{d}]" if d else ""
            moved = f" {b:.3f} → {x:.3f}" if b != x else ""
            return f"meta-memory {c} {a}: {_clip(subj, 80)}{where}{moved}"
        case LayerEvent(layer=layer, record=rec, action=a, subject=subj, reason=why):
            about = f" on {_clip(subj, 60)!r}" if subj else ""
            return f"{layer} layer: {rec}{about} {a}: {_clip(why, 100)}"
        case LegacyEvent(kind=kind, data=data):
            return f"{kind}: {_clip(str(data), 100)}"
    return f"{e.kind}: {_clip(str(e), 100)}"  # pragma: no cover - every kind is matched above


def render(e: Event | LegacyEvent, *, with_time: bool = False) -> str | None:
    """One readable line for an event, or ``None`` for events a person need not see."""
    body = _body(e)
    if body is None:
        return None
    head = f"[iter {e.iteration}]" if e.iteration >= 0 else "[session]"
    if with_time:
        head = time.strftime("%H:%M:%S", time.localtime(e.t)) + " " + head
    return f"{head} {body}"
