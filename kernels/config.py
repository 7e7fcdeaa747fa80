"""Numba compilation flags for every kernel, in one place.

All ``@njit`` decorators in :mod:`kernels` go through :func:`jit` so that the
``cache``, ``fastmath`` and ``parallel`` settings are decided here and can be
changed for a whole run from the environment:

``SENTIENT_NUMBA_CACHE=0``
    Do not write or read the on-disk compilation cache.
``SENTIENT_NUMBA_FASTMATH=0``
    Strict IEEE arithmetic everywhere (slower; useful when bisecting a
    numerical difference).
``SENTIENT_NUMBA_PARALLEL=0``
    Compile ``parallel`` kernels serially (``prange`` becomes ``range``).

It also sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment already sets
it (see the comment at the import of numba below).

Fast-math never includes ``nnan``/``ninf``: public wrappers reject NaN and
inf, and kernels that test for them must keep working.
"""

from __future__ import annotations

import os

# OpenMP worker threads that spin after a parallel region steal the cores from
# whatever runs next, and with libgomp's default policy the first parallel call
# after an idle pause measured 4–8 ms instead of ~0.8 ms (10k-row top-k).
# Passive waiting fixes both; it must be set before the OpenMP runtime starts
# (numba launches its threads lazily, on the first parallel call). An explicit
# OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # (must come after the OpenMP setting above)

__all__ = ["CACHE", "FASTMATH", "PARALLEL", "jit"]


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


def jit(*, parallel: bool = False, fastmath: bool = True):
    """Return the project's ``numba.njit`` decorator.

    Parameters
    ----------
    parallel : bool
        Request ``parallel=True`` (honoured only when :data:`PARALLEL`).
    fastmath : bool
        Use :data:`FASTMATH`; pass ``False`` for kernels whose results must be
        bit-reproducible against a strict reference.
    """
    return numba.njit(
        cache=CACHE,
        nogil=True,
        parallel=bool(parallel and PARALLEL),
        fastmath=FASTMATH if fastmath else False,
    )
