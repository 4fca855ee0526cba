"""Independent routing against the fitted routing correlation as the default for MoE targets (issue 29), judged on
held-out sources.

    python benchmarks/routing_default.py

For rho = 0 (every token routes independently, the bound) and rho = FITTED_ROUTING_CORRELATION (0.2, a draft token
repeats a fifth of its predecessor's experts in its sequence), the engine presets' speculative host terms are fitted
exactly as the shipped ones are (:func:`specsim.calibration.public.evaluate`, both step-time sources), and printed with:

1. the held-out speedup error per source (terms fitted on the engine's other sources) and its mean per engine, as
   ``tests/test_spec_fit.py`` judges it, and per source the change of each row's absolute held-out error from rho 0 to
   the fitted rho with its standard error (a source is worse beyond noise where the mean change exceeds +2 standard
   errors: a rise that large arises by chance in about 2% of sources if the rows' changes are independent);
2. the two large MoE step sweeps (SGLang's AutoSpec pull request, sgl-project/sglang#22246: Qwen3-235B-A22B with an
   EAGLE-3 head and GLM-4.7 with MTP, TP 8, H200): the measured best steps per batch, those the model picks among the
   measured ones with the held-out terms (and the share of the best measured throughput the pick loses), those the model
   with the terms fitted on all sources picks from 1-16 steps (what ``tests/test_spec_fit.py`` holds to not grow with
   batch), and its best speedup per batch;
3. Kimi-K2.6 with EAGLE-3.1 on 4 GPUs under vLLM 0.24.0 (vLLM blog 2026-05-26; not fitted): the speedup and best steps
   by concurrency.

Every rho is applied to every MoE model a deployment builds (``routing_correlation`` of validate_targets.py), so the
comparison does not depend on which value is the default.  Errors are mean absolute relative errors, percent.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate_speculation import step_choices  # noqa: E402
from validate_targets import KIMI_AL, KIMI_EAGLE31, kimi_at_three, routing_correlation  # noqa: E402

from specsim.calibration.public import FIT_KINDS, evaluate, load_public_speculation  # noqa: E402
from specsim.describe.models import FITTED_ROUTING_CORRELATION, get_model  # noqa: E402
from specsim.engines import PRESETS  # noqa: E402
from specsim.speculation.acceptance import alpha_from_acceptance_length  # noqa: E402
from specsim.speculation.deployment import Deployment  # noqa: E402
from specsim.speculation.search import optimal_gamma  # noqa: E402

RHOS = (0.0, FITTED_ROUTING_CORRELATION)
SWEEPS = {
    "sglang-22246": ("qwen3-235b-a22b", {}, "eagle3"),
    "sglang-22246-glm": ("glm-4.7", {"weight_dtype": "fp8"}, "mtp"),
}
BATCH = [1, 2, 4, 8, 16, 32, 64]


def held_out_by_engine(fit) -> tuple[pd.Series, pd.Series]:
    """Held-out error per source, and its mean over each engine's sources."""
    held = fit.error_by("source", "held_out")
    engine_of = fit.table.drop_duplicates("source").set_index("source").engine
    return held, held.groupby(engine_of[held.index]).mean()


def paired_change(before, after) -> pd.DataFrame:
    """Per source: mean change of a row's absolute held-out error (percentage points) and its standard error."""
    t = before.table[before.table.kind.isin(FIT_KINDS)]
    a = after.table.loc[t.index]
    diff = 100 * ((a.held_out / a.measured_value - 1).abs() - (t.held_out / t.measured_value - 1).abs())
    g = diff.groupby(t.source)
    out = pd.DataFrame({"rows": g.size(), "change pp": g.mean(), "s.e. pp": g.std(ddof=1) / np.sqrt(g.size())})
    out["worse beyond noise"] = out["change pp"] > 2 * out["s.e. pp"].fillna(0.0)
    return out.round(2)


def measured_best(rows: pd.DataFrame, source: str) -> list[int]:
    sweep = rows[rows.source == source]
    best = []
    for _, g in sweep.groupby("batch"):
        steps = [3] + g.steps.astype(int).tolist()  # throughput relative to 3 steps: 1 at 3 by definition
        best.append(steps[int(np.argmax([1.0] + (g.spec / g.base).tolist()))])
    return best


def sweep_trends(fit, rho: float) -> list[tuple]:
    """The model's best steps and speedup per batch for each sweep, SGLang spec v1 with the terms of ``fit``."""
    out = []
    host = fit.fitted["sglang"]
    engine = dataclasses.replace(PRESETS["sglang@0.5"], spec=host, kernel_spec=host)
    for source, (target, options, drafter) in SWEEPS.items():
        with routing_correlation(rho):
            dep = Deployment.build(
                "h200",
                target,
                drafter,
                timing=fit.timing,
                engine=engine,
                target_options={"tp": 8, **options},
                draft_options={"tp": 8},
            )
        best = optimal_gamma(dep, fit.alphas[source], BATCH, 512, gamma_max=16)
        out.append((source, best.gamma.astype(int).tolist(), best.speedup))
    return out


def kimi_trend(rho: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
    dep, c, at3 = kimi_at_three(rho)
    best = optimal_gamma(dep, float(alpha_from_acceptance_length(KIMI_AL, 3)), c, 2048, gamma_max=8)
    return c, at3, best.gamma.astype(int).tolist()


def main() -> int:
    pd.set_option("display.width", 250)
    rows = load_public_speculation()
    held, means, fits = {}, {}, {}
    for timing in ("hybrid", "kernels"):
        for rho in RHOS:
            with routing_correlation(rho):
                fit = evaluate(rows, timing)
            fits[timing, rho] = fit
            held[f"{timing} rho {rho}"], means[f"{timing} rho {rho}"] = held_out_by_engine(fit)
            print(f"== {timing}, rho {rho}: host terms fitted per engine on its serial versions ==")
            for engine, host in fit.fitted.items():
                print(f"  {engine}: {host.describe()}")
            print(
                f"  SGLang spec v2 share of H hidden: {fit.shares['sglang']:.2f}; step-sweep acceptance rates: {fit.alphas}"
            )
    table = pd.DataFrame(held).round(2)
    t = rows[rows.kind.isin(FIT_KINDS)]
    table.insert(
        0, "MoE", t.drop_duplicates("source").set_index("source").target.map(lambda m: get_model(m).is_moe)[table.index]
    )
    table.insert(0, "engine", t.drop_duplicates("source").set_index("source").engine[table.index])
    print("\nHeld-out speedup error, % (terms fitted on the engine's other sources):")
    print(table.sort_values(["engine", "MoE"]).to_string())
    print("\nMean over each engine's sources:")
    print(pd.DataFrame(means).round(2).to_string())
    for timing in ("hybrid", "kernels"):
        print(f"\nChange of each row's absolute held-out error, rho 0 -> {RHOS[1]}, {timing}:")
        print(paired_change(fits[timing, RHOS[0]], fits[timing, RHOS[1]]).to_string())
    print(
        "\nLarge MoE step sweeps (sgl-project/sglang#22246, TP 8, H200, SGLang spec v1, terms fitted with each rho), "
        f"batch {BATCH}:"
    )
    for source in SWEEPS:
        print(f"  {source}: measured best steps (1-6) {measured_best(rows, source)}")
    for timing in ("hybrid", "kernels"):
        for rho in RHOS:
            for source, _, picked, loss in step_choices(fits[timing, rho].table):
                print(
                    f"  {source}, {timing}, rho {rho}, held out: picks {picked} among the measured steps, losing "
                    + " ".join(f"{100 * x:.1f}" for x in loss)
                    + " % of the best measured throughput"
                )
    for timing in ("hybrid", "kernels"):
        for rho in RHOS:
            for source, gamma, speed in sweep_trends(fits[timing, rho], rho):
                print(
                    f"  {source}, {timing}, rho {rho}, all sources: best steps (1-16) {gamma}; speedup "
                    + " ".join(f"{x:.2f}" for x in speed)
                )
    print(
        "\nKimi-K2.6-NVFP4, TP 4, vLLM 0.24.0, EAGLE-3.1 (b200 profile, acceptance length 3.013; not fitted), c = 1 4 16 64:"
    )
    print(
        "  measured speedup at 3 tokens: "
        + " ".join(f"{KIMI_EAGLE31.get(c, float('nan')):.2f}" for c in (1, 4, 16, 64))
    )
    for rho in RHOS:
        c, at3, best = kimi_trend(rho)
        print(
            f"  rho {rho}: speedup at 3 tokens "
            + " ".join(f"{x:.2f}" for x in at3)
            + f" (relative to c=1: {' '.join(f'{x:.2f}' for x in at3 / at3[0])}); best steps {best}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
