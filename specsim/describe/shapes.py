"""Model shapes: the operations of a pass, parameter counts, weight bytes, KV-cache bytes and FLOP of a decoder.

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

Chunked local attention (Llama 4)
    A chunked layer attends within its chunk of ``attention_chunk_size``
    tokens only (transformers' ``chunked_attention`` mask): a token at
    position ``L`` reads ``L mod C`` cached tokens, and the cache holds at
    most ``C`` (vLLM's ``ChunkedLocalAttentionSpec``), so reads are
    ``n_chunked (L mod C)`` and the reservation ``n_chunked min(L, C)``.

Recurrent layers (Gated DeltaNet: Qwen3-Next, Qwen3.5/3.6; Mamba-2: Nemotron-H)
    A fixed state per sequence instead of a KV cache, read and written by
    every pass: :mod:`specsim.describe.recurrent` has the shapes, the FLOP and
    how a pass of several tokens goes through them.

Layer kinds
    ``n_layers`` blocks: ``n_recurrent_layers`` have a recurrent mixer,
    ``n_mixer_free_layers`` none (Nemotron-H's MLP and MoE blocks), the rest
    attention (of which ``n_sliding_layers`` and ``n_chunked_layers`` are
    local); ``n_ffn_free_layers`` have no MLP (Nemotron-H's mixer blocks), the
    MoE layers are ``n_layers - n_dense_layers - n_ffn_free_layers``.

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

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from specsim.describe import recurrent
from specsim.describe.ops import (
    BYTES_PER_ELEMENT,
    KV_DTYPE_CHOICES,
    RECURRENT_KINDS,
    RECURRENT_VERIFY_MODES,
    REPLAY_BUFFER_TOKENS,
    WEIGHT_DTYPE_CHOICES,
    Op,
    _positive_int,
)

__all__ = [
    "BYTES_PER_ELEMENT",
    "KV_DTYPE_CHOICES",
    "ModelShape",
    "Op",
    "RECURRENT_KINDS",
    "RECURRENT_VERIFY_MODES",
    "REPLAY_BUFFER_TOKENS",
    "WEIGHT_DTYPE_CHOICES",
    "format_count",
]


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
    gated_mlp : bool
        Gated (SwiGLU: gate, up, down) MLPs and experts; False for Nemotron-H's squared-ReLU MLPs (up, down).
    attn_output_gate : bool
        A sigmoid output gate on attention (Qwen3-Next, Qwen3.5): the q projection is twice as wide.
    qk_norm_all_heads : bool
        q/k norms over all heads (MiniMax-M2's per-layer norms, ``(H + KV) head_dim`` weights) instead of per head.
    shared_expert_size, shared_expert_gate : int, bool
        MLP size of each shared expert (0: ``moe_intermediate_size``) and its sigmoid gate (Qwen3-Next, ``d`` weights).
    n_recurrent_layers, recurrent_kind : int, str
        Layers whose mixer is recurrent, and which recurrence: ``"gdn"`` (Gated DeltaNet) or ``"mamba2"``.
    rec_heads, rec_head_dim, rec_state_dim, rec_groups, rec_conv_kernel : int
        Recurrent heads ``H`` (GDN value heads), their dimension ``P``, the state's other dimension ``N`` (GDN key
        dim, Mamba-2 ssm_state_size), key heads or B/C groups ``G``, and the convolution width ``K``.
    rec_conv_bias : bool
        A bias on the convolution (Mamba-2's use_conv_bias).
    rec_chunk : int
        Tokens per chunk of the recurrent layers' prompt kernels (GDN: 64, the kernels' own; Mamba-2: the config's
        chunk_size); what a prompt's state traffic scales with (:func:`specsim.describe.recurrent.prompt_bytes`).
    state_dtype : str or None
        Storage of the recurrent state (vLLM's mamba_ssm_cache_dtype; None: the model's 16-bit type).
    recurrent_verify : str
        How a pass of several tokens goes through the recurrent layers: ``"checkpoint"`` (one state written per
        token, vLLM's and SGLang's default) or ``"replay"`` (one checkpoint, inputs logged and replayed).
    n_mixer_free_layers, n_ffn_free_layers : int
        Blocks without a token mixer or without an MLP (Nemotron-H's pattern of single-purpose blocks).
    attention_chunk_size, n_chunked_layers : int
        Llama 4's chunked local attention: the chunk and how many layers use it (0: none).
    moe_latent_size : int
        Experts that work in a latent space of this width, projected from and back to ``d`` once per MoE layer
        (Nemotron 3 Super and Ultra; 0: experts read the hidden state).
    routing_correlation : float
        rho in [0, 1): the share of a token's routed experts that repeat its predecessor's in the same sequence
        (0: every token routes independently, the bound; see :meth:`experts_touched`).
    vocab_from_target : bool
        Embedding and LM head are the target's (an MTP layer): read by a pass, held and counted by the target.

    Examples
    --------
    >>> from specsim.describe.models import get_model
    >>> m = get_model("llama-3.1-8b")
    >>> m.params, m.kv_bytes_per_token
    (8030261248, 131072.0)
    >>> moe = get_model("qwen3-30b-a3b")
    >>> round(float(moe.experts_touched(1))), round(float(moe.experts_touched(4)), 1)
    (8, 29.1)
    """

    def __repr__(self) -> str:  # a notebook's echo: the model in one line (the fields in full: dataclasses.fields)
        return f"ModelShape({self.describe()})"

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
    gated_mlp: bool = True
    attn_output_gate: bool = False
    qk_norm_all_heads: bool = False
    shared_expert_size: int = 0
    shared_expert_gate: bool = False
    n_recurrent_layers: int = 0
    recurrent_kind: str = ""
    rec_heads: int = 0
    rec_head_dim: int = 0
    rec_state_dim: int = 0
    rec_groups: int = 0
    rec_conv_kernel: int = 0
    rec_conv_bias: bool = False
    rec_chunk: int = 0
    state_dtype: str | None = None
    recurrent_verify: str = "checkpoint"
    n_mixer_free_layers: int = 0
    n_ffn_free_layers: int = 0
    attention_chunk_size: int = 0
    n_chunked_layers: int = 0
    routing_correlation: float = 0.0
    moe_latent_size: int = 0
    vocab_from_target: bool = False

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        for key in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "n_layers",
            "n_heads",
            "n_kv_heads",
            "head_dim",
            "tp",
        ):
            _positive_int(where, key, getattr(self, key))
        for key in (
            "norms_per_layer",
            "n_experts",
            "n_active_experts",
            "moe_intermediate_size",
            "n_shared_experts",
            "n_dense_layers",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
            "sliding_window",
            "n_sliding_layers",
            "extra_params",
            "n_mtp_layers",
            "extra_linear_params",
            "max_position_embeddings",
            "shared_expert_size",
            "n_recurrent_layers",
            "rec_heads",
            "rec_head_dim",
            "rec_state_dim",
            "rec_groups",
            "rec_conv_kernel",
            "rec_chunk",
            "n_mixer_free_layers",
            "n_ffn_free_layers",
            "attention_chunk_size",
            "n_chunked_layers",
            "moe_latent_size",
        ):
            _positive_int(where, key, getattr(self, key), minimum=0)
        self._check_layout(where)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{where}: n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        for key in ("weight_dtype", "kv_dtype", "expert_dtype", "head_dtype", "state_dtype"):
            value = getattr(self, key)
            if value is not None and value not in BYTES_PER_ELEMENT:
                raise ValueError(f"{where}: {key} must be one of {', '.join(BYTES_PER_ELEMENT)}, got {value!r}")
        if self.params_override is not None:
            _positive_int(where, "params_override", self.params_override)
        if self.n_experts:
            if not 1 <= self.n_active_experts <= self.n_experts:
                raise ValueError(
                    f"{where}: experts per token ({self.n_active_experts}) must be between 1 and the number "
                    f"of experts ({self.n_experts})"
                )
            if self.moe_intermediate_size < 1:
                raise ValueError(f"{where}: an MoE model needs moe_intermediate_size >= 1")
            if self.n_dense_layers + self.n_ffn_free_layers >= self.n_layers:
                raise ValueError(
                    f"{where}: n_dense_layers ({self.n_dense_layers}) and layers without an MLP "
                    f"({self.n_ffn_free_layers}) leave no MoE layer of the {self.n_layers}"
                )
        elif self.n_active_experts or self.n_shared_experts:
            raise ValueError(f"{where}: experts per token or shared experts given without routed experts")
        eff = self.routing_effective_experts
        if eff is not None:
            if isinstance(eff, bool) or not isinstance(eff, (int, float)) or not math.isfinite(eff):
                raise ValueError(f"{where}: routing_effective_experts must be a number, got {eff!r}")
            if not self.n_experts:  # (as routing_correlation says: a range of 0..0 names nothing to choose from)
                raise ValueError(f"{where}: routing_effective_experts applies to routed experts; the model has none")
            if not self.n_active_experts <= eff <= self.n_experts:
                raise ValueError(
                    f"{where}: routing_effective_experts must lie between the experts per token and the "
                    f"number of experts ({self.n_active_experts}..{self.n_experts}), got {eff!r}"
                )
        if self.kv_lora_rank and (self.qk_rope_head_dim < 1 or self.qk_nope_head_dim < 1 or self.v_head_dim < 1):
            raise ValueError(
                f"{where}: multi-head latent attention needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim"
            )
        if self.n_sliding_layers + self.n_chunked_layers > self.n_attention_layers:
            raise ValueError(
                f"{where}: window and chunked layers ({self.n_sliding_layers} + {self.n_chunked_layers}) exceed "
                f"the {self.n_attention_layers} attention layers"
            )
        if bool(self.sliding_window) != bool(self.n_sliding_layers):
            raise ValueError(f"{where}: sliding_window and n_sliding_layers must both be set or both be 0")
        if bool(self.attention_chunk_size) != bool(self.n_chunked_layers):
            raise ValueError(f"{where}: attention_chunk_size and n_chunked_layers must both be set or both be 0")
        rho = self.routing_correlation
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0.0 <= rho < 1.0:
            raise ValueError(f"{where}: routing_correlation must be a number in [0, 1), got {rho!r}")
        if rho and not self.n_experts:
            raise ValueError(f"{where}: routing_correlation applies to routed experts; the model has none")
        if self.n_heads % self.tp:
            raise ValueError(f"{where}: tensor parallelism {self.tp} must divide the {self.n_heads} attention heads")
        if not self.is_mla and self.n_kv_heads % self.tp and self.tp % self.n_kv_heads:
            raise ValueError(
                f"{where}: tensor parallelism {self.tp} and the {self.n_kv_heads} KV heads must divide one "
                "another (engines split or replicate whole KV heads)"
            )

    def _check_layout(self, where: str) -> None:
        """The layer kinds add up, and a recurrent layer has every size its state needs."""
        if self.n_recurrent_layers + self.n_mixer_free_layers > self.n_layers:
            raise ValueError(
                f"{where}: recurrent layers ({self.n_recurrent_layers}) and layers without a mixer "
                f"({self.n_mixer_free_layers}) exceed the {self.n_layers} layers (a head built from a hybrid "
                "target keeps only attention layers: set n_recurrent_layers to 0)"
            )
        if self.n_ffn_free_layers > self.n_layers:
            raise ValueError(
                f"{where}: layers without an MLP ({self.n_ffn_free_layers}) exceed the {self.n_layers} layers"
            )
        if self.recurrent_verify not in RECURRENT_VERIFY_MODES:
            raise ValueError(
                f"{where}: recurrent_verify must be one of {', '.join(RECURRENT_VERIFY_MODES)}, "
                f"got {self.recurrent_verify!r}"
            )
        if not self.n_recurrent_layers:
            if self.recurrent_kind:
                raise ValueError(f"{where}: recurrent_kind {self.recurrent_kind!r} given without recurrent layers")
            return
        if self.recurrent_kind not in RECURRENT_KINDS:
            raise ValueError(
                f"{where}: recurrent_kind must be one of {', '.join(RECURRENT_KINDS)}, got {self.recurrent_kind!r}"
            )
        for key in ("rec_heads", "rec_head_dim", "rec_state_dim", "rec_groups", "rec_conv_kernel", "rec_chunk"):
            _positive_int(where, key, getattr(self, key))
        if self.rec_heads % self.tp or self.rec_groups % self.tp and self.tp % self.rec_groups:
            raise ValueError(
                f"{where}: tensor parallelism {self.tp} must divide the {self.rec_heads} recurrent heads, and "
                f"the {self.rec_groups} key heads or groups and it must divide one another"
            )

    # -- kinds ---------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_hybrid(self) -> bool:
        """Whether some layers are recurrent (a fixed state per sequence) instead of attention."""
        return self.n_recurrent_layers > 0

    @property
    def n_attention_layers(self) -> int:
        """Layers whose mixer is attention (all of them but recurrent and mixer-free blocks)."""
        return self.n_layers - self.n_recurrent_layers - self.n_mixer_free_layers

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers - self.n_ffn_free_layers if self.is_moe else 0

    @property
    def n_mlp_layers(self) -> int:
        """Layers with a dense MLP (an MoE model's dense layers; every layer with an MLP of a dense model)."""
        return self.n_layers - self.n_ffn_free_layers - self.n_moe_layers

    @property
    def n_full_layers(self) -> int:
        """Attention layers that attend to the whole context."""
        return self.n_attention_layers - self.n_sliding_layers - self.n_chunked_layers

    @property
    def expert_dtype_(self) -> str:
        return self.expert_dtype or self.weight_dtype

    @property
    def head_dtype_(self) -> str:
        return self.head_dtype or self.weight_dtype

    # -- the weights of a pass: one list that sizes the model and feeds every timing source ----------
    def ops(self, tp: int | None = None) -> tuple[Op, ...]:
        """Every weight of the model on one of ``tp`` tensor-parallel ranks (default the model's own), as :class:`Op`.

        The one list of a forward pass's weights: parameter counts, resident and streamed bytes and matmul
        FLOP are sums over it, and the kernel source prices its matmuls' (n, k) shapes.  Column-parallel
        layers split n, row-parallel ones split k; KV heads split while ``tp <= n_kv_heads`` and are
        replicated beyond; routers, norms and MLA down-projections are replicated on every rank.

        >>> from specsim.describe.models import get_model
        >>> [(op.name, op.n, op.k, op.count) for op in get_model("llama-3.2-1b").ops() if op.is_matmul]
        [('qkv', 3072.0, 2048, 16), ('o', 2048, 2048.0, 16), ('gate_up', 16384.0, 2048, 16), ('down', 2048, 8192.0, 16), ('lm_head', 128256.0, 2048, 1)]
        """
        return _ops(self, self.tp if tp is None else tp)

    def _build_ops(self, tp: int) -> tuple[Op, ...]:
        d, layers = self.hidden_size, self.n_layers
        out = self._attention_ops(tp) + self._recurrent_ops(tp)
        dense = self.n_mlp_layers
        f, up = self.intermediate_size, 2 if self.gated_mlp else 1  # gate and up, or up alone (squared ReLU)
        out += [Op("gate_up", "linear", dense, up * f / tp, d), Op("down", "linear", dense, d, f / tp)]
        # An untied input table is gathered (one row per token), the LM head multiplied; a tied table is both.
        out += [
            Op("embedding", "head", 0 if self.tie_embeddings else 1, self.vocab_size / tp, d, gather=True),
            Op("lm_head", "head", 1, self.vocab_size / tp, d),
        ]
        moe = self.n_moe_layers
        if self.is_moe:
            e, fe = self.n_experts, self.moe_intermediate_size
            shared = self.n_shared_experts * (self.shared_expert_size or fe)
            width = self.moe_latent_size or d  # latent experts read and write the latent, projected once per layer
            out += [
                Op("router", "linear", moe, e, d, vectors=e if self.expert_bias else 0),
                Op("shared_gate_up", "linear", moe, up * shared / tp, d, vectors=d if self.shared_expert_gate else 0),
                Op("shared_down", "linear", moe, d, shared / tp),
                Op("latent_down", "linear", moe, self.moe_latent_size, d),
                Op("latent_up", "linear", moe, d, self.moe_latent_size),
                Op("expert_gate_up", "expert", moe * e, up * fe / tp, width),
                Op(
                    "expert_down",
                    "expert",
                    moe * e,
                    width,
                    fe / tp,
                    vectors=(2 * fe + d) / tp if self.expert_bias else 0,
                ),
            ]
        out += [
            Op("layer_norms", "norms", layers, vectors=self.norms_per_layer * d),
            Op("final_norm", "norms", 1, vectors=d),
        ]
        # An EAGLE head's feature projection is a parameter count without one (n, k) shape: it is read and multiplied
        # every pass (bytes and FLOP) but not priced by the kernel source.
        out.append(Op("feature_projection", "linear", 1, vectors=self.extra_linear_params / tp))
        return tuple(op for op in out if op.count > 0 and (op.params > 0 or op.state_elems > 0))

    def _recurrent_ops(self, tp: int) -> list[Op]:
        return recurrent.recurrent_ops(self, tp)

    def _attention_ops(self, tp: int) -> list[Op]:
        """The attention projections of a layer (and its biases, sinks and q/k norms) on one of ``tp`` ranks."""
        d, H, layers = self.hidden_size, self.n_heads, self.n_attention_layers
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            ql, kl, rope = self.q_lora_rank, self.kv_lora_rank, self.qk_rope_head_dim
            ops = [Op("q_a", "linear", layers, ql, d, vectors=ql)] if ql else []  # down-projection and its norm
            ops += [
                Op("q_b" if ql else "q", "linear", layers, H / tp * qk, ql if ql else d),
                Op("kv_a", "linear", layers, kl + rope, d, vectors=kl),
                Op("kv_b", "linear", layers, H / tp * (self.qk_nope_head_dim + self.v_head_dim), kl),
                Op("o", "linear", layers, d, H / tp * self.v_head_dim),
            ]
            return ops
        hd = self.head_dim
        heads = H / tp
        kv_heads = self.n_kv_heads / tp if self.n_kv_heads >= tp else 1
        q_rows = (2 if self.attn_output_gate else 1) * heads  # an output gate doubles q_proj (query and gate)
        norm = ((heads + kv_heads) * hd if self.qk_norm_all_heads else 2 * hd) if self.qk_norm else 0
        vectors = (
            ((heads + 2 * kv_heads) * hd if self.qkv_bias else 0)
            + (d if self.o_bias else 0)
            + (heads if self.attention_sinks else 0)
            + norm
        )
        return [
            Op("qkv", "linear", layers, (q_rows + 2 * kv_heads) * hd, d),
            Op("o", "linear", layers, d, heads * hd),
            Op("attention_vectors", "linear", layers, vectors=vectors),
        ]

    def _params(
        self, names: tuple[str, ...] | None = None, part: str | None = None, tp: int = 1, per_instance: bool = False
    ) -> float:
        """Parameters of the ops with these names or in this storage part (all by default), summed over the model."""
        return sum(
            op.params * (1 if per_instance else op.count)
            for op in self.ops(tp)
            if (names is None or op.name in names) and (part is None or op.part == part)
        )

    @property
    def dense_mlp_params(self) -> int:
        """One dense MLP: gate, up and down, 3 d f (2 d f ungated; the ``gate_up`` and ``down`` ops at one rank)."""
        return (3 if self.gated_mlp else 2) * self.hidden_size * self.intermediate_size

    @property
    def expert_params(self) -> int:
        """One routed expert (gated MLP of moe_intermediate_size, with biases in gpt-oss)."""
        return int(self._params(part="expert", per_instance=True))

    @property
    def router_params(self) -> int:
        return int(self._params(("router",), per_instance=True))

    @property
    def params_per_layer(self) -> int:
        """Parameters of one dense layer (attention, dense MLP, norms); MoE layers: see ``computed_params``."""
        attention = self._params(
            ("q_a", "q_b", "q", "kv_a", "kv_b", "qkv", "o", "attention_vectors"), per_instance=True
        )
        return int(attention + self.dense_mlp_params + self.norms_per_layer * self.hidden_size)

    @property
    def embedding_params(self) -> int:
        """Parameters of one vocabulary matrix (input embedding or LM head)."""
        return self.vocab_size * self.hidden_size

    @property
    def computed_params(self) -> int:
        """Total parameters computed from the shape (vision encoder and MTP layers not included)."""
        return int(self._params())

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
        """Per-rank parameters of each storage group: linear (weight dtype), one expert, one vocabulary matrix, norms."""
        return _rank_parts(self)

    def _count_rank_parts(self) -> dict[str, float]:
        tp = self.tp
        return {
            "linear": self._params(part="linear", tp=tp),
            "expert": self._params(part="expert", tp=tp, per_instance=True),
            "head": self._params(("lm_head",), tp=tp),
            "norms": self._params(part="norms", tp=tp),
        }

    def experts_touched(self, tokens: object, tokens_per_seq: object = 1) -> np.ndarray:
        """Expected distinct routed experts one MoE layer reads for ``tokens`` tokens in sequences of ``tokens_per_seq``.

        Independent uniform routing (the bound): E_eff (1 - (1 - k/E_eff)^m).  With ``routing_correlation``
        rho, each token after a sequence's first repeats a share rho of its predecessor's experts and draws the
        rest afresh, so one sequence's q tokens route like 1 + (q - 1)(1 - rho) independent ones, and the pass
        reads E_eff (1 - (1 - k/E_eff)^(b (1 + (q - 1)(1 - rho)))) with b = m / q sequences: rho = 0 is the
        independent model, and a decode step (q = 1) reads the same either way.

        >>> from specsim.describe.models import get_model
        >>> import dataclasses
        >>> m = get_model("qwen3-30b-a3b")
        >>> round(float(m.experts_touched(16, 4)), 1), round(float(dataclasses.replace(m, routing_correlation=0.5).experts_touched(16, 4)), 1)
        (82.4, 60.9)
        """
        m = np.asarray(tokens, dtype=float)
        if not self.is_moe:
            return np.zeros_like(m)
        q = np.asarray(tokens_per_seq, dtype=float)
        e = float(self.routing_effective_experts or self.n_experts)
        rho = self.routing_correlation
        independent = m / q * (1.0 + (q - 1.0) * (1.0 - rho)) if rho else m * np.ones_like(q)
        return e * (1.0 - (1.0 - self.n_active_experts / e) ** independent)

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights resident on one rank (every expert, both vocabulary matrices, a vision encoder)."""
        if self.params_override is not None:
            return self.params * self.bytes_per_weight / self.tp
        p = self._rank_parts()
        head = BYTES_PER_ELEMENT[self.head_dtype_]
        vocab = 0.0 if self.vocab_from_target else (1 if self.tie_embeddings else 2) * p["head"]
        experts = self.n_moe_layers * self.n_experts * p["expert"] * BYTES_PER_ELEMENT[self.expert_dtype_]
        return p["linear"] * self.bytes_per_weight + experts + (vocab + p["norms"] + self.extra_params / self.tp) * head

    @property
    def total_weight_bytes(self) -> float:
        """Bytes of weights over all ranks."""
        return self.weight_bytes * self.tp

    def weight_bytes_read(self, tokens: object = 1, tokens_per_seq: object = 1) -> np.ndarray:
        """Bytes of weights one rank reads in a pass of ``tokens`` tokens, ``tokens_per_seq`` per sequence (MoE: the
        experts they touch, :meth:`experts_touched`)."""
        m = np.asarray(tokens, dtype=float)
        if self.params_override is not None:
            return np.full(
                np.broadcast_shapes(m.shape, np.shape(tokens_per_seq)), self.params * self.bytes_per_weight / self.tp
            )
        p = self._rank_parts()
        head = BYTES_PER_ELEMENT[self.head_dtype_]
        # A tied table is read in full as the LM head; an untied input table only has rows gathered.
        fixed = p["linear"] * self.bytes_per_weight + (p["head"] + p["norms"]) * head
        touched = self.experts_touched(m, tokens_per_seq)
        experts = self.n_moe_layers * touched * p["expert"] * BYTES_PER_ELEMENT[self.expert_dtype_]
        return fixed + experts

    @property
    def streamed_weight_bytes(self) -> float:
        """Bytes of weights one rank reads in a one-token pass."""
        return float(self.weight_bytes_read(1))

    def matmul_flop_by_dtype(self, tokens: object, sampled: object = None) -> list[tuple[np.ndarray, str]]:
        """FLOP of the weight matmuls of one rank for ``tokens`` tokens, grouped by the dtype that sets their rate; the
        LM head multiplies only the ``sampled`` tokens (default: every token; a prompt's pass samples its last)."""
        m = np.asarray(tokens, dtype=float)
        if self.params_override is not None:
            return [(2.0 * self.params / self.tp * m, self.weight_dtype)]
        s = m if sampled is None else np.asarray(sampled, dtype=float)
        p = self._rank_parts()
        experts = self.n_moe_layers * self.n_active_experts * p["expert"]
        # Norms count 2 FLOP per weight like the matmuls, as the article's 2N FLOP per token does.
        return [
            (2.0 * p["linear"] * m, self.weight_dtype),
            (2.0 * experts * m, self.expert_dtype_),
            (2.0 * (p["head"] * s + p["norms"] * m), self.head_dtype_),
        ]

    def matmul_weights_by_dtype(
        self, tokens: object, tokens_per_seq: object = 1
    ) -> list[tuple[np.ndarray, np.ndarray, str]]:
        """(weights multiplied, tokens each of them multiplies, storage dtype) of one rank's pass of ``tokens`` tokens:
        the blocks' linear weights see every token; each routed expert a pass touches (:meth:`experts_touched`) sees
        m k / D of them on average; the head the tokens in the 16-bit type.  What a dequantising kernel's tiles count."""
        m = np.asarray(tokens, dtype=float)
        p = self._rank_parts()
        out = [
            (np.full(m.shape, p["linear"]), m, self.weight_dtype),
            (np.full(m.shape, p["head"] + p["norms"]), m, self.head_dtype_),
        ]
        if self.is_moe and self.params_override is None:
            touched = np.maximum(self.experts_touched(m, tokens_per_seq), 1e-12)
            out.append(
                (self.n_moe_layers * touched * p["expert"], m * self.n_active_experts / touched, self.expert_dtype_)
            )
        return out

    # -- per rank: KV cache and attention ------------------------------------------
    @property
    def kv_bytes_per_token_per_layer(self) -> float:
        """KV-cache bytes one rank stores per token per layer (MLA: the replicated latent)."""
        elem = BYTES_PER_ELEMENT[self.kv_dtype]
        if self.is_mla:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * elem
        return 2.0 * self.kv_heads_per_rank * self.head_dim * elem

    @property
    def kv_heads_per_rank(self) -> float:
        """KV heads one rank caches: n_kv_heads / tp, or one replicated where there are fewer heads than ranks."""
        return self.n_kv_heads / self.tp if self.n_kv_heads >= self.tp else 1

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token over all attention layers on one rank, below any sliding window."""
        return self.n_attention_layers * self.kv_bytes_per_token_per_layer

    def memory_said(self) -> list[str]:
        """How its memory per GPU is counted (``specsim capacity -v``): the weights, from the parameters and their
        storage, and the KV cache per token, from the layers, heads and cache dtype (:attr:`kv_bytes_per_token`).

        >>> from specsim.describe.models import get_model
        >>> get_model("llama-3.1-8b").memory_said()[1]
        'llama-3.1-8b: KV 32 attention layers x 2 (K, V) x 8 KV heads x 128 dims x 2 bytes (bf16) = 131,072 bytes per token'
        """
        tp = f" at TP {self.tp}" if self.tp > 1 else ""
        stored = (
            self.weight_dtype
            if self.expert_dtype_ == self.weight_dtype
            else f"{self.weight_dtype}, experts {self.expert_dtype_}"
        )
        # the parameters weight_bytes holds: a drafter reading the target's vocabulary leaves its matrices out
        counted = self.non_embedding_params + self.extra_params if self.vocab_from_target else self.total_params
        lines = [
            f"{self.name}: weights {format_count(counted)} parameters ({stored}"
            + (f"; vocabulary and norms {self.head_dtype_}" if self.head_dtype_ != self.weight_dtype else "")
            + (
                f"; its vocabulary matrices, {format_count(self.total_params - counted)}, are the target's: not counted"
                if self.vocab_from_target
                else ""
            )
            + f") = {self.weight_bytes / 1e9:.2f} GB per GPU{tp}"
        ]
        elem = BYTES_PER_ELEMENT[self.kv_dtype]
        if self.n_attention_layers:
            if self.is_mla:
                per_layer = f"({self.kv_lora_rank} latent + {self.qk_rope_head_dim} rope dims)"
            else:
                per_layer = f"2 (K, V) x {self.kv_heads_per_rank:g} KV heads{' per GPU' if self.tp > 1 else ''} x {self.head_dim} dims"
            lines.append(
                f"{self.name}: KV {self.n_attention_layers} attention layer{'s' if self.n_attention_layers != 1 else ''} x {per_layer} x {elem:g} byte{'s' if elem != 1 else ''} "
                f"({self.kv_dtype}) = {self.kv_bytes_per_token:,.0f} bytes per token{' per GPU' if self.tp > 1 else ''}"
                + (
                    f"; {self.n_sliding_layers} of the layers keep at most {self.sliding_window:,} tokens"
                    if self.n_sliding_layers
                    else ""
                )
                + (
                    f"; {self.n_chunked_layers} keep a chunk of {self.attention_chunk_size:,}"
                    if self.n_chunked_layers
                    else ""
                )
            )
        if self.is_hybrid:
            lines.append(
                f"{self.name}: recurrent state {self.recurrent_state_bytes / 1e6:.2f} MB per sequence "
                f"({self.n_recurrent_layers} recurrent layers, {self.state_dtype_}), whatever its length"
            )
        return lines

    def attended_tokens(self, context: object) -> np.ndarray:
        """Layer-tokens a sequence at ``context`` caches and attends to:
        n_full L + n_sliding min(L, window) + n_chunked (L mod chunk)."""
        L = np.asarray(context, dtype=float)
        local = np.minimum(L, self.sliding_window) if self.n_sliding_layers else 0.0
        out = self.n_full_layers * L + self.n_sliding_layers * local
        if self.n_chunked_layers:
            out = out + self.n_chunked_layers * np.mod(L, self.attention_chunk_size)
        return out

    def kv_bytes(self, context: object) -> np.ndarray:
        """KV-cache bytes of one sequence at ``context`` tokens on one rank (local layers keep only their window)."""
        return self.kv_bytes_per_token_per_layer * self.attended_tokens(context)

    def kv_bytes_reserved(self, context: object) -> np.ndarray:
        """KV-cache bytes a sequence growing to ``context`` tokens holds at its largest: as :meth:`kv_bytes`, but a
        chunked layer holds up to a whole chunk, min(L, chunk), on the way (vLLM's ChunkedLocalAttentionSpec)."""
        if not self.n_chunked_layers:
            return self.kv_bytes(context)
        L = np.asarray(context, dtype=float)
        spread = self.n_chunked_layers * (
            np.minimum(L, self.attention_chunk_size) - np.mod(L, self.attention_chunk_size)
        )
        return self.kv_bytes(context) + self.kv_bytes_per_token_per_layer * spread

    # -- per rank: recurrent state (the physics: specsim.describe.recurrent) ---------------------
    @property
    def state_dtype_(self) -> str:
        """Storage of the recurrent state: the config's (fp32 for Qwen3.5 and Nemotron 3), else the 16-bit type."""
        return self.state_dtype or self.head_dtype_

    @functools.cached_property
    def recurrent_state_bytes(self) -> float:
        """Bytes of recurrent state one sequence holds on one rank (all recurrent layers; 0 without them).  Read once
        per shape (it is frozen): every sequence's footprint adds it, and summing the ops again cost the simulator
        more than the footprint's arithmetic."""
        return recurrent.state_bytes(self)

    def recurrent_scratch_bytes(self, draft_tokens: object) -> np.ndarray:
        """Bytes a speculating sequence reserves beyond its state for ``draft_tokens`` drafted tokens, per rank."""
        return recurrent.scratch_bytes(self, draft_tokens)

    def recurrent_pass_bytes(self, tokens_per_seq: object, prompt: bool = False) -> np.ndarray:
        """State bytes one sequence's pass of ``tokens_per_seq`` tokens reads and writes, per rank (a ``prompt``'s, through
        the chunked kernels: :func:`specsim.describe.recurrent.prompt_bytes`)."""
        if prompt:
            return recurrent.prompt_bytes(self, tokens_per_seq)
        return recurrent.pass_bytes(self, tokens_per_seq)

    def recurrent_flop(self, tokens: object, tokens_per_seq: object = 1) -> np.ndarray:
        """FLOP of the recurrences themselves (not their projections) for ``tokens`` tokens, per rank."""
        return recurrent.recurrent_flop(self, tokens, tokens_per_seq)

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

    def _attended_before(self, n: np.ndarray) -> np.ndarray:
        """sum over p = 0 .. n-1 of :meth:`attended_tokens` (p): the layer-tokens the first n tokens of a sequence
        attend to, each to those before it (closed forms: a window caps each token's keys, a chunk restarts them)."""
        n = np.asarray(n, dtype=float)
        out = self.n_full_layers * n * (n - 1.0) / 2.0
        if self.n_sliding_layers:
            w = float(self.sliding_window)
            below = np.minimum(n, w + 1.0)  # tokens 0 .. w attend to all before them
            out = out + self.n_sliding_layers * (below * (below - 1.0) / 2.0 + np.maximum(n - w - 1.0, 0.0) * w)
        if self.n_chunked_layers:
            c = float(self.attention_chunk_size)
            whole, rest = np.floor(n / c), np.mod(n, c)
            out = out + self.n_chunked_layers * (whole * c * (c - 1.0) / 2.0 + rest * (rest - 1.0) / 2.0)
        return out

    def pass_attention_flop(self, context: object, tokens_per_seq: object) -> np.ndarray:
        """Attention FLOP of a prompt's pass (or a chunk of one) of ``tokens_per_seq`` new tokens over ``context``
        cached ones, one sequence, one rank: the i-th new token attends to the cache and the i new tokens before it
        (causal), so a prompt of P tokens does about P^2 / 2 token pairs, not none and not P^2.  At one token it is
        :meth:`attention_flop` (context), except for multi-head latent attention, which a prompt runs uncompressed.

        >>> from specsim.describe.models import get_model
        >>> m = get_model("llama-3.1-8b")
        >>> bool(m.pass_attention_flop(1000, 1) == m.attention_flop(1000))
        True
        >>> float(m.pass_attention_flop(0, 4) / m.attention_flop(1))  # 0 + 1 + 2 + 3 keys
        6.0
        """
        L = np.asarray(context, dtype=float)
        q = np.asarray(tokens_per_seq, dtype=float)
        pairs = self._attended_before(L + q) - self._attended_before(L)
        if not self.is_mla:
            return self.attention_flop_per_layer_per_context * pairs
        # A prompt runs multi-head latent attention in its compute-friendly form (vLLM 0.24.0,
        # vllm/v1/attention/backends/mla/common.py: "prefill" up-projects the latent with kv_b_proj and runs attention
        # over qk_nope + qk_rope dimensions and v_head_dim values per head), and up-projects a cached prefix's latents
        # once per chunk (_compute_prefill_context); the prompt's own tokens' up-projection costs what the absorbed
        # form's query and output projections do, already in the weights' FLOP.
        heads = self.n_heads / self.tp
        per_pair = heads * (2.0 * (self.qk_nope_head_dim + self.qk_rope_head_dim) + 2.0 * self.v_head_dim)
        prefix = self.n_full_layers * 2.0 * self.kv_lora_rank * heads * (self.qk_nope_head_dim + self.v_head_dim) * L
        return per_pair * pairs + prefix

    def describe(self) -> str:
        """One line: kind, size and precision, for table headers."""
        kind = []
        if self.is_moe:
            kind.append(
                f"MoE {self.n_active_experts}/{self.n_experts}"
                + (f"+{self.n_shared_experts} shared" if self.n_shared_experts else "")
            )
        if self.is_mla:
            kind.append(f"MLA r{self.kv_lora_rank}")
        if self.n_sliding_layers:
            kind.append(f"{self.n_sliding_layers}/{self.n_layers} layers window {self.sliding_window}")
        if self.n_chunked_layers:
            kind.append(f"{self.n_chunked_layers}/{self.n_layers} layers chunked {self.attention_chunk_size}")
        if self.is_hybrid:
            name = {"gdn": "Gated DeltaNet", "mamba2": "Mamba-2"}[self.recurrent_kind]
            kind.append(f"{self.n_recurrent_layers}/{self.n_layers} layers {name}")
        dtype = (
            self.weight_dtype
            if self.expert_dtype_ == self.weight_dtype
            else f"{self.weight_dtype}, experts {self.expert_dtype_}"
        )
        active = f", {format_count(self.active_params)} active" if self.is_moe else ""
        tp, own = f", TP {self.tp}" if self.tp > 1 else "", format_count(self.non_embedding_params)
        params = (
            f"{own} params of its own, the target's embedding and LM head"
            if self.vocab_from_target
            else f"{format_count(self.params)} params"
        )
        return (
            f"{self.name} ({params}{active}; "
            + (", ".join(kind) + "; " if kind else "")
            + f"weights {dtype}, KV {self.kv_dtype}{tp})"
        )

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
            "vocab_from_target": self.vocab_from_target,
            "qkv_bias": self.qkv_bias,
            "qk_norm": self.qk_norm,
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "weight_bytes": self.weight_bytes,
            "streamed_weight_bytes": self.streamed_weight_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "source": self.source,
        }
        out.update(
            {
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
            }
        )
        # Fields of the layouts read since issue 29, only where a model has them (older outputs keep their keys).
        if self.is_hybrid:
            out.update(
                {
                    k: getattr(self, k)
                    for k in (
                        "n_recurrent_layers",
                        "recurrent_kind",
                        "rec_heads",
                        "rec_head_dim",
                        "rec_state_dim",
                        "rec_groups",
                        "rec_conv_kernel",
                        "rec_chunk",
                        "recurrent_verify",
                    )
                }
            )
            out.update(
                state_dtype=self.state_dtype_,
                recurrent_state_bytes=self.recurrent_state_bytes,
                n_attention_layers=self.n_attention_layers,
            )
        for key in (
            "n_mixer_free_layers",
            "n_ffn_free_layers",
            "attention_chunk_size",
            "n_chunked_layers",
            "routing_correlation",
            "shared_expert_size",
        ):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


def format_count(n: float) -> str:
    """A parameter count for people, three significant digits.

    >>> format_count(8030261248), format_count(494032768)
    ('8.03B', '494M')
    """
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:g}"


# The weights of a shape depend only on its (frozen, hashable) fields: each list and count is built once per distinct
# shape and kept (a sweep asks for them at every point of every pass).
@functools.lru_cache(maxsize=512)
def _ops(shape: ModelShape, tp: int) -> tuple[Op, ...]:
    return shape._build_ops(tp)


@functools.lru_cache(maxsize=512)
def _rank_parts(shape: ModelShape) -> dict[str, float]:
    return shape._count_rank_parts()
