"""Expected accepted length for chains and token trees, from one rate or from per-position rates.

Chains
    With per-token acceptance ``alpha`` independent of position (Leviathan et
    al. 2023) a verification pass over ``gamma`` drafted tokens emits
    ``E = (1 - alpha^(gamma+1)) / (1 - alpha)`` tokens.  Measured engines
    report per-position rates instead: vLLM's
    ``spec_decode_num_accepted_tokens_per_pos[k] / spec_decode_num_drafts`` is
    ``c_k``, the probability that drafted token k was accepted (which needs
    tokens 1..k-1 accepted too), so ``c_1 >= c_2 >= ...`` and

        E(gamma) = 1 + c_1 + ... + c_gamma.

    :class:`Acceptance` holds either form.  Per-position rates are not
    extrapolated unless asked: gamma stops at the last measured position K,
    and callers say so.  A calibration's shares are ``continued``: past K the
    chain goes on at the last measured conditional rate r = c_K / c_{K-1}
    (c_0 = 1), c_{K+j} = c_K r^j, an assumption its answers print.  One round's
    accepted drafts n then have P(n >= k) = c_k, so P(n = k) = c_k - c_{k+1}
    (one uniform draw a round, as the serving simulator draws them).

    Files record the shares rounded; :func:`checked_shares` is the one check of
    shares as a file gives them (a benchmark file's, a calibration's).

Trees
    A token tree (SpecInfer, EAGLE-2, SGLang's ``--speculative-eagle-topk``)
    drafts up to ``topk`` children per node, ``depth`` levels deep, and
    verifies ``tokens`` positions per sequence: the root (the last verified
    token) and the ``tokens - 1`` best drafted nodes.  Verification walks down
    the tree: at each accepted node it tries the children in rank order and
    accepts at most one.  Under the independent-acceptance model a child of
    rank r at depth d is accepted, given its parent was and its better-ranked
    siblings were not, with probability

        p(d, r) = a_d * s^(r - 1),      a_d = c_d / c_{d-1} (the chain's rate at depth d),

    ``s`` the sibling factor (:data:`DEFAULT_SIBLING_FACTOR`), so a node's
    probability of being accepted is the product along its path of
    ``p(d, r) * prod_{j<r} (1 - p(d, j))``, and

        E(tree) = 1 + sum over drafted nodes of P(node accepted)

    exactly (linearity of expectation).  A chain is the tree with topk 1, and
    gives the chain formula.  The drafted nodes kept are the ``tokens - 1`` of
    highest P among the ``topk`` children of the ``topk`` best nodes at each
    depth (EAGLE-2's expansion and re-ranking, with the model's P standing in
    for the draft's confidence); a node's P never exceeds its parent's, so the
    kept set is a tree.  :func:`monte_carlo_tree` samples the walk to check it.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field

import numpy as np

from specsim.core.names import given_as

__all__ = [
    "DEFAULT_SIBLING_FACTOR",
    "SHARE_ROUNDING",
    "Acceptance",
    "TreeSpec",
    "acceptance_rates",
    "alpha_from_acceptance_length",
    "as_acceptance",
    "checked_acceptance",
    "checked_shares",
    "prompt_spread",
    "round_tokens_variance",
    "build_tree",
    "expected",
    "expected_from_cumulative",
    "expected_tokens",
    "expected_tokens_per_position",
    "monte_carlo_tree",
    "parse_acceptance",
    "parse_tree",
    "plan_arrays",
    "tokens_per_round",
    "tokens_per_round_slope",
]

#: Probability of the second-ranked child being accepted relative to the first (given the first was rejected),
#: third to second, and so on.  An assumption, not a measurement: no public per-rank acceptance data were found.
#: 0.6 corresponds to a draft whose top-1 guess matches the target 80% of the time and top-2 90%
#: (p(2) = (0.9 - 0.8) / (1 - 0.8) = 0.5 = 0.8 * 0.625).  Set it from your own top-k hit rates.
DEFAULT_SIBLING_FACTOR = 0.6


# -- tokens per verification pass of a chain ----------------------------------------
def _check_alpha(alpha: np.ndarray) -> None:
    if not np.all((alpha >= 0.0) & (alpha <= 1.0)):
        raise ValueError(f"alpha must be in [0, 1], got {alpha.tolist()!r}")


def _check_gamma(gamma: np.ndarray) -> None:
    if not np.all((gamma >= 0) & (gamma == np.round(gamma))):
        raise ValueError(f"gamma must be an integer >= 0, got {gamma.tolist()!r}")


def expected_tokens(alpha: object, gamma: object) -> np.ndarray:
    """Expected tokens emitted per target pass, E(alpha, gamma).

    Parameters
    ----------
    alpha : array_like
        Per-token acceptance probability in [0, 1].
    gamma : array_like
        Drafted tokens per step, integers >= 0.

    Computed as ``-expm1((gamma+1) log alpha) / (1 - alpha)``, which stays
    accurate as alpha -> 1 where the textbook form cancels; alpha = 1 gives
    gamma + 1 exactly.

    Examples
    --------
    >>> float(expected_tokens(0.8, 4)), float(expected_tokens(1.0, 4)), float(expected_tokens(0.3, 0))
    (3.3616, 5.0, 1.0)
    """
    a = np.asarray(alpha, dtype=float)
    g = np.asarray(gamma, dtype=float)
    _check_alpha(a)
    _check_gamma(g)
    return _geometric_tokens(a, g)


def _geometric_tokens(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """:func:`expected_tokens` on checked float arrays (the bisection of :func:`alpha_from_acceptance_length` calls it
    64 times and checks its inputs once)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        body = -np.expm1((g + 1.0) * np.log(a)) / (1.0 - a)
    return np.where(a == 1.0, g + 1.0, np.where(g == 0, 1.0, body))


def expected_tokens_per_position(rates: object) -> np.ndarray:
    """E = 1 + sum_k prod_{i<=k} a_i for per-position acceptance rates.

    Parameters
    ----------
    rates : array_like, shape (..., gamma)
        a_k = P(draft token k accepted | tokens 1..k-1 accepted), in [0, 1].

    >>> round(float(expected_tokens_per_position([0.8, 0.8, 0.8, 0.8])), 10)
    3.3616
    >>> float(expected_tokens_per_position([0.9, 0.5]))
    2.35
    """
    a = np.asarray(rates, dtype=float)
    _check_alpha(a)
    if a.ndim == 0:
        raise ValueError("rates must have one entry per draft position")
    return expected_from_cumulative(np.cumprod(a, axis=-1))


def expected_from_cumulative(cumulative: object, gamma: object = None) -> np.ndarray:
    """E = 1 + c_1 + ... + c_gamma: tokens per verification from P(drafted token k accepted).

    The one home of the per-position form; ``gamma`` None sums every position (along the last axis),
    else ``cumulative`` is 1-D and ``gamma`` an array of whole numbers up to its length.

    >>> float(expected_from_cumulative([0.9, 0.72, 0.5])), expected_from_cumulative([0.9, 0.72], [0, 2]).tolist()
    (3.12, [1.0, 2.62])
    """
    c = np.asarray(cumulative, dtype=float)
    if gamma is None:
        return 1.0 + np.cumsum(c, axis=-1)[..., -1]
    sums = np.r_[0.0, np.cumsum(c)]
    return 1.0 + sums[np.asarray(gamma).astype(int)]


def expected(acceptance: object, gamma: object) -> np.ndarray:
    """E(gamma) for an alpha (float or array) or a :class:`specsim.speculation.acceptance.Acceptance`."""
    if hasattr(acceptance, "expected_tokens"):
        return acceptance.expected_tokens(gamma)
    return expected_tokens(acceptance, gamma)


def alpha_from_acceptance_length(mean_length: object, gamma: object) -> np.ndarray:
    """The alpha whose E(alpha, gamma) equals a measured mean acceptance length.

    vLLM reports the mean acceptance length as 1 + accepted / drafts, which is
    E: the tokens one verification pass emits.  E is strictly increasing in
    alpha for gamma >= 1, so the root in [0, 1] is unique (found by bisection
    to below 1e-15).

    Parameters
    ----------
    mean_length : array_like
        Mean tokens per verification pass, in [1, gamma + 1].
    gamma : array_like
        Speculative tokens per step the measurement used, >= 1.

    >>> round(float(alpha_from_acceptance_length(3.3616, 4)), 6)
    0.8
    """
    x = np.asarray(mean_length, dtype=float)
    g = np.asarray(gamma, dtype=float)
    if x.ndim == 0 and g.ndim == 0:  # one length at one gamma: the answer kept for the pair, a new array each call
        return np.array(_alpha_from_one_length(float(x), float(g)))
    return _alpha_from_lengths(x, g)


@functools.lru_cache(maxsize=4096)
def _alpha_from_one_length(mean_length: float, gamma: float) -> float:
    """:func:`alpha_from_acceptance_length` of one length at one gamma, kept: the bisection's 64 vectorised halvings
    take about 7 ms (6 us kept, on the loaded 2-core machine), and the published acceptance lengths behind every
    drafter's default rate are asked for again each time a deployment is built (2,000 calls in tests/test_bench_plan.py
    and test_engines.py, 8% of their time)."""
    return float(_alpha_from_lengths(np.asarray(mean_length), np.asarray(gamma)))


def _alpha_from_lengths(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """:func:`alpha_from_acceptance_length` of float arrays ``x`` and ``g``: checked, then bisected."""
    _check_gamma(g)
    if np.any(g < 1):
        raise ValueError("gamma must be >= 1 to infer alpha (gamma = 0 drafts nothing)")
    if not np.all(np.isfinite(x) & (x >= 1.0) & (x <= g + 1.0)):

        def shown(a):  # as the user wrote them: 5 and 3, not 5.0 and 3.0; one value alone, not a list
            return ", ".join(f"{v:g}" for v in np.atleast_1d(a).ravel()[:8])

        raise ValueError(f"mean acceptance length must be in [1, gamma + 1], got {shown(x)} with gamma {shown(g)}")

    # Bisection on [0, 1], vectorised: 64 halvings leave an interval below 1e-19, and E is strictly increasing.
    x, g = np.broadcast_arrays(x, g)
    lo, hi = np.zeros(x.shape), np.ones(x.shape)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        low = _geometric_tokens(mid, g) < x  # mid in [0, 1] and g checked above
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return np.where(x <= 1.0, 0.0, np.where(x >= g + 1.0, 1.0, 0.5 * (lo + hi)))


def round_tokens_variance(cumulative: object, gamma: object) -> np.ndarray:
    """The variance of the tokens one verification emits (X = 1 + accepted drafts) over the first ``gamma`` positions
    of the cumulative rates ``cumulative`` (last axis; ``gamma`` broadcast over the others): P(X > k) = c_k, so
    E[X^2] - E[X]^2 = sum over k <= gamma of (2k - 1) c_k, less (sum c_k)^2.

    >>> round(float(round_tokens_variance(0.8 ** np.arange(1, 5), 4)), 4)
    2.57
    """
    c = np.asarray(cumulative, dtype=float)
    k = np.arange(1, c.shape[-1] + 1, dtype=float)
    within = k <= np.asarray(gamma, dtype=float)[..., None]
    mean = np.sum(np.where(within, c, 0.0), axis=-1)
    return np.maximum(np.sum(np.where(within, (2 * k - 1) * c, 0.0), axis=-1) - mean**2, 0.0)


def tokens_per_round_slope(alpha: object, gamma: object) -> np.ndarray:
    """dE / d alpha of a chain at one rate: the sum over k <= gamma of k alpha^(k - 1).

    >>> round(float(tokens_per_round_slope(0.8, 4)), 3)
    6.568
    """
    a = np.asarray(alpha, dtype=float)[..., None]
    g = np.asarray(gamma, dtype=float)
    k = np.arange(1, int(np.max(g)) + 1 if g.size else 1, dtype=float)
    return np.sum(np.where(k <= g[..., None], k * a ** (k - 1.0), 0.0), axis=-1)


def prompt_spread(accept_lengths: object, tokens: object, gamma: int) -> tuple[float, float]:
    """(the acceptance rate, its standard deviation across prompts) from requests measured one at a time: each
    request's acceptance length (tokens per verification over its ``tokens`` output tokens, at ``gamma`` draft steps)
    gives its own rate; their variance, less what chance alone gives a rate measured over that many tokens (a
    request's acceptance length varies by E Var X / tokens, X the tokens of one round, carried to the rate through
    dE / d alpha), is the prompts' own.  What an offline batch's slowest request waits for
    (:func:`specsim.serving.rounds.decode_rounds_spread`); 0 where chance explains all of the variance.

    >>> rng = np.random.default_rng(0)
    >>> a = np.clip(0.6 + 0.1 * rng.standard_normal(4000), 0, 1)
    >>> mean, spread = prompt_spread(expected_tokens(a, 3), 10_000, 3)
    >>> round(mean, 2), round(spread, 2)
    (0.6, 0.1)
    """
    lengths = np.asarray(accept_lengths, dtype=float).ravel()
    t = np.broadcast_to(np.asarray(tokens, dtype=float), lengths.shape)
    if lengths.size < 2:
        raise ValueError("a spread across prompts needs at least two requests measured one at a time")
    if np.any(t < 1):
        raise ValueError("each request needs at least one output token")
    rates = alpha_from_acceptance_length(lengths, gamma)
    a = float(alpha_from_acceptance_length(lengths.mean(), gamma))
    e = float(_geometric_tokens(np.float64(a), np.float64(gamma)))
    var_x = float(round_tokens_variance(a ** np.arange(1, gamma + 1, dtype=float), gamma))
    de = float(tokens_per_round_slope(a, gamma))
    chance = float(np.mean(e * var_x / t)) / de**2 if de > 0 else 0.0
    return float(rates.mean()), float(np.sqrt(max(rates.var(ddof=1) - chance, 0.0)))


#: Rounding allowed in per-position acceptance shares as a file records them: half a point of a percentage, as a
#: benchmark file's acceptance rate is checked.
SHARE_ROUNDING = 5e-3


def checked_shares(rates: object, tol: float = SHARE_ROUNDING) -> tuple:
    """c_1..c_K, P(drafted token k accepted), from a list a file records (vLLM's
    ``spec_decode_per_position_acceptance_rates``, a calibration's ``acceptance.per_position``): refused where they
    cannot be a run's, not numbers in [0, 1] or rising with the position (a token is accepted only after every earlier
    one, so the counts fall), each beyond the rounding ``tol``; returned kept in [0, 1] and falling, the differences
    within rounding taken out (each share at most the one before it).  The message says what is wrong, for the caller
    to put the file and the field in front of it.

    >>> checked_shares([0.8, 0.6005, 0.4])
    (0.8, 0.6005, 0.4)
    >>> checked_shares([0.6, 0.8])
    Traceback (most recent call last):
    ...
    ValueError: rises from 0.6 at position 1 to 0.8 at 2: a drafted token is accepted only after every earlier one, so the shares cannot rise (beyond rounding, 0.005)
    """
    from specsim.core.limits import is_real

    if not isinstance(rates, list) or not rates or not all(is_real(r) and np.isfinite(r) for r in rates):
        raise ValueError(
            f"must be a list of numbers (each position's accepted tokens over the drafts), got {rates!r:.60}"
        )
    if any(not -tol <= r <= 1 + tol for r in rates):
        bad = next(r for r in rates if not -tol <= r <= 1 + tol)
        raise ValueError(f"holds {bad:g}, outside [0, 1]: each is a share of the drafts")
    for k in range(1, len(rates)):
        if rates[k] > rates[k - 1] + tol:
            raise ValueError(
                f"rises from {rates[k - 1]:g} at position {k} to {rates[k]:g} at {k + 1}: a drafted token is accepted "
                f"only after every earlier one, so the shares cannot rise (beyond rounding, {tol:g})"
            )
    return tuple(itertools.accumulate((min(max(float(r), 0.0), 1.0) for r in rates), min))


def _not_extrapolated(measured: int, asked: int) -> str:
    """The refusal of a gamma past the positions a per-position acceptance was measured at, with what is allowed."""
    positions = "position" if measured == 1 else "positions"
    return (
        f"acceptance is measured for {measured} {positions}, not {asked}; specsim does not extrapolate it: a gamma of "
        f"at most {measured}, or a rate per token (alpha) or per position measured that deep for more"
    )


@dataclass(frozen=True)
class Acceptance:
    """Acceptance of drafted tokens: one rate ``alpha`` for every position, or measured per-position rates.

    Parameters
    ----------
    alpha : float or None
        Per-token acceptance, independent of position.
    cumulative : tuple of float
        ``c_k``: probability that drafted token k is accepted (tokens 1..k-1 too); non-increasing.
    source : str
        Where the numbers came from, for provenance lines.
    measured_steps : int or None
        The deepest draft step a single ``alpha`` was measured at, where known (a calibration's, from runs at that many
        steps): an answer drafting past it says it extrapolates.  For ``continued`` rates, their number.
    continued : bool
        Per-position rates only: past the last measured position K the chain goes on at that position's conditional
        rate (:attr:`continued_rate`, c_K / c_{K-1}), an assumption :meth:`brief` says; False refuses a gamma past K.

    Examples
    --------
    >>> Acceptance(alpha=0.8).expected_tokens(4).item()
    3.3616
    >>> a = Acceptance(cumulative=(0.9, 0.72, 0.5))
    >>> round(a.expected_tokens(3).item(), 6), a.max_gamma
    (3.12, 3)
    >>> b = Acceptance(cumulative=(0.8, 0.6, 0.4), continued=True)
    >>> [round(c, 4) for c in b.cumulative_rates(5).tolist()], round(b.expected_tokens(5).item(), 4), b.measured_steps
    ([0.8, 0.6, 0.4, 0.2667, 0.1778], 3.2444, 3)
    """

    alpha: float | None = None
    cumulative: tuple = ()
    source: str = ""
    measured_steps: int | None = field(default=None, compare=False)
    continued: bool = False

    def __post_init__(self) -> None:
        if (self.alpha is None) == (not self.cumulative):
            raise ValueError(
                "acceptance needs either one alpha or per-position rates, "
                + ("not both" if self.alpha is not None else "and has neither")
            )
        if self.continued is not False and (self.continued is not True or self.alpha is not None):
            raise ValueError("continued (true or false) goes with per-position rates, which it continues past the last")
        if self.continued:  # the positions measured are the rates given; an answer past them says it extrapolates
            if self.measured_steps not in (None, len(self.cumulative)):
                raise ValueError(
                    f"continued per-position rates were measured at their {len(self.cumulative)} positions, not at "
                    f"{self.measured_steps!r}"
                )
            object.__setattr__(self, "measured_steps", len(self.cumulative))
        if self.alpha is not None:
            if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
                raise ValueError(f"alpha must be in [0, 1], got {self.alpha!r}")
            return
        c = np.asarray(self.cumulative, dtype=float)
        if c.ndim != 1 or not np.all(np.isfinite(c)) or np.any((c < 0) | (c > 1)):
            raise ValueError(f"per-position acceptance rates must be numbers in [0, 1], got {list(self.cumulative)!r}")
        rising = np.flatnonzero(np.diff(c) > 1e-12)
        if rising.size:
            k = int(rising[0]) + 1
            raise ValueError(
                f"per-position acceptance must not increase with depth (position {k + 1} accepted {c[k]:g} > position {k} "
                f"{c[k - 1]:g}): a token is accepted only if every earlier one was, so these are P(token k accepted) "
                "as vLLM's per-position counters give them, not conditional rates"
            )

    @property
    def max_gamma(self) -> int | None:
        """The deepest position a gamma may reach (None: any gamma: one alpha, or ``continued`` rates)."""
        return None if self.alpha is not None or self.continued else len(self.cumulative)

    @property
    def continued_rate(self) -> float | None:
        """r = c_K / c_{K-1} (c_0 = 1), the conditional rate of the last measured position, at which ``continued``
        rates go on past it (c_{K+j} = c_K r^j), no higher than c_K^(1/K), the per-token rate of all the measured
        positions; None where they are not continued.  Files round the shares, and a tail flat within that rounding
        (0.6, 0.603 clipped to 0.6, 0.6) gives a conditional rate of 1 that, continued, would accept every drafted
        token past K; the measured positions' own rate bounds it.

        >>> round(Acceptance(cumulative=(0.8, 0.6, 0.4), continued=True).continued_rate, 4)
        0.6667
        >>> round(Acceptance(cumulative=(0.8, 0.6, 0.6), continued=True).continued_rate, 4)  # 0.6 ** (1 / 3)
        0.8434
        """
        if not self.continued:
            return None
        c = self.cumulative
        before = float(c[-2]) if len(c) > 1 else 1.0
        last = float(c[-1]) / before if before > 0 else 0.0  # (c_K is 0 too where c_{K-1} is)
        return min(last, float(c[-1]) ** (1.0 / len(c)))

    @property
    def _continued_capped(self) -> bool:
        """Whether :attr:`continued_rate` is the measured positions' per-token rate, below the last conditional rate."""
        c = self.cumulative
        before = float(c[-2]) if len(c) > 1 else 1.0
        return self.continued and before > 0 and self.continued_rate < float(c[-1]) / before - 1e-12

    def conditional(self, depth: int) -> np.ndarray:
        """a_1..a_depth: acceptance at each depth given the previous tokens were accepted."""
        if self.alpha is not None:
            return np.full(depth, float(self.alpha))
        if depth > len(self.cumulative) and not self.continued:
            raise ValueError(_not_extrapolated(len(self.cumulative), depth))
        c = self.cumulative_rates(depth)
        prev = np.r_[1.0, c[:-1]]
        return np.divide(c, prev, out=np.zeros_like(c), where=prev > 0)

    def expected_tokens(self, gamma: object) -> np.ndarray:
        """E(gamma): tokens per verification pass of a chain, broadcast over ``gamma``."""
        g = np.asarray(gamma)
        if self.alpha is not None:
            return expected_tokens(self.alpha, g)
        gi = g.astype(int)
        if np.any(gi != g) or np.any(gi < 0):
            raise ValueError("gamma must be whole numbers >= 0")
        if np.any(gi > len(self.cumulative)):
            if not self.continued:
                raise ValueError(_not_extrapolated(len(self.cumulative), int(gi.max())))
            return expected_from_cumulative(self.cumulative_rates(int(gi.max())), gi)
        return expected_from_cumulative(self.cumulative, gi)

    def cumulative_rates(self, gamma: int) -> np.ndarray:
        """c_1..c_gamma, P(drafted token k accepted): alpha^k for one alpha, else the measured rates (``continued``
        past the last at :attr:`continued_rate`).

        >>> Acceptance(alpha=0.5).cumulative_rates(3).tolist()
        [0.5, 0.25, 0.125]
        """
        if gamma == 0:
            return np.zeros(0)
        if self.alpha is None:
            c = np.asarray(self.cumulative, dtype=float)
            if c.size < gamma and self.continued:
                return np.r_[c, c[-1] * self.continued_rate ** np.arange(1, gamma - c.size + 1)]
            if c.size < gamma:
                raise ValueError(
                    f"acceptance is measured for {c.size} positions; the speculation policy uses gamma up to {gamma}"
                )
            return c[:gamma]
        return float(self.alpha) ** np.arange(1, gamma + 1)

    def brief(self) -> str:
        """The rates alone, for a caption: ``alpha 0.8`` or ``per-position acceptance 0.8, 0.7``, and the rule past the
        last where they are ``continued``.

        >>> Acceptance(cumulative=(0.8, 0.6, 0.4), continued=True).brief()
        "per-position acceptance 0.8, 0.6, 0.4; beyond position 3 (assumed): the chain continued at position 3's conditional rate 0.667"
        """
        if self.alpha is not None:
            return f"alpha {self.alpha:g}"
        said = "per-position acceptance " + ", ".join(f"{c:.3g}" for c in self.cumulative)
        if self.continued:
            said += f"; beyond position {len(self.cumulative)} (assumed): {self.beyond()}"
        return said

    def beyond(self) -> str:
        """How a gamma past the measured positions is answered, in words: one alpha's chain, the ``continued`` rule, or
        "" where it is refused.

        >>> Acceptance(alpha=0.8).beyond(), Acceptance(cumulative=(0.9, 0.72)).beyond()
        ('one rate per token', '')
        """
        if self.alpha is not None:
            return "one rate per token"
        if not self.continued:
            return ""
        k = len(self.cumulative)
        if self._continued_capped:
            conditional = float(self.cumulative[-1]) / float(self.cumulative[-2])
            # as many digits as tell the two apart (shares rounded to 4 places give rates 1e-4 apart)
            d = next((d for d in range(3, 7) if f"{self.continued_rate:.{d}g}" != f"{conditional:.{d}g}"), 6)
            return (
                f"the chain continued at the measured positions' per-token rate {self.continued_rate:.{d}g} (position "
                f"{k}'s conditional rate, {conditional:.{d}g}, is higher)"
            )
        return f"the chain continued at position {k}'s conditional rate {self.continued_rate:.3g}"

    def describe(self) -> str:
        return self.brief() + (f" ({self.source})" if self.source else "")


def checked_acceptance(value: object) -> object:
    """``value`` as the searches take it: an :class:`Acceptance`, or an alpha (a real number or an array of them) in
    [0, 1]; a bool, a string or anything else is refused by name (numpy reads True as 1.0 and "0.8" as 0.8, so a
    notebook's slip would give an answer).

    >>> checked_acceptance(0.8), checked_acceptance(np.float32(0.5)).dtype
    (0.8, dtype('float32'))
    """
    if isinstance(value, Acceptance):
        return value
    a = np.asarray(value) if not isinstance(value, (str, bytes)) else None
    if a is None or a.dtype.kind not in "iuf" or a.size == 0:
        raise ValueError(
            f"acceptance must be an alpha in [0, 1] (a number or an array of numbers, not a bool or a string) or an "
            f"Acceptance, got {value!r:.60}"
        )
    if not np.all((a >= 0) & (a <= 1)):  # NaN fails both
        raise ValueError(f"alpha must be in [0, 1], got {value!r:.60}")
    return value


def as_acceptance(value: object) -> Acceptance:
    """An :class:`Acceptance` from a float alpha or an Acceptance."""
    if isinstance(value, Acceptance):
        return value
    return Acceptance(alpha=float(checked_acceptance(value)))


def acceptance_rates(value: object) -> dict:
    """The rates an answer was computed at, as its JSON gives them beside the ``acceptance`` label: one ``alpha`` or
    the ``per_position`` P(drafted token k accepted), the other None; ``measured_steps``, the draft steps one alpha was
    measured at where known (a calibration's, and the positions of rates ``continued`` past them); the rate positions
    past ``per_position`` continue at (``continued_rate``, None: a gamma past them is refused, or one alpha); and where
    the numbers came from.

    >>> acceptance_rates(0.8)
    {'alpha': 0.8, 'per_position': None, 'measured_steps': None, 'continued_rate': None, 'source': ''}
    >>> acceptance_rates(Acceptance(cumulative=(0.9, 0.72), source="--acceptance"))["per_position"]
    [0.9, 0.72]
    """
    if not isinstance(value, Acceptance) and np.ndim(value) > 0:  # an alpha per point (a figure's grid)
        return {
            "alpha": np.asarray(value, dtype=float).tolist(),
            "per_position": None,
            "measured_steps": None,
            "continued_rate": None,
            "source": "",
        }
    acc = as_acceptance(value)
    one = acc.alpha is not None
    return {
        "alpha": float(acc.alpha) if one else None,
        "per_position": None if one else [float(c) for c in acc.cumulative],
        "measured_steps": acc.measured_steps,
        "continued_rate": acc.continued_rate,
        "source": acc.source,
    }


def parse_acceptance(text: str) -> Acceptance:
    """``--acceptance 0.92,0.81,0.70``: vLLM's per-position rates (P(token k accepted)).

    >>> parse_acceptance("0.9, 0.72").cumulative
    (0.9, 0.72)
    """
    items = [v.strip() for v in text.split(",")]
    if len(items) > 1 and "" in items and any(items):  # an empty position shifts every later one: refused
        raise ValueError(
            f"{given_as('acceptance')} has an empty position in {text!r}: one rate per draft position, separated by "
            "single commas"
        )
    try:
        values = tuple(float(v) for v in items if v)
    except ValueError:
        raise ValueError(
            f"{given_as('acceptance')} takes comma-separated rates in [0, 1], e.g. 0.92,0.81,0.70; got {text!r}"
        ) from None
    if not values:
        raise ValueError(f"{given_as('acceptance')} needs at least one rate")
    return Acceptance(cumulative=values, source=given_as("acceptance"))


# -- trees --------------------------------------------------------------------
@dataclass(frozen=True)
class TreeSpec:
    """A draft tree: ``topk`` children per expanded node, ``depth`` levels, ``tokens`` verified per sequence."""

    topk: int
    depth: int
    tokens: int

    def __post_init__(self) -> None:
        for key in ("topk", "depth", "tokens"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"tree {key} must be a positive integer, got {value!r}")
        if self.topk > 16 or self.depth > 16 or self.tokens > 256:
            raise ValueError(f"tree topk <= 16, depth <= 16 and tokens <= 256, got {self}")
        most = 1 + self.topk + (self.depth - 1) * self.topk * self.topk
        if self.tokens > most:
            raise ValueError(
                f"a tree of topk {self.topk} and depth {self.depth} holds at most {most} tokens "
                f"(the root, {self.topk} at depth 1 and {self.topk * self.topk} per deeper level), not {self.tokens}"
            )
        if self.tokens < 2:
            raise ValueError("a tree verifies at least 2 tokens (the root and one drafted token)")

    @property
    def is_chain(self) -> bool:
        return self.topk == 1

    def label(self) -> str:
        return "chain" if self.is_chain else f"topk {self.topk}, depth {self.depth}, tokens {self.tokens}"


_TREE = re.compile(r"^topk:(\d+),depth:(\d+),tokens:(\d+)$")


def parse_tree(text: str) -> TreeSpec | None:
    """``chain`` (None: the gamma search) or ``topk:K,depth:D,tokens:N``.

    >>> parse_tree("topk:4,depth:5,tokens:16")
    TreeSpec(topk=4, depth=5, tokens=16)
    """
    text = text.strip()
    if text == "chain":
        return None
    m = _TREE.match(text.replace(" ", ""))
    if not m:
        raise ValueError(
            f"{given_as('tree')} takes chain or topk:K,depth:D,tokens:N (e.g. topk:4,depth:5,tokens:16), got {text!r}"
        )
    return TreeSpec(*(int(g) for g in m.groups()))


@dataclass(frozen=True)
class Tree:
    """A built tree: each drafted node's parent index (-1: the root), depth, sibling rank and acceptance probability."""

    spec: TreeSpec
    parent: np.ndarray
    depth: np.ndarray
    rank: np.ndarray
    p_edge: np.ndarray  # P(accepted | parent accepted, better siblings rejected)
    p_node: np.ndarray  # P(accepted) of the node
    expected_tokens: float = field(default=0.0)


def build_tree(spec: TreeSpec, acceptance: Acceptance, sibling: float = DEFAULT_SIBLING_FACTOR) -> Tree:
    """The ``spec.tokens - 1`` most probable drafted nodes, and E(tree) = 1 + their summed probabilities.

    >>> chain = build_tree(TreeSpec(1, 4, 5), Acceptance(alpha=0.8))
    >>> round(chain.expected_tokens, 4)
    3.3616
    >>> round(build_tree(TreeSpec(2, 4, 9), Acceptance(alpha=0.8)).expected_tokens, 4) > 3.3616
    True
    """
    import heapq  # here, not at import: only a tree search needs it

    if not 0.0 <= sibling <= 1.0:
        raise ValueError(f"sibling factor must be in [0, 1], got {sibling!r}")
    a = acceptance.conditional(spec.depth)
    # Expand level by level: the topk best nodes of each level get topk children (EAGLE-2).
    nodes = []  # (p_node, depth, rank, parent, p_edge)
    frontier = [(1.0, -1)]  # (p of the node, index) of nodes to expand; the root first
    for d in range(1, spec.depth + 1):
        level = []
        for p_parent, parent in frontier:
            rejected = 1.0
            for r in range(1, spec.topk + 1):
                edge = float(a[d - 1]) * sibling ** (r - 1)
                p = p_parent * rejected * edge
                rejected *= 1.0 - edge
                level.append((p, d, r, parent, edge))
        start = len(nodes)
        nodes.extend(level)
        best = heapq.nlargest(spec.topk, range(len(level)), key=lambda i: (level[i][0], -i))
        frontier = [(level[i][0], start + i) for i in best]
    # Keep the tokens - 1 most probable drafted nodes; ties go to the shallower, earlier node, so parents come first.
    order = sorted(range(len(nodes)), key=lambda i: (-nodes[i][0], nodes[i][1], i))[: spec.tokens - 1]
    keep = sorted(order)
    # P never exceeds the parent's, so the kept set is closed under parents (a lost one would be a KeyError below).
    index = {old: new for new, old in enumerate(keep)}
    parent = np.array([index[nodes[i][3]] if nodes[i][3] >= 0 else -1 for i in keep], dtype=int)
    p_node = np.array([nodes[i][0] for i in keep])
    return Tree(
        spec,
        parent,
        np.array([nodes[i][1] for i in keep]),
        np.array([nodes[i][2] for i in keep]),
        np.array([nodes[i][4] for i in keep]),
        p_node,
        1.0 + float(p_node.sum()),
    )


def _plans(plan: object) -> tuple | None:
    """The trees of a sequence of :class:`TreeSpec` (a leading axis of candidates), or None for one plan."""
    if isinstance(plan, (list, tuple)) and plan and all(isinstance(p, TreeSpec) for p in plan):
        return tuple(plan)
    return None


def plan_arrays(plan: object, ndim: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(draft steps, tokens per draft step, tokens verified) per sequence of a round under ``plan``.

    A plan is a :class:`TreeSpec`; a chain of gamma drafted tokens is the tree of top-k 1, depth gamma and gamma + 1
    verified tokens, and may be given as gamma itself (a number or an array, for searches over gamma; 0 is plain
    decoding).  A sequence of trees puts them on a new leading axis, in front of ``ndim`` axes of batch and context.

    >>> [a.tolist() for a in plan_arrays(TreeSpec(4, 5, 16))], [a.tolist() for a in plan_arrays(3)]
    ([5.0, 4.0, 16.0], [3.0, 1.0, 4.0])
    """
    many = _plans(plan)
    if many is not None:
        shape = (len(many),) + (1,) * ndim
        return tuple(
            np.array([getattr(p, k) for p in many], dtype=float).reshape(shape) for k in ("depth", "topk", "tokens")
        )
    if isinstance(plan, TreeSpec):
        return np.asarray(float(plan.depth)), np.asarray(float(plan.topk)), np.asarray(float(plan.tokens))
    steps = np.asarray(plan, dtype=float)
    _check_gamma(steps)
    return steps, np.ones(()), steps + 1.0


def tokens_per_round(
    acceptance: object, plan: object, sibling: float | None = None, verified: object = None
) -> np.ndarray:
    """E: the tokens one verification emits per sequence under ``plan`` (see :func:`plan_arrays`), the bonus token
    included.  The one home of E: chains by the closed form (one alpha, float or array) or the per-position sums,
    trees by :func:`build_tree` with the sibling factor ``sibling`` (default :data:`DEFAULT_SIBLING_FACTOR`).

    ``verified`` is, for a chain whose sequences verify prefixes of different lengths (DSpark's confidence scheduler,
    suffix decoding's per-request depth), the mean number of draft tokens verified per sequence (at most the plan's
    gamma).  A batch verifying B = b * v draft tokens over b sequences gives floor(v) to some and floor(v) + 1 to the
    others, so E is the mix of E(floor v) and E(floor v + 1) in the proportions that give the mean v.

    >>> float(tokens_per_round(0.8, 4)), round(float(tokens_per_round(Acceptance(alpha=0.8), TreeSpec(1, 4, 5))), 4)
    (3.3616, 3.3616)
    >>> tokens_per_round(Acceptance(cumulative=(0.9, 0.72)), [TreeSpec(1, 1, 2), TreeSpec(1, 2, 3)]).tolist()
    [1.9, 2.62]
    >>> round(float(tokens_per_round(0.8, 4, verified=2.5)), 4), float(tokens_per_round(0.8, 4, verified=4))
    (2.696, 3.3616)
    """
    sib = DEFAULT_SIBLING_FACTOR if sibling is None else sibling
    many = _plans(plan)
    if many is not None or isinstance(plan, TreeSpec):
        if verified is not None:
            raise ValueError("a mean verified length applies to a chain (a gamma), not to token trees")
        acc = as_acceptance(acceptance)
        e = [build_tree(p, acc, sib).expected_tokens for p in (many or (plan,))]
        return np.array(e) if many is not None else np.asarray(e[0])
    if verified is None:
        return expected(acceptance, plan)
    v = np.asarray(verified, dtype=float)
    if np.any(v < 0) or np.any(v > np.asarray(plan, dtype=float) + 1e-9):
        raise ValueError(f"the mean verified draft tokens must be in [0, gamma], got {verified!r} for gamma {plan!r}")
    low = np.floor(v + 1e-9)
    share = v - low
    high = np.where(share > 0, low + 1.0, low)
    return (1.0 - share) * expected(acceptance, low) + share * expected(acceptance, high)


def monte_carlo_tree(tree: Tree, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Tokens emitted per verification in ``trials`` sampled walks down ``tree`` (the bonus token included).

    Each walk tries an accepted node's kept children in rank order, accepting each with its ``p_edge`` and at
    most one, vectorised over trials.
    """
    n = tree.parent.size
    accepted = np.zeros((trials, n), bool)
    children = {i: [j for j in range(n) if tree.parent[j] == i] for i in itertools.chain([-1], range(n))}
    # Process parents in index order: a node's parent always has a smaller index (levels are stored in order).
    for parent in itertools.chain([-1], range(n)):
        kids = sorted(children[parent], key=lambda j: tree.rank[j])
        if not kids:
            continue
        alive = np.ones(trials, bool) if parent < 0 else accepted[:, parent].copy()
        for j in kids:
            hit = alive & (rng.random(trials) < tree.p_edge[j])
            accepted[:, j] = hit
            alive &= ~hit
    return 1.0 + accepted.sum(axis=1)
