"""Large MoE targets on AMD Instinct: vLLM ROCm's pass overhead and round terms, fitted to AMD's MI355X sweeps and
judged on the sweep held out (issue 29; :mod:`specsim.calibration.rocm`).

    python benchmarks/validate_moe_rocm.py

Prints the fitted bandwidth efficiency, collective time and round terms (what ``hardware/mi355x.yaml`` and
``specsim.engines.vllm.ROCM_SPEC`` / ``ROCM_COLLECTIVE_S`` ship), then per source and concurrency the measured speedup, the held-out one (round terms fitted on the other sweep;
MiniMax's unpublished acceptance length fitted at concurrency 4 alone, so its error there is 0 by construction), the
fit on both, and the CUDA preset's round on the same fitted profile; then the mean absolute error per source and the
speedup at 64 relative to 4.  Errors are percent.
"""

from __future__ import annotations

import pandas as pd

from specsim.calibration.rocm import evaluate


def main() -> None:
    fit = evaluate()
    p, s = fit.profile, fit.spec
    print(f"fitted to the plain rows: profile mi355x bandwidth efficiency {p.bandwidth_eff:.3f}, vLLM ROCm "
          f"{fit.collective_s * 1e6:.1f} us per tensor-parallel collective")
    print(f"vLLM ROCm round fitted to both sweeps: {s.step_s * 1e3:.3f} ms per draft step + {s.seq_step_s * 1e6:.1f} us per "
          f"sequence per draft step (waited for); acceptance length "
          + ", ".join(f"{k} {v:.2f}" for k, v in fit.lengths.items()))
    t = fit.table
    show = t[["source", "concurrency", "steps", "measured", "held_out", "fitted", "cuda"]].round(3)
    print("\nspeedup by concurrency (held_out: round terms fitted on the other source; cuda: vLLM's CUDA round as shipped)")
    print(show.to_string(index=False))
    errors = pd.DataFrame({c: fit.error(c) for c in ("held_out", "fitted", "cuda")}).round(1)
    print("\nmean absolute error per source, %")
    print(errors.to_string())
    fall = t.sort_values("concurrency").groupby("source", sort=False)[["measured", "held_out", "cuda"]].agg(
        lambda x: x.iloc[-1] / x.iloc[0]).round(3)
    print("\nspeedup at concurrency 64 over concurrency 4")
    print(fall.to_string())


if __name__ == "__main__":
    main()
