"""``specsim replay --calibration``: the day is played at the calibration's acceptance as every answer from the file
takes it (:func:`specsim.calibration.file.read_calibration`): its per-position shares where it records them, continued
past their last position, else its one alpha; the command says which it plays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsim.cli.main import main

BENCH = Path(__file__).resolve().parent.parent / "examples" / "bench"
DRAFTS = 18285
#: The shares vLLM's bench serve records per position (as tests/test_calibration_per_position.py writes them): 0.8001,
#: 0.6000, 0.4000 at 3 draft steps, where the calibration's one alpha (0.7655) gives alpha^k = 0.77, 0.59, 0.45.
SHARES = [14629 / DRAFTS, 10971 / DRAFTS, 7314 / DRAFTS]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cal")
    lines = (BENCH / "vllm-eagle3.jsonl").read_text().splitlines()
    k3 = folder / "k3.jsonl"
    k3.write_text(
        "".join(json.dumps(json.loads(x) | {"spec_decode_per_position_acceptance_rates": SHARES}) + "\n" for x in lines)
    )
    argv = ["calibrate-engine", "--plain", str(BENCH / "vllm-plain.jsonl"), "--spec", str(k3), "--steps", "3"]
    argv += ["--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10", "--out", str(folder / "cal.yaml")]
    assert main(argv) == 0
    return folder / "cal.yaml"


def test_replay_plays_a_calibrations_per_position_shares_and_says_so(calibrated, tmp_path, capsys):
    """replay --calibration of a file with per-position shares stopped on a traceback (float(None): it took the
    acceptance's alpha, which a file's shares leave None); it now plays the shares, as the answers from the file do,
    and says so: in its first line, and in --json as acceptance and acceptance_rates (alpha null)."""
    out = tmp_path / "day.om"
    capsys.readouterr()
    argv = ["replay", "--calibration", str(calibrated), "--rates", "0:2,2m", "--out", str(out), "--json"]
    assert main(argv) == 0
    said = capsys.readouterr()
    record = json.loads(said.out)
    assert record["alpha"] is None and record["gamma"] == 3
    assert record["acceptance_rates"]["per_position"] == pytest.approx(SHARES, abs=1e-4)
    assert record["acceptance"].startswith("per-position acceptance 0.8, 0.6, 0.4")
    first = said.err.splitlines()[0]
    assert "; per-position acceptance 0.8, 0.6, 0.4" in first and "alpha 0.7" not in first
    assert "(acceptance and gamma: cal.yaml's measured acceptance, not given)" in first
    # The page's counters are of the shares: each position's accepted drafts over the drafts, within sampling error
    # (about 1,000 requests of 256 tokens: some 90,000 drafts, a standard error near 0.002; 0.02 is 10 of them).
    from specsim.engines import metric_names
    from specsim.speculation.metrics import read_capture

    names = metric_names("vllm@0.10")[0]
    _, samples, stamps = read_capture(out)
    last = [sample for sample, stamp in zip(samples, stamps) if stamp == max(stamps)]
    drafts = sum(value for name, _, value in last if name == names.drafts)
    accepted = {int(labels["position"]): v for name, labels, v in last if name == names.accepted_per_position}
    assert drafts > 0 and sorted(accepted) == [0, 1, 2]
    assert [accepted[k] / drafts for k in range(3)] == pytest.approx(SHARES, abs=0.02)


def test_replay_with_another_drafter_than_the_calibrations_plays_the_example_day_and_says_why(
    calibrated, tmp_path, capsys
):
    """replay --calibration of EAGLE-3 runs with --draft ngram played the EAGLE-3 head's measured shares as n-gram
    drafting's, where every answer from the file checks that --draft names its runs' drafter (acceptance_for) and
    takes that drafter's own otherwise.  It now plays the example day's alpha and gamma, as without a calibration, and
    says why not the file's; with the runs' own drafter named the file's shares are played as before."""
    from specsim.watch.replay import EXAMPLE_ALPHA, EXAMPLE_GAMMA

    out = tmp_path / "day.om"
    base = ["replay", "--calibration", str(calibrated), "--rates", "0:2,2m", "--out", str(out), "--json"]
    capsys.readouterr()
    assert main([*base, "--draft", "ngram"]) == 0
    said = capsys.readouterr()
    record = json.loads(said.out)
    assert record["alpha"] == EXAMPLE_ALPHA and record["gamma"] == EXAMPLE_GAMMA
    assert record["acceptance_rates"].get("per_position") is None
    first = said.err.splitlines()[0]
    assert "(alpha and gamma: the example day's (cal.yaml's acceptance is of eagle3, not --draft ngram)" in first
    assert main([*base, "--draft", "eagle3"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["alpha"] is None and record["acceptance_rates"]["per_position"] == pytest.approx(SHARES, abs=1e-4)


def test_replay_and_watch_name_the_gpus_of_a_tensor_parallel_deployment(tmp_path, capsys):
    """A 70B target at --tp 4 was said to run "on h100-sxm" in replay's first line and watch's model line, which no
    single H100 holds; every answer's header says "on h100-sxm x 4 GPUs" (one function now says it for all three)."""
    day = tmp_path / "day.om"
    pair = ["--engine", "vllm@0.24.0", "--target", "llama-3.1-70b", "--draft", "eagle3", "--tp", "4"]
    argv = ["replay", *pair, "--gamma", "3", "--rates", "0:0.5,2m", "--start", "2026-12-01T00:00:00Z"]
    assert main([*argv, "--out", str(day)]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert "(llama-3.1-70b + an EAGLE-3 head on h100-sxm x 4 GPUs; " in first
    # (its status is the verdicts that hold, 0 or 3-5: docs/watch.md; 2 would be bad input)
    assert main(["watch", "--file", str(day), *pair, "--interval", "1m"]) in (0, 3, 4, 5)
    said = [x for x in capsys.readouterr().out.splitlines() if x.startswith("the model: ")]
    assert said and said[0].startswith("the model: llama-3.1-70b + an EAGLE-3 head on h100-sxm x 4 GPUs; engine ")
    assert main(["optimal-gamma", *pair, "--batch", "1"]) == 0
    assert " on h100-sxm x 4 GPUs; context " in capsys.readouterr().out.splitlines()[0]
