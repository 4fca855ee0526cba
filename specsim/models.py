"""Model shapes: parameter counts, weight bytes and KV-cache bytes of a decoder.

A dense Llama-style decoder with ``n_layers`` layers, hidden size ``d``, MLP
size ``f``, ``n_heads`` query heads and ``n_kv_heads`` key/value heads of size
``head_dim`` (grouped-query attention), and vocabulary ``V`` has

    per layer    q: d * n_heads * head_dim        o: n_heads * head_dim * d
                 k, v: d * n_kv_heads * head_dim each (+ biases in Qwen2)
                 gated MLP: 3 * d * f  (gate, up, down)
                 two RMSNorm weights: 2 * d
    once         token embedding V * d, final norm d,
                 LM head V * d unless tied to the embedding.

For Llama-3.1-8B this gives 8,030,261,248 parameters and for Llama-3.2-1B
1,235,814,400, the counts Hugging Face reports.

Two quantities drive a decode step (see ``steptime``):

* the bytes streamed from memory per forward pass: every weight matrix is read
  once, except an *untied* input-embedding table, of which a step gathers only
  one row per token (a tied table is read in full as the LM head);
* the KV cache per token: ``2 (K and V) * n_layers * n_kv_heads * head_dim *
  bytes_per_element`` (131,072 bytes for Llama-3.1-8B in 16-bit).

The article's round-number presets ``article-8b`` and ``article-1b`` set
N = 8e9 and 1e9 exactly, stream all 2N bytes and do 2N FLOP per token, with
the attention and KV shapes of Llama-3.1-8B and Llama-3.2-1B.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BYTES_PER_ELEMENT",
    "ModelShape",
    "builtin_model_names",
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
    # 4-bit weights; group scales and zero points (about 0.125-0.25 bits per
    # weight at group size 128) are not counted.
    "int4": 0.5,
}


@dataclass(frozen=True)
class ModelShape:
    """The shape of a dense decoder-only transformer.

    Parameters
    ----------
    name : str
        Registry name or the path it was read from.
    vocab_size, hidden_size, intermediate_size, n_layers, n_heads, n_kv_heads, head_dim : int
        Architecture dimensions, as in a Hugging Face ``config.json``.
    tie_embeddings : bool
        Whether the LM head shares the input embedding matrix.
    qkv_bias : bool
        Whether the q, k and v projections carry biases (Qwen2).
    qk_norm : bool
        Whether each layer normalises queries and keys per head (Qwen3: two
        RMSNorm weights of head_dim each).
    weight_dtype, kv_dtype : str
        Storage types of the weights and the KV cache; keys of ``BYTES_PER_ELEMENT``.
    params_override : int or None
        A round parameter count that replaces the computed one (the article's
        presets).  All of those parameters are then streamed every step.
    source : str
        Where the checkpoint lives (a Hugging Face id or a local folder), used
        in the serving-engine snippets that ``specsim schedule`` prints.

    Examples
    --------
    >>> m = get_model("llama-3.1-8b")
    >>> m.params, m.kv_bytes_per_token
    (8030261248, 131072.0)
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

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        for key in ("vocab_size", "hidden_size", "intermediate_size", "n_layers", "n_heads", "n_kv_heads", "head_dim"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}: {key} must be a positive integer, got {value!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{where}: n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        for key in ("weight_dtype", "kv_dtype"):
            if getattr(self, key) not in BYTES_PER_ELEMENT:
                raise ValueError(f"{where}: {key} must be one of {', '.join(BYTES_PER_ELEMENT)}, got {getattr(self, key)!r}")
        if self.params_override is not None and (
            isinstance(self.params_override, bool) or not isinstance(self.params_override, int) or self.params_override < 1
        ):
            raise ValueError(f"{where}: params_override must be a positive integer, got {self.params_override!r}")

    # -- parameter counts -------------------------------------------------
    @property
    def params_per_layer(self) -> int:
        """Parameters of one transformer layer (attention, gated MLP, two norms)."""
        d, hd = self.hidden_size, self.head_dim
        q = d * self.n_heads * hd
        kv = 2 * d * self.n_kv_heads * hd
        o = self.n_heads * hd * d
        bias = (self.n_heads + 2 * self.n_kv_heads) * hd if self.qkv_bias else 0
        mlp = 3 * d * self.intermediate_size
        qk_norm = 2 * hd if self.qk_norm else 0
        return q + kv + o + bias + mlp + 2 * d + qk_norm

    @property
    def embedding_params(self) -> int:
        """Parameters of one vocabulary matrix (input embedding or LM head)."""
        return self.vocab_size * self.hidden_size

    @property
    def computed_params(self) -> int:
        """Total parameters computed from the shape."""
        heads = 1 if self.tie_embeddings else 2
        return self.n_layers * self.params_per_layer + heads * self.embedding_params + self.hidden_size

    @property
    def params(self) -> int:
        """Total parameters: the override if set, else computed from the shape."""
        return self.params_override if self.params_override is not None else self.computed_params

    @property
    def streamed_params(self) -> int:
        """Parameters read from memory (and multiplied) once per forward pass.

        All of them, less an untied input-embedding table: a step gathers one
        row per token from it, which is negligible.
        """
        if self.params_override is not None or self.tie_embeddings:
            return self.params
        return self.params - self.embedding_params

    # -- bytes ---------------------------------------------------------------
    @property
    def bytes_per_weight(self) -> float:
        return BYTES_PER_ELEMENT[self.weight_dtype]

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights resident in device memory."""
        return self.params * self.bytes_per_weight

    @property
    def streamed_weight_bytes(self) -> float:
        """Bytes of weights read from memory per forward pass."""
        return self.streamed_params * self.bytes_per_weight

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token: 2 (K, V) * layers * KV heads * head_dim * bytes."""
        return 2.0 * self.n_layers * self.n_kv_heads * self.head_dim * BYTES_PER_ELEMENT[self.kv_dtype]

    @property
    def attention_flop_per_token_per_context(self) -> float:
        """FLOP of attention per new token per cached token.

        QK^T and PV each take 2 * head_dim FLOP per query head per cached
        token: ``4 * n_layers * n_heads * head_dim``.
        """
        return 4.0 * self.n_layers * self.n_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        """Shape and derived counts, for ``--json`` output."""
        return {
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


# Shapes from each model's config.json on the Hugging Face Hub:
# meta-llama/Llama-3.1-8B, Llama-3.1-70B, Llama-3.2-1B, Llama-3.2-3B,
# Qwen/Qwen2.5-7B, Qwen2.5-0.5B.
_LLAMA3_VOCAB = 128256
_BUILTINS: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("llama-3.1-8b", _LLAMA3_VOCAB, 4096, 14336, 32, 32, 8, 128, source="meta-llama/Llama-3.1-8B-Instruct"),
        ModelShape("llama-3.1-70b", _LLAMA3_VOCAB, 8192, 28672, 80, 64, 8, 128, source="meta-llama/Llama-3.1-70B-Instruct"),
        ModelShape("llama-3.2-1b", _LLAMA3_VOCAB, 2048, 8192, 16, 32, 8, 64, tie_embeddings=True,
                   source="meta-llama/Llama-3.2-1B-Instruct"),
        ModelShape("llama-3.2-3b", _LLAMA3_VOCAB, 3072, 8192, 28, 24, 8, 128, tie_embeddings=True,
                   source="meta-llama/Llama-3.2-3B-Instruct"),
        ModelShape("qwen2.5-7b", 152064, 3584, 18944, 28, 28, 4, 128, qkv_bias=True, source="Qwen/Qwen2.5-7B-Instruct"),
        # Qwen/Qwen3-32B: 32.8B parameters on its model card (32,762,123,264 computed).
        ModelShape("qwen3-32b", 151936, 5120, 25600, 64, 64, 8, 128, qk_norm=True, source="Qwen/Qwen3-32B"),
        ModelShape("qwen2.5-0.5b", 151936, 896, 4864, 24, 14, 2, 64, tie_embeddings=True, qkv_bias=True,
                   source="Qwen/Qwen2.5-0.5B-Instruct"),
        # CPU-sized Llama shapes for the timing harness's demonstration on a CPU
        # (specsim measure --device cpu); not real checkpoints.
        ModelShape("tiny-28m", 8192, 512, 1536, 8, 8, 2, 64, tie_embeddings=True),
        ModelShape("tiny-5m", 8192, 256, 768, 4, 4, 1, 64, tie_embeddings=True),
        # The article's round-number presets (shared/design/article-model.md).
        ModelShape("article-8b", _LLAMA3_VOCAB, 4096, 14336, 32, 32, 8, 128, params_override=8_000_000_000),
        ModelShape(
            "article-1b", _LLAMA3_VOCAB, 2048, 8192, 16, 32, 8, 64, tie_embeddings=True, params_override=1_000_000_000
        ),
    )
}


def builtin_model_names() -> list[str]:
    """Names of the built-in model shapes."""
    return sorted(_BUILTINS)


def get_model(name_or_path: str | Path, *, weight_dtype: str | None = None, kv_dtype: str | None = None) -> ModelShape:
    """A built-in shape by name, or one read from a Hugging Face ``config.json``.

    ``weight_dtype`` / ``kv_dtype`` override the storage types (e.g. ``"fp8"``).

    Raises
    ------
    KeyError
        Unknown name (the message lists the built-ins).
    ValueError
        A config.json that is missing keys, has bad values or an unsupported architecture.
    """
    text = str(name_or_path)
    if text in _BUILTINS:
        model = _BUILTINS[text]
    else:
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if path.suffix != ".json" and not path.exists():
            raise KeyError(f"unknown model {text!r}; built-in models: {', '.join(builtin_model_names())} (or give a path to a config.json)")
        if not path.is_file():
            raise ValueError(f"model config {text!r} does not exist")
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"model config {str(path)!r}: not valid JSON ({err})") from None
        model = model_from_hf_config(config, name=str(path))
        # "path/to/my-finetune/config.json" is called "my-finetune" in tables and plots.
        if path.name == "config.json" and path.resolve().parent.name:
            model = dataclasses.replace(model, name=path.resolve().parent.name)
        model = dataclasses.replace(model, source=str(path.resolve().parent))
    changes = {k: v for k, v in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)) if v is not None}
    return dataclasses.replace(model, **changes) if changes else model


# Architectures whose parameters follow the dense Llama layout above.
_SUPPORTED_ARCHITECTURES = {
    "LlamaForCausalLM": False,
    "MistralForCausalLM": False,
    "Qwen2ForCausalLM": True,  # q, k, v projections carry biases
    "Qwen3ForCausalLM": False,  # per-head q/k RMSNorm, no biases
}
_QK_NORM_ARCHITECTURES = {"Qwen3ForCausalLM"}
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
#: quantization_config.quant_method values whose weight storage specsim models, and as what.
_QUANT_METHODS = {"fp8": "fp8", "fbgemm_fp8": "fp8"}


def _config_dtypes(config: dict, where: str) -> tuple[str, str]:
    """(weight dtype, KV dtype) of a config.json: read, or refused; never guessed."""
    raw = config.get("torch_dtype", config.get("dtype", "bfloat16"))
    if str(raw) not in _TORCH_DTYPES:
        raise ValueError(f"{where}: torch_dtype {raw!r} is not one of {', '.join(_TORCH_DTYPES)}")
    dtype = _TORCH_DTYPES[str(raw)]
    quant = config.get("quantization_config")
    if quant is None:
        return dtype, dtype
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method not in _QUANT_METHODS:
        raise ValueError(
            f"{where}: quantization_config with quant_method {method!r} is not modelled; supported: "
            f"{', '.join(_QUANT_METHODS)} (or remove the block to model the unquantised weights)"
        )
    # FP8 checkpoints quantise the weights; the KV cache stays in the activation dtype unless the engine is told otherwise.
    return _QUANT_METHODS[method], dtype


def model_from_hf_config(config: Any, name: str = "config.json") -> ModelShape:
    """A :class:`ModelShape` from a parsed Hugging Face ``config.json``.

    Reads the Llama / Mistral / Qwen2 keys: ``hidden_size``,
    ``intermediate_size``, ``num_hidden_layers``, ``num_attention_heads``,
    ``num_key_value_heads`` (defaults to the head count), ``head_dim``
    (defaults to hidden_size / heads), ``vocab_size`` and
    ``tie_word_embeddings``.

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
        raise ValueError(f"{where}: missing key 'architectures'; supported: {', '.join(_SUPPORTED_ARCHITECTURES)}")
    arch = archs[0]
    if arch not in _SUPPORTED_ARCHITECTURES:
        raise ValueError(
            f"{where}: unsupported architecture {arch!r}; supported: {', '.join(_SUPPORTED_ARCHITECTURES)} "
            "(dense decoders with grouped-query attention and a gated MLP)"
        )
    if config.get("num_local_experts") or config.get("num_experts"):
        raise ValueError(f"{where}: mixture-of-experts configs are not supported")

    def need_int(key: str, default: Any = None) -> int:
        value = config.get(key, default)
        if value is None:
            raise ValueError(f"{where}: missing key {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
            raise ValueError(f"{where}: {key} must be a positive integer, got {value!r}")
        return int(value)

    hidden = need_int("hidden_size")
    heads = need_int("num_attention_heads")
    if config.get("head_dim") is not None:
        head_dim = need_int("head_dim")
    elif hidden % heads == 0:
        head_dim = hidden // heads
    else:
        raise ValueError(f"{where}: missing key 'head_dim' (hidden_size is not a multiple of num_attention_heads)")
    tie = config.get("tie_word_embeddings", False)
    if not isinstance(tie, bool):
        raise ValueError(f"{where}: tie_word_embeddings must be true or false, got {tie!r}")
    qkv_bias = _SUPPORTED_ARCHITECTURES[arch] or bool(config.get("attention_bias", False))
    if config.get("mlp_bias"):
        raise ValueError(f"{where}: mlp_bias=true is not supported")
    weight_dtype, kv_dtype = _config_dtypes(config, where)
    return ModelShape(
        name=name,
        vocab_size=need_int("vocab_size"),
        hidden_size=hidden,
        intermediate_size=need_int("intermediate_size"),
        n_layers=need_int("num_hidden_layers"),
        n_heads=heads,
        n_kv_heads=need_int("num_key_value_heads", heads),
        head_dim=head_dim,
        tie_embeddings=tie,
        qkv_bias=qkv_bias,
        qk_norm=arch in _QK_NORM_ARCHITECTURES,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
    )


def format_count(n: float) -> str:
    """A parameter count for people, three significant digits.

    >>> format_count(8030261248), format_count(494032768)
    ('8.03B', '494M')
    """
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:g}"
