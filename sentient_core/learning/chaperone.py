"""The chaperone: the only component that touches the network or files for the learner.

The learner hands over :class:`~sentient_core.vocab.ChaperoneRequest` objects (data,
never callables) and gets a :class:`~sentient_core.vocab.ChaperoneResponse` back for
each; nothing raises out of :meth:`Chaperone.handle`.

Request types
-------------
``question``
    The LLM's ``ask`` when an LLM is configured (``Source("llm", "HOST/MODEL")``
    from the configuration, never from the response,
    ``grounded=False``: a model's word is never a grounding action). Without an
    LLM, or when the LLM fails (:class:`~sentient_core.learning.llm.LLMError`),
    the offline :class:`~sentient_core.learning.offline.CorpusAnswerer` answers
    with verbatim passages; those are ``grounded=True`` because they are text
    the chaperone really read from files it is allowed to read (the incoming
    dir, ``Source("local", path)``) or from the documentation that ships with
    Python (``Source("corpus", "pydoc:…")``). An LLM failure that was covered by
    the offline answer is *not* put in ``response.error`` (the judge reads an
    ok response with an error as inconsistent); it is recorded as an ``error``
    event, in the interaction log, in :attr:`Chaperone.counters` and as
    ``fallback`` in the ``chaperone.response`` event. With meta-memory
    (:attr:`Chaperone.source_weight` set), a model whose weight in the
    question's domain fell below :data:`DISTRUST_BELOW` is not asked
    (``distrusted``): the corpus answers, and its passages are ranked by score
    times their source's weight.
``fetch_content``
    ``fetcher.fetch(url)`` (which runs the safety checks and saves into the
    incoming dir), then the text of the content (from the very bytes the
    fetcher checked): ``grounded=True``, ``Source("web", final_url)``.
``read_local``
    ``fetcher.read_local(path)`` (the safety filter resolves and checks the
    path and reads it), then the text of those bytes: ``grounded=True``,
    ``Source("local", resolved path)``.
``summarize``
    Of ``text``, or of the content at ``path``/``url`` read/fetched first. The
    LLM's ``summarize`` (``Source("summary", "HOST/MODEL")``, not grounded) or, with no
    LLM or when it fails, an extractive summary (``Source("summary",
    "offline-extractive")``) which is grounded exactly when its input came from
    a grounded read (its sentences are verbatim). The origin's source follows
    the summary's in ``sources``.

A safety refusal comes back as ``refused=True`` with the check's name and the
reason; a fetch/read failure as ``ok=False`` with ``error``. :attr:`Chaperone.searcher`
is the search provider (:mod:`sentient_core.search`) the learner's search step asks.

Logging: every request, response, refusal and error goes to an interaction log (the last
``log_size`` entries, :meth:`Chaperone.interactions`; :mod:`~sentient_core.learning.interactions`)
and, when an :class:`~sentient_core.events.Emitter` (or an :class:`~sentient_core.events.EventBus`)
is given, to events ``chaperone.request``, ``chaperone.response``, ``refusal`` and ``error``
(the bus persists them to the audit log on its next flush).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from sentient_core.autonomy.breaker import CircuitBreaker
from sentient_core.errors import ArgumentError
from sentient_core.events import (
    ChaperoneRequestEvent,
    ChaperoneResponseEvent,
    Emitter,
    ErrorEvent,
    EventBus,
    RefusalEvent,
)
from sentient_core.keyphrases import key_phrases
from sentient_core.learning.commitment import asked_as
from sentient_core.learning.fetch import Fetcher, FetchError
from sentient_core.learning.grounding import (
    Content,
    content_fields,
    extract_data,
    fetch_content,
    read_content,
)
from sentient_core.learning.grounding import RequestFailed as _Failed
from sentient_core.learning.interactions import (
    Interaction,
    InteractionLog,
    request_data,
    response_data,
)
from sentient_core.learning.llm import LLMClient, LLMError
from sentient_core.learning.model_wait import wait_notices
from sentient_core.learning.offline import CorpusAnswerer, summarize_extractive
from sentient_core.learning.safety import Refusal, SafetyFilter
from sentient_core.learning.subjects import heading_subject, overview_subject, subject_of, title_of
from sentient_core.relevance import TermStats
from sentient_core.search.types import SearchProvider
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage, Source, model_ref

__all__ = ["OFFLINE_SUMMARY_REF", "Chaperone", "CorpusTopic", "Interaction", "extract_data"]

# extract_data, and the grounding reads, live in sentient_core.learning.grounding.

OFFLINE_SUMMARY_REF = "offline-extractive"

TOPIC_CONTEXT_CHARS = 1500

CORROBORATION_CONTEXT = 1000
"""Characters of the document kept on each side of a corroborating passage."""

DISTRUST_BELOW = 0.5
"""With meta-memory, a model whose source weight in a question's domain is below this
is not asked that question (the offline corpus answers instead)."""


class CorpusTopic(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A topic the offline corpus can answer: a document's subject (its title, for a
    user's file) or its most salient phrase; ``user``: from the user's sources;
    ``named``: the subject is a name or a heading of its source (not a phrase taken
    from its text)."""

    phrase: str
    source: str
    context: str
    user: bool = False
    named: bool = False


class Chaperone:
    """Serve the learner's requests through the safety filter, the fetcher and an answerer.

    Parameters
    ----------
    safety : SafetyFilter
        The filter the fetcher enforces (kept for its counters: :attr:`safety`).
    fetcher : Fetcher
        Does every network fetch and local read (``fetch(url)``, ``read_local(path)``).
    llm : LLMClient, optional
        An OpenAI-compatible model; ``None`` runs fully offline.
    answerer : CorpusAnswerer, optional
        The offline answerer (the embedded default, and the LLM's fallback).
    events : EventBus, optional
        Where events are published.
    log_size : int
        Entries kept in the interaction log (oldest dropped first).
    clock : callable
        Unix time for log entries.
    timer : callable
        Monotonic clock for ``elapsed_s``.
    answer_k, min_score : int, float
        Passages per offline answer and their score threshold.
    summary_sentences : int
        Sentences in an offline summary.
    breaker : CircuitBreaker, optional
        Stops calling a failing model for a cool-down (default: 3 failures, 60 s).
    wait_notice_s : float
        Seconds between ``model.wait`` events during a model call (0: none).
    """

    def __init__(
        self,
        safety: SafetyFilter,
        fetcher: Fetcher,
        *,
        llm: LLMClient | None = None,
        answerer: CorpusAnswerer | None = None,
        events: EventBus | None = None,
        log_size: int = 1000,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
        answer_k: int = 3,
        min_score: float = 0.12,
        summary_sentences: int = 3,
        breaker: CircuitBreaker | None = None,
        wait_notice_s: float = 5.0,
    ):
        if log_size < 1:
            raise ArgumentError(f"log_size must be >= 1, got {log_size}")
        self.safety = safety
        self.fetcher = fetcher
        self.llm = llm
        self.answerer = answerer
        self.events = events
        self.answer_k = answer_k
        self.min_score = min_score
        self.summary_sentences = summary_sentences
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.wait_notice_s = wait_notice_s
        self._timer = timer
        self._log = InteractionLog(log_size, clock)
        # Calls that leave the process during the request being handled (per thread).
        self._calls = threading.local()
        self._topics: tuple[tuple[str, ...], tuple[CorpusTopic, ...]] | None = None
        self._lock = threading.Lock()
        self._counters: dict[str, int] = dict.fromkeys(
            (
                "requests",
                "ok",
                "refused",
                "failed",
                "internal_errors",
                "llm_calls",
                "llm_errors",
                "offline_answers",
                "fallbacks",
                "breaker_skips",
                "distrusted",
                "corroborations",
            ),
            0,
        )
        # Meta-memory's source weights: ``(question, source id) -> weight`` (None: off).
        self.source_weight: Callable[[str, str], float] | None = None
        self.searcher: SearchProvider | None = None  # where new sources are found (None: off)
        self._by_type: dict[str, int] = {}

    # ------------------------------------------------------------------ introspection

    def interactions(self, last: int | None = None) -> list[Interaction]:
        """The logged interactions, oldest first (only the ``last`` ones if given)."""
        return self._log.entries(last)

    @property
    def counters(self) -> dict[str, Any]:
        """Requests, outcomes, LLM calls/errors, fallbacks, and requests by type."""
        with self._lock:
            return {**self._counters, "by_type": dict(self._by_type)}

    def term_stats(self) -> TermStats | None:
        """Document frequencies over the offline corpus's passages (idf for relevance):
        the answerer's own (it re-ranks with the same weights); None without one."""
        return None if self.answerer is None else self.answerer.term_stats()

    def topics(self) -> tuple[CorpusTopic, ...]:
        """What the offline corpus can answer: each document's most salient phrase.

        Per document (its passages joined), in corpus order, with the document's
        opening as context: a user's file gives its subject (:func:`subject_of`,
        what its name says) and its most salient phrase; a shipped one its phrase.
        Built once per corpus index. Curiosity turns them into questions the
        sources can answer.
        """
        if self.answerer is None:
            return ()
        passages, sources, headings = self.answerer.sections()
        cached = self._topics
        if cached is not None and cached[0] is passages:
            return cached[1]
        stats = self.term_stats()
        docs: dict[Source, list[str]] = {}
        heads: dict[Source, list[str]] = {}
        for text, source, heading in zip(passages, sources, headings, strict=True):
            docs.setdefault(source, []).append(text)
            subject = heading_subject(heading) if source.kind == "local" and heading else ""
            if subject and subject not in heads.setdefault(source, []):
                heads[source].append(subject)
        # Documents first by what they are named for (a user's curl.changelog.txt:
        # curl; a shipped module: its name; a shipped topic: its title), then by their
        # most salient phrase, then a user's by their section headings (a changelog's
        # entries: curl 7.88.1-10), file after file: subjects that stand on their own.
        named, phrased, headed = [], [], []
        for source, parts in docs.items():
            text = "\n\n".join(parts)
            context = text[:TOPIC_CONTEXT_CHARS]
            user = source.kind == "local"
            subject = subject_of(source) if user else title_of(source, parts[0])
            if subject:
                named.append(CorpusTopic(subject, source.id, context, user=user, named=True))
            phrases = key_phrases(text, stats, k=1)
            if phrases and phrases[0] != subject:
                phrased.append(CorpusTopic(phrases[0], source.id, context, user=user))
        for row in itertools.zip_longest(*heads.values()):
            for source, subject in zip(heads, row, strict=True):
                if subject is not None:
                    headed.append(CorpusTopic(subject, source.id, subject, user=True, named=True))
        topics = [*named, *phrased, *headed]
        self._topics = (passages, tuple(topics))
        return self._topics[1]

    def supported(self, question: str) -> bool:
        """Whether a question about a phrase asks about a subject that stands on its
        own: the offline corpus defines it (the phrase starts a word of a document's
        name, or a title starts with it; a bare word must be the title). A phrase
        lifted from a sentence is never a name or a title, so only the passage it
        came from could answer it (the leave-one-out check the issue asks for, made
        stricter: a phrase many passages share is still not a subject). True without
        a corpus or for any other question."""
        subject = overview_subject(question)
        if self.answerer is None or not subject:
            return True
        return self.answerer.defines(subject)

    def _model_ref(self) -> str:
        """``HOST/MODEL`` of the configured model: what this chaperone asked, never
        the model name a response claims."""
        assert self.llm is not None
        return model_ref(self.llm.config.base_url, self.llm.config.model)

    def may_call_out(self, request: ChaperoneRequest) -> int:
        """Calls ``request`` may make outside the process (LLM, web): what the budget checks."""
        if request.type == "fetch_content" or (request.type == "summarize" and request.url):
            return 1 + (self.llm is not None and request.type == "summarize")
        if request.type == "question" and self.llm is not None:
            return int(self._trusts_llm((request.question or request.topic).strip()))
        return int(self.llm is not None and request.type == "summarize")

    def _trusts_llm(self, question: str) -> bool:
        """Whether the LLM is asked ``question``: always, unless meta-memory's weight of
        the model in the question's domain fell below :data:`DISTRUST_BELOW` and the
        offline corpus can answer instead."""
        if self.source_weight is None or self.llm is None or self.answerer is None:
            return True
        return self.source_weight(question, Source("llm", self._model_ref()).id) >= DISTRUST_BELOW

    def corroborate(self, question: str) -> tuple[Passage, ...]:
        """Grounded passages of the local corpus for ``question`` (no model, no network):
        meta-memory checks an ungrounded answer against them. Empty without an answerer."""
        if self.answerer is None or not question.strip():
            return ()
        self._count("corroborations")
        answer = self.answerer.answer(question, k=self.answer_k, min_score=self.min_score)
        spans = getattr(answer, "spans", ()) or ((-1, -1),) * len(answer.passages)
        return self.with_context(
            tuple(
                Passage(text=text, source=source, start=start, end=end, score=float(score))
                for text, source, score, (start, end) in zip(
                    answer.passages, answer.sources, answer.scores, spans, strict=True
                )
            )
        )

    def with_context(self, passages: tuple[Passage, ...]) -> tuple[Passage, ...]:
        """Corpus passages widened by :data:`CORROBORATION_CONTEXT` characters on each side,
        from the neighbouring passages the offline answerer indexed of the same document
        (no file is read again); others as they are."""
        out = []
        for p in passages:
            text, source, score, start, end = p.text, p.source, p.score, p.start, p.end
            if self.answerer is not None and start >= 0:
                wide, a, b = self.answerer.context(source, start, end, CORROBORATION_CONTEXT)
                if wide:
                    text, start, end = wide, a, b
            out.append(Passage(text=text, source=source, start=start, end=end, score=float(score)))
        return tuple(out)

    def sources_mark(self) -> str:
        """A string that changes when what the chaperone can answer from changes.

        The LLM endpoint and model, and the offline corpus (files and passages
        indexed). Curiosity compares it to decide whether a failed question may
        return: asking unchanged sources again would only fail again.
        """
        llm = f"{self.llm.config.base_url}|{self.llm.config.model}" if self.llm else "-"
        corpus = "-"
        if self.answerer is not None:
            st = self.answerer.stats
            corpus = f"{st.files}/{st.passages}"
        return f"llm={llm};corpus={corpus}"

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counters[key] += n

    def _error(self, emit: Emitter | None, req: ChaperoneRequest, stage: str, message: str) -> None:
        self._log.add("error", req, {"stage": stage, "error": message})
        if emit is not None:
            emit.emit(ErrorEvent, where=stage, error=message, id=req.id, type=req.type)

    # ------------------------------------------------------------------ entry point

    def handle(self, request: ChaperoneRequest, emit: Emitter | None = None) -> ChaperoneResponse:
        """Serve one request; never raises (failures come back as responses).

        Events go to ``emit`` (the caller's scope: session and iteration), else
        to the bus given at construction (outside any session), else nowhere.
        """
        if emit is None and self.events is not None:
            emit = self.events.emitter()
        start = self._timer()
        with self._lock:
            self._counters["requests"] += 1
            self._by_type[request.type] = self._by_type.get(request.type, 0) + 1
        req_data = request_data(request)
        self._log.add("request", request, {**req_data, "session": request.session})
        if emit is not None:
            emit.emit(ChaperoneRequestEvent, id=request.id, type=request.type, **req_data)

        fallback = ""
        fields: dict[str, Any]
        self._calls.n = 0
        try:
            fields, fallback = self._dispatch(request, emit)
            outcome = "ok" if fields.get("ok") else "failed"
        except Refusal as refusal:
            check, reason = str(refusal.check), str(refusal.reason)
            fields = {"ok": False, "refused": True, "check": check, "reason": reason}
            outcome = "refused"
            data = {"check": check, "reason": reason, "url": request.url, "path": request.path}
            self._log.add("refusal", request, data)
            if emit is not None:
                emit.emit(RefusalEvent, id=request.id, type=request.type, **data)
        except FetchError as exc:
            fields = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            outcome = "failed"
        except _Failed as exc:
            fields = {"ok": False, "error": exc.error, **exc.fields}
            outcome = "failed"
        except Exception as exc:  # a bug or an unexpected OS error must not stop the learner
            message = f"internal error: {type(exc).__name__}: {exc}"
            fields = {"ok": False, "error": message}
            outcome = "failed"
            self._count("internal_errors")
            self._error(emit, request, "chaperone", message)
        self._count(outcome)

        response = ChaperoneResponse(
            request_id=request.id,
            type=request.type,
            tool_calls=self._calls.n,
            elapsed_s=max(0.0, self._timer() - start),
            **fields,
        )
        resp_data = response_data(response, fallback)
        self._log.add(
            "response",
            request,
            {**resp_data, "sources": [{"kind": x.kind, "ref": x.ref} for x in response.sources]},
        )
        if emit is not None:
            emit.emit(ChaperoneResponseEvent, id=request.id, type=request.type, **resp_data)
        return response

    def _dispatch(self, req: ChaperoneRequest, emit: Emitter | None) -> tuple[dict[str, Any], str]:
        if req.type == "question":
            return self._question(req, emit)
        if req.type == "fetch_content":
            if not req.url:
                raise _Failed("fetch_content needs a url")
            self._calls.n += 1
            return content_fields(fetch_content(self.fetcher, self.answerer, req.url)), ""
        if req.type == "read_local":
            return content_fields(read_content(self.fetcher, req.path)), ""
        if req.type == "summarize":
            return self._summarize(req, emit)
        raise _Failed(f"unknown request type {req.type!r}")

    # ------------------------------------------------------------------ question

    def _ask_llm(
        self, req: ChaperoneRequest, emit: Emitter | None, call: Callable[[], Any]
    ) -> tuple[Any, str]:
        """Run an LLM call; on LLMError record it and return (None, error).

        While the circuit breaker is open the model is not called at all (the
        caller falls back to the offline corpus at once). During a call a
        ``model.wait`` event is published every ``wait_notice_s`` seconds.
        """
        if not self.breaker.enter(emit):
            self._count("breaker_skips")
            left = self.breaker.remaining_s()
            return None, f"the model's circuit is open ({left:.0f} s of cool-down left)"
        self._count("llm_calls")
        self._calls.n += 1
        llm = self.llm
        every_s = self.wait_notice_s if llm is not None else 0.0
        deadline_s = llm.config.longest_wait_s if llm is not None else 0.0
        with wait_notices(emit, req.id, every_s, deadline_s, self._timer):
            try:
                reply = call()
            except LLMError as err:
                message = f"{type(err).__name__}: {err}"
                self._count("llm_errors")
                self._error(emit, req, "llm", message)
                self.breaker.failed(emit, message)
                return None, message
        self.breaker.succeeded(emit)
        return reply, ""

    def _question(self, req: ChaperoneRequest, emit: Emitter | None) -> tuple[dict[str, Any], str]:
        question = (req.question or req.topic).strip()
        if not question:
            raise _Failed("question request without a question or topic")
        llm_error = ""
        trusted = self._trusts_llm(question)
        if not trusted:
            self._count("distrusted")
        k, min_score = asked_as(req.route, self.answer_k, self.min_score)
        if self.llm is not None and trusted and not (req.route or req.scope):
            llm = self.llm
            reply, llm_error = self._ask_llm(req, emit, lambda: llm.ask(question, context=req.text))
            if reply is not None:
                source = Source("llm", self._model_ref())
                return {
                    "ok": True,
                    "content": reply.text,
                    "sources": (source,),
                    "passages": (Passage(text=reply.text, source=source),),
                    "grounded": False,
                    "tokens": reply.total_tokens,
                }, ""
        if self.answerer is None:
            raise _Failed(
                f"LLM failed and no offline answerer is configured ({llm_error})"
                if llm_error
                else "no LLM and no offline answerer configured"
            )
        answer = self.answerer.answer(question, k=k, min_score=min_score, scope=req.scope)
        self._count("offline_answers")
        fallback = "offline" if llm_error else ""
        if fallback:
            self._count("fallbacks")
        if not answer.text:
            note = f"; the LLM failed too ({llm_error})" if llm_error else ""
            raise _Failed(f"no passage of the local corpus scored above {min_score:g}{note}")
        spans = getattr(answer, "spans", ()) or ((-1, -1),) * len(answer.passages)
        headings = getattr(answer, "headings", ()) or ("",) * len(answer.passages)
        passages = tuple(
            Passage(
                text=text, source=source, start=start, end=end, score=float(score), heading=head
            )
            for text, source, score, (start, end), head in zip(
                answer.passages, answer.sources, answer.scores, spans, headings, strict=True
            )
        )
        content = answer.text
        if not trusted:
            # Standing in for a distrusted model: the passages with their context (the
            # changelog entry's version line, say), as meta-memory's corroboration reads them.
            passages = self.with_context(passages)
            content = "\n\n".join(p.text for p in passages)
        if self.source_weight is not None and len(passages) > 1:
            weigh = self.source_weight
            passages = tuple(
                sorted(passages, key=lambda p: -p.score * weigh(question, p.source.id))
            )
        return {
            "ok": True,
            "content": content,
            "sources": tuple(dict.fromkeys(answer.sources)),  # unique, first seen first
            "passages": passages,
            "grounded": True,
            "margin": getattr(answer, "margin", None),
        }, fallback

    # ------------------------------------------------------------------ summarize

    def _summarize(self, req: ChaperoneRequest, emit: Emitter | None) -> tuple[dict[str, Any], str]:
        origin: Content | None = None
        if req.text.strip():
            text = req.text
        elif req.path:
            origin = read_content(self.fetcher, req.path)
            text = origin.text
        elif req.url:
            self._calls.n += 1
            origin = fetch_content(self.fetcher, self.answerer, req.url)
            text = origin.text
        else:
            raise _Failed("summarize needs text, a path or a url")
        extra: dict[str, Any] = {}
        origin_sources: tuple[Source, ...] = ()
        if origin is not None:
            origin_sources = (origin.source,)
            extra = {"saved_path": origin.saved_path, "mime": origin.mime, "bytes": origin.bytes}
        llm_error = ""
        if self.llm is not None:
            llm = self.llm
            reply, llm_error = self._ask_llm(req, emit, lambda: llm.summarize(text))
            if reply is not None:
                source = Source("summary", self._model_ref())
                return {
                    "ok": True,
                    "content": reply.text,
                    "sources": (source, *origin_sources),
                    "passages": (Passage(text=reply.text, source=source),),
                    "grounded": False,
                    "tokens": reply.total_tokens,
                    **extra,
                }, ""
        if self.answerer is not None:
            summary = self.answerer.summarize(text, self.summary_sentences)
        else:
            summary = summarize_extractive(text, self.summary_sentences)
        fallback = "offline" if llm_error else ""
        if fallback:
            self._count("fallbacks")
        if not summary:
            raise _Failed("nothing to summarize (no sentences in the text)", **extra)
        source = Source("summary", OFFLINE_SUMMARY_REF)
        return {
            "ok": True,
            "content": summary,
            "sources": (source, *origin_sources),
            "passages": (Passage(text=summary, source=source),),
            "grounded": origin is not None,
            **extra,
        }, fallback
