"""Issue 12: drafter kinds, token trees, per-position acceptance, and each engine's configuration per drafter."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex

import numpy as np
import pytest
import yaml

from specsim.cli.main import main
from specsim.describe.models import get_model
from specsim.describe.shapes import format_count
from specsim.speculation.acceptance import (
    Acceptance,
    TreeSpec,
    build_tree,
    monte_carlo_tree,
    parse_acceptance,
    parse_tree,
)
from specsim.speculation.deployment import Deployment
from specsim.speculation.drafters import NGRAM_CPU_S_PER_TOKEN, NgramDrafter, make_drafter
from specsim.speculation.search import expected_tokens, expected_tokens_per_position, optimal_gamma, optimal_tree


# -- acceptance -----------------------------------------------------------------
def test_per_position_acceptance_is_the_sum_of_cumulative_rates_and_is_not_extrapolated():
    acc = parse_acceptance("0.9,0.72,0.5")
    assert acc.expected_tokens(3).item() == pytest.approx(1 + 0.9 + 0.72 + 0.5)
    # The conditional rates reproduce the same E through the chain formula.
    assert expected_tokens_per_position(acc.conditional(3)).item() == pytest.approx(acc.expected_tokens(3).item())
    with pytest.raises(ValueError, match="measured for 3 positions, not 4; specsim does not extrapolate"):
        acc.expected_tokens(4)
    dep = Deployment.build()
    best = optimal_gamma(dep, acc, [1, 64], 1128, gamma_max=16)
    assert best.gamma_max == 3 and best.gamma.max() <= 3
    # One alpha and its per-position equivalent give the same answer.
    alpha = Acceptance(cumulative=tuple(0.8**k for k in range(1, 9)))
    a = optimal_gamma(dep, alpha, [1, 64], 1128, gamma_max=8)
    b = optimal_gamma(dep, 0.8, [1, 64], 1128, gamma_max=8)
    assert a.gamma.tolist() == b.gamma.tolist() and np.allclose(a.speedup, b.speedup)


def test_continued_per_position_acceptance_goes_on_past_its_last_position_at_that_positions_conditional_rate():
    """A calibration's shares c_1..c_K (here K = 3) are continued past K at r = c_K / c_(K-1): up to K the answer is
    1 + the sum of the shares exactly; past K, c_(K+j) = c_K r^j, in the chain, the tree and the search alike."""
    c = (0.8, 0.6, 0.4)
    r = 0.4 / 0.6
    acc = Acceptance(cumulative=c, continued=True)
    assert acc.max_gamma is None and acc.measured_steps == 3 and acc.continued_rate == pytest.approx(r)
    assert acc.expected_tokens([1, 2, 3]).tolist() == pytest.approx([1.8, 2.4, 2.8])
    assert acc.expected_tokens(5).item() == pytest.approx(2.8 + 0.4 * r + 0.4 * r * r)
    assert acc.cumulative_rates(5).tolist() == pytest.approx([0.8, 0.6, 0.4, 0.4 * r, 0.4 * r * r])
    assert acc.conditional(5).tolist() == pytest.approx([0.8, 0.75, r, r, r])
    chain = build_tree(TreeSpec(1, 5, 6), acc)
    assert chain.expected_tokens == pytest.approx(acc.expected_tokens(5).item())
    best = optimal_gamma(Deployment.build(), acc, [1], 1128, gamma_max=8)
    assert best.gamma_max == 8  # searched past the measured positions, where the rates without the rule stop at 3
    # one position: the chain at its rate, as one alpha measured at one step
    assert Acceptance(cumulative=(0.7,), continued=True).expected_tokens(4).item() == pytest.approx(
        expected_tokens(0.7, 4).item()
    )
    assert Acceptance(cumulative=(0.5, 0.0), continued=True).cumulative_rates(4).tolist() == [0.5, 0.0, 0.0, 0.0]
    for bad, said in (
        ({"alpha": 0.8, "continued": True}, "continued .true or false. goes with per-position rates"),
        ({"cumulative": c, "continued": 1}, "continued .true or false. goes with per-position rates"),
        ({"cumulative": c, "continued": True, "measured_steps": 2}, "measured at their 3 positions, not at 2"),
    ):
        with pytest.raises(ValueError, match=said):
            Acceptance(**bad)


def test_acceptance_that_rises_with_depth_is_refused():
    with pytest.raises(ValueError) as err:
        parse_acceptance("0.7,0.8")
    assert str(err.value) == (
        "per-position acceptance must not increase with depth (position 2 accepted 0.8 > position 1 "
        "0.7): a token is accepted only if every earlier one was, so these are P(token k accepted) as "
        "vLLM's per-position counters give them, not conditional rates"
    )


def test_cumulative_rates_are_alpha_powers_or_the_measured_prefix_and_too_short_a_measurement_is_refused():
    assert Acceptance(alpha=0.5).cumulative_rates(1).tolist() == [0.5]
    assert Acceptance(alpha=0.5).cumulative_rates(0).shape == (0,)
    measured = Acceptance(cumulative=(0.8, 0.6))
    assert measured.cumulative_rates(2).tolist() == [0.8, 0.6] and measured.cumulative_rates(1).tolist() == [0.8]
    assert measured.cumulative_rates(0).shape == (0,)
    with pytest.raises(ValueError) as err:
        measured.cumulative_rates(3)
    assert str(err.value) == "acceptance is measured for 2 positions; the speculation policy uses gamma up to 3"


# -- trees ---------------------------------------------------------------------
def test_a_chain_tree_is_the_chain_formula():
    for alpha, depth in ((0.8, 4), (0.6, 7), (0.95, 2)):
        tree = build_tree(TreeSpec(1, depth, depth + 1), Acceptance(alpha=alpha))
        assert tree.expected_tokens == pytest.approx(float(expected_tokens(alpha, depth)), rel=1e-12)


@pytest.mark.parametrize(
    "spec, acc",
    [
        (TreeSpec(4, 5, 16), Acceptance(alpha=0.7)),
        (TreeSpec(2, 4, 9), Acceptance(alpha=0.85)),
        (TreeSpec(3, 3, 13), Acceptance(cumulative=(0.9, 0.7, 0.45))),
    ],
)
def test_monte_carlo_of_the_tree_walk_agrees_with_the_closed_form(spec, acc):
    # 200,000 walks: the emitted-token count has a standard deviation below 2, so the mean's standard error is
    # below 0.0045; the tolerance 0.03 is 6.7 standard errors (false-failure rate below 3e-11; seeded anyway).
    tree = build_tree(spec, acc)
    walks = monte_carlo_tree(tree, 200_000, np.random.default_rng(12))
    assert walks.std() < 2.0
    assert walks.mean() == pytest.approx(tree.expected_tokens, abs=0.03)


def test_wider_trees_accept_more_and_the_kept_nodes_form_a_tree():
    acc = Acceptance(alpha=0.75)
    small, big = build_tree(TreeSpec(2, 4, 8), acc), build_tree(TreeSpec(4, 5, 16), acc)
    assert big.expected_tokens > small.expected_tokens > float(expected_tokens(0.75, 1))
    for tree in (small, big):
        assert tree.parent.size == tree.spec.tokens - 1
        assert all(p < i for i, p in enumerate(tree.parent))  # every parent is kept, before its children
        assert np.all(tree.p_node[tree.parent[tree.parent >= 0]] >= tree.p_node[tree.parent >= 0])


@pytest.mark.parametrize(
    "text, message",
    [
        ("topk:2,depth:2,tokens:9", "holds at most 7 tokens"),
        ("topk:0,depth:2,tokens:3", "topk must be a positive integer"),
        ("binary", "^tree takes chain or topk:K,depth:D,tokens:N"),  # the keyword: --tree on the command line
        ("topk:2,depth:2,tokens:1", "at least 2 tokens"),
    ],
)
def test_bad_trees_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_tree(text)


def test_optimal_tree_picks_trees_at_small_batch_and_chains_at_large():
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3")
    trees, speedup, tokens = optimal_tree(dep, 0.8, TreeSpec(4, 5, 16), [1, 256], 1128)
    assert trees[0].topk > 1 and trees[1].topk == 1
    chain = optimal_gamma(dep, 0.8, [1, 256], 1128)
    assert speedup[0] > chain.speedup[0] and speedup[1] == pytest.approx(chain.speedup[1], rel=0.011)


# -- drafters ---------------------------------------------------------------------
def test_eagle_heads_are_one_layer_of_the_targets_width():
    target = get_model("llama-3.1-8b")
    eagle, eagle3 = make_drafter("eagle", target).step_model, make_drafter("eagle3", target).step_model
    assert (eagle.n_layers, eagle.hidden_size, eagle.vocab_size) == (1, 4096, 128256)
    assert eagle3.vocab_size == 32000 and eagle.extra_linear_params == 2 * 4096 * 4096
    assert eagle3.extra_linear_params == 3 * 4096 * 4096 + (32 + 16) * 128 * 4096
    # The EAGLE-3 head's reduced vocabulary is not a tokenizer mismatch.
    Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3")


def test_mtp_needs_the_targets_own_layers():
    mtp = make_drafter("mtp", get_model("deepseek-v3")).step_model
    assert mtp.n_layers == 1 and mtp.is_moe and mtp.is_mla
    with pytest.raises(ValueError, match="declares no multi-token-prediction layers"):
        make_drafter("mtp", get_model("llama-3.1-8b"))


def test_round_costs_per_drafter():
    eagle = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="none")
    times = eagle.outcome(0.8, 3, np.array([1.0, 64.0]), 1128)
    plain = eagle.outcome(0.8, 3, np.array([1.0, 64.0]), 1128)
    verify = eagle.gpu_pass(eagle.target, np.array([1.0, 64.0]), 4, 1128).total_s
    extend = eagle.gpu_pass(eagle.draft, np.array([1.0, 64.0]), 4, 1128).total_s
    assert np.allclose(times.verify.total_s, verify + extend) and np.allclose(plain.draft.total_s, times.draft.total_s)
    ngram = Deployment.build("h100-sxm", "llama-3.1-8b", "ngram", timing="roofline", engine="none")
    t = ngram.outcome(0.8, 3, np.array([1.0, 64.0]), 1128)
    assert np.all(t.draft.total_s == 0)
    assert np.allclose(t.verify.total_s - verify, NGRAM_CPU_S_PER_TOKEN * np.array([1.0, 64.0]) * 1128)


# -- CLI and engine outputs -----------------------------------------------------------
def test_issue_command_prints_a_tree_per_batch(capsys):
    code = main(
        [
            "optimal-gamma",
            "--target",
            "llama-3.1-8b",
            "--draft",
            "eagle3",
            "--tree",
            "topk:4,depth:5,tokens:16",
            "--batch",
            "1,64,256",
            "--json",
        ]
    )
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows[0]["tree"]["topk"] > 1 and rows[2]["tree"]["topk"] == 1
    assert all(r["speedup"] >= r["chain_speedup"] * 0.99 for r in rows)


def test_ngram_needs_no_draft_model(capsys):
    code = main(["optimal-gamma", "--draft", "ngram", "--alpha", "0.5", "--batch", "1,64", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and all(r["t_draft_s"] == 0 and r["drafter"] == "ngram" for r in rows)


@pytest.mark.parametrize(
    "draft, method, model",
    [
        ("llama-3.2-1b", "draft_model", "meta-llama/Llama-3.2-1B-Instruct"),
        ("eagle", "eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
        ("eagle3", "eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
        ("ngram", "ngram", None),
    ],
)
def test_vllm_config_per_drafter_parses_back(draft, method, model, capsys):
    code = main(["schedule", "--draft", draft, "--alpha", "0.7", "--format", "vllm"])
    out = capsys.readouterr()
    config = json.loads(out.out)
    assert code == 0 and config.get("method") == method and config.get("model") == model
    ranges = config["num_speculative_tokens_per_batch_size"]
    top = int(re.search(r"scheduled up to batch (\d+)", out.err).group(1))  # vLLM's 1024 on an H100, or what fits
    assert ranges[0][0] == 1 and ranges[-1][1] == top and config["num_speculative_tokens"] == max(r[2] for r in ranges)
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))


def test_the_eagle_authors_official_70b_head_is_the_plans_checkpoint(capsys):
    # SafeAILab/EAGLE README @ cb7e084 L158 marks yuhuili/EAGLE3-LLaMA3.3-Instruct-70B official for Llama-3.3-70B; the
    # table's unofficial heads (Qwen3's, say) are not taken: those targets still need --draft-checkpoint.
    base = ["schedule", "--draft", "eagle3", "--alpha", "0.7", "--format", "vllm", "--hardware", "h200", "--tp", "8"]
    assert main([*base, "--target", "llama-3.3-70b"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"
    assert main([*base, "--target", "qwen3-32b"]) == 2
    assert "no published eagle3 head is known for qwen3-32b" in capsys.readouterr().err


def test_a_target_with_no_known_head_is_refused_with_its_familys_heads_and_why(capsys, tmp_path):
    # A Llama-3.1-70B user wants the Llama-3.3-70B head (the nearest in size first); optimal-gamma takes the same
    # --draft eagle3 (it models a head from the target's shape), so the refusal says why a config needs a checkpoint.
    base = ["--target", "llama-3.1-70b", "--draft", "eagle3", "--tp", "4", "--hardware", "h100"]
    assert main(["optimal-gamma", *base, "--alpha", "0.7", "--batch", "64"]) == 0
    capsys.readouterr()
    for argv in (
        ["schedule", *base, "--alpha", "0.7", "--format", "vllm"],
        ["bench-plan", *base, "--engine", "vllm@0.24.0", "--out", str(tmp_path / "p")],
    ):
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert (
            "no published eagle3 head is known for llama-3.1-70b; give its checkpoint with --draft-checkpoint" in line
        )
        assert "an engine's config names the head it loads; optimal-gamma and speedup model one" in line
        assert line.endswith(
            "the known eagle3 heads for llama targets: yuhuili/EAGLE3-LLaMA3.3-Instruct-70B (trained on llama-3.3-70b), "
            "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (trained on llama-3.1-8b)"
        )
    assert main(["schedule", *base[2:], "--target", "qwen3-32b", "--alpha", "0.7", "--format", "vllm"]) == 2
    assert capsys.readouterr().err.strip().endswith("none is known for a qwen3 target")


def test_vllm_mtp_config_and_sglang_flags_parse_back(capsys):
    base = ["--target", "deepseek-v3", "--draft", "mtp", "--tp", "8", "--hardware", "h200", "--acceptance", "0.875"]
    assert main(["schedule", *base, "--format", "vllm"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["method"] == "mtp" and "model" not in config and config["num_speculative_tokens"] == 1
    assert main(["schedule", *base, "--format", "sglang"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    argv = shlex.split(first)
    flags = dict(zip(argv[3::2], argv[4::2]))
    assert flags["--tp"] == "8" and flags["--speculative-algorithm"] == "EAGLE"
    assert (
        flags["--speculative-num-steps"],
        flags["--speculative-eagle-topk"],
        flags["--speculative-num-draft-tokens"],
    ) == ("1", "1", "2")


@pytest.mark.parametrize("draft, algorithm", [("llama-3.2-1b", "STANDALONE"), ("eagle3", "EAGLE3"), ("ngram", "NGRAM")])
def test_sglang_flags_per_drafter(draft, algorithm, capsys):
    extra = ["--tree", "topk:4,depth:5,tokens:16"] if draft == "eagle3" else []
    assert main(["schedule", "--draft", draft, "--alpha", "0.7", "--format", "sglang", *extra]) == 0
    lines = capsys.readouterr().out.splitlines()
    argv = shlex.split(lines[0])
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    flags = dict(zip(argv[3::2], argv[4::2]))
    assert flags["--speculative-algorithm"] == algorithm and int(flags["--speculative-num-draft-tokens"]) >= 2
    if draft == "eagle3":
        assert int(flags["--speculative-eagle-topk"]) > 1  # a tree at batch 1
        assert flags["--speculative-draft-model-path"] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert all(line.startswith("# schedule at batch ") for line in lines[1:])


@pytest.mark.parametrize(
    "draft, decoding", [("llama-3.2-1b", "Draft_Target"), ("eagle3", "Eagle3"), ("ngram", "NGram")]
)
def test_trtllm_config_per_drafter_parses_back(draft, decoding, capsys):
    assert main(["schedule", "--draft", draft, "--alpha", "0.7", "--format", "trtllm"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)["speculative_config"]
    assert config["decoding_type"] == decoding and config["max_draft_len"] >= 1
    # From 1.3.0 the one-model path of Eagle3, MTP and DraftTarget takes the schedule (NVIDIA/TensorRT-LLM#10860, #12262)
    assert ("draft_len_schedule" in config) == (draft != "ngram")


def test_schedule_by_context_keeps_larger_gamma_at_long_context(capsys):
    assert (
        main(
            [
                "schedule",
                "--draft",
                "eagle3",
                "--alpha",
                "0.8",
                "--contexts",
                "512,32768",
                "--json",
                "--max-batch",
                "128",
            ]
        )
        == 0
    )
    cells = json.loads(capsys.readouterr().out)["by_context"]
    at = {(c["batch"], c["context"]): c["gamma"] for c in cells}
    assert at[(128, 32768)] >= at[(128, 512)] and at[(1, 512)] >= at[(128, 512)]


def test_metrics_pages_feed_every_command(tmp_path, capsys):
    page = (
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 190\n'
        + "".join(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{k}"}} {v}\n'
            for k, v in enumerate((90, 65, 35))
        )
    )
    path = tmp_path / "metrics.txt"
    path.write_text(page)
    assert main(["optimal-gamma", "--metrics", str(path), "--batch", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["gamma"] <= 3 and row["tokens_per_round"] == pytest.approx(1 + [0, 0.9, 1.55, 1.9][row["gamma"]])
    sg = tmp_path / "sglang.txt"
    sg.write_text('sglang:spec_accept_length{model_name="m"} 2.5\n')
    assert (
        main(["speedup", "--metrics", str(sg), "--metrics-gamma", "3", "--gamma", "3", "--batch", "1", "--json"]) == 0
    )
    row = json.loads(capsys.readouterr().out)[0]
    assert row["tokens_per_round"] == pytest.approx(2.5, abs=1e-9)


# -- boundaries and exact values the mutation run showed untested ---------------------------------------------
def test_per_position_expected_tokens_at_gamma_0_and_conditional_rates_after_a_zero():
    acc = Acceptance(cumulative=(0.5, 0.0, 0.0))
    assert acc.expected_tokens(0).item() == 1.0 and acc.expected_tokens([1, 3]).tolist() == [1.5, 1.5]
    assert acc.conditional(3).tolist() == [0.5, 0.0, 0.0]  # 0/0 after a zero is a zero, not NaN
    with pytest.raises(ValueError, match=r"^gamma must be whole numbers >= 0$"):
        acc.expected_tokens(1.5)
    with pytest.raises(ValueError, match=r"^gamma must be whole numbers >= 0$"):
        acc.expected_tokens(-1)


@pytest.mark.parametrize(
    "kwargs, ok",
    [
        ({"alpha": 0.0}, True),
        ({"alpha": 1.0}, True),
        ({"alpha": 1.0001}, False),
        ({"alpha": True}, False),
        ({"cumulative": (1.0, 1.0, 0.0)}, True),
        ({"cumulative": (0.5, 0.5 + 1e-13)}, True),
        ({"cumulative": (0.5, 0.5001)}, False),
        ({}, False),
        ({"alpha": 0.5, "cumulative": (0.5,)}, False),
        ({"cumulative": (float("nan"),)}, False),
    ],
)
def test_acceptance_bounds(kwargs, ok):
    if ok:
        Acceptance(**kwargs)
    else:
        with pytest.raises(ValueError):
            Acceptance(**kwargs)


def test_acceptance_describes_itself():
    assert Acceptance(alpha=0.75, source="x").describe() == "alpha 0.75 (x)"
    # the acceptance given, as its caller gave it: the keyword from Python, the flag on the command line
    from specsim.core.names import as_flags

    assert parse_acceptance("0.9,0.72").describe() == "per-position acceptance 0.9, 0.72 (acceptance)"
    with as_flags():
        assert parse_acceptance("0.9,0.72").describe() == "per-position acceptance 0.9, 0.72 (--acceptance)"


def _reference_tree(a, sibling, topk, depth, tokens):
    """An independent EAGLE-2 expansion: each level's topk most probable nodes get topk children, then the
    tokens - 1 most probable drafted nodes are kept.  Returns their probabilities, sorted."""
    level = [(1.0, ())]
    everything = []
    for d in range(depth):
        children = []
        for p, path in level:
            miss = 1.0
            for r in range(topk):
                edge = a[d] * sibling**r
                children.append((p * miss * edge, path + (r,)))
                miss *= 1 - edge
        everything += children
        level = sorted(children, key=lambda c: -c[0])[:topk]
    return sorted((p for p, _ in everything), reverse=True)[: tokens - 1]


@pytest.mark.parametrize("cum, topk, depth, tokens", [((0.9, 0.6, 0.3), 2, 3, 6), ((0.95, 0.8, 0.5, 0.4), 3, 4, 12)])
def test_tree_construction_matches_an_independent_reference(cum, topk, depth, tokens):
    acc = Acceptance(cumulative=cum)
    a = acc.conditional(depth)
    tree = build_tree(TreeSpec(topk, depth, tokens), acc, sibling=0.5)
    expected = _reference_tree(a, 0.5, topk, depth, tokens)
    assert sorted(tree.p_node.tolist(), reverse=True) == pytest.approx(expected, rel=1e-12)
    assert tree.expected_tokens == pytest.approx(1 + sum(expected), rel=1e-12)
    # A chain of per-position rates is the per-position chain formula.
    chain = build_tree(TreeSpec(1, depth, depth + 1), acc)
    assert chain.expected_tokens == pytest.approx(acc.expected_tokens(depth).item(), rel=1e-12)


def test_sibling_factor_bounds_and_tree_spec_limits():
    acc = Acceptance(alpha=0.8)
    for s in (0.0, 1.0):
        build_tree(TreeSpec(2, 2, 4), acc, sibling=s)
    with pytest.raises(ValueError, match=r"sibling factor must be in \[0, 1\], got 1.01"):
        build_tree(TreeSpec(2, 2, 4), acc, sibling=1.01)
    TreeSpec(16, 16, 256)  # the limits are inclusive
    for bad in ((17, 2, 4), (2, 17, 4), (16, 16, 257)):
        with pytest.raises(ValueError, match=r"tree topk <= 16, depth <= 16 and tokens <= 256"):
            TreeSpec(*bad)
    TreeSpec(3, 2, 1 + 3 + 9)  # exactly full
    with pytest.raises(
        ValueError, match=r"holds at most 13 tokens \(the root, 3 at depth 1 and 9 per deeper level\), not 14"
    ):
        TreeSpec(3, 2, 14)
    with pytest.raises(ValueError, match="tree topk must be a positive integer"):
        TreeSpec(True, 2, 3)
    assert parse_tree(" topk:2, depth:3, tokens:6 ") == TreeSpec(2, 3, 6)
    assert TreeSpec(1, 3, 4).label() == "chain" and TreeSpec(2, 3, 6).label() == "topk 2, depth 3, tokens 6"


def test_published_acceptance_is_what_its_sources_say():
    from specsim.speculation.drafters import published_acceptance

    pub = published_acceptance()
    assert set(pub) == {"draft_model", "eagle", "eagle3", "ngram", "mtp", "peagle", "dflash", "dspark", "suffix"}
    # vLLM issue #20780: the EAGLE head's mean acceptance length 2.29 with 3 speculative tokens.
    assert pub["eagle"][0].expected_tokens(3).item() == pytest.approx(2.29, rel=1e-12) and "#20780" in pub["eagle"][1]
    assert pub["draft_model"][0].alpha == 0.8 and "above 0.8" in pub["draft_model"][1]
    # vLLM issue #26191: 12,208 accepted over 4,816 drafts of 7 tokens -> mean acceptance length 3.535.
    assert pub["eagle3"][0].expected_tokens(7).item() == pytest.approx(1 + 12208 / 4816, rel=1e-9)
    assert "#26191" in pub["eagle3"][1] and "3.53" in pub["eagle3"][1]
    # vLLM PR #24344: 2.96 tokens per pass over all passes, matches and misses.
    assert pub["ngram"][0].expected_tokens(5).item() == pytest.approx(2.96, abs=0.01)
    assert pub["ngram"][0].cumulative[0] == pytest.approx(0.81 * 993 / 1814, abs=1e-4) and "#24344" in pub["ngram"][1]
    assert pub["mtp"][0].cumulative == (0.875,) and "85-90%" in pub["mtp"][1]
    for acc, source in pub.values():
        assert acc.source and len(source) > 40


def test_acceptance_messages_and_tree_arrays_are_exact():
    with pytest.raises(
        ValueError, match=r"position 2 accepted 0.8 > position 1 0.7\): a token is accepted only if every"
    ):
        Acceptance(cumulative=(0.7, 0.8))
    for bad in ((1.5,), (-0.1,)):
        with pytest.raises(ValueError, match=r"^per-position acceptance rates must be numbers in \[0, 1\]"):
            Acceptance(cumulative=bad)
    assert Acceptance(alpha=0.5).describe() == "alpha 0.5"
    assert Acceptance(cumulative=(0.5,)).describe() == "per-position acceptance 0.5"
    tree = build_tree(TreeSpec(2, 2, 5), Acceptance(cumulative=(0.9, 0.6)), sibling=0.5)
    # Kept: both depth-1 candidates and the first one's two children (P 0.9, 0.045, 0.6, 0.1; the second
    # candidate's first child would have 0.03).
    assert tree.depth.tolist() == [1, 1, 2, 2] and tree.rank.tolist() == [1, 2, 1, 2]
    assert tree.parent.tolist() == [-1, -1, 0, 0]


# -- one class per drafter kind (issue 17) ------------------------------------------------
@pytest.mark.parametrize(
    "spec, cls, kind, names, extend, shares",
    [
        ("llama-3.2-1b", "DraftModel", "draft_model", ("draft_model", "STANDALONE", "DraftTarget"), False, True),
        ("eagle", "EagleHead", "eagle", ("eagle", "EAGLE", None), True, False),  # TensorRT-LLM: an EAGLE-3 head only
        ("eagle3", "Eagle3Head", "eagle3", ("eagle3", "EAGLE3", "Eagle3"), True, False),
        ("ngram", "NgramDrafter", "ngram", ("ngram", "NGRAM", "NGram"), False, False),
    ],
)
def test_each_kind_is_one_class_with_its_round_and_engine_names(spec, cls, kind, names, extend, shares):
    d = make_drafter(spec, get_model("llama-3.1-8b"))
    assert type(d).__name__ == cls and d.kind == kind and d.extend_pass is extend and d.shares_vocabulary is shares
    assert (
        tuple(d.support(e).name if e in d.supported_engines() else None for e in ("vllm", "sglang", "trtllm")) == names
    )
    host = d.host_s(np.array([2.0]), np.array([1000.0]))
    assert np.all(np.asarray(host) == (NGRAM_CPU_S_PER_TOKEN * 2000 if kind == "ngram" else 0.0))


def test_mtp_is_its_own_class_running_the_targets_layers():
    d = make_drafter("mtp", get_model("deepseek-v3"))
    assert type(d).__name__ == "MtpHead" and tuple(d.support(e).name for e in ("vllm", "sglang", "trtllm")) == (
        "mtp",
        "EAGLE",
        "MTP",
    )
    assert d.extend_pass and d.step_model.extra_linear_params == 2 * 7168 * 7168 and not d.step_model.tie_embeddings
    assert d.step_model.n_mtp_layers == 0 and d.step_model.n_dense_layers == 0 and d.step_model.source == ""
    assert d.basis == "1 MTP layer(s) of the target's checkpoint"
    with pytest.raises(ValueError, match="mtp takes no path"):
        make_drafter("mtp:some/config.json", get_model("deepseek-v3"))


def test_a_head_is_built_field_by_field_not_copied_from_the_target():
    # gpt-oss: MoE with biased experts, attention sinks, window layers, MXFP4 experts.  The head takes the target's
    # width, attention layout and dtypes; it has no experts, windows, MTP layers or vision encoder.
    target = get_model("gpt-oss-20b")
    head = make_drafter("eagle3", target).step_model
    assert (head.n_layers, head.hidden_size, head.n_heads, head.n_kv_heads, head.head_dim) == (
        1,
        target.hidden_size,
        target.n_heads,
        target.n_kv_heads,
        target.head_dim,
    )
    assert (head.n_experts, head.n_sliding_layers, head.n_mtp_layers, head.extra_params, head.params_override) == (
        0,
        0,
        0,
        0,
        None,
    )
    assert head.attention_sinks and head.qkv_bias == target.qkv_bias and head.o_bias == target.o_bias
    assert head.intermediate_size == target.intermediate_size and head.vocab_size == 32000 and head.tp == 1
    assert head.expert_dtype is None and head.notes == () and head.checkpoint_dtype is None and not head.tie_embeddings
    # An MLA target's head attends with full heads; its KV is per head, not a latent.
    mla = make_drafter("eagle", get_model("deepseek-v3")).step_model
    assert not mla.is_mla and mla.n_kv_heads == mla.n_heads == 128 and mla.kv_lora_rank == 0


def test_head_options_follow_the_target_unless_given():
    # A head derived from a quantized target is its own 16-bit checkpoint (vLLM quantizes only MTP drafters with the
    # target), said in a note; its KV cache is the target's (one cache dtype for every layer).
    for dtype in ("fp8", "int4"):
        target = get_model("llama-3.1-8b", weight_dtype=dtype, kv_dtype="fp8")
        head = make_drafter("eagle3", target).step_model
        assert (head.weight_dtype, head.kv_dtype, head.head_dtype_) == ("bf16", "fp8", "bf16")
        assert len(head.notes) == 1 and f"weights bf16, not the target's {dtype}" in head.notes[0]
        given = make_drafter("eagle3", target, {"weight_dtype": dtype, "kv_dtype": "bf16"}).step_model
        assert (given.weight_dtype, given.kv_dtype, given.notes) == (dtype, "bf16", ())
    # The MTP layers are the target's own checkpoint: quantized with it.
    mtp = make_drafter("mtp", get_model("deepseek-v3")).step_model
    assert mtp.weight_dtype == get_model("deepseek-v3").weight_dtype == "fp8" and mtp.notes == ()
    # An unquantized target's head: its dtype, nothing said.
    plain = make_drafter("eagle3", get_model("llama-3.1-8b")).step_model
    assert plain.weight_dtype == "bf16" and plain.notes == ()


def test_a_head_config_gives_the_heads_own_shape(tmp_path):
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 2,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "vocab_size": 128256,
        "draft_vocab_size": 16000,
        "torch_dtype": "bfloat16",
    }
    folder = tmp_path / "my-head"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    d = make_drafter(f"eagle3:{folder}", get_model("llama-3.1-8b"))
    head = d.step_model
    assert (head.name, head.n_layers, head.n_kv_heads, head.intermediate_size, head.vocab_size) == (
        "my-head",
        2,
        4,
        11008,
        16000,
    )
    assert head.extra_linear_params == 3 * 4096 * 4096 + (32 + 8) * 128 * 4096 and head.source == str(folder.resolve())
    assert d.basis == f"head config {folder}"
    with pytest.raises(ValueError, match="describes an eagle3 head"):
        make_drafter(f"eagle:{folder}", get_model("llama-3.1-8b"))
    with pytest.raises(
        ValueError, match="has hidden size 4096, the target llama-3.2-1b 2048: it is a head for another model"
    ):
        make_drafter(f"eagle3:{folder}", get_model("llama-3.2-1b"))
    with pytest.raises(ValueError, match="eagle3 head config 'nowhere/config.json' does not exist"):
        make_drafter("eagle3:nowhere/config.json", get_model("llama-3.1-8b"))


def test_drafters_describe_themselves_with_their_basis():
    target = get_model("llama-3.1-8b")
    assert make_drafter("eagle3", target).describe() == (
        "drafter: eagle3 head (llama-3.1-8b) ("
        + make_drafter("eagle3", target).step_model.describe()[len("eagle3 head (llama-3.1-8b) (") :]
        + "; plus a draft-extend pass over the gamma + 1 verified tokens per round (derived from the target's shape; draft "
        "vocabulary 32,000, the EAGLE-3 trainers' default for every family (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B; SpecForge's "
        "Qwen3 configs, e.g. qwen3-30B-A3B-eagle3.1.json); eagle3:HEAD/config.json reads a head's own)"
    )
    assert make_drafter("ngram", target).describe() == (
        "drafter: n-gram prompt lookup, no network; 0.15 ns of CPU per cached "
        "token per round (vLLM PR #56732: 9.95 ms per step for 66.3M tokens "
        "with 8 threads)"
    )
    assert (
        make_drafter("ngram", target, ngram_cpu_s_per_token=2e-9)
        .describe()
        .endswith("2 ns of CPU per cached token per round (set by ngram_cpu_s_per_token)")
    )
    moe = make_drafter("eagle", get_model("qwen3-30b-a3b"))
    assert moe.basis == "derived from the target's shape: a dense layer of its attention and dense MLP sizes"
    assert make_drafter("llama-3.2-1b", target).describe().startswith("drafter: llama-3.2-1b (")


@pytest.mark.parametrize(
    "spec, options, ngram, message",
    [
        ("ngram:x", {}, None, "ngram takes no path"),
        ("ngram", {"weight_dtype": "fp8"}, None, "draft ngram runs no network"),
        ("ngram", {"tp": 2}, None, "draft ngram runs no network"),
        ("llama-3.2-1b", {}, 1e-9, "ngram_cpu_s_per_token applies to draft ngram only"),
        ("eagle3", {}, 1e-9, "ngram_cpu_s_per_token applies to draft ngram only"),
    ],
)
def test_drafter_options_that_do_not_apply_are_refused(spec, options, ngram, message):
    with pytest.raises(ValueError, match=message):
        make_drafter(spec, get_model("llama-3.1-8b"), options, ngram)


def test_drafter_names_and_exact_messages():
    target = get_model("llama-3.1-8b")
    assert make_drafter("eagle", target).name == "eagle head (llama-3.1-8b)"
    assert (
        make_drafter("ngram", target).name == "n-gram"
        and make_drafter("ngram", target, ngram_cpu_s_per_token=1e-9).name == "n-gram"
    )
    assert make_drafter("ngram", target, ngram_cpu_s_per_token=0.0).cpu_s_per_token == 0.0  # a free scan is allowed
    assert make_drafter("mtp", get_model("deepseek-v3")).name == "mtp (deepseek-v3)"
    exact = [
        (
            lambda: make_drafter("mtp:x", get_model("deepseek-v3")),
            "mtp takes no path: it is the target's own multi-token-prediction layers",
        ),
        (
            lambda: make_drafter("mtp", target),
            "draft mtp: the target llama-3.1-8b's config declares no multi-token-prediction layers "
            "(num_nextn_predict_layers); mtp needs a checkpoint that ships them, e.g. deepseek-v3",
        ),
        (lambda: make_drafter("ngram:x", target), "ngram takes no path"),
        (
            lambda: make_drafter("ngram", target, {"kv_dtype": "fp8"}),
            "draft ngram runs no network: draft_options['weight_dtype'], draft_options['kv_dtype'] and "
            "draft_options['tp'] do not apply",
        ),
        (
            lambda: make_drafter("llama-3.2-1b", target, ngram_cpu_s_per_token=1e-9),
            "ngram_cpu_s_per_token applies to draft ngram only",
        ),
        (lambda: NgramDrafter("n-gram", target), "n-gram drafting runs no network"),
    ]
    for call, message in exact:
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message


def test_describe_without_an_extend_pass_or_a_basis():
    d = make_drafter("llama-3.2-1b", get_model("llama-3.1-8b"))
    assert d.describe() == f"drafter: {d.step_model.describe()}"


def test_an_mtp_head_drops_what_belongs_to_the_whole_checkpoint():
    # A synthetic MoE target with tied embeddings, a vision encoder, notes and MXFP4 experts: its MTP layer keeps the
    # experts' dtype and nothing that belongs to the whole checkpoint.
    base = get_model("deepseek-v3")
    target = dataclasses.replace(base, tie_embeddings=True, extra_params=10**9, notes=("a note",), expert_dtype="mxfp4")
    head = make_drafter("mtp", target).step_model
    assert not head.tie_embeddings and head.extra_params == 0 and head.notes == () and head.expert_dtype == "mxfp4"
    assert make_drafter("eagle", get_model("qwen3-30b-a3b")).step_model.expert_dtype is None


@pytest.mark.parametrize("name, tp", [("qwen3.5-27b", 1), ("deepseek-v3", 8)])
def test_an_mtp_layer_reads_the_targets_embedding_and_head_but_holds_no_copy_of_them(name, tp):
    # vLLM shares the target's embed_tokens and lm_head with every MTP drafter (v1/spec_decode/llm_base_proposer.py,
    # 0.24.0): they are neither its memory nor its parameters, but a draft step still gathers rows and reads the head.
    target = get_model(name, tp=tp)
    head = make_drafter("mtp", target).step_model
    own = dataclasses.replace(head, vocab_from_target=False)
    vocab_bytes = 2 * target.vocab_size * target.hidden_size / head.tp * 2  # embedding and LM head, 16-bit, per rank
    assert head.weight_bytes == pytest.approx(own.weight_bytes - vocab_bytes, rel=1e-9)
    assert float(head.weight_bytes_read(1)) == pytest.approx(float(own.weight_bytes_read(1)), rel=1e-12)
    # The step reads the target's LM head: its bytes grow with the vocabulary by one matrix of 16-bit weights per rank.
    small = dataclasses.replace(head, vocab_size=1)
    read = float(head.weight_bytes_read(1)) - float(small.weight_bytes_read(1))
    assert read == pytest.approx((target.vocab_size - 1) * target.hidden_size / head.tp * 2, rel=1e-9)
    assert "params of its own, the target's embedding and LM head" in head.describe()
    assert format_count(head.non_embedding_params) in head.describe()


def test_a_head_config_with_its_own_heads_and_the_targets_vocabulary(tmp_path):
    config = {
        "architectures": ["EagleLlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 1,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    head = make_drafter(f"eagle:{path}", get_model("llama-3.1-8b")).step_model
    assert (head.n_heads, head.n_kv_heads, head.head_dim, head.vocab_size) == (16, 8, 64, 128256)
    assert head.extra_linear_params == 2 * 4096 * 4096


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1, 2]", r"^eagle3 head config '.*config\.json': expected a JSON object$"),
        (
            '{"architectures": ["EagleLlamaForCausalLM"]}',
            r"^eagle3 head config '.*config\.json' describes an eagle head$",
        ),
        (
            '{"architectures": ["LlamaForCausalLMEagle3"], "vocab_size": 32000}',
            r"^model config '.*config\.json': missing key 'num_hidden_layers'$",
        ),
        (
            '{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 1, '
            '"num_attention_heads": 32, "vocab_size": 32000}',
            r"^eagle3 head '.*config\.json' has hidden size 2048, the target "
            r"llama-3.1-8b 4096: it is a head for another model$",
        ),
    ],
)
def test_bad_head_configs_are_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        make_drafter(f"eagle3:{path}", get_model("llama-3.1-8b"))


_HEAD = (
    '{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "intermediate_size": 14336, '
    '"num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8%s}'
)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", r"^eagle3 head config '.*config\.json': not valid JSON \(Expecting property name"),
        (
            '{"architectures": "LlamaForCausalLMEagle3"}',
            r"^eagle3 head config '.*config\.json': architecture None is not an EAGLE head; "
            r"read: LlamaForCausalLMEagle3, Eagle3LlamaForCausalLM, LlamaForCausalLMEagle, EagleLlamaForCausalLM$",
        ),
        (
            '{"architectures": [7]}',
            r"^eagle3 head config '.*config\.json': architecture a list that names none is not an EAGLE head",
        ),
        (
            '{"architectures": ["MistralForCausalLM"]}',
            r"^eagle3 head config '.*config\.json': architecture 'MistralForCausalLM' is not",
        ),
        (
            _HEAD % ', "draft_vocab_size": 0',
            r"draft_vocab_size must be a whole number of tokens in \[1, 10000000\], got 0$",
        ),
        (
            _HEAD % ', "draft_vocab_size": 3.5',
            r"draft_vocab_size must be a whole number of tokens in \[1, 10000000\], got 3\.5$",
        ),
        (
            _HEAD % ', "draft_vocab_size": true',
            r"draft_vocab_size must be a whole number of tokens in \[1, 10000000\], got True$",
        ),
        (
            _HEAD % ', "draft_vocab_size": 10000001',
            r"draft_vocab_size must be a whole number of tokens in \[1, 10000000\], got 10000001$",
        ),
        (
            _HEAD % ', "vocab_size": -5',
            r"'.*config\.json': vocab_size must be a whole number of tokens in \[1, 10000000\], got -5$",
        ),
        (
            _HEAD % ', "vocab_size": 32000, "draft_vocab_size": null',
            r": draft_vocab_size must be a whole number .*, got None$",
        ),
    ],
)
def test_head_config_fields_are_read_or_refused_exactly(tmp_path, content, message):
    """Each refusal names the file, the field and what is allowed (issue 21)."""
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        make_drafter(f"eagle3:{path}", get_model("llama-3.1-8b"))


@pytest.mark.parametrize("vocab", [1, 10_000_000])
def test_head_vocabulary_bounds_are_inclusive(tmp_path, vocab):
    path = tmp_path / "config.json"
    path.write_text(_HEAD % f', "vocab_size": 128256, "draft_vocab_size": {vocab}')
    assert make_drafter(f"eagle3:{path}", get_model("llama-3.1-8b")).step_model.vocab_size == vocab


def test_a_head_config_missing_a_key_is_named_by_its_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"architectures": ["LlamaForCausalLMEagle3"], "vocab_size": 32000}')
    with pytest.raises(
        ValueError, match=r"^model config '" + re.escape(str(path)) + r"': missing key 'num_hidden_layers'$"
    ):
        make_drafter(f"eagle3:{path}", get_model("llama-3.1-8b"))


def test_a_head_takes_the_targets_attention_layout_and_position_limit():
    # Qwen3 has q/k norms; the head attends as the target does and is read under the target's context limit.
    target = get_model("qwen3-8b")
    head = make_drafter("eagle3", target).step_model
    assert target.qk_norm is True and head.qk_norm is True
    assert head.architecture == target.architecture and head.norms_per_layer == target.norms_per_layer
    assert head.max_position_embeddings == target.max_position_embeddings
    # Gemma 3 has four norms per layer (pre/post attention and MLP); its head has them too.
    gemma = get_model("gemma-3-27b")
    assert gemma.norms_per_layer == 4 and make_drafter("eagle3", gemma).step_model.norms_per_layer == 4


@pytest.mark.parametrize(
    "draft, kind",
    [("llama-3.2-1b", "draft_model"), ("eagle", "eagle"), ("eagle3", "eagle3"), ("eagle3:some/head", "eagle3")],
)
def test_commands_default_to_the_published_acceptance_of_the_drafter_and_say_so(draft, kind):
    import argparse

    from specsim.cli.args import resolve_acceptance
    from specsim.core.names import as_flags
    from specsim.speculation.drafters import published_acceptance

    args = argparse.Namespace(draft=draft, alpha=None, acceptance=None, metrics=None, metrics_gamma=None)
    with as_flags():  # as main runs a command: its label names the flags
        acc, label = resolve_acceptance(args)
    published, citation = published_acceptance()[kind]
    assert (
        acc == published and published.source in label and "pass --alpha, --acceptance or --metrics for yours" in label
    )
    # --alpha still overrides.
    assert resolve_acceptance(argparse.Namespace(**{**vars(args), "alpha": 0.6})) == (0.6, "alpha 0.6")


def test_ngram_has_no_default_acceptance_and_says_what_to_pass():
    from specsim.speculation.drafters import NgramDrafter

    with pytest.raises(
        ValueError, match=r"n-gram acceptance depends on the workload.*measured acceptance 0\.4434,0\.4051"
    ):
        NgramDrafter.default_acceptance()


def test_drafter_keywords_are_case_blind_and_a_near_miss_is_named():
    target = get_model("llama-3.1-8b")
    assert make_drafter("EAGLE3", target).kind == "eagle3"
    with pytest.raises(
        KeyError,
        match=r"; draft also takes a drafter: eagle, eagle3, mtp, ngram, peagle, pard, dflash, dspark, suffix; did you mean draft eagle3\?",
    ):
        make_drafter("eagle-3", target)
    # Separators are dropped before matching: "M---T---P" is mtp (difflib alone scores it 0.5, under the 0.6 cutoff).
    with pytest.raises(KeyError, match=r"did you mean draft mtp\?"):
        make_drafter("M---T---P", target)
    with pytest.raises(KeyError, match=r"did you mean draft ngram\?"):
        make_drafter("n___g___r___a___m", target)
    # A name near nothing gets the list and no guess.
    with pytest.raises(
        KeyError,
        match="; draft also takes a drafter: eagle, eagle3, mtp, ngram, peagle, pard, dflash, dspark, suffix$",
    ):
        make_drafter("zzzzqqq", target)


def test_an_fp8_head_config_is_read_as_fp8_not_as_the_targets_bf16(tmp_path):
    import json

    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 1,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "draft_vocab_size": 32000,
    }
    (tmp_path / "bf16").mkdir()
    (tmp_path / "bf16" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "fp8").mkdir()
    (tmp_path / "fp8" / "config.json").write_text(json.dumps({**cfg, "quantization_config": {"quant_method": "fp8"}}))
    target = get_model("llama-3.1-8b")
    bf16, fp8 = (make_drafter(f"eagle3:{tmp_path / n}", target).step_model for n in ("bf16", "fp8"))
    assert bf16.weight_dtype == "bf16" and fp8.weight_dtype == "fp8" and fp8.weight_bytes < bf16.weight_bytes
    # The basis says so when the head's stored precision is not the target's.
    assert make_drafter(f"eagle3:{tmp_path / 'fp8'}", target).basis == f"head config {tmp_path / 'fp8'}; stored in fp8"
    assert make_drafter(f"eagle3:{tmp_path / 'bf16'}", target).basis == f"head config {tmp_path / 'bf16'}"
    # --draft-weight-dtype still overrides.
    assert (
        make_drafter(f"eagle3:{tmp_path / 'fp8'}", target, {"weight_dtype": "bf16"}).step_model.weight_dtype == "bf16"
    )


def test_the_published_citations_and_default_labels_are_printed_exactly():
    # Users read these lines as the provenance of a number: every word, case and digit is checked.
    from specsim.speculation.drafters import drafter_class, published_acceptance

    def default_acceptance(kind):
        return drafter_class(kind).default_acceptance()

    pub = published_acceptance()
    classic = ("eagle", "draft_model", "eagle3", "ngram", "mtp")  # the 2026 drafters: tests/test_drafters_2026.py
    assert {k: (v[0].source, v[1]) for k, v in pub.items() if k in classic} == {
        "eagle": (
            "vLLM issue #20780",
            "vLLM issue #20780: EAGLE head yuhuili/EAGLE-LLaMA3.1-Instruct-8B on Llama-3.1-8B-Instruct, "
            "MT-bench, 3 speculative tokens: mean acceptance length 2.29 (alpha 0.634)",
        ),
        "draft_model": (
            "a matched same-family draft, the reference article: 'above 0.8'",
            "the reference article, 'Speculative decoding with draft models, explained': a stock same-family "
            "draft on its own target reaches alpha above 0.8",
        ),
        "eagle3": (
            "vLLM issue #26191",
            "vLLM issue #26191: EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B on "
            "Llama-3.1-8B-Instruct, MT-bench, T = 0, 7 speculative tokens: 4,816 drafts, 12,208 "
            "accepted, mean acceptance length 3.53 (alpha 0.744)",
        ),
        "ngram": (
            "vLLM PR #24344, code editing",
            "vLLM PR #24344: n-gram (prompt lookup 2-5, 5 tokens) on the "
            "vdaita/edit_5k_char code-editing set, per-position acceptance 0.81, 0.74, 0.70, 0.68, 0.66 where a match "
            "was found, no proposal in 821 of 1,814 passes: 2.96 tokens per pass (a favourable, high-overlap workload)",
        ),
        "mtp": (
            "DeepSeek-V3 report",
            "DeepSeek-V3 Technical Report (arXiv:2412.19437) section 5.4.3: the second token's acceptance is 85-90%",
        ),
    }
    assert pub["ngram"][0].cumulative == (0.4434, 0.4051, 0.3832, 0.3722, 0.3613)
    tail = "; pass alpha, acceptance or metrics for yours)"  # resolve_acceptance's keywords (the command: its flags)
    assert (
        default_acceptance("eagle3")[1]
        == "alpha 0.744 (the published default for an EAGLE-3 head: vLLM issue #26191" + tail
    )
    assert (
        default_acceptance("eagle")[1]
        == "alpha 0.634 (the published default for an EAGLE head: vLLM issue #20780" + tail
    )
    assert (
        default_acceptance("mtp")[1]
        == "acceptance 0.875 (the published default for an MTP layer: DeepSeek-V3 report" + tail
    )
    assert default_acceptance("draft_model")[1] == (
        "alpha 0.800 (the published default for a draft model: a matched "
        "same-family draft, the reference article: 'above 0.8'" + tail
    )
    # Any --draft that names no drafter kind is a draft model (a model name or a path), and says so.
    other, label = default_acceptance("some/draft-model")
    assert other == pub["draft_model"][0] and "the published default for a draft model: a matched" in label
    with pytest.raises(ValueError) as err:
        default_acceptance("ngram")
    assert str(err.value) == (
        "n-gram acceptance depends on the workload (how often the output repeats the prompt): pass "
        "alpha, acceptance or metrics; on code editing vLLM PR #24344 measured acceptance "
        "0.4434,0.4051,0.3832,0.3722,0.3613 (per position, passes without a match included)"
    )


def test_alpha_from_a_length_says_what_is_wrong_and_is_exact_at_the_bounds():
    from specsim.speculation.acceptance import alpha_from_acceptance_length, expected_tokens

    with pytest.raises(ValueError, match=r"^gamma must be >= 1 to infer alpha \(gamma = 0 drafts nothing\)$"):
        alpha_from_acceptance_length(1.0, 0)
    with pytest.raises(
        ValueError, match=r"^mean acceptance length must be in \[1, gamma \+ 1\], got 5\.5 with gamma 4$"
    ):
        alpha_from_acceptance_length([5.5], [4])
    with pytest.raises(ValueError, match=r"got 0\.99 with gamma 4$"):
        alpha_from_acceptance_length(0.99, 4)
    a = alpha_from_acceptance_length(np.array([1.0, 2.5, 5.0]), 4)
    assert a[0] == 0.0 and a[2] == 1.0 and abs(float(expected_tokens(a[1], 4)) - 2.5) < 1e-14
    both = alpha_from_acceptance_length(np.array([[2.0], [3.0]]), np.array([2, 5]))  # broadcast: (2, 2)
    assert both.shape == (2, 2)
    np.testing.assert_allclose(expected_tokens(both, np.array([2, 5])), [[2.0, 2.0], [3.0, 3.0]], rtol=1e-13)


def test_acceptance_messages_are_exact():
    from specsim.speculation.acceptance import parse_acceptance

    with pytest.raises(ValueError) as err:
        parse_acceptance("0.9,x")
    assert str(err.value) == "acceptance takes comma-separated rates in [0, 1], e.g. 0.92,0.81,0.70; got '0.9,x'"
    with pytest.raises(ValueError) as err:
        parse_acceptance(" , ")
    assert str(err.value) == "acceptance needs at least one rate"
    with pytest.raises(ValueError) as err:
        Acceptance(cumulative=(0.9, 0.8)).conditional(3)
    assert str(err.value) == (
        "acceptance is measured for 2 positions, not 3; specsim does not extrapolate it: a gamma of at most 2, or a "
        "rate per token (alpha) or per position measured that deep for more"
    )
    np.testing.assert_allclose(Acceptance(cumulative=(0.9, 0.72, 0.0, 0.0)).conditional(4), [0.9, 0.8, 0.0, 0.0])
    with pytest.raises(ValueError) as err:
        TreeSpec(1, 1, 1)
    assert str(err.value) == "a tree verifies at least 2 tokens (the root and one drafted token)"


def test_acceptance_refusals_word_for_word_and_a_rise_within_rounding_accepted():
    with pytest.raises(ValueError) as err:
        Acceptance(alpha=0.5, cumulative=(0.5,))
    assert str(err.value) == "acceptance needs either one alpha or per-position rates, not both"
    with pytest.raises(ValueError) as err:  # a calibration's "alpha: null" said "not both" of neither
        Acceptance()
    assert str(err.value) == "acceptance needs either one alpha or per-position rates, and has neither"
    with pytest.raises(ValueError) as err:
        Acceptance(alpha=1.5)
    assert str(err.value) == "alpha must be in [0, 1], got 1.5"
    assert Acceptance(cumulative=(0.0, 1e-12)).cumulative == (0.0, 1e-12)  # a rise of 1e-12 is rounding, not a rise


def test_a_per_position_default_is_labelled_with_its_rates(monkeypatch):
    from specsim.speculation.drafters import MtpHead

    acc, label = MtpHead.default_acceptance()
    assert label.startswith("acceptance 0.875 (the published default for an MTP layer: DeepSeek-V3 report; ")
    citation = MtpHead.published()[1]
    monkeypatch.setattr(
        MtpHead,
        "published",
        classmethod(lambda cls: (Acceptance(cumulative=(0.8, 0.6), source="two depths"), citation)),
    )
    assert MtpHead.default_acceptance()[1].startswith(
        "acceptance 0.8, 0.6 (the published default for an MTP layer: "
        "two depths; pass alpha, acceptance or metrics for yours)"
    )


def test_alpha_from_the_longest_and_shortest_mean_length_is_exactly_one_and_zero():
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    got = alpha_from_acceptance_length(np.array([1.0, 5.0, 3.0, 2.0]), np.array([4, 4, 2, 1]))
    assert got[0] == 0.0 and got[1] == 1.0 and got[2] == 1.0 and got[3] == 1.0


def test_an_ngram_deployment_has_no_network_to_replace_and_whole_rates_are_floats():
    dep = Deployment.build(draft="ngram")
    with pytest.raises(ValueError) as err:
        dep.with_draft(get_model("llama-3.2-1b"))
    assert str(err.value) == "n-gram drafting runs no network to replace"
    rates = Acceptance(cumulative=(1, 1, 0)).cumulative_rates(2)  # rates given as whole numbers read as probabilities
    assert rates.dtype == np.float64 and rates.tolist() == [1.0, 1.0]


def test_the_note_on_a_search_stopped_at_one_measured_position_is_singular(capsys):
    """DeepSeek-V3's MTP acceptance is published for one position: the note read 'measured for 1 positions: gamma is not
    searched past them'."""
    argv = ["optimal-gamma", "--hardware", "b200", "--tp", "8", "--target", "deepseek-v3", "--draft", "mtp"]
    assert main(argv + ["--batch", "1"]) == 0
    out = capsys.readouterr().out
    assert "note: acceptance is measured for 1 position: gamma is not searched past it (no extrapolation)" in out
