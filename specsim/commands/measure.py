"""The timing harness and calibration on the command line: measure, measure-loop, calibrate, compose-kernels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import report
from ..report import print_json, progress, table
from ._args import harness

__all__ = ["run_calibrate", "run_compose_kernels", "run_measure", "run_measure_loop"]


def run_measure(args: argparse.Namespace) -> int:
    import csv
    import io

    harness()
    from .._io import atomic_write_text, check_output
    from ..harness.timing import CSV_COLUMNS, measure_sweep
    from ..models import get_model

    check_output(args.out, (".csv",))  # before the sweep: a long GPU run must not be lost at the end
    shape = get_model(args.model, weight_dtype=args.dtype, kv_dtype=args.dtype)
    rows = measure_sweep(shape, args.batch, args.tokens_per_seq, args.context, dtype=args.dtype, device=args.device,
                         repeats=args.repeats, warmup=args.warmup, cuda_graphs=args.cuda_graphs, seed=args.seed,
                         kind=args.pass_kind, compile=args.compile, floor=args.floor)
    if not rows:
        raise ValueError("no configuration fitted in memory; nothing written")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(args.out, buffer.getvalue())
    floors = [r["median_s"] / r["floor_s"] for r in rows if r["floor_s"]]
    if args.json:
        print_json({"configurations": len(rows), "device_name": rows[0]["device_name"], "out": str(args.out),
                    "pass": args.pass_kind, "compiled": args.compile,
                    "pass_over_floor": {"min": min(floors), "max": max(floors)} if floors else None})
    else:
        print(f"{len(rows)} configurations measured on {rows[0]['device_name']} ({args.pass_kind} pass"
              f"{', compiled' if args.compile else ''}) -> {args.out}")
        if floors:
            print(f"pass time over its kernel floor (GEMMs + attention timed alone): {min(floors):.2f}x to {max(floors):.2f}x")
    return 0


def run_measure_loop(args: argparse.Namespace) -> int:
    harness()
    from ..answers import loop_rows
    from ..deployment import check_shared_vocabulary
    from ..hardware import load_hardware
    from ..harness.specloop import run_speculative_loop
    from ..models import get_model

    target = get_model(args.target, weight_dtype=args.dtype, kv_dtype=args.dtype)
    draft = get_model(args.draft, weight_dtype=args.dtype, kv_dtype=args.dtype)
    check_shared_vocabulary(target, draft)  # before any model is built: every other command refuses the pair too
    profile = load_hardware(args.hardware) if args.hardware else None
    measured = [run_speculative_loop(target, draft, args.alpha, args.gamma, batch, args.context, tokens=args.tokens,
                                     dtype=args.dtype, device=args.device, seed=args.seed, repeats=args.repeats)
                for batch in args.batch]
    results = loop_rows(measured, target, draft, args.alpha, args.gamma, args.context, args.tokens, profile)
    if args.json:
        print_json(results)
        return 0
    where = "CPU" if results[0]["device"] == "cpu" else results[0]["device"]
    print(f"end-to-end speculative loop on the {where}: {target.name} target, {draft.name} draft, {args.dtype}, "
          f"alpha {args.alpha:g}, gamma {args.gamma}, context {args.context} + {args.tokens} generated tokens")
    headers = ["batch", "ms/token plain", "ms/token spec", "measured speedup", "tokens/pass (E)", "S from measured t_T,t_D,t_V"]
    if profile is not None:
        headers.append(f"predicted (roofline, {profile.name})")
    rows = []
    for r in results:
        row = [r["batch"], f"{r['plain_s_per_token'] * 1e3:.3f}", f"{r['spec_s_per_token'] * 1e3:.3f}", f"{r['measured_speedup']:.3f}",
               f"{r['measured_tokens_per_pass']:.3f} ({r['expected_tokens_per_pass']:.3f})", f"{r['formula_speedup_from_measured_passes']:.3f}"]
        if profile is not None:
            row.append(f"{r['predicted_speedup']:.3f}")
        rows.append(row)
    print(table(headers, rows, ">" * len(headers)))
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    import io

    from .._io import atomic_write_many, check_output
    from ..calibrate import calibrate, implausible, profile_yaml
    from ..plots import plot_residuals
    from ..hardware import load_hardware

    out = check_output(args.out, (".yaml", ".yml"))
    check_output(out.with_name(out.stem + "-residuals.png"))
    options = {"holdout": args.holdout} if args.holdout is not None else {}
    result = calibrate(args.measurements, load_hardware(args.hardware), seed=args.seed, per_layer=args.per_layer,
                       name=args.name, **options)
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
    print(f"{args.measurements}: {s['points']} measurements; fitted on {s['train_points']}, judged on {s['holdout_points']} held out")
    print(f"fitted: compute_eff {p.compute_eff:.3f}, bandwidth_eff {p.bandwidth_eff:.3f}, overhead {p.overhead_s * 1e3:.4f} ms"
          + (f" + {p.per_layer_overhead_s * 1e6:.2f} us/layer" if s["per_layer_overhead_fitted"] else " (no per-layer term)"))
    print(table(["held-out points", "mean abs error", "worst error"], [
        [f"before: {result.base.name} as shipped", f"{s['holdout_before']['mape']:.1%}", f"{s['holdout_before']['max_abs_error']:.1%}"],
        [f"after: {name}", f"{s['holdout_after']['mape']:.1%}", f"{s['holdout_after']['max_abs_error']:.1%}"],
    ], "<>>"))
    print(f"wrote {out} and {plot}")
    return 0


def run_compose_kernels(args: argparse.Namespace) -> int:
    import io

    import pandas as pd

    from .._io import atomic_write_many, check_output
    from ..hardware import load_hardware
    from ..models import get_model
    from ..timing.kernels import KernelSource, compose_steps

    out = Path(args.out)
    if not out.is_dir():
        raise ValueError(f"--out {args.out!r} is not a folder")
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
            raise ValueError(f"{source.device}: no configuration of {', '.join(args.models)} is covered by the {args.engine} "
                             "kernel data; nothing written")
        buffer = io.StringIO()
        df.to_csv(buffer, index=False, float_format="%.9g")
        files.append((path, buffer.getvalue().encode("utf-8")))
        report.append({"hardware": source.hardware.name, "file": str(path), "steps": int(len(df)),
                       "models": {m: int((df.model == m).sum()) for m in df.model.unique()},
                       "source": source.describe()})
    atomic_write_many(files)
    if args.json:
        print_json(report)
    else:
        for r in report:
            covered = ", ".join(f"{m} ({n})" for m, n in r["models"].items())
            print(f"{r['hardware']}: {r['steps']} steps composed -> {r['file']}  [{covered}]; {r['source']}")
    return 0


def _fitted_profile(hw, dep, fit, args: argparse.Namespace):
    """The profile with the fitted efficiencies and a calibration record: the files (and their SHA-256), the tools,
    the engine preset, the fitted terms and the held-out error."""
    import dataclasses
    import datetime
    import hashlib

    files = list(args.plain) + list(args.spec)
    held = fit.error("held_out")
    record = {
        "source": ", ".join(files),
        "source_sha256": [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files],
        "date": datetime.date.today().isoformat(),
        "base_profile": dep.hardware.name,
        "fitted_by": "specsim calibrate-engine",
        "engine_preset": dep.engine.key,
        "efficiency_scale": fit.scale,
        "engine_iteration_ms": round(fit.iteration_s * 1e3, 6),
        "runs": len(fit.runs),
        "holdout_mape_after": None if held != held else round(held, 6),
        "holdout_mape_before": round(fit.error("preset"), 6),
    }
    notes = (f"Fitted by specsim calibrate-engine on {record['date']} to {len(fit.runs)} benchmark runs of "
             f"{dep.target.name} ({record['source']}): compute and bandwidth efficiency x{fit.scale:.3f} of "
             f"{dep.hardware.name}'s, with the {dep.engine.key} preset at {fit.iteration_s * 1e3:.3f} ms per iteration. "
             "Datasheet peaks and sources are those of the base profile.")
    return dataclasses.replace(hw, calibration=record, notes=notes, description=f"{dep.hardware.description} - fitted to engine benchmarks")


def _finite_or_none(value: float) -> float | None:
    import math

    return None if math.isnan(value) else value


def _calibrate_engine_target(args: argparse.Namespace, runs: list) -> str:
    """--target, or the model the benchmark files name; refused where the two disagree or neither is known."""
    from ..models import get_model

    named = sorted({r.model for r in runs if r.model})
    if args.target is None:
        if not named:
            raise ValueError("the benchmark files name no model: pass --target")
        try:
            get_model(named[0])
        except KeyError:
            raise ValueError(f"the files name {named[0]!r}, which specsim does not ship: pass --target with its config.json") from None
        return named[0]
    if named:
        try:
            theirs = get_model(named[0]).name
        except KeyError:
            return args.target  # a model specsim does not know: --target says what it is
        if theirs != get_model(args.target).name:
            raise ValueError(f"--target {args.target} but the benchmark files ran {named[0]}")
    return args.target


def run_calibrate_engine(args: argparse.Namespace) -> int:
    import dataclasses

    from .._io import atomic_write_text, check_output
    from ..bench_files import TOOLS, read_bench_file
    from ..calibrate import profile_yaml
    from ..deployment import Deployment
    from ..engine_calibrate import fit_engine
    from ..metrics import accept_length_from_page

    import numpy as np

    if args.spec and (args.draft is None or args.steps is None):
        raise ValueError("--spec runs need --draft and --steps (the drafter and draft steps per round they ran with)")
    if not args.spec and (args.draft or args.steps or args.metrics):
        raise ValueError("--draft, --steps and --metrics describe speculative runs: give them with --spec FILE")
    out = check_output(args.out, (".yaml", ".yml")) if args.out else None
    plain = [r for path in args.plain for r in read_bench_file(path)]
    spec = [r for path in args.spec for r in read_bench_file(path)]
    al_note = None
    if args.metrics:
        length, al_note = accept_length_from_page(args.metrics)
        spec = [r if r.accept_length is not None else dataclasses.replace(r, accept_length=length) for r in spec]
    target = _calibrate_engine_target(args, plain + spec)
    dep = Deployment.build(args.hardware, target, args.draft, args.timing, args.engine,
                           target_options={"tp": args.tp} if args.tp else None, decode_only=not args.spec)
    fit = fit_engine(dep, plain, spec, args.steps or 1, args.topk, args.verify_tokens)
    hw = dataclasses.replace(fit.deployment.hardware, name=f"{dep.hardware.name}-{dep.engine.name}-fitted")
    if out is not None and not fit.scale_fitted:
        raise ValueError("--out: no efficiency was fitted (it needs --timing roofline or hybrid and plain runs at decode "
                         "batches at least 1.5x apart); nothing written")
    h = fit.host
    flags = (f"--timing {args.timing} --engine {dep.engine.key} --engine-overhead-ms {fit.iteration_s * 1e3:g}"
             + (f" --engine-round-ms {h.round_s * 1e3:g} --engine-step-ms {h.step_s * 1e3:g} --engine-seq-us {h.seq_s * 1e6:g}"
                f" --engine-seq-step-us {h.seq_step_s * 1e6:g}"
                if spec else ""))
    tools = sorted({TOOLS[r.tool] for r in fit.runs})
    held = not np.all(np.isnan(fit.held_out))
    summary = {
        "runs": [{"file": r.where, "tool": r.tool, "kind": k, "load": r.load, "decode_batch": r.decode_batch,
                  "context": r.context, "tpot_ms": r.tpot_s * 1e3, "accept_length": r.accept_length,
                  "fitted_tpot_ms": float(p) * 1e3, "held_out_tpot_ms": None if np.isnan(q) else float(q) * 1e3,
                  "preset_tpot_ms": float(s) * 1e3}
                 for r, k, p, q, s in zip(fit.runs, fit.kinds, fit.predicted, fit.held_out, fit.preset)],
        "tools": tools, "deployment": dep.brief(), "provenance": dep.provenance(), "engine_preset": dep.engine.key,
        "efficiency_scale": fit.scale, "efficiency_fitted": fit.scale_fitted,
        "compute_eff": hw.compute_eff, "bandwidth_eff": hw.bandwidth_eff,
        "engine_iteration_ms": fit.iteration_s * 1e3,
        "spec_host": {"round_ms": h.round_s * 1e3, "step_ms": h.step_s * 1e3, "seq_us": h.seq_s * 1e6,
                      "seq_step_us": h.seq_step_s * 1e6} if spec else None,
        "accept_length_source": al_note,
        "error": {which: {kind or "all": _finite_or_none(fit.error(which, kind)) for kind in (None, "plain", "spec")}
                  for which in ("held_out", "predicted", "preset")},
        "speedup": [{"load": load, "measured": m, "held_out": p} for load, m, p in fit.speedups(fit.held_out)] if held else [],
        "flags": flags, "profile": str(out) if out else None,
    }
    if out is not None:
        atomic_write_text(out, profile_yaml(_fitted_profile(hw, dep, fit, args)))
    if args.json:
        print_json(summary)
        return 0
    _print_engine_fit(args, summary, fit, dep, target, out)
    return 0


def _print_engine_fit(args: argparse.Namespace, summary: dict, fit, dep, target: str, out) -> None:
    import numpy as np

    plain = [r for r, k in zip(fit.runs, fit.kinds) if k == "plain"]
    spec = [r for r, k in zip(fit.runs, fit.kinds) if k == "spec"]
    h, hw, al_note, tools = fit.host, summary, summary["accept_length_source"], summary["tools"]
    held = any(r["held_out_tpot_ms"] is not None for r in summary["runs"])
    print(f"calibrate-engine: {len(plain)} plain and {len(spec)} speculative runs of {dep.target.name} on {dep.hardware.name}; "
          f"read as {'; '.join(tools)}")
    print("\n".join(f"  {line}" for line in (dep.provenance() if report.VERBOSE else [dep.brief()])))
    if al_note:
        print(f"  acceptance length of runs without one: {al_note}")
    rows = []
    for r, k, p, q, s in zip(fit.runs, fit.kinds, fit.predicted, fit.held_out, fit.preset):
        rows.append([r.where, k, r.load, f"{r.decode_batch:.1f}", f"{r.context:.0f}", "" if r.accept_length is None else f"{r.accept_length:.2f}",
                     f"{r.tpot_s * 1e3:.2f}", "" if np.isnan(q) else f"{q * 1e3:.2f}", f"{s * 1e3:.2f}"])
    print(table(["run", "kind", "load", "decode batch", "context", "AL", "TPOT ms", "held out", f"{dep.engine.key} as shipped"],
                rows, "<<<>>>>>>"))
    scale = (f"profile efficiency x{fit.scale:.3f} (compute {hw['compute_eff']:.3f}, bandwidth {hw['bandwidth_eff']:.3f})"
             if fit.scale_fitted else "profile efficiency not fitted (" + ("--timing kernels" if args.timing == "kernels"
                                                                               else "plain runs at one decode batch") + ")")
    print(f"fitted: {scale}; engine {fit.iteration_s * 1e3:.3f} ms per iteration"
          + (f"; speculative round host time {h.describe()}" if spec else ""))
    if held:
        err = summary["error"]
        print(f"held-out error (each load fitted without its runs): plain TPOT {err['held_out']['plain']:.1%}"
              + (f", speculative TPOT {err['held_out']['spec']:.1%}" if spec else "")
              + f"; {dep.engine.key} as shipped: plain {err['preset']['plain']:.1%}"
              + (f", speculative {err['preset']['spec']:.1%}" if spec else ""))
        for load, measured, predicted in fit.speedups(fit.held_out):
            print(f"  {load}: measured speedup {measured:.2f}x, held-out prediction {predicted:.2f}x")
    else:
        print("held-out error: runs at one load only, nothing to hold out (benchmark two or more concurrencies)")
    draft = f" --draft {args.draft}" if args.draft else ""
    print(f"use: specsim optimal-gamma --hardware {out or args.hardware} --target {target}{draft} {summary['flags']}")
    if out:
        print(f"wrote {out}")
    elif fit.scale_fitted:
        print("  (that profile is the shipped one: --out PROFILE.yaml writes the fitted efficiency for --hardware)")
