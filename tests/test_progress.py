"""Progress on stderr for the commands that run over a few seconds (issue 37): a tqdm bar where stderr is a terminal,
nothing where it is not or the output is JSON, and the same output on stdout either way."""

from __future__ import annotations

import io
import re
import sys

import pytest

from specsim.cli.main import main

BENCH = "examples/bench"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(monkeypatch, argv: list[str], terminal: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), (_Terminal() if terminal else io.StringIO())
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv, desc",
    [
        (
            # the vLLM samples: the fewest runs whose fits still count past one
            ["calibrate-engine", "--plain", f"{BENCH}/vllm-plain.jsonl", "--spec", f"{BENCH}/vllm-eagle3.jsonl"]
            + ["--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10"],
            "calibrate-engine fits",
        ),
        (["serve-sim", "--rate", "2", "--requests", "60", "--runs", "3", "--jobs", "1"], "serve-sim runs"),
        (["serve-sweep", "--rates", "1,2,4", "--requests", "40"], "serve-sweep rates"),
    ],
)
def test_a_long_command_shows_progress_on_a_terminal_only(monkeypatch, argv, desc):
    code, out, err = _run(monkeypatch, argv, terminal=True)
    assert code == 0 and desc in err
    # tqdm's "desc:  67%|...| 2/3 [" with a total, "desc: 14fit [" without one
    counts = [int(n) for n in re.findall(re.escape(desc) + r":\s+(?:\d+%\|[^|]*\|\s*)?(\d+)", err)]
    assert counts and counts[-1] >= 2, err[-500:]  # the bar moved past its first unit
    if argv[0] == "calibrate-engine":  # seconds a run; the cases below are report.progress_bar's, checked on serve-sim
        return
    code, plain_out, plain_err = _run(monkeypatch, argv, terminal=False)
    assert code == 0 and desc not in plain_err and plain_out == out
    if argv[0] == "serve-sim":  # --json quiets every bar alike (report.progress_bar); one command's check suffices
        code, _, json_err = _run(monkeypatch, argv + ["--json"], terminal=True)
        assert code == 0 and desc not in json_err


def test_figures_counts_the_figures_it_draws(monkeypatch, tmp_path):
    argv = ["figures", "--only", "roofline,speedup-vs-gamma", "--out", str(tmp_path / "a")]
    code, out, err = _run(monkeypatch, argv, terminal=True)
    assert code == 0 and re.search(r"figures:\s+100%\|[^|]*\|\s*2/2", err), err[-300:]
    code, _, plain_err = _run(monkeypatch, argv[:-1] + [str(tmp_path / "b")], terminal=False)
    assert code == 0 and "figures:" not in plain_err
