"""The event bus under several threads: flushes from any thread keep every event once,
in publish order per thread, and logged listeners see exactly what was committed;
the learner's state says when a paused loop is really parked."""

from __future__ import annotations

import threading
import time

import pytest

from sentient_core.core import Core
from sentient_core.events import (
    EventBus,
    IterationEvent,
    SessionEvent,
    SkipEvent,
    decode_event,
    read_events,
)
from sentient_core.learning.learner import LearnerConfig
from sentient_core.learning.session import LearnerSettings, build_learner
from sentient_core.store import Store

ROUNDS = 300


def _wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_concurrent_flushes_and_write_in_keep_every_event_once_and_in_order(tmp_path):
    with Store.open(tmp_path / "s", code_dim=8, durable=False) as store:
        bus = EventBus(store)
        logged: list[tuple[int, bytes]] = []
        lock = threading.Lock()

        def on_logged(entries):
            with lock:
                logged.extend(entries)

        bus.subscribe_logged(on_logged)
        learner_emit = bus.emitter(session="learner")
        server_emit = bus.emitter(session="server")
        errors: list[BaseException] = []

        def learner_thread():
            # Like the learner: publish, commit an event with a change, flush.
            try:
                for i in range(ROUNDS):
                    learner_emit.emit(SkipEvent, reason=f"l{i}")
                    if i % 3 == 0:
                        written: list = [0, ()]

                        def also(txn, i=i, written=written):
                            event = learner_emit.make(SkipEvent, reason=f"txn{i}")
                            written[:] = [bus.write_in(txn, [event]), (event,)]

                        store.write(also)
                        bus.confirm(*written)
                    if i % 7 == 0:
                        bus.flush()
                bus.flush()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        def server_thread():
            try:
                for i in range(ROUNDS):
                    server_emit.emit(SkipEvent, reason=f"s{i}")
                    bus.flush()
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=learner_thread), threading.Thread(target=server_thread)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bus.flush()
        assert errors == []
        assert bus.pending == 0
        events = read_events(store)
        reasons = [e.reason for _, e in events]
        assert len(reasons) == len(set(reasons)) == 2 * ROUNDS + len(range(0, ROUNDS, 3))
        for prefix in ("l", "s", "txn"):
            mine = [int(r[len(prefix) :]) for r in reasons if r[: len(prefix)] == prefix]
            assert mine == sorted(mine), prefix
        # Each transaction's event follows the learner's events published before it.
        for i in range(0, ROUNDS, 3):
            assert reasons.index(f"l{i}") < reasons.index(f"txn{i}")
        # The logged listener saw every committed entry exactly once, with its sequence number.
        assert sorted(seq for seq, _ in logged) == [seq for seq, _ in events]
        by_seq = dict(logged)
        for seq, event in events:
            assert decode_event(by_seq[seq], seq) == event


def test_flush_waits_for_an_unconfirmed_write_from_another_thread(tmp_path):
    with Store.open(tmp_path / "s", code_dim=8, durable=False) as store:
        bus = EventBus(store)
        emit = bus.emitter()
        emit.emit(SkipEvent, reason="first")
        written: list = [0, ()]

        def also(txn):
            written[:] = [bus.write_in(txn, []), ()]

        store.write(also)  # committed, not yet confirmed
        flushed: list[int] = []
        other = threading.Thread(target=lambda: flushed.append(bus.flush()))
        other.start()
        other.join()
        assert flushed == [0]  # it would have written "first" a second time
        bus.confirm(*written)
        assert bus.flush() == 0 and bus.pending == 0
        assert [e.reason for _, e in read_events(store)] == ["first"]


def test_a_paused_learner_parks_and_starts_no_iteration(tmp_path):
    with Core(tmp_path / "data") as core:
        settings = LearnerSettings(
            learner=LearnerConfig(interval_s=0.01, session="park", max_iterations=100),
            include_python_docs=False,
        )
        with build_learner(core, settings) as learner:
            seen: list[int] = []
            learner.events.subscribe(
                lambda e: isinstance(e, IterationEvent | SkipEvent) and seen.append(e.iteration)
            )
            assert learner.state == "idle"
            assert learner.start()
            assert _wait_for(lambda: learner.iteration >= 2)
            learner.pause()
            assert learner.state in ("pausing", "paused")
            assert _wait_for(lambda: learner.state == "paused")
            parked_at = learner.iteration
            ended = len(seen)
            time.sleep(0.3)  # 30 intervals: a loop that ignored the pause would run on
            assert learner.iteration == parked_at and len(seen) == ended
            learner.resume()
            assert _wait_for(lambda: learner.iteration > parked_at)
            learner.stop()
            assert learner.state == "idle"
        states = [e.state for _, e in read_events(core.store) if isinstance(e, SessionEvent)]
        assert states[:3] == ["started", "paused", "resumed"] and states[-1] == "ended"


@pytest.mark.parametrize("field", ["smf", "traces"])
def test_iteration_events_carry_the_state_for_charts(tmp_path, field):
    with Core(tmp_path / "data") as core:
        settings = LearnerSettings(
            learner=LearnerConfig(interval_s=0, session="c"), include_python_docs=False
        )
        with build_learner(core, settings) as learner:
            learner.ask("What is a coupled oscillator?")
            learner.run(1)
        its = [e for _, e in read_events(core.store) if isinstance(e, IterationEvent)]
        assert its
        value = getattr(its[-1], field)
        if field == "smf":
            assert len(value) == 16 and "coherence" in value
        else:
            assert value == core.memory.count


def test_an_event_out_of_its_bounds_is_logged_as_an_error_and_the_log_stays_readable(tmp_path):
    from sentient_core.core import Core
    from sentient_core.events import ErrorEvent, EventBus, JudgeEvent, read_events

    with Core(tmp_path / "d", durable=False) as core:
        bus = EventBus(core.store)
        emit = bus.emitter(session="s")
        emit.emit(JudgeEvent, id="r1", outcome="success", basis="no-such-basis", reason="x")
        emit.emit(JudgeEvent, id="r2", outcome="success", basis="deterministic", reason="y")
        bus.flush()
        events = [e for _, e in read_events(core.store)]
    assert isinstance(events[0], ErrorEvent) and events[0].where == "event-log"
    assert "judge" in events[0].error and "no-such-basis" in events[0].error
    assert isinstance(events[1], JudgeEvent) and events[1].id == "r2"
