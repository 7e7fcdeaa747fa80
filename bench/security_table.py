"""The security table of the report: every request of tests/test_server_security.py,
what it must get and what it got, against real servers on loopback.

    PYTHONPATH=. python bench/security_table.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.servers.sentient import served
from tests.test_server_security import CASES, EXTRA, _panel, _token_panel, run_case


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "o").mkdir()
        (root / "t").mkdir()
        with (
            served(root / "o", EXTRA) as open_,
            served(root / "t", EXTRA + "require_token = true\n") as token,
        ):
            open_.client.post("/learning/start")
            servers = {"open": (open_, _panel(open_)), "token": (token, _token_panel(token))}
            print("| server | request | expected | got |")
            print("| --- | --- | --- | --- |")
            bad = 0
            for case in CASES:
                got = run_case(case, servers)
                bad += got != case.expected
                mark = "" if got == case.expected else " ✗"
                kind = "loopback" if case.server == "open" else "require_token"
                print(f"| {kind} | {case.name} | {case.expected} | {got}{mark} |")
            open_.client.post("/learning/stop")
            import threading

            replies: list[int] = []
            gate = threading.Barrier(8)

            def start() -> None:
                gate.wait()
                replies.append(open_.client.post("/learning/start").json()["ok"])

            threads = [threading.Thread(target=start) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            loops = sum(t.name == "sentient-learner" for t in threading.enumerate())
            print(
                f"| loopback | 8 concurrent POST /learning/start (token) | 1 started, 1 loop |"
                f" {sum(replies)} started, {loops} loop |"
            )
            open_.client.post("/learning/stop")
    print(f"\n{len(CASES) - bad} of {len(CASES)} as expected")


if __name__ == "__main__":
    main()
