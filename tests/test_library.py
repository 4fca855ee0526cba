"""The library does what the CLI does (issue 37): for every command, the CLI's answer reproduced by library calls.

Each test runs one command through ``specsim.cli.main.main`` (its ``--json``, or the files it writes where it has no
``--json`` of its answer), then computes the same answer from the library alone: the library part of every test imports
nothing from ``specsim.cli``, so a notebook gets the command's numbers from the same calls (docs/library.md shows them).
Equality is exact: JSON carries every float at full precision.  Where a command prints numbers rounded, the test
compares the numbers before they are printed.

What cannot be reproduced, and why:

* measure and measure-loop time real passes, which never repeat exactly: the configurations and every number derived
  from the measured times are reproduced (loop_rows on the CLI's own measured passes), the times are not.
* figures writes images: the files are reproduced byte for byte by :func:`specsim.figures.make.make_all`, and the
  data behind one figure by the library call it draws.
* watch reads a live page: the command reads a replayed engine's pages one per GET, the library reads the same pages'
  text and forms the same windows; what the header says about the source is the command's text, not compared.

Small configurations throughout (the roofline where the kernel source is not the point, a few batches, 60-200 requests,
fixed seeds): the file runs in about 30 s on two cores.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from specsim.cli.main import main

REPO = Path(__file__).resolve().parent.parent
#: The reference deployment every test builds unless it says otherwise (the default draft, llama-3.2-1b, unless --draft),
#: on the roofline (fast, and the same physics).
BASE = ["--hardware", "h100-sxm", "--target", "llama-3.1-8b", "--draft", "llama-3.2-1b", "--timing", "roofline"]


def cli(capsys, *argv: str, json_out: bool = True):
    """Run the command; its parsed JSON (or its stdout where ``json_out`` is False), without the ``notes`` the command
    line adds to each answer at its edge, the notes its text says on stderr (held by tests/test_cli.py; the library's
    own notes, a schedule's or a capacity's, are their first: :func:`_notes_first`)."""
    from specsim.cli.main import NOTES_IN_JSON

    code = main([*argv, "--json"] if json_out else list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    if not json_out:
        return out
    return _without_notes(json.loads(out)) if argv[0] in NOTES_IN_JSON else json.loads(out)


def _without_notes(value):
    global _NOTES
    records = [r for r in (value if isinstance(value, list) else [value]) if isinstance(r, dict)]
    _NOTES = [r.pop("notes", None) for r in records]
    return value


#: The notes the last :func:`cli` took out of its answer's records, in order.
_NOTES: list = []


def _notes_first(library: list) -> bool:
    """Whether the library's notes are the first of those the last command printed in its JSON."""
    return all(said[: len(own)] == own for said, own in zip(_NOTES, library, strict=True))


def as_json(value, notes: bool = True):
    """What ``print_json`` makes of a library value (tuples as lists, numpy scalars refused as the CLI would); without
    its records' ``notes`` where ``notes`` is False, as :func:`cli` takes an answer's apart."""
    value = json.loads(json.dumps(value, allow_nan=False))
    for record in [] if notes else value if isinstance(value, list) else [value]:
        if isinstance(record, dict):
            record.pop("notes", None)
    return value


def deployment(draft: str | None = "llama-3.2-1b", **kw):
    """The library's deployment of BASE (Deployment.build, the one constructor every command calls)."""
    from specsim.speculation.deployment import Deployment

    kw.setdefault("timing", "roofline")
    kw.setdefault("engine", None)
    return Deployment.build("h100-sxm", kw.pop("target", "llama-3.1-8b"), draft, **kw)


def _article_context(printed, as_given: bool = True) -> bool:
    """Whether a command's --json says its context is the article's (no --context given), each such record then
    saying "given" as the library's answer to a caller's own context does (``as_given``; False: as it is, for a
    library call that leaves the context out too and so says the same)."""
    records = printed if isinstance(printed, list) else [printed]
    said = {r.get("context_basis") for r in records}
    for r in records if as_given else []:
        r["context_basis"] = "given"
    return said == {"the reference article's 1,000 in, 256 out"}


# -- the model's answers --------------------------------------------------------------------------------------------
def test_optimal_gamma(capsys):
    printed = cli(capsys, "optimal-gamma", *BASE, "--batch", "1,64", "--workload", "math")
    tree = cli(capsys, "optimal-gamma", *BASE, "--draft", "eagle3", "--tree", "topk:2,depth:3,tokens:6")

    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.answers.acceptance import resolve_acceptance
    from specsim.answers.tree import tree_answer
    from specsim.core.defaults import DEFAULT_BATCHES, DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX
    from specsim.core.names import as_flags
    from specsim.speculation.acceptance import parse_tree

    dep = deployment()
    with as_flags():  # the published default, labelled as the command's line labels it: pass --alpha, ... for yours
        acc, label = resolve_acceptance(dep, workload="math", context=DEFAULT_CONTEXT_TOKENS)
    with as_flags():  # memory_basis names the command's --engine there, Deployment.build's engine outside it
        cap = deployment_capacity(dep, DEFAULT_CONTEXT_TOKENS, None, None)
        answer = gamma_answer(dep, acc, label, [1, 64], DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX, 0.0, cap)
    # The command says where a --context it was not given comes from; a library caller's context is its own.
    assert {r.pop("context_basis") for r in printed} == {"the reference article's 1,000 in, 256 out"}
    assert {r.pop("context_basis") for r in answer.rows} == {"given"}
    assert printed == as_json(answer.rows)

    dep = deployment("eagle3")
    with as_flags():
        acc, label = resolve_acceptance(dep, context=DEFAULT_CONTEXT_TOKENS)
    bounds = parse_tree("topk:2,depth:3,tokens:6")
    batches = list(DEFAULT_BATCHES)
    with as_flags():
        cap = deployment_capacity(dep, DEFAULT_CONTEXT_TOKENS, None, None)
        answer = tree_answer(
            dep, acc, label, bounds, batches, DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX, 0.0, None, cap
        )
    assert {r.pop("context_basis") for r in tree} == {"the reference article's 1,000 in, 256 out"}
    assert {r.pop("context_basis") for r in answer.rows} == {"given"}
    assert tree == as_json(answer.rows)


def test_optimal_gamma_at_a_load_and_with_a_calibration(capsys, tmp_path):
    """optimal-gamma --concurrency (the serving model at a load), and --calibration (its engine and measured acceptance,
    read by the library's read_calibration): the same answers from load_answer and Deployment.build(calibration=)."""
    printed = cli(capsys, "optimal-gamma", *BASE, "--concurrency", "1,8", "--input-len", "500")
    cal_path = tmp_path / "calibration.yaml"
    bench = REPO / "examples" / "bench"
    argv = ["--plain", str(bench / "vllm-plain.jsonl"), "--spec", str(bench / "vllm-eagle3.jsonl"), "--hardware"]
    argv += ["h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10", "--timing", "roofline"]
    assert main(["calibrate-engine", *argv, "--out", str(cal_path)]) == 0
    capsys.readouterr()
    calibrated = cli(capsys, "optimal-gamma", "--calibration", str(cal_path), "--batch", "1,8")

    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.answers.acceptance import resolve_acceptance
    from specsim.answers.load import load_answer, request_lengths
    from specsim.calibration.file import read_calibration
    from specsim.core.defaults import DEFAULT_GAMMA_MAX
    from specsim.core.names import as_flags
    from specsim.core.workloads import mean_context_tokens
    from specsim.speculation.acceptance import acceptance_rates
    from specsim.speculation.deployment import Deployment

    dep = deployment()
    lengths = request_lengths(500, None)  # its header names the keyword not given; the command's, its flag
    assert lengths.description.endswith("[output_tokens 256 (default: the article's completion)]")
    with as_flags():
        lengths = request_lengths(500, None)
        acc, label = resolve_acceptance(dep, context=lengths.context_tokens)  # (pass --alpha, ... for yours)
    answer = load_answer(
        dep,
        acc,
        label,
        "concurrency",
        [1, 8],
        lengths.input_tokens,
        lengths.output_tokens,
        gamma_max=DEFAULT_GAMMA_MAX,
        lengths=lengths.description,
    )
    kv = {"plain": float(answer.state.kv_bytes[0]), "speculating": float(answer.state.kv_bytes[1])}
    extra = {"acceptance": answer.acceptance, "acceptance_rates": acceptance_rates(acc), "kv_cache_bytes_per_gpu": kv}
    extra |= {"provenance": dep.provenance(), "deployment": dep.identity(), "lengths": lengths.description}
    # records() is what --json prints (the command calls it), the engine's limits with where they come from: the
    # command's clause adds the flags that set them
    lib = answer.records()
    assert lib == [r | extra | {"engine_limits": f"{answer.limits.label} ({answer.limits_from})"} for r in answer.rows]
    assert all(
        p["engine_limits"] == r["engine_limits"][:-1] + "; --max-num-seqs and --max-batched-tokens to set)"
        for p, r in zip(printed, lib)
    )
    assert [{k: v for k, v in p.items() if k != "engine_limits"} for p in printed] == as_json(
        [{k: v for k, v in r.items() if k != "engine_limits"} for r in lib]
    )

    cal = read_calibration(cal_path)
    dep = Deployment.build(None, None, None, timing=None, engine=None, calibration=cal)
    # The context of the runs it was fitted to (their prompt plus half their output), as the command takes it.
    context = cal.context_tokens  # (mean_context_tokens of its lengths)
    assert context == int(mean_context_tokens(*cal.lengths))
    acc, label = resolve_acceptance(dep, calibration=cal, context=context)
    assert label == cal.acceptance_label
    # The memory check under the limits its runs were served at, as the command takes them (specsim.cli.flags.memory_limits).
    cap = deployment_capacity(dep, context, None, None, cal.serving["max_batched_tokens"], cal.serving["max_num_seqs"])
    # (the draft steps the calibration's acceptance was measured at: a gamma past them says it extrapolates)
    answer = gamma_answer(dep, acc, label, [1, 8], context, DEFAULT_GAMMA_MAX, 0.0, cap, cal.acceptance_steps)
    assert {r.pop("context_basis") for r in calibrated} == {
        "the runs calibration.yaml was fitted to: 1,000 in, 256 out"
    }
    assert {r.pop("context_basis") for r in answer.rows} == {"given"}
    assert calibrated == as_json(answer.rows)


def test_explain(capsys):
    printed = cli(capsys, "explain", *BASE, "--draft", "eagle3", "--batch", "1,32", "--alpha", "0.7")
    at_load = cli(capsys, "explain", *BASE, "--concurrency", "1,16", "--alpha", "0.7")

    from specsim.answers.anatomy import load_anatomy, round_anatomy
    from specsim.answers.load import load_answer, request_lengths

    dep = deployment("eagle3")
    assert _article_context(printed)  # the command's --context not given; the library's 1128 is its caller's
    anatomy = round_anatomy(dep, 0.7, "alpha 0.7", [1, 32], 1128)
    assert printed == as_json([row | {"findings": anatomy.findings()} for row in anatomy.rows])
    # The JSON's conclusions are the text's bullets, word for word.
    text = cli(capsys, "explain", *BASE, "--draft", "eagle3", "--batch", "1,32", "--alpha", "0.7", json_out=False)
    bullets = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert bullets and bullets == printed[0]["findings"] == printed[1]["findings"]
    dep = deployment()
    lengths = request_lengths()
    answer = load_answer(dep, 0.7, "alpha 0.7", "concurrency", [1, 16], 1000, 256, gamma_max=16, lengths="")
    assert at_load == as_json(load_anatomy(dep, 0.7, "alpha 0.7", answer, lengths.context_tokens))


def test_explains_record_is_what_the_command_prints(capsys):
    """``explain --json`` prints the library's records (RoundAnatomy.records): the command merged the findings into
    each row itself, so a notebook could not get what it printed.  A fixed gamma over three batches, and the best
    gamma per batch of an SGLang engine at one."""
    from specsim.answers.anatomy import round_anatomy

    printed = cli(capsys, "explain", *BASE, "--batch", "1,8,64", "--gamma", "3", "--alpha", "0.7", "--context", "1128")
    anatomy = round_anatomy(deployment(), 0.7, "alpha 0.7", [1, 8, 64], 1128, 3)
    assert printed == as_json(anatomy.records())
    assert [row["gamma"] for row in printed] == [3, 3, 3] and printed[0]["findings"] == anatomy.findings()
    sglang = ["--draft", "eagle3", "--engine", "sglang", "--batch", "16", "--alpha", "0.7", "--context", "1128"]
    printed = cli(capsys, "explain", *BASE, *sglang)
    anatomy = round_anatomy(deployment("eagle3", engine="sglang"), 0.7, "alpha 0.7", [16], 1128)
    assert printed == as_json(anatomy.records())


def test_speedup(capsys):
    printed = cli(capsys, "speedup", *BASE, "--alpha", "0.8", "--gamma", "3", "--batch", "1,64,256")
    closed = cli(capsys, "speedup", "--alpha", "0.8", "--gamma", "4", "--cost-ratio", "0.05")

    from specsim.answers import closed_form_answer, speedup_rows

    rows, context = speedup_rows(deployment(), 0.8, "alpha 0.8", 3, [1, 64, 256])
    # not given, to the command or to the library: both say whose it is (the library's said "given")
    assert {r["context_basis"] for r in printed} == {"the reference article's 1,000 in, 256 out"}
    assert context == 1128 and printed == as_json(rows)
    assert closed == as_json(closed_form_answer(0.8, 4, 0.05))


def test_steptime(capsys):
    printed = cli(
        capsys,
        "steptime",
        "--model",
        "llama-3.1-8b",
        "--timing",
        "roofline",
        "--batch",
        "1,64",
        "--context",
        "512,8192",
    )
    tp = cli(capsys, "steptime", "--model", "llama-3.3-70b", "--tp", "4", "--timing", "roofline", "--batch", "1,8")

    from specsim.answers import steptime_rows

    dep = deployment(None, decode_only=True)
    assert printed == as_json(steptime_rows(dep, [1, 64], 1, [512, 8192])[0])
    dep = deployment(None, target="llama-3.3-70b", decode_only=True, target_options={"tp": 4})
    assert tp == as_json(steptime_rows(dep, [1, 8], 1, 1128)[0])


def test_alpha(capsys):
    printed = cli(capsys, "alpha", "--acceptance-length", "2.95", "--gamma", "3")
    page = REPO / "examples" / "vllm-metrics.txt"
    metrics = cli(capsys, "alpha", "--metrics", str(page))

    from specsim.speculation.acceptance import alpha_from_acceptance_length
    from specsim.speculation.metrics import read_metrics_file

    alpha = float(alpha_from_acceptance_length(2.95, 3))
    assert printed == {"alpha": alpha, "acceptance_length": 2.95, "gamma": 3}
    assert metrics == as_json(read_metrics_file(page).to_dict())


def test_capacity(capsys):
    # --hardware given, as Deployment.build is given it: the record's notes name the defaults neither was given
    argv = ("--hardware", "h100-sxm", "--target", "qwen3-8b", "--draft", "qwen3-0.6b", "--context", "8192")
    printed = cli(capsys, "capacity", *argv)
    hybrid = cli(
        capsys, "capacity", "--hardware", "h200", "--target", "qwen3.5-27b", "--draft", "eagle3", "--gamma", "3"
    )

    from specsim.answers import capacity_record
    from specsim.core.names import as_flags
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build("h100-sxm", "qwen3-8b", "qwen3-0.6b")
    # memory_basis names the engine as each caller gave it: Deployment.build's engine, the command's --engine
    assert "as engine names no release" in capacity_record(dep, 8192)["memory_basis"]
    with as_flags():
        assert printed == as_json(capacity_record(dep, 8192), notes=False)
    dep = Deployment.build("h200", "qwen3.5-27b", "eagle3")
    assert capacity_record(dep, 1128, gamma=3)["scratch_basis"] == "gamma"  # capacity_record's keyword
    with as_flags():
        record = capacity_record(dep, 1128, gamma=3)
    assert hybrid.pop("context_basis") == "the reference article's 1,000 in, 256 out" and record.pop("context_basis")
    # the scratch's gamma as the command gave it, and as the library names it inside as_flags
    assert (hybrid.pop("scratch_basis"), record.pop("scratch_basis")) == ("--gamma", "--gamma")
    assert hybrid == as_json(record, notes=False)


def test_schedule(capsys):
    printed = cli(capsys, "schedule", *BASE, "--alpha", "0.8", "--max-batch", "64", "--contexts", "512,8192")
    vllm = cli(capsys, "schedule", *BASE, "--alpha", "0.8", "--max-batch", "64", "--format", "vllm", json_out=False)
    at_load = cli(capsys, "schedule", *BASE, "--alpha", "0.7", "--concurrency", "1,8", "--max-batch", "32")

    from specsim.answers import deployment_capacity
    from specsim.answers.load import load_answer, request_lengths
    from specsim.answers.schedule import schedule_answer
    from specsim.engines import REGISTRY, parse_version

    dep = deployment()
    cap = deployment_capacity(dep, 1128, None, None)  # the engine's own share, as the CLI (its notes say what fits)
    answer = schedule_answer(dep, 0.8, "alpha 0.8", cap, max_batch=64, contexts=[512, 8192])
    assert _article_context(printed)
    printed = cli(capsys, "schedule", *BASE, "--alpha", "0.8", "--max-batch", "64", "--contexts", "512,8192")
    # the library's context left out too: both say it is the article's
    assert _notes_first([answer.to_dict()["notes"]]) and _article_context(printed, as_given=False)
    assert printed == as_json(answer.to_dict(), notes=False)

    engine = REGISTRY["vllm"]
    dep = deployment(engine="vllm")  # --format vllm models vLLM's round unless --engine says otherwise
    answer = schedule_answer(dep, 0.8, "alpha 0.8", deployment_capacity(dep, 1128, None, 0.9), max_batch=64)
    checkpoint = dep.drafter.checkpoint(dep.target, None)
    text, _notes = engine.render_schedule(
        answer.ranges, dep, checkpoint, parse_version(engine.name, engine.newest), 1.0, 64
    )
    assert vllm == text + "\n"

    dep = deployment()
    lengths = request_lengths()  # the article's 1000 in, 256 out
    load = load_answer(
        dep, 0.7, "alpha 0.7", "concurrency", [1, 8], lengths.input_tokens, lengths.output_tokens, gamma_max=16
    )
    answer = schedule_answer(dep, 0.7, "alpha 0.7", deployment_capacity(dep, 1128, None, 0.9), max_batch=32, load=load)
    assert at_load == as_json(answer.to_dict(), notes=False)


def test_compare(capsys):
    printed = cli(capsys, "compare", *BASE, "--alpha", "0.8", "--batch", "1,64,256")

    from specsim.answers.compare import compare_answer
    from specsim.speculation.acceptance import acceptance_rates

    dep = deployment()
    answer = compare_answer(dep, 0.8, [1, 64, 256], 1128, None, 16, None, None)  # the engine's own share, as the CLI
    records = answer.frame.to_dict(orient="records")
    cap, (spec, plain) = answer.capacity, answer.at_largest()
    largest = answer.largest_record()
    # vLLM's max_num_seqs on an H100 (1024) is past what fits: memory stops both arms.
    assert largest == {
        "speculating": {"batch": cap.max_batch_with_draft, "tokens_per_s": spec, "limited_by": "memory"},
        "plain": {"batch": cap.max_batch_without_draft, "tokens_per_s": plain, "limited_by": "memory"},
        "limits_from": largest["limits_from"],
    }
    assert largest["limits_from"].startswith("vLLM's defaults")
    assert _article_context(printed)
    # records() is what --json prints (the command calls it): each row with its verdict, the acceptance and the
    # sources of its numbers, which the frame alone does not carry
    lib = answer.records()
    rates = {"acceptance": "alpha 0.8", "acceptance_rates": acceptance_rates(0.8)}
    error = answer.model_error.record()
    assert lib == [
        r
        | {"verdict": v, "on_the_line": line, "model_error": error, "at_largest_batch": largest}
        | {"context_tokens": 1128, "context_basis": "given"}
        | rates
        | {"provenance": dep.provenance(), "deployment": dep.identity()}
        for r, v, line in zip(records, answer.verdicts(), answer.on_the_line())
    ]
    assert printed == as_json(lib)


# -- serving --------------------------------------------------------------------------------------------------------
def test_serve_sim(capsys):
    printed = cli(capsys, "serve-sim", *BASE, "--alpha", "0.8", "--rate", "4", "--requests", "100", "--runs", "2")

    from specsim.answers.serve import serve_sim, sim_load

    dep = deployment()
    answer = serve_sim(dep, sim_load(dep, rate=4.0, n=100, seed=0, runs=2), 0.8)
    assert printed["off"] == as_json(answer.off) and printed["on"] == as_json(answer.on)
    assert printed["changes"] == as_json(answer.changes())
    assert printed["speculating_batch_held"] == answer.held_back()  # the finding is the library's too
    # what the text header says of the load, keyed: the load, its workload and lengths' context, the acceptance
    assert (printed["rate"], printed["concurrency"], printed["workload"], printed["requests_per_run"]) == (
        4.0,
        None,
        "chat",
        100,
    )
    assert printed["acceptance"] == "alpha 0.8" and printed["context_tokens"] == int(round(answer.meta["context_hint"]))
    assert printed["seeds"] == answer.seeds == [0, 1]
    assert printed["gamma_by_batch"] == as_json(answer.meta["gamma_by_batch"])


def test_serve_sims_record_is_what_the_command_prints_provenance_included(capsys, tmp_path):
    """``serve-sim --json`` prints the library's record (ServeSimAnswer.to_dict): the answer exposed only its summaries
    and meta, and the command built the load, provenance, limits, queue and KV lines itself, so a notebook could not get
    what it printed.  A Poisson load of a named workload under limits given, and a trace under the engine's own
    limits, whose clause naming the flags to set is the command's (as optimal-gamma's records say it, above)."""
    from specsim.answers.serve import serve_sim, sim_load
    from specsim.core.names import as_flags
    from specsim.serving.limits import engine_limits

    dep = deployment()
    limited = ["--rate", "4", "--workload", "chat", "--requests", "60", "--runs", "2"]
    printed = cli(
        capsys, "serve-sim", *BASE, "--alpha", "0.8", *limited, "--max-num-seqs", "64", "--max-batched-tokens", "4096"
    )
    limits = engine_limits(dep.engine, dep.hardware, False, 64, 4096)[0]
    # As main runs it (inside as_flags): the limits' memory basis names --engine there, engine from Python.
    with as_flags():
        answer = serve_sim(dep, sim_load(dep, rate=4.0, workload="chat", n=60, runs=2), 0.8, limits=limits)
        record = answer.to_dict()
    assert printed == as_json(record)
    assert printed["provenance"][-4].startswith("load: Poisson, 4 requests/s, workload chat")
    frame = answer.to_frame()  # the two arms' summaries as rows, the sources beside them
    assert list(frame["arm"]) == ["off", "on"] and frame.attrs["provenance"] == printed["provenance"]
    assert list(frame["tpot_s.p50"]) == [printed["off"]["tpot_s"]["p50"], printed["on"]["tpot_s"]["p50"]]

    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,500,100\n0.1,800,50\n0.3,1200,200\n0.9,2000,120\n")
    printed = cli(capsys, "serve-sim", *BASE, "--alpha", "0.8", "--trace", str(trace))
    with as_flags():
        answer = serve_sim(dep, sim_load(dep, trace=str(trace)), 0.8)
        own = answer.to_dict()
        said = " (" + answer.limits_from + "; --max-num-seqs and --max-batched-tokens to set)"
        record = answer.to_dict(limits_said=said)
    assert own["engine_limits"] == answer.limits.label + f" ({answer.limits_from})" and answer.limits_from
    assert printed == as_json(record)
    assert printed["provenance"][-1].endswith("; a trace is replayed once: no interval")


def test_serve_sweep(capsys):
    printed = cli(capsys, "serve-sweep", *BASE, "--alpha", "0.8", "--rates", "1,6", "--requests", "60")

    from specsim.core.workloads import get_workload
    from specsim.serving.simulator import serve_sweep, sweep_findings

    dep = deployment()
    frame = serve_sweep(dep, [1.0, 6.0], get_workload("chat"), 60, 0.8)
    assert printed["rates"] == as_json(frame.to_dict(orient="records"))
    assert printed["findings"] == as_json(sweep_findings(frame))


def test_replays_record_is_what_the_command_prints(capsys, tmp_path):
    """``replay --json`` prints the library's record (ReplayAnswer.to_dict): the command built it itself from
    simulate_day's result, so a notebook could not get what it printed.  A day of fixed lengths with an acceptance drop,
    written as one OpenMetrics file, which is the answer's own (ReplayAnswer.openmetrics) byte for byte."""
    from specsim.engines import DEFAULT_ENGINE, metric_names
    from specsim.watch.replay import replay_answer

    out = tmp_path / "day.om"
    day = ["--alpha", "0.6", "--gamma", "3", "--rates", "0:2,1m:3,2m", "--drop-at", "1m", "--drop-to", "0.4"]
    argv = [*day, "--input-len", "700", "--output-len", "90", "--start", "2026-12-01T00:00:00Z", "--out", str(out)]
    printed = cli(capsys, "replay", *BASE, *argv, "--page-seconds", "30")
    names, release, shown = metric_names(DEFAULT_ENGINE)
    answer = replay_answer(
        deployment(),
        [(0.0, 2.0), (60.0, 3.0), (120.0, 0.0)],
        0.6,
        3,
        700,
        90,
        engine=shown,
        drop=("1m", 0.4),
        start_s=1796083200.0,
        page_seconds=30.0,
    )
    assert printed == as_json(answer.to_dict(written=str(out)))
    assert printed["acceptance"] == "alpha 0.6" and printed["drop"] == {"at": "1m", "to": 0.4}
    assert out.read_text() == answer.openmetrics(names, release)


def test_watch_alert_rules_record_is_what_the_command_prints(capsys, tmp_path):
    """``watch --alert-rules --dashboard --json`` (no source watched) prints the library's record (RulesAnswer.to_dict):
    the command built it, and the rules file and dashboard, itself, so a notebook could not get what it wrote or
    printed.  The files written are the answer's own text, byte for byte."""
    from specsim.answers.load import request_lengths
    from specsim.engines import metric_names
    from specsim.serving.limits import engine_limits
    from specsim.watch.judge import Judge
    from specsim.watch.publish import rules_answer

    rules, board = tmp_path / "rules.yml", tmp_path / "dashboard.json"
    files = ["--alert-rules", str(rules), "--dashboard", str(board)]
    lengths = ["--input-len", "700", "--output-len", "90", "--min-drop", "0.1", "--interval", "2m"]
    printed = cli(capsys, "watch", *BASE, "--engine", "vllm@0.26.0", "--gamma", "4", *lengths, *files)
    dep = deployment(engine="vllm@0.26.0")
    names = metric_names("vllm@0.26.0")[0]
    judge = Judge(dep, engine_limits(dep.engine, dep.hardware)[0])
    kw = {"with_dashboard": True, "min_drop": 0.1, "interval_s": 120.0}
    answer = rules_answer(names, judge, 4, request_lengths(700, 90), **kw)
    assert printed == as_json(answer.to_dict([str(rules), str(board)]))
    assert printed["requests"] == "every request 700 in, 90 out" and printed["gamma"] == 4
    assert rules.read_text() == answer.rules_text() and board.read_text() == answer.dashboard_text()


def test_serve_sweeps_record_is_what_the_command_prints(capsys):
    """``serve-sweep --json`` prints the library's record (ServeSweepAnswer.to_dict): the command built it, and its
    gamma policy's words, itself from serve_sweep's bare frame.  Closed loops of fixed lengths under limits given, at
    a fixed gamma (its policy's words), and Poisson rates of a named workload under the engine's own limits (the
    command's clause naming the flags to set, as serve-sim's above)."""
    from specsim.answers.sweep import serve_sweep_answer
    from specsim.serving.limits import engine_limits

    dep = deployment()
    argv = ["--concurrency", "1,8", "--requests", "30", "--input-len", "700", "--output-len", "100", "--runs", "2"]
    limited = ["--max-num-seqs", "64", "--max-batched-tokens", "4096", "--gamma", "3"]
    printed = cli(capsys, "serve-sweep", *BASE, "--alpha", "0.8", *argv, *limited)
    limits = engine_limits(dep.engine, dep.hardware, False, 64, 4096)[0]
    kw = {"n": 30, "lengths": (700, 100), "runs": 2, "gamma": 3, "limits": limits}
    answer = serve_sweep_answer(dep, 0.8, concurrencies=[1, 8], **kw)
    assert printed == as_json(answer.to_dict())
    assert printed["gamma_policy"] == "gamma 3" and printed["requests"] == "every request 700 in, 100 out"

    printed = cli(
        capsys, "serve-sweep", *BASE, "--alpha", "0.8", "--rates", "1,6", "--requests", "40", "--workload", "code"
    )
    answer = serve_sweep_answer(dep, 0.8, rates=[1.0, 6.0], n=40, workload="code")
    said = " (" + answer.limits_from + "; --max-num-seqs and --max-batched-tokens to set)"
    assert answer.to_dict()["engine_limits"] == answer.limits.label + f" ({answer.limits_from})" and answer.limits_from
    assert printed == as_json(answer.to_dict(limits_said=said))
    assert printed["gamma_policy"].startswith("per-batch optimal gamma (0..")


# -- the article, acceptance, what specsim holds --------------------------------------------------------------------
def test_toy(capsys):
    printed = cli(capsys, "toy", "exactness", "--seed", "1")

    from specsim.article import toy

    assert printed == as_json({"hand_example": toy.hand_example(seed=1), "bigram": toy.exactness(seed=1)})


def test_acceptance(capsys):
    target, draft = REPO / "examples" / "target-logits.npy", REPO / "examples" / "draft-logits.npy"
    printed = cli(
        capsys, "acceptance", "--target-logits", str(target), "--draft-logits", str(draft), "--temperature", "0.7"
    )

    from specsim.speculation.sampling import load_logits, logits_acceptance_summary

    summary = logits_acceptance_summary(load_logits(target, "target logits"), load_logits(draft, "draft logits"), 0.7)
    assert printed == as_json(summary)


def test_hardware(capsys):
    listed = cli(capsys, "hardware")
    shown = cli(capsys, "hardware", "show", "h200")

    from specsim.answers import hardware_record
    from specsim.describe.hardware import builtin_names, load_hardware, profile_to_mapping

    assert listed == as_json([hardware_record(load_hardware(n)) for n in builtin_names()])
    hw = load_hardware("h200")
    assert shown == as_json(hardware_record(hw))
    # what the table prints is in the records: the ridge (both), where the efficiencies come from
    assert (
        shown["ridge_flop_per_byte"] == pytest.approx(hw.ridge_flop_per_byte) and shown["datasheet_ridge_flop_per_byte"]
    )
    assert {r["efficiencies_from"] for r in listed} == {"calibrated", "datasheet + article preset"}
    assert all(set(profile_to_mapping(load_hardware(r["name"]))) < set(r) for r in listed)


def test_engines(capsys):
    listed = cli(capsys, "engines")
    shown = cli(capsys, "engines", "show", "sglang@0.5.3")

    from specsim.engines import PRESETS, engine_record, get_engine

    assert listed == as_json([engine_record(p) for p in PRESETS.values()])
    assert shown == as_json(engine_record(get_engine("sglang@0.5.3")))
    assert shown["preset"] == "sglang@0.5" and shown["description"].startswith(
        "engine: sglang 0.5.3 (preset sglang@0.5)"
    )


def test_models(capsys):
    listed = cli(capsys, "models")
    shown = cli(capsys, "models", "show", "deepseek-v3")

    from specsim.describe.models import builtin_model_names, catalog_entry, get_model

    names = builtin_model_names()
    assert listed == as_json([{**get_model(n).to_dict(), "catalog": catalog_entry(n)} for n in names])
    assert shown == as_json(get_model("deepseek-v3").to_dict() | {"catalog": catalog_entry("deepseek-v3")})


def test_reproduce(capsys):
    printed = cli(capsys, "reproduce")

    from specsim.article.reproduce import article_preset, reproduce

    assert printed == as_json({"preset": article_preset(), "checks": [c.to_dict() for c in reproduce()]})
    checks = printed["checks"]
    # the interval as numbers too: a consumer need not parse "[6.45, 6.55]"
    assert all(r["low"] is None or r["low"] <= r["high"] for r in checks)
    assert {r["high_inclusive"] for r in checks} == {True, False}  # both kinds of upper end are quoted
    assert any(r["low"] is None for r in checks)  # and an interval unbounded below


def test_figures(capsys, tmp_path):
    """The files are make_all's, byte for byte; the data behind speedup-vs-gamma are the closed form's."""
    names = cli(capsys, "figures", "--list")
    written = cli(capsys, "figures", "--only", "speedup-vs-gamma", "--out", str(tmp_path / "cli"))

    from specsim.figures.make import FIGURES, make_all, render
    from specsim.speculation.search import speedup_from_cost_ratio

    assert names == [spec.name for spec in FIGURES]
    ours = make_all(tmp_path / "library", ["speedup-vs-gamma"])
    assert [Path(p).read_bytes() for p in written] == [p.read_bytes() for p in ours]
    fig, drawn = render(next(spec for spec in FIGURES if spec.name == "speedup-vs-gamma"))
    lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("α")]
    assert len(lines) == 5
    for line, alpha in zip(lines, (0.5, 0.6, 0.7, 0.8, 0.9)):
        gamma = np.asarray(line.get_xdata(), float)
        assert np.array_equal(line.get_ydata(), speedup_from_cost_ratio(alpha, gamma, 0.05))


# -- measuring and calibrating --------------------------------------------------------------------------------------
def test_measure(capsys, tmp_path):
    """The configurations measured and what the file holds of them; the times are measured, never the same twice."""
    pytest.importorskip("torch")
    out = tmp_path / "m.csv"
    argv = ["--model", "tiny-5m", "--batch", "1,2", "--tokens-per-seq", "1,3", "--context", "8", "--device", "cpu"]
    printed = cli(capsys, "measure", *argv, "--dtype", "fp32", "--repeats", "1", "--warmup", "0", "--out", str(out))

    import pandas as pd

    from specsim.describe.models import get_model
    from specsim.harness.timing import measure_sweep

    shape = get_model("tiny-5m", weight_dtype="fp32", kv_dtype="fp32")
    rows = measure_sweep(shape, [1, 2], [1, 3], [8], dtype="fp32", device="cpu", repeats=1, warmup=0)
    written = pd.read_csv(out)
    fixed = ["model", "params", "n_layers", "hidden_size", "batch", "tokens_per_seq", "context", "dtype", "device"]
    assert written[fixed].to_dict(orient="records") == pd.DataFrame(rows)[fixed].to_dict(orient="records")
    assert printed["configurations"] == len(rows) and printed["device_name"] == rows[0]["device_name"]


def test_measure_loop(capsys):
    """Every number derived from the loop's measured pass times, recomputed from them (the times are measured)."""
    pytest.importorskip("torch")
    argv = ["--batch", "1", "--tokens", "8", "--context", "16", "--repeats", "1", "--alpha", "0.7", "--gamma", "3"]
    printed = cli(capsys, "measure-loop", *argv, "--hardware", "cpu-epyc-2vcpu")

    from specsim.answers import loop_rows
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model

    target = get_model("tiny-28m", weight_dtype="fp32", kv_dtype="fp32")
    draft = get_model("tiny-5m", weight_dtype="fp32", kv_dtype="fp32")
    derived = ("formula_speedup_from_measured_passes", "expected_tokens_per_pass", "predicted_speedup", "profile")
    measured = [{k: v for k, v in r.items() if k not in derived and k != "prediction_source"} for r in printed]
    again = loop_rows(measured, target, draft, 0.7, 3, 16, 8, load_hardware("cpu-epyc-2vcpu"))
    assert printed == as_json(again)


def test_calibrate(capsys, tmp_path):
    measurements = REPO / "hardware" / "measurements" / "h100-sxm-vllm-kernel-steps.csv"
    out = tmp_path / "fit.yaml"
    printed = cli(capsys, "calibrate", str(measurements), "--hardware", "h100-sxm", "--out", str(out))

    from specsim.calibration.profile import calibrate, implausible, profile_yaml
    from specsim.describe.hardware import load_hardware

    result = calibrate(str(measurements), load_hardware("h100-sxm"), seed=0, per_layer="auto", name=None)
    expected = {**result.summary(), "profile": str(out), "residual_plot": str(tmp_path / "fit-residuals.png")}
    expected |= {"name": result.profile.name, "warnings": implausible(result)}
    assert printed == as_json(expected)
    assert out.read_text() == profile_yaml(result.profile)


def test_compose_kernels(capsys, tmp_path):
    # --out a new folder: made (it was refused, "no such folder (create it first)", where figures' --out is made)
    argv = ("--hardware", "h100-sxm", "--models", "llama-3.2-1b", "--out", str(tmp_path / "steps"))
    printed = cli(capsys, "compose-kernels", *argv)

    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing.kernels import KernelSource, compose_steps

    source = KernelSource(load_hardware("h100-sxm"), "vllm")
    frame = compose_steps(source, get_model("llama-3.2-1b"))
    path = tmp_path / "steps" / "h100-sxm-vllm-kernel-steps.csv"
    assert path.read_text() == frame.to_csv(index=False, float_format="%.9g")
    assert printed == [
        {
            "hardware": "h100-sxm",
            "file": str(path),
            "steps": len(frame),
            "models": {"llama-3.2-1b": len(frame)},
            "source": source.describe(),
        }
    ]


def test_bench_plan(capsys, tmp_path):
    out = tmp_path / "plan"
    argv = [
        "--engine",
        "sglang@0.5.13",
        "--target",
        "qwen3-8b",
        "--draft",
        "qwen3-0.6b",
        "--tp",
        "2",
        "--out",
        str(out),
    ]
    printed = cli(capsys, "bench-plan", *argv)

    from specsim.calibration.plan import design_plan, plan_deployment, plan_files

    dep = plan_deployment(None, "qwen3-8b", "qwen3-0.6b", engine="sglang@0.5.13", target_options={"tp": 2})
    plan = design_plan(dep, "sglang@0.5.13")
    files = plan_files(plan)
    assert printed == as_json(plan.to_dict() | {"folder": str(out), "files": sorted(files)})
    assert {p.name: p.read_text() for p in out.iterdir()} == files


def test_calibrate_engine(capsys, tmp_path):
    bench = REPO / "examples" / "bench"
    plain, spec = str(bench / "vllm-plain.jsonl"), str(bench / "vllm-eagle3.jsonl")
    out = tmp_path / "calibration.yaml"
    argv = ["--plain", plain, "--spec", spec, "--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--engine"]
    printed = cli(capsys, "calibrate-engine", *argv, "vllm@0.10", "--timing", "roofline", "--out", str(out))

    import yaml

    from specsim.calibration.engine_calibration import calibrate_engine
    from specsim.calibration.inputs import runs_from_files, served_target

    def library():
        runs, files, notes = runs_from_files([plain], [([spec], 3)])
        return calibrate_engine(
            runs,
            files,
            notes,
            hardware="h100",
            target=served_target(None, runs),
            engine="vllm@0.10",
            drafter="eagle3",
            timing="roofline",
        )

    # The summary's notes name what the caller gave (the keyword from Python: '(sweep_by file separates them)'), so it
    # is the command's inside as_flags, as main runs it; the file is the same from either (its texts name both).
    from specsim.core.names import as_flags

    result = library()
    with as_flags():
        assert printed == as_json(library().summary(out))
    written, ours = yaml.safe_load(out.read_text()), as_json(result.mapping())
    assert written.pop("date") and ours.pop("date")  # the day it was written
    assert written == ours


def test_a_calibration_files_texts_name_the_keyword_beside_each_flag():
    """A calibration file outlives the call that wrote it and is read from Python and from the command line alike: its
    warnings, its terms' reasons and its acceptance's source said '--memory-util for the share your engine ran with'
    and 'check --hardware, --engine, --tp and the dtypes' to a library caller.  They name the keyword beside the flag
    (core.names.keyword_and_flag), or the thing itself, and the file is the same whoever writes it."""
    from specsim.calibration.engine_calibration import calibrate_engine
    from specsim.calibration.inputs import runs_from_files
    from specsim.core.names import as_flags

    bench = REPO / "examples" / "bench"

    def written() -> dict:
        runs, files, notes = runs_from_files(
            [str(bench / "vllm-plain.jsonl")], [([str(bench / "vllm-eagle3.jsonl")], 3)]
        )
        fit = dict(hardware="h100", target="llama-3.1-8b", engine="vllm@0.10", drafter="eagle3", timing="roofline")
        # an engine's share of memory that holds fewer users than the runs' 16 and 64: the KV-cache warning
        return calibrate_engine(runs, files, notes, memory_utilization=0.24, **fit).mapping()

    ours = written()
    texts = [
        *ours["warnings"],
        *(t["why"] for t in ours["terms"].values() if t.get("why")),
        ours["acceptance"]["source"],
    ]
    assert any("; memory_utilization / --memory-util for the share your engine ran with" in t for t in texts), texts
    assert any("check the hardware, the engine, the tensor parallelism and the dtypes" in t for t in texts), texts
    for text in texts:  # every flag with its keyword before it
        assert all(re.search(rf"\w / {re.escape(flag)}", text) for flag in re.findall(r"--[a-z-]+", text)), text
    with as_flags():
        theirs = written()
    assert ours.pop("date") and theirs.pop("date")  # the day it was written
    assert ours == theirs


# -- watching an engine ---------------------------------------------------------------------------------------------
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _finite(obj):
    """JSON lines carry NaN as null (what the watch prints)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def day():
    """Ten minutes at 4 requests/s, alpha 0.6 then 0.45 from 300 s on (about 2,400 requests: under a second)."""
    from specsim.watch.replay import simulate_day

    return simulate_day(deployment(), [(0, 4.0), (600, 0)], 0.6, 3, 1000, 256, changes=[(300.0, 0.45)], seed=7)


def test_watch(day, capsys, tmp_path):
    """Three windows of a replayed vLLM 0.20 page read one GET at a time, and the alerting rules: the windows, the
    verdicts and the rules are the library's (read_samples, window_between, Judge, Watcher, alert_rules)."""
    from specsim.engines import metric_names
    from specsim.watch.replay import ReplayServer, pages

    names, release, shown = metric_names("vllm@0.20.0")
    texts = pages(day, names, MODEL, 30.0, start_s=1.7e9)
    rules = tmp_path / "rules.yaml"
    argv = [
        "watch",
        *BASE,
        "--draft",
        "llama-3.2-1b",
        "--engine",
        "vllm@0.20.0",
        "--interval",
        "0.25",
        "--windows",
        "3",
        "--reference",
        "3",
    ]
    with ReplayServer(texts, path=names.path) as server:
        code = main([*argv, "--url", server.url, "--json", "--alert-rules", str(rules)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["type"] == "header"

    import yaml

    from specsim.engines import default_limits
    from specsim.serving.steady import EngineLimits
    from specsim.speculation.metrics import parse_prometheus
    from specsim.watch.drift import DEFAULT_FALSE_ALARM, DEFAULT_MIN_DROP, DropDetector
    from specsim.watch.judge import Judge
    from specsim.watch.publish import alert_rules, rules_max_rate
    from specsim.watch.watcher import DEFAULT_MIN_GAIN, Watcher, schedule_writer
    from specsim.watch.windows import read_samples, window_between

    dep = deployment(engine="vllm@0.20.0")
    own = default_limits(dep.engine, dep.hardware)  # vLLM's own on the GPU
    judge = Judge(dep, EngineLimits(own.max_num_seqs, own.max_batched_tokens), 8, None)  # vLLM's own share
    top = rules_max_rate(judge, 1000, 256)
    ours = alert_rules(
        names, judge, 3, 1000, 256, top, min_drop=DEFAULT_MIN_DROP, interval_s=0.25, provenance=dep.brief()
    )
    assert yaml.safe_load(rules.read_text()) == as_json(ours)

    readings = []
    for text in texts[:16]:  # the first read, then five per window (the running batch is their mean)
        stamps: list = []
        samples = parse_prometheus(text, "page", stamps)
        readings.append(read_samples(samples, names, max(stamps), readings[0].model if readings else None))
    windows = [
        window_between(readings[k], readings[k + 5], names, [r.gauges for r in readings[k : k + 6]]) for k in (0, 5, 10)
    ]
    watcher = Watcher(
        judge,
        DropDetector(DEFAULT_MIN_DROP, DEFAULT_FALSE_ALARM, 3),
        schedule_writer(dep, judge, names, release, shown),
        DEFAULT_MIN_GAIN,
        lambda t: time.strftime("%H:%M:%S", time.gmtime(t)),
    )
    expected = []
    for row in (watcher.add(w) for w in windows):
        expected.append({"type": "window"} | row.to_dict())
        expected += [{"type": "verdict"} | v.to_dict() for v in row.started]
    assert lines[1:-1] == as_json(_finite(expected))
    assert lines[-1] == {
        "type": "summary",
        "exit_code": watcher.exit_code(),
        "holding": sorted(watcher.holding),
        "verdicts": watcher.tally(),  # the windows per verdict, against the answers' error (model_error)
        "model_error": judge.error.record(),
    }
    assert code == watcher.exit_code()


def test_replay(capsys, tmp_path):
    out = tmp_path / "day.txt"
    argv = [
        "replay",
        *BASE,
        "--draft",
        "llama-3.2-1b",
        "--rates",
        "0:2,5m",
        "--drop-at",
        "3m",
        "--drop-to",
        "0.4",
        "--start",
        "1700000000",
    ]
    assert main([*argv, "--out", str(out)]) == 0

    from specsim.engines import DEFAULT_ENGINE, metric_names
    from specsim.watch.replay import openmetrics, simulate_day

    dep = deployment()
    day = simulate_day(dep, [(0.0, 2.0), (300.0, 0.0)], 0.6, 3, 1000, 256, changes=[(180.0, 0.4)], seed=0)
    names, release, _ = metric_names(DEFAULT_ENGINE)
    model = dep.target.source or dep.target.name
    assert out.read_text() == openmetrics(day, names, model, 60.0, 1700000000.0, release)
    assert f"wrote {out}: {day.description}" in capsys.readouterr().out


def test_serve_sweep_with_runs_prints_the_library_means_and_intervals(capsys):
    # serve-sweep --runs R is serve_sweep(runs=R): the means and their 95% half-widths, printed as "mean ± half-width".
    printed = cli(capsys, "serve-sweep", *BASE, "--alpha", "0.8", "--rates", "1,6", "--requests", "60", "--runs", "3")

    from specsim.serving.simulator import serve_sweep

    frame = serve_sweep(deployment(), [1.0, 6.0], "chat", 60, 0.8, runs=3)
    assert printed["rates"] == as_json(frame.to_dict(orient="records"))
    assert all(row["runs"] == 3 and row["on_tpot_p50_s_ci"] > 0 for row in printed["rates"])
    from specsim.cli.main import main

    assert main(["serve-sweep", *BASE, "--alpha", "0.8", "--rates", "1,6", "--requests", "60", "--runs", "3"]) == 0
    text = capsys.readouterr().out
    half = frame.on_tpot_p50_s_ci.iloc[1] * 1e3
    assert "x 3 runs (seeds 0-2" in text and f"± {half:.3f}" in text


def test_calibrate_engine_from_python_checks_what_the_command_checks():
    """The library's calibrate_engine refuses runs of another model than ``target`` (it fitted a Qwen3-8B to Llama runs)
    and an empty list (ZeroDivisionError); runs_from_files refuses one path for a list and draft steps outside [1, 64]."""
    from specsim.calibration.engine_calibration import calibrate_engine
    from specsim.calibration.inputs import runs_from_files

    plain, spec = (str(REPO / "examples" / "bench" / f) for f in ("vllm-plain.jsonl", "vllm-eagle3.jsonl"))
    runs, files, notes = runs_from_files([plain], [([spec], 3)])
    fit = dict(hardware="h100", engine="vllm@0.10", drafter="eagle3", timing="roofline")
    with pytest.raises(ValueError, match="target qwen3-8b but the benchmark files ran meta-llama/Llama-3.1-8B"):
        calibrate_engine(runs, files, notes, target="qwen3-8b", **fit)
    with pytest.raises(ValueError, match="no runs to fit"):
        calibrate_engine([], files, notes, target="llama-3.1-8b", **fit)
    with pytest.raises(ValueError, match="lists of paths, not one path"):
        runs_from_files(plain, [])
    for steps in (0, 65, 2.5, True):
        with pytest.raises(ValueError, match="draft steps must be an integer in"):
            runs_from_files([plain], [([spec], steps)])


def test_library_tables_refuse_what_they_would_mislabel_or_what_the_command_refuses():
    """A batch of 2.5 was computed and labelled batch 2 (two 'batch 2' rows in a sweep), gamma 0.5 ran as 0 (speculation
    silently off) and 100 was run past the cap; a context past the model's positions was answered; a drafter name
    (eagle3) was 'an unknown model' in a sweep's pairs; an empty pair list was pandas' 'No objects to concatenate'."""
    import numpy as np

    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.answers.compare import compare_answer
    from specsim.serving.simulator import serve_compare
    from specsim.serving.workloads import Requests
    from specsim.speculation.sweep import optimal_gamma_table, sweep

    dep = deployment()
    cap = deployment_capacity(dep, 1128, None, None)
    cases = [
        (lambda: sweep(batch=[2, 2.5, 3]), "batch must be an integer in [1, 65536], got 2.5"),
        (lambda: sweep(alpha=1.5), "alpha must be in [0, 1]"),
        (lambda: sweep(pairs=[]), "pairs must be one (target, draft) pair or a non-empty list of them"),
        (lambda: optimal_gamma_table(context=1_000_000), "a context of 1,000,000 tokens is past llama-3.1-8b's"),
        (lambda: compare_answer(dep, 0.8, [2.5], 1128, None, 16, None, None), "batch must be an integer"),
        (lambda: compare_answer(dep, 0.8, [1], 1128, 0.5, 16, None, None), "gamma must be an integer in [0, 64]"),
        (lambda: gamma_answer(dep, 0.8, "alpha 0.8", [2.5], 1128, 16, 0.0, cap), "batch must be an integer"),
    ]
    requests = Requests.poisson(4.0, 50, "chat", np.random.default_rng(0))
    cases += [(lambda g=g: serve_compare(dep, requests, 0.8, gamma=g), "gamma must be") for g in (0.5, 100, "best")]
    for call, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    assert optimal_gamma_table(alpha=0.8, batch=[1], pairs=("llama-3.1-8b", "eagle3")).draft.item().startswith("eagle3")


def test_an_unknown_name_is_a_value_error_as_every_other_bad_argument():
    """A notebook's ``except ValueError`` catches an unknown hardware, model or drafter too (they were KeyErrors, whose
    message prints quoted); it is still a KeyError for code that looked names up."""
    from specsim.core.limits import UnknownName
    from specsim.speculation.deployment import Deployment

    for args in (("h999",), ("h100", "nope-model"), ("h100", "llama-3.1-8b", "eagle9")):
        with pytest.raises(ValueError) as caught:
            Deployment.build(*args)
        assert isinstance(caught.value, (KeyError, UnknownName)) and str(caught.value).startswith("unknown ")


def test_every_json_with_provenance_names_the_deployment_in_keys(capsys):
    """Beside the provenance sentences, ``deployment`` gives the same facts as keys (hardware, target and draft with
    precision and tensor parallelism, drafter, step-time source, engine as named and its preset, calibration, specsim's
    version): a dashboard need not parse prose."""
    from specsim import __version__

    for argv in (
        ["optimal-gamma", "--batch", "1"],
        ["optimal-gamma", "--concurrency", "4"],
        ["speedup", "--gamma", "3", "--batch", "1"],
        ["compare", "--batch", "1"],
        ["explain", "--batch", "1"],
        ["steptime", "--batch", "1"],
        ["schedule", "--format", "json"],
    ):
        assert main([*argv, "--json"] if argv[0] != "schedule" else argv) == 0, argv
        out = json.loads(capsys.readouterr().out)
        record = out[0] if isinstance(out, list) else out
        d = record["deployment"]
        assert (d["hardware"], d["target"]["name"], d["timing_source"]) == ("h100-sxm", "llama-3.1-8b", "hybrid"), argv
        assert d["engine_preset"] == "vllm@latest" and d["specsim_version"] == __version__, argv


def test_an_answer_from_a_calibration_names_the_file_by_its_hash(eagle3_calibration, capsys):
    """A calibration file was named by its base name only; every answer from it now carries its sha256 (the first 12
    hex digits), in the keys and in the full provenance, as a measured step-time CSV's does."""
    import hashlib

    out = eagle3_calibration  # calibrate-engine of vllm-plain.jsonl and vllm-eagle3.jsonl (tests/conftest.py)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()[:12]
    [row] = cli(capsys, "optimal-gamma", "--calibration", str(out), "--batch", "1")
    assert row["deployment"]["calibration"] == {"file": "cal.yaml", "sha256": digest}
    assert any(f"cal.yaml, sha256 {digest}" in line for line in row["provenance"])
    # applied to another drafter kind, the key still holds the file's name alone (the label says more)
    [other] = cli(capsys, "optimal-gamma", "--calibration", str(out), "--draft", "llama-3.2-1b", "--batch", "1")
    assert other["deployment"]["calibration"] == {"file": "cal.yaml", "sha256": digest}
    # a Calibration built in code, with no file read, names no hash rather than an empty one
    import dataclasses

    from specsim.calibration.file import read_calibration

    assert dataclasses.replace(read_calibration(out), sha256="").said_file == "cal.yaml"


def test_library_entry_points_name_a_bad_argument_in_one_value_error():
    """Each of these was a traceback from deep inside (IndexError, AttributeError, pandas' 'No objects to concatenate',
    'cannot convert float NaN to integer') or silently taken (alpha 1.5, alpha True, gamma -2, runs 0, negative SLOs)."""
    import pandas as pd

    from specsim.answers import capacity_record, deployment_capacity
    from specsim.answers.acceptance import resolve_acceptance
    from specsim.answers.anatomy import round_anatomy
    from specsim.answers.serve import sim_load
    from specsim.serving.simulator import serve_sweep, sweep_findings

    dep = deployment()
    cases = [
        (lambda: round_anatomy(dep, 0.7, "alpha 0.7", [], 1128), "batches must be a non-empty list"),
        (lambda: resolve_acceptance(acceptance=[0.9, 0.8]), "acceptance must be per-position rates as text"),
        (lambda: resolve_acceptance(alpha="high"), "alpha must be a number in [0, 1]"),
        (lambda: resolve_acceptance(alpha=1.5), "alpha must be a number in [0, 1]"),
        (lambda: resolve_acceptance(alpha=True), "alpha must be a number in [0, 1]"),
        (lambda: deployment_capacity(dep, float("nan"), None, None), "context must be an integer"),
        (lambda: capacity_record(dep, 1128, None, -2), "gamma must be an integer in [0, 64]"),
        (lambda: sim_load(dep, rate=1.0, n=10, runs=0), "runs must be an integer"),
        (lambda: sim_load(dep, concurrency=-2, n=10), "concurrency must be an integer"),
        (lambda: sim_load(dep, rate=1.0, n=10, lengths=(10,)), "lengths must be (prompt tokens, output tokens)"),
        (lambda: serve_sweep(dep, 4.0, "chat", 20, 0.8), "rates must be a list of request rates"),
        (lambda: serve_sweep(dep, [], "chat", 20, 0.8), "rates must be a non-empty list"),
        (lambda: serve_sweep(dep, [2.0], "chat", 40, 0.8, slo_ttft_s=-1), "slo_ttft_s must be a time > 0"),
        (lambda: sweep_findings(pd.DataFrame()), "the sweep holds no load"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    assert resolve_acceptance(alpha=np.float64(0.7))[0] == 0.7  # numpy's numbers are numbers


def test_the_library_checks_what_the_flags_check_and_refuses_bools_and_strings_for_numbers():
    """Each of these gave an answer from the library that the command refuses (gamma 100 at 0.25x, a fractional batch,
    10 million users, a negative SLO meeting nothing), or took True as alpha 1 and "0.8" as 0.8 (numpy reads both)."""
    from specsim.answers import closed_form_answer, deployment_capacity, gamma_answer, speedup_rows, steptime_rows
    from specsim.answers.compare import compare_answer
    from specsim.answers.load import load_answer
    from specsim.answers.serve import serve_sim, sim_load
    from specsim.serving.steady import EngineLimits
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.search import optimal_gamma

    dep = deployment()
    cap = deployment_capacity(dep, 1128, None, None)
    at_load = lambda loads, **kw: load_answer(dep, 0.8, "alpha 0.8", "concurrency", loads, 1000, 256, **kw)  # noqa: E731
    cases = [
        (lambda: speedup_rows(dep, 0.8, "x", 100, [1]), "gamma must be an integer in [0, 64], got 100"),
        (lambda: closed_form_answer(0.8, 1000, 0.05), "gamma must be an integer in [0, 64], got 1000"),
        (lambda: at_load([1], gamma=100), "gamma must be an integer in [0, 64], got 100"),
        (lambda: at_load([1], gamma_max=-1), "gamma_max must be an integer in [0, 64], got -1"),
        (lambda: speedup_rows(dep, 0.8, "x", 3, [1.5]), "batch must be an integer in [1, 65536], got 1.5"),
        (lambda: gamma_answer(dep, 0.8, "x", [1, 64], 1.5, 16, 0.0, cap), "context must be an integer"),
        (lambda: gamma_answer(dep, 0.8, "x", [1], 8192, 16, 0.0, cap), "the capacity given reserves 1,128 tokens"),
        (lambda: steptime_rows(dep, [1], [10**6], 1128), "tokens_per_seq must be an integer in [1, 65]"),
        (lambda: at_load([10**7]), "concurrency must be an integer in [1, 65536]"),
        (
            lambda: load_answer(dep, 0.8, "alpha 0.8", "rate", [1e9], 1000, 256),
            "rate must be a number in (0, 1,000,000]",
        ),
        (
            lambda: load_answer(dep, 0.8, "alpha 0.8", "users", [1], 1000, 256),
            "kind must be concurrency, rate or batch",
        ),
        (
            lambda: load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1], 0, 256),
            "input_tokens must be a number in [1,",
        ),
        (lambda: serve_sim(dep, sim_load(dep, rate=2.0, n=20, runs=1), 0.8, slo_tpot_s=-1), "slo_tpot_s must be"),
        (lambda: sim_load(dep, rate=1.0, n=10, seed=-1), "seed must be an integer in [0, 4294967295], got -1"),
        (lambda: optimal_gamma(dep, True, [1, 64]), "acceptance must be an alpha in [0, 1] (a number or an array"),
        (lambda: optimal_gamma(dep, "0.8", [1, 64]), "not a bool or a string"),
        (lambda: speedup_rows(dep, "0.8", "x", 3, [64]), "not a bool or a string"),
        (lambda: closed_form_answer(True, 3, 0.05), "alpha must be a number in [0, 1], got True"),
        (lambda: closed_form_answer(0.8, True, 0.05), "gamma must be an integer in [0, 64], got True"),
        (lambda: Deployment.build("h100-sxm", "llama-3.1-8b", engine_overhead_ms="1"), "engine_overhead_ms must be"),
        (lambda: at_load([1], limits=EngineLimits(1024, 1)), "vLLM refuses to start with max_num_batched_tokens 1"),
        (
            lambda: compare_answer(dep, 0.8, [1, 8], 1128, None, 16, None, None, max_batched_tokens=16),
            "vLLM refuses to start with max_num_batched_tokens 16 below max_num_seqs 1,024",
        ),
        (
            lambda: load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1], 1000, 1),
            "output_tokens must be a number in [2,",
        ),
        (lambda: closed_form_answer(0.8, 3, 10**400), "cost_ratio must be a number in [0, inf), got"),
        (lambda: closed_form_answer(0.8, 3, float("inf")), "cost_ratio must be a number in [0, inf), got inf"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    # numbers of numpy's and a scalar load are taken, and rows hold Python ints that JSON writes
    rows = gamma_answer(dep, 0.8, "alpha 0.8", np.arange(1, 3), 1128, 16, 0.0, cap).rows
    assert json.dumps([r["batch"] for r in rows]) == "[1, 2]"
    assert json.dumps([r["batch"] for r in speedup_rows(dep, 0.8, "x", 3, np.array([1, 64]))[0]]) == "[1, 64]"
    assert at_load(8).rows[0]["load"] == "concurrency 8"
    # what the flags take, the library takes: any finite cost ratio, any finite SLO
    assert closed_form_answer(0.8, 3, 1e7)["speedup"] < 1e-6


def test_the_library_says_where_a_gamma_passes_a_calibrations_measured_steps_as_the_command_does(
    eagle3_calibration, capsys
):
    """The caveat 'past the 3 draft steps its acceptance was measured at: extrapolated' was computed by the command
    (cli.args.measured_steps) and missing from the library's answer; the calibration's Acceptance now carries its
    measured steps, and both read them there."""
    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.answers.acceptance import resolve_acceptance
    from specsim.calibration.file import read_calibration
    from specsim.speculation.deployment import Deployment

    out = eagle3_calibration  # calibrate-engine of vllm-plain.jsonl and vllm-eagle3.jsonl (tests/conftest.py)
    cal = read_calibration(out)
    dep = Deployment.build(calibration=cal)
    acc, label = resolve_acceptance(dep, calibration=cal, context=1128)
    cap = deployment_capacity(dep, 1128, None, None)
    mine = [r["recommendation"] for r in gamma_answer(dep, acc, label, [1, 64], 1128, 16, 0.0, cap).rows]
    printed = [r["recommendation"] for r in cli(capsys, "optimal-gamma", "--calibration", str(out), "--batch", "1,64")]
    assert mine == printed and "past the 3 draft steps its acceptance was measured at: extrapolated" in mine[0]


def test_the_diff_reviews_findings_on_library_inputs_stay_fixed(tmp_path):
    """What this session's changes first got wrong, each once: a Workload of one's own in serve_sweep without an
    acceptance (refused by name), numpy SLOs and draft steps (refused), a single Path to runs_from_files (a TypeError),
    request_lengths(2000.0) (refused though whole), Requests.poisson with a text count (a TypeError), the old import
    path of the catalogue (an ImportError), and an answer built without its engine limits (an AttributeError)."""
    from pathlib import Path

    from specsim.answers.load import request_lengths
    from specsim.calibration.inputs import runs_from_files
    from specsim.core.workloads import Workload
    from specsim.serving.simulator import serve_sweep
    from specsim.serving.workloads import WORKLOADS, Requests, get_workload  # the old home still imports

    dep = deployment()
    mine = Workload("my-trace", 500, 0.5, 100, 0.5, 4096, 1024, "my own lengths")
    assert len(serve_sweep(dep, [1.0], mine, 30)) == 1  # reads its acceptance class (chat)
    assert len(serve_sweep(dep, [1.0], "chat", 30, 0.8, slo_ttft_s=np.float32(0.5), slo_tpot_s=np.int64(1))) == 1
    with pytest.raises(ValueError, match="slo_tpot_s must be a time > 0"):
        serve_sweep(dep, [1.0], "chat", 30, 0.8, slo_tpot_s=True)
    bench = REPO / "examples" / "bench"
    runs, _, _ = runs_from_files([bench / "vllm-plain.jsonl"], [([bench / "vllm-eagle3.jsonl"], np.int64(3))])
    assert {c.kind for c in runs} == {"plain", "spec"}
    with pytest.raises(ValueError, match="lists of paths, not one path"):
        runs_from_files(Path(bench / "vllm-plain.jsonl"), [])
    assert request_lengths(2000.0).input_tokens == 2000.0
    with pytest.raises(ValueError, match="requests must be an integer"):
        Requests.poisson(1.0, "10", "chat", np.random.default_rng(0))
    assert WORKLOADS["chat"] is get_workload("chat")


def test_what_holds_the_speculating_batch_back_is_the_librarys_where_a_limit_holds_it(capsys):
    """SGLang speculates with at most 48 sequences: at 56 users the finding names it, the same from the library's answer
    as from the command's JSON (at a load where nothing holds it both are None, which would not tell them apart)."""
    from specsim.answers.serve import serve_sim, sim_load
    from specsim.speculation.deployment import Deployment

    argv = ["--requests", "60", "--runs", "1", "--input-len", "1000", "--output-len", "300", "--concurrency", "56"]
    printed = cli(capsys, "serve-sim", *argv, "--engine", "sglang")
    dep = Deployment.build(engine="sglang")
    answer = serve_sim(dep, sim_load(dep, concurrency=56, n=60, lengths=(1000, 300), runs=1), printed_alpha(printed))
    assert answer.held_back() == printed["speculating_batch_held"] is not None
    assert "the engine's max_num_seqs while speculating (48)" in answer.held_back()


def printed_alpha(printed: dict) -> float:
    """The alpha a serve-sim --json printed (its acceptance label starts with it)."""
    return float(re.match(r"alpha ([0-9.]+)", printed["acceptance"]).group(1))


def test_a_label_that_names_another_alpha_is_refused():
    """A row shows its label as the acceptance it was computed at: gamma_answer(dep, 0.6, "alpha 0.8") printed 0.8
    beside figures of 0.6.  An int alpha is recorded as one (speedup_rows gave None for alpha 1)."""
    from specsim.answers import deployment_capacity, gamma_answer, speedup_rows

    dep = deployment()
    cap = deployment_capacity(dep, 1128, None, None)
    with pytest.raises(ValueError, match="the label says alpha 0.8 but the acceptance given is 0.6"):
        gamma_answer(dep, 0.6, "alpha 0.8", [1], 1128, 16, 0.0, cap)
    assert gamma_answer(dep, 0.8, "alpha 0.800 (as resolved)", [1], 1128, 16, 0.0, cap).rows[0]["gamma"] > 0
    assert speedup_rows(dep, 1, "alpha 1", 3, [1])[0][0]["alpha"] == 1.0


def test_an_answer_left_without_a_label_names_its_acceptance_and_a_string_alpha_is_refused_by_name():
    """gamma_answer(dep, "0.8") and round_anatomy(dep, "0.8") raised numpy's "Unknown format code 'g' for object of type
    'str'" (the label was formatted before the acceptance was checked); gamma_answer(dep, np.array([0.6, 0.8])) raised
    "unsupported format string passed to numpy.ndarray.__format__"; load_answer(dep, 0.8, None, ...) and
    schedule_answer(dep, 0.8, None, ...) raised AttributeError 'NoneType' object has no attribute 'split', and
    speedup_rows(dep, 0.8, None, ...) put None in every row's acceptance.  A label left out is now the acceptance's own
    (acceptance_label) in every answer, and a string is refused by the same message as elsewhere; schedule_answer,
    which did not check its label, refuses one naming another alpha as the other answers do."""
    from specsim.answers import deployment_capacity, gamma_answer, speedup_rows
    from specsim.answers.anatomy import round_anatomy
    from specsim.answers.load import load_answer
    from specsim.answers.schedule import schedule_answer

    dep = deployment()
    refused = "acceptance must be an alpha in [0, 1] (a number or an array of numbers, not a bool or a string)"
    for call in (lambda: gamma_answer(dep, "0.8"), lambda: round_anatomy(dep, "0.8", None, [1])):
        with pytest.raises(ValueError, match=re.escape(refused)):
            call()
    assert gamma_answer(dep, np.array([0.6, 0.8]), batches=[1, 64]).rows[1]["acceptance"] == "alpha 0.6, 0.8"
    assert load_answer(dep, 0.8, None, "concurrency", [1], 500, 256).records()[0]["acceptance"] == "alpha 0.8"
    assert speedup_rows(dep, 0.8, None, 3, [1])[0][0]["acceptance"] == "alpha 0.8"
    cap = deployment_capacity(dep, 1128, None, None)
    assert schedule_answer(dep, 0.8, None, cap, max_batch=8).label == "alpha 0.8"
    with pytest.raises(ValueError, match="the label says alpha 0.8 but the acceptance given is 0.6"):
        schedule_answer(dep, 0.6, "alpha 0.8", cap, max_batch=8)  # it printed 0.8 beside a schedule of 0.6


def test_the_top_level_names_are_the_library_functions_and_load_nothing_until_used():
    """``specsim.X`` is the object of X's module for every name ``dir(specsim)`` lists, and importing specsim loads
    none of their modules (a command's cold start pays for its own only)."""
    import importlib
    import subprocess
    import sys

    import specsim

    listed = [n for n in dir(specsim) if not n.startswith("_")]
    assert set(specsim._API) <= set(listed)
    for name, module in specsim._API.items():
        assert getattr(specsim, name) is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        specsim.nope  # noqa: B018
    code = "import sys, specsim; print(sorted(m for m in sys.modules if m.startswith('specsim.')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_an_answer_given_a_name_where_a_deployment_belongs_names_the_keyword():
    """gamma_answer("h100-sxm", 0.8) raised AttributeError "'str' object has no attribute 'require_within_positions'",
    load_answer and serve_sim "'str' object has no attribute 'engine'", sim_load "... 'target'": a notebook's slip
    (a hardware name for the deployment) failed deep inside.  Each front-door function that takes a deployment now
    refuses anything else by its keyword, in one TypeError, as Deployment.build refuses an object for a name."""
    import specsim

    message = r"^dep is a Deployment \(specsim.Deployment.build\(hardware, target, draft, ...\)\), got str 'h100-sxm'$"
    dep = deployment()
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    calls = [
        lambda d: specsim.gamma_answer(d, 0.8),
        lambda d: specsim.deployment_capacity(d, 1128, None, None),
        lambda d: specsim.capacity_record(d, 8192),
        lambda d: specsim.speedup_rows(d, 0.8, None, 3, [1]),
        lambda d: specsim.steptime_rows(d, [1], [1], 1128),
        lambda d: specsim.load_answer(d, 0.8, None, "concurrency", [1], 500, 256),
        lambda d: specsim.round_anatomy(d, 0.8, None, [1]),
        lambda d: specsim.load_anatomy(d, 0.8, None, None, 1128),
        lambda d: specsim.compare_answer(d, 0.8, [1]),
        lambda d: specsim.schedule_answer(d, 0.8, None, cap, max_batch=8),
        lambda d: specsim.sim_load(d, rate=1.0, n=5),
        lambda d: specsim.serve_sim(d, None, 0.8),
        lambda d: specsim.optimal_gamma(d, 0.8, [1]),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=message):
            call("h100-sxm")
    assert (
        specsim.optimal_gamma(dep, 0.8, [1]).gamma.tolist()
        == specsim.gamma_answer(dep, 0.8, batches=[1]).best.gamma.tolist()
    )


def test_build_given_a_calibrations_path_names_the_keyword_and_what_reads_it(eagle3_calibration):
    """Deployment.build(calibration="cal.yaml") raised AttributeError "'str' object has no attribute 'fixes'" from
    inside build: a notebook passes the file where the command's --calibration takes one.  It now refuses it by the
    keyword, in one TypeError that names what reads the file, and the read calibration builds as before."""
    import specsim

    message = r"^calibration is a calibration read from its file \(specsim.read_calibration\(path\)\), got "
    for given, got in ((str(eagle3_calibration), "str '/"), (0.5, "float 0.5")):
        with pytest.raises(TypeError, match=message + re.escape(got)):
            specsim.Deployment.build(calibration=given)
    dep = specsim.Deployment.build(calibration=specsim.read_calibration(eagle3_calibration))
    assert dep.engine.calibration and dep.engine.calibration in repr(dep)
    # read_calibration(cal), a read calibration read again, raised pathlib's "expected str, bytes or os.PathLike
    # object, not Calibration"
    read_already = (
        "path is a calibration file's path (a str or a Path), got Calibration: a calibration read already goes"
    )
    with pytest.raises(TypeError, match="^" + re.escape(read_already)):
        specsim.read_calibration(specsim.read_calibration(eagle3_calibration))


def test_deployment_capacity_names_max_context_where_it_is_the_one_out_of_range():
    """deployment_capacity(dep, 1128, 10**7, None) said "context must be an integer in [0, 4194304], got 10000000":
    the value was max_context's, the name context's (the positions' check reads the tokens reserved as a context)."""
    from specsim.answers import deployment_capacity

    dep = deployment()
    for given in (10**7, 2.5, "8192"):
        with pytest.raises(
            ValueError, match=re.escape(f"max_context must be an integer in [0, 4194304], got {given!r}")
        ):
            deployment_capacity(dep, 1128, given, None)
    assert deployment_capacity(dep, 1128, 8192, None).context_tokens == 8192


def test_a_notebooks_echo_of_a_deployment_names_the_engine_release_it_was_built_for():
    """Deployment.build(..., engine="vllm@0.26.0") echoed "engine vllm@0.14": the preset's key, not the release asked
    for, which its identity() (engine 'vllm@0.26.0') and every --json name; the echo now names both, as the engine's
    label does (and an unversioned or exact preset keeps its key)."""
    import specsim

    def echo(engine):
        dep = specsim.Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine=engine)
        return repr(dep).rsplit("engine ", 1)[1]

    assert echo("vllm@0.26.0") == "vllm 0.26.0 (preset vllm@0.14))"
    assert (echo("vllm"), echo("vllm@0.14"), echo("none")) == ("vllm@latest)", "vllm@0.14)", "none)")


def test_a_notebooks_echo_of_an_answer_is_its_answer_not_every_field():
    """A notebook echoes the last value of a cell: a GammaAnswer printed 14,335 characters (the whole Deployment, its
    profile's notes included), a LoadAnswer 28,523.  Each now says who, on what, and the answer per batch or load."""
    import specsim

    dep = specsim.Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    assert repr(dep) == "Deployment(llama-3.1-8b + llama-3.2-1b on h100-sxm, roofline step times, engine vllm@latest)"
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    answer = specsim.gamma_answer(dep, 0.8, "alpha 0.8", [1, 64], 1128, 16, 0.0, cap)
    rows = answer.rows
    assert repr(answer) == (
        f"GammaAnswer({dep!r}, alpha 0.8; batch 1: gamma {rows[0]['gamma']} {rows[0]['speedup']:.3f}x, "
        f"batch 64: gamma {rows[1]['gamma']} {rows[1]['speedup']:.3f}x)"
    )
    at = specsim.load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 8], 1000, 256)
    assert repr(at).startswith(f"LoadAnswer({dep!r}, alpha 0.8; concurrency 1: gamma {at.rows[0]['gamma']} ")
    sim = specsim.serve_sim(dep, specsim.sim_load(dep, concurrency=4, n=20, runs=1), 0.8)
    assert repr(sim).startswith(f"ServeSimAnswer({dep!r}, 4 users, 1 run of 20 requests; off: TPOT p50 ")
    assert max(len(repr(x)) for x in (answer, at, sim)) < 400


def test_a_sweeps_frame_carries_the_notes_and_provenance_the_commands_print():
    """optimal_gamma_table's frame lost what the commands print beside the same numbers (the attention data stopping
    at a smaller batch, the overlap assumed): its attrs now hold them, and each deployment's provenance."""
    from specsim.speculation.sweep import optimal_gamma_table

    table = optimal_gamma_table(alpha=0.8, batch=[1, 256])
    assert any("decode-attention data stop at a smaller batch" in n for n in table.attrs["notes"])
    assert any(n.startswith("assumed: vllm@latest hides all of a round's host work") for n in table.attrs["notes"])
    (provenance,) = table.attrs["provenance"].values()
    assert any(line.startswith("engine: ") for line in provenance)


def test_build_names_what_it_takes_where_a_notebook_passes_an_object_for_a_name():
    """Deployment.build(..., make_drafter("eagle3", ...)) or a ModelShape for the target or draft raised OSError 'File
    name too long' (the object's repr read as a path): now one TypeError naming the argument, what it takes, and the
    constructor that takes the objects themselves."""
    from specsim.describe.models import get_model
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.drafters import make_drafter

    shape = get_model("llama-3.2-1b")
    head = make_drafter("eagle3", get_model("llama-3.1-8b"))
    for kw, what, got in (
        ({"draft": head}, "a draft", "Eagle3Head: an object goes to Deployment(hardware, target, drafter)"),
        ({"draft": shape}, "a draft", "ModelShape: an object goes to Deployment(hardware, target, drafter)"),
        ({"target": shape}, "a model", "ModelShape: an object goes to Deployment(hardware, target, drafter)"),
        ({"hardware": 3}, "hardware", "int"),
    ):
        args = {"hardware": "h100-sxm", "target": "llama-3.1-8b", "draft": "llama-3.2-1b"} | kw
        with pytest.raises(TypeError, match=rf"^{what} is .* \(a str or a Path\), got {re.escape(got)}$"):
            Deployment.build(**args)
    with pytest.raises(TypeError, match=r"^a model is .*, got ModelShape"):
        get_model(shape)
    # a Path is a path, as a str is
    assert Deployment.build("h100-sxm", REPO / "examples" / "draft-1layer-llama-3.1-8b", timing="roofline").target


def test_a_calibrations_serving_limits_give_the_commands_answer_at_a_load(capsys, tmp_path):
    """--calibration takes the limits its runs were fitted under where --max-num-seqs is not given; docs/library.md's
    calls passed none (the engine's own): from runs served at max_num_seqs 64, concurrency 128 was gamma 3 at 1.139x
    from the library and gamma 4 at 1.265x from the command.  The calibrated preset carries them
    (EnginePreset.served_limits), so the library's answers take them unasked, as the command does."""
    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.answers.acceptance import resolve_acceptance
    from specsim.answers.load import load_answer, request_lengths
    from specsim.calibration.file import read_calibration
    from specsim.speculation.deployment import Deployment

    bench, out = REPO / "examples" / "bench", tmp_path / "cal64.yaml"
    argv = ["--plain", str(bench / "vllm-plain.jsonl"), "--spec", str(bench / "vllm-eagle3.jsonl"), "--hardware"]
    argv += ["h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.10", "--timing", "roofline"]
    assert main(["calibrate-engine", *argv, "--max-num-seqs", "64", "--out", str(out)]) == 0
    capsys.readouterr()
    lengths = ["--input-len", "1000", "--output-len", "256"]
    at_load = cli(capsys, "optimal-gamma", "--calibration", str(out), "--concurrency", "1,128", *lengths)
    at_batch = cli(capsys, "optimal-gamma", "--calibration", str(out), "--batch", "1,64")

    cal = read_calibration(out)
    dep = Deployment.build(calibration=cal)
    assert dep.engine.served_limits[::3] == (64, "the limits cal64.yaml's runs were fitted under")
    given = request_lengths(1000, 256)
    acc, label = resolve_acceptance(dep, calibration=cal, context=given.context_tokens)
    answer = load_answer(dep, acc, label, "concurrency", [1, 128], 1000, 256, lengths=given.description)  # no limits
    assert answer.limits.max_num_seqs == 64
    assert answer.limits_from == "the limits cal64.yaml's runs were fitted under"
    said = f" ({answer.limits_from}; --max-num-seqs and --max-batched-tokens to set)"  # the command's clause
    assert at_load == as_json(answer.records(said))
    context = cal.context_tokens
    acc, label = resolve_acceptance(dep, calibration=cal, context=context)
    cap = deployment_capacity(dep, context, None, None)  # no limits: the calibration's, as the command's
    rows = gamma_answer(dep, acc, label, [1, 64], context, 16, 0.0, cap).rows
    assert {r.pop("context_basis") for r in at_batch} == {"the runs cal64.yaml was fitted to: 1,000 in, 256 out"}
    assert at_batch == as_json([{k: v for k, v in r.items() if k != "context_basis"} for r in rows])


def test_a_notebook_shows_an_answer_as_a_table_with_its_sources_beside_it():
    """An answer displayed in a notebook was its one-line repr; pd.DataFrame(answer.rows) repeated the provenance, the
    deployment and the acceptance in every row, and a load's arms stayed dicts.  to_frame() gives one row per batch or
    load, the arms' figures flattened, what every record repeats in attrs; _repr_html_ shows it under the echo."""
    import specsim

    dep = specsim.Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    answers = (
        specsim.gamma_answer(dep, 0.8, "alpha 0.8", [1, 64], 1128, 16, 0.0, cap),
        specsim.load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 8], 1000, 256),
        specsim.compare_answer(dep, 0.8, [1, 64], 1128, None, 16, None, None),
    )
    for answer, records in zip(answers, (answers[0].rows, answers[1].records(), answers[2].records())):
        frame = answer.to_frame()
        assert len(frame) == len(records) and "verdict" in frame and "provenance" not in frame
        assert frame.attrs["provenance"] == dep.provenance() and frame.attrs["deployment"] == dep.identity()
        assert frame.attrs["model_error"] == answer.model_error.record() and frame.attrs["notes"] == dep.notes()
        assert frame.attrs["acceptance"] == "alpha 0.8"
        shown = answer._repr_html_()
        assert shown.count("<table") == 1 and "llama-3.1-8b + llama-3.2-1b on h100-sxm" in shown
        assert "too close to call" in shown  # the verdicts' threshold, with where it comes from
    frame = answers[1].to_frame()
    assert frame["spec.tpot_s"].tolist() == [r["spec"]["tpot_s"] for r in answers[1].rows]
    assert frame["speedup_tpot"].tolist() == [r["speedup_tpot"] for r in answers[1].rows]


def test_a_notebooks_echo_of_a_deployments_parts_is_one_line():
    """dep.engine echoed 1,540 characters (every fitted term and its basis), REGISTRY["vllm"] 12,808, the hardware 1,541
    (its notes), the target 1,273 and an EAGLE-3 head 1,593 (every field of its network): each now says what it is in
    one line; the fields are the dataclasses' as before (dataclasses.fields, describe(), specsim engines show)."""
    import dataclasses

    import specsim
    from specsim.engines import REGISTRY, get_engine

    dep = specsim.Deployment.build("h200", "qwen3-32b", "eagle3", engine="vllm")
    assert repr(dep.engine) == "EnginePreset(vllm@latest, as vllm)"
    assert repr(get_engine("vllm@0.24.0")) == "EnginePreset(vllm@0.14, as vllm@0.24.0)"
    assert repr(REGISTRY["vllm"]).startswith("Engine(vllm: presets vllm@0.10, vllm@0.14, ")
    assert repr(dep.hardware) == "HardwareProfile(h200: 989 TFLOP/s, 4.80 TB/s, 151 GB)"
    assert repr(dep.target) == "ModelShape(qwen3-32b (32.8B params; weights bf16, KV bf16))"
    assert repr(dep.drafter) == f"Eagle3Head({dep.drafter.step_model.describe()})"
    others = [specsim.Deployment.build("h200", "qwen3-32b", d).drafter for d in ("qwen3-0.6b", "ngram", "suffix")]
    assert [repr(d).split("(")[0] for d in others] == [type(d).__name__ for d in others]
    parts = (dep.engine, REGISTRY["vllm"], dep.hardware, dep.target, dep.drafter, *others)
    assert max(len(repr(x)) for x in parts) < 120
    assert dataclasses.replace(dep.hardware, name="other") != dep.hardware  # still dataclasses, compared by field


def test_build_names_the_options_a_model_takes_where_one_is_unknown():
    """target_options={"tpp": 2} raised Python's own "get_model() got an unexpected keyword argument 'tpp'", naming
    neither the argument nor what it takes."""
    from specsim.speculation.deployment import Deployment

    takes = "it takes weight_dtype, kv_dtype, tp, routing_effective_experts, routing_correlation"
    for kw, message in (
        ({"target_options": {"tpp": 2}}, f"target_options: 'tpp' is not an option of a model; {takes}"),
        ({"draft_options": {"dtype": "fp8"}}, f"draft_options: 'dtype' is not an option of a model; {takes}"),
        ({"target_options": [("tp", 2)]}, "target_options must be a mapping of weight_dtype, kv_dtype, tp, "),
    ):
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", **kw)
    assert Deployment.build("h100-sxm", "llama-3.1-8b", target_options={"tp": 2}).target.tp == 2


def test_gamma_answer_takes_the_commands_defaults_for_what_it_is_not_given(capsys):
    """gamma_answer took eight positional arguments, none defaulted (the label, the batches, the context, gamma_max, rtol
    and a capacity the caller had to build): gamma_answer(dep, 0.8) is now optimal-gamma --alpha 0.8."""
    from specsim.answers import gamma_answer
    from specsim.core.names import as_flags

    printed = cli(capsys, "optimal-gamma", *BASE, "--alpha", "0.8")
    assert _article_context(printed, as_given=False)  # and the library's rows say so too (they said "given")
    rows = gamma_answer(deployment(), 0.8).rows
    assert (
        "as engine names no release" in rows[0]["capacity"]["memory_basis"]
    )  # Deployment.build's engine; --engine in main
    with as_flags():
        assert printed == as_json(gamma_answer(deployment(), 0.8).rows)


def _named_in(doc: str, parameter: str) -> bool:
    """Whether a docstring names ``parameter``: as ``name`` in prose, or on a NumPy-style Parameters line."""
    return f"``{parameter}``" in doc or bool(re.search(rf"^\s*(\w+, )*{parameter}(, \w+)* :", doc, re.MULTILINE))


def test_every_function_of_the_front_door_has_a_doctest_and_names_each_parameter():
    """STYLE.md: public functions get docstrings with the unit of every parameter and a doctest that runs (the suite
    collects them: pyproject's --doctest-modules).  Fourteen of the functions specsim exports at its top level
    (specsim._API, which docs/library.md uses) had no doctest, and most left parameters unnamed (deployment_capacity's
    ``context``, closed_form_answer's three, load_answer's ``loads``); each now has both."""
    import inspect

    import specsim

    missing = {}
    for name in specsim._API:
        obj = getattr(specsim, name)
        if inspect.isclass(obj):
            continue
        doc = inspect.getdoc(obj) or ""
        unnamed = [p for p in inspect.signature(obj).parameters if not _named_in(doc, p)]
        if ">>>" not in doc or unnamed:
            missing[name] = ("no doctest; " if ">>>" not in doc else "") + f"unnamed: {unnamed}"
    assert not missing, missing


def test_the_front_doors_searches_refuse_a_context_past_the_positions_as_the_commands_do(capsys):
    """specsim.round_anatomy answered a round at 1,000,000 cached tokens on Llama-3.1-8B (131,072 positions), and one
    of 131,070 tokens where vLLM verifies no draft, where ``specsim explain`` refuses both (the second was checked in
    the command, not the library); specsim.optimal_gamma answered gamma 0 at speedup 1.0 there, and named a NaN
    context 'gamma_max ... got -9223372036854775808'.  Each is now the line the command prints."""
    import specsim

    dep = deployment()
    past = "a context of 1,000,000 tokens is past llama-3.1-8b's max_position_embeddings (131,072)"
    no_room = "gamma 1 at a context of 131,070 tokens drafts past llama-3.1-8b's last positions"
    cases = [
        (lambda: specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1], 1_000_000), past),
        (lambda: specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1], 131_070), no_room),
        (lambda: specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1], 131_067, gamma=4), "vLLM verifies 3 draft token(s)"),
        (lambda: specsim.optimal_gamma(dep, 0.8, [1], 1_000_000), past),
        (lambda: specsim.optimal_gamma(dep, 0.8, [1], [1128, 1_000_000]), past),
        (lambda: specsim.optimal_gamma(dep, 0.8, [1], float("nan")), "context must be in [0, 4194304], got nan"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    for context, message in (("1000000", past), ("131070", no_room)):
        assert main(["explain", *BASE, "--batch", "1", "--context", context]) == 2
        assert message in capsys.readouterr().err
    # within the positions both answer, as before
    assert specsim.optimal_gamma(dep, 0.8, [1], 131_066).gamma.tolist() == [4]
    assert specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1], 131_067, gamma=3).rows[0]["gamma"] == 3


def test_a_notebooks_echo_of_a_search_a_load_or_a_schedule_is_its_answer_not_every_array():
    """The front door's other results echoed every field: specsim.optimal_gamma over batch 1-256 printed 81,654
    characters (the round's every array), sim_load's 10 runs of 200 requests every prompt and output length, a
    RoundAnatomy 5,830 for two batches (each row's provenance), a ScheduleAnswer 2,086 (its capacity's every byte
    count).  Each now says what it holds in a line; the fields are the dataclasses' as before."""
    import specsim

    dep = deployment()
    best = specsim.optimal_gamma(dep, 0.8, np.arange(1, 257), 1128)
    g, s = best.gamma, best.speedup
    assert repr(best) == (
        f"OptimalGamma(256 points, gamma searched 0..16: gamma [{g[0]}, {g[1]}, {g[2]}, ..., {g[-2]}, {g[-1]}], "
        f"speedup [{s[0]:.3f}, {s[1]:.3f}, {s[2]:.3f}, ..., {s[-2]:.3f}, {s[-1]:.3f}]; memory not checked: "
        "specsim.gamma_answer checks it)"
    )
    assert repr(specsim.optimal_gamma(dep, 0.8, 1, 1128)).startswith("OptimalGamma(1 point, gamma searched 0..16: ")
    load = specsim.sim_load(dep, concurrency=32, n=200, lengths=(3000, 500))
    assert (
        repr(load)
        == "SimLoad(10 runs of 200 requests (seeds 0-9), 32 users; closed loop, every request 3000 in, 500 out)"
    )
    assert repr(load.request_sets[0]) == (
        "Requests(200 requests, mean 3,000 tokens in, 500 out; closed loop, every request 3000 in, 500 out)"
    )
    poisson = specsim.sim_load(dep, rate=3.0, n=50, runs=1, seed=5).request_sets[0]
    assert repr(poisson).startswith(f"Requests(50 requests arriving over {poisson.arrival_s[-1]:,.3g} s, mean ")
    anatomy = specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1, 64], 1128)
    r = anatomy.rows[0]
    assert repr(anatomy).startswith(
        f"RoundAnatomy({dep!r}, alpha 0.8, context 1128; batch 1: gamma {r['gamma']} round "
        f"{r['t_round_s'] * 1e3:.3f} ms {r['speedup']:.3f}x, batch 64: "
    )
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    schedule = specsim.schedule_answer(dep, 0.8, "alpha 0.8", cap, max_batch=256)
    said = "; ".join(f"batch {x.batches}: gamma {x.gamma}" for x in schedule.ranges)
    assert repr(schedule) == f"ScheduleAnswer({dep!r}, alpha 0.8; {said})"
    assert max(len(repr(x)) for x in (best, load, anatomy, schedule)) < 400


def test_steptime_rows_refuses_what_steptime_refuses(capsys):
    """steptime refused a target that does not fit and a context past its positions by a check in the command
    (cli/model.py), while specsim.steptime_rows timed both: Llama-3.1-70B on one H100 (141 GB of weights) at 52.5 ms a
    step, Qwen3-32B at 1,000,000 cached tokens.  The check is the library's now, and the command's line is its."""
    import specsim
    from specsim.speculation.deployment import Deployment

    cases = [
        (("h100-sxm", "llama-3.1-70b"), 1128, "llama-3.1-70b in bf16 (141.1 GB of weights per GPU) does not fit"),
        (("h200", "qwen3-32b"), 1_000_000, "a context of 1,000,000 tokens is past qwen3-32b's max_position_embeddings"),
    ]
    for (hardware, model), context, message in cases:
        dep = Deployment.build(hardware, model, timing="roofline", decode_only=True)
        with pytest.raises(ValueError, match=re.escape(message)):
            specsim.steptime_rows(dep, [1], [1], [1128, context])
        argv = ["steptime", "--hardware", hardware, "--model", model, "--timing", "roofline", "--batch", "1"]
        assert main([*argv, "--context", str(context)]) == 2
        assert message in capsys.readouterr().err


def test_speedup_and_explain_from_the_library_refuse_a_target_that_does_not_fit_as_the_commands_do(capsys):
    """A 70B target left on one H100 (its tp forgotten): ``speedup`` and ``explain`` refuse it (141 GB of weights,
    81.6 GB usable), while specsim.speedup_rows answered 2.79x at gamma 3 and specsim.round_anatomy 3.82x at gamma 11,
    the check being the commands' own.  Both check it now (the command's capacity, at its --memory-util and limits,
    passed as ``cap``), and a capacity reserving fewer tokens than the context is refused, as gamma_answer refuses it."""
    import specsim
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", timing="roofline")
    message = (
        "llama-3.1-70b in bf16 (141.1 GB of weights per GPU) does not fit on one h100-sxm (81.6 GB usable per GPU)"
    )
    for call in (
        lambda: specsim.speedup_rows(dep, 0.8, "alpha 0.8", 3, [1], 1128),
        lambda: specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1], 1128),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    argv = ["--hardware", "h100-sxm", "--target", "llama-3.1-70b", "--timing", "roofline", "--batch", "1"]
    for command in (["speedup", "--gamma", "3"], ["explain"]):
        assert main([*command, *argv]) == 2
        assert message in capsys.readouterr().err
    small = specsim.deployment_capacity(deployment(), 512, None, None)
    for call in (
        lambda: specsim.speedup_rows(deployment(), 0.8, "alpha 0.8", 3, [1], 1128, cap=small),
        lambda: specsim.round_anatomy(deployment(), 0.8, "alpha 0.8", [1], 1128, cap=small),
    ):
        with pytest.raises(ValueError, match=re.escape("the capacity given reserves 512 tokens a sequence")):
            call()


def test_a_notebook_shows_a_round_anatomy_as_a_table_with_its_sources_beside_it():
    """GammaAnswer, LoadAnswer and CompareAnswer display as a table in a notebook; round_anatomy's answer (explain's)
    had no _repr_html_ and no to_frame, so a notebook showed its echo alone.  It is Framed now: each part of a round a
    column, the sources in attrs, the verdicts' threshold above the table."""
    import specsim

    dep = deployment()
    anatomy = specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1, 64], 1128)
    frame = anatomy.to_frame()
    assert frame["speedup"].tolist() == [r["speedup"] for r in anatomy.rows]
    assert frame["parts_s.verification"].tolist() == [r["parts_s"]["verification"] for r in anatomy.rows]
    assert frame.attrs["provenance"] == dep.provenance() and frame.attrs["acceptance"] == "alpha 0.8"
    shown = anatomy._repr_html_()
    assert shown.startswith("<p><code>RoundAnatomy(") and "too close to call" in shown and "<table" in shown


def test_a_misspelt_drafter_is_named_before_an_engine_release_refuses_draft_models(capsys):
    """``--draft eagle9`` (eagle3 mistyped) with ``--engine vllm@0.10`` was read as a draft model and refused as one
    ('vllm@0.10 ... refuses method draft_model ...'), from Deployment.build and every command, calibrate-engine
    included: the typo was never named.  The unknown name comes first now, with make_drafter's line; a real draft
    model on that release is still refused for the release."""
    from specsim.speculation.deployment import Deployment

    unknown = "unknown model 'eagle9'; specsim models lists the built-in ones"
    with pytest.raises(ValueError, match=re.escape(unknown)) as caught:
        Deployment.build("h100-sxm", "llama-3.1-8b", "eagle9", engine="vllm@0.10")
    assert str(caught.value).endswith("did you mean draft eagle?")
    with pytest.raises(ValueError, match=re.escape("vllm@0.10 (vLLM 0.13.0, the newest release of 0.10-0.13) refuses")):
        Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.10")
    assert main(["optimal-gamma", "--draft", "eagle9", "--engine", "vllm@0.10", "--batch", "1"]) == 2
    assert unknown in capsys.readouterr().err


def test_compare_and_explain_take_the_commands_defaults_for_what_they_are_not_given(capsys):
    """gamma_answer(dep, 0.8) is optimal-gamma --alpha 0.8, but compare_answer took eight positional arguments (the
    batches, context, gamma, gamma_max, max_context and memory share: compare_answer(dep, 0.8) was a TypeError) and
    round_anatomy five (its label, batches and context).  Each left out is now what the command takes without its
    flag: compare_answer(dep, 0.8) is compare --alpha 0.8, round_anatomy(dep, 0.8) explain --alpha 0.8."""
    import specsim

    printed = cli(capsys, "compare", *BASE, "--alpha", "0.8")
    assert printed == as_json(specsim.compare_answer(deployment(), 0.8).records())
    printed = cli(capsys, "explain", *BASE, "--alpha", "0.8")
    anatomy = specsim.round_anatomy(deployment(), 0.8)
    assert printed == as_json([row | {"findings": anatomy.findings()} for row in anatomy.rows])


def test_an_answer_whose_context_is_left_out_says_it_is_the_articles_not_given():
    """gamma_answer(dep, 0.8), speedup_rows, schedule_answer and the rest took 1,128 tokens where the caller gave no
    context, and each row said context_basis "given": the caller never gave it.  The default is now the article's,
    said so, as the command says it without --context; a context the caller gives is "given"."""
    import specsim

    dep = deployment()
    article = "the reference article's 1,000 in, 256 out"
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    left_out = [
        specsim.gamma_answer(dep, 0.8, batches=[1]).rows,
        specsim.speedup_rows(dep, 0.8, "alpha 0.8", 3, [1])[0],
        specsim.compare_answer(dep, 0.8, [1]).records(),
        specsim.round_anatomy(dep, 0.8, "alpha 0.8", [1]).rows,
        [specsim.schedule_answer(dep, 0.8, "alpha 0.8", cap, max_batch=8).to_dict()],
    ]
    for records in left_out:
        assert {r["context_basis"] for r in records} == {article}
    assert specsim.gamma_answer(dep, 0.8, batches=[1], context=1128).rows[0]["context_basis"] == "given"
    assert specsim.speedup_rows(dep, 0.8, "alpha 0.8", 3, [1], 1128)[0][0]["context_basis"] == "given"


def test_a_notebooks_echo_of_a_calibration_is_what_it_fitted_and_how_far_off(eagle3_calibration):
    """calibrate_engine's result echoed 17,719 characters (every run, every term's interval) and read_calibration's
    9,293 (its profile, terms and record): each now says which deployment it fitted, its held-out error and (the fit)
    which terms were fitted, held or not identified; the fields are the dataclasses' as before."""
    import specsim
    from specsim.calibration.inputs import runs_from_files, served_target

    cal = specsim.read_calibration(eagle3_calibration)
    assert repr(cal) == (
        f"Calibration(llama-3.1-8b + eagle3 on h100-sxm, {cal.timing} step times, engine {cal.engine}; {cal.said()})"
    )
    bench = "examples/bench/"
    runs, files, notes = runs_from_files([bench + "vllm-plain.jsonl"], [([bench + "vllm-eagle3.jsonl"], 3)])
    kw = {"hardware": "h100", "engine": "vllm@0.10", "drafter": "eagle3", "timing": "roofline"}
    fit = specsim.calibrate_engine(runs, files, notes, target=served_target(None, runs), **kw)
    held_out = fit.summary()["error"]["held_out"]
    shown = repr(fit)
    assert shown.startswith(
        f"EngineCalibration({fit.deployment!r}; 8 runs (4 plain); held-out error plain {held_out['plain']:.1%}, "
        f"speculative {held_out['spec']:.1%}; fitted: scale, "
    )
    assert all(name in shown for name in fit.fit.terms) and "held: " in shown
    assert max(len(repr(x)) for x in (cal, fit)) < 600


@pytest.mark.parametrize(
    ("call", "argv", "library_says", "command_says"),
    [
        (
            lambda dep, a: a.deployment_capacity(dep, 1128, 100, None),
            ["compare", "--context", "1128", "--max-context", "100"],
            "max_context (100) must be at least the mean context (1128)",
            "--max-context (100) must be at least the mean --context (1128)",
        ),
        (
            lambda dep, a: a.deployment_capacity(dep, 1128, 200_000, None),
            ["compare", "--context", "1128", "--max-context", "200000"],
            "; give context and max_context within it",
            "; give --context and --max-context within it",
        ),
        (
            lambda dep, a: a.gamma_answer(dep, 0.8, "alpha 0.8", [1], 131_071),
            ["optimal-gamma", "--alpha", "0.8", "--batch", "1", "--context", "131071"],
            "; give context of at most 131,070 tokens",
            "; give --context of at most 131,070 tokens",
        ),
        (
            lambda dep, a: a.load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1], 200_000, 256),
            ["optimal-gamma", "--alpha", "0.8", "--concurrency", "1", "--input-len", "200000"],
            "; give input_tokens and output_tokens within it",
            "; give --input-len and --output-len within it",
        ),
    ],
)
def test_a_library_error_names_the_keyword_argument_and_the_commands_line_the_flag(
    call, argv, library_says, command_says, capsys
):
    """One message, built once with the name its caller knows (specsim.core.names): a Python caller has no flags, so
    the library's error names its keyword argument; the command's line names the flag."""
    import specsim

    dep = specsim.Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    with pytest.raises(ValueError) as raised:
        call(dep, specsim)
    assert library_says in str(raised.value) and "--" not in str(raised.value), raised.value
    assert main([argv[0], *BASE, *argv[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and command_says in err, err


def _lib(dotted: str):
    """The library function ``specsim.module.name`` names, imported when a case runs."""
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


_BENCH = ["examples/bench/vllm-plain.jsonl"], [(["examples/bench/vllm-eagle3.jsonl"], 3)]


def _calibrate_engine_at(**given):
    """calibrate_engine of _BENCH's runs (eagle3 under vLLM 0.10 on an H100 unless ``given`` says otherwise), whose
    ``tp`` and ``draft_tp`` it passes on to Deployment.build as ``target_options`` and ``draft_options``: its errors
    named those (draft_options['tp'], and --tp, --draft-tp from check_tp) where the caller gave tp and draft_tp."""
    fit = dict(hardware="h100-sxm", target="llama-3.1-8b", engine="vllm@0.10", drafter="eagle3", timing="roofline")
    runs = _lib("specsim.calibration.inputs.runs_from_files")(*_BENCH)
    return _lib("specsim.calibration.engine_calibration.calibrate_engine")(*runs, **(fit | given))


_CALIBRATE_ENGINE = ["calibrate-engine", "--plain", _BENCH[0][0], "--spec", _BENCH[1][0][0][0], "--steps", "3"]
_CALIBRATE_ENGINE += ["--hardware", "h100", "--draft", "eagle3", "--engine", "vllm@0.10", "--timing", "roofline"]


@pytest.mark.parametrize(
    ("call", "argv", "library_says", "command_says"),
    [
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", timing="measured:"),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--timing", "measured:"],
            "timing measured:FILE needs a file",
            "--timing measured:FILE needs a file",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", ngram_cpu_s_per_token=1e-6),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--ngram-cpu-ns", "1000"],
            "ngram_cpu_s_per_token applies to draft ngram only",
            "--ngram-cpu-ns applies to --draft ngram only",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "qwen3-8b", "eagle3", engine="vllm@0.24.0"
                ),
                "vllm@0.24.0",
            ),
            ["bench-plan", "--hardware", "h100-sxm", "--target", "qwen3-8b", "--engine", "vllm@0.24.0", "--draft"]
            + ["eagle3", "--out", "{tmp}/plan"],
            "give its checkpoint with draft_checkpoint",
            "give its checkpoint with --draft-checkpoint",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "llama-3.1-8b", "ngram", engine="vllm@0.24.0"
                ),
                "vllm@0.24.0",
                draft_checkpoint="org/head",
                pin=False,
                prompts="prompts.jsonl",
            ),
            None,  # the command reads --prompts first: the line is the same one
            "draft_checkpoint does not apply to draft ngram",
            None,
        ),
        (
            lambda dep: _lib("specsim.resolve_acceptance")(dep, acceptance="0.9,,0.7"),
            ["optimal-gamma", *BASE, "--acceptance", "0.9,,0.7"],
            "acceptance has an empty position in '0.9,,0.7'",
            "--acceptance has an empty position in '0.9,,0.7'",
        ),
        (
            lambda dep: _lib("specsim.resolve_acceptance")(dep, metrics="examples/vllm-metrics.txt", metrics_gamma=3),
            ["optimal-gamma", *BASE, "--metrics", "examples/vllm-metrics.txt", "--metrics-gamma", "3"],
            "metrics_gamma is for SGLang pages",
            "--metrics-gamma is for SGLang pages",
        ),
        (
            lambda dep: _lib("specsim.speculation.search.optimal_tree")(
                dep, 0.8, _lib("specsim.speculation.acceptance.TreeSpec")(2, 2, 3), [1]
            ),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--batch", "1", "--tree", "topk:2,depth:2,tokens:3"],
            "lower the bounds or batches",
            "lower the --tree bounds or --max-batch",
        ),
        (
            lambda dep: _lib("specsim.harness.timing.measure_sweep")(
                _lib("specsim.describe.models.get_model")("tiny-5m", weight_dtype="fp32", kv_dtype="fp32"),
                [1],
                [1],
                [0],
                dtype="fp32",
                device="cuda",
            ),
            ["measure", "--model", "tiny-5m", "--device", "cuda", "--out", "{tmp}/m.csv"],
            "device cuda was asked for, but torch sees no CUDA device",
            "--device cuda was asked for, but torch sees no CUDA device",
        ),
        (
            lambda dep: _lib("specsim.figures.plots.save_watch")([], "watch.pdf"),
            None,  # watch refuses a --plot of another suffix itself, before it watches
            "path 'watch.pdf': write a .png or a .svg file",
            None,
        ),
        (
            lambda dep: _lib("specsim.calibration.profile.calibrate")(
                "hardware/measurements/h100-sxm-vllm-kernel-steps.csv",
                _lib("specsim.describe.hardware.load_hardware")("h100-sxm"),
                name="h100-sxm",
            ),
            ["calibrate", "hardware/measurements/h100-sxm-vllm-kernel-steps.csv", "--hardware", "h100-sxm"]
            + ["--name", "h100-sxm", "--out", "{tmp}/fit.yaml"],
            "choose another name",
            "choose another --name",
        ),
        (
            lambda dep: _lib("specsim.calibration.inputs.served_target")(
                "llama-3.1-70b", _lib("specsim.calibration.inputs.runs_from_files")(*_BENCH)[0]
            ),
            [*_CALIBRATE_ENGINE, "--target", "llama-3.1-70b", "--out", "{tmp}/cal.yaml"],
            "target llama-3.1-70b but the benchmark files ran",
            "--target llama-3.1-70b but the benchmark files ran",
        ),
        (
            lambda dep: _lib("specsim.calibration.inputs.runs_from_files")(*_BENCH, sweep_by="model"),
            None,  # the command's --sweep-by takes its choices only
            "sweep_by 'model'; choose lengths, file, all",
            None,
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0"
                ),
                "vllm@0.24.0",
                input_tokens=[500],
            ),
            ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--input-tokens", "500", "--out", "{tmp}/p"],
            "input_tokens needs two prompt lengths",
            "--input-tokens needs two prompt lengths",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "ngram", draft_options={"tp": 2}),
            ["optimal-gamma", "--draft", "ngram", "--draft-tp", "2", "--alpha", "0.8", "--batch", "1"],
            "draft ngram runs no network: draft_options['weight_dtype'], draft_options['kv_dtype'] and "
            "draft_options['tp'] do not apply",
            "--draft ngram runs no network: --draft-weight-dtype, --draft-kv-dtype and --draft-tp do not apply",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build(
                "h100-sxm", "llama-3.1-8b", "suffix", draft_options={"kv_dtype": "fp8"}
            ),
            ["optimal-gamma", "--draft", "suffix", "--draft-kv-dtype", "fp8", "--alpha", "0.8", "--batch", "1"],
            "draft suffix runs no network: draft_options['weight_dtype']",
            "--draft suffix runs no network: --draft-weight-dtype, --draft-kv-dtype and --draft-tp do not apply",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "mtp"),
            ["optimal-gamma", "--draft", "mtp", "--alpha", "0.8", "--batch", "1"],
            "draft mtp: the target llama-3.1-8b's config declares no multi-token-prediction layers",
            "--draft mtp: the target llama-3.1-8b's config declares no multi-token-prediction layers",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "eagel3"),
            ["optimal-gamma", "--draft", "eagel3", "--alpha", "0.8", "--batch", "1"],
            "; draft also takes a drafter: eagle, eagle3, mtp, ngram, peagle, pard, dflash, dspark, suffix; did you mean "
            "draft eagle3?",
            "; --draft also takes a drafter: eagle, eagle3, mtp, ngram, peagle, pard, dflash, dspark, suffix; did you "
            "mean --draft eagle3?",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "dflash", engine="vllm@0.10"),
            ["optimal-gamma", "--draft", "dflash", "--engine", "vllm@0.10", "--alpha", "0.8", "--batch", "1"],
            "a DFlash block-diffusion drafter (draft dflash) runs from vllm 0.20.0",
            "a DFlash block-diffusion drafter (--draft dflash) runs from vllm 0.20.0",
        ),
        (
            lambda dep: _lib("specsim.Deployment").build(
                "h100-sxm",
                "llama-3.1-70b",
                "llama-3.2-1b",
                engine="vllm@0.24.0",
                target_options={"tp": 4},
                draft_options={"tp": 1},
            ),
            ["optimal-gamma", "--target", "llama-3.1-70b", "--tp", "4", "--draft", "llama-3.2-1b", "--draft-tp", "1"]
            + ["--engine", "vllm@0.24.0", "--alpha", "0.8", "--batch", "1"],
            "drop draft_options['tp'], or model vllm@0.15",
            "drop --draft-tp, or model vllm@0.15",
        ),
        (
            lambda dep: _lib("specsim.resolve_acceptance")(
                _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "pard", engine="vllm@0.24.0")
            ),
            ["optimal-gamma", "--draft", "pard", "--engine", "vllm@0.24.0", "--batch", "1"],
            "so it gives no per-token rate: pass alpha, acceptance or metrics",
            "so it gives no per-token rate: pass --alpha, --acceptance or --metrics",
        ),
        (
            lambda dep: _lib("specsim.watch.sources.EndpointSource")("127.0.0.1:8000", None),
            ["watch", "--engine", "vllm@0.26.0", "--draft", "llama-3.2-1b", "--url", "127.0.0.1:8000", "--once"],
            "url '127.0.0.1:8000' has no scheme: give http://127.0.0.1:8000",
            "--url '127.0.0.1:8000' has no scheme: give http://127.0.0.1:8000",
        ),
        (
            lambda dep: _lib("specsim.watch.sources.PrometheusSource")("127.0.0.1:9", None),
            ["watch", "--engine", "vllm@0.26.0", "--draft", "llama-3.2-1b", "--prometheus", "127.0.0.1:9", "--once"],
            "url '127.0.0.1:9' has no scheme",
            "--prometheus '127.0.0.1:9' has no scheme",
        ),
        (
            lambda dep: _lib("specsim.watch.sources.selector_matchers")("job=vllm"),
            ["watch", "--engine", "vllm@0.26.0", "--draft", "llama-3.2-1b", "--prometheus", "http://127.0.0.1:9"]
            + ["--selector", "job=vllm", "--once"],
            "selector 'job=vllm' is not a list of label matchers",
            "--selector 'job=vllm' is not a list of label matchers",
        ),
        (
            lambda dep: _lib("specsim.calibration.inputs.runs_from_files")(*_BENCH, verify_tokens=2),
            [*_CALIBRATE_ENGINE, "--verify-tokens", "2", "--out", "{tmp}/cal.yaml"],
            "verify_tokens 2 is fewer than steps 3 plus the target's own token: a chain (topk 1) verifies 4",
            "--verify-tokens 2 is fewer than --steps 3 plus the target's own token: a chain (--topk 1) verifies 4",
        ),
        (
            lambda dep: _lib("specsim.calibration.engine_calibration.calibrate_engine")(
                *_lib("specsim.calibration.inputs.runs_from_files")(*_BENCH),
                hardware="h100-sxm",
                target="llama-3.1-8b",
                engine="vllm@0.10",
                drafter="eagle3",
                timing="roofline",
                memory_utilization=0.05,
            ),
            [*_CALIBRATE_ENGINE, "--memory-util", "0.05", "--out", "{tmp}/cal.yaml"],
            "memory_utilization 0.05 leaves 2.0 GB per GPU",
            "--memory-util 0.05 leaves 2.0 GB per GPU",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0"
                ),
                "vllm@0.24.0",
                steps=[2],
            ),
            ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--steps", "2", "--out", "{tmp}/p"],
            "steps needs two numbers of draft steps",
            "--steps needs two numbers of draft steps",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0"
                ),
                "vllm@0.24.0",
                pin=False,
            ),
            ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--no-pin", "--out", "{tmp}/p"],
            "pin=False measures acceptance on your prompts: give prompts FILE.jsonl",
            "--no-pin measures acceptance on your prompts: give --prompts FILE.jsonl",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.design_plan")(
                _lib("specsim.calibration.plan.plan_deployment")(
                    "h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0"
                ),
                "none",
            ),
            ["bench-plan", "--engine", "none", "--draft", "eagle3", "--out", "{tmp}/p"],
            "engine none serves nothing",
            "--engine none serves nothing",
        ),
        (
            lambda dep: _calibrate_engine_at(tp=4, draft_tp=1, drafter="llama-3.2-1b", engine="vllm@0.24.0"),
            None,  # calibrate-engine takes no --draft-tp: the draft runs at the target's TP
            "drop draft_tp, or model vllm@0.15",
            None,
        ),
        (
            lambda dep: _calibrate_engine_at(tp=4, draft_tp=0),
            None,
            "draft_tp must be a positive integer, got 0",
            None,
        ),
        (
            lambda dep: _calibrate_engine_at(tp=0),  # was dropped as falsy: the runs were fitted at TP 1
            None,  # the command's --tp takes a positive integer only
            "tp must be a positive integer, got 0",
            None,
        ),
        (
            lambda dep: _calibrate_engine_at(hardware="a30", timing="kernels"),
            [*_CALIBRATE_ENGINE[:-2], "--hardware", "a30", "--timing", "kernels", "--out", "{tmp}/cal.yaml"],
            "timing kernels: the kernel database has no device 'a30'",
            "--timing kernels: the kernel database has no device 'a30'",
        ),
        (
            lambda dep: _lib("specsim.calibration.engine_fit.fit_engine")(
                _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-70b", "eagle3", engine="vllm@0.10"),
                _lib("specsim.calibration.inputs.runs_from_files")(*_BENCH)[0],
            ),
            None,  # the command refuses a --target the files did not run first
            "does not fit in h100-sxm's 86 GB: no run could have served it; check hardware and tp",
            None,
        ),
        (
            lambda dep: _lib("specsim.engines.get_engine")("vllm@"),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--engine", "vllm@"],
            "engine 'vllm@' names no version after '@'",
            "argument --engine: engine 'vllm@' names no version after '@'",
        ),
        (
            lambda dep: _lib("specsim.engines.metric_names")("none"),
            None,
            "engine none serves no metrics",
            None,
        ),
        (
            lambda dep: _lib("specsim.answers.serve.sim_load")(dep, trace="x.csv", runs=3),
            None,  # serve-sim --trace FILE --runs 3: tests/test_hostile_inputs_30.py
            "runs 3 with trace: a trace is one fixed set of requests and is replayed once",
            None,
        ),
        (
            lambda dep: _lib("specsim.watch.windows.check_gamma")(
                2,
                _lib("specsim.watch.windows.Reading")(0.0, "m", {}, {}, 3.0),
                _lib("specsim.engines.metric_names")("vllm@0.26.0")[0],
            ),
            None,  # watch's --gamma: tests/test_watch.py
            "gamma 2 but the engine's metrics say 3 draft tokens",
            None,
        ),
        (
            lambda dep: _lib("specsim.harness.timing.measure_sweep")(
                dep.target, [1], [1], [64], compile=True, warmup=0
            ),
            None,  # measure --compile --warmup 0: tests/test_hostile_inputs_30.py
            "compile needs warmup of at least 1",
            None,
        ),
        (
            lambda dep: _lib("specsim.answers.load.request_lengths")(2000, workload="chat"),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--concurrency", "8", "--input-len", "2000"]
            + ["--workload", "chat"],
            "input_tokens and output_tokens give every request the same lengths; workload a distribution: drop one",
            "--input-len and --output-len give every request the same lengths; --workload a distribution: drop one",
        ),
        (
            lambda dep: _lib("specsim.gamma_answer")(
                _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", timing="roofline"),
                0.8,
                "alpha 0.8",
                [1],
                1128,
            ),
            ["optimal-gamma", *BASE[:2], "--target", "llama-3.1-70b", *BASE[4:], "--alpha", "0.8", "--batch", "1"],
            "does not fit on one h100-sxm (81.6 GB usable per GPU): target_options['tp'] 2 fits",
            "does not fit on one h100-sxm (81.6 GB usable per GPU): --tp 2 fits",
        ),
        (
            lambda dep: _lib("specsim.load_answer")(
                dep, 0.8, "alpha 0.8", "concurrency", [1, 4], 1000, 256, gamma=3, memory_utilization=0.227
            ),
            ["speedup", *BASE, "--alpha", "0.8", "--gamma", "3", "--concurrency", "1,4", "--memory-util", "0.227"]
            + ["--input-len", "1000", "--output-len", "256"],
            "give target_options['tp'] 2, the smallest that holds llama-3.1-8b and its draft with one request here (or "
            "a smaller target_options['weight_dtype'], or memory_utilization)",
            "give --tp 2, the smallest that holds llama-3.1-8b and its draft with one request here (or a smaller "
            "--weight-dtype, or --memory-util)",
        ),
        (
            lambda dep: _lib("specsim.calibration.inputs.runs_from_plan")("no-such/plan.yaml"),
            ["calibrate-engine", "--plan", "no-such/plan.yaml"],
            "plan_path no-such/plan.yaml: does not exist or is not a file",
            "--plan no-such/plan.yaml: does not exist or is not a file",
        ),
        (
            lambda dep: _lib("specsim.calibration.plan.check_prompts")("README.md"),
            ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--no-pin", "--prompts", "README.md"]
            + ["--out", "{tmp}/p"],
            "prompts README.md line 1: not a JSON object",
            "--prompts README.md line 1: not a JSON object",
        ),
        (
            lambda dep: _calibrate_engine_at(tp=16),
            [*_CALIBRATE_ENGINE, "--tp", "16", "--out", "{tmp}/cal.yaml"],
            "tp 16 exceeds the 8 devices of one h100-sxm node",
            "--tp 16 exceeds the 8 devices of one h100-sxm node",
        ),
        (
            lambda dep: _plan_at("vllm@0.19.0", "eagle3"),
            ["bench-plan", "--engine", "vllm@0.19.0", "--draft", "eagle3", "--out", "{tmp}/p"],
            "use vllm 0.20.0 or later, or pin=False (real acceptance on prompts at both step counts,",
            "use vllm 0.20.0 or later, or --no-pin (real acceptance on --prompts at both step counts,",
        ),
        (
            lambda dep: _plan_at("sglang@0.5.13", "ngram", pinned=[2.0, 3.0]),
            ["bench-plan", "--engine", "sglang@0.5.13", "--draft", "ngram", "--pin-accept-length", "2,3"]
            + ["--out", "{tmp}/p"],
            "(python/sglang/srt/speculative/ngram_worker.py): use 0.5.14 or pin=False",
            "(python/sglang/srt/speculative/ngram_worker.py): use 0.5.14 or --no-pin",
        ),
        (
            lambda dep: _plan_at("trtllm@1.2.0", "eagle3"),
            ["bench-plan", "--engine", "trtllm@1.2.0", "--draft", "eagle3", "--out", "{tmp}/p"],
            "images SemiAnalysis InferenceX pins it on), or pin=False",
            "images SemiAnalysis InferenceX pins it on), or --no-pin",
        ),
        (
            lambda dep: _plan_at("trtllm", "llama-3.2-1b", pinned=[2.5, 3.0]),
            ["bench-plan", "--engine", "trtllm", "--draft", "llama-3.2-1b", "--pin-accept-length", "2.5,3"]
            + ["--out", "{tmp}/p"],
            "pin whole acceptance lengths (pinned), not 2.5",
            "pin whole acceptance lengths (--pin-accept-length), not 2.5",
        ),
    ],
)
def test_each_library_path_names_its_keyword_and_the_commands_line_its_flag(
    call, argv, library_says, command_says, capsys, monkeypatch, tmp_path
):
    """The timing, drafter, acceptance, tree, harness, figure, profile, calibration-input and plan errors named the
    command's flags to a Python caller (design_plan(..., input_tokens=[500]) said '--input-tokens needs two prompt
    lengths'; the engines' plan checks 'or --no-pin', '(--pin-accept-length)'): each now names the keyword argument of the function called (specsim.core.names), and the command's line
    is as it was.  The tree search's limit is lowered to 1 evaluation so that a small tree passes it."""
    import specsim

    if "cuda" in library_says:
        pytest.importorskip("torch")
        if __import__("torch").cuda.is_available():
            pytest.skip("torch sees a CUDA device here")
    monkeypatch.setattr("specsim.speculation.search.MAX_TREE_EVALUATIONS", 1)
    dep = specsim.Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
    with pytest.raises(ValueError) as raised:
        call(dep)
    assert library_says in str(raised.value) and "--" not in str(raised.value), raised.value
    if argv is None:
        return
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and command_says in err, err
    assert not any(tmp_path.iterdir())  # nothing written half-way


def _plan_at(engine: str, draft: str, **given):
    """design_plan for ``engine`` and ``draft`` on bench-plan's default hardware and target."""
    dep = _lib("specsim.calibration.plan.plan_deployment")("h100-sxm", "llama-3.1-8b", draft, engine=engine)
    return _lib("specsim.calibration.plan.design_plan")(dep, engine, **given)


def _texts(**build) -> str:
    """Every line a notebook reads of the deployment Deployment.build(**build) makes: its notes and its provenance."""
    dep = _lib("specsim.Deployment").build(**({"hardware": "h100-sxm", "timing": "roofline"} | build))
    return "\n".join(dep.notes() + dep.provenance())


#: A large MoE target whose step the kernel database composes on an H200 under SGLang: its step times default to
#: the kernels, and its plain step's measured shortfall is noted (docs/reports/2026-12-04-large-moe-plain-step.md).
_DSV3_TP8 = {"hardware": "h200", "target": "deepseek-v3", "draft": "mtp", "engine": "sglang", "timing": None}
_DSV3_TP8 |= {"target_options": {"tp": 8}}

#: A hybrid target, whose speculative scratch its capacity sizes for a gamma (specsim.serving.capacity).
_HYBRID = {"hardware": "h200", "target": "qwen3.5-27b", "draft": "eagle3"}

_OPTIMAL_GAMMA = ["optimal-gamma", "-v", "--hardware", "h100-sxm", "--timing", "roofline", "--batch", "1"]


@pytest.mark.parametrize(
    ("text", "argv", "library_says", "command_says"),
    [
        (
            lambda: _lib("specsim.resolve_acceptance")(_lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b"))[1],
            [*_OPTIMAL_GAMMA, "--target", "llama-3.1-8b", "--draft", "eagle3"],
            "; pass alpha, acceptance or metrics for yours)",
            "; pass --alpha, --acceptance or --metrics for yours)",
        ),
        (
            lambda: _texts(target="llama-3.1-8b", draft="eagle3", engine="vllm@0.24.0"),
            [*_OPTIMAL_GAMMA, "--target", "llama-3.1-8b", "--draft", "eagle3", "--engine", "vllm@0.24.0"],
            "(the host work grows with each; overlap off to see it at yours)",
            "(the host work grows with each; --engine-overlap off to see it at yours)",
        ),
        (
            lambda: _texts(
                target="llama-3.1-8b", draft="llama-3.2-1b", engine="sglang", target_options={"kv_dtype": "fp8"}
            ),
            [*_OPTIMAL_GAMMA, "--target", "llama-3.1-8b", "--draft", "llama-3.2-1b", "--engine", "sglang", "--kv-dtype"]
            + ["fp8", "--alpha", "0.8"],
            "; draft_options['kv_dtype'] prices another, which this engine cannot serve",
            "; --draft-kv-dtype prices another, which this engine cannot serve",
        ),
        (
            lambda: _texts(target="llama-3.1-8b", draft="ngram", ngram_cpu_s_per_token=1e-7),
            [
                *_OPTIMAL_GAMMA,
                "--target",
                "llama-3.1-8b",
                "--draft",
                "ngram",
                "--ngram-cpu-ns",
                "100",
                "--alpha",
                "0.5",
            ],
            "100 ns of CPU per cached token per round (set by ngram_cpu_s_per_token)",
            "100 ns of CPU per cached token per round (set by --ngram-cpu-ns)",
        ),
        (
            lambda: _texts(target="qwen3-30b-a3b", draft="eagle3", target_options={"routing_effective_experts": 16}),
            [*_OPTIMAL_GAMMA, "--target", "qwen3-30b-a3b", "--draft", "eagle3", "--moe-effective-experts", "16"]
            + ["--alpha", "0.8"],
            "(independent routing: the bound; target_options['routing_correlation'] 0.2 applies the fit to public MoE "
            "sweeps); skewed routing set by target_options['routing_effective_experts']",
            "(independent routing: the bound; --moe-routing-correlation 0.2 applies the fit to public MoE sweeps); "
            "skewed routing set by --moe-effective-experts",
        ),
        (
            lambda: _texts(**_DSV3_TP8),
            ["optimal-gamma", "-v", "--hardware", "h200", "--target", "deepseek-v3", "--tp", "8", "--draft", "mtp"]
            + ["--engine", "sglang", "--alpha", "0.8", "--batch", "1"],
            "table 4b); timing hybrid for the other",
            "table 4b); --timing hybrid for the other",
        ),
        (
            lambda: _texts(**(_DSV3_TP8 | {"timing": "hybrid"})),
            ["optimal-gamma", "-v", "--hardware", "h200", "--target", "deepseek-v3", "--tp", "8", "--draft", "mtp"]
            + ["--engine", "sglang", "--timing", "hybrid", "--alpha", "0.8", "--batch", "1"],
            " runs); with timing kernels, ",
            " runs); with --timing kernels, ",
        ),
        (
            lambda: _lib("specsim.gamma_answer")(deployment(), 0.8, "alpha 0.8", [1], 1128, 0).off_reason,
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--gamma-max", "0", "--batch", "1"],
            "speculation was not weighed (gamma_max 1 or more to weigh it)",
            "speculation was not weighed (--gamma-max 1 or more to weigh it)",
        ),
        (
            lambda: _lib("specsim.gamma_answer")(deployment(), 1.0, "alpha 1", [1], 1128, 4).rows[0]["gamma_bound"],
            ["optimal-gamma", *BASE, "--alpha", "1", "--gamma-max", "4", "--batch", "1"],
            "at gamma_max; raise it",
            "(at --gamma-max; raise it)",
        ),
        (
            lambda: (
                _lib("specsim.answers.capacity_at")(_lib("specsim.Deployment").build(**_HYBRID), 1128).scratch_basis
            ),
            ["capacity", "--hardware", "h200", "--target", "qwen3.5-27b", "--draft", "eagle3"],
            "(no engine defaults one); gamma to size another",
            "(no engine defaults one); --gamma to size another",
        ),
        (
            lambda: "gamma = 3 ({}; ".format(
                _lib("specsim.answers.capacity_at")(
                    _lib("specsim.Deployment").build(**_HYBRID), 1128, gamma=3
                ).scratch_basis
            ),
            ["capacity", "--hardware", "h200", "--target", "qwen3.5-27b", "--draft", "eagle3", "--gamma", "3"],
            "gamma = 3 (gamma; ",
            "gamma = 3 (--gamma; ",
        ),
        (
            lambda: _lib("specsim.gamma_answer")(deployment(), 0.8, "alpha 0.8", [1], 1128).model_error.said(),
            ["optimal-gamma", *BASE, "--alpha", "0.8", "--batch", "1"],
            " (rtol picks the gamma; this judges its gain)",
            " (--rtol picks the gamma; this judges its gain)",
        ),
        (
            lambda: _lib("specsim.answers.capacity_record")(
                _lib("specsim.Deployment").build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm"), 1128
            )["memory_basis"],
            ["capacity", "--hardware", "h100-sxm", "--target", "llama-3.1-8b", "--draft", "llama-3.2-1b"]
            + ["--engine", "vllm"],
            "as engine names no release: name yours (engine vllm@0.33.0: 0.92 of the device)",
            "as --engine names no release: name yours (--engine vllm@0.33.0: 0.92 of the device)",
        ),
        (
            lambda: _texts(target="llama-3.1-8b", draft="ngram", engine="vllm"),
            [*_OPTIMAL_GAMMA, "--target", "llama-3.1-8b", "--draft", "ngram", "--engine", "vllm", "--alpha", "0.5"],
            "vLLM 0.28-0.34 (read at its newest; engine vllm@X.Y.Z names yours)",
            "vLLM 0.28-0.34 (read at its newest; --engine vllm@X.Y.Z names yours)",
        ),
    ],
)
def test_each_library_note_names_its_keyword_and_the_commands_line_its_flag(
    text, argv, library_says, command_says, capsys
):
    """Errors named the keyword to a Python caller (the test above); notes and labels still named the command's flags:
    resolve_acceptance(dep)[1] ended 'pass --alpha, --acceptance or --metrics for yours', arguments resolve_acceptance
    takes as alpha, acceptance and metrics; a deployment's notes and provenance said '--engine-overlap off',
    '--draft-kv-dtype', '--ngram-cpu-ns', '--moe-routing-correlation' and '--moe-effective-experts' to a caller of
    Deployment.build; gamma_answer's off_reason and gamma_bound '--gamma-max', capacity_at's scratch_basis '--gamma', an answer's model_error.said() '--rtol',
    vLLM's memory_basis and a release read at its range's newest '--engine'.
    Each now names what its reader can give (specsim.core.names), and the command's line is as it
    was."""
    said = text()
    assert library_says in said and command_says not in said, said
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert command_says in printed.out + printed.err


def test_the_bare_search_says_it_did_not_check_memory_where_the_answer_refuses(capsys):
    """specsim.optimal_gamma is the search underneath optimal-gamma, below the memory budget (speculation/ does not
    import serving/): a 70B target on one H100, whose weights do not fit, was answered gamma 11, speedup 3.826, with
    nothing said.  Its echo now says memory was not checked and which call checks it; gamma_answer refuses as the
    command does."""
    import specsim

    dep = specsim.Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", timing="roofline")
    assert repr(specsim.optimal_gamma(dep, 0.8, [1], 1128)).endswith(
        "; memory not checked: specsim.gamma_answer checks it)"
    )
    with pytest.raises(ValueError, match=re.escape("does not fit on one h100-sxm")):
        specsim.gamma_answer(dep, 0.8, "alpha 0.8", [1], 1128)
    argv = ["--hardware", "h100-sxm", "--target", "llama-3.1-70b", "--timing", "roofline", "--alpha", "0.8"]
    assert main(["optimal-gamma", *argv, "--batch", "1"]) == 2
    assert "does not fit on one h100-sxm" in capsys.readouterr().err


def test_a_notebooks_echo_of_a_capacity_and_of_a_round_is_a_line():
    """Capacity and dep.outcome() echoed the dataclasses' default repr: a Capacity every byte count and basis (1,384
    characters for llama-3.1-8b + llama-3.2-1b on an H100), a RoundOutcome every part's array (1,266 characters at two
    batches, 67,634 at 256).  Each now says what it holds in a line, from its own fields."""
    import specsim

    dep = deployment()
    cap = specsim.deployment_capacity(dep, 1128, None, None)
    assert repr(cap) == (
        f"Capacity(1,128 tokens a sequence: {cap.usable_bytes / 1e9:.1f} of {cap.memory_bytes / 1e9:.1f} GB usable "
        f"per GPU, weights {cap.target_weight_bytes / 1e9:.1f} + {cap.draft_weight_bytes / 1e9:.1f} GB; max batch "
        f"{cap.max_batch_without_draft} without the draft, {cap.max_batch_with_draft} with it)"
    )
    out = dep.outcome(0.8, 3, np.arange(1, 257), 1128)
    s, t = out.speedup, out.time_s * 1e3
    assert repr(out) == (
        f"RoundOutcome(256 points: draft steps [3, 3, 3, ..., 3, 3], tokens [{float(out.tokens):.3f}, "
        f"{float(out.tokens):.3f}, {float(out.tokens):.3f}, ..., {float(out.tokens):.3f}, {float(out.tokens):.3f}], "
        f"speedup [{s[0]:.3f}, {s[1]:.3f}, {s[2]:.3f}, ..., {s[-2]:.3f}, {s[-1]:.3f}], "
        f"round [{t[0]:.3f}, {t[1]:.3f}, {t[2]:.3f}, ..., {t[-2]:.3f}, {t[-1]:.3f}] ms)"
    )
