"""Plots: every ``plot_*(data, *, ax=None)`` draws a table it is given and computes no physics of its own.

The tables come from :mod:`specsim.speculation.sweep`, :mod:`specsim.serving.simulator` and the library's answers; the committed
figures (which data each one draws) are :mod:`specsim.figures.make`.  Each ``plot_*`` draws on the axes it is
given (or a new figure), never calls ``plt.show()``, and returns what it drew so that notebooks and tests can
read the data back.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specsim.core.files import atomic_write_bytes
from specsim.core.names import given_as
from specsim.describe.hardware import HardwareProfile, load_hardware
from specsim.figures.layout import freeze_layout

__all__ = [
    "plot_drafters",
    "plot_moe_speculation",
    "plot_optimal_gamma_vs_batch",
    "plot_residuals",
    "plot_round_anatomy",
    "plot_roofline",
    "plot_serve_sweep",
    "plot_speedup_heatmap",
    "plot_speedup_vs_batch",
    "plot_speedup_vs_batch_devices",
    "plot_speedup_vs_gamma",
    "plot_step_times",
    "plot_throughput_vs_latency",
    "plot_verify_cost",
    "plot_watch",
    "save_round_anatomy",
    "save_serve_sweep",
    "save_watch",
]


_BATCH_AXIS = np.arange(1, 513)


_COLORS = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#7b4b94", "#00798c", "#6c757d"]


def _axes(ax: Any = None) -> Any:
    """The given axes, or new ones on a pyplot figure (for notebooks)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(7.5, 4.6))
    return ax


def _plain_log2(ax: Any) -> None:
    """A log2 x axis whose ticks read as plain numbers (0.5, 1, 2, 4 ...): every batch and rate axis here."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _plain_log(axis: Any) -> None:
    """A log axis (base 10) labelled in plain numbers: 1, 10, 100 at the decades and 2 and 5 between them."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}" if f"{value:g}"[0] in "25" else ""))


def _break_even(ax: Any) -> Any:
    """The line at speedup 1, labelled, on every panel that plots a speedup."""
    return ax.axhline(1.0, color="black", lw=1, ls="--", label="break-even (S = 1)", zorder=1)


def _log2_batch_axis(ax: Any, top: int = 512) -> None:
    ax.set_xscale("log", base=2)
    ticks = [2**k for k in range(0, int(np.log2(top)) + 1)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlim(1, top)


def _lines_by_source(ax: Any, frame: pd.DataFrame, key: str, y: str, colours: dict, offset: int = 0) -> dict:
    """One line per (``key``, source) of ``frame`` against batch: a colour per key, dashed for the roofline."""
    lines = {}
    for (name, source), rows in frame.groupby([key, "source"], sort=False):
        colour = colours.setdefault(name, f"C{len(colours) + offset}")
        (line,) = ax.plot(
            rows.batch,
            rows[y],
            marker="o",
            ms=3,
            color=colour,
            ls="--" if str(source).startswith("roofline") else "-",
            label=f"{name}, {source}",
        )
        lines[(name, source)] = line
    return lines


def _batch_panel(ax: Any, ylabel: str, title: str, speedup: bool = True) -> None:
    """Log2 batch axis, the break-even line (a plain line at 1 on a ratio panel), labels, title and legend."""
    _plain_log2(ax)
    ax.set_xlabel("batch size (sequences)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if speedup:
        _break_even(ax)
    else:
        ax.axhline(1.0, color="0.6", lw=0.8)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")


# -- 1. speedup against gamma (closed form) ------------------------------------------
def plot_speedup_vs_gamma(table: pd.DataFrame, *, ax: Any = None) -> dict[str, Any]:
    """Speedup against gamma, one curve per alpha, each optimum marked.

    ``table`` is :func:`specsim.speculation.sweep.closed_form_table` output for one cost ratio.
    Returns ``{"lines": {alpha: Line2D}, "optima": {alpha: (gamma, speedup)}}``.
    """
    ax = _axes(ax)
    c = table.cost_ratio.unique()
    if len(c) != 1:
        raise ValueError(f"plot_speedup_vs_gamma needs one cost ratio, got {c.tolist()}")
    lines, optima = {}, {}
    for i, (color, (alpha, group)) in enumerate(zip(_COLORS, table.groupby("alpha"))):
        group = group.sort_values("gamma")
        (line,) = ax.plot(group.gamma, group.speedup, "-o", ms=3, color=color, label=f"α = {alpha:g}")
        best = group.loc[group.speedup.idxmax()]  # first maximum: exact ties go to the smaller gamma
        optima[float(alpha)] = (int(best.gamma), float(best.speedup))
        ax.plot(best.gamma, best.speedup, "*", ms=14, color=color, markeredgecolor="black", zorder=5)
        # Above the star, except for the lowest curve, whose label would sit on the next curve up.
        ax.annotate(
            f"γ*={int(best.gamma)}, {best.speedup:.2f}×",
            (best.gamma, best.speedup),
            textcoords="offset points",
            xytext=(0, -17) if i == 0 else (0, 9),
            ha="center",
            fontsize=8.5,
        )
        lines[float(alpha)] = line
    _break_even(ax)
    ax.set_xlabel("γ (drafted tokens per step)")
    ax.set_ylabel("speedup over plain decoding (×)")
    ax.set_title(f"Speedup E/(γc+1) against γ at c = {c[0]:g} (verification = one decode step)")
    ax.set_xlim(0, table.gamma.max())
    ax.set_ylim(0.9, table.speedup.max() * 1.12)
    ax.legend(loc="upper left", fontsize=9)
    ax.grid(alpha=0.3)
    return {"ax": ax, "lines": lines, "optima": optima}


# -- 2. speedup against batch size -----------------------------------------------------
def plot_speedup_vs_batch(
    table: pd.DataFrame,
    *,
    ax: Any = None,
    curves: tuple[tuple[float, int], ...] = ((0.8, 4), (0.8, 8), (0.6, 4)),
    marks: tuple[int, ...] = (1, 64, 128, 256),
    title: str | None = None,
) -> dict[str, Any]:
    """Speedup against batch size for (alpha, gamma) curves, with the break-even line.

    ``table`` is :func:`specsim.speculation.sweep.sweep` output for one deployment and context.
    The first curve's speedup is labelled at the ``marks`` batch sizes.
    Returns ``{"lines": {(alpha, gamma): Line2D}, "break_even": Line2D, "crossings": {(alpha, gamma): batch or None}}``.
    """
    ax = _axes(ax)
    lines, crossings = {}, {}
    # Curves can meet (past the knee the gamma = 8 and alpha = 0.6 ones nearly coincide): each its own dash.
    styles = ["-", (0, (6, 3)), (0, (1.5, 1.5))]
    for i, (alpha, gamma) in enumerate(curves):
        group = table[np.isclose(table.alpha, alpha) & (table.gamma == gamma)].sort_values("batch")
        if group.empty:
            raise ValueError(f"no rows for alpha={alpha}, gamma={gamma} in the table")
        below = group[group.speedup < 1.0]
        crossings[(alpha, gamma)] = int(below.batch.iloc[0]) if len(below) else None
        # Where speculation stops paying goes in the legend, where no curve or panel edge can cover it.
        where = "" if crossings[(alpha, gamma)] is None else f": S < 1 from b = {crossings[(alpha, gamma)]}"
        (line,) = ax.plot(
            group.batch,
            group.speedup,
            color=_COLORS[i],
            lw=2,
            ls=styles[i % len(styles)],
            label=f"α = {alpha:g}, γ = {gamma}{where}",
        )
        lines[(alpha, gamma)] = line
        if crossings[(alpha, gamma)] is not None:
            ax.plot(crossings[(alpha, gamma)], 1.0, "v", color=_COLORS[i], ms=8)
        if i == 0:
            for b in marks:
                s = group[group.batch == b].speedup
                if len(s):
                    ax.plot(b, s.item(), "o", color=_COLORS[i], ms=6, markeredgecolor="black")
                    # Up and to the right: the curve only falls to the right, so the label stays clear of it; near
                    # the right edge, below and to the left, under the higher curve there, so it stays inside the panel.
                    edge = b > table.batch.max() / 4
                    ax.annotate(
                        f"{s.item():.2f} at b={b}",
                        (b, s.item()),
                        textcoords="offset points",
                        xytext=(-7, -14) if edge else (7, 5),
                        ha="right" if edge else "left",
                        fontsize=9,
                    )
    break_even = _break_even(ax)
    drawn = np.concatenate([line.get_ydata() for line in lines.values()])
    ax.set_ylim(min(0.9, drawn.min() - 0.05), drawn.max() + 0.12)
    _log2_batch_axis(ax, int(table.batch.max()))
    ax.set_xlabel("batch size (sequences)")
    ax.set_ylabel("speedup over plain decoding (×)")
    if title is None:
        row = table.iloc[0]
        title = f"{row.target} target, {row.draft} draft on {row.hardware}, L = {int(row.context)}"
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower left", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    return {"ax": ax, "lines": lines, "break_even": break_even, "crossings": crossings}


# -- 3. roofline -------------------------------------------------------------------------
def plot_roofline(
    roof: pd.DataFrame, passes: pd.DataFrame, hardware: HardwareProfile, *, ax: Any = None
) -> dict[str, Any]:
    """Attainable FLOP/s against arithmetic intensity, with passes as points.

    ``roof`` is :func:`specsim.speculation.sweep.roofline_table`; ``passes`` is
    :func:`specsim.speculation.sweep.pass_table` (decode and verification rows are drawn).
    Points sit on the roof at their intensity (overhead excluded); filled where
    compute-bound, hollow where memory-bound.
    """
    ax = _axes(ax)
    (roof_line,) = ax.plot(
        roof.intensity_flop_per_byte,
        roof.attainable_flop_per_s / 1e12,
        color="black",
        lw=2,
        label=f"roofline: {hardware.compute_eff:g}×{hardware.peak_flop_per_s / 1e12:.0f} TFLOP/s, "
        f"{hardware.bandwidth_eff:g}×{hardware.peak_bytes_per_s / 1e12:.2f} TB/s",
    )
    ridge = hardware.ridge_flop_per_byte
    ax.axvline(ridge, color="gray", ls=":", lw=1.2)
    ax.annotate(
        f"ridge {ridge:.0f} FLOP/byte",
        (ridge, hardware.flop_per_s / 1e12),
        textcoords="offset points",
        xytext=(6, -28),
        fontsize=9,
        color="dimgray",
    )
    points = {}
    for color, (name, group) in zip(
        ("#1b6ca8", "#d1495b"), passes[passes["pass"] != "draft step"].groupby("pass", sort=False)
    ):
        q = int(group.tokens_per_seq.iloc[0])
        x = group.intensity_flop_per_byte.to_numpy()
        y = np.minimum(hardware.flop_per_s, x * hardware.bytes_per_s) / 1e12
        compute = (group.bound == "compute").to_numpy()
        ax.scatter(
            x[~compute], y[~compute], s=46, facecolors="white", edgecolors=color, linewidths=1.8, zorder=4
        )  # memory-bound
        pts = ax.scatter(x[compute], y[compute], s=46, color=color, zorder=4)
        first = group.batch[group.bound == "compute"]
        where = f"compute-bound from b={first.iloc[0]}" if len(first) else "memory-bound at every b shown"
        ax.plot([], [], "o", color=color, label=f"{name} (q = {q}): {where}")
        on_roof_batches = list(group.batch[compute])
        for b, xi, yi, on_roof in zip(group.batch, x, y, compute):
            if on_roof and b not in (on_roof_batches[0], on_roof_batches[-1]):
                continue  # points on the flat roof sit close together: label the first and the last
            # Labels on the flat roof crowd together: tilt them upwards.
            # Decode labels below and right of their points, verification labels to the left: the two rows of
            # points interleave along the slope.
            decode = color == "#1b6ca8"
            ax.annotate(
                f"b={b}",
                (xi, yi),
                textcoords="offset points",
                fontsize=7.5,
                color=color,
                xytext=(0, 7) if on_roof else ((5, -12) if decode else (-7, 1)),
                ha="left" if (on_roof or decode) else "right",
                rotation=60 if on_roof else 0,
            )
        points[name] = pts
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_ylim(top=hardware.flop_per_s / 1e12 * 3)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable throughput (TFLOP/s)")
    row = passes.iloc[0]
    ax.set_title(
        f"Roofline of {hardware.name}: {row.model} passes at L = {int(row.context)}\n"
        "(filled: compute-bound, hollow: memory-bound)",
        fontsize=10,
    )
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return {"ax": ax, "roof": roof_line, "ridge": ridge, "points": points}


# -- 4. step times -------------------------------------------------------------------------
def plot_step_times(passes: pd.DataFrame, *, axes: Any = None) -> dict[str, Any]:
    """t_T, t_D and t_V against batch size, one panel each, with their parts.

    The overhead is the shaded band; dashed and dotted lines are overhead +
    compute and overhead + memory; the step time (solid) is the larger.
    ``passes`` is :func:`specsim.speculation.sweep.pass_table` for one context.
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 3, figsize=(13, 4.4), sharey=True)
    totals = {}
    for ax, (name, group) in zip(axes, passes.groupby("pass", sort=False)):
        group = group.sort_values("batch")
        b = group.batch.to_numpy()
        ms = 1e3
        (total,) = ax.plot(
            b,
            group.step_time_s * ms,
            color="black",
            lw=5,
            alpha=0.3,
            label="step time = overhead + max(compute, memory)",
        )
        ax.fill_between(b, 1e-3, group.overhead_s * ms, color="#bbbbbb", alpha=0.6, label="overhead per pass")
        ax.plot(b, group.memory_s * ms, "-", color="#1b6ca8", lw=1.6, label="memory time (weights + KV)")
        ax.plot(b, group.compute_s * ms, "--", color="#d1495b", lw=1.6, label="compute time (matmuls + attention)")
        totals[name] = total
        cross = group[group.bound == "compute"]
        if len(cross):
            ax.axvline(cross.batch.iloc[0], color="#d1495b", lw=0.8, alpha=0.6)
            ax.annotate(
                f"compute-bound\nfrom b={cross.batch.iloc[0]}",
                (cross.batch.iloc[0], group.step_time_s.max() * ms * 0.5),
                textcoords="offset points",
                xytext=(-4, 0),
                ha="right",
                fontsize=8,
                color="#d1495b",
            )
        _log2_batch_axis(ax, int(b.max()))
        ax.set_yscale("log")
        _plain_log(ax.yaxis)
        ax.set_ylim(bottom=min(group.compute_s.min(), group.overhead_s.min()) * ms * 0.5)
        ax.set_xlabel("batch size (sequences)")
        q = int(group.tokens_per_seq.iloc[0])
        ax.set_title(f"{name}: {group.model.iloc[0]}, q = {q}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    top = max(float(np.max(line.get_ydata())) for line in totals.values())
    for ax in axes:
        ax.set_ylim(top=top * 1.6)  # the tallest pass (verification at the largest batch) inside every panel
    axes[0].set_ylabel("time per forward pass (ms)")
    axes[0].legend(loc="upper left", fontsize=8)
    return {"axes": axes, "totals": totals}


# -- 5. heat maps --------------------------------------------------------------------------
def plot_speedup_heatmap(
    table: pd.DataFrame,
    row: str,
    *,
    ax: Any = None,
    title: str | None = None,
    limits: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Speedup as a heat map over (``row``, gamma), with the optimal gamma traced.

    ``row`` is "alpha" or "batch"; ``table`` holds one value of the other axes.
    Colours diverge at 1 (red: slower than plain decoding, blue: faster); ``limits`` (low, high) fixes the colour
    scale, so that panels side by side share one.
    Returns ``{"image": AxesImage, "trace": Line2D, "optimal": Series of best gamma per row}``.
    """
    from matplotlib.colors import TwoSlopeNorm

    ax = _axes(ax)
    grid = table.pivot_table(index=row, columns="gamma", values="speedup")
    values = grid.to_numpy()
    low, high = (values.min(), values.max()) if limits is None else limits
    norm = TwoSlopeNorm(vmin=min(low, 0.99), vcenter=1.0, vmax=max(high, 1.01))
    image = ax.imshow(
        values,
        origin="lower",
        aspect="auto",
        cmap="RdBu",
        norm=norm,
        extent=(grid.columns.min() - 0.5, grid.columns.max() + 0.5, -0.5, len(grid.index) - 0.5),
    )
    optimal = grid.idxmax(axis=1)  # first maximum per row: ties go to the smaller gamma
    (trace,) = ax.plot(
        optimal.to_numpy(), np.arange(len(grid.index)), "-o", color="black", lw=1.8, ms=3.5, label="optimal γ"
    )
    # Break-even contour over gamma >= 1 (gamma = 0 is exactly 1 everywhere).
    speculating = grid.columns.to_numpy() >= 1
    ax.contour(
        grid.columns.to_numpy()[speculating],
        np.arange(len(grid.index)),
        values[:, speculating],
        levels=[1.0],
        colors="black",
        linewidths=1.0,
        linestyles="--",
    )
    labels = grid.index.to_numpy()
    step = max(1, len(labels) // 10)
    ax.set_yticks(np.arange(len(labels))[::step])
    ax.set_yticklabels([f"{v:g}" for v in labels[::step]])
    ax.set_xlabel("γ (drafted tokens per step)")
    ax.set_ylabel({"alpha": "α (acceptance rate)", "batch": "batch size (sequences)"}.get(row, row))
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    colorbar = ax.figure.colorbar(image, ax=ax, label="speedup (×); dashed: break-even")
    return {"ax": ax, "image": image, "trace": trace, "optimal": optimal, "colorbar": colorbar}


# -- 6. optimal gamma schedule -----------------------------------------------------------------
def _off_ranges(batch: np.ndarray, gamma: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive batch sizes (first, last) where ``gamma`` is 0: speculation off."""
    off = np.r_[False, np.asarray(gamma) == 0, False]
    starts, ends = np.flatnonzero(~off[:-1] & off[1:]), np.flatnonzero(off[:-1] & ~off[1:]) - 1
    return [(int(batch[a]), int(batch[b])) for a, b in zip(starts, ends)]


def plot_optimal_gamma_vs_batch(
    table: pd.DataFrame, *, axes: Any = None, ylabel: str | None = None, legend: bool = True
) -> dict[str, Any]:
    """The gamma to run at each batch size, one small panel per alpha, on integer gamma ticks.

    ``table`` holds one context: rows of ``alpha``, ``batch`` and ``gamma`` (the schedule drawn bold, as
    :func:`specsim.speculation.schedule.gamma_schedule` gives it per batch) and, where present, ``best_gamma`` (the
    exact best gamma at each batch, drawn thin and grey).  Each alpha has its own panel, so that equal gammas never
    hide one another and every value is drawn where it is; batch sizes where the schedule is 0 (speculation off) are
    shaded and listed.  Returns ``{"axes", "lines": {alpha: Line2D}, "best": {alpha: Line2D}, "off": {alpha: [(first,
    last), ...]}, "off_from": {alpha: first batch off, or None}}``.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    alphas = sorted(float(a) for a in table.alpha.unique())
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, len(alphas), figsize=(3 * len(alphas), 3.2), sharey=True)
    axes = list(np.atleast_1d(axes))
    if len(axes) != len(alphas):
        raise ValueError(f"{len(alphas)} alphas need as many axes, got {len(axes)}")
    top = int(table[[c for c in ("gamma", "best_gamma") if c in table]].to_numpy().max())
    drawn: dict[str, Any] = {"axes": axes, "lines": {}, "best": {}, "off": {}, "off_from": {}}
    for ax, colour, alpha in zip(axes, _COLORS, alphas):
        rows = table[table.alpha == alpha].sort_values("batch")
        batch, gamma = rows.batch.to_numpy(), rows.gamma.to_numpy()
        if "best_gamma" in rows:
            (drawn["best"][alpha],) = ax.step(
                batch, rows.best_gamma, where="post", color="0.45", lw=0.8, label="best γ at each batch"
            )
        (drawn["lines"][alpha],) = ax.step(batch, gamma, where="post", color=colour, lw=2.2, label="schedule")
        off = _off_ranges(batch, gamma)
        drawn["off"][alpha], drawn["off_from"][alpha] = off, (off[0][0] if off else None)
        for k, (first, last) in enumerate(off):
            ax.axvspan(first, last + 1, color="0.88", lw=0, zorder=0, label="speculation off" if k == 0 else None)
        where = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in off)
        ax.text(
            0.97,
            0.95,
            f"off at b = {where}" if off else "on at every batch",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.9, "edgecolor": "#999999"},
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks([2**k for k in range(int(np.log2(batch.max())) + 1)])
        # Every other power of two labelled (1, 4, 16, ...): ten labels do not fit a panel this narrow.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if round(np.log2(v)) % 2 == 0 else ""))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(1, batch.max())
        ax.set_yticks(range(top + 1))  # gamma is a count of draft tokens: integer ticks, the curves drawn at them
        ax.set_ylim(-0.35, top + 0.6)
        ax.set_xlabel("batch size (sequences)")
        ax.set_title(f"α = {alpha:g}", fontsize=10)
        ax.grid(alpha=0.3, which="major")
    if legend:
        axes[0].legend(loc="upper left", bbox_to_anchor=(0.0, 0.82), fontsize=8)
    axes[0].set_ylabel(ylabel or f"γ at L = {int(table.context.iloc[0])}")
    return drawn


# -- 7. devices side by side -----------------------------------------------------------------
def plot_speedup_vs_batch_devices(table: pd.DataFrame, *, axes: Any = None) -> dict[str, Any]:
    """Figure 3 per device, side by side, with where verification turns compute-bound.

    ``table`` is :func:`specsim.speculation.sweep.sweep` over several hardware profiles.
    The dotted line is the first batch size at which the alpha = 0.8, gamma = 4
    verification pass is compute-bound; the speedup falls from there, so the
    crossover moves right as the device's ridge grows.
    """
    names = list(dict.fromkeys(table.hardware))
    alpha, gamma = 0.8, 4
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4.4), sharey=True)
    panels = {}
    for ax, name in zip(np.atleast_1d(axes), names):
        hw = load_hardware(name)
        rows = table[table.hardware == name]
        row = rows.iloc[0]
        drawn = plot_speedup_vs_batch(
            rows, ax=ax, marks=(), title=f"{name}: ridge {hw.ridge_flop_per_byte:.0f} FLOP/byte"
        )
        curve = rows[np.isclose(rows.alpha, alpha) & (rows.gamma == gamma)]
        compute = curve[curve.bound_verify == "compute"].batch
        if len(compute):
            ax.axvline(compute.min(), color="gray", ls=":", lw=1.2)
            # At the top of the panel, clear of the curves, on a white box.
            ax.annotate(
                f"γ={gamma} verification\ncompute-bound\nfrom b={compute.min()}",
                (compute.min(), 0.97),
                xycoords=("data", "axes fraction"),
                textcoords="offset points",
                xytext=(4, 0),
                ha="left",
                va="top",
                fontsize=8,
                color="dimgray",
                bbox={"fc": "white", "ec": "none", "alpha": 0.9, "pad": 1},
            )
        panels[name] = drawn
    np.atleast_1d(axes)[0].figure.suptitle(
        f"The same deployment on three devices: {row.target} target, {row.draft} draft, L = {int(row.context)}, "
        "article efficiencies",
        fontsize=11,
    )
    np.atleast_1d(axes)[0].set_ylabel("speedup over plain decoding (×)")
    for ax in np.atleast_1d(axes)[1:]:
        ax.set_ylabel("")
    return {"axes": axes, "panels": panels}


# -- 8. throughput against latency ---------------------------------------------------------------
def plot_throughput_vs_latency(
    tables: dict[str, pd.DataFrame], *, ax: Any = None, marks: tuple[int, ...] = (1, 8, 32, 64, 128, 256)
) -> dict[str, Any]:
    """Device throughput against per-token latency, one curve per policy, batch size along each curve.

    ``tables`` maps a label to :func:`specsim.serving.capacity.throughput_table`
    output; the label "plain decoding" draws the no-speculation columns and
    stops at the largest batch that fits without the draft, every other label
    draws the speculative columns and stops where the draft no longer fits.
    Returns ``{"lines": {label: Line2D}, "ends": {label: last batch drawn}}``.
    """
    ax = _axes(ax)
    lines, ends = {}, {}
    styles = [("--", 2.0), ("-", 3.2), (":", 2.0), ("-.", 1.5)]
    for i, (color, (label, table)) in enumerate(zip(_COLORS, tables.items())):
        plain = label == "plain decoding"
        rows = table[table.fits_without_draft if plain else table.fits_with_draft]
        x = (rows.latency_plain_s if plain else rows.latency_spec_s) * 1e3
        y = rows.tokens_per_s_plain if plain else rows.tokens_per_s_spec
        ls, lw = styles[i % len(styles)]
        # The memory limit goes in the legend: as a label at the end of the curve it collided with the others.
        (line,) = ax.plot(
            x,
            y,
            color=color,
            lw=lw,
            ls=ls,
            label=f"{label}: memory full at b={int(rows.batch.max())}, {y.iloc[-1]:,.0f} tok/s",
        )
        lines[label], ends[label] = line, int(rows.batch.max())
        for b in marks:
            hit = rows.batch == b
            if hit.any():
                ax.plot(x[hit], y[hit], "o", color=color, ms=4)
                if plain or color == _COLORS[1]:
                    ax.annotate(
                        f"b={b}",
                        (x[hit].item(), y[hit].item()),
                        textcoords="offset points",
                        xytext=(5, -11) if plain else (-6, 6),
                        ha="left" if plain else "right",
                        fontsize=7.5,
                        color=color,
                    )
        ax.plot(x.iloc[-1], y.iloc[-1], "s", color=color, ms=8, markeredgecolor="black")
    ax.set_xscale("log")
    ax.set_yscale("log")
    left = min(line.get_xdata().min() for line in lines.values())
    ax.set_xlim(left=left * 0.8)  # room for the b=1 labels, which sit left of their points
    for axis in (ax.xaxis, ax.yaxis):
        _plain_log(axis)
    ax.set_xlabel("latency per generated token of one sequence (ms)")
    ax.set_ylabel("device throughput (tokens/s)")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        fontsize=8.5,
        title="squares: largest batch that fits",
        title_fontsize=8,
    )
    ax.grid(alpha=0.3, which="both")
    return {"ax": ax, "lines": lines, "ends": ends}


# -- calibration residuals -------------------------------------------------------------------
def plot_residuals(result: Any, *, fig: Any = None) -> Any:
    """Relative error against batch size, before and after calibration, training and held-out points.

    ``result`` is a :class:`specsim.calibration.profile.CalibrationResult`.

    Draws on ``fig`` (e.g. ``plt.figure(figsize=(12, 4.6))`` in a notebook) or
    on a new pyplot-free Figure, and returns it.
    """
    if fig is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(12, 4.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    data = result.data
    markers = dict(zip(sorted(data.model_name.unique()), "osD^v<>"))
    for ax, which, title in (
        (axes[0], "before", f"before: {result.base.name} as shipped"),
        (axes[1], "after", f"after: {result.profile.name}"),
    ):
        for (model, held), rows in data.groupby(["model_name", "holdout"]):
            err = 100.0 * (rows[f"{which}_s"] / rows["measured_s"] - 1.0)
            ax.scatter(
                rows["batch"] * (1.0 + 0.04 * rows["tokens_per_seq"]),
                err,
                marker=markers[model],
                facecolors="none" if not held else None,
                edgecolors="#1b6ca8" if not held else None,
                c=None if not held else "#d1495b",
                s=22,
                label=f"{model}, {'held out' if held else 'fitted'}",
            )
        e = np.abs(result.errors(which, True))
        ax.axhline(0.0, color="black", lw=1)
        _plain_log2(ax)
        ax.set_xlabel("batch size (points spread by tokens per sequence)")
        ax.set_title(f"{title}\nheld-out MAPE {e.mean():.1%}, worst {e.max():.1%}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("model error: predicted / measured - 1 (%)")
    axes[1].legend(fontsize=7.5, loc="best")
    return fig


def plot_verify_cost(ratios: pd.DataFrame, speedups: pd.DataFrame, *, axes: Any = None) -> dict[str, Any]:
    """Left: t_V / t_T against batch per device and source; right: speedup against batch per draft and source.

    ``ratios`` has columns batch, device, source, ratio; ``speedups`` has batch,
    draft, source, speedup.  Measured-kernel and default lines are solid, the
    whole-pass roofline dashed.
    """
    left, right = axes
    lines: dict[str, Any] = {"ratio": _lines_by_source(left, ratios, "device", "ratio", {})}
    _batch_panel(
        left,
        "t_V / t_T  (verify 4 tokens per sequence / decode 1)",
        "Verification vs decode, Llama-3.1-8B, L = 400",
        speedup=False,
    )
    lines["speedup"] = _lines_by_source(right, speedups, "draft", "speedup", {}, offset=3)
    _batch_panel(right, "speedup", "Llama-3.1-8B on H100, α = 0.8, γ = 3, L = 400, step-time sources alone (no engine)")
    return lines


def plot_moe_speculation(
    ratios: pd.DataFrame,
    speedups: pd.DataFrame,
    *,
    axes: Any = None,
    title: str = "Qwen3-0.6B draft, α = 0.8, L = 1128, H100, vLLM preset",
) -> dict[str, Any]:
    """Left: t_V / t_T against batch for an MoE and a dense target; right: best speedup against batch, peaks marked.

    ``ratios``: batch, model, source, ratio.  ``speedups``: batch, model, source, speedup, gamma.
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    left, right = axes
    colours: dict = {}
    lines: dict[str, Any] = {
        "ratio": _lines_by_source(left, ratios, "model", "ratio", colours),
        "speedup": {},
        "peaks": {},
    }
    _batch_panel(
        left,
        "t_V / t_T  (verify 4 tokens per sequence / decode 1)",
        "Verification vs decode on H100, L = 1128",
        speedup=False,
    )
    for (model, source), rows in speedups.groupby(["model", "source"], sort=False):
        # Each line with its peak star; the peak is written in the legend, where it covers nothing.
        colour = colours.setdefault(model, f"C{len(colours)}")
        top = rows.loc[rows.speedup.idxmax()]
        (line,) = right.plot(
            rows.batch,
            rows.speedup,
            marker="o",
            ms=3,
            color=colour,
            ls="--" if source == "roofline" else "-",
            label=f"{model}, {source}: peak {top.speedup:.2f}× at b = {int(top.batch)}, γ = {int(top.gamma)}",
        )
        lines["speedup"][(model, source)] = line
        right.plot([top.batch], [top.speedup], marker="*", ms=13, color=colour, ls="none")
        lines["peaks"][(model, source)] = (int(top.batch), float(top.speedup))
    _batch_panel(right, "speedup at the optimal γ (star: peak)", title)
    right.set_ylim(top=float(speedups.speedup.max()) * 1.25)  # room for the legend above the curves
    return lines


def plot_drafters(speedups: pd.DataFrame, *, axes: Any = None) -> dict[str, Any]:
    """Best speedup against batch per drafter kind; one panel per target.

    ``speedups``: panel, drafter, batch, speedup.
    """
    panels = list(dict.fromkeys(speedups.panel))
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, len(panels), figsize=(14, 5.2))
    lines: dict[str, Any] = {}
    styles = {
        "draft model": ("C0", "-"),
        "EAGLE-3 chain": ("C1", "-"),
        "EAGLE-3 tree": ("C1", "--"),
        "n-gram": ("C2", "-"),
        "MTP": ("C3", "-"),
        "DFlash": ("C5", "-"),
        "DSpark": ("C6", "-"),
        "suffix": ("C7", "-"),
    }
    for ax, panel in zip(np.atleast_1d(axes), panels):
        rows = speedups[speedups.panel == panel]
        for drafter, group in rows.groupby("drafter", sort=False):
            colour, ls = next((v for k, v in styles.items() if drafter.startswith(k)), ("C4", "-"))
            (line,) = ax.plot(group.batch, group.speedup, marker="o", ms=3, color=colour, ls=ls, label=drafter)
            lines[(panel, drafter)] = line
        _batch_panel(ax, "speedup at the best gamma (or tree)", panel)
    return lines


#: Colours of a round's parts (specsim.speculation.deployment.RoundTime.parts), the engine's host work in the warm ones.
_PART_COLORS = {
    "draft steps": "#1b6ca8",
    "draft-step collectives": "#7fb3d5",
    "verification": "#6c757d",
    "draft extend": "#00798c",
    "drafter host time": "#2e933c",
    "engine per iteration": "#edae49",
    "verification collectives": "#a7a9ac",
    "draft-extend collectives": "#66b2be",
    "engine host time": "#d1495b",
}


def plot_round_anatomy(rows: list[dict], *, ax: Any = None, title: str | None = None) -> dict[str, Any]:
    """One stacked bar per batch size: a round's parts in units of that batch's plain decode step, against the
    tokens the round yields (plain decoding needs one step per token: speculation pays while the bar is below the
    line).  ``rows``: :func:`specsim.answers.anatomy.round_anatomy` rows.  Host work hidden behind the passes is hatched
    above the bar."""
    ax = _axes(ax)
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    drawn: dict[str, Any] = {}
    names = list(dict.fromkeys(n for r in rows for n in r["parts_s"]))
    for name in names:
        height = np.array([r["parts_s"][name] / r["t_target_s"] for r in rows])
        if not np.any(height > 1e-6):
            continue
        drawn[name] = ax.bar(x, height, bottom=bottom, color=_PART_COLORS.get(name, "C4"), width=0.7, label=name)
        bottom += height
    hidden = np.array([r["hidden_host_s"] / r["t_target_s"] for r in rows])
    if np.any(hidden > 1e-6):
        # It runs while the passes do: drawn over the passes, below the host time the round still waits for.
        passes_top = bottom - np.array([r["parts_s"].get("engine host time", 0.0) / r["t_target_s"] for r in rows])
        drawn["hidden engine host time"] = ax.bar(
            x,
            hidden,
            bottom=passes_top - hidden,
            width=0.7,
            fill=False,
            hatch="//",
            edgecolor="#d1495b",
            lw=0,
            label="engine host time hidden behind the passes",
        )
    (drawn["tokens per round"],) = ax.plot(
        x,
        [r["tokens_per_round"] for r in rows],
        color="black",
        marker="D",
        ms=4,
        label="tokens per round (plain decoding needs this many steps)",
    )
    ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['batch']}\nγ={r['gamma']}" for r in rows])
    ax.set_xlabel("batch size b (γ per round)")
    ax.set_ylabel("time per round, in plain decode steps of that batch")
    # Headroom above the tallest bar and the tokens line, so that the legend covers neither.
    ax.set_ylim(0.0, 1.45 * max(float(bottom.max()), max(r["tokens_per_round"] for r in rows)))
    ax.legend(fontsize=7, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    drawn["bars_top"] = bottom
    return drawn


def plot_serve_sweep(
    frame: pd.DataFrame, *, axes: Any = None, title: str | None = None, slo_tpot_ms: float | None = None
) -> dict[str, Any]:
    """Left: TPOT p50 and p99 against request rate (or the users of closed loops, where the sweep was of those),
    speculation off and on, and the TPOT objective when one is given; right: output tokens/s.

    ``frame`` is :func:`specsim.serving.simulator.serve_sweep`.  Where it holds several runs per rate (``runs``, and a
    ``<column>_ci`` half-width beside each figure), each line is the mean over the runs and a band around it the 95%
    confidence interval of that mean; the legend says how many runs.  Returns the lines by ``(arm, figure)`` and the
    bands by the same keys under ``"bands"``."""
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    from specsim.serving.simulator import sweep_load

    left, right = axes
    lines: dict[str, Any] = {"bands": {}}
    load, unit, axis = sweep_load(frame)

    def draw(ax, key, column, scale, colour, ls, label):
        """The mean (or the one run) of ``column`` times ``scale``, and its interval where the frame has one."""
        y = frame[column] * scale
        (lines[key],) = ax.plot(frame[load], y, marker="o", ms=3, color=colour, ls=ls, label=label)
        if f"{column}_ci" in frame:
            half = frame[f"{column}_ci"] * scale
            lines["bands"][key] = ax.fill_between(frame[load], y - half, y + half, color=colour, alpha=0.2, lw=0)

    for name, colour, label in (("off", "C0", "speculation off"), ("on", "C1", "speculation on")):
        for q, ls in (("p50", "-"), ("p99", ":")):
            draw(left, (name, q), f"{name}_tpot_{q}_s", 1e3, colour, ls, f"{label}, TPOT {q}")
        draw(right, (name, "tokens_per_s"), f"{name}_tokens_per_s", 1, colour, "-", label)
    if slo_tpot_ms is not None:
        lines["slo"] = left.axhline(
            slo_tpot_ms, color="C3", lw=1.0, ls="-.", label=f"TPOT objective {slo_tpot_ms:g} ms"
        )
    worse = frame[frame.on_tpot_p50_s >= frame.off_tpot_p50_s]
    if not worse.empty:
        at = float(worse[load].min())
        for ax in (left, right):
            ax.axvline(at, color="0.5", lw=0.8, ls="--")
        left.annotate(
            f"speculation stops lowering TPOT p50 at {at:g} {unit}",
            (at, left.get_ylim()[1]),
            textcoords="offset points",
            xytext=(-6, -14),
            ha="right",
            fontsize=8,
        )
        lines["stops_at"] = at
    for ax in (left, right):
        _plain_log2(ax)
        ax.set_xlabel(axis)
        ax.grid(alpha=0.3, which="both")
    left.set_yscale("log")
    _plain_log(left.yaxis)
    left.set_ylabel("time per output token, ms")
    right.set_ylabel("output tokens/s")
    for ax in (left, right):
        handles, labels = ax.get_legend_handles_labels()
        if lines["bands"]:
            from matplotlib.patches import Patch

            runs = int(frame["runs"].iloc[0])
            handles.append(Patch(color="0.5", alpha=0.35, lw=0))
            labels.append(f"mean of {runs} runs; band: 95% interval of the mean")
        ax.legend(handles, labels, fontsize=8)
    if title:  # over both panels: a title this long does not fit over one
        left.figure.suptitle(title, fontsize=10)
    left.set_title("time per output token", fontsize=10)
    right.set_title("throughput", fontsize=10)
    return lines


def plot_watch(rows: list[dict], *, axes: Any = None, title: str | None = None) -> dict[str, Any]:
    """A watched period (``specsim watch --plot``; rows as :meth:`specsim.watch.watcher.Row.to_dict` gives them): top,
    the acceptance length per window with its 95% interval and the break-even at each window's load, with the band
    between the acceptance lengths where the model's speedup is 1 less and 1 plus its error (an interval inside it is
    too close to call), windows where speculation costs more than it saves shaded, the start of a flagged drop marked;
    middle, the load per replica (requests/s, and running requests as the engine shows them and as the model expects);
    bottom, the model's speedup, with the band of its error about 1."""
    import matplotlib.dates as mdates

    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True)
    top, middle, bottom = axes
    judged = [r for r in rows if r["model"] is not None]
    when = np.array([np.datetime64(int(r["window"]["end_s"] * 1e3), "ms") for r in judged])
    start = np.array([np.datetime64(int(r["window"]["start_s"] * 1e3), "ms") for r in judged])
    length = np.array([r["window"]["acceptance_length"] for r in judged], dtype=float)
    low = np.array([(r["model"]["interval"] or [np.nan, np.nan])[0] for r in judged], dtype=float)
    high = np.array([(r["model"]["interval"] or [np.nan, np.nan])[1] for r in judged], dtype=float)
    be = np.array(
        [np.nan if r["model"]["break_even_length"] is None else r["model"]["break_even_length"] for r in judged]
    )
    drawn: dict[str, Any] = {}
    # SGLang before 0.5.13 gives a sampled gauge, no counters (the basis says which: MetricNames.acceptance_basis)
    what = "the engine's gauge, sampled" if any("gauge" in r["window"]["basis"] for r in judged) else "engine counters"
    (drawn["length"],) = top.plot(when, length, color=_COLORS[0], lw=1.4, label=f"acceptance length ({what})")
    drawn["interval"] = top.fill_between(when, low, high, color=_COLORS[0], alpha=0.2, lw=0, label="95% interval")
    # where no window has one (no acceptance pays at any load shown) the legend says so, not a line that is not drawn
    none = "" if np.isfinite(be).any() or not judged else ": none, no acceptance pays at these loads"
    (drawn["break_even"],) = top.plot(
        when, be, color=_COLORS[1], lw=1.4, ls="--", label=f"break-even at the window's load (model){none}"
    )
    from specsim.answers.verdict import ModelError

    error = judged[0]["model"]["error"] if judged else 0.0  # one watch, one model: one error for every window
    shown = ModelError(error, "", "").shown
    # where a crossing is not found ("never": no acceptance reaches it, "always": any does) the band runs to the axis
    costs_below = np.array([_length_or(r["model"], "costs_below", np.nan) for r in judged], dtype=float)
    pays_above = np.array([_length_or(r["model"], "pays_above", np.nan) for r in judged], dtype=float)
    drawn["too_close"] = top.fill_between(
        when,
        costs_below,
        pays_above,
        color="black",
        alpha=0.08,
        lw=0,
        label=f"too close to call: the model's speedup within {shown} of 1",
    )
    costs = [k for k, r in enumerate(judged) if r["model"]["verdict"] == "costs"]
    for k in costs:  # the top legend names the shading once
        for ax in axes:
            label = "window's verdict: COSTS MORE" if k == costs[0] and ax is top else None
            ax.axvspan(start[k], when[k], color=_COLORS[1], alpha=0.08, lw=0, label=label)
    drawn["costs_windows"] = len(costs)
    drops = [v for r in rows for v in r["started"] if v["kind"] == "dropped"]
    for v in drops:
        at = np.datetime64(int(v["since_s"] * 1e3), "ms")
        top.axvline(at, color="black", lw=1.0, ls=":")
        top.annotate(
            "acceptance dropped",
            (at, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            fontsize=8,
        )
    drawn["drops"] = len(drops)
    top.set_ylabel("tokens per verification")
    top.legend(fontsize=8, loc="center left")
    rate = np.array([r["window"]["requests_per_s"] for r in judged], dtype=float)
    running = np.array(
        [np.nan if r["window"]["running"] is None else r["window"]["running"] for r in judged], dtype=float
    )
    expected = np.array([r["model"]["running_model"] for r in judged], dtype=float)
    (drawn["rate"],) = middle.plot(when, rate, color=_COLORS[2], lw=1.4, label="requests/s per replica")
    middle.set_ylabel("requests/s")
    twin = middle.twinx()
    (drawn["running"],) = twin.plot(when, running, color=_COLORS[4], lw=1.0, label="running (engine)")
    (drawn["running_model"],) = twin.plot(when, expected, color=_COLORS[4], lw=1.0, ls="--", label="running (model)")
    twin.set_ylabel("requests running")
    # from 0: autoscaled, a steady 3.9-4.2 requests/s filled the panel as if the load swung fivefold
    middle.set_ylim(bottom=0.0)
    twin.set_ylim(bottom=0.0)
    handles = [drawn["rate"], drawn["running"], drawn["running_model"]]
    middle.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="upper left")
    speedup = np.array([r["model"]["speedup"] for r in judged], dtype=float)
    (drawn["speedup"],) = bottom.plot(
        when, speedup, color=_COLORS[5], lw=1.4, label="model speedup (TPOT, plain / speculating)"
    )
    bottom.axhline(1.0, color="black", lw=0.8, ls="--")
    drawn["error_band"] = bottom.axhspan(
        1.0 - error, 1.0 + error, color="black", alpha=0.08, lw=0, label=f"within the model's error ({shown})"
    )
    bottom.set_ylabel("speedup (x)")
    bottom.legend(fontsize=8, loc="lower left")
    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    bottom.set_xlabel("time (UTC)")
    for ax in axes:
        ax.grid(alpha=0.3)
    if title:
        top.set_title(title, fontsize=10)
    return drawn


def _length_or(model: dict, key: str, missing: float) -> float:
    """A :meth:`specsim.watch.judge.Judgement.to_dict` threshold's acceptance length, ``missing`` where not found."""
    length = model.get(f"{key}_length")
    return missing if length is None else float(length)


def save_watch(rows: list[dict], path: str | Path, title: str | None = None) -> Path:
    """Draw :func:`plot_watch` on its own figure and write it atomically (PNG or SVG, by the file's suffix)."""
    if Path(path).suffix.lstrip(".").lower() not in ("png", "svg"):
        raise ValueError(f"{given_as('path', '--plot')} {str(path)!r}: write a .png or a .svg file")
    return _save(path, (11, 8.5), 130, lambda fig: plot_watch(rows, axes=fig.subplots(3, 1, sharex=True), title=title))


def save_round_anatomy(rows: list[dict], path: str | Path, title: str | None = None) -> Path:
    """Draw :func:`plot_round_anatomy` on its own figure and write it atomically (PNG or SVG, by the file's suffix, as
    serve-sweep's and watch's figures)."""
    return _save(path, (9, 5.2), 150, lambda fig: plot_round_anatomy(rows, ax=fig.subplots(), title=title), {})


def save_serve_sweep(
    frame: pd.DataFrame, path: str | Path, title: str | None = None, slo_tpot_ms: float | None = None
) -> Path:
    """Draw :func:`plot_serve_sweep` and write it atomically (PNG or SVG)."""
    return _save(
        path,
        (14, 5.2),
        150,
        lambda fig: plot_serve_sweep(frame, axes=fig.subplots(1, 2), title=title, slo_tpot_ms=slo_tpot_ms),
    )


def _save(path: str | Path, size: tuple, dpi: int, draw: Any, rc: dict | None = None) -> Path:
    """Draw a figure of ``size`` inches (``draw(fig)``) and write it atomically, PNG or SVG by the file's suffix: the one
    way explain's, serve-sweep's and watch's figures are written (SVG with a fixed hash salt and no date, so that a
    figure drawn twice is the same file; ``rc`` the text's size, 10 points unless given)."""
    import matplotlib
    from matplotlib.figure import Figure

    fmt = Path(path).suffix.lstrip(".").lower()
    with matplotlib.rc_context({"svg.hashsalt": "specsim", **({"font.size": 10} if rc is None else rc)}):
        fig = Figure(figsize=size, layout="constrained")
        draw(fig)
        freeze_layout(fig)
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata={} if fmt == "png" else {"Date": None})
    return atomic_write_bytes(Path(path), buffer.getvalue())
