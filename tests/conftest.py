"""Shared fixtures for the specsim test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check values, never speed: a per-example deadline fails the first example of a file run alone
# (it pays lazy imports, e.g. scipy, ~0.5 s) and any example on a loaded machine.
settings.register_profile("specsim", deadline=None)
settings.load_profile("specsim")

REPO = Path(__file__).resolve().parent.parent

# One torch (OpenMP) thread per test process, and in the processes the tests start (they inherit the environment):
# the suite runs two workers on two cores, and torch's default pool (a thread per core) in each had four threads
# spin-wait for two cores.  tests/test_harness.py alone on a loaded 2-core machine: 50.6 s of CPU with the default
# pool, 21.5 s with one thread.  The same passes run; only their timings (which no test fixes) and the thread count
# that a CPU's device name reports change.
# Set before any test imports torch (torch reads it when it starts its pool); a value already set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def repo() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def ngram_calibration(tmp_path_factory) -> Path:
    """A calibration of Qwen3-4B with n-gram drafting at 4 steps on an RTX 3090 under vLLM 0.25.0, its acceptance
    recorded (the corpus's rtx3090-qwen3-4b-ngram code sweep), written by calibrate-engine once per worker (1 to 2 s
    each time): read it; a test that changes it copies it into its own folder first."""
    from specsim.cli.main import main

    src = REPO / "examples/bench/public/rtx3090-qwen3-4b-ngram"
    cal = tmp_path_factory.mktemp("ngram") / "q4.yaml"
    argv = ["calibrate-engine", "--plain", str(src / "plain-code.jsonl"), "--spec", str(src / "ngram-k4-code.jsonl")]
    argv += ["--hardware", "rtx-3090", "--target", "qwen3-4b", "--draft", "ngram", "--steps", "4"]
    assert main(argv + ["--engine", "vllm@0.25.0", "--out", str(cal), "--json"]) == 0
    return cal


@pytest.fixture(scope="session")
def eagle3_calibration(tmp_path_factory) -> Path:
    """``cal.yaml``: the example vLLM runs (examples/bench/vllm-plain.jsonl and vllm-eagle3.jsonl, EAGLE-3 at 3 steps on an
    H100, 200 requests a run) calibrated by calibrate-engine with its default engine, once per worker (2 to 3 s each
    time; three tests made the same file): read it; a test that changes it copies it into its own folder first."""
    from specsim.cli.main import main

    bench = REPO / "examples/bench"
    cal = tmp_path_factory.mktemp("eagle3") / "cal.yaml"
    argv = ["calibrate-engine", "--plain", str(bench / "vllm-plain.jsonl"), "--spec", str(bench / "vllm-eagle3.jsonl")]
    argv += ["--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--out", str(cal)]
    assert main(argv) == 0
    return cal


def calibrated_once(patch) -> dict:
    """Sets (with ``patch``, a pytest.MonkeyPatch) the calibrate_engine that calibrate-engine calls to one that gives a
    call with the arguments of one made already (its progress callback aside) that one's result, not a fit made again:
    a text and a --json of the same flags are two printings of one calibration.  Returns the calibrations made, by
    their arguments' repr, for the test to count."""
    from specsim.calibration import engine_calibration

    made, calibrate = {}, engine_calibration.calibrate_engine

    def once(*args, **kwargs):
        given = repr((args, {k: v for k, v in kwargs.items() if k != "done"}))
        if given not in made:
            made[given] = calibrate(*args, **kwargs)
        return made[given]

    patch.setattr(engine_calibration, "calibrate_engine", once)
    return made


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The xdist groups first, each in its own order.  A group runs whole on one worker (tests/test_figures.py draws
    every figure, about 30 s with the docs' figures command; tests/test_watch_prometheus.py simulates its half hour
    and has its server scrape it, about 40 s in all; test_calibration.py, test_spec_fit.py and test_toy.py make their
    module fixtures once), and --dist loadgroup hands out work in collection order: a group collected last (test_watch_prometheus.py is) would start when the other
    worker has little left, and the suite would wait for it alone.  The same order on every worker, whatever order
    came before (pytest-randomly's included)."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
