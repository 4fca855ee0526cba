"""Weight-only quantised GEMMs (W4A16, W8A16, NVFP4/MXFP4 weights with 16-bit activations): dequantisation per tile.

A dequantising kernel unpacks each weight once per tile of DEQUANT_TILE_TOKENS tokens, so at few tokens per weight it
does a whole tile's work for a fraction of one: the kernel stops being memory-bound at far fewer tokens than BF16,
which is the verification pass.  The measured A100 TensorRT-LLM int4_wo tables are read where the database has them.
"""

from __future__ import annotations

import numpy as np
import pytest

from specsim.describe.hardware import (
    DEQUANT_FLOP_PER_WEIGHT,
    DEQUANT_TILE_TOKENS,
    W4A16_COMPUTE_FRACTION,
    load_hardware,
)
from specsim.describe.models import get_model, model_from_hf_config
from specsim.describe.ops import BYTES_PER_ELEMENT
from specsim.timing.roofline import dequant_time_s, step_time

H100 = load_hardware("h100-sxm")


def test_a_full_tile_costs_nothing_beyond_the_full_tile_rate_and_one_token_most():
    weights = 1e9
    t = H100.dequant_time_s(weights, np.array([1.0, 8.0, 15.0, 16.0, 32.0, 33.0]))
    per_tile = DEQUANT_FLOP_PER_WEIGHT * weights / H100.flop_per_s
    assert np.allclose(t, per_tile * np.array([15 / 16, 8 / 16, 1 / 16, 0.0, 0.0, 15 / 16]))
    # The full-tile rate is the cited W4A16 share of the 16-bit rate: 2 T (1/f - 1) per weight per tile.
    assert DEQUANT_FLOP_PER_WEIGHT == pytest.approx(2 * DEQUANT_TILE_TOKENS * (1 / W4A16_COMPUTE_FRACTION - 1))


def _crossover(model) -> float:
    """The smallest batch of one-token sequences at which the roofline's pass is compute-bound."""
    batch = np.arange(1.0, 600.0)
    t = step_time(H100, model, batch, 1, 0)
    return float(batch[np.argmax(t.compute_s > t.memory_s)])


def test_w4a16_stops_being_memory_bound_at_far_fewer_tokens_than_bf16():
    bf16, int4 = get_model("llama-3.1-8b"), get_model("llama-3.1-8b", weight_dtype="int4")
    assert _crossover(bf16) > 200 and _crossover(int4) < 64


@pytest.mark.parametrize("batch", [4, 8, 16])
def test_verification_costs_a_w4a16_target_more_relative_to_decode_than_bf16(batch):
    gamma = 3
    ratios = {}
    for dtype in ("bf16", "int4"):
        m = get_model("llama-3.1-8b", weight_dtype=dtype)
        t = step_time(H100, m, batch, np.array([1.0, gamma + 1.0]), 1128).total_s
        ratios[dtype] = t[1] / t[0]
    assert ratios["int4"] > ratios["bf16"]


A100 = load_hardware("a100-sxm-80gb")


def _whole_pass(t) -> np.ndarray:
    """The article's whole-pass roofline of a step: its overhead plus the larger of its compute and memory times."""
    return t.overhead_s + np.maximum(t.compute_s, t.memory_s)


def test_a_16_bit_pass_keeps_the_whole_pass_roofline_at_every_batch():
    t = step_time(A100, get_model("llama-3.1-8b"), np.array([1.0, 64.0, 512.0]), np.array([[1.0], [6.0]]), 900)
    assert np.any(t.compute_s > t.memory_s) and np.any(t.compute_s < t.memory_s)  # both sides of the ridge are here
    assert np.allclose(t.total_s, _whole_pass(t), rtol=1e-12)


def test_weight_only_gemms_do_not_hide_behind_the_attention_memory_traffic():
    """Compute-bound W4A16 GEMMs and memory-bound attention are kernels run one after the other: at 64 decoding
    sequences over a 900-token cache the pass is the GEMMs' arithmetic plus the rest's bytes, not the larger of the
    two sums; at batch 1, where both are memory-bound, nothing changes."""
    m = get_model("llama-3.1-8b", weight_dtype="int4")
    t = step_time(A100, m, np.array([1.0, 64.0]), 1, 900)
    assert t.total_s[0] == pytest.approx(float(_whole_pass(t)[0]), rel=1e-12)
    gemm_s = 2.0 * m.matmul_weights_by_dtype(np.array(64.0))[0][0] * 64 / A100.flop_per_s_for("int4")
    rest_bytes = t.bytes[1] - m.matmul_weights_by_dtype(np.array(64.0))[0][0] * BYTES_PER_ELEMENT["int4"]
    rest_s = rest_bytes / A100.bytes_per_s
    assert gemm_s > m.matmul_weights_by_dtype(np.array(64.0))[0][0] * BYTES_PER_ELEMENT["int4"] / A100.bytes_per_s
    assert t.total_s[1] == pytest.approx(t.overhead_s + gemm_s + rest_s, rel=1e-9)
    assert t.total_s[1] > _whole_pass(t)[1] * 1.2


def test_a_weight_only_pass_lies_between_the_whole_pass_roofline_and_the_sum_of_its_parts():
    m = get_model("llama-3.1-8b", weight_dtype="int4")
    b, q = np.array([1.0, 4.0, 16.0, 32.0, 64.0, 256.0]), np.array([[1.0], [6.0]])
    t = step_time(A100, m, b, q, np.array([[[0.0]], [[4000.0]]]))
    assert np.all(t.total_s >= _whole_pass(t) * (1 - 1e-12))
    assert np.all(t.total_s <= t.overhead_s + t.compute_s + t.memory_s)


def test_a_weight_only_model_given_by_its_parameters_keeps_the_whole_pass_roofline():
    """A model given by its parameter count lists no weight-only GEMMs with their weights (nor bytes of its own), so
    its pass has no phase of their own: its matmuls' arithmetic stays beside its weights' bytes, as before the split
    (it was timed as that arithmetic with no bytes plus every byte, 1.9x the whole-pass step at 64 sequences)."""
    m = get_model("article-8b", weight_dtype="int4")
    t = step_time(A100, m, np.array([1.0, 64.0, 512.0]), 1, 900)
    assert np.any(t.compute_s > t.memory_s) and np.any(t.compute_s < t.memory_s)  # both sides of the ridge are here
    assert np.allclose(t.total_s, _whole_pass(t), rtol=1e-12)


def test_the_partly_filled_tile_is_what_a_decode_step_adds():
    m = get_model("llama-3.1-8b", weight_dtype="int4")
    linear = m.matmul_weights_by_dtype(np.array(1.0))[0][0]
    assert float(dequant_time_s(H100, m, 1, 1)) == pytest.approx(float(H100.dequant_time_s(linear, 1.0)))
    # BF16 and FP8 weights are not dequantised.
    for dtype in ("bf16", "fp8"):
        assert float(dequant_time_s(H100, get_model("llama-3.1-8b", weight_dtype=dtype), 1, 1)) == 0.0


def test_each_expert_a_pass_touches_is_dequantised_for_its_own_tokens():
    oss = get_model("gpt-oss-20b")  # MXFP4 experts, bf16 attention
    groups = oss.matmul_weights_by_dtype(np.array(4.0), np.array(4.0))
    weights, per_weight, dtype = groups[-1]
    touched = float(oss.experts_touched(4.0, 4.0))
    assert dtype == "mxfp4" and float(weights) == pytest.approx(oss.n_moe_layers * touched * oss.expert_params)
    assert float(per_weight) == pytest.approx(4 * oss.n_active_experts / touched)


def test_weight_only_int8_is_read_from_config_json():
    base = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
    }
    gptq = model_from_hf_config({**base, "quantization_config": {"quant_method": "gptq", "bits": 8}})
    ct = model_from_hf_config(
        {
            **base,
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": None}},
            },
        }
    )
    w8a8 = model_from_hf_config(
        {
            **base,
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {
                        "weights": {"num_bits": 8, "type": "int"},
                        "input_activations": {"num_bits": 8, "type": "int"},
                    }
                },
            },
        }
    )
    assert (gptq.weight_dtype, ct.weight_dtype, w8a8.weight_dtype) == ("w8a16", "w8a16", "int8")
    assert float(dequant_time_s(H100, gptq, 1, 1)) > 0.0 == float(dequant_time_s(H100, w8a8, 1, 1))


def test_the_a100_trtllm_int4_tables_are_read_and_show_the_speedup_ending(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    from specsim.timing.kernels import KernelSource

    a100 = load_hardware("a100-sxm-80gb")
    src = KernelSource(a100, "trtllm")
    bf16, int4 = get_model("llama-3.1-8b"), get_model("llama-3.1-8b", weight_dtype="int4")
    tb, tq = src.table(bf16), src.table(int4)
    assert tq is not None and tq.meta["shape"]["weight_dtype"] == "int4"
    # aiconfigurator-core 0.12.0's measured TensorRT-LLM 1.0.0 WeightOnlyQuantMatmul: the GEMMs of a one-token pass
    # run well over twice as fast as BF16's, and the gain is gone by 512 tokens.
    speedup = tb.gemm(np.array([1.0, 512.0])) / tq.gemm(np.array([1.0, 512.0]))
    assert speedup[0] > 2.0 and speedup[1] < 1.2
