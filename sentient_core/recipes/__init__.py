"""Recipes: how a kind of question in a domain was answered, crystallised from verified
successes (SPEC §6, issue 23 item 3).

A recipe names the request type, the source, the route and the query shape that
answered a question of one kind (:func:`kind_of`) in one domain, and is verified
by the judge's own verdict every time it is reused. It is born confirmed only
from a judged success; reading or retrieving never credits it; a failed
verification on reuse makes it advisory (:mod:`.records` has the state machine,
:mod:`.book` the writes). The learner tries the matching recipe first
(:mod:`sentient_core.learning.recipe_use`).
"""

from __future__ import annotations

from sentient_core.recipes.book import FAILED, RecipeBook
from sentient_core.recipes.kinds import kind_of
from sentient_core.recipes.records import (
    RECIPE_STATES,
    RECIPES,
    TRANSITIONS,
    RecipeRecord,
    RecipeRevision,
    RecipeTransition,
    find,
    layer_counts,
    records,
)

__all__ = [
    "FAILED",
    "RECIPES",
    "RECIPE_STATES",
    "TRANSITIONS",
    "RecipeBook",
    "RecipeRecord",
    "RecipeRevision",
    "RecipeTransition",
    "find",
    "kind_of",
    "layer_counts",
    "records",
]
