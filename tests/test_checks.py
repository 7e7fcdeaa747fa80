"""The shared argument checks used by every kernel wrapper."""

import numpy as np
import pytest

from sentient_kernels.checks import check_array, check_int, check_scalar


def test_accepts_matching_array_and_returns_it_unchanged():
    x = np.zeros((3, 16))
    assert check_array("x", x, dtype=np.float64, shape=(None, 16)) is x


@pytest.mark.parametrize(
    ("value", "exc", "fragment"),
    [
        ([1.0, 2.0], TypeError, "numpy.ndarray"),
        (np.zeros(16, dtype=np.float32), TypeError, "dtype float64"),
        (np.zeros((2, 16)), ValueError, "1-dimensional"),
        (np.zeros(15), ValueError, "axis 0 is 15"),
        (np.array([0.0] * 15 + [np.nan]), ValueError, "non-finite"),
        (np.array([np.inf] + [0.0] * 15), ValueError, "non-finite"),
        (np.zeros(32)[::2], ValueError, "C-contiguous"),
    ],
)
def test_rejects_bad_arrays_naming_the_argument(value, exc, fragment):
    with pytest.raises(exc, match="the_arg") as info:
        check_array("the_arg", value, dtype=np.float64, shape=(16,))
    assert fragment in str(info.value)


def test_min_rows_and_optional_finiteness():
    with pytest.raises(ValueError, match="at least 1 row"):
        check_array("rows", np.zeros((0, 4)), dtype=np.float64, ndim=2, min_rows=1)
    nan = np.array([np.nan])
    assert check_array("v", nan, dtype=np.float64, finite=False) is nan


def test_writeable_only_when_asked():
    frozen = np.zeros(4)
    frozen.setflags(write=False)
    assert check_array("v", frozen, dtype=np.float64) is frozen
    with pytest.raises(ValueError, match=r"^out must be writeable$"):
        check_array("out", frozen, dtype=np.float64, writeable=True)
    x = np.zeros(4)
    assert check_array("out", x, dtype=np.float64, writeable=True) is x


def test_scalar_bounds():
    assert check_scalar("dt", 0.5, lo=0.0, lo_open=True) == 0.5
    with pytest.raises(ValueError, match=r"dt must be > 0\.0"):
        check_scalar("dt", 0.0, lo=0.0, lo_open=True)
    with pytest.raises(ValueError, match="eta must be <= 1"):
        check_scalar("eta", 1.5, hi=1)
    with pytest.raises(ValueError, match="finite"):
        check_scalar("eta", float("nan"))
    with pytest.raises(TypeError, match="eta must be a real number"):
        check_scalar("eta", "0.1")
    with pytest.raises(TypeError):
        check_scalar("eta", True)


def test_int_bounds():
    assert check_int("k", np.int64(3), lo=1) == 3
    with pytest.raises(ValueError, match="k must be >= 1"):
        check_int("k", 0, lo=1)
    with pytest.raises(TypeError, match="k must be an integer"):
        check_int("k", 2.0)
