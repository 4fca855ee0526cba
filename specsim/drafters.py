"""Drafters: what proposes the tokens, what one draft step costs, and what else a round costs.

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
``ngram``        prompt lookup: no network; a CPU scan of each sequence's tokens per round.

Per round, besides ``gamma`` draft steps and the target's verification pass:

* EAGLE and MTP heads run a *draft extend* pass over the verified tokens (q = gamma + 1 per sequence, the
  size engines capture it at) to compute the hidden states the next round starts from.  Engines that take
  the first draft token from that pass save one draft step; specsim counts all gamma steps, an upper bound.
* n-gram drafting costs CPU time proportional to the tokens scanned, ``b * L`` per round, at
  :data:`NGRAM_CPU_S_PER_TOKEN`: vLLM PR #56732 measured 9.95 ms for a batch of 512 sequences of 129,536
  tokens (66.3M tokens scanned) with 8 threads, 1.5e-10 s per token (70.28 ms, 1.06e-9 s, with one thread).

Every drafter's steps go through the active step-time source, like the target's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .models import ModelShape, _read_json, get_model, model_from_hf_config

__all__ = ["DRAFTER_KINDS", "EAGLE3_DRAFT_VOCAB", "NGRAM_CPU_S_PER_TOKEN", "Drafter", "make_drafter"]

DRAFTER_KINDS = ("draft_model", "eagle", "eagle3", "mtp", "ngram")
#: vLLM PR #56732 (2026): 9.95 ms for 66.3M tokens scanned with 8 threads.
NGRAM_CPU_S_PER_TOKEN = 9.95e-3 / 66.3e6
#: draft_vocab_size of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (the EAGLE-3 authors' Llama-3.1-8B head).
EAGLE3_DRAFT_VOCAB = 32000
_EAGLE_ARCHITECTURES = {"LlamaForCausalLMEagle3": "eagle3", "Eagle3LlamaForCausalLM": "eagle3", "LlamaForCausalLMEagle": "eagle",
                        "EagleLlamaForCausalLM": "eagle"}


@dataclass(frozen=True)
class Drafter:
    """A drafter: its kind, the network one draft step runs (None for n-gram) and its per-round extras."""

    kind: str
    name: str
    step_model: ModelShape | None
    #: A pass of the head over the gamma + 1 verified tokens each round (EAGLE, MTP).
    extend_pass: bool = False
    #: CPU seconds per token scanned per round (n-gram).
    cpu_s_per_token: float = 0.0
    basis: str = ""

    def __post_init__(self) -> None:
        if self.kind not in DRAFTER_KINDS:
            raise ValueError(f"unknown drafter kind {self.kind!r}; choose {', '.join(DRAFTER_KINDS)}")
        if (self.step_model is None) != (self.kind == "ngram"):
            raise ValueError(f"drafter {self.name!r}: only n-gram drafting runs no network")
        if not 0.0 <= self.cpu_s_per_token < 1e-3:
            raise ValueError(f"n-gram CPU time per token must be in [0, 1e-3) s, got {self.cpu_s_per_token!r}")

    @property
    def shares_vocabulary(self) -> bool:
        """Whether the drafter is a separate model that must share the target's tokenizer (draft_model)."""
        return self.kind == "draft_model"

    def describe(self) -> str:
        if self.kind == "ngram":
            return (f"drafter: n-gram prompt lookup, no network; {self.cpu_s_per_token * 1e9:.3g} ns of CPU per cached "
                    f"token per round ({self.basis})")
        extra = "; plus a draft-extend pass over the gamma + 1 verified tokens per round" if self.extend_pass else ""
        return f"drafter: {self.step_model.describe()}{extra}" + (f" ({self.basis})" if self.basis else "")


def _head_from_target(target: ModelShape, kind: str, vocab: int | None = None) -> ModelShape:
    """An EAGLE head of the target's width: one dense decoder layer plus the feature projection."""
    d = target.hidden_size
    qkv_rows = (target.n_heads + 2 * target.n_kv_heads) * target.head_dim
    # EAGLE: fc(2d -> d).  EAGLE-3: fc(3d -> d) for the fused features, and q, k, v read the 2d-wide input.
    extra = 2 * d * d if kind == "eagle" else 3 * d * d + qkv_rows * d
    return dataclasses.replace(
        target, name=f"{kind} head ({target.name})", n_layers=1, n_experts=0, n_active_experts=0, moe_intermediate_size=0,
        n_shared_experts=0, n_dense_layers=0, expert_bias=False, routing_effective_experts=None, sliding_window=0,
        n_sliding_layers=0, extra_params=0, n_mtp_layers=0, extra_linear_params=extra, params_override=None,
        vocab_size=vocab or target.vocab_size, tie_embeddings=False, expert_dtype=None, notes=(), checkpoint_dtype=None,
        intermediate_size=target.intermediate_size, source="",
        kv_lora_rank=0, q_lora_rank=0, qk_rope_head_dim=0, qk_nope_head_dim=0, v_head_dim=0,
        n_kv_heads=target.n_kv_heads if not target.is_mla else target.n_heads)


def _head_from_config(path: str, target: ModelShape, kind: str) -> ModelShape:
    config_path = Path(path).expanduser()
    if config_path.is_dir():
        config_path = config_path / "config.json"
    if not config_path.is_file():
        raise ValueError(f"{kind} head config {path!r} does not exist")
    config = _read_json(config_path, f"{kind} head config")
    arch = (config.get("architectures") or [None])[0] if isinstance(config, dict) else None
    if arch not in _EAGLE_ARCHITECTURES:
        raise ValueError(f"{kind} head config {str(config_path)!r}: architecture {arch!r} is not an EAGLE head; "
                         f"read: {', '.join(_EAGLE_ARCHITECTURES)}")
    if _EAGLE_ARCHITECTURES[arch] != kind:
        raise ValueError(f"{kind} head config {str(config_path)!r} describes an {_EAGLE_ARCHITECTURES[arch]} head")
    vocab = config.get("draft_vocab_size") or config.get("vocab_size")
    layer = model_from_hf_config({**config, "architectures": ["LlamaForCausalLM"], "vocab_size": vocab},
                                 name=str(config_path))
    if layer.hidden_size != target.hidden_size:
        raise ValueError(f"{kind} head {str(config_path)!r} has hidden size {layer.hidden_size}, the target "
                         f"{target.name} {target.hidden_size}: it is a head for another model")
    head = _head_from_target(dataclasses.replace(target, n_heads=layer.n_heads, n_kv_heads=layer.n_kv_heads,
                                                 head_dim=layer.head_dim, intermediate_size=layer.intermediate_size),
                             kind, vocab=layer.vocab_size)
    return dataclasses.replace(head, name=config_path.resolve().parent.name, n_layers=layer.n_layers,
                               source=str(config_path.resolve().parent))


def make_drafter(spec: str, target: ModelShape, draft_options: dict | None = None,
                 ngram_cpu_s_per_token: float | None = None) -> Drafter:
    """The drafter ``--draft`` names: a model name or config.json, ``eagle``, ``eagle3`` (optionally
    ``eagle3:PATH`` to a head's config.json), ``mtp`` or ``ngram``.

    >>> from specsim.models import get_model
    >>> make_drafter("eagle3", get_model("llama-3.1-8b")).step_model.n_layers
    1
    >>> make_drafter("ngram", get_model("llama-3.1-8b")).step_model is None
    True
    """
    opts = dict(draft_options or {})
    kind, _, path = spec.partition(":")
    if kind in ("eagle", "eagle3"):
        if target.is_moe and not path:
            basis = "derived from the target's shape: a dense layer of its attention and dense MLP sizes"
        else:
            basis = "derived from the target's shape" if not path else f"head config {path}"
        head = _head_from_config(path, target, kind) if path else _head_from_target(
            target, kind, EAGLE3_DRAFT_VOCAB if kind == "eagle3" else None)
        if kind == "eagle3" and not path:
            basis += f"; draft vocabulary {EAGLE3_DRAFT_VOCAB:,} as in yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
        head = _with_options(head, opts, target)
        return Drafter(kind, head.name, head, extend_pass=True, basis=basis)
    if kind == "mtp":
        if path:
            raise ValueError("mtp takes no path: it is the target's own multi-token-prediction layers")
        if target.n_mtp_layers < 1:
            raise ValueError(f"--draft mtp: the target {target.name}'s config declares no multi-token-prediction layers "
                             "(num_nextn_predict_layers); mtp needs a checkpoint that ships them, e.g. deepseek-v3")
        d = target.hidden_size
        head = dataclasses.replace(target, name=f"mtp ({target.name})", n_layers=target.n_mtp_layers, n_dense_layers=0,
                                   n_mtp_layers=0, extra_linear_params=2 * d * d, tie_embeddings=False, extra_params=0,
                                   notes=(), source="")
        head = _with_options(head, opts, target)
        return Drafter("mtp", head.name, head, extend_pass=True,
                       basis=f"{target.n_mtp_layers} MTP layer(s) of the target's checkpoint")
    if kind == "ngram":
        if path:
            raise ValueError("ngram takes no path")
        if opts.get("weight_dtype") or opts.get("kv_dtype") or (opts.get("tp") or 1) > 1:
            raise ValueError("--draft ngram runs no network: --draft-weight-dtype, --draft-kv-dtype and --draft-tp do not apply")
        cpu = NGRAM_CPU_S_PER_TOKEN if ngram_cpu_s_per_token is None else ngram_cpu_s_per_token
        basis = ("vLLM PR #56732: 9.95 ms per step for 66.3M tokens with 8 threads" if ngram_cpu_s_per_token is None
                 else "set by --ngram-cpu-ns")
        return Drafter("ngram", "n-gram", None, cpu_s_per_token=cpu, basis=basis)
    if ngram_cpu_s_per_token is not None:
        raise ValueError("--ngram-cpu-ns applies to --draft ngram only")
    model = get_model(spec, **opts)
    return Drafter("draft_model", model.name, model)


def _with_options(head: ModelShape, opts: dict, target: ModelShape) -> ModelShape:
    """A head takes --draft-weight-dtype / --draft-kv-dtype / --draft-tp; by default the target's dtypes."""
    changes = {"weight_dtype": opts.get("weight_dtype") or target.weight_dtype,
               "kv_dtype": opts.get("kv_dtype") or target.kv_dtype, "tp": opts.get("tp") or 1,
               "head_dtype": target.head_dtype_, "expert_dtype": target.expert_dtype if head.is_moe else None}
    return dataclasses.replace(head, **changes)
