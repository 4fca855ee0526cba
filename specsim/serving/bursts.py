"""A closed loop's first burst: how its prompts, sent at once, come through the token budget, and how long its users
stay clustered after it.

A benchmark's users start at once.  Their prompts complete one budget's worth an iteration
(:func:`burst_iterations`), those left of the burst ride beside the first to decode (:func:`burst_riding`), and the
users' phases start within the burst's span and part only as their rounds differ (:func:`burst_clustering`).  The
steady state (:mod:`specsim.serving.steady`) charges a finite run's waves with them.  Each kept per population
(read-only): a calibration's fit asks for its runs' same bursts at every step.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["burst_clustering", "burst_iterations", "burst_riding"]


def burst_iterations(count: object, prompt_tokens: object, budget: float) -> np.ndarray:
    """The mean iterations until a prompt of ``count`` sent at once completes, each iteration taking ``budget`` of their
    ``prompt_tokens`` tokens in arrival order (chunked prefill): the i-th completes in iteration ceil(i P / budget).

    >>> [round(float(x), 2) for x in burst_iterations([1, 1, 32], [716, 8192, 716], 2048)]
    [1.0, 4.0, 6.28]
    """
    n, x = np.broadcast_arrays(np.asarray(count, dtype=float), np.asarray(prompt_tokens, dtype=float) / float(budget))
    return _bursts(n.shape, tuple(n.ravel().tolist()), tuple(x.ravel().tolist()))[0].copy()


def burst_riding(count: object, prompt_tokens: object, budget: float) -> np.ndarray:
    """The mean prompts of a burst (``count`` sent at once, as :func:`burst_iterations` cuts them) that ride in the
    iterations after a prompt of it completes: the i-th completes in iteration k_i = ceil(i P / budget), after which
    the burst's N P - k_i budget tokens are left (none where it completes in the last), so the mean of
    max(N - k_i budget / P, 0) prompts' worth.  Those decode beside them (a benchmark's first wave, :func:`specsim.serving.steady.closed_loop_times`).

    >>> [round(float(x), 3) for x in burst_riding([4, 4, 64], [1000, 3000, 1024], 8192)]
    [0.0, 0.635, 28.0]
    """
    n, x = np.broadcast_arrays(np.asarray(count, dtype=float), np.asarray(prompt_tokens, dtype=float) / float(budget))
    return _bursts(n.shape, tuple(n.ravel().tolist()), tuple(x.ravel().tolist()))[1].copy()


def burst_clustering(span: object, cycle: object, rounds_sd: object, waves: object) -> np.ndarray:
    """kappa, the mean over a closed loop's requests after its first burst of how much more often than uniformly spread
    users another user's request arrives in the iteration a request arrives in (1: spread uniformly over the cycle).

    A run's users start at once: their prompts complete over the burst's ``span`` iterations (N P / budget), so their
    phases in a ``cycle`` of C iterations start uniform over that span, and each cycle each user's phase moves by its
    own rounds' chance (``rounds_sd`` iterations a cycle, :func:`specsim.serving.rounds.decode_rounds_sd`): independent random walks, after j
    cycles the uniform spread of the span widened by a normal one of variance j sd^2, wrapped on the cycle.  The density
    of the others about a user's phase is then C int f^2 = 1 + 2 sum over m >= 1 of sinc^2(m span / C) exp(-a_m j),
    a_m = (2 pi m sd / C)^2 (its Fourier series), averaged here over the requests of waves j = 1 .. W - 1 (W =
    ``waves``, the run's requests over its users; the last wave a part one), the sum over j geometric.  Every request
    of the same lengths (a benchmark's random dataset) speculating, the users part by acceptance alone and a run of a
    few thousand requests stays clustered (128 users of 1,000 in and 256 out, alpha 0.8, gamma 3, a draft model: 3.9 at
    its second wave, 2.0 at its tenth, 1.1 at its 41st);
    where lengths vary (``rounds_sd`` inf) or after many cycles it is 1.

    >>> [round(float(k), 2) for k in burst_clustering(16.9, 88.8, [3.82, 3.82, np.inf], [8.0, 1000.0, 8.0])]
    [2.88, 1.03, 1.0]
    """
    K, C, sd, W = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (span, cycle, rounds_sd, waves)))
    return _clustering(K.shape, *(tuple(v.ravel().tolist()) for v in (K, C, sd, W))).copy()


@functools.lru_cache(maxsize=256)
def _clustering(shape: tuple, span: tuple, cycle: tuple, rounds_sd: tuple, waves: tuple) -> np.ndarray:
    """:func:`burst_clustering` of the flattened ``span``, ``cycle``, ``rounds_sd`` and ``waves``, kept (read-only): it
    depends on a closed loop's population alone, which a calibration's fit asks for again at every step in the engine's
    terms (12% of calibrate-engine --plan examples/bench/plan/plan.yaml's CPU time was this sum over 64 harmonics)."""
    K, C, sd, W = (np.array(v, dtype=float).reshape(shape) for v in (span, cycle, rounds_sd, waves))
    m = np.arange(1.0, 65.0).reshape((-1,) + (1,) * K.ndim)  # harmonics: sinc^2 falls as 1/m^2, the sum to 1e-3
    with np.errstate(invalid="ignore", over="ignore"):
        a = (2.0 * np.pi * m * sd / np.maximum(C, 1.0)) ** 2
        r = np.exp(-a)
        full = np.maximum(np.floor(W) - 1.0, 0.0)  # whole waves j = 1 .. floor(W) - 1, then a part wave floor(W)
        whole = np.where(a > 1e-12, r * -np.expm1(-a * full) / np.where(a > 1e-12, -np.expm1(-a), 1.0), full)
        part = np.where(W > 1.0, (W - np.floor(W)) * np.exp(-a * np.floor(W)), 0.0)
        excess = 2.0 * np.sum(np.sinc(m * K / np.maximum(C, 1.0)) ** 2 * (whole + part), axis=0)
    out = np.where(W > 1.0, 1.0 + np.nan_to_num(excess) / np.maximum(W - 1.0, 1e-12), 1.0)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=256)
def _bursts(shape: tuple, count: tuple, x: tuple) -> np.ndarray:
    """(:func:`burst_iterations`, :func:`burst_riding`) of ``count`` bursts of ``x`` budgets each, kept (read-only): a
    calibration's fit asks for its runs' same bursts at every step."""
    m, x = np.maximum(np.array(count).astype(int), 1), np.array(x, dtype=float)
    out = np.stack([np.ones(m.size), np.zeros(m.size)])
    if m.size:
        k = np.arange(1, int(m.max()) + 1, dtype=float)
        rows = max(1, 4_000_000 // k.size)  # bursts at once, a few million requests
        for s in range(0, m.size, rows):
            # the sums are of whole numbers, so exact in any order
            inside, xs = k <= m[s : s + rows, None], x[s : s + rows, None]
            it = np.where(inside, np.ceil(k * xs - 1e-9), 0.0)
            out[0, s : s + rows] = it.sum(axis=-1) / m[s : s + rows]
            # the budgets' tokens after the i-th prompt's iteration, in prompts (none without prompt tokens)
            left = np.where(inside & (xs > 0), np.maximum(m[s : s + rows, None] - it / np.where(xs > 0, xs, 1.0), 0), 0)
            out[1, s : s + rows] = left.sum(axis=-1) / m[s : s + rows]
    out[0] = np.maximum(out[0], 1.0)
    out = out.reshape((2, *shape))
    out.flags.writeable = False
    return out
