"""The ``specsim`` command.

Each subcommand is a ``_cmd_*`` function that takes the parsed arguments and
returns an exit status.  Defaults come from the library (``speedup.DEFAULT_*``)
and are only referenced here.  Errors in user input (``ValueError``,
``KeyError``, ``OSError``) become one line on stderr and exit status 2.

The hot path (``specsim optimal-gamma``) imports numpy and PyYAML only;
matplotlib, pandas, scipy and torch are imported inside the commands that need
them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__
from .capacity import DEFAULT_MEMORY_UTILIZATION, reserved_context
from .engines import DEFAULT_ENGINE, ENGINES
from .limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA
from .timing import DEFAULT_TIMING, TIMING_CHOICES
from .schedule import DEFAULT_MAX_BATCH, DEFAULT_SCHEDULE_RTOL
from .speedup import (
    DEFAULT_ALPHA,
    DEFAULT_BATCHES,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_DRAFT,
    DEFAULT_GAMMA_MAX,
    DEFAULT_HARDWARE,
    DEFAULT_TARGET,
)

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message instead of usage plus error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- argument types: each rejects bad input with the allowed range ----------------
def _alpha(text: str) -> float:
    value = _float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"alpha must be in [0, 1], got {text}")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _nonneg_float(text: str) -> float:
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _int_at_least(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        shown = text if len(text) <= 30 else f"a {len(text)}-character value"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer in [{minimum}, {maximum}], got {shown!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{what} must be an integer in [{minimum}, {maximum}], got {shown}")
        return value

    parse.__name__ = what
    return parse


def _int_list(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], list[int]]:
    one = _int_at_least(minimum, what, maximum)

    def parse(text: str) -> list[int]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{what} needs a comma-separated list of integers >= {minimum}, got {text!r}")
        return [one(item) for item in items]

    parse.__name__ = what
    return parse


def _fraction(text: str) -> float:
    value = _float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


_gamma = _int_at_least(0, "gamma", MAX_GAMMA)
_gamma_max = _int_at_least(0, "gamma-max", MAX_GAMMA)
_context = _int_at_least(0, "context", MAX_CONTEXT)
_batches = _int_list(1, "batch", MAX_BATCH)


# -- output helpers ------------------------------------------------------------
def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Plain-text table; ``align`` holds one of '<' or '>' per column (default: text left, numbers right)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if align is None:
        align = "".join(">" if rows and isinstance(rows[0][i], (int, float)) else "<" for i in range(len(headers)))
    fmt = "  ".join(f"{{:{a}{w}}}" for a, w in zip(align, widths))
    lines = [fmt.format(*headers), "  ".join("-" * w for w in widths)]
    lines += [fmt.format(*row) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _short_bound(bound: str) -> str:
    return {"memory": "mem", "compute": "comp"}[bound]


def _progress(line: str) -> None:
    print(f"specsim: {line}", file=sys.stderr, flush=True)


def _source(args: argparse.Namespace, hardware):
    """The step-time source and engine preset that ``--timing`` and ``--engine`` name."""
    from .engines import get_engine
    from .timing import make_source

    engine = get_engine(args.engine)
    source = make_source(args.timing, hardware, engine.kernel_engine, progress=_progress)
    engine = engine.for_source(source.name)
    if args.engine_overhead_ms is not None:
        engine = engine.with_iteration_ms(args.engine_overhead_ms)
    return source, engine


def _deployment(args: argparse.Namespace):
    from .speedup import Deployment

    return Deployment.build(args.hardware, args.target, args.draft, args.timing, args.engine, args.engine_overhead_ms,
                            progress=_progress)


def _print_notes(dep) -> None:
    """What the step-time source could not answer from its own data, on stderr."""
    for note in dep.notes():
        print(f"note: {note}", file=sys.stderr)


def _row_source(dep, times, i) -> str:
    """Which source produced row i's step times."""
    import numpy as np

    name = dep.timing.name if dep.timing is not None else "roofline"
    for t in (times.target, times.draft, times.verify):
        if t.fallback is not None and bool(np.asarray(t.fallback).reshape(-1)[i] if np.ndim(t.fallback) else t.fallback):
            return f"{name}, roofline outside the kernel data"
    return name


def _describe(dep, context: int) -> str:
    from .models import format_count

    hw = dep.hardware
    t, d = dep.target, dep.draft
    return (
        f"target {t.name} ({format_count(t.params)} params, {t.weight_dtype}) + draft {d.name} "
        f"({format_count(d.params)}, {d.weight_dtype}) on {hw.name}; context {context} tokens\n"
        + "\n".join(f"step times: {line}" if i == 0 else line for i, line in enumerate(dep.provenance()))
    )


# -- commands --------------------------------------------------------------------
def _cmd_optimal_gamma(args: argparse.Namespace) -> int:
    import numpy as np

    from .capacity import capacity

    dep = _deployment(args)
    batches = np.array(args.batch, dtype=float)
    best = dep.optimal_gamma(args.alpha, batches, args.context, args.gamma_max, args.rtol)
    times = best.times
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    rows = []
    for i, batch in enumerate(args.batch):
        gamma = int(best.gamma[i])
        row = {
            "batch": batch,
            "gamma": gamma,
            "speedup": float(best.speedup[i]),
            "tokens_per_step": float(_expected(args.alpha, gamma)),
            "t_target_s": float(times.target.total_s[i]),
            "t_draft_s": float(times.draft.total_s[i]),
            "t_verify_s": float(times.verify.total_s[i]),
            "cost_ratio": float(times.cost_ratio[i]),
            "bound_target": str(times.target.bound[i]),
            "bound_draft": str(times.draft.bound[i]),
            "bound_verify": str(times.verify.bound[i]),
            "at_gamma_max": bool(best.at_limit[i]),
            "fits_without_draft": batch <= cap.max_batch_without_draft,
            "fits_with_draft": batch <= cap.max_batch_with_draft,
            "recommendation": (f"speculate with gamma={gamma}" if gamma > 0 else "turn speculation off"),
            "timing_source": _row_source(dep, times, i),
            "provenance": dep.provenance(),
        }
        rows.append(row)
    if args.json:
        _print_json(rows)
        _print_notes(dep)
        return 0
    print(_describe(dep, args.context))
    print(f"alpha {args.alpha:g}; gamma searched over 0..{args.gamma_max}" + (f" (smallest within {args.rtol:g} of best)" if args.rtol else ""))
    for line in _capacity_summary(cap, dep):
        print(line)
    print()
    headers = ["batch", "gamma", "speedup", "t_T ms", "t_D ms", "t_V ms", "c", "bound T/D/V", "recommendation"]
    table_rows = []
    for r in rows:
        rec = r["recommendation"] + (" (at --gamma-max; raise it)" if r["at_gamma_max"] else "")
        if not r["fits_with_draft"]:
            rec += "; does not fit in memory" + (" with the draft" if r["fits_without_draft"] else "")
        bounds = "/".join(_short_bound(r[k]) for k in ("bound_target", "bound_draft", "bound_verify"))
        table_rows.append(
            [r["batch"], r["gamma"], f"{r['speedup']:.3f}", _ms(r["t_target_s"]), _ms(r["t_draft_s"]),
             _ms(r["t_verify_s"]), f"{r['cost_ratio']:.3f}", bounds, rec]
        )
    print(_table(headers, table_rows, ">>>>>>><<"))
    off = [r["batch"] for r in rows if r["gamma"] == 0]
    if off:
        print(f"\nspeculation does not pay at batch {', '.join(map(str, off))}: {_why_off(rows)}")
    _print_notes(dep)
    return 0


def _why_off(rows: list) -> str:
    """The reason speculation is off, from the numbers rather than a fixed sentence."""
    off = [r for r in rows if r["gamma"] == 0]
    if all(r["bound_verify"] == "memory" for r in off):
        return ("even gamma = 1 costs more (one draft step plus a verification pass) than the tokens it saves "
                "at this alpha; every pass there is memory-bound.")
    return "verification of gamma+1 tokens per sequence is compute-bound there and costs more than the tokens it saves."


def _expected(alpha: float, gamma: int) -> float:
    from .speedup import expected_tokens

    return float(expected_tokens(alpha, gamma))


def _cmd_speedup(args: argparse.Namespace) -> int:
    import numpy as np

    from .speedup import expected_tokens, speedup_from_cost_ratio

    tokens = float(expected_tokens(args.alpha, args.gamma))
    if args.cost_ratio is not None:
        model_flags = [f for f in ("hardware", "target", "draft", "batch", "context") if getattr(args, f) is not None]
        if model_flags:
            raise ValueError(f"--cost-ratio replaces the step-time model; drop --{', --'.join(model_flags)} or drop --cost-ratio")
        s = float(speedup_from_cost_ratio(args.alpha, args.gamma, args.cost_ratio))
        out = {"alpha": args.alpha, "gamma": args.gamma, "cost_ratio": args.cost_ratio, "tokens_per_step": tokens, "speedup": s}
        if args.json:
            _print_json(out)
        else:
            print(f"alpha {args.alpha:g}, gamma {args.gamma}, c {args.cost_ratio:g} (verification costs one decode step)")
            print(f"tokens per step {tokens:.4f}, speedup {s:.4f}")
        return 0
    for key, default in (("hardware", DEFAULT_HARDWARE), ("target", DEFAULT_TARGET), ("draft", DEFAULT_DRAFT),
                         ("batch", list(DEFAULT_BATCHES)), ("context", DEFAULT_CONTEXT_TOKENS)):
        if getattr(args, key) is None:
            setattr(args, key, default)
    dep = _deployment(args)
    batches = np.array(args.batch, dtype=float)
    times = dep.pass_times(batches, args.gamma, args.context)
    s = dep.speedup(args.alpha, args.gamma, batches, args.context)
    rows = [
        {
            "batch": b,
            "alpha": args.alpha,
            "gamma": args.gamma,
            "tokens_per_step": tokens,
            "speedup": float(s[i]),
            "t_target_s": float(times.target.total_s[i]),
            "t_draft_s": float(times.draft.total_s[i]),
            "t_verify_s": float(times.verify.total_s[i]),
            "cost_ratio": float(times.cost_ratio[i]),
            "timing_source": _row_source(dep, times, i),
            "provenance": dep.provenance(),
        }
        for i, b in enumerate(args.batch)
    ]
    if args.json:
        _print_json(rows)
        _print_notes(dep)
        return 0
    print(_describe(dep, args.context))
    print(f"alpha {args.alpha:g}, gamma {args.gamma}: {tokens:.4f} tokens per target pass\n")
    print(_table(
        ["batch", "speedup", "t_T ms", "t_D ms", "t_V ms", "c", "t_V/t_T"],
        [[r["batch"], f"{r['speedup']:.3f}", _ms(r["t_target_s"]), _ms(r["t_draft_s"]), _ms(r["t_verify_s"]),
          f"{r['cost_ratio']:.3f}", f"{r['t_verify_s'] / r['t_target_s']:.3f}"] for r in rows],
        ">>>>>>>",
    ))
    _print_notes(dep)
    return 0


def _cmd_steptime(args: argparse.Namespace) -> int:
    import numpy as np

    from .hardware import load_hardware
    from .models import format_count, get_model
    from .speedup import _plus

    hw = load_hardware(args.hardware)
    model = get_model(args.model)
    source, engine = _source(args, hw)
    batches = np.array(args.batch, dtype=float)
    t = _plus(source.step_time(model, batches, args.tokens_per_seq, args.context), engine.iteration_s)
    provenance = [source.describe(), engine.describe()]
    fallback = np.zeros(batches.shape, bool) if t.fallback is None else np.broadcast_to(t.fallback, batches.shape)
    rows = [
        {
            "batch": b,
            "tokens_per_seq": args.tokens_per_seq,
            "context": args.context,
            "step_time_s": float(t.total_s[i]),
            "compute_s": float(t.compute_s[i]),
            "memory_s": float(t.memory_s[i]),
            "overhead_s": float(t.overhead_s),
            "bound": str(t.bound[i]),
            "flop": float(t.flop[i]),
            "bytes": float(t.bytes[i]),
            "timing_source": source.name + (", roofline outside its data" if fallback[i] else ""),
            "provenance": provenance,
        }
        for i, b in enumerate(args.batch)
    ]
    if args.json:
        _print_json(rows)
    else:
        print(f"{model.name} ({format_count(model.params)} params, {model.weight_dtype}) on {hw.name}: "
              f"{args.tokens_per_seq} new token(s) per sequence over {args.context} cached")
        print("\n".join(f"step times: {line}" if i == 0 else line for i, line in enumerate(provenance)) + "\n")
        print(_table(
            ["batch", "step ms", "roofline compute ms", "roofline memory ms", "overhead ms", "bound", "FLOP/byte", "source"],
            [[r["batch"], _ms(r["step_time_s"]), _ms(r["compute_s"]), _ms(r["memory_s"]), _ms(r["overhead_s"]), r["bound"],
              f"{r['flop'] / r['bytes']:.1f}", r["timing_source"]] for r in rows],
            ">>>>><><",
        ))
        print(f"\nridge: {hw.ridge_flop_per_byte:.1f} FLOP/byte (compute-bound above it; the bound column is the roofline's)")
    for note in source.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _cmd_alpha(args: argparse.Namespace) -> int:
    from .speedup import alpha_from_acceptance_length

    if args.metrics is not None:
        if args.acceptance_length is not None:
            raise ValueError("give either --metrics FILE or --acceptance-length X with --gamma G, not both")
        return _alpha_from_metrics(args)
    if args.acceptance_length is None or args.gamma is None:
        raise ValueError("give --acceptance-length X and --gamma G (the gamma the measurement used), or --metrics FILE")
    alpha = float(alpha_from_acceptance_length(args.acceptance_length, args.gamma))
    if args.json:
        _print_json({"alpha": alpha, "acceptance_length": args.acceptance_length, "gamma": args.gamma})
    else:
        print(f"alpha = {alpha:.4f}  (mean acceptance length {args.acceptance_length:g} at gamma {args.gamma})")
    return 0


def _alpha_from_metrics(args: argparse.Namespace) -> int:
    from .metrics import read_metrics_file

    m = read_metrics_file(args.metrics, args.model_name)
    out = m.to_dict()
    if args.json:
        _print_json(out)
        return 0
    far = out["positions_far_from_alpha"]
    if m.gamma is None:
        print(f"{args.metrics}: {m.drafts:,.0f} drafts with {m.mean_draft_length:.2f} drafted tokens each on average (gamma varied: "
              f"a dynamic schedule), {m.accepted_tokens:,.0f} of {m.draft_tokens:,.0f} drafted tokens accepted ({m.acceptance_rate:.1%})")
        print(f"mean acceptance length {m.mean_acceptance_length:.4f} tokens per target pass; alpha is not identifiable from "
              "counters that mix draft lengths: measure at a fixed gamma (num_speculative_tokens without a schedule)")
    else:
        print(f"{args.metrics}: {m.drafts:,.0f} drafts of gamma = {m.gamma}, {m.accepted_tokens:,.0f} of {m.draft_tokens:,.0f} drafted tokens accepted")
        print(f"mean acceptance length {m.mean_acceptance_length:.4f} tokens per target pass; implied alpha = {m.alpha:.4f}")
    if m.accepted_per_position and m.gamma is not None:
        print()
        rows = []
        for k, (c, a) in enumerate(zip(out["per_position_cumulative"], out["per_position_conditional"])):
            rows.append([k, f"{c:.4f}", "undefined (no draft reached it)" if a is None else f"{a:.4f}",
                         f"{m.alpha ** (k + 1):.4f} / {m.alpha:.4f}"])
        print(_table(["position", "P(accepted so far)", "P(accepted | previous accepted)", "one-alpha model: alpha^(k+1) / alpha"],
                     rows, ">>><"))
    if far:
        print(f"\nwarning: the acceptance rate at position(s) {', '.join(map(str, far))} differs from alpha by more than "
              "sampling noise: acceptance is not independent per position.  For gamma <= "
              f"{m.gamma}, use the per-position rates (E = 1 + sum of P(accepted so far)) rather than one alpha.",
              file=sys.stderr)
    return 0


def _capacity_summary(cap, dep) -> list[str]:
    gb = 1e9
    lines = [f"memory: {cap.memory_bytes / gb:.0f} GB x {cap.usable_bytes / cap.memory_bytes:g} usable = {cap.usable_bytes / gb:.1f} GB; "
             f"weights {dep.target.name} {cap.target_weight_bytes / gb:.1f} GB + {dep.draft.name} {cap.draft_weight_bytes / gb:.1f} GB; "
             f"KV per sequence at {cap.context_tokens} tokens {cap.target_kv_bytes_per_seq / gb:.3f} + {cap.draft_kv_bytes_per_seq / gb:.3f} GB"]
    if not cap.target_fits:
        lines.append(f"{dep.target.name} does not fit on {dep.hardware.name} in {dep.target.weight_dtype}: "
                     f"its weights ({cap.target_weight_bytes / gb:.1f} GB) exceed the usable {cap.usable_bytes / gb:.1f} GB; "
                     "use more GPUs (tensor parallelism), a smaller dtype (fp8, int4) or a larger device")
    elif not cap.both_fit:
        lines.append(f"{dep.target.name} fits but not with the {dep.draft.name} draft beside it")
    else:
        lines.append(f"max batch at {cap.context_tokens} tokens per sequence: {cap.max_batch_without_draft} without the draft, "
                     f"{cap.max_batch_with_draft} with it")
    return lines


def _cmd_capacity(args: argparse.Namespace) -> int:
    from .capacity import capacity

    dep = _deployment(args)
    cap = capacity(dep, args.context, args.memory_util)
    if args.json:
        _print_json({"hardware": dep.hardware.name, "target": dep.target.name, "draft": dep.draft.name, **cap.to_dict()})
        return 0
    for line in _capacity_summary(cap, dep):
        print(line)
    return 0


def _cmd_schedule(args: argparse.Namespace) -> int:
    from .capacity import capacity
    from .schedule import check_vllm_pair, gamma_schedule, to_trtllm, to_vllm

    if args.json:
        if args.format not in ("table", "json"):
            raise ValueError(f"--json prints the schedule as JSON; it cannot be combined with --format {args.format}")
        args.format = "json"
    dep = _deployment(args)
    if args.format == "vllm":
        check_vllm_pair(dep)
    ranges = gamma_schedule(dep, args.alpha, args.max_batch, args.context, args.gamma_max, args.min_gain, args.rtol)
    draft_model = dep.draft.source or dep.draft.name
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    notes = []
    if cap.max_batch_with_draft < args.max_batch:
        notes.append(f"batch sizes above {cap.max_batch_with_draft} do not fit in memory with the draft at "
                     f"{cap.context_tokens} tokens per sequence (specsim capacity)")
    if args.format == "vllm":
        config = to_vllm(ranges, draft_model)
        if config is None:
            print(f"# speculation does not pay (gain >= {args.min_gain:g}) at any batch size 1..{args.max_batch}: leave speculative_config unset")
        else:
            # One schedule entry per line: the form vLLM's documentation shows.
            entries = ",\n    ".join(json.dumps(entry) for entry in config["num_speculative_tokens_per_batch_size"])
            head = json.dumps({k: v for k, v in config.items() if k != "num_speculative_tokens_per_batch_size"}, indent=2)
            print(head[:-2] + f',\n  "num_speculative_tokens_per_batch_size": [\n    {entries}\n  ]\n}}')
    elif args.format == "trtllm":
        config = to_trtllm(ranges, draft_model)
        if config is None:
            print(f"# speculation does not pay (gain >= {args.min_gain:g}) at batch 1: leave speculative_config unset")
        else:
            import yaml

            print(yaml.safe_dump({"speculative_config": config}, sort_keys=False).rstrip())
    elif args.format == "json":
        _print_json([{"start_batch": r.start_batch, "end_batch": r.end_batch, "gamma": r.gamma,
                      "min_speedup": r.min_speedup, "max_speedup": r.max_speedup} for r in ranges])
    else:
        print(_describe(dep, args.context))
        print(f"alpha {args.alpha:g}; speculate only where the predicted speedup >= {args.min_gain:g}\n")
        print(_table(["batch sizes", "gamma", "predicted speedup"],
                     [[f"{r.start_batch}-{r.end_batch}", r.gamma,
                       "off" if r.gamma == 0 else f"{r.min_speedup:.3f}-{r.max_speedup:.3f}"] for r in ranges], "<><"))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.format != "table":
        for line in dep.provenance():
            print(f"note: step times: {line}", file=sys.stderr)
    _print_notes(dep)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from .capacity import capacity, throughput_table

    dep = _deployment(args)
    table = throughput_table(dep, args.alpha, args.batch, args.context, args.gamma, args.gamma_max,
                             args.max_context, args.memory_util)
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    if args.json:
        records = table.to_dict(orient="records")
        for r in records:
            r["provenance"] = dep.provenance()
        _print_json(records)
        _print_notes(dep)
        return 0
    print(_describe(dep, args.context))
    print(f"alpha {args.alpha:g}; " + ("optimal gamma per batch size" if args.gamma is None else f"gamma fixed at {args.gamma}"))
    for line in _capacity_summary(cap, dep):
        print(line)
    print()
    rows = []
    for r in table.itertuples():
        fits = "yes" if r.fits_with_draft else ("plain only" if r.fits_without_draft else "no")
        rows.append([r.batch, r.gamma, f"{r.latency_plain_s * 1e3:.2f}", f"{r.latency_spec_s * 1e3:.2f}",
                     f"{r.tokens_per_s_seq_plain:.0f}", f"{r.tokens_per_s_seq_spec:.0f}",
                     f"{r.tokens_per_s_plain:,.0f}", f"{r.tokens_per_s_spec:,.0f}", f"{r.speedup:.2f}", fits])
    print(_table(["batch", "gamma", "ms/token plain", "ms/token spec", "tok/s/seq plain", "tok/s/seq spec",
                  "device tok/s plain", "device tok/s spec", "speedup", "fits"], rows, ">>>>>>>>><"))
    if cap.target_fits and cap.both_fit and cap.max_batch_with_draft > 0:
        best = throughput_table(dep, args.alpha, [cap.max_batch_with_draft, max(cap.max_batch_without_draft, 1)], args.context,
                                args.gamma, args.gamma_max, args.max_context, args.memory_util)
        spec_peak, plain_peak = best.tokens_per_s_spec.iloc[0], best.tokens_per_s_plain.iloc[1]
        print(f"\nat the largest batch that fits: {spec_peak:,.0f} tok/s with speculation (b = {cap.max_batch_with_draft}) "
              f"against {plain_peak:,.0f} tok/s without the draft (b = {cap.max_batch_without_draft}): "
              f"{spec_peak / plain_peak - 1:+.0%} device throughput")
    _print_notes(dep)
    return 0


def _cmd_toy(args: argparse.Namespace) -> int:
    from . import toy

    if args.experiment == "exactness":
        hand = toy.hand_example(seed=args.seed)
        result = toy.exactness(seed=args.seed)
        if args.json:
            _print_json({"hand_example": hand, "bigram": result})
            return 0
        print("hand example: p = (0.6, 0.3, 0.1), q = (0.3, 0.6, 0.1)")
        print(f"  beta = sum min(p, q) = {hand['beta']:g}; draft B accepted with probability {hand['accept_b']:g}; "
              f"residual max(0, p - q) normalised = {hand['residual']} (always A)")
        print(f"  output distribution, exact enumeration: {hand['exact_output']}  (= p)")
        mc = ", ".join(f"{v:.4f}" for v in hand["mc_output"])
        print(f"  Monte Carlo, {hand['samples']:,} steps: ({mc}); TV from p {hand['mc_tv']:.4f}, chi-square p-value {hand['mc_chi2_p']:.3f}")
        print()
        print(f"bigram target ({result['vocab']} tokens, logits N(0, 2^2)), draft logits + N(0, 1.2^2), seed {result['seed']}: "
              f"alpha under the target's stationary distribution = {result['alpha_stationary']:.4f}")
        print(f"token {result['position']} of {result['generations']:,} generations, speculative sampling with gamma = {result['gamma']}:")
        print(_table(["sampler", "TV from exact marginal", "chi-square p-value"], [
            ["speculative (gamma = 4)", f"{result['tv_speculative']:.4f}", f"{result['chi2_p_speculative']:.3f}"],
            ["plain target sampling", f"{result['tv_plain']:.4f}", f"{result['chi2_p_plain']:.3f}"],
        ], "<>>"))
        print(f"expected TV of an exact sample of this size (sampling noise): {result['tv_noise_level']:.4f}; "
              "the article's run gave 0.0101 and 0.0089")
        return 0
    if args.experiment == "tokens-per-step":
        result = toy.tokens_per_step(seed=args.seed)
        if args.json:
            _print_json(result)
            return 0
        print(f"bigram toy, seed {result['seed']}: alpha = {result['alpha_stationary']:.4f} under the target's stationary distribution")
        print(_table(["gamma", "measured tokens/pass", "formula E(alpha, gamma)", "difference", "target passes"],
                     [[r["gamma"], f"{r['measured']:.4f}", f"{r['formula']:.4f}", f"{r['relative_error']:+.2%}", f"{r['passes']:,}"]
                      for r in result["rows"]], ">>>>>"))
        print("the article: measured 1.634, 2.038, 2.297, 2.472, 2.645, 2.707 against 1.638, 2.044, 2.303, 2.469, 2.641, 2.712")
        return 0
    result = toy.realign(seed=args.seed)
    if args.json:
        _print_json(result)
        return 0
    print(f"re-aligning a stale rank-{result['rank']} draft to a fine-tuned {result['vocab']}-token bigram target, seed {result['seed']}")
    print("alpha and tokens per step (gamma = 4) under the fine-tuned target's stationary distribution\n")
    stale = result["rows"][0]["tokens_per_step_gamma4"]
    print(_table(["draft", "alpha", "tokens/step", "vs stale", "greedy agreement"],
                 [[r["draft"], f"{r['alpha']:.3f}", f"{r['tokens_per_step_gamma4']:.2f}",
                   f"{r['tokens_per_step_gamma4'] / stale - 1:+.0%}", f"{r['greedy_agreement']:.3f}"] for r in result["rows"]],
                 "<>>>>"))
    print("\nthe article: stale 2.39, SFT 3.33, TVD 3.96 (about 0.88 acceptance), KL objectives in between, on-policy no extra gain")
    return 0


def _cmd_acceptance(args: argparse.Namespace) -> int:
    import numpy as np

    from .sampling import acceptance_rate_from_logits
    from .speedup import expected_tokens

    from .sampling import load_logits

    target = load_logits(args.target_logits, "target logits")
    draft = load_logits(args.draft_logits, "draft logits")
    if target.shape != draft.shape:
        raise ValueError(f"target and draft logits must cover the same positions and vocabulary, got {target.shape} and {draft.shape}")
    rates = acceptance_rate_from_logits(target, draft, args.temperature)
    alpha = float(rates.mean())
    gammas = np.arange(1, 9)
    independent = expected_tokens(alpha, gammas)
    # If acceptance were the same at every position of a step (fully correlated within a step),
    # E would be the mean of E(alpha_i, gamma): an upper bound beside the independent estimate.
    correlated = expected_tokens(rates[:, None], gammas[None, :]).mean(axis=0)
    out = {
        "positions": int(len(rates)),
        "vocab": int(target.shape[1]),
        "temperature": args.temperature,
        "alpha": alpha,
        "alpha_std": float(rates.std()),
        "alpha_percentiles": {str(q): float(np.percentile(rates, q)) for q in (10, 25, 50, 75, 90)},
        "tokens_per_step": [{"gamma": int(g), "independent": float(e), "correlated_bound": float(c)}
                            for g, e, c in zip(gammas, independent, correlated)],
    }
    if args.json:
        _print_json(out)
        return 0
    print(f"{out['positions']:,} positions x {out['vocab']:,} tokens at temperature {args.temperature:g}")
    pct = out["alpha_percentiles"]
    print(f"alpha = mean of sum min(p, q) = {alpha:.4f} (std {out['alpha_std']:.3f}; 10/50/90th percentiles "
          f"{pct['10']:.3f} / {pct['50']:.3f} / {pct['90']:.3f})\n")
    print(_table(["gamma", "tokens/step (independent, alpha)", "if acceptance is shared within a step"],
                 [[r["gamma"], f"{r['independent']:.3f}", f"{r['correlated_bound']:.3f}"] for r in out["tokens_per_step"]], ">>>"))
    print(f"\nnext: specsim optimal-gamma --alpha {alpha:.3f} ...")
    return 0


def _harness():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("the timing harness needs torch: pip install 'specsim[harness]' (on a CPU-only machine: pip install torch==2.13.0 first)") from None
    from . import harness

    return harness


def _cmd_measure(args: argparse.Namespace) -> int:
    import csv
    import io

    _harness()
    from ._io import atomic_write_text, check_output
    from .harness.timing import CSV_COLUMNS, measure_sweep
    from .models import get_model

    check_output(args.out, (".csv",))  # before the sweep: a long GPU run must not be lost at the end
    shape = get_model(args.model, weight_dtype=args.dtype, kv_dtype=args.dtype)
    rows = measure_sweep(shape, args.batch, args.tokens_per_seq, args.context, dtype=args.dtype, device=args.device,
                         repeats=args.repeats, warmup=args.warmup, cuda_graphs=args.cuda_graphs, seed=args.seed)
    if not rows:
        raise ValueError("no configuration fitted in memory; nothing written")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(args.out, buffer.getvalue())
    if args.json:
        _print_json({"configurations": len(rows), "device_name": rows[0]["device_name"], "out": str(args.out)})
    else:
        print(f"{len(rows)} configurations measured on {rows[0]['device_name']} -> {args.out}")
    return 0


def _cmd_measure_loop(args: argparse.Namespace) -> int:
    _harness()
    from .harness.specloop import run_speculative_loop
    from .models import get_model
    from .speedup import Deployment, expected_tokens, speedup_from_times

    target = get_model(args.target, weight_dtype=args.dtype, kv_dtype=args.dtype)
    draft = get_model(args.draft, weight_dtype=args.dtype, kv_dtype=args.dtype)
    profile = None
    if args.hardware:
        from .hardware import load_hardware

        profile = load_hardware(args.hardware)
    results = []
    for batch in args.batch:
        r = run_speculative_loop(target, draft, args.alpha, args.gamma, batch, args.context, tokens=args.tokens,
                                 dtype=args.dtype, device=args.device, seed=args.seed, repeats=args.repeats)
        r["formula_speedup_from_measured_passes"] = float(speedup_from_times(args.alpha, args.gamma, r["t_target_s"],
                                                                             r["t_draft_s"], r["t_verify_s"]))
        r["expected_tokens_per_pass"] = float(expected_tokens(args.alpha, args.gamma))
        if profile is not None:
            dep = Deployment(profile, target, draft)
            r["predicted_speedup"] = float(dep.speedup(args.alpha, args.gamma, batch, args.context + args.tokens // 2))
            r["profile"] = profile.name
        results.append(r)
    if args.json:
        _print_json(results)
        return 0
    where = "CPU" if results[0]["device"] == "cpu" else results[0]["device"]
    print(f"end-to-end speculative loop on the {where}: {target.name} target, {draft.name} draft, {args.dtype}, "
          f"alpha {args.alpha:g}, gamma {args.gamma}, context {args.context} + {args.tokens} generated tokens")
    headers = ["batch", "ms/token plain", "ms/token spec", "measured speedup", "tokens/pass (E)", "S from measured t_T,t_D,t_V"]
    if profile is not None:
        headers.append(f"predicted ({profile.name})")
    rows = []
    for r in results:
        row = [r["batch"], f"{r['plain_s_per_token'] * 1e3:.3f}", f"{r['spec_s_per_token'] * 1e3:.3f}", f"{r['measured_speedup']:.3f}",
               f"{r['measured_tokens_per_pass']:.3f} ({r['expected_tokens_per_pass']:.3f})", f"{r['formula_speedup_from_measured_passes']:.3f}"]
        if profile is not None:
            row.append(f"{r['predicted_speedup']:.3f}")
        rows.append(row)
    print(_table(headers, rows, ">" * len(headers)))
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import io

    from ._io import atomic_write_many, check_output
    from .calibrate import calibrate, implausible, profile_yaml, residual_figure
    from .hardware import load_hardware

    out = check_output(args.out, (".yaml", ".yml"))
    check_output(out.with_name(out.stem + "-residuals.png"))
    name = args.name or out.stem
    from .hardware import builtin_dir

    datasheet = {p.stem for p in builtin_dir().glob("*.yaml")}
    if name in datasheet:
        raise ValueError(f"profile name {name!r} is a built-in datasheet profile; choose another --name")
    result = calibrate(args.measurements, load_hardware(args.hardware), holdout=args.holdout, seed=args.seed,
                       per_layer=args.per_layer, name=name)
    plot = out.with_name(out.stem + "-residuals.png")
    buffer = io.BytesIO()
    residual_figure(result).savefig(buffer, format="png", dpi=120)
    # The profile and its residual plot land together or not at all.
    atomic_write_many([(out, profile_yaml(result.profile).encode("utf-8")), (plot, buffer.getvalue())])
    s = result.summary()
    warnings = implausible(result)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        _print_json({**s, "profile": str(out), "residual_plot": str(plot), "name": name, "warnings": warnings})
        return 0
    p = result.profile
    print(f"{args.measurements}: {s['points']} measurements; fitted on {s['train_points']}, judged on {s['holdout_points']} held out")
    print(f"fitted: compute_eff {p.compute_eff:.3f}, bandwidth_eff {p.bandwidth_eff:.3f}, overhead {p.overhead_s * 1e3:.4f} ms"
          + (f" + {p.per_layer_overhead_s * 1e6:.2f} us/layer" if s["per_layer_overhead_fitted"] else " (no per-layer term)"))
    print(_table(["held-out points", "mean abs error", "worst error"], [
        [f"before: {result.base.name} as shipped", f"{s['holdout_before']['mape']:.1%}", f"{s['holdout_before']['max_abs_error']:.1%}"],
        [f"after: {name}", f"{s['holdout_after']['mape']:.1%}", f"{s['holdout_after']['max_abs_error']:.1%}"],
    ], "<>>"))
    print(f"wrote {out} and {plot}")
    return 0


def _cmd_compose_kernels(args: argparse.Namespace) -> int:
    import io

    import pandas as pd

    from ._io import atomic_write_many, check_output
    from .hardware import load_hardware
    from .models import get_model
    from .timing.kernels import KernelSource, compose_steps

    out = Path(args.out)
    if not out.is_dir():
        raise ValueError(f"--out {args.out!r} is not a folder")
    jobs = []
    for device in args.hardware:
        path = check_output(out / f"{device}-{args.engine}-kernel-steps.csv")
        jobs.append((KernelSource(load_hardware(device), args.engine, progress=_progress), path))
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
        _print_json(report)
    else:
        for r in report:
            covered = ", ".join(f"{m} ({n})" for m, n in r["models"].items())
            print(f"{r['hardware']}: {r['steps']} steps composed -> {r['file']}  [{covered}]; {r['source']}")
    return 0


def _cmd_hardware(args: argparse.Namespace) -> int:
    from .hardware import builtin_names, load_hardware, profile_to_mapping

    if args.action == "show":
        hw = load_hardware(args.name)
        if args.json:
            _print_json({**profile_to_mapping(hw), "ridge_flop_per_byte": hw.ridge_flop_per_byte})
            return 0
        print(f"{hw.name}: {hw.description}")
        print(f"  dense 16-bit peak   {hw.peak_flop_per_s / 1e12:9.4g} TFLOP/s")
        if hw.peak_fp8_flop_per_s:
            print(f"  dense FP8 peak      {hw.peak_fp8_flop_per_s / 1e12:9.1f} TFLOP/s")
        print(f"  memory bandwidth    {hw.peak_bytes_per_s / 1e12:9.3f} TB/s")
        print(f"  memory capacity     {hw.memory_bytes / 1e9:9.1f} GB")
        print(f"  efficiencies        compute {hw.compute_eff:.3g}, bandwidth {hw.bandwidth_eff:.3g}")
        print(f"  overhead            {hw.overhead_s * 1e3:.3f} ms per forward pass"
              + (f" + {hw.per_layer_overhead_s * 1e6:.2f} us per layer" if hw.per_layer_overhead_s else ""))
        print(f"  ridge               {hw.ridge_flop_per_byte:.1f} FLOP/byte (datasheet peaks: {hw.peak_ridge_flop_per_byte:.1f})")
        for key, url in hw.sources.items():
            print(f"  source of {key}: {url}")
        if hw.calibration:
            print(f"  calibrated from {hw.calibration.get('source', '?')} on {hw.calibration.get('date', '?')}")
        if hw.notes:
            print("  " + hw.notes.replace("\n", "\n  "))
        return 0
    rows = []
    for name in builtin_names():
        hw = load_hardware(name)
        rows.append([name, f"{hw.peak_flop_per_s / 1e12:.4g}", f"{hw.peak_bytes_per_s / 1e12:.3g}", f"{hw.memory_bytes / 1e9:.0f}",
                     f"{hw.compute_eff:.2f}/{hw.bandwidth_eff:.2f}", f"{hw.overhead_s * 1e3:.3f}", f"{hw.ridge_flop_per_byte:.0f}",
                     "calibrated" if hw.calibration else "datasheet + article preset"])
    if args.json:
        _print_json([profile_to_mapping(load_hardware(name)) for name in builtin_names()])
        return 0
    print(_table(["name", "TFLOP/s", "TB/s", "GB", "eff c/bw", "overhead ms", "ridge", "efficiencies from"], rows, "<>>>>>><"))
    print("\nshow one: specsim hardware show NAME; use your own: --hardware path/to/profile.yaml")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from .models import builtin_model_names, format_count, get_model

    if args.action == "show":
        model = get_model(args.name)
        if args.json:
            _print_json(model.to_dict())
            return 0
        d = model.to_dict()
        width = max(map(len, d))
        for key, value in d.items():
            print(f"{key:<{width}}  {value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{key:<{width}}  {value}")
        return 0
    models = [get_model(n) for n in builtin_model_names()]
    if args.json:
        _print_json([m.to_dict() for m in models])
        return 0
    print(_table(
        ["name", "params", "layers", "hidden", "heads/kv", "head_dim", "tied", "weights GB", "KV kB/token"],
        [[m.name, format_count(m.params), m.n_layers, m.hidden_size, f"{m.n_heads}/{m.n_kv_heads}", m.head_dim,
          "yes" if m.tie_embeddings else "no", f"{m.weight_bytes / 1e9:.2f}", f"{m.kv_bytes_per_token / 1e3:.1f}"] for m in models],
        "<>>>>><>>",
    ))
    print("\nshow one: specsim models show NAME; use your own: --target path/to/config.json")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .article import reproduce

    checks = reproduce()
    if args.json:
        _print_json([
            {"quantity": c.quantity, "quoted": c.quoted, "value": c.value, "interval": c.interval, "unit": c.unit, "passed": c.passed}
            for c in checks
        ])
    else:
        print("the article's numbers from its preset: H100 SXM (989 TFLOP/s x 0.6, 3.35 TB/s x 0.8, 0.5 ms/pass),")
        print("article-8b target, article-1b draft, context 1128 tokens\n")
        print(_table(
            ["quantity", "quoted", "specsim", "must land in", "result"],
            [[c.quantity, c.quoted, f"{c.value:.4f} {c.unit}".strip(), c.interval, "pass" if c.passed else "FAIL"] for c in checks],
            "<<><<",
        ))
        failed = sum(not c.passed for c in checks)
        print(f"\n{len(checks) - failed}/{len(checks)} pass")
    return 0 if all(c.passed for c in checks) else 1


def _cmd_figures(args: argparse.Namespace) -> int:
    import time

    from .figures import FIGURES, make_all

    if args.list:
        if args.json:
            _print_json([spec.name for spec in FIGURES])
        else:
            for spec in FIGURES:
                print(spec.name)
        return 0
    start = time.perf_counter()
    paths = make_all(args.out, args.only)
    elapsed = time.perf_counter() - start
    if args.json:
        _print_json([str(p) for p in paths])
    else:
        for path in paths:
            print(path)
    print(f"{len(paths)} files in {elapsed:.1f} s", file=sys.stderr)
    return 0


# -- parser ----------------------------------------------------------------------
def _add_deployment_args(p: argparse.ArgumentParser, *, defaults: bool = True, batch: bool = True) -> None:
    p.add_argument("--hardware", default=DEFAULT_HARDWARE if defaults else None,
                   help=f"built-in profile name or path to a YAML profile (default {DEFAULT_HARDWARE}; list: specsim hardware)")
    p.add_argument("--target", default=DEFAULT_TARGET if defaults else None,
                   help=f"target model: built-in name or path to a Hugging Face config.json (default {DEFAULT_TARGET})")
    p.add_argument("--draft", default=DEFAULT_DRAFT if defaults else None,
                   help=f"draft model: built-in name or path to a config.json (default {DEFAULT_DRAFT})")
    if batch:
        p.add_argument("--batch", type=_batches, default=list(DEFAULT_BATCHES) if defaults else None,
                       help=f"comma-separated batch sizes (default {','.join(map(str, DEFAULT_BATCHES))})")
    p.add_argument("--context", type=_context, default=DEFAULT_CONTEXT_TOKENS if defaults else None,
                   help=f"cached tokens per sequence, L (default {DEFAULT_CONTEXT_TOKENS}: a 1000-token prompt plus half of 256 generated)")
    _add_timing_args(p)


def _add_timing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timing", default=DEFAULT_TIMING, metavar="SOURCE",
                   help=f"step-time source: {TIMING_CHOICES} (default {DEFAULT_TIMING}: the roofline for decode steps, "
                   "measured kernels for the cost of verification; see README, Fidelity)")
    p.add_argument("--engine", choices=list(ENGINES), default=DEFAULT_ENGINE,
                   help=f"serving engine whose per-iteration CPU time and kernels apply (default {DEFAULT_ENGINE}; none: add nothing)")
    p.add_argument("--engine-overhead-ms", type=_nonneg_float,
                   help="the engine's time per iteration, ms, replacing the --engine preset's fitted value")


def _add_memory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-context", type=_int_at_least(1, "max-context", MAX_CONTEXT),
                   help="tokens each sequence reserves (prompt + completion), for the memory check (default: --context)")
    p.add_argument("--memory-util", type=_fraction, default=DEFAULT_MEMORY_UTILIZATION,
                   help=f"fraction of device memory the engine uses (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's gpu_memory_utilization)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specsim",
        description="Roofline model of speculative decoding: step times, speedup and the optimal gamma.",
        epilog="Start with: specsim optimal-gamma --alpha 0.8",
    )
    parser.add_argument("--version", action="version", version=f"specsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("optimal-gamma", help="the best gamma per batch size, with its speedup and step times",
                       description="The speedup-maximising gamma per batch size; gamma 0 means turn speculation off.")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, help=f"per-token acceptance rate in [0, 1] (default {DEFAULT_ALPHA})")
    _add_deployment_args(p)
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--rtol", type=_nonneg_float, default=0.0,
                   help="pick the smallest gamma within this fraction of the best speedup (default 0: exact argmax)")
    _add_memory_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_optimal_gamma)

    p = sub.add_parser("speedup", help="speedup of one (alpha, gamma), from a cost ratio or the step-time model",
                       description="Speedup for a given alpha and gamma: from --cost-ratio c (closed form, "
                       "verification costs one decode step) or from the step-time model per batch size.")
    p.add_argument("--alpha", type=_alpha, required=True, help="per-token acceptance rate in [0, 1]")
    p.add_argument("--gamma", type=_gamma, required=True, help="drafted tokens per step, >= 0")
    p.add_argument("--cost-ratio", type=_nonneg_float, help="c = t_D / t_T; replaces the step-time model")
    _add_deployment_args(p, defaults=False)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_speedup)

    p = sub.add_parser("steptime", help="modelled time of one forward pass, with its compute, memory and overhead parts")
    p.add_argument("--hardware", default=DEFAULT_HARDWARE, help=f"profile name or YAML path (default {DEFAULT_HARDWARE})")
    p.add_argument("--model", default=DEFAULT_TARGET, help=f"model name or config.json path (default {DEFAULT_TARGET})")
    p.add_argument("--batch", type=_batches, default=list(DEFAULT_BATCHES), help="comma-separated batch sizes")
    p.add_argument("--tokens-per-seq", type=_int_at_least(1, "tokens-per-seq", MAX_GAMMA + 1), default=1,
                   help="new tokens per sequence, q (1: decode; gamma+1: verification; default 1)")
    p.add_argument("--context", type=_context, default=DEFAULT_CONTEXT_TOKENS, help=f"cached tokens per sequence (default {DEFAULT_CONTEXT_TOKENS})")
    _add_timing_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_steptime)

    p = sub.add_parser("alpha", help="alpha from a measured mean acceptance length or a saved vLLM /metrics page",
                       description="Invert E(alpha, gamma): vLLM's mean acceptance length is 1 + accepted/drafts. "
                       "With --metrics, read vLLM's spec_decode counters and per-position acceptance.")
    p.add_argument("--acceptance-length", type=_float, help="mean tokens per verification pass, in [1, gamma+1]")
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA), help="speculative tokens per step of the measurement")
    p.add_argument("--metrics", help="a saved Prometheus /metrics page of a vLLM server")
    p.add_argument("--model-name", help="with --metrics: the model_name label to read, if several")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_alpha)

    p = sub.add_parser("capacity", help="memory: do the models fit, and the largest batch with and without the draft")
    _add_deployment_args(p, batch=False)
    p.add_argument("--memory-util", type=_fraction, default=DEFAULT_MEMORY_UTILIZATION,
                   help=f"fraction of device memory the engine uses (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's gpu_memory_utilization)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_capacity)

    p = sub.add_parser("schedule", help="batch-size-dependent gamma schedule for vLLM or TensorRT-LLM",
                       description="The optimal gamma for every batch size 1..--max-batch, merged into ranges, "
                       "printed as a vLLM speculative_config or a TensorRT-LLM speculative_config.")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, help=f"per-token acceptance rate (default {DEFAULT_ALPHA})")
    _add_deployment_args(p, batch=False)
    p.add_argument("--max-batch", type=_int_at_least(1, "max-batch", MAX_BATCH), default=DEFAULT_MAX_BATCH,
                   help=f"largest batch size (max_num_seqs) to schedule (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--min-gain", type=_float, default=1.0,
                   help="speculate only where the predicted speedup is at least this (e.g. 1.05; default 1)")
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--rtol", type=_nonneg_float, default=DEFAULT_SCHEDULE_RTOL,
                   help=f"take the smallest gamma within this fraction of the best speedup (default {DEFAULT_SCHEDULE_RTOL}; 0: exact argmax)")
    _add_memory_args(p)
    p.add_argument("--format", choices=["vllm", "trtllm", "json", "table"], default="table", help="output form (default table)")
    p.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    p.set_defaults(func=_cmd_schedule)

    p = sub.add_parser("compare", help="latency and throughput with and without speculation, per batch size")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, help=f"per-token acceptance rate (default {DEFAULT_ALPHA})")
    _add_deployment_args(p)
    p.add_argument("--gamma", type=_gamma, help="fixed gamma (default: the optimal gamma per batch size)")
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})")
    _add_memory_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("toy", help="the article's seeded toy experiments: exactness, tokens per step, draft re-alignment")
    p.add_argument("experiment", choices=["exactness", "tokens-per-step", "distill"])
    p.add_argument("--seed", type=_int_at_least(0, "seed", 2**32 - 1), default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_toy)

    p = sub.add_parser("acceptance", help="alpha measured from target and draft logits at a temperature",
                       description="Read two [positions, vocab] logit arrays (.npy or .npz) over the same positions and "
                       "vocabulary; print alpha = mean sum min(p, q), its spread and tokens per step for gamma 1..8.")
    p.add_argument("--target-logits", required=True, help=".npy or .npz file, shape [positions, vocab]")
    p.add_argument("--draft-logits", required=True, help=".npy or .npz file, same shape")
    p.add_argument("--temperature", type=_nonneg_float, default=1.0, help="serving temperature (0 = greedy; default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_acceptance)

    p = sub.add_parser("measure", help="time real forward passes with the PyTorch harness (needs torch) and write a CSV",
                       description="Build a Llama-architecture decoder with the model's shape and random weights, and time "
                       "one forward pass per (batch, tokens per sequence, context).")
    p.add_argument("--model", required=True, help="built-in model name or config.json path (on a CPU: tiny-28m, tiny-5m)")
    p.add_argument("--batch", type=_batches, default=[1, 2, 4, 8], help="comma-separated batch sizes (default 1,2,4,8)")
    p.add_argument("--tokens-per-seq", type=_int_list(1, "tokens-per-seq", MAX_GAMMA + 1), default=[1], help="comma-separated q values (default 1)")
    p.add_argument("--context", type=_int_list(0, "context", MAX_CONTEXT), default=[0, 512], help="comma-separated cached lengths (default 0,512)")
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16", help="weights and KV cache (default bf16; fp32 is faster on most CPUs)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="default cuda")
    p.add_argument("--repeats", type=_int_at_least(1, "repeats", 10_000), default=10, help="timed passes per configuration (default 10)")
    p.add_argument("--warmup", type=_int_at_least(0, "warmup", 10_000), default=3, help="untimed passes first (default 3)")
    p.add_argument("--cuda-graphs", action="store_true", help="capture each pass in a CUDA graph and time its replay")
    p.add_argument("--seed", type=_int_at_least(0, "seed", 2**32 - 1), default=0)
    p.add_argument("--out", required=True, help="CSV file to write (atomically; checked before the sweep starts)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_measure)

    p = sub.add_parser("measure-loop", help="time an end-to-end speculative loop (controlled acceptance) against plain decoding")
    p.add_argument("--target", default="tiny-28m", help="target model (default tiny-28m, CPU-sized)")
    p.add_argument("--draft", default="tiny-5m", help="draft model (default tiny-5m)")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, help=f"acceptance probability per drafted token (default {DEFAULT_ALPHA})")
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA), default=4, help="drafted tokens per step (default 4)")
    p.add_argument("--batch", type=_batches, default=[1, 4], help="comma-separated batch sizes (default 1,4)")
    p.add_argument("--context", type=_context, default=256, help="cached tokens before generating (default 256)")
    p.add_argument("--tokens", type=_int_at_least(1, "tokens", 100_000), default=48, help="tokens generated per sequence (default 48)")
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="fp32", help="default fp32")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cpu", help="default cpu")
    p.add_argument("--repeats", type=_int_at_least(1, "repeats", 10_000), default=3)
    p.add_argument("--seed", type=_int_at_least(0, "seed", 2**32 - 1), default=0)
    p.add_argument("--hardware", help="profile to predict the speedup with (e.g. a calibrated cpu profile)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_measure_loop)

    p = sub.add_parser("calibrate", help="fit a profile's efficiencies and overheads to measured step times",
                       description="Robust least squares on measured step times; held-out points judge the fit before and after.")
    p.add_argument("measurements", help="CSV from specsim measure or specsim compose-kernels")
    p.add_argument("--hardware", required=True, help="base profile whose datasheet peaks are kept")
    p.add_argument("--out", required=True, help="profile YAML to write (a residual plot is written beside it)")
    p.add_argument("--name", help="name of the fitted profile (default: the --out file's stem)")
    p.add_argument("--holdout", type=_fraction, default=0.25, help="fraction of points held out of the fit (default 0.25)")
    p.add_argument("--per-layer", choices=["auto", "yes", "no"], default="auto", help="fit a per-layer overhead (default auto)")
    p.add_argument("--seed", type=_int_at_least(0, "seed", 2**32 - 1), default=0, help="seed of the train / held-out split")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_calibrate)

    p = sub.add_parser("compose-kernels", help="per-step times composed from AIConfigurator's measured kernels, as a CSV for calibrate")
    p.add_argument("--hardware", type=lambda t: [d.strip() for d in t.split(",") if d.strip()], default=["h100-sxm"],
                   help="comma-separated profiles whose device the database has (default h100-sxm)")
    p.add_argument("--engine", choices=["vllm", "sglang", "trtllm"], default="vllm", help="whose kernels (default vllm)")
    p.add_argument("--models", type=lambda t: [m.strip() for m in t.split(",") if m.strip()],
                   default=["llama-3.2-1b", "llama-3.1-8b"], help="comma-separated models (default llama-3.2-1b,llama-3.1-8b)")
    p.add_argument("--out", required=True, help="output folder for <hardware>-<engine>-kernel-steps.csv")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_compose_kernels)

    p = sub.add_parser("hardware", help="list hardware profiles, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one profile")
    p.add_argument("name", nargs="?", help="profile name or YAML path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_hardware)

    p = sub.add_parser("models", help="list built-in model shapes, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one model")
    p.add_argument("name", nargs="?", help="model name or config.json path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("figures", help="regenerate every figure (PNG and SVG) with fixed file names")
    p.add_argument("--out", default="figures", help="output folder, created if missing (default: figures)")
    p.add_argument("--only", type=lambda text: [n.strip() for n in text.split(",") if n.strip()],
                   help="comma-separated figure names (see --list)")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument("--json", action="store_true", help="print JSON (the files written, or with --list the names)")
    p.set_defaults(func=_cmd_figures)

    p = sub.add_parser("reproduce", help="recompute every number the reference article quotes; exit 0 only if all match")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help, --version or a usage error
        return int(stop.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "action", None) == "show" and not args.name:
        print(f"specsim {args.command} show: error: give a NAME (list them with: specsim {args.command})", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. specsim ... | head
        return 0
    except KeyError as err:
        message = err.args[0] if err.args else str(err)
    except (ValueError, OSError) as err:
        message = str(err)
    print(f"specsim {args.command}: error: {message}", file=sys.stderr)
    return 2
