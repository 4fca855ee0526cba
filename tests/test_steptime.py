"""The roofline step-time model: the article's numbers, its parts, broadcasting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.timing.roofline import step_time


@pytest.fixture
def h100():
    return load_hardware("h100-sxm")


def test_article_target_step_at_batch_1(h100):
    # article-model.md: 6.525 ms, of which 0.028 ms arithmetic.
    t = step_time(h100, get_model("article-8b"), 1, 1, 1128)
    assert float(t.total_s) == pytest.approx(6.525e-3, abs=5e-7)
    assert float(t.compute_s) == pytest.approx(0.028e-3, abs=5e-7)
    assert t.bound.item() == "memory"


def test_formula_term_by_term(h100):
    model = get_model("article-8b")
    b, q, L = 16, 5, 2000
    t = step_time(h100, model, b, q, L)
    flop = 2 * 8e9 * b * q + 4 * 32 * 32 * 128 * L * b * q
    nbytes = 16e9 + 131072 * b * (L + q)
    assert float(t.flop) == pytest.approx(flop, rel=1e-12)
    assert float(t.bytes) == pytest.approx(nbytes, rel=1e-12)
    assert float(t.compute_s) == pytest.approx(flop / (0.6 * 989e12), rel=1e-12)
    assert float(t.memory_s) == pytest.approx(nbytes / (0.8 * 3.35e12), rel=1e-12)
    assert float(t.total_s) == pytest.approx(0.5e-3 + max(flop / (0.6 * 989e12), nbytes / (0.8 * 3.35e12)), rel=1e-12)


def test_broadcasts_over_batch_tokens_and_context(h100):
    model = get_model("llama-3.1-8b")
    batch = np.array([1, 8, 64, 256])
    q = np.array([1, 5])[:, None, None]
    L = np.array([0, 512, 8192])[None, None, :]
    t = step_time(h100, model, batch[None, :, None], q, L)
    assert t.total_s.shape == (2, 4, 3)
    for i, qq in enumerate([1, 5]):
        for j, bb in enumerate(batch):
            for k, LL in enumerate([0, 512, 8192]):
                one = step_time(h100, model, int(bb), qq, LL)
                assert t.total_s[i, j, k] == pytest.approx(float(one.total_s), rel=1e-15)


def test_decode_crosses_from_memory_to_compute_bound_near_the_ridge(h100):
    # With no context, a 16-bit model's intensity is about b*q FLOP/byte: the
    # pass turns compute-bound just past the ridge (221 tokens).
    model = get_model("article-8b")
    assert step_time(h100, model, 200, 1, 0).bound.item() == "memory"
    assert step_time(h100, model, 240, 1, 0).bound.item() == "compute"


def test_long_context_keeps_large_batches_memory_bound(h100):
    # KV reads grow with L as fast as attention FLOPs, so intensity falls (MagicDec's point).
    model = get_model("llama-3.1-8b")
    short = step_time(h100, model, 256, 5, 512)
    long = step_time(h100, model, 256, 5, 32768)
    assert short.bound.item() == "compute" and long.bound.item() == "memory"
    assert long.intensity_flop_per_byte < short.intensity_flop_per_byte


def test_step_time_is_monotone_in_batch_tokens_and_context(h100):
    model = get_model("llama-3.1-8b")
    grid = np.arange(1, 513)
    assert np.all(np.diff(step_time(h100, model, grid, 1, 1000).total_s) > 0)
    assert np.all(np.diff(step_time(h100, model, 8, grid, 1000).total_s) > 0)
    assert np.all(np.diff(step_time(h100, model, 8, 1, grid).total_s) > 0)


def test_overhead_is_per_pass_and_per_layer(h100):
    model = get_model("llama-3.1-8b")
    base = step_time(h100, model, 1, 1, 0)
    hw = dataclasses.replace(h100, per_layer_overhead_s=10e-6)
    more = step_time(hw, model, 1, 1, 0)
    assert float(more.total_s - base.total_s) == pytest.approx(32 * 10e-6, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch": 0}, "batch must be in \\[1, 65536\\], got 0"),
        ({"tokens_per_seq": 0}, "tokens_per_seq must be in \\[1, "),
        ({"context": -1}, "context must be in \\[0, 4194304\\], got -1"),
        ({"context": np.nan}, "context must be in \\[0, 4194304\\], got nan"),
    ],
)
def test_rejects_bad_shapes(h100, kwargs, message):
    with pytest.raises(ValueError, match=message):
        step_time(h100, get_model("llama-3.1-8b"), **kwargs)


def test_defaults_are_one_decode_step_over_an_empty_cache():
    hw, model = load_hardware("h100-sxm"), get_model("llama-3.1-8b")
    assert float(step_time(hw, model).total_s) == float(step_time(hw, model, 1, 1, 0).total_s)
    assert float(step_time(hw, model).total_s) < float(step_time(hw, model, 2, 1, 0).total_s)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch": 65_536}, None),
        ({"batch": 65_537}, r"^batch must be in \[1, 65536\], got 65537$"),
        ({"context": 4_194_304}, None),
        ({"context": 4_194_305}, r"^context must be in \[0, 4194304\], got 4194305$"),
        ({"batch": [1, 2, 0, 70_000]}, r"^batch must be in \[1, 65536\], got 0$"),
        ({"batch": "many"}, r"^batch must be numbers in \[1, 65536\]$"),
    ],
)
def test_bounds_are_inclusive_and_name_the_first_bad_value(kwargs, message):
    hw, model = load_hardware("h100-sxm"), get_model("llama-3.2-1b")
    if message is None:
        assert np.all(np.isfinite(step_time(hw, model, **kwargs).total_s))
    else:
        with pytest.raises(ValueError, match=message):
            step_time(hw, model, **kwargs)


def test_the_ridge_a_pass_is_read_against_is_its_weights_precisions(capsys):
    """FP8 weight matmuls run 1.5x the 16-bit rate, so their ridge is 1.5x higher: the text and the JSON said the
    16-bit ridge (221.4 on an H100) where batch 180 at 328 FLOP/byte was compute-bound."""
    import json

    from specsim.cli.main import main
    from specsim.describe.hardware import load_hardware

    argv = ["steptime", "--timing", "roofline", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--batch", "1"]
    assert main([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    hw = load_hardware("h100-sxm")
    assert row["ridge_flop_per_byte"] == pytest.approx(1.5 * hw.ridge_flop_per_byte, rel=1e-12)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"ridge: {1.5 * hw.ridge_flop_per_byte:.1f} FLOP/byte (the fp8 weight matmuls'" in out
    assert "weight-only GEMMs have a roofline of their own" not in out  # FP8 weights are read as they are multiplied


def test_a_weight_only_step_says_why_it_exceeds_the_max_of_its_columns(capsys):
    """INT4 weight-only GEMMs are timed on a roofline of their own beside the rest's, so at 64 sequences the step
    (overhead + their max + the rest's max) exceeds overhead + max(compute, memory) of the columns: the text says so."""
    import json

    from specsim.cli.main import main

    argv = [
        "steptime",
        "--timing",
        "roofline",
        "--weight-dtype",
        "int4",
        "--hardware",
        "a100-sxm-80gb",
        "--batch",
        "64",
    ]
    assert main([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["step_time_s"] > row["overhead_s"] + max(row["compute_s"], row["memory_s"]) * (1 + 1e-9)
    assert main(argv) == 0
    assert "the int4 weight-only GEMMs have a roofline of their own" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("model", "said"), [("gpt-oss-20b", "mxfp4"), ("llama-3.1-8b", None)], ids=["mxfp4-experts", "bf16"]
)
def test_the_weight_only_line_follows_the_gemms_timed_on_their_own_roofline(capsys, model, said):
    """gpt-oss's MXFP4 experts are weight-only GEMMs under 16-bit blocks: at 256 sequences on an A100 their own roofline
    makes the step exceed overhead + max(compute, memory) of the columns, and the text says which GEMMs do it (it keyed
    the line on the blocks' dtype alone, bf16 here, and said nothing); a 16-bit model's step is its columns'."""
    import json

    from specsim.cli.main import main

    argv = ["steptime", "--timing", "roofline", "--model", model, "--hardware", "a100-sxm-80gb", "--batch", "256"]
    assert main([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    whole = row["overhead_s"] + max(row["compute_s"], row["memory_s"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    if said is None:
        assert row["step_time_s"] == pytest.approx(whole, rel=1e-12)
        assert "weight-only GEMMs have a roofline of their own" not in out
    else:
        assert row["step_time_s"] > whole * (1 + 1e-9)
        assert f"the {said} weight-only GEMMs have a roofline of their own" in out


def test_a_context_past_the_positions_names_only_the_flags_steptime_has(capsys):
    """steptime has --context and no --max-context, but its refusal of a context past the target's positions said
    'give --context (and --max-context) within it' (helper F's review); the commands that take --max-context still
    name both where it was given."""
    assert main(["steptime", "--context", "200000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("past llama-3.1-8b's max_position_embeddings (131,072); give --context within it"), err
    assert main(["optimal-gamma", "--batch", "1", "--max-context", "200000"]) == 2
    assert capsys.readouterr().err.strip().endswith("give --context and --max-context within it")
