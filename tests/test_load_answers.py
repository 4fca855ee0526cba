"""Answers at a load (--concurrency, --rate): the library's answer and the CLI's are one, the best gamma is the one a
benchmark would pick, prefill makes a load's speedup smaller than its decode batch's, and the batch view's flags are
refused beside a load."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from specsim.answers.load import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, load_answer, request_lengths
from specsim.cli.main import main
from specsim.serving.steady import steady_state
from specsim.speculation.deployment import Deployment

DEP = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")


def _json(argv, capsys):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_prints_the_librarys_answer_at_each_load(capsys):
    rows = _json(["optimal-gamma", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,16,64"], capsys)
    answer = load_answer(
        DEP, 0.8, "alpha 0.8", "concurrency", [1, 16, 64], DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, gamma_max=16
    )
    assert [r["gamma"] for r in rows] == [r["gamma"] for r in answer.rows]
    for cli, lib in zip(rows, answer.rows):
        assert cli["spec"]["tpot_s"] == pytest.approx(lib["spec"]["tpot_s"], rel=1e-12)
        assert cli["plain"]["ttft_s"] == pytest.approx(lib["plain"]["ttft_s"], rel=1e-12)
        assert "--input-len 1000 (default: the reference article's prompt)" in cli["lengths"]


def test_the_best_gamma_at_a_closed_loop_gives_the_most_output_tokens_per_second():
    answer = load_answer(DEP, 0.8, "", "concurrency", [1, 64, 256], 1000, 256, gamma_max=8)
    tput = answer.state.output_tokens_per_s
    for j, row in enumerate(answer.rows):
        assert row["spec"]["output_tokens_per_s"] == pytest.approx(tput[:, j].max())
        assert row["gamma"] == int(answer.state.gamma[np.argmax(tput[:, j]), 0])


def test_prompts_beside_the_decode_make_a_loads_speedup_smaller_than_its_decode_batchs():
    from specsim.speculation.search import optimal_gamma

    answer = load_answer(DEP, 0.8, "", "concurrency", [64], 2000, 128, gamma_max=8)
    row = answer.rows[0]
    batch = optimal_gamma(DEP, 0.8, np.array([row["spec"]["batch_a_request_sees"]]), 2000 + 64, 8)
    assert row["speedup_tpot"] < float(batch.speedup[0]) - 0.05


def test_a_fixed_gamma_at_poisson_rates_and_past_capacity(capsys):
    rows = _json(["speedup", "--timing", "roofline", "--alpha", "0.8", "--gamma", "3", "--rate", "1,200"], capsys)
    assert [r["gamma"] for r in rows] == [3, 3]
    assert not rows[0]["spec"]["saturated"] and rows[1]["spec"]["saturated"]
    s = steady_state(DEP, 0.8, [0, 3], [1.0], 1000, 256, kind="rate")
    assert rows[0]["plain"]["tpot_s"] == pytest.approx(float(s.tpot_s[0, 0]), rel=1e-9)


def test_explain_at_a_load_where_speculation_does_not_pay_shows_the_round_at_gamma_1_and_what_it_would_give(capsys):
    # Chat at 28 requests/s is past an H100's capacity with this 8B target: gamma 0 is the answer (the drafter's KV
    # leaves fewer requests running). The breakdown once put a gamma-1 round inside the plain iteration (its prompts
    # beside, the iteration less that round) with a per-batch speedup of 1.23 beside the load's 1.000; now the row is
    # the arm of the gamma the recommendation weighs (gamma 2 here), figure for figure as speedup --gamma 2 gives it,
    # and says it is not run.  (At a load --workload gives the requests' lengths, so it goes beside the user's --alpha.)
    argv = ["--alpha", "0.8", "--rate", "10,28", "--workload", "chat"]  # the hybrid source: gamma 0 at 28
    best = _json(["optimal-gamma", *argv], capsys)
    # (-2.7% output tok/s, inside the model's error: too close to call, naming the gamma weighed)
    weighed = int(re.search(r"too close to call: gamma=(\d+) gives .*its engine holds", best[1]["recommendation"])[1])
    at_one = _json(["speedup", *argv, "--gamma", str(weighed)], capsys)
    rows = _json(["explain", *argv], capsys)
    assert [r["gamma"] for r in best][1] == 0 and best[0]["gamma"] > 0
    assert [r["speculates"] for r in rows] == [True, False] and rows[1]["gamma"] == weighed
    # both arms are past capacity at 28/s: a ratio of their full engines' TPOTs is no speedup at the load (None)
    assert best[1]["past_capacity"] == at_one[1]["past_capacity"] == ["plain", "speculating"]
    assert rows[1]["speedup_at_gamma"] is at_one[1]["speedup_tpot"] is None
    assert rows[1]["speedup_tpot"] is best[1]["speedup_tpot"] is None
    assert rows[1]["batch"] == pytest.approx(at_one[1]["spec"]["batch_a_request_sees"], rel=1e-12)
    assert rows[1]["iteration_s"] == pytest.approx(at_one[1]["spec"]["itl_s"], rel=1e-12)
    assert rows[1]["iteration_s"] == pytest.approx(rows[1]["t_round_s"] + rows[1]["prompts_beside_s"])
    assert rows[0]["speedup_tpot"] == pytest.approx(best[0]["speedup_tpot"], rel=1e-12) == rows[0]["speedup_at_gamma"]
    assert main(["explain", *argv]) == 0
    assert "*: not what it runs (the recommendation above says why)" in capsys.readouterr().out


def test_explain_and_compare_and_schedule_answer_at_a_load(capsys):
    rows = _json(["explain", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,64"], capsys)
    assert rows[0]["prompts_beside_s"] == pytest.approx(0.0, abs=1e-12) and rows[1]["prompts_beside_s"] > 0
    assert rows[1]["iteration_s"] == pytest.approx(rows[1]["t_round_s"] + rows[1]["prompts_beside_s"])
    assert (
        _json(["compare", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "8"], capsys)[0]["load"]
        == "concurrency 8"
    )
    assert (
        main(["schedule", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,16,64,256", "--format", "vllm"])
        == 0
    )
    out = capsys.readouterr()
    ranges = json.loads(out.out)["num_speculative_tokens_per_batch_size"]
    top = int(re.search(r"scheduled up to batch (\d+)", out.err).group(1))  # the engine's, or what fits
    assert 256 < top <= 1024  # vLLM's 1024 sequences on an H100, as many as fit with the draft
    assert ranges[0][0] == 1 and ranges[-1][1] == top and all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:]))


def test_explain_at_a_load_says_which_batch_its_breakdown_is_at(capsys):
    # explain --rate 8 --gamma 4 printed a decode batch of 8.8 speculating above and a batch of 9.8 in the breakdown,
    # captioned "the sequences in a round, averaged over rounds, where the table above weights them by time": weighting
    # by time weighs the longer rounds of larger batches more, so that mean would be the larger, not the smaller.  The
    # breakdown's batch is the one a decoding request sees, itself included (--json batch_a_request_sees), which a
    # request-free engine mean never reaches; the caption now says so.
    argv = ["--timing", "roofline", "--alpha", "0.8", "--gamma", "4", "--rate", "8"]
    (row,) = _json(["explain", *argv], capsys)
    spec = row["at_load"]["spec"]
    assert row["batch"] == pytest.approx(spec["batch_a_request_sees"], rel=1e-12)
    assert row["batch"] > spec["mean_batch"] + 0.5  # what the caption must account for
    assert main(["explain", *argv]) == 0
    out = capsys.readouterr().out
    assert "batch: the sequences in the iterations a decoding request runs in, itself included" in out
    assert "averaged over rounds" not in out


def test_a_low_rate_prints_the_output_it_serves_not_zero(capsys):
    # optimal-gamma --rate 0.001 printed "0 / 0" output tok/s beside a speedup of 1.88 (0.001 requests/s x 256 tokens
    # is 0.256 tok/s, rounded to whole tokens); under 100 it now keeps three figures, and whole tokens above.
    argv = ["optimal-gamma", "--timing", "roofline", "--alpha", "0.8", "--rate", "0.001,10"]
    rows = _json(argv, capsys)
    assert main(argv) == 0
    out = capsys.readouterr().out
    low, high = (next(line for line in out.splitlines() if line.startswith(f"rate {r}/s")) for r in ("0.001", "10"))
    served = [r["plain"]["output_tokens_per_s"] for r in rows]
    assert served[0] == pytest.approx(0.256) and f" {served[0]:.3g} / " in low, low
    assert f" {served[1]:,.0f} / " in high, high


@pytest.mark.parametrize(
    "flags, search, said",
    [
        (
            ["--draft", "dspark", "--alpha", "0.7"],
            ["--gamma-max", "12"],
            "drafts at most 7 tokens a round: gamma is not",
        ),
        (
            ["--acceptance", "0.8,0.6"],
            [],
            "note: acceptance is measured for 2 positions: gamma is not searched past them",
        ),
    ],
)
def test_serve_sim_and_serve_sweep_say_what_stopped_their_gamma_search_as_optimal_gamma_does(
    flags, search, said, capsys
):
    # serve-sim --draft dspark --gamma-max 12 searched 0..7 (the drafter's block) and said only
    # "per-batch optimal gamma (0..7)", where optimal-gamma names the block; it now gives the same note.
    argv = ["--timing", "roofline", "--concurrency", "2", "--input-len", "100", "--output-len", "32", *flags]
    run = ["--requests", "8", "--runs", "1"]

    def printed():
        out, err = capsys.readouterr()
        return out + err

    assert main(["optimal-gamma", *argv, *search]) == 0
    assert said in printed()
    assert main(["serve-sim", *argv, *search, *run]) == 0
    assert said in printed()
    assert main(["serve-sim", *argv, *run, "--gamma", "2"]) == 0
    assert said not in printed()  # a fixed gamma searched nothing
    # serve-sweep searched the same gamma silently (helper Review's finding): the same note, at the sweep's lengths
    assert main(["serve-sweep", *argv, *search, "--requests", "8"]) == 0
    assert said in printed()
    assert main(["serve-sweep", *argv, "--requests", "8", "--gamma", "2"]) == 0
    assert said not in printed()


def _made_answer(value, loads, batches, tpot=None):
    """A load answer made by hand for :func:`~specsim.speculation.schedule.load_schedule`: ``value`` (gamma rows 0..,
    load columns) its objective and, unless ``tpot`` gives them, its TPOT speedups, each load at its decode batch of
    ``batches``, and every arm serving each load."""
    from types import SimpleNamespace

    return SimpleNamespace(
        loads=loads,
        state=SimpleNamespace(gamma=np.arange(len(value))[:, None]),
        objective=lambda: value,
        scores=lambda: value,  # (every engine holds a request: no row scored -inf)
        tpot_speedup=lambda: value if tpot is None else tpot,
        key_batch=lambda j: batches[j],
        past_capacity=lambda i, j: [],
    )


def test_a_schedule_at_loads_never_rises_with_the_decode_batch_even_where_the_loads_bests_do():
    from specsim.speculation.schedule import load_schedule

    # Three loads whose own best gammas are 4, 3 and 4: the last held near the middle one's decode batch by its KV cache.
    value = np.array([[1.0, 1.0, 1.0], [1.5, 1.30, 1.50], [1.7, 1.38, 1.70], [1.8, 1.41, 1.76], [1.85, 1.39, 1.78]])
    answer = _made_answer(value, [1, 16, 64], [1.0, 15.6, 18.6])
    assert value.argmax(axis=0).tolist() == [4, 3, 4]  # the bests rise from the second load to the third
    ranges = load_schedule(answer, 64, rtol=0.0)
    assert [(r.start_batch, r.end_batch, r.gamma) for r in ranges] == [(1, 8, 4), (9, 64, 3)]
    # gamma 3 at the third load costs it 1 - 1.76 / 1.78; gamma 4 at the second would cost 1 - 1.39 / 1.41, more
    assert ranges[1].shortfall == pytest.approx(1 - 1.76 / 1.78)
    assert ranges[1].min_speedup == pytest.approx(1.41) and ranges[1].max_speedup == pytest.approx(1.76)


def test_a_schedule_at_loads_ends_at_its_max_batch_where_a_load_runs_past_it():
    from specsim.speculation.schedule import load_schedule

    # schedule --concurrency 1,8,64 --max-batch 16 wrote [5, 35, 3] for vLLM: a range ran halfway to the next load's decode
    # batch (62) past the 16 the schedule was asked to end at; past capacity, two loads at decode batch 432 gave 1-437
    # where what fits with the draft was 341.
    value = np.array([[1.0, 1.0, 1.0], [1.6, 1.5, 1.2], [1.8, 1.55, 1.1]])
    answer = _made_answer(value, [1, 8, 64], [1.0, 7.8, 62.0])
    ranges = load_schedule(answer, 16, rtol=0.0)
    assert ranges[-1].end_batch == 16
    assert all(r.start_batch <= r.end_batch <= 16 for r in ranges)


def test_a_schedule_at_loads_speculates_where_the_load_answer_does_by_what_it_maximises():
    from specsim.speculation.schedule import load_schedule

    # schedule --concurrency 1,64 --alpha 0.5 scheduled "off" at 64 users, where optimal-gamma picked gamma 1: its
    # output tok/s +6.5% (a shorter TTFT), its TPOT speedup 0.996.  The schedule gated on the TPOT speedup, the load
    # answer on its objective; both now weigh the objective, and --min-gain applies to it.
    value = np.array([[1.0, 1.0], [1.23, 1.065], [1.25, 1.05]])
    tpot = np.array([[1.0, 1.0], [1.24, 0.996], [1.25, 0.97]])
    answer = _made_answer(value, [1, 64], [1.0, 62.9], tpot)
    ranges = load_schedule(answer, 341, rtol=0.01)
    assert [(r.start_batch, r.end_batch, r.gamma) for r in ranges] == [(1, 31, 2), (32, 341, 1)]
    assert ranges[1].min_speedup == pytest.approx(0.996)  # the TPOT speedup the table prints, as optimal-gamma's
    off = load_schedule(answer, 341, min_gain=1.1, rtol=0.01)
    assert [(r.start_batch, r.end_batch, r.gamma) for r in off] == [(1, 31, 2), (32, 341, 0)]


def test_a_schedule_at_a_load_checks_memory_at_the_loads_lengths_not_the_batch_views_default(capsys):
    from specsim.answers import deployment_capacity

    argv = ["schedule", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,16,64"]
    s = _json(argv + ["--input-len", "16000", "--output-len", "2000"], capsys)
    fits = int(
        deployment_capacity(DEP, 17000, None, None).max_batch_with_draft
    )  # 16000 in + 2000 / 2 out; vLLM's own share
    assert fits < 64 and s["max_batch"]["value"] == fits and "17000 tokens each" in s["max_batch"]["from"]
    assert s["ranges"][-1]["end_batch"] == fits
    gammas = [r["gamma"] for r in s["ranges"]]
    assert gammas == sorted(gammas, reverse=True)


def test_a_schedule_at_a_load_solves_its_loads_at_the_memory_share_it_is_given(capsys):
    from specsim.speculation.schedule import load_schedule

    argv = ["schedule", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,64,256", "--max-batch", "512"]
    s = _json(argv + ["--memory-util", "0.5"], capsys)
    loads = load_answer(DEP, 0.8, "", "concurrency", [1, 64, 256], 1000, 256, gamma_max=16, memory_utilization=0.5)
    assert loads.rows[-1]["spec"]["limited_by"] == "kv cache"  # half the memory holds the 256 users below their number
    assert [(r["start_batch"], r["end_batch"], r["gamma"]) for r in s["ranges"]] == [
        (r.start_batch, r.end_batch, r.gamma) for r in load_schedule(loads, 512)
    ]


def test_the_library_refuses_a_load_given_twice_as_the_command_does():
    # optimal-gamma --concurrency 8,8 is refused; load_answer answered 8 twice.
    for kind, loads in (("concurrency", [8, 8]), ("rate", [2.0, 2]), ("batch", [4, 16, 4])):
        with pytest.raises(ValueError, match=f"^{kind} [0-9.]+ is given more than once: give each load once$"):
            load_answer(DEP, 0.8, "", kind, loads, 1000, 256)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--concurrency", "8", "--batch", "1,2"],
            "--batch is the decode-batch view; at --concurrency or --rate the load",
        ),
        (["--concurrency", "8", "--context", "500"], "--context is the decode-batch view"),
        (
            ["--input-len", "512"],
            "--input-len describes the requests of a load: give --concurrency or --rate with them",
        ),
        (["--concurrency", "8", "--rate", "2"], "argument --rate: not allowed with argument --concurrency"),
        (["--concurrency", "0"], "concurrency must be an integer in [1, 65536], got 0"),
        (
            ["--concurrency", "8", "--output-len", "1"],
            "output-len must be an integer in [2, 4194304] (TPOT is timed over the tokens after the first), got 1",
        ),
        (["--concurrency", "8", "--tree", "topk:2,depth:3,tokens:6"], "--tree is searched per decode batch"),
    ],
)
def test_a_load_beside_the_batch_views_flags_is_refused_in_one_line(argv, message, capsys):
    assert main(["optimal-gamma", "--timing", "roofline"] + argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_schedules_contexts_table_is_the_decode_batch_view_and_is_refused_at_a_load(capsys):
    # schedule --concurrency 8 --contexts 512,8192 printed the load's schedule and, under it, the decode-batch view's
    # (batch, context) table, unmarked, where --context and --max-context beside a load are refused.
    argv = ["schedule", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "8", "--contexts", "512,8192"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--contexts is the decode-batch view; at --concurrency or --rate" in err[0], err


@pytest.mark.parametrize("command", ["optimal-gamma", "compare", "explain", "schedule"])
def test_requests_past_the_models_positions_are_refused_at_a_load_as_in_the_batch_view(command, capsys):
    argv = [command, "--timing", "roofline", "--alpha", "0.8", "--concurrency", "8"]
    assert main(argv + ["--input-len", "131000", "--output-len", "100"]) == 2  # llama-3.1-8b: 131,072 positions
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "grows to 131,100 tokens" in err[0] and "--input-len and --output-len" in err[0], err
    assert main(argv + ["--input-len", "130000", "--output-len", "100", "--json"]) == 0
    capsys.readouterr()


def test_serve_sim_replays_a_benchmarks_closed_loop_with_its_lengths(capsys):
    s = _json(
        [
            "serve-sim",
            "--timing",
            "roofline",
            "--concurrency",
            "8",
            "--input-len",
            "300",
            "--output-len",
            "64",
            "--requests",
            "64",
            "--runs",
            "1",
            "--alpha",
            "0.8",
        ],
        capsys,
    )
    assert any("every request 300 in, 64 out" in line for line in s["provenance"])
    assert main(["serve-sim", "--concurrency", "8", "--input-len", "300", "--workload", "chat"]) == 2
    assert "--input-len and --output-len give every request the same lengths" in capsys.readouterr().err


@pytest.mark.parametrize(
    "hardware, offline, expected",
    [
        ("a100-sxm-80gb", False, (256, 2048)),  # an A100 is kept out of the larger defaults whatever its memory
        ("h100-sxm", False, (1024, 8192)),
        ("h100-sxm", True, (1024, 16384)),
        ("l4", False, (256, 2048)),
        ("l4", True, (256, 8192)),
    ],
)
def test_vllms_own_limits_on_the_gpu_are_the_default(hardware, offline, expected):
    """vllm/engine/arg_utils.py get_batch_defaults (0.24.0): 70 GiB or more and not an A100 gets the larger limits;
    both arms alike, the budget counting the decoding tokens."""
    from specsim.describe.hardware import load_hardware
    from specsim.engines import default_limits, get_engine

    own = default_limits(get_engine("vllm@0.24.0"), load_hardware(hardware), offline)
    assert (own.max_num_seqs, own.max_batched_tokens) == expected and "get_batch_defaults" in own.where
    assert own.spec_max_num_seqs is None and not own.prefill_apart


@pytest.mark.parametrize(
    "engine, hardware, offline, expected",
    [
        ("vllm@0.27.0", "b200", False, (1024, 8192)),  # no 160 GiB tier before 0.28.0
        ("vllm@0.28.0", "b200", False, (1024, 16384)),  # get_batch_defaults 0.28.0 L2582-2591
        ("vllm@0.28.0", "b200", True, (1024, 16384)),
        ("vllm@latest", "mi355x", False, (1024, 16384)),
        ("vllm@latest", "h200", False, (1024, 8192)),  # 140 GiB: the 70 GiB tier
        ("vllm@latest", "a100-sxm-80gb", False, (256, 2048)),
    ],
)
def test_vllm_from_028_gives_gpus_of_160_gib_the_largest_defaults(engine, hardware, offline, expected):
    """vllm/engine/arg_utils.py get_batch_defaults from 0.28.0 (read in every x.y.0 wheel to 0.34.0): a GPU of 160 GiB
    or more takes 1024 sequences and 16,384 tokens, the server too, where specsim gave B200, B300 and MI300X-class GPUs
    the 70 GiB tier's 8,192 for vllm@latest."""
    from specsim.describe.hardware import load_hardware
    from specsim.engines import default_limits, get_engine

    own = default_limits(get_engine(engine), load_hardware(hardware), offline)
    assert (own.max_num_seqs, own.max_batched_tokens) == expected and "get_batch_defaults" in own.where
    assert ("160 GiB or more" in own.where) == (expected[1] == 16384 and not (offline and engine < "vllm@0.28"))


def test_vllm_from_033_keeps_a_gb10_on_the_smaller_defaults():
    """A GB10 (compute capability 12.1, 128 GB) is kept on the smaller tier from 0.33.0 (is_gb10, get_batch_defaults
    0.33.0 L2963, L2984-2988); 0.32.0 gave it the 70 GiB tier's."""
    import dataclasses

    from specsim.describe.hardware import load_hardware
    from specsim.engines import default_limits, get_engine

    gb10 = dataclasses.replace(
        load_hardware("rtx-pro-6000"), name="gb10", compute_capability="12.1", memory_bytes=128e9
    )
    limits = [default_limits(get_engine(e), gb10) for e in ("vllm@0.32.0", "vllm@0.33.0")]
    assert [(o.max_num_seqs, o.max_batched_tokens) for o in limits] == [(1024, 8192), (256, 2048)]


@pytest.mark.parametrize(
    "engine, hardware, tokens",
    [
        # SGLang's chunked_prefill_size by the GPU's memory, per release (the wheels' server_args.py / memory_hook.py)
        ("sglang@0.4.10", "rtx-3090", 2048),  # under 35 GiB
        ("sglang@0.4.10", "l40s", 8192),  # 0.4.10 has no 35-60 GiB row
        ("sglang@0.5.12", "l40s", 4096),
        ("sglang@0.5.12", "rtx-3090", 2048),
        ("sglang", "rtx-3090", 4096),  # 0.5.23: the 20-35 GiB row is 4096 from 0.5.20
        ("sglang", "l4", 4096),
        ("sglang", "h100-sxm", 8192),
        ("sglang", "h200", 8192),
        ("sglang", "b200", 16384),
        ("sglang@0.5.12", "mi300x", 16384),
    ],
)
def test_sglangs_own_limits_follow_its_gpu_memory_rule_and_speculation_caps_running_requests(engine, hardware, tokens):
    from specsim.describe.hardware import load_hardware
    from specsim.engines import default_limits, get_engine
    from specsim.serving.steady import engine_limits

    own = default_limits(get_engine(engine), load_hardware(hardware))
    assert own.max_batched_tokens == tokens and f"chunked_prefill_size {tokens}" in own.where
    assert (own.max_num_seqs, own.spec_max_num_seqs, own.prefill_apart) == (2048, 48, True)
    limits, _ = engine_limits(get_engine(engine), load_hardware(hardware))
    assert limits.seqs([False, True]).tolist() == [2048, 48]
    assert limits.prefill_budget(48, 3) == tokens  # decoding runs in its own batches
    given, where = engine_limits(get_engine(engine), load_hardware(hardware), max_num_seqs=64)
    assert given.seqs([False, True]).tolist() == [64, 64]  # --max-num-seqs sets both arms
    # Where one limit is given, the clause says so before the engine's own, whose text names its max_running_requests
    # too ("engine limits: max_num_seqs 64, ... (SGLang 0.5.23's defaults ...: max_running_requests 48 speculating")
    # read as if 48 still held).
    assert (
        where.startswith("max_num_seqs as given, the budget at SGLang ") and f"chunked_prefill_size {tokens}" in where
    )
    given, where = engine_limits(get_engine(engine), load_hardware(hardware), max_batched_tokens=4096)
    assert where.startswith("max_batched_tokens as given, max_num_seqs at SGLang ")


def test_trtllms_own_limits_are_its_servers_and_count_the_decoding_tokens():
    from specsim.describe.hardware import load_hardware
    from specsim.engines import default_limits, get_engine
    from specsim.serving.steady import engine_limits

    own = default_limits(get_engine("trtllm"), load_hardware("h100-sxm"))
    assert (own.max_num_seqs, own.max_batched_tokens, own.spec_max_num_seqs) == (2048, 8192, None)
    limits, where = engine_limits(get_engine("trtllm"), load_hardware("b200"))
    assert limits.prefill_budget(64, 3) == 8192 - 64 * 4 and "trtllm-serve" in where


def test_a_speculating_sglang_server_past_48_users_queues_them():
    """At 64 users the plain SGLang server holds all of them; the speculating one holds 48 and queues 16, which its
    TTFT carries, and the simulator admits the same."""
    from specsim.serving.simulator import StepTable, simulate
    from specsim.serving.steady import engine_limits, steady_state
    from specsim.serving.workloads import Requests

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="sglang")
    limits, _ = engine_limits(dep.engine, dep.hardware)
    s = steady_state(dep, 0.7, [0, 3], [64], 1000, 256, limits=limits)
    assert s.in_engine[:, 0].tolist() == [64, 48]
    assert s.limited_by[1, 0] == "max_num_seqs" and s.limited_by[0, 0] == ""
    table = StepTable(dep, limits.most_seqs, 1300, 3, limits.max_batched_tokens, 0.7)
    run = simulate(Requests(np.full(256, 1000), np.full(256, 256), None), table, limits, 0.7, 3, concurrency=64)
    busy = run.batch_time_s  # seconds spent at each number of running sequences
    assert busy[48] > 0 and busy[49:].sum() == 0


def test_a_load_answer_takes_the_engines_limits_on_its_gpu_and_names_where_they_come_from(capsys):
    dep = Deployment.build("a100-sxm-80gb", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.24.0")
    answer = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 64], 1000, 256)
    assert (answer.limits.max_num_seqs, answer.limits.max_batched_tokens) == (256, 2048)
    base = ["optimal-gamma", "--hardware", "a100-sxm-80gb", "--engine", "vllm@0.24.0", "--concurrency", "1,64"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert (
        "max_num_seqs 256, max_batched_tokens 2048 (vLLM's defaults (as read at 0.24.0) for an OpenAI server on an A100 "
        "or a GPU under 70 GiB: vllm/engine/arg_utils.py get_batch_defaults L2414-2423;" in out
    )
    # Cited at the wheel of the release asked for, in the function that held them then (0.10's was another).
    old = ["optimal-gamma", "--hardware", "a100-sxm-80gb", "--engine", "vllm@0.10.1", "--draft", "eagle3"]
    assert main([*old, "--concurrency", "64"]) == 0
    assert (
        "(as read at 0.10.0) for an OpenAI server on an A100 or a GPU under 70 GiB: vllm/engine/arg_utils.py "
        "EngineArgs._set_default_args_v1 L1594-1603;" in capsys.readouterr().out
    )
    assert main(base + ["--max-num-seqs", "64", "--max-batched-tokens", "4096"]) == 0
    out = capsys.readouterr().out
    assert "max_num_seqs 64, max_batched_tokens 4096;" in out and "defaults for" not in out


def test_a_load_where_only_the_speculating_engine_queues_says_so(capsys):
    """SGLang's speculating server holds 48 of 64 users (its --max-running-requests default), the plain one all: the
    answer names the queue; with --max-num-seqs 256 neither queues and nothing is said."""
    base = ["optimal-gamma", "--engine", "sglang", "--draft", "eagle3", "--alpha", "0.8", "--concurrency", "1,64"]
    assert main(base) == 0
    out, err = capsys.readouterr()
    assert "(prompt tokens only, prefill batches apart)" in out and "chunked prefill in batches of its own" in out
    assert "at concurrency 64 the speculating engine holds 48 requests (max_num_seqs)" in err and "16 queue" in err
    assert "at concurrency 1 " not in err
    assert main(base + ["--max-num-seqs", "256"]) == 0
    assert "the speculating engine holds" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [["speedup", "--gamma", "3"], ["explain", "--gamma", "3"]])
def test_every_command_whose_note_asks_for_memory_util_takes_it(command, capsys):
    # At 64 users of 8,000-token prompts the KV cache holds fewer than the load: the note names --memory-util, and the
    # command takes it, the answer then held by the cache the setting leaves.
    argv = [*command, "--timing", "roofline", "--concurrency", "64", "--input-len", "8000", "--output-len", "384"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "the KV cache holds fewer users than some loads bring" in err and "--memory-util to give" in err
    roomy, tight = (_json(argv + ["--memory-util", u], capsys) for u in ("0.9", "0.4"))
    assert roomy != tight


def test_where_no_gamma_pays_because_the_drafter_leaves_fewer_requests_held_the_recommendation_says_so(capsys):
    # At 0.257 of an H100's memory (2.3 GB of it vLLM's start-up) and 5,000-token requests, the cache beside
    # the draft holds 2 requests where it holds 8 without: at 8 users no gamma gives more output, and the
    # recommendation gives the reason and the cost.
    argv = ["optimal-gamma", "--timing", "roofline", "--memory-util", "0.257", "--concurrency", "2,8"]
    rows = _json(argv + ["--input-len", "1000", "--output-len", "4000"], capsys)
    low, high = rows
    assert low["recommendation"].startswith("speculate") and low["recommendation"].endswith(f"={low['gamma']}")
    assert high["gamma"] == 0 and high["recommendation"].startswith("do not speculate (at gamma ")
    held = re.search(
        r"its KV cache holds (\d+) requests against (\d+) without the drafter: ([-+]\d+)%", high["recommendation"]
    )
    assert held and int(held[1]) < int(held[2]) == 8 and int(held[3]) < 0
    # At a Poisson rate the speculating engine, held to fewer requests, falls behind where plain decoding keeps up: the
    # reason says that (a queue's output is not a figure to give), where the "capacity" label had left it unsaid.
    rate = ["optimal-gamma", "--timing", "roofline", "--memory-util", "0.257", "--alpha", "0.6", "--rate", "0.1"]
    (slow,) = _json(rate + ["--input-len", "1000", "--output-len", "4000"], capsys)
    assert slow["gamma"] == 0 and re.fullmatch(
        r"do not speculate \(at gamma \d+ its engine holds \d+ requests against \d+ without the drafter: it falls "
        r"behind the arrivals\)",
        slow["recommendation"],
    ), slow["recommendation"]


def test_a_gamma_recommended_where_the_drafter_leaves_fewer_requests_held_says_what_it_gains_and_costs(capsys):
    # A 70B target on two H100s at 0.975 of their memory (4.3 GB of each vLLM's start-up), 8,000-token prompts, alpha
    # 0.45: beside the draft the cache holds 4 users against 6.  The best gamma gives about 1% more output, and each
    # request waits far longer for its first token: the recommendation gives both, which a user serving chat weighs,
    # and the table does not repeat the limit.  (1% is inside the model's measured error: too close to call.)
    argv = ["optimal-gamma", "--timing", "roofline", "--target", "llama-3.1-70b", "--tp", "2", "--alpha", "0.45"]
    argv += ["--memory-util", "0.975"]
    argv += ["--concurrency", "2,8", "--input-len", "8000", "--output-len", "512"]
    low, high = _json(argv, capsys)
    assert low["recommendation"] == f"speculate with gamma={low['gamma']}"
    said = re.fullmatch(
        r"too close to call: gamma=(\d+) gives ([-+][\d.]+)% output tok/s, inside specsim's measured error of "
        r"±[\d.]+% \(corpus, uncalibrated\); measure both arms \(specsim bench-plan\) \(its KV cache holds (\d+) "
        r"requests against (\d+) without the drafter: TTFT \+(\d+)%\)",
        high["recommendation"],
    )
    assert said and int(said[1]) == high["gamma"] > 0, high["recommendation"]
    assert high["verdict"] == "too close to call"
    assert int(said[3]) == high["spec"]["in_engine"] < int(said[4]) == high["plain"]["in_engine"]
    assert float(said[2]) == pytest.approx(100 * (high["throughput_ratio"] - 1), abs=0.051)
    assert int(said[5]) == round(100 * (high["spec"]["ttft_s"] / high["plain"]["ttft_s"] - 1))
    assert main(argv[:-1] + ["512"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("concurrency 8"))
    assert "without the drafter" in row and "limited by" not in row


def test_a_gamma_asked_for_that_loses_to_plain_decoding_says_how_and_not_to_speculate(capsys):
    # alpha 0.3 at gamma 5: every load loses.  At 2 req/s the TPOT is slower; at 18 req/s the speculating engine falls
    # behind arrivals plain decoding keeps up with; in a closed loop the output per second falls.
    base = ["speedup", "--timing", "roofline", "--alpha", "0.3", "--gamma", "5"]
    slow, behind = _json(base + ["--rate", "2,18"], capsys)
    assert slow["speedup_tpot"] < 1 and slow["recommendation"] == (
        f"gamma 5 loses: TPOT speedup {slow['speedup_tpot']:.2f}x; do not speculate at this load"
    )
    assert behind["spec"]["saturated"] and not behind["plain"]["saturated"]
    assert behind["recommendation"].startswith("gamma 5 loses: it falls behind the arrivals")
    (loop,) = _json(base + ["--concurrency", "16"], capsys)
    assert loop["throughput_ratio"] < 1 and loop["recommendation"].startswith(
        f"gamma 5 loses: {100 * (loop['throughput_ratio'] - 1):+.0f}% output tok/s; do not speculate"
    )
    (pays,) = _json(["speedup", "--timing", "roofline", "--alpha", "0.8", "--gamma", "3", "--rate", "2"], capsys)
    assert pays["speedup_tpot"] > 1 and pays["recommendation"] == "gamma 3"


def test_a_schedule_at_loads_in_json_carries_the_loads_table_and_serve_sim_its_limits_and_cache(capsys):
    # What the text prints first (the loads, the engine's limits; serve-sim's KV capacity) is in the JSON too.
    argv = ["schedule", "--timing", "roofline", "--alpha", "0.8", "--concurrency", "1,16"]
    s = _json(argv + ["--input-len", "1000", "--output-len", "200"], capsys)
    assert [r["concurrency"] for r in s["loads"]] == [1.0, 16.0] and s["engine_limits"].startswith("max_num_seqs ")
    sim = _json(["serve-sim", "--timing", "roofline", "--rate", "2", "--requests", "40", "--runs", "1"], capsys)
    kv = sim["kv_capacity_tokens"]
    assert kv["plain"] > kv["speculating"] > 0 and sim["engine_limits"].startswith("max_num_seqs ")


def test_a_gamma_chosen_on_output_with_a_longer_tpot_says_where_its_gain_comes_from(capsys):
    """SGLang with an EAGLE-3 head at 32 users: gamma 3 gives more output tok/s than plain decoding (a shorter TTFT:
    269 ms against 52 ms) at a TPOT 2% longer, speedup 0.980.  The recommendation said only 'speculate with gamma=3'
    beside that speedup; it says the gain, its source and the TPOT given up.  The speedup column is plain TPOT over
    speculative TPOT, as its footnote says.  At 27 users since fa9a86b's untiled verification ratio (gamma 4, +7.7%
    output tok/s at a TPOT 1.1% longer): at 32 the gain, +4.0%, is now inside the corpus's error, too close to call."""
    rows = _json(["optimal-gamma", "--concurrency", "1,27", "--engine", "sglang@0.5", "--draft", "eagle3"], capsys)
    one, row = rows
    plain, spec = row["plain"], row["spec"]
    assert row["speedup_tpot"] == pytest.approx(plain["tpot_s"] / spec["tpot_s"]) and row["speedup_tpot"] < 1
    assert spec["ttft_s"] < plain["ttft_s"] and spec["output_tokens_per_s"] > plain["output_tokens_per_s"]
    gain = spec["output_tokens_per_s"] / plain["output_tokens_per_s"] - 1
    longer = spec["tpot_s"] / plain["tpot_s"] - 1
    assert row["recommendation"] == (
        f"speculate with gamma={row['gamma']} ({gain:+.1%} output tok/s from a shorter TTFT; TPOT {longer:+.1%})"
    )
    assert one["speedup_tpot"] > 1 and one["recommendation"] == f"speculate with gamma={one['gamma']}"


def test_serve_sim_says_the_users_its_engine_queues_as_optimal_gamma_names_the_limit(capsys):
    """64 users against max_num_seqs 16: the simulator queued 48 of them (TTFT p50 6.4 s) and said nothing of it, where
    optimal-gamma marks the same load 'limited by max_num_seqs'.  Both say it in the same words, text and JSON."""
    base = ["--timing", "roofline", "--alpha", "0.8", "--concurrency", "64", "--max-num-seqs", "16"]
    base += ["--input-len", "1000", "--output-len", "256"]
    (row,) = _json(["optimal-gamma", *base], capsys)
    assert row["spec"]["limited_by"] == "max_num_seqs"
    sim = _json(["serve-sim", *base, "--requests", "200", "--runs", "1"], capsys)
    said = "48 of the 64 users wait in the queue beside the 16 the engine runs (limited by max_num_seqs)"
    for arm in ("off", "on"):
        assert sim["queued"][arm] == {
            "users": 64,
            "running": 16,
            "waiting": 48,
            "limited_by": "max_num_seqs",
            "said": said,
        }
    assert main(["serve-sim", *base, "--requests", "200", "--runs", "1"]) == 0
    assert f"queue: {said}, speculation off and on" in capsys.readouterr().out
    assert main(["optimal-gamma", *base]) == 0
    assert "(limited by max_num_seqs)" in capsys.readouterr().out
    roomy = _json(["serve-sim", *base[:-6], "--requests", "200", "--runs", "1"], capsys)  # 64 users, no limit
    assert roomy["queued"] == {"off": None, "on": None}


def test_a_rate_past_plain_decodings_capacity_prints_the_speculating_arms_ttft(capsys):
    # optimal-gamma --rate 30 --draft eagle3 --alpha 0.8: plain decoding is past capacity, the EAGLE-3 head keeps up
    # (its TTFT 110 ms in --json); the table printed "past capacity" for the pair, hiding the arm that has a TTFT.
    argv = ["optimal-gamma", "--rate", "30", "--draft", "eagle3", "--alpha", "0.8"]
    [row] = _json(argv, capsys)
    assert row["plain"]["ttft_s"] is None and row["spec"]["ttft_s"] is not None  # the case this test is about
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("rate 30/s"))
    assert f"past capacity / {row['spec']['ttft_s'] * 1e3:.1f}" in line, line


def test_past_capacity_a_long_simulation_comes_to_the_steady_states_answer(capsys):
    """Chat at 28 requests/s on the default deployment is past capacity with and without speculation.  The steady state
    answers the saturated limit.  On vLLM 0.33.0, which this test names (0.92 of the device; a draft model's passes
    without CUDA graphs), speculating at gamma 1 gives 7.4% less output (its engine holds fewer requests); serve-sim
    (seed 0) gives -5.3% at 1,000 requests, -5.9% at 4,000, -7.3% at 16,000 and -7.6% at 64,000.  Held: 64,000 requests
    within one point of the steady state's figure (both runs are seeded: no false failures).  On vllm@latest (0.34's
    cache) the steady state gives -1.7% at gamma 2 and serve-sim +9.1% at 1,000 requests (a transient, the queue still
    filling), +3.7%, +0.1% and -0.6%: 1.1 points apart at 64,000 (measured on 2026-12-06 at aca47b3)."""
    engine = ["--engine", "vllm@0.33.0"]
    [row] = _json(["optimal-gamma", "--rate", "28", "--workload", "chat", "--alpha", "0.8", *engine], capsys)
    assert row["gamma"] == 0 and "past capacity" not in row["recommendation"]
    steady = float(re.search(r"([+-]\d+\.\d)% output tok/s", row["recommendation"]).group(1))
    argv = ["serve-sim", "--rate", "28", "--workload", "chat", "--alpha", "0.8", "--requests", "64000", "--runs", "1"]
    argv += engine
    sim = _json(argv, capsys)
    assert sim["off"]["past_capacity"] and sim["on"]["past_capacity"]
    gain = 100 * (sim["on"]["output_tokens_per_s"] / sim["off"]["output_tokens_per_s"] - 1)
    assert gain == pytest.approx(steady, abs=1.0), (gain, steady)


def test_explain_at_a_load_names_its_speedups_as_optimal_gamma_does(capsys):
    """explain --json at a load: ``speedup_tpot`` is the load's (optimal-gamma's, the text's column), the round's speedup
    with no prompts beside it has its own name, and the load's figures ride along (``at_load``)."""
    argv = ["--concurrency", "8,64,512", "--draft", "eagle3", "--alpha", "0.3"]  # alpha 0.3: off at 512
    explained, answered = _json(["explain", *argv], capsys), _json(["optimal-gamma", *argv], capsys)
    assert [a["gamma"] > 0 for a in answered] == [True, True, False]
    for e, a in zip(explained, answered):
        assert e["speedup_tpot"] == a["speedup_tpot"] and e["at_load"]["spec"] == a["spec"]
        assert e["speedup_without_prompts"] > 0 and "speedup" not in e
        assert "decode_batch" not in a["spec"] and a["spec"]["batch_a_request_sees"] > 0


def test_the_library_at_a_load_where_memory_binds_is_the_commands(capsys):
    """At 8,000-token prompts and 512 users the KV cache binds: the library's answer with the engine's own memory share
    (memory_utilization None, as docs/library.md now shows it) is the command's; library.md once passed 0.9 where the
    engine's is 0.92, equal only where memory did not bind."""
    from specsim.answers.acceptance import resolve_acceptance

    lengths = request_lengths(8000)
    answer = load_answer(
        DEP,
        *resolve_acceptance(DEP, context=lengths.context_tokens),
        "concurrency",
        [64, 512],
        lengths.input_tokens,
        lengths.output_tokens,
        gamma_max=16,
        lengths=lengths.description,
    )
    rows = _json(["optimal-gamma", "--timing", "roofline", "--concurrency", "64,512", "--input-len", "8000"], capsys)
    assert [r["speedup_tpot"] for r in rows] == pytest.approx([r["speedup_tpot"] for r in answer.rows], rel=1e-12)
    assert rows[1]["spec"]["limited_by"] == "kv cache"  # what binds at 512 users (and at 64) is the cache


def test_a_schedule_past_its_heaviest_loads_decode_batch_says_the_batches_no_load_informs(capsys):
    # One light load: its gamma is carried to every batch the engine could run, where the decode-batch schedule takes
    # a smaller one; the note names the batches, the load and the gamma the decode-batch view gives there.
    assert main(["schedule", "--concurrency", "4", "--format", "vllm"]) == 0
    err = capsys.readouterr().err
    past = [line for line in err.splitlines() if "past the batch the heaviest load's rounds run at" in line]
    assert len(past) == 1, err
    m = re.search(
        r"batch sizes (\d+)-(\d+) are past .* \(([\d.]+), concurrency 4; .*\): they carry its gamma (\d+)", past[0]
    )
    assert m and int(m[1]) == int(np.ceil(float(m[3]))) + 1 and int(m[2]) > int(m[1]), past[0]
    there = re.search(r"\(schedule --context (\d+), without --concurrency: gamma (\d+) at batch (\d+)\)", past[0])
    assert there and int(there[2]) != int(m[4]) and there[3] == m[2], past[0]
    # ... which is what that command writes at that batch (its rtol and never-rising rule, at the loads' context).
    assert main(["schedule", "--context", there[1], "--max-batch", there[3], "--format", "json"]) == 0
    ranges = json.loads(capsys.readouterr().out)["ranges"]
    assert ranges[-1]["end_batch"] == int(there[3]) and ranges[-1]["gamma"] == int(there[2])
    # Loads up to what the engine holds leave no batch uninformed where the views differ: no note; nor where the
    # decode-batch schedule at the loads' context carries the same gamma there (16,000-token prompts: 3 to batch 20).
    for loads in (
        ["--concurrency", "4,64,1024"],
        ["--concurrency", "2", "--input-len", "16000", "--output-len", "2000"],
    ):
        assert main(["schedule", "--alpha", "0.8", *loads]) == 0
        assert "heaviest load given" not in capsys.readouterr().err, loads


def test_rtol_at_a_load_takes_the_smallest_gamma_within_it_as_the_decode_batch_view_does(capsys):
    from specsim.answers.load import load_answer

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    best = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [4, 64], 1000, 256)
    near = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [4, 64], 1000, 256, rtol=0.3)
    value, top = best.objective(), best.best
    for j in range(2):
        i = int(near.best[j])
        assert i < int(top[j]) and value[i, j] >= 0.7 * value[top[j], j], j
        assert all(value[k, j] < 0.7 * value[top[j], j] for k in range(i)), j  # the smallest such gamma
    # The command takes --rtol at a load as in the batch view, says so, and refuses what the batch view refuses.
    assert main(["optimal-gamma", "--timing", "roofline", "--concurrency", "4", "--rtol", "0.3"]) == 0
    out = capsys.readouterr().out
    assert ", the smallest within 0.3 of it (--rtol)" in out
    assert f"speculate with gamma={int(near.state.gamma[near.best[0], 0])}" in out
    assert main(["optimal-gamma", "--concurrency", "4", "--rtol", "0.99"]) == 2
    assert "rtol must be in [0, 0.5), got 0.99" in capsys.readouterr().err


def test_a_closed_loop_with_fewer_requests_than_users_is_said_to_be_one_burst(capsys):
    """vllm bench serve's --max-concurrency caps the requests in flight and adds none: 30 requests for 64 users are
    one burst of 30.  serve-sim's load line and its served line say so, and serve-sweep names the concurrencies past
    its requests; a loop with more requests than users says nothing of it."""
    base = ["--timing", "roofline", "--alpha", "0.8", "--input-len", "200", "--output-len", "20", "--runs", "1"]
    assert main(["serve-sim", *base, "--concurrency", "64", "--requests", "30"]) == 0
    out = capsys.readouterr().out
    assert "64 users but 30 requests: a burst of 30" in out
    assert "this run is one burst of 30 requests, not 64 users' load" in out
    assert main(["serve-sim", *base, "--concurrency", "8", "--requests", "30"]) == 0
    assert "burst of" not in capsys.readouterr().out.replace("that burst's wait", "")
    assert main(["serve-sweep", *base, "--concurrency", "4,40,64", "--requests", "30"]) == 0
    assert "40,64 users: 30 requests a run, all sent at once" in capsys.readouterr().out


def test_an_interval_reaching_below_zero_is_said(capsys):
    """Two runs of a burst spread widely and the Student t at one degree of freedom is 12.7: an interval of a
    throughput that reaches below zero is said, with the factor; ten runs of a steady loop are not."""
    base = ["--timing", "roofline", "--alpha", "0.8"]  # the chat workload's lengths: runs of seeds 0 and 1 differ
    assert main(["serve-sim", *base, "--concurrency", "200", "--requests", "100", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    past = [line for line in out.splitlines() if "reaches below zero" in line]
    figures = re.findall(r"output tokens/s\s+([\d,]+) ±([\d,]+)\s+([\d,]+) ±([\d,]+)", out)[0]
    off, off_h, on, on_h = (float(v.replace(",", "")) for v in figures)
    assert bool(past) == (off_h > off or on_h > on)
    assert past and "12.7 times" in past[0]
    assert main(["serve-sim", *base, "--concurrency", "4", "--requests", "100", "--runs", "10"]) == 0
    assert "below zero" not in capsys.readouterr().out
    assert main(["serve-sweep", *base, "--concurrency", "200", "--requests", "100", "--runs", "2"]) == 0
    assert "at 200 users" in next(line for line in capsys.readouterr().out.splitlines() if "below zero" in line)
    # goodput is printed with its interval too: at two runs of 40 requests under a 5 ms TPOT SLO, speculation on
    # meets it 5.33 ±17.95 req/s (speculation off meets it in no run), and the note names it
    slo = ["--concurrency", "4", "--requests", "40", "--runs", "2", "--slo-tpot-ms", "5"]
    assert main(["serve-sim", *base, *slo]) == 0
    out = capsys.readouterr().out
    on, on_h = (float(v) for v in re.findall(r"goodput \(both SLOs met\).* ([\d.]+) ±([\d.]+) req/s", out)[0])
    assert on_h > on
    assert "goodput on" in next(line for line in out.splitlines() if "below zero" in line)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--alpha", "1", "--gamma-max", "4"], "speculate with gamma=4 (at --gamma-max; raise it)"),
        (["--alpha", "0.9", "--draft", "dspark"], "speculate with gamma=7 (the drafter's most)"),
        (["--acceptance", "0.9,0.8,0.7"], "speculate with gamma=3 (at the last measured position)"),
        # --gamma-max at the drafter's block or at the acceptance's last position: raising it moves nothing, so the
        # bound it cannot move is named (both views said "(at --gamma-max; raise it)").
        (["--alpha", "0.9", "--draft", "dspark", "--gamma-max", "7"], "speculate with gamma=7 (the drafter's most)"),
        (
            ["--acceptance", "0.9,0.8,0.7", "--gamma-max", "3"],
            "speculate with gamma=3 (at the last measured position)",
        ),
    ],
)
def test_a_best_gamma_at_the_top_of_the_search_says_which_bound_stopped_it_as_the_batch_view_does(argv, said, capsys):
    # At a load, as per decode batch: a best gamma the search could not go past is no optimum, and says why.
    at_load = _json(["optimal-gamma", "--timing", "roofline", "--concurrency", "1", *argv], capsys)
    assert at_load[0]["recommendation"] == said
    assert main(["optimal-gamma", "--timing", "roofline", "--batch", "1", *argv]) == 0
    assert said.split("=")[1] in capsys.readouterr().out
    below = _json(["optimal-gamma", "--timing", "roofline", "--concurrency", "1", "--alpha", "0.8"], capsys)
    assert "(" not in below[0]["recommendation"]  # below the top: nothing added
    # The note where the drafter or the acceptance stopped the search, the batch view's, at a load too (it was the batch
    # view's alone).
    notes = []
    for view in (["--batch", "1"], ["--concurrency", "1"]):
        assert main(["optimal-gamma", "--timing", "roofline", *view, *argv]) == 0
        notes.append([line for line in capsys.readouterr().out.splitlines() if "is not searched past them" in line])
    assert notes[0] == notes[1] and len(notes[0]) == (0 if "at --gamma-max" in said else 1)


def test_a_rates_notes_concern_only_the_batches_its_answer_used(capsys):
    # The rate view bracketed its bisection with the engine full (a closed loop at the most sequences the KV cache
    # holds, about 400 on h100-sxm), and that evaluation's kernel-data notes were printed beside an answer at a decode batch
    # of 1: optimal-gamma --rate 1e-300 noted 'at batch 222-402 ... the decode-attention data stop at a smaller batch'.
    # A saturated rate is served at the full engine's rate, so there the note stands.
    def notes(rate):
        assert main(["optimal-gamma", "--rate", rate, "--json"]) == 0
        out, err = capsys.readouterr()
        return json.loads(out), [line for line in err.splitlines() if "decode-attention data stop" in line]

    rows, said = notes("1e-300")
    assert max(r[k]["mean_batch"] for r in rows for k in ("plain", "spec")) < 2 and not said, said
    rows, said = notes("1")  # every gamma searched decodes a few sequences (the notes were the same as at 1e-300)
    assert max(r[k]["batch_a_request_sees"] for r in rows for k in ("plain", "spec")) < 10 and not said, said
    rows, said = notes("1e6")  # past capacity: the full engine's rate is the answer
    assert said, said


def test_a_rate_only_plain_decoding_cannot_serve_is_no_speedup_and_says_which_arm_is_past_capacity(capsys):
    """At 30 req/s (EAGLE-3, alpha 0.8) plain decoding is past capacity and speculating keeps up: the table printed
    3.648 (plain's full-engine TPOT over the speculating one's) beside a "(saturated)" flag that spoke of the
    speculating arm only, which was not saturated."""
    argv = ["optimal-gamma", "--rate", "30", "--draft", "eagle3", "--alpha", "0.8"]
    (row,) = _json(argv, capsys)
    assert row["plain"]["saturated"] and not row["spec"]["saturated"] and row["gamma"] > 0
    assert row["past_capacity"] == ["plain"] and row["speedup_tpot"] is None
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("rate 30/s"))
    tpot = f"{row['spec']['tpot_s'] * 1e3:.2f}"
    assert line.split()[3] == "n/a" and "past capacity / " in line and "saturated" not in line
    assert f"plain decoding cannot serve this rate; speculating keeps up at TPOT {tpot} ms" in line
    # where both keep up the ratio stands
    (low,) = _json(["optimal-gamma", "--rate", "2", "--draft", "eagle3", "--alpha", "0.8"], capsys)
    assert low["past_capacity"] == [] and low["speedup_tpot"] > 1


def test_schedule_and_optimal_gamma_at_a_load_say_the_same_of_it(capsys):
    # A review's case: schedule --concurrency 1,64 --alpha 0.5 scheduled "off" at batch 33-341 while optimal-gamma picked
    # gamma 1 at 64 users (too close to call): the schedule gated on the TPOT speedup (0.996), not on what the load
    # answer weighs.  At each load both now speculate or both do not, and say the same of it: the range of gamma 1 over
    # both loads, judged at its least gain (64 users), said "too close to call" over 1 user too, where optimal-gamma
    # says "speculate" (a review); it is now split where the verdict changes.  At alpha 0.45 since fa9a86b's untiled
    # verification ratio: at 0.5 64 users now gain enough to speculate too.
    argv = ["--concurrency", "1,64", "--alpha", "0.45"]
    sched = _json(["schedule", *argv], capsys)
    loads = _json(["optimal-gamma", *argv], capsys)
    for row in loads:
        batch = max(round(row["spec" if row["gamma"] else "plain"]["batch_a_request_sees"]), 1)
        at = next(r for r in sched["ranges"] if r["start_batch"] <= batch <= r["end_batch"])
        assert (at["gamma"] > 0) == (row["gamma"] > 0), (row["load"], at)
        assert at["verdict"] == row["verdict"], (row["load"], at)
    assert [r["verdict"] for r in loads] == ["speculate", "too close to call"]
    assert at["min_objective"] == pytest.approx(row["throughput_ratio"], rel=1e-9)


def test_a_load_answers_echo_says_what_each_gamma_was_picked_on():
    """LoadAnswer's repr showed the TPOT speedup beside each load's gamma, where a closed loop's gamma is picked on
    output tok/s (objective): at concurrency 64 (1000 in, 256 out) it read 'gamma 3 1.217x', the TPOT speedup, where
    the pick is made on +28% output tok/s.  It now gives the gain it was picked on, named, and the TPOT speedup
    labelled beside it; at a rate an arm keeps up with, the TPOT speedup the pick is made on, labelled."""
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    at = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 64], 1000, 256)
    assert at.rows[1]["gamma"] == 3 and at.rows[1]["throughput_ratio"] > at.rows[1]["speedup_tpot"] + 0.05
    for r in at.rows:
        assert f"{r['load']}: gamma {r['gamma']} {r['throughput_ratio']:.3f}x output tok/s " in repr(at)
        assert f"(TPOT {r['speedup_tpot']:.3f}x)" in repr(at)
    at = load_answer(dep, 0.8, "alpha 0.8", "rate", [1], 1000, 256)
    row = at.rows[0]
    assert f"rate 1/s: gamma {row['gamma']} TPOT {row['speedup_tpot']:.3f}x)" in repr(at)


def test_users_that_move_in_step_at_fixed_lengths_are_said_and_lengths_that_vary_part_them(capsys):
    # A closed loop of fixed lengths moves in convoys (steady.closed_population: the prompts one iteration's budget
    # holds, g, finish and arrive together), which sets its TTFT; the answer names the group, in JSON and in a note,
    # and a workload's lengths that vary part them (g = 1, no note).
    argv = ["optimal-gamma", "--timing", "roofline", "--concurrency", "64", "--alpha", "0.7"]
    assert main(argv + ["--input-len", "2000", "--output-len", "300", "--max-batched-tokens", "8192", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert 1 < row["plain"]["users_in_step"] <= 8192 // 2000  # the prompts of 2000 tokens an 8192-token budget holds
    assert main(argv + ["--input-len", "2000", "--output-len", "300", "--max-batched-tokens", "8192"]) == 0
    err = capsys.readouterr().err
    assert f"note: users move in step at concurrency 64 plain {row['plain']['users_in_step']:.0f} at a time" in err
    assert "with every request 2000 in, 300 out, nothing random sets them apart" in err
    assert main(argv + ["--workload", "chat", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["plain"]["users_in_step"] == 1 and row["spec"]["users_in_step"] == 1
    assert main(argv + ["--workload", "chat"]) == 0
    assert "users move in step" not in capsys.readouterr().err


def test_a_rate_past_capacity_only_in_the_long_run_says_a_run_may_keep_up_until_the_engine_fills(capsys):
    """The watch's deployment (H100, Llama-3.1-8B, vLLM 0.26.0, 1,000/256): the full engine with a queue behind it
    preempts and serves 25.29/s, with none queued 27.53/s.  At 25.8/s the answer is past capacity (the long run), and a
    note says a run may keep up until a swing fills the engine, with both rates (the request-level simulator's run of
    20,000 requests stayed below capacity there: TPOT p50 38.1 ms against the long run's 61.56); at 28/s, past both, no
    such note."""
    argv = [
        "optimal-gamma",
        "--engine",
        "vllm@0.26.0",
        "--rate",
        "25.8,28",
        "--input-len",
        "1000",
        "--output-len",
        "256",
    ]
    argv += ["--alpha", "0.6", "--gamma-max", "0"]
    window, past = _json(argv, capsys)
    assert window["plain"]["saturated"] and past["plain"]["saturated"]
    r_c = window["plain"]["unqueued_requests_per_s"]
    assert r_c is not None and window["plain"]["requests_per_s"] < 25.8 < r_c < 28
    assert past["plain"]["unqueued_requests_per_s"] is None
    assert main(argv) == 0
    notes = [x for x in capsys.readouterr().err.splitlines() if "past capacity in the long run" in x]
    assert len(notes) == 1 and notes[0].startswith("note: rate 25.8/s plain: ")
    assert f"serves {window['plain']['requests_per_s']:.2f} requests/s" in notes[0] and f"up to {r_c:.2f}/s" in notes[0]
