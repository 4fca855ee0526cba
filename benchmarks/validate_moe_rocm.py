"""Large MoE targets on AMD Instinct: vLLM ROCm's pass overhead and round terms, fitted to AMD's MI355X sweeps and
judged on the sweep held out (issue 29; :mod:`specsim.calibration.rocm`).

    python benchmarks/validate_moe_rocm.py

Prints the fitted bandwidth efficiency, collective time and round terms (what ``hardware/mi355x.yaml`` and
``specsim.engines.vllm.ROCM_SPEC`` / ``ROCM_COLLECTIVE_S`` ship), then per source and concurrency the measured speedup, the held-out one (round terms fitted on the other sweep;
MiniMax's unpublished acceptance length fitted at concurrency 4 alone, so its error there is 0 by construction), the
fit on both, and the CUDA preset's round on the same fitted profile; then the mean absolute error per source and the
speedup at 64 relative to 4; last, the one CUDA sweep of a large MoE target by concurrency with the CUDA round and
with the ROCm round terms (not fitted).  Errors are percent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate_targets import KIMI_AL, KIMI_EAGLE31  # noqa: E402

from specsim.calibration.rocm import evaluate  # noqa: E402
from specsim.engines import get_engine  # noqa: E402
from specsim.engines.vllm import rocm_build  # noqa: E402
from specsim.speculation.deployment import Deployment, speedup_of  # noqa: E402


def main() -> None:
    fit = evaluate()
    p, s = fit.profile, fit.spec
    print(
        f"fitted to the plain rows: profile mi355x bandwidth efficiency {p.bandwidth_eff:.3f}, vLLM ROCm "
        f"{fit.collective_s * 1e6:.1f} us per tensor-parallel collective"
    )
    print(
        f"vLLM ROCm round fitted to both sweeps: {s.step_s * 1e3:.3f} ms per draft step + {s.seq_step_s * 1e6:.1f} us per "
        f"sequence per draft step (waited for); acceptance length "
        + ", ".join(f"{k} {v:.2f}" for k, v in fit.lengths.items())
    )
    t = fit.table
    show = t[["source", "concurrency", "steps", "measured", "held_out", "fitted", "cuda"]].round(3)
    print(
        "\nspeedup by concurrency (held_out: round terms fitted on the other source; cuda: vLLM's CUDA round as shipped)"
    )
    print(show.to_string(index=False))
    errors = pd.DataFrame({c: fit.error(c) for c in ("held_out", "fitted", "cuda")}).round(1)
    print("\nmean absolute error per source, %")
    print(errors.to_string())
    fall = (
        t.sort_values("concurrency")
        .groupby("source", sort=False)[["measured", "held_out", "cuda"]]
        .agg(lambda x: x.iloc[-1] / x.iloc[0])
        .round(3)
    )
    print("\nspeedup at concurrency 64 over concurrency 4")
    print(fall.to_string())
    cuda_sweep(fit.spec)


def cuda_sweep(rocm) -> None:
    """The one CUDA sweep of a large MoE target by concurrency (Kimi-K2.6-NVFP4 + EAGLE-3.1, vLLM TP 4, GB200; the
    vLLM blog 2026-05-26, modelled on the b200 profile with acceptance length 3.013), with vLLM's CUDA round and with
    the ROCm round terms: whether the ROCm per-sequence work is the engine's everywhere or its ROCm build's."""
    c = np.array([1.0, 4.0, 16.0])
    rows = {"measured": [KIMI_EAGLE31[int(x)] for x in c]}
    for label, engine in (
        ("CUDA round (shipped)", get_engine("vllm@0.24.0")),
        ("ROCm round terms", rocm_build(get_engine("vllm@0.24.0"), rocm, get_engine("vllm@0.24.0").collective_s)),
    ):
        dep = Deployment.build(
            "b200", "kimi-k2", "eagle3", engine=engine, target_options={"tp": 4, "weight_dtype": "nvfp4"}
        )
        rows[label] = speedup_of(KIMI_AL, dep.decode(c, 2048).total_s, dep.round_time(c, 2048, 3).total_s)
    print("\nKimi-K2.6 + EAGLE-3.1 on 4 x GB200 (CUDA; not fitted), speedup by concurrency 1, 4, 16")
    print(pd.DataFrame(rows, index=c.astype(int)).T.round(3).to_string())


if __name__ == "__main__":
    main()
