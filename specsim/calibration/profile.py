"""Calibration: fit a profile's efficiencies and overheads to measured step times.

The roofline model (``steptime``) has four free numbers per device:

    t(b, q, L) = overhead_s + per_layer_overhead_s * n_layers
                 + max(flop / (compute_eff * peak_flop_per_s), bytes / (bandwidth_eff * peak_bytes_per_s))

Given measured step times (CSV from ``specsim measure`` or composed kernel
timings), :func:`calibrate` fits them by robust least squares
(``scipy.optimize.least_squares`` with a soft-L1 loss on relative errors, so a
few outliers do not drag the fit) from several starting points, keeps the
datasheet peaks, and judges the result on points the fit never saw: the
measurements are split at random into a training set and a held-out set, and
the mean absolute percentage error (MAPE) and the worst error are reported on
the held-out set, before (the base profile as it is) and after calibration.

The per-layer overhead (per-kernel launch floors, which make a many-layer
small model slower than its bytes suggest) is fitted only when the data call
for it: with at least two layer counts in the data and a training MAPE that
drops by more than 5% (relative) when it is added (``per_layer="auto"``).

Efficiencies are bounded to (0, 1]: a fit that wants more than the datasheet
peak (data served from cache, say) stops at 1 and leaves the error visible.

Noisy timings or a bad model
    A fit in trouble (a fixed cost per pass above the fastest pass timed, an
    efficiency at 1, an overhead at the profile's 1 s limit, a held-out error above
    :data:`LARGE_ERROR`, or worse than the base profile) is judged against
    the repeats' own spread, which ``specsim measure`` writes beside every
    median (``p10_s``, ``p90_s``).  When the repeats of a point spread by more
    than :data:`NOISY_SPREAD` of its median (median over points), or by at
    least the held-out error, the misfit is within what the timings
    themselves vary by, and the fit is refused as noise (:class:`NoisyTimings`):
    a busy machine, not the roofline, is what the numbers show.  When the
    repeats agree and the fitted terms are still unphysical, the roofline does
    not describe the measurements, and that is refused instead.  Either way
    nothing is written.  A fit in trouble only by its error, on timings that
    agree, is written with its warnings (:func:`implausible`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specsim.core.names import given_as
from specsim.describe.hardware import HardwareProfile, profile_to_mapping
from specsim.timing.base import check_pass
from specsim.timing.measurements import load_measurements
from specsim.timing.roofline import counted_step_time, pass_counts, step_time

__all__ = [
    "LARGE_ERROR",
    "NOISY_SPREAD",
    "CalibrationResult",
    "NoisyTimings",
    "calibrate",
    "fit_trouble",
    "implausible",
    "predict",
    "repeat_spread",
]

#: Fraction of distinct (model, b, q, L) points held out of a fit.
DEFAULT_HOLDOUT = 0.25
#: Held-out mean absolute error above which a fit is flagged (the threshold :func:`implausible` has always used).
LARGE_ERROR = 0.2
#: Median over points of (p90 - p10) / median of the repeats beyond which timings are noise, not step times: the
#: committed CPU measurement (hardware/measurements/cpu-epyc-2vcpu-measured.csv, an idle 2-vCPU machine) spreads 8%;
#: the README's CPU measurement on this 2-vCPU machine at a load average of 4-5 spread 78%.
NOISY_SPREAD = 0.25
#: The fixed cost of a pass (overhead + per-layer overhead x layers) may exceed the fastest pass timed by this
#: share before the fit is called unphysical (the fit is least squares, not a bound).
FIXED_COST_SLACK = 0.10
#: The largest overhead a profile holds (HardwareProfile refuses more than 1 s per pass).
MAX_OVERHEAD_S = 1.0


class NoisyTimings(ValueError):
    """Measurements whose repeats vary by as much as the fit misses: too noisy to calibrate (nothing is written)."""


def predict(profile: HardwareProfile, df: pd.DataFrame) -> np.ndarray:
    """Modelled step time of every row (seconds), one vectorised call per model shape."""
    return _predict(profile, _by_shape(df), len(df))


def _by_shape(df: pd.DataFrame) -> list[tuple]:
    """The rows grouped by model shape: (positions, shape, batch, tokens per sequence, context) per group, read once
    for a fit that predicts the same rows at every step."""
    # Group by the shape itself (dtype included), never by name: one model measured at two dtypes, or rows with
    # shape columns and no model name, must each be predicted with their own shape.
    codes, shapes = pd.factorize(df["shape"])
    groups = []
    for code, shape in enumerate(shapes):
        pos = np.flatnonzero(codes == code)
        rows = df.iloc[pos]
        columns = (rows[key].to_numpy(float) for key in ("batch", "tokens_per_seq", "context"))
        groups.append((pos, shape, *columns))
    return groups


def _predict(profile: HardwareProfile, groups: list[tuple], n: int, counts: list | None = None) -> np.ndarray:
    """Each row's modelled step time; ``counts``: each group's passes counted once (:func:`_counts`), for a fit whose
    rows are the same at every step and whose efficiencies do not change what a pass does."""
    out = np.empty(n)
    for k, (pos, shape, batch, tokens, context) in enumerate(groups):
        if counts is None:
            out[pos] = step_time(profile, shape, batch, tokens, context).total_s
        else:
            out[pos] = counted_step_time(profile, shape, counts[k]).total_s
    return out


def _counts(groups: list[tuple]) -> list:
    """Each group's :class:`~specsim.timing.roofline.PassCounts` (FLOP and bytes, whatever the profile)."""
    return [pass_counts(shape, *check_pass(batch, tokens, context)) for _, shape, batch, tokens, context in groups]


@dataclass(frozen=True)
class CalibrationResult:
    """A fitted profile, the split it was judged on, and the errors before and after."""

    profile: HardwareProfile
    base: HardwareProfile
    data: pd.DataFrame  # with columns measured_s, before_s, after_s, holdout (bool)
    per_layer: bool
    source: str
    source_sha256: str

    def errors(self, which: str = "after", holdout: bool = True) -> np.ndarray:
        """Relative errors (predicted / measured - 1) on the held-out or training rows."""
        rows = self.data[self.data.holdout == holdout]
        return rows[f"{which}_s"].to_numpy() / rows["measured_s"].to_numpy() - 1.0

    def summary(self) -> dict[str, Any]:
        def stats(which: str, holdout: bool) -> dict[str, float]:
            e = np.abs(self.errors(which, holdout))
            return {
                "mape": float(e.mean()) if len(e) else float("nan"),
                "max_abs_error": float(e.max()) if len(e) else float("nan"),
            }

        return {
            "points": int(len(self.data)),
            "train_points": int((~self.data.holdout).sum()),
            "holdout_points": int(self.data.holdout.sum()),
            "per_layer_overhead_fitted": self.per_layer,
            "holdout_before": stats("before", True),
            "holdout_after": stats("after", True),
            "train_after": stats("after", False),
            "compute_eff": self.profile.compute_eff,
            "bandwidth_eff": self.profile.bandwidth_eff,
            "overhead_s": self.profile.overhead_s,
            "per_layer_overhead_s": self.profile.per_layer_overhead_s,
        }


def _fit(base: HardwareProfile, train: pd.DataFrame, per_layer: bool) -> tuple[HardwareProfile, float]:
    from scipy.optimize import least_squares

    measured = train["measured_s"].to_numpy()
    top = float(measured.max())
    layers = float(train["n_layers_"].min())

    def profile_of(theta: np.ndarray) -> HardwareProfile:
        return dataclasses.replace(
            base,
            compute_eff=float(theta[0]),
            bandwidth_eff=float(theta[1]),
            overhead_s=float(theta[2]),
            per_layer_overhead_s=float(theta[3]) if per_layer else 0.0,
        )

    groups = _by_shape(train)
    counts = _counts(groups)  # the rows' passes, counted once for every step of every start (half the fit's time)

    def residuals(theta: np.ndarray) -> np.ndarray:
        return _predict(profile_of(theta), groups, len(train), counts) / measured - 1.0

    # Bounded by the profile's own limits, so that no start or step of the fit builds a profile it would refuse.
    lower = [1e-4, 1e-4, 0.0, 0.0]
    upper = [1.0, 1.0, min(top, MAX_OVERHEAD_S), min(top, MAX_OVERHEAD_S) / layers if per_layer else 1e-12]
    best = None
    for ce in (0.2, 0.5, 0.9):
        for be in (0.3, 0.6, 0.9):
            start = np.array([ce, be, min(float(measured.min()) * 0.3, top), 0.0])
            fit = least_squares(
                residuals,
                start,
                bounds=(lower, upper),
                loss="soft_l1",
                f_scale=0.05,
                x_scale="jac",
                ftol=1e-12,
                xtol=1e-12,
                gtol=1e-12,
            )
            if best is None or fit.cost < best.cost:
                best = fit
    profile = profile_of(best.x)
    mape = float(np.abs(residuals(best.x)).mean())
    return profile, mape


def calibrate(
    path: str | Path,
    base: HardwareProfile,
    holdout: float = DEFAULT_HOLDOUT,
    seed: int = 0,
    per_layer: str = "auto",
    name: str | None = None,
) -> CalibrationResult:
    """Fit ``base``'s efficiencies and overheads to the measurements in ``path``.

    Parameters
    ----------
    path : CSV of measured step times (see :func:`load_measurements`).
    base : the profile whose datasheet peaks are kept and whose efficiencies are the "before".
    holdout : fraction of points held out of the fit, in [0.05, 0.8].
    seed : seed of the random train / held-out split.
    per_layer : "auto", "yes" or "no": fit a per-layer overhead.
    name : name of the fitted profile (default ``<base>-calibrated``).
    """
    if not 0.05 <= holdout <= 0.8:
        raise ValueError(f"holdout fraction must be in [0.05, 0.8], got {holdout!r}")
    if per_layer not in ("auto", "yes", "no"):
        raise ValueError(f"per_layer must be auto, yes or no, got {per_layer!r}")
    from specsim.describe.hardware import builtin_dir

    name = name or f"{base.name}-calibrated"
    # A calibrated profile may carry the name of a built-in calibrated one (that is how they are regenerated),
    # never the name of a datasheet profile.
    if name in {p.stem for p in builtin_dir().glob("*.yaml")}:
        raise ValueError(f"profile name {name!r} is a built-in datasheet profile; choose another {given_as('name')}")
    df = load_measurements(path).reset_index(drop=True)
    df["holdout"] = _holdout_mask(df, holdout, seed, 4 if per_layer == "yes" else 3)
    train = df[~df["holdout"]]
    layer_counts = train["n_layers_"].nunique()
    if per_layer == "yes" and layer_counts < 2:
        raise ValueError("a per-layer overhead needs measurements of at least two layer counts (models)")
    plain, plain_mape = _fit(base, train, per_layer=False)
    chosen, use_layers = plain, False
    if per_layer == "yes" or (per_layer == "auto" and layer_counts >= 2):
        layered, layered_mape = _fit(base, train, per_layer=True)
        if per_layer == "yes" or layered_mape < 0.95 * plain_mape:
            chosen, use_layers = layered, True
    raw = Path(path).read_bytes()
    devices = sorted(set(map(str, df["device_name"]))) if "device_name" in df.columns else []
    result_profile = dataclasses.replace(chosen, name=name)
    df["before_s"] = predict(base, df)
    df["after_s"] = predict(result_profile, df)
    result = CalibrationResult(result_profile, base, df, use_layers, Path(path).name, hashlib.sha256(raw).hexdigest())
    _judge(result)
    return _with_provenance(result, devices, holdout, seed)


def _holdout_mask(df: pd.DataFrame, holdout: float, seed: int, n_params: int) -> np.ndarray:
    """Rows held out of the fit: a random ``holdout`` share of the distinct points, with every repeat of each.

    Distinct points, not rows: a repeated measurement of a held-out (shape, b, q, L) must not sit in the
    training half, or the held-out error measures memory instead of prediction.
    """
    point_codes, _ = pd.factorize(pd.Series(list(zip(df["shape"], df["batch"], df["tokens_per_seq"], df["context"]))))
    n_points = int(point_codes.max()) + 1
    n_hold = max(1, int(round(holdout * n_points)))
    if n_points - n_hold < n_params + 1:
        raise ValueError(
            f"too few distinct points: {n_points} distinct (model, batch, tokens, context) points leave "
            f"{n_points - n_hold} to fit {n_params} parameters; measure at least {n_params + 1 + n_hold} distinct points"
        )
    held_points = np.random.default_rng(seed).choice(n_points, n_hold, replace=False)
    return np.isin(point_codes, held_points)


def _with_provenance(result: CalibrationResult, devices: list, holdout: float, seed: int) -> CalibrationResult:
    """The result with its profile's calibration record (source, hash, split, errors) and notes."""
    base, use_layers = result.base, result.per_layer
    summary = result.summary()
    provenance = {
        "source": result.source,
        "source_sha256": result.source_sha256,
        "devices": devices,
        "date": _dt.date.today().isoformat(),
        "base_profile": base.name,
        "holdout_fraction": holdout,
        "split_seed": seed,
        "per_layer_overhead_fitted": use_layers,
        "points": summary["points"],
        "train_points": summary["train_points"],
        "holdout_points": summary["holdout_points"],
        "holdout_mape_before": round(summary["holdout_before"]["mape"], 6),
        "holdout_mape_after": round(summary["holdout_after"]["mape"], 6),
        "holdout_max_error_before": round(summary["holdout_before"]["max_abs_error"], 6),
        "holdout_max_error_after": round(summary["holdout_after"]["max_abs_error"], 6),
        "train_mape_after": round(summary["train_after"]["mape"], 6),
    }
    notes = (
        f"Calibrated by specsim calibrate from {result.source} (sha256 {result.source_sha256[:12]}...) on "
        f"{provenance['date']}: efficiencies and overheads fitted by robust least squares to "
        f"{summary['train_points']} points; on {summary['holdout_points']} held-out points the mean absolute "
        f"error is {summary['holdout_after']['mape']:.1%} (base profile: {summary['holdout_before']['mape']:.1%}). "
        "Datasheet peaks and sources are those of the base profile."
    )
    final = dataclasses.replace(
        result.profile, calibration=provenance, notes=notes, description=f"{base.description} - calibrated"
    )
    return dataclasses.replace(result, profile=final)


def repeat_spread(df: pd.DataFrame) -> float | None:
    """Median over rows of the repeats' spread, (p90 - p10) / median, or None where the file has no percentiles.

    >>> round(repeat_spread(pd.DataFrame({"measured_s": [1.0, 2.0, 4.0], "p10_s": [0.9, 1.9, 3.0], "p90_s": [1.1, 2.1, 5.0]})), 12)
    0.2
    """
    if not {"p10_s", "p90_s"} <= set(df.columns):
        return None
    return float(np.median((df["p90_s"] - df["p10_s"]).to_numpy(float) / df["measured_s"].to_numpy(float)))


def fit_trouble(result: CalibrationResult) -> tuple[list[str], list[str]]:
    """``(unphysical, poor)``: what is wrong with a fit, as phrases.  Unphysical: a fixed cost per pass beyond the
    fastest pass timed, an efficiency at 1 (faster than the datasheet), or an overhead at the profile's limit.
    Poor: a large held-out error, or one worse than the base profile's."""
    p, data, s = result.profile, result.data, result.summary()
    unphysical, poor = [], []
    fixed = p.overhead_s + p.per_layer_overhead_s * data["n_layers_"].to_numpy(float)
    fastest = data["min_s"].to_numpy(float) if "min_s" in data.columns else data["measured_s"].to_numpy(float)
    over = fixed / fastest - 1.0
    worst = int(np.argmax(over))
    if over[worst] > FIXED_COST_SLACK:
        row = data.iloc[worst]
        unphysical.append(
            f"a fitted fixed cost of {fixed[worst] * 1e3:.4g} ms per pass, above the fastest pass timed "
            f"({fastest[worst] * 1e3:.4g} ms at batch {row['batch']:g}, {row['tokens_per_seq']:g} tokens per "
            f"sequence, context {row['context']:g})"
        )
    for key in ("compute_eff", "bandwidth_eff"):
        if getattr(p, key) >= 0.999:  # the fit's upper bound: the data want more than the datasheet's peak
            unphysical.append(f"{key} at 1: passes faster than {_peak(key)} allows")
    if p.overhead_s >= 0.999 * MAX_OVERHEAD_S:
        unphysical.append(
            f"a fitted overhead of {p.overhead_s:.3g} s per pass, at the profile's limit of {MAX_OVERHEAD_S:g} s"
        )
    after, before = s["holdout_after"]["mape"], s["holdout_before"]["mape"]
    if after > before:
        poor.append(f"a held-out error of {after:.0%}, worse than the base profile's {before:.0%}")
    elif after > LARGE_ERROR:
        poor.append(f"a held-out error of {after:.0%}")
    return unphysical, poor


def _peak(key: str) -> str:
    return "the datasheet's peak FLOP/s" if key == "compute_eff" else "the datasheet's memory bandwidth"


def _judge(result: CalibrationResult) -> None:
    """Refuse a fit in trouble: as noise (:class:`NoisyTimings`) where the repeats vary by as much as the fit misses,
    as a bad model where they agree and the fitted terms are unphysical (see the module's notes)."""
    unphysical, poor = fit_trouble(result)
    if not (unphysical or poor):
        return
    spread = repeat_spread(result.data)
    error = result.summary()["holdout_after"]["mape"]
    trouble = "; ".join(unphysical + poor)
    if spread is not None and (spread > NOISY_SPREAD or spread >= error):
        raise NoisyTimings(
            f"{result.source}: the timings are too noisy to fit: the repeats of a point spread by a median "
            f"{spread:.0%} (10th to 90th percentile over the median; at most {NOISY_SPREAD:.0%} for a fit) "
            f"and the fit shows {trouble}; measure again on an idle machine or with more {given_as('repeats')}; "
            "nothing written"
        )
    if unphysical:
        agree = "" if spread is None else f" while the repeats agree within {spread:.0%}"
        raise ValueError(
            f"{result.source}: the roofline does not describe these measurements: the fit needs {trouble}"
            f"{agree}; nothing written"
        )


def implausible(result: CalibrationResult) -> list[str]:
    """Warnings about a fit that should not be trusted as it stands (empty when none)."""
    s = result.summary()
    p = result.profile
    out = []
    for key in ("compute_eff", "bandwidth_eff"):
        value = getattr(p, key)
        if value >= 0.999 or value <= 0.02:
            out.append(
                f"{key} = {value:.3f} sits at its bound: the data do not pin it (all points bound by the other resource?)"
            )
    if s["holdout_after"]["mape"] > LARGE_ERROR:
        out.append(
            f"held-out error {s['holdout_after']['mape']:.1%} is large: the roofline does not describe these measurements well"
        )
    if s["holdout_after"]["mape"] > s["holdout_before"]["mape"]:
        out.append("the fitted profile predicts the held-out points worse than the base profile")
    spread = repeat_spread(result.data)
    if spread is not None and spread > NOISY_SPREAD:
        out.append(
            f"the repeats of a point spread by a median {spread:.0%} of it (10th to 90th percentile): timings of a busy "
            "machine; the fit held, but measure again on an idle one before trusting it"
        )
    return out


def profile_yaml(profile: HardwareProfile) -> str:
    """YAML text of a profile; numbers written so that PyYAML reads them back as floats."""
    import yaml

    data = profile_to_mapping(profile)
    return yaml.safe_dump(data, sort_keys=False, width=100)
