"""specsim watch --file: a saved capture of an engine's scrapes read as Prometheus would read the same samples
(:class:`specsim.watch.sources.FileSource`), without a server; the refusals of a file it cannot watch.  The same
capture against a real Prometheus server holding it is compared in tests/test_watch_prometheus.py."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.engines import metric_names
from specsim.speculation.metrics import parse_prometheus, read_capture
from specsim.watch.sources import FileSource
from specsim.watch.windows import prometheus_windows, read_samples

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
START_S = 1_796_083_200.0  # 2026-12-01T00:00:00Z
PAGE_S = 30.0
ENGINE = "vllm@0.26.0"


@pytest.fixture(scope="module")
def day():
    """Ten minutes at 4 requests/s, alpha 0.6 then 0.5 from 300 s on (about 2,400 requests: under a second)."""
    from specsim.speculation.deployment import Deployment
    from specsim.watch.replay import simulate_day

    dep = Deployment.build(
        "h100-sxm",
        "llama-3.1-8b",
        "llama-3.2-1b",
        timing=None,
        engine=ENGINE,
        engine_overhead_ms=None,
        target_options={},
        draft_options={},
    )
    return simulate_day(dep, [(0, 4.0), (600, 0)], 0.6, 3, 1000, 256, changes=[(300.0, 0.5)], seed=7)


@pytest.fixture(scope="module")
def capture(day, tmp_path_factory):
    """The ten minutes as specsim replay --out writes them (OpenMetrics, a scrape every 30 s)."""
    from specsim.watch.replay import openmetrics

    names, release, _ = metric_names(ENGINE)
    path = tmp_path_factory.mktemp("capture") / "day.om"
    path.write_text(openmetrics(day, names, MODEL, PAGE_S, START_S, release))
    return path


def test_a_capture_keeps_every_sample_at_every_stamp_in_either_format(day, capture):
    """An OpenMetrics capture's stamps are seconds, the text format's milliseconds; every bucket of the histogram is
    kept at every stamp (prometheus_client 0.26's OpenMetrics parser drops all but the first of a histogram's series
    at each later stamp).  Before --file, parse_prometheus refused a capture: its series appear once per stamp."""
    from specsim.watch.replay import pages

    names, release, _ = metric_names(ENGINE)
    _, samples, stamps = read_capture(capture)
    scrapes = int(day.seconds / PAGE_S) + 1
    assert sorted(set(stamps)) == [START_S + k * PAGE_S for k in range(scrapes)]
    buckets = [s for s in samples if s[0] == f"{names.generation_histogram}_bucket"]
    assert len(buckets) == scrapes * len({s[1]["le"] for s in buckets}) > scrapes
    # The same scrapes as text pages one after another (an exporter's dump): the same samples at the same stamps.
    dump = capture.with_name("dump.txt")
    dump.write_text("".join(pages(day, names, MODEL, PAGE_S, start_s=START_S, release=release)))
    _, text_samples, text_stamps = read_capture(dump)
    om = {(n, tuple(sorted(l.items())), t): v for (n, l, v), t in zip(samples, stamps) if not n.endswith("_created")}
    text = {(n, tuple(sorted(l.items())), t): v for (n, l, v), t in zip(text_samples, text_stamps)}
    assert {k: v for k, v in text.items() if not k[0].endswith("_created")} == om


def test_the_file_is_read_as_promql_reads_it():
    """Prometheus 2.42's semantics on a hand-made series: the last sample at or before t within 5 minutes (a sample
    exactly 300 s old still counts, 301 s does not), avg_over_time and resets over [t - w, t] with both ends in."""
    names, _, _ = metric_names(ENGINE)
    name = names.drafts
    lines = [f"{name} {v} {int((START_S + t) * 1000)}" for t, v in ((0, 5), (60, 7), (120, 2), (600, 9))]
    path = __import__("pathlib").Path(__import__("tempfile").mkdtemp()) / "hand.txt"
    path.write_text("\n".join(lines) + "\n")
    source = FileSource(str(path), names)
    [(labels, at)] = source._at(name, START_S, START_S + 600, 60)
    got = {round(t - START_S): v for t, v in at}
    assert got == {0: 5, 60: 7, 120: 2, 180: 2, 240: 2, 300: 2, 360: 2, 420: 2, 600: 9}  # 480 and 540: 360 s old
    [(_, averaged)] = source._averaged(name, START_S, START_S + 600, 60, 60.0)
    assert {round(t - START_S): v for t, v in averaged} == {0: 5, 60: 6, 120: 4.5, 180: 2, 600: 9}
    resets = {round(t - START_S): v for t, v in source._resets(name, START_S, START_S + 600, 60, 60.0)}
    assert resets == {0: 0, 60: 0, 120: 1, 180: 0, 600: 0}


def test_file_reads_give_the_pages_counters_at_each_window_end_and_the_gauges_mean_over_it(day, capture):
    from specsim.watch.replay import pages

    names, _, _ = metric_names(ENGINE)
    window_s = 120.0
    reads = FileSource(str(capture), names).reads(START_S, START_S + day.seconds, window_s)
    texts = pages(day, names, MODEL, PAGE_S, start_s=START_S)
    page_at = {START_S + k * PAGE_S: parse_prometheus(t) for k, t in enumerate(texts)}
    assert len(reads) == day.seconds / window_s + 1
    for k, (t, samples, gauges, restarted) in enumerate(reads):
        assert not restarted
        assert read_samples(samples, names, t, MODEL).counters == read_samples(page_at[t], names, t).counters
        if k == 0:
            assert gauges is None
            continue
        running = [v for n, _, v in gauges if n == names.running]
        shown = [v for when, p in page_at.items() if t - window_s <= when <= t for n, _, v in p if n == names.running]
        assert running == [pytest.approx(np.mean(shown), rel=1e-12)] and len(shown) == window_s / PAGE_S + 1
    windows = prometheus_windows(reads, names, None)
    lengths = [w.acceptance_length for w in windows]
    assert lengths[0] > lengths[-1] + 0.1  # alpha 0.6, then 0.5 from 300 s on


def _watch(*argv):
    return main(["watch", "--engine", ENGINE, "--draft", "llama-3.2-1b", *argv])


def test_watch_file_reads_the_capture_and_says_its_defaults(capture, capsys):
    code = _watch("--file", str(capture), "--interval", "2m")
    out = capsys.readouterr().out
    assert code in (0, 3, 4, 5), out
    assert "note: --start not given: the capture's first stamp, 2026-12-01T00:00:00Z" in out
    assert "note: --end not given: the capture's last stamp, 2026-12-01T00:10:00Z" in out
    assert "(a saved capture: 21 scrapes from 2026-12-01T00:00:00Z to 2026-12-01T00:10:00Z)" in out
    assert _watch("--file", str(capture), "--interval", "2m", "--json") == code
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["window"]["end_s"] for r in rows if r["type"] == "window"] == [START_S + 120 * k for k in range(1, 6)]


def test_the_table_shows_the_two_thresholds_the_verdict_uses(capture, capsys):
    """The table showed the break-even alone, where the verdict weighs the window's interval against the acceptance
    lengths where the model's speedup is 1 less and 1 plus its error (--json's costs_below_length, pays_above_length):
    each row now shows both, under a header that names them, as --json gives them to 3 decimals."""
    assert _watch("--file", str(capture), "--interval", "2m", "--json") in (0, 3, 4, 5)
    judged = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    judged = [r["model"] for r in judged if r["type"] == "window"]
    assert all(j["costs_below"] == j["pays_above"] == "found" for j in judged)  # (every window judged)
    assert _watch("--file", str(capture), "--interval", "2m") in (0, 3, 4, 5)
    lines = capsys.readouterr().out.splitlines()
    (header,) = [x for x in lines if "window end" in x]
    assert header.endswith("break-even     verdict thresholds  verdict")
    rows = [x for x in lines if re.match(r"[0-9:]{8}  [0-9.]{5} \[", x)]  # a window's row: its end, then its length
    assert len(rows) == len(judged)
    for row, j in zip(rows, judged):
        assert f"costs<{j['costs_below_length']:.3f} pays>{j['pays_above_length']:.3f}" in row


def _bad(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "page.txt",
            'vllm:spec_decode_num_drafts_total{model_name="m"} 100\n',
            "is one page with no time stamps: one moment, and a window is what changed between two; give a capture "
            "of two or more stamped scrapes (what specsim replay --out writes), or --url for a live page",
        ),
        (
            "one.txt",
            'vllm:spec_decode_num_drafts_total{model_name="m"} 100 1796083200000\n',
            "is one page with one time stamp (2026-12-01T00:00:00Z): one moment",
        ),
        (
            "mixed.txt",
            'x_total{model_name="m"} 1 1796083200000\nx_total{model_name="m"} 2 1796083260000\ny 3\n',
            "1 of its 3 samples carry no time stamp",
        ),
        ("empty.om", "", "is empty"),
        ("bad.txt", "this is not prometheus\n", "bad.txt, line 1: not a Prometheus sample"),
        ("cut.om", "x_total 1 1796083200\nx_total 2 1796083", "does not end in a line feed"),
        (
            "twice.txt",
            'x_total{a="1"} 1 1796083200000\nx_total{a="1"} 2 1796083200000\n',
            'the series x_total{a="1"} appears twice at time stamp 1796083200.000',
        ),
        (
            "exemplar.om",
            '# TYPE x counter\nx_total 1 1796083200 # {trace_id="a"} 1\nx_total 2 1796083260\n# EOF\n',
            "line 2: an exemplar",
        ),
        (
            "nan.txt",
            'vllm:spec_decode_num_drafts_total{model_name="m"} 1 NaN\n'
            'vllm:spec_decode_num_drafts_total{model_name="m"} 2 1796083260000\n',
            "has the time stamp nan s; a stamp is Unix time in milliseconds from 1970 to the year 9999",
        ),
        (
            "decades.txt",  # read at its default span, millions of windows (it hung)
            'vllm:spec_decode_num_drafts_total{model_name="m"} 1 1000\n'
            'vllm:spec_decode_num_drafts_total{model_name="m"} 2 1796083260000\n',
            "holds 59,869,441 windows of --interval 30 s; at most 100,000",
        ),
        (
            "no-eof.om",  # OpenMetrics (stamps in seconds) whose '# EOF' was lost: read as the text format, 1970
            '# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total{model_name="m"} 1 1796083200\n'
            'vllm:spec_decode_num_drafts_total{model_name="m"} 2 1796083260\n',
            "its time stamps, read in milliseconds as the Prometheus text format's are, fall in 1970 "
            "(1970-01-21T18:54:43Z to 1970-01-21T18:54:43Z)",
        ),
        (
            "node.txt",
            "node_cpu_total 1 1796083200000\nnode_cpu_total 2 1796083260000\n",
            "holds no vllm: metrics: it is not a vllm metrics page",
        ),
        (
            "sglang.txt",
            'sglang:spec_accept_length{model_name="m"} 2 1796083200000\n'
            'sglang:spec_accept_length{model_name="m"} 2 1796083260000\n',
            "holds sglang metrics (sglang: names), not the vllm 0.26.0 metrics --engine names",
        ),
    ],
)
def test_a_file_it_cannot_watch_is_one_line_and_exit_2(tmp_path, capsys, name, text, message):
    assert _watch("--file", _bad(tmp_path, name, text), "--interval", "30s") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--url", "http://127.0.0.1:9"], "one of them, not both --url and --file"),
        (["--job", "vllm"], "--job chooses what Prometheus holds: give it with --prometheus"),
        (
            ["--start", "2026-12-02T00:00:00Z", "--end", "2026-12-02T01:00:00Z"],
            "holds no series from 2026-12-02T00:00:00Z to 2026-12-02T01:00:00Z: check --start and --end",
        ),
        (["--interval", "1h"], "--start to --end spans 600 s, less than one --interval (3600 s)"),
        (  # it said "--start to --end spans -240 s, less than one --interval", naming neither time
            ["--start", "2026-12-01T00:05:00Z", "--end", "2026-12-01T00:01:00Z"],
            "--start 2026-12-01T00:05:00Z is not before --end 2026-12-01T00:01:00Z: give a --start before --end",
        ),
        (
            ["--start", "2026-12-02T00:00:00Z"],
            "--start 2026-12-02T00:00:00Z is not before --end 2026-12-01T00:10:00Z (--end not given: the capture's last",
        ),
    ],
)
def test_flags_that_do_not_fit_a_file_are_one_line_and_exit_2(capture, capsys, argv, message):
    assert _watch("--file", str(capture), *argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_plot_of_no_judged_window_is_not_written(tmp_path, capsys):
    """A capture whose windows are all idle (two minutes before the first request) wrote a figure of empty axes, a
    model error of ±0.00% and hours either side of the window; it is not written, and the note says why."""
    from specsim.speculation.deployment import Deployment
    from specsim.watch.replay import openmetrics, simulate_day

    names, release, _ = metric_names(ENGINE)
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing=None, engine=ENGINE)
    late = simulate_day(dep, [(0, 0.0), (120, 4.0), (180, 0)], 0.6, 3, 1000, 256, seed=7)
    path = tmp_path / "idle.om"
    path.write_text(openmetrics(late, names, MODEL, PAGE_S, START_S, release))
    plot = tmp_path / "idle.png"
    assert _watch("--file", str(path), "--interval", "1m", "--end", "2026-12-01T00:02:00Z", "--plot", str(plot)) == 0
    err = capsys.readouterr().err
    assert not plot.exists() and f"--plot {plot} not written: no window was judged" in err, err


def test_a_read_whose_counters_are_past_the_look_back_gives_no_window(capture, tmp_path):
    """Counters scraped until 30 s and again from 450 s on (a gap of 7 minutes, gauges kept): at 360 s the counters'
    last sample is past Prometheus's 5-minute look-back while the gauges averaged over [240, 360] are there.  That read
    is no window's end nor start: before, the window to it said a counter 'went down between reads: the engine
    restarted' (no restart happened), and the window from it counted every request since the capture's start as its
    own (about 16 requests/s where the day runs 4)."""
    names, _, _ = metric_names(ENGINE)
    counters = tuple(names.counters())
    kept = []
    for line in capture.read_text().splitlines():
        name = line.split("{")[0].split(" ")[0]
        stamp = None if line.startswith("#") else float(line.rsplit(" ", 1)[-1])
        counter = name.startswith(counters) and not name.endswith("_created")
        if not (counter and stamp is not None and START_S + 30 < stamp < START_S + 450):
            kept.append(line)
    gap = tmp_path / "gap.om"
    gap.write_text("\n".join(kept) + "\n")
    reads = FileSource(str(gap), names).reads(START_S, START_S + 600, 120.0)
    windows = prometheus_windows(reads, names, None)
    assert [w.end_s - START_S for w in windows] == [120, 240, 360, 480, 600]
    assert [w.restarted for w in windows] == [False] * 5
    assert [w.acceptance_length is None for w in windows] == [False, True, True, True, False]
    assert [w.requests_per_s is None or w.requests_per_s < 6 for w in windows] == [True] * 5
    assert windows[2].notes[0].startswith("no samples") and windows[3].notes[0].startswith("no samples")


@pytest.mark.parametrize("start", ["0", "0s", "0h", "0m", "0.0"])
def test_a_days_rates_start_at_zero_in_any_unit(start):
    """--rates took its start as "0" or "0s" alone: "0h:1,2h:4,6h", written as the later times are, was refused with
    "a duration must be > 0 and at most 366d, got '0h'", which the start is not."""
    from specsim.cli.replay import _profile

    assert _profile(f"{start}:1,2h:4,6h") == [(0.0, 1.0), (7200.0, 4.0), (21600.0, 0.0)]


def test_a_watch_that_sets_its_drift_reference_does_not_import_scipy_stats(capture, repo):
    """The drift test's quantiles (normal, chi-square, beta) came from scipy.stats, whose import took 1.2 s of a watch's
    start: they are now scipy.special's, the same functions scipy.stats calls (the same bits).  A fresh interpreter
    watches the capture in 30 s windows (a reference of 10 set, a drop tested after it) and has not imported it."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, json, contextlib, io; from specsim.cli.main import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['watch', '--engine', {ENGINE!r}, '--draft', 'llama-3.2-1b', '--file', {str(capture)!r},"
        " '--interval', '30s', '--json'])\n"
        "rows = [json.loads(line) for line in out.getvalue().splitlines()]\n"
        "print(sum(bool(r.get('drift')) for r in rows if r['type'] == 'window'), 'scipy.stats' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(repo)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    with_drift, imported = run.stdout.split()
    assert int(with_drift) > 0 and imported == "False", run.stdout
