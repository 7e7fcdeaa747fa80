"""sentient_kernels.msgpack.parse_uint_arrays against tests/naive_msgpack.py and msgspec's encoder."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from sentient_kernels import msgpack
from tests.naive import msgpack as naive


def pack(messages: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.zeros(len(messages), dtype=np.int64)
    if messages:
        np.cumsum([len(m) for m in messages[:-1]], out=starts[1:])
    return np.frombuffer(b"".join(messages), dtype=np.uint8), starts


def parse(messages: list[bytes], capacity: int | None = None):
    buf, starts = pack(messages)
    counts = np.full(len(messages), -7, dtype=np.int64)
    out = np.full(buf.size if capacity is None else capacity, -7, dtype=np.int64)
    k = msgpack.parse_uint_arrays(buf, starts, counts, out)
    return k, counts, out[: max(k, 0)]


def random_tuple(rng: np.random.Generator) -> tuple[int, ...]:
    # Lengths on both sides of the fixarray limit (15), values in every width.
    n = int(rng.choice([0, 1, 3, 15, 16, 17, 200]))
    bounds = [(0, 128), (128, 256), (256, 1 << 16), (1 << 16, 1 << 32)]
    picks = rng.integers(0, len(bounds), size=n)
    return tuple(int(rng.integers(*bounds[p])) for p in picks)


@pytest.mark.parametrize("seed", range(6))
def test_msgspec_encoded_uint_arrays_parse_exactly(seed):
    rng = np.random.default_rng(seed)
    tuples = [random_tuple(rng) for _ in range(int(rng.integers(1, 60)))]
    messages = [msgspec.msgpack.encode(t) for t in tuples]
    k, counts, values = parse(messages)
    assert k == sum(map(len, tuples))
    assert counts.tolist() == [len(t) for t in tuples]
    assert values.tolist() == [v for t in tuples for v in t]
    buf, starts = pack(messages)
    assert (k, counts.tolist(), values.tolist()) == naive.parse_uint_arrays(
        bytes(buf), starts.tolist(), buf.size
    )


@pytest.mark.parametrize(
    "other",
    [
        (1 << 32,),  # uint64
        (-1,),  # negative fixint
        (-200,),  # int16
        (1.5,),  # float
        ("x",),  # string
        {"a": 1},  # map
        5,  # not an array
        tuple(range(70_000)),  # array32 header
    ],
)
def test_anything_else_is_left_to_a_full_decoder(other):
    messages = [msgspec.msgpack.encode((2, 3)), msgspec.msgpack.encode(other)]
    assert parse(messages)[0] == -1


@pytest.mark.parametrize(
    "messages",
    [
        [b""],  # empty message
        [b"\x92\x01"],  # one element short
        [b"\x91\x01\x02"],  # trailing byte
        [b"\x91\xcd\x01"],  # truncated uint16
        [b"\xdc\x00"],  # truncated array16 header
        [b"\x91\xce\x00\x00\x00"],  # truncated uint32
    ],
)
def test_malformed_messages_are_not_simple(messages):
    buf, starts = pack(messages)
    assert parse(messages)[0] == -1
    assert naive.parse_uint_arrays(bytes(buf), starts.tolist(), buf.size)[0] == -1


def test_random_bytes_agree_with_reference():
    rng = np.random.default_rng(42)
    # Bytes biased toward valid headers and tags so that both outcomes occur.
    alphabet = np.array([0x90, 0x91, 0x92, 0x93, 0xDC, 0x00, 0x01, 0x7F, 0xCC, 0xCD, 0xCE, 0xFF])
    outcomes = set()
    for _ in range(400):
        n_msg = int(rng.integers(1, 5))
        messages = [
            bytes(rng.choice(alphabet, size=int(rng.integers(1, 7))).astype(np.uint8))
            for _ in range(n_msg)
        ]
        buf, starts = pack(messages)
        want = naive.parse_uint_arrays(bytes(buf), starts.tolist(), buf.size)
        k, counts, values = parse(messages)
        assert k == want[0]
        if k >= 0:
            assert counts.tolist() == want[1] and values.tolist() == want[2]
        outcomes.add(k >= 0)
    assert outcomes == {True, False}


def test_out_too_short_gives_up():
    messages = [msgspec.msgpack.encode((1, 2, 3)), msgspec.msgpack.encode((4,))]
    assert parse(messages, capacity=4)[0] == 4
    assert parse(messages, capacity=3)[0] == -1


def test_no_messages():
    buf = np.zeros(0, dtype=np.uint8)
    empty = np.zeros(0, dtype=np.int64)
    assert msgpack.parse_uint_arrays(buf, empty, empty.copy(), empty.copy()) == 0


def test_read_only_buffer_is_fine():
    buf, starts = pack([msgspec.msgpack.encode((7, 300))])
    assert not buf.flags.writeable
    out = np.empty(8, dtype=np.int64)
    assert msgpack.parse_uint_arrays(buf, starts, np.zeros(1, np.int64), out) == 2
    assert out[:2].tolist() == [7, 300]


@pytest.mark.parametrize(
    ("change", "exc", "name"),
    [
        ({"buf": np.zeros(4, dtype=np.int8)}, TypeError, "buf"),
        ({"buf": b"\x90"}, TypeError, "buf"),
        ({"starts": np.array([0, 3, 1], dtype=np.int64)}, ValueError, "starts"),
        ({"starts": np.array([0, 9, 99], dtype=np.int64)}, ValueError, "starts"),
        ({"starts": np.array([-1, 0, 1], dtype=np.int64)}, ValueError, "starts"),
        ({"starts": np.array([0, 1, 2], dtype=np.int32)}, TypeError, "starts"),
        ({"counts": np.zeros(2, dtype=np.int64)}, ValueError, "counts"),
        ({"out": np.zeros((2, 2), dtype=np.int64)}, ValueError, "out"),
    ],
)
def test_bad_arguments_are_named(change, exc, name):
    buf, starts = pack([b"\x90", b"\x91\x01", b"\x90"])
    args = {"buf": buf, "starts": starts, "counts": np.zeros(3, np.int64)}
    args["out"] = np.zeros(8, np.int64)
    args.update(change)
    with pytest.raises(exc, match=name):
        msgpack.parse_uint_arrays(**args)


def test_read_only_outputs_are_rejected():
    buf, starts = pack([b"\x91\x01"])
    frozen = np.zeros(1, dtype=np.int64)
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="counts"):
        msgpack.parse_uint_arrays(buf, starts, frozen, np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="out"):
        msgpack.parse_uint_arrays(buf, starts, np.zeros(1, np.int64), frozen)
