"""Reading the layer layouts of hybrid and interleaved checkpoints from ``config.json``.

:func:`specsim.describe.models.model_from_hf_config` reads every architecture; the families whose layers are not
all alike are read here, each into the layer counts and sizes of :class:`~specsim.describe.shapes.ModelShape`:

Qwen3-Next and Qwen3.5/3.6 (``qwen3_next``, ``qwen3_5``)
    Gated DeltaNet layers with a full-attention layer every ``full_attention_interval`` layers, or as
    ``layer_types`` lists them (``linear_attention`` / ``full_attention``; transformers' Qwen3NextConfig and
    Qwen3_5TextConfig); GDN sizes from ``linear_num_key_heads``, ``linear_num_value_heads``,
    ``linear_key_head_dim``, ``linear_value_head_dim`` and ``linear_conv_kernel_dim``; the state in
    ``mamba_ssm_dtype`` where the config states it.  Attention has an output gate (q_proj twice as wide) and
    q/k norms; experts have one gated shared expert of ``shared_expert_intermediate_size``.
Nemotron-H and Nemotron 3 (``nemotron_h``)
    One single-purpose block per layer from ``hybrid_override_pattern`` (``M`` Mamba-2, ``*`` attention,
    ``-`` MLP, ``E`` MoE) or ``layers_block_type`` (``mamba``, ``attention``, ``mlp``, ``moe``); Mamba-2 sizes
    from ``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size``, ``n_groups`` and ``conv_kernel``
    (d_inner = heads x head dim, as vLLM's NemotronH model builds its mixer); squared-ReLU MLPs and experts
    (up and down only); experts in ``moe_latent_size`` where given (Nemotron 3 Super and Ultra).
Llama 4 (``llama4``)
    MoE every ``interleave_moe_layer_step`` layers (or the ``moe_layers`` list), each with one shared expert
    of the expert size; dense layers of ``intermediate_size_mlp``; chunked attention over
    ``attention_chunk_size`` on the RoPE layers, global attention on the NoPE layers (every fourth, or the
    ``no_rope_layers`` list): transformers' Llama4TextConfig.
MiniMax-M2 (``minimax_m2``)
    Full attention on every layer (``attn_type_list`` all 1) with per-layer q/k norms over all heads, and
    routed experts of ``intermediate_size``, no shared expert.

A layout that cannot be priced is refused by name, with what is read: an unknown layer type, a missing
state size, a layer list of the wrong length.
"""

from __future__ import annotations

from typing import Any

from specsim.core.limits import MAX_LAYERS
from specsim.describe.recurrent import GDN_CHUNK_TOKENS

__all__ = ["HYBRID_FAMILIES", "attention_only", "layout_fields"]

#: Families whose layouts this module reads.
HYBRID_FAMILIES = ("qwen3_next", "qwen3_5", "nemotron_h", "llama4", "minimax_m2")
_GDN_KEYS = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
_MAMBA_KEYS = ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel")
_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _sizes(cfg, keys: tuple[str, ...], what: str) -> list[int]:
    missing = [k for k in keys if cfg.get(k) is None]
    if missing:
        raise ValueError(
            f"{cfg.where}: {what} layers need {', '.join(keys)}; missing {', '.join(missing)} "
            f"(recurrent layers read: Gated DeltaNet and Mamba-2)"
        )
    return [cfg.int(k) for k in keys]


def _state_dtype(cfg, key: str, notes: list[str]) -> str | None:
    raw = cfg.get(key)
    if raw is None:
        notes.append(
            f"recurrent state in the model's 16-bit type (the config states no {key}; vLLM's "
            "mamba_ssm_cache_dtype 'auto')"
        )
        return None
    if raw not in _STATE_DTYPES:
        raise ValueError(f"{cfg.where}: {key} {raw!r} is not one of {', '.join(_STATE_DTYPES)}")
    return _STATE_DTYPES[raw]


def _mamba_chunk(cfg, notes: list[str]) -> int:
    """Tokens per chunk of Mamba-2's prompt scan: the config's chunk_size (mamba_chunk_size in older configs), else
    NemotronHConfig's default 128 (transformers' configuration_nemotron_h.py), said."""
    for key in ("chunk_size", "mamba_chunk_size"):
        if cfg.get(key) is not None:
            return cfg.int(key, minimum=1, maximum=1 << 20)
    notes.append("Mamba-2 prompt chunks of 128 tokens (the config states no chunk_size; NemotronHConfig's default)")
    return 128


def _qwen_layers(cfg, n_layers: int) -> int:
    """Number of full-attention layers of Qwen3-Next / Qwen3.5: from layer_types, else every interval-th layer."""
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ValueError(f"{cfg.where}: layer_types must list one type per layer ({n_layers})")
        unknown = sorted(set(map(str, types)) - {"linear_attention", "full_attention"})
        if unknown:
            raise ValueError(
                f"{cfg.where}: layer type(s) {', '.join(unknown)} not modelled; supported: linear_attention "
                "(Gated DeltaNet), full_attention"
            )
        return sum(t == "full_attention" for t in types)
    if cfg.get("full_attention_interval") is None:
        raise ValueError(
            f"{cfg.where}: a Gated DeltaNet model needs layer_types or full_attention_interval to say which "
            "layers are full attention"
        )
    return n_layers // cfg.int("full_attention_interval", maximum=MAX_LAYERS)


def _qwen_hybrid(cfg, family: str, n_layers: int, notes: list[str]) -> dict[str, Any]:
    attention = _qwen_layers(cfg, n_layers)
    g, h, n, p, k = _sizes(cfg, _GDN_KEYS, "Gated DeltaNet")
    if h % g:
        raise ValueError(f"{cfg.where}: linear_num_value_heads ({h}) must be a multiple of linear_num_key_heads ({g})")
    gate = cfg.flag("attn_output_gate", True)
    if "attn_output_gate" not in cfg and family == "qwen3_5":
        notes.append("attn_output_gate = true (Qwen3_5TextConfig's default; the config does not state it)")
    fields: dict[str, Any] = dict(
        n_recurrent_layers=n_layers - attention,
        recurrent_kind="gdn",
        rec_heads=h,
        rec_head_dim=p,
        rec_state_dim=n,
        rec_groups=g,
        rec_conv_kernel=k,
        rec_chunk=GDN_CHUNK_TOKENS,
        state_dtype=_state_dtype(cfg, "mamba_ssm_dtype", notes),
        attn_output_gate=gate,
    )
    if cfg.get("num_experts"):
        shared = cfg.int("shared_expert_intermediate_size", 0, minimum=0)
        fields.update(shared_expert_size=shared, n_shared_experts=1 if shared else 0, shared_expert_gate=bool(shared))
    mtp = cfg.int("mtp_num_hidden_layers", 0, minimum=0, maximum=MAX_LAYERS)
    if mtp:
        fields["n_mtp_layers"] = mtp
    elif family == "qwen3_next":
        notes.append(
            "Qwen3-Next checkpoints ship one MTP layer its config.json does not declare (vLLM serves it with "
            "method qwen3_next_mtp); it is not counted"
        )
    return fields


def _nemotron_blocks(cfg, n_layers: int | None) -> list[str]:
    pattern, blocks = cfg.get("hybrid_override_pattern"), cfg.get("layers_block_type")
    if isinstance(pattern, str):
        unknown = sorted(set(pattern) - set(_PATTERN))
        if unknown:
            raise ValueError(
                f"{cfg.where}: hybrid_override_pattern block(s) {', '.join(map(repr, unknown))} not modelled; "
                "supported: M (Mamba-2), * (attention), - (MLP), E (MoE)"
            )
        kinds = [_PATTERN[c] for c in pattern]
    elif isinstance(blocks, list):
        unknown = sorted(set(map(str, blocks)) - set(_PATTERN.values()))
        if unknown:
            raise ValueError(
                f"{cfg.where}: layers_block_type block(s) {', '.join(unknown)} not modelled; supported: "
                "mamba, attention, mlp, moe"
            )
        kinds = [str(b) for b in blocks]
    else:
        raise ValueError(
            f"{cfg.where}: a Nemotron-H model needs hybrid_override_pattern or layers_block_type to say "
            "which block each layer is"
        )
    if n_layers is not None and len(kinds) != n_layers:
        raise ValueError(f"{cfg.where}: the block pattern lists {len(kinds)} layers, num_hidden_layers says {n_layers}")
    if not 1 <= len(kinds) <= MAX_LAYERS:
        raise ValueError(f"{cfg.where}: the block pattern must list 1 to {MAX_LAYERS:,} layers, got {len(kinds)}")
    return kinds


def _nemotron(cfg, n_layers: int, notes: list[str]) -> dict[str, Any]:
    kinds = _nemotron_blocks(cfg, n_layers)
    count = {k: kinds.count(k) for k in _PATTERN.values()}
    if count["moe"] and not cfg.get("n_routed_experts"):
        raise ValueError(f"{cfg.where}: MoE blocks (E) need n_routed_experts")
    if cfg.flag("mamba_proj_bias") or cfg.flag("use_bias"):
        raise ValueError(
            f"{cfg.where}: biases on the Mamba-2 projections (mamba_proj_bias / use_bias) are not modelled"
        )
    fields: dict[str, Any] = dict(
        n_mixer_free_layers=count["mlp"] + count["moe"],
        n_ffn_free_layers=count["mamba"] + count["attention"],
        gated_mlp=False,
        norms_per_layer=1,
    )
    if count["mamba"]:
        h, p, n, g, k = _sizes(cfg, _MAMBA_KEYS, "Mamba-2")
        fields.update(
            n_recurrent_layers=count["mamba"],
            recurrent_kind="mamba2",
            rec_heads=h,
            rec_head_dim=p,
            rec_state_dim=n,
            rec_groups=g,
            rec_conv_kernel=k,
            rec_conv_bias=cfg.flag("use_conv_bias", True),
            rec_chunk=_mamba_chunk(cfg, notes),
            state_dtype=_state_dtype(cfg, "mamba_ssm_cache_dtype", notes),
        )
    if count["moe"]:
        shared = cfg.int("moe_shared_expert_intermediate_size", 0, minimum=0)
        fields.update(
            n_dense_layers=count["mlp"],
            shared_expert_size=shared,
            n_shared_experts=cfg.int("n_shared_experts", 1 if shared else 0, minimum=0) if shared else 0,
            moe_latent_size=cfg.int("moe_latent_size", 0, minimum=0),
        )
    if cfg.get("num_nextn_predict_layers"):
        notes.append("its MTP layers (num_nextn_predict_layers, a hybrid attention + MoE pattern) are not counted")
    return fields


def _llama4(cfg, n_layers: int, notes: list[str]) -> dict[str, Any]:
    moe = cfg.get("moe_layers")
    if moe is None:
        step = cfg.int("interleave_moe_layer_step", 1, maximum=MAX_LAYERS)
        moe = list(range(step - 1, n_layers, step))
    elif not isinstance(moe, list) or any(
        isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_layers for i in moe
    ):
        raise ValueError(f"{cfg.where}: moe_layers must be a list of layer indices in [0, {n_layers - 1}]")
    rope = cfg.get("no_rope_layers")
    if rope is None:
        interval = cfg.int("no_rope_layer_interval", 4, maximum=MAX_LAYERS)
        rope = [int((i + 1) % interval != 0) for i in range(n_layers)]
    elif not isinstance(rope, list) or len(rope) != n_layers or any(r not in (0, 1) for r in rope):
        raise ValueError(
            f"{cfg.where}: no_rope_layers must list 1 (RoPE, chunked) or 0 (NoPE, global) per layer ({n_layers})"
        )
    fields: dict[str, Any] = dict(n_dense_layers=n_layers - len(set(moe)), n_shared_experts=1)
    chunk = cfg.get("attention_chunk_size")
    if chunk is not None and sum(rope):
        fields.update(attention_chunk_size=cfg.int("attention_chunk_size"), n_chunked_layers=sum(rope))
    if cfg.flag("use_qk_norm"):
        notes.append("q/k L2 norms on the RoPE layers (Llama4TextL2Norm has no weights)")
    return fields


def _minimax(cfg, n_layers: int, notes: list[str]) -> dict[str, Any]:
    types = cfg.get("attn_type_list")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers or any(t not in (0, 1) for t in types):
            raise ValueError(f"{cfg.where}: attn_type_list must list 1 (softmax attention) per layer ({n_layers})")
        if 0 in types:
            raise ValueError(
                f"{cfg.where}: attn_type_list marks {types.count(0)} lightning (linear) attention layers, not "
                "modelled; supported: 1 (softmax attention) on every layer"
            )
    if cfg.int("shared_intermediate_size", 0, minimum=0):
        raise ValueError(f"{cfg.where}: shared_intermediate_size > 0 (a shared expert) is not a MiniMax-M2 layout")
    norm = cfg.get("qk_norm_type", "per_layer")
    if cfg.flag("use_qk_norm") and norm not in ("per_layer", "per_head"):
        raise ValueError(f"{cfg.where}: qk_norm_type {norm!r} not modelled; supported: per_layer, per_head")
    if cfg.flag("use_mtp"):
        notes.append("its MTP modules (use_mtp) are not counted: the public M2.x checkpoints ship no MTP weights")
    return dict(qk_norm=cfg.flag("use_qk_norm"), qk_norm_all_heads=norm == "per_layer")


def layout_fields(cfg, family: str, n_layers: int, notes: list[str]) -> dict[str, Any]:
    """The layout fields of a :data:`HYBRID_FAMILIES` config (after :func:`specsim.describe.models._moe_fields`)."""
    if family in ("qwen3_next", "qwen3_5"):
        return _qwen_hybrid(cfg, family, n_layers, notes)
    if family == "nemotron_h":
        return _nemotron(cfg, n_layers, notes)
    if family == "llama4":
        return _llama4(cfg, n_layers, notes)
    return _minimax(cfg, n_layers, notes)


def attention_only(model):
    """``model`` with every layer an attention layer: no recurrent, chunked or mixer-free layers (what a head copied
    from a hybrid target keeps, e.g. Qwen3.5's full-attention MTP layer)."""
    import dataclasses

    if not (model.is_hybrid or model.n_chunked_layers or model.n_mixer_free_layers or model.n_ffn_free_layers):
        return model
    return dataclasses.replace(
        model,
        n_recurrent_layers=0,
        recurrent_kind="",
        rec_heads=0,
        rec_head_dim=0,
        rec_state_dim=0,
        rec_groups=0,
        rec_conv_kernel=0,
        rec_chunk=0,
        n_mixer_free_layers=0,
        n_ffn_free_layers=0,
        n_chunked_layers=0,
        attention_chunk_size=0,
    )
