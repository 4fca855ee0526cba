"""The serving model's parts against a multi-turn workload served from vLLM's prefix cache: where the model at one
prefix-cache share parts from the engine.

tests/data/do-gtc-2026 holds eight ``vllm bench serve`` runs (vLLM 0.14.1, one H200, Llama-3.1-70B FP8, fp8 KV, the
engine's default limits, Poisson rates 0.5-3/s, 5,806 prompt and 518 output tokens on average).  For each rate this
prints what the runs measured (mean and median TTFT, mean TPOT, median ITL: an iteration without a prompt riding in
it, since at most a few percent of iterations carry one; the requests in flight by Little's law, rate x mean
end-to-end latency) beside the model's parts at ``--prefix-hit`` (the prefill of one request, the decode step at the
batch, the requests the engine holds, the wait for admission, TTFT, TPOT, and whether the load is past capacity),
with the KV cache as specsim sizes it, as the engine's log gave it (348,304 tokens, ``--kv-tokens``) and unbounded.
Nothing is fitted: every term is the preset's, so the runs are seen, not held out.

    python benchmarks/prefix_cache_parts.py [--prefix-hit 0.667] [--kv-tokens 348304]

Written for docs/reports/2026-12-07-prefix-cache-do-gtc.md.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from specsim.core.workloads import mean_context_tokens
from specsim.serving.capacity import free_kv_bytes
from specsim.serving.steady import engine_limits, steady_state
from specsim.speculation.deployment import Deployment

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "do-gtc-2026"
RATES = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)


def measured(rate: float) -> dict:
    """The run at ``rate``'s figures, in ms, and its requests in flight by Little's law."""
    run = json.loads((DATA / f"rate-{rate}.json").read_text())
    return {
        "ttft": run["mean_ttft_ms"],
        "ttft_p50": run["median_ttft_ms"],
        "tpot": run["mean_tpot_ms"],
        "itl_p50": run["median_itl_ms"],
        "in_flight": rate * run["mean_e2el_ms"] / 1e3,
        "prompt": run["total_input_tokens"] / run["completed"],
        "output": run["total_output_tokens"] / run["completed"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prefix-hit", type=float, default=0.667, help="the share of prompt tokens cached (default 0.667)")
    p.add_argument("--kv-tokens", type=float, default=348_304.0, help="the engine's logged KV cache, in tokens")
    args = p.parse_args(argv)
    dep = Deployment.build(
        "h200", "llama-3.1-70b", None, engine="vllm@0.14.1", decode_only=True,
        target_options={"weight_dtype": "fp8", "kv_dtype": "fp8"},
    )  # fmt: skip
    limits = replace(engine_limits(dep.engine, dep.hardware)[0], prefix_hit=args.prefix_hit)
    runs = [measured(r) for r in RATES]
    P, O = float(np.mean([r["prompt"] for r in runs])), float(np.mean([r["output"] for r in runs]))
    own = free_kv_bytes(dep, P, O, 0, None, limits.max_batched_tokens, limits.max_num_seqs)
    per_token = float(dep.target.kv_bytes_per_token)
    logged = (args.kv_tokens * per_token,) * 2
    new, cached = limits.prompt_split(P)
    print(f"{limits.label}; prompt {P:.0f} = {float(new):.0f} prefilled + {float(cached):.0f} cached, output {O:.0f}")
    print(f"KV cache: specsim {own[0] / per_token:,.0f} tokens, the engine's log {args.kv_tokens:,.0f}")
    # the model's decode step at the batch the runs held (their requests in flight), against their median ITL
    flight = np.array([m["in_flight"] for m in runs])
    at = np.asarray(dep.decode(flight, mean_context_tokens(P, O)).total_s, dtype=float) * 1e3
    print("measured: rate  TTFT mean/p50  TPOT  ITL p50  in flight (rate x E2E)  model's decode step there")
    for rate, m, t in zip(RATES, runs, at):
        print(
            f"  {rate:5.2f}/s  {m['ttft']:6.1f}/{m['ttft_p50']:5.1f}  {m['tpot']:5.1f}  {m['itl_p50']:5.1f}"
            f"  {m['in_flight']:5.1f}  {t:5.1f} ({t / m['itl_p50'] - 1:+.0%})"
        )
    for name, kv in (("specsim's", own), ("the log's", logged), ("unbounded", (1e18, 1e18))):
        s = steady_state(dep, 0.7, [0], list(RATES), P, O, "rate", limits, kv, fixed_lengths=True)
        shape = s.tpot_s.shape
        print(f"model, KV {name}: rate  prefill  step@b  b  N_e  admission  TTFT  TPOT  past capacity")
        for j, rate in enumerate(RATES):
            ttft = float(s.ttft_s[0, j]) * 1e3
            print(
                f"  {rate:5.2f}/s  {float(np.broadcast_to(s.prefill_s, shape)[0, j]) * 1e3:6.1f}"
                f"  {float(s.step_s[0, j]) * 1e3:5.1f}  {float(s.decode_batch[0, j]):6.1f}"
                f"  {float(np.broadcast_to(s.in_engine, shape)[0, j]):6.1f}"
                f"  {float(np.broadcast_to(s.admission_s, shape)[0, j]) * 1e3:7.1f}"
                f"  {ttft:7.1f}  {float(s.tpot_s[0, j]) * 1e3:6.1f}  {bool(s.saturated[0, j])}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
