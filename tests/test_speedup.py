"""Tokens per step, speedup and optimal gamma: published values, limits, properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsim.speculation.deployment import Deployment
from specsim.speculation.search import (
    alpha_from_acceptance_length,
    expected_tokens,
    expected_tokens_per_position,
    optimal_gamma,
    optimal_gamma_cost_ratio,
    speedup,
    speedup_from_cost_ratio,
    speedup_from_times,
)

alphas = st.floats(0.0, 1.0, allow_nan=False)
gammas = st.integers(0, 64)
costs = st.floats(0.0, 2.0, allow_nan=False)


# -- E(alpha, gamma) -----------------------------------------------------------
@given(alphas, gammas)
def test_expected_tokens_bounds(alpha, gamma):
    e = float(expected_tokens(alpha, gamma))
    assert 1.0 - 1e-12 <= e <= gamma + 1 + 1e-9


@given(alphas, gammas)
def test_expected_tokens_equals_the_geometric_sum(alpha, gamma):
    direct = sum(alpha**k for k in range(gamma + 1))
    assert float(expected_tokens(alpha, gamma)) == pytest.approx(direct, rel=1e-9, abs=1e-12)


@given(st.floats(0.0, 0.999), st.floats(1e-6, 0.5), st.integers(1, 32))
def test_expected_tokens_increases_with_alpha(alpha, step, gamma):
    higher = min(1.0, alpha + step)
    assert float(expected_tokens(higher, gamma)) > float(expected_tokens(alpha, gamma))


@given(st.integers(0, 64), st.floats(1e-15, 1e-6))
def test_expected_tokens_is_continuous_at_alpha_one(gamma, eps):
    # E -> gamma + 1 as alpha -> 1, with no cancellation blow-up.
    near = float(expected_tokens(1.0 - eps, gamma))
    assert near == pytest.approx(gamma + 1, rel=eps * gamma * (gamma + 1) + 1e-12)


def test_expected_tokens_limits_are_exact():
    assert float(expected_tokens(1.0, 7)) == 8.0
    assert float(expected_tokens(0.0, 7)) == 1.0
    assert float(expected_tokens(0.37, 0)) == 1.0
    assert float(expected_tokens(1.0, 0)) == 1.0


def test_expected_tokens_broadcasts():
    e = expected_tokens(np.array([0.5, 0.8])[:, None], np.arange(5)[None, :])
    assert e.shape == (2, 5)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=16))
def test_per_position_rates_reduce_to_alpha_when_equal(rates):
    alpha = rates[0]
    equal = [alpha] * len(rates)
    assert float(expected_tokens_per_position(equal)) == pytest.approx(
        float(expected_tokens(alpha, len(rates))), rel=1e-12
    )
    assert 1.0 <= float(expected_tokens_per_position(rates)) <= len(rates) + 1


def test_per_position_rates_example():
    # 1 + 0.9 + 0.9*0.7 + 0.9*0.7*0.5
    assert float(expected_tokens_per_position([0.9, 0.7, 0.5])) == pytest.approx(1 + 0.9 + 0.63 + 0.315)


@pytest.mark.parametrize("bad", [-0.1, 1.1, np.nan])
def test_alpha_out_of_range_is_rejected(bad):
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        expected_tokens(bad, 4)


def test_negative_or_fractional_gamma_is_rejected():
    with pytest.raises(ValueError, match="gamma must be an integer >= 0"):
        expected_tokens(0.5, -1)
    with pytest.raises(ValueError, match="gamma must be an integer >= 0"):
        expected_tokens(0.5, 2.5)


# -- speedup -----------------------------------------------------------------------
@given(alphas, costs)
def test_speedup_is_one_at_gamma_zero(alpha, c):
    assert float(speedup_from_cost_ratio(alpha, 0, c)) == 1.0
    assert float(speedup_from_times(alpha, 0, 5e-3, 1e-3, 5e-3 * 1.0000001)) == 1.0


@given(st.floats(0.0, 0.99), st.floats(1e-4, 0.5), st.integers(1, 32), costs)
def test_speedup_increases_with_alpha(alpha, step, gamma, c):
    higher = min(1.0, alpha + step)
    assert float(speedup_from_cost_ratio(higher, gamma, c)) > float(speedup_from_cost_ratio(alpha, gamma, c))


@given(alphas, costs)
def test_speedup_needs_alpha_above_c_for_gamma_one(alpha, c):
    # S > 1 requires alpha > c at least (article); for gamma = 1 it is exact: (1+a)/(1+c).
    s = float(speedup_from_cost_ratio(alpha, 1, c))
    assert (s > 1.0) == (alpha > c) or abs(alpha - c) < 1e-12


@given(st.integers(0, 32), costs)
def test_speedup_at_alpha_one_is_gamma_plus_one_over_cost(gamma, c):
    assert float(speedup_from_cost_ratio(1.0, gamma, c)) == pytest.approx((gamma + 1) / (gamma * c + 1))


@settings(max_examples=50)
@given(alphas, st.integers(0, 16), st.floats(1e-4, 1.0), st.floats(1.0, 3.0))
def test_times_form_matches_closed_form_when_verify_costs_a_step(alpha, gamma, c, t_target_ms):
    t = t_target_ms * 1e-3
    assert float(speedup_from_times(alpha, gamma, t, c * t, t)) == pytest.approx(
        float(speedup_from_cost_ratio(alpha, gamma, c)), rel=1e-12
    )


def test_published_closed_form_optima():
    # Article, "Expected tokens per step and speedup": c = 0.05.
    g, s = optimal_gamma_cost_ratio([0.5, 0.7, 0.8, 0.9], 0.05)
    assert g.tolist() == [3, 6, 8, 13]
    assert np.round(s, 2).tolist() == [1.63, 2.35, 3.09, 4.67]


def test_tie_rule_alpha_07_is_the_float64_argmax():
    # article-model.md: gamma 5 and 6 differ by 2e-6; the exact argmax is 6.
    s5 = float(speedup_from_cost_ratio(0.7, 5, 0.05))
    s6 = float(speedup_from_cost_ratio(0.7, 6, 0.05))
    assert 0 < s6 - s5 < 3e-6
    assert optimal_gamma_cost_ratio(0.7, 0.05)[0].item() == 6
    # With a tolerance the user asks for the shortest near-optimal draft.
    assert optimal_gamma_cost_ratio(0.7, 0.05, rtol=1e-5)[0].item() == 5


@given(alphas, costs, st.integers(0, 24))
def test_optimal_gamma_is_the_best_on_the_grid(alpha, c, gamma_max):
    g, s = optimal_gamma_cost_ratio(alpha, c, gamma_max)
    grid = speedup_from_cost_ratio(alpha, np.arange(gamma_max + 1), c)
    assert float(s) == grid.max()
    assert int(g) == int(np.argmax(grid))
    assert float(s) >= 1.0  # gamma = 0 is always available


def test_no_speculation_when_draft_is_too_expensive():
    g, s = optimal_gamma_cost_ratio(0.3, 0.5)
    assert g.item() == 0 and s.item() == 1.0


# -- inverse --------------------------------------------------------------------------
@given(st.floats(0.0, 1.0), st.integers(1, 16))
def test_alpha_from_acceptance_length_inverts_expected_tokens(alpha, gamma):
    length = float(expected_tokens(alpha, gamma))
    assert float(alpha_from_acceptance_length(length, gamma)) == pytest.approx(alpha, abs=1e-9)


def test_alpha_from_vllm_style_counts():
    # vLLM: mean acceptance length = 1 + accepted / drafts.  At gamma = 3 with
    # 1000 drafts and 1952 accepted tokens, E = 2.952 -> alpha = 0.8 (1 + .8 + .64 + .512).
    assert float(alpha_from_acceptance_length(1 + 1952 / 1000, 3)) == pytest.approx(0.8, abs=1e-9)


@pytest.mark.parametrize("length, gamma", [(0.5, 4), (5.5, 4), (np.nan, 4), (2.0, 0)])
def test_alpha_from_impossible_length_is_rejected(length, gamma):
    with pytest.raises(ValueError):
        alpha_from_acceptance_length(length, gamma)


# -- deployments ---------------------------------------------------------------------
def test_article_batch_speedups():
    dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    s = speedup(dep, 0.8, 4, np.array([1, 64, 128, 256]), 1128)
    np.testing.assert_allclose(s, [1.8966, 1.8143, 1.4947, 1.2501], atol=5e-5)


def test_optimal_gamma_broadcasts_and_matches_pointwise():
    dep = Deployment.build()
    alpha = np.array([0.6, 0.8])[:, None, None]
    batch = np.array([1, 64, 512])[None, :, None]
    context = np.array([512, 8192])[None, None, :]
    best = optimal_gamma(dep, alpha, batch, context, gamma_max=12)
    assert best.gamma.shape == (2, 3, 2)
    for i, a in enumerate([0.6, 0.8]):
        for j, b in enumerate([1, 64, 512]):
            for k, L in enumerate([512, 8192]):
                curve = speedup(dep, a, np.arange(13), b, L)
                assert best.gamma[i, j, k] == int(np.argmax(curve))
                assert best.speedup[i, j, k] == pytest.approx(curve.max(), rel=1e-15)


def test_optimal_gamma_falls_with_batch_and_turns_off():
    dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    best = optimal_gamma(dep, 0.6, [1, 16, 64, 256, 1024], 128)
    assert np.all(np.diff(best.gamma) <= 0)
    assert best.gamma[-1] == 0 and best.speedup[-1] == 1.0
    assert best.gamma[0] >= 2


def test_at_limit_flags_a_capped_search():
    dep = Deployment.build()
    best = optimal_gamma(dep, 0.99, [1], gamma_max=4)
    assert best.gamma.item() == 4 and best.at_limit.item()


def test_acceptance_length_boundaries_are_exact():
    # E = 1 means nothing was ever accepted (alpha 0); E = gamma + 1 means everything was (alpha 1); integers work.
    assert float(alpha_from_acceptance_length(1, 3)) == 0.0
    assert float(alpha_from_acceptance_length(4, 3)) == 1.0
    out = alpha_from_acceptance_length(np.array([1, 4]), np.array([3, 3]))
    assert out.dtype == np.float64 and out.tolist() == [0.0, 1.0]
    # Just inside the range the solver must land on E's inverse to 1e-12.
    assert float(expected_tokens(float(alpha_from_acceptance_length(3.999999, 3)), 3)) == pytest.approx(
        3.999999, abs=1e-12
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: alpha_from_acceptance_length(1.5, 0),
            r"^gamma must be >= 1 to infer alpha \(gamma = 0 drafts nothing\)$",
        ),
        (lambda: expected_tokens_per_position(0.8), r"^rates must have one entry per draft position$"),
        (lambda: speedup_from_cost_ratio(0.8, 2, -0.1), r"^cost_ratio must be >= 0, got -0\.1$"),
        (lambda: speedup_from_cost_ratio(0.8, 2, float("nan")), r"^cost_ratio must be >= 0, got nan$"),
    ],
)
def test_error_messages_are_exact(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_per_position_tokens_per_step_row_by_row():
    rates = np.array([[0.9, 0.5], [1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_allclose(expected_tokens_per_position(rates), [1 + 0.9 + 0.45, 3.0, 1.0], rtol=1e-12)


def test_cost_ratio_optimum_broadcasts_alpha_against_cost():
    gamma, speedup = optimal_gamma_cost_ratio(np.array([[0.5], [0.9]]), np.array([0.01, 0.05, 0.2]))
    assert gamma.shape == speedup.shape == (2, 3)
    for i, a in enumerate((0.5, 0.9)):
        for j, c in enumerate((0.01, 0.05, 0.2)):
            g1, s1 = optimal_gamma_cost_ratio(a, c)
            assert int(gamma[i, j]) == int(g1) and float(speedup[i, j]) == pytest.approx(float(s1), rel=1e-12)
    assert gamma[1, 1] == 13 and gamma[0, 1] == 3  # the article's c = 0.05 optima


def test_gamma_max_zero_is_plain_decoding_and_bad_gamma_max_is_named():
    dep = Deployment.build()
    best = optimal_gamma(dep, 0.8, [1, 64], 1128, gamma_max=0)
    assert best.gamma.tolist() == [0, 0] and best.speedup.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"^gamma_max must be an integer in \[0, 64\], got 65$"):
        optimal_gamma(dep, 0.8, [1], 1128, gamma_max=65)


def test_deployment_notes_come_from_its_source():
    # The default deployment's notes: the parts nobody chose, and the overlap its engine assumes (said by default:
    # issue 37).
    assert [n[:18] for n in Deployment.build().notes()] == ["specsim's defaults", "assumed: vllm@late"]
    # every part given, and a draft model's rounds serial at 0.14: nothing assumed
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="kernels", engine="vllm@0.14")
    speedup(dep, 0.8, 3, [4096], 400)  # batch 4096 is past the kernel data
    assert dep.notes() and dep.notes() == dep.source.notes and dep.notes() is not dep.source.notes


def test_engine_time_is_part_of_the_reported_overhead():
    bare = Deployment.build(timing="roofline", engine="none").outcome(0.8, 3, 8, 1128)
    vllm = Deployment.build(timing="roofline", engine="vllm").outcome(0.8, 3, 8, 1128)
    from specsim.engines import get_engine

    extra = get_engine("vllm").iteration_s
    assert vllm.target.overhead_s == pytest.approx(bare.target.overhead_s + extra, rel=1e-12)
    assert vllm.verify.overhead_s == pytest.approx(bare.verify.overhead_s + extra, rel=1e-12)


def test_kernel_sources_take_the_presets_gpu_time_value_and_report_progress(tmp_path, monkeypatch):
    from specsim.engines import get_engine

    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    lines = []
    dep = Deployment.build(timing="kernels", engine="sglang", progress=lines.append)
    assert dep.engine.iteration_s == get_engine("sglang").kernel_iteration_s != get_engine("sglang").iteration_s
    speedup(dep, 0.8, 3, 4, 400)
    assert lines and "building the kernel table" in lines[0]


def test_a_bare_deployment_is_the_command_lines_and_says_so():
    # One default: the library's constructors give what the command line gives, and name it.
    bare, built = Deployment.build(), Deployment.build()
    assert (bare.source.name, bare.engine.key) == (built.source.name, built.engine.key) == ("hybrid", "vllm@latest")
    assert bare.provenance() == built.provenance()
    np.testing.assert_array_equal(speedup(bare, 0.8, 3, [1, 64]), speedup(built, 0.8, 3, [1, 64]))
    assert Deployment.build(timing="roofline", engine="none").provenance() == [
        "roofline: profile h100-sxm (compute eff 0.60, bandwidth eff 0.80, 0.50 ms/pass)",
        "engine: none (no CPU time added)",
        "specsim's defaults, not given: hardware h100-sxm, target llama-3.1-8b, draft llama-3.2-1b",
    ]


def test_rtol_half_and_gamma_max_messages():
    dep = Deployment.build()
    with pytest.raises(ValueError, match=r"^rtol must be in \[0, 0.5\), got 0.5$"):
        optimal_gamma(dep, 0.8, [1], 1128, rtol=0.5)
    with pytest.raises(ValueError, match=r"^gamma_max must be an integer in \[0, 64\], got 65$"):
        optimal_gamma_cost_ratio(0.8, 0.05, gamma_max=65)


def test_verbose_says_the_draft_pass_carries_its_layers_share_of_the_per_pass_overhead(capsys):
    # speedup's t_D (1.186 ms at batch 1) was steptime's draft pass (1.436 ms) less three quarters of the 0.5 ms
    # per-pass overhead, unexplained under -v: the draft's 16 of 32 layers carry 0.25 ms of it inside a round.
    from specsim.cli.main import main

    assert main(["speedup", "--alpha", "0.8", "--gamma", "4", "--batch", "1", "-v"]) == 0
    out = capsys.readouterr().out
    assert "a draft pass inside a round carries its layers' share of the source's per-pass overhead: 16/32 of " in out
    assert "0.500 ms = 0.250 ms, 0.250 ms less than a pass alone" in out


def test_the_draft_pass_overhead_line_says_what_drafter_pass_takes_off():
    """The line gives gpu_pass's overhead and drafter_pass's, as the source adds them: kernel sums add none (no line),
    and a profile's per-layer overhead counts (0.5 ms + 16 x 10 us for the 16-layer draft: 0.660 ms whole, half of it
    kept), where the line once said the profile's 0.50 ms per pass alone."""
    import dataclasses

    from specsim.describe.hardware import load_hardware

    assert not any("per-pass overhead" in line for line in Deployment.build(timing="kernels").provenance())
    layered = dataclasses.replace(load_hardware("h100-sxm"), per_layer_overhead_s=10e-6)
    lines = [line for line in Deployment.build(layered, timing="roofline").provenance() if "per-pass overhead" in line]
    assert lines and "16/32 of 0.660 ms = 0.330 ms, 0.330 ms less than a pass alone" in lines[0]


def test_a_round_at_the_targets_last_positions_drafts_only_what_vllm_keeps(capsys):
    # vLLM 0.33.0 schedules at most max_model_len - num_computed_tokens - 1 tokens of a request and cuts its drafts to
    # those (vllm/v1/core/sched/scheduler.py L852-857, L1013-1021): at --context 131,068 of llama-3.1-8b's 131,072
    # positions a round verifies 2 drafts.  optimal-gamma answered gamma 4 there (1.78x at 131,072, a full context),
    # and speedup --gamma 4 priced four drafts the engine never verifies.
    from specsim.cli.main import main

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    assert dep.drafts_room([1128, 131066, 131068, 131070, 131072]).tolist() == [129942, 4, 2, 0, 0]
    near = optimal_gamma(dep, 0.8, [1, 64], [[1128], [131068]])
    assert near.gamma[1].max() <= 2 and near.gamma[0].max() > 2  # per context: the far one is not held to the near one
    assert main(["optimal-gamma", "--context", "131068", "--batch", "1", "--json"]) == 0
    import json

    answer = json.loads(capsys.readouterr().out)
    rows = answer["rows"] if isinstance(answer, dict) else answer
    assert rows[0]["gamma"] == 2 and rows[0]["gamma_bound"] == "at the target's last positions"  # as the text says
    assert main(["optimal-gamma", "--context", "131068", "--batch", "1"]) == 0
    out, err = capsys.readouterr()
    assert "gamma searched over 0..2" in out and "target's last positions" in out + err
    assert main(["speedup", "--context", "131070", "--gamma", "4", "--batch", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vllm/v1/core/sched/scheduler.py 0.33.0 L852-857" in err[0], err
    assert "give a gamma of at most 0, or a context of at most 131,066 tokens" in err[0], err
    assert main(["explain", "--context", "131070", "--batch", "1"]) == 2  # showed a round of 1 draft 'that pays'
    assert "gamma 1 at a context of 131,070 tokens drafts past" in capsys.readouterr().err
    # the load view's explain at the same lengths shows the round it weighs (starred), as before: no --context to give
    assert main(["explain", "--concurrency", "1", "--input-len", "131070", "--output-len", "2"]) == 0
    assert main(["speedup", "--context", "131066", "--gamma", "4", "--batch", "1"]) == 0
    capsys.readouterr()
    assert main(["schedule", "--context", "131068", "--format", "vllm"]) == 0  # the schedule's stop is said too
    out, err = capsys.readouterr()
    assert '"num_speculative_tokens": 2' in out and "the target's last positions leave 2 draft token(s)" in err


def test_no_decode_step_runs_at_the_targets_last_two_positions(capsys):
    # vLLM ends a request once it holds max_model_len tokens (check_stop: request.num_tokens >= max_model_len,
    # vllm/v1/core/sched/utils.py 0.33.0 L114-119), so its last decode step runs at max_model_len - 2 cached tokens
    # (the step's input token takes position max_model_len - 2, the token it samples is the max_model_len-th).
    # optimal-gamma --context 131072 (llama-3.1-8b's positions) answered plain decoding at 1.000x there, a step vLLM
    # never runs; compare and schedule too.
    from specsim.cli.main import main

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    dep.require_drafts_within_positions(131070, 0)  # the last step: plain decoding runs
    for argv in (
        ["optimal-gamma", "--batch", "1"],
        ["compare", "--batch", "1"],
        ["schedule", "--max-batch", "2"],
        ["speedup", "--gamma", "0", "--batch", "1"],
    ):
        for context in ("131071", "131072"):
            assert main(argv + ["--context", context]) == 2, (argv, context)
            out, err = capsys.readouterr()
            err = err.strip().splitlines()
            assert not out and len(err) == 1, (argv, context, out, err)
            assert f"a context of {int(context):,} tokens leaves llama-3.1-8b no decode step" in err[0], err
            assert "vllm/v1/core/sched/utils.py 0.33.0 L114-119" in err[0] and "at most 131,070" in err[0], err
        assert main(argv + ["--context", "131070"]) == 0, argv
        capsys.readouterr()


def test_the_library_frames_refuse_rounds_the_positions_do_not_hold():
    # sweep priced gamma 4 at context 131,070 of llama-3.1-8b (1.78x) where vLLM verifies no draft (drafts_room 0), and
    # optimal_gamma_table answered plain decoding at 131,072, where no decode step runs: as the CLI now refuses both.
    from specsim.speculation.sweep import optimal_gamma_table, sweep

    with pytest.raises(ValueError, match="gamma 4 at a context of 131,070 tokens drafts past"):
        sweep(alpha=0.8, gamma=[0, 4], batch=1, context=[1128, 131070])
    with pytest.raises(ValueError, match="a context of 131,072 tokens leaves llama-3.1-8b no decode step"):
        optimal_gamma_table(alpha=0.8, batch=1, context=[1128, 131072])
    assert len(sweep(alpha=0.8, gamma=[0, 4], batch=1, context=[1128, 131066])) == 4  # room 4 at 131,066
    assert len(optimal_gamma_table(alpha=0.8, batch=1, context=131070)) == 1


def test_a_tree_search_at_the_targets_last_positions_keeps_to_the_drafts_they_leave():
    # optimal-gamma --tree topk:2,depth:2,tokens:4 --context 131070 recommended a tree of 4 tokens (1.757x) where vLLM
    # verifies no draft (drafts_room 0: max_model_len - num_computed_tokens - 1 scheduled tokens, the chain's search
    # stops there); a tree verifies its root and tokens - 1 drafts.
    from specsim.speculation.acceptance import TreeSpec
    from specsim.speculation.search import optimal_tree

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    bounds = TreeSpec(topk=2, depth=3, tokens=8)
    trees, speedups, _ = optimal_tree(dep, 0.8, bounds, [1, 8], 131070)
    assert trees == [None, None] and speedups.tolist() == [1.0, 1.0]
    trees, _, _ = optimal_tree(dep, 0.8, bounds, [1, 8], 131068)  # room 2: at most 3 tokens verified
    assert all(t is not None and t.tokens <= 3 for t in trees), trees
    trees, _, _ = optimal_tree(dep, 0.8, bounds, [1, 8], 1128)
    assert max(t.tokens for t in trees) > 3  # far from the end, the search is not held to it
