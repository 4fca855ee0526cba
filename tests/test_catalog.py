"""The built-in model catalog: real config.json files, published parameter counts, same-family drafts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specsim.describe.models import _CATALOG, _catalog_index, catalog_entry, get_model, model_from_hf_config
from specsim.speculation.deployment import Deployment

NAMES = sorted(_catalog_index())


def _tolerance(published: float) -> float:
    """1% of the published figure, or half a unit of its last digit where it is given to two significant digits.

    >>> round(_tolerance(1.7e9) / 1e9, 3), round(_tolerance(70553706496) / 1e9, 3)
    (0.05, 0.706)
    """
    digits = len(f"{published:.15g}".replace(".", "").replace("e+", "e").split("e")[0].rstrip("0").lstrip("0"))
    rounding = 0.5 * 10 ** (math.floor(math.log10(published)) - digits + 1) if digits <= 2 else 0.0
    return max(0.01 * published, rounding)


def test_the_issue_list_is_in_the_catalog():
    wanted = {
        "qwen3-0.6b",
        "qwen3-1.7b",
        "qwen3-4b",
        "qwen3-8b",
        "qwen3-32b",
        "qwen3-30b-a3b",
        "llama-3.3-70b",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "gemma-3-27b",
        "gemma-3-270m",
        "deepseek-v3",
        "mistral-7b",
    }
    assert wanted <= set(NAMES)
    archs = {get_model(n).architecture for n in NAMES}
    assert {
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "MixtralForCausalLM",
        "DeepseekV3ForCausalLM",
        "GptOssForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Gemma3ForCausalLM",
    } <= archs


@pytest.mark.parametrize("name", NAMES)
def test_parameter_counts_match_the_published_totals(name):
    entry, model = catalog_entry(name), get_model(name)
    published = entry["published"]
    assert published["source"]  # every figure names where it was published
    total = model.total_params  # Gemma 3's published total includes its vision encoder
    assert abs(total - published["total"]) <= _tolerance(published["total"]), (total, published)
    if "non_embedding" in published:
        assert abs(model.non_embedding_params - published["non_embedding"]) <= _tolerance(published["non_embedding"])


@pytest.mark.parametrize("name", NAMES)
def test_catalog_files_are_config_json_read_by_the_users_path(name, tmp_path):
    # The shipped file is a plain config.json: read through get_model(path) it gives the same shape.
    config = json.loads((_CATALOG / f"{name}.json").read_text())
    assert isinstance(config.get("architectures"), list)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    from_path, builtin = get_model(str(folder)), get_model(name)
    assert from_path.params == builtin.params and from_path.weight_bytes == builtin.weight_bytes
    assert (
        from_path.kv_bytes_per_token == builtin.kv_bytes_per_token and builtin.source == catalog_entry(name)["hub_id"]
    )


@pytest.mark.parametrize("name", NAMES)
def test_listed_drafts_share_the_tokenizer(name):
    draft = catalog_entry(name)["draft"]
    if draft.startswith("none"):
        assert "(" in draft  # says why there is none
        return
    kind = draft.split(" (")[0]
    assert kind in NAMES or kind in ("eagle", "eagle3", "mtp")
    Deployment.build("h200", name, kind)  # refuses a draft whose vocabulary differs, or a drafter the model lacks


def test_published_active_parameters_of_the_moe_models():
    # Published activated counts (model cards; gpt-oss counts the unembedding, not the embedding).
    assert get_model("gpt-oss-20b").active_params == pytest.approx(3.61e9, rel=0.01)
    assert get_model("gpt-oss-120b").active_params == pytest.approx(5.13e9, rel=0.01)
    # Mixtral: 12.9B "active"; Qwen3-30B-A3B: 3.3B "activated" -- both count the input embedding as well.
    for name, active in (("mixtral-8x7b", 12.9e9), ("qwen3-30b-a3b", 3.3e9)):
        m = get_model(name)
        assert m.active_params + m.embedding_params == pytest.approx(active, rel=0.02)


def test_quantised_catalog_checkpoints_are_read_as_quantised():
    assert get_model("qwen3-30b-a3b-fp8").weight_dtype == "fp8" and get_model("deepseek-v3").weight_dtype == "fp8"
    oss = get_model("gpt-oss-120b")
    assert (oss.weight_dtype, oss.expert_dtype_, oss.head_dtype_) == ("bf16", "mxfp4", "bf16")
    # The known 65 GB gpt-oss-120b checkpoint (it fits one 80 GB GPU): MXFP4 experts, bf16 everything else.
    assert oss.weight_bytes / 1e9 == pytest.approx(65.2, abs=0.3)


def test_class_defaults_a_checkpoint_relies_on_are_listed():
    notes = " ".join(get_model("gemma-3-27b").notes)
    assert "vocab_size = 262208" in notes and "sliding_window_pattern = 6" in notes
    assert get_model("llama-3.1-8b").notes == ()


def test_catalog_ships_with_the_package():
    text = Path(__file__).resolve().parents[1].joinpath("pyproject.toml").read_text()
    assert '"catalog/*.json", "catalog/*.yaml"' in text
    assert (
        model_from_hf_config(json.loads((_CATALOG / "qwen3-8b.json").read_text())).params
        == get_model("qwen3-8b").params
    )


def test_the_moe_models_deployed_now_are_in_the_catalog_with_their_published_activated_counts():
    # Issue 18: Qwen3-235B-A22B, GLM-4.5/4.6/4.7 (Glm4MoeForCausalLM), Kimi K2 on the DeepSeek-V3 architecture.
    assert {"qwen3-235b-a22b", "glm-4.5", "glm-4.6", "glm-4.7", "glm-4.5-air", "kimi-k2"} <= set(NAMES)
    assert (
        get_model("glm-4.5").architecture == "Glm4MoeForCausalLM"
        and get_model("kimi-k2").architecture == "DeepseekV3ForCausalLM"
    )
    # Qwen3 counts the input embedding in "activated" (as for Qwen3-30B-A3B); DeepSeek-V3's family does not (37B).
    qwen = get_model("qwen3-235b-a22b")
    assert abs(qwen.active_params + qwen.embedding_params - 22e9) <= _tolerance(22e9)
    assert abs(get_model("kimi-k2").active_params - 32e9) <= _tolerance(32e9)
    assert abs(get_model("deepseek-v3").active_params - 37e9) <= _tolerance(37e9)


def test_glm_attention_biases_q_k_v_only_and_reads_its_qk_norm_flag():
    glm, air = get_model("glm-4.5"), get_model("glm-4.5-air")
    assert glm.qkv_bias and not glm.o_bias and glm.qk_norm and not air.qk_norm
    assert (glm.n_experts, glm.n_active_experts, glm.n_shared_experts, glm.n_dense_layers, glm.n_mtp_layers) == (
        160,
        8,
        1,
        3,
        1,
    )
    # The 4.6 and 4.7 checkpoints are the 4.5 architecture with a longer context.
    for name in ("glm-4.6", "glm-4.7"):
        later = get_model(name)
        assert later.params == glm.params and later.max_position_embeddings == 202752 > glm.max_position_embeddings
    # Its NextN layer drafts (SGLang serves GLM-4.5 with EAGLE over it).
    dep = Deployment.build("h200", "glm-4.5", "mtp", target_options={"tp": 8})
    assert dep.draft.n_layers == 1 and dep.draft.n_experts == 160


def test_glm_layouts_specsim_does_not_model_are_refused():
    config = json.loads((_CATALOG / "glm-4.5.json").read_text())
    for key, value in (("decoder_sparse_step", 2), ("moe_layer_freq", 2)):
        with pytest.raises(ValueError, match=f"{key} other than 1 is not modelled"):
            model_from_hf_config({**config, key: value})


def test_an_incomplete_llama_4_config_names_the_missing_key():
    # Llama 4 is read since issue 29 (specsim/describe/layouts.py); a text_config without its sizes says which is missing.
    config = {"architectures": ["Llama4ForConditionalGeneration"], "text_config": {"hidden_size": 5120}}
    with pytest.raises(ValueError, match=r"^model config 'config.json': missing key 'num_hidden_layers'$"):
        model_from_hf_config(config)
