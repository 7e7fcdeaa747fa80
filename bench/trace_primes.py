"""Memory open with trace primes stored as uint16 bytes against the msgpack arrays they
replaced: columns and ``HolographicMemory`` open, A/B/A/B in one run, medians.

    python bench/trace_primes.py                  # 100k traces, 9 rounds
    python bench/trace_primes.py --rows 1000000 --rounds 5

Builds a store of ``--rows`` traces (:func:`sentient_core.benchmarks.cases_memory.build_store`:
8 dominant primes each from the 64-prime bank, random codes and SMF), and from it
two compacted copies with the same records: *new*, as this code writes them
(version 2, primes as one msgpack bin of little-endian uint16), and *old*, every
record rewritten as sentient-core wrote it before (version 1, primes a msgpack
array of ints). Each round times, interleaved:

* columns old: the decode this change replaced, on the old store (primes kept as
  raw msgpack and parsed by the numba kernel copied below, which the package no
  longer has), and columns new: :func:`~sentient_core.store.columns.iter_chunks`
  on the new store;
* open old / open new: ``HolographicMemory(store)`` (codes, the mirror's columns,
  the prime index), old with the mirror loading through the old columns decode;
* for information, columns v1 now: today's ``iter_chunks`` on the old store (a
  store read before its one upgrade, e.g. opened read-only).

and once, at the end, :func:`~sentient_core.store.traces.upgrade` of a copy of the
old store (what the first writable ``Core`` open of such a store does).

Prints the median of each and the ratios new/old. The garbage collector stays on,
as in the package; the two-core machines are noisy, hence rounds and medians.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path

import msgspec
import numpy as np

from sentient_core.benchmarks.cases_memory import build_store
from sentient_core.memory import HolographicMemory
from sentient_core.memory import mirror as memory_mirror
from sentient_core.store import Store, traces
from sentient_core.store.columns import (
    CHUNK,
    TraceColumns,
    _decode_batch,
    _smf_from_raw,
    iter_chunks,
)
from sentient_core.store.records import u64_key
from sentient_core.store.txn import TRACE_VERSION_KEY, Txn
from sentient_kernels.config import jit, prefer_passive_threads

# -- the decode this change replaced (store/columns.py and kernels/msgpack.py before) -------


class _OldColumnFields(msgspec.Struct, kw_only=True):
    v: int
    id: int
    row: int
    created: float
    last_access: float
    strength: float
    importance: float
    smf: msgspec.Raw
    primes: msgspec.Raw
    retired: bool


_OLD_DECODER = msgspec.msgpack.Decoder(_OldColumnFields)


@jit()
def _parse_uint_arrays(buf, starts, counts, out):  # the old kernel, verbatim
    end = buf.size
    n_msg = starts.size
    for r in range(n_msg):
        stop = starts[r + 1] if r + 1 < n_msg else end
        if starts[r] < 0 or stop < starts[r] or stop > end:
            return -2
    k = 0
    for r in range(n_msg):
        i = starts[r]
        stop = starts[r + 1] if r + 1 < n_msg else end
        if i >= stop:
            return -1
        h = np.int64(buf[i])
        if 0x90 <= h <= 0x9F:
            n = h - 0x90
            i += 1
        elif h == 0xDC and i + 2 < stop:
            n = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
            i += 3
        else:
            return -1
        for _ in range(n):
            if i >= stop or k >= out.size:
                return -1
            t = np.int64(buf[i])
            if t <= 0x7F:
                v = t
                i += 1
            elif t == 0xCC and i + 1 < stop:
                v = np.int64(buf[i + 1])
                i += 2
            elif t == 0xCD and i + 2 < stop:
                v = (np.int64(buf[i + 1]) << 8) | np.int64(buf[i + 2])
                i += 3
            elif t == 0xCE and i + 4 < stop:
                v = np.int64(0)
                for j in range(1, 5):
                    v = (v << 8) | np.int64(buf[i + j])
                i += 5
            else:
                return -1
            out[k] = v
            k += 1
        if i != stop:
            return -1
        counts[r] = n
    return k


def _old_primes_from_raw(raws: list[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray]:
    n = len(raws)
    counts = np.zeros(n, dtype=np.int64)
    if n == 0:
        return counts, np.zeros(0, np.int64)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    out = np.empty(buf.size, dtype=np.int64)
    k = _parse_uint_arrays(buf, starts, counts, out)
    if k < 0:
        raise RuntimeError("the old fast path does not apply to this store")
    return counts, out[:k].copy()


def old_iter_chunks(txn: Txn, chunk: int = CHUNK) -> Iterator[TraceColumns]:
    where = f"{txn.store.path} traces"
    values = txn.cursor("traces").iternext(keys=False)
    while True:
        batch = list(islice(values, chunk))
        if not batch:
            return
        recs = _decode_batch(_OLD_DECODER, batch, where)
        counts, flat = _old_primes_from_raw([r.primes for r in recs])
        yield TraceColumns(recs, _smf_from_raw([r.smf for r in recs]), counts, flat)


# -- the two stores ---------------------------------------------------------------------------


def old_form(value: bytes | memoryview) -> bytes:
    """A stored record rewritten as version 1 (primes a msgpack array of ints)."""
    data = msgspec.msgpack.decode(value)
    data["v"] = 1
    data["primes"] = list(np.frombuffer(data["primes"], dtype="<u2").tolist())
    return msgspec.msgpack.encode(data)


def make_stores(rows: int, directory: Path) -> tuple[Store, Store]:
    built = build_store(rows)["store"]
    built.copy(directory / "new")
    built.copy(directory / "scratch")
    with Store.open(directory / "scratch") as scratch:
        start = 0
        while start < rows:

            def rewrite(txn: Txn, start: int = start) -> None:
                ids = [r.id for r in traces.iter_range(txn, start, start + 50_000)]
                for trace_id in ids:
                    key = u64_key(trace_id)
                    txn.put("traces", key, old_form(txn.get("traces", key)))

            scratch.write(rewrite)
            start += 50_000
        scratch.write(lambda txn: txn.delete("meta", TRACE_VERSION_KEY))
        scratch.copy(directory / "old")
    shutil.rmtree(directory / "scratch")
    return Store.open(directory / "old", readonly=True), Store.open(
        directory / "new", readonly=True
    )


# -- timing ------------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def columns(store: Store, chunks: Callable[[Txn], Iterator[TraceColumns]]) -> list[TraceColumns]:
    with store.read() as txn:
        return list(chunks(txn))


def open_with(store: Store, chunks: Callable[..., Iterator[TraceColumns]]) -> None:
    saved = memory_mirror.iter_chunks
    memory_mirror.iter_chunks = chunks  # the mirror loads its columns through this
    try:
        HolographicMemory(store)
    finally:
        memory_mirror.iter_chunks = saved


def check_same(old: Store, new: Store) -> None:
    a, b, c = columns(old, old_iter_chunks), columns(new, iter_chunks), columns(old, iter_chunks)
    for name in ("ids", "rows", "smf", "prime_counts", "primes", "strength", "retired"):
        want = np.concatenate([getattr(x, name) for x in a])
        for other in (b, c):
            got = np.concatenate([getattr(x, name) for x in other])
            if not np.array_equal(want, got):
                raise AssertionError(f"columns differ in {name}")


def main() -> None:
    prefer_passive_threads()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="sentient-bench-primes-"))
    try:
        old, new = make_stores(args.rows, directory)
        with old, new:
            size = {name: (directory / name / "data.mdb").stat().st_size for name in ("old", "new")}
            check_same(old, new)
            runs: dict[str, list[float]] = {
                k: [] for k in ("columns old", "columns new", "open old", "open new", "v1 now")
            }
            for store, chunks in ((old, old_iter_chunks), (new, iter_chunks)):
                open_with(store, chunks)  # warm: numba, the page cache of both stores
            for _ in range(args.rounds):
                runs["columns old"].append(timed(lambda: columns(old, old_iter_chunks)))
                runs["columns new"].append(timed(lambda: columns(new, iter_chunks)))
                runs["open old"].append(timed(lambda: open_with(old, old_iter_chunks)))
                runs["open new"].append(timed(lambda: open_with(new, iter_chunks)))
                runs["v1 now"].append(timed(lambda: columns(old, iter_chunks)))
            old.copy(directory / "upgraded")
        with Store.open(directory / "upgraded") as upgraded:
            t0 = time.perf_counter()
            rewritten = upgraded.write(traces.upgrade)
            upgrade_s = time.perf_counter() - t0
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{args.rows:,} traces, {args.rounds} rounds A/B/A/B, medians (ms; all runs)")
        for k, v in runs.items():
            print(f"  {k:12s} {med[k] * 1e3:8.1f}   ({', '.join(f'{t * 1e3:.0f}' for t in v)})")
        print(f"  columns new/old {med['columns new'] / med['columns old']:.3f}")
        print(f"  open    new/old {med['open new'] / med['open old']:.3f}")
        print(f"  columns of a version 1 store now / old {med['v1 now'] / med['columns old']:.3f}")
        print(f"  data.mdb: old {size['old'] / 2**20:.1f} MiB, new {size['new'] / 2**20:.1f} MiB")
        print(f"  one-time upgrade of the old store: {rewritten:,} records in {upgrade_s:.2f} s")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
