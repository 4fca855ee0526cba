"""The steady state against the request-level simulator at Poisson rates on both sides of the engine's capacity, in
absolute requests/s (:mod:`steady_vs_sim_open` gives rates as multiples of it): the model's TPOT, whether it marks the
rate past capacity, its output tokens/s, and the simulator's middle half (:func:`steady_vs_sim_open.middle`) over seeds
0 to ``--seeds`` - 1: mean TPOT, its sample standard deviation and range, output tokens/s and preemptions a request
(the steady state's charge beside the simulator's: :mod:`specsim.serving.preemption`, below capacity
:func:`~specsim.serving.preemption.queued_charge`).
Near capacity a run that starts empty relaxes slowly: compare ``--requests 3000`` with ``--requests 24000``
(``docs/serving.md``, past a Poisson capacity).

    python benchmarks/steady_vs_sim_crossing.py [--rates 27,28.5,29,29.5,30.5] [--requests 24000] [--seeds 4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # steady_vs_sim_open beside it


def main(argv=None) -> int:
    from steady_vs_sim_open import middle

    from specsim.serving.simulator import serve_compare
    from specsim.serving.steady import engine_limits, served_state
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="27,28.5,29,29.5,30.5", help="comma-separated Poisson rates, requests/s")
    ap.add_argument("--requests", type=int, default=24000, help="Poisson arrivals a run simulates")
    ap.add_argument("--seeds", type=int, default=4, help="runs a rate, seeds 0 to N - 1")
    ap.add_argument("--hardware", default="h100-sxm")
    ap.add_argument("--target", default="llama-3.1-8b")
    ap.add_argument("--draft", default="eagle3")
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--alpha", type=float, default=0.7)
    ap.add_argument("--gamma", type=int, default=3)
    ap.add_argument("--input-len", type=int, default=1000)
    ap.add_argument("--output-len", type=int, default=256)
    args = ap.parse_args(argv)
    P, O, n = args.input_len, args.output_len, args.requests
    dep = Deployment.build(args.hardware, args.target, args.draft, engine=args.engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)
    rates = [float(x) for x in args.rates.split(",")]
    s = served_state(dep, args.alpha, [args.gamma], rates, P, O, limits=limits, kind="rate")
    print(
        "rate /s | steady TPOT ms (past?) | output tok/s | sim TPOT ms mean sd [range] | sim tok/s"
        " | preemptions/request steady / sim"
    )
    charged = np.broadcast_to(s.preemptions, s.tpot_s.shape)  # specsim.serving.preemption's m, below capacity too
    for j, rate in enumerate(rates):
        runs = []
        for seed in range(args.seeds):
            arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))
            reqs = Requests(np.full(n, P), np.full(n, O), arrivals)
            runs.append(middle(serve_compare(dep, reqs, args.alpha, args.gamma, limits, seed=seed)[1]))
        tpot = np.array([r["tpot"] for r in runs]) * 1e3
        sd = tpot.std(ddof=1) if tpot.size > 1 else float("nan")
        steady = float(s.tpot_s[0, j]) * 1e3
        print(
            f"{rate:g} | {steady:.2f}{' past' if s.saturated[0, j] else ''} | {float(s.output_tokens_per_s[0, j]):,.0f}"
            f" | {tpot.mean():.2f} {sd:.2f} [{tpot.min():.2f}-{tpot.max():.2f}] ({steady / tpot.mean() - 1:+.0%})"
            f" | {np.mean([r['tok_s'] for r in runs]):,.0f}"
            f" | {float(charged[0, j]):.4f} / {np.mean([r['preemptions'] for r in runs]) / (n // 2):.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
