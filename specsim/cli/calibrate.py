"""calibrate-engine on the command line: read the user's benchmark runs, fit the engine's terms, print the fit and its
held-out error, write the calibration file.

The runs, the fit, the file and the summary are the library's (:mod:`specsim.calibration.inputs`,
:mod:`specsim.calibration.engine_calibration`); this module reads the flags, calls them and prints.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from specsim.cli import report
from specsim.cli.flags import engine_type, fraction, int_at_least, nonempty, spread_type
from specsim.core.limits import MAX_GAMMA, MAX_TP
from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES
from specsim.engines import DEFAULT_ENGINE
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


def _inputs(args: argparse.Namespace) -> tuple:
    """(runs, files, notes, hardware, target, drafter, tp, draft_tp, engine spec) from --plan or the files' flags."""
    from specsim.calibration.inputs import runs_engine, runs_from_files, runs_from_plan, served_target

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
        if args.max_num_seqs is None:  # the plan's servers hold its largest load (bench-plan's run.sh sets it)
            from specsim.calibration.plan import servers_max_num_seqs

            args.max_num_seqs, args.max_num_seqs_from = servers_max_num_seqs(plan, args.plan)
            notes.append(
                f"max_num_seqs {args.max_num_seqs}: what the plan's servers were started with (its run.sh: the largest "
                "concurrency it runs)"
            )
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
    if not groups and args.draft:
        raise ValueError("--draft and --steps describe speculative runs: give them with --spec FILE")
    if args.hardware is None:
        raise ValueError("--hardware is required with --plain/--spec: no benchmark file names its GPU")
    runs, files, notes = runs_from_files(
        args.plain,
        groups,
        topk=args.topk,
        verify_tokens=args.verify_tokens,
        metrics=args.metrics,
        sweep_by=args.sweep_by,
        acceptance_spread=args.acceptance_spread,
    )
    engine, said = runs_engine(runs, args.engine)
    notes += [said] if said else []
    return runs, files, notes, args.hardware, served_target(args.target, runs), args.draft, args.tp, None, engine


def _prefix_hit(args: argparse.Namespace, engine, runs: list) -> tuple | None:
    """(the share of the runs' prompt tokens their prefix cache served, where from): --prefix-hit as given, else the
    --metrics page's prefix-cache counters where the engine's release names them and the page shows them, else None.
    A page that gives neither a run's acceptance length nor the share is refused: given for nothing."""
    from specsim.engines import metric_names
    from specsim.speculation.metrics import prefix_hit_from_page

    page = Path(args.metrics).name if args.metrics else None
    gave_acceptance = page is not None and any(c.run.accept_length_page == page for c in runs)
    if args.prefix_hit is not None:
        if page is not None and not gave_acceptance:
            raise ValueError(
                f"--metrics {page} would be used for nothing: {_no_acceptance(runs)}, and --prefix-hit gives the "
                "prefix-cache share: drop one of them"
            )
        return args.prefix_hit, "--prefix-hit"
    if page is None:
        return None
    try:
        names = metric_names(engine)[0]
    except ValueError:  # an engine or release without metrics specsim has read: no share from the page
        names = None
    share = None if names is None else prefix_hit_from_page(args.metrics, names)
    if share is None and not gave_acceptance:
        shows = (
            f"it shows no {names.prefix_cache_hits} and {names.prefix_cache_queries} (or none queried)"
            if names is not None and names.prefix_cache_hits
            else f"specsim reads no prefix-cache counters of {getattr(engine, 'named_as', engine)}'s metrics"
        )
        raise ValueError(
            f"--metrics {page}: {_no_acceptance(runs)}, and {shows} for the prefix-cache share: drop --metrics (it "
            "is for speculative runs whose file has no acceptance length, and for the share)"
        )
    return share


def _no_acceptance(runs: list) -> str:
    """Why a --metrics page gives no run its acceptance length: the runs are plain, or every file records one."""
    if all(c.kind == "plain" for c in runs):
        return "the runs are plain (no --spec), so none takes an acceptance length from it"
    if any(c.run.accept_length_page for c in runs):
        return "the runs' acceptance lengths come from their files or their plan's own pages"
    return "every speculative run's file records its acceptance length"


def run_calibrate_engine(args: argparse.Namespace) -> int:
    from specsim.calibration.engine_calibration import calibrate_engine, past_max_num_seqs
    from specsim.cli.flags import engine_limits
    from specsim.cli.report import progress_bar
    from specsim.core.files import atomic_write_text, check_output
    from specsim.core.names import read_from
    from specsim.describe.hardware import load_hardware
    from specsim.engines import get_engine

    out = check_output(args.out, (".yaml", ".yml")) if args.out else None
    runs, files, notes, hardware, target, drafter, tp, draft_tp, engine = _inputs(args)
    if out is not None:  # the calibration written over a file it was read from: refused before any fit
        read = [Path(f) for f in [*files, *([args.plan] if args.plan else [])]]
        same = next((f for f in read if f.exists() and f.resolve() == out.resolve()), None)
        if same is not None:
            raise ValueError(f"--out {args.out} is {same}, which calibrate-engine reads: give another file")
    limits = None  # none given: the library takes the engine's own on the GPU and says so in the notes
    spec_seqs = getattr(args, "spec_max_num_seqs", None)
    if spec_seqs is not None and not any(c.kind == "spec" for c in runs):
        raise ValueError(
            "--spec-max-num-seqs is the max_num_seqs the speculative runs' server was started with: give it with "
            "--spec FILE, or drop it"
        )
    if args.max_num_seqs is not None or args.max_batched_tokens is not None or spec_seqs is not None:
        preset = get_engine(engine)
        limits, said = engine_limits(
            args, preset, load_hardware(hardware), offline=all(c.run.kind == "batch" for c in runs)
        )
        limits = _spec_limits(limits, spec_seqs, preset)
        notes += [f"engine limits: {limits.label}"]
        notes[-1] += said + _arms_said(args, limits, runs)
    if (args.max_num_seqs or spec_seqs) is not None and (past := past_max_num_seqs(runs, limits)) is not None:
        flags = "--max-num-seqs" + ("" if spec_seqs is None else " and --spec-max-num-seqs")
        raise ValueError(f"{past}: give {flags} as the runs were served with")
    prefix_hit = _prefix_hit(args, engine, runs)

    # a plan's deployment was read from its file, not given by a flag: a refusal of it names the file's key
    # (Deployment.build's draft is calibrate_engine's drafter, the plan's drafter key)
    plan_keys = {"hardware": "hardware", "target": "target", "drafter": "drafter", "draft": "drafter", "tp": "tp"}
    plan_keys |= {"draft_tp": "draft_tp", "engine": "engine"}
    named = {k: f"{Path(args.plan).name}'s {key}" for k, key in plan_keys.items()} if args.plan else {}
    with progress_bar("calibrate-engine fits", "fit", quiet=args.json) as done, read_from(named):
        result = calibrate_engine(
            runs,
            files,
            notes,
            hardware=hardware,
            target=target,
            engine=engine,
            drafter=drafter,
            tp=tp,
            draft_tp=draft_tp,
            timing=args.timing,
            weight_dtype=args.weight_dtype,
            kv_dtype=args.kv_dtype,
            limits=limits,
            prefix_hit=prefix_hit,
            memory_utilization=args.memory_util,
            done=done,
            max_num_seqs_from=getattr(args, "max_num_seqs_from", None),
        )
    if out is not None:
        import yaml

        atomic_write_text(out, yaml.safe_dump(result.mapping(), sort_keys=False, width=110))
    summary = result.summary(out)
    if args.json:
        report.print_json(summary)
        return 0
    _print_fit(result.fit, result.deployment, summary, result.notes, out, result.floor)
    return 0


def _spec_limits(limits, spec_seqs: int | None, preset):
    """``limits`` with the speculative runs' server's max_num_seqs ``spec_seqs`` (``--spec-max-num-seqs``; None: as
    they are), refused where the engine would not start with it (vLLM: a token budget below it)."""
    from specsim.serving.steady import check_limits

    if spec_seqs is None:
        return limits
    limits = dataclasses.replace(limits, spec_max_num_seqs=None if spec_seqs == limits.max_num_seqs else spec_seqs)
    check_limits(preset, limits.arm(True), ("--max-batched-tokens", "--spec-max-num-seqs"))
    return limits


def _arms_said(args: argparse.Namespace, limits, runs: list) -> str:
    """Which max_num_seqs each kind of run was fitted with and where it comes from: ``--max-num-seqs`` for both arms
    unless ``--spec-max-num-seqs`` gives the speculative runs' own (a plain server and a speculating one are often
    started with different limits: no ``vllm bench serve`` file records the server's, 0.14.1's keys are the client's
    alone, tests/data/do-gtc-2026/rate-1.0.json), else the engine's own."""
    plain_from = "--max-num-seqs" if args.max_num_seqs is not None else "the engine's own"
    if args.plan and "--max-num-seqs" not in getattr(args, "typed_flags", ()):  # _inputs took the plan's servers'
        plain_from = "the plan's servers, its run.sh"
    spec = getattr(args, "spec_max_num_seqs", None)
    if spec is not None:
        spec_from = "--spec-max-num-seqs"
    elif limits.spec_max_num_seqs is not None:
        spec_from = "the engine's own speculating"
    else:
        spec_from = plain_from + (", both arms" if args.max_num_seqs is not None else "")
    arms = [f"the plain runs {limits.max_num_seqs} ({plain_from})"]
    if any(c.kind == "spec" for c in runs):
        arms.append(f"the speculative runs {int(limits.seqs(True))} ({spec_from})")
    return "; max_num_seqs of " + ", of ".join(arms)


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


def _print_fit(fit, dep, summary, notes, out, floor=None) -> None:
    n_plain = sum(c.kind == "plain" for c in fit.runs)
    tp = dep.target.tp  # no benchmark file records it: the line says what the fit took
    gpus = f" x {tp} (TP {tp})" if tp > 1 else ""
    print(
        f"calibrate-engine: {n_plain} plain and {len(fit.runs) - n_plain} speculative runs of {dep.target.name} on "
        f"{dep.hardware.name}{gpus}; read as {'; '.join(summary['tools'])}"
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
                else f"{r['accept_length']:.2f}"
                + (
                    " pin"
                    if r["accept_length_pinned"]
                    else (" pos" if r["accept_length_basis"] == "per position" else " sweep")
                    if r["accept_length_from_sweep"]
                    else ""
                )
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
        "AL: the acceptance length the run recorded (pin: pinned by the plan; sweep: this run recorded none, its sweep's "
        "recorded runs give it; pos: likewise, as 1 + the sum of the per-position shares its sweep's deeper runs "
        "recorded, up to its draft steps; fit: fitted); prefill: the share of the engine's time the prompts take at "
        "that load (the serving model's); held out: the run's load left out of the fit, its acceptance included"
    )
    for note in fit.notes:
        print(f"  note: {note}")
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
    _print_errors(fit, dep, floor)
    for w in fit.warnings:
        print(f"warning: {w}")
    if out:
        print(f"wrote {out}")
        sweeps = {c.sweep for c in fit.runs if c.kind == "spec" and c.setup.pinned_accept_length is None}
        if len(sweeps) > 1:  # one acceptance per file: which one, and the others named
            from specsim.calibration.engine_calibration import measured_acceptance

            print(f"its acceptance: {measured_acceptance(fit)[1] or 'none (no sweep recorded or fitted one)'}")
        from specsim.calibration.file import fitted_any

        if fitted_any(fit.terms | fit.acceptance):
            print(f"use: specsim optimal-gamma --calibration {out}")
        else:
            print(f"{out} answers with {dep.engine.key}'s terms: nothing in it was fitted (warning above)")
    else:
        print(
            "use: write the fit with --out calibration.yaml, then: specsim optimal-gamma --calibration calibration.yaml"
        )


def _print_errors(fit, dep, floor=None) -> None:
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
    if floor is not None:
        print(_floor_line(fit, floor))
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


def _floor_line(fit, floor) -> str:
    """The plain runs under the model's floor (:class:`~specsim.calibration.engine_calibration.PlainFloor`), said under
    the held-out table: their error there is the floor's (the step-time source's pass and the engine time held), which
    no fitted term reaches."""
    runs = [fit.runs[i].run for i in floor.runs]
    label, unit = _UNITS[runs[0].observable]
    said = ", ".join(f"{x * _UNITS[r.observable][1]:.2f}" for x, r in zip(floor.least, runs))
    took = ", ".join(f"{r.value * _UNITS[r.observable][1]:.2f}" for r in runs)
    held = floor.collective_s * floor.collectives
    collectives = (
        f", the engine's {held * 1e3:.2f} ms a pass of tensor-parallel collectives ({floor.collective_s * 1e6:.1f} "
        f"us x {floor.collectives}, held at the preset: calibrate-engine fits no such term)"
        if held
        else ""
    )
    return (
        f"  plain under the model's floor at {', '.join(r.load for r in runs)}: the fastest the model gives them, every "
        f"value the fit varies at the bound that shortens a step, is {said} ({label}) against {took} measured, slower "
        f"by {', '.join(f'{o:.1%}' for o in floor.over)}; at {runs[0].load} that is the step-time source's pass "
        f"({floor.source}: {floor.source_s * 1e3:.2f} ms at batch {floor.batch:.1f} over {floor.context:,.0f} cached)"
        f"{collectives} and the prompts' share: no fitted term reaches these runs, and their error is that floor's, "
        "not the fit's"
    )


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
    p.add_argument(
        "--plain",
        nargs="+",
        action="extend",  # --plain a --plain b: both (the last list alone was kept)
        default=[],
        metavar="FILE",
        help="benchmark files of runs without speculation (--plain may be repeated)",
    )
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
        help="which speculative runs share one acceptance: those of one model and dataset, by the dataset the files "
        "name where they name one (vLLM: --metadata dataset=NAME; SGLang: --dataset-name) and their mean prompt and output "
        "lengths (default), each file, or all",
    )
    p.add_argument(
        "--topk", type=int_at_least(1, "topk", MAX_GAMMA), default=1, help="draft tokens per step (default 1: a chain)"
    )
    p.add_argument(
        "--acceptance-spread",
        type=spread_type,
        metavar="SD",
        help="standard deviation of the acceptance rate across the runs' prompts, in [0, 0.5]: an offline batch "
        "waits for its slowest request (default: read from the sweep's requests measured one at a time with their "
        "acceptance length, where the files hold them, else 0; said where offline runs are fitted)",
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
        "GPU or one of its compute capability, else roofline; kernels for a MoE target of 10B+ active parameters at "
        "tensor parallelism that they compose; the roofline's and hybrid's efficiency is fitted too)",
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
        help="a /metrics page saved after the runs: the acceptance length of speculative runs whose file has none, "
        "and the share of prompt tokens the prefix cache served where --prefix-hit is not given (vLLM's "
        "prefix_cache_hits over prefix_cache_queries, since the server started; plain runs alone too)",
    )
    from specsim.cli.flags import LIMITS_SEQS_HELP as SEQS
    from specsim.cli.flags import LIMITS_TOKENS_HELP as TOK
    from specsim.cli.flags import add_prefix_hit_arg

    p.add_argument(
        "--max-num-seqs",
        type=int_at_least(1, "max-num-seqs", 65536),
        default=None,
        help="the engine's max_num_seqs the runs were served with (SGLang --max-running-requests; both arms unless "
        f"--spec-max-num-seqs; default: {SEQS}): more users than this queue",
    )
    p.add_argument(
        "--spec-max-num-seqs",
        type=int_at_least(1, "spec-max-num-seqs", 65536),
        default=None,
        help="the max_num_seqs the speculative runs' server was started with, where it was not the plain runs' "
        "(default: --max-num-seqs; none given: the engine's own, SGLang's 48 speculating); no benchmark file records "
        "the server's",
    )
    p.add_argument(
        "--max-batched-tokens",
        type=int_at_least(1, "max-batched-tokens", 4_194_304),
        default=None,
        help="the engine's tokens per iteration (vLLM max_num_batched_tokens, SGLang --chunked-prefill-size; "
        f"default: {TOK})",
    )
    add_prefix_hit_arg(p)
    p.add_argument(
        "--memory-util",
        type=fraction,
        default=None,
        help="the memory setting the runs' engine ran with (vLLM --gpu-memory-utilization, SGLang "
        "--mem-fraction-static, TensorRT-LLM free_gpu_memory_fraction; default: the engine's own), which bounds the "
        "users its KV cache holds",
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
