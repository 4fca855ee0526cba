"""Issue 12: drafter kinds, token trees, per-position acceptance, and each engine's configuration per drafter."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
import yaml

from specsim.acceptance import (Acceptance, TreeSpec, build_tree, monte_carlo_tree, parse_acceptance, parse_tree)
from specsim.cli import main
from specsim.drafters import NGRAM_CPU_S_PER_TOKEN, make_drafter
from specsim.models import get_model
from specsim.deployment import Deployment
from specsim.speedup import expected_tokens, expected_tokens_per_position, optimal_gamma, optimal_tree


# -- acceptance -----------------------------------------------------------------
def test_per_position_acceptance_is_the_sum_of_cumulative_rates_and_is_not_extrapolated():
    acc = parse_acceptance("0.9,0.72,0.5")
    assert acc.expected_tokens(3).item() == pytest.approx(1 + 0.9 + 0.72 + 0.5)
    # The conditional rates reproduce the same E through the chain formula.
    assert expected_tokens_per_position(acc.conditional(3)).item() == pytest.approx(acc.expected_tokens(3).item())
    with pytest.raises(ValueError, match="measured for 3 positions, not 4; specsim does not extrapolate"):
        acc.expected_tokens(4)
    dep = Deployment.from_names()
    best = optimal_gamma(dep, acc, [1, 64], 1128, gamma_max=16)
    assert best.gamma_max == 3 and best.gamma.max() <= 3
    # One alpha and its per-position equivalent give the same answer.
    alpha = Acceptance(cumulative=tuple(0.8 ** k for k in range(1, 9)))
    a = optimal_gamma(dep, alpha, [1, 64], 1128, gamma_max=8)
    b = optimal_gamma(dep, 0.8, [1, 64], 1128, gamma_max=8)
    assert a.gamma.tolist() == b.gamma.tolist() and np.allclose(a.speedup, b.speedup)


def test_acceptance_that_rises_with_depth_is_refused():
    with pytest.raises(ValueError, match="must not increase with depth"):
        parse_acceptance("0.7,0.8")


# -- trees ---------------------------------------------------------------------
def test_a_chain_tree_is_the_chain_formula():
    for alpha, depth in ((0.8, 4), (0.6, 7), (0.95, 2)):
        tree = build_tree(TreeSpec(1, depth, depth + 1), Acceptance(alpha=alpha))
        assert tree.expected_tokens == pytest.approx(float(expected_tokens(alpha, depth)), rel=1e-12)


@pytest.mark.parametrize("spec, acc", [
    (TreeSpec(4, 5, 16), Acceptance(alpha=0.7)),
    (TreeSpec(2, 4, 9), Acceptance(alpha=0.85)),
    (TreeSpec(3, 3, 13), Acceptance(cumulative=(0.9, 0.7, 0.45))),
])
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


@pytest.mark.parametrize("text, message", [
    ("topk:2,depth:2,tokens:9", "holds at most 7 tokens"),
    ("topk:0,depth:2,tokens:3", "topk must be a positive integer"),
    ("binary", "--tree takes chain or topk:K,depth:D,tokens:N"),
    ("topk:2,depth:2,tokens:1", "at least 2 tokens"),
])
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
    times = eagle.pass_times(np.array([1.0, 64.0]), 3, 1128)
    plain = eagle.pass_times(np.array([1.0, 64.0]), 3, 1128)
    verify = eagle.gpu_pass(eagle.target, np.array([1.0, 64.0]), 4, 1128).total_s
    extend = eagle.gpu_pass(eagle.draft, np.array([1.0, 64.0]), 4, 1128).total_s
    assert np.allclose(times.verify.total_s, verify + extend) and np.allclose(plain.draft.total_s, times.draft.total_s)
    ngram = Deployment.build("h100-sxm", "llama-3.1-8b", "ngram", timing="roofline", engine="none")
    t = ngram.pass_times(np.array([1.0, 64.0]), 3, 1128)
    assert np.all(t.draft.total_s == 0)
    assert np.allclose(t.verify.total_s - verify, NGRAM_CPU_S_PER_TOKEN * np.array([1.0, 64.0]) * 1128)


# -- CLI and engine outputs -----------------------------------------------------------
def test_issue_command_prints_a_tree_per_batch(capsys):
    code = main(["optimal-gamma", "--target", "llama-3.1-8b", "--draft", "eagle3", "--tree", "topk:4,depth:5,tokens:16",
                 "--batch", "1,64,256", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows[0]["tree"]["topk"] > 1 and rows[2]["tree"]["topk"] == 1
    assert all(r["speedup"] >= r["chain_speedup"] * 0.99 for r in rows)


def test_ngram_needs_no_draft_model(capsys):
    code = main(["optimal-gamma", "--draft", "ngram", "--alpha", "0.5", "--batch", "1,64", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and all(r["t_draft_s"] == 0 and r["drafter"] == "ngram" for r in rows)


@pytest.mark.parametrize("draft, method, model", [
    ("llama-3.2-1b", None, "meta-llama/Llama-3.2-1B-Instruct"),
    ("eagle", "eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"),
    ("eagle3", "eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
    ("ngram", "ngram", None),
])
def test_vllm_config_per_drafter_parses_back(draft, method, model, capsys):
    code = main(["schedule", "--draft", draft, "--alpha", "0.7", "--format", "vllm"])
    config = json.loads(capsys.readouterr().out)
    assert code == 0 and config.get("method") == method and config.get("model") == model
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and ranges[-1][1] == 256 and config["num_speculative_tokens"] == max(r[2] for r in ranges)
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))


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
    assert (flags["--speculative-num-steps"], flags["--speculative-eagle-topk"], flags["--speculative-num-draft-tokens"]) == ("1", "1", "2")


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
    assert all(line.startswith("# best at batch ") for line in lines[1:])


@pytest.mark.parametrize("draft, decoding", [("llama-3.2-1b", "Draft_Target"), ("eagle3", "Eagle3"), ("ngram", "NGram")])
def test_trtllm_config_per_drafter_parses_back(draft, decoding, capsys):
    assert main(["schedule", "--draft", draft, "--alpha", "0.7", "--format", "trtllm"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)["speculative_config"]
    assert config["decoding_type"] == decoding and config["max_draft_len"] >= 1
    assert ("draft_len_schedule" in config) == (draft == "llama-3.2-1b")


def test_schedule_by_context_keeps_larger_gamma_at_long_context(capsys):
    assert main(["schedule", "--draft", "eagle3", "--alpha", "0.8", "--contexts", "512,32768", "--json", "--max-batch", "128"]) == 0
    cells = json.loads(capsys.readouterr().out)["by_context"]
    at = {(c["batch"], c["context"]): c["gamma"] for c in cells}
    assert at[(128, 32768)] >= at[(128, 512)] and at[(1, 512)] >= at[(128, 512)]


def test_metrics_pages_feed_every_command(tmp_path, capsys):
    page = ('vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 100\n'
            'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 300\n'
            'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 190\n'
            + "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{k}"}} {v}\n'
                      for k, v in enumerate((90, 65, 35))))
    path = tmp_path / "metrics.txt"
    path.write_text(page)
    assert main(["optimal-gamma", "--metrics", str(path), "--batch", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["gamma"] <= 3 and row["tokens_per_step"] == pytest.approx(1 + [0, 0.9, 1.55, 1.9][row["gamma"]])
    sg = tmp_path / "sglang.txt"
    sg.write_text('sglang:spec_accept_length{model_name="m"} 2.5\n')
    assert main(["speedup", "--metrics", str(sg), "--metrics-gamma", "3", "--gamma", "3", "--batch", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["tokens_per_step"] == pytest.approx(2.5, abs=1e-9)


# -- boundaries and exact values the mutation run showed untested ---------------------------------------------
def test_per_position_expected_tokens_at_gamma_0_and_conditional_rates_after_a_zero():
    acc = Acceptance(cumulative=(0.5, 0.0, 0.0))
    assert acc.expected_tokens(0).item() == 1.0 and acc.expected_tokens([1, 3]).tolist() == [1.5, 1.5]
    assert acc.conditional(3).tolist() == [0.5, 0.0, 0.0]  # 0/0 after a zero is a zero, not NaN
    with pytest.raises(ValueError, match=r"^gamma must be whole numbers >= 0$"):
        acc.expected_tokens(1.5)
    with pytest.raises(ValueError, match=r"^gamma must be whole numbers >= 0$"):
        acc.expected_tokens(-1)


@pytest.mark.parametrize("kwargs, ok", [
    ({"alpha": 0.0}, True), ({"alpha": 1.0}, True), ({"alpha": 1.0001}, False), ({"alpha": True}, False),
    ({"cumulative": (1.0, 1.0, 0.0)}, True), ({"cumulative": (0.5, 0.5 + 1e-13)}, True), ({"cumulative": (0.5, 0.5001)}, False),
    ({}, False), ({"alpha": 0.5, "cumulative": (0.5,)}, False), ({"cumulative": (float("nan"),)}, False),
])
def test_acceptance_bounds(kwargs, ok):
    if ok:
        Acceptance(**kwargs)
    else:
        with pytest.raises(ValueError):
            Acceptance(**kwargs)


def test_acceptance_describes_itself():
    assert Acceptance(alpha=0.75, source="x").describe() == "alpha 0.75 (x)"
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
                edge = a[d] * sibling ** r
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
    with pytest.raises(ValueError, match=r"holds at most 13 tokens \(the root, 3 at depth 1 and 9 per deeper level\), not 14"):
        TreeSpec(3, 2, 14)
    with pytest.raises(ValueError, match="tree topk must be a positive integer"):
        TreeSpec(True, 2, 3)
    assert parse_tree(" topk:2, depth:3, tokens:6 ") == TreeSpec(2, 3, 6)
    assert TreeSpec(1, 3, 4).label() == "chain" and TreeSpec(2, 3, 6).label() == "topk 2, depth 3, tokens 6"


def test_published_acceptance_is_what_its_sources_say():
    from specsim.acceptance import published_acceptance

    pub = published_acceptance()
    assert set(pub) == {"draft_model", "eagle3", "ngram", "mtp"}
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
    with pytest.raises(ValueError, match=r"position 2 accepted 0.8 > position 1 0.7\): a token is accepted only if every"):
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
