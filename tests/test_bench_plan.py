"""bench-plan: a plan per engine whose every flag, config key and environment variable is one the engine version it targets
defines (tests/data/engine_flags.yaml, read from the released source by scripts/check_engine_flags.py), a design that
frees every term calibrate-engine fits, a script bash accepts that says its wall time first, and a manifest that reads
back."""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from specsim.calibration.bench_files import BenchRun
from specsim.calibration.plan import design_plan, plan_files, read_plan
from specsim.calibration.runs import CalRun, SpecSetup, identifiable
from specsim.cli.main import main
from specsim.speculation.deployment import Deployment

FLAGS = yaml.safe_load(Path("tests/data/engine_flags.yaml").read_text())

PLANS = [
    ("vllm@0.20.0", "eagle3"),
    ("vllm@0.24.0", "llama-3.2-1b"),
    ("vllm@0.33.0", "eagle"),
    ("vllm@0.20.0", "ngram"),
    ("sglang@0.5.3", "eagle3"),
    ("sglang@0.5.23", "llama-3.2-1b"),
    ("sglang@0.4.8", "eagle"),
    ("trtllm@1.3.0rc29", "eagle3"),
    ("trtllm@1.3.0rc29", "mtp"),
]


def _plan(engine: str, draft: str, **kw):
    """The plan of ``engine`` and ``draft`` (and ``kw``) on the deployment this file plans for, designed once per
    process: the tests here asked 32 times for 12 plans (5.0 s of CPU, 3.1 s of it designing one again).  A plan is
    frozen, and nothing here or in the writers changes its lists."""
    return _designed(engine, draft, tuple(sorted(kw.items())))


@functools.cache
def _designed(engine: str, draft: str, kw: tuple):
    target = "deepseek-v3" if draft == "mtp" else "llama-3.1-8b"
    options = {"tp": 8} if draft == "mtp" else None
    dep = Deployment.build(
        "h200" if draft == "mtp" else "h100-sxm",
        target,
        draft,
        timing=None,
        engine=engine.split("@")[0],
        target_options=options,
        draft_options=options,
    )
    pins = (
        [2.0, 3.0]
        if (engine.startswith("trtllm") and draft not in ("eagle3", "mtp")) or draft in ("ngram", "mtp")
        else None
    )
    return design_plan(dep, engine, pinned=pins, prompts="prompts.jsonl", **dict(kw))


ENGINE_COMMANDS = ("vllm", "trtllm-serve", "python")


def _commands(run_sh: str) -> list[list[str]]:
    """Every engine or client command of a script (with the environment assignments before it), redirections dropped."""
    out = []
    for line in run_sh.splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "echo")):
            continue
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens, command, skip = list(lex), [], False
        for i, t in enumerate(tokens + [";"]):
            if skip:
                skip = False
                continue
            if set(t) <= set("<>&") and set(t) & set("<>"):  # a redirection and its target ("> f", ">& 1")
                if command and command[-1].isdigit():
                    command.pop()
                skip = True
                continue
            if t in (";", "&", "&&", "||", "|", "then", "fi"):
                words = [w for w in command]
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]) and len(words) > 1 and "=" in words[0]:
                    if words[1] in ENGINE_COMMANDS or re.fullmatch(r"[A-Z_]+=\S*", words[1]):
                        break
                    words = words[1:]
                head = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]
                if head and head[0] in ENGINE_COMMANDS:
                    out.append(words)
                command = []
            else:
                command.append(t)
    return out


@pytest.mark.parametrize("engine, draft", PLANS, ids=[f"{e}-{d}" for e, d in PLANS])
def test_every_flag_key_and_variable_is_the_engine_versions_own(engine, draft, tmp_path):
    name, version = engine.split("@")
    known = FLAGS[name][version]
    files = plan_files(_plan(engine, draft))
    commands = _commands(files["run.sh"])
    assert len(commands) >= 2 * len({r["server"] for r in yaml.safe_load(files["plan.yaml"])["runs"]})
    flags = known["flags"] + (["--no-enable-prefix-caching"] if "--enable-prefix-caching" in known["flags"] else [])
    for words in commands:
        env = [w.split("=")[0] for w in words if re.fullmatch(r"[A-Z_]+=\S*", w)]
        for var in env:
            assert var in known.get("env", []), (engine, var)
        head = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]
        assert head[0] != "python" or head[1] == "-m", (engine, head[:3])  # a client or server module, run as one
        assert "None" not in words, (engine, words)  # every value written is one the plan has
        for w in words:
            if "--" in w:  # a flag is the engine's as it is spelled, wherever it stands
                assert w in flags, (engine, w)
        if "--speculative-config" in words:
            config = json.loads(words[words.index("--speculative-config") + 1])
            assert set(config) <= set(known["speculative_config"]), (
                engine,
                set(config) - set(known["speculative_config"]),
            )
    # A client reads its prompts from a file the script names or writes before the clients run.
    paths = [words[words.index("--dataset-path") + 1] for words in commands if "--dataset-path" in words]
    for path in set(paths):
        assert files["run.sh"].count(path) > paths.count(path), (engine, path)
    # A flag never starts a line: each one belongs to the engine or client command it follows.
    assert not [line for line in files["run.sh"].splitlines() if line.lstrip().startswith("--")], engine
    # Each run's result is removed before its client writes it: SGLang's client appends, and a rerun after a partial
    # failure left two lines in one result, which calibrate-engine refuses.
    for run in yaml.safe_load(files["plan.yaml"])["runs"]:
        line = next(x for x in files["run.sh"].splitlines() if f"> logs/{run['name']}.log" in x)
        assert f"rm -f {run['file']}; " in line, (engine, line)
    for fname, text in files.items():
        if fname.startswith("extra-"):

            def keys(d):
                return [k for k, v in d.items()] + [k2 for v in d.values() if isinstance(v, dict) for k2 in keys(v)]

            assert set(keys(yaml.safe_load(text))) <= set(known["yaml_keys"]), fname


def test_every_engine_pins_acceptance_its_own_way():
    vllm = plan_files(_plan("vllm@0.20.0", "eagle3"))["run.sh"]
    assert '"rejection_sample_method":"synthetic","synthetic_acceptance_length":' in vllm
    new, old = (
        plan_files(_plan("sglang@0.5.3", "eagle3"))["run.sh"],
        plan_files(_plan("sglang@0.4.8", "eagle"))["run.sh"],
    )
    assert "SGLANG_SIMULATE_ACC_LEN=" in new and "SGLANG_SIMULATE_ACC_METHOD=match-expected" in new
    assert "SIMULATE_ACC_LEN=" in old and "SGLANG_SIMULATE_ACC_LEN" not in old
    plan = _plan("trtllm@1.3.0rc29", "eagle3")
    pins = sorted(s.pinned_accept_length for s in plan.servers.values() if s.pinned_accept_length)
    trt = plan_files(plan)["run.sh"]
    for al in pins:  # TensorRT-LLM counts accepted draft tokens: the length less the target's own token
        assert f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={al - 1:g} " in trt


@pytest.mark.parametrize("engine, draft", PLANS[:1] + PLANS[4:5] + PLANS[7:8])
def test_the_design_frees_every_term_the_fit_has(engine, draft):
    plan = _plan(engine, draft)
    # Every client the plans run (vllm bench serve, sglang.bench_serving, TensorRT-LLM's) records a TTFT.
    runs = [
        CalRun(
            BenchRun(
                "x",
                i,
                "vllm",
                None,
                f"concurrency {r.concurrency}",
                100,
                0.01,
                0.9 * r.concurrency if r.concurrency > 1 else 1.0,
                float(r.input_tokens or 1000),
                float(r.output_tokens),
                None,
                1.0,
                r.concurrency,
                load_value=float(r.concurrency),
                ttft_s=0.05,
            ),
            None if r.kind == "plain" else SpecSetup(r.steps, pinned_accept_length=r.pinned_accept_length),
        )
        for i, r in enumerate(plan.runs)
    ]
    assert all(why == "" for why in identifiable(runs, fit_scale=True).values())
    loads = {r.concurrency for r in plan.runs}
    assert {(r.kind, r.concurrency) for r in plan.runs} >= {(k, c) for k in ("plain", "spec") for c in loads}
    assert (
        len({r.input_tokens for r in plan.runs if r.input_tokens}) == 2
        and len({r.steps for r in plan.runs if r.steps}) == 2
    )
    real = [r for r in plan.runs if r.kind == "spec" and r.pinned_accept_length is None]
    assert real and all(r.input_tokens is None and r.metrics_after for r in real)  # the user's prompts, metrics saved


def test_the_wall_time_estimate_names_its_step_times_and_server_starts(tmp_path, capsys):
    """bench-plan's estimate said 'specsim's prediction of each run; server starts assumed', naming neither the
    step-time source nor the start time assumed, and -v added nothing (helper Review2's finding).  It names both as every
    answer's header does: one line, every source with -v."""
    from specsim.calibration.plan import SERVER_START_S, plan_deployment
    from specsim.core.names import as_flags

    argv = ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3"]
    with as_flags():  # its sources as the command words them
        dep = plan_deployment("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0", timing="hybrid")
        brief_said, full_said = dep.brief(), dep.provenance()
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    brief = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(brief) if "estimated wall time" in line)
    assert f"and {SERVER_START_S / 60:g} min per server start, assumed)" in brief[at]
    assert brief[at + 1] == "  " + brief_said
    assert main([*argv, "--out", str(tmp_path / "b"), "-v"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert full[at + 1 : at + 1 + len(full_said)] == [
        "  " + ("step times: " if i == 0 else "") + line for i, line in enumerate(full_said)
    ]


def test_the_script_parses_says_its_wall_time_first_and_the_manifest_reads_back(tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "estimated wall time" in printed
    run_sh = (out / "run.sh").read_text()
    assert subprocess.run(["bash", "-n", str(out / "run.sh")]).returncode == 0
    first = [line for line in run_sh.splitlines() if line.startswith("echo")][0]
    assert "estimated wall time" in first and (out / "run.sh").stat().st_mode & 0o111
    plan = read_plan(out / "plan.yaml")
    assert plan["engine"] == "vllm" and plan["version"] == "0.24.0" and plan["preset"] == "vllm@0.14"
    assert sum(r["estimate_s"] for r in plan["runs"]) < plan["estimate_s"]  # plus the server starts
    for r in plan["runs"]:  # every result lands in results/, where calibrate-engine --plan looks
        assert (
            r["file"] == f"results/{Path(r['file']).name}"
            and f"--result-dir results --result-filename {Path(r['file']).name}" in run_sh
        )
    assert "overlaps a round's host work" in (out / "README.md").read_text()  # vLLM 0.24 runs EAGLE rounds async


def test_latest_is_the_newest_release_the_flags_were_checked_against():
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm")
    assert design_plan(dep, "vllm").version == "0.34.0" and design_plan(dep, "sglang@latest").version == "0.5.23"
    assert "0.34.0" in FLAGS["vllm"] and "0.5.23" in FLAGS["sglang"]


def test_trtllm_serve_and_its_client_are_written_word_for_word():
    """trtllm-serve MODEL --backend pytorch --tp_size --port --max_batch_size --extra_llm_api_options FILE
    (tensorrt_llm/commands/serve.py) with block reuse off in the YAML, and benchmark_serving's flags (vLLM's client with
    --random-ids; tensorrt_llm/serve/scripts/benchmark_serving.py): the values as well as the flags."""
    from specsim.engines.trtllm import TrtllmBench

    writer, plan = TrtllmBench(), _plan("trtllm@1.3.0rc29", "eagle3")
    model = "meta-llama/Llama-3.1-8B-Instruct"
    spec = next(s for s in plan.servers.values() if s.steps is not None)
    env, cmd, files = writer.server(plan, spec)
    name = f"extra-{spec.key}.yml"
    assert cmd == [
        "trtllm-serve",
        model,
        "--backend",
        "pytorch",
        "--tp_size",
        "1",
        "--port",
        str(plan.port),
        "--max_batch_size",
        str(plan.max_concurrency),
        "--extra_llm_api_options",
        name,
    ]
    assert yaml.safe_load(files[name]) == {
        "kv_cache_config": {"enable_block_reuse": False},
        "speculative_config": {
            "decoding_type": "Eagle3",
            "max_draft_len": spec.steps,
            "speculative_model_dir": plan.draft_checkpoint,
        },
    }
    head = [
        "python",
        "-m",
        "tensorrt_llm.serve.scripts.benchmark_serving",
        "--backend",
        "openai",
        "--base-url",
        "http://h",
        "--model",
        model,
    ]
    tail = ["--request-rate", "inf", "--ignore-eos", "--save-result", "--result-dir", "results", "--result-filename"]
    synthetic = next(r for r in plan.runs if r.input_tokens is not None)
    assert writer.client(plan, synthetic, "http://h") == head + [
        "--num-prompts",
        str(synthetic.num_prompts),
        "--max-concurrency",
        str(synthetic.concurrency),
        *tail,
        synthetic.file.split("/", 1)[1],
        "--dataset-name",
        "random",
        "--random-ids",
        "--random-input-len",
        str(synthetic.input_tokens),
        "--random-output-len",
        str(synthetic.output_tokens),
        "--random-range-ratio",
        "0",
    ]
    real = next(r for r in plan.runs if r.input_tokens is None)
    assert writer.client(plan, real, "http://h") == head + [
        "--num-prompts",
        str(real.num_prompts),
        "--max-concurrency",
        str(real.concurrency),
        *tail,
        real.file.split("/", 1)[1],
        "--dataset-name",
        "sharegpt",
        "--dataset-path",
        "prompts.sharegpt.json",
    ]


def test_trtllm_ngram_server_writes_its_lookup_size():
    """NGram's speculative_config carries max_matching_ngram_size (tensorrt_llm/llmapi/llm_args.py NGramDecodingConfig)."""
    from specsim.engines.trtllm import TrtllmBench

    plan = _plan("trtllm@1.3.0rc29", "ngram")
    spec = next(s for s in plan.servers.values() if s.steps is not None)
    _, _, files = TrtllmBench().server(plan, spec)
    config = yaml.safe_load(files[f"extra-{spec.key}.yml"])["speculative_config"]
    assert config["decoding_type"] == "NGram" and config["max_matching_ngram_size"] == plan.drafter_type.lookup[1]


def test_sglang_ngram_is_written_as_the_chain_specsim_models():
    """SGLang's NGRAM drafts a tree of breadth up to --speculative-ngram-max-bfs-breadth, 10 unless told (server_args.py
    0.5.3 L308; arg_groups/fields/spec.py 0.5.23 L256-259; trie.cpp buildRecency): written without it, the plan and the
    schedule ran a breadth-10 tree of gamma + 1 tokens where specsim models a chain of gamma.  Both now say breadth 1,
    a flag of every release whose NGRAM they write for (engine_flags.yaml)."""
    from specsim.engines.sglang import SglangBench, to_sglang
    from specsim.speculation.schedule import gamma_schedule

    plan = _plan("sglang@0.5.23", "ngram")
    spec = next(s for s in plan.servers.values() if s.steps is not None)
    cmd = SglangBench().server(plan, spec)[1]
    at = cmd.index("--speculative-ngram-max-bfs-breadth")
    assert cmd[at + 1] == "1" and cmd[cmd.index("--speculative-algorithm") + 1] == "NGRAM"
    dep = Deployment.build(draft="ngram", engine="sglang")
    line = to_sglang(gamma_schedule(dep, 0.6, 16, context=128), dep, None)[0].split()
    assert line[line.index("--speculative-ngram-max-bfs-breadth") + 1] == "1"
    ngram = {v for v, entry in FLAGS["sglang"].items() if "NGRAM" in entry.get("algorithms", [])}
    assert ngram and all("--speculative-ngram-max-bfs-breadth" in FLAGS["sglang"][v]["flags"] for v in ngram)


def _refusal(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    return str(err.value)


def test_vllm_and_sglang_plans_refuse_and_note_word_for_word():
    from specsim.engines.sglang import SglangBench
    from specsim.engines.vllm import VllmBench

    vllm, ngram = VllmBench(), _plan("vllm@0.20.0", "ngram").drafter_type
    assert _refusal(lambda: vllm.check((0, 9, 9), ngram, [None], 1)) == (
        "vllm 0.9.9: specsim writes plans for vLLM 0.10.0 and later, where `vllm bench serve` exists "
        "(vllm/entrypoints/cli/benchmark/serve.py)"
    )
    assert vllm.check((0, 10, 0), ngram, [None], 1) == [
        "vllm 0.10.0's client records no acceptance length (from 0.14.0): every speculative run saves /metrics before "
        "and after, and calibrate-engine reads the difference"
    ]
    assert vllm.check((0, 14, 0), ngram, [None], 1) == []
    assert _refusal(lambda: vllm.check((0, 20, 0), ngram, [None], 2)) == (
        "vLLM drafts chains in these plans (top-k 1); a token tree is an SGLang or TensorRT-LLM plan"
    )
    assert _refusal(lambda: vllm.check((0, 19, 0), ngram, [2.0], 1)) == (
        "vllm 0.19.0 cannot pin acceptance at a length: synthetic_acceptance_length arrived in 0.20.0 "
        "(vllm-project/vllm#40662; 0.19 pins only a per-token rate on Model Runner V2); use vllm 0.20.0 or later, or "
        "pin=False (real acceptance on prompts at both step counts, its /metrics saved around each run)"
    )
    sglang, eagle3 = SglangBench(), _plan("sglang@0.5.23", "eagle3").drafter_type
    assert _refusal(lambda: sglang.check((0, 4, 7), eagle3, [None], 1)) == (
        "sglang 0.4.7: specsim writes plans for SGLang 0.4.8 and later, where the simulated acceptance can match its mean "
        "(SIMULATE_ACC_METHOD=match-expected, python/sglang/srt/speculative/eagle_utils.py)"
    )
    ngram_sglang = _plan("sglang@0.5.23", "llama-3.2-1b").drafter_type.supported_engines()[
        "sglang"
    ]  # a draft model: from 0.5.2
    assert _refusal(
        lambda: sglang.check((0, 5, 1), _plan("sglang@0.5.23", "llama-3.2-1b").drafter_type, [None], 1)
    ) == (
        f"sglang 0.5.1 refuses --speculative-algorithm STANDALONE ({ngram_sglang.where}): a draft model (draft MODEL) runs "
        "from sglang 0.5.2; use sglang@0.5.2 or later, or another drafter"
    )
    assert sglang.check((0, 5, 5), eagle3, [None], 1) == [
        "sglang 0.5.5 runs spec v1 (SGLANG_ENABLE_SPEC_V2 defaults to off up to 0.5.10): rounds are serial, as "
        "specsim's sglang@0.5 preset models them"
    ]
    assert sglang.check((0, 5, 11), eagle3, [None], 1) == []


def test_vllm_speculative_config_carries_lookup_pin_and_draft_tp():
    from specsim.engines.vllm import VllmBench

    plan = _plan("vllm@0.20.0", "ngram")
    pinned = next(s for s in plan.servers.values() if s.pinned_accept_length is not None)
    config = VllmBench()._spec_config(plan, pinned)
    low, high = plan.drafter_type.lookup
    assert config == {
        "method": "ngram",
        "num_speculative_tokens": pinned.steps,
        "prompt_lookup_min": low,
        "prompt_lookup_max": high,
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": pinned.pinned_accept_length,
    }
    same = _plan("vllm@0.24.0", "llama-3.2-1b")  # a draft model at the target's TP 1: no draft TP key
    assert "draft_tensor_parallel_size" not in VllmBench()._spec_config(
        same, next(s for s in same.servers.values() if s.steps)
    )
    dep = Deployment.build(
        "h100-sxm",
        "llama-3.1-8b",
        "llama-3.2-1b",
        timing=None,
        engine="vllm@0.15",
        target_options={"tp": 2},
        draft_options={"tp": 1},
    )
    apart = design_plan(dep, "vllm@0.15.0", pin=False, prompts="prompts.jsonl")  # 0.15-0.16 take a draft at TP 1
    config = VllmBench()._spec_config(apart, next(s for s in apart.servers.values() if s.steps))
    assert config["draft_tensor_parallel_size"] == 1 and apart.tp == 2
    (prep,) = VllmBench().prompts_prep(apart)  # the custom dataset the client reads is the user's prompts, copied
    assert shlex.split(prep, comments=True) == ["cp", "$PROMPTS", "prompts.jsonl"]


def test_sglang_bench_client_values_are_its_own():
    """sglang.bench_serving: --request-rate inf, --dataset-name random-ids (python/sglang/bench_serving.py)."""
    from specsim.engines.sglang import SglangBench

    plan = _plan("sglang@0.5.23", "llama-3.2-1b")
    synthetic = next(r for r in plan.runs if r.input_tokens is not None)
    cmd = SglangBench().client(plan, synthetic, "http://h")
    assert cmd[cmd.index("--request-rate") + 1] == "inf" and cmd[cmd.index("--dataset-name") + 1] == "random-ids"
    assert cmd[:3] == ["python", "-m", "sglang.bench_serving"] and cmd[cmd.index("--random-range-ratio") + 1] == "1.0"


def _read(engine: str, key: str) -> dict[tuple, list]:
    """{release: names} for the releases whose source the check script read ``key`` in (older entries lack it)."""
    return {tuple(int(x) for x in v.split(".")[:3]): entry[key] for v, entry in FLAGS[engine].items() if key in entry}


#: The 2026 drafters, whose first release is the first read source that has the name (or its gating key).
_NEW = ("peagle", "pard", "dflash", "dspark", "suffix")


@pytest.mark.parametrize("kind", sorted(__import__("specsim.speculation.drafters", fromlist=["DRAFTERS"]).DRAFTERS))
def test_every_drafters_engine_name_is_in_each_release_it_is_claimed_for(kind):
    """vLLM's method (and keys such as parallel_drafting) and SGLang's --speculative-algorithm are in every read release
    from the drafter's first one on; for the 2026 drafters the read release before it lacks them, so the first release
    specsim names is no later than the source says (vLLM dspark: read in 0.25.0 and 0.26.0, not in 0.24.0)."""
    from specsim.speculation.drafters import DRAFTERS

    cls = DRAFTERS[kind]
    for engine, key in (("vllm", "methods"), ("sglang", "algorithms")):
        if engine not in cls.supported_engines():
            continue
        support, read = cls.supported_engines()[engine], _read(engine, key)
        configs = _read(engine, "speculative_config") if engine == "vllm" else {}
        extra = set(dict(support.keys))

        def takes(v):
            return support.name in read[v] and extra <= set(configs.get(v, extra))

        after = [v for v in read if v >= support.since]
        assert after and all(takes(v) for v in after), (kind, engine, [v for v in after if not takes(v)])
        if kind in _NEW:
            before = [v for v in read if v < support.since]
            assert before and not takes(max(before)), (kind, engine, max(before))
    if "trtllm" in cls.supported_engines() and kind in _NEW:
        assert cls.supported_engines()["trtllm"].name in FLAGS["trtllm"]["decoding_types"]["names"], kind
        assert (
            FLAGS["trtllm"]["decoding_types"]["read_at"]["tensorrt_llm/llmapi/llm_args.py"][:8]
            in cls.supported_engines()["trtllm"].where
        )


@pytest.mark.parametrize(
    "engine, draft",
    [
        ("sglang@0.5.23", "dflash"),
        ("sglang@0.5.17", "dflash"),
        ("sglang@0.5.23", "dspark"),
        ("sglang@0.5.16", "dspark"),
        ("vllm@0.33.0", "dspark"),
        ("vllm@0.20.0", "dflash"),
        ("vllm@0.20.0", "peagle"),
        ("vllm@0.33.0", "pard"),
    ],
)
def test_block_and_parallel_drafter_plans_write_only_their_versions_names(engine, draft):
    """The plan's flags and keys are the release's own; SGLang's block drafters get the verify window and no step flags
    (SGLang forces their steps and top-k to 1), DSPARK its block (else SGLang reads it from the checkpoint and refuses
    another window)."""
    name, version = engine.split("@")
    known = FLAGS[name][version]
    dep = Deployment.build("h100-sxm", "qwen3-8b", draft, timing=None, engine=engine)
    pins = [2.0, 3.0] if draft == "pard" else None  # PARD publishes no length at a draft length to pin by default
    plan = design_plan(dep, engine, pinned=pins, prompts="prompts.jsonl", draft_checkpoint="org/drafter")
    servers = [
        w
        for w in _commands(plan_files(plan)["run.sh"])
        if "--speculative-algorithm" in w or "--speculative-config" in w
    ]
    assert servers
    flags = known["flags"] + ["--no-enable-prefix-caching"]
    for words in servers:
        assert all(w in flags for w in words if w.startswith("--")), (
            engine,
            [w for w in words if w.startswith("--") and w not in flags],
        )
        if name == "sglang":
            window = int(words[words.index("--speculative-num-draft-tokens") + 1])
            assert "--speculative-num-steps" not in words and "--speculative-eagle-topk" not in words
            assert words[words.index("--speculative-algorithm") + 1] in known["algorithms"]
            if draft == "dspark":
                assert int(words[words.index("--speculative-dspark-block-size") + 1]) == window - 1
        else:
            config = json.loads(words[words.index("--speculative-config") + 1])
            assert set(config) <= set(known["speculative_config"]) and config["method"] in known["methods"]


def test_a_release_before_a_drafters_first_is_refused_naming_the_source():
    dep = Deployment.build("h100-sxm", "qwen3-8b", "dspark", timing=None, engine="sglang")
    with pytest.raises(
        ValueError,
        match=r"sglang 0\.5\.15 refuses --speculative-algorithm DSPARK \(srt/speculative/spec_info\.py "
        r"SpeculativeAlgorithm: in 0\.5\.16, not 0\.5\.15\)",
    ):
        design_plan(dep, "sglang@0.5.15", prompts="prompts.jsonl", draft_checkpoint="org/drafter")
    dep = Deployment.build("h100-sxm", "qwen3-8b", "dflash", timing=None, engine="sglang")
    with pytest.raises(
        ValueError, match=r"DFLASH takes it from 0\.5\.17 \(SGLANG_SIMULATE_ACC_LEN read in .*dflash_worker_v2\.py"
    ):
        design_plan(dep, "sglang@0.5.16", prompts="prompts.jsonl", draft_checkpoint="org/drafter")


def test_trtllm_draft_model_plan_writes_the_unions_spelling():
    """A 1.3 plan's server YAML for a draft model says decoding_type Draft_Target, the Literal of 1.3's pydantic union
    (tensorrt_llm/llmapi/llm_args.py at 00043967): the old from_dict key DraftTarget is not in that union."""
    from specsim.engines.trtllm import TrtllmBench

    plan = _plan("trtllm@1.3.0rc29", "llama-3.2-1b")
    spec = next(s for s in plan.servers.values() if s.steps is not None)
    written = yaml.safe_load(TrtllmBench().server(plan, spec)[2][f"extra-{spec.key}.yml"])["speculative_config"]
    assert written["decoding_type"] == "Draft_Target" in FLAGS["trtllm"]["decoding_types"]["names"]
    assert "DraftTarget" not in FLAGS["trtllm"]["decoding_types"]["names"]


def test_a_runs_estimate_holds_the_users_the_engines_kv_cache_holds():
    # bench-plan estimates each run by the answers' serving model (served_state): the engine's own limits and the KV
    # cache its share leaves.  A 70B target on two H100s under vLLM holds a few long requests, so a run of 64 users is
    # served a few at a time; with every user held (the model before, default limits and no cache) it would be faster.
    from specsim.serving.steady import steady_state

    dep = Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", engine="vllm", target_options={"tp": 2})
    plan = design_plan(dep, "vllm@0.24.0", concurrency=[1, 8, 64], input_tokens=[2000, 8000], output_tokens=1000)
    run = next(r for r in plan.runs if r.kind == "plain" and r.concurrency == 64 and r.input_tokens == 8000)
    everyone = steady_state(dep, 0.0, [0], [64], 8000, 1000, fixed_lengths=True, requests=run.num_prompts)
    assert run.estimate_s > 1.5 * run.num_prompts / float(everyone.requests_per_s[0, 0])
    said = next(n for n in plan.notes if "more users than the engine's KV cache holds" in n)
    assert run.name in said and "plain-in2000-c1 " not in said


def test_bench_plan_takes_the_lengths_by_the_names_the_answering_commands_use(tmp_path):
    # --input-len and --output-len (the answering commands' and vLLM's benchmark's names) are --input-tokens and
    # --output-tokens here.
    out = tmp_path / "plan"
    argv = ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--out", str(out)]
    assert main(argv + ["--input-len", "300,900", "--output-len", "128"]) == 0
    runs = read_plan(out / "plan.yaml")["runs"]
    assert {r["input_tokens"] for r in runs} == {300, 900} and {r["output_tokens"] for r in runs} == {128}


def test_the_shipped_plans_script_is_what_bench_plan_writes_today_but_for_its_estimates():
    """examples/bench/plan is bench-plan's folder for vLLM 0.20.0 (scripts/make_bench_samples.py): its run.sh and
    plan.yaml, time estimates aside (they move with the model), are what bench-plan writes now, so a change to the
    script's commands reaches the example (its run.sh once lacked the result removals bench-plan had added)."""
    import re
    from pathlib import Path

    from specsim.calibration.plan import design_plan, plan_files
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.20.0")
    files = plan_files(design_plan(dep, "vllm@0.20.0", prompts="prompts.jsonl"))

    def timeless(text: str) -> str:
        text = re.sub(r"\(about [\d.]+ (s|min)\)", "(about T)", text)
        text = re.sub(r"estimated wall time [\d.]+ (s|min|h)", "estimated wall time T", text)
        return re.sub(r"estimate_s: [\d.]+", "estimate_s: T", text)

    for name in ("run.sh", "plan.yaml"):
        shipped = Path("examples/bench/plan", name).read_text()
        assert timeless(shipped) == timeless(files[name]), name


def test_bench_plan_names_the_deployment_defaults_it_planned_for_as_every_command_does(tmp_path, capsys):
    # Without --hardware and --target the plan benchmarks an H100 serving Llama-3.1-8B; every other command names those
    # defaults in a note, bench-plan named none (text or JSON).
    for extra in ([], ["--json"]):
        out = tmp_path / f"plan{len(extra)}"
        assert main(["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--out", str(out), *extra]) == 0
        err = capsys.readouterr().err
        assert "note: specsim's defaults, not given: hardware h100-sxm, target llama-3.1-8b" in err, err
    out = tmp_path / "given"
    argv = ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--hardware", "h100", "--out", str(out)]
    assert main(argv + ["--target", "llama-3.1-8b", "--timing", "hybrid"]) == 0
    assert "specsim's defaults, not given" not in capsys.readouterr().err


def test_an_ngram_plan_beside_a_sharded_target_is_written(tmp_path, capsys):
    # bench-plan --tp 2 --draft ngram refused "--draft-tp does not apply" though no --draft-tp was given: the plan's
    # deployment gave every drafter the target's TP, a lookup that runs no network too.
    out = tmp_path / "plan"
    args = ["bench-plan", "--engine", "vllm@0.34.0", "--tp", "2", "--draft", "ngram", "--pin-accept-length", "1.5,2"]
    assert main([*args, "--out", str(out)]) == 0
    assert '"method":"ngram"' in (out / "run.sh").read_text()


def test_trtllm_mtp_draft_length_is_written_alike_by_the_plan_and_the_schedule():
    """MTP's draft length goes under both of its names, by one function for both writers: before
    NVIDIA/TensorRT-LLM#12341 MTPDecodingConfig sets max_draft_len from num_nextn_predict_layers (default 1) after
    validation, so max_draft_len alone ran one draft token where the plan fitted 3; from #12341
    num_nextn_predict_layers is a deprecated alias dropped where max_draft_len is given (llm_args.py at 00043967)."""
    from specsim.engines.trtllm import TrtllmBench, to_trtllm
    from specsim.speculation.schedule import ScheduleRange

    plan = _plan("trtllm@1.3.0rc29", "mtp")
    for spec in (s for s in plan.servers.values() if s.steps is not None):
        _, _, files = TrtllmBench().server(plan, spec)
        written = yaml.safe_load(files[f"extra-{spec.key}.yml"])["speculative_config"]
        assert written["max_draft_len"] == written["num_nextn_predict_layers"] == spec.steps, written
    dep = Deployment.build("h200", "deepseek-v3", "mtp", engine="trtllm", target_options={"tp": 8})
    for version in ((1, 2, 0), (1, 3, 0)):
        config = to_trtllm([ScheduleRange(1, 64, 3, 1.5, 2.0)], None, dep, version)
        assert config["max_draft_len"] == config["num_nextn_predict_layers"] == 3, config


def test_trtllm_preset_names_the_backend_its_plans_serve_on():
    """The preset's line (every -v and --json names it) says which TensorRT-LLM runtime it models: the PyTorch backend
    that trtllm-serve --backend pytorch runs, the one the plans start and whose _torch/speculative code reads
    draft_len_schedule; not the C++ (TensorRT engine) runtime, which trtllm-bench calls its default 'cpp path'."""
    from specsim.engines.trtllm import PRESETS, TrtllmBench

    plan = _plan("trtllm@1.3.0rc29", "eagle3")
    _, cmd, _ = TrtllmBench().server(plan, next(s for s in plan.servers.values() if s.steps is not None))
    assert cmd[cmd.index("--backend") + 1] == "pytorch"
    assert "PyTorch backend" in PRESETS[0].release and "C++" not in PRESETS[0].release


@pytest.mark.parametrize(
    "engine, draft, says",
    [
        ("vllm@0.20.0", "eagle3", "the acceptance rate and its per-position shape"),
        ("sglang@0.5.3", "eagle3", "spec_accept_length"),
        ("trtllm@1.3.0rc29", "eagle3", "avg_decoded_tokens_per_iter"),
    ],
)
def test_the_readme_says_what_each_engines_real_acceptance_runs_record(engine, draft, says):
    """vLLM's spec_decode counters carry per-position shares; SGLang exports only the spec_accept_length gauge, and the
    TensorRT-LLM plan's servers no speculative counters (the run's length is its client's avg_decoded_tokens_per_iter):
    the README promised 'its per-position shape' for all three."""
    plan = _plan(engine, draft)
    assert any(s.pinned_accept_length is None for s in plan.servers.values() if s.steps is not None)
    readme = plan_files(plan)["README.md"]
    line = next(x for x in readme.splitlines() if x.startswith("* **Real-acceptance runs**"))
    assert says in line, line
    assert ("per-position shape" in line) == engine.startswith("vllm"), line


def test_a_plan_past_the_published_positions_says_which_steps_and_how_to_stay_within_them(capsys):
    """DeepSeek-V3's MTP acceptance is published for one position; the default --steps 2,4 asked for 4, and the refusal
    said 'not 4' without naming the flag that asked for it."""
    argv = ["bench-plan", "--engine", "trtllm@1.3.0rc29", "--hardware", "b200", "--tp", "8", "--target", "deepseek-v3"]
    assert main(argv + ["--draft", "mtp", "--out", "never-written"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "covers 1 draft position, not the 4 of --steps 2,4" in err[0], err
    assert "--pin-accept-length AL,AL" in err[0] and "--steps within" not in err[0], err  # two step counts need 2+
    assert not Path("never-written").exists()


def test_the_trtllm_plan_note_on_counters_says_why_its_servers_have_none():
    """The note said 'TensorRT-LLM's /prometheus/metrics carries no speculative counters' while specsim's own metric
    names for 1.3 (METRIC_NAMES, collector.py at 050f80d) list them, exported where return_perf_metrics is set: what
    is true is that the plan's servers do not set it."""
    from specsim.engines.trtllm import METRIC_NAMES, TrtllmBench

    plan = _plan("trtllm@1.3.0rc29", "eagle3")
    note = next(n for n in TrtllmBench().check((1, 3, 0), plan.drafter_type, [None], 1) if "counters" in n)
    assert "return_perf_metrics" in note and METRIC_NAMES[0].draft_tokens.startswith("trtllm_spec_decode")
    for server in plan.servers.values():
        extra = yaml.safe_load(TrtllmBench().server(plan, server)[2][f"extra-{server.key}.yml"])
        assert "return_perf_metrics" not in extra


@pytest.mark.parametrize(
    "engine, loads, prompts",
    [("vllm@0.24.0", "1,4,16,64", None), ("sglang@0.5.23", "1,2,4,8,16,32", "prompts.jsonl")],
)
def test_the_plan_says_that_its_servers_limit_and_its_missing_prompts_become_the_calibrations(
    engine, loads, prompts, tmp_path, capsys
):
    # A plan's servers run at its largest load (run.sh's --max-num-seqs or --max-running-requests), the calibration
    # keeps that limit, and every answer from it takes it: a user serving 64 users from a 1-32 plan got TTFT 5.4 s and
    # "limited by max_num_seqs", where a server of vLLM's 1024 gives 0.42 s (examples/bench/plan's calibration,
    # --concurrency 64 --input-len 2000 --output-len 300; docs/calibrate.md). Nothing said so before
    # the GPUs were spent; nor that a plan without prompts measures no acceptance of the user's.
    out = tmp_path / "plan"
    argv = ["bench-plan", "--engine", engine, "--draft", "eagle3", "--concurrency", loads, "--out", str(out)]
    if prompts:
        (tmp_path / prompts).write_text('{"prompt": "Explain the tides."}\n')
        argv += ["--prompts", str(tmp_path / prompts)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    run_sh = (out / "run.sh").read_text()
    limits = set(re.findall(r"--max-(?:num-seqs|running-requests) (\d+)", run_sh))
    assert limits == {loads.split(",")[-1]}, limits  # what the note says is what run.sh starts
    said = f"the plan's servers start at max_num_seqs {limits.pop()}, its largest concurrency"
    notes = " ".join(yaml.safe_load((out / "plan.yaml").read_text())["notes"])
    for text in (printed, (out / "README.md").read_text(), notes):
        # the plan's files outlive bench-plan and are read from Python too: both names (core.names.keyword_and_flag)
        assert said in text and "unless max_num_seqs / --max-num-seqs gives your server's" in text
    assert ("no prompts file: no run measures your acceptance" in printed) is (prompts is None)
    assert ("a plan with prompts / --prompts FILE.jsonl adds the runs that measure it" in printed) is (prompts is None)
