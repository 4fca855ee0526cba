"""What a step time assumes of a model's precision, experts and tensor parallelism, in the lines provenance prints
(every answer's ``-v`` and ``--json``; :meth:`specsim.speculation.deployment.Deployment.provenance`)."""

from __future__ import annotations

from specsim.core.names import given_as
from specsim.describe.hardware import (
    DEQUANT_TILE_TOKENS,
    FP8_MATMUL_SPEEDUP,
    W4A16_COMPUTE_FRACTION,
    WEIGHT_ONLY_DTYPES,
    HardwareProfile,
)

__all__ = ["model_assumptions"]


def model_assumptions(hardware: HardwareProfile, models) -> list[str]:
    """Lines saying how precision, experts and tensor parallelism enter the step times of these models."""
    lines = []
    dtypes = {d for m in models for d in (m.weight_dtype, m.expert_dtype_)}
    if dtypes & {"fp8", "int8"}:
        how = (
            f"{FP8_MATMUL_SPEEDUP:g}x the BF16 rate (median of the kernel database's FP8/BF16 GEMMs)"
            if hardware.peak_fp8_flop_per_s is not None
            else "the 16-bit rate (no 8-bit tensor cores in the profile)"
        )
        lines.append(f"precision: FP8/INT8 matmuls at {how}")
    only = sorted(dtypes & set(WEIGHT_ONLY_DTYPES))
    if only:
        lines.append(
            f"precision: weight-only {'/'.join(only)} GEMMs (16-bit activations) dequantise each weight once per "
            f"{DEQUANT_TILE_TOKENS}-token MMA tile, a full tile at {W4A16_COMPUTE_FRACTION:g}x the 16-bit rate "
            "(Marlin, arXiv:2408.11743; the kernel database's W4A16 fused-MoE at 0.69-1.12 of BF16), so a pass of "
            "few tokens pays a whole tile; the database's int4_wo/int8_wo tables where it has them"
        )
    if any(m.is_moe for m in models):
        rho = max(m.routing_correlation for m in models)
        # as its caller gave each: the target_options key to Python, the flag on the command line (core.names)
        correlation = given_as("target_options['routing_correlation']")
        experts = given_as("target_options['routing_effective_experts']")
        lines.append(
            "experts: a pass reads the distinct experts its tokens route to, E(1-(1-k/E)^tokens) under uniform "
            "routing"
            + (
                f"; a sequence's tokens route alike with correlation {rho:g} ({correlation}; the "
                "fit to public MoE sweeps is 0.2, docs/reports/2026-12-01-routing-default.md)"
                if rho
                else f" (independent routing: the bound; {correlation} 0.2 applies the fit to public MoE sweeps)"
            )
            + (f"; skewed routing set by {experts}" if any(m.routing_effective_experts for m in models) else "")
        )
    tps = sorted({m.tp for m in models if m.tp > 1})
    if tps:
        lines.append(
            f"tensor parallelism: per-GPU shards; 2 all-reduces per layer and a logits all-gather over "
            f"{hardware.interconnect_bytes_per_s / 1e9:.0f} GB/s per direction, {hardware.interconnect_latency_s * 1e6:.1f} us "
            "each (profile), or the kernel database's measured all-reduce"
        )
    return lines
