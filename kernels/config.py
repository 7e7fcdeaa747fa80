"""Numba compilation flags for every kernel, in one place.

All ``@njit`` decorators in :mod:`sentient_kernels` go through :func:`jit` so that the
``cache``, ``fastmath`` and ``parallel`` settings are decided here and can be
changed for a whole run from the environment:

``SENTIENT_NUMBA_CACHE=0``
    Do not write or read the on-disk compilation cache.
``SENTIENT_NUMBA_FASTMATH=0``
    Strict IEEE arithmetic everywhere (slower; useful when bisecting a
    numerical difference).
``SENTIENT_NUMBA_PARALLEL=0``
    Compile ``parallel`` kernels serially (``prange`` becomes ``range``).

Importing this module changes nothing outside it (no environment variable,
no thread): a program that wants OpenMP's passive waiting calls
:func:`prefer_passive_threads` itself, as the ``sentient`` command does.

Fast-math never includes ``nnan``/``ninf``: public wrappers reject NaN and
inf, and kernels that test for them must keep working.
"""

from __future__ import annotations

import os

import numba
import numba.np.ufunc.parallel

__all__ = ["CACHE", "FASTMATH", "PARALLEL", "jit", "prefer_passive_threads"]


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() not in {"0", "false", "no", "off"}


CACHE: bool = _env_flag("SENTIENT_NUMBA_CACHE", True)
PARALLEL: bool = _env_flag("SENTIENT_NUMBA_PARALLEL", True)
# Reassociation lets LLVM vectorise reductions; contraction allows FMA.
# "nnan"/"ninf" are deliberately absent (see module docstring).
FASTMATH: set[str] | bool = (
    {"nsz", "arcp", "contract", "afn", "reassoc"}
    if _env_flag("SENTIENT_NUMBA_FASTMATH", True)
    else False
)


def jit(*, parallel: bool = False, fastmath: bool = True, inline: bool = False):
    """Return the project's ``numba.njit`` decorator.

    Parameters
    ----------
    parallel : bool
        Request ``parallel=True`` (honoured only when :data:`PARALLEL`).
    fastmath : bool
        Use :data:`FASTMATH`; pass ``False`` for kernels whose results must be
        bit-reproducible against a strict reference.
    inline : bool
        Inline the function into its ``@njit`` callers at Numba's IR level
        (``inline="always"``), for small helpers called once per step of a
        hot loop: a real call there passes arrays with reference counting,
        which measured ~90 ns per call.
    """
    return numba.njit(
        cache=CACHE,
        nogil=True,
        parallel=bool(parallel and PARALLEL),
        fastmath=FASTMATH if fastmath else False,
        inline="always" if inline else "never",
    )


def prefer_passive_threads() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` for this process, unless it is already set.

    OpenMP worker threads that spin after a parallel region steal the cores
    from whatever runs next, and with libgomp's default policy the first
    parallel call after an idle pause measured 4–8 ms instead of ~0.8 ms
    (10k-row top-k). Passive waiting fixes both. The setting is process-wide
    (it also reaches any other OpenMP library the process loads), so it is
    the application's choice: the ``sentient`` command calls this at start-up,
    and importing :mod:`sentient_kernels` never does.

    Call it before the first parallel kernel runs: Numba starts its threading
    layer lazily on that call, and the OpenMP runtime reads the variable only
    when it starts. An ``OMP_WAIT_POLICY`` already in the environment wins.

    Returns
    -------
    bool
        True if the variable was set here; False if the environment already
        had one or Numba's threads were already running (too late to matter).
    """
    if "OMP_WAIT_POLICY" in os.environ:
        return False
    # numba keeps no public flag for "threading layer started"; without this
    # private one we would only lose the False for a too-late call.
    if getattr(numba.np.ufunc.parallel, "_is_initialized", False):
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True
