"""References for :mod:`sentient_kernels.tick`: the observer tick as separate steps.

:func:`run_ticks_unfused` chains the public kernels one tick at a time
(``prsc.run(state, 1)`` then ``smf.update``); :func:`run_ticks_naive` does the
same with the pure-Python references of ``naive_prsc`` and ``naive_smf``
(pairwise O(N²) coupling, cmath), independent of any kernel.
"""

from __future__ import annotations

import numpy as np

from sentient_kernels import prsc, smf
from tests import naive_prsc, naive_smf


def run_ticks_unfused(state, s, steps, dt=1.0 / 60.0, coupling=0.3, damping=0.02, eta=0.1):
    """Advance ``state`` and ``s`` in place; return per-step (coherence, entropy) arrays."""
    coherence = np.empty(steps)
    entropy = np.empty(steps)
    for t in range(steps):
        prsc.run(state, 1, dt=dt, coupling=coupling, damping=damping)
        smf.update(s, state.amplitude, state.phase, eta, out=s)
        coherence[t] = prsc.coherence(state.phase, state.amplitude)
        entropy[t] = smf.entropy(s)
    return coherence, entropy


def run_ticks_naive(
    phase, amplitude, frequency, s, steps, dt=1.0 / 60.0, coupling=0.3, damping=0.02, eta=0.1
):
    """Return (phase, amplitude, s, coherence, entropy) after ``steps`` pure-Python ticks."""
    phase = np.array(phase, dtype=np.float64)
    amplitude = np.array(amplitude, dtype=np.float64)
    s = np.array(s, dtype=np.float64)
    coherence = []
    entropy = []
    for _ in range(steps):
        phase, amplitude = naive_prsc.run(phase, amplitude, frequency, 1, dt, coupling, damping)
        s = naive_smf.update(s, amplitude, phase, eta)
        coherence.append(naive_prsc.coherence(phase, amplitude))
        entropy.append(naive_smf.entropy(s))
    return phase, amplitude, s, np.array(coherence), np.array(entropy)
