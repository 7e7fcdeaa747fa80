"""The loop as a product of AND-gates: how many initiatives each gate let through.

One silent veto anywhere zeroes learning and shows up as nothing happening (the
lesson of the source design). Every judged initiative names the gate that stopped
it (:attr:`~sentient_core.vocab.Verdict.gate`, counted in
:attr:`~sentient_core.vocab.SessionStats.gates`; the budget's refusals in
``budget_stops``), so a session's funnel — initiatives reaching, passing and
vetoed at each gate of :data:`~sentient_core.vocab.GATES`, in order — follows from
its stats alone. :func:`silent_gates` names the gates that let nothing through
although enough reached them: the session's end says so (``learn``'s live view,
``status``, ``/metrics``).
"""

from __future__ import annotations

import msgspec

from sentient_core.vocab import GATES, SessionStats

__all__ = [
    "MIN_REACHED",
    "GateCount",
    "count_promotion",
    "describe",
    "funnel",
    "promotion_gates",
    "silent_gates",
]

MIN_REACHED = 3
"""A gate that stopped every one of at least this many initiatives is reported."""


class GateCount(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One gate of a session's funnel."""

    gate: str
    reached: int
    passed: int
    vetoed: int


def funnel(stats: SessionStats) -> tuple[GateCount, ...]:
    """Each gate of :data:`~sentient_core.vocab.GATES`, in order: initiatives that reached
    it, passed it and were stopped there (what passes the last gate is ``learned``)."""
    vetoed = {g: stats.gates.get(g, 0) for g in GATES}
    vetoed["budget"] += stats.budget_stops
    reached = stats.budget_stops + sum(stats.gates.values())
    out = []
    for gate in GATES:
        out.append(
            GateCount(
                gate=gate, reached=reached, passed=reached - vetoed[gate], vetoed=vetoed[gate]
            )
        )
        reached -= vetoed[gate]
    return tuple(out)


def promotion_gates(stats: SessionStats) -> tuple[GateCount, ...]:
    """The layers' verification gates (``condensation`` …) of the session, by name:
    candidates that reached each, passed it (went up a layer) and were refused."""
    return tuple(
        GateCount(
            gate=gate,
            reached=c.get("reached", 0),
            passed=c.get("passed", 0),
            vetoed=c.get("vetoed", 0),
        )
        for gate, c in sorted(stats.promotion.items())
    )


def count_promotion(
    stats: SessionStats, gate: str, *, passed: int, vetoed: int, retired: int = 0
) -> None:
    """Add one pass of promotion gate ``gate`` to ``stats.promotion`` (reached = passed +
    vetoed; ``retired``: records it retired on the way)."""
    c = stats.promotion.setdefault(gate, {"reached": 0, "passed": 0, "vetoed": 0})
    c["reached"] += passed + vetoed
    c["passed"] += passed
    c["vetoed"] += vetoed
    if retired:
        c["retired"] = c.get("retired", 0) + retired


def silent_gates(stats: SessionStats) -> list[GateCount]:
    """Gates that at least :data:`MIN_REACHED` initiatives (or candidates, for a promotion
    gate) reached and none passed."""
    return [
        g
        for g in (*funnel(stats), *promotion_gates(stats))
        if g.reached >= MIN_REACHED and g.passed == 0
    ]


def describe(stats: SessionStats) -> list[str]:
    """The funnel in one line (gates that stopped nothing left out), then one warning line
    per :func:`silent_gates` gate."""
    counts = funnel(stats)
    if not counts or counts[0].reached == 0:
        return ["funnel: no initiative reached a gate"]
    steps = [f"{counts[0].reached} initiative(s)"]
    steps += [f"{g.gate} -{g.vetoed}" for g in counts if g.vetoed]
    lines = ["funnel: " + ", ".join(steps) + f" → learned {counts[-1].passed}"]
    lines += [
        f"promotion: {g.gate} {g.reached} candidate(s), {g.passed} went up, {g.vetoed} refused"
        for g in promotion_gates(stats)
        if g.reached  # a pass that found nothing to promote says nothing
    ]
    found = stats.search
    if found.get("searches"):
        lines.append(
            f"search: {found['searches']} search(es), {found.get('results', 0)} candidate(s),"
            f" {found.get('allowed', 0)} allowed, {found.get('filtered', 0)} filtered,"
            f" {found.get('fetched', 0)} read, {found.get('answered', 0)} question(s) answered"
        )
    if stats.idle:
        lines.append(
            "did nothing: " + "; ".join(f"{gate} — {why}" for gate, why in stats.idle.items())
        )
    lines += [
        f"warning: the {g.gate} gate stopped all {g.reached}"
        f" {'candidate' if g.gate in stats.promotion else 'initiative'}(s) that reached it"
        for g in silent_gates(stats)
    ]
    return lines
