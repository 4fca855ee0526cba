"""Where a corpus source's held-out calibration misses: each load left out, the fit without it, and the left-out runs.

``validate_corpus.py`` column (b') leaves each load of a source out of the fit (acceptance included) and predicts its
speedup.  This prints, per load left out: the terms of the fit on the other loads (value, 95% interval, and which are
held at the preset or not identified, with why), and each left-out run's measured and predicted observable (TPOT,
or end-to-end latency where that is what the source recorded), its decode batch, its prompt share of the step and
what bounds the engine's population; then the load's measured and predicted speedup.  The same for the fit on all
the source's runs (in-sample), so that a miss that is there too is told from one that holding out makes.  Every
deployment of the source (its manifest's ``deployments``; ``--deployment TEXT`` keeps those whose name holds TEXT),
each with validate_corpus's runs, limits and KV cache; a group whose sweep's acceptance would be fitted only on the
runs left out is not scored, as there.

    python benchmarks/corpus_misses.py --only SOURCE [--only SOURCE ...] [--deployment TEXT]

Written for the diagnosis in docs/reports/2026-12-07-calibrated-misses.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_corpus import ROOT, build, deployments, limits_of, runs_of  # noqa: E402

from specsim.calibration.engine_calibration import runs_kv_bytes  # noqa: E402
from specsim.calibration.engine_fit import (  # noqa: E402
    NUDGE,
    _default_alpha,
    _order,
    _speedups,
    _terms,
    fit_pinned,
    nudged_runs,
)
from specsim.calibration.model import RunModel, Values  # noqa: E402
from specsim.calibration.runs import check_design, check_runs, identifiable  # noqa: E402

#: The sources that miss (b') at 10% on the corpus of 2026-12-06, and two of the same model that pass; the A100
#: source's AWQ-INT4 fp16-KV deployment misses since 1004fed (pass ``--deployment``).
SOURCES = (
    "b200-trtllm-dsr1-fp8-mtp",
    "b200-trtllm-dsr1-fp8-ep8-mtp",
    "mi355x-sglang-dsr1-fp8-mtp",
    "mi300x-sglang-dsr1-mtp",
    "rtx5090-qwen3-14b-awq-draft",
    "h200-sglang-dsr1-fp8-mtp",
    "b200-sglang-dsr1-fp8-mtp",
)
_UNIT = {"scale": 1.0, "prefill_scale": 1.0, "overlap_share": 1.0, "alpha": 1.0}


def _term_line(t) -> str:
    k = _UNIT.get(t.name, 1e3)
    unit = "" if t.name in _UNIT else " ms"
    span = f" [{t.low * k:.4g}, {t.high * k:.4g}]" if t.low is not None else ""
    status = "" if t.status == "fitted" else f" {t.status.upper()}"
    why = f"  ({t.why[:110]})" if t.status != "fitted" and t.why else ""
    return f"      {t.label:<30} {t.value * k:10.4g}{unit}{span}{status}{why}"


def _fit(model: RunModel, nudged: list, train: np.ndarray, preset, start: Values, alpha0: float):
    """(values, terms, acceptance) of the fit on runs ``train``, as fit_engine's and its held-out fits make it."""
    runs = model.runs
    design = identifiable([runs[i] for i in train], model.fit_scale, {k: model.batch[i] for k, i in enumerate(train)})
    pinned = fit_pinned(model, nudged, train, design, preset, start, alpha0)
    terms, acceptance, _ = _terms(model, pinned.result, design, preset, True, alpha0, pinned.held)
    return pinned.result.values, terms, acceptance


def _print_runs(model: RunModel, values: Values, index: np.ndarray, lonely: set) -> None:
    model.settle(values)
    times = model.times(values, index)
    pred = model.predict(values, index)
    for k, i in enumerate(index):
        c = model.runs[i]
        print(
            f"      {c.kind:5} {c.run.load:>14} {c.sweep[:26] if c.setup else '':26} "
            f"{model.observable[i]:4} measured {model.measured[i] * 1e3:8.2f} ms  predicted {pred[k] * 1e3:8.2f} ms "
            f"({pred[k] / model.measured[i] - 1:+6.1%})  batch {model.batch[i]:6.1f}  "
            f"prompt share {times['prefill_share'][k]:5.1%}  engine holds {model.in_engine[i]:.0f} "
            f"({model.limited_by[i] or '-'})"
        )
    all_runs = np.arange(len(model.runs))
    full_pred = np.full(len(model.runs), np.nan)
    full_pred[index] = pred
    full_pred[[i for i in index if model.runs[i].setup is not None and model.runs[i].sweep in lonely]] = np.nan
    keep = [c.setup is None or i in set(index.tolist()) for i, c in enumerate(model.runs)]
    sub = [c for c, k in zip(model.runs, keep) if k]
    for label, m, p in _speedups(sub, model.measured[all_runs[keep]], full_pred[all_runs[keep]]):
        if np.isfinite(p):
            print(f"      speedup {label}: measured {m:.3f} predicted {p:.3f} ({p / m - 1:+.1%})")
    if lonely:
        print(
            f"      not scored (validate_corpus's NaN): the acceptance of {', '.join(sorted(lonely))} is fitted only on "
            "the runs left out"
        )


def diagnose(name: str, only: str | None = None) -> None:
    folder = ROOT / name
    specs = [s for s in deployments(folder) if only is None or only in s["name"]]
    if not specs:
        names = "; ".join(s["name"] for s in deployments(folder))
        raise LookupError(f"corpus_misses.py: no deployment of {name} names {only!r}; its deployments: {names}")
    for spec in specs:
        _diagnose(name, spec, folder)


def _diagnose(name: str, spec: dict, folder: Path) -> None:
    dep, why = build(spec, folder)
    if dep is None:
        print(f"{name} / {spec['name']}: skipped ({why})")
        return
    runs = _order(runs_of(spec, folder))
    check_design(dep, runs)
    check_runs(dep, runs)
    limits = limits_of(spec, dep)
    kv = runs_kv_bytes(dep, runs, limits, spec.get("memory_util"))
    model = RunModel(dep, runs, limits, kv)
    runs = model.runs
    preset = dep.engine
    alpha0 = _default_alpha(dep)
    start = Values.at_preset(preset, alpha0, len(model.sweeps))
    model.settle_start(start, preset.key)
    nudged = [RunModel(dep, nudged_runs(runs, e), limits, kv) for e in (NUDGE, -NUDGE)]
    everything = np.arange(len(runs))
    print(f"== {name} / {spec['name']}: {dep.engine.key}, {dep.hardware.name}; limits {limits}")
    loads = list(dict.fromkeys(c.run.load for c in runs))
    for out in [None, *loads]:
        use = np.array([out is None or c.run.load != out for c in runs])
        m, held, begin = model.trained_on(use, nudged, start, alpha0)
        values, terms, acceptance = _fit(m, held, everything[use], preset, begin, alpha0)
        print(f"  -- {'fitted on all runs (in-sample)' if out is None else f'load {out} left out'}")
        for t in terms.values():
            print(_term_line(t))
        for sweep, t in acceptance.items():
            print(_term_line(t).replace("acceptance", f"acceptance {sweep[:20]}", 1))
        trained = set(m.sweep_index[use].tolist())
        lonely = {runs[i].sweep for i in everything[~use] if m.sweep_index[i] >= 0 and m.sweep_index[i] not in trained}
        _print_runs(m, values, everything if out is None else everything[~use], lonely)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", action="append", help="a source folder's name (repeatable; default: the seven above)")
    p.add_argument("--deployment", help="keep the source's deployments whose name holds this text (default: every one)")
    args = p.parse_args(argv)
    try:
        for name in args.only or SOURCES:
            diagnose(name, args.deployment)
    except LookupError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
