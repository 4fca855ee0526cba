"""Speed of the serving simulation: 10,000 requests of 1,000 output tokens at a load that keeps ~64 running.

Run:  python benchmarks/bench_serving.py

Prints the wall time of one simulation without speculation and one with gamma 3 (each on one core), the
mean running batch they reached, and the step-table build time.  The issue's target: under 10 s each.
"""

from __future__ import annotations

import time

import numpy as np

from specsim.serving.simulator import EngineLimits, StepTable, simulate
from specsim.serving.workloads import Requests
from specsim.speculation.deployment import Deployment


def main() -> None:
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    n = 10_000
    start = time.perf_counter()
    table = StepTable(dep, 256, 1300, 3)
    print(
        f"step table (256 batch sizes x {table.contexts.size} contexts x gamma 0..3): {time.perf_counter() - start:.2f} s"
    )
    # The rate that keeps about 64 requests running: 64 / (1,000 tokens x TPOT at batch 64).
    for gamma, rate in ((0, 6.5), (3, 12.0)):
        rng = np.random.default_rng(
            1
        )  # KV capacity unbounded (EngineLimits default): the run measures scheduling, not eviction
        requests = Requests(np.full(n, 200), np.full(n, 1000), np.cumsum(rng.exponential(1 / rate, n)))
        start = time.perf_counter()
        result = simulate(requests, table, EngineLimits(256), 0.8, gamma, np.random.default_rng(0))
        wall = time.perf_counter() - start
        s = result.summary()
        print(
            f"gamma {gamma}: {n:,} requests x 1,000 tokens at {rate:g} req/s: {wall:.2f} s wall "
            f"(target < 10 s); mean running batch {s['mean_running_batch']:.1f}, TPOT p50 {s['tpot_s']['p50'] * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
