"""The field steers what is learned: an SMF-axis gap asks about the subjects that load the axis.

Curiosity raises an ``smf_imbalance`` gap when an axis of the observer's Sedenion
Memory Field is starved (below ``axis_fraction · |s|``). Without this module the
gap is mapped onto the unexplored corpus topic whose text is most *related to the
axis question's words* — in practice the next unexplored topic, since no corpus
passage shares words with "What is the nature of deep understanding?". Here the
candidates are ordered by their **field** instead.

A passage's field loading
    What the observer's own dynamics do with the passage: a scratch copy of the
    observer (:meth:`~sentient_core.observer.Observer.to_record` /
    ``from_record``, bit for bit) processes the passage and ticks ``ticks``
    times; a second copy ticks the same without input. The difference of their
    SMFs, ``pull`` (16,), is the passage's own push on each axis, the bank's
    drift cancelled.
Loads an axis
    A passage *loads* axis ``k`` when its pull on ``k`` is above the mean pull on
    ``k`` over all candidate topics (by more than :data:`TOLERANCE`). The
    absolute top axes are the same for every passage (the field's Δ has
    constant terms, e.g. Δ9 = Δ13 = 0.05), so "loads" is relative to the other
    candidates: about half of the topics load a varying axis, none loads an axis
    no passage moves (``infinity`` and ``truth``, whose Δ terms fire only at a
    phase order R > 0.9 / 0.7 that one passage never brings).
Cost
    One ``from_record`` and a few ticks per topic (~0.1 ms: the 635 topics of
    Python's docs and the debian corpus take 0.07 s), computed once per corpus index (the chaperone's topics tuple)
    against the observer's state at that moment, then cached.

:class:`FieldGaps` is handed to :class:`~sentient_core.learning.curiosity.Curiosity`
(``field=``); its :meth:`FieldGaps.order` replaces the relatedness order for an
axis gap. When no candidate loads the axis the old order is kept (and
:attr:`FieldGaps.unloadable` counts it), so the gap still asks something.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.observer import Observer
from sentient_kernels import smf

if TYPE_CHECKING:
    from sentient_core.learning.chaperone import CorpusTopic

__all__ = ["TOLERANCE", "AxisPick", "FieldGaps", "axis_entropy", "passage_pulls"]

TOLERANCE = 1e-9
"""A pull this close to the candidates' mean does not load the axis (float noise)."""


def passage_pulls(observer: Observer, texts: Sequence[str], ticks: int = 3) -> np.ndarray:
    """Each text's push on the 16 SMF axes, as ``observer`` would compute it now.

    Parameters
    ----------
    observer : Observer
        Read only (its state is snapshotted once; scratch copies do the work).
    texts : sequence of str
    ticks : int
        Ticks after the text's excitation (the field moves by η per tick).

    Returns
    -------
    numpy.ndarray
        (len(texts), 16) float64: ``smf(copy + text) − smf(copy)`` after ``ticks``.
    """
    record = observer.to_record()
    encoder = observer.encoder
    idle = Observer.from_record(record, encoder=encoder)
    idle.tick(ticks)
    base = idle.smf
    out = np.zeros((len(texts), smf.DIM))
    for i, text in enumerate(texts):
        scratch = Observer.from_record(record, encoder=encoder)
        scratch.process_text(text)
        scratch.tick(ticks)
        out[i] = scratch.smf - base
    return out


class AxisPick(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The topic an SMF-axis gap was mapped onto, and whether its passage loads the axis."""

    axis: str
    phrase: str
    source: str
    loads: bool


def axis_entropy(field: np.ndarray) -> float:
    """The SMF's axis entropy (nats, :func:`sentient_kernels.smf.entropy`): higher is more even."""
    return float(smf.entropy(np.ascontiguousarray(field, dtype=np.float64)))


class FieldGaps:
    """Order corpus topics for a starved SMF axis by how much their passage loads it.

    Parameters
    ----------
    observer : Observer
        The learner's observer (read, never changed).
    ticks : int
        See :func:`passage_pulls`.
    steer : bool
        False measures without steering (:meth:`order` always None, :meth:`pick`
        still records): the old behaviour's arm of an A/B run.
    """

    def __init__(self, observer: Observer, ticks: int = 3, *, steer: bool = True) -> None:
        self.observer = observer
        self.ticks = ticks
        self.steer = steer
        self.picks: list[AxisPick] = []
        """Every topic an axis gap was mapped onto (:meth:`pick`), in order."""
        self._cache: tuple[Sequence[CorpusTopic], dict[tuple[str, str], np.ndarray]] | None = None
        self._mean = np.zeros(smf.DIM)
        self.unloadable: Counter[str] = Counter()
        """Axis gaps no candidate loads (the relatedness order was kept), by axis name."""

    def index(self, topics: Sequence[CorpusTopic]) -> dict[tuple[str, str], np.ndarray]:
        """Each topic's pull, by ``(source, phrase)``; computed once per topics tuple."""
        if self._cache is not None and self._cache[0] is topics:
            return self._cache[1]
        pulls = passage_pulls(self.observer, [t.context for t in topics], self.ticks)
        table = {(t.source, t.phrase): pulls[i] for i, t in enumerate(topics)}
        self._mean = pulls.mean(axis=0) if len(topics) else np.zeros(smf.DIM)
        self._cache = (topics, table)
        return table

    def loads(self, axis: int, topic: CorpusTopic, topics: Sequence[CorpusTopic]) -> bool:
        """Whether ``topic``'s passage loads ``axis`` (above the candidates' mean pull)."""
        pull = self.index(topics).get((topic.source, topic.phrase))
        return pull is not None and bool(pull[axis] > self._mean[axis] + TOLERANCE)

    def pick(self, axis: int, topic: CorpusTopic, topics: Sequence[CorpusTopic]) -> bool:
        """Record that an axis gap was mapped onto ``topic``; whether it loads the axis."""
        loads = self.loads(axis, topic, topics)
        self.picks.append(
            AxisPick(axis=smf.AXES[axis], phrase=topic.phrase, source=topic.source, loads=loads)
        )
        return loads

    def order(
        self, axis: int, pool: Sequence[CorpusTopic], topics: Sequence[CorpusTopic]
    ) -> list[int] | None:
        """Indices of ``pool`` that load ``axis``, most loading first (ties by index),
        then the rest in pool order; None when none of ``pool`` loads it."""
        if not self.steer:
            return None
        table = self.index(topics)
        zero = np.zeros(smf.DIM)
        pull = [float(table.get((t.source, t.phrase), zero)[axis]) for t in pool]
        bar = float(self._mean[axis]) + TOLERANCE
        loading = sorted((i for i, p in enumerate(pull) if p > bar), key=lambda i: (-pull[i], i))
        if not loading:
            self.unloadable[smf.AXES[axis]] += 1
            return None
        rest = [i for i in range(len(pool)) if pull[i] <= bar]
        return loading + rest
