"""Storing traces: codes and primes computed in one encoder call, one write transaction.

:func:`store_batch` stores every item. :func:`store_unique` stores only what is
new: an item whose text an active trace already holds (the store's content
digests, :mod:`sentient_core.store.content`), or, with ``near``, whose code is
within ``near`` cosine of an active trace's or which shares
:data:`~sentient_core.memory.types.NEAR_SHINGLES` of its 5-word shingles with one
of its nearest codes' traces, is not stored again; that trace's use count goes up
instead, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from sentient_core.analysis import shared_shingles, shingles
from sentient_core.encoder import TextEncoder
from sentient_core.errors import ArgumentError
from sentient_core.memory import terms as mem_terms
from sentient_core.memory.mirror import Mirror
from sentient_core.memory.types import (
    E0,
    NEAR_CANDIDATES,
    NEAR_SHINGLES,
    MemoryState,
    NewTrace,
    Stored,
    as_code,
    check_new_trace,
    read_state,
    unique_primes,
    write_state,
)
from sentient_core.store import content, traces
from sentient_core.store.columns import TraceColumns
from sentient_core.store.records import TraceRecord
from sentient_core.store.txn import Txn
from sentient_kernels import holographic
from sentient_kernels.lexical import TermCounts

if TYPE_CHECKING:
    from sentient_core.memory.writer import Writer

__all__ = ["store_batch", "store_unique"]


class _Prepared(msgspec.Struct, frozen=True):
    """Records, unit codes and terms ready to store, and the encoder stamp to write (if any)."""

    records: list[TraceRecord]
    codes: np.ndarray
    terms: TermCounts
    stamp: TextEncoder | None


def _prepare(w: Writer, items: list[NewTrace]) -> _Prepared:
    """Check the items; compute missing codes and primes in one encoder call."""
    for i, it in enumerate(items):
        check_new_trace(i, it)
    dim = w.store.code_dim
    codes = np.zeros((len(items), dim), dtype=np.float32)
    for i, it in enumerate(items):
        if it.code is not None:
            codes[i] = as_code(it.code, dim, f"items[{i}].code")
    need_code = [i for i, it in enumerate(items) if it.code is None]
    need_primes = [i for i, it in enumerate(items) if it.primes is None]
    dominant: dict[int, tuple[int, ...]] = {}
    stamp: TextEncoder | None = None
    if need_code or need_primes:
        enc = w.checked_encoder()
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
            if not w.state.encoder_fingerprint:
                stamp = enc
    # Unit rows let recall skip the row norms (topk_cosine normalized=True).
    norms = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
    nonzero = norms > 0
    codes[nonzero] = (codes[nonzero] / norms[nonzero, None]).astype(np.float32)
    now = float(w.clock())
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
    return _Prepared(records, codes, mem_terms.count([it.text for it in items]), stamp)


AlsoWrite = Callable[[Txn, list[TraceRecord], list[int]], None]
"""``also(txn, stored, known_ids)``: more writes for the same transaction (e.g. an
audit event naming the stored traces). It may run more than once if the store
re-runs the transaction after growing its map; only the last run commits."""


def _commit(
    w: Writer,
    prepared: _Prepared,
    select: Callable[[Txn], tuple[list[int], Any]] | None = None,
    also: AlsoWrite | None = None,
    known: Callable[[Any], list[int]] = lambda extra: [],
) -> tuple[list[TraceRecord], list[int], Any]:
    """Append prepared records in one transaction and mirror them.

    ``select(txn)`` (run first, inside the transaction) says which positions to
    append and returns extra data; without it every record is appended.
    ``also(txn, stored, known(extra))`` runs last, in the same transaction.
    Returns the stored records, their positions in ``prepared`` and the extra data.
    """
    stamp = prepared.stamp
    everything = list(range(len(prepared.records)))

    def write(txn: Txn) -> tuple[list[TraceRecord], list[int], MemoryState | None, Any, Any]:
        keep, extra = select(txn) if select is not None else (everything, None)
        records = [prepared.records[i] for i in keep]
        state = None
        if stamp is not None and records:
            state = msgspec.structs.replace(
                read_state(txn), encoder=stamp.name, encoder_fingerprint=stamp.fingerprint
            )
            write_state(txn, state)
        stored = traces.append(txn, records, prepared.codes[keep]) if records else []
        if also is not None:
            also(txn, stored, known(extra))
        # Their terms, in the same transaction (the lexical index is built from them).
        counts = mem_terms.select(prepared.terms, keep)
        mem_terms.write(txn, [r.id for r in stored], counts)
        return stored, keep, state, extra, counts

    def mirror_it(m: Mirror, result: tuple[list[TraceRecord], list[int], Any, Any, Any]) -> None:
        stored, keep, state, _, counts = result
        if state is not None:
            w.state = state
        if not stored:
            return
        if stored[0].row != m.n or stored[0].id != w.next_id:
            w.refresh(False)  # rows committed around us: read everything up to now
            return
        w.append(TraceColumns.of_records(stored), prepared.codes[keep], stored[-1].row + 1, counts)
        w.next_id = stored[-1].id + 1

    stored, keep, _, extra, _ = w.commit(write, mirror_it)
    return stored, keep, extra


def store_batch(w: Writer, items: Sequence[NewTrace]) -> list[TraceRecord]:
    """See :meth:`HolographicMemory.store_batch`."""
    items = list(items)
    if not items:
        return []
    stored, _, _ = _commit(w, _prepare(w, items))
    return stored


def _most_shared(txn: Txn, text: str, candidates: list[int]) -> tuple[int | None, float]:
    """The active candidate sharing the most of ``text``'s shingles, if it shares at
    least :data:`NEAR_SHINGLES`; else (None, 0)."""
    mine = shingles(text)
    best: tuple[int | None, float] = (None, 0.0)
    for rec in traces.get_many(txn, candidates):
        if rec is None or rec.retired:
            continue
        shared = shared_shingles(mine, shingles(rec.text))
        if shared >= NEAR_SHINGLES and shared > best[1]:
            best = (rec.id, shared)
    return best


def store_unique(
    w: Writer,
    items: Sequence[NewTrace],
    near: float | None,
    also: AlsoWrite | None = None,
    not_a_use: Callable[[int, int], bool] | None = None,
) -> list[Stored]:
    """See :meth:`HolographicMemory.store_unique`."""
    items = list(items)
    if not items:
        return []
    if near is not None and (
        isinstance(near, bool) or not isinstance(near, (int, float)) or not 0.0 < near <= 1.0
    ):
        raise ArgumentError(f"near must be in (0, 1] or None, got {near!r}")
    prepared = _prepare(w, items)
    digests = [content.digest(it.text) for it in items]
    # Near-duplicates: the best match of each new code among the active traces.
    close: dict[int, tuple[int, float]] = {}
    nearby: dict[int, list[int]] = {}  # the nearest codes' traces, for the shingle check
    m = w.mirror
    if near is not None and m.n:
        rows, scores = holographic.topk_cosine_batch(
            m.codes[: m.n], prepared.codes, NEAR_CANDIDATES, normalized=True, valid=m.valid[: m.n]
        )
        for i in range(len(items)):
            if not (rows[i].size and prepared.codes[i].any()):
                continue
            if scores[i][0] >= near:
                close[i] = (int(m.row_id[rows[i][0]]), float(scores[i][0]))
            else:
                nearby[i] = [int(t) for t in m.row_id[rows[i]].tolist()]
    now = float(w.clock())

    def select(txn: Txn) -> tuple[list[int], tuple[list[tuple[int, str]], dict[int, TraceRecord]]]:
        """Each item: new, or the active trace already holding it (whose use count goes up)."""
        plan: list[tuple[int, str]] = []  # (holder id, or -1 new, or -2-j same as item j)
        first: dict[bytes, int] = {}
        holders: dict[int, TraceRecord] = {}
        used: set[int] = set()
        for i, key in enumerate(digests):
            tid = content.lookup(txn, key)
            why = f"same content as trace {tid}"
            if tid is None and i in close:
                tid, cos = close[i]
                why = f"near-duplicate of trace {tid} (code cosine {cos:.3f})"
            elif tid is None and i in nearby:
                tid, shared = _most_shared(txn, items[i].text, nearby[i])
                why = f"near-duplicate of trace {tid} (shares {shared:.2f} of its 5-word shingles)"
            rec = None if tid is None else (holders.get(tid) or traces.get(txn, tid))
            if rec is not None and not rec.retired:
                plan.append((rec.id, why))
                holders[rec.id] = rec
                if not_a_use is None or not not_a_use(i, rec.id):
                    used.add(rec.id)
            elif key in first:
                plan.append((-2 - first[key], "repeated in this batch"))
            else:
                first[key] = i
                plan.append((-1, ""))
        for tid, rec in list(holders.items()):
            if tid not in used:
                continue
            bumped = msgspec.structs.replace(rec, use_count=rec.use_count + 1, last_access=now)
            traces.update(txn, bumped)
            holders[tid] = bumped
        return [i for i, (tid, _) in enumerate(plan) if tid == -1], (plan, holders)

    stored, keep, (plan, holders) = _commit(
        w,
        prepared,
        select,
        also,
        known=lambda extra: [tid for tid, _ in extra[0] if tid >= 0],
    )
    new_by_item = dict(zip(keep, stored, strict=True))
    out: list[Stored] = []
    for i, (tid, why) in enumerate(plan):
        if tid == -1:
            out.append(Stored(record=new_by_item[i], new=True))
        elif tid <= -2:
            out.append(Stored(record=new_by_item[-2 - tid], new=False, reason=why))
        else:
            out.append(Stored(record=holders[tid], new=False, reason=why))
    return out
