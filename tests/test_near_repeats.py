"""Near-duplicates and near-repeats count (issue 22 item 4): memory does not store a
passage it holds chunked another way, curiosity does not ask about one subject three
ways, and the evaluation reports both beside the exact counts."""

from __future__ import annotations

from pathlib import Path

from sentient_core.analysis import shared_shingles, shingles
from sentient_core.core import Core
from sentient_core.evaluation.audit import near_duplicate_count, near_repeat_count
from sentient_core.evaluation.free import run_free
from sentient_core.events import QueryEvent
from sentient_core.keyphrases import near_repeat, topic_terms
from sentient_core.learning.chaperone import CorpusTopic
from sentient_core.learning.curiosity import Curiosity
from sentient_core.memory import NewTrace
from sentient_core.memory.types import NEAR_SHINGLES

DOC = (Path(__file__).resolve().parent.parent / "bench/data/pydoc/corpus").glob("*.txt")
TEXT = max((p.read_text() for p in DOC), key=len)[:6000]  # real prose nobody here wrote


def test_shingles_see_the_same_text_chunked_another_way():
    a, shifted, other = TEXT[:2000], TEXT[200:2200], TEXT[3000:5000]
    assert shared_shingles(shingles(a), shingles(shifted)) >= NEAR_SHINGLES
    assert shared_shingles(shingles(a), shingles(other)) < 0.3
    assert shared_shingles(shingles(""), shingles(a)) == 0.0
    assert shingles("two words") == shingles("Two, words!")  # a short text: one shingle


def test_memory_does_not_store_a_near_duplicate_passage(tmp_path):
    with Core(tmp_path / "d") as core:
        (first,) = core.memory.store_unique([NewTrace(text=TEXT[:2000])], near=0.95)
        assert first.new
        # Near at 0.999: the code cosine alone would store it; the shingles do not.
        again, other = core.memory.store_unique(
            [NewTrace(text=TEXT[150:2150]), NewTrace(text=TEXT[3000:5000])], near=0.999
        )
        assert not again.new and again.record.id == first.record.id
        assert "5-word shingles" in again.reason
        assert other.new
        # Without near, only exact content is checked (cheap for bulk ingest).
        (plain,) = core.memory.store_unique([NewTrace(text=TEXT[300:2300])])
        assert plain.new
        with core.store.read() as txn:
            from sentient_core.store import traces

            stored = list(traces.iter_range(txn))
    assert near_duplicate_count(stored) == 1  # the one stored without near


def test_topics_fold_the_same_subject_asked_another_way():
    def t(phrase: str) -> tuple[str, ...]:
        return topic_terms(f"What is known about {phrase}?")

    assert near_repeat(t("loop"), t("nearest enclosing loop"))
    assert near_repeat(t("loop terminates"), t("loop"))
    assert near_repeat(t("context managers"), t("context manager"))
    assert not near_repeat(t("private name"), t("module name"))
    assert not near_repeat(t("curl"), t("curl 7.88.1-10+deb12u5"))  # a version is its own
    assert not near_repeat(t("curl 7.88.1-10+deb12u5"), t("curl 7.88.1-10+deb12u6"))
    events = [
        QueryEvent(id=str(i), type="question", question=f"What is known about {p}?", t=0.0)
        for i, p in enumerate(["loop", "loop terminates", "loop", "ftp", "nearest enclosing loop"])
    ]
    assert near_repeat_count(events) == 2  # an exact repeat is counted apart


def test_curiosity_does_not_ask_a_subject_three_ways():
    topics = [
        CorpusTopic(p, f"local:/c/{i}.txt", p, user=True)
        for i, p in enumerate(["loop", "loop terminates", "nearest enclosing loop", "ftp"])
    ]
    cur = Curiosity(None, None, topics=lambda: topics)
    asked = []
    for _ in range(4):
        question, _ = cur._answerable("anything", why="test")
        if question:
            cur.book.register(question, origin="curiosity", gap_type="smf_imbalance")
            asked.append(question)
    assert asked == ["What is known about loop?", "What is known about ftp?"]
    assert cur.folded("What is known about enclosing loop?")
    assert not cur.folded("What is known about gzip?")


def test_a_free_run_stores_no_near_duplicate_and_rarely_asks_twice(tmp_path):
    report = run_free(40, tmp_path / "store", include_python_docs=True)
    assert report.duplicate_stores == 0 and report.near_duplicate_stores == 0
    assert report.near_repeat_rate is not None and report.near_repeat_rate <= 0.10
    # What it learned holds up to the strict reader's machine check (was 5 of 30).
    assert report.successes and report.strict_accepted >= 0.85 * len(report.successes)
