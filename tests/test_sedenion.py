"""sentient_kernels.sedenion against the recursive Cayley–Dickson reference and the algebra's identities."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sentient_kernels import sedenion
from tests.naive import sedenion as naive

DIM = 16
E0 = np.eye(DIM)[0]

components = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
sedenions = arrays(np.float64, DIM, elements=components)
octonions = arrays(np.float64, 8, elements=components).map(
    lambda x: np.concatenate([x, np.zeros(8)])
)
quaternions = arrays(np.float64, 4, elements=components).map(
    lambda x: np.concatenate([x, np.zeros(12)])
)


def basis(i: int) -> np.ndarray:
    return np.eye(DIM)[i].copy()


def tol(*xs: np.ndarray) -> float:
    """Absolute tolerance for a product of the given factors (scaled by their norms)."""
    return 1e-13 * (1.0 + float(np.prod([np.linalg.norm(x) for x in xs])))


def assert_close(got, want, atol):
    np.testing.assert_allclose(got, want, rtol=0.0, atol=atol)


# --------------------------------------------------------------------------- the table


def test_sign_table_matches_recursive_products_of_basis_vectors():
    for i in range(DIM):
        for j in range(DIM):
            prod = naive.mul(basis(i), basis(j))
            want = np.zeros(DIM)
            want[i ^ j] = sedenion.SIGN[i, j]
            np.testing.assert_array_equal(prod, want)


def test_sign_table_shape_and_is_read_only():
    assert sedenion.SIGN.shape == (DIM, DIM)
    assert sedenion.SIGN.dtype == np.int8
    with pytest.raises(ValueError, match="read-only"):
        sedenion.SIGN[1, 1] = 1


def test_sign_table_units_anticommute():
    s = sedenion.SIGN.astype(int)
    assert (s[0, :] == 1).all() and (s[:, 0] == 1).all()
    assert (np.diag(s)[1:] == -1).all()
    for i, j in itertools.permutations(range(1, DIM), 2):
        assert s[i, j] == -s[j, i]


def test_structure_tensor_and_matrix_reproduce_the_product():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((50, DIM))
    b = rng.standard_normal((50, DIM))
    want = sedenion.mul_batch(a, b)
    tensor = sedenion.structure_tensor()
    assert tensor.shape == (DIM, DIM, DIM)
    assert_close(np.einsum("ni,nj,ijk->nk", a, b, tensor), want, 1e-12)
    matrix = sedenion.structure_matrix()
    assert matrix.shape == (DIM * DIM, DIM)
    outer = (a[:, :, None] * b[:, None, :]).reshape(50, DIM * DIM)
    assert_close(outer @ matrix, want, 1e-12)
    # Callers get their own copy.
    tensor[0, 0, 0] = 99.0
    assert sedenion.structure_tensor()[0, 0, 0] == 1.0


# --------------------------------------------------------------------------- identities


@settings(deadline=None, max_examples=100)
@given(sedenions)
def test_e0_is_a_two_sided_identity(a):
    np.testing.assert_array_equal(sedenion.mul(E0, a), a)
    np.testing.assert_array_equal(sedenion.mul(a, E0), a)


@pytest.mark.parametrize("i", range(1, DIM))
def test_imaginary_units_square_to_minus_one(i):
    np.testing.assert_array_equal(sedenion.mul(basis(i), basis(i)), -E0)


@settings(deadline=None, max_examples=200)
@given(sedenions, sedenions)
def test_conjugate_of_product_reverses_order(a, b):
    left = sedenion.conj(sedenion.mul(a, b))
    right = sedenion.mul(sedenion.conj(b), sedenion.conj(a))
    assert_close(left, right, tol(a, b))


@settings(deadline=None, max_examples=200)
@given(sedenions)
def test_a_times_conj_a_is_squared_norm_times_e0(a):
    sq = float(a @ a)
    assert_close(sedenion.mul(a, sedenion.conj(a)), sq * E0, tol(a, a))
    assert_close(sedenion.mul(sedenion.conj(a), a), sq * E0, tol(a, a))


@settings(deadline=None, max_examples=200)
@given(sedenions, sedenions)
def test_product_is_flexible(a, b):
    left = sedenion.mul(sedenion.mul(a, b), a)
    right = sedenion.mul(a, sedenion.mul(b, a))
    assert_close(left, right, tol(a, b, a))


@settings(deadline=None, max_examples=200)
@given(octonions, octonions)
def test_octonions_are_norm_multiplicative(a, b):
    prod = sedenion.mul(a, b)
    assert np.all(prod[8:] == 0.0)
    assert abs(sedenion.norm(prod) - sedenion.norm(a) * sedenion.norm(b)) <= tol(a, b)


@settings(deadline=None, max_examples=200)
@given(quaternions, quaternions, quaternions)
def test_quaternions_are_associative(a, b, c):
    left = sedenion.mul(sedenion.mul(a, b), c)
    right = sedenion.mul(a, sedenion.mul(b, c))
    assert_close(left, right, tol(a, b, c))


def test_octonions_are_not_associative():
    # Shows the associativity test above has teeth: e1(e2 e4) = −(e1 e2)e4.
    e1, e2, e4 = basis(1), basis(2), basis(4)
    left = sedenion.mul(sedenion.mul(e1, e2), e4)
    right = sedenion.mul(e1, sedenion.mul(e2, e4))
    np.testing.assert_array_equal(left, -right)
    assert np.abs(left).max() == 1.0


def test_known_zero_divisor_pair():
    a = basis(3) + basis(10)
    b = basis(6) - basis(15)
    np.testing.assert_array_equal(naive.mul(a, b), np.zeros(DIM))
    np.testing.assert_array_equal(sedenion.mul(a, b), np.zeros(DIM))
    np.testing.assert_array_equal(sedenion.mul_batch(a[None], b[None]), np.zeros((1, DIM)))


def test_sedenions_are_not_norm_multiplicative():
    a = basis(3) + basis(10)
    b = basis(6) - basis(15)
    assert sedenion.norm(sedenion.mul(a, b)) == 0.0
    assert sedenion.norm(a) * sedenion.norm(b) == pytest.approx(2.0)


def test_zero_divisors_among_pairs_of_units_agree_with_reference():
    # Search (e_i ± e_j)(e_k ± e_l) with the fast kernel, confirm every hit recursively.
    pairs = [(i, j, s) for i, j in itertools.combinations(range(1, DIM), 2) for s in (1.0, -1.0)]
    vecs = np.zeros((len(pairs), DIM))
    for row, (i, j, s) in enumerate(pairs):
        vecs[row, i], vecs[row, j] = 1.0, s
    a = np.ascontiguousarray(np.repeat(vecs, len(pairs), axis=0))
    b = np.ascontiguousarray(np.tile(vecs, (len(pairs), 1)))
    zero = np.flatnonzero(np.abs(sedenion.mul_batch(a, b)).max(axis=1) == 0.0)
    assert len(zero) > 0
    for row in zero:
        np.testing.assert_array_equal(naive.mul(a[row], b[row]), np.zeros(DIM))
    # And a sample of the non-zero products is non-zero in the reference too.
    nonzero = np.setdiff1d(np.arange(len(a)), zero)[::97]
    for row in nonzero:
        assert np.abs(naive.mul(a[row], b[row])).max() > 0.0


# --------------------------------------------------------------------------- against the reference


@pytest.mark.parametrize("n", [1, 7, 1025, 2100])
def test_mul_batch_matches_recursive_reference(n):
    rng = np.random.default_rng(n)
    scale = rng.choice([1e-3, 1.0, 1e3], size=(n, 1))
    a = rng.standard_normal((n, DIM)) * scale
    b = rng.standard_normal((n, DIM))
    got = sedenion.mul_batch(a, b)
    want = naive.mul_batch(a, b)
    atol = 1e-13 * np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    assert (np.abs(got - want) <= atol[:, None]).all()


def test_parallel_mul_batch_matches_reference_and_serial_kernel():
    n = 10_007  # above the parallel threshold, not a multiple of the 1024-row blocks
    assert n >= sedenion._PARALLEL_MIN_ROWS
    rng = np.random.default_rng(11)
    a = rng.standard_normal((n, DIM))
    b = rng.standard_normal((n, DIM))
    got = sedenion.mul_batch(a, b)
    serial = np.empty_like(got)
    sedenion._mul_rows_serial(a, b, serial)
    np.testing.assert_array_equal(got, serial)
    sample = np.arange(0, n, 7)
    assert_close(got[sample], naive.mul_batch(a[sample], b[sample]), 1e-12)


def test_mul_matches_recursive_reference():
    rng = np.random.default_rng(1)
    for _ in range(50):
        a, b = rng.uniform(-10, 10, (2, DIM))
        assert_close(sedenion.mul(a, b), naive.mul(a, b), tol(a, b))


def test_mul_batch_rows_equal_single_products():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((33, DIM))
    b = rng.standard_normal((33, DIM))
    batch = sedenion.mul_batch(a, b)
    for r in range(33):
        assert_close(batch[r], sedenion.mul(a[r], b[r]), 1e-13)


def test_mul_of_zeros_and_empty_batch():
    z = np.zeros(DIM)
    np.testing.assert_array_equal(sedenion.mul(z, basis(5)), z)
    np.testing.assert_array_equal(sedenion.mul_batch(np.zeros((3, DIM)), np.ones((3, DIM))), 0.0)
    empty = sedenion.mul_batch(np.zeros((0, DIM)), np.zeros((0, DIM)))
    assert empty.shape == (0, DIM)


def test_mul_batch_writes_into_out():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((10, DIM))
    b = rng.standard_normal((10, DIM))
    out = np.full((10, DIM), np.nan)
    assert sedenion.mul_batch(a, b, out=out) is out
    assert_close(out, naive.mul_batch(a, b), 1e-12)


def test_mul_batch_rejects_out_overlapping_inputs():
    a = np.ones((4, DIM))
    b = np.ones((4, DIM))
    with pytest.raises(ValueError, match="out"):
        sedenion.mul_batch(a, b, out=a)
    with pytest.raises(ValueError, match="out"):
        sedenion.mul_batch(a, b, out=np.zeros((3, DIM)))


# --------------------------------------------------------------------------- unary and pair operations


def test_conj_norm_dot_single_and_batched():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, DIM))
    b = rng.standard_normal((6, DIM))
    conj = sedenion.conj(a)
    norms = sedenion.norm(a)
    dots = sedenion.dot(a, b)
    assert norms.shape == dots.shape == (6,)
    for r in range(6):
        np.testing.assert_array_equal(conj[r], naive.conj(a[r]))
        np.testing.assert_array_equal(sedenion.conj(a[r]), naive.conj(a[r]))
        assert norms[r] == pytest.approx(naive.norm(a[r]), rel=1e-14)
        assert isinstance(sedenion.norm(a[r]), float)
        assert sedenion.dot(a[r], b[r]) == pytest.approx(float(np.sum(a[r] * b[r])), rel=1e-12)


def test_normalize_gives_unit_rows_in_the_same_direction():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, DIM)) * [[1e-6], [1.0], [1e6], [3.0], [0.5]]
    unit = sedenion.normalize(a)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(unit * np.linalg.norm(a, axis=1)[:, None], a, rtol=1e-13)
    np.testing.assert_allclose(sedenion.normalize(a[2]), unit[2], rtol=1e-15)


def test_normalize_and_inverse_refuse_zero():
    with pytest.raises(ValueError, match="norm"):
        sedenion.normalize(np.zeros(DIM))
    rows = np.ones((3, DIM))
    rows[1] = 1e-14
    with pytest.raises(ValueError, match="row 1"):
        sedenion.normalize(rows)
    with pytest.raises(ValueError, match="inverse"):
        sedenion.inverse(np.zeros(DIM))
    with pytest.raises(ValueError, match="row 1"):
        sedenion.inverse(rows)


@settings(deadline=None, max_examples=200)
@given(sedenions)
@example(np.array([6.0, 6e-8, *([0.0] * 14)]))  # once 1.9e-16 off: ~5 ulps, inside the bound
def test_inverse_is_a_two_sided_inverse(a):
    size = np.linalg.norm(a)
    if size < 0.1:
        return
    inv = sedenion.inverse(a)
    # |a|² is a sum of 16 squares: any summation order (fast-math may reassociate) is
    # within 16 eps relative, so each component is within 16 eps / |a| of the exact one.
    assert_close(inv, naive.conj(a) / size**2, 16 * np.finfo(np.float64).eps / size)
    assert_close(sedenion.mul(a, inv), E0, 1e-13)
    assert_close(sedenion.mul(inv, a), E0, 1e-13)


def test_inverse_batched_matches_single():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, DIM))
    inv = sedenion.inverse(a)
    for r in range(4):
        np.testing.assert_allclose(inv[r], sedenion.inverse(a[r]), rtol=1e-15)


def test_cosine_matches_reference_and_is_zero_for_zero_vectors():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((20, DIM))
    b = rng.standard_normal((20, DIM))
    got = sedenion.cosine(a, b)
    for r in range(20):
        assert got[r] == pytest.approx(naive.cosine(a[r], b[r]), abs=1e-14)
    assert sedenion.cosine(a[0], a[0]) == pytest.approx(1.0, abs=1e-15)
    assert sedenion.cosine(a[0], -a[0]) == pytest.approx(-1.0, abs=1e-15)
    assert sedenion.cosine(np.zeros(DIM), a[0]) == 0.0
    assert sedenion.cosine(a[0], np.full(DIM, 1e-12)) == 0.0


def test_nlerp_endpoints_midpoint_and_degenerate_case():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((2, DIM))
    np.testing.assert_allclose(sedenion.nlerp(a, b, 0.0), a / np.linalg.norm(a), rtol=1e-14)
    np.testing.assert_allclose(sedenion.nlerp(a, b, 1.0), b / np.linalg.norm(b), rtol=1e-14)
    mid = (a + b) / 2
    np.testing.assert_allclose(sedenion.nlerp(a, b, 0.5), mid / np.linalg.norm(mid), rtol=1e-14)
    rows = sedenion.nlerp(np.stack([a, b]), np.stack([b, a]), 0.25)
    np.testing.assert_allclose(rows[1], sedenion.nlerp(b, a, 0.25), rtol=1e-15)
    with pytest.raises(ValueError, match="nlerp"):
        sedenion.nlerp(a, -a, 0.5)
    with pytest.raises(ValueError, match="t must be <= 1"):
        sedenion.nlerp(a, b, 1.5)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("value", "exc", "fragment"),
    [
        ([0.0] * DIM, TypeError, "numpy.ndarray"),
        (np.zeros(DIM, dtype=np.float32), TypeError, "dtype float64"),
        (np.zeros(15), ValueError, "shape"),
        (np.zeros(32)[::2], ValueError, "C-contiguous"),
        (np.array([np.nan] + [0.0] * 15), ValueError, "non-finite"),
        (np.array([np.inf] + [0.0] * 15), ValueError, "non-finite"),
    ],
)
def test_mul_rejects_bad_arguments_naming_them(value, exc, fragment):
    good = np.zeros(DIM)
    with pytest.raises(exc, match=r"^a ") as info:
        sedenion.mul(value, good)
    assert fragment in str(info.value)
    with pytest.raises(exc, match=r"^b ") as info:
        sedenion.mul(good, value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("a", "b", "exc", "name"),
    [
        (np.zeros(DIM), np.zeros(DIM), ValueError, "a"),
        (np.zeros((3, 15)), np.zeros((3, 15)), ValueError, "a"),
        (np.zeros((3, DIM)), np.zeros((4, DIM)), ValueError, "b"),
        (np.zeros((3, DIM), dtype=np.float32), np.zeros((3, DIM)), TypeError, "a"),
        (np.zeros((3, DIM)), np.asfortranarray(np.zeros((3, DIM))), ValueError, "b"),
        (np.zeros((3, DIM)), np.full((3, DIM), np.nan), ValueError, "b"),
    ],
)
def test_mul_batch_rejects_bad_arguments_naming_them(a, b, exc, name):
    with pytest.raises(exc, match=rf"^{name} "):
        sedenion.mul_batch(a, b)


@pytest.mark.parametrize("n", [3, 10_000])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_mul_batch_finds_a_single_non_finite_entry_in_either_input(n, bad):
    # Finiteness is checked inside the (serial or parallel) kernel.
    rng = np.random.default_rng(13)
    for name in ("a", "b"):
        a = rng.standard_normal((n, DIM))
        b = rng.standard_normal((n, DIM))
        (a if name == "a" else b)[n - 1, 9] = bad
        with pytest.raises(ValueError, match=rf"^{name} contains 1 non-finite"):
            sedenion.mul_batch(a, b)


def test_mul_batch_overflow_of_finite_inputs_is_not_an_error():
    a = np.full((2, DIM), 1e200)
    got = sedenion.mul_batch(a, a)
    assert not np.isfinite(got).all()  # inf or inf − inf = NaN, but no exception


def test_pair_operations_reject_mismatched_shapes_and_bad_arrays():
    with pytest.raises(ValueError, match=r"^b must have the same shape"):
        sedenion.cosine(np.zeros(DIM), np.zeros((1, DIM)))
    with pytest.raises(ValueError, match=r"^a "):
        sedenion.conj(np.zeros((2, 2, DIM)))
    with pytest.raises(TypeError, match=r"^a "):
        sedenion.norm(np.zeros(DIM, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^a "):
        sedenion.inverse(np.full(DIM, np.inf))
    with pytest.raises(TypeError, match=r"^t "):
        sedenion.nlerp(np.ones(DIM), np.ones(DIM), "0.5")


def test_warmup_runs():
    sedenion._warmup()
