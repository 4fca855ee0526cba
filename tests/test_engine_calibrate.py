"""calibrate-engine: benchmark files of vLLM, SGLang and GuideLLM read as their tools write them, the engine's terms
recovered from runs the model generated with known terms, held-out loads kept out of the fit that judges them, and
the printed flags reproducing the fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specsim.bench_files import BenchRun, read_bench_file
from specsim.cli import main
from specsim.deployment import Deployment
from specsim.engine_calibrate import _Model, fit_engine
from specsim.engines import SpecHost

BENCH = "examples/bench"
TRUE = dict(scale=0.85, iteration_s=0.40e-3, host=SpecHost(1.0e-3, 0.30e-3, 20e-6))


@pytest.fixture(scope="module")
def dep():
    return Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="vllm@0.10")


def _runs(dep, loads=(1, 4, 16, 64), al=2.8, noise=0.0, seed=0, scale=TRUE["scale"]):
    """Runs whose TPOT is the model's with the TRUE terms (relative Gaussian noise ``noise``)."""
    rng = np.random.default_rng(seed)
    plain, spec = [], []
    for c in loads:
        for kind in ("plain", "spec"):
            a = al if kind == "spec" else None
            run = BenchRun("x.jsonl", c, "vllm", None, f"concurrency {c}", 100, 1.0, float(c), 1000.0, 256.0, a)
            m = _Model(dep, [run], [kind], 3, 1, 4, True)
            t = float(m.predict(m.deployment(scale, TRUE["iteration_s"], TRUE["host"]), np.array([0]))[0])
            run = BenchRun("x.jsonl", c, "vllm", None, f"concurrency {c}", 100, t * (1 + rng.normal(0, noise)), float(c),
                           1000.0, 256.0, a)
            (plain if kind == "plain" else spec).append(run)
    return plain, spec


def test_each_tool_is_read_with_its_load_acceptance_and_littles_law_batch():
    for name, tool, al in (("vllm-eagle3.jsonl", "vllm", 2.8), ("sglang-eagle3.jsonl", "sglang", 2.75), ("guidellm-eagle3.json", "guidellm", None)):
        runs = read_bench_file(f"{BENCH}/{name}")
        assert [r.tool for r in runs] == [tool] * 4
        assert [r.load for r in runs] == ["concurrency 1", "concurrency 4", "concurrency 16", "concurrency 64"]
        assert all(r.accept_length == al for r in runs)
        assert all(r.context == 1000 + 256 / 2 for r in runs)
    # Little's law, computed here from the file's own fields: completed / duration * TPOT * (output - 1).
    records = [json.loads(line) for line in Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()]
    for run, rec in zip(read_bench_file(f"{BENCH}/vllm-plain.jsonl"), records):
        expected = rec["completed"] / rec["duration"] * rec["mean_tpot_ms"] / 1e3 * (rec["total_output_tokens"] / rec["completed"] - 1)
        assert run.decode_batch == pytest.approx(max(1.0, expected), rel=1e-12)
    assert read_bench_file(f"{BENCH}/vllm-plain.jsonl")[0].model == "meta-llama/Llama-3.1-8B-Instruct"
    assert read_bench_file(f"{BENCH}/sglang-plain.jsonl")[0].model is None  # SGLang's result names no model


def test_sglang_infinity_request_rate_is_read_as_an_unlimited_rate(tmp_path):
    rec = {"backend": "sglang", "total_output_tokens_retokenized": 1000, "request_rate": float("inf"), "max_concurrency": None,
           "completed": 100, "duration": 5.0, "total_input_tokens": 1000, "total_output_tokens": 10000, "mean_tpot_ms": 5.0,
           "accept_length": None}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(rec) + "\n")  # json writes Infinity, as SGLang's bench_serving does
    assert "Infinity" in path.read_text()
    (run,) = read_bench_file(path)
    assert run.load == "rate inf" and run.accept_length is None
    assert run.decode_batch == pytest.approx(100 / 5.0 * 5e-3 * 99)


def test_noise_free_runs_give_back_the_terms_they_were_made_with(dep):
    plain, spec = _runs(dep)
    fit = fit_engine(dep, plain, spec, steps=3)
    assert fit.scale_fitted and fit.scale == pytest.approx(TRUE["scale"], rel=0.01)
    assert fit.iteration_s == pytest.approx(TRUE["iteration_s"], rel=0.05, abs=2e-6)
    assert fit.error("predicted") < 0.002 and fit.error("held_out") < 0.01
    assert fit.host.seq_s == pytest.approx(TRUE["host"].seq_s, rel=0.1)
    # The shipped vllm@0.10 preset has no such efficiency or round time: it is far off on these runs.
    assert fit.error("preset") > 0.1


def test_held_out_predictions_never_see_the_runs_they_judge(dep):
    plain, spec = _runs(dep, noise=0.02, seed=1)
    base = fit_engine(dep, plain, spec, steps=3)
    # Triple every TPOT at concurrency 64: the held-out predictions there must not move, those of the fit on all must.
    bent = [BenchRun(**{**r.__dict__, "tpot_s": r.tpot_s * (3 if r.load == "concurrency 64" else 1)}) for r in plain + spec]
    fit = fit_engine(dep, bent[:4], bent[4:], steps=3)
    at64 = [i for i, r in enumerate(fit.runs) if r.load == "concurrency 64"]
    assert np.allclose(fit.held_out[at64], base.held_out[at64], rtol=1e-9)
    assert not np.allclose(fit.predicted[at64], base.predicted[at64], rtol=0.05)


def test_one_load_has_nothing_to_hold_out_and_one_batch_fits_no_efficiency(dep):
    plain, spec = _runs(dep, loads=(8,))
    fit = fit_engine(dep, plain, spec, steps=3)
    assert np.all(np.isnan(fit.held_out)) and not fit.scale_fitted and fit.scale == 1.0


def test_the_printed_flags_reproduce_the_fitted_predictions(tmp_path, capsys):
    out = tmp_path / "fitted.yaml"
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", f"{BENCH}/vllm-eagle3.jsonl",
            "--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10", "--out", str(out), "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["efficiency_fitted"] and 0.8 < s["efficiency_scale"] < 0.9  # the samples were made with 0.85 and 2% noise
    assert s["error"]["held_out"]["all"] < 0.08 and s["error"]["preset"]["all"] > 0.15
    flags = s["flags"].split()
    opt = dict(zip(flags[::2], flags[1::2]))
    dep = Deployment.build(str(out), "llama-3.1-8b", "eagle3", opt["--timing"], opt["--engine"],
                           engine_overhead_ms=float(opt["--engine-overhead-ms"]))
    dep = dep.with_source(opt["--timing"], dep.engine.with_spec(float(opt["--engine-round-ms"]), float(opt["--engine-step-ms"]),
                                                                 float(opt["--engine-seq-us"]),
                                                                 seq_step_us=float(opt["--engine-seq-step-us"])))
    assert float(opt["--engine-seq-step-us"]) == 0.0  # one number of steps: the per-sequence-and-step term is the per-sequence one
    for run in s["runs"]:
        if run["kind"] == "plain":
            t = float(dep.decode(run["decode_batch"], run["context"]).total_s)
        else:
            t = float(dep.round_time(run["decode_batch"], run["context"], 3).total_s) / run["accept_length"]
        assert t * 1e3 == pytest.approx(run["fitted_tpot_ms"], rel=2e-3)


def test_text_output_names_tools_preset_and_held_out_error(capsys):
    argv = ["calibrate-engine", "--plain", f"{BENCH}/sglang-plain.jsonl", "--spec", f"{BENCH}/sglang-eagle3.jsonl",
            "--hardware", "h100", "--target", "llama-3.1-8b", "--draft", "eagle3", "--steps", "3", "--engine", "sglang@0.5"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "sglang.bench_serving --output-file JSON lines" in out and "engine sglang@0.5" in out
    assert "held-out error (each load fitted without its runs)" in out and "sglang@0.5 as shipped" in out
    assert "use: specsim optimal-gamma --hardware h100 --target llama-3.1-8b --draft eagle3 --timing roofline --engine sglang@0.5" in out
