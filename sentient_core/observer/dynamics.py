"""The observer's dynamics: the PRSC oscillator bank and the Sedenion Memory Field it drives.

Every tick runs, in the order of SPEC §3,

1. apply the queued input: ``prsc.excite`` raises the amplitudes of the excited
   primes and pulls their phases toward the input's phases;
2. one PRSC Euler tick of the bank;
3. the SMF update from the new oscillator state;
4. bookkeeping: the bank's coherence and the SMF entropy are recorded in ring
   buffers of the last ``history`` ticks (:class:`~.history.History`).

Steps 2–4 of any number of ticks run in one :func:`sentient_kernels.tick.run_ticks`
kernel call.

Hot path
--------
``process_text`` + ``tick`` costs ~18 µs on the 2-core dev machine (target
< 50 µs), ~12 µs of it in the encoder. Through the public kernel wrappers it
would cost ~75 µs: their argument checks (dtype, shape, contiguity, an
``isfinite`` pass and ``min`` over every array) measured ~38 µs for
``prsc.excite`` and ~20 µs for ``tick.run_ticks``, against ~1.3 µs and ~1.8 µs
for the kernels themselves. The dynamics own their arrays (created and
validated here, never handed out, changed only by the kernels), so they call
the kernels through :mod:`sentient_kernels.unchecked`, whose preconditions they
guarantee; what comes from outside (records, encodings passed to
:meth:`Observer.process_encoded`, encoders other than the built-in ones) is
validated once on the way in.
"""

from __future__ import annotations

import threading

import numpy as np

from sentient_core.errors import ArgumentError
from sentient_core.observer.history import History
from sentient_kernels import prsc, smf, unchecked
from sentient_kernels.checks import check_array, check_int, check_scalar

__all__ = ["ObserverDynamics"]


class ObserverDynamics:
    """The bank and the field of an :class:`~sentient_core.observer.Observer`, without text.

    Everything the observer computes: parameters, state, ticks and read-outs.
    Input arrives as queued excitations (``_pending``: oscillator indices,
    amounts, target phases), applied at the next tick. :class:`Observer` adds
    text input, the background ticker and persistence.

    Parameters
    ----------
    n_oscillators, seed, dt, coupling, damping, eta, excitation_pull, history
        As for :class:`~sentient_core.observer.Observer`.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (the message names it).
    """

    def __init__(
        self,
        n_oscillators: int = 64,
        seed: int = 0,
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
        self._set_state(state, smf.initial())
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

    def _set_state(self, state: prsc.PrscState, field: np.ndarray) -> None:
        # Validated once here; afterwards only the kernels change these arrays.
        self._state = prsc.check_state(state)
        self._smf = check_array("smf", field, dtype=np.float64, shape=(smf.DIM,))
        self._ticks = 0
        self._rings = History(self._history)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._lock = threading.RLock()

    def _restore(
        self,
        ticks: int,
        coherence_history: np.ndarray,
        entropy_history: np.ndarray,
        coherence: float,
        entropy: float,
        pending: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    ) -> None:
        """Continue from a saved state (after :meth:`_set_state` with its arrays)."""
        self._ticks = ticks
        self._rings.restore(coherence_history, entropy_history)
        self._coherence = coherence
        self._entropy = entropy
        if pending is not None:
            self._pending.append(pending)

    # -- properties ------------------------------------------------------------------------

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
        """The SMF as ``{axis name: value}`` in :data:`sentient_kernels.smf.AXES` order."""
        with self._lock:
            values = self._smf.tolist()
        return dict(zip(smf.AXES, values, strict=True))

    def coherence_history(self) -> np.ndarray:
        """Coherence after each of the last (up to ``history``) ticks, oldest first."""
        with self._lock:
            return self._rings.coherence()

    def entropy_history(self) -> np.ndarray:
        """SMF entropy after each of the last (up to ``history``) ticks, oldest first."""
        with self._lock:
            return self._rings.entropy()

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
        coh, ent, direct = self._rings.window(n)
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
        self._rings.advance(coh, ent, direct)
        self._coherence = float(coh[-1])
        self._entropy = float(ent[-1])
        self._ticks += n

    def _record_ticks(self, coherence: np.ndarray, entropy: np.ndarray) -> None:
        """Book ``len(coherence)`` ticks run elsewhere (their values after each tick)."""
        n = coherence.shape[0]
        coh, ent, direct = self._rings.window(n)
        m = coh.shape[0]
        coh[:] = coherence[n - m :]
        ent[:] = entropy[n - m :]
        self._rings.advance(coh, ent, direct)
        self._coherence = float(coherence[-1])
        self._entropy = float(entropy[-1])
        self._ticks += n
