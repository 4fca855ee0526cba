"""Model shapes: parameter counts from the shape, bytes by dtype, config.json reading."""

from __future__ import annotations

import json

import pytest

from specsim.describe.models import ModelShape, builtin_model_names, get_model, model_from_hf_config


@pytest.mark.parametrize(
    "name, params",
    [
        # Counts Hugging Face reports for the published checkpoints.
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3.2-1b", 1_235_814_400),
        ("llama-3.1-70b", 70_553_706_496),
        ("llama-3.2-3b", 3_212_749_824),
        ("qwen2.5-7b", 7_615_616_512),
        ("qwen2.5-0.5b", 494_032_768),
    ],
)
def test_parameter_counts_from_the_shape(name, params):
    assert get_model(name).params == params


def test_article_presets_are_round_and_stream_all_weights():
    big, small = get_model("article-8b"), get_model("article-1b")
    assert (big.params, small.params) == (8_000_000_000, 1_000_000_000)
    assert big.streamed_weight_bytes == 2 * 8e9 and small.streamed_weight_bytes == 2 * 1e9
    # KV shapes of Llama-3.1-8B and Llama-3.2-1B (article-model.md).
    assert big.kv_bytes_per_token == 131_072 and small.kv_bytes_per_token == 32_768


def test_untied_embedding_table_is_not_streamed_but_tied_head_is():
    big = get_model("llama-3.1-8b")
    assert big.streamed_params == big.params - 128256 * 4096
    small = get_model("llama-3.2-1b")
    assert small.streamed_params == small.params


@pytest.mark.parametrize("dtype, factor", [("bf16", 2.0), ("fp16", 2.0), ("fp8", 1.0), ("int4", (4 + 20 / 128) / 8)])
def test_weight_bytes_by_dtype(dtype, factor):
    # The blocks' linear layers take the dtype; embedding, LM head and norms keep the checkpoint's bf16,
    # as engines' online quantisation and every quantised checkpoint read here leave them.
    model = get_model("llama-3.1-8b", weight_dtype=dtype)
    vocab_and_norms = 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096
    assert model.weight_bytes == pytest.approx(
        (model.params - vocab_and_norms) * factor + vocab_and_norms * 2, rel=1e-12
    )
    assert model.head_dtype_ == "bf16"
    # KV cache keeps its own dtype.
    assert model.kv_bytes_per_token == 131_072


def test_fp8_kv_cache_halves_kv_bytes():
    assert get_model("llama-3.1-8b", kv_dtype="fp8").kv_bytes_per_token == 65_536


def test_unknown_dtype_is_rejected():
    with pytest.raises(ValueError, match="weight_dtype must be one of"):
        get_model("llama-3.1-8b", weight_dtype="fp4x")


LLAMA_1B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 128256,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def test_config_json_matches_builtin(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_1B_CONFIG))
    model = get_model(str(path))
    builtin = get_model("llama-3.2-1b")
    assert model.params == builtin.params and model.kv_bytes_per_token == builtin.kv_bytes_per_token
    # A folder holding config.json works too (a checkpoint directory).
    assert get_model(str(tmp_path)).params == builtin.params


def test_qwen2_config_gets_qkv_bias():
    cfg = {
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    }
    assert model_from_hf_config(cfg).params == 494_032_768


def test_mistral_config_defaults_head_dim():
    cfg = {
        "architectures": ["MistralForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32768,
        "tie_word_embeddings": False,
    }
    # Mistral-7B-v0.3: 7,248,023,552 parameters.
    assert model_from_hf_config(cfg).params == 7_248_023_552


def test_an_mla_config_without_kv_heads_gets_no_multi_head_note():
    """An MLA model (kv_lora_rank set) caches one latent per token: the note that a missing num_key_value_heads means
    multi-head attention's KV cache was printed of DeepSeek-V3's config without the key, though its KV does not use it.
    A grouped-query config without the key still gets it."""
    import json

    from specsim.describe.models import _CATALOG

    cfg = json.loads((_CATALOG / "deepseek-v3.json").read_text())
    with_key = model_from_hf_config(cfg)
    without = model_from_hf_config({k: v for k, v in cfg.items() if k != "num_key_value_heads"})
    assert not any("num_key_value_heads" in note for note in without.notes)
    assert without.kv_bytes_per_token == with_key.kv_bytes_per_token
    plain = model_from_hf_config({k: v for k, v in _BASE_CFG.items() if k != "num_key_value_heads"})
    assert any(note.startswith("num_key_value_heads = num_attention_heads = 32") for note in plain.notes)


def test_a_configs_positions_are_noted_where_missing_or_past_specsims_limit():
    """A config without max_position_embeddings gets no check of contexts against its positions, and one past
    specsim's context limit is held at it: both are said in the model's notes (they were written after the notes were
    taken, so neither reached the output)."""
    from specsim.core.limits import MAX_CONTEXT

    missing = model_from_hf_config({k: v for k, v in _BASE_CFG.items() if k != "max_position_embeddings"})
    assert missing.max_position_embeddings == 0
    assert any("states no max_position_embeddings" in note for note in missing.notes), missing.notes
    past = model_from_hf_config({**_BASE_CFG, "max_position_embeddings": MAX_CONTEXT + 1})
    assert past.max_position_embeddings == MAX_CONTEXT
    assert any("is past specsim's context limit" in note for note in past.notes), past.notes
    stated = model_from_hf_config({**_BASE_CFG, "max_position_embeddings": 8192})
    assert not any("max_position_embeddings" in note for note in stated.notes)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"architectures": ["GPTNeoXForCausalLM"]}, "unsupported architecture 'GPTNeoXForCausalLM'"),
        ({"architectures": []}, "missing key 'architectures'"),
        ({"hidden_size": None}, "missing key 'hidden_size'"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers must be a positive integer"),
        ({"vocab_size": -5}, "vocab_size must be a positive integer"),
        ({"num_key_value_heads": 5}, "must be a multiple of num_key_value_heads (5)"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings must be true or false"),
    ],
)
def test_bad_configs_are_clear_errors(change, message):
    cfg = {**LLAMA_1B_CONFIG, **change}
    cfg = {k: v for k, v in cfg.items() if v is not None}
    with pytest.raises(ValueError) as err:
        model_from_hf_config(cfg, name="mine/config.json")
    assert message in str(err.value) and "mine/config.json" in str(err.value)


def test_unknown_model_names_the_nearest_builtin_and_where_the_list_is():
    # One line a person reads (issue 37: the whole list was 1,000 characters), the nearest built-in name where there is one.
    with pytest.raises(KeyError) as err:
        get_model("gpt-oss-12b")
    assert err.value.args[0].startswith("unknown model 'gpt-oss-12b'; did you mean gpt-oss-120b? specsim models lists")
    assert len(err.value.args[0]) < 200 and "gpt-oss-120b" in builtin_model_names()


def test_not_json_is_a_clear_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        get_model(str(path))


def test_shape_validation():
    with pytest.raises(ValueError, match="n_layers must be a positive integer"):
        ModelShape("x", 10, 8, 16, 0, 2, 1, 4)


def test_qwen3_32b_matches_its_model_card():
    # Qwen/Qwen3-32B model card: 32.8B parameters; q/k norms add 2 * head_dim per layer.
    from specsim.describe.models import model_from_hf_config

    m = get_model("qwen3-32b")
    assert m.params == pytest.approx(32.8e9, rel=0.002)
    cfg = {
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 5120,
        "intermediate_size": 25600,
        "num_hidden_layers": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    assert model_from_hf_config(cfg).params == m.params


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"torch_dtype": "float8_e4m3"}, "torch_dtype 'float8_e4m3' is not one of"),
        ({"quantization_config": {"quant_method": "awq", "bits": 8}}, "awq with 8-bit weights is not modelled"),
        ({"quantization_config": "yes"}, "quant_method None is not modelled"),
    ],
)
def test_config_dtypes_are_read_or_refused_never_defaulted(extra, message):
    from specsim.describe.models import model_from_hf_config

    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        **extra,
    }
    with pytest.raises(ValueError, match=message):
        model_from_hf_config(cfg)


def test_fp8_checkpoint_stores_fp8_weights_and_bf16_kv():
    from specsim.describe.models import model_from_hf_config

    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "fp8"},
    }
    m = model_from_hf_config(cfg)
    assert (m.weight_dtype, m.kv_dtype) == ("fp8", "bf16")


def test_model_to_dict_is_every_field_under_its_own_name():
    m = get_model("qwen3-32b")
    fields = [
        "name",
        "params",
        "computed_params",
        "streamed_params",
        "vocab_size",
        "hidden_size",
        "intermediate_size",
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "tie_embeddings",
        "qkv_bias",
        "qk_norm",
        "weight_dtype",
        "kv_dtype",
        "weight_bytes",
        "streamed_weight_bytes",
        "kv_bytes_per_token",
        "source",
        "architecture",
        "active_params",
        "non_embedding_params",
        "n_experts",
        "n_active_experts",
        "moe_intermediate_size",
        "n_shared_experts",
        "n_dense_layers",
        "routing_effective_experts",
        "kv_lora_rank",
        "sliding_window",
        "n_sliding_layers",
        "extra_params",
        "n_mtp_layers",
        "tp",
        "checkpoint_dtype",
        "vocab_from_target",
    ]
    d = m.to_dict()
    assert {k: d[k] for k in fields} == {name: getattr(m, name) for name in fields}
    assert (d["expert_dtype"], d["head_dtype"], d["notes"]) == (m.expert_dtype_, m.head_dtype_, list(m.notes))
    assert set(d) == set(fields) | {"expert_dtype", "head_dtype", "notes"}


@pytest.mark.parametrize(
    "n, text",
    [
        (1e12, "1T"),
        (2.5e12, "2.5T"),
        (1e9, "1B"),
        (999_999_999, "1e+03M"),
        (1e6, "1M"),
        (1e3, "1k"),
        (999, "999"),
        (8030261248, "8.03B"),
        (-2e9, "-2B"),
        (0, "0"),
    ],
)
def test_format_count_thresholds(n, text):
    from specsim.describe.models import format_count

    assert format_count(n) == text


_BASE_CFG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
}


@pytest.mark.parametrize(
    "change, field, value",
    [
        ({"num_key_value_heads": None}, "n_kv_heads", 32),  # absent: multi-head attention, one KV head per query head
        ({}, "tie_embeddings", False),  # absent: an untied LM head
        ({"tie_word_embeddings": True}, "tie_embeddings", True),
        ({"attention_bias": True}, "qkv_bias", True),
        ({}, "qkv_bias", False),
        ({"dtype": "float16"}, "weight_dtype", "fp16"),  # newer configs say "dtype"
        ({"torch_dtype": "float32", "dtype": "float16"}, "weight_dtype", "fp32"),  # torch_dtype wins where both exist
        ({}, "weight_dtype", "bf16"),
        ({"head_dim": 128}, "head_dim", 128),
        ({}, "head_dim", 64),  # hidden / heads
        ({"num_hidden_layers": 16.0}, "n_layers", 16),  # an integer-valued float is that integer
    ],
)
def test_config_fields_are_read_as_documented(change, field, value):
    cfg = {k: v for k, v in {**_BASE_CFG, **change}.items() if v is not None}
    assert getattr(model_from_hf_config(cfg), field) == value


def test_mha_config_without_kv_heads_has_full_kv_bytes():
    # The mutation 'num_key_value_heads defaults to 1' gave 32x too few KV bytes; the default is the head count.
    cfg = {k: v for k, v in _BASE_CFG.items() if k != "num_key_value_heads"}
    assert model_from_hf_config(cfg).kv_bytes_per_token == 2 * 16 * 32 * 64 * 2


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"num_experts": 64},
            r"^model config 'config.json': LlamaForCausalLM with experts is not a known layout; MoE architectures "
            r"read: MixtralForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM, Glm4MoeForCausalLM, "
            r"Qwen3NextForCausalLM, Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration, NemotronHForCausalLM, "
            r"Llama4ForConditionalGeneration, Llama4ForCausalLM, MiniMaxM2ForCausalLM$",
        ),
        ({"num_local_experts": 8}, r"LlamaForCausalLM with experts is not a known layout"),
        ({"mlp_bias": True}, r"^model config 'config.json': mlp_bias=true is not supported$"),
        (
            {"hidden_size": 2050},
            r"^model config 'config.json': missing key 'head_dim' \(hidden_size is not a multiple of num_attention_heads\)$",
        ),
        (
            {"num_hidden_layers": True},
            r"^model config 'config.json': num_hidden_layers must be a positive integer up to 1,024, got True$",
        ),
        ({"num_hidden_layers": "16"}, r"num_hidden_layers must be a positive integer up to 1,024, got '16'$"),
        ({"num_hidden_layers": 0}, r"num_hidden_layers must be a positive integer up to 1,024, got 0$"),
        ({"num_hidden_layers": 1e308}, r"num_hidden_layers must be a positive integer up to 1,024, got 1e\+308$"),
        ({"num_hidden_layers": 1_000_000}, r"num_hidden_layers must be a positive integer up to 1,024, got 1000000$"),
        (
            {"hidden_size": 10**400},
            r"hidden_size must be a positive integer up to 10,000,000, got a 401-character value$",
        ),
        ({"architectures": [["LlamaForCausalLM"]]}, r"unsupported architecture \['LlamaForCausalLM'\]; supported: "),
        ({"architectures": [5]}, r"unsupported architecture 5; supported: "),
        ({"torch_dtype": ["bfloat16"]}, r"torch_dtype \['bfloat16'\] is not one of "),
        ({"vocab_size": None}, r"^model config 'config.json': missing key 'vocab_size'$"),
        (
            {"architectures": ["GPT2LMHeadModel"]},
            r"^model config 'config.json': unsupported architecture 'GPT2LMHeadModel'; supported: "
            r"LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, "
            r"Gemma3ForConditionalGeneration, MixtralForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM, Glm4MoeForCausalLM, "
            r"Qwen3NextForCausalLM, Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration, NemotronHForCausalLM, "
            r"Llama4ForConditionalGeneration, Llama4ForCausalLM, MiniMaxM2ForCausalLM$",
        ),
        (
            {"architectures": []},
            r"^model config 'config.json': missing key 'architectures'; supported: LlamaForCausalLM, MistralForCausalLM, "
            r"Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM",
        ),
        (
            {"torch_dtype": "int3"},
            r"^model config 'config.json': torch_dtype 'int3' is not one of bfloat16, float16, float32$",
        ),
        (
            {"quantization_config": {"quant_method": "awq"}},
            r"^model config 'config.json': awq with None-bit weights is not modelled; "
            r"supported: 4-bit$",
        ),
        (
            {"quantization_config": {"quant_method": "hqq"}},
            r"quant_method 'hqq' is not modelled; supported: fp8, fbgemm_fp8, "
            r"compressed-tensors .* \(or remove the block to model the unquantised weights\)$",
        ),
    ],
)
def test_config_refusals_are_exact(change, message):
    cfg = {k: v for k, v in {**_BASE_CFG, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        model_from_hf_config(cfg)


def test_get_model_names_and_sources_a_config_by_its_folder(tmp_path):
    import json as _json

    folder = tmp_path / "my-finetune"
    folder.mkdir()
    (folder / "config.json").write_text(_json.dumps(_BASE_CFG))
    by_file, by_folder = get_model(str(folder / "config.json")), get_model(str(folder))
    assert by_file.name == by_folder.name == "my-finetune" and by_file.source == str(folder.resolve())
    (folder / "other.json").write_text(_json.dumps(_BASE_CFG))
    other = get_model(str(folder / "other.json"))
    assert other.name == str(folder / "other.json") and other.source == str(folder.resolve())
    assert (
        get_model(str(folder), weight_dtype="fp8").weight_dtype == "fp8"
        and get_model(str(folder)).weight_dtype == "bf16"
    )
    with pytest.raises(
        ValueError, match=r"^model config '.*missing.json' does not exist \(give a config.json or its folder\)$"
    ):
        get_model(str(folder / "missing.json"))
    (folder / "bad.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"^model config '.*bad.json': not valid JSON"):
        get_model(str(folder / "bad.json"))
    with pytest.raises(
        KeyError,
        match=r"unknown model 'nope'; specsim models lists the built-in ones \(or give a path to a config.json\)",
    ):
        get_model("nope")
    with pytest.raises(
        KeyError, match=r"unknown model 'lama-3.1-8b'; did you mean llama-3.1-8b\? specsim models lists"
    ):
        get_model("lama-3.1-8b")
    assert get_model("LLAMA-3.1-8B").name == "llama-3.1-8b"  # built-in names in any case, as hardware and engines


def test_hugging_face_ids_of_catalog_checkpoints_resolve_and_others_say_what_to_do():
    from specsim.describe.models import catalog_entry

    assert get_model("meta-llama/Llama-3.1-8B-Instruct").name == "llama-3.1-8b"
    assert get_model("META-LLAMA/llama-3.1-8b").name == "llama-3.1-8b"  # case and the -Instruct suffix do not matter
    assert get_model("Qwen/Qwen3-235B-A22B").source == catalog_entry("qwen3-235b-a22b")["hub_id"]
    with pytest.raises(
        KeyError,
        match=r"a Hugging Face ID specsim does not ship; download its config.json .huggingface-cli download org/nope",
    ):
        get_model("org/nope")


def test_hardware_aliases_resolve_and_are_listed():
    from specsim.describe.hardware import ALIASES, load_hardware

    assert load_hardware("h100").name == "h100-sxm" and load_hardware("H100").name == "h100-sxm"
    assert load_hardware("a100").name == load_hardware("a100-sxm-80gb").name
    with pytest.raises(KeyError, match=r"specsim hardware lists the built-in profiles and their aliases"):
        load_hardware("h300")
    assert set(ALIASES.values()) <= {"h100-sxm", "a100-sxm-80gb", "h200", "b200", "b300", "rtx-pro-6000"}


def test_a_config_with_a_key_twice_is_refused_and_a_missing_kv_head_count_is_said(tmp_path):
    """JSON keeps a key's last value silently: a config.json with hidden_size twice was read as the second (18.7B
    params for an 8B).  And a config without num_key_value_heads is multi-head attention in transformers; a
    grouped-query model whose key went missing holds its KV cache at heads / kv times: the default is said."""
    import json
    import pathlib

    from specsim.describe.models import get_model

    src = (pathlib.Path(__file__).resolve().parent.parent / "specsim/describe/catalog/llama-3.1-8b.json").read_text()
    folder = tmp_path / "twice"
    folder.mkdir()
    (folder / "config.json").write_text(
        src.replace('"hidden_size": 4096,', '"hidden_size": 4096, "hidden_size": 8192,')
    )
    with pytest.raises(ValueError, match=r"the key 'hidden_size' appears twice; each once"):
        get_model(str(folder / "config.json"))
    config = json.loads(src)
    del config["num_key_value_heads"]
    (folder / "config.json").write_text(json.dumps(config))
    model = get_model(str(folder / "config.json"))
    assert model.n_kv_heads == 32 and any(
        n.startswith("num_key_value_heads = num_attention_heads = 32") for n in model.notes
    )
    assert not any("num_key_value_heads" in n for n in get_model("llama-3.1-8b").notes)
