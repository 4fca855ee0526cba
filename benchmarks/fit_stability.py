"""Is a held-out calibration figure a property of the runs, or of rounding?  The corpus's fits, run twice.

Every measured time of every run of a source is scaled by (1 + eps) (throughputs by 1 / (1 + eps)): nothing a speedup
depends on changes beyond eps, so a fit that is a property of the runs predicts the same held-out speedups to about
eps.  A fit that decides what to hold by where a solver stops along a flat valley (two values trading off) can
decide otherwise, and its held-out prediction moves by whatever the held value moves it.  For each deployment of the
corpus (``examples/bench/public/``) this prints the largest relative change of a held-out speedup in (b) (calibrated
at one gamma, or each load left out) and (c) (the acceptance fitted, each load left out), and how many of its groups
moved by more than 0.1%.

    python benchmarks/fit_stability.py [--eps 1e-9] [--only NAME]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_corpus import ROOT, build, deployments, limits_of, one_gamma, runs_of, without_acceptance  # noqa: E402

from specsim.calibration.engine_fit import nudged_runs  # noqa: E402


def _moved(a: dict, b: dict) -> tuple[float, int, int]:
    """(largest relative change of a predicted speedup, groups moved by more than 0.1%, groups)."""
    keys = [k for k in a if k in b and np.isfinite(a[k][1]) and np.isfinite(b[k][1])]
    if not keys:
        return float("nan"), 0, 0
    change = np.array([abs(b[k][1] / a[k][1] - 1.0) for k in keys])
    return float(change.max()), int((change > 1e-3).sum()), len(keys)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--eps", type=float, default=1e-9, help="the relative change of every measured time (default 1e-9)")
    p.add_argument("--only", help="one source folder's name")
    args = p.parse_args(argv)
    print(
        f"every measured time scaled by 1 + {args.eps:g}: the largest change of a held-out speedup, groups moved > 0.1%"
    )
    print(f"{'source / deployment':<60} {'(b) largest':>12} {'moved':>7} {'(c) largest':>12} {'moved':>7}")
    for folder in sorted(ROOT.iterdir()):
        if not (folder / "source.yaml").is_file() or (args.only and folder.name != args.only):
            continue
        for spec in deployments(folder):
            dep, why = build(spec, folder)
            name = f"{folder.name} / {spec['name']}"[:60]
            if dep is None:
                continue
            runs = runs_of(spec, folder)
            limits = limits_of(spec, dep)
            cells = []
            for fit in (lambda r: one_gamma(dep, r, limits)[0], lambda r: without_acceptance(dep, r, limits)[0]):
                try:
                    cells.append(_moved(fit(runs), fit(nudged_runs(runs, args.eps))))
                except ValueError:  # what calibrate-engine refuses (two checkpoints): not fitted
                    cells.append((float("nan"), 0, 0))
            text = [f"{c[0]:>12.2e} {c[1]:>3}/{c[2]:<3}" if c[2] else f"{'n/a':>12} {'':>7}" for c in cells]
            print(f"{name:<60} {text[0]} {text[1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
