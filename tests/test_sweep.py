"""Tidy sweep tables: shapes, columns and agreement with the pointwise model."""

from __future__ import annotations

import numpy as np
import pytest

from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, speedup
from specsim.speculation.sweep import closed_form_table, optimal_gamma_table, pass_table, roofline_table, sweep


def test_sweep_has_one_row_per_point_and_the_documented_columns():
    df = sweep(
        alpha=[0.6, 0.7, 0.8],
        gamma=range(0, 5),
        batch=[1, 64],
        context=[512, 4096],
        hardware=["h100-sxm", "h200"],
        pairs=[("llama-3.1-8b", "llama-3.2-1b"), ("qwen2.5-7b", "qwen2.5-0.5b")],
    )
    assert len(df) == 3 * 5 * 2 * 2 * 2 * 2
    for col in (
        "hardware",
        "target",
        "draft",
        "alpha",
        "gamma",
        "batch",
        "context",
        "t_target_s",
        "t_draft_s",
        "t_verify_s",
        "cost_ratio",
        "tokens_per_round",
        "speedup",
        "bound_target",
        "bound_draft",
        "bound_verify",
    ):
        assert col in df.columns, col
    assert not df.duplicated(["hardware", "target", "alpha", "gamma", "batch", "context"]).any()


def test_sweep_rows_match_the_pointwise_model():
    df = sweep(
        alpha=[0.55, 0.9],
        gamma=[0, 3, 7],
        batch=[1, 100, 300],
        context=[0, 2000],
        hardware="a100-sxm-80gb",
        pairs=("llama-3.1-8b", "llama-3.2-1b"),
    )
    dep = Deployment.build("a100-sxm-80gb", "llama-3.1-8b", "llama-3.2-1b")
    for row in df.itertuples():
        assert row.speedup == pytest.approx(
            float(speedup(dep, row.alpha, row.gamma, row.batch, row.context)), rel=1e-12
        )
        assert row.cost_ratio == pytest.approx(row.t_draft_s / row.t_target_s, rel=1e-12)
    assert (df[df.gamma == 0].speedup == 1.0).all()


def test_optimal_gamma_table_is_the_argmax_of_the_sweep():
    kwargs = dict(alpha=[0.5, 0.8], batch=[1, 32, 256], context=[256, 8192], hardware="h100-sxm")
    best = optimal_gamma_table(gamma_max=12, **kwargs)
    full = sweep(gamma=range(0, 13), **kwargs)
    idx = full.groupby(["alpha", "batch", "context"]).speedup.idxmax()
    expected = full.loc[idx, ["alpha", "batch", "context", "gamma", "speedup"]].reset_index(drop=True)
    got = (
        best[["alpha", "batch", "context", "gamma", "speedup"]]
        .sort_values(["alpha", "batch", "context"])
        .reset_index(drop=True)
    )
    np.testing.assert_array_equal(got.gamma, expected.gamma)
    np.testing.assert_allclose(got.speedup, expected.speedup, rtol=1e-15)


def test_closed_form_table_optima():
    t = closed_form_table([0.5, 0.7, 0.8, 0.9], range(0, 17), 0.05)
    best = t.loc[t.groupby("alpha").speedup.idxmax()]
    assert best.gamma.tolist() == [3, 6, 8, 13]


def test_pass_table_has_three_passes_and_verify_uses_gamma_plus_one():
    t = pass_table(Deployment.build(), batch=[1, 256], gamma=4, context=1128)
    assert sorted(t["pass"].unique()) == ["draft step", "target decode", "verification"]
    assert set(t[t["pass"] == "verification"].tokens_per_seq) == {5}
    assert (t.step_time_s >= t.overhead_s + np.maximum(t.compute_s, t.memory_s) - 1e-15).all()


def test_roofline_meets_at_the_ridge():
    from specsim.describe.hardware import load_hardware

    hw = load_hardware("h200")
    t = roofline_table(hw, [hw.ridge_flop_per_byte / 2, hw.ridge_flop_per_byte, hw.ridge_flop_per_byte * 2])
    np.testing.assert_allclose(t.attainable_flop_per_s / hw.flop_per_s, [0.5, 1.0, 1.0])


def test_empty_axis_is_rejected():
    with pytest.raises(ValueError, match="batch must be a non-empty"):
        sweep(batch=[])


def test_sweep_takes_the_step_time_source_and_labels_it():
    from specsim.speculation.deployment import Deployment

    df = sweep(alpha=0.8, gamma=3, batch=[2, 64], context=400, timing="hybrid", engine="vllm")
    assert set(df.timing) == {"hybrid"} and set(df.engine) == {"vllm@latest"}  # the preset and its version
    expected = speedup(Deployment.build(timing="hybrid", engine="vllm"), 0.8, 3, [2, 64], 400)
    np.testing.assert_allclose(df.speedup, expected, rtol=1e-12)
    assert set(sweep(alpha=0.8, gamma=3, batch=2).timing) == {"hybrid"}  # the command line's default unless asked
    assert set(sweep(alpha=0.8, gamma=3, batch=2, timing="roofline", engine="none").engine) == {"none"}
    best = optimal_gamma_table(alpha=0.8, batch=[1, 64], timing="hybrid")
    assert best.gamma.tolist() == optimal_gamma(Deployment.build(), 0.8, [1, 64], 1128).gamma.tolist()
