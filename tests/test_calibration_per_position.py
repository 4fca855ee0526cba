"""Per-position acceptance from ``vllm bench serve`` result files, and datasets that the files name.

vLLM's bench serve writes ``spec_decode_per_position_acceptance_rates`` beside the acceptance length from 0.14.0
(vllm/benchmarks/serve.py L988-989; 0.34.0 L1384-1385): each position's accepted tokens over the run's drafts, one per
configured draft token.  The records below are ``examples/bench/vllm-eagle3.jsonl``'s (3 draft steps, 18285 drafts,
32914 accepted tokens) with the shares such counters give: 14629, 10971 and 7314 accepted at positions 1-3 (their sum
is the 32914 accepted)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from specsim.cli.main import main

BENCH = str(Path(__file__).resolve().parent.parent / "examples" / "bench")
DRAFTS = 18285
SHARES = [14629 / DRAFTS, 10971 / DRAFTS, 7314 / DRAFTS]  # 0.8001, 0.6000, 0.4000


def _records(**changes) -> list[dict]:
    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()
    return [json.loads(line) | {"spec_decode_per_position_acceptance_rates": SHARES} | changes for line in lines]


def _without(record: dict, *keys: str) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def _write(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_the_shares_are_read(tmp_path):
    from specsim.calibration.bench_files import read_bench_file

    runs = read_bench_file(_write(tmp_path / "k3.jsonl", _records()))
    assert [r.per_position for r in runs] == [tuple(SHARES)] * 4
    assert all(r.per_position is None for r in read_bench_file(f"{BENCH}/vllm-eagle3.jsonl"))  # a file without them
    empty = read_bench_file(_write(tmp_path / "empty.jsonl", _records(spec_decode_per_position_acceptance_rates=[])))
    assert all(r.per_position is None for r in empty)  # vLLM writes [] where it counted no draft


@pytest.mark.parametrize(
    "shares, said",
    [
        ([0.8, 0.6, 1.4], r"holds 1\.4, outside \[0, 1\]"),
        ([0.6, 0.8, 0.4], r"rises from 0\.6 at position 1 to 0\.8 at 2"),
        ([0.8, 0.6, 0.3], r"1 \+ the sum of spec_decode_per_position_acceptance_rates is 2\.7, not "),
        ("0.8,0.6", r"must be a list of numbers"),
    ],
)
def test_shares_no_run_could_give_are_refused_in_one_line(tmp_path, capsys, shares, said):
    spec = _write(tmp_path / "bad.jsonl", _records(spec_decode_per_position_acceptance_rates=shares))
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", spec, "--steps", "3"]
    assert main(argv + ["--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(said, err), err


def test_shares_at_another_number_of_positions_than_the_steps_are_refused(tmp_path, capsys):
    """Without the draft-token count (which says the same where every draft drafts every step) the shares alone tell."""
    spec = _write(tmp_path / "k3.jsonl", [_without(r, "spec_decode_draft_tokens") for r in _records()])
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", spec, "--steps", "4"]
    assert main(argv + ["--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "records per-position acceptance at 3 positions, but the run drafts 4 steps (--steps): the engine counts one "
        "per configured draft token, so the file is of 3 steps"
    ), err


def test_a_run_at_fewer_steps_takes_the_sum_of_the_deeper_runs_shares_not_the_chain():
    """A run at 2 steps that records no acceptance, in a sweep whose runs at 3 steps record per-position shares, takes
    1 + c_1 + c_2 of those runs (pooled), what the same drafter accepts at 2 steps; it took the chain at their alpha
    (0.765: 2.35 tokens), which assumes one rate at every position where the shares say the first is accepted more."""
    from specsim.calibration.bench_files import read_bench_file
    from specsim.calibration.runs import CalRun, SpecSetup, with_sweep_acceptance

    path = Path(f"{BENCH}/vllm-eagle3.jsonl")
    deep = [dataclasses.replace(r, per_position=tuple(SHARES)) for r in read_bench_file(path)]
    short = dataclasses.replace(deep[1], accept_length=None, per_position=None)
    runs = [CalRun(r, SpecSetup(3, sweep="s")) for r in deep] + [CalRun(short, SpecSetup(2, sweep="s"))]
    got = with_sweep_acceptance(runs)[-1].setup
    assert got.sweep_accept_length == pytest.approx(1 + SHARES[0] + SHARES[1], abs=1e-9)
    assert got.sweep_accept_basis == "per position"
    # without the shares, the chain at their rate, as before (and said so)
    bare = [CalRun(dataclasses.replace(r, per_position=None), SpecSetup(3, sweep="s")) for r in deep] + runs[-1:]
    chain = with_sweep_acceptance(bare)[-1].setup
    assert chain.sweep_accept_basis == "chain" and chain.sweep_accept_length == pytest.approx(2.351, abs=2e-3)
    # a deeper run than the shares reach takes the chain
    deeper = with_sweep_acceptance(runs[:-1] + [CalRun(short, SpecSetup(4, sweep="s"))])[-1].setup
    assert deeper.sweep_accept_basis == "chain"


def test_the_calibration_records_the_shares_and_says_how_a_run_took_them(tmp_path, capsys, monkeypatch):
    """calibrate-engine --json gives each run's shares and how a run without a record took its sweep's; the file keeps
    the pooled shares beside the alpha, and its source says whether one alpha fits their shape.  The --json and the
    text are two printings of one calibration: the second call of calibrate_engine, with the first's arguments
    (asserted), is given its result, not fitted again."""
    from specsim.calibration import engine_calibration

    made, calibrate = [], engine_calibration.calibrate_engine

    def once(*args, **kwargs):
        given = repr((args, {k: v for k, v in kwargs.items() if k != "done"}))
        if not made:
            made.append((given, calibrate(*args, **kwargs)))
        assert given == made[0][0]
        return made[0][1]

    monkeypatch.setattr(engine_calibration, "calibrate_engine", once)
    k3 = _write(tmp_path / "k3.jsonl", _records())
    k2 = _write(
        tmp_path / "k2.jsonl",
        [{k: v for k, v in r.items() if not k.startswith("spec_decode")} for r in _records()],
    )
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", k3, "--steps", "3", "--spec", k2]
    argv += ["--steps", "2", "--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10"]
    assert main(argv + ["--json", "--out", str(tmp_path / "cal.yaml")]) == 0
    got = json.loads(capsys.readouterr().out)
    spec = {(r["file"], r["steps"]): r for r in got["runs"] if r["kind"] == "spec"}
    assert [r["per_position"] for (_, steps), r in spec.items() if steps == 3] == [SHARES] * 4
    assert [r["per_position"] for (_, steps), r in spec.items() if steps == 2] == [None] * 4
    assert {r["accept_length_basis"] for (_, steps), r in spec.items() if steps == 3} == {None}
    short = [r for (_, steps), r in spec.items() if steps == 2]
    assert {r["accept_length_basis"] for r in short} == {"per position"}
    assert [r["accept_length"] for r in short] == pytest.approx([1 + SHARES[0] + SHARES[1]] * 4)
    kept = yaml.safe_load((tmp_path / "cal.yaml").read_text())["acceptance"]
    assert kept["per_position"] == [round(c, 4) for c in SHARES]
    assert "per-position acceptance 0.800, 0.600, 0.400 recorded at 3 positions (pooled over 4 runs" in kept["source"]
    assert (
        "against alpha^k 0.766, 0.586, 0.449 at the alpha 0.766 of their length: at most 0.049 apart" in kept["source"]
    )
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "2.40 pos" in out and "at fewer steps than their per-position shares cover, the sum of those shares" in out
    assert len(made) == 1


def _other(record: dict) -> dict:
    """Another run of the same lengths and load (its time to first token 1% longer): not the same run twice."""
    return {k: record[k] * 1.01 for k in ("mean_ttft_ms", "median_ttft_ms")}


def test_datasets_the_files_name_are_separate_sweeps_and_files_that_name_none_are_said(tmp_path, capsys):
    """Two datasets of alike lengths were one sweep.  Where vLLM's --metadata dataset=NAME names them, they are two, and
    the line says by what; where nothing names them, the line says they cannot be told apart.  A --label, which names
    a run's file (often per load), does not split a sweep.  (Each file's runs at 1 and 64 users, with labels c0 and c1:
    which sweep a run joins is read from its file, whatever its load; the fits take 2 s, not 6 s.)"""
    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()[::3]
    bare = [{k: v for k, v in json.loads(line).items() if not k.startswith("spec_decode")} for line in lines]
    a = _write(tmp_path / "a.jsonl", [r | {"dataset": "gsm8k", "label": f"c{i}"} for i, r in enumerate(bare)])
    b = _write(tmp_path / "b.jsonl", [r | {"dataset": "humaneval"} | _other(r) for r in bare])
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--steps", "3", "--hardware", "h100"]
    argv += ["--draft", "eagle3", "--engine", "vllm@0.10", "--spec", a, b]
    assert main(argv) == 0
    sweeps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  note: sweep ")]
    assert [s.split(":")[1] for s in sweeps] == [" sweep dataset gsm8k", " sweep dataset humaneval"], sweeps
    # the sweep's name gives the dataset: the line names it once (it had said it again at its end)
    assert sweeps[0].endswith("; the files name its dataset, which sets it apart from others of alike lengths")
    assert sweeps[0].count("gsm8k") == 1, sweeps[0]
    c = _write(tmp_path / "c.jsonl", [r | _other(r) for r in bare])
    assert main(argv[:-2] + [_write(tmp_path / "d.jsonl", bare), c]) == 0
    sweeps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  note: sweep ")]
    assert len(sweeps) == 1 and sweeps[0].endswith(
        "the files name no dataset (vLLM: --metadata dataset=NAME), so datasets of alike lengths are not "
        "told apart (--sweep-by file separates them)"
    ), sweeps


def test_sglang_and_guidellm_name_their_datasets(tmp_path):
    from specsim.calibration.bench_files import read_bench_file

    line = Path(f"{BENCH}/sglang-eagle3.jsonl").read_text().splitlines()[0]
    sg = _write(tmp_path / "sg.jsonl", [json.loads(line) | {"dataset_name": "sharegpt", "tag": "c32"}])
    assert read_bench_file(sg)[0].dataset == "dataset_name sharegpt"
    report = json.loads(Path(f"{BENCH}/guidellm-eagle3.json").read_text())
    gl = tmp_path / "gl.json"
    gl.write_text(json.dumps(report | {"args": {"data": ["prompt_tokens=1000,output_tokens=256"]}}))
    assert {r.dataset for r in read_bench_file(gl)} == {"data prompt_tokens=1000,output_tokens=256"}
    assert {r.dataset for r in read_bench_file(f"{BENCH}/guidellm-eagle3.json")} == {None}


# -- answers from a calibration file that keeps the shares ------------------------------------------------------------
KEPT = [
    round(c, 4) for c in SHARES
]  # the shares as the file keeps them (pooled over the 4 runs, rounded): 0.8001, 0.6, 0.4


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    """A calibration of examples/bench/vllm-eagle3.jsonl's runs at 3 draft steps with the shares above: its alpha
    0.7655 gives the runs' acceptance length at 3 steps (2.8001), and alpha^k misstates positions 1, 2 and 4 on."""
    folder = tmp_path_factory.mktemp("cal")
    k3 = _write(folder / "k3.jsonl", _records())
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", k3, "--steps", "3"]
    assert (
        main(
            argv
            + ["--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10", "--out", str(folder / "cal.yaml")]
        )
        == 0
    )
    kept = yaml.safe_load((folder / "cal.yaml").read_text())["acceptance"]
    assert kept["per_position"] == KEPT and kept["alpha"] == pytest.approx(0.7655) and kept["measured_steps"] == 3
    return folder / "cal.yaml"


def _answer(capsys, cal: Path, gamma: int, *flags: str) -> dict:
    assert main(["speedup", "--calibration", str(cal), "--gamma", str(gamma), "--batch", "1", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)[0]


@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_an_answer_at_gamma_up_to_the_shares_positions_is_one_plus_their_sum(calibrated, capsys, gamma):
    """At gamma <= K the same drafter on the same prompts accepts 1 + c_1 + ... + c_gamma tokens a round, exactly: the
    answer took the chain at the file's alpha (1.7655 at gamma 1, 2.3516 at 2), which holds at the runs' 3 steps alone."""
    row = _answer(capsys, calibrated, gamma)
    assert row["tokens_per_round"] == pytest.approx(1 + sum(KEPT[:gamma]), abs=1e-9)
    assert row["acceptance_rates"] | {"source": None} == {
        "alpha": None,
        "per_position": KEPT,
        "measured_steps": 3,
        "continued_rate": pytest.approx(0.4 / 0.6),
        "source": None,
    }
    assert row["acceptance"] == (
        "acceptance from cal.yaml: its runs' per-position acceptance 0.8, 0.6, 0.4; beyond position 3 (assumed): the "
        "chain continued at position 3's conditional rate 0.667"
    )
    # the file's record in full is in the JSON's source (and -v's line), its alpha said as not used
    assert row["acceptance_rates"]["source"].startswith(row["acceptance"] + "; the file's record of them (its alpha ")
    assert "(its alpha 0.7655 is not used): alpha 0.765, the per-token rate" in row["acceptance_rates"]["source"]


def test_past_the_shares_the_chain_goes_on_at_the_last_positions_conditional_rate(calibrated, capsys):
    """Gamma 5 > K = 3: c_4 = c_3 r and c_5 = c_3 r^2 with r = c_3 / c_2, said as assumed; the alpha chain gave
    1 + 0.7655 + ... + 0.7655^5 = 3.4063."""
    r = KEPT[2] / KEPT[1]
    row = _answer(capsys, calibrated, 5)
    assert row["tokens_per_round"] == pytest.approx(1 + sum(KEPT) + KEPT[2] * (r + r * r), abs=1e-9)
    assert main(["optimal-gamma", "--calibration", str(calibrated), "--batch", "1"]) == 0
    out = capsys.readouterr().out
    assert "beyond position 3 (assumed): the chain continued at position 3's conditional rate 0.667" in out
    assert "(past the 3 draft steps its acceptance was measured at: extrapolated)" in out  # its best gamma is 4 or 5


def test_an_alpha_given_beside_the_calibration_replaces_its_shares(calibrated, capsys):
    """As --alpha replaced the file's alpha before: the user's acceptance wins, said as theirs."""
    row = _answer(capsys, calibrated, 1, "--alpha", "0.7")
    assert row["tokens_per_round"] == pytest.approx(1.7) and row["acceptance"] == "alpha 0.7"


def _resealed(tmp_path: Path, cal: Path, **acceptance) -> str:
    """``cal`` with its acceptance changed and sealed again as calibrate-engine seals a file: the check of the shares
    refuses it, not the seal."""
    from specsim.calibration.file import fit_digest

    data = yaml.safe_load(cal.read_text())
    data["acceptance"] |= acceptance
    data["fit_sha256"] = fit_digest(data)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(bad)


@pytest.mark.parametrize(
    "change, said",
    [
        ({"per_position": [0.8, 0.6, 1.4]}, r"acceptance\.per_position holds 1\.4, outside \[0, 1\]"),
        ({"per_position": [0.6, 0.8, 0.4]}, r"acceptance\.per_position rises from 0\.6 at position 1 to 0\.8 at 2"),
        ({"per_position": "0.8,0.6"}, r"acceptance\.per_position must be a list of numbers"),
        ({"per_position": []}, r"acceptance\.per_position must be a list of numbers"),
        ({"per_position": [0.8, True]}, r"acceptance\.per_position must be a list of numbers"),
        (
            {"per_position": [0.8, 0.6, 0.4, 0.2]},
            r"acceptance\.per_position holds 4 positions, but measured_steps is 3",
        ),
        (
            {"alpha": None, "cumulative": [0.8, 0.6]},
            r"acceptance\.per_position goes beside one alpha \(calibrate-engine writes them so\)",
        ),
    ],
)
def test_shares_in_a_calibration_file_no_run_could_give_are_refused_in_one_line(
    calibrated, tmp_path, capsys, change, said
):
    """read_calibration took acceptance.per_position unchecked: a file sealed again after an edit answered from it."""
    bad = _resealed(tmp_path, calibrated, **change)
    assert main(["speedup", "--calibration", bad, "--gamma", "1", "--batch", "1"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(r"^specsim speedup: error: bad\.yaml: " + said, err), err


def test_the_simulator_draws_each_rounds_accepted_drafts_from_the_shares(calibrated):
    """serve-sim's requests, played with the calibration's acceptance, accept 1 + c_1 + ... + c_gamma tokens a round
    on average, and position k's share of their rounds is c_k, at gamma 2 <= K and at gamma 4 past it (c_4 = c_3 r).

    One uniform u per round accepts the drafts k with u < c_k, so a round's tokens X have P(X > k) = c_k; rounds are
    independent, so the mean over n rounds has standard error sqrt(Var X / n) (Var X from
    :func:`~specsim.speculation.acceptance.round_tokens_variance`; n about 26,000 at gamma 2, 21,000 at 4) and each
    share sqrt(c_k (1 - c_k) / n).  Tolerance 4.5 standard errors: a seed fails with probability below 7e-6 per figure
    (Gaussian tails), 6 figures a gamma.  The chain at the file's alpha is 10 standard errors off at gamma 2 (2.3516
    tokens against 2.4001) and 7 at gamma 4 (3.1435 against 3.0668)."""
    import numpy as np

    from specsim.calibration.file import read_calibration
    from specsim.serving.counters import StepCounters
    from specsim.serving.simulator import EngineLimits, StepTable, simulate
    from specsim.serving.workloads import Requests
    from specsim.speculation.acceptance import round_tokens_variance
    from specsim.speculation.deployment import Deployment

    acc = read_calibration(calibrated).acceptance
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="none")
    batch, prompt, output = 64, 100, 1000
    r = KEPT[2] / KEPT[1]
    for gamma, shares in ((2, KEPT[:2]), (4, KEPT + [KEPT[2] * r])):
        table = StepTable(dep, batch, prompt + output, gamma, acceptance=acc)
        counters = StepCounters(batch, gamma)
        requests = Requests(np.full(batch, prompt), np.full(batch, output), np.zeros(batch))
        run = simulate(requests, table, EngineLimits(batch), acc, gamma, np.random.default_rng(1), observer=counters)
        seen = counters.at([run.finish_s.max()])
        rounds = float(seen["finished_verifications"][0])
        per_position = seen["finished_accepted_per_position"][0] / rounds
        c = np.asarray(shares)
        length_se = np.sqrt(round_tokens_variance(c, gamma) / rounds)
        assert 1 + per_position.sum() == pytest.approx(1 + c.sum(), abs=4.5 * length_se), gamma
        off = np.abs(per_position - c) / np.sqrt(c * (1 - c) / rounds)  # in standard errors, position by position
        assert np.all(off <= 4.5), (gamma, off)


def test_a_tail_flat_within_rounding_is_not_continued_as_if_every_token_past_it_were_accepted():
    # Files round the shares, and the reader keeps a tail that rises within 0.005 flat (0.6, 0.603 -> 0.6, 0.6): its
    # last conditional rate is 1, and continued at that rate every drafted token past K would be accepted; at batch 1
    # the search then went to its limit, gamma 16 at 3.72x (a review, 2026-12-06).  The continued rate is bounded by
    # the measured positions' own per-token rate, c_K ** (1 / K).
    from specsim.speculation.acceptance import Acceptance
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.search import optimal_gamma

    flat = Acceptance(cumulative=(0.8, 0.6, 0.6), continued=True)
    assert flat.continued_rate == pytest.approx(0.6 ** (1 / 3)) and "per-token rate 0.843" in flat.beyond()
    falling = Acceptance(cumulative=(0.8, 0.6, 0.4), continued=True)
    assert falling.continued_rate == pytest.approx(0.4 / 0.6) and "position 3's conditional rate" in falling.beyond()
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    assert int(optimal_gamma(dep, flat, [1], 1128).gamma[0]) < 16


def test_why_speculation_is_off_does_not_call_per_position_shares_an_alpha():
    # A calibration of shares [0.8, 0.0] turned speculation off "at this alpha", though it gives no alpha (a review).
    from specsim.answers import why_off

    said = why_off([{"gamma": 0, "bound_verify": "memory"}])
    assert "at this acceptance" in said and "alpha" not in said
    said = why_off([{"gamma": 0, "bound_verify": "memory"}], {"batch": 1, "round_s": 0.01, "host_s": 0.005})
    assert "at this acceptance" in said and "alpha" not in said


def test_serve_sim_past_the_shares_says_extrapolated_as_the_answering_commands_do(calibrated, capsys):
    """At gamma 5 > K = 3 optimal-gamma's recommendation says "extrapolated"; serve-sim said only "(assumed)" in the
    acceptance line (a review).  Its policy now says it in the same words, in the text and --json, where a gamma it ran
    is past K, and not at gamma 3; serve-sweep's fixed gamma too."""
    past = " (past the 3 draft steps its acceptance was measured at: extrapolated)"
    base = ["--calibration", str(calibrated), "--concurrency", "4", "--requests", "40", "--runs", "1"]
    for gamma, said in (("5", past), ("3", "")):
        assert main(["serve-sim", *base, "--gamma", gamma]) == 0
        (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("acceptance: ")]
        assert line.endswith(f"; speculation: gamma {gamma}{said}")
        assert main(["serve-sim", *base, "--gamma", gamma, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["gamma_policy"] == f"gamma {gamma}{said}"
    assert main(["serve-sim", *base, "--json"]) == 0  # the per-batch schedule: extrapolated where a gamma it ran is > 3
    record = json.loads(capsys.readouterr().out)
    ran = [g for b, g in enumerate(record["gamma_by_batch"]) if str(b) in record["on"]["running_batch_time_share"]]
    assert max(ran) > 3 and record["gamma_policy"].endswith(past)  # its best gamma at 1-4 users is 4
    assert main(["serve-sweep", *base[:4], "--requests", "40", "--gamma", "5"]) == 0
    assert f"speculation: gamma 5{past}" in capsys.readouterr().out.splitlines()


def test_serve_sweep_past_the_shares_says_extrapolated_per_load_without_gamma(calibrated, capsys):
    """serve-sweep with no --gamma (the per-batch schedule) said only "(assumed)" in the acceptance line, keeping no
    gamma per run: each load's row now keeps the deepest gamma its runs ran (``gamma_ran``), and the policy names the
    loads past K = 3 in serve-sim's words (:func:`specsim.answers.load.past_measured`)."""
    past = " (past the 3 draft steps its acceptance was measured at: extrapolated)"
    base = ["serve-sweep", "--calibration", str(calibrated), "--concurrency", "4", "--requests", "40"]
    assert main([*base, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    (row,) = record["concurrencies"]
    assert row["gamma_ran"] > 3  # serve-sim's schedule at 4 users runs gamma 4 (the test above)
    assert record["gamma_policy"].endswith(f"; gamma {row['gamma_ran']} at 4 users{past}")
    assert main(base) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("speculation: ")]
    assert line == f"speculation: {record['gamma_policy']}"


def test_a_guidellm_07_report_names_its_data_where_that_schema_keeps_it(tmp_path):
    # Schema 2 (GuideLLM 0.7) keeps the benchmark's arguments in config.spec (BenchmarkScenario.spec, BenchmarkArgs.data:
    # a list of DataArgs objects, src/guidellm/benchmark/schemas/entrypoints.py at 0.7.3), not in args as schema 1 did:
    # a 0.7 report naming its data was said to name none.
    from specsim.calibration.bench_files import read_bench_file

    report = json.loads(Path(f"{BENCH}/guidellm-eagle3.json").read_text())
    data = [{"kind": "synthetic_text", "prompt_tokens": 1000, "output_tokens": 256}]
    gl = tmp_path / "gl.json"
    gl.write_text(json.dumps(report | {"config": {"spec": {"data": data}}}))
    assert {r.dataset for r in read_bench_file(gl)} == {"data kind=synthetic_text,prompt_tokens=1000,output_tokens=256"}


def test_a_capped_rate_and_the_conditional_rate_above_it_are_told_apart_in_print():
    # A geometric chain's shares rounded to 4 places (0.72, 0.5184, 0.3733: a vLLM page at alpha 0.72) give a
    # conditional rate 0.7201 a hair above the per-token rate 0.7200, and the line said "per-token rate 0.72 (position
    # 3's conditional rate, 0.72, is higher)".
    from specsim.speculation.acceptance import Acceptance

    said = Acceptance(cumulative=(0.72, 0.5184, 0.3733), continued=True).beyond()
    assert "per-token rate 0.72 (position 3's conditional rate, 0.7201, is higher)" in said, said
