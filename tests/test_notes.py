"""Semantic notes: the condensation gate, provenance, retirement, recall's preference, layers."""

from __future__ import annotations

import json
from pathlib import Path

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.autonomy.funnel import describe, promotion_gates
from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.events import EventBus, LayerEvent, read_events
from sentient_core.integrate import Integrator
from sentient_core.layers import NOTES, Condenser, layer_counts, prefer_notes, supported
from sentient_core.layers.condense import note_sentences
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.metamemory.debts import DEBTS
from sentient_core.store import check_integrity

PYDOC = Path(__file__).resolve().parents[1] / "bench" / "data" / "pydoc" / "corpus"

# Two independent sources saying the same about "context managers", one about something else.
A = (
    "Context managers are entered by the with statement. A context manager defines the"
    " runtime context to be established when the with statement is executed. Their enter"
    " method runs before the block."
)
B = (
    "Notes on style. A context manager handles the runtime context established when a with"
    " statement is executed, and its exit method runs after the block. Unrelated closing words."
)
C = "Generators yield values lazily. A generator function returns an iterator of values."


def _store(core: Core, text: str, source: str) -> int:
    return core.memory.store(text, source=source, kind="learned").id


def test_note_sentences_keep_their_offsets_and_skip_fragments(tmp_path):
    text = (
        "nteroperate across bit sizes of builds here. Other words entirely.\n\n"
        "Check the bit sizes of every build. * a bit sizes list item\n\n"
        "Bit sizes differ between builds."
    )
    with Core(tmp_path / "d", durable=False) as core:
        rec = core.memory.get(_store(core, text, "/x"))
        got = note_sentences(rec, ("bit", "size"), limit=5)
        assert [s.text for s in got] == [
            "Check the bit sizes of every build.",
            "Bit sizes differ between builds.",
        ]
        assert all(text[s.start : s.end] == s.text for s in got)
        assert len(note_sentences(rec, ("bit", "size"), limit=1)) == 1


def test_two_agreeing_sources_make_one_note_with_provenance(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        a = _store(core, A, "/docs/a.txt")
        b = _store(core, B, "/docs/b.txt")
        _store(core, C, "/docs/c.txt")
        bus = EventBus(core.store)
        seen: list[object] = []
        bus.subscribe(seen.append)
        run = Condenser(core.memory, emit=bus.emitter(session="t")).run()
        bus.flush()
        assert run.promoted >= 1 and run.traces == 3
        with core.store.read() as txn:
            notes = list(NOTES.iter(txn))
        assert notes and len({n.key for n in notes}) == len(notes)  # one note a subject
        note = notes[0]
        assert set(note.cites) == {a, b} and len(note.sources) == 2
        for s in note.sentences:  # every sentence is lifted verbatim, offsets and all
            assert core.memory.get(s.trace).text[s.start : s.end] == s.text
        assert "Unrelated closing words" not in note.text and "Generators" not in note.text
        layer = [e for e in seen if isinstance(e, LayerEvent)]
        assert any(e.record == f"note:{note.id}" and e.action == "promoted" for e in layer)
        # A second pass over the same traces changes nothing.
        again = Condenser(core.memory).run()
        assert again.promoted == 0 and again.revised == 0 and again.unchanged >= 1


def test_one_source_copied_twice_or_alone_is_not_agreement(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        _store(core, A, "/docs/a.txt")
        _store(core, A + " More.", "/docs/copy-of-a.txt")  # the same text in another file
        run = Condenser(core.memory).run()
        assert run.promoted == 0 and run.vetoed["few_sentences"] >= 1


def test_disagreeing_sources_are_vetoed(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        _store(core, "The curl package version is 7.88.1 in bookworm. Curl package notes.", "/a")
        _store(core, "The curl package version is 8.5.0 in bookworm. Curl package notes.", "/b")
        run = Condenser(core.memory).run()
        assert run.promoted == 0 and run.vetoed["disagreement"] >= 1


def test_a_retired_supporting_trace_retires_the_note_and_opens_a_debt(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        a = _store(core, A, "/docs/a.txt")
        _store(core, B, "/docs/b.txt")
        Condenser(core.memory).run()
        core.memory.retire([a])
        run = Condenser(core.memory).run()
        assert run.retired >= 1 and len(run.debts) == run.retired
        with core.store.read() as txn:
            notes = list(NOTES.iter(txn))
            debts = {d.id: d for d in DEBTS.iter(txn)}
        retired = [n for n in notes if n.state == "retired"]
        assert retired and all(a in n.cites for n in retired)  # nothing deleted
        for n in retired:
            assert f"trace {a}" in n.retired_reason and debts[n.debt].status == "open"
        assert check_integrity(core.store).ok


def test_recall_puts_a_note_in_place_only_where_it_answers_as_well(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        _store(core, A, "/docs/a.txt")
        _store(core, B, "/docs/b.txt")
        _store(core, C, "/docs/c.txt")
        Condenser(core.memory).run()
        q = "What does a context manager define when the with statement is executed?"
        hits = core.memory.recall(q, k=3)
        answers = prefer_notes(q, hits, core.store)
        notes = [x for x in answers if x.kind == "note"]
        assert len(notes) == 1 and len(notes[0].stands_for) == 2
        assert len(answers) == len(hits) - 1  # the note stands for both of its hits
        assert sum(len(x.text) for x in answers) < sum(len(h.record.text) for h in hits)
        # A question the note's sentences do not carry keeps the traces.
        q2 = "What does a generator function return?"
        hits2 = core.memory.recall(q2, k=3)
        assert all(x.kind == "trace" for x in prefer_notes(q2, hits2, core.store))


def test_an_abstractive_sentence_no_source_carries_is_named():
    passages = [A, B]
    ok = "A context manager defines the runtime context of a with statement."
    made_up = "Context managers were invented in 1987 by the Zanzibar committee."
    assert supported(ok, passages) == []
    assert supported(f"{ok} {made_up}", passages) == [made_up]


def test_layers_cli_counts_each_layer(tmp_path, capsys):
    data = tmp_path / "d"
    with Core(data, durable=False) as core:
        _store(core, A, "/docs/a.txt")
        _store(core, B, "/docs/b.txt")
        Condenser(core.memory).run()
        rows = {r.layer: r for r in layer_counts(core.store)}
        with core.store.read() as txn:
            n_notes = sum(1 for _ in NOTES.iter(txn))
    assert rows["episodic"].records == 2 and rows["semantic"].live == n_notes >= 1
    assert main(["layers", "--json", "--data-dir", str(data)]) == 0
    shown = {r["layer"]: r for r in json.loads(capsys.readouterr().out)}
    assert shown["semantic"]["promotions"] == n_notes and shown["episodic"]["live"] == 2
    assert main(["notes", "--data-dir", str(data)]) == 0
    assert "runtime context" in capsys.readouterr().out


def test_export_and_import_carry_notes(tmp_path, capsys):
    data = tmp_path / "d"
    with Core(data, durable=False) as core:
        _store(core, A, "/docs/a.txt")
        _store(core, B, "/docs/b.txt")
        Condenser(core.memory).run()
        with core.store.read() as txn:
            subjects = sorted(n.subject for n in NOTES.iter(txn))
    dump = tmp_path / "dump.jsonl"
    assert main(["export", "--jsonl", "-o", str(dump), "--data-dir", str(data)]) == 0
    assert main(["import", str(dump), "--data-dir", str(tmp_path / "e")]) == 0
    capsys.readouterr()
    assert main(["notes", "--json", "--data-dir", str(tmp_path / "e")]) == 0
    copied = json.loads(capsys.readouterr().out)
    assert subjects and sorted(n["subject"] for n in copied) == subjects
    assert main(["check", "--data-dir", str(tmp_path / "e")]) == 0


def test_the_learner_condenses_after_reflection_and_counts_the_gate(tmp_path):
    files = ["assignment.txt", "augassign.txt", "async.txt", "types.txt", "compound.txt"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for f in files:
        (corpus / f).write_text((PYDOC / f).read_text())
    with Core(tmp_path / "d", durable=False) as core:
        learner = build_learner(
            core,
            LearnerSettings(
                learner=LearnerConfig(
                    interval_s=0, session="notes", max_iterations=100, reflect_every=4
                ),
                caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                corpus_dirs=(str(corpus),),
                include_python_docs=False,
            ),
            env={},
        )
        with learner:
            stats = learner.run(12)
        gate = {g.gate: g for g in promotion_gates(stats)}["condensation"]
        assert gate.reached == gate.passed + gate.vetoed and gate.reached >= 1
        assert any(line.startswith("promotion: condensation") for line in describe(stats))
        events = [e for _, e in read_events(core.store) if isinstance(e, LayerEvent)]
        with core.store.read() as txn:
            notes = list(NOTES.iter(txn))
        assert len([e for e in events if e.action == "promoted"]) == len(notes) == gate.passed
        for n in notes:
            assert len(set(n.sources)) >= 2
            for s in n.sentences:
                assert core.memory.get(s.trace).text[s.start : s.end] == s.text


def test_two_phrases_for_the_same_sentences_make_one_note(tmp_path):
    # In Python's docs "loop terminates" and "suite terminates" name the same two sentences
    # of compound.txt and for.txt: one note, not two.
    with Core(tmp_path / "d", durable=False) as core:
        Integrator(core.memory, core.observer).ingest(
            [str(PYDOC / f) for f in ("compound.txt", "for.txt", "while.txt")]
        )
        run = Condenser(core.memory).run()
        with core.store.read() as txn:
            notes = list(NOTES.iter(txn))
    spans = [frozenset((s.trace, s.start, s.end) for s in n.sentences) for n in notes]
    assert run.promoted == len(notes) >= 1 and run.vetoed["duplicate"] >= 1
    assert len(set(spans)) == len(spans)  # no two notes say the same


def _abstract_run(tmp_path, summarize):
    core = Core(tmp_path / "d", durable=False)
    _store(core, A, "/docs/a.txt")
    _store(core, B, "/docs/b.txt")
    bus = EventBus(core.store)
    run = Condenser(core.memory, emit=bus.emitter(session="t"), summarize=summarize).run()
    bus.flush()
    with core.store.read() as txn:
        notes = list(NOTES.iter(txn))
    events = [e for _, e in read_events(core.store) if isinstance(e, LayerEvent)]
    core.close()
    return run, notes, events


SUPPORTED = "A context manager defines the runtime context of a with statement."


def test_a_models_note_is_kept_only_when_every_sentence_is_carried(tmp_path):
    asked: list[tuple[str, list[str]]] = []

    def good(subject, sentences):
        asked.append((subject, list(sentences)))
        return SUPPORTED

    run, notes, _ = _abstract_run(tmp_path / "good", good)
    assert asked and run.promoted == 1
    (note,) = notes
    assert note.mode == "abstractive" and note.text == SUPPORTED
    assert note.sentences  # the lifted sentences stay as its evidence
    assert [s.text for s in note.sentences] == asked[0][1]

    made_up = f"{SUPPORTED} It was invented in 1987 by the Zanzibar standards committee."
    run, notes, events = _abstract_run(tmp_path / "bad", lambda s, x: made_up)
    assert notes == [] and run.promoted == 0 and run.vetoed["unsupported"] == 1
    assert any(e.action == "rejected" and "Zanzibar" in e.reason for e in events)

    run, notes, _ = _abstract_run(tmp_path / "none", lambda s, x: None)  # no model answer
    assert run.promoted == 1 and notes[0].mode == "extractive" and notes[0].summary == ""


def test_the_learners_model_writes_the_note_over_http_within_the_budget(tmp_path):
    from sentient_core.autonomy.budget import Budget, BudgetCaps
    from sentient_core.learning.abstractive import model_summarizer
    from sentient_core.learning.llm import LLMClient, LLMConfig
    from tests.servers.openai import OpenAIServer

    with (
        OpenAIServer({"runtime context": SUPPORTED}) as srv,
        Core(tmp_path / "d", durable=False) as core,
    ):
        budget = Budget(core.store, BudgetCaps(daily_tokens=10_000, daily_tool_calls=10))
        _store(core, A, "/docs/a.txt")
        _store(core, B, "/docs/b.txt")
        with LLMClient(LLMConfig(base_url=srv.base_url), environ={}) as llm:
            run = Condenser(core.memory, summarize=model_summarizer(llm, budget)).run()
        with core.store.read() as txn:
            (note,) = list(NOTES.iter(txn))
        assert run.promoted == 1 and note.mode == "abstractive" and note.summary == SUPPORTED
        assert len(srv.requests) == 1 and "runtime context" in json.dumps(srv.requests[0].body)
        spent = budget.today()
        assert spent.tool_calls == 1 and spent.tokens > 0
        # With the day's calls used up, the model is not asked again.
        empty = Budget(core.store, BudgetCaps(daily_tokens=10_000, daily_tool_calls=1))
        _store(core, C, "/docs/c.txt")
        _store(core, C.replace("Generators", "Generator functions"), "/docs/d.txt")
        with LLMClient(LLMConfig(base_url=srv.base_url), environ={}) as llm:
            Condenser(core.memory, summarize=model_summarizer(llm, empty)).run()
        assert len(srv.requests) == 1
