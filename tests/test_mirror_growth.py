"""The mirror grows without a copy (issue 25 item 4): longer views of one reserved
mapping while the reservation lasts, so a growing memory never holds its codes twice;
a reader's shorter views stay valid; outgrowing the reservation copies once."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest

import sentient_core.memory.mirror as mirror
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory.mirror import RESERVE_FACTOR, Mirror
from sentient_core.store import Store


def test_growing_within_the_reservation_shares_memory_and_keeps_readers_views():
    m = Mirror(1024, 8)
    assert m.reserved == RESERVE_FACTOR * 1024
    m.codes[:10] = np.arange(80, dtype=np.float32).reshape(10, 8)
    m.row_id[:10] = np.arange(10)
    m.n = 10
    reader_codes, reader_ids = m.codes, m.row_id  # a reader's view of the published rows
    grown = m.with_room(3000)
    assert grown is not m and grown.capacity >= 3000
    assert np.shares_memory(grown.codes, reader_codes)  # no copy
    assert (grown.row_id[10 : grown.capacity] == -1).all()  # new rows have no trace
    grown.codes[2000] = 7.0  # the writer fills a new row
    grown.row_id[2000] = 99
    assert (reader_codes[:10] == np.arange(80).reshape(10, 8)).all()
    assert reader_ids.shape == (1024,) and (reader_ids[:10] == np.arange(10)).all()
    assert grown.n == 10 and m.with_room(500) is m


def test_outgrowing_the_reservation_copies_once_into_a_larger_one():
    m = Mirror(1024, 4, reserve=2048)
    m.codes[:5] = 1.5
    m.strength[:5] = 0.25
    m.row_id[:5] = np.arange(5)
    m.n = m.active = 5
    grown = m.with_room(5000)
    assert not np.shares_memory(grown.codes, m.codes)
    assert grown.reserved == RESERVE_FACTOR * grown.capacity
    assert (grown.codes[:5] == 1.5).all() and (grown.strength[:5] == 0.25).all()
    assert (grown.row_id[:5] == np.arange(5)).all() and (grown.row_id[5:] == -1).all()
    assert (grown.n, grown.active) == (5, 5)


def test_a_memory_growing_through_many_appends_recalls_what_it_stored(tmp_path):
    rng = np.random.default_rng(3)
    with Store.open(tmp_path / "s", code_dim=16) as store:
        memory = HolographicMemory(store)
        codes = rng.standard_normal((3000, 16)).astype(np.float32)
        for start in range(0, 3000, 500):  # past the first capacity (1024 rows)
            memory.store_batch(
                [NewTrace(text=f"t{i}", code=codes[i]) for i in range(start, start + 500)]
            )
            if start == 0:
                first = memory.view().mirror.codes  # what a reader scans before the growth
        grown = memory.view().mirror
        assert grown.capacity >= 3000 and grown.mapped
        # Codes are views of the store's code file: the first view still reads its rows.
        unit = codes / np.linalg.norm(codes, axis=1, keepdims=True)
        np.testing.assert_allclose(grown.codes, unit, rtol=1e-6, atol=1e-7)
        assert first.shape[0] == 500
        np.testing.assert_array_equal(first, grown.codes[:500])
        hits = memory.recall(codes[2999], k=1, touch=False, rank="cosine")
        assert hits[0].record.text == "t2999"


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"),
    reason="MAP_NORESERVE's value is known here only for Linux on x86-64 and arm64",
)
def test_the_reservation_is_mapped_without_reserving_swap():
    # /proc/self/smaps marks a MAP_NORESERVE mapping with the "nr" VmFlag.
    arr = mirror._reserve(1 << 16, (4,), "float64")
    addr = arr.__array_interface__["data"][0]
    flags = None
    region = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            region = lo <= addr < hi
        elif region and line.startswith("VmFlags:"):
            flags = line.split()[1:]
            break
    assert flags is not None
    assert "nr" in flags, flags
