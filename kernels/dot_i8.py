"""Exact int8 × int16 row dots on 256-bit byte multiply-adds (AVX-VNNI when the CPU has it).

The int8 scan of :mod:`sentient_kernels.quantized` needs ``Σ_j c_j p_j`` for
int8 codes ``c`` and an int16 query ``p``, exactly, for every row. Written as a
plain loop, LLVM makes it ``pmaddwd`` on 128-bit halves (int32 lanes in 256
bits, the 16-bit products in 128), and the scan was bound by that arithmetic.

With VNNI, ``vpdpbusd`` multiplies 32 unsigned bytes by 32 signed bytes and
adds groups of four into 8 int32 lanes, in one instruction. The codes become
unsigned by flipping their top bit (``c ^ 0x80 = c + 128`` as a byte), and
``p`` is split into signed bytes, ``p = 256·h + l`` with ``l`` the low byte
taken in [-128, 127] and ``h`` in [-128, 127] (which needs
``|p| ≤`` :data:`P_MAX`), so that::

    Σ c·p = 256·Σ (c + 128)·h + Σ (c + 128)·l − 128·Σ p

two ``vpdpbusd`` per 32 columns, and a constant of the query (:func:`split_query`).
int32 arithmetic wraps (``vpdpbusd`` does not saturate), so the result is exact
whenever the true dot fits in int32, which the caller guarantees by capping
``|p|``, whatever the intermediate terms do.

Which path is compiled is decided when the caller is compiled, from the
features of Numba's own target machine (the on-disk cache is keyed by CPU):
without VNNI, :func:`dot_row` is the plain loop :func:`dot_row_generic`, so
nothing assumes VNNI. :func:`prefetch_row` is LLVM's portable prefetch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.registry import cpu_target
from numba.extending import intrinsic, overload

from sentient_kernels.checks import check_array
from sentient_kernels.config import jit

__all__ = [
    "P_MAX",
    "dot_row",
    "dot_row_generic",
    "dots_i8_i16",
    "has_vnni",
    "prefetch_row",
    "split_query",
    "target_has_vnni",
]

P_MAX = 32767 - 128
"""Largest ``|p|`` whose high byte ``h`` stays in [-128, 127] (see the module docstring)."""

_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_V32I8 = ir.VectorType(_I8, 32)
_V8I32 = ir.VectorType(_I32, 8)
# Numba's private target-machine feature string; without it, the generic path.
_FEATURES_ATTR = "_tm_features"
# Rows between a row's prefetch and its dot in :func:`_dots`.
_AHEAD = 8


def has_vnni(features: str) -> bool:
    """True if an LLVM feature string (``+avx2,+avxvnni,…``) allows 256-bit ``vpdpbusd``."""
    on = {f[1:] for f in features.split(",") if f.startswith("+")}
    return "avxvnni" in on or {"avx512vnni", "avx512vl"} <= on


def target_has_vnni() -> bool:
    """True if Numba compiles for a CPU with 256-bit ``vpdpbusd`` (its target machine's features)."""
    codegen = cpu_target.target_context.codegen()
    return has_vnni(getattr(codegen, _FEATURES_ATTR, "") or "")


def _dot_chunks_typer(typingctx, codes_t, i_t, h_t, l_t):
    """``(codes, i, h, l) -> int32``: ``Σ (c + 128)·(256·h + l)`` over row ``i``'s full 32-column chunks.

    Compiles only for a VNNI target (typing fails elsewhere, rather than LLVM).
    """
    ok = (
        isinstance(codes_t, types.Array)
        and codes_t.dtype == types.int8
        and codes_t.ndim == 2
        and isinstance(i_t, types.Integer)
        and all(
            isinstance(t, types.Array) and t.dtype == types.int8 and t.ndim == 1 for t in (h_t, l_t)
        )
    )
    if not ok or not target_has_vnni():
        return None

    def codegen(context, builder, sig, args):
        codes = context.make_array(sig.args[0])(context, builder, args[0])
        h = context.make_array(sig.args[2])(context, builder, args[2])
        lo = context.make_array(sig.args[3])(context, builder, args[3])
        i = context.cast(builder, args[1], sig.args[1], types.intp)
        ncols = builder.extract_value(codes.shape, 1)
        stride = builder.extract_value(codes.strides, 0)
        row = builder.gep(codes.data, [builder.mul(i, stride)])
        nchunks = builder.lshr(ncols, ir.Constant(ncols.type, 5))
        zero = ir.Constant(_V8I32, None)
        top = ir.Constant(_V32I8, [-128] * 32)
        acc_h = cgutils.alloca_once_value(builder, zero)
        acc_l = cgutils.alloca_once_value(builder, zero)
        # The byte operands declared as <8 x i32>: the intrinsic's type up to LLVM 20,
        # which LLVM 21+ (<32 x i8>) still accepts and upgrades when it parses the IR.
        fnty = ir.FunctionType(_V8I32, [_V8I32, _V8I32, _V8I32])
        dpbusd = cgutils.get_or_insert_function(
            builder.module, fnty, "llvm.x86.avx512.vpdpbusd.256"
        )

        def load(base, off):
            ptr = builder.bitcast(builder.gep(base, [off]), _V32I8.as_pointer())
            return builder.load(ptr, align=1)

        with cgutils.for_range(builder, nchunks) as loop:
            off = builder.shl(loop.index, ir.Constant(ncols.type, 5))
            c = builder.xor(load(row, off), top)  # c + 128, as unsigned bytes
            c32 = builder.bitcast(c, _V8I32)
            for acc, q in ((acc_h, h), (acc_l, lo)):
                q32 = builder.bitcast(load(q.data, off), _V8I32)
                builder.store(builder.call(dpbusd, [builder.load(acc), c32, q32]), acc)
        shifted = builder.shl(builder.load(acc_h), ir.Constant(_V8I32, [8] * 8))
        lanes = builder.add(shifted, builder.load(acc_l))
        red = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_I32, [_V8I32]), "llvm.vector.reduce.add.v8i32"
        )
        return builder.call(red, [lanes])

    return types.int32(codes_t, i_t, h_t, l_t), codegen


# Any: mypy sees the typing function's signature, not the call Numba compiles.
_dot_chunks: Any = intrinsic(_dot_chunks_typer)


def _prefetch_row_typer(typingctx, codes_t, i_t):
    """Ask for every cache line of row ``i`` (``llvm.prefetch``: a hint, it never faults)."""
    if not (isinstance(codes_t, types.Array) and codes_t.ndim == 2):
        return None

    def codegen(context, builder, sig, args):
        codes = context.make_array(sig.args[0])(context, builder, args[0])
        i = context.cast(builder, args[1], sig.args[1], types.intp)
        stride = builder.extract_value(codes.strides, 0)
        base = builder.bitcast(codes.data, _I8.as_pointer())
        row = builder.gep(base, [builder.mul(i, stride)])
        nlines = builder.lshr(
            builder.add(stride, ir.Constant(stride.type, 63)), ir.Constant(stride.type, 6)
        )
        fnty = ir.FunctionType(ir.VoidType(), [_I8.as_pointer(), _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        read, keep, data = (ir.Constant(_I32, v) for v in (0, 3, 1))
        with cgutils.for_range(builder, nlines) as loop:
            off = builder.shl(loop.index, ir.Constant(stride.type, 6))
            builder.call(fn, [builder.gep(row, [off]), read, keep, data])
        return context.get_dummy_value()

    return types.none(codes_t, i_t), codegen


prefetch_row: Any = intrinsic(_prefetch_row_typer)


@jit()
def split_query(p, h, lo):
    """Split int16 ``p`` (``|p| ≤ P_MAX``) into int8 ``h, lo`` with ``p = 256·h + lo``.

    Returns ``128·Σ p`` over the columns of full 32-column chunks (int64; the
    constant :func:`dot_row` subtracts).
    """
    d = p.shape[0]
    total = np.int64(0)
    for j in range(d):
        v = np.int64(p[j])
        low = ((v + 128) & 255) - 128
        h[j] = np.int8((v - low) >> 8)
        lo[j] = np.int8(low)
        if j < d - d % 32:
            total += v
    return 128 * total


@jit(inline=True)
def dot_row_generic(codes, i, p):
    """Exact ``Σ_j codes[i, j]·p[j]`` as a plain loop (any CPU).

    Truncating the sum to int32 at every step (a no-op: the caller keeps it
    in range) lets LLVM use 16-bit multiply-adds instead of int64 arithmetic.
    """
    acc = np.int32(0)
    for j in range(codes.shape[1]):
        acc = np.int32(acc + np.int32(codes[i, j]) * np.int32(p[j]))
    return acc


def dot_row(codes, i, p, h, lo, corr):
    """Exact ``Σ_j codes[i, j]·p[j]`` in int32, from ``corr = split_query(p, h, lo)``.

    For ``@njit`` callers only; the caller keeps the dot inside int32.
    """
    raise NotImplementedError("dot_row is compiled into @njit code only")


@overload(dot_row, inline="always")
def _dot_row_impl(codes, i, p, h, lo, corr):
    # Chosen when the caller is compiled, for the CPU it is compiled for.
    if target_has_vnni():

        def vnni(codes, i, p, h, lo, corr):
            d = codes.shape[1]
            acc = np.int32(np.int64(_dot_chunks(codes, i, h, lo)) - corr)
            for j in range(d - d % 32, d):
                acc = np.int32(acc + np.int32(codes[i, j]) * np.int32(p[j]))
            return acc

        return vnni

    def generic(codes, i, p, h, lo, corr):
        return dot_row_generic(codes, i, p)

    return generic


@jit()
def _dots(codes, p, generic, out):
    """Every row's dot with ``p`` (``generic``: the plain loop whatever the CPU)."""
    m = codes.shape[0]
    h = np.empty(codes.shape[1], dtype=np.int8)
    lo = np.empty(codes.shape[1], dtype=np.int8)
    corr = split_query(p, h, lo)
    for i in range(m):
        if i + _AHEAD < m:
            prefetch_row(codes, i + _AHEAD)
        if generic:
            out[i] = dot_row_generic(codes, i, p)
        else:
            out[i] = dot_row(codes, i, p, h, lo, corr)


def dots_i8_i16(codes: np.ndarray, p: np.ndarray, *, generic: bool = False) -> np.ndarray:
    """Exact int32 dots ``codes @ p`` of int8 rows with an int16 vector.

    Parameters
    ----------
    codes : (M, D) int8, C-contiguous
    p : (D,) int16
        ``|p| ≤`` :data:`P_MAX`, and ``D·128·max|p| < 2³¹`` (the sums are int32).
    generic : bool
        The plain loop even on a CPU with VNNI (the path other CPUs take; for tests).

    Returns
    -------
    (M,) int32
    """
    codes = check_array("codes", codes, dtype=np.int8, ndim=2)
    p = check_array("p", p, dtype=np.int16, shape=(codes.shape[1],))
    pmax = int(np.abs(p.astype(np.int64)).max()) if p.size else 0
    if pmax > P_MAX or pmax * 128 * codes.shape[1] >= 2**31:
        raise ValueError(f"p is too large (max |p| = {pmax}): the int32 dots could overflow")
    out = np.empty(codes.shape[0], dtype=np.int32)
    _dots(codes, p, bool(generic), out)
    return out


def _warmup() -> None:
    codes = np.ones((2, 40), dtype=np.int8)
    p = np.ones(40, dtype=np.int16)
    dots_i8_i16(codes, p)
    dots_i8_i16(codes, p, generic=True)
