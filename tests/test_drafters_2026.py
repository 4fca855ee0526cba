"""The drafters of 2026: P-EAGLE and PARD (parallel drafting), DFlash (block diffusion), DSpark (confidence-scheduled
verification) and suffix decoding (a CPU lookup with a depth per request).  Sources: docs/deployments/drafters.md."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.engines import REGISTRY, get_engine
from specsim.engines.base import Release
from specsim.speculation.acceptance import Acceptance, tokens_per_round
from specsim.speculation.deployment import Deployment
from specsim.speculation.drafters import (
    DRAFTERS,
    DFlashDrafter,
    DSparkDrafter,
    Eagle3Head,
    ParallelDraftModel,
    PEagleHead,
    SuffixDrafter,
    drafter_class,
    published_acceptance,
)

#: (--draft, target, the tokens per sequence of its one draft pass at K draft tokens)
PARALLEL = [
    ("peagle", "gpt-oss-20b", lambda k: 2 * k),
    ("pard", "qwen3-8b", lambda k: 2 * k + 1),
    ("dflash", "qwen3-8b", lambda k: k + 1),
    ("dspark", "qwen3-8b", lambda k: k),
]


#: The newest vLLM that runs P-EAGLE and PARD: 0.34.0 refuses parallel_drafting outside DFlash and DSpark
#: (config/speculative.py 0.34.0 L1688-1693), and vllm@latest is 0.34.
PARALLEL_VLLM = "vllm@0.33.0"


def _dep(draft, target="llama-3.1-8b", engine=None, timing="roofline"):
    if engine is None:
        engine = PARALLEL_VLLM if draft in ("peagle", "pard") else "vllm"
    return Deployment.build("h100-sxm", target, draft, timing=timing, engine=engine)


@pytest.mark.parametrize("draft, target, tokens", PARALLEL)
def test_a_parallel_drafter_runs_one_draft_pass_whatever_k(draft, target, tokens):
    dep = _dep(draft, target)
    k = np.arange(0.0, 8.0)
    r = dep.round_time(1, 1128, k[:, None])
    assert r.draft_passes[:, 0].tolist() == [0.0] + [1.0] * 7
    # The pass carries the tokens the engine lays out per sequence (vLLM's parallel-drafting slots, DFlash's block).
    for steps in (2, 7):
        one = dep.drafter_pass(1, tokens(steps), 1128).total_s
        assert float(dep.round_time(1, 1128, steps).parts()["draft steps"]) == pytest.approx(float(one), rel=1e-12)
    # At batch 1 the pass is memory-bound: 7 draft tokens cost within 10% of 2, where a chain's draft time grows 3.5-fold.
    d2, d7 = (float(dep.round_time(1, 1128, s).parts()["draft steps"]) for s in (2, 7))
    assert d7 < 1.10 * d2
    chain = _dep("eagle3")
    c2, c7 = (float(chain.round_time(1, 1128, s).parts()["draft steps"]) for s in (2, 7))
    assert c7 == pytest.approx(3.5 * c2, rel=1e-12)
    # The engine's per-step host work (per round and per sequence) counts the one pass, not K steps.
    assert float(dep.round_host(8, 7)[0]) == float(dep.round_host(8, 1)[0]) > 0.0
    assert float(chain.round_host(8, 7)[0]) > float(chain.round_host(8, 1)[0])


def test_parallel_drafters_draft_chains_only():
    dep = _dep("peagle", "gpt-oss-20b")
    from specsim.speculation.acceptance import TreeSpec

    with pytest.raises(ValueError, match="token trees need a drafting network"):
        dep.outcome(0.7, TreeSpec(2, 3, 6))


def test_block_drafters_draft_at_most_their_block_and_the_search_stops_there():
    from specsim.speculation.search import optimal_gamma

    for draft, most in (("dflash", 15), ("dspark", 7)):
        dep = _dep(draft, "qwen3-8b")
        assert dep.drafter.max_steps == most
        with pytest.raises(
            ValueError, match=rf"drafts at most {most} tokens a round \(its block\): gamma {most + 1} is beyond it"
        ):
            dep.outcome(0.8, most + 1)
        assert optimal_gamma(dep, 0.8, [1, 64], 1128).gamma_max == most


def test_dspark_prices_verification_at_the_mean_verified_tokens():
    dep = _dep("dspark", "qwen3-8b")
    # A chat-like decay: rasyosef/Llama-3.2-1B-Instruct-DSpark on "writing" (vllm-project/speculators#1135).
    acc = Acceptance(cumulative=(0.617, 0.388, 0.244, 0.158, 0.099, 0.062, 0.041))
    batch = np.array([1.0, 64.0, 256.0, 512.0])
    out = dep.outcome(acc, 7, batch, 1128)
    v = dep.drafter.verified(dep, acc, np.asarray(7.0), batch, 1128)
    assert np.all((v >= 0) & (v <= 7))
    # The verify pass is the target over 1 + v tokens per sequence, and E the mix of the neighbouring whole lengths.
    want = dep.gpu_pass(dep.target, batch, 1.0 + v, 1128).total_s
    np.testing.assert_allclose(out.round.fixed.verify.total_s, want, rtol=1e-12)
    np.testing.assert_allclose(out.tokens, tokens_per_round(acc, 7, verified=v), rtol=1e-12)
    # Verification turns compute-bound as the batch grows: the scheduler verifies fewer tokens per sequence, never more.
    assert v[0] == 7.0 and np.all(np.diff(v) <= 0) and v[-1] < 7.0
    assert np.any(v != np.round(v))  # a budget between whole lengths: some sequences verify one token more
    # The chosen v is the best of every quarter-token budget, each priced on its own.
    for i, b in enumerate(batch):
        rates = [
            float(tokens_per_round(acc, 7, verified=c) / dep.round_time(b, 1128, 7, 1, 1.0 + c).total_s)
            for c in np.arange(0.0, 7.01, 0.25)
        ]
        assert float(out.tokens[i] / out.round.total_s[i]) == pytest.approx(max(rates), rel=1e-12)
    # The draft pass is paid whatever is verified (paper section 5.4): one pass over gamma tokens per sequence.
    np.testing.assert_allclose(out.round.parts()["draft steps"], dep.drafter_pass(batch, 7, 1128).total_s, rtol=1e-12)


def test_dspark_verifies_everything_when_every_token_is_accepted_and_nothing_when_none_is():
    dep = _dep("dspark", "qwen3-8b")
    assert float(dep.drafter.verified(dep, 1.0, np.asarray(7.0), 1, 1128)) == 7.0
    assert float(dep.drafter.verified(dep, 0.0, np.asarray(7.0), 1, 1128)) == 0.0


def test_suffix_costs_cpu_per_sequence_and_proposes_a_depth_per_request():
    dep = _dep("suffix", engine="vllm@0.33.0")  # its CPU proposer: 0.34 runs suffix decoding on the GPU
    d = dep.drafter
    assert d.cpu_s_per_sequence == pytest.approx((6.288e-6 + 4.126e-6) * 1.693, rel=1e-12)  # ArcticInference PR #212
    batch, context = np.array([1.0, 8.0, 64.0]), np.array([[512.0], [8192.0]])
    np.testing.assert_allclose(
        d.host_s(batch, context), np.broadcast_to(d.cpu_s_per_sequence * batch, (2, 3)), rtol=1e-12
    )
    r = dep.outcome(0.7, 6, batch, 1128).round
    np.testing.assert_allclose(r.parts()["drafter host time"], d.cpu_s_per_sequence * batch, rtol=1e-12)
    assert float(np.max(r.parts()["draft steps"])) == 0.0
    # The depth per request: the positions whose acceptance is at least min_token_prob (0.1), under gamma and 24.
    acc = Acceptance(cumulative=(0.9, 0.5, 0.2, 0.08))
    depth = d.verified(dep, acc, np.array([1.0, 2.0, 3.0, 4.0]), 1, 1128)
    assert depth.tolist() == [1.0, 2.0, 3.0, 3.0]
    assert float(d.verified(dep, 0.7, np.asarray(16.0), 1, 1128)) == 6.0  # 0.7^6 = 0.118 >= 0.1 > 0.7^7
    assert (
        float(d.verified(dep, 0.999, np.asarray(16.0), 1, 1128)) == 16.0
        and d.verified(dep, 1.0, np.asarray(30.0), 1, 1128) == 24.0
    )
    out = dep.outcome(acc, 4, 8, 1128)
    assert float(out.tokens) == pytest.approx(1 + 0.9 + 0.5 + 0.2, rel=1e-12)  # the fourth token is not proposed
    want = dep.gpu_pass(dep.target, 8, 4, 1128).total_s  # 1 + depth 3
    assert float(out.round.fixed.verify.total_s) == pytest.approx(float(want), rel=1e-12)
    # vLLM 0.34.0 (and vllm@latest, read at it) runs the lookup on the GPU: no CPU time, the token ids' scan instead
    gpu = _dep("suffix").outcome(0.7, 6, batch, 1128).round
    assert "drafter host time" not in gpu.parts()
    np.testing.assert_allclose(gpu.fixed.lookup_s, 4 * batch * 1128 / dep.hardware.bytes_per_s, rtol=1e-12)


@pytest.mark.parametrize(
    "argv, cited",
    [
        (
            ["--draft", "peagle", "--target", "gpt-oss-20b", "--engine", PARALLEL_VLLM],
            "vLLM blog 2026-03-13-p-eagle.md, B200, T = 0: P-EAGLE 4-layer head on gpt-oss-20b, MT-Bench, 7 draft tokens: mean "
            "acceptance length 3.7 (alpha 0.760)",
        ),
        (
            ["--draft", "dflash", "--target", "qwen3-8b"],
            "DFlash paper (arXiv:2602.06036) Table 1, thinking off, T = 0, H200, block 16: a DFlash block-diffusion drafter, 5 layers "
            "on qwen3-8b, MT-Bench, 15 draft tokens: mean acceptance length 4.24 (alpha 0.768)",
        ),
        (
            ["--draft", "dspark", "--target", "qwen3-8b"],
            "DSpark paper (arXiv:2607.05147) Table 1, block 7, T = 1, scheduler off: a DSpark confidence-scheduled drafter, 5 layers "
            "on qwen3-8b, MT-Bench, 7 draft tokens: mean acceptance length 3.72 (alpha 0.762)",
        ),
        (
            ["--draft", "suffix"],
            "vLLM PR #24852: suffix decoding on MT-Bench, 1 speculative token: mean acceptance length 1.62",
        ),
    ],
)
def test_optimal_gamma_names_the_default_acceptance_and_its_citation(argv, cited, capsys):
    assert main(["optimal-gamma", "--batch", "1,64", "--timing", "roofline", "-v"] + argv) == 0
    out = capsys.readouterr().out
    kind = argv[1]
    # a published row for the target's family and workload (acceptance_data.resolve), or the class's default
    assert (
        f"published for {DRAFTERS[kind].label} on " in out or f"the published default for {DRAFTERS[kind].label}" in out
    )
    assert cited == DRAFTERS[kind].published()[1][: len(cited)] and f"; the default in full: {cited}" in out
    # The citation the default comes from is what the JSON answer carries.
    assert main(["optimal-gamma", "--batch", "1", "--timing", "roofline", "--json"] + argv) == 0
    assert json.loads(capsys.readouterr().out)[0]["acceptance"].startswith(
        "alpha " if kind != "suffix" else "acceptance 0.62"
    )


def test_pard_has_no_default_acceptance_and_says_why(capsys):
    assert (
        main(
            ["optimal-gamma", "--draft", "pard", "--target", "qwen3-8b", "--batch", "1", "--timing", "roofline"]
            + ["--engine", PARALLEL_VLLM]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "specsim optimal-gamma: error: PARD's published acceptance length, 5.6 on HumanEval with Llama-3.1-8B "
        "(vLLM PR #18541), names no draft length, so it gives no per-token rate: pass --alpha, --acceptance or --metrics"
    ]
    assert "pard" not in published_acceptance()


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["--draft", "dflash", "--target", "qwen3-8b", "--engine", "vllm@0.10"],
            "vllm@0.10 (vLLM 0.13.0, the newest release of 0.10-0.13) refuses method dflash (vllm/config/speculative.py SpeculativeMethod: in 0.20.0, not 0.19.1 "
            "(PR #38300)): a DFlash block-diffusion drafter (--draft dflash) runs from vllm 0.20.0; use vllm@0.20.0 or later, or another drafter",
        ),
        (
            ["--draft", "dspark", "--target", "qwen3-8b", "--engine", "vllm@0.24.1"],
            "vllm 0.24.1 refuses method dspark (vllm/config/speculative.py SpeculativeMethod: in 0.25.0 (DSparkModelTypes, "
            "L60), not 0.24.0 (PR #46995)): a DSpark confidence-scheduled drafter (--draft dspark) runs from vllm 0.25.0; use vllm@0.25.0 or "
            "later, or another drafter",
        ),
        (
            ["--draft", "peagle", "--target", "gpt-oss-20b", "--engine", "sglang"],
            "sglang does not run a P-EAGLE parallel-drafting head (--draft peagle) in any release: no serving support found (feature "
            "request sgl-project/sglang#23171 open; SpecForge PR #575 trains P-EAGLE heads); engines that do: vllm from 0.16.0 to 0.33",
        ),
        (
            ["--draft", "suffix", "--engine", "trtllm"],
            "trtllm does not run suffix decoding (--draft suffix) in any release: TensorRT-LLM's SADecodingConfig is a suffix automaton on "
            "the GPU, not suffix trees; engines that do: vllm from 0.12.0",
        ),
        (
            # a release candidate before the first one read with the drafter's config (PARD: 1.3.0rc26) is refused
            ["--draft", "pard", "--target", "qwen3-8b", "--alpha", "0.7", "--engine", "trtllm@1.3.0rc25"],
            "trtllm 1.3.0rc25 refuses decoding_type PARD (PARDDecodingConfig.decoding_type in tensorrt_llm/llmapi/llm_args.py at "
            "commit 00043967; release from the 1.3.0rc26 API reference, its Literal['PARD'] (PR #11438; no earlier one read)): a "
            "PARD parallel draft model (--draft pard) runs from trtllm 1.3.0rc26; use trtllm@1.3.0rc26 or later, or another drafter",
        ),
        (
            # TensorRT-LLM's PyTorch backend runs an EAGLE-3 head for decoding_type Eagle: no EAGLE-1/2 written for it
            ["--draft", "eagle", "--engine", "trtllm"],
            "trtllm does not run an EAGLE head (--draft eagle) in any release: on the PyTorch backend decoding_type Eagle runs an "
            "EAGLE-3 head (EagleDecodingConfig.spec_dec_mode: EAGLE3_ONE_MODEL or EAGLE3, tensorrt_llm/llmapi/llm_args.py "
            "1.0.0-1.2.0; Eagle3DecodingConfig from 1.3.0rc2); EAGLE-1/2 runs on the TensorRT engine backend only, which specsim "
            "does not model; engines that do: vllm from 0.10.0, sglang from 0.4.3",
        ),
        (
            ["--draft", "llama-3.2-1b", "--engine", "vllm@0.10"],
            "vllm@0.10 (vLLM 0.13.0, the newest release of 0.10-0.13) refuses method draft_model (vllm/engine/arg_utils.py: 'not supported yet' before 0.15.0): "
            "a draft model (--draft MODEL) runs from vllm 0.15.0; use vllm@0.15.0 or later, or another drafter",
        ),
    ],
)
@pytest.mark.parametrize("command", ["optimal-gamma", "explain", "compare", "schedule"])
def test_a_drafter_the_named_engine_release_does_not_run_is_refused_in_one_line(argv, line, command, capsys):
    size = ["--max-batch", "1"] if command == "schedule" else ["--batch", "1"]
    assert main([command, "--timing", "roofline"] + size + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"specsim {command}: error: {line}"]


def test_every_refusal_names_only_engine_releases_specsim_takes():
    """A drafter refused at a release names the --engine to use instead, and the engines that run it: each such name
    resolves.  PARD on TensorRT-LLM said 'use trtllm@1.4.0 or later', which --engine refused in turn (no preset past
    1.3), and the engines that run P-EAGLE or PARD listed 'vllm from 0.16.0', which 0.34.0 refuses."""
    from specsim.speculation.drafters import drafter_class

    checked = 0
    for name, engine in REGISTRY.items():
        oldest, newest = engine.ranges[0][0], engine.ranges[-1][1]
        for kind, how in engine.methods.items():
            cls = drafter_class(kind)
            for at, refused in ((oldest, how.since > oldest), (newest, how.until is not None)):
                if not refused:
                    continue
                with pytest.raises(ValueError) as said:
                    cls.support(engine, at)
                named = re.findall(rf"use ({name}@[0-9a-z.]+[0-9])", str(said.value))
                for spec in named:
                    get_engine(spec)  # raises where no preset covers the release it names
                assert named or engine.past_newest(how.since), str(said.value)
                checked += 1
            with pytest.raises(ValueError) as said:
                cls.support("tgi")  # the engines that do, each with its last release where it has one
            listed = re.search(rf"{name} from ([0-9.]+)( to ([0-9.]+))?", str(said.value))
            assert listed and (listed.group(3) is None) == (how.until is None), str(said.value)
            if how.until is not None:
                assert listed.group(3) == f"{how.until[0]}.{how.until[1]}" and get_engine(f"{name}@{listed.group(3)}")
    assert checked >= 5


def test_the_refusal_as_a_subprocess_is_one_line_and_exit_2():
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "specsim",
            "optimal-gamma",
            "--draft",
            "dflash",
            "--target",
            "qwen3-8b",
            "--engine",
            "vllm@0.10",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "runs from vllm 0.20.0" in run.stderr


def test_each_new_drafter_is_one_class_and_one_registry_entry_with_its_engine_names():
    rows = {
        "peagle": (PEagleHead, {"vllm": ("eagle3", (0, 16, 0))}),
        "pard": (ParallelDraftModel, {"vllm": ("draft_model", (0, 16, 0)), "trtllm": ("PARD", Release("1.3.0rc26"))}),
        "dflash": (
            DFlashDrafter,
            {
                "vllm": ("dflash", (0, 20, 0)),
                "sglang": ("DFLASH", (0, 5, 11)),
                "trtllm": ("DFlash", Release("1.3.0rc27")),
            },
        ),
        "dspark": (
            DSparkDrafter,
            {
                "vllm": ("dspark", (0, 25, 0)),
                "sglang": ("DSPARK", (0, 5, 16)),
                "trtllm": ("DSpark", Release("1.3.0rc27")),
            },
        ),
        "suffix": (SuffixDrafter, {"vllm": ("suffix", (0, 12, 0))}),
    }
    for kind, (cls, engines) in rows.items():
        assert DRAFTERS[kind] is cls and drafter_class(kind.upper()) is cls and cls.kind == kind
        assert {e: (s.name, s.since) for e, s in cls.supported_engines().items()} == engines
        for engine in {"vllm", "sglang", "trtllm"} - set(engines):
            with pytest.raises(
                ValueError, match=rf"^{engine} does not run .* in any release: .*engines that do: vllm from"
            ):
                cls.support(engine)
        since = cls.supported_engines()["vllm"].since
        assert cls.support("vllm", since).name == engines["vllm"][0]
        with pytest.raises(ValueError, match=rf"runs from vllm {since[0]}\.{since[1]}\.0"):
            cls.support("vllm", (since[0], since[1] - 1, 9))
    # P-EAGLE is vLLM's EAGLE-3 proposer with parallel drafting: its rounds overlap where EAGLE-3's do.
    assert issubclass(PEagleHead, Eagle3Head) and PEagleHead.engine_kind == "eagle3"
    assert (
        "engine vllm 0.16.0 (preset vllm@0.14), round host work overlapped;"
        in _dep("peagle", "gpt-oss-20b", engine="vllm@0.16.0").brief()
    )


@pytest.mark.parametrize(
    "argv, config",
    [
        (
            ["--draft", "peagle", "--target", "gpt-oss-120b", "--engine", PARALLEL_VLLM],
            {"method": "eagle3", "model": "amazon/gpt-oss-120b-p-eagle", "parallel_drafting": True},
        ),
        (
            ["--draft", "pard", "--target", "qwen3-8b", "--engine", PARALLEL_VLLM],
            {"model": "amd/PARD-Qwen3-0.6B", "parallel_drafting": True},
        ),
        (
            ["--draft", "pard", "--target", "llama-3.1-8b", "--engine", PARALLEL_VLLM],
            {"model": "amd/PARD-Llama-3.2-1B", "parallel_drafting": True},
        ),
        (["--draft", "dflash", "--target", "qwen3-8b"], {"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16"}),
        (
            ["--draft", "dspark", "--target", "qwen3-8b"],
            {"method": "dspark", "model": "deepseek-ai/dspark_qwen3_8b_block7"},
        ),
        (["--draft", "suffix"], {"method": "suffix"}),
    ],
)
def test_vllm_configs_of_the_new_drafters_carry_their_method_checkpoint_and_keys(argv, config, capsys):
    assert (
        main(["schedule", "--format", "vllm", "--alpha", "0.7", "--timing", "roofline", "--max-batch", "8"] + argv) == 0
    )
    written = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in written.items() if k in config} == config
    assert "parallel_drafting" in written or "parallel_drafting" not in config
    assert written["num_speculative_tokens"] == max(g for _, _, g in written["num_speculative_tokens_per_batch_size"])


def test_a_block_drafter_config_gives_its_layers_block_and_fused_layers(tmp_path):
    from specsim.describe.models import get_model
    from specsim.speculation.drafters import make_drafter

    target = get_model("qwen3-8b")
    cfg = {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "block_size": 10,
        "num_hidden_layers": 3,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 17, 33]},
    }
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps(cfg))
    d = make_drafter(f"dflash:{tmp_path / 'd'}", target)
    assert (d.block_size, d.max_steps, d.step_model.n_layers) == (10, 9, 3)
    assert d.step_model.extra_linear_params == 3 * 4096 * 4096
    derived = make_drafter("dflash", target)
    assert derived.step_model.n_layers == 5 and derived.step_model.extra_linear_params == 5 * 4096 * 4096
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "config.json").write_text(json.dumps({**cfg, "architectures": ["LlamaForCausalLMEagle3"]}))
    with pytest.raises(
        ValueError, match=r"architecture 'LlamaForCausalLMEagle3' is not a dflash drafter; read: DFlashDraftModel$"
    ):
        make_drafter(f"dflash:{tmp_path / 'e'}", target)
    with pytest.raises(ValueError, match="is not a dspark drafter; read: DSparkDraftModel$"):
        make_drafter(f"dspark:{tmp_path / 'd'}", target)


def test_the_published_lengths_are_what_their_sources_say():
    pub = published_acceptance()
    assert pub["peagle"][0].expected_tokens(7).item() == pytest.approx(3.70, rel=1e-9)
    assert pub["dflash"][0].expected_tokens(15).item() == pytest.approx(4.24, rel=1e-9)
    assert pub["dspark"][0].expected_tokens(7).item() == pytest.approx(3.72, rel=1e-9)
    assert pub["suffix"][0].cumulative == (0.62,)
    rows = {(r.target, r.workload, r.gamma): r.mean_length for r in DSparkDrafter.published_lengths}
    assert rows[("qwen3-8b", "GSM8K", 7)] == 6.17 and rows[("qwen3-14b", "Arena-Hard", 7)] == 3.13 and len(rows) == 27
    rows = {(r.target, r.workload): r.mean_length for r in DFlashDrafter.published_lengths}
    assert rows[("qwen3-8b", "MATH-500")] == 7.87 and rows[("qwen3-4b", "MT-Bench")] == 4.35 and len(rows) == 14


def test_the_simulator_plays_a_drafter_that_verifies_a_prefix_per_request_at_its_mean_verified_length():
    """DSpark verifies a prefix of its block per request: the simulator's table holds the mean verified length v per batch
    (the drafter's own rule), and each sequence's round verifies floor(v) or floor(v) + 1 drafted tokens with mean v and
    accepts only among them, so a round yields the outcome's tokens on average.  200,000 draws of tokens per round
    (standard deviation under 1) give their mean within 0.002 (one standard error); the tolerance 0.01 is five of them
    (false failure well under 1e-6)."""
    from specsim.serving.simulator import StepTable, _emit
    from specsim.speculation.acceptance import as_acceptance, tokens_per_round
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build("h100-sxm", "qwen3-8b", "dspark", timing="roofline")
    table = StepTable(dep, 128, 500, 7, acceptance=0.6)
    v = float(table.verified(128, np.array([300.0]), 7)[0])
    assert v == pytest.approx(float(dep.drafter.verified(dep, 0.6, np.array(7.0), 128, 300.0)), abs=0.26)  # the grid's
    assert 1 < v < 7  # a prefix of the block, not all of it
    cum = as_acceptance(0.6).cumulative_rates(7)
    for verified in (v, 2.25, 7.0):
        draws = _emit(np.random.default_rng(3), cum, 7, 2000, 100, np.full(100, verified))
        assert draws.mean() == pytest.approx(
            float(tokens_per_round(0.6, np.array(7.0), verified=np.array(verified))), abs=0.01
        )
    assert table.verified(128, np.array([300.0]), 0) is None  # plain decoding verifies nothing


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["optimal-gamma", "--draft", "dflash:/nonexistent/dflash", "--target", "qwen3-8b"],
            "dflash drafter config '/nonexistent/dflash' does not exist",
        ),
        (["optimal-gamma", "--draft", "suffix:x"], "suffix takes no path"),
        (
            ["optimal-gamma", "--draft", "suffix", "--draft-weight-dtype", "fp8"],
            "--draft suffix runs no network: --draft-weight-dtype, --draft-kv-dtype and --draft-tp do not apply",
        ),
        (
            [
                "optimal-gamma",
                "--draft",
                "pard",
                "--target",
                "gemma-3-27b",
                "--alpha",
                "0.7",
                "--engine",
                PARALLEL_VLLM,
            ],
            "no published PARD draft is known for gemma-3-27b (known: llama-3* (amd/PARD-Llama-3.2-1B), qwen3-* "
            "(amd/PARD-Qwen3-0.6B)); give one with --draft pard:MODEL",
        ),
        (
            ["explain", "--draft", "dspark", "--target", "qwen3-8b", "--gamma", "8", "--batch", "1"],
            "a DSpark confidence-scheduled drafter drafts at most 7 tokens a round (its block): gamma 8 is beyond it",
        ),
        (
            ["optimal-gamma", "--draft", "peagle", "--target", "gpt-oss-20b", "--tree", "topk:2,depth:3,tokens:6"]
            + ["--engine", PARALLEL_VLLM],
            "token trees need a drafting network (draft model, EAGLE or MTP); a P-EAGLE parallel-drafting head drafts a chain",
        ),
    ],
)
def test_bad_input_to_the_new_drafters_is_one_line_and_exit_2(argv, line, capsys):
    assert main(argv[:1] + ["--timing", "roofline"] + argv[1:]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"specsim {argv[0]}: error: ") and line in err[0], err


def test_speedup_gives_each_batch_its_own_tokens_where_the_verified_prefix_varies(capsys):
    argv = [
        "speedup",
        "--draft",
        "dspark",
        "--target",
        "qwen3-8b",
        "--gamma",
        "7",
        "--batch",
        "1,512",
        "--timing",
        "roofline",
        "--acceptance",
        "0.617,0.388,0.244,0.158,0.099,0.062,0.041",
    ]
    assert main(argv + ["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    dep = _dep("dspark", "qwen3-8b")
    acc = Acceptance(cumulative=(0.617, 0.388, 0.244, 0.158, 0.099, 0.062, 0.041))
    want = dep.outcome(acc, 7, np.array([1.0, 512.0]), 1128).tokens
    assert [r["tokens_per_round"] for r in rows] == pytest.approx(want.tolist(), rel=1e-12) and want[0] > want[1]
    assert main(argv) == 0
    assert (
        f"gamma 7: {want[1]:.4f}-{want[0]:.4f} (the verified prefix varies with batch) tokens per target pass"
        in capsys.readouterr().out
    )


def test_a_schedule_for_an_engine_that_never_runs_the_drafter_is_refused_before_anything_else(capsys):
    assert (
        main(["schedule", "--format", "sglang", "--draft", "peagle", "--target", "gpt-oss-20b", "--timing", "roofline"])
        == 2
    )
    assert capsys.readouterr().err.startswith(
        "specsim schedule: error: sglang does not run a P-EAGLE parallel-drafting head"
    )


@pytest.mark.parametrize("engine", ["vllm@0.34.0", "vllm@latest", "vllm"])
@pytest.mark.parametrize(
    "argv, label",
    [
        (
            ["speedup", "--draft", "peagle", "--target", "gpt-oss-20b", "--gamma", "4", "--timing", "roofline"],
            "a P-EAGLE parallel-drafting head",
        ),
        (
            ["schedule", "--format", "vllm", "--draft", "pard", "--target", "qwen3-8b", "--alpha", "0.7"],
            "a PARD parallel draft model",
        ),
        (["bench-plan", "--draft", "peagle", "--target", "gpt-oss-120b", "--out", "plan"], "a P-EAGLE"),
    ],
)
def test_vllm_0_34_refuses_parallel_drafting_outside_dflash_and_dspark(engine, argv, label, capsys, tmp_path):
    """vLLM 0.34.0 raises for parallel_drafting with any method but dflash and dspark (config/speculative.py 0.34.0
    L1688-1693): P-EAGLE and PARD, which run eagle3 and draft_model with it, are refused there, and vllm@latest is 0.34;
    0.33.0 still takes them."""
    argv = [a if a != "plan" else str(tmp_path / "plan") for a in argv]
    assert main(argv + ["--engine", engine]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"specsim {argv[0]}: error: vllm 0.34.0 refuses {label}"), err
    assert "L1688-1693" in err[0] and "use vllm@0.33.0, or another drafter" in err[0]
    assert not (tmp_path / "plan").exists()  # nothing half-written
    assert main(argv + ["--engine", "vllm@0.33.0"]) == 0
