"""Issue 29's targets: recurrent (Gated DeltaNet, Mamba-2) layers, interleaved MoE, chunked attention, MiniMax-M2.

Published sizes are checked against the counts; recurrent state against vLLM's state-shape formulas computed here
independently; the verification pass through recurrent layers against the per-token checkpoints engines write.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.core.names import as_flags
from specsim.describe.hardware import load_hardware
from specsim.describe.models import _CATALOG, catalog_entry, get_model, model_from_hf_config
from specsim.engines import PRESETS
from specsim.serving.capacity import DEFAULT_SCRATCH_DRAFT_TOKENS, capacity, scratch_bytes
from specsim.speculation.deployment import Deployment
from specsim.timing.roofline import recurrent_time_s, step_time

H200 = load_hardware("h200")
MIB = 2**20


def _config(name: str) -> dict:
    return json.loads((_CATALOG / f"{name}.json").read_text())


# -- layouts -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, recurrent, attention, mixer_free, ffn_free, moe, dense",
    [
        ("qwen3-next-80b-a3b", 36, 12, 0, 0, 48, 0),  # full_attention_interval 4: layers 3, 7, ..., 47 attend
        ("qwen3.5-27b", 48, 16, 0, 0, 0, 64),  # layer_types: three linear_attention then one full_attention
        ("nemotron-h-8b", 24, 4, 24, 28, 0, 24),  # M-M-M-M*-...: 24 Mamba, 4 attention, 24 MLP blocks
        ("nemotron-3-nano-30b-a3b", 23, 6, 23, 29, 23, 0),  # MEMEM*E...: 23 Mamba, 6 attention, 23 MoE blocks
        ("llama-4-maverick", 0, 48, 0, 0, 24, 24),  # interleave_moe_layer_step 2: every other layer MoE
        ("llama-4-scout", 0, 48, 0, 0, 48, 0),
        ("minimax-m2.5", 0, 62, 0, 0, 62, 0),
    ],
)
def test_layer_kinds_are_read_from_the_config(name, recurrent, attention, mixer_free, ffn_free, moe, dense):
    m = get_model(name)
    assert (
        m.n_recurrent_layers,
        m.n_attention_layers,
        m.n_mixer_free_layers,
        m.n_ffn_free_layers,
        m.n_moe_layers,
        m.n_mlp_layers,
    ) == (recurrent, attention, mixer_free, ffn_free, moe, dense)


def test_llama_4_chunks_the_rope_layers_and_keeps_the_nope_layers_global():
    m = get_model("llama-4-maverick")
    assert (m.n_chunked_layers, m.attention_chunk_size, m.n_full_layers) == (36, 8192, 12)
    # A token at position L reads L mod 8192 tokens in a chunked layer, and the cache holds up to a whole chunk.
    per = m.kv_bytes_per_token_per_layer
    assert float(m.kv_bytes(10_000)) == pytest.approx(per * (12 * 10_000 + 36 * (10_000 - 8192)))
    assert float(m.kv_bytes_reserved(10_000)) == pytest.approx(per * (12 * 10_000 + 36 * 8192))
    assert float(m.kv_bytes_reserved(5_000)) == float(m.kv_bytes(5_000))


# -- published sizes -----------------------------------------------------------------------------
# Activated parameters, each with its publisher's definition: Qwen and Meta count the input embedding (as for
# Qwen3-30B-A3B's 3.3B in test_catalog.py), NVIDIA ("without embeddings") and MiniMax do not.  Tolerance: the rounding
# of a figure published to one or two significant digits (half a unit of its last digit), as test_catalog.py.
@pytest.mark.parametrize(
    "name, with_embedding",
    [
        ("qwen3.5-35b-a3b", True),
        ("qwen3.5-122b-a10b", True),
        ("qwen3.5-397b-a17b", True),
        ("llama-4-scout", True),
        ("llama-4-maverick", True),
        ("nemotron-3-nano-30b-a3b", False),
        ("nemotron-3-super-120b-a12b-fp8", False),
        ("nemotron-3-ultra-550b-a55b", False),
        ("minimax-m2.5", False),
        ("minimax-m2.7", False),
    ],
)
def test_activated_parameters_match_the_published_counts(name, with_embedding):
    m, published = get_model(name), catalog_entry(name)["published"]["active"]
    counted = m.active_params + (m.embedding_params if with_embedding else 0)
    digits = len(f"{published:.15g}".rstrip("0"))
    assert abs(counted - published) <= max(0.01 * published, 0.5 * 10 ** (len(str(int(published))) - digits))


def test_vision_towers_are_counted_as_resident():
    # Qwen3.5-27B's published 27B and Llama 4 Scout's 109B include their vision encoders.
    qwen, scout = get_model("qwen3.5-27b"), get_model("llama-4-scout")
    assert 0.3e9 < qwen.extra_params < 0.6e9 and 0.7e9 < scout.extra_params < 1.0e9
    # Scout's language model alone misses the published total by more than 1%; with its vision tower it is within it.
    assert abs(scout.params - 109e9) > 0.01 * 109e9 > abs(scout.total_params - 109e9)


# -- recurrent state -----------------------------------------------------------------------------
def _vllm_state_bytes(heads, head_dim, state, groups, kernel, layers, ssm_bytes, conv_bytes=2):
    """vLLM's MambaStateShapeCalculator (GDN and Mamba-2 alike): conv (K - 1, H P + 2 G N), temporal (H, P, N)."""
    conv = (kernel - 1) * (heads * head_dim + 2 * groups * state) * conv_bytes
    return layers * (conv + heads * head_dim * state * ssm_bytes)


@pytest.mark.parametrize(
    "name, args",
    [
        ("qwen3.5-27b", (48, 128, 128, 16, 4, 48, 4)),  # mamba_ssm_dtype float32
        ("qwen3-next-80b-a3b", (32, 128, 128, 16, 4, 36, 2)),  # no mamba_ssm_dtype: the model's bf16
        ("nemotron-3-nano-30b-a3b", (64, 64, 128, 8, 4, 23, 4)),  # mamba_ssm_cache_dtype float32
        ("nemotron-h-8b", (128, 64, 128, 8, 4, 24, 2)),
    ],
)
def test_recurrent_state_is_vllms_state_shape(name, args):
    assert get_model(name).recurrent_state_bytes == _vllm_state_bytes(*args)
    # The state splits over tensor-parallel ranks with the heads.
    assert get_model(name, tp=2).recurrent_state_bytes == pytest.approx(_vllm_state_bytes(*args) / 2)


def test_the_published_state_sizes_per_sequence():
    # The research table's figures (targets-gpus/REPORT.md 1.6): Qwen3.5-27B 146.8 MiB, Nemotron 3 Nano 46.8 MiB.
    assert get_model("qwen3.5-27b").recurrent_state_bytes / MIB == pytest.approx(146.8, abs=0.05)
    assert get_model("nemotron-3-nano-30b-a3b").recurrent_state_bytes / MIB == pytest.approx(46.8, abs=0.05)


def test_a_verification_pass_writes_one_state_per_token():
    m = get_model("qwen3.5-27b")
    state = m.recurrent_state_bytes
    column = 48 * (48 * 128 + 2 * 16 * 128) * 2  # one convolution column per layer
    ssm = 48 * 48 * 128 * 128 * 4
    # A decode step reads the state and writes one; a pass of q tokens reads it once and writes q (vLLM 0.24's
    # verification kernel stores the state at every draft position).
    for q in (1, 2, 4, 8):
        assert float(m.recurrent_pass_bytes(q)) == pytest.approx(state + q * (ssm + column))
    replay = dataclasses.replace(m, recurrent_verify="replay")
    assert float(replay.recurrent_pass_bytes(4)) < 0.5 * float(m.recurrent_pass_bytes(4))
    # Replaying recomputes the logged tokens: more FLOP than writing checkpoints.
    assert float(replay.recurrent_flop(4, 4)) > float(m.recurrent_flop(4, 4))


@pytest.mark.parametrize("name, chunk", [("qwen3.5-27b", 64), ("qwen3-next-80b-a3b", 64), ("nemotron-h-8b", 128)])
def test_a_prompt_moves_one_state_per_chunk_not_one_per_token(name, chunk):
    # A prompt runs the chunked kernels: the state and window read and written once, and one state per chunk written
    # and read back (GDN: vLLM's FLA_CHUNK_SIZE 64; Mamba-2: the config's chunk_size, 128 in every Nemotron-H config).
    m = get_model(name)
    assert m.rec_chunk == chunk
    from specsim.describe.ops import BYTES_PER_ELEMENT

    state = m.recurrent_state_bytes  # states and convolution windows
    ssm = m.n_recurrent_layers * m.rec_heads * m.rec_head_dim * m.rec_state_dim * BYTES_PER_ELEMENT[m.state_dtype_]
    for q, chunks in ((1, 1), (chunk, 1), (chunk + 1, 2), (8192, 8192 // chunk)):
        assert float(m.recurrent_pass_bytes(q, prompt=True)) == pytest.approx(2 * state + 2 * chunks * ssm)
    # An 8k prompt moves well under a tenth of what a verification pass of as many tokens would.
    assert float(m.recurrent_pass_bytes(8192, prompt=True)) < 0.1 * float(m.recurrent_pass_bytes(8192))
    # The roofline's prompt pass carries the prompt's traffic, and a prompt of 2 chunks costs more than one of 1.
    attention_only = dataclasses.replace(
        m, n_recurrent_layers=0, recurrent_kind="", n_mixer_free_layers=m.n_recurrent_layers + m.n_mixer_free_layers
    )
    for q in (chunk, 4096.0):
        extra = step_time(H200, m, 1, q, 0, prompt=True).bytes - step_time(H200, attention_only, 1, q, 0, True).bytes
        weights = m.weight_bytes_read(q) - attention_only.weight_bytes_read(q)
        assert float(extra - weights) == pytest.approx(float(m.recurrent_pass_bytes(q, prompt=True)))
    assert float(recurrent_time_s(H200, m, 1, 2 * chunk, True)) > float(recurrent_time_s(H200, m, 1, chunk, True))


def test_a_mamba2_config_without_chunk_size_says_the_default_it_takes(tmp_path):
    import json
    from pathlib import Path

    import specsim.describe.models as models

    cfg = json.loads((Path(models.__file__).parent / "catalog" / "nemotron-h-8b.json").read_text())
    cfg.pop("chunk_size", None)
    cfg.pop("mamba_chunk_size", None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    m = get_model(str(path))
    assert m.rec_chunk == 128 and any("chunk_size" in n and "128" in n for n in m.notes)
    cfg["mamba_chunk_size"] = 256
    path.write_text(json.dumps(cfg))
    assert get_model(str(path)).rec_chunk == 256


def test_the_roofline_prices_the_state_traffic_of_each_sequence():
    m = get_model("qwen3.5-27b")
    attention_only = dataclasses.replace(m, n_recurrent_layers=0, recurrent_kind="", n_mixer_free_layers=48)
    b = np.array([1.0, 64.0])
    for q in (1.0, 4.0):
        extra = step_time(H200, m, b, q, 4096).bytes - step_time(H200, attention_only, b, q, 4096).bytes
        weights = m.weight_bytes_read(b * q) - attention_only.weight_bytes_read(b * q)
        assert np.allclose(extra - weights, b * m.recurrent_pass_bytes(q))
    # At batch 64 the states dominate what a 4-token verification adds over a decode step.
    t1, t4 = step_time(H200, m, 64, 1, 4096), step_time(H200, m, 64, 4, 4096)
    added = float(t4.bytes - t1.bytes)
    assert 64 * float(m.recurrent_pass_bytes(4) - m.recurrent_pass_bytes(1)) > 0.5 * added
    assert float(recurrent_time_s(H200, m, 64, 4)) > float(recurrent_time_s(H200, m, 64, 1))


def test_the_kernel_source_uses_the_measured_gdn_decode_and_scales_it_by_the_states_written(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    from specsim.timing.kernels import KernelSource

    src = KernelSource(H200)
    m = get_model("qwen3.5-27b")
    table = src.table(m)
    assert table.meta["recurrence"] == "measured" and table.rec_b[0] == 1
    # Measured (aiconfigurator-core 0.12.0, h200_sxm, vLLM 0.24.0): a 16 K / 48 V-head layer decodes in about 7 us at
    # batch 1 (fused recurrent kernel plus causal_conv1d_update), within 2x of 1.6 us of pure state traffic.
    assert 3e-6 < float(table.recurrence(1.0)) < 15e-6
    rec4, rec1 = src._recurrence(table, m, np.array(16.0), np.array(4.0))
    assert float(rec4 / rec1) == pytest.approx(float(m.recurrent_pass_bytes(4) / m.recurrent_pass_bytes(1)))
    # Only the 16 attention layers read the KV cache.
    assert table._layers()[0] == 16
    # A prompt runs the chunked kernels, which the database does not time: the roofline's time of the prompt's state
    # traffic and FLOP, never under the measured decode kernel of the batch (before, an 8k prompt was priced as 8k
    # state writes: 1.1 s for Qwen3.5-397B at TP 4 on a B200, against 51 ms for the whole prompt on the roofline).
    for q in (64.0, 8192.0):
        rec_p, rec1 = src._recurrence(table, m, np.array(1.0), np.array(q), prompt=True)
        roof = recurrent_time_s(H200, m, 1.0, q, True)
        assert float(rec_p) == pytest.approx(max(float(rec1), float(roof)))
    rec_8k, _ = src._recurrence(table, m, np.array(1.0), np.array(8192.0), prompt=True)
    rec_verify, _ = src._recurrence(table, m, np.array(1.0), np.array(8192.0))
    assert float(rec_8k) < 0.1 * float(rec_verify)


# -- engines and capacity ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key, extra",
    [
        ("vllm@0.10", 0),
        ("vllm@0.14", 0),
        ("vllm@latest", 0),
        ("sglang@0.5", 1),
        ("sglang@latest", 1),
        ("trtllm@latest", 1),
    ],
)
def test_every_engine_preset_says_how_it_verifies_recurrent_layers(key, extra):
    preset = PRESETS[key]
    assert preset.recurrent.mode == "checkpoint" and preset.recurrent.extra_states == extra
    assert ".py" in preset.recurrent.basis  # the source file it was read from
    assert "checkpoint" in preset.recurrent.describe()


def test_capacity_holds_the_state_and_one_state_per_draft_token():
    base = Deployment.build("h200", "qwen3.5-27b", "eagle3")
    m = base.target
    for key, states in (
        ("vllm@latest", DEFAULT_SCRATCH_DRAFT_TOKENS),
        ("sglang@latest", DEFAULT_SCRATCH_DRAFT_TOKENS + 1),
    ):
        dep = dataclasses.replace(base, engine=PRESETS[key])
        cap = capacity(dep, 8192)
        assert cap.recurrent_state_bytes_per_seq == m.recurrent_state_bytes
        assert cap.scratch_bytes_per_seq == pytest.approx(float(m.recurrent_scratch_bytes(states)))
        assert cap.target_kv_bytes_per_seq == pytest.approx(float(m.kv_bytes(8192)) + m.recurrent_state_bytes)
        # gamma 3: vLLM reserves 1 + 3 state pages per request (3 of scratch), SGLang 4 draft-token states.
        assert float(scratch_bytes(dep, 3)) == pytest.approx(
            float(m.recurrent_scratch_bytes(states - DEFAULT_SCRATCH_DRAFT_TOKENS + 3))
        )
    # An attention-only target reserves no scratch and its capacity is what it was.
    dense = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    assert (capacity(dense, 8192).max_batch_with_draft, capacity(dense, 8192).scratch_bytes_per_seq) == (47, 0.0)
    assert "scratch_bytes_per_seq" not in capacity(dense, 8192).to_dict()


def test_speculation_costs_a_hybrid_target_sequences_of_capacity():
    dep = Deployment.build("h200", "qwen3.5-27b", "eagle3")
    cap = capacity(dep, 8192)
    assert cap.max_batch_with_draft < 0.5 * cap.max_batch_without_draft


# -- refusals ------------------------------------------------------------------------------------
def _qwen(change: dict) -> dict:
    config = _config("qwen3.5-27b")
    config["text_config"] = {**config["text_config"], **change}
    return {k: v for k, v in config.items()}


@pytest.mark.parametrize(
    "config, message",
    [
        (
            _qwen({"layer_types": ["linear_attention"] * 63 + ["mamba"]}),
            r"layer type\(s\) mamba not modelled; supported: linear_attention \(Gated DeltaNet\), full_attention$",
        ),
        (_qwen({"layer_types": ["linear_attention"] * 3}), r"layer_types must list one type per layer \(64\)$"),
        (
            _qwen({"linear_key_head_dim": None}),
            r"Gated DeltaNet layers need linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, "
            r"linear_conv_kernel_dim; missing linear_key_head_dim \(recurrent layers read: Gated DeltaNet and Mamba-2\)$",
        ),
        (
            _qwen({"linear_num_value_heads": 40}),
            r"linear_num_value_heads \(40\) must be a multiple of linear_num_key_heads \(16\)$",
        ),
        (_qwen({"mamba_ssm_dtype": "float8"}), r"mamba_ssm_dtype 'float8' is not one of float32, bfloat16, float16$"),
        (
            {**_config("nemotron-h-8b"), "hybrid_override_pattern": "M-M-X" + "M-" * 24 + "M"},
            r"hybrid_override_pattern block\(s\) 'X' not modelled; supported: M \(Mamba-2\), \* \(attention\), - \(MLP\), E \(MoE\)$",
        ),
        (
            {**_config("nemotron-h-8b"), "hybrid_override_pattern": "M-M*"},
            r"the block pattern lists 4 layers, num_hidden_layers says 52$",
        ),
        (
            {**_config("nemotron-h-8b"), "ssm_state_size": None},
            r"Mamba-2 layers need mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel; missing ssm_state_size",
        ),
        (
            {**_config("nemotron-h-8b"), "hybrid_override_pattern": None},
            r"a Nemotron-H model needs hybrid_override_pattern or layers_block_type to say which block each layer is$",
        ),
        (
            {**_config("minimax-m2.7"), "attn_type_list": [0] + [1] * 61},
            r"attn_type_list marks 1 lightning \(linear\) attention layers, not modelled; supported: 1 \(softmax attention\)",
        ),
    ],
)
def test_a_hybrid_layout_that_cannot_be_priced_is_refused_by_name(config, message):
    with pytest.raises(ValueError, match=r"^model config 'config.json': " + message):
        model_from_hf_config(config)


def test_the_cli_refuses_an_unpriceable_hybrid_config_in_one_line(tmp_path, capsys):
    folder = tmp_path / "odd-hybrid"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_qwen({"layer_types": ["linear_attention"] * 63 + ["mamba"]})))
    assert main(["steptime", "--model", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "layer type(s) mamba not modelled; supported: linear_attention" in err


def test_a_head_built_from_a_hybrid_target_must_drop_its_recurrent_layers():
    m = get_model("qwen3.5-27b")
    with pytest.raises(ValueError, match="a head built from a hybrid target keeps only attention layers"):
        dataclasses.replace(m, n_layers=m.n_mtp_layers)


def test_hybrid_fields_appear_in_json_only_for_hybrid_models():
    d = get_model("qwen3.5-27b").to_dict()
    assert (d["n_recurrent_layers"], d["recurrent_kind"], d["state_dtype"], d["recurrent_verify"]) == (
        48,
        "gdn",
        "fp32",
        "checkpoint",
    )
    assert "n_recurrent_layers" not in get_model("llama-3.1-8b").to_dict()


def test_a_hybrid_targets_mtp_head_is_one_full_attention_layer_and_its_rounds_are_priced():
    """Qwen3.5's MTP layer (mtp_num_hidden_layers 1) is a full-attention decoder layer: the head keeps none of the
    target's recurrent layers, and a round through it costs a draft pass far below a target pass."""
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build("h200", "qwen3.5-27b", "mtp")
    head = dep.draft
    assert head.n_layers == 1 and head.n_recurrent_layers == 0 and not head.is_hybrid
    assert dep.target.is_hybrid and dep.target.n_recurrent_layers == 48
    t_draft = float(dep.gpu_pass(head, 1, 1, 1128).total_s)
    t_target = float(dep.gpu_pass(dep.target, 1, 1, 1128).total_s)
    assert 0 < t_draft < 0.2 * t_target


def test_the_scratch_is_sized_for_the_gamma_the_question_uses_and_says_where_it_comes_from(capsys):
    """capacity --gamma sizes the scratch (vLLM: 1 + num_speculative_tokens state pages, the 1 being the state itself);
    without it a block drafter reserves its block and any other drafter the cited default; optimal-gamma reserves for
    the largest gamma it recommends; serve-sim for the largest gamma its policy runs."""
    from specsim.core.workloads import get_workload
    from specsim.serving.simulator import EngineLimits, serve_compare
    from specsim.serving.workloads import Requests

    dep = Deployment.build("h200", "qwen3.5-27b", "eagle3")
    per_state = float(dep.target.recurrent_scratch_bytes(1))
    for gamma in (1, 3, 12):
        cap = capacity(dep, 8192, draft_tokens=gamma)
        assert cap.scratch_bytes_per_seq == pytest.approx(gamma * per_state) and cap.scratch_draft_tokens == gamma
    assert capacity(dep, 8192, draft_tokens=3).max_batch_with_draft > capacity(dep, 8192).max_batch_with_draft
    # the default names how to change it: the library's keyword (capacity_at's gamma), the command's --gamma
    assert capacity(dep, 8192).scratch_basis.endswith("; gamma to size another")
    with as_flags():
        assert capacity(dep, 8192).scratch_basis.endswith("; --gamma to size another")
    block = Deployment.build("h200", "qwen3.5-27b", "dflash")
    assert capacity(block, 8192).scratch_draft_tokens == block.drafter.max_steps == 15
    assert (
        main(
            [
                "capacity",
                "--hardware",
                "h200",
                "--target",
                "qwen3.5-27b",
                "--draft",
                "eagle3",
                "--context",
                "8192",
                "--gamma",
                "3",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["scratch_draft_tokens"], out["scratch_basis"]) == (3, "--gamma")
    assert out["scratch_bytes_per_seq"] == pytest.approx(3 * per_state)
    assert (
        main(
            [
                "optimal-gamma",
                "--hardware",
                "h200",
                "--target",
                "qwen3.5-27b",
                "--draft",
                "eagle3",
                "--context",
                "8192",
                "--batch",
                "1,32",
                "--alpha",
                "0.6",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    gammas = [int(line.split()[1]) for line in printed.splitlines() if line.split()[:1] in (["1"], ["32"])]
    assert f"for gamma = {max(gammas)} (the largest optimal gamma of these batch sizes" in printed
    req = Requests.poisson(4.0, 20, get_workload("chat"), np.random.default_rng(1))
    for gamma in (2, 5):
        *_, meta = serve_compare(
            dep, req, 0.7, gamma, EngineLimits(8, max_batched_tokens=1024), seed=1, context_hint=600.0
        )
        assert meta["scratch_draft_tokens"] == gamma and f"gamma {gamma}" in meta["scratch_basis"]
