"""Drafters: what proposes the tokens, what one draft step costs, and what else a round costs.

One class per kind, behind one interface (:class:`Drafter`), as vLLM v1's ``spec_decode`` has one
proposer per method on one base class.  A drafter owns

* ``step_model``: the network one draft step runs (None for n-gram lookup), derived from the target by
  construction where it is a head;
* ``extend_pass``: whether each round also runs the head over the verified tokens (a *draft extend*
  pass of q = gamma + 1 per sequence, the size engines capture it at) to compute the hidden states the
  next round starts from.  Engines that take the first draft token from that pass save one draft step;
  specsim counts all gamma steps, an upper bound;
* ``host_s(batch, context)``: CPU time a round spends outside any network (n-gram's scan);
* the names the engines give it (``vllm_method``, ``sglang_algorithm``, ``trtllm_decoding``).

The kinds:

``draft_model``  a separate small model of the target's family (the article's case): one forward pass of it
                 per drafted token, q = 1 per sequence.
``eagle``        an EAGLE-1/2 head (Li et al. 2024): one decoder layer of the target's width fed the target's
                 last hidden state and the token embedding (a 2d -> d projection), using the target's LM head.
``eagle3``       an EAGLE-3 head (Li et al. 2025, arXiv:2503.01840): the same layer fed a fusion of three
                 target layers (a 3d -> d projection; its attention takes the 2d-wide concatenation of
                 embedding and fused feature) and its own LM head over a reduced draft vocabulary
                 (32,000 tokens in yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config).
``mtp``          the target's own multi-token-prediction layers (DeepSeek-V3: one MLA+MoE layer, a 2d -> d
                 projection, the shared embedding and LM head), where its config declares them
                 (``num_nextn_predict_layers``).
``ngram``        prompt lookup: no network; a CPU scan of each sequence's tokens per round, ``b * L`` tokens
                 at :data:`NGRAM_CPU_S_PER_TOKEN`: vLLM PR #56732 measured 9.95 ms for a batch of 512
                 sequences of 129,536 tokens (66.3M tokens scanned) with 8 threads, 1.5e-10 s per token
                 (70.28 ms, 1.06e-9 s, with one thread).

Every drafter's steps go through the deployment's step-time source, like the target's
(:mod:`specsim.speculation.deployment`).  A new kind is one new class and one entry in :data:`DRAFTERS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from specsim.describe.models import ModelShape, _read_json, get_model, model_from_hf_config

__all__ = ["DRAFTERS", "DRAFTER_KINDS", "EAGLE3_DRAFT_VOCAB", "NGRAM_CPU_S_PER_TOKEN", "DraftModel", "Drafter", "Eagle3Head",
           "EagleHead", "MtpHead", "NgramDrafter", "make_drafter"]

#: vLLM PR #56732 (2026): 9.95 ms for 66.3M tokens scanned with 8 threads.
NGRAM_CPU_S_PER_TOKEN = 9.95e-3 / 66.3e6
#: draft_vocab_size of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (the EAGLE-3 authors' Llama-3.1-8B head), and of SpecForge's
#: EAGLE-3 configs for other families (configs/qwen3-30B-A3B-eagle3.1.json, qwen3-235B-A22B-eagle3.json: 32,000 too).
EAGLE3_DRAFT_VOCAB = 32000
_EAGLE_ARCHITECTURES = {"LlamaForCausalLMEagle3": "eagle3", "Eagle3LlamaForCausalLM": "eagle3", "LlamaForCausalLMEagle": "eagle",
                        "EagleLlamaForCausalLM": "eagle"}


@dataclass(frozen=True)
class Drafter:
    """A drafter: its name, the network one draft step runs (None for n-gram) and where the numbers come from."""

    name: str
    step_model: ModelShape | None
    basis: str = ""

    kind: ClassVar[str]
    #: A pass of the head over the gamma + 1 verified tokens each round (EAGLE, MTP).
    extend_pass: ClassVar[bool] = False
    #: A separate model that must share the target's tokenizer.
    shares_vocabulary: ClassVar[bool] = False
    #: What the engines call it: vLLM's speculative_config "method" (vllm/config/speculative.py, SpeculativeMethod),
    #: SGLang's --speculative-algorithm (MTP checkpoints such as DeepSeek-V3 run as EAGLE over their NextN layers) and
    #: TensorRT-LLM's speculative_config.decoding_type.
    engine_names: ClassVar[tuple[str, str, str]]

    def __post_init__(self) -> None:
        if self.step_model is None:
            raise ValueError(f"drafter {self.name!r}: only n-gram drafting runs no network")

    @property
    def vllm_method(self) -> str:
        return self.engine_names[0]

    @property
    def sglang_algorithm(self) -> str:
        return self.engine_names[1]

    @property
    def trtllm_decoding(self) -> str:
        return self.engine_names[2]

    def host_s(self, batch: object, context: object) -> np.ndarray | float:
        """CPU seconds a round spends drafting outside any network, per (batch, context)."""
        return 0.0

    def describe(self) -> str:
        extra = "; plus a draft-extend pass over the gamma + 1 verified tokens per round" if self.extend_pass else ""
        return f"drafter: {self.step_model.describe()}{extra}" + (f" ({self.basis})" if self.basis else "")


@dataclass(frozen=True)
class DraftModel(Drafter):
    """A separate small model of the target's family: one forward pass of it per drafted token."""

    kind: ClassVar[str] = "draft_model"
    shares_vocabulary: ClassVar[bool] = True
    engine_names: ClassVar[tuple[str, str, str]] = ("draft_model", "STANDALONE", "Draft_Target")

    @classmethod
    def build(cls, spec: str, target: ModelShape, options: dict) -> "DraftModel":
        model = get_model(spec, **options)
        return cls(model.name, model)


@dataclass(frozen=True)
class EagleHead(Drafter):
    """An EAGLE-1/2 head: one decoder layer of the target's width over a 2d -> d feature projection."""

    kind: ClassVar[str] = "eagle"
    extend_pass: ClassVar[bool] = True
    engine_names: ClassVar[tuple[str, str, str]] = ("eagle", "EAGLE", "Eagle")
    #: The head's own draft vocabulary when derived from the target (None: the target's).
    default_vocab: ClassVar[int | None] = None

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "EagleHead":
        own = bool(path)
        if path:
            head = _head_from_config(path, target, cls.kind)
            basis = f"head config {path}" + (f"; stored in {head.weight_dtype}" if head.weight_dtype != target.weight_dtype else "")
        else:
            head = _head_shape(cls.kind, target, cls.default_vocab or target.vocab_size)
            basis = ("derived from the target's shape: a dense layer of its attention and dense MLP sizes" if target.is_moe
                     else "derived from the target's shape")
            if cls.default_vocab:
                basis += (f"; draft vocabulary {cls.default_vocab:,}, the EAGLE-3 trainers' default for every family "
                          "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B; SpecForge's Qwen3 configs, e.g. qwen3-30B-A3B-eagle3.1.json); "
                          "eagle3:HEAD/config.json reads a head's own")
        return cls(head.name, _with_options(head, options, target, own), basis)


@dataclass(frozen=True)
class Eagle3Head(EagleHead):
    """An EAGLE-3 head: a 3d -> d fusion of three target layers, 2d-wide attention input, its own draft vocabulary."""

    kind: ClassVar[str] = "eagle3"
    engine_names: ClassVar[tuple[str, str, str]] = ("eagle3", "EAGLE3", "Eagle3")
    default_vocab: ClassVar[int | None] = EAGLE3_DRAFT_VOCAB


@dataclass(frozen=True)
class MtpHead(Drafter):
    """The target's own multi-token-prediction layers (DeepSeek-V3's NextN layer)."""

    kind: ClassVar[str] = "mtp"
    extend_pass: ClassVar[bool] = True
    engine_names: ClassVar[tuple[str, str, str]] = ("mtp", "EAGLE", "MTP")

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "MtpHead":
        if path:
            raise ValueError("mtp takes no path: it is the target's own multi-token-prediction layers")
        if target.n_mtp_layers < 1:
            raise ValueError(f"--draft mtp: the target {target.name}'s config declares no multi-token-prediction layers "
                             "(num_nextn_predict_layers); mtp needs a checkpoint that ships them, e.g. deepseek-v3")
        d = target.hidden_size
        # The MTP layers are the target's own: they keep every field of its layers (MoE, MLA, dtypes); what changes
        # is the layer count, the 2d -> d projection of [embedding; hidden] and that nothing else rides along.
        head = dataclasses.replace(target, name=f"mtp ({target.name})", n_layers=target.n_mtp_layers, n_dense_layers=0,
                                   n_mtp_layers=0, extra_linear_params=2 * d * d, tie_embeddings=False, extra_params=0,
                                   notes=(), source="")
        return cls(head.name, _with_options(head, options, target), f"{target.n_mtp_layers} MTP layer(s) of the target's checkpoint")


@dataclass(frozen=True)
class NgramDrafter(Drafter):
    """Prompt lookup: no network; a CPU scan of each sequence's cached tokens once per round."""

    #: CPU seconds per cached token scanned per round.
    cpu_s_per_token: float = NGRAM_CPU_S_PER_TOKEN

    kind: ClassVar[str] = "ngram"
    engine_names: ClassVar[tuple[str, str, str]] = ("ngram", "NGRAM", "NGram")

    def __post_init__(self) -> None:
        if self.step_model is not None:
            raise ValueError("n-gram drafting runs no network")
        if not 0.0 <= self.cpu_s_per_token < 1e-3:
            raise ValueError(f"n-gram CPU time per token must be in [0, 1e-3) s, got {self.cpu_s_per_token!r}")

    def host_s(self, batch: object, context: object) -> np.ndarray:
        return self.cpu_s_per_token * np.asarray(batch, dtype=float) * np.asarray(context, dtype=float)

    def describe(self) -> str:
        return (f"drafter: n-gram prompt lookup, no network; {self.cpu_s_per_token * 1e9:.3g} ns of CPU per cached "
                f"token per round ({self.basis})")

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict, cpu_s_per_token: float | None = None) -> "NgramDrafter":
        if path:
            raise ValueError("ngram takes no path")
        if options.get("weight_dtype") or options.get("kv_dtype") or (options.get("tp") or 1) > 1:
            raise ValueError("--draft ngram runs no network: --draft-weight-dtype, --draft-kv-dtype and --draft-tp do not apply")
        if cpu_s_per_token is None:
            return cls("n-gram", None, "vLLM PR #56732: 9.95 ms per step for 66.3M tokens with 8 threads")
        return cls("n-gram", None, "set by --ngram-cpu-ns", cpu_s_per_token)


#: Drafter keywords of ``--draft`` and their classes; any other value names a draft model.
DRAFTERS: dict[str, type[Drafter]] = {"eagle": EagleHead, "eagle3": Eagle3Head, "mtp": MtpHead, "ngram": NgramDrafter}
DRAFTER_KINDS = ("draft_model",) + tuple(DRAFTERS)


def make_drafter(spec: str, target: ModelShape, draft_options: dict | None = None,
                 ngram_cpu_s_per_token: float | None = None) -> Drafter:
    """The drafter ``--draft`` names: a model name or config.json, ``eagle``, ``eagle3`` (optionally
    ``eagle3:PATH`` to a head's config.json), ``mtp`` or ``ngram``.

    >>> from specsim.describe.models import get_model
    >>> make_drafter("eagle3", get_model("llama-3.1-8b")).step_model.n_layers
    1
    >>> make_drafter("ngram", get_model("llama-3.1-8b")).step_model is None
    True
    """
    opts = dict(draft_options or {})
    kind, _, path = spec.partition(":")
    cls = DRAFTERS.get(kind.lower())
    if cls is NgramDrafter:
        return NgramDrafter.build(path, target, opts, ngram_cpu_s_per_token)
    if ngram_cpu_s_per_token is not None:
        raise ValueError("--ngram-cpu-ns applies to --draft ngram only")
    if cls is None:
        try:
            return DraftModel.build(spec, target, opts)
        except KeyError as err:
            import difflib

            close = difflib.get_close_matches(kind.lower().replace("-", "").replace("_", ""), list(DRAFTERS), n=1, cutoff=0.6)
            hint = f"; did you mean --draft {close[0]}?" if close else ""
            raise KeyError(f"{err.args[0]}; --draft also takes a drafter: {', '.join(DRAFTERS)}{hint}") from None
    return cls.build(path, target, opts)


# -- heads, built from the target's shape ---------------------------------------------------
def _head_shape(kind: str, target: ModelShape, vocab: int, *, heads: int | None = None, kv_heads: int | None = None,
                head_dim: int | None = None, intermediate: int | None = None, layers: int = 1, name: str | None = None,
                source: str = "") -> ModelShape:
    """An EAGLE head of the target's width: ``layers`` dense decoder layers plus the feature projection.

    Built field by field: the target's width and attention layout (biases, q/k norms, sinks, norms per layer);
    the head's own heads, MLP size and vocabulary where its config gives them; no experts, windows or latent
    attention (an MLA target's head attends with full heads: its config reads n_kv_heads = n_heads).  Dtypes
    and tensor parallelism are the drafter options' (:func:`_with_options`).  A field added to ModelShape takes
    its default here unless this function says otherwise.
    """
    d = target.hidden_size
    heads = target.n_heads if heads is None else heads
    kv_heads = target.n_kv_heads if kv_heads is None else kv_heads
    head_dim = target.head_dim if head_dim is None else head_dim
    qkv_rows = (heads + 2 * kv_heads) * head_dim
    # EAGLE: fc(2d -> d).  EAGLE-3: fc(3d -> d) for the fused features, and q, k, v read the 2d-wide input.
    extra = 2 * d * d if kind == "eagle" else 3 * d * d + qkv_rows * d
    return ModelShape(
        name=name or f"{kind} head ({target.name})", vocab_size=vocab, hidden_size=d,
        intermediate_size=target.intermediate_size if intermediate is None else intermediate, n_layers=layers,
        n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim, qkv_bias=target.qkv_bias, qk_norm=target.qk_norm,
        o_bias=target.o_bias, norms_per_layer=target.norms_per_layer, attention_sinks=target.attention_sinks,
        extra_linear_params=extra, architecture=target.architecture,
        max_position_embeddings=target.max_position_embeddings, source=source)


def _head_from_config(path: str, target: ModelShape, kind: str) -> ModelShape:
    config_path = Path(path).expanduser()
    if config_path.is_dir():
        config_path = config_path / "config.json"
    if not config_path.is_file():
        raise ValueError(f"{kind} head config {path!r} does not exist")
    where = f"{kind} head config {str(config_path)!r}"
    config = _read_json(config_path, f"{kind} head config")
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a JSON object")
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if not isinstance(arch, str) or arch not in _EAGLE_ARCHITECTURES:
        shown = repr(arch) if isinstance(arch, str) or arch is None else f"a {type(archs).__name__} that names none"
        raise ValueError(f"{where}: architecture {shown} is not an EAGLE head; read: {', '.join(_EAGLE_ARCHITECTURES)}")
    if _EAGLE_ARCHITECTURES[arch] != kind:
        raise ValueError(f"{kind} head config {str(config_path)!r} describes an {_EAGLE_ARCHITECTURES[arch]} head")
    # The head's own draft vocabulary (EAGLE-3), else its vocab_size; a value that is there must be a real size.
    vocab = config.get("draft_vocab_size", config.get("vocab_size"))
    if isinstance(vocab, bool) or not isinstance(vocab, int) or not 1 <= vocab <= 10_000_000:
        key = "draft_vocab_size" if "draft_vocab_size" in config else "vocab_size"
        raise ValueError(f"{where}: {key} must be a whole number of tokens in [1, 10000000], got {vocab!r}")
    # Read through the target's reader: dtypes and quantization_config are read or refused there, as for a target.
    layer = model_from_hf_config({**config, "architectures": ["LlamaForCausalLM"], "vocab_size": vocab},
                                 name=str(config_path))
    if layer.hidden_size != target.hidden_size:
        raise ValueError(f"{kind} head {str(config_path)!r} has hidden size {layer.hidden_size}, the target "
                         f"{target.name} {target.hidden_size}: it is a head for another model")
    head = _head_shape(kind, target, layer.vocab_size, heads=layer.n_heads, kv_heads=layer.n_kv_heads, head_dim=layer.head_dim,
                       intermediate=layer.intermediate_size, layers=layer.n_layers, name=config_path.resolve().parent.name,
                       source=str(config_path.resolve().parent))
    # Its stored precision is its own (an FP8 head is FP8), not the target's; its logits run at the target's
    # head precision (:func:`_with_options`).
    return dataclasses.replace(head, weight_dtype=layer.weight_dtype)


def _with_options(head: ModelShape, opts: dict, target: ModelShape, own_dtype: bool = False) -> ModelShape:
    """A head takes --draft-weight-dtype / --draft-kv-dtype / --draft-tp; by default the target's dtypes (a head read
    from its own config.json, ``own_dtype``, keeps its stored weight dtype)."""
    changes = {"weight_dtype": opts.get("weight_dtype") or (head.weight_dtype if own_dtype else target.weight_dtype),
               "kv_dtype": opts.get("kv_dtype") or target.kv_dtype, "tp": opts.get("tp") or 1,
               "head_dtype": target.head_dtype_, "expert_dtype": target.expert_dtype if head.is_moe else None}
    return dataclasses.replace(head, **changes)
