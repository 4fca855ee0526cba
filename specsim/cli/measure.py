"""The timing harness and calibration on the command line: measure, measure-loop, calibrate, compose-kernels."""

from __future__ import annotations

import argparse
import sys

from specsim.cli.args import harness
from specsim.cli.flags import (
    alpha_type,
    batches_type,
    context_type,
    csv_text,
    fraction,
    int_at_least,
    int_list,
    names,
    nonempty,
)
from specsim.cli.report import print_json, progress, table
from specsim.core.defaults import DEFAULT_ALPHA, DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET
from specsim.core.limits import MAX_CONTEXT, MAX_GAMMA, MAX_LOOP_TOKENS, MAX_REPEATS, MAX_SEED
from specsim.engines import DEFAULT_ENGINE, ENGINES, REGISTRY
from specsim.harness import defaults as hd

__all__ = ["run_calibrate", "run_compose_kernels", "run_measure", "run_measure_loop"]


def run_measure(args: argparse.Namespace) -> int:
    import csv
    import io

    harness()
    from specsim.core.files import atomic_write_text, check_output
    from specsim.describe.models import get_model
    from specsim.harness.timing import CSV_COLUMNS, measure_sweep

    check_output(args.out, (".csv",))  # before the sweep: a long GPU run must not be lost at the end
    shape = get_model(args.model, weight_dtype=args.dtype, kv_dtype=args.dtype)
    rows = measure_sweep(
        shape,
        args.batch,
        args.tokens_per_seq,
        args.context,
        dtype=args.dtype,
        device=args.device,
        repeats=args.repeats,
        warmup=args.warmup,
        cuda_graphs=args.cuda_graphs,
        seed=args.seed,
        kind=args.pass_kind,
        compile=args.compile,
        floor=args.floor,
    )
    if not rows:
        raise ValueError("no configuration fitted in memory; nothing written")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(args.out, buffer.getvalue())
    floors = [r["median_s"] / r["floor_s"] for r in rows if r["floor_s"]]
    if args.json:
        print_json(
            {
                "configurations": len(rows),
                "device_name": rows[0]["device_name"],
                "out": str(args.out),
                "pass": args.pass_kind,
                "compiled": args.compile,
                "pass_over_floor": {"min": min(floors), "max": max(floors)} if floors else None,
            }
        )
    else:
        print(
            f"{len(rows)} configurations measured on {rows[0]['device_name']} ({args.pass_kind} pass"
            f"{', compiled' if args.compile else ''}) -> {args.out}"
        )
        if floors:
            print(
                f"pass time over its kernel floor (GEMMs + attention timed alone): {min(floors):.2f}x to {max(floors):.2f}x"
            )
    return 0


def run_measure_loop(args: argparse.Namespace) -> int:
    from specsim.describe.models import get_model
    from specsim.speculation.deployment import check_shared_vocabulary

    target = get_model(args.target, weight_dtype=args.dtype, kv_dtype=args.dtype)
    draft = get_model(args.draft, weight_dtype=args.dtype, kv_dtype=args.dtype)
    # before any model is built, and before torch is asked for: every other command refuses the pair too
    check_shared_vocabulary(target, draft)
    harness()
    from specsim.answers import loop_rows
    from specsim.describe.hardware import load_hardware
    from specsim.harness.specloop import check_loop_memory, run_speculative_loop

    # The largest batch, before the first loop runs: a batch that cannot fit must not fail after minutes of the others.
    check_loop_memory(target, draft, args.gamma, max(args.batch), args.context, args.tokens, args.dtype, args.device)
    profile = load_hardware(args.hardware) if args.hardware else None
    measured = [
        run_speculative_loop(
            target,
            draft,
            args.alpha,
            args.gamma,
            batch,
            args.context,
            tokens=args.tokens,
            dtype=args.dtype,
            device=args.device,
            seed=args.seed,
            repeats=args.repeats,
        )
        for batch in args.batch
    ]
    results = loop_rows(measured, target, draft, args.alpha, args.gamma, args.context, args.tokens, profile)
    if args.json:
        print_json(results)
        return 0
    where = "CPU" if results[0]["device"] == "cpu" else results[0]["device"]
    print(
        f"end-to-end speculative loop on the {where}: {target.name} target, {draft.name} draft, {args.dtype}, "
        f"alpha {args.alpha:g}, gamma {args.gamma}, context {args.context} + {args.tokens} generated tokens"
    )
    headers = [
        "batch",
        "ms/token plain",
        "ms/token spec",
        "measured speedup",
        "tokens/pass (E)",
        "S from measured t_T,t_D,t_V",
    ]
    if profile is not None:
        headers.append(f"predicted (roofline, {profile.name})")
    rows = []
    for r in results:
        row = [
            r["batch"],
            f"{r['plain_s_per_token'] * 1e3:.3f}",
            f"{r['spec_s_per_token'] * 1e3:.3f}",
            f"{r['measured_speedup']:.3f}",
            f"{r['measured_tokens_per_pass']:.3f} ({r['expected_tokens_per_pass']:.3f})",
            f"{r['formula_speedup_from_measured_passes']:.3f}",
        ]
        if profile is not None:
            row.append(f"{r['predicted_speedup']:.3f}")
        rows.append(row)
    print(table(headers, rows, ">" * len(headers)))
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    import io

    from specsim.calibration.profile import calibrate, implausible, profile_yaml
    from specsim.core.files import atomic_write_many, check_output
    from specsim.describe.hardware import load_hardware
    from specsim.figures.plots import plot_residuals

    out = check_output(args.out, (".yaml", ".yml"))
    check_output(out.with_name(out.stem + "-residuals.png"))
    options = {"holdout": args.holdout} if args.holdout is not None else {}
    result = calibrate(
        args.measurements,
        load_hardware(args.hardware),
        seed=args.seed,
        per_layer=args.per_layer,
        name=args.name,
        **options,
    )
    name = result.profile.name
    plot = out.with_name(out.stem + "-residuals.png")
    buffer = io.BytesIO()
    plot_residuals(result).savefig(buffer, format="png", dpi=120)
    # The profile and its residual plot land together or not at all.
    atomic_write_many([(out, profile_yaml(result.profile).encode("utf-8")), (plot, buffer.getvalue())])
    s = result.summary()
    warnings = implausible(result)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        print_json({**s, "profile": str(out), "residual_plot": str(plot), "name": name, "warnings": warnings})
        return 0
    p = result.profile
    print(
        f"{args.measurements}: {s['points']} measurements; fitted on {s['train_points']}, judged on {s['holdout_points']} held out"
    )
    print(
        f"fitted: compute_eff {p.compute_eff:.3f}, bandwidth_eff {p.bandwidth_eff:.3f}, overhead {p.overhead_s * 1e3:.4f} ms"
        + (
            f" + {p.per_layer_overhead_s * 1e6:.2f} us/layer"
            if s["per_layer_overhead_fitted"]
            else " (no per-layer term)"
        )
    )
    print(
        table(
            ["held-out points", "mean abs error", "worst error"],
            [
                [
                    f"before: {result.base.name} as shipped",
                    f"{s['holdout_before']['mape']:.1%}",
                    f"{s['holdout_before']['max_abs_error']:.1%}",
                ],
                [f"after: {name}", f"{s['holdout_after']['mape']:.1%}", f"{s['holdout_after']['max_abs_error']:.1%}"],
            ],
            "<>>",
        )
    )
    print(f"wrote {out} and {plot}")
    return 0


def run_compose_kernels(args: argparse.Namespace) -> int:
    from specsim.core.files import make_folder

    with make_folder(
        args.out
    ) as out:  # created if missing, as figures' --out (and removed again if nothing is written)
        report = _compose_kernels(args, out)
    if args.json:
        print_json(report)
    else:
        for r in report:
            covered = ", ".join(f"{m} ({n})" for m, n in r["models"].items())
            print(f"{r['hardware']}: {r['steps']} steps composed -> {r['file']}  [{covered}]; {r['source']}")
    return 0


def _compose_kernels(args: argparse.Namespace, out) -> list[dict]:
    """Each --hardware's composed steps written to ``out`` (all or none), and what each file holds."""
    import io

    import pandas as pd

    from specsim.core.files import atomic_write_many, check_output
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing.kernels import KernelSource, compose_steps

    jobs = []
    for device in args.hardware:
        path = check_output(out / f"{device}-{args.engine}-kernel-steps.csv")
        jobs.append((KernelSource(load_hardware(device), args.engine, progress=progress), path))
    files, report = [], []
    for source, path in jobs:
        frames = [compose_steps(source, get_model(m)) for m in args.models]
        df = pd.concat(frames, ignore_index=True)
        for note in source.notes:
            print(f"note: {note}", file=sys.stderr)
        if df.empty:
            raise ValueError(
                f"{source.device}: no configuration of {', '.join(args.models)} is covered by the {args.engine} "
                "kernel data; nothing written"
            )
        buffer = io.StringIO()
        df.to_csv(buffer, index=False, float_format="%.9g")
        files.append((path, buffer.getvalue().encode("utf-8")))
        report.append(
            {
                "hardware": source.hardware.name,
                "file": str(path),
                "steps": int(len(df)),
                "models": {m: int((df.model == m).sum()) for m in df.model.unique()},
                "source": source.describe(),
            }
        )
    atomic_write_many(files)
    return report


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_measure(sub) -> None:
    p = sub.add_parser(
        "measure",
        help="time real forward passes with the PyTorch harness (needs torch) and write a CSV",
        description="Build a Llama-architecture decoder with the model's shape and random weights, and time "
        "one forward pass per (batch, tokens per sequence, context).",
    )
    p.add_argument(
        "--model", required=True, help="built-in model name or config.json path (on a CPU: tiny-28m, tiny-5m)"
    )
    p.add_argument(
        "--batch",
        type=batches_type,
        default=list(hd.MEASURE_BATCHES),
        help=f"comma-separated batch sizes (default {csv_text(hd.MEASURE_BATCHES)})",
    )
    p.add_argument(
        "--tokens-per-seq",
        type=int_list(1, "tokens-per-seq", MAX_GAMMA + 1),
        default=list(hd.MEASURE_TOKENS_PER_SEQ),
        help=f"comma-separated q values (default {csv_text(hd.MEASURE_TOKENS_PER_SEQ)})",
    )
    p.add_argument(
        "--context",
        type=int_list(0, "context", MAX_CONTEXT),
        default=list(hd.MEASURE_CONTEXTS),
        help=f"comma-separated cached lengths (default {csv_text(hd.MEASURE_CONTEXTS)})",
    )
    p.add_argument(
        "--dtype",
        choices=["bf16", "fp16", "fp32"],
        default=hd.MEASURE_DTYPE,
        help=f"weights and KV cache (default {hd.MEASURE_DTYPE}; fp32 is faster on most CPUs)",
    )
    p.add_argument("--device", choices=["cuda", "cpu"], default=hd.MEASURE_DEVICE, help=f"default {hd.MEASURE_DEVICE}")
    p.add_argument(
        "--repeats",
        type=int_at_least(1, "repeats", MAX_REPEATS),
        default=hd.MEASURE_REPEATS,
        help=f"timed passes per configuration (default {hd.MEASURE_REPEATS})",
    )
    p.add_argument(
        "--warmup",
        type=int_at_least(0, "warmup", MAX_REPEATS),
        default=hd.MEASURE_WARMUP,
        help=f"untimed passes first (default {hd.MEASURE_WARMUP})",
    )
    p.add_argument("--cuda-graphs", action="store_true", help="capture each pass in a CUDA graph and time its replay")
    p.add_argument(
        "--pass",
        dest="pass_kind",
        choices=["engine", "reference"],
        default=hd.MEASURE_PASS,
        help=f"engine: fused norm, grouped-query SDPA, no dense mask; reference: the plain formulation "
        f"(default {hd.MEASURE_PASS})",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile each layer (fuses the element-wise work; compiling takes minutes on a GPU)",
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="also time each pass's GEMMs and attention alone: floor_* columns, "
        "and the pass over its kernel floor in the progress lines",
    )
    p.add_argument("--seed", type=int_at_least(0, "seed", MAX_SEED), default=0)
    p.add_argument(
        "--out",
        type=nonempty("out"),
        required=True,
        help="CSV file to write (atomically; checked before the sweep starts)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_measure)


def _parser_measure_loop(sub) -> None:
    p = sub.add_parser(
        "measure-loop", help="time an end-to-end speculative loop (controlled acceptance) against plain decoding"
    )
    p.add_argument("--target", default=hd.LOOP_TARGET, help=f"target model (default {hd.LOOP_TARGET}, CPU-sized)")
    p.add_argument("--draft", default=hd.LOOP_DRAFT, help=f"draft model (default {hd.LOOP_DRAFT})")
    p.add_argument(
        "--alpha",
        type=alpha_type,
        default=DEFAULT_ALPHA,
        help=f"acceptance probability per drafted token (default {DEFAULT_ALPHA})",
    )
    p.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        default=hd.LOOP_GAMMA,
        help=f"drafted tokens per step (default {hd.LOOP_GAMMA})",
    )
    p.add_argument(
        "--batch",
        type=batches_type,
        default=list(hd.LOOP_BATCHES),
        help=f"comma-separated batch sizes (default {csv_text(hd.LOOP_BATCHES)})",
    )
    p.add_argument(
        "--context",
        type=context_type,
        default=hd.LOOP_CONTEXT,
        help=f"cached tokens before generating (default {hd.LOOP_CONTEXT})",
    )
    p.add_argument(
        "--tokens",
        type=int_at_least(1, "tokens", MAX_LOOP_TOKENS),
        default=hd.LOOP_TOKENS,
        help=f"tokens generated per sequence (default {hd.LOOP_TOKENS})",
    )
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=hd.LOOP_DTYPE, help=f"default {hd.LOOP_DTYPE}")
    p.add_argument("--device", choices=["cuda", "cpu"], default=hd.LOOP_DEVICE, help=f"default {hd.LOOP_DEVICE}")
    p.add_argument(
        "--repeats",
        type=int_at_least(1, "repeats", MAX_REPEATS),
        default=hd.LOOP_REPEATS,
        help=f"default {hd.LOOP_REPEATS}",
    )
    p.add_argument("--seed", type=int_at_least(0, "seed", MAX_SEED), default=0)
    p.add_argument("--hardware", help="profile to predict the speedup with (e.g. a calibrated cpu profile)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_measure_loop)


def _parser_calibrate(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit a profile's efficiencies and overheads to measured step times",
        description="Robust least squares on measured step times; held-out points judge the fit before and after.",
    )
    p.add_argument("measurements", help="CSV from specsim measure or specsim compose-kernels")
    p.add_argument("--hardware", required=True, help="base profile whose datasheet peaks are kept")
    p.add_argument(
        "--out",
        type=nonempty("out"),
        required=True,
        help="profile YAML to write (a residual plot is written beside it)",
    )
    p.add_argument("--name", help="name of the fitted profile (default: <--hardware>-calibrated)")
    p.add_argument(
        "--holdout",
        type=fraction,
        help="fraction of distinct points held out of the fit (default 0.25: specsim.calibration.profile.DEFAULT_HOLDOUT)",
    )
    p.add_argument(
        "--per-layer", choices=["auto", "yes", "no"], default="auto", help="fit a per-layer overhead (default auto)"
    )
    p.add_argument(
        "--seed", type=int_at_least(0, "seed", MAX_SEED), default=0, help="seed of the train / held-out split"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_calibrate)


def _parser_compose_kernels(sub) -> None:
    p = sub.add_parser(
        "compose-kernels", help="per-step times composed from AIConfigurator's measured kernels, as a CSV for calibrate"
    )
    p.add_argument(
        "--hardware",
        type=names("hardware"),
        default=[DEFAULT_HARDWARE],
        help=f"comma-separated profiles whose device the database has (default {DEFAULT_HARDWARE})",
    )
    p.add_argument(
        "--engine",
        choices=list(REGISTRY),
        default=ENGINES[DEFAULT_ENGINE].kernel_engine,
        help=f"whose kernels (default {ENGINES[DEFAULT_ENGINE].kernel_engine})",
    )
    p.add_argument(
        "--models",
        type=names("models"),
        default=[DEFAULT_DRAFT, DEFAULT_TARGET],
        help=f"comma-separated models (default {DEFAULT_DRAFT},{DEFAULT_TARGET})",
    )
    p.add_argument(
        "--out",
        type=nonempty("out", "folder"),
        required=True,
        help="output folder for <hardware>-<engine>-kernel-steps.csv, created if missing",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_compose_kernels)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {
    "measure": _parser_measure,
    "measure-loop": _parser_measure_loop,
    "calibrate": _parser_calibrate,
    "compose-kernels": _parser_compose_kernels,
}
