"""The acceptance rule: exactness against closed forms, by enumeration and by Monte Carlo.

Monte Carlo checks use fixed seeds and chi-square goodness-of-fit tests at
significance 1e-4: with a correct sampler a test fails with probability 1e-4
for a given seed (the seeds are fixed, so a pass is reproducible).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from specsim.speculation.sampling import (
    acceptance_rate,
    acceptance_rate_from_logits,
    output_distribution,
    residual_distribution,
    sample_rows,
    softmax,
    verify,
)

SIGNIFICANCE = 1e-4


def dirichlet_pairs(rng, n, vocab, concentration=0.5):
    return rng.dirichlet(np.full(vocab, concentration), n), rng.dirichlet(np.full(vocab, concentration), n)


def test_hand_example_exactly():
    # Article: p = (0.6, 0.3, 0.1), q = (0.3, 0.6, 0.1): beta = 0.7, B accepted with probability 0.5,
    # residual "always A", output exactly p.
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])
    assert float(acceptance_rate(p, q)) == pytest.approx(0.7, abs=1e-15)
    np.testing.assert_array_equal(residual_distribution(p, q), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(output_distribution(p, q), p, atol=1e-15)


def test_hand_example_by_monte_carlo():
    rng = np.random.default_rng(7)
    n = 300_000
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.6, 0.1])
    drafted = sample_rows(np.tile(q, (n, 1)), rng)[:, None]
    step = verify(drafted, np.tile(q, (n, 1, 1)), np.tile(p, (n, 2, 1)), rng)
    counts = np.bincount(step.tokens[:, 0], minlength=3)
    assert chisquare(counts, p * n).pvalue > SIGNIFICANCE
    # Acceptance of a drafted B is 0.5: binomial, 4 standard errors.
    was_b = drafted[:, 0] == 1
    rate = step.num_accepted[was_b].mean()
    assert abs(rate - 0.5) < 4 * np.sqrt(0.25 / was_b.sum())


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**32 - 1))
def test_output_distribution_is_the_target_for_any_draft(vocab, seed):
    rng = np.random.default_rng(seed)
    p, q = dirichlet_pairs(rng, 1, vocab)
    np.testing.assert_allclose(output_distribution(p[0], q[0]), p[0], atol=1e-12)
    assert float(acceptance_rate(p[0], q[0])) == pytest.approx(1.0 - 0.5 * np.abs(p[0] - q[0]).sum(), abs=1e-12)


def context_free_chain(seed, n, gamma, vocab):
    """Fixed per-position distributions p_i, q_i; the draft samples, verify decides."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(vocab), gamma + 1)
    q = rng.dirichlet(np.ones(vocab), gamma)
    drafted = np.stack([sample_rows(np.tile(q[i], (n, 1)), rng) for i in range(gamma)], axis=1)
    step = verify(drafted, np.broadcast_to(q, (n, gamma, vocab)), np.broadcast_to(p, (n, gamma + 1, vocab)), rng)
    return p, q, step


def test_every_emitted_position_is_distributed_as_the_target():
    # A chain of gamma = 3 positions with fixed (context-free) p_i and q_i: whatever was accepted before,
    # the token emitted at position i is drawn from p_i.  Check position 0 and the bonus/residual mix.
    vocab = 6
    p, q, step = context_free_chain(11, 200_000, 3, vocab)
    for i in range(len(p)):
        reached = step.tokens[:, i] >= 0
        if i > 0:
            # Position i is emitted only if positions < i were accepted; given that, it is still p_i.
            reached &= step.num_accepted >= i
        counts = np.bincount(step.tokens[reached, i], minlength=vocab)
        assert chisquare(counts, p[i] * reached.sum()).pvalue > SIGNIFICANCE, i


def test_accepted_counts_follow_the_product_of_betas():
    n, gamma = 200_000, 4
    p, q, step = context_free_chain(5, n, gamma, 8)
    betas = acceptance_rate(p[:gamma], q)
    expected = 1.0 + np.cumprod(betas).sum()
    sd = step.num_emitted.std()
    assert abs(step.num_emitted.mean() - expected) < 4 * sd / np.sqrt(n)


def test_greedy_emits_the_target_argmax_chain():
    rng = np.random.default_rng(3)
    n, gamma, vocab = 1000, 4, 10
    p = rng.dirichlet(np.ones(vocab), (n, gamma + 1))
    q = rng.dirichlet(np.ones(vocab), (n, gamma))
    drafted = np.argmax(q, axis=-1)
    drafted[::2] = np.argmax(p[::2, :gamma], axis=-1)  # half of the drafts agree with the target
    step = verify(drafted, q, p, rng, greedy=True)
    target_argmax = np.argmax(p, axis=-1)
    for row in range(n):
        k = step.num_accepted[row]
        assert np.array_equal(step.tokens[row, : k + 1], target_argmax[row, : k + 1])
        assert np.all(step.tokens[row, k + 1 :] == -1)
    assert np.all(step.num_accepted[::2] == gamma)


def test_verify_rejects_mismatched_shapes():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="shapes disagree"):
        verify(np.zeros((2, 3), int), np.full((2, 3, 4), 0.25), np.full((2, 3, 4), 0.25), rng)


def test_acceptance_from_logits_matches_probabilities_and_temperature():
    rng = np.random.default_rng(1)
    t, d = rng.normal(size=(50, 20)), rng.normal(size=(50, 20))
    np.testing.assert_allclose(
        acceptance_rate_from_logits(t, d, 0.7), acceptance_rate(softmax(t, 0.7), softmax(d, 0.7))
    )
    greedy = acceptance_rate_from_logits(t, d, 0.0)
    np.testing.assert_array_equal(greedy, (t.argmax(1) == d.argmax(1)).astype(float))
    assert np.all(acceptance_rate_from_logits(t, t, 1.3) == pytest.approx(1.0))


def test_softmax_rejects_negative_temperature():
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        softmax(np.zeros(3), -1.0)


def test_identical_distributions_accept_with_probability_exactly_one():
    # sum(min(p, q)) of a distribution with itself rounds to 1 + 2e-16 for some vectors; it is clamped to 1.
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(1000), size=50)
    alpha = acceptance_rate(p, p)
    assert np.all(alpha <= 1.0) and np.allclose(alpha, 1.0)


def test_softmax_normalises_each_row_on_its_own():
    logits = np.array([[0.0, np.log(3.0), -1e9], [2.0, 0.0, 0.0]])
    probs = softmax(logits)
    np.testing.assert_allclose(probs[0], [0.25, 0.75, 0.0], atol=1e-12)
    np.testing.assert_allclose(probs[1], np.exp([2.0, 0.0, 0.0]) / np.exp([2.0, 0.0, 0.0]).sum(), rtol=1e-12)
    np.testing.assert_allclose(softmax(logits, temperature=0.5)[1], softmax(logits[1] * 2.0), rtol=1e-12)
    assert softmax(np.array([[1.0, 2.0], [3.0, 0.0]]), temperature=0).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert softmax(np.array([[1, 2]]), temperature=1).dtype == np.float64  # integer logits become floats


def test_output_distribution_is_the_target_row_by_row_even_where_the_draft_has_no_mass():
    p = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])
    q = np.array([[0.0, 0.5, 0.5], [0.7, 0.2, 0.1]])
    np.testing.assert_allclose(output_distribution(p, q), p, atol=1e-12)


def test_verify_exact_outcomes_greedy_and_certain():
    # Greedy: accept while the drafted token is the target's argmax, then emit the target's argmax.
    p = np.array([[[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], [[0.6, 0.4], [0.1, 0.9], [0.5, 0.5]]])
    q = np.full((2, 2, 2), 0.5)
    step = verify(np.array([[1, 0], [1, 1]]), q, p, np.random.default_rng(0), greedy=True)
    assert step.num_accepted.tolist() == [2, 0]
    assert step.tokens.tolist() == [[1, 0, 1], [0, -1, -1]] and step.tokens.dtype == np.int64
    # Sampling with a one-hot target: a drafted token the target rules out is always rejected and replaced.
    one_hot = np.tile(np.array([0.0, 0.0, 1.0]), (3, 3, 1))
    draft = np.tile(np.array([0.5, 0.0, 0.5]), (3, 2, 1))
    step = verify(np.array([[2, 2], [0, 2], [2, 0]]), draft, one_hot, np.random.default_rng(1))
    assert step.num_accepted.tolist() == [2, 0, 1]
    assert step.tokens.tolist() == [[2, 2, 2], [2, -1, -1], [2, 2, -1]]
    # gamma = 0: one token straight from the target.
    zero = verify(np.zeros((2, 0), dtype=int), np.zeros((2, 0, 3)), one_hot[:2, :1], np.random.default_rng(2))
    assert zero.tokens.tolist() == [[2], [2]] and zero.num_accepted.tolist() == [0, 0]


def test_categorical_table_refuses_what_is_not_a_table():
    from specsim.speculation.sampling import CategoricalTable

    for bad in (np.array([0.5, 0.5]), np.array([[0.5, -0.1], [0.5, 0.5]]), np.array([[0.0, 0.0], [0.5, 0.5]])):
        with pytest.raises(
            ValueError, match="^a categorical table needs a 2-D array of non-negative rows with positive sums$"
        ):
            CategoricalTable(bad)


def test_sample_rows_handles_unnormalised_rows_per_row():
    # Rows [1, 3] and [3, 1] (unnormalised): frequencies within 5 standard errors of 1/4 and 3/4
    # (false-failure probability below 1e-6 per check).
    rng = np.random.default_rng(11)
    n = 200_000
    probs = np.tile(np.array([[[1.0, 3.0], [3.0, 1.0]]]), (n, 1, 1))
    draws = sample_rows(probs, rng)
    se = np.sqrt(0.25 * 0.75 / n)
    assert abs(draws[:, 0].mean() - 0.75) < 5 * se and abs(draws[:, 1].mean() - 0.25) < 5 * se
    assert sample_rows(np.array([[0.0, 0.0, 2.0], [0.0, 5.0, 0.0]]), rng).tolist() == [2, 1]


def test_load_logits_reads_numbers_and_refuses_the_rest(tmp_path):
    from specsim.speculation.sampling import load_logits

    np.save(tmp_path / "int.npy", np.array([[1, 2], [3, 4]], dtype=np.int32))
    out = load_logits(str(tmp_path / "int.npy"), "target logits")
    assert out.dtype == np.float64 and out.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # integer logits are read as floats
    np.save(tmp_path / "str.npy", np.array([["a", "b"]]))
    with pytest.raises(ValueError, match=r"^target logits must be numeric, got dtype <U1$"):
        load_logits(str(tmp_path / "str.npy"), "target logits")
    np.save(tmp_path / "bool.npy", np.array([[True, False]]))
    with pytest.raises(ValueError, match=r"^draft logits must be numeric, got dtype bool$"):
        load_logits(str(tmp_path / "bool.npy"), "draft logits")
    np.save(tmp_path / "inf.npy", np.array([[0.0, np.inf, np.nan, 1.0]]))
    with pytest.raises(
        ValueError, match=r"^draft logits holds NaN or \+infinite values \(2 of 4\); -inf masks a token$"
    ):
        load_logits(str(tmp_path / "inf.npy"), "draft logits")
    # -inf is a masked token (vocabulary padding, top-k filtering): probability 0, read (it was refused as infinite)
    np.save(tmp_path / "masked.npy", np.array([[0.0, -np.inf, 1.0], [2.0, 0.0, -np.inf]]))
    probs = softmax(load_logits(str(tmp_path / "masked.npy"), "target logits"))
    assert probs[0, 1] == 0.0 and probs[1, 2] == 0.0 and np.allclose(probs.sum(axis=-1), 1.0)
    np.save(tmp_path / "none.npy", np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match=r"masks every token \(-inf\) at 1 position\(s\)"):
        load_logits(str(tmp_path / "none.npy"), "target logits")
    with pytest.raises(ValueError, match=r"^draft logits file '.*missing.npy' does not exist$"):
        load_logits(str(tmp_path / "missing.npy"), "draft logits")


def test_softmax_is_stable_for_large_logits_row_by_row():
    probs = softmax(np.array([[1000.0, 1001.0], [0.0, -1000.0], [5.0, 5.0]]))
    assert np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs[0], [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-12)
    np.testing.assert_allclose(probs[1], [1.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(probs[2], [0.5, 0.5])


def test_residual_of_identical_distributions_is_the_target():
    p = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(residual_distribution(p, p), p)


def test_categorical_table_normalises_unnormalised_rows():
    from specsim.speculation.sampling import CategoricalTable

    table = CategoricalTable(np.array([[1.0, 3.0], [30.0, 10.0]]))
    rng = np.random.default_rng(5)
    n = 100_000
    se = np.sqrt(0.25 * 0.75 / n)  # 5 standard errors: false-failure probability below 1e-6 per check
    assert abs(table.sample(np.zeros(n, int), rng).mean() - 0.75) < 5 * se
    assert abs(table.sample(np.ones(n, int), rng).mean() - 0.25) < 5 * se
