"""What a :class:`~sentient_core.learning.learner.Learner` is built from, grouped by
responsibility: the knowledge it grows, the gate every initiative passes, the drives
that propose initiatives, and the runtime it reports to and keeps time with.

:func:`~sentient_core.learning.session.build_learner` fills them from a core and
one settings record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sentient_core.autonomy.budget import Budget
    from sentient_core.autonomy.drives import CuriosityDrive, Pursuit
    from sentient_core.autonomy.judge import Judge
    from sentient_core.events import EventBus
    from sentient_core.integrate import Integrator
    from sentient_core.layers import Condenser
    from sentient_core.learning.chaperone import Chaperone
    from sentient_core.learning.curiosity import Curiosity
    from sentient_core.learning.recipe_use import RecipeUse
    from sentient_core.learning.repair import RepairDriver
    from sentient_core.learning.searching import SearchStep
    from sentient_core.memory import HolographicMemory
    from sentient_core.observer import Observer

__all__ = ["Drives", "Gate", "Knowledge", "Runtime"]


@dataclass(frozen=True, slots=True)
class Knowledge:
    """The core being taught.

    Attributes
    ----------
    memory : HolographicMemory
    observer : Observer
    integrator : Integrator
        Turns content into learned traces (kind ``learned``, importance 0.6).
    condenser : Condenser or None
        Condenses verified episodes into semantic notes after each reflection (None: off).
    """

    memory: HolographicMemory
    observer: Observer
    integrator: Integrator
    condenser: Condenser | None = None


@dataclass(frozen=True, slots=True)
class Gate:
    """What every initiative passes: the way out, its cost, and its verdict.

    Attributes
    ----------
    chaperone : Chaperone
        The only path to the network and the file system.
    budget : Budget
    judge : Judge
    search : SearchStep, optional
        Finds new sources for unanswered questions through the chaperone's search
        provider (:mod:`~sentient_core.learning.searching`); None: built with the
        default ``fetch`` (it does nothing while the chaperone has no ``searcher``).
    """

    chaperone: Chaperone
    budget: Budget
    judge: Judge
    search: SearchStep | None = None

    def search_step(self) -> SearchStep:
        """:attr:`search`, or one over the chaperone and the budget."""
        from sentient_core.learning.searching import SearchStep

        return self.search or SearchStep(self.chaperone, self.budget)


@dataclass(frozen=True, slots=True)
class Drives:
    """What proposes initiatives.

    Attributes
    ----------
    drive : CuriosityDrive
        Caps proposals per tick.
    curiosity : Curiosity, optional
        Default: ``Curiosity(observer, memory)`` of the learner's knowledge.
    pursuit : Pursuit, optional
        Focus goals; None: none.
    recipes : RecipeUse, optional
        The recipe tried first on a question (:mod:`~sentient_core.learning.recipe_use`);
        None: recipes off.
    repair : RepairDriver, optional
        Rewrites advisory recipes from their failed runs after each reflection
        (:mod:`~sentient_core.learning.repair`); None: off.
    """

    drive: CuriosityDrive
    curiosity: Curiosity | None = None
    pursuit: Pursuit | None = None
    recipes: RecipeUse | None = None
    repair: RepairDriver | None = None

    def recipe_use(self) -> RecipeUse:
        """:attr:`recipes`, or a hook that does nothing when they are off."""
        from sentient_core.learning.recipe_use import RecipeUse

        return self.recipes or RecipeUse.off()


@dataclass(frozen=True, slots=True)
class Runtime:
    """Where the learner reports, and its time (injectable: deterministic tests).

    Attributes
    ----------
    events : EventBus
    clock : callable
        Unix seconds now.
    sleep : callable
        Waits that many seconds (between iterations).
    """

    events: EventBus
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
