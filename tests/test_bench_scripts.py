"""The arithmetic of the bench scripts behind the evaluate figures (calibrate_relevance.py, memory_settles.py,
answer_floor.py), on hand-made and small random inputs."""

from __future__ import annotations

import math

import pytest

from bench.calibrate_relevance import joint, margin_curve


def _precision_recall(questions, margins, rel, margin):
    succ = good = 0
    for q, m in zip(questions, margins, strict=True):
        kept = [hit for r, hit in q if r >= rel] if m >= margin else []
        if kept:
            succ += 1
            good += any(kept)
    answerable = sum(any(hit for _, hit in q) for q in questions)
    return (good / succ if succ else float("nan")), good / answerable


# Per question: (relevance, holds an answer) per returned passage; and the margin.
QUESTIONS = [
    [(0.9, True), (0.7, False)],
    [(0.8, False), (0.6, False)],
    [(0.55, True)],
    [(0.95, False), (0.4, True)],
    [(0.7, True)],
    [(0.3, False)],
]
MARGINS = [0.5, 0.05, 0.4, 0.1, 0.25, 0.6]


def test_margin_curve_matches_a_by_hand_count():
    from sentient_core.relevance import RELEVANT

    rows = margin_curve(QUESTIONS, MARGINS)
    for row in rows:
        p, r = _precision_recall(QUESTIONS, MARGINS, RELEVANT, row["margin"])
        assert row["all"]["recall"] == r
        got = row["all"]["precision"]
        assert got == p or (math.isnan(p) and math.isnan(got))
    # Odd and even halves are the questions 1, 3, 5 and 0, 2, 4.
    first = rows[0]
    p, r = _precision_recall(QUESTIONS[1::2], MARGINS[1::2], RELEVANT, 0.0)
    assert (first["odd"]["recall"], first["odd"]["kept"]) == (r, 2)


def test_joint_keeps_only_pairs_reaching_the_target_everywhere_best_recall_first():
    asked = {"a": (QUESTIONS, MARGINS)}
    pairs = joint(asked, 0.9)
    assert pairs, "some pair separates this toy set"
    for pair in pairs:
        for idx in (range(6), range(1, 6, 2), range(0, 6, 2)):
            q = [QUESTIONS[i] for i in idx]
            m = [MARGINS[i] for i in idx]
            p, _ = _precision_recall(q, m, pair["relevance"] - 1e-12, pair["margin"] - 1e-12)
            assert p >= 0.9
    recalls = [p["recall"] for p in pairs]
    assert recalls == sorted(recalls, reverse=True)
    # A margin of 0 keeps question 1 (an irrelevant passage at 0.8): precision 3/4 < 0.9.
    assert all(not (p["margin"] == 0.0 and p["relevance"] <= 0.8) for p in pairs)


def test_answer_floor_equals_brute_force_on_small_instances():
    import itertools
    import random

    from bench.answer_floor import min_chunks

    rng = random.Random(7)
    for _ in range(40):
        n_chunks = rng.randint(1, 7)
        holds = [
            {c for c in range(n_chunks) if rng.random() < 0.3} for _ in range(rng.randint(1, 6))
        ]
        answerable = sum(1 for h in holds if h)
        for answered in range(answerable + 1):
            # Naive: the smallest subset of chunks answering at least `answered` questions.
            want = next(
                size
                for size in range(n_chunks + 1)
                for kept in itertools.combinations(range(n_chunks), size)
                if sum(1 for h in holds if h & set(kept)) >= answered
            )
            assert min_chunks(holds, n_chunks, answered) == want


def test_memory_settles_table_counts_by_hand():
    from bench.memory_settles import table

    rows = [(0.9, 0.5, True), (0.6, 0.1, False), (0.5, 0.4, True), (0.2, 0.9, True)]
    assert table(rows, 0.5, 0.0) == {"settled": 3, "right": 2, "precision": 2 / 3, "recall": 2 / 3}
    assert table(rows, 0.5, 0.3) == {"settled": 2, "right": 2, "precision": 1.0, "recall": 2 / 3}
    assert table(rows, 0.25, 0.0)["settled"] == 3
    empty = table(rows, 2.0, 0.0)
    assert empty["settled"] == 0 and math.isnan(empty["precision"])


def test_reader_ceiling_features_match_naive_loops():
    import random

    from bench.reader_ceiling import bigram_share, proximity

    rng = random.Random(3)
    for _ in range(200):
        q = [rng.choice("abcde") for _ in range(rng.randint(0, 4))]
        p = [rng.choice("abcdefg") for _ in range(rng.randint(0, 12))]
        wanted = {(q[i], q[i + 1]) for i in range(len(q) - 1)}
        have = {(p[i], p[i + 1]) for i in range(len(p) - 1)}
        assert bigram_share(q, p) == (len(wanted & have) / len(wanted) if wanted else 0.0)
        present = set(q) & set(p)
        if len(present) < 2:
            assert proximity(set(q), p) == 0.0
            continue
        # Naive: every window [i, j] holding every present term; the shortest.
        shortest = min(
            j - i + 1
            for i in range(len(p))
            for j in range(i, len(p))
            if present <= set(p[i : j + 1])
        )
        assert proximity(set(q), p) == len(present) / shortest


def test_reader_ceiling_pairwise_fit_learns_the_separating_feature():
    import numpy as np

    from bench.reader_ceiling import FEATURES, fit_pairwise, top_counts

    rng = np.random.default_rng(5)
    questions = []
    for _ in range(30):
        x = rng.normal(size=(6, len(FEATURES)))
        y = np.zeros(6, dtype=bool)
        y[rng.integers(6)] = True
        x[y, 2] += 3.0  # only feature 2 tells the hit from the misses
        questions.append((x, y))
    w = fit_pairwise(questions)
    assert int(np.argmax(np.abs(w))) == 2 and w[2] > 0
    assert top_counts(questions, w)[0] >= 28
    # The answerer's own order: a hand count.
    first = [
        (np.zeros((3, 1)), np.array([True, False, False])),
        (np.zeros((3, 1)), np.array([False, False, True])),
    ]
    assert top_counts(first, None) == (1, 2)
    # A question whose every candidate (or none) holds an answer gives no pair.
    assert not fit_pairwise([(np.ones((2, len(FEATURES))), np.array([True, True]))]).any()


def test_a_server_recall_enters_no_module_twice():
    from bench.recall_path import HANDLE, record, repeated

    paths = {rank: record(rank) for rank in ("scored", "hybrid", "bm25", "cosine")}
    # The façade, memory's recall and the hybrid's MaxScore kernels are on the path;
    # ranking by the learned scorer adds meta-memory's recall.
    assert {
        "sentient_core.core",
        "sentient_core.memory.recall",
        "sentient_kernels.maxscore_hybrid",
    } <= set(paths["hybrid"])
    assert "sentient_kernels.maxscore" in paths["bm25"]
    assert "sentient_core.metamemory.recall" not in paths["hybrid"]
    assert {"sentient_core.metamemory.recall", "sentient_core.relevance"} <= set(paths["scored"])
    for rank, path in paths.items():
        # The query is read (words, code, terms) and its records fetched once.
        assert repeated(path) == {}, (rank, path)
        assert "sentient_core.analysis" in path or rank != "scored"
    # The recorder does see a repeat: without the handle excluded, the store's
    # transaction object is entered once per method called on it.
    assert repeated(paths["scored"], frozenset()).keys() & HANDLE
    # Hits recalled for the first time: their words are read too (the one repeat).
    assert repeated(record("scored", cold=True)) == {"sentient_core.analysis": 2}


def test_relevance_spread_auc_counts_ties_half_and_separates_the_debian_set():
    from bench.relevance_spread import SETS, auc, scored

    assert auc([1.0, 2.0], [0.0]) == 1.0 and auc([0.0], [1.0]) == 0.0
    assert auc([1.0], [1.0]) == 0.5 and math.isnan(auc([], [1.0]))
    qa, corpus = SETS["debian"]
    got = scored(qa, corpus, 3)
    answers, mentions = got["relevance"]
    assert len(answers) >= 50 and len(mentions) >= 50
    # The gate tells answers from mentions on the changelogs (measured 0.896 at k = 5).
    assert auc(answers, mentions) > 0.8
    assert all(0.0 <= f <= 1.0 for side in got["focus"] for f in side)


def test_trace_primes_old_and_new_stores_hold_the_same_columns(tmp_path):
    # bench/trace_primes.py's A/B is fair only if the old-format copy and its old
    # decoder give exactly the columns the new format gives (check_same raises).
    from bench.trace_primes import check_same, make_stores, old_iter_chunks
    from sentient_core.store import traces

    old, new = make_stores(300, tmp_path)
    with old, new:
        check_same(old, new)
        with old.read() as txn:
            assert traces.needs_upgrade(txn)
            assert {r.v for r in traces.iter_range(txn)} == {1}
            assert sum(c.primes.size for c in old_iter_chunks(txn)) == 300 * 8


def test_ten_million_script_builds_opens_and_queries_a_small_store(tmp_path, monkeypatch):
    # bench/ten_million.py at 3,000 traces, in this process: every figure it reports is
    # there and the store it opens holds what it built.
    import bench.ten_million as tm

    monkeypatch.setattr(tm, "BATCH", 1_000)
    built = tm.build(tmp_path, 3_000)
    assert built["rows"] == 3_000 and built["disk_mb"] > 0
    assert len(built["queries"]) == tm.N_QUERIES
    got = tm.measure(tmp_path, built["queries"])
    assert got["rows_open"] == 3_000
    for key in (
        "open_s",
        "open_cpu_s",
        "cosine_ms",
        "bm25_ms",
        "hybrid_ms",
        "scored_ms",
        "peak_mb",
    ):
        assert got[key] > 0, key
    # --reuse: the same store measured again without a build, queries of its own.
    again = tm.reused(tmp_path)
    assert again["rows"] == 3_000 and len(again["queries"]) == tm.N_QUERIES
    assert again["queries"] != built["queries"]
    assert tm.measure(tmp_path, again["queries"])["rows_open"] == 3_000
    assert not (tmp_path / "store" / "codes.q8").exists()
    compact = tm.measure(tmp_path, again["queries"], compact=True)
    # --compact opens with compact codes: the store keeps its int8 copy from then on.
    # (The anonymous-memory figure is a difference within this process: garbage
    # collection between runs can make it negative, so only its presence is checked.)
    assert compact["rows_open"] == 3_000 and compact["cosine_ms"] > 0
    assert (tmp_path / "store" / "codes.q8").stat().st_size == 3_000 * tm.D
    assert math.isfinite(compact["anon_after_cosine_mb"])


def test_compact_rss_script_measures_both_modes_on_a_small_store(tmp_path, monkeypatch):
    # bench/compact_rss.py in this process, on a 3,000-trace store from ten_million.build.
    import bench.compact_rss as cr
    import bench.ten_million as tm

    monkeypatch.setattr(tm, "BATCH", 1_000)
    tm.build(tmp_path, 3_000)
    for mode in ("pread", "map"):
        got = cr.measure(tmp_path, mode, queries=4, seed=1)
        assert got["mode"] == mode and got["median_ms"] > 0
        assert math.isfinite(got["file_growth_mb"])


def test_memory_capped_reads_oom_kills_and_refuses_an_empty_command(tmp_path, capsys):
    # The cgroup itself needs root (bench/memory_capped.py is run by hand); its readings
    # and its argument handling are checked here on plain files.
    import bench.memory_capped as mc

    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert mc._oom_kills(tmp_path, {"events": "memory.oom_control"}) == 2
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 0\noom_kill 0\n")
    assert mc._oom_kills(tmp_path, {"events": "memory.events"}) == 0
    with pytest.raises(SystemExit):
        mc.main(["--limit-gb", "1", "--"])
    assert "give the command" in capsys.readouterr().err
