"""Integration over whole batches stores exactly what chunk-by-chunk integration stores.

The batch path (one kernel pass for codes, excitations, keywords and terms; one
kernel call observing the batch; digests and records by column; one transaction
per batch with the file records) against the per-chunk reference: the same
Integrator given an encoder that only encodes (no ``analyse_many``, no
``keywords_many``), so each chunk is keyworded in Python, observed by
``process_encoded`` + ``tick(1)`` and stored through ``NewTrace`` items. With
the same clock, every sub-database of the two stores is byte-identical and the
observers end in the same state.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentient_core.encoder import get_encoder
from sentient_core.integrate import Integrator
from sentient_core.integrate import ledger as ledger_module
from sentient_core.memory import HolographicMemory
from sentient_core.observer import Observer
from sentient_core.store import DB_NAMES, Store, check_integrity
from tests.test_integrate import _prose

NOW = 1_800_000_000.0


class ChunkByChunk:
    """The token encoder without its batch analysis: the per-chunk reference path."""

    def __init__(self) -> None:
        self._enc = get_encoder("token")

    def __getattr__(self, name: str):
        if name in ("analyse_many", "keywords_many"):
            raise AttributeError(name)
        return getattr(self._enc, name)


def write_corpus(folder, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.txt").write_text(_prose(seed, 9000) + "\n\n" + _prose(seed, 9000))  # repeats
    (folder / "b.md").write_text("# Tides\n\n" + _prose(seed + 1, 5000) + "\n\nSetext\n======\n")
    (folder / "c.json").write_text(json.dumps({"title": "json", "body": _prose(seed + 2, 4000)}))
    (folder / "d.html").write_text(
        f"<html><body><main><p>{_prose(seed + 3, 3000)}</p><pre>x = 1\n y</pre>"
        f"<p>naïve café 日本語 😀 42 42 42</p></main></body></html>"
    )
    (folder / "e.txt").write_text("the and of\n\n" + "CVE-2024-2004 7.88.1 " * 40)


def dump(store: Store) -> dict[str, list[tuple[bytes, bytes]]]:
    out = {}
    with store.read() as txn:
        for name in DB_NAMES:
            if name == "meta" or not store.has_db(name):
                continue
            cur = txn.raw.cursor(db=txn.db(name))
            out[name] = [(bytes(k), bytes(v)) for k, v in cur]
    return out


def ingest(path, folders, *, batch: int, reference: bool, near=None):
    store = Store.open(path, code_dim=256)
    memory = HolographicMemory(store, clock=lambda: NOW)
    encoder = ChunkByChunk() if reference else get_encoder("token")
    observer = Observer(seed=3, encoder=encoder)  # type: ignore[arg-type]
    observer.process_text("input queued before the run")
    integ = Integrator(memory, observer, batch=batch, near=near, tags=("t",))
    summaries = [integ.ingest([f]) for f in folders]
    return store, memory, observer, summaries


@pytest.mark.parametrize(("batch", "near"), [(7, None), (512, None), (5, 0.95)])
def test_batch_path_stores_what_the_per_chunk_path_stores(tmp_path, monkeypatch, batch, near):
    monkeypatch.setattr(ledger_module.time, "time", lambda: NOW)
    write_corpus(tmp_path / "in", 1)
    again = tmp_path / "again"
    write_corpus(again, 1)  # the same texts from other files: duplicates by content
    (again / "a.txt").write_text(_prose(9, 6000))  # and a changed file
    runs = []
    for reference in (True, False):
        store, memory, observer, summaries = ingest(
            tmp_path / f"store-{reference}",
            [tmp_path / "in", again, tmp_path / "in"],
            batch=batch,
            reference=reference,
            near=near,
        )
        runs.append((dump(store), observer.to_record(), summaries, memory))
        assert check_integrity(store).ok
        store.close()
    (ref_db, ref_obs, ref_sum, _), (db, obs, summ, _) = runs
    assert ref_db.keys() == db.keys()
    for name in ref_db:
        assert db[name] == ref_db[name], name
    assert obs == ref_obs
    for a, b in zip(ref_sum, summ, strict=True):
        assert (a.chunks, a.duplicates, a.ids, a.known, a.unchanged, a.files) == (
            b.chunks,
            b.duplicates,
            b.ids,
            b.known,
            b.unchanged,
            b.files,
        )
    assert summ[0].chunks > 10 and summ[1].duplicates > 0 and summ[2].unchanged == 5


def test_one_transaction_per_batch_with_the_file_records(tmp_path):
    write_corpus(tmp_path / "in", 2)
    with Store.open(tmp_path / "s", code_dim=256) as store:
        memory = HolographicMemory(store)
        integ = Integrator(memory, Observer(seed=1), batch=4096)
        commits = []
        real = store.write

        def counted(fn):
            commits.append(fn)
            return real(fn)

        store.write = counted  # type: ignore[method-assign]
        summary = integ.ingest([tmp_path / "in"])
        # Every file's chunks fit one batch: its commit also writes the five file records.
        assert summary.files == 5 and summary.commits == 1 and len(commits) == 1
        with store.read() as txn:
            assert txn.entries("files") == 5
        again = integ.ingest([tmp_path / "in"])  # idempotent: nothing new, no transaction
        assert again.unchanged == 5 and again.chunks == 0 and len(commits) == 1


def test_prepared_texts_commit_the_same_as_ingested_texts(tmp_path):
    texts = [_prose(5, 7000), "", _prose(6, 2500)]
    stores = []
    for reference in (True, False):
        store = Store.open(tmp_path / f"s{reference}", code_dim=256)
        memory = HolographicMemory(store, clock=lambda: NOW)
        encoder = ChunkByChunk() if reference else get_encoder("token")
        integ = Integrator(memory, Observer(seed=4, encoder=encoder))  # type: ignore[arg-type]
        prepared = integ.prepare_texts(texts, source="notes", tags=("x",))
        assert (prepared.prepared is None) == reference
        summary = memory.write(lambda tx, p=prepared, i=integ: i.commit_texts(tx, p))
        assert summary.chunks == len(prepared.items) > 2
        if not reference:
            assert prepared.prepared is not None
            for i, (item, rec) in enumerate(
                zip(prepared.items, prepared.prepared.records, strict=True)
            ):
                assert (item.text, item.topic, item.keywords, item.smf, item.primes) == (
                    rec.text,
                    rec.topic,
                    rec.keywords,
                    rec.smf,
                    rec.primes,
                )
                assert np.array_equal(item.code, prepared.prepared.codes[i])
        stores.append(dump(store))
        store.close()
    assert stores[0] == stores[1]


def columns(n: int = 2, **change):
    from sentient_core.memory.columns import TraceColumns
    from sentient_core.memory.terms import count
    from sentient_core.store import content

    texts = [f"text number {i}" for i in range(n)]
    cols = dict(
        texts=texts,
        codes=np.ones((n, 256), np.float32),
        smf=np.eye(16)[:n],
        primes=[(2, 3)] * n,
        sources=["s"] * n,
        tags=[("t",)] * n,
        topics=["topic"] * n,
        keywords=[("text", "number")] * n,
        kind="observed",
        importance=0.5,
        terms=count(texts),
        digests=content.digests(texts),
    )
    cols.update(change)
    return TraceColumns(**cols)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"kind": ""}, "kind"),
        ({"importance": 1.5}, "importance"),
        ({"smf": np.full((2, 16), np.nan)}, "smf"),
        ({"codes": np.ones((2, 8), np.float32)}, "codes"),
        ({"codes": np.full((2, 256), np.inf, np.float32)}, "non-finite"),
        ({"primes": [(2, 1), (3,)]}, "primes"),
        ({"primes": [(2, 70_000), (3,)]}, "primes"),
        ({"keywords": [("a", 1), ()]}, "keywords"),
        ({"tags": [["a"], ()]}, "tags"),
        ({"topics": ["a"]}, "topics"),
        ({"sources": ["a", b"b"]}, "sources"),
    ],
)
def test_columns_are_checked_before_anything_is_stored(tmp_path, change, match):
    with Store.open(tmp_path / "s", code_dim=256) as store:
        memory = HolographicMemory(store)
        memory.prepare(columns())  # the unchanged columns pass
        with pytest.raises((ValueError, TypeError), match=match):
            memory.prepare(columns(**change))
        assert memory.count == 0


def test_checked_columns_store_records_that_decode(tmp_path):
    with Store.open(tmp_path / "s", code_dim=256) as store:
        memory = HolographicMemory(store)
        prepared = memory.prepare(columns(3))
        assert prepared.checked
        stored = memory.write(lambda tx: tx.store_batch(prepared))
        assert [memory.get(r.id) for r in stored] == stored
        assert check_integrity(store).ok
