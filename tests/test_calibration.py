"""calibrate-engine and --calibration: benchmark files read as their tools write them, the run model against the
request-level simulator, terms recovered with intervals that cover them, what the runs cannot separate held and named,
held-out loads kept out of the fit that judges them, one calibration file that every command reproduces, and files
no engine could have measured refused in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from specsim.calibration.bench_files import BenchRun, read_bench_file
from specsim.calibration.engine_fit import fit_engine
from specsim.calibration.runs import CalRun, SpecSetup, _Runs, load_key, tpot_with_prefill
from specsim.cli.main import main
from specsim.speculation.deployment import Deployment
from specsim.engines import SpecHost

BENCH = "examples/bench"
PLAN = f"{BENCH}/plan/plan.yaml"
#: The terms scripts/make_bench_samples.py generates the samples with (keep in step with it).
TRUE_SCALE, TRUE_ITER_S = 0.85, 0.40e-3
TRUE_PLAN = SpecHost(round_s=1.0e-3, step_s=0.30e-3, seq_s=20e-6, seq_step_s=2.0e-6)
TRUE_ONE_STEP = SpecHost(round_s=1.0e-3, step_s=0.425e-3, seq_s=20e-6, seq_step_s=5.4e-6)


@pytest.fixture(scope="module")
def dep():
    return Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.20.0")


def _truth(dep, host=TRUE_PLAN):
    from specsim.calibration.runs import _scaled

    d = _scaled(dep, TRUE_SCALE)
    engine = d.engine.with_iteration_ms(TRUE_ITER_S * 1e3)
    return dataclasses.replace(d, engine=dataclasses.replace(engine, spec=host, kernel_spec=host))


def _model_runs(dep, noise=0.0, seed=0, steps=(2, 4), loads=(1, 2, 4, 8, 16, 32), prompts=(512, 2048), pinned=True):
    """Runs whose TPOT is the run model's own with the true terms (relative Gaussian noise ``noise``)."""
    rng = np.random.default_rng(seed)
    true = _truth(dep)
    runs = []
    for P in prompts:
        for c in loads:
            for s in (None,) + tuple(steps):
                setup = None if s is None else SpecSetup(s, pinned_accept_length=round(1 + 0.8 * s * 0.9, 2) if pinned else None,
                                                         sweep=f"s{s}-in{P}")
                run = BenchRun("x.jsonl", c, "vllm", None, f"concurrency {c}", 100, 1.0, 0.9 * c if c > 1 else 1.0, float(P),
                               256.0, None, 2.0 * c / (1 + c), c)
                model = _Runs(true, [CalRun(run, setup)])
                if s is None:
                    step, rho = model.plain_parts(1.0, np.array([0]))  # (true is already scaled)
                    step = step + TRUE_ITER_S
                else:
                    groups, rho = model.spec_passes(model.deployment(1.0, TRUE_ITER_S), np.array([0]))
                    step = model.spec_tpot(model.deployment(1.0, TRUE_ITER_S, TRUE_PLAN), np.array([0]), groups, np.zeros(1),
                                           np.array([]))
                t = float(tpot_with_prefill(step, 1.0, rho)[0]) * (1 + rng.normal(0, noise))
                runs.append(CalRun(dataclasses.replace(run, tpot_s=t), setup))
    return runs


# -- reading -----------------------------------------------------------------------------------------------------------
def test_each_tool_is_read_with_its_load_acceptance_and_littles_law_batch():
    for name, tool, al in (("vllm-eagle3.jsonl", "vllm", 2.8), ("sglang-eagle3.jsonl", "sglang", 2.75), ("guidellm-eagle3.json", "guidellm", None)):
        runs = read_bench_file(f"{BENCH}/{name}")
        assert [r.tool for r in runs] == [tool] * 4
        assert [r.load for r in runs] == ["concurrency 1", "concurrency 4", "concurrency 16", "concurrency 64"]
        assert all(r.accept_length == al for r in runs) and all(r.concurrency == c for r, c in zip(runs, (1, 4, 16, 64)))
        assert all(r.context == 1000 + 256 / 2 for r in runs)
    records = [json.loads(line) for line in Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()]
    for run, rec in zip(read_bench_file(f"{BENCH}/vllm-plain.jsonl"), records):
        expected = rec["completed"] / rec["duration"] * rec["mean_tpot_ms"] / 1e3 * (rec["total_output_tokens"] / rec["completed"] - 1)
        assert run.decode_batch == pytest.approx(max(1.0, expected), rel=1e-12)
        assert run.rate_per_s == pytest.approx(rec["completed"] / rec["duration"], rel=1e-12) and run.server == "vllm"
        # A closed loop of c users: a request sees the other c - 1 arrive while it decodes.
        assert run.others_rate_per_s == pytest.approx(run.rate_per_s * (run.concurrency - 1) / run.concurrency, rel=1e-12)
    assert read_bench_file(f"{BENCH}/sglang-plain.jsonl")[0].model is None  # SGLang's result names no model


def test_tensorrt_llm_results_give_their_tokens_per_iteration_as_the_acceptance_length(tmp_path):
    rec = json.loads(Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()[0])
    rec = {k: v for k, v in rec.items() if not k.startswith("spec_decode")} | {"backend": "openai",
                                                                                "avg_decoded_tokens_per_iter": {"mean": 2.6, "median": 2.5}}
    path = tmp_path / "trt.json"
    path.write_text(json.dumps(rec))
    (run,) = read_bench_file(path)
    assert run.tool == "trtllm" and run.accept_length == 2.6 and run.server is None
    path.write_text(json.dumps(rec | {"avg_decoded_tokens_per_iter": {"mean": 1.0}}))
    assert read_bench_file(path)[0].accept_length is None  # a plain run decodes one token per iteration


def test_rows_come_in_load_order_whatever_the_file_order():
    assert sorted(["concurrency 16", "rate inf", "concurrency 4", "rate 2/s", "concurrency 1"], key=load_key) == \
        ["concurrency 1", "concurrency 4", "concurrency 16", "rate 2/s", "rate inf"]


# -- the run model ---------------------------------------------------------------------------------------------------
def test_the_run_model_follows_the_request_level_simulator(dep):
    """A closed loop of c users with fixed lengths, played through specsim.serving.simulator, against TPOT = t / (1 - rho) at the
    simulated run's own rate and Little's-law batch: within 8% (a deterministic comparison; the mean-value model
    ignores that equal requests finish in step at small c, which is its largest error)."""
    from specsim.serving.simulator import EngineLimits, StepTable, simulate
    from specsim.serving.workloads import Requests

    true = _truth(dep)
    for P in (512, 2048):
        for c in (1, 4, 16, 64):
            n = max(32, 8 * c)
            result = simulate(Requests(np.full(n, P), np.full(n, 256)), StepTable(true, c, P + 256), EngineLimits(max_num_seqs=c),
                              concurrency=c)
            tpot = float(np.mean(result.tpot_s))
            run = BenchRun("x", 1, "vllm", None, f"concurrency {c}", n, tpot, max(1.0, n / result.makespan_s * tpot * 255), P,
                           256.0, None, n / result.makespan_s, c)
            model = float(tpot_with_prefill(true.decode(run.decode_batch, run.context).total_s, run.others_rate_per_s,
                                            true.prefill_s(P)))
            assert model == pytest.approx(tpot, rel=0.08), (P, c)
            if c == 1:
                assert model == pytest.approx(tpot, rel=1e-3)  # a lone user's TPOT holds no prefill


def test_noise_free_runs_of_the_plan_design_give_back_every_term(dep):
    fit = fit_engine(dep, _model_runs(dep), intervals=False)
    assert fit.scale == pytest.approx(TRUE_SCALE, rel=0.01)
    assert fit.iteration_s == pytest.approx(TRUE_ITER_S, rel=0.02)
    for name in ("round_s", "step_s", "seq_s", "seq_step_s"):
        assert fit.terms[name].status == "fitted" and fit.terms[name].value == pytest.approx(getattr(TRUE_PLAN, name), rel=0.02), name
    assert fit.error("predicted") < 1e-3 and fit.error("held_out") < 5e-3


def test_what_one_step_count_and_one_batch_cannot_separate_is_held_at_the_preset_and_named(dep):
    runs = [c for c in _model_runs(dep, steps=(3,)) if c.run.load in ("concurrency 1", "concurrency 2")]
    fit = fit_engine(dep, runs, intervals=False)
    for name in ("step_s", "seq_step_s"):
        t = fit.terms[name]
        assert t.status == "held" and t.value == getattr(dep.engine.spec, name)
        assert "one number of draft steps (3)" in t.why and ("second number of draft steps" in t.why or "two numbers" in t.why)
    assert fit.terms["seq_s"].status == "fitted" and fit.terms["scale"].status == "fitted"  # batches 1 and 1.8: 1.8x apart
    close = _model_runs(dep, steps=(3,), loads=(4, 5))  # decode batches 3.6 and 4.5: 1.25x apart
    fit = fit_engine(dep, close, intervals=False)
    assert fit.terms["scale"].status == "held" and "less than 1.5x apart" in fit.terms["scale"].why
    assert fit.terms["seq_s"].status == "held" and "speculative runs at decode batches at least 1.5x apart" in fit.terms["seq_s"].why
    with pytest.raises(ValueError, match=r"every run is at one load \(concurrency 1\)"):
        fit_engine(dep, [c for c in runs if c.run.load == "concurrency 1"])


def test_held_out_predictions_never_see_the_runs_they_judge(dep):
    runs = _model_runs(dep, noise=0.02, seed=1, prompts=(512,))
    base = fit_engine(dep, runs, intervals=False)
    bent = [dataclasses.replace(c, run=dataclasses.replace(c.run, tpot_s=c.run.tpot_s * (3 if c.run.load == "concurrency 32" else 1)))
            for c in runs]
    fit = fit_engine(dep, bent, intervals=False)
    at32 = [i for i, c in enumerate(fit.runs) if c.run.load == "concurrency 32"]
    assert np.allclose(fit.held_out[at32], base.held_out[at32], rtol=1e-6)
    assert not np.allclose(fit.predicted[at32], base.predicted[at32], rtol=0.05)
    plain = [c.run.load for c in fit.runs if c.kind == "plain"]
    assert plain == sorted(plain, key=load_key)  # rows in load order, whatever order they came in


# -- the shipped samples: terms within their printed intervals --------------------------------------------------------
def _json(argv, capsys):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_plan_samples_give_back_every_term_within_its_printed_interval(capsys):
    s = _json(["calibrate-engine", "--plan", PLAN], capsys)
    truth = {"scale": TRUE_SCALE, "iteration_s": TRUE_ITER_S} | {k: getattr(TRUE_PLAN, k) for k in ("round_s", "step_s", "seq_s", "seq_step_s")}
    for name, value in truth.items():
        t = s["terms"][name]
        assert t["status"] in ("fitted", "bound") and t["low"] <= value <= t["high"], (name, value, t)
    assert s["error"]["held_out"]["spec"] < 0.05 and s["error"]["held_out"]["plain"] < 0.05
    assert [r["load"] for r in s["runs"] if r["kind"] == "plain"] == sorted((r["load"] for r in s["runs"] if r["kind"] == "plain"), key=load_key)


@pytest.mark.parametrize("tool, extra", [("vllm", []), ("sglang", ["--target", "llama-3.1-8b"]), ("guidellm", [])])
def test_the_tool_samples_give_back_what_one_step_count_can_fit_within_its_interval(tool, extra, capsys):
    ext = "json" if tool == "guidellm" else "jsonl"
    s = _json(["calibrate-engine", "--plain", f"{BENCH}/{tool}-plain.{ext}", "--spec", f"{BENCH}/{tool}-eagle3.{ext}", "--hardware",
               "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10"] + extra, capsys)
    truth = {"scale": TRUE_SCALE, "iteration_s": TRUE_ITER_S, "round_s": TRUE_ONE_STEP.round_s, "seq_s": TRUE_ONE_STEP.seq_s}
    for name, value in truth.items():
        t = s["terms"][name]
        assert t["low"] <= value <= t["high"], (name, value, t)
    assert s["terms"]["step_s"]["status"] == "held" and s["terms"]["seq_step_s"]["status"] == "held"
    if tool == "guidellm":  # no acceptance recorded: one rate fitted for the file, covering the one it was made with
        from specsim.speculation.acceptance import alpha_from_acceptance_length
        from specsim.speculation.metrics import accept_length_from_page

        (acc,) = s["acceptance"].values()
        true_alpha = float(alpha_from_acceptance_length(accept_length_from_page("examples/vllm-metrics.txt")[0], 3))
        assert acc["low"] <= true_alpha <= acc["high"]


def test_the_wrong_engine_is_named_when_another_engines_rounds_fit_far_better(capsys):
    # The samples were made on vLLM 0.10's rounds; read as SGLang's spec v1 (no per-step term), they fit worse.
    s = _json(["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", f"{BENCH}/vllm-eagle3.jsonl", "--hardware",
               "h100", "--draft", "eagle3", "--steps", "3", "--engine", "sglang@0.5"], capsys)
    assert any(w.startswith("these runs fit vllm@") and "far better than sglang@0.5's" in w for w in s["warnings"]), s["warnings"]
    s = _json(["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", f"{BENCH}/vllm-eagle3.jsonl", "--hardware",
               "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10"], capsys)
    assert not any("far better" in w for w in s["warnings"])
    assert any(w.startswith("vllm@0.10 as shipped is off by") for w in s["warnings"])  # the samples' host costs are their own
    # Runs made with the preset's own terms raise neither.
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.20.0")
    runs, tpot = _preset_runs(dep)
    runs = [dataclasses.replace(c, run=dataclasses.replace(c.run, tpot_s=float(t))) for c, t in zip(runs, tpot)]
    assert not any("as shipped" in w or "far better" in w for w in fit_engine(dep, runs, intervals=False).warnings)


def _preset_runs(dep):
    from specsim.calibration.engine_fit import _preset_prediction

    runs = _model_runs(dep, prompts=(512,))
    return runs, _preset_prediction(_Runs(dep, runs), dep.engine)


# -- one file, every command ---------------------------------------------------------------------------------------------
def test_the_calibration_file_reproduces_every_fitted_tpot_within_one_percent(tmp_path, capsys):
    from specsim.cli.args import deployment
    from specsim.cli.main import build_parser

    out = tmp_path / "calibration.yaml"
    s = _json(["calibrate-engine", "--plan", PLAN, "--out", str(out)], capsys)
    assert s["use"] == f"specsim optimal-gamma --calibration {out}"
    record = yaml.safe_load(out.read_text())
    args = build_parser().parse_args(["optimal-gamma", "--calibration", str(out)])
    dep = deployment(args)
    runs = [CalRun(r, None if row["kind"] == "plain" else SpecSetup(row["steps"], pinned_accept_length=pin))
            for row, r, pin in _plan_rows(record)]
    model = _Runs(dep, runs)
    for i, (row, c) in enumerate(zip(record["runs"], runs)):
        if c.kind == "plain":
            step, rho = model.plain_parts(1.0, np.array([i]))
            t = step + dep.engine.iteration_s
        else:
            groups, rho = model.spec_passes(dataclasses.replace(dep, engine=dataclasses.replace(
                dep.engine, spec=SpecHost(), kernel_spec=SpecHost())), np.array([i]))
            t = model.spec_tpot(dep, np.array([i]), groups, np.zeros(1), np.array([]))
        assert float(tpot_with_prefill(t, 1.0, rho)[0]) == pytest.approx(row["fitted_tpot_s"], rel=0.01), row["file"]
    # The printed use line runs, and at a lone user's run its decode step is the fitted one.
    lone = next(r for r in record["runs"] if r["kind"] == "plain" and r["load"] == "concurrency 1")
    rows = _json(["optimal-gamma", "--calibration", str(out), "--batch", "1", "--context", str(int(lone["context"]))], capsys)
    assert rows[0]["t_target_s"] == pytest.approx(lone["fitted_step_s"], rel=0.01)
    # The acceptance it carries is the real-prompt runs' (0.72 in the samples), never a pinned one.
    assert record["acceptance"]["alpha"] == pytest.approx(0.72, abs=0.01) and "recorded" in record["acceptance"]["source"]


def _plan_rows(record):
    """(run row, BenchRun, pinned length) of a calibration's runs, read back from the plan's result files."""
    from specsim.calibration.plan import read_plan

    plan = read_plan(PLAN)
    by_file = {Path(r["file"]).name + "#1": r for r in plan["runs"]}
    for row in record["runs"]:
        p = by_file[row["file"]]
        run = read_bench_file(Path(PLAN).parent / p["file"])[0]
        if p["kind"] == "spec" and run.accept_length is None:
            run = dataclasses.replace(run, accept_length=row.get("accept_length"))
        yield row, run, p.get("pinned_accept_length")


def test_the_calibration_sets_the_deployment_and_refuses_flags_of_another(tmp_path, capsys):
    out = tmp_path / "cal.yaml"
    assert main(["calibrate-engine", "--plan", PLAN, "--out", str(out)]) == 0
    capsys.readouterr()
    rows = _json(["optimal-gamma", "--calibration", str(out), "--batch", "1"], capsys)
    assert "calibrated by cal.yaml" in rows[0]["provenance"][1] and "h100-sxm-vllm-fitted" in rows[0]["provenance"][0]
    for flags, message in ((["--hardware", "h200"], "--hardware h200 but cal.yaml calibrates h100-sxm"),
                           (["--target", "qwen3-8b"], "--target qwen3-8b but cal.yaml calibrates llama-3.1-8b"),
                           (["--tp", "2"], "--tp 2 but cal.yaml calibrates tensor parallelism 1"),
                           (["--engine", "sglang"], "--engine sglang but cal.yaml calibrates vllm@0.14"),
                           (["--engine-overhead-ms", "1"], "--engine-overhead-ms replaces the time per iteration cal.yaml fitted")):
        assert main(["optimal-gamma", "--calibration", str(out)] + flags) == 2
        assert message in capsys.readouterr().err
    # The same hardware, named, is fine; so is a round term overridden by the user.
    assert main(["optimal-gamma", "--calibration", str(out), "--hardware", "h100", "--engine-round-ms", "2"]) == 0
    assert main(["speedup", "--calibration", str(out), "--gamma", "3", "--batch", "1"]) == 0
    assert main(["steptime", "--calibration", str(out), "--batch", "1"]) == 0


# -- files no engine could have measured ----------------------------------------------------------------------------------
def _vllm(path, **changes):
    rec = json.loads(Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()[0])
    rec.update(changes)
    Path(path).write_text(json.dumps(rec) + "\n")
    return str(path)


def _vllm_runs(path, loads=(1, 4), **changes):
    lines = []
    for line in Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["max_concurrency"] in loads:
            rec.update(changes)
            lines.append(json.dumps(rec))
    Path(path).write_text("\n".join(lines) + "\n")
    return str(path)


SPEC = f"--plain {BENCH}/vllm-plain.jsonl --spec {{spec}} --hardware h100 --draft eagle3 --steps 3 --engine vllm@0.10"
BAD = [
    ("al50", dict(spec_decode_acceptance_length=50.0), SPEC,
     "vllm-x.jsonl#1: an acceptance length of 50 tokens per verification is outside [1, 4]: 3 draft steps accept at most 3"),
    ("al401", dict(spec_decode_acceptance_length=4.01), SPEC, "acceptance length of 4.01 tokens per verification is outside [1, 4]"),
    ("al1e308", dict(spec_decode_acceptance_length=1e308), SPEC, "acceptance length of 1e+308 tokens per verification is outside"),
    ("little", dict(max_concurrency=1, duration=20.0), SPEC, "sequences decoding at once (Little's law) at concurrency 1"),
    ("fast", dict(mean_tpot_ms=0.01), SPEC, "a TPOT of 0.01 ms is less than half the"),
]


@pytest.mark.parametrize("name, changes, flags, message", BAD, ids=[b[0] for b in BAD])
def test_runs_no_engine_could_have_measured_are_refused_in_one_line(name, changes, flags, message, tmp_path, capsys):
    spec = _vllm_runs(tmp_path / "vllm-x.jsonl", (1, 4, 16, 64), **changes)
    out = tmp_path / "cal.yaml"
    code = main(["calibrate-engine"] + (flags.format(spec=spec) + f" --out {out}").split())
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not out.exists()


def _guidellm(path, concurrency_mean):
    report = json.loads(Path(f"{BENCH}/guidellm-plain.json").read_text())
    report["benchmarks"][0]["metrics"]["request_concurrency"]["successful"]["mean"] = concurrency_mean
    Path(path).write_text(json.dumps(report))
    return str(path)


REFUSED = [
    ("a GuideLLM run with 1000 in flight at one stream",
     lambda t: f"--plain {_guidellm(t / 'g.json', 1000.0)} --hardware h100",
     "a mean of 1000 requests in flight at 1 stream(s) is more than the load lets in"),
    ("a 70B on one H100", lambda t: f"--plain {_vllm_runs(t / 'b.jsonl', (1, 4), model_id='meta-llama/Llama-3.1-70B-Instruct', spec_decode_acceptance_length=None)} --hardware h100",
     "llama-3.1-70b (141.1 GB of weights per GPU at TP 1) does not fit in h100-sxm's 80 GB"),
    ("a context past the model's positions",
     lambda t: f"--plain {_vllm_runs(t / 'p.jsonl', (1, 4), total_input_tokens=200 * 1000000, spec_decode_acceptance_length=None)} --hardware h100",
     "a mean context of 1,000,128 tokens (prompt plus half the output) is past llama-3.1-8b's max_position_embeddings (131,072)"),
    ("engine none", lambda t: f"--plain {BENCH}/vllm-plain.jsonl --hardware h100 --engine none",
     "--engine none adds no engine time: name the engine and version that served the runs"),
    ("kernels on a GPU without data", lambda t: f"--plain {BENCH}/vllm-plain.jsonl --hardware mi300x --timing kernels",
     "--timing kernels: the kernel database has no device 'mi300x'"),
    ("one load", lambda t: f"--plain {_vllm_runs(t / 'one.jsonl', (4,), spec_decode_acceptance_length=None)} --hardware h100",
     "every run is at one load (concurrency 4)"),
    ("two models", lambda t: f"--plain {BENCH}/vllm-plain.jsonl {_vllm_runs(t / 'q.jsonl', (1, 4), model_id='Qwen/Qwen3-8B', spec_decode_acceptance_length=None)} --hardware h100 --target llama-3.1-8b",
     "the runs name different models: Qwen/Qwen3-8B, meta-llama/Llama-3.1-8B-Instruct"),
    ("two engines", lambda t: f"--plain {BENCH}/vllm-plain.jsonl {_vllm_runs(t / 's.jsonl', (1, 4), backend='sglang', spec_decode_acceptance_length=None)} --hardware h100",
     "the runs were served by different engines (sglang, vllm)"),
    ("a plain run that speculated", lambda t: f"--plain {BENCH}/vllm-eagle3.jsonl --hardware h100",
     "vllm-eagle3.jsonl#1: given as a plain run but it reports an acceptance length of 2.80"),
]


@pytest.mark.parametrize("name, argv, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_deployments_and_designs_that_cannot_be_fitted_are_refused(name, argv, message, tmp_path, capsys):
    out = tmp_path / "cal.yaml"
    code = main(["calibrate-engine"] + argv(tmp_path).split() + ["--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not out.exists()


def test_a_local_folder_and_another_spelling_of_the_model_are_accepted(tmp_path, capsys):
    local = _vllm_runs(tmp_path / "local.jsonl", (1, 4, 16, 64), model_id="/models/Llama-3.1-8B-Instruct",
                       spec_decode_acceptance_length=None)
    assert main(["calibrate-engine", "--plain", local, "--hardware", "h100", "--target", "llama-3.1-8b"]) == 0
    meta = _vllm_runs(tmp_path / "meta.jsonl", (1, 4, 16, 64), model_id="meta-llama/Meta-Llama-3.1-8B-Instruct",
                      spec_decode_acceptance_length=None)
    assert main(["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", meta, "--hardware", "h100"]) == 0
    capsys.readouterr()


def test_a_calibration_file_that_is_not_one_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("specsim_calibration: 1\nprofile: {}\n")
    assert main(["optimal-gamma", "--calibration", str(bad)]) == 2
    assert "bad.yaml: the key 'date' is missing" in capsys.readouterr().err
    assert main(["optimal-gamma", "--calibration", str(tmp_path / "none.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
