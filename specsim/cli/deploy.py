"""``specsim schedule``: the per-batch gamma (or tree) schedule, in the form each engine takes."""

from __future__ import annotations

import argparse
import sys

from specsim.cli.args import deployment, load_lengths, model_acceptance
from specsim.cli.flags import (
    add_acceptance_args,
    add_deployment_args,
    add_load_args,
    add_memory_args,
    add_tree_args,
    gain_type,
    gamma_max_type,
    int_at_least,
    int_list,
    memory_limits,
    nonneg_number,
)
from specsim.cli.report import describe, print_json, print_notes, table
from specsim.core.defaults import DEFAULT_GAMMA_MAX
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT
from specsim.engines import REGISTRY
from specsim.engines.writers import version_text
from specsim.speculation.schedule import DEFAULT_MIN_GAIN, DEFAULT_SCHEDULE_RTOL

__all__ = ["run_schedule"]


def _output_form(args: argparse.Namespace) -> str:
    """--format as given, ``json`` under --json (which takes no other form) and ``table`` where neither was given."""
    if args.json:
        if args.format not in (None, "json"):
            raise ValueError(f"--json prints the schedule as JSON; it cannot be combined with --format {args.format}")
        return "json"
    return "table" if args.format is None else args.format


def run_schedule(args: argparse.Namespace) -> int:
    from specsim.answers import deployment_capacity
    from specsim.answers.schedule import schedule_answer
    from specsim.speculation.acceptance import parse_tree
    from specsim.speculation.search import require_network

    args.format = _output_form(args)
    engine = REGISTRY.get(args.format)  # the engine whose configuration is written (None: a table or JSON)
    tree = parse_tree(args.tree)
    if tree is None and args.sibling_factor is not None:
        raise ValueError("--sibling-factor applies to --tree topk:K,depth:D,tokens:N only")
    if tree is not None and engine is not None and not engine.takes_trees:
        takers = [e for e in REGISTRY.values() if e.takes_trees]
        raise ValueError(
            f"--tree schedules are written for {' or '.join(e.title for e in takers)} "
            f"(--format {' or '.join(e.name for e in takers)}); {engine.name}'s configuration here drafts a chain: "
            "drop --tree"
        )
    modelled = _engine_for_format(args, engine)
    dep = deployment(args)
    if tree is not None:
        require_network(dep)
    if engine is not None:
        dep.drafter.support(engine)  # the engine the configuration is for takes this drafter (at some release)
        engine.check_pair(dep)
    args.writer_version = _writer_version(args, engine)
    if args.writer_version is not None:  # a drafter the version written for does not run: refused before any output
        dep.drafter.support(engine, args.writer_version)
    at = _at_load_schedule(args)
    lengths = None if at is None else load_lengths(args)
    # At a load the requests' lengths set the context, as the loads' own answers have it: their mean (the serving
    # model's KV rule, specsim.serving.steady), for the acceptance, the memory check and the batch view's header.
    context = args.context if lengths is None else lengths.context_tokens
    if lengths is not None:  # before the memory check, whose refusal names the batch view's flags
        from specsim.answers.load import check_positions

        check_positions(dep, lengths.input_tokens, lengths.output_tokens, lengths.prompt_sample is None)
    acc, acc_label = model_acceptance(args, dep, context, lengths=lengths is not None)
    cap = deployment_capacity(
        dep,
        context,
        args.max_context,
        args.memory_util,
        *memory_limits(args, dep),
    )
    batch_note = _max_batch(args, dep, cap)
    checkpoint = dep.drafter.checkpoint(dep.target, args.draft_checkpoint) if engine is not None else None
    answer = schedule_answer(
        dep,
        acc,
        acc_label,
        cap,
        max_batch=args.max_batch,
        context=context,
        gamma_max=args.gamma_max,
        min_gain=args.min_gain,
        rtol=args.rtol,
        tree=tree,
        sibling=args.sibling_factor,
        contexts=args.contexts,
        load=None if at is None else _load_answer(args, dep, acc, acc_label, *at, lengths),
        max_batch_from=args.max_batch_from,
        rising=_rising(args, engine, dep),
        capped=_capped(args, engine, dep),
    )
    if answer.load is not None and args.format == "table":  # the loads first (in JSON or a configuration, not at all)
        from specsim.cli.model import _print_load

        _print_load(answer.load, dep, args, getattr(args, "memory_util", None), "rtol" in vars(args))
        print()
    ranges = answer.ranges
    if args.per_batch == "require":
        _require_per_batch(args, engine, dep, ranges)
    notes = ([] if modelled is None else [modelled.format(key=dep.engine.key)]) + batch_note + answer.notes
    notes += _positions_stop(args, dep, acc, context) if at is None and tree is None else []
    worst = max((getattr(r, "shortfall", 0.0) for r in ranges), default=0.0)
    if args.rtol > 0:  # a default that moves the answer: said, so that optimal-gamma's other best gamma is explained
        notes.append(
            f"each batch takes the smallest gamma within {args.rtol * 100:g}% of the best (--rtol {args.rtol:g}"
            + (", the default" if args.rtol == DEFAULT_SCHEDULE_RTOL else "")
            + f"; 0 for the schedule nearest each batch's best that {answer.rule}, where optimal-gamma "
            "gives each batch's own best)"
            + (
                f"; gamma {answer.rule}, so some batches sit up to {worst:.1%} below their own best"
                if worst > args.rtol + 1e-9
                else ""
            )
        )
    if engine is not None:
        flags, engine_notes = engine.settings(dep)
        notes += engine_notes
        serve = engine.serve_line(dep, flags)
        if serve is not None:
            notes.append(serve)
    printer = _print_engine if engine is not None else {"json": _print_json, "table": _print_table}[args.format]
    notes += printer(args, answer, checkpoint) or []
    if engine is not None and at is None:
        notes += _static_cost(args, engine, dep, ranges, acc)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.format != "table":
        from specsim.cli import report

        for line in dep.provenance() if report.VERBOSE else [dep.brief()]:
            print(f"note: {line if line.startswith('step times') else 'step times: ' + line}", file=sys.stderr)
    print_notes(dep)
    return 0


def _max_batch(args: argparse.Namespace, dep, cap) -> list[str]:
    """Fill --max-batch, where not given, with the largest batch the engine runs: its max_num_seqs (--max-num-seqs,
    else a --calibration's, else its own on the GPU: :func:`specsim.cli.flags.limits_and_source`), or fewer where no
    more sequences fit in memory with the draft at the context; the line that says where it came from."""
    if args.max_batch is not None:
        args.max_batch_from = "given"
        return []
    from specsim.answers import scheduled_batches
    from specsim.cli.flags import limits_and_source

    given = getattr(args, "max_num_seqs", None)
    limits, where, _ = limits_and_source(args, dep.engine, dep.hardware)  # as the answers at a load take them
    seqs = min(int(limits.seqs(True)), MAX_BATCH)  # the speculating server's: SGLang's is 48 unless given
    said = f"max_num_seqs {seqs}: " + ("--max-num-seqs" if given is not None else where.split(";")[0])
    args.max_batch = scheduled_batches(cap, seqs)
    args.max_batch_from = (
        f"the most sequences that fit in memory with the draft at {cap.context_tokens} tokens each (specsim "
        f"capacity; the engine's {said})"
        if args.max_batch < seqs
        else f"the engine's {said}"
    )
    return [f"scheduled up to batch {args.max_batch}, {args.max_batch_from}; --max-batch to set"]


def _rising(args: argparse.Namespace, engine, dep) -> str:
    """Where the engine release the schedule is for lets it rise with the batch, the source that says so; "" where
    it never rises (:meth:`specsim.engines.engine.Engine.rising_schedule`).  The release is the one --format writes
    for, else the one the modelled engine (--engine, a calibration's, the default) stands for."""
    from specsim.engines import named_release

    if engine is not None:
        return engine.rising_schedule(args.writer_version)
    named = named_release(dep.engine)
    return "" if named is None else REGISTRY[named[0]].rising_schedule(named[1])


def _capped(args: argparse.Namespace, engine, dep) -> str:
    """Where the engine release the schedule is for takes one that may rise back to its batch-1 length but no off tier,
    the source that says so (:meth:`specsim.engines.engine.Engine.capped_rise`); the release is :func:`_rising`'s."""
    from specsim.engines import named_release

    if engine is not None:
        return engine.capped_rise(args.writer_version, dep)
    named = named_release(dep.engine)
    return "" if named is None else REGISTRY[named[0]].capped_rise(named[1], dep)


def _at_load_schedule(args: argparse.Namespace):
    """(kind, loads) where --concurrency or --rate asks for the schedule of the loads the engine will see."""
    from specsim.cli.model import _at_load, _batches_within_seqs

    if getattr(args, "tree", "chain") not in (None, "chain") and (args.concurrency or args.rate):
        raise ValueError("--tree is scheduled per decode batch; at --concurrency or --rate give a chain (drop --tree)")
    at = _at_load(args)
    if at is not None:  # a schedule at loads runs to --max-batch too: past a given --max-num-seqs, refused likewise
        _batches_within_seqs(args)
    return at


def _load_answer(args: argparse.Namespace, dep, acc, label: str, kind: str, loads: list, lengths):
    """The loads the engine will see, each at its best gamma by the serving model (prefill beside the decoding
    sequences): what the schedule at a load is keyed from (:func:`specsim.speculation.schedule.load_schedule`), their
    KV cache at --memory-util, as the schedule's memory check and optimal-gamma at a load have it."""
    from specsim.cli.model import load_answer_of

    return load_answer_of(args, dep, acc, label, kind, loads, lengths)


def _static_cost(args: argparse.Namespace, engine, dep, ranges: list, acc) -> list[str]:
    """A line on what the one length a release without per-batch control runs costs at the batches it was not chosen
    for (issue 37: gamma 6 written for batch 1 gives 1.92x at batch 64, where gamma 4 gives 2.04x)."""
    from specsim.speculation.schedule import static_cost

    gamma = engine.static_gamma(dep, ranges, args.writer_version)
    if gamma is None:
        return []
    v = version_text(args.writer_version)
    costs = static_cost(dep, acc, gamma, ranges, args.context)
    if not costs:
        return []
    cells = "; ".join(
        f"batch {c['batch']}: {c['static']:.2f}x against {c['best']:.2f}x "
        + ("with speculation off" if c["gamma"] == 0 else f"at gamma {c['gamma']}")
        for c in costs
    )
    return [
        f"{engine.title} {v} runs gamma {gamma} at every batch (no per-batch control); what that costs where the "
        f"schedule changes it, at each range's worst batch: {cells}"
    ]


def _engine_list() -> str:
    names = list(REGISTRY)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _require_per_batch(args: argparse.Namespace, engine, dep, ranges: list) -> None:
    """Refuse, before anything is printed, a --format whose engine version has no per-batch control for this drafter."""
    if engine is None:
        raise ValueError(f"--per-batch require applies to --format {_engine_list()}")
    missing = engine.per_batch_missing(dep, ranges, args.writer_version)
    if missing is not None:
        raise ValueError(f"--per-batch require: {missing}; drop it to write the batch-1 length with a note")


def _engine_for_format(args: argparse.Namespace, engine) -> str | None:
    """``--format ENGINE`` models that engine unless ``--engine`` (or a calibration) names a release of it; the line that
    says so.  Another engine is refused: its rounds and limits (SGLang's 48 speculating requests, say) would be written
    into this engine's configuration."""
    from specsim.cli.args import calibration
    from specsim.engines import get_engine

    if engine is None:
        return None
    cal = calibration(args)
    if cal is not None and cal.engine and cal.engine.split("@")[0] != engine.name:
        raise ValueError(
            f"--format {args.format} writes {engine.title}'s configuration, and {cal.name} is a fit of "
            f"{cal.engine.split('@')[0]} runs: a fit of one engine says nothing of another's rounds; calibrate on "
            f"{engine.title} runs for it"
        )
    if args.engine is not None and args.engine.name != engine.name:
        raise ValueError(
            f"--format {args.format} writes {engine.title}'s configuration, and --engine {args.engine.named_as} models "
            f"another engine's rounds and limits: give --engine {engine.name}[@VERSION] or leave it out"
        )
    if args.engine is not None or cal is not None:
        return None

    args.engine = get_engine(args.format)
    return (
        "the round is modelled on {key}, the engine --format " + args.format + " writes for (--engine to model another)"
    )


def _writer_version(args: argparse.Namespace, engine) -> tuple | None:
    """The release the configuration is written for: the one --engine (or the calibration's runs) names where it names
    the --format engine, the release its answers are read at (:func:`specsim.engines.named_release`: ``vllm@0.14`` is
    0.27.0, as its speedups are), else that engine's newest release specsim read."""
    from specsim.cli.args import calibration
    from specsim.engines import named_release, parse_version

    if engine is None:
        return None
    cal = calibration(args)
    # A calibration keeps the release its runs were served by: the configuration is written for that one.
    named = args.engine if args.engine is not None else cal.engine if cal is not None and cal.engine else None
    resolved = None if named is None else named_release(named)
    if resolved is not None and resolved[0] == engine.name:
        return resolved[1]
    return parse_version(engine.name, engine.newest)


def _print_engine(args, answer, checkpoint) -> list[str]:
    """The configuration in the --format engine's own form (each engine module's ``render_schedule``)."""
    text, notes = REGISTRY[args.format].render_schedule(
        answer.ranges, answer.deployment, checkpoint, args.writer_version, args.min_gain, args.max_batch
    )
    print(text)
    return notes


def _print_json(args, answer, checkpoint) -> None:
    print_json(answer.to_dict())


def _print_table(args, answer, checkpoint) -> None:
    from specsim.answers.verdict import VERDICT_RESOLUTION

    dep, tree = answer.deployment, answer.tree
    print(describe(dep, answer.context))
    print(f"{answer.label}; speculate only where the predicted speedup >= {args.min_gain:g}\n")
    if tree is None:
        print(
            table(
                ["batch sizes", "gamma", "predicted speedup", "below the best"],
                [
                    [
                        r.batches,
                        r.gamma,
                        r.speedups if r.gamma else ("off" if r.max_speedup >= 1 else f"K = 0: {r.speedups}"),
                        f"{r.shortfall:.1%}",
                    ]
                    for r in answer.judged
                ],
                "<><>",
            )
        )
        if answer.load is None:
            of = "; 'below the best' is the most a range's speedup falls below the best gamma of its batch sizes"
        else:
            by = "TPOT, the arrivals kept up with" if answer.load.kind == "rate" else "output tokens per second"
            of = (
                " (the loads above, keyed by the decode batch each runs at); 'below the best' is the most a range's "
                f"loads fall below their own best gamma, by {by}"
            )
        print(
            f"\ngamma {answer.rule}{of} (shortfalls within --rtol {args.rtol:g} count as none, the smaller "
            "gamma winning)"
        )
    else:
        print(
            table(
                ["batch sizes", "tree", "predicted speedup"],
                [
                    [
                        r.batches,
                        "off" if r.tree is None else r.tree.label(),
                        "off" if r.tree is None else r.speedups,
                    ]
                    for r in answer.judged
                ],
                "<<<",
            )
        )
    if answer.judged_ranges is not None:  # (schedule_answer splits a range only where the verdict changes in it)
        each = "load" if answer.load is not None else "batch size"
        but = f" but the parts on the line the notes name (within {VERDICT_RESOLUTION * 100:g} pp of the error)"
        print(
            f"a {'gamma' if tree is None else 'tree'}'s batch sizes take more than one row where its verdict changes "
            f"along them, each row's verdict holding for every {each} in it{but if answer.on_the_line else ''} (the "
            "notes say where it is too close to call); --format writes them as one range"
        )
    if not args.contexts:
        return
    cells = answer.by_context()
    what = "gamma" if tree is None else "tree"
    print(f"\nbest {what} (speedup) by batch and context:")
    batches = sorted({c["batch"] for c in cells})
    lookup = {(c["batch"], c["context"]): c for c in cells}

    def fmt(c):
        return (
            "off"
            if (c.get("gamma") == 0 or (tree is not None and c["tree"] is None))
            else f"{c['gamma'] if tree is None else c['tree']} ({c['speedup']:.2f})"
        )

    print(
        table(
            ["batch"] + [f"L={L}" for L in args.contexts],
            [[b] + [fmt(lookup[(b, L)]) for L in args.contexts] for b in batches],
            ">" + ">" * len(args.contexts),
        )
    )


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_schedule(sub) -> None:
    p = sub.add_parser(
        "schedule",
        help="batch-size-dependent gamma (or tree) schedule for vLLM, SGLang or TensorRT-LLM",
        description="The optimal gamma (or token tree) for every batch size 1..--max-batch, merged into "
        "ranges, printed as a vLLM speculative_config, SGLang launch flags or a TensorRT-LLM "
        "speculative_config, for the drafter --draft names.",
    )
    add_acceptance_args(p)
    add_deployment_args(p, batch=False)
    p.add_argument(
        "--max-batch",
        type=int_at_least(1, "max-batch", MAX_BATCH),
        default=None,
        help="largest batch size to schedule (default: the engine's max_num_seqs, --max-num-seqs or its own on the "
        "GPU: vLLM's 256 on an A100 or a GPU under 70 GiB, 1024 on larger ones)",
    )
    p.add_argument(
        "--min-gain",
        type=gain_type,
        default=DEFAULT_MIN_GAIN,
        help="speculate only where the predicted speedup is at least this (e.g. 1.05; default 1)",
    )
    p.add_argument(
        "--gamma-max",
        type=gamma_max_type,
        default=DEFAULT_GAMMA_MAX,
        help=f"largest gamma (default {DEFAULT_GAMMA_MAX})",
    )
    p.add_argument(
        "--rtol",
        type=nonneg_number,
        default=DEFAULT_SCHEDULE_RTOL,
        help=f"take the smallest gamma within this fraction of the best speedup (default {DEFAULT_SCHEDULE_RTOL}; 0: exact argmax)",
    )
    add_memory_args(p)
    add_tree_args(p)
    p.add_argument(
        "--contexts",
        type=int_list(0, "contexts", MAX_CONTEXT),
        help="comma-separated context lengths: also print the (batch, context) table of the best choice",
    )
    p.add_argument(
        "--format",
        choices=[*REGISTRY, "json", "table"],
        default=None,  # table; None tells a --format table given beside --json from none given
        help="output form (default table)",
    )
    p.add_argument(
        "--per-batch",
        choices=["auto", "require"],
        default="auto",
        help="auto (default): the engine version's per-batch control where it has one (vLLM 0.24 "
        "num_speculative_tokens_per_batch_size, SGLang 0.5.13 adaptive steps, TensorRT-LLM 1.3 draft_len_schedule), "
        "else the batch-1 length with a note; require: refuse where it has none",
    )
    add_load_args(p, "the schedule then keyed by the decode batch each load runs at")
    p.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    p.set_defaults(func=run_schedule)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {"schedule": _parser_schedule}


def _positions_stop(args, dep, acc, context: int) -> list:
    """The note where the target's last positions at ``context`` stopped the gamma search, as optimal-gamma says it (the
    schedule would otherwise give a smaller gamma there without a word)."""
    from specsim.cli.model import _search_stopped
    from specsim.speculation.search import LAST_POSITIONS, search_bound, searched_gamma_max

    if search_bound(dep, acc, args.gamma_max, context) != LAST_POSITIONS:
        return []
    return [_search_stopped(dep, searched_gamma_max(dep, acc, args.gamma_max, context), LAST_POSITIONS)[6:]]
