"""A benchmark plan for the user's own engine: the runs that let ``calibrate-engine`` separate every term it fits.

specsim fits, from an engine's own benchmark runs (:mod:`specsim.calibration.engine_fit`), the profile's efficiency, the
engine's time per iteration, the host terms of a speculative round (per round, per draft step, per sequence, per
sequence and step) and the acceptance.  Which of them a set of runs can tell apart is a matter of design:

* plain and speculative runs at the same loads (a speculative run is judged against its plain twin);
* a concurrency grid, whose decode batches spread far more than 1.5x (per-sequence terms, the efficiency);
* two input lengths (the KV-cache reads, the prefill share of each iteration);
* two numbers of draft steps (per-draft-step terms against per-round ones);
* acceptance pinned at known lengths by the engine's own synthetic acceptance, so that a round's cost is measured
  without an unknown acceptance in it (vLLM ``rejection_sample_method: synthetic`` with
  ``synthetic_acceptance_length``, vllm-project/vllm#40662; SGLang ``SGLANG_SIMULATE_ACC_LEN``; TensorRT-LLM
  ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``, documented together in SemiAnalysis InferenceX's
  ``golden_al_distribution/README.md``);
* one run with real acceptance on the user's own prompts, whose ``/metrics`` page is saved before and after, for the
  acceptance on the user's workload (what each engine records of it: its writer's ``real_acceptance``).

:func:`design_plan` lays the runs out; each engine's writer (:data:`WRITERS`) turns them into the engine's own server
and benchmark-client commands, with the flags of the version named (each read from that version's source, cited
beside the code that writes it).  A version that lacks a knob is refused with the nearest design that works.  The
script prints its estimated wall time (specsim's own prediction of every run) before it starts, and writes every
result and a manifest (``plan.yaml``) where ``calibrate-engine --plan`` finds them.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

from specsim.core.names import given_as, keyword_and_flag
from specsim.core.words import counted
from specsim.engines import EnginePreset, get_engine, named_release, parse_version
from specsim.engines.sglang import SglangBench
from specsim.engines.trtllm import TrtllmBench
from specsim.engines.vllm import VllmBench
from specsim.engines.writers import version_text

__all__ = [
    "BenchPlan",
    "PlanRun",
    "WRITERS",
    "check_prompts",
    "design_plan",
    "plan_deployment",
    "plan_files",
    "read_plan",
    "servers_max_num_seqs",
]

#: The schema of plan.yaml.
PLAN_SCHEMA = 1
DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32)
DEFAULT_INPUT_TOKENS = (512, 2048)
DEFAULT_OUTPUT_TOKENS = 256
DEFAULT_STEPS = (2, 4)
#: Prompts per run: this many per concurrent user, at least ``MIN_PROMPTS`` (a run's mean TPOT then averages over
#: several generations of every user; the first few requests of a closed loop start together).
PROMPTS_PER_USER = 8
MIN_PROMPTS = 32
#: Seconds a server takes to load a checkpoint, capture its graphs and answer /health: an assumption (minutes for an
#: 8B model on one GPU), printed with every estimate.
SERVER_START_S = 180.0
#: Concurrency levels and runs one plan may hold.
MAX_LOADS = 16
MAX_RUNS = 400


@dataclass(frozen=True)
class PlanRun:
    """One benchmark run: which server it needs, its load and lengths, and where its result goes."""

    name: str
    kind: str  # "plain" or "spec"
    server: str  # the server configuration it runs against (a key of BenchPlan.servers)
    concurrency: int
    input_tokens: int | None  # None: the user's prompts
    output_tokens: int
    num_prompts: int
    file: str  # the result, relative to the plan's folder
    steps: int | None = None
    pinned_accept_length: float | None = None
    metrics_before: str | None = None
    metrics_after: str | None = None
    estimate_s: float = 0.0


@dataclass(frozen=True)
class Server:
    """A server configuration: plain, or speculative at ``steps`` with acceptance pinned (or real)."""

    key: str
    steps: int | None = None
    pinned_accept_length: float | None = None


@dataclass(frozen=True)
class BenchPlan:
    """The whole plan: the deployment, its server configurations and runs, and what the writer needs."""

    engine: str
    version: str
    preset: str
    hardware: str
    target: str
    served_model: str
    drafter: str
    draft_checkpoint: str | None
    tp: int
    draft_tp: int
    servers: dict
    runs: list
    prompts: str | None
    port: int = 8000
    notes: list = field(default_factory=list)
    #: The drafter's class (:mod:`specsim.speculation.drafters`): how each engine names it and takes its pins.
    drafter_type: type | None = None

    @property
    def max_concurrency(self) -> int:
        return max(r.concurrency for r in self.runs)

    @property
    def estimate_s(self) -> float:
        return sum(r.estimate_s for r in self.runs) + SERVER_START_S * len({r.server for r in self.runs})

    def to_dict(self) -> dict:
        runs = []
        for r in self.runs:
            row = {
                "name": r.name,
                "kind": r.kind,
                "server": r.server,
                "concurrency": r.concurrency,
                "input_tokens": r.input_tokens,
                "output_tokens": r.output_tokens,
                "num_prompts": r.num_prompts,
                "file": r.file,
            }
            if r.kind == "spec":
                row |= {"steps": r.steps, "pinned_accept_length": r.pinned_accept_length}
            if r.metrics_before:
                row |= {"metrics_before": r.metrics_before, "metrics_after": r.metrics_after}
            row["estimate_s"] = round(r.estimate_s, 1)
            runs.append(row)
        return {
            "specsim_bench_plan": PLAN_SCHEMA,
            "engine": self.engine,
            "version": self.version,
            "preset": self.preset,
            "hardware": self.hardware,
            "target": self.target,
            "served_model": self.served_model,
            "drafter": self.drafter,
            "draft_checkpoint": self.draft_checkpoint,
            "tp": self.tp,
            "draft_tp": self.draft_tp,
            "prompts": self.prompts,
            "port": self.port,
            "estimate_s": round(self.estimate_s, 1),
            "notes": list(self.notes),
            "runs": runs,
        }


#: Each engine's benchmark writer (its module in :mod:`specsim.engines`).
WRITERS = {w.name: w for w in (VllmBench(), SglangBench(), TrtllmBench())}


# -- the design -------------------------------------------------------------------------------------------------------
def resolve_version(engine: str | EnginePreset) -> tuple[str, str, EnginePreset]:
    """(engine name, numbered version, specsim preset) of ``--engine``: a numbered release as given; a preset's key, an
    alias, ``@latest`` or a bare name the release its answers are read at (:func:`specsim.engines.named_release`:
    ``vllm@0.14`` plans for 0.27.0, ``vllm`` for the newest release the writer was checked against)."""
    preset = get_engine(engine)  # refuses unknown engines and versions; a resolved preset as it is
    named = named_release(preset)
    if named is None:
        raise ValueError(
            f"{given_as('engine')} none serves nothing: name the engine and version to benchmark (vllm, sglang or "
            "trtllm)"
        )
    name, release, _ = named
    version = preset.named_as.partition("@")[2]
    if not preset.asked:  # a preset's name (its key, an alias, latest or bare), not a release's number
        version = version_text(release)
    return name, version, preset


def plan_deployment(
    hardware: str | None,
    target: str | None,
    draft: str | None,
    *,
    engine: str | EnginePreset,
    timing: str | None = None,
    target_options: dict | None = None,
    draft_options: dict | None = None,
):
    """The deployment a plan benchmarks (:meth:`specsim.speculation.deployment.Deployment.build`), its drafter at the
    target's tensor parallelism unless ``draft_options`` say otherwise: every engine runs it so by default (vLLM's
    draft_tensor_parallel_size defaults to the target's, and EAGLE heads are built with the target's parallel config
    whatever it says; SGLang and TensorRT-LLM have no separate draft TP)."""
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.drafters import drafter_class

    target_options = dict(target_options or {})
    draft_options = dict(draft_options or {})
    # (a lookup, n-gram or suffix decoding, runs no network to shard)
    if "tp" not in draft_options and (target_options.get("tp") or 1) > 1 and drafter_class(draft).launches_steps:
        draft_options["tp"] = target_options["tp"]
    return Deployment.build(
        hardware,
        target,
        draft,
        timing=timing,
        engine=engine,
        target_options=target_options,
        draft_options=draft_options,
    )


def design_plan(
    dep,
    engine: str | EnginePreset,
    *,
    served_model: str | None = None,
    draft_checkpoint: str | None = None,
    concurrency=DEFAULT_CONCURRENCY,
    input_tokens=DEFAULT_INPUT_TOKENS,
    output_tokens: int = DEFAULT_OUTPUT_TOKENS,
    steps=DEFAULT_STEPS,
    pinned: list[float] | None = None,
    pin: bool = True,
    prompts: str | None = None,
    port: int = 8000,
) -> BenchPlan:
    """Lay out the runs for ``dep`` served by ``engine`` (``vllm@0.24.0``).

    ``pinned`` holds one acceptance length per step count (default: the drafter's published default acceptance rate
    at each step count, :meth:`specsim.speculation.drafters.Drafter.default_acceptance`); ``pin`` False runs every speculative server with
    real acceptance on ``prompts`` instead (for versions that cannot pin).  The real-acceptance run on ``prompts`` is
    added when ``prompts`` is given.
    """
    name, version, modelled = resolve_version(engine)
    writer = WRITERS[name]
    if dep.drafter is None:
        raise ValueError(f"a plan benchmarks speculation against plain decoding: give {given_as('draft')}")
    concurrency = sorted(set(int(c) for c in concurrency))
    if len(concurrency) < 3:
        raise ValueError(
            f"{given_as('concurrency')} needs at least 3 loads (the fit holds each out in turn and needs decode batches "
            f"at least 1.5x apart), got {len(concurrency)}"
        )
    if len(concurrency) > MAX_LOADS:
        raise ValueError(f"{given_as('concurrency')} lists {len(concurrency)} loads; at most {MAX_LOADS}")
    steps = sorted(set(int(s) for s in steps))
    if len(steps) < 2:
        raise ValueError(
            f"{given_as('steps')} needs two numbers of draft steps: one cannot tell a per-step term from a per-round "
            "one"
        )
    pinned = _pins(type(dep.drafter), steps, pinned, pin, prompts)
    notes = writer.check(parse_version(name, version), type(dep.drafter), list(pinned), 1)
    if modelled.overlaps(dep.drafter.overlap_kind):
        notes.append(
            f"{name} {version} overlaps a round's host work with the GPU for this drafter ({modelled.release}): the "
            "runs show it only where it outlasts the round's passes, and calibrate-engine says so where they cannot "
            "separate it"
        )
    # What the runs leave to the calibration's answers, said before the GPUs are spent on them: the servers' limit (each
    # writer's server() starts them at the largest load) becomes the limit every answer from the file takes, and an
    # answer at more users than it queues the rest (at 64 users from a 1-32 plan: TTFT 5.4 s where a server of 1024
    # gives 0.42 s, on examples/bench/plan's calibration; docs/calibrate.md); without prompts no run measures
    # the acceptance, and the answers take the drafter's published one.
    notes.append(
        f"the plan's servers start at max_num_seqs {max(concurrency)}, its largest concurrency: a calibration from its runs "
        f"keeps that limit, and every answer from it takes it at any load (past {max(concurrency)} users the rest "
        f"queue) unless {keyword_and_flag('max_num_seqs')} gives your server's; list the concurrency you serve among "
        "the loads"
    )
    if prompts is None and pin:
        notes.append(
            "no prompts file: no run measures your acceptance (the speculative runs are pinned), so the answers from "
            "the calibration take the drafter's published acceptance unless given one; a plan with "
            f"{keyword_and_flag('prompts')} FILE.jsonl adds the runs that measure it"
        )
    checkpoint = dep.drafter.checkpoint(dep.target, draft_checkpoint)
    served = served_model or dep.target.source or dep.target.name
    tp = dep.target.tp
    draft_tp = dep.draft.tp if dep.draft is not None else tp
    # A run past the model's positions is one calibrate-engine refuses: refused before it is written.
    longest = (max(int(i) for i in input_tokens) if pin else 0) + int(output_tokens)
    inputs, outputs = given_as("input_tokens", "--input-tokens"), given_as("output_tokens", "--output-tokens")
    dep.require_within_positions(longest, f"{inputs} and {outputs}" if pin else outputs)
    servers, runs = _layout(steps, pinned, concurrency, input_tokens, output_tokens, pin, prompts)
    if len(runs) > MAX_RUNS:
        raise ValueError(
            f"the plan holds {len(runs)} runs; at most {MAX_RUNS}: fewer {given_as('concurrency')} levels or {inputs}"
        )
    plan = BenchPlan(
        name,
        version,
        modelled.key,
        dep.hardware.name,
        dep.target.source or dep.target.name,
        served,
        _drafter_spec(dep),
        checkpoint,
        tp,
        draft_tp,
        servers,
        runs,
        prompts,
        port,
        notes,
        type(dep.drafter),
    )
    return _with_estimates(dep, plan)


def _published(drafter: type):
    """The drafter's published acceptance, or None where it has none (n-gram: it depends on the workload)."""
    try:
        return drafter.default_acceptance()[0]
    except ValueError:
        return None


def _pins(drafter: type, steps: list[int], pinned: list[float] | None, pin: bool, prompts: str | None) -> list:
    """The acceptance length pinned at each step count (None where the runs take real acceptance), checked."""
    from specsim.speculation.acceptance import tokens_per_round

    if not pin:
        if prompts is None:
            raise ValueError(
                f"{given_as('pin=False', '--no-pin')} measures acceptance on your prompts: give {given_as('prompts')} "
                "FILE.jsonl"
            )
        return [None] * len(steps)
    if pinned is None:
        acc = _published(drafter)
        if acc is None:
            raise ValueError(
                f"{drafter.label} has no one published acceptance to pin ({drafter.no_default}; the answering "
                "commands take a workload's published rows, which a plan for your prompts should not assume): give the "
                f"lengths to pin with {given_as('pinned', '--pin-accept-length')} (one per step count), or "
                f"{given_as('pin=False', '--no-pin')} with {given_as('prompts')}"
            )
        if acc.max_gamma is not None and acc.max_gamma < max(steps):
            within = f", or {given_as('steps')} within {acc.max_gamma}" if acc.max_gamma >= 2 else ""
            raise ValueError(
                f"the published acceptance of this drafter covers {counted(acc.max_gamma, 'draft position')}, not the "
                f"{max(steps)} of {given_as('steps')} {','.join(map(str, steps))}: give the lengths to pin with "
                f"{given_as('pinned', '--pin-accept-length')} AL,AL (one per step count){within}"
            )
        pinned = [round(float(tokens_per_round(acc, s)), 2) for s in steps]
    if len(pinned) != len(steps):
        raise ValueError(
            f"{given_as('pinned', '--pin-accept-length')} gives {len(pinned)} lengths for {len(steps)} step counts: one per step count"
        )
    for s, p in zip(steps, pinned):
        if not 1.0 <= p <= s + 1:
            raise ValueError(
                f"a pinned acceptance length of {p:g} at {s} draft steps is outside [1, {s + 1}]: {s} steps "
                f"accept at most {s} drafted tokens plus the target's own"
            )
    return list(pinned)


def _layout(steps, pinned, concurrency, input_tokens, output_tokens, pin: bool, prompts) -> tuple[dict, list]:
    """(servers, runs): every server at every load and prompt length, and the real-acceptance runs with their twins."""
    servers = {"plain": Server("plain")}
    runs: list[PlanRun] = []
    inputs = [None] if not pin else sorted(set(int(i) for i in input_tokens))
    if pin and len(inputs) < 2:
        raise ValueError(
            f"{given_as('input_tokens', '--input-tokens')} needs two prompt lengths: one cannot tell the KV-cache reads "
            "from the rest"
        )
    for s, p in zip(steps, pinned):
        key = f"s{s}-al{p:g}" if p is not None else f"s{s}-real"
        servers[key] = Server(key, s, p)
    for server in servers.values():
        for L in inputs:
            for c in concurrency:
                runs.append(_run(server, c, L, output_tokens, pin))
    if prompts is not None and pin:
        s = max(steps)
        servers[f"s{s}-real"] = real = Server(f"s{s}-real", s, None)
        for c in concurrency[:2]:
            runs.append(_run(real, c, None, output_tokens, pin))
        for c in concurrency[:2]:  # the plain twins of the real-acceptance runs, on the same prompts
            runs.append(_run(servers["plain"], c, None, output_tokens, pin))
    return servers, runs


def _drafter_spec(dep) -> str:
    return dep.drafter.draft_spec


def _run(server: Server, c: int, input_tokens: int | None, output_tokens: int, pin: bool) -> PlanRun:
    data = "prompts" if input_tokens is None else f"in{input_tokens}"
    name = f"{'plain' if server.steps is None else server.key}-{data}-c{c}"
    n = max(MIN_PROMPTS, PROMPTS_PER_USER * c)
    kind = "plain" if server.steps is None else "spec"
    metrics = server.steps is not None
    return PlanRun(
        name,
        kind,
        server.key,
        c,
        input_tokens,
        output_tokens,
        n,
        f"results/{name}.json",
        server.steps,
        server.pinned_accept_length,
        f"results/{name}.metrics-before.txt" if metrics else None,
        f"results/{name}.metrics-after.txt" if metrics else None,
    )


def _with_estimates(dep, plan: BenchPlan) -> BenchPlan:
    """Each run's wall time as specsim predicts it: a closed loop of ``c`` users sending ``num_prompts`` requests, by the
    serving model as the answers take it (:func:`specsim.serving.steady.served_state`: the plan's servers' max_num_seqs,
    the engine's own token budget and KV cache; the run's own means from its first wave on)."""
    import dataclasses

    from specsim.calibration.model import memoised
    from specsim.serving.capacity import kv_error_said
    from specsim.serving.steady import engine_limits, served_state
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    runs, held = [], []
    passes = memoised(dep)  # the runs' passes repeat across runs and the serving model's iterations: each timed once
    # Its servers hold its largest load (each writer's server() sets max_num_seqs to it), the rest the engine's own.
    limits, _ = engine_limits(dep.engine, dep.hardware, False, plan.max_concurrency)
    pins = {s.steps: s.pinned_accept_length for s in plan.servers.values() if s.pinned_accept_length is not None}
    for r in plan.runs:
        prompt = (
            r.input_tokens if r.input_tokens is not None else 1000
        )  # the user's prompts: their length is not known here
        al = r.pinned_accept_length
        published = _published(type(dep.drafter))
        covered = published is not None and (
            published.max_gamma is None or r.steps is None or published.max_gamma >= r.steps
        )
        if al is None and r.steps is not None and (not covered or not pins):
            al = pins.get(r.steps, 1.0 + 0.5 * r.steps)  # an estimate's guess where no published acceptance extends
        if r.steps is None:
            acc, gamma = 0.0, 0
        else:
            acc = published if al is None else float(alpha_from_acceptance_length(al, r.steps))
            gamma = r.steps
        # The random dataset's lengths are fixed (vllm bench serve --random-range-ratio 0); the user's prompts vary.
        state = served_state(
            passes,
            acc,
            [gamma],
            [r.concurrency],
            prompt,
            r.output_tokens,
            limits=limits,
            fixed_lengths=r.input_tokens is not None,
            requests=r.num_prompts,
        )
        runs.append(dataclasses.replace(r, estimate_s=float(r.num_prompts / state.requests_per_s[0, 0])))
        if state.limited_by[0, 0] == "kv cache":
            held.append(f"{r.name} ({float(state.in_engine[0, 0]):.0f} held)")
    notes = list(plan.notes)
    if held:
        notes.append(
            f"more users than the engine's KV cache holds, at its own share of memory, in {counted(len(held), 'run')}: "
            f"{', '.join(held)}; the engine queues the rest, and calibrate-engine predicts those runs at what the cache "
            f"holds (KV cache: {kv_error_said(dep.engine.name)})"
        )
    return dataclasses.replace(plan, runs=runs, notes=notes)


# -- the files ---------------------------------------------------------------------------------------------------------
def _minutes(seconds: float) -> str:
    m = int(math.ceil(seconds / 60))
    return f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min"


def script(plan: BenchPlan) -> tuple[str, dict]:
    """(run.sh, extra files {name: text}) of the plan."""
    writer = WRITERS[plan.engine]
    url = f"http://127.0.0.1:{plan.port}"
    extra: dict = {}
    lines = [
        "#!/usr/bin/env bash",
        f"# Written by specsim bench-plan for {plan.engine} {plan.version} (specsim models it with its {plan.preset} preset):",
        f"# {plan.served_model} on {plan.tp} x {plan.hardware}, drafter {plan.drafter}. See README.md for what each run measures.",
        "# Results land in results/, where `specsim calibrate-engine --plan plan.yaml` reads them.",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
        "mkdir -p results logs",
        f'echo "specsim bench-plan: {len(plan.runs)} runs on {len(plan.servers)} servers; estimated wall time '
        f"{_minutes(plan.estimate_s)} (specsim's prediction of each run, and {SERVER_START_S / 60:g} min per server start, "
        'assumed)"',
        "",
        "wait_ready() {  # until the server answers, or 30 minutes",
        f"  for _ in $(seq 1800); do curl -sf {url}{writer.health} >/dev/null && return 0; sleep 1; done",
        '  echo "the server did not come up: see logs/" >&2; return 1',
        "}",
        "",
    ]
    has_real = any(r.input_tokens is None for r in plan.runs)
    if has_real:
        lines += [
            f'PROMPTS="${{PROMPTS:-{plan.prompts or ""}}}"',
            'if [ -n "$PROMPTS" ] && [ -f "$PROMPTS" ]; then',
            *("  " + x for x in writer.prompts_prep(plan)),
            "else",
            '  echo "no prompts file (PROMPTS, or --prompts to bench-plan): the real-acceptance runs are skipped"',
            "fi",
            "",
        ]
    for server in plan.servers.values():
        runs = [r for r in plan.runs if r.server == server.key]
        if not runs:
            continue
        env, cmd, files = writer.server(plan, server)
        extra |= files or {}
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        lines.append(
            f"# server {server.key}: "
            + (
                "no speculation"
                if server.steps is None
                else f"{server.steps} draft steps, "
                + (
                    f"acceptance pinned at {server.pinned_accept_length:g} tokens per verification"
                    if server.pinned_accept_length is not None
                    else "real acceptance"
                )
            )
        )
        lines.append(f"{prefix + ' ' if prefix else ''}{shlex.join(cmd)} > logs/server-{server.key}.log 2>&1 &")
        lines.append("SERVER=$!; wait_ready")
        for r in runs:
            guard = 'if [ -n "${PROMPTS:-}" ] && [ -f "${PROMPTS:-}" ]; then ' if r.input_tokens is None else ""
            # A rerun starts from no result: SGLang's bench_serving appends its line to --output-file
            # (python/sglang/bench_serving.py: open(output_file_name, "a")), and a file of two runs is refused.
            body = [f"rm -f {shlex.quote(r.file)}"]
            if r.metrics_before:
                body.append(f"curl -sf {url}{writer.metrics} > {r.metrics_before} || true")
            body.append(shlex.join(writer.client(plan, r, url)) + f" > logs/{r.name}.log 2>&1")
            if r.metrics_after:
                body.append(f"curl -sf {url}{writer.metrics} > {r.metrics_after} || true")
            lines.append(f"echo 'run {r.name} (about {max(r.estimate_s, 1):.0f} s)'")
            lines.append(guard + "; ".join(body) + ("; fi" if guard else ""))
        lines += ["kill $SERVER; wait $SERVER 2>/dev/null || true", ""]
    lines.append('echo "done: specsim calibrate-engine --plan plan.yaml --out calibration.yaml"')
    return "\n".join(lines) + "\n", extra


def readme(plan: BenchPlan) -> str:
    """What the plan runs and what each group of runs measures."""
    spec = [s for s in plan.servers.values() if s.steps is not None]
    pins = [s for s in spec if s.pinned_accept_length is not None]
    loads = sorted({r.concurrency for r in plan.runs})
    inputs = sorted({r.input_tokens for r in plan.runs if r.input_tokens is not None})
    out = [
        f"# Benchmark plan: {plan.served_model} on {plan.engine} {plan.version}",
        "",
        f"Written by `specsim bench-plan`. specsim models {plan.engine} {plan.version} with its `{plan.preset}` preset; the "
        f"deployment is {plan.tp} x {plan.hardware} (tensor parallelism {plan.tp}, drafter at {plan.draft_tp}), drafter "
        f"`{plan.drafter}`" + (f" (`{plan.draft_checkpoint}`)" if plan.draft_checkpoint else "") + ".",
        "",
        f"Estimated wall time: {_minutes(plan.estimate_s)} ({len(plan.runs)} runs on {len(plan.servers)} servers; each run as "
        f"specsim predicts it, and {SERVER_START_S / 60:g} minutes per server start, assumed).",
        "",
        "    bash run.sh                                        # needs the GPUs, the checkpoints and the engine installed",
        "    specsim calibrate-engine --plan plan.yaml --out calibration.yaml",
        "    specsim optimal-gamma --calibration calibration.yaml",
        "",
        "## What each run measures",
        "",
        f"* **Plain runs** at concurrency {', '.join(map(str, loads))} and prompts of {' and '.join(map(str, inputs))} tokens: "
        "the engine's time per iteration and the profile's efficiency (the decode batches spread over the grid; two "
        "prompt lengths change the KV-cache reads and the prefill share while the weights stay).",
    ]
    if pins:
        out.append(
            "* **Speculative runs with pinned acceptance** ("
            + "; ".join(f"{s.steps} draft steps at {s.pinned_accept_length:g} tokens per verification" for s in pins)
            + ") at the same loads and prompts: the host cost of a round, with no unknown acceptance in it. Two step "
            "counts separate what a round costs per draft step from what it costs once; the concurrency grid separates "
            "what it costs per sequence. The engine accepts the pinned number of tokens whatever the drafts are, so "
            "the outputs are not the model's: these runs time the engine, not the answers."
        )
    real = [s for s in spec if s.pinned_accept_length is None]
    if real:
        out.append(
            '* **Real-acceptance runs** on your prompts (`PROMPTS` or `--prompts`, JSONL of `{"prompt": ...}` lines), '
            f"with the server's metrics page saved before and after: {WRITERS[plan.engine].real_acceptance} on your "
            "workload (with their plain twins on the same prompts). Without a prompts file they are skipped."
        )
    if plan.notes:
        out += ["", "## Notes", ""] + [f"* {n}" for n in plan.notes]
    out += [
        "",
        "## Files",
        "",
        "* `run.sh`: the whole measurement; `plan.yaml`: every run, its server and its result file "
        "(what calibrate-engine reads); `results/`: the benchmark client's files and saved metrics pages; `logs/`: "
        "server and client output.",
    ]
    return "\n".join(out) + "\n"


def plan_files(plan: BenchPlan) -> dict[str, str]:
    """Every file of the plan's folder: name -> text."""
    import yaml

    run, extra = script(plan)
    return {
        "run.sh": run,
        "README.md": readme(plan),
        "plan.yaml": yaml.safe_dump(plan.to_dict(), sort_keys=False),
        **extra,
    }


def servers_max_num_seqs(plan: dict, path: str) -> tuple[int, str]:
    """(the max_num_seqs the servers of the plan read from ``path`` were started with, who chose it): each writer's
    server() starts them at the plan's largest concurrency (its run.sh), which a calibration from its runs keeps and
    records (its ``serving`` record's ``max_num_seqs_from``), and the answers from it say where it holds users back.

    >>> servers_max_num_seqs({"runs": [{"concurrency": 1}, {"concurrency": 32}]}, "plan/plan.yaml")[1]
    "bench-plan set to the plan's largest load (plan/plan.yaml: its run.sh starts each server with it)"
    """
    seqs = max(int(r["concurrency"]) for r in plan["runs"])
    return seqs, f"bench-plan set to the plan's largest load ({path}: its run.sh starts each server with it)"


def read_plan(path: str) -> dict:
    """plan.yaml as written by :func:`plan_files`, checked: its schema, the deployment keys and every run's fields."""
    from pathlib import Path

    from specsim.core.limits import load_yaml

    if not Path(path).is_file():
        raise ValueError(
            f"{given_as('plan_path', '--plan')} {path}: does not exist or is not a file (bench-plan writes plan.yaml in "
            "its folder)"
        )
    data = load_yaml(path, "benchmark plan")
    where = Path(path).name
    if isinstance(data, dict) and "specsim_bench_plan" in data and data["specsim_bench_plan"] != PLAN_SCHEMA:
        raise ValueError(
            f"{where}: a bench-plan manifest of schema {data['specsim_bench_plan']!r:.20}; this specsim reads schema "
            f"{PLAN_SCHEMA} (specsim bench-plan writes one)"
        )
    if not isinstance(data, dict) or data.get("specsim_bench_plan") != PLAN_SCHEMA:
        raise ValueError(f"{where}: not a specsim bench-plan manifest (specsim_bench_plan: {PLAN_SCHEMA})")
    for key, kind in (
        ("engine", str),
        ("version", str),
        ("preset", str),
        ("hardware", str),
        ("target", str),
        ("drafter", str),
        ("tp", int),
        ("draft_tp", int),
        ("runs", list),
    ):
        value = data.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            kind_said = {str: "a string", int: "a whole number", list: "a list"}[kind]
            raise ValueError(f"{where}: {key} must be {kind_said}, got {value!r}")
    from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_TP

    for key in ("tp", "draft_tp"):
        if not 1 <= data[key] <= MAX_TP:
            raise ValueError(f"{where}: {key} must be a whole number in [1, {MAX_TP}], got {data[key]!r}")
    if not data["runs"]:
        raise ValueError(f"{where}: the plan holds no runs")

    def whole(i: int, run: dict, key: str, top: int, optional: bool = False) -> None:
        value = run.get(key)
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise ValueError(f"{where}: run {i}: {key} must be a whole number in [1, {top:,}], got {value!r}")

    for i, run in enumerate(data["runs"], start=1):
        if not isinstance(run, dict):
            raise ValueError(f"{where}: run {i} must be a mapping")
        if run.get("kind") not in ("plain", "spec"):
            raise ValueError(f"{where}: run {i}: kind must be plain or spec, got {run.get('kind')!r}")
        if not isinstance(run.get("file"), str) or not run["file"]:
            raise ValueError(f"{where}: run {i}: file must be a path, got {run.get('file')!r}")
        if run["kind"] == "spec":
            steps = run.get("steps")
            if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 64:
                raise ValueError(f"{where}: run {i}: steps must be a whole number in [1, 64], got {steps!r}")
            pin = run.get("pinned_accept_length")
            if pin is not None and (
                isinstance(pin, bool) or not isinstance(pin, (int, float)) or not 1 <= pin <= steps + 1
            ):
                raise ValueError(
                    f"{where}: run {i}: pinned_accept_length must be in [1, {steps + 1}] for {steps} draft steps, "
                    f"got {pin!r}"
                )
        whole(i, run, "concurrency", MAX_BATCH)
        whole(i, run, "input_tokens", MAX_CONTEXT, optional=True)  # null: the plan's prompts file
        whole(i, run, "output_tokens", MAX_CONTEXT)
    return data


def check_prompts(path) -> int:
    """The prompts of a real-acceptance run's file, counted: JSONL, one ``{"prompt": "..."}`` object a line (vllm bench
    serve's custom dataset, vllm/benchmarks/datasets.py CustomDataset; run.sh converts it for SGLang and TensorRT-LLM),
    or ValueError naming the line that is not one.  An empty or non-JSONL file was taken, and run.sh failed at the
    first real-acceptance run."""
    from pathlib import Path

    from specsim.core.files import read_text
    from specsim.core.limits import DuplicateKey, loads_json, unique_keys

    name = Path(path).name
    count = 0
    for number, line in enumerate(read_text(path, given_as("prompts")).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{given_as('prompts')} {name} line {number}"
        try:
            record = loads_json(line, where, object_pairs_hook=unique_keys(where))
        except DuplicateKey:  # its own line names the key
            raise
        except ValueError:
            raise ValueError(f'{where}: not a JSON object; each line is one {{"prompt": "..."}}') from None
        if not isinstance(record, dict) or not isinstance(record.get("prompt"), str) or not record["prompt"].strip():
            raise ValueError(f'{where}: no "prompt" text; each line is one {{"prompt": "..."}}')
        count += 1
    if not count:
        raise ValueError(f'{given_as("prompts")} {name} holds no prompt: JSONL, one {{"prompt": "..."}} a line')
    return count
