"""calibrate-engine on the command line: read the user's benchmark runs, fit the engine's terms, print the fit and its
held-out error, write the calibration file.

The runs and the fit are the library's (:mod:`specsim.calibration.inputs`, :mod:`specsim.calibration.engine_fit`,
:mod:`specsim.calibration.file`); this module reads the flags, calls them and prints.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

from specsim.cli import report
from specsim.cli.flags import engine_type, int_at_least, nonempty
from specsim.core.defaults import DEFAULT_DRAFT
from specsim.core.limits import MAX_GAMMA, MAX_TP
from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES
from specsim.engines import DEFAULT_ENGINE, ENGINES, REGISTRY
from specsim.timing import DEFAULT_TIMING

__all__ = ["run_calibrate_engine"]

_UNITS = {"tpot": ("TPOT ms", 1e3), "e2e": ("end-to-end s", 1.0), "throughput": ("output tok/s", 1.0)}


def _spec_groups(args: argparse.Namespace) -> list[tuple[list[str], int]]:
    """The --spec groups with their --steps: one --steps for every group, or one per group in order."""
    groups, steps = args.spec or [], args.steps or []
    if groups and not steps:
        raise ValueError("--spec runs need --draft and --steps (the drafter and draft steps per round they ran with)")
    if steps and not groups:
        raise ValueError("--steps describes speculative runs: give it with --spec FILE")
    if len(steps) not in (1, len(groups)):
        raise ValueError(
            f"{len(groups)} --spec groups and {len(steps)} --steps: give one --steps for all, or one after "
            "each --spec group"
        )
    return [(files, steps[0] if len(steps) == 1 else steps[i]) for i, files in enumerate(groups)]


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
            raise ValueError(
                f"the files name {named[0]!r}, which specsim does not ship: pass --target with its config.json"
            ) from None
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
    from specsim.timing import make_source

    profile = hardware if not isinstance(hardware, str) else load_hardware(hardware)
    asked = args.timing
    source = (
        make_source(asked or DEFAULT_TIMING, profile, ENGINES[DEFAULT_ENGINE].kernel_engine)
        if (asked or DEFAULT_TIMING) != "roofline"
        else None
    )
    if source is not None and source.name == "roofline":
        reason = source.notes[-1] if source.notes else "no kernel data"
        if asked:
            raise ValueError(
                f"--timing {asked}: {reason.removesuffix('; using the roofline instead')}; use --timing roofline"
            )
        return "roofline", f"roofline (the default {DEFAULT_TIMING} needs kernel data: {reason.split(';')[0]})"
    timing = asked or DEFAULT_TIMING
    return timing, None if asked else f"{timing} (the library's default)"


def _inputs(args: argparse.Namespace) -> tuple:
    """(runs, files, notes, hardware, target, drafter, tp, draft_tp, engine spec) from --plan or the files' flags."""
    from specsim.calibration.inputs import runs_from_files, runs_from_plan

    if args.plan:
        given = [
            f"--{k.replace('_', '-')}"
            for k in (
                "plain",
                "spec",
                "hardware",
                "target",
                "draft",
                "steps",
                "tp",
                "engine",
                "weight_dtype",
                "kv_dtype",
            )
            if getattr(args, k)
        ]
        if given:
            raise ValueError(f"--plan names the deployment and its runs: drop {', '.join(given)}")
        plan, runs, files, notes = runs_from_plan(args.plan)
        return (
            runs,
            files,
            notes,
            plan["hardware"],
            plan["target"],
            plan["drafter"],
            plan["tp"],
            plan["draft_tp"],
            f"{plan['engine']}@{plan['version']}",
        )
    if not args.plain:
        raise ValueError("give --plan PLAN.yaml (specsim bench-plan) or --plain FILE [--spec FILE --draft D --steps N]")
    groups = _spec_groups(args)
    if groups and args.draft is None:
        raise ValueError("--spec runs need --draft and --steps (the drafter and draft steps per round they ran with)")
    if not groups and (args.draft or args.metrics):
        raise ValueError("--draft, --steps and --metrics describe speculative runs: give them with --spec FILE")
    if args.hardware is None:
        raise ValueError("--hardware is required with --plain/--spec: no benchmark file names its GPU")
    runs, files, notes = runs_from_files(
        args.plain,
        groups,
        topk=args.topk,
        verify_tokens=args.verify_tokens,
        metrics=args.metrics,
        sweep_by=args.sweep_by,
    )
    engine = args.engine
    if engine is None:
        servers = sorted({c.run.server for c in runs if c.run.server in REGISTRY})
        engine = servers[0] if len(servers) == 1 else DEFAULT_ENGINE
        notes.append(
            f"engine {engine}, its current release: "
            + ("the files' backend" if servers else "the default")
            + f" (give --engine {engine}@VERSION for the version that served the runs)"
        )
    return runs, files, notes, args.hardware, _target(args.target, runs), args.draft, args.tp, None, engine


def run_calibrate_engine(args: argparse.Namespace) -> int:
    from specsim.calibration.bench_files import TOOLS
    from specsim.calibration.engine_fit import fit_engine
    from specsim.calibration.file import calibration_mapping
    from specsim.core.files import atomic_write_text, check_output
    from specsim.speculation.deployment import Deployment

    out = check_output(args.out, (".yaml", ".yml")) if args.out else None
    runs, files, notes, hardware, target, drafter, tp, draft_tp, engine = _inputs(args)
    timing, timing_note = _timing(args, hardware)
    if timing_note:
        notes.append(f"step times: {timing_note}")
    spec_runs = any(c.kind == "spec" for c in runs)
    draft_options = {"tp": draft_tp if draft_tp is not None else tp} if (tp or 1) > 1 and spec_runs else None
    target_options = {
        k: v for k, v in (("tp", tp), ("weight_dtype", args.weight_dtype), ("kv_dtype", args.kv_dtype)) if v
    }
    dep = Deployment.build(
        hardware,
        target,
        (drafter or DEFAULT_DRAFT) if spec_runs else None,
        timing=timing,
        engine=engine,
        target_options=target_options,
        draft_options=draft_options,
        decode_only=not spec_runs,
    )
    from specsim.cli.report import progress_bar
    from specsim.serving.steady import EngineLimits

    with progress_bar("calibrate-engine fits", "fit", quiet=args.json) as done:
        fit = fit_engine(dep, runs, limits=EngineLimits(args.max_num_seqs, args.max_batched_tokens), done=done)
    if out is not None:
        acceptance, label = _real_acceptance(fit)
        record = calibration_mapping(
            fit,
            dep,
            target,
            drafter if spec_runs else None,
            timing,
            files,
            acceptance,
            label,
            {k: v for k, v in target_options.items() if k != "tp"},
            engine,
        )
        import yaml

        atomic_write_text(out, yaml.safe_dump(record, sort_keys=False, width=110))
    summary = _summary(fit, dep, runs, notes, out, TOOLS)
    if args.json:
        report.print_json(summary)
        return 0
    _print_fit(fit, dep, summary, notes, out)
    return 0


def _real_acceptance(fit):
    """(Acceptance, label) the runs measured on real prompts: the recorded lengths of unpinned runs, else the rate the
    fit found for a sweep that recorded none; None where every speculative run was pinned or none was fitted."""
    import numpy as np

    from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length

    real = [c for c in fit.runs if c.kind == "spec" and c.setup.pinned_accept_length is None]
    recorded = [c for c in real if c.run.accept_length is not None]
    if recorded:
        alphas = [float(alpha_from_acceptance_length(c.run.accept_length, c.setup.steps)) for c in recorded]
        alpha = float(np.mean(alphas))
        names = sorted({Path(c.run.path).name for c in recorded})
        return Acceptance(alpha=round(alpha, 4)), (
            f"alpha {alpha:.3f}, the mean over {len(recorded)} runs of the acceptance "
            f"length {', '.join(names)} recorded"
        )
    fitted = [(s, t) for s, t in fit.acceptance.items() if t.status == "fitted"]
    if fitted:
        sweep, term = fitted[0]
        interval = f", 95% interval {term.low:.3f}-{term.high:.3f}" if term.low is not None else ""
        return Acceptance(alpha=round(term.value, 4)), (
            f"alpha {term.value:.3f} fitted to the runs of sweep {sweep}, which recorded no acceptance{interval}"
        )
    return None, None


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _summary(fit, dep, runs, notes, out, tools) -> dict:
    rows = []
    for i, c in enumerate(fit.runs):
        rows.append(
            {
                "file": c.run.where,
                "tool": c.run.tool,
                "kind": c.kind,
                "load": c.run.load,
                "sweep": c.sweep if c.setup else None,
                "steps": c.setup.steps if c.setup else None,
                "accept_length": c.known_accept_length if c.setup else None,
                "accept_length_pinned": bool(c.setup and c.setup.pinned_accept_length is not None),
                "judged_by": c.run.observable,
                "statistic": c.run.statistic,
                "measured": float(c.run.value),
                "fitted": _num(fit.predicted[i]),
                "held_out_load": _num(fit.held_out[i]),
                "held_out_steps": _num(fit.held_out_steps[i]),
                "held_out_sweep": _num(fit.held_out_sweep[i]),
                "preset": _num(fit.preset[i]),
                "prefill_share": _num(fit.prefill_share[i]),
                "ttft_s": c.run.ttft_s,
                "fitted_ttft_s": _num(fit.ttft[i]),
            }
        )
    which = ("held_out", "held_out_steps", "held_out_sweep", "predicted", "preset")
    return {
        "runs": rows,
        "tools": sorted({tools[c.run.tool] for c in runs}),
        "deployment": dep.brief(),
        "provenance": dep.provenance(),
        "engine_preset": dep.engine.key,
        "terms": {name: t.to_dict() for name, t in fit.terms.items()},
        "acceptance": {k: t.to_dict() for k, t in fit.acceptance.items()},
        "compute_eff": fit.deployment.hardware.compute_eff,
        "bandwidth_eff": fit.deployment.hardware.bandwidth_eff,
        "error": {w: {kind or "all": _num(fit.error(w, kind)) for kind in (None, "plain", "spec")} for w in which},
        "not_held_out": fit.not_held_out,
        "error_by_load": [{"load": load, "plain": _num(p), "spec": _num(s)} for load, p, s in fit.error_by_load()],
        "speedup": [{"group": g, "measured": m, "held_out": p} for g, m, p in fit.speedups(fit.held_out)],
        "warnings": list(fit.warnings),
        "notes": list(notes),
        "residual_dof": fit.dof,
        "calibration": str(out) if out else None,
        "use": f"specsim optimal-gamma --calibration {out or 'calibration.yaml'}",
    }


def _value(t) -> str:
    if t.name in ("scale", "prefill_scale"):
        return f"x{t.value:.3f}"
    if t.name in ("iteration_s", "round_s", "step_s"):
        return f"{t.value * 1e3:.3f} ms"
    if t.name in ("alpha", "overlap_share"):
        return f"{t.value:.3f}"
    return f"{t.value * 1e6:.1f} us"


def _interval(t) -> str:
    if t.low is None:
        return ""
    lo, hi = (_value(dataclasses.replace(t, value=v)) for v in (t.low, t.high))
    return f"[{lo.lstrip('x').split()[0]}, {hi.lstrip('x')}]"


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


def _print_fit(fit, dep, summary, notes, out) -> None:
    n_plain = sum(c.kind == "plain" for c in fit.runs)
    print(
        f"calibrate-engine: {n_plain} plain and {len(fit.runs) - n_plain} speculative runs of {dep.target.name} on "
        f"{dep.hardware.name}; read as {'; '.join(summary['tools'])}"
    )
    print("\n".join(f"  {line}" for line in (dep.provenance() if report.VERBOSE else [dep.brief()])))
    for note in notes:
        print(f"  note: {note}")
    rows = []
    for r in summary["runs"]:
        label, unit = _UNITS[r["judged_by"]]
        al = (
            ""
            if r["kind"] == "plain"
            else (
                "fit"
                if r["accept_length"] is None
                else f"{r['accept_length']:.2f}" + (" pin" if r["accept_length_pinned"] else "")
            )
        )

        def show(x, unit=unit):
            return "" if x is None else f"{x * unit:.{3 if unit == 1.0 and x < 100 else 2}f}"

        rows.append(
            [
                r["file"],
                r["kind"],
                r["load"],
                "" if r["steps"] is None else str(r["steps"]),
                al,
                "" if r["prefill_share"] is None else f"{r['prefill_share']:.0%}",
                label + (" (median)" if r["statistic"] == "median" else ""),
                show(r["measured"]),
                show(r["fitted"]),
                show(r["held_out_load"]),
                show(r["preset"]),
            ]
        )
    print(
        report.table(
            [
                "run",
                "kind",
                "load",
                "steps",
                "AL",
                "prefill",
                "judged by",
                "measured",
                "fitted",
                "held out",
                f"{dep.engine.key} as shipped",
            ],
            rows,
            "<<<><><>>>>",
        )
    )
    print(
        "prefill: the share of the engine's time the prompts take at that load (the serving model's); held out: the run's "
        "load left out of the fit, its acceptance included"
    )
    print(
        "fitted values, 95% intervals linearised at the fit (the speculative terms' with the plain runs' held at their fit):"
    )
    hw = fit.deployment.hardware
    for t in fit.terms.values():
        extra = (
            f"  (compute {hw.compute_eff:.3f}, bandwidth {hw.bandwidth_eff:.3f})"
            if t.name == "scale" and t.status == "fitted"
            else ""
        )
        print(
            f"  {t.label:<28} {_value(t):>10}  {_interval(t):<22} {t.status}{extra}" + (f": {t.why}" if t.why else "")
        )
    for sweep, t in fit.acceptance.items():
        print(
            f"  {'acceptance':<28} {'alpha ' + _value(t):>10}  {_interval(t):<22} {t.status} for sweep {sweep}"
            + (f": {t.why}" if t.why else " (its runs recorded none)")
        )
    _print_errors(fit, dep)
    for w in fit.warnings:
        print(f"warning: {w}")
    if out:
        print(f"wrote {out}")
        print(f"use: specsim optimal-gamma --calibration {out}")
    else:
        print(
            "use: write the fit with --out calibration.yaml, then: specsim optimal-gamma --calibration calibration.yaml"
        )


def _print_errors(fit, dep) -> None:
    import numpy as np

    print(
        "held-out error (mean absolute error of what each run is judged by, everything that predicts it fitted without it):"
    )
    if np.any(np.isfinite(fit.held_out)):
        print(
            report.table(
                ["load left out", "plain", "speculative"],
                [[load, _pct(p), _pct(s)] for load, p, s in fit.error_by_load()]
                + [["all", _pct(fit.error("held_out", "plain")), _pct(fit.error("held_out", "spec"))]],
                "<>>",
            )
        )
    for which, what in (
        ("held_out", "each load"),
        ("held_out_steps", "each number of draft steps"),
        ("held_out_sweep", "each sweep"),
    ):
        reasons = fit.not_held_out.get(which, [])
        shown = _pct(fit.error(which, "spec"))
        if which != "held_out":
            print(f"  {what} left out: speculative {'not held out' if shown == '-' else shown}")
        for reason in reasons:
            print(f"    not held out: {reason}")
    print(
        f"  {dep.engine.key} as shipped: plain {_pct(fit.error('preset', 'plain'))}, speculative {_pct(fit.error('preset', 'spec'))}"
    )
    speedups = fit.speedups(fit.held_out)
    if speedups:
        print("held-out speedup (each load fitted without its runs):")
        for group, measured, predicted in speedups:
            print(f"  {group}: measured {measured:.2f}x, predicted {predicted:.2f}x ({predicted / measured - 1:+.1%})")


# -- flags -------------------------------------------------------------------------------------------------------------
def _parser_calibrate_engine(sub) -> None:
    from specsim.calibration.runs import SWEEP_RULES

    p = sub.add_parser(
        "calibrate-engine",
        help="fit the engine's terms to your engine's own benchmark files",
        description="Reads a bench-plan folder's results (--plan), or vllm bench serve --save-result JSON, "
        "sglang.bench_serving JSON lines, TensorRT-LLM benchmark_serving JSON or GuideLLM reports (--plain, "
        "--spec), and fits the profile's efficiency, the engine's time per iteration and its prefill "
        "efficiency, the host terms of a speculative round and the acceptance the files do not record, each "
        "with a 95% interval, by the serving model at each run's load; the error is judged on loads, step "
        "counts and sweeps held out of the fit.  --out writes one file every predicting command takes with "
        "--calibration.",
    )
    p.add_argument(
        "--plan",
        type=nonempty("plan"),
        metavar="PLAN.yaml",
        help="a specsim bench-plan manifest: its deployment and the results its run.sh wrote",
    )
    p.add_argument("--plain", nargs="+", default=[], metavar="FILE", help="benchmark files of runs without speculation")
    p.add_argument(
        "--spec",
        nargs="+",
        action="append",
        metavar="FILE",
        help="benchmark files of runs with speculation; repeat --spec FILES --steps N for runs at another number "
        "of draft steps",
    )
    p.add_argument("--hardware", help="the GPU the runs were on (a profile name or YAML); no benchmark file says it")
    p.add_argument("--target", help="the served model (default: the model the files name, where specsim knows it)")
    p.add_argument("--draft", help="the drafter of the speculative runs: a draft model, eagle, eagle3, mtp or ngram")
    p.add_argument(
        "--steps",
        type=int_at_least(1, "steps", MAX_GAMMA),
        action="append",
        help="draft steps per round the runs used (vLLM num_speculative_tokens, SGLang --speculative-num-steps); "
        "one for all --spec groups or one after each",
    )
    p.add_argument(
        "--sweep-by",
        choices=SWEEP_RULES,
        default="lengths",
        help="which speculative runs share one acceptance: those of one model and dataset, by their mean prompt "
        "and output lengths (default), each file, or all",
    )
    p.add_argument(
        "--topk", type=int_at_least(1, "topk", MAX_GAMMA), default=1, help="draft tokens per step (default 1: a chain)"
    )
    p.add_argument(
        "--verify-tokens",
        type=int_at_least(1, "verify-tokens", 4096),
        help="tokens verified per sequence (default steps + 1; SGLang --speculative-num-draft-tokens)",
    )
    p.add_argument("--tp", type=int_at_least(1, "tp", MAX_TP), help="tensor-parallel GPUs of the target (default 1)")
    p.add_argument(
        "--weight-dtype",
        choices=WEIGHT_DTYPE_CHOICES,
        help="storage of the target's linear layers (default: the config.json's torch_dtype or quantization_config)",
    )
    p.add_argument(
        "--kv-dtype", choices=KV_DTYPE_CHOICES, help="the target's KV-cache dtype (default: its activation dtype)"
    )
    p.add_argument(
        "--timing",
        choices=["roofline", "hybrid", "kernels"],
        help=f"step-time source the terms apply to (default {DEFAULT_TIMING} where the kernel database has the "
        "GPU, else roofline; the roofline's and hybrid's efficiency is fitted too)",
    )
    p.add_argument(
        "--engine",
        type=engine_type,
        metavar="ENGINE[@VERSION]",
        help="the engine and version that served the runs (default: the files' backend, else "
        f"{DEFAULT_ENGINE}; its current release); the calibration keeps it for every writer",
    )
    p.add_argument(
        "--metrics",
        metavar="FILE",
        help="a /metrics page saved after the speculative runs, for runs whose file has no acceptance length",
    )
    from specsim.serving.steady import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS

    p.add_argument(
        "--max-num-seqs",
        type=int_at_least(1, "max-num-seqs", 65536),
        default=DEFAULT_MAX_NUM_SEQS,
        help=f"the engine's max_num_seqs the runs were served with (SGLang --max-running-requests; default "
        f"{DEFAULT_MAX_NUM_SEQS}, vLLM's): more users than this queue",
    )
    p.add_argument(
        "--max-batched-tokens",
        type=int_at_least(1, "max-batched-tokens", 4_194_304),
        default=DEFAULT_MAX_BATCHED_TOKENS,
        help=f"the engine's tokens per iteration (vLLM max_num_batched_tokens, SGLang --chunked-prefill-size; "
        f"default {DEFAULT_MAX_BATCHED_TOKENS})",
    )
    p.add_argument(
        "--out",
        type=nonempty("out"),
        metavar="CALIBRATION.yaml",
        help="write the calibration: use it with --calibration FILE",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_calibrate_engine)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {"calibrate-engine": _parser_calibrate_engine}
