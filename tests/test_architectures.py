"""Issue 11's physics: MoE expert reads, MLA and sliding-window caches, precision, tensor parallelism."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.describe.hardware import FP8_MATMUL_SPEEDUP, W4A16_COMPUTE_FRACTION, load_hardware
from specsim.describe.models import BYTES_PER_ELEMENT, get_model, model_from_hf_config
from specsim.describe.parallel import allgather_s, allreduce_s, check_tp, comm_time_s
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import speculation_peak
from specsim.timing.roofline import step_time

H100 = load_hardware("h100-sxm")


# -- mixture of experts -----------------------------------------------------------
@pytest.mark.parametrize(
    "experts, k, tokens", [(128, 8, 1), (128, 8, 4), (128, 8, 16), (32, 4, 8), (8, 2, 3), (256, 8, 64)]
)
def test_distinct_experts_match_a_monte_carlo_of_uniform_routing(experts, k, tokens):
    # Each token picks k distinct experts uniformly.  8,000 draws: the distinct count's standard deviation is at most
    # 4.6 in these cases (4.53 at 64 tokens of 8 in 256, the largest), so the mean's standard error is below 0.052; a
    # tolerance of 0.25 is 4.8 standard errors (false-failure rate under 2e-6; the seed makes the run deterministic
    # anyway).  Drawn 1,000 at a time: the whole array of keys would take 0.5 GB at 64 x 256.
    rng = np.random.default_rng(11)
    counts = []
    for _ in range(8):
        keys = rng.random((1_000, tokens, experts), dtype=np.float32).argpartition(k - 1, axis=2)[:, :, :k]
        hit = np.zeros((1_000, experts), bool)
        np.put_along_axis(hit, keys.reshape(1_000, -1), True, axis=1)
        counts.append(hit.sum(axis=1))
    model = dataclasses.replace(get_model("qwen3-30b-a3b"), n_experts=experts, n_active_experts=k)
    assert float(model.experts_touched(tokens)) == pytest.approx(np.concatenate(counts).mean(), abs=0.25)


def test_a_pass_reads_the_experts_its_tokens_touch():
    m = get_model("qwen3-30b-a3b")
    expert_bytes = m.n_moe_layers * m.expert_params * 2.0
    one = float(m.weight_bytes_read(1))
    # A one-token pass reads exactly the active parameters (less the input-embedding gather) in bf16.
    assert one == pytest.approx(m.active_params * 2.0, rel=1e-12)
    # Verification of 4 tokens at batch 1 reads 128 (1 - (120/128)^4) = 29.1 experts per layer, not 8.
    assert float(m.weight_bytes_read(4)) - one == pytest.approx((29.12 - 8) * expert_bytes, rel=2e-3)
    # At large batch every expert is read: the whole model but the input embedding.
    assert float(m.weight_bytes_read(4096)) == pytest.approx(m.weight_bytes - m.embedding_params * 2.0, rel=1e-6)
    # FLOP follow the active parameters whatever the batch.
    flops = sum(f for f, _ in m.matmul_flop_by_dtype(64))
    assert flops == pytest.approx(2 * 64 * m.active_params, rel=1e-12)


def test_skewed_routing_reads_fewer_experts():
    uniform, skewed = get_model("qwen3-30b-a3b"), get_model("qwen3-30b-a3b", routing_effective_experts=32)
    assert float(skewed.experts_touched(1)) == pytest.approx(8.0)
    assert float(skewed.experts_touched(16)) < 0.4 * float(uniform.experts_touched(16))


def test_verification_costs_an_moe_target_far_more_than_a_dense_one_at_batch_1():
    ratio = {}
    for name in ("qwen3-30b-a3b", "qwen3-32b"):
        m = get_model(name)
        ratio[name] = float(step_time(H100, m, 1, 4, 1128).total_s / step_time(H100, m, 1, 1, 1128).total_s)
    assert ratio["qwen3-30b-a3b"] > 2.0 and ratio["qwen3-32b"] < 1.01


def test_moe_speculation_peaks_at_a_moderate_batch_dense_at_batch_1():
    batch = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    moe = speculation_peak(
        Deployment.build("h100-sxm", "qwen3-30b-a3b", "qwen3-0.6b", timing="roofline"), 0.8, batch, 1128
    )
    dense = speculation_peak(
        Deployment.build("h100-sxm", "qwen3-32b", "qwen3-0.6b", timing="roofline"), 0.8, batch, 1128
    )
    assert 8 <= moe[0] <= 64 and dense[0] == 1


# -- attention variants -------------------------------------------------------------
def test_mla_caches_the_latent_and_costs_the_absorbed_attention():
    m = get_model("deepseek-v3")
    assert m.kv_bytes_per_token == 61 * (512 + 64) * 2  # bf16 latent plus rope key, all layers
    assert m.attention_flop_per_layer_per_context == 128 * (2 * (512 + 64) + 2 * 512)
    # MLA's latent is replicated on every tensor-parallel rank; grouped-query KV heads are split.
    assert get_model("deepseek-v3", tp=8).kv_bytes_per_token == m.kv_bytes_per_token
    assert get_model("llama-3.1-70b", tp=8).kv_bytes_per_token == get_model("llama-3.1-70b").kv_bytes_per_token / 8


def test_sliding_window_layers_read_and_keep_at_most_their_window():
    m = get_model("gemma-3-27b")  # 52 local layers of window 1024, 10 global
    per_layer = m.kv_bytes_per_token_per_layer
    assert float(m.kv_bytes(512)) == pytest.approx(per_layer * 62 * 512)
    assert float(m.kv_bytes(32768)) == pytest.approx(per_layer * (10 * 32768 + 52 * 1024))
    full = dataclasses.replace(m, sliding_window=0, n_sliding_layers=0)
    long = step_time(H100, m, 8, 1, 32768).total_s
    assert long < 0.75 * step_time(H100, full, 8, 1, 32768).total_s
    assert step_time(H100, m, 8, 1, 512).total_s == pytest.approx(step_time(H100, full, 8, 1, 512).total_s)


def test_mistral_windows_every_layer_and_qwen_ignores_an_unused_window():
    assert get_model("mistral-7b").n_sliding_layers == 32
    assert get_model("qwen3-8b").n_sliding_layers == 0  # use_sliding_window: false


# -- precision --------------------------------------------------------------------------
QUANTISED = {
    "fp8": ({"quant_method": "fp8"}, "fp8"),
    "compressed-tensors fp8": (
        {
            "quant_method": "compressed-tensors",
            "config_groups": {
                "g": {
                    "weights": {"num_bits": 8, "type": "float"},
                    "input_activations": {"num_bits": 8, "type": "float"},
                }
            },
        },
        "fp8",
    ),
    "compressed-tensors w8a8": (
        {
            "quant_method": "compressed-tensors",
            "config_groups": {
                "g": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}
            },
        },
        "int8",
    ),
    "compressed-tensors w4a16": (
        {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}},
        "int4",
    ),
    "awq": ({"quant_method": "awq", "bits": 4}, "int4"),
    "gptq": ({"quant_method": "gptq", "bits": 4}, "int4"),
    "modelopt nvfp4": ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
}


@pytest.mark.parametrize("kind", QUANTISED)
def test_a_quantised_config_is_never_read_as_bf16(kind):
    quant, dtype = QUANTISED[kind]
    base = json.loads((get_model.__globals__["_CATALOG"] / "llama-3.1-8b.json").read_text())
    plain, packed = model_from_hf_config(base), model_from_hf_config({**base, "quantization_config": quant})
    assert packed.weight_dtype == dtype and packed.head_dtype_ == "bf16"
    vocab_and_norms = 2 * plain.embedding_params + plain.n_layers * 2 * plain.hidden_size + plain.hidden_size
    linear = plain.params - vocab_and_norms
    assert packed.weight_bytes == pytest.approx(linear * BYTES_PER_ELEMENT[dtype] + vocab_and_norms * 2, rel=1e-12)
    assert step_time(H100, packed, 1, 1, 1128).total_s < step_time(H100, plain, 1, 1, 1128).total_s


def test_modelopt_side_file_is_read(tmp_path):
    base = json.loads((get_model.__globals__["_CATALOG"] / "llama-3.1-8b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(base))
    (tmp_path / "hf_quant_config.json").write_text(
        json.dumps({"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}})
    )
    m = get_model(str(tmp_path))
    assert (m.weight_dtype, m.kv_dtype) == ("fp8", "fp8")


def test_matmul_rates_by_dtype():
    assert H100.flop_per_s_for("fp8") == pytest.approx(FP8_MATMUL_SPEEDUP * H100.flop_per_s)
    assert H100.flop_per_s_for("int4") == pytest.approx(W4A16_COMPUTE_FRACTION * H100.flop_per_s)
    a100 = load_hardware("a100-sxm-80gb")  # no FP8 tensor cores: FP8 weights dequantise to 16-bit
    assert a100.flop_per_s_for("fp8") == a100.flop_per_s
    # Compute-bound prefill of an FP8 model takes 1/1.5 of the bf16 time.
    bf16, fp8 = get_model("qwen3-32b"), get_model("qwen3-32b", weight_dtype="fp8")
    ratio = step_time(H100, fp8, 1, 4096, 0).compute_s / step_time(H100, bf16, 1, 4096, 0).compute_s
    assert 1 / FP8_MATMUL_SPEEDUP < ratio < 1 / FP8_MATMUL_SPEEDUP + 0.03  # the bf16 LM head and attention stay


def test_target_and_draft_dtypes_are_independent():
    dep = Deployment.build(
        "h100-sxm",
        "llama-3.1-8b",
        "llama-3.2-1b",
        target_options={"weight_dtype": "fp8"},
        draft_options={"kv_dtype": "fp8"},
    )
    assert (dep.target.weight_dtype, dep.target.kv_dtype, dep.draft.weight_dtype, dep.draft.kv_dtype) == (
        "fp8",
        "bf16",
        "bf16",
        "fp8",
    )
    assert dep.target.checkpoint_dtype == "bf16" and dep.draft.checkpoint_dtype is None


# -- tensor parallelism --------------------------------------------------------------
def test_ring_collectives():
    assert float(allreduce_s(H100, 1, 1e9)) == 0.0
    assert float(allreduce_s(H100, 8, 8e6)) == pytest.approx(4.5e-6 + 2 * 7 / 8 * 8e6 / 450e9)
    assert float(allgather_s(H100, 4, 4e6)) == pytest.approx(4.5e-6 + 3 / 4 * 4e6 / 450e9)
    m = get_model("llama-3.1-70b", tp=4)
    assert float(comm_time_s(H100, m, 16)) == pytest.approx(
        160 * float(allreduce_s(H100, 4, 16 * 8192 * 2)) + float(allgather_s(H100, 4, 16 * 128256 * 2))
    )


def test_shards_and_step_times_under_tensor_parallelism():
    one, four = get_model("llama-3.3-70b"), get_model("llama-3.3-70b", tp=4)
    norms = one.n_layers * 2 * one.hidden_size + one.hidden_size  # replicated on every rank
    assert four.weight_bytes == pytest.approx((one.weight_bytes - 2 * norms) / 4 + 2 * norms, rel=1e-12)
    t1, t4 = step_time(H100, one, 1, 1, 1128), step_time(H100, four, 1, 1, 1128)
    assert float(t4.comm_s) > 0.5e-3 and t1.comm_s == 0.0
    assert float(t4.memory_s) == pytest.approx(float(t1.memory_s) / 4, rel=1e-3)
    # Replicated KV heads: 8 KV heads over 16 ranks would keep one per rank (no 16-GPU node here: check the shape).
    assert get_model("gemma-3-270m", tp=2).kv_bytes_per_token == get_model("gemma-3-270m").kv_bytes_per_token


def test_kernel_source_uses_measured_all_reduce_and_moe_kernels():
    from specsim.timing import make_source

    src = make_source("kernels", H100, "vllm")
    m = get_model("llama-3.1-70b", tp=4)
    t = src.step_time(m, np.array([1.0, 16.0]), 1, 1024)
    assert t.fallback is None and np.all(np.asarray(t.comm_s) > 0)
    table = src.table(m)
    assert table.meta["allreduce"] == "measured" and np.all(
        np.isfinite(table.allreduce(np.array([8192.0, 16 * 8192.0])))
    )
    moe = get_model("qwen3-30b-a3b")
    k = src.step_time(moe, np.array([1.0, 1.0]), np.array([1.0, 4.0]), 1024)
    assert k.fallback is None and k.total_s[1] > 1.5 * k.total_s[0]


def test_tensor_parallel_checks():
    with pytest.raises(ValueError, match="exceeds the 8 devices"):
        check_tp(H100, 16)
    with pytest.raises(ValueError, match="must divide the 64 attention heads"):
        get_model("llama-3.3-70b", tp=3)
    with pytest.raises(ValueError, match="draft tensor parallelism 2 must be 1 or the target's 4"):
        Deployment.build("h100-sxm", "llama-3.3-70b", "llama-3.2-1b", target_options={"tp": 4}, draft_options={"tp": 2})


def test_capacity_names_the_smallest_tp_and_counts_every_gpu(capsys):
    from specsim.serving.capacity import capacity, smallest_fitting_tp, throughput_table

    dep = Deployment.build("h100-sxm", "llama-3.3-70b", "llama-3.2-1b", target_options={"tp": 4})
    # The draft follows the target's TP (vLLM's default): 70.6 + 0.6 GB per GPU fit two 80 GB GPUs at 0.9 of memory.
    assert dep.draft.tp == 4 and smallest_fitting_tp(dep, 1128) == 2
    cap = capacity(dep, 1128)
    assert cap.gpus == 4 and cap.target_weight_bytes == pytest.approx(dep.target.weight_bytes)
    frame = throughput_table(dep, 0.8, [1, 64], 1128)
    assert np.allclose(frame.tokens_per_s_per_gpu_spec * 4, frame.tokens_per_s_spec)
    # DeepSeek-V3 in FP8 (672 GB) with a one-layer draft of its own shape: no 8 x 80 GB node holds it, 8 x 141 GB does.
    target = get_model("deepseek-v3")
    draft = dataclasses.replace(target, name="one-layer", n_layers=1, n_dense_layers=0)
    for device, tp in (("h100-sxm", None), ("h200", 8)):
        assert smallest_fitting_tp(Deployment(load_hardware(device), target, draft), 1128) == tp


# -- what the CLI prints ---------------------------------------------------------------
def test_issue_command_prints_what_it_assumed(capsys):
    from specsim.describe.models import _CATALOG

    argv = [
        "optimal-gamma",
        "--target",
        str(_CATALOG / "qwen3-30b-a3b.json"),
        "--draft",
        "qwen3-0.6b",
        "--weight-dtype",
        "fp8",
        "--tp",
        "2",
        "--hardware",
        "h100-sxm",
    ]
    assert main(argv) == 0
    brief = capsys.readouterr().out.splitlines()[1]
    # By default one line names the assumptions; -v prints each in full.
    assert "FP8/INT8 matmuls at 1.5x BF16, experts read as uniformly routed, 2 all-reduces per layer" in brief
    code = main(argv + ["-v"])
    out = capsys.readouterr().out
    assert code == 0
    head = out.splitlines()[0]
    assert "MoE 8/128" in head and "weights fp8" in head and "TP 2" in head and "x 2 GPUs" in head
    for line in (
        "precision: FP8/INT8 matmuls at 1.5x",
        "experts: a pass reads the distinct experts",
        "tensor parallelism: per-GPU shards",
        "with the draft at TP 1 instead of 2",
        "draft at TP 2: vLLM's default draft_tensor_parallel_size",
    ):
        assert line in out, line
    # In BF16 the speedup peaks past batch 1, and the output says why (experts read by decode and by verification).
    assert main([a for a in argv if a not in ("--weight-dtype", "fp8")]) == 0
    assert (
        "speculation pays most at batch 32" in capsys.readouterr().out
    )  # (the draft at the target's TP 2, vLLM's default)


def test_steptime_shows_the_all_reduce_of_the_70b_at_tp4(capsys):
    code = main(["steptime", "--model", "llama-3.3-70b", "--tp", "4", "--batch", "1,64", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and all(0.5e-3 < r["comm_s"] < r["step_time_s"] for r in rows)
    assert rows[1]["comm_s"] > rows[0]["comm_s"]


def test_schedule_outputs_carry_tp_and_quantisation(capsys):
    import yaml

    code = main(
        [
            "schedule",
            "--target",
            "llama-3.3-70b",
            "--tp",
            "4",
            "--kv-dtype",
            "fp8",
            "--weight-dtype",
            "fp8",
            "--format",
            "vllm",
        ]
    )
    captured = capsys.readouterr()
    config = json.loads(captured.out)
    assert code == 0 and config["draft_tensor_parallel_size"] == 4  # vLLM's default, the target's, written out
    assert "--tensor-parallel-size 4" in captured.err and "--quantization fp8" in captured.err
    assert "--kv-cache-dtype fp8" in captured.err
    code = main(["schedule", "--target", "llama-3.3-70b", "--tp", "4", "--kv-dtype", "fp8", "--format", "trtllm"])
    options = yaml.safe_load(capsys.readouterr().out)
    assert options["tensor_parallel_size"] == 4 and options["kv_cache_config"] == {"dtype": "fp8"}
    assert options["speculative_config"]["decoding_type"] == "Draft_Target"


def test_collectives_at_their_boundaries():
    assert float(allreduce_s(H100, 2, 1e6)) == pytest.approx(4.5e-6 + 1e6 / 450e9)
    assert float(allgather_s(H100, 2, 1e6)) == pytest.approx(4.5e-6 + 0.5 * 1e6 / 450e9)
    assert float(allgather_s(H100, 1, 1e6)) == 0.0 and float(allreduce_s(H100, 1, 1e6)) == 0.0
    two = get_model("llama-3.1-70b", tp=2)
    assert float(comm_time_s(H100, two, 1)) > 161 * 4.5e-6
    assert comm_time_s(H100, get_model("llama-3.1-70b"), np.array([1.0, 8.0])).tolist() == [0.0, 0.0]
    check_tp(H100, 8)  # a whole node is allowed
    check_tp(load_hardware("cpu-epyc-2vcpu"), 1)  # one device needs no interconnect
    # check_tp's default names its own keyword to a Python caller (it said "--tp"), the command's --tp inside as_flags
    from specsim.core.names import as_flags

    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match=r"^tp must be a positive integer, got "):
            check_tp(H100, bad)
        with as_flags(), pytest.raises(ValueError, match=r"^--tp must be a positive integer, got "):
            check_tp(H100, bad)
    import dataclasses as dc

    no_link = dc.replace(H100, interconnect_bytes_per_s=None)
    with pytest.raises(
        ValueError, match=r"^tp 2 needs the device-to-device bandwidth, which profile h100-sxm does not give"
    ):
        check_tp(no_link, 2)
    with as_flags(), pytest.raises(ValueError, match=r"^--tp 2 needs the device-to-device bandwidth"):
        check_tp(no_link, 2)


def test_steptime_takes_lists_of_tokens_per_sequence_and_contexts(capsys):
    code = main(["steptime", "--tokens-per-seq", "1,4", "--context", "512,8192", "--batch", "1,64", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and len(rows) == 8
    assert {(r["tokens_per_seq"], r["context"], r["batch"]) for r in rows} == {
        (q, L, b) for q in (1, 4) for L in (512, 8192) for b in (1, 64)
    }
    one = {(r["tokens_per_seq"], r["context"], r["batch"]): r["step_time_s"] for r in rows}
    # Each point is the single-value command's: a list changes what is printed, not the numbers.
    assert main(["steptime", "--tokens-per-seq", "4", "--context", "8192", "--batch", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["step_time_s"] == one[(4, 8192, 64)]
    assert one[(1, 8192, 64)] > one[(1, 512, 64)] and one[(4, 512, 64)] > one[(1, 512, 64)]


def test_collectives_on_one_rank_cost_float_zeros_of_the_inputs_shape():
    from specsim.describe.parallel import allgather_s, allreduce_s

    for f in (allreduce_s, allgather_s):
        out = f(H100, 1, np.array([1, 2, 3]))
        assert out.dtype == np.float64 and out.shape == (3,) and not out.any()
        two = f(H100, 2, np.array([1, 2, 3]))
        assert two.dtype == np.float64 and np.all(two > H100.interconnect_latency_s)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gpt-oss-20b", "gemma-3-27b", "llama-4-scout"])
@pytest.mark.parametrize(("context", "tokens"), [(0, 1), (0, 3000), (700, 5), (5000, 9000), (8191, 1)])
def test_a_pass_attends_causally_to_the_cache_and_its_own_earlier_tokens(name, context, tokens):
    # The closed forms (full layers, windows that cap each token's keys, chunks that restart them) must equal the sum
    # over the pass's tokens of what each attends to at its own position.
    m = get_model(name)
    brute = sum(float(m.attention_flop(p)) for p in range(context, context + tokens))
    assert float(m.pass_attention_flop(context, tokens)) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("timing", ["roofline", "kernels"])
def test_a_prompt_grows_in_time_as_measured_with_its_causal_attention(timing, repo):
    # A prefill of P tokens does P (P - 1) / 2 token pairs of attention: not none (the roofline once counted none) and
    # not P^2 (the kernels source once timed every query over the whole prompt).  On an H200 the 8B's kernels (GEMMs
    # and causal SDPA, hardware/measurements/h200-iteration-steps.csv) take 20.7x as long at 16,384 tokens as at
    # 1,024; without attention a source gives 15.7x, with the full square 24.3x.  Tolerance 10%: both sources are
    # within 4% of it, and neither is fitted to this file.  A pass that is not a prompt's (a verification) keeps
    # the article's count, each new token over the L cached ones.
    import pandas as pd

    d = pd.read_csv(repo / "hardware" / "measurements" / "h200-iteration-steps.csv")
    floor = d[(d.part == "prefill") & (d.model == "llama-3.1-8b")].set_index("c")
    floor = floor.floor_gemm_ms + floor.floor_attn_ms
    m = get_model("llama-3.1-8b")
    src = Deployment.build("h200", "llama-3.1-8b", None, timing=timing, engine="none").source
    t = lambda p: float(np.asarray(src.step_time(m, 1, p, 0, prompt=True).total_s))  # noqa: E731
    assert t(16384) / t(1024) == pytest.approx(floor[16384] / floor[1024], rel=0.10)


def test_a_prompt_runs_latent_attention_uncompressed_and_up_projects_its_cached_prefix():
    # vLLM's MLA prefill (vllm/v1/attention/backends/mla/common.py at 0.24.0) attends over qk_nope + qk_rope = 192
    # dimensions and 128 values per head, not the absorbed 512-wide latent a decode step reads; a chunk over a cached
    # prefix up-projects the prefix's latents (kv_b_proj: 512 -> 128 x (128 + 128)) once.
    m = get_model("deepseek-v3", tp=8)
    heads = 128 / 8
    pairs = 61 * 1000 * 999 / 2
    assert float(m.pass_attention_flop(0, 1000)) == pytest.approx(heads * (2 * 192 + 2 * 128) * pairs)
    prefix = float(m.pass_attention_flop(4000, 1000)) - heads * (2 * 192 + 2 * 128) * 61 * (
        1000 * 4000 + 1000 * 999 / 2
    )
    assert prefix == pytest.approx(61 * 2 * 512 * heads * (128 + 128) * 4000)
    assert float(m.pass_attention_flop(0, 1000)) < 0.5 * 1000 * 999 / 2 * m.attention_flop_per_token_per_context
