"""Measured step times beside the kernel database and specsim's predictions.

For every measured (model, b, q, L): the measurement; the predictions of the
base profile (article preset), the kernel-calibrated profile (<base>-vllm) and a
profile calibrated on these measurements; and, where aiconfigurator-core is
installed (on the development machine, not on a bare GPU box), the kernel and
hybrid step-time sources for the same device.  Then the cost of verification
relative to decode, t(b, q, L) / t(b, 1, L), measured against the kernel
database on the same grid (issue: "compare against the kernel database on the
same grid").  Writes a CSV and prints MAPEs.

    python scripts/compare_measured.py measured.csv --base h200 --calibrated h200-measured.yaml --out comparison.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specsim.calibration.profile import predict
from specsim.describe.hardware import builtin_dir, builtin_names, load_hardware
from specsim.timing.measurements import load_measurements


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
        public = public.assign(context=public.context + 1).rename(
            columns={"model": "model_name", "step_time_s": "public_kernel_sum_s"}
        )
        out = out.merge(public, on=["model_name", "batch", "tokens_per_seq", "context"], how="left")
    try:
        from specsim.timing import make_source

        base = load_hardware(args.base)
        for name in ("kernels", "hybrid"):
            source = make_source(name, base)
            if source.name != name:  # the database has no such device: make_source fell back to the roofline
                print(f"note: {name} columns skipped: {'; '.join(source.notes)}")
                continue
            values = np.full(len(df), np.nan)
            for _, idx in df.groupby(df["shape"].map(id)).groups.items():
                rows = df.loc[idx]
                t = source.step_time(
                    rows["shape"].iloc[0],
                    rows["batch"].to_numpy(float),
                    rows["tokens_per_seq"].to_numpy(float),
                    rows["context"].to_numpy(float),
                )
                total = np.where(t.fallback, np.nan, t.total_s) if t.fallback is not None else t.total_s
                values[df.index.get_indexer(idx)] = total
            out[f"predicted_{name}_s"] = values
    except ValueError as exc:  # aiconfigurator-core missing: compare on the development machine
        print(f"note: kernel-database columns skipped ({exc})")
    out.to_csv(args.out, index=False)
    print(f"{len(out)} measured configurations")
    for col in [c for c in out.columns if c.startswith("predicted_") or c == "public_kernel_sum_s"]:
        ok = out[col].notna()
        if not ok.any():
            continue
        err = np.abs(out.loc[ok, col] / out.loc[ok, "measured_s"] - 1.0)
        print(f"  {col:32s} vs measured: MAPE {err.mean():.1%}, worst {err.max():.1%} over {int(ok.sum())} points")
    # Verification relative to decode on the same grid: t(b, q, L) / t(b, 1, L).
    keys = ["model_name", "batch", "context"]
    ratio_cols = [c for c in ("measured_s", "predicted_kernels_s", "predicted_preset_s") if c in out.columns]
    decode = out[out.tokens_per_seq == 1][keys + ratio_cols].rename(columns={c: f"{c}_decode" for c in ratio_cols})
    ratios = out[out.tokens_per_seq > 1].merge(decode, on=keys, how="inner")
    for col in ratio_cols:
        ratios[f"ratio_{col[:-2]}"] = ratios[col] / ratios[f"{col}_decode"]
    if len(ratios):
        for col in [c for c in ratios.columns if c.startswith("ratio_predicted_")]:
            ok = ratios[col].notna() & ratios["ratio_measured"].notna()
            if ok.any():
                err = np.abs(ratios.loc[ok, col] / ratios.loc[ok, "ratio_measured"] - 1.0)
                print(
                    f"  t_V/t_T, {col[16:]} vs measured: MAPE {err.mean():.1%}, worst {err.max():.1%} over {int(ok.sum())} points"
                )
        ratios.to_csv(Path(args.out).with_name(Path(args.out).stem + "-verify-ratio.csv"), index=False)


if __name__ == "__main__":
    main()
