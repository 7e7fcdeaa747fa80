"""The raw Numba kernels behind the public wrappers, without argument checks.

Every name here is a Numba dispatcher (a ``CPUDispatcher``): the exact
machine code the public wrappers run, callable from Python and from your own
``@numba.njit`` functions. From Python, a call costs only Numba's dispatch
(~0.2–0.4 µs); inside ``@njit`` code it is a direct (usually inlined) call
with no Python involved at all.

Nothing is checked: each function trusts the preconditions listed below. What
happens when they are violated is stated per function; "undefined" means
Numba does no bounds checking, so the kernel may read or write outside an
array (wrong results, a corrupted neighbour array or a crash). Validate once,
where data enters your program (the public wrappers, or
:func:`sentient_kernels.checks.check_array`), and call these in the hot loop.

Conventions for every function below: arrays are numpy arrays of exactly the
stated dtype (``float64`` unless noted; other dtypes compile a new
specialisation, or fail to compile inside ``@njit``), and "finite" means no
NaN and no ±inf. From Python, arrays should be C-contiguous (others compile a
new specialisation on first use; :data:`sedenion_mul` and
:data:`sedenion_mul_rows` require C-contiguity, and
:data:`smf_similarity` requires it of ``b``). Constants such as ``smf.EPS``
are passed explicitly, as the public wrappers do.

Sedenions
---------
sedenion_mul(a, b, out) -> int
    ``out = a·b`` for (16,) vectors. ``out`` may be ``a`` or ``b`` (both are
    read before ``out`` is written).
    Returns 0; 1 if ``a`` or ``b`` holds NaN or ±inf (``out`` then holds the
    IEEE result, NaN somewhere); 2 if any of the three is not (16,) (``out``
    untouched).
sedenion_mul_rows(a, b, out) -> int
    ``out[r] = a[r]·b[r]`` for (N, 16) C-contiguous arrays, serially. ``b``
    and ``out`` need at least N rows (undefined otherwise). Returns the number
    of rows whose inputs hold NaN or ±inf.

Sedenion Memory Field (``eps`` is ``smf.EPS``, ``active`` is ``smf.ACTIVE_AMPLITUDE``)
--------------------------------------------------------------------------------
smf_update(s, amplitude, phase, eta, out, eps, active) -> int
    ``out = normalize((1 − eta) s + eta Δ(amplitude, phase))``, as
    :func:`sentient_kernels.smf.update`; ``out`` may be ``s``. ``eta`` in [0, 1]
    (not checked). Checks itself: returns 0; 1 if ``s`` or ``out`` is not
    (16,) or ``phase`` is not as long as ``amplitude``; 2 if ``s``,
    ``amplitude`` or ``phase`` holds NaN or ±inf (``out`` untouched on 1, 2).
smf_normalize(s, out, eps) -> None
    ``out = s / max(|s|, eps)``; (16,) each, ``out`` may be ``s``. Shorter
    arrays: undefined. Non-finite ``s``: NaN in ``out``.
smf_entropy(s, eps) -> float
    Entropy (nats) of ``|s_k| / Σ|s_j|``, as :func:`sentient_kernels.smf.entropy`.
    ``s`` (16,), finite; shorter: undefined; non-finite: a meaningless number.
smf_similarity(a, b, eps) -> float
    Cosine of two (16,) fields, 0 if a norm is below ``eps``, as
    :func:`sentient_kernels.smf.similarity_pair`. ``b`` C-contiguous. Returns NaN if a
    shape is not (16,) or a value is NaN or ±inf.
smf_similarity_rows(s, others, out, eps) -> int
    ``out[r] = cosine(s, others[r])`` for ``others`` (M, 16) C-contiguous,
    ``out`` (M,), serially. Returns 0; -1 if ``s`` is not a finite (16,)
    field or a shape is wrong (nothing written); -2 if ``|s| < eps`` (all
    results 0, ``others`` not inspected); else the number of NaN results
    (rows holding NaN or ±inf).

Holographic recall
------------------
holographic_topk_cosine(codes, query, k, normalized, has_mask, valid, out_ids, out_scores) -> int
    The top ``k`` rows of ``codes`` (M, D) float32 by cosine with ``query``
    (D,) float32, as :func:`sentient_kernels.holographic.topk_cosine` computes them
    (the same scores and the same order: score descending, ties to the lower
    row), serially, into ``out_ids`` int64 and ``out_scores`` float64. With
    ``normalized`` the rows are trusted to be unit vectors. With ``has_mask``
    only rows with ``valid[r] != 0`` count (``valid`` uint8 or bool, (M,));
    without it ``valid`` is not read (pass any uint8 array, e.g.
    ``np.empty(0, np.uint8)``). Returns how many it wrote,
    ``min(k, counted rows)`` (0 for ``k < 1``); -1 if ``query`` is not (D,),
    ``valid`` is shorter than M (with ``has_mask``) or an output is shorter
    than that count (nothing written); -2 if ``query`` is all zero or holds
    NaN or ±inf (nothing written); -3 if a counted row holds NaN or ±inf
    (nothing written). ``codes`` C-contiguous; ``query`` any layout. Allocates
    only O(k + D) scratch.

Oscillators (a bank is ``phase``, ``amplitude``, ``frequency``: (N,) each)
--------------------------------------------------------------------------
prsc_run(phase, amplitude, frequency, steps, dt, coupling, decay) -> None
    ``steps`` Euler ticks in place, bit-identical to :func:`sentient_kernels.prsc.run`
    with ``decay = 1 − damping·dt``. Requires equal lengths (undefined
    otherwise), finite values, amplitudes ≥ 0, ``steps ≥ 0``, ``dt > 0`` and
    ``decay`` in [0, 1]; NaN spreads to every phase through the mean field.
    Allocates its scratch and recomputes every sin/cos per call: for many short
    calls on one bank use prsc_run_work.
prsc_new_work(n) -> (trig, parts)
    Work arrays of prsc_run_work for a bank of ``n`` oscillators: ``trig``
    (4, n) and ``parts`` (2, ceil(n / 1024)), float64. One pair per bank.
prsc_run_work(phase, amplitude, frequency, steps, dt, coupling, decay, trig, parts) -> None
    prsc_run with the caller's work arrays kept between calls (as
    :func:`sentient_kernels.prsc.run_with_work`): no allocation, and the start
    pass only when the bank changed since the last call on this work, so a
    one-tick call costs one tick. Bit-identical to prsc_run however the ticks
    are split. Preconditions of prsc_run, and ``trig``/``parts`` from
    prsc_new_work(N) (shorter: undefined).
prsc_coherence(phase, amplitude) -> float
    ``|Σ w e^{iφ}| / Σ w`` with ``w = max(0.1, A)``; ``amplitude`` at least as
    long as ``phase`` (undefined otherwise).
prsc_excite(phase, amplitude, indices, amounts, target_phase, pull, use_target) -> None
    In place, for each ``k``: ``A[i] = min(1, A[i] + amounts[k])`` with
    ``i = indices[k]`` (int64), then, if ``use_target``, ``φ[i]`` moves by
    ``pull`` of the shortest arc to ``target_phase[k]``. Every index must lie
    in [0, N) (**an index out of range writes outside the bank**);
    ``amounts`` and ``target_phase`` at least as long as ``indices`` (read
    only if ``use_target``, but always typed: pass any float64 array then).
prsc_prime_state(phase, amplitude, zero_norm) -> complex128 (N,)
    ``A e^{iφ}`` normalised to unit L2 norm, zeros if the norm is at most
    ``zero_norm`` (pass ``prsc.ZERO_NORM``). Lengths as for coherence.

Observer tick
-------------
run_ticks(phase, amplitude, frequency, s, steps, dt, coupling, decay, eta, coherence_out, entropy_out) -> None
    ``steps`` × (oscillator tick, SMF update of ``s`` (16,), records), in
    place, as :func:`sentient_kernels.tick.run_ticks`. Bank and scalars as for
    :data:`prsc_run`; ``eta`` in [0, 1]. ``coherence_out`` and
    ``entropy_out`` are writeable float64 (m,) with m ≤ steps: they receive
    the values after the last m ticks (a longer array gets them in its last
    ``steps`` entries). Pass ``np.empty(0)`` to record nothing.

excite_and_tick(phase, amplitude, frequency, s, offsets, indices, amounts, targets, pull, dt, coupling, decay, eta, coherence_out, entropy_out, smf_out) -> None
    Per input ``t``: prsc_excite with entries ``offsets[t]:offsets[t + 1]``
    (skipped if none), then run_ticks of one step, recording coherence,
    entropy and ``s`` in ``coherence_out[t]``, ``entropy_out[t]``,
    ``smf_out[t]`` (float64 (n,), (n,), (n, 16); n = offsets.size - 1), as
    :func:`sentient_kernels.tick.excite_and_tick`. Preconditions of
    prsc_excite (**indices in [0, N)**) and run_ticks; offsets
    non-decreasing within the entry arrays.

Text (layout of ``buf``, ``offsets``, ``word_cp``, ``stop_table`` as in :mod:`sentient_kernels.text`)
------------------------------------------------------------------------------------
text_encode(buf, offsets, word_cp, stop_table, min_chars, max_chars, code_dim, bigram_weight, n_bank, k_primes, want_excitation, codes_out, n_tokens_out, ex_re, ex_im) -> None
    What :func:`sentient_kernels.text.encode` computes, into caller-provided outputs:
    ``codes_out`` float32 (n, code_dim) and ``ex_re``, ``ex_im`` (n, n_bank)
    **zero-filled** (codes of empty texts are left as they are; sums are
    added), ``n_tokens_out`` int64 (n,). With ``want_excitation`` false the
    sums are not touched (pass (0, n_bank) arrays). Requires ``buf`` valid
    UTF-8 and every offset on a character boundary (otherwise the scanner may
    read up to 3 bytes past the end of ``buf``),
    ``word_cp`` of at least 128 entries (ASCII bytes index it unchecked),
    ``offsets`` non-decreasing within ``buf``, a ``stop_table`` of
    power-of-two size with at least one 0 slot (**a full table loops
    forever**), 1 ≤ ``code_dim`` < 2**32, ``n_bank ≥ 1`` when
    ``want_excitation``, ``k_primes`` 1 or 2.
text_keywords(buf, offsets, word_cp, stop_table, min_chars, max_chars, cand_start, cand_end, n_cand) -> None
    What :func:`sentient_kernels.text.keywords` computes, into int64 ``cand_start``,
    ``cand_end`` (n, W) and ``n_cand`` (n,). Requirements as for text_encode.
text_excitation_csr(ex_re, ex_im, gain) -> (offsets, indices, amounts, phases)
    As :func:`sentient_kernels.excitation.excitation_csr`; equal shapes (undefined
    otherwise), finite sums.
text_encode_one(buf, word_cp, stop_table, min_chars, max_chars, code_dim, bigram_weight, bank_primes, k_primes, gain, n_dominant) -> (code, n_tokens, indices, primes, amounts, phases, dominant)
    One text (``buf`` alone, no offsets) through text_encode, text_excitation_csr
    and text_dominant_order in one call, as :func:`sentient_kernels.text_one.encode_one`;
    ``bank_primes`` int64 (n_bank ≥ 1), ``gain`` > 0, ``n_dominant ≥ 0``; the
    requirements of text_encode otherwise.
text_dominant_order(amounts, primes, k) -> int64 array
    As :func:`sentient_kernels.excitation.dominant_order`; ``primes`` at least as long as
    ``amounts`` (undefined otherwise). NaN amounts give an unspecified order.

BM25 (segments as :func:`sentient_kernels.segments.pack` lists them; see :mod:`sentient_kernels.bm25`)
-----------------------------------------------------------------------------------
bm25_accumulate(seg_terms, seg_starts, seg_rows, seg_tfs, qterms, qweights, n, has_mask, valid, doc_len, n_docs, avgdl, k1, b, acc, touched, idf_out) -> int
    Adds each query term's BM25 contribution to ``acc[row]`` for the rows
    below ``n`` (and with ``valid[row] != 0`` if ``has_mask``) and returns how
    many rows it touched, listed in ``touched`` (int64) in first-touch order;
    ``idf_out`` (Q,) receives each term's idf. ``qterms`` uint64 distinct,
    ``qweights`` float64 > 0 (Q,); ``valid`` uint8 and ``doc_len`` int32
    covering every row below ``n``; ``acc`` float64 and ``touched`` int64 of at
    least ``n`` entries, **``acc`` all zero on entry** (a touched row is
    recognised by ``acc[row] == 0``). Segments as :func:`sentient_kernels.segments.build_segment`
    makes them, rows disjoint between segments (undefined otherwise).
bm25_accumulate_df(seg_terms, seg_starts, seg_rows, seg_tfs, qterms, qweights, n, has_mask, valid, doc_len, n_docs, avgdl, k1, b, acc, touched, idf_out, df_given) -> int
    :data:`bm25_accumulate` with each query term's document frequency given in
    ``df_given`` (int64 >= 0, (Q,)) instead of counted from the segments (an
    empty ``df_given`` counts them): with ``n_docs`` and ``avgdl``, the statistics
    of a corpus these rows are part of (a shard's), so every score equals the whole
    corpus's. Shorter ``df_given`` than Q but not empty: undefined.
bm25_select(acc, touched, nt, k, out_rows, out_scores) -> int
    The top ``k`` of the ``nt`` touched rows by ``acc`` (ties to the lower
    row) into ``out_rows`` int64 / ``out_scores`` float64 (at least
    ``min(k, nt)`` each); returns how many. **Resets** ``acc`` of the touched
    rows to zero, so the buffers can serve the next query.

Also njit-callable: :func:`sentient_kernels.checks.count_finite` (number of finite
values of a 1-D float64 array), to check inputs inside your own kernel.
"""

from __future__ import annotations

from sentient_kernels import (
    bm25,
    excitation,
    holographic,
    prsc,
    prsc_tick,
    sedenion,
    smf,
    text,
    text_one,
    tick,
)

__all__ = [
    "bm25_accumulate",
    "bm25_accumulate_df",
    "bm25_select",
    "excite_and_tick",
    "holographic_topk_cosine",
    "prsc_coherence",
    "prsc_excite",
    "prsc_new_work",
    "prsc_prime_state",
    "prsc_run",
    "prsc_run_work",
    "run_ticks",
    "sedenion_mul",
    "sedenion_mul_rows",
    "smf_entropy",
    "smf_normalize",
    "smf_similarity",
    "smf_similarity_rows",
    "smf_update",
    "text_dominant_order",
    "text_encode",
    "text_encode_one",
    "text_excitation_csr",
    "text_keywords",
]

sedenion_mul = sedenion._mul_one
sedenion_mul_rows = sedenion._mul_rows_serial

smf_update = smf._update_phase
smf_normalize = smf._normalize
smf_entropy = smf._entropy
smf_similarity = smf._cosine_pair
smf_similarity_rows = smf._similarity_rows_serial

holographic_topk_cosine = holographic._topk_into

prsc_run = prsc_tick._tick_loop_serial
prsc_new_work = prsc_tick._new_work
prsc_run_work = prsc_tick._tick_loop_kept
prsc_coherence = prsc._coherence
prsc_excite = prsc._excite
prsc_prime_state = prsc._prime_state

run_ticks = tick._run_ticks
excite_and_tick = tick._excite_and_tick

text_encode = text._encode_kernel
text_keywords = text._keyword_kernel
text_excitation_csr = excitation._excitation_csr
text_encode_one = text_one._encode_one
text_dominant_order = excitation._dominant_order

bm25_accumulate = bm25._accumulate
bm25_accumulate_df = bm25._accumulate_df
bm25_select = bm25._select
