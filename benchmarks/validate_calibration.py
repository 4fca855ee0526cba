"""calibrate-engine on real public benchmark files, with no recorded acceptance: the held-out speculative TPOT error.

The files are `examples/bench/public/` (transcribed by scripts/convert_public_bench.py, their repositories and commits
in its docstring and in each folder's README).  For each deployment, every run is fitted as calibrate-engine fits it,
with the acceptance length the files recorded taken away (one rate fitted per speculative file instead), and judged on
data the fit did not see:

* each load fitted again without its runs (every repeat and workload at that concurrency), its runs predicted;
* each speculative file fitted again without its runs, its acceptance rate fitted alone on its own runs with the engine's
  terms held (the rate is the workload's, not the engine's), its runs predicted.

The acceptance the fit finds is set beside the one the study recorded (where it recorded one).  Nothing here was tuned
to these files: the run model and the fit were built and checked on generated files only.

    python benchmarks/validate_calibration.py
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from specsim.speculation.acceptance import expected_tokens
from specsim.calibration.bench_files import read_bench_file
from specsim.calibration.engine_fit import fit_engine
from specsim.calibration.runs import CalRun, SpecSetup
from specsim.speculation.deployment import Deployment

ROOT = Path("examples/bench/public")
A100 = ROOT / "a100-llama-3.1-8b-eagle3"
RTX = ROOT / "rtx5090-qwen3-14b-awq-draft"

#: (name, hardware, target, target options, drafter, steps, engine, plain files, speculative files)
DEPLOYMENTS = [
    (f"A100, Llama-3.1-8B {w} KV {kv}, EAGLE-3 x5, vLLM 0.24.0", "a100-sxm-80gb",
     "llama-3.1-8b" if w == "fp16" else str(A100 / "Meta-Llama-3.1-8B-Instruct-AWQ-INT4" / "config.json"),
     ({"weight_dtype": "fp16"} if w == "fp16" else {}) | ({"kv_dtype": "fp8"} if kv == "fp8" else {}),
     "eagle3", 5, "vllm@0.24.0",
     sorted(A100.glob(f"{w}-kv{kv}-plain-*.jsonl")), sorted(A100.glob(f"{w}-kv{kv}-eagle3-*.jsonl")))
    for w in ("fp16", "w4a16") for kv in ("fp16", "fp8")
] + [
    ("RTX 5090, Qwen3-14B-AWQ, Qwen3-0.6B draft x5, vLLM (serial rounds)", "rtx-5090", str(RTX / "Qwen3-14B-AWQ" / "config.json"),
     {}, "qwen3-0.6b", 5, "vllm@0.27", [RTX / "plain.jsonl"], [RTX / "draft-model.jsonl"]),
]


def runs_of(plain, spec, steps: int) -> tuple[list, dict]:
    """CalRuns with the recorded acceptance taken away, and what each speculative file recorded (mean length)."""
    out, recorded = [], {}
    for path in plain:
        out += [CalRun(r) for r in read_bench_file(path)]
    for path in spec:
        rs = read_bench_file(path)
        lengths = [r.accept_length for r in rs if r.accept_length is not None]
        if lengths:
            recorded[str(path)] = float(np.mean(lengths))
        out += [CalRun(dataclasses.replace(r, accept_length=None), SpecSetup(steps)) for r in rs]
    return out, recorded


def main() -> None:
    print(__doc__.split("\n\n")[0])
    print()
    rows = []
    for name, hw, target, options, drafter, steps, engine, plain, spec in DEPLOYMENTS:
        dep = Deployment.build(hw, target, drafter, None, engine, target_options=options or None)
        runs, recorded = runs_of(plain, spec, steps)
        fit = fit_engine(dep, runs)
        print(f"{name}: {sum(c.kind == 'plain' for c in fit.runs)} plain and {sum(c.kind == 'spec' for c in fit.runs)} "
              f"speculative runs; {dep.brief()}")
        print(f"  held-out speculative TPOT error: each load left out {fit.error('held_out', 'spec'):.1%}, each speculative "
              f"file left out {fit.error('held_out_sweep', 'spec'):.1%}; plain {fit.error('held_out', 'plain'):.1%}; "
              f"{dep.engine.key} as shipped: speculative {fit.error('preset', 'spec'):.1%}, plain {fit.error('preset', 'plain'):.1%}")
        for load, p, s in fit.error_by_load():
            print(f"    {load:<16} plain {p:6.1%}  speculative {s:6.1%}")
        for sweep, t in fit.acceptance.items():
            al = float(expected_tokens(t.value, steps))
            seen = recorded.get(sweep)
            print(f"  {Path(sweep).name}: acceptance fitted alpha {t.value:.3f} [{t.low:.3f}, {t.high:.3f}], AL {al:.2f}"
                  + (f"; the study recorded AL {seen:.2f}" if seen else "; none recorded"))
        terms = ", ".join(f"{t.label} {t.value:.4g} ({t.status})" for t in fit.terms.values())
        print(f"  terms: {terms}")
        for w in fit.warnings:
            print(f"  warning: {w}")
        print()
        rows.append((name, fit.error("held_out", "spec"), fit.error("held_out_sweep", "spec")))
    print("held-out speculative TPOT error, acceptance fitted (mean absolute):")
    for name, a, b in rows:
        print(f"  {name:<62} each load {a:5.1%}   each file {b:5.1%}")


if __name__ == "__main__":
    main()
