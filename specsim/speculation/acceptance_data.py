"""Published acceptance by drafter kind, target family, workload and context, and the one lookup that reads it.

A drafter's acceptance depends on the target it drafts for, on what is asked (code repeats itself, chat does not)
and on how much context the draft head must attend to.  This module holds the published measurements of that, each
with its source, table, target and dataset, and :func:`resolve`, the one place a command's default acceptance is
chosen (:meth:`specsim.speculation.drafters.Drafter.default_acceptance` calls it).

Rows
    :data:`ROWS` are chain measurements (one token per draft step, as specsim's gamma search models them): a mean
    acceptance length ``tau`` (tokens per verification pass, the bonus token included) at ``gamma`` drafted tokens,
    turned into one per-token ``alpha`` by inverting ``E(alpha, gamma) = (1 - alpha^(gamma+1)) / (1 - alpha)``
    (:func:`~specsim.speculation.acceptance.alpha_from_acceptance_length`), or per-position rates
    ``c_k = P(drafted token k accepted)`` as measured.  Tree results (the EAGLE-3 paper's Table 1, an EAGLE-2
    dynamic tree of 60 nodes) are not rows: a tree's tau is not a chain's, and specsim's tree model needs a
    per-sibling factor nobody publishes; they serve as a held-out check of the workload ordering.  Each drafter
    class also names the family and workload its own published default was measured on (``published_for``), so
    that number keeps one home (the class) and is found by the lookup like a row.

Lookup order (:func:`resolve`)
    1. a row of this drafter kind for the target's family (:func:`target_family`) and the workload;
    2. a row of this kind for any family (``"*"``: n-gram lookup depends on the text more than on the model) and
       the workload;
    3. the drafter's own published default where it was measured on this family and workload;
    4. otherwise the drafter's published default, and the label says it fell back and why (n-gram has none: it
       refuses and says what to pass).

Context
    Where acceptance was published at several context lengths for a kind and family (:data:`CONTEXT_CURVES`), the
    chosen acceptance is scaled at the deployment's context ``L`` by ``f(L) = v(L) / v(L_0)``: ``v`` interpolated
    linearly in ``log L`` between the published points (DFlash's Table 4 falls by a more nearly constant amount per
    doubling of context than per token), held flat below the first point ``L_0`` (where the row is taken to hold)
    and beyond the last (no extrapolation).  ``f`` multiplies each depth's conditional acceptance, so ``alpha``
    becomes ``f alpha`` and ``c_k`` becomes ``f^k c_k``.  Elsewhere nothing changes and the label says "no published
    context dependence".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from specsim.core.names import given_as
from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length

__all__ = [
    "ACCEPTANCE_WORKLOADS",
    "CONTEXT_CURVES",
    "DATASET_WORKLOADS",
    "ContextCurve",
    "PublishedRow",
    "ROWS",
    "Resolved",
    "check_workload",
    "find_length",
    "find_row",
    "resolve",
    "size_note",
    "target_family",
]

from specsim.core.defaults import ACCEPTANCE_WORKLOADS, DEFAULT_WORKLOAD  # noqa: E402 (ACCEPTANCE_WORKLOADS re-exported)

#: Target families by the first architecture of a config.json (:attr:`ModelShape.architecture`).  Finer than the
#: reader's families (which read Qwen3 with Llama's keys): a head trained for one family's hidden states does not
#: transfer to another's, so acceptance is kept per family.
_FAMILIES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3",
    "Qwen3NextForCausalLM": "qwen3-next",
    "Qwen3_5ForConditionalGeneration": "qwen3.5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3.5",
    "GptOssForCausalLM": "gpt-oss",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "DeepseekV3ForCausalLM": "deepseek",
    "MixtralForCausalLM": "mixtral",
    "Glm4MoeForCausalLM": "glm",
    "NemotronHForCausalLM": "nemotron-h",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "MiniMaxM2ForCausalLM": "minimax",
}


def target_family(model) -> str | None:
    """The family a target belongs to for acceptance, from its config.json's architecture (None: unknown).

    >>> from specsim.describe.models import get_model
    >>> target_family(get_model("llama-3.1-8b")), target_family(get_model("qwen3-30b-a3b")), target_family(get_model("qwen3.5-27b"))
    ('llama', 'qwen3', 'qwen3.5')
    """
    return _FAMILIES.get(getattr(model, "architecture", "") or "")


@dataclass(frozen=True)
class PublishedRow:
    """One published chain measurement: a drafter kind on a target of one family, on one workload's benchmark.

    ``tau`` at ``gamma`` drafted tokens (converted to one alpha), or ``cumulative`` per-position rates.
    """

    drafter: str  #: the drafter class's ``kind``
    family: str  #: :func:`target_family` of the measured target, or ``"*"`` for any
    workload: str  #: a key of :data:`ACCEPTANCE_WORKLOADS`
    target: str  #: the model measured
    dataset: str
    source: str  #: source and table, briefly
    tau: float | None = None
    gamma: int | None = None
    cumulative: tuple = ()

    def __post_init__(self) -> None:
        if self.workload not in ACCEPTANCE_WORKLOADS:
            raise ValueError(
                f"row {self.source}: workload {self.workload!r} is not one of {', '.join(ACCEPTANCE_WORKLOADS)}"
            )
        if (self.tau is None) == (not self.cumulative):
            raise ValueError(f"row {self.source}: give tau and gamma, or per-position rates")
        if self.tau is not None and (self.gamma is None or not 1.0 <= self.tau <= self.gamma + 1):
            raise ValueError(f"row {self.source}: tau {self.tau} must be in [1, gamma + 1] with gamma given")
        if self.cumulative:
            self.acceptance  # refuses rates that rise with depth (a tau row's alpha is solved only when it is used)

    @property
    def acceptance(self) -> Acceptance:
        if self.tau is not None:
            return Acceptance(alpha=float(alpha_from_acceptance_length(self.tau, self.gamma)), source=self.source)
        return Acceptance(cumulative=tuple(self.cumulative), source=self.source)

    @property
    def citation(self) -> str:
        measured = (
            f"mean acceptance length {self.tau:g} at {self.gamma} drafted tokens"
            if self.tau is not None
            else "per-position acceptance " + ", ".join(f"{c:g}" for c in self.cumulative)
        )
        return f"{self.source}: {self.target} on {self.dataset}, {measured}"


_DSPARK = (
    "DSpark paper (arXiv:2607.05147) Table 1, EAGLE-3 baseline retrained on Open-PerfectBlend, chain, gamma 7, T = 1"
)
_PEAGLE = "vLLM blog 2026-03-13 (P-EAGLE), EAGLE-3 (AL) table, RedHatAI/gpt-oss-20b-speculator.eagle3, T = 0, B200"
_SDB = "SpecDecode-Bench/simulator @ 2fdccbd, data/llama3.1-8B/combined_{}.jsonl (acc_ngram, 3-token lookup, derived)"

#: Published rows beyond the drafters' own defaults (each class's ``published()`` with its ``published_for``).
ROWS: tuple[PublishedRow, ...] = (
    PublishedRow("eagle3", "qwen3", "chat", "Qwen3-8B", "MT-Bench", _DSPARK, tau=2.66, gamma=7),
    PublishedRow("eagle3", "qwen3", "code-completion", "Qwen3-8B", "HumanEval", _DSPARK, tau=4.33, gamma=7),
    PublishedRow("eagle3", "qwen3", "math", "Qwen3-8B", "GSM8K", _DSPARK, tau=5.30, gamma=7),
    PublishedRow("eagle3", "gpt-oss", "chat", "GPT-OSS-20B", "MT-Bench", _PEAGLE, tau=3.27, gamma=7),
    PublishedRow("eagle3", "gpt-oss", "code-completion", "GPT-OSS-20B", "HumanEval", _PEAGLE, tau=3.03, gamma=7),
    PublishedRow(
        "ngram",
        "llama",
        "chat",
        "Llama-3.1-8B-Instruct",
        "ShareGPT (n=310)",
        _SDB.format("sharegpt"),
        cumulative=(0.160, 0.128, 0.107),
    ),
    PublishedRow(
        "ngram",
        "llama",
        "math",
        "Llama-3.1-8B-Instruct",
        "GSM8K (n=300)",
        _SDB.format("gsm8k"),
        cumulative=(0.085, 0.049, 0.030),
    ),
    PublishedRow(
        "ngram",
        "llama",
        "summarization",
        "Llama-3.1-8B-Instruct",
        "CNN/DailyMail (n=300)",
        _SDB.format("cnn"),
        cumulative=(0.144, 0.107, 0.083),
    ),
)


@dataclass(frozen=True)
class ContextCurve:
    """Acceptance published at several contexts for one drafter kind and target family: ``points`` of
    (context tokens, per-token acceptance), non-increasing."""

    drafter: str
    family: str
    points: tuple[tuple[int, float], ...]
    source: str
    #: With a number of drafted tokens, ``points`` hold mean acceptance lengths (tau) at that many drafted tokens, each
    #: turned into a per-token acceptance when the curve is used (E rises with alpha, so falling taus are falling alphas).
    tau_gamma: int | None = None

    def __post_init__(self) -> None:
        ctx = np.array([p[0] for p in self.points], dtype=float)
        val = np.array([p[1] for p in self.points], dtype=float)
        top = 1.0 if self.tau_gamma is None else self.tau_gamma + 1.0
        low = 0.0 if self.tau_gamma is None else 1.0
        if (
            ctx.size < 2
            or np.any(ctx <= 0)
            or np.any(np.diff(ctx) <= 0)
            or np.any((val <= low) | (val > top))
            or np.any(np.diff(val) > 0)
        ):
            raise ValueError(
                f"context curve {self.source}: needs rising contexts > 0 and non-increasing acceptance in (0, 1]"
            )

    def alphas(self) -> np.ndarray:
        val = np.array([p[1] for p in self.points], dtype=float)
        return (
            val
            if self.tau_gamma is None
            else np.asarray(alpha_from_acceptance_length(val, self.tau_gamma), dtype=float)
        )

    def factor(self, context: object) -> np.ndarray:
        """f(L) = v(L) / v(L_0): interpolated in log L, flat outside the published range.

        >>> c = ContextCurve("x", "y", ((1000, 0.8), (8000, 0.4)), "example")
        >>> c.factor([500, 1000, 2828, 8000, 64000]).round(3).tolist()
        [1.0, 1.0, 0.75, 0.5, 0.5]
        """
        ctx = np.log([p[0] for p in self.points])
        val = self.alphas()
        L = np.maximum(np.asarray(context, dtype=float), 1.0)
        return np.interp(np.log(L), ctx, val) / val[0]


#: Acceptance against context, where published.
CONTEXT_CURVES: tuple[ContextCurve, ...] = (
    # llama.cpp --spec-type draft-mtp, --spec-draft-n-max 4, Qwen3.8-27B (the qwen35 dense architecture, its own MTP
    # head): draft acceptance 80-91% at ~100 tokens, ~53% at ~34K, 40-55% at ~86K (range midpoints); read as a ratio
    # of per-token acceptance (llama.cpp's rate is accepted over drafted tokens).
    ContextCurve(
        "mtp",
        "qwen3.5",
        ((100, 0.855), (34_000, 0.53), (86_000, 0.475)),
        "vLLM issue #47602, comment of 2026-08-15 (llama.cpp MTP on Qwen3.8-27B, 4 drafted tokens): acceptance "
        "80-91% at ~100 tokens of context, ~53% at ~34K, 40-55% at ~86K",
    ),
    # DFlash base drafter (trained at 4K) on Qwen3.5-27B, LongBench gov_report, block 16 (15 drafted tokens): tau 4.53
    # (1K), 3.32 (8K), 2.67 (16K), 2.09 (32K), each turned into a per-token alpha.
    ContextCurve(
        "dflash",
        "qwen3.5",
        ((1024, 4.53), (8192, 3.32), (16384, 2.67), (32768, 2.09)),
        "DFlash paper (arXiv:2602.06036) Table 4, Qwen3.5-27B, gov_report: tau 4.53 at 1K, 3.32 at 8K, 2.67 at 16K, "
        "2.09 at 32K tokens (15 drafted tokens)",
        tau_gamma=15,
    ),
)


@dataclass(frozen=True)
class Resolved:
    """What :func:`resolve` chose: the acceptance, a one-line label naming it, and how it was found."""

    acceptance: Acceptance
    label: str
    row: str  #: the citation of the row used (or of the default fallen back to)
    fell_back: bool
    context_factor: float  #: 1 where no context dependence is published


def find_row(drafter: str, family: str | None, workload: str) -> PublishedRow | None:
    """The published row for a drafter kind, target family and workload (lookup steps 1 and 2), or None.

    >>> find_row("eagle3", "qwen3", "math").tau, find_row("eagle3", "llama", "math") is None
    (5.3, True)
    """
    for fam in (family, "*"):
        for row in ROWS:
            if row.drafter == drafter and row.family == fam and row.workload == workload:
                return row
    return None


#: The benchmark sets of the drafter classes' published lengths (``Drafter.published_lengths``) by workload.
DATASET_WORKLOADS = {
    "MT-Bench": "chat",
    "HumanEval": "code-completion",
    "GSM8K": "math",
    "GSM-8K": "math",
    "MATH-500": "math",
    "MATH": "math",
}


@lru_cache(maxsize=None)
def _family_of(name: str) -> str | None:
    from specsim.describe.models import get_model

    try:
        return target_family(get_model(name))
    except (KeyError, ValueError):
        return None


def find_length(cls, target, family: str | None, workload: str):
    """A drafter class's own published length for this family and workload (the target itself first), or None.

    >>> from specsim.describe.models import get_model
    >>> from specsim.speculation.drafters import DFlashDrafter
    >>> r = find_length(DFlashDrafter, get_model("qwen3-4b"), "qwen3", "code-completion")
    >>> r.target, r.workload, r.mean_length
    ('qwen3-4b', 'HumanEval', 6.64)
    """
    if family is None:
        return None
    rows = [
        r
        for r in getattr(cls, "published_lengths", ())
        if r.gamma >= 1 and DATASET_WORKLOADS.get(r.workload) == workload and _family_of(r.target) == family
    ]
    exact = [r for r in rows if r.target == getattr(target, "name", None)]
    return (exact or rows or [None])[0]


def _curve(drafter: str, family: str | None) -> ContextCurve | None:
    return next((c for c in CONTEXT_CURVES if c.drafter == drafter and c.family == family), None)


def _scaled(acc: Acceptance, factor: float) -> Acceptance:
    if factor == 1.0:
        return acc
    if acc.alpha is not None:
        return Acceptance(alpha=float(acc.alpha) * factor, source=acc.source)
    c = np.asarray(acc.cumulative, dtype=float) * factor ** np.arange(1, len(acc.cumulative) + 1)
    return Acceptance(cumulative=tuple(float(x) for x in c), source=acc.source)


def _value(acc: Acceptance) -> str:
    return (
        f"alpha {acc.alpha:.3f}"
        if acc.alpha is not None
        else "acceptance " + ", ".join(f"{c:.4g}" for c in acc.cumulative)
    )


def size_note(measured: str | None, target) -> str:
    """Where the model an acceptance was measured on is not the target's size (total parameters more than 10% apart),
    the clause that says so and that holding it for the target is assumed; else "".

    A head's acceptance moves with its target's size within a family (DSpark's Qwen3-4B rows are 10% below its
    Qwen3-8B rows at chat, ``scripts/acceptance_holdout.py``), so a label that hides the size hides an assumption.

    >>> from specsim.describe.models import get_model
    >>> size_note("llama-3.1-8b", get_model("llama-3.1-70b"))
    'measured on llama-3.1-8b (8.0B parameters); assumed: it holds for this 70.6B target'
    >>> size_note("llama-3.1-8b", get_model("llama-3.1-8b")), size_note(None, get_model("llama-3.1-70b"))
    ('', '')
    """
    from specsim.describe.models import catalog_name, get_model

    name = None if measured is None else catalog_name(measured)
    if name is None or target is None:
        return ""
    on = get_model(name)
    mine, theirs = float(target.total_params), float(on.total_params)
    if abs(mine / theirs - 1.0) <= 0.10:
        return ""
    return (
        f"measured on {on.name} ({theirs / 1e9:.1f}B parameters); assumed: it holds for this {mine / 1e9:.1f}B target"
    )


def check_workload(workload: str) -> str:
    """The workload's name in the one catalogue (:mod:`specsim.core.workloads`; an alias resolved), or one line listing
    them."""
    from specsim.core.workloads import get_workload

    return get_workload(workload).name


def resolve(cls, target=None, workload: str | None = None, context: int | None = None) -> Resolved:
    """The acceptance a command assumes for drafter class ``cls`` on ``target``, ``workload`` and ``context`` tokens.

    Without a target, workload and context: the drafter's published default, labelled as today.

    >>> from specsim.describe.models import get_model
    >>> from specsim.speculation.drafters import Eagle3Head
    >>> r = resolve(Eagle3Head, get_model("qwen3-8b"), "math", 1128)
    >>> round(r.acceptance.alpha, 3), r.fell_back
    (0.878, False)
    >>> resolve(Eagle3Head, get_model("llama-3.1-8b"), "math", 1128).fell_back
    True
    """
    tail = f"pass {given_as('alpha')}, {given_as('acceptance')} or {given_as('metrics')} for yours"  # their keywords
    if target is None and workload is None and context is None:
        acc, _ = cls.fallback_acceptance()
        return Resolved(
            acc, f"{_value(acc)} (the published default for {cls.label}: {acc.source}; {tail})", acc.source, True, 1.0
        )
    from specsim.core.workloads import acceptance_of

    asked = check_workload(workload or DEFAULT_WORKLOAD)
    workload, reads = acceptance_of(asked)
    family = target_family(target) if target is not None else None
    shown = f"a {family} target" if family else f"the target {getattr(target, 'name', '?')} (no known family)"
    row = find_row(cls.kind, family, workload)
    length = None if row is not None else find_length(cls, target, family, workload)
    own = getattr(cls, "published_for", None)
    measured = getattr(cls, "published_target", None)
    if row is not None:
        acc, cited, fell_back, measured = row.acceptance, row.citation, False, row.target
        head = f"published for {cls.label} on {'any target' if row.family == '*' else shown}, {workload}: {cited}"
    elif length is not None:
        alpha = float(alpha_from_acceptance_length(length.mean_length, length.gamma))
        acc = Acceptance(alpha=alpha, source=length.source.split(",")[0])
        cited, fell_back = (
            (
                f"{length.source}: {length.target} on {length.workload}, mean acceptance length "
                f"{length.mean_length:g} at {length.gamma} drafted tokens"
            ),
            False,
        )
        head = f"published for {cls.label} on {shown}, {workload}: {cited}"
        measured = length.target
    elif own is not None and own[0] in (family, "*") and own[1] == workload:
        acc, cited = cls.published()
        fell_back = False
        head = f"published for {cls.label} on {'any target' if own[0] == '*' else shown}, {workload}: {acc.source}"
    else:
        acc, cited = cls.fallback_acceptance(f"no published row for {cls.label} on {shown}, {workload}")
        fell_back = True
        head = (
            f"the published default for {cls.label}: {acc.source}; fell back: no published row for {shown} on "
            f"{workload}"
        )
    curve = _curve(cls.kind, family)
    if curve is None:
        factor, ctx = 1.0, f"no published context dependence for {cls.label} on {shown}"
    elif context is None:
        factor, ctx = 1.0, f"not scaled for context (none given; {curve.source})"
    else:
        factor = float(curve.factor(context))
        ctx = f"at {int(context):,} tokens of context x{factor:.3f} per token ({curve.source})"
    acc = _scaled(acc, factor)
    head = f"{reads}; {head}" if reads else head
    sized = size_note(measured, target)
    head = f"{head}; {sized}" if sized else head
    return Resolved(acc, f"{_value(acc)} ({head}; {ctx}; {tail})", cited, fell_back, factor)
