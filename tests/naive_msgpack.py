"""Slow, obviously-correct reference of :func:`sentient_kernels.msgpack.parse_uint_arrays`, pure Python."""

from __future__ import annotations

# Element tags of unsigned ints wider than a positive fixint, and their payload bytes.
_UINT_WIDTH = {0xCC: 1, 0xCD: 2, 0xCE: 4}


def parse_message(data: bytes) -> list[int] | None:
    """The values of one msgpack array in the simple encoding, else None.

    Simple: a fixarray (0x90–0x9F) or array16 (0xDC + 2 bytes) header, then
    positive fixints (0x00–0x7F) or uint8/16/32 (0xCC/0xCD/0xCE + big-endian
    payload), ending exactly at the end of ``data``.
    """
    if not data:
        return None
    if 0x90 <= data[0] <= 0x9F:
        n, i = data[0] - 0x90, 1
    elif data[0] == 0xDC and len(data) >= 3:
        n, i = int.from_bytes(data[1:3], "big"), 3
    else:
        return None
    values = []
    for _ in range(n):
        if i >= len(data):
            return None
        tag = data[i]
        if tag <= 0x7F:
            values.append(tag)
            i += 1
        elif tag in _UINT_WIDTH and i + _UINT_WIDTH[tag] < len(data):
            width = _UINT_WIDTH[tag]
            values.append(int.from_bytes(data[i + 1 : i + 1 + width], "big"))
            i += 1 + width
        else:
            return None
    return values if i == len(data) else None


def parse_uint_arrays(buf: bytes, starts: list[int], capacity: int):
    """(k, counts, values) as the kernel reports them; k = -1 when it would give up.

    Message ``r`` is ``buf[starts[r]:starts[r + 1]]`` (the last to the end).
    ``capacity`` is the length of the kernel's ``out``.
    """
    counts, values = [], []
    for r, lo in enumerate(starts):
        hi = starts[r + 1] if r + 1 < len(starts) else len(buf)
        parsed = parse_message(bytes(buf[lo:hi]))
        if parsed is None or len(values) + len(parsed) > capacity:
            return -1, None, None
        counts.append(len(parsed))
        values.extend(parsed)
    return len(values), counts, values
