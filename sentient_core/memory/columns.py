"""Many traces prepared from columns: one check per column instead of one per field per item.

Integration hands memory hundreds of chunks at a time, with everything about
them already computed in a few kernel calls (codes, SMF orientations, dominant
primes, terms, content digests; :mod:`sentient_core.integrate.pipeline`).
:func:`prepare` checks each column once (shapes, finiteness, bounds) and makes
the same :class:`~sentient_core.memory.storing.Prepared` that
:func:`~sentient_core.memory.storing.prepare` makes from one
:class:`~sentient_core.memory.types.NewTrace` per item with the same values, so
what is stored is the same (``tests/test_integrate_batch.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.memory.storing import Prepared, unit_rows
from sentient_core.store.records import MAX_PRIME, SMF_AXES, TraceRecord
from sentient_kernels.lexical import TermCounts

__all__ = ["TraceColumns", "prepare"]


class TraceColumns(msgspec.Struct, frozen=True, kw_only=True):
    """``n`` new traces by column (what :class:`NewTrace` holds per item, plus terms and digests).

    Attributes
    ----------
    texts : list of str
    codes : ndarray (n, code_dim)
        Their holograms (stored L2-normalised, as ``NewTrace.code``).
    smf : ndarray (n, 16) float64
        SMF orientation of each.
    primes : list of tuple of int
        Dominant primes of each (each ≥ 2, distinct).
    sources, topics : list of str
    tags, keywords : list of tuple of str
    kind : str
    importance : float
    terms : TermCounts
        The texts' terms (:func:`sentient_core.memory.terms.count` of ``texts``).
    digests : list of bytes
        Their content digests (:func:`sentient_core.store.content.digests`).
    """

    texts: list[str]
    codes: np.ndarray
    smf: np.ndarray
    primes: list[tuple[int, ...]]
    sources: list[str]
    tags: list[tuple[str, ...]]
    topics: list[str]
    keywords: list[tuple[str, ...]]
    kind: str
    importance: float
    terms: TermCounts
    digests: list[bytes]


def _only(values: Iterable[object], kind: type) -> bool:
    """Whether every value is exactly of type ``kind`` (not a subclass: no bool for int)."""
    return set(map(type, values)) <= {kind}


def prepare(code_dim: int, now: float, cols: TraceColumns) -> Prepared:
    """Check ``cols`` column by column and make the records to store (created at ``now``)."""
    n = len(cols.texts)
    for name in ("primes", "sources", "tags", "topics", "keywords", "digests"):
        if len(getattr(cols, name)) != n:
            raise ArgumentError(f"{name} holds {len(getattr(cols, name))} values for {n} texts")
    # Types by set(map(type, ...)): the loop runs in C (a generator per item cost
    # more than the rest of the checks together).
    for name in ("texts", "sources", "topics"):
        if not _only(getattr(cols, name), str):
            raise ArgumentTypeError(f"{name} must be str")
    for name in ("tags", "keywords"):
        groups = getattr(cols, name)
        if not (_only(groups, tuple) and _only(chain.from_iterable(groups), str)):
            raise ArgumentTypeError(f"{name} must be tuples of str")
    if not 0.0 <= now <= 1e11:
        raise ArgumentError(f"now must be Unix seconds, got {now!r}")
    if not isinstance(cols.kind, str) or not cols.kind:
        raise ArgumentError("kind must be a non-empty string")
    imp = cols.importance
    if isinstance(imp, bool) or not isinstance(imp, (int, float)) or not 0.0 <= imp <= 1.0:
        raise ArgumentError(f"importance must be in [0, 1], got {imp!r}")
    codes = np.asarray(cols.codes)
    if codes.dtype.kind not in "fiu" or codes.shape != (n, code_dim):
        raise ArgumentError(f"codes must be a float array of shape ({n}, {code_dim})")
    codes = codes.astype(np.float32)  # a copy: normalised in place below
    field = np.asarray(cols.smf, dtype=np.float64)
    if field.shape != (n, SMF_AXES) or not np.isfinite(field).all():
        raise ArgumentError(f"smf must be {n} rows of {SMF_AXES} finite floats")
    if not np.isfinite(codes).all():
        raise ArgumentError("codes contain non-finite values (NaN or inf)")
    flat = list(chain.from_iterable(cols.primes)) if _only(cols.primes, tuple) else None
    if flat is None or not (
        _only(flat, int) and (not flat or (min(flat) >= 2 and max(flat) <= MAX_PRIME))
    ):
        raise ArgumentError(f"primes must be tuples of integers in [2, {MAX_PRIME}]")
    offsets = cols.terms.offsets
    if offsets.shape != (n + 1,) or cols.terms.lengths.shape != (n,):
        raise ArgumentError(f"terms must be the terms of {n} texts")
    unit_rows(codes)
    importance = float(imp)
    fields = [tuple(row) for row in field.tolist()]
    records = [
        TraceRecord(
            id=0,
            row=0,
            created=now,
            last_access=now,
            importance=importance,
            kind=cols.kind,
            source=cols.sources[i],
            text=cols.texts[i],
            topic=cols.topics[i],
            keywords=cols.keywords[i],
            tags=cols.tags[i],
            smf=fields[i],
            primes=tuple(dict.fromkeys(cols.primes[i])),
        )
        for i in range(n)
    ]
    # Every field was checked above, column by column: the records are encoded
    # without decoding each one back to validate it (``checked``).
    return Prepared(records, codes, cols.terms, None, list(cols.digests), checked=True)
