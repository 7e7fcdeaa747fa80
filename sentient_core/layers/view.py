"""Memory's layers at a glance: records, promotions, demotions and retirements per layer.

:func:`layer_counts` reads one snapshot of the store (``sentient layers``, the
status API and the panel show it). What each layer counts:

``episodic``
    Traces; *live* are the ones recall may return, *retirements* the retired ones.
``semantic``
    Notes (:mod:`.notes`); every note was promoted once through the condensation
    gate, so *promotions* are all notes; *retirements* are retired notes.
``procedural``
    Recipes (:mod:`sentient_core.recipes`) by state; *promotions* are births (always
    confirmed, of a judged success) and drafts re-verified, *demotions* moves to advisory
    or back to draft (a rewrite), *retirements* retired recipes.
``guards``
    The scorer's vetoes (:mod:`sentient_core.metamemory.factors`): traces they keep
    out of recall (``status``: retired; ``invalid``: no text).
``meta``
    Wisdom records by state; *promotions* and *demotions* are transitions in their
    histories (to provisional or trusted; to demoted).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import msgspec

from sentient_core.layers.notes import NOTES
from sentient_core.store import traces as stored

if TYPE_CHECKING:
    from sentient_core.store.env import Store

__all__ = ["LayerRow", "layer_counts", "layer_summary"]


class LayerRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One layer's counts (see the module docstring)."""

    layer: str
    records: int
    live: int
    promotions: int = 0
    demotions: int = 0
    retirements: int = 0
    states: dict[str, int] = msgspec.field(default_factory=dict)


def layer_counts(store: Store) -> tuple[LayerRow, ...]:
    """Every layer's :class:`LayerRow`, bottom up, from one read snapshot."""
    from sentient_core.metamemory.wisdom import WISDOM
    from sentient_core.recipes.records import records as recipe_records

    with store.read() as txn:
        total = retired = empty = 0
        for rec in stored.iter_range(txn):
            total += 1
            retired += rec.retired
            empty += not rec.text
        notes = list(NOTES.iter(txn)) if store.has_db("layers") else []
        wisdom = list(WISDOM.iter(txn))
        recipes = list(recipe_records(txn))
    note_states = Counter(n.state for n in notes)
    wisdom_states = Counter(w.state for w in wisdom)
    steps = Counter(step.target for w in wisdom for step in w.history)
    rows = [
        LayerRow(layer="episodic", records=total, live=total - retired, retirements=retired),
        LayerRow(
            layer="semantic",
            records=len(notes),
            live=note_states.get("semantic", 0),
            promotions=len(notes),
            retirements=note_states.get("retired", 0),
            states=dict(sorted(note_states.items())),
        ),
    ]
    recipe_states = Counter(r.state for r in recipes)
    moves = Counter((t.source, t.target) for r in recipes for t in r.history)
    rows.append(
        LayerRow(
            layer="procedural",
            records=len(recipes),
            live=recipe_states.get("confirmed", 0) + recipe_states.get("draft", 0),
            # Born confirmed of a judged success, or a draft re-verified on reuse.
            promotions=moves.get(("none", "confirmed"), 0) + moves.get(("draft", "confirmed"), 0),
            demotions=sum(n for (_, t), n in moves.items() if t in ("advisory", "draft")),
            retirements=recipe_states.get("retired", 0),
            states=dict(sorted(recipe_states.items())),
        )
    )
    rows += [
        LayerRow(
            layer="guards",
            records=retired + empty,
            live=retired + empty,
            states={"status": retired, "invalid": empty},
        ),
        LayerRow(
            layer="meta",
            records=len(wisdom),
            live=len(wisdom) - wisdom_states.get("demoted", 0),
            promotions=steps.get("provisional", 0) + steps.get("trusted", 0),
            demotions=steps.get("demoted", 0),
            states=dict(sorted(wisdom_states.items())),
        ),
    ]
    return tuple(rows)


def layer_summary(store: Store, live_traces: int) -> dict[str, int]:
    """Live records per layer without reading every trace (the status API polls it):
    ``live_traces`` comes from memory's mirror; notes, recipes and wisdom are few and read here."""
    from sentient_core.metamemory.wisdom import WISDOM
    from sentient_core.recipes.records import records as recipe_records

    with store.read() as txn:
        notes = Counter(n.state for n in NOTES.iter(txn)) if store.has_db("layers") else Counter()
        wisdom = Counter(w.state for w in WISDOM.iter(txn))
        recipes = Counter(r.state for r in recipe_records(txn))
    return {
        "episodic": live_traces,
        "semantic": notes.get("semantic", 0),
        "semantic retired": notes.get("retired", 0),
        "procedural": recipes.get("confirmed", 0) + recipes.get("draft", 0),
        "procedural advisory": recipes.get("advisory", 0),
        "meta (wisdom)": sum(v for k, v in wisdom.items() if k != "demoted"),
        "meta demoted": wisdom.get("demoted", 0),
    }
