"""The engine's queue as it is for requests of fixed lengths, played out: why the admission wait's factor is M/D/c's.

Every request of fixed lengths needs the same iterations, one round an iteration whatever the batch; the batch sets only
how long an iteration lasts, the same for every request in the engine.  This plays exactly that, and nothing else, at
the admission chain's own numbers (:mod:`specsim.serving.arrivals`, as :mod:`admission_anatomy` reads them per rate row
of :mod:`steady_vs_sim_open`'s cases): c slots, the n requests in them each progressing at r(n)/n of their work a second
(work 1 each, so that a closed loop of n leaves at r(n)), Poisson arrivals at lambda, first come first served.  All in
the engine progress at one speed, so a virtual clock of work V (dV/dt = r(n)/n) orders the departures: one admitted at
V_a leaves at V_a + its work.  With exponential work (``--exponential``) the same program is the birth-death chain
itself (its wait the chain's within the noise); with fixed work, per row: the chain's stationary wait (exponential),
the fixed-work engine's mean wait over seeds 0 to ``--seeds`` - 1 of ``--arrivals`` arrivals (the first tenth left
out) with its standard error over the seeds, their ratio, and M/D/c's over M/M/c's at c and rho = lambda / r(c), exact
(Crommelin) and in Cosmetatos' form (:func:`specsim.serving.arrivals.fixed_times_factor`).

    python benchmarks/fixed_work_engine.py [--only 10,11,9,2] [--arrivals 500000] [--seeds 4] [--exponential]
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections import deque
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # admission_anatomy beside it


def fixed_work_wait_s(rate_per_s: float, r: np.ndarray, seed: int, arrivals: int, exponential: bool = False) -> float:
    """The mean wait for admission, seconds, of ``arrivals`` Poisson arrivals at ``rate_per_s`` (seed ``seed``, the
    first tenth left out) to c = len(r) slots whose n requests leave a closed loop at ``r[n - 1]`` per second.

    M/M/4 at 2/s, Erlang C 2/23 = 0.0870 s; M/D/4 R_D(4, 1/2) = 0.568 of it, 0.0494 s (exact 0.571 x, 0.0497 s):

    >>> [round(float(np.mean([fixed_work_wait_s(2.0, np.arange(1.0, 5.0), s, 100_000, e) for s in range(4)])), 3) for e in (1, 0)]
    [0.089, 0.05]
    """
    rng = np.random.default_rng(seed)
    speed = (np.asarray(r, dtype=float) / np.arange(1, len(r) + 1)).tolist()
    arrive = np.cumsum(rng.exponential(1.0 / rate_per_s, arrivals)).tolist()
    work = rng.exponential(1.0, arrivals).tolist() if exponential else [1.0] * arrivals
    t, v, i = 0.0, 0.0, 0
    leaving: list = []  # the virtual times at which those in the engine leave
    queue: deque = deque()
    waits = [0.0] * arrivals
    while i < arrivals or leaving:
        n = len(leaving)
        t_out = t + (leaving[0] - v) / speed[n - 1] if n else float("inf")
        if i < arrivals and arrive[i] <= t_out:
            v += (arrive[i] - t) * speed[n - 1] if n else 0.0
            t = arrive[i]
            if n < len(speed):
                heapq.heappush(leaving, v + work[i])
            else:
                queue.append(i)
            i += 1
        else:
            v, t = heapq.heappop(leaving), t_out
            if queue:
                k = queue.popleft()
                waits[k] = t - arrive[k]
                heapq.heappush(leaving, v + work[k])
    return float(np.mean(waits[arrivals // 10 :]))


def main(argv=None) -> int:
    from admission_anatomy import _rows, chain, fixed_times_ratio

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="10,11,9,2", help="comma-separated case indices of steady_vs_sim_open")
    ap.add_argument("--arrivals", type=int, default=500_000, help="Poisson arrivals a seed plays")
    ap.add_argument("--seeds", type=int, default=4, help="seeds 0 to N - 1")
    ap.add_argument("--exponential", action="store_true", help="exponential work: the chain itself (a check)")
    args = ap.parse_args(argv)
    print("row | c | rho | chain's wait s (exponential) | played wait s ± se | ratio | M/D/c exact | Cosmetatos")
    for k in (int(x) for x in args.only.split(",")):
        for label, _, _, _, _, lam, _, c, r in _rows(k):
            stationary = chain(lam, c, r, 4 * args.seeds)[1]
            w = [fixed_work_wait_s(lam, r, s, args.arrivals, args.exponential) for s in range(args.seeds)]
            se = np.std(w, ddof=1) / np.sqrt(len(w)) if len(w) > 1 else float("nan")
            cos, exact = fixed_times_ratio(c, lam / r[-1])
            ratio = np.mean(w) / stationary if stationary > 0 else float("nan")
            print(
                f"{label} | {c} | {lam / r[-1]:.3f} | {stationary:.4g} | {np.mean(w):.4g} ± {se:.2g} | {ratio:.3f}"
                f" | {exact:.3f} | {cos:.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
