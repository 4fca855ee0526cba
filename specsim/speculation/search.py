"""Speedup and the optimal speculation length gamma (or token tree) over a deployment.

Speedup
    Per generated token, plain decoding spends one decode step t_T and speculation one round
    (:mod:`specsim.speculation.deployment`: gamma draft steps t_D, the round's fixed part t_V, verification and
    whatever else a round pays once, and the engine's host time the round waits for) per E tokens
    (:func:`specsim.speculation.acceptance.expected_tokens`):

        S = E * t_T / t_round,   t_round = gamma * t_D + t_V (+ host)

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

Optimal tree
    Every tree within the bounds (top-k, depth, verified tokens) is scored with its exact E(tree)
    (:func:`specsim.speculation.acceptance.build_tree`) over the deployment's draft step of top-k tokens and round
    fixed part of the tree's verified tokens; chains are the trees of top-k 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.core.defaults import DEFAULT_BATCHES, DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX, DEFAULT_RTOL
from specsim.core.limits import MAX_GAMMA, check_int
from specsim.core.names import given_as
from specsim.core.words import ends, points
from specsim.speculation.acceptance import (
    Acceptance,
    TreeSpec,
    alpha_from_acceptance_length,
    as_acceptance,
    checked_acceptance,
    expected_tokens,
    expected_tokens_per_position,
    tokens_per_round,
)
from specsim.speculation.deployment import (
    Deployment,
    RoundOutcome,
    speedup_from_round,
    speedup_from_times,
    speedup_of,
)
from specsim.timing.base import check_pass

__all__ = [
    "AT_GAMMA_MAX",
    "DRAFTERS_MOST",
    "LAST_MEASURED",
    "NOT_WEIGHED",
    "OptimalGamma",
    "checked_deployment",
    "PEAK_MARGIN",
    "alpha_from_acceptance_length",
    "argmax_gamma",
    "not_weighed",
    "expected_tokens",
    "expected_tokens_per_position",
    "optimal_gamma",
    "optimal_gamma_cost_ratio",
    "optimal_tree",
    "require_network",
    "search_bound",
    "searched_gamma_max",
    "speculation_peak",
    "speedup",
    "speedup_from_cost_ratio",
    "speedup_from_round",
    "speedup_from_times",
    "tree_speedup",
]

#: A peak of speculation at a larger batch is reported only when it beats the smallest batch by more than this
#: fraction: closer than 1%, the curve is flat and the step-time data's own noise (1-2%) could place it anywhere.
PEAK_MARGIN = 0.01
#: Why speculation is off where gamma_max is 0: no speculating gamma was searched, so no number says it does not pay
#: (the batch view's reason and the load view's recommendation say it alike).
NOT_WEIGHED = "gamma_max 0 searches no gamma: speculation was not weighed ({} 1 or more to weigh it)"
#: Trees x batch sizes one tree search scores (a float64 each: 160 MB at the limit, seconds of work).
MAX_TREE_EVALUATIONS = 20_000_000


def speedup_from_cost_ratio(alpha: object, gamma: object, cost_ratio: object) -> np.ndarray:
    """Closed-form speedup E / (gamma * c + 1) when verification costs one decode step.

    >>> round(float(speedup_from_cost_ratio(0.8, 8, 0.05)), 4)
    3.0921
    """
    c = np.asarray(cost_ratio, dtype=float)
    if not np.all(np.isfinite(c) & (c >= 0)):
        raise ValueError(f"cost_ratio must be >= 0, got {c.tolist()!r}")
    g = np.asarray(gamma, dtype=float)
    return speedup_of(tokens_per_round(alpha, g), 1.0, g * c + 1.0)


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


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class OptimalGamma:
    """The best gamma per point, with its speedup and the passes at that gamma: the physics of a round, whether or not
    the target, the draft and the batch's KV cache fit the GPU's memory (the search sits below the memory budget,
    :mod:`specsim.serving.capacity`; :func:`specsim.answers.gamma_answer` checks it, as ``optimal-gamma`` does), which
    its echo says."""

    gamma: np.ndarray
    speedup: np.ndarray
    outcome: RoundOutcome  #: the round at the best gamma per point
    gamma_max: int
    #: The best speculating gamma (1..gamma_max) per point and its speedup, whichever gamma is best: what a verdict
    #: not to speculate weighs (:func:`specsim.answers.verdict.verdict`); None where no speculating gamma was searched.
    speculating: tuple[np.ndarray, np.ndarray] | None = None

    def __repr__(self) -> str:  # a notebook's echo: the best gamma and speedup, not the round's every array (outcome)
        return (
            f"OptimalGamma({points(np.shape(self.gamma))}, gamma searched 0..{self.gamma_max}: gamma {ends(self.gamma, 'd')}, "
            f"speedup {ends(self.speedup, '.3f')}; memory not checked: specsim.gamma_answer checks it)"
        )

    @property
    def at_limit(self) -> np.ndarray:
        """True where the optimum sits at gamma_max (a larger gamma may be better), gamma_max 0 included: nothing
        was searched there."""
        return (self.gamma == self.gamma_max) & ((self.gamma > 0) | (self.gamma_max == 0))

    @property
    def peak(self) -> int:
        """Index of the point (over a 1-D batch axis: the batch) where speculation pays most."""
        return int(np.argmax(self.speedup))

    @property
    def peaks_later(self) -> bool:
        """Whether speculation pays clearly more (by :data:`PEAK_MARGIN`) at a later batch than at the first."""
        return self.peak > 0 and bool(self.speedup[self.peak] > self.speedup[0] * (1.0 + PEAK_MARGIN))


def speedup(
    dep: Deployment, acceptance: object, gamma: object, batch: object = 1, context: object = DEFAULT_CONTEXT_TOKENS
) -> np.ndarray:
    """Speedup S(acceptance, gamma, batch, context) of a chain, all four broadcast together
    (:meth:`Deployment.outcome`).

    >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    >>> np.round(speedup(dep, 0.8, 4, [1, 64, 128, 256], 1128), 2).tolist()
    [1.9, 1.81, 1.49, 1.25]
    """
    return dep.outcome(acceptance, gamma, batch, context).speedup


def tree_speedup(
    dep: Deployment,
    acceptance: object,
    tree: TreeSpec,
    batch: object = 1,
    context: object = DEFAULT_CONTEXT_TOKENS,
    sibling: float | None = None,
) -> np.ndarray:
    """Speedup of one draft tree per (batch, context).

    A round drafts ``depth`` levels, each a draft step over ``topk`` tokens per sequence (an upper bound:
    the first level expands only the root), verifies ``tokens`` per sequence, and emits E(tree) tokens.
    """
    require_network(dep)
    return dep.outcome(as_acceptance(acceptance), tree, batch, context, sibling).speedup


def require_network(dep: Deployment) -> None:
    """Refuse a tree for a drafter without a network (n-gram drafts a chain)."""
    if dep.drafter is None or not dep.drafter.drafts_trees:
        what = (
            "a deployment without a drafter drafts nothing"
            if dep.drafter is None
            else f"{dep.drafter.label} drafts a chain"
        )
        raise ValueError(f"token trees need a drafting network (draft model, EAGLE or MTP); {what}")


def _tree_candidates(bounds: TreeSpec, max_depth: int) -> list[TreeSpec]:
    out = []
    for k in range(1, bounds.topk + 1):
        for depth in range(1, max_depth + 1):
            most = 1 + k + (depth - 1) * k * k
            sizes = [depth + 1] if k == 1 else range(2, min(bounds.tokens, most) + 1)
            out += [TreeSpec(k, depth, n) for n in sizes if n <= bounds.tokens]
    if not out:
        raise ValueError(f"no tree fits within {bounds}")
    return out


def optimal_tree(
    dep: Deployment,
    acceptance: object,
    bounds: TreeSpec,
    batch: object = DEFAULT_BATCHES,
    context: object = DEFAULT_CONTEXT_TOKENS,
    sibling: float | None = None,
    rtol: float = DEFAULT_RTOL,
):
    """The best tree within ``bounds`` (top-k <= K, depth <= D, tokens <= N) per batch size, chains included, and at
    ``context`` no tree of more drafts than the target's positions leave a round (the largest context's:
    :meth:`~specsim.speculation.deployment.Deployment.drafts_room`).

    Returns ``(trees, speedup, expected_tokens)``: a list of :class:`~specsim.speculation.acceptance.TreeSpec` (None where
    no tree beats plain decoding), and arrays over ``batch``.  Among trees within ``rtol`` of the best
    speedup, the one verifying the fewest tokens wins (then the shallowest).
    """
    require_network(dep)
    acc = as_acceptance(acceptance)
    candidates = _tree_candidates(bounds, bounds.depth if acc.max_gamma is None else min(bounds.depth, acc.max_gamma))
    b = np.atleast_1d(np.asarray(batch, dtype=float))
    room = dep.drafts_room(np.max(context))  # a tree verifies its root and tokens - 1 drafts: no more than that
    if room is not None:
        candidates = [c for c in candidates if c.tokens - 1 <= room]
    if not candidates:
        return [None] * b.size, np.ones(b.size), np.ones(b.size)
    work = len(candidates) * b.size
    if work > MAX_TREE_EVALUATIONS:
        raise ValueError(
            f"a tree search over {len(candidates):,} trees x {b.size:,} batch sizes ({work:,} evaluations) is "
            f"past the limit of {MAX_TREE_EVALUATIONS:,}: lower the {given_as('bounds', '--tree bounds')} or "
            f"{given_as('batches', '--max-batch')}"
        )
    out = dep.outcome(acc, candidates, b, np.asarray(context, dtype=float), sibling)
    s, e = np.broadcast_to(out.speedup, (len(candidates), b.size)), out.tokens.reshape(-1)
    best = s.max(axis=0)
    order = sorted(
        range(len(candidates)), key=lambda i: (candidates[i].tokens, candidates[i].depth, candidates[i].topk)
    )
    trees, speedups, tokens = [], np.ones(b.size), np.ones(b.size)
    for j in range(b.size):
        if best[j] <= 1.0:
            trees.append(None)
            continue
        i = next(i for i in order if s[i, j] >= best[j] * (1.0 - rtol))
        trees.append(candidates[i])
        speedups[j], tokens[j] = s[i, j], e[i]
    return trees, speedups, tokens


def searched_gamma_max(dep: Deployment, acceptance: object, gamma_max: int, context: object = None) -> int:
    """The largest gamma a search tries: ``gamma_max``, at most a block drafter's block, at most the last position a
    per-position :class:`~specsim.speculation.acceptance.Acceptance` measured (what every policy's label names), and
    with a ``context`` at most the drafts the target's positions leave a round there (the largest context's:
    :meth:`~specsim.speculation.deployment.Deployment.drafts_room`)."""
    gamma_max = check_int("gamma_max", gamma_max, 0, MAX_GAMMA)
    if dep.drafter is not None and dep.drafter.max_steps is not None:  # a block drafter drafts at most its block
        gamma_max = min(gamma_max, dep.drafter.max_steps)
    if isinstance(acceptance, Acceptance) and acceptance.max_gamma is not None:
        gamma_max = min(gamma_max, acceptance.max_gamma)
    room = None if context is None else dep.drafts_room(np.max(context))
    if room is not None:
        gamma_max = min(gamma_max, int(room))
    return gamma_max


#: The bounds :func:`search_bound` names: a block drafter's block, the acceptance's last measured position, the
#: target's last positions at the context, the search's gamma_max (``{}``: as its caller gave it, :func:`not_weighed`).
DRAFTERS_MOST, LAST_MEASURED, LAST_POSITIONS, AT_GAMMA_MAX = (
    "the drafter's most",
    "at the last measured position",
    "at the target's last positions",
    "at {}; raise it",
)


def search_bound(dep: Deployment, acceptance: object, gamma_max: int, context: object = None) -> str:
    """What stops a search at its largest gamma (:func:`searched_gamma_max`), in the words an answer adds beside a best
    gamma there: a block drafter's block, else a per-position acceptance's last measured position, else the drafts the
    target's positions leave at ``context``, else ``gamma_max``.  Where ``gamma_max`` equals one of the others, that
    one is named: raising ``--gamma-max`` would not move it.

    >>> search_bound(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b"), Acceptance(cumulative=(0.9, 0.8)), 2)
    'at the last measured position'
    >>> search_bound(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b"), 0.8, 2)
    'at gamma_max; raise it'
    """
    top = searched_gamma_max(dep, acceptance, gamma_max, context)
    if dep.drafter is not None and dep.drafter.max_steps == top:
        return DRAFTERS_MOST
    if isinstance(acceptance, Acceptance) and acceptance.max_gamma == top:
        return LAST_MEASURED
    room = None if context is None else dep.drafts_room(np.max(context))
    if room is not None and room == top:
        return LAST_POSITIONS
    return AT_GAMMA_MAX.format(given_as("gamma_max"))


def not_weighed() -> str:
    """Why speculation is off where gamma_max is 0 (:data:`NOT_WEIGHED`), naming gamma_max as its caller gave it: the
    keyword to Python, ``--gamma-max`` on the command line (specsim.core.names).

    >>> not_weighed()
    'gamma_max 0 searches no gamma: speculation was not weighed (gamma_max 1 or more to weigh it)'
    """
    return NOT_WEIGHED.format(given_as("gamma_max"))


def optimal_gamma(
    dep: Deployment,
    acceptance: object,
    batch: object = DEFAULT_BATCHES,
    context: object = DEFAULT_CONTEXT_TOKENS,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    rtol: float = DEFAULT_RTOL,
) -> OptimalGamma:
    """Best gamma in 0..gamma_max per point of broadcast (acceptance, batch, context).

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``batch`` decode batch sizes in sequences and
    ``context`` cached tokens per sequence (numbers or arrays); ``rtol`` the share of the best speedup within which
    the smallest gamma is picked (0: the best itself).

    ``acceptance`` is an alpha (float or array) or an :class:`~specsim.speculation.acceptance.Acceptance` with
    per-position rates: gamma then stops at the last measured position (check ``gamma_max`` of the result).  A context
    past the target's or the draft's ``max_position_embeddings`` is refused
    (:meth:`~specsim.speculation.deployment.Deployment.require_within_positions`), as every answer refuses it.  Memory
    is not checked: a target whose weights do not fit, or a batch whose KV cache does not, is searched as any other
    (:func:`specsim.answers.gamma_answer` refuses the one and marks the other, as ``optimal-gamma`` does).

    >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    >>> best = optimal_gamma(dep, 0.8, [1, 256], 1128)
    >>> best.gamma.tolist(), np.round(best.speedup, 3).tolist()
    ([4, 2], [1.897, 1.594])
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    acceptance = checked_acceptance(acceptance)
    check_pass(batch, 1, context)  # named here: a NaN context was 'gamma_max ... got -9223372036854775808'
    L = np.asarray(context, dtype=float)
    if L.size:  # past the positions no round runs: such a context was answered gamma 0, speedup 1
        dep.require_within_positions(int(np.ceil(L.max())), "a context")
    gamma_max = searched_gamma_max(dep, acceptance, gamma_max, context if L.ndim == 0 else None)
    if not (np.isfinite(rtol) and 0 <= rtol < 0.5):
        raise ValueError(f"rtol must be in [0, 0.5), got {rtol!r}")
    if isinstance(acceptance, Acceptance):
        acc, a = acceptance, np.zeros(())
    else:
        acc, a = None, np.asarray(acceptance, dtype=float)
    grid = _gamma_grid(gamma_max)
    b = np.asarray(batch, dtype=float)
    shape = np.broadcast_shapes(a.shape, b.shape, L.shape)
    g = grid.reshape((-1,) + (1,) * len(shape))
    s = np.broadcast_to(speedup(dep, acc if acc is not None else a, g, b, L), (grid.size,) + shape)
    room = dep.drafts_room(L)
    if room is not None:  # per context: a gamma past the drafts the positions leave runs as fewer (drafts_room)
        s = np.where(g > room, -np.inf, s)
    idx = argmax_gamma(s, rtol)
    best = grid[idx]
    at_best = dep.outcome(acc if acc is not None else a, best, np.broadcast_to(b, shape), np.broadcast_to(L, shape))
    speculating = None
    if grid.size > 1:
        k = argmax_gamma(s[1:])
        speculating = (grid[1:][k], np.take_along_axis(s[1:], k[None, ...], axis=0)[0])
    return OptimalGamma(
        gamma=best,
        speedup=np.take_along_axis(s, idx[None, ...], axis=0)[0],
        outcome=at_best,
        gamma_max=int(gamma_max),
        speculating=speculating,
    )


def speculation_peak(
    dep: Deployment,
    alpha: float,
    batch: object = DEFAULT_BATCHES,
    context: object = DEFAULT_CONTEXT_TOKENS,
    gamma_max: int = DEFAULT_GAMMA_MAX,
) -> tuple[int, int, float]:
    """(batch, gamma, speedup) where the best speedup over ``batch`` is largest.

    For a dense target this is the smallest batch; for a mixture of experts
    it moves to a moderate batch, where a decode step already reads most
    experts and verifying gamma + 1 tokens per sequence reads few more.

    >>> dep = Deployment.build("h100-sxm", "qwen3-30b-a3b", "qwen3-0.6b", timing="roofline", engine="none")
    >>> speculation_peak(dep, 0.8, [1, 4, 16, 64, 256], 1128)[0]
    64
    """
    b = np.asarray(batch, dtype=float).reshape(-1)
    best = optimal_gamma(dep, alpha, b, context, gamma_max)
    i = best.peak
    return int(b[i]), int(best.gamma[i]), float(best.speedup[i])


def checked_deployment(value: object, name: str = "dep") -> Deployment:
    """``value`` where it is a :class:`Deployment`, else TypeError naming the keyword and what it takes: a name or a
    profile passed where the answers take a deployment failed deep inside them ("'str' object has no attribute
    'engine'").

    >>> checked_deployment("h100-sxm")
    Traceback (most recent call last):
    ...
    TypeError: dep is a Deployment (specsim.Deployment.build(hardware, target, draft, ...)), got str 'h100-sxm'
    """
    if not isinstance(value, Deployment):
        raise TypeError(
            f"{name} is a Deployment (specsim.Deployment.build(hardware, target, draft, ...)), got "
            f"{type(value).__name__} {value!r:.40}"
        )
    return value
