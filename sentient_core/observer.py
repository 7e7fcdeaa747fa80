"""The observer: a prime-resonance oscillator bank and the Sedenion Memory Field it drives.

Text is encoded into a prime excitation (:mod:`sentient_core.encoder`) and
queued; every tick then runs, in the order of SPEC §3,

1. apply the queued input: ``prsc.excite`` raises the amplitudes of the excited
   primes and pulls their phases toward the input's phases;
2. one PRSC Euler tick of the bank;
3. the SMF update from the new oscillator state;
4. bookkeeping: the bank's coherence and the SMF entropy are recorded in ring
   buffers of the last ``history`` ticks.

Steps 2–4 of any number of ticks run in one :func:`kernels.tick.run_ticks`
kernel call. Ticks are called synchronously (:meth:`Observer.tick`, used by
tests and benchmarks) or by a background thread at a fixed rate
(:meth:`Observer.start`); a lock keeps the two from interleaving.

The state persists as one versioned :class:`ObserverStateRecord` under key
``b"observer"`` of the store's ``state`` sub-database; arrays are kept as raw
float64/int64 bytes, so a restored observer continues bit for bit.

Hot path
--------
``process_text`` + ``tick`` costs ~18 µs on the 2-core dev machine (target
< 50 µs), ~12 µs of it in the encoder. Through the public kernel wrappers it
would cost ~75 µs: their argument checks (dtype, shape, contiguity, an
``isfinite`` pass and ``min`` over every array) measured ~38 µs for
``prsc.excite`` and ~20 µs for ``tick.run_ticks``, against ~1.3 µs and ~1.8 µs
for the kernels themselves. The observer owns its arrays (created and
validated here, never handed out, changed only by the kernels), so it calls the
kernels through :mod:`kernels.unchecked`, whose preconditions it guarantees;
what comes from outside (records, encodings passed to
:meth:`Observer.process_encoded`, encoders other than the built-in ones) is
validated once on the way in.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated, Any

import msgspec
import numpy as np

from kernels import prsc, smf, unchecked
from kernels.checks import check_array, check_int, check_scalar
from sentient_core.encoder import (
    CharPrimeEncoder,
    EncodedText,
    Excitation,
    TextEncoder,
    TokenPrimeEncoder,
    get_encoder,
)
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.store import CorruptRecordError, RecordCodec, SchemaVersionError, Store

__all__ = [
    "OBSERVER_KEY",
    "OBSERVER_STATE_VERSION",
    "STATE_DB",
    "Observer",
    "ObserverStateRecord",
]

#: Sub-database and key of the saved observer state.
STATE_DB = "state"
OBSERVER_KEY = b"observer"
#: Schema version of :class:`ObserverStateRecord` written by this code.
OBSERVER_STATE_VERSION = 1

# Encoders whose excitations are known to be well-formed (int64 indices into
# their bank, finite non-negative amounts, finite phases): no per-call checks.
_TRUSTED_ENCODERS = (TokenPrimeEncoder, CharPrimeEncoder)

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


def _f64_bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=_F64).tobytes()


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


class Observer:
    """PRSC oscillators + Sedenion Memory Field, excited by text (SPEC §3).

    Parameters
    ----------
    n_oscillators : int
        Bank size (≥ 1); oscillators sit on the first ``n_oscillators`` primes.
    seed : int
        Seed of the initial phases and amplitudes (:func:`kernels.prsc.init_state`).
    encoder : TextEncoder, optional
        Text encoder; default ``get_encoder("token", bank_primes=<the bank's primes>)``.
        Excited primes outside the oscillator bank are ignored.
    dt : float
        Tick length (> 0).
    coupling : float
        Oscillator coupling K.
    damping : float
        Amplitude decay rate (``damping·dt`` in [0, 1]).
    eta : float
        SMF blend rate in [0, 1].
    excitation_pull : float
        Fraction of the arc toward the input's phase an excited oscillator
        moves, in [0, 1].
    history : int
        Ticks of coherence/entropy kept (≥ 1).

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """

    def __init__(
        self,
        n_oscillators: int = 64,
        seed: int = 0,
        encoder: TextEncoder | None = None,
        dt: float = 1.0 / 60.0,
        coupling: float = 0.3,
        damping: float = 0.02,
        eta: float = smf.DEFAULT_ETA,
        excitation_pull: float = 0.5,
        history: int = 600,
    ) -> None:
        n = check_int("n_oscillators", n_oscillators, lo=1)
        seed = check_int("seed", seed, lo=0)
        self._set_parameters(seed, dt, coupling, damping, eta, excitation_pull, history)
        state = prsc.init_state(n, seed)
        self._set_state(state, smf.initial(), encoder)
        self._coherence = float(unchecked.prsc_coherence(state.phase, state.amplitude))
        self._entropy = float(unchecked.smf_entropy(self._smf, smf.EPS))

    # -- construction ----------------------------------------------------------------------

    def _set_parameters(
        self,
        seed: int,
        dt: object,
        coupling: object,
        damping: object,
        eta: object,
        excitation_pull: object,
        history: object,
    ) -> None:
        self._seed = seed
        self._dt = check_scalar("dt", dt, lo=0.0, lo_open=True)
        self._coupling = check_scalar("coupling", coupling)
        self._damping = check_scalar("damping", damping, lo=0.0)
        self._decay = 1.0 - self._damping * self._dt
        if self._decay < 0.0:
            raise ArgumentError(f"damping*dt must be <= 1, got {self._damping * self._dt}")
        self._eta = check_scalar("eta", eta, lo=0.0, hi=1.0)
        self._pull = check_scalar("excitation_pull", excitation_pull, lo=0.0, hi=1.0)
        self._history = check_int("history", history, lo=1)

    def _set_state(
        self, state: prsc.PrscState, field: np.ndarray, encoder: TextEncoder | None
    ) -> None:
        # Validated once here; afterwards only the kernels change these arrays.
        self._state = prsc.check_state(state)
        self._smf = check_array("smf", field, dtype=np.float64, shape=(smf.DIM,))
        self._ticks = 0
        self._coh_ring = np.zeros(self._history)
        self._ent_ring = np.zeros(self._history)
        self._ring_pos = 0
        self._ring_count = 0
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._lock = threading.RLock()
        self._thread_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop_event: threading.Event | None = None
        self._set_encoder(encoder)

    def _set_encoder(self, encoder: TextEncoder | None) -> None:
        primes = self._state.primes
        if encoder is None:
            encoder = get_encoder("token", bank_primes=primes)
        bank = getattr(encoder, "bank_primes", None)
        if not callable(getattr(encoder, "encode", None)) or bank is None:
            raise ArgumentTypeError(
                "encoder must be a TextEncoder (with encode() and bank_primes),"
                f" got {type(encoder).__name__}"
            )
        bank = np.asarray(bank, dtype=np.int64)
        self._encoder = encoder
        self._bank_size = int(bank.shape[0])
        self._trusted = isinstance(encoder, _TRUSTED_ENCODERS)
        if np.array_equal(bank, primes):
            self._bank_to_osc = None  # encoder index == oscillator index
        else:
            self._bank_to_osc = prsc.index_of_primes(self._state, np.ascontiguousarray(bank))

    # -- properties ------------------------------------------------------------------------

    @property
    def encoder(self) -> TextEncoder:
        """The text encoder."""
        return self._encoder

    @property
    def n_oscillators(self) -> int:
        """Bank size."""
        return int(self._state.phase.shape[0])

    @property
    def ticks(self) -> int:
        """Ticks run so far."""
        return self._ticks

    @property
    def coherence(self) -> float:
        """Coherence ``|Σ w e^{iφ}| / Σ w`` (``w = max(0.1, A)``) after the last tick."""
        return self._coherence

    @property
    def entropy(self) -> float:
        """SMF entropy (nats) after the last tick."""
        return self._entropy

    @property
    def smf(self) -> np.ndarray:
        """A copy of the SMF field (16,)."""
        with self._lock:
            return self._smf.copy()

    @property
    def primes(self) -> np.ndarray:
        """A copy of the bank's primes (int64, (N,))."""
        return self._state.primes.copy()

    @property
    def pending(self) -> int:
        """Number of queued inputs not yet applied."""
        return len(self._pending)

    @property
    def running(self) -> bool:
        """Whether the background ticker is running."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def oscillators(self) -> prsc.PrscState:
        """A copy of the oscillator bank (phase, amplitude, frequency, primes)."""
        with self._lock:
            return prsc.PrscState(*(a.copy() for a in self._state))

    def prime_state(self) -> np.ndarray:
        """The normalized prime state ``α_p = A_p e^{iφ_p}`` (complex128, (N,))."""
        with self._lock:
            return unchecked.prsc_prime_state(
                self._state.phase, self._state.amplitude, prsc.ZERO_NORM
            )

    def dominant_primes(self, k: int = 8) -> tuple[int, ...]:
        """The ``k`` primes with the largest amplitudes, largest first (ties: smaller prime)."""
        k = check_int("k", k, lo=0)
        with self._lock:
            amp = self._state.amplitude.copy()
        primes = self._state.primes
        order = np.lexsort((primes, -amp))[:k]
        return tuple(int(p) for p in primes[order])

    def nudge_axis(self, axis: int | str, amount: float) -> np.ndarray:
        """Add ``amount`` to one SMF axis and renormalise (reflection's wisdom nudge).

        Returns the new field (a copy).
        """
        k = smf.AXES.index(axis) if isinstance(axis, str) else check_int("axis", axis, lo=0, hi=15)
        amount = check_scalar("amount", amount, lo=-1.0, hi=1.0)
        with self._lock:
            self._smf[k] += amount
            unchecked.smf_normalize(self._smf, self._smf, smf.EPS)
            self._entropy = float(unchecked.smf_entropy(self._smf, smf.EPS))
            return self._smf.copy()

    def orientation(self) -> dict[str, float]:
        """The SMF as ``{axis name: value}`` in :data:`kernels.smf.AXES` order."""
        with self._lock:
            values = self._smf.tolist()
        return dict(zip(smf.AXES, values, strict=True))

    def coherence_history(self) -> np.ndarray:
        """Coherence after each of the last (up to ``history``) ticks, oldest first."""
        with self._lock:
            return self._ring_values(self._coh_ring)

    def entropy_history(self) -> np.ndarray:
        """SMF entropy after each of the last (up to ``history``) ticks, oldest first."""
        with self._lock:
            return self._ring_values(self._ent_ring)

    def _ring_values(self, ring: np.ndarray) -> np.ndarray:
        if self._ring_count < self._history:
            return ring[: self._ring_count].copy()
        return np.concatenate([ring[self._ring_pos :], ring[: self._ring_pos]])

    def coherence_drop(self, window: int | None = None) -> float:
        """How far the current coherence is below its recent mean (≥ 0).

        Parameters
        ----------
        window : int, optional
            Number of recent ticks to average (default: the whole history).

        Returns
        -------
        float
            ``max(0, mean(recent coherence) − coherence)``; 0 before the first tick.
        """
        if window is not None:
            window = check_int("window", window, lo=1)
        recent = self.coherence_history()
        if recent.shape[0] == 0:
            return 0.0
        if window is not None:
            recent = recent[-window:]
        return max(0.0, float(recent.mean()) - self._coherence)

    # -- input -----------------------------------------------------------------------------

    def process_text(self, text: str) -> EncodedText:
        """Encode ``text`` and queue its excitation for the next tick.

        Parameters
        ----------
        text : str

        Returns
        -------
        EncodedText
            The encoding (code, excitation, dominant primes).

        Raises
        ------
        TypeError
            If ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise ArgumentTypeError(f"text must be str, got {type(text).__name__}")
        encoded = self._encoder.encode(text)
        self._queue(encoded.excitation, validate=not self._trusted)
        return encoded

    def process_encoded(self, encoded: EncodedText) -> EncodedText:
        """Queue the excitation of an already encoded text (by this observer's encoder).

        Raises
        ------
        TypeError, ValueError
            If ``encoded`` is not an :class:`EncodedText` or its excitation is malformed.
        """
        if not isinstance(encoded, EncodedText):
            raise ArgumentTypeError(f"encoded must be an EncodedText, got {type(encoded).__name__}")
        self._queue(encoded.excitation, validate=True)
        return encoded

    def _queue(self, excitation: Excitation, *, validate: bool) -> None:
        indices, amounts, phases = excitation.indices, excitation.amounts, excitation.phases
        if validate:
            indices = check_array("excitation.indices", indices, dtype=np.int64, ndim=1)
            m = indices.shape[0]
            amounts = check_array("excitation.amounts", amounts, dtype=np.float64, shape=(m,))
            phases = check_array("excitation.phases", phases, dtype=np.float64, shape=(m,))
            if m and (indices.min() < 0 or indices.max() >= self._bank_size):
                raise ArgumentError(
                    f"excitation.indices must lie in [0, {self._bank_size}) (the encoder's bank)"
                )
            if m and amounts.min() < 0.0:
                raise ArgumentError("excitation.amounts must be >= 0")
        if self._bank_to_osc is not None:
            osc = self._bank_to_osc[indices]
            keep = osc >= 0
            indices, amounts, phases = osc[keep], amounts[keep], phases[keep]
        if indices.shape[0] == 0:
            return  # nothing in the bank is excited (e.g. only stop-words)
        # Encodings are read-only; Numba would compile (and warm up) a second
        # signature of the excite kernel for read-only arrays, so copy them.
        if not indices.flags.writeable:
            indices = indices.copy()
        if not amounts.flags.writeable:
            amounts = amounts.copy()
        if not phases.flags.writeable:
            phases = phases.copy()
        with self._lock:
            self._pending.append((indices, amounts, phases))

    # -- ticking ---------------------------------------------------------------------------

    def tick(self, n: int = 1) -> int:
        """Run ``n`` ticks now: queued input first, then ``n`` ticks in one kernel call.

        Parameters
        ----------
        n : int
            Number of ticks (≥ 0; 0 runs nothing and leaves input queued).

        Returns
        -------
        int
            The tick count afterwards.
        """
        if n.__class__ is not int or n < 0:  # fast path for the common case
            n = check_int("n", n, lo=0)
        with self._lock:
            if n:
                self._tick_locked(n)
            return self._ticks

    def _tick_locked(self, n: int) -> None:
        state = self._state
        if self._pending:
            for indices, amounts, phases in self._pending:
                unchecked.prsc_excite(
                    state.phase, state.amplitude, indices, amounts, phases, self._pull, True
                )
            self._pending.clear()
        size = self._history
        m = n if n < size else size
        pos = self._ring_pos
        direct = pos + m <= size
        if direct:
            coh = self._coh_ring[pos : pos + m]
            ent = self._ent_ring[pos : pos + m]
        else:
            coh = np.empty(m)
            ent = np.empty(m)
        unchecked.run_ticks(
            state.phase,
            state.amplitude,
            state.frequency,
            self._smf,
            n,
            self._dt,
            self._coupling,
            self._decay,
            self._eta,
            coh,
            ent,
        )
        if not direct:
            head = size - pos
            self._coh_ring[pos:] = coh[:head]
            self._coh_ring[: m - head] = coh[head:]
            self._ent_ring[pos:] = ent[:head]
            self._ent_ring[: m - head] = ent[head:]
        self._ring_pos = (pos + m) % size
        self._ring_count = min(size, self._ring_count + m)
        self._coherence = float(coh[m - 1])
        self._entropy = float(ent[m - 1])
        self._ticks += n

    # -- background ticking ----------------------------------------------------------------

    def start(self, rate: float = 60.0) -> bool:
        """Tick in a background thread at ``rate`` ticks per second.

        A no-op if the ticker already runs (there is never more than one). When
        the thread falls behind, it runs the missed ticks in one call, at most
        one second's worth; older missed ticks are dropped.

        Parameters
        ----------
        rate : float
            Ticks per second, in (0, 10000].

        Returns
        -------
        bool
            True if a ticker was started, False if one was already running.
        """
        rate = check_scalar("rate", rate, lo=0.0, hi=10_000.0, lo_open=True)
        with self._thread_lock:
            if self.running:
                return False
            stop_event = threading.Event()
            thread = threading.Thread(
                target=self._ticker, args=(rate, stop_event), name="observer-ticker", daemon=True
            )
            self._stop_event = stop_event
            self._thread = thread
            thread.start()
            return True

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the background ticker (if any) and wait for it to finish."""
        # Join under the lock so that a concurrent start() cannot overlap the
        # old thread with a new one (the ticker never takes this lock).
        with self._thread_lock:
            thread, stop_event = self._thread, self._stop_event
            self._thread = None
            self._stop_event = None
            if thread is not None and stop_event is not None:
                stop_event.set()
                if thread is not threading.current_thread():
                    thread.join(timeout)

    def _ticker(self, rate: float, stop_event: threading.Event) -> None:
        period = 1.0 / rate
        max_batch = max(1, int(rate))
        due = time.monotonic() + period
        while not stop_event.is_set():
            wait = due - time.monotonic()
            if wait > 0.0 and stop_event.wait(wait):
                break
            owed = 1 + int((time.monotonic() - due) * rate)
            if owed > max_batch:
                owed = max_batch
                due = time.monotonic() + period
            else:
                due += owed * period
            self.tick(owed)

    # -- persistence -----------------------------------------------------------------------

    def to_record(self) -> ObserverStateRecord:
        """Snapshot the whole state as an :class:`ObserverStateRecord`."""
        with self._lock:
            state = self._state
            if self._pending:
                indices = np.concatenate([p[0] for p in self._pending])
                amounts = np.concatenate([p[1] for p in self._pending])
                phases = np.concatenate([p[2] for p in self._pending])
            else:
                indices, amounts, phases = np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
            return ObserverStateRecord(
                ticks=self._ticks,
                n=int(state.phase.shape[0]),
                seed=self._seed,
                dt=self._dt,
                coupling=self._coupling,
                damping=self._damping,
                eta=self._eta,
                excitation_pull=self._pull,
                history=self._history,
                encoder=str(getattr(self._encoder, "name", "token")),
                phase=_f64_bytes(state.phase),
                amplitude=_f64_bytes(state.amplitude),
                frequency=_f64_bytes(state.frequency),
                primes=np.ascontiguousarray(state.primes, dtype=_I64).tobytes(),
                smf=_f64_bytes(self._smf),
                coherence=self._coherence,
                entropy=self._entropy,
                coherence_history=_f64_bytes(self._ring_values(self._coh_ring)),
                entropy_history=_f64_bytes(self._ring_values(self._ent_ring)),
                pending_indices=np.ascontiguousarray(indices, dtype=_I64).tobytes(),
                pending_amounts=_f64_bytes(amounts),
                pending_phases=_f64_bytes(phases),
            )

    @classmethod
    def from_record(
        cls, record: ObserverStateRecord, encoder: TextEncoder | None = None
    ) -> Observer:
        """Rebuild an observer from :meth:`to_record` output, bit for bit.

        Parameters
        ----------
        record : ObserverStateRecord
        encoder : TextEncoder, optional
            Default: ``get_encoder(record.encoder, bank_primes=<the bank's primes>)``.
            The encoder is not part of the state: pass the one you used if it
            had non-default settings.

        Raises
        ------
        CorruptRecordError
            A field is malformed (wrong length, non-finite, out of bounds).
        SchemaVersionError
            The record has another schema version.
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

        self = object.__new__(cls)
        try:
            self._set_parameters(
                record.seed,
                record.dt,
                record.coupling,
                record.damping,
                record.eta,
                record.excitation_pull,
                record.history,
            )
        except ValueError as exc:
            raise CorruptRecordError(f"observer state: {exc}") from exc
        if encoder is None:
            encoder = get_encoder(record.encoder, bank_primes=state.primes)
        self._set_state(state, field, encoder)
        self._ticks = record.ticks
        count = coh.shape[0]
        self._coh_ring[:count] = coh
        self._ent_ring[:count] = ent
        self._ring_count = count
        self._ring_pos = count % self._history
        self._coherence = record.coherence
        self._entropy = record.entropy
        if m:
            self._pending.append((pending_idx, pending_amt, pending_ph))
        return self

    def save(self, store: Store) -> None:
        """Write the state to ``store`` (sub-database ``state``, key ``b"observer"``) in one txn."""
        buf = _CODEC.encode(self.to_record())
        store.write(lambda txn: txn.put(STATE_DB, OBSERVER_KEY, buf))

    @classmethod
    def load(cls, store: Store, **defaults: Any) -> Observer:
        """Restore the observer saved in ``store``, or create one if none is saved.

        Parameters
        ----------
        store : Store
        **defaults
            Constructor arguments for a fresh observer when nothing is saved. A
            saved state keeps its own parameters; only ``encoder`` applies to it.

        Raises
        ------
        TypeError
            An unknown keyword.
        SchemaVersionError, CorruptRecordError
            The saved state has another schema version or is malformed.
        """
        unknown = set(defaults) - _INIT_ARGS
        if unknown:
            raise ArgumentTypeError(f"unknown Observer argument(s): {', '.join(sorted(unknown))}")
        with store.read() as txn:
            raw = txn.get(STATE_DB, OBSERVER_KEY)
            record = (
                None if raw is None else _CODEC.decode(raw, where=f"{store.path} state/observer")
            )
        if record is None:
            return cls(**defaults)
        return cls.from_record(record, encoder=defaults.get("encoder"))

    def __repr__(self) -> str:
        return (
            f"Observer(n_oscillators={self.n_oscillators}, ticks={self._ticks},"
            f" coherence={self._coherence:.4f}, running={self.running})"
        )


_INIT_ARGS = frozenset(
    {
        "n_oscillators",
        "seed",
        "encoder",
        "dt",
        "coupling",
        "damping",
        "eta",
        "excitation_pull",
        "history",
    }
)
