"""The steady state against the request-level simulator where the KV cache binds, for Poisson rates and offline
batches (:mod:`steady_vs_sim_kv` does closed loops): vLLM (preempts the request admitted last) and SGLang (retracts).

Rates are given as multiples of the KV-bound capacity, the rate of a closed loop of N_e users where N_e is what the
cache holds (:func:`specsim.serving.steady.served_state` at ``--concurrency N_e``, which no queue preempts): below it
the cache binds only where the Poisson count of requests in the engine swings past N_e; above it the queue grows and
the engine runs full, as a closed loop of endless users does.  The simulator runs ``--requests`` Poisson arrivals of
fixed lengths (seed 0); its steady part is the middle half: the mean TPOT and TTFT of the requests arriving between
the first and the third quarter of the arrivals, and the output tokens of the requests finishing between the first
and the third quarter of the finishes over that span.  An offline batch is every request arriving at 0 (serve-sim
--trace of arrival_s 0; the steady state's ``kind="batch"``): its whole run's mean TPOT and TTFT and its output
tokens over the makespan.  Both run at the engine's own limits on the GPU, as serve-sim and optimal-gamma do.

    python benchmarks/steady_vs_sim_open.py [--requests 3000] [--only 0,2] [--cache DIR]
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # steady_vs_sim_kv beside it

# (hardware, target, draft, engine, prompt, output, gamma, load kind, loads: rates as multiples of the KV-bound
# capacity, or batch sizes)
CASES = [
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 2000, 3, "rate", (0.7, 0.9, 1.1, 1.5)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 8000, 3, "rate", (0.7, 0.9, 1.1, 1.5)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "sglang", 1000, 8000, 3, "rate", (0.7, 0.9, 1.1, 1.5)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 2000, 3, "batch", (1024,)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 8000, 3, "batch", (512,)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "sglang", 1000, 8000, 3, "batch", (512,)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 2000, 3, "rate", (0.3,)),  # not KV-bound: no change
    # short outputs, the CLI's default 256 (added after a review found the charge over-counts there)
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 256, 3, "rate", (1.1, 1.5)),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1000, 256, 3, "batch", (2048,)),
]


def middle(run) -> dict:
    """The middle half of a Poisson run (the module's docstring): mean TPOT, TTFT, output tokens/s, preemptions;
    :func:`steady_vs_sim_kv.steady_part` read with a quarter of the run as its wave."""
    from steady_vs_sim_kv import steady_part

    n = run.arrival_s.size
    tpot, tok_s, pre = steady_part(run, n // 4, 1)[:3]
    picked = np.argsort(run.arrival_s, kind="stable")[n // 4 : 3 * n // 4]
    ttft = float(np.mean(run.first_token_s[picked] - run.arrival_s[picked]))
    return {"tpot": tpot, "ttft": ttft, "tok_s": tok_s, "batch": run.mean_batch, "preemptions": pre}


def whole(run) -> dict:
    """An offline batch's whole run: mean TPOT, TTFT, output tokens over the makespan, preemptions."""
    return {
        "tpot": float(np.mean((run.finish_s - run.first_token_s) / (run.output - 1))),
        "ttft": float(np.mean(run.first_token_s - run.arrival_s)),
        "tok_s": float(run.output.sum()) / run.makespan_s,
        "batch": run.mean_batch,
        "preemptions": run.preemptions,
    }


def one(case, requests: int, cache: str | None = None) -> list:
    from specsim.serving.simulator import serve_compare
    from specsim.serving.steady import engine_limits, served_state
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    hw, target, draft, engine, P, O, gamma, kind, loads = case
    dep = Deployment.build(hw, target, draft, engine=engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)
    rows = []
    for x in loads:
        if kind == "rate":
            # the KV-bound capacity: a closed loop of the N_e the cache holds (plain arm's, one rate for both arms)
            big = served_state(dep, 0.8, [0], [4096], P, O, limits=limits)
            cap = served_state(dep, 0.8, [0], [float(big.in_engine[0, 0])], P, O, limits=limits)
            load, n = x * float(cap.requests_per_s[0, 0]), requests
        else:
            load, n = float(x), int(x)
        s = served_state(dep, 0.8, [0, gamma], [load], P, O, limits=limits, kind=kind)
        key = None if cache is None else Path(cache) / f"{'-'.join(map(str, case[:7]))}-{kind}-{load:.6g}-{n}.pkl"
        if key is not None and key.exists():
            plain, spec = pickle.loads(key.read_bytes())
        else:
            if kind == "rate":
                arrivals = np.cumsum(np.random.default_rng(0).exponential(1.0 / load, n))
            else:
                arrivals = np.zeros(n)
            reqs = Requests(np.full(n, P), np.full(n, O), arrivals)
            plain, spec, _ = serve_compare(dep, reqs, 0.8, gamma, limits)
            if key is not None:
                key.parent.mkdir(parents=True, exist_ok=True)
                key.write_bytes(pickle.dumps((plain, spec)))
        read = middle if kind == "rate" else whole
        for i, run in enumerate((plain, spec)):
            sim = read(run)
            rows.append(
                {
                    "label": f"{hw} {engine} {P}/{O} {kind} {x:g} ({load:.3g}) g{gamma if i else 0}",
                    "limited_by": str(np.ravel(s.limited_by)[i]) or "-",
                    "saturated": bool(np.ravel(s.saturated)[i]),
                    "steady": {
                        "tpot": float(s.tpot_s[i, 0]),
                        "ttft": float(s.ttft_s[i, 0]),
                        "tok_s": float(s.output_tokens_per_s[i, 0]),
                        "batch": float(s.mean_batch[i, 0]),
                    },
                    "sim": sim,
                }
            )
    return rows


def _gap(a: float, b: float) -> str:
    return "n/a" if not np.isfinite(a) or b <= 0 else f"{a / b - 1:+.1%}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000, help="Poisson arrivals a rate's run simulates")
    ap.add_argument("--only", default=None, help="comma-separated case indices")
    ap.add_argument("--cache", default=None, help="a folder keeping the simulator's runs (the steady state is redone)")
    args = ap.parse_args(argv)
    picks = range(len(CASES)) if args.only is None else [int(x) for x in args.only.split(",")]
    print(
        "case | limited by | TPOT ms steady / sim (gap) | TTFT s steady / sim (gap) | output tok/s steady / sim (gap)"
        " | batch steady / sim | preemptions"
    )
    for k in picks:
        for r in one(CASES[k], args.requests, args.cache):
            a, b = r["steady"], r["sim"]
            print(
                f"{k} {r['label']} | {r['limited_by']}{' saturated' if r['saturated'] else ''}"
                f" | {a['tpot'] * 1e3:.2f} / {b['tpot'] * 1e3:.2f} ({_gap(a['tpot'], b['tpot'])})"
                f" | {a['ttft']:.3g} / {b['ttft']:.3g} ({_gap(a['ttft'], b['ttft'])})"
                f" | {a['tok_s']:,.0f} / {b['tok_s']:,.0f} ({_gap(a['tok_s'], b['tok_s'])})"
                f" | {a['batch']:.1f} / {b['batch']:.1f} | {b['preemptions']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
