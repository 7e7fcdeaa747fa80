"""Argument checks shared by the public kernel wrappers (and usable by callers).

Kernels themselves never validate: wrappers call these helpers, which raise
``TypeError`` for the wrong type/dtype and ``ValueError`` for the wrong shape,
layout or non-finite values, always naming the offending argument. Code above
the kernels that validates arrays once and then calls :mod:`sentient_kernels.unchecked`
uses the same helpers, so its messages read the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sentient_kernels.config import jit

__all__ = ["check_array", "check_int", "check_scalar", "count_finite", "is_out_vector"]


def check_array(
    name: str,
    x: object,
    *,
    dtype: type | np.dtype,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    finite: bool = True,
    contiguous: bool = True,
    min_rows: int = 0,
    writeable: bool = False,
) -> np.ndarray:
    """Validate ``x`` as a numpy array and return it unchanged.

    Parameters
    ----------
    name : str
        Argument name used in error messages.
    x : object
        The value to check. It is never copied or converted.
    dtype : numpy dtype
        Required dtype (exact match).
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length. Implies ``ndim``.
    finite : bool
        Reject NaN and inf (only meaningful for float dtypes).
    contiguous : bool
        Require C-contiguity.
    min_rows : int
        Minimum length of the first axis.
    writeable : bool
        Require a writeable array (an output a kernel writes into).

    Raises
    ------
    TypeError
        If ``x`` is not an ndarray or has the wrong dtype.
    ValueError
        If the shape, layout or values are not acceptable.
    """
    want = np.dtype(dtype)
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"{name} must be a numpy.ndarray of dtype {want}, got {type(x).__name__}"
            f" (use np.ascontiguousarray({name}, dtype=np.{want.name}))"
        )
    if x.dtype != want:
        raise TypeError(
            f"{name} must have dtype {want}, got {x.dtype}"
            f" (use np.ascontiguousarray({name}, dtype=np.{want.name}))"
        )
    if shape is not None:
        ndim = len(shape)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {x.shape}")
    if shape is not None:
        for axis, (got, exp) in enumerate(zip(x.shape, shape, strict=True)):
            if exp is not None and got != exp:
                raise ValueError(
                    f"{name} must have shape {_fmt_shape(shape)}, got {x.shape}"
                    f" (axis {axis} is {got}, expected {exp})"
                )
    if x.ndim >= 1 and x.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} row(s), got {x.shape[0]}")
    if contiguous and not x.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (use np.ascontiguousarray({name}))")
    if writeable and not x.flags.writeable:
        raise ValueError(f"{name} must be writeable")
    if finite and want.kind in "fc" and x.size and not np.isfinite(x).all():
        bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
        raise ValueError(f"{name} contains {bad} non-finite value(s) (NaN or inf)")
    return x


_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_VECTOR_STRIDES = (8,)


def is_out_vector(x: object) -> bool:
    """Whether ``x`` can take a kernel's 1-D float64 output with no further check.

    True for exactly an ``ndarray`` with numpy's own float64 dtype object, unit
    stride (so 1-D and C-contiguous) and writeable: the fast path of the
    single-call wrappers' ``out=``. False means "use :func:`check_array`",
    not "invalid" (an ndarray subclass, an equal but distinct dtype object).
    The length is left to the kernel, which reports a wrong one.
    """
    return (
        x.__class__ is _NDARRAY
        and x.dtype is _F64
        and x.strides == _VECTOR_STRIDES
        and x.flags.writeable
    )


def check_scalar(
    name: str,
    value: object,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """Validate a finite real scalar within optional bounds and return it as float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        op = ">" if lo_open else ">="
        raise ValueError(f"{name} must be {op} {lo}, got {v}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        op = "<" if hi_open else "<="
        raise ValueError(f"{name} must be {op} {hi}, got {v}")
    return v


def check_int(name: str, value: object, *, lo: int | None = None, hi: int | None = None) -> int:
    """Validate an integer within optional inclusive bounds and return it as int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi}, got {v}")
    return v


def _fmt_shape(shape: Sequence[int | None]) -> str:
    return (
        "("
        + ", ".join("N" if s is None else str(s) for s in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


# Largest finite float64: ``abs(x) <= _MAX_FINITE`` is False exactly for NaN and ±inf.
_MAX_FINITE = 1.7976931348623157e308


@jit(fastmath=False)
def count_finite(x):
    """Number of finite values (not NaN, not ±inf) in the 1-D float64 array ``x``.

    A Numba function: callable from Python and from ``@njit`` code (where it
    is inlined). Kernels use it to check finiteness in the same call as the
    work, which costs nanoseconds instead of a separate ``np.isfinite`` pass.
    The loop has no floating-point reduction, so it vectorises without
    fast-math.
    """
    n = 0
    for k in range(x.shape[0]):
        n += abs(x[k]) <= _MAX_FINITE
    return n
