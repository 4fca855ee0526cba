"""What preemption costs a closed loop's steady state where the KV cache binds: the one home of its counts.

An engine that takes blocks as tokens arrive (vLLM; SGLang past the output it sets aside: :class:`KvPolicy`) admits the
head of its queue wherever the head's prompt fits (vLLM 0.33.0 ``v1/core/sched/scheduler.py`` L1435-1461: the waiting
loop stops at the first request whose blocks do not fit), and where a running request's next blocks do not fit it
preempts the request it admitted last (L938, L970), which goes to the front of the queue and recomputes its prompt and
the output it had when admitted again (``_preempt_request`` L1799-1842).  :class:`specsim.serving.kv_blocks.KvBlocks`
plays that rule request by request; here are its means in a closed loop of ``N`` users of which the cache holds
``N_e`` (:func:`specsim.serving.steady.engine_population`, ``limited_by == "kv cache"``), ``P`` prompt and ``O``
output tokens each, ``A`` of the output set aside at admission (``KvPolicy.ahead_tokens``: 0 for vLLM, 4,096 for
SGLang).

Recompute tokens per request, R.  The ``N - N_e`` users outside the engine keep its queue from running dry, so each
finished request's blocks (its P + O tokens) are taken again at once by admissions from the queue's head, up to what
the admission counts: the blocks the running hold and the output they have set aside (min(tokens still to come, A)
each); what the admissions leave is less than the head needs, and the same in the mean before the next finish (a
stationary fragment).  Between two finishes the running requests grow by the tokens one request decodes, O, of which
the request admitted in its place set aside A: the O - A more were not left room for.  They come first out of what
the running have set aside and not yet used, N_e S with S = A - A^2 / (2 O) a request's mean over its output of
min(O - t, A) (O / 2 where O <= A), and beyond that only by preempting.  So each request's preemptions recompute, in
the mean and as prompt tokens,

    R = min(max(O - A - N_e S, 0), (N - N_e) P)

at most the prompts the queue holds (beyond that the queue runs dry and the growth takes free blocks instead): O for
vLLM (A = 0); 0 for SGLang wherever N_e S exceeds O - A (its retractions then come from the spread of the growth, not
modelled), and 0 where the engine reserves the whole length, the cache does not bind, or there is no prefill (P 0).

Preemptions per request, m, and the tokens each resume prefills, L = R / m.  The newest requests are preempted: one
admitted takes the tail of the running list, and moves up one place a finish (one is admitted behind it per finish:
the N_e held stay N_e).  The growth of one inter-finish interval preempts from the tail requests holding R tokens;
a request in that zone is preempted once an interval and resumed, from the front of the queue, at the next finish,
so it is preempted m times in its first m intervals, running on average half of each: O / N_e tokens an interval to a
running request (every held request decodes alike), half of it before its preemption.  Its k-th resume holds P +
(k - 1/2) O / (2 N_e), on average L = P + m O / (4 N_e); with m = R / L, L^2 - P L - R O / (4 N_e) = 0:

    L = (P + sqrt(P^2 + R O / N_e)) / 2,    m = R / L   (0 where R is 0)

The waits.  A preempted request waits at the front of the queue for the next finish: the rest of one inter-finish
interval 1 / rate, half of it on average, so m / (2 rate) per request, in its decode phase (TPOT, ITL's mean, not its
TTFT).  Each resume prefills L tokens in the token budget left beside the decoding, ceil(L / budget) iterations that
carry the resume's marginal time, and every iteration carries the others' resumes beside their prompts: the recompute
rides in the prefill stream as the prompts do (:func:`specsim.serving.steady.closed_loop_times` adds them up).  The
closed loop's users then still see E2E = N / rate: the preempted waits come out of the queue's wait for admission.

The rule keeps a closed loop in arrival order (the newest running goes to the queue's front, and admissions take the
front: no request overtakes an earlier one, ``tests/test_kv_blocks.py``), so the requests past their first token and
not finished, S of them on average, are every request admitted before the newest ever admitted: the running N_e and
the preempted S - N_e.  By Little a request's decode phase (first token to finish) is S / rate, and its wait preempted
(S - N_e) / rate; the charge above takes S - N_e = m / 2.

Not modelled (the simulator plays them): the longer preempted wait where every request has the same lengths (``vllm
bench serve``'s random dataset at its default ``--random-range-ratio 0.0``, vLLM 0.33.0
``vllm/benchmarks/datasets/datasets.py`` L1900).  Requests admitted together and never preempted then finish together,
so finishes come in waves, a fresh request is first admitted as a wave frees the cache, beside every request admitted
before it, and S runs 1.1-1.9 times N_e where the charge gives N_e + m / 2 (``python benchmarks/steady_vs_sim_kv.py
--split``'s vLLM rows: e.g. H100, 512 users, 1,000 / 8,000, plain: the simulator's 99 running and 189 past their first
token, the charge's 100 and 103.5).  No derivation of S from the rule is at hand (a fluid of one wave a lifetime lets
the frontier run past the wave's fresh requests: a wave is not one block), and none is fitted.  With lengths drawn as
that dataset draws them at ``--range-ratio 0.5``, S falls to 1.0-1.3 times N_e.  Also not modelled: the
fragments of the queue's head; prefix caching, which keeps a preempted request's blocks that no one has taken
(vLLM's is on by default: ``vllm/config/cache.py`` 0.33.0 L257) and so recomputes less; SGLang's estimate of the output
still to come (``new_token_ratio``).

Poisson arrivals past the KV-bound capacity (:func:`saturated_charge`).  Where the rate is above what the engine
serves with the N_e the cache holds, the queue grows without end and the engine runs full: a closed loop whose users
never run out, N infinite, so the queue's prompts never bound the recompute, R = max(O - A - N_e S, 0), and the
waits and resumes are the closed loop's at N_e.  The charge lowers the engine's rate, so the served rate drops from
the capacity to the preempting engine's as the load crosses it (vLLM's throughput falls as a queue builds; the
simulator plays it).  Only the growth of the iterations with no finish is preempted: vLLM grows the running requests' blocks after a finished request's came back, so an iteration after one
with a finish has at least P + O free and does not preempt, and the others preempt the newest, holding about P, where
their growth b exceeds the fragment f in [0, P) the last admissions left: b / P of them with f even, about b tokens.
Per request, over the lambda = b / O finishes an iteration, R = z (O - A - N_e S), z the share of iterations with no
finish (R = O z within -2% to +5% of the simulator's, ``docs/serving.md``; where lengths vary, uniform +-50% or
lognormal, the ledger's recompute a request is O z within 0.02 O, ``benchmarks/preemption_varied.py``).  Where every
request has the same lengths the finishes come in one wave a cycle, and z is derived from it; where lengths vary they
are Poisson's, z = e^-lambda (:func:`unfinished_share`; until 2026-12-07 z was 1 there, the whole output's growth).

Poisson arrivals below that capacity (:func:`queued_charge`).  The mean number in the engine is under N_e, but the
Poisson swings take it there: the steady state's birth-death chain of the number in the system
(:func:`specsim.serving.arrivals.admission_chain`) has the engine full, n >= N_e, a share Q of the time, and, as the
chain moves one up or down at a time, Q of the finishes leave a request queued behind them.  Those finishes are a full
engine's: the queue's head takes the freed blocks, and the growth to the next finish is preempted, the saturated
charge's recompute; the others' blocks stay free and take the growth.  So each request is charged Q times the
saturated counts, m_below = Q m, resumes of the same L.  Q is the exponential chain's (fixed times lower it, by less
than their factor on the wait).  At a small cache (H100 roofline, 16 requests of 200 in and 300 out, plain, at 0.7
of the full engine's rate) it charges 0.191 a request where the simulator preempts 0.155 (standard error 0.004,
``tests/test_arrivals.py``); at 0.9 of a 100-request cache's capacity (1,000 in, 8,000 out) 0.21 where runs of
30,000 arrivals preempt 0.18 (standard error 0.06; runs of 3,000 are too short to meet the swing), and near a 418-request
cache's (1,000 in, 256 out, gamma 3), 0.008 a request at 29/s where the simulator preempts 0.032, nearer its own
capacity (``docs/serving.md``; 0.017 against 0.015 at c0e818c, the whole output charged).

An offline batch of N requests at once (:func:`drained_charge`).  The engine admits on what it counts (the prompt's
blocks for vLLM: :func:`specsim.serving.kv_blocks.admission_tokens`), far more than the N_e it holds at their mean
context, and preempts the newest as they grow: the batch runs as a closed loop of N_e whose queue drains, one request
entering per finish (:func:`specsim.serving.drain.drained_times` has its waits).  While the queue holds q requests
each finish is charged the closed loop's recompute at N_e + q users, R(q) = min(U, q P) with U = max(O - A - N_e S, 0);
the N - N_e finishes before the queue runs dry see q fall from N - N_e to 1, and the last N_e none (the queue is dry:
their growth takes the blocks the others free).  Each request is charged, in the mean over the batch, the counts of
the queue's mean over the drain, q = (N - N_e) / 2, on the N - N_e requests of N that meet a queue:

    m_batch = (N - N_e) / N x m(N_e + (N - N_e) / 2),    L_batch = L(N_e + (N - N_e) / 2)

(R(q) is concave in q, so with Q = N - N_e the mean queue's R overstates the mean of R over q in [0, Q] by
(Q P - U)^2 / (2 Q P) where U < Q P < 2 U, at most U / 4, and by U^2 / (2 Q P) beyond: 1% of U at 512 x 1,000/8,000
tokens on an H100; not at all where Q P <= U.)  The recompute over the batch, (N - N_e) U, is what the simulator
recomputes within 10% on an H100 (``benchmarks/steady_vs_sim_open.py``, Llama-3.1-8B, plain / speculating with
Llama-3.2-1B: 3.30 M / 3.49 M tokens against 3.65 M / 3.55 M at 512 x 1,000/8,000; 1.55 M / 1.67 M against 1.72 M /
1.51 M at 1,024 x 1,000/2,000).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "closed_loop_charge",
    "closed_loop_preemption",
    "drained_charge",
    "queued_charge",
    "saturated_charge",
    "saturated_kv_bound",
    "unfinished_share",
    "wave_of",
]


def closed_loop_preemption(
    policy,
    users: object,
    in_engine: object,
    limited_by: object,
    input_tokens: object,
    output_tokens: object,
    unfinished: object = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(m, L): the preemptions per request of a closed loop of ``users`` whose engine's KV cache, held per ``policy``,
    holds ``in_engine`` of them (``limited_by`` "kv cache" where it binds), and the tokens each resume prefills (the
    module's docstring); (0, 0) where nothing is preempted.  ``unfinished``: the share z of iterations with no finish,
    whose growth alone is preempted (:func:`unfinished_share`; 1, every finish's growth, where not known).

    >>> from specsim.engines.engine import KvPolicy
    >>> m, L = closed_loop_preemption(KvPolicy(0.0, 16), 512, 90, "kv cache", 1000, 8000)
    >>> round(float(m), 2), round(float(L))
    (6.93, 1154)
    >>> [float(x) for x in closed_loop_preemption(KvPolicy(), 512, 90, "kv cache", 1000, 8000)]
    [0.0, 0.0]
    >>> [float(x) for x in closed_loop_preemption(KvPolicy(4096.0, 1), 512, 52, "kv cache", 1000, 8000)]
    [0.0, 0.0]
    >>> [round(float(x)) for x in closed_loop_preemption(KvPolicy(0.0, 16), float("inf"), 90, "kv cache", 0, 8000)]
    [0, 0]
    """
    n, n_e, P, O = (np.asarray(v, dtype=float) for v in (users, in_engine, input_tokens, output_tokens))
    binds = (np.asarray(limited_by) == "kv cache") & bool(policy.preempts)
    ahead = min(float(policy.ahead_tokens), 1e18)
    with np.errstate(divide="ignore", invalid="ignore"):
        set_aside = np.where(O > ahead, ahead - ahead**2 / (2.0 * np.maximum(O, 1.0)), O / 2.0)
    queued = np.maximum(n - n_e, 0.0)
    uncovered = np.maximum(O - ahead - n_e * set_aside, 0.0)
    # users may be inf (a queue that never runs dry: saturated_charge); no prompt then still bounds it at 0, not nan
    # only the growth of the iterations with no finish is preempted, at most what the queue's prompts hold
    uncovered = uncovered * np.asarray(unfinished, dtype=float)
    recomputed = np.where(binds, np.minimum(uncovered, np.where(P > 0.0, queued, 0.0) * P), 0.0)
    held = np.maximum(n_e, 1.0)
    resumed = (P + np.sqrt(P**2 + recomputed * O / held)) / 2.0
    count = np.where(recomputed > 0.0, recomputed / np.maximum(resumed, 1.0), 0.0)
    return count, np.where(count > 0.0, resumed, 0.0)


def closed_loop_charge(
    limits, users, in_engine, limited_by, input_tokens, output_tokens, resume_s, wave=None
) -> tuple | None:
    """What :func:`specsim.serving.steady.closed_loop_times` charges for preemption (its ``preempted``): (m, L, t_r),
    the counts of :func:`closed_loop_preemption` under the KV policy of ``limits`` and t_r = ``resume_s(L)``, a resume's
    marginal prefill time from the caller's step-time source; None where nothing is preempted.  The steady state and
    calibrate-engine's fit both take it here, so a calibration is fitted under the charge its answers carry.

    ``wave``: the loop's :func:`wave_of`.  Where lengths vary (its spread inf) only the growth of the iterations with
    no finish is preempted, e^-lambda of them (:func:`unfinished_share`), as past a Poisson capacity: a queue that
    outlasts the finishes between two is the same full engine (``benchmarks/preemption_varied.py``'s closed loops).
    Where every request has the same lengths a closed loop keeps the whole output's growth (z = 1): its convoys' wave
    is not derived here.

    >>> from specsim.serving.limits import EngineLimits
    >>> from specsim.engines.engine import KvPolicy
    >>> vllm = EngineLimits(kv_policy=KvPolicy(0.0, 16))
    >>> round(float(closed_loop_charge(vllm, 1024, 441, "kv cache", 1000, 256, lambda L: 0.0)[0]), 3)
    0.256
    >>> wave = (441, 256.0, 7.75, np.inf)  # lengths that vary: e^-(441 / 256) of the growth
    >>> round(float(closed_loop_charge(vllm, 1024, 441, "kv cache", 1000, 256, lambda L: 0.0, wave)[0]), 3)
    0.046
    """
    policy = limits.kv_policy
    count, resumed = closed_loop_preemption(policy, users, in_engine, limited_by, input_tokens, output_tokens)
    if wave is not None and np.any(count > 0.0):
        z = unfinished_share(*wave[:3], np.inf, input_tokens, output_tokens, input_tokens)
        z = np.where(np.isinf(np.asarray(wave[3], dtype=float)), z, 1.0)
        count, resumed = closed_loop_preemption(policy, users, in_engine, limited_by, input_tokens, output_tokens, z)
    if not np.any(count > 0.0):
        return None
    return count, resumed, resume_s(resumed)


#: The grid (in standard deviations) over which :func:`_edge` integrates a smeared wave's edge: the integrands fall as
#: the normal's tail, under 1e-15 of their start past 8.
_EDGE_GRID = np.linspace(0.0, 8.0, 801)


def _edge(per_iteration: np.ndarray) -> np.ndarray:
    """The iterations with a finish that one edge of a wave adds where its finishes, G an iteration inside it, are
    spread by a normal of standard deviation 1 (in those units): the finishes in an iteration are Poisson, G Phi(-u)
    at u past the edge and G Phi(u) inside it, so the edge adds int_0^inf 1 - exp(-G Phi(-u)) du and loses
    int_0^inf exp(-G Phi(u)) - exp(-G) du (the wave's own iterations are counted as all with a finish: exp(-G) is
    under 0.2% at the 6.5 prompts and more a budget of 8,192 tokens holds of 1,000-token prompts).

    >>> [round(float(x), 3) for x in _edge(np.array([1.0, 6.5, 50.0]))]
    [0.176, 1.249, 2.245]
    """
    from scipy.special import ndtr

    # Each value once (a serving model's cells share a few: 2 distinct of 4,824 in a watch's alert rules), each its own
    # row of the grid as before, so every answer is the one it had to the bit.
    G = np.asarray(per_iteration, dtype=float)
    values, at = np.unique(G, return_inverse=True)
    G, u = values[:, None], _EDGE_GRID
    outside = 1.0 - np.exp(-G * ndtr(-u))
    inside = np.exp(-G * ndtr(u)) - np.exp(-G)
    return np.trapezoid(outside - inside, u, axis=-1)[at].reshape(np.shape(per_iteration))


#: Where :func:`unfinished_share`'s damped iteration stops: no share moved by more than this in its last step (it halves
#: the distance at least each step where the map falls as z rises, so the answer is this close to the fixed point).
SETTLED = 1e-15


def unfinished_share(
    in_engine, cycle, per_iteration, rounds_sd, input_tokens, output_tokens, resumed_tokens, iterations: int = 200
) -> np.ndarray:
    """z, the share of a full engine's iterations with no finish (the growth of those alone is preempted: the module's
    docstring), where the queue never runs dry: the ``in_engine`` requests finish once a ``cycle`` of C iterations,
    lambda = N_e / C an iteration; the iterations' budget completes G = ``per_iteration`` prompts; each request's
    rounds spread by ``rounds_sd`` a cycle where every request has the same lengths (0 plain; inf where lengths vary);
    ``resumed_tokens`` L, what a resume prefills.

    Where lengths vary, no wave: the requests whose prompts went through the budget together finish apart (their
    outputs differ), so each iteration's finishes are a sum of many requests' small chances, Poisson's, lambda an
    iteration, and z = e^-lambda.  Read off the simulator's ledger (``benchmarks/preemption_varied.py``: outputs and
    prompts uniform +-50% or lognormal, 1,000 in and 256 or 1,024 out, plain and EAGLE-3, H100): the finishes an
    iteration have variance over mean 0.93-1.02, and the share with none is e^-lambda of their own lambda within 0.01.

    One wave a cycle.  Every finish is followed by an admission from the queue's head (vLLM admits after the running
    grow, while a prompt fits), and the prompts complete at most G an iteration, so the requests never preempted
    finish in a wave: their prompts went through the budget back to back, G an iteration, and they finish a cycle
    later in as many iterations, lambda (1 - p1) / G of them, p1 the share of requests preempted at least once.
    Speculating, each one's rounds spread by s, so each of the wave's two edges adds e(G) s iterations with a finish
    (:func:`_edge`): the wave's share w = lambda (1 - p1) / G + 2 e(G) s / C.  A preempted request waits at the queue's
    front for the next finish and decodes its rest after its resume: it finishes off the wave, once, and alone (its
    wait moved it; no two waited alike), p1 lambda lone finishes an iteration, spread over the iterations the wave
    leaves, (1 - w) (1 - exp(-p1 lambda / (1 - w))) of them.  So z = (1 - w) exp(-p1 lambda / (1 - w)).

    p1 from the counts.  m = R / L = O z / L preemptions a request (R = O z: the module's docstring), each preempted
    request nu = m / p1 times: it is preempted again where a lone finish frees room for the queue's head, the request
    just preempted, which is then the newest again: with the fragment f even over [0, P), a finish's P + O less the
    growth b = lambda O of its iteration holds the head's P + (L - P) where f >= b - O + L - P, r = 1 - (b - O + L -
    P) / P of the time (in [0, 1]), so nu = 1 + r and p1 = min(m / (1 + r), 1).  Solved by damped iteration from z =
    1 (the map is a contraction where it matters: z' falls as z rises).

    >>> z = unfinished_share(441, 256.0, 7.75, 0.0, 1000, 256, 1000)  # H100, 1,000 in, 256 out, plain
    >>> round(float(z), 3)
    0.654
    >>> round(float(unfinished_share(441, 256.0, 7.75, np.inf, 1000, 256, 1000)), 3)  # lengths that vary: e^-lambda
    0.179
    """
    n_e, C, G, sd, P, O, L = np.broadcast_arrays(
        *(
            np.asarray(v, dtype=float)
            for v in (in_engine, cycle, per_iteration, rounds_sd, input_tokens, output_tokens, resumed_tokens)
        )
    )
    C, G, P, L = np.maximum(C, 1.0), np.maximum(G, 1e-9), np.maximum(P, 1.0), np.maximum(L, 1.0)
    lam = n_e / C
    refill = np.clip(1.0 - (lam * O - O + L - P) / P, 0.0, 1.0)
    known = np.isfinite(sd)
    edges = np.where(known, 2.0 * _edge(G) * np.where(known, sd, 0.0) / C, 0.0)
    z, new = np.ones_like(lam), np.ones_like(lam)
    for _ in range(iterations if np.any(known) else 0):
        p1 = np.minimum(O * z / (L * (1.0 + refill)), 1.0)
        gap = np.clip(1.0 - lam * (1.0 - p1) / G - edges, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            new = np.where(gap > 0.0, gap * np.exp(-p1 * lam / np.where(gap > 0.0, gap, 1.0)), 0.0)
        z, before = 0.5 * (z + new), z
        if np.max(np.abs(z - before), initial=0.0) <= SETTLED:  # a share, to well below any digit printed of it
            break
    # (where the wave takes every iteration the map is 0 and damping leaves 2^-iterations: none, exactly); where lengths
    # vary the finishes are Poisson's, lambda an iteration, and e^-lambda of the iterations have none
    return np.where(known, np.where(new > 0.0, z, 0.0), np.exp(-lam))


def wave_of(population, limits, gamma, fixed_lengths, input_tokens, acceptance, output_tokens) -> tuple:
    """(N_e, C, G, s): what :func:`unfinished_share` takes of a full engine's closed-loop ``population``
    (:func:`specsim.serving.steady.closed_population`): its requests, its cycle in iterations, the prompts of
    ``input_tokens`` the budget beside N_e decoding at ``gamma`` completes an iteration, and one cycle's spread of a
    request's rounds where every request has the same lengths (``fixed_lengths``): speculating at ``acceptance``,
    :func:`specsim.serving.rounds.decode_rounds_sd` of its ``output_tokens`` less the first; 0 plain; inf where lengths
    vary."""
    from specsim.serving.rounds import decode_rounds_sd

    n_e, g = np.asarray(population.in_engine, dtype=float), np.asarray(gamma)
    per_iteration = np.maximum(limits.prefill_budget(n_e, g), 1.0) / np.maximum(np.asarray(input_tokens, float), 1.0)
    fixed = np.asarray(fixed_lengths, dtype=bool)
    spread = decode_rounds_sd(acceptance, g, np.asarray(output_tokens, dtype=float) - 1.0) if np.any(g > 0) else 0.0
    sd = np.where(fixed, np.where(g > 0, spread, 0.0), np.inf)
    return n_e, population.cycle, per_iteration, sd


def saturated_charge(limits, in_engine, kv_bound, input_tokens, output_tokens, resume_s, wave=None) -> tuple | None:
    """:func:`closed_loop_charge` of Poisson arrivals past the engine's capacity where ``kv_bound`` (its KV cache, not
    max_num_seqs, holds the ``in_engine`` it runs full at): the closed loop of users that never run out (the module's
    docstring), which :func:`specsim.serving.steady.steady_state` serves such a load as, of which only the growth of
    the iterations with no finish is preempted, z of them (:func:`unfinished_share` of ``wave``, :func:`wave_of`'s;
    z = 1 where None).

    >>> from specsim.serving.limits import EngineLimits
    >>> from specsim.engines.engine import KvPolicy
    >>> vllm = EngineLimits(kv_policy=KvPolicy(0.0, 16))
    >>> m, L, t_r = saturated_charge(vllm, 90, True, 1000, 8000, lambda L: 0.0)
    >>> round(float(m), 2), round(float(L))
    (6.93, 1154)
    >>> saturated_charge(vllm, 90, False, 1000, 8000, lambda L: 0.0) is None
    True
    """
    limited = np.where(np.asarray(kv_bound, dtype=bool), "kv cache", "")
    policy = limits.kv_policy
    count, resumed = closed_loop_preemption(policy, np.inf, in_engine, limited, input_tokens, output_tokens)
    if not np.any(count > 0.0):
        return None
    if wave is not None:
        z = unfinished_share(*wave, input_tokens, output_tokens, np.where(count > 0.0, resumed, input_tokens))
        count, resumed = closed_loop_preemption(policy, np.inf, in_engine, limited, input_tokens, output_tokens, z)
        if not np.any(count > 0.0):
            return None
    return count, resumed, resume_s(resumed)


def queued_charge(
    limits, queued, in_engine, kv_bound, input_tokens, output_tokens, resume_s, wave=None
) -> tuple | None:
    """:func:`saturated_charge`'s counts for Poisson arrivals below the capacity of the engine whose KV cache holds
    ``in_engine`` where ``kv_bound``, the engine full a share ``queued`` of the time
    (:func:`specsim.serving.arrivals.admission_chain`'s Q): (Q m, L, t_r), None where nothing is charged (the module's
    docstring).

    >>> from specsim.serving.limits import EngineLimits
    >>> from specsim.engines.engine import KvPolicy
    >>> vllm = EngineLimits(kv_policy=KvPolicy(0.0, 16))
    >>> m, L, t_r = queued_charge(vllm, 0.25, 90, True, 1000, 8000, lambda L: 0.0)
    >>> round(float(m), 2), round(float(L))  # a quarter of the full engine's 6.93
    (1.73, 1154)
    >>> queued_charge(vllm, 0.0, 90, True, 1000, 8000, lambda L: 0.0) is None
    True
    """
    q = np.asarray(queued, dtype=float)
    if not np.any(q > 0.0):
        return None
    charged = saturated_charge(limits, in_engine, kv_bound, input_tokens, output_tokens, resume_s, wave)
    if charged is None or not np.any(charged[0] * q > 0.0):
        return None
    return charged[0] * q, charged[1], charged[2]


def saturated_kv_bound(limited_by, in_engine, limits, gamma) -> np.ndarray:
    """Where the full engine that Poisson arrivals past its capacity fill is held by its KV cache (``in_engine`` under
    the max_num_seqs of ``limits`` at ``gamma``, nothing else ``limited_by`` it): :func:`saturated_charge`'s
    ``kv_bound``, for the answers at a rate and calibrate-engine's runs at one alike.

    >>> from specsim.serving.limits import EngineLimits
    >>> saturated_kv_bound(np.array(["", "", "no room"]), np.array([90.0, 256.0, 1.0]), EngineLimits(), 0).tolist()
    [True, False, False]
    """
    return (np.asarray(limited_by) == "") & (np.asarray(in_engine) < limits.seqs(np.asarray(gamma) > 0))


def drained_charge(limits, requests, in_engine, limited_by, input_tokens, output_tokens, resume_s) -> tuple | None:
    """:func:`closed_loop_charge` of an offline batch of ``requests`` at once whose engine's KV cache holds
    ``in_engine`` of them: the counts at the drain's mean queue, (N - N_e) / 2 beyond the N_e, spread over the batch's
    N requests of which N - N_e meet a queue (the module's docstring); None where nothing is preempted.

    >>> from specsim.serving.limits import EngineLimits
    >>> from specsim.engines.engine import KvPolicy
    >>> vllm = EngineLimits(kv_policy=KvPolicy(0.0, 16))
    >>> m, L, t_r = drained_charge(vllm, 512, 90, "kv cache", 1000, 8000, lambda L: 0.0)
    >>> round(float(m), 2), round(float(L))
    (5.71, 1154)
    >>> drained_charge(vllm, 90, 90, "kv cache", 1000, 8000, lambda L: 0.0) is None
    True
    """
    n, n_e = np.asarray(requests, dtype=float), np.asarray(in_engine, dtype=float)
    queued = np.maximum(n - n_e, 0.0)
    charged = closed_loop_charge(
        limits, n_e + queued / 2.0, in_engine, limited_by, input_tokens, output_tokens, resume_s
    )
    if charged is None:
        return None
    count, resumed, resume = charged
    return count * queued / np.maximum(n, 1.0), resumed, resume
