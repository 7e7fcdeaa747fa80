"""Metrics of an evaluation run, as records, and their text rendering.

Definitions (each figure is computed from the run's store and audit log):

answer@1, answer@k
    Share of questions with one of their answer strings (case-insensitive,
    whitespace-normalised substring) in the text of the top-1 / top-k recalled
    traces (``memory.recall(q, k, touch=False)``; for bm25s its top-k of the
    same chunk texts).
answered
    Questions counted in answer@k.
chunks stored
    Traces in the run's store at the end (retired ones too).
characters stored
    Their text, in characters: the fair measure of how much each mode keeps,
    since ingest stores chunks of up to 2,000 characters and learn the
    answerer's passages of up to 600.
tool calls
    The budget's committed tool calls over the run (calls that leave the
    process: web fetches and LLM requests; offline corpus answers cost none).
iterations
    Learner iterations run.
… per answered question
    The total divided by ``answered`` (none when nothing was answered).
duplicate stores
    Traces whose normalised text equals an earlier trace's.
repeat-query rate
    Share of query events asking what an earlier query of the run asked (same
    normalised question, path or URL; see :func:`~sentient_core.evaluation.audit.query_key`).
silent drops
    Questions put to the learner that no event settles: never queried, never
    reported answered from memory or dropped with a reason (see
    :func:`~sentient_core.evaluation.audit.silent_drops`).
judge precision
    Among ``success`` verdicts on requests asking a Q/A question, the share whose
    stored passage (the traces integrated for that request) contains one of
    that question's answers. Successes on the learner's own requests (reads,
    summaries, its own questions) cannot be checked by answer strings and are
    counted apart.
judge recall
    Among requests asking a Q/A question whose stored passage contains one of
    its answers (whatever the verdict), the share judged ``success``: what the
    judge's caution (an ambiguous ranking, content already known) costs.
answered per question book
    Among the Q/A questions the question book counts answered at the end (never
    to be asked again: a success, or already known with a decisive ranking),
    the share where a trace the settling request stored or found already known
    contains one of the question's answers.
latency
    Per-query wall time of retrieval alone (ours: ``memory.recall``; bm25s:
    tokenise + retrieve), median and 95th percentile, in the same process.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import msgspec

from sentient_core.evaluation.condensed import CondensationReport
from sentient_core.evaluation.spreading import SpreadReport

__all__ = [
    "EvaluationReport",
    "FreeRunReport",
    "JudgeReport",
    "Latency",
    "LinkStats",
    "ModeReport",
    "QuestionResult",
    "SuccessEntry",
    "format_free_run",
    "format_report",
    "per_answered",
]


class Latency(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Per-query retrieval time in milliseconds."""

    queries: int
    median_ms: float
    p95_ms: float
    mean_ms: float


class Spread(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How values are spread: their count, extremes and quartiles."""

    n: int
    min: float
    q1: float
    median: float
    q3: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        """The spread of ``values`` (None when there are none); quartiles by linear interpolation."""
        if not values:
            return None
        xs = sorted(values)
        q1, median, q3 = statistics.quantiles(xs * 2 if len(xs) == 1 else xs, method="inclusive")
        return cls(n=len(xs), min=xs[0], q1=q1, median=median, q3=q3, max=xs[-1])

    def line(self) -> str:
        """``min / q1 / median / q3 / max (n)``, two decimals."""
        return (
            f"{self.min:.2f} / {self.q1:.2f} / {self.median:.2f} / {self.q3:.2f} / {self.max:.2f}"
            f" (n {self.n})"
        )


class ShadowReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A shadow judge beside the live one (``--judge-mode shadow``).

    Attributes
    ----------
    judged, agreed : int
        Outcomes both judged; those where the verdicts are the same.
    agreement : float
    pairs : dict of str to int
        ``"live->shadow"`` verdict pairs and their counts.
    qa_success, qa_verified : int
        The shadow's ``success`` verdicts on Q/A questions, and those whose stored
        passage holds an answer.
    precision : float or None
        ``qa_verified / qa_success``: what the shadow would claim, checked.
    """

    judged: int
    agreed: int
    agreement: float
    pairs: dict[str, int]
    qa_success: int = 0
    qa_verified: int = 0
    precision: float | None = None


class JudgeReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The judge's verdicts over a run.

    Attributes
    ----------
    outcomes : dict
        Verdicts by outcome, over every request.
    qa_success : int
        ``success`` verdicts on requests that asked a Q/A question.
    qa_verified : int
        Of those, the ones whose stored passage contains an answer of the question.
    precision : float or None
        ``qa_verified / qa_success`` (None without Q/A successes).
    qa_answer_stored : int
        Requests asking a Q/A question whose stored passage contains an answer,
        whatever their verdict.
    recall : float or None
        ``qa_verified / qa_answer_stored`` (None when no such request).
    own_success : int
        ``success`` verdicts on the learner's own requests (no answer strings to check).
    own_success_by_type : dict
        Those by request type (and gap type for questions).
    unlinked : int
        Integrated requests whose stored traces could not be found and checked.
    book_answered : int
        Q/A questions the question book counts answered at the end (a success, or
        already known with a decisive ranking): never asked again.
    book_verified : int
        Of those, the ones where a trace the settling request stored or found
        already known contains an answer.
    book_precision : float or None
        ``book_verified / book_answered`` (None when none is counted answered).
    shadow : ShadowReport or None
        A shadow judge's agreement with the live one (None: no shadow judge).
    """

    outcomes: dict[str, int]
    qa_success: int
    qa_verified: int
    precision: float | None
    qa_answer_stored: int = 0
    recall: float | None = None
    own_success: int
    own_success_by_type: dict[str, int]
    unlinked: int
    shadow: ShadowReport | None = None
    book_answered: int = 0
    book_verified: int = 0
    book_precision: float | None = None


class QuestionResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One question's result in one mode.

    Attributes
    ----------
    q : str
    rank : int or None
        1-based rank of the first recalled passage holding an answer (None: not in top-k).
    answer : str or None
        The answer string found there.
    rank_after_own_iterations : int or None
        Learn mode: the rank right after the question's own iterations.
    iterations : int
        Learn mode: iterations run for this question.
    """

    q: str
    rank: int | None
    answer: str | None = None
    rank_after_own_iterations: int | None = None
    iterations: int = 0


class ModeReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The metrics of one mode (``ingest``, ``learn`` or the ``bm25s`` peer)."""

    mode: str
    questions: int
    k: int
    answer_at_1: float
    answer_at_k: float
    answered: int
    chunks_stored: int | None = None
    chars_stored: int | None = None
    tool_calls: int | None = None
    iterations: int | None = None
    chunks_per_answered: float | None = None
    tool_calls_per_answered: float | None = None
    iterations_per_answered: float | None = None
    duplicate_stores: int | None = None
    near_duplicate_stores: int | None = None
    queries: int | None = None
    repeat_queries: int | None = None
    repeat_query_rate: float | None = None
    near_repeat_queries: int | None = None
    near_repeat_rate: float | None = None
    silent_drops: int | None = None
    silent_dropped: tuple[str, ...] = ()
    answer_at_k_after_own_iterations: float | None = None
    judge: JudgeReport | None = None
    condensation: CondensationReport | None = None
    spread: SpreadReport | None = None
    latency: Latency | None = None
    stopped_by: str = ""
    seconds: float = 0.0
    results: tuple[QuestionResult, ...] = ()


class SuccessEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One success verdict for a person to read: what was asked, where from, what was
    stored (the most relevant passage's start, and how many lesser passages beside it)."""

    request: str
    asked: str
    source: str
    passage: str
    linked: bool
    more: int = 0
    objections: tuple[str, ...] = ()
    relevance: float | None = None
    focus: float | None = None


class LinkStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the reflection graph holds (each linked pair counted once).

    Attributes
    ----------
    pairs : int
    per_trace : float
        Mean links per trace (over every trace of the store).
    max_per_trace : int
    same_source : float or None
        Share of pairs joining two passages of one source (file, document, URL).
    shared_term : float or None
        Share of pairs whose traces share a salient term (a word of their
        top key phrases, :func:`sentient_core.keyphrases.key_phrases`).
    """

    pairs: int = 0
    per_trace: float = 0.0
    max_per_trace: int = 0
    same_source: float | None = None
    shared_term: float | None = None


class FreeRunReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The default offline learner run for N iterations on a fresh store, no questions given.

    Attributes
    ----------
    iterations : int
        Iterations run (skipped ones included).
    queries, repeat_queries : int
    repeat_query_rate : float or None
    duplicate_stores : int
    near_duplicate_stores : int
        Traces sharing ≥ 0.8 of the smaller text's 5-word shingles with an earlier
        one (exact duplicates aside).
    near_repeat_queries : int
    near_repeat_rate : float or None
        Questions asking about an earlier one's subject another way (exact repeats
        aside), and their share of the queries.
    chunks_stored, tool_calls : int
    own_questions : int
        Follow-up questions the learner raised itself (reflection).
    silent_drops : int
        Questions put to curiosity (user questions: none here; the learner's own
        follow-ups) that no event settles.
    silent_dropped : tuple of str
    outcomes : dict
    successes : tuple of SuccessEntry
        Every success verdict, in order.
    unlinked : int
    corpus : tuple of str
        What the offline answerer read.
    stopped_by : str
    seconds : float
    links : LinkStats
        The reflection graph at the end of the run.
    answered_from, successes_from : dict of str to int
        Queries the chaperone answered, and success verdicts, by where the answer
        came from: ``user`` (only the user's files: the incoming dir, ``--corpus``),
        ``shipped`` (only the shipped documentation), ``mixed``, ``elsewhere``
        (a web page, a model) or ``none`` (no source: refused, failed).
    strict_accepted : int
        Successes a strict reader accepts, checked by machine
        (:mod:`sentient_core.evaluation.strict`); ``strict_objections`` counts the
        objections to the rest (lifted, bare word, thin).
    followup_outcomes : dict of str to int
        The judge's verdicts on the follow-up questions reflection raised and the
        learner asked (``own_questions`` counts those raised).
    success_relevance, success_focus : Spread or None
        The judge's relevance (the gate) and focus
        (:func:`sentient_core.relevance.focus`) of the passages the successes stored.
    focus_by_reader : dict of str to float
        Median focus of the successes the strict reader accepts (``accepted``) and of
        those it objects to (``objected``): does the signal side with the reader?
    """

    iterations: int
    queries: int
    repeat_queries: int
    repeat_query_rate: float | None
    duplicate_stores: int
    chunks_stored: int
    tool_calls: int
    own_questions: int
    silent_drops: int
    silent_dropped: tuple[str, ...]
    outcomes: dict[str, int]
    successes: tuple[SuccessEntry, ...]
    unlinked: int
    corpus: tuple[str, ...]
    stopped_by: str = ""
    seconds: float = 0.0
    links: LinkStats = LinkStats()
    near_duplicate_stores: int = 0
    near_repeat_queries: int = 0
    near_repeat_rate: float | None = None
    answered_from: dict[str, int] = msgspec.field(default_factory=dict)
    successes_from: dict[str, int] = msgspec.field(default_factory=dict)
    strict_accepted: int = 0
    strict_objections: dict[str, int] = msgspec.field(default_factory=dict)
    followup_outcomes: dict[str, int] = msgspec.field(default_factory=dict)
    success_relevance: Spread | None = None
    success_focus: Spread | None = None
    focus_by_reader: dict[str, float] = msgspec.field(default_factory=dict)


class EvaluationReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Everything one ``evaluate`` run measured."""

    qa_file: str = ""
    corpus: str = ""
    questions: int = 0
    sampled_from: int = 0
    k: int = 5
    iterations_per_question: int = 0
    modes: tuple[ModeReport, ...] = ()
    free_run: FreeRunReport | None = None
    missing_peers: tuple[str, ...] = ()
    python: str = ""
    seconds: float = 0.0


def per_answered(total: int, answered: int) -> float | None:
    """``total / answered``, None when nothing was answered."""
    return total / answered if answered else None


def _f(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _rows(k: int) -> list[tuple[str, object]]:
    def judge(attr: str):
        return lambda m: getattr(m.judge, attr) if m.judge is not None else None

    def shadow(attr: str):
        return lambda m: (
            getattr(m.judge.shadow, attr)
            if m.judge is not None and m.judge.shadow is not None
            else None
        )

    def notes(attr: str):
        return lambda m: getattr(m.condensation, attr) if m.condensation is not None else None

    def spread(attr: str):
        return lambda m: getattr(m.spread, attr) if m.spread is not None else None

    def lat(attr: str):
        return lambda m: getattr(m.latency, attr) if m.latency is not None else None

    return [
        ("answer@1", lambda m: m.answer_at_1),
        (f"answer@{k}", lambda m: m.answer_at_k),
        ("answered", lambda m: m.answered),
        (f"answer@{k} right after own iterations", lambda m: m.answer_at_k_after_own_iterations),
        ("chunks stored", lambda m: m.chunks_stored),
        ("characters stored", lambda m: m.chars_stored),
        ("tool calls", lambda m: m.tool_calls),
        ("iterations", lambda m: m.iterations),
        ("chunks / answered q", lambda m: m.chunks_per_answered),
        ("tool calls / answered q", lambda m: m.tool_calls_per_answered),
        ("iterations / answered q", lambda m: m.iterations_per_answered),
        ("judge precision", judge("precision")),
        ("  success on Q/A questions", judge("qa_success")),
        ("  … passage holds an answer", judge("qa_verified")),
        ("judge recall", judge("recall")),
        ("  passage holds an answer, any verdict", judge("qa_answer_stored")),
        ("  success on own requests", judge("own_success")),
        ("  unlinked integrations", judge("unlinked")),
        ("answered per question book", judge("book_precision")),
        ("  Q/A questions counted answered", judge("book_answered")),
        ("  … its traces hold an answer", judge("book_verified")),
        ("shadow judge: agreement with live", shadow("agreement")),
        ("  outcomes judged by both", shadow("judged")),
        ("  shadow precision", shadow("precision")),
        ("  shadow success on Q/A questions", shadow("qa_success")),
        ("condensed: live notes", notes("notes")),
        (f"  answer@{k} with notes in place", notes("answer_at_k_notes")),
        ("  characters / answered q, plain", notes("chars_per_answered")),
        ("  characters / answered q, notes", notes("chars_per_answered_notes")),
        ("  characters change", notes("chars_change")),
        ("  hits a note stood in for", notes("replaced")),
        ("spread: link pairs in the store", spread("links")),
        ("  answer@1 spread along links", spread("answer_at_1_spread")),
        (f"  answer@{k} spread along links", spread("answer_at_k_spread")),
        ("  hits that came in by a link", spread("neighbours_in_top_k")),
        ("duplicate stores", lambda m: m.duplicate_stores),
        ("near-duplicate stores", lambda m: m.near_duplicate_stores),
        ("queries", lambda m: m.queries),
        ("repeat-query rate", lambda m: m.repeat_query_rate),
        ("near-repeat rate", lambda m: m.near_repeat_rate),
        ("silent drops", lambda m: m.silent_drops),
        ("latency median ms", lat("median_ms")),
        ("latency p95 ms", lat("p95_ms")),
        ("seconds", lambda m: m.seconds),
    ]


def format_report(report: EvaluationReport) -> str:
    """The modes side by side, one metric a row (— where a metric does not apply)."""
    lines: list[str] = []
    if report.modes:
        sampled = (
            f" (a seeded sample of {report.sampled_from})"
            if report.sampled_from > report.questions
            else ""
        )
        lines.append(
            f"Q/A {report.qa_file}: {report.questions} questions{sampled}; corpus {report.corpus};"
            f" k={report.k}"
            + (
                f"; learn: ≤ {report.iterations_per_question} iteration(s) per question"
                if any(m.mode == "learn" for m in report.modes)
                else ""
            )
        )
        names = [m.mode for m in report.modes]
        width = 38
        lines.append(f"{'metric':<{width}}" + "".join(f"{n:>12}" for n in names))
        for label, get in _rows(report.k):
            values = [get(m) for m in report.modes]  # type: ignore[operator]
            if all(v is None for v in values):
                continue
            digits = 2 if "latency" in label or label == "seconds" else 3
            lines.append(f"{label:<{width}}" + "".join(f"{_f(v, digits):>12}" for v in values))
        for m in report.modes:
            if m.judge is not None and m.judge.shadow is not None:
                pairs = ", ".join(f"{k} {v}" for k, v in m.judge.shadow.pairs.items())
                lines.append(f"{m.mode}: live -> shadow verdicts: {pairs}")
            if m.condensation is not None and (m.condensation.lost or m.condensation.gained):
                c = m.condensation
                lines.append(
                    f"{m.mode}: with notes, lost {len(c.lost)} answer(s), gained {len(c.gained)}"
                    + (f"; lost: {'; '.join(c.lost[:3])}" if c.lost else "")
                )
            if m.stopped_by:
                lines.append(f"{m.mode}: stopped by {m.stopped_by}")
            if m.silent_dropped:
                shown = "; ".join(m.silent_dropped[:5])
                more = f" (+{len(m.silent_dropped) - 5} more)" if len(m.silent_dropped) > 5 else ""
                lines.append(f"{m.mode}: silently dropped: {shown}{more}")
    lines.extend(
        f"peer {name} is missing (its row is not shown): pip install 'sentient-core[bench]'"
        for name in report.missing_peers
    )
    if report.free_run is not None:
        if lines:
            lines.append("")
        lines.append(format_free_run(report.free_run))
    return "\n".join(lines)


def _outcomes(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"


def _spread(s: Spread | None) -> str:
    return "—" if s is None else "min/q1/median/q3/max " + s.line()


def _origins(counts: dict[str, int], total: int) -> str:
    """``user 74 (0.705), shipped 15 (0.143), …`` (shares of ``total``)."""
    if not counts or total <= 0:
        return "—"
    order = ("user", "shipped", "mixed", "elsewhere", "none")
    return ", ".join(f"{k} {counts[k]} ({counts[k] / total:.3f})" for k in order if counts.get(k))


def format_free_run(fr: FreeRunReport) -> str:
    """The free run's figures, then every success verdict (asked → source → stored passage)."""
    outs = _outcomes(fr.outcomes)
    lines = [
        f"free run: {fr.iterations} iteration(s) of the default offline learner on a fresh store"
        f" (daily caps lifted); corpus: {', '.join(fr.corpus) or 'none'}",
        f"  passages stored twice     {fr.duplicate_stores}"
        f" (near-duplicates: {fr.near_duplicate_stores})",
        f"  repeat-query rate         {_f(fr.repeat_query_rate)}"
        f" ({fr.repeat_queries} of {fr.queries} queries);"
        f" near-repeat rate {_f(fr.near_repeat_rate)} ({fr.near_repeat_queries})",
        f"  silent drops              {fr.silent_drops}"
        f" (user questions: none asked; own follow-up questions: {fr.own_questions})",
        f"  follow-ups asked          {sum(fr.followup_outcomes.values())} of {fr.own_questions}"
        f" raised: {_outcomes(fr.followup_outcomes)}",
        f"  chunks stored             {fr.chunks_stored}",
        f"  tool calls                {fr.tool_calls}",
        f"  verdicts                  {outs}",
        f"  answered from             {_origins(fr.answered_from, fr.queries)}",
        f"  successes from            {_origins(fr.successes_from, len(fr.successes))}",
        f"  strict reader (machine)   accepts {fr.strict_accepted} of {len(fr.successes)}"
        + "".join(f"; {k} {v}" for k, v in sorted(fr.strict_objections.items())),
        f"  judge on successes        relevance {_spread(fr.success_relevance)};"
        f" focus {_spread(fr.success_focus)}"
        + "".join(f"; median focus {k} {v:.2f}" for k, v in sorted(fr.focus_by_reader.items())),
        f"  unlinked integrations     {fr.unlinked}",
        f"  links                     {fr.links.pairs} pair(s), {fr.links.per_trace:.2f} per trace"
        f" (max {fr.links.max_per_trace}); same source {_f(fr.links.same_source)},"
        f" sharing a salient term {_f(fr.links.shared_term)}",
        f"  stopped by                {fr.stopped_by or 'done'}; {fr.seconds:.1f} s",
        f"  success verdicts ({len(fr.successes)}): asked → source → stored passage",
    ]
    for i, s in enumerate(fr.successes, 1):
        passage = s.passage if s.linked else "(stored traces not found)"
        objected = f"   [strict reader: {', '.join(s.objections)}]" if s.objections else ""
        if s.relevance is not None:
            objected += f"   (relevance {s.relevance:.2f}" + (
                f", focus {s.focus:.2f})" if s.focus is not None else ")"
            )
        lines.append(f"  {i:>3}. {s.asked}{objected}")
        lines.append(f"       → {s.source}")
        lines.append(f"       → {passage}")
        if s.more:
            lines.append(f"       (+ {s.more} lesser passage(s) stored with it)")
    if fr.silent_dropped:
        lines.append("  silently dropped: " + "; ".join(fr.silent_dropped))
    return "\n".join(lines)
