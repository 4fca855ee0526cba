"""The engine's terms and the profile's efficiency, fitted to the user's own benchmark runs, judged on held-out loads.

Input: runs of one deployment read by :mod:`specsim.bench_files`, plain and speculative, at one or more loads
(concurrencies or request rates).  Each run gives a mean TPOT at a decode batch and mean context.  The model of a
run is the deployment's (:class:`specsim.deployment.Deployment`, the one home of a round's time):

    plain TPOT        = t_decode(b, L)                        (the GPU step plus the engine's time per iteration)
    speculative TPOT  = t_round(b, L, steps) / AL             (AL: tokens per verification pass, as the run measured)

Fitted in two stages, least squares on relative error with the terms bounded to be non-negative:

1. on the plain runs, the engine's time per iteration and (with ``--timing roofline`` or ``hybrid``) one
   efficiency scale ``e`` that multiplies the profile's compute and bandwidth efficiencies (each capped at 1);
   with fewer than two distinct decode batches ``e`` cannot be told from the per-iteration time and stays 1;
2. on the speculative runs, with stage 1 fixed, the host terms of a round H = round_s + s * step_s + b * seq_s
   (:class:`specsim.engines.SpecHost`), serial or overlapped as the engine version runs them; the per-sequence-and-step
   term b * s * seq_step_s is set to 0, since the runs share one number of draft steps and it is then a per-sequence term.

The error reported is on held-out loads: for each load, everything fitted again without that load's runs, and its
runs predicted.  With one load there is nothing to hold out and the output says so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .bench_files import BenchRun
from .engines import EnginePreset, SpecHost
from .spec_fit import TERM_UPPER

__all__ = ["EngineFit", "fit_engine", "match_runs"]

#: Bounds of the per-iteration time (seconds) and of the efficiency scale.
_ITER_UPPER = 20e-3
_SCALE_BOUNDS = (0.2, 5.0)
#: Decode batches closer than this ratio cannot tell an efficiency from a per-iteration constant.
_SPREAD = 1.5


def match_runs(plain: list[BenchRun], spec: list[BenchRun]) -> None:
    """Refuse runs that cannot be fitted together: speculative runs without acceptance or without a plain run at the
    same load, plain runs that report speculation, and runs that name different models."""
    if not plain:
        raise ValueError("no plain runs: the fit needs a benchmark without speculation at each load (--plain FILE)")
    for run in plain:
        if run.accept_length is not None and run.accept_length > 1:
            raise ValueError(f"{run.where}: given with --plain but it reports an acceptance length of "
                             f"{run.accept_length:.2f}: the server ran speculation")
    loads = {r.load for r in plain}
    for run in spec:
        if run.accept_length is None:
            raise ValueError(f"{run.where}: a speculative run without an acceptance length ({run.tool} did not record one): "
                             "pass --metrics with the server's /metrics page saved after the run")
        if run.load not in loads:
            raise ValueError(f"{run.where}: speculative run at {run.load} has no plain run at the same load; plain runs are at "
                             + ", ".join(sorted(loads)))
    models = {r.model for r in plain + spec if r.model}
    if len(models) > 1:
        raise ValueError("the runs name different models: " + ", ".join(sorted(models)) + "; fit one deployment at a time")


@dataclass(frozen=True)
class EngineFit:
    """Fitted efficiency scale, engine terms, predictions and held-out errors."""

    scale: float  # multiplies the profile's efficiencies; 1 when not fitted
    scale_fitted: bool
    iteration_s: float
    host: SpecHost
    deployment: object  # the deployment with the fitted profile and engine terms (a Deployment)
    runs: list  # of BenchRun, plain first
    kinds: list  # "plain" or "spec", per run
    predicted: np.ndarray  # TPOT seconds with everything fitted on all runs
    held_out: np.ndarray  # TPOT seconds with each load's runs left out of the fit (NaN with one load)
    preset: np.ndarray  # TPOT seconds with the preset as shipped

    def measured(self) -> np.ndarray:
        return np.array([r.tpot_s for r in self.runs])

    def error(self, which: str = "held_out", kind: str | None = None) -> float:
        """Mean absolute relative error (fraction) of ``which`` predictions, over runs of ``kind`` (both: None)."""
        pred = getattr(self, which)
        keep = np.array([kind is None or k == kind for k in self.kinds])
        err = np.abs(pred / self.measured() - 1)[keep]
        return float(np.mean(err)) if err.size and np.all(np.isfinite(err)) else float("nan")

    def speedups(self, prediction: np.ndarray) -> list[tuple[str, float, float]]:
        """(load, measured speedup, predicted speedup) per load with both kinds: plain TPOT over speculative TPOT."""
        out = []
        tpot = self.measured()
        for load in dict.fromkeys(r.load for r in self.runs):
            p = [i for i, r in enumerate(self.runs) if r.load == load and self.kinds[i] == "plain"]
            s = [i for i, r in enumerate(self.runs) if r.load == load and self.kinds[i] == "spec"]
            if p and s:
                out.append((load, float(np.mean(tpot[p]) / np.mean(tpot[s])),
                            float(np.mean(prediction[p]) / np.mean(prediction[s]))))
        return out


class _Model:
    """Predictions of a set of runs for one parameter vector, through the deployment."""

    def __init__(self, dep, runs: list[BenchRun], kinds: list[str], steps: int, topk: int, verify_tokens: int, fit_scale: bool):
        self.dep, self.steps, self.topk, self.verify = dep, steps, topk, verify_tokens
        self.fit_scale = fit_scale
        self.kinds = np.array(kinds)
        self.batch = np.array([r.decode_batch for r in runs])
        self.context = np.array([r.context for r in runs])
        self.al = np.array([r.accept_length or 1.0 for r in runs])
        self.tpot = np.array([r.tpot_s for r in runs])

    def deployment(self, scale: float, iteration_s: float, host: SpecHost):
        from .timing.hybrid import HybridSource
        from .timing.roofline import RooflineSource

        dep = self.dep
        if self.fit_scale and scale != 1.0:
            hw = dep.hardware
            hw = dataclasses.replace(hw, compute_eff=min(1.0, hw.compute_eff * scale),
                                     bandwidth_eff=min(1.0, hw.bandwidth_eff * scale))
            roof = RooflineSource(hw)
            source = HybridSource(roof, dep.source.kernels) if isinstance(dep.source, HybridSource) else roof
            dep = dataclasses.replace(dep, hardware=hw, source=source)
        engine = dep.engine.with_iteration_ms(iteration_s * 1e3).with_spec(host.round_s * 1e3, host.step_s * 1e3, host.seq_s * 1e6,
                                                                          seq_step_us=host.seq_step_s * 1e6)
        return dataclasses.replace(dep, engine=engine)

    def predict(self, dep, index: np.ndarray) -> np.ndarray:
        out = np.full(len(index), np.nan)
        kinds, b, L = self.kinds[index], self.batch[index], self.context[index]
        plain = kinds == "plain"
        if plain.any():
            out[plain] = dep.decode(b[plain], L[plain]).total_s
        if (~plain).any():
            r = dep.round_time(b[~plain], L[~plain], self.steps, self.topk, self.verify)
            out[~plain] = r.total_s / self.al[index][~plain]
        return out

    def fit(self, index: np.ndarray, preset: EnginePreset) -> tuple[float, float, SpecHost, bool]:
        from scipy.optimize import least_squares

        index = np.asarray(index)
        plain = index[self.kinds[index] == "plain"]
        spec = index[self.kinds[index] == "spec"]
        batches = self.batch[plain]
        scale_free = bool(self.fit_scale and batches.size > 1 and batches.max() / batches.min() >= _SPREAD)

        def stage1(x):
            scale = x[1] if scale_free else 1.0
            dep = self.deployment(scale, x[0] * 1e-3, SpecHost())
            return self.predict(dep, plain) / self.tpot[plain] - 1

        x0 = [max(preset.iteration_s * 1e3, 0.05)] + ([1.0] if scale_free else [])
        lo = [0.0] + ([_SCALE_BOUNDS[0]] if scale_free else [])
        hi = [_ITER_UPPER * 1e3] + ([_SCALE_BOUNDS[1]] if scale_free else [])
        fit1 = least_squares(stage1, x0=x0, bounds=(lo, hi))
        iteration_s = round(float(fit1.x[0]) * 1e-3, 6)
        scale = round(float(fit1.x[1]), 4) if scale_free else 1.0
        if spec.size == 0:
            return scale, iteration_s, SpecHost(), scale_free
        # At one number of draft steps a per-sequence-and-step second is a per-sequence second: the three other terms, seq_step_s 0.
        unit = TERM_UPPER[:3] / 10.0

        def stage2(x):
            dep = self.deployment(scale, iteration_s, SpecHost(*(x * unit)))
            return np.concatenate([self.predict(dep, spec) / self.tpot[spec] - 1, 1e-3 * x])

        fits = [least_squares(stage2, x0=np.full(3, x0), bounds=(np.zeros(3), TERM_UPPER[:3] / unit)) for x0 in (0.05, 0.5, 2.0)]
        x = min(fits, key=lambda r: r.cost).x * unit
        return scale, iteration_s, SpecHost.rounded(x), scale_free


def fit_engine(dep, plain: list[BenchRun], spec: list[BenchRun], steps: int, topk: int = 1,
               verify_tokens: int | None = None) -> EngineFit:
    """Fit the deployment's engine terms (and its profile's efficiency scale where its source is a roofline) to the
    runs; predict every run with the fit on all loads, with each load held out, and with the preset as shipped."""
    from .timing.hybrid import HybridSource
    from .timing.roofline import RooflineSource

    match_runs(plain, spec)
    if spec and dep.drafter is None:
        raise ValueError("speculative runs need a drafter: pass --draft")
    runs = list(plain) + list(spec)
    kinds = ["plain"] * len(plain) + ["spec"] * len(spec)
    verify = steps + 1 if verify_tokens is None else verify_tokens
    fit_scale = isinstance(dep.source, (RooflineSource, HybridSource))
    model = _Model(dep, runs, kinds, steps, topk, verify, fit_scale)
    everything = np.arange(len(runs))
    scale, iteration_s, host, scale_fitted = model.fit(everything, dep.engine)
    fitted_dep = model.deployment(scale, iteration_s, host)
    predicted = model.predict(fitted_dep, everything)
    held_out = np.full(len(runs), np.nan)
    loads = np.array([r.load for r in runs])
    if len(set(loads)) > 1:
        for load in dict.fromkeys(loads):
            out = np.flatnonzero(loads == load)
            train = np.flatnonzero(loads != load)
            if not np.any(model.kinds[train] == "plain"):
                continue
            s, it, h, _ = model.fit(train, dep.engine)
            held_out[out] = model.predict(model.deployment(s, it, h), out)
    preset = model.predict(dep, everything)
    return EngineFit(scale, scale_fitted, iteration_s, host, fitted_dep, runs, kinds, predicted, held_out, preset)
