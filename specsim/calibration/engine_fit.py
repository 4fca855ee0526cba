"""The engine's terms, the profile's efficiency and the acceptance, fitted to the user's own benchmark runs.

The runs and their model are :mod:`specsim.calibration.runs`'.  Fitted in two stages, least squares on relative errors,
every term bounded to what an engine can be:

1. plain runs: the engine's time per iteration ``e_iter`` and one efficiency scale ``e`` of the profile's compute and
   bandwidth efficiencies (roofline and hybrid sources; up to where the first of them reaches the datasheet peak);
2. speculative runs, stage 1 fixed: the host terms of a round H = round_s + s step_s + b seq_s + b s seq_step_s
   (:class:`specsim.engines.SpecHost`), serial or overlapped as the engine version runs them, and the unknown
   acceptance rates.

A term is fitted only where the design of the runs separates it (:func:`~specsim.calibration.runs.identifiable`): a
per-draft-step term needs speculative runs at two step counts, a per-sequence term runs at decode batches at least
1.5x apart, the efficiency plain runs at decode batches that far apart.  Otherwise it is held at the preset's value and
named, with the runs that would free it.  Every fitted value carries a 95% profile-likelihood interval: the range over
which the sum of squared relative errors, refitted over the other free values, stays within the F(1, n - p) bound
(Bates and Watts, *Nonlinear Regression Analysis*, 1988, section 6.1); the speculative terms' intervals hold the plain
stage at its fit.

Judged on held-out data: each load fitted again without its runs (and each file, where there are several of a kind),
its runs predicted.  The preset as shipped is judged on the same runs; a preset far worse than the fit is named.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import field
from pathlib import Path

import numpy as np

from specsim.core.records import record
from specsim.engines import TERMS, EnginePreset, SpecHost
from specsim.calibration.runs import (ALPHA_BOUNDS, MAX_PREFILL_SHARE, CalRun, _Runs, check_design, check_runs, identifiable, load_key, scale_upper, tpot_with_prefill)

__all__ = ["CONFIDENCE", "EngineFit", "Term", "fit_engine"]

CONFIDENCE = 0.95
#: Bounds of the per-iteration time and of the per-sequence time of an iteration (seconds), and the lower bound of the
#: efficiency scale.
ITERATION_UPPER_S = 20e-3
ITERATION_SEQ_UPPER_S = 0.5e-3
SCALE_LOWER = 0.2
#: Upper bounds of the host terms, seconds, in :data:`specsim.engines.TERMS` order (the public fit's).
TERM_UPPER = np.array([20e-3, 5e-3, 0.5e-3, 0.5e-3])
#: The preset as shipped is named as probably the wrong engine or version past this many times the fit's error...
PRESET_WARN_RATIO = 3.0
#: ... and at least this much worse in absolute terms.
PRESET_WARN_MARGIN = 0.05
#: A fit off by more than this (mean relative TPOT error) is refitted with every other engine version's rounds, and one
#: that fits under half as far off is named: the runs' noise is a percent or two.
WRONG_ENGINE_ERROR = 0.03

_LABELS = {"scale": "profile efficiency", "iteration_s": "engine per iteration", "iteration_seq_s": "per sequence per iteration",
           "overlap_share": "host work hidden",
           "round_s": "per round",
           "step_s": "per draft step", "seq_s": "per sequence", "seq_step_s": "per sequence per draft step"}
#: The runs that would separate each term from the others, said where one is held or ends on a bound.
_FREES = {"scale": "plain runs at decode batches at least 1.5x apart, and at two contexts",
          "iteration_s": "plain runs at concurrency 1",
          "iteration_seq_s": "plain runs at decode batches at least 1.5x apart and at two prompt lengths",
          "round_s": "speculative runs at concurrency 1 with pinned acceptance",
          "step_s": "speculative runs at a second number of draft steps",
          "seq_s": "speculative runs at decode batches at least 1.5x apart",
          "seq_step_s": "speculative runs at two numbers of draft steps, each at decode batches at least 1.5x apart",
          "overlap_share": "speculative runs at loads where the host work outlasts the passes",
          "alpha": "runs with acceptance pinned by the engine (specsim bench-plan) or a saved /metrics page"}


@record
class Term:
    """One value of the fit: fitted (with its interval), held at the preset, or at a bound, with why."""

    name: str
    value: float
    low: float | None = None
    high: float | None = None
    status: str = "fitted"  # "fitted", "held", "bound"
    why: str = ""

    @property
    def label(self) -> str:
        return _LABELS.get(self.name, self.name)

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "low": self.low, "high": self.high, "status": self.status, "why": self.why}


# -- stage 1: the plain runs --------------------------------------------------------------------------------------------
def _f_bound(n: int, p: int) -> float | None:
    """The factor by which the least sum of squares may grow inside a 95% profile interval; None without residual
    degrees of freedom."""
    from scipy.special import fdtri  # the F quantile, without scipy.stats' second of imports

    dof = n - p
    if dof < 1:
        return None
    return 1.0 + float(fdtri(1, dof, CONFIDENCE)) / dof


class _Plain:
    """Stage 1 over plain runs ``index``: for each scale the engine's time per iteration and per sequence of it by a
    bounded linear least squares ((step + e_iter + b e_seq) / (1 - rho) is linear in both), the scale by a bounded 1-D
    search."""

    def __init__(self, model: _Runs, index: np.ndarray, fit_scale: bool, fit_seq: bool):
        self.model, self.index, self.fit_scale, self.fit_seq = model, index, fit_scale, fit_seq
        self.tpot, self.batch = model.tpot[index], model.batch[index]
        self.upper = scale_upper(model.dep.hardware) if fit_scale else 1.0
        self.bounds = np.array([ITERATION_UPPER_S, ITERATION_SEQ_UPPER_S])

    def ssr(self, scale: float, fixed: dict[int, float] | None = None) -> tuple[tuple[float, float], float]:
        """((e_iter, e_seq), sum of squares) at ``scale``, the coordinates in ``fixed`` held."""
        from scipy.optimize import lsq_linear

        step, rho = self.model.plain_parts(scale, self.index)
        u = 1.0 / ((1.0 - rho) * self.tpot)
        a = np.column_stack([u, u * self.batch])
        x = np.zeros(2)
        fixed = dict(fixed or {})
        if not self.fit_seq:
            fixed.setdefault(1, 0.0)
        for j, value in fixed.items():
            x[j] = value
        v = 1.0 - step * u - a @ x
        free = [j for j in (0, 1) if j not in fixed]
        if free:
            x[free] = lsq_linear(a[:, free], v, bounds=(0.0, self.bounds[free])).x
        err = a[:, free] @ x[free] - v if free else -v
        return (float(x[0]), float(x[1])), float(np.sum(err ** 2))

    def best_scale(self, fixed: dict[int, float] | None = None) -> tuple[float, tuple[float, float], float]:
        """(scale, (e_iter, e_seq), ssr), the coordinates in ``fixed`` held."""
        from scipy.optimize import minimize_scalar

        if not self.fit_scale:
            x, s = self.ssr(1.0, fixed)
            return 1.0, x, s
        grid = np.geomspace(SCALE_LOWER, self.upper, 13)
        values = [self.ssr(g, fixed)[1] for g in grid]
        k = int(np.argmin(values))
        lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
        res = minimize_scalar(lambda g: self.ssr(g, fixed)[1], bounds=(lo, hi), method="bounded", options={"xatol": 1e-5})
        scale = float(res.x) if res.fun <= values[k] else float(grid[k])
        x, s = self.ssr(scale, fixed)
        return scale, x, s


# -- stage 2: the speculative runs ---------------------------------------------------------------------------------------
class _Spec:
    """Stage 2 over speculative runs ``index`` with the plain stage fixed: the free host terms, the share of them the
    engine hides (where the version overlaps them with the GPU), and the acceptance rates."""

    def __init__(self, model: _Runs, index: np.ndarray, dep_passes, free_terms: list[str], held: SpecHost,
                 fit_share: bool = True):
        self.model, self.index, self.free, self.held = model, index, free_terms, held
        self.groups, self.rho = model.spec_passes(dep_passes, index)
        self.dep = dep_passes
        self.tpot = model.tpot[index]
        self.overlap = fit_share and any(np.any(r.overlapped) for _, _, r in self.groups)
        sweeps = sorted({int(s) for s in model.sweep_index[index] if s >= 0})
        self.sweeps = sweeps  # indices into model.sweeps whose rate is free here
        share = [1.0] if self.overlap else []
        self.unit = np.array([TERM_UPPER[TERMS.index(t)] / 10.0 for t in free_terms] + share)
        self.lower = np.concatenate([np.zeros(len(free_terms) + len(share)), np.full(len(sweeps), ALPHA_BOUNDS[0])])
        self.upper = np.concatenate([TERM_UPPER[[TERMS.index(t) for t in free_terms]] / self.unit[:len(free_terms)], share,
                                     np.full(len(sweeps), ALPHA_BOUNDS[1])])

    @property
    def names(self) -> list[str]:
        return self.free + (["overlap_share"] if self.overlap else []) + [f"alpha:{self.model.sweeps[s]}" for s in self.sweeps]

    def host(self, x: np.ndarray) -> SpecHost:
        values = {t: getattr(self.held, t) for t in TERMS}
        values.update({t: float(v) for t, v in zip(self.free, x[:len(self.free)] * self.unit[:len(self.free)])})
        return SpecHost(**values)

    def share(self, x: np.ndarray) -> float | None:
        """The fitted share of the host work hidden behind the GPU; None where the engine does not overlap it."""
        return float(x[len(self.free)]) if self.overlap else None

    def alphas(self, x: np.ndarray) -> np.ndarray:
        out = np.full(len(self.model.sweeps), np.nan)
        out[self.sweeps] = x[len(self.free) + self.overlap:]
        return out

    def residuals(self, x: np.ndarray) -> np.ndarray:
        dep = _with_round(self.dep, self.host(x), self.share(x))
        pred = self.model.spec_tpot(dep, self.index, self.groups, self.rho, self.alphas(x))
        return pred / self.tpot - 1.0

    def fit(self, fixed: dict[int, float] | None = None, start: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """The least-squares values (with the coordinates in ``fixed`` held) and their sum of squares."""
        from scipy.optimize import least_squares

        fixed = fixed or {}
        n = self.lower.size
        free = [j for j in range(n) if j not in fixed]

        def full(y):
            x = np.empty(n)
            x[free] = y
            for j, v in fixed.items():
                x[j] = v
            return x

        if not free:
            x = full(np.array([]))
            return x, float(np.sum(self.residuals(x) ** 2))
        lo, hi = self.lower[free], self.upper[free]
        starts = [start[free]] if start is not None else []
        span = hi - lo
        starts += [lo + span * f for f in (0.02, 0.2, 0.6)] if start is None else []
        best = None
        for y0 in starts:
            y0 = np.clip(y0, lo + 1e-9 * span, hi - 1e-9 * span)
            res = least_squares(lambda y: self.residuals(full(y)), y0, bounds=(lo, hi), x_scale="jac")
            if best is None or res.cost < best.cost:
                best = res
        x = full(best.x)
        return x, float(np.sum(self.residuals(x) ** 2))


# -- profile-likelihood intervals -------------------------------------------------------------------------------------
def _profile(ssr_at, best: float, lo: float, hi: float, limit: float) -> tuple[float, float]:
    """The interval around ``best`` inside [lo, hi] where ``ssr_at`` (the sum of squares refitted with the value held)
    stays at most ``limit``; an end that never crosses is the bound."""

    def edge(toward: float) -> float:
        if toward == best:
            return best
        step = max(abs(best) * 0.05, abs(toward - best) * 1e-3)
        inside, x = best, best
        while True:
            x = best + math.copysign(min(step, abs(toward - best)), toward - best)
            if ssr_at(x) > limit:
                break
            inside = x
            if x == toward:
                return toward
            step *= 2.0
        outside = x
        # To a hundredth of the interval's half-width: finer than any value is printed.
        for _ in range(60):  # (a cap: two neighbouring floats cannot be split further)
            if abs(outside - inside) <= 0.01 * max(abs(inside - best), abs(hi - lo) * 1e-6):
                break
            mid = 0.5 * (inside + outside)
            if ssr_at(mid) > limit:
                outside = mid
            else:
                inside = mid
        return inside

    return edge(lo), edge(hi)


def _bound_status(value: float, lo: float, hi: float) -> str | None:
    span = hi - lo
    if value <= lo + 1e-6 * span:
        return "lower"
    if value >= hi - 1e-6 * span:
        return "upper"
    return None


# -- the fit ------------------------------------------------------------------------------------------------------------
@record
class EngineFit:
    """The fitted values with their intervals, the deployment they make, and every run's predictions."""

    terms: dict  # name -> Term: scale, iteration_s, the four host terms
    acceptance: dict  # sweep -> Term (alpha), for sweeps without a recorded or pinned acceptance
    deployment: object  # the fitted Deployment (profile, engine terms)
    runs: list  # of CalRun, in load order
    predicted: np.ndarray  # TPOT seconds, everything fitted on all runs
    step: np.ndarray  # the same without the prefill share: a decode step, or a round per token
    held_out: np.ndarray  # TPOT seconds, each load's runs left out of the fit (NaN where it cannot be)
    held_out_sweep: np.ndarray  # TPOT seconds, each file left out (NaN with one file of a kind)
    preset: np.ndarray  # TPOT seconds with the preset as shipped
    prefill_share: np.ndarray
    warnings: list = field(default_factory=list)
    dof: int = 0

    @property
    def kinds(self) -> list[str]:
        return [c.kind for c in self.runs]

    def measured(self) -> np.ndarray:
        return np.array([c.run.tpot_s for c in self.runs])

    def error(self, which: str = "held_out", kind: str | None = None) -> float:
        """Mean absolute relative error (fraction) of ``which`` predictions over runs of ``kind`` (both: None), NaN
        where none is defined."""
        pred = getattr(self, which)
        keep = np.array([kind is None or k == kind for k in self.kinds]) & np.isfinite(pred)
        if not keep.any():
            return float("nan")
        return float(np.mean(np.abs(pred[keep] / self.measured()[keep] - 1)))

    def error_by_load(self, which: str = "held_out") -> list[tuple[str, float, float]]:
        """(load, plain error, speculative error) per load, fractions (NaN where that kind has no run)."""
        pred, meas = getattr(self, which), self.measured()
        out = []
        for load in dict.fromkeys(c.run.load for c in self.runs):
            row = [load]
            for kind in ("plain", "spec"):
                keep = np.array([c.run.load == load and c.kind == kind for c in self.runs]) & np.isfinite(pred)
                row.append(float(np.mean(np.abs(pred[keep] / meas[keep] - 1))) if keep.any() else float("nan"))
            out.append(tuple(row))
        return out

    def speedups(self, prediction: np.ndarray) -> list[tuple[str, float, float]]:
        """(load, measured, predicted) plain over speculative TPOT per load with both kinds (means over their runs)."""
        out = []
        tpot = self.measured()
        for load in dict.fromkeys(c.run.load for c in self.runs):
            p = [i for i, c in enumerate(self.runs) if c.run.load == load and c.kind == "plain"]
            s = [i for i, c in enumerate(self.runs) if c.run.load == load and c.kind == "spec"]
            if p and s and np.all(np.isfinite(prediction[p + s])):
                out.append((load, float(np.mean(tpot[p]) / np.mean(tpot[s])), float(np.mean(prediction[p]) / np.mean(prediction[s]))))
        return out

    @property
    def host(self) -> SpecHost:
        return SpecHost(**{t: self.terms[t].value for t in TERMS if t in self.terms})

    @property
    def overlap_share(self) -> float | None:
        """The fitted share of the round's host work hidden behind the GPU (None: the engine does not overlap it)."""
        return self.terms["overlap_share"].value if "overlap_share" in self.terms else None

    @property
    def scale(self) -> float:
        return self.terms["scale"].value

    @property
    def iteration_s(self) -> float:
        return self.terms["iteration_s"].value

    @property
    def iteration_seq_s(self) -> float:
        return self.terms["iteration_seq_s"].value


def _order(runs: list[CalRun]) -> list[CalRun]:
    return sorted(runs, key=lambda c: (c.kind != "plain", load_key(c.run.load), c.run.path, c.run.index))


def _stage_fit(model: _Runs, index: np.ndarray, preset: EnginePreset, design: dict, fit_share: bool = True) -> tuple:
    """(scale, (e_iter, e_seq), host, alphas) fitted on runs ``index`` (no intervals)."""
    plain = index[model.kinds[index] == "plain"]
    spec = index[model.kinds[index] == "spec"]
    stage1 = _Plain(model, plain, model.fit_scale and not design["scale"], not design["iteration_seq_s"])
    scale, it, _ = stage1.best_scale()
    held = preset.spec
    if spec.size == 0:
        return scale, it, (held, None), np.full(len(model.sweeps), np.nan)
    free = [t for t in TERMS if not design.get(t, "held")]
    stage2 = _Spec(model, spec, model.deployment(scale, it), free, held, fit_share)
    x, _ = stage2.fit()
    return scale, it, (stage2.host(x), stage2.share(x)), stage2.alphas(x)


def _predict(model: _Runs, index: np.ndarray, scale: float, it: tuple, host: tuple, alphas: np.ndarray):
    """(TPOT, step without the prefill share, prefill share) of runs ``index``."""
    step, rho = np.empty(index.size), np.empty(index.size)
    plain = model.kinds[index] == "plain"
    if plain.any():
        s, r = model.plain_parts(scale, index[plain])
        step[plain], rho[plain] = s + it[0] + it[1] * model.batch[index[plain]], r
    if (~plain).any():
        dep = model.deployment(scale, it, host)
        groups, r = model.spec_passes(model.deployment(scale, it), index[~plain])
        t = model.spec_tpot(dep, index[~plain], groups, np.zeros_like(r), alphas)
        step[~plain], rho[~plain] = t, r
    return tpot_with_prefill(step, 1.0, rho), step, rho


def fit_engine(dep, runs: list[CalRun], *, intervals: bool = True) -> EngineFit:
    """Fit the deployment's engine terms, its profile's efficiency scale (roofline and hybrid sources) and the unknown
    acceptance rates to ``runs``; predict every run with the fit, with each load and each file held out, and with the
    preset as shipped."""
    runs = _order(runs)
    check_design(dep, runs)
    check_runs(dep, runs)
    model = _Runs(dep, runs)
    preset = dep.engine
    design = identifiable(runs, model.fit_scale)
    everything = np.arange(len(runs))
    plain = everything[model.kinds == "plain"]
    spec = everything[model.kinds == "spec"]

    # Stage 1 with its intervals.
    terms, (scale, iteration_s), dof = _stage1(model, plain, design, intervals, preset)
    # Stage 2.
    alphas = np.full(len(model.sweeps), np.nan)
    acceptance: dict[str, Term] = {}
    host = (preset.spec, None)
    if spec.size:
        free = [t for t in TERMS if not design[t]]
        stage2 = _Spec(model, spec, model.deployment(scale, iteration_s), free, preset.spec)
        x, ssr2 = stage2.fit()
        host, alphas = (stage2.host(x), stage2.share(x)), stage2.alphas(x)
        bound2 = _f_bound(spec.size, x.size)
        dof += spec.size - x.size
        for j, name in enumerate(stage2.names):
            lo, hi = stage2.lower[j], stage2.upper[j]
            unit = stage2.unit[j] if j < len(free) else 1.0

            def at(v, j=j):
                return stage2.fit({j: v}, start=x)[1]

            t = _term(name.split(":")[0], float(x[j]), lo, hi, ssr2, bound2, intervals, at, unit=unit)
            if name.startswith("alpha:"):
                acceptance[name[len("alpha:"):]] = dataclasses.replace(t, name="alpha")
            elif name == "overlap_share":
                terms[name] = dataclasses.replace(t, why=t.why or f"the share of the round's host work {preset.key} hides "
                                                  f"behind the GPU ({preset.overlap_share:.0%} as shipped: {preset.overlap_basis})")
            else:
                terms[name] = t
        for name in TERMS:
            if name not in terms:
                value = getattr(preset.spec, name)
                terms[name] = Term(name, value, status="held",
                                   why=f"{design[name]}: held at {preset.key}'s preset; {_FREES[name]} would separate it")
        if _always_hidden(model, spec, scale, iteration_s, host):
            host = (preset.spec, None)
            terms |= {name: Term(name, getattr(preset.spec, name), status="held", why=_HIDDEN.format(preset.key)) for name in TERMS}
            terms.pop("overlap_share", None)
    fitted_dep = model.deployment(scale, iteration_s, host)
    fitted_dep = dataclasses.replace(fitted_dep, engine=_fitted_engine(preset, iteration_s, host))
    predicted, step, rho = _predict(model, everything, scale, iteration_s, host, alphas)
    if np.any(rho >= MAX_PREFILL_SHARE):
        i = int(np.argmax(rho))
        raise ValueError(f"{runs[i].run.where}: its requests' prompts would take {rho[i]:.0%} of the engine's time "
                         f"({runs[i].run.rate_per_s:.3g} requests/s of {runs[i].run.prompt_tokens:,.0f} prompt tokens): no "
                         "decode TPOT can be read from it; check --hardware and --target")
    held_out = _held_out(model, design, preset, [c.run.load for c in runs])
    held_sweep = _held_out(model, design, preset, [c.sweep if c.kind == "spec" else "" for c in runs], by_sweep=True)
    preset_pred = _preset_prediction(model, preset)
    fit = EngineFit(terms, acceptance, fitted_dep, runs, predicted, step, held_out, held_sweep, preset_pred, rho, [], dof)
    return dataclasses.replace(fit, warnings=_warnings(fit, preset, model))


_HIDDEN = ("hidden behind the GPU at every run: {} overlaps a round's host work with the passes for this drafter, and here "
           "it never outlasts them, so these runs cannot measure it; held at the preset (runs with the engine's overlap off "
           "would measure it)")


def _always_hidden(model: _Runs, spec: np.ndarray, scale: float, iteration_s: tuple, host: tuple) -> bool:
    """Whether the engine hides the whole host work of every speculative run behind its passes (under the fitted terms)."""
    groups, _ = model.spec_passes(model.deployment(scale, iteration_s), spec)
    dep_host = model.deployment(scale, iteration_s, host)
    for j, w, r in groups:
        if not r.overlapped:
            return False
        h, hidden = dep_host.round_host(model.batch[spec[j]], model.steps[spec[j]], w)
        if hidden < 1.0 or np.any(dataclasses.replace(r, host_s=h, overlapped=hidden).exposed_host_s > 1e-9 * np.asarray(r.passes_s)):
            return False
    return True


def _stage1(model: _Runs, plain: np.ndarray, design: dict, intervals: bool, preset: EnginePreset) -> tuple:
    """(terms, (scale, (e_iter, e_seq)), residual degrees of freedom) of the plain runs, with their intervals."""
    stage1 = _Plain(model, plain, model.fit_scale and not design["scale"], not design["iteration_seq_s"])
    scale, it, ssr1 = stage1.best_scale()
    n_free = 1 + (not design["scale"]) + (not design["iteration_seq_s"])
    bound1 = _f_bound(plain.size, n_free)
    terms: dict[str, Term] = {}
    if design["scale"]:
        terms["scale"] = Term("scale", 1.0, status="held", why=f"{design['scale']}: the profile as shipped; {_FREES['scale']} would fit it")
    else:
        terms["scale"] = _term("scale", scale, SCALE_LOWER, stage1.upper, ssr1, bound1, intervals, lambda g: stage1.ssr(g)[1])
    terms["iteration_s"] = _term("iteration_s", it[0], 0.0, ITERATION_UPPER_S, ssr1, bound1, intervals,
                                 lambda x: stage1.best_scale({0: x})[2])
    if design["iteration_seq_s"]:
        terms["iteration_seq_s"] = Term("iteration_seq_s", preset.iteration_seq_s, status="held",
                                        why=f"{design['iteration_seq_s']}: held at {preset.key}'s preset; "
                                            f"{_FREES['iteration_seq_s']} would separate it")
    else:
        terms["iteration_seq_s"] = _term("iteration_seq_s", it[1], 0.0, ITERATION_SEQ_UPPER_S, ssr1, bound1, intervals,
                                         lambda x: stage1.best_scale({1: x})[2])
    return terms, (scale, it), plain.size - n_free


def _term(name: str, value: float, lo: float, hi: float, ssr: float, bound: float | None, intervals: bool, ssr_at,
          unit: float = 1.0) -> Term:
    """A fitted value (in units of ``unit``) with its profile interval, or at its bound with what would free it."""
    low = high = None
    if intervals and bound is not None and ssr > 0:
        a, b = _profile(ssr_at, value, lo, hi, ssr * bound)
        low, high = a * unit, b * unit
    elif intervals and bound is not None:
        low = high = value * unit  # an exact fit: nothing to spread
    side = _bound_status(value, lo, hi)
    status, why = "fitted", ""
    if bound is None:
        why = "no runs to spare for an interval (as many values as runs)"
    if side is not None:
        status = "bound"
        frees = _FREES.get(name, "")
        edge = (lo if side == "lower" else hi) * unit
        why = (f"the best fit is at its {side} bound ({edge:.4g})"
               + (": these runs cannot tell it from that bound; " if low is not None and high is not None and high > low
                  else "; ")
               + ("" if side == "lower" else "more than any engine or GPU gives: check --hardware, --engine and --tp; ")
               + (f"{frees} would free it" if frees else ""))
    return Term(name, float(value * unit), None if low is None else float(low), None if high is None else float(high), status, why)


def _fitted_engine(preset: EnginePreset, it: tuple, host: tuple) -> EnginePreset:
    host, share = host
    engine = preset.with_iteration_ms(it[0] * 1e3, it[1] * 1e6)
    if share is not None:
        engine = dataclasses.replace(engine, overlap_share=share, kernel_overlap_share=share,
                                     overlap_basis="fitted by specsim calibrate-engine")
    return dataclasses.replace(engine, basis="fitted by specsim calibrate-engine", spec=host, kernel_spec=host,
                               spec_basis="fitted by specsim calibrate-engine")


def _held_out(model: _Runs, design: dict, preset: EnginePreset, groups: list[str], by_sweep: bool = False) -> np.ndarray:
    """TPOT of each run with its group (a load; with ``by_sweep``, a speculative sweep: a file's or a plan server's
    runs) left out of the fit.  A held-out sweep's acceptance rate that no other run shares is fitted alone on its own
    runs, the engine's terms held (it is the workload's, not the engine's); with one group there is nothing to hold
    out (NaN)."""
    out = np.full(len(model.runs), np.nan)
    groups = np.array(groups)
    kinds = model.kinds
    held = [g for g in dict.fromkeys(groups) if not (by_sweep and g == "")]
    if len(held) < 2:
        return out
    for g in held:
        test = np.flatnonzero(groups == g)
        train = np.flatnonzero(groups != g)
        if not np.any(kinds[train] == "plain"):
            continue
        if np.any(kinds[test] == "spec") and not np.any(kinds[train] == "spec"):
            continue
        sub = identifiable([model.runs[i] for i in train], model.fit_scale)
        scale, it, host, alphas = _stage_fit(model, train, preset, sub)
        missing = [s for s in {int(s) for s in model.sweep_index[test] if s >= 0} if not np.isfinite(alphas[s])]
        if missing:
            alphas = _alone(model, test, model.deployment(scale, it), model.deployment(scale, it, host), alphas, missing)
        out[test] = _predict(model, test, scale, it, host, alphas)[0]
    return out


def _alone(model: _Runs, index: np.ndarray, dep_passes, dep_host, alphas: np.ndarray, sweeps: list[int]) -> np.ndarray:
    """``alphas`` with the rates of ``sweeps`` fitted on the runs ``index`` alone, every engine term held: the passes of
    ``dep_passes``, the host work of ``dep_host``."""
    from scipy.optimize import least_squares

    spec = index[(model.kinds[index] == "spec") & np.isin(model.sweep_index[index], sweeps)]
    groups, rho = model.spec_passes(dep_passes, spec)
    out = alphas.copy()

    def residuals(a):
        out[sweeps] = a
        return model.spec_tpot(dep_host, spec, groups, rho, out) / model.tpot[spec] - 1.0

    res = least_squares(residuals, np.full(len(sweeps), 0.6), bounds=ALPHA_BOUNDS)
    out[sweeps] = res.x
    return out


def _without_host(dep):
    return dataclasses.replace(dep, engine=dataclasses.replace(dep.engine, spec=SpecHost(), kernel_spec=SpecHost()))


def _with_round(dep, host: SpecHost, share: float | None = None):
    """``dep`` with the round's host terms ``host`` and, where given, the share of them its engine hides."""
    engine = dataclasses.replace(dep.engine, spec=host, kernel_spec=host)
    if share is not None:
        engine = dataclasses.replace(engine, overlap_share=share, kernel_overlap_share=share)
    return dataclasses.replace(dep, engine=engine)


def _preset_prediction(model: _Runs, preset: EnginePreset) -> np.ndarray:
    """TPOT with ``preset`` as shipped on the deployment's source (profile unscaled); unknown acceptance rates fitted
    alone with its terms."""
    index = np.arange(len(model.runs))
    dep = dataclasses.replace(model.dep, engine=preset.for_source(model.dep.source))
    alphas = np.full(len(model.sweeps), np.nan)
    if model.sweeps:
        alphas = _alone(model, index, _without_host(dep), dep, alphas, list(range(len(model.sweeps))))
    out = np.empty(index.size)
    plain = model.kinds == "plain"
    if plain.any():
        out[plain] = tpot_with_prefill(dep.decode(model.batch[plain], model.context[plain]).total_s, model.rate[plain],
                                       dep.prefill_s(model.prompt[plain]))
    if (~plain).any():
        spec = index[~plain]
        groups, rho = model.spec_passes(_without_host(dep), spec)
        out[spec] = model.spec_tpot(dep, spec, groups, rho, alphas)
    return out


def _better_engine(model: _Runs, named: EnginePreset, mine: float) -> tuple[str, float] | None:
    """(key, error) of another engine version whose round structure (overlap rule, the terms held at its preset) the runs
    fit far better than ``named``'s: fitted the same way, its error under half ``mine``; None if there is none."""
    from specsim.engines import PRESETS

    best = None
    everything = np.arange(len(model.runs))
    for key, preset in PRESETS.items():
        if key in ("none", named.key) or (preset.spec == named.spec and preset.overlap_kinds == named.overlap_kinds
                                          and preset.overlap_share == named.overlap_share):
            continue
        other = _Runs(dataclasses.replace(model.dep, engine=preset.for_source(model.dep.source)), model.runs)
        design = identifiable(model.runs, other.fit_scale)
        # Each version's rounds as it schedules them: its own overlap share, not one fitted to the runs.
        scale, it, host, alphas = _stage_fit(other, everything, other.dep.engine, design, fit_share=False)
        err = float(np.mean(np.abs(_predict(other, everything, scale, it, host, alphas)[0] / other.tpot - 1)))
        if best is None or err < best[1]:
            best = (key, err)
    return best if best is not None and best[1] < 0.5 * mine else None


def _warnings(fit: EngineFit, preset: EnginePreset, model: _Runs) -> list[str]:
    """What the user should know of the fit: a preset of another engine or version that fits the runs far better as
    shipped (the wrong --engine), a named preset far off (the user's host costs are not the public fit's), terms at
    their bounds."""
    out = []
    mine, theirs = fit.error("predicted"), fit.error("preset")
    other = _better_engine(model, preset, mine) if np.isfinite(mine) and mine > WRONG_ENGINE_ERROR else None
    if other is not None:
        out.append(f"these runs fit {other[0]}'s rounds far better than {preset.key}'s ({other[1]:.1%} against {mine:.1%} "
                   f"off): check that --engine names the engine and version that served them")
    if np.isfinite(mine) and np.isfinite(theirs) and theirs > PRESET_WARN_RATIO * mine and theirs - mine > PRESET_WARN_MARGIN:
        out.append(f"{preset.key} as shipped is off by {theirs:.1%} on these runs where the fit is off by {mine:.1%}: check "
                   "that --engine names the engine and version that served them (and --hardware the GPU); if they do, your "
                   "engine's host costs (its CPU, build and checkpoint) are not the public fit's, and the calibration carries yours")
    steps = {c.setup.steps for c in fit.runs if c.kind == "spec"}
    if fit.acceptance and len(steps) == 1 and any(fit.terms[t].status != "held" for t in ("round_s", "seq_s")):
        out.append(f"the acceptance of {', '.join(Path(s).name for s in fit.acceptance)} is fitted beside the round's host "
                   f"terms at one number of draft steps ({steps.pop()}): the two trade off, so the TPOTs they predict hold "
                   "while the rate itself may be off beyond its interval (by up to 40% on public files, "
                   "benchmarks/validate_calibration.py); pin acceptance (specsim bench-plan) or pass --metrics to measure it")
    for t in list(fit.terms.values()) + list(fit.acceptance.values()):
        if t.status == "bound":
            out.append(f"{t.label}: {t.why}")
    return out
