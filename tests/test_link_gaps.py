"""Link gaps: a densely linked subject with one unanswered neighbour (learning/link_gaps.py),
through real LMDB stores, and fired by the real offline learner."""

from __future__ import annotations

from sentient_core.core import Core
from sentient_core.evaluation.free import learner_settings
from sentient_core.learning.curiosity import Curiosity, CuriosityConfig
from sentient_core.learning.link_gaps import LinkGaps, find_link_gaps
from sentient_core.learning.questions import QuestionBook
from sentient_core.learning.session import build_learner
from sentient_core.vocab import GAP_PRIORITY, GAP_TYPES

TEXTS = {
    "hub": "Tide tables list high and low water for each harbour day by day.",
    "moon": "The moon's gravity raises the ocean bulge that makes the tides.",
    "sun": "The sun adds a smaller tidal pull; aligned with the moon it makes spring tides.",
    "neap": "Neap tides come at quarter moons, when sun and moon pull at right angles.",
    "surge": "A storm surge lifts the sea above the predicted tide when strong winds blow.",
}


def _graph(core: Core) -> dict[str, int]:
    ids = {k: core.memory.store(t, kind="learned", topic=k).id for k, t in TEXTS.items()}
    for k in ("moon", "sun", "neap", "surge"):
        core.memory.link(ids["hub"], ids[k], weight=0.9)
    return ids


def _answer(book: QuestionBook, question: str, trace_id: int) -> None:
    book.register(question, origin="curiosity", gap_type="smf_imbalance")
    book.update(question, status="answered", answered_by=trace_id)


def test_one_unanswered_neighbour_of_a_dense_subject_is_the_gap(tmp_path):
    with Core(tmp_path / "d") as core:
        ids = _graph(core)
        book = QuestionBook(core.store)
        _answer(book, "What is known about the moon?", ids["moon"])
        _answer(book, "What is known about the sun?", ids["sun"])
        # Two of four neighbours unanswered: not "all but one".
        assert find_link_gaps(core.memory, book) == []
        _answer(book, "What is known about neap tides?", ids["neap"])
        gaps = find_link_gaps(core.memory, book)
        assert [(g.subject, g.neighbour, g.degree, g.answered) for g in gaps] == [
            (ids["hub"], ids["surge"], 4, 3)
        ]
        assert gaps[0].phrases[0] == "surge"  # its stored topic first, then salient phrases
        # Densely linked means at least three neighbours.
        assert find_link_gaps(core.memory, book, min_degree=5) == []
        # Answering the last one closes the gap.
        _answer(book, "What is known about storm surges?", ids["surge"])
        assert find_link_gaps(core.memory, book) == []


def test_a_link_gap_becomes_a_link_question_with_its_priority(tmp_path):
    with Core(tmp_path / "d") as core:
        ids = _graph(core)
        book = QuestionBook(core.store)
        for k in ("moon", "sun", "neap"):
            _answer(book, f"What is known about {k} tides?", ids[k])
        # As the learner builds it: memory never settles a question without asking.
        cur = Curiosity(
            core.observer,
            core.memory,
            CuriosityConfig(memory_settles="none"),
            book=book,
            links=LinkGaps(core.memory),
        )
        signal = cur.detect()
        link = [g for g in signal.gaps if g.type == "link"]
        assert [g.question for g in link] == ["What is known about surge?"]
        assert link[0].priority == GAP_PRIORITY["link"] == 0.55
        rec = book.get("What is known about surge?")
        assert rec is not None and rec.gap_type == "link"
        assert f"trace {ids['hub']} has 4 linked neighbours, 3 answered" in rec.reason
        assert cur.fired["link"] == 1
        # Nothing changed in memory or the answered set: no second scan, no second question.
        assert cur.links is not None and cur.links.questions(book, lambda q: True) == []


def test_a_covered_or_unusable_subject_raises_no_question(tmp_path):
    with Core(tmp_path / "d") as core:
        ids = _graph(core)
        book = QuestionBook(core.store)
        for k in ("moon", "sun", "neap"):
            _answer(book, f"What is known about {k} tides?", ids[k])
        # The neighbour's subject is a question the book holds (waiting): covered.
        book.register("What is known about surge?", origin="user", gap_type="question")
        assert LinkGaps(core.memory).questions(book, lambda q: True) == []
    with Core(tmp_path / "e") as core:
        ids = _graph(core)
        book = QuestionBook(core.store)
        for k in ("moon", "sun", "neap"):
            _answer(book, f"What is known about {k} tides?", ids[k])
        # No candidate the sources define: the most salient phrase is asked.
        ((gap, question),) = LinkGaps(core.memory).questions(book, lambda q: False)
        assert question == f"What is known about {gap.salient}?" and gap.salient


def test_link_is_a_gap_type_in_rank_order():
    assert GAP_TYPES.index("debt") < GAP_TYPES.index("link") < GAP_TYPES.index("smf_imbalance")


def test_the_offline_learner_fires_link_gaps(tmp_path):
    """A real 40-iteration offline run: reflection links what it learned, and curiosity
    raises link questions from that graph (asked like any other question)."""
    with Core(tmp_path / "d", durable=False) as core:
        with build_learner(core, learner_settings("links", (), True, 40)) as learner:
            learner.run(40)
            fired = learner.curiosity.fired["link"]
            found = learner.curiosity.links.found
        link_qs = [r for r in QuestionBook(core.store).records() if r.gap_type == "link"]
    assert fired >= 1 and found >= fired
    assert link_qs and all(r.origin == "curiosity" for r in link_qs)
    # Each was handed to the chaperone and judged (not left queued).
    assert any(r.status in ("answered", "waiting") for r in link_qs)
