"""Timeline of a learner whose model hangs: how long each question costs, and what answers it.

A loopback OpenAI-compatible server hangs on every request (longer than any
timeout); the learner asks ``--questions`` questions with the default model
settings (30 s per attempt, one 45 s deadline per call across retries, circuit
breaker after 3 failures for 60 s). Prints one line per question (seconds,
who answered) and the breaker's transitions.

    PYTHONPATH=. python bench/hung_model.py [--questions 7]   # from a checkout (uses tests/servers)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sentient_core.core import Core
from sentient_core.events import BreakerEvent, ChaperoneResponseEvent, QueryEvent
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.llm import LLMConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from tests.servers.openai import OpenAIServer

CORPUS = (
    "Honey bees communicate the direction of flowers with a waggle dance. "
    "The angle of the dance encodes the direction relative to the sun."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        server.fault("timeout", times=10_000, hang_s=3600.0)
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        (corpus / "bees.txt").write_text(CORPUS)
        settings = LearnerSettings(
            learner=LearnerConfig(interval_s=0, session="hung"),
            llm=LLMConfig(base_url=server.base_url),
            corpus_dirs=(str(corpus),),
            include_python_docs=False,
        )
        with Core(Path(tmp) / "d") as core, build_learner(core, settings, env={}) as learner:
            t0 = time.monotonic()
            started: dict[str, float] = {}

            def show(e) -> None:
                now = time.monotonic() - t0
                if isinstance(e, QueryEvent):
                    started[e.id] = now
                elif isinstance(e, ChaperoneResponseEvent):
                    who = (
                        "model"
                        if not e.fallback and e.sources and e.sources[0].kind == "llm"
                        else "offline"
                    )
                    took = now - started.get(e.id, now)
                    print(f"{now:7.1f} s  {e.id:<10} {took:6.1f} s  answered by {who}", flush=True)
                elif isinstance(e, BreakerEvent):
                    print(f"{now:7.1f} s  circuit {e.state}", flush=True)

            learner.events.subscribe(show)
            for i in range(args.questions):
                learner.ask(f"How do honey bees communicate, variant {i}?")
            while learner.curiosity.pending_questions:
                learner.step()
            print(f"total {time.monotonic() - t0:.1f} s for {args.questions} questions")


if __name__ == "__main__":
    main()
