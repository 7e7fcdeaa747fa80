"""Memory credit with hysteresis: surprise events change memory strength slowly.

Each memory ``m`` keeps a rolling ``credit``, the length of its current run
of same-direction signals (``streak``), that run's direction (``last_dir``,
0 before the first signal) and its ``strength``. An event ``(m, dir, s)``
says memory ``m`` was right (``dir = +1``) or wrong (``dir = −1``) with
surprise magnitude ``s`` in [0, 1]::

    e(s)    = 0 if s < 0.20 else ((s − 0.20) / 0.80)²
    credit ← 0.85·credit + dir·e

Only a *signal* (an event with ``e > 0``, i.e. ``s > 0.20``) touches the
streak: same direction as ``last_dir`` → ``streak + 1``, otherwise
``streak = 1`` and ``last_dir = dir``. The gate is evaluated after each signal
and opens when ``|credit| ≥ 0.75`` and ``streak ≥ 2``; then::

    strength ← clip(strength + sign(credit)·min(0.08, 0.02 + 0.06·min(|credit| − 0.75, 1)),
                    0.05, 1.5)
    credit   ← 0.35·credit

Decisions the spec leaves open (see the module tests):

* A sub-threshold event (``e = 0``) is noise: the credit still decays by
  0.85, but the streak and ``last_dir`` are left as they were (a weak event
  neither extends nor breaks a run) and the gate is not evaluated, so noise
  never changes strength.
* The streak is **not** reset when the gate fires; it counts consecutive
  same-direction signals, a fact about the event history. Hysteresis comes
  from ``credit ← 0.35·credit``: a run of ``s = 1.0`` signals changes strength
  on events 2, 3, 4, ...; a run of ``s = 0.6`` on events 4, 7, 10, ...

With these rules ``s = 1.0`` repeated in one direction first changes strength
on the 2nd event and ``s = 0.6`` on the 4th, in both directions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sentient_kernels.checks import check_array, check_int, check_scalar
from sentient_kernels.config import jit

__all__ = [
    "STRENGTH_MAX",
    "STRENGTH_MIN",
    "CreditState",
    "apply_events",
    "evidence",
    "new_state",
]

EVIDENCE_THRESHOLD = 0.20
EVIDENCE_SPAN = 0.80  # 1 − threshold, written out so e(1) is exactly 1
CREDIT_DECAY = 0.85
GATE_CREDIT = 0.75
GATE_STREAK = 2
STEP_BASE = 0.02
STEP_SLOPE = 0.06
STEP_MAX = 0.08
CREDIT_KEEP = 0.35
STRENGTH_MIN = 0.05
STRENGTH_MAX = 1.5


class CreditState(NamedTuple):
    """Per-memory credit state as four C-contiguous ``(M,)`` arrays.

    Attributes
    ----------
    credit : ndarray of float64
        Rolling signed evidence.
    streak : ndarray of int64
        Length of the current run of same-direction signals (0 = none yet).
    last_dir : ndarray of int8
        Direction of that run, −1 or +1 (0 = no signal yet).
    strength : ndarray of float64
        Memory strength in [0.05, 1.5].
    """

    credit: np.ndarray
    streak: np.ndarray
    last_dir: np.ndarray
    strength: np.ndarray


# --------------------------------------------------------------------------- kernels
# Strict IEEE arithmetic (fastmath=False): the event loop is sequential anyway,
# and results must equal the plain-Python reference bit for bit.


@jit(fastmath=False)
def _evidence(s: float) -> float:
    if s < EVIDENCE_THRESHOLD:
        return 0.0
    x = (s - EVIDENCE_THRESHOLD) / EVIDENCE_SPAN
    return x * x


@jit(fastmath=False)
def _evidence_array(surprise, out):
    for k in range(surprise.shape[0]):
        out[k] = _evidence(surprise[k])


@jit(fastmath=False)
def _apply_events(credit, streak, last_dir, strength, memory_index, direction, surprise, delta):
    for k in range(memory_index.shape[0]):
        m = memory_index[k]
        d = direction[k]
        e = _evidence(surprise[k])
        c = CREDIT_DECAY * credit[m] + d * e
        change = 0.0
        if e > 0.0:
            if last_dir[m] == d:
                streak[m] += 1
            else:
                streak[m] = 1
                last_dir[m] = d
            magnitude = abs(c)
            if magnitude >= GATE_CREDIT and streak[m] >= GATE_STREAK:
                step = min(STEP_MAX, STEP_BASE + STEP_SLOPE * min(magnitude - GATE_CREDIT, 1.0))
                old = strength[m]
                new = old + step if c > 0.0 else old - step
                new = min(STRENGTH_MAX, max(STRENGTH_MIN, new))
                strength[m] = new
                change = new - old
                c = CREDIT_KEEP * c
        credit[m] = c
        delta[k] = change


# --------------------------------------------------------------------------- wrappers


def _check_state(state: object) -> CreditState:
    if not isinstance(state, CreditState):
        raise TypeError(f"state must be a CreditState, got {type(state).__name__}")
    credit = check_array("state.credit", state.credit, dtype=np.float64, ndim=1)
    m = credit.shape[0]
    streak = check_array("state.streak", state.streak, dtype=np.int64, shape=(m,))
    last_dir = check_array("state.last_dir", state.last_dir, dtype=np.int8, shape=(m,))
    strength = check_array("state.strength", state.strength, dtype=np.float64, shape=(m,))
    if m:
        if streak.min() < 0:
            raise ValueError(f"state.streak must be >= 0, got min {streak.min()}")
        if np.abs(last_dir).max() > 1:
            raise ValueError("state.last_dir must hold only -1, 0 or +1")
        lo, hi = strength.min(), strength.max()
        if lo < STRENGTH_MIN or hi > STRENGTH_MAX:
            raise ValueError(
                f"state.strength must lie in [{STRENGTH_MIN}, {STRENGTH_MAX}], got range [{lo}, {hi}]"
            )
    return state


def new_state(m: int, strength: float = 1.0) -> CreditState:
    """Fresh state for ``m`` memories: zero credit, no streak, the given strength.

    Parameters
    ----------
    m : int
        Number of memories (≥ 0).
    strength : float
        Initial strength of every memory, in [0.05, 1.5].
    """
    m = check_int("m", m, lo=0)
    strength = check_scalar("strength", strength, lo=STRENGTH_MIN, hi=STRENGTH_MAX)
    return CreditState(
        np.zeros(m, dtype=np.float64),
        np.zeros(m, dtype=np.int64),
        np.zeros(m, dtype=np.int8),
        np.full(m, strength, dtype=np.float64),
    )


def evidence(s: float | np.ndarray) -> float | np.ndarray:
    """Evidence of a surprise magnitude: 0 below 0.20, else ``((s − 0.20)/0.80)²``.

    Parameters
    ----------
    s : float or ndarray of float64, shape (E,)
        Surprise magnitude(s) in [0, 1].

    Returns
    -------
    float or ndarray of float64
        Same form as ``s``; in [0, 1].
    """
    if isinstance(s, np.ndarray):
        s = check_array("s", s, dtype=np.float64, ndim=1)
        if s.shape[0] and (s.min() < 0.0 or s.max() > 1.0):
            raise ValueError(f"s must lie in [0, 1], got range [{s.min()}, {s.max()}]")
        out = np.empty(s.shape[0], dtype=np.float64)
        _evidence_array(s, out)
        return out
    return float(_evidence(check_scalar("s", s, lo=0.0, hi=1.0)))


def apply_events(
    state: CreditState,
    memory_index: np.ndarray,
    direction: np.ndarray,
    surprise: np.ndarray,
) -> np.ndarray:
    """Apply surprise events in order, in place, in one kernel call.

    Parameters
    ----------
    state : CreditState
        Updated in place.
    memory_index : ndarray of int64, shape (E,)
        Memory of each event, in [0, M).
    direction : ndarray of int8, shape (E,)
        +1: the memory was right (strength may rise); −1: it was wrong.
    surprise : ndarray of float64, shape (E,)
        Surprise magnitudes in [0, 1].

    Returns
    -------
    ndarray of float64, shape (E,)
        The strength change each event caused, after clamping to
        [0.05, 1.5]; 0 where the gate stayed closed (or the strength was
        already at the bound it was pushed toward).
    """
    _check_state(state)
    m = state.credit.shape[0]
    memory_index = check_array("memory_index", memory_index, dtype=np.int64, ndim=1)
    e = memory_index.shape[0]
    direction = check_array("direction", direction, dtype=np.int8, shape=(e,))
    surprise = check_array("surprise", surprise, dtype=np.float64, shape=(e,))
    if e:
        lo, hi = memory_index.min(), memory_index.max()
        if lo < 0 or hi >= m:
            raise ValueError(f"memory_index must lie in [0, {m}), got range [{lo}, {hi}]")
        if not np.all((direction == 1) | (direction == -1)):
            raise ValueError("direction must hold only -1 or +1")
        if surprise.min() < 0.0 or surprise.max() > 1.0:
            raise ValueError(
                f"surprise must lie in [0, 1], got range [{surprise.min()}, {surprise.max()}]"
            )
    delta = np.empty(e, dtype=np.float64)
    _apply_events(
        state.credit,
        state.streak,
        state.last_dir,
        state.strength,
        memory_index,
        direction,
        surprise,
        delta,
    )
    return delta


def _warmup() -> None:
    state = new_state(2)
    idx = np.array([0, 1, 0], dtype=np.int64)
    direction = np.array([1, -1, 1], dtype=np.int8)
    surprise = np.array([1.0, 0.1, 0.6])
    _apply_events(*state, idx, direction, surprise, np.empty(3))
    _evidence_array(surprise, np.empty(3))
    _evidence(0.5)
