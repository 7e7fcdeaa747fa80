"""Task commitment: a user's question about to end unanswered is pushed onto its next route.

When the judge's verdict on a *user's* question is not a success (nor "already
known": memory holds the answer), the loop does not give up while routes remain:
:class:`TaskCommitment` picks the next one from a small, explicit decision tree,
keyed by the gate that stopped the question (:attr:`~sentient_core.vocab.Verdict.gate`),
and hands the learner a new request for the same question in the same iteration
(the budget checks it like any initiative). A route changes *how the source is
asked*, never what is judged: the answer is judged against the user's question.

=============  =====================================================================
gate           routes, in order
=============  =====================================================================
source         ``relax`` (half the minimum score), then ``wider``
relevance      ``wider`` (twice the passages), then ``deeper`` (four times)
decisive       ``wider``: the runner-up passages are given too, so the margin is
               measured against what comes after them; also an "already known"
               (``novelty``) verdict that is not decisive
               (:attr:`~sentient_core.vocab.Verdict.decisive`): memory holds the
               source's best passage, but it ranked one it did not give as close
substance      ``wider``
grounding      ``corpus`` (the offline answerer instead of the model)
model          ``corpus``
=============  =====================================================================

Each route is tried once per question, at most ``max_routes`` per question in a
session. Every decision is a :class:`~sentient_core.events.CommitmentEvent`: the
route taken and why, or that it gave up and why (routes exhausted, or none for
the gate) — the user sees why a question ended unanswered.
"""

from __future__ import annotations

import msgspec

from sentient_core.events import CommitmentEvent, Emitter
from sentient_core.learning.questions import QuestionBook
from sentient_core.vocab import ChaperoneRequest, Verdict

__all__ = ["ROUTES", "TaskCommitment", "asked_as"]

ROUTES: dict[str, tuple[str, ...]] = {
    "source": ("relax", "wider"),
    "relevance": ("wider", "deeper"),
    "decisive": ("wider",),
    "substance": ("wider",),
    "grounding": ("corpus",),
    "model": ("corpus",),
}
"""The decision tree: the gate that stopped a user's question → the routes to try."""

_SETTLED = ("learned", "novelty")  # answered, or memory already holds the answer


def asked_as(route: str, k: int, min_score: float) -> tuple[int, float]:
    """How many passages the corpus gives, above what score, on ``route`` (a
    :attr:`~sentient_core.vocab.ChaperoneRequest.route`; "" as usual). A route always
    asks the corpus: a model takes no k, so it is not asked again."""
    scale = {"wider": 2, "deeper": 4, "relax": 2}.get(route, 1)
    return k * scale, min_score / 2.0 if route == "relax" else min_score


class TaskCommitment:
    """The task-commitment drive of one learner (see the module docstring).

    Parameters
    ----------
    max_routes : int
        Routes tried per question in a session (0: the drive is off).
    """

    def __init__(self, max_routes: int = 2) -> None:
        self.max_routes = max_routes
        self._tried: dict[str, list[str]] = {}
        self._next: list[ChaperoneRequest] = []
        self.routes_taken = 0
        self.gave_up = 0
        self.why: dict[str, str] = {}  # why it gave up, by question key (the closing says it)

    def consider(
        self, req: ChaperoneRequest, verdict: Verdict, book: QuestionBook, emit: Emitter
    ) -> ChaperoneRequest | None:
        """After the verdict on ``req``: the request of the next route for a user's
        question (``book`` says whose it is) that is about to end unanswered (also
        queued for :meth:`routes`), or None."""
        gate = verdict.gate
        if gate == "novelty" and not verdict.decisive:
            # "Already known", but the source ranked a passage it did not give within the
            # decisive margin: memory's best may not be the answer; ask for the runners-up.
            gate = "decisive"
        if not self.max_routes or req.type != "question" or gate in _SETTLED:
            return None
        rec = book.get(req.question)
        if rec is None or rec.origin != "user":
            return None
        key = " ".join(req.question.casefold().split())
        tried = self._tried.setdefault(key, [])
        left = [r for r in ROUTES.get(gate, ()) if r not in tried]
        if not left or len(tried) >= self.max_routes:
            self.gave_up += 1
            why = (
                f"routes exhausted ({', '.join(tried)})"
                if tried
                else f"no route for the {gate} gate"
            )
            self.why[key] = why
            emit.emit(CommitmentEvent, question=req.question, route="", gate=gate, reason=why)
            return None
        route = left[0]
        tried.append(route)
        self.routes_taken += 1
        nxt = msgspec.structs.replace(req, id=f"{req.id}.{route}", route=route)
        emit.emit(
            CommitmentEvent,
            question=req.question,
            route=route,
            gate=gate,
            reason=f"{verdict.outcome} at the {verdict.gate} gate"
            + ("" if gate == verdict.gate else " (not decisive)")
            + f"; trying {route}",
        )
        self._next.append(nxt)
        return nxt

    def forget(self, question: str) -> None:
        """A re-opened question may take every route again."""
        key = " ".join(question.casefold().split())
        self._tried.pop(key, None)
        self.why.pop(key, None)

    def routes(self) -> list[ChaperoneRequest]:
        """The route requests queued since the last call (the learner runs them next)."""
        out, self._next = self._next, []
        return out
