"""The PyTorch timing harness on the CPU: a correct decoder, the measure -> calibrate loop, the speculative loop.

Skipped where torch is not installed (it is in CI: .ci/run installs torch==2.13.0).
"""

from __future__ import annotations

import csv
import json
import platform

import pytest

torch = pytest.importorskip("torch")

from specsim.cli.main import main
from specsim.describe.models import ModelShape, get_model
from specsim.harness.model import DecoderTimingModel
from specsim.harness.specloop import run_speculative_loop

MICRO = ModelShape("micro", 512, 64, 128, 2, 4, 2, 16, tie_embeddings=False, weight_dtype="fp32", kv_dtype="fp32")
MICRO_QWEN = ModelShape("micro-qwen", 512, 64, 128, 2, 4, 1, 16, tie_embeddings=True, qkv_bias=True)


@pytest.mark.parametrize("shape", [MICRO, MICRO_QWEN, get_model("tiny-5m")])
def test_parameter_count_matches_the_shape(shape):
    assert DecoderTimingModel(shape, dtype="fp32").parameter_count() == shape.params


def test_incremental_decoding_equals_one_pass():
    # KV cache, rotary positions and masking are right iff token-by-token decoding matches a full pass.
    model = DecoderTimingModel(MICRO, dtype="fp32")
    tokens = torch.randint(0, 512, (3, 7), generator=torch.Generator().manual_seed(0))
    model.allocate(3, 16)
    full = model(tokens, torch.zeros(3, dtype=torch.long))
    model.allocate(3, 16)
    parts = [model(tokens[:, :4], torch.zeros(3, dtype=torch.long))]
    parts += [model(tokens[:, i : i + 1], torch.full((3,), i)) for i in range(4, 7)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, rtol=1e-4, atol=1e-5)


def test_ragged_lengths_and_rollback():
    # Sequences at different lengths; rewriting a position (rolled-back draft) gives the fresh result.
    model = DecoderTimingModel(MICRO, dtype="fp32")
    model.allocate(2, 32)
    prefix = torch.randint(0, 512, (2, 10), generator=torch.Generator().manual_seed(1))
    model(prefix, torch.zeros(2, dtype=torch.long))
    lengths = torch.tensor([6, 10])
    nxt = torch.randint(0, 512, (2, 1), generator=torch.Generator().manual_seed(2))
    ragged = model(nxt, lengths)
    ref = DecoderTimingModel(MICRO, dtype="fp32")
    ref.allocate(1, 32)
    ref(prefix[:1, :6], torch.zeros(1, dtype=torch.long))
    torch.testing.assert_close(ragged[:1], ref(nxt[:1], torch.tensor([6])), rtol=1e-4, atol=1e-5)


def test_measure_then_calibrate_on_the_cpu(tmp_path, capsys):
    # The whole loop on real (CPU) measurements: measure two tiny shapes, calibrate, use the profile.
    paths = []
    for layers, name in ((2, "a"), (4, "b")):
        cfg = {
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": 128,
            "intermediate_size": 384,
            "num_hidden_layers": layers,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 2048,
            "tie_word_embeddings": True,
        }
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        out = tmp_path / f"{name}.csv"
        assert (
            main(
                [
                    "measure",
                    "--model",
                    str(folder),
                    "--device",
                    "cpu",
                    "--dtype",
                    "fp32",
                    "--batch",
                    "1,4,16",
                    "--tokens-per-seq",
                    "1,4",
                    "--context",
                    "0,128",
                    "--repeats",
                    "3",
                    "--warmup",
                    "1",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        paths.append(out)
    captured = capsys.readouterr()
    assert "[12/12]" in captured.err  # progress on the sweep
    with open(paths[0]) as handle:
        rows = list(csv.DictReader(handle))
    assert (
        len(rows) == 12 and rows[0]["device_name"].startswith("CPU") and rows[0]["torch_version"] == torch.__version__
    )
    assert all(float(r["p10_s"]) <= float(r["median_s"]) <= float(r["p90_s"]) for r in rows)
    # Calibration is judged on timings with a known answer, not on this shared CPU's wall clock: the measured
    # rows' shapes and grid, with times from a known profile and 2% seeded noise.
    import numpy as np
    import pandas as pd

    from specsim.describe.hardware import load_hardware
    from specsim.timing.measurements import load_measurements
    from specsim.timing.roofline import step_time

    truth = dataclass_replace(load_hardware("cpu-epyc-2vcpu"), compute_eff=0.31, bandwidth_eff=0.52, overhead_s=4e-4)
    frames = []
    for path in paths:
        df = pd.read_csv(path)
        shape = load_measurements(path)["shape"].iloc[0]
        t = step_time(
            truth,
            shape,
            df["batch"].to_numpy(float),
            df["tokens_per_seq"].to_numpy(float),
            df["context"].to_numpy(float),
        )
        df["median_s"] = t.total_s * np.random.default_rng(len(frames)).normal(1.0, 0.02, len(df))
        # The repeats' spread too: the CPU's own percentiles belong to its own (loaded) medians, not these.
        df["p10_s"], df["p90_s"], df["min_s"] = df["median_s"] * 0.98, df["median_s"] * 1.02, df["median_s"] * 0.97
        frames.append(df)
    merged = tmp_path / "both.csv"
    pd.concat(frames).to_csv(merged, index=False)
    profile = tmp_path / "cpu-test.yaml"
    assert (
        main(
            [
                "calibrate",
                str(merged),
                "--hardware",
                "cpu-epyc-2vcpu",
                "--out",
                str(profile),
                "--per-layer",
                "no",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    fitted = load_hardware(str(profile))
    # 24 points with 2% noise pin the overhead and the bound that dominates; held-out error stays near the noise.
    assert report["holdout_after"]["mape"] < 0.06 and report["holdout_after"]["mape"] < report["holdout_before"]["mape"]
    assert fitted.overhead_s == pytest.approx(4e-4, rel=0.25)
    assert (
        main(
            [
                "steptime",
                "--hardware",
                str(profile),
                "--model",
                str(tmp_path / "a"),
                "--batch",
                "4",
                "--timing",
                "roofline",
                "--json",
            ]
        )
        == 0
    )


def test_measure_needs_a_writable_target_and_torch_device(tmp_path, capsys):
    code = main(["measure", "--model", "tiny-5m", "--device", "cuda", "--batch", "1", "--out", str(tmp_path / "x.csv")])
    if not torch.cuda.is_available():
        assert code == 2 and "no CUDA device" in capsys.readouterr().err
        assert not (tmp_path / "x.csv").exists()


def test_speculative_loop_accepts_at_the_controlled_rate():
    r = run_speculative_loop(
        MICRO,
        dataclass_replace(MICRO, name="micro-draft", n_layers=1),
        alpha=0.7,
        gamma=3,
        batch=8,
        context=16,
        tokens=40,
        dtype="fp32",
        repeats=2,
    )
    expected = 1 + 0.7 + 0.49 + 0.343
    # 8 sequences x >= 40 tokens per repeat: the mean tokens per pass is within 0.4 of E (about 4 standard errors).
    assert abs(r["measured_tokens_per_pass"] - expected) < 0.4
    assert r["plain_s_per_token"] > 0 and r["spec_s_per_token"] > 0
    assert r["measured_speedup"] == pytest.approx(r["plain_s_per_token"] / r["spec_s_per_token"])


def dataclass_replace(shape, **changes):
    import dataclasses

    return dataclasses.replace(shape, **changes)


def test_measure_loop_cli_prints_measured_beside_predicted(capsys):
    assert (
        main(
            [
                "measure-loop",
                "--target",
                "tiny-5m",
                "--draft",
                "tiny-5m",
                "--batch",
                "1",
                "--tokens",
                "8",
                "--context",
                "16",
                "--repeats",
                "1",
                "--hardware",
                "cpu",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)[0]
    assert {"measured_speedup", "predicted_speedup", "formula_speedup_from_measured_passes"} <= set(out)


def test_uniform_fast_path_equals_the_general_mask():
    model = DecoderTimingModel(MICRO, dtype="fp32")
    model.allocate(3, 40)
    model(torch.randint(0, 512, (3, 20), generator=torch.Generator().manual_seed(4)), torch.zeros(3, dtype=torch.long))
    lengths = torch.full((3,), 20)
    for q in (1, 4):
        tokens = torch.randint(0, 512, (3, q), generator=torch.Generator().manual_seed(q))
        general = model(tokens, lengths)
        fast = model(tokens, lengths, span=20 + q, uniform=True)
        torch.testing.assert_close(fast, general, rtol=1e-5, atol=1e-6)


def test_gpu_script_rehearses_on_the_cpu(repo, tmp_path):
    # scripts/gpu_measure.sh is what a lent GPU runs; here it runs end to end with tiny CPU shapes.
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "OUT": str(tmp_path),
        "PYTHON": sys.executable,
        "DEVICE": "cpu",
        "DTYPE": "fp32",
        "MODELS": "tiny-5m",
        "LOOP_TARGET": "tiny-5m",
        "LOOP_DRAFT": "tiny-5m",
        "BASE": "cpu-epyc-2vcpu",
        "BATCH": "1,2",
        "Q": "1,3",
        "CTX": "16,32",
        "REPEATS": "2",
        "LOOP_BATCH": "1",
        "LOOP_TOKENS": "4",
        "FLOOR_MODELS": "tiny-5m",
    }
    done = subprocess.run(
        ["bash", str(repo / "scripts" / "gpu_measure.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    names = sorted(p.name for p in tmp_path.iterdir())
    with open(tmp_path / "measured.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 and {r["pass_kind"] for r in rows} == {"engine"}, done.stdout + done.stderr
    assert all(
        0 < float(r["floor_s"]) == pytest.approx(float(r["floor_gemm_s"]) + float(r["floor_attn_s"])) for r in rows
    )
    # The log's versions (read from torch's version.py, not an import of torch) are those the measurement ran on.
    versions = (tmp_path / "log.txt").read_text().splitlines()[1].split()
    assert versions == [
        "python",
        platform.python_version(),
        "torch",
        rows[0]["torch_version"],
        "cuda",
        str(torch.version.cuda),
    ]
    if done.returncode != 0:
        # The script calibrates on this CPU's own wall clock: on a busy machine calibrate refuses those timings in one
        # line (noise, or a roofline that does not describe them) and the script stops there, nothing half-written.
        errors = [line for line in (tmp_path / "log.txt").read_text().splitlines() if line.startswith("specsim ")]
        assert (
            errors
            and errors[-1].startswith("specsim calibrate: error: ")
            and ("too noisy to fit" in errors[-1] or "does not describe these measurements" in errors[-1])
        ), done.stdout + done.stderr
        assert names == ["log.txt", "measured.csv"]
        return
    assert names == [
        "comparison-verify-ratio.csv",
        "comparison.csv",
        "cpu-epyc-2vcpu-measured-residuals.png",
        "cpu-epyc-2vcpu-measured.yaml",
        "log.txt",
        "loop.json",
        "measured.csv",
    ]
    assert len(names) <= 8  # the device tool brings back at most 8 files


@pytest.mark.parametrize("shape", [MICRO, MICRO_QWEN])
def test_engine_pass_computes_the_reference_logits(shape):
    # The engine-grade pass (fused RMSNorm, SDPA's enable_gqa, a lower-right causal bias instead of a dense mask) must
    # give the plain reference's logits: prefill, q = 1 and q = 4 on a shared length, and ragged lengths.
    shape = (
        ModelShape(**{**shape.__dict__, "weight_dtype": "fp32", "kv_dtype": "fp32"})
        if shape.weight_dtype != "fp32"
        else shape
    )
    engine, reference = (DecoderTimingModel(shape, dtype="fp32", kind=k) for k in ("engine", "reference"))
    gen = torch.Generator().manual_seed(5)
    prefix = torch.randint(0, 512, (3, 12), generator=gen)
    zeros = torch.zeros(3, dtype=torch.long)
    for model in (engine, reference):
        model.allocate(3, 32)
    torch.testing.assert_close(engine(prefix, zeros), reference(prefix, zeros), rtol=1e-4, atol=1e-5)
    lengths = torch.full((3,), 12)
    for q in (1, 4):
        tokens = torch.randint(0, 512, (3, q), generator=gen)
        fast = engine(tokens, lengths, span=12 + q, uniform=True)
        torch.testing.assert_close(fast, reference(tokens, lengths, span=12 + q, uniform=True), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(fast, reference(tokens, lengths), rtol=1e-4, atol=1e-5)
    ragged = torch.tensor([5, 9, 12])
    tokens = torch.randint(0, 512, (3, 3), generator=gen)
    torch.testing.assert_close(engine(tokens, ragged), reference(tokens, ragged), rtol=1e-4, atol=1e-5)


def test_engine_pass_builds_no_dense_mask_on_a_shared_length():
    from torch.nn.attention.bias import CausalBias

    model = DecoderTimingModel(MICRO, dtype="fp32")
    positions = torch.full((2, 4), 7) + torch.arange(4)
    assert model._mask(positions[:, :1], 8, uniform=True) is None
    assert isinstance(model._mask(positions, 11, uniform=True), CausalBias)
    reference = DecoderTimingModel(MICRO, dtype="fp32", kind="reference")
    assert reference._mask(positions, 11, uniform=True).dtype == torch.bool  # the reference keeps its dense mask


def test_kv_cache_keeps_each_heads_keys_contiguous():
    model = DecoderTimingModel(MICRO, dtype="fp32")
    model.allocate(2, 16)
    keys = model.k_cache[0, :2, :, :9]  # what attention reads at span 9
    assert keys.shape == (2, MICRO.n_kv_heads, 9, MICRO.head_dim)
    assert keys.stride(-1) == 1 and keys.stride(-2) == MICRO.head_dim  # positions of one head are adjacent rows


def test_an_iteration_with_a_prompt_chunk_computes_what_separate_passes_do():
    # MixedPass flattens decoding sequences and a prompt chunk into one pass (one GEMM over all tokens, attention per
    # sequence): its logits must be the decoding sequences' own and the chunk's last token's, each as its own pass
    # computes them over the same cache.
    from specsim.harness.mixed import MixedPass

    b, q, L, c, p0 = 3, 2, 5, 7, 4
    model, ref = DecoderTimingModel(MICRO, dtype="fp32", seed=1), DecoderTimingModel(MICRO, dtype="fp32", seed=1)
    mixed = MixedPass(model, b, q, L, c, p0, seed=3)
    gen = torch.Generator().manual_seed(0)
    for cache in (model.k_cache, model.v_cache, mixed.k_chunk, mixed.v_chunk):
        cache.copy_(torch.randn(cache.shape, generator=gen))
    ref.allocate(b, L + q)
    ref.k_cache.copy_(model.k_cache)
    ref.v_cache.copy_(model.v_cache)
    prefix_k, prefix_v = mixed.k_chunk[:, :, :, :p0].clone(), mixed.v_chunk[:, :, :, :p0].clone()
    out = mixed()
    assert out.shape == (b * q + 1, MICRO.vocab_size)
    decoded = ref(mixed.dec_tokens, torch.full((b,), L), span=L + q, uniform=True)
    torch.testing.assert_close(out[: b * q], decoded.reshape(b * q, -1), rtol=1e-4, atol=1e-5)
    ref.allocate(1, p0 + c)
    ref.k_cache[:, :, :, :p0] = prefix_k
    ref.v_cache[:, :, :, :p0] = prefix_v
    chunk = ref(mixed.chunk_tokens, torch.tensor([p0]), span=p0 + c, uniform=True)
    torch.testing.assert_close(out[-1], chunk[0, -1], rtol=1e-4, atol=1e-5)


def test_iteration_script_rehearses_on_the_cpu(repo, tmp_path):
    # scripts/gpu_iteration_steps.py is what produced hardware/measurements/h200-iteration-steps.csv; with tiny CPU
    # shapes it writes every part of its grid (decode-only points where the chunk is empty).
    import subprocess
    import sys

    args = ["--device", "cpu", "--dtype", "fp32", "--target", "tiny-5m", "--draft", "tiny-5m", "--prefill", "8,16"]
    args += ["--chunks", "8@16", "--batch", "1,2", "--context", "16", "--q", "1,2", "--mixed-chunks", "0@0,8@0"]
    args += ["--mode-batch", "1", "--repeats", "2", "--warmup", "1", "--out", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(repo / "scripts" / "gpu_iteration_steps.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "iteration_steps.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    parts = [r["part"] for r in rows]
    assert parts.count("prefill") == 4 and parts.count("chunk") == 1 and parts.count("mode") == 3
    assert parts.count("decode") == 4 and parts.count("mixed") == 4
    assert all(float(r["median_ms"]) > 0 for r in rows)
    assert all(float(r["floor_gemm_ms"]) > 0 for r in rows if r["part"] == "prefill")


def test_importing_the_model_leaves_torch_dynamo_to_the_passes_that_need_it(repo):
    """specsim.harness.model imported torch.nn.attention.bias at the top, which imports torch._dynamo (1 s of CPU on
    the development machine, as much as torch): every import of the harness paid it (each test worker's collection, a
    decode-only measurement).  A fresh interpreter imports the model without it, and the lower-right causal bias of a
    pass of q > 1 on a shared length still comes from it."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; import specsim.harness.model as m; before = 'torch._dynamo' in sys.modules; "
        "none, bias = m.shared_length_mask(1, 10), m.shared_length_mask(3, 10); "
        "print(before, none, type(bias).__name__, bias.variant.name, bias.seq_len_q, bias.seq_len_kv, "
        "'torch._dynamo' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(repo)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo, timeout=120)
    assert run.stdout.split() == ["False", "None", "CausalBias", "LOWER_RIGHT", "3", "10", "True"], (
        run.stdout + run.stderr
    )
