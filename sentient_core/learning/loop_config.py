"""The learning loop's settings and its per-iteration report (re-exported by
:mod:`sentient_core.learning.learner`)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from sentient_core.errors import ArgumentError

__all__ = ["MAX_SESSION_ITERATIONS", "IterationReport", "LearnerConfig"]


MAX_SESSION_ITERATIONS = 100
"""Hard cap on iterations per session (SPEC §4)."""


class LearnerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Loop settings (SPEC §4 defaults).

    Attributes
    ----------
    interval_s : float
        Seconds between iterations (0 in tests).
    max_iterations : int
        Iterations per session, at most :data:`MAX_SESSION_ITERATIONS`.
    reflect_every : int
        Reflect every this many iterations, and at the end of a session (0: never — no
        follow-ups, condensation or repair either).
    ticks_per_iteration : int
        Observer ticks run at the start of each iteration.
    initiative_tokens : int
        Tokens an initiative is expected to spend (checked against the budget first).
    session : str
        Session id stamped on requests and events.
    commit_routes : int
        Routes the task-commitment drive tries per user question before it gives up
        (:mod:`sentient_core.learning.commitment`; 0, the default: off — it has not
        yet raised answer@5 on the Q/A sets, and costs queries).
    condense : bool
        After each reflection, condense agreeing episodes from independent sources into
        semantic notes (:mod:`sentient_core.layers`).
    recipes : bool
        Try the recipe standing for a question's (kind, domain) first, and turn judged
        successes into recipes (:mod:`sentient_core.recipes`).
    skill_repair : bool
        With recipes on: after each reflection, diagnose advisory recipes from their failed
        runs and rewrite them (:mod:`sentient_core.learning.repair`).
    repair_budget : int
        Recipe rewrites per repair pass (the driver's own budget line).
    use_wisdom : bool
        Provisional and trusted wisdom weigh the sources it found wrong (routing, a
        prior in a new domain, the recall factor; :mod:`sentient_core.metamemory.advice`).
        False is the ablation.
    field_gaps : bool
        Map an SMF-axis gap onto the topics whose passage loads the axis
        (:mod:`sentient_core.learning.field_gaps`).
    link_gaps : bool
        Raise ``link`` gaps from the link graph (:mod:`sentient_core.learning.link_gaps`).
    """

    interval_s: Annotated[float, msgspec.Meta(ge=0.0, le=86400.0)] = 30.0
    max_iterations: Annotated[int, msgspec.Meta(ge=1, le=MAX_SESSION_ITERATIONS)] = 100
    reflect_every: Annotated[int, msgspec.Meta(ge=0)] = 10
    ticks_per_iteration: Annotated[int, msgspec.Meta(ge=0)] = 60
    initiative_tokens: Annotated[int, msgspec.Meta(ge=0)] = 500
    session: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] = "session"
    commit_routes: Annotated[int, msgspec.Meta(ge=0, le=4)] = 0
    condense: bool = True
    recipes: bool = False
    skill_repair: bool = True
    repair_budget: Annotated[int, msgspec.Meta(ge=0, le=100)] = 3
    use_wisdom: bool = True
    field_gaps: bool = True
    link_gaps: bool = True

    def __post_init__(self) -> None:
        # msgspec checks the bounds when decoding (a config file); check the ones
        # that matter when the record is built in code too.
        if not 1 <= self.max_iterations <= MAX_SESSION_ITERATIONS:
            raise ArgumentError(
                f"max_iterations must be in [1, {MAX_SESSION_ITERATIONS}] (SPEC: at most"
                f" {MAX_SESSION_ITERATIONS} iterations per session), got {self.max_iterations}"
            )
        if not self.interval_s >= 0.0:
            raise ArgumentError(f"interval_s must be >= 0, got {self.interval_s}")


class IterationReport(msgspec.Struct, forbid_unknown_fields=True):
    """What one iteration did (also published as events)."""

    iteration: int
    skipped: bool = False
    gaps: int = 0
    intensity: float = 0.0
    initiatives: int = 0
    ingested: int = 0
    outcomes: list[str] = msgspec.field(default_factory=list)
    stopped_by: str = ""
    overhead_s: float = 0.0
