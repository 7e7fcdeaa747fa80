"""Assembling a batch of chunks for memory: encoded, observed, keyworded, checked.

The stages ``encode`` to ``code`` of :mod:`sentient_core.integrate.pipeline`,
over a whole batch, in three steps: :meth:`Assembler.analyse` (``encode``),
:meth:`Assembler.observe` (``observe``, the only step that changes the
observer) and :meth:`Assembler.finish` (``keywords``, ``code``: it reads only
its batch, so the pipeline runs it on the commit thread). With an encoder that analyses batches (the token encoder's
:meth:`~sentient_core.encoder.TokenPrimeEncoder.analyse_many`) they are a few
kernel calls and column checks; with any other encoder they run chunk by chunk
(the reference the batch path is tested against: the same stored bytes and the
same observer trajectory, ``tests/test_integrate_batch.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from sentient_core.encoder import EncodedText
from sentient_core.encoder.token_encoder import TextAnalysis
from sentient_core.ingest import topic_and_keywords
from sentient_core.ingest.keywords import heading
from sentient_core.integrate.summary import StageTimes
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.columns import TraceColumns
from sentient_core.memory.storing import Prepared
from sentient_core.observer import Observer
from sentient_core.store import content

__all__ = ["Analysed", "Assembler", "Observed", "as_items", "topic_lines"]


class Analysed(NamedTuple):
    """A batch of chunks encoded, not yet observed (:meth:`Assembler.analyse`)."""

    texts: list[str]
    sources: list[str]
    tags: list[tuple[str, ...] | None]
    found: TextAnalysis | None  # the batch path (an encoder with analyse_many)
    encoded: list[EncodedText] | None  # else chunk by chunk


class Observed(NamedTuple):
    """A batch observed (:meth:`Assembler.observe`): the SMF orientation after each chunk."""

    analysed: Analysed
    smf: np.ndarray | list[tuple[float, ...]]


class Assembler:
    """Turns chunks into what memory stores (see the module docstring).

    Three steps: :meth:`analyse` (``encode``), :meth:`observe` (``observe``: the
    only one that changes the observer, so batches go through it in order) and
    :meth:`finish` (``keywords`` and ``code``: it reads only its batch, so it
    may run on another thread, the commit's).
    """

    def __init__(
        self,
        memory: HolographicMemory,
        observer: Observer,
        kind: str,
        importance: float,
        tags: tuple[str, ...],
    ) -> None:
        self.memory = memory
        self.observer = observer
        self.kind = kind
        self.importance = importance
        self.tags = tags

    def _topics(self, texts: list[str], k: int = 8) -> list[tuple[str, list[str]]]:
        """(topic, keywords) per text, as :func:`~sentient_core.ingest.topic_and_keywords`."""
        fast = getattr(self.observer.encoder, "keywords_many", None)
        if fast is None:
            return [topic_and_keywords(x, k) for x in texts]
        return topic_lines(texts, fast(texts, max(k, 3)), k)

    def assemble(
        self,
        texts: list[str],
        sources: list[str],
        tags: list[tuple[str, ...] | None],
        st: StageTimes,
    ) -> Prepared | list[NewTrace]:
        """Encode, observe (the observer changes), find keywords and assemble the chunks:
        :meth:`analyse`, :meth:`observe`, :meth:`finish`."""
        return self.finish(self.observe(self.analyse(texts, sources, tags, st), st), st)

    def analyse(
        self,
        texts: list[str],
        sources: list[str],
        tags: list[tuple[str, ...] | None],
        st: StageTimes,
        threads: int = 0,
    ) -> Analysed:
        """Encode the chunks (``encode``); the observer is left alone.

        With an encoder that analyses batches (the token encoder): one kernel pass
        for the codes, excitations, keyword candidates and terms, on ``threads``
        threads (0: all of Numba's). Otherwise the codes, chunk by chunk.
        """
        texts, sources, tags = list(texts), list(sources), list(tags)
        analyse = getattr(self.observer.encoder, "analyse_many", None)
        t = time.perf_counter()
        if analyse is None:
            batch = self.observer.encoder.encode_many(texts)
            encoded = [batch.item(i) for i in range(len(texts))]
            st.encode += time.perf_counter() - t
            return Analysed(texts, sources, tags, None, encoded)
        found = analyse(texts, 8, threads=threads)
        st.encode += time.perf_counter() - t
        return Analysed(texts, sources, tags, found, None)

    def observe(self, a: Analysed, st: StageTimes) -> Observed:
        """Excite and tick the observer once per chunk, in order (``observe``).

        The batch path in one kernel call; the other chunk by chunk
        (``process_encoded`` and ``tick(1)``), the reference it is tested against.
        """
        t = time.perf_counter()
        if a.found is not None:
            b = a.found.batch
            fields = self.observer.observe_batch(b.offsets, b.indices, b.amounts, b.phases)
            st.observe += time.perf_counter() - t
            return Observed(a, fields)
        obs = self.observer
        orientations = []
        for enc in a.encoded or []:
            obs.process_encoded(enc)
            obs.tick(1)
            orientations.append(tuple(obs.smf.tolist()))
        st.observe += time.perf_counter() - t
        return Observed(a, orientations)

    def finish(self, o: Observed, st: StageTimes) -> Prepared | list[NewTrace]:
        """Topic lines and keywords (``keywords``), then what memory stores (``code``).

        The batch path: the keywords from the analysis, the content digests in
        one pass and the records checked column by column. The other path: the
        keywords in Python and one :class:`NewTrace` per chunk. Reads nothing but
        its batch (any thread may run it).
        """
        a = o.analysed
        t = time.perf_counter()
        if a.found is None:
            topics = self._topics(a.texts)
        else:
            topics = topic_lines(a.texts, a.found.keywords, 8)
        st.keywords += time.perf_counter() - t
        t = time.perf_counter()
        if a.found is None:
            items = self._items(a, o.smf, topics)
            st.code += time.perf_counter() - t
            return items
        b = a.found.batch
        cols = TraceColumns(
            texts=a.texts,
            codes=b.codes,
            smf=np.asarray(o.smf),
            primes=a.found.dominant,
            sources=a.sources,
            tags=[self.tags if g is None else tuple(g) for g in a.tags],
            topics=[topic for topic, _ in topics],
            keywords=[tuple(words) for _, words in topics],
            kind=self.kind,
            importance=self.importance,
            terms=a.found.terms,
            digests=content.digests(a.texts),
        )
        prepared = self.memory.prepare(cols)
        st.code += time.perf_counter() - t
        return prepared

    def _items(
        self,
        a: Analysed,
        orientations: np.ndarray | list[tuple[float, ...]],
        topics: list[tuple[str, list[str]]],
    ) -> list[NewTrace]:
        """:meth:`finish` chunk by chunk (an encoder without ``analyse_many``)."""
        encoded = a.encoded or []
        items = []
        for i, text in enumerate(a.texts):
            topic, words = topics[i]
            items.append(
                NewTrace(
                    text=text,
                    code=encoded[i].code,
                    smf=orientations[i],
                    primes=encoded[i].dominant_primes,
                    kind=self.kind,
                    source=a.sources[i],
                    importance=self.importance,
                    tags=tag if (tag := a.tags[i]) is not None else self.tags,
                    topic=topic,
                    keywords=tuple(words),
                )
            )
        return items


def topic_lines(
    texts: Sequence[str], tops: Sequence[list[str]], k: int
) -> list[tuple[str, list[str]]]:
    """(topic, keywords) per text from its top ``max(k, 3)`` keywords: the first
    heading-like line, else the top three keywords (as ``topic_and_keywords``)."""
    return [(heading(x) or " ".join(top[:3]), top[:k]) for x, top in zip(texts, tops, strict=True)]


def as_items(prepared: Prepared) -> list[NewTrace]:
    """The items a prepared batch stores (for :attr:`TextBatch.items`)."""
    return [
        NewTrace(
            text=r.text,
            code=prepared.codes[i],
            smf=r.smf,
            primes=r.primes,
            kind=r.kind,
            source=r.source,
            importance=r.importance,
            tags=r.tags,
            topic=r.topic,
            keywords=r.keywords,
        )
        for i, r in enumerate(prepared.records)
    ]
