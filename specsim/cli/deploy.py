"""``specsim schedule``: the per-batch gamma (or tree) schedule, in the form each engine takes."""

from __future__ import annotations

import argparse
import json
import sys

from specsim.cli.report import describe, print_json, print_notes, table
from specsim.cli.args import deployment, resolve_acceptance
from specsim.cli.flags import (add_acceptance_args, add_deployment_args, add_memory_args, add_tree_args, gamma_max_type, int_at_least, int_list, nonneg_number, number)
from specsim.core.defaults import DEFAULT_GAMMA_MAX
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT
from specsim.speculation.schedule import DEFAULT_MAX_BATCH, DEFAULT_MIN_GAIN, DEFAULT_SCHEDULE_RTOL

__all__ = ["run_schedule"]


def run_schedule(args: argparse.Namespace) -> int:
    from specsim.speculation.acceptance import parse_tree
    from specsim.answers import deployment_capacity
    from specsim.engines.vllm import check_vllm_pair, engine_settings
    from specsim.speculation.schedule import gamma_schedule, tree_schedule
    from specsim.speculation.search import require_network

    if args.json:
        if args.format not in ("table", "json"):
            raise ValueError(f"--json prints the schedule as JSON; it cannot be combined with --format {args.format}")
        args.format = "json"
    tree = parse_tree(args.tree)
    if tree is None and args.sibling_factor is not None:
        raise ValueError("--sibling-factor applies to --tree topk:K,depth:D,tokens:N only")
    if tree is not None and args.format in ("vllm", "trtllm"):
        raise ValueError(f"--tree schedules are written for SGLang (--format sglang); {args.format}'s configuration here "
                         "drafts a chain: drop --tree")
    dep = deployment(args)
    if tree is not None:
        require_network(dep)
    if args.format in ("vllm", "sglang", "trtllm"):
        dep.drafter.support(args.format)  # the engine the configuration is for takes this drafter (at some release)
    if args.format == "vllm":
        check_vllm_pair(dep)
    acc, acc_label = resolve_acceptance(args)
    cap = deployment_capacity(dep, args.context, args.max_context, args.memory_util)
    checkpoint = dep.drafter.checkpoint(dep.target, args.draft_checkpoint) if args.format in ("vllm", "sglang", "trtllm") else None
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
    printer = {"vllm": _print_vllm, "sglang": _print_sglang, "trtllm": _print_trtllm, "json": _print_json, "table": _print_table}
    notes += printer[args.format](args, dep, ranges, checkpoint, tree, acc, acc_label) or []
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.format != "table":
        from specsim.cli import report

        for line in dep.provenance() if report.VERBOSE else [dep.brief()]:
            print(f"note: {line if line.startswith('step times') else 'step times: ' + line}", file=sys.stderr)
    print_notes(dep)
    return 0


def _print_vllm(args, dep, ranges, checkpoint, tree, acc, acc_label) -> None:
    from specsim.engines.vllm import to_vllm

    config = to_vllm(ranges, checkpoint, dep)
    if config is None:
        print(f"# speculation does not pay (gain >= {args.min_gain:g}) at any batch size 1..{args.max_batch}: leave speculative_config unset")
        return
    # One schedule entry per line: the form vLLM's documentation shows.
    entries = ",\n    ".join(json.dumps(entry) for entry in config["num_speculative_tokens_per_batch_size"])
    head = json.dumps({k: v for k, v in config.items() if k != "num_speculative_tokens_per_batch_size"}, indent=2)
    print(head[:-2] + f',\n  "num_speculative_tokens_per_batch_size": [\n    {entries}\n  ]\n}}')


def _print_sglang(args, dep, ranges, checkpoint, tree, acc, acc_label) -> list[str]:
    from specsim.engines.sglang import to_sglang

    print(f"python -m sglang.launch_server --model-path {dep.target.source or dep.target.name} "
          + "\n".join(to_sglang(ranges, dep, checkpoint)))
    return ["SGLang takes one static configuration: the first line is the best at batch 1; the comments say "
            "where another is better"]


def _print_trtllm(args, dep, ranges, checkpoint, tree, acc, acc_label) -> list[str]:
    import yaml

    from specsim.engines.trtllm import to_trtllm, trtllm_options

    config = to_trtllm(ranges, checkpoint, dep)
    if config is None:
        print(f"# speculation does not pay (gain >= {args.min_gain:g}) at batch 1: leave speculative_config unset")
        return []
    print(yaml.safe_dump(trtllm_options(dep, config), sort_keys=False).rstrip())
    if not dep.drafter.shares_vocabulary:
        return [f"TensorRT-LLM's {config['decoding_type']} decoding takes no per-batch schedule: the "
                "batch-1 draft length is written; it cannot switch speculation off at large batch"]
    return []


def _context_cells(args, dep, tree, acc) -> list[dict]:
    from specsim.speculation.schedule import batch_grid, context_table

    return context_table(dep, acc, batch_grid(args.max_batch), args.contexts, args.gamma_max, args.rtol, tree, args.sibling_factor)


def _print_json(args, dep, ranges, checkpoint, tree, acc, acc_label) -> None:
    key = "gamma" if tree is None else "tree"
    out = {"ranges": [{"start_batch": r.start_batch, "end_batch": r.end_batch,
                       key: r.gamma if tree is None else (None if r.tree is None else r.tree.label()),
                       "min_speedup": r.min_speedup, "max_speedup": r.max_speedup}
                      | ({"shortfall": r.shortfall} if tree is None else {}) for r in ranges],
           "acceptance": acc_label, "drafter": dep.drafter.kind, "provenance": dep.provenance()}
    if args.contexts:
        out["by_context"] = _context_cells(args, dep, tree, acc)
    print_json(out)


def _print_table(args, dep, ranges, checkpoint, tree, acc, acc_label) -> None:
    print(describe(dep, args.context))
    print(f"{acc_label}; speculate only where the predicted speedup >= {args.min_gain:g}\n")
    if tree is None:
        print(table(["batch sizes", "gamma", "predicted speedup", "below the best"],
                    [[f"{r.start_batch}-{r.end_batch}", r.gamma,
                      "off" if r.gamma == 0 else f"{r.min_speedup:.3f}-{r.max_speedup:.3f}", f"{r.shortfall:.1%}"]
                     for r in ranges], "<><>"))
        print(f"\ngamma never rises with batch; 'below the best' is the most a range's speedup falls below the best gamma of "
              f"its batch sizes (shortfalls within --rtol {args.rtol:g} count as none, the smaller gamma winning)")
    else:
        print(table(["batch sizes", "tree", "predicted speedup"],
                    [[f"{r.start_batch}-{r.end_batch}", "off" if r.tree is None else r.tree.label(),
                      "off" if r.tree is None else f"{r.min_speedup:.3f}-{r.max_speedup:.3f}"] for r in ranges], "<<<"))
    if not args.contexts:
        return
    cells = _context_cells(args, dep, tree, acc)
    what = "gamma" if tree is None else "tree"
    print(f"\nbest {what} (speedup) by batch and context:")
    batches = sorted({c["batch"] for c in cells})
    lookup = {(c["batch"], c["context"]): c for c in cells}
    fmt = (lambda c: "off" if (c.get("gamma") == 0 or (tree is not None and c["tree"] is None)) else
           f"{c['gamma'] if tree is None else c['tree']} ({c['speedup']:.2f})")
    print(table(["batch"] + [f"L={L}" for L in args.contexts],
                [[b] + [fmt(lookup[(b, L)]) for L in args.contexts] for b in batches], ">" + ">" * len(args.contexts)))


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_schedule(sub) -> None:
    p = sub.add_parser("schedule", help="batch-size-dependent gamma (or tree) schedule for vLLM, SGLang or TensorRT-LLM",
                       description="The optimal gamma (or token tree) for every batch size 1..--max-batch, merged into "
                       "ranges, printed as a vLLM speculative_config, SGLang launch flags or a TensorRT-LLM "
                       "speculative_config, for the drafter --draft names.")
    add_acceptance_args(p)
    add_deployment_args(p, batch=False)
    p.add_argument("--max-batch", type=int_at_least(1, "max-batch", MAX_BATCH), default=DEFAULT_MAX_BATCH,
                   help=f"largest batch size (max_num_seqs) to schedule (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--min-gain", type=number, default=DEFAULT_MIN_GAIN,
                   help="speculate only where the predicted speedup is at least this (e.g. 1.05; default 1)")
    p.add_argument("--gamma-max", type=gamma_max_type, default=DEFAULT_GAMMA_MAX, help=f"largest gamma (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--rtol", type=nonneg_number, default=DEFAULT_SCHEDULE_RTOL,
                   help=f"take the smallest gamma within this fraction of the best speedup (default {DEFAULT_SCHEDULE_RTOL}; 0: exact argmax)")
    add_memory_args(p)
    add_tree_args(p)
    p.add_argument("--contexts", type=int_list(0, "contexts", MAX_CONTEXT),
                   help="comma-separated context lengths: also print the (batch, context) table of the best choice")
    p.add_argument("--format", choices=["vllm", "sglang", "trtllm", "json", "table"], default="table", help="output form (default table)")
    p.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    p.set_defaults(func=run_schedule)



#: The commands of this module, each with the function that declares its flags.
PARSERS = {"schedule": _parser_schedule}
