"""How the serving model's iteration holds against iterations measured on an H200 (nothing here is fitted to them).

Reads hardware/measurements/h200-iteration-steps.csv (scripts/gpu_iteration_steps.py: Llama-3.1-8B and Llama-3.2-1B
shapes, random bf16 weights, CUDA-graph replays, torch 2.11.0+cu130, 2026-12-04) and prints:

1. The composition rule of specsim.serving.steady.iteration_s, on measurements alone: an iteration of b decoding
   sequences and a prompt chunk of c tokens at prompt position p0 costs the decode pass plus the chunk's marginal
   prefill, pf(p0 + c) - pf(p0) with pf(P) = t(1 prompt of P) - t(1 prompt of 1), from the measured prompts (a
   quadratic in P fitted to them from 512 tokens, within 0.5% of each; linear between them below).
2. Each step-time source's prefill of one prompt against the measured kernels (GEMMs and causal SDPA alone) and the
   measured pass (the harness's, whose unfused norms and rotary add 15-40%): what the sources are asked to give.
1b. The same rule on each iteration's kernels alone (GEMMs, LM head at the sampled rows, SDPA), from a second run on
   the same device (hardware/measurements/h200-iteration-floors.csv, 12:35 the same day): no unfused elementwise work.
3. What a pass costs when it is not captured whole: piecewise (attention eager between captured pieces) and eager,
   over the full CUDA graph, for the 8B and a one-layer EAGLE-style head.

Run:  python benchmarks/validate_iteration_steps.py [--csv FILE] [--plot FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from specsim.speculation.deployment import Deployment

CSV = Path(__file__).resolve().parent.parent / "hardware" / "measurements" / "h200-iteration-steps.csv"
FLOORS = CSV.with_name("h200-iteration-floors.csv")


def composition(d: pd.DataFrame) -> pd.DataFrame:
    pre = d[(d.part == "prefill") & (d.model == "llama-3.1-8b")].sort_values("c")
    P, t = pre.c.to_numpy(float), pre.median_ms.to_numpy(float)
    # From 512 tokens a prompt is compute-bound: a + b P + c P^2 (GEMMs linear, causal attention quadratic), fitted to
    # the measured prompts there in relative error; below, linear between measured lengths.
    big = P >= 512
    rel = np.vstack([np.ones(big.sum()), P[big], P[big] ** 2]).T / t[big, None]
    coef = np.linalg.lstsq(rel, np.ones(big.sum()), rcond=None)[0]

    def pf(n: float) -> float:
        if n <= 0:
            return 0.0
        whole = coef[0] + coef[1] * n + coef[2] * n * n if n >= 512 else np.interp(n, P, t)
        return float(whole - t[0])

    dec = d[d.part == "decode"].set_index(["b", "q", "L"]).median_ms
    rows = []
    for r in d[d.part == "mixed"].itertuples():
        step = float(dec[(r.b, r.q, r.L)])
        predicted = step + pf(r.p0 + r.c) - pf(r.p0)
        rows.append(dict(b=r.b, q=r.q, L=r.L, c=r.c, p0=r.p0, decode_ms=step, measured_ms=r.median_ms,
                         composed_ms=predicted, error=predicted / r.median_ms - 1.0))  # fmt: skip
    for r in d[d.part == "chunk"].itertuples():
        predicted = t[0] + pf(r.p0 + r.c) - pf(r.p0)
        rows.append(dict(b=0, q=0, L=0, c=r.c, p0=r.p0, decode_ms=t[0], measured_ms=r.median_ms,
                         composed_ms=predicted, error=predicted / r.median_ms - 1.0))  # fmt: skip
    return pd.DataFrame(rows)


def kernel_composition(d: pd.DataFrame) -> pd.DataFrame:
    """Section 1 on the kernels alone (rows with floors for decode, mixed and prompt iterations): the decode
    iteration's kernels plus the chunk's marginal prompt kernels, against the mixed iteration's kernels."""
    d = d.assign(floor=d.floor_gemm_ms + d.floor_attn_ms)
    pre = d[(d.part == "prefill") & (d.model == "llama-3.1-8b")].set_index("c").floor
    dec = d[d.part == "decode"].set_index(["b", "q", "L"]).floor
    rows = []
    for r in d[(d.part == "mixed") & d.floor.notna()].itertuples():
        if (r.p0 + r.c) not in pre.index or (r.p0 and r.p0 not in pre.index) or 1 not in pre.index:
            continue
        marginal = float(pre[r.p0 + r.c] - (pre[r.p0] if r.p0 else pre[1]))
        composed = float(dec[(r.b, r.q, r.L)]) + marginal
        rows.append(dict(b=r.b, q=r.q, L=r.L, c=r.c, p0=r.p0, m=r.b * r.q + r.c, kernels_ms=r.floor,
                         composed_ms=composed, error=composed / r.floor - 1.0))  # fmt: skip
    return pd.DataFrame(rows)


def rules(d: pd.DataFrame) -> pd.DataFrame:
    """A prototype, not the product's model: the q = 1 iterations of the kernel run priced two ways by one source, as
    the serving model adds them (the decode pass plus a prompt's marginal, t(1, p0 + c) - t(1, p0)) and as one pass of
    all the tokens.  One pass, roofline: the chunk's arithmetic and bytes join the decode pass's in one
    max(compute, memory), the weights read once.  One pass, kernel tables: the GEMMs at b q + c tokens less at b q,
    plus the chunk's attention (its prompt marginal less its GEMMs').  (The q = 4 rows are left out: this harness's
    masked SDPA makes their attention several times an engine's, which neither source prices.)"""
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing.kernels import KernelSource
    from specsim.timing.roofline import step_time

    hw, m = load_hardware("h200"), get_model("llama-3.1-8b")
    weights_s = float(m.weight_bytes_read(1)) / hw.bytes_per_s
    kernels = KernelSource(hw)
    table = kernels.table(m)
    gemm = lambda n: float(table.gemm(np.array(float(n))))  # noqa: E731
    d = d.assign(floor=d.floor_gemm_ms + d.floor_attn_ms)
    rows = []
    for r in d[(d.part == "mixed") & d.floor.notna() & (d.q == 1)].itertuples():
        start = max(r.p0, 1)
        dec = step_time(hw, m, r.b, r.q, r.L)
        prompt = lambda n: step_time(hw, m, 1, n, 0, prompt=True)  # noqa: E731
        chunk = step_time(hw, m, 1, r.c, r.p0, prompt=True)
        roof_added = float(dec.total_s) + float(prompt(r.p0 + r.c).total_s) - float(prompt(start).total_s)
        roof_joint = dec.overhead_s + max(
            float(dec.compute_s + chunk.compute_s), float(dec.memory_s + chunk.memory_s) - weights_s
        )
        kdec = float(kernels.step_time(m, r.b, r.q, r.L).total_s)
        kprompt = lambda n: float(kernels.step_time(m, 1, n, 0, prompt=True).total_s)  # noqa: E731
        marginal = kprompt(r.p0 + r.c) - kprompt(start)
        attention = marginal - (gemm(r.p0 + r.c) - gemm(start))
        kern_joint = kdec + gemm(r.b * r.q + r.c) - gemm(r.b * r.q) + attention
        rows.append(dict(b=r.b, L=r.L, c=r.c, p0=r.p0, kernels_ms=r.floor,
                         roofline_added=roof_added * 1e3 / r.floor - 1, roofline_joint=roof_joint * 1e3 / r.floor - 1,
                         tables_added=(kdec + marginal) * 1e3 / r.floor - 1,
                         tables_joint=kern_joint * 1e3 / r.floor - 1))  # fmt: skip
    return pd.DataFrame(rows)


def sources(d: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for timing in ("roofline", "kernels", "hybrid"):
        dep = Deployment.build("h200", "llama-3.1-8b", "llama-3.2-1b", timing=timing, engine="none")
        for model in (dep.target, dep.draft):
            pre = d[(d.part == "prefill") & (d.model == model.name) & (d.c > 1)]
            for r in pre.itertuples():
                t = float(np.asarray(dep.gpu_pass(model, 1, r.c, 0, prompt=True).total_s)) * 1e3
                floor = r.floor_gemm_ms + r.floor_attn_ms
                rows.append(dict(source=timing, model=model.name, P=r.c, source_ms=t, kernels_ms=floor,
                                 pass_ms=r.median_ms, vs_kernels=t / floor - 1.0, vs_pass=t / r.median_ms - 1.0))  # fmt: skip
    return pd.DataFrame(rows)


def modes(d: pd.DataFrame) -> pd.DataFrame:
    m = d[d.part == "mode"].pivot_table(index=["model", "b", "q"], columns="mode", values="median_ms")
    m["piecewise/graph"] = m["piecewise"] / m["graph"]
    m["eager/graph"] = m["eager"] / m["graph"]
    return m.reset_index()


def plot(src: pd.DataFrame, path: str) -> None:
    """Each source's prompt time over the measured kernels', per model, against the prompt's length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(src.model))
    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 3.8), sharey=True)
    for ax, model in zip(np.atleast_1d(axes), models):
        part = src[src.model == model]
        for timing, g in part.groupby("source", sort=False):
            ax.plot(g.P, g.source_ms / g.kernels_ms, marker="o", label=f"{timing} source")
        first = part[part.source == part.source.iloc[0]]
        ax.plot(
            first.P, first.pass_ms / first.kernels_ms, color="0.4", ls="--", marker="s", label="measured pass (harness)"
        )
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{model}: one prompt")
        ax.set_xlabel("prompt tokens P")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("time / measured kernels (GEMMs + causal SDPA)")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle(
        "A prompt's pass on an H200 (torch 2.11, 2026-12-04): sources (h200 profile) over the measured kernels"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    print(f"wrote {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=str(CSV))
    ap.add_argument("--plot", help="also draw section 2 to this image file")
    ap.add_argument("--floors", default=str(FLOORS), help="the run with each iteration's kernels timed alone")
    args = ap.parse_args(argv)
    d = pd.read_csv(args.csv)
    pd.set_option("display.width", 160)
    comp = composition(d)
    print("1. iteration = decode pass + marginal prefill of the chunk, from measured parts (8B, H200)")
    print(comp.round(3).to_string(index=False))
    for label, part in (("with decoding sequences", comp[comp.b > 0]), ("a prompt chunk alone", comp[comp.b == 0])):
        err = part.error.abs()
        print(
            f"   {label}: |error| mean {err.mean():.1%}, max {err.max():.1%}, bias {part.error.mean():+.1%} ({len(part)})"
        )
    print()
    if Path(args.floors).exists():
        kc = kernel_composition(pd.read_csv(args.floors))
        print(
            f"1b. the same rule on each iteration's kernels alone ({Path(args.floors).name}; m = tokens in the GEMMs)"
        )
        print(kc.round(3).to_string(index=False))
        for (c, p0), part in kc.groupby(["c", "p0"]):
            err, label = part.error, f"chunk of {c:,} at position {p0:,}"
            print(
                f"   {label}: |error| mean {err.abs().mean():.1%}, max {err.abs().max():.1%}, bias {err.mean():+.1%} ({len(part)})"
            )
        ru = rules(pd.read_csv(args.floors))
        print(
            "\n1c. prototype: both rules in one source, q = 1 iterations, against the same kernels: mean error (spread)"
        )
        for (c, p0), part in ru.groupby(["c", "p0"]):
            cells = [
                f"{name} {part[col].mean():+.1%} ({part[col].min():+.1%}..{part[col].max():+.1%})"
                for name, col in (("roofline added", "roofline_added"), ("one pass", "roofline_joint"),
                                  ("tables added", "tables_added"), ("one pass", "tables_joint"))
            ]  # fmt: skip
            print(f"   chunk of {c:,} at {p0:,}: " + "; ".join(cells))
        print()
    src = sources(d)
    print("2. one prompt of P tokens: each source (h200 profile, engine none) against the measured kernels and pass")
    print(src.round(3).to_string(index=False))
    for (timing, model), g in src.groupby(["source", "model"]):
        print(f"   {timing:8s} {model:13s} vs kernels {g.vs_kernels.min():+.1%}..{g.vs_kernels.max():+.1%}")
    if args.plot:
        plot(src, args.plot)
    print("\n3. a pass not captured whole, over the same pass in one CUDA graph")
    print(modes(d).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
