"""Issue 13: the request-level serving simulation against the per-batch model, queueing identities and its inputs."""

from __future__ import annotations

import functools
import json
import re

import numpy as np
import pandas as pd
import pytest

from specsim.cli.main import main
from specsim.core.workloads import get_workload
from specsim.serving.capacity import capacity
from specsim.serving.simulator import EngineLimits, StepTable, serve_compare, serve_sweep, simulate
from specsim.serving.workloads import Requests, read_trace
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import expected_tokens

DEP = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")


@pytest.fixture(scope="module")
def table():
    return StepTable(DEP, 64, 4096, 4)


def test_low_rate_tpot_is_the_batch_1_model(table):
    # 40 requests of 1,000 tokens, 100 s apart (each lasts ~7 s): every one decodes alone.
    n, out, prompt = 40, 1000, 100
    req = Requests(np.full(n, prompt), np.full(n, out), np.arange(n) * 100.0)
    plain = simulate(req, table, EngineLimits(64), 0.8, 0, np.random.default_rng(1))
    mid = prompt + 1 + (out - 1) / 2
    model = float(table.round_s(1, np.array([mid]), 0)[0])
    assert plain.tpot_s.mean() == pytest.approx(model, rel=0.002)  # t_T is linear in L: the mean context gives the mean
    # Decoding alone, but for each prompt's own iteration (the busy time's other part, at batch 0).
    busy = plain.finish_s - plain.arrival_s
    decoding = (plain.finish_s - plain.first_token_s).sum() / busy.sum()
    assert plain.mean_batch == pytest.approx(decoding, rel=1e-9) and decoding < 1.0
    # With gamma 3 each round emits E(0.8, 3) = 2.952 tokens on average.  Per request, ~338 rounds give a
    # relative standard error of about 1.2 / (2.95 * sqrt(338)) = 2.2%; over 40 requests 0.35%.  The last round's
    # surplus tokens are discarded (+0.5 round, 0.15%).  Tolerance 2%: more than 5 standard errors.
    spec = simulate(req, table, EngineLimits(64), 0.8, 3, np.random.default_rng(2))
    per_round = float(table.round_s(1, np.array([mid]), 3)[0])
    assert spec.tpot_s.mean() == pytest.approx(per_round / float(expected_tokens(0.8, 3)), rel=0.02)


def test_fixed_concurrency_without_prefill_is_the_batch_b_model(table):
    # A closed loop of 16 users with prefill costing nothing: the engine always runs 16 sequences.
    n, out, prompt = 400, 500, 300
    req = Requests(np.full(n, prompt), np.full(n, out), None)
    limits = EngineLimits(64, include_prefill=False)
    result = simulate(req, table, limits, 0.8, 0, np.random.default_rng(3), concurrency=16)
    assert result.mean_batch == pytest.approx(16, abs=0.1)
    mid = prompt + 1 + (out - 1) / 2
    model = float(table.round_s(16, np.array([mid]), 0)[0])
    assert np.median(result.tpot_s) == pytest.approx(model, rel=0.01)


@pytest.mark.parametrize("rate", [2.0, 12.0, 40.0])
def test_littles_law_holds_on_the_simulated_queue(rate):
    req = Requests.poisson(rate, 600, get_workload("chat"), np.random.default_rng(5))
    plain, spec, _ = serve_compare(DEP, req, 0.8, limits=EngineLimits(64))
    for r in (plain, spec):
        s = r.summary()
        assert s["mean_in_system"] == pytest.approx(s["requests_per_s"] * r.e2e_s.mean(), rel=1e-9)


def test_results_are_reproducible_from_the_seed_and_differ_across_seeds():
    req = Requests.poisson(8.0, 300, get_workload("chat"), np.random.default_rng(7))
    a = serve_compare(DEP, req, 0.8, seed=11)[1]
    b = serve_compare(DEP, req, 0.8, seed=11)[1]
    c = serve_compare(DEP, req, 0.8, seed=12)[1]
    assert np.array_equal(a.finish_s, b.finish_s) and np.array_equal(a.first_token_s, b.first_token_s)
    assert not np.array_equal(a.finish_s, c.finish_s)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_replayed_trace_gives_exactly_the_same_run(tmp_path, suffix):
    req = Requests.poisson(6.0, 200, get_workload("chat"), np.random.default_rng(9))
    path = tmp_path / f"trace{suffix}"
    if suffix == ".csv":
        rows = "".join(
            f"{a!r},{p},{o}\n" for a, p, o in zip(req.arrival_s.tolist(), req.prompt.tolist(), req.output.tolist())
        )
        path.write_text("arrival_s,prompt_tokens,output_tokens\n" + rows)
    else:
        path.write_text(
            "".join(
                json.dumps({"arrival_s": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                for a, p, o in zip(req.arrival_s.tolist(), req.prompt.tolist(), req.output.tolist())
            )
        )
    replay = read_trace(path)
    assert np.array_equal(replay.arrival_s, req.arrival_s) and np.array_equal(replay.output, req.output)
    direct, replayed = serve_compare(DEP, req, 0.8, seed=3), serve_compare(DEP, replay, 0.8, seed=3)
    for x, y in zip(direct[:2], replayed[:2]):
        assert np.array_equal(x.finish_s, y.finish_s) and np.array_equal(x.first_token_s, y.first_token_s)


def test_a_trace_csv_is_read_as_csv_quotes_and_all(tmp_path):
    """A spreadsheet's or pandas' export (``to_csv(quoting=csv.QUOTE_ALL)``) quotes every cell: the same trace."""
    plain, quoted = tmp_path / "plain.csv", tmp_path / "quoted.csv"
    plain.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,50\n0.5,200,60\n")
    quoted.write_text('"arrival_s","prompt_tokens","output_tokens"\r\n"0","100","50"\r\n"0.5","200","60"\r\n')
    a, b = read_trace(plain), read_trace(quoted)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt, b.prompt)
    assert np.array_equal(a.output, b.output)


def test_a_trace_csv_error_names_the_files_own_line(tmp_path):
    """Blank lines are skipped, not renumbered: the line named is the one an editor shows."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n\n0,100,50\n\n0.5,ten,60\n")
    with pytest.raises(ValueError, match=r"^trace t.csv, line 5: prompt_tokens must be a number, got 'ten'$"):
        read_trace(path)


def test_a_request_that_can_never_fit_is_reported_not_dropped(table):
    req = Requests(np.array([100, 5000, 100]), np.array([50, 50, 50]), np.array([0.0, 0.1, 0.2]))
    per_token = DEP.target.kv_bytes_per_token
    result = simulate(
        req,
        table,
        EngineLimits(64, kv_capacity_bytes=1000 * per_token),
        0.8,
        0,
        reserve_bytes=(req.prompt + req.output) * per_token,
    )
    assert result.rejected.tolist() == [False, True, False] and result.summary()["never_fit"] == 1
    assert result.summary()["served"] == 2 and "never served" in result.notes[0]


def test_speculation_helps_at_low_load_and_the_gap_closes_under_load():
    chat = get_workload("chat")
    low = serve_compare(DEP, Requests.poisson(1.0, 300, chat, np.random.default_rng(1)), 0.8)
    high = serve_compare(DEP, Requests.poisson(40.0, 300, chat, np.random.default_rng(1)), 0.8)
    gain = lambda r: r[0].summary()["tpot_s"]["p50"] / r[1].summary()["tpot_s"]["p50"]  # noqa: E731
    assert gain(low) > 1.5 and gain(high) < gain(low)


def test_cli_prints_both_columns_with_percentiles(capsys, tmp_path):
    out_csv = tmp_path / "requests.csv"
    code = main(
        [
            "serve-sim",
            "--rate",
            "4",
            "--workload",
            "chat",
            "--alpha",
            "0.8",
            "--requests",
            "200",
            "--csv",
            str(out_csv),
            "--slo-ttft-ms",
            "500",
            "--slo-tpot-ms",
            "20",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "speculation off" in out and "speculation on" in out
    # The KV capacity says whose share of memory it is (vLLM's default here, its start-up taken out), as capacity does.
    assert (
        "(16-token blocks taken as tokens arrive, the request admitted last preempted and recomputed where they run "
        "out; memory: vLLM 0.34's extensible KV cache"
    ) in out
    for row in ("TTFT p50 / p90 / p99", "TPOT p50 / p90 / p99", "end-to-end p50 / p90 / p99", "goodput"):
        assert row in out
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("speculation,request,arrival_s") and len(lines) == 1 + 2 * 200
    # A closed loop's run starts with every user's request at once: its TTFT holds that burst, and the text says so.
    assert main(["serve-sim", "--concurrency", "8", "--requests", "40", "--runs", "1"]) == 0
    assert "the 8 users send their first requests at once" in capsys.readouterr().out
    code = main(["serve-sim", "--concurrency", "8", "--requests", "100", "--json"])
    data = json.loads(capsys.readouterr().out)
    # Ten runs by default (seeds 0-9): counts are totals over them, the batch is a mean.
    assert code == 0 and data["off"]["runs"] == 10 and data["seeds"] == list(range(10))
    assert data["off"]["served"] == 1000 and data["on"]["mean_running_batch"] <= 8.0 + 1e-9


def test_sweep_finds_where_speculation_stops_helping(capsys, tmp_path):
    plot = tmp_path / "sweep.png"
    code = main(
        [
            "serve-sweep",
            "--rates",
            "1,64",
            "--requests",
            "300",
            "--slo-ttft-ms",
            "1000",
            "--slo-tpot-ms",
            "40",
            "--plot",
            str(plot),
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and plot.stat().st_size > 10_000
    low, high = data["rates"]
    assert low["on_tpot_p50_s"] < low["off_tpot_p50_s"]
    assert data["findings"]["max_rate_meeting_slo_on"] == 1.0


def test_the_sweep_figure_names_the_engine(monkeypatch, tmp_path):
    # serve-sweep --engine sglang@0.5.20 --plot titled its figure "llama-3.1-8b + eagle3 head (llama-3.1-8b) on h100-sxm,
    # reasoning workload, alpha ...": nothing in it said whose engine's rounds its TPOTs are.
    import specsim.figures.plots

    titles = []
    monkeypatch.setattr(specsim.figures.plots, "save_serve_sweep", lambda frame, path, **kw: titles.append(kw["title"]))
    argv = ["serve-sweep", "--engine", "sglang@0.5.20", "--draft", "eagle3", "--rates", "1", "--requests", "20"]
    assert main([*argv, "--plot", str(tmp_path / "sweep.png")]) == 0
    assert "on h100-sxm, sglang 0.5.20 (preset sglang@latest), chat workload" in titles[0], titles


@pytest.mark.parametrize(
    "target, draft, length",
    [
        ("gemma-3-27b", "gemma-3-270m", 24_000),
        ("gpt-oss-20b", "eagle3", 60_000),
        ("llama-3.1-8b", "llama-3.2-1b", 24_000),
    ],
)
def test_serving_admits_exactly_the_batch_specsim_capacity_reports(target, draft, length):
    # Issue 17: capacity capped window layers at their window and serve-sim did not, so for Gemma 3 (5 of 6 layers
    # local, window 1,024) and gpt-oss (half the layers, window 128) serve-sim admitted fewer requests than
    # `specsim capacity` said fit.  With one KV function both agree exactly: a closed loop of more users than fit,
    # every request the same length, runs at the capacity model's largest batch.
    # An engine that reserves each request's whole length when it admits it (engine none; TensorRT-LLM's default):
    # capacity's batch at that length is what it holds.  vLLM, which takes blocks as tokens arrive, holds more
    # (tests/test_kv_blocks.py).
    dep = Deployment.build("h200", target, draft, timing="roofline", engine="none")
    limits = EngineLimits(4096, include_prefill=False)  # prompts cost no time: every admitted request decodes at once
    # At the limits the engine runs with (vLLM's start-up profiles its sampler at max_num_seqs rows).
    cap = capacity(dep, length, max_batched_tokens=limits.max_batched_tokens, max_num_seqs=limits.max_num_seqs)
    users = cap.max_batch_without_draft + 5
    req = Requests(np.full(2 * users, length - 100), np.full(2 * users, 100), None)
    plain, spec, _ = serve_compare(dep, req, 0.8, gamma=1, concurrency=users, limits=limits)
    assert plain.summary()["max_running_batch"] == cap.max_batch_without_draft
    assert spec.summary()["max_running_batch"] == cap.max_batch_with_draft
    # The old reservation, full attention on every layer, admits fewer for the window models only.
    full = int(cap.free_bytes_without_draft // (dep.target.kv_bytes_per_token * length))
    assert (full < cap.max_batch_without_draft) == (dep.target.n_sliding_layers > 0)


def test_a_run_with_nothing_to_average_says_so_instead_of_nan(tmp_path, capsys):
    import json

    from specsim.cli.main import main

    trace = tmp_path / "one-token.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,1\n1,100,1\n")
    assert main(["serve-sim", "--trace", str(trace), "--alpha", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)  # valid JSON: no NaN
    assert out["off"]["tpot_s"] == {"p50": None, "p90": None, "p99": None, "mean": None}
    assert (
        out["off"]["ttft_s"]["p50"] > 0 and out["off"]["served"] == 2 and out["off"]["runs"] == 1
    )  # a trace is replayed once
    assert main(["serve-sim", "--trace", str(trace), "--alpha", "0.8"]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text and "no TPOT to compare: no served request produced a second token" in text


def _summary(p50, p99, served=100, batch=(1, 4)):
    return {
        "speculation": "off",
        "requests": 100,
        "served": served,
        "never_fit": 0,
        "tpot_s": {"p50": p50, "p90": p50, "p99": p99, "mean": p50},
        "output_tokens_per_s": None if p50 is None else 10.0 * p50,
        "max_running_batch": batch[1],
        "running_batch_time_share": {batch[0]: 0.5, batch[1]: 0.5},
    }


def test_summarize_runs_is_the_mean_with_a_student_t_interval_over_runs():
    from scipy import stats

    from specsim.serving.simulator import summarize_runs

    p50 = [1.0, 2.0, 4.0, 3.0]
    out = summarize_runs([_summary(v, 2 * v, served=90 + i, batch=(1, 3 + i)) for i, v in enumerate(p50)])
    low, high = stats.t.interval(0.95, 3, loc=np.mean(p50), scale=stats.sem(p50))
    assert out["tpot_s"]["p50"] == pytest.approx(2.5) and out["ci"]["tpot_s"]["p50"] == pytest.approx(
        (high - low) / 2, rel=1e-12
    )
    assert out["ci"]["tpot_s"]["p99"] == pytest.approx(high - low, rel=1e-12)  # twice the values, twice the interval
    assert out["ci"]["output_tokens_per_s"] == pytest.approx(10 * (high - low) / 2, rel=1e-12)
    assert (out["served"], out["requests"], out["max_running_batch"], out["runs"]) == (90 + 91 + 92 + 93, 400, 6, 4)
    assert out["running_batch_time_share"] == {1: 0.5, 3: 0.125, 4: 0.125, 5: 0.125, 6: 0.125}
    # A figure one run lacks has no mean and no interval; one run has no intervals at all.
    gap = summarize_runs([_summary(1.0, 2.0), _summary(None, None)])
    assert gap["tpot_s"]["p50"] is None and gap["ci"]["tpot_s"]["p50"] is None and gap["output_tokens_per_s"] is None
    one = summarize_runs([_summary(1.0, 2.0)])
    assert (
        one["tpot_s"]["p50"] == 1.0 and one["ci"]["tpot_s"]["p50"] is None and one["ci"]["output_tokens_per_s"] is None
    )
    with pytest.raises(ValueError) as err:
        summarize_runs([])
    assert str(err.value) == "summarize_runs needs at least one run"
    # Two runs already have an interval: t(0.975, 1) = 12.706 standard errors; the labels are carried over.
    two = summarize_runs([_summary(1.0, 2.0), _summary(3.0, 2.0)], level=0.95)
    assert two["ci"]["tpot_s"]["p50"] == pytest.approx(stats.t.ppf(0.975, 1) * np.std([1.0, 3.0], ddof=1) / np.sqrt(2))
    assert (two["speculation"], two["runs"], two["confidence"]) == ("off", 2, 0.95)
    # Runs that agree to rounding (a closed loop of equal requests without speculation, whatever the seed) have no
    # spread: serve-sim printed their float noise as "±6.5e-16 ms"; a real spread of one part in a million is kept.
    same = summarize_runs([_summary(0.0072 * (1 + e), 0.0076) for e in (0.0, 1e-16, -2e-16, 3e-16)])
    assert same["ci"]["tpot_s"]["p50"] == 0.0 and same["ci"]["tpot_s"]["p99"] == 0.0
    near = summarize_runs([_summary(0.0072 * (1 + e), 0.0076) for e in (0.0, 1e-6, -1e-6)])
    assert near["ci"]["tpot_s"]["p50"] > 0


def test_the_interval_covers_the_true_mean_95_percent_of_the_time():
    # 4,000 sets of 10 normal draws: coverage is binomial(4000, 0.95), standard deviation 0.0034; the tolerance
    # 0.012 is 3.5 of them (false-failure probability 5e-4 for a correct interval; the draws are seeded).
    from specsim.serving.simulator import summarize_runs

    rng = np.random.default_rng(7)
    draws = rng.normal(5.0, 2.0, size=(4000, 10))
    hits = 0
    for row in draws:
        out = summarize_runs([_summary(float(v), float(v)) for v in row])
        hits += abs(out["tpot_s"]["p50"] - 5.0) <= out["ci"]["tpot_s"]["p50"]
    assert abs(hits / 4000 - 0.95) < 0.012


def test_intervals_from_disjoint_seeds_overlap_and_single_runs_scatter_outside_them(capsys):
    # Two 95% intervals of the same mean, from independent runs, fail to overlap with probability about 0.6%;
    # single runs vary more than the mean of ten (issue 20: seed 0 and seed 1 moved p99 TPOT by 8% at 1,000 requests;
    # 500 a run here, half the suite's time, the same claim).
    def ci(seed, runs):
        argv = ["serve-sim", "--rate", "8", "--requests", "500", "--seed", str(seed), "--runs", str(runs), "--json"]
        assert main(argv) == 0
        data = json.loads(capsys.readouterr().out)
        return data["on"]["tpot_s"]["p99"], data["on"]["ci"]["tpot_s"]["p99"]

    (a, ha), (b, hb) = ci(0, 10), ci(10, 10)
    assert ha > 0 and hb > 0 and abs(a - b) < ha + hb
    singles = [ci(s, 1)[0] for s in (20, 21, 22, 23)]
    assert np.std(singles, ddof=1) > ha / 2.262  # a single run's spread exceeds the standard error of the mean of ten


def test_served_rate_is_explained_against_the_offered_rate(capsys):
    assert main(["serve-sim", "--rate", "8", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert (
        "requests/s served against the offered 8 req/s: served/s counts from the first arrival to the last finish"
        in out
    )
    assert out.count("the engine kept up (") == 2
    # 256 sequences in flight (vLLM's own on an H100 server is 1024): the engine fills within the run, so its queue
    # grows at a steady rate between the middle and the last arrival.
    assert main(["serve-sim", "--rate", "60", "--runs", "2", "--json", "--max-num-seqs", "256"]) == 0
    data = json.loads(capsys.readouterr().out)
    for name in ("off", "on"):
        s = data[name]
        # Past capacity the queue grows between the middle and the last arrival, and arrivals less that growth is
        # about what the engine completes: the served rate measured from the first arrival to the last finish.
        assert s["in_system_at_last_arrival"] > 1.5 * s["in_system_at_middle_arrival"]
        assert s["arrival_rate_per_s"] - s["queue_growth_per_s"] == pytest.approx(s["requests_per_s"], rel=0.2)
    assert main(["serve-sim", "--rate", "60", "--runs", "2"]) == 0
    assert (
        capsys.readouterr().out.count(
            "past its capacity (a longer run queues more; optimal-gamma --rate gives the long run)"
        )
        == 2
    )
    assert main(["serve-sim", "--concurrency", "4", "--requests", "50", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "a closed loop of 4 users sends a request only when one finishes" in out
    # the steady state it points to is of the same requests: the workload's (optimal-gamma's own default at a load is
    # the article's 1000 in and 256 out, which gave 6.54 ms plain TPOT against chat's 7.57 at 8 users)
    assert "(optimal-gamma --concurrency 4 --workload chat and this command's other flags gives the steady" in out
    # One user: no plural, and no burst of first requests to wait through
    assert main(["serve-sim", "--concurrency", "1", "--requests", "5", "--runs", "1"]) == 0
    one = capsys.readouterr().out
    assert "1 user;" in one and "a closed loop of 1 user sends a request only when one finishes, so the offered" in one
    assert "1 users" not in one and "burst" not in one
    assert "running batch: the sequences decoding, time-weighted over the engine's busy time (iterations of" in one
    # ... and the workload no flag chose is named as the default it is, beside the other defaults' citations
    assert (
        "load: closed loop, workload chat, 4 users; the default workload, not given (no --workload, --input-len or "
        "--output-len): optimal-gamma at a load takes the article's fixed lengths instead"
    ) in out.splitlines()
    assert main(["serve-sim", "--concurrency", "4", "--requests", "50", "--runs", "1", "--workload", "chat"]) == 0
    assert "load: closed loop, workload chat, 4 users" in capsys.readouterr().out.splitlines()
    # Near capacity a short run's queue wanders: 60 in the system at the middle arrival and 74 at the last is within
    # three times sqrt(60) of steady, and the steady state keeps up at this load (about 71 running), so it is not
    # called past capacity.
    argv = [
        "serve-sim",
        "--rate",
        "18",
        "--alpha",
        "0.58",
        "--gamma",
        "3",
        "--input-len",
        "1016",
        "--output-len",
        "258",
    ]
    assert main(argv + ["--requests", "400", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("the engine kept up (") == 2 and "past its capacity" not in out


def test_sweep_prints_its_figure_and_draws_the_tpot_objective(capsys, tmp_path):
    from specsim.figures.plots import plot_serve_sweep

    plot = tmp_path / "sweep.png"
    assert main(["serve-sweep", "--rates", "2,8", "--requests", "100", "--slo-tpot-ms", "20", "--plot", str(plot)]) == 0
    assert f"figure: {plot} (the dash-dot line is the TPOT objective, 20 ms)" in capsys.readouterr().out
    frame = pd.DataFrame(
        {
            "rate": [1.0, 2.0],
            "off_tpot_p50_s": [0.01, 0.02],
            "on_tpot_p50_s": [0.005, 0.03],
            "off_tpot_p99_s": [0.02, 0.04],
            "on_tpot_p99_s": [0.01, 0.05],
            "off_tokens_per_s": [10, 20],
            "on_tokens_per_s": [11, 19],
        }
    )
    lines = plot_serve_sweep(frame, slo_tpot_ms=25.0)
    assert list(lines["slo"].get_ydata()) == [25.0, 25.0] and lines["stops_at"] == 2.0
    assert "slo" not in plot_serve_sweep(frame)


# -- the sweep, checked against what it composes (the mutation run's survivors) -------------------------------------
def test_a_sweep_row_is_serve_compare_at_that_rate_with_every_argument_passed_on():
    from specsim.serving.simulator import serve_sweep

    wl = get_workload("chat")
    limits = EngineLimits(max_num_seqs=8, max_batched_tokens=4096)
    frame = serve_sweep(DEP, [3.0], wl, 40, 0.7, 2, limits, seed=5, slo_ttft_s=0.1, slo_tpot_s=0.0068, gamma_max=6)
    requests = Requests.poisson(3.0, 40, wl, np.random.default_rng(5))
    plain, spec, _ = serve_compare(DEP, requests, 0.7, 2, limits, seed=5, gamma_max=6)
    row = frame.iloc[0]
    for name, result in (("off", plain), ("on", spec)):
        s = result.summary(0.1, 0.0068)
        assert row[f"{name}_tpot_p50_s"] == s["tpot_s"]["p50"] and row[f"{name}_tpot_p99_s"] == s["tpot_s"]["p99"]
        assert row[f"{name}_ttft_p50_s"] == s["ttft_s"]["p50"] and row[f"{name}_ttft_p99_s"] == s["ttft_s"]["p99"]
        assert row[f"{name}_e2e_p50_s"] == s["e2e_s"]["p50"] and row[f"{name}_tokens_per_s"] == s["output_tokens_per_s"]
        assert row[f"{name}_mean_batch"] == s["mean_running_batch"]
        assert row[f"{name}_slo_attainment"] == s["slo_met"] / s["served"] and 0 < s["slo_met"] < s["served"]
    assert row["off_mean_batch"] <= 8  # the limits reached the simulation
    # Another seed is another arrival draw; the same seed the same frame.
    again = serve_sweep(DEP, [3.0], wl, 40, 0.7, 2, limits, seed=5, slo_ttft_s=0.1, slo_tpot_s=0.0068, gamma_max=6)
    pd.testing.assert_frame_equal(frame, again)
    other = serve_sweep(DEP, [3.0], wl, 40, 0.7, 2, limits, seed=6, slo_ttft_s=0.1, slo_tpot_s=0.0068, gamma_max=6)
    assert other.iloc[0]["off_tpot_p50_s"] != row["off_tpot_p50_s"]


def test_sweep_defaults_are_the_default_workload_seed_zero_and_the_schedule():
    from specsim.core.workloads import DEFAULT_WORKLOAD
    from specsim.serving.simulator import serve_sweep

    base = serve_sweep(DEP, [2.0], n=30)
    pd.testing.assert_frame_equal(base, serve_sweep(DEP, [2.0], DEFAULT_WORKLOAD, 30, gamma="schedule", seed=0))
    pd.testing.assert_frame_equal(base, serve_sweep(DEP, [2.0], get_workload(DEFAULT_WORKLOAD), 30))
    assert "off_slo_attainment" not in base  # no SLO given: no attainment column


def test_sweep_findings_count_ties_against_speculation_and_an_attainment_equal_to_the_target_as_met():
    from specsim.serving.simulator import sweep_findings

    frame = pd.DataFrame(
        {
            "rate": [1.0, 2.0, 4.0, 8.0],
            "on_tpot_p50_s": [1.0, 2.0, 3.0, 5.0],
            "off_tpot_p50_s": [2.0, 2.0, 2.5, 6.0],
            "off_slo_attainment": [1.0, 0.9, 0.5, 0.0],
            "on_slo_attainment": [1.0, 1.0, 0.95, 0.89],
        }
    )
    assert sweep_findings(frame) == {
        "speculation_stops_helping_at_rate": 2.0,
        "max_rate_meeting_slo_off": 2.0,
        "max_rate_meeting_slo_on": 4.0,
    }
    assert sweep_findings(frame, attainment=0.95)["max_rate_meeting_slo_off"] == 1.0
    better = frame.assign(on_tpot_p50_s=0.5 * frame.off_tpot_p50_s, off_slo_attainment=0.0)
    assert sweep_findings(better) == {
        "speculation_stops_helping_at_rate": None,
        "max_rate_meeting_slo_off": None,
        "max_rate_meeting_slo_on": 4.0,
    }
    assert sweep_findings(frame[["rate", "on_tpot_p50_s", "off_tpot_p50_s"]]) == {
        "speculation_stops_helping_at_rate": 2.0
    }


def test_a_sweep_run_by_an_executor_is_the_serial_sweep_row_for_row():
    from concurrent.futures import ThreadPoolExecutor

    from specsim.serving.simulator import serve_sweep

    class Recording(ThreadPoolExecutor):
        calls = []

        def map(self, fn, *iterables, **kw):
            jobs = list(iterables[0])
            Recording.calls.append((fn.__name__, [job[1].source for job in jobs]))  # each job's requests
            return super().map(fn, jobs, **kw)

    serial = serve_sweep(DEP, [1.0, 6.0], n=30, acceptance=0.7)
    with Recording(max_workers=2) as pool:
        parallel = serve_sweep(DEP, [1.0, 6.0], n=30, acceptance=0.7, executor=pool)
    # every rate went to the executor, its requests drawn beforehand, in order
    assert Recording.calls == [
        ("_sweep_one", ["Poisson, 1 requests/s, workload chat", "Poisson, 6 requests/s, workload chat"])
    ]
    pd.testing.assert_frame_equal(serial, parallel)
    assert list(parallel.rate) == [1.0, 6.0]


def test_a_sweep_of_several_runs_is_the_mean_of_the_single_seed_sweeps_with_a_student_t_interval():
    from scipy import stats

    from specsim.serving.simulator import serve_sweep

    kw = {"n": 40, "acceptance": 0.7, "slo_tpot_s": 0.0068}
    singles = [serve_sweep(DEP, [2.0, 6.0], seed=seed, **kw) for seed in (4, 5, 6)]
    runs = serve_sweep(DEP, [2.0, 6.0], seed=4, runs=3, **kw)
    assert (runs.runs == 3).all() and "runs" not in singles[0] and "off_tpot_p50_s_ci" not in singles[0]
    for column in ("off_tpot_p50_s", "on_tpot_p99_s", "on_tokens_per_s", "off_mean_batch"):
        values = np.stack([s[column].to_numpy() for s in singles])
        np.testing.assert_allclose(runs[column], values.mean(axis=0), rtol=1e-12)
        half = stats.t.ppf(0.975, 2) * values.std(axis=0, ddof=1) / np.sqrt(3)
        np.testing.assert_allclose(runs[f"{column}_ci"], half, rtol=1e-12)
        assert (runs[f"{column}_ci"] > 0).all()
    # SLO attainment is pooled over the runs' requests: every run serves all 40, so the mean of the runs' shares.
    for arm in ("off", "on"):
        shares = np.mean([s[f"{arm}_slo_attainment"].to_numpy() for s in singles], axis=0)
        np.testing.assert_allclose(runs[f"{arm}_slo_attainment"], shares, rtol=1e-12)
    assert 0 < runs.off_slo_attainment.min() < 1  # the objective sits inside the runs' TPOTs: the pooling is tested
    # Through an executor the runs come back rate by rate, in seed order: the same frame.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        pd.testing.assert_frame_equal(runs, serve_sweep(DEP, [2.0, 6.0], seed=4, runs=3, executor=pool, **kw))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="runs must be a whole number >= 1"):
            serve_sweep(DEP, [2.0], n=5, runs=bad)


def test_a_sweep_in_worker_processes_brings_back_the_step_time_sources_notes():
    # The kernel tables stop at batch 128: the rates up to 32 req/s reach batch 129-256 and the source notes that it
    # extrapolates.  Each worker process notes on its own copy of the source; serve_sweep takes those notes back, so
    # serve-sweep --workers (or --executor) prints what the serial run prints (before, it printed none of them).
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from specsim.serving.simulator import serve_sweep

    def build():
        return Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="hybrid", engine="vllm")

    serial, pooled = build(), build()
    frame = serve_sweep(serial, [2.0, 32.0], "chat", 40, 0.8, seed=3)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        pd.testing.assert_frame_equal(frame, serve_sweep(pooled, [2.0, 32.0], "chat", 40, 0.8, seed=3, executor=pool))
    assert any("decode-attention data stop at a smaller batch" in note for note in serial.notes())
    assert pooled.notes() == serial.notes()


class _Shipping:
    """An executor that sends each job as a process pool does (pickled, run on the copy) and records whether any job
    composed a kernel table where it ran."""

    def __init__(self, monkeypatch):
        import specsim.timing.kernels as kernels

        self.composed, real = [], kernels.build_table
        self.shipping = False

        def build_table(model, *args, **kwargs):
            self.composed.append((model.name, self.shipping))
            return real(model, *args, **kwargs)

        monkeypatch.setattr(kernels, "build_table", build_table)

    def _run(self, fn, job):
        import pickle

        self.shipping = True
        try:
            return fn(pickle.loads(pickle.dumps(job)))
        finally:
            self.shipping = False

    def submit(self, fn, job):
        from concurrent.futures import Future

        future = Future()
        future.set_result(self._run(fn, job))
        return future

    def map(self, fn, jobs):
        return [self._run(fn, job) for job in jobs]


def test_kernel_tables_are_read_before_the_jobs_leave_for_workers(monkeypatch, tmp_path):
    """Where the cache does not hold a table yet, each worker of serve-sim composed (and announced) it at once; the
    tables are now read before the jobs are sent, and every job receives them with its deployment."""
    from specsim.serving.simulator import serve_compare_runs, serve_sweep

    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path / "cache"))
    dep = Deployment.build("h100-sxm", "llama-3.2-1b", "llama-3.2-1b", timing="hybrid", engine="vllm")
    shipping = _Shipping(monkeypatch)
    serve_sweep(dep, [2.0], "chat", 8, 0.8, seed=3, executor=shipping)
    assert shipping.composed == [("llama-3.2-1b", False)]  # the target and its draft share one table
    from specsim.serving.simulator import requests_for

    requests = [requests_for(dep.target, rate=2.0, n=8, rng=np.random.default_rng(k))[0] for k in range(2)]
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path / "another"))
    fresh = Deployment.build("h100-sxm", "llama-3.2-1b", "llama-3.2-1b", timing="hybrid", engine="vllm")
    serve_compare_runs(fresh, requests, 0.8, 3, EngineLimits(), None, [0, 1], executor=shipping)
    assert shipping.composed[1:] == [("llama-3.2-1b", False)]


# -- the requests of a run, and their refusals, word for word --------------------------------------------------------
def test_requests_for_draws_poisson_closed_loop_or_trace_with_the_documented_defaults(tmp_path):
    from specsim.core.workloads import DEFAULT_WORKLOAD
    from specsim.serving.simulator import DEFAULT_REQUESTS, requests_for

    target = DEP.target
    poisson, users = requests_for(target, rate=4.0)
    expected = Requests.poisson(4.0, DEFAULT_REQUESTS, get_workload(DEFAULT_WORKLOAD), np.random.default_rng(0))
    assert users is None and len(poisson) == DEFAULT_REQUESTS == 1000
    np.testing.assert_array_equal(poisson.arrival_s, expected.arrival_s)
    np.testing.assert_array_equal(poisson.output, expected.output)
    other, _ = requests_for(target, rate=4.0, workload="summarization", n=20, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(
        other.prompt, Requests.poisson(4.0, 20, get_workload("summarization"), np.random.default_rng(3)).prompt
    )
    closed, users = requests_for(target, concurrency=6, n=15)
    assert users == 6 and closed.arrival_s is None and len(closed) == 15
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,3\n2,20,4\n")
    replay, users = requests_for(target, trace=str(trace))
    assert users is None and list(replay.prompt) == [10, 20] and list(replay.arrival_s) == [0.0, 2.0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "give exactly one of a rate, a concurrency or a trace"),
        ({"rate": 1.0, "concurrency": 2}, "give exactly one of a rate, a concurrency or a trace"),
        ({"rate": 1.0, "trace": "x.csv"}, "give exactly one of a rate, a concurrency or a trace"),
        (
            {"trace": "x.csv", "n": 5},
            "trace gives the requests and their lengths: drop n, workload, lengths",
        ),
        (
            {"trace": "x.csv", "workload": "chat"},
            "trace gives the requests and their lengths: drop n, workload, lengths",
        ),
    ],
)
def test_requests_for_refuses_what_does_not_name_one_source(kwargs, message):
    # requests_for's keywords to a Python caller (it said '--trace ... drop --requests' to one), the command's flags
    # inside as_flags (serve-sim's line, tests/test_hostile_inputs.py)
    from specsim.core.names import as_flags
    from specsim.serving.simulator import requests_for

    with pytest.raises(ValueError) as err:
        requests_for(DEP.target, **kwargs)
    assert str(err.value) == message
    flags = "--trace gives the requests and their lengths: drop --requests, --workload, --input-len and --output-len"
    with pytest.raises(ValueError) as err, as_flags():
        requests_for(DEP.target, **kwargs)
    assert str(err.value) == (flags if message.startswith("trace") else message)


def test_a_request_past_the_context_limit_is_named_with_the_limit_it_breaks(tmp_path):
    import dataclasses

    from specsim.core.limits import MAX_CONTEXT
    from specsim.serving.simulator import requests_for

    trace = tmp_path / "long.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,28\n1,100,29\n2,120,10\n")
    short = dataclasses.replace(DEP.target, max_position_embeddings=128)
    with pytest.raises(ValueError) as err:
        requests_for(short, trace=str(trace))  # 128 tokens fit exactly; 129 and 130 do not
    assert str(err.value) == (
        "2 request(s) need more than 128 tokens (prompt + output), llama-3.1-8b's context limit "
        "(max_position_embeddings); the first, request 2, needs 129"
    )
    # The draft model reads every token too: where its positions are the fewer, they bind, and it is named.
    short_draft = dataclasses.replace(DEP.draft, max_position_embeddings=128)
    with pytest.raises(ValueError) as err:
        requests_for(DEP.target, trace=str(trace), draft=short_draft)
    assert str(err.value).startswith("2 request(s) need more than 128 tokens (prompt + output), llama-3.2-1b's")
    assert requests_for(DEP.target, trace=str(trace), draft=None)[0].prompt.size == 3  # the target alone takes them
    # A model that does not state its context is held to specsim's own limit, named as such.
    unstated = dataclasses.replace(DEP.target, max_position_embeddings=0)
    far = tmp_path / "far.csv"
    far.write_text(f"arrival_s,prompt_tokens,output_tokens\n0,{MAX_CONTEXT},1\n")
    with pytest.raises(ValueError) as err:
        requests_for(unstated, trace=str(far))
    assert str(err.value) == (
        f"1 request(s) need more than {MAX_CONTEXT:,} tokens (prompt + output), specsim's limit; "
        f"the first, request 1, needs {MAX_CONTEXT + 1:,}"
    )


def test_sweep_names_its_workload_passes_its_gamma_limit_and_counts_one_served_request_whole():
    from specsim.serving.simulator import serve_sweep

    named = serve_sweep(DEP, [2.0], "reasoning", 30)
    pd.testing.assert_frame_equal(named, serve_sweep(DEP, [2.0], get_workload("reasoning"), 30))
    assert not named.equals(serve_sweep(DEP, [2.0], n=30))  # the name was read, not the default workload
    # The scheduled gamma is capped by gamma_max: a cap of 1 is another speculative run than the default cap.
    capped = serve_sweep(DEP, [2.0], n=30, acceptance=0.9, gamma_max=1)
    assert capped.on_tpot_p50_s[0] != serve_sweep(DEP, [2.0], n=30, acceptance=0.9).on_tpot_p50_s[0]
    # One request that meets a generous objective: attainment 1, not 1/2.
    one = serve_sweep(DEP, [2.0], n=1, slo_ttft_s=10.0, slo_tpot_s=1.0)
    assert one.off_slo_attainment[0] == 1.0 and one.on_slo_attainment[0] == 1.0


def test_sweep_without_a_request_count_simulates_the_default_number():
    from specsim.serving.simulator import DEFAULT_REQUESTS, serve_sweep

    pd.testing.assert_frame_equal(
        serve_sweep(DEP, [40.0], acceptance=0.7), serve_sweep(DEP, [40.0], n=DEFAULT_REQUESTS, acceptance=0.7)
    )


# -- one request played through exactly: the simulator's bookkeeping, round by round -------------------------------
def _alone(prompt, output):
    return Requests(np.array([prompt]), np.array([output]), np.array([0.0]))


def test_one_plain_request_finishes_after_its_prefill_and_one_round_per_token_at_the_context_each_reads(table):
    # 299 decode rounds: more than one vectorised jump (256), so the jumps' bookkeeping adds up.
    prompt, output = 100, 300
    run = simulate(_alone(prompt, output), table, EngineLimits(64), 0.8, 0)
    first = table.prefill_s(prompt) + table.base_s  # the prompt's iteration runs no decode (batch 0)
    rounds = table.round_s(1, prompt + 1 + np.arange(output - 1, dtype=float), 0)  # round i reads P + 1 + i tokens
    assert run.first_token_s[0] == pytest.approx(first, rel=1e-12)
    assert run.finish_s[0] == pytest.approx(first + rounds.sum(), rel=1e-12)
    assert run.tpot_s[0] == pytest.approx(rounds.mean(), rel=1e-12)
    share = run.summary()["running_batch_time_share"]
    assert share == pytest.approx(
        {0: first / (first + rounds.sum()), 1: rounds.sum() / (first + rounds.sum())}, rel=1e-12
    )
    assert run.mean_batch == pytest.approx(rounds.sum() / (first + rounds.sum()), rel=1e-12)  # the prompt's at 0
    assert run.in_system_integral == pytest.approx(first + rounds.sum(), rel=1e-12)


def test_two_requests_decoding_together_each_finish_at_the_end_of_their_own_last_round(table):
    # Plain decoding, so every round is known: both prompts in the first iteration, then 9 rounds at batch 2 (the short
    # request's last), then 30 at batch 1.  A jump of rounds that gave every sequence one finishing round would end the
    # short request at the jump's last round instead of its own.
    # The engine's metrics (StepCounters) see 2 sequences running in the first jump and 1 in the second, none waiting.
    from specsim.serving.counters import StepCounters

    prompt, short, long = 100, 10, 40
    counters = StepCounters(2, 4)
    requests = Requests(np.full(2, prompt), np.array([short, long]), np.zeros(2))
    run = simulate(requests, table, EngineLimits(64), 0.8, 0, observer=counters)
    first = 2 * table.prefill_s(prompt) + table.base_s
    together = table.round_s(2, prompt + 1 + np.arange(short - 1, dtype=float), 0)
    alone = table.round_s(1, prompt + 1 + np.arange(short - 1, long - 1, dtype=float), 0)
    assert run.first_token_s == pytest.approx([first, first], rel=1e-12)
    assert run.finish_s == pytest.approx([first + together.sum(), first + together.sum() + alone.sum()], rel=1e-12)
    # Halfway through the fifth round of each jump: four rounds ended in it.
    halfway = [first + together[:4].sum() + together[4] / 2, run.finish_s[0] + alone[:4].sum() + alone[4] / 2]
    seen = counters.at(halfway)
    assert seen["running"].tolist() == [2.0, 1.0] and seen["waiting"].tolist() == [0.0, 0.0]
    assert seen["generation_tokens"].tolist() == [2 + 2 * 4, 2 * short + 4]  # first tokens, then one a round each


def test_a_block_drafter_accepts_only_among_the_tokens_it_verifies_at_its_batch():
    # DSpark verifies a prefix of its block of 7, shorter at large batches (1 to 1.5 tokens at batch 128 here): the
    # accepted drafts per round are the chain's over floor(v) or floor(v) + 1 verified tokens, v the table's at the
    # round's batch and context.  Verifying the whole block would accept 1.46 a round at alpha 0.6, twice as many.
    # Tolerance 15%: the batch shrinks over the last rounds as requests finish at different rounds, and a smaller batch
    # verifies more (+6% at seed 0); the sampling error of 14,845 rounds is about 1%.
    from specsim.serving.counters import StepCounters

    dep = Deployment.build("h100-sxm", "qwen3-8b", "dspark", timing="roofline", engine="none")
    alpha, batch, output = 0.6, 128, 200
    table = StepTable(dep, batch, 400, 7, acceptance=alpha)
    counters = StepCounters(batch, 7)
    requests = Requests(np.full(batch, 100), np.full(batch, output), np.zeros(batch))
    run = simulate(requests, table, EngineLimits(batch), alpha, 7, np.random.default_rng(0), observer=counters)
    seen = counters.at([run.finish_s.max()])
    v = table.verified(batch, 101 + np.arange(output - 1, dtype=float), 7)
    whole, part = np.floor(v).astype(int), v - np.floor(v)
    chain = np.r_[0.0, np.cumsum(alpha ** np.arange(1, 8))]  # accepted drafts when n are verified
    expected = ((1 - part) * chain[whole] + part * chain[whole + 1]).mean()
    assert seen["accepted"][0] / seen["drafts"][0] == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize("g", [1, 2])
def test_with_every_draft_accepted_a_round_emits_gamma_plus_one_tokens_of_the_gamma_the_batch_uses(table, g):
    # Acceptance 1: deterministic rounds.  The schedule gives batch 1 gamma g while the table holds up to 4:
    # the draws must use the batch's gamma, not the largest.
    prompt, output = 50, 41
    schedule = np.r_[0, g, np.full(64, 4)]
    run = simulate(_alone(prompt, output), table, EngineLimits(64), 1.0, schedule)
    first = table.prefill_s(prompt, True) + table.base_s  # a speculating engine's drafter runs over the prompt too
    n_rounds = int(np.ceil((output - 1) / (g + 1)))
    contexts = prompt + 1 + (g + 1) * np.arange(n_rounds, dtype=float)
    assert run.finish_s[0] == pytest.approx(first + table.round_s(1, contexts, g).sum(), rel=1e-12)


def _result(arrival, finish, rejected=None):
    arrival, finish = np.asarray(arrival, float), np.asarray(finish, float)
    from specsim.serving.simulator import ServeResult

    return ServeResult(
        arrival,
        finish,
        finish,
        np.ones(arrival.size, int),
        np.ones(arrival.size, int),
        np.zeros(arrival.size, bool) if rejected is None else np.asarray(rejected),
        np.array([0.0, 1.0]),
        0.0,
        "off",
    )


def test_arrival_figures_are_exact_on_a_hand_made_run():
    # Arrivals 0, 1, 3, 6 (middle: the third, at 3; last at 6); finishes 3 (exactly at the middle arrival), 7, 9, 10.
    s = _result([1.0, 0.0, 3.0, 6.0], [7.0, 3.0, 9.0, 10.0])._arrivals()
    assert s["arrival_rate_per_s"] == 3 / 6 and s["drain_s"] == 10.0 - 6.0
    # At 3: requests arrived at 0, 1 and 3 (arrival <= t), less the one finished at 3 (finish <= t): 2.  At 6: 3.
    assert (s["in_system_at_middle_arrival"], s["in_system_at_last_arrival"]) == (2, 3)
    assert s["queue_growth_per_s"] == (3 - 2) / (6 - 3)
    assert s["served_per_s_after_middle"] == 0.0  # the finish at 3 is not after the middle arrival; 7 is past the last
    late = _result([0.0, 1.0, 3.0, 6.0], [4.0, 6.0, 9.0, 10.0])._arrivals()  # finishes at 4 and 6: in (3, 6]
    assert late["served_per_s_after_middle"] == 2 / (6 - 3)
    # A rejected request never counts as in the system.
    assert (
        _result([0.0, 1.0, 3.0, 6.0], [np.nan, 7.0, 9.0, 10.0], [True, False, False, False])._arrivals()[
            "in_system_at_middle_arrival"
        ]
        == 2
    )
    # Two arrivals half a second apart: one gap, rate 2.  One arrival: no rate.  Nothing served: no drain.
    assert _result([2.0, 2.5], [3.0, 4.0])._arrivals()["arrival_rate_per_s"] == 2.0  # the span is last - first
    one = _result([4.0], [5.0])._arrivals()
    assert one["arrival_rate_per_s"] is None and one["drain_s"] == 1.0 and one["queue_growth_per_s"] is None
    assert _result([0.0, 2.0], [np.nan, np.nan])._arrivals()["drain_s"] is None
    none = _result([np.nan], [np.nan])._arrivals()  # nothing ever sent
    assert none == {
        "arrival_rate_per_s": None,
        "drain_s": None,
        "in_system_at_middle_arrival": 0,
        "in_system_at_last_arrival": 0,
        "queue_growth_per_s": None,
        "served_per_s_after_middle": None,
    }


def test_summary_is_exact_on_a_hand_made_run_including_spans_under_a_second_and_of_zero():
    from specsim.serving.simulator import ServeResult

    # Two requests over 0.5 s: 3 and 5 output tokens, first tokens at 0.1 and 0.2.
    run = ServeResult(
        np.array([0.0, 0.1]),
        np.array([0.1, 0.2]),
        np.array([0.3, 0.5]),
        np.array([10, 10]),
        np.array([3, 5]),
        np.array([False, False]),
        np.array([0.1, 0.3, 0.1]),
        0.7,
        "off",
    )
    s = run.summary()
    assert (s["requests"], s["served"], s["never_fit"]) == (2, 2, 0)
    assert s["tpot_s"]["mean"] == pytest.approx(np.mean([0.2 / 2, 0.3 / 4]), rel=1e-12)
    assert s["output_tokens_per_s"] == pytest.approx(8 / 0.5) and s["requests_per_s"] == pytest.approx(2 / 0.5)
    assert s["mean_in_system"] == pytest.approx(0.7 / 0.5) and s["max_running_batch"] == 2
    assert s["running_batch_time_share"] == pytest.approx({0: 0.2, 1: 0.6, 2: 0.2})
    assert s["mean_running_batch"] == pytest.approx((0.3 + 2 * 0.1) / 0.5)  # the busy time, batch 0's included
    # A run whose only request arrives and finishes at once: no span, so no rates; no busy time, no shares.
    still = ServeResult(
        np.array([1.0]),
        np.array([1.0]),
        np.array([1.0]),
        np.array([1]),
        np.array([1]),
        np.array([False]),
        np.zeros(3),
        0.0,
        "off",
    ).summary()
    assert still["output_tokens_per_s"] is None and still["requests_per_s"] is None and still["mean_in_system"] is None
    assert (
        still["running_batch_time_share"] == {}
        and still["max_running_batch"] == 0
        and still["mean_running_batch"] == 0.0
    )


def test_slo_attainment_and_goodput_are_exact_with_each_objective_met_at_equality():
    from specsim.serving.simulator import ServeResult

    # TTFT 0.125, 0.125, 0.25, 0.125 s; TPOT 0.125, 0.125, none (one token: meets any TPOT objective), 0.25 s; span 0.75 s.
    run = ServeResult(
        np.array([0.0, 0.125, 0.25, 0.25]),
        np.array([0.125, 0.25, 0.5, 0.375]),
        np.array([0.375, 0.75, 0.5, 0.625]),
        np.full(4, 10),
        np.array([3, 5, 1, 2]),
        np.zeros(4, bool),
        np.array([0.0, 0.75]),
        1.0,
        "off",
    )
    ttft = run.summary(slo_ttft_s=0.125)
    tpot = run.summary(slo_tpot_s=0.125)
    both = run.summary(0.125, 0.125)
    assert (ttft["slo_met"], tpot["slo_met"], both["slo_met"]) == (3, 3, 2)
    assert (ttft["goodput_requests_per_s"], tpot["goodput_requests_per_s"], both["goodput_requests_per_s"]) == (
        4.0,
        4.0,
        2 / 0.75,
    )
    assert "slo_met" not in run.summary() and "goodput_requests_per_s" not in run.summary()
    # Nothing over no time: the count, and no goodput.
    still = ServeResult(
        np.array([1.0]),
        np.array([1.0]),
        np.array([1.0]),
        np.array([1]),
        np.array([1]),
        np.array([False]),
        np.zeros(2),
        0.0,
        "off",
    ).summary(slo_ttft_s=1.0)
    assert still["slo_met"] == 1 and still["goodput_requests_per_s"] is None


def test_chunked_prefill_fills_each_iterations_token_budget_less_the_running_sequences_round(table):
    # Budget 2,048 tokens; A (1,500 prompt tokens) and B (2,595) arrive together; every draft accepted, gamma 1: a
    # running sequence's round takes 1 + 1 tokens of the budget.  B's last 2,047 tokens need one more iteration than a
    # budget of 2,048 - 2 holds: the round's tokens are counted whole.
    req = Requests(np.array([1500, 2595]), np.array([50, 5]), np.array([0.0, 0.0]))
    run = simulate(req, table, EngineLimits(64, max_batched_tokens=2048), 1.0, 1)
    # Each prompt's piece costs what extending that prompt's prefill costs: A's whole 1,500 and B's first 548 tokens...
    # (speculating: the drafter's network runs over the same prompt tokens, in the table's speculative prefill)
    pf = functools.partial(table.prefill_s, speculating=True)
    first = pf(1500) + pf(548) + table.base_s  # nothing decodes yet
    # ... then B from 548 to 548 + 2,046 tokens (2,048 - 1 x (1 + 1) of budget), then its last token.
    second = pf(2594) - pf(548) + float(table.round_s(1, np.array([1501.0]), 1)[0])
    third = pf(2595) - pf(2594) + float(table.round_s(1, np.array([1503.0]), 1)[0])  # A read 2 more
    assert run.first_token_s[0] == pytest.approx(first, rel=1e-12)
    assert run.first_token_s[1] == pytest.approx(first + second + third, rel=1e-12)
    assert pf(2046) < pf(2047)  # compute-bound: each token of budget shows in the time
    assert pf(2046) > table.prefill_s(2046)  # the draft's pass over the prompt costs something


def test_step_table_prices_one_prompt_token_at_nothing_beyond_a_one_token_pass():
    table = StepTable(DEP, 4, 1024, 1, max_prefill_tokens=512)
    assert table.base_s == float(DEP.gpu_pass(DEP.target, 1, 1, 0).total_s)
    assert table.prefill_s(1) == 0.0 and table.prefill_s(0) == 0.0 and table.prefill_s(-3) == 0.0
    # 512 lies between two of the table's 40 lengths: linear between them, within 0.1% of a prompt's pass, whose causal
    # attention grows as P^2.
    assert table.prefill_s(512) == pytest.approx(
        float(DEP.gpu_pass(DEP.target, 1, 512, 0, prompt=True).total_s) - table.base_s, rel=1e-3
    )
    # The prefill table reaches the longest prompt (a piece may extend a prompt past the token budget): 1,024 here.
    assert table.prefill_tokens[0] == 1.0 and table.prefill_tokens[-1] == 1024.0 and table.table.shape == (4, 29, 2)


@pytest.mark.parametrize(
    "concurrency, ok", [(1, True), (3, True), (0, False), (-2, False), (True, False), ("2", False)]
)
def test_a_closed_loop_needs_a_whole_number_of_users(table, concurrency, ok):
    req = Requests(np.array([10, 10]), np.array([3, 3]), None)
    if ok:
        assert simulate(req, table, EngineLimits(64), 0.8, 0, concurrency=concurrency).served.all()
        return
    with pytest.raises(ValueError) as err:
        simulate(req, table, EngineLimits(64), 0.8, 0, concurrency=concurrency)
    assert str(err.value) == f"concurrency must be a whole number >= 1, got {concurrency!r}"


def test_simulate_refuses_a_closed_loop_without_users_and_a_short_schedule_and_carries_its_label(table):
    closed = Requests(np.array([10]), np.array([3]), None)
    with pytest.raises(ValueError) as err:
        simulate(closed, table, EngineLimits(64), 0.8, 0)
    assert str(err.value) == "a closed-loop request set needs a concurrency"
    with pytest.raises(ValueError) as err:
        simulate(_alone(10, 3), table, EngineLimits(4), 0.8, np.array([0, 1, 1]))
    assert str(err.value) == (
        "a gamma schedule needs one entry per batch size 0..max_num_seqs (0..the users, where a closed loop has fewer)"
    )
    assert simulate(_alone(10, 3), table, EngineLimits(64), 0.8, 0, label="a label").speculation == "a label"


def test_serve_compare_is_two_simulations_of_its_composition_with_labels_capacities_and_the_schedule():
    from specsim.serving.capacity import capacity, sequence_kv_bytes
    from specsim.speculation.search import optimal_gamma

    req = Requests.poisson(6.0, 40, get_workload("chat"), np.random.default_rng(2))
    limits = EngineLimits(8, max_batched_tokens=512)
    plain, spec, meta = serve_compare(DEP, req, 0.8, 2, limits, seed=3, memory_utilization=0.5, context_hint=300.0)
    cap = capacity(
        DEP, 300, 0.5, max_batched_tokens=512, max_num_seqs=8
    )  # the limits: vLLM's start-up profiles with them
    lengths = (np.asarray(req.prompt) + np.asarray(req.output)).astype(float)
    table = StepTable(DEP, 8, int(lengths.max()), 2, 512)
    for run, free, rule, draft, label in (
        (plain, cap.free_bytes_without_draft, 0, False, "off"),
        (spec, cap.free_bytes_with_draft, 2, True, "gamma 2"),
    ):
        again = simulate(
            req,
            table,
            EngineLimits(8, 512, kv_capacity_bytes=free),
            0.8,
            rule,
            np.random.default_rng(3),
            None,
            sequence_kv_bytes(DEP, lengths, draft),
            label=label,
            kv_bytes_of=functools.partial(sequence_kv_bytes, DEP, with_draft=draft, draft_tokens=2),
        )
        np.testing.assert_array_equal(run.finish_s, again.finish_s)
        assert run.speculation == label
    per_token = DEP.target.kv_bytes_per_token, DEP.target.kv_bytes_per_token + DEP.draft.kv_bytes_per_token
    assert meta == {
        "kv_capacity_tokens_plain": cap.free_bytes_without_draft / per_token[0],
        "kv_capacity_tokens_spec": cap.free_bytes_with_draft / per_token[1],
        "kv_capacity_bytes_plain": cap.free_bytes_without_draft,
        "kv_capacity_bytes_spec": cap.free_bytes_with_draft,
        "memory_basis": cap.memory_basis,
        "gamma_policy": "gamma 2",
        "gamma_by_batch": [2],
        "context_hint": 300.0,
        "scratch_draft_tokens": 0,
        "scratch_basis": "",
        "kv_policy": "16-token blocks taken as tokens arrive, the request admitted last preempted and recomputed where "
        "they run out",  # vLLM's (DEP's engine)
    }  # an attention target: no recurrent scratch
    # The schedule: batch 0 runs nothing, batches 1..max_num_seqs their optimal gamma at the hint, up to gamma_max.
    _, sched, smeta = serve_compare(DEP, req, 0.8, "schedule", limits, seed=3, context_hint=300.0, gamma_max=3)
    best = optimal_gamma(DEP, 0.8, np.arange(1, 9), 300.0, 3)
    assert smeta["gamma_by_batch"] == [0] + best.gamma.tolist() and max(smeta["gamma_by_batch"]) <= 3
    assert sched.speculation == smeta["gamma_policy"] == "per-batch optimal gamma (0..3) at L = 300"


def test_serve_compare_refuses_a_draft_that_leaves_no_memory_for_the_kv_cache():
    # At 0.28 of an H100, vLLM's start-up at its server defaults (2.29 GB: the sampler's 1024 x 128,256 logits at 14.9
    # bytes with the pass's hidden states, and 0.27 GB outside torch) and the 8B target leave 5.6 GB; the 3B draft's
    # weights take 6.4 GB: 0.83 GB short.
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-3b", timing="roofline")
    start_up = 1024 * 128_256 * 14.9 + 8192 * 4096 * 2 + 0.25 * 2**30
    gb = 0.28 * 81_559 * 2**20 - start_up - dep.target.weight_bytes
    with pytest.raises(ValueError) as err:
        serve_compare(dep, _alone(100, 10), 0.8, 2, memory_utilization=0.28)
    said = str(err.value)
    assert said.startswith(
        "give target_options['tp'] 2, the smallest that holds llama-3.1-8b and its draft with one request here (or a "
        "smaller target_options['weight_dtype'], or memory_utilization): "  # the keywords: this is the library
        f"llama-3.1-8b with llama-3.2-3b does not fit on h100-sxm: the weights take {(dep.draft.weight_bytes - gb) / 1e9:.2f} "
        "GB per GPU more than the engine's share of memory leaves them; the engine's share of memory: 0.28 as given, less "
        "2.29 GB for its start-up ("
    )
    assert "\n" not in said and "give a larger" not in said  # the fix leads, said once
    assert f"{(dep.draft.weight_bytes - gb) / 1e9:.2f}" == "0.83"
    with pytest.raises(ValueError) as err:
        serve_compare(dep, _alone(100, 10), 0.8, 2, memory_utilization=0.1)
    assert "llama-3.1-8b does not fit on h100-sxm: the weights take " in str(err.value)


def test_serve_compare_draws_acceptance_with_seed_zero_by_default():
    req = Requests.poisson(6.0, 40, get_workload("chat"), np.random.default_rng(2))
    default = serve_compare(DEP, req, 0.8, 2, EngineLimits(8))
    zero, one = (
        serve_compare(DEP, req, 0.8, 2, EngineLimits(8), seed=0),
        serve_compare(DEP, req, 0.8, 2, EngineLimits(8), seed=1),
    )
    np.testing.assert_array_equal(default[1].finish_s, zero[1].finish_s)
    assert not np.array_equal(default[1].finish_s, one[1].finish_s)


def test_a_closed_loop_schedules_and_times_only_the_batches_its_users_can_run(capsys):
    # Four users never run a fifth sequence: the schedule and the step table stop at batch 4, not at the engine's
    # 1,024, and the runs are those a schedule for every batch gives.  The measured kernels (the default source) stop
    # at batch 128-256, so a table up to 1,024 made the source note batches no closed loop of four reaches.
    from specsim.serving.capacity import sequence_kv_bytes
    from specsim.speculation.search import optimal_gamma

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    limits = EngineLimits(1024, 8192)
    req = Requests(np.full(40, 1000), np.full(40, 200), None)
    _, spec, meta = serve_compare(dep, req, 0.7, "schedule", limits, concurrency=4, seed=1, gamma_max=5)
    hint = meta["context_hint"]
    assert meta["gamma_by_batch"] == [0] + optimal_gamma(dep, 0.7, np.arange(1, 5), hint, 5).gamma.tolist()
    every = np.r_[0, optimal_gamma(dep, 0.7, np.arange(1, 1025), hint, 5).gamma]
    assert every[1:5].tolist() == meta["gamma_by_batch"][1:]
    lengths = np.full(40, 1200.0)
    again = simulate(
        req,
        StepTable(dep, 1024, 1200, int(every.max()), 8192, 0.7),
        EngineLimits(1024, 8192, kv_capacity_bytes=meta["kv_capacity_bytes_spec"]),
        0.7,
        every,
        np.random.default_rng(1),
        4,
        sequence_kv_bytes(dep, lengths, True, max(int(every.max()), 1)),
    )
    np.testing.assert_array_equal(spec.finish_s, again.finish_s)
    # A schedule that short serves four users, not an open loop (which may run up to max_num_seqs).
    with pytest.raises(ValueError, match=r"one entry per batch size 0\.\.max_num_seqs"):
        simulate(
            Requests(np.full(4, 100), np.full(4, 10), np.zeros(4)),
            StepTable(dep, 4, 110, 3),
            limits,
            0.7,
            [0, 3, 3, 3, 3],
        )
    assert main(["serve-sim", "--concurrency", "4", "--input-len", "1000", "--output-len", "200", "--runs", "1"]) == 0
    err = capsys.readouterr().err
    assert "note: " in err and "data stop at a smaller batch" not in err


def test_serve_sim_says_what_held_the_speculating_arm_to_a_smaller_batch(capsys):
    # On a 24 GiB A30 the DSpark head's 4.7 GB leave 10,704 tokens of KV where 43,823 fit without it (vLLM's 0.92 of the
    # device less its start-up, vLLM 0.33's, named): vLLM, admitting on the prompt's blocks, runs at most 10 requests of 1,000 + 300 tokens
    # at once against 43 (8 and 33 at their whole length); SGLang speculates with at most 48 sequences.  Either way a smaller batch, not a slower round, is the difference.
    def held(*argv):
        assert (
            main(["serve-sim", "--requests", "60", "--runs", "1", "--input-len", "1000", "--output-len", "300", *argv])
            == 0
        )
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("speculation on ran at most")]

    kv = held(
        "--concurrency",
        "64",
        "--target",
        "qwen3-8b",
        "--draft",
        "dspark",
        "--hardware",
        "a30",
        "--engine",
        "vllm@0.33.0",
    )
    assert kv == [
        "speculation on ran at most 10 sequences at once, off 43: beside the draft's weights and KV the cache holds "
        "10,704 tokens, against 43,823 without it (16-token blocks taken as tokens arrive, the request admitted last "
        "preempted and recomputed where they run out; specsim capacity gives the batch at a length)"
    ]
    assert held("--concurrency", "56", "--engine", "sglang") == [
        "speculation on ran at most 48 sequences at once, off 56: the engine's max_num_seqs while speculating (48)"
    ]
    assert held("--concurrency", "8") == []
    # At one Poisson rate speculation finishes requests sooner, so fewer are in flight (here at most 8 against 13):
    # no limit held it, and nothing is said.
    assert main(["serve-sim", "--rate", "4", "--requests", "300", "--runs", "1", "--json"]) == 0
    open_loop = json.loads(capsys.readouterr().out)
    assert open_loop["on"]["max_running_batch"] < open_loop["off"]["max_running_batch"]
    assert open_loop["speculating_batch_held"] is None
    assert (
        main(["serve-sim", "--requests", "60", "--runs", "1", "--concurrency", "56", "--engine", "sglang", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["speculating_batch_held"].endswith("while speculating (48)")


def test_serve_sweep_takes_a_benchmarks_fixed_lengths_as_serve_sim_does(capsys):
    # vllm bench serve --random-input-len 1000 --random-output-len 300 --request-rate R, swept: each rate's row is the
    # serve-sim run of that rate with the same lengths and seed, figure for figure.
    fixed = ["--requests", "60", "--input-len", "1000", "--output-len", "300", "--json"]
    assert main(["serve-sweep", "--rates", "2,8", *fixed]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert swept["lengths"] == {"input_len": 1000, "output_len": 300} and swept["workload"] is None
    for row in swept["rates"]:
        assert main(["serve-sim", "--rate", f"{row['rate']:g}", "--runs", "1", *fixed]) == 0
        alone = json.loads(capsys.readouterr().out)
        for arm in ("off", "on"):
            assert row[f"{arm}_tpot_p50_s"] == alone[arm]["tpot_s"]["p50"]
            assert row[f"{arm}_tokens_per_s"] == alone[arm]["output_tokens_per_s"]
    assert main(["serve-sweep", "--rates", "2", "--requests", "60", "--input-len", "1000"]) == 0
    assert (
        "every request 1000 in, 256 out [--output-len 256 (default: the article's completion)]; 60 requests per rate"
        in capsys.readouterr().out
    )
    assert main(["serve-sim", "--rate", "2", "--runs", "1", "--requests", "60", "--output-len", "300"]) == 0
    assert (
        "load: Poisson, 2 requests/s, every request 1000 in, 300 out [--input-len 1000 (default: the reference "
        "article's prompt)]" in capsys.readouterr().out.splitlines()
    )
    # One clear line each: lengths beside a workload, and lengths past the target's positions, before any simulation.
    assert main(["serve-sweep", "--rates", "2", "--input-len", "1000", "--workload", "chat"]) == 2
    assert "--workload a distribution: drop one" in capsys.readouterr().err
    assert main(["serve-sweep", "--rates", "2", "--input-len", "200000"]) == 2
    assert "llama-3.1-8b's context limit (max_position_embeddings)" in capsys.readouterr().err


def test_serve_sweep_marks_the_rates_past_capacity_as_serve_sim_judges_them(capsys):
    # 200 requests at 80/s are past an H100's capacity for this 8B target (the queue grows through the run), at 2/s it
    # keeps up: the sweep's rows say so per arm, as serve-sim's line for the same rate and seed does, and its text
    # names the rate; the completions serve-sim prints are counted, never arrivals less a growth (once -3.2 req/s).
    fixed = ["--requests", "200", "--input-len", "1000", "--output-len", "300"]
    assert main(["serve-sweep", "--rates", "2,80", *fixed, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rates"]
    assert [(r["off_past_capacity"], r["on_past_capacity"]) for r in rows] == [(False, False), (True, True)]
    for row in rows:
        assert main(["serve-sim", "--rate", f"{row['rate']:g}", "--runs", "1", *fixed]) == 0
        lines = capsys.readouterr().out.splitlines()
        for arm in ("off", "on"):
            said = next(line for line in lines if line.startswith(f"  speculation {arm}: arrivals came at"))
            assert ("past its capacity" in said) == row[f"{arm}_past_capacity"], said
            if row[f"{arm}_past_capacity"]:
                assert float(said.split("completes about ")[1].split()[0]) >= 0, said
    assert main(["serve-sweep", "--rates", "2,80", *fixed]) == 0
    out = capsys.readouterr().out
    assert (
        "not of a steady state; a longer run queues more; optimal-gamma --rate gives the long run): 80 requests/s (speculation off and on)\n"
        in out
    )
    assert ", one run (seed 0; --runs for an interval over runs)" in out
    assert main(["serve-sweep", "--concurrency", "2", "--requests", "20", "--json"]) == 0  # closed loops: no queue
    closed = json.loads(capsys.readouterr().out)["concurrencies"][0]
    assert closed["off_past_capacity"] is None and closed["on_past_capacity"] is None


def test_serve_sweep_over_concurrencies_is_serve_sim_at_each_closed_loop(capsys, tmp_path):
    # vllm bench serve --max-concurrency swept: each row is the serve-sim --concurrency run of those users, same
    # requests and seed, figure for figure; the findings, the table and the figure speak of users, not rates.
    from specsim.figures.plots import plot_serve_sweep
    from specsim.serving.simulator import serve_sweep, sweep_findings

    common = ["--requests", "60", "--input-len", "500", "--output-len", "100"]
    assert main(["serve-sweep", "--concurrency", "1,16", *common, "--slo-tpot-ms", "40", "--json"]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert [row["concurrency"] for row in swept["concurrencies"]] == [1, 16] and "rates" not in swept
    assert set(swept["findings"]) == {
        "speculation_stops_helping_at_concurrency",
        "max_concurrency_meeting_slo_off",
        "max_concurrency_meeting_slo_on",
    }
    for row in swept["concurrencies"]:
        assert main(["serve-sim", "--concurrency", str(row["concurrency"]), "--runs", "1", *common, "--json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        for arm in ("off", "on"):
            assert row[f"{arm}_tpot_p50_s"] == alone[arm]["tpot_s"]["p50"]
            assert row[f"{arm}_mean_batch"] == alone[arm]["mean_running_batch"]
    assert main(["serve-sweep", "--concurrency", "1,16", *common]) == 0
    out = capsys.readouterr().out
    assert (
        "closed loops; 60 requests per concurrency" in out
        and "\nspeculation: " in out
        and "speculation lowers TPOT p50 at every concurrency" in out
    )
    assert out.splitlines()[6].split()[0] == "users"
    frame = serve_sweep(DEP, None, n=30, acceptance=0.7, concurrencies=[2, 4])
    assert list(frame.concurrency) == [2, 4] and "rate" not in frame
    # A sweep where speculation stops paying at some load names it in users.
    worse = frame.assign(on_tpot_p50_s=[0.001, 1.0])
    assert sweep_findings(worse)["speculation_stops_helping_at_concurrency"] == 4.0
    import matplotlib

    matplotlib.use("Agg")
    lines = plot_serve_sweep(worse)
    assert (
        lines["stops_at"] == 4.0 and lines[("off", "p50")].axes.get_xlabel() == "concurrency (users of a closed loop)"
    )
    for bad in ({"rates": None, "concurrencies": None}, {"rates": [1.0], "concurrencies": [2]}):
        with pytest.raises(ValueError, match="give request rates or concurrencies to sweep, not both"):
            serve_sweep(DEP, bad["rates"], n=10, concurrencies=bad["concurrencies"])
    for bad in ([0], [True], [2.5], []):
        with pytest.raises(ValueError, match="concurrencies must be whole numbers >= 1"):
            serve_sweep(DEP, None, n=10, concurrencies=bad)


def test_serve_sweep_names_the_engine_limits_it_ran_under_as_serve_sim_does(capsys):
    """max_num_seqs and the token budget bound every row (SGLang's speculating server holds 48 of 64 users), so the sweep
    names them and their source, in text and JSON, in serve-sim's words (they had been named nowhere)."""
    common = ["--concurrency", "4", "--input-len", "200", "--output-len", "32", "--requests", "8", "--engine", "sglang"]
    assert main(["serve-sim", *common, "--runs", "1", "--json"]) == 0
    limits = json.loads(capsys.readouterr().out)["engine_limits"]
    assert "48 speculating" in limits
    assert main(["serve-sweep", *common, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["engine_limits"] == limits
    assert main(["serve-sweep", *common]) == 0
    assert f"\nengine limits: {limits}\n" in capsys.readouterr().out


def test_serve_sim_does_not_compare_throughput_when_the_arms_served_different_requests(capsys):
    # 0.257 of an H100's memory, of which vLLM's start-up takes 2.3 GB: beside the draft the cache turns away many more
    # long reasoning requests than without it.  Each arm's throughput counts only what it served, so the headline names the
    # difference and compares TPOT over what each served, not throughput; each arm's note says which arm it is.
    argv = ["serve-sim", "--rate", "2", "--memory-util", "0.257", "--runs", "1", "--workload", "reasoning"]
    assert main(argv + ["--requests", "100"]) == 0
    out, err = capsys.readouterr()
    line = next(x for x in out.splitlines() if x.startswith("the arms served different requests"))
    assert "their throughputs are not compared" in line and "throughput by" not in out
    never = [x for x in err.splitlines() if "were never served" in x]
    assert [x.split(":")[1].strip() for x in never] == ["speculation off", "speculation on"]


def test_a_burst_past_capacity_is_said_as_one_with_no_completion_rate_read_from_it(capsys):
    # 300 requests offered at 1,000 req/s arrive in a third of a second: arrivals less the queue's growth over that
    # burst said 25 req/s for both arms, against 18.6 and 21.5 served.  A burst shows no steady rate: the line says so
    # and points at served/s.
    assert main(["serve-sim", "--rate", "1000", "--requests", "300", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("the requests came in a burst") == 2 and "the engine completes about" not in out


def test_the_queue_verdict_of_several_equal_runs_is_that_of_one():
    # summarize_runs sums the runs' requests and averages their rates: the second half's arrival time was read R times
    # too long, so a burst of 10 runs was called a queue that grew (serve-sim --runs 10 against --runs 1).
    from specsim.serving.runs import queue_verdict, second_half_s, summarize_runs

    n = 400
    arrival = np.linspace(0.0, 2.0, n)  # 200 requests/s for 2 s
    finish = 2.0 + np.linspace(1.0, 20.0, n)  # all after the last arrival: the engine far behind
    one = _result(arrival, finish).summary()
    ten = summarize_runs([one] * 10)
    assert second_half_s(ten) == pytest.approx(second_half_s(one)) == pytest.approx(1.0, rel=0.01)
    assert queue_verdict(one) == queue_verdict(ten) == "burst"


def test_serve_sim_json_gives_the_change_the_text_prints(capsys):
    """The closing line's two changes are the JSON's ``changes`` (one computation: ServeSimAnswer.changes)."""
    argv = ["serve-sim", "--rate", "4", "--alpha", "0.8", "--requests", "100", "--runs", "1"]
    assert main(argv) == 0
    line = re.search(
        r"speculation changes TPOT p50 by ([+-]\d+\.\d)% and throughput by ([+-]\d+\.\d)%", capsys.readouterr().out
    )
    assert main(argv + ["--json"]) == 0
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert round(100 * changes["tpot_p50"], 1) == float(line.group(1))
    assert round(100 * changes["output_tokens_per_s"], 1) == float(line.group(2))


def test_serve_sweep_without_an_acceptance_takes_the_drafters_published_one_as_the_command_does(capsys):
    """serve_sweep's acceptance left out was 0.8 for every drafter, where serve-sweep takes the drafter's published
    acceptance on the workload (an EAGLE-3 head's on chat, 0.744): the library and the command gave different TPOTs."""
    e3 = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline")
    frame = serve_sweep(e3, [1.0, 6.0], "chat", 60)
    assert (
        main(
            ["serve-sweep", "--timing", "roofline", "--draft", "eagle3", "--rates", "1,6", "--requests", "60", "--json"]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert [r["on_tpot_p50_s"] for r in printed["rates"]] == pytest.approx(list(frame.on_tpot_p50_s), rel=1e-12)
    assert "alpha 0.744" in printed["acceptance"]


def test_serve_sweep_says_which_gamma_it_speculated_with_as_serve_sim_does(capsys):
    """--gamma changes every figure of a sweep's speculating arm, so the sweep names it, in text and JSON, in serve-sim's
    words: a fixed gamma, or the per-batch schedule up to --gamma-max (it had been named nowhere)."""
    sweep = ["serve-sweep", "--concurrency", "4", "--input-len", "200", "--output-len", "32", "--requests", "8"]
    said = {}
    for extra in (["--gamma", "2"], ["--gamma-max", "5"]):
        assert main([*sweep, *extra]) == 0
        text = capsys.readouterr().out
        assert main([*sweep, *extra, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        said[extra[0]] = data["gamma_policy"]
        assert f"speculation: {data['gamma_policy']}\n" in text
    assert said == {"--gamma": "gamma 2", "--gamma-max": "per-batch optimal gamma (0..5) at each load's mean context"}
    # the schedule's range as the search has it: a per-position acceptance stops it at its last position
    assert main([*sweep, "--acceptance", "0.9,0.8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gamma_policy"].startswith("per-batch optimal gamma (0..2) ")
    assert (
        main(
            ["serve-sim", "--concurrency", "4", "--input-len", "200", "--output-len", "32", "--requests", "8"]
            + ["--gamma", "2"]
        )
        == 0
    )
    assert "speculation: gamma 2\n" in capsys.readouterr().out


def test_a_count_of_one_takes_the_singular_in_serve_sims_lines(capsys):
    """serve-sim printed "1 requests in the system" where a run's queue held one request; every count+noun the CLI
    prints goes through specsim.core.words.counted."""
    argv = ["serve-sim", "--rate", "2", "--output-len", "2", "--runs", "1", "--requests", "50", "--timing", "roofline"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(1 request in the system at the middle arrival" in out
    assert not re.search(r"\b1 (requests|users|sequences|runs)\b", out), out
    assert main(["serve-sim", "--concurrency", "2", "--requests", "1", "--runs", "1", "--timing", "roofline"]) == 0
    out = capsys.readouterr().out
    assert "2 users but 1 request: a burst of 1" in out and "one burst of 1 request," in out
    assert not re.search(r"\b1 (requests|users|sequences|runs)\b", out), out
