"""Typed record tables: one record type under one key prefix of one sub-database.

Higher layers keep their records (credit, debts, surprise events, ...) in the
store through a table each instead of hand-writing get/put/iterate over a key
prefix. A table is built from the sub-database, the key prefix
(:mod:`sentient_core.store.keyspace`), the record's :class:`RecordCodec` and
how a record is keyed:

:class:`IdTable`
    ``prefix + u64(record.<field>)``: an integer id; a cursor visits records in
    numeric order, and ids can be handed out in sequence (:meth:`IdTable.next_id`).
:class:`NameTable`
    ``prefix + digest(record.<f1>) + digest(record.<f2>) ...`` (16-byte BLAKE2b
    each): text names; the records sharing leading names are one key range.

Values are the codec's msgpack bytes. Every read checks that the record sits
under its own key, so a record copied under a wrong key is a
:class:`CorruptRecordError`, not a silent alias.

Owners :func:`register` their tables; :func:`sentient_core.store.check_integrity`
decodes every record of every registered table, checks the traces it names and
runs the owner's own checks. (The store cannot import the layers above it, so
it learns their tables this way.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import msgspec

from sentient_core.errors import ArgumentError
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.keyspace import iter_prefix, last_number, name_digest, number_key
from sentient_core.store.records import RecordCodec, key_u64

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = ["IdTable", "NameTable", "RecordTable", "Registered", "register", "registered"]

T = TypeVar("T", bound=msgspec.Struct)

_LAST = (1 << 64) - 1


class RecordTable(Generic[T]):
    """Records of one type under ``prefix`` in sub-database ``db`` (see the module docstring).

    Parameters
    ----------
    db : str
        The sub-database.
    prefix : bytes
        The key prefix this table owns (``b""``: the whole sub-database).
    codec : RecordCodec
        Encodes and decodes the records (its name is the one errors give).
    label : str
        Where a record is, in error messages: ``label/<id>`` or ``label/<name>/...``.
    """

    __slots__ = ("codec", "db", "label", "prefix")

    def __init__(self, db: str, prefix: bytes, codec: RecordCodec[T], *, label: str) -> None:
        self.db = db
        self.prefix = prefix
        self.codec = codec
        self.label = label

    def key_of(self, record: T) -> bytes:
        """The key ``record`` is stored under."""
        raise NotImplementedError

    def iter(self, txn: Txn) -> Iterator[T]:
        """Every record, in key order."""
        raise NotImplementedError

    def put(self, txn: Txn, record: T) -> None:
        """Write (or replace) ``record`` under its key.

        Raises
        ------
        CorruptRecordError
            A field is out of bounds (nothing is written).
        """
        value = self.codec.encode(record)  # first: an id out of bounds would not make a key
        txn.put(self.db, self.key_of(record), value)

    def count(self, txn: Txn) -> int:
        """Number of records (O(1) when the table is the whole sub-database)."""
        if not self.prefix:
            return txn.entries(self.db)
        return sum(1 for _ in iter_prefix(txn, self.db, self.prefix))

    def _decode(self, key: bytes, raw: bytes | memoryview, where: str) -> T:
        record = self.codec.decode(raw, where=where)
        if not self._owns(key, record):
            raise CorruptRecordError(
                f"{self.codec.name} at {where} is not under its own key ({self._id_text(record)})"
            )
        return record

    def _owns(self, key: bytes, record: T) -> bool:
        return self.key_of(record) == key

    def _id_text(self, record: T) -> str:
        raise NotImplementedError


class IdTable(RecordTable[T]):
    """Records keyed by the integer field ``field`` (``prefix + u64``), in numeric order.

    Parameters
    ----------
    db, prefix, codec, label
        See :class:`RecordTable`.
    field : str
        The record's id field (non-negative once stored).
    """

    __slots__ = ("field",)

    def __init__(
        self, db: str, prefix: bytes, codec: RecordCodec[T], *, field: str, label: str
    ) -> None:
        if field not in codec.type.__struct_fields__:
            raise ArgumentError(f"{codec.type.__name__} has no field {field!r}")
        super().__init__(db, prefix, codec, label=label)
        self.field = field

    def key(self, n: int) -> bytes:
        """The key of id ``n``."""
        return number_key(self.prefix, n)

    def key_of(self, record: T) -> bytes:
        """The key ``record`` is stored under."""
        return self.key(getattr(record, self.field))

    def get(self, txn: Txn, n: int) -> T | None:
        """The record with id ``n``, or None (also for a negative ``n``)."""
        if n < 0:
            return None
        raw = txn.get(self.db, self.key(n))
        return None if raw is None else self._decode(self.key(n), raw, f"{self.label}/{n}")

    def delete(self, txn: Txn, n: int) -> bool:
        """Delete the record with id ``n``; False if there was none."""
        return n >= 0 and txn.delete(self.db, self.key(n))

    def iter(self, txn: Txn, *, after: int = -1, reverse: bool = False) -> Iterator[T]:
        """Records with id above ``after``, lowest id first (``reverse``: highest first)."""
        cur = txn.cursor(self.db)
        if reverse:
            found = cur.set_range(self.key(_LAST))
            if not found:
                found = cur.last()
            elif bytes(cur.key()) != self.key(_LAST):
                found = cur.prev()
        else:
            found = cur.set_range(self.key(max(after + 1, 0)))
        width = len(self.prefix) + 8
        while found:
            key = bytes(cur.key())
            if not key.startswith(self.prefix) or len(key) != width:
                return
            n = key_u64(key[len(self.prefix) :])
            if n <= after:
                return
            yield self._decode(key, cur.value(), f"{self.label}/{n}")
            found = cur.prev() if reverse else cur.next()

    def last(self, txn: Txn) -> T | None:
        """The record with the highest id, or None."""
        return next(self.iter(txn, reverse=True), None)

    def next_id(self, txn: Txn) -> int:
        """One above the highest stored id (0 when empty): the id a new record gets."""
        return last_number(txn, self.db, self.prefix) + 1

    def append(self, txn: Txn, record: T) -> T:
        """Store ``record`` with :meth:`next_id` as its id (whatever it had); returns it so.

        Raises
        ------
        CorruptRecordError
            A field is out of bounds (nothing is written).
        """
        stored = msgspec.structs.replace(record, **{self.field: self.next_id(txn)})
        self.put(txn, stored)
        return stored

    def _owns(self, key: bytes, record: T) -> bool:
        # Compared as numbers: a corrupt record may hold an id no key can encode (-1).
        n: int = getattr(record, self.field)
        return n >= 0 and self.key(n) == key

    def _id_text(self, record: T) -> str:
        return f"its {self.field} is {getattr(record, self.field)}"


class NameTable(RecordTable[T]):
    """Records keyed by text fields: ``prefix + digest(f1) + digest(f2) ...``, in digest order.

    Parameters
    ----------
    db, prefix, codec, label
        See :class:`RecordTable`.
    fields : tuple of str
        The record's name fields, in key order.
    """

    __slots__ = ("fields",)

    def __init__(
        self,
        db: str,
        prefix: bytes,
        codec: RecordCodec[T],
        *,
        fields: tuple[str, ...],
        label: str,
    ) -> None:
        missing = [f for f in fields if f not in codec.type.__struct_fields__]
        if not fields or missing:
            raise ArgumentError(f"{codec.type.__name__} has no name field(s) {missing or fields}")
        super().__init__(db, prefix, codec, label=label)
        self.fields = fields

    def key(self, *names: str) -> bytes:
        """The key of ``names`` (leading names only: the prefix of their key range)."""
        if len(names) > len(self.fields):
            raise ArgumentError(f"{self.label} records have {len(self.fields)} name(s)")
        return self.prefix + b"".join(name_digest(n) for n in names)

    def key_of(self, record: T) -> bytes:
        """The key ``record`` is stored under."""
        return self.key(*self._names(record))

    def get(self, txn: Txn, *names: str) -> T | None:
        """The record named ``names`` (one per name field), or None."""
        if len(names) != len(self.fields):
            raise ArgumentError(f"{self.label} records have {len(self.fields)} name(s)")
        key = self.key(*names)
        raw = txn.get(self.db, key)
        if raw is None:
            return None
        record = self._decode(key, raw, "/".join((self.label, *names)))
        # Other names with the same digests (never seen) are not these names.
        return record if self._names(record) == names else None

    def delete(self, txn: Txn, *names: str) -> bool:
        """Delete the record named ``names``; False if there was none."""
        return txn.delete(self.db, self.key(*names))

    def iter(self, txn: Txn, *names: str) -> Iterator[T]:
        """Every record (whose leading name fields are ``names``, if given), in key order."""
        for key, value in iter_prefix(txn, self.db, self.key(*names)):
            record = self._decode(key, value, self.label)
            if self._names(record)[: len(names)] == names:
                yield record

    def _names(self, record: T) -> tuple[str, ...]:
        return tuple(getattr(record, f) for f in self.fields)

    def _id_text(self, record: T) -> str:
        return f"it names {'/'.join(self._names(record))}"


class Registered(NamedTuple):
    """A table :func:`check_integrity <sentient_core.store.check_integrity>` checks.

    Attributes
    ----------
    table : RecordTable
    traces : callable or None
        ``traces(record)`` → ``(what, trace id)`` pairs: the traces the record
        names (ids below 0 name none); a missing one is a problem "<what> names
        missing trace <id>".
    check : callable or None
        ``check(txn)`` → problems the owner finds beyond that (one line each),
        run when every record of the table decoded.
    """

    table: RecordTable[Any]
    traces: Callable[[Any], Iterable[tuple[str, int]]] | None
    check: Callable[[Txn], Iterable[str]] | None


_REGISTERED: dict[tuple[str, bytes], Registered] = {}


def register(
    table: RecordTable[T],
    *,
    traces: Callable[[T], Iterable[tuple[str, int]]] | None = None,
    check: Callable[[Txn], Iterable[str]] | None = None,
) -> None:
    """Have :func:`~sentient_core.store.check_integrity` check ``table`` (see :class:`Registered`).

    Registering the same (sub-database, prefix) again replaces the entry.

    Raises
    ------
    StoreUsageError
        The prefix overlaps another registered table's in the same sub-database
        (one would read the other's records).
    """
    for db, prefix in _REGISTERED:
        if (
            db == table.db
            and prefix != table.prefix
            and (prefix.startswith(table.prefix) or table.prefix.startswith(prefix))
        ):
            raise StoreUsageError(
                f"table {table.label} ({table.db}, {table.prefix!r}) overlaps the registered"
                f" prefix {prefix!r}"
            )
    _REGISTERED[(table.db, table.prefix)] = Registered(table, traces, check)


def registered() -> tuple[Registered, ...]:
    """Every registered table, in registration order."""
    return tuple(_REGISTERED.values())
