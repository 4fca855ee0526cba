"""Per-step times composed from public, measured GPU kernel latencies.

There is no GPU on the development machine; ``shared/data/public-kernel-timings``
holds vLLM kernel latencies measured by ai-dynamo/aiconfigurator (Apache-2.0):
bf16 GEMMs y[m, n] = x[m, k] W[k, n] on a grid of (m, n, k), and one-query
decode attention on a grid of (batch, kv_len, heads, KV heads, head_dim), for
H100 SXM, H200 and A100 SXM 80 GB.

A decode or verification pass of b sequences with q new tokens each, over L
cached tokens, is composed as

    n_layers * (GEMM_qkv + GEMM_o + GEMM_gate_up + GEMM_down + attention) + GEMM_lm_head

with every GEMM at m = b * q tokens (QKV: k = hidden, n = (heads + 2 kv_heads)
* head_dim; O: k = heads * head_dim, n = hidden; gate/up fused: n = 2 *
intermediate; down: k = intermediate; LM head: n = vocab) and attention at
(b, L).  For q > 1 the attention term is the one-query decode kernel at
(b, L): it reads the same KV bytes, which is what bounds it, but does not time
the extra queries' FLOPs.  Norms, rotary embeddings, the activation and
residual adds are not in the data and not in the sum; neither is any CPU
launch or scheduler time.

GEMM shapes between grid points are interpolated linearly in (m, n, k) between
the neighbouring measured points, never extrapolated; n beyond the grid's
largest value (the LM head's 128,256) is split into equal pieces that fit.
Attention is read at measured grid points only (the composed contexts are the
grid's kv_len values 511 ... 8191), and configurations the data do not cover
are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .models import ModelShape

__all__ = ["DEVICE_FILES", "KernelTables", "compose_steps", "load_tables"]

#: Device -> (GEMM file, attention file, device string), in shared/data/public-kernel-timings.
DEVICE_FILES = {
    "h100-sxm": ("h100_sxm_vllm0.24.0_gemm_bf16.csv", "h100_sxm_vllm0.24.0_decode_attention_bf16.csv"),
    "h200": ("h200_sxm_vllm0.24.0_gemm_bf16.csv", "h200_sxm_vllm0.24.0_decode_attention_bf16.csv"),
    "a100-sxm-80gb": ("a100_sxm_vllm0.14.0_gemm_bf16.csv", "a100_sxm_vllm0.14.0_decode_attention_bf16.csv"),
}


@dataclass
class KernelTables:
    """Interpolating lookups over one device's GEMM and decode-attention timings."""

    device: str
    device_name: str
    gemm_axes: tuple[np.ndarray, np.ndarray, np.ndarray]
    gemm_ms: np.ndarray  # (m, n, k) grid, NaN where not measured
    attention: pd.DataFrame  # indexed by (num_heads, num_key_value_heads, head_dim, batch_size, kv_len)
    sources: tuple[str, str]

    def __post_init__(self) -> None:
        from scipy.interpolate import RegularGridInterpolator

        # Built once per device: every GEMM lookup of every composed step uses it.
        self._interp = RegularGridInterpolator(self.gemm_axes, self.gemm_ms, bounds_error=False, fill_value=np.nan)

    def gemm_s(self, m: float, n: int, k: int) -> float:
        """Seconds of one GEMM, interpolated; NaN outside the measured grid or next to a gap."""
        n_max = self.gemm_axes[1][-1]
        pieces = int(np.ceil(n / n_max))
        value = float(self._interp([[m, n / pieces, k]])[0])
        return pieces * value * 1e-3

    def attention_s(self, shape: ModelShape, batch: int, kv_len: int) -> float:
        """Seconds of one layer's decode attention at a measured grid point, else NaN."""
        key = (shape.n_heads, shape.n_kv_heads, shape.head_dim, batch, kv_len)
        try:
            return float(self.attention.loc[key, "latency_ms"]) * 1e-3
        except KeyError:
            return float("nan")


def load_tables(device: str, folder: str | Path) -> KernelTables:
    """Read one device's GEMM and attention files from the public-kernel-timings folder."""
    if device not in DEVICE_FILES:
        raise KeyError(f"no public kernel timings for {device!r}; available: {', '.join(DEVICE_FILES)}")
    folder = Path(folder)
    gemm_file, attn_file = DEVICE_FILES[device]
    for name in (gemm_file, attn_file):
        if not (folder / name).is_file():
            raise ValueError(f"public kernel timings file {str(folder / name)!r} does not exist")
    gemm = pd.read_csv(folder / gemm_file)
    attn = pd.read_csv(folder / attn_file)
    # Repeated measurements of one shape, if any, are averaged.
    gemm = gemm.groupby(["m", "n", "k"], as_index=False)["latency_ms"].mean()
    axes = tuple(np.array(sorted(gemm[c].unique()), dtype=float) for c in ("m", "n", "k"))
    grid = np.full(tuple(len(a) for a in axes), np.nan)
    index = [np.searchsorted(a, gemm[c].to_numpy(float)) for a, c in zip(axes, ("m", "n", "k"))]
    grid[tuple(index)] = gemm["latency_ms"].to_numpy()
    attn = attn.groupby(["num_heads", "num_key_value_heads", "head_dim", "batch_size", "kv_len"])[["latency_ms"]].mean()
    device_name = str(pd.read_csv(folder / gemm_file, nrows=1)["device"].iloc[0])
    return KernelTables(device, device_name, axes, grid, attn, (gemm_file, attn_file))


def compose_steps(
    tables: KernelTables,
    shape: ModelShape,
    batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
    tokens_per_seq: tuple[int, ...] = (1, 2, 3, 5, 9),
    contexts: tuple[int, ...] = (511, 1023, 2047, 4095, 8191),
) -> pd.DataFrame:
    """Kernel-sum step times for every covered (b, q, L), in the CSV form ``specsim calibrate`` reads."""
    d, hd, f = shape.hidden_size, shape.head_dim, shape.intermediate_size
    rows = []
    for b in batches:
        for q in tokens_per_seq:
            m = b * q
            gemms = {
                "qkv": tables.gemm_s(m, (shape.n_heads + 2 * shape.n_kv_heads) * hd, d),
                "o": tables.gemm_s(m, d, shape.n_heads * hd),
                "gate_up": tables.gemm_s(m, 2 * f, d),
                "down": tables.gemm_s(m, d, f),
            }
            lm_head = tables.gemm_s(m, shape.vocab_size, d)
            if not all(np.isfinite(v) for v in (*gemms.values(), lm_head)):
                continue
            for L in contexts:
                attention = tables.attention_s(shape, b, L)
                if not np.isfinite(attention):
                    continue
                layer = sum(gemms.values()) + attention
                rows.append({
                    "model": shape.name, "params": shape.params, "n_layers": shape.n_layers, "hidden_size": d,
                    "intermediate_size": f, "n_heads": shape.n_heads, "n_kv_heads": shape.n_kv_heads, "head_dim": hd,
                    "vocab_size": shape.vocab_size, "tie_embeddings": shape.tie_embeddings, "qkv_bias": shape.qkv_bias,
                    "batch": b, "tokens_per_seq": q, "context": L, "dtype": "bf16", "device": tables.device,
                    "device_name": tables.device_name, "step_time_s": shape.n_layers * layer + lm_head,
                    "gemm_s": shape.n_layers * sum(gemms.values()) + lm_head, "attention_s": shape.n_layers * attention,
                    "lm_head_s": lm_head, "source": " + ".join(tables.sources),
                })
    return pd.DataFrame(rows)
