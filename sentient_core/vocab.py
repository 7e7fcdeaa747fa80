"""The vocabulary of the learning loop: gaps, requests, responses, outcomes, verdicts.

These typed messages (msgspec; frozen; unknown fields rejected) are the
contracts between curiosity, the drives, the chaperone, the judge and the
learner. Both :mod:`sentient_core.learning` and :mod:`sentient_core.autonomy`
import them from here, and nothing here imports either package.

Gap types have ONE priority table, :data:`GAP_PRIORITY`, ordered by rank: an
explicit user question first, then a user-declared focus, then memory misses,
coherence drops, open epistemic debts, link gaps (a densely linked subject with
one unanswered neighbour, :mod:`sentient_core.learning.link_gaps`) and the SMF
field-balance heuristic (SPEC §4: question > memory_miss > coherence_drop >
smf_imbalance). Ties
between equal priorities are broken by that same order (:func:`gap_rank`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

import msgspec

from sentient_core.safetext import safe_path_text

__all__ = [
    "BASES",
    "GAP_PRIORITY",
    "GAP_TYPES",
    "GROUNDING_KINDS",
    "OUTCOMES",
    "QUERY_TYPES",
    "SOURCE_KINDS",
    "Basis",
    "ChaperoneRequest",
    "ChaperoneResponse",
    "Gap",
    "GapType",
    "IterationOutcome",
    "Outcome",
    "Passage",
    "QueryType",
    "SessionStats",
    "Source",
    "SourceKind",
    "Verdict",
    "gap_rank",
    "model_ref",
]

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
NonNeg = Annotated[int, msgspec.Meta(ge=0)]

# ----------------------------------------------------------------------------- gaps

GapType = Literal[
    "question", "focus", "memory_miss", "coherence_drop", "debt", "link", "smf_imbalance"
]

GAP_PRIORITY: dict[str, float] = {
    "question": 0.9,
    "focus": 0.85,
    "memory_miss": 0.8,
    "coherence_drop": 0.7,
    "debt": 0.6,
    "link": 0.55,
    "smf_imbalance": 0.5,
}
"""Default priority of each gap type, in rank order (the one table of the loop)."""

GAP_TYPES: tuple[str, ...] = tuple(GAP_PRIORITY)
"""Gap types in rank order."""

_GAP_RANK = {name: i for i, name in enumerate(GAP_TYPES)}


def gap_rank(gap_type: str) -> int:
    """Rank of a gap type (0 = first); unknown types rank last."""
    return _GAP_RANK.get(gap_type, len(GAP_TYPES))


class Gap(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A knowledge gap found by curiosity (or a drive's initiative)."""

    type: GapType
    topic: str
    question: str
    priority: Unit = 0.5
    detail: str = ""
    url: str = ""
    path: str = ""


# ----------------------------------------------------------------------------- requests

QueryType = Literal["question", "fetch_content", "read_local", "summarize"]
QUERY_TYPES: tuple[str, ...] = ("question", "fetch_content", "read_local", "summarize")

SourceKind = Literal["llm", "web", "local", "summary", "memory", "corpus"]
SOURCE_KINDS: tuple[str, ...] = ("llm", "web", "local", "summary", "memory", "corpus")

GROUNDING_KINDS = frozenset({"web", "local", "corpus"})
"""Source kinds that come from a grounding action (fetched, read, or read from
the local corpus). ``llm``, ``summary`` and ``memory`` are not grounding."""


class ChaperoneRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the learner asks the chaperone for.

    ``question`` for *question*; ``url`` for *fetch_content*; ``path`` (relative
    to the incoming dir, or absolute — the safety filter decides) for
    *read_local*; ``text`` (or ``path``/``url`` of content to summarise) for
    *summarize*.
    """

    id: str
    type: QueryType
    topic: str = ""
    question: str = ""
    url: str = ""
    path: str = ""
    text: str = ""
    gap_type: str = ""
    session: str = ""
    route: str = ""
    """How to ask the source another way (the task-commitment drive,
    :mod:`sentient_core.learning.commitment`): ``wider``/``deeper`` (2×/4× the
    passages), ``relax`` (half the minimum score, 2× the passages), ``corpus``
    (the offline answerer, not the model); "" asks as usual."""
    scope: str = ""
    """A source id (``local:/…/curl.changelog.txt``) the offline answer is limited to: a
    recipe's source (:mod:`sentient_core.learning.recipe_use`); "" any source."""


class Source(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where a piece of content came from (the real origin, never a made-up name).

    ``ref`` is what the chaperone itself knows: the URL it fetched, the path it
    read, the corpus document, or ``HOST/MODEL`` of the model it asked (from
    its own configuration, never a string a response sent back).
    """

    kind: SourceKind
    ref: str

    @property
    def id(self) -> str:
        """The normalised provenance stored with a trace: ``KIND:REF``.

        ``web:https://…``, ``local:/path``, ``corpus:pydoc:topic:with``,
        ``llm:HOST/MODEL``, ``summary:…``; control characters are dropped,
        undecodable file-name bytes escaped (``bad\\xff.txt``) and the whole cut
        to :data:`MAX_SOURCE_CHARS`.
        """
        # A file name may be any bytes: escape what cannot be stored or shown.
        ref = safe_path_text(_CONTROL.sub("", self.ref))
        return f"{self.kind}:{ref}"[:MAX_SOURCE_CHARS]


MAX_SOURCE_CHARS = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MODEL_UNSAFE = re.compile(r"[^A-Za-z0-9._:+-]+")


def model_ref(base_url: str, model: str) -> str:
    """``HOST/MODEL`` for a model source: the configured host and a sanitised model name.

    The model name may contain only letters, digits and ``._:+-`` (anything
    else becomes ``_``; leading and trailing dots and underscores are dropped),
    so no path or markup can ride in on it.
    """
    host = _host(base_url)
    name = _MODEL_UNSAFE.sub("_", model).strip("._") or "model"
    return f"{host}/{name}"[:MAX_SOURCE_CHARS]


def _host(url: str) -> str:
    """The host[:port] of an http(s) URL ("unknown-host" when it has none)."""
    rest = url.split("://", 1)[-1]
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return _MODEL_UNSAFE.sub("_", host).strip("._") or "unknown-host"


class Passage(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One passage of an answer, with exactly its own provenance.

    Attributes
    ----------
    text : str
    source : Source
        Where this passage (and only this passage) came from.
    start, end : int
        Character offsets of the passage in its source document's text
        (-1 when the source has no document text to point into, e.g. an LLM).
    score : float
        The retrieval score that ranked it (0 when not ranked).
    heading : str
        The heading of the section it lies in, from the same source ("" when
        none, or when the passage holds it): context, not part of the slice.
    """

    text: str
    source: Source
    start: int = -1
    end: int = -1
    score: float = 0.0
    heading: str = ""

    @property
    def shown(self) -> str:
        """The text as stored and judged: under its heading when it has one."""
        return f"{self.heading}\n{self.text}" if self.heading else self.text


class ChaperoneResponse(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The chaperone's answer to one request.

    ``ok`` — content was produced. ``refused`` — a safety check (``check``)
    or the budget stopped it, with ``reason``. ``grounded`` — the content comes
    from a grounding action that really happened: fetched from an allowed
    source or read from an allowed file (an LLM-only answer is never grounded).
    ``saved_path`` — where fetched content was written (inside the incoming dir).
    ``tool_calls`` — calls that left the process (LLM requests, web fetches);
    answers from the local corpus make none.
    ``passages`` — the answer's passages, best first, each with its own source
    and offsets; they are stored one trace set each, never glued under one
    name (``content`` and ``sources`` summarise them). ``margin`` — for a
    ranked answer (the local corpus), how far its best passage's ranking key beats
    the best passage it did not give; None when the source does not rank.
    """

    request_id: str
    type: QueryType
    ok: bool
    content: str = ""
    sources: tuple[Source, ...] = ()
    passages: tuple[Passage, ...] = ()
    refused: bool = False
    check: str = ""
    reason: str = ""
    error: str = ""
    grounded: bool = False
    saved_path: str = ""
    mime: str = ""
    bytes: NonNeg = 0
    tokens: NonNeg = 0
    tool_calls: NonNeg = 0
    elapsed_s: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
    margin: float | None = None


# ----------------------------------------------------------------------------- outcomes

Outcome = Literal["success", "failure", "could_not_verify", "not_applicable"]
OUTCOMES: tuple[str, ...] = ("success", "failure", "could_not_verify", "not_applicable")
Basis = Literal["deterministic", "llm", "fail_safe"]
BASES: tuple[str, ...] = ("deterministic", "llm", "fail_safe")
Gate = Literal[
    "budget",
    "safety",
    "source",
    "grounding",
    "relevance",
    "novelty",
    "decisive",
    "substance",
    "model",
    "learned",
]
GATES: tuple[str, ...] = tuple(g for g in get_args(Gate) if g != "learned")
"""The loop's AND-gates from an initiative to "learned", in the order it meets them: the
budget, the safety filter, the source answering at all, grounding, the question–passage
relevance, novelty (memory did not hold it), a decisive ranking, substance (an overview
says something), and a judge model's check. ``"learned"`` is an initiative all passed."""


class Verdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The judge's ruling on one iteration.

    Attributes
    ----------
    outcome : {"success", "failure", "could_not_verify", "not_applicable"}
    basis : {"deterministic", "llm", "fail_safe"}
    reason : str
        Which rail decided, in words.
    gate : str
        The gate (:data:`GATES`) that stopped the initiative, or ``"learned"``.
    relevance, focus : float or None
        What the stored passage was judged on: its relevance to the question (the
        gate) and how much of it is about the question
        (:func:`sentient_core.relevance.focus`); None without a question or a passage.
    decisive : bool
        False when the source ranked a passage it did not give within the decisive
        margin of its best: an "already known" that may not be the answer (the
        task-commitment drive asks again for the runner-up passages).
    """

    outcome: Outcome
    basis: Basis
    reason: str
    gate: Gate
    relevance: float | None = None
    focus: float | None = None
    decisive: bool = True


class IterationOutcome(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What happened in one iteration, as far as the judge needs to know.

    Attributes
    ----------
    request_type : {"question", "fetch_content", "read_local", "summarize"}
    ok, refused, grounded : bool
        As in :class:`ChaperoneResponse`.
    error : str
        The response's error message ("" if none).
    source_kinds : tuple of str
        Kinds of the response's sources.
    request_id : str
        The request judged (its events' ``id``).
    integrated_chunks : int
        Chunks of this response stored as new traces.
    known_chunks : int
        Chunks memory already held (stored nothing; the holder's use count went up).
    known_trace : int
        A trace that already held them (-1 if none).
    best_known : bool
        The best passage (the most relevant) was among them: memory already held
        the answer, and any new chunks are passages ranked below it.
    relevance : float or None
        How well the stored passage answers the question (the calibrated
        :func:`sentient_core.relevance.relevance`); None when there was no
        question to answer (a requested fetch or read).
    margin : float or None
        The response's :attr:`ChaperoneResponse.margin` (None: the source does not rank).
    content_chars : int
        Length of the response's content.
    answer, question : str
        The answer text and the question asked (for the judge model).
    """

    request_type: QueryType
    ok: bool
    request_id: str = ""
    refused: bool = False
    grounded: bool = False
    error: str = ""
    source_kinds: tuple[SourceKind, ...] = ()
    integrated_chunks: NonNeg = 0
    known_chunks: NonNeg = 0
    known_trace: int = -1
    best_known: bool = False
    relevance: float | None = None
    margin: float | None = None
    content_chars: NonNeg = 0
    answer: str = ""
    question: str = ""

    @classmethod
    def from_response(
        cls,
        response: ChaperoneResponse,
        *,
        integrated_chunks: int,
        question: str = "",
        known_chunks: int = 0,
        known_trace: int = -1,
        best_known: bool = False,
        relevance: float | None = None,
        answer: str | None = None,
    ) -> IterationOutcome:
        """The outcome of ``response`` after ``integrated_chunks`` new chunks of it were stored."""
        return cls(
            request_type=response.type,
            ok=response.ok,
            request_id=response.request_id,
            refused=response.refused,
            grounded=response.grounded,
            error=response.error,
            source_kinds=tuple(s.kind for s in response.sources),
            integrated_chunks=integrated_chunks,
            known_chunks=known_chunks,
            known_trace=known_trace,
            best_known=best_known,
            relevance=relevance,
            margin=response.margin,
            content_chars=len(response.content),
            answer=response.content if answer is None else answer,
            question=question,
        )


# ----------------------------------------------------------------------------- sessions


class SessionStats(msgspec.Struct, forbid_unknown_fields=True):
    """Counters of one session (every AND-gate of the loop shows up as a number)."""

    iterations: int = 0
    skipped: int = 0
    initiatives: int = 0
    queries: int = 0
    refused: int = 0
    failed: int = 0
    ingested: int = 0
    concepts: int = 0
    links: int = 0
    reflections: int = 0
    budget_stops: int = 0
    tokens: int = 0
    tokens_estimated: int = 0
    outcomes: dict[str, int] = msgspec.field(default_factory=dict)
    gaps: dict[str, int] = msgspec.field(default_factory=dict)
    requests: dict[str, int] = msgspec.field(default_factory=dict)
    stopped_by: str = ""
    error: str = ""
    gates: dict[str, int] = msgspec.field(default_factory=dict)
    """Judged initiatives by the gate that stopped them (``"learned"``: none did)."""
    promotion: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    """The layers' verification gates this session: gate (``condensation``) → ``reached``,
    ``passed``, ``vetoed`` (candidates that reached it, went up, were refused)."""
    idle: dict[str, str] = msgspec.field(default_factory=dict)
    """At the session's end: each funnel gate that stopped nothing, promotion gate that saw
    no candidate and loop stage that did not act, with why
    (:func:`~sentient_core.learning.idle.idle_reasons`)."""
    search: dict[str, int] = msgspec.field(default_factory=dict)
    """The search step this session (:mod:`sentient_core.learning.searching`):
    ``searches`` run, candidate ``results``, ``allowed`` and ``filtered`` by the safety
    filter, ``fetched`` (found sources read), ``answered`` (a question the judge called
    answered from a found source), ``errors`` (failed searches)."""
