"""Your own engine on the command line: ``bench-plan`` writes the benchmark, ``calibrate-engine`` fits it.

The physics and the fit live in :mod:`specsim.calibration` (``plan``, ``runs``, ``engine_fit``, ``file``); this module reads the files the user names, calls them and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specsim.cli.flags import add_model_args, csv_text, engine_type, int_at_least, int_list, nonempty, number
from specsim.cli.report import print_json, step_sources
from specsim.core.defaults import DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA
from specsim.timing import DEFAULT_TIMING

__all__ = ["run_bench_plan"]


# -- bench-plan ---------------------------------------------------------------------------------------------------------
def _positions(text: str) -> list[str]:
    """--pin-accept-length's items, one per step count: an empty one refused (it shifted the others), a length
    given twice allowed (two step counts may be pinned alike)."""
    items = [x.strip() for x in text.split(",")]
    if len(items) > 1 and "" in items:
        raise argparse.ArgumentTypeError(f"has an empty item in {text!r}: one length per step count, single commas")
    return [x for x in items if x]


def run_bench_plan(args: argparse.Namespace) -> int:
    from specsim.calibration.plan import check_prompts, design_plan, plan_deployment, plan_files
    from specsim.cli.args import model_options
    from specsim.core.files import OutputError, atomic_write_many, make_folder, refuse_builtin, writing

    out = Path(args.out).expanduser()
    refuse_builtin(out)
    with writing(out, folder=True):  # a name too long, a folder that cannot be listed: one line naming --out
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise OutputError(
                out, "it exists and is not an empty folder", "bench-plan writes a new one: give a new name"
            )
    if args.no_pin:  # flags of pinned runs beside --no-pin: refused by name, not dropped
        from specsim.cli.flags import flags_given

        pinned_only = [f for f in flags_given(args, "bench-plan") if f in ("--input-len", "--pin-accept-length")]
        if pinned_only:
            named = [f.replace("--input-len", "--input-tokens") for f in pinned_only]
            raise ValueError(
                f"{' and '.join(named)} {'set' if len(named) > 1 else 'sets'} the pinned runs; --no-pin runs your "
                "--prompts as they are: drop one"
            )
    prompts = None
    if args.prompts is not None:
        p = Path(args.prompts)
        if not p.is_file():
            raise ValueError(
                f'--prompts {args.prompts!r} does not exist or is not a file (JSONL, one {{"prompt": ...}} per line)'
            )
        check_prompts(p)
        prompts = str(p.resolve())
    dep = plan_deployment(
        args.hardware,
        args.target,
        args.draft,
        timing=args.timing,
        engine=args.engine,
        target_options=model_options(args),
        draft_options=model_options(args, "draft_"),
    )
    plan = design_plan(
        dep,
        args.engine,
        served_model=args.served_model,
        draft_checkpoint=args.draft_checkpoint,
        concurrency=args.concurrency,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        steps=args.steps,
        pinned=args.pin_accept_length,
        pin=not args.no_pin,
        prompts=prompts,
        port=args.port,
    )
    files = plan_files(plan)
    with make_folder(out):  # the last step before writing: every check above has passed
        atomic_write_many([(out / name, text.encode("utf-8")) for name, text in files.items()])
    (out / "run.sh").chmod(0o755)
    if args.json:
        print_json(plan.to_dict() | {"folder": str(out), "files": sorted(files)})
        _deployment_notes(dep)
        return 0
    from specsim.calibration.plan import SERVER_START_S, _minutes

    print(
        f"bench-plan: {plan.engine} {plan.version} (specsim's {plan.preset} preset), {plan.served_model} on {plan.tp} x "
        f"{plan.hardware}, drafter {plan.drafter}"
    )
    print(
        f"  {len(plan.runs)} runs on {len(plan.servers)} servers: plain and speculative at concurrency "
        f"{', '.join(map(str, sorted({r.concurrency for r in plan.runs})))}; draft steps "
        f"{', '.join(map(str, sorted({s.steps for s in plan.servers.values() if s.steps is not None})))}"
        + ("" if any(s.pinned_accept_length is not None for s in plan.servers.values()) else " (acceptance not pinned)")
        + "".join(
            f"; pinned at {s.pinned_accept_length:g} tokens per verification ({s.steps} steps)"
            for s in plan.servers.values()
            if s.pinned_accept_length is not None
        )
    )
    sources = step_sources(dep).replace("\n", "\n  ")  # as every answer's header says them, indented
    print(
        f"  estimated wall time {_minutes(plan.estimate_s)} (specsim's prediction of each run, and "
        f"{SERVER_START_S / 60:g} min per server start, assumed)\n  {sources}"
    )
    for note in plan.notes:
        print(f"  note: {note}")
    print(f"wrote {out}/: {', '.join(sorted(files))}")
    print(f"next: bash {out}/run.sh, then specsim calibrate-engine --plan {out}/plan.yaml --out calibration.yaml")
    _deployment_notes(dep)
    return 0


def _deployment_notes(dep) -> None:
    """The notes the planned deployment stands on, on stderr as every command says them: the defaults taken for parts
    no flag named (a plan for an H100 serving Llama-3.1-8B had said neither was a default) and what the models' configs
    left unsaid; not the step-time notes of the estimate, whose advice names flags bench-plan does not take."""
    for note in dep.memory_notes():
        print(f"note: {note}", file=sys.stderr)


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_bench_plan(sub) -> None:
    from specsim.calibration.plan import DEFAULT_CONCURRENCY, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_STEPS

    p = sub.add_parser(
        "bench-plan",
        help="write the benchmark of your engine that calibrate-engine needs",
        description="Writes a folder with run.sh (your engine's own server and benchmark client over a "
        "design that separates every term calibrate-engine fits: plain and speculative runs at the same "
        "loads, two prompt lengths, two numbers of draft steps, acceptance pinned by the engine at known "
        "lengths, and a run with real acceptance on your prompts), README.md and plan.yaml.",
    )
    p.add_argument(
        "--engine",
        type=engine_type,
        required=True,
        metavar="ENGINE@VERSION",
        help="vllm, sglang or trtllm with the version you run (vllm@0.24.0); the flags are that version's",
    )
    p.add_argument("--hardware", help=f"the GPU (default {DEFAULT_HARDWARE})")
    p.add_argument("--target", help=f"the served model: a built-in name or its config.json (default {DEFAULT_TARGET})")
    p.add_argument("--served-model", metavar="ID", help="what the server loads (default: the target's Hugging Face ID)")
    p.add_argument(
        "--draft",
        help=f"the drafter: a draft model, eagle, eagle3, mtp or ngram (default: the model catalog's draft for a "
        f"built-in target; else {DEFAULT_DRAFT})",
    )
    p.add_argument(
        "--draft-checkpoint",
        metavar="ID",
        help="the drafter's checkpoint (default: the draft model's, or a known head)",
    )
    add_model_args(p, draft=True)
    p.add_argument(
        "--timing",
        metavar="SOURCE",
        help=f"step-time source of the wall-time estimate (default {DEFAULT_TIMING}; kernels for a MoE target of 10B+ "
        "active parameters at tensor parallelism that they compose)",
    )
    p.add_argument(
        "--concurrency",
        type=int_list(1, "concurrency", MAX_BATCH),
        default=list(DEFAULT_CONCURRENCY),
        help=f"comma-separated concurrency levels (default {csv_text(DEFAULT_CONCURRENCY)})",
    )
    p.add_argument(  # --input-len and --output-len as the answering commands (and vLLM's benchmark) name them
        "--input-tokens",
        "--input-len",
        dest="input_tokens",
        type=int_list(1, "input-tokens", MAX_CONTEXT),
        default=list(DEFAULT_INPUT_TOKENS),
        help=f"two prompt lengths of the random runs (default {csv_text(DEFAULT_INPUT_TOKENS)})",
    )
    p.add_argument(
        "--output-tokens",
        "--output-len",
        dest="output_tokens",
        type=int_at_least(2, "output-tokens", MAX_CONTEXT),
        default=DEFAULT_OUTPUT_TOKENS,
        help=f"tokens generated per request (default {DEFAULT_OUTPUT_TOKENS})",
    )
    p.add_argument(
        "--steps",
        type=int_list(1, "steps", MAX_GAMMA),
        default=list(DEFAULT_STEPS),
        help=f"two numbers of draft steps (default {csv_text(DEFAULT_STEPS)})",
    )
    p.add_argument(
        "--pin-accept-length",
        type=lambda t: [number(x) for x in _positions(t)],
        metavar="AL,AL",
        help="the acceptance length pinned at each step count (default: the drafter's published acceptance)",
    )
    p.add_argument(
        "--no-pin",
        action="store_true",
        help="real acceptance on --prompts at every step count (for engine versions that cannot pin it)",
    )
    p.add_argument(
        "--prompts",
        type=nonempty("prompts"),
        metavar="FILE.jsonl",
        help='your prompts, one {"prompt": ...} per line, for the real-acceptance run',
    )
    p.add_argument("--port", type=int_at_least(1, "port", 65535), default=8000, help="the server's port (default 8000)")
    p.add_argument(
        "--out",
        type=nonempty("out", "folder"),
        required=True,
        metavar="FOLDER",
        help="a new (or empty) folder for the plan",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_bench_plan)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {"bench-plan": _parser_bench_plan}
