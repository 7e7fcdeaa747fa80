"""The HTTP API over real loopback HTTP: uvicorn in a thread, a real store, a real learner."""

from __future__ import annotations

import re
import threading
import time

import httpx
import pytest

from sentient_core.events import QuestionEvent, SessionEvent, read_events
from tests.servers.sentient import served


def _sse(
    client: httpx.Client,
    *,
    after: int | None = None,
    last_id: str | None = None,
    want: int,
    until=None,
) -> list[tuple[int, dict]]:
    """Read ``want`` SSE messages (or until ``until(event)``) as ``(id, event)``."""
    import json

    params = {} if after is None else {"after": after}
    headers = {} if last_id is None else {"Last-Event-ID": last_id}
    out: list[tuple[int, dict]] = []
    with client.stream("GET", "/learning/stream", params=params, headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        seq = None
        for line in r.iter_lines():
            if line.startswith("id:"):
                seq = int(line[3:].strip())
            elif line.startswith("data:") and seq is not None:
                event = json.loads(line[5:].strip())
                out.append((seq, event))
                if len(out) >= want or (until is not None and until(event)):
                    break
    return out


def test_health_status_and_metrics(tmp_path):
    with served(tmp_path) as s:
        assert s.anon.get("/health").json()["ok"] is True
        st = s.status()
        assert st["state"] == "idle" and st["mode"] == "serve"
        assert set(st["budget"]["caps"]) == {
            "daily_tokens",
            "daily_tool_calls",
            "per_tick_tokens",
            "per_tick_initiatives",
            "per_initiative_tokens",
        }
        assert {"chaperone", "safety", "judge", "curiosity", "budget_refusals"} <= set(st["gates"])
        # Meta-memory is on by default: its tables are there, empty on a new store.
        assert st["meta_memory"] == {"sources": [], "debts": [], "wisdom": []}
        text = s.client.get("/metrics").text
        assert s.client.get("/metrics").headers["content-type"].startswith("text/plain")
        samples = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
        assert samples and all(
            re.fullmatch(r'sentient_\w+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+', ln)
            for ln in samples
        ), samples[:5]
        assert 'sentient_learner_state{state="idle"} 1.0' in text
        # The reference parser reads every family back.
        from prometheus_client.parser import text_string_to_metric_families

        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["sentient_sessions_started"].type == "counter"
        # The loop's gates, in order, each with what it passed and vetoed this session.
        gate = families["sentient_session_gate"]
        assert len(gate.samples) == 2 * 9
        assert {s.labels["result"] for s in gate.samples} == {"passed", "vetoed"}
        assert len(families) >= 25


def test_concurrent_starts_run_one_loop_and_pause_holds_it(tmp_path):
    with served(tmp_path) as s:
        replies: list[dict] = []
        barrier = threading.Barrier(8)

        def start():
            barrier.wait()
            replies.append(s.client.post("/learning/start").json())

        threads = [threading.Thread(target=start) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(r["ok"] for r in replies) == 1, replies
        assert sum(t.name == "sentient-learner" for t in threading.enumerate()) == 1
        s.wait_for(lambda st: st["iteration"] >= 2, what="two iterations")
        assert s.client.post("/learning/pause").json()["ok"] is True
        parked = s.wait_for(lambda st: st["state"] == "paused", what="paused")
        time.sleep(0.5)  # ten intervals: a loop ignoring the pause would have moved on
        again = s.status()
        assert again["state"] == "paused" and again["iteration"] == parked["iteration"]
        assert s.client.post("/learning/resume").json()["ok"] is True
        assert s.client.post("/learning/resume").json()["ok"] is False  # not paused: no-op
        s.wait_for(lambda st: st["iteration"] > parked["iteration"], what="progress")
        assert s.client.post("/learning/stop").json()["ok"] is True
        assert s.status()["state"] == "idle"
        started = [
            e
            for _, e in read_events(s.host.core.store)
            if isinstance(e, SessionEvent) and e.state == "started"
        ]
        assert len(started) == 1
        # A stopped session is followed by a new one at the next start.
        first = s.status()["session"]
        assert s.client.post("/learning/start").json()["ok"] is True
        assert s.status()["session"] != first
        s.client.post("/learning/stop")


def test_stream_replays_the_log_and_resumes_from_last_event_id(tmp_path):
    with served(tmp_path) as s:
        s.client.post("/learning/start")
        first = _sse(s.client, after=-1, want=15)
        ids = [i for i, _ in first]
        assert ids == list(range(ids[0], ids[0] + len(ids)))  # contiguous, in order
        assert first[0][1]["kind"] == "session" and first[0][1]["state"] == "started"
        # Reconnect as EventSource does: nothing missed, nothing repeated.
        second = _sse(s.client, last_id=str(ids[-1]), want=10)
        assert [i for i, _ in second] == list(range(ids[-1] + 1, ids[-1] + 11))
        s.client.post("/learning/stop")
        logged = {seq: e for seq, e in read_events(s.host.core.store)}
        for seq, event in first + second:
            assert logged[seq].kind == event["kind"] and logged[seq].t == event["t"]
        bad = s.client.get("/learning/stream", headers={"Last-Event-ID": "x"})
        assert bad.status_code == 400


def test_asked_question_is_streamed_and_recall_explains(tmp_path):
    with served(tmp_path) as s:
        start = s.status()["last_seq"]
        reply = s.client.post("/ask", json={"question": "How do honey bees communicate?"}).json()
        assert reply["status"] == "queued"
        s.client.post("/learning/start")
        events = _sse(
            s.client,
            after=start,
            want=500,
            until=lambda e: (
                (e["kind"] == "judge" and "bees" in e["id"] + e["reason"])
                or (e["kind"] == "integrate" and "bees" in e["source"])
            ),
        )
        kinds = [e["kind"] for _, e in events]
        assert kinds[0] == "question" and events[0][1]["question"].startswith("How do honey")
        assert "query" in kinds and "chaperone.response" in kinds
        s.client.post("/learning/stop")
        hits = s.client.get("/recall", params={"q": "waggle dance bees", "k": 3, "explain": 1})
        body = hits.json()
        assert hits.status_code == 200 and body["hits"]
        top = body["hits"][0]
        assert "bees" in top["source"] and "danc" in " ".join(top["explain"]["shared_terms"])
        # Ranked as `cli.py recall`: the learned scorer over the hybrid, this learner's
        # meta-memory; the explanation's cosine is the codes' own.
        from sentient_core.metamemory.recall import ScoredRecall

        want = ScoredRecall(s.host.core.memory, s.host.learner.meta.meta).recall(
            "waggle dance bees", 3
        )
        assert [h["id"] for h in body["hits"]] == [h.record.id for h in want]
        assert top["score"] == pytest.approx(want[0].score)
        assert top["explain"]["cosine"] == pytest.approx(want[0].cosine)
        assert s.client.get("/recall", params={"q": "x", "k": 0}).status_code == 400
        assert s.client.get("/recall", params={"k": 3}).status_code == 400
        questions = [e for _, e in read_events(s.host.core.store) if isinstance(e, QuestionEvent)]
        assert questions[0].status == "queued"


def test_focus_logs_and_ingest_upload(tmp_path):
    with served(tmp_path) as s:
        goal = s.client.post("/focus", json={"topic": "coupled oscillators"}).json()
        assert goal["id"] == "g1" and goal["topic"] == "coupled oscillators"
        assert s.client.post("/focus", json={"topic": "  "}).status_code == 400
        text = "Kuramoto oscillators synchronise when the coupling exceeds a critical value. " * 3
        up = s.client.post("/ingest", params={"name": "../../kuramoto.txt"}, content=text.encode())
        assert up.status_code == 200, up.text
        body = up.json()
        assert body["name"] == "kuramoto.txt" and body["chunks"] >= 1
        saved = s.host.core.data_dir / "incoming" / "uploads" / "kuramoto.txt"
        assert saved.read_text() == text  # inside the incoming dir, never where the name pointed
        again = s.client.post("/ingest", params={"name": "kuramoto.txt"}, content=text.encode())
        assert again.json()["unchanged"] == 1 and again.json()["chunks"] == 0
        broken = s.client.post(
            "/ingest", params={"name": "broken.pdf"}, content=b"%PDF-1.4 garbage"
        )
        assert broken.status_code == 422 and "broken.pdf" in broken.json()["skipped"][0]
        assert s.client.post("/ingest", params={"name": "x.exe"}, content=b"MZ").status_code == 415
        assert s.client.post("/ingest", content=b"abc").status_code == 400
        s.client.post("/learning/start")
        s.wait_for(lambda st: st["stats"]["queries"] >= 1, what="a query")
        s.client.post("/learning/stop")
        logs = s.client.get("/learning/logs", params={"count": 5}).json()["entries"]
        assert 1 <= len(logs) <= 5 and {"request", "response"} & {e["kind"] for e in logs}
        assert s.client.get("/learning/logs", params={"count": "0"}).status_code == 400


BAD_BODIES = [
    ("/ask", {"question": "ok?", "extra": 1}, 400, "extra"),
    ("/ask", {"question": ""}, 400, "question"),
    ("/ask", {"question": "x" * 1001}, 400, "question"),
    ("/ask", {}, 400, "question"),
    ("/focus", {"topic": 3}, 400, "topic"),
    ("/learning/jump", None, 404, "not found"),
]


def test_bad_bodies_are_clear_4xx(tmp_path):
    with served(tmp_path) as s:
        for path, body, status, needle in BAD_BODIES:
            r = s.client.post(path, json=body) if body is not None else s.client.post(path)
            assert r.status_code == status, (path, body)
            assert needle in (r.json()["error"] + r.json()["detail"]), (path, r.json())
        r = s.client.post(
            "/ask",
            content=b"question=x",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 415
        assert s.client.get("/learning/start").status_code == 405


def test_status_carries_the_meta_memory_tables_the_panel_shows(tmp_path):
    import time as _time

    from sentient_core.metamemory.sources import WEIGHTS, SourceWeight

    with served(tmp_path) as s:
        store = s.host.core.store
        now = _time.time()
        rows = [("python", "llm:127.0.0.1/m", 0.42), ("python", "file:/c/a.txt", 1.1)]

        def put(txn) -> None:
            for domain, source, weight in rows:
                record = SourceWeight(
                    domain=domain, source=source, weight=weight, punished=1, updated=now
                )
                WEIGHTS.put(txn, record)

        store.write(put)
        got = s.status()["meta_memory"]["sources"]
    # Lowest weight first, exactly the stored values.
    assert [(r["domain"], r["source"], r["weight"]) for r in got] == sorted(
        rows, key=lambda r: r[2]
    )
    assert all(r["punished"] == 1 and r["rewarded"] == 0 for r in got)
