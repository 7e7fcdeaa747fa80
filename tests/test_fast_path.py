"""Single-call wrappers: the fast path gives the slow path's results and errors.

``sedenion.mul``, ``smf.update``, ``smf.entropy``, ``smf.similarity``,
``smf.similarity_pair``, ``prsc.run`` and ``excitation.dominant_order`` send arrays
of the exact type, dtype and layout straight to a kernel that checks shapes
and finiteness itself. Everything else takes the full checks. These tests
force each path and compare, put a bad value in every argument, and give
each ``out=`` every kind of bad array.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_kernels import prsc, sedenion, smf


class Subclass(np.ndarray):
    """An ndarray subclass: the full checks accept it, the fast path does not."""


def slow(x: np.ndarray) -> np.ndarray:
    """A copy of ``x`` that takes the full checks."""
    return x.copy().view(Subclass)


def other_dtype_object(x: np.ndarray) -> np.ndarray:
    """A copy whose dtype equals, but is not, numpy's float64 object (as Numba returns)."""
    y = x.astype(np.dtype("<f8").newbyteorder("="))
    assert y.dtype == np.float64 and y.dtype is not np.dtype(np.float64)
    return y


RNG = np.random.default_rng(2024)
A = RNG.standard_normal(16)
B = RNG.standard_normal(16)
ROWS = RNG.standard_normal((5, 16))
BANK = prsc.init_state(64, seed=3)


def bad_copies(x: np.ndarray):
    """(label, copy) pairs with one NaN, +inf or -inf."""
    for label, value in (("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf)):
        y = x.copy()
        y.flat[x.size // 2] = value
        yield label, y


# --------------------------------------------------------------------------- same results


def test_mul_fast_equals_slow():
    fast = sedenion.mul(A, B)
    np.testing.assert_array_equal(fast, sedenion.mul(slow(A), slow(B)))
    np.testing.assert_array_equal(fast, sedenion.mul(other_dtype_object(A), B))
    np.testing.assert_array_equal(fast, sedenion.mul_batch(A[None], B[None])[0])


def test_update_fast_equals_slow():
    s = smf.normalize(A)
    amp, phase = BANK.amplitude * 5, BANK.phase
    fast = smf.update(s, amp, phase)
    np.testing.assert_array_equal(fast, smf.update(slow(s), slow(amp), slow(phase)))
    np.testing.assert_array_equal(fast, smf.update(s, amp, phase, eta=np.float64(0.1)))
    out = np.empty(16)
    assert smf.update(s, amp, phase, 0.1, out) is out
    np.testing.assert_array_equal(out, fast)
    in_place = s.copy()
    smf.update(in_place, amp, phase, out=in_place)
    np.testing.assert_array_equal(in_place, fast)
    no_osc = smf.update(s, np.zeros(0), np.zeros(0))
    np.testing.assert_array_equal(no_osc, smf.update(slow(s), slow(amp[:0]), slow(phase[:0])))


def test_entropy_and_similarity_fast_equal_slow():
    s = smf.normalize(A)
    assert smf.entropy(s) == smf.entropy(slow(s))
    assert smf.similarity_pair(A, B) == smf.similarity_pair(slow(A), B)
    np.testing.assert_array_equal(smf.similarity(A, ROWS), smf.similarity(A, slow(ROWS)))
    np.testing.assert_array_equal(smf.similarity(A, B[None]), np.array([smf.similarity_pair(A, B)]))
    out = np.empty(5)
    assert smf.similarity(A, ROWS, out=out) is out
    np.testing.assert_array_equal(out, smf.similarity(A, slow(ROWS)))
    # A zero field: every cosine is 0, and the rows are still checked.
    assert smf.similarity(np.zeros(16), ROWS).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match=r"^others contains 1 non-finite"):
        smf.similarity(np.zeros(16), next(bad_copies(ROWS))[1])


def test_run_fast_equals_slow():
    fast = prsc.PrscState(*(a.copy() for a in BANK))
    slow_bank = prsc.PrscState(
        slow(BANK.phase), slow(BANK.amplitude), slow(BANK.frequency), BANK.primes.copy()
    )
    explicit = prsc.PrscState(*(a.copy() for a in BANK))
    for _ in range(3):
        prsc.run(fast, 1)
        prsc.run(slow_bank, np.int64(1))
        prsc.run(explicit, 1, 1.0 / 60.0, 0.3, 0.02, parallel=False)
    for x, y, z in zip(fast, slow_bank, explicit, strict=True):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)


def test_mul_out_equals_the_new_array_path():
    want = sedenion.mul(A, B)
    out = np.full(16, 7.0)
    assert sedenion.mul(A, B, out) is out
    np.testing.assert_array_equal(out, want)
    for a, b in ((slow(A), B), (A, other_dtype_object(B))):  # slow path, same out
        out[:] = 7.0
        assert sedenion.mul(a, b, out=out) is out
        np.testing.assert_array_equal(out, want)
    sub = np.full(16, 7.0).view(Subclass)  # an out the full checks accept
    assert sedenion.mul(A, B, out=sub) is sub
    np.testing.assert_array_equal(sub, want)
    # In place: the kernel reads both factors before it writes.
    a, b = A.copy(), B.copy()
    assert sedenion.mul(a, B, out=a) is a
    assert sedenion.mul(A, b, out=b) is b
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, want)


def test_similarity_and_update_out_equal_the_new_array_path():
    s = smf.normalize(A)
    out = np.full(5, 7.0)
    assert smf.similarity(A, ROWS, out) is out
    np.testing.assert_array_equal(out, smf.similarity(A, ROWS))
    sub = np.full(5, 7.0).view(Subclass)
    assert smf.similarity(A, ROWS, out=sub) is sub
    np.testing.assert_array_equal(sub, out)
    amp, phase = BANK.amplitude * 5, BANK.phase
    field = np.full(16, 7.0).view(Subclass)
    assert smf.update(s, amp, phase, 0.1, out=field) is field
    np.testing.assert_array_equal(field, smf.update(s, amp, phase))


def _read_only(n: int) -> np.ndarray:
    x = np.zeros(n)
    x.setflags(write=False)
    return x


# (bad out, exception, message start) for a wrapper whose out is (n,) float64.
def bad_outs(n: int):
    yield [0.0] * n, TypeError, "out must be a numpy.ndarray"
    yield np.zeros(n, dtype=np.float32), TypeError, "out must have dtype float64"
    yield np.zeros(n + 1), ValueError, "out must have shape"
    yield np.zeros((1, n)), ValueError, "out must be 1-dimensional"
    yield np.zeros(2 * n)[::2], ValueError, "out must be C-contiguous"
    yield _read_only(n), ValueError, "out must be writeable"


@pytest.mark.parametrize("call", ["mul", "similarity", "update"])
def test_bad_out_arrays_are_rejected_by_name(call):
    s = smf.normalize(A)
    run = {
        "mul": lambda out: sedenion.mul(A, B, out=out),
        "similarity": lambda out: smf.similarity(A, ROWS, out=out),
        "update": lambda out: smf.update(s, BANK.amplitude, BANK.phase, out=out),
    }[call]
    n = ROWS.shape[0] if call == "similarity" else 16
    for out, exc, message in bad_outs(n):
        with pytest.raises(exc, match=f"^{message}"):
            run(out)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("which", ["a", "b"])
def test_mul_rejects_non_finite_and_bad_shapes_by_name(which):
    for _, bad in bad_copies(A):
        args = {"a": A, "b": B, which: bad}
        with pytest.raises(ValueError, match=rf"^{which} contains 1 non-finite"):
            sedenion.mul(**args)
    with pytest.raises(ValueError, match=rf"^{which} must have shape"):
        sedenion.mul(**{"a": A, "b": B, which: np.zeros(8)})
    with pytest.raises(TypeError, match=rf"^{which} "):
        sedenion.mul(**{"a": A, "b": B, which: A.astype(np.float32)})
    with pytest.raises(ValueError, match=rf"^{which} must be C-contiguous"):
        sedenion.mul(**{"a": A, "b": B, which: np.zeros(32)[::2]})


@pytest.mark.parametrize("which", ["s", "amplitude", "phase"])
def test_update_rejects_non_finite_by_name_and_leaves_out_alone(which):
    s = smf.normalize(A)
    good = {"s": s, "amplitude": BANK.amplitude, "phase": BANK.phase}
    out = np.full(16, 7.0)
    for _, bad in bad_copies(good[which]):
        with pytest.raises(ValueError, match=rf"^{which} contains 1 non-finite"):
            smf.update(**{**good, which: bad}, out=out)
    assert (out == 7.0).all()


def test_update_rejects_bad_shapes_and_scalars_by_name():
    s = smf.normalize(A)
    amp, phase = BANK.amplitude, BANK.phase
    with pytest.raises(ValueError, match=r"^s must have shape"):
        smf.update(np.zeros(8), amp, phase)
    with pytest.raises(ValueError, match=r"^phase must have shape"):
        smf.update(s, amp, phase[:-1])
    with pytest.raises(ValueError, match=r"^out must have shape"):
        smf.update(s, amp, phase, out=np.empty(8))
    for eta in (float("nan"), -0.1, 1.5):
        with pytest.raises(ValueError, match=r"^eta "):
            smf.update(s, amp, phase, eta)


def test_entropy_and_similarity_reject_bad_fields_by_name():
    for _, bad in bad_copies(A):
        with pytest.raises(ValueError, match=r"^s contains 1 non-finite"):
            smf.entropy(bad)
        with pytest.raises(ValueError, match=r"^a contains 1 non-finite"):
            smf.similarity_pair(bad, B)
        with pytest.raises(ValueError, match=r"^b contains 1 non-finite"):
            smf.similarity_pair(A, bad)
        with pytest.raises(ValueError, match=r"^s contains 1 non-finite"):
            smf.similarity(bad, ROWS)
    for _, bad in bad_copies(ROWS):
        with pytest.raises(ValueError, match=r"^others contains 1 non-finite"):
            smf.similarity(A, bad)
    with pytest.raises(ValueError, match=r"^s must have shape"):
        smf.entropy(np.zeros(15))
    with pytest.raises(ValueError, match=r"^b must have shape"):
        smf.similarity_pair(A, np.zeros(17))
    with pytest.raises(ValueError, match=r"^out must have shape"):
        smf.similarity(A, ROWS, out=np.empty(4))
    with pytest.raises(ValueError, match=r"^others must have shape"):
        smf.similarity(A, np.zeros((3, 8)))


@pytest.mark.parametrize("field", ["phase", "amplitude", "frequency"])
def test_run_rejects_a_bad_bank_by_name_and_leaves_it_alone(field):
    for _, bad in bad_copies(getattr(BANK, field)):
        bank = BANK._replace(**{field: bad})
        before = [a.copy() for a in bank]
        with pytest.raises(ValueError, match=rf"^state\.{field} contains 1 non-finite"):
            prsc.run(bank, 1)
        for x, y in zip(bank, before, strict=True):
            np.testing.assert_array_equal(x, y)
    # A short phase makes the others the odd ones out.
    named = "amplitude" if field == "phase" else field
    with pytest.raises(ValueError, match=rf"^state\.{named} must have shape"):
        prsc.run(BANK._replace(**{field: getattr(BANK, field)[:-1].copy()}), 1)


def test_run_rejects_other_bad_arguments_by_name():
    negative = BANK.amplitude.copy()
    negative[3] = -0.5
    with pytest.raises(ValueError, match=r"^state\.amplitude must be >= 0"):
        prsc.run(BANK._replace(amplitude=negative), 1)
    with pytest.raises(ValueError, match=r"^state\.primes must have shape"):
        prsc.run(BANK._replace(primes=BANK.primes[:-1].copy()), 1)
    with pytest.raises(TypeError, match=r"^state\.primes"):
        prsc.run(BANK._replace(primes=BANK.primes.astype(np.float64)), 1)
    state = prsc.PrscState(*(a.copy() for a in BANK))
    for kwargs, exc, name in [
        ({"steps": -1}, ValueError, "steps"),
        ({"steps": 1.0}, TypeError, "steps"),
        ({"steps": 1, "dt": 0.0}, ValueError, "dt"),
        ({"steps": 1, "dt": float("inf")}, ValueError, "dt"),
        ({"steps": 1, "coupling": float("nan")}, ValueError, "coupling"),
        ({"steps": 1, "damping": -1.0}, ValueError, "damping"),
        ({"steps": 1, "damping": 100.0}, ValueError, "damping"),
        ({"steps": 1, "parallel": 1}, TypeError, "parallel"),
    ]:
        with pytest.raises(exc, match=name):
            prsc.run(state, **kwargs)
    for x, y in zip(state, BANK, strict=True):
        np.testing.assert_array_equal(x, y)
