"""The drafters specsim started with besides the draft model (:mod:`.draft_model`): EAGLE and EAGLE-3 heads, MTP layers and
n-gram lookup (:mod:`specsim.speculation.drafters.base` says what a drafter owns)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from specsim.core.names import given_as
from specsim.describe.layouts import attention_only
from specsim.describe.models import ModelShape
from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length
from specsim.speculation.drafters.base import (
    EAGLE3_DRAFT_VOCAB,
    NGRAM_CPU_S_PER_TOKEN,
    Drafter,
    _head_from_config,
    _head_shape,
    _no_checkpoint,
    _stored_as_published,
    _with_options,
    no_network_said,
    token_ids_scanned,
)

__all__ = ["Eagle3Head", "EagleHead", "MtpHead", "NgramDrafter"]


@dataclass(frozen=True)
class EagleHead(Drafter):
    """An EAGLE-1/2 head: one decoder layer of the target's width over a 2d -> d feature projection."""

    kind: ClassVar[str] = "eagle"
    label: ClassVar[str] = "an EAGLE head"
    extend_pass: ClassVar[bool] = True
    checkpoints: ClassVar[dict[str, str]] = {"llama-3.1-8b": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"}
    published_short: ClassVar[str] = "MT-bench, vLLM #20780"
    published_for: ClassVar[tuple[str, str] | None] = ("llama", "chat")
    published_target: ClassVar[str | None] = "llama-3.1-8b"  # vLLM #20780 (EAGLE) and #26191 (EAGLE-3) both
    #: The head's own draft vocabulary when derived from the target (None: the target's).
    default_vocab: ClassVar[int | None] = None
    #: Decoder layers of a head derived from the target, and where that number comes from ("" for one layer).
    default_layers: ClassVar[tuple[int, str]] = (1, "")
    #: The kind of head config ``KIND:PATH`` reads (None: its own kind).
    config_kind: ClassVar[str | None] = None

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        alpha = float(alpha_from_acceptance_length(2.29, 3))
        return (
            Acceptance(alpha=alpha, source="vLLM issue #20780"),
            "vLLM issue #20780: EAGLE head yuhuili/EAGLE-LLaMA3.1-Instruct-8B on Llama-3.1-8B-Instruct, MT-bench, "
            f"3 speculative tokens: mean acceptance length 2.29 (alpha {alpha:.3f})",
        )

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "EagleHead":
        if path:
            head = _head_from_config(path, target, cls.config_kind or cls.kind)
            basis = f"head config {path}" + (
                f"; stored in {head.weight_dtype}" if head.weight_dtype != target.weight_dtype else ""
            )
        else:
            layers, why = cls.default_layers
            head = _head_shape(cls.kind, target, cls.default_vocab or target.vocab_size, layers=layers)
            basis = (
                "derived from the target's shape: a dense layer of its attention and dense MLP sizes"
                if target.is_moe
                else "derived from the target's shape"
            )
            if why:
                basis += f"; {layers} layers ({why})"
            if cls.default_vocab:
                basis += (
                    f"; draft vocabulary {cls.default_vocab:,}, the EAGLE-3 trainers' default for every family "
                    "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B; SpecForge's Qwen3 configs, e.g. qwen3-30B-A3B-eagle3.1.json); "
                    "eagle3:HEAD/config.json reads a head's own"
                )
            head = _stored_as_published(head, target, cls.label, options)
        return cls(head.name, _with_options(head, options, target, True), basis)


@dataclass(frozen=True)
class Eagle3Head(EagleHead):
    """An EAGLE-3 head: a 3d -> d fusion of three target layers, 2d-wide attention input, its own draft vocabulary."""

    kind: ClassVar[str] = "eagle3"
    label: ClassVar[str] = "an EAGLE-3 head"
    #: The EAGLE authors' official EAGLE-3 heads for targets in the catalog: SafeAILab/EAGLE README.md @ cb7e084
    #: (2026-02-19) L157-158, "EAGLE-3 Models on Hugging Face", Official: Yes.  The table's other rows are marked not
    #: official (third parties' heads of varying quality); for those targets give --draft-checkpoint.
    checkpoints: ClassVar[dict[str, str]] = {
        "llama-3.1-8b": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "llama-3.3-70b": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
    }
    published_short: ClassVar[str] = "MT-bench, vLLM #26191"
    default_vocab: ClassVar[int | None] = EAGLE3_DRAFT_VOCAB

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        alpha = float(alpha_from_acceptance_length(1 + 12208 / 4816, 7))
        return (
            Acceptance(alpha=alpha, source="vLLM issue #26191"),
            "vLLM issue #26191: EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B on Llama-3.1-8B-Instruct, MT-bench, "
            f"T = 0, 7 speculative tokens: 4,816 drafts, 12,208 accepted, mean acceptance length 3.53 (alpha {alpha:.3f})",
        )


@dataclass(frozen=True)
class MtpHead(Drafter):
    """The target's own multi-token-prediction layers (DeepSeek-V3's NextN layer)."""

    kind: ClassVar[str] = "mtp"
    label: ClassVar[str] = "an MTP layer"
    extend_pass: ClassVar[bool] = True
    loads_checkpoint: ClassVar[bool] = False
    published_short: ClassVar[str] = "DeepSeek-V3 report"
    #: The report measures "various generation topics" on DeepSeek-V3; chat is the nearest of the workloads.
    published_for: ClassVar[tuple[str, str] | None] = ("deepseek", "chat")
    published_target: ClassVar[str | None] = "deepseek-v3"

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return (
            Acceptance(cumulative=(0.875,), source="DeepSeek-V3 report"),
            "DeepSeek-V3 Technical Report (arXiv:2412.19437) section 5.4.3: the second token's acceptance is 85-90%",
        )

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return _no_checkpoint(self.kind, given)

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "MtpHead":
        if path:
            raise ValueError("mtp takes no path: it is the target's own multi-token-prediction layers")
        if target.n_mtp_layers < 1:
            raise ValueError(
                f"{given_as('draft')} mtp: the target {target.name}'s config declares no multi-token-prediction layers "
                "(num_nextn_predict_layers); mtp needs a checkpoint that ships them, e.g. deepseek-v3"
            )
        d = target.hidden_size
        # The MTP layers are the target's own: they keep every field of its layers (MoE, MLA, dtypes); what changes
        # is the layer count, the 2d -> d projection of [embedding; hidden] and that nothing else rides along.
        # A hybrid target's MTP layer is a full-attention decoder layer (Qwen3.5's mtp_num_hidden_layers; vLLM builds it
        # with full attention, model_executor/models/qwen3_next_mtp.py).  Its embedding and LM head are the target's:
        # vLLM 0.24.0 v1/spec_decode/llm_base_proposer.py shares both with every MTP drafter (_maybe_share_embeddings,
        # _maybe_share_lm_head, also each layer's shared_head.head), and qwen3_5_mtp.py, qwen3_next_mtp.py and
        # deepseek_mtp.py load only their mtp.* layers beside them; a draft step still gathers b rows and reads the head.
        head = dataclasses.replace(
            attention_only(target),
            name=f"mtp ({target.name})",
            n_layers=target.n_mtp_layers,
            n_dense_layers=0,
            n_mtp_layers=0,
            extra_linear_params=2 * d * d,
            tie_embeddings=False,
            extra_params=0,
            notes=(),
            source="",
            vocab_from_target=True,
        )
        return cls(
            head.name,
            _with_options(head, options, target),
            f"{target.n_mtp_layers} MTP layer(s) of the target's checkpoint",
        )


@dataclass(frozen=True)
class NgramDrafter(Drafter):
    """Prompt lookup: no network; a CPU scan of each sequence's cached tokens once per round."""

    #: CPU seconds per cached token scanned per round.
    cpu_s_per_token: float = NGRAM_CPU_S_PER_TOKEN

    kind: ClassVar[str] = "ngram"
    label: ClassVar[str] = "n-gram prompt lookup"
    #: vLLM's n-gram proposer drafts what its match holds, up to K tokens.
    drafts_every_step: ClassVar[bool] = False
    launches_steps: ClassVar[bool] = False
    drafts_trees: ClassVar[bool] = False
    loads_checkpoint: ClassVar[bool] = False
    published_short: ClassVar[str] = "code editing, vLLM #24344"
    published_for: ClassVar[tuple[str, str] | None] = ("*", "code-editing")
    #: The n-gram sizes the lookup matches (vLLM's prompt_lookup_min / prompt_lookup_max; TensorRT-LLM's
    #: max_matching_ngram_size is the larger): the maximum 4 is the reference article's ("Implementation sketch"), the
    #: minimum 2 specsim's own; vLLM's default is 5 and 5 (vllm/config/speculative.py 0.34.0 L551-556).
    lookup: ClassVar[tuple[int, int]] = (2, 4)

    @classmethod
    def sglang_flags(cls, gamma: int) -> list[str]:
        # SGLang's NGRAM drafts a tree unless told: --speculative-ngram-max-bfs-breadth defaults to 10 (server_args.py
        # 0.5.3 L308, 0.5.13 L623; arg_groups/fields/spec.py 0.5.23 L256-259), the breadth at each matched node
        # running from it down to the minimum 1 as the match lengthens (buildRecency, kernels/jit/csrc/ngram_corpus/
        # trie.cpp 0.5.23 L229-259; "NGRAM defaults to a breadth-10 tree", arg_groups/kv_cache_hook.py 0.5.23 L196).
        # Breadth 1 drafts the chain of gamma tokens specsim models.
        return ["--speculative-ngram-max-bfs-breadth", "1"]

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        # 993 rounds proposed, 821 tokens came from passes with no proposal: 993 / 1,814 passes drafted.  Scaling the
        # rates by that share charges a no-proposal pass as a round whose first draft was rejected (a little dearer
        # than the plain decode step it was) and gives the measured 2.96 tokens per pass.
        return (
            Acceptance(
                cumulative=tuple(round(c * 993 / 1814, 4) for c in (0.81, 0.74, 0.70, 0.68, 0.66)),
                source="vLLM PR #24344, code editing",
            ),
            "vLLM PR #24344: n-gram (prompt lookup 2-5, 5 tokens) on the vdaita/edit_5k_char code-editing set, "
            "per-position acceptance 0.81, 0.74, 0.70, 0.68, 0.66 where a match was found, no proposal in 821 of "
            "1,814 passes: 2.96 tokens per pass (a favourable, high-overlap workload)",
        )

    @classmethod
    def fallback_acceptance(cls, reason: str | None = None) -> tuple[Acceptance, str]:
        rates = ",".join(f"{c:g}" for c in cls.published()[0].cumulative)
        raise ValueError(
            (f"{reason}; " if reason else "") + "n-gram acceptance depends on the workload (how often the "
            f"output repeats the prompt): pass {given_as('alpha')}, {given_as('acceptance')} or {given_as('metrics')}; "
            f"on code editing vLLM PR #24344 measured {given_as('acceptance')} {rates} (per position, passes without a "
            "match included)"
        )

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

    def lookup_bytes(self, batch: object, context: object) -> np.ndarray:
        # a scan kernel reads each sequence's token ids once (its n-gram windows re-read them from cache)
        return token_ids_scanned(batch, context)

    def describe(self) -> str:
        return (
            f"drafter: n-gram prompt lookup, no network; {self.cpu_s_per_token * 1e9:.3g} ns of CPU per cached "
            f"token per round ({self.basis})"
        )

    @classmethod
    def build(
        cls, path: str, target: ModelShape, options: dict, cpu_s_per_token: float | None = None
    ) -> "NgramDrafter":
        if path:
            raise ValueError("ngram takes no path")
        if options.get("weight_dtype") or options.get("kv_dtype") or (options.get("tp") or 1) > 1:
            raise ValueError(no_network_said("ngram"))
        if cpu_s_per_token is None:
            return cls("n-gram", None, "vLLM PR #56732: 9.95 ms per step for 66.3M tokens with 8 threads")
        return cls("n-gram", None, f"set by {given_as('ngram_cpu_s_per_token')}", cpu_s_per_token)
