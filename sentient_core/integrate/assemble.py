"""Assembling a batch of chunks for memory: encoded, keyworded, observed, checked.

The stages ``encode`` to ``code`` of :mod:`sentient_core.integrate.pipeline`,
over a whole batch. With an encoder that analyses batches (the token encoder's
:meth:`~sentient_core.encoder.TokenPrimeEncoder.analyse_many`) they are a few
kernel calls and column checks; with any other encoder they run chunk by chunk
(the reference the batch path is tested against: the same stored bytes and the
same observer trajectory, ``tests/test_integrate_batch.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from sentient_core.ingest import topic_and_keywords
from sentient_core.ingest.keywords import heading
from sentient_core.integrate.summary import StageTimes
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.columns import TraceColumns
from sentient_core.memory.storing import Prepared
from sentient_core.observer import Observer
from sentient_core.store import content

__all__ = ["Assembler", "as_items", "topic_lines"]


class Assembler:
    """Turns chunks into what memory stores (see the module docstring)."""

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
        """Encode, find keywords, observe (the observer changes) and assemble the chunks.

        With an encoder that analyses batches (the token encoder) every step runs
        over the whole batch: one kernel pass for the codes, excitations, keyword
        candidates and terms (``encode``), topic lines (``keywords``), one kernel
        call exciting and ticking the observer once per chunk (``observe``), the
        content digests in one pass and the records checked column by column
        (``code``). Otherwise chunk by chunk, as :class:`NewTrace` items.
        """
        analyse = getattr(self.observer.encoder, "analyse_many", None)
        if analyse is None:
            return self._items(texts, sources, tags, st)
        t = time.perf_counter()
        found = analyse(texts, 8)
        st.encode += time.perf_counter() - t

        t = time.perf_counter()
        topics = topic_lines(texts, found.keywords, 8)
        st.keywords += time.perf_counter() - t

        t = time.perf_counter()
        b = found.batch
        fields = self.observer.observe_batch(b.offsets, b.indices, b.amounts, b.phases)
        st.observe += time.perf_counter() - t

        t = time.perf_counter()
        cols = TraceColumns(
            texts=list(texts),
            codes=b.codes,
            smf=fields,
            primes=found.dominant,
            sources=list(sources),
            tags=[self.tags if g is None else tuple(g) for g in tags],
            topics=[topic for topic, _ in topics],
            keywords=[tuple(words) for _, words in topics],
            kind=self.kind,
            importance=self.importance,
            terms=found.terms,
            digests=content.digests(texts),
        )
        prepared = self.memory.prepare(cols)
        st.code += time.perf_counter() - t
        return prepared

    def _items(
        self,
        texts: list[str],
        sources: list[str],
        tags: list[tuple[str, ...] | None],
        st: StageTimes,
    ) -> list[NewTrace]:
        """:meth:`assemble` chunk by chunk (an encoder without ``analyse_many``)."""
        t = time.perf_counter()
        batch = self.observer.encoder.encode_many(texts)
        encoded = [batch.item(i) for i in range(len(texts))]
        st.encode += time.perf_counter() - t

        t = time.perf_counter()
        topics = self._topics(texts)
        st.keywords += time.perf_counter() - t

        t = time.perf_counter()
        obs = self.observer
        orientations = []
        for enc in encoded:
            obs.process_encoded(enc)
            obs.tick(1)
            orientations.append(tuple(obs.smf.tolist()))
        st.observe += time.perf_counter() - t

        t = time.perf_counter()
        items = []
        for i, text in enumerate(texts):
            topic, words = topics[i]
            items.append(
                NewTrace(
                    text=text,
                    code=encoded[i].code,
                    smf=orientations[i],
                    primes=encoded[i].dominant_primes,
                    kind=self.kind,
                    source=sources[i],
                    importance=self.importance,
                    tags=tag if (tag := tags[i]) is not None else self.tags,
                    topic=topic,
                    keywords=tuple(words),
                )
            )
        st.code += time.perf_counter() - t
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
