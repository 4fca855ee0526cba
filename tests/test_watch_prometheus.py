"""specsim watch through a real Prometheus server (Debian's prometheus package; .ci/run installs it): replay exporters
serve half an hour of a simulated engine's pages in vLLM's, SGLang's and TensorRT-LLM's formats, Prometheus scrapes them on
127.0.0.1, and ``specsim watch --prometheus`` must name the right verdicts at the right windows.  The generated alerting
rules and dashboard queries are checked with promtool.

The half hour (one-minute windows, a page every 30 s): 4 requests/s for 10 minutes (the drift test's reference of 10
windows), 18 requests/s for 8 minutes (past the break-even the vLLM and SGLang presets give at this acceptance), 4
requests/s again; at 24 minutes the acceptance drops from alpha 0.58 to 0.50 (the acceptance length from 2.11 to 1.88,
11%).  Half an hour rather than an hour of two-minute windows: the same windows and verdicts, half the requests to
simulate (the module's setup is the longest of the suite).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from specsim.cli.main import main
from specsim.engines import metric_names

pytestmark = pytest.mark.xdist_group("watch-prometheus")

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
DAY_S, WINDOW_S, PAGE_S, DROP_S = 1800.0, 60.0, 30.0, 1440.0
JOBS = {
    "vllm": "vllm@0.26.0",
    "sglang": "sglang@0.5.23",
    "trtllm": "trtllm@1.3.0rc29",
    "two": "vllm@0.26.0",
    "sglang-gauge": "sglang@0.5.5",  # its acceptance in a gauge alone (spec_accept_length), no counters
}


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = (
            f"{name} is not installed (Debian's prometheus package: apt-get install prometheus; .ci/run installs it)"
        )
        if os.environ.get("SPECSIM_REQUIRE_PROMETHEUS"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dep():
    from specsim.speculation.deployment import Deployment

    return Deployment.build(
        "h100-sxm",
        "llama-3.1-8b",
        "llama-3.2-1b",
        timing=None,
        engine="vllm@0.26.0",
        engine_overhead_ms=None,
        target_options={},
        draft_options={},
    )


#: The half hour's busiest offered rate, requests/s (ten minutes of it, from 600 s to 1,080 s).
PEAK_RATE = 18.0


@pytest.fixture(scope="module")
def day(dep):
    from specsim.watch.replay import simulate_day

    return simulate_day(
        dep, [(0, 4.0), (600, PEAK_RATE), (1080, 4.0), (DAY_S, 0)], 0.58, 3, 1000, 256, changes=[(DROP_S, 0.50)], seed=3
    )


def _serve(folder: Path, settings: dict, *flags: str):
    """(the process, its address, its log file) of a Prometheus started on ``folder`` (its prometheus.yml written from
    ``settings``, its data in ``folder``/data) at a free local port, with ``flags`` added; errors to ``folder``/log."""
    (folder / "prometheus.yml").write_text(yaml.safe_dump(settings))
    port = _port()
    log = open(folder / "log", "w")
    command = [
        _tool("prometheus"),
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        *flags,
        "--log.level=error",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log), f"http://127.0.0.1:{port}", log


@pytest.fixture(scope="module", autouse=True)
def scraping(request):
    """(Prometheus's process, its address, the half hour's start, the exporters, the deadline of the scrape), started by
    the module's first test, whichever it is, and scraping in the background while the tests that need no scraped server
    (the promtool checks and the backfilled server's, which come first in this file) run: one exporter per job, each
    serving its pages one per scrape, the half hour stamped so that it ends five minutes from now (Prometheus takes
    samples up to about 10 minutes ahead and an hour behind its newest); ``two`` serves the vLLM pages for two models.
    Prometheus starts first, with nothing to scrape, while the half hour is simulated; the scrape jobs are loaded through
    its /-/reload once the exporters serve.  The 61 scrapes of each page, 100 ms apart, took the module's setup 6 s
    more when they were waited for here.  None where Prometheus is not installed (:func:`prometheus` says so).  Stops
    the server when the module's tests are done."""
    from specsim.watch.replay import ReplayServer, pages

    if shutil.which("prometheus") is None:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="specsim-prometheus-"))
    settings = {"global": {"scrape_interval": "100ms", "scrape_timeout": "100ms"}}
    proc, address, log = _serve(folder, settings, "--web.enable-lifecycle")
    servers = {}
    try:
        day = request.getfixturevalue("day")
        start_s = float(int(time.time()) - DAY_S + 300)
        for job, engine in JOBS.items():
            names, _, _ = metric_names(engine)
            models = (MODEL, "other/model") if job == "two" else MODEL
            servers[job] = ReplayServer(pages(day, names, models, PAGE_S, start_s=start_s), path=names.path).__enter__()
        jobs = [
            {
                "job_name": job,
                "honor_timestamps": True,
                "metrics_path": s.path,
                "static_configs": [{"targets": [f"127.0.0.1:{s.server.server_address[1]}"]}],
            }
            for job, s in servers.items()
        ]
        (folder / "prometheus.yml").write_text(yaml.safe_dump(settings | {"scrape_configs": jobs}))
        deadline = time.monotonic() + 180
        _reload(address, proc, folder, deadline)
        yield proc, address, start_s, servers, folder, deadline
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        for s in servers.values():
            s.__exit__(None, None, None)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def prometheus(scraping):
    """(Prometheus's address, the half hour's start) once every page was scraped (at most 3 minutes from the start of
    :func:`scraping`).  Scraping then stops (the jobs unloaded through /-/reload, answered once applied): every exporter
    served its last page again ten times a second to the module's end, a thread of this process and a parse of
    Prometheus's each time, about 2,000 scrapes that stored nothing new (the samples carry their own times, so
    Prometheus marks none of them stale when their target goes)."""
    _tool("prometheus")
    proc, address, start_s, servers, folder, deadline = scraping
    need = len(next(iter(servers.values())).texts)
    while min(s.served for s in servers.values()) < need + 1:
        assert proc.poll() is None, (folder / "log").read_text()[-2000:]
        assert time.monotonic() < deadline, (
            f"Prometheus scraped {[s.served for s in servers.values()]} of {need} pages in 3 minutes"
        )
        time.sleep(0.05)
    settings = yaml.safe_load((folder / "prometheus.yml").read_text())
    (folder / "prometheus.yml").write_text(yaml.safe_dump({k: v for k, v in settings.items() if k != "scrape_configs"}))
    _reload(address, proc, folder, deadline)
    return address, start_s


def _reload(address: str, proc, folder: Path, deadline: float) -> None:
    """Have Prometheus read its configuration again (POST /-/reload, answered once it is applied), retrying while
    its web server is not yet up."""
    import urllib.error
    import urllib.request

    while True:
        assert proc.poll() is None, (folder / "log").read_text()[-2000:]
        try:
            with urllib.request.urlopen(urllib.request.Request(f"{address}/-/reload", method="POST"), timeout=10):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            assert time.monotonic() < deadline, f"Prometheus did not reload its configuration in 3 minutes: {err}"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def watched(prometheus):
    """``watched(job, *extra)``: :func:`_watch`'s (exit code, records) of the whole half hour, each once per module
    (the vLLM job's was judged twice, by the verdicts' test and by the drift reference's): a list of new records on
    every call."""
    url, start_s = prometheus

    @functools.cache
    def printed(job, *extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code, _ = _watch(url, start_s, job, None, *extra)
        return code, out.getvalue()

    def of(job, *extra):
        code, text = printed(job, *extra)
        return code, [json.loads(line) for line in text.splitlines()]

    return of


def _watch(url, start_s, job, capsys, *extra):
    """(exit code, records) of ``specsim watch --prometheus`` of ``job``'s half hour; the records read from ``capsys``
    (None: left on stdout, :func:`watched` reads them)."""
    code = main(
        [
            "watch",
            "--prometheus",
            url,
            "--job",
            job,
            "--engine",
            JOBS[job],
            "--draft",
            "llama-3.2-1b",
            "--start",
            f"{start_s:.0f}",
            "--end",
            f"{start_s + DAY_S:.0f}",
            "--interval",
            f"{WINDOW_S:.0f}",
            "--json",
            *extra,
        ]
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()] if capsys is not None else None
    return code, records


def _break_even_rates(dep_engine, rows, levels: tuple = (1.0,)) -> list:
    """Per level of ``levels``, per window, the request rate at which the serving model's speedup at that window's
    acceptance falls below the level (1: the break-even; inf where it stays above up to 40 requests/s): one call of the
    serving model on its own for every level (rows: the windows' alphas at gamma 3, columns: a grid of rates), not the
    watch's judge."""
    from specsim.serving.capacity import free_kv_bytes
    from specsim.serving.steady import engine_limits, steady_state

    alphas = np.array([r["model"]["alpha"] for r in rows])
    rates = np.geomspace(1.0, 40.0, 80)
    state = steady_state(
        dep_engine,
        np.r_[0.0, alphas][:, None],
        np.r_[0, np.full(alphas.size, 3)][:, None],
        rates,
        1000,
        256,
        "rate",
        engine_limits(dep_engine.engine, dep_engine.hardware)[0],  # the engine's own, as the watch takes them
        free_kv_bytes(dep_engine, 1000, 256, 8),
    )
    # A speculating engine that cannot serve the rate (saturated, the plain one not) does not pay.
    ratio = state.tpot_s[0][None, :] / state.tpot_s[1:]
    speedup = np.where(
        state.saturated[1:] & ~state.saturated[0], np.minimum(state.requests_per_s[1:] / rates, ratio), ratio
    )
    below = [speedup < level for level in levels]
    return [np.where(b.any(axis=1), rates[np.argmax(b, axis=1)], np.inf) for b in below]


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    """``rules(engine)``: the (alert rules, dashboard) files :func:`_rules` writes at gamma 3, each once per module (the
    vLLM 0.26.0 files were written twice, for promtool's check and for its rule tests)."""
    return functools.cache(functools.partial(_rules, tmp_path_factory.mktemp("rules")))


def _rules(tmp_path, engine, gamma="3"):
    path = tmp_path / f"rules-{engine.replace('@', '-')}.yml"
    dash = tmp_path / f"dash-{engine.replace('@', '-')}.json"
    assert (
        main(
            [
                "watch",
                "--engine",
                engine,
                "--target",
                "llama-3.1-8b",
                "--draft",
                "llama-3.2-1b",
                "--gamma",
                gamma,
                "--alert-rules",
                str(path),
                "--dashboard",
                str(dash),
            ]
        )
        == 0
    )
    return path, dash


@pytest.mark.parametrize("engine", ["vllm@0.26.0", "sglang@0.5.4", "sglang@0.5.23", "trtllm@1.3.0rc29"])
def test_alert_rules_and_dashboard_queries_pass_promtool(tmp_path, rules, engine):
    promtool = _tool("promtool")
    path, dash = rules(engine)
    run = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and "SUCCESS: 8 rules found" in run.stdout, run.stdout + run.stderr
    queries = [
        t["expr"].replace("$__rate_interval", "5m")
        for p in json.loads(dash.read_text())["panels"]
        for t in p["targets"]
    ]
    check = tmp_path / "dashboard-queries.yml"
    check.write_text(
        yaml.safe_dump(
            {"groups": [{"name": "q", "rules": [{"record": f"q:{k}", "expr": q} for k, q in enumerate(queries)]}]}
        )
    )
    run = subprocess.run([promtool, "check", "rules", str(check)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_engine_only_rule_fires_past_the_break_even(tmp_path, rules, dep):
    """promtool's rule tests on vLLM counters: an acceptance length of 1.95 against the acceptance the rules tabulate
    where the watch's "costs" starts (the serving model's speedup 1 less its error, as the watch judges): below it at
    16 requests/s the alert fires after its 10 minutes, above it at 4 it does not, nor at 12.5, where 1.95 is below
    the break-even (the speedup 1) but above that acceptance: a loss inside the model's error, as the watch says too
    close to call."""
    from specsim.serving.steady import EngineLimits
    from specsim.watch.judge import Judge
    from specsim.watch.publish import break_even_tables

    promtool = _tool("promtool")
    path, _ = rules("vllm@0.26.0")
    import dataclasses

    from specsim.engines import get_engine

    judge = Judge(dataclasses.replace(dep, engine=get_engine("vllm@0.26.0").for_source(dep.source)), EngineLimits())
    tables = break_even_tables(judge, 3, 1000, 256, 60.0)  # one judgement: both thresholds
    table = tables["costs_below"]

    def at(rate):
        return [v for r, v, _ in table if r <= rate][-1]

    assert at(4.0) < 1.95 < at(16.0)
    assert at(12.5) < 1.95 < [v for r, v, _ in tables["break_even"] if r <= 12.5][-1]

    def series(requests_per_min):
        m = 'model_name="m",engine="0"'
        return [
            {"series": f"vllm:spec_decode_num_drafts_total{{{m}}}", "values": "0+1000x40"},
            {"series": f"vllm:spec_decode_num_accepted_tokens_total{{{m}}}", "values": "0+950x40"},
            {
                "series": f'vllm:request_success_total{{{m},finished_reason="length"}}',
                "values": f"0+{requests_per_min}x40",
            },
            {"series": f"vllm:num_requests_running{{{m}}}", "values": "20x40"},
        ]

    rule = next(
        r
        for g in yaml.safe_load(path.read_text())["groups"]
        for r in g["rules"]
        if r.get("alert") == "SpeculationCostsMoreThanItSavesEngineOnly"
    )
    annotations = {k: v.replace("{{ $labels.model_name }}", "m") for k, v in rule["annotations"].items()}
    tests = {
        "rule_files": [str(path)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series(960),
                "alert_rule_test": [
                    {
                        "eval_time": "25m",
                        "alertname": "SpeculationCostsMoreThanItSavesEngineOnly",
                        "exp_alerts": [
                            {"exp_labels": {"severity": "warning", "model_name": "m"}, "exp_annotations": annotations}
                        ],
                    }
                ],
            },
            *(
                {
                    "interval": "1m",
                    "input_series": series(per_min),
                    "alert_rule_test": [
                        {"eval_time": "25m", "alertname": "SpeculationCostsMoreThanItSavesEngineOnly", "exp_alerts": []}
                    ],
                }
                for per_min in (240, 750)
            ),
        ],
    }
    spec = tmp_path / "rules-test.yml"
    spec.write_text(yaml.safe_dump(tests))
    run = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


#: Engines whose half hour a backfilled server and a file hold: counters, counters per position beside an info
#: gauge of the draft length (TensorRT-LLM), counters of verification calls (SGLang 0.5.13 on).
BACKFILLED = ("vllm@0.26.0", "sglang@0.5.23", "trtllm@1.3.0rc29")


@pytest.fixture(scope="module")
def backfilled(day):
    """(Prometheus's address, the half hour's start, {engine: its OpenMetrics file}): the half hour of each engine in
    :data:`BACKFILLED` written as ``specsim replay --out`` writes it, backfilled with ``promtool tsdb
    create-blocks-from openmetrics`` into one data folder (the docs' replayed day), served by a Prometheus that scrapes
    nothing.  Stamped from three hours ago, on a whole minute."""
    from specsim.watch.replay import openmetrics

    promtool = _tool("promtool")
    folder = Path(tempfile.mkdtemp(prefix="specsim-backfill-"))
    start_s = float((int(time.time()) - 3 * 3600) // 60 * 60)
    files = {}
    for engine in BACKFILLED:
        names, release, _ = metric_names(engine)
        files[engine] = folder / f"{engine.replace('@', '-')}.om"
        files[engine].write_text(openmetrics(day, names, MODEL, PAGE_S, start_s, release))
        run = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(files[engine]), str(folder / "data")],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    proc, address, log = _serve(folder, {"global": {"scrape_interval": "15s"}})
    try:
        deadline = time.monotonic() + 120
        import urllib.request

        while True:  # /-/ready answers 200 once the blocks are loaded
            assert proc.poll() is None, (folder / "log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(f"{address}/-/ready", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Prometheus was not ready in 2 minutes"
            time.sleep(0.2)
        yield address, start_s, files
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _comparable(samples) -> list:
    return sorted((name, tuple(sorted(labels.items())), value) for name, labels, value in samples or [])


@pytest.mark.parametrize("engine", BACKFILLED)
def test_a_capture_read_from_its_file_is_what_prometheus_holding_it_answers(backfilled, engine):
    """specsim watch --file reads a capture as PrometheusSource reads the server it was backfilled into: at each
    window's end the same counters, the same gauges averaged over the window and the same restarts, at windows whose
    edges fall on the scrapes (both ends of a gauge's window in, Prometheus 2.42) and between them."""
    from specsim.watch.sources import FileSource, PrometheusSource

    url, start_s, files = backfilled
    names, _, _ = metric_names(engine)
    for first, window in ((start_s, WINDOW_S), (start_s + 7.5, 45.0)):
        served = PrometheusSource(url, names).reads(first, start_s + DAY_S, window)
        read = FileSource(str(files[engine]), names).reads(first, start_s + DAY_S, window)
        assert [(t, restarted) for t, *_, restarted in read] == [(t, restarted) for t, *_, restarted in served]
        for (t, samples, gauges, _), (_, want, want_gauges, _) in zip(read, served):
            for got, expected in ((samples, want), (gauges, want_gauges)):
                assert [k[:2] for k in _comparable(got)] == [k[:2] for k in _comparable(expected)], t
                values = [k[2] for k in _comparable(got)]
                assert values == pytest.approx([k[2] for k in _comparable(expected)], rel=1e-12, abs=1e-12), t


def test_watch_file_gives_the_windows_and_verdicts_watch_prometheus_gives(backfilled, capsys):
    url, start_s, files = backfilled
    span = ["--start", f"{start_s:.0f}", "--end", f"{start_s + DAY_S:.0f}", "--interval", f"{WINDOW_S:.0f}", "--json"]
    argv = ["watch", "--engine", "vllm@0.26.0", "--draft", "llama-3.2-1b"]
    outputs = []
    for where in (["--prometheus", url], ["--file", str(files["vllm@0.26.0"])]):
        code = main(argv + where + span)
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        outputs.append((code, [r for r in records if r["type"] != "header"]))
    (code, served), (file_code, read) = outputs
    assert file_code == code and sum(r["type"] == "window" for r in read) == DAY_S / WINDOW_S
    # Every window, verdict and the summary; numbers to the last bits a mean's order of additions moves (Prometheus's
    # avg_over_time adds with Kahan's compensation, numpy pairwise).
    assert _numbers_apart(read, served) == []
    assert {v["kind"] for r in read if r["type"] == "window" for v in r["started"]} >= {"costs", "dropped"}


def _numbers_apart(a, b, where="") -> list:
    """Where two JSON records differ, numbers within 1e-9 of each other taken as the same."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} and {sorted(b)}"]
        return [d for k in a for d in _numbers_apart(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} and {len(b)} items"]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in _numbers_apart(x, y, f"{where}[{k}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if a == pytest.approx(b, rel=1e-9, abs=1e-12) else [f"{where}: {a!r} and {b!r}"]
    return [] if a == b else [f"{where}: {a!r} and {b!r}"]


@pytest.mark.parametrize("job", ["vllm", "sglang", "trtllm"])
def test_the_verdicts_come_at_the_right_windows(watched, dep, job):
    import dataclasses

    from specsim.engines import get_engine

    code, records = watched(job)
    rows = [r for r in records if r["type"] == "window"]
    assert len(rows) == DAY_S / WINDOW_S
    judged = [r for r in rows if r["model"] is not None]
    assert len(judged) >= len(rows) - 1  # every window counted (one may straddle a page Prometheus missed)
    # The histogram of generated tokens, each bucket a series Prometheus holds, where the engine exports it: requests
    # of 256 tokens each count about as many effective requests as finished (the estimate spreads them over a bucket).
    finished = np.array([r["window"]["requests_per_s"] * WINDOW_S for r in judged])
    effective = [r["window"]["effective_requests"] for r in judged]
    if job == "trtllm":
        assert effective == [None] * len(judged)
    else:
        assert np.all((0.9 * finished <= np.array(effective)) & (np.array(effective) <= finished * (1 + 1e-9)))
    # The drop: flagged only after it, in the window it starts in or within the windows the test stated.
    dropped = [(r["index"], v) for r in rows for v in r["started"] if v["kind"] == "dropped"]
    first = int(DROP_S / WINDOW_S)
    assert dropped and all(index >= first for index, _ in dropped)
    stated = next(r["drift"]["windows_to_flag"] for r in rows if r["drift"])
    index, verdict = dropped[0]
    assert verdict["since"] == first and index - first + 1 <= stated
    assert (
        0.86
        <= float(verdict["text"].split(" to ")[1].split()[0]) / float(verdict["text"].split("from ")[1].split()[0])
        <= 0.92
    )
    # "Costs more than it saves" where the rate at which the model's own speedup falls below 1 less its error (the
    # corpus's, as every answer's: uncalibrated) is well below the window's rate, never where it is well above (15%
    # either way: a window's rate and lengths are its own, the threshold's are the half hour's).
    from specsim.answers.verdict import model_error

    engine = dataclasses.replace(dep, engine=get_engine(JOBS[job]).for_source(dep.source))
    limit, break_even = _break_even_rates(engine, judged, (1.0 - model_error(engine).share, 1.0))
    rate = np.array([r["window"]["requests_per_s"] for r in judged])
    verdicts = np.array([r["model"]["verdict"] for r in judged])
    assert np.all(verdicts[rate > 1.15 * limit] == "costs"), (verdicts, rate / limit)
    assert not np.any(verdicts[rate < limit / 1.15] == "costs")
    if job == "trtllm":  # its preset has no host time per round: speculation pays through the half hour's peak
        assert np.isinf(limit[rate > 10]).all() or (limit[rate > 10] > PEAK_RATE).all()
    else:
        # the peak is past the break-even, and costs more in most of its windows (SGLang's preset falls below 1 less
        # the error at 17.3 requests/s, below the 18 of the peak by less than 15%: the rows above test none of it)
        past = rate > 1.15 * break_even
        assert past.sum() >= 6 and (verdicts[past] == "costs").sum() >= 6, verdicts[past]
    # A schedule in the engine's own format, and the exit status of what holds at the end.
    schedules = [v["detail"] for r in rows for v in r["started"] if v["kind"] == "schedule"]
    assert schedules
    config = "\n".join(line for line in schedules[0].splitlines() if not line.startswith("#"))
    if job == "vllm":
        assert json.loads(config)["num_speculative_tokens"] in (1, 2)
    elif job == "sglang":
        assert (
            config.startswith("python -m sglang.launch_server --model-path " + MODEL)
            and "--speculative-num-steps" in config
        )
    else:
        assert yaml.safe_load(config)["speculative_config"]["max_draft_len"] in (1, 2)
    summary = records[-1]
    holding = set(rows[-1]["holding"])
    assert summary["exit_code"] == code == min([{"costs": 3, "dropped": 4, "schedule": 5}[k] for k in holding] or [0])
    assert "dropped" in holding


def test_an_engine_that_says_its_acceptance_in_a_gauge_alone_is_watched_through_prometheus(prometheus, capsys):
    """SGLang before 0.5.13 exports its acceptance as a gauge only: a watch through Prometheus found no model in it
    (the models were read from the counters alone) and refused every such engine; each window now reads it."""
    url, start_s = prometheus
    code, records = _watch(url, start_s, "sglang-gauge", capsys, "--gamma", "3")
    rows = [r for r in records if r["type"] == "window"]
    assert code != 2 and len(rows) == DAY_S / WINDOW_S, records[-1]
    lengths = [r["window"]["acceptance_length"] for r in rows[1:]]
    assert sum(a is not None for a in lengths) >= len(lengths) - 1 and all(1 < a < 4 for a in lengths if a), lengths


def test_once_reads_as_many_windows_after_the_reference_as_in_it(prometheus, capsys):
    """--once from cron with no --start: the span was the reference and the last window alone, so a drop that began a
    window earlier sat in the reference, inflated its overdispersion and was missed (a replayed day, vLLM 0.24.0, 10-
    minute windows, an 11% drop two windows before --end: no 'dropped'; one or three windows before: flagged).  It now
    holds as many windows after the reference as in it, each tested against the windows before it."""
    url, start_s = prometheus
    argv = ["watch", "--prometheus", url, "--job", "vllm", "--engine", JOBS["vllm"], "--draft", "llama-3.2-1b"]
    end = f"{start_s + DAY_S:.0f}"
    code = main(argv + ["--end", end, "--interval", f"{WINDOW_S:.0f}", "--once", "--json", "--reference", "5"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rows = [r for r in records if r["type"] == "window"]
    assert code != 2 and len(rows) == 2 * 5, len(rows)


def test_a_span_or_selection_with_no_series_says_so_not_that_it_is_another_page(prometheus, capsys):
    url, start_s = prometheus
    argv = ["watch", "--prometheus", url, "--engine", JOBS["vllm"], "--draft", "llama-3.2-1b", "--interval", "60"]
    for extra in (
        ["--job", "nosuch"],
        ["--job", "vllm", "--start", f"{start_s - 7200:.0f}", "--end", f"{start_s - 3600:.0f}"],
    ):
        assert main(argv + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "holds no series from" in err[0] and "check --start and --end" in err[0], err
        assert "not a vllm metrics page" not in err[0]


def test_a_watch_that_ends_before_its_drift_reference_says_no_drop_could_be_tested(prometheus, watched, capsys):
    url, start_s = prometheus
    argv = ["watch", "--prometheus", url, "--job", "vllm", "--engine", JOBS["vllm"], "--draft", "llama-3.2-1b"]
    span = ["--start", f"{start_s:.0f}", "--end", f"{start_s + 6 * WINDOW_S:.0f}", "--interval", f"{WINDOW_S:.0f}"]
    main(argv + span + ["--json"])
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["drift"].startswith("no reference set: ") and "of the 10 it needs" in summary["drift"], summary
    code, records = watched("vllm")  # the whole half hour: the reference set, nothing to say
    assert "drift" not in records[-1]


def test_a_selector_with_several_models_needs_model(prometheus, capsys):
    url, start_s = prometheus
    assert (
        main(
            [
                "watch",
                "--prometheus",
                url,
                "--job",
                "two",
                "--engine",
                "vllm@0.26.0",
                "--draft",
                "llama-3.2-1b",
                "--start",
                f"{start_s:.0f}",
                "--end",
                f"{start_s + 600:.0f}",
                "--interval",
                "120",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "holds the metrics of several models (meta-llama/Llama-3.1-8B-Instruct, other/model): choose one with --model"
        in err
    )
    assert len(err.strip().splitlines()) == 1
    code, records = _watch(url, start_s, "two", capsys, "--model", "other/model", "--target", "llama-3.1-8b")
    assert records[0]["model"] == "other/model" and code in (3, 4, 5)


def test_another_engine_behind_the_selector_is_refused(prometheus, capsys):
    url, start_s = prometheus
    assert (
        main(
            [
                "watch",
                "--prometheus",
                url,
                "--job",
                "sglang",
                "--engine",
                "vllm@0.26.0",
                "--draft",
                "llama-3.2-1b",
                "--start",
                f"{start_s:.0f}",
                "--end",
                f"{start_s + 600:.0f}",
                "--interval",
                "120",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "holds sglang metrics (sglang: names), not the vllm 0.26.0 metrics --engine names" in err
