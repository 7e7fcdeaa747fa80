"""Recipe records in the ``recipes`` sub-database, and the state machine they follow.

States and the only legal transitions (:data:`TRANSITIONS`)::

    (judged success) ──born──▶ confirmed ──failed reuse──▶ advisory ──superseded──▶ retired
                                   ▲                          │  ▲                    ▲
                                   │ verified reuse  rewritten│  │failed reuse        │
                                   └──────────────── draft ◀──┘  │                    │
                                                       └─────────┴──resisted repair───┘

* A recipe is **born confirmed**, and only from a verdict ``success`` of the judge
  on a request asking a question (never from a retrieval: nothing that reads
  memory creates or credits one). There is no other birth, so no recipe is born
  a draft.
* ``draft`` is where a *rewritten* recipe re-enters (skill repair, issue 23 item
  4): the old procedure goes to ``revisions``, and the draft must earn trust
  again through a judged reuse: ``draft → confirmed`` on a verified reuse,
  ``draft → advisory`` on a failed one.
* ``confirmed → advisory`` on a failed verification of a reuse (the judge's
  ``failure`` or ``could_not_verify``). An advisory recipe is no longer tried
  first; it is kept (shown, and the repair driver's input).
* ``advisory → retired`` when a new judged success on the same (kind, domain)
  supersedes it (the new recipe is born confirmed), or when it resists repair;
  ``draft → retired`` likewise. ``retired`` is final; nothing is deleted.

Every transition carries its reason and evidence (request ids) in ``history``.

Storage: ``b"rcp/" + u64(id)`` (:data:`RECIPES`) and an index from (kind,
domain) to the recipe currently standing for it under ``b"key/" +
digest(kind, domain)`` (an 8-byte id value).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from sentient_core.store.keyspace import digest_key
from sentient_core.store.records import NonNegInt, RecordCodec, UnixTime, key_u64, u64_key
from sentient_core.store.table import IdTable, register

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "MAX_EVIDENCE",
    "MAX_HISTORY",
    "MAX_REVISIONS",
    "RECIPES",
    "RECIPE_STATES",
    "ROUTES",
    "TRANSITIONS",
    "RecipeRecord",
    "RecipeRevision",
    "RecipeState",
    "RecipeTransition",
    "find",
    "layer_counts",
    "put",
    "records",
]

RecipeState = Literal["draft", "confirmed", "advisory", "retired"]
RECIPE_STATES: tuple[str, ...] = ("draft", "confirmed", "advisory", "retired")
ROUTES: tuple[str, ...] = ("", "wider", "deeper", "relax", "corpus")
"""The routes a request may take (:attr:`~sentient_core.vocab.ChaperoneRequest.route`)."""
MAX_HISTORY = 32
MAX_REVISIONS = 16
MAX_EVIDENCE = 8

Text = Annotated[str, msgspec.Meta(max_length=2000)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Evidence = Annotated[
    tuple[Annotated[str, msgspec.Meta(max_length=200)], ...], msgspec.Meta(max_length=MAX_EVIDENCE)
]
Route = Literal["", "wider", "deeper", "relax", "corpus"]
RequestType = Literal["question", "fetch_content", "read_local", "summarize"]

TRANSITIONS: dict[tuple[str, str], str] = {
    ("confirmed", "advisory"): "failed verification on reuse",
    ("draft", "confirmed"): "verified reuse after a rewrite",
    ("draft", "advisory"): "failed verification on reuse",
    ("advisory", "draft"): "rewritten (skill repair)",
    ("advisory", "retired"): "superseded by a verified recipe, or resisted repair",
    ("draft", "retired"): "resisted repair",
}
"""Every legal transition and what drives it (birth is not one: a recipe is born confirmed)."""


class RecipeTransition(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One state change (or the birth: ``source == "none"``), with why and on what evidence."""

    source: Literal["none", "draft", "confirmed", "advisory", "retired"]
    target: RecipeState
    reason: Text
    evidence: Evidence = ()
    time: UnixTime


class RecipeRevision(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A procedure the recipe had before a rewrite, and why it was rewritten."""

    request_type: RequestType
    source: Annotated[str, msgspec.Meta(max_length=1000)]
    route: Route
    query_shape: Annotated[str, msgspec.Meta(max_length=200)]
    reason: Text
    time: UnixTime


class RecipeRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How a kind of question in a domain was answered, and how its reuses were judged.

    Attributes
    ----------
    v : int
        Record schema version (1).
    id : int
    kind : str
        The question's template (:func:`~sentient_core.recipes.kinds.kind_of`).
    domain : str
        Its domain (:func:`~sentient_core.metamemory.domain.domain_of`).
    state : {"draft", "confirmed", "advisory", "retired"}
    request_type : str
        The :attr:`~sentient_core.vocab.ChaperoneRequest.type` that answered.
    source : str
        The source id of the passage the judge verified (``local:/…/curl.changelog.txt``).
    route : str
        The :attr:`~sentient_core.vocab.ChaperoneRequest.route` it was asked on.
    query_shape : str
        The template of the query as it was sent (today the question as asked, so
        the kind; a rewrite may change it).
    born_of : str
        The request whose judged success it was born of.
    support : int
        Reuses the judge verified (``success``).
    failures : int
        Reuses that failed verification (``failure``, ``could_not_verify``).
    inconclusive : int
        Reuses judged neither (``not_applicable``: memory already held the answer).
    trials : int
        Times it was tried first (a use count, never a credit).
    history : tuple of RecipeTransition
        Birth and transitions (the newest :data:`MAX_HISTORY`).
    revisions : tuple of RecipeRevision
        Procedures before each rewrite (the newest :data:`MAX_REVISIONS`).
    created, updated : float
    """

    v: int = 1
    id: NonNegInt
    kind: Name
    domain: Name
    state: RecipeState = "confirmed"
    request_type: RequestType = "question"
    source: Annotated[str, msgspec.Meta(max_length=1000)] = ""
    route: Route = ""
    query_shape: Annotated[str, msgspec.Meta(max_length=200)] = ""
    born_of: Annotated[str, msgspec.Meta(max_length=200)] = ""
    support: NonNegInt = 0
    failures: NonNegInt = 0
    inconclusive: NonNegInt = 0
    trials: NonNegInt = 0
    history: Annotated[tuple[RecipeTransition, ...], msgspec.Meta(max_length=MAX_HISTORY)] = ()
    revisions: Annotated[tuple[RecipeRevision, ...], msgspec.Meta(max_length=MAX_REVISIONS)] = ()
    created: UnixTime
    updated: UnixTime


RECIPES: IdTable[RecipeRecord] = IdTable(
    "recipes", b"rcp/", RecordCodec(RecipeRecord, 1, "recipe record"), field="id", label="recipe"
)
"""Every recipe, by id (ids count up from 0). Write through :func:`put`, which keeps the
index by (kind, domain) that :func:`find` reads."""
_INDEX = b"key/"


def _consistent(txn: Txn) -> Iterator[str]:
    """A recipe's counts agree with its history, and the index names live recipes."""
    standing: Counter[tuple[str, str]] = Counter()
    for r in RECIPES.iter(txn):
        if not r.history or (r.history[0].source != "none" and len(r.history) < MAX_HISTORY):
            yield f"recipe {r.id} has no birth in its history"
        elif r.history[-1].target != r.state:
            yield f"recipe {r.id} is {r.state} but its last transition went to {r.history[-1].target}"
        if r.state != "retired":
            standing[(r.kind, r.domain)] += 1
    for (kind, domain), n in standing.items():
        if n > 1:
            yield f"{n} recipes stand for ({kind!r}, {domain!r}); at most one may"


register(RECIPES, check=_consistent)


def put(txn: Txn, record: RecipeRecord) -> None:
    """Write (or replace) record ``record.id``; a recipe that is not retired is indexed
    as the one standing for its (kind, domain)."""
    RECIPES.put(txn, record)
    if record.state != "retired":
        txn.put(RECIPES.db, digest_key(_INDEX, record.kind, record.domain), u64_key(record.id))


def records(txn: Txn) -> list[RecipeRecord]:
    """Every recipe, by id; none in a store from before recipes (opened read-only, it has
    no ``recipes`` sub-database: see :data:`~sentient_core.store.env.ADDED_LATER`)."""
    return list(RECIPES.iter(txn)) if txn.store.has_db(RECIPES.db) else []


def find(txn: Txn, kind: str, domain: str) -> RecipeRecord | None:
    """The recipe standing for (kind, domain) — not retired — or None."""
    if not txn.store.has_db(RECIPES.db):
        return None
    raw = txn.get(RECIPES.db, digest_key(_INDEX, kind, domain))
    if raw is None:
        return None
    rec = RECIPES.get(txn, key_u64(bytes(raw)))
    if rec is None or (rec.kind, rec.domain) != (kind, domain) or rec.state == "retired":
        return None
    return rec


def layer_counts(txn: Txn) -> dict[str, int]:
    """Recipes per state (every state present, 0 when none), for the ``layers`` view."""
    out = dict.fromkeys(RECIPE_STATES, 0)
    for r in records(txn):
        out[r.state] += 1
    return out
