"""What a Poisson arrival waits for before its prompt runs: the rest of the iteration it lands in
(:func:`landed_iteration_s`) and, where the engine is full, admission (:func:`admission_wait_s`), below capacity.

An engine admits a request only where its limits leave room: ``max_num_seqs``, or the requests its KV cache holds as
its policy counts them (:func:`specsim.serving.steady.engine_population`: the whole length where it reserves,
TensorRT-LLM; the prompt and up to 4,096 promised tokens, SGLang).  Below capacity the mean number in the engine is
under that bound c, but Poisson arrivals swing it past, and an arrival that finds the engine full queues, first come
first served, until a request ends.  The mean-value steady state has no such term; this module is its one home.

The engine is taken as its flow-equivalent server (Chandy, Herzog & Woo 1975, "Parametric analysis of queuing
networks", IBM J. Res. Dev. 19(1), 36-42): with n requests in it, they leave at r(n), the rate of a closed loop of n
users (the serving model's own, :func:`specsim.serving.steady.closed_loop_times`), which grows more slowly than n as
each iteration carries more; past c, at r(c), the engine's capacity.  Arrivals at lambda make the number in the
system a birth-death chain:

    pi(n) = pi(0) prod_{k=1..n} lambda / r(min(k, c)),    rho = lambda / r(c) < 1 below capacity
    L_q   = sum_{n > c} (n - c) pi(n) = pi(c) rho / (1 - rho)^2
    W_M   = L_q / lambda                                   (Little's law)

which is exact where the times in the engine are exponential.  They are not: a benchmark's requests all have the same
lengths, and every request in the engine moves one round an iteration whatever the batch, so each needs a fixed number
of iterations; the batch sets only how long an iteration lasts, the same for all of them (a processor shared by at most
c, whose speed falls as it fills).  Counted in the engine's own work, such an engine is c servers of fixed service
times, and its queue's wait over the exponential chain's is that of M/D/c over M/M/c at c and rho = lambda / r(c).
Played out (a fixed-work engine of c = 32 at the r(n) of vLLM's 8B engine below, 2 x 10^6 Poisson arrivals a row;
``benchmarks/fixed_work_engine.py``) it is 0.658, 0.584, 0.545 and 0.527 of the exponential chain's at rho 0.7, 0.8, 0.9 and 0.95, where
M/D/c's exact ratio is 0.658, 0.584, 0.532 and 0.514, and Cosmetatos' closed form for it (G. P. Cosmetatos 1976, "Some
approximate equilibrium results for the multi-server queue (M/G/r)", Oper. Res. Q. 27(3), 615-620)

    R_D(c, rho) = 1/2 [1 + (1 - rho)(c - 1)(sqrt(4 + 5c) - 2) / (16 rho c)],   at most 1 (M/M/c's own; it rises past 1
                                                                                 only where rho is small and W_M nil)

0.640, 0.582, 0.536 and 0.517: above the 1/2 of heavy traffic (Kingman; Allen and Cunneen's factor, A. O. Allen,
*Probability, Statistics, and Queueing Theory*, 2nd ed., 1990) where the engine fills only in a Poisson burst, 1/2
exactly at c = 1 (M/D/1, Pollaczek-Khinchine).  Where a request's time also spreads, with squared coefficient of
variation c_s^2, the factor runs linearly in c_s^2 from the fixed times' to the exponential's, as Allen and Cunneen's
(1 + c_s^2) / 2 does from 1/2:

    W = W_M [c_s^2 + (1 - c_s^2) R_D(c, rho)]

(c_s^2 0 for lengths fixed; 1, no correction, where they are drawn and their spread is not known to the steady state).
W is never negative and grows without bound as rho -> 1; the steady state's own rule marks a load past capacity (TTFT
inf) a little before r(c) (at 0.97-0.99 of it in ``docs/serving.md``'s cases, where W is some seconds), as it did.  The
engine's speed falling as it fills is what M/M/c with a fixed service time misses: with the N_e the
cache holds as servers and the mean load's time in the engine, Erlang C gave 0.6 s where the simulator waited 2.1 s
(``docs/serving.md``).

r(n) is the closed loop's at ``GRID`` numbers from 1 to c, interpolated linearly in n between them (it is smooth in n);
the birth-death sums run over every whole n up to c.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "GRID",
    "NEAR",
    "NEGLIGIBLE_S",
    "admission_grid",
    "admission_said",
    "admission_chain",
    "admission_wait_s",
    "cells_alone",
    "cells_apart",
    "fixed_times_factor",
    "landed_iteration_s",
    "on_grid",
]

#: Numbers of requests in the engine at which the closed loop's rate is computed, from 1 to c.
GRID = 24
#: The rates are asked first up to this many times the mean number in the engine (:func:`admission_wait_s`) ...
NEAR = 1.25
#: ... and further only where the wait bounded from there may exceed this, seconds (below any printed digit of a TTFT).
NEGLIGIBLE_S = 1e-5


def admission_grid(bound: object) -> np.ndarray:
    """The numbers in the engine, from 1 to ``bound`` (c, per cell), at which :func:`admission_wait_s` takes the closed
    loop's rate: ``GRID`` of them on a new last axis.

    >>> admission_grid(47.0)[[0, 1, -1]].tolist()
    [1.0, 3.0, 47.0]
    """
    c = np.asarray(bound, dtype=float)[..., None]
    return 1.0 + (c - 1.0) * np.linspace(0.0, 1.0, GRID)


def on_grid(x: object, grid: np.ndarray) -> object:
    """``x`` (per load on its last axis, or one for all loads) beside each point of ``grid`` (loads on its last axis but
    one, the grid's points on its last): each load's value repeated once per point, the points of one load together;
    a scalar or an object that is no array (an acceptance model) as it is.

    >>> on_grid(np.array([1.0, 2.0]), np.zeros((2, 3))).tolist(), on_grid(0.8, np.zeros((2, 3)))
    ([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 0.8)
    """
    if not isinstance(x, np.ndarray) or x.ndim == 0:
        return x
    return np.repeat(np.broadcast_to(x, (*x.shape[:-1], grid.shape[-2])), grid.shape[-1], axis=-1)


def admission_wait_s(
    rate_per_s: object, bound: object, in_engine: object, rates_of, service_scv: object = 0.0
) -> np.ndarray:
    """:func:`admission_chain`'s mean wait alone.

    >>> round(float(admission_wait_s(2.0, 4.0, 2.0, admission_grid, 1.0)), 6), round(2 / 23, 6)  # M/M/4 at 2/s
    (0.086957, 0.086957)
    """
    return admission_chain(rate_per_s, bound, in_engine, rates_of, service_scv)[0]


def admission_chain(
    rate_per_s: object,
    bound: object,
    in_engine: object,
    rates_of,
    service_scv: object = 0.0,
    queued=None,
    rates_in=None,
) -> tuple[np.ndarray, np.ndarray]:
    """(W, Q): the mean wait for admission, seconds, of Poisson arrivals at ``rate_per_s`` to an engine that holds at most
    ``bound`` (c) requests (the module's docstring); ``rates_of(top)`` gives the rates, per second, at which requests
    leave with the numbers of :func:`admission_grid` (``top``) in the engine (last axis); ``service_scv`` the squared
    coefficient of variation of a request's time in the engine (the factor :func:`fixed_times_factor`).  inf where the
    rate reaches the full engine's with a queue behind it, r_q.

    ``queued``: (floor_of, rate), where the full engine with a queue behind it leaves at r_q, not r(c), the rate of c
    with none queued: an engine that preempts where its KV cache is full preempts only where a queue's head takes a
    finished request's blocks (:mod:`specsim.serving.preemption`), so it serves r_q below r(c), and that is the
    capacity a Poisson load crosses (the tail's rho = lambda / r_q).  ``rate()`` gives r_q, asked only where the grid
    reaches c; ``floor_of(r)`` a bound under r_q from a bound r under r(c) (the grid's r(top)), which the bound that
    stops the grid short of c takes for the tail, so that a load past r_q is never stopped short of c (and the source
    is not asked about batches near c where the load is far under both).  None: r_q is r(c).

    Q, the share of the chain's time with the engine full, P(n >= c) = pi(c) / (1 - rho) (Erlang C where r(n) = n mu):
    by PASTA an arrival's chance of finding it full, and, as the chain moves by one up and down, the share of finishes
    that leave a request queued behind them and so admit it in their place
    (:func:`specsim.serving.preemption.queued_charge` charges those finishes a full engine's preemptions).  It is the
    exponential chain's: the fixed times' factor is the wait's (M/D/c's mean wait over M/M/c's), not known for
    P(n >= c), which fixed times lower by less than it (their wait once queued is shorter too).  0 where the wait is
    (the rates not asked up to c), 1 past r(c).

    The rates are first asked up to ``NEAR`` times ``in_engine`` (the mean number in it), the batches the load's answer
    already asks of the step-time source: r grows with n, so past there the chain's weights fall at least as fast as
    (lambda / r(top))^n, which bounds the wait; only where that bound is above ``NEGLIGIBLE_S`` are the rates asked
    further, a quarter further each time, and c at last (so the source is not asked, nor notes anything, about batches
    that cannot change the answer).

    ``rates_in(top, alone)``: the rates of some cells alone, (cell, grid point), ``alone(x)`` giving any input at those
    cells (:func:`cells_alone`), where the source can give them (None: it cannot).  A pass after the first asks them of the cells still growing
    only, and the cells that stopped are asked once more with the rest at their last tops: the answer is that last
    pass's, every cell asked at its top with every other as before (the rates of a cell are not quite apart from the
    others': iterations that stop where all have settled, sums over a grid as long as the largest top), and a pass's
    cells alone only decide which grow (a bound within a rounding of ``NEGLIGIBLE_S`` could decide otherwise).  On
    watch --alert-rules' grid of 201 alphas by 24 rates, three passes asked 4,824 cells, 4,824 and 4,824; now 4,824,
    190, 28 and 4,824.

    An engine of 4 whose requests each take 1 s however many are in it (r(n) = n, M/M/4) at 2 requests/s: Erlang C
    gives the chance of waiting 4/23 and the mean wait 4/23 / (4 - 2) = 2/23 s; for fixed service times
    R_D(4, 1/2) = 1/2 (1 + 1/2 x 3 (sqrt(24) - 2) / 32) of it.

    >>> round(float(admission_wait_s(2.0, 4.0, 2.0, admission_grid, 1.0)), 6), round(2 / 23, 6)
    (0.086957, 0.086957)
    >>> round(float(admission_wait_s(2.0, 4.0, 2.0, admission_grid)), 6), round(1 / 23 * (1 + 1.5 * (24**0.5 - 2) / 32), 6)
    (0.049387, 0.049387)
    >>> round(float(admission_chain(2.0, 4.0, 2.0, admission_grid)[1]), 6), round(4 / 23, 6)  # Erlang C
    (0.173913, 0.173913)
    """
    lam = np.asarray(rate_per_s, dtype=float)
    c = np.asarray(bound, dtype=float)
    scv = np.asarray(service_scv, dtype=float)
    top = np.minimum(c, np.ceil(NEAR * np.maximum(np.asarray(in_engine, dtype=float), 1.0)) + 1.0)
    r = np.asarray(rates_of(top), dtype=float)
    part, weight = _birth_death(lam, top, r)
    floor_of = None if queued is None else queued[0]
    more = _grows(lam, c, top, r, part, weight, floor_of)
    grow = lambda top, more: np.where(more, np.minimum(c, np.ceil(NEAR * top)), top)  # noqa: E731  (by a quarter)
    if rates_in is not None and np.ndim(more) and np.any(more):
        shape = np.shape(more)
        lam_all, c_all = np.broadcast_to(lam, shape), np.broadcast_to(c, shape)
        for _ in range(63):  # top grows by a quarter where it moves: c (at most 65536) within 64 passes
            top = grow(top, more)
            cells = np.nonzero(more)
            grown = np.asarray(rates_in(top, cells_alone(shape, more)), dtype=float)  # (cell still growing, point)
            cut = None if floor_of is None else functools.partial(_floor_of_cells, floor_of, more)
            bits = _birth_death(lam_all[more], top[more], grown)
            still = _grows(lam_all[more], c_all[more], top[more], grown, *bits, cut)
            if not np.any(still):
                break
            more = np.zeros(shape, dtype=bool)
            more[tuple(i[still] for i in cells)] = True
        else:
            more = np.zeros(shape, dtype=bool)  # (64 passes: never, c being at most 65536)
        r = np.asarray(rates_of(top), dtype=float)  # every cell at its last top, with every other, as one pass asks
        part, weight = _birth_death(lam, top, r)
    else:
        for _ in range(63):
            if not np.any(more):
                break
            top = grow(top, more)
            r = np.asarray(rates_of(top), dtype=float)
            part, weight = _birth_death(lam, top, r)
            more = _grows(lam, c, top, r, part, weight, floor_of)
        else:
            top = grow(top, more)  # 64 passes asked (never, c being at most 65536): the single loop grew it once more
    leaving = r[..., -1]
    if queued is not None and np.any(top >= c):
        leaving = np.where(top >= c, np.minimum(leaving, np.asarray(queued[1](), dtype=float)), leaving)
    rho = lam / leaving
    below = rho < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_b = np.where(below, rho, 0.5)
        queued = part * rho_b / (1.0 - rho_b) ** 2 / (weight + part * rho_b / (1.0 - rho_b)) / lam
        full = part / (1.0 - rho_b) / (weight + part * rho_b / (1.0 - rho_b))  # P(n >= c)
    wait = np.where(top < c, 0.0, queued * fixed_times_factor(c, rho_b, scv))
    held = np.where(top < c, 0.0, full)
    return (
        np.where(lam > 0.0, np.where(below | (top < c), wait, np.inf), 0.0),
        np.where(lam > 0.0, np.where(below | (top < c), held, 1.0), 0.0),
    )


def _grows(lam, c, top, r, part, weight, floor_of) -> np.ndarray:
    """Where :func:`admission_chain` asks the rates further: below c, and the chain's weight past ``top`` may be more
    than ``NEGLIGIBLE_S`` of the wait (``r`` the rates up to ``top``, ``part`` and ``weight`` :func:`_birth_death`'s,
    ``floor_of`` the bound under r_q, None where r_q is r(c))."""
    # r(n) >= r(top) up to c (r grows with n) and r_q >= floor_of(r(top)) past it: lambda / q bounds every ratio
    q = lam / (r[..., -1] if floor_of is None else np.minimum(r[..., -1], floor_of(r[..., -1])))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        beyond = np.where(q < 1.0, part * q ** (c - top + 1.0) / (1.0 - q) ** 2 / weight / lam, np.inf)
    # the factor is at most 1 (fixed_times_factor), so beyond bounds the wait whatever r(c) turns out to be
    return (top < c) & (beyond > NEGLIGIBLE_S)


def cells_alone(shape: tuple, cells: np.ndarray):
    """``alone(x, points=1)``: an array ``x`` (broadcast to ``shape``) at the True ``cells`` alone, as one row, each
    value repeated ``points`` times; anything else (a scalar, an acceptance model) as it is.

    >>> alone = cells_alone((2, 3), np.array([[True, False, False], [False, False, True]]))
    >>> alone(np.arange(6.0).reshape(2, 3)).tolist(), alone(np.array([[1.0], [2.0]]), 2).tolist(), alone(0.5)
    ([[0.0, 5.0]], [[1.0, 1.0, 2.0, 2.0]], 0.5)
    """

    def alone(x, points: int = 1):
        if not isinstance(x, np.ndarray) or x.ndim == 0:
            return x
        return np.repeat(np.broadcast_to(x, shape)[cells], points)[None, :]

    return alone


def cells_apart(shape: tuple, *values) -> bool:
    """Whether every array of ``values`` broadcasts to ``shape``, so that :func:`cells_alone` takes its cells apart."""
    return all(not isinstance(v, np.ndarray) or np.broadcast_shapes(v.shape, shape) == tuple(shape) for v in values)


def _floor_of_cells(floor_of, cells: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """``floor_of`` (of the whole shape of ``cells``) at the ``rates`` of the True ``cells`` alone."""
    whole = np.ones(np.shape(cells))
    whole[cells] = rates
    return np.broadcast_to(floor_of(whole), whole.shape)[cells]


def fixed_times_factor(servers: object, rho: object, service_scv: object = 0.0) -> np.ndarray:
    """The mean wait in queue over the exponential chain's, c_s^2 + (1 - c_s^2) R_D(c, rho) (the module's docstring):
    R_D Cosmetatos' M/D/c over M/M/c at ``servers`` (c) and load ``rho`` = lambda / r(c), at most 1; ``service_scv``
    c_s^2 of a request's time in the engine.

    >>> fixed_times_factor([1.0, 32.0, 32.0], [0.8, 0.8, 0.95]).round(3).tolist()  # M/D/1 1/2; c = 32: Crommelin .584, .514
    [0.5, 0.582, 0.517]
    >>> fixed_times_factor(32.0, [0.8, 0.05], 1.0).tolist(), fixed_times_factor(32.0, 0.05).tolist()
    ([1.0, 1.0], 1.0)
    """
    c, q, scv = (np.asarray(v, dtype=float) for v in (servers, rho, service_scv))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = (1.0 - q) * (c - 1.0) * (np.sqrt(4.0 + 5.0 * c) - 2.0) / (16.0 * q * c)
        fixed = np.minimum(0.5 * (1.0 + np.where(q > 0.0, spread, np.inf)), 1.0)
    return scv + (1.0 - scv) * fixed


def _birth_death(lam: np.ndarray, top: np.ndarray, grid_rates: np.ndarray) -> tuple:
    """(pi(top), sum of pi(n) for n <= top), each relative to the largest pi(n), of the chain pi(n) = pi(n - 1) lambda /
    r(n) up to ``top`` (per cell), r at every whole n linear between the grid's points (:func:`admission_grid`)."""
    shape = np.broadcast_shapes(np.shape(lam), np.shape(top), grid_rates.shape[:-1])
    lam, top = np.broadcast_to(lam, shape), np.broadcast_to(top, shape)
    r = np.broadcast_to(grid_rates, (*shape, grid_rates.shape[-1]))
    n = np.arange(1.0, (int(np.max(top)) if top.size else 1) + 1.0)
    # The position in the grid's span; an engine that holds one request (a drafter with no room beside it) has a grid of
    # one point, n = 1 at its start (a span below 1 would put the n past it, which the chain leaves out, at inf).
    at = (n - 1.0) / np.maximum(top[..., None] - 1.0, 1.0) * (GRID - 1)
    i = np.clip(np.floor(at).astype(int), 0, GRID - 2)
    f = np.clip(at - i, 0.0, 1.0)
    r_n = np.take_along_axis(r, i, axis=-1) * (1.0 - f) + np.take_along_axis(r, i + 1, axis=-1) * f
    inside = n <= top[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pi = np.cumsum(np.where(inside, np.log(lam[..., None]) - np.log(r_n), 0.0), axis=-1)
    log_pi = np.concatenate([np.zeros((*shape, 1)), log_pi], axis=-1)  # n = 0 .. max top, held at top past it
    pi = np.exp(log_pi - np.max(log_pi, axis=-1, keepdims=True))
    held = np.concatenate([np.ones((*shape, 1), dtype=bool), inside], axis=-1)
    return pi[..., -1], np.sum(np.where(held, pi, 0.0), axis=-1)


def landed_iteration_s(t_dec: object, rate_per_s: object, prefill_s: object) -> np.ndarray:
    """The mean length of the iteration a Poisson arrival lands in, E[T^2] / E[T]: an iteration of mean ``t_dec`` lasts
    its step plus the prompts that arrived during the one before, Poisson in number at ``rate_per_s`` with ``prefill_s``
    each, so its variance V solves V = lambda t_dec t_pf^2 + (lambda t_pf)^2 V, and E[T^2] / E[T] = t_dec + V / t_dec.
    Every prompt is taken to cost the mean one's time (their spread would lengthen it further); inf past the engine.

    >>> round(float(landed_iteration_s(0.010, 20.0, 0.020)), 6)  # V = 20 x 0.01 x 0.0004 / (1 - 0.16)
    0.019524
    """
    t, lam, t_pf = (np.asarray(v, dtype=float) for v in (t_dec, rate_per_s, prefill_s))
    share = lam * t_pf
    with np.errstate(invalid="ignore", divide="ignore"):
        var = lam * t * t_pf**2 / (1.0 - share**2)
        landed = t + np.where(t > 0.0, var / t, 0.0)
    return np.where((share < 1.0) & np.isfinite(t), landed, np.inf)


def admission_said(fixed_lengths: bool) -> str:
    """How the answers name the admission wait in a TTFT, and the spread of a request's time in the engine it takes: the
    one assumption of :func:`admission_wait_s` a user's lengths decide (its factor c_s^2 + (1 - c_s^2) R_D(c, rho) is
    R_D, M/D/c's, or 1)."""
    spread = (
        "every request's lengths the same, a request's time in the engine taken as fixed (M/D/c's factor over the "
        "exponential chain, Cosmetatos': 1/2 to 1)"
        if fixed_lengths
        else "a workload's lengths, whose spread of a request's time in the engine the steady state does not hold, "
        "taken as an exponential's (factor 1; fixed times would take M/D/c's, 1/2 to 1): an assumption"
    )
    return (
        "Poisson arrivals that find the engine at its bound (max_num_seqs, or the requests its KV cache admits) queue "
        "until a request ends, the engine taken as its flow-equivalent server (specsim.serving.arrivals); "
        f"{spread}; against the request-level simulator's TTFT, -10% to +36% (under where max_num_seqs bounds "
        "admission, over where SGLang's cache's soft bound does: docs/serving.md)"
    )
