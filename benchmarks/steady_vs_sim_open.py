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
tokens over the makespan.  Both run at the engine's own limits on the GPU, as serve-sim and optimal-gamma do, or at
those a case sets (its options' ``limits``); a case whose options say ``own`` gives each arm the multiples of its own
capacity (the rate of a closed loop of the N_e it holds).  ``--seeds N`` runs a rate's arrivals and acceptance from
seeds 0 to N - 1 and prints the simulator's means over them, TTFT with its standard error over the seeds (a queue's
waits swing from seed to seed near the admission bound: ``specsim.serving.arrivals``).  Near capacity a run started
empty has not reached the stationary wait by its middle half: the queue past the bound relaxes over thousands of
seconds, and the chain's own forward equations (:mod:`admission_anatomy`) read 0.74-0.78 of its stationary wait over
the middle half of 3,000 arrivals for TensorRT-LLM at 0.95 x (case 11), 0.89-0.90 for vLLM at 0.95 x (case 10),
0.94-0.97 for TensorRT-LLM at 0.9 x, 0.99 or more elsewhere; 12,000 arrivals (``--requests 12000``) read 0.99 or more in
all.  A run's mean wait is also skewed (most runs read below the long-run mean, a few far above): 3,000 arrivals read
vLLM's TTFT (case 10) 7-23% lower than 12,000 at every load, the chain's ratio 0.995 or more there, and SGLang's
(cases 9 and 2; 7-11 s a seed of 12,000 here) 6-21% lower plain at 0.8-0.9 x and γ 3 at 1.1 x (seeds 0-19 of 3,000
against 0-39 of 12,000), the chain's ratio 0.988 or more.

    python benchmarks/steady_vs_sim_open.py [--requests 3000] [--only 0,2] [--cache DIR] [--seeds 20]
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # steady_vs_sim_kv beside it

# (hardware, target, draft, engine, prompt, output, gamma, load kind, loads: rates as multiples of the KV-bound
# capacity, or batch sizes[, options: "limits" to replace the engine's, "own" for each arm's own capacity])
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
    # admission bounded below capacity (specsim.serving.arrivals): SGLang's cache at 0.8 (0.7 and 0.9 are case 2's),
    # max_num_seqs (32 on vLLM, its cache holding far more) and a cache that reserves whole lengths (TensorRT-LLM)
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "sglang", 1000, 8000, 3, "rate", (0.8,)),
    (
        "h100-sxm",
        "llama-3.1-8b",
        "llama-3.2-1b",
        "vllm",
        1000,
        2000,
        3,
        "rate",
        (0.7, 0.8, 0.9, 0.95),
        {"limits": {"max_num_seqs": 32}, "own": True},
    ),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "trtllm", 1000, 4000, 3, "rate", (0.7, 0.8, 0.9, 0.95), {"own": True}),
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


def _runs(case, load: float, n: int, seed: int, limits, cache: str | None) -> tuple:
    """(plain, speculating) simulator runs of ``n`` requests at ``load`` (a rate's arrivals drawn from ``seed``)."""
    from specsim.serving.simulator import serve_compare
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    hw, target, draft, engine, P, O, gamma, kind = case[:8]
    tail = "" if len(case) < 10 else f"-{sorted(case[9].get('limits', {}).items())}".replace(" ", "")
    name = f"{'-'.join(map(str, case[:7]))}{tail}-{kind}-{load:.6g}-{n}{f'-s{seed}' if seed else ''}.pkl"
    key = None if cache is None else Path(cache) / name
    if key is not None and key.exists():
        return pickle.loads(key.read_bytes())
    if kind == "rate":
        arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / load, n))
    else:
        arrivals = np.zeros(n)
    reqs = Requests(np.full(n, P), np.full(n, O), arrivals)
    plain, spec, _ = serve_compare(
        Deployment.build(hw, target, draft, engine=engine), reqs, 0.8, gamma, limits, seed=seed
    )
    if key is not None:
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(pickle.dumps((plain, spec)))
    return plain, spec


def _mean(runs: list) -> dict:
    """The simulator's figures averaged over seeds' runs, with the standard error of TTFT over them."""
    out = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    ttft = [r["ttft"] for r in runs]
    out["ttft_se"] = float(np.std(ttft, ddof=1) / np.sqrt(len(ttft))) if len(ttft) > 1 else float("nan")
    return out


def one(case, requests: int, cache: str | None = None, seeds: int = 1) -> list:
    import dataclasses

    from specsim.serving.steady import engine_limits, served_state
    from specsim.speculation.deployment import Deployment

    hw, target, draft, engine, P, O, gamma, kind, loads = case[:9]
    options = case[9] if len(case) > 9 else {}
    dep = Deployment.build(hw, target, draft, engine=engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)
    limits = dataclasses.replace(limits, **options.get("limits", {}))
    rows = []
    for x in loads:
        for arm in (0, 1) if options.get("own") else (None,):
            if kind == "rate":
                # the KV-bound capacity: a closed loop of the N_e the cache holds (plain arm's, one rate for both
                # arms, unless each arm's own)
                i = arm or 0
                big = served_state(dep, 0.8, [0, gamma], [4096], P, O, limits=limits)
                cap = served_state(dep, 0.8, [0, gamma], [float(big.in_engine[i, 0])], P, O, limits=limits)
                load, n = x * float(cap.requests_per_s[i, 0]), requests
            else:
                load, n = float(x), int(x)
            rows += _rows(case, dep, limits, x, load, n, arm, cache, seeds if kind == "rate" else 1)
    return rows


def _rows(case, dep, limits, x, load: float, n: int, arm, cache, seeds: int) -> list:
    """The rows of one load: the steady state and the simulator's runs (means over ``seeds``), per arm (``arm``: one)."""
    from specsim.serving.steady import served_state

    hw, _, _, engine, P, O, gamma, kind = case[:8]
    s = served_state(dep, 0.8, [0, gamma], [load], P, O, limits=limits, kind=kind)
    runs = [_runs(case, load, n, seed, limits, cache) for seed in range(seeds)]
    read = middle if kind == "rate" else whole
    rows = []
    for i in (0, 1) if arm is None else (arm,):
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
                "sim": _mean([read(r[i]) for r in runs]),
            }
        )
    return rows


def _se(sim: dict) -> str:
    return "" if not np.isfinite(sim["ttft_se"]) else f" ±{sim['ttft_se']:.2g}"


def _gap(a: float, b: float) -> str:
    return "n/a" if not np.isfinite(a) or b <= 0 else f"{a / b - 1:+.1%}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000, help="Poisson arrivals a rate's run simulates")
    ap.add_argument("--only", default=None, help="comma-separated case indices")
    ap.add_argument("--cache", default=None, help="a folder keeping the simulator's runs (the steady state is redone)")
    ap.add_argument("--seeds", type=int, default=1, help="a rate's runs, from seeds 0 to N - 1 (their means)")
    args = ap.parse_args(argv)
    picks = range(len(CASES)) if args.only is None else [int(x) for x in args.only.split(",")]
    print(
        "case | limited by | TPOT ms steady / sim (gap) | TTFT s steady / sim (gap) | output tok/s steady / sim (gap)"
        " | batch steady / sim | preemptions"
    )
    for k in picks:
        for r in one(CASES[k], args.requests, args.cache, args.seeds):
            a, b = r["steady"], r["sim"]
            print(
                f"{k} {r['label']} | {r['limited_by']}{' saturated' if r['saturated'] else ''}"
                f" | {a['tpot'] * 1e3:.2f} / {b['tpot'] * 1e3:.2f} ({_gap(a['tpot'], b['tpot'])})"
                f" | {a['ttft']:.3g} / {b['ttft']:.3g}{_se(b)} ({_gap(a['ttft'], b['ttft'])})"
                f" | {a['tok_s']:,.0f} / {b['tok_s']:,.0f} ({_gap(a['tok_s'], b['tok_s'])})"
                f" | {a['batch']:.1f} / {b['batch']:.1f} | {b['preemptions']:g}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
