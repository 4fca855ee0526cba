"""Calibrations of several files and sweeps, kept out of test_calibration.py's xdist group (which runs on one worker) so
that the suite's two workers share them; the three that read one calibration (METRICS_GROUP) share one worker."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import calibrated_once
from specsim.cli.main import main

BENCH = str(Path(__file__).resolve().parent.parent / "examples" / "bench")
PLAN = f"{BENCH}/plan/plan.yaml"


def test_a_calibration_of_two_sweeps_says_which_acceptance_it_keeps_and_names_the_other(tmp_path, capsys):
    """Two sweeps (512 and 2048 prompt tokens) without recorded acceptance fit one alpha each; the file keeps one, and
    kept the first in silence whatever order they came in.  It now says which, and gives the other's alpha."""
    results = Path(PLAN).parent / "results"
    # three loads a sweep (the plan runs six): enough to fit, half the time
    for pattern in (
        "plain-in512-c[148].json",
        "plain-in2048-c[148].json",
        "s2-*-in512-c[148].json",
        "s4-*-in2048-c[148].json",
    ):
        for f in results.glob(pattern):
            record = {k: v for k, v in json.loads(f.read_text()).items() if not k.startswith("spec_decode")}
            (tmp_path / f.name).write_text(json.dumps(record))
    files = lambda pattern: sorted(str(p) for p in tmp_path.glob(pattern))  # noqa: E731
    argv = ["calibrate-engine", "--plain", *files("plain-*"), "--spec", *files("s2-*"), "--steps", "2", "--spec"]
    argv += [*files("s4-*"), "--steps", "4", "--hardware", "h100", "--draft", "llama-3.2-1b", "--engine", "vllm@0.20.0"]
    assert main(argv + ["--out", str(tmp_path / "cal.yaml")]) == 0
    said = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("its acceptance: "))
    kept = yaml.safe_load((tmp_path / "cal.yaml").read_text())["acceptance"]
    assert said == f"its acceptance: {kept['source']}" and "sweep 512 in / 256 out" in said
    other = re.search(r"the file keeps this sweep's alone: sweep 2048 in / 256 out \(.*\) gave alpha ([\d.]+)", said)
    assert other is not None and abs(float(other.group(1)) - kept["alpha"]) > 0.01


def test_a_speculative_run_without_acceptance_among_runs_that_record_it_is_said(tmp_path, capsys):
    """A plain file given with --spec by mistake (its date changed, so not the same runs) was fitted: its sweep's
    acceptance fell from alpha 0.765 to 0.441 in silence.  It is said, not refused: a study may record the acceptance
    of some runs only (the corpus's H100 sweep does)."""
    plain = Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()
    spec = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()
    stray = json.loads(plain[-1]) | {"date": "20261202-000000"}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(spec[:-1] + [json.dumps(stray)]) + "\n")
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", str(mixed), "--hardware", "h100"]
    argv += ["--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10", "--out", str(tmp_path / "cal.yaml")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mixed.jsonl: no acceptance recorded, where the other speculative runs of sweep 1000 in / 256 out" in out
    assert "if it is a plain run given as --spec, drop it" in out
    assert main(argv[:4] + [f"{BENCH}/vllm-eagle3.jsonl"] + argv[5:]) == 0  # every run recording one: nothing said
    assert "no acceptance recorded" not in capsys.readouterr().out


def test_a_run_without_acceptance_takes_its_sweeps_recorded_one_and_is_held_out(tmp_path, capsys, monkeypatch):
    """Issue 35: one acceptance per sweep, and a left-out load predicted with the acceptance fitted without it.  With
    one run's acceptance length taken away, the run had got an alpha of its own (0.788 beside the others' recorded
    2.80, alpha 0.765) and its load was not held out.  It takes the length the others record at its steps, pooled, so
    no acceptance is fitted and every figure is the one of the file that records all four (each records 2.80).  The
    modified file's --json and text are two printings of one calibration: a call of calibrate_engine with the arguments
    of one made already is given its result, not fitted again (two made for three calls, asserted)."""
    made = calibrated_once(monkeypatch)  # tests/conftest.py
    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()
    record = json.loads(lines[1]) | {"spec_decode_acceptance_length": None}
    spec = tmp_path / "al_null.jsonl"
    spec.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--hardware", "h100", "--draft", "eagle3"]
    argv += ["--steps", "3", "--engine", "vllm@0.10", "--json", "--spec"]
    assert main(argv + [str(spec)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(argv + [f"{BENCH}/vllm-eagle3.jsonl"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert got["acceptance"] == {} and not any("acceptance" in w for w in got["not_held_out"])
    assert got["runs"][5]["accept_length"] == pytest.approx(2.80)
    # said where it came from: this run's length is its sweep's, not its own record (the table's AL reads "2.80 sweep")
    assert [r["accept_length_from_sweep"] for r in got["runs"]] == [False] * 5 + [True] + [False] * 2
    assert not any(r["accept_length_from_sweep"] for r in whole["runs"])
    assert main(argv[:-2] + ["--spec", str(spec)]) == 0
    assert "2.80 sweep" in capsys.readouterr().out
    assert len(made) == 2
    for mine, theirs in zip(got["runs"], whole["runs"]):
        assert mine["held_out_load"] == pytest.approx(theirs["held_out_load"], rel=1e-6)
    assert any("it takes theirs" in n and "none fitted" in n for n in got["notes"])


def test_a_left_out_load_takes_the_acceptance_of_the_other_loads_records():
    """A run without a recorded acceptance, held out with its load, takes its sweep's from the other loads' records,
    and where its load holds the only record of its sweep, the training runs' acceptance is fitted: no record of a
    load left out reaches the fit that predicts it."""
    import dataclasses

    from specsim.calibration.bench_files import read_bench_file
    from specsim.calibration.runs import CalRun, SpecSetup, with_sweep_acceptance

    runs = [CalRun(r, SpecSetup(3, sweep="s")) for r in read_bench_file(Path(f"{BENCH}/vllm-eagle3.jsonl"))]
    runs[0] = dataclasses.replace(runs[0], run=dataclasses.replace(runs[0].run, accept_length=3.4))
    runs[1] = dataclasses.replace(runs[1], run=dataclasses.replace(runs[1].run, accept_length=None))
    every = [c.known_accept_length for c in with_sweep_acceptance(runs)]
    assert 2.80 < every[1] < 3.4
    without_first = [c.known_accept_length for c in with_sweep_acceptance(runs, [False, True, True, True])]
    assert without_first[1] == pytest.approx(2.80)
    only_first = with_sweep_acceptance(runs, [True, False, False, False])
    assert only_first[1].known_accept_length == pytest.approx(3.4)
    assert with_sweep_acceptance(runs, [False, True, False, False])[1].known_accept_length is None


def test_a_run_that_names_no_model_joins_the_sweep_of_its_lengths(tmp_path, capsys):
    """Runs that name two models are refused, so a run that names none (a file written without model_id) is of the one
    deployment: it joins the sweep of its lengths.  It had made a sweep of its own, with an acceptance of its own
    fitted on it alone, and its load could not be held out.  (The runs at 4 and 64 users, plain and speculative, the
    one at 64 naming no model: a sweep of its own would be two sweeps of one run; the fit takes 0.3 s, not 2 s.)"""
    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()[1::2]
    records = [{k: v for k, v in json.loads(line).items() if not k.startswith("spec_decode")} for line in lines]
    del records[1]["model_id"]
    spec = tmp_path / "spec.jsonl"
    spec.write_text("".join(json.dumps(r) + "\n" for r in records))
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(f"{line}\n" for line in Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()[1::2]))
    argv = ["calibrate-engine", "--plain", str(plain), "--spec", str(spec), "--hardware", "h100"]
    assert main(argv + ["--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10"]) == 0
    sweeps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  note: sweep ")]
    assert len(sweeps) == 1 and "2 speculative runs at 3 draft steps" in sweeps[0], sweeps


def test_answers_at_a_calibrations_short_runs_say_that_the_fit_is_of_the_runs_and_they_of_the_long_run(
    eagle3_calibration, capsys
):
    """The example runs are of 200 requests: at 64 users that is a first burst and a last wave more than a steady state,
    and the fit of that run (11.01 ms speculating) is not the long run's answer (12.74 ms, 1.22x against the run's
    1.35x).  The answers say which is which where a run had fewer than 20 requests a user; at 1 user they need not."""
    out = eagle3_calibration  # calibrate-engine of vllm-plain.jsonl and vllm-eagle3.jsonl (tests/conftest.py)
    assert {r["requests"] for r in yaml.safe_load(out.read_text())["runs"]} == {200}
    capsys.readouterr()
    assert main(["speedup", "--calibration", str(out), "--gamma", "3", "--concurrency", "1,64"]) == 0
    err = capsys.readouterr().err
    assert "cal.yaml's runs at 64 users (200 requests) had fewer than 20 requests a user" in err
    assert main(["optimal-gamma", "--calibration", str(out), "--concurrency", "1"]) == 0
    assert "fewer than 20 requests a user" not in capsys.readouterr().err


def test_runs_whose_records_mix_means_and_medians_are_all_read_by_their_medians(tmp_path):
    """InferenceX's dashboard keeps medians for every row and means for some: the plain run at 4 users was read by its
    median TPOT and the speculative one by its mean, and their ratio taken as the speedup.  Every run is now read by
    its median, and the calibration's notes say why."""
    from specsim.calibration.inputs import runs_from_files

    plain, spec = (Path(f"{BENCH}/vllm-{name}.jsonl").read_text().splitlines() for name in ("plain", "eagle3"))
    records = [json.loads(line) for line in plain]
    # the plain run at 4 users keeps its medians alone; the speculative runs' medians sit 5% above their means
    records[1] = {k: v for k, v in records[1].items() if not k.startswith("mean_")}
    spec_records = [json.loads(line) for line in spec]
    for r in spec_records:
        r.update({k: v * 1.05 for k, v in r.items() if k.startswith("median_") and k.endswith("_ms")})
    (tmp_path / "plain.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (tmp_path / "spec.jsonl").write_text("\n".join(json.dumps(r) for r in spec_records) + "\n")
    files = [str(tmp_path / "plain.jsonl")], [([str(tmp_path / "spec.jsonl")], 3)]
    runs, _, notes = runs_from_files(*files)
    assert {c.run.statistic for c in runs} == {"median"}
    assert any(n.startswith("latencies read by their medians: plain.jsonl#2 records no mean") for n in notes)
    by = {(c.kind, c.run.concurrency): c.run.tpot_s for c in runs}
    four = next(r for r in spec_records if r["max_concurrency"] == 4)
    assert by["plain", 4] / by["spec", 4] == pytest.approx(records[1]["median_tpot_ms"] / four["median_tpot_ms"])
    # where every record holds a mean, the means are read, as before
    runs, _, notes = runs_from_files([f"{BENCH}/vllm-plain.jsonl"], [([f"{BENCH}/vllm-eagle3.jsonl"], 3)])
    assert {c.run.statistic for c in runs} == {"mean"} and not any("medians" in n for n in notes)


def test_guidellm_reports_and_plan_results_are_read_by_the_one_statistic_too(tmp_path):
    """The reviewer's two paths that kept mixing: a GuideLLM report beside a median-only file was read by its means
    (its summaries hold medians), and a plan's results were never asked which statistic they share."""
    import shutil

    from specsim.calibration.inputs import runs_from_files, runs_from_plan

    record = json.loads(Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()[0])
    (tmp_path / "plain.jsonl").write_text(json.dumps({k: v for k, v in record.items() if not k.startswith("mean_")}))
    runs, _, notes = runs_from_files([str(tmp_path / "plain.jsonl")], [([f"{BENCH}/guidellm-eagle3.json"], 3)])
    assert {(c.kind, c.run.statistic) for c in runs} == {("plain", "median"), ("spec", "median")}
    folder = tmp_path / "plan"
    shutil.copytree(Path(PLAN).parent, folder)
    one = sorted((folder / "results").glob("plain-*.json"))[0]
    kept = json.loads(one.read_text())
    one.write_text(json.dumps({k: v for k, v in kept.items() if not k.startswith("mean_")}))
    _, runs, _, notes = runs_from_plan(str(folder / "plan.yaml"))
    assert {c.run.statistic for c in runs} == {"median"}
    assert any(n.startswith(f"latencies read by their medians: {one.name}#1 records no mean") for n in notes)


def test_runs_whose_requests_did_not_all_complete_are_named(tmp_path):
    """A vllm bench serve run records the requests it sent (num_prompts) and those that completed; its latencies and
    throughput are the completed ones'. Ten of 200 failed (timeouts, prompts past the model's length) was read in
    silence; it is named, and a run whose every request completed is not."""
    from specsim.calibration.inputs import runs_from_files

    records = [json.loads(x) for x in Path(f"{BENCH}/vllm-plain.jsonl").read_text().splitlines()]
    short = dict(records[1])
    short |= {"completed": 190, "failed": 10, "total_input_tokens": 190_000, "total_output_tokens": 190 * 256}
    short |= {"request_throughput": 190 / short["duration"], "output_throughput": 190 * 256 / short["duration"]}
    (tmp_path / "plain.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [records[0], short, *records[2:]]))
    _, _, notes = runs_from_files([str(tmp_path / "plain.jsonl")], [([f"{BENCH}/vllm-eagle3.jsonl"], 3)])
    (said,) = [n for n in notes if "did not complete" in n]
    assert "plain.jsonl#2: 10 of 200" in said and "#1" not in said and "vllm-eagle3" not in said
    _, _, notes = runs_from_files([f"{BENCH}/vllm-plain.jsonl"], [([f"{BENCH}/vllm-eagle3.jsonl"], 3)])
    assert not any("did not complete" in n for n in notes)


def test_the_files_alpha_is_its_sweeps_rate_pooled_as_the_fit_pools_it(tmp_path):
    """The file's alpha was the unweighted mean of its runs' rates, while a run recording none took its sweep's rate
    weighted by each run's verifications: two poolings of one sweep.  Runs at 2.4 and 3.2 tokens a verification, of
    equal output, give 0.759 unweighted and 0.745 weighted (the run at 2.4 verified 4/3 as often); the file keeps the
    weighted one, runs.pooled_alpha's."""
    from specsim.calibration.runs import pooled_alpha

    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()
    counters = ("num_drafts", "draft_tokens", "accepted_tokens", "acceptance_rate")
    records = [
        {k: v for k, v in json.loads(line).items() if k.removeprefix("spec_decode_") not in counters} for line in lines
    ]
    lengths = [2.4, 3.2, 2.4, 3.2]
    spec = tmp_path / "spec.jsonl"
    spec.write_text(
        "".join(json.dumps(r | {"spec_decode_acceptance_length": al}) + "\n" for r, al in zip(records, lengths))
    )
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", str(spec), "--hardware", "h100"]
    argv += ["--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10", "--out", str(tmp_path / "cal.yaml")]
    assert main(argv) == 0
    kept = yaml.safe_load((tmp_path / "cal.yaml").read_text())["acceptance"]
    weighted = pooled_alpha([(3, al, 51200 / al) for al in lengths])
    assert kept["alpha"] == pytest.approx(round(weighted, 4)) and weighted == pytest.approx(0.745, abs=1e-3)
    assert "each run's weighted by its verifications" in kept["source"]


def test_a_guidellm_benchmarks_errored_and_incomplete_requests_are_named_too(tmp_path):
    """GuideLLM counts a benchmark's requests by status (metrics.request_totals: successful, incomplete, errored, total;
    src/guidellm/benchmark/schemas/metrics.py, GenerativeMetrics, 0.7.3) and its summaries are the successful ones'.
    30 errored and 10 cut off at the benchmark's end, of 200, were read in silence, as vLLM's failed requests once were."""
    from specsim.calibration.bench_files import read_bench_file
    from specsim.calibration.inputs import runs_from_files

    report = json.loads(Path(f"{BENCH}/guidellm-plain.json").read_text())
    report["benchmarks"][1]["metrics"]["request_totals"] = {
        "successful": 160,
        "incomplete": 10,
        "errored": 30,
        "total": 200,
    }
    concurrency = report["benchmarks"][1]["metrics"]["request_concurrency"]  # as GuideLLM writes it, with its total
    concurrency["total"] = dict(concurrency["successful"])
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(report))
    assert [r.failed for r in read_bench_file(path)] == [0, 40, 0, 0]
    _, _, notes = runs_from_files([str(path)], [([f"{BENCH}/guidellm-eagle3.json"], 3)])
    (said,) = [n for n in notes if "did not complete" in n]
    assert "plain.json#2: 40 of 200" in said and "#1" not in said and "guidellm-eagle3" not in said


#: The tests that read calibrate-engine's output of GuideLLM's example reports with examples/vllm-metrics.txt: one
#: worker, so that the calibration is made once, not once a test.
METRICS_GROUP = pytest.mark.xdist_group("calibration-metrics")


@pytest.fixture(scope="module")
def metrics_calibration(tmp_path_factory) -> tuple[str, Path]:
    """(what ``calibrate-engine`` of GuideLLM's example reports at 3 steps on an H100 with ``--metrics
    examples/vllm-metrics.txt --out FILE`` prints, FILE), made once for the tests that read them (they only read)."""
    out = tmp_path_factory.mktemp("metrics") / "cal.yaml"
    args = f"--plain {BENCH}/guidellm-plain.json --spec {BENCH}/guidellm-eagle3.json --hardware h100 --draft eagle3"
    args += f" --steps 3 --engine vllm@0.10 --metrics {Path(BENCH).parent}/vllm-metrics.txt --out {out}"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        assert main(["calibrate-engine", *args.split()]) == 0
    return printed.getvalue(), out


@METRICS_GROUP
def test_an_acceptance_from_a_metrics_page_is_said_to_be_the_pages_not_the_files(metrics_calibration):
    """GuideLLM records no acceptance; --metrics gives the runs the page's length.  The calibration file's acceptance
    said "the acceptance length 4 runs of guidellm-eagle3.json recorded": the reports record none."""
    out = metrics_calibration[1]
    source = yaml.safe_load(out.read_text())["acceptance"]["source"]
    assert "guidellm-eagle3.json recorded" not in source, source
    assert "vllm-metrics.txt gave 4 runs of guidellm-eagle3.json" in source, source


def test_the_fits_first_line_says_the_tensor_parallelism_no_benchmark_file_records(tmp_path, capsys):
    """The fit's first line said "runs of llama-3.1-8b on h100-sxm" at --tp 2 as at 1: no file records the TP, so the
    line is where a user checks that the fit is of the deployment served.  (Each report's runs at 1 and 64 users: the
    line names the deployment the runs were fitted as, whatever their loads; a fit of two loads takes 1 s, not 6 s.)"""
    for name in ("guidellm-plain.json", "guidellm-eagle3.json"):
        report = json.loads(Path(f"{BENCH}/{name}").read_text())
        report["benchmarks"] = report["benchmarks"][::3]
        (tmp_path / name).write_text(json.dumps(report))
    args = (
        f"--plain {tmp_path}/guidellm-plain.json --spec {tmp_path}/guidellm-eagle3.json --hardware h100 --draft eagle3"
    )
    assert main(["calibrate-engine", *args.split(), "--steps", "3", "--engine", "vllm@0.10", "--tp", "2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "runs of llama-3.1-8b on h100-sxm x 2 (TP 2);" in first, first


@METRICS_GROUP
def test_a_metrics_pages_per_position_counts_reach_the_calibration_as_a_files_do(metrics_calibration):
    """vLLM's /metrics page counts each draft position's accepted tokens (vllm:spec_decode_num_accepted_tokens_per_pos;
    vllm/v1/spec_decode/metrics.py, 0.30.0), which bench-plan's README promises the fit takes; calibrate-engine
    --metrics took the page's acceptance length alone, so the file's acceptance had no per_position and answers from
    it carried one rate per token past what the page measured.  examples/vllm-metrics.txt: 33,200, 25,600 and 18,900
    of 40,000 drafts."""
    out = metrics_calibration[1]
    acceptance = yaml.safe_load(out.read_text())["acceptance"]
    assert acceptance["per_position"] == [0.83, 0.64, 0.4725], acceptance


def _plan_without_recorded_acceptance(tmp_path: Path) -> Path:
    """examples/bench/plan copied, its real-prompt runs' files stripped of the acceptance vllm bench serve records
    (spec_decode_*), as a client that records none leaves them (GuideLLM, a vLLM before 0.14): their pages give it."""
    import shutil

    plan = tmp_path / "plan"
    shutil.copytree(Path(BENCH) / "plan", plan)
    for c in (1, 2):
        path = plan / "results" / f"s4-real-prompts-c{c}.json"
        record = json.loads(path.read_text())
        path.write_text(json.dumps({k: v for k, v in record.items() if not k.startswith("spec_decode")}))
    return plan


def test_a_plans_metrics_pages_give_their_per_position_shares_as_metrics_does(tmp_path):
    """A plan's run whose file records no acceptance takes it from its /metrics pages saved before and after it
    (acceptance_between); the pages count each draft position (vllm:spec_decode_num_accepted_tokens_per_pos,
    vllm/v1/spec_decode/metrics.py 0.30.0), and calibrate-engine --metrics carries those shares, but the plan took the
    length alone: the file's acceptance had no per_position and said the files 'recorded' it.  The example's pages:
    2048, 1474, 1062, 764 of 2,844 drafts, then 2047, 1475, 1061, 765 of 2,844 more; pooled 4095, 2949, 2123, 1529 of
    5,688."""
    plan = _plan_without_recorded_acceptance(tmp_path)
    out = tmp_path / "cal.yaml"
    assert main(["calibrate-engine", "--plan", str(plan / "plan.yaml"), "--out", str(out)]) == 0
    acceptance = yaml.safe_load(out.read_text())["acceptance"]
    assert acceptance["per_position"] == [0.7199, 0.5185, 0.3732, 0.2688], acceptance
    assert "recorded" not in acceptance["source"].split("per-position")[0], acceptance["source"]
    assert "the /metrics pages saved before and after each gave 2 runs of s4-real-prompts-c1.json" in " ".join(
        acceptance["source"].split()
    )


def test_a_plans_metrics_page_of_another_number_of_positions_is_refused_naming_the_run(tmp_path, capsys):
    """A page counting 3 positions after a run the plan ran at 4 draft steps is of another server: one line naming the
    plan's run and its page, exit 2, no calibration written."""
    plan = _plan_without_recorded_acceptance(tmp_path)
    counters = {"num_drafts": 2844, "num_draft_tokens": 3 * 2844, "num_accepted_tokens": 2048 + 1474 + 1062}
    lines = [f'vllm:spec_decode_{k}_total{{engine="0",model_name="m"}} {v}' for k, v in counters.items()]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{k}"}} {v}'
        for k, v in enumerate((2048, 1474, 1062))
    ]
    (plan / "results" / "s4-real-prompts-c1.metrics-after.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "cal.yaml"
    assert main(["calibrate-engine", "--plan", str(plan / "plan.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "specsim calibrate-engine: error: plan run s4-real-prompts-c1: its metrics_after s4-real-prompts-c1.metrics-after.txt counts 3 "
        "draft positions (vllm:spec_decode_num_accepted_tokens_per_pos), the runs it would give its acceptance length "
        "are at the plan's 4 draft steps: save the page of the server that ran them"
    ), err
    assert not out.exists()


@METRICS_GROUP
def test_the_metrics_note_says_the_pages_counters_run_from_the_servers_start(metrics_calibration):
    """vLLM's speculation counters are prometheus_client Counters made when the server starts and only incremented
    (SpecDecodingProm, vllm/v1/spec_decode/metrics.py 0.30.0): a page saved after the plain runs, a warm-up and these
    runs holds the drafts of all of them.  The note that gives the page's length to the runs said nothing of it.
    (The run also writes its file, --out, which adds a line naming it and changes no note.)"""
    note = next(line for line in metrics_calibration[0].splitlines() if "whose file has none" in line)
    assert "its counters count every draft since the server started" in note, note
    assert "a page saved after several runs holds all of them" in note, note
