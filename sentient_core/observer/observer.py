"""The observer: its dynamics, excited by text, ticked on demand or by a background clock, saved.

:class:`Observer` is :class:`~.dynamics.ObserverDynamics` (bank, field,
ticks, read-outs) plus what makes it an observer: text comes in through an
encoder (:meth:`Observer.process_text`), a background thread can tick it at a
fixed rate (:class:`~.ticker.Ticker`), and its state is saved and restored
bit for bit (:mod:`.state`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sentient_core.encoder import (
    CharPrimeEncoder,
    EncodedText,
    Excitation,
    TextEncoder,
    TokenPrimeEncoder,
    get_encoder,
)
from sentient_core.errors import ArgumentError, ArgumentTypeError
from sentient_core.observer.dynamics import ObserverDynamics
from sentient_core.observer.state import (
    ObserverStateRecord,
    decode_state,
    f64_bytes,
    i64_bytes,
    read_record,
    write_record,
)
from sentient_core.observer.ticker import Ticker
from sentient_core.store import CorruptRecordError, Store
from sentient_kernels import prsc, smf, unchecked
from sentient_kernels.checks import check_array, check_scalar

__all__ = ["Observer"]

# Encoders whose excitations are known to be well-formed (int64 indices into
# their bank, finite non-negative amounts, finite phases): no per-call checks.
_TRUSTED_ENCODERS = (TokenPrimeEncoder, CharPrimeEncoder)


class Observer(ObserverDynamics):
    """PRSC oscillators + Sedenion Memory Field, excited by text (SPEC §3).

    Parameters
    ----------
    n_oscillators : int
        Bank size (≥ 1); oscillators sit on the first ``n_oscillators`` primes.
    seed : int
        Seed of the initial phases and amplitudes (:func:`sentient_kernels.prsc.init_state`).
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
        super().__init__(n_oscillators, seed, dt, coupling, damping, eta, excitation_pull, history)
        self._set_encoder(encoder)
        self._ticker = Ticker("observer-ticker")

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
    def running(self) -> bool:
        """Whether the background ticker is running."""
        return self._ticker.running

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
        # Onto the dynamics' queue (oscillator indices now); the next tick applies it.
        with self._lock:
            self._pending.append((indices, amounts, phases))

    def observe_batch(
        self, offsets: np.ndarray, indices: np.ndarray, amounts: np.ndarray, phases: np.ndarray
    ) -> np.ndarray:
        """Queue input ``t`` and tick once, for every input of a batch, in one kernel call.

        Input ``t`` is the excitation entries ``offsets[t]:offsets[t + 1]`` of a
        CSR batch in this observer's encoder's bank (an
        :class:`~sentient_core.encoder.EncodedBatch`'s ``offsets``, ``indices``,
        ``amounts``, ``phases``). The trajectory is bit for bit that of
        :meth:`process_encoded` then ``tick(1)`` input by input (input queued
        before the call is applied with the first input); the lock is held for
        the whole batch, so a background ticker's ticks fall before or after it.

        Returns
        -------
        ndarray
            float64 (n, 16): the SMF field after each input's tick.

        Raises
        ------
        TypeError, ValueError
            If the arrays are malformed (checked once for the batch).
        """
        offsets = check_array("offsets", offsets, dtype=np.int64, ndim=1, min_rows=1)
        indices = check_array("excitation.indices", indices, dtype=np.int64, ndim=1)
        e = indices.shape[0]
        amounts = check_array("excitation.amounts", amounts, dtype=np.float64, shape=(e,))
        phases = check_array("excitation.phases", phases, dtype=np.float64, shape=(e,))
        if offsets[0] != 0 or offsets[-1] != e or (np.diff(offsets) < 0).any():
            raise ArgumentError(f"offsets must be non-decreasing from 0 to {e}")
        if e and (indices.min() < 0 or indices.max() >= self._bank_size):
            raise ArgumentError(
                f"excitation.indices must lie in [0, {self._bank_size}) (the encoder's bank)"
            )
        if e and amounts.min() < 0.0:
            raise ArgumentError("excitation.amounts must be >= 0")
        if self._bank_to_osc is not None:
            osc = self._bank_to_osc[indices]
            keep = osc >= 0
            kept = np.zeros(e + 1, dtype=np.int64)
            np.cumsum(keep, out=kept[1:])
            offsets = kept[offsets]
            indices, amounts, phases = osc[keep], amounts[keep], phases[keep]
        n = offsets.shape[0] - 1
        coherence, entropy, fields = np.empty(n), np.empty(n), np.empty((n, 16))
        if n == 0:
            return fields  # no input, no tick (input queued before stays queued)
        with self._lock:
            state = self._state
            for pending in self._pending:  # queued before: applied with the first input
                unchecked.prsc_excite(state.phase, state.amplitude, *pending, self._pull, True)
            self._pending.clear()
            unchecked.excite_and_tick(
                state.phase,
                state.amplitude,
                state.frequency,
                self._smf,
                np.ascontiguousarray(offsets),
                np.ascontiguousarray(indices),
                np.ascontiguousarray(amounts),
                np.ascontiguousarray(phases),
                self._pull,
                self._dt,
                self._coupling,
                self._decay,
                self._eta,
                coherence,
                entropy,
                fields,
            )
            self._record_ticks(coherence, entropy)
        return fields

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
        return self._ticker.start(rate, self.tick)

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the background ticker (if any) and wait for it to finish."""
        self._ticker.stop(timeout)

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
                phase=f64_bytes(state.phase),
                amplitude=f64_bytes(state.amplitude),
                frequency=f64_bytes(state.frequency),
                primes=i64_bytes(state.primes),
                smf=f64_bytes(self._smf),
                coherence=self._coherence,
                entropy=self._entropy,
                coherence_history=f64_bytes(self._rings.coherence()),
                entropy_history=f64_bytes(self._rings.entropy()),
                pending_indices=i64_bytes(indices),
                pending_amounts=f64_bytes(amounts),
                pending_phases=f64_bytes(phases),
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
        saved = decode_state(record)
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
            encoder = get_encoder(record.encoder, bank_primes=saved.oscillators.primes)
        self._set_state(saved.oscillators, saved.field)
        self._set_encoder(encoder)
        self._ticker = Ticker("observer-ticker")
        self._restore(
            record.ticks,
            saved.coherence_history,
            saved.entropy_history,
            record.coherence,
            record.entropy,
            saved.pending,
        )
        return self

    def save(self, store: Store) -> None:
        """Write the state to ``store`` (sub-database ``state``, key ``b"observer"``) in one txn."""
        write_record(store, self.to_record())

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
        record = read_record(store)
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
