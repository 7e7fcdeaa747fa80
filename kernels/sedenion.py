"""Sedenion arithmetic (16 float64 components, basis e0..e15).

The product is the Cayley–Dickson doubling ``(a, b)(c, d) = (ac − d̄b, da + bc̄)``,
``conj(a, b) = (ā, −b)``, applied recursively from the reals. On basis vectors it
gives ``e_i · e_j = SIGN[i, j] · e_(i XOR j)``; :data:`SIGN` is generated from that
rule at import (see :func:`_cayley_dickson_signs`), never typed in.

The product kernel is generated from :data:`SIGN` as 8-lane vector code (see
:func:`_row_product`); prange splits the rows over the cores. Every operation
accepts a single sedenion ``(16,)`` or a batch ``(N, 16)`` of float64 unless
noted.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from sentient_kernels.checks import check_array, check_scalar, is_out_vector
from sentient_kernels.config import FASTMATH, jit

__all__ = [
    "DIM",
    "SIGN",
    "conj",
    "cosine",
    "dot",
    "inverse",
    "mul",
    "mul_batch",
    "nlerp",
    "norm",
    "normalize",
    "structure_matrix",
    "structure_tensor",
]

DIM = 16
#: Norm below which :func:`inverse`, :func:`normalize` and :func:`nlerp` refuse a row.
ZERO_NORM = 1e-12
#: Norm below which :func:`cosine` returns 0.
COSINE_ZERO_NORM = 1e-10


# ---------------------------------------------------------------------------
# The sign table, generated from the Cayley–Dickson rule.


def _cd_conj(x: np.ndarray) -> np.ndarray:
    if x.size == 1:
        return x.copy()
    half = x.size // 2
    return np.concatenate([_cd_conj(x[:half]), -x[half:]])


def _cd_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Recursive Cayley–Dickson product of two length-2^k vectors."""
    if x.size == 1:
        return x * y
    half = x.size // 2
    a, b = x[:half], x[half:]
    c, d = y[:half], y[half:]
    return np.concatenate(
        [_cd_mul(a, c) - _cd_mul(_cd_conj(d), b), _cd_mul(d, a) + _cd_mul(b, _cd_conj(c))]
    )


def _cayley_dickson_signs(dim: int) -> np.ndarray:
    """Multiply every pair of basis vectors and read off ``e_i e_j = ±e_(i^j)``."""
    eye = np.eye(dim)
    sign = np.zeros((dim, dim), dtype=np.int8)
    for i in range(dim):
        for j in range(dim):
            prod = _cd_mul(eye[i], eye[j])
            nonzero = np.flatnonzero(prod)
            if nonzero.tolist() != [i ^ j] or abs(prod[i ^ j]) != 1.0:
                raise AssertionError(f"e{i}·e{j} is not ±e{i ^ j}: {prod}")
            sign[i, j] = int(prod[i ^ j])
    return sign


# Doubling from the reals through 2, 4, 8 must nest: each table is the corner of the next.
for _dim in (1, 2, 4, 8):
    assert (_cayley_dickson_signs(_dim) == _cayley_dickson_signs(2 * _dim)[:_dim, :_dim]).all()
del _dim

SIGN: np.ndarray = _cayley_dickson_signs(DIM)
SIGN.flags.writeable = False


def structure_tensor() -> np.ndarray:
    """Structure constants ``T`` with ``(ab)_k = Σ_ij a_i b_j T[i, j, k]``.

    Returns
    -------
    numpy.ndarray
        New float64 array of shape (16, 16, 16).
    """
    tensor = np.zeros((DIM, DIM, DIM))
    for i in range(DIM):
        for j in range(DIM):
            tensor[i, j, i ^ j] = SIGN[i, j]
    return tensor


def structure_matrix() -> np.ndarray:
    """``structure_tensor()`` as a (256, 16) matrix: ``ab = (a ⊗ b).ravel() @ M``."""
    return structure_tensor().reshape(DIM * DIM, DIM)


# ---------------------------------------------------------------------------
# The product kernel, generated from SIGN as LLVM vector code.
#
# Row k of ab is Σ_i SIGN[i, i^k] a_i b_(i^k). Holding b as two 8-lane vectors,
# the b_(i^k) for k = 0..15 are two constant shuffles of them, so one product is
# 16 × (broadcast a_i, 2 shuffles, 2 sign flips, 2 FMAs) on 8-lane vectors. Numba's
# loop vectorizer cannot find this (it needs shuffles, and Numba disables the SLP
# vectorizer), and a fully unrolled scalar form (256 scalar FMAs, generated as
# Python source) was 2.2× slower per core, so the body is emitted as LLVM IR
# through a Numba intrinsic.

_LLVM_FLAGS = tuple(sorted(FASTMATH)) if isinstance(FASTMATH, set) else ()


def _is_rows(ty) -> bool:
    # (N, 16) rows, or one (16,) sedenion (then row must be 0).
    return (
        isinstance(ty, types.Array)
        and ty.ndim in (1, 2)
        and ty.layout == "C"
        and ty.dtype == types.float64
    )


@intrinsic
def _row_product(typingctx, a, b, out, row):
    """``out[row] = a[row] · b[row]`` for C-contiguous (N, 16) float64 arrays.

    One sedenion may be passed as a (16,) array with ``row = 0``.

    Returns 1 if a[row] or b[row] holds a NaN or ±inf, else 0: the wrapper checks
    finiteness in the same pass instead of a separate np.isfinite sweep, which
    cost as much as the product itself.
    """
    if not (_is_rows(a) and _is_rows(b) and _is_rows(out) and isinstance(row, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        f64x8 = ir.VectorType(ir.DoubleType(), 8)
        i32x8 = ir.VectorType(ir.IntType(32), 8)
        offset = builder.mul(args[3], ir.Constant(args[3].type, DIM))

        def halves(value, ty):
            row_start = builder.gep(context.make_array(ty)(context, builder, value).data, [offset])
            return [
                builder.bitcast(
                    builder.gep(row_start, [ir.Constant(ir.IntType(64), 8 * h)]),
                    ir.PointerType(f64x8),
                )
                for h in range(2)
            ]

        a_lo, a_hi = (builder.load(ptr, align=8) for ptr in halves(args[0], signature.args[0]))
        b_lo, b_hi = (builder.load(ptr, align=8) for ptr in halves(args[1], signature.args[1]))
        # x·0 is NaN exactly when x is NaN or ±inf (no fast-math flags here, so
        # LLVM may not fold it to 0); any NaN lane marks the row.
        zero = ir.Constant(f64x8, [0.0] * 8)
        probe = [builder.fmul(x, zero) for x in (a_lo, a_hi, b_lo, b_hi)]
        probe = builder.fadd(builder.fadd(probe[0], probe[1]), builder.fadd(probe[2], probe[3]))
        lanes_bad = builder.fcmp_unordered("uno", probe, probe)
        row_bad = builder.icmp_unsigned(
            "!=", builder.bitcast(lanes_bad, ir.IntType(8)), ir.Constant(ir.IntType(8), 0)
        )
        acc = [None, None]
        for i in range(DIM):
            src = a_lo if i < 8 else a_hi
            a_i = builder.shuffle_vector(src, src, ir.Constant(i32x8, [i % 8] * 8))
            for h in range(2):
                lanes = range(8 * h, 8 * h + 8)
                b_perm = builder.shuffle_vector(
                    b_lo, b_hi, ir.Constant(i32x8, [i ^ k for k in lanes])
                )
                signs = ir.Constant(f64x8, [float(SIGN[i, i ^ k]) for k in lanes])
                signed_a = builder.fmul(a_i, signs, flags=_LLVM_FLAGS)
                term = builder.fmul(signed_a, b_perm, flags=_LLVM_FLAGS)
                acc[h] = term if acc[h] is None else builder.fadd(acc[h], term, flags=_LLVM_FLAGS)
        for ptr, value in zip(halves(args[2], signature.args[2]), acc, strict=True):
            builder.store(value, ptr, align=8)
        return builder.zext(row_bad, ir.IntType(64))

    return types.int64(a, b, out, row), codegen


# Below this many rows the thread launch costs more than it saves.
_PARALLEL_MIN_ROWS = 4096


@jit(parallel=True)
def _mul_rows(a, b, out):
    """out[r] = a[r] b[r]; returns the number of rows with a non-finite input."""
    n = a.shape[0]
    n_bad = 0
    # Blocks of 1024 rows per prange task: amortises scheduling, still balances.
    for block in prange((n + 1023) // 1024):
        for r in range(block * 1024, min(n, (block + 1) * 1024)):
            n_bad += _row_product(a, b, out, r)  # type: ignore[call-arg]  # typingctx is implicit
    return n_bad


@jit()
def _mul_rows_serial(a, b, out):
    n_bad = 0
    for r in range(a.shape[0]):
        n_bad += _row_product(a, b, out, r)  # type: ignore[call-arg]  # typingctx is implicit
    return n_bad


@jit()
def _mul_one(a, b, out):
    """out = a·b for (16,) vectors; 0, 1 if a or b holds NaN or ±inf, 2 if a shape is not (16,)."""
    if a.shape[0] != DIM or b.shape[0] != DIM or out.shape[0] != DIM:
        return 2
    return _row_product(a, b, out, 0)  # type: ignore[call-arg]  # typingctx is implicit


# ---------------------------------------------------------------------------
# Row-wise helpers.


@jit()
def _conj_rows(a, out):
    for r in range(a.shape[0]):
        out[r, 0] = a[r, 0]
        for k in range(1, 16):
            out[r, k] = -a[r, k]


@jit()
def _dot_rows(a, b, out):
    for r in range(a.shape[0]):
        acc = 0.0
        for k in range(16):
            acc += a[r, k] * b[r, k]
        out[r] = acc


@jit()
def _norm_rows(a, out):
    for r in range(a.shape[0]):
        acc = 0.0
        for k in range(16):
            acc += a[r, k] * a[r, k]
        out[r] = np.sqrt(acc)


@jit()
def _scaled_rows(a, out, squared, eps):
    """out = a / |a| (or a / |a|² if ``squared``); returns the first row with |a| < eps, or -1."""
    for r in range(a.shape[0]):
        acc = 0.0
        for k in range(16):
            acc += a[r, k] * a[r, k]
        if np.sqrt(acc) < eps:
            return r
        scale = 1.0 / acc if squared else 1.0 / np.sqrt(acc)
        for k in range(16):
            out[r, k] = a[r, k] * scale
    return -1


@jit()
def _inverse_rows(a, out, eps):
    """out = conj(a) / |a|²; returns the first row with |a| < eps, or -1."""
    bad = _scaled_rows(a, out, True, eps)
    if bad >= 0:
        return bad
    for r in range(a.shape[0]):
        for k in range(1, 16):
            out[r, k] = -out[r, k]
    return -1


@jit()
def _cosine_rows(a, b, out, eps):
    for r in range(a.shape[0]):
        ab = 0.0
        aa = 0.0
        bb = 0.0
        for k in range(16):
            ab += a[r, k] * b[r, k]
            aa += a[r, k] * a[r, k]
            bb += b[r, k] * b[r, k]
        na = np.sqrt(aa)
        nb = np.sqrt(bb)
        out[r] = 0.0 if na < eps or nb < eps else ab / (na * nb)


@jit()
def _nlerp_rows(a, b, t, out, eps):
    """out = normalize((1 - t) a + t b); returns the first degenerate row, or -1."""
    s = 1.0 - t
    for r in range(a.shape[0]):
        for k in range(16):
            out[r, k] = s * a[r, k] + t * b[r, k]
    return _scaled_rows(out, out, False, eps)


# ---------------------------------------------------------------------------
# Public wrappers.

# Fast-path test of single-call wrappers: exactly an ndarray, numpy's own
# float64 dtype object (an identity test: an equal but distinct dtype object
# just takes the slow path), 1-D with unit stride (so C-contiguous). Anything
# else takes the full checks of sentient_kernels.checks, which accept or name the
# problem.
_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_VECTOR_STRIDES = (8,)


def _check_sedenions(name: str, x: object) -> np.ndarray:
    """Accept (16,) or (N, 16) float64, C-contiguous, finite."""
    shape = (DIM,) if getattr(x, "ndim", 2) == 1 else (None, DIM)
    return check_array(name, x, dtype=np.float64, shape=shape)


def _check_pair(a: object, b: object) -> tuple[np.ndarray, np.ndarray]:
    a = _check_sedenions("a", a)
    b = _check_sedenions("b", b)
    if a.shape != b.shape:
        raise ValueError(f"b must have the same shape as a {a.shape}, got {b.shape}")
    return a, b


def _rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, DIM)


def _check_out(out: object, shape: tuple[int, ...], *inputs: np.ndarray) -> np.ndarray:
    out = check_array("out", out, dtype=np.float64, shape=shape, finite=False, writeable=True)
    if any(np.may_share_memory(out, x) for x in inputs):
        raise ValueError("out must not overlap the inputs")
    return out


def _raise_degenerate(name: str, x: np.ndarray, row: int, what: str) -> None:
    where = "" if x.ndim == 1 else f" (row {row})"
    raise ValueError(f"{name} has norm < {ZERO_NORM:g}{where}; {what} is undefined")


def mul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Sedenion product ``ab`` of one pair.

    Parameters
    ----------
    a, b : numpy.ndarray
        float64, shape (16,), C-contiguous, finite.
    out : numpy.ndarray, optional
        float64 (16,), C-contiguous, writeable destination; may be ``a`` or
        ``b`` itself (the kernel reads both before it writes).

    Returns
    -------
    numpy.ndarray
        ``out`` (a new (16,) array if not given).

    Notes
    -----
    A single call costs well under 1 µs more than the kernel itself: arrays of
    the exact type, dtype and layout go straight to the kernel, which checks
    shape and finiteness in the product pass; anything else (or a failed
    kernel check) takes the full checks, which name the bad argument. A bad
    ``a`` or ``b`` leaves ``out`` as it was only when the full checks catch it
    first; after a NaN or inf reached the kernel, ``out`` holds the IEEE result.
    """
    # Inline tests, cheapest first (a helper call would cost as much as the
    # tests); they only prove the kernel's argument types (see _NDARRAY), and
    # the kernel checks shape and finiteness. No message is built here.
    if (
        a.__class__ is _NDARRAY
        and b.__class__ is _NDARRAY
        and a.dtype is _F64
        and b.dtype is _F64
        and a.strides == _VECTOR_STRIDES
        and b.strides == _VECTOR_STRIDES
    ):
        if out is None:
            out = np.empty(DIM)
            if not _mul_one(a, b, out):
                return out
        elif is_out_vector(out) and not _mul_one(a, b, out):
            return out
    check_array("a", a, dtype=np.float64, shape=(DIM,))
    check_array("b", b, dtype=np.float64, shape=(DIM,))
    out = np.empty(DIM) if out is None else _check_out(out, (DIM,))
    _mul_one(a, b, out)
    return out


def mul_batch(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Row-wise sedenion products ``out[n] = a[n] b[n]``, parallel over rows.

    Parameters
    ----------
    a, b : numpy.ndarray
        float64, shape (N, 16), C-contiguous, finite.
    out : numpy.ndarray, optional
        float64 (N, 16) destination, must not overlap ``a`` or ``b``.

    Returns
    -------
    numpy.ndarray
        ``out`` (allocated if not given).

    Raises
    ------
    ValueError
        If ``a`` or ``b`` holds NaN or inf. Finiteness is checked by the kernel
        during the product, so a given ``out`` has been overwritten by then.
    """
    a = check_array("a", a, dtype=np.float64, shape=(None, DIM), finite=False)
    b = check_array("b", b, dtype=np.float64, shape=(a.shape[0], DIM), finite=False)
    out = np.empty_like(a) if out is None else _check_out(out, a.shape, a, b)
    kernel = _mul_rows if a.shape[0] >= _PARALLEL_MIN_ROWS else _mul_rows_serial
    if kernel(a, b, out):
        check_array("a", a, dtype=np.float64)
        check_array("b", b, dtype=np.float64)
    return out


def conj(a: np.ndarray) -> np.ndarray:
    """Conjugate ``(a0, −a1, …, −a15)`` of (16,) or (N, 16) sedenions (new array)."""
    a = _check_sedenions("a", a)
    out = np.empty_like(a)
    _conj_rows(_rows(a), _rows(out))
    return out


def dot(a: np.ndarray, b: np.ndarray) -> float | np.ndarray:
    """Euclidean inner product Σ a_k b_k: a float for (16,), shape (N,) for (N, 16)."""
    a, b = _check_pair(a, b)
    out = np.empty(_rows(a).shape[0])
    _dot_rows(_rows(a), _rows(b), out)
    return float(out[0]) if a.ndim == 1 else out


def norm(a: np.ndarray) -> float | np.ndarray:
    """Euclidean norm |a|: a float for (16,), shape (N,) for (N, 16)."""
    a = _check_sedenions("a", a)
    out = np.empty(_rows(a).shape[0])
    _norm_rows(_rows(a), out)
    return float(out[0]) if a.ndim == 1 else out


def normalize(a: np.ndarray) -> np.ndarray:
    """``a / |a|`` (new array).

    Raises
    ------
    ValueError
        If |a| (of any row) is below ``ZERO_NORM`` = 1e-12: there is no direction.
    """
    a = _check_sedenions("a", a)
    out = np.empty_like(a)
    bad = _scaled_rows(_rows(a), _rows(out), False, ZERO_NORM)
    if bad >= 0:
        _raise_degenerate("a", a, bad, "normalize")
    return out


def inverse(a: np.ndarray) -> np.ndarray:
    """Multiplicative inverse ``conj(a) / |a|²`` (new array).

    Raises
    ------
    ValueError
        If |a| (of any row) is below ``ZERO_NORM`` = 1e-12.
    """
    a = _check_sedenions("a", a)
    out = np.empty_like(a)
    bad = _inverse_rows(_rows(a), _rows(out), ZERO_NORM)
    if bad >= 0:
        _raise_degenerate("a", a, bad, "inverse")
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float | np.ndarray:
    """Cosine similarity ⟨a, b⟩/(|a||b|); 0 where either norm is below 1e-10.

    A float for (16,) inputs, shape (N,) for (N, 16) inputs (row-wise).
    """
    a, b = _check_pair(a, b)
    out = np.empty(_rows(a).shape[0])
    _cosine_rows(_rows(a), _rows(b), out, COSINE_ZERO_NORM)
    return float(out[0]) if a.ndim == 1 else out


def nlerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """Normalised linear interpolation ``normalize((1 − t) a + t b)``, t in [0, 1].

    No shortest-path sign flip is applied (sedenions are not a double cover).

    Raises
    ------
    ValueError
        If the interpolant has norm below 1e-12 (e.g. ``b = −a``, ``t = 0.5``).
    """
    a, b = _check_pair(a, b)
    t = check_scalar("t", t, lo=0.0, hi=1.0)
    out = np.empty_like(a)
    bad = _nlerp_rows(_rows(a), _rows(b), t, _rows(out), ZERO_NORM)
    if bad >= 0:
        _raise_degenerate("(1 - t) a + t b", a, bad, "nlerp")
    return out


def _warmup() -> None:
    """Compile every kernel for the signatures used by the wrappers."""
    one = np.zeros(DIM)
    one[0] = 1.0
    rows = one.reshape(1, DIM)
    out = np.empty_like(rows)
    scalars = np.empty(1)
    _mul_rows(rows, rows, out)
    _mul_rows_serial(rows, rows, out)
    _mul_one(one, one, np.empty(DIM))
    _conj_rows(rows, out)
    _dot_rows(rows, rows, scalars)
    _norm_rows(rows, scalars)
    _scaled_rows(rows, out, False, ZERO_NORM)
    _inverse_rows(rows, out, ZERO_NORM)
    _cosine_rows(rows, rows, scalars, COSINE_ZERO_NORM)
    _nlerp_rows(rows, rows, 0.5, out, ZERO_NORM)
