"""The exact acceptance rule of speculative sampling, vectorised over sequences.

One speculative step (Leviathan et al. 2022, arXiv:2211.17192, Algorithm 1;
Chen et al. 2023, arXiv:2302.01318, Algorithm 2): the draft has proposed
tokens x_1..x_gamma, drawing x_i from its distribution q_i; the target has
scored every prefix in one pass, giving p_1..p_{gamma+1}.  Then, in order,

* x_i is accepted with probability min(1, p_i(x_i) / q_i(x_i));
* at the first rejection, position i emits a token from the residual
  r_i = max(0, p_i - q_i) / sum(max(0, p_i - q_i)) and the step ends;
* if all gamma are accepted, a bonus token is drawn from p_{gamma+1}.

Each emitted token is distributed exactly as the target's: drafting x and
accepting it has probability min(p(x), q(x)), rejecting has probability
1 - beta with beta = sum_x min(p(x), q(x)), and (1 - beta) r(x) =
max(0, p(x) - q(x)), which sum to p(x).  beta = 1 - TV(p, q) is the
acceptance rate.  Greedy decoding degenerates to "accept iff the drafted
token is the target's argmax".

Everything here is numpy, takes an ``np.random.Generator`` and loops only over
the gamma draft positions, never over sequences or the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.speculation.acceptance import tokens_per_round

__all__ = [
    "CategoricalTable",
    "SpecStep",
    "accepted_prefix_length",
    "acceptance_rate",
    "acceptance_rate_from_logits",
    "logits_acceptance_summary",
    "output_distribution",
    "residual_distribution",
    "sample_rows",
    "softmax",
    "verify",
]


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Probabilities over the last axis at a temperature; temperature 0 gives the one-hot argmax.

    >>> softmax(np.array([0.0, np.log(3.0)])).round(3).tolist()
    [0.25, 0.75]
    >>> softmax(np.array([1.0, 2.0, 0.5]), temperature=0).tolist()
    [0.0, 1.0, 0.0]
    """
    z = np.asarray(logits, dtype=float)
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if temperature == 0:  # greedy: all mass on the first maximum
        return (np.arange(z.shape[-1]) == np.argmax(z, axis=-1)[..., None]).astype(float)
    z = z / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def load_logits(path: str, what: str) -> np.ndarray:
    """A ``[positions, vocab]`` logits array from ``.npy`` or ``.npz``, checked before and after reading.

    The header is checked against :data:`specsim.core.limits.MAX_ARRAY_ELEMENTS`
    before anything is allocated; the array must be 2-D, non-empty, numeric
    and finite but for -inf, a masked token's logit (probability 0), with at least one token per position.
    """
    from specsim.core.limits import load_array

    data = load_array(path, f"{what} file")
    if data.ndim != 2 or data.size == 0:
        raise ValueError(f"{what} must have shape [positions, vocab] with both > 0, got {data.shape}")
    if not np.issubdtype(data.dtype, np.floating) and not np.issubdtype(data.dtype, np.integer):
        raise ValueError(f"{what} must be numeric, got dtype {data.dtype}")
    data = data.astype(float)
    bad = np.isnan(data) | (data == np.inf)  # -inf is a masked token (vocabulary padding, top-k): probability 0
    if bad.any():
        raise ValueError(f"{what} holds NaN or +infinite values ({int(bad.sum())} of {data.size}); -inf masks a token")
    empty = np.all(data == -np.inf, axis=-1)
    if empty.any():
        raise ValueError(f"{what} masks every token (-inf) at {int(empty.sum())} position(s): no distribution there")
    return data


def acceptance_rate(target_probs: np.ndarray, draft_probs: np.ndarray, axis: int = -1) -> np.ndarray:
    """beta = sum_x min(p(x), q(x)) = 1 - TV(p, q), per distribution.

    >>> float(acceptance_rate(np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])))
    0.7
    """
    p = np.asarray(target_probs, dtype=float)
    q = np.asarray(draft_probs, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"target and draft probabilities must have the same shape, got {p.shape} and {q.shape}")
    # Sum min(p, q) is at most 1; identical distributions sum to 1 + 2e-16 in floating point.
    return np.clip(np.minimum(p, q).sum(axis=axis), 0.0, 1.0)


def acceptance_rate_from_logits(
    target_logits: np.ndarray, draft_logits: np.ndarray, temperature: float = 1.0
) -> np.ndarray:
    """Acceptance rate per position from logits of shape (..., vocab) at a temperature.

    At temperature 0 (greedy) it is 1 where the argmaxes agree and 0 elsewhere.

    >>> acceptance_rate_from_logits(np.array([[2.0, 0.0]]), np.array([[0.0, 2.0]]), temperature=0).tolist()
    [0.0]
    """
    return acceptance_rate(softmax(target_logits, temperature), softmax(draft_logits, temperature))


def residual_distribution(target_probs: np.ndarray, draft_probs: np.ndarray) -> np.ndarray:
    """r = max(0, p - q) normalised over the last axis; p itself where p == q (never used then).

    >>> residual_distribution(np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])).tolist()
    [1.0, 0.0, 0.0]
    """
    p = np.asarray(target_probs, dtype=float)
    excess = np.maximum(p - np.asarray(draft_probs, dtype=float), 0.0)
    total = excess.sum(axis=-1, keepdims=True)
    return np.where(total > 0, excess / np.where(total > 0, total, 1.0), p)


def output_distribution(target_probs: np.ndarray, draft_probs: np.ndarray) -> np.ndarray:
    """Exact distribution of the token one position emits: min(p, q) + (1 - beta) r.

    Computed by enumerating the draft's token, its acceptance and the
    residual; equals ``target_probs`` for any draft.

    >>> output_distribution(np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])).round(12).tolist()
    [0.6, 0.3, 0.1]
    """
    p = np.asarray(target_probs, dtype=float)
    q = np.asarray(draft_probs, dtype=float)
    accept = np.where(q > 0, np.minimum(1.0, p / np.where(q > 0, q, 1.0)), 0.0)
    drafted_and_accepted = q * accept
    rejected = (q * (1.0 - accept)).sum(axis=-1, keepdims=True)
    return drafted_and_accepted + rejected * residual_distribution(p, q)


def sample_rows(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``probs`` (shape (..., V)) by inverse CDF.

    >>> rng = np.random.default_rng(0)
    >>> sample_rows(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), rng).tolist()
    [1, 0]
    """
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(cdf.shape[:-1])[..., None] * cdf[..., -1:]
    return np.minimum((cdf <= u).sum(axis=-1), probs.shape[-1] - 1)


class CategoricalTable:
    """Fast repeated sampling from the rows of a fixed (K, V) probability table.

    The rows' CDFs are laid end to end, row k shifted by k, in one sorted
    array; a draw from row k is ``searchsorted(k + u)``: O(log(K V)) per draw
    with no (n, V) temporaries, which is what makes Monte Carlo over many
    sequences fast.

    >>> table = CategoricalTable(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> table.sample(np.array([0, 1, 0]), np.random.default_rng(0)).tolist()
    [1, 0, 1]
    """

    def __init__(self, probs: np.ndarray):
        probs = np.asarray(probs, dtype=float)
        if probs.ndim != 2 or np.any(probs < 0) or np.any(probs.sum(axis=1) <= 0):
            raise ValueError("a categorical table needs a 2-D array of non-negative rows with positive sums")
        cdf = np.cumsum(probs, axis=1) / probs.sum(axis=1, keepdims=True)
        cdf[:, -1] = 1.0
        self.vocab = probs.shape[1]
        self._flat = (cdf + np.arange(probs.shape[0])[:, None]).ravel()

    def sample(self, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw from each requested row."""
        rows = np.asarray(rows)
        keys = rows + rng.random(rows.shape)
        idx = np.searchsorted(self._flat, keys, side="right") - rows * self.vocab
        return np.minimum(idx, self.vocab - 1)


def accepted_prefix_length(target_p: np.ndarray, draft_q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Accepted draft tokens per sequence from p_i(x_i) and q_i(x_i), shape (n, gamma).

    Token i is accepted with probability min(1, p/q), tested as u * q < p
    (no division; q(x) > 0 for any drafted x); the count stops at the first
    rejection.

    >>> accepted_prefix_length(np.array([[0.5, 0.0, 0.9]]), np.array([[0.5, 0.2, 0.1]]), np.random.default_rng(0)).tolist()
    [1]
    """
    accept = rng.random(target_p.shape) * draft_q < target_p
    return np.cumprod(accept, axis=1).sum(axis=1)


@dataclass(frozen=True)
class SpecStep:
    """Outcome of one speculative step for n sequences.

    Attributes
    ----------
    tokens : ndarray, shape (n, gamma + 1)
        Emitted tokens, left-aligned; -1 after the last emitted token.
    num_accepted : ndarray, shape (n,)
        Draft tokens accepted (0..gamma); ``num_accepted + 1`` tokens are emitted.
    """

    tokens: np.ndarray
    num_accepted: np.ndarray

    @property
    def num_emitted(self) -> np.ndarray:
        return self.num_accepted + 1


def verify(
    draft_tokens: np.ndarray,
    draft_probs: np.ndarray,
    target_probs: np.ndarray,
    rng: np.random.Generator,
    greedy: bool = False,
) -> SpecStep:
    """Apply the acceptance rule to a batch of drafted tokens.

    Parameters
    ----------
    draft_tokens : int array, shape (n, gamma)
        Tokens the draft proposed.
    draft_probs : array, shape (n, gamma, V)
        The draft's distribution q_i at each drafted position.
    target_probs : array, shape (n, gamma + 1, V)
        The target's distribution p_i at each position, plus the bonus position.
    rng : np.random.Generator
    greedy : bool
        Accept iff the drafted token is the target's argmax; emit argmaxes.

    Examples
    --------
    A draft that proposes the target's certain token is always accepted:

    >>> p = np.tile([[0.0, 1.0]], (1, 2, 1))
    >>> step = verify(np.array([[1]]), np.array([[[0.5, 0.5]]]), p, np.random.default_rng(0))
    >>> step.tokens.tolist(), step.num_accepted.tolist()
    ([[1, 1]], [1])
    """
    x = np.asarray(draft_tokens)
    q = np.asarray(draft_probs, dtype=float)
    p = np.asarray(target_probs, dtype=float)
    n, gamma = x.shape
    if q.shape[:2] != (n, gamma) or p.shape[:2] != (n, gamma + 1) or q.shape[2] != p.shape[2]:
        raise ValueError(
            f"shapes disagree: draft_tokens {x.shape}, draft_probs {q.shape} (want (n, gamma, V)), "
            f"target_probs {p.shape} (want (n, gamma + 1, V))"
        )
    rows = np.arange(n)[:, None]
    cols = np.arange(gamma)[None, :]
    if greedy:
        num_accepted = np.cumprod(x == np.argmax(p[:, :gamma], axis=-1), axis=1).sum(axis=1)
    else:
        num_accepted = accepted_prefix_length(p[rows, cols, x], q[rows, cols, x], rng)
    stop = num_accepted  # position whose token comes from the target
    p_stop = p[np.arange(n), stop]
    if greedy:
        last = np.argmax(p_stop, axis=-1)
    else:
        rejected = stop < gamma
        q_stop = q[np.arange(n), np.minimum(stop, gamma - 1)] if gamma > 0 else np.zeros_like(p_stop)
        dist = np.where(rejected[:, None], residual_distribution(p_stop, q_stop), p_stop)
        last = sample_rows(dist, rng)
    tokens = np.full((n, gamma + 1), -1, dtype=np.int64)
    keep = cols < num_accepted[:, None]
    tokens[:, :gamma] = np.where(keep, x, -1)
    tokens[np.arange(n), stop] = last
    return SpecStep(tokens, num_accepted)


def logits_acceptance_summary(
    target_logits: np.ndarray, draft_logits: np.ndarray, temperature: float = 1.0, gammas: object = range(1, 9)
) -> dict:
    """alpha measured from two logit arrays over the same positions, its spread, and tokens per step by gamma.

    ``independent`` is E(alpha, gamma) with one alpha; ``correlated_bound`` is the mean of E(alpha_i, gamma) over
    positions, which is what E would be if acceptance were the same at every position of a step (fully correlated
    within a step): an upper bound beside the independent estimate (E is convex in alpha).
    """
    if target_logits.shape != draft_logits.shape:
        raise ValueError(
            f"target and draft logits must cover the same positions and vocabulary, got {target_logits.shape} "
            f"and {draft_logits.shape}"
        )
    rates = acceptance_rate_from_logits(target_logits, draft_logits, temperature)
    alpha = float(rates.mean())
    g = np.asarray(list(gammas))
    independent = tokens_per_round(alpha, g)
    correlated = tokens_per_round(rates[:, None], g[None, :]).mean(axis=0)
    return {
        "positions": int(len(rates)),
        "vocab": int(target_logits.shape[1]),
        "temperature": temperature,
        "alpha": alpha,
        "alpha_std": float(rates.std()),
        "alpha_percentiles": {str(q): float(np.percentile(rates, q)) for q in (10, 25, 50, 75, 90)},
        "tokens_per_round": [
            {"gamma": int(k), "independent": float(e), "correlated_bound": float(c)}
            for k, e, c in zip(g, independent, correlated)
        ],
    }
