"""specsim at the user's concurrency, judged on public benchmark sweeps no one here fitted to.

The corpus is ``examples/bench/public/``: other people's plain and speculative runs of one deployment at several loads,
transcribed into ``vllm bench serve`` records (each folder's ``source.yaml`` names the repository, commit, files,
engine and field mapping).  Every number this script reports is a speedup at a load: the plain runs' TPOT over the
speculative runs' at the same load and lengths (their end-to-end latency, or speculative over plain throughput, where
that is what the source recorded), measured against predicted, per (load, draft steps, sweep) group:

(a) uncalibrated: the engine preset as shipped, the acceptance from the record (each run's recorded acceptance length,
    or, for a run that records none, the one its sweep's recorded runs give it, pooled as calibrate-engine pools them:
    runs.with_sweep_acceptance); where a sweep records none, the drafter's published acceptance, said so (a*), or not
    available where that stops short of the steps run;
(b) calibrated at one number of draft steps, predicting the others: every plain run and the speculative runs at one step
    count fitted (calibrate-engine's fit), the other step counts predicted with the acceptance from their record;
    averaged over which step count is fitted.  A source at one step count has no other to predict: there, each load
    left out of the fit and predicted (b');
(c) calibrated without the recorded acceptance: the acceptance taken away and fitted, one rate per sweep; each load
    left out of the fit (its acceptance included) and predicted; the fitted rate beside the recorded one (the per-token
    rate of the sweep's recorded runs, pooled as calibrate-engine pools them for a run that records none:
    runs.pooled_alpha, each run's rate weighted by its verifications);
(d) best-gamma regret: where a load was measured at several step counts, the measured speedup at the step count specsim
    picks (the most speedup by (a)) over the best measured.

Whole sources are held out: no value in the model or its presets was fitted to any of them (the presets are fitted to
``specsim/calibration/data/speculation_public.csv`` and the ROCm sweeps, other sources).  What changed after looking at
them is said in ``docs/reports/2026-12-02-concurrency.md``.

    python benchmarks/validate_corpus.py [--only NAME] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import yaml

from specsim.calibration.bench_files import common_statistic, read_bench_file
from specsim.calibration.engine_calibration import runs_kv_bytes
from specsim.calibration.engine_fit import NUDGE, _default_alpha, fit_engine, fit_pinned, nudged_runs, spans_its_bounds
from specsim.calibration.model import RunModel, Values
from specsim.calibration.runs import CalRun, SpecSetup, group_sweeps, identifiable, with_prompt_spreads
from specsim.speculation.deployment import Deployment

ROOT = Path("examples/bench/public")


def deployments(folder: Path) -> list[dict]:
    """The deployments of a source folder: its manifest's ``deployments`` (one per variant), else one of all its runs."""
    src = yaml.safe_load((folder / "source.yaml").read_text())
    out = []
    for d in src.get("deployments") or [{"name": src.get("title", folder.name), "files": "*"}]:
        runs = [r for r in src["runs"] if Path(r["file"]).match(d["files"])]
        out.append({**src, **d, "runs": runs, "source": folder.name})
    return out


def limits_of(spec: dict, dep):
    """The engine's scheduling limits the source ran with: its manifest's max_num_seqs and max_batched_tokens, else the
    engine's own on the source's GPU (:func:`specsim.serving.steady.engine_limits`, as every command takes them)."""
    from specsim.serving.steady import engine_limits

    given = (spec.get("max_num_seqs"), spec.get("max_batched_tokens"))
    return engine_limits(dep.engine, dep.hardware, spec.get("load") == "batch", *(v and int(v) for v in given))[0]


def build(spec: dict, folder: Path):
    """(Deployment, why not) of a deployment's manifest: None and the reason where specsim cannot model it."""
    if not spec.get("engine_spec"):
        return None, f"engine {spec.get('engine')}: not one of the engines specsim models"
    if not spec.get("target"):
        return None, "the target's config.json is not in the source (specsim cannot shape the model)"
    target = spec["target"]
    if target.endswith(".json"):
        target = str(folder / target)
    options = {k: spec[k] for k in ("weight_dtype", "kv_dtype") if spec.get(k)}
    if spec.get("tp", 1) > 1:
        options["tp"] = spec["tp"]
    try:
        dep = Deployment.build(
            spec["hardware"], target, spec["drafter"], timing=None, engine=spec["engine_spec"], target_options=options
        )
    except (ValueError, KeyError) as err:
        return None, f"specsim refuses the deployment: {err}"
    return dep, None


def runs_of(spec: dict, folder: Path) -> list[CalRun]:
    """The runs of a deployment, grouped into sweeps as its manifest says: by each row's workload where it names one,
    else by ``sweep_by`` (default by lengths, as calibrate-engine)."""
    runs = []
    # One statistic for every run, as calibrate-engine reads them (the medians where some record holds no mean).
    prefer, _ = common_statistic([folder / row["file"] for row in spec["runs"]])
    for row in spec["runs"]:
        setup = None
        if row["kind"] == "spec":
            setup = SpecSetup(int(row["steps"]), sweep=row.get("workload"))
        runs += [CalRun(r, setup) for r in read_bench_file(folder / row["file"], prefer)]
    # The spread of acceptance across the prompts, where single-request runs record it: part of the recorded
    # acceptance, as the rate is ((a) and (b) take it, (c) takes it away).
    runs = with_prompt_spreads(runs)[0]
    # A speculative run with no plain run at its load has nothing to be a speedup over.  calibrate-engine fits it with
    # the others since 2026-12-05 (it refused it before); the corpus leaves it out, as it always has, so that its
    # figures stay those of the runs every earlier report fitted: by load alone (calibrate-engine's note, runs.over,
    # also names a load whose plain runs are of other lengths, since 2026-12-05; the corpus keeps such runs, as before).
    plain = {c.run.load for c in runs if c.kind == "plain"}
    runs = [c for c in runs if c.setup is None or c.run.load in plain]
    return group_sweeps(runs, spec.get("sweep_by", "lengths"))[0]


def unscored(spec: dict, folder: Path) -> str | None:
    """Why a deployment has no speedup to score, or None: no speculative run has a plain run at its load and lengths
    (:func:`specsim.calibration.runs.over`), each arm's loads said (the arms of one campaign stored at disjoint
    concurrencies, as the MI325X InferenceX rows and the B200 TensorRT-LLM 1.3.0rc14 ones are)."""
    from specsim.calibration.runs import load_key, over

    arms: dict = {"plain": [], "spec": []}
    for row in spec["runs"]:
        arms[row["kind"]] += read_bench_file(folder / row["file"])
    if any(over(p, s) for s in arms["spec"] for p in arms["plain"]):
        return None
    said = {k: ", ".join(sorted({r.load for r in v}, key=load_key)) or "none" for k, v in arms.items()}
    return (
        f"no speculative run has a plain run at its load and lengths (plain at {said['plain']}; speculative at "
        f"{said['spec']}): no speedup to score"
    )


def _speedups(runs: list[CalRun], prediction: np.ndarray) -> dict:
    """(load, steps, sweep) -> (measured, predicted) speedup over the plain runs at that load and lengths."""
    from specsim.calibration.engine_fit import _speedups as pairs

    measured = np.array([c.run.value for c in runs])
    keys = list(dict.fromkeys((c.run.load, c.setup.steps, c.sweep) for c in runs if c.setup is not None))
    out = {}
    for key in keys:
        sub = [c for c in runs if c.setup is None or (c.run.load, c.setup.steps, c.sweep) == key]
        idx = [runs.index(c) for c in sub]
        got = pairs(sub, measured[idx], prediction[idx])
        if got:
            out[key] = got[0][1:]
    return out


def _error(pairs: dict) -> tuple[float, float, int]:
    """(mean absolute relative error, mean signed error, groups) of predicted over measured speedups."""
    e = np.array([p / m - 1 for m, p in pairs.values() if np.isfinite(p) and np.isfinite(m)])
    return (float(np.mean(np.abs(e))), float(np.mean(e)), int(e.size)) if e.size else (float("nan"), float("nan"), 0)


def preset_predictions(dep, runs: list[CalRun], limits=None, kv=None) -> tuple[RunModel, np.ndarray]:
    """(the runs' model, each run's observable) by the preset as shipped, an acceptance not recorded at the drafter's
    published one."""
    model = RunModel(dep, runs, limits, kv)
    values = Values.at_preset(dep.engine, _default_alpha(dep), len(model.sweeps))
    model.settle(values)
    return model, model.predict(values, np.arange(len(runs)))


def uncalibrated(dep, runs: list[CalRun], limits=None, kv=None) -> tuple[dict, dict, dict]:
    """(a): the preset as shipped, with the acceptance from the record: (groups whose runs recorded it, groups whose
    runs did not, predicted with the drafter's published acceptance, said so: a*; groups whose runs did not, at more
    steps than that acceptance covers: not predicted, their measured speedup kept with NaN)."""
    model, predicted = preset_predictions(dep, runs, limits, kv)
    pairs = _speedups(runs, predicted)
    recorded = {k: v for k, v in pairs.items() if k[2] not in model.sweeps}
    deepest = published_steps(dep)
    published = {k: v for k, v in pairs.items() if k[2] in model.sweeps}
    covered = {k: v for k, v in published.items() if deepest is None or k[1] <= deepest}
    return recorded, covered, {k: (v[0], np.nan) for k, v in published.items() if k not in covered}


def published_steps(dep) -> int | None:
    """The draft steps the drafter's published acceptance covers: None for any (a per-token rate), 0 where there is
    none (n-gram lookup).  DeepSeek-V3's MTP acceptance is one position's (drafters' classic table): a group at 2 or 3
    steps has no published acceptance, and taking that one rate at every depth is the extrapolation
    Acceptance.expected_tokens refuses, so (a*) is not available there."""
    try:
        acc, _ = dep.drafter.default_acceptance(dep.target)
    except ValueError:
        return 0
    return acc.max_gamma


def one_gamma(dep, runs: list[CalRun], limits=None, kv=None) -> tuple[dict, str]:
    """(b): fitted at one step count (and every plain run), the others predicted; their acceptance from the record."""
    steps = sorted({c.setup.steps for c in runs if c.setup is not None})
    if len(steps) < 2:
        fit = fit_engine(dep, runs, intervals=False, limits=limits, kv_bytes=kv)
        return {k: v for k, v in zip(_keys(fit.runs), _pairs_of(fit.runs, fit.held_out))}, "b': each load left out"
    out: dict = {}
    model = RunModel(dep, runs, limits, kv)
    nudged = [RunModel(dep, nudged_runs(runs, e), limits, kv) for e in (NUDGE, -NUDGE)]
    alpha0 = _default_alpha(dep)
    e = dep.engine
    start = Values.at_preset(e, alpha0, len(model.sweeps))
    everything = np.arange(len(runs))
    for s in steps:
        train = everything[[c.setup is None or c.setup.steps == s for c in runs]]
        model.settle(start)
        design = identifiable(
            [runs[i] for i in train], model.fit_scale, {k: model.batch[i] for k, i in enumerate(train)}
        )
        res = fit_pinned(model, nudged, train, design, e, start, alpha0).result
        pred = model.predict(res.values, everything)
        for key, pair in _speedups(runs, pred).items():
            if key[1] != s:
                out.setdefault(key, []).append(pair)
    return {
        k: (v[0][0], float(np.mean([p for _, p in v]))) for k, v in out.items()
    }, "b: each step count fitted, the others predicted"


def _keys(runs):
    return [(c.run.load, c.setup.steps, c.sweep) for c in runs if c.setup is not None]


def _pairs_of(runs, prediction):
    got = _speedups(runs, prediction)
    return [got.get(k, (np.nan, np.nan)) for k in _keys(runs)]


def without_acceptance(dep, runs: list[CalRun], limits=None, kv=None) -> tuple[dict, list[str]]:
    """(c): the recorded acceptance taken away and fitted per sweep; each load left out and predicted."""
    from specsim.calibration.runs import pooled_alpha, told_acceptance

    recorded = told_acceptance(runs)
    bare = []
    for c in runs:
        setup = c.setup if c.setup is None else dataclasses.replace(c.setup, acceptance_spread=0.0)
        bare.append(dataclasses.replace(c, run=dataclasses.replace(c.run, accept_length=None), setup=setup))
    fit = fit_engine(dep, bare, intervals=True, limits=limits, kv_bytes=kv)
    lines = []
    for sweep, t in fit.acceptance.items():
        rec_alpha = pooled_alpha(recorded[sweep]) if sweep in recorded else None
        inside = (
            ""
            if rec_alpha is None or t.low is None
            else (" (inside its interval)" if t.low <= rec_alpha <= t.high else " (outside its interval)")
        )
        lines.append(
            (f"{sweep}: fitted alpha {t.value:.3f}" if t.status == "fitted" else f"{sweep}: alpha {t.value:.3f}")
            + (f" [{t.low:.3f}, {t.high:.3f}]" if t.low is not None else "")
            + (
                " (not pinned: its interval spans every value; kept)"
                if t.status == "fitted" and spans_its_bounds(t)
                else f" {t.status}"
                if t.status == "fitted"
                else f" {t.status}, held at the drafter's published"
            )
            + (f"; recorded {rec_alpha:.3f}{inside}" if rec_alpha is not None else "; none recorded")
        )
    pairs = {k: v for k, v in zip(_keys(fit.runs), _pairs_of(fit.runs, fit.held_out))}
    return pairs, lines


def regret(runs: list[CalRun], measured_pred: dict) -> tuple[float, int]:
    """(d): the mean over (load, sweep) of the measured speedup at specsim's step count over the best measured."""
    groups: dict = {}
    for (load, steps, sweep), (m, p) in measured_pred.items():
        groups.setdefault((load, sweep), []).append((steps, m, p))
    ratios = [max(g, key=lambda x: x[2])[1] / max(x[1] for x in g) for g in groups.values() if len(g) >= 2]
    return (float(np.mean(ratios)), len(ratios)) if ratios else (float("nan"), 0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="one source folder's name")
    p.add_argument("--json", help="write every figure to this JSON file")
    args = p.parse_args(argv)
    results = []
    for folder in sorted(ROOT.iterdir()):
        if not (folder / "source.yaml").is_file() or (args.only and folder.name != args.only):
            continue
        for spec in deployments(folder):
            results.append(_one(folder, spec))
    _print(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=float))
    return 0


def _one(folder: Path, spec: dict) -> dict:
    row = {
        "source": folder.name,
        "deployment": spec["name"],
        "engine": spec.get("engine_spec"),
        "hardware": spec["hardware"],
        "drafter": spec["drafter"],
    }
    dep, why = build(spec, folder)
    if dep is None or (why := unscored(spec, folder)):
        return row | {"skipped": why}
    runs = runs_of(spec, folder)
    row["runs"] = len(runs)
    limits = limits_of(spec, dep)
    # The KV cache of the runs' engine, at the share its recipe set where the manifest records one (as calibrate-engine
    # --memory-util takes it), else the engine's own.
    kv = runs_kv_bytes(dep, runs, limits, spec.get("memory_util"))
    a, a_star, beyond = uncalibrated(dep, runs, limits, kv)
    row["a"], row["a_star"] = _error(a), _error(a_star)
    row["a_star_beyond"] = sorted({k[1] for k in beyond})
    row["a_star_depth"] = published_steps(dep)
    row["statistic"] = common_statistic([folder / r["file"] for r in spec["runs"]])[1]
    a_all = a | a_star | beyond
    try:
        b, b_how = one_gamma(dep, runs, limits, kv)
        c, lines = without_acceptance(dep, runs, limits, kv)
    except (
        ValueError
    ) as err:  # what calibrate-engine refuses (runs of two checkpoints, one load only): said, not fitted
        b, b_how, c, lines = {}, f"not available: {err}", {}, [f"not available: {err}"]
    row["b"], row["b_how"] = _error(b), b_how
    row["c"], row["c_alpha"] = _error(c), lines
    row["regret_a"] = regret(runs, a)
    row["regret_b"] = regret(runs, b)
    row["groups"] = {
        f"{k[0]}, {k[1]} steps, {k[2]}": {
            "measured": m,
            "a": a_all.get(k, (m, np.nan))[1],
            "recorded": k in a,
            "b": b.get(k, (m, np.nan))[1],
            "c": c.get(k, (m, np.nan))[1],
        }
        for k, (m, _) in a_all.items()
    }
    print(f"done: {folder.name} / {spec['name']}", file=sys.stderr)
    return row


def _pct(x) -> str:
    return "n/a" if x is None or x != x else f"{x:.1%}"


def _print(results: list[dict]) -> None:
    print("speedup at the load: mean absolute error (mean signed error, groups) per deployment, whole sources held out")
    head = (
        f"{'source / deployment':<52} {'(a) acc. recorded/pooled':>24} {'(a*) published acceptance':>26} "
        f"{'(b) one gamma fitted':>22} {'(c) no acceptance':>22} {'(d) regret':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        name = f"{r['source']} / {r['deployment']}"[:52]
        if "skipped" in r:
            print(f"{name:<52} skipped: {r['skipped']}")
            continue
        cells = [
            f"{_pct(e[0])} ({e[1]:+.1%}, {e[2]})" if e[2] else "n/a" for e in (r["a"], r["a_star"], r["b"], r["c"])
        ]
        reg = f"{r['regret_a'][0]:.3f} ({r['regret_a'][1]})" if r["regret_a"][1] else "n/a"
        print(f"{name:<52} {cells[0]:>24} {cells[1]:>26} {cells[2]:>22} {cells[3]:>22} {reg:>11}")
        notes = [f"(b) {r['b_how']}" if "b'" in r["b_how"] or "not available" in r["b_how"] else ""]
        if r["a_star_beyond"]:
            steps = ", ".join(map(str, r["a_star_beyond"]))
            why = "has none published" if r["a_star_depth"] == 0 else "stops short of them"
            notes.append(f"(a*) not available at {steps} steps: the drafter's published acceptance {why}")
        if r.get("statistic"):
            notes.append(r["statistic"])
        if r["regret_b"][1]:
            notes.append(f"(d) with the calibration of (b): {r['regret_b'][0]:.3f} ({r['regret_b'][1]})")
        for line in [n for n in notes if n] + [f"(c) {x}" for x in r["c_alpha"]]:
            print(f"    {line}")


if __name__ == "__main__":
    sys.exit(main())
