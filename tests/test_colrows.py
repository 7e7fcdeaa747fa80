"""The column-row unpack kernel against the structured-array reading of the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.store import colblocks
from sentient_kernels import colrows


def _rows(rng: np.random.Generator, m: int) -> np.ndarray:
    arr = np.zeros(m, dtype=colblocks.DTYPE)
    arr["id"] = rng.integers(0, 1 << 40, m)
    for name in ("created", "last_access", "strength", "importance"):
        arr[name] = rng.standard_normal(m) * 1e6
    arr["retired"] = rng.integers(0, 2, m)
    arr["nprimes"] = rng.integers(0, colblocks.SLOT + 1, m)
    arr["primes"] = rng.integers(0, 1 << 16, (m, colblocks.SLOT))
    arr["smf"] = rng.standard_normal((m, 16))
    arr["use_count"] = rng.integers(0, 9, m)  # fields the mirror does not read
    arr["source"] = rng.integers(0, 9, m)
    return arr


def _outputs(rows: int, n_primes: int):
    return (
        np.full(rows, -7, np.int64),
        np.full(rows, 9, np.uint8),
        tuple(np.full(rows, np.nan) for _ in range(4)),
        np.full((rows, 16), np.nan),
        np.full(rows, -7, np.int64),
        np.full(n_primes, -7, np.int64),
    )


@pytest.mark.parametrize("m", [1, 2, 63, 64, 65, 1000])
def test_unpack_equals_the_structured_reading(m):
    rng = np.random.default_rng(m)
    arr = _rows(rng, m)
    row_id, valid, times, smf, counts, primes = _outputs(m + 5, 8 * m + 3)
    raw = arr.view(np.uint8).reshape(m, colrows.ROW_BYTES)
    # In two runs, as the loader does with its staging buffer.
    half = m // 2
    at = colrows.unpack_rows(raw[:half].copy(), 2, row_id, valid, times, smf, counts, primes, 3)
    at = colrows.unpack_rows(
        raw[half:].copy(), 2 + half, row_id, valid, times, smf, counts, primes, at
    )
    rows = slice(2, 2 + m)
    np.testing.assert_array_equal(row_id[rows], arr["id"])
    np.testing.assert_array_equal(valid[rows], 1 - arr["retired"])
    for column, name in zip(
        times, ("created", "last_access", "strength", "importance"), strict=True
    ):
        np.testing.assert_array_equal(column[rows], arr[name])
        assert np.isnan(column[:2]).all() and np.isnan(column[2 + m :]).all()
    np.testing.assert_array_equal(smf[rows], arr["smf"])
    np.testing.assert_array_equal(counts[rows], arr["nprimes"])
    flat = arr["primes"][np.arange(colblocks.SLOT) < arr["nprimes"][:, None]]
    assert at == 3 + flat.size
    np.testing.assert_array_equal(primes[3:at], flat)
    assert (primes[:3] == -7).all() and (row_id[:2] == -7).all() and (valid[2 + m :] == 9).all()


def test_the_kernel_reads_the_store_layout_offsets():
    # The kernel's byte offsets are the dtype's: a change of layout must change both.
    fields = colblocks.DTYPE.fields
    assert colblocks.DTYPE.itemsize == colrows.ROW_BYTES
    assert [fields[f][1] for f in ("id", "created", "last_access", "strength", "importance")] == [
        0,
        8,
        16,
        24,
        32,
    ]
    assert [fields[f][1] for f in ("retired", "nprimes", "wide", "primes", "smf")] == [
        40,
        41,
        42,
        64,
        80,
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("id", -1, "has no trace"), ("wide", 1, "wide"), ("nprimes", 9, "more primes")],
)
def test_rows_the_kernel_cannot_take_are_named(field, value, message):
    arr = _rows(np.random.default_rng(0), 4)
    arr[field][2] = value
    row_id, valid, times, smf, counts, primes = _outputs(4, 64)
    raw = arr.view(np.uint8).reshape(4, colrows.ROW_BYTES)
    with pytest.raises(ValueError, match=message):
        colrows.unpack_rows(raw, 0, row_id, valid, times, smf, counts, primes, 0)


def test_bad_arguments_are_refused():
    arr = _rows(np.random.default_rng(0), 4)
    raw = arr.view(np.uint8).reshape(4, colrows.ROW_BYTES)
    row_id, valid, times, smf, counts, primes = _outputs(4, 64)
    with pytest.raises(ValueError, match="do not fit"):
        colrows.unpack_rows(raw, 1, row_id, valid, times, smf, counts, primes, 0)
    with pytest.raises(ValueError, match="no room"):
        colrows.unpack_rows(raw, 0, row_id, valid, times, smf, counts, primes[:3], 0)
    with pytest.raises(ValueError, match="bytes a row"):
        colrows.unpack_rows(
            np.zeros((4, 100), np.uint8), 0, row_id, valid, times, smf, counts, primes, 0
        )
    with pytest.raises(TypeError):
        colrows.unpack_rows(raw, 0, row_id.astype(np.int32), valid, times, smf, counts, primes, 0)
