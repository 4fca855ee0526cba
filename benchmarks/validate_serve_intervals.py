"""Why serve-sim's intervals are over independent runs, not a bootstrap over one run's requests.

Run:  python benchmarks/validate_serve_intervals.py

Simulates the default deployment at 8 chat requests/s with seeds 0-19 (1,000 requests each) and prints,
speculation off and on, the spread of one run's p99 TPOT across seeds next to the spread a bootstrap of
seed 0's requests would claim (2,000 resamples).  A queue's latencies are correlated in time, so a
bootstrap that resamples requests as if independent understates the run-to-run spread.
"""

from __future__ import annotations

import numpy as np

from specsim.serving.simulator import requests_for, serve_compare
from specsim.speculation.deployment import Deployment

SEEDS, RATE, RESAMPLES = 20, 8.0, 2000


def main() -> None:
    dep = Deployment.build()
    p99 = {"off": [], "on": []}
    bootstrap = {}
    for seed in range(SEEDS):
        requests, _ = requests_for(dep.target, rate=RATE, rng=np.random.default_rng(seed))
        plain, spec, _ = serve_compare(dep, requests, 0.8, seed=seed)
        for name, run in (("off", plain), ("on", spec)):
            tpot = run.tpot_s
            p99[name].append(np.percentile(tpot, 99))
            if seed == 0:
                rng = np.random.default_rng(123)
                bootstrap[name] = np.std([np.percentile(rng.choice(tpot, tpot.size), 99) for _ in range(RESAMPLES)])
    print(f"{dep.brief()}\nPoisson {RATE:g} req/s, chat, alpha 0.8, {SEEDS} seeds of 1,000 requests\n")
    for name in ("off", "on"):
        x = np.asarray(p99[name]) * 1e3
        sd = x.std(ddof=1)
        print(
            f"speculation {name}: p99 TPOT over seeds {x.mean():.2f} ms, standard deviation {sd:.2f} ms ({sd / x.mean():.1%}); "
            f"bootstrap of seed 0's requests {bootstrap[name] * 1e3:.2f} ms ({bootstrap[name] * 1e3 / sd:.2f} of it)"
        )


if __name__ == "__main__":
    main()
