"""sentient_core.observer: input → oscillators → SMF, tick order, ticker thread, persistence."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from sentient_core.encoder import EncodedText, Excitation, get_encoder
from sentient_core.observer import OBSERVER_KEY, Observer
from sentient_core.observer import dynamics as observer_dynamics
from sentient_core.store import CorruptRecordError, SchemaVersionError, Store
from sentient_kernels import prsc, smf

ROOT = Path(__file__).resolve().parents[1]
TEXT = (
    "Prime resonance oscillators synchronise when a sedenion memory field reads"
    " physics notes about coupled pendulums, harmonic spectra and entropy."
)
OTHER = "Gardeners prune apple trees in winter so spring blossoms carry sweeter fruit."


def assert_same_observer(a: Observer, b: Observer) -> None:
    sa, sb = a.oscillators(), b.oscillators()
    for x, y in zip(sa, sb, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.smf, b.smf)
    np.testing.assert_array_equal(a.coherence_history(), b.coherence_history())
    np.testing.assert_array_equal(a.entropy_history(), b.entropy_history())
    assert a.ticks == b.ticks
    assert a.coherence == b.coherence
    assert a.entropy == b.entropy


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the timeout")
        time.sleep(0.005)


# --------------------------------------------------------------------------- input


def test_process_text_excites_the_encoded_primes_and_moves_the_smf():
    reader, idle = Observer(seed=1), Observer(seed=1)
    encoded = reader.process_text(TEXT)
    exc = encoded.excitation
    assert len(exc) > 0
    assert reader.pending == 1
    # Queued, not applied: nothing moves before the tick.
    assert_same_observer(reader, idle)
    before = reader.oscillators().amplitude
    reader.tick()
    idle.tick()
    got, base = reader.oscillators().amplitude, idle.oscillators().amplitude
    decay = 1.0 - 0.02 / 60.0
    excited = np.zeros(reader.n_oscillators, dtype=bool)
    excited[exc.indices] = True
    assert np.all(got[excited] > base[excited])
    assert (got - base).max() > 0.2  # the strongest prime gets the encoder's gain, 0.3
    np.testing.assert_allclose(
        got[excited], np.minimum(1.0, before[exc.indices] + exc.amounts) * decay, rtol=1e-15
    )
    np.testing.assert_array_equal(got[~excited], base[~excited])
    assert np.all(reader.primes[excited] == exc.primes)
    assert np.abs(reader.smf - idle.smf).max() > 1e-3
    assert reader.pending == 0


def test_tick_applies_input_before_the_oscillator_tick():
    obs = Observer(seed=2)
    state = obs.oscillators()
    field = obs.smf
    exc = obs.process_text(TEXT).excitation
    obs.tick()
    # By hand with the public kernels: excite, tick, SMF update.
    prsc.excite(state, exc.indices, exc.amounts, target_phase=exc.phases, pull=0.5)
    prsc.run(state, 1)
    smf.update(field, state.amplitude, state.phase, out=field)
    got = obs.oscillators()
    np.testing.assert_array_equal(got.phase, state.phase)
    np.testing.assert_array_equal(got.amplitude, state.amplitude)
    np.testing.assert_allclose(obs.smf, field, rtol=0.0, atol=1e-14)
    assert obs.coherence == pytest.approx(prsc.coherence(state.phase, state.amplitude), abs=1e-14)
    assert obs.entropy == pytest.approx(smf.entropy(field), abs=1e-14)
    # The other order (tick, then excite) ends somewhere else.
    late = Observer(seed=2).oscillators()
    prsc.run(late, 1)
    prsc.excite(late, exc.indices, exc.amounts, target_phase=exc.phases, pull=0.5)
    assert np.abs(late.phase - got.phase).max() > 1e-6


def test_tick_n_equals_n_single_ticks():
    batched, single = Observer(seed=3, history=40), Observer(seed=3, history=40)
    for obs in (batched, single):
        obs.process_text(TEXT)
    batched.tick(75)
    for _ in range(75):
        single.tick()
    assert batched.ticks == single.ticks == 75
    assert_same_observer(batched, single)


def test_tick_n_is_one_kernel_call(monkeypatch):
    calls = []
    kernel = observer_dynamics.unchecked.run_ticks

    def counting(*args):
        calls.append(args[4])
        return kernel(*args)

    monkeypatch.setattr(observer_dynamics.unchecked, "run_ticks", counting)
    obs = Observer()
    obs.process_text(TEXT)
    obs.tick(1000)
    assert calls == [1000]
    assert obs.ticks == 1000


def test_several_queued_texts_apply_in_order_at_one_tick():
    obs = Observer(seed=4)
    state = obs.oscillators()
    a = obs.process_text(TEXT).excitation
    b = obs.process_text(OTHER).excitation
    assert obs.pending == 2
    obs.tick()
    prsc.excite(state, a.indices, a.amounts, target_phase=a.phases, pull=0.5)
    prsc.excite(state, b.indices, b.amounts, target_phase=b.phases, pull=0.5)
    prsc.run(state, 1)
    np.testing.assert_array_equal(obs.oscillators().phase, state.phase)
    np.testing.assert_array_equal(obs.oscillators().amplitude, state.amplitude)


def test_stop_word_only_text_excites_nothing():
    reader, idle = Observer(seed=5), Observer(seed=5)
    encoded = reader.process_text("The and of it is, was THEN to them!")
    assert len(encoded.excitation) == 0
    assert reader.pending == 0
    reader.tick(30)
    idle.tick(30)
    assert_same_observer(reader, idle)


def test_process_encoded_equals_process_text():
    a, b = Observer(seed=6), Observer(seed=6)
    encoded = b.encoder.encode(TEXT)
    assert a.process_encoded(encoded) is encoded
    b.process_text(TEXT)
    a.tick(3)
    b.tick(3)
    assert_same_observer(a, b)


def test_encoder_bank_larger_than_oscillator_bank_maps_by_prime():
    enc = get_encoder("token")  # 64 primes
    obs = Observer(n_oscillators=10, encoder=enc, seed=7)
    base = Observer(n_oscillators=10, seed=7)
    exc = enc.encode(TEXT).excitation
    assert np.any(exc.primes > obs.primes.max())  # some primes fall outside
    obs.process_text(TEXT)
    obs.tick()
    base.tick()
    amount = dict(zip(exc.primes.tolist(), exc.amounts.tolist(), strict=True))
    got, ref = obs.oscillators().amplitude, base.oscillators().amplitude
    for i, p in enumerate(obs.primes.tolist()):
        if p in amount:
            assert got[i] > ref[i] + 0.5 * amount[p]
        else:
            assert got[i] == ref[i]


def test_char_compat_encoder_excites_too():
    obs = Observer(encoder=get_encoder("char-compat"), seed=8)
    idle = Observer(seed=8)
    obs.process_text("abc def")
    obs.tick()
    idle.tick()
    assert obs.oscillators().amplitude[0] > idle.oscillators().amplitude[0]  # a → 2


# --------------------------------------------------------------------------- read-outs


def test_readouts():
    obs = Observer(seed=9)
    obs.process_text(TEXT)
    obs.tick(2)
    state = obs.oscillators()
    alpha = obs.prime_state()
    np.testing.assert_allclose(alpha, prsc.prime_state(state), rtol=0.0, atol=1e-15)
    assert np.linalg.norm(alpha) == pytest.approx(1.0, abs=1e-12)
    pairs = sorted(
        zip(state.amplitude.tolist(), state.primes.tolist(), strict=True),
        key=lambda t: (-t[0], t[1]),
    )
    assert obs.dominant_primes(5) == tuple(p for _, p in pairs[:5])
    assert obs.dominant_primes(0) == ()
    assert len(obs.dominant_primes(1000)) == obs.n_oscillators
    orientation = obs.orientation()
    assert list(orientation) == list(smf.AXES)
    np.testing.assert_array_equal(list(orientation.values()), obs.smf)
    # Copies, not views.
    obs.smf[0] = 123.0
    obs.oscillators().phase[:] = 0.0
    assert obs.smf[0] != 123.0
    assert obs.oscillators().phase.any()
    assert obs.coherence_history().shape == (2,)
    assert obs.coherence_history()[-1] == obs.coherence
    assert obs.entropy_history()[-1] == obs.entropy
    assert "Observer(" in repr(obs)


def test_fresh_observer_state():
    obs = Observer(n_oscillators=16, seed=11)
    ref = prsc.init_state(16, seed=11)
    for x, y in zip(obs.oscillators(), ref, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(obs.smf, smf.initial())
    assert obs.ticks == 0
    assert obs.entropy == 0.0
    assert obs.coherence == pytest.approx(prsc.coherence(ref.phase, ref.amplitude), abs=1e-15)
    assert obs.coherence_history().shape == (0,)
    assert obs.coherence_drop() == 0.0


@pytest.mark.parametrize("chunks", [(3, 4, 12, 1, 2), (5, 5, 5), (1,) * 9, (23,)])
def test_history_ring_keeps_the_last_values_in_order(chunks):
    short, long = Observer(seed=12, history=5), Observer(seed=12, history=100)
    for n in chunks:
        short.tick(n)
        long.tick(n)
    total = sum(chunks)
    np.testing.assert_array_equal(short.coherence_history(), long.coherence_history()[-5:])
    np.testing.assert_array_equal(short.entropy_history(), long.entropy_history()[-5:])
    assert long.coherence_history().shape == (total,)
    assert short.coherence == long.coherence


def _observer_with_history(values: list[float]) -> Observer:
    rec = Observer(history=20).to_record()
    hist = np.array(values)
    rec = msgspec.structs.replace(
        rec,
        coherence=values[-1],
        coherence_history=hist.tobytes(),
        entropy_history=np.zeros(len(values)).tobytes(),
    )
    return Observer.from_record(rec)


def test_coherence_drop_measures_the_fall_below_the_recent_mean():
    obs = _observer_with_history([0.9] * 9 + [0.5])
    assert obs.coherence_drop() == pytest.approx(0.86 - 0.5, abs=1e-12)
    assert obs.coherence_drop(window=2) == pytest.approx(0.7 - 0.5, abs=1e-12)
    assert obs.coherence_drop(window=1) == 0.0
    assert _observer_with_history([0.2] * 5 + [0.8]).coherence_drop() == 0.0
    with pytest.raises(ValueError, match="window"):
        obs.coherence_drop(window=0)


# --------------------------------------------------------------------------- background ticker


def _tickers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "observer-ticker"]


def test_background_ticker_advances_and_stops():
    obs = Observer()
    obs.process_text(TEXT)
    assert obs.start(rate=500.0) is True
    try:
        assert obs.running
        wait_for(lambda: obs.ticks >= 10)
        assert obs.pending == 0  # the ticker applied the queued input
    finally:
        obs.stop()
    assert not obs.running
    assert not _tickers()
    stopped_at = obs.ticks
    time.sleep(0.05)
    assert obs.ticks == stopped_at
    # Restart after stop works.
    assert obs.start(rate=500.0) is True
    wait_for(lambda: obs.ticks > stopped_at)
    obs.stop()


def test_start_twice_runs_one_thread():
    obs = Observer()
    assert obs.start(rate=100.0) is True
    try:
        assert obs.start(rate=100.0) is False
        assert obs.start(rate=7.0) is False
        assert len(_tickers()) == 1
    finally:
        obs.stop()
    obs.stop()  # stopping twice is harmless
    assert not _tickers()


def test_ticker_and_synchronous_calls_do_not_interleave():
    obs = Observer(history=10_000)
    obs.start(rate=2000.0)
    try:
        for _ in range(300):
            obs.process_text(TEXT)
            obs.tick()
    finally:
        obs.stop()
    hist = obs.coherence_history()
    # Every tick recorded exactly one value: no lost or doubled ring writes.
    assert hist.shape == (obs.ticks,)
    assert obs.ticks >= 300
    assert np.all(np.isfinite(hist)) and np.all((hist >= 0.0) & (hist <= 1.0))
    assert hist[-1] == obs.coherence


# --------------------------------------------------------------------------- persistence


def test_record_round_trip_in_process_including_queued_input():
    obs = Observer(seed=13, history=30)
    obs.process_text(TEXT)
    obs.tick(45)
    obs.process_text(OTHER)  # queued, not yet applied
    copy = Observer.from_record(obs.to_record())
    assert copy.pending == 1
    assert_same_observer(obs, copy)
    for o in (obs, copy):
        o.process_text(TEXT)
        o.tick(17)
    assert_same_observer(obs, copy)


def test_save_and_load_in_store(tmp_path):
    obs = Observer(seed=14, n_oscillators=32, coupling=0.7, history=25)
    obs.process_text(TEXT)
    obs.tick(9)
    with Store.open(tmp_path / "s", code_dim=64) as store:
        obs.save(store)
        with store.read() as txn:
            assert txn.entries("state") == 1
        loaded = Observer.load(store)
    assert_same_observer(obs, loaded)
    assert loaded.n_oscillators == 32


def test_load_without_saved_state_creates_from_defaults(tmp_path):
    with Store.open(tmp_path / "s", code_dim=64) as store:
        fresh = Observer.load(store, n_oscillators=20, seed=15)
        with pytest.raises(TypeError, match="n_osc"):
            Observer.load(store, n_osc=3)
    assert_same_observer(fresh, Observer(n_oscillators=20, seed=15))


def test_load_rejects_other_schema_version_and_corrupt_state(tmp_path):
    rec = Observer().to_record()
    newer = msgspec.msgpack.encode(msgspec.structs.replace(rec, v=2))
    with Store.open(tmp_path / "s", code_dim=64) as store:
        store.write(lambda txn: txn.put("state", OBSERVER_KEY, newer))
        with pytest.raises(SchemaVersionError, match="version 2"):
            Observer.load(store)
        store.write(lambda txn: txn.put("state", OBSERVER_KEY, b"\x93not a record"))
        with pytest.raises(CorruptRecordError):
            Observer.load(store)
    with pytest.raises(CorruptRecordError, match="phase"):
        Observer.from_record(msgspec.structs.replace(rec, phase=rec.phase[:-8]))
    nan_smf = np.full(16, np.nan).tobytes()
    with pytest.raises(CorruptRecordError, match="smf"):
        Observer.from_record(msgspec.structs.replace(rec, smf=nan_smf))
    with pytest.raises(CorruptRecordError, match="eta"):
        Observer.from_record(msgspec.structs.replace(rec, eta=3.0))
    with pytest.raises(SchemaVersionError):
        Observer.from_record(msgspec.structs.replace(rec, v=2))
    with pytest.raises(TypeError, match="ObserverStateRecord"):
        Observer.from_record({"v": 1})


_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from sentient_core.observer import Observer
    from sentient_core.store import Store

    path, out, text = sys.argv[1], sys.argv[2], sys.argv[3]
    with Store.open(path) as store:
        obs = Observer.load(store)
    obs.process_text(text)
    obs.tick(1)
    obs.tick(250)
    state = obs.oscillators()
    np.savez(
        out,
        phase=state.phase,
        amplitude=state.amplitude,
        smf=obs.smf,
        coherence_history=obs.coherence_history(),
        entropy_history=obs.entropy_history(),
        ticks=obs.ticks,
        coherence=obs.coherence,
        entropy=obs.entropy,
    )
    """
)


@pytest.mark.slow
def test_restored_state_is_bit_identical_in_another_process(tmp_path):
    obs = Observer(seed=16, history=100)
    obs.process_text(TEXT)
    obs.tick(123)
    obs.process_text(OTHER)  # still queued when saved
    store_path = tmp_path / "store"
    with Store.open(store_path, code_dim=64) as store:
        obs.save(store)
    out = tmp_path / "child.npz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-c", _CHILD, str(store_path), str(out), TEXT],
        check=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    obs.process_text(TEXT)
    obs.tick(1)
    obs.tick(250)
    state = obs.oscillators()
    with np.load(out) as child:
        np.testing.assert_array_equal(child["phase"], state.phase)
        np.testing.assert_array_equal(child["amplitude"], state.amplitude)
        np.testing.assert_array_equal(child["smf"], obs.smf)
        np.testing.assert_array_equal(child["coherence_history"], obs.coherence_history())
        np.testing.assert_array_equal(child["entropy_history"], obs.entropy_history())
        assert int(child["ticks"]) == obs.ticks == 374
        assert float(child["coherence"]) == obs.coherence
        assert float(child["entropy"]) == obs.entropy


# --------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"n_oscillators": 0}, ValueError, "n_oscillators"),
        ({"n_oscillators": -3}, ValueError, "n_oscillators"),
        ({"n_oscillators": 2.0}, TypeError, "n_oscillators"),
        ({"n_oscillators": True}, TypeError, "n_oscillators"),
        ({"seed": -1}, ValueError, "seed"),
        ({"dt": 0.0}, ValueError, "dt"),
        ({"coupling": float("nan")}, ValueError, "coupling"),
        ({"damping": -0.1}, ValueError, "damping"),
        ({"damping": 100.0, "dt": 0.5}, ValueError, "damping"),
        ({"eta": 1.5}, ValueError, "eta"),
        ({"excitation_pull": -0.1}, ValueError, "excitation_pull"),
        ({"history": 0}, ValueError, "history"),
        ({"encoder": "token"}, TypeError, "encoder"),
    ],
)
def test_constructor_rejects_bad_arguments(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        Observer(**kwargs)


def test_methods_reject_bad_arguments():
    obs = Observer()
    for bad in (b"bytes", None, 42, ["text"]):
        with pytest.raises(TypeError, match="text must be str"):
            obs.process_text(bad)
    with pytest.raises(TypeError, match="encoded"):
        obs.process_encoded(TEXT)
    with pytest.raises(ValueError, match="n must"):
        obs.tick(-1)
    with pytest.raises(TypeError, match="n must"):
        obs.tick(1.0)
    with pytest.raises(ValueError, match="rate"):
        obs.start(rate=0.0)
    with pytest.raises(ValueError, match="k must"):
        obs.dominant_primes(-1)
    assert obs.ticks == 0 and obs.pending == 0 and not obs.running
    assert obs.tick(0) == 0


def test_process_encoded_rejects_malformed_excitation():
    obs = Observer(n_oscillators=8)
    good = obs.encoder.encode(TEXT)

    def with_excitation(**fields):
        exc = good.excitation
        parts = {
            "indices": exc.indices,
            "primes": exc.primes,
            "amounts": exc.amounts,
            "phases": exc.phases,
        }
        parts.update(fields)
        return EncodedText(Excitation(**parts), good.code, good.dominant_primes, good.n_tokens)

    m = len(good.excitation)
    with pytest.raises(ValueError, match="indices"):
        obs.process_encoded(with_excitation(indices=np.full(m, 8, dtype=np.int64)))
    with pytest.raises(TypeError, match="indices"):
        obs.process_encoded(with_excitation(indices=good.excitation.indices.astype(np.int32)))
    with pytest.raises(ValueError, match="amounts"):
        obs.process_encoded(with_excitation(amounts=-good.excitation.amounts))
    with pytest.raises(ValueError, match="phases"):
        obs.process_encoded(with_excitation(phases=np.full(m, np.nan)))
    with pytest.raises(ValueError, match="amounts"):
        obs.process_encoded(with_excitation(amounts=good.excitation.amounts[:-1]))
    assert obs.pending == 0
