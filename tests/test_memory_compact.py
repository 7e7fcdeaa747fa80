"""Memory with ``compact_codes=True``: cosine recall from int8 codes, the same hits as float32.

Two real LMDB stores get the same traces; one memory scans int8 codes, the
other the float32 mirror. Every cosine recall must return the same records,
rows and scores (bit for bit), through appends, retirements and a reopen.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory import compact as compact_mod
from sentient_core.store import Store

DIM = 64


def _key(hits):
    return [(h.record.id, h.row, float(h.score).hex()) for h in hits]


def _codes(rng, n):
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    # Exact duplicates and one-ulp neighbours: ties and near-ties the int8
    # codes cannot tell apart.
    rows[10:20] = rows[3]
    rows[20:30] = rows[4]
    rows[25, 7] = np.nextafter(rows[25, 7], np.float32(np.inf))
    return rows


@pytest.fixture
def pair(tmp_path):
    with (
        Store.open(tmp_path / "plain", code_dim=DIM) as a,
        Store.open(tmp_path / "compact", code_dim=DIM) as b,
    ):
        yield (
            HolographicMemory(a),
            HolographicMemory(b, compact_codes=True),
            tmp_path,
        )


def _store_both(plain, compact, codes, start):
    items = [NewTrace(text=f"trace {start + i}", code=c, primes=()) for i, c in enumerate(codes)]
    ids = [r.id for r in plain.store_batch(items)]
    assert [r.id for r in compact.store_batch(items)] == ids
    return ids


def _compare(plain, compact, rng, queries, ks=(1, 5, 12, 40)):
    for i in range(queries):
        if i % 3 == 0:
            q = rng.standard_normal(DIM).astype(np.float32)
        else:  # near a stored code: a clear winner, then ties among copies
            row = int(rng.integers(0, plain._w.mirror.n))
            q = plain._w.mirror.codes[row] + np.float32(0.02) * rng.standard_normal(DIM).astype(
                np.float32
            )
        k = ks[i % len(ks)]
        want = plain.recall(q, k=k, threshold=-1.0, touch=False)
        got = compact.recall(q, k=k, threshold=-1.0, touch=False)
        assert _key(got) == _key(want)
        assert len(want) == min(k, plain.count)


@pytest.mark.parametrize("grow_rows", [64, 65536])
def test_compact_recall_equals_float32_recall_through_appends_and_retirements(
    pair, monkeypatch, grow_rows
):
    # 64: the int8 copy grows (and copies itself) several times on the way.
    monkeypatch.setattr(compact_mod, "_GROW_ROWS", grow_rows)
    plain, compact, _ = pair
    rng = np.random.default_rng(61)
    ids = _store_both(plain, compact, _codes(rng, 500), 0)
    _compare(plain, compact, rng, 120)
    assert compact._w.compact is not None and compact._w.compact.n == 500
    assert plain._w.compact is None
    # Appends: only the new rows are quantised, on the next search.
    ids += _store_both(plain, compact, _codes(rng, 300), 500)
    _compare(plain, compact, rng, 120)
    assert compact._w.compact.n == 800
    # Retirements (including the exact duplicates at the k-th places) are masked.
    gone = sorted({ids[int(i)] for i in rng.choice(800, 150, replace=False)} | set(ids[11:16]))
    assert plain.retire(gone) == compact.retire(gone)
    assert plain.count == compact.count == 800 - len(gone)
    _compare(plain, compact, rng, 120)
    # Text queries ranked by cosine take the same path.
    for text in ("trace 7", "trace 512", "nothing like it"):
        want = plain.recall(text, k=8, threshold=-1.0, touch=False, rank="cosine")
        got = compact.recall(text, k=8, threshold=-1.0, touch=False, rank="cosine")
        assert _key(got) == _key(want)


def test_compact_recall_after_reopening_the_store(tmp_path):
    rng = np.random.default_rng(67)
    codes = _codes(rng, 400)
    with Store.open(tmp_path / "compact", code_dim=DIM) as first:
        HolographicMemory(first, compact_codes=True).store_batch(
            [NewTrace(text=f"trace {i}", code=c, primes=()) for i, c in enumerate(codes)]
        )
    with (
        Store.open(tmp_path / "plain", code_dim=DIM) as a,
        Store.open(tmp_path / "compact", code_dim=DIM) as b,
    ):
        plain = HolographicMemory(a)
        plain.store_batch(
            [NewTrace(text=f"trace {i}", code=c, primes=()) for i, c in enumerate(codes)]
        )
        reopened = HolographicMemory(b, compact_codes=True)
        assert reopened._w.compact is not None and reopened._w.compact.n == 0
        _compare(plain, reopened, rng, 60)
        assert reopened._w.compact.n == 400
