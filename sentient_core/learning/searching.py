"""The search step: a question the usual route did not answer goes looking for a new source.

When the judge did not call a question answered (a ``failure`` or ``could_not_verify``;
"already known" is settled) and it is

* a user's question whose routes are exhausted (the task-commitment drive queued no
  further route: with ``commit_routes = 0``, the default, right after its first
  answer), or
* a ``memory_miss`` gap (a reflection's follow-up, or a recall that found nothing),

:meth:`SearchStep.consider` queues it, once per question and session. The learner then
calls :meth:`SearchStep.requests` in the same iteration, which for each queued question

1. asks the budget for one tool call (a search counts as a tool call, whichever
   provider: it is an action the learner takes on its own), and asks the chaperone's
   search provider (:mod:`sentient_core.search`) for candidates;
2. puts **every** candidate through the chaperone's safety filter before anything is
   fetched: a URL through the URL checks (scheme, user info, IP literal, domain
   allow-list, port, parsers) and the address check (every address it resolves to
   public), a local path through the local-path check (opened confined inside an
   allowed directory); a candidate the loop already answers from (a file the offline
   answerer indexes, a URL fetched this session) is filtered as ``known``. Each
   filtered candidate is a ``refusal`` event (type ``search``) and is counted by check;
   the safety filter's own counters move as for any refusal;
3. emits one ``search`` event (query, provider, results, allowed, filtered by check,
   fetching) and returns, for the best ``fetch`` allowed candidates, a
   ``fetch_content`` (URL) or ``read_local`` (path) request carrying the question and
   ``route = "search"``.

The learner runs those like any initiative (budget, chaperone — the fetcher checks
every redirect hop again, so a candidate that redirects off the allow-list is refused
there —, integrate, judge). A found source is read to answer its question: its text
is cut into passages (:func:`~sentient_core.learning.passages.found_passages`) and only
those relevant to the question are stored (:func:`~sentient_core.learning.passages.asked`), so the judge's relevance, novelty and substance gates
decide whether the question was answered. A success is recorded in the question book
(answered by the new trace) with a ``question`` event naming the source.

Why after the usual route and not first: the local corpus is free and answers most
questions; a search costs a tool call and the page it finds costs another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentient_core.events import BudgetEvent, ErrorEvent, QuestionEvent, RefusalEvent, SearchEvent
from sentient_core.learning.passages import SEARCH_ROUTE
from sentient_core.learning.safety import ConfinementFailed, Refusal
from sentient_core.search.types import SearchError, SearchHit
from sentient_core.vocab import ChaperoneRequest, Source

if TYPE_CHECKING:
    from sentient_core.autonomy.budget import Budget
    from sentient_core.events import Emitter
    from sentient_core.learning.chaperone import Chaperone
    from sentient_core.learning.curiosity import Curiosity
    from sentient_core.learning.integration import Integrated
    from sentient_core.search.types import SearchProvider
    from sentient_core.vocab import SessionStats, Verdict

__all__ = ["SEARCH_ROUTE", "SearchStep"]

_UNANSWERED = ("failure", "could_not_verify")
_KEYS = ("searches", "results", "allowed", "filtered", "fetched", "answered", "errors")


def _bump(stats: SessionStats, key: str, n: int = 1) -> None:
    counts = stats.search or dict.fromkeys(_KEYS, 0)
    counts[key] = counts.get(key, 0) + n
    stats.search = counts


class SearchStep:
    """One learner's search step (see the module docstring).

    Parameters
    ----------
    chaperone : Chaperone
        Its ``searcher`` (the provider; None: the step does nothing), its safety filter
        and its offline answerer (what the loop already answers from).
    budget : Budget
    fetch : int
        Allowed candidates read per search, best first.
    """

    def __init__(self, chaperone: Chaperone, budget: Budget, *, fetch: int = 2) -> None:
        self.chaperone = chaperone
        self.budget = budget
        self.fetch = fetch
        self._queued: list[ChaperoneRequest] = []
        self._searched: set[str] = set()
        self._fetched: set[str] = set()
        # Reads handed to the learner and not judged yet: id -> (budget tick, request).
        self._issued: dict[str, tuple[int, ChaperoneRequest]] = {}

    @property
    def provider(self) -> SearchProvider | None:
        return getattr(self.chaperone, "searcher", None)

    def consider(
        self,
        req: ChaperoneRequest,
        verdict: Verdict,
        done: Integrated,
        routed: ChaperoneRequest | None,
        curiosity: Curiosity,
        stats: SessionStats,
        emit: Emitter,
    ) -> bool:
        """After the verdict on ``req``: record a found source's answer, or queue a
        search for a question the usual route did not answer (``routed``: the next route
        the task-commitment drive queued for it, if any). True when a search was queued
        for it (the question is not at its end yet)."""
        if self.provider is None:
            return False
        if req.route == SEARCH_ROUTE:
            self._issued.pop(req.id, None)
            self._found(req, verdict, done, curiosity, stats, emit)
            return False
        if req.type != "question" or routed is not None or verdict.outcome not in _UNANSWERED:
            return False
        rec = curiosity.book.get(req.question)
        user = rec is not None and rec.origin == "user"
        key = " ".join(req.question.casefold().split())
        if not key or key in self._searched or not (user or req.gap_type == "memory_miss"):
            return False
        self._searched.add(key)
        self._queued.append(req)
        return True

    def _found(self, req, verdict, done, curiosity, stats, emit) -> None:
        _bump(stats, "fetched")
        if verdict.outcome != "success" or not req.question:
            return
        _bump(stats, "answered")
        source = req.url or req.path
        why = f"answered from {source}, found by search"
        curiosity.record_outcome(req.question, "success", answered_by=done.first_new, reason=why)
        rec = curiosity.book.get(req.question)
        emit.emit(
            QuestionEvent,
            question=req.question,
            status="answered",
            reason=why,
            trace_id=done.first_new,
            relevance=done.relevance or 0.0,
            origin=rec.origin if rec is not None else "user",
        )

    def requests(self, stats: SessionStats, emit: Emitter) -> list[ChaperoneRequest]:
        """Run the queued searches; the requests reading their best allowed candidates.

        A search waits for an iteration with room for it and one read (the per-tick
        initiative cap); reads handed out in an earlier iteration and never judged (the
        budget ended that iteration first) are handed out again."""
        tick = self.budget.ticks
        out = [r for t, r in self._issued.values() if t < tick]
        self._issued.update({r.id: (tick, r) for r in out})
        while self._queued:
            left = self.budget.remaining()["per_tick_initiatives"]
            if left is not None and left < 2:
                break  # no room for a search and a read in this iteration: a later one
            req = self._queued.pop(0)
            decision = self.budget.check_initiative(0, 1)
            if not decision.allowed:
                stats.budget_stops += 1
                emit.emit(BudgetEvent, allowed=False, cap=decision.cap, reason=decision.reason)
                self._queued.clear()
                break
            reads = self._search(req, stats, emit)
            self._issued.update({r.id: (tick, r) for r in reads})
            out.extend(reads)
        return out

    def _search(
        self, req: ChaperoneRequest, stats: SessionStats, emit: Emitter
    ) -> list[ChaperoneRequest]:
        provider = self.provider
        assert provider is not None
        sid = f"{req.id}.search"
        query = req.question.strip()
        _bump(stats, "searches")
        try:
            found = provider.search(query)
        except SearchError as err:
            self.budget.commit(0, 1, "failed")
            _bump(stats, "errors")
            message = f"{type(err).__name__}: {err}"
            emit.emit(ErrorEvent, where="search", error=message, id=sid, type="search")
            emit.emit(
                SearchEvent,
                id=sid,
                question=req.question,
                query=query,
                provider=provider.name,
                error=message[:500],
            )
            return []
        self.budget.commit(0, 1, "done")
        allowed: list[SearchHit] = []
        filtered: dict[str, int] = {}
        known = self._known()
        for hit in found.hits:
            check, reason = self._vet(hit, known)
            if not check:
                allowed.append(hit)
                continue
            filtered[check] = filtered.get(check, 0) + 1
            target = {"path": hit.url} if hit.local else {"url": hit.url}
            emit.emit(RefusalEvent, id=sid, type="search", check=check, reason=reason, **target)
        chosen = allowed[: self.fetch]
        _bump(stats, "results", len(found.hits))
        _bump(stats, "allowed", len(allowed))
        _bump(stats, "filtered", sum(filtered.values()))
        emit.emit(
            SearchEvent,
            id=sid,
            question=req.question,
            query=query,
            provider=provider.name,
            results=len(found.hits),
            dropped=found.dropped,
            allowed=len(allowed),
            filtered=filtered,
            fetching=len(chosen),
        )
        out = []
        for n, hit in enumerate(chosen, 1):
            self._fetched.add(hit.url)
            out.append(
                ChaperoneRequest(
                    id=f"{sid}{n}",
                    type="read_local" if hit.local else "fetch_content",
                    topic=req.topic,
                    question=req.question,
                    url="" if hit.local else hit.url,
                    path=hit.url if hit.local else "",
                    gap_type=req.gap_type,
                    session=req.session,
                    route=SEARCH_ROUTE,
                )
            )
        return out

    def _known(self) -> frozenset[str]:
        """Source ids the loop answers from already (the offline answerer's files)."""
        answerer = self.chaperone.answerer
        return frozenset(s.id for s in answerer.sources) if answerer is not None else frozenset()

    def _vet(self, hit: SearchHit, known: frozenset[str]) -> tuple[str, str]:
        """``(check, reason)`` that filters ``hit`` out, or ``("", "")``: it may be read."""
        safety = self.chaperone.safety
        try:
            if hit.local:
                with safety.open_local(hit.url) as handle:
                    if Source("local", handle.path).id in known:
                        return "known", "the offline answerer already reads this file"
                return "", ""
            if hit.url in self._fetched:
                return "known", "already fetched in this session"
            target = safety.check_url(hit.url)
            safety.check_host(target.host)
        except Refusal as refusal:
            return str(refusal.check), str(refusal.reason)
        except OSError as exc:
            return "unresolvable", f"the host does not resolve: {exc}"
        except ConfinementFailed as exc:  # inside an allowed dir, but missing or unreadable
            return "unreadable", exc.reason
        return "", ""
