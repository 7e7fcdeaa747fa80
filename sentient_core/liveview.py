"""Readable one-line renderings of learner events (``cli.py learn`` and ``eavesdrop``)."""

from __future__ import annotations

import time

from sentient_core.learning.events import Event

__all__ = ["render"]


def _clip(text: str, n: int = 90) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _body(e: Event) -> str | None:
    d = e.data
    k = e.kind
    if k == "session":
        extra = ""
        if d.get("state") == "started":
            extra = f" ({d.get('iterations')} iteration(s))"
        return f"session {d.get('state')}{extra}"
    if k == "question":
        return f"question queued: {_clip(d.get('question', ''))}"
    if k == "curiosity":
        gaps = d.get("gaps", [])
        if not gaps:
            return f"curiosity: no gaps (intensity {d.get('intensity', 0):.2f})"
        first = gaps[0]
        more = f" (+{len(gaps) - 1} more)" if len(gaps) > 1 else ""
        return (
            f"curiosity: {len(gaps)} gap(s), intensity {d.get('intensity', 0):.2f}: "
            f"{first['type']} — {_clip(first['question'], 70)}{more}"
        )
    if k == "skip":
        return f"skipped: {d.get('reason')}"
    if k == "query":
        what = d.get("question") or d.get("url") or d.get("path") or d.get("topic")
        return f"query {d.get('id')} {d.get('type')}: {_clip(what, 80)}"
    if k == "chaperone.request":
        return None  # the query line already says it
    if k == "chaperone.response":
        if d.get("refused"):
            return None  # the refusal line says it
        if not d.get("ok"):
            return f"chaperone ✗ {d.get('type')}: {_clip(d.get('error', ''), 80)}"
        srcs = d.get("sources") or []
        src = srcs[0] if srcs else {}
        ref = src.get("ref", "") if isinstance(src, dict) else str(src)
        kind = src.get("kind", "") if isinstance(src, dict) else ""
        grounded = "grounded" if d.get("grounded") else "not grounded"
        fallback = f", {d['fallback']} fallback" if d.get("fallback") else ""
        return (
            f"chaperone ✓ {kind} {_clip(ref, 50)} "
            f"({d.get('content_chars', 0)} chars, {grounded}{fallback})"
        )
    if k == "refusal":
        return f"refused by {d.get('check')}: {_clip(d.get('reason', ''), 80)}"
    if k == "integrate":
        return f"ingest+integrate: {d.get('chunks')} chunk(s) from {_clip(d.get('source', ''), 60)}"
    if k == "judge":
        return f"judge: {d.get('outcome')} ({d.get('basis')}) — {_clip(d.get('reason', ''), 70)}"
    if k == "learn":
        return None
    if k == "budget":
        return f"budget: {d.get('cap')} — {_clip(d.get('reason', ''), 80)}"
    if k == "reflect":
        f = d.get("followups") or []
        return (
            f"reflect: {d.get('links')} link(s) among {d.get('traces')} trace(s); "
            f"dominant axis {d.get('dominant_axis')}; follow-ups: {', '.join(f) or 'none'}"
        )
    if k == "iteration":
        outs = ", ".join(d.get("outcomes") or []) or "none"
        return (
            f"iteration done: {d.get('initiatives')} initiative(s), {d.get('ingested')} chunk(s),"
            f" outcomes: {outs}, coherence {d.get('coherence', 0):.3f}"
        )
    if k == "error":
        where = d.get("where") or d.get("stage") or "loop"
        return f"ERROR in {where}: {_clip(d.get('error', ''), 120)}"
    return f"{k}: {_clip(str(d), 100)}"


def render(e: Event, *, with_time: bool = False) -> str | None:
    """One readable line for an event, or ``None`` for events a person need not see."""
    body = _body(e)
    if body is None:
        return None
    head = f"[iter {e.iteration}]" if e.iteration >= 0 else "[session]"
    if with_time:
        head = time.strftime("%H:%M:%S", time.localtime(e.t)) + " " + head
    return f"{head} {body}"
