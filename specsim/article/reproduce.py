"""The reference article's preset and every number it quotes, recomputed.

The article (shared/seed/speculative-decoding-with-draft-models.txt) quotes
step times and speedups from a step-time model it does not write down;
shared/design/article-model.md reconstructs that model and the preset that
lands every quoted value:

* H100 SXM: 989e12 dense BF16 FLOP/s, 3.35e12 bytes/s;
* compute efficiency 0.6, bandwidth efficiency 0.8, 0.5 ms per forward pass;
* target ``article-8b`` (N = 8e9), draft ``article-1b`` (N = 1e9), 16-bit;
* L = 1128 cached tokens (1000-token prompt + half of 256 generated).

:func:`reproduce` recomputes each quoted quantity from that preset and checks
it against the rounding interval of the quoted value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from specsim.describe.hardware import ARTICLE_BANDWIDTH_EFF, ARTICLE_COMPUTE_EFF, ARTICLE_OVERHEAD_S, load_hardware
from specsim.describe.models import get_model
from specsim.engines import ENGINES
from specsim.speculation.acceptance import alpha_from_acceptance_length, tokens_per_round
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma_cost_ratio, speedup
from specsim.timing.roofline import RooflineSource

__all__ = ["ARTICLE_CONTEXT_TOKENS", "Check", "article_deployment", "article_preset", "reproduce"]

ARTICLE_CONTEXT_TOKENS = 1128


@dataclass(frozen=True)
class Check:
    """One quoted number beside specsim's value."""

    quantity: str
    quoted: str
    value: float
    low: float
    high: float
    unit: str = ""
    #: Whether the upper end is inside the interval ("[low, high]") or not ("[low, high)").
    high_inclusive: bool = False

    @property
    def passed(self) -> bool:
        upper_ok = self.value <= self.high if self.high_inclusive else self.value < self.high
        return bool(self.low <= self.value and upper_ok)

    def to_dict(self) -> dict:
        """reproduce --json's record: the interval as text and as numbers (``low`` None: unbounded below), in the
        quoted value's unit."""
        return {
            "quantity": self.quantity,
            "quoted": self.quoted,
            "value": self.value,
            "interval": self.interval,
            "low": None if self.low == -np.inf else self.low,
            "high": self.high,
            "high_inclusive": self.high_inclusive,
            "unit": self.unit,
            "passed": self.passed,
        }

    @property
    def interval(self) -> str:
        close = "]" if self.high_inclusive else ")"
        low = "-inf" if self.low == -np.inf else f"{self.low:g}"
        return f"[{low}, {self.high:g}{close}"


def article_deployment() -> Deployment:
    """The article's preset, independent of later calibration of ``h100-sxm``."""
    hardware = dataclasses.replace(
        load_hardware("h100-sxm"),
        peak_flop_per_s=989e12,
        peak_bytes_per_s=3.35e12,
        compute_eff=ARTICLE_COMPUTE_EFF,
        bandwidth_eff=ARTICLE_BANDWIDTH_EFF,
        overhead_s=ARTICLE_OVERHEAD_S,
        per_layer_overhead_s=0.0,
    )
    return Deployment(
        hardware, get_model("article-8b"), get_model("article-1b"), RooflineSource(hardware), ENGINES["none"]
    )


def article_preset() -> dict:
    """The preset :func:`reproduce` computes from, as its output names it (reproduce --json's ``preset``): the
    profile's peaks, efficiencies and per-pass overhead, the step-time source, the models and the context, each
    from :func:`article_deployment` (design/article-model.md reconstructs them from the article)."""
    dep = article_deployment()
    hw = dep.hardware
    return {
        "hardware": hw.name,
        "peak_flop_per_s": hw.peak_flop_per_s,
        "compute_eff": hw.compute_eff,
        "peak_bytes_per_s": hw.peak_bytes_per_s,
        "bandwidth_eff": hw.bandwidth_eff,
        "overhead_s_per_pass": hw.overhead_s,
        "timing": dep.source.name,
        "engine": dep.engine.key,
        "target": dep.target.name,
        "draft": dep.draft.name,
        "context_tokens": ARTICLE_CONTEXT_TOKENS,
        "source": "the reference article's step-time model as docs/article.md reconstructs it",
    }


def _rounded(quantity: str, quoted: str, value: float, decimals: int, unit: str = "") -> Check:
    """A check that ``value`` rounds (half up) to the quoted number."""
    half = 0.5 * 10.0**-decimals
    center = float(quoted)
    return Check(quantity, quoted, value, center - half, center + half, unit)


def reproduce() -> list[Check]:
    """Every row of the table in article-model.md, recomputed.

    >>> all(check.passed for check in reproduce())
    True
    """
    dep = article_deployment()
    hw = dep.hardware
    L = ARTICLE_CONTEXT_TOKENS
    checks: list[Check] = []

    t1 = dep.outcome(0.8, 4, 1, L)
    checks.append(
        Check("target decode step, 8B, batch 1", "about 6.5 ms", float(t1.target.total_s) * 1e3, 6.45, 6.55, "ms", True)
    )
    checks.append(
        Check("arithmetic part of that step", "under 0.3 ms", float(t1.target.compute_s) * 1e3, -np.inf, 0.3, "ms")
    )
    checks.append(Check("compute ridge", "about 221 tokens", hw.ridge_flop_per_byte, 220.5, 221.5, "tokens", True))
    checks.append(Check("cost ratio c at batch 1 (8B target, 1B draft)", "≈ 0.19", float(t1.cost_ratio), 0.185, 0.195))

    for batch, quoted in ((1, "1.90"), (64, "1.81"), (128, "1.49"), (256, "1.25")):
        s = float(speedup(dep, 0.8, 4, batch, L))
        checks.append(_rounded(f"speedup, alpha=0.8, gamma=4, batch {batch}", quoted, s, 2))
    t256 = dep.outcome(0.8, 4, 256, L)
    checks.append(_rounded("t_V / t_T at batch 256 (gamma=4)", "1.76", float(t256.verify_ratio), 2))
    checks.append(
        Check("speedup, alpha=0.8, gamma=8, batch 256", "below 1", float(speedup(dep, 0.8, 8, 256, L)), -np.inf, 1.0)
    )
    checks.append(_rounded("speedup, alpha=0.6, gamma=4, batch 256", "0.86", float(speedup(dep, 0.6, 4, 256, L)), 2))

    alphas = np.array([0.5, 0.7, 0.8, 0.9])
    gammas, speedups = optimal_gamma_cost_ratio(alphas, 0.05)
    for alpha, gamma, s, quoted_gamma, quoted_s in zip(
        alphas, gammas, speedups, (3, 6, 8, 13), ("1.63", "2.35", "3.09", "4.67")
    ):
        checks.append(
            Check(
                f"c=0.05, alpha={alpha:g}: optimal gamma",
                str(quoted_gamma),
                float(gamma),
                quoted_gamma,
                quoted_gamma,
                "",
                True,
            )
        )
        checks.append(_rounded(f"c=0.05, alpha={alpha:g}: speedup at that gamma", quoted_s, float(s), 2))

    # The toy bigram's formula column.  The article prints alpha = 0.638 but its column was computed with the
    # unrounded alpha: the rates each entry's rounding allows (the inverse of E at the entry +- 0.0005) meet in one
    # interval, and its middle is the alpha checked, each entry within its own rounding (+-0.0005).  One rate fitted
    # to six entries: the check is that one rate gives all six, not that the article's 0.638 does.
    toy_gammas = (1, 2, 3, 4, 6, 8)
    toy_quoted = ("1.638", "2.044", "2.303", "2.469", "2.641", "2.712")
    bounds = [
        [float(alpha_from_acceptance_length(float(q) + d, g)) for d in (-0.0005, 0.0005)]
        for g, q in zip(toy_gammas, toy_quoted)
    ]
    low, high = max(b[0] for b in bounds), min(b[1] for b in bounds)
    toy_alpha = (low + high) / 2.0  # where low > high no one rate gives the column, and the checks say so
    for gamma, quoted in zip(toy_gammas, toy_quoted):
        e = float(tokens_per_round(toy_alpha, gamma))
        checks.append(
            Check(
                f"toy bigram formula, gamma={gamma} (alpha={toy_alpha:.5f}, the one rate all six entries round from)",
                quoted,
                e,
                float(quoted) - 0.0005,
                float(quoted) + 0.0005,
                "tokens/step",
                True,
            )
        )
    return checks
