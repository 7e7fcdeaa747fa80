"""Storing traces: codes and primes computed in one encoder call, one write transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from sentient_core.encoder import TextEncoder
from sentient_core.memory.mirror import Mirror
from sentient_core.memory.mirror import append as append_rows
from sentient_core.memory.types import (
    E0,
    MemoryState,
    NewTrace,
    as_code,
    check_new_trace,
    read_state,
    unique_primes,
    write_state,
)
from sentient_core.store import traces
from sentient_core.store.columns import TraceColumns
from sentient_core.store.records import TraceRecord
from sentient_core.store.txn import Txn

if TYPE_CHECKING:
    from sentient_core.memory.holographic import HolographicMemory

__all__ = ["store_batch"]


def store_batch(mem: HolographicMemory, items: Sequence[NewTrace]) -> list[TraceRecord]:
    """See :meth:`HolographicMemory.store_batch`."""
    items = list(items)
    if not items:
        return []
    for i, it in enumerate(items):
        check_new_trace(i, it)
    dim = mem._store.code_dim
    codes = np.zeros((len(items), dim), dtype=np.float32)
    for i, it in enumerate(items):
        if it.code is not None:
            codes[i] = as_code(it.code, dim, f"items[{i}].code")
    need_code = [i for i, it in enumerate(items) if it.code is None]
    need_primes = [i for i, it in enumerate(items) if it.primes is None]
    dominant: dict[int, tuple[int, ...]] = {}
    stamp: TextEncoder | None = None
    if need_code or need_primes:
        enc = mem._encoder_for_use()
        wanted = sorted(set(need_code) | set(need_primes))
        texts = [items[i].text for i in wanted]
        position = {i: j for j, i in enumerate(wanted)}
        if need_primes:  # one kernel call gives codes and excitations
            batch = enc.encode_many(texts)
            made = batch.codes
            for i in need_primes:
                dominant[i] = batch.item(position[i]).dominant_primes
        else:
            made = enc.encode_batch(texts)
        if need_code:
            codes[need_code] = made[[position[i] for i in need_code]]
            if not mem._state.encoder_fingerprint:
                stamp = enc
    # Unit rows let recall skip the row norms (topk_cosine normalized=True).
    norms = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
    nonzero = norms > 0
    codes[nonzero] = (codes[nonzero] / norms[nonzero, None]).astype(np.float32)
    now = float(mem._clock())
    records = [
        TraceRecord(
            id=0,
            row=0,
            created=now,
            last_access=now,
            importance=float(it.importance),
            kind=it.kind,
            source=it.source,
            text=it.text,
            topic=it.topic,
            keywords=tuple(it.keywords),
            tags=tuple(it.tags),
            smf=E0 if it.smf is None else tuple(float(x) for x in it.smf),
            primes=unique_primes(int(p) for p in (dominant[i] if it.primes is None else it.primes)),
        )
        for i, it in enumerate(items)
    ]

    def write(txn: Txn) -> tuple[list[TraceRecord], MemoryState | None]:
        state = None
        if stamp is not None:
            state = msgspec.structs.replace(
                read_state(txn), encoder=stamp.name, encoder_fingerprint=stamp.fingerprint
            )
            write_state(txn, state)
        return traces.append(txn, records, codes), state

    def mirror_it(m: Mirror, result: tuple[list[TraceRecord], MemoryState | None]) -> None:
        stored, state = result
        if state is not None:
            mem._state = state
        if stored[0].row != m.n or stored[0].id != mem._next_id:
            mem.refresh()  # rows committed around us: read everything up to now
            return
        mem._m = append_rows(
            m,
            mem._prime_index,
            TraceColumns.of_records(stored),
            codes,
            stored[-1].row + 1,
            str(mem._store.path),
        )
        mem._next_id = stored[-1].id + 1

    stored, _ = mem._commit(write, mirror_it)
    return stored


# -- recall ------------------------------------------------------------------------------
