"""bench-plan: a plan per engine whose every flag, config key and environment variable is one the engine version it targets
defines (tests/data/engine_flags.yaml, read from the released source by scripts/check_engine_flags.py), a design that
frees every term calibrate-engine fits, a script bash accepts that says its wall time first, and a manifest that reads
back."""

from __future__ import annotations

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

PLANS = [("vllm@0.20.0", "eagle3"), ("vllm@0.24.0", "llama-3.2-1b"), ("vllm@0.33.0", "eagle"), ("vllm@0.20.0", "ngram"),
         ("sglang@0.5.3", "eagle3"), ("sglang@0.5.23", "llama-3.2-1b"), ("sglang@0.4.8", "eagle"), ("trtllm@1.3.0", "eagle3"),
         ("trtllm@1.3.0", "mtp")]


def _plan(engine: str, draft: str, **kw):
    target = "deepseek-v3" if draft == "mtp" else "llama-3.1-8b"
    options = {"tp": 8} if draft == "mtp" else None
    dep = Deployment.build("h200" if draft == "mtp" else "h100-sxm", target, draft, None, engine.split("@")[0],
                           target_options=options, draft_options=options)
    pins = [2.0, 3.0] if (engine.startswith("trtllm") and draft not in ("eagle3", "mtp")) or draft in ("ngram", "mtp") else None
    return design_plan(dep, engine, pinned=pins, prompts="prompts.jsonl", **kw)


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
        for w in words:
            if w.startswith("--"):
                assert w in flags, (engine, w)
        if "--speculative-config" in words:
            config = json.loads(words[words.index("--speculative-config") + 1])
            assert set(config) <= set(known["speculative_config"]), (engine, set(config) - set(known["speculative_config"]))
    for fname, text in files.items():
        if fname.startswith("extra-"):
            def keys(d):
                return [k for k, v in d.items()] + [k2 for v in d.values() if isinstance(v, dict) for k2 in keys(v)]
            assert set(keys(yaml.safe_load(text))) <= set(known["yaml_keys"]), fname


def test_every_engine_pins_acceptance_its_own_way():
    vllm = plan_files(_plan("vllm@0.20.0", "eagle3"))["run.sh"]
    assert '"rejection_sample_method":"synthetic","synthetic_acceptance_length":' in vllm
    new, old = plan_files(_plan("sglang@0.5.3", "eagle3"))["run.sh"], plan_files(_plan("sglang@0.4.8", "eagle"))["run.sh"]
    assert "SGLANG_SIMULATE_ACC_LEN=" in new and "SGLANG_SIMULATE_ACC_METHOD=match-expected" in new
    assert "SIMULATE_ACC_LEN=" in old and "SGLANG_SIMULATE_ACC_LEN" not in old
    plan = _plan("trtllm@1.3.0", "eagle3")
    pins = sorted(s.pinned_accept_length for s in plan.servers.values() if s.pinned_accept_length)
    trt = plan_files(plan)["run.sh"]
    for al in pins:  # TensorRT-LLM counts accepted draft tokens: the length less the target's own token
        assert f"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS={al - 1:g} " in trt


@pytest.mark.parametrize("engine, draft", PLANS[:1] + PLANS[4:5] + PLANS[7:8])
def test_the_design_frees_every_term_the_fit_has(engine, draft):
    plan = _plan(engine, draft)
    runs = [CalRun(BenchRun("x", i, "vllm", None, f"concurrency {r.concurrency}", 100, 0.01, 0.9 * r.concurrency if r.concurrency > 1 else 1.0,
                            float(r.input_tokens or 1000), float(r.output_tokens), None, 1.0, r.concurrency),
                   None if r.kind == "plain" else SpecSetup(r.steps, pinned_accept_length=r.pinned_accept_length))
            for i, r in enumerate(plan.runs)]
    assert all(why == "" for why in identifiable(runs, fit_scale=True).values())
    loads = {r.concurrency for r in plan.runs}
    assert {(r.kind, r.concurrency) for r in plan.runs} >= {(k, c) for k in ("plain", "spec") for c in loads}
    assert len({r.input_tokens for r in plan.runs if r.input_tokens}) == 2 and len({r.steps for r in plan.runs if r.steps}) == 2
    real = [r for r in plan.runs if r.kind == "spec" and r.pinned_accept_length is None]
    assert real and all(r.input_tokens is None and r.metrics_after for r in real)  # the user's prompts, metrics saved


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
        assert r["file"] == f"results/{Path(r['file']).name}" and f"--result-dir results --result-filename {Path(r['file']).name}" in run_sh
    assert "overlaps a round's host work" in (out / "README.md").read_text()  # vLLM 0.24 runs EAGLE rounds async


def test_latest_is_the_newest_release_the_flags_were_checked_against():
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm")
    assert design_plan(dep, "vllm").version == "0.33.0" and design_plan(dep, "sglang@latest").version == "0.5.23"
    assert "0.33.0" in FLAGS["vllm"] and "0.5.23" in FLAGS["sglang"]
