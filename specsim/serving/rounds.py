"""The rounds a request decodes in: their mean, counted exactly where few (:func:`decode_rounds`), and the spread of
the slowest of many (:func:`decode_rounds_spread`), as the steady state (:mod:`specsim.serving.steady`) and the
calibration's model take them."""

from __future__ import annotations

import numpy as np

from specsim.speculation.acceptance import as_acceptance

__all__ = ["EXACT_ROUNDS", "decode_rounds", "decode_rounds_sd", "decode_rounds_spread"]


def decode_rounds(acceptance: object, gamma: object, tokens: object, per_round: object | None = None) -> np.ndarray:
    """Rounds a request takes to emit ``tokens`` tokens after its first (its output less one), speculating ``gamma``
    draft tokens a round at ``acceptance``: ``(tokens + overshoot) / E`` (Wald's identity), E the tokens a round yields
    (``per_round``, default the chain's) and the overshoot the last round's mean excess, sum_k k c_k / E for the
    per-position rates c_k (the limit of the renewal process, within a hundredth of a round from about ten rounds);
    ``tokens`` itself for gamma 0.

    >>> float(decode_rounds(0.0, 0, 255)), round(float(decode_rounds(0.8, 4, 255)), 3)
    (255.0, 76.322)
    """
    from specsim.speculation.acceptance import tokens_per_round

    g = np.asarray(gamma, dtype=float)
    m = np.asarray(tokens, dtype=float)
    e = tokens_per_round(acceptance, g) if per_round is None else np.asarray(per_round, dtype=float)
    gmax = int(np.max(g)) if g.size else 0
    if gmax == 0:
        return np.broadcast_to(m, np.broadcast_shapes(m.shape, g.shape, np.shape(e))).astype(float)
    acc = as_acceptance(acceptance) if not isinstance(acceptance, np.ndarray) else None
    k = np.arange(1, gmax + 1, dtype=float)
    if acc is not None and acc.alpha is None:
        c = np.asarray(acc.cumulative_rates(gmax), dtype=float)
    else:
        a = np.asarray(acceptance if acc is None else acc.alpha, dtype=float)
        c = a[..., None] ** k
    # sum over k <= gamma of k c_k, broadcast over gamma's and alpha's axes
    within = np.where(k <= g[..., None], c, 0.0)
    weighted = np.sum(k * within, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rounds = (m + weighted / e) / e
    if per_round is None:
        rounds = _counted_where_short(within, m, e, rounds)
    return np.where(g == 0, m, rounds)


#: :func:`decode_rounds` counts a request's rounds exactly up to EXACT_ROUNDS[0] of them, takes the renewal limit past
#: EXACT_ROUNDS[1], and blends the two between, so that more tokens never take fewer rounds.  The limit undercounts
#: short outputs (one token left took 0.82 of a round at alpha 0.7, gamma 3, where it takes exactly one); past 50
#: rounds it is within 0.4 of a round, 1%, however lattice-like a round's tokens are (alpha 1: the limit does not
#: converge; within a hundredth of a round from about ten rounds at alpha 0.8).
EXACT_ROUNDS = (40.0, 50.0)


def _counted_where_short(within: np.ndarray, tokens: np.ndarray, e: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """``limit`` (the renewal limit of the rounds), with its elements under EXACT_ROUNDS[1] rounds counted exactly
    (:func:`_rounds_exact`), blended linearly between EXACT_ROUNDS[0] and [1]: over the broadcast shape of the
    per-position rates ``within`` (less their last axis), ``tokens`` and ``e``, only the short elements counted."""
    lo, hi = EXACT_ROUNDS
    shape = np.broadcast_shapes(within.shape[:-1], np.shape(tokens), np.shape(e), np.shape(limit))
    limit = np.broadcast_to(limit, shape)
    short = np.isfinite(limit) & (limit < hi) & (np.broadcast_to(within, shape + within.shape[-1:])[..., 0] > 0)
    if not short.any():
        return limit
    m = np.broadcast_to(np.asarray(tokens, dtype=float), shape)[short]
    exact = _rounds_exact(np.broadcast_to(within, shape + within.shape[-1:])[short], m)
    w = np.clip((limit[short] - lo) / (hi - lo), 0.0, 1.0)
    out = np.array(limit, dtype=float)
    out[short] = (1.0 - w) * exact + w * limit[short]
    return out


def _rounds_exact(within: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """The expected rounds to emit ``tokens`` tokens (one per row of ``within``), counted: R(x) = 1 + sum_t P(T = t)
    R(x - t), R(x <= 0) = 0, where a round yields T = t tokens with probability c_{t-1} - c_t (``within``: the
    per-position rates c_1..c_gamma, 0 past gamma; c_0 = 1); a fractional count (a mean over requests) between its two
    whole ones."""
    m = np.maximum(tokens, 0.0)
    most = int(np.ceil(m.max()))
    # One count per distinct acceptance (a grid of loads repeats each gamma's rates): rows told apart by a random
    # projection, checked exact (np.unique over whole rows sorts them as bytes, a hundred times slower).
    key = within @ np.random.default_rng(0).random(within.shape[-1])
    _, first, row = np.unique(key, return_index=True, return_inverse=True)
    rates, row = within[first], row.reshape(-1)
    if not np.array_equal(rates[row], within):  # two rates with one projection: by whole rows
        rates, row = np.unique(within, axis=0, return_inverse=True)
        row = row.reshape(-1)
    n = rates.shape[0]
    c = np.concatenate([np.ones((n, 1)), rates, np.zeros((n, 1))], axis=-1)
    p = c[:, :-1] - c[:, 1:]  # P(T = t), t = 1..gmax + 1
    t = np.arange(1, p.shape[-1] + 1)
    r = np.zeros((n, most + 1))
    for x in range(1, most + 1):
        r[:, x] = 1.0 + np.sum(p * r[:, np.maximum(x - t, 0)], axis=-1)
    low = np.floor(m).astype(int)
    high = np.minimum(low + 1, most)
    return (1.0 - (m - low)) * r[row, low] + (m - low) * r[row, high]


def decode_rounds_sd(acceptance: object, gamma: object, tokens: object, spread: object = 0.0) -> np.ndarray:
    """The standard deviation of the rounds a request takes to emit ``tokens`` tokens; 0 without speculation.

    A request's rounds vary by chance, the renewal process's sqrt(m Var X / E^3) (X the tokens of a round), and by
    its prompt: ``spread`` is the standard deviation of the acceptance rate across a workload's prompts (0: every
    prompt accepts alike), which moves a request's rounds by D'(alpha) per unit of rate.  The two add in variance.

    >>> float(decode_rounds_sd(0.8, 0, 255)), round(float(decode_rounds_sd(0.7, 3, 255)), 2)
    (0.0, 4.91)
    """
    from specsim.speculation.acceptance import round_tokens_variance, tokens_per_round, tokens_per_round_slope

    g = np.asarray(gamma, dtype=float)
    gmax = int(np.max(g)) if g.size else 0
    if gmax == 0:
        return np.zeros(np.broadcast_shapes(g.shape, np.shape(tokens)))
    acc = as_acceptance(acceptance) if not isinstance(acceptance, np.ndarray) else None
    k = np.arange(1, gmax + 1, dtype=float)
    c = (
        np.asarray(acc.cumulative_rates(gmax), dtype=float)
        if acc is not None and acc.alpha is None
        else np.asarray(acceptance if acc is None else acc.alpha, dtype=float)[..., None] ** k
    )
    var = round_tokens_variance(c, g)
    e = tokens_per_round(acceptance, g)
    m = np.asarray(tokens, dtype=float)
    var_rounds = m * var / e**3
    s = np.asarray(spread, dtype=float)
    if np.any(s > 0):
        if acc is not None and acc.alpha is None:
            raise ValueError("a spread of acceptance across prompts needs one acceptance rate, not one per position")
        # D = m / E(alpha): dD/dalpha = -m E'(alpha) / E^2, with E'(alpha) = sum over k <= gamma of k alpha^(k - 1)
        de = tokens_per_round_slope(acceptance if acc is None else acc.alpha, g)
        var_rounds = var_rounds + (m * de / e**2 * s) ** 2
    return np.where(g == 0, 0.0, np.sqrt(var_rounds))


def decode_rounds_spread(
    acceptance: object, gamma: object, tokens: object, count: object, spread: object = 0.0
) -> np.ndarray:
    """The expected most rounds any of ``count`` requests takes to emit ``tokens`` tokens, less the mean: the standard
    deviation of a request's rounds (:func:`decode_rounds_sd`) times the expected largest of ``count`` standard normal
    draws (Blom's approximation, Phi^-1((n - 0.375) / (n + 0.25))).  What a batch that ends with its slowest request
    waits beyond the mean; 0 without speculation.

    >>> float(decode_rounds_spread(0.8, 0, 255, 8)), round(float(decode_rounds_spread(0.8, 4, 127, 8)), 2)
    (0.0, 4.2)
    >>> round(float(decode_rounds_spread(0.8, 4, 127, 8, spread=0.1)), 2)
    11.39
    """
    from scipy.special import ndtri

    g = np.asarray(gamma, dtype=float)
    n = np.maximum(np.asarray(count, dtype=float), 1.0)
    if g.size == 0 or int(np.max(g)) == 0:
        return np.zeros(np.broadcast_shapes(g.shape, n.shape, np.shape(tokens)))
    largest = np.where(n > 1, ndtri((n - 0.375) / (n + 0.25)), 0.0)
    return decode_rounds_sd(acceptance, g, tokens, spread) * largest
