"""Warm-up compiles every signature real use needs: nothing compiles mid-iteration."""

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

import sentient_kernels
from sentient_kernels.warmup import MODULES, warmup


def _signatures() -> dict[str, int]:
    out = {}
    for name in MODULES:
        mod = getattr(sentient_kernels, name)
        for attr, value in vars(mod).items():
            if isinstance(value, CPUDispatcher):
                out[f"{name}.{attr}"] = len(value.signatures)
    return out


def test_typical_use_after_warmup_compiles_nothing_new(tmp_path):
    from sentient_core.core import Core
    from sentient_core.integrate import Integrator

    report = warmup()
    assert [w.module for w in report] == list(MODULES)
    before = _signatures()
    with Core(tmp_path / "d") as core:
        Integrator(core.memory, core.observer).ingest_texts(
            ["Tides follow the moon. " * 100, "Bees dance to point at flowers. " * 80]
        )
        core.memory.recall("moon tides", k=3)
        core.memory.recall_batch(["moon", "bees"], k=2, touch=False)
        core.observer.process_text("a new note about coupled oscillators")
        core.observer.tick(10)
        core.observer.encoder.keywords_many(["one text", "another text"])
    sentient_kernels.sedenion.mul_batch(np.ones((5000, 16)), np.ones((5000, 16)))
    sentient_kernels.smf.similarity(np.eye(16)[0], np.ones((5000, 16)))
    after = _signatures()
    grown = {k: (before.get(k, 0), v) for k, v in after.items() if v != before.get(k, 0)}
    assert grown == {}


def test_warmup_holds_a_lock_other_processes_wait_for(tmp_path):
    # Compiling into the cache is one process at a time (compile_lock): while a child
    # holds the lock, this process cannot take it; once the child lets go, it can.
    import fcntl
    import subprocess
    import sys

    from sentient_kernels.warmup import lock_path

    held, release = tmp_path / "held", tmp_path / "release"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, time\n"
            "from sentient_kernels.warmup import compile_lock\n"
            "with compile_lock():\n"
            f"    pathlib.Path({str(held)!r}).touch()\n"
            f"    while not pathlib.Path({str(release)!r}).exists():\n"
            "        time.sleep(0.01)\n",
        ]
    )
    try:
        while not held.exists():
            assert child.poll() is None, "the child ended before it took the lock"
        with open(lock_path(), "a+b") as handle:
            with pytest.raises(BlockingIOError):
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            release.touch()
            assert child.wait(timeout=60) == 0
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # free now
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        release.touch()
        child.wait(timeout=60)
