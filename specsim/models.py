"""Model shapes: parameter counts, weight bytes, KV-cache bytes and FLOP of a decoder.

Dense layers
    A Llama-style layer with hidden size ``d``, MLP size ``f``, ``H`` query
    heads and ``KV`` key/value heads of size ``hd`` holds q and o projections
    (``d H hd`` each), k and v (``d KV hd`` each), a gated MLP (``3 d f``) and
    its norms; once per model come the embedding ``V d``, the final norm and
    an LM head ``V d`` unless tied.  Llama-3.1-8B comes to 8,030,261,248
    parameters, the count Hugging Face reports.

Mixture of experts (Mixtral, Qwen3-MoE, gpt-oss, DeepSeek-V3)
    An MoE layer replaces the MLP by a router (``d E``), ``E`` routed experts
    of size ``3 d f_e`` and, in DeepSeek-V3, shared experts that every token
    uses.  A token multiplies only its ``k`` routed experts, so FLOP follow the
    *active* parameters; but a pass reads every expert that *any* of its
    tokens routes to.  With ``m = b q`` tokens each picking ``k`` of ``E``
    experts uniformly, the expected number of distinct experts one layer reads
    is

        E_touched(m) = E (1 - (1 - k/E)^m)

    (``routing_effective_experts`` replaces ``E`` by a smaller effective
    count for measured, skewed routing).  At batch 1 a decode step reads ``k``
    experts and a verification pass of ``gamma + 1`` tokens up to
    ``(gamma + 1) k``: verification costs an MoE target far more than a decode
    step, until the batch is large enough that decode already reads most
    experts.

Multi-head latent attention (DeepSeek-V3)
    The cache holds one latent vector of ``kv_lora_rank + qk_rope_head_dim``
    values per token per layer instead of per-head keys and values (576 vs
    32,768 for DeepSeek-V3's 128 heads); decode runs the absorbed form, whose
    attention costs ``2 (kv_lora_rank + rope) + 2 kv_lora_rank`` FLOP per head
    per cached token.

Sliding-window layers (Gemma 3, gpt-oss, Mistral-7B-v0.1)
    A local layer attends to, caches and reads at most ``sliding_window``
    tokens: KV bytes and attention FLOP of a sequence at context ``L`` are
    ``per_layer * (n_full L + n_sliding min(L, window))``.

Precision
    ``weight_dtype`` is the storage of the linear layers of the blocks,
    ``expert_dtype`` of the routed experts (gpt-oss keeps attention in bf16
    and experts in MXFP4), ``head_dtype`` of the embedding, LM head and norms
    (quantised checkpoints keep them in 16-bit), ``kv_dtype`` of the cache.

Tensor parallelism
    ``tp`` ranks split heads, MLP and expert columns and the vocabulary; KV
    heads are split while ``tp <= KV`` and replicated beyond; the MLA latent
    cache and its down-projections are replicated on every rank (as vLLM and
    SGLang run it).  Byte and FLOP properties are **per rank**; parameter
    counts are of the whole model.

The article's round-number presets ``article-8b`` and ``article-1b`` set
N = 8e9 and 1e9 exactly, stream all 2N bytes and do 2N FLOP per token, with
the attention and KV shapes of Llama-3.1-8B and Llama-3.2-1B.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BYTES_PER_ELEMENT",
    "ModelShape",
    "builtin_model_names",
    "catalog_entry",
    "format_count",
    "get_model",
    "model_from_hf_config",
]

BYTES_PER_ELEMENT = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # 4-bit integer weights with a 16-bit scale and a 4-bit zero point per group of 128 (AWQ and GPTQ's
    # usual layout): 4 + 20/128 bits.
    "int4": (4 + 20 / 128) / 8,
    # OCP microscaling FP4: an 8-bit shared scale per 32 values (4.25 bits), gpt-oss's expert format.
    "mxfp4": 4.25 / 8,
    # NVIDIA NVFP4: an FP8 scale per 16 values (4.5 bits).
    "nvfp4": 4.5 / 8,
}
#: Dtypes the CLI offers for --weight-dtype and --kv-dtype (the others are read from config.json files).
WEIGHT_DTYPE_CHOICES = ("bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
KV_DTYPE_CHOICES = ("bf16", "fp16", "fp8")


def _positive_int(where: str, key: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{where}: {key} must be {kind}, got {value!r}")


@dataclass(frozen=True)
class ModelShape:
    """The shape of a decoder-only transformer, dense or mixture-of-experts.

    Parameters
    ----------
    name : str
        Registry name or the path it was read from.
    vocab_size, hidden_size, intermediate_size, n_layers, n_heads, n_kv_heads, head_dim : int
        Architecture dimensions, as in a Hugging Face ``config.json``
        (``intermediate_size``: the dense MLP's).
    tie_embeddings : bool
        Whether the LM head shares the input embedding matrix.
    qkv_bias, o_bias : bool
        Biases on the q, k, v projections (Qwen2, gpt-oss) and on the output projection (gpt-oss).
    qk_norm : bool
        Per-head RMSNorm of queries and keys (Qwen3, Gemma 3): 2 * head_dim weights per layer.
    weight_dtype, kv_dtype : str
        Storage of the blocks' linear weights and of the KV cache; keys of ``BYTES_PER_ELEMENT``.
    params_override : int or None
        A round parameter count that replaces the computed one (the article's
        presets).  All of those parameters are then streamed every step.
    source : str
        Where the checkpoint lives (a Hugging Face id or a local folder), used
        in the serving-engine snippets that ``specsim schedule`` prints.
    norms_per_layer : int
        RMSNorm weight vectors of size d per layer (2; Gemma 3 has 4).
    attention_sinks : bool
        One learned sink logit per head per layer (gpt-oss).
    n_experts, n_active_experts, moe_intermediate_size : int
        Routed experts per MoE layer (0: dense), experts per token, and each expert's MLP size.
    n_shared_experts : int
        Experts every token uses (DeepSeek-V3), of ``moe_intermediate_size`` each.
    n_dense_layers : int
        Layers with a dense MLP in an MoE model (DeepSeek-V3's first three).
    expert_bias : bool
        Biases on expert and router projections (gpt-oss).
    routing_effective_experts : float or None
        Effective number of experts for skewed routing (None: uniform over ``n_experts``).
    kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim : int
        Multi-head latent attention (0: grouped-query attention).
    sliding_window, n_sliding_layers : int
        Window of the local layers and how many layers are local (0: none).
    expert_dtype, head_dtype : str or None
        Storage of the routed experts and of embedding, LM head and norms (None: ``weight_dtype``).
    extra_params : int
        Parameters held in memory but not run per generated token (a vision encoder).
    n_mtp_layers : int
        Multi-token-prediction layers the checkpoint ships (not counted in ``params``).
    tp : int
        Tensor-parallel ranks the model is split over.
    architecture : str
        The config.json architecture it was read as.
    notes : tuple of str
        What was assumed while reading it (defaults the config did not state).

    Examples
    --------
    >>> m = get_model("llama-3.1-8b")
    >>> m.params, m.kv_bytes_per_token
    (8030261248, 131072.0)
    >>> moe = get_model("qwen3-30b-a3b")
    >>> round(float(moe.experts_touched(1))), round(float(moe.experts_touched(4)), 1)
    (8, 29.1)
    """

    name: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    tie_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    params_override: int | None = None
    #: Where the weights live: a Hugging Face id for built-ins, the folder of a config.json.
    source: str = ""
    o_bias: bool = False
    norms_per_layer: int = 2
    attention_sinks: bool = False
    n_experts: int = 0
    n_active_experts: int = 0
    moe_intermediate_size: int = 0
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    expert_bias: bool = False
    routing_effective_experts: float | None = None
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    n_sliding_layers: int = 0
    expert_dtype: str | None = None
    head_dtype: str | None = None
    extra_params: int = 0
    n_mtp_layers: int = 0
    tp: int = 1
    architecture: str = ""
    notes: tuple = ()
    #: The checkpoint's own weight dtype where ``weight_dtype`` overrides it (quantised when the engine loads it).
    checkpoint_dtype: str | None = None
    #: Linear weights outside the layers, read and multiplied every pass (an EAGLE head's feature projection).
    extra_linear_params: int = 0
    #: The longest sequence the checkpoint supports (config.json max_position_embeddings); 0: not stated.
    max_position_embeddings: int = 0

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        for key in ("vocab_size", "hidden_size", "intermediate_size", "n_layers", "n_heads", "n_kv_heads", "head_dim",
                    "tp"):
            _positive_int(where, key, getattr(self, key))
        for key in ("norms_per_layer", "n_experts", "n_active_experts", "moe_intermediate_size", "n_shared_experts",
                    "n_dense_layers", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                    "v_head_dim", "sliding_window", "n_sliding_layers", "extra_params", "n_mtp_layers", "extra_linear_params",
                    "max_position_embeddings"):
            _positive_int(where, key, getattr(self, key), minimum=0)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{where}: n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        for key in ("weight_dtype", "kv_dtype", "expert_dtype", "head_dtype"):
            value = getattr(self, key)
            if value is not None and value not in BYTES_PER_ELEMENT:
                raise ValueError(f"{where}: {key} must be one of {', '.join(BYTES_PER_ELEMENT)}, got {value!r}")
        if self.params_override is not None:
            _positive_int(where, "params_override", self.params_override)
        if self.n_experts:
            if not 1 <= self.n_active_experts <= self.n_experts:
                raise ValueError(f"{where}: experts per token ({self.n_active_experts}) must be between 1 and the number "
                                 f"of experts ({self.n_experts})")
            if self.moe_intermediate_size < 1:
                raise ValueError(f"{where}: an MoE model needs moe_intermediate_size >= 1")
            if self.n_dense_layers >= self.n_layers:
                raise ValueError(f"{where}: n_dense_layers ({self.n_dense_layers}) must be fewer than n_layers ({self.n_layers})")
        elif self.n_active_experts or self.n_shared_experts:
            raise ValueError(f"{where}: experts per token or shared experts given without routed experts")
        eff = self.routing_effective_experts
        if eff is not None:
            if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not math.isfinite(eff):
                raise ValueError(f"{where}: routing_effective_experts must be a number, got {eff!r}")
            if not self.n_experts or not self.n_active_experts <= eff <= self.n_experts:
                raise ValueError(f"{where}: routing_effective_experts must lie between the experts per token and the "
                                 f"number of experts ({self.n_active_experts}..{self.n_experts}), got {eff!r}")
        if self.kv_lora_rank and (self.qk_rope_head_dim < 1 or self.qk_nope_head_dim < 1 or self.v_head_dim < 1):
            raise ValueError(f"{where}: multi-head latent attention needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim")
        if self.n_sliding_layers > self.n_layers:
            raise ValueError(f"{where}: n_sliding_layers ({self.n_sliding_layers}) exceeds n_layers ({self.n_layers})")
        if bool(self.sliding_window) != bool(self.n_sliding_layers):
            raise ValueError(f"{where}: sliding_window and n_sliding_layers must both be set or both be 0")
        if self.n_heads % self.tp:
            raise ValueError(f"{where}: tensor parallelism {self.tp} must divide the {self.n_heads} attention heads")
        if not self.is_mla and self.n_kv_heads % self.tp and self.tp % self.n_kv_heads:
            raise ValueError(f"{where}: tensor parallelism {self.tp} and the {self.n_kv_heads} KV heads must divide one "
                             "another (engines split or replicate whole KV heads)")

    # -- kinds ---------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def n_full_layers(self) -> int:
        """Layers that attend to the whole context."""
        return self.n_layers - self.n_sliding_layers

    @property
    def expert_dtype_(self) -> str:
        return self.expert_dtype or self.weight_dtype

    @property
    def head_dtype_(self) -> str:
        return self.head_dtype or self.weight_dtype

    # -- parameters of the whole model ------------------------------------------
    def _attention_params(self, tp: int = 1) -> float:
        """Attention projections of one layer on one of ``tp`` ranks (biases, sinks and q/k norms included)."""
        d, H = self.hidden_size, self.n_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            ql, kl, rope = self.q_lora_rank, self.kv_lora_rank, self.qk_rope_head_dim
            replicated = (d * ql + ql if ql else 0) + d * (kl + rope) + kl  # down-projections and their norms
            split = (ql if ql else d) * H * qk + kl * H * (self.qk_nope_head_dim + self.v_head_dim) + H * self.v_head_dim * d
            return replicated + split / tp
        hd = self.head_dim
        kv_heads = self.n_kv_heads / tp if self.n_kv_heads >= tp else 1
        q_o = 2 * d * H * hd / tp
        kv = 2 * d * kv_heads * hd
        bias = ((H / tp + 2 * kv_heads) * hd if self.qkv_bias else 0) + (d if self.o_bias else 0)
        sinks = H / tp if self.attention_sinks else 0
        qk_norm = 2 * hd if self.qk_norm else 0
        return q_o + kv + bias + sinks + qk_norm

    @property
    def dense_mlp_params(self) -> int:
        """One dense gated MLP: gate, up and down, 3 d f."""
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def expert_params(self) -> int:
        """One routed expert (gated MLP of moe_intermediate_size, with biases in gpt-oss)."""
        d, f = self.hidden_size, self.moe_intermediate_size
        return 3 * d * f + (2 * f + d if self.expert_bias else 0)

    @property
    def router_params(self) -> int:
        return self.hidden_size * self.n_experts + (self.n_experts if self.expert_bias else 0)

    @property
    def _norm_params_per_layer(self) -> int:
        return self.norms_per_layer * self.hidden_size

    @property
    def params_per_layer(self) -> int:
        """Parameters of one dense layer (attention, dense MLP, norms); MoE layers: see ``computed_params``."""
        return int(round(self._attention_params())) + self.dense_mlp_params + self._norm_params_per_layer

    @property
    def embedding_params(self) -> int:
        """Parameters of one vocabulary matrix (input embedding or LM head)."""
        return self.vocab_size * self.hidden_size

    @property
    def _moe_layer_params(self) -> int:
        return self.router_params + self.n_experts * self.expert_params + self.n_shared_experts * 3 * self.hidden_size * self.moe_intermediate_size

    @property
    def computed_params(self) -> int:
        """Total parameters computed from the shape (vision encoder and MTP layers not included)."""
        heads = 1 if self.tie_embeddings else 2
        layers = self.n_layers * (int(round(self._attention_params())) + self._norm_params_per_layer)
        mlps = (self.n_layers - self.n_moe_layers) * self.dense_mlp_params + self.n_moe_layers * self._moe_layer_params
        return layers + mlps + heads * self.embedding_params + self.hidden_size + self.extra_linear_params

    @property
    def params(self) -> int:
        """Total parameters: the override if set, else computed from the shape."""
        return self.params_override if self.params_override is not None else self.computed_params

    @property
    def total_params(self) -> int:
        """Every parameter of the checkpoint's model: ``params`` plus a vision encoder (MTP layers excluded)."""
        return self.params + self.extra_params

    @property
    def non_embedding_params(self) -> int:
        """Parameters less the embedding and an untied LM head."""
        return self.params - (1 if self.tie_embeddings else 2) * self.embedding_params

    @property
    def active_params(self) -> int:
        """Parameters one token multiplies: all but the unused routed experts and the input-embedding gather."""
        if self.params_override is not None:
            return self.params
        unused = self.n_moe_layers * (self.n_experts - self.n_active_experts) * self.expert_params
        return self.streamed_params_dense - unused

    @property
    def streamed_params_dense(self) -> int:
        if self.params_override is not None or self.tie_embeddings:
            return self.params
        return self.params - self.embedding_params

    @property
    def streamed_params(self) -> int:
        """Parameters read from memory and multiplied by a one-token pass.

        All of them, less an untied input-embedding table (a step gathers one
        row per token from it) and the routed experts no token chose.
        """
        return self.active_params

    # -- per rank: bytes --------------------------------------------------------
    @property
    def bytes_per_weight(self) -> float:
        return BYTES_PER_ELEMENT[self.weight_dtype]

    def _rank_parts(self) -> dict[str, float]:
        """Per-rank parameters of each storage group: linear (weight dtype), one expert, head (head dtype)."""
        tp = self.tp
        d = self.hidden_size
        dense_layers = self.n_layers - self.n_moe_layers
        linear = (self.n_layers * self._attention_params(tp) + dense_layers * self.dense_mlp_params / tp
                  + self.n_moe_layers * (self.router_params + self.n_shared_experts * 3 * d * self.moe_intermediate_size / tp)
                  + self.extra_linear_params / tp)
        # Norm vectors are replicated on every rank; qk norms and MLA latent norms sit in _attention_params.
        norms = self.n_layers * self._norm_params_per_layer + d
        return {"linear": linear, "expert": self.expert_params / tp, "head": self.embedding_params / tp, "norms": norms}

    def experts_touched(self, tokens: object) -> np.ndarray:
        """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens: E_eff (1 - (1 - k/E_eff)^m)."""
        m = np.asarray(tokens, dtype=float)
        if not self.is_moe:
            return np.zeros_like(m)
        e = float(self.routing_effective_experts or self.n_experts)
        return e * (1.0 - (1.0 - self.n_active_experts / e) ** m)

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights resident on one rank (every expert, both vocabulary matrices, a vision encoder)."""
        if self.params_override is not None:
            return self.params * self.bytes_per_weight / self.tp
        p = self._rank_parts()
        head = BYTES_PER_ELEMENT[self.head_dtype_]
        vocab = (1 if self.tie_embeddings else 2) * p["head"]
        experts = self.n_moe_layers * self.n_experts * p["expert"] * BYTES_PER_ELEMENT[self.expert_dtype_]
        return p["linear"] * self.bytes_per_weight + experts + (vocab + p["norms"] + self.extra_params / self.tp) * head

    @property
    def total_weight_bytes(self) -> float:
        """Bytes of weights over all ranks."""
        return self.weight_bytes * self.tp

    def weight_bytes_read(self, tokens: object = 1) -> np.ndarray:
        """Bytes of weights one rank reads in a pass of ``tokens`` tokens (MoE: the experts they touch)."""
        m = np.asarray(tokens, dtype=float)
        if self.params_override is not None:
            return np.full(m.shape, self.params * self.bytes_per_weight / self.tp)
        p = self._rank_parts()
        head = BYTES_PER_ELEMENT[self.head_dtype_]
        # A tied table is read in full as the LM head; an untied input table only has rows gathered.
        fixed = p["linear"] * self.bytes_per_weight + (p["head"] + p["norms"]) * head
        experts = self.n_moe_layers * self.experts_touched(m) * p["expert"] * BYTES_PER_ELEMENT[self.expert_dtype_]
        return fixed + experts

    @property
    def streamed_weight_bytes(self) -> float:
        """Bytes of weights one rank reads in a one-token pass."""
        return float(self.weight_bytes_read(1))

    def matmul_flop_by_dtype(self, tokens: object) -> list[tuple[np.ndarray, str]]:
        """FLOP of the weight matmuls of one rank for ``tokens`` tokens, grouped by the dtype that sets their rate."""
        m = np.asarray(tokens, dtype=float)
        if self.params_override is not None:
            return [(2.0 * self.params / self.tp * m, self.weight_dtype)]
        p = self._rank_parts()
        experts = self.n_moe_layers * self.n_active_experts * p["expert"]
        # Norms count 2 FLOP per weight like the matmuls, as the article's 2N FLOP per token does.
        return [(2.0 * p["linear"] * m, self.weight_dtype), (2.0 * experts * m, self.expert_dtype_),
                (2.0 * (p["head"] + p["norms"]) * m, self.head_dtype_)]

    # -- per rank: KV cache and attention ------------------------------------------
    @property
    def kv_bytes_per_token_per_layer(self) -> float:
        """KV-cache bytes one rank stores per token per layer (MLA: the replicated latent)."""
        elem = BYTES_PER_ELEMENT[self.kv_dtype]
        if self.is_mla:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * elem
        kv_heads = self.n_kv_heads / self.tp if self.n_kv_heads >= self.tp else 1
        return 2.0 * kv_heads * self.head_dim * elem

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token over all layers on one rank, below any sliding window."""
        return self.n_layers * self.kv_bytes_per_token_per_layer

    def attended_tokens(self, context: object) -> np.ndarray:
        """Layer-tokens a sequence at ``context`` caches and attends to: n_full L + n_sliding min(L, window)."""
        L = np.asarray(context, dtype=float)
        local = np.minimum(L, self.sliding_window) if self.n_sliding_layers else 0.0
        return self.n_full_layers * L + self.n_sliding_layers * local

    def kv_bytes(self, context: object) -> np.ndarray:
        """KV-cache bytes of one sequence at ``context`` tokens on one rank (local layers keep only their window)."""
        return self.kv_bytes_per_token_per_layer * self.attended_tokens(context)

    @property
    def attention_flop_per_layer_per_context(self) -> float:
        """Attention FLOP one rank does per new token per cached token per layer (QK^T and PV)."""
        heads = self.n_heads / self.tp
        if self.is_mla:  # absorbed form: scores over the latent plus rope part, values over the latent
            return heads * (2.0 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2.0 * self.kv_lora_rank)
        return 4.0 * heads * self.head_dim

    @property
    def attention_flop_per_token_per_context(self) -> float:
        """FLOP of attention per new token per cached token, all layers, below any window:
        ``4 * n_layers * n_heads * head_dim`` for grouped-query attention."""
        return self.n_layers * self.attention_flop_per_layer_per_context

    def attention_flop(self, context: object) -> np.ndarray:
        """Attention FLOP per new token of a sequence at ``context`` on one rank."""
        return self.attention_flop_per_layer_per_context * self.attended_tokens(context)

    def describe(self) -> str:
        """One line: kind, size and precision, for table headers."""
        kind = []
        if self.is_moe:
            kind.append(f"MoE {self.n_active_experts}/{self.n_experts}" + (f"+{self.n_shared_experts} shared" if self.n_shared_experts else ""))
        if self.is_mla:
            kind.append(f"MLA r{self.kv_lora_rank}")
        if self.n_sliding_layers:
            kind.append(f"{self.n_sliding_layers}/{self.n_layers} layers window {self.sliding_window}")
        dtype = self.weight_dtype if self.expert_dtype_ == self.weight_dtype else f"{self.weight_dtype}, experts {self.expert_dtype_}"
        active = f", {format_count(self.active_params)} active" if self.is_moe else ""
        tp = f", TP {self.tp}" if self.tp > 1 else ""
        return (f"{self.name} ({format_count(self.params)} params{active}; " + (", ".join(kind) + "; " if kind else "")
                + f"weights {dtype}, KV {self.kv_dtype}{tp})")

    def to_dict(self) -> dict[str, Any]:
        """Shape and derived counts, for ``--json`` output (bytes per tensor-parallel rank)."""
        out = {
            "name": self.name,
            "params": self.params,
            "computed_params": self.computed_params,
            "streamed_params": self.streamed_params,
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "head_dim": self.head_dim,
            "tie_embeddings": self.tie_embeddings,
            "qkv_bias": self.qkv_bias,
            "qk_norm": self.qk_norm,
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "weight_bytes": self.weight_bytes,
            "streamed_weight_bytes": self.streamed_weight_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "source": self.source,
        }
        out.update({
            "architecture": self.architecture,
            "active_params": self.active_params,
            "non_embedding_params": self.non_embedding_params,
            "expert_dtype": self.expert_dtype_,
            "head_dtype": self.head_dtype_,
            "n_experts": self.n_experts,
            "n_active_experts": self.n_active_experts,
            "moe_intermediate_size": self.moe_intermediate_size,
            "n_shared_experts": self.n_shared_experts,
            "n_dense_layers": self.n_dense_layers,
            "routing_effective_experts": self.routing_effective_experts,
            "kv_lora_rank": self.kv_lora_rank,
            "sliding_window": self.sliding_window,
            "n_sliding_layers": self.n_sliding_layers,
            "extra_params": self.extra_params,
            "n_mtp_layers": self.n_mtp_layers,
            "tp": self.tp,
            "checkpoint_dtype": self.checkpoint_dtype,
            "notes": list(self.notes),
        })
        return out


# -- the catalog ------------------------------------------------------------------
_CATALOG = Path(__file__).resolve().parent / "catalog"

# Presets that are not checkpoints: the article's round-number models and CPU-sized shapes for the
# timing harness's demonstration (specsim measure --device cpu).
_PRESETS: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("tiny-28m", 8192, 512, 1536, 8, 8, 2, 64, tie_embeddings=True),
        ModelShape("tiny-5m", 8192, 256, 768, 4, 4, 1, 64, tie_embeddings=True),
        # The article's round-number presets (shared/design/article-model.md).
        ModelShape("article-8b", 128256, 4096, 14336, 32, 32, 8, 128, params_override=8_000_000_000),
        ModelShape("article-1b", 128256, 2048, 8192, 16, 32, 8, 64, tie_embeddings=True, params_override=1_000_000_000),
    )
}


@lru_cache(maxsize=1)
def _catalog_index() -> dict[str, dict]:
    from .limits import load_yaml

    index = load_yaml(_CATALOG / "index.yaml", "model catalog")
    return {str(k): dict(v) for k, v in index.items()}


def catalog_entry(name: str) -> dict | None:
    """The catalog's record of a built-in checkpoint (hub id, published counts, draft), or None."""
    return _catalog_index().get(name)


@lru_cache(maxsize=64)
def _catalog_model(name: str) -> ModelShape:
    entry = _catalog_index()[name]
    config = json.loads((_CATALOG / f"{name}.json").read_text(encoding="utf-8"))
    model = model_from_hf_config(config, name=name)
    return dataclasses.replace(model, source=entry["hub_id"])


def builtin_model_names() -> list[str]:
    """Names of the built-in model shapes: the catalog's checkpoints and the presets."""
    return sorted(set(_catalog_index()) | set(_PRESETS))


def get_model(name_or_path: str | Path, *, weight_dtype: str | None = None, kv_dtype: str | None = None,
              tp: int | None = None, routing_effective_experts: float | None = None) -> ModelShape:
    """A built-in shape by name, or one read from a Hugging Face ``config.json``.

    ``weight_dtype`` stores every linear layer (experts included) in that type,
    as an engine's online quantisation does; the embedding, LM head and norms
    keep the checkpoint's 16-bit type.  ``kv_dtype`` sets the cache's type,
    ``tp`` the tensor-parallel ranks, ``routing_effective_experts`` a skew.

    Raises
    ------
    KeyError
        Unknown name (the message lists the built-ins).
    ValueError
        A config.json that is missing keys, has bad values or an unsupported architecture.
    """
    text = str(name_or_path)
    if text in _PRESETS:
        model = _PRESETS[text]
    elif text in _catalog_index():
        model = _catalog_model(text)
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if path.suffix != ".json" and not path.exists():
            raise KeyError(f"unknown model {text!r}; built-in models: {', '.join(builtin_model_names())} (or give a path to a config.json)")
        if not path.is_file():
            raise ValueError(f"model config {text!r} does not exist")
        config = _read_json(path, "model config")
        side = path.parent / "hf_quant_config.json"  # NVIDIA ModelOpt checkpoints state their quantisation here
        if side.is_file() and "quantization_config" not in config:
            config = {**config, "quantization_config": {"quant_method": "modelopt", **_modelopt(_read_json(side, "quantisation config"), side)}}
        model = model_from_hf_config(config, name=str(path))
        # "path/to/my-finetune/config.json" is called "my-finetune" in tables and plots.
        if path.name == "config.json" and path.resolve().parent.name:
            model = dataclasses.replace(model, name=path.resolve().parent.name)
        model = dataclasses.replace(model, source=str(path.resolve().parent))
    changes: dict[str, Any] = {}
    if weight_dtype is not None:
        if weight_dtype not in BYTES_PER_ELEMENT:
            raise ValueError(f"model {model.name!r}: weight_dtype must be one of {', '.join(BYTES_PER_ELEMENT)}, got {weight_dtype!r}")
        if model.params_override is None:
            changes["head_dtype"] = model.head_dtype_
        stored = model.checkpoint_dtype or model.weight_dtype
        changes.update(weight_dtype=weight_dtype, expert_dtype=None,
                       checkpoint_dtype=stored if weight_dtype != stored or model.expert_dtype else None)
    if kv_dtype is not None:
        changes["kv_dtype"] = kv_dtype
    if tp is not None:
        changes["tp"] = tp
    if routing_effective_experts is not None:
        changes["routing_effective_experts"] = routing_effective_experts
    return dataclasses.replace(model, **changes) if changes else model


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{what} {str(path)!r}: not valid JSON ({err})") from None


def _modelopt(data: Any, path: Path) -> dict:
    quant = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quant, dict):
        raise ValueError(f"quantisation config {str(path)!r}: expected a 'quantization' mapping")
    return {"quant_algo": quant.get("quant_algo"), "kv_cache_quant_algo": quant.get("kv_cache_quant_algo")}


# -- reading config.json ------------------------------------------------------------
#: Architectures specsim reads, and the family whose keys it reads them with.
_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "llama",
    "Qwen3ForCausalLM": "llama",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "MixtralForCausalLM": "mixtral",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GptOssForCausalLM": "gpt_oss",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}
_QKV_BIAS_ARCHITECTURES = {"Qwen2ForCausalLM"}  # q, k, v carry biases whatever attention_bias says
_QK_NORM_ARCHITECTURES = {"Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"}
#: Defaults of transformers' config classes that real checkpoints rely on (keys their config.json leaves out).
#: Gemma3TextConfig: vocab_size 262208, sliding_window_pattern 6, tied embeddings.
_CLASS_DEFAULTS = {"gemma3": {"vocab_size": 262208, "sliding_window_pattern": 6, "tie_word_embeddings": True}}
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_SUPPORTED_QUANT = "fp8, fbgemm_fp8, compressed-tensors (8-bit float or int, 4-bit int), awq and gptq (4-bit), mxfp4, modelopt (FP8, NVFP4)"


def _quantisation(config: dict, where: str, base: str, is_moe: bool) -> tuple[str, str | None, str | None]:
    """(weight dtype, expert dtype, KV dtype) a ``quantization_config`` states; None where it leaves the default.

    Read, or refused; never guessed.  The embedding, LM head and norms stay in
    the checkpoint's 16-bit type in every format read here (each keeps
    ``lm_head`` unquantised).
    """
    quant = config.get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    refuse = ValueError(f"{where}: quantization_config with quant_method {method!r} is not modelled; supported: "
                        f"{_SUPPORTED_QUANT} (or remove the block to model the unquantised weights)")
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", None, None
    if method in ("awq", "gptq"):
        bits = quant.get("bits", quant.get("w_bit"))
        if bits != 4:
            raise ValueError(f"{where}: {method} with {bits!r}-bit weights is not modelled; supported: 4-bit")
        return "int4", None, None
    if method == "mxfp4":
        if not is_moe:
            raise ValueError(f"{where}: mxfp4 quantisation is modelled for the experts of an MoE model only")
        return base, "mxfp4", None
    if method == "modelopt":
        algo = {"FP8": "fp8", "NVFP4": "nvfp4"}.get(str(quant.get("quant_algo")))
        if algo is None:
            raise ValueError(f"{where}: modelopt quant_algo {quant.get('quant_algo')!r} is not modelled; supported: FP8, NVFP4")
        kv_algo = quant.get("kv_cache_quant_algo")
        if kv_algo not in (None, "FP8"):
            raise ValueError(f"{where}: modelopt kv_cache_quant_algo {kv_algo!r} is not modelled; supported: FP8 or none")
        return algo, None, "fp8" if kv_algo == "FP8" else None
    if method == "compressed-tensors":
        groups = quant.get("config_groups")
        if not isinstance(groups, dict) or not groups:
            raise ValueError(f"{where}: compressed-tensors quantization_config has no config_groups")
        kinds = set()
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            if not isinstance(weights, dict):
                raise ValueError(f"{where}: compressed-tensors group without a 'weights' scheme")
            kind = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4"}.get((weights.get("num_bits"), weights.get("type")))
            if kind is None:
                raise ValueError(f"{where}: compressed-tensors weights of {weights.get('num_bits')!r} bits, type "
                                 f"{weights.get('type')!r} are not modelled; supported: 8-bit float, 8-bit int, 4-bit int")
            acts = group.get("input_activations")
            if kind == "int8" and not (isinstance(acts, dict) and acts.get("num_bits") == 8):
                raise ValueError(f"{where}: 8-bit integer weights with 16-bit activations are not modelled; supported: W8A8")
            kinds.add(kind)
        if len(kinds) != 1:
            raise ValueError(f"{where}: compressed-tensors groups mix {', '.join(sorted(kinds))}; one weight type is modelled")
        kv = quant.get("kv_cache_scheme")
        if kv is not None and not (isinstance(kv, dict) and kv.get("num_bits") == 8 and kv.get("type") == "float"):
            raise ValueError(f"{where}: compressed-tensors kv_cache_scheme {kv!r} is not modelled; supported: 8-bit float or none")
        return kinds.pop(), None, "fp8" if kv is not None else None
    raise refuse


def model_from_hf_config(config: Any, name: str = "config.json") -> ModelShape:
    """A :class:`ModelShape` from a parsed Hugging Face ``config.json``.

    Reads Llama, Mistral, Qwen2 and Qwen3 (dense), Gemma 3 (sliding-window
    layers; the text model of the multimodal checkpoint, its vision encoder
    counted as resident memory), Mixtral and Qwen3-MoE (routed experts),
    gpt-oss (experts with biases, attention sinks, alternating window layers)
    and DeepSeek-V3 (multi-head latent attention, shared experts, leading
    dense layers).  Any field that changes the arithmetic and is not read is
    refused by name; defaults a checkpoint relies on are listed in ``notes``.

    >>> cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
    ...        "intermediate_size": 8192, "num_hidden_layers": 16,
    ...        "num_attention_heads": 32, "num_key_value_heads": 8,
    ...        "vocab_size": 128256, "tie_word_embeddings": True}
    >>> model_from_hf_config(cfg).params
    1235814400
    """
    where = f"model config {name!r}"
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object")
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not archs:
        raise ValueError(f"{where}: missing key 'architectures'; supported: {', '.join(_ARCHITECTURES)}")
    arch = archs[0]
    if arch not in _ARCHITECTURES:
        raise ValueError(f"{where}: unsupported architecture {arch!r}; supported: {', '.join(_ARCHITECTURES)}")
    family = _ARCHITECTURES[arch]
    notes: list[str] = []
    extra_params = 0
    if arch == "Gemma3ForConditionalGeneration":
        text = config.get("text_config")
        if not isinstance(text, dict):
            raise ValueError(f"{where}: missing key 'text_config' (the language model of {arch})")
        extra_params = _siglip_params(config.get("vision_config"), text.get("hidden_size"), where)
        config = {**{k: v for k, v in config.items() if k in ("torch_dtype", "dtype", "quantization_config")}, **text}
    defaults = _CLASS_DEFAULTS.get(family, {})
    for key, value in defaults.items():
        if key not in config and not (key == "sliding_window_pattern" and "layer_types" in config):
            notes.append(f"{key} = {value} (transformers' {family} default; the config does not state it)")
    cfg = {**defaults, **config}
    if family == "llama" and (cfg.get("num_local_experts") or cfg.get("num_experts")):
        raise ValueError(f"{where}: {arch} with experts is not a known layout; MoE architectures read: "
                         "MixtralForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM")

    def need_int(key: str, default: Any = None, minimum: int = 1) -> int:
        value = cfg.get(key, default)
        if value is None:
            raise ValueError(f"{where}: missing key {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < minimum:
            kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ValueError(f"{where}: {key} must be {kind}, got {value!r}")
        return int(value)

    def flag(key: str, default: bool = False) -> bool:
        value = cfg.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{where}: {key} must be true or false, got {value!r}")
        return value

    hidden = need_int("hidden_size")
    heads = need_int("num_attention_heads")
    n_layers = need_int("num_hidden_layers")
    fields: dict[str, Any] = {}
    if family == "deepseek_v3":
        fields.update(kv_lora_rank=need_int("kv_lora_rank"), q_lora_rank=need_int("q_lora_rank", 0, minimum=0),
                      qk_rope_head_dim=need_int("qk_rope_head_dim"), qk_nope_head_dim=need_int("qk_nope_head_dim"),
                      v_head_dim=need_int("v_head_dim"))
        head_dim = fields["qk_nope_head_dim"] + fields["qk_rope_head_dim"]
        kv_heads = heads
    else:
        if cfg.get("head_dim") is not None:
            head_dim = need_int("head_dim")
        elif hidden % heads == 0:
            head_dim = hidden // heads
        else:
            raise ValueError(f"{where}: missing key 'head_dim' (hidden_size is not a multiple of num_attention_heads)")
        kv_heads = need_int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise ValueError(f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})")
    tie = flag("tie_word_embeddings")
    attention_bias = flag("attention_bias")
    if cfg.get("mlp_bias"):
        raise ValueError(f"{where}: mlp_bias=true is not supported")

    # Mixture of experts.
    if family in ("mixtral", "qwen3_moe", "gpt_oss", "deepseek_v3"):
        experts_key = {"mixtral": "num_local_experts", "gpt_oss": "num_local_experts"}.get(family, "num_experts")
        if family == "deepseek_v3":
            experts_key = "n_routed_experts"
        per_tok_key = "experts_per_token" if family == "gpt_oss" and "num_experts_per_tok" not in cfg else "num_experts_per_tok"
        n_exp, k = need_int(experts_key), need_int(per_tok_key)
        if k > n_exp:
            raise ValueError(f"{where}: {per_tok_key} ({k}) exceeds {experts_key} ({n_exp})")
        moe_size = need_int("moe_intermediate_size") if family in ("qwen3_moe", "deepseek_v3") else need_int("intermediate_size")
        fields.update(n_experts=n_exp, n_active_experts=k, moe_intermediate_size=moe_size)
        if family == "qwen3_moe":
            if need_int("decoder_sparse_step", 1) != 1:
                raise ValueError(f"{where}: decoder_sparse_step other than 1 is not modelled")
            dense = cfg.get("mlp_only_layers") or []
            if not isinstance(dense, list):
                raise ValueError(f"{where}: mlp_only_layers must be a list of layer indices")
            fields["n_dense_layers"] = len(set(dense))
        if family == "deepseek_v3":
            if need_int("moe_layer_freq", 1) != 1:
                raise ValueError(f"{where}: moe_layer_freq other than 1 is not modelled")
            fields.update(n_shared_experts=need_int("n_shared_experts", 0, minimum=0),
                          n_dense_layers=need_int("first_k_dense_replace", 0, minimum=0),
                          n_mtp_layers=need_int("num_nextn_predict_layers", 0, minimum=0))
            if cfg.get("n_group") and cfg.get("topk_group"):
                notes.append(f"group-limited routing (each token picks experts from {cfg['topk_group']} of {cfg['n_group']} "
                             "groups) is read as uniform over all experts: every group is equally likely")
        if family == "gpt_oss":
            fields.update(expert_bias=True, attention_sinks=True)

    # Sliding-window layers.
    window, n_sliding = _sliding_layers(cfg, family, n_layers, where)
    if window:
        fields.update(sliding_window=window, n_sliding_layers=n_sliding)
    if family == "gemma3":
        fields["norms_per_layer"] = 4  # input, post-attention, pre- and post-feedforward

    # Precision.
    raw = cfg.get("torch_dtype", cfg.get("dtype"))
    if raw is None:
        raw = "bfloat16"
        notes.append("torch_dtype = bfloat16 (the config does not state it)")
    if str(raw) not in _TORCH_DTYPES:
        raise ValueError(f"{where}: torch_dtype {raw!r} is not one of {', '.join(_TORCH_DTYPES)}")
    base = _TORCH_DTYPES[str(raw)]
    weight, expert, kv = base, None, None
    if cfg.get("quantization_config") is not None:
        weight, expert, kv = _quantisation(cfg, where, base, bool(fields.get("n_experts")))
    return ModelShape(
        name=name,
        vocab_size=need_int("vocab_size"),
        hidden_size=hidden,
        intermediate_size=need_int("intermediate_size"),
        n_layers=n_layers,
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=head_dim,
        tie_embeddings=tie,
        qkv_bias=arch in _QKV_BIAS_ARCHITECTURES or attention_bias,
        o_bias=attention_bias and arch not in _QKV_BIAS_ARCHITECTURES,
        qk_norm=arch in _QK_NORM_ARCHITECTURES,
        weight_dtype=weight,
        expert_dtype=expert,
        head_dtype=base if weight != base or expert else None,
        kv_dtype=kv or base,
        extra_params=extra_params,
        architecture=arch,
        notes=tuple(notes),
        max_position_embeddings=need_int("max_position_embeddings", 0, minimum=0),
        **fields,
    )


def _sliding_layers(cfg: dict, family: str, n_layers: int, where: str) -> tuple[int, int]:
    """(window, number of window layers) from ``layer_types``, Gemma 3's pattern, or Mistral's all-layer window."""
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ValueError(f"{where}: layer_types must list one type per layer ({n_layers})")
        unknown = sorted(set(map(str, types)) - {"sliding_attention", "full_attention"})
        if unknown:
            raise ValueError(f"{where}: layer type(s) {', '.join(unknown)} not modelled; supported: sliding_attention, full_attention")
        n_sliding = sum(t == "sliding_attention" for t in types)
    elif family == "gemma3":
        pattern = cfg.get("sliding_window_pattern")
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise ValueError(f"{where}: sliding_window_pattern must be a positive integer, got {pattern!r}")
        n_sliding = n_layers - n_layers // pattern  # every pattern-th layer is global
    elif family in ("llama", "mixtral") and window is not None:
        if cfg.get("use_sliding_window") is False:  # Qwen2/Qwen3 carry a window they do not use
            return 0, 0
        if cfg.get("use_sliding_window") is True:
            raise ValueError(f"{where}: use_sliding_window=true (windows on some layers only) is not modelled")
        n_sliding = n_layers  # Mistral-7B-v0.1: every layer attends to the last sliding_window tokens
    else:
        return 0, 0
    if n_sliding == 0:
        return 0, 0
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"{where}: sliding_window must be a positive integer for the window layers, got {window!r}")
    return window, n_sliding


def _siglip_params(vision: Any, text_hidden: Any, where: str) -> int:
    """Parameters of Gemma 3's SigLIP vision encoder and projector: resident in memory, idle while decoding."""
    if not isinstance(vision, dict) or vision.get("model_type") != "siglip_vision_model":
        raise ValueError(f"{where}: vision_config must be a siglip_vision_model (the encoder Gemma 3 ships)")
    try:
        d, f, n = (int(vision[k]) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
        patch, image = int(vision["patch_size"]), int(vision["image_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: vision_config needs hidden_size, intermediate_size, num_hidden_layers, patch_size "
                         f"and image_size ({exc})") from None
    layer = 4 * (d * d + d) + 2 * d * f + f + d + 4 * d  # q, k, v, o with biases; MLP with biases; two layer norms
    embed = 3 * patch * patch * d + d + (image // patch) ** 2 * d
    if isinstance(text_hidden, bool) or not isinstance(text_hidden, int) or text_hidden < 1:
        raise ValueError(f"{where}: text_config.hidden_size must be a positive integer, got {text_hidden!r}")
    projector = d + d * text_hidden  # soft-embedding norm and the projection into the text model
    return n * layer + embed + 2 * d + projector


def format_count(n: float) -> str:
    """A parameter count for people, three significant digits.

    >>> format_count(8030261248), format_count(494032768)
    ('8.03B', '494M')
    """
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:g}"
