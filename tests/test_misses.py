"""Misses make the core curious (issue 24 item 3): a recall whose hits hold nothing relevant
is recorded; a subject missed again becomes a ``memory_miss`` gap the learner goes after;
status, the API and the panel count them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sentient_core import misses as misses_mod
from sentient_core.core import Core
from sentient_core.learning.curiosity import Curiosity
from sentient_core.misses import REPEATS, MissLog, miss_question, subject_of
from sentient_core.store import Store
from sentient_core.vocab import GAP_PRIORITY

DEBIAN = Path(__file__).resolve().parent.parent / "bench" / "data" / "debian" / "corpus"


class _Rec:
    def __init__(self, text: str, id: int = 0) -> None:
        self.text = text
        self.id = id


class _Hit:
    def __init__(self, text: str, id: int = 0) -> None:
        self.record = _Rec(text, id)
        self.score = 0.5


BEES = _Hit("Honey bees communicate the direction of flowers with a waggle dance.")


def test_a_recall_holding_the_query_terms_is_no_miss_and_one_that_does_not_is():
    log = MissLog()
    assert log.note("waggle dance of bees", [BEES], "cli") is None
    got = log.note("coroutine cancellation", [BEES], "cli")
    assert got is not None and got.count == 1 and got.status == "open" and got.origins == ("cli",)
    assert got.best == 0.0 and got.query == "coroutine cancellation"
    # No hits at all is a miss; a query naming nothing (no content terms) is not.
    assert log.note("tide tables", [], "api") is not None
    assert log.note("what is it?", [], "api") is None
    assert log.summary() == {"misses": 2, "subjects": 2, "open": 2, "asked": 0, "answered": 0}
    assert log.checked == 4


def test_misses_pool_by_subject_and_become_due_when_repeated():
    log = MissLog()
    assert subject_of("coroutine cancellation") == subject_of("Cancellation of coroutines?")
    log.note("coroutine cancellation", [BEES], "cli")
    assert log.due() == []
    second = log.note("Cancellation of coroutines?", [BEES], "api")
    assert second.count == REPEATS and second.origins == ("cli", "api")
    assert second.query == "Cancellation of coroutines?"  # the latest phrasing is asked
    assert [r.subject for r in log.due()] == [second.subject]
    assert miss_question("coroutine  cancellation") == "What is known about coroutine cancellation?"
    assert miss_question("How are coroutines cancelled?") == "How are coroutines cancelled?"
    marked = log.mark(second.subject, "asked", "Cancellation of coroutines?")
    assert marked.status == "asked" and log.due() == []
    assert log.mark("no such subject", "answered") is None


def test_a_full_log_forgets_the_oldest_answered_subject_first(monkeypatch):
    monkeypatch.setattr(misses_mod, "MAX_SUBJECTS", 3)
    t = iter(range(100))
    log = MissLog(clock=lambda: float(next(t)))
    for q in ("alpha topic", "beta topic", "gamma topic"):
        log.note(q, [], "cli")
    log.note("beta topic", [], "cli")  # beta missed twice: kept over the ones seen once
    log.mark(subject_of("gamma topic"), "answered")
    log.note("delta topic", [], "cli")
    assert {r.query for r in log.records()} == {"alpha topic", "beta topic", "delta topic"}
    log.note("epsilon topic", [], "cli")  # none answered: the oldest seen once goes
    assert {r.query for r in log.records()} == {"beta topic", "delta topic", "epsilon topic"}


def test_misses_persist_in_the_store_and_another_process_view_sees_them(tmp_path):
    store = Store.open(tmp_path / "d", code_dim=8)
    try:
        MissLog(store).note("coroutine cancellation", [BEES], "cli")
        MissLog(store).note("coroutine cancellation", [], "api")
        again = MissLog(store)  # a fresh reader, as a learner in another process
        (rec,) = again.records()
        assert rec.count == 2 and rec.origins == ("cli", "api")
        assert again.summary()["misses"] == 2
    finally:
        store.close()


class _Observer:
    smf = [1.0] + [0.3] * 15  # no axis starved: only the misses make gaps

    def coherence_drop(self) -> float:
        return 0.0


class _Memory:
    count = 1
    total = 1

    def __init__(self, hits):
        self.hits = hits

    def recall_batch(self, questions, k, touch, rank):
        return [list(self.hits) for _ in questions]

    def recent(self, n):
        return []


def _relevance(question, hit):
    from sentient_core.relevance import relevance

    return relevance(question, hit.record.text)


def test_repeated_misses_become_a_memory_miss_gap_and_close_when_answered():
    import numpy as np

    obs = _Observer()
    obs.smf = np.array(obs.smf)
    cur = Curiosity(obs, _Memory([BEES]), answers=_relevance)
    assert cur.note_miss("coroutine cancellation", [BEES], "library").count == 1
    assert cur.detect().gaps == ()  # once is not yet curiosity
    cur.note_miss("coroutine cancellation", [BEES], "library")
    gaps = cur.detect().gaps
    (gap,) = [g for g in gaps if g.type == "memory_miss"]
    assert gap.question == "What is known about coroutine cancellation?"
    assert gap.priority == GAP_PRIORITY["memory_miss"] and "missed it 2 times" in gap.detail
    (rec,) = cur.misses.records()
    assert rec.status == "asked" and rec.question == gap.question
    # The learner asks it and the judge answers it: the miss closes.
    cur.mark_asked(gap.question)
    cur.record_outcome(gap.question, "success", answered_by=7)
    cur.detect()
    assert cur.misses.records()[0].status == "answered"
    # A miss on an answered subject is counted, not asked again.
    cur.note_miss("coroutine cancellation", [BEES], "library")
    assert not [g for g in cur.detect().gaps if g.type == "memory_miss"]
    assert cur.misses.records()[0].count == 3


def test_the_learners_own_memory_check_records_a_miss_once_per_question():
    import numpy as np

    obs = _Observer()
    obs.smf = np.array(obs.smf)
    cur = Curiosity(obs, _Memory([BEES]), answers=_relevance)
    cur.config = cur.config.__class__(memory_settles="none")
    cur.ask("What is coroutine cancellation?")
    cur.ask("How do honey bees communicate flowers?")
    for _ in range(3):
        cur.detect()
    (rec,) = cur.misses.records()  # the bees question is held by memory: no miss
    assert rec.origins == ("learner",) and rec.count == 1


def _cli(*argv: str) -> int:
    from sentient_core.cli import main

    return main(list(argv))


def test_cli_misses_make_a_running_learner_look_and_status_counts_them(tmp_path, capsys):
    # The user's store knows curl; openssl waits unread in incoming/. Two recalls about
    # openssl's security fixes miss, the learner turns them into a question, answers it
    # from openssl's changelog, and the subject closes.
    data = tmp_path / "data"
    (data / "incoming").mkdir(parents=True)
    shutil.copy(DEBIAN / "openssl.changelog.txt", data / "incoming" / "openssl.changelog.txt")
    d = ["--data-dir", str(data)]
    assert _cli("ingest", str(DEBIAN / "curl.changelog.txt"), *d) == 0
    capsys.readouterr()
    assert _cli("recall", "CMS AuthEnvelopedData parsing", "-k", "3", *d) == 0
    out = capsys.readouterr().out
    assert "memory holds nothing relevant: miss 1" in out and "after 2 misses" in out
    assert _cli("recall", "AuthEnvelopedData parsing in CMS", "-k", "3", *d) == 0
    assert "miss 2 on this subject (the learner will look for it)" in capsys.readouterr().out
    # A relevant recall is no miss.
    assert _cli("recall", "curl security fix", "-k", "3", *d) == 0
    assert "memory holds nothing relevant" not in capsys.readouterr().out
    assert _cli("status", "--json", *d) == 0
    before = json.loads(capsys.readouterr().out)["misses"]
    assert before == {"misses": 2, "subjects": 1, "open": 1, "asked": 0, "answered": 0}

    assert _cli("learn", "--iterations", "4", "--interval", "0", *d) == 0
    capsys.readouterr()
    with Core(data, readonly=True) as core:
        recs = core.misses.records()
        (rec,) = [r for r in recs if "cli" in r.origins]
        assert rec.status == "answered", rec
        assert rec.question == "What is known about AuthEnvelopedData parsing in CMS?"
        from sentient_core.learning.questions import QuestionBook

        asked = QuestionBook(core.store).get(rec.question)
        assert asked.origin == "recall" and asked.gap_type == "memory_miss"
        assert asked.status == "answered" and asked.last_outcome == "success", asked
        assert "openssl.changelog.txt" in core.memory.get(asked.answered_by).source
    assert _cli("recall", "CMS AuthEnvelopedData parsing", "-k", "3", *d) == 0
    out = capsys.readouterr().out
    assert "openssl.changelog.txt" in out and "memory holds nothing relevant" not in out
    # The learner's own checks of memory for the questions it queued count too.
    assert _cli("status", *d) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("misses")]
    with Core(data, readonly=True) as core:
        summary = core.misses.summary()
    # The learner's own misses are questions it queued: asked at once, answered with them.
    assert summary["answered"] >= 1 and summary["misses"] > 2 and summary["open"] == 0
    assert line == [
        f"  misses    {summary['misses']} recall(s) found nothing relevant, on"
        f" {summary['subjects']} subject(s): {summary['open']} open, {summary['asked']} asked,"
        f" {summary['answered']} answered"
    ]


def test_api_recall_reports_and_records_its_miss_and_status_counts_it(tmp_path):
    from tests.servers.sentient import served

    with served(tmp_path) as s:
        body = s.client.get("/recall", params={"q": "quantum chromodynamics", "k": 3}).json()
        assert body["miss"]["count"] == 1 and body["miss"]["status"] == "open"
        body = s.client.get("/recall", params={"q": "chromodynamics quantum?", "k": 3}).json()
        assert body["miss"]["count"] == 2
        assert s.status()["gates"]["misses"] == {
            "misses": 2,
            "subjects": 1,
            "open": 1,
            "asked": 0,
            "answered": 0,
        }


@pytest.mark.parametrize("repeats", [1, 3])
def test_miss_repeats_is_the_threshold(repeats):
    import numpy as np

    from sentient_core.learning.curiosity import CuriosityConfig

    obs = _Observer()
    obs.smf = np.array(obs.smf)
    cur = Curiosity(obs, _Memory([BEES]), CuriosityConfig(miss_repeats=repeats), answers=_relevance)
    fired = []
    for _ in range(3):
        cur.note_miss("plasma physics", [BEES])
        fired.append(any(g.type == "memory_miss" for g in cur.detect().gaps))
    assert fired.index(True) == repeats - 1
