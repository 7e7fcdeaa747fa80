"""Reflection: connect what was learned, name insights, raise follow-ups (SPEC §4).

Every ``reflect_every`` iterations (and at the end of a session) the learner
calls :func:`reflect` over the recent *learned* traces:

* links: a pair is linked only when its *contents* are related — code cosine
  ≥ :data:`CONTENT_COSINE` or ≥ :data:`SHARED_TERMS` shared salient terms — and
  its SMF orientations have cosine > :data:`SIMILARITY` (0.7). SMF similarity
  alone links almost every pair (the field moves slowly), so it cannot carry
  the graph. Each trace keeps at most :data:`MAX_LINKS` links (its most
  similar partners by code), once per pair. The thresholds were measured on
  chunks of the Q/A corpora in ``bench/data``: code cosine ≥ 0.30 holds for 31 %
  of chunk pairs from one document and 1.7 % of pairs from different ones;
  ≥ 2 shared salient terms for 28 % and 1.1 %.
* insights: the dominant SMF axis and how many connections were made;
* up to 3 follow-up questions about the salient key phrases of the recent
  traces (:mod:`sentient_core.keyphrases`) that the core has not asked yet;
* the wisdom axis is nudged and the SMF renormalised.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from sentient_core.keyphrases import key_phrases, question_about
from sentient_core.learning.questions import normalise_question
from sentient_core.relevance import TermStats
from sentient_kernels import smf

__all__ = [
    "CONTENT_COSINE",
    "MAX_LINKS",
    "SHARED_TERMS",
    "SIMILARITY",
    "Reflection",
    "reflect",
]

SIMILARITY = 0.7
CONTENT_COSINE = 0.30
SHARED_TERMS = 2
MAX_LINKS = 5
WISDOM_NUDGE = 0.05
_SALIENT = 8  # salient phrases per trace compared for shared terms


class Reflection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What one reflection did.

    Attributes
    ----------
    traces : int
        Learned traces reflected on.
    links : int
        New links (pairs; each pair is linked both ways).
    pairs_checked, related_pairs : int
        Pairs compared; pairs whose contents are related (before the SMF and cap rules).
    dominant_axis : str
    insights, followups : tuple of str
    """

    traces: int
    links: int
    dominant_axis: str
    insights: tuple[str, ...]
    followups: tuple[str, ...]
    pairs_checked: int = 0
    related_pairs: int = 0


def reflect(
    memory,
    observer,
    *,
    asked: frozenset[str] | set[str] = frozenset(),
    folded: Callable[[str], bool] = lambda question: False,
    recent: int = 50,
    max_followups: int = 3,
    similarity: float = SIMILARITY,
    content_cosine: float = CONTENT_COSINE,
    shared_terms: int = SHARED_TERMS,
    max_links: int = MAX_LINKS,
) -> Reflection:
    """Reflect over the ``recent`` newest learned traces; see the module docstring.

    ``asked`` holds the keys (:func:`~sentient_core.learning.questions.normalise_question`)
    of questions already known; they are not proposed again. It is only read.
    ``folded(question)``: True for a near-repeat of a known question (the same subject
    asked another way, :meth:`Curiosity.folded`); it is not proposed either.
    """
    traces = [r for r in memory.recent(recent) if r.kind == "learned"]
    stats = TermStats(r.text for r in traces)
    salient = [key_phrases(r.text, stats, k=_SALIENT) for r in traces]
    words = [{w for p in s for w in p.split()} for s in salient]
    links = pairs = related = 0
    if len(traces) >= 2:
        codes = memory.encoder.encode_batch([r.text for r in traces]).astype(np.float64)
        codes /= np.maximum(np.linalg.norm(codes, axis=1, keepdims=True), 1e-12)
        fields = np.ascontiguousarray([r.smf for r in traces], dtype=np.float64)
        content = codes @ codes.T
        degree = [len(memory.links(r.id)) for r in traces]
        candidates = []
        for i in range(len(traces) - 1):
            sims = smf.similarity(np.ascontiguousarray(fields[i]), fields[i + 1 :])
            for j in range(i + 1, len(traces)):
                pairs += 1
                if content[i, j] < content_cosine and len(words[i] & words[j]) < shared_terms:
                    continue
                related += 1
                if sims[j - i - 1] > similarity:
                    candidates.append((float(content[i, j]), i, j, float(sims[j - i - 1])))
        # Most similar contents first, so the cap keeps each trace's best partners.
        for _, i, j, sim in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
            if degree[i] >= max_links or degree[j] >= max_links:
                continue
            a, b = traces[i].id, traces[j].id
            if any(link.dst == b for link in memory.links(a)):
                continue
            memory.link(a, b, weight=float(min(1.0, sim)))
            degree[i] += 1
            degree[j] += 1
            links += 1
    field = observer.smf
    dom = int(np.argmax(np.abs(field[1:]))) + 1  # coherence (e0) dominates by construction
    insights = [
        f"dominant axis after coherence: {smf.AXES[dom]} ({field[dom]:+.3f})",
        f"{links} new connection(s) among {len(traces)} recent learned trace(s)"
        f" ({related} of {pairs} pairs related by content)",
    ]
    followups: list[str] = []
    for phrases in salient:
        for phrase in phrases:
            q = question_about(phrase)
            if normalise_question(q) not in asked and q not in followups and not folded(q):
                followups.append(q)
                break  # one follow-up per trace: spread over what was learned
        if len(followups) >= max_followups:
            break
    observer.nudge_axis("wisdom", WISDOM_NUDGE)
    return Reflection(
        traces=len(traces),
        links=links,
        dominant_axis=smf.AXES[dom],
        insights=tuple(insights),
        followups=tuple(followups),
        pairs_checked=pairs,
        related_pairs=related,
    )
