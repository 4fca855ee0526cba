"""Your own engine on the command line: ``bench-plan`` writes the benchmark, ``calibrate-engine`` fits it.

The physics and the fit live in :mod:`specsim.calibration` (``plan``, ``runs``, ``engine_fit``, ``file``); this module reads the files the user names, calls them and prints.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

from specsim.cli import report
from specsim.cli.report import print_json, table
from specsim.speculation.acceptance import tokens_per_round
from specsim.cli.flags import (add_model_args, csv_text, engine_type, int_at_least, int_list, nonempty, number)
from specsim.core.defaults import DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA, MAX_TP
from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES
from specsim.engines import DEFAULT_ENGINE
from specsim.timing import DEFAULT_TIMING

__all__ = ["run_bench_plan", "run_calibrate_engine"]


# -- bench-plan ---------------------------------------------------------------------------------------------------------
def run_bench_plan(args: argparse.Namespace) -> int:
    from specsim.core.files import atomic_write_many, check_output
    from specsim.calibration.plan import design_plan, plan_files
    from specsim.speculation.deployment import Deployment
    from specsim.cli.args import model_options

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {str(out)!r} exists and is not an empty folder: bench-plan writes a new one")
    prompts = None
    if args.prompts is not None:
        p = Path(args.prompts)
        if not p.is_file():
            raise ValueError(f"--prompts {args.prompts!r} does not exist or is not a file (JSONL, one {{\"prompt\": ...}} per line)")
        prompts = str(p.resolve())
    draft_options = model_options(args, "draft_")
    if "tp" not in draft_options and (args.tp or 1) > 1:
        # Every engine runs the drafter at the target's TP by default: vLLM's draft_tensor_parallel_size defaults to it
        # (and EAGLE heads are built with the target's parallel config whatever it says); SGLang and TensorRT-LLM have
        # no separate draft TP.
        draft_options["tp"] = args.tp
    dep = Deployment.build(args.hardware, args.target, args.draft, args.timing, args.engine, target_options=model_options(args),
                           draft_options=draft_options)
    plan = design_plan(dep, args.engine, served_model=args.served_model, draft_checkpoint=args.draft_checkpoint,
                       concurrency=args.concurrency, input_tokens=args.input_tokens, output_tokens=args.output_tokens,
                       steps=args.steps, pinned=args.pin_accept_length, pin=not args.no_pin, prompts=prompts, port=args.port)
    files = plan_files(plan)
    if not out.parent.is_dir():
        raise ValueError(f"--out {str(out)!r}: its parent folder {str(out.parent)!r} does not exist")
    out.mkdir(exist_ok=True)  # the last step before writing: every check above has passed
    for name in files:
        check_output(out / name)
    atomic_write_many([(out / name, text.encode("utf-8")) for name, text in files.items()])
    (out / "run.sh").chmod(0o755)
    if args.json:
        print_json(plan.to_dict() | {"folder": str(out), "files": sorted(files)})
        return 0
    from specsim.calibration.plan import _minutes

    print(f"bench-plan: {plan.engine} {plan.version} (specsim's {plan.preset} preset), {plan.served_model} on {plan.tp} x "
          f"{plan.hardware}, drafter {plan.drafter}")
    print(f"  {len(plan.runs)} runs on {len(plan.servers)} servers: plain and speculative at concurrency "
          f"{', '.join(map(str, sorted({r.concurrency for r in plan.runs})))}; draft steps "
          f"{', '.join(str(s.steps) for s in plan.servers.values() if s.steps is not None and s.pinned_accept_length is not None) or 'none pinned'}"
          + "".join(f"; pinned at {s.pinned_accept_length:g} tokens per verification ({s.steps} steps)"
                    for s in plan.servers.values() if s.pinned_accept_length is not None))
    print(f"  estimated wall time {_minutes(plan.estimate_s)} (specsim's prediction of each run; server starts assumed)")
    for note in plan.notes:
        print(f"  note: {note}")
    print(f"wrote {out}/: {', '.join(sorted(files))}")
    print(f"next: bash {out}/run.sh, then specsim calibrate-engine --plan {out}/plan.yaml --out calibration.yaml")
    return 0


# -- calibrate-engine ---------------------------------------------------------------------------------------------------
def _plan_runs(args: argparse.Namespace) -> tuple[dict, list, list[str], list[str]]:
    """(plan, CalRuns, files read, notes) of a bench-plan folder's results."""
    from specsim.calibration.bench_files import read_bench_file
    from specsim.calibration.plan import read_plan
    from specsim.calibration.runs import CalRun, SpecSetup
    from specsim.speculation.metrics import acceptance_between

    plan = read_plan(args.plan)
    root = Path(args.plan).parent
    runs, files, missing = [], [], []
    for row in plan["runs"]:
        path = root / row["file"]
        if not path.is_file():
            missing.append(row["file"])
            continue
        read = read_bench_file(path)
        if len(read) != 1:
            raise ValueError(f"{path.name}: a plan's result holds one run, this file {len(read)}")
        run = read[0]
        files.append(str(path))
        setup = None
        if row["kind"] == "spec":
            if run.accept_length is None and row.get("metrics_after") and (root / row["metrics_after"]).is_file():
                before = root / row["metrics_before"] if row.get("metrics_before") else None
                m = acceptance_between(before if before is not None and before.is_file() else None, root / row["metrics_after"])
                run = dataclasses.replace(run, accept_length=m.mean_acceptance_length)
            setup = SpecSetup(int(row["steps"]), pinned_accept_length=row.get("pinned_accept_length"),
                              sweep=row["name"].rsplit("-c", 1)[0])
        runs.append(CalRun(run, setup))
    if not runs:
        raise ValueError(f"{args.plan}: none of its {len(plan['runs'])} result files exists yet: run its run.sh first")
    notes = [f"{len(missing)} of the plan's {len(plan['runs'])} runs have no result yet (the first: {missing[0]}): fitted "
             "without them"] if missing else []
    return plan, runs, files, notes


def _file_runs(args: argparse.Namespace) -> tuple[list, list[str], list[str]]:
    """(CalRuns, files read, notes) of --plain and --spec files."""
    from specsim.calibration.bench_files import read_bench_file
    from specsim.calibration.runs import CalRun, SpecSetup
    from specsim.speculation.metrics import accept_length_from_page

    if args.spec and (args.draft is None or args.steps is None):
        raise ValueError("--spec runs need --draft and --steps (the drafter and draft steps per round they ran with)")
    if not args.spec and (args.draft or args.steps or args.metrics):
        raise ValueError("--draft, --steps and --metrics describe speculative runs: give them with --spec FILE")
    runs, notes = [], []
    for path in args.plain:
        runs += [CalRun(r) for r in read_bench_file(path)]
    length = None
    if args.metrics:
        length, where = accept_length_from_page(args.metrics)
        notes.append(f"acceptance length of speculative runs whose file has none: {length:.3f} ({where})")
    setup = SpecSetup(args.steps, args.topk, args.verify_tokens) if args.spec else None
    for path in args.spec:
        for r in read_bench_file(path):
            if r.accept_length is None and length is not None:
                r = dataclasses.replace(r, accept_length=length)
            runs.append(CalRun(r, setup))
    return runs, list(args.plain) + list(args.spec), notes


def _target(given: str | None, runs: list) -> str:
    """--target, or the model the files name; refused where the two disagree or neither is known.  A ``model_id`` that
    is a local folder (vLLM records the path it served) is taken for --target's model when its last part names it."""
    from specsim.calibration.runs import model_key
    from specsim.describe.models import get_model

    named = sorted({c.run.model for c in runs if c.run.model})
    if len({model_key(n) for n in named}) > 1:
        raise ValueError("the runs name different models: " + ", ".join(named) + "; fit one deployment at a time")
    if given is None:
        if not named:
            raise ValueError("the benchmark files name no model: pass --target")
        try:
            get_model(named[0])
        except KeyError:
            raise ValueError(f"the files name {named[0]!r}, which specsim does not ship: pass --target with its config.json") from None
        return named[0]
    if named:
        mine = get_model(given)
        keys = {model_key(n) for n in named}
        try:
            theirs = get_model(named[0]).name
        except KeyError:
            return given  # a checkpoint specsim does not know (or a local folder): --target says what it is
        if theirs != mine.name and model_key(mine.source or mine.name) not in keys:
            raise ValueError(f"--target {given} but the benchmark files ran {named[0]}")
    return given


def _timing(args: argparse.Namespace, hardware: str):
    """The step-time source: --timing, or by default the library's (hybrid) where the kernel database has the GPU and
    the roofline where it has not, said as such.  An explicit kernels or hybrid on a GPU without data is refused."""
    from specsim.describe.hardware import load_hardware
    from specsim.timing import DEFAULT_TIMING, make_source

    profile = hardware if not isinstance(hardware, str) else load_hardware(hardware)
    asked = args.timing
    source = make_source(asked or DEFAULT_TIMING, profile, "vllm") if (asked or DEFAULT_TIMING) != "roofline" else None
    if source is not None and source.name == "roofline":
        reason = source.notes[-1] if source.notes else "no kernel data"
        if asked:
            raise ValueError(f"--timing {asked}: {reason.removesuffix('; using the roofline instead')}; use --timing roofline")
        return "roofline", f"roofline (the default {DEFAULT_TIMING} needs kernel data: {reason.split(';')[0]})"
    timing = asked or DEFAULT_TIMING
    return timing, None if asked else f"{timing} (the library's default)"


def run_calibrate_engine(args: argparse.Namespace) -> int:
    import numpy as np

    from specsim.core.files import atomic_write_text, check_output
    from specsim.calibration.bench_files import TOOLS
    from specsim.calibration.file import calibration_mapping
    from specsim.speculation.deployment import Deployment
    from specsim.calibration.engine_fit import fit_engine

    out = check_output(args.out, (".yaml", ".yml")) if args.out else None
    plan = None
    if args.plan:
        given = [f"--{k.replace('_', '-')}" for k in ("plain", "spec", "hardware", "target", "draft", "steps", "tp", "engine",
                                                       "weight_dtype", "kv_dtype") if getattr(args, k)]
        if given:
            raise ValueError(f"--plan names the deployment and its runs: drop {', '.join(given)}")
        plan, runs, files, notes = _plan_runs(args)
        hardware, target, drafter, tp, engine = plan["hardware"], plan["target"], plan["drafter"], plan["tp"], f"{plan['engine']}@{plan['version']}"
        draft_tp = plan["draft_tp"]
    else:
        if not args.plain:
            raise ValueError("give --plan PLAN.yaml (specsim bench-plan) or --plain FILE [--spec FILE --draft D --steps N]")
        if args.hardware is None:
            raise ValueError("--hardware is required with --plain/--spec: no benchmark file names its GPU")
        runs, files, notes = _file_runs(args)
        hardware, drafter, tp, draft_tp = args.hardware, args.draft, args.tp, None
        target = _target(args.target, runs)
        engine = args.engine
        if engine is None:
            servers = sorted({c.run.server for c in runs if c.run.server in ("vllm", "sglang", "trtllm")})
            engine = servers[0] if len(servers) == 1 else "vllm"
            notes.append(f"engine {engine}, its current release: " + ("the files' backend" if servers else "the default")
                         + f" (give --engine {engine}@VERSION for the version that served the runs)")
    timing, timing_note = _timing(args, hardware)
    if timing_note:
        notes.append(f"step times: {timing_note}")
    spec_runs = any(c.kind == "spec" for c in runs)
    draft_options = {"tp": draft_tp if draft_tp is not None else tp} if (tp or 1) > 1 and spec_runs else None
    target_options = {k: v for k, v in (("tp", tp), ("weight_dtype", args.weight_dtype), ("kv_dtype", args.kv_dtype)) if v}
    dep = Deployment.build(hardware, target, drafter if spec_runs else None, timing, engine,
                           target_options=target_options, draft_options=draft_options, decode_only=not spec_runs)
    fit = fit_engine(dep, runs)
    record = None
    if out is not None:
        acceptance, label = _real_acceptance(fit)
        record = calibration_mapping(fit, dep, target, drafter if spec_runs else None, timing, files, acceptance, label,
                                     {k: v for k, v in target_options.items() if k != "tp"})
        import yaml

        atomic_write_text(out, yaml.safe_dump(record, sort_keys=False, width=110))
    summary = _summary(fit, dep, runs, notes, out, TOOLS, np)
    if args.json:
        print_json(summary)
        return 0
    _print_fit(fit, dep, summary, notes, out)
    return 0


def _real_acceptance(fit):
    """(Acceptance, label) the runs measured on real prompts: the recorded lengths of unpinned runs, else the rates the
    fit found for sweeps that recorded none; None where every speculative run was pinned."""
    import numpy as np

    from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length

    real = [c for c in fit.runs if c.kind == "spec" and c.setup.pinned_accept_length is None]
    recorded = [c for c in real if c.run.accept_length is not None]
    if recorded:
        alphas = [float(alpha_from_acceptance_length(c.run.accept_length, c.setup.steps)) for c in recorded]
        alpha = float(np.mean(alphas))
        files = sorted({Path(c.run.path).name for c in recorded})
        return Acceptance(alpha=round(alpha, 4)), (f"alpha {alpha:.3f}, the mean over {len(recorded)} runs of the acceptance "
                                                   f"length {', '.join(files)} recorded")
    if fit.acceptance:
        sweep, term = next(iter(fit.acceptance.items()))
        interval = f", 95% interval {term.low:.3f}-{term.high:.3f}" if term.low is not None else ""
        return Acceptance(alpha=round(term.value, 4)), (f"alpha {term.value:.3f} fitted to the runs of {Path(sweep).name}, "
                                                        f"which recorded no acceptance{interval}")
    return None, None


def _summary(fit, dep, runs, notes, out, tools, np) -> dict:
    def num(x):
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    return {
        "runs": [{"file": c.run.where, "tool": c.run.tool, "kind": c.kind, "load": c.run.load,
                  "steps": c.setup.steps if c.setup else None,
                  "accept_length": (c.setup.pinned_accept_length if c.setup and c.setup.pinned_accept_length else c.run.accept_length),
                  "accept_length_pinned": bool(c.setup and c.setup.pinned_accept_length is not None),
                  "decode_batch": c.run.decode_batch, "context": c.run.context, "prefill_share": float(r),
                  "tpot_ms": c.run.tpot_s * 1e3, "fitted_tpot_ms": float(p) * 1e3, "held_out_tpot_ms": num(q * 1e3),
                  "held_out_sweep_tpot_ms": num(f * 1e3), "preset_tpot_ms": float(s) * 1e3}
                 for c, p, q, f, s, r in zip(fit.runs, fit.predicted, fit.held_out, fit.held_out_sweep, fit.preset, fit.prefill_share)],
        "tools": sorted({tools[c.run.tool] for c in runs}),
        "deployment": dep.brief(), "provenance": dep.provenance(), "engine_preset": dep.engine.key,
        "terms": {name: t.to_dict() for name, t in fit.terms.items()},
        "acceptance": {Path(k).name: t.to_dict() for k, t in fit.acceptance.items()},
        "compute_eff": fit.deployment.hardware.compute_eff, "bandwidth_eff": fit.deployment.hardware.bandwidth_eff,
        "error": {which: {kind or "all": num(fit.error(which, kind)) for kind in (None, "plain", "spec")}
                  for which in ("held_out", "held_out_sweep", "predicted", "preset")},
        "error_by_load": [{"load": load, "plain": num(p), "spec": num(s)} for load, p, s in fit.error_by_load()],
        "speedup": [{"load": load, "measured": m, "held_out": p} for load, m, p in fit.speedups(fit.held_out)],
        "warnings": list(fit.warnings), "notes": list(notes), "residual_dof": fit.dof,
        "calibration": str(out) if out else None,
        "use": f"specsim optimal-gamma --calibration {out or 'calibration.yaml'}",
    }


def _value(t) -> str:
    if t.name == "scale":
        return f"x{t.value:.3f}"
    if t.name in ("iteration_s", "round_s", "step_s"):
        return f"{t.value * 1e3:.3f} ms"
    if t.name == "alpha":
        return f"{t.value:.3f}"
    return f"{t.value * 1e6:.1f} us"


def _interval(t) -> str:
    if t.low is None:
        return ""
    lo, hi = (_value(dataclasses.replace(t, value=v)) for v in (t.low, t.high))
    return f"[{lo.lstrip('x').split()[0]}, {hi.lstrip('x')}]"


def _print_fit(fit, dep, summary, notes, out) -> None:
    import numpy as np

    n_plain = sum(c.kind == "plain" for c in fit.runs)
    print(f"calibrate-engine: {n_plain} plain and {len(fit.runs) - n_plain} speculative runs of {dep.target.name} on "
          f"{dep.hardware.name}; read as {'; '.join(summary['tools'])}")
    print("\n".join(f"  {line}" for line in (dep.provenance() if report.VERBOSE else [dep.brief()])))
    for note in notes:
        print(f"  note: {note}")
    rows = []
    for c, p, q, s, r in zip(fit.runs, fit.predicted, fit.held_out, fit.preset, fit.prefill_share):
        al = ""
        if c.setup is not None:
            if c.setup.pinned_accept_length is not None:
                al = f"{c.setup.pinned_accept_length:.2f} pin"
            elif c.run.accept_length is not None:
                al = f"{c.run.accept_length:.2f}"
            else:
                al = "fit"
        rows.append([c.run.where, c.kind, c.run.load, "" if c.setup is None else str(c.setup.steps), al, f"{c.run.decode_batch:.1f}",
                     f"{c.run.context:.0f}", f"{r:.0%}", f"{c.run.tpot_s * 1e3:.2f}", f"{p * 1e3:.2f}",
                     "" if np.isnan(q) else f"{q * 1e3:.2f}", f"{s * 1e3:.2f}"])
    print(table(["run", "kind", "load", "steps", "AL", "decode batch", "context", "prefill", "TPOT ms", "fitted", "held out",
                 f"{dep.engine.key} as shipped"], rows, "<<<>>>>>>>>>"))
    print("prefill: the share of the engine's time the other requests' prompts take while a request decodes (the TPOT "
          "includes it)")
    print("fitted values, 95% profile-likelihood intervals (the speculative terms' with the plain-run terms held at their fit):")
    hw = fit.deployment.hardware
    for t in list(fit.terms.values()):
        extra = f"  (compute {hw.compute_eff:.3f}, bandwidth {hw.bandwidth_eff:.3f})" if t.name == "scale" and t.status != "held" else ""
        state = {"fitted": "fitted", "bound": "at a bound", "held": "held"}[t.status]
        print(f"  {t.label:<28} {_value(t):>10}  {_interval(t):<22} {state}{extra}" + (f": {t.why}" if t.why and t.status != "bound" else ""))
    for sweep, t in fit.acceptance.items():
        steps = sorted({c.setup.steps for c in fit.runs if c.setup and c.sweep == sweep})
        lengths = ", ".join(f"AL {float(tokens_per_round(t.value, s)):.2f} at {s} steps" for s in steps)
        print(f"  {'acceptance ' + Path(sweep).name:<28} {'alpha ' + _value(t):>10}  {_interval(t):<22} fitted (the runs recorded "
              f"none): {lengths}")
    held = [f for f in fit.held_out if np.isfinite(f)]
    if held:
        print("held-out error (mean absolute TPOT error; each load fitted without its runs):")
        print(table(["load", "plain", "speculative"], [[load, _pct(p), _pct(s)] for load, p, s in fit.error_by_load()]
                    + [["all", _pct(fit.error("held_out", "plain")), _pct(fit.error("held_out", "spec"))]], "<>>"))
        if np.any(np.isfinite(fit.held_out_sweep)):
            print(f"  each speculative sweep fitted without its runs: speculative {_pct(fit.error('held_out_sweep', 'spec'))}")
        print(f"  {dep.engine.key} as shipped: plain {_pct(fit.error('preset', 'plain'))}, speculative {_pct(fit.error('preset', 'spec'))}")
        for load, measured, predicted in fit.speedups(fit.held_out):
            print(f"  {load}: measured speedup {measured:.2f}x, held-out prediction {predicted:.2f}x")
    for w in fit.warnings:
        print(f"warning: {w}")
    if out:
        print(f"wrote {out}")
        print(f"use: specsim optimal-gamma --calibration {out}")
    else:
        print("use: write the fit with --out calibration.yaml, then: specsim optimal-gamma --calibration calibration.yaml")


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_bench_plan(sub) -> None:
    from specsim.calibration.plan import (DEFAULT_CONCURRENCY, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_STEPS)

    p = sub.add_parser("bench-plan", help="write the benchmark of your engine that calibrate-engine needs",
                       description="Writes a folder with run.sh (your engine's own server and benchmark client over a "
                       "design that separates every term calibrate-engine fits: plain and speculative runs at the same "
                       "loads, two prompt lengths, two numbers of draft steps, acceptance pinned by the engine at known "
                       "lengths, and a run with real acceptance on your prompts), README.md and plan.yaml.")
    p.add_argument("--engine", type=engine_type, required=True, metavar="ENGINE@VERSION",
                   help="vllm, sglang or trtllm with the version you run (vllm@0.24.0); the flags are that version's")
    p.add_argument("--hardware", help=f"the GPU (default {DEFAULT_HARDWARE})")
    p.add_argument("--target", help=f"the served model: a built-in name or its config.json (default {DEFAULT_TARGET})")
    p.add_argument("--served-model", metavar="ID", help="what the server loads (default: the target's Hugging Face ID)")
    p.add_argument("--draft", help=f"the drafter (default {DEFAULT_DRAFT}): a draft model, eagle, eagle3, mtp or ngram")
    p.add_argument("--draft-checkpoint", metavar="ID", help="the drafter's checkpoint (default: the draft model's, or a known head)")
    add_model_args(p, draft=True)
    p.add_argument("--timing", metavar="SOURCE", help=f"step-time source of the wall-time estimate (default {DEFAULT_TIMING})")
    p.add_argument("--concurrency", type=int_list(1, "concurrency", MAX_BATCH), default=list(DEFAULT_CONCURRENCY),
                   help=f"comma-separated concurrency levels (default {csv_text(DEFAULT_CONCURRENCY)})")
    p.add_argument("--input-tokens", type=int_list(1, "input-tokens", MAX_CONTEXT), default=list(DEFAULT_INPUT_TOKENS),
                   help=f"two prompt lengths of the random runs (default {csv_text(DEFAULT_INPUT_TOKENS)})")
    p.add_argument("--output-tokens", type=int_at_least(2, "output-tokens", MAX_CONTEXT), default=DEFAULT_OUTPUT_TOKENS,
                   help=f"tokens generated per request (default {DEFAULT_OUTPUT_TOKENS})")
    p.add_argument("--steps", type=int_list(1, "steps", MAX_GAMMA), default=list(DEFAULT_STEPS),
                   help=f"two numbers of draft steps (default {csv_text(DEFAULT_STEPS)})")
    p.add_argument("--pin-accept-length", type=lambda t: [number(x) for x in t.split(",") if x.strip()], metavar="AL,AL",
                   help="the acceptance length pinned at each step count (default: the drafter's published acceptance)")
    p.add_argument("--no-pin", action="store_true",
                   help="real acceptance on --prompts at every step count (for engine versions that cannot pin it)")
    p.add_argument("--prompts", type=nonempty("prompts"), metavar="FILE.jsonl", help="your prompts, one {\"prompt\": ...} per line, for the real-acceptance run")
    p.add_argument("--port", type=int_at_least(1, "port", 65535), default=8000, help="the server's port (default 8000)")
    p.add_argument("--out", type=nonempty("out", "folder"), required=True, metavar="FOLDER", help="a new (or empty) folder for the plan")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_bench_plan)


def _parser_calibrate_engine(sub) -> None:
    p = sub.add_parser("calibrate-engine", help="fit the engine's terms to your engine's own benchmark files",
                       description="Reads a bench-plan folder's results (--plan), or vllm bench serve --save-result JSON, "
                       "sglang.bench_serving JSON lines, TensorRT-LLM benchmark_serving JSON or GuideLLM reports (--plain, "
                       "--spec), and fits the profile's efficiency, the engine's time per iteration, the host terms of a "
                       "speculative round and the acceptance the files do not record, each with a 95% interval; the error "
                       "is judged on loads held out of the fit.  --out writes one file every predicting command takes with "
                       "--calibration.")
    p.add_argument("--plan", type=nonempty("plan"), metavar="PLAN.yaml", help="a specsim bench-plan manifest: its deployment and the results its run.sh wrote")
    p.add_argument("--plain", nargs="+", default=[], metavar="FILE", help="benchmark files of runs without speculation")
    p.add_argument("--spec", nargs="+", default=[], metavar="FILE", help="benchmark files of runs with speculation")
    p.add_argument("--hardware", help="the GPU the runs were on (a profile name or YAML); no benchmark file says it")
    p.add_argument("--target", help="the served model (default: the model the files name, where specsim knows it)")
    p.add_argument("--draft", help="the drafter of the speculative runs: a draft model, eagle, eagle3, mtp or ngram")
    p.add_argument("--steps", type=int_at_least(1, "steps", MAX_GAMMA),
                   help="draft steps per round the runs used (vLLM num_speculative_tokens, SGLang --speculative-num-steps)")
    p.add_argument("--topk", type=int_at_least(1, "topk", MAX_GAMMA), default=1, help="draft tokens per step (default 1: a chain)")
    p.add_argument("--verify-tokens", type=int_at_least(1, "verify-tokens", 4096),
                   help="tokens verified per sequence (default steps + 1; SGLang --speculative-num-draft-tokens)")
    p.add_argument("--tp", type=int_at_least(1, "tp", MAX_TP), help="tensor-parallel GPUs of the target (default 1)")
    p.add_argument("--weight-dtype", choices=WEIGHT_DTYPE_CHOICES,
                   help="storage of the target's linear layers (default: the config.json's torch_dtype or quantization_config)")
    p.add_argument("--kv-dtype", choices=KV_DTYPE_CHOICES, help="the target's KV-cache dtype (default: its activation dtype)")
    p.add_argument("--timing", choices=["roofline", "hybrid", "kernels"],
                   help=f"step-time source the terms apply to (default {DEFAULT_TIMING} where the kernel database has the "
                   "GPU, else roofline; the roofline's and hybrid's efficiency is fitted too)")
    p.add_argument("--engine", type=engine_type, metavar="ENGINE[@VERSION]",
                   help="the engine and version that served the runs (default: the files' backend, else "
                   f"{DEFAULT_ENGINE}; its current release)")
    p.add_argument("--metrics", metavar="FILE",
                   help="a /metrics page saved after the speculative runs, for runs whose file has no acceptance length")
    p.add_argument("--out", type=nonempty("out"), metavar="CALIBRATION.yaml", help="write the calibration: use it with --calibration FILE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_calibrate_engine)



#: The commands of this module, each with the function that declares its flags.
PARSERS = {"bench-plan": _parser_bench_plan, "calibrate-engine": _parser_calibrate_engine}
