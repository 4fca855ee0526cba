"""Sweeps as tidy tables: one row per point of a grid, for notebooks and figures.

:func:`sweep` evaluates the step-time and speedup model on the full grid of
alpha x gamma x batch x context for each hardware profile and (target, draft)
pair, and returns a pandas DataFrame with one row per point: the inputs, the
three step times, c = t_D / t_T, tokens per step, speedup and which bound
each pass hits.  :func:`optimal_gamma_table` gives the best gamma per
(alpha, batch, context).  Figures and notebooks draw from these tables; the
physics lives in ``steptime`` and ``speedup`` only.

Each hardware x pair combination is one vectorised call on the grid; nothing
loops over grid points.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from specsim.core.defaults import (
    DEFAULT_BATCHES,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_DRAFT,
    DEFAULT_GAMMA_MAX,
    DEFAULT_HARDWARE,
    DEFAULT_TARGET,
)
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA, check_int
from specsim.describe.hardware import HardwareProfile, load_hardware
from specsim.describe.models import ModelShape, get_model
from specsim.engines import source_and_engine
from specsim.speculation.acceptance import tokens_per_round
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, search_bound, speedup_from_cost_ratio

__all__ = ["closed_form_table", "deployments", "optimal_gamma_table", "pass_table", "roofline_table", "sweep"]


def _as_list(value: object) -> list:
    if isinstance(value, (str, HardwareProfile, ModelShape, tuple)):
        return [value]
    return list(value) if isinstance(value, Iterable) else [value]


def deployments(
    hardware: object = DEFAULT_HARDWARE,
    pairs: object = ((DEFAULT_TARGET, DEFAULT_DRAFT),),
    timing: str | None = None,
    engine: str | None = None,
) -> list[Deployment]:
    """Every combination of hardware and (target, draft) pair as a Deployment.

    ``hardware`` is a name, a path, a HardwareProfile or a list of them;
    ``pairs`` is one (target, draft) tuple or a list of them, each a name,
    config.json path or ModelShape.  ``timing`` and ``engine`` choose the
    step-time source and engine preset as on the command line (``"hybrid"``,
    ``"vllm@0.10"``, ``"roofline"``, ``"none"``, ...); left at None, the command line's defaults
    (:data:`specsim.timing.DEFAULT_TIMING`, :data:`specsim.engines.DEFAULT_ENGINE`).
    """
    from specsim.speculation.drafters import make_drafter

    out = []
    pair_list = (
        [pairs] if isinstance(pairs, tuple) and len(pairs) == 2 and not isinstance(pairs[0], tuple) else list(pairs)
    )  # type: ignore[arg-type]
    if not pair_list or any(not isinstance(p, (tuple, list)) or len(p) != 2 for p in pair_list):
        raise ValueError(f"pairs must be one (target, draft) pair or a non-empty list of them, got {pairs!r:.60}")
    hardware = _as_list(hardware)
    if not hardware:
        raise ValueError("hardware must name at least one profile")
    for hw in hardware:
        profile = hw if isinstance(hw, HardwareProfile) else load_hardware(hw)
        for target, draft in pair_list:
            target = target if isinstance(target, ModelShape) else get_model(target)
            source, preset = source_and_engine(profile, timing, engine, model=target)
            # A draft model by name or shape, or any drafter --draft names (eagle3, mtp, ngram, ...).
            drafter = draft if isinstance(draft, ModelShape) else make_drafter(str(draft), target)
            out.append(Deployment(profile, target, drafter, source, preset))
    return out


#: The whole-number axes of a grid and their ranges (a table labels its rows by them: batch 2.5 was shown as 2).
_WHOLE = {"gamma": (0, MAX_GAMMA), "batch": (1, MAX_BATCH), "context": (0, MAX_CONTEXT)}


def _grid(**axes: object) -> dict[str, np.ndarray]:
    """Broadcastable 1-D axes, in order, each along its own dimension; gamma, batch and context whole numbers in their
    ranges, alpha in [0, 1]."""
    arrays = {}
    for name, values in axes.items():
        if isinstance(values, (str, bytes)):
            raise ValueError(f"{name} must be a number or a list of numbers, got {values!r:.40}")
        try:
            arrays[name] = np.atleast_1d(np.asarray(values, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or a list of numbers, got {values!r:.40}") from None
    for name, arr in arrays.items():
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D list of values")
        if name in _WHOLE:
            for v in arr:
                check_int(name, float(v), *_WHOLE[name])
        elif name == "alpha" and not np.all((arr >= 0) & (arr <= 1)):
            raise ValueError(f"alpha must be in [0, 1], got {arr.tolist()!r:.60}")
    n = len(arrays)
    return {name: arr.reshape([-1 if i == k else 1 for k in range(n)]) for i, (name, arr) in enumerate(arrays.items())}


def _frame(dep: Deployment, shape: tuple[int, ...], columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """Flatten broadcast columns into rows labelled with the deployment."""
    frame = pd.DataFrame({k: np.broadcast_to(v, shape).ravel() for k, v in columns.items()})
    frame.insert(0, "draft", dep.drafter.name)
    frame.insert(0, "target", dep.target.name)
    frame.insert(0, "hardware", dep.hardware.name)
    frame["timing"] = dep.source.name
    frame["engine"] = dep.engine.key
    return frame


def _concat(frames: list[pd.DataFrame], deps: list) -> pd.DataFrame:
    """The frames of each deployment as one, with what the commands print beside the same numbers in its ``attrs``:
    ``notes`` (what a step-time source could not answer from its own data, the assumptions that move the answer) and
    ``provenance`` (each deployment's, by hardware, target and draft)."""
    df = pd.concat(frames, ignore_index=True)
    for col in ("gamma", "batch", "context"):
        df[col] = df[col].astype(int)
    df.attrs["notes"] = list(dict.fromkeys(note for dep in deps for note in dep.notes()))
    df.attrs["provenance"] = {
        f"{dep.hardware.name} {dep.target.name} {dep.drafter.name if dep.drafter else '-'}": dep.provenance()
        for dep in deps
    }
    return df


def sweep(
    alpha: object = 0.8,
    gamma: object = range(0, 9),
    batch: object = DEFAULT_BATCHES,
    context: object = DEFAULT_CONTEXT_TOKENS,
    hardware: object = DEFAULT_HARDWARE,
    pairs: object = ((DEFAULT_TARGET, DEFAULT_DRAFT),),
    timing: str | None = None,
    engine: str | None = None,
) -> pd.DataFrame:
    """Speedup and step times on a grid, one row per point.

    Parameters
    ----------
    alpha, gamma, batch, context : scalar or sequence
        Axes of the grid (acceptance rate, drafted tokens, sequences, cached tokens).
    hardware : name, path, HardwareProfile, or a list of them
    pairs : (target, draft) or a list of such pairs
    timing, engine : step-time source and engine preset (as ``--timing`` and
        ``--engine``); None: the command line's defaults (the hybrid and vllm@latest; the article's bare roofline is
        ``timing="roofline", engine="none"``)

    Returns
    -------
    DataFrame
        Columns: hardware, target, draft, alpha, gamma, batch, context,
        t_target_s, t_draft_s, t_verify_s, cost_ratio, verify_ratio,
        tokens_per_round, speedup, bound_target, bound_draft, bound_verify,
        timing, engine.

    Examples
    --------
    >>> df = sweep(alpha=[0.6, 0.8], gamma=4, batch=[1, 256], pairs=("article-8b", "article-1b"),
    ...    timing="roofline", engine="none")
    >>> len(df), round(df.query("alpha == 0.8 and batch == 256").speedup.item(), 2)
    (4, 1.25)
    """
    frames, deps = [], list(deployments(hardware, pairs, timing, engine))
    for dep in deps:
        g = _grid(alpha=alpha, gamma=gamma, batch=batch, context=context)
        dep.require_within_positions(int(np.max(g["context"])))
        # the grid holds its largest gamma at its largest context: the one round that could pass the positions' room
        dep.require_drafts_within_positions(int(np.max(g["context"])), int(np.max(g["gamma"])))
        shape = np.broadcast_shapes(*(a.shape for a in g.values()))
        times = dep.outcome(g["alpha"], g["gamma"], g["batch"], g["context"])
        tokens, s = times.tokens, times.speedup
        columns = {
            "alpha": g["alpha"],
            "gamma": g["gamma"],
            "batch": g["batch"],
            "context": g["context"],
            "t_target_s": times.target.total_s,
            "t_draft_s": times.draft.total_s,
            "t_verify_s": times.verify.total_s,
            "t_host_s": times.host_s,
            "t_round_s": times.round_s,
            "cost_ratio": times.cost_ratio,
            "verify_ratio": times.verify_ratio,
            "tokens_per_round": tokens,
            "speedup": s,
            "bound_target": times.target.bound,
            "bound_draft": times.draft.bound,
            "bound_verify": times.verify.bound,
        }
        frames.append(_frame(dep, shape, columns))
    return _concat(frames, deps)


def optimal_gamma_table(
    alpha: object = 0.8,
    batch: object = DEFAULT_BATCHES,
    context: object = DEFAULT_CONTEXT_TOKENS,
    hardware: object = DEFAULT_HARDWARE,
    pairs: object = ((DEFAULT_TARGET, DEFAULT_DRAFT),),
    gamma_max: int = DEFAULT_GAMMA_MAX,
    rtol: float = 0.0,
    timing: str | None = None,
    engine: str | None = None,
) -> pd.DataFrame:
    """The best gamma per (hardware, pair, alpha, batch, context), one row each.

    Columns: hardware, target, draft, alpha, batch, context, gamma, speedup,
    tokens_per_round, t_target_s, t_draft_s, t_verify_s, cost_ratio,
    bound_target, bound_draft, bound_verify, at_gamma_max, gamma_bound, timing, engine.
    ``timing`` and ``engine`` as in :func:`sweep`; ``gamma_bound`` what stopped the search where the best gamma is its
    largest (:func:`~specsim.speculation.search.search_bound`, the words ``optimal-gamma --json`` gives), else None.

    >>> t = optimal_gamma_table(alpha=0.8, batch=[1, 256], pairs=("article-8b", "article-1b"),
    ...    timing="roofline", engine="none")
    >>> t.gamma.tolist(), t.gamma_bound.tolist()
    ([4, 2], [None, None])
    >>> optimal_gamma_table(alpha=0.8, batch=1, pairs=("article-8b", "article-1b"), gamma_max=2,
    ...    timing="roofline", engine="none").gamma_bound.tolist()
    ['at gamma_max; raise it']
    """
    frames, deps = [], list(deployments(hardware, pairs, timing, engine))
    for dep in deps:
        g = _grid(alpha=alpha, batch=batch, context=context)
        dep.require_within_positions(int(np.max(g["context"])))
        dep.require_drafts_within_positions(int(np.max(g["context"])), 0)  # a context where a decode step runs
        shape = np.broadcast_shapes(*(a.shape for a in g.values()))
        best = optimal_gamma(dep, g["alpha"], g["batch"], g["context"], gamma_max, rtol)
        bound = search_bound(dep, g["alpha"], gamma_max, g["context"])
        times = best.outcome
        columns = {
            "alpha": g["alpha"],
            "batch": g["batch"],
            "context": g["context"],
            "gamma": best.gamma,
            "speedup": best.speedup,
            "tokens_per_round": times.tokens,
            "t_target_s": times.target.total_s,
            "t_draft_s": times.draft.total_s,
            "t_verify_s": times.verify.total_s,
            "t_host_s": times.host_s,
            "t_round_s": times.round_s,
            "cost_ratio": times.cost_ratio,
            "bound_target": times.target.bound,
            "bound_draft": times.draft.bound,
            "bound_verify": times.verify.bound,
            "at_gamma_max": best.at_limit,
            "gamma_bound": np.where(np.broadcast_to(best.at_limit, shape), bound, None),
        }
        frames.append(_frame(dep, shape, columns))
    return _concat(frames, deps)


def closed_form_table(alpha: object = 0.8, gamma: object = range(0, 17), cost_ratio: object = 0.05) -> pd.DataFrame:
    """Closed-form speedup E / (gamma c + 1) on an alpha x gamma x c grid.

    >>> t = closed_form_table([0.5, 0.9], range(0, 17), 0.05)
    >>> t.loc[t.groupby("alpha").speedup.idxmax(), "gamma"].tolist()
    [3, 13]
    """
    g = _grid(alpha=alpha, gamma=gamma, cost_ratio=cost_ratio)
    shape = np.broadcast_shapes(*(a.shape for a in g.values()))
    columns = {
        "alpha": g["alpha"],
        "gamma": g["gamma"],
        "cost_ratio": g["cost_ratio"],
        "tokens_per_round": tokens_per_round(g["alpha"], g["gamma"]),
        "speedup": speedup_from_cost_ratio(g["alpha"], g["gamma"], g["cost_ratio"]),
    }
    df = pd.DataFrame({k: np.broadcast_to(v, shape).ravel() for k, v in columns.items()})
    df["gamma"] = df["gamma"].astype(int)
    return df


def pass_table(
    dep: Deployment, batch: object = DEFAULT_BATCHES, gamma: int = 4, context: object = DEFAULT_CONTEXT_TOKENS
) -> pd.DataFrame:
    """Step time and its parts for the three passes on the GPU, one row per (pass, batch, context).

    ``pass`` is "target decode", "draft step" or "verification" (gamma + 1 tokens).
    Columns: pass, model, batch, context, tokens_per_seq, step_time_s,
    compute_s, memory_s, overhead_s, flop, bytes, intensity_flop_per_byte, bound.
    """
    g = _grid(batch=batch, context=context)
    shape = np.broadcast_shapes(g["batch"].shape, g["context"].shape)
    frames = []
    for name, model, q in (
        ("target decode", dep.target, 1),
        ("draft step", dep.draft, 1),
        ("verification", dep.target, gamma + 1),
    ):
        t = dep.gpu_pass(model, g["batch"], q, g["context"])
        columns = {
            "batch": g["batch"],
            "context": g["context"],
            "step_time_s": t.total_s,
            "compute_s": t.compute_s,
            "memory_s": t.memory_s,
            "overhead_s": np.full(shape, t.overhead_s),
            "flop": t.flop,
            "bytes": t.bytes,
            "intensity_flop_per_byte": t.intensity_flop_per_byte,
            "bound": t.bound,
        }
        frame = pd.DataFrame({k: np.broadcast_to(v, shape).ravel() for k, v in columns.items()})
        frame.insert(0, "tokens_per_seq", q)
        frame.insert(0, "model", model.name)
        frame.insert(0, "pass", name)
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    df["batch"] = df["batch"].astype(int)
    df["context"] = df["context"].astype(int)
    return df


def roofline_table(hardware: HardwareProfile, intensity_flop_per_byte: object) -> pd.DataFrame:
    """The roofline: attainable FLOP/s = min(achieved peak, intensity x achieved bandwidth).

    >>> hw = load_hardware("h100-sxm")
    >>> t = roofline_table(hw, [1.0, hw.ridge_flop_per_byte, 1e4])
    >>> (t.attainable_flop_per_s / hw.flop_per_s).round(4).tolist()
    [0.0045, 1.0, 1.0]
    """
    x = np.asarray(intensity_flop_per_byte, dtype=float)
    return pd.DataFrame(
        {
            "intensity_flop_per_byte": x,
            "attainable_flop_per_s": np.minimum(hardware.flop_per_s, x * hardware.bytes_per_s),
            "bandwidth_roof_flop_per_s": x * hardware.bytes_per_s,
        }
    )
