"""The observer's saved state: one versioned record, arrays as raw bytes.

The state persists as one :class:`ObserverStateRecord` under key
``b"observer"`` of the store's ``state`` sub-database; arrays are kept as raw
float64/int64 bytes, so a restored observer continues bit for bit.
:func:`decode_state` checks a record before anything is built from it.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

import msgspec
import numpy as np

from sentient_core.errors import ArgumentTypeError
from sentient_core.store import CorruptRecordError, RecordCodec, SchemaVersionError, Store
from sentient_kernels import prsc, smf

__all__ = [
    "OBSERVER_KEY",
    "OBSERVER_STATE_VERSION",
    "STATE_DB",
    "ObserverStateRecord",
    "SavedState",
    "decode_state",
    "f64_bytes",
    "i64_bytes",
    "read_record",
    "write_record",
]

#: Sub-database and key of the saved observer state.
STATE_DB = "state"
OBSERVER_KEY = b"observer"
#: Schema version of :class:`ObserverStateRecord` written by this code.
OBSERVER_STATE_VERSION = 1

_F64 = np.dtype("<f8")
_I64 = np.dtype("<i8")

Positive = Annotated[float, msgspec.Meta(gt=0.0)]
NonNegative = Annotated[float, msgspec.Meta(ge=0.0)]
UnitInterval = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


class ObserverStateRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Everything needed to continue an observer exactly where it stopped.

    Array fields are raw little-endian bytes (float64, or int64 for primes and
    pending indices), so values round-trip bit for bit.

    Attributes
    ----------
    v : int
        Record schema version (:data:`OBSERVER_STATE_VERSION`).
    ticks : int
        Ticks run so far.
    n, seed : int
        Bank size and the seed it was initialised from.
    dt, coupling, damping, eta, excitation_pull : float
        Dynamics parameters (see :class:`Observer`).
    history : int
        Capacity of the coherence/entropy ring buffers.
    encoder : str
        Name of the encoder (rebuilt on the bank's primes when loading).
    phase, amplitude, frequency, primes : bytes
        The oscillator bank, ``n`` values each.
    smf : bytes
        The 16 SMF components.
    coherence, entropy : float
        Current coherence and SMF entropy.
    coherence_history, entropy_history : bytes
        Recorded values, oldest first (at most ``history`` each).
    pending_indices, pending_amounts, pending_phases : bytes
        Input queued for the next tick (bank indices, amounts, target phases).
    """

    v: PositiveInt = OBSERVER_STATE_VERSION
    ticks: NonNegInt
    n: PositiveInt
    seed: NonNegInt
    dt: Positive
    coupling: float
    damping: NonNegative
    eta: UnitInterval
    excitation_pull: UnitInterval
    history: PositiveInt
    encoder: str
    phase: bytes
    amplitude: bytes
    frequency: bytes
    primes: bytes
    smf: bytes
    coherence: float
    entropy: float
    coherence_history: bytes
    entropy_history: bytes
    pending_indices: bytes = b""
    pending_amounts: bytes = b""
    pending_phases: bytes = b""


_CODEC: RecordCodec[ObserverStateRecord] = RecordCodec(
    ObserverStateRecord, OBSERVER_STATE_VERSION, "observer state"
)


def f64_bytes(a: np.ndarray) -> bytes:
    """``a`` as raw little-endian float64 bytes."""
    return np.ascontiguousarray(a, dtype=_F64).tobytes()


def i64_bytes(a: np.ndarray) -> bytes:
    """``a`` as raw little-endian int64 bytes."""
    return np.ascontiguousarray(a, dtype=_I64).tobytes()


def _from_bytes(name: str, raw: bytes, dtype: np.dtype, count: int | None) -> np.ndarray:
    """Decode a record's array field (a fresh native, writeable, C-contiguous array)."""
    if len(raw) % dtype.itemsize:
        raise CorruptRecordError(
            f"observer state field {name!r} has {len(raw)} bytes, not a multiple of"
            f" {dtype.itemsize}"
        )
    arr = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
    if count is not None and arr.shape[0] != count:
        raise CorruptRecordError(
            f"observer state field {name!r} holds {arr.shape[0]} values, expected {count}"
        )
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise CorruptRecordError(f"observer state field {name!r} contains NaN or inf")
    return arr


class SavedState(NamedTuple):
    """The arrays of a checked :class:`ObserverStateRecord` (fresh, native, writeable)."""

    oscillators: prsc.PrscState
    field: np.ndarray
    coherence_history: np.ndarray
    entropy_history: np.ndarray
    #: Input queued for the next tick (indices, amounts, phases), or ``None``.
    pending: tuple[np.ndarray, np.ndarray, np.ndarray] | None


def decode_state(record: ObserverStateRecord) -> SavedState:
    """Check ``record`` field by field and decode its arrays.

    Raises
    ------
    TypeError
        ``record`` is not an :class:`ObserverStateRecord`.
    SchemaVersionError
        The record has another schema version.
    CorruptRecordError
        A field is malformed (wrong length, non-finite, out of bounds).
    """
    if not isinstance(record, ObserverStateRecord):
        raise ArgumentTypeError(
            f"record must be an ObserverStateRecord, got {type(record).__name__}"
        )
    if record.v != OBSERVER_STATE_VERSION:
        raise SchemaVersionError(
            f"observer state has schema version {record.v}; this sentient-core"
            f" understands {OBSERVER_STATE_VERSION}"
        )
    # The Struct constructor does not check the field bounds; encoding does.
    _CODEC.encode(record, validate=True)
    n = record.n
    state = prsc.PrscState(
        _from_bytes("phase", record.phase, _F64, n),
        _from_bytes("amplitude", record.amplitude, _F64, n),
        _from_bytes("frequency", record.frequency, _F64, n),
        _from_bytes("primes", record.primes, _I64, n),
    )
    field = _from_bytes("smf", record.smf, _F64, smf.DIM)
    coh = _from_bytes("coherence_history", record.coherence_history, _F64, None)
    ent = _from_bytes("entropy_history", record.entropy_history, _F64, None)
    if coh.shape[0] != ent.shape[0] or coh.shape[0] > record.history:
        raise CorruptRecordError(
            f"observer state histories hold {coh.shape[0]} and {ent.shape[0]} values;"
            f" expected equal counts of at most history={record.history}"
        )
    pending_idx = _from_bytes("pending_indices", record.pending_indices, _I64, None)
    m = pending_idx.shape[0]
    pending_amt = _from_bytes("pending_amounts", record.pending_amounts, _F64, m)
    pending_ph = _from_bytes("pending_phases", record.pending_phases, _F64, m)
    if state.amplitude.min() < 0.0 or (m and pending_amt.min() < 0.0):
        raise CorruptRecordError("observer state has negative amplitudes")
    if m and (pending_idx.min() < 0 or pending_idx.max() >= n):
        raise CorruptRecordError(f"observer state pending indices outside [0, {n})")
    if state.primes.min() < 2:
        raise CorruptRecordError("observer state primes must be >= 2")
    if not (np.isfinite(record.coherence) and np.isfinite(record.entropy)):
        raise CorruptRecordError("observer state coherence/entropy is not finite")
    pending = (pending_idx, pending_amt, pending_ph) if m else None
    return SavedState(state, field, coh, ent, pending)


def write_record(store: Store, record: ObserverStateRecord) -> None:
    """Write ``record`` under ``state``/``b"observer"`` in one transaction."""
    buf = _CODEC.encode(record)
    store.write(lambda txn: txn.put(STATE_DB, OBSERVER_KEY, buf))


def read_record(store: Store) -> ObserverStateRecord | None:
    """The record saved in ``store``, or ``None``.

    Raises
    ------
    SchemaVersionError, CorruptRecordError
        The saved bytes do not decode to a record of this version.
    """
    with store.read() as txn:
        raw = txn.get(STATE_DB, OBSERVER_KEY)
        return None if raw is None else _CODEC.decode(raw, where=f"{store.path} state/observer")
