"""Reflection: connect what was learned, name insights, raise follow-ups (SPEC §4).

Every ``reflect_every`` iterations the learner calls :func:`reflect`:

* recent *learned* traces whose SMF orientations have cosine > 0.7 become
  links in memory (the entanglement graph), once per pair;
* insights: the dominant SMF axis and how many connections were made;
* up to 3 follow-up questions from the keywords of the recent traces that the
  core has not asked about yet (fed back to curiosity, which turns those memory
  cannot answer into memory-miss gaps);
* the wisdom axis is nudged and the SMF renormalised.
"""

from __future__ import annotations

import msgspec
import numpy as np

from kernels import smf
from sentient_core.learning.questions import normalise_question

__all__ = ["Reflection", "reflect"]

SIMILARITY = 0.7
WISDOM_NUDGE = 0.05


class Reflection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What one reflection did."""

    traces: int
    links: int
    dominant_axis: str
    insights: tuple[str, ...]
    followups: tuple[str, ...]


def reflect(
    memory,
    observer,
    *,
    asked: frozenset[str] | set[str] = frozenset(),
    recent: int = 50,
    max_followups: int = 3,
    similarity: float = SIMILARITY,
) -> Reflection:
    """Reflect over the ``recent`` newest learned traces; see the module docstring.

    ``asked`` holds the keys (:func:`~sentient_core.learning.questions.normalise_question`)
    of questions already known; they are not proposed again. It is only read.
    """
    traces = [r for r in memory.recent(recent) if r.kind == "learned"]
    links = 0
    if len(traces) >= 2:
        fields = np.ascontiguousarray([r.smf for r in traces], dtype=np.float64)
        for i in range(len(traces) - 1):
            sims = smf.similarity(np.ascontiguousarray(fields[i]), fields[i + 1 :])
            for j in np.flatnonzero(sims > similarity):
                a, b = traces[i].id, traces[i + 1 + int(j)].id
                if not memory.links(a) or all(link.dst != b for link in memory.links(a)):
                    memory.link(a, b, weight=float(min(1.0, sims[j])))
                    links += 1
    field = observer.smf
    dom = int(np.argmax(np.abs(field[1:]))) + 1  # coherence (e0) dominates by construction
    insights = [
        f"dominant axis after coherence: {smf.AXES[dom]} ({field[dom]:+.3f})",
        f"{links} new connection(s) among {len(traces)} recent learned trace(s)",
    ]
    followups: list[str] = []
    seen_words: set[str] = set()
    for r in traces:
        for word in r.keywords[:3]:
            if word in seen_words:
                continue
            seen_words.add(word)
            q = f"What is {word}?"
            if normalise_question(q) not in asked and q not in followups:
                followups.append(q)
            if len(followups) >= max_followups:
                break
        if len(followups) >= max_followups:
            break
    observer.nudge_axis("wisdom", WISDOM_NUDGE)
    return Reflection(
        traces=len(traces),
        links=links,
        dominant_axis=smf.AXES[dom],
        insights=tuple(insights),
        followups=tuple(followups),
    )
