"""Storing traces: codes and primes computed in one encoder call, stored in one transaction.

:func:`prepare` checks and encodes items (outside any transaction). The steps
run inside a unit of work's transaction (:mod:`~sentient_core.memory.unit`) and
return what they stored with the in-RAM update they owe
(:class:`~sentient_core.memory.writer.Change`).

:func:`store_batch` stores every item. :func:`store_unique` stores only what is
new: an item whose text an active trace already holds (the store's content
digests, :mod:`sentient_core.store.content`), or, with ``near``, whose code is
within ``near`` cosine of an active trace's or which shares
:data:`~sentient_core.memory.types.NEAR_SHINGLES` of its 5-word shingles with one
of its nearest codes' traces, is not stored again; that trace's use count goes up
instead, in the same transaction. A near-duplicate that *revises* a value of the
trace it resembles (:func:`revises`: a version, date or number replaced in place,
as a corrected changelog does) is new: memory keeps both, and meta-memory's
debts judge which is right.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from sentient_core.analysis import shared_shingles, shingles
from sentient_core.encoder import TextEncoder
from sentient_core.errors import ArgumentError
from sentient_core.memory import terms as mem_terms
from sentient_core.memory.types import (
    E0,
    NEAR_CANDIDATES,
    NEAR_SHINGLES,
    NewTrace,
    Stored,
    as_code,
    check_new_trace,
    read_state,
    unique_primes,
    write_state,
)
from sentient_core.memory.writer import Change, Writer
from sentient_core.store import content, traces
from sentient_core.store.records import TraceRecord
from sentient_core.store.txn import Txn
from sentient_kernels import holographic
from sentient_kernels.lexical import TermCounts

__all__ = ["Prepared", "check_near", "prepare", "store_batch", "store_unique", "unit_rows"]


class Prepared(msgspec.Struct, frozen=True):
    """Items checked and encoded, ready to store: records, unit codes and terms, the
    encoder stamp to write (if any), when already computed, the texts' content
    digests, and whether every record field was checked already (``checked``: then
    they are encoded without a validating decode). Made outside the transaction
    (:func:`prepare`, :func:`sentient_core.memory.columns.prepare`)."""

    records: list[TraceRecord]
    codes: np.ndarray
    terms: TermCounts
    stamp: TextEncoder | None
    digests: list[bytes] | None = None
    checked: bool = False


def prepare(w: Writer, items: Sequence[NewTrace]) -> Prepared:
    """Check the items; compute missing codes and primes in one encoder call."""
    items = list(items)
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
    unit_rows(codes)
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
    return Prepared(records, codes, mem_terms.count([it.text for it in items]), stamp)


def unit_rows(codes: np.ndarray) -> None:
    """Scale the nonzero rows of ``codes`` (float32) to unit L2 norm, in place.

    Unit rows let recall skip the row norms (topk_cosine normalized=True).
    """
    norms = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
    nonzero = norms > 0
    codes[nonzero] = (codes[nonzero] / norms[nonzero, None]).astype(np.float32)


def _append(
    w: Writer,
    txn: Txn,
    prepared: Prepared,
    keep: list[int],
    digests: Sequence[bytes] | None = None,
) -> tuple[list[TraceRecord], Change]:
    """Append the records of ``prepared`` at positions ``keep`` in ``txn``, with their terms
    (``digests``: their content digests when the caller computed them already).

    Returns the stored records and the in-RAM update they owe after the commit.
    """
    records = [prepared.records[i] for i in keep]
    if not records:
        return [], Change()
    state = None
    if prepared.stamp is not None:
        stamp = prepared.stamp
        state = msgspec.structs.replace(
            read_state(txn), encoder=stamp.name, encoder_fingerprint=stamp.fingerprint
        )
        write_state(txn, state)
    codes = prepared.codes[keep]
    stored = traces.append(txn, records, codes, digests=digests, checked=prepared.checked)
    # Their terms, in the same transaction (the lexical index is built from them).
    counts = mem_terms.select(prepared.terms, keep)
    mem_terms.write(txn, [r.id for r in stored], counts)
    return stored, Change(stored=stored, codes=codes, counts=counts, state=state)


def store_batch(w: Writer, txn: Txn, prepared: Prepared) -> tuple[list[TraceRecord], Change]:
    """Store every prepared item in ``txn`` (see :meth:`HolographicMemory.store_batch`)."""
    return _append(w, txn, prepared, list(range(len(prepared.records))), prepared.digests)


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


def check_near(near: object) -> None:
    """``near`` is None or a threshold in (0, 1] (else ArgumentError)."""
    if near is not None and (
        isinstance(near, bool) or not isinstance(near, (int, float)) or not 0.0 < near <= 1.0
    ):
        raise ArgumentError(f"near must be in (0, 1] or None, got {near!r}")


def _close(
    w: Writer, prepared: Prepared, near: float | None
) -> tuple[dict[int, tuple[int, float]], dict[int, list[int]]]:
    """Near-duplicate candidates over the mirror: per item, the active trace within
    ``near`` cosine (and the cosine), else its nearest traces for the shingle check."""
    close: dict[int, tuple[int, float]] = {}
    nearby: dict[int, list[int]] = {}
    m = w.mirror
    if near is None or not m.n:
        return close, nearby
    rows, scores = holographic.topk_cosine_batch(
        m.codes[: m.n], prepared.codes, NEAR_CANDIDATES, normalized=True, valid=m.valid[: m.n]
    )
    for i in range(len(prepared.records)):
        if not (rows[i].size and prepared.codes[i].any()):
            continue
        if scores[i][0] >= near:
            close[i] = (int(m.row_id[rows[i][0]]), float(scores[i][0]))
        else:
            nearby[i] = [int(t) for t in m.row_id[rows[i]].tolist()]
    return close, nearby


_TOKEN = re.compile(r"\S+")
_DIGIT = re.compile(r"\d")
MAX_REVISED_RUN = 3
"""Longest run of tokens replaced in place that still reads as a revised value."""


def revises(old: str, new: str) -> bool:
    """Whether ``new`` replaces a value of ``old`` in place: a short run of tokens with a
    digit swapped for another such run (``7.88.1-10+deb12u11`` → ``…deb12u31``), not
    text added or cut at either end (a chunk boundary moved)."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "replace" or i2 - i1 > MAX_REVISED_RUN or j2 - j1 > MAX_REVISED_RUN:
            continue
        if any(_DIGIT.search(t) for t in a[i1:i2]) and any(_DIGIT.search(t) for t in b[j1:j2]):
            return True
    return False


def store_unique(
    w: Writer,
    txn: Txn,
    prepared: Prepared,
    near: float | None,
    not_a_use: Callable[[int, int], bool] | None = None,
) -> tuple[list[Stored], Change]:
    """Store the prepared items memory does not hold yet, in ``txn`` (see
    :meth:`HolographicMemory.store_unique`); the outcomes and the in-RAM update owed."""
    records = prepared.records
    if not records:
        return [], Change()
    close, nearby = _close(w, prepared, near)
    now = float(w.clock())
    # Each item: new, or the active trace already holding it (whose use count goes up).
    plan: list[tuple[int, str]] = []  # (holder id, or -1 new, or -2-j same as item j)
    first: dict[bytes, int] = {}
    holders: dict[int, TraceRecord] = {}
    used: set[int] = set()
    keys = prepared.digests
    if keys is None:
        keys = [content.digest(r.text) for r in records]
    for i, rec_i in enumerate(records):
        key = keys[i]
        tid = content.lookup(txn, key)
        if tid is None and i not in close and i not in nearby:
            # New content (most chunks): nothing to explain or look up.
            if key in first:
                plan.append((-2 - first[key], "repeated in this batch"))
            else:
                first[key] = i
                plan.append((-1, ""))
            continue
        why = f"same content as trace {tid}"
        if tid is None and i in close:
            tid, cos = close[i]
            why = f"near-duplicate of trace {tid} (code cosine {cos:.3f})"
        elif tid is None and i in nearby:
            tid, shared = _most_shared(txn, rec_i.text, nearby[i])
            why = f"near-duplicate of trace {tid} (shares {shared:.2f} of its 5-word shingles)"
        rec = None if tid is None else (holders.get(tid) or traces.get(txn, tid))
        if rec is not None and why.startswith("near") and revises(rec.text, rec_i.text):
            rec = None  # a revision of that trace's values: new, not a copy
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
    keep = [i for i, (tid, _) in enumerate(plan) if tid == -1]
    stored, change = _append(w, txn, prepared, keep, [keys[i] for i in keep])
    new_by_item = dict(zip(keep, stored, strict=True))
    out: list[Stored] = []
    for i, (tid, why) in enumerate(plan):
        if tid == -1:
            out.append(Stored(record=new_by_item[i], new=True))
        elif tid <= -2:
            out.append(Stored(record=new_by_item[-2 - tid], new=False, reason=why))
        else:
            out.append(Stored(record=holders[tid], new=False, reason=why))
    return out, change
