"""sentient_kernels.dot_i8: exact int8 × int16 row dots, VNNI and plain paths, against Python ints."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from sentient_kernels import dot_i8
from tests.naive import dot_i8 as naive

_WIDTHS = (1, 5, 31, 32, 33, 64, 100, 256, 257, 1000)


def _pmax(d: int) -> int:
    """The largest |p| the wrapper accepts for width d (|codes| ≤ 128)."""
    return min(dot_i8.P_MAX, (2**31 - 1) // (128 * d))


@pytest.mark.parametrize("generic", [False, True])
@pytest.mark.parametrize("d", _WIDTHS)
def test_dots_match_python_ints(d, generic):
    rng = np.random.default_rng(d)
    pm = _pmax(d)
    codes = rng.integers(-128, 128, size=(37, d), dtype=np.int8)
    codes[0] = -128
    codes[1] = 127
    codes[2] = 0
    for p in (
        rng.integers(-pm, pm + 1, size=d).astype(np.int16),
        np.full(d, pm, dtype=np.int16),
        np.full(d, -pm, dtype=np.int16),
        np.zeros(d, dtype=np.int16),
    ):
        got = dot_i8.dots_i8_i16(codes, p, generic=generic)
        assert got.dtype == np.int32
        assert got.tolist() == naive.dots(codes, p)


@pytest.mark.parametrize("generic", [False, True])
def test_dots_at_the_int32_limit(generic):
    # Every product at its extreme: the true dot is within 128·P_MAX of ±2³¹,
    # while the VNNI path's intermediate sums wrap around (they must cancel).
    d = (2**31 - 1) // (128 * dot_i8.P_MAX)
    codes = np.array([[-128] * d, [127] * d, [-128, 127] * (d // 2) + [-128] * (d % 2)], np.int8)
    for v in (dot_i8.P_MAX, -dot_i8.P_MAX):
        p = np.full(d, v, dtype=np.int16)
        got = dot_i8.dots_i8_i16(codes, p, generic=generic)
        assert got.tolist() == naive.dots(codes, p)


def test_split_query_every_allowed_value():
    p = np.arange(-dot_i8.P_MAX, dot_i8.P_MAX + 1, dtype=np.int16)
    h = np.empty(p.shape[0], dtype=np.int8)
    lo = np.empty(p.shape[0], dtype=np.int8)
    corr = dot_i8.split_query(p, h, lo)
    want = [naive.split(int(v)) for v in p]
    assert h.tolist() == [w[0] for w in want]
    assert lo.tolist() == [w[1] for w in want]
    full = p.shape[0] - p.shape[0] % 32
    assert corr == 128 * sum(int(v) for v in p[:full])


@pytest.mark.parametrize("d", [0, 1, 31, 33, 70])
def test_split_query_constant_covers_full_chunks_only(d):
    p = np.arange(1, d + 1, dtype=np.int16)
    h = np.empty(d, dtype=np.int8)
    lo = np.empty(d, dtype=np.int8)
    assert dot_i8.split_query(p, h, lo) == 128 * sum(range(1, d - d % 32 + 1))


def test_has_vnni_reads_llvm_feature_strings():
    assert dot_i8.has_vnni("+avx2,+avxvnni,-avx512f")
    assert dot_i8.has_vnni("+avx512f,+avx512vl,+avx512vnni")
    assert not dot_i8.has_vnni("+avx512f,-avx512vl,+avx512vnni")
    assert not dot_i8.has_vnni("+avx2,-avxvnni,-avx512vnni")
    assert not dot_i8.has_vnni("")


@pytest.mark.skipif(not dot_i8.target_has_vnni(), reason="the CPU has no AVX-VNNI")
def test_vnni_cpu_gets_vpdpbusd():
    def row0(codes, p, h, lo, corr):
        return dot_i8.dot_row(codes, 0, p, h, lo, corr)

    fresh = numba.njit(cache=False)(row0)
    codes = np.arange(64, dtype=np.int8).reshape(1, 64)
    p = np.arange(64, dtype=np.int16) - 30
    h = np.empty(64, dtype=np.int8)
    lo = np.empty(64, dtype=np.int8)
    corr = dot_i8.split_query(p, h, lo)
    assert fresh(codes, p, h, lo, corr) == naive.dots(codes, p)[0]
    asm = "\n".join(fresh.inspect_asm().values())
    assert "vpdpbusd" in asm


def test_one_row_empty_matrix_and_strided_rows_of_a_bigger_array():
    p = np.arange(40, dtype=np.int16)
    assert dot_i8.dots_i8_i16(np.zeros((0, 40), np.int8), p).shape == (0,)
    one = np.full((1, 40), 3, dtype=np.int8)
    assert dot_i8.dots_i8_i16(one, p).tolist() == naive.dots(one, p)
    # Rows of a C-contiguous slice (the scan's blocks are such views).
    big = np.random.default_rng(3).integers(-127, 128, size=(50, 40), dtype=np.int8)
    assert dot_i8.dots_i8_i16(big[7:20], p).tolist() == naive.dots(big[7:20], p)


def test_bad_arguments_are_rejected():
    codes = np.zeros((2, 8), dtype=np.int8)
    with pytest.raises(TypeError, match="codes"):
        dot_i8.dots_i8_i16(codes.astype(np.int16), np.zeros(8, np.int16))
    with pytest.raises(TypeError, match="p"):
        dot_i8.dots_i8_i16(codes, np.zeros(8, np.int32))
    with pytest.raises(ValueError, match="p"):
        dot_i8.dots_i8_i16(codes, np.zeros(7, np.int16))
    with pytest.raises(ValueError, match="too large"):
        dot_i8.dots_i8_i16(codes, np.full(8, dot_i8.P_MAX + 1, np.int16))
    with pytest.raises(ValueError, match="contiguous"):
        dot_i8.dots_i8_i16(np.zeros((2, 16), np.int8)[:, ::2], np.zeros(8, np.int16))
