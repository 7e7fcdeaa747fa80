"""Records, constants, errors and argument checks of the holographic memory.

Errors
------
::

    HolographicMemoryError      base class of the memory's errors (a SentientError)
    ├── EncoderMismatchError    the store's codes were made by another encoder / dimension
    ├── UnknownTraceError       no trace with that id (also a KeyError)
    └── RetiredTraceError       the trace is retired (cannot be linked)

Bad argument values raise ``ArgumentError`` (a ``ValueError``) or
``ArgumentTypeError`` (a ``TypeError``); store failures propagate as
:class:`~sentient_core.store.StoreError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated

import msgspec
import numpy as np

from sentient_core.errors import ArgumentError, ArgumentTypeError, SentientError
from sentient_core.store.records import SMF_AXES, RecordCodec, TraceRecord

if TYPE_CHECKING:
    from sentient_core.store.txn import Txn

__all__ = [
    "MEMORY_STATE",
    "STATE_KEY",
    "STRENGTH_CEILING",
    "STRENGTH_FLOOR",
    "EncoderMismatchError",
    "Hit",
    "HolographicMemoryError",
    "MemoryState",
    "NewTrace",
    "PrunePolicy",
    "RetiredTraceError",
    "Stored",
    "UnknownTraceError",
]

STRENGTH_FLOOR = 0.05
"""Lowest strength a trace can have (the lower bound of :attr:`TraceRecord.strength`)."""

STRENGTH_CEILING = 1.5

STATE_KEY = b"memory/state"
"""Key of the :class:`MemoryState` record in the ``state`` sub-database."""


SECONDS_PER_DAY = 86400.0
E0 = (1.0,) + (0.0,) * (SMF_AXES - 1)  # the SMF start field (coherence = 1)

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
        What the hits are ranked by. :meth:`~HolographicMemory.recall` and
        :meth:`~HolographicMemory.recall_batch`, by ``rank``:

        * ``"hybrid"`` (default for a text): ``(lexical + α·cosine) / (1 + α)``,
          α = :data:`sentient_core.memory.lexical.HYBRID_ALPHA` (0.2); in
          [−α/(1+α), 1]; a trace sharing no content word with the query
          scores ``α·cosine/(1+α)`` (at most 1/6);
        * ``"bm25"``: ``lexical``, in [0, 1];
        * ``"cosine"`` (the only rank for a code query): ``cosine``, in [−1, 1].

        :meth:`~HolographicMemory.recall_by_smf`: cosine of the SMF
        orientations; :meth:`~HolographicMemory.recall_by_primes`: fraction of
        the query primes the trace shares.
    row : int
        The trace's code row.
    lexical : float or None
        BM25 divided by the query's ceiling ``Σ_t w_t·idf(t)`` (see
        :mod:`sentient_kernels.bm25`): the idf-weighted share of the query's terms the
        trace covers, discounted by tf saturation and length, in [0, 1]
        (about 0.45 for a trace of average length holding every query term
        once). None when not computed (cosine rank, SMF, primes).
    cosine : float or None
        Cosine of the trace's code with the query's; None when not computed
        (bm25 rank, SMF, primes).
    """

    record: TraceRecord
    score: float
    row: int
    lexical: float | None = None
    cosine: float | None = None


class Stored(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What became of one item given to :meth:`~HolographicMemory.store_unique`.

    Attributes
    ----------
    record : TraceRecord
        The new trace, or the active trace that already holds this content.
    new : bool
        Whether a trace was stored for it.
    reason : str
        For a duplicate: which trace holds it and why it counts as the same.
    """

    record: TraceRecord
    new: bool
    reason: str = ""


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
POLICY_DECODER = msgspec.msgpack.Decoder(PrunePolicy)


def encode_policy(policy: PrunePolicy) -> bytes:
    """msgpack of ``policy`` (decode it with :data:`POLICY_DECODER` to validate its bounds)."""
    return _MSGPACK.encode(policy)


def unique_primes(primes: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(primes))


def read_state(txn: Txn) -> MemoryState:
    raw = txn.get("state", STATE_KEY)
    if raw is None:
        return MemoryState()
    return MEMORY_STATE.decode(raw, where=f"{txn.store.path} state/{STATE_KEY.decode()}")


def write_state(txn: Txn, state: MemoryState) -> None:
    txn.put("state", STATE_KEY, MEMORY_STATE.encode(state))


def check_k(name: str, k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ArgumentError(f"{name} must be an integer >= 1, got {k!r}")
    return int(k)


NEAR_SHINGLES = 0.8
"""With ``near`` set, an item is also a near-duplicate of a trace among its five
nearest codes when one of them holds this share of the smaller text's 5-word
shingles (:func:`~sentient_core.analysis.shared_shingles`): precision 0.961,
recall 0.984 on 1,600 labelled pairs of Python's docs (``bench/near_duplicates.py``;
0.7: 0.938 / 1.000)."""
NEAR_CANDIDATES = 5
"""How many nearest codes the shingle check reads."""

RANKS = ("hybrid", "bm25", "cosine")
"""Memory's own rankings of a text (:mod:`~sentient_core.memory.lexical`); a code ranks by cosine."""


def check_rank(rank: object, text_query: bool) -> str:
    """The rank to use: ``None`` means hybrid for a text and cosine for a code."""
    if rank is None:
        return "hybrid" if text_query else "cosine"
    if rank not in RANKS:
        raise ArgumentError(f"rank must be one of {', '.join(map(repr, RANKS))}, got {rank!r}")
    if not text_query and rank != "cosine":
        raise ArgumentError(f"a query given as a code can only rank by cosine, not {rank!r}")
    return str(rank)


def check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ArgumentTypeError(f"threshold must be a float, got {type(threshold).__name__}")
    if math.isnan(threshold):
        raise ArgumentError("threshold must not be NaN")
    return float(threshold)


def check_ids(ids: Iterable[int], what: str) -> list[int]:
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
            raise ArgumentError(f"{what} must be non-negative integer trace ids, got {i!r}")
        out.append(int(i))
    return out


# ----------------------------------------------------------------------------- memory


def as_code(value: object, dim: int, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise ArgumentTypeError(f"{name} must be a float array, got dtype {arr.dtype}")
    if arr.shape != (dim,):
        raise ArgumentError(f"{name} must have shape ({dim},), got {arr.shape}")
    arr = arr.astype(np.float32)
    if not np.isfinite(arr).all():
        raise ArgumentError(f"{name} contains non-finite values (NaN or inf)")
    return arr


def check_new_trace(i: int, it: object) -> None:
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
