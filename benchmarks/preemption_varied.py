"""The full engine's preemption charge (:mod:`specsim.serving.preemption`) against the request-level simulator where
request lengths vary: Poisson arrivals past the KV-bound capacity and a closed loop past the KV cache, on an H100 with
Llama-3.1-8B, plain and EAGLE-3 at gamma 3, acceptance 0.7 (``steady_vs_sim_crossing.py``'s deployment).

Lengths are drawn, seeded, as

* ``uniform``: ``vllm bench serve``'s random dataset at ``--random-range-ratio 0.5``, prompt and output alike
  (:func:`steady_vs_sim_kv.lengths`);
* ``lognormal``: the workloads' shape (:class:`specsim.core.workloads.Workload`), the chat workload's assumed
  log-spreads 0.6 (prompt) and 0.8 (output), medians set so that the means are the case's (mean = median
  exp(sigma^2 / 2)), clipped to 16,384 tokens.

The capacity is the plain engine's KV-bound rate (a closed loop of the N_e its cache holds at the mean lengths, as
``preemption_anatomy.py`` takes it).  The steady state is :func:`specsim.serving.steady.served_state` at the mean lengths
with ``fixed_lengths=False`` (what a ``--workload`` answer gives); the simulator's steady part is the middle half of a
Poisson run (``steady_vs_sim_open.middle``) or a closed loop's waves past the third (``steady_vs_sim_kv.steady_part``).
Each row prints preemptions a request, steady / simulator, the TPOT gap, and off the simulator's ledger (the
instrumentation of ``preemption_anatomy.py``) the finishes an iteration, lambda, with their variance over mean, the
share of iterations with no finish, z, beside e^-lambda (finishes spread as Poisson's), and R = recomputed tokens a
request over the mean output, the z the charge would need.

    python benchmarks/preemption_varied.py [--only 0,3] [--requests 8000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other benchmarks beside it

# (label, distribution, prompt mean, output mean, load: Poisson rate as a multiple of capacity, or closed-loop users)
CASES = [
    ("uniform 1000/256 1.5x", "uniform", 1000, 256, ("rate", 1.5)),
    ("uniform 1000/256 1.2x", "uniform", 1000, 256, ("rate", 1.2)),
    ("uniform 1000/1024 1.5x", "uniform", 1000, 1024, ("rate", 1.5)),
    ("uniform 1000/1024 1.2x", "uniform", 1000, 1024, ("rate", 1.2)),
    ("lognormal 1000/256 1.5x", "lognormal", 1000, 256, ("rate", 1.5)),
    ("lognormal 1000/256 1.2x", "lognormal", 1000, 256, ("rate", 1.2)),
    ("lognormal 1000/1024 1.5x", "lognormal", 1000, 1024, ("rate", 1.5)),
    ("lognormal 1000/1024 1.2x", "lognormal", 1000, 1024, ("rate", 1.2)),  # held out (chosen before any run)
    ("uniform 1000/256 closed 1024u", "uniform", 1000, 256, ("users", 1024)),
    ("lognormal 1000/1024 closed 1024u", "lognormal", 1000, 1024, ("users", 1024)),
    ("fixed 1000/8000 1.5x", "fixed", 1000, 8000, ("rate", 1.5)),
]
GAMMA, ALPHA = 3, 0.7


def draw(kind: str, P: int, O: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(prompts, outputs) of ``n`` requests drawn as ``kind`` (the module's docstring)."""
    from steady_vs_sim_kv import lengths

    from specsim.core.workloads import Workload

    if kind == "fixed":
        return np.full(n, P), np.full(n, O)
    if kind == "uniform":
        return lengths(P, n, 0.5, rng), lengths(O, n, 0.5, rng)
    sp, so = 0.6, 0.8
    w = Workload("lognormal", P * math.exp(-(sp**2) / 2), sp, O * math.exp(-(so**2) / 2), so, 16384, 16384, "")
    return w.sample(n, rng)


def run_case(case, n: int, seed: int = 0) -> list[dict]:
    """Both arms of ``case``: the steady state's charge and TPOT beside the simulator's, and the ledger's finishes."""
    from preemption_anatomy import ledgered_runs
    from steady_vs_sim_kv import steady_part
    from steady_vs_sim_open import middle

    from specsim.serving.steady import engine_limits, served_state
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    label, kind, P, O, (load, x) = case
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm")
    limits, _ = engine_limits(dep.engine, dep.hardware)
    fixed = kind == "fixed"
    rng = np.random.default_rng(seed)
    if load == "rate":
        big = served_state(dep, ALPHA, [0], [4096], P, O, limits=limits, fixed_lengths=fixed)
        cap = served_state(dep, ALPHA, [0], [float(big.in_engine[0, 0])], P, O, limits=limits, fixed_lengths=fixed)
        rate = x * float(cap.requests_per_s[0, 0])
        s = served_state(dep, ALPHA, [0, GAMMA], [rate], P, O, limits=limits, kind="rate", fixed_lengths=fixed)
        arrivals, users = np.cumsum(rng.exponential(1.0 / rate, n)), None
    else:
        s = served_state(dep, ALPHA, [0, GAMMA], [x], P, O, limits=limits, fixed_lengths=fixed)
        arrivals, users = None, int(x)
    prompts, outputs = draw(kind, P, O, n, rng)
    runs, captured = ledgered_runs(dep, Requests(prompts, outputs, arrivals), ALPHA, GAMMA, limits, users, seed)
    rows = []
    charged = np.broadcast_to(s.preemptions, s.tpot_s.shape)
    for i, (run, ledger) in enumerate(zip(runs, captured)):
        if users is None:
            got = middle(run)
            spanned = n // 2
            ends = np.sort(run.finish_s)
            t0, t1 = float(ends[n // 4]), float(ends[3 * n // 4])
        else:
            tpot, _, pre = steady_part(run, users, 3)[:3]
            got, spanned = {"tpot": tpot, "preemptions": pre}, n
            ends = np.sort(run.finish_s)
            t0, t1 = float(ends[3 * users]), float(ends[n - users])
        k = ledger.clock.per_iteration(t0, t1)
        lam = float(k.mean())
        done = [e for e in ledger.preempted if t0 < e[0] <= t1]
        finished = int(((run.finish_s > t0) & (run.finish_s <= t1)).sum())
        recomputed = sum(e[2] for e in done) / max(finished, 1)
        waits = np.array([y - x for x, y in ledger.waits if t0 < x <= t1])
        rate = finished / max(t1 - t0, 1e-12)
        rows.append(
            {
                "arm": f"g{GAMMA if i else 0}",
                "n_e": float(s.in_engine[i, 0]),
                "steady_m": float(charged[i, 0]),
                "sim_m": got["preemptions"] / spanned,
                "sim_m_span": len(done) / max(finished, 1),
                "steady_tpot": float(s.tpot_s[i, 0]),
                "sim_tpot": got["tpot"],
                "past": bool(s.saturated[i, 0]) if users is None else None,
                "lambda": lam,
                "dispersion": float(k.var() / max(lam, 1e-9)),
                "z": float(np.mean(k == 0)),
                "poisson": math.exp(-lam),
                "R_over_O": recomputed / float(np.mean(outputs)),
                # the resumes and the waits apart: tokens a resume recomputes (the charge's L = P + m O / (4 N_e), the
                # root of L^2 - P L - R O / (4 N_e) with R = m L: preemption's docstring, beside), the output the
                # victims had decoded, the share preempted before, and the wait at the queue's front in inter-finish
                # intervals (the charge: half of one)
                "L": (
                    float(np.mean([e[2] for e in done])) if done else 0.0,
                    P + float(charged[i, 0]) * O / (4.0 * float(s.in_engine[i, 0])),
                ),
                "decoded": float(np.mean([e[6] for e in done])) if done else 0.0,
                "again": float(np.mean([e[5] for e in done])) if done else 0.0,
                "wait": float(waits.mean()) * rate if waits.size else 0.0,
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated case indices")
    ap.add_argument("--requests", type=int, default=8000, help="requests a run simulates")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    picks = range(len(CASES)) if args.only is None else [int(v) for v in args.only.split(",")]
    print(
        "case | arm | N_e | preemptions/request steady / sim (span) | TPOT ms steady / sim (gap) | lambda, var/mean"
        " | z (e^-lambda) | R / O | L sim / steady | victims' decoded | again | wait (finishes)"
    )
    for j in picks:
        for r in run_case(CASES[j], args.requests, args.seed):
            print(
                f"{j} {CASES[j][0]} | {r['arm']} | {r['n_e']:.0f} | {r['steady_m']:.3f} / {r['sim_m']:.3f}"
                f" ({r['sim_m_span']:.3f}) | {r['steady_tpot'] * 1e3:.2f} / {r['sim_tpot'] * 1e3:.2f}"
                f" ({r['steady_tpot'] / r['sim_tpot'] - 1:+.0%}){' past' if r['past'] else ''}"
                f" | {r['lambda']:.3f}, {r['dispersion']:.2f} | {r['z']:.3f} ({r['poisson']:.3f}) | {r['R_over_O']:.3f}"
                f" | {r['L'][0]:.0f} / {r['L'][1]:.0f} | {r['decoded']:.0f} | {r['again']:.2f} | {r['wait']:.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
