"""Read back what a run did, from the store and its audit log only.

Everything here is computed from two things a run leaves behind: the traces in
the store (:func:`read_traces`) and the typed events in its audit log
(:func:`sentient_core.events.read_events`). Nothing is taken from the learner's
own counters, so the figures are an independent account of the run.

Linking a request to the passage it stored
------------------------------------------
Every :class:`~sentient_core.events.IntegrateEvent` (one per stored passage)
names the request ``id``, the ``source`` and the ids of the new traces
(``trace_ids``). :func:`link_requests` reads those traces from the store and
checks the event against them: every id must be a stored trace, its ``source``
must be the event's, and there must be as many as the event's ``chunks``.

A request with an event whose check fails is ``linked=False`` and its passage
is left empty, so a verdict on it can never count as a verified one: when the
two accounts disagree, the harness takes the pessimistic one and reports how
often.

The *stored passage* of a request is the text of its new traces, joined.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

import msgspec

from sentient_core.analysis import shingles
from sentient_core.evaluation.qa import normalize
from sentient_core.evaluation.report import LinkStats
from sentient_core.events import (
    IntegrateEvent,
    JudgeEvent,
    QueryEvent,
)
from sentient_core.keyphrases import near_repeat, topic_terms
from sentient_core.memory.types import NEAR_SHINGLES
from sentient_core.store import Store, TraceRecord, links, traces

__all__ = [
    "INTAKE_KINDS",
    "RequestRecord",
    "RunAudit",
    "audit_run",
    "duplicate_count",
    "link_requests",
    "link_stats",
    "names_question",
    "query_key",
    "read_traces",
    "repeat_count",
    "silent_drops",
]

#: Event kinds that take a question in rather than settle it: curiosity listing
#: it as a gap, a reflection proposing it, and a ``question`` event whose status
#: is ``queued`` (or that has no status: the v1 log). Any other event naming a
#: question settles it: asked, answered (from memory or before), waiting (it
#: failed before and backs off), dropped with a reason, a query, …
INTAKE_KINDS = frozenset({"curiosity", "reflect"})


class RequestRecord(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One request of a run, as the audit log and the store tell it.

    Attributes
    ----------
    id, type, session : str
        From the :class:`QueryEvent`.
    iteration : int
    question, topic, path, url : str
        What was asked (``question`` is empty for reads, fetches and summaries).
    outcome, basis, reason : str
        The judge's verdict ("" if none was recorded).
    source : str
        The integrated content's source ("" if nothing was integrated).
    chunks : int
        Chunks the integrate event reports.
    linked : bool
        The stored traces were found and checked (see the module docstring).
    trace_ids : tuple of int
    passage : str
        The text of the linked traces, joined by blank lines.
    """

    id: str
    type: str
    session: str = ""
    iteration: int = -1
    question: str = ""
    topic: str = ""
    path: str = ""
    url: str = ""
    outcome: str = ""
    basis: str = ""
    reason: str = ""
    source: str = ""
    chunks: int = 0
    linked: bool = False
    trace_ids: tuple[int, ...] = ()
    passage: str = ""

    @property
    def label(self) -> str:
        """What was asked, for a person: the question, else the type and its target."""
        if self.question:
            return self.question
        target = self.path or self.url or self.topic
        return f"[{self.type}] {target}".strip()


class RunAudit(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Requests, traces and events of one run.

    Attributes
    ----------
    requests : list of RequestRecord
        In audit-log order.
    traces : list of TraceRecord
        Every trace in the store (retired ones too), in id order.
    events : list
        Every event of the audit log, oldest first.
    unlinked : int
        Integrate events whose traces could not be found and checked.
    """

    requests: list[RequestRecord]
    traces: list[TraceRecord]
    events: list
    unlinked: int = 0


def read_traces(store: Store) -> list[TraceRecord]:
    """Every trace in ``store`` (retired ones too), in id order."""
    with store.read() as txn:
        return list(traces.iter_range(txn))


def duplicate_count(records: Iterable[TraceRecord]) -> int:
    """Traces whose text (normalised, see :func:`normalize`) equals an earlier trace's."""
    seen: set[str] = set()
    dups = 0
    for r in records:
        key = normalize(r.text)
        if key in seen:
            dups += 1
        seen.add(key)
    return dups


def near_duplicate_count(records: Iterable[TraceRecord], threshold: float = NEAR_SHINGLES) -> int:
    """Traces that share at least ``threshold`` of the smaller text's 5-word shingles
    (:func:`~sentient_core.analysis.shared_shingles`) with an earlier trace, exact
    duplicates (:func:`duplicate_count`) left out."""
    postings: dict[int, list[int]] = {}
    sizes: list[int] = []
    keys: list[str] = []
    near = 0
    for r in records:
        mine = shingles(r.text)
        key = normalize(r.text)
        shared: Counter[int] = Counter()
        for sh in mine:
            for j in postings.get(sh, ()):
                shared[j] += 1
        if any(
            keys[j] != key and n >= threshold * min(len(mine), sizes[j]) for j, n in shared.items()
        ):
            near += 1
        for sh in mine:
            postings.setdefault(sh, []).append(len(sizes))
        sizes.append(len(mine))
        keys.append(key)
    return near


def near_repeat_count(queries: Iterable[QueryEvent]) -> int:
    """Questions that ask about an earlier question's subject another way
    (:func:`~sentient_core.keyphrases.near_repeat`), exact repeats left out."""
    seen: dict[str, tuple[str, ...]] = {}
    near = 0
    for q in queries:
        if not q.question.strip():
            continue
        key, terms = query_key(q), topic_terms(q.question)
        if key not in seen and any(near_repeat(terms, t) for t in seen.values()):
            near += 1
        seen.setdefault(key, terms)
    return near


def query_key(event: QueryEvent) -> str:
    """What a query asks for, normalised: the question, else the path or URL ("" if none).

    A ``summarize`` of in-memory text names neither and has no key: it is
    never counted as a repeat.
    """
    target = event.question or event.path or event.url
    return f"{event.type}:{normalize(target)}" if target.strip() else ""


def repeat_count(queries: Iterable[QueryEvent]) -> tuple[int, int]:
    """``(queries, repeats)``: a repeat asks what an earlier query asked (same :func:`query_key`)."""
    seen: set[str] = set()
    n = repeats = 0
    for q in queries:
        n += 1
        key = query_key(q)
        if not key:
            continue
        if key in seen:
            repeats += 1
        seen.add(key)
    return n, repeats


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _settling_strings(event: object) -> list[str]:
    """The normalised string fields of an event that can settle a question ([] for intake)."""
    data = msgspec.to_builtins(event)
    if not isinstance(data, dict):
        return []
    kind = data.get("kind", "")
    if kind in INTAKE_KINDS or (kind == "question" and data.get("status", "queued") == "queued"):
        return []
    return [normalize(s) for s in _strings(data)]


def names_question(event: object, question: str) -> bool:
    """Whether an event settles ``question``: names it and is no intake event.

    Intake events (:data:`INTAKE_KINDS`, and ``question`` events with status
    ``queued``) only take questions in. "Naming" is containment of the
    normalised question in any string field, at any depth.
    """
    key = normalize(question)
    return any(key in s for s in _settling_strings(event))


def silent_drops(
    questions: Sequence[str], events: Sequence[object], held: Collection[str] = ()
) -> list[str]:
    """The ``questions`` that no event settles (see :func:`names_question`), in order.

    ``held`` are questions the question book still holds (queued or waiting for
    a later iteration or session): those are accounted for, not dropped.
    """
    kept = {normalize(q) for q in held}
    wanted = {normalize(q): q for q in questions if normalize(q) not in kept}
    open_ = dict(wanted)
    for event in events:
        if not open_:
            break
        fields = _settling_strings(event)
        if not fields:
            continue
        for key in [k for k in open_ if any(k in s for s in fields)]:
            del open_[key]
    return [q for k, q in wanted.items() if k in open_]


def link_requests(
    records: Sequence[TraceRecord], events: Sequence[object]
) -> tuple[dict[str, tuple[list[TraceRecord], bool]], int]:
    """Each integrated request's stored traces (see the module docstring).

    Returns
    -------
    links : dict
        ``request id -> (traces, linked)``.
    unlinked : int
        Integrate events whose check failed.
    """
    by_id = {r.id: r for r in records}
    links: dict[str, tuple[list[TraceRecord], bool]] = {}
    unlinked = 0
    for e in events:
        if not isinstance(e, IntegrateEvent):
            continue
        got = [by_id[i] for i in e.trace_ids if i in by_id]
        ok = len(got) == len(e.trace_ids) == e.chunks and all(t.source == e.source for t in got)
        if not ok:
            unlinked += 1
        traces, linked = links.get(e.id, ([], True))
        links[e.id] = (traces + got, linked and ok)
    return links, unlinked


def audit_run(store: Store, events: Sequence[object]) -> RunAudit:
    """Requests (with verdicts and stored passages) and traces of a run.

    Parameters
    ----------
    store : Store
        The run's store (its traces are read).
    events : sequence
        The run's events, oldest first (``read_events(store)`` without the sequence numbers).
    """
    records = read_traces(store)
    links, unlinked = link_requests(records, events)
    by_id: dict[str, RequestRecord] = {}
    order: list[RequestRecord] = []
    for e in events:
        if isinstance(e, QueryEvent):
            rec = RequestRecord(
                id=e.id,
                type=e.type,
                session=e.session,
                iteration=e.iteration,
                question=e.question,
                topic=e.topic,
                path=e.path,
                url=e.url,
            )
            by_id[e.id] = rec
            order.append(rec)
        elif isinstance(e, JudgeEvent) and e.id in by_id:
            r = by_id[e.id]
            r.outcome, r.basis, r.reason = e.outcome, e.basis, e.reason
        elif isinstance(e, IntegrateEvent) and e.id in by_id:
            r = by_id[e.id]
            r.source = r.source or e.source  # the first (most relevant) passage's
            r.chunks += e.chunks
            got, ok = links.get(e.id, ([], False))
            r.linked = ok
            if ok:
                r.trace_ids = tuple(t.id for t in got)
                r.passage = "\n\n".join(t.text for t in got)
    return RunAudit(requests=order, traces=records, events=list(events), unlinked=unlinked)


def link_stats(store: Store, records: Sequence[TraceRecord]) -> LinkStats:
    """:class:`LinkStats` of ``store``'s links over its traces ``records``."""
    from sentient_core.analysis import content_terms
    from sentient_core.keyphrases import key_phrases

    by_id = {r.id: r for r in records}
    with store.read() as txn:
        pairs = {(min(lk.src, lk.dst), max(lk.src, lk.dst)) for lk in links.iter_from(txn)}
    degree: Counter[int] = Counter()
    for a, b in pairs:
        degree[a] += 1
        degree[b] += 1
    salient: dict[int, set[str]] = {}

    def terms(i: int) -> set[str]:
        if i not in salient:
            phrases = key_phrases(by_id[i].text) if i in by_id else []
            salient[i] = {t for p in phrases for t in content_terms(p)}
        return salient[i]

    known = [(a, b) for a, b in pairs if a in by_id and b in by_id]
    same = sum(by_id[a].source == by_id[b].source for a, b in known)
    shared = sum(bool(terms(a) & terms(b)) for a, b in known)
    return LinkStats(
        pairs=len(pairs),
        per_trace=2 * len(pairs) / len(records) if records else 0.0,
        max_per_trace=max(degree.values(), default=0),
        same_source=same / len(known) if known else None,
        shared_term=shared / len(known) if known else None,
    )
