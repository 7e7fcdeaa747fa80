"""Benchmark case: the learning loop's own overhead per iteration (issue 4 item 10).

``learner.step`` runs one full iteration — budget checks, observer ticks,
curiosity (with a batched memory probe), drive, query formulation, ingest and
integrate of a ~2000-char answer, judge, budget commit, learn, events flush to
the audit log — over a memory holding 100k traces (at scale 1), with a
chaperone that answers instantly with a canned grounded passage. Two rows: a
typical iteration (gaps from the SMF and coherence: no memory probe) and one
with a queued user question, which curiosity first probes against the whole
memory (one exact top-1 scan of 100k × 256 float32 = 102 MB). So the time
measured is everything except waiting on the network or the LLM. The store is
the shared bench store of :mod:`cases_memory`, opened ``durable=False``: commits
are not fsynced (``python bench/learner_wait.py --durable`` measures what fsync
adds: 5 commits a typical step, ~0.2 ms each on an idle disk). Target: < 5 ms median. The peer row is one
``memory.recall`` over the same 100k traces, for scale.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import msgspec

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.benchmarks.cases import Case, on_close
from sentient_core.benchmarks.cases_memory import build_store
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.memory import HolographicMemory
from sentient_core.misses import MissLog
from sentient_core.observer import Observer
from sentient_core.vocab import ChaperoneResponse, Source

# The kernels this module's cases time (``bench --only`` builds no other module's fixtures).
KERNELS = (
    "learner.step",
    "learner.step[user question]",
)

if TYPE_CHECKING:
    from sentient_core.core import Core

TARGET_S = 0.005
ANSWER = (
    "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans. "
    "Spring tides happen when the sun and moon align; neap tides at quarter moons. "
) * 12


class InstantChaperone:
    """Answers every request at once with a grounded passage (no network, no LLM)."""

    llm = None  # no model: the learner charges what each response reports

    def __init__(self) -> None:
        self.n = 0

    def may_call_out(self, request) -> int:
        return 0

    def term_stats(self):
        return None

    def handle(self, request, emit=None) -> ChaperoneResponse:
        self.n += 1
        return ChaperoneResponse(
            request_id=request.id,
            type=request.type,
            ok=True,
            grounded=True,
            content=f"[{self.n}] {ANSWER}"[:2000],
            sources=(Source("local", f"/incoming/note{self.n}.md"),),
        )


def cases(scale: float) -> list[Case]:
    rows = max(int(100_000 * scale), 1_000)
    built = build_store(rows)
    store = built["store"]
    tmp = Path(tempfile.mkdtemp(prefix="sentient-bench-learner-"))
    observer = Observer()
    memory = HolographicMemory(store, encoder=observer.encoder)
    # The parts of a Core that build_learner uses, over the shared bench store.
    core = cast(
        "Core",
        SimpleNamespace(
            data_dir=tmp, store=store, memory=memory, observer=observer, misses=MissLog(store)
        ),
    )
    learner = build_learner(
        core,
        LearnerSettings(
            learner=LearnerConfig(interval_s=0, session="bench", reflect_every=0),
            caps=BudgetCaps(
                daily_tokens=0,
                daily_tool_calls=0,
                per_tick_tokens=0,
                per_tick_initiatives=0,
                per_initiative_tokens=0,
            ),
            include_python_docs=False,
        ),
        env={},
    )
    learner.chaperone = InstantChaperone()  # type: ignore[assignment]  # duck-typed stand-in

    def remove() -> None:
        # The learner's audit log and session files live in tmp: flush and drop them
        # when the bench run ends (every run used to leave one folder behind).
        try:
            learner.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    on_close(remove)
    # Every timed step must find SMF gaps: no axis cooldown (with the default
    # 5 and two axes a step, one step in six had none ready and did nothing).
    learner.curiosity.config = msgspec.structs.replace(learner.curiosity.config, axis_cooldown=0)
    query = "Why do ocean tides follow the moon?"

    def typical() -> None:
        # A fresh question book each time: an axis question, once asked, is
        # settled or backing off, so one book runs out of gaps.
        learner.curiosity.book = QuestionBook()
        report = learner.step()
        if report.initiatives == 0:
            raise AssertionError("the iteration did no work")

    def with_question() -> None:
        # A fresh book too: the question, once asked, is settled and not asked again.
        learner.curiosity.book = QuestionBook()
        learner.ask(query)
        report = learner.step()
        if report.initiatives == 0:
            raise AssertionError("the iteration did no work")

    def peer() -> None:
        memory.recall(query, 10, touch=False)

    common: dict[str, Any] = {
        "peer": peer,
        "peer_name": f"one memory.recall over {rows:,} traces",
        "items": 1,
        "item_unit": "iterations",
        "target": "< 5 ms median per iteration (excl. network/LLM)",
        "target_met": lambda o, _p: o < TARGET_S,
        "repeat": 15,
    }
    return [
        Case(
            kernel="learner.step",
            size=f"1 iteration (gaps from the SMF), {rows:,} traces",
            ours=typical,
            **common,
        ),
        Case(
            kernel="learner.step[user question]",
            size=f"1 iteration + memory probe, {rows:,} traces",
            ours=with_question,
            **common,
        ),
    ]
