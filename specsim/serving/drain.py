"""An offline batch of N requests at once in an engine whose KV cache holds N_e < N of them and that admits on what it
counts (the prompt's blocks for vLLM) and preempts the newest as they grow: a closed loop of N_e whose queue drains.
The closed loop's own times (:func:`specsim.serving.steady.closed_loop_times`, charged as its queue drains:
:func:`specsim.serving.preemption.drained_charge`) come in; this module adds what the drain waits
(:func:`drained_times`).  :func:`specsim.serving.steady.offline_times` has an offline batch's times where the engine
runs it in waves instead (the cache does not bind, or the engine does not preempt).
"""

from __future__ import annotations

import numpy as np

__all__ = ["batch_drains", "drained_times"]


def batch_drains(limited_by, limits) -> np.ndarray:
    """Where an offline batch drains through a closed loop rather than running in waves: what limits its engine is the
    KV cache (``limited_by``, :func:`specsim.serving.steady.engine_population`) and the engine of ``limits`` preempts
    (admits on the prompts).  The one rule, for the answers and calibrate-engine."""
    return (np.asarray(limited_by) == "kv cache") & bool(limits.kv_policy.preempts)


def drained_times(
    requests: object, in_engine: object, admitted: object, loop: dict, burst_s: object, output_tokens
) -> dict:
    """The times of an offline batch of ``requests`` N at once in an engine that admits on what it counts (the prompt's
    blocks for vLLM) and preempts the newest as they grow: a closed loop of the ``in_engine`` N_e its KV cache holds
    whose queue drains (:mod:`specsim.serving.preemption`), ``loop`` that closed loop's times with no queue wait
    (:func:`specsim.serving.steady.closed_loop_times`, charged :func:`~specsim.serving.preemption.drained_charge`), at
    its rate r.

    Its requests enter the loop in order, one per finish: the j-th after the first N_e enters at the j-th finish, j / r
    after the start, so the batch waits sum_j j / r = (N - N_e)(N - N_e + 1) / (2 r) in all.  The ``admitted`` N_0 the
    engine takes at once (:func:`specsim.serving.steady.admitted_at_once`) prefill in the first burst (``burst_s``,
    their mean time to a first token), and those of them past the N_e are preempted as the others grow and wait at the
    queue's front with their first token out: their waits, (N_0 - N_e)(N_0 - N_e + 1) / (2 r), fall in the decode phase
    (TPOT); the N - N_0 admitted later wait before their first token (TTFT, then the loop's own).  The last enters at
    (N - N_e) / r and ends the batch a loop's end-to-end latency later (the makespan: N / r where the loop's latency is
    N_e / r).  Every term is a sum of non-negative waits over a positive rate: none can go negative or diverge.

    >>> loop = {"tpot_s": 0.03, "itl_s": 0.03, "ttft_s": 0.1, "e2e_s": 10.1, "requests_per_s": 10.0,
    ...         "output_tokens_per_s": 3330.0, "mean_batch": 100.0, "prefill_share": 0.1}
    >>> t = drained_times(300, 100, 250, loop, 1.0, 334)
    >>> # waits 200 x 201 / 20 / 300 = 6.7 s a request, 150 x 151 / 20 / 300 = 3.775 of them after a first token
    >>> [round(float(t[k]), 4) for k in ("ttft_s", "tpot_s", "requests_per_s")]
    [3.775, 0.0413, 9.9668]
    """
    N, n_e, O = (np.asarray(v, dtype=float) for v in (requests, in_engine, output_tokens))
    n_0 = np.clip(np.asarray(admitted, dtype=float), n_e, N)
    rate = np.asarray(loop["requests_per_s"], dtype=float)
    entering, early = N - n_e, n_0 - n_e
    stalled = early * (early + 1.0) / (2.0 * rate) / N  # per request of the batch, in its decode phase
    waited = entering * (entering + 1.0) / (2.0 * rate) / N - stalled  # ... and before its first token
    ttft = (n_0 * np.asarray(burst_s, dtype=float) + (N - n_0) * loop["ttft_s"]) / N + waited
    decoding = loop["tpot_s"] * (O - 1.0)
    makespan = entering / rate + loop["e2e_s"]
    served = N / makespan / rate  # the batch's rate over the loop's
    return {
        "tpot_s": (decoding + stalled) / (O - 1.0),
        "itl_s": loop["itl_s"] * (decoding + stalled) / decoding,
        "ttft_s": ttft,
        "e2e_s": ttft + decoding + stalled,
        "requests_per_s": N / makespan,
        "output_tokens_per_s": N * O / makespan,
        "mean_batch": loop["mean_batch"] * served,
        "prefill_share": loop["prefill_share"] * served,
    }
