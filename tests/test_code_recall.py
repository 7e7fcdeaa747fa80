"""A code query's cosine recall in one dispatch (memory/recall.py ``_cosine_of_code``).

A float32 C-contiguous code skips the checked kernel wrapper: the unchecked kernel
reads the mirror's arrays and checks the query's values itself. It must answer as
the checked path does (``_ranked`` over :func:`recall.query`) — the same hits, bit
for bit — and as the naive float64 reference ranks, and it must raise what the
checked path raises.
"""

from __future__ import annotations

import numpy as np
import pytest

from sentient_core.errors import ArgumentError
from sentient_core.memory import HolographicMemory, NewTrace
from sentient_core.memory import recall as mem_recall
from sentient_core.store import Store
from tests.naive import holographic as naive

DIM = 48


def _memory(tmp_path, n: int, seed: int = 0) -> tuple[Store, HolographicMemory, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    if n > 3:
        vecs[n // 2] = vecs[n // 3] = vecs[1]  # planted exact ties
    st = Store.open(tmp_path / "s", code_dim=DIM)
    mem = HolographicMemory(st)
    mem.store_batch([NewTrace(text=f"trace {i}", code=v) for i, v in enumerate(vecs)])
    return st, mem, vecs


def _key(hits):
    return [(h.record.id, h.row, h.score.hex(), h.cosine, h.lexical) for h in hits]


def _checked(mem, q, k, threshold):
    w = mem._w
    return mem_recall._ranked(w, mem_recall.query(w, q, terms=False), k, threshold, "cosine")


@pytest.mark.parametrize("n", [1, 7, 130])
def test_one_dispatch_equals_the_checked_path_and_the_reference(tmp_path, n):
    st, mem, _ = _memory(tmp_path, n)
    with st:
        retired = [r.id for r in mem.recent(n)[::5]]
        mem.retire(retired)
        view = mem.view()
        codes, valid = view.codes, view.valid
        rng = np.random.default_rng(n)
        for _ in range(25):
            q = rng.standard_normal(DIM).astype(np.float32)
            k = int(rng.integers(1, n + 3))
            threshold = float(rng.choice([-1.0, 0.0, 0.05]))
            got = mem.recall(q, k, threshold=threshold, touch=False)
            assert _key(got) == _key(_checked(mem, q, k, threshold))
            want_rows, want_scores = naive.topk_cosine(codes, q, k, normalized=True, valid=valid)
            keep = want_scores >= threshold
            assert [h.row for h in got] == want_rows[keep].tolist()
            assert not set(retired) & {h.record.id for h in got}


def test_other_query_forms_give_the_same_hits(tmp_path):
    st, mem, vecs = _memory(tmp_path, 60, seed=3)
    with st:
        q = vecs[7] + np.float32(0.1) * vecs[8]
        want = _key(mem.recall(q, 9, touch=False))
        wide = np.zeros((DIM, 2), np.float32)
        wide[:, 0] = q  # a strided (non-contiguous) view
        frozen = q.copy()
        frozen.setflags(write=False)
        for form in (q.astype(np.float64), wide[:, 0], frozen, q.tolist()):
            assert _key(mem.recall(form, 9, touch=False)) == want


@pytest.mark.parametrize("n", [0, 5])
def test_bad_codes_raise_as_the_checked_path_does(tmp_path, n):
    st = Store.open(tmp_path / "s", code_dim=DIM)
    mem = HolographicMemory(st)
    if n:
        mem.store_batch([NewTrace(text=f"t {i}") for i in range(n)])
    with st:
        with pytest.raises(ArgumentError, match="all zeros"):
            mem.recall(np.zeros(DIM, np.float32), touch=False)
        for bad in (np.nan, np.inf):
            q = np.ones(DIM, np.float32)
            q[3] = bad
            with pytest.raises(ArgumentError, match="non-finite"):
                mem.recall(q, touch=False)
        with pytest.raises(ArgumentError, match="shape"):
            mem.recall(np.ones(DIM + 1, np.float32), touch=False)


def test_a_trace_retired_by_another_writer_is_masked_and_searched_again(tmp_path):
    st, mem, vecs = _memory(tmp_path, 40, seed=5)
    with st:
        q = vecs[11].copy()
        first = mem.recall(q, 4, touch=False)
        assert first[0].row == 11
        other = HolographicMemory(st)  # its own mirror: ours does not see the retirement
        other.retire([first[0].record.id])
        again = mem.recall(q, 4, touch=False)
        assert first[0].record.id not in [h.record.id for h in again]
        assert [h.row for h in again] == [h.row for h in first[1:]] + [again[-1].row]
        assert mem.view().valid[11] == 0  # masked in our mirror


def test_a_memory_above_one_block_takes_the_parallel_scan(tmp_path, monkeypatch):
    from sentient_kernels import holographic

    st, mem, vecs = _memory(tmp_path, 60, seed=9)
    with st:
        q = vecs[4] + np.float32(0.2) * vecs[5]
        small = _key(mem.recall(q, 7, touch=False))
        calls = []
        serial = mem_recall.unchecked.holographic_topk_cosine

        class Spy:
            @staticmethod
            def holographic_topk_cosine(*args):
                calls.append(1)
                return serial(*args)

        monkeypatch.setattr(mem_recall, "unchecked", Spy)
        assert _key(mem.recall(q, 7, touch=False)) == small and len(calls) == 1
        monkeypatch.setattr(holographic, "_MIN_BLOCK_ROWS", 16)  # 60 rows: 4 blocks
        monkeypatch.setattr(holographic, "ONE_BLOCK_ROWS", 16)
        assert _key(mem.recall(q, 7, touch=False)) == small and len(calls) == 1
