"""Suffix decoding (Snowflake's Arctic, arXiv:2411.04975): no network, a CPU suffix-tree lookup that picks each
request's draft length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from specsim.describe.models import ModelShape
from specsim.speculation.acceptance import Acceptance
from specsim.speculation.drafters.base import Drafter, _no_checkpoint, no_network_said, token_ids_scanned

__all__ = ["SUFFIX_CPU_S_PER_SEQUENCE", "SuffixDrafter"]


#: Suffix decoding's CPU time per sequence per round: ArcticInference PR #212 measured 6.288 us of speculation and
#: 4.126 us of tree update per token; its benchmark emitted 1.693 tokens per round (0.693 accepted + the bonus).
SUFFIX_CPU_S_PER_SEQUENCE = (6.288e-6 + 4.126e-6) * 1.693


@dataclass(frozen=True)
class SuffixDrafter(Drafter):
    """Suffix decoding (arXiv:2411.04975): no network; suffix trees of each request's tokens and of earlier responses
    on the CPU propose the most frequent continuation of the longest matching suffix.

    The draft length is chosen per request each round: the proposal stops where the estimated probability of the
    path falls below ``min_token_prob`` (vLLM's ``suffix_decoding_min_token_prob``, default 0.1; ArcticInference's
    ``suffix_min_token_prob``) and at ``max_depth`` (``suffix_decoding_max_tree_depth``, 24; a bound on match plus
    speculation, read here as a bound on speculation), under ``num_speculative_tokens`` (gamma).  specsim reads the
    estimate as calibrated: a request proposes the positions whose cumulative acceptance is at least
    ``min_token_prob``, and the verify pass carries 1 + that many tokens per sequence.  ``max_spec_factor`` (a bound
    by the match length) is not modelled: match lengths are not published.
    """

    cpu_s_per_sequence: float = SUFFIX_CPU_S_PER_SEQUENCE
    min_token_prob: float = 0.1
    max_depth: int = 24

    kind: ClassVar[str] = "suffix"
    label: ClassVar[str] = "suffix decoding"
    launches_steps: ClassVar[bool] = False
    drafts_trees: ClassVar[bool] = False
    loads_checkpoint: ClassVar[bool] = False
    varies_verification: ClassVar[bool] = True
    drafts_every_step: ClassVar[bool] = False
    round_formula: ClassVar[str] = "0 (no draft pass: its CPU lookup is in t_V; a depth per request up to gamma)"
    published_short: ClassVar[str] = "MT-Bench K=1, vLLM PR #24852"

    @classmethod
    def published(cls) -> tuple[Acceptance, str]:
        return (
            Acceptance(cumulative=(0.62,), source="vLLM PR #24852, MT-Bench"),
            "vLLM PR #24852: suffix decoding on MT-Bench, 1 speculative token: mean acceptance length 1.62, acceptance "
            "0.62 at token 0 (chat, a low-overlap workload; agentic and code-editing traffic repeat far more: "
            "ArcticInference's docs measure 3.8x on SWE-Bench against 1.5x on ShareGPT)",
        )

    @classmethod
    def by_workload(cls) -> dict[str, tuple[float, float, str]]:
        """Published (mean draft tokens proposed, mean tokens per round) per workload, where both are published."""
        return {
            "chat (MT-Bench)": (1.0, 1.62, "vLLM PR #24852"),
            "ArcticInference benchmark task 0": (3.26, 1.693, "ArcticInference PR #212 (accept rate 0.2127)"),
        }

    def __post_init__(self) -> None:
        if self.step_model is not None:
            raise ValueError("suffix decoding runs no network")
        if not 0.0 <= self.cpu_s_per_sequence < 1e-2:
            raise ValueError(
                f"suffix decoding CPU time per sequence must be in [0, 1e-2) s, got {self.cpu_s_per_sequence!r}"
            )
        if not 0.0 < self.min_token_prob <= 1.0:
            raise ValueError(f"suffix min_token_prob must be in (0, 1], got {self.min_token_prob!r}")

    @property
    def max_steps(self) -> int:
        return self.max_depth

    def checkpoint(self, target: ModelShape, given: str | None = None) -> str | None:
        return _no_checkpoint(self.kind, given)

    def draft_pass(self, dep, batch: object, width: object, context: object):
        return None  # no network: the proposals come from the CPU lookup (host_s)

    def launched_steps(self, steps: np.ndarray) -> float:
        return 0.0

    def with_step_model(self, model: ModelShape) -> "Drafter":
        raise ValueError("suffix decoding runs no network to replace")

    def host_s(self, batch: object, context: object) -> np.ndarray:
        return self.cpu_s_per_sequence * np.asarray(batch, dtype=float) + 0.0 * np.asarray(context, dtype=float)

    def lookup_bytes(self, batch: object, context: object) -> np.ndarray:
        # a GPU suffix lookup scans each request's own token ids as n-gram's does (its cross-request corpus is reached
        # through a hash index, a few entries a request, not counted)
        return token_ids_scanned(batch, context)

    def verified(self, dep, acceptance: object, steps: np.ndarray, batch: object, context: object) -> np.ndarray:
        steps = np.minimum(np.asarray(steps, dtype=float), self.max_depth)
        if isinstance(acceptance, Acceptance) and acceptance.alpha is None:
            # the measured positions, and those past them where the rates are continued (to the deepest it drafts)
            c = acceptance.cumulative_rates(acceptance.max_gamma or max(self.max_depth, len(acceptance.cumulative)))
            above = float(np.sum(c >= self.min_token_prob))
        else:
            a = np.asarray(acceptance.alpha if isinstance(acceptance, Acceptance) else acceptance, dtype=float)
            with np.errstate(divide="ignore"):
                depth = np.floor(np.log(self.min_token_prob) / np.log(np.clip(a, 1e-300, 1.0)) + 1e-9)
            above = np.where(a >= 1.0, np.inf, np.where(a <= 0.0, 0.0, depth))
        return np.minimum(steps, above)

    def describe(self) -> str:
        return (
            f"drafter: suffix decoding, no network; {self.cpu_s_per_sequence * 1e6:.3g} us of CPU per sequence per round "
            f"({self.basis}); per request it proposes the positions whose acceptance is at least {self.min_token_prob:g} "
            f"(suffix_decoding_min_token_prob), at most min(gamma, {self.max_depth})"
        )

    @classmethod
    def build(cls, path: str, target: ModelShape, options: dict) -> "SuffixDrafter":
        if path:
            raise ValueError("suffix takes no path")
        if options.get("weight_dtype") or options.get("kv_dtype") or (options.get("tp") or 1) > 1:
            raise ValueError(no_network_said("suffix"))
        return cls("suffix", None, "ArcticInference PR #212: 10.4 us per token, 1.693 tokens per round")
