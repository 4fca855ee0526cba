"""Measured step times beside the public kernel sums and specsim's predictions.

For every measured (model, b, q, L): the measurement, the public vLLM kernel sum
for the same device and shape where one exists (hardware/measurements/<base>-vllm-kernel-steps.csv,
matched at kv_len = L - 1, the grid's nearest point), and the predictions of the
base profile (article preset), the kernel-calibrated profile (<base>-vllm) and a
profile calibrated on these measurements.  Writes a CSV and prints MAPEs.

    python scripts/compare_measured.py measured.csv --base h200 --calibrated h200-measured.yaml --out comparison.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specsim.calibrate import load_measurements, predict  # noqa: E402
from specsim.hardware import builtin_names, load_hardware  # noqa: E402
from specsim.hardware import builtin_dir  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measured")
    parser.add_argument("--base", required=True)
    parser.add_argument("--calibrated", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    df = load_measurements(args.measured)
    profiles = {"preset": load_hardware(args.base), "measured-fit": load_hardware(args.calibrated)}
    if f"{args.base}-vllm" in builtin_names():
        profiles["kernel-fit"] = load_hardware(f"{args.base}-vllm")
    out = df[["model_name", "batch", "tokens_per_seq", "context", "measured_s"]].copy()
    for label, profile in profiles.items():
        out[f"predicted_{label}_s"] = predict(profile, df)
    kernels = builtin_dir() / "measurements" / f"{args.base}-vllm-kernel-steps.csv"
    if kernels.is_file():
        public = pd.read_csv(kernels)[["model", "batch", "tokens_per_seq", "context", "step_time_s"]]
        public = public.assign(context=public.context + 1).rename(columns={"model": "model_name", "step_time_s": "public_kernel_sum_s"})
        out = out.merge(public, on=["model_name", "batch", "tokens_per_seq", "context"], how="left")
    out.to_csv(args.out, index=False)
    print(f"{len(out)} measured configurations")
    for col in [c for c in out.columns if c.startswith("predicted_") or c == "public_kernel_sum_s"]:
        ok = out[col].notna()
        err = np.abs(out.loc[ok, col] / out.loc[ok, "measured_s"] - 1.0)
        print(f"  {col:32s} vs measured: MAPE {err.mean():.1%}, worst {err.max():.1%} over {int(ok.sum())} points")


if __name__ == "__main__":
    main()
