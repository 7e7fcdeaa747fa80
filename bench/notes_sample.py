"""The notes a careful reader grades: every semantic note the condensation gate writes on the
Q/A corpora, from stores built the ways the core fills memory, then a seeded sample.

Stores (each fresh, in a temp dir): the pydoc and Debian corpora ingested together; learn mode
over each Q/A set (the learner's own stored passages, condensed after reflection and once at
the end); the default offline learner's free run on Python's docs. Notes are pooled, one per subject (the first store's), and a seeded sample of
``--sample`` is printed with every sentence and its source, for a person to mark.

    PYTHONPATH=. python bench/notes_sample.py --sample 30 [--free 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"


def _notes(core) -> list[dict]:
    from sentient_core.layers import NOTES

    with core.store.read() as txn:
        return [
            {
                "subject": n.subject,
                "state": n.state,
                "sentences": [
                    {"text": " ".join(s.text.split()), "source": Path(s.source).name}
                    for s in n.sentences
                ],
            }
            for n in NOTES.iter(txn)
            if n.state == "semantic"
        ]


def ingest_store(tmp: Path) -> list[dict]:
    """Both corpora ingested into one store, condensed once."""
    from sentient_core.core import Core
    from sentient_core.integrate import Integrator
    from sentient_core.layers import Condenser

    with Core(tmp / "ingest", durable=False) as core:
        Integrator(core.memory, core.observer).ingest(
            [str(DATA / "pydoc" / "corpus"), str(DATA / "debian" / "corpus")]
        )
        Condenser(core.memory).run()
        return _notes(core)


def learn_store(tmp: Path, qa: Path, corpus: Path) -> list[dict]:
    """Learn mode over one Q/A set (3 iterations a question), condensed at the end."""
    from sentient_core.core import Core
    from sentient_core.evaluation.qa import load_qa
    from sentient_core.evaluation.run import run_learn

    data = tmp / f"learn-{qa.parent.name}-{qa.stem}"
    run_learn(load_qa(qa), corpus, 5, data, condense=True)
    with Core(data) as core:
        return _notes(core)


def free_store(tmp: Path, iterations: int) -> list[dict]:
    """The default offline learner on its own (Python's docs), condensed after reflections."""
    from sentient_core.core import Core
    from sentient_core.evaluation.free import run_free

    run_free(iterations, tmp / "free")
    with Core(tmp / "free") as core:
        return _notes(core)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the sample here")
    ap.add_argument("--free", type=int, default=100, help="free-run iterations (0: none)")
    args = ap.parse_args(argv)
    pooled: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="notes-sample-") as d:
        tmp = Path(d)
        stores = [("ingest", ingest_store(tmp))]
        for qa, corpus in (
            (DATA / "pydoc" / "qa.json", DATA / "pydoc" / "corpus"),
            (DATA / "debian" / "qa.json", DATA / "debian" / "corpus"),
        ):
            stores.append((f"learn {qa.parent.name}", learn_store(tmp, qa, corpus)))
        if args.free:
            stores.append((f"free run {args.free}", free_store(tmp, args.free)))
    for name, notes in stores:
        print(f"{name}: {len(notes)} live note(s)", file=sys.stderr)
        for n in notes:
            pooled.setdefault(n["subject"], {**n, "store": name})
    subjects = sorted(pooled)
    chosen = sorted(random.Random(args.seed).sample(subjects, min(args.sample, len(subjects))))
    print(f"{len(subjects)} distinct subjects; {len(chosen)} sampled (seed {args.seed})")
    for i, s in enumerate(chosen, 1):
        n = pooled[s]
        print(f"\n{i}. {s!r} ({n['store']})")
        for sent in n["sentences"]:
            print(f"   - {sent['text'][:240]}  [{sent['source']}]")
    if args.json:
        Path(args.json).write_text(json.dumps([pooled[s] for s in chosen], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
