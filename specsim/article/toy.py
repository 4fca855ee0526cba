"""The article's seeded toy experiments, re-runnable: exactness, tokens per step, re-aligning a draft.

All three use bigram "language models": a V x V matrix whose row x is the
next-token distribution after token x.  They are small enough to know
everything exactly (stationary distribution, marginals, acceptance rates) and
to sample millions of tokens in seconds, which is what makes them checks.

Exactness (article: "Toy runs")
    A 32-token target with N(0, 2^2) logits and a draft whose logits add
    N(0, 1.2^2) noise.  The third generated token of 60,000 speculative
    generations (gamma = 4) is compared with the exact target marginal
    e_start P^3, beside plain target sampling with the same number of draws.

Tokens per step
    Measured tokens per target pass for gamma = 1, 2, 3, 4, 6, 8 against
    E(alpha, gamma) with alpha = sum_x pi(x) sum_y min(P_xy, Q_xy) under the
    target's stationary distribution pi.

Re-aligning a stale draft (article: "Toy run: re-aligning a stale draft")
    A 64-token base target with structured (low-rank plus noise) logits; a
    "fine-tuned" target that adds a strong logit shift on half of the
    contexts; a draft whose logits are a rank-4 factorisation A B, first
    distilled on the base target.  It is re-aligned to the fine-tuned target
    with SFT on sampled text, forward KL, reverse KL, total variation
    (gradient q * (g - <g, q>), g_x = -1[q(x) < p(x)]) and an on-policy TVD
    variant (contexts weighted by the draft's own stationary distribution), and
    each is scored by alpha and E(alpha, 4) under the fine-tuned target's
    stationary distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from specsim.speculation.acceptance import tokens_per_round
from specsim.speculation.sampling import (
    CategoricalTable,
    SpecStep,
    acceptance_rate,
    accepted_prefix_length,
    residual_distribution,
    sample_rows,
    softmax,
    verify,
)

__all__ = [
    "Bigram",
    "exactness",
    "hand_example",
    "realign",
    "tokens_per_step",
    "toy_pair",
]


@dataclass(frozen=True, eq=False)  # identity equality and hashing: cached tables are keyed by the model
class Bigram:
    """A bigram model: ``probs[x]`` is the next-token distribution after token x."""

    probs: np.ndarray

    @cached_property
    def table(self) -> CategoricalTable:
        """Precomputed CDFs of every row, for fast sampling."""
        return CategoricalTable(self.probs)

    @classmethod
    def from_logits(cls, logits: np.ndarray) -> "Bigram":
        return cls(softmax(logits))

    @property
    def vocab(self) -> int:
        return self.probs.shape[0]

    def stationary(self) -> np.ndarray:
        """pi with pi P = pi, sum pi = 1 (solved as a linear system)."""
        v = self.vocab
        system = np.vstack([self.probs.T - np.eye(v), np.ones(v)])
        rhs = np.r_[np.zeros(v), 1.0]
        pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
        return np.clip(pi, 0.0, None) / np.clip(pi, 0.0, None).sum()

    def marginal(self, start: int, steps: int) -> np.ndarray:
        """Exact distribution of the token ``steps`` positions after ``start``."""
        dist = np.zeros(self.vocab)
        dist[start] = 1.0
        for _ in range(steps):
            dist = dist @ self.probs
        return dist

    def sample(self, context: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One next token per context token."""
        return self.table.sample(context, rng)


def stationary_alpha(target: Bigram, draft: Bigram) -> float:
    """alpha = sum_x pi(x) sum_y min(P_xy, Q_xy) under the target's stationary pi."""
    return float(target.stationary() @ acceptance_rate(target.probs, draft.probs))


def toy_pair(seed: int = 0, vocab: int = 32, target_std: float = 2.0, noise_std: float = 1.2) -> tuple[Bigram, Bigram]:
    """The article's exactness pair: N(0, 2^2) target logits, draft = target + N(0, 1.2^2)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, target_std, (vocab, vocab))
    return Bigram.from_logits(logits), Bigram.from_logits(logits + rng.normal(0.0, noise_std, (vocab, vocab)))


@lru_cache(maxsize=8)
def _final_table(target: Bigram, draft: Bigram) -> CategoricalTable:
    """Rows 0..V-1: the target's rows (bonus token); rows V..2V-1: residuals max(0, p - q), normalised."""
    return CategoricalTable(np.vstack([target.probs, residual_distribution(target.probs, draft.probs)]))


def speculative_step_bigram(
    target: Bigram, draft: Bigram, context: np.ndarray, gamma: int, rng: np.random.Generator
) -> SpecStep:
    """Draft gamma tokens from ``context`` with the draft, verify them with the target.

    The same rule as :func:`specsim.speculation.sampling.verify`, specialised to bigrams:
    a residual depends only on the context token, so residual and bonus
    distributions are precomputed tables and only p(x), q(x) of the drafted
    tokens are gathered.
    """
    n = len(context)
    prefix = np.empty((n, gamma + 1), dtype=np.int64)  # the token before each scored position
    prefix[:, 0] = context
    for i in range(gamma):  # the only loop: over draft positions
        prefix[:, i + 1] = draft.sample(prefix[:, i], rng)
    ctx, drafted = prefix[:, :gamma], prefix[:, 1:]
    num_accepted = accepted_prefix_length(target.probs[ctx, drafted], draft.probs[ctx, drafted], rng)
    stop_context = prefix[np.arange(n), num_accepted]
    rejected = num_accepted < gamma
    last = _final_table(target, draft).sample(stop_context + rejected * target.vocab, rng)
    tokens = np.where(np.arange(gamma)[None, :] < num_accepted[:, None], drafted, -1)
    tokens = np.concatenate([tokens, np.full((n, 1), -1)], axis=1)
    tokens[np.arange(n), num_accepted] = last
    return SpecStep(tokens, num_accepted)


def _tv(a: np.ndarray, b: np.ndarray) -> float:
    return float(0.5 * np.abs(a - b).sum())


def _chi_square_p(counts: np.ndarray, expected_probs: np.ndarray) -> float:
    """Goodness-of-fit p-value, pooling categories with expected count below 5."""
    from scipy.stats import chisquare

    n = counts.sum()
    order = np.argsort(expected_probs)
    exp_counts, obs = expected_probs[order] * n, counts[order]
    small = np.cumsum(exp_counts) < 5.0
    if small.any():
        k = int(small.sum()) + 1
        exp_counts = np.r_[exp_counts[:k].sum(), exp_counts[k:]]
        obs = np.r_[obs[:k].sum(), obs[k:]]
    keep = exp_counts > 0
    return float(chisquare(obs[keep], exp_counts[keep] * obs[keep].sum() / exp_counts[keep].sum()).pvalue)


def hand_example(samples: int = 200_000, seed: int = 0) -> dict[str, Any]:
    """p = (0.6, 0.3, 0.1), q = (0.3, 0.6, 0.1): exact enumeration and Monte Carlo.

    >>> r = hand_example(samples=1000)
    >>> r["beta"], r["accept_b"], r["residual"], r["exact_output"]
    (0.7, 0.5, [1.0, 0.0, 0.0], [0.6, 0.3, 0.1])
    """
    from specsim.speculation.sampling import output_distribution, residual_distribution

    p = np.array([0.6, 0.3, 0.1])
    q = np.array([0.3, 0.6, 0.1])
    rng = np.random.default_rng(seed)
    drafted = sample_rows(np.tile(q, (samples, 1)), rng)[:, None]
    step = verify(drafted, np.tile(q, (samples, 1, 1)), np.tile(p, (samples, 2, 1)), rng)
    first = step.tokens[:, 0]
    counts = np.bincount(first, minlength=3)
    return {
        "target": p.tolist(),
        "draft": q.tolist(),
        "beta": round(float(acceptance_rate(p, q)), 12),
        "accept_b": round(float(min(1.0, p[1] / q[1])), 12),
        "residual": residual_distribution(p, q).round(12).tolist(),
        "exact_output": output_distribution(p, q).round(12).tolist(),
        "samples": samples,
        "mc_output": (counts / samples).tolist(),
        "mc_acceptance": float(step.num_accepted.mean()),
        "mc_tv": _tv(counts / samples, p),
        "mc_chi2_p": _chi_square_p(counts, p),
    }


def exactness(seed: int = 0, generations: int = 60_000, gamma: int = 4, position: int = 3) -> dict[str, Any]:
    """Distribution of the ``position``-th generated token: speculative vs plain sampling vs exact."""
    target, draft = toy_pair(seed)
    rng = np.random.default_rng(seed + 1)
    start = 0
    exact = target.marginal(start, position)

    # Speculative generation until every sequence has `position` tokens.
    out = np.full((generations, position + gamma + 1), -1, dtype=np.int64)
    filled = np.zeros(generations, dtype=np.int64)
    context = np.full(generations, start, dtype=np.int64)
    steps = 0
    while filled.min() < position:
        active = np.flatnonzero(filled < position)
        step = speculative_step_bigram(target, draft, context[active], gamma, rng)
        steps += 1
        for j in range(gamma + 1):  # scatter emitted tokens (loop over positions only)
            has = step.tokens[:, j] >= 0
            out[active[has], filled[active[has]] + j] = step.tokens[has, j]
        filled[active] += step.num_emitted
        context[active] = step.tokens[np.arange(len(active)), step.num_accepted]
    spec_counts = np.bincount(out[:, position - 1], minlength=target.vocab)

    plain = np.full(generations, start, dtype=np.int64)
    for _ in range(position):
        plain = target.sample(plain, rng)
    plain_counts = np.bincount(plain, minlength=target.vocab)
    return {
        "seed": seed,
        "vocab": target.vocab,
        "gamma": gamma,
        "generations": generations,
        "position": position,
        "alpha_stationary": stationary_alpha(target, draft),
        "tv_speculative": _tv(spec_counts / generations, exact),
        "tv_plain": _tv(plain_counts / generations, exact),
        "chi2_p_speculative": _chi_square_p(spec_counts, exact),
        "chi2_p_plain": _chi_square_p(plain_counts, exact),
        # Sampling noise: E[TV] of an exact multinomial sample of this size, by the normal approximation.
        "tv_noise_level": float(0.5 * np.sqrt(2.0 / np.pi) * np.sqrt(exact * (1 - exact) / generations).sum()),
    }


def tokens_per_step(
    seed: int = 0, gammas: tuple[int, ...] = (1, 2, 3, 4, 6, 8), sequences: int = 20_000, steps: int = 40
) -> dict[str, Any]:
    """Measured tokens per target pass beside E(alpha, gamma) with the stationary alpha."""
    target, draft = toy_pair(seed)
    alpha = stationary_alpha(target, draft)
    rng = np.random.default_rng(seed + 2)
    rows = []
    for gamma in gammas:
        context = sample_rows(np.tile(target.stationary(), (sequences, 1)), rng)
        emitted = 0
        for _ in range(steps):
            step = speculative_step_bigram(target, draft, context, gamma, rng)
            emitted += int(step.num_emitted.sum())
            context = step.tokens[np.arange(sequences), step.num_accepted]
        measured = emitted / (sequences * steps)
        formula = float(tokens_per_round(alpha, gamma))
        rows.append(
            {
                "gamma": gamma,
                "measured": measured,
                "formula": formula,
                "relative_error": measured / formula - 1.0,
                "passes": sequences * steps,
            }
        )
    return {"seed": seed, "alpha_stationary": alpha, "rows": rows}


# -- re-aligning a stale draft -----------------------------------------------------------------
@dataclass(frozen=True)
class _RealignSetup:
    base: Bigram
    finetuned: Bigram
    domain: np.ndarray


def realign_setup(
    seed: int = 0, vocab: int = 64, shift: float = 2.5, noise: float = 1.0, base_rank: int = 8
) -> _RealignSetup:
    """Base target with structured logits; the fine-tune shifts half of the contexts.

    Base logits: a rank-``base_rank`` product (entries of standard deviation
    about 2) plus N(0, noise^2), so that a rank-4 draft cannot match it
    exactly.  The fine-tune adds ``shift`` times one random direction to the
    logits of a random half of the contexts (its domain).
    """
    rng = np.random.default_rng(seed)
    base_logits = 2.0 * rng.normal(size=(vocab, base_rank)) @ rng.normal(size=(base_rank, vocab)) / np.sqrt(base_rank)
    base_logits += rng.normal(0.0, noise, (vocab, vocab))
    domain = rng.permutation(vocab)[: vocab // 2]
    direction = rng.normal(size=vocab)
    ft_logits = base_logits.copy()
    ft_logits[domain] += shift * direction  # the fine-tune's domain: one strong shift on half the contexts
    return _RealignSetup(Bigram.from_logits(base_logits), Bigram.from_logits(ft_logits), np.sort(domain))


def _grad_logits(kind: str, target: np.ndarray, q: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Gradient of the weighted per-context objective with respect to the draft's logits."""
    if kind in ("fkl", "sft"):  # sum_x w_x KL(p_x || q_x): q - p
        g = q - target
    elif kind == "rkl":  # sum_x w_x KL(q_x || p_x)
        log_ratio = np.log(np.clip(q, 1e-300, None)) - np.log(np.clip(target, 1e-300, None))
        g = q * (log_ratio - (q * log_ratio).sum(axis=1, keepdims=True))
    elif kind == "tvd":  # sum_x w_x TV(p_x, q_x): q * (g - <g, q>), g = -1[q < p]
        ind = -(q < target).astype(float)
        g = q * (ind - (ind * q).sum(axis=1, keepdims=True))
    else:
        raise ValueError(f"unknown objective {kind!r}")
    return weights[:, None] * g


def _train(
    kind: str,
    target: Bigram,
    a: np.ndarray,
    b: np.ndarray,
    *,
    steps: int,
    lr: float,
    weights: np.ndarray | None = None,
    target_rows: np.ndarray | None = None,
    on_policy: bool = False,
):
    """Adam on the rank-r factors A, B of the draft's logits."""
    a, b = a.copy(), b.copy()
    moments = [np.zeros_like(a), np.zeros_like(b), np.zeros_like(a), np.zeros_like(b)]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    rows = target.probs if target_rows is None else target_rows
    w = target.stationary() if weights is None else weights
    for t in range(1, steps + 1):
        # Linear decay to lr / 30: the TV objective is piecewise smooth and needs small final steps to settle.
        step_lr = lr * (1.0 - (1.0 - 1.0 / 30.0) * (t - 1) / max(steps - 1, 1))
        q = softmax(a @ b)
        if on_policy:
            w = Bigram(q).stationary()  # contexts the draft itself visits
        g = _grad_logits(kind, rows, q, w)
        grads = (g @ b.T, a.T @ g)
        for i, (param, grad) in enumerate(zip((a, b), grads)):
            m, v = moments[i], moments[i + 2]
            m *= beta1
            m += (1 - beta1) * grad
            v *= beta2
            v += (1 - beta2) * grad**2
            param -= step_lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return a, b


def realign(
    seed: int = 0, rank: int = 4, steps: int = 3000, lr: float = 0.2, sft_tokens: int = 20_000, **setup_kw: Any
) -> dict[str, Any]:
    """Score a stale draft and drafts re-aligned with each objective on the fine-tuned target.

    Every objective trains the same rank-``rank`` factors from the same stale
    draft with the same optimiser (Adam, ``steps`` steps, learning rate
    ``lr`` decaying linearly to lr / 30).  SFT fits next-token frequencies of
    ``sft_tokens`` tokens sampled from the fine-tuned target.  The TV objective
    is non-smooth and its gradient vanishes on tokens the draft gives almost no
    mass, so its result depends more on the seed than the KL objectives' do.

    The answer is kept per process for its arguments (every draw comes from ``seed``: the same arguments give the
    same numbers), and each call returns its own copy: the six trainings take about 5 s, and the test suite asked
    for seed 0 twice on one worker (the toy tests and the docs' ``specsim toy distill``).
    """
    import copy

    return copy.deepcopy(_realign(seed, rank, steps, lr, sft_tokens, tuple(sorted(setup_kw.items()))))


@lru_cache(maxsize=4, typed=True)
def _realign(seed: int, rank: int, steps: int, lr: float, sft_tokens: int, setup_items: tuple) -> dict[str, Any]:
    """:func:`realign`'s answer for its arguments (``setup_items``: :func:`realign_setup`'s keywords, sorted)."""
    setup = realign_setup(seed, **dict(setup_items))
    rng = np.random.default_rng(seed + 3)
    v = setup.base.vocab
    a0 = rng.normal(0.0, 0.1, (v, rank))
    b0 = rng.normal(0.0, 0.1, (rank, v))
    stale_a, stale_b = _train("fkl", setup.base, a0, b0, steps=steps, lr=lr)

    # SFT data: text sampled from the fine-tuned target, 100 documents started from its stationary distribution.
    docs = 100
    text = np.empty((docs, max(sft_tokens // docs, 2)), dtype=np.int64)
    text[:, 0] = sample_rows(np.tile(setup.finetuned.stationary(), (docs, 1)), rng)
    for i in range(1, text.shape[1]):
        text[:, i] = setup.finetuned.sample(text[:, i - 1], rng)
    counts = np.zeros((v, v))
    np.add.at(counts, (text[:, :-1].ravel(), text[:, 1:].ravel()), 1.0)
    seen = counts.sum(axis=1)
    empirical = np.where(seen[:, None] > 0, counts / np.maximum(seen[:, None], 1.0), 1.0 / v)

    pi_ft = setup.finetuned.stationary()

    def score(name: str, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
        q = softmax(a @ b)
        alpha = float(pi_ft @ acceptance_rate(setup.finetuned.probs, q))
        greedy = float(pi_ft @ (np.argmax(q, axis=1) == np.argmax(setup.finetuned.probs, axis=1)))
        return {
            "draft": name,
            "alpha": alpha,
            "tokens_per_step_gamma4": float(tokens_per_round(alpha, 4)),
            "greedy_agreement": greedy,
        }

    rows = [score("stale (distilled on base)", stale_a, stale_b)]
    runs = {
        "SFT on sampled text": dict(kind="sft", target_rows=empirical, weights=seen / seen.sum()),
        "forward KL": dict(kind="fkl"),
        "reverse KL": dict(kind="rkl"),
        "total variation (TVD)": dict(kind="tvd"),
        "TVD, on-policy contexts": dict(kind="tvd", on_policy=True),
    }
    for name, kw in runs.items():
        kind = kw.pop("kind")
        a, b = _train(kind, setup.finetuned, stale_a, stale_b, steps=steps, lr=lr, **kw)
        rows.append(score(name, a, b))
    return {"seed": seed, "vocab": v, "rank": rank, "steps": steps, "sft_tokens": sft_tokens, "rows": rows}
