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
* its part of a round (``draft_pass``, ``extend``, ``launched_steps``): the deployment asks the drafter and never
  its kind;
* ``published()`` and ``default_acceptance()``: the acceptance it is published to reach, with the citation, that a
  command assumes when the user gives none (n-gram has none: it depends on the workload);
* ``checkpoint(target, given)``: what an engine loads for it (the draft model's, a known head, nothing for MTP and
  n-gram);
* ``engines``: what each engine calls it, from which release it takes it and how it pins acceptance
  (:class:`EngineSupport`).

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
from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length

__all__ = ["DRAFTERS", "DRAFTER_KINDS", "EAGLE3_DRAFT_VOCAB", "NGRAM_CPU_S_PER_TOKEN", "DraftModel", "Drafter", "Eagle3Head",
           "EagleHead", "EngineSupport", "MtpHead", "NgramDrafter", "default_acceptance_help", "drafter_class", "make_drafter",
           "published_acceptance"]

#: vLLM PR #56732 (2026): 9.95 ms for 66.3M tokens scanned with 8 threads.
NGRAM_CPU_S_PER_TOKEN = 9.95e-3 / 66.3e6
#: draft_vocab_size of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (the EAGLE-3 authors' Llama-3.1-8B head), and of SpecForge's
#: EAGLE-3 configs for other families (configs/qwen3-30B-A3B-eagle3.1.json, qwen3-235B-A22B-eagle3.json: 32,000 too).
EAGLE3_DRAFT_VOCAB = 32000
_EAGLE_ARCHITECTURES = {"LlamaForCausalLMEagle3": "eagle3", "Eagle3LlamaForCausalLM": "eagle3", "LlamaForCausalLMEagle": "eagle",
                        "EagleLlamaForCausalLM": "eagle"}


@dataclass(frozen=True)
class EngineSupport:
    """How one engine takes a drafter: its name there, the first release that takes it, and how it pins acceptance."""

    name: str  #: vLLM's speculative_config method, SGLang's --speculative-algorithm, TensorRT-LLM's decoding_type
    since: tuple[int, int, int]  #: the first release that takes it (as specsim checked; its floor where older)
    where: str  #: the source file that says so
    #: The first release that pins this drafter's acceptance for a benchmark (None: every release that takes it).
    pin_since: tuple[int, int, int] | None = None
    #: Whether a pinned acceptance length may be fractional (TensorRT-LLM's two-model path reads a whole number).
    fractional_pin: bool = True


@dataclass(frozen=True)
class Drafter:
    """A drafter: its name, the network one draft step runs (None for n-gram) and where the numbers come from."""

    name: str
    step_model: ModelShape | None
    basis: str = ""

    kind: ClassVar[str]
    #: How a sentence names the kind ("an EAGLE-3 head").
    label: ClassVar[str]
    #: A pass of the head over the gamma + 1 verified tokens each round (EAGLE, MTP).
    extend_pass: ClassVar[bool] = False
    #: A separate model that must share the target's tokenizer (and that engines load as a model of its own).
    shares_vocabulary: ClassVar[bool] = False
    #: Whether each drafted token costs a launched draft step (n-gram lookup proposes them all from one scan).
    launches_steps: ClassVar[bool] = True
    #: Whether it can draft a token tree (top-k > 1 per step): a network ranks candidates; a lookup drafts a chain.
    drafts_trees: ClassVar[bool] = True
    #: Whether an engine loads a checkpoint for it (MTP layers ship in the target's; n-gram loads nothing).
    loads_checkpoint: ClassVar[bool] = True
    #: Published checkpoints for built-in targets: target name -> checkpoint (the authors' heads, as the engines'
    #: documentation uses them).
    checkpoints: ClassVar[dict[str, str]] = {}
    #: engine -> how it takes this drafter.
    engines: ClassVar[dict[str, EngineSupport]]
    #: Where the published acceptance comes from, in a few words (figure legends).
    published_short: ClassVar[str]
    #: (target family, workload) that :meth:`published` was measured on ("*": any family; None: no one workload), so
    #: that the acceptance lookup finds it as a row (:mod:`specsim.speculation.acceptance_data`).
    published_for: ClassVar[tuple[str, str] | None] = None

    def __post_init__(self) -> None:
        if self.step_model is None:
            raise ValueError(f"drafter {self.name!r}: only n-gram drafting runs no network")

    @property
    def vllm_method(self) -> str:
        return self.engines["vllm"].name

    @property
    def sglang_algorithm(self) -> str:
        return self.engines["sglang"].name

    @property
    def trtllm_decoding(self) -> str:
        return self.engines["trtllm"].name

    @classmethod
    def support(cls, engine: str, version: tuple | None = None) -> EngineSupport:
        """How ``engine`` takes this drafter; refused where it does not, or not yet at ``version``."""
        if engine not in cls.engines:
            raise ValueError(f"{engine} does not run {cls.label} (it runs: {', '.join(sorted(cls.engines))})")
        s = cls.engines[engine]
        if version is not None and tuple(version) < s.since:
            raise ValueError(f"{engine} {_version(version)} has no {s.name} drafting for {cls.label}: it arrived in "
                             f"{_version(s.since)} ({s.where})")
        return s

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        """(acceptance, citation): what this kind is published to reach, on one workload."""
        raise NotImplementedError

    @classmethod
    def default_acceptance(cls, target: ModelShape | None = None, workload: str | None = None,
                           context: int | None = None) -> tuple[Acceptance, str]:
        """The acceptance a command assumes when the user gives none, with a label that names its row or default.

        Read from the published table for the target's family, the workload and the context
        (:func:`specsim.speculation.acceptance_data.resolve`); without them, :meth:`published`.
        """
        from specsim.speculation.acceptance_data import resolve

        found = resolve(cls, target, workload, context)
        return found.acceptance, found.label

    @classmethod
    def fallback_acceptance(cls, reason: str | None = None) -> tuple[Acceptance, str]:
        """What :meth:`default_acceptance` falls back to where no row is published: :meth:`published`."""
        return cls.published()

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        """The checkpoint an engine loads for this drafter: ``given``, a head read from its config.json, a known head."""
        if given:
            return given
        if self.step_model.source:  # a head read from its own config.json
            return self.step_model.source
        known = self.checkpoints.get(target.name)
        if known is None:
            raise ValueError(f"no published {self.kind} head is known for {target.name}; give its checkpoint with --draft-checkpoint")
        return known

    def with_step_model(self, model: ModelShape) -> "Drafter":
        """The same drafter running another network (another TP size or dtype of it)."""
        return dataclasses.replace(self, step_model=model)

    # -- its part of a round (the deployment's passes, asked for by the drafter) --------------------------
    def draft_pass(self, dep, batch: object, width: object, context: object):
        """One draft step on the GPU: a pass of the drafter's network over ``width`` tokens per sequence."""
        return dep.drafter_pass(batch, width, context)

    def extend(self, dep, batch: object, verify_tokens: object, context: object):
        """The draft-extend pass over the verified tokens (None for drafters without one)."""
        return dep.drafter_pass(batch, verify_tokens, context) if self.extend_pass else None

    def launched_steps(self, steps: np.ndarray) -> np.ndarray | float:
        """The draft steps a round launches (the engine's per-step host work counts these)."""
        return steps

    def host_s(self, batch: object, context: object) -> np.ndarray | float:
        """CPU seconds a round spends drafting outside any network, per (batch, context)."""
        return 0.0

    def describe(self) -> str:
        extra = "; plus a draft-extend pass over the gamma + 1 verified tokens per round" if self.extend_pass else ""
        return f"drafter: {self.step_model.describe()}{extra}" + (f" ({self.basis})" if self.basis else "")

    def provenance(self) -> list[str]:
        """Lines of provenance beyond the step model's own (a draft model is described with the target)."""
        return [self.describe()]


def _version(v) -> str:
    return ".".join(str(x) for x in v)


#: Engines' names for every kind, read from the engines' sources (vllm/config/speculative.py SpeculativeMethod;
#: python/sglang/srt/server_args.py --speculative-algorithm; tensorrt_llm/llmapi/llm_args.py decoding_type).  vLLM
#: releases before 0.10.0 and SGLang before 0.4.3 are below what specsim writes for.
_VLLM_SPEC = "vllm/config/speculative.py"
_SGLANG_ARGS = "python/sglang/srt/server_args.py"
_TRT_ARGS = "tensorrt_llm/llmapi/llm_args.py"


@dataclass(frozen=True)
class DraftModel(Drafter):
    """A separate small model of the target's family: one forward pass of it per drafted token."""

    kind: ClassVar[str] = "draft_model"
    label: ClassVar[str] = "a draft model"
    shares_vocabulary: ClassVar[bool] = True
    engines: ClassVar[dict[str, EngineSupport]] = {
        "vllm": EngineSupport("draft_model", (0, 15, 0), "vllm/engine/arg_utils.py: 'not supported yet' before 0.15.0"),
        "sglang": EngineSupport("STANDALONE", (0, 5, 2), _SGLANG_ARGS),
        "trtllm": EngineSupport("DraftTarget", (1, 0, 0), _TRT_ARGS, fractional_pin=False)}
    published_short: ClassVar[str] = "the article"

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return (Acceptance(alpha=0.8, source="a matched same-family draft, the reference article: 'above 0.8'"),
                "the reference article, 'Speculative decoding with draft models, explained': a stock same-family "
                "draft on its own target reaches alpha above 0.8")

    @classmethod
    def build(cls, spec: str, target: ModelShape, options: dict) -> "DraftModel":
        model = get_model(spec, **options)
        return cls(model.name, model)

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return given or self.step_model.source or self.step_model.name

    def with_step_model(self, model: ModelShape) -> "DraftModel":
        return DraftModel(model.name, model)

    def provenance(self) -> list[str]:
        return []


@dataclass(frozen=True)
class EagleHead(Drafter):
    """An EAGLE-1/2 head: one decoder layer of the target's width over a 2d -> d feature projection."""

    kind: ClassVar[str] = "eagle"
    label: ClassVar[str] = "an EAGLE head"
    extend_pass: ClassVar[bool] = True
    checkpoints: ClassVar[dict[str, str]] = {"llama-3.1-8b": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"}
    engines: ClassVar[dict[str, EngineSupport]] = {
        "vllm": EngineSupport("eagle", (0, 10, 0), _VLLM_SPEC), "sglang": EngineSupport("EAGLE", (0, 4, 3), _SGLANG_ARGS),
        "trtllm": EngineSupport("Eagle", (1, 0, 0), _TRT_ARGS, fractional_pin=False)}
    published_short: ClassVar[str] = "MT-bench, vLLM #20780"
    published_for: ClassVar[tuple[str, str] | None] = ("llama", "chat")
    #: The head's own draft vocabulary when derived from the target (None: the target's).
    default_vocab: ClassVar[int | None] = None

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        alpha = float(alpha_from_acceptance_length(2.29, 3))
        return (Acceptance(alpha=alpha, source="vLLM issue #20780"),
                "vLLM issue #20780: EAGLE head yuhuili/EAGLE-LLaMA3.1-Instruct-8B on Llama-3.1-8B-Instruct, MT-bench, "
                f"3 speculative tokens: mean acceptance length 2.29 (alpha {alpha:.3f})")

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
    label: ClassVar[str] = "an EAGLE-3 head"
    checkpoints: ClassVar[dict[str, str]] = {"llama-3.1-8b": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}
    engines: ClassVar[dict[str, EngineSupport]] = {
        "vllm": EngineSupport("eagle3", (0, 10, 0), _VLLM_SPEC), "sglang": EngineSupport("EAGLE3", (0, 4, 5), _SGLANG_ARGS),
        "trtllm": EngineSupport("Eagle3", (1, 0, 0), _TRT_ARGS)}  # one-model path: a fractional forced count
    published_short: ClassVar[str] = "MT-bench, vLLM #26191"
    default_vocab: ClassVar[int | None] = EAGLE3_DRAFT_VOCAB

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        alpha = float(alpha_from_acceptance_length(1 + 12208 / 4816, 7))
        return (Acceptance(alpha=alpha, source="vLLM issue #26191"),
                "vLLM issue #26191: EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B on Llama-3.1-8B-Instruct, MT-bench, "
                f"T = 0, 7 speculative tokens: 4,816 drafts, 12,208 accepted, mean acceptance length 3.53 (alpha {alpha:.3f})")


@dataclass(frozen=True)
class MtpHead(Drafter):
    """The target's own multi-token-prediction layers (DeepSeek-V3's NextN layer)."""

    kind: ClassVar[str] = "mtp"
    label: ClassVar[str] = "an MTP layer"
    extend_pass: ClassVar[bool] = True
    loads_checkpoint: ClassVar[bool] = False
    # SGLang runs MTP checkpoints such as DeepSeek-V3 as EAGLE over their NextN layers (NEXTN is its alias of EAGLE:
    # 0.5.23 python/sglang/srt/arg_groups/speculative_hook.py).
    engines: ClassVar[dict[str, EngineSupport]] = {
        "vllm": EngineSupport("mtp", (0, 10, 0), _VLLM_SPEC), "sglang": EngineSupport("EAGLE", (0, 4, 3), _SGLANG_ARGS),
        "trtllm": EngineSupport("MTP", (1, 0, 0), _TRT_ARGS)}
    published_short: ClassVar[str] = "DeepSeek-V3 report"
    #: The report measures "various generation topics" on DeepSeek-V3; chat is the nearest of the workloads.
    published_for: ClassVar[tuple[str, str] | None] = ("deepseek", "chat")

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return (Acceptance(cumulative=(0.875,), source="DeepSeek-V3 report"),
                "DeepSeek-V3 Technical Report (arXiv:2412.19437) section 5.4.3: the second token's acceptance is 85-90%")

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return _no_checkpoint(self.kind, given)

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
    label: ClassVar[str] = "n-gram prompt lookup"
    launches_steps: ClassVar[bool] = False
    drafts_trees: ClassVar[bool] = False
    loads_checkpoint: ClassVar[bool] = False
    engines: ClassVar[dict[str, EngineSupport]] = {
        "vllm": EngineSupport("ngram", (0, 10, 0), _VLLM_SPEC),
        "sglang": EngineSupport("NGRAM", (0, 5, 3), _SGLANG_ARGS, pin_since=(0, 5, 14)),  # speculative/ngram_worker.py
        "trtllm": EngineSupport("NGram", (1, 0, 0), _TRT_ARGS, fractional_pin=False)}
    published_short: ClassVar[str] = "code editing, vLLM #24344"
    published_for: ClassVar[tuple[str, str] | None] = ("*", "code-editing")
    #: The n-gram sizes the lookup matches (vLLM's prompt_lookup_min / prompt_lookup_max; TensorRT-LLM's
    #: max_matching_ngram_size is the larger).
    lookup: ClassVar[tuple[int, int]] = (2, 4)

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        # 993 rounds proposed, 821 tokens came from passes with no proposal: 993 / 1,814 passes drafted.  Scaling the
        # rates by that share charges a no-proposal pass as a round whose first draft was rejected (a little dearer
        # than the plain decode step it was) and gives the measured 2.96 tokens per pass.
        return (Acceptance(cumulative=tuple(round(c * 993 / 1814, 4) for c in (0.81, 0.74, 0.70, 0.68, 0.66)),
                           source="vLLM PR #24344, code editing"),
                "vLLM PR #24344: n-gram (prompt lookup 2-5, 5 tokens) on the vdaita/edit_5k_char code-editing set, "
                "per-position acceptance 0.81, 0.74, 0.70, 0.68, 0.66 where a match was found, no proposal in 821 of "
                "1,814 passes: 2.96 tokens per pass (a favourable, high-overlap workload)")

    @classmethod
    def fallback_acceptance(cls, reason: str | None = None) -> tuple[Acceptance, str]:
        rates = ",".join(f"{c:g}" for c in cls.published()[0].cumulative)
        raise ValueError((f"{reason}; " if reason else "") + "n-gram acceptance depends on the workload (how often the "
                         "output repeats the prompt): pass --alpha, --acceptance or --metrics; on code editing vLLM PR "
                         f"#24344 measured --acceptance {rates} (per position, passes without a match included)")

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return _no_checkpoint(self.kind, given)

    def draft_pass(self, dep, batch: object, width: object, context: object):
        return None  # no network: the proposals come from the scan (host_s)

    def launched_steps(self, steps: np.ndarray) -> float:
        return 0.0

    def with_step_model(self, model: ModelShape) -> "Drafter":
        raise ValueError("n-gram drafting runs no network to replace")

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


def _no_checkpoint(kind: str, given: str | None) -> None:
    if given:
        raise ValueError(f"--draft-checkpoint does not apply to --draft {kind}: it loads no separate checkpoint")
    return None


#: Drafter keywords of ``--draft`` and their classes; any other value names a draft model.
DRAFTERS: dict[str, type[Drafter]] = {"eagle": EagleHead, "eagle3": Eagle3Head, "mtp": MtpHead, "ngram": NgramDrafter}
DRAFTER_KINDS = ("draft_model",) + tuple(DRAFTERS)
#: Every kind's class by kind (the draft model's included).
_BY_KIND: dict[str, type[Drafter]] = {"draft_model": DraftModel, **DRAFTERS}


def drafter_class(spec: str | None) -> type[Drafter]:
    """The class of the drafter ``--draft`` names (a model name or path is a draft model), or of a kind's name.

    >>> drafter_class("eagle3:heads/config.json").label, drafter_class("llama-3.2-1b").kind
    ('an EAGLE-3 head', 'draft_model')
    """
    from specsim.core.defaults import DEFAULT_DRAFT

    kind = str(spec or DEFAULT_DRAFT).partition(":")[0].lower()
    return _BY_KIND.get(kind, DraftModel)


def default_acceptance_help() -> str:
    """What --alpha defaults to, per drafter kind, for the command line's help.

    >>> default_acceptance_help().split("; ")[:2]
    ["the drafter's published acceptance: a draft model 0.8", 'an EAGLE head 0.634']
    """
    parts = []
    for cls in _BY_KIND.values():
        try:
            acc, _ = cls.default_acceptance()
        except ValueError:
            parts.append(f"{cls.label}: none (depends on the workload; give one)")
            continue
        value = f"{acc.alpha:.3g}" if acc.alpha is not None else ", ".join(f"{c:g}" for c in acc.cumulative) + " by position"
        parts.append(f"{cls.label} {value}")
    return "the drafter's published acceptance: " + "; ".join(parts)


def published_acceptance() -> dict:
    """Acceptance each drafter kind is published to reach, with the source: kind -> (Acceptance, citation).

    Workload-specific numbers, for comparing drafter kinds; measure your own (``specsim alpha --metrics``).
    """
    return {kind: cls.published() for kind, cls in _BY_KIND.items()}


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
