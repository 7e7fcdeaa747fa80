"""Holographic memory: traces kept in the store, recalled from an in-RAM mirror.

Every trace is a :class:`~sentient_core.store.TraceRecord` plus one float32 code
row (its hologram, stored L2-normalised) in the store. :class:`HolographicMemory`
keeps a **mirror** of what recall needs in RAM, indexed by code row:

* the code matrix (one contiguous float32 array, capacity grows ×1.5, read at
  open with :func:`sentient_core.store.codes.read_all`: no per-row Python work),
* a ``valid`` mask (uint8; 0 for retired traces and rows without a trace),
* row → trace id (int64), and per row the SMF orientation (M, 16) float64,
  ``created``, ``last_access``, ``strength`` and ``importance`` (float64),
  filled by one pass over the trace records (only the fields above are
  decoded; the text is skipped),
* an inverted index prime → rows (sorted int64 arrays) for :meth:`recall_by_primes`.

Recall ranks by exact cosine with :func:`kernels.holographic.topk_cosine` over
the mirror (``normalized=True``, the mask excludes retired traces), then reads
the winners' records from the store, so returned records are always current.

Consistency
-----------
Every change is ONE write transaction (:meth:`Store.write`); the mirror is
changed only after that transaction committed. A failed transaction (an
exception in it, a full disk) leaves both the store and the mirror as they
were. Transactions may be re-run by the store after growing the map, so they
never touch the mirror themselves.

Threads
-------
One re-entrant lock serialises every write together with its mirror update,
so mirror updates happen in commit order. Reads (all ``recall*``, ``recent``,
``spread``, ``get``) take no lock: they take one reference to the current
mirror and use its first ``n`` rows. Appends fill rows beyond ``n`` before
publishing the new ``n`` (or publish a grown copy), so a reader never sees a
half-written row; retirement clears mask bytes in place, so a concurrent read
sees a trace either before or after its retirement. Records are re-read from
the store, and a hit whose record turns out retired is dropped (and masked).

Processes
---------
One process writes (the store's one-writer convention); others open the store
read-only, build their own :class:`HolographicMemory` and call :meth:`refresh`
to pick up what was committed since: new traces are appended incrementally
(codes never change once written); a retirement bumps a generation number in
the store and makes :meth:`refresh` reload the mirror fully. Strength and
last-access values in a reader's mirror are those of its last full load (they
only steer :meth:`decay` and :meth:`prune`, which the writer runs); returned
records are read fresh. ``refresh`` is also how a writer adopts traces that
other code put into the store without going through this class.

Efficacy is not retrieval (SPEC §5): recall bumps ``use_count`` and
``last_access`` only; ``success_count``/``failure_count`` change only through
:meth:`update` (judged outcomes), never by recall, decay or pruning.

Nothing is ever deleted: pruning *retires* traces (``retired=True``, masked,
links removed), so no index (mirror, prime index, links) can point at a
missing trace and :func:`~sentient_core.store.check_integrity` stays clean.
The prime index keeps the rows of retired traces (they still exist); every
lookup filters them out with the mask.

Links are directed records in the store; :meth:`HolographicMemory.link`
writes both directions by default (entanglement is symmetric), one with
``directed=True``. Weights are in (0, 1]. Spreading activation reads the links
from one store snapshot; there is no in-RAM link index to keep in step.

Strength
--------
:meth:`HolographicMemory.decay` computes
``s ← 0.05 + (s − 0.05) · 2^(−Δ / half_life)`` with
``Δ = now − max(last_access, previous decay)``, so repeated decays compose and
a recall restarts a trace's clock. :meth:`HolographicMemory.prune` ranks by the
mirror's strength: change strength through :meth:`HolographicMemory.update`
(or call ``refresh(full=True)`` after changing records behind its back).

Errors
------
::

    HolographicMemoryError      base class of this module's errors
    ├── EncoderMismatchError    the store's codes were made by another encoder / dimension
    ├── UnknownTraceError       no trace with that id (also a KeyError)
    └── RetiredTraceError       the trace is retired (cannot be linked)

Bad argument values raise ``ValueError``/``TypeError``; store failures
propagate as :class:`~sentient_core.store.StoreError`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice
from operator import attrgetter
from typing import Annotated

import msgspec
import numpy as np

from kernels import holographic
from kernels import smf as smf_kernels
from kernels._config import jit
from sentient_core.encoder import TextEncoder, get_encoder
from sentient_core.errors import ArgumentError, ArgumentTypeError, SentientError
from sentient_core.store import codes as store_codes
from sentient_core.store.env import Store, Txn
from sentient_core.store.errors import CorruptRecordError, StoreUsageError
from sentient_core.store.records import (
    SMF_AXES,
    TRACES,
    LinkRecord,
    RecordCodec,
    TraceRecord,
    split_link_key,
)

__all__ = [
    "MEMORY_STATE",
    "STATE_KEY",
    "STRENGTH_FLOOR",
    "EncoderMismatchError",
    "Hit",
    "HolographicMemory",
    "HolographicMemoryError",
    "MemoryState",
    "NewTrace",
    "PrunePolicy",
    "RetiredTraceError",
    "UnknownTraceError",
]

STRENGTH_FLOOR = 0.05
"""Lowest strength a trace can have (the lower bound of :attr:`TraceRecord.strength`)."""

STRENGTH_CEILING = 1.5

STATE_KEY = b"memory/state"
"""Key of the :class:`MemoryState` record in the ``state`` sub-database."""

_SECONDS_PER_DAY = 86400.0
_E0 = (1.0,) + (0.0,) * (SMF_AXES - 1)  # the SMF start field (coherence = 1)
_MIN_CAPACITY = 1024
_LOAD_CHUNK = 65536  # trace records decoded per step at load (bounds transient memory)

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
UnixTime = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]


# ----------------------------------------------------------------------------- errors


class HolographicMemoryError(SentientError):
    """Base class of the errors raised by :mod:`sentient_core.memory`."""


class EncoderMismatchError(HolographicMemoryError):
    """The encoder differs from the one whose codes the store holds."""


class UnknownTraceError(HolographicMemoryError, KeyError):
    """No trace with the given id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class RetiredTraceError(HolographicMemoryError):
    """The operation needs an active trace and the trace is retired."""


# ----------------------------------------------------------------------------- records


class MemoryState(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Bookkeeping of the memory layer, one record under :data:`STATE_KEY` in ``state``.

    Attributes
    ----------
    v : int
        Record schema version (1).
    generation : int
        Bumped by every retirement; a reader whose mirror has another
        generation reloads it fully (:meth:`HolographicMemory.refresh`).
    last_decay : float or None
        Unix time of the last :meth:`HolographicMemory.decay`.
    encoder, encoder_fingerprint : str
        Name and fingerprint of the encoder that made the stored codes
        (empty until a code is first computed by an encoder).
    """

    v: Annotated[int, msgspec.Meta(ge=1)] = 1
    generation: NonNegInt = 0
    last_decay: UnixTime | None = None
    encoder: str = ""
    encoder_fingerprint: str = ""


MEMORY_STATE: RecordCodec[MemoryState] = RecordCodec(MemoryState, 1, "memory state")


class NewTrace(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A trace to store (see :meth:`HolographicMemory.store_batch`).

    Attributes
    ----------
    text : str
    code : ndarray (code_dim,), optional
        Its hologram; computed by the encoder when omitted. Stored L2-normalised
        (an all-zero code stays zero and is similar to nothing).
    smf : sequence of 16 float, optional
        SMF orientation when stored; ``e0`` (coherence = 1) when omitted.
    primes : sequence of int, optional
        Dominant primes; when omitted (None) the encoder's dominant primes of
        ``text``. Pass ``()`` for none. Duplicates are dropped, order kept.
    kind, source, topic : str
    importance : float
        In [0, 1].
    tags, keywords : tuple of str
    """

    text: str
    code: np.ndarray | None = None
    smf: tuple[float, ...] | None = None
    primes: tuple[int, ...] | None = None
    kind: str = "observed"
    source: str = ""
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    topic: str = ""
    keywords: tuple[str, ...] = ()


class Hit(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One recalled trace.

    Attributes
    ----------
    record : TraceRecord
        The trace as stored (after the recall's own use-count bump, if any).
    score : float
        Cosine for :meth:`~HolographicMemory.recall` and
        :meth:`~HolographicMemory.recall_by_smf`; fraction of the query primes
        the trace shares for :meth:`~HolographicMemory.recall_by_primes`.
    row : int
        The trace's code row.
    """

    record: TraceRecord
    score: float
    row: int


class PrunePolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What :meth:`HolographicMemory.prune` may retire.

    Attributes
    ----------
    max_active : int
        Wanted upper bound on active (non-retired) traces.
    keep_newest : int
        The ``keep_newest`` newest active traces (highest ids) are never retired.
    min_strength : float
        Only traces whose strength is below this are eligible: a count cap
        never retires knowledge that is still relevant (SPEC §5), so strong
        traces stay even when that leaves more than ``max_active``.
        ``math.inf`` makes every trace outside ``keep_newest`` eligible.
    """

    max_active: Annotated[int, msgspec.Meta(ge=0)]
    keep_newest: Annotated[int, msgspec.Meta(ge=0)] = 1000
    min_strength: Annotated[float, msgspec.Meta(ge=0.0)] = 0.1


_MSGPACK = msgspec.msgpack.Encoder()
_POLICY_DECODER = msgspec.msgpack.Decoder(PrunePolicy)


class _MirrorFields(msgspec.Struct, kw_only=True):
    """The part of a stored TraceRecord the mirror needs (the text is skipped)."""

    v: int
    id: int
    row: int
    created: float
    last_access: float
    strength: float
    importance: float
    smf: msgspec.Raw
    primes: msgspec.Raw
    retired: bool


_MIRROR_DECODER = msgspec.msgpack.Decoder(_MirrorFields)
_SMF_DECODER = msgspec.msgpack.Decoder(tuple[float, ...])
_PRIMES_DECODER = msgspec.msgpack.Decoder(tuple[int, ...])
# msgpack of a 16-tuple of floats: array16 header (dc 00 10), then 16 × (cb + 8-byte BE double).
_SMF_RAW_LEN = 3 + 9 * SMF_AXES


# ----------------------------------------------------------------------------- mirror


class _Fields:
    """Mirror fields of a set of traces as arrays (one entry per trace)."""

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
        recs: Sequence[TraceRecord] | Sequence[_MirrorFields],
        smf: np.ndarray,
        prime_counts: np.ndarray,
        primes: np.ndarray,
    ) -> None:
        n = len(recs)

        def col(name: str, dtype: type) -> np.ndarray:
            return np.fromiter(map(attrgetter(name), recs), dtype=dtype, count=n)

        self.ids = col("id", np.int64)
        self.rows = col("row", np.int64)
        self.created = col("created", np.float64)
        self.last_access = col("last_access", np.float64)
        self.strength = col("strength", np.float64)
        self.importance = col("importance", np.float64)
        self.retired = col("retired", np.bool_)
        self.smf = smf
        # Per trace, in stored order (duplicates are dropped when the index is built).
        self.prime_counts = prime_counts
        self.primes = primes

    @classmethod
    def of_records(cls, recs: Sequence[TraceRecord]) -> _Fields:
        n = len(recs)
        smf = np.array([r.smf for r in recs], dtype=np.float64).reshape(n, SMF_AXES)
        counts = np.fromiter((len(r.primes) for r in recs), dtype=np.int64, count=n)
        flat = np.fromiter(
            chain.from_iterable(r.primes for r in recs), dtype=np.int64, count=int(counts.sum())
        )
        return cls(recs, smf, counts, flat)

    @classmethod
    def of_raw(cls, values: list, where: str) -> _Fields:
        """Decode stored trace values (bytes or memoryviews)."""
        decode = _MIRROR_DECODER.decode
        try:
            recs = [decode(v) for v in values]
        except (msgspec.ValidationError, msgspec.DecodeError):
            # Find the bad one and let the store's codec name the problem
            # (SchemaVersionError for a newer record, CorruptRecordError otherwise).
            for v in values:
                TRACES.decode(v, where=where)
            raise
        if any(r.v != TRACES.version for r in recs):
            bad = next(r for r in recs if r.v != TRACES.version)
            TRACES.decode(values[recs.index(bad)], where=f"{where}/{bad.id}")
        counts, flat = _primes_from_raw([r.primes for r in recs], where)
        return cls(recs, _smf_from_raw([r.smf for r in recs]), counts, flat)


def _unique_primes(primes: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(primes))


@jit()
def _parse_uint_arrays(buf, starts, counts, out):
    """Parse consecutive msgpack arrays of unsigned ints (one per trace) into ``out``.

    Returns the number of values, or -1 for anything else than fixarray/array16
    headers and positive fixint/uint8/16/32 elements (the caller then decodes
    with msgspec, which also reports malformed data).
    """
    k = 0
    end = buf.size
    for r in range(starts.size):
        i = starts[r]
        stop = starts[r + 1] if r + 1 < starts.size else end
        h = np.int64(buf[i])
        if 0x90 <= h <= 0x9F:
            n = h - 0x90
            i += 1
        elif h == 0xDC and i + 2 < stop:
            n = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
            i += 3
        else:
            return -1
        for _ in range(n):
            if i >= stop or k >= out.size:
                return -1
            t = np.int64(buf[i])
            if t <= 0x7F:
                v = t
                i += 1
            elif t == 0xCC and i + 1 < stop:
                v = np.int64(buf[i + 1])
                i += 2
            elif t == 0xCD and i + 2 < stop:
                v = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
                i += 3
            elif t == 0xCE and i + 4 < stop:
                v = 0
                for j in range(1, 5):
                    v = (v << 8) | np.int64(buf[i + j])
                i += 5
            else:
                return -1
            out[k] = v
            k += 1
        if i != stop:
            return -1
        counts[r] = n
    return k


def _primes_from_raw(raws: list[msgspec.Raw], where: str) -> tuple[np.ndarray, np.ndarray]:
    """Counts (n,) and concatenated values of n raw msgpack prime tuples."""
    n = len(raws)
    counts = np.zeros(n, dtype=np.int64)
    if n == 0:
        return counts, np.zeros(0, np.int64)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    out = np.empty(buf.size, dtype=np.int64)
    k = _parse_uint_arrays(buf, starts, counts, out) if buf.size else -1
    if k >= 0:
        return counts, out[:k].copy()
    try:
        tuples = [_PRIMES_DECODER.decode(r) for r in raws]
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise CorruptRecordError(f"a trace record in {where} has bad primes: {exc}") from exc
    counts = np.fromiter(map(len, tuples), dtype=np.int64, count=n)
    return counts, np.fromiter(chain.from_iterable(tuples), dtype=np.int64, count=int(counts.sum()))


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


class _Mirror:
    """Arrays indexed by code row; rows ``[0, n)`` are meaningful."""

    __slots__ = (
        "active",
        "codes",
        "created",
        "importance",
        "last_access",
        "n",
        "row_id",
        "smf",
        "strength",
        "valid",
    )

    def __init__(self, capacity: int, dim: int) -> None:
        self.n = 0
        self.active = 0
        self.codes = np.empty((capacity, dim), dtype=np.float32)
        self.valid = np.zeros(capacity, dtype=np.uint8)
        self.row_id = np.full(capacity, -1, dtype=np.int64)
        self.smf = np.zeros((capacity, SMF_AXES), dtype=np.float64)
        self.created = np.zeros(capacity, dtype=np.float64)
        self.last_access = np.zeros(capacity, dtype=np.float64)
        self.strength = np.zeros(capacity, dtype=np.float64)
        self.importance = np.zeros(capacity, dtype=np.float64)

    @property
    def capacity(self) -> int:
        return self.codes.shape[0]

    def with_room(self, rows: int) -> _Mirror:
        """This mirror if ``rows`` rows fit, else a grown copy (never shared with readers)."""
        if rows <= self.capacity:
            return self
        grown = _Mirror(max(rows, self.capacity + self.capacity // 2, _MIN_CAPACITY), self.dim)
        n = self.n
        for name in ("codes", "valid", "row_id", "smf", "created", "last_access", "strength"):
            getattr(grown, name)[:n] = getattr(self, name)[:n]
        grown.importance[:n] = self.importance[:n]
        grown.n, grown.active = n, self.active
        return grown

    @property
    def dim(self) -> int:
        return self.codes.shape[1]

    def put(self, f: _Fields, n_rows: int, where: str) -> None:
        """Write the fields of traces whose rows are below ``n_rows`` (rows not yet published)."""
        rows = f.rows
        if rows.size == 0:
            return
        if int(rows.min()) < 0 or int(rows.max()) >= n_rows:
            bad = int(f.ids[np.argmax((rows < 0) | (rows >= n_rows))])
            raise CorruptRecordError(
                f"trace {bad} of the store at {where} claims a code row outside the"
                f" {n_rows} stored rows; run check_integrity"
            )
        first, last = int(rows[0]), int(rows[-1])
        if last - first + 1 == rows.size and (np.diff(rows) == 1).all():
            rows = slice(first, last + 1)  # the usual case: consecutive rows, no gather
            clash = (self.row_id[rows] != -1).any()
        else:
            clash = (self.row_id[rows] != -1).any() or np.unique(rows).size != rows.size
        if clash:
            raise CorruptRecordError(
                f"two traces of the store at {where} claim the same code row; run check_integrity"
            )
        self.row_id[rows] = f.ids
        self.valid[rows] = ~f.retired
        self.smf[rows] = f.smf
        self.created[rows] = f.created
        self.last_access[rows] = f.last_access
        self.strength[rows] = f.strength
        self.importance[rows] = f.importance
        self.active += int(f.rows.size - np.count_nonzero(f.retired))


class _Postings:
    """Rows of one prime, ascending; :attr:`rows` is always a consistent array."""

    __slots__ = ("_buf", "rows")

    def __init__(self, rows: np.ndarray) -> None:
        self._buf = rows
        self.rows = rows

    def extend(self, new: np.ndarray) -> None:
        n = self.rows.shape[0]
        need = n + new.shape[0]
        buf = self._buf
        if need > buf.shape[0]:
            buf = np.empty(max(need, 2 * buf.shape[0], 16), dtype=np.int64)
            buf[:n] = self.rows
        buf[n:need] = new
        self._buf = buf
        self.rows = buf[:need]


@jit()
def _bucket_rows(rows, keys, starts, out):
    """Counting sort of ``rows`` (ascending) into buckets ``keys``; drops repeats.

    ``starts[k]`` is where bucket ``k`` begins in ``out``. Returns the fill of
    every bucket; rows stay ascending inside a bucket, and a row listed twice
    for one key (a trace naming a prime twice) is kept once.
    """
    fill = np.zeros(starts.size - 1, dtype=np.int64)
    for i in range(rows.size):
        k = keys[i]
        pos = starts[k] + fill[k]
        if fill[k] > 0 and out[pos - 1] == rows[i]:
            continue
        out[pos] = rows[i]
        fill[k] += 1
    return fill


_DIRECT_KEYS = 1 << 22  # primes below this are bucketed by value (a 32 MB count table at most)


def _postings_from(rows: np.ndarray, primes: np.ndarray) -> dict[int, np.ndarray]:
    """Group ``rows`` by ``primes``: prime → ascending rows, each row once."""
    if primes.size == 0:
        return {}
    if rows.size > 1 and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")
        rows, primes = rows[order], primes[order]
    if int(primes.max()) < _DIRECT_KEYS:
        values = np.flatnonzero(np.bincount(primes))
        lookup = np.zeros(int(primes.max()) + 1, dtype=np.int64)
        lookup[values] = np.arange(values.size)
        keys = lookup[primes]
    else:
        values, keys = np.unique(primes, return_inverse=True)
    counts = np.bincount(keys, minlength=values.size)
    starts = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    out = np.empty(primes.size, dtype=np.int64)
    fill = _bucket_rows(rows, keys.astype(np.int64), starts, out)
    return {
        int(p): out[starts[j] : starts[j] + fill[j]].copy() for j, p in enumerate(values.tolist())
    }


def _read_state(txn: Txn) -> MemoryState:
    raw = txn.get("state", STATE_KEY)
    if raw is None:
        return MemoryState()
    return MEMORY_STATE.decode(raw, where=f"{txn.store.path} state/{STATE_KEY.decode()}")


def _write_state(txn: Txn, state: MemoryState) -> None:
    txn.put("state", STATE_KEY, MEMORY_STATE.encode(state))


def _topk_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, by (score desc, position asc); deterministic."""
    m = scores.shape[0]
    if k < m:
        kth = np.partition(scores, m - k)[m - k]
        above = np.flatnonzero(scores > kth)
        ties = np.flatnonzero(scores == kth)[: k - above.size]
        cand = np.concatenate((above, ties))
    else:
        cand = np.arange(m)
    return cand[np.lexsort((cand, -scores[cand]))]


def _check_k(name: str, k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ArgumentError(f"{name} must be an integer >= 1, got {k!r}")
    return int(k)


def _check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ArgumentTypeError(f"threshold must be a float, got {type(threshold).__name__}")
    if math.isnan(threshold):
        raise ArgumentError("threshold must not be NaN")
    return float(threshold)


def _check_ids(ids: Iterable[int], what: str) -> list[int]:
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
            raise ArgumentError(f"{what} must be non-negative integer trace ids, got {i!r}")
        out.append(int(i))
    return out


# ----------------------------------------------------------------------------- memory


class HolographicMemory:
    """Traces in a :class:`~sentient_core.store.Store`, recalled from an in-RAM mirror.

    Parameters
    ----------
    store : Store
        An open store (read-only is fine for recall; writes then raise
        :class:`~sentient_core.store.StoreUsageError`). The memory does not own
        it: close the store yourself.
    encoder : TextEncoder, optional
        Computes codes and dominant primes from text. Default: the ``"token"``
        encoder with the store's ``code_dim`` (built on first use).
    clock : callable, optional
        Returns the current unix time (``time.time``); injectable for tests.

    Raises
    ------
    EncoderMismatchError
        ``encoder.code_dim`` differs from the store's.
    CorruptRecordError, SchemaVersionError
        A trace record does not decode, or traces and code rows disagree.

    Notes
    -----
    See the module docstring for the consistency, thread and process rules.
    Opening reads all code rows in one copy per block and decodes each trace
    record once (without its text).
    """

    def __init__(
        self,
        store: Store,
        *,
        encoder: TextEncoder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if encoder is not None and encoder.code_dim != store.code_dim:
            raise EncoderMismatchError(
                f"encoder {encoder.name!r} makes {encoder.code_dim}-dim codes; the store at"
                f" {store.path} holds {store.code_dim}-dim codes"
            )
        self._store = store
        self._encoder = encoder
        self._clock = clock
        self._lock = threading.RLock()
        # buffers=False: py-lmdb makes bytes faster than memoryviews, and the trace
        # scan dominates the load; code blocks cost one extra memcpy that way.
        with store.read(buffers=False) as txn:
            self._load(txn)

    # -- loading -----------------------------------------------------------------------------

    def _load(self, txn: Txn) -> None:
        """(Re)build the whole mirror and the prime index from one snapshot."""
        store = self._store
        where = str(store.path)
        counters = txn.counters()
        n = counters.row_count
        mirror = _Mirror(max(_MIN_CAPACITY, n + n // 2), store.code_dim)
        store_codes.read_all(txn, out=mirror.codes)
        row_parts, prime_parts = [], []
        chunk: list = []

        def flush() -> None:
            fields = _Fields.of_raw(chunk, f"{where} traces")
            mirror.put(fields, n, where)
            row_parts.append(np.repeat(fields.rows, fields.prime_counts))
            prime_parts.append(fields.primes)
            chunk.clear()

        values = txn.cursor("traces").iternext(keys=False)
        while True:
            chunk.extend(islice(values, _LOAD_CHUNK))
            if not chunk:
                break
            flush()
        mirror.n = n
        rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
        primes = np.concatenate(prime_parts) if prime_parts else np.zeros(0, np.int64)
        index = _postings_from(rows, primes)
        self._prime_index = {p: _Postings(r) for p, r in index.items()}
        self._next_id = counters.next_id
        self._state = _read_state(txn)
        self._m = mirror

    def refresh(self, *, full: bool = False) -> int:
        """Pick up what was committed to the store since the mirror was built.

        New traces are appended (codes are read only for the new rows); if a
        retirement happened since (the store's generation changed) or ``full``,
        the mirror is rebuilt from scratch.

        Parameters
        ----------
        full : bool
            Rebuild even if nothing was retired (also refreshes strength and
            last-access values changed by another process).

        Returns
        -------
        int
            Number of traces the mirror gained.
        """
        with self._lock, self._store.read(buffers=False) as txn:
            before = self._m.n
            state = _read_state(txn)
            if full or state.generation != self._state.generation:
                self._load(txn)
                return self._m.n - before
            self._state = state
            counters = txn.counters()
            if counters.next_id == self._next_id:
                return 0
            recs = list(self._store.iter_traces(txn, start=self._next_id))
            new_codes = store_codes.read_rows(txn, before, counters.row_count)
            self._append(_Fields.of_records(recs), new_codes, counters.row_count)
            self._next_id = counters.next_id
            return self._m.n - before

    def _append(self, fields: _Fields, new_codes: np.ndarray, n_rows: int) -> None:
        """Add rows ``[m.n, n_rows)`` (codes) and the traces that own them; lock held."""
        m = self._m
        start = m.n
        grown = m.with_room(n_rows)
        grown.codes[start:n_rows] = new_codes
        grown.put(fields, n_rows, str(self._store.path))
        if fields.primes.size:
            rows = np.repeat(fields.rows, fields.prime_counts)
            for p, r in _postings_from(rows, fields.primes).items():
                post = self._prime_index.get(p)
                if post is None:
                    self._prime_index[p] = _Postings(r)
                else:
                    post.extend(r)
        grown.n = n_rows  # publish: readers see the new rows only from here on
        self._m = grown

    # -- encoder -----------------------------------------------------------------------------

    def _encoder_for_use(self) -> TextEncoder:
        """The encoder, after checking it matches the one that made the stored codes."""
        if self._encoder is None:
            self._encoder = get_encoder("token", code_dim=self._store.code_dim)
        enc = self._encoder
        # Compared on every use: a refresh may bring the stamp another process wrote.
        state = self._state
        if state.encoder_fingerprint and state.encoder_fingerprint != enc.fingerprint:
            raise EncoderMismatchError(
                f"the store at {self._store.path} holds codes made by encoder"
                f" {state.encoder!r} (fingerprint {state.encoder_fingerprint}); this memory"
                f" uses {enc.name!r} (fingerprint {enc.fingerprint}); open it with the"
                " same encoder and options"
            )
        return enc

    @property
    def encoder(self) -> TextEncoder:
        """The encoder used for text (built on first access if none was given)."""
        if self._encoder is None:
            self._encoder = get_encoder("token", code_dim=self._store.code_dim)
        return self._encoder

    # -- storing -----------------------------------------------------------------------------

    def store(
        self,
        text: str,
        *,
        code: np.ndarray | None = None,
        smf: Sequence[float] | np.ndarray | None = None,
        primes: Sequence[int] | None = None,
        kind: str = "observed",
        source: str = "",
        importance: float = 0.5,
        tags: Sequence[str] = (),
        topic: str = "",
        keywords: Sequence[str] = (),
    ) -> TraceRecord:
        """Store one trace (one write transaction); see :class:`NewTrace` for the fields.

        Returns
        -------
        TraceRecord
            The stored record (with its id and row).
        """
        item = NewTrace(
            text=text,
            code=code,
            smf=None if smf is None else tuple(np.asarray(smf, dtype=np.float64).tolist()),
            primes=None if primes is None else tuple(primes),
            kind=kind,
            source=source,
            importance=importance,
            tags=tuple(tags),
            topic=topic,
            keywords=tuple(keywords),
        )
        return self.store_batch([item])[0]

    def store_batch(self, items: Sequence[NewTrace]) -> list[TraceRecord]:
        """Store many traces in ONE write transaction.

        Codes and primes missing from the items are computed by one encoder
        call (``encode_many`` if primes are wanted, else ``encode_batch``);
        every code is stored L2-normalised.

        Parameters
        ----------
        items : sequence of NewTrace

        Returns
        -------
        list of TraceRecord
            The stored records, in the order of ``items``.

        Raises
        ------
        ValueError, TypeError
            A field is invalid (wrong code shape, non-finite values, importance
            outside [0, 1], empty kind, a prime < 2, ...).
        EncoderMismatchError
            Codes must be computed and the store's codes come from another encoder.
        """
        items = list(items)
        if not items:
            return []
        for i, it in enumerate(items):
            _check_new_trace(i, it)
        dim = self._store.code_dim
        codes = np.zeros((len(items), dim), dtype=np.float32)
        for i, it in enumerate(items):
            if it.code is not None:
                codes[i] = _as_code(it.code, dim, f"items[{i}].code")
        need_code = [i for i, it in enumerate(items) if it.code is None]
        need_primes = [i for i, it in enumerate(items) if it.primes is None]
        dominant: dict[int, tuple[int, ...]] = {}
        stamp: TextEncoder | None = None
        if need_code or need_primes:
            enc = self._encoder_for_use()
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
                if not self._state.encoder_fingerprint:
                    stamp = enc
        # Unit rows let recall skip the row norms (topk_cosine normalized=True).
        norms = np.sqrt(np.einsum("ij,ij->i", codes, codes, dtype=np.float64))
        nonzero = norms > 0
        codes[nonzero] = (codes[nonzero] / norms[nonzero, None]).astype(np.float32)
        now = float(self._clock())
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
                smf=_E0 if it.smf is None else tuple(float(x) for x in it.smf),
                primes=_unique_primes(
                    int(p) for p in (dominant[i] if it.primes is None else it.primes)
                ),
            )
            for i, it in enumerate(items)
        ]
        store = self._store

        def write(txn: Txn) -> tuple[list[TraceRecord], MemoryState | None]:
            state = None
            if stamp is not None:
                state = msgspec.structs.replace(
                    _read_state(txn), encoder=stamp.name, encoder_fingerprint=stamp.fingerprint
                )
                _write_state(txn, state)
            return store.put_traces(txn, records, codes), state

        with self._lock:
            stored, state = store.write(write)
            if state is not None:
                self._state = state
            self._after_append(stored, codes)
        return stored

    def _after_append(self, stored: list[TraceRecord], codes: np.ndarray) -> None:
        """Mirror a committed batch (lock held); catch up first if others wrote meanwhile."""
        if stored[0].row != self._m.n or stored[0].id != self._next_id:
            self.refresh()  # rows committed around us: read everything up to now
            return
        self._append(_Fields.of_records(stored), codes, stored[-1].row + 1)
        self._next_id = stored[-1].id + 1

    # -- recall ------------------------------------------------------------------------------

    def _query_code(self, query: str | np.ndarray, name: str = "query") -> np.ndarray | None:
        if isinstance(query, str):
            code = self._encoder_for_use().encode(query).code
            return code if code.any() else None
        code = _as_code(query, self._store.code_dim, name)
        if not code.any():
            raise ArgumentError(f"{name} must not be all zeros (its cosine is undefined)")
        return code

    def recall(
        self,
        query: str | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
    ) -> list[Hit]:
        """The ``k`` active traces most similar to ``query`` (exact cosine), best first.

        Parameters
        ----------
        query : str or ndarray (code_dim,)
            A text (encoded with the memory's encoder) or a code.
        k : int
        threshold : float
            Hits scoring below it are dropped.
        touch : bool
            Bump ``use_count`` and ``last_access`` of the returned traces (one
            write transaction). Needs a writable store.

        Returns
        -------
        list of Hit
            Ties are broken by the lower row (older trace). A text without
            content words recalls nothing.
        """
        k = _check_k("k", k)
        threshold = _check_threshold(threshold)
        self._check_touch(touch)
        code = self._query_code(query)
        if code is None:
            return []
        while True:
            m = self._m
            n = m.n
            if n == 0:
                return []
            rows, scores = holographic.topk_cosine(
                m.codes[:n], code, k, normalized=True, valid=m.valid[:n]
            )
            hits = self._hits(m, rows, scores, threshold)
            if hits is not None:
                break
        return self._touch_hits([hits])[0] if touch else hits

    def recall_batch(
        self,
        queries: Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        threshold: float = 0.0,
        touch: bool = True,
    ) -> list[list[Hit]]:
        """:meth:`recall` for several queries in one pass over the codes.

        Parameters
        ----------
        queries : sequence of str, or ndarray (Q, code_dim)
        k, threshold, touch
            As in :meth:`recall`; ``touch`` bumps once per query a trace is
            returned for, all in one write transaction.

        Returns
        -------
        list of list of Hit
            One list per query.
        """
        k = _check_k("k", k)
        threshold = _check_threshold(threshold)
        self._check_touch(touch)
        dim = self._store.code_dim
        if isinstance(queries, np.ndarray):
            if queries.ndim != 2 or queries.shape[1] != dim:
                raise ArgumentError(f"queries must have shape (Q, {dim}), got {queries.shape}")
            qcodes = np.ascontiguousarray(queries, dtype=np.float32)
            if not np.isfinite(qcodes).all():
                raise ArgumentError("queries contains non-finite values (NaN or inf)")
            live = qcodes.any(axis=1)
            if not live.all():
                raise ArgumentError(
                    f"queries row {int(np.argmin(live))} is all zeros (its cosine is undefined)"
                )
        else:
            texts = list(queries)
            if not all(isinstance(t, str) for t in texts):
                raise ArgumentTypeError("queries must be a sequence of str or a 2-d float array")
            qcodes = (
                self._encoder_for_use().encode_batch(texts)
                if texts
                else np.zeros((0, dim), np.float32)
            )
            live = qcodes.any(axis=1)
        out: list[list[Hit]] = [[] for _ in range(qcodes.shape[0])]
        live_idx = np.flatnonzero(live)
        while live_idx.size:
            m = self._m
            n = m.n
            if n == 0:
                break
            rows, scores = holographic.topk_cosine_batch(
                m.codes[:n],
                np.ascontiguousarray(qcodes[live_idx]),
                k,
                normalized=True,
                valid=m.valid[:n],
            )
            results = [self._hits(m, rows[j], scores[j], threshold) for j in range(rows.shape[0])]
            if all(r is not None for r in results):
                for j, q in enumerate(live_idx):
                    out[q] = results[j]
                break
        return self._touch_hits(out) if touch else out

    def recall_by_smf(
        self, s: np.ndarray | Sequence[float], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """The ``k`` active traces whose stored SMF orientation is most similar to ``s``.

        Parameters
        ----------
        s : (16,) float
            An SMF orientation (need not be unit; a ~zero field matches nothing).
        k : int
        touch : bool
            As in :meth:`recall`.

        Returns
        -------
        list of Hit
            Score = cosine (:func:`kernels.smf.similarity`); ties go to the lower row.
        """
        k = _check_k("k", k)
        self._check_touch(touch)
        q = np.asarray(s, dtype=np.float64)
        if q.shape != (SMF_AXES,) or not np.isfinite(q).all():
            raise ArgumentError(f"s must be {SMF_AXES} finite floats, got shape {q.shape}")
        while True:
            m = self._m
            n = m.n
            valid = m.valid[:n]
            live = int(np.count_nonzero(valid))
            if live == 0:
                return []
            scores = smf_kernels.similarity(np.ascontiguousarray(q), m.smf[:n])
            scores[valid == 0] = -np.inf
            rows = _topk_desc(scores, min(k, live))
            hits = self._hits(m, rows, scores[rows], -math.inf)
            if hits is not None:
                break
        return self._touch_hits([hits])[0] if touch else hits

    def recall_by_primes(
        self, primes: Iterable[int], k: int = 10, *, touch: bool = True
    ) -> list[Hit]:
        """Active traces sharing dominant primes with ``primes``.

        Ranked by the number of shared primes, then recency (newer ``created``
        first), then the higher id. Served by the in-RAM inverted index.

        Parameters
        ----------
        primes : iterable of int
        k : int
        touch : bool
            As in :meth:`recall`.

        Returns
        -------
        list of Hit
            Score = shared primes / distinct query primes, in (0, 1].
        """
        k = _check_k("k", k)
        self._check_touch(touch)
        query = sorted(set(_check_ids(primes, "primes")))
        if not query:
            return []
        while True:
            m = self._m
            n = m.n
            lists = [p.rows for q in query if (p := self._prime_index.get(q)) is not None]
            cat = np.concatenate(lists) if lists else np.zeros(0, np.int64)
            cat = cat[cat < n]  # rows appended after we took the mirror
            if cat.size == 0:
                return []
            rows, overlap = np.unique(cat, return_counts=True)
            keep = m.valid[rows] != 0
            rows, overlap = rows[keep], overlap[keep]
            if rows.size == 0:
                return []
            order = np.lexsort((-rows, -m.created[rows], -overlap))[:k]
            rows, overlap = rows[order], overlap[order]
            hits = self._hits(m, rows, overlap / len(query), -math.inf)
            if hits is not None:
                break
        return self._touch_hits([hits])[0] if touch else hits

    def _hits(
        self, m: _Mirror, rows: np.ndarray, scores: np.ndarray, threshold: float
    ) -> list[Hit] | None:
        """Read the records of ranked rows; None if some turned out retired (mask them)."""
        keep = scores >= threshold
        rows, scores = rows[keep], scores[keep]
        ids = m.row_id[rows]
        store = self._store
        hits = []
        stale = []
        with store.read() as txn:
            for row, tid, score in zip(rows.tolist(), ids.tolist(), scores.tolist(), strict=True):
                rec = store.get_trace(txn, tid)
                if rec is None or rec.retired:
                    stale.append(row)
                    continue
                hits.append(Hit(record=rec, score=float(score), row=row))
        if stale:
            # Retired by another process since our mirror was built: mask and search again.
            with self._lock:
                for row in stale:
                    if self._m.valid[row]:
                        self._m.valid[row] = 0
                        self._m.active -= 1
                    m.valid[row] = 0
            return None
        return hits

    def _check_touch(self, touch: bool) -> None:
        if touch and self._store.readonly:
            raise StoreUsageError(
                f"the store at {self._store.path} is open read-only, so recall cannot bump"
                " use counts; pass touch=False"
            )

    def _touch_hits(self, groups: list[list[Hit]]) -> list[list[Hit]]:
        """Bump use_count/last_access of every hit (once per group it is in), one txn."""
        bumps = Counter(h.record.id for hits in groups for h in hits)
        if not bumps:
            return groups
        now = float(self._clock())
        store = self._store
        replace = msgspec.structs.replace

        def write(txn: Txn) -> dict[int, TraceRecord]:
            out = {}
            for tid in sorted(bumps):
                rec = store.get_trace(txn, tid)
                if rec is None:
                    continue
                new = replace(rec, use_count=rec.use_count + bumps[tid], last_access=now)
                store.update_trace(txn, new)
                out[tid] = new
            return out

        with self._lock:
            updated = store.write(write)
            m = self._m
            rows = np.array([r.row for r in updated.values()], dtype=np.int64)
            m.last_access[rows] = now
        return [
            [replace(h, record=updated.get(h.record.id, h.record)) for h in hits] for hits in groups
        ]

    # -- reading -----------------------------------------------------------------------------

    def get(self, trace_id: int) -> TraceRecord | None:
        """The trace ``trace_id`` as stored (retired ones too), or None."""
        with self._store.read() as txn:
            return self._store.get_trace(txn, int(trace_id))

    def recent(self, n: int = 10) -> list[TraceRecord]:
        """The ``n`` newest active traces (highest ids first)."""
        n = _check_k("n", n)
        m = self._m
        total = m.n
        valid = m.valid
        rows: list[int] = []
        stop = total
        while stop > 0 and len(rows) < n:
            start = max(0, stop - max(4 * n, 1024))
            # Rows are assigned in id order, so the highest rows are the newest traces.
            found = np.flatnonzero(valid[start:stop])[::-1] + start
            rows.extend(found[: n - len(rows)].tolist())
            stop = start
        ids = m.row_id[np.array(rows, dtype=np.int64)].tolist()
        store = self._store
        with store.read() as txn:
            recs = [store.get_trace(txn, i) for i in ids]
        return [r for r in recs if r is not None and not r.retired]

    @property
    def count(self) -> int:
        """Number of active (non-retired) traces in the mirror."""
        return self._m.active

    @property
    def total(self) -> int:
        """Number of traces in the mirror, retired ones included."""
        return self._m.n

    @property
    def generation(self) -> int:
        """The retirement generation the mirror reflects (see :class:`MemoryState`)."""
        return self._state.generation

    # -- links -------------------------------------------------------------------------------

    def link(
        self, a: int, b: int, weight: float = 1.0, *, directed: bool = False
    ) -> list[LinkRecord]:
        """Entangle two active traces (one write transaction).

        Parameters
        ----------
        a, b : int
            Trace ids (distinct, both active).
        weight : float
            In (0, 1], so activation never grows along a path.
        directed : bool
            False (default): links ``a -> b`` and ``b -> a`` (entanglement is
            symmetric). True: only ``a -> b``.

        Returns
        -------
        list of LinkRecord
            The links written (an existing link is replaced).

        Raises
        ------
        UnknownTraceError, RetiredTraceError
        """
        a, b = _check_ids((a, b), "link ends")
        if a == b:
            raise ArgumentError(f"cannot link trace {a} to itself")
        if not (isinstance(weight, (int, float)) and 0.0 < weight <= 1.0):
            raise ArgumentError(f"weight must be in (0, 1], got {weight!r}")
        now = float(self._clock())
        pairs = [(a, b)] if directed else [(a, b), (b, a)]
        links = [LinkRecord(src=s, dst=d, weight=float(weight), created=now) for s, d in pairs]
        store = self._store

        def write(txn: Txn) -> list[LinkRecord]:
            for end in (a, b):
                self._active_record(txn, end)
            for link in links:
                store.put_link(txn, link)
            return links

        with self._lock:
            return store.write(write)

    def unlink(self, a: int, b: int, *, directed: bool = False) -> int:
        """Remove the link ``a -> b`` (and ``b -> a`` unless ``directed``); returns how many."""
        a, b = _check_ids((a, b), "link ends")
        pairs = [(a, b)] if directed else [(a, b), (b, a)]
        store = self._store
        with self._lock:
            return store.write(lambda txn: sum(store.delete_link(txn, s, d) for s, d in pairs))

    def links(self, trace_id: int) -> list[LinkRecord]:
        """Links out of ``trace_id``, ordered by destination id.

        Raises
        ------
        UnknownTraceError
        """
        (tid,) = _check_ids((trace_id,), "trace_id")
        store = self._store
        with store.read() as txn:
            if store.get_trace(txn, tid) is None:
                raise UnknownTraceError(f"no trace {tid} in the store at {store.path}")
            return list(store.iter_links(txn, tid))

    def spread(
        self,
        seed_ids: Iterable[int],
        hops: int = 2,
        decay: float = 0.5,
        limit: int = 50,
    ) -> list[tuple[int, float]]:
        """Spreading activation over the links from ``seed_ids``.

        Each seed starts with activation 1. At each hop every node activated in
        the previous hop sends ``activation × decay × weight`` along each of its
        out-links; a node's result is the sum of everything it received over all
        hops. Seeds are not listed. Deterministic: nodes are visited in id order.

        Parameters
        ----------
        seed_ids : iterable of int
        hops : int
            Number of propagation steps (>= 0).
        decay : float
            Per-hop factor in (0, 1].
        limit : int
            At most this many results.

        Returns
        -------
        list of (int, float)
            ``(trace id, activation)``, highest activation first, ties by id.

        Raises
        ------
        UnknownTraceError
            A seed is not a trace.
        """
        seeds = sorted(set(_check_ids(seed_ids, "seed_ids")))
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise ArgumentError(f"hops must be an integer >= 0, got {hops!r}")
        if not (isinstance(decay, (int, float)) and 0.0 < decay <= 1.0):
            raise ArgumentError(f"decay must be in (0, 1], got {decay!r}")
        limit = _check_k("limit", limit)
        store = self._store
        total: dict[int, float] = {}
        with store.read() as txn:
            for s in seeds:
                if store.get_trace(txn, s) is None:
                    raise UnknownTraceError(f"no trace {s} in the store at {store.path}")
            frontier = dict.fromkeys(seeds, 1.0)
            for _ in range(hops):
                received: dict[int, float] = {}
                for src in sorted(frontier):
                    push = frontier[src] * decay
                    for link in store.iter_links(txn, src):
                        received[link.dst] = received.get(link.dst, 0.0) + push * link.weight
                for dst in sorted(received):
                    total[dst] = total.get(dst, 0.0) + received[dst]
                frontier = received
                if not frontier:
                    break
        seed_set = set(seeds)
        out = [(i, a) for i, a in total.items() if i not in seed_set]
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:limit]

    # -- maintenance -------------------------------------------------------------------------

    def update(self, records: Sequence[TraceRecord]) -> None:
        """Replace trace records in one write transaction, keeping the mirror in step.

        This is how judged outcomes change ``success_count``/``failure_count``
        and credit changes ``strength``. Identity and content fields (``id``,
        ``row``, ``created``, ``text``, ``primes``) cannot change, nor can
        ``retired`` (use :meth:`retire`).

        Raises
        ------
        UnknownTraceError
            A record's id is not in the store.
        ValueError
            An immutable field differs from the stored record.
        CorruptRecordError
            A field is out of bounds.
        """
        records = list(records)
        if not records:
            return
        store = self._store

        def write(txn: Txn) -> list[TraceRecord]:
            for rec in records:
                old = store.get_trace(txn, rec.id)
                if old is None:
                    raise UnknownTraceError(f"no trace {rec.id} in the store at {store.path}")
                for name in ("row", "created", "text", "primes", "retired"):
                    if getattr(old, name) != getattr(rec, name):
                        raise ArgumentError(
                            f"trace {rec.id}: update() cannot change {name!r}"
                            + (" (use retire())" if name == "retired" else "")
                        )
                store.update_trace(txn, rec)
            return records

        with self._lock:
            done = store.write(write)
            m = self._m
            rows = np.array([r.row for r in done], dtype=np.int64)
            m.strength[rows] = [r.strength for r in done]
            m.importance[rows] = [r.importance for r in done]
            m.last_access[rows] = [r.last_access for r in done]
            m.smf[rows] = np.array([r.smf for r in done], dtype=np.float64)

    def _active_record(self, txn: Txn, trace_id: int) -> TraceRecord:
        rec = self._store.get_trace(txn, trace_id)
        if rec is None:
            raise UnknownTraceError(f"no trace {trace_id} in the store at {self._store.path}")
        if rec.retired:
            raise RetiredTraceError(f"trace {trace_id} is retired")
        return rec

    def retire(self, ids: Iterable[int]) -> list[int]:
        """Retire traces (one write transaction): mark them, mask them, delete their links.

        Retired traces stay in the store (their rows too) and can be read with
        :meth:`get`, but are never recalled, listed or linked again.

        Returns
        -------
        list of int
            The ids retired now (already retired ones are skipped), ascending.

        Raises
        ------
        UnknownTraceError
            An id is not a trace.
        """
        wanted = sorted(set(_check_ids(ids, "ids")))
        if not wanted:
            return []
        store = self._store
        replace = msgspec.structs.replace

        def write(txn: Txn) -> tuple[list[TraceRecord], MemoryState]:
            done = []
            for tid in wanted:
                rec = store.get_trace(txn, tid)
                if rec is None:
                    raise UnknownTraceError(f"no trace {tid} in the store at {store.path}")
                if rec.retired:
                    continue
                new = replace(rec, retired=True)
                store.update_trace(txn, new)
                done.append(new)
            if not done:
                return done, _read_state(txn)
            gone = {r.id for r in done}
            # Links *to* a retired trace can start anywhere: one pass over the link keys.
            doomed = [
                bytes(key)
                for key in txn.cursor("links").iternext(values=False)
                if not gone.isdisjoint(split_link_key(key))
            ]
            for key in doomed:
                txn.delete("links", key)
            state = _read_state(txn)
            state = replace(state, generation=state.generation + 1)
            _write_state(txn, state)
            return done, state

        with self._lock:
            done, state = store.write(write)
            m = self._m
            for rec in done:
                if m.valid[rec.row]:
                    m.valid[rec.row] = 0
                    m.active -= 1
            self._state = state
        return [r.id for r in done]

    def prune(self, policy: PrunePolicy) -> list[int]:
        """Retire the lowest-value traces beyond ``policy.max_active`` (one write transaction).

        Eligible: active traces outside the ``keep_newest`` newest (highest
        ids) whose strength is below ``min_strength``. They are retired lowest
        strength first, then least recently accessed, then lowest id, until at
        most ``max_active`` remain or no eligible trace is left.

        Returns
        -------
        list of int
            The retired ids, ascending.

        Raises
        ------
        ValueError
            The policy is out of bounds.
        """
        if not isinstance(policy, PrunePolicy):
            raise ArgumentTypeError(f"policy must be a PrunePolicy, got {type(policy).__name__}")
        try:
            _POLICY_DECODER.decode(_MSGPACK.encode(policy))
        except msgspec.ValidationError as exc:
            raise ArgumentError(f"invalid PrunePolicy: {exc}") from None
        if math.isnan(policy.min_strength):
            raise ArgumentError("invalid PrunePolicy: min_strength is NaN")
        with self._lock:
            m = self._m
            live = np.flatnonzero(m.valid[: m.n])
            excess = live.size - policy.max_active
            if excess <= 0:
                return []
            # Rows are in id order: the last keep_newest live rows are the newest traces.
            cand = live[: max(0, live.size - policy.keep_newest)]
            cand = cand[m.strength[cand] < policy.min_strength]
            order = np.lexsort((cand, m.last_access[cand], m.strength[cand]))
            victims = cand[order][:excess]
            return self.retire(m.row_id[victims].tolist())

    def decay(self, now: float | None = None, half_life_days: float = 30.0) -> int:
        """Let the strength of unused traces fade toward the floor (one write transaction).

        ``s ← 0.05 + (s − 0.05) · 2^(−Δ / h)`` with ``h = half_life_days`` days and
        ``Δ = now − max(last_access, previous decay time)`` (never negative).
        Measuring Δ from the previous decay makes repeated calls compose: decaying
        at t1 and then at t2 equals decaying once at t2. A recall (which sets
        ``last_access``) restarts the clock of a trace. Efficacy counters are
        never touched.

        Parameters
        ----------
        now : float, optional
            Unix time; the memory's clock if omitted.
        half_life_days : float
            > 0.

        Returns
        -------
        int
            Number of traces whose strength changed.
        """
        if not (isinstance(half_life_days, (int, float)) and half_life_days > 0):
            raise ArgumentError(f"half_life_days must be > 0, got {half_life_days!r}")
        if not math.isfinite(half_life_days):
            raise ArgumentError("half_life_days must be finite")
        now = float(self._clock() if now is None else now)
        if not math.isfinite(now) or now < 0:
            raise ArgumentError(f"now must be a finite unix time, got {now!r}")
        half_life = float(half_life_days) * _SECONDS_PER_DAY
        store = self._store
        replace = msgspec.structs.replace

        def faded(strength: float, last_access: float, since: float) -> float:
            dt = max(0.0, now - max(last_access, since))
            s = STRENGTH_FLOOR + (strength - STRENGTH_FLOOR) * 2.0 ** (-dt / half_life)
            return min(STRENGTH_CEILING, max(STRENGTH_FLOOR, s))

        with self._lock:
            m = self._m
            since = self._state.last_decay
            since = -math.inf if since is None else since
            live = np.flatnonzero(m.valid[: m.n])
            ref = np.maximum(m.last_access[live], since)
            cand = live[(ref < now) & (m.strength[live] > STRENGTH_FLOOR)]
            cand_ids = m.row_id[cand].tolist()

            def write(txn: Txn) -> tuple[list[TraceRecord], MemoryState]:
                state = _read_state(txn)
                prev = -math.inf if state.last_decay is None else state.last_decay
                changed = []
                for tid in cand_ids:
                    rec = store.get_trace(txn, tid)
                    if rec is None or rec.retired:
                        continue
                    s = faded(rec.strength, rec.last_access, prev)
                    if s != rec.strength:
                        new = replace(rec, strength=s)
                        store.update_trace(txn, new)
                        changed.append(new)
                state = replace(state, last_decay=max(now, state.last_decay or 0.0))
                _write_state(txn, state)
                return changed, state

            changed, state = store.write(write)
            rows = np.array([r.row for r in changed], dtype=np.int64)
            m.strength[rows] = [r.strength for r in changed]
            self._state = state
        return len(changed)


def _as_code(value: object, dim: int, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise ArgumentTypeError(f"{name} must be a float array, got dtype {arr.dtype}")
    if arr.shape != (dim,):
        raise ArgumentError(f"{name} must have shape ({dim},), got {arr.shape}")
    arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise ArgumentError(f"{name} contains non-finite values (NaN or inf)")
    return arr


def _check_new_trace(i: int, it: object) -> None:
    if not isinstance(it, NewTrace):
        raise ArgumentTypeError(f"items[{i}] must be a NewTrace, got {type(it).__name__}")
    if not isinstance(it.text, str):
        raise ArgumentTypeError(f"items[{i}].text must be str, got {type(it.text).__name__}")
    if not isinstance(it.kind, str) or not it.kind:
        raise ArgumentError(f"items[{i}].kind must be a non-empty string")
    imp = it.importance
    if isinstance(imp, bool) or not isinstance(imp, (int, float)) or not 0.0 <= imp <= 1.0:
        raise ArgumentError(f"items[{i}].importance must be in [0, 1], got {imp!r}")
    if it.smf is not None:
        s = np.asarray(it.smf, dtype=np.float64)
        if s.shape != (SMF_AXES,) or not np.isfinite(s).all():
            raise ArgumentError(f"items[{i}].smf must be {SMF_AXES} finite floats")
    if it.primes is not None:
        for p in it.primes:
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 2:
                raise ArgumentError(f"items[{i}].primes must be integers >= 2, got {p!r}")
