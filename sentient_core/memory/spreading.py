"""Recall that spreads along links: a ranking's best hits, then what they link to.

Reflection links traces whose contents are related and whose SMF orientations
agree (:mod:`sentient_core.learning.reflect`). Spreading reads that graph at
recall time: the top ``k`` hits of any ranking are the seeds of
:meth:`~sentient_core.memory.HolographicMemory.spread` (``hops`` steps, each
seed starting at activation 1, ``decay`` per hop, times each link's weight).
The first ``k - slots`` seeds keep their places; the last ``slots`` places
(``max(1, k // 5)``) go to the most activated linked neighbours that are not
seeds (seeds fill them when fewer neighbours are reached). A neighbour's score
is its activation relative to the most activated one times the weakest kept
seed's score, so it never outranks a seed.

Why the tail only: letting activation compete with the ranking's scores (a
neighbour scored ``activation × best score``) cut answer@1 on the Q/A sets
from 0.75 to 0.48 (pydoc), 0.95 to 0.58 (debian) and 0.75 to 0.46 (debian
hard) with one hop, and to ≤ 0.04 with two (activation sums over seeds and
hops): a linked passage is related, rarely the answer. ``hops = 0`` is plain
recall (nothing is read from the link table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sentient_core.errors import ArgumentError
from sentient_core.memory.types import Hit

if TYPE_CHECKING:
    from sentient_core.memory.holographic import HolographicMemory

__all__ = ["DEFAULT_DECAY", "MAX_HOPS", "spread_hits"]

DEFAULT_DECAY = 0.5
MAX_HOPS = 3


def spread_hits(
    memory: HolographicMemory,
    hits: Sequence[Hit],
    k: int,
    hops: int,
    *,
    decay: float = DEFAULT_DECAY,
) -> list[Hit]:
    """``hits`` with their linked neighbours merged in (see the module docstring).

    Parameters
    ----------
    memory : HolographicMemory
        Whose links are read (one snapshot per call).
    hits : sequence of Hit
        A ranking's hits, best first (the seeds).
    k : int
        At most this many hits are returned.
    hops : int
        Link steps, in [0, :data:`MAX_HOPS`]; 0 returns ``hits[:k]`` unchanged.
        A neighbour takes one of the last ``max(1, k // 5)`` places.
    decay : float
        Per-hop factor in (0, 1].

    Returns
    -------
    list of Hit
        Best first; a neighbour's hit has ``lexical``/``cosine`` None (it was
        reached by a link, not scored against the query).

    Raises
    ------
    ArgumentError
        ``hops`` out of range.
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or not 0 <= hops <= MAX_HOPS:
        raise ArgumentError(f"spread hops must be an integer in [0, {MAX_HOPS}], got {hops!r}")
    seeds = list(hits[:k])
    if hops == 0 or not seeds:
        return seeds
    slots = max(1, k // 5)
    keep = min(len(seeds), max(1, k - slots))  # the best hit always stays first
    have = {h.record.id for h in seeds}
    reached = memory.spread([h.record.id for h in seeds], hops=hops, decay=decay, limit=k + slots)
    neighbours: list[Hit] = []
    most = reached[0][1] if reached else 0.0
    floor = seeds[keep - 1].score if keep else seeds[0].score
    for trace_id, activation in reached:
        if len(neighbours) >= slots:
            break
        rec = memory.get(trace_id) if trace_id not in have else None
        if rec is None or rec.retired:
            continue
        score = float(floor * activation / most) if most > 0.0 else 0.0
        neighbours.append(Hit(record=rec, score=score, row=rec.row))
    # Seeds fill the slots no neighbour took.
    return (seeds[:keep] + neighbours + seeds[keep:])[:k]
