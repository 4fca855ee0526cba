"""Tokens per step, speedup and the optimal speculation length gamma.

Tokens per target pass
    With each drafted token accepted independently with probability alpha
    (Leviathan et al. 2022, arXiv:2211.17192, eq. 1), the accepted prefix is
    truncated-geometric and every pass also emits one token from the target
    (the correction at the first rejection, or a bonus token when all gamma
    are accepted):

        E(alpha, gamma) = sum_{k=0..gamma} alpha^k = (1 - alpha^(gamma+1)) / (1 - alpha)

    with E = gamma + 1 at alpha = 1 and E = 1 at gamma = 0.  With an acceptance
    rate a_i per draft position instead of one alpha,
    E = 1 + sum_k prod_{i<=k} a_i.

Speedup
    One draft step costs t_D, a verification pass of gamma + 1 tokens per
    sequence costs t_V and a plain target decode step t_T.  Per generated
    token, speculation spends (gamma * t_D + t_V) / E against t_T:

        S = E * t_T / (gamma * t_D + t_V)

    When verification costs one decode step (t_V = t_T, small batch) and
    c = t_D / t_T, this is the closed form S = E / (gamma * c + 1).

Optimal gamma
    The integer argmax of S over gamma = 0..gamma_max, where gamma = 0 means
    "do not speculate" (S = 1 exactly).  Tie rule: the exact float64 argmax;
    equal values go to the smaller gamma (less draft work and memory).  With
    c = 0.05 and alpha = 0.7, gamma = 5 and 6 differ by 2e-6 (2.3529360 and
    2.3529377): the float64 argmax is 6, as in the article.  ``rtol`` > 0
    instead picks the smallest gamma within that fraction of the best, for
    users who prefer short drafts where the curve is flat.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .acceptance import (_check_gamma, alpha_from_acceptance_length, expected, expected_tokens,
                         expected_tokens_per_position)
from .defaults import (DEFAULT_ALPHA, DEFAULT_BATCHES, DEFAULT_CONTEXT_TOKENS, DEFAULT_DRAFT, DEFAULT_GAMMA_MAX,
                       DEFAULT_HARDWARE, DEFAULT_RTOL, DEFAULT_TARGET)
from .hardware import HardwareProfile, load_hardware
from .models import ModelShape, get_model
from .timing.base import StepTime
from .timing.roofline import step_time

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BATCHES",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_DRAFT",
    "DEFAULT_GAMMA_MAX",
    "DEFAULT_HARDWARE",
    "DEFAULT_RTOL",
    "DEFAULT_TARGET",
    "Deployment",
    "OptimalGamma",
    "PassTimes",
    "alpha_from_acceptance_length",
    "argmax_gamma",
    "expected_tokens",
    "expected_tokens_per_position",
    "optimal_gamma_cost_ratio",
    "speedup_from_cost_ratio",
    "speedup_from_times",
]

#: Largest difference in embedding rows read as padding of one vocabulary (Qwen2.5: 128; llama.cpp allows 100).
MAX_VOCAB_PADDING = 128


def speedup_from_cost_ratio(alpha: object, gamma: object, cost_ratio: object) -> np.ndarray:
    """Closed-form speedup E / (gamma * c + 1) when verification costs one decode step.

    >>> round(float(speedup_from_cost_ratio(0.8, 8, 0.05)), 4)
    3.0921
    """
    c = np.asarray(cost_ratio, dtype=float)
    if not np.all(np.isfinite(c) & (c >= 0)):
        raise ValueError(f"cost_ratio must be >= 0, got {c.tolist()!r}")
    g = np.asarray(gamma, dtype=float)
    return expected_tokens(alpha, g) / (g * c + 1.0)


def speedup_from_times(alpha: object, gamma: object, t_target_s: object, t_draft_s: object, t_verify_s: object) -> np.ndarray:
    """Speedup S = E * t_T / (gamma * t_D + t_V) from step times in seconds.

    ``alpha`` is a per-token rate (float or array) or an :class:`~specsim.acceptance.Acceptance` (per-position).

    >>> round(float(speedup_from_times(0.8, 4, 6.525e-3, 1.26e-3, 6.525e-3)), 3)
    1.897
    """
    g = np.asarray(gamma, dtype=float)
    e = expected(alpha, g)
    s = e * np.asarray(t_target_s, dtype=float) / (g * np.asarray(t_draft_s, dtype=float) + np.asarray(t_verify_s, dtype=float))
    # gamma = 0 is plain decoding: exactly 1, whatever rounding t_V picked up.
    return np.where(g == 0, 1.0, s)


def argmax_gamma(speedup: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    """Index of the best gamma along axis 0 of a (gamma, ...) speedup array.

    Exact ties go to the smaller gamma (numpy's argmax returns the first).
    With ``rtol`` > 0, the smallest gamma within ``rtol`` of the best.

    >>> argmax_gamma(np.array([1.0, 1.5, 1.5, 1.2])).item()
    1
    >>> argmax_gamma(np.array([1.0, 1.49, 1.5, 1.2]), rtol=0.01).item()
    1
    """
    if rtol < 0:
        raise ValueError(f"rtol must be >= 0, got {rtol!r}")
    if rtol == 0:
        return np.argmax(speedup, axis=0)
    best = speedup.max(axis=0)
    return np.argmax(speedup >= best * (1.0 - rtol), axis=0)


def _gamma_grid(gamma_max: int) -> np.ndarray:
    from .limits import MAX_GAMMA, check_int

    return np.arange(check_int("gamma_max", gamma_max, 0, MAX_GAMMA) + 1)


def optimal_gamma_cost_ratio(
    alpha: object, cost_ratio: object, gamma_max: int = DEFAULT_GAMMA_MAX, rtol: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Optimal integer gamma and its speedup for the closed form E / (gamma c + 1).

    Returns ``(gamma, speedup)`` broadcast over alpha and cost_ratio.

    The article's c = 0.05 examples (Figure 2):

    >>> g, s = optimal_gamma_cost_ratio([0.5, 0.7, 0.8, 0.9], 0.05)
    >>> g.tolist(), np.round(s, 2).tolist()
    ([3, 6, 8, 13], [1.63, 2.35, 3.09, 4.67])
    """
    grid = _gamma_grid(gamma_max)
    a = np.asarray(alpha, dtype=float)
    c = np.asarray(cost_ratio, dtype=float)
    shape = np.broadcast_shapes(a.shape, c.shape)
    g = grid.reshape((-1,) + (1,) * len(shape))
    s = speedup_from_cost_ratio(a, g, c)
    idx = argmax_gamma(s, rtol)
    return grid[idx], np.take_along_axis(s, idx[None, ...], axis=0)[0]


# -- a deployment: hardware, target and draft ---------------------------------
def _plus(t: StepTime, extra_s: float) -> StepTime:
    """A step time with ``extra_s`` of engine time added to its total and overhead."""
    if not extra_s:
        return t
    return dataclasses.replace(t, total_s=t.total_s + extra_s, overhead_s=t.overhead_s + extra_s)


@dataclass(frozen=True)
class PassTimes:
    """Modelled step times of the three passes of speculative decoding."""

    target: StepTime  #: plain decode step of the target, q = 1
    draft: StepTime  #: one draft step, q = 1
    verify: StepTime  #: verification pass of the target, q = gamma + 1

    @property
    def cost_ratio(self) -> np.ndarray:
        """c = t_D / t_T."""
        return self.draft.total_s / self.target.total_s

    @property
    def verify_ratio(self) -> np.ndarray:
        """t_V / t_T: how much dearer verification is than a decode step."""
        return self.verify.total_s / self.target.total_s


@dataclass(frozen=True)
class OptimalGamma:
    """The best gamma per point, with its speedup and the passes at that gamma."""

    gamma: np.ndarray
    speedup: np.ndarray
    times: PassTimes
    gamma_max: int

    @property
    def at_limit(self) -> np.ndarray:
        """True where the optimum sits at gamma_max (a larger gamma may be better)."""
        return (self.gamma == self.gamma_max) & (self.gamma > 0)

    @property
    def peak(self) -> int:
        """Index of the point (over a 1-D batch axis: the batch) where speculation pays most."""
        return int(np.argmax(self.speedup))


def model_assumptions(hardware: HardwareProfile, models) -> list[str]:
    """Lines saying how precision, experts and tensor parallelism enter the step times of these models."""
    from .hardware import FOUR_BIT_DTYPES, FP8_MATMUL_SPEEDUP, W4A16_COMPUTE_FRACTION

    lines = []
    dtypes = {d for m in models for d in (m.weight_dtype, m.expert_dtype_)}
    if dtypes & {"fp8", "int8"}:
        how = (f"{FP8_MATMUL_SPEEDUP:g}x the BF16 rate (median of the kernel database's FP8/BF16 GEMMs)"
               if hardware.peak_fp8_flop_per_s is not None else "the 16-bit rate (no 8-bit tensor cores in the profile)")
        lines.append(f"precision: FP8/INT8 matmuls at {how}")
    if dtypes & set(FOUR_BIT_DTYPES):
        lines.append(f"precision: 4-bit weights dequantised in the GEMM at {W4A16_COMPUTE_FRACTION:g}x the 16-bit rate "
                     "when compute-bound (assumed, not measured)")
    if any(m.is_moe for m in models):
        lines.append("experts: a pass reads the distinct experts its tokens route to, E(1-(1-k/E)^tokens) under uniform "
                     "routing" + ("; skewed routing set by --moe-effective-experts" if any(m.routing_effective_experts for m in models) else ""))
    tps = sorted({m.tp for m in models if m.tp > 1})
    if tps:
        lines.append(f"tensor parallelism: per-GPU shards; 2 all-reduces per layer and a logits all-gather over "
                     f"{hardware.interconnect_bytes_per_s / 1e9:.0f} GB/s per direction, {hardware.interconnect_latency_s * 1e6:.1f} us "
                     "each (profile), or the kernel database's measured all-reduce")
    return lines


@dataclass(frozen=True)
class Deployment:
    """A target and a draft model served on one device.

    Examples
    --------
    The article's preset: an 8B target, a 1B draft, an H100 and L = 1128.

    >>> dep = Deployment.from_names("h100-sxm", "article-8b", "article-1b")
    >>> np.round(dep.speedup(0.8, 4, [1, 64, 128, 256]), 2).tolist()
    [1.9, 1.81, 1.49, 1.25]
    """

    hardware: HardwareProfile
    target: ModelShape
    #: The network one draft step runs (a draft model, an EAGLE or MTP head); None for n-gram drafting.
    draft: ModelShape | None
    #: Where step times come from (a :mod:`specsim.timing` source); None: the roofline over ``hardware``.
    timing: object = None
    #: The serving engine's CPU time per iteration and round (:mod:`specsim.engines`); None: nothing added.
    engine: object = None
    #: What kind of drafter runs ``draft`` and what else a round costs (:mod:`specsim.drafters`); None: a draft model.
    drafter: object = None

    def __post_init__(self) -> None:
        from .drafters import DraftModel

        if self.drafter is None:
            if self.draft is None:
                raise ValueError("a deployment without a draft network needs a drafter (n-gram)")
            object.__setattr__(self, "drafter", DraftModel(self.draft.name, self.draft))
        if self.draft is None:
            return
        if self.draft.tp not in (1, self.target.tp):
            raise ValueError(f"draft tensor parallelism {self.draft.tp} must be 1 or the target's {self.target.tp} "
                             "(vLLM's draft_tensor_parallel_size; SGLang and TensorRT-LLM run the draft at the target's)")
        # Speculative decoding compares the draft's and the target's distributions token by token: they must share
        # a tokenizer.  Embedding tables padded to different multiples (Qwen2.5: 151,936 rows up to 7B, 152,064 from
        # 14B; the ids past 151,646 are unused) are the same vocabulary; a larger difference is another tokenizer.
        # (EAGLE-3 heads predict over a reduced draft vocabulary mapped onto the target's: no check there.)
        gap = abs(self.target.vocab_size - self.draft.vocab_size)
        if self.drafter.shares_vocabulary and gap > MAX_VOCAB_PADDING:
            raise ValueError(
                f"target {self.target.name} has a vocabulary of {self.target.vocab_size:,} and draft {self.draft.name} "
                f"{self.draft.vocab_size:,}: the vocabularies differ, and a draft must share the target's tokenizer "
                f"(sizes up to {MAX_VOCAB_PADDING} apart are read as padding of one vocabulary)"
            )

    @classmethod
    def from_names(
        cls,
        hardware: str = DEFAULT_HARDWARE,
        target: str = DEFAULT_TARGET,
        draft: str = DEFAULT_DRAFT,
        target_options: dict | None = None,
        draft_options: dict | None = None,
        ngram_cpu_s_per_token: float | None = None,
    ) -> "Deployment":
        """Load hardware and models by built-in name or file path.

        ``draft`` is a drafter (:func:`specsim.drafters.make_drafter`): a model name or config.json,
        ``eagle``, ``eagle3``, ``mtp`` or ``ngram``.  ``target_options`` and ``draft_options`` go to
        :func:`~specsim.models.get_model` (``weight_dtype``, ``kv_dtype``, ``tp``,
        ``routing_effective_experts``); a tensor-parallel size is checked against the profile's node.
        """
        from .drafters import make_drafter
        from .parallel import check_tp

        profile = load_hardware(hardware)
        t_opts, d_opts = dict(target_options or {}), dict(draft_options or {})
        for what, opts in (("--tp", t_opts), ("--draft-tp", d_opts)):
            if opts.get("tp") is not None:
                check_tp(profile, opts["tp"], what)
        target_model = get_model(target, **t_opts)
        drafter = make_drafter(str(draft), target_model, d_opts, ngram_cpu_s_per_token)
        return cls(profile, target_model, drafter.step_model, drafter=drafter)

    @classmethod
    def build(
        cls,
        hardware: str = DEFAULT_HARDWARE,
        target: str = DEFAULT_TARGET,
        draft: str = DEFAULT_DRAFT,
        timing: str | None = None,
        engine: str | None = None,
        engine_overhead_ms: float | None = None,
        progress=None,
        target_options: dict | None = None,
        draft_options: dict | None = None,
        ngram_cpu_s_per_token: float | None = None,
    ) -> "Deployment":
        """A deployment with a step-time source and an engine preset: what every command uses.

        ``timing`` defaults to :data:`specsim.timing.DEFAULT_TIMING` and ``engine``
        to :data:`specsim.engines.DEFAULT_ENGINE`; ``engine_overhead_ms``
        replaces the preset's per-iteration time.  (``from_names`` keeps the
        article's bare roofline.)
        """
        return cls.from_names(hardware, target, draft, target_options, draft_options, ngram_cpu_s_per_token).with_source(
            timing, engine, engine_overhead_ms, progress)

    def with_source(self, timing: str | None = None, engine: str | None = None, engine_overhead_ms: float | None = None,
                    progress=None) -> "Deployment":
        """This deployment with a step-time source and engine preset (see :func:`specsim.engines.source_and_engine`)."""
        from .engines import source_and_engine

        source, preset = source_and_engine(self.hardware, timing, engine, engine_overhead_ms, progress)
        return dataclasses.replace(self, timing=source, engine=preset)

    def _step(self, model: ModelShape, batch: object, q: object, context: object) -> StepTime:
        if self.timing is None:
            return step_time(self.hardware, model, batch, q, context)
        return self.timing.step_time(model, batch, q, context)

    def pass_times(self, batch: object, gamma: object, context: object = DEFAULT_CONTEXT_TOKENS,
                   draft_width: object = 1, verify_tokens: object = None) -> PassTimes:
        """t_T, t_D and t_V, broadcast over batch, gamma and context.

        ``t_V`` is the round's fixed part: the verification pass over ``verify_tokens`` per sequence (default
        gamma + 1) plus the drafter's per-round extras (an EAGLE/MTP draft-extend pass, n-gram CPU time).
        ``draft_width`` is the tokens per sequence of one draft step (a tree's top-k; 1 for a chain).
        """
        g = np.asarray(gamma, dtype=float)
        _check_gamma(g)
        q_verify = g + 1.0 if verify_tokens is None else np.asarray(verify_tokens, dtype=float)
        target = self._step(self.target, batch, 1, context)
        verify = self._step(self.target, batch, q_verify, context)
        d = self.drafter
        if self.draft is None:  # n-gram: no network; CPU time per cached token scanned, once per round
            draft = dataclasses.replace(target, total_s=np.zeros(np.shape(target.total_s)), compute_s=np.zeros(np.shape(target.total_s)),
                                        memory_s=np.zeros(np.shape(target.total_s)), overhead_s=0.0,
                                        flop=np.zeros(np.shape(target.total_s)), bytes=np.zeros(np.shape(target.total_s)),
                                        fallback=None, comm_s=0.0)
            cpu = d.host_s(batch, context)
            verify = dataclasses.replace(verify, total_s=verify.total_s + cpu)
        else:
            draft = self._step(self.draft, batch, draft_width, context)
            if d.extend_pass:  # the head re-reads the verified tokens to get the next round's hidden states
                extend = self._step(self.draft, batch, q_verify, context)
                verify = dataclasses.replace(verify, total_s=verify.total_s + extend.total_s)
        if self.engine is not None:
            e = self.engine
            target_s = e.iteration_s + e.collectives_s(self.target)
            draft_s = 0.0 if self.draft is None else e.draft_step_s + e.collectives_s(self.draft)
            extend_s = e.collectives_s(self.draft) if d.extend_pass else 0.0
            target, draft, verify = (_plus(target, target_s), _plus(draft, draft_s),
                                     _plus(verify, target_s + e.spec_round_s + extend_s))
        return PassTimes(target, draft, verify)

    def provenance(self) -> list[str]:
        """One line per input that shaped the step times: the source, the engine preset, precision and parallelism."""
        lines = [self.timing.describe() if self.timing is not None else
                 f"roofline: profile {self.hardware.name} (the article's model)"]
        if self.engine is not None:
            lines.append(self.engine.describe())
        if self.drafter.kind != "draft_model":
            lines.append(self.drafter.describe())
        lines += model_assumptions(self.hardware, [m for m in (self.target, self.draft) if m is not None])
        return lines

    def notes(self) -> list[str]:
        """What the step-time source could not answer from its own data, and defaults the configs relied on."""
        notes = list(getattr(self.timing, "notes", []) or [])
        for model in (self.target, self.draft):
            if model is not None:
                notes += [f"{model.name}: {n}" for n in model.notes]
        return notes

    def speedup(self, alpha: object, gamma: object, batch: object = 1, context: object = DEFAULT_CONTEXT_TOKENS) -> np.ndarray:
        """Speedup S(alpha, gamma, batch, context), all four broadcast together."""
        times = self.pass_times(batch, gamma, context)
        return speedup_from_times(alpha, gamma, times.target.total_s, times.draft.total_s, times.verify.total_s)

    def tree_speedup(self, acceptance: object, tree: object, batch: object = 1, context: object = DEFAULT_CONTEXT_TOKENS,
                     sibling: float | None = None) -> np.ndarray:
        """Speedup of one draft tree (:class:`~specsim.acceptance.TreeSpec`) per (batch, context).

        A round drafts ``depth`` levels, each a draft step over ``topk`` tokens per sequence (an upper bound:
        the first level expands only the root), verifies ``tokens`` per sequence, and emits E(tree) tokens
        (:func:`~specsim.acceptance.build_tree`).
        """
        from .acceptance import DEFAULT_SIBLING_FACTOR, as_acceptance, build_tree

        if self.draft is None:
            raise ValueError("token trees need a drafting network (draft model, EAGLE or MTP); n-gram drafts a chain")
        built = build_tree(tree, as_acceptance(acceptance), DEFAULT_SIBLING_FACTOR if sibling is None else sibling)
        times = self.pass_times(batch, tree.depth, context, draft_width=tree.topk, verify_tokens=tree.tokens)
        return built.expected_tokens * times.target.total_s / (tree.depth * times.draft.total_s + times.verify.total_s)

    def optimal_tree(self, acceptance: object, bounds: object, batch: object = DEFAULT_BATCHES,
                     context: object = DEFAULT_CONTEXT_TOKENS, sibling: float | None = None, rtol: float = DEFAULT_RTOL):
        """The best tree within ``bounds`` (top-k <= K, depth <= D, tokens <= N) per batch size, chains included.

        Returns ``(trees, speedup, expected_tokens)``: a list of :class:`~specsim.acceptance.TreeSpec` (None where
        no tree beats plain decoding), and arrays over ``batch``.  Among trees within ``rtol`` of the best
        speedup, the one verifying the fewest tokens wins (then the shallowest).
        """
        from .acceptance import DEFAULT_SIBLING_FACTOR, TreeSpec, as_acceptance, build_tree

        if self.draft is None:
            raise ValueError("token trees need a drafting network (draft model, EAGLE or MTP); n-gram drafts a chain")
        acc = as_acceptance(acceptance)
        sib = DEFAULT_SIBLING_FACTOR if sibling is None else sibling
        max_depth = bounds.depth if acc.max_gamma is None else min(bounds.depth, acc.max_gamma)
        candidates = []
        for k in range(1, bounds.topk + 1):
            for depth in range(1, max_depth + 1):
                most = 1 + k + (depth - 1) * k * k
                sizes = [depth + 1] if k == 1 else range(2, min(bounds.tokens, most) + 1)
                for n in sizes:
                    if n <= bounds.tokens:
                        candidates.append(TreeSpec(k, depth, n))
        if not candidates:
            raise ValueError(f"no tree fits within {bounds}")
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        L = np.asarray(context, dtype=float)
        e = np.array([build_tree(c, acc, sib).expected_tokens for c in candidates])
        # Step times once per distinct width, verified size and depth, then combined per candidate.
        widths = sorted({c.topk for c in candidates})
        sizes = sorted({c.tokens for c in candidates})
        draft = {w: self.pass_times(b, 1, L, draft_width=w).draft.total_s for w in widths}
        verify = {n: self.pass_times(b, n - 1, L, verify_tokens=n).verify.total_s for n in sizes}
        t_target = self.pass_times(b, 1, L).target.total_s
        s = np.stack([e[i] * t_target / (c.depth * draft[c.topk] + verify[c.tokens]) for i, c in enumerate(candidates)])
        best = s.max(axis=0)
        order = sorted(range(len(candidates)), key=lambda i: (candidates[i].tokens, candidates[i].depth, candidates[i].topk))
        trees, speedup, tokens = [], np.ones(b.size), np.ones(b.size)
        for j in range(b.size):
            if best[j] <= 1.0:
                trees.append(None)
                continue
            i = next(i for i in order if s[i, j] >= best[j] * (1.0 - rtol))
            trees.append(candidates[i])
            speedup[j], tokens[j] = s[i, j], e[i]
        return trees, speedup, tokens

    def speculation_peak(self, alpha: float, batch: object = DEFAULT_BATCHES, context: object = DEFAULT_CONTEXT_TOKENS,
                         gamma_max: int = DEFAULT_GAMMA_MAX) -> tuple[int, int, float]:
        """(batch, gamma, speedup) where the best speedup over ``batch`` is largest.

        For a dense target this is the smallest batch; for a mixture of experts
        it moves to a moderate batch, where a decode step already reads most
        experts and verifying gamma + 1 tokens per sequence reads few more.

        >>> dep = Deployment.from_names("h100-sxm", "qwen3-30b-a3b", "qwen3-0.6b")
        >>> dep.speculation_peak(0.8, [1, 4, 16, 64, 256], 1128)[0]
        64
        """
        b = np.asarray(batch, dtype=float).reshape(-1)
        best = self.optimal_gamma(alpha, b, context, gamma_max)
        i = best.peak
        return int(b[i]), int(best.gamma[i]), float(best.speedup[i])

    def optimal_gamma(
        self,
        alpha: object,
        batch: object = DEFAULT_BATCHES,
        context: object = DEFAULT_CONTEXT_TOKENS,
        gamma_max: int = DEFAULT_GAMMA_MAX,
        rtol: float = DEFAULT_RTOL,
    ) -> OptimalGamma:
        """Best gamma in 0..gamma_max per point of broadcast (alpha, batch, context).

        ``alpha`` may be an :class:`~specsim.acceptance.Acceptance` with per-position rates: gamma then stops at
        the last measured position (check ``gamma_max`` of the result).
        """
        from .limits import MAX_GAMMA, check_int

        gamma_max = check_int("gamma_max", gamma_max, 0, MAX_GAMMA)
        if not (np.isfinite(rtol) and 0 <= rtol < 0.5):
            raise ValueError(f"rtol must be in [0, 0.5), got {rtol!r}")
        if hasattr(alpha, "expected_tokens"):
            if alpha.max_gamma is not None:
                gamma_max = min(gamma_max, alpha.max_gamma)
            acceptance, a = alpha, np.zeros(())
        else:
            acceptance, a = None, np.asarray(alpha, dtype=float)
        grid = _gamma_grid(gamma_max)
        b = np.asarray(batch, dtype=float)
        L = np.asarray(context, dtype=float)
        shape = np.broadcast_shapes(a.shape, b.shape, L.shape)
        g = grid.reshape((-1,) + (1,) * len(shape))
        s = self.speedup(acceptance if acceptance is not None else a, g, b, L)
        if acceptance is not None:
            s = np.broadcast_to(s, (grid.size,) + shape)
        idx = argmax_gamma(s, rtol)
        best = grid[idx]
        return OptimalGamma(
            gamma=best,
            speedup=np.take_along_axis(s, idx[None, ...], axis=0)[0],
            times=self.pass_times(np.broadcast_to(b, shape), best, np.broadcast_to(L, shape)),
            gamma_max=int(gamma_max),
        )
