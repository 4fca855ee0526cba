"""The model's answers on the command line: optimal-gamma, speedup, steptime, compare, capacity and alpha."""

from __future__ import annotations

import argparse
import sys

from specsim.cli.args import (
    calibrated_context,
    deployment,
    load_lengths,
    model_acceptance,
    resolve_acceptance,
)
from specsim.cli.flags import (
    ARTICLE_CONTEXT,
    Unset,
    UnsetInt,
    add_acceptance_args,
    add_deployment_args,
    add_load_args,
    add_memory_args,
    add_memory_util,
    add_model_args,
    add_timing_args,
    add_tree_args,
    batches_type,
    flags_given,
    gamma_max_type,
    gamma_type,
    int_at_least,
    int_list,
    limits_and_source,
    memory_limits,
    nonempty,
    nonneg_number,
)
from specsim.cli.report import capacity_summary, describe, ms, print_json, print_notes, short_bound, table
from specsim.core.defaults import (
    DEFAULT_BATCHES,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_GAMMA_MAX,
    DEFAULT_HARDWARE,
    DEFAULT_RTOL,
    DEFAULT_TARGET,
)
from specsim.core.limits import MAX_CONTEXT, MAX_GAMMA
from specsim.core.words import counted
from specsim.core.workloads import mean_context_tokens

__all__ = [
    "run_at_load",
    "run_capacity",
    "run_compare",
    "run_explain",
    "run_optimal_gamma",
    "run_speedup",
    "run_steptime",
]


def run_optimal_gamma(args: argparse.Namespace) -> int:
    at = _at_load(args)
    if at is not None:
        return run_at_load(args, *at)
    from specsim.answers import deployment_capacity, gamma_answer
    from specsim.speculation.acceptance import parse_tree
    from specsim.speculation.search import require_network

    tree = parse_tree(args.tree)
    dep = deployment(args)
    if tree is not None:
        require_network(dep)
    acc, acc_label = model_acceptance(
        args, dep, args.context
    )  # after the deployment: its errors come first, then the drafter's default
    cap = deployment_capacity(
        dep,
        args.context,
        args.max_context,
        args.memory_util,
        *memory_limits(args, dep),
    )
    if tree is not None:
        from specsim.answers.tree import tree_answer

        answer = tree_answer(
            dep, acc, acc_label, tree, args.batch, args.context, args.gamma_max, args.rtol, args.sibling_factor, cap
        )
        return _print_tree(args, answer)
    if args.sibling_factor is not None:
        raise ValueError("--sibling-factor applies to --tree topk:K,depth:D,tokens:N only")
    # a calibration's acceptance carries the draft steps it was measured at: the answer says where a gamma passes them
    answer = gamma_answer(dep, acc, acc_label, args.batch, args.context, args.gamma_max, args.rtol, cap)
    if args.json:
        print_json(answer.rows)
        print_notes(dep)
        return 0
    _print_gamma_table(args, answer)
    print_notes(dep)
    return 0


def _print_gamma_table(args: argparse.Namespace, answer) -> None:
    dep, best, rows = answer.deployment, answer.best, answer.rows
    print(describe(dep, args.context))
    print(
        f"{answer.acceptance}; gamma searched over 0..{best.gamma_max}"
        + (f" (smallest within {args.rtol:g} of best)" if args.rtol else "")
    )
    said = _search_stopped(dep, best.gamma_max, answer.gamma_bound)
    if said:
        print(said)
    for line in capacity_summary(answer.capacity, dep):
        print(line)
    print()
    headers = [
        "batch",
        "gamma",
        "speedup",
        "t_T ms",
        "t_D ms",
        "t_V ms",
        "host ms",
        "round ms",
        "c",
        "bound T/D/V",
        "recommendation",
    ]
    table_rows = []
    for r in rows:
        rec = r["recommendation"] + (f" ({r['gamma_bound']})" if r["gamma_bound"] else "")
        if not r["fits_with_draft"]:
            rec += "; does not fit in memory" + (" with the draft" if r["fits_without_draft"] else "")
        bounds = "/".join(short_bound(r[k]) for k in ("bound_target", "bound_draft", "bound_verify"))
        table_rows.append(
            [
                r["batch"],
                r["gamma"],
                f"{r['speedup']:.3f}",
                ms(r["t_target_s"]),
                ms(r["t_draft_s"]),
                ms(r["t_verify_s"]),
                ms(r["t_host_s"]),
                ms(r["t_round_s"]),
                f"{r['cost_ratio']:.3f}",
                bounds,
                rec,
            ]
        )
    print(table(headers, table_rows, ">>>>>>>>><<"))
    print(
        f"round = {dep.drafter.round_formula} + t_V{_graphless_said(rows)} + the engine's host time the round waits for (host: serial, or what the passes do not "
        "cover where the engine overlaps it); speedup = tokens per round x t_T / round"
    )
    print(answer.model_error.said())
    if answer.off_batches:
        verdict = "is off" if answer.best.gamma_max == 0 else "does not pay"
        close = [str(r["batch"]) for r in rows if r["gamma"] == 0 and r["verdict"] == "too close to call"]
        print(
            f"\nspeculation {verdict} at batch {', '.join(map(str, answer.off_batches))}: {answer.off_reason}"
            + (
                f" At batch {', '.join(close)} the loss is inside specsim's measured error: too close to call."
                if close
                else ""
            )
        )
    peak = answer.peak
    if peak is not None:
        print(
            f"\nspeculation pays most at batch {peak['batch']} ({peak['speedup']:.3f}x with gamma {peak['gamma']}), not at batch "
            f"{args.batch[0]}{peak['why']}"
        )
    if answer.other is not None:
        other, other_best, standing = answer.other
        pairs = ", ".join(
            f"{b}: {s:.3f} (gamma {g})" for b, s, g in zip(args.batch, other_best.speedup, other_best.gamma)
        )
        print(
            f"\nwith the draft at TP {other.draft.tp} instead of {dep.draft.tp}"
            + (f", {standing}" if standing else "")
            + f": speedup by batch {pairs}"
        )


def _print_tree(args: argparse.Namespace, answer) -> int:
    dep, rows = answer.deployment, answer.rows
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    bounds = answer.bounds
    print(describe(dep, args.context))
    print(
        f"{answer.acceptance}; trees within top-k {bounds.topk}, depth {bounds.depth}, {bounds.tokens} verified tokens; sibling "
        f"factor {answer.sibling:g}" + (" (an assumption; --sibling-factor)" if answer.sibling_assumed else "")
    )
    for line in capacity_summary(answer.capacity, dep):
        print(line)
    print()
    print(
        table(
            ["batch", "best tree", "tokens/step", "speedup", "best chain", "chain speedup", "recommendation"],
            [
                [
                    r["batch"],
                    "-"
                    if r["tree"] is None
                    else (
                        "chain"
                        if r["tree"]["topk"] == 1
                        else f"k{r['tree']['topk']} d{r['tree']['depth']} n{r['tree']['tokens']}"
                    ),
                    f"{r['tokens_per_round']:.3f}",
                    f"{r['speedup']:.3f}",
                    f"gamma {r['chain_gamma']}",
                    f"{r['chain_speedup']:.3f}",
                    r["recommendation"] + ("" if r["fits_with_draft"] else "; does not fit in memory with the draft"),
                ]
                for r in rows
            ],
            "><>>>><",
        )
    )
    print(
        "\nE(tree) is exact for independent acceptance per depth and sibling rank (specsim.speculation.acceptance); a tree round "
        "drafts depth levels of top-k tokens per sequence and verifies the chosen tokens in one pass"
    )
    print(answer.model_error.said())
    print_notes(dep)
    return 0


def run_speedup(args: argparse.Namespace) -> int:
    from specsim.answers import closed_form_answer, speedup_rows
    from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS

    if args.cost_ratio is not None:
        if args.alpha is None and args.acceptance is None and args.metrics is None:  # no drafter: no published alpha
            raise ValueError("--cost-ratio takes --alpha (or a --metrics page): the closed form names no drafter")
        acc, acc_label = resolve_acceptance(args)
        if getattr(acc, "cumulative", None) == ():  # a page's one alpha (its mean length, no per-position counters)
            acc = acc.alpha
        if not isinstance(acc, float):
            raise ValueError("--cost-ratio takes one alpha; per-position acceptance needs the step-time model")
        model_flags = flags_given(
            args, "speedup", ("alpha", "metrics", "metrics_gamma", "metrics_model", "gamma", "cost_ratio", "json")
        )
        if model_flags:
            raise ValueError(
                f"--cost-ratio replaces the step-time model and the load; drop {', '.join(model_flags)} or drop "
                "--cost-ratio (it takes --alpha or --metrics, --gamma, --json and -v)"
            )
        out = closed_form_answer(acc, args.gamma, args.cost_ratio)
        if args.json:
            print_json(out)
        else:
            print(f"{acc_label}, gamma {args.gamma}, c {args.cost_ratio:g} (verification costs one decode step)")
            print(f"tokens per step {out['tokens_per_round']:.4f}, speedup {out['speedup']:.4f}")
        return 0
    at = _at_load(args)
    if at is not None:
        return run_at_load(args, *at, gamma=args.gamma)
    # The parser leaves the model's flags unset so that --cost-ratio can refuse them; the library's defaults apply here.
    if args.context is None:
        args.context = UnsetInt(DEFAULT_CONTEXT_TOKENS, ARTICLE_CONTEXT)
        calibrated_context(args)
    dep = deployment(args)
    cap = _require_fits(dep, args.context, args)
    acc, acc_label = model_acceptance(args, dep, args.context)
    rows, context = speedup_rows(dep, acc, acc_label, args.gamma, args.batch, args.context, cap=cap)
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    print(describe(dep, context))
    low, high = min(r["tokens_per_round"] for r in rows), max(r["tokens_per_round"] for r in rows)
    tokens = f"{low:.4f}" if low == high else f"{low:.4f}-{high:.4f} (the verified prefix varies with batch)"
    print(f"{acc_label}, gamma {args.gamma}: {tokens} tokens per target pass\n")
    print(
        table(
            ["batch", "speedup", "t_T ms", "t_D ms", "t_V ms", "host ms", "round ms", "c", "t_V/t_T"],
            [
                [
                    r["batch"],
                    f"{r['speedup']:.3f}",
                    ms(r["t_target_s"]),
                    ms(r["t_draft_s"]),
                    ms(r["t_verify_s"]),
                    ms(r["t_host_s"]),
                    ms(r["t_round_s"]),
                    f"{r['cost_ratio']:.3f}",
                    f"{r['t_verify_s'] / r['t_target_s']:.3f}",
                ]
                for r in rows
            ],
            ">>>>>>>>>",
        )
    )
    graphless = _graphless_said(rows)
    if graphless:
        print(f"round = {dep.drafter.round_formula} + t_V{graphless} + host")
    print_notes(dep)
    return 0


def _graphless_said(rows: list) -> str:
    """The round's term for draft steps run without a CUDA graph, where any row has it (no column shows it): " + the
    draft steps run without a CUDA graph (X ms at ...; -v gives which, why and the source)"; "" elsewhere."""
    shown = [r for r in rows if r.get("t_graphless_s")]
    if not shown:
        return ""
    r = shown[0]
    return (
        f" + the draft steps run without a CUDA graph ({r['t_graphless_s'] * 1e3:.3f} ms at gamma "
        f"{r['gamma']}; -v gives which, why and the source of its size)"
    )


def run_steptime(args: argparse.Namespace) -> int:
    from specsim.answers import steptime_rows
    from specsim.describe.parallel import collective_count
    from specsim.timing.roofline import weight_only_dtypes

    basis = ""
    if isinstance(args.context, Unset):  # not given: a calibration's runs' mean context, as every answer takes it
        from specsim.cli.args import calibrated_context_of

        runs = calibrated_context_of(args)
        if runs is not None:
            args.context = [runs[0]]
        basis = f" ({ARTICLE_CONTEXT if runs is None else runs[1]}; --context to set)"
    dep = deployment(args, draft=False)
    model, hw, engine = dep.target, dep.hardware, dep.engine
    rows, provenance = steptime_rows(dep, args.batch, args.tokens_per_seq, args.context)
    if args.json:
        print_json(rows)
    else:
        gpus = f" x {model.tp} GPUs" if model.tp > 1 else ""
        several = len(args.tokens_per_seq) > 1 or len(args.context) > 1
        what = (
            ""
            if several
            else f": {args.tokens_per_seq[0]} new token(s) per sequence over {args.context[0]} cached{basis}"
        )
        print(f"{model.describe()} on {hw.name}{gpus}{what}")
        from specsim.cli import report

        print(
            (
                "\n".join(f"step times: {line}" if i == 0 else line for i, line in enumerate(provenance))
                if report.VERBOSE
                else dep.brief()
            )
            + "\n"
        )
        lead = ["q", "context"] if several else []
        headers = lead + ["batch", "step ms", "roofline compute ms", "roofline memory ms", "overhead ms"]
        headers += ["all-reduce ms"] if model.tp > 1 else []
        print(
            table(
                headers + ["bound", "FLOP/byte", "source"],
                [
                    ([r["tokens_per_seq"], r["context"]] if several else [])
                    + [r["batch"], ms(r["step_time_s"]), ms(r["compute_s"]), ms(r["memory_s"]), ms(r["overhead_s"])]
                    + ([ms(r["comm_s"])] if model.tp > 1 else [])
                    + [r["bound"], f"{r['flop'] / r['bytes']:.1f}", r["timing_source"]]
                    for r in rows
                ],
                ">" * len(lead) + ">>>>>" + (">" if model.tp > 1 else "") + "<><",
            )
        )
        if model.tp > 1:
            print(
                f"\nper GPU: weights {model.weight_bytes / 1e9:.1f} GB, KV {model.kv_bytes_per_token / 1e3:.1f} kB per token; "
                f"the all-reduce column (the collectives' kernels) is inside the step time, and the overhead column holds "
                f"the {engine.name} preset's {engine.collective_s * 1e6:.1f} us x {collective_count(model)} collectives = "
                f"{engine.collectives_s(model) * 1e3:.2f} ms of engine time around them"
            )
        print(
            f"\nridge: {hw.ridge_for(model.weight_dtype):.1f} FLOP/byte (the {model.weight_dtype} weight matmuls'; "
            "compute-bound above it; the bound column is the roofline's)"
        )
        weight_only = weight_only_dtypes(model)
        if weight_only:
            print(
                f"the {' and '.join(weight_only)} weight-only GEMMs have a roofline of their own, run before or after the "
                "rest's, so a step can take more than overhead + max(compute, memory) "
                "(specsim.timing.roofline._serial_phases_s)"
            )
    for note in dep.notes():
        print(f"note: {note}", file=sys.stderr)
    return 0


def run_capacity(args: argparse.Namespace) -> int:
    from specsim.answers import capacity_at, capacity_record, memory_counted
    from specsim.cli import report

    dep = deployment(args)
    # a --calibration's limits where none is given, as the other commands' memory checks take them
    tokens, seqs = memory_limits(args, dep)
    if args.json:
        print_json(capacity_record(dep, args.context, args.memory_util, args.gamma, tokens, seqs))
        return 0
    cap = capacity_at(dep, args.context, args.memory_util, args.gamma, tokens, seqs)
    for line in capacity_summary(cap, dep, getattr(args.context, "basis", None)):
        print(line)
    if report.VERBOSE:  # how each model's weights and KV per token are counted (the JSON's memory_counted)
        for line in memory_counted(dep):
            print(line)
    if seqs is None and dep.drafter is not None:  # the engine's own limit where it is below what fits (SGLang's 48)
        limits, where, _ = limits_and_source(args, dep.engine, dep.hardware)
        spec = int(limits.seqs(True))
        if spec < cap.max_batch_with_draft:
            print(
                f"the speculating engine runs at most {counted(spec, 'sequence')} at once (max_num_seqs: "
                f"{where.split(';')[0]})"
            )
    for note in dep.memory_notes():  # the defaults taken and what the configs left unsaid, as every other command says
        print(f"note: {note}", file=sys.stderr)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from specsim.cli.flags import refuse_gamma_with_gamma_max

    refuse_gamma_with_gamma_max(args, "compare")
    at = _at_load(args)
    if at is not None:
        return run_at_load(args, *at, gamma=args.gamma)
    from specsim.answers.compare import compare_answer
    from specsim.speculation.search import searched_gamma_max

    dep = deployment(args)
    acc, acc_label = model_acceptance(args, dep, args.context)
    limits, limits_from, _ = limits_and_source(args, dep.engine, dep.hardware)
    answer = compare_answer(
        dep,
        acc,
        args.batch,
        args.context,
        args.gamma,
        args.gamma_max,
        args.max_context,
        args.memory_util,
        *memory_limits(args, dep),
        limits=limits,
        limits_from="--max-num-seqs" if args.max_num_seqs is not None else limits_from.split(";")[0],
        label=acc_label,
    )
    frame, cap = answer.frame, answer.capacity
    if args.json:
        print_json(answer.records())
        print_notes(dep)
        return 0
    print(describe(dep, args.context))
    searched = (
        f"gamma searched over 0..{searched_gamma_max(dep, acc, args.gamma_max, args.context)}"  # as optimal-gamma
    )
    print(f"{acc_label}; " + (searched if args.gamma is None else f"gamma fixed at {args.gamma}"))
    for line in capacity_summary(cap, dep):
        print(line)
    print()
    tp = dep.target.tp
    rows = []
    for r in frame.itertuples():
        fits = "yes" if r.fits_with_draft else ("plain only" if r.fits_without_draft else "no")
        rows.append(
            [
                r.batch,
                r.gamma,
                f"{r.latency_plain_s * 1e3:.2f}",
                f"{r.latency_spec_s * 1e3:.2f}",
                f"{r.tokens_per_s_seq_plain:.0f}",
                f"{r.tokens_per_s_seq_spec:.0f}",
                f"{r.tokens_per_s_plain:,.0f}",
                f"{r.tokens_per_s_spec:,.0f}",
            ]
            + ([f"{r.tokens_per_s_per_gpu_plain:,.0f}", f"{r.tokens_per_s_per_gpu_spec:,.0f}"] if tp > 1 else [])
            + [f"{r.speedup:.2f}", fits]
        )
    # On one GPU the device's throughput; with tensor parallelism the deployment's, and each GPU's beside it.
    whole = "device" if tp == 1 else f"{tp} GPUs"
    per_gpu = ["per GPU plain", "per GPU spec"] if tp > 1 else []
    print(
        table(
            ["batch", "gamma", "ms/token plain", "ms/token spec", "tok/s/seq plain", "tok/s/seq spec"]
            + [f"{whole} tok/s plain", f"{whole} tok/s spec"]
            + per_gpu
            + ["speedup", "fits"],
            rows,
            ">" * (9 + len(per_gpu)) + "<",
        )
    )
    _print_compare_verdicts(answer)
    at_largest = answer.at_largest()
    if at_largest is not None:
        spec_peak, plain_peak = at_largest
        (spec_b, plain_b), by = answer.largest_batches(), answer.limited_by()
        print(
            f"\nat the largest batch the engine runs: {spec_peak:,.0f} tok/s with speculation (b = {spec_b}, "
            f"{_limit_word(by[0], answer.limits, True)}) against {plain_peak:,.0f} tok/s without the draft "
            f"(b = {plain_b}, {_limit_word(by[1], answer.limits, False)}): "
            f"{spec_peak / plain_peak - 1:+.0%} {'device' if tp == 1 else 'deployment'} throughput"
        )
        if "max_num_seqs" in by:
            print(f"note: the engine's max_num_seqs: {answer.limits_from}", file=sys.stderr)
    spec_seqs = int(answer.limits.seqs(True))
    past = [r.batch for r in frame.itertuples() if r.batch > spec_seqs]
    if past:  # rows the speculating engine never decodes (its fits column is memory's)
        print(
            f"note: batch {', '.join(map(str, past))} {'is' if len(past) == 1 else 'are'} past the speculating engine's "
            f"max_num_seqs {spec_seqs} ({answer.limits_from}): it does not decode them speculating; those rows are "
            "the decode batch's",
            file=sys.stderr,
        )
    print_notes(dep)
    return 0


def _print_compare_verdicts(answer) -> None:
    """Under compare's table: the rows whose gain is too close to call (their gamma column alone reads as a call) or on
    the line, in optimal-gamma's words, and then the error they are inside and where it comes from; nothing where every
    row's gamma column is the call (--json carries every row's verdict)."""
    from specsim.answers.load import _change
    from specsim.answers.verdict import VERDICTS, on_the_line_said, too_close_said

    error = answer.model_error
    close = [
        f"batch {batch}: "
        + (
            too_close_said(f"gamma={w[0]}", f"{_change(w[1] - 1)} speedup", error)
            if said == VERDICTS[2]
            else f"{said}: gamma={w[0]} gives {_change(w[1] - 1)} speedup"
        )
        + (on_the_line_said(w[1] - 1.0, error, bool(w[0] > 0 and w[1] >= 1.0)) if line else "")
        for batch, w, said, line in zip(
            answer.frame["batch"], answer.weighed(), answer.verdicts(), answer.on_the_line()
        )
        if said == VERDICTS[2] or line
    ]
    if close:
        print("\n".join([*close, error.said(rtol=False)]))  # compare has no --rtol


def _limit_word(by: str, limits, speculating: bool) -> str:
    """What stops compare's largest batch: the memory that fits it, or the engine's max_num_seqs."""
    return "what fits in memory" if by == "memory" else f"max_num_seqs {int(limits.seqs(speculating))}"


def run_explain(args: argparse.Namespace) -> int:
    """Where a round's time goes against batch, next to a plain decode step (text, JSON or a PNG)."""
    from specsim.answers.anatomy import round_anatomy
    from specsim.cli.flags import refuse_gamma_with_gamma_max
    from specsim.speculation.search import searched_gamma_max

    refuse_gamma_with_gamma_max(args, "explain")
    at = _at_load(args)
    if at is not None:
        if args.plot:
            raise ValueError("--plot draws the decode-batch view: drop --concurrency/--rate, or --plot")
        return _explain_at_load(args, *at)
    dep = deployment(args)
    cap = _require_fits(dep, args.context, args)
    acc, acc_label = model_acceptance(args, dep, args.context)
    out = None
    if args.plot:
        from specsim.core.files import check_output

        out = check_output(args.plot, (".png", ".svg"), "--plot")  # refuse a bad path before computing anything
    answer = round_anatomy(dep, acc, acc_label, args.batch, args.context, args.gamma, args.gamma_max, cap=cap)
    if args.json:  # the text's conclusions over all the batches, with each row (as compare's largest batch)
        print_json(answer.records())
        print_notes(dep)
    else:
        print(describe(dep, args.context))
        how = (
            f"gamma {args.gamma}"
            if args.gamma is not None
            else f"the best gamma per batch (searched over 0..{searched_gamma_max(dep, acc, args.gamma_max, args.context)}, at least 1)"
        )
        print(f"{acc_label}; {how}; every time below is per round, ms\n")
        # Parts no batch has (collectives on one GPU, an engine's per-iteration time of 0) are left out of the table.
        names = [n for n in answer.parts if any(r["parts_s"][n] > 0 for r in answer.rows)]
        hidden = any(r["hidden_host_s"] > 0 for r in answer.rows)
        headers = (
            ["batch", "gamma", "tokens", "decode"]
            + names
            + (["hidden host"] if hidden else [])
            + ["round", "decode x tokens", "speedup"]
        )
        body = [
            [r["batch"], r["gamma"], f"{r['tokens_per_round']:.2f}", ms(r["t_target_s"])]
            + [ms(r["parts_s"][n]) for n in names]
            + ([ms(r["hidden_host_s"])] if hidden else [])
            + [ms(r["t_round_s"]), ms(r["t_target_s"] * r["tokens_per_round"]), f"{r['speedup']:.3f}"]
            for r in answer.rows
        ]
        print(table(headers, body, ">" * len(headers)))
        print(
            "\nround = the parts added up"
            + (" (hidden host: the engine's host work running behind the GPU passes, not added)" if hidden else "")
            + "; speculation pays while round < decode x tokens"
        )
        for line in answer.findings():
            print(f"- {line}")
        print_notes(dep)
    if out is not None:
        from specsim.figures.plots import save_round_anatomy

        title = f"{dep.target.name} + {dep.drafter.name} on {dep.hardware.name}, {dep.engine.key}, L = {args.context}"
        path = save_round_anatomy(answer.rows, out, title)
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _require_fits(dep, context: int, args: argparse.Namespace | None = None):
    """Refuse a target whose weights cannot be held, as optimal-gamma does (naming the TP or dtype that fits); with
    ``args`` (a batch view's), say which of its --batch do not fit in memory with the draft, as optimal-gamma's rows
    and compare's column do.  Returns the capacity (at the flags' --memory-util and limits) the answer is checked
    against."""
    from specsim.answers import deployment_capacity

    limits = memory_limits(args, dep) if args is not None else (None, None)
    memory = getattr(args, "memory_util", None)
    cap = deployment_capacity(dep, int(context), getattr(args, "max_context", None), memory, *limits)
    past = [b for b in (getattr(args, "batch", None) or []) if b > cap.max_batch_with_draft]
    if past and dep.drafter is not None:
        print(
            f"note: batch {', '.join(map(str, past))} {'does' if len(past) == 1 else 'do'} not fit in memory with the "
            f"draft at {cap.context_tokens} tokens each (specsim capacity: at most {cap.max_batch_with_draft} with it, "
            f"{cap.max_batch_without_draft} without)",
            file=sys.stderr,
        )
    return cap


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_optimal_gamma(sub) -> None:
    p = sub.add_parser(
        "optimal-gamma",
        help="the best gamma per batch size, with its speedup and step times",
        description="The speedup-maximising gamma per batch size; gamma 0 means turn speculation off.",
    )
    add_acceptance_args(p)
    add_deployment_args(p)
    p.add_argument(
        "--gamma-max",
        type=gamma_max_type,
        default=DEFAULT_GAMMA_MAX,
        help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})",
    )
    p.add_argument(
        "--rtol",
        type=nonneg_number,
        default=DEFAULT_RTOL,
        help="pick the smallest gamma within this fraction of the best speedup (default 0: exact argmax)",
    )
    add_tree_args(p)
    add_memory_args(p)
    add_load_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_optimal_gamma)


def _parser_explain(sub) -> None:
    p = sub.add_parser(
        "explain",
        help="where a speculative round's time goes against batch, next to a plain decode step",
        description="A round's parts per batch size (draft steps, verification, draft extend, collectives, "
        "the engine's per-iteration and host time, hidden or not) next to the plain decode step it "
        "replaces and the tokens it yields: why speculation stops paying.",
    )
    add_acceptance_args(p)
    add_deployment_args(p)
    p.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        help="draft steps per round (default: the best gamma per batch, at least 1)",
    )
    p.add_argument(
        "--gamma-max",
        type=gamma_max_type,
        default=DEFAULT_GAMMA_MAX,
        help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})",
    )
    p.add_argument("--plot", type=nonempty("plot"), metavar="FILE", help="also draw the breakdown (.png or .svg)")
    add_load_args(p)
    add_memory_util(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_explain)


def _parser_speedup(sub) -> None:
    p = sub.add_parser(
        "speedup",
        help="speedup of one (alpha, gamma), from a cost ratio or the step-time model",
        description="Speedup for a given alpha and gamma: from --cost-ratio c (closed form, "
        "verification costs one decode step) or from the step-time model per batch size.",
    )
    add_acceptance_args(p)
    p.add_argument("--gamma", type=gamma_type, required=True, help="drafted tokens per step, >= 0")
    p.add_argument("--cost-ratio", type=nonneg_number, help="c = t_D / t_T; replaces the step-time model")
    add_deployment_args(p, defaults=False)
    add_load_args(p)
    add_memory_util(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_speedup)


def _parser_steptime(sub) -> None:
    p = sub.add_parser(
        "steptime", help="modelled time of one forward pass, with its compute, memory and overhead parts"
    )
    p.add_argument("--hardware", help=f"profile name or YAML path (default {DEFAULT_HARDWARE})")
    p.add_argument("--model", help=f"model name or config.json path (default {DEFAULT_TARGET})")
    p.add_argument(
        "--calibration", metavar="FILE", help="a calibrate-engine --out file (its profile, target and engine terms)"
    )
    p.add_argument("--batch", type=batches_type, default=list(DEFAULT_BATCHES), help="comma-separated batch sizes")
    p.add_argument(
        "--tokens-per-seq",
        type=int_list(1, "tokens-per-seq", MAX_GAMMA + 1),
        default=[1],
        help="comma-separated new tokens per sequence, q (1: decode; gamma+1: verification; default 1)",
    )
    p.add_argument(
        "--context",
        type=int_list(0, "context", MAX_CONTEXT),
        default=Unset([DEFAULT_CONTEXT_TOKENS]),
        help=f"comma-separated cached tokens per sequence (default {DEFAULT_CONTEXT_TOKENS}, {ARTICLE_CONTEXT}; a "
        "--calibration's runs' mean where they are of one workload's lengths)",
    )
    add_model_args(p, draft=False)
    add_timing_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_steptime)


def _parser_capacity(sub) -> None:
    p = sub.add_parser("capacity", help="memory: do the models fit, and the largest batch with and without the draft")
    add_deployment_args(p, batch=False, timed=False)
    add_memory_util(p)
    p.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        default=None,
        help="draft tokens a round (the engine's num_speculative_tokens) a hybrid target's speculative scratch is "
        "sized for (default: a block drafter's block, else 8, specsim's largest serving gamma)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_capacity)


def _parser_compare(sub) -> None:
    p = sub.add_parser("compare", help="latency and throughput with and without speculation, per batch size")
    add_acceptance_args(p)
    add_deployment_args(p)
    p.add_argument("--gamma", type=gamma_type, help="fixed gamma (default: the optimal gamma per batch size)")
    p.add_argument(
        "--gamma-max",
        type=gamma_max_type,
        default=DEFAULT_GAMMA_MAX,
        help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})",
    )
    add_memory_args(p)
    add_load_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_compare)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {
    "optimal-gamma": _parser_optimal_gamma,
    "explain": _parser_explain,
    "speedup": _parser_speedup,
    "steptime": _parser_steptime,
    "capacity": _parser_capacity,
    "compare": _parser_compare,
}


# -- answers at a load ---------------------------------------------------------------------------------------------------
def _at_load(args: argparse.Namespace) -> tuple[str, list] | None:
    """(kind, loads) where --concurrency or --rate asks for the answer at a load; None for the decode-batch view.  The
    batch view's flags beside a load are refused, as are the load's lengths without one."""
    from specsim.cli.flags import given

    concurrency, rate = getattr(args, "concurrency", None), getattr(args, "rate", None)
    if concurrency is None and rate is None:
        extra = [f"--{f.replace('_', '-')}" for f in ("input_len", "output_len") if getattr(args, f, None) is not None]
        if extra:
            raise ValueError(
                f"{' and '.join(extra)} {'describe' if len(extra) > 1 else 'describes'} the requests of a load: give "
                "--concurrency or --rate with them"
            )
        _batches_within_seqs(args)
        return None
    for flag in ("batch", "context", "max_context", "contexts"):  # schedule's --contexts: its (batch, context) table
        if given(getattr(args, flag, None)):
            raise ValueError(
                f"--{flag.replace('_', '-')} is the decode-batch view; at --concurrency or --rate the load and "
                "--input-len/--output-len set the batch and context"
            )
    if getattr(args, "tree", "chain") not in (None, "chain"):
        raise ValueError("--tree is searched per decode batch; at --concurrency or --rate give a chain (drop --tree)")
    return ("concurrency", concurrency) if concurrency is not None else ("rate", rate)


def _batches_within_seqs(args: argparse.Namespace) -> None:
    """The decode-batch view under a given --max-num-seqs: a batch past it (--batch, schedule's --max-batch) refused,
    as an engine of that limit never decodes it; the default batches cut to it."""
    from specsim.cli.flags import Unset, given

    seqs = getattr(args, "max_num_seqs", None)
    if seqs is None:
        return
    for flag in ("batch", "max_batch"):
        value = getattr(args, flag, None)
        if isinstance(value, Unset):
            setattr(args, flag, Unset([b for b in value if b <= seqs]))
        elif given(value):
            past = [b for b in (value if isinstance(value, list) else [value]) if b > seqs]
            if past:
                raise ValueError(
                    f"--{flag.replace('_', '-')} {past[0]} is past --max-num-seqs {seqs}: the engine never decodes "
                    f"more than {counted(seqs, 'sequence')} at once; give batches up to {seqs} or drop --max-num-seqs"
                )


def load_answer_of(
    args: argparse.Namespace, dep, acc, acc_label: str, kind: str, loads: list, lengths, gamma=None, rtol: float = 0.0
):
    """:func:`specsim.answers.load.load_answer` at the loads the flags give, with the engine's limits they give (the KV
    cache at --memory-util, the engine's own share where not given)."""
    from specsim.answers.load import load_answer
    from specsim.cli.flags import engine_limits

    limits, args.limits_said = engine_limits(args, dep.engine, dep.hardware, offline=kind == "batch")
    return load_answer(
        dep,
        acc,
        acc_label,
        kind,
        loads,
        lengths.input_tokens,
        lengths.output_tokens,
        gamma=gamma,
        gamma_max=getattr(args, "gamma_max", DEFAULT_GAMMA_MAX),
        limits=limits,
        memory_utilization=getattr(args, "memory_util", None),
        prompt_sample=lengths.prompt_sample,
        output_sample=lengths.output_sample,
        lengths=lengths.description,
        rtol=rtol,
    )


def run_at_load(args: argparse.Namespace, kind: str, loads: list, gamma: int | None = None) -> int:
    """optimal-gamma, speedup and compare at --concurrency or --rate: the best gamma (or ``gamma``) per load with what a
    benchmark measures there, plain and speculating."""

    dep = deployment(args)
    lengths = load_lengths(args)
    acc, acc_label = model_acceptance(args, dep, lengths.context_tokens, lengths=True)
    # optimal-gamma's --rtol, as its decode-batch view takes it (speedup and compare have none)
    answer = load_answer_of(args, dep, acc, acc_label, kind, loads, lengths, gamma, getattr(args, "rtol", 0.0))
    short = _short_runs_said(args, kind, loads)
    if args.json:
        print_json(answer.records(args.limits_said))
        print_notes(dep, short)
        return 0
    _print_load(answer, dep, args, getattr(args, "memory_util", None), "rtol" in vars(args))
    print_notes(dep, short)
    return 0


#: Requests a user below which a closed loop's run is its first burst and last wave more than its steady state.
SHORT_RUN_PER_USER = 20


def _short_runs_said(args: argparse.Namespace, kind: str, loads: list) -> list:
    """A note where a calibration's runs at the concurrencies answered were short (fewer than
    :data:`SHORT_RUN_PER_USER` requests a user): its fitted figures there are those runs' means, these answers the long
    run's, and the two differ (a helper found 1.35x fitted against 1.22x answered at 64 users and 200 requests)."""
    from specsim.cli.args import calibration

    cal = calibration(args)
    if cal is None or kind != "concurrency":
        return []
    short = {}
    for run in cal.record.get("runs", []):
        users = run["load"].removeprefix("concurrency ")
        if users.isdigit() and int(users) in loads and run.get("requests", 1e9) < SHORT_RUN_PER_USER * int(users):
            short.setdefault(int(users), run["requests"])
    if not short:
        return []
    at = ", ".join(f"{counted(u, 'user')} ({counted(n, 'request')})" for u, n in sorted(short.items()))
    return [
        f"{cal.name}'s runs at {at} had fewer than {SHORT_RUN_PER_USER} requests a user: its fitted figures there are "
        "those runs' means, their first burst and last wave in; these answers are the long run's (serve-sim "
        "--requests N plays a run of N)"
    ]


def _search_stopped(dep, searched: int, bound: str) -> str:
    """The note where the drafter or the acceptance, not --gamma-max, stopped the gamma search (``bound``:
    :func:`specsim.speculation.search.search_bound`), the batch and the load views alike; "" otherwise."""
    from specsim.speculation.search import DRAFTERS_MOST, LAST_MEASURED, LAST_POSITIONS

    if bound == DRAFTERS_MOST:
        return f"note: {dep.drafter.label} drafts at most {searched} tokens a round: gamma is not searched past them"
    if bound == LAST_MEASURED:
        return (
            f"note: acceptance is measured for {counted(searched, 'position')}: gamma is not searched past "
            f"{'it' if searched == 1 else 'them'} (no extrapolation)"
        )
    if bound == LAST_POSITIONS:
        return (
            f"note: at this context the target's last positions leave {searched} draft token(s) a round: vLLM cuts a "
            "round's drafts to max_model_len - num_computed_tokens - 1 tokens (vllm/v1/core/sched/scheduler.py 0.33.0 "
            "L852-857), so gamma is not searched past them"
        )
    return ""


def _capacity_said(row: dict) -> str:
    """Which arm of a load row is past capacity (:meth:`specsim.answers.load.LoadAnswer.past_capacity`), in the
    recommendation's words; "" where both keep up."""
    past = row["past_capacity"]
    if not past:
        return ""
    if row["gamma"] == 0 or len(past) == 2:
        return "both arms past capacity" if row["gamma"] else "past capacity"
    if past == ["plain"]:
        return (
            f"plain decoding cannot serve this rate; speculating keeps up at TPOT {row['spec']['tpot_s'] * 1e3:.2f} ms"
        )
    return f"speculating cannot serve this rate; plain decoding keeps up at TPOT {row['plain']['tpot_s'] * 1e3:.2f} ms"


def _metastable_said(answer) -> list[str]:
    """Per load and arm past capacity only in the long run (:attr:`specsim.serving.steady.SteadyState.unqueued_per_s`):
    that a run may keep up before its engine first fills."""
    out = []
    for r in answer.rows:
        arms = (("plain", "plain"),) if not r["gamma"] else (("plain", "plain"), (f"gamma {r['gamma']}", "spec"))
        out.extend(
            f"{r['load']} {arm}: past capacity in the long run, as its full engine with a queue behind it preempts "
            f"and serves {r[key]['requests_per_s']:.2f} requests/s, less than the load; with none queued it serves up "
            f"to {r[key]['unqueued_requests_per_s']:.2f}/s, so a run may keep up below capacity until a Poisson swing "
            "first fills the engine, and from then its queue grows; how soon that comes is not modelled (serve-sim "
            "--rate plays a run of your length)"
            for arm, key in arms
            if r[key]["unqueued_requests_per_s"] is not None
        )
    return out


def _print_load(answer, dep, args: argparse.Namespace, memory_util: float | None = None, rtol: bool = False) -> None:
    """The load answer's table and notes; ``args`` the command's (its engine limits' clause, --max-num-seqs)."""
    from specsim.cli import report

    limits_said = getattr(args, "limits_said", "")

    print(describe(dep, int(mean_context_tokens(answer.input_tokens, answer.output_tokens))))
    top = int(answer.state.gamma[-1, 0])
    searched = (
        f"gamma {answer.fixed_gamma}"
        if answer.fixed_gamma is not None
        else f"gamma searched over 0..{top} (the most output tokens per second"
        + (", the shortest TPOT while the engine keeps up)" if answer.kind == "rate" else " at each load)")
        + (f", the smallest within {answer.rtol:g} of it (--rtol)" if answer.rtol else "")
    )
    print(f"{answer.acceptance}; {searched}")
    said = "" if answer.fixed_gamma is not None else _search_stopped(dep, top, answer.gamma_bound)
    if said:
        print(said)
    where = "in batches of its own" if answer.limits.prefill_apart else "beside the decoding sequences"
    print(
        f"requests: {answer.lengths}; engine: {answer.limits.label}{limits_said}; the serving model (chunked prefill {where})\n"
    )
    from specsim.serving.limits import limited_said

    rows = []
    for r in answer.rows:
        a, b = r["plain"], r["spec"]

        def pair(key, scale=1e3, fmt="{:.2f}", a=a, b=b):
            return f"{fmt.format(a[key] * scale)} / {fmt.format(b[key] * scale)}"

        def tokens_per_s(a=a, b=b):  # whole tokens, and 3 figures under 100: a rate of 0.001/s gave "0 / 0"
            return " / ".join(
                f"{v:,.0f}" if v >= 99.5 else f"{v:.3g}" for v in (a["output_tokens_per_s"], b["output_tokens_per_s"])
            )

        # Each arm's own: past capacity (no steady TTFT) for one does not hide the other's.
        ttft = (
            "past capacity"
            if a["ttft_s"] is None and b["ttft_s"] is None
            else " / ".join("past capacity" if x["ttft_s"] is None else f"{x['ttft_s'] * 1e3:.1f}" for x in (a, b))
        )
        # A speculating engine that holds fewer requests than plain decoding says so in its recommendation.
        said = "without the drafter" in r["recommendation"]
        flags = [x for x in (_capacity_said(r), limited_said(b["limited_by"]) if not said else "") if x]
        rows.append(
            [
                r["load"],
                r["gamma"],
                "n/a" if r["speedup_tpot"] is None else f"{r['speedup_tpot']:.3f}",
                pair("tpot_s"),
                pair("itl_s"),
                ttft,
                tokens_per_s(),
                pair("mean_batch", 1.0, "{:.1f}"),
                r["recommendation"] + (f" ({', '.join(flags)})" if flags else ""),
            ]
        )
    print(
        report.table(
            [
                "load",
                "gamma",
                "speedup",
                "TPOT ms",
                "ITL ms",
                "TTFT ms",
                "output tok/s",
                "decode batch",
                "recommendation",
            ],
            rows,
            "<>>>>>>><",
        )
    )
    print(
        "each pair: plain / speculating; speedup = plain TPOT / speculative TPOT at that load"
        + (
            " (n/a where an arm is past capacity: it cannot serve the rate, and its TPOT is its full engine's)"
            if any(r["past_capacity"] for r in answer.rows)
            else ""
        )
        + "; decode batch: the mean sequences decoding at once (time-weighted over the engine's busy time, iterations "
        "of prompts alone at 0)"
    )
    print(answer.model_error.said(rtol))  # (the command's --rtol, where it has one)
    from specsim.serving.capacity import kv_error_said, memory_share, no_room_at

    dep = answer.deployment
    if answer.speculation_has_no_room:  # the speculating engine cannot start: say why, and what to change
        longest = answer.input_tokens + answer.output_tokens
        said = no_room_at(dep, True, answer.state.kv_bytes[1], memory_util, answer.limits, longest)
        print(f"note: no speculation: {said}", file=sys.stderr)
    held_by_kv = any("kv cache" in (r["plain"]["limited_by"], r["spec"]["limited_by"]) for r in answer.rows)
    if held_by_kv and memory_util is None:  # the share of memory moves the answer there: say whose it is
        said = memory_share(dep, None, answer.limits.max_batched_tokens, answer.limits.max_num_seqs).where
        print(
            f"note: the KV cache holds fewer users than some loads bring; its size takes {said}; --memory-util to "
            f"give your engine's setting; the KV cache is {kv_error_said(dep.engine.name)}",
            file=sys.stderr,
        )
    import numpy as np

    from specsim.serving.steady import preemption_expected

    limits = answer.limits.for_deployment(dep)
    policy = limits.kv_policy
    # of the rows the answer shows (plain and each load's gamma), not of every gamma its search tried
    expected = preemption_expected(answer.state, limits)
    shown = np.zeros(expected.shape, dtype=bool)
    shown[0] = True
    shown[np.asarray(answer.best, dtype=int), np.arange(expected.shape[1])] = True
    if (held_by_kv or (expected & shown).any()) and policy.preempts:
        # the engine admits on prompts and preempts as they grow
        print(
            f"note: where the KV cache holds fewer users than the load brings, the engine is expected to preempt "
            f"({policy.said}): the requests held are sized at the tokens each holds on average; at a concurrency, "
            "at a rate past the capacity of the engine the cache fills (and below it, the share of the time Poisson "
            "swings fill it), and in an offline batch (a closed loop whose "
            "queue drains), the recompute of the preempted and their wait at the queue's front are charged in the "
            "mean (specsim.serving.preemption), not the longer waits of requests finishing in bursts nor prefix "
            "caching keeping a preempted request's blocks; serve-sim plays them and counts the preemptions",
            file=sys.stderr,
        )
    waits = [  # an open loop's TTFT where a tenth or more of it is the wait for admission (specsim.serving.arrivals)
        f"{r['load']} {arm} {r[key]['admission_wait_s'] * 1e3:,.0f} of {r[key]['ttft_s'] * 1e3:,.0f} ms"
        for r in answer.rows
        for arm, key in (("plain", "plain"), ("speculating", "spec"))
        if r[key]["ttft_s"] and r[key]["admission_wait_s"] > 0.1 * r[key]["ttft_s"]
    ]
    if waits:
        from specsim.serving.arrivals import admission_said

        print(
            f"note: TTFT waiting for admission at {'; '.join(waits)}: {admission_said(answer.fixed_lengths)}",
            file=sys.stderr,
        )
    for said in _metastable_said(answer):
        print(f"note: {said}", file=sys.stderr)
    steps = [  # closed loops of fixed lengths whose users move in step (steady.closed_population): their TTFT says so
        f"{r['load']} {arm} {r[key]['users_in_step']:,.0f} at a time (TTFT {r[key]['ttft_s'] * 1e3:,.1f} ms)"
        for r in answer.rows
        for arm, key in (("plain", "plain"), ("speculating", "spec"))
        if r[key]["users_in_step"] and r[key]["users_in_step"] > 1 and r[key]["ttft_s"] is not None
    ]
    if steps:
        print(
            f"note: users move in step at {'; '.join(steps)}: with {answer.lengths.split(' [')[0]}, nothing random sets "
            "them apart, so they finish together and come back together, each first token waiting behind the group's "
            "prompts, as a benchmark of fixed lengths runs (speculating users drift apart with acceptance); lengths "
            "that vary (--workload; a benchmark's --random-range-ratio above 0) part them (docs/serving.md)",
            file=sys.stderr,
        )
    for r in answer.rows:  # where only the speculating engine queues users: its TTFT carries the wait
        a, b = r["plain"], r["spec"]
        if b["limited_by"] in ("kv cache", "max_num_seqs") and not a["limited_by"] and answer.kind == "concurrency":
            held = int(b["in_engine"])
            more = (
                "--memory-util (the KV cache)"
                if b["limited_by"] == "kv cache"
                else "--max-num-seqs (SGLang: --max-running-requests)"
            )
            print(
                f"note: at {r['load']} the speculating engine holds {counted(held, 'request')} ({b['limited_by']}) and the plain "
                f"one all of them: {int(a['in_engine']) - held} queue, and its TTFT carries the wait; a server that "
                f"holds more: {more}",
                file=sys.stderr,
            )
    if said := answer.planned_limit_said(getattr(args, "max_num_seqs", None) is not None):  # the plan's limit binds
        print(f"note: {said}", file=sys.stderr)


def _explain_at_load(args: argparse.Namespace, kind: str, loads: list) -> int:
    """explain at --concurrency or --rate: each load's round (at the gamma it runs best, or --gamma) at the decode batch
    the load implies, with the others' prompts that ride in its iterations, next to the plain decode step."""
    from specsim.answers.anatomy import load_anatomy
    from specsim.cli import report

    dep = deployment(args)
    lengths = load_lengths(args)
    context = lengths.context_tokens
    acc, acc_label = model_acceptance(args, dep, context, lengths=True)
    answer = load_answer_of(args, dep, acc, acc_label, kind, loads, lengths, gamma=args.gamma)
    rows = load_anatomy(dep, acc, acc_label, answer, context)
    if args.json:
        print_json(rows)
        print_notes(dep)
        return 0
    _print_load(answer, dep, args, getattr(args, "memory_util", None), "rtol" in vars(args))
    names = [n for n in rows[0]["parts_s"] if any(row["parts_s"][n] > 0 for row in rows)]
    print(
        "\nwhere an iteration's time goes at each load, ms (the round at the decode batch the load implies, and the others' "
        "prompts riding in it; batch: the sequences in the iterations a decoding request runs in, itself included, "
        "where the table above's decode batch is the engine's mean over its busy time):"
    )
    body = [
        [
            row["load"],
            f"{row['batch']:.1f}",
            f"{row['gamma']}{'' if row['speculates'] else '*'}",
            f"{row['tokens_per_round']:.2f}",
        ]
        + [ms(row["parts_s"][n]) for n in names]
        + [
            ms(row["prompts_beside_s"]),
            ms(row["iteration_s"]),
            ms(row["plain_iteration_s"]),
            "n/a" if row["speedup_at_gamma"] is None else f"{row['speedup_at_gamma']:.3f}",
        ]
        for row in rows
    ]
    print(
        report.table(
            ["load", "batch", "gamma", "tokens"]
            + names
            + ["prompts beside", "iteration", "plain iteration", "speedup"],
            body,
            "<" + ">" * (len(names) + 7),
        )
    )
    if not all(row["speculates"] for row in rows):
        print(
            "*: not what it runs (the recommendation above says why): the round of the speculating gamma it weighs at "
            "that load, and what speculating so would give there"
        )
    print_notes(dep)
    return 0
