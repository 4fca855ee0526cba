"""Issue 13: the request-level serving simulation against the per-batch model, queueing identities and its inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specsim.cli import main
from specsim.capacity import capacity
from specsim.serving import EngineLimits, StepTable, serve_compare, simulate
from specsim.deployment import Deployment
from specsim.speedup import expected_tokens
from specsim.workloads import Requests, get_workload, read_trace

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
    assert plain.mean_batch == pytest.approx(1.0)
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
        rows = "".join(f"{a!r},{p},{o}\n" for a, p, o in zip(req.arrival_s.tolist(), req.prompt.tolist(), req.output.tolist()))
        path.write_text("arrival_s,prompt_tokens,output_tokens\n" + rows)
    else:
        path.write_text("".join(json.dumps({"arrival_s": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                                for a, p, o in zip(req.arrival_s.tolist(), req.prompt.tolist(), req.output.tolist())))
    replay = read_trace(path)
    assert np.array_equal(replay.arrival_s, req.arrival_s) and np.array_equal(replay.output, req.output)
    direct, replayed = serve_compare(DEP, req, 0.8, seed=3), serve_compare(DEP, replay, 0.8, seed=3)
    for x, y in zip(direct[:2], replayed[:2]):
        assert np.array_equal(x.finish_s, y.finish_s) and np.array_equal(x.first_token_s, y.first_token_s)


def test_a_request_that_can_never_fit_is_reported_not_dropped(table):
    req = Requests(np.array([100, 5000, 100]), np.array([50, 50, 50]), np.array([0.0, 0.1, 0.2]))
    per_token = DEP.target.kv_bytes_per_token
    result = simulate(req, table, EngineLimits(64, kv_capacity_bytes=1000 * per_token), 0.8, 0,
                      reserve_bytes=(req.prompt + req.output) * per_token)
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
    code = main(["serve-sim", "--rate", "4", "--workload", "chat", "--alpha", "0.8", "--requests", "200", "--csv", str(out_csv),
                 "--slo-ttft-ms", "500", "--slo-tpot-ms", "20"])
    out = capsys.readouterr().out
    assert code == 0 and "speculation off" in out and "speculation on" in out
    for row in ("TTFT p50 / p90 / p99", "TPOT p50 / p90 / p99", "end-to-end p50 / p90 / p99", "goodput"):
        assert row in out
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("speculation,request,arrival_s") and len(lines) == 1 + 2 * 200
    code = main(["serve-sim", "--concurrency", "8", "--requests", "100", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["off"]["served"] == 100 and data["on"]["mean_running_batch"] <= 8.0 + 1e-9


def test_sweep_finds_where_speculation_stops_helping(capsys, tmp_path):
    plot = tmp_path / "sweep.png"
    code = main(["serve-sweep", "--rates", "1,64", "--requests", "300", "--slo-ttft-ms", "1000", "--slo-tpot-ms", "40",
                 "--plot", str(plot), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and plot.stat().st_size > 10_000
    low, high = data["rates"]
    assert low["on_tpot_p50_s"] < low["off_tpot_p50_s"]
    assert data["findings"]["max_rate_meeting_slo_on"] == 1.0


@pytest.mark.parametrize("target, draft, length", [("gemma-3-27b", "gemma-3-270m", 24_000), ("gpt-oss-20b", "eagle3", 60_000),
                                                   ("llama-3.1-8b", "llama-3.2-1b", 24_000)])
def test_serving_admits_exactly_the_batch_specsim_capacity_reports(target, draft, length):
    # Issue 17: capacity capped window layers at their window and serve-sim did not, so for Gemma 3 (5 of 6 layers
    # local, window 1,024) and gpt-oss (half the layers, window 128) serve-sim admitted fewer requests than
    # `specsim capacity` said fit.  With one KV function both agree exactly: a closed loop of more users than fit,
    # every request the same length, runs at the capacity model's largest batch.
    dep = Deployment.build("h200", target, draft, timing="roofline")
    cap = capacity(dep, length)
    users = cap.max_batch_without_draft + 5
    req = Requests(np.full(2 * users, length - 100), np.full(2 * users, 100), None)
    limits = EngineLimits(4096, include_prefill=False)  # prompts cost no time: every admitted request decodes at once
    plain, spec, _ = serve_compare(dep, req, 0.8, gamma=1, concurrency=users, limits=limits)
    assert plain.summary()["max_running_batch"] == cap.max_batch_without_draft
    assert spec.summary()["max_running_batch"] == cap.max_batch_with_draft
    # The old reservation, full attention on every layer, admits fewer for the window models only.
    full = int(cap.free_bytes_without_draft // (dep.target.kv_bytes_per_token * length))
    assert (full < cap.max_batch_without_draft) == (dep.target.n_sliding_layers > 0)


def test_a_run_with_nothing_to_average_says_so_instead_of_nan(tmp_path, capsys):
    import json

    from specsim.cli import main

    trace = tmp_path / "one-token.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,1\n1,100,1\n")
    assert main(["serve-sim", "--trace", str(trace), "--alpha", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)  # valid JSON: no NaN
    assert out["off"]["tpot_s"] == {"p50": None, "p90": None, "p99": None, "mean": None}
    assert out["off"]["ttft_s"]["p50"] > 0 and out["off"]["served"] == 2
    assert main(["serve-sim", "--trace", str(trace), "--alpha", "0.8"]) == 0
    text = capsys.readouterr().out
    assert "nan" not in text and "no TPOT to compare: no served request produced a second token" in text
