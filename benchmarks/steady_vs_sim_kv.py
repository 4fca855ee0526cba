"""The steady state against the request-level simulator where the KV cache binds: closed loops on a grid of GPUs,
models, users and lengths, plain and speculating, on vLLM (preempts the request admitted last), SGLang (retracts the
one that decoded least) and TensorRT-LLM (reserves: never preempts).

The simulator runs ``--waves`` x N requests of fixed lengths (``vllm bench serve``'s random dataset by default:
``--random-range-ratio 0.0``, vLLM 0.33.0 ``vllm/benchmarks/datasets/datasets.py`` L1900), or, with ``--range-ratio r``,
lengths drawn as that dataset draws them for ratio r: whole numbers uniform in [floor(x (1 - r)), ceil(x (1 + r))]
(``vllm/benchmarks/datasets/utils.py`` 0.33.0 L70-97), seeded.  Its steady part is read past the first ``--skip`` waves
and before the last one (the run starts with every user's request at once, which vLLM over-admits, and ends with the
users stopping): the mean TTFT, TPOT and end-to-end latency of the requests arriving then, and the output tokens of the
requests finishing between the (skip N)-th and the (n - N)-th finish over that span.  The steady state is
:func:`specsim.serving.steady.served_state` at the same load (optimal-gamma's); both run at the engine's own limits on
the GPU (:func:`specsim.serving.steady.engine_limits`), as serve-sim and optimal-gamma do.

    python benchmarks/steady_vs_sim_kv.py [--waves 8] [--skip 3] [--only 0,2] [--cache DIR] [--range-ratio 0.5] [--split]
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
from pathlib import Path

import numpy as np

# (hardware, target, draft, engine, users, prompt, output, gamma)
CASES = [
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 512, 1000, 2000, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 512, 1000, 8000, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 128, 1000, 8000, 3),
    ("a100-80gb", "llama-3.1-8b", "llama-3.2-1b", "vllm", 256, 2000, 4000, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 256, 4000, 2000, 4),
    ("l40s", "llama-3.1-8b", "llama-3.2-1b", "vllm", 128, 500, 2000, 3),
    ("h100-sxm", "qwen3-8b", "qwen3-0.6b", "vllm", 256, 1000, 4000, 2),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "sglang", 512, 1000, 8000, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "trtllm", 512, 1000, 4000, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 32, 1000, 2000, 3),  # not KV-bound: no change expected
    # the CLI's default 256-token outputs (added after a review found the charge over-counting there past capacity)
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 512, 1000, 256, 3),
    ("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", "vllm", 1024, 1000, 256, 3),
]


def lengths(mean: int, n: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` lengths about ``mean`` as ``vllm bench serve``'s random dataset draws them at ``--random-range-ratio``
    ``ratio`` (the module's docstring): all ``mean`` at 0."""
    low, high = max(math.floor(mean * (1 - ratio)), 1), max(math.ceil(mean * (1 + ratio)), 1)
    return rng.integers(low, high + 1, size=n)


def steady_part(run, users: int, skip: int) -> tuple[float, float, float, float, float, float]:
    """(mean TPOT, output tokens/s, preemptions, mean TTFT, mean end-to-end latency, past first token) past ``skip``
    waves and before the last (the module's docstring).  Past first token: the time-mean number of requests that have
    had their first token and not finished, over the same span; vLLM's rule keeps a closed loop in arrival order
    (tests/test_kv_blocks.py), so these are the running and the preempted (:mod:`specsim.serving.preemption`)."""
    order = np.argsort(run.arrival_s, kind="stable")
    n = order.size
    picked = order[skip * users : n - users]
    ends = np.sort(run.finish_s)
    t0, t1 = float(ends[skip * users]), float(ends[n - users])
    ok = (run.finish_s > t0) & (run.finish_s <= t1)
    tokens = float(run.output[ok].sum()) / max(t1 - t0, 1e-9)
    tpot = float(np.mean((run.finish_s[picked] - run.first_token_s[picked]) / (run.output[picked] - 1)))
    ttft = float(np.mean(run.first_token_s[picked] - run.arrival_s[picked]))
    e2e = float(np.mean(run.finish_s[picked] - run.arrival_s[picked]))
    # the integral over [t0, t1] of (first tokens so far - finishes so far): each request's time past each, in the span
    first, done = (np.nan_to_num(x, nan=np.inf) for x in (run.first_token_s, run.finish_s))
    inside = np.clip(t1 - np.maximum(first, t0), 0.0, None) - np.clip(t1 - np.maximum(done, t0), 0.0, None)
    return tpot, tokens, run.preemptions, ttft, e2e, float(inside.sum()) / max(t1 - t0, 1e-9)


def one(case, waves: int, skip: int, cache: str | None = None, ratio: float = 0.0) -> dict:
    from specsim.serving.simulator import serve_compare
    from specsim.serving.steady import engine_limits, served_state
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    hw, target, draft, engine, users, P, O, gamma = case
    dep = Deployment.build(hw, target, draft, engine=engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)  # the engine's own on the GPU, as serve-sim and served_state
    s = served_state(dep, 0.8, [0, gamma], [users], P, O, limits=limits)
    n = waves * users
    drawn = f"-r{ratio:g}" if ratio else ""
    key = None if cache is None else Path(cache) / f"{'-'.join(map(str, case))}-{waves}{drawn}-own-limits.pkl"
    if key is not None and key.exists():
        plain, spec = pickle.loads(key.read_bytes())
    else:
        rng = np.random.default_rng(0)
        requests = Requests(lengths(P, n, ratio, rng), lengths(O, n, ratio, rng), None)
        plain, spec, _ = serve_compare(dep, requests, 0.8, gamma, limits, concurrency=users)
        if key is not None:
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_bytes(pickle.dumps((plain, spec)))
    out = {"case": case, "limited_by": [str(x) for x in np.ravel(s.limited_by)]}
    for i, run in enumerate((plain, spec)):
        tpot, tps, pre, ttft, e2e, past = steady_part(run, users, skip)
        out[("off", "on")[i]] = {
            "steady_tpot_ms": float(s.tpot_s[i, 0]) * 1e3,
            "sim_tpot_ms": tpot * 1e3,
            "steady_tok_s": float(s.output_tokens_per_s[i, 0]),
            "sim_tok_s": tps,
            "steady_batch": float(s.mean_batch[i, 0]),
            "sim_batch": run.mean_batch,
            "preemptions": pre,
            "steady_ttft_s": float(s.ttft_s[i, 0]),
            "sim_ttft_s": ttft,
            "steady_e2e_s": float(s.e2e_s[i, 0]),
            "sim_e2e_s": e2e,
            "sim_past_first_token": past,
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waves", type=int, default=8)
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated case indices")
    ap.add_argument("--cache", default=None, help="a folder keeping the simulator's runs (the steady state is redone)")
    ap.add_argument("--range-ratio", type=float, default=0.0, help="lengths drawn as vllm bench's random dataset")
    ap.add_argument("--split", action="store_true", help="print mean TTFT and end-to-end latency too")
    args = ap.parse_args(argv)
    if not 0.0 <= args.range_ratio < 1.0:
        ap.error(f"--range-ratio must be in [0, 1) as vllm bench serve's, got {args.range_ratio:g}")
    picks = range(len(CASES)) if args.only is None else [int(x) for x in args.only.split(",")]
    split = " | TTFT s steady / sim | E2E s steady / sim | sim: past first token" if args.split else ""
    print(
        "case | arm | limited by | TPOT ms steady / sim (gap) | output tok/s steady / sim (gap) | batch | preemptions"
        + split
    )
    for k in picks:
        r = one(CASES[k], args.waves, args.skip, args.cache, args.range_ratio)
        hw, target, draft, engine, users, P, O, gamma = r["case"]
        for j, arm in enumerate(("off", "on")):
            a = r[arm]
            print(
                f"{k} {hw} {engine} {users}u {P}/{O} g{gamma if arm == 'on' else 0} | {arm} | {r['limited_by'][j] or '-'}"
                f" | {a['steady_tpot_ms']:.2f} / {a['sim_tpot_ms']:.2f} ({a['steady_tpot_ms'] / a['sim_tpot_ms'] - 1:+.1%})"
                f" | {a['steady_tok_s']:,.0f} / {a['sim_tok_s']:,.0f} ({a['steady_tok_s'] / a['sim_tok_s'] - 1:+.1%})"
                f" | {a['steady_batch']:.1f} / {a['sim_batch']:.1f} | {a['preemptions']}"
                + (
                    f" | {a['steady_ttft_s']:.1f} / {a['sim_ttft_s']:.1f} | {a['steady_e2e_s']:.1f} / {a['sim_e2e_s']:.1f}"
                    f" | {a['sim_past_first_token']:.1f}"
                    if args.split
                    else ""
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
