"""Attack probe for local-read confinement and URL ports (issue 8, items 2 and 5).

Runs every attack class against the public API (``Fetcher.read_local``,
``CorpusAnswerer.refresh``, ``SafetyFilter.check_url``/``check_redirect``,
``QueryFormulator.observe``) and prints, per class, how many cases were tried,
refused cleanly (``Refusal`` or another ``SentientError`` such as ``FetchError``),
crashed (any other exception: a raw ``OSError``, ``ValueError`` …) or escaped
(outside content returned, a forbidden URL allowed, a URL extracted wrongly)::

    PYTHONPATH=. python -m tests.probe_confinement [--race N] [--refreshes N] [--json]

It only uses APIs that exist before and after the hardening, so the same file
measures both (``PYTHONPATH=<old tree>``). The races use a swapper subprocess
(see :mod:`tests.race_swapper`); the test suite runs the bounded versions
(``tests/test_confine.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx

from sentient_core.errors import SentientError
from sentient_core.learning.fetch import Fetcher
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.query import QueryFormulator
from sentient_core.learning.safety import Refusal, SafetyFilter, SafetyPolicy

try:
    from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse
except ImportError:  # the tree before the vocab module (for "before" measurements)
    from sentient_core.learning.types import ChaperoneRequest, ChaperoneResponse
from tests.race_swapper import INSIDE, MARKER, SECRET, SECRET_WORDS, Swapper, race_layout

OUTCOMES = ("ok", "refused", "failed", "crash", "escape")


def _policy(incoming: str, **kw) -> SafetyPolicy:
    kw.setdefault("max_files_per_session", 10**9)
    kw.setdefault("rate_limit_requests", 10**9)
    return SafetyPolicy(incoming_dir=incoming, **kw)


def _fetcher(safety: SafetyFilter) -> Fetcher:
    return Fetcher(safety, transport=httpx.MockTransport(lambda r: httpx.Response(500)))


def read_outcome(fetcher: Fetcher, path: str) -> tuple[str, str]:
    """(outcome, detail) of one local read."""
    try:
        data = fetcher.read_local(path).data
    except Refusal as exc:
        return "refused", exc.check
    except SentientError as exc:
        return "failed", type(exc).__name__
    except Exception as exc:
        return "crash", f"{type(exc).__name__}: {exc}"
    if SECRET in data:
        return "escape", "outside content"
    return "ok", ""


def _row(name: str, outcomes: Counter, **extra) -> dict:
    row = {"class": name, "tried": sum(outcomes.values())}
    row.update({k: outcomes.get(k, 0) for k in OUTCOMES})
    row.update(extra)
    return row


# --------------------------------------------------------------------------- static local cases


def _static_layout(root: Path) -> Path:
    incoming = root / "incoming"
    outside = root / "outside"
    (incoming / "sub").mkdir(parents=True)
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / "deep" / "secret.txt").write_bytes(SECRET)
    (incoming / "a.txt").write_bytes(INSIDE)
    (incoming / "sub" / "b.txt").write_bytes(INSIDE)
    return incoming


def static_cases(root: Path) -> dict[str, list[tuple[str, str]]]:
    """Attack class -> [(path, expected)], expected "refuse" or "read"."""
    incoming = _static_layout(root)
    outside = root / "outside"
    os.link(outside / "secret.txt", incoming / "hard.txt")
    os.link(outside / "deep" / "secret.txt", incoming / "sub" / "hard2.txt")
    (incoming / "abs-link.txt").symlink_to(outside / "secret.txt")
    (incoming / "rel-link.txt").symlink_to("../outside/secret.txt")
    (incoming / "dir-link").symlink_to(outside, target_is_directory=True)
    (incoming / "sub" / "up-link").symlink_to("../../outside", target_is_directory=True)
    (incoming / "chain1.txt").symlink_to("chain2.txt")
    (incoming / "chain2.txt").symlink_to("../outside/secret.txt")
    (incoming / "inside-link.txt").symlink_to("sub/b.txt")
    (incoming / "loop.txt").symlink_to("loop.txt")
    (incoming / "la.txt").symlink_to("lb.txt")
    (incoming / "lb.txt").symlink_to("la.txt")
    (incoming / "ldir").symlink_to("ldir", target_is_directory=True)
    home = str(root)
    return {
        "hard link": [("hard.txt", "refuse"), ("sub/hard2.txt", "refuse")],
        "symlink escape": [
            ("abs-link.txt", "refuse"),
            ("rel-link.txt", "refuse"),
            ("dir-link/secret.txt", "refuse"),
            ("dir-link/deep/secret.txt", "refuse"),
            ("sub/up-link/secret.txt", "refuse"),
            ("chain1.txt", "refuse"),
            ("inside-link.txt", "read"),
        ],
        "..": [
            ("../outside/secret.txt", "refuse"),
            ("sub/../../outside/secret.txt", "refuse"),
            (f"{incoming}/../outside/secret.txt", "refuse"),
            ("sub/../sub/../../outside/deep/secret.txt", "refuse"),
            ("../" * 12 + str(outside / "secret.txt").lstrip("/"), "refuse"),
            ("sub/../a.txt", "read"),
        ],
        "~": [
            ("~/incoming/a.txt", "read"),
            ("~/incoming/sub/b.txt", "read"),
            ("~/outside/secret.txt", "refuse"),
            ("~/incoming/../outside/secret.txt", "refuse"),
        ],
        "symlink loop": [
            ("loop.txt", "refuse"),
            ("la.txt", "refuse"),
            ("ldir/a.txt", "refuse"),
        ],
        "_home": [(home, "")],
    }


def run_static(root: Path) -> list[dict]:
    cases = static_cases(root)
    home = cases.pop("_home")[0][0]
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = home
    rows = []
    try:
        incoming = str(root / "incoming")
        for name, items in cases.items():
            outcomes: Counter = Counter()
            wrong = 0
            reports = 0
            for path, expected in items:
                safety = SafetyFilter(_policy(incoming))
                with _fetcher(safety) as fetcher:
                    outcome, _ = read_outcome(fetcher, path)
                reports += sum(safety.counters().values())
                if expected == "read" and outcome != "ok":
                    wrong += 1
                outcomes[outcome] += 1
            extra = {"should_read_but_did_not": wrong, "refusals_counted": reports}
            rows.append(_row(name, outcomes, **extra))
        # ~ in the policy itself: the incoming dir given as ~/incoming.
        outcomes = Counter()
        safety = SafetyFilter(_policy("~/incoming"))
        with _fetcher(safety) as fetcher:
            for path in ("a.txt", "sub/b.txt", "~/incoming/a.txt"):
                outcomes[read_outcome(fetcher, path)[0]] += 1
        rows.append(_row("~ (policy dir)", outcomes, expected_ok=3))
        # Symlink loops in the corpus walk: how often is each loop reported?
        ans = CorpusAnswerer([incoming], include_python_docs=False)
        loops = ("loop.txt", "la.txt", "lb.txt", "ldir")
        reported = Counter(
            os.path.basename(p) for p, _ in ans.skipped if os.path.basename(p) in loops
        )
        # The same loop in a folder and named explicitly (as `ingest DIR DIR/loop.txt` does).
        from sentient_core.ingest import iter_files

        twice = [
            e.skip_reason
            for e in iter_files([incoming, os.path.join(incoming, "loop.txt")])
            if os.path.basename(e.path) == "loop.txt"
        ]
        rows.append(
            {
                "class": "symlink loop (folder + named: reports)",
                "tried": 1,
                "reports": len(twice),
                "reasons": twice,
            }
        )
        rows.append(
            {
                "class": "symlink loop (walker reports)",
                "tried": len(loops),
                "reports": dict(reported),
                "reasons": sorted({why for p, why in ans.skipped if os.path.basename(p) in loops}),
            }
        )
    finally:
        if old_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old_home
    return rows


# --------------------------------------------------------------------------- races


def run_read_race(root: Path, tries: int) -> dict:
    """Reads through Fetcher.read_local while a subprocess swaps dirs, files and links."""
    incoming, targets = race_layout(root)
    safety = SafetyFilter(_policy(str(incoming)))
    outcomes: Counter = Counter()
    by_target: dict[str, Counter] = {t: Counter() for t in targets}
    crashes: Counter = Counter()
    t0 = time.perf_counter()
    with Swapper(root) as swapper, _fetcher(safety) as fetcher:
        for i in range(tries):
            target = targets[i % len(targets)]
            outcome, detail = read_outcome(fetcher, target)
            outcomes[outcome] += 1
            by_target[target][outcome] += 1
            if outcome == "crash":
                crashes[detail.split(":", 1)[0]] += 1
        swaps = swapper.stop()
    seconds = time.perf_counter() - t0
    return _row(
        "directory swap race (read_local)",
        outcomes,
        seconds=round(seconds, 2),
        swaps=swaps,
        crash_types=dict(crashes),
        by_target={t: dict(c) for t, c in by_target.items()},
        refusal_counters={k: v for k, v in safety.counters().items() if v},
    )


def run_answerer_race(root: Path, refreshes: int) -> dict:
    """CorpusAnswerer.refresh() while a subprocess swaps dirs, files and links."""
    incoming, _ = race_layout(root)
    ans = CorpusAnswerer([incoming], include_python_docs=False)
    outcomes: Counter = Counter()
    skipped = 0
    t0 = time.perf_counter()
    with Swapper(root) as swapper:
        for _ in range(refreshes):
            try:
                ans.refresh()
            except Exception as exc:
                outcomes["crash"] += 1
                outcomes[f"crash:{type(exc).__name__}"] += 0
                continue
            skipped += len(ans.skipped)
            got = ans.answer(SECRET_WORDS, k=10, min_score=0.0)
            outcomes["escape" if any(MARKER in p for p in got.passages) else "ok"] += 1
        swaps = swapper.stop()
    seconds = time.perf_counter() - t0
    return _row(
        "offline answerer walk (refresh race)",
        outcomes,
        seconds=round(seconds, 2),
        swaps=swaps,
        skipped_entries=skipped,
    )


# --------------------------------------------------------------------------- URLs


def _url_outcome(fn: Callable[[], object]) -> str:
    try:
        fn()
    except Refusal:
        return "refused"
    except SentientError:
        return "failed"
    except Exception:
        return "crash"
    return "escape"


PORT_URLS = [
    "https://github.com:6379/",
    "https://github.com:22/",
    "https://arxiv.org:8080/abs/1",
    "https://docs.python.org:80/3/",
    "https://en.wikipedia.org:8443/wiki/X",
    "https://raw.githubusercontent.com:65535/x",
    "https://github.com:1/",
    "https://github.com:0443/",
]
NON_ASCII_PORTS = [
    "https://github.com:٨٠/",  # Arabic-Indic 80
    "https://github.com:٤٤٣/",  # Arabic-Indic 443
    "https://github.com:۴۴۳/",  # Extended Arabic-Indic 443
    "https://github.com:¹²³/",  # superscripts
    "https://github.com:४४३/",  # Devanagari 443
    "https://github.com:６３７９/",  # fullwidth 6379
    "https://github.com:443١/",  # mixed
    "https://github.com:𝟒𝟒𝟑/",  # mathematical bold 443
]
REDIRECTS = [
    "https://github.com:22/",
    "https://github.com:6379/x",
    "//github.com:8080/",
    "https://arxiv.org:٨٠/",
    "https://arxiv.org:¹²³/",
]
IPV6_TEXTS = [
    ("see https://[::1]/admin for more", "https://[::1]/admin"),
    ("at https://[::1]:8080/x.", "https://[::1]:8080/x"),
    ("(https://[fe80::1%25eth0]:443/)", "https://[fe80::1%25eth0]:443/"),
    ("https://[::ffff:127.0.0.1]/page", "https://[::ffff:127.0.0.1]/page"),
    ("https://[2001:db8::1]", "https://[2001:db8::1]"),
    ("link: <https://[::1]:22/>", "https://[::1]:22/"),
]


def run_urls() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        safety = SafetyFilter(_policy(tmp))
        outcomes = Counter(_url_outcome(lambda u=u: safety.check_url(u)) for u in PORT_URLS)
        rows.append(_row("ports", outcomes, counters_moved=sum(safety.counters().values())))

        safety = SafetyFilter(_policy(tmp))
        outcomes = Counter(_url_outcome(lambda u=u: safety.check_url(u)) for u in NON_ASCII_PORTS)
        rows.append(
            _row(
                "non-ASCII port digits",
                outcomes,
                counters_moved=sum(safety.counters().values()),
            )
        )

        safety = SafetyFilter(_policy(tmp), resolver=lambda host: ["93.184.216.34"])
        outcomes = Counter(
            _url_outcome(lambda u=u: safety.check_redirect("https://github.com/a", u, 1))
            for u in REDIRECTS
        )
        rows.append(
            _row("redirect to other port", outcomes, counters_moved=safety.counters()["redirect"])
        )

        # URLs suggested in an answer (LLM or corpus) become fetch requests: same checks?
        safety = SafetyFilter(_policy(tmp))
        q = QueryFormulator(followups_per_iteration=100)
        req = ChaperoneRequest(id="r", type="question", question="q")
        content = " ".join(PORT_URLS[:3] + NON_ASCII_PORTS[:2])
        q.observe(req, ChaperoneResponse(request_id="r", type="question", ok=True, content=content))
        suggested = [r.url for r in q.followups() if r.type == "fetch_content"]
        outcomes = Counter(_url_outcome(lambda u=u: safety.check_url(u)) for u in suggested)
        rows.append(_row("ports in suggested URLs", outcomes, extracted=len(suggested)))

        # IPv6 literals in answers must be extracted whole (then refused as ip_literal).
        outcomes = Counter()
        checks = Counter()
        for text, whole in IPV6_TEXTS:
            q = QueryFormulator(followups_per_iteration=100)
            q.observe(
                req, ChaperoneResponse(request_id="r", type="question", ok=True, content=text)
            )
            urls = [r.url for r in q.followups() if r.type == "fetch_content"]
            if urls != [whole]:
                outcomes["escape"] += 1  # truncated or mangled
                continue
            try:
                safety.check_url(urls[0])
                outcomes["escape"] += 1
            except Refusal as exc:
                outcomes["refused"] += 1
                checks[exc.check] += 1
            except Exception:
                outcomes["crash"] += 1
        rows.append(_row("IPv6 extraction", outcomes, refused_by=dict(checks)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--race", type=int, default=20_000, help="reads in the read race")
    parser.add_argument("--refreshes", type=int, default=3_000, help="refreshes in the walk race")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(run_read_race(Path(tmp) / "race", args.race))
        rows.extend(run_static(Path(tmp) / "static"))
        rows.append(run_answerer_race(Path(tmp) / "walk", args.refreshes))
    rows.extend(run_urls())
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
    else:
        print(f"{'class':<38} tried  ok  refused failed crash escape  notes")
        for r in rows:
            notes = {k: v for k, v in r.items() if k not in ("class", "tried", *OUTCOMES) and v}
            if "ok" not in r:
                print(f"{r['class']:<38} {r['tried']:>5}  {notes}")
                continue
            print(
                f"{r['class']:<38} {r['tried']:>5} {r['ok']:>3} {r['refused']:>8} "
                f"{r['failed']:>6} {r['crash']:>5} {r['escape']:>6}  {notes}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
