"""What each ``specsim`` subcommand does: call the library, print the result.

One ``run_<command>(args)`` per subcommand of :mod:`specsim.cli`, which parses
the arguments and dispatches here.  No physics is computed here: every number
printed comes from a library module (speedup, timing, capacity, schedule,
metrics, calibrate, fidelity, harness); :mod:`specsim.report` formats it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .defaults import DEFAULT_BATCHES, DEFAULT_CONTEXT_TOKENS, DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET

from .capacity import reserved_context
from .speedup import optimal_gamma, optimal_tree
from .report import (capacity_summary, describe, expected, ms, print_json, print_notes, progress, row_source, short_bound,
                     table, why_off)

__all__ = ["run_optimal_gamma", "run_speedup", "run_steptime", "run_alpha", "run_capacity", "run_schedule", "run_compare", "run_toy", "run_acceptance", "run_measure", "run_measure_loop", "run_calibrate", "run_compose_kernels", "run_hardware", "run_models", "run_reproduce", "run_figures"]


def run_optimal_gamma(args: argparse.Namespace) -> int:
    import numpy as np

    from .capacity import capacity

    from .acceptance import parse_tree

    acc, acc_label = resolve_acceptance(args)
    tree = parse_tree(args.tree)
    dep = _deployment(args)
    batches = np.array(args.batch, dtype=float)
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    _require_target_fits(dep, cap)
    if tree is not None:
        return _optimal_tree(args, dep, acc, acc_label, tree, cap)
    if args.sibling_factor is not None:
        raise ValueError("--sibling-factor applies to --tree topk:K,depth:D,tokens:N only")
    best = optimal_gamma(dep, acc, batches, args.context, args.gamma_max, args.rtol)
    times = best.times
    other = _other_draft_tp(dep)
    other_best = optimal_gamma(other, acc, batches, args.context, args.gamma_max, args.rtol) if other else None
    rows = []
    for i, batch in enumerate(args.batch):
        gamma = int(best.gamma[i])
        row = {
            "batch": batch,
            "gamma": gamma,
            "speedup": float(best.speedup[i]),
            "tokens_per_step": float(expected(acc, gamma)),
            "acceptance": acc_label,
            "drafter": dep.drafter.kind,
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
            "timing_source": row_source(dep, times, i),
            "provenance": dep.provenance(),
        }
        if other_best is not None:
            row[f"speedup_draft_tp{other.draft.tp}"] = float(other_best.speedup[i])
            row[f"gamma_draft_tp{other.draft.tp}"] = int(other_best.gamma[i])
        rows.append(row)
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    print(describe(dep, args.context))
    print(f"{acc_label}; gamma searched over 0..{best.gamma_max}" + (f" (smallest within {args.rtol:g} of best)" if args.rtol else ""))
    if best.gamma_max < args.gamma_max:
        print(f"note: acceptance is measured for {best.gamma_max} positions: gamma is not searched past them (no extrapolation)")
    for line in capacity_summary(cap, dep):
        print(line)
    print()
    headers = ["batch", "gamma", "speedup", "t_T ms", "t_D ms", "t_V ms", "c", "bound T/D/V", "recommendation"]
    table_rows = []
    for r in rows:
        limit = " (at --gamma-max; raise it)" if best.gamma_max == args.gamma_max else " (at the last measured position)"
        rec = r["recommendation"] + (limit if r["at_gamma_max"] else "")
        if not r["fits_with_draft"]:
            rec += "; does not fit in memory" + (" with the draft" if r["fits_without_draft"] else "")
        bounds = "/".join(short_bound(r[k]) for k in ("bound_target", "bound_draft", "bound_verify"))
        table_rows.append(
            [r["batch"], r["gamma"], f"{r['speedup']:.3f}", ms(r["t_target_s"]), ms(r["t_draft_s"]),
             ms(r["t_verify_s"]), f"{r['cost_ratio']:.3f}", bounds, rec]
        )
    print(table(headers, table_rows, ">>>>>>><<"))
    off = [r["batch"] for r in rows if r["gamma"] == 0]
    if off:
        print(f"\nspeculation does not pay at batch {', '.join(map(str, off))}: {why_off(rows)}")
    peak = best.peak
    if peak > 0 and best.speedup[peak] > best.speedup[0] * 1.01:
        why = (f": a decode step at batch {args.batch[0]} reads few of {dep.target.name}'s experts and verifying gamma+1 "
               "tokens per sequence reads many more; at larger batches decode already reads most of them"
               if dep.target.is_moe else "")
        print(f"\nspeculation pays most at batch {args.batch[peak]} ({best.speedup[peak]:.3f}x with gamma "
              f"{int(best.gamma[peak])}), not at batch {args.batch[0]}{why}")
    if other_best is not None:
        pairs = ", ".join(f"{b}: {s:.3f} (gamma {g})" for b, s, g in zip(args.batch, other_best.speedup, other_best.gamma))
        print(f"\nwith the draft at --draft-tp {other.draft.tp} instead of {dep.draft.tp}: speedup by batch {pairs}")
    print_notes(dep)
    return 0


def _optimal_tree(args, dep, acc, acc_label, bounds, cap) -> int:
    """optimal-gamma --tree: the best tree within the bounds per batch size, next to the best chain."""
    import numpy as np

    batches = np.array(args.batch, dtype=float)
    trees, speedup, tokens = optimal_tree(dep, acc, bounds, batches, args.context, args.sibling_factor, args.rtol)
    chain = optimal_gamma(dep, acc, batches, args.context, args.gamma_max, args.rtol)
    rows = []
    for i, batch in enumerate(args.batch):
        t = trees[i]
        rows.append({
            "batch": batch,
            "tree": None if t is None else {"topk": t.topk, "depth": t.depth, "tokens": t.tokens},
            "speedup": float(speedup[i]),
            "tokens_per_step": float(tokens[i]),
            "chain_gamma": int(chain.gamma[i]),
            "chain_speedup": float(chain.speedup[i]),
            "fits_with_draft": batch <= cap.max_batch_with_draft,
            "recommendation": "turn speculation off" if t is None else (
                f"chain, gamma={t.depth}" if t.is_chain else f"tree topk={t.topk} depth={t.depth} tokens={t.tokens}"),
            "acceptance": acc_label,
            "drafter": dep.drafter.kind,
            "provenance": dep.provenance(),
        })
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    from .acceptance import DEFAULT_SIBLING_FACTOR

    print(describe(dep, args.context))
    sib = DEFAULT_SIBLING_FACTOR if args.sibling_factor is None else args.sibling_factor
    print(f"{acc_label}; trees within top-k {bounds.topk}, depth {bounds.depth}, {bounds.tokens} verified tokens; sibling factor "
          f"{sib:g}" + (" (an assumption; --sibling-factor)" if args.sibling_factor is None else ""))
    for line in capacity_summary(cap, dep):
        print(line)
    print()
    print(table(
        ["batch", "best tree", "tokens/step", "speedup", "best chain", "chain speedup", "recommendation"],
        [[r["batch"], "-" if r["tree"] is None else ("chain" if r["tree"]["topk"] == 1 else
          f"k{r['tree']['topk']} d{r['tree']['depth']} n{r['tree']['tokens']}"), f"{r['tokens_per_step']:.3f}",
          f"{r['speedup']:.3f}", f"gamma {r['chain_gamma']}", f"{r['chain_speedup']:.3f}",
          r["recommendation"] + ("" if r["fits_with_draft"] else "; does not fit in memory with the draft")] for r in rows],
        "><>>>><",
    ))
    print("\nE(tree) is exact for independent acceptance per depth and sibling rank (specsim.acceptance); a tree round "
          "drafts depth levels of top-k tokens per sequence and verifies the chosen tokens in one pass")
    print_notes(dep)
    return 0


def _require_target_fits(dep, cap) -> None:
    """Refuse step-time answers for a target whose weights cannot be held: name the TP that can."""
    from .capacity import smallest_fitting_tp
    from .models import BYTES_PER_ELEMENT

    if cap.target_fits:
        return
    n = smallest_fitting_tp(dep, cap.context_tokens, cap.usable_bytes / cap.memory_bytes)
    where = f"{dep.hardware.name} x {dep.target.tp}" if dep.target.tp > 1 else f"one {dep.hardware.name}"
    smaller = [d for d in ("fp8", "int4") if BYTES_PER_ELEMENT[d] < BYTES_PER_ELEMENT[dep.target.weight_dtype]]
    fix = (f"--tp {n} fits" if n is not None else
           f"no tensor-parallel size within one node ({dep.hardware.max_devices} GPUs) fits; "
           + (f"try --weight-dtype {' or '.join(smaller)}, or " if smaller else "") + "a device with more memory")
    raise ValueError(f"{dep.target.name} in {dep.target.weight_dtype} ({cap.target_weight_bytes / 1e9:.1f} GB of weights per GPU) "
                     f"does not fit on {where} ({cap.usable_bytes / 1e9:.1f} GB usable per GPU): {fix}")


def _other_draft_tp(dep):
    """The same deployment with the draft at the other TP engines allow (1 or the target's), or None on one GPU."""
    import dataclasses

    if dep.target.tp == 1 or dep.draft is None:
        return None
    other = dep.target.tp if dep.draft.tp == 1 else 1
    try:
        return dep.with_draft(dataclasses.replace(dep.draft, tp=other))
    except ValueError:  # the draft's heads do not split that many ways
        return None


def run_speedup(args: argparse.Namespace) -> int:
    import numpy as np

    from .speedup import speedup, speedup_from_cost_ratio

    acc, acc_label = resolve_acceptance(args)
    tokens = expected(acc, args.gamma)
    if args.cost_ratio is not None:
        if not isinstance(acc, float):
            raise ValueError("--cost-ratio takes --alpha; per-position acceptance needs the step-time model")
        args.alpha = acc
        model_flags = [f for f in ("hardware", "target", "draft", "batch", "context") if getattr(args, f) is not None]
        if model_flags:
            raise ValueError(f"--cost-ratio replaces the step-time model; drop --{', --'.join(model_flags)} or drop --cost-ratio")
        s = float(speedup_from_cost_ratio(args.alpha, args.gamma, args.cost_ratio))
        out = {"alpha": args.alpha, "gamma": args.gamma, "cost_ratio": args.cost_ratio, "tokens_per_step": tokens, "speedup": s}
        if args.json:
            print_json(out)
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
    s = speedup(dep, acc, args.gamma, batches, args.context)
    rows = [
        {
            "batch": b,
            "alpha": acc if isinstance(acc, float) else None,
            "acceptance": acc_label,
            "gamma": args.gamma,
            "tokens_per_step": tokens,
            "speedup": float(s[i]),
            "t_target_s": float(times.target.total_s[i]),
            "t_draft_s": float(times.draft.total_s[i]),
            "t_verify_s": float(times.verify.total_s[i]),
            "cost_ratio": float(times.cost_ratio[i]),
            "timing_source": row_source(dep, times, i),
            "provenance": dep.provenance(),
        }
        for i, b in enumerate(args.batch)
    ]
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    print(describe(dep, args.context))
    print(f"{acc_label}, gamma {args.gamma}: {tokens:.4f} tokens per target pass\n")
    print(table(
        ["batch", "speedup", "t_T ms", "t_D ms", "t_V ms", "c", "t_V/t_T"],
        [[r["batch"], f"{r['speedup']:.3f}", ms(r["t_target_s"]), ms(r["t_draft_s"]), ms(r["t_verify_s"]),
          f"{r['cost_ratio']:.3f}", f"{r['t_verify_s'] / r['t_target_s']:.3f}"] for r in rows],
        ">>>>>>>",
    ))
    print_notes(dep)
    return 0


def run_steptime(args: argparse.Namespace) -> int:
    import numpy as np

    from .hardware import load_hardware
    from .models import get_model
    from .parallel import check_tp
    from .deployment import _plus, model_assumptions

    hw = load_hardware(args.hardware)
    opts = model_options(args)
    if "tp" in opts:
        check_tp(hw, opts["tp"])
    model = get_model(args.model, **opts)
    source, engine = _source(args, hw)
    batches = np.array(args.batch, dtype=float)
    t = _plus(source.step_time(model, batches, args.tokens_per_seq, args.context), engine.iteration_s + engine.collectives_s(model))
    provenance = [source.describe(), engine.describe()] + model_assumptions(hw, [model])
    fallback = np.zeros(batches.shape, bool) if t.fallback is None else np.broadcast_to(t.fallback, batches.shape)
    comm = np.broadcast_to(np.asarray(t.comm_s, float), batches.shape)
    rows = [
        {
            "batch": b,
            "tokens_per_seq": args.tokens_per_seq,
            "context": args.context,
            "step_time_s": float(t.total_s[i]),
            "compute_s": float(t.compute_s[i]),
            "memory_s": float(t.memory_s[i]),
            "overhead_s": float(t.overhead_s),
            "comm_s": float(comm[i]),
            "bound": str(t.bound[i]),
            "flop": float(t.flop[i]),
            "bytes": float(t.bytes[i]),
            "timing_source": source.name + (", roofline outside its data" if fallback[i] else ""),
            "provenance": provenance,
        }
        for i, b in enumerate(args.batch)
    ]
    if args.json:
        print_json(rows)
    else:
        gpus = f" x {model.tp} GPUs" if model.tp > 1 else ""
        print(f"{model.describe()} on {hw.name}{gpus}: "
              f"{args.tokens_per_seq} new token(s) per sequence over {args.context} cached")
        print("\n".join(f"step times: {line}" if i == 0 else line for i, line in enumerate(provenance)) + "\n")
        headers = ["batch", "step ms", "roofline compute ms", "roofline memory ms", "overhead ms"]
        headers += ["all-reduce ms"] if model.tp > 1 else []
        print(table(
            headers + ["bound", "FLOP/byte", "source"],
            [[r["batch"], ms(r["step_time_s"]), ms(r["compute_s"]), ms(r["memory_s"]), ms(r["overhead_s"])]
             + ([ms(r["comm_s"])] if model.tp > 1 else [])
             + [r["bound"], f"{r['flop'] / r['bytes']:.1f}", r["timing_source"]] for r in rows],
            ">>>>>" + (">" if model.tp > 1 else "") + "<><",
        ))
        if model.tp > 1:
            n = 2 * model.n_layers + 1
            print(f"\nper GPU: weights {model.weight_bytes / 1e9:.1f} GB, KV {model.kv_bytes_per_token / 1e3:.1f} kB per token; "
                  f"the all-reduce column (the collectives' kernels) is inside the step time, and the overhead column holds "
                  f"the {engine.name} preset's {engine.collective_s * 1e6:.1f} us x {n} collectives = "
                  f"{engine.collectives_s(model) * 1e3:.2f} ms of engine time around them")
        print(f"\nridge: {hw.ridge_flop_per_byte:.1f} FLOP/byte (compute-bound above it; the bound column is the roofline's)")
    for note in list(source.notes) + [f"{model.name}: {n}" for n in model.notes]:
        print(f"note: {note}", file=sys.stderr)
    return 0


def run_alpha(args: argparse.Namespace) -> int:
    from .acceptance import alpha_from_acceptance_length

    if args.metrics is not None:
        if args.acceptance_length is not None:
            raise ValueError("give either --metrics FILE or --acceptance-length X with --gamma G, not both")
        return _alpha_from_metrics(args)
    if args.acceptance_length is None or args.gamma is None:
        raise ValueError("give --acceptance-length X and --gamma G (the gamma the measurement used), or --metrics FILE")
    alpha = float(alpha_from_acceptance_length(args.acceptance_length, args.gamma))
    if args.json:
        print_json({"alpha": alpha, "acceptance_length": args.acceptance_length, "gamma": args.gamma})
    else:
        print(f"alpha = {alpha:.4f}  (mean acceptance length {args.acceptance_length:g} at gamma {args.gamma})")
    return 0


def run_capacity(args: argparse.Namespace) -> int:
    from .capacity import capacity

    from .capacity import smallest_fitting_tp

    dep = _deployment(args)
    cap = capacity(dep, args.context, args.memory_util)
    if args.json:
        print_json({"hardware": dep.hardware.name, "target": dep.target.name, "draft": dep.drafter.name, **cap.to_dict(),
                    "smallest_fitting_tp": smallest_fitting_tp(dep, args.context, args.memory_util)})
        return 0
    for line in capacity_summary(cap, dep):
        print(line)
    return 0


def run_schedule(args: argparse.Namespace) -> int:
    from .acceptance import parse_tree
    from .capacity import capacity
    from .schedule import (check_vllm_pair, context_table, drafter_checkpoint, engine_settings, gamma_schedule, to_sglang,
                           to_trtllm, to_vllm, tree_schedule, trtllm_options)

    if args.json:
        if args.format not in ("table", "json"):
            raise ValueError(f"--json prints the schedule as JSON; it cannot be combined with --format {args.format}")
        args.format = "json"
    acc, acc_label = resolve_acceptance(args)
    tree = parse_tree(args.tree)
    if tree is None and args.sibling_factor is not None:
        raise ValueError("--sibling-factor applies to --tree topk:K,depth:D,tokens:N only")
    if tree is not None and args.format in ("vllm", "trtllm"):
        raise ValueError(f"--tree schedules are written for SGLang (--format sglang); {args.format}'s configuration here "
                         "drafts a chain: drop --tree")
    dep = _deployment(args)
    if args.format == "vllm":
        check_vllm_pair(dep)
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    _require_target_fits(dep, cap)
    checkpoint = drafter_checkpoint(dep, args.draft_checkpoint) if args.format in ("vllm", "sglang", "trtllm") else None
    if tree is None:
        ranges = gamma_schedule(dep, acc, args.max_batch, args.context, args.gamma_max, args.min_gain, args.rtol)
    else:
        ranges = tree_schedule(dep, acc, tree, args.max_batch, args.context, args.min_gain, args.rtol, args.sibling_factor)
    notes = []
    if cap.max_batch_with_draft < args.max_batch:
        notes.append(f"batch sizes above {cap.max_batch_with_draft} do not fit in memory with the draft at "
                     f"{cap.context_tokens} tokens per sequence (specsim capacity)")
    if args.format in ("vllm", "trtllm", "sglang"):
        flags, engine_notes = engine_settings(dep, "trtllm" if args.format == "trtllm" else "vllm")
        notes += engine_notes
        if flags and args.format == "vllm":
            notes.append(f"serve the target with: vllm serve {dep.target.source or dep.target.name} {' '.join(flags)} "
                         "--speculative-config '<the JSON above>'")
    if args.format == "vllm":
        config = to_vllm(ranges, checkpoint, dep)
        if config is None:
            print(f"# speculation does not pay (gain >= {args.min_gain:g}) at any batch size 1..{args.max_batch}: leave speculative_config unset")
        else:
            # One schedule entry per line: the form vLLM's documentation shows.
            entries = ",\n    ".join(json.dumps(entry) for entry in config["num_speculative_tokens_per_batch_size"])
            head = json.dumps({k: v for k, v in config.items() if k != "num_speculative_tokens_per_batch_size"}, indent=2)
            print(head[:-2] + f',\n  "num_speculative_tokens_per_batch_size": [\n    {entries}\n  ]\n}}')
    elif args.format == "sglang":
        print(f"python -m sglang.launch_server --model-path {dep.target.source or dep.target.name} "
              + "\n".join(to_sglang(ranges, dep, checkpoint)))
        notes.append("SGLang takes one static configuration: the first line is the best at batch 1; the comments say "
                     "where another is better")
    elif args.format == "trtllm":
        config = to_trtllm(ranges, checkpoint, dep)
        if config is None:
            print(f"# speculation does not pay (gain >= {args.min_gain:g}) at batch 1: leave speculative_config unset")
        else:
            import yaml

            print(yaml.safe_dump(trtllm_options(dep, config), sort_keys=False).rstrip())
            if dep.drafter.kind != "draft_model":
                notes.append(f"TensorRT-LLM's {config['decoding_type']} decoding takes no per-batch schedule: the "
                             "batch-1 draft length is written; it cannot switch speculation off at large batch")
    elif args.format == "json":
        key = "gamma" if tree is None else "tree"
        out = {"ranges": [{"start_batch": r.start_batch, "end_batch": r.end_batch,
                           key: r.gamma if tree is None else (None if r.tree is None else r.tree.label()),
                           "min_speedup": r.min_speedup, "max_speedup": r.max_speedup} for r in ranges],
               "acceptance": acc_label, "drafter": dep.drafter.kind, "provenance": dep.provenance()}
        if args.contexts:
            out["by_context"] = context_table(dep, acc, _powers_of_two(args.max_batch), args.contexts, args.gamma_max,
                                              args.rtol, tree, args.sibling_factor)
        print_json(out)
    else:
        print(describe(dep, args.context))
        print(f"{acc_label}; speculate only where the predicted speedup >= {args.min_gain:g}\n")
        if tree is None:
            print(table(["batch sizes", "gamma", "predicted speedup"],
                        [[f"{r.start_batch}-{r.end_batch}", r.gamma,
                          "off" if r.gamma == 0 else f"{r.min_speedup:.3f}-{r.max_speedup:.3f}"] for r in ranges], "<><"))
        else:
            print(table(["batch sizes", "tree", "predicted speedup"],
                        [[f"{r.start_batch}-{r.end_batch}", "off" if r.tree is None else r.tree.label(),
                          "off" if r.tree is None else f"{r.min_speedup:.3f}-{r.max_speedup:.3f}"] for r in ranges], "<<<"))
        if args.contexts:
            cells = context_table(dep, acc, _powers_of_two(args.max_batch), args.contexts, args.gamma_max, args.rtol, tree,
                                  args.sibling_factor)
            what = "gamma" if tree is None else "tree"
            print(f"\nbest {what} (speedup) by batch and context:")
            batches = sorted({c["batch"] for c in cells})
            lookup = {(c["batch"], c["context"]): c for c in cells}
            fmt = (lambda c: "off" if (c.get("gamma") == 0 or (tree is not None and c["tree"] is None)) else
                   f"{c['gamma'] if tree is None else c['tree']} ({c['speedup']:.2f})")
            print(table(["batch"] + [f"L={L}" for L in args.contexts],
                        [[b] + [fmt(lookup[(b, L)]) for L in args.contexts] for b in batches], ">" + ">" * len(args.contexts)))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.format != "table":
        for line in dep.provenance():
            print(f"note: step times: {line}", file=sys.stderr)
    print_notes(dep)
    return 0


def _powers_of_two(top: int) -> list[int]:
    out, b = [], 1
    while b < top:
        out.append(b)
        b *= 2
    return out + [top]


def _serving_setup(args: argparse.Namespace):
    from .serving import DEFAULT_REQUESTS, EngineLimits
    from .workloads import DEFAULT_WORKLOAD

    args.workload = DEFAULT_WORKLOAD if args.workload is None else args.workload
    args.requests = DEFAULT_REQUESTS if args.requests is None else args.requests

    acc, acc_label = resolve_acceptance(args)
    dep = _deployment(args)
    limits = EngineLimits(args.max_num_seqs, args.max_batched_tokens)
    slo = (None if args.slo_ttft_ms is None else args.slo_ttft_ms / 1e3, None if args.slo_tpot_ms is None else args.slo_tpot_ms / 1e3)
    gamma = "schedule" if args.gamma is None else args.gamma
    return acc, acc_label, dep, limits, slo, gamma


def run_serve_sim(args: argparse.Namespace) -> int:
    import numpy as np

    from .serving import serve_compare
    from .workloads import Requests, get_workload, read_trace

    from ._io import check_output

    if args.csv:
        check_output(args.csv, (".csv",), "--csv")
    if args.trace and (args.requests is not None or args.workload is not None):
        raise ValueError("--trace gives the requests and their lengths: drop --requests and --workload")
    acc, acc_label, dep, limits, slo, gamma = _serving_setup(args)
    rng = np.random.default_rng(args.seed)
    workload = get_workload(args.workload)
    concurrency = None
    if args.trace:
        requests = read_trace(args.trace)
    elif args.concurrency is not None:
        requests, concurrency = Requests.closed_loop(args.requests, workload, rng), args.concurrency
    else:
        requests = Requests.poisson(args.rate, args.requests, workload, rng)
    limit = dep.target.max_position_embeddings or 4194304
    lengths = np.asarray(requests.prompt) + np.asarray(requests.output)
    too_long = np.flatnonzero(lengths > limit)
    if too_long.size:
        what = f"{dep.target.name}'s context limit (max_position_embeddings)" if dep.target.max_position_embeddings else "specsim's limit"
        raise ValueError(f"{too_long.size} request(s) need more than {limit:,} tokens (prompt + output), {what}; the first, "
                         f"request {too_long[0] + 1}, needs {int(lengths[too_long[0]]):,}")
    plain, spec, meta = serve_compare(dep, requests, acc, gamma, limits, concurrency, args.seed, args.memory_util,
                                      args.gamma_max)
    summaries = [r.summary(*slo) for r in (plain, spec)]
    if args.csv:
        import pandas as pd

        from ._io import atomic_write_bytes

        frames = [pd.DataFrame({"speculation": name, "request": np.arange(len(requests)), "arrival_s": r.arrival_s,
                                "first_token_s": r.first_token_s, "finish_s": r.finish_s, "prompt_tokens": r.prompt,
                                "output_tokens": r.output, "never_fit": r.rejected})
                  for name, r in (("off", plain), ("on", spec))]
        atomic_write_bytes(args.csv, pd.concat(frames).to_csv(index=False).encode())
    provenance = dep.provenance() + [f"load: {requests.source}" + (f", {concurrency} users" if concurrency else ""),
                                     f"acceptance: {acc_label}; speculation: {meta['gamma_policy']}",
                                     f"engine limits: max_num_seqs {limits.max_num_seqs}, max_batched_tokens "
                                     f"{limits.max_batched_tokens}; KV capacity {meta['kv_capacity_tokens_plain']:,.0f} tokens "
                                     f"without the draft, {meta['kv_capacity_tokens_spec']:,.0f} with it (prompt + output reserved per request)"
                                     + _window_clause(dep)]
    if args.json:
        print_json({"off": summaries[0], "on": summaries[1], "provenance": provenance,
                    "gamma_by_batch": meta["gamma_by_batch"]})
        for r in (plain, spec):
            for note in r.notes:
                print(f"note: {note}", file=sys.stderr)
        print_notes(dep)
        return 0
    print(describe(dep, int(meta["context_hint"])))
    for line in provenance[len(dep.provenance()):]:
        print(line)
    print()

    def trio(d, scale, unit):
        return f"{d['p50'] * scale:.1f} / {d['p90'] * scale:.1f} / {d['p99'] * scale:.1f} {unit}"

    off, on = summaries
    rows = [
        ["TTFT p50 / p90 / p99", trio(off["ttft_s"], 1e3, "ms"), trio(on["ttft_s"], 1e3, "ms")],
        ["TPOT p50 / p90 / p99", trio(off["tpot_s"], 1e3, "ms"), trio(on["tpot_s"], 1e3, "ms")],
        ["end-to-end p50 / p90 / p99", trio(off["e2e_s"], 1, "s"), trio(on["e2e_s"], 1, "s")],
        ["output tokens/s", f"{off['output_tokens_per_s']:,.0f}", f"{on['output_tokens_per_s']:,.0f}"],
        ["requests/s served", f"{off['requests_per_s']:.2f}", f"{on['requests_per_s']:.2f}"],
        ["running batch mean (max)", f"{off['mean_running_batch']:.1f} ({off['max_running_batch']})",
         f"{on['mean_running_batch']:.1f} ({on['max_running_batch']})"],
        ["requests served / never fit", f"{off['served']} / {off['never_fit']}", f"{on['served']} / {on['never_fit']}"],
    ]
    if "goodput_requests_per_s" in off:
        rows.append(["goodput (both SLOs met)", f"{off['goodput_requests_per_s']:.2f} req/s ({off['slo_met']})",
                     f"{on['goodput_requests_per_s']:.2f} req/s ({on['slo_met']})"])
    print(table(["", "speculation off", "speculation on"], rows, "<>>"))
    change = on["tpot_s"]["p50"] / off["tpot_s"]["p50"] - 1
    print(f"\nspeculation changes TPOT p50 by {change:+.1%} and throughput by "
          f"{on['output_tokens_per_s'] / off['output_tokens_per_s'] - 1:+.1%} at this load")
    for r in (plain, spec):
        for note in r.notes:
            print(f"note: {note}", file=sys.stderr)
    print_notes(dep)
    return 0


def _window_clause(dep) -> str:
    """Serve-sim's KV capacity is in full-attention tokens; say when window layers make a request reserve less."""
    t = dep.target
    if not t.n_sliding_layers:
        return ""
    return (f"; {t.n_sliding_layers} of {t.n_layers} layers keep at most {t.sliding_window:,} tokens, so a request "
            "reserves less than its length (the same KV as specsim capacity)")


def run_serve_sweep(args: argparse.Namespace) -> int:
    from .serving import DEFAULT_SLO_ATTAINMENT, serve_sweep, sweep_findings
    from .workloads import get_workload

    from ._io import check_output

    if args.plot:
        check_output(args.plot, (".png", ".svg"), "--plot")
    acc, acc_label, dep, limits, slo, gamma = _serving_setup(args)
    workload = get_workload(args.workload)
    executor = None
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(max_workers=args.workers)
    try:
        frame = serve_sweep(dep, args.rates, workload, args.requests, acc, gamma, limits, args.seed, *slo, args.gamma_max,
                            executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    findings = sweep_findings(frame)
    if args.plot:
        from .figures import save_serve_sweep

        save_serve_sweep(frame, args.plot, title=f"{dep.target.name} + {dep.drafter.name} on {dep.hardware.name}, "
                                                 f"{workload.name}, {acc_label}")
    if args.json:
        print_json({"rates": frame.to_dict(orient="records"), "findings": findings, "acceptance": acc_label,
                    "workload": workload.name, "provenance": dep.provenance()})
        print_notes(dep)
        return 0
    print(describe(dep, 0).replace("; context 0 tokens", ""))
    print(f"workload {workload.name} ({workload.source}); {args.requests} requests per rate; {acc_label}\n")
    cols = ["rate", "off_tpot_p50_s", "on_tpot_p50_s", "off_tpot_p99_s", "on_tpot_p99_s", "off_tokens_per_s", "on_tokens_per_s",
            "off_mean_batch", "on_mean_batch"]
    headers = ["req/s", "TPOT p50 off", "on", "TPOT p99 off", "on", "tok/s off", "on", "batch off", "on"]
    rows = [[f"{r.rate:g}", ms(r.off_tpot_p50_s), ms(r.on_tpot_p50_s), ms(r.off_tpot_p99_s), ms(r.on_tpot_p99_s),
             f"{r.off_tokens_per_s:,.0f}", f"{r.on_tokens_per_s:,.0f}", f"{r.off_mean_batch:.1f}", f"{r.on_mean_batch:.1f}"]
            for r in frame[cols].itertuples()]
    if "off_slo_attainment" in frame:
        headers += ["SLO met off", "on"]
        rows = [row + [f"{a:.0%}", f"{b:.0%}"] for row, a, b in zip(rows, frame.off_slo_attainment, frame.on_slo_attainment)]
    print(table(headers, rows, ">" * len(headers)))
    stop = findings["speculation_stops_helping_at_rate"]
    print("\nspeculation lowers TPOT p50 at every rate swept" if stop is None else
          f"\nspeculation stops lowering TPOT p50 at {stop:g} requests/s")
    if "max_rate_meeting_slo_off" in findings:
        fmt = lambda v: "none of the rates swept" if v is None else f"{v:g} requests/s"  # noqa: E731
        print(f"largest rate meeting the SLOs ({DEFAULT_SLO_ATTAINMENT:.0%} of requests): {fmt(findings['max_rate_meeting_slo_off'])} "
              f"without speculation, {fmt(findings['max_rate_meeting_slo_on'])} with it")
    print_notes(dep)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from .capacity import capacity, throughput_table

    dep = _deployment(args)
    _require_target_fits(dep, capacity(dep, reserved_context(args.context, args.max_context), args.memory_util))
    acc, acc_label = resolve_acceptance(args)
    frame = throughput_table(dep, acc, args.batch, args.context, args.gamma, args.gamma_max,
                             args.max_context, args.memory_util)
    cap = capacity(dep, reserved_context(args.context, args.max_context), args.memory_util)
    if args.json:
        records = frame.to_dict(orient="records")
        for r in records:
            r["provenance"] = dep.provenance()
        print_json(records)
        print_notes(dep)
        return 0
    print(describe(dep, args.context))
    print(f"{acc_label}; " + ("optimal gamma per batch size" if args.gamma is None else f"gamma fixed at {args.gamma}"))
    for line in capacity_summary(cap, dep):
        print(line)
    print()
    rows = []
    for r in frame.itertuples():
        fits = "yes" if r.fits_with_draft else ("plain only" if r.fits_without_draft else "no")
        rows.append([r.batch, r.gamma, f"{r.latency_plain_s * 1e3:.2f}", f"{r.latency_spec_s * 1e3:.2f}",
                     f"{r.tokens_per_s_seq_plain:.0f}", f"{r.tokens_per_s_seq_spec:.0f}",
                     f"{r.tokens_per_s_plain:,.0f}", f"{r.tokens_per_s_spec:,.0f}", f"{r.speedup:.2f}", fits])
    print(table(["batch", "gamma", "ms/token plain", "ms/token spec", "tok/s/seq plain", "tok/s/seq spec",
                  "device tok/s plain", "device tok/s spec", "speedup", "fits"], rows, ">>>>>>>>><"))
    if cap.target_fits and cap.both_fit and cap.max_batch_with_draft > 0:
        best = throughput_table(dep, acc, [cap.max_batch_with_draft, max(cap.max_batch_without_draft, 1)], args.context,
                                args.gamma, args.gamma_max, args.max_context, args.memory_util)
        spec_peak, plain_peak = best.tokens_per_s_spec.iloc[0], best.tokens_per_s_plain.iloc[1]
        print(f"\nat the largest batch that fits: {spec_peak:,.0f} tok/s with speculation (b = {cap.max_batch_with_draft}) "
              f"against {plain_peak:,.0f} tok/s without the draft (b = {cap.max_batch_without_draft}): "
              f"{spec_peak / plain_peak - 1:+.0%} device throughput")
    print_notes(dep)
    return 0


def run_toy(args: argparse.Namespace) -> int:
    from . import toy

    if args.experiment == "exactness":
        hand = toy.hand_example(seed=args.seed)
        result = toy.exactness(seed=args.seed)
        if args.json:
            print_json({"hand_example": hand, "bigram": result})
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
        print(table(["sampler", "TV from exact marginal", "chi-square p-value"], [
            ["speculative (gamma = 4)", f"{result['tv_speculative']:.4f}", f"{result['chi2_p_speculative']:.3f}"],
            ["plain target sampling", f"{result['tv_plain']:.4f}", f"{result['chi2_p_plain']:.3f}"],
        ], "<>>"))
        print(f"expected TV of an exact sample of this size (sampling noise): {result['tv_noise_level']:.4f}; "
              "the article's run gave 0.0101 and 0.0089")
        return 0
    if args.experiment == "tokens-per-step":
        result = toy.tokens_per_step(seed=args.seed)
        if args.json:
            print_json(result)
            return 0
        print(f"bigram toy, seed {result['seed']}: alpha = {result['alpha_stationary']:.4f} under the target's stationary distribution")
        print(table(["gamma", "measured tokens/pass", "formula E(alpha, gamma)", "difference", "target passes"],
                     [[r["gamma"], f"{r['measured']:.4f}", f"{r['formula']:.4f}", f"{r['relative_error']:+.2%}", f"{r['passes']:,}"]
                      for r in result["rows"]], ">>>>>"))
        print("the article: measured 1.634, 2.038, 2.297, 2.472, 2.645, 2.707 against 1.638, 2.044, 2.303, 2.469, 2.641, 2.712")
        return 0
    result = toy.realign(seed=args.seed)
    if args.json:
        print_json(result)
        return 0
    print(f"re-aligning a stale rank-{result['rank']} draft to a fine-tuned {result['vocab']}-token bigram target, seed {result['seed']}")
    print("alpha and tokens per step (gamma = 4) under the fine-tuned target's stationary distribution\n")
    stale = result["rows"][0]["tokens_per_step_gamma4"]
    print(table(["draft", "alpha", "tokens/step", "vs stale", "greedy agreement"],
                 [[r["draft"], f"{r['alpha']:.3f}", f"{r['tokens_per_step_gamma4']:.2f}",
                   f"{r['tokens_per_step_gamma4'] / stale - 1:+.0%}", f"{r['greedy_agreement']:.3f}"] for r in result["rows"]],
                 "<>>>>"))
    print("\nthe article: stale 2.39, SFT 3.33, TVD 3.96 (about 0.88 acceptance), KL objectives in between, on-policy no extra gain")
    return 0


def run_acceptance(args: argparse.Namespace) -> int:
    import numpy as np

    from .sampling import acceptance_rate_from_logits
    from .acceptance import expected_tokens

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
        print_json(out)
        return 0
    print(f"{out['positions']:,} positions x {out['vocab']:,} tokens at temperature {args.temperature:g}")
    pct = out["alpha_percentiles"]
    print(f"alpha = mean of sum min(p, q) = {alpha:.4f} (std {out['alpha_std']:.3f}; 10/50/90th percentiles "
          f"{pct['10']:.3f} / {pct['50']:.3f} / {pct['90']:.3f})\n")
    print(table(["gamma", "tokens/step (independent, alpha)", "if acceptance is shared within a step"],
                 [[r["gamma"], f"{r['independent']:.3f}", f"{r['correlated_bound']:.3f}"] for r in out["tokens_per_step"]], ">>>"))
    print(f"\nnext: specsim optimal-gamma --alpha {alpha:.3f} ...")
    return 0


def run_measure(args: argparse.Namespace) -> int:
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
        print_json({"configurations": len(rows), "device_name": rows[0]["device_name"], "out": str(args.out)})
    else:
        print(f"{len(rows)} configurations measured on {rows[0]['device_name']} -> {args.out}")
    return 0


def run_measure_loop(args: argparse.Namespace) -> int:
    _harness()
    from .harness.specloop import run_speculative_loop
    from .models import get_model
    from .deployment import Deployment
    from .speedup import expected_tokens, speedup, speedup_from_times

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
            r["predicted_speedup"] = float(speedup(dep, args.alpha, args.gamma, batch, args.context + args.tokens // 2))
            r["profile"] = profile.name
            r["prediction_source"] = f"roofline: profile {profile.name}, no engine time (the harness times bare passes)"
        results.append(r)
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

    from ._io import atomic_write_many, check_output
    from .calibrate import calibrate, implausible, profile_yaml
    from .figures import plot_residuals
    from .hardware import load_hardware

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


def run_hardware(args: argparse.Namespace) -> int:
    from .hardware import builtin_names, load_hardware, profile_to_mapping

    if args.action == "show":
        hw = load_hardware(args.name)
        if args.json:
            print_json({**profile_to_mapping(hw), "ridge_flop_per_byte": hw.ridge_flop_per_byte})
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
        print_json([profile_to_mapping(load_hardware(name)) for name in builtin_names()])
        return 0
    print(table(["name", "TFLOP/s", "TB/s", "GB", "eff c/bw", "overhead ms", "ridge", "efficiencies from"], rows, "<>>>>>><"))
    print("\nshow one: specsim hardware show NAME; use your own: --hardware path/to/profile.yaml")
    return 0


def run_models(args: argparse.Namespace) -> int:
    from .models import builtin_model_names, catalog_entry, format_count, get_model

    if args.action == "show":
        model = get_model(args.name)
        d = model.to_dict()
        entry = catalog_entry(args.name)
        if entry is not None:
            d["catalog"] = entry
        if args.json:
            print_json(d)
            return 0
        width = max(map(len, d))
        for key, value in d.items():
            print(f"{key:<{width}}  {value:,}" if isinstance(value, int) and not isinstance(value, bool) else f"{key:<{width}}  {value}")
        return 0
    names = builtin_model_names()
    models = [get_model(n) for n in names]
    if args.json:
        print_json([{**m.to_dict(), "catalog": catalog_entry(n)} for n, m in zip(names, models)])
        return 0

    def kind(m) -> str:
        parts = [f"MoE {m.n_active_experts}/{m.n_experts}" if m.is_moe else "dense"]
        parts += ["MLA"] if m.is_mla else []
        parts += [f"window {m.sliding_window}"] if m.n_sliding_layers else []
        return ", ".join(parts)

    def draft(name: str) -> str:
        entry = catalog_entry(name)
        if entry is None:
            return "(preset)"
        return str(entry["draft"]).split(" (")[0]

    dtype = lambda m: m.weight_dtype if m.expert_dtype_ == m.weight_dtype else f"{m.weight_dtype}/{m.expert_dtype_}"  # noqa: E731
    print(table(
        ["name", "params", "active", "kind", "layers", "heads/kv", "weights", "weights GB", "KV kB/token", "draft"],
        [[m.name, format_count(m.params), format_count(m.active_params), kind(m), m.n_layers, f"{m.n_heads}/{m.n_kv_heads}",
          dtype(m), f"{m.weight_bytes / 1e9:.1f}", f"{m.kv_bytes_per_token / 1e3:.1f}", draft(n)] for n, m in zip(names, models)],
        "<>><>><>><",
    ))
    print("\nshow one (with its source and published size): specsim models show NAME; use your own: --target path/to/config.json")
    return 0


def run_reproduce(args: argparse.Namespace) -> int:
    from .article import reproduce

    checks = reproduce()
    if args.json:
        print_json([
            {"quantity": c.quantity, "quoted": c.quoted, "value": c.value, "interval": c.interval, "unit": c.unit, "passed": c.passed}
            for c in checks
        ])
    else:
        print("the article's numbers from its preset: H100 SXM (989 TFLOP/s x 0.6, 3.35 TB/s x 0.8, 0.5 ms/pass),")
        print("article-8b target, article-1b draft, context 1128 tokens\n")
        print(table(
            ["quantity", "quoted", "specsim", "must land in", "result"],
            [[c.quantity, c.quoted, f"{c.value:.4f} {c.unit}".strip(), c.interval, "pass" if c.passed else "FAIL"] for c in checks],
            "<<><<",
        ))
        failed = sum(not c.passed for c in checks)
        print(f"\n{len(checks) - failed}/{len(checks)} pass")
    return 0 if all(c.passed for c in checks) else 1


def run_figures(args: argparse.Namespace) -> int:
    import time

    from .figures import FIGURES, make_all

    if args.list:
        if args.json:
            print_json([spec.name for spec in FIGURES])
        else:
            for spec in FIGURES:
                print(spec.name)
        return 0
    start = time.perf_counter()
    paths = make_all(args.out, args.only)
    elapsed = time.perf_counter() - start
    if args.json:
        print_json([str(p) for p in paths])
    else:
        for path in paths:
            print(path)
    print(f"{len(paths)} files in {elapsed:.1f} s", file=sys.stderr)
    return 0


def _alpha_from_metrics(args: argparse.Namespace) -> int:
    from .metrics import read_metrics_file

    m = read_metrics_file(args.metrics, args.model_name)
    out = m.to_dict()
    if args.json:
        print_json(out)
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
        print(table(["position", "P(accepted so far)", "P(accepted | previous accepted)", "one-alpha model: alpha^(k+1) / alpha"],
                     rows, ">>><"))
    if far:
        print(f"\nwarning: the acceptance rate at position(s) {', '.join(map(str, far))} differs from alpha by more than "
              "sampling noise: acceptance is not independent per position.  For gamma <= "
              f"{m.gamma}, use the per-position rates (E = 1 + sum of P(accepted so far)) rather than one alpha.",
              file=sys.stderr)
    return 0


def _harness():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("the timing harness needs torch: pip install 'specsim[harness]' (for the CPU build: pip install torch --index-url https://download.pytorch.org/whl/cpu)") from None
    from . import harness

    return harness


def _source(args: argparse.Namespace, hardware):
    """The step-time source and engine preset that ``--timing`` and ``--engine`` name."""
    from .engines import source_and_engine

    return source_and_engine(hardware, args.timing, args.engine, args.engine_overhead_ms, progress=progress)


def resolve_acceptance(args: argparse.Namespace):
    """(value, label): --acceptance or --metrics as an Acceptance, else --alpha (the library default if unset)."""
    from .acceptance import parse_acceptance
    from .metrics import acceptance_from_page
    from .defaults import DEFAULT_ALPHA

    if getattr(args, "metrics_gamma", None) is not None and getattr(args, "metrics", None) is None:
        raise ValueError("--metrics-gamma goes with an SGLang --metrics page")
    if getattr(args, "acceptance", None) is not None:
        acc = parse_acceptance(args.acceptance)
    elif getattr(args, "metrics", None) is not None:
        acc = acceptance_from_page(args.metrics, args.metrics_gamma)
    else:
        alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
        return alpha, f"alpha {alpha:g}"
    return acc, acc.describe()


def model_options(args: argparse.Namespace, prefix: str = "") -> dict:
    """get_model keyword arguments from --weight-dtype, --kv-dtype, --tp, --moe-effective-experts (or their --draft- forms)."""
    keys = {"weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype", "tp": "tp"}
    opts = {key: getattr(args, prefix + attr, None) for key, attr in keys.items()}
    if not prefix:
        opts["routing_effective_experts"] = getattr(args, "moe_effective_experts", None)
    return {k: v for k, v in opts.items() if v is not None}


def _deployment(args: argparse.Namespace):
    from .deployment import Deployment

    ngram = getattr(args, "ngram_cpu_ns", None)
    return Deployment.build(args.hardware, args.target, args.draft, args.timing, args.engine, args.engine_overhead_ms,
                            target_options=model_options(args), draft_options=model_options(args, "draft_"),
                            ngram_cpu_s_per_token=None if ngram is None else ngram * 1e-9,
                            progress=progress)
