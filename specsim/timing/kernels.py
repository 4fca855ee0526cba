"""Step times composed from NVIDIA AIConfigurator's measured kernel database.

``aiconfigurator-core`` (Apache-2.0, pinned at :data:`AIC_VERSION`) ships
latencies of real GPU kernels measured per device and per serving engine
(vLLM, SGLang, TensorRT-LLM) under ``aiconfigurator_core/systems/data``.  This
module reads those files directly (the SDK's per-operator query costs about
15 ms and returns one number; the files give a whole grid at once) and composes
a forward pass of ``b`` sequences with ``q`` new tokens each over ``L`` cached
tokens as

    t(b, q, L) = G(b q)                                        GEMMs
               + n_layers * A_decode(b, L + q)                 attention, KV read
               + 4 n_layers n_heads head_dim (q - 1) (L + q) b / R_ctx
                                                               extra queries

* ``G(m)``: every weight GEMM of the pass at ``m = b q`` tokens, summed over
  the layers (QKV, O, gate+up, down) plus the LM head, each read from the
  measured (m, n, k) grid by linear interpolation in n and k, then linear in
  m between measured m.  The LM head's n (the vocabulary) is split into equal
  pieces inside the grid.  GEMMs at ``m = b (gamma + 1)`` run far below peak
  for m = 8..256; this is what makes verification dearer than a decode step
  long before the whole-pass roofline's ridge.  Where the database's 16-bit
  GEMMs outrun the rate measured for that GPU with GEMMs timed one after
  another as an engine runs them
  (:func:`~specsim.timing.kernel_db.sustained_matmul_flop_per_s`: A100,
  H100, H200), ``G(m)`` is held to that rate: ``G(m) >= 2 m W / R``, W the
  pass's weights.  Below a few hundred tokens the database is slower than
  that and is kept.
* ``A_decode(b, L)``: the engine's decode-attention kernel (one query per
  sequence) for the model's (heads, KV heads, head_dim) and KV dtype, bilinear
  in (b, L) between measured points.
* Extra queries: a verification pass puts ``q`` queries per sequence on the
  same KV.  Their QK^T and PV FLOP are costed at ``R_ctx``, the best FLOP rate
  the engine's context-attention (prefill) kernel reaches for this head shape
  in the database: the extra queries ride in the same kernel, so they cost
  their arithmetic, not another pass over the KV cache.

* Mixture of experts: the routed experts of each MoE layer are the engine's
  fused-MoE kernel measured at ``m`` tokens (``moe`` tables), for the model's
  experts, top-k, sizes, tensor-parallel size and expert dtype.  The database
  measures it under "balanced" routing, where a pass reads ``min(E, m k)``
  experts; the routing here is the roofline's, ``E (1 - (1 - k/E)^m)``
  distinct experts (uniform, or over ``routing_effective_experts``), up to
  1.6x fewer in between (Qwen3-30B-A3B at m = 16: 82 vs 128).  A kernel at
  these sizes is paced by the experts it reads, so the layer at ``m`` tokens
  is the balanced measurement at the token count that reads as many experts,
  plus what the measurements add once every expert is read
  (:func:`_moe_uniform`).  The database's power-law rows are not used: its
  generator switches regime where ``m k`` passes ``E``, which puts a step in
  the measured line that is not in any engine.
* Tensor parallelism: every GEMM at its per-rank shape, attention at the
  per-rank head counts, and ``2 n_layers`` all-reduces of the ``m x hidden``
  activations from the engine's measured all-reduce latencies at that TP
  size (``comm`` tables; the profile's link figures where absent), plus the
  roofline's all-gather of the logits.
* Sliding-window layers read the decode-attention table at ``min(L, window)``.
* Multi-head latent attention (DeepSeek-V3, Kimi-K2) reads the engine's MLA
  kernel tables (the attention kernel at the rank's heads; its projections are
  GEMMs like any other); an engine with none (vLLM's are whole-block timings)
  gets the roofline, with a note.

Norms, rotary embeddings, activations and residual adds are not in the
database and not in the sum; neither is any CPU time (see
:mod:`specsim.engines` for the engine's per-iteration time).

Points outside the measured data (a batch or context beyond the grid, a head
shape or dtype the database lacks) are never extrapolated: they get the
roofline's answer and are flagged in ``StepTime.fallback``; the source's
``notes`` say which.  Each (device, engine, model shape, database version)
table is built once, cached on disk as JSON (written atomically; a file
that fails to load or validate is rebuilt) and evaluated in numpy.  A
process reads each database file once, in the columns tables use, and
derives what tables of one device and engine share (the GEMM grid of a
dtype, an attention shape's rows, a MoE layer's line) once
(:func:`~specsim.timing.kernel_db.read_frame`).  A cache
folder that cannot be read or written (read-only, full, a symlink loop) never
fails the answer: the table is built in memory and a note says so once.  A
writer killed mid-write leaves its staging file (``.kernels-<crc>.json.<random>.tmp``);
staging files older than :data:`STALE_STAGING_S`, far longer than any write
takes, are removed the next time the folder is used.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys  # noqa: F401 (tests empty kernels.sys.path to hide the database's dist-info)
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from specsim.describe.hardware import HardwareProfile
from specsim.describe.models import ModelShape
from specsim.timing._grid import interp_grid, lower_hull, suffix_min
from specsim.timing.base import StepTime
from specsim.timing.roofline import step_time

__all__ = [
    "AIC_DISTRIBUTION",
    "AIC_VERSION",
    "DEVICE_FOLDERS",
    "KernelDataError",
    "KernelEnvironmentError",
    "KernelSource",
    "KernelTable",
    "build_table",
    "compose_steps",
    "cache_dir",
    "clear_stale_staging",
    "database_root",
    "database_version",
    "device_folder",
]

from specsim.timing.kernel_db import (  # noqa: F401 (re-exported: tests and callers reach them through this module)
    AIC_DISTRIBUTION,
    AIC_VERSION,
    BACKENDS,
    DEVICE_FOLDERS,
    STALE_STAGING_S,
    KernelDataError,
    KernelEnvironmentError,
    _newest,
    cache_dir,
    cache_file,
    clear_stale_staging,
    database_root,
    database_version,
    device_folder,
    gemm_grid,
    holding,
    read_frame,
    releases_holding,
    require_engine_data,
    sustained_matmul_flop_per_s,
    sustained_matmul_source,
)

_SWEPT: set = set()  # cache folders already cleared of stale staging files in this process

#: Model storage dtype -> the database's GEMM dtype; KV dtype -> attention kv_cache_dtype.
#: Weight-only GEMMs (W4A16, W8A16) are measured only for the A100 and TensorRT-LLM 1.0.0 (int4_wo, int8_wo) and for
#: SGLang's int8_wo on the H100 in aiconfigurator-core 0.12.0; elsewhere the roofline prices them, dequantisation included.
_GEMM_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8", "int4": "int4_wo", "w8a16": "int8_wo"}
_KV_DTYPES = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}
#: Expert storage dtype -> the database's MoE dtypes, in order of preference.
#: FP8 prefers the block-scaled kernels: Qwen3's and DeepSeek-V3's FP8 checkpoints are 128x128 block-scaled.
_MOE_DTYPES = {
    "bf16": ("bfloat16",),
    "fp16": ("bfloat16",),
    "fp8": ("fp8_block", "fp8"),
    "mxfp4": ("w4a16_mxfp4",),
    "int4": ("int4_wo",),
}
#: The columns of each database table a table reads (:func:`~specsim.timing.kernel_db.read_frame`; those a file lacks,
#: as ``window_size`` in an older attention table, are left out): aiconfigurator-core 0.12.0's names.
_GEMM_COLUMNS = ("gemm_dtype", "m", "n", "k", "latency")
_ATTENTION_COLUMNS = (
    "batch_size",
    "isl",
    "step",
    "num_heads",
    "num_key_value_heads",
    "head_dim",
    "kv_cache_dtype",
    "window_size",
    "beam_width",
    "latency",
)
_MOE_COLUMNS = (
    "hidden_size",
    "inter_size",
    "topk",
    "num_experts",
    "moe_tp_size",
    "moe_ep_size",
    "distribution",
    "moe_dtype",
    "num_tokens",
    "latency",
)
_COMM_COLUMNS = ("num_gpus", "allreduce_dtype", "backend", "implementation", "message_size", "latency")
_GDN_COLUMNS = (
    "phase",
    "num_k_heads",
    "num_v_heads",
    "head_k_dim",
    "head_v_dim",
    "num_tokens",
    "batch_size",
    "kernel_source",
    "latency",
)
_SCHEMA = 14  # bump when the table layout or the composition changes
#: Shape fields of the hybrid, chunked and interleaved layouts that change a table.
_LAYOUT_FIELDS = (
    "n_chunked_layers",
    "attention_chunk_size",
    "n_recurrent_layers",
    "recurrent_kind",
    "rec_heads",
    "rec_head_dim",
    "rec_state_dim",
    "rec_groups",
    "rec_conv_kernel",
    "recurrent_verify",
    "n_mixer_free_layers",
    "n_ffn_free_layers",
    "moe_latent_size",
    "routing_correlation",
    "shared_expert_size",
    "gated_mlp",
    "attn_output_gate",
    "qk_norm_all_heads",
    "shared_expert_gate",
)


#: The array fields of a :class:`KernelTable` its cache file holds (with ``ctx_flop_per_s`` and ``meta``).
_CACHED_ARRAYS = (
    "gemm_m",
    "gemm_s",
    "attn_b",
    "attn_L",
    "attn_s",
    "prefill_isl",
    "prefill_attn_s",
    "attn_scaled",
    "comm_elems",
    "comm_s",
    "rec_b",
    "rec_s",
    "moe_m",
    "moe_s",
    "gemm_hull_s",
)


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class KernelTable:
    """One model's composed kernel times on one device and engine, per tensor-parallel rank.

    ``gemm_s[i]``: every GEMM of a pass at ``gemm_m[i]`` tokens, the routed
    experts of MoE layers included (measured fused-MoE kernels).
    ``attn_s[i, j]``: decode attention of *one* layer at ``attn_b[i]``
    sequences and ``attn_L[j]`` cached tokens (NaN where not measured);
    :meth:`decode_attention` sums the layers, local layers at their window.
    ``ctx_flop_per_s``: best measured context-attention FLOP rate.
    ``prefill_attn_s[j]``: context attention of one layer for one sequence of
    ``prefill_isl[j]`` tokens.  ``comm_elems`` / ``comm_s``: measured
    all-reduce latency against message size (16-bit elements) at the model's
    tensor-parallel size (empty on one device).
    """

    gemm_m: np.ndarray
    gemm_s: np.ndarray
    attn_b: np.ndarray
    attn_L: np.ndarray
    attn_s: np.ndarray
    ctx_flop_per_s: float
    prefill_isl: np.ndarray
    prefill_attn_s: np.ndarray
    meta: dict
    #: 1 where a decode-attention cell was scaled in batch, not measured (see ``_fill_by_batch``).
    attn_scaled: np.ndarray | None = None
    comm_elems: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    comm_s: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    #: One recurrent layer's measured decode (recurrence and convolution update) against batch; empty where absent.
    rec_b: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    rec_s: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    #: One MoE layer's measured fused-MoE kernel under balanced routing against tokens (empty for a dense model):
    #: what re-prices the experts of a pass whose sequences route alike (``routing_correlation``).
    moe_m: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    moe_s: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    #: ``gemm_s`` without tile quantisation (:meth:`gemm_hull`): the weight GEMMs' line at its lower convex hull, the
    #: routed experts as measured; None: the hull of ``gemm_s``.
    gemm_hull_s: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("gemm_m", "gemm_s", "attn_b", "attn_L", "prefill_isl", "prefill_attn_s"):
            arr = getattr(self, name)
            if arr.ndim != 1:
                raise ValueError(f"kernel table: {name} must be one-dimensional")
        if self.gemm_m.size < 2 or self.gemm_m.shape != self.gemm_s.shape or np.any(np.diff(self.gemm_m) <= 0):
            raise ValueError("kernel table: GEMM grid must be increasing with at least two points")
        if self.attn_s.shape != (self.attn_b.size, self.attn_L.size) or self.attn_b.size < 2 or self.attn_L.size < 2:
            raise ValueError("kernel table: attention grid does not match its axes")
        if np.any(np.diff(self.attn_b) <= 0) or np.any(np.diff(self.attn_L) <= 0):
            raise ValueError("kernel table: attention axes must be increasing")
        if not (np.all(np.isfinite(self.gemm_s)) and np.all(self.gemm_s > 0)):
            raise ValueError("kernel table: GEMM times must be finite and positive")
        if self.gemm_hull_s is None:  # a frozen dataclass's derived field, set once here
            object.__setattr__(self, "gemm_hull_s", lower_hull(self.gemm_m, self.gemm_s))
        if self.gemm_hull_s.shape != self.gemm_s.shape or not np.all(
            (self.gemm_hull_s > 0) & (self.gemm_hull_s <= self.gemm_s)
        ):
            raise ValueError("kernel table: the untiled GEMM line must be positive and at most the GEMM line")
        finite = self.attn_s[np.isfinite(self.attn_s)]
        if finite.size == 0 or np.any(finite <= 0):
            raise ValueError("kernel table: attention times must be positive where measured")
        if self.attn_scaled is not None and self.attn_scaled.shape != self.attn_s.shape:
            raise ValueError("kernel table: scaled-cell mask does not match the attention grid")
        if not (np.isfinite(self.ctx_flop_per_s) and self.ctx_flop_per_s > 0):
            raise ValueError("kernel table: context-attention FLOP rate must be positive")
        if self.comm_elems.shape != self.comm_s.shape or (
            self.comm_elems.size and (np.any(np.diff(self.comm_elems) <= 0) or not np.all(self.comm_s > 0))
        ):
            raise ValueError("kernel table: all-reduce grid must be increasing with positive times")

    def save(self, path: Path) -> None:
        """Write the table as JSON: floats print their shortest exact form, so every value reads back bit for bit (NaN
        included); JSON holds no code, and reading it needs neither zipfile nor a pickle."""
        from specsim.core.files import atomic_write_bytes

        arrays = {name: getattr(self, name) for name in _CACHED_ARRAYS}
        if self.attn_scaled is None:
            arrays["attn_scaled"] = np.zeros(self.attn_s.shape)
        doc = {
            "meta": self.meta,
            "ctx_flop_per_s": float(self.ctx_flop_per_s),
            **{name: np.asarray(value, float).tolist() for name, value in arrays.items()},
        }
        atomic_write_bytes(path, json.dumps(doc, sort_keys=True).encode())

    @classmethod
    def load(cls, path: Path, expected_meta: dict) -> "KernelTable":
        """Read a cached table; raises ValueError if it is damaged or was built for something else."""
        doc = json.loads(path.read_text(encoding="utf-8"))
        meta = doc.get("meta") if isinstance(doc, dict) else None
        if not isinstance(meta, dict):
            raise ValueError("not a kernel table")
        if {k: meta.get(k) for k in expected_meta} != expected_meta:
            raise ValueError("cached kernel table was built for another model, device or database")
        return cls(
            ctx_flop_per_s=float(doc["ctx_flop_per_s"]),
            meta=meta,
            **{name: np.array(doc[name], dtype=float) for name in _CACHED_ARRAYS},
        )

    # -- evaluation ---------------------------------------------------------
    def gemm(self, m: np.ndarray) -> np.ndarray:
        """All GEMMs of a pass at ``m`` tokens, seconds; NaN outside the measured m."""
        return np.interp(m, self.gemm_m, self.gemm_s, left=np.nan, right=np.nan)

    def gemm_hull(self, m: np.ndarray) -> np.ndarray:
        """All GEMMs of a pass at ``m`` tokens without tile quantisation, seconds; NaN outside the measured m.

        A GEMM without quantisation takes the larger of its weights' read and its FLOP (plus a launch): a convex
        function of m.  Tiles and waves only add to it (a partial tile or wave costs a whole one: the H100's 8B line
        rises 5.5% from m = 160 to 161), so the greatest convex function under the measured line, its lower convex
        hull, is that line without them.  The routed experts are added as measured: the experts a pass reads grow
        concavely with m (:func:`_moe_uniform`), which a hull would cut.
        """
        return np.interp(m, self.gemm_m, self.gemm_hull_s, left=np.nan, right=np.nan)

    def _layers(self) -> tuple[int, int, float]:
        shape = self.meta["shape"]
        n_sliding = int(shape.get("n_sliding_layers", 0))
        attention = int(shape.get("n_attention_layers", shape["n_layers"])) - int(shape.get("n_chunked_layers", 0))
        return attention - n_sliding, n_sliding, float(shape.get("sliding_window", 0))

    def _local(self, L: np.ndarray) -> np.ndarray:
        return np.minimum(L, self._layers()[2])

    def decode_attention(self, b: np.ndarray, L: np.ndarray) -> np.ndarray:
        """Decode attention of all layers, bilinear in (b, L); local layers read min(L, window), chunked layers
        L mod chunk; NaN outside."""
        n_full, n_sliding, _ = self._layers()
        axes = (self.attn_b, self.attn_L)
        out = n_full * interp_grid(axes, self.attn_s, [b, L])
        if n_sliding:
            out = out + n_sliding * interp_grid(axes, self.attn_s, [b, self._local(np.asarray(L, float))])
        chunked, chunk = (
            int(self.meta["shape"].get("n_chunked_layers", 0)),
            self.meta["shape"].get("attention_chunk_size", 0),
        )
        if chunked:
            within = np.maximum(np.mod(np.asarray(L, float), chunk), self.attn_L[0])  # the table's smallest context
            out = out + chunked * interp_grid(axes, self.attn_s, [b, within])
        return out

    def recurrence(self, b: np.ndarray) -> np.ndarray:
        """One recurrent layer's measured decode step at ``b`` sequences (log-log in b); NaN without data or outside."""
        if self.rec_b.size < 2:
            return np.full(np.shape(b), np.nan)
        x = np.log(np.asarray(b, float))
        return np.exp(np.interp(x, np.log(self.rec_b), np.log(self.rec_s), left=np.nan, right=np.nan))

    def uses_scaled_attention(self, b: np.ndarray, L: np.ndarray) -> np.ndarray:
        """True where the decode-attention answer leans on a cell scaled in batch."""
        shape = np.broadcast_shapes(np.shape(b), np.shape(L))
        if self.attn_scaled is None or not self.attn_scaled.any():
            return np.zeros(shape, bool)
        # A point leans on a scaled cell only past the last batch below the first scaled one.
        first = int(np.argmax(self.attn_scaled.any(axis=1)))
        if first > 0 and np.max(b) <= self.attn_b[first - 1]:
            return np.zeros(shape, bool)
        return np.nan_to_num(interp_grid((self.attn_b, self.attn_L), self.attn_scaled, [b, L])) > 0

    def prefill_attention(self, isl: np.ndarray) -> np.ndarray:
        """Context attention of all layers for one sequence of ``isl`` tokens; NaN outside.

        A local layer attends over at most its window: its cost is the measured
        cost at ``min(isl, window)`` tokens, scaled by ``isl / min(isl, window)``.
        """
        if self.prefill_isl.size < 2:
            return np.full(np.shape(isl), np.nan)
        isl = np.asarray(isl, float)
        one = lambda n: np.interp(n, self.prefill_isl, self.prefill_attn_s, left=np.nan, right=np.nan)  # noqa: E731
        n_full, n_sliding, _ = self._layers()
        out = n_full * one(isl)
        if n_sliding:
            local = self._local(isl)
            out = out + n_sliding * one(local) * isl / np.maximum(local, 1.0)
        return out

    def allreduce(self, elems: np.ndarray) -> np.ndarray:
        """Measured all-reduce of ``elems`` 16-bit values, log-log interpolated; NaN outside or without data."""
        if self.comm_elems.size < 2:
            return np.full(np.shape(elems), np.nan)
        x = np.log(np.maximum(np.asarray(elems, float), 1.0))
        return np.exp(np.interp(x, np.log(self.comm_elems), np.log(self.comm_s), left=np.nan, right=np.nan))


def _cached_missing(path: Path, meta: dict) -> str | None:
    """Why the database composes no table for ``meta``, where the cache file at ``path`` records that; None where it
    holds a table (or cannot be read: the caller reads it as a table, and rebuilds what it cannot).  Tables are a few
    kB of JSON: reading one twice costs less than a millisecond."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("missing"), str) or doc.get("meta") != meta:
        return None
    return doc["missing"]


# -- building a table from the database files --------------------------------
def _gemm_line(model: ModelShape, gemm, where: str, sustained: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(m, G(m)): the pass's weight GEMMs (the routed experts apart) at m tokens, no faster than ``sustained`` FLOP/s
    where given (:func:`~specsim.timing.kernel_db.sustained_matmul_flop_per_s`).  ``gemm``: the rows of a GEMM table
    (m, n, k, latency), or their :func:`~specsim.timing.kernel_db.gemm_grid` (read once per process)."""
    axes, grid = gemm if isinstance(gemm, tuple) else gemm_grid(gemm)
    n_max = axes[1][-1]
    # (n, k, count per pass) of every weight GEMM on one rank, from the model's one list of operations; the routed
    # experts are priced by the fused-MoE tables instead (build_table), the embedding is a gather.
    shapes = [(op.n, op.k, op.count) for op in model.ops() if op.is_matmul and op.part != "expert"]
    m = axes[0]
    total = np.zeros_like(m)
    n_min, k_min = axes[1][0], axes[2][0]
    for n, k, count in shapes:
        pieces = int(np.ceil(n / n_max))
        # A matrix narrower than any measured one (an 8-expert router) costs at least the smallest measured GEMM.
        # The grid's one interpolation (interp_grid): an unmeasured neighbour of zero weight does not blank a point.
        total += count * pieces * interp_grid(axes, grid, [m, max(n / pieces, n_min), float(max(k, k_min))])
    if sustained is not None:  # never faster than GEMMs run back to back (the database's run faster at large m)
        total = np.maximum(total, 2.0 * m * sum(n * k * count for n, k, count in shapes) / sustained)
    ok = np.isfinite(total)
    # Keep the contiguous covered range from the smallest m up; a line needs two points of it.
    stop = int(np.argmin(ok)) if not ok.all() else ok.size
    if stop < 2:
        raise KernelDataError(f"{where}: the GEMM data do not cover this model's matrix shapes")
    return m[:stop].copy(), suffix_min(total[:stop])  # (a copy: the grid's axes are shared)


def _moe_line(model: ModelShape, root: Path, dev: Path, engine: str, where: str):
    """(tokens, seconds, release folder) of one MoE layer's fused routed-expert kernel on one rank, balanced routing:
    from the newest release whose table measured this layer's shape (a release's table can hold other models' shapes
    only: aiconfigurator-core 0.12.0's trtllm 1.3.0rc23 moe tables, DeepSeek-V4's)."""
    folders = releases_holding(dev / "moe" / engine, "moe_perf.parquet")
    if not folders:
        holding(dev / "moe" / engine, "moe_perf.parquet")  # raises: no release holds the table at all, said as such
    shape = (model.hidden_size, model.moe_intermediate_size, model.n_active_experts, model.n_experts, model.tp)
    for folder in reversed(folders):  # (each release's line of a shape found once per process)
        line = read_frame(folder / "moe_perf.parquet", _MOE_COLUMNS, _moe_balanced, *shape, model.expert_dtype_)
        if line is not None:
            return line[0].copy(), line[1].copy(), folder
    raise KernelDataError(
        f"{where}: no fused-MoE measurements for {model.n_experts} experts, top-{model.n_active_experts}, hidden "
        f"{model.hidden_size}, expert size {model.moe_intermediate_size}, TP {model.tp}, {model.expert_dtype_} experts"
    )


def _moe_balanced(frame, hidden: int, inter: int, topk: int, experts: int, tp: int, expert_dtype: str):
    """(tokens, seconds) of one MoE layer's fused kernel under balanced routing in a ``moe_perf`` table's rows of that
    shape, in the first of ``expert_dtype``'s database dtypes with two token counts or more; None where none has."""
    keep = (
        (frame["hidden_size"] == hidden)
        & (frame["inter_size"] == inter)
        & (frame["topk"] == topk)
        & (frame["num_experts"] == experts)
        & (frame["moe_tp_size"] == tp)
        & (frame["moe_ep_size"] == 1)
        & (frame["distribution"] == "balanced")
    )
    for dtype in _MOE_DTYPES.get(expert_dtype, ()):
        rows = frame[keep & (frame["moe_dtype"] == dtype)]
        if len(rows) >= 2:
            line = rows.groupby("num_tokens")["latency"].mean()
            return line.index.to_numpy(float), suffix_min(line.to_numpy(float) * 1e-3)
    return None


def _moe_uniform(
    model: ModelShape, m: np.ndarray, bal_m: np.ndarray, bal_s: np.ndarray, touched: np.ndarray | None = None
) -> np.ndarray:
    """Seconds of one MoE layer at ``m`` tokens under the roofline's routing, from the balanced measurements.

    Balanced routing gives ``m`` tokens ``min(E, m k)`` distinct experts; routing as the roofline has it
    (:meth:`~specsim.describe.shapes.ModelShape.experts_touched`, uniform or over an effective count) gives fewer, D(m).  A
    fused-MoE kernel at these sizes is paced by the experts it reads, so the layer is the balanced kernel at the
    token count that reads D(m) experts, D(m) / k, plus what the balanced kernel adds beyond the point where every
    expert is read (more tokens per expert): t(m) = t_bal(D(m) / k) + max(0, t_bal(m) - t_bal(E / k)).  NaN outside
    the measured tokens.
    """

    def bal(x):
        return np.interp(np.log(x), np.log(bal_m), bal_s, left=np.nan, right=np.nan)

    k = float(model.n_active_experts)
    full = float(model.routing_effective_experts or model.n_experts) / k
    touched = model.experts_touched(m) if touched is None else touched  # a pass's distinct experts (one sequence each)
    reads = bal(np.maximum(touched / k, bal_m[0]))
    beyond = np.maximum(bal(m) - bal(np.full_like(m, min(full, bal_m[-1]))), 0.0)
    return reads + beyond


def _comm_line(model: ModelShape, dev: Path, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """(16-bit elements, seconds) of the engine's measured all-reduce at the model's TP size; empty where absent."""
    empty = (np.zeros(0), np.zeros(0))
    if model.tp == 1:
        return empty
    folders = releases_holding(dev / "comm" / engine, "custom_allreduce_perf.parquet")
    if not folders:
        return empty
    frame = read_frame(folders[-1] / "custom_allreduce_perf.parquet", _COMM_COLUMNS)
    rows = frame[(frame["num_gpus"] == model.tp) & (frame["allreduce_dtype"] == "bfloat16")]
    # the column naming the kernel: "backend", "implementation" in an older schema, or none (aiconfigurator-core
    # 0.12.0's a100_sxm and l40s trtllm 1.0.0 tables: one TensorRT-LLM kernel, every row counts)
    label = next((c for c in ("backend", "implementation") if c in rows.columns), None)
    graph = rows[rows[label].astype(str).str.contains("graph")] if label else rows.iloc[:0]
    rows = graph if len(graph) else rows  # engines capture decode in CUDA graphs where they can
    line = rows.groupby("message_size")["latency"].min()
    if len(line) < 2:
        return empty
    return line.index.to_numpy(float), line.to_numpy(float) * 1e-3


@functools.cache
def _refused_compositions() -> dict:
    """(backend, layer) -> why the database's tables do not compose it (``data/refused_compositions.csv``, judged on
    public serving rows; see ``data/README.md``), read once per process."""
    import csv

    with open(Path(__file__).parent / "data" / "refused_compositions.csv", newline="") as f:
        return {(row["backend"], row["layer"]): row["reason"] for row in csv.DictReader(f)}


def _mla_refused(engine: str) -> str | None:
    """Why ``engine``'s measured kernels do not compose a multi-head latent attention model although the database holds
    its tables, or None."""
    return _refused_compositions().get((engine, "mla"))


def _mla_attention(model: ModelShape, dev: Path, engine: str, where: str):
    """(decode rows, prompt rows, folder) of multi-head latent attention on one rank: the attention kernel alone
    (``generation_mla_perf`` / ``context_mla_perf``; its projections, the absorbed ``kv_b`` products among them, are
    GEMMs of the model's ops), from the newest release of the engine that has those tables, at the rank's heads and
    the KV cache's dtype.  The ``wideep_*`` and ``*_module_*`` tables time whole attention blocks and are not used."""
    folders = releases_holding(dev / "mla" / engine, "generation_mla_perf.parquet")
    if not folders:
        raise KernelDataError(f"{where}: no multi-head latent attention kernels measured for {engine}")
    folder = folders[-1]
    kv, heads = _KV_DTYPES[model.kv_dtype], model.n_heads // model.tp

    def rows(name: str):
        frame = read_frame(folder / name, _ATTENTION_COLUMNS)
        return frame[(frame["num_heads"] == heads) & (frame["kv_cache_dtype"] == kv)]

    gen = rows("generation_mla_perf.parquet")
    if gen.empty:
        raise KernelDataError(
            f"{where}: no multi-head latent attention measurements for {heads} heads per rank, KV {model.kv_dtype}"
        )
    ctx = rows("context_mla_perf.parquet") if (folder / "context_mla_perf.parquet").is_file() else gen.iloc[:0]
    return gen, ctx, folder


def _attention_shape(model: ModelShape) -> tuple:
    """(heads, KV heads, head_dim, KV dtype) of ``model``'s attention on one rank, as the database names them."""
    return model.n_heads // model.tp, max(1, model.n_kv_heads // model.tp), model.head_dim, _KV_DTYPES[model.kv_dtype]


def _attention_rows(frame, heads: int, kv_heads: int, head_dim: int, kv: str):
    """The rows of an attention table at one rank's :func:`_attention_shape` (full attention, one beam)."""
    keep = (
        (frame["num_heads"] == heads)
        & (frame["num_key_value_heads"] == kv_heads)
        & (frame["head_dim"] == head_dim)
        & (frame["kv_cache_dtype"] == kv)
    )
    if "window_size" in frame.columns:
        keep &= frame["window_size"] == 0
    if "beam_width" in frame.columns:
        keep &= frame["beam_width"] == 1
    return frame[keep]


def _decode_grid(frame, *shape) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(batches, contexts, one layer's decode attention at each in seconds, NaN where unmeasured) of a decode-attention
    table's rows (those of :func:`_attention_rows` ``shape`` where given); None where there are none."""
    rows = _attention_rows(frame, *shape) if shape else frame
    if rows.empty:
        return None
    piv = rows.pivot_table(index="batch_size", columns="step", values="latency", aggfunc="mean")
    return piv.index.to_numpy(float), piv.columns.to_numpy(float), piv.to_numpy(float) * 1e-3


def build_table(model: ModelShape, device: str, engine: str, *, root: Path | None = None) -> KernelTable:
    """Compose one model's kernel table from the database files (no cache)."""
    root = database_root() if root is None else root
    where = f"kernel database: {model.name} on {device} ({engine})"
    if model.weight_dtype not in _GEMM_DTYPES or model.kv_dtype not in _KV_DTYPES:
        raise KernelDataError(
            f"{where}: no measurements for weight dtype {model.weight_dtype} / KV dtype {model.kv_dtype}"
        )
    dev = root / device
    if not dev.is_dir():
        raise KernelDataError(f"kernel database has no device folder {device!r}")
    refused = _mla_refused(engine) if model.is_mla else None
    if refused:
        raise KernelDataError(
            f"{where}: multi-head latent attention is not composed from {engine}'s kernels: {refused}"
        )
    gemm_dir = holding(dev / "gemm" / engine, "gemm_perf.parquet")
    if model.is_mla:
        gen, ctx, attn_dir = _mla_attention(model, dev, engine, where)
        decode = _decode_grid(gen)
    else:
        attn_dir = holding(dev / "attention" / engine, "generation_attention_perf.parquet")
        # each shape's rows (its decode grid) found once per process and file, as the GEMMs' grid below
        shape = _attention_shape(model)
        decode = read_frame(attn_dir / "generation_attention_perf.parquet", _ATTENTION_COLUMNS, _decode_grid, *shape)
        ctx = read_frame(attn_dir / "context_attention_perf.parquet", _ATTENTION_COLUMNS, _attention_rows, *shape)
    gemm = read_frame(gemm_dir / "gemm_perf.parquet", _GEMM_COLUMNS, gemm_grid, _GEMM_DTYPES[model.weight_dtype])
    # weight-only tables: the A100's TensorRT-LLM ones only
    if gemm is None and model.weight_dtype in ("int4", "w8a16"):
        raise KernelDataError(
            f"{where}: no measurements for weight dtype {model.weight_dtype} / KV dtype {model.kv_dtype}"
        )
    if gemm is None:
        raise KernelDataError(f"{where}: no {_GEMM_DTYPES[model.weight_dtype]} GEMM measurements")
    gemm_m, gemm_s = _gemm_line(model, gemm, where, _held_rate(model, device))
    gemm_hull_s = lower_hull(gemm_m, gemm_s)  # the weight GEMMs' alone: the routed experts' line is not convex
    moe_m, moe_s, folders = np.zeros(0), np.zeros(0), [gemm_dir, attn_dir]
    if model.is_moe:
        moe_m, moe_s, moe_dir = _moe_line(model, root, dev, engine, where)
        folders.append(moe_dir)
        moe = _moe_uniform(model, gemm_m, moe_m, moe_s)
        inside = np.isfinite(moe)
        if inside.sum() < 2 or not inside[0]:
            raise KernelDataError(f"{where}: the fused-MoE measurements do not cover the GEMM token range")
        stop = int(np.argmin(inside)) if not inside.all() else inside.size
        gemm_m, gemm_s = gemm_m[:stop], gemm_s[:stop] + model.n_moe_layers * moe[:stop]
        gemm_hull_s = gemm_hull_s[:stop] + model.n_moe_layers * moe[:stop]

    if decode is None:
        raise KernelDataError(
            f"{where}: no decode-attention measurements for {model.n_heads} heads, {model.n_kv_heads} KV heads, "
            f"head_dim {model.head_dim}, KV {model.kv_dtype}"
        )
    attn_b, attn_L, attn_s = decode[0].copy(), decode[1].copy(), decode[2]  # (the grid is shared: not modified)
    attn_s, filled = _fill_by_batch(attn_b, suffix_min(attn_s, axis=0))

    if "step" in ctx.columns:
        ctx = ctx[ctx["step"] == 0]  # prefill from an empty cache
    if ctx.empty:
        raise KernelDataError(f"{where}: no context-attention measurements for this head shape")
    isl = ctx["isl"].to_numpy(float)
    if model.is_mla:  # a prompt's uncompressed form, one layer (ModelShape.pass_attention_flop)
        flop = model.pass_attention_flop(0.0, isl) / model.n_full_layers * ctx["batch_size"].to_numpy(float)
    else:
        flop = (
            2.0 * (model.n_heads // model.tp) * model.head_dim * isl * isl * ctx["batch_size"].to_numpy(float)
        )  # causal QK^T + PV
    ctx_rate = float(np.max(flop / (ctx["latency"].to_numpy(float) * 1e-3)))
    one = ctx[ctx["batch_size"] == 1].groupby("isl")["latency"].mean()
    prefill_isl = one.index.to_numpy(float)
    prefill_attn_s = one.to_numpy(float) * 1e-3  # one layer
    comm_elems, comm_s = _comm_line(model, dev, engine)
    rec_b, rec_s = _recurrent_line(model, dev, engine)

    meta = _meta(model, device, engine, database_version())
    meta["recurrence"] = "measured" if rec_b.size else ("none" if not model.is_hybrid else "roofline")
    meta["files"] = [str(p.relative_to(root)) for p in folders]
    meta["attention_cells_scaled_in_batch"] = int(filled.sum())
    meta["allreduce"] = "measured" if comm_elems.size else ("none" if model.tp == 1 else "roofline")
    return KernelTable(
        gemm_m,
        gemm_s,
        attn_b,
        attn_L,
        attn_s,
        ctx_rate,
        prefill_isl,
        prefill_attn_s,
        meta,
        attn_scaled=filled.astype(float),
        comm_elems=comm_elems,
        comm_s=comm_s,
        rec_b=rec_b,
        rec_s=rec_s,
        moe_m=moe_m,
        moe_s=moe_s,
        gemm_hull_s=gemm_hull_s,
    )


def _recurrent_line(model: ModelShape, dev: Path, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """(batch, seconds) of one Gated DeltaNet layer's decode on one rank: the engine's fused recurrent kernel plus its
    causal_conv1d_update, measured at one token per sequence (``linear_attention`` gdn tables, averaged over the model
    widths measured with these head counts); empty for Mamba-2 (the tables have its convolution only) or no data."""
    empty = (np.zeros(0), np.zeros(0))
    if model.recurrent_kind != "gdn":
        return empty
    folders = releases_holding(dev / "linear_attention" / engine, "gdn_perf.parquet")
    if not folders:
        return empty
    frame = read_frame(folders[-1] / "gdn_perf.parquet", _GDN_COLUMNS)
    rows = frame[
        (frame["phase"] == "generation")
        & (frame["num_k_heads"] == model.rec_groups // model.tp)
        & (frame["num_v_heads"] == model.rec_heads // model.tp)
        & (frame["head_k_dim"] == model.rec_state_dim)
        & (frame["head_v_dim"] == model.rec_head_dim)
        & (frame["num_tokens"] == frame["batch_size"])
    ]
    kinds = rows["kernel_source"].astype(str)
    recur = rows[kinds.str.startswith("fused_recurrent")].groupby("batch_size")["latency"].mean()
    conv = rows[kinds == "causal_conv1d_update"].groupby("batch_size")["latency"].mean()
    both = (recur + conv).dropna()
    if len(both) < 2:
        return empty
    return both.index.to_numpy(float), suffix_min(both.to_numpy(float)) * 1e-3


#: Decode attention is scaled linearly in batch past the largest measured batch
#: only from a measured batch at least this large (the GPU is saturated there).
SCALE_FROM_BATCH = 64


def _fill_by_batch(b: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fill cells past the largest measured batch of each context by t(b) = t(b0) b / b0.

    The database stops at shorter contexts for larger batches (memory).  Past
    batch 64 decode attention is bound by KV reads of independent sequences, so
    doubling the batch costs 1.7-1.95x in the measured cells (H100, vLLM):
    linear scaling is mildly conservative.  Filled cells are returned as a mask
    and every answer that uses one says so.
    """
    grid = grid.copy()
    filled = np.zeros(grid.shape, bool)
    for j in range(grid.shape[1]):
        for i in range(1, grid.shape[0]):
            if np.isnan(grid[i, j]) and np.isfinite(grid[i - 1, j]) and b[i - 1] >= SCALE_FROM_BATCH:
                grid[i, j] = grid[i - 1, j] * b[i] / b[i - 1]
                filled[i, j] = True
    return grid, filled


def _held_rate(model: ModelShape, device: str) -> float | None:
    """The rate the 16-bit weight GEMMs of ``model`` are held to on ``device`` (None: FP8 and weight-only GEMMs, whose
    back-to-back rates no shipped timing measures, and devices without one)."""
    return sustained_matmul_flop_per_s(device) if _GEMM_DTYPES.get(model.weight_dtype) == "bfloat16" else None


def _meta(model: ModelShape, device: str, engine: str, version: str) -> dict:
    shape = {
        k: getattr(model, k)
        for k in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "n_layers",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "weight_dtype",
            "kv_dtype",
            "n_experts",
            "n_active_experts",
            "moe_intermediate_size",
            "n_shared_experts",
            "n_dense_layers",
            "kv_lora_rank",
            "sliding_window",
            "n_sliding_layers",
            "tp",
            "routing_effective_experts",
        )
    }
    shape["expert_dtype"] = model.expert_dtype_
    # Fields of the layouts read since issue 29, where they differ from their defaults (older tables keep their keys).
    defaults = {f.name: f.default for f in dataclasses.fields(ModelShape)}
    shape.update({k: getattr(model, k) for k in _LAYOUT_FIELDS if getattr(model, k) != defaults[k]})
    if model.n_attention_layers != model.n_layers:
        shape["n_attention_layers"] = model.n_attention_layers
    meta = {
        "schema": _SCHEMA,
        "database": f"{AIC_DISTRIBUTION} {version}",
        "device": device,
        "engine": engine,
        "shape": shape,
        "sustained_matmul_flop_per_s": _held_rate(model, device),
    }
    if model.is_mla:  # whether the engine composes it at all is part of the table (a table 4b variant lifts it)
        meta["mla_refused"] = _mla_refused(engine)
    return meta


# -- the source ---------------------------------------------------------------
class KernelSource:
    """Step times from the kernel database, with the roofline where the data end.

    Parameters
    ----------
    hardware : HardwareProfile
        The device (mapped to a database folder) and the roofline used for
        points outside the data.
    engine : str
        Whose kernels: one of the database's backends (:data:`~specsim.timing.kernel_db.BACKENDS`).
    progress : callable or None
        Called with a line of text while a table is built (first use only).
    kin : HardwareProfile or None
        Read this device's tables instead of ``hardware``'s (:func:`~specsim.timing.kernel_db.kin_devices`): only for
        the ratio the hybrid takes, never for absolute times; collectives are then the profile's, since a kin
        device's all-reduces ran over another link.
    """

    name = "kernels"
    #: Kernel sums carry no per-pass CPU time: engine presets add their GPU-time value (see EnginePreset.for_source).
    gpu_time_only = True

    def __init__(
        self,
        hardware: HardwareProfile,
        engine: str = BACKENDS[0],
        progress: Callable[[str], None] | None = None,
        kin: HardwareProfile | None = None,
    ):
        if engine not in BACKENDS:
            raise ValueError(
                f"kernel database engine must be {', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}, got {engine!r}"
            )
        self.hardware = hardware
        self.engine = engine
        self.progress = progress
        self.kin = kin
        self.device = device_folder(kin or hardware)
        self.version = database_version()
        require_engine_data(self.device, engine, self.version)
        self.notes: list[str] = []
        self._noted: dict = {}  # key -> the note's text, in the order noted
        self._tables: dict[tuple, KernelTable | None] = {}
        self._by_model: dict[int, tuple] = {}  # id(model) -> (model, its table): the key composed once per model object

    def brief(self) -> str:
        kin = f" (kin of {self.hardware.name})" if self.kin else ""
        return f"{AIC_DISTRIBUTION} {self.version} {self.engine} kernels on {self.device}{kin}"

    def describe(self) -> str:
        kin = (
            f", standing in for {self.hardware.name} (compute capability {self.hardware.compute_capability}, which the "
            f"database lacks; collectives from the profile)"
            if self.kin
            else ""
        )
        rate = sustained_matmul_flop_per_s(self.device)
        held = (
            f"; 16-bit GEMMs held to {rate / 1e12:.0f} TFLOP/s, their rate back to back "
            f"({sustained_matmul_source(self.device)})"
            if rate is not None
            else ""
        )
        return (
            f"kernels: {AIC_DISTRIBUTION} {self.version} measured {self.engine} kernels on {self.device} "
            f"(Apache-2.0){kin}{held}, roofline ({self.hardware.name}) outside the data"
        )

    def _note(self, text: str, key: object = None) -> None:
        """Record a note once per ``key`` (default: its text)."""
        key = text if key is None else key
        if key not in self._noted:
            self._noted[key] = text
            self.notes.append(text)

    def noted_items(self) -> list[tuple]:
        """(key, text) of every note so far: what another process's copy of this source noted, to take with
        :meth:`take_notes`."""
        return list(self._noted.items())

    def take_notes(self, items: list[tuple]) -> None:
        """Note what another copy of this source noted (a run in a worker process), each key once."""
        for key, text in items:
            self._note(text, key)

    def table(self, model: ModelShape) -> KernelTable | None:
        """The model's table (cached in memory and on disk), or None where the database cannot compose it."""
        # The version read once in __init__: this runs on every step_time call, so no metadata I/O here; the same
        # model object (the deployment's) finds its table without composing the key again.
        known = self._by_model.get(id(model))
        if known is not None and known[0] is model:
            return known[1]
        meta = _meta(model, self.device, self.engine, self.version)
        key = json.dumps(meta, sort_keys=True)
        if key in self._tables:
            self._by_model[id(model)] = (model, self._tables[key])
            return self._tables[key]
        try:
            path = cache_file(key)
            cached = path.is_file()
        except OSError as exc:  # no home, a name too long, a loop: build in memory and say so
            self._note(f"kernel tables are not cached: {exc}", "no-cache")
            path, cached = None, False
        if path is not None and path.parent not in _SWEPT:  # once per folder and process: one listing
            _SWEPT.add(path.parent)
            clear_stale_staging(path.parent)
        table = None
        if cached:
            missing = _cached_missing(path, meta)
            if missing is not None:  # this database holds no table for it: found before, not looked for again
                self._note(f"{missing}; using the roofline for {model.name}")
                self._tables[key] = None
                return None
            try:
                table = KernelTable.load(path, meta)
            except Exception:  # damaged, truncated or foreign: rebuild, never trust it
                self._note(f"kernel cache {path} was unreadable and is rebuilt")
                table = None
        if table is None:
            if self.progress:
                self.progress(
                    f"building the kernel table for {model.name} on {self.device} ({self.engine}, "
                    f"{AIC_DISTRIBUTION} {self.version})" + (f"; cached in {path.parent}" if path else "")
                )
            try:
                table = build_table(model, self.device, self.engine)
            except KernelDataError as exc:
                self._note(f"{exc}; using the roofline for {model.name}")
                self._tables[key] = None
                if path is not None and not isinstance(exc, KernelEnvironmentError):
                    # What the database lacks is a property of its version (in the key): kept, so that the next
                    # process (a serve-sim worker, the next command) neither composes it again nor says it builds it.
                    self._save_missing(meta, str(exc), path)
                return None
            if path is not None:
                self._save(table, path)
        self._tables[key] = table
        self._by_model[id(model)] = (model, table)
        return table

    def _save_missing(self, meta: dict, why: str, path: Path) -> None:
        """Write to the cache that the database composes no table for ``meta``, and why (read by _cached_missing)."""
        from specsim.core.files import atomic_write_bytes

        self._save(None, path, lambda: atomic_write_bytes(path, json.dumps({"meta": meta, "missing": why}).encode()))

    def _save(self, table: KernelTable | None, path: Path, write=None) -> None:
        """Write ``table`` to the cache; a folder that refuses it (read-only, full, a loop) is noted once, never raised."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            (write or (lambda: table.save(path)))()
        except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: pathlib's "Symlink loop" before 3.13
            reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)  # OutputError: plain
            self._note(
                f"kernel tables are not cached in {path.parent} ({reason}): they are built in memory for this run",
                "no-cache",
            )

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
        roof: StepTime | None = None,
    ) -> StepTime:
        """t(b, q, L) from the database, the roofline where it has no data (flagged in ``fallback``); a ``prompt``'s
        pass (:func:`~specsim.timing.roofline.step_time`) attends causally within itself and samples its last token.
        ``roof``: that roofline's pass of the same arguments on this source's profile, where the caller has timed it
        already (the hybrid source, whose passes are the roofline's of the same profile), not timed twice."""
        roof = step_time(self.hardware, model, batch, tokens_per_seq, context, prompt) if roof is None else roof
        table = self.table(model)
        b = np.asarray(batch, float)
        q = np.asarray(tokens_per_seq, float)
        L = np.asarray(context, float)
        if table is None:
            fallback = np.ones(np.shape(roof.total_s), bool)
            return dataclasses.replace(roof, source=self.name, fallback=fallback)
        gemm = table.gemm(b * q) + self._correlated_experts(table, model, b, q)
        attn = table.decode_attention(b, L + q)
        if prompt:
            # The LM head at one token per sequence, not b q: of what the GEMMs take beyond a pass of b tokens (past the
            # weights' one read), the head's share of the pass's FLOP is not spent.  The other queries each attend to
            # the cache and the prompt's earlier tokens (causal), beyond the one query the decode kernel times, at the
            # best measured context-attention rate (per rank).
            full = sum(f for f, _ in model.matmul_flop_by_dtype(b * q))
            share = (full - sum(f for f, _ in model.matmul_flop_by_dtype(b * q, 0.0))) / full
            gemm = gemm - share * np.maximum(table.gemm(b * q) - table.gemm(b), 0.0)
            beyond = np.maximum(model.pass_attention_flop(L, q) - model.attention_flop(L + q), 0.0)
            extra = beyond * b / table.ctx_flop_per_s
        else:
            # Extra queries on the same KV: their FLOP at the best measured context-attention rate (per rank).
            extra = model.attention_flop(L + q) * (q - 1.0) * b / table.ctx_flop_per_s
        comm = self._comm(table, model, b * q)
        rec, rec1 = self._recurrence(table, model, b, q, prompt)
        total = gemm + attn + extra + comm + rec
        # A pass of q > 1 tokens does strictly more work than a decode step of the same batch and
        # context; measured kernels differ by a few percent run to run, so hold it at least at q = 1.
        if not np.all(q == 1):  # (a decode step is its own floor)
            total = np.maximum(
                total, table.gemm(b) + table.decode_attention(b, L + 1.0) + self._comm(table, model, b) + rec1
            )
        fallback = ~np.isfinite(total)
        if np.any(fallback):
            self._note(
                f"{model.name}: some points lie outside the {self.engine} kernel data on {self.device}, measured at "
                f"b up to {table.attn_b[-1]:.0f}, b*q up to {table.gemm_m[-1]:.0f} and contexts "
                f"{table.attn_L[0]:.0f}-{table.attn_L[-1]:.0f}; the roofline answers there (the --json rows of steptime, "
                "optimal-gamma and speedup give each point's timing_source)",
                (model.name, "fallback"),
            )
        scaled = (
            table.uses_scaled_attention(b, L + q) & ~fallback
            if (model.name, "scaled") not in self._noted
            else np.zeros(np.shape(fallback), bool)
        )  # (noted once: the first pass that leans on it names it)
        if np.any(scaled):
            where_b = np.broadcast_to(np.asarray(b, float), scaled.shape)[scaled]
            where_l = np.broadcast_to(np.asarray(L + q, float), scaled.shape)[scaled]
            span = lambda x: f"{x.min():.0f}" if x.min() == x.max() else f"{x.min():.0f}-{x.max():.0f}"  # noqa: E731
            self._note(
                f"{model.name}: at batch {span(where_b)} attending {span(where_l)} tokens (the cached context and the "
                "pass's own) the decode-attention data stop at a "
                f"smaller batch; attention there is scaled linearly in batch from the largest measured one",
                (model.name, "scaled"),
            )
        total = np.where(fallback, roof.total_s, total)
        return dataclasses.replace(
            roof,
            total_s=total,
            overhead_s=0.0,
            source=self.name,
            fallback=fallback if np.any(fallback) else None,
            comm_s=np.where(fallback, roof.comm_s, comm) if model.tp > 1 else 0.0,
        )

    @staticmethod
    def _correlated_experts(table: KernelTable, model: ModelShape, b: np.ndarray, q: np.ndarray) -> np.ndarray:
        """What the experts of a pass cost beyond the table's one-token-per-sequence routing when a sequence's q
        tokens route alike (:meth:`~specsim.describe.shapes.ModelShape.experts_touched`): 0 at routing_correlation 0."""
        if not model.routing_correlation or table.moe_m.size < 2:
            return np.zeros(np.broadcast_shapes(np.shape(b), np.shape(q)))
        m = np.asarray(b * q, float)
        alike = _moe_uniform(model, m, table.moe_m, table.moe_s, model.experts_touched(m, q))
        return model.n_moe_layers * (alike - _moe_uniform(model, m, table.moe_m, table.moe_s))

    def _recurrence(
        self, table: KernelTable, model: ModelShape, b: np.ndarray, q: np.ndarray, prompt: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(pass, decode step) time of the recurrent layers: the measured decode kernels scaled by the state bytes a pass
        of q tokens moves against a decode step's (the verification kernel is bound by the states it writes), else the
        roofline's time of the recurrences (noted).  A ``prompt`` runs the chunked kernels, which the database does not
        time: the roofline's time of their state traffic (one state per chunk) and FLOP, never under the measured
        decode kernels of the same batch."""
        if not model.is_hybrid:
            return 0.0, 0.0
        from specsim.timing.roofline import recurrent_time_s

        measured = model.n_recurrent_layers * table.recurrence(b)
        if table.rec_b.size:
            if prompt:
                return np.maximum(measured, recurrent_time_s(self.hardware, model, b, q, prompt)), measured
            ratio = model.recurrent_pass_bytes(q) / model.recurrent_pass_bytes(1.0)
            return measured * ratio, measured
        self._note(
            f"{model.name}: no measured {model.recurrent_kind} recurrence kernels for {self.engine} on {self.device}; "
            "the recurrent layers' state traffic and FLOP are the roofline's",
            (model.name, "recurrence"),
        )
        return recurrent_time_s(self.hardware, model, b, q, prompt), recurrent_time_s(self.hardware, model, b, 1.0)

    def _comm(self, table: KernelTable, model: ModelShape, tokens: np.ndarray) -> np.ndarray:
        """Tensor-parallel collectives of a pass: measured all-reduces where the database has them, else the roofline's."""
        if model.tp == 1:
            return np.zeros(np.shape(tokens))
        from specsim.describe.parallel import allgather_s, allreduce_s, collectives_per_pass, comm_bytes

        act, logits = comm_bytes(model, tokens)
        reduces, gathers = collectives_per_pass(model)
        measured = table.allreduce(tokens * model.hidden_size)
        if self.kin is not None:  # measured over the kin device's link, not this one's
            measured = np.full(np.shape(measured), np.nan)
        elif np.any(~np.isfinite(measured)):
            self._note(
                f"{model.name}: no measured {self.engine} all-reduce at TP {model.tp} on {self.device} for some "
                f"message sizes; the profile's link bandwidth and latency answer there",
                (model.name, "comm"),
            )
        ar = np.where(np.isfinite(measured), measured, allreduce_s(self.hardware, model.tp, act))
        return reduces * ar + gathers * allgather_s(self.hardware, model.tp, logits)

    def prefill_time(self, model: ModelShape, prompt_tokens: object) -> np.ndarray:
        """One sequence's prefill of ``prompt_tokens`` tokens: GEMMs at m = tokens plus context attention."""
        table = self.table(model)
        isl = np.asarray(prompt_tokens, float)
        roof = step_time(self.hardware, model, 1, isl, 0).total_s
        if table is None:
            return roof
        t = table.gemm(isl) + table.prefill_attention(isl)
        return np.where(np.isfinite(t), t, roof)


def compose_steps(
    source: KernelSource,
    model: ModelShape,
    batches=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    tokens_per_seq=(1, 2, 3, 5, 9),
    contexts=(511, 1023, 2047, 4095, 8191),
):
    """Kernel-composed step times on a (b, q, L) grid, in the CSV form ``specsim calibrate`` reads.

    Only points inside the measured data are returned (no roofline fallback,
    no attention scaled in batch): a calibration must see measurements only.
    """
    import pandas as pd

    b, q, L = (
        a.ravel()
        for a in np.meshgrid(
            np.asarray(batches, float), np.asarray(tokens_per_seq, float), np.asarray(contexts, float), indexing="ij"
        )
    )
    t = source.step_time(model, b, q, L)
    table = source.table(model)
    keep = np.ones(b.shape, bool) if t.fallback is None else ~t.fallback
    if table is not None:
        keep &= ~table.uses_scaled_attention(b, L + q)
    rows = pd.DataFrame(
        {
            "model": model.name,
            "params": model.params,
            "n_layers": model.n_layers,
            "hidden_size": model.hidden_size,
            "intermediate_size": model.intermediate_size,
            "n_heads": model.n_heads,
            "n_kv_heads": model.n_kv_heads,
            "head_dim": model.head_dim,
            "vocab_size": model.vocab_size,
            "tie_embeddings": model.tie_embeddings,
            "qkv_bias": model.qkv_bias,
            "batch": b.astype(int),
            "tokens_per_seq": q.astype(int),
            "context": L.astype(int),
            "dtype": model.weight_dtype,
            "device": source.hardware.name,
            "device_name": source.device,
            "step_time_s": t.total_s,
            "source": f"{AIC_DISTRIBUTION} {source.version} {source.engine} kernels",
        }
    )
    return rows[keep & (table is not None)].reset_index(drop=True)
