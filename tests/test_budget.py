"""The autonomy budget: caps stop work exactly where they should, commit rules,
UTC-day rollover under an injected clock, persistence in a real LMDB store,
environment overrides and the kill switch."""

from __future__ import annotations

import calendar
import threading
import time

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sentient_core.autonomy.budget import (
    BUDGET_DB,
    CAP_ENV,
    CAP_NAMES,
    DAY_SPEND,
    Budget,
    BudgetCaps,
    BudgetConfigError,
    DaySpend,
    autonomy_enabled,
    day_key,
    utc_day,
)
from sentient_core.store import SchemaVersionError, Store

NOON = float(calendar.timegm((2024, 3, 9, 12, 0, 0)))  # 2024-03-09T12:00:00Z


class Clock:
    """A settable clock."""

    def __init__(self, t: float = NOON) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def caps(**kw: int) -> BudgetCaps:
    """Caps with everything unlimited except what is given."""
    return BudgetCaps(**{**dict.fromkeys(CAP_NAMES, 0), **kw})


def budget(store=None, env=None, clock=None, **kw: int) -> Budget:
    return Budget(store, caps(**kw), clock=clock or Clock(), env={} if env is None else env)


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "store", code_dim=8)
    yield s
    s.close()


# -- caps ------------------------------------------------------------------------------------


def test_defaults_are_the_spec_values():
    c = BudgetCaps()
    assert (
        c.daily_tokens,
        c.daily_tool_calls,
        c.per_tick_tokens,
        c.per_tick_initiatives,
        c.per_initiative_tokens,
    ) == (20000, 50, 16000, 8, 2000)
    assert BudgetCaps.from_env({}) == c
    assert Budget(None, env={}).caps == c


@pytest.mark.parametrize("with_store", [False, True])
def test_daily_tokens_refuses_the_fourth_300_token_initiative(with_store, store):
    b = budget(store if with_store else None, daily_tokens=1000)
    b.begin_tick()
    for i in range(3):
        d = b.check_initiative(300)
        assert d.allowed, (i, d)
        b.commit(300, 1, "done")
    d = b.check_initiative(300)
    assert not d.allowed
    assert d.cap == "daily_tokens"
    assert "900 of 1000" in d.reason
    # A smaller initiative still fits under the cap.
    assert b.check_initiative(100).allowed
    b.commit(100, 1, "done")
    assert b.check_initiative(0).cap == "daily_tokens"  # used up: even 0 tokens is refused
    assert b.check_tick().cap == "daily_tokens"
    assert b.today().tokens == 1000
    assert b.remaining()["daily_tokens"] == 0


def test_per_tick_initiatives_refuses_the_third_then_next_tick_allows():
    b = budget(per_tick_initiatives=2)
    b.begin_tick()
    for _ in range(2):
        assert b.check_initiative(10).allowed
        b.commit(10, 1, "done")
    d = b.check_initiative(10)
    assert (d.allowed, d.cap) == (False, "per_tick_initiatives")
    assert b.check_tick().allowed  # per-tick caps do not stop the next tick
    b.begin_tick()
    assert b.check_initiative(10).allowed
    assert b.refusals["per_tick_initiatives"] == 1


def test_failed_initiative_uses_a_tick_slot_skipped_does_not():
    b = budget(per_tick_initiatives=2)
    b.begin_tick()
    b.commit(0, 0, "skipped")
    b.commit(0, 0, "skipped")
    assert b.check_initiative(10).allowed
    b.commit(0, 0, "failed")
    assert b.check_initiative(10).allowed
    b.commit(0, 1, "failed")
    assert b.check_initiative(10).cap == "per_tick_initiatives"


def test_per_tick_tokens_then_new_tick():
    b = budget(per_tick_tokens=1000)
    b.begin_tick()
    for _ in range(2):
        assert b.check_initiative(400).allowed
        b.commit(400, 1, "done")
    d = b.check_initiative(400)
    assert (d.allowed, d.cap) == (False, "per_tick_tokens")
    assert b.check_initiative(200).allowed
    b.begin_tick()
    assert b.check_initiative(400).allowed
    assert b.remaining()["per_tick_tokens"] == 1000


def test_per_initiative_tokens_is_inclusive():
    b = budget(per_initiative_tokens=2000)
    b.begin_tick()
    assert b.check_initiative(2000).allowed
    d = b.check_initiative(2001)
    assert (d.allowed, d.cap) == (False, "per_initiative_tokens")
    assert "2001" in d.reason and "2000" in d.reason


def test_daily_tool_calls():
    b = budget(daily_tool_calls=3)
    b.begin_tick()
    for _ in range(2):
        assert b.check_initiative(0).allowed
        b.commit(0, 1, "done")
    assert b.check_initiative(0, tool_calls=2).cap == "daily_tool_calls"
    assert b.check_initiative(0, tool_calls=1).allowed
    b.commit(0, 1, "done")
    assert b.check_initiative(0, tool_calls=0).cap == "daily_tool_calls"
    assert b.check_tick().cap == "daily_tool_calls"


# For each cap, a value that the probe below violates; 0 (unlimited) never is.
VIOLATING = {
    "daily_tokens": 100,
    "daily_tool_calls": 1,
    "per_tick_tokens": 100,
    "per_tick_initiatives": 1,
    "per_initiative_tokens": 100,
}


@pytest.mark.parametrize("first", range(len(CAP_NAMES)))
def test_caps_are_checked_in_the_documented_order(first):
    """Every cap from ``first`` on is violated, the ones before are unlimited."""
    b = budget(**{n: VIOLATING[n] if i >= first else 0 for i, n in enumerate(CAP_NAMES)})
    b.begin_tick()
    b.commit(50, 1, "done")  # 50 tokens, 1 call, 1 initiative this tick and today
    d = b.check_initiative(200, tool_calls=1)
    assert not d.allowed
    assert d.cap == CAP_NAMES[first]
    assert b.refusals[CAP_NAMES[first]] == 1


def test_zero_means_unlimited():
    b = budget()  # every cap 0
    b.begin_tick()
    for _ in range(100):
        assert b.check_initiative(10**9, tool_calls=1000).allowed
        b.commit(10**9, 1000, "done")
    assert b.check_tick().allowed
    assert b.remaining() == dict.fromkeys(CAP_NAMES, None)


def test_remaining():
    b = budget(
        daily_tokens=1000,
        daily_tool_calls=10,
        per_tick_tokens=500,
        per_tick_initiatives=4,
        per_initiative_tokens=300,
    )
    b.begin_tick()
    b.commit(120, 2, "done")
    assert b.remaining() == {
        "daily_tokens": 880,
        "daily_tool_calls": 8,
        "per_tick_tokens": 380,
        "per_tick_initiatives": 3,
        "per_initiative_tokens": 300,
    }
    b.commit(2000, 0, "done")  # actual spend above the estimate is still recorded
    assert b.remaining()["daily_tokens"] == 0
    report = msgspec.json.decode(msgspec.json.encode(b.report()))
    assert report["today"]["tokens"] == 2120
    assert report["caps"]["daily_tokens"] == 1000
    assert report["enabled"] is True


# -- commit rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "tokens", "calls", "want_tokens", "want_calls"),
    [
        ("done", 300, 1, 300, 1),
        ("done", 0, 0, 0, 0),
        ("failed", 300, 1, 300, 1),
        ("failed", 0, 1, 0, 1),  # a tool call was spent
        ("failed", 250, 0, 250, 0),
        ("failed", 0, 0, 0, 0),
        ("skipped", 300, 1, 0, 0),  # never committed when skipped
        ("skipped", 0, 0, 0, 0),
    ],
)
def test_commit_rules(status, tokens, calls, want_tokens, want_calls, store):
    b = budget(store)
    b.begin_tick()
    rec = b.commit(tokens, calls, status)
    assert (rec.tokens, rec.tool_calls) == (want_tokens, want_calls)
    assert rec.initiatives_done == (status == "done")
    assert rec.initiatives_failed == (status == "failed")
    assert rec.initiatives_skipped == (status == "skipped")
    assert b.today() == rec
    assert b.tick_tokens == want_tokens
    assert b.tick_initiatives == (status != "skipped")


def test_commit_is_one_write_transaction(store, monkeypatch):
    calls = []
    real = store.write
    monkeypatch.setattr(store, "write", lambda fn: calls.append(1) or real(fn))
    b = budget(store)
    for status in ("done", "failed", "skipped"):
        b.commit(5, 1, status)
    assert len(calls) == 3


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1, 1, "ok"), "status"),
        ((-1, 1, "done"), "tokens"),
        ((1, -1, "done"), "tool_calls"),
        ((1.5, 1, "done"), "tokens"),
        ((True, 1, "done"), "tokens"),
    ],
)
def test_commit_rejects_bad_arguments(args, match):
    b = budget()
    with pytest.raises(ValueError, match=match):
        b.commit(*args)
    assert b.today() == DaySpend(day=utc_day(NOON))


def test_check_rejects_negative_estimates():
    b = budget()
    with pytest.raises(ValueError, match="tokens"):
        b.check_initiative(-1)
    with pytest.raises(ValueError, match="tool_calls"):
        b.check_initiative(1, tool_calls=-2)


def test_numpy_integers_are_accepted():
    b = budget(daily_tokens=100)
    assert b.check_initiative(np.int64(50), np.int32(1)).allowed
    assert b.commit(np.int64(50), np.int64(1), "done").tokens == 50


# -- UTC days ----------------------------------------------------------------------------------


@pytest.mark.parametrize("with_store", [False, True])
def test_new_utc_day_starts_from_zero(with_store, store):
    clock = Clock(float(calendar.timegm((2024, 3, 9, 23, 59, 50))))
    b = budget(store if with_store else None, clock=clock, daily_tokens=1000)
    b.begin_tick()
    b.commit(1000, 3, "done")
    assert b.today().day == "2024-03-09"
    assert b.check_tick().cap == "daily_tokens"
    clock.t += 9.0  # 23:59:59 — still the same UTC day
    assert b.check_initiative(1).cap == "daily_tokens"
    clock.t += 1.0  # 00:00:00 the next day
    assert b.day() == "2024-03-10"
    assert b.today() == DaySpend(day="2024-03-10")
    assert b.check_tick().allowed
    assert b.check_initiative(300).allowed
    b.commit(300, 1, "done")
    assert b.spend_on("2024-03-09").tokens == 1000  # yesterday kept as history
    assert b.spend_on("2024-03-10").tokens == 300


def test_day_is_utc_not_local_time(monkeypatch):
    # UTC+14: local midnight is 10:00 UTC. A local-time day would roll over there.
    monkeypatch.setenv("TZ", "<+14>-14")  # POSIX form: needs no tz database
    time.tzset()
    try:
        clock = Clock(float(calendar.timegm((2024, 3, 9, 9, 0, 0))))
        b = budget(clock=clock)
        b.commit(10, 1, "done")
        clock.t += 2 * 3600.0  # 11:00 UTC, the next local day, the same UTC day
        assert time.strftime("%Y-%m-%d", time.localtime(clock.t)) == "2024-03-10"
        assert b.day() == "2024-03-09"
        assert b.today().tokens == 10
    finally:
        monkeypatch.undo()
        time.tzset()


def test_utc_day_and_key():
    assert utc_day(0.0) == "1970-01-01"
    assert utc_day(NOON) == "2024-03-09"
    assert day_key("2024-03-09") == b"day:2024-03-09"


# -- persistence ------------------------------------------------------------------------------


def test_spend_persists_across_reopen(tmp_path):
    path = tmp_path / "store"
    clock = Clock()
    with Store.open(path, code_dim=8) as s:
        b = budget(s, clock=clock, daily_tokens=1000)
        b.begin_tick()
        b.commit(600, 2, "done")
        b.commit(0, 0, "skipped")
        b.commit(100, 1, "failed")
    with Store.open(path) as s:
        b2 = budget(s, clock=clock, daily_tokens=1000)
        assert b2.today() == DaySpend(
            day="2024-03-09",
            tokens=700,
            tool_calls=3,
            initiatives_done=1,
            initiatives_failed=1,
            initiatives_skipped=1,
        )
        d = b2.check_initiative(400)
        assert (d.allowed, d.cap) == (False, "daily_tokens")
        with s.read() as txn:
            raw = txn.get(BUDGET_DB, b"day:2024-03-09")
            assert DAY_SPEND.decode(raw).tokens == 700


def test_two_budgets_on_one_store_never_lose_an_increment(tmp_path):
    with Store.open(tmp_path / "s", code_dim=8, durable=False) as s:
        budgets = [budget(s), budget(s)]

        def work(b: Budget) -> None:
            for _ in range(100):
                b.commit(3, 1, "done")

        threads = [threading.Thread(target=work, args=(b,)) for b in budgets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert budgets[0].today().tokens == 600
        assert budgets[1].today().tool_calls == 200
        assert budgets[1].today().initiatives_done == 200


def test_newer_record_version_is_refused(store):
    store.write(
        lambda txn: txn.put(
            BUDGET_DB, day_key("2024-03-09"), msgspec.msgpack.encode({"v": 2, "day": "2024-03-09"})
        )
    )
    with pytest.raises(SchemaVersionError):
        budget(store).today()


# -- environment --------------------------------------------------------------------------------


def test_env_overrides_every_cap():
    env = {var: str(100 + i) for i, var in enumerate(CAP_ENV.values())}
    c = BudgetCaps.from_env(env)
    assert [getattr(c, n) for n in CAP_NAMES] == [100, 101, 102, 103, 104]
    assert CAP_ENV["daily_tokens"] == "SENTIENT_AUTONOMOUS_DAILY_TOKENS"
    assert CAP_ENV["per_initiative_tokens"] == "SENTIENT_AUTONOMOUS_PER_INITIATIVE_TOKENS"
    assert Budget(None, env=env).caps == c


def test_env_zero_unlimited_and_blank_keeps_default():
    c = BudgetCaps.from_env(
        {"SENTIENT_AUTONOMOUS_DAILY_TOKENS": "0", "SENTIENT_AUTONOMOUS_DAILY_TOOL_CALLS": "  "}
    )
    assert c.daily_tokens == 0
    assert c.daily_tool_calls == 50
    assert BudgetCaps.from_env({}, daily_tokens=5).daily_tokens == 5


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "1e3", "0x10", "10**12", str(10**12 + 1)])
@pytest.mark.parametrize("var", list(CAP_ENV.values()))
def test_bad_env_value_names_the_variable(var, value):
    with pytest.raises(BudgetConfigError, match=var) as info:
        BudgetCaps.from_env({var: value})
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [-1, 1.5, True, 10**13, "5"])
def test_caps_built_in_code_are_checked(bad):
    with pytest.raises(BudgetConfigError, match="daily_tokens"):
        BudgetCaps(daily_tokens=bad)


def test_caps_are_frozen():
    with pytest.raises(AttributeError):
        BudgetCaps().daily_tokens = 1  # type: ignore[misc]


# -- kill switch -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "off", "Off", "no", " no "])
def test_kill_switch_off_values(value):
    assert not autonomy_enabled({"SENTIENT_AUTONOMOUS": value})


@pytest.mark.parametrize("value", [None, "", "1", "true", "yes", "on", "00"])
def test_kill_switch_on_values(value):
    env = {} if value is None else {"SENTIENT_AUTONOMOUS": value}
    assert autonomy_enabled(env)


def test_kill_switch_is_checked_first_and_live():
    env: dict[str, str] = {}
    b = budget(env=env, daily_tokens=10, per_initiative_tokens=1)
    b.begin_tick()
    assert b.check_tick().allowed
    assert b.check_initiative(1).allowed
    env["SENTIENT_AUTONOMOUS"] = "0"  # flipped while running: the next check stops
    for d in (b.check_tick(), b.check_initiative(1), b.check_initiative(10**6)):
        assert (d.allowed, d.cap) == (False, "kill_switch")
        assert "SENTIENT_AUTONOMOUS" in d.reason
    assert b.refusals["kill_switch"] == 3
    assert b.report()["enabled"] is False
    env["SENTIENT_AUTONOMOUS"] = "1"
    assert b.check_initiative(1).allowed


def test_kill_switch_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("SENTIENT_AUTONOMOUS", "off")
    b = Budget(None, BudgetCaps())
    assert b.check_tick().cap == "kill_switch"
    monkeypatch.delenv("SENTIENT_AUTONOMOUS")
    assert b.check_tick().allowed


# -- property: caps hold under any sequence ------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    daily=st.integers(0, 3000),
    calls_cap=st.integers(0, 12),
    tick_tokens=st.integers(0, 1500),
    tick_n=st.integers(0, 4),
    per_init=st.integers(0, 800),
    ticks=st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 900),
                st.integers(0, 2),
                st.floats(0.0, 1.0),
                st.sampled_from(["done", "failed", "skipped"]),
            ),
            max_size=8,
        ),
        max_size=6,
    ),
)
def test_caps_are_never_exceeded_when_spend_stays_within_estimates(
    daily, calls_cap, tick_tokens, tick_n, per_init, ticks
):
    b = budget(
        daily_tokens=daily,
        daily_tool_calls=calls_cap,
        per_tick_tokens=tick_tokens,
        per_tick_initiatives=tick_n,
        per_initiative_tokens=per_init,
    )
    for tick in ticks:
        b.begin_tick()
        if not b.check_tick().allowed:
            continue
        for estimate, calls, fraction, status in tick:
            if not b.check_initiative(estimate, calls).allowed:
                continue
            spent = int(estimate * fraction)  # actual spend ≤ estimate
            b.commit(spent, calls, status)
            assert per_init == 0 or spent <= per_init
            assert tick_tokens == 0 or b.tick_tokens <= tick_tokens
            assert tick_n == 0 or b.tick_initiatives <= tick_n
        spent_today = b.today()
        assert daily == 0 or spent_today.tokens <= daily
        assert calls_cap == 0 or spent_today.tool_calls <= calls_cap
