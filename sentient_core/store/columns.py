"""The columns of the trace records that the memory mirror needs, decoded in bulk.

Loading a mirror of a million traces must not build a million
:class:`~sentient_core.store.records.TraceRecord` objects: :func:`iter_chunks`
decodes only ``id``, ``row``, ``created``, ``last_access``, ``strength``,
``importance``, ``retired``, the SMF orientation and the dominant primes of
each stored record (the text is skipped), a chunk of records at a time, into
numpy columns (:class:`TraceColumns`).

The SMF tuple (16 msgpack doubles) is parsed vectorised from its raw bytes
when it has the plain layout this package writes; anything else falls back to
msgspec, which also reports malformed data as
:class:`~sentient_core.store.errors.CorruptRecordError`. The primes of a
version 2 record are little-endian uint16 bytes: one ``np.frombuffer`` of all
of them joined. A version 1 record's array of ints (a store not yet upgraded,
see :func:`sentient_core.store.traces.upgrade`) is decoded by msgspec, slower.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from sentient_core.store.errors import CorruptRecordError
from sentient_core.store.records import SMF_AXES, TRACES, TraceRecord, unpack_primes

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["CHUNK", "ScorerColumns", "TraceColumns", "iter_chunks", "scorer_columns"]

CHUNK = 65536
"""Trace records decoded per step (bounds the transient memory of a load)."""


class _ColumnFields(msgspec.Struct, kw_only=True):
    """The part of a stored TraceRecord the columns need (the text is skipped)."""

    v: int
    id: int
    row: int
    created: float
    last_access: float
    strength: float
    importance: float
    smf: msgspec.Raw
    primes: bytes | tuple[int, ...]  # uint16 bytes (version 2), ints (version 1)
    retired: bool


_FIELDS_DECODER = msgspec.msgpack.Decoder(_ColumnFields)
_SMF_DECODER = msgspec.msgpack.Decoder(tuple[float, ...])
# msgpack of a 16-tuple of floats: array16 header (dc 00 10), then 16 × (cb + 8-byte BE double).
_SMF_RAW_LEN = 3 + 9 * SMF_AXES


class TraceColumns:
    """Mirror fields of a set of traces as arrays (one entry per trace, id order).

    Attributes
    ----------
    ids, rows : ndarray of int64
    created, last_access, strength, importance : ndarray of float64
    retired : ndarray of bool
    smf : ndarray (n, 16) float64
    prime_counts : ndarray of int64
        Number of dominant primes of each trace, in stored order.
    primes : ndarray of int64
        All traces' primes concatenated (``prime_counts`` says where each ends).
    """

    __slots__ = (
        "created",
        "ids",
        "importance",
        "last_access",
        "prime_counts",
        "primes",
        "retired",
        "rows",
        "smf",
        "strength",
    )

    def __init__(
        self,
        recs: Sequence[TraceRecord] | Sequence[_ColumnFields],
        smf: np.ndarray,
        prime_counts: np.ndarray,
        primes: np.ndarray,
    ) -> None:
        def col(name: str, dtype: type) -> np.ndarray:
            return _column(recs, name, dtype)

        self.ids = col("id", np.int64)
        self.rows = col("row", np.int64)
        self.created = col("created", np.float64)
        self.last_access = col("last_access", np.float64)
        self.strength = col("strength", np.float64)
        self.importance = col("importance", np.float64)
        self.retired = col("retired", np.bool_)
        self.smf = smf
        self.prime_counts = prime_counts
        self.primes = primes

    @classmethod
    def of_arrays(cls, **arrays: np.ndarray) -> TraceColumns:
        """Columns given as arrays, one keyword per attribute (every one of them)."""
        missing = set(cls.__slots__) - set(arrays)
        if missing or set(arrays) - set(cls.__slots__):
            raise TypeError(f"of_arrays needs exactly {sorted(cls.__slots__)}")
        cols = cls.__new__(cls)
        for name, value in arrays.items():
            setattr(cols, name, value)
        return cols

    @classmethod
    def of_records(cls, recs: Sequence[TraceRecord]) -> TraceColumns:
        """Columns of decoded records."""
        n = len(recs)
        smf = np.array([r.smf for r in recs], dtype=np.float64).reshape(n, SMF_AXES)
        counts = np.fromiter((len(r.primes) for r in recs), dtype=np.int64, count=n)
        flat = np.fromiter(
            chain.from_iterable(r.primes for r in recs), dtype=np.int64, count=int(counts.sum())
        )
        return cls(recs, smf, counts, flat)

    @classmethod
    def of_raw(cls, values: Sequence[bytes | memoryview], where: str) -> TraceColumns:
        """Columns of stored trace values (bytes or memoryviews)."""
        recs = _decode_batch(_FIELDS_DECODER, values, where)
        counts, flat = _primes_of(recs, values, where)
        return cls(recs, _smf_from_raw([r.smf for r in recs]), counts, flat)


def _column(recs: Sequence[Any], name: str, dtype: type) -> np.ndarray:
    return np.fromiter(map(attrgetter(name), recs), dtype=dtype, count=len(recs))


def _decode_batch(decoder: Any, values: Sequence[bytes | memoryview], where: str) -> list[Any]:
    """Partial records of stored trace values; a bad one is named by the store's codec
    (SchemaVersionError for a newer record, CorruptRecordError otherwise)."""
    try:
        recs = [decoder.decode(v) for v in values]
    except (msgspec.ValidationError, msgspec.DecodeError):
        for v in values:  # find the bad one and let the codec name the problem
            TRACES.decode(v, where=where)
        raise
    bad = next((r for r in recs if r.v not in TRACES.readable), None)
    if bad is not None:
        TRACES.decode(values[recs.index(bad)], where=f"{where}/{bad.id}")
    return recs


def iter_chunks(txn: Txn, chunk: int = CHUNK) -> Iterator[TraceColumns]:
    """All traces of the store as :class:`TraceColumns`, ``chunk`` records at a time."""
    where = f"{txn.store.path} traces"
    values = txn.cursor("traces").iternext(keys=False)
    while True:
        batch = list(islice(values, chunk))
        if not batch:
            return
        yield TraceColumns.of_raw(batch, where)


def _primes_of(
    recs: Sequence[_ColumnFields], values: Sequence[bytes | memoryview], where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Counts (n,) and concatenated primes of n partial records; a record with bad
    primes (odd byte length, a value below 2) is named by the store's codec."""
    stored = [r.primes for r in recs]
    n = len(stored)
    try:
        joined = b"".join(stored)  # type: ignore[arg-type]  # a TypeError on a version 1 tuple
    except TypeError:
        return _mixed_primes(recs, values, where)
    nbytes = np.fromiter(map(len, stored), dtype=np.int64, count=n)
    odd = np.flatnonzero(nbytes & 1)
    if odd.size:
        _reject(recs, values, int(odd[0]), where)
    counts = nbytes >> 1
    flat = np.frombuffer(joined, dtype="<u2").astype(np.int64)
    _check_low(recs, values, counts, flat, where)
    return counts, flat


def _mixed_primes(
    recs: Sequence[_ColumnFields], values: Sequence[bytes | memoryview], where: str
) -> tuple[np.ndarray, np.ndarray]:
    # Version 1 records among them: per record (msgspec already made their tuples).
    parts: list[tuple[int, ...]] = []
    for i, r in enumerate(recs):
        if isinstance(r.primes, tuple):
            parts.append(r.primes)
            continue
        try:
            parts.append(unpack_primes(r.primes))
        except ValueError:
            _reject(recs, values, i, where)
    counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    flat = np.fromiter(chain.from_iterable(parts), dtype=np.int64, count=int(counts.sum()))
    _check_low(recs, values, counts, flat, where)
    return counts, flat


def _check_low(
    recs: Sequence[_ColumnFields],
    values: Sequence[bytes | memoryview],
    counts: np.ndarray,
    flat: np.ndarray,
    where: str,
) -> None:
    low = np.flatnonzero(flat < 2)
    if low.size:
        _reject(recs, values, int(np.searchsorted(np.cumsum(counts), low[0], side="right")), where)


def _reject(
    recs: Sequence[_ColumnFields], values: Sequence[bytes | memoryview], i: int, where: str
) -> None:
    TRACES.decode(values[i], where=f"{where}/{recs[i].id}")  # raises, naming the problem
    raise CorruptRecordError(f"trace {recs[i].id} in {where} has bad primes")


def _smf_from_raw(raws: list[msgspec.Raw]) -> np.ndarray:
    """(n, 16) float64 from the raw msgpack of n SMF tuples, vectorised when possible."""
    n = len(raws)
    if n == 0:
        return np.zeros((0, SMF_AXES))
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    if buf.size == n * _SMF_RAW_LEN:
        mat = buf.reshape(n, _SMF_RAW_LEN)
        tags = mat[:, 3::9]
        if (
            (mat[:, 0] == 0xDC).all()
            and (mat[:, 1] == 0).all()
            and (mat[:, 2] == SMF_AXES).all()
            and (tags == 0xCB).all()
        ):
            payload = np.ascontiguousarray(mat[:, 3:].reshape(n, SMF_AXES, 9)[:, :, 1:])
            return payload.view(">f8").reshape(n, SMF_AXES).astype(np.float64)
    # Some tuple is not 16 plain doubles (e.g. ints written by other code): decode one by one.
    return np.array([_SMF_DECODER.decode(r) for r in raws], dtype=np.float64).reshape(n, SMF_AXES)


class _ScorerFields(msgspec.Struct, kw_only=True):
    """The part of a stored TraceRecord the recall scorer's factors need (the text is
    kept raw: only whether it is blank matters)."""

    v: int
    id: int
    row: int
    last_access: float
    use_count: int = 0
    success_count: int = 0
    failure_count: int = 0
    strength: float = 1.0
    importance: float = 0.5
    source: str = ""
    text: msgspec.Raw
    retired: bool = False


_SCORER_DECODER = msgspec.msgpack.Decoder(_ScorerFields)
_STR_DECODER = msgspec.msgpack.Decoder(str)
# Longer msgpack strings are never blank in practice; they are checked anyway when short.
_BLANK_CHECK_BYTES = 64


class ScorerColumns:
    """The recall scorer's per-trace inputs as arrays (one entry per trace, id order).

    Attributes
    ----------
    ids, rows, use_count, success_count, failure_count : ndarray of int64
    last_access, strength, importance : ndarray of float64
    retired, blank : ndarray of bool
        ``blank``: the text is empty or whitespace.
    source_ids : ndarray of int64
        Each trace's source as an index into ``source_names``.
    source_names : list of str
        The distinct sources (a trace's source is ``source_names[source_ids[i]]``).
    """

    __slots__ = (
        "blank",
        "failure_count",
        "ids",
        "importance",
        "last_access",
        "retired",
        "rows",
        "source_ids",
        "source_names",
        "strength",
        "success_count",
        "use_count",
    )

    def __init__(self, recs: Sequence[_ScorerFields] | Sequence[TraceRecord]) -> None:
        n = len(recs)

        def col(name: str, dtype: type) -> np.ndarray:
            return _column(recs, name, dtype)

        self.ids = col("id", np.int64)
        self.rows = col("row", np.int64)
        self.last_access = col("last_access", np.float64)
        self.use_count = col("use_count", np.int64)
        self.success_count = col("success_count", np.int64)
        self.failure_count = col("failure_count", np.int64)
        self.strength = col("strength", np.float64)
        self.importance = col("importance", np.float64)
        self.retired = col("retired", np.bool_)
        index: dict[str, int] = {}
        self.source_ids = np.fromiter(
            (index.setdefault(r.source, len(index)) for r in recs), dtype=np.int64, count=n
        )
        self.source_names = list(index)
        self.blank = np.fromiter((_blank(r.text) for r in recs), dtype=np.bool_, count=n)

    @property
    def sources(self) -> list[str]:
        """Each trace's source (a list of n strings: for tests and small stores)."""
        names = self.source_names
        return [names[i] for i in self.source_ids.tolist()]

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @classmethod
    def of_arrays(cls, source_names: list[str], **arrays: np.ndarray) -> ScorerColumns:
        """Columns from ready arrays (every slot but ``source_names`` by keyword)."""
        out = cls([])
        for name, value in arrays.items():
            setattr(out, name, value)
        out.source_names = source_names
        return out

    def take(self, index: slice | np.ndarray) -> ScorerColumns:
        """The entries at ``index`` (a slice gives views; id order is kept for a slice or
        an increasing index array). The source names are shared."""
        out = ScorerColumns([])
        for name in self.__slots__:
            if name != "source_names":
                setattr(out, name, getattr(self, name)[index])
        out.source_names = self.source_names
        return out

    @classmethod
    def concat(cls, parts: Sequence[ScorerColumns]) -> ScorerColumns:
        """One set of columns from several (in order)."""
        out = cls([])
        index: dict[str, int] = {}
        ids = []
        for p in parts:
            remap = np.array(
                [index.setdefault(name, len(index)) for name in p.source_names], dtype=np.int64
            )
            ids.append(remap[p.source_ids] if p.source_ids.size else p.source_ids)
        out.source_names = list(index)
        for name in cls.__slots__:
            if name == "source_ids":
                out.source_ids = np.concatenate(ids) if ids else out.source_ids
            elif name != "source_names" and parts:
                setattr(out, name, np.concatenate([getattr(p, name) for p in parts]))
        return out


def _blank(text: msgspec.Raw | str) -> bool:
    if isinstance(text, str):
        return not text.strip()
    raw = bytes(text)
    return len(raw) <= _BLANK_CHECK_BYTES and not _STR_DECODER.decode(raw).strip()


def scorer_columns(txn: Txn, chunk: int = CHUNK) -> ScorerColumns:
    """:class:`ScorerColumns` of every stored trace (retired ones too), decoded in chunks.

    Raises
    ------
    CorruptRecordError, SchemaVersionError
        A record that is not a valid trace of this schema (named by the store's codec).
    """
    where = f"{txn.store.path} traces"
    values = txn.cursor("traces").iternext(keys=False)
    parts: list[ScorerColumns] = []
    while True:
        batch = list(islice(values, chunk))
        if not batch:
            return ScorerColumns.concat(parts)
        recs = _decode_batch(_SCORER_DECODER, batch, where)
        # Within the transaction: the raw texts point into its buffers.
        parts.append(ScorerColumns(recs))
