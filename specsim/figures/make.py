"""The committed figures: which data each one draws, and one function that regenerates them all.

The drawing is :mod:`specsim.figures.plots`; the data come from the library (sweeps, the deployment, the serving
simulation).  :func:`make_all` regenerates every file in ``figures/`` with
fixed names, as PNG (150 dpi) and SVG, byte-for-byte reproducible from the
code (no timestamps, a fixed SVG hash salt).

Figures
    speedup-vs-gamma          article Figure 2: closed form at c = 0.05
    speedup-vs-batch          article Figure 3: 8B target, 1B draft, H100
    roofline                  attainable FLOP/s and where each pass sits
    step-times                t_T, t_D, t_V with compute, memory and overhead parts
    speedup-heatmaps          alpha x gamma at batch 1, batch x gamma at alpha 0.8
    optimal-gamma-vs-batch    the gamma schedule a serving engine would use, one panel per alpha, at the default source
    speedup-vs-batch-devices  Figure 3 on H100, H200 and A100
    throughput-vs-latency     device throughput against per-token latency, up to full memory
    verification-cost         t_V / t_T measured against the roofline; what it does to the speedup
    moe-speculation           a mixture of experts against a dense model of its size
    drafters                  draft model, EAGLE-3 chain and tree, n-gram, MTP against batch
    serve-sweep               TPOT and throughput against request rate, speculation off and on: 10 runs, 95% intervals
    round-anatomy             where a round's time goes against batch, SGLang spec v1 against spec v2
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from specsim.article.reproduce import ARTICLE_CONTEXT_TOKENS, article_deployment
from specsim.core.defaults import DEFAULT_ALPHA, DEFAULT_CONTEXT_TOKENS, DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET
from specsim.core.files import atomic_write_many, make_folder
from specsim.core.limits import UnknownName
from specsim.engines import DEFAULT_ENGINE, ENGINES
from specsim.figures.layout import freeze_layout
from specsim.figures.plots import (
    _BATCH_AXIS,
    plot_drafters,
    plot_moe_speculation,
    plot_optimal_gamma_vs_batch,
    plot_roofline,
    plot_round_anatomy,
    plot_serve_sweep,
    plot_speedup_heatmap,
    plot_speedup_vs_batch,
    plot_speedup_vs_batch_devices,
    plot_speedup_vs_gamma,
    plot_step_times,
    plot_throughput_vs_latency,
    plot_verify_cost,
)
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, optimal_tree, speedup
from specsim.speculation.sweep import closed_form_table, pass_table, roofline_table, sweep
from specsim.timing import DEFAULT_TIMING, make_source

__all__ = ["FIGURES", "FigureSpec", "make_all", "render"]


# -- the committed figures ------------------------------------------------------------------------
@dataclass(frozen=True)
class FigureSpec:
    """One committed figure: its file stem, size and how to draw it."""

    name: str
    size: tuple[float, float]
    draw: Callable[[Any], dict[str, Any]]
    panels: int = 1


# The batch sizes the verification, MoE and drafter figures sweep.
_FIGURE_BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], float)
_ROUND_BATCHES = (1, 2, 4, 8, 16, 32, 64)


#: The devices the device-comparison figures put side by side.
_DEVICES = (DEFAULT_HARDWARE, "h200", "a100-sxm-80gb")
#: The figures drawn on the bare roofline with no engine time, as their titles say.
_ROOFLINE = {"timing": "roofline", "engine": "none"}
# How those figures name a step-time source in their legends.
_SOURCE_LABEL = {"hybrid": "default (hybrid)", "roofline": "roofline"}


def _verify_ratio(hardware: Any, model: Any, batch: np.ndarray, context: float, source: str) -> np.ndarray:
    """t(b, 4, L) / t(b, 1, L) on the GPU, from the measured kernels or the roofline."""
    dep = Deployment(hardware, model, source=make_source("roofline" if source == "roofline" else "kernels", hardware))
    return dep.gpu_pass(model, batch, 4, context).total_s / dep.gpu_pass(model, batch, 1, context).total_s


def _ratio_rows(hardware: Any, model: Any, context: float, /, **columns: Any) -> list[dict[str, Any]]:
    """Rows of t_V / t_T per batch from measured kernels and from the roofline, tagged with ``columns``."""
    rows = []
    for source in ("measured kernels", "roofline"):
        r = _verify_ratio(hardware, model, _FIGURE_BATCHES, context, source)
        rows += [{"batch": b, **columns, "source": source, "ratio": v} for b, v in zip(_FIGURE_BATCHES, r)]
    return rows


def _fig_speedup_vs_gamma(fig: Any) -> dict[str, Any]:
    table = closed_form_table(alpha=[0.5, 0.6, 0.7, 0.8, 0.9], gamma=range(0, 17), cost_ratio=0.05)
    return plot_speedup_vs_gamma(table, ax=fig.subplots())


def _article_sweep(hardware: Any = None) -> pd.DataFrame:
    dep = article_deployment()
    return sweep(
        alpha=[0.6, 0.8],
        gamma=[4, 8],
        batch=_BATCH_AXIS,
        context=ARTICLE_CONTEXT_TOKENS,
        hardware=hardware if hardware is not None else dep.hardware,
        pairs=(dep.target, dep.draft),
        **_ROOFLINE,
    )


def _fig_speedup_vs_batch(fig: Any) -> dict[str, Any]:
    return plot_speedup_vs_batch(
        _article_sweep(),
        ax=fig.subplots(),
        title="Article Figure 3: 8B target, 1B draft, H100 SXM, L = 1128 (the article's roofline, no engine)",
    )


def _fig_roofline(fig: Any) -> dict[str, Any]:
    dep = Deployment.build(**_ROOFLINE)
    passes = pass_table(dep, batch=[1, 4, 16, 64, 128, 256, 512], gamma=4, context=DEFAULT_CONTEXT_TOKENS)
    roof = roofline_table(dep.hardware, np.geomspace(0.5, 5000, 400))
    return plot_roofline(roof, passes, dep.hardware, ax=fig.subplots())


def _fig_step_times(fig: Any) -> dict[str, Any]:
    dep = Deployment.build(**_ROOFLINE)
    return plot_step_times(
        pass_table(dep, batch=_BATCH_AXIS, gamma=4, context=DEFAULT_CONTEXT_TOKENS),
        axes=fig.subplots(1, 3, sharey=True),
    )


def _fig_heatmaps(fig: Any) -> dict[str, Any]:
    from specsim.serving.capacity import capacity

    dep = Deployment.build(**_ROOFLINE)
    left, right = fig.subplots(1, 2)
    by_alpha = sweep(
        alpha=np.round(np.arange(0.30, 1.0001, 0.025), 3),
        gamma=range(0, 17),
        batch=1,
        hardware=dep.hardware,
        pairs=(dep.target, dep.draft),
        **_ROOFLINE,
    )
    # Only the batches whose KV fits beside both models' weights at this context.
    fits = capacity(dep, DEFAULT_CONTEXT_TOKENS).max_batch_with_draft
    by_batch = sweep(
        alpha=0.8,
        gamma=range(0, 17),
        batch=[2**k for k in range(0, 11) if 2**k <= fits],
        hardware=dep.hardware,
        pairs=(dep.target, dep.draft),
        **_ROOFLINE,
    )
    limits = (min(by_alpha.speedup.min(), by_batch.speedup.min()), max(by_alpha.speedup.max(), by_batch.speedup.max()))
    where = (
        f"{dep.target.name} + {dep.draft.name}, {dep.hardware.name}, L = {DEFAULT_CONTEXT_TOKENS}, roofline (no engine)"
    )
    a = plot_speedup_heatmap(by_alpha, "alpha", ax=left, title=f"batch 1: {where}", limits=limits)
    b = plot_speedup_heatmap(
        by_batch,
        "batch",
        ax=right,
        limits=limits,
        title=f"α = 0.8: the best γ shrinks as the batch grows (batches that fit: up to {fits})",
    )
    return {"alpha": a, "batch": b, "fits": fits}


def _gamma_rows(dep: Deployment, alpha: float, context: int, top: int) -> pd.DataFrame:
    """Per batch 1..top: the schedule specsim schedule writes (``gamma``) and the exact best gamma (``best_gamma``)."""
    from specsim.speculation.schedule import gamma_schedule

    ranges = gamma_schedule(dep, alpha, top, context)
    batch = np.arange(1, top + 1)
    return pd.DataFrame(
        {
            "alpha": alpha,
            "context": context,
            "batch": batch,
            "gamma": np.repeat([r.gamma for r in ranges], [r.end_batch - r.start_batch + 1 for r in ranges]),
            "best_gamma": optimal_gamma(dep, alpha, batch, context).gamma,
            "timing": dep.source.name,
            "engine": dep.engine.key,
        }
    )


def _fig_optimal_gamma(fig: Any) -> dict[str, Any]:
    from specsim.speculation.schedule import DEFAULT_SCHEDULE_RTOL

    dep = Deployment.build()  # the default source and engine preset, as every command
    top = int(_BATCH_AXIS.max())
    contexts = (128, DEFAULT_CONTEXT_TOKENS)
    alphas = (0.5, 0.6, 0.7, 0.8, 0.9)
    grid = fig.subplots(len(contexts), len(alphas), sharex=True, sharey=True)
    out = {}
    for row, context in zip(grid, contexts):
        table = pd.concat([_gamma_rows(dep, a, context, top) for a in alphas], ignore_index=True)
        out[context] = plot_optimal_gamma_vs_batch(table, axes=row, legend=context == contexts[0])
        out[context]["table"] = table
    for ax in grid[0]:
        ax.set_xlabel("")
    fig.suptitle(
        f"Optimal γ against batch: {dep.target.name} + {dep.draft.name} on {dep.hardware.name}, default step-time "
        f"source ({dep.source.name}), {dep.engine.key} preset\nbold: the schedule specsim schedule writes (γ never "
        f"rises with batch; the smaller γ where within {DEFAULT_SCHEDULE_RTOL:.0%} of the best); thin: the best γ at "
        "each batch",
        fontsize=10,
    )
    return out


def _fig_devices(fig: Any) -> dict[str, Any]:
    table = _article_sweep(hardware=list(_DEVICES))
    return plot_speedup_vs_batch_devices(table, axes=fig.subplots(1, 3, sharey=True))


def _fig_throughput(fig: Any) -> dict[str, Any]:
    from specsim.serving.capacity import capacity, throughput_table

    dep = Deployment.build(**_ROOFLINE)
    left, right = fig.subplots(1, 2)
    out = {}
    for ax, context in ((left, 512), (right, 4096)):
        top = capacity(dep, context).max_batch_without_draft
        batch = np.arange(1, top + 1)
        tables = {
            "plain decoding": throughput_table(dep, DEFAULT_ALPHA, batch, context, gamma=0),
            "speculation, optimal γ per batch": throughput_table(dep, DEFAULT_ALPHA, batch, context),
            "speculation, γ = 4 at every batch": throughput_table(dep, DEFAULT_ALPHA, batch, context, gamma=4),
        }
        out[context] = plot_throughput_vs_latency(tables, ax=ax)
        ax.set_title(f"every sequence at L = {context}", fontsize=10)
    fig.suptitle(
        f"Throughput against latency: {dep.target.name} + {dep.draft.name} on {dep.hardware.name}, α = 0.8, "
        "roofline (no engine)",
        fontsize=11,
    )
    return out


def _fig_verify_cost(fig: Any) -> dict[str, Any]:
    import dataclasses

    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model

    batch = _FIGURE_BATCHES
    target = get_model("llama-3.1-8b")
    ratios = []
    for device in _DEVICES:
        ratios += _ratio_rows(load_hardware(device), target, 400, device=device)
    one_layer = dataclasses.replace(target, n_layers=1, name="1-layer draft, 8B width")
    speedups = []
    for draft in (one_layer, get_model("llama-3.2-1b")):
        for source in ("hybrid", "roofline"):
            # The sources alone, no engine: this panel is about what verification costs on the GPU.
            dep = Deployment.build(DEFAULT_HARDWARE, timing=source, engine="none").with_draft(draft)
            s = speedup(dep, DEFAULT_ALPHA, 3, batch, 400)
            speedups += [
                {"batch": b, "draft": draft.name, "source": _SOURCE_LABEL[source], "speedup": v}
                for b, v in zip(batch, s)
            ]
    return plot_verify_cost(pd.DataFrame(ratios), pd.DataFrame(speedups), axes=fig.subplots(1, 2))


def _fig_moe(fig: Any) -> dict[str, Any]:
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model

    batch = _FIGURE_BATCHES
    hw = load_hardware(DEFAULT_HARDWARE)
    labels = {"qwen3-30b-a3b": "Qwen3-30B-A3B (MoE 8/128)", "qwen3-32b": "Qwen3-32B (dense)"}
    ratios, speedups = [], []
    for name, label in labels.items():
        ratios += _ratio_rows(hw, get_model(name), DEFAULT_CONTEXT_TOKENS, model=label)
        for source in ("hybrid", "roofline"):
            best = optimal_gamma(
                Deployment.build(DEFAULT_HARDWARE, name, "qwen3-0.6b", timing=source),
                DEFAULT_ALPHA,
                batch,
                DEFAULT_CONTEXT_TOKENS,
            )
            speedups += [
                {"batch": b, "model": label, "source": _SOURCE_LABEL[source], "speedup": s, "gamma": g}
                for b, s, g in zip(batch, best.speedup, best.gamma)
            ]
    return plot_moe_speculation(
        pd.DataFrame(ratios),
        pd.DataFrame(speedups),
        axes=fig.subplots(1, 2),
        title=f"Qwen3-0.6B draft, α = 0.8, L = {DEFAULT_CONTEXT_TOKENS}, H100, {ENGINES[DEFAULT_ENGINE].key} preset",
    )


def _fig_drafters(fig: Any) -> dict[str, Any]:
    from specsim.speculation.acceptance import TreeSpec
    from specsim.speculation.drafters import DRAFTERS, DraftModel, published_acceptance

    published = published_acceptance()
    batch = _FIGURE_BATCHES
    rows = []
    left = f"Llama-3.1-8B on H100, {ENGINES[DEFAULT_ENGINE].key} preset, L = 1128, published acceptance per drafter"
    # Each drafter's legend names the acceptance it was drawn at and where that figure comes from.
    where = {"draft_model": DraftModel.published_short} | {kind: cls.published_short for kind, cls in DRAFTERS.items()}

    def named(kind: str, name: str) -> str:
        acc = published[kind][0]
        c = acc.cumulative_rates(len(acc.cumulative)) if acc.alpha is None else None
        rate = (
            f"α {acc.alpha:.3g}"
            if c is None
            else (f"{c[0]:.3g}" if len(c) == 1 else f"{c[0]:.2f} to {c[-1]:.2f} by position")
        )
        return f"{name} ({rate}, {where[kind]})"

    labels = {
        kind: named(kind, name)
        for kind, name in (
            ("draft_model", "draft model"),
            ("eagle3", "EAGLE-3 chain"),
            ("ngram", "n-gram"),
            ("mtp", "MTP"),
        )
    }
    for draft, kind, with_tree in (
        ("llama-3.2-1b", "draft_model", False),
        ("eagle3", "eagle3", True),
        ("ngram", "ngram", False),
    ):
        label = labels[kind]
        dep = Deployment.build(DEFAULT_HARDWARE, DEFAULT_TARGET, draft)
        best = optimal_gamma(dep, published[kind][0], batch, DEFAULT_CONTEXT_TOKENS)
        rows += [{"panel": left, "drafter": label, "batch": b, "speedup": v} for b, v in zip(batch, best.speedup)]
        if with_tree:
            _, s, _ = optimal_tree(dep, published[kind][0], TreeSpec(4, 5, 16), batch, DEFAULT_CONTEXT_TOKENS)
            rows += [
                {
                    "panel": left,
                    "drafter": "EAGLE-3 tree (best of top-k 4, depth 5, 16 tokens)",
                    "batch": b,
                    "speedup": v,
                }
                for b, v in zip(batch, s)
            ]
    right = f"DeepSeek-V3 (FP8) on 8 x H200, {ENGINES[DEFAULT_ENGINE].key} preset, L = 1128"
    for draft, kind in (("mtp", "mtp"), ("ngram", "ngram")):
        label = labels[kind]
        dep = Deployment.build("h200", "deepseek-v3", draft, target_options={"tp": 8})
        best = optimal_gamma(dep, published[kind][0], batch, DEFAULT_CONTEXT_TOKENS)
        rows += [{"panel": right, "drafter": label, "batch": b, "speedup": v} for b, v in zip(batch, best.speedup)]
    return plot_drafters(pd.DataFrame(rows + _drafters_2026(batch)), axes=fig.subplots(1, 3))


def _drafters_2026(batch: np.ndarray) -> list[dict[str, Any]]:
    """The third panel: the drafters of 2026 against an EAGLE-3 chain on Qwen3-8B, each at the acceptance a command
    assumes for it there (its published row for the target's family on chat, named in the legend)."""
    panel = f"Qwen3-8B on H100, {ENGINES[DEFAULT_ENGINE].key} preset, L = 1128, the drafters of 2026"
    rows = []
    for draft, name in (
        ("eagle3", "EAGLE-3 chain"),
        ("dflash", "DFlash"),
        ("dspark", "DSpark"),
        ("suffix", "suffix decoding"),
    ):
        dep = Deployment.build(DEFAULT_HARDWARE, "qwen3-8b", draft)
        acceptance, _ = dep.drafter.default_acceptance(dep.target)
        best = optimal_gamma(dep, acceptance, batch, DEFAULT_CONTEXT_TOKENS)
        # The legend names the rate and the source's first words (the paper or pull request the row cites).
        rate = (
            f"α {acceptance.alpha:.3g}"
            if acceptance.alpha is not None
            else f"acceptance {acceptance.cumulative_rates(len(acceptance.cumulative))[0]:.3g}"
        )
        source = acceptance.source.split(" (")[0].split(",")[0]
        rows += [
            {"panel": panel, "drafter": f"{name} ({rate}, {source})", "batch": b, "speedup": v}
            for b, v in zip(batch, best.speedup)
        ]
    return rows


#: The serve-sweep figure's load: requests per run and independent runs (seeds 0, 1, ...) per rate.  Ten runs, as
#: serve-sim's default, put a Student-t interval (2.26 standard errors) on each mean; 600 requests keep the figure's
#: 160 simulations to about 14 s on one core.
_SERVE_RATES = (0.5, 1, 2, 4, 8, 16, 24, 32)
_SERVE_REQUESTS = 600
_SERVE_RUNS = 10


@functools.cache
def _serve_sweep_frame() -> pd.DataFrame:
    """The serve-sweep figure's data, computed once per process (the figure is its slowest: render() in the tests,
    then make_all, would simulate it again for the same numbers)."""
    from specsim.core.workloads import get_workload
    from specsim.serving.simulator import serve_sweep
    from specsim.serving.steady import engine_limits

    dep = Deployment.build(DEFAULT_HARDWARE, DEFAULT_TARGET, DEFAULT_DRAFT)
    limits, _ = engine_limits(dep.engine, dep.hardware)  # the engine's own on the GPU, as the CLI's
    return serve_sweep(
        dep, _SERVE_RATES, get_workload("chat"), _SERVE_REQUESTS, DEFAULT_ALPHA, limits=limits, seed=0, runs=_SERVE_RUNS
    )


def _fig_serve_sweep(fig: Any) -> dict[str, Any]:
    frame = _serve_sweep_frame().copy()
    drawn = plot_serve_sweep(
        frame,
        axes=fig.subplots(1, 2),
        title=f"Llama-3.1-8B + Llama-3.2-1B on H100, chat workload, α = 0.8, default step-time source "
        f"({DEFAULT_TIMING}), {ENGINES[DEFAULT_ENGINE].key} preset; {_SERVE_RUNS} runs (seeds 0-{_SERVE_RUNS - 1}) "
        f"of {_SERVE_REQUESTS} requests per rate",
    )
    return drawn | {"frame": frame}


def _fig_round_anatomy(fig: Any) -> dict[str, Any]:
    from specsim.answers.anatomy import round_anatomy
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    # The published EAGLE-3 head for Llama-3.1-8B: acceptance length 2.79 at 3 steps (vllm-project/vllm#20780); SGLang's
    # default chain of 3 steps (top-k 1, 4 draft tokens).
    alpha = float(alpha_from_acceptance_length(2.79, 3))
    drawn = {}
    axes = fig.subplots(1, 2, sharey=True)
    for ax, version in zip(axes, ("0.5", "latest")):
        dep = Deployment.build(DEFAULT_HARDWARE, DEFAULT_TARGET, "eagle3", engine=f"sglang@{version}")
        share = dep.engine.hidden_share("eagle3")
        what = f"spec v2: {share:.0%} of the host work overlapped" if share else "spec v1: host work serial"
        answer = round_anatomy(dep, alpha, "", list(_ROUND_BATCHES), 512, gamma=3)
        drawn[version] = plot_round_anatomy(
            answer.rows, ax=ax, title=f"Llama-3.1-8B + EAGLE-3 on H100, {dep.engine.key} ({what})"
        )
        drawn[version]["rows"] = answer.rows
    axes[1].set_ylabel("")
    fig.suptitle(
        "Where a speculative round's time goes (γ = 3, α from the published head's acceptance length 2.79, L = 512; "
        "SGLang host terms fitted at batch 1-64)",
        fontsize=10,
    )
    return drawn


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("speedup-vs-gamma", (7.5, 4.6), _fig_speedup_vs_gamma),
    FigureSpec("speedup-vs-batch", (7.5, 4.6), _fig_speedup_vs_batch),
    FigureSpec("roofline", (7.5, 5.2), _fig_roofline),
    FigureSpec("step-times", (14, 4.6), _fig_step_times, 3),
    FigureSpec("speedup-heatmaps", (14, 5.2), _fig_heatmaps, 2),
    FigureSpec("optimal-gamma-vs-batch", (15, 6.6), _fig_optimal_gamma, 10),
    FigureSpec("speedup-vs-batch-devices", (15, 4.6), _fig_devices, 3),
    FigureSpec("throughput-vs-latency", (14, 6.2), _fig_throughput, 2),
    FigureSpec("verification-cost", (14, 5.2), _fig_verify_cost, 2),
    FigureSpec("moe-speculation", (14, 5.2), _fig_moe, 2),
    FigureSpec("drafters", (21, 5.4), _fig_drafters, 3),
    FigureSpec("serve-sweep", (14, 5.2), _fig_serve_sweep, 2),
    FigureSpec("round-anatomy", (15, 5.6), _fig_round_anatomy, 2),
)


def render(spec: FigureSpec) -> tuple[Any, dict[str, Any]]:
    """Draw one committed figure on a new (pyplot-free) Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=spec.size, layout="constrained")
    drawn = spec.draw(fig)
    freeze_layout(fig)
    return fig, drawn


#: Each figure's files and data once drawn in this process: the output is deterministic, so a second call (a
#: notebook run again, the tests' figures and ``specsim figures``) writes the same bytes without drawing again.
_RENDERED: dict = {}


def make_all(
    outdir: str | Path = "figures", names: list[str] | None = None, done=None, drawn: dict | None = None
) -> list[Path]:
    """Regenerate the committed figures as PNG and SVG in ``outdir``; ``done`` is called after each figure is drawn (a
    progress bar); ``drawn``, where given, receives each figure's data by name (what :func:`render` returns beside the
    figure), for a caller that reads the numbers a figure shows without drawing it again.

    Files are written atomically, all or none (a folder made for them is removed if they cannot be written); the
    output is deterministic (no dates in the metadata, a fixed SVG hash salt), and each figure is drawn once per
    process.  Returns the paths written.
    """
    import matplotlib

    known = {spec.name: spec for spec in FIGURES}
    if names is not None and not list(names):  # an empty selection is a mistake, not "every figure"
        raise ValueError(f"no figure named; known: {', '.join(known)} (or pass names=None for all)")
    chosen = list(known) if names is None else list(names)
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise UnknownName(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(known)}")
    files = []
    # The folder first: one that cannot be made is said before the figures are drawn.
    with make_folder(outdir, parents=True) as out, matplotlib.rc_context({"svg.hashsalt": "specsim", "font.size": 10}):
        for name in chosen:
            if name not in _RENDERED:
                fig, data = render(known[name])
                # PNG keeps matplotlib's "Software" tag (its version); SVG drops the date.
                images = []
                for fmt, meta in (("png", {}), ("svg", {"Date": None})):
                    buffer = io.BytesIO()
                    fig.savefig(buffer, format=fmt, dpi=150, metadata=meta)
                    images.append((fmt, buffer.getvalue()))
                _RENDERED[name] = (images, data)
            images, data = _RENDERED[name]
            if drawn is not None:
                drawn[name] = data
            files += [(out / f"{name}.{fmt}", image) for fmt, image in images]
            if done is not None:
                done()
        return atomic_write_many(files)  # all or none (about 4 MB held for every figure)
