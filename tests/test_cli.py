"""The specsim command: output, JSON keys, exit statuses and one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specsim.cli.main import main
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma


def run(capsys, *argv):
    """(exit code, stdout, stderr) of the command, stderr without the line saying a kernel table is being built: that
    line depends on whether an earlier test in this process or machine built the table already (the cache), not on the
    command."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("specsim: building"))
    return code, out, err


def test_optimal_gamma_defaults_print_a_table(capsys):
    code, out, err = run(capsys, "optimal-gamma")
    # stderr carries only notes about the step-time data (progress while a kernel table is built is dropped by run).
    assert code == 0 and all(line.startswith("note: ") for line in err.splitlines())
    assert "step times: hybrid" in out and "aiconfigurator-core 0.12.0" in out and "engine vllm@latest" in out
    assert "-v for every source" in out and len(out.splitlines()[1]) < 250  # one short provenance line by default
    code, verbose, _ = run(capsys, "optimal-gamma", "-v")
    assert code == 0 and "engine: vllm@latest preset" in verbose and "compute eff 0.60" in verbose
    assert "llama-3.1-8b" in out and "llama-3.2-1b" in out and "h100-sxm" in out and "context 1128" in out
    assert "speculate with gamma=" in out


def test_optimal_gamma_json_agrees_with_the_library(capsys):
    code, out, _ = run(capsys, "optimal-gamma", "--alpha", "0.7", "--batch", "1,8,64,256", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["batch"] for r in rows] == [1, 8, 64, 256]
    for key in ("batch", "gamma", "speedup", "t_target_s", "t_draft_s", "t_verify_s", "cost_ratio"):
        assert all(key in r for r in rows), key
    best = optimal_gamma(Deployment.build(), 0.7, [1, 8, 64, 256], 1128)
    assert all(r["timing_source"].startswith("hybrid") and "aiconfigurator-core" in r["provenance"][0] for r in rows)
    assert [r["gamma"] for r in rows] == best.gamma.tolist()
    for r, s in zip(rows, best.speedup):
        assert r["speedup"] == pytest.approx(float(s))
        assert r["cost_ratio"] == pytest.approx(r["t_draft_s"] / r["t_target_s"])


def test_optimal_gamma_says_turn_off_where_it_does_not_pay(capsys):
    code, out, _ = run(
        capsys,
        "optimal-gamma",
        "--alpha",
        "0.6",
        "--target",
        "article-8b",
        "--draft",
        "article-1b",
        "--batch",
        "1,1024",
        "--context",
        "128",
        "--json",
    )
    rows = json.loads(out)
    assert rows[0]["gamma"] > 0 and rows[1]["gamma"] == 0
    assert rows[1]["speedup"] == 1.0 and rows[1]["recommendation"] == "turn speculation off"


def test_speedup_closed_form(capsys):
    code, out, _ = run(capsys, "speedup", "--alpha", "0.8", "--gamma", "8", "--cost-ratio", "0.05", "--json")
    data = json.loads(out)
    assert (
        code == 0 and round(data["speedup"], 2) == 3.09 and data["tokens_per_round"] == pytest.approx(4.3289, abs=1e-4)
    )


def test_speedup_closed_form_takes_the_alpha_of_a_metrics_page(capsys, tmp_path):
    # The refusal itself said '--cost-ratio (it takes --alpha or --metrics, ...)', yet a page that gives one alpha (vLLM
    # counters without per-position ones, an SGLang page) was refused with 'per-position acceptance needs the step-time
    # model', and so was a command with no acceptance at all.  A page's one alpha is taken (its mean length back at the
    # page's gamma); per-position rates and no acceptance are refused, each saying why.
    page = Path(__file__).parents[1] / "examples" / "vllm-metrics.txt"
    one = tmp_path / "one-alpha.txt"
    one.write_text("".join(line for line in page.read_text().splitlines(True) if "per_pos" not in line))
    code, out, _ = run(capsys, "speedup", "--metrics", str(one), "--gamma", "3", "--cost-ratio", "0.05", "--json")
    assert code == 0 and json.loads(out)["tokens_per_round"] == pytest.approx(1 + 77_700 / 40_000, rel=1e-12)
    code, out, _ = run(capsys, "speedup", "--metrics", str(one), "--gamma", "3", "--cost-ratio", "0.05")
    assert code == 0 and out.startswith("alpha 0.797895 (one-alpha.txt, vLLM mean acceptance length")
    code, _, err = run(capsys, "speedup", "--metrics", str(page), "--gamma", "3", "--cost-ratio", "0.05")
    assert code == 2 and "takes one alpha; per-position acceptance needs the step-time model" in err
    code, _, err = run(capsys, "speedup", "--gamma", "3", "--cost-ratio", "0.05")
    assert code == 2 and "--cost-ratio takes --alpha (or a --metrics page): the closed form names no drafter" in err


def test_speedup_json_gives_the_alpha_its_rows_were_computed_at_where_it_was_taken_by_default(capsys):
    # Without --alpha the drafter's published one rate applies (the label says 0.800); the key said null.
    code, out, _ = run(capsys, "speedup", "--gamma", "4", "--batch", "1", "--json")
    (row,) = json.loads(out)
    said = float(row["acceptance"].split()[1])
    assert code == 0 and row["alpha"] == pytest.approx(said, abs=5e-4)
    # Per-position rates have no one alpha: the key stays null there.
    code, out, _ = run(capsys, "speedup", "--gamma", "2", "--batch", "1", "--acceptance", "0.9,0.7", "--json")
    assert code == 0 and json.loads(out)[0]["alpha"] is None


def test_speedup_from_the_model_reproduces_figure_3(capsys):
    code, out, _ = run(
        capsys,
        "speedup",
        "--alpha",
        "0.8",
        "--gamma",
        "4",
        "--target",
        "article-8b",
        "--draft",
        "article-1b",
        "--batch",
        "1,64,128,256",
        "--timing",
        "roofline",
        "--engine",
        "none",
        "--json",
    )
    rows = json.loads(out)
    assert [round(r["speedup"], 2) for r in rows] == [1.90, 1.81, 1.49, 1.25]
    assert all({"t_target_s", "t_draft_s", "t_verify_s", "tokens_per_round"} <= set(r) for r in rows)


def test_steptime_json_keys_and_article_value(capsys):
    code, out, _ = run(
        capsys,
        "steptime",
        "--model",
        "article-8b",
        "--batch",
        "1",
        "--timing",
        "roofline",
        "--engine",
        "none",
        "--json",
    )
    row = json.loads(out)[0]
    assert {"batch", "step_time_s", "compute_s", "memory_s", "overhead_s", "bound"} <= set(row)
    assert row["step_time_s"] == pytest.approx(6.525e-3, abs=5e-7) and row["bound"] == "memory"


def test_alpha_from_acceptance_length(capsys):
    code, out, _ = run(capsys, "alpha", "--acceptance-length", "3.3616", "--gamma", "4")
    assert code == 0 and "alpha = 0.8000" in out


def test_models_show_json_params(capsys):
    code, out, _ = run(capsys, "models", "show", "llama-3.1-8b", "--json")
    assert json.loads(out)["params"] == 8_030_261_248


def test_hardware_list_and_show(capsys):
    code, out, _ = run(capsys, "hardware")
    assert code == 0 and all(n in out for n in ("h100-sxm", "mi300x", "l4"))
    code, out, _ = run(capsys, "hardware", "show", "h100-sxm")
    assert "221.4 FLOP/byte" in out and "https://www.nvidia.com" in out
    # both peaks printed alike (989 beside 1979.0 before)
    assert "dense 16-bit peak         989 TFLOP/s" in out and "dense FP8 peak           1979 TFLOP/s" in out


def test_engines_list_every_preset_and_show_one_with_its_drafters_releases(capsys):
    # The presets lived in docs/model/engines.md's table alone: `specsim engines` was an invalid choice (a review).
    from specsim.engines import PRESETS

    code, out, _ = run(capsys, "engines")
    rows = [line.split()[0] for line in out.splitlines()[2:] if line and not line.startswith("round:")]
    assert code == 0 and rows == list(PRESETS)
    sglang = next(line for line in out.splitlines() if line.startswith("sglang@latest "))
    assert (
        "0.5.11-0.5.23" in sglang and "3.01" in sglang and "49.7" in sglang
    )  # its fitted round terms (2.62, 50.3 before acdeccb)
    code, out, _ = run(capsys, "engines", "show", "vllm@0.24.0")
    assert code == 0 and out.startswith("engine: vllm 0.24.0 (preset vllm@0.14)")
    assert "  --draft dspark: dspark from 0.25.0 (vllm/config/speculative.py" in out  # not in 0.24.0 itself
    assert "  --draft eagle3: eagle3 (every release covered) (vllm/config/speculative.py)" in out
    assert "  --draft pard: draft_model from 0.16.0 to 0.33.99" in out
    code, _, err = run(capsys, "engines", "show", "vllm@9")
    assert code == 2 and err.count("\n") == 1 and "no vllm preset for version '9'; known: " in err


def test_reproduce_passes_and_exits_zero(capsys):
    code, out, _ = run(capsys, "reproduce", "--json")
    got = json.loads(out)
    rows = got["checks"]
    assert code == 0 and all(r["passed"] for r in rows) and len(rows) == 25
    # the preset the numbers come from, in the JSON and in the text's header (it was a bare list, the header typed out)
    assert got["preset"]["compute_eff"] == 0.6 and got["preset"]["overhead_s_per_pass"] == 0.0005
    code, out, _ = run(capsys, "reproduce")
    assert out.startswith("the article's numbers from its preset: h100-sxm (989 TFLOP/s x 0.6, 3.35 TB/s x 0.8, 0.5 ")
    code, verbose, _ = run(capsys, "reproduce", "-v")
    assert "source: the reference article's step-time model as docs/article.md reconstructs it" in verbose
    assert "source:" not in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["optimal-gamma", "--alpha", "1.5"], "alpha must be in [0, 1]"),
        (["optimal-gamma", "--alpha", "x"], "expected a number"),
        (["optimal-gamma", "--batch", "0"], "batch must be an integer in [1, 65536]"),
        (["optimal-gamma", "--batch", "4,x"], "batch must be an integer in [1, 65536]"),
        (["optimal-gamma", "--batch", "4,,8"], "batch has an empty item in '4,,8'"),
        (["optimal-gamma", "--context", "-5"], "context must be an integer in [0, 4194304]"),
        (["optimal-gamma", "--hardware", "h900"], "unknown hardware 'h900'; did you mean h200? specsim hardware lists"),
        (["optimal-gamma", "--target", "gpt-9"], "unknown model 'gpt-9'; specsim models lists the built-in ones"),
        (
            ["optimal-gamma", "--gamma", "4"],
            "optimal-gamma: error: unrecognized arguments: --gamma 4; did you mean --gamma-max, --metrics-gamma?",
        ),
        (
            ["schedule", "--batch", "4"],
            "schedule: error: unrecognized arguments: --batch 4; did you mean --per-batch, --max-batch?",
        ),
        (["speedup", "--alpha", "0.5", "--gamma", "-1", "--cost-ratio", "0.1"], "gamma must be an integer in [0, 64]"),
        (["speedup", "--alpha", "0.5", "--gamma", "2", "--cost-ratio", "0.1", "--batch", "4"], "drop --batch"),
        (["alpha", "--acceptance-length", "9", "--gamma", "4"], "must be in [1, gamma + 1]"),
        (["models", "show"], "give a NAME"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_yaml_profile_is_one_line(capsys, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\npeak_flop_per_s: 1e12\npeak_bytes_per_s: 0\nmemory_bytes: 8e9\n")
    code, _, err = run(capsys, "optimal-gamma", "--hardware", str(path))
    assert code == 2 and "peak_bytes_per_s must be > 0" in err and len(err.strip().splitlines()) == 1


def test_config_json_target(capsys, tmp_path):
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    _, from_file, _ = run(capsys, "optimal-gamma", "--target", str(path), "--json")
    _, builtin, _ = run(capsys, "optimal-gamma", "--json")
    assert [r["speedup"] for r in json.loads(from_file)] == [r["speedup"] for r in json.loads(builtin)]


def test_cli_as_a_subprocess(repo):
    # The real entry point, once: exit status, stdout and no traceback on bad input.
    env = {**os.environ, "PYTHONPATH": str(repo)}
    ok = subprocess.run(
        [sys.executable, "-m", "specsim", "optimal-gamma", "--json", "--batch", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo,
        timeout=60,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)[0]["batch"] == 1
    bad = subprocess.run(
        [sys.executable, "-m", "specsim", "optimal-gamma", "--alpha", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def _last_line(repo, code: str) -> tuple[str, str]:
    """The last line ``code`` prints in a fresh interpreter on the repository's specsim, and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo, timeout=60)
    return out.stdout.strip().splitlines()[-1], out.stderr


def test_optimal_gamma_path_does_not_import_heavy_libraries(repo):
    code = (
        "import sys; from specsim.cli.main import main; main(['optimal-gamma', '--json']); "
        "print(sorted(m for m in ('matplotlib', 'pandas', 'scipy', 'torch') if m in sys.modules))"
    )
    last, err = _last_line(repo, code)
    assert last == "[]", err


def test_help_does_not_import_scipy_stats(repo):
    """specsim --help took about 2 s, 1.4 s of it importing scipy.stats: every command's parser is built for it, and
    watch's reads the drift test's defaults from specsim.watch.drift, which imported scipy.stats at the top for two
    quantiles it takes only where it sets a reference."""
    code = (
        "import contextlib, io, sys; from specsim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print('scipy.stats' in sys.modules)"
    )
    last, err = _last_line(repo, code)
    assert last == "False", err


#: What a cold ``specsim optimal-gamma`` (the default deployment) must not import (issue 28: its cold start is held to
#: 1.5x ``python -c "import numpy"`` by benchmarks/bench_core.py): libraries other commands need, the drafter kinds and
#: answers it does not name, and the standard-library modules specsim once imported for it (hashlib for the kernel cache's
#: name, zipfile for its .npz, tempfile for writes).  The standard-library ones count only if numpy or argparse does not
#: import them itself.
# PyYAML is on it since issue 37 (the built-in profile is read by its C loader, not a pre-parsed bundle).
OFF_THE_DEFAULT_PATH = (
    "matplotlib",
    "pandas",
    "scipy",
    "torch",
    "specsim.speculation.drafters.classic",
    "specsim.speculation.drafters.parallel",
    "specsim.speculation.drafters.suffix",
    "specsim.answers.tree",
    "specsim.answers.compare",
    "specsim.answers.anatomy",
    "hashlib",
    "zipfile",
    "tempfile",
)


def test_the_default_optimal_gamma_imports_only_what_it_uses(repo, tmp_path):
    code = (
        "import sys, argparse, numpy; before = set(sys.modules); from specsim.cli.main import main; "
        "status = main(['optimal-gamma']); "
        f"print(status, sorted(m for m in {OFF_THE_DEFAULT_PATH!r} if m in sys.modules and m not in before))"
    )
    # A cache of its own, filled first: building a kernel table (a cold cache) needs what answering from it does not,
    # and whether this machine's cache is warm depends on what ran before.
    env = {**os.environ, "PYTHONPATH": str(repo), "SPECSIM_CACHE_DIR": str(tmp_path)}
    for argv in (["optimal-gamma"], ["optimal-gamma", "--draft", "dflash", "--target", "qwen3-8b"]):
        warm = f"from specsim.cli.main import main; main({argv!r})"
        subprocess.run([sys.executable, "-c", warm], capture_output=True, env=env, cwd=repo, timeout=120, check=True)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stderr
    dflash = code.replace("['optimal-gamma']", "['optimal-gamma', '--draft', 'dflash', '--target', 'qwen3-8b']")
    named = subprocess.run(
        [sys.executable, "-c", dflash], capture_output=True, text=True, env=env, cwd=repo, timeout=60
    )
    # naming a kind loads its module (and what it builds on), and nothing else of the lazy ones
    assert (
        named.stdout.strip().splitlines()[-1]
        == "0 ['specsim.speculation.drafters.classic', 'specsim.speculation.drafters.parallel']"
    ), named.stderr


def test_a_process_run_freezes_its_modules_out_of_the_collector_and_runs_the_command_with_it_on(repo):
    """main() as the process entry (argv None) pauses the collector while the parser loads modules, freezes what was
    loaded and runs the command with the collector on; main(argv) from a caller leaves the collector as it was."""
    code = (
        "import gc, sys; import specsim.cli.info as info; seen = []; run = info.run_hardware; "
        "info.run_hardware = lambda args: seen.append(gc.isenabled()) or run(args); "
        "from specsim.cli.main import main; before = gc.get_freeze_count(); "  # Python 3.12 starts with some frozen
        "called = main(['hardware']); after_call = gc.get_freeze_count() - before; "
        "sys.argv = ['specsim', 'hardware']; status = main(); "
        "print(called, after_call, status, seen, gc.isenabled(), gc.get_freeze_count() > before)"
    )
    last, err = _last_line(repo, code)
    assert last == "0 0 0 [True, True] True True", err


def test_capacity_says_70b_does_not_fit_in_bf16(capsys):
    code, out, _ = run(capsys, "capacity", "--target", "llama-3.1-70b")
    assert code == 0 and "llama-3.1-70b does not fit on h100-sxm in bf16" in out


def test_capacity_8b_with_draft_at_8192(capsys):
    code, out, _ = run(capsys, "capacity", "--context", "8192")
    assert "61 without the draft, 47 with it" in out  # at vLLM 0.34's whole device, less its start-up and margin
    # The memory line echoes the share as set, then what vLLM's start-up takes out of it.
    _, out, _ = run(capsys, "capacity", "--memory-util", "0.5")
    assert out.startswith("memory: 85.5 GB (79.6 GiB) x 0.5 = 42.8 GB, less 2.29 GB start-up = 40.5 GB usable; ")
    _, out, _ = run(capsys, "capacity", "--engine", "sglang")
    assert out.startswith("memory: 85.5 GB (79.6 GiB) x 0.83 usable = 71.0 GB; ")  # its reserve is in its share
    code, out, _ = run(capsys, "capacity", "--context", "8192", "--json")
    data = json.loads(out)
    assert (data["max_batch_without_draft"], data["max_batch_with_draft"]) == (61, 47)
    # The limits the engine runs with: the JSON's max_num_seqs is null (none given), so it names the engine's own, as
    # the text's line on SGLang's speculating max_num_seqs does (the JSON said nothing of that 48).
    assert data["max_num_seqs"] is None and data["engine_limits"].startswith(
        "max_num_seqs 1024, max_batched_tokens 8192"
    )
    _, out, _ = run(capsys, "capacity", "--engine", "sglang")
    text = re.search(r"runs at most (\d+) sequences at once", out).group(1)
    _, out, _ = run(capsys, "capacity", "--engine", "sglang", "--json")
    assert f"({text} speculating)" in json.loads(out)["engine_limits"]


def test_capacity_names_the_defaults_it_took_and_what_the_configs_left_unsaid(capsys, tmp_path):
    # capacity printed no note: with no flags it never named the GPU it sized (the memory line gives only its GB), and a
    # config.json without num_key_value_heads was sized as multi-head attention, 4x Llama-3.1-8B's cache, unsaid, where
    # optimal-gamma on the same file says both.  Its notes are the deployment's memory notes, in the text and the JSON.
    code, out, err = run(capsys, "capacity")
    assert code == 0 and "h100-sxm" not in out
    assert "note: specsim's defaults, not given: hardware h100-sxm, target llama-3.1-8b, draft llama-3.2-1b" in err
    assert "round's host work" not in err  # nothing is timed: the notes on a round's time stay out
    assert "timing" not in err  # nor the step-time source it does not use (it named "timing hybrid")
    code, _, err = run(capsys, "capacity", "--timing", "roofline")  # was taken, and changed nothing
    assert code == 2 and "unrecognized arguments: --timing roofline" in err
    config = json.loads((Path(__file__).parents[1] / "examples" / "finetune" / "config.json").read_text())
    del config["num_key_value_heads"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    argv = ("capacity", "--hardware", "h100", "--target", str(tmp_path / "config.json"), "--draft", "llama-3.2-1b")
    code, out, err = run(capsys, *argv)
    said = "num_key_value_heads = num_attention_heads = 32 (multi-head attention, transformers' default"
    assert code == 0 and said in err and "specsim's defaults" in err  # the engine, not given, is named
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and any(said in note for note in json.loads(out)["notes"])


def test_capacity_says_whose_share_of_memory_it_takes_and_the_answer_at_a_load_the_cache_holds_says_it_too(capsys):
    # The capacity line names the share it takes: vLLM's default, SGLang's mem_fraction_static from its reserve (with
    # the reserve's terms), TensorRT-LLM's rule said as not modelled, or the share given.
    def usable(*argv):
        code, out, _ = run(capsys, "capacity", *argv)
        assert code == 0
        return [line for line in out.splitlines() if line.startswith("usable: ")]

    assert usable("--engine", "vllm") == [
        "usable: vLLM 0.34's extensible KV cache (on by default on CUDA and ROCm: vllm/config/cache.py 0.34.0 "
        "L395-405), which resolves gpu_memory_utilization to 1.0 (resolved_gpu_memory_utilization, L495-501) and "
        "sizes the cache from the memory free after warmup (v1/worker/extensible_kv_cache.py measure_kv_cache_bytes, "
        "L612-618), taken here as the whole device (the CUDA context not counted); 0.34's, the newest of 0.28-0.34, "
        "as --engine names no release: name yours (--engine vllm@0.33.0: 0.92 of the device) where it is older, less "
        "3.81 GB for its start-up and its cache margin (a profiling pass's peak of 2.02 GB, the sampler's logits, at "
        "8192 tokens and 1024 sequences, vLLM's server defaults on this GPU; 0.27 GB outside torch; a margin of 1.52 "
        "GB, the larger of 1 GiB and 0.75 x the peak (extensible_kv_cache.py L64-65); measured on vLLM 0.19.0 H100 "
        "starts: docs/reports/2026-12-05-vllm-startup-memory.md); --memory-util for your engine's setting"
    ]
    assert "vLLM 0.19.0's gpu_memory_utilization default 0.9 (" in usable("--engine", "vllm@0.19.0")[0]
    # A preset named without its release, whose range changed the default (0.14-0.27: 0.9 before 0.20.0), takes its
    # newest release's and says so, with how to name an older one.
    assert (
        "0.92 from 0.20.0; 0.27's, the range's newest, as --engine names no release: name yours (--engine vllm@0.14.0) "
        "where it is older)" in usable("--engine", "vllm@0.14")[0]
    )
    assert "the range's newest" not in usable("--engine", "vllm@0.10", "--draft", "eagle3")[0]  # 0.10-0.13: 0.9
    sglang = usable("--engine", "sglang", "--hardware", "h100-sxm")[0]
    assert "mem_fraction_static 0.83" in sglang and "chunked_prefill_size 8192" in sglang
    trt = usable("--engine", "trtllm")[0]
    assert "free_gpu_memory_fraction 0.9 (its default) of the memory the weights leave" in trt
    assert usable("--engine", "sglang", "--memory-util", "0.85") == ["usable: --mem-fraction-static 0.85 as given"]
    assert usable("--engine", "vllm", "--memory-util", "0.85")[0].startswith("usable: 0.85 as given, less 2.29 GB for")
    assert "free_gpu_memory_fraction 0.7 (as given)" in usable("--engine", "trtllm", "--memory-util", "0.7")[0]
    # At a load the KV cache cannot hold, the answer says whose share sized it (and not where it holds every user, nor
    # where the share was given).
    for engine, load, extra, expect in (
        ("sglang", "64", [], "mem_fraction_static"),
        ("vllm", "64", [], "extensible KV cache"),
        ("trtllm", "64", [], "free_gpu_memory_fraction 0.9"),
        ("sglang", "1", [], None),
        ("vllm", "64", ["--memory-util", "0.9"], None),
    ):
        argv = ["optimal-gamma", "--engine", engine, "--target", "llama-3.1-70b", "--tp", "4", "--concurrency", load]
        code, _, err = run(capsys, *argv, "--input-len", "8000", "--output-len", "1000", *extra)
        notes = [line for line in err.splitlines() if line.startswith("note: the KV cache holds fewer users")]
        assert code == 0 and (expect in notes[0] if expect else notes == []), (engine, load, extra)


def test_optimal_gamma_flags_batches_that_do_not_fit(capsys):
    code, out, _ = run(capsys, "optimal-gamma", "--batch", "1,47,48,64", "--max-context", "8192", "--json")
    rows = json.loads(out)
    assert [r["fits_with_draft"] for r in rows] == [True, True, False, False]
    assert [r["fits_without_draft"] for r in rows] == [True, True, True, False]
    code, out, _ = run(capsys, "optimal-gamma", "--batch", "1,64", "--max-context", "8192")
    assert "does not fit in memory" in out


def test_compare_prints_latency_and_throughput(capsys):
    code, out, _ = run(capsys, "compare", "--batch", "1,256", "--json")
    rows = json.loads(out)
    assert code == 0 and rows[0]["tokens_per_s_spec"] > rows[0]["tokens_per_s_plain"]
    code, out, _ = run(capsys, "compare", "--batch", "1,256")
    assert "device tok/s plain" in out and "at the largest batch the engine runs" in out


def test_compares_largest_batch_is_what_the_engine_runs_memory_and_max_num_seqs_both(capsys):
    # SGLang's speculating server decodes at most 48 sequences unless told (max_running_requests), whatever fits.
    code, out, err = run(capsys, "compare", "--engine", "sglang", "--batch", "8", "--json")
    largest = json.loads(out)[0]["at_largest_batch"]
    assert code == 0 and largest["speculating"]["batch"] == 48, largest
    assert largest["speculating"]["limited_by"] == "max_num_seqs" and largest["plain"]["limited_by"] == "memory"
    assert largest["plain"]["batch"] > 48 and "SGLang" in largest["limits_from"]
    code, out, err = run(capsys, "compare", "--engine", "sglang", "--batch", "8,64")
    assert "(b = 48, max_num_seqs 48)" in out and "note: the engine's max_num_seqs: SGLang" in err
    assert "note: batch 64 is past the speculating engine's max_num_seqs 48" in err  # its row is the decode batch's
    code, out, err = run(capsys, "capacity", "--engine", "sglang")
    assert "the speculating engine runs at most 48 sequences at once (max_num_seqs: SGLang" in out
    # What the table prints at that batch is the line's figure: one throughput, whichever way it is reached.
    code, out, _ = run(capsys, "compare", "--engine", "sglang", "--batch", "48", "--json")
    assert json.loads(out)[0]["tokens_per_s_spec"] == pytest.approx(largest["speculating"]["tokens_per_s"], rel=1e-9)
    # A given max_num_seqs caps both arms, and is named as given.
    code, out, _ = run(capsys, "compare", "--batch", "8", "--max-num-seqs", "64", "--json")
    largest = json.loads(out)[0]["at_largest_batch"]
    assert (largest["speculating"]["batch"], largest["plain"]["batch"]) == (64, 64)
    assert largest["limits_from"] == "--max-num-seqs"
    # Memory still caps below it: at 8192 tokens a sequence, fewer than 64 fit (capacity's 43 and 56).
    code, out, _ = run(capsys, "compare", "--batch", "8", "--max-num-seqs", "64", "--context", "8192", "--json")
    largest = json.loads(out)[0]["at_largest_batch"]
    assert (largest["speculating"]["limited_by"], largest["plain"]["limited_by"]) == ("memory", "memory")
    assert largest["speculating"]["batch"] < 64 and largest["plain"]["batch"] < 64


@pytest.mark.parametrize(
    "argv",
    [
        ["optimal-gamma", "--batch", "1,8,64"],
        ["explain", "--batch", "8"],
        ["speedup", "--batch", "8", "--gamma", "3"],
        ["compare", "--batch", "8"],
        ["schedule", "--max-batch", "64"],
        ["schedule", "--concurrency", "4,16", "--max-batch", "64"],
    ],
)
def test_a_decode_batch_past_a_given_max_num_seqs_is_refused_in_one_line(capsys, argv):
    code, out, err = run(capsys, *argv, "--max-num-seqs", "4")
    flag = "--max-batch" if "--max-batch" in argv else "--batch"
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{flag} {8 if flag == '--batch' else 64} is past --max-num-seqs 4" in err


def test_the_default_batches_stop_at_a_given_max_num_seqs(capsys):
    code, out, _ = run(capsys, "optimal-gamma", "--max-num-seqs", "16", "--json")
    assert code == 0 and [r["batch"] for r in json.loads(out)] == [1, 2, 4, 8, 16]


def test_parser_defaults_are_the_librarys():
    # Defaults live in the library; where a help text states one, it must be the library's value.
    from specsim.calibration.profile import DEFAULT_HOLDOUT
    from specsim.cli.main import build_parser
    from specsim.harness import defaults

    parser = build_parser()
    sub = {a.dest: a for a in parser._subparsers._group_actions[0].choices["calibrate"]._actions}
    assert f"default {DEFAULT_HOLDOUT}" in sub["holdout"].help and sub["holdout"].default is None
    loop = {a.dest: a for a in parser._subparsers._group_actions[0].choices["measure-loop"]._actions}
    assert loop["tokens"].default == defaults.LOOP_TOKENS and loop["dtype"].default == defaults.LOOP_DTYPE
    measure = {a.dest: a for a in parser._subparsers._group_actions[0].choices["measure"]._actions}
    assert (
        measure["device"].default == defaults.MEASURE_DEVICE and measure["repeats"].default == defaults.MEASURE_REPEATS
    )


def test_a_flag_a_commands_help_says_to_use_instead_is_one_of_that_commands_flags():
    # schedule --help said --concurrency and --rate come "instead of --batch", a flag schedule does not have.
    import re

    from specsim.cli.main import build_parser

    for name, sub in build_parser()._subparsers._group_actions[0].choices.items():
        flags = {o for a in sub._actions for o in a.option_strings}
        for action in sub._actions:
            named = re.findall(r"instead of (--[a-z][a-z0-9-]*)", action.help if isinstance(action.help, str) else "")
            assert set(named) <= flags, (name, action.option_strings, named)


def test_optimal_gamma_json_step_times_are_at_the_chosen_gamma(capsys):
    # Issue 10's surviving mutant: t_V reported at another gamma than the one chosen.
    code, out, _ = run(capsys, "optimal-gamma", "--alpha", "0.8", "--batch", "1,64,256", "--json")
    rows = json.loads(out)
    dep = Deployment.build()
    for r in rows:
        times = dep.outcome(0.8, r["gamma"], r["batch"], 1128)
        assert r["t_verify_s"] == pytest.approx(float(times.verify.total_s), rel=1e-12)
        assert r["t_target_s"] == pytest.approx(float(times.target.total_s), rel=1e-12)
        assert r["t_draft_s"] == pytest.approx(float(times.draft.total_s), rel=1e-12)
    assert len({r["gamma"] for r in rows}) > 1  # gammas differ across rows, so a wrong gamma would show


def test_a_load_whose_engine_cannot_hold_one_request_is_refused_in_one_line(capsys):
    # Llama-3.1-70B in bf16 on two H100s: SGLang's share leaves 0.26 GB per GPU beside the weights, less than one
    # request of 8,500 tokens needs; an engine that cannot start has no TPOT.  vLLM's 0.9 holds it.
    argv = ["optimal-gamma", "--target", "llama-3.1-70b", "--tp", "2", "--concurrency", "1", "--input-len", "8000"]
    code, out, err = run(capsys, *argv, "--output-len", "1000", "--engine", "sglang")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "less than one request of 8,500 tokens" in lines[0]
    assert "mem_fraction_static" in lines[0] and "--memory-util" in lines[0]
    assert run(capsys, *argv, "--output-len", "1000", "--engine", "vllm")[0] == 0


def test_a_target_too_big_for_one_gpu_at_a_load_leads_with_the_smallest_tp_that_fits(capsys):
    # Llama-3.1-70B in bf16 (141 GB) on one H100 without --tp: the one line starts with what to do, the detail after;
    # --tp 2 is the smallest that holds it, its EAGLE-3 head and one request of 2,300 tokens (and it answers), --tp 4
    # the smallest that holds the 64 users' requests at once.
    argv = ["optimal-gamma", "--target", "llama-3.1-70b", "--draft", "eagle3", "--hardware", "h100", "--concurrency"]
    argv += ["64", "--input-len", "2000", "--output-len", "300", "--engine", "vllm@0.24.0"]
    code, out, err = run(capsys, *argv)
    (line,) = err.strip().splitlines()
    assert code == 2 and out == ""
    assert line.startswith(
        "specsim optimal-gamma: error: give --tp 2, the smallest that holds llama-3.1-70b and its draft with one request "
        "here (--tp 4 holds all 64 at once; or a smaller --weight-dtype, or --memory-util): llama-3.1-70b does not fit "
        "on h100-sxm: the weights take"
    )
    assert run(capsys, *argv, "--tp", "2")[0] == 0


def test_no_refusal_of_a_deployment_without_room_says_give_a_larger_tp(capsys):
    # A gamma the speculating engine has no room for (speedup --gamma 3 at 0.227 of an H100) led with what does not fit
    # and ended "give a larger --tp"; it leads with the size that fits, as optimal-gamma's refusals do.  DeepSeek-V3 on
    # H100s fits at no size of a node (8 GPUs): that said "give a larger --tp" too.
    argv = ["--concurrency", "1,4", "--memory-util", "0.227", "--input-len", "1000", "--output-len", "256"]
    code, out, err = run(capsys, "speedup", *argv, "--gamma", "3")
    (line,) = err.strip().splitlines()
    assert code == 2 and out == ""
    assert line.startswith(
        "specsim speedup: error: give --tp 2, the smallest that holds llama-3.1-8b and its draft with one request here "
        "(or a smaller --weight-dtype, or --memory-util): llama-3.1-8b with llama-3.2-1b does not fit on h100-sxm"
    )
    argv = ["--target", "deepseek-v3", "--draft", "mtp", "--hardware", "h100", "--concurrency", "4", "--input-len"]
    code, out, err = run(capsys, "optimal-gamma", *argv, "1000", "--output-len", "256")
    (line,) = err.strip().splitlines()
    assert code == 2 and out == "" and "larger --tp" not in line
    assert line.startswith(
        "specsim optimal-gamma: error: no tensor-parallel size in a node (8 GPUs) holds deepseek-v3 and its draft with "
        "one request here: give a smaller --weight-dtype or --memory-util, or a device with more memory: deepseek-v3 "
        "does not fit on h100-sxm: the weights take"
    )


def test_a_speculating_engine_without_room_is_not_recommended_and_a_gamma_asked_of_it_is_refused(capsys):
    # At 0.227 of an H100's memory the 8B target and vLLM's start-up leave room for its users but not for the draft's
    # weights: the answer at a load does not speculate, says why in a note; a fixed gamma cannot run and is refused in
    # one line.
    argv = ["--concurrency", "1,4", "--memory-util", "0.227", "--input-len", "1000", "--output-len", "256"]
    code, out, err = run(capsys, "optimal-gamma", *argv)
    rows = [line for line in out.splitlines() if line.startswith("concurrency")]
    assert code == 0 and len(rows) == 2 and all("do not speculate (no room for the drafter)" in r for r in rows)
    assert (
        "note: no speculation: give --tp 2, the smallest that holds llama-3.1-8b and its draft with one request here (or "
        "a smaller --weight-dtype, or --memory-util): llama-3.1-8b with llama-3.2-1b does not fit on h100-sxm: the "
        "weights take"
    ) in err
    # Under Poisson arrivals too, even where the plain engine is past its capacity.
    code, out, err = run(capsys, "optimal-gamma", *argv[2:], "--rate", "1,4")
    rows = [line for line in out.splitlines() if line.startswith("rate")]
    assert code == 0 and len(rows) == 2 and all("do not speculate (no room for the drafter)" in r for r in rows)
    assert "note: no speculation:" in err
    code, out, err = run(
        capsys,
        "speedup",
        "--engine",
        "sglang",
        "--target",
        "llama-3.1-70b",
        "--tp",
        "2",
        "--concurrency",
        "4",
        "--gamma",
        "3",
        "--input-len",
        "100",
        "--output-len",
        "100",
    )
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and "llama-3.1-70b with llama-3.2-1b" in lines[0]
    code, _, err = run(capsys, "optimal-gamma", "--engine", "trtllm", "--target", "llama-3.1-70b")
    assert code == 2 and "--tp 2 fits" in err


def test_where_the_engines_host_work_is_what_speculation_does_not_pay_for_the_reason_names_it(capsys):
    # On an MI300X the ROCm build's host work per round grows with the batch: at batch 256 it is over half of gamma = 1's
    # round, and the reason printed gives that share (the memory-bound sentence would leave it out).
    import re

    code, out, _ = run(capsys, "optimal-gamma", "--hardware", "mi300x", "--batch", "1,256")
    line = next(x for x in out.splitlines() if x.startswith("speculation does not pay at batch 256"))
    share = re.search(r"host work per round is ([\d.]+) ms of its ([\d.]+) ms at batch 256 \((\d+)%", line)
    assert (
        share
        and float(share[1]) / float(share[2]) >= 0.25
        and abs(float(share[1]) / float(share[2]) * 100 - int(share[3])) <= 1
    )


def test_compare_with_tensor_parallelism_names_the_deployments_throughput_and_gives_each_gpus(capsys):
    # With --tp 4 the throughput columns are the four GPUs' together, headed so, and each GPU's is beside them.
    code, out, _ = run(capsys, "compare", "--target", "llama-3.1-70b", "--tp", "4", "--batch", "64")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("batch"))
    assert "4 GPUs tok/s plain" in header and "per GPU spec" in header and "device tok/s" not in header
    row = next(line for line in out.splitlines() if line.split() and line.split()[0] == "64").split()
    total, each = (float(x.replace(",", "")) for x in (row[6], row[8]))
    assert each == pytest.approx(total / 4, abs=1.0)


def test_steptime_says_where_its_context_comes_from_and_takes_a_calibrations_runs(capsys, tmp_path):
    code, out, _ = run(capsys, "steptime", "--batch", "1")
    assert "over 1128 cached (the reference article's 1,000 in, 256 out; --context to set)" in out.splitlines()[0]
    code, out, _ = run(capsys, "steptime", "--batch", "1", "--context", "2000")
    assert out.splitlines()[0].endswith("over 2000 cached")


@pytest.mark.parametrize("argv", [["speedup", "--gamma", "3"], ["explain"]])
def test_speedup_and_explain_say_which_batches_do_not_fit_as_optimal_gamma_does(capsys, argv):
    code, out, err = run(capsys, "optimal-gamma", "--batch", "64,350", "--json")
    fits = [r["fits_with_draft"] for r in json.loads(out)]
    assert fits == [True, False]
    code, out, err = run(capsys, *argv, "--batch", "64,350")
    assert code == 0 and "note: batch 350 does not fit in memory with the draft at 1128 tokens each" in err
    code, out, err = run(capsys, *argv, "--batch", "64")
    assert "not fit in memory" not in err


def test_alpha_reads_an_sglang_page_at_the_steps_given(tmp_path, capsys):
    # SGLang's page holds the mean accept length alone: alpha --metrics asked for vLLM's counters; with --gamma (the
    # --speculative-num-steps it ran) it inverts the length as --acceptance-length does, and names the page.
    page = tmp_path / "sglang.txt"
    page.write_text('sglang:spec_accept_length{model_name="m"} 2.5\n')
    code, out, _ = run(capsys, "alpha", "--metrics", str(page), "--gamma", "3")
    _, same, _ = run(capsys, "alpha", "--acceptance-length", "2.5", "--gamma", "3")
    assert code == 0 and out.split("(")[0] == same.split("(")[0] and "sglang.txt: SGLang mean accept length" in out


@pytest.mark.parametrize(
    "argv",
    [["optimal-gamma"], ["compare"], ["speedup", "--gamma", "3"], ["explain"]],
    ids=["optimal-gamma", "compare", "speedup", "explain"],
)
def test_a_context_of_zero_is_taken_by_every_batch_view_its_flag_allows(argv, capsys):
    # --context is [0, 4194304] in every parser; optimal-gamma and compare refused 0 ("context must be an integer >= 1
    # token for a capacity estimate"), speedup and explain took it (found by a review helper).  A sequence reserves one
    # token at least, the one it decodes (serving.capacity.reserved_context).
    assert main([*argv, "--alpha", "0.8", "--batch", "1", "--context", "0"]) == 0
    assert "error" not in capsys.readouterr().err
    assert main(["capacity", "--context", "0", "--json"]) == 0  # and capacity, whose own parser allows it too
    assert json.loads(capsys.readouterr().out)["context_tokens"] == 1


def test_a_rounds_graphless_draft_steps_are_said_where_no_column_shows_them(capsys):
    # vLLM 0.24 with an FP8 cache on an A100: round 15.433 ms where gamma t_D + t_V + host gave 14.159 (found by the
    # review of this session's diff); the footer names the rest, and the JSON rows carry it.
    argv = ["--hardware", "a100-sxm-80gb", "--draft", "eagle3", "--engine", "vllm@0.24.0", "--kv-dtype", "fp8"]
    assert main(["speedup", *argv, "--gamma", "4", "--batch", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    parts = 4 * row["t_draft_s"] + row["t_verify_s"] + row["t_host_s"] + row["t_graphless_s"]
    assert row["t_graphless_s"] > 0 and parts == pytest.approx(row["t_round_s"], rel=1e-9)
    for command in (["speedup", "--gamma", "4"], ["optimal-gamma"]):
        assert main([*command, *argv, "--batch", "1"]) == 0
        assert "+ the draft steps run without a CUDA graph (" in capsys.readouterr().out
    assert main(["speedup", "--gamma", "4", "--batch", "1"]) == 0  # nothing said where nothing runs without a graph
    assert "without a CUDA graph" not in capsys.readouterr().out


def test_a_graphless_size_that_moves_a_round_more_than_a_tenth_is_said_as_assumed_by_default(capsys):
    # vLLM 0.31-0.33 run a draft model's passes without a CUDA graph (by their source); what each costs is the harness's
    # eager PyTorch, not vLLM's: 1.885x became 0.542x at batch 1 with the size said only under -v.  An A100's FP8
    # cache at vllm@0.24.0 adds under a tenth to a round: no such line there.
    said = "assumed: each draft pass vllm 0.33.0 (preset vllm@latest) runs without a CUDA graph costs 6.80 ms more"
    assert main(["speedup", "--draft", "llama-3.2-1b", "--engine", "vllm@0.33.0", "--gamma", "4", "--batch", "1"]) == 0
    captured = capsys.readouterr()
    assert said in captured.err and "eager PyTorch in specsim's own harness" in captured.err
    for engine, extra in (("vllm@0.34.0", []), ("vllm@0.24.0", ["--hardware", "a100-sxm-80gb", "--kv-dtype", "fp8"])):
        assert main(["speedup", "--draft", "eagle3", "--engine", engine, *extra, "--gamma", "4", "--batch", "1"]) == 0
        assert "without a CUDA graph costs" not in capsys.readouterr().err, engine


def test_a_row_that_turns_speculation_off_prints_the_decode_step_its_speedup_stands_on(capsys):
    # On SGLang a gamma-0 row printed the round gamma 0 would run (its host work, an EAGLE-3 head's extend pass) beside
    # speedup 1.000: 'turn speculation off' at round 8.170 ms against t_T 6.156, where the footer's 'speedup = tokens per
    # round x t_T / round' gives 0.75.  Speculation off runs the plain decode step: its round is t_T, with no host work.
    argv = ["--engine", "sglang", "--draft", "eagle3", "--alpha", "0.05", "--batch", "1,64", "--json"]
    assert main(["optimal-gamma", *argv]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert main(["speedup", "--gamma", "0", *argv]) == 0  # speedup --gamma 0 printed the same round
    rows += json.loads(capsys.readouterr().out)
    assert [r["gamma"] for r in rows] == [0, 0, 0, 0]
    for r in rows:
        parts = r["gamma"] * r["t_draft_s"] + r["t_verify_s"] + r["t_host_s"] + r["t_graphless_s"]
        assert parts == pytest.approx(r["t_round_s"], rel=1e-12)
        assert r["speedup"] == pytest.approx(r["tokens_per_round"] * r["t_target_s"] / r["t_round_s"], rel=1e-12)
        assert r["t_host_s"] == 0.0 and r.get("bound_verify") == r.get("bound_target")


def test_explain_draws_its_figure_as_svg_too(tmp_path, capsys):
    """explain --plot takes .svg as serve-sweep's and watch's --plot do (it refused all but .png)."""
    from specsim.cli.main import main

    out = tmp_path / "round.svg"
    assert main(["explain", "--timing", "roofline", "--batch", "1,8", "--plot", str(out)]) == 0
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text


@pytest.mark.parametrize(
    "argv",
    [
        ("optimal-gamma", "--batch", "1,8"),
        ("speedup", "--gamma", "2", "--batch", "1,8"),
        ("compare", "--batch", "1,8"),
        ("explain", "--batch", "8"),
        ("schedule",),
        ("optimal-gamma", "--concurrency", "4", "--input-len", "500", "--output-len", "100"),
        ("optimal-gamma", "--tree", "topk:2,depth:3,tokens:8", "--batch", "1"),
        ("serve-sim", "--concurrency", "2", "--input-len", "200", "--output-len", "20", "--requests", "8"),
        ("serve-sweep", "--concurrency", "1,2", "--input-len", "200", "--output-len", "20", "--requests", "8"),
    ],
)
def test_every_answers_json_gives_the_rates_it_was_computed_at(argv, capsys):
    # The JSON gave the acceptance as a label alone ("alpha 0.800 (the published default ...)"), compare's not even that,
    # and speedup's "alpha" was null under the default acceptance, whose 0.8 its own label printed: a notebook had to
    # parse text for the number.  Each now carries the rates beside the label, the same object in every command.
    code, out, _ = run(capsys, *argv, "--json")
    doc = json.loads(out)
    rows = doc if isinstance(doc, list) else [doc]
    default = Deployment.build().drafter.default_acceptance(Deployment.build().target)[0]
    for row in rows:
        assert row["acceptance_rates"] == {
            "alpha": default.alpha,
            "per_position": None,
            "measured_steps": None,
            "continued_rate": None,
            "source": default.source,
        }
        assert row.get("alpha", default.alpha) == default.alpha  # speedup's own "alpha" is the rate too
    code, out, _ = run(capsys, *argv, "--acceptance", "0.9,0.7", "--json")
    rows = json.loads(out)
    rates = (rows if isinstance(rows, list) else [rows])[0]["acceptance_rates"]
    assert rates["alpha"] is None and rates["per_position"] == [0.9, 0.7]


def test_compare_and_explain_name_the_gammas_they_searched_as_optimal_gamma_does(capsys):
    # optimal-gamma says "gamma searched over 0..16"; compare said "optimal gamma per batch size" and explain "the best
    # gamma per batch (at least 1)", neither naming --gamma-max (default 16) nor a block drafter's block (DSpark's 7).
    for extra, top in (([], 16), (["--gamma-max", "2"], 2), (["--draft", "dspark"], 7)):
        argv = ["--batch", "1", "--alpha", "0.8", *extra]
        code, out, _ = run(capsys, "optimal-gamma", *argv)
        assert code == 0 and f"gamma searched over 0..{top}" in out
        code, out, _ = run(capsys, "compare", *argv)
        assert code == 0 and f"gamma searched over 0..{top}" in out, out
        code, out, _ = run(capsys, "explain", *argv)
        assert code == 0 and f"the best gamma per batch (searched over 0..{top}, at least 1)" in out, out


def test_ctrl_c_says_one_line_and_exits_130(capsys, monkeypatch):
    # Ctrl-C in a long command (serve-sweep, calibrate-engine, a watch starting up) printed Python's traceback; now one
    # line and the shell's status for SIGINT.
    import specsim.cli.model as model

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(model, "run_optimal_gamma", interrupted)
    code = main(["optimal-gamma", "--batch", "1"])
    captured = capsys.readouterr()
    assert code == 130 and captured.err == "specsim optimal-gamma: interrupted\n" and captured.out == ""
    # and while the command's modules load (the parser is built)
    import specsim.cli.main as cli_main

    monkeypatch.setattr(cli_main, "build_parser", interrupted)
    code = main(["optimal-gamma", "--batch", "1"])
    assert code == 130 and capsys.readouterr().err == "specsim optimal-gamma: interrupted\n"


def test_an_answers_json_carries_the_notes_its_text_says_on_stderr(capsys):
    # docs/reference/json.md, "Every answer": `notes`, the notes the text prints on stderr.  compare, optimal-gamma,
    # explain, speedup and serve-sim printed an assumption that moves the answer 17% on stderr only, so a program
    # reading their JSON never saw it (a review, 2026-12-06).
    code, out, err = run(capsys, "compare", "--draft", "eagle3", "--concurrency", "16", "--json")
    assumed = next(line.removeprefix("note: ") for line in err.splitlines() if line.startswith("note: assumed:"))
    assert code == 0 and "hides all of a round's host work" in assumed  # stderr still says it
    rows = json.loads(out)
    assert all(assumed in row["notes"] and row["notes"].count(assumed) == 1 for row in rows)
    # capacity's own notes (the memory's) stay first, the said ones after, each once
    code, out, err = run(capsys, "capacity", "--json")
    notes = json.loads(out)["notes"]
    assert code == 0 and len(notes) == len(set(notes)) and any("defaults, not given" in n for n in notes)
    # a command that fails prints no JSON half-way
    code, out, _ = run(capsys, "speedup", "--gamma", "3", "--batch", "4", "--calibration", "no-such.yaml", "--json")
    assert code == 2 and out == ""


def test_steptimes_json_carries_the_notes_its_text_says_too(capsys):
    # steptime --json carries provenance and deployment as every answer does, and printed its notes on stderr only
    # (the defaults it took, the data it scaled past): docs/reference/json.md, "Every answer": `notes`.
    code, out, err = run(capsys, "steptime", "--model", "llama-3.1-8b", "--batch", "1", "--json")
    said = [line.removeprefix("note: ") for line in err.splitlines() if line.startswith("note: ")]
    assert code == 0 and said
    assert all(row["notes"] == said for row in json.loads(out))


def test_a_key_the_code_did_not_find_is_said_with_where_not_as_a_bare_name(monkeypatch, capsys):
    """Helper H's sweep met `specsim optimal-gamma ... --engine trtllm --tp 2` on an all-reduce table without a kernel
    column: the line was `error: implementation`, a bare key.  A KeyError that is not an unknown name now says which key
    and where specsim looked it up; an unknown name keeps its own line (tests/test_models.py)."""
    import specsim.cli.args
    import specsim.cli.model  # noqa: F401  loaded before the patch: it binds calibrated_context by name on import,
    # and first loaded under the patch it kept the raising lookup for every later test of the process (test order)

    def lookup(args):
        return {}["implementation"]

    monkeypatch.setattr(specsim.cli.args, "calibrated_context", lookup)
    assert main(["optimal-gamma", "--batch", "1", "--timing", "roofline"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("specsim optimal-gamma: error: no key 'implementation' where specsim looked one up (")
    assert "test_cli.py line" in err and "in lookup" in err and "\n" not in err
