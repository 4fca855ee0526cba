"""Model shapes by name: the built-in catalog, Hugging Face ``config.json`` files, and the options people set.

:func:`get_model` returns a :class:`~specsim.describe.shapes.ModelShape` (the physics of a shape, its operations,
bytes and FLOP live in :mod:`specsim.describe.shapes`) for

* a catalog name: one ``config.json`` per checkpoint in ``specsim/describe/catalog/`` with an ``index.yaml``
  recording its hub id, published parameter counts and the draft that serves it;
* a preset: the article's round-number ``article-8b`` / ``article-1b`` and CPU-sized shapes for the
  timing harness;
* a path to a ``config.json`` (or its folder), read by :func:`model_from_hf_config`: Llama, Mistral,
  Qwen2/3 dense, Gemma 3, Mixtral, Qwen3-MoE, gpt-oss, DeepSeek-V3 (and Kimi K2) and GLM-4.5.  Any field that changes the
  arithmetic and is not read is refused by name, quantisation is read from ``quantization_config`` (or
  ModelOpt's ``hf_quant_config.json``) or refused, and defaults a checkpoint relies on become notes.

``weight_dtype``, ``kv_dtype``, ``tp``, ``routing_effective_experts`` and ``routing_correlation`` override what the
config says.
"""

from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from specsim.core.limits import MAX_CONTEXT, MAX_LAYERS, MAX_MODEL_DIM, UnknownName, as_name_or_path
from specsim.describe.layouts import HYBRID_FAMILIES, layout_fields
from specsim.describe.shapes import (
    BYTES_PER_ELEMENT,
    KV_DTYPE_CHOICES,
    WEIGHT_DTYPE_CHOICES,
    ModelShape,
    Op,
    format_count,
)

__all__ = [
    "BYTES_PER_ELEMENT",
    "FITTED_ROUTING_CORRELATION",
    "KV_DTYPE_CHOICES",
    "ModelShape",
    "Op",
    "WEIGHT_DTYPE_CHOICES",
    "builtin_model_names",
    "catalog_draft",
    "catalog_entry",
    "catalog_name",
    "format_count",
    "get_model",
    "model_from_hf_config",
    "model_options",
]

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
    from specsim.core.limits import load_yaml

    index = load_yaml(_CATALOG / "index.yaml", "model catalog", shipped=True)
    return {str(k): dict(v) for k, v in index.items()}


@lru_cache(maxsize=1)
def _hub_ids() -> dict[str, str]:
    """Hugging Face IDs of the catalog's checkpoints (lower case), with and without "-Instruct", -> catalog name: made
    once, as the index it is read from (1 ms of every get_model); read it, never change it."""
    out = {}
    for name, entry in _catalog_index().items():
        hub = str(entry["hub_id"]).lower()
        out[hub] = name
        out.setdefault(hub.removesuffix("-instruct"), name)
    return out


def catalog_name(published: str) -> str | None:
    """The built-in checkpoint a source names: a built-in name (any case), a Hugging Face ID, or an ID's name without
    its organisation, with or without "-Instruct" (papers and issues write "Llama-3.1-8B-Instruct"); None if none.

    >>> catalog_name("Llama-3.1-8B-Instruct"), catalog_name("Qwen3-8B"), catalog_name("some-model")
    ('llama-3.1-8b', 'qwen3-8b', None)
    """
    text = str(published).lower()
    if text in set(builtin_model_names()):
        return text
    tails = {hub.rsplit("/", 1)[-1]: name for hub, name in _hub_ids().items()}
    return _hub_ids().get(text) or tails.get(text) or tails.get(text.removesuffix("-instruct"))


def catalog_entry(name: str) -> dict | None:
    """The catalog's record of a built-in checkpoint (hub id, published counts, draft), or None."""
    return _catalog_index().get(name)


def catalog_draft(name: str) -> str | None:
    """The drafter the catalog names for a built-in checkpoint (``qwen3-0.6b``, ``eagle3``, ``none`` for a family's
    smallest model), without the reason it gives in parentheses; None for a model outside the catalog."""
    entry = catalog_entry(name)
    return None if entry is None else str(entry["draft"]).split(" (")[0]


@lru_cache(maxsize=64)
def _catalog_model(name: str) -> ModelShape:
    entry = _catalog_index()[name]
    config = json.loads((_CATALOG / f"{name}.json").read_text(encoding="utf-8"))
    model = model_from_hf_config(config, name=name)
    return dataclasses.replace(model, source=entry["hub_id"])


def builtin_model_names() -> list[str]:
    """Names of the built-in model shapes: the catalog's checkpoints and the presets."""
    return sorted(set(_catalog_index()) | set(_PRESETS))


def _refuse_shadowed(given: str, builtin: str) -> None:
    """ValueError when ``given`` names a built-in shape and is also a config.json (or a folder holding one) on disk:
    neither is picked silently."""
    from specsim.core.files import existing_file

    local = existing_file(given) or existing_file(str(Path(given) / "config.json"))
    if local is None:
        return
    other = (
        f"{builtin} for the built-in"
        if builtin != given
        else f"{_CATALOG / (builtin + '.json')} for the built-in"
        if builtin in _catalog_index()
        else "another folder to use the built-in"
    )
    raise ValueError(
        f"model {given!r} names both the file {str(local)!r} and the built-in shape {builtin}: give "
        f"./{local} for the file, or {other}"
    )


def model_options(options: object, what: str) -> dict:
    """``options`` (a mapping of :func:`get_model`'s keywords, or None) as a dict, refused in one line naming ``what``
    and the keywords it takes where it holds another (Python's own TypeError named the key, not what was allowed).

    >>> model_options({"tp": 2}, "target_options"), model_options(None, "draft_options")
    ({'tp': 2}, {})
    >>> model_options({"tpp": 2}, "target_options")
    Traceback (most recent call last):
    ...
    ValueError: target_options: 'tpp' is not an option of a model; it takes weight_dtype, kv_dtype, tp, routing_effective_experts, routing_correlation
    """
    import inspect
    from collections.abc import Mapping

    taken = [p.name for p in inspect.signature(get_model).parameters.values() if p.kind is p.KEYWORD_ONLY]
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"{what} must be a mapping of {', '.join(taken)}, got {type(options).__name__}")
    unknown = [k for k in options or {} if k not in taken]
    if unknown:
        raise ValueError(f"{what}: {unknown[0]!r} is not an option of a model; it takes {', '.join(taken)}")
    return dict(options or {})


def get_model(
    name_or_path: str | Path,
    *,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    tp: int | None = None,
    routing_effective_experts: float | None = None,
    routing_correlation: float | None = None,
) -> ModelShape:
    """A built-in shape by name, or one read from a Hugging Face ``config.json``.

    ``weight_dtype`` stores every linear layer (experts included) in that type,
    as an engine's online quantisation does; the embedding, LM head and norms
    keep the checkpoint's 16-bit type.  ``kv_dtype`` sets the cache's type,
    ``tp`` the tensor-parallel ranks, ``routing_effective_experts`` a skew, ``routing_correlation`` the share
    of a token's experts that repeat its predecessor's in the same sequence
    (:meth:`~specsim.describe.shapes.ModelShape.experts_touched`).

    Raises
    ------
    KeyError
        Unknown name (the message lists the built-ins).
    ValueError
        A config.json that is missing keys, has bad values or an unsupported architecture.
    """
    text = as_name_or_path("a model", name_or_path, "a built-in model's name or a config.json's path")
    hub = _hub_ids().get(text.lower())
    if text not in _PRESETS and text not in _catalog_index() and text.lower() in set(builtin_model_names()):
        text = text.lower()  # built-in names match in any case, as hardware profiles and engines do
    if text in _PRESETS:
        _refuse_shadowed(text, text)
        model = _PRESETS[text]
    elif text in _catalog_index() or hub is not None:
        _refuse_shadowed(text, text if hub is None else hub)
        model = _catalog_model(text if hub is None else hub)
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if path.suffix != ".json" and not path.exists():
            if re.fullmatch(r"[\w.-]+/[\w.-]+", text):
                raise UnknownName(
                    f"unknown model {text!r}: a Hugging Face ID specsim does not ship; download its config.json "
                    f"(huggingface-cli download {text} config.json) and pass its path; the IDs it knows are "
                    f"listed by specsim models"
                )
            import difflib

            close = difflib.get_close_matches(text.lower(), builtin_model_names(), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            raise UnknownName(
                f"unknown model {text!r}; {hint}specsim models lists the built-in ones (or give a path to a config.json)"
            )
        if not path.is_file():
            from specsim.core.limits import not_a_file

            raise ValueError(f"model config {str(path)!r} {not_a_file(path)} (give a config.json or its folder)")
        config = _read_json(path, "model config", allow_infinity=True)
        side = path.parent / "hf_quant_config.json"  # NVIDIA ModelOpt checkpoints state their quantisation here
        if side.is_file() and "quantization_config" not in config:
            config = {
                **config,
                "quantization_config": {
                    "quant_method": "modelopt",
                    **_modelopt(_read_json(side, "quantisation config"), side),
                },
            }
        model = model_from_hf_config(config, name=str(path))
        # "path/to/my-finetune/config.json" is called "my-finetune" in tables and plots.
        if path.name == "config.json" and path.resolve().parent.name:
            model = dataclasses.replace(model, name=path.resolve().parent.name)
        model = dataclasses.replace(model, source=str(path.resolve().parent))
    changes: dict[str, Any] = {}
    if weight_dtype is not None:
        if weight_dtype not in BYTES_PER_ELEMENT:
            raise ValueError(
                f"model {model.name!r}: weight_dtype must be one of {', '.join(BYTES_PER_ELEMENT)}, got {weight_dtype!r}"
            )
        if model.params_override is None:
            changes["head_dtype"] = model.head_dtype_
        stored = model.checkpoint_dtype or model.weight_dtype
        changes.update(
            weight_dtype=weight_dtype,
            expert_dtype=None,
            checkpoint_dtype=stored if weight_dtype != stored or model.expert_dtype else None,
        )
    if kv_dtype is not None:
        changes["kv_dtype"] = kv_dtype
    if tp is not None:
        changes["tp"] = tp
    if routing_effective_experts is not None:
        changes["routing_effective_experts"] = routing_effective_experts
    if routing_correlation is not None:
        changes["routing_correlation"] = routing_correlation
    return dataclasses.replace(model, **changes) if changes else model


def _read_json(path: Path, what: str, allow_infinity: bool = False) -> Any:
    """A config file within the size and nesting budget of :func:`specsim.core.limits.load_json`.  A model's config.json
    may hold ``Infinity`` (transformers writes float('inf') so: Nemotron-H's time_step_limit); every size key read
    from it is range-checked."""
    from specsim.core.limits import load_json

    return load_json(path, what, allow_infinity, unique=True)


def _modelopt(data: Any, path: Path) -> dict:
    quant = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quant, dict):
        raise ValueError(f"quantisation config {str(path)!r}: expected a 'quantization' mapping")
    return {"quant_algo": quant.get("quant_algo"), "kv_cache_quant_algo": quant.get("kv_cache_quant_algo")}


#: The share of a token's routed experts that repeat its predecessor's in the same sequence
#: (:meth:`~specsim.describe.shapes.ModelShape.experts_touched`), fitted to the public speculative sweeps of MoE
#: targets (specsim/calibration/data/speculation_public.csv) with each source held out -- every held-out source picks
#: 0.2 from the others -- and judged on Kimi-K2.6 with EAGLE-3.1 on 4 GPUs (benchmarks/validate_targets.py,
#: docs/targets.md).  Consecutive tokens of one sequence route alike (Mixtral, arXiv:2401.04088 section 5; local routing
#: consistency of 20 MoE models, arXiv:2505.16056).  Not applied by default: the engine presets' host terms were fitted
#: with independent routing (rho 0, the bound), and using it means refitting them; ``get_model(...,
#: routing_correlation=FITTED_ROUTING_CORRELATION)`` applies it.
FITTED_ROUTING_CORRELATION = 0.2

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
    "Glm4MoeForCausalLM": "glm4_moe",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5",
    "NemotronHForCausalLM": "nemotron_h",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "MiniMaxM2ForCausalLM": "minimax_m2",
}
#: Multimodal checkpoints whose language model is their ``text_config`` (the vision tower is counted as resident).
_TEXT_CONFIG_ARCHITECTURES = {
    "Gemma3ForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Llama4ForConditionalGeneration",
}
#: The MoE families and the keys of their expert count and expert size (None: intermediate_size).
_MOE_KEYS = {
    "mixtral": ("num_local_experts", None),
    "qwen3_moe": ("num_experts", "moe_intermediate_size"),
    "gpt_oss": ("num_local_experts", None),
    "deepseek_v3": ("n_routed_experts", "moe_intermediate_size"),
    "glm4_moe": ("n_routed_experts", "moe_intermediate_size"),
    "qwen3_next": ("num_experts", "moe_intermediate_size"),
    "qwen3_5": ("num_experts", "moe_intermediate_size"),
    "nemotron_h": ("n_routed_experts", "moe_intermediate_size"),
    "llama4": ("num_local_experts", None),
    "minimax_m2": ("num_local_experts", None),
}
_QKV_BIAS_ARCHITECTURES = {"Qwen2ForCausalLM"}  # q, k, v carry biases whatever attention_bias says
#: attention_bias puts biases on q, k and v only (GLM-4.5's o_proj has none: transformers' Glm4Attention).
_QKV_ONLY_BIAS_ARCHITECTURES = {"Glm4MoeForCausalLM"}
#: q/k norms where the config says so (GLM-4.5 and 4.6: use_qk_norm true; GLM-4.5-Air: false).
_QK_NORM_FLAG_ARCHITECTURES = {"Glm4MoeForCausalLM"}
_QK_NORM_ARCHITECTURES = {
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
}
#: Defaults of transformers' config classes that real checkpoints rely on (keys their config.json leaves out).
#: Gemma3TextConfig (transformers/models/gemma3/configuration_gemma3.py): vocab_size 262208, sliding_window_pattern 6,
#: tied embeddings, max_position_embeddings 131_072 (Gemma 3's 128K context).
_CLASS_DEFAULTS = {
    "gemma3": {
        "vocab_size": 262208,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
        "max_position_embeddings": 131072,
    }
}
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_SUPPORTED_QUANT = (
    "fp8, fbgemm_fp8, compressed-tensors (8-bit float or int, 4-bit int), awq (4-bit), gptq (4- and 8-bit), mxfp4, "
    "modelopt (FP8, NVFP4)"
)


def _quantisation(config: dict, where: str, base: str, is_moe: bool) -> tuple[str, str | None, str | None]:
    """(weight dtype, expert dtype, KV dtype) a ``quantization_config`` states; None where it leaves the default.

    Read, or refused; never guessed.  The embedding, LM head and norms stay in
    the checkpoint's 16-bit type in every format read here (each keeps
    ``lm_head`` unquantised).
    """
    quant = config.get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    refuse = ValueError(
        f"{where}: quantization_config with quant_method {method!r} is not modelled; supported: "
        f"{_SUPPORTED_QUANT} (or remove the block to model the unquantised weights)"
    )
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", None, None
    if method in ("awq", "gptq"):
        bits = quant.get("bits", quant.get("w_bit"))
        if bits == 8 and method == "gptq":
            return "w8a16", None, None
        if bits != 4:
            raise ValueError(
                f"{where}: {method} with {bits!r}-bit weights is not modelled; supported: 4-bit"
                + (", and 8-bit for gptq" if method == "gptq" else "")
            )
        return "int4", None, None
    if method == "mxfp4":
        if not is_moe:
            raise ValueError(f"{where}: mxfp4 quantisation is modelled for the experts of an MoE model only")
        return base, "mxfp4", None
    if method == "modelopt":
        algo = {"FP8": "fp8", "NVFP4": "nvfp4"}.get(str(quant.get("quant_algo")))
        if algo is None:
            raise ValueError(
                f"{where}: modelopt quant_algo {quant.get('quant_algo')!r} is not modelled; supported: FP8, NVFP4"
            )
        kv_algo = quant.get("kv_cache_quant_algo")
        if kv_algo not in (None, "FP8"):
            raise ValueError(
                f"{where}: modelopt kv_cache_quant_algo {kv_algo!r} is not modelled; supported: FP8 or none"
            )
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
            kind = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4"}.get(
                (weights.get("num_bits"), weights.get("type"))
            )
            if kind is None:
                raise ValueError(
                    f"{where}: compressed-tensors weights of {weights.get('num_bits')!r} bits, type "
                    f"{weights.get('type')!r} are not modelled; supported: 8-bit float, 8-bit int, 4-bit int"
                )
            acts = group.get("input_activations")
            if kind == "int8" and not (isinstance(acts, dict) and acts.get("num_bits") == 8):
                kind = "w8a16"  # weight-only: dequantised to the activations' 16 bits in the GEMM
            kinds.add(kind)
        if len(kinds) != 1:
            raise ValueError(
                f"{where}: compressed-tensors groups mix {', '.join(sorted(kinds))}; one weight type is modelled"
            )
        kv = quant.get("kv_cache_scheme")
        if kv is not None and not (isinstance(kv, dict) and kv.get("num_bits") == 8 and kv.get("type") == "float"):
            raise ValueError(
                f"{where}: compressed-tensors kv_cache_scheme {kv!r} is not modelled; supported: 8-bit float or none"
            )
        return kinds.pop(), None, "fp8" if kv is not None else None
    raise refuse


class _Config:
    """A parsed config.json with the checks every key goes through: present, of the right type, in range."""

    def __init__(self, cfg: dict, where: str):
        self.cfg, self.where = cfg, where

    def get(self, key: str, default: Any = None) -> Any:
        return self.cfg.get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.cfg

    def int(self, key: str, default: Any = None, minimum: int = 1, maximum: int = MAX_MODEL_DIM) -> int:
        value = self.cfg.get(key, default)
        if value is None:
            raise ValueError(f"{self.where}: missing key {key!r}")
        kind = ("a positive integer" if minimum == 1 else f"an integer >= {minimum}") + f" up to {maximum:,}"
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not minimum <= value <= maximum
            or value != int(value)
        ):
            shown = repr(value) if len(repr(value)) <= 30 else f"a {len(repr(value))}-character value"
            raise ValueError(f"{self.where}: {key} must be {kind}, got {shown}")
        return int(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.cfg.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{self.where}: {key} must be true or false, got {value!r}")
        return value


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
    arch = _architecture(config, where)
    family = _ARCHITECTURES[arch]
    notes: list[str] = []
    extra_params = 0
    if arch in _TEXT_CONFIG_ARCHITECTURES:
        text = config.get("text_config")
        if not isinstance(text, dict):
            raise ValueError(f"{where}: missing key 'text_config' (the language model of {arch})")
        extra_params = _vision_params(family, config.get("vision_config"), text.get("hidden_size"), where, notes)
        outer = ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings")
        config = {**{k: v for k, v in config.items() if k in outer}, **text}
    defaults = _CLASS_DEFAULTS.get(family, {})
    for key, value in defaults.items():
        if key not in config and not (key == "sliding_window_pattern" and "layer_types" in config):
            notes.append(f"{key} = {value} (transformers' {family} default; the config does not state it)")
    cfg = _Config({**defaults, **config}, where)
    if family == "llama" and (cfg.get("num_local_experts") or cfg.get("num_experts")):
        raise ValueError(
            f"{where}: {arch} with experts is not a known layout; MoE architectures read: "
            + ", ".join(a for a, f in _ARCHITECTURES.items() if f in _MOE_KEYS)
        )
    if cfg.get("mlp_bias"):
        raise ValueError(f"{where}: mlp_bias=true is not supported")
    n_layers = _layer_count(cfg, family)
    fields = _attention_fields(cfg, family, arch)
    latent = fields.get("kv_lora_rank")  # MLA caches one latent per token, not heads: the KV head count is unused
    if cfg.get("num_key_value_heads") is None and fields["n_kv_heads"] == cfg.get("num_attention_heads") and not latent:
        notes.append(  # a grouped-query model whose key went missing would hold its KV cache at heads/kv times
            f"num_key_value_heads = num_attention_heads = {fields['n_kv_heads']} (multi-head attention, transformers' "
            "default; the config does not state it)"
        )
    fields.update(_moe_fields(cfg, family, n_layers, notes))
    if family in HYBRID_FAMILIES:
        fields.update(layout_fields(cfg, family, n_layers, notes))
    window, n_sliding = _sliding_layers(cfg.cfg, family, n_layers, where)
    if window:
        fields.update(sliding_window=window, n_sliding_layers=n_sliding)
    if family == "gemma3":
        fields["norms_per_layer"] = 4  # input, post-attention, pre- and post-feedforward
    fields.update(_precision(cfg, bool(fields.get("n_experts")), notes))
    positions = _max_positions(cfg, notes)  # before the notes are taken: its own may be among them
    return ModelShape(
        name=name,
        vocab_size=cfg.int("vocab_size"),
        intermediate_size=_mlp_size(cfg, family, fields, notes),
        n_layers=n_layers,
        tie_embeddings=cfg.flag("tie_word_embeddings"),
        extra_params=extra_params,
        architecture=arch,
        notes=tuple(notes),
        max_position_embeddings=positions,
        **fields,
    )


def _max_positions(cfg: _Config, notes: list[str]) -> int:
    """max_position_embeddings, within specsim's context limit (Llama 4 Scout states 10,485,760; the note says so)."""
    value = cfg.int("max_position_embeddings", 0, minimum=0, maximum=4 * MAX_CONTEXT)
    if value > MAX_CONTEXT:
        notes.append(
            f"max_position_embeddings {value:,} is past specsim's context limit; contexts stop at {MAX_CONTEXT:,}"
        )
        return MAX_CONTEXT
    if value == 0:
        notes.append(
            "the config states no max_position_embeddings: contexts are not checked against the model's positions"
        )
    return value


def _layer_count(cfg: _Config, family: str) -> int:
    """num_hidden_layers; Nemotron 3 Ultra states only its layers_block_type list."""
    if (
        family == "nemotron_h"
        and cfg.get("num_hidden_layers") is None
        and isinstance(cfg.get("layers_block_type"), list)
    ):
        return len(cfg.get("layers_block_type"))
    return cfg.int("num_hidden_layers", maximum=MAX_LAYERS)


def _mlp_size(cfg: _Config, family: str, fields: dict, notes: list[str]) -> int:
    """The dense MLP's size: Llama 4's intermediate_size_mlp; an all-MoE config without one takes the expert size."""
    if family == "llama4":
        return cfg.int("intermediate_size_mlp")
    if cfg.get("intermediate_size") is None and fields.get("n_experts") and not fields.get("n_dense_layers"):
        notes.append(
            "no dense MLP (every layer is MoE): intermediate_size, which no layer uses, set to the expert size"
        )
        return int(fields["moe_intermediate_size"])
    return cfg.int("intermediate_size")


def _architecture(config: dict, where: str) -> str:
    archs = config.get("architectures") or []
    if not isinstance(archs, list) or not archs:
        raise ValueError(f"{where}: missing key 'architectures'; supported: {', '.join(_ARCHITECTURES)}")
    arch = archs[0]
    if not isinstance(arch, str) or arch not in _ARCHITECTURES:
        shown = repr(arch) if len(repr(arch)) <= 60 else f"a {type(arch).__name__} of {len(repr(arch))} characters"
        raise ValueError(f"{where}: unsupported architecture {shown}; supported: {', '.join(_ARCHITECTURES)}")
    return arch


def _attention_fields(cfg: _Config, family: str, arch: str) -> dict[str, Any]:
    """Hidden size, heads, head dims (or MLA's latent ranks), biases and q/k norms."""
    hidden, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    fields: dict[str, Any] = {"hidden_size": hidden, "n_heads": heads}
    if family == "deepseek_v3":
        fields.update(
            kv_lora_rank=cfg.int("kv_lora_rank"),
            q_lora_rank=cfg.int("q_lora_rank", 0, minimum=0),
            qk_rope_head_dim=cfg.int("qk_rope_head_dim"),
            qk_nope_head_dim=cfg.int("qk_nope_head_dim"),
            v_head_dim=cfg.int("v_head_dim"),
        )
        fields.update(head_dim=fields["qk_nope_head_dim"] + fields["qk_rope_head_dim"], n_kv_heads=heads)
    else:
        if cfg.get("head_dim") is not None:
            fields["head_dim"] = cfg.int("head_dim")
        elif cfg.get("attention_head_dim") is not None:  # Nemotron-H's name for it
            fields["head_dim"] = cfg.int("attention_head_dim")
        elif hidden % heads == 0:
            fields["head_dim"] = hidden // heads
        else:
            raise ValueError(
                f"{cfg.where}: missing key 'head_dim' (hidden_size is not a multiple of num_attention_heads)"
            )
        fields["n_kv_heads"] = cfg.int("num_key_value_heads", heads)
    if heads % fields["n_kv_heads"]:
        raise ValueError(
            f"{cfg.where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
            f"({fields['n_kv_heads']})"
        )
    attention_bias = cfg.flag("attention_bias")
    qkv_only = arch in _QKV_BIAS_ARCHITECTURES | _QKV_ONLY_BIAS_ARCHITECTURES
    qk_norm = cfg.flag("use_qk_norm") if arch in _QK_NORM_FLAG_ARCHITECTURES else arch in _QK_NORM_ARCHITECTURES
    fields.update(
        qkv_bias=arch in _QKV_BIAS_ARCHITECTURES or attention_bias,
        o_bias=attention_bias and not qkv_only,
        qk_norm=qk_norm,
    )
    return fields


def _moe_fields(cfg: _Config, family: str, n_layers: int, notes: list[str]) -> dict[str, Any]:
    """Routed and shared experts, dense layers and MTP layers of the MoE families; nothing for dense ones."""
    if (
        family not in _MOE_KEYS
        or family in ("qwen3_next", "qwen3_5", "nemotron_h")
        and not cfg.get(_MOE_KEYS[family][0])
    ):
        return {}  # Qwen3.5-27B and Nemotron-H-8B: the hybrid families' dense members
    where = cfg.where
    experts_key, size_key = _MOE_KEYS[family]
    per_tok_key = (
        "experts_per_token" if family == "gpt_oss" and "num_experts_per_tok" not in cfg else "num_experts_per_tok"
    )
    n_exp, k = cfg.int(experts_key), cfg.int(per_tok_key)
    if k > n_exp:
        raise ValueError(f"{where}: {per_tok_key} ({k}) exceeds {experts_key} ({n_exp})")
    moe_size = cfg.int(size_key or "intermediate_size")
    fields: dict[str, Any] = {"n_experts": n_exp, "n_active_experts": k, "moe_intermediate_size": moe_size}
    if family in ("qwen3_moe", "qwen3_next", "qwen3_5"):
        if cfg.int("decoder_sparse_step", 1) != 1:
            raise ValueError(f"{where}: decoder_sparse_step other than 1 is not modelled")
        dense = cfg.get("mlp_only_layers") or []
        if not isinstance(dense, list) or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_layers for i in dense
        ):
            raise ValueError(f"{where}: mlp_only_layers must be a list of layer indices in [0, {n_layers - 1}]")
        fields["n_dense_layers"] = len(set(dense))
    if family in ("deepseek_v3", "glm4_moe"):
        # GLM-4.5's MoE block is DeepSeek-V3's (routed experts, one shared expert, leading dense layers, NextN layers)
        # under grouped-query attention.
        for key in ("moe_layer_freq", "decoder_sparse_step"):
            if cfg.int(key, 1) != 1:
                raise ValueError(f"{where}: {key} other than 1 is not modelled")
        fields.update(
            n_shared_experts=cfg.int("n_shared_experts", 0, minimum=0),
            n_dense_layers=cfg.int("first_k_dense_replace", 0, minimum=0),
            n_mtp_layers=cfg.int("num_nextn_predict_layers", 0, minimum=0, maximum=MAX_LAYERS),
        )
    if family in ("deepseek_v3", "glm4_moe", "nemotron_h"):
        groups, picked = cfg.get("n_group"), cfg.get("topk_group")
        if isinstance(groups, int) and isinstance(picked, int) and 0 < picked < groups:
            notes.append(
                f"group-limited routing (each token picks experts from {cfg.get('topk_group')} of "
                f"{cfg.get('n_group')} groups) is read as uniform over all experts: every group is equally likely"
            )
    if family == "gpt_oss":
        fields.update(expert_bias=True, attention_sinks=True)
    return fields


def _precision(cfg: _Config, is_moe: bool, notes: list[str]) -> dict[str, Any]:
    """Weight, expert, head and KV dtypes from torch_dtype and quantization_config."""
    raw = cfg.get("torch_dtype", cfg.get("dtype"))
    if raw is None:
        raw = "bfloat16"
        notes.append("torch_dtype = bfloat16 (the config does not state it)")
    if not isinstance(raw, str) or raw not in _TORCH_DTYPES:
        raise ValueError(f"{cfg.where}: torch_dtype {raw!r} is not one of {', '.join(_TORCH_DTYPES)}")
    base = _TORCH_DTYPES[raw]
    weight, expert, kv = base, None, None
    if cfg.get("quantization_config") is not None:
        weight, expert, kv = _quantisation(cfg.cfg, cfg.where, base, is_moe)
    return {
        "weight_dtype": weight,
        "expert_dtype": expert,
        "head_dtype": base if weight != base or expert else None,
        "kv_dtype": kv or base,
    }


def _sliding_layers(cfg: dict, family: str, n_layers: int, where: str) -> tuple[int, int]:
    """(window, number of window layers) from ``layer_types``, Gemma 3's pattern, or Mistral's all-layer window."""
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if family in HYBRID_FAMILIES:
        return 0, 0  # their layer_types name recurrent and chunked layers, read by specsim.describe.layouts
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ValueError(f"{where}: layer_types must list one type per layer ({n_layers})")
        unknown = sorted(set(map(str, types)) - {"sliding_attention", "full_attention"})
        if unknown:
            raise ValueError(
                f"{where}: layer type(s) {', '.join(unknown)} not modelled; supported: sliding_attention, full_attention"
            )
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


def _vision_params(family: str, vision: Any, text_hidden: Any, where: str, notes: list[str]) -> int:
    """Parameters of a multimodal checkpoint's vision tower (resident, idle while decoding)."""
    if family == "gemma3":
        return _siglip_params(vision, text_hidden, where)
    if vision is None:
        notes.append("no vision_config: the vision encoder is not counted")
        return 0
    if family == "qwen3_5":
        return _qwen_vision_params(vision, where)
    return _llama4_vision_params(vision, text_hidden, where)


def _llama4_vision_params(vision: Any, text_hidden: Any, where: str) -> int:
    """Llama 4's vision tower (transformers' Llama4VisionModel) and projector: an unfolded patch embedding, a class
    token and learned positions, pre/post layer norms, ``num_hidden_layers`` blocks with biased attention and MLP,
    the pixel-shuffle MLP (fc1 of intermediate_size -> projector_input_dim, fc2 projector_output_dim square, no
    biases) and the projection into the text width (no bias)."""
    if not isinstance(vision, dict):
        raise ValueError(f"{where}: vision_config must be a mapping")
    try:
        d, f, n = (int(vision[k]) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
        patch, image, channels = (
            int(vision["patch_size"]),
            int(vision["image_size"]),
            int(vision.get("num_channels", 3)),
        )
        p_in, p_out, out = (
            int(vision[k]) for k in ("projector_input_dim", "projector_output_dim", "vision_output_dim")
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: vision_config needs hidden_size, intermediate_size, num_hidden_layers, patch_size, "
            f"image_size, projector_input_dim, projector_output_dim and vision_output_dim ({exc})"
        ) from None
    if isinstance(text_hidden, bool) or not isinstance(text_hidden, int) or text_hidden < 1:
        raise ValueError(f"{where}: text_config.hidden_size must be a positive integer, got {text_hidden!r}")
    block = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    embed = channels * patch * patch * d + d + ((image // patch) ** 2 + 1) * d + 2 * 2 * d
    adapter = f * p_in + p_out * p_out
    return n * block + embed + adapter + out * text_hidden


def _qwen_vision_params(vision: Any, where: str) -> int:
    """Qwen3-VL's vision tower as Qwen3.5 ships it (transformers' Qwen3VLVisionModel): a 3-D patch embedding, learned
    positions, ``depth`` pre-norm blocks with biased qkv, proj and MLP, and a 2x2 patch merger into the text width."""
    if not isinstance(vision, dict):
        raise ValueError(f"{where}: vision_config must be a mapping")
    try:
        d, f, depth = (int(vision[k]) for k in ("hidden_size", "intermediate_size", "depth"))
        patch, temporal, positions = (
            int(vision["patch_size"]),
            int(vision["temporal_patch_size"]),
            int(vision["num_position_embeddings"]),
        )
        merge, out, channels = (
            int(vision["spatial_merge_size"]),
            int(vision["out_hidden_size"]),
            int(vision.get("in_channels", 3)),
        )
        deepstack = len(vision.get("deepstack_visual_indexes") or [])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: vision_config needs hidden_size, intermediate_size, depth, patch_size, "
            f"temporal_patch_size, num_position_embeddings, spatial_merge_size and out_hidden_size ({exc})"
        ) from None
    block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)  # two layer norms, attention, MLP
    merged = d * merge * merge
    merger = 2 * d + merged * merged + merged + merged * out + out
    embed = channels * temporal * patch * patch * d + d + positions * d
    return depth * block + embed + (1 + deepstack) * merger


def _siglip_params(vision: Any, text_hidden: Any, where: str) -> int:
    """Parameters of Gemma 3's SigLIP vision encoder and projector: resident in memory, idle while decoding."""
    if not isinstance(vision, dict) or vision.get("model_type") != "siglip_vision_model":
        raise ValueError(f"{where}: vision_config must be a siglip_vision_model (the encoder Gemma 3 ships)")
    try:
        d, f, n = (int(vision[k]) for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
        patch, image = int(vision["patch_size"]), int(vision["image_size"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where}: vision_config needs hidden_size, intermediate_size, num_hidden_layers, patch_size "
            f"and image_size ({exc})"
        ) from None
    layer = 4 * (d * d + d) + 2 * d * f + f + d + 4 * d  # q, k, v, o with biases; MLP with biases; two layer norms
    embed = 3 * patch * patch * d + d + (image // patch) ** 2 * d
    if isinstance(text_hidden, bool) or not isinstance(text_hidden, int) or text_hidden < 1:
        raise ValueError(f"{where}: text_config.hidden_size must be a positive integer, got {text_hidden!r}")
    projector = d + d * text_hidden  # soft-embedding norm and the projection into the text model
    return n * layer + embed + 2 * d + projector
