"""Helper process for the store's crash and concurrency tests.

Run as a script (``python tests/_store_writer.py MODE DIR ...``); the tests also
import :func:`batch_content` to know what a batch must contain.

Modes
-----
write       append batches of traces + codes + one link + one event, one write
            transaction per batch; print ``committed <batch> <total>`` after each
            commit (flushed), ``ready`` once the store is open, ``done`` at the end.
read-loop   open read-only and, until the store holds ``--until`` traces, take
            snapshots: read_all + a top-1 cosine query for a random row, checking
            the answer and the trace it belongs to; print a JSON summary.
read-once   open read-only and print a JSON summary of what is committed.
fork-misuse open the store, fork, and check that the child gets ForkedStoreError.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback

import numpy as np

from sentient_core.store import (
    ForkedStoreError,
    LinkRecord,
    Store,
    TraceRecord,
    codes,
    links,
    log,
    traces,
)

T0 = 1_700_000_000.0


def batch_content(batch: int, size: int, dim: int) -> tuple[list[TraceRecord], np.ndarray]:
    """Records (ids/rows left at 0) and unit-norm codes of batch ``batch``; deterministic."""
    rng = np.random.default_rng([7, batch])
    vecs = rng.standard_normal((size, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    records = [
        TraceRecord(
            id=0,
            row=0,
            created=T0 + batch,
            last_access=T0 + batch,
            kind="observed",
            source=f"batch-{batch}",
            text=f"batch {batch} item {i} " + "lorem ipsum " * 30,
            topic=f"t{i % 5}",
            keywords=(f"k{batch}", f"i{i}"),
            tags=(f"b{batch}",),
            primes=(2, 3, 5 + 2 * (i % 3)),
            importance=(i % 10) / 10,
        )
        for i in range(size)
    ]
    return records, vecs


def _write(args: argparse.Namespace) -> int:
    store = Store.open(args.dir, code_dim=args.dim, map_size=args.map_size, durable=True)
    with store:
        with store.read() as txn:
            start = txn.counters().trace_count // args.batch
        print("ready", flush=True)
        for batch in range(start, start + args.batches):
            records, vecs = batch_content(batch, args.batch, args.dim)

            def add(txn, records=records, vecs=vecs, batch=batch):
                stored = traces.append(txn, records, vecs)
                link = LinkRecord(
                    src=stored[0].id, dst=stored[-1].id, weight=1.0, created=T0 + batch
                )
                links.put(txn, link)
                log.append(txn, "events", f"batch {batch}".encode())
                return txn.counters().trace_count

            total = store.write(add)
            print(f"committed {batch} {total}", flush=True)
            if args.pause:
                time.sleep(args.pause)
        print(f"done grows={store.map_grows}", flush=True)
    return 0


def _read_loop(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    deadline = time.monotonic() + args.timeout
    reads = queries = 0
    sizes: set[int] = set()
    last = 0
    while True:
        try:
            # A small map: the reader must adopt the map the writer grows.
            store = Store.open(args.dir, readonly=True, map_size=args.map_size)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    with store:
        print("ready", flush=True)
        while last < args.until:
            if time.monotonic() > deadline:
                raise TimeoutError(f"store still holds {last} traces after {args.timeout} s")
            with store.read() as txn:
                count = txn.counters().trace_count
                matrix = codes.read_all(txn)
                if matrix.shape[0] != count:
                    raise AssertionError(f"{matrix.shape[0]} rows for {count} traces")
                if count < last:
                    raise AssertionError(f"trace count went back from {last} to {count}")
                reads += 1
                sizes.add(count)
                last = count
                if count:
                    row = int(rng.integers(count))
                    best = int(np.argmax(matrix @ matrix[row]))
                    if best != row:
                        raise AssertionError(f"top-1 of row {row} is row {best}")
                    trace = traces.get(txn, row)  # the writer gives trace i row i
                    batch, item = divmod(row, args.batch)
                    want, vecs = batch_content(batch, args.batch, matrix.shape[1])
                    if trace.text != want[item].text or not np.array_equal(matrix[row], vecs[item]):
                        raise AssertionError(f"trace {row} does not match batch {batch}")
                    queries += 1
        summary = {
            "reads": reads,
            "queries": queries,
            "distinct_sizes": len(sizes),
            "final": last,
            "map_adopts": store.map_adopts,
        }
    print(json.dumps(summary), flush=True)
    return 0


def _read_once(args: argparse.Namespace) -> int:
    with Store.open(args.dir, readonly=True) as store, store.read() as txn:
        matrix = codes.read_all(txn)
        texts = hashlib.sha256()
        for trace in traces.iter_range(txn):
            texts.update(trace.text.encode())
        summary = {
            "traces": txn.counters().trace_count,
            "rows": int(matrix.shape[0]),
            "codes_sha256": hashlib.sha256(matrix.tobytes()).hexdigest(),
            "texts_sha256": texts.hexdigest(),
        }
    print(json.dumps(summary), flush=True)
    return 0


def _fork_misuse(args: argparse.Namespace) -> int:
    with Store.open(args.dir, code_dim=4) as store:
        pid = os.fork()
        if pid == 0:  # child: both entry points must refuse
            failures = 0
            for attempt in (lambda: store.read().__enter__(), lambda: store.write(len)):
                try:
                    attempt()
                    failures += 1
                except ForkedStoreError as exc:
                    print(f"child: {exc}", flush=True)
            store.close()  # must only drop the handle in the child
            os._exit(10 + failures)
        _, status = os.waitpid(pid, 0)
        child = os.waitstatus_to_exitcode(status)
        with store.read() as txn:  # the parent's handle still works
            txn.counters()
        print(f"parent: child exit {child}", flush=True)
    return 0 if child == 10 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["write", "read-loop", "read-once", "fork-misuse"])
    parser.add_argument("dir")
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--batches", type=int, default=1_000_000)
    parser.add_argument("--map-size", type=int, default=256 * 1024)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--until", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    run = {
        "write": _write,
        "read-loop": _read_loop,
        "read-once": _read_once,
        "fork-misuse": _fork_misuse,
    }[args.mode]
    try:
        return run(args)
    except Exception:
        traceback.print_exc()
        return 2


if __name__ == "__main__":
    sys.exit(main())
