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

from sentient_core.encoder import TokenPrimeEncoder
from sentient_core.ingest import topic_and_keywords
from sentient_core.integrate.analysed import ChunkAnalysis, analyse, topic_lines
from sentient_core.integrate.summary import StageTimes
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.columns import TraceColumns
from sentient_core.memory.storing import Prepared
from sentient_core.observer import Observer

__all__ = ["Assembler", "as_items"]


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
        found: ChunkAnalysis | None = None,
    ) -> Prepared | list[NewTrace]:
        """Encode, find keywords, observe (the observer changes) and assemble the chunks.

        With an encoder that analyses batches (the token encoder) every step runs
        over the whole batch: the chunks' analysis (``found``, or made here:
        :func:`~sentient_core.integrate.analysed.analyse`), one kernel call
        exciting and ticking the observer once per chunk (``observe``) and the
        records checked column by column (``code``). Otherwise chunk by chunk,
        as :class:`NewTrace` items.
        """
        encoder = self.observer.encoder
        if not isinstance(encoder, TokenPrimeEncoder):
            return self._items(texts, sources, tags, st)
        if found is None:
            found = analyse(encoder, texts, st)

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
            topics=found.topics,
            keywords=found.keywords,
            kind=self.kind,
            importance=self.importance,
            terms=found.terms,
            digests=found.digests,
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
        """:meth:`assemble` chunk by chunk (an encoder other than the token encoder)."""
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
