"""Recipes (issue 23, item 3): born confirmed only of a judged success, tried first on a
question of the same kind and domain, credited or demoted only by the judge's verdict on
that reuse; the state machine refuses every edge it does not list."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import lmdb
import msgspec
import pytest

from sentient_core.autonomy.budget import BudgetCaps
from sentient_core.core import Core
from sentient_core.errors import ArgumentError
from sentient_core.events import EventBus, JudgeEvent, QueryEvent, RecipeEvent, read_events
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.offline import CorpusAnswerer
from sentient_core.learning.recipe_use import RecipeUse
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.liveview import render
from sentient_core.metamemory.base import IllegalTransitionError
from sentient_core.recipes import RECIPES, TRANSITIONS, RecipeBook, find, kind_of, layer_counts
from sentient_core.store import Store, check_integrity
from sentient_core.vocab import ChaperoneRequest, ChaperoneResponse, Passage, Source, Verdict

ROOT = Path(__file__).resolve().parents[1]
CURL = ROOT / "bench" / "data" / "debian" / "corpus" / "curl.changelog.txt"
Q1 = "Which version of the Debian curl package fixed CVE-2025-0167?"
Q2 = "Which version of the Debian curl package fixed CVE-2024-9681?"


def _verdict(outcome: str, gate: str = "learned") -> Verdict:
    return Verdict(outcome=outcome, basis="deterministic", reason="r", gate=gate)  # type: ignore[arg-type]


def _response(req: ChaperoneRequest, ref: str = "/corpus/curl.changelog.txt") -> ChaperoneResponse:
    source = Source("local", ref)
    return ChaperoneResponse(
        request_id=req.id,
        type=req.type,
        ok=True,
        content="text",
        sources=(source,),
        passages=(Passage(text="text", source=source),),
        grounded=True,
    )


def _bus(core: Core) -> tuple[EventBus, list[object]]:
    bus = EventBus(core.store)
    seen: list[object] = []
    bus.subscribe(seen.append)
    return bus, seen


def test_kind_keeps_the_frame_and_masks_the_subject():
    assert kind_of(Q1) == kind_of(Q2) == "which version of the * package fixed *"
    assert kind_of("On which date was version 1.2-3 of the Debian vim package uploaded?") == (
        "on which date was version * of the * package uploaded"
    )
    assert kind_of("") == ""


def test_the_state_machine_refuses_every_edge_it_does_not_list(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        book = RecipeBook(core.store)
        rec = book.born(
            kind="k *",
            domain="curl",
            request_type="question",
            source="local:/c.txt",
            route="",
            query_shape="k *",
            request_id="s-1",
        )
        assert rec is not None and rec.state == "confirmed"  # born confirmed, never a draft
        assert rec.history[0].source == "none" and rec.history[0].evidence == ("s-1",)
        for target in ("draft", "retired", "confirmed", "bogus"):
            with pytest.raises(IllegalTransitionError):
                book.transition(rec.id, target, "no")
        assert book.get(rec.id) == rec  # refused: nothing changed
        # A failed verification on reuse demotes it; it cannot climb back by itself.
        adv = book.judged(rec.id, "s-2", "could_not_verify")
        assert (adv.state, adv.failures) == ("advisory", 1)
        assert adv.history[-1].evidence == ("s-2",) and "could_not_verify" in adv.history[-1].reason
        with pytest.raises(IllegalTransitionError):
            book.transition(rec.id, "confirmed")
        # A rewrite (item 4's edge) keeps the old procedure and re-enters at draft...
        draft = book.rewrite(rec.id, "source moved", evidence=["s-2"], source="local:/d.txt")
        assert draft.state == "draft" and draft.source == "local:/d.txt"
        assert [r.source for r in draft.revisions] == ["local:/c.txt"]
        # ... which only a verified reuse confirms.
        again = book.judged(rec.id, "s-3", "success")
        assert (again.state, again.support) == ("confirmed", 1)
        assert book.judged(rec.id, "s-4", "failure").state == "advisory"
        assert book.judged(rec.id, "s-5", "not_applicable").state == "advisory"
        with pytest.raises(ArgumentError):
            book.rewrite(rec.id, "x", route="sideways")  # a route that does not exist
        gone = book.retire(rec.id, "resisted three repairs", ["s-4"])
        assert gone.state == "retired" and gone.inconclusive == 1
        for target in ("draft", "confirmed", "advisory", "retired"):
            with pytest.raises(IllegalTransitionError):
                book.transition(rec.id, target)
        assert book.find("k *", "curl") is None  # a retired recipe stands for nothing
        with core.store.read() as txn:
            assert layer_counts(txn) == {"draft": 0, "confirmed": 0, "advisory": 0, "retired": 1}
        assert [(h.source, h.target) for h in gone.history] == [
            ("none", "confirmed"),
            ("confirmed", "advisory"),
            ("advisory", "draft"),
            ("draft", "confirmed"),
            ("confirmed", "advisory"),
            ("advisory", "retired"),
        ]
        assert all((h.source, h.target) in TRANSITIONS for h in gone.history[1:])
        assert book.counters()["refused"] == 9
        assert check_integrity(core.store).ok


def test_born_only_of_a_judged_success_and_never_credited_by_reading(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        bus, seen = _bus(core)
        emit = bus.emitter(session="s")
        use = RecipeUse.on(core.store)
        req = ChaperoneRequest(id="s-1", type="question", question=Q1)
        for outcome in ("failure", "could_not_verify", "not_applicable"):
            use.judged(req, _response(req), _verdict(outcome, "relevance"), emit)
        with core.store.read() as txn:
            assert RECIPES.count(txn) == 0  # nothing but a success gives birth
        use.judged(req, _response(req), _verdict("success"), emit)
        (rec,) = use.book.records()  # type: ignore[union-attr]
        assert (rec.kind, rec.domain, rec.source, rec.born_of) == (
            *use.key(Q1),  # without term statistics the domain is the first subject term
            "local:/corpus/curl.changelog.txt",
            "s-1",
        )
        # Another success on the same kind and domain is no reuse: no credit, no new recipe.
        other = ChaperoneRequest(id="s-2", type="question", question=Q2)
        use.judged(other, _response(other), _verdict("success"), emit)
        # Reading — the book, memory's recall of what the recipe's source stored — credits nothing.
        use.book.find(rec.kind, rec.domain)  # type: ignore[union-attr]
        use.book.records()  # type: ignore[union-attr]
        core.memory.store("Import patch for CVE-2025-0167 (7.88.1-10+deb12u11).", source="x")
        core.memory.recall(Q1, k=3)
        assert use.book.records() == [rec]  # type: ignore[union-attr]
        born = [e for e in seen if isinstance(e, RecipeEvent)]
        assert [(e.action, e.recipe, e.request) for e in born] == [("born", rec.id, "s-1")]


def test_the_recipe_is_tried_first_and_a_failed_reuse_makes_it_advisory(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        bus, seen = _bus(core)
        emit = bus.emitter(session="s")
        use = RecipeUse.on(core.store)
        # Born of a request the task-commitment drive had re-routed: its route is the recipe's.
        routed = ChaperoneRequest(id="s-1.wider", type="question", question=Q1, route="wider")
        use.judged(routed, _response(routed), _verdict("success"), emit)
        # The next question of the same kind and domain is asked on that route first.
        req = ChaperoneRequest(id="s-2", type="question", question=Q2)
        (tried,) = use.first([req], emit)
        assert tried.route == "wider" and tried.id == "s-2" and tried.question == Q2
        ev = [e for e in seen if isinstance(e, RecipeEvent)]
        assert (ev[-1].action, ev[-1].recipe, ev[-1].request) == ("tried", 0, "s-2")
        assert "recipe 0: tried [confirmed]" in (render(ev[-1]) or "")
        assert tried.scope == "local:/corpus/curl.changelog.txt"  # from the recipe's source
        assert use.book.get(0).trials == 1 and use.book.get(0).support == 0  # type: ignore[union-attr]
        # Other requests pass as they are: a read, a question of another kind.
        read = ChaperoneRequest(id="s-3", type="read_local", path="x.txt")
        other = ChaperoneRequest(id="s-4", type="question", question="What is curl?")
        assert use.first([read, other], emit) == [read, other]
        # The judge fails the reuse: the recipe is advisory, and no longer tried first.
        use.judged(tried, _response(tried), _verdict("failure", "relevance"), emit)
        rec = use.book.get(0)  # type: ignore[union-attr]
        assert (rec.state, rec.failures, rec.support) == ("advisory", 1, 0)
        last = [e for e in seen if isinstance(e, RecipeEvent)][-1]
        assert (last.action, last.before, last.after, last.request) == (
            "failed",
            "confirmed",
            "advisory",
            "s-2",
        )
        nxt = ChaperoneRequest(id="s-5", type="question", question=Q1)
        assert use.first([nxt], emit) == [nxt]
        # A later judged success supersedes the advisory recipe: it retires, a new one is born.
        use.judged(nxt, _response(nxt), _verdict("success"), emit)
        assert [r.state for r in use.book.records()] == ["retired", "confirmed"]  # type: ignore[union-attr]
        assert use.book.get(0).history[-1].reason == "superseded by recipe 1"  # type: ignore[union-attr]
        assert check_integrity(core.store).ok


def test_a_verified_reuse_credits_support(tmp_path):
    with Core(tmp_path / "d", durable=False) as core:
        bus, _ = _bus(core)
        emit = bus.emitter(session="s")
        use = RecipeUse.on(core.store)
        first = ChaperoneRequest(id="s-1", type="question", question=Q1)
        use.judged(first, _response(first), _verdict("success"), emit)
        (req,) = use.first([ChaperoneRequest(id="s-2", type="question", question=Q2)], emit)
        use.judged(req, _response(req), _verdict("success"), emit)
        (rec,) = use.book.records()  # type: ignore[union-attr]
        assert (rec.state, rec.support, rec.trials) == ("confirmed", 1, 1)


def test_off_by_default_and_off_does_nothing(tmp_path):
    assert LearnerConfig().recipes is False
    with Core(tmp_path / "d", durable=False) as core:
        emit = EventBus(core.store).emitter()
        use = RecipeUse.off()
        req = ChaperoneRequest(id="s-1", type="question", question=Q1)
        use.judged(req, _response(req), _verdict("success"), emit)
        assert use.first([req], emit) == [req]
        with core.store.read() as txn:
            assert RECIPES.count(txn) == 0


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


def test_end_to_end_a_learner_reuses_what_it_learned(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in (CURL.name, "vim.changelog.txt", "git.changelog.txt"):
        shutil.copy(CURL.parent / name, corpus / name)  # others: curl names one package
    data = tmp_path / "data"
    with Core(data, durable=False) as core:
        learner = build_learner(
            core,
            LearnerSettings(
                learner=LearnerConfig(interval_s=0, session="rcp", max_iterations=10, recipes=True),
                caps=BudgetCaps(daily_tool_calls=0, daily_tokens=0),
                corpus_dirs=(str(corpus),),
                include_python_docs=False,
            ),
            env={},
        )
        with learner:
            learner.ask(Q1)
            learner.step()
            learner.ask(Q2)
            learner.step()
        events = [e for _, e in read_events(core.store)]
    judged = {e.id: e for e in events if isinstance(e, JudgeEvent)}
    asked = {e.question: e.id for e in events if isinstance(e, QueryEvent)}
    recipe = [e for e in events if isinstance(e, RecipeEvent)]
    assert judged[asked[Q1]].outcome == "success"
    born = [e for e in recipe if e.action == "born"]
    assert born and born[0].request == asked[Q1] and born[0].domain == "curl"
    # The second question, same kind and domain: the recipe is tried first, an event names
    # it, and the judge's verdict on that request is what the recipe records.
    tried = [e for e in recipe if e.action == "tried"]
    assert tried and (tried[0].recipe, tried[0].request) == (born[0].recipe, asked[Q2])
    outcome = judged[asked[Q2]].outcome
    after = [e for e in recipe if e.request == asked[Q2] and e.action != "tried"]
    expected = {"success": "verified", "not_applicable": "inconclusive"}.get(outcome, "failed")
    assert [e.action for e in after] == [expected]
    # The store carries it: the CLI shows it, check reads it, export/import move it.
    out = _cli(data, "recipes", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert rows[0]["id"] == born[0].recipe and rows[0]["trials"] == 1
    show = _cli(data, "recipe", "show", str(born[0].recipe))
    assert show.returncode == 0 and "transitions:" in show.stdout and "revisions:" in show.stdout
    assert "born of a judge-verified success" in show.stdout
    assert _cli(data, "recipe", "show", "99").returncode == 2
    assert _cli(data, "check").returncode == 0
    dump = tmp_path / "dump.jsonl"
    assert _cli(data, "export", "--jsonl", "-o", str(dump)).returncode == 0
    assert _cli(tmp_path / "new", "import", str(dump)).returncode == 0
    again = json.loads(_cli(tmp_path / "new", "recipes", "--json").stdout)
    assert msgspec.json.encode(again) == msgspec.json.encode(rows)


def test_a_scoped_answer_comes_from_the_recipes_source_only(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Quokkas live on Rottnest Island, off Western Australia.\n")
    (corpus / "b.txt").write_text("Quokkas also live on Bald Island, in scrub and woodland.\n")
    answerer = CorpusAnswerer([corpus], include_python_docs=False)
    q = "Where do quokkas live?"
    assert len({s.id for s in answerer.answer(q, k=3, min_score=0.0).sources}) == 2
    scope = next(s.id for s in answerer.sources if s.ref.endswith("b.txt"))
    scoped = answerer.answer(q, k=3, min_score=0.0, scope=scope)
    assert scoped.passages and {s.id for s in scoped.sources} == {scope}
    assert "Bald Island" in scoped.text and "Rottnest" not in scoped.text


def test_a_store_from_before_recipes_reads_as_having_none(tmp_path):
    data = tmp_path / "old"
    with Core(data, durable=False):
        pass
    env = lmdb.open(str(data), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"recipes", txn=txn), delete=True)
    env.close()
    with Store.open(data, readonly=True) as store, store.read() as txn:
        assert not store.has_db("recipes")
        assert layer_counts(txn) == dict.fromkeys(("draft", "confirmed", "advisory", "retired"), 0)
        assert find(txn, "k", "d") is None
        assert check_integrity(store).ok
    out = _cli(data, "recipes", "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == []
    assert _cli(data, "recipe", "show", "0").returncode == 2
