"""Memory capacity and throughput: hand-checked budgets, and the tables' internal consistency."""

from __future__ import annotations

import numpy as np
import pytest

from specsim.serving.capacity import capacity, throughput_table
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma


def test_8b_with_1b_draft_at_8192_tokens_by_hand():
    # By hand: usable 0.9 * 85,520,809,984 bytes (81,559 MiB, the H100's memory as nvidia-smi reports it); weights
    # 8,030,261,248 * 2 and 1,235,814,400 * 2 bytes;
    # KV per sequence 131,072 * 8192 (target) and 32,768 * 8192 (draft) bytes.
    cap = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b"), 8192)
    usable = 0.9 * 81_559 * 2**20
    w_t, w_d = 8_030_261_248 * 2, 1_235_814_400 * 2
    assert cap.max_batch_without_draft == int((usable - w_t) // (131_072 * 8192)) == 56
    assert cap.max_batch_with_draft == int((usable - w_t - w_d) // ((131_072 + 32_768) * 8192)) == 43


def test_70b_does_not_fit_on_one_h100_in_bf16_but_fp8_does():
    dep = Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b")
    cap = capacity(dep, 1128)
    assert not cap.target_fits and cap.max_batch_without_draft == 0 and cap.max_batch_with_draft == 0
    import dataclasses

    fp8 = Deployment(dep.hardware, dataclasses.replace(dep.target, weight_dtype="fp8"), dep.draft)
    assert capacity(fp8, 1128).target_fits


def test_draft_always_costs_batch_capacity():
    for hw in ("h100-sxm", "h200", "a100-sxm-80gb", "l40s"):
        cap = capacity(Deployment.build(hw), 4096)
        assert cap.max_batch_with_draft < cap.max_batch_without_draft


def test_capacity_rejects_bad_inputs():
    dep = Deployment.build()
    with pytest.raises(ValueError, match="memory utilization"):
        capacity(dep, 1024, 1.5)
    with pytest.raises(ValueError, match="context must be an integer >= 1"):
        capacity(dep, 0)


def test_throughput_table_is_consistent_with_the_speedup_model():
    dep = Deployment.build()
    t = throughput_table(dep, 0.8, [1, 16, 128, 512], 1128)
    np.testing.assert_allclose(t.speedup, t.latency_plain_s / t.latency_spec_s)
    np.testing.assert_allclose(t.tokens_per_s_spec, t.batch / t.latency_spec_s)
    best = optimal_gamma(dep, 0.8, [1, 16, 128, 512], 1128)
    np.testing.assert_allclose(t.speedup, best.speedup, rtol=1e-12)
    assert t.gamma.tolist() == best.gamma.tolist()


def test_fixed_gamma_costs_throughput_at_high_batch_and_gains_at_low_batch():
    dep = Deployment.build()
    t = throughput_table(dep, 0.8, [1, 800], 128, gamma=4)
    assert t.tokens_per_s_spec.iloc[0] > t.tokens_per_s_plain.iloc[0]
    assert t.tokens_per_s_spec.iloc[1] < t.tokens_per_s_plain.iloc[1]


def test_fit_flags_follow_capacity():
    dep = Deployment.build()
    cap = capacity(dep, 8192)
    t = throughput_table(
        dep,
        0.8,
        [cap.max_batch_with_draft, cap.max_batch_with_draft + 1, cap.max_batch_without_draft + 1],
        1128,
        max_context=8192,
    )
    assert t.fits_with_draft.tolist() == [True, False, False]
    assert t.fits_without_draft.tolist() == [True, True, False]


def test_max_context_below_the_mean_context_is_refused(capsys):
    from specsim.cli.main import main

    assert main(["optimal-gamma", "--context", "4096", "--max-context", "1024", "--timing", "roofline"]) == 2
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1 and "--max-context (1024) must be at least the mean --context (4096)" in err
    )


def test_capacity_to_dict_is_every_field_under_its_own_name():
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    cap = capacity(Deployment.build(), 8192)
    fields = [
        "memory_bytes",
        "usable_bytes",
        "target_weight_bytes",
        "draft_weight_bytes",
        "target_kv_bytes_per_seq",
        "draft_kv_bytes_per_seq",
        "context_tokens",
        "gpus",
        "target_fits",
        "both_fit",
        "max_batch_without_draft",
        "max_batch_with_draft",
    ]
    assert cap.to_dict() == {name: getattr(cap, name) for name in fields}


def test_throughput_table_columns_are_consistent_with_each_other():
    # Per-sequence rates are the reciprocal of latency, device rates multiply by the batch, gamma stays in range.
    from specsim.serving.capacity import throughput_table
    from specsim.speculation.deployment import Deployment

    t = throughput_table(Deployment.build(), 0.9, [1, 8, 64], 1128, gamma_max=2)
    np.testing.assert_allclose(t.tokens_per_s_seq_spec, 1.0 / t.latency_spec_s, rtol=1e-12)
    np.testing.assert_allclose(t.tokens_per_s_seq_plain, 1.0 / t.latency_plain_s, rtol=1e-12)
    np.testing.assert_allclose(t.tokens_per_s_spec, t.batch * t.tokens_per_s_seq_spec, rtol=1e-12)
    np.testing.assert_allclose(t.speedup, t.latency_plain_s / t.latency_spec_s, rtol=1e-12)
    assert t.batch.dtype.kind == "i" and t.batch.tolist() == [1, 8, 64]
    assert t.gamma.max() == 2  # at alpha 0.9 the unconstrained optimum is larger: gamma_max is respected


def test_capacity_accepts_its_boundaries_and_refuses_past_them():
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build()
    full = capacity(dep, 1, 1.0)  # all of the memory, one token per sequence
    assert full.usable_bytes == full.memory_bytes and full.context_tokens == 1
    for util in (0.0, 1.0001):
        with pytest.raises(ValueError, match=r"memory utilization must be in \(0, 1\]"):
            capacity(dep, 1128, util)
    for context in (0, 1.5, True):
        with pytest.raises(ValueError, match="context must be an integer >= 1 token"):
            capacity(dep, context)
