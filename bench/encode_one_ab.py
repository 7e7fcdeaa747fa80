"""Observer ``process_text`` + ``tick`` with the single-text encode in one kernel call
(:mod:`sentient_kernels.text_one`) against the path it replaced (three kernel
dispatches: encode, excitation CSR, dominant order), alternated A/B, B/A in one
process so machine load weighs on both alike; medians.

    python bench/encode_one_ab.py --rounds 31 --ops 200

Both paths give the same bits (tests/test_text_one.py); only the Python and the
dispatches around the kernels differ. Measured (2-core machine shared with
other work), medians of 31 rounds: 16.4-19.3 µs before, 14.0-16.2 µs after,
1.13-1.20× at load ~2; 37.9 against 35.0 µs (1.08×) in a run at load 3.5.
Target < 50 µs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sentient_core.benchmarks.cases_observer import TEXT
from sentient_core.encoder import token_encoder
from sentient_core.encoder.token_encoder import TokenPrimeEncoder
from sentient_core.encoder.types import EncodedText, Excitation, read_only
from sentient_core.observer import Observer
from sentient_kernels import unchecked


def three_dispatch_encode(self: TokenPrimeEncoder, text: str) -> EncodedText:
    """``TokenPrimeEncoder.encode`` as it was before the one-call kernel."""
    data = text.lower().encode("utf-8", "surrogatepass")
    astral = not data.isascii() and token_encoder.ASTRAL_LEAD.search(data) is not None
    codes, n_tokens, ex_re, ex_im = self._run(
        np.frombuffer(data, dtype=np.uint8),
        np.array([0, len(data)], dtype=np.int64),
        excitation=True,
        astral=astral,
    )
    _, idx, amounts, phases = unchecked.text_excitation_csr(
        ex_re, ex_im, self.config.excitation_gain
    )
    primes = self.bank_primes[idx]
    order = unchecked.text_dominant_order(amounts, primes, self.config.n_dominant)
    return EncodedText(
        excitation=Excitation(
            indices=read_only(idx),
            primes=read_only(primes),
            amounts=read_only(amounts),
            phases=read_only(phases),
        ),
        code=read_only(codes[0]),
        dominant_primes=tuple(primes[order].tolist()),
        n_tokens=int(n_tokens[0]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--ops", type=int, default=200, help="text + tick per timed call")
    args = parser.parse_args()
    one_call = TokenPrimeEncoder.encode
    obs = Observer(seed=0)

    def timed(encode) -> float:
        TokenPrimeEncoder.encode = encode  # type: ignore[method-assign]  # the A/B switch
        t0 = time.perf_counter()
        for _ in range(args.ops):
            obs.process_text(TEXT)
            obs.tick()
        return (time.perf_counter() - t0) / args.ops

    sides = [("three dispatches", three_dispatch_encode), ("one call", one_call)]
    times: dict[str, list[float]] = {name: [] for name, _ in sides}
    try:
        for _name, fn in sides:
            timed(fn)  # warm
        for i in range(args.rounds):
            for name, fn in sides if i % 2 == 0 else sides[::-1]:
                times[name].append(timed(fn))
    finally:
        TokenPrimeEncoder.encode = one_call  # type: ignore[method-assign]
    old = statistics.median(times["three dispatches"])
    new = statistics.median(times["one call"])
    print(f"observer process_text + tick, medians of {args.rounds} A/B rounds of {args.ops}:")
    print(f"  three dispatches {old * 1e6:.2f} µs   one call {new * 1e6:.2f} µs   {old / new:.2f}×")


if __name__ == "__main__":
    main()
