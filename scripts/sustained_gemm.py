"""Write specsim/timing/data/sustained_gemm.csv: 16-bit weight GEMMs timed one after another as an engine runs them.

A developer's tool: it reads the team's shared folder (../shared/data), which the product never does; the CSV it writes
ships with specsim and is what :func:`specsim.timing.kernel_db.sustained_matmul_flop_per_s` reads.

Run:  python scripts/sustained_gemm.py [--shared ../shared]

Rows: one per (device, source, m): the four weight GEMMs of one transformer layer (QKV, attention output, gate/up,
down projections) at m tokens, their summed time in ms and the rate in TFLOP/s.

* a100_sxm, h100_sxm: microsoft/vidur (MIT License, Copyright (c) Microsoft Corporation), commit 7d47513,
  data/profiling/compute/{a100,h100}/<model>/mlp.csv: Llama-3-8B on an A100 80GB and Llama-2-7B on an H100, one GPU
  (num_tensor_parallel_workers 1), median of each operator's timings (time_stats.<op>.median, ms).
* h200_sxm: this project's measurement on one H200 (2026-11-30, torch 2.11.0+cu130; kbench.csv, F.linear with the
  weights cycled through copies to defeat the L2, CUDA-graph replays, median).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from specsim.timing.kernel_db import SUSTAINED_FROM_TOKENS

VIDUR_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
KBENCH_OPS = ("qkv", "o", "gate_up", "down")
OUT = Path(__file__).resolve().parent.parent / "specsim" / "timing" / "data" / "sustained_gemm.csv"


def _vidur(path: Path, device: str, gpu: str, model: str) -> pd.DataFrame:
    d = pd.read_csv(path)
    d = d[d["num_tensor_parallel_workers"] == 1]
    h, f = d["n_embd"].iloc[0], d["n_expanded_embd"].iloc[0]
    heads, kv = d["n_head"].iloc[0], d["n_kv_head"].iloc[0]
    weights = h * (heads + 2 * kv) * (h // heads) + h * h + h * f * (2 if d["use_gated_mlp"].iloc[0] else 1) + f * h
    ms = sum(d[f"time_stats.{op}.median"] for op in VIDUR_OPS)
    return pd.DataFrame(
        {
            "device": device,
            "gpu": gpu,
            "source": "microsoft/vidur@7d47513 " + path.name.replace("vidur_", "").replace("_mlp.csv", "") + " mlp.csv",
            "model": model,
            "m": d["num_tokens"].astype(int),
            "ms": ms.round(4),
            "tflops": (2 * d["num_tokens"] * weights / ms / 1e9).round(1),
        }
    )


def _kbench(path: Path) -> pd.DataFrame:
    d = pd.read_csv(path)
    d = d[(d["kind"] == "gemm") & (d["model"] == "llama-3.1-8b") & d["op"].isin(KBENCH_OPS)]
    d = d.assign(flop=2 * d["m"] * d["n"] * d["k"])
    g = d.groupby("m")[["ms", "flop"]].sum().reset_index()
    return pd.DataFrame(
        {
            "device": "h200_sxm",
            "gpu": "NVIDIA H200",
            "source": "specsim H200 measurement 2026-11-30 kbench.csv (torch 2.11.0+cu130)",
            "model": "llama-3.1-8b",
            "m": g["m"].astype(int),
            "ms": g["ms"].round(4),
            "tflops": (g["flop"] / g["ms"] / 1e9).round(1),
        }
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared")
    args = ap.parse_args(argv)
    timings = args.shared / "data" / "public-kernel-timings"
    frame = pd.concat(
        [
            _vidur(timings / "vidur_a100_llama-3-8b_mlp.csv", "a100_sxm", "NVIDIA A100 80GB", "llama-3-8b"),
            _vidur(timings / "vidur_h100_llama-2-7b_mlp.csv", "h100_sxm", "NVIDIA H100", "llama-2-7b"),
            _kbench(args.shared / "data" / "h200-2026-11-30" / "kbench.csv"),
        ]
    ).sort_values(["device", "m"], kind="stable")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(OUT, index=False)
    for device, rows in frame.groupby("device"):
        big = rows[rows["m"] >= SUSTAINED_FROM_TOKENS]
        print(
            f"{device}: {len(rows)} rows; median over m >= {SUSTAINED_FROM_TOKENS}: {big['tflops'].median():.1f} TFLOP/s "
            f"({len(big)} rows)"
        )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
