"""Records kept in the store: msgspec Structs with an explicit schema version.

Every record type carries a field ``v`` (its schema version: 1, or 2 for trace
records). Decoding goes through a :class:`RecordCodec`, which rejects a record
written by a newer/unknown schema with :class:`SchemaVersionError` (even when
that newer schema has fields this code has never heard of) and any other bad
record (wrong type, out of bounds, unknown field) with :class:`CorruptRecordError`.
A codec may also read older versions of its record; it writes only its own.

Trace records
-------------
Version 2 stores a trace's dominant primes as one msgpack ``bin`` of
little-endian uint16 (:func:`pack_primes`), so loading a memory reads them with
one ``np.frombuffer`` (:mod:`sentient_core.store.columns`). Version 1 stored
them as a msgpack array of ints: it is still read (its primes come out the
same), and :func:`sentient_core.store.traces.upgrade` rewrites a store's
version 1 records once (the first writable open of a
:class:`~sentient_core.core.Core`); any record written, e.g. by a touch, is
version 2. A prime must therefore be at most :data:`MAX_PRIME`; the default
oscillator bank's largest is 311 (the 64th prime).

msgspec does not check ``Meta`` bounds when a Struct is constructed, only when
it is decoded, so :meth:`RecordCodec.encode` decodes what it encoded (unless
``validate=False``): an out-of-bounds record never reaches the disk.

Keys are fixed-width big-endian integers so that LMDB's byte order is numeric
order: a cursor over ``traces`` visits ids in increasing order.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeAlias, TypeVar

import msgspec

from sentient_core.errors import ArgumentTypeError
from sentient_core.store.errors import CorruptRecordError, NotAStoreError, SchemaVersionError

__all__ = [
    "BLOCK_ROWS",
    "COUNTERS",
    "FORMAT_NAME",
    "LINKS",
    "MAX_PRIME",
    "META_DECODER",
    "META_KEY",
    "META_PEEK",
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "SMF_AXES",
    "TRACES",
    "TRACE_VERSION",
    "Counters",
    "LinkRecord",
    "NonNegInt",
    "PrimeTuple",
    "RecordCodec",
    "StoreMeta",
    "TraceRecord",
    "UnixTime",
    "decode_meta",
    "encode_meta",
    "key_u64",
    "link_key",
    "pack_primes",
    "primes_hook",
    "split_link_key",
    "u64_key",
    "unpack_primes",
]

FORMAT_NAME = "sentient-core"
"""Value of :attr:`StoreMeta.format`; anything else means "not a store"."""

META_KEY = b"store"
"""Key of the :class:`StoreMeta` header in ``meta``."""

SCHEMA_VERSION = 3
"""Store layout version written at creation and understood by this code: 2 keeps the
code rows in a flat file beside ``data.mdb`` (:mod:`sentient_core.store.codefile`); 3
also marks the column blocks written below the mirror's column checkpoint
(:mod:`sentient_core.store.colfile`), so that an open maps the checkpoint."""

READABLE_SCHEMA_VERSIONS = (1, 2, 3)
"""Layouts this code opens: 1 (codes in the ``codes`` sub-database) and 2 (no column
checkpoint) are read as they are when opened read-only and migrated to 3 at their first
writable open."""

SMF_AXES = 16
"""Number of SMF components kept with each trace."""

BLOCK_ROWS = 1024
"""Default code rows per LMDB value for a new store (each store records its own)."""

_U64 = struct.Struct(">Q")
_U64_PAIR = struct.Struct(">QQ")

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
Version = Annotated[int, msgspec.Meta(ge=1)]
# Finite and after 1970; 1e11 s is the year 5138, i.e. "not infinity".
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]

MAX_PRIME = 0xFFFF
"""Largest prime a trace record can hold (version 2 stores primes as uint16)."""

TRACE_VERSION = 2
"""Schema version of the trace records this code writes (it also reads version 1)."""


class PrimeTuple(tuple[int, ...]):
    """A decoded trace's dominant primes: a tuple of int (equal to the plain tuple).

    msgspec hands a field of this type to the trace codec's decode hook
    (:func:`primes_hook`), which reads both stored forms (uint16 bytes of
    version 2, the int array of version 1) and checks them. Statically the field
    is a ``tuple[int, ...]``: a record built in Python may hold a plain tuple.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return tuple.__repr__(self)


if TYPE_CHECKING:
    Primes: TypeAlias = tuple[int, ...]
else:
    Primes = PrimeTuple


class StoreMeta(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The store header, written once when the store is created.

    Attributes
    ----------
    format : str
        Always :data:`FORMAT_NAME`.
    schema_version : int
        Layout version (:data:`SCHEMA_VERSION` for stores written by this code).
    code_dim : int
        Length of every code row (float32 components).
    block_rows : int
        Rows per code block (see :mod:`sentient_core.store.codes`).
    created : float
        Creation time, unix seconds.
    """

    format: str
    schema_version: Version
    code_dim: Annotated[int, msgspec.Meta(ge=1, le=1 << 16)]
    block_rows: Annotated[int, msgspec.Meta(ge=1, le=1 << 20)]
    created: UnixTime


class Counters(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Counters kept in ``meta``, updated in the same transaction as the data.

    Attributes
    ----------
    v : int
        Record schema version.
    next_id : int
        Id the next trace will get (ids are never reused).
    trace_count : int
        Number of trace records.
    row_count : int
        Number of code rows.
    """

    v: Version = 1
    next_id: NonNegInt = 0
    trace_count: NonNegInt = 0
    row_count: NonNegInt = 0


_E0 = (1.0,) + (0.0,) * (SMF_AXES - 1)


class TraceRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One memory trace. Its code (hologram) is row ``row`` of the code blocks.

    Attributes
    ----------
    v : int
        Record schema version (2; 1 for a record read from an older store).
    id : int
        Trace id, assigned by :func:`sentient_core.store.traces.append`, never reused.
    row : int
        Index of the trace's code row.
    created, last_access : float
        Unix seconds.
    use_count : int
        Times recalled (bumped by recall).
    success_count, failure_count : int
        Efficacy counters (changed only by judged outcomes, SPEC §5).
    strength : float
        Memory credit in [0.05, 1.5].
    importance : float
        In [0, 1].
    kind : str
        Origin class, e.g. ``"learned"``, ``"observed"``, ``"user"``.
    source : str
        Where the text came from (path, URL, ...).
    text, topic : str
        The content and a short topic label.
    keywords, tags : tuple of str
    smf : tuple of 16 float
        SMF orientation when the trace was stored.
    primes : tuple of int
        The dominant primes of the text, each in [2, :data:`MAX_PRIME`] (stored as
        little-endian uint16 bytes; a decoded record holds a :class:`PrimeTuple`).
    retired : bool
        Retired traces stay (their rows stay valid) but are not recalled.
    """

    v: Version = TRACE_VERSION
    id: NonNegInt
    row: NonNegInt
    created: UnixTime
    last_access: UnixTime
    use_count: NonNegInt = 0
    success_count: NonNegInt = 0
    failure_count: NonNegInt = 0
    strength: Annotated[float, msgspec.Meta(ge=0.05, le=1.5)] = 1.0
    importance: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5
    kind: Annotated[str, msgspec.Meta(min_length=1)] = "observed"
    source: str = ""
    text: str = ""
    topic: str = ""
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    smf: Annotated[tuple[float, ...], msgspec.Meta(min_length=SMF_AXES, max_length=SMF_AXES)] = _E0
    primes: Primes = ()
    retired: bool = False


class LinkRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A directed, weighted link between two traces (the entanglement graph).

    Attributes
    ----------
    v : int
        Record schema version (1).
    src, dst : int
        Trace ids.
    weight : float
        Non-negative link strength.
    created : float
        Unix seconds.
    """

    v: Version = 1
    src: NonNegInt
    dst: NonNegInt
    weight: Annotated[float, msgspec.Meta(ge=0.0)]
    created: UnixTime


class _VersionPeek(msgspec.Struct):
    """Reads only ``v`` (unknown fields ignored) to tell "newer" from "corrupt"."""

    v: int = 1


class _MetaPeek(msgspec.Struct):
    format: object = None
    schema_version: object = None


S = TypeVar("S", bound=msgspec.Struct)

_ENCODER = msgspec.msgpack.Encoder()
_PEEK = msgspec.msgpack.Decoder(_VersionPeek)
META_PEEK = msgspec.msgpack.Decoder(_MetaPeek)
"""Reads only ``format`` and ``schema_version`` of a header of any version."""


class RecordCodec(Generic[S]):
    """Encoder/decoder for one versioned record type.

    Parameters
    ----------
    type_ : type
        A msgspec Struct with a ``v`` field.
    version : int
        The record version this code writes (and reads).
    name : str
        Record name used in error messages.
    reads : tuple of int
        Older versions it also reads; :meth:`encode` writes such a record as
        ``version``.
    dec_hook : callable, optional
        msgspec decode hook for custom field types of ``type_``.
    to_wire : callable, optional
        Maps a record to what is encoded (e.g. a field in its stored form); may
        raise :class:`CorruptRecordError` for a value that has no stored form.

    Notes
    -----
    Higher layers define their own record types (observer state, scorer
    snapshots, ...) and build one module-level codec per type with this class.
    """

    __slots__ = ("_decoder", "_to_wire", "name", "readable", "type", "version")

    def __init__(
        self,
        type_: type[S],
        version: int,
        name: str,
        *,
        reads: tuple[int, ...] = (),
        dec_hook: Callable[[type, Any], Any] | None = None,
        to_wire: Callable[[S], S] | None = None,
    ) -> None:
        self.type = type_
        self.version = version
        self.readable = frozenset((version, *reads))
        self.name = name
        self._decoder = msgspec.msgpack.Decoder(type_, dec_hook=dec_hook)
        self._to_wire = to_wire

    def encode(self, record: S, *, validate: bool = True) -> bytes:
        """Encode ``record`` (as :attr:`version`); with ``validate`` check its bounds first.

        Raises
        ------
        CorruptRecordError
            If ``validate`` and the record violates a bound of its type, or a
            field has no stored form.
        """
        if type(record) is not self.type:
            raise ArgumentTypeError(f"expected a {self.type.__name__}, got {type(record).__name__}")
        v = record.v  # type: ignore[attr-defined]
        if v not in self.readable:
            raise SchemaVersionError(
                f"refusing to write {self.name} with schema version {v}"
                f"; this sentient-core writes version {self.version}"
            )
        if v != self.version:
            record = msgspec.structs.replace(record, v=self.version)
        if self._to_wire is not None:
            record = self._to_wire(record)
        buf = _ENCODER.encode(record)
        if validate:
            try:
                self._decoder.decode(buf)
            except msgspec.ValidationError as exc:
                raise CorruptRecordError(f"refusing to write invalid {self.name}: {exc}") from exc
        return buf

    def decode(self, buf: bytes | memoryview, *, where: str = "") -> S:
        """Decode one record, checking its schema version.

        Parameters
        ----------
        buf : bytes or memoryview
            The stored value (a memoryview is fine: the result owns its data).
        where : str
            Context for error messages (e.g. the key).

        Raises
        ------
        SchemaVersionError
            The record says it has a version this codec does not read.
        CorruptRecordError
            The bytes are not a valid record of this type.
        """
        try:
            record = self._decoder.decode(buf)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            self._check_version_of_bad(buf, where)
            raise CorruptRecordError(f"{self.name}{_at(where)} does not decode: {exc}") from exc
        if record.v not in self.readable:  # type: ignore[attr-defined]
            raise self._version_error(record.v, where)  # type: ignore[attr-defined]
        return record

    def _check_version_of_bad(self, buf: bytes | memoryview, where: str) -> None:
        # A newer schema may add fields or change types: report the version,
        # not the first validation failure it happens to cause.
        try:
            version = _PEEK.decode(buf).v
        except (msgspec.ValidationError, msgspec.DecodeError):
            return
        if version not in self.readable:
            raise self._version_error(version, where)

    def _version_error(self, version: int, where: str) -> SchemaVersionError:
        known = " and ".join(str(v) for v in sorted(self.readable))
        return SchemaVersionError(
            f"{self.name}{_at(where)} has schema version {version}; this sentient-core"
            f" understands {known}; upgrade sentient-core"
        )


def _at(where: str) -> str:
    return f" at {where}" if where else ""


def pack_primes(primes: Sequence[int]) -> bytes:
    """``primes`` in their stored form: little-endian uint16, two bytes each.

    Raises
    ------
    CorruptRecordError
        A value is not an integer in [0, :data:`MAX_PRIME`] (bounds below 2 are
        the decoder's to report).
    """
    try:
        return struct.pack(f"<{len(primes)}H", *primes)
    except (struct.error, TypeError) as exc:
        raise CorruptRecordError(
            f"refusing to write invalid trace record: primes must be integers in"
            f" [2, {MAX_PRIME}] (stored as uint16), got {tuple(primes)!r}"
        ) from exc


def unpack_primes(obj: object) -> tuple[int, ...]:
    """The primes of a stored record: uint16 bytes (version 2) or a list of int
    (version 1, and JSON), checked; ``ValueError`` names what is wrong."""
    if isinstance(obj, bytes):
        if len(obj) % 2:
            raise ValueError(f"primes: {len(obj)} bytes is not a whole number of uint16 values")
        values: tuple[int, ...] = struct.unpack(f"<{len(obj) // 2}H", obj)
    elif isinstance(obj, list):
        if not all(type(p) is int for p in obj):
            raise ValueError("primes must be integers")
        values = tuple(obj)
    else:
        raise ValueError(f"primes must be uint16 bytes or an array, got {type(obj).__name__}")
    if values and min(values) < 2:
        raise ValueError(f"primes must be >= 2, got {min(values)}")
    return values


def primes_hook(type_: type, obj: object) -> object:
    """msgspec decode hook for :class:`TraceRecord` (msgpack and JSON): its primes."""
    if type_ is PrimeTuple:
        return PrimeTuple(unpack_primes(obj))
    raise NotImplementedError(f"no decoding of {type_!r}")


def _trace_wire(record: TraceRecord) -> TraceRecord:
    # msgspec checks no types when a Struct is built: this copy, only ever
    # encoded, holds the bytes of its primes.
    return msgspec.structs.replace(record, primes=pack_primes(record.primes))


TRACES: RecordCodec[TraceRecord] = RecordCodec(
    TraceRecord,
    TRACE_VERSION,
    "trace record",
    reads=(1,),
    dec_hook=primes_hook,
    to_wire=_trace_wire,
)
LINKS: RecordCodec[LinkRecord] = RecordCodec(LinkRecord, 1, "link record")
COUNTERS: RecordCodec[Counters] = RecordCodec(Counters, 1, "store counters")
META_DECODER = msgspec.msgpack.Decoder(StoreMeta)


def encode_meta(meta: StoreMeta) -> bytes:
    """Encode the store header, checking its bounds.

    Raises
    ------
    CorruptRecordError
        A field is out of bounds (e.g. ``code_dim`` < 1).
    """
    buf = _ENCODER.encode(meta)
    try:
        META_DECODER.decode(buf)
    except msgspec.ValidationError as exc:
        raise CorruptRecordError(f"invalid store header: {exc}") from exc
    return buf


def u64_key(n: int) -> bytes:
    """8-byte big-endian key for a non-negative integer (cursor order = numeric order)."""
    return _U64.pack(n)


def key_u64(key: bytes | memoryview) -> int:
    """Inverse of :func:`u64_key`."""
    return _U64.unpack(key)[0]


def link_key(src: int, dst: int) -> bytes:
    """16-byte key ``src || dst``: all links out of ``src`` are one key range."""
    return _U64_PAIR.pack(src, dst)


def split_link_key(key: bytes | memoryview) -> tuple[int, int]:
    """Inverse of :func:`link_key`."""
    return _U64_PAIR.unpack(key)


def decode_meta(raw: bytes | memoryview | None, where: str) -> StoreMeta:
    """The store header in ``raw``, checked: format name, schema version, bounds.

    Raises
    ------
    NotAStoreError, SchemaVersionError, CorruptRecordError
    """
    if raw is None:
        raise NotAStoreError(f"{where} is not a sentient-core store: meta has no header record")
    try:
        peek = META_PEEK.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise NotAStoreError(f"{where} is not a sentient-core store: bad header ({exc})") from exc
    if peek.format != FORMAT_NAME:
        raise NotAStoreError(
            f"{where} is not a sentient-core store: header format is {peek.format!r}"
        )
    if peek.schema_version not in READABLE_SCHEMA_VERSIONS:
        raise SchemaVersionError(
            f"store at {where} has schema version {peek.schema_version}; this sentient-core"
            f" understands {SCHEMA_VERSION} (and reads 1 and 2); upgrade sentient-core"
        )
    try:
        return META_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptRecordError(f"store header at {where} is invalid: {exc}") from exc
