"""Parallel drafters: one pass of a network proposes all gamma tokens of a round (P-EAGLE, PARD, DFlash, DSpark).

Their draft cost does not grow with gamma step by step: a round runs one draft pass whose tokens per sequence are what
the engine lays out (P-EAGLE 2 gamma, PARD 2 gamma + 1, DFlash gamma + 1, DSpark gamma), then one verification.  DSpark
also verifies a different prefix per request (:meth:`DSparkDrafter.verified`).  Sources: docs/deployments/drafters.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from specsim.core.names import given_as
from specsim.describe.models import ModelShape, get_model
from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length
from specsim.speculation.drafters.base import (
    Drafter,
    _block_drafter_config,
    _head_shape,
    _OnePass,
    _stored_as_published,
    _with_options,
)
from specsim.speculation.drafters.classic import Eagle3Head
from specsim.speculation.drafters.draft_model import DraftModel

__all__ = ["DFlashDrafter", "DSparkDrafter", "PEagleHead", "ParallelDraftModel", "PublishedLength"]


@dataclass(frozen=True)
class PublishedLength:
    """One published mean acceptance length: tokens per verification, the bonus token included."""

    target: str  #: the target it was measured on
    workload: str  #: the dataset or traffic
    gamma: int  #: draft tokens proposed per round (the block less its anchor for block drafters)
    mean_length: float  #: tokens per verification, bonus included
    source: str  #: where it is published


def _from_length(row: PublishedLength, what: str) -> tuple[Acceptance, str]:
    """(acceptance, citation) of a published mean length at ``row.gamma`` draft tokens, as one per-token alpha."""
    alpha = float(alpha_from_acceptance_length(row.mean_length, row.gamma))
    return (
        Acceptance(alpha=alpha, source=row.source.split(",")[0]),
        f"{row.source}: {what} on {row.target}, {row.workload}, {row.gamma} draft tokens: mean acceptance length "
        f"{row.mean_length:g} (alpha {alpha:.3f})",
    )


@dataclass(frozen=True)
class PEagleHead(_OnePass, Eagle3Head):
    """P-EAGLE (arXiv:2602.01469): an EAGLE-3-style head that drafts all K tokens in one pass.

    Slot 1 is the usual next-token position; slots 2..K carry a learned mask embedding and a learned shared hidden
    state.  vLLM's unified proposer (``vllm/v1/spec_decode/llm_base_proposer.py`` at 00c4f22, ``parallel_drafting``)
    lays a round's draft pass out as the K verified tokens shifted by one (the bonus token included) and K - 1 mask
    slots: 2K tokens per sequence, one pass, no separate draft-extend pass.
    """

    kind: ClassVar[str] = "peagle"
    label: ClassVar[str] = "a P-EAGLE parallel-drafting head"
    extend_pass: ClassVar[bool] = False
    engine_kind: ClassVar[str | None] = "eagle3"
    config_kind: ClassVar[str | None] = "eagle3"
    default_layers: ClassVar[tuple[int, str]] = (
        4,
        "the GPT-OSS P-EAGLE heads' 4 layers: vLLM blog 2026-03-13-p-eagle.md, "
        "Hugging Face card amazon/gpt-oss-120b-p-eagle",
    )
    checkpoints: ClassVar[dict[str, str]] = {"gpt-oss-120b": "amazon/gpt-oss-120b-p-eagle"}
    #: The most tokens a P-EAGLE head is trained to draft: the GPT-OSS-20B head's 10 (vLLM blog; the 120B head's is 8).
    trained_steps: ClassVar[int] = 10
    published_short: ClassVar[str] = "MT-Bench K=7, vLLM P-EAGLE blog"
    #: Its default is published_lengths[0]'s (not the EAGLE-3 head's Llama-3.1-8B it would inherit).
    published_for: ClassVar[tuple[str, str] | None] = ("gpt-oss", "chat")
    published_target: ClassVar[str | None] = "gpt-oss-20b"
    published_lengths: ClassVar[tuple] = (
        PublishedLength("gpt-oss-20b", "MT-Bench", 7, 3.70, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-20b", "MT-Bench", 3, 2.87, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-20b", "HumanEval", 7, 3.94, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-20b", "HumanEval", 3, 3.02, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-20b", "SPEED-Bench", 7, 3.38, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-20b", "SPEED-Bench", 3, 2.87, "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0"),
        PublishedLength("gpt-oss-120b", "MT-Bench", 5, 2.68, "Hugging Face card amazon/gpt-oss-120b-p-eagle, T = 0"),
        PublishedLength("gpt-oss-120b", "HumanEval", 5, 3.15, "Hugging Face card amazon/gpt-oss-120b-p-eagle, T = 0"),
        PublishedLength("gpt-oss-120b", "GSM-8K", 5, 3.55, "Hugging Face card amazon/gpt-oss-120b-p-eagle, T = 0"),
    )

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return _from_length(cls.published_lengths[0], "P-EAGLE 4-layer head")

    @property
    def max_steps(self) -> int:
        return self.trained_steps

    def draft_tokens(self, steps: np.ndarray, width: object) -> np.ndarray:
        return np.maximum(2.0 * np.asarray(steps, dtype=float), 1.0)  # K shifted verified tokens + K - 1 mask slots


@dataclass(frozen=True)
class ParallelDraftModel(_OnePass, DraftModel):
    """PARD (arXiv:2504.18583): a small standalone model of the target's family, trained with mask tokens so that one
    pass drafts K tokens; it reads no target hidden states, so one draft serves the family.

    vLLM runs it as ``method: draft_model`` with ``parallel_drafting: true`` (``llm_base_proposer.py`` at 00c4f22: no
    hidden states are passed, so the pass carries the K + 1 verified positions and K mask slots, 2K + 1 tokens per
    sequence); the draft keeps its own KV cache, written for the verified tokens inside that pass.
    """

    #: The checkpoint an engine loads (the PARD weights of the family, or what ``pard:MODEL`` names).
    weights: str = ""

    kind: ClassVar[str] = "pard"
    label: ClassVar[str] = "a PARD parallel draft model"
    spelling: ClassVar[str | None] = None
    engine_kind: ClassVar[str | None] = "draft_model"
    #: Target name prefix -> (the shape of the PARD checkpoint's base model, the checkpoint): AMD-AGI/PARD's README.
    families: ClassVar[tuple] = (
        ("llama-3", "llama-3.2-1b", "amd/PARD-Llama-3.2-1B"),
        ("qwen3-", "qwen3-0.6b", "amd/PARD-Qwen3-0.6B"),
    )
    published_short: ClassVar[str] = "HumanEval, vLLM PR #18541"
    no_default: ClassVar[str] = "its one published length names no draft length"
    published_lengths: ClassVar[tuple] = (
        PublishedLength(
            "llama-3.1-8b",
            "HumanEval",
            0,
            5.6,
            "vLLM PR #18541 (v0 integration; corrected from 6.6; draft length not stated)",
        ),
    )

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        raise ValueError(
            "PARD's published acceptance length, 5.6 on HumanEval with Llama-3.1-8B (vLLM PR #18541), names no "
            f"draft length, so it gives no per-token rate: pass {given_as('alpha')}, {given_as('acceptance')} or "
            f"{given_as('metrics')}"
        )

    @classmethod
    def fallback_acceptance(cls, reason: str | None = None) -> tuple[Acceptance, str]:
        return cls.published()  # refuses: no per-token rate is published

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "ParallelDraftModel":
        given = {"kv_given": bool(options.get("kv_dtype"))}  # (its KV cache: DraftModel's rule)
        if path:
            model = get_model(path, **options)
            return cls(model.name, model, f"draft {path}", model.source or path, own_kv_dtype=model.kv_dtype, **given)
        for prefix, base, weights in cls.families:
            if target.name.startswith(prefix):
                model = get_model(base, **options)
                return cls(
                    model.name,
                    model,
                    f"the shape of {base}, the base of {weights} (AMD-AGI/PARD README)",
                    weights,
                    own_kv_dtype=model.kv_dtype,
                    **given,
                )
        known = ", ".join(f"{prefix}* ({w})" for prefix, _, w in cls.families)
        raise ValueError(
            f"no published PARD draft is known for {target.name} (known: {known}); give one with {given_as('draft')} pard:MODEL"
        )

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return given or self.weights or self.step_model.source or self.step_model.name

    @property
    def draft_spec(self) -> str:
        given = self.basis.startswith("draft ")  # built from pard:MODEL, not from the family's published draft
        return f"pard:{self.step_model.source or self.step_model.name}" if given else "pard"

    def draft_tokens(self, steps: np.ndarray, width: object) -> np.ndarray:
        return 2.0 * np.asarray(steps, dtype=float) + 1.0  # K + 1 verified positions and K mask slots

    def provenance(self) -> list[str]:
        return [
            f"drafter: PARD, one pass of {self.step_model.name} over 2 gamma + 1 tokens per sequence drafts gamma tokens "
            f"({self.basis})"
        ]


@dataclass(frozen=True)
class DFlashDrafter(_OnePass, Drafter):
    """DFlash (arXiv:2602.06036): a small block-diffusion drafter that fills a block of mask tokens in one pass.

    The pass runs the anchor (bonus) token and K = block - 1 masks (K + 1 tokens per sequence) through every draft layer
    with attention inside the block both ways; features of five target layers are fused (a 5d -> d projection) and
    injected as K/V entries of each draft layer; embedding and LM head are the target's.  The accepted tokens' K/V
    projections run outside the block's pass (paper App. A.3; vLLM ``v1/spec_decode/dflash.py`` at 01046b9a,
    ``precompute_and_store_context_kv``): they reuse weights the pass reads, and their FLOPs (2 (5d^2 + 2 d kv) per
    accepted token per layer) are not counted.
    """

    block_size: int = 16

    kind: ClassVar[str] = "dflash"
    label: ClassVar[str] = "a DFlash block-diffusion drafter"
    #: Draft layers (paper section 5: 5; 8 for Qwen3-Coder) and target layers fused into the injected features.
    layers: ClassVar[int] = 5
    fused_layers: ClassVar[int] = 5
    checkpoints: ClassVar[dict[str, str]] = {
        "qwen3-8b": "z-lab/Qwen3-8B-DFlash-b16",
        "qwen3.5-27b": "z-lab/Qwen3.5-27B-DFlash",
    }
    published_short: ClassVar[str] = "MT-Bench, DFlash paper Table 1"
    published_lengths: ClassVar[tuple] = tuple(
        PublishedLength(
            target, dataset, 15, length, "DFlash paper (arXiv:2602.06036) Table 1, thinking off, T = 0, H200, block 16"
        )
        for target, row in (
            ("qwen3-8b", (6.54, 7.87, 7.08, 6.50, 5.95, 7.27, 4.24)),
            ("qwen3-4b", (6.53, 7.84, 7.27, 6.64, 6.09, 7.09, 4.35)),
        )
        for dataset, length in zip(
            ("GSM8K", "MATH-500", "AIME25", "HumanEval", "MBPP", "LiveCodeBench", "MT-Bench"), row
        )
    )

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        mt = next(r for r in cls.published_lengths if r.target == "qwen3-8b" and r.workload == "MT-Bench")
        return _from_length(mt, f"{cls.label}, {cls.layers} layers")

    @property
    def max_steps(self) -> int:
        return self.block_size - 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 2 <= self.block_size <= 64:
            raise ValueError(f"{self.kind} block size must be in [2, 64], got {self.block_size!r}")

    def draft_tokens(self, steps: np.ndarray, width: object) -> np.ndarray:
        return np.asarray(steps, dtype=float) + 1.0  # the anchor and K masks

    def describe(self) -> str:
        return (
            f"drafter: {self.step_model.describe()}; one pass over gamma + 1 tokens per sequence drafts up to "
            f"{self.max_steps} tokens (block {self.block_size})" + (f" ({self.basis})" if self.basis else "")
        )

    #: The architectures of this drafter's config.json (z-lab's checkpoints, e.g. z-lab/Qwen3-8B-DFlash-b16).
    config_architectures: ClassVar[tuple[str, ...]] = ("DFlashDraftModel",)

    @classmethod
    def _extra(cls, target: ModelShape, fused: int, config: dict) -> int:
        """Linear weights beside the layers: the fusion of ``fused`` target layers' features (fused d -> d)."""
        return fused * target.hidden_size * target.hidden_size

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "DFlashDrafter":
        block = cls.__dataclass_fields__["block_size"].default
        if not path:
            head = _head_shape(
                cls.kind, target, target.vocab_size, layers=cls.layers, extra=cls._extra(target, cls.fused_layers, {})
            )
            basis = (
                f"derived from the target's shape: {cls.layers} layers of its attention and dense MLP, a "
                f"{cls.fused_layers}d -> d feature fusion, the target's embedding and LM head (the papers' defaults)"
            )
            head = _stored_as_published(head, target, cls.label, options)
            return cls(head.name, _with_options(head, options, target, True), basis, block)
        head, config = _block_drafter_config(path, target, cls.kind, cls.config_architectures)
        ids = (config.get("dflash_config") or {}).get("target_layer_ids", config.get("target_layer_ids"))
        fused = len(ids) if isinstance(ids, list) and ids else cls.fused_layers
        block = config.get("block_size", block)
        if isinstance(block, bool) or not isinstance(block, int):
            raise ValueError(f"{cls.kind} drafter config {path!r}: block_size must be a whole number, got {block!r}")
        head = dataclasses.replace(head, extra_linear_params=cls._extra(target, fused, config))
        return cls(
            head.name,
            _with_options(head, options, target, True),
            f"drafter config {path}: block {block}, {head.n_layers} layers, {fused} fused target layers",
            block,
        )


@dataclass(frozen=True)
class DSparkDrafter(DFlashDrafter):
    """DSpark (arXiv:2607.05147): a DFlash-style backbone drafts a block of gamma tokens in one pass (the anchor is the
    first of the gamma slots, section 3.1), a light sequential head biases each token on the one before, and a
    confidence head predicts each position's acceptance; a scheduler then verifies a different prefix per request.

    Verification: the scheduler picks the verify budget B that maximises tokens per second, (tokens accepted) /
    (draft cost + verify cost of T + B tokens), the draft cost being paid whatever is verified (vLLM blog
    2026-08-14-dspark-adaptive-verification.md; paper Algorithm 1).  specsim takes every request's survival curve to
    be the acceptance given (no per-request spread is published), so a budget of B = b v tokens verifies floor(v) or
    floor(v) + 1 per sequence: the verify pass is priced at 1 + v tokens per sequence and E is the mix
    (:func:`~specsim.speculation.acceptance.tokens_per_round` with ``verified``), v searched in quarter tokens.  A
    spread of confidences across requests lets the real scheduler do better: this is its lower bound.  The
    sequential head's steps, +0.2 % to +1.3 % of a round in the paper (section 4.3.2), are not counted.
    """

    block_size: int = 7

    kind: ClassVar[str] = "dspark"
    label: ClassVar[str] = "a DSpark confidence-scheduled drafter"
    round_formula: ClassVar[str] = "t_D (one draft pass proposes gamma tokens; a prefix of them verified per request)"
    checkpoints: ClassVar[dict[str, str]] = {"qwen3-8b": "deepseek-ai/dspark_qwen3_8b_block7"}
    published_short: ClassVar[str] = "MT-Bench, DSpark paper Table 1"
    published_lengths: ClassVar[tuple] = tuple(
        PublishedLength(
            target, dataset, 7, length, "DSpark paper (arXiv:2607.05147) Table 1, block 7, T = 1, scheduler off"
        )
        for target, row in (
            ("qwen3-8b", (6.17, 5.78, 5.01, 5.16, 5.52, 5.17, 3.72, 3.58, 3.21)),
            ("qwen3-4b", (6.11, 5.70, 4.89, 5.13, 5.38, 4.86, 3.64, 3.54, 3.29)),
            ("qwen3-14b", (6.21, 5.74, 4.94, 5.26, 5.43, 5.02, 3.70, 3.58, 3.13)),
        )
        for dataset, length in zip(
            ("GSM8K", "MATH", "AIME25", "MBPP", "HumanEval", "LiveCodeBench", "MT-Bench", "Alpaca", "Arena-Hard"), row
        )
    )
    varies_verification: ClassVar[bool] = True
    drafts_every_step: ClassVar[bool] = False
    #: Resolution of the searched mean verified length, in draft tokens per sequence.
    verify_step: ClassVar[float] = 0.25
    config_architectures: ClassVar[tuple[str, ...]] = ("DSparkDraftModel",)
    #: The Markov head's rank r (paper section 3.1: 256): its r x V projection is read with the pass.
    markov_rank: ClassVar[int] = 256

    @classmethod
    def _extra(cls, target: ModelShape, fused: int, config: dict) -> int:
        rank = config.get("markov_rank", cls.markov_rank)
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise ValueError(f"{cls.kind} drafter config: markov_rank must be a whole number >= 0, got {rank!r}")
        return super()._extra(target, fused, config) + rank * target.vocab_size

    @property
    def max_steps(self) -> int:
        return self.block_size

    def draft_tokens(self, steps: np.ndarray, width: object) -> np.ndarray:
        return np.maximum(np.asarray(steps, dtype=float), 1.0)  # gamma slots, the anchor first

    @classmethod
    def sglang_flags(cls, gamma: int) -> list[str]:
        # SGLang reads the block (gamma) from the checkpoint unless given, and refuses --speculative-num-draft-tokens
        # other than gamma + 1 (_handle_dspark, srt/arg_groups/speculative_hook.py, 0.5.16-0.5.23): name it.
        return ["--speculative-dspark-block-size", str(gamma)]

    def verified(self, dep, acceptance: object, steps: np.ndarray, batch: object, context: object) -> np.ndarray:
        from specsim.speculation.acceptance import tokens_per_round

        steps = np.asarray(steps, dtype=float)
        shape = np.broadcast_shapes(
            steps.shape,
            np.shape(batch),
            np.shape(context),
            () if isinstance(acceptance, Acceptance) else np.shape(acceptance),
        )
        grid = np.arange(0.0, float(np.max(steps)) + self.verify_step / 2, self.verify_step).reshape(
            (-1,) + (1,) * len(shape)
        )
        v = np.minimum(grid, steps)
        tokens = tokens_per_round(acceptance, np.broadcast_to(steps, v.shape), verified=v)
        rate = tokens / dep.round_time(batch, context, steps, 1, 1.0 + v).total_s  # tokens per second per sequence
        v = np.broadcast_to(v, np.broadcast_shapes(v.shape, np.shape(rate)))
        return np.take_along_axis(v, np.argmax(np.broadcast_to(rate, v.shape), axis=0)[None], axis=0)[0]

    def describe(self) -> str:
        return (
            f"drafter: {self.step_model.describe()}; one pass over gamma tokens per sequence (the anchor first) drafts "
            f"up to {self.max_steps} tokens; the prefix verified per request maximises tokens per second (the vLLM "
            "blog's budget rule, every request alike)" + (f" ({self.basis})" if self.basis else "")
        )
