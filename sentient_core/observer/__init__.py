"""The observer: a prime-resonance oscillator bank and the Sedenion Memory Field it drives.

Text is encoded into a prime excitation (:mod:`sentient_core.encoder`) and
queued; every tick applies the queued input, runs one PRSC tick of the bank and
the SMF update, and records coherence and SMF entropy (SPEC §3; the order is in
:mod:`.dynamics`). Ticks are called synchronously (:meth:`Observer.tick`, used
by tests and benchmarks) or by a background thread at a fixed rate
(:meth:`Observer.start`); a lock keeps the two from interleaving.

The state persists as one versioned :class:`ObserverStateRecord` under key
``b"observer"`` of the store's ``state`` sub-database; arrays are kept as raw
float64/int64 bytes, so a restored observer continues bit for bit.

Modules
-------
observer  :class:`Observer`: text in, background ticking, save/load
dynamics  :class:`~.dynamics.ObserverDynamics`: parameters, state, ticks, read-outs
history   the ring buffers of recent coherence and entropy
ticker    the background clock (one daemon thread)
state     :class:`ObserverStateRecord` and its checked decoding, read and write
"""

from sentient_core.observer.observer import Observer
from sentient_core.observer.state import (
    OBSERVER_KEY,
    OBSERVER_STATE_VERSION,
    STATE_DB,
    ObserverStateRecord,
)

__all__ = [
    "OBSERVER_KEY",
    "OBSERVER_STATE_VERSION",
    "STATE_DB",
    "Observer",
    "ObserverStateRecord",
]
