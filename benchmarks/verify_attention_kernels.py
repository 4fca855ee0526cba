"""Public kernel timings of MLA decode attention at 1 and 4 query tokens a sequence, against specsim's roofline: data
from outside the corpus for the two leads of the B200 TensorRT-LLM and MI355X SGLang misses.

specsim prices a pass's attention as the KV cache read once at the profile's bandwidth (``bandwidth_eff`` x peak), or
its arithmetic at the profile's rate, whichever is longer, whatever the query tokens a sequence (1 for a decode, 4 for
the verification of 3 MTP steps).  The B200 report's lead is that TensorRT-LLM's trtllm-gen kernel reads the cache once
per query token; the MI355X report's lead is that aiter's persistent assembly kernel runs far below the roofline.
Printed here, each against the same roofline:

1. B200, one query token, 16 heads (a TP 8 rank of DeepSeek-R1), FP8 cache: aiconfigurator-core 0.12.0's
   ``b200_sxm/mla/trtllm/1.3.0rc20/generation_mla_perf`` (the package specsim pins; kernel microbenchmarks, not the
   corpus's serving runs).
2. B200, four query tokens, 16 heads, FP8 cache, 80k context: vllm-project/vllm#41778 (2026-05-06, trtllm-gen through
   FlashInfer beside a kernel that reads the cache once for all four tokens), over (1) interpolated to 80k.
3. B200, trtllm-gen grouped-query decode (16 query heads on one KV head, head_dim 128, FP8, batch 128, 16-20k
   context) at 1-4 query tokens: flashinfer-ai/flashinfer#2350 (2026-01-14).
4. MI355X, aiter's assembly MLA decode at 128 query rows (``-n 128,1``), ROCm/aiter#3072 (2026-05-07, the rows the
   pull request shows), per cached token per layer, against the excess the MI355X report found in the plain arm.

Transcribed numbers carry their source beside them.  Nothing here is fitted or read from the corpus.

    python benchmarks/verify_attention_kernels.py

Written for docs/reports/2026-12-06-independent-data-addendum.md.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.timing.kernel_db import database_root

# vllm-project/vllm#41778, "MTP-3 (q_len=4), kv_len=80k, num_heads=16": batch -> (trtllm-gen us, tokenspeed us).
VLLM_41778_Q4_80K = {
    4: (89, 112),
    8: (181, 112),
    16: (336, 176),
    32: (655, 318),
    64: (1420, 610),
    128: (2623, 1218),
    256: (4855, 2693),
}
VLLM_41778_CONTEXT = 80_000
# flashinfer-ai/flashinfer#2350: trtllm_batch_decode_with_kv_cache on a B200, batch 128, FP8, q_ctx -> us.
FLASHINFER_2350 = {1: 96.9, 2: 119.1, 3: 159.8, 4: 209.2}
# ROCm/aiter#3072, "Performance - m16x8 (-n 128,1, MI355)", ASM column: (batch, context) -> us.
AITER_3072_ASM = {
    (1, 8192): 29.806,
    (16, 8192): 52.138,
    (16, 23333): 109.965,
    (32, 23333): 199.795,
    (64, 23333): 403.895,
    (128, 23333): 724.364,
    (256, 23333): 1422.0,
}
# docs/reports/2026-12-06-amd-calibrated-miss.md: the MI355X plain arm's attention beyond the model, ns per cached
# token per sequence per step at 32 users (61 layers).
MI355X_PLAIN_EXCESS_NS_PER_STEP = 32.0


def _rank(heads: int):
    """DeepSeek-V3's shape at ``heads`` query heads a rank and an FP8 cache."""
    model = get_model("deepseek-v3")
    return dataclasses.replace(model, tp=model.n_heads // heads, kv_dtype="fp8")


def roofline_s(hardware, model, batch, context, q=1):
    """One layer's attention on one rank by specsim's roofline: the cache read once (``ModelShape.kv_bytes``), or the
    arithmetic of q tokens over it (``ModelShape.attention_flop``, at the rate the roofline gives attention), seconds."""
    read = batch * model.kv_bytes(context) / hardware.bytes_per_s
    math = batch * q * model.attention_flop(context) / hardware.flop_per_s
    return np.maximum(read, math) / model.n_full_layers


def b200_one_token() -> pd.DataFrame:
    """Item 1: the measured table (batch x context, seconds) at 16 heads and an FP8 cache."""
    path = database_root() / "b200_sxm" / "mla" / "trtllm" / "1.3.0rc20" / "generation_mla_perf.parquet"
    frame = pd.read_parquet(path)
    frame = frame[(frame["num_heads"] == 16) & (frame["kv_cache_dtype"] == "fp8")]
    return frame.pivot_table(index="batch_size", columns="step", values="latency", aggfunc="mean") * 1e-3


def main() -> int:
    b200, mi355x = load_hardware("b200"), load_hardware("mi355x")
    tp8 = _rank(16)
    table = b200_one_token()
    print(
        "1. B200, 1 query token, 16 heads, FP8 cache: measured / roofline (aiconfigurator-core 0.12.0, TRT-LLM 1.3.0rc20)"
    )
    batches = [4, 8, 16, 32, 64, 128, 256]
    print("   context " + "".join(f"{'b' + str(b):>8}" for b in batches))
    for context in (1023, 2047, 4095, 8191, 65535):
        cells = [table.loc[b, context] / roofline_s(b200, tp8, b, context) for b in batches]
        print(f"   {context:>7} " + "".join(f"{c:>8.2f}" for c in cells))

    print(f"\n2. B200, 4 query tokens, 16 heads, FP8, {VLLM_41778_CONTEXT} context (vllm-project/vllm#41778)")
    print("   batch  trtllm-gen us  1 token us (1, interpolated)  ratio  / roofline  one-read kernel / roofline")
    known = np.array([65535.0, 131071.0])
    for b, (trtllm_us, once_us) in VLLM_41778_Q4_80K.items():
        one = table.loc[b, known].to_numpy(float)
        one_s = (
            one[0] * VLLM_41778_CONTEXT / known[0] if np.isnan(one[1]) else np.interp(VLLM_41778_CONTEXT, known, one)
        )
        roof = roofline_s(b200, tp8, b, VLLM_41778_CONTEXT, q=4)
        print(
            f"   {b:>5}  {trtllm_us:>13}  {one_s * 1e6:>26.0f}  {trtllm_us * 1e-6 / one_s:>5.2f}"
            f"  {trtllm_us * 1e-6 / roof:>10.2f}  {once_us * 1e-6 / roof:>26.2f}"
        )

    print("\n3. B200, trtllm-gen grouped-query decode, batch 128, 16-20k context (flashinfer-ai/flashinfer#2350)")
    for q, us in FLASHINFER_2350.items():
        extra = f"{(us / FLASHINFER_2350[1] - 1.0) / (q - 1):.2f}" if q > 1 else "-"
        print(
            f"   q {q}: {us:6.1f} us, x{us / FLASHINFER_2350[1]:.2f} of q 1; each token beyond the first {extra} reads"
        )

    print("\n4. MI355X, aiter assembly MLA decode, 128 query rows (ROCm/aiter#3072), per cached token per layer")
    tp1 = _rank(128)
    model_ns = tp8.kv_bytes_per_token_per_layer / mi355x.bytes_per_s * 1e9
    implied_ns = model_ns + MI355X_PLAIN_EXCESS_NS_PER_STEP / tp8.n_layers
    print(f"   the model at 16 heads: {model_ns:.3f} ns; the MI355X plain arm at 32 users implies {implied_ns:.3f} ns")
    for (b, context), us in AITER_3072_ASM.items():
        per_token_ns = us * 1e3 / (b * context)
        roof = roofline_s(mi355x, tp1, b, context)
        print(
            f"   batch {b:>3}, context {context:>5}: {us:8.1f} us = {per_token_ns:.3f} ns a cached token,"
            f" x{us * 1e-6 / roof:.2f} the roofline at 128 heads"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
