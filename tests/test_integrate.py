"""End-to-end memory integration: real files (incl. PDFs) → real LMDB store → recall, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentient_core.cli import main
from sentient_core.core import Core
from sentient_core.ingest import chunk_text
from sentient_core.integrate import STAGES, Integrator
from sentient_core.store import check_integrity
from tests.pdfgen import encrypted_pdf, text_pdf

PDF_FACT = "The quokka photosynthesis ledger reconciles seventeen turquoise spreadsheets."
HTML_FACT = "Marmalade tectonics explain why lighthouses migrate northward every winter."


def _prose(seed: int, n_chars: int) -> str:
    from sentient_core.corpus import sentences

    rng = np.random.default_rng(seed)
    pool = sentences()
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < n_chars:
        out.append(pool[int(rng.integers(len(pool)))])
    return " ".join(out)


@pytest.fixture
def corpus(tmp_path):
    good = tmp_path / "in"
    (good / "sub").mkdir(parents=True)
    (good / "a.txt").write_text(_prose(1, 9000))
    (good / "b.md").write_text("# Notes\n\n" + _prose(2, 3000))
    (good / "sub" / "c.json").write_text(json.dumps({"title": "json doc", "body": _prose(3, 2500)}))
    (good / "sub" / "d.html").write_text(
        f"<html><body><p>{HTML_FACT}</p><script>var x = 1;</script><p>{_prose(4, 1500)}</p></body></html>"
    )
    (good / "e.pdf").write_bytes(text_pdf([[PDF_FACT], ["Second page of the ledger document."]]))
    bad = {
        "corrupt.pdf": b"%PDF-1.4\n1 0 obj << /Type /Catalog",
        "locked.pdf": encrypted_pdf(text_pdf([["secret ledger"]]), "pw"),
        "empty.txt": b"",
        "binary.txt": b"\x00\x01\x02binary\x00" * 50,
        "notjson.json": b"this is not json at all",
        "fake.pdf": b"plain text pretending to be a pdf",
    }
    for name, data in bad.items():
        (good / name).write_bytes(data)
    return good, sorted(bad)


def test_ingest_folder_stores_good_files_and_skips_bad_ones_by_name(tmp_path, corpus):
    folder, bad_names = corpus
    with Core(tmp_path / "store") as core:
        summary = Integrator(core.memory, core.observer, batch=7).ingest([folder])
        assert summary.files == 5
        assert sorted(p.split("/")[-1] for p in (s.path for s in summary.skipped)) == bad_names
        assert all(s.reason for s in summary.skipped)
        sources = {r.source.split("/")[-1] for r in core.memory.recent(10_000)}
        assert sources == {"a.txt", "b.md", "c.json", "d.html", "e.pdf"}
        assert summary.chunks == core.memory.count
        assert summary.commits >= 2  # batch=7 forces several commits
        # one observer tick per chunk, and the oscillators really moved
        assert core.observer.ticks == summary.chunks
        assert not np.allclose(core.observer.smf, np.eye(16)[0])
        for stage in STAGES:
            assert getattr(summary.stages, stage) > 0, stage
    with Core(tmp_path / "store", readonly=True) as core:
        assert check_integrity(core.store).ok


def test_chunks_follow_the_chunking_rule(tmp_path):
    text = _prose(7, 12_000)
    (tmp_path / "long.txt").write_text(text)
    with Core(tmp_path / "store") as core:
        Integrator(core.memory, core.observer).ingest([tmp_path / "long.txt"])
        stored = [r.text for r in sorted(core.memory.recent(1000), key=lambda r: r.id)]
    assert stored == [c.text for c in chunk_text(text)]


def test_recall_finds_facts_from_pdf_and_html(tmp_path, corpus):
    folder, _ = corpus
    with Core(tmp_path / "store") as core:
        Integrator(core.memory, core.observer).ingest([folder])
        top = core.memory.recall("quokka photosynthesis ledger turquoise spreadsheets", k=3)
        assert top[0].record.source.endswith("e.pdf")
        top = core.memory.recall("marmalade tectonics lighthouses migrate", k=3)
        assert top[0].record.source.endswith("d.html")
        first = [(h.record.id, h.score) for h in core.memory.recall("ledger", k=5, touch=False)]
    with Core(tmp_path / "store", readonly=True) as core:
        again = [(h.record.id, h.score) for h in core.memory.recall("ledger", k=5, touch=False)]
    assert again == first


def test_streamed_file_gives_the_same_traces_as_whole(tmp_path):
    text = _prose(9, 30_000)
    (tmp_path / "big.txt").write_text(text)
    results = []
    for threshold in (1 << 30, 1000):  # whole, then streamed
        with Core(tmp_path / f"store{threshold}") as core:
            Integrator(core.memory, core.observer, stream_threshold=threshold, batch=4).ingest(
                [tmp_path / "big.txt"]
            )
            results.append([r.text for r in sorted(core.memory.recent(1000), key=lambda r: r.id)])
    assert results[0] == results[1] and len(results[0]) > 10


def test_streamed_file_failing_part_way_leaves_nothing_recallable(tmp_path, monkeypatch):
    import sentient_core.integrate.pipeline as integrate

    text = _prose(11, 40_000)
    (tmp_path / "flaky.txt").write_text(text)
    (tmp_path / "fine.txt").write_text(_prose(12, 600))  # below the threshold: read whole

    def flaky_iter_text(path, **kw):
        yield text[:25_000]
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(integrate, "iter_text", flaky_iter_text)
    with Core(tmp_path / "store") as core:
        summary = Integrator(core.memory, core.observer, stream_threshold=1000, batch=3).ingest(
            [tmp_path / "flaky.txt", tmp_path / "fine.txt"]
        )
        assert [s.path.split("/")[-1] for s in summary.skipped] == ["flaky.txt"]
        assert "failed part-way" in summary.skipped[0].reason
        active = core.memory.recent(1000)
        assert active and all(r.source.endswith("fine.txt") for r in active)
        assert summary.chunks == len(active)
        hits = core.memory.recall(text[100:300], k=50, touch=False)
        assert all(h.record.source.endswith("fine.txt") for h in hits)


def test_cli_ingest_recall_json(tmp_path, corpus, capsys):
    folder, bad_names = corpus
    store = str(tmp_path / "store")
    assert main(["ingest", str(folder), "--data-dir", store, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 5 and len(summary["skipped"]) == len(bad_names)
    assert summary["chunks_per_s"] > 0
    assert (
        main(["recall", "quokka photosynthesis ledger", "-k", "2", "--json", "--data-dir", store])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in rows] == [1, 2]
    assert rows[0]["source"].endswith("e.pdf") and "quokka" in rows[0]["snippet"].lower()
    assert rows[0]["score"] >= rows[1]["score"]


def test_cli_ingest_text_summary_names_bad_files(tmp_path, corpus, capsys):
    folder, bad_names = corpus
    assert main(["--data-dir", str(tmp_path / "s"), "ingest", str(folder)]) == 0
    captured = capsys.readouterr()
    assert "ingested 5 file(s)" in captured.out and "chunks/s" in captured.out
    for name in bad_names:
        assert f"{name}:" in captured.err


def test_cli_recall_without_a_store_is_a_clear_error(tmp_path, capsys):
    assert main(["recall", "anything", "--no-touch", "--data-dir", str(tmp_path / "none")]) == 2
    assert "error:" in capsys.readouterr().err


def test_cli_profile_on_a_generated_corpus(capsys):
    assert main(["profile", "--size-mb", "0.3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks"] > 50 and report["files"] >= 2
    assert set(STAGES) <= set(report["stages"])
    # The caller's stages and its waits for the commit thread fit in the wall time;
    # what ran on the commit thread (keywords, code, commit) overlaps them.
    stages = report["stages"]
    caller = sum(stages[k] for k in STAGES) - stages["offloaded"] + stages["wait"]
    assert caller <= report["seconds"] + 1e-6
    assert stages["wait"] >= 0 and stages["commit"] > 0
    assert stages["offloaded"] >= stages["keywords"] + stages["code"] + stages["commit"]
    # The floor: raw py-lmdb puts of every entry integration left in the store, in as
    # many commits (at least one per chunk's trace record, code row and digest).
    floor = report["floor"]
    assert floor["items"] >= 3 * report["chunks"] and floor["bytes"] > report["bytes"]
    assert floor["commits"] == report["commits"] and floor["seconds"] > 0
    assert floor["ratio"] == pytest.approx(floor["seconds"] / report["seconds"])


def test_cli_profile_table(tmp_path, corpus, capsys):
    folder, _ = corpus
    assert main(["profile", str(folder)]) == 0
    out = capsys.readouterr().out
    for stage in (*STAGES, "other", "total", "floor"):
        assert any(line.startswith(stage) for line in out.splitlines()), stage
