"""The learner's use of recipes: tried first on a question, judged on every reuse.

Before a request asking a question goes out (the user's question or one of the
loop's own gaps), :meth:`RecipeUse.first` looks up the recipe standing for the
question's (kind, domain) — :func:`~sentient_core.recipes.kind_of` and the
domain meta-memory uses (:func:`~sentient_core.metamemory.domain.domain_of` over
the chaperone's term statistics) — and, when it is confirmed or a draft, asks on
its route: a ``recipe`` event names the recipe and the request. After the judge,
:meth:`RecipeUse.judged` hands the verdict on a tried request to the recipe
(verified, failed → advisory, or inconclusive) and turns a success on any other
request asking a question into a recipe (:meth:`~sentient_core.recipes.RecipeBook.born`).
Nothing here reads memory: a retrieval can neither create nor credit a recipe.

A request the task-commitment drive re-routes (``route`` set) is not re-routed
again; its judged success is where a recipe with that route is born.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import msgspec

from sentient_core.autonomy.funnel import count_promotion
from sentient_core.metamemory.domain import domain_of
from sentient_core.recipes import RecipeBook, kind_of
from sentient_core.recipes.book import FAILED

if TYPE_CHECKING:
    from sentient_core.events import Emitter
    from sentient_core.relevance import TermStats
    from sentient_core.store.env import Store
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, SessionStats, Verdict

__all__ = ["RecipeUse"]

_SCOPED = ("local:", "corpus:")
"""Sources the offline answerer indexes: a recipe's answer can be limited to one."""
_TRIED_STATES = ("confirmed", "draft")
"""An advisory recipe is advice (shown, repaired), not tried first."""


class RecipeUse:
    """One learner's recipe hook (see the module docstring); :meth:`off` does nothing.

    Parameters
    ----------
    book : RecipeBook, optional
        None: recipes are off.
    stats : callable, optional
        The chaperone's term statistics (:meth:`~sentient_core.learning.chaperone.Chaperone.term_stats`),
        for the domain of a question.
    """

    def __init__(
        self,
        book: RecipeBook | None,
        stats: Callable[[], TermStats | None] | None = None,
        *,
        scoped: bool = True,
    ) -> None:
        self.book = book
        self._stats = stats
        self.scoped = scoped
        self._tried: dict[str, int] = {}  # request id -> the recipe tried first on it

    @classmethod
    def off(cls) -> RecipeUse:
        """A hook that never tries, creates or credits a recipe."""
        return cls(None)

    @classmethod
    def on(cls, store: Store, stats: Callable[[], TermStats | None] | None = None) -> RecipeUse:
        """A hook over the recipe book of ``store``."""
        return cls(RecipeBook(store), stats)

    def key(self, question: str) -> tuple[str, str]:
        """(kind, domain) of ``question``."""
        stats = self._stats() if self._stats is not None else None
        return kind_of(question), domain_of(question, None, stats)

    def first(self, requests: Iterable[ChaperoneRequest], emit: Emitter) -> list[ChaperoneRequest]:
        """``requests``, each asked the way the recipe standing for its question says (its
        route) when there is one to try (a ``recipe`` event names it), else unchanged."""
        return [self._first(req, emit) for req in requests]

    def _first(self, req: ChaperoneRequest, emit: Emitter) -> ChaperoneRequest:
        if self.book is None or req.type != "question" or req.route or not req.question.strip():
            return req
        kind, domain = self.key(req.question)
        if not kind:
            return req
        rec = self.book.find(kind, domain)
        if rec is None or rec.state not in _TRIED_STATES or rec.request_type != req.type:
            return req
        self._tried[req.id] = rec.id
        self.book.tried(rec.id, req.id, emit)
        # Asked the recipe's way: on its route, from its source when that is a corpus file
        # the offline answerer holds (a model's or a web page's answer cannot be scoped).
        scope = rec.source if self.scoped and rec.source.startswith(_SCOPED) else ""
        return msgspec.structs.replace(req, route=rec.route, scope=scope)

    def judged(
        self,
        req: ChaperoneRequest,
        response: ChaperoneResponse,
        verdict: Verdict,
        emit: Emitter,
        stats: SessionStats | None = None,
    ) -> None:
        """The judge's verdict on ``req``: to the recipe tried on it, else — a success on
        a request asking a question — a recipe's birth. A reuse's verdict is counted in
        ``stats.promotion["recipe verification"]`` (passed: verified; vetoed: failed, the
        recipe turned advisory; a reuse judged neither is not counted)."""
        if self.book is None:
            return
        tried = self._tried.pop(req.id, None)
        if tried is not None and stats is not None and verdict.outcome != "not_applicable":
            failed = verdict.outcome in FAILED
            count_promotion(stats, "recipe verification", passed=not failed, vetoed=failed)
        if tried is not None:
            self.book.judged(tried, req.id, verdict.outcome, verdict.reason[:300], emit)
            return
        if verdict.outcome != "success" or not req.question.strip() or not response.sources:
            return
        kind, domain = self.key(req.question)
        if not kind:
            return
        passages = response.passages
        source = (passages[0].source if passages else response.sources[0]).id
        self.book.born(
            kind=kind,
            domain=domain,
            request_type=req.type,
            source=source,
            route=req.route,
            query_shape=kind_of(req.question),
            request_id=req.id,
            emit=emit,
        )
