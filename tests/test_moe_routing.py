"""Issue 29: MoE expert reads of a pass whose sequences' tokens route alike (routing correlation rho).

A draft token repeats a share rho of the previous token's experts in its sequence and draws the rest afresh;
specsim's closed form treats a sequence's q tokens as 1 + (q - 1)(1 - rho) independent ones.  Checked against a
Monte Carlo of that process; rho = 0 is independent routing, the bound; a decode step is the same either way.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from specsim.describe.hardware import load_hardware
from specsim.describe.models import FITTED_ROUTING_CORRELATION, get_model
from specsim.timing.roofline import step_time

H200 = load_hardware("h200")


def _simulate(experts, k, batch, q, rho, rng, draws=1500):
    counts = np.empty(draws)
    for d in range(draws):
        hit = np.zeros(experts, bool)
        for _ in range(batch):
            prev = rng.choice(experts, k, replace=False)
            hit[prev] = True
            for _ in range(1, q):
                keep = prev[rng.random(k) < rho]
                new = rng.choice(np.setdiff1d(np.arange(experts), keep), k - keep.size, replace=False)
                prev = np.concatenate([keep, new])
                hit[prev] = True
        counts[d] = hit.sum()
    return counts.mean()


@pytest.mark.parametrize(
    "experts, k, batch, q, rho",
    [(128, 8, 1, 4, 0.2), (128, 8, 4, 4, 0.5), (384, 8, 4, 4, 0.5), (256, 8, 1, 16, 0.5), (128, 8, 2, 8, 0.8)],
)
def test_the_closed_form_matches_a_monte_carlo_of_correlated_routing(experts, k, batch, q, rho):
    # 1,500 draws: the mean's standard error is below 0.15 experts (0.3% of the smallest mean, 25); the closed form
    # is an approximation of the process within 0.7% of it (measured with 2,000 draws per case), so a 2% tolerance
    # leaves more than 4 standard errors (false-failure rate below 1e-5; the seed makes the run deterministic anyway).
    m = dataclasses.replace(get_model("qwen3-30b-a3b"), n_experts=experts, n_active_experts=k, routing_correlation=rho)
    simulated = _simulate(experts, k, batch, q, rho, np.random.default_rng(29))
    assert float(m.experts_touched(batch * q, q)) == pytest.approx(simulated, rel=0.02)


def test_independent_routing_is_the_bound_and_decode_is_unchanged():
    independent = get_model("kimi-k2", routing_correlation=0.0)
    tokens, q = np.array([4.0, 16.0, 64.0, 256.0]), 4.0
    previous = independent.experts_touched(tokens, q)
    assert np.array_equal(previous, independent.experts_touched(tokens))  # rho 0: the per-token formula of before
    for rho in (0.2, 0.5, 0.9):
        alike = get_model("kimi-k2", routing_correlation=rho)
        now = alike.experts_touched(tokens, q)
        assert np.all(now < previous)  # fewer than the bound, and fewer as rho grows
        assert np.array_equal(alike.experts_touched(tokens[:3], 1.0), independent.experts_touched(tokens[:3]))
        previous = now


def test_models_read_route_independently_by_default_and_take_the_fitted_correlation_on_request():
    # The bound is the default (the engine presets' host terms were fitted with it); the fitted 0.2 is applied on request.
    assert FITTED_ROUTING_CORRELATION == 0.2
    for name in ("qwen3-30b-a3b", "kimi-k2", "qwen3.5-35b-a3b", "llama-4-maverick", "minimax-m2.5"):
        assert get_model(name).routing_correlation == 0.0
        assert get_model(name, routing_correlation=FITTED_ROUTING_CORRELATION).routing_correlation == 0.2
    assert get_model("llama-3.1-8b").routing_correlation == 0.0 and get_model("qwen3.5-27b").routing_correlation == 0.0


@pytest.mark.parametrize(
    "value, message",
    [
        (1.0, r"routing_correlation must be a number in \[0, 1\), got 1.0"),
        (-0.1, r"routing_correlation must be a number in \[0, 1\)"),
        (True, r"routing_correlation must be a number in \[0, 1\), got True"),
    ],
)
def test_bad_correlations_are_refused(value, message):
    with pytest.raises(ValueError, match=message):
        get_model("qwen3-30b-a3b", routing_correlation=value)
    with pytest.raises(ValueError, match="applies to routed experts; the model has none"):
        get_model("llama-3.1-8b", routing_correlation=0.3)
    with pytest.raises(ValueError, match="routing_effective_experts applies to routed experts; the model has none"):
        get_model("llama-3.1-8b", routing_effective_experts=0)  # not "(0..0), got 0", which 0 lies in


def test_a_correlated_verification_pass_reads_fewer_expert_bytes_and_costs_less_relative_to_decode():
    uniform, alike = (
        get_model("qwen3-30b-a3b"),
        get_model("qwen3-30b-a3b", routing_correlation=FITTED_ROUTING_CORRELATION),
    )
    b = np.array([4.0, 16.0])
    for q in (1.0, 4.0):
        bu, ba = step_time(H200, uniform, b, q, 1128).bytes, step_time(H200, alike, b, q, 1128).bytes
        assert np.all(ba < bu) if q > 1 else np.array_equal(ba, bu)
    ratio = {
        name: step_time(H200, m, 16, 4, 1128).total_s / step_time(H200, m, 16, 1, 1128).total_s
        for name, m in (("uniform", uniform), ("alike", alike))
    }
    assert ratio["alike"] < ratio["uniform"]


def test_the_kernel_source_reprices_a_correlated_pass_from_the_balanced_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    from specsim.timing.kernels import KernelSource

    src = KernelSource(H200)
    uniform, alike = (
        get_model("qwen3-30b-a3b", routing_correlation=0.0),
        get_model("qwen3-30b-a3b", routing_correlation=0.5),
    )
    b, q = np.array([1.0, 16.0]), np.array([[1.0], [4.0]])
    tu, ta = src.step_time(uniform, b, q, 1128).total_s, src.step_time(alike, b, q, 1128).total_s
    assert np.array_equal(tu[0], ta[0])  # decode steps: one token per sequence, nothing to repeat
    assert np.all(ta[1] < tu[1])  # a 4-token verification reads fewer experts
    table = src.table(alike)
    assert table.moe_m.size >= 2 and float(src._correlated_experts(src.table(uniform), uniform, b, 4.0)[1]) == 0.0
