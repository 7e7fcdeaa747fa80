"""Which passages of an answer are stored: the best must be relevant; then its lesser
passages are kept from LESSER_SHARE of the threshold up, best first, each with its source."""

from __future__ import annotations

from sentient_core.learning.passages import LESSER_SHARE, select
from sentient_core.relevance import relevance
from sentient_core.vocab import Passage, Source

Q = "How deep do wombat burrows reach?"


def _p(text, name):
    return Passage(text=text, source=Source("local", f"/c/{name}.txt"))


def test_lesser_passages_of_a_relevant_answer_are_kept_from_the_share_up():
    full = _p("Wombat burrows reach two metres deep.", "full")
    half = _p("Wombat burrows are long.", "half")
    quarter = _p("A wombat sleeps by day.", "quarter")
    rel = {p.source.ref: relevance(Q, p.text) for p in (full, half, quarter)}
    assert rel == {"/c/full.txt": 1.0, "/c/half.txt": 0.5, "/c/quarter.txt": 0.25}
    threshold = 0.8
    assert LESSER_SHARE * threshold <= 0.5 < threshold  # half: below the bar, above the share
    got = select(Q, [quarter, half, full], stats=None, threshold=threshold)
    assert got.relevance == 1.0
    assert [p.source.ref for p in got.keep] == ["/c/full.txt", "/c/half.txt"]  # best first


def test_an_answer_whose_best_passage_falls_short_stores_nothing():
    half = _p("Wombat burrows are long.", "half")
    got = select(Q, [half], stats=None, threshold=0.6)
    assert got.keep == () and got.relevance == 0.5
    # At the bar exactly it is relevant, and so is stored.
    assert select(Q, [half], stats=None, threshold=0.5).keep == (half,)


def test_an_answer_to_no_question_is_kept_whole():
    a, b = _p("one", "a"), _p("  ", "blank")
    assert select("", [a, b], stats=None, threshold=0.9).keep == (a,)
