"""Run a command under a hard memory cap that counts the page cache, and report its peak.

``VmHWM`` counts every page a process maps, the page cache of its mapped files
included: clean pages the kernel takes back whenever memory is short. Whether a
job *needs* less than some amount is answered by running it with that much and no
more: this puts the command in a fresh memory cgroup whose limit charges anonymous
memory and the page cache it reads alike (cgroup v1 ``memory.limit_in_bytes``, or
v2 ``memory.max``), after dropping the page cache so that the files are charged to
the job when it reads them (pages cached earlier would be charged elsewhere). The
job passes if it finishes without an OOM kill; the cgroup's peak usage and how
often it hit the limit are printed.

    sudo PYTHONPATH=. python bench/memory_capped.py --limit-gb 16 -- \\
        python bench/ten_million.py --dir DIR --reuse --compact

Needs root (cgroups and ``drop_caches``); Linux only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def _group(limit: int) -> tuple[Path, dict[str, str]]:
    """A fresh cgroup with ``limit`` bytes, and its files: (dir, {role: file name})."""
    name = f"sentient-capped-{os.getpid()}"
    if (V1 / "memory.limit_in_bytes").exists():
        group = V1 / name
        files = {
            "limit": "memory.limit_in_bytes",
            "peak": "memory.max_usage_in_bytes",
            "hits": "memory.failcnt",
            "events": "memory.oom_control",
        }
    elif (V2 / "cgroup.controllers").exists():
        group = V2 / name
        files = {"limit": "memory.max", "peak": "memory.peak", "events": "memory.events"}
    else:
        raise SystemExit("no memory cgroup found (cgroup v1 or v2)")
    group.mkdir()
    (group / files["limit"]).write_text(str(limit))
    if (group / "memory.memsw.limit_in_bytes").exists():
        # cgroup v1 with swap accounting: swapped-out pages count too.
        (group / "memory.memsw.limit_in_bytes").write_text(str(limit))
    return group, files


def _oom_kills(group: Path, files: dict[str, str]) -> int:
    for line in (group / files["events"]).read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-gb", type=float, required=True)
    parser.add_argument("--keep-cache", action="store_true", help="do not drop the page cache")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    limit = int(args.limit_gb * (1 << 30))
    if not args.keep_cache:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1")
    group, files = _group(limit)
    t0 = time.perf_counter()
    try:
        procs = group / "cgroup.procs"
        # The child joins the group before it runs the command: every page is charged.
        child = subprocess.Popen(command, preexec_fn=lambda: procs.write_text(str(os.getpid())))
        code = child.wait()
        peak = int((group / files["peak"]).read_text())
        hits = int((group / files["hits"]).read_text()) if "hits" in files else -1
        kills = _oom_kills(group, files)
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    print(
        f"memory-capped: limit {args.limit_gb:g} GB, peak {peak / (1 << 30):.2f} GB"
        f" (page cache and anonymous memory), limit reached {hits} times, OOM kills {kills},"
        f" exit {code}, {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return code if kills == 0 else 137


if __name__ == "__main__":
    raise SystemExit(main())
