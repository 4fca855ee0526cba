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


def test_the_calibration_records_the_shares_and_says_how_a_run_took_them(tmp_path, capsys):
    """calibrate-engine --json gives each run's shares and how a run without a record took its sweep's; the file keeps
    the pooled shares beside the alpha, and its source says whether one alpha fits their shape."""
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


def _other(record: dict) -> dict:
    """Another run of the same lengths and load (its time to first token 1% longer): not the same run twice."""
    return {k: record[k] * 1.01 for k in ("mean_ttft_ms", "median_ttft_ms")}


def test_datasets_the_files_name_are_separate_sweeps_and_files_that_name_none_are_said(tmp_path, capsys):
    """Two datasets of alike lengths were one sweep.  Where vLLM's --metadata dataset=NAME names them, they are two, and
    the line says by what; where nothing names them, the line says they cannot be told apart.  A --label, which names
    a run's file (often per load), does not split a sweep."""
    lines = Path(f"{BENCH}/vllm-eagle3.jsonl").read_text().splitlines()
    bare = [{k: v for k, v in json.loads(line).items() if not k.startswith("spec_decode")} for line in lines]
    a = _write(tmp_path / "a.jsonl", [r | {"dataset": "gsm8k", "label": f"c{i}"} for i, r in enumerate(bare)])
    b = _write(tmp_path / "b.jsonl", [r | {"dataset": "humaneval"} | _other(r) for r in bare])
    argv = ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--steps", "3", "--hardware", "h100"]
    argv += ["--draft", "eagle3", "--engine", "vllm@0.10", "--spec", a, b]
    assert main(argv) == 0
    sweeps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  note: sweep ")]
    assert [s.split(":")[1] for s in sweeps] == [" sweep dataset gsm8k", " sweep dataset humaneval"], sweeps
    assert sweeps[0].endswith("; dataset as the files name it: dataset gsm8k")
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
