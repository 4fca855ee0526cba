"""Where a corpus source's speculative runs part from the model: each run's acceptance solved alone, and the round time
left over at one acceptance.

A source that records no acceptance gives its calibration one rate per sweep to fit.  Where the model's round grows
with the batch as the engine's does, the rate that matches each speculative run alone (every other value at the fit
on all the source's runs, ``fit_engine``) is the same at every load; where the engine's round grows faster, that rate
falls with the load.  At one rate (the one that matches the sweep's lowest load) the time a round takes beyond the
model's is (measured TPOT - predicted TPOT) x the tokens a round yields at that rate: a closed-loop TPOT also holds
the other users' prompts, which both sides carry, so this is a diagnosis, not a measurement of the round.

    python benchmarks/round_by_load.py [--only SOURCE]

Written for docs/reports/2026-12-06-amd-calibrated-miss.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_corpus import ROOT, build, deployments, limits_of, runs_of  # noqa: E402

from specsim.calibration.engine_calibration import runs_kv_bytes  # noqa: E402
from specsim.calibration.engine_fit import fit_engine  # noqa: E402
from specsim.calibration.model import RunModel  # noqa: E402
from specsim.speculation.acceptance import tokens_per_round  # noqa: E402

#: The AMD sources of the corpus that speculate with DeepSeek's MTP layer (SGLang's EAGLE worker).
SOURCES = ("mi300x-sglang-dsr1-mtp", "mi355x-sglang-dsr1-fp8-mtp", "mi300x-sglang-dsv3-mtp-lmsys")


def _with_alpha(values, sweep: int, alpha: float):
    alphas = list(values.alphas)
    alphas[sweep] = alpha
    return dataclasses.replace(values, alphas=tuple(alphas))


def _alone(model: RunModel, values, i: int) -> float:
    """The acceptance rate at which run ``i``'s prediction is its measurement, every other value at ``values``
    (NaN where no rate in [0.02, 0.999] reaches it)."""

    def gap(alpha: float) -> float:
        v = _with_alpha(values, int(model.sweep_index[i]), alpha)
        model.settle(v)
        return float(model.predict(v, np.array([i]))[0] / model.measured[i] - 1.0)

    try:
        return brentq(gap, 0.02, 0.999, xtol=1e-4)
    except ValueError:
        return float("nan")


def source_rows(name: str) -> list[dict]:
    """One row per run of the source's first deployment: load, batch, measured and fitted observable, and for a
    speculative run its acceptance alone and the round time beyond the model's at its sweep's lowest-load rate."""
    folder = ROOT / name
    spec = deployments(folder)[0]
    dep, why = build(spec, folder)
    if dep is None:
        raise ValueError(f"{name}: {why}")
    runs = runs_of(spec, folder)
    limits = limits_of(spec, dep)
    kv = runs_kv_bytes(dep, runs, limits, spec.get("memory_util"))
    fit = fit_engine(dep, runs, intervals=False, limits=limits, kv_bytes=kv)
    runs = fit.runs
    model = RunModel(dep, runs, limits, kv)
    values = fit.values
    alone = {i: _alone(model, values, i) for i, c in enumerate(runs) if c.kind == "spec"}
    first: dict = {}  # sweep -> the rate of its lowest load (runs are in load order)
    for i, a in alone.items():
        first.setdefault(int(model.sweep_index[i]), a)
    model.settle(values)
    fitted = model.predict(values, np.arange(len(runs)))
    rows = []
    for i, c in enumerate(runs):
        row = {
            "run": f"{Path(c.run.path).name}#{c.run.index}",
            "kind": c.kind,
            "load": c.run.load,
            "context": float(model.context[i]),
            "measured_s": float(model.measured[i]),
            "fitted_s": float(fitted[i]),
        }
        if i in alone:
            s = int(model.sweep_index[i])
            v = _with_alpha(values, s, first[s])
            model.settle(v)
            pred = float(model.predict(v, np.array([i]))[0])
            tokens = float(tokens_per_round(first[s], model.steps[i]))
            row |= {
                "batch": float(model.batch[i]),
                "alpha_alone": alone[i],
                # a round's time only where the run is judged by its TPOT (an end-to-end latency holds D rounds)
                "beyond_s": (model.measured[i] - pred) * tokens if model.observable[i] == "tpot" else float("nan"),
                "at_alpha": first[s],
            }
        rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="one source folder's name (default: the AMD MTP sources)")
    args = p.parse_args(argv)
    for name in [args.only] if args.only else SOURCES:
        print(f"{name}: every value fitted on all its runs but the one acceptance solved per run")
        print(
            f"{'run':26} {'kind':5} {'load':16} {'context':>7} {'measured':>9} {'fitted':>8} {'alpha alone':>11} "
            f"{'beyond the model, ms a round':>29}"
        )
        for r in source_rows(name):
            tail = ""
            if "alpha_alone" in r:
                beyond = "n/a (not a TPOT)" if r["beyond_s"] != r["beyond_s"] else f"{r['beyond_s'] * 1e3:+11.2f}"
                tail = f"{r['alpha_alone']:11.3f} {beyond} at alpha {r['at_alpha']:.3f}"
            print(
                f"{r['run']:26} {r['kind']:5} {r['load']:16} {r['context']:7.0f} {r['measured_s'] * 1e3:9.2f} "
                f"{r['fitted_s'] * 1e3:8.2f} {tail}"
            )
        print("(measured and fitted: the runs' observable in ms: TPOT, or end-to-end latency where that is recorded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
