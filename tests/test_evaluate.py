"""The learning-efficacy harness (``sentient evaluate``): Q/A files, modes, metrics, CLI.

The end-to-end tests run the real parts (a real LMDB store in a temporary dir,
the real offline learner) on a tiny corpus, then recompute the metrics here
from the store and the audit log by other routes than the harness takes
(trace-to-request links by time instead of by source and order; tool calls
from the chaperone's responses instead of the budget) and compare.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.errors import ArgumentError, SentientError
from sentient_core.evaluation import run as R
from sentient_core.evaluation.audit import names_question, silent_drops
from sentient_core.evaluation.qa import (
    QAFileError,
    contains_answer,
    load_qa,
    parse_qa,
    sample,
)
from sentient_core.events import (
    ChaperoneResponseEvent,
    CuriosityEvent,
    GapSummary,
    IntegrateEvent,
    IterationEvent,
    JudgeEvent,
    QueryEvent,
    QuestionEvent,
    SkipEvent,
    read_events,
)
from sentient_core.learning.questions import QuestionBook
from sentient_core.store import traces

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"

CORPUS = {
    "tides.txt": (
        "Ocean tides follow the moon. The gravity of the moon pulls the ocean water toward"
        " it and raises a tidal bulge.\n\nNeap tides happen when the sun and the moon stand"
        " at right angles to the earth."
    ),
    "volcano.txt": (
        "A volcano erupts when magma rises through the crust. Molten rock that reaches the"
        " surface is called lava. Pyroclastic flows are fast currents of hot gas and rock."
    ),
    "bees.txt": (
        "Honey bees communicate the direction of flowers with the waggle dance. A colony has"
        " one queen, thousands of female workers and a few hundred male drones."
    ),
    "glaciers.txt": (
        "Glaciers form where snow accumulates faster than it melts. Compressed snow turns"
        " into firn and then into glacial ice. Moving glaciers carve U-shaped valleys."
    ),
}
QA = [
    {"q": "What is molten rock at the surface of a volcano called?", "answers": ["lava"]},
    {"q": "When do neap tides happen?", "answers": ["right angles"]},
    {"q": "How do honey bees tell the direction of flowers?", "answers": ["waggle dance"]},
    {"q": "What does compressed glacier snow turn into?", "answers": ["firn"]},
    {"q": "What shape of valley do moving glaciers carve?", "answers": ["U-shaped"]},
]


@pytest.fixture
def tiny(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in CORPUS.items():
        (corpus / name).write_text(text + "\n", encoding="utf-8")
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps(QA), encoding="utf-8")
    return qa, corpus


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _has(text: str, answers) -> bool:
    return any(_norm(a) in _norm(text) for a in answers)


# ----------------------------------------------------------------------------- Q/A files


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[not json", "not valid JSON"),
        ('{"q": "x"}', "expected a JSON list"),
        ("[]", "empty"),
        ('["a question"]', "entry 0: expected an object"),
        ('[{"answers": ["a"]}]', "entry 0"),
        ('[{"q": "Why?", "answers": []}]', "'answers' is empty"),
        ('[{"q": "Why?", "answers": "because"}]', "entry 0 ('Why?')"),
        ('[{"q": "Why?", "answers": ["a", "  "]}]', "answers[1] is empty"),
        ('[{"q": "  ", "answers": ["a"]}]', "'q' is empty"),
        ('[{"q": "Why?", "answers": ["a"], "hint": "x"}]', "hint"),
        ('[{"q": "Why?", "answers": ["a"]}, {"q": "why? ", "answers": ["b"]}]', "entry 1"),
    ],
)
def test_invalid_qa_files_name_the_entry(text, fragment):
    with pytest.raises(QAFileError) as info:
        parse_qa(text, name="set.json")
    message = str(info.value)
    assert message.startswith("set.json")
    assert fragment in message
    assert isinstance(info.value, ArgumentError) and isinstance(info.value, SentientError)


def test_duplicate_question_names_both_entries():
    with pytest.raises(QAFileError, match=r"entry 1 .*same question as entry 0"):
        parse_qa('[{"q": "Why  so?", "answers": ["a"]}, {"q": "why so?", "answers": ["b"]}]')


def test_missing_qa_file_is_a_clear_error(tmp_path):
    with pytest.raises(QAFileError, match="cannot read"):
        load_qa(tmp_path / "nope.json")


def test_qa_items_are_stripped_and_matching_normalises_whitespace_and_case():
    (item,) = parse_qa('[{"q": " Which\\n loop? ", "answers": [" For  Loop "], "source": "a.txt"}]')
    assert item.q == "Which loop?" and item.answers == ("For  Loop",) and item.source == "a.txt"
    assert contains_answer("a plain for\n loop here", item.answers)
    assert not contains_answer("a for-loop", item.answers)


def test_sample_is_seeded_and_keeps_file_order():
    items = parse_qa(json.dumps([{"q": f"q{i}?", "answers": ["a"]} for i in range(20)]))
    a, b = sample(items, 5, seed=3), sample(items, 5, seed=3)
    assert a == b and len(a) == 5
    assert [items.index(x) for x in a] == sorted(items.index(x) for x in a)
    assert sample(items, None) == items
    with pytest.raises(ArgumentError):
        sample(items, 0)


# ----------------------------------------------------------------------------- settling


def test_silent_drops_ignore_intake_events_and_count_any_other_naming_event():
    q = "What is firn?"
    intake = [
        QuestionEvent(t=1.0, question=q),
        CuriosityEvent(t=2.0, gaps=(GapSummary("question", "firn", q),)),
    ]
    assert silent_drops([q], intake) == [q]
    asked = QueryEvent(t=3.0, id="s-1", type="question", question="what is  FIRN?")
    assert silent_drops([q], [*intake, asked]) == []
    for status in ("asked", "answered", "waiting", "dropped"):
        said = QuestionEvent(t=3.0, question=q, status=status, reason="why")
        assert silent_drops([q], [*intake, said]) == [], status

    # An event kind the loop does not have yet ("answered from memory", "dropped"):
    # any event naming the question settles it.
    class Dropped(msgspec.Struct, tag="question.dropped", tag_field="kind"):
        question: str
        reason: str

    assert names_question(Dropped(question=q, reason="answered from memory"), q)
    assert silent_drops([q, "Why?"], [*intake, Dropped(question=q, reason="x")]) == ["Why?"]


# ----------------------------------------------------------------------------- modes


def test_ingest_mode_matches_the_store(tiny, tmp_path):
    qa, corpus = tiny
    items = load_qa(qa)
    report, chunks = R.run_ingest(items, corpus, 2, tmp_path / "store")
    with Core(tmp_path / "store") as core:
        with core.store.read() as txn:
            stored = list(traces.iter_range(txn))
        ranks = []
        for it in items:
            hits = core.memory.recall(it.q, k=2, touch=False)
            ranks.append(
                next((i for i, h in enumerate(hits) if _has(h.record.text, it.answers)), None)
            )
    assert report.chunks_stored == len(stored) == len(chunks) == len(CORPUS)
    assert report.chars_stored == sum(len(t.text) for t in stored)
    assert report.answer_at_1 == sum(r == 0 for r in ranks) / len(items)
    assert report.answer_at_k == sum(r is not None for r in ranks) / len(items)
    assert report.answered == sum(r is not None for r in ranks)
    assert report.duplicate_stores == len(stored) - len({_norm(t.text) for t in stored})
    assert [r.rank for r in report.results] == [None if r is None else r + 1 for r in ranks]
    assert report.latency is not None and report.latency.queries == len(items)


def test_bm25s_peer_scores_the_same_chunks():
    pytest.importorskip("bm25s")
    items = parse_qa(json.dumps(QA))
    chunks = list(CORPUS.values())
    report = R.run_bm25(items, chunks, 1)
    # Every question shares a rare word with exactly the passage that answers it.
    assert report.mode == "bm25s" and report.answer_at_1 == 1.0
    assert report.chunks_stored is None and report.judge is None


def test_learn_mode_metrics_agree_with_the_audit_log(tiny, tmp_path):
    qa, corpus = tiny
    items = load_qa(qa)
    report = R.run_learn(items, corpus, 3, tmp_path / "store", iterations_per_question=2)
    with Core(tmp_path / "store") as core:
        events = [e for _, e in read_events(core.store)]
        with core.store.read() as txn:
            stored = list(traces.iter_range(txn))
        ranks = []
        for it in items:
            hits = core.memory.recall(it.q, k=3, touch=False)
            ranks.append(any(_has(h.record.text, it.answers) for h in hits))
    queries = [e for e in events if isinstance(e, QueryEvent)]
    assert report.answer_at_k == sum(ranks) / len(items)
    assert report.chunks_stored == len(stored)
    assert report.chars_stored == sum(len(t.text) for t in stored)
    assert report.iterations == sum(isinstance(e, (IterationEvent, SkipEvent)) for e in events)
    assert report.iterations <= 2 * len(items)
    # Tool calls: calls that leave the process (a web fetch, an LLM); offline, none.
    responses = [e for e in events if isinstance(e, ChaperoneResponseEvent)]
    leaving = [
        e
        for e in responses
        if not e.refused
        and (e.type == "fetch_content" or {"web", "llm"} & {s.kind for s in e.sources})
    ]
    assert report.tool_calls == len(leaving) == 0
    keys = [_norm(q.question or q.path or q.url) for q in queries]
    repeats = sum(1 for i, key in enumerate(keys) if key and key in keys[:i])
    assert (report.queries, report.repeat_queries) == (len(queries), repeats)
    told = {_norm(q.question) for q in queries} | {
        _norm(e.question) for e in events if isinstance(e, QuestionEvent) and e.status != "queued"
    }
    assert set(report.silent_dropped) == {it.q for it in items if _norm(it.q) not in told}
    assert report.duplicate_stores == len(stored) - len({_norm(t.text) for t in stored})

    # Judge precision, with traces linked to requests by time (each trace belongs
    # to the first integrate event at or after its creation).
    integrations = [e for e in events if isinstance(e, IntegrateEvent)]
    text_of: dict[str, str] = {}
    for t in stored:
        owner = next(e for e in integrations if e.t >= t.created)
        text_of[owner.id] = text_of.get(owner.id, "") + t.text
    question_of = {q.id: _norm(q.question) for q in queries}
    by_q = {_norm(it.q): it for it in items}
    judged = [e for e in events if isinstance(e, JudgeEvent) and e.outcome == "success"]
    on_qa = [e for e in judged if question_of.get(e.id) in by_q]
    good = [e for e in on_qa if _has(text_of.get(e.id, ""), by_q[question_of[e.id]].answers)]
    judge = report.judge
    assert judge is not None and judge.unlinked == 0
    assert (judge.qa_success, judge.qa_verified) == (len(on_qa), len(good))
    assert judge.own_success == len(judged) - len(on_qa)
    assert judge.precision == (len(good) / len(on_qa) if on_qa else None)
    # Recall: every verdict on a Q/A question whose stored text holds an answer.
    verdicts = [e for e in events if isinstance(e, JudgeEvent) and question_of.get(e.id) in by_q]
    holding = [e for e in verdicts if _has(text_of.get(e.id, ""), by_q[question_of[e.id]].answers)]
    assert judge.qa_answer_stored == len(holding)
    assert judge.recall == (len(good) / len(holding) if holding else None)
    assert on_qa, "the offline learner answers at least one of these questions"
    # The question book's "answered": what the settling requests (a success, or
    # already known) stored or found in memory holds an answer.
    settling = {
        e.id
        for e in events
        if isinstance(e, JudgeEvent) and (e.outcome == "success" or "already known" in e.reason)
    }
    with Core(tmp_path / "store") as core:
        book = QuestionBook(core.store)
        answered = [it for it in items if getattr(book.get(it.q), "status", "") == "answered"]
        verified = [
            it
            for it in answered
            if any(
                _has(core.memory.get(t).text, it.answers)
                for e in integrations
                if e.id in settling and question_of.get(e.id) == _norm(it.q)
                for t in (*e.trace_ids, *e.known_ids)
            )
        ]
    assert answered
    assert (judge.book_answered, judge.book_verified) == (len(answered), len(verified))
    assert judge.book_precision == len(verified) / len(answered)


def test_free_run_lists_every_success(tmp_path):
    report = R.run_free(4, tmp_path / "store")
    with Core(tmp_path / "store") as core:
        events = [e for _, e in read_events(core.store)]
        with core.store.read() as txn:
            stored = list(traces.iter_range(txn))
    successes = [e for e in events if isinstance(e, JudgeEvent) and e.outcome == "success"]
    integrate: dict[str, IntegrateEvent] = {}
    chunks: Counter[str] = Counter()
    for e in events:  # the first (most relevant) passage of each request
        if isinstance(e, IntegrateEvent):
            integrate.setdefault(e.id, e)
            chunks[e.id] += e.chunks
    assert [s.request for s in report.successes] == [e.id for e in successes]
    for s in report.successes:
        assert s.source == integrate[s.request].source and s.linked
        assert len(s.passage) <= 120
        # The preview is the start of the first passage, the one stored under that source.
        assert any(
            t.source == s.source and _norm(t.text).startswith(_norm(s.passage)) for t in stored
        )
        assert s.more == chunks[s.request] - 1
    assert report.chunks_stored == len(stored)
    assert report.iterations == 4
    assert report.duplicate_stores == len(stored) - len({_norm(t.text) for t in stored})


def test_evaluate_rejects_bad_arguments(tiny):
    qa, corpus = tiny
    with pytest.raises(ArgumentError, match="mode"):
        R.evaluate(qa, corpus, mode="teach")
    with pytest.raises(ArgumentError, match="corpus"):
        R.evaluate(qa, corpus / "tides.txt")
    with pytest.raises(ArgumentError, match="Q/A file"):
        R.evaluate()
    with pytest.raises(ArgumentError, match="iterations_per_question"):
        R.run_learn([], corpus, 5, corpus, iterations_per_question=0)


# ----------------------------------------------------------------------------- CLI


def test_cli_prints_the_modes_side_by_side(tiny, capsys):
    qa, corpus = tiny
    assert main(["evaluate", str(qa), "--corpus", str(corpus), "-k", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    names = header.split()[1:]
    assert names[:2] == ["ingest", "learn"]
    if importlib.util.find_spec("bm25s") is not None:
        assert names[2:] == ["bm25s"]
    rows = {line[:38].strip(): line[38:].split() for line in lines if line[:1].isalpha()}
    assert len(rows["answer@1"]) == len(names) and len(rows["answer@3"]) == len(names)
    assert rows["chunks stored"][0] == str(len(CORPUS))
    assert "silent drops" in rows and "judge precision" in rows and "repeat-query rate" in rows


def test_cli_json_and_sampling(tiny, capsys):
    qa, corpus = tiny
    args = ["evaluate", str(qa), "--corpus", str(corpus), "--mode", "ingest", "--json"]
    assert main([*args, "--sample", "2", "--seed", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 2 and report["sampled_from"] == len(QA)
    modes = [m["mode"] for m in report["modes"]]
    assert modes[0] == "ingest" and "learn" not in modes
    assert {"answer_at_1", "answer_at_k", "chunks_stored", "latency"} <= set(report["modes"][0])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate"], "--free-run"),
        (["evaluate", "QA"], "needs --corpus"),
    ],
)
def test_cli_usage_errors(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_invalid_qa_file_names_the_entry(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"q": "Why?", "answers": ["a"]}, {"q": "How?"}]')
    assert main(["evaluate", str(bad), "--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "entry 1 ('How?')" in err and "answers" in err


# ----------------------------------------------------------------------------- the Q/A sets


def _builder():
    spec = importlib.util.spec_from_file_location("build_qa", DATA / "build_qa.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_qa_sets_are_verified_and_current():
    built = _builder().build()
    assert len(built) >= 2
    total = 0
    assert {p.relative_to(DATA).as_posix() for p in built} == {
        "pydoc/qa.json",
        "debian/qa.json",
        "debian/hard.json",
    }
    for path, (text, counts) in built.items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale"
        items = load_qa(path)
        assert len(items) == counts["kept"] >= 60
        corpus = path.parent / "corpus"
        for it in items:
            assert _has((corpus / it.source).read_text(encoding="utf-8"), it.answers)
        total += len(items)
    assert total >= 100
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 3_000_000


def test_builder_fails_on_a_missing_answer_and_rejects_generic_ones(tmp_path):
    b = _builder()
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(f"common words here; unique{i} fact\n")
    ok = [{"q": "Which?", "answers": ["unique1 fact", "common words"], "source": "f1.txt"}]
    kept, counts = b.verify(tmp_path, ok)
    assert kept[0]["answers"] == ["unique1 fact"]
    assert counts["answers_rejected_generic"] == 1
    only_generic = [{"q": "What?", "answers": ["common words"], "source": "f2.txt"}]
    kept, counts = b.verify(tmp_path, only_generic)
    assert kept == [] and counts["questions_rejected"] == 1
    with pytest.raises(b.BuildError, match=r"not in f3\.txt"):
        b.verify(tmp_path, [{"q": "Who?", "answers": ["unique1 fact"], "source": "f3.txt"}])


@pytest.mark.slow
def test_full_run_over_both_sets():
    """Both modes and the bm25s peer over every question of both shipped sets."""
    for name in ("pydoc", "debian"):
        report = R.evaluate(DATA / name / "qa.json", DATA / name / "corpus", mode="both")
        items = load_qa(DATA / name / "qa.json")
        by_mode = {m.mode: m for m in report.modes}
        assert {"ingest", "learn"} <= set(by_mode)
        for m in report.modes:
            assert m.questions == len(items) and 0 <= m.answer_at_1 <= m.answer_at_k <= 1
        learn = by_mode["learn"]
        assert learn.judge is not None and learn.iterations is not None
        assert learn.iterations <= 3 * len(items)
        assert learn.silent_drops is not None and learn.repeat_query_rate is not None


def test_link_stats_count_pairs_sources_and_shared_terms(tmp_path):
    from sentient_core.evaluation.audit import link_stats
    from sentient_core.memory import NewTrace

    with Core(tmp_path / "s") as core:
        a, b, c, _d = core.memory.store_batch(
            [
                NewTrace(text="Ocean tides follow the moon's gravity.", source="tides.txt"),
                NewTrace(text="Spring tides come with the full moon.", source="tides.txt"),
                NewTrace(text="Honey bees dance to show flowers.", source="bees.txt"),
                NewTrace(text="Volcanic magma rises through the crust.", source="rocks.txt"),
            ]
        )
        core.memory.link(a.id, b.id, 0.9, directed=False)  # same source, shares "tides"/"moon"
        core.memory.link(a.id, c.id, 0.5, directed=False)  # neither
        core.memory.link(c.id, a.id, 0.5, directed=False)  # the same pair again
        records = list(traces_of(core))
        stats = link_stats(core.store, records)
    assert stats.pairs == 2
    assert stats.per_trace == 2 * 2 / 4 and stats.max_per_trace == 2
    assert stats.same_source == 0.5 and stats.shared_term == 0.5


def traces_of(core):
    with core.store.read() as txn:
        return list(traces.iter_range(txn))


@pytest.mark.parametrize("outcome", ["success", "not_applicable", "failure", "could_not_verify"])
def test_a_verdict_on_the_questions_own_request_ends_its_turn(outcome):
    watch = R._Watch()
    watch.start("Why do volcanoes erupt?")
    watch(QueryEvent(id="q1", type="question", question="Why do volcanoes erupt?", t=1.0))
    watch(
        JudgeEvent(
            id="q0", outcome="success", basis="deterministic", reason="another request", t=2.0
        )
    )
    assert not watch.settled
    watch(QuestionEvent(question="Why do volcanoes erupt?", status="asked", t=3.0))
    assert not watch.settled  # asked is on the way
    watch(JudgeEvent(id="q1", outcome=outcome, basis="deterministic", reason="r", t=4.0))
    assert watch.settled


def test_the_harder_set_tells_learning_from_storage():
    # Issue 22, item 7: questions plain ingest + recall answers well below 1.0 at rank 1
    # (negation, confusable versions and dates, answers in the entry below), and on
    # which learning keeps up with storing everything. Measured 2026-12-02: ingest
    # answer@1 0.818 / @5 0.961, learn 0.747 / 0.968, bm25s 0.610 / 0.935.
    report = R.evaluate(DATA / "debian" / "hard.json", DATA / "debian" / "corpus", mode="both")
    modes = {m.mode: m for m in report.modes}
    ingest, learn = modes["ingest"], modes["learn"]
    assert report.questions >= 150
    assert ingest.answer_at_1 < 0.9
    assert learn.answer_at_k >= ingest.answer_at_k
