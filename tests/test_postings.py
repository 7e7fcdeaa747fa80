"""sentient_kernels.postings.bucket_rows against tests/naive_postings.py."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_kernels import postings
from tests.naive import postings as naive


def layout(keys: np.ndarray, n_buckets: int, slack: int = 0) -> np.ndarray:
    counts = np.bincount(keys, minlength=n_buckets) + slack
    starts = np.zeros(n_buckets + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts


def check_against_reference(rows, keys, n_buckets, slack=0):
    starts = layout(keys, n_buckets, slack)
    out = np.full(int(starts[-1]), -1, dtype=np.int64)
    fill = postings.bucket_rows(rows, keys, starts, out)
    want = naive.bucket_rows(rows, keys, n_buckets)
    assert fill.tolist() == [len(b) for b in want]
    for k in range(n_buckets):
        assert out[starts[k] : starts[k] + fill[k]].tolist() == want[k]
    return fill


@pytest.mark.parametrize("seed", range(8))
def test_random_postings_match_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    n_buckets = int(rng.integers(1, 60))
    rows = np.sort(rng.integers(0, max(1, n // 3), size=n))  # many repeated rows
    keys = rng.integers(0, n_buckets, size=n)
    check_against_reference(rows, keys, n_buckets, slack=int(rng.integers(0, 3)))


def test_a_row_named_twice_for_one_key_is_kept_once():
    rows = np.array([4, 4, 4, 5, 9, 9], dtype=np.int64)
    keys = np.array([1, 0, 1, 1, 0, 0], dtype=np.int64)
    fill = check_against_reference(rows, keys, 3)
    assert fill.tolist() == [2, 2, 0]


def test_empty_input():
    fill = postings.bucket_rows(
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(4, np.int64), np.zeros(0, np.int64)
    )
    assert fill.tolist() == [0, 0, 0]


def test_errors_found_during_the_pass():
    rows = np.array([1, 2, 3], dtype=np.int64)
    keys = np.array([0, 1, 0], dtype=np.int64)
    starts = layout(keys, 2)
    out = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="keys"):
        postings.bucket_rows(rows, np.array([0, 2, 0]), starts, out)
    with pytest.raises(ValueError, match="keys"):
        postings.bucket_rows(rows, np.array([0, -1, 0]), starts, out)
    with pytest.raises(ValueError, match="rows must be ascending"):
        postings.bucket_rows(np.array([1, 3, 2]), keys, starts, out)
    with pytest.raises(ValueError, match="room"):
        postings.bucket_rows(rows, keys, np.array([0, 1, 3]), out)
    with pytest.raises(ValueError, match="starts"):
        postings.bucket_rows(rows, keys, np.array([0, 2, 1]), out)
    with pytest.raises(ValueError, match="starts"):
        postings.bucket_rows(rows, keys, np.array([0, 2, 4]), out)
    with pytest.raises(ValueError, match="starts"):
        postings.bucket_rows(rows, keys, np.array([-1, 2, 3]), out)


@pytest.mark.parametrize(
    ("change", "exc", "name"),
    [
        ({"rows": [1, 2]}, TypeError, "rows"),
        ({"rows": np.array([1, 2], dtype=np.int32)}, TypeError, "rows"),
        ({"keys": np.array([0])}, ValueError, "keys"),
        ({"starts": np.zeros(0, np.int64)}, ValueError, "starts"),
        ({"out": np.zeros(4, np.float64)}, TypeError, "out"),
    ],
)
def test_bad_arguments_are_named(change, exc, name):
    args = {
        "rows": np.array([1, 2], dtype=np.int64),
        "keys": np.array([0, 0], dtype=np.int64),
        "starts": np.array([0, 2], dtype=np.int64),
        "out": np.zeros(2, dtype=np.int64),
    }
    args.update(change)
    with pytest.raises(exc, match=name):
        postings.bucket_rows(**args)


def test_read_only_out_is_rejected():
    out = np.zeros(2, dtype=np.int64)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="out"):
        postings.bucket_rows(np.array([1, 2]), np.array([0, 0]), np.array([0, 2]), out)


@pytest.mark.parametrize("seed", range(8))
def test_group_rows_matches_the_reference_over_repeated_rows(seed):
    # group_rows(rows, counts, keys) is bucket_rows over np.repeat(rows, counts), with keys
    # repeated inside a row and rows repeated, zero counts and empty input.
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(0, 2000))
    n_keys = int(rng.integers(1, 70))
    rows = np.sort(rng.integers(0, max(1, n // 2), size=n)).astype(np.int64)
    counts = rng.integers(0, 9, size=n).astype(np.int64)
    keys = rng.integers(0, n_keys, size=int(counts.sum())).astype(np.int64)
    starts, out = postings.group_rows(rows, counts, keys, n_keys)
    want = naive.bucket_rows(np.repeat(rows, counts), keys, n_keys)
    assert starts.shape == (n_keys + 1,) and out.shape == (starts[-1],)
    for k in range(n_keys):
        assert out[starts[k] : starts[k + 1]].tolist() == want[k]


def test_group_rows_rejects_bad_input():
    rows = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="ascending"):
        postings.group_rows(rows[::-1].copy(), np.array([1, 1]), np.array([0, 0]), 1)
    with pytest.raises(ValueError, match="n_keys"):
        postings.group_rows(rows, np.array([1, 1]), np.array([0, 5]), 2)
    with pytest.raises(ValueError, match="sum"):
        postings.group_rows(rows, np.array([1, 2]), np.array([0, 0]), 1)
    with pytest.raises(ValueError, match="counts"):
        postings.group_rows(rows, np.array([1, -1]), np.zeros(0, np.int64), 1)
    with pytest.raises(TypeError):
        postings.group_rows(rows, np.array([1.0, 1.0]), np.array([0, 0]), 1)
