"""From parsed arguments to library objects: the deployment, the acceptance and the model options a flag names."""

from __future__ import annotations

import argparse
import dataclasses
import sys

__all__ = [
    "calibration",
    "deployment",
    "harness",
    "load_lengths",
    "model_acceptance",
    "model_options",
    "resolve_acceptance",
]


def resolve_acceptance(args: argparse.Namespace, dep=None, context: int | None = None, workload: str | None = None):
    """(value, label): the acceptance the flags give (--acceptance, --metrics, --alpha, --calibration), else the
    drafter's published acceptance for the deployment's target, ``workload`` and ``context``; the library's
    :func:`specsim.answers.acceptance.resolve_acceptance` (the calibration file is read only where it is asked)."""
    from specsim.answers.acceptance import resolve_acceptance as resolve
    from specsim.cli import report

    if getattr(args, "metrics_gamma", None) is not None and getattr(args, "metrics", None) is None:
        raise ValueError("--metrics-gamma goes with an SGLang --metrics page")
    if getattr(args, "metrics_model", None) is not None and getattr(args, "metrics", None) is None:
        raise ValueError("--metrics-model goes with a --metrics page")
    given = acceptance_flag(args) is not None
    return resolve(
        dep,
        alpha=args.alpha,
        acceptance=getattr(args, "acceptance", None),
        metrics=getattr(args, "metrics", None),
        metrics_gamma=getattr(args, "metrics_gamma", None),
        metrics_model=getattr(args, "metrics_model", None),
        calibration=None if given else calibration(args),
        draft=getattr(args, "draft", None),
        workload=workload,
        context=context,
        full_source=report.VERBOSE,
    )


def acceptance_flag(args: argparse.Namespace) -> str | None:
    """The flag that gives the acceptance, with its value as typed (``--alpha 0.6``), in the library's precedence
    (--acceptance, --metrics, --alpha); None where none does (the calibration's, else the published default)."""
    for name in ("acceptance", "metrics", "alpha"):
        if getattr(args, name, None) is not None:
            return f"--{name} {getattr(args, name)}"
    return None


def model_acceptance(args: argparse.Namespace, dep, context: int, lengths: bool = False):
    """resolve_acceptance for the model commands: their --workload names which published acceptance to read, and is
    refused beside an acceptance the user gives (it would change nothing), except where it also gives the requests'
    lengths (``lengths``: an answer at a load), which then come from it beside the user's acceptance."""
    given = [f for f in ("alpha", "acceptance", "metrics") if getattr(args, f, None) is not None]
    if given and args.workload is not None and not lengths:
        raise ValueError(f"--workload chooses a published acceptance; --{given[0]} gives yours: drop one of them")
    return resolve_acceptance(args, dep, context, args.workload)


def calibration(args: argparse.Namespace):
    """The --calibration file, read once per command (None without one)."""
    path = getattr(args, "calibration", None)
    if path is None:
        return None
    cached = getattr(args, "_calibration", None)
    if cached is None:
        from specsim.calibration.file import read_calibration

        cached = read_calibration(path)
        args._calibration = cached
    return cached


def metric_names_of(args: argparse.Namespace) -> tuple:
    """(the names, the release, how to name it, what was taken unasked) of the metrics the engine exports: --engine's
    release, else the --calibration file's engine (the one it was fitted to), else specsim's default engine's newest
    (said).  watch reads a page by them and replay writes one, so the two agree on what a calibration's engine shows.
    Where the release came from is kept as ``args.named_by``, for the refusals of a page that is not that release's."""
    from specsim.engines import DEFAULT_ENGINE, metric_names

    cal = calibration(args)
    spec = args.engine or (cal.engine if cal is not None else None)
    said = (
        []
        if spec is not None
        else [f"--engine not given: {DEFAULT_ENGINE}, its newest release read (specsim's default)"]
    )
    if args.engine is not None:
        args.named_by = "--engine names"
    else:
        args.named_by = f"{cal.name} was fitted to" if cal is not None else "specsim takes without --engine"
    names, release, shown = metric_names(spec or DEFAULT_ENGINE)
    return names, release, shown, said


def load_lengths(args: argparse.Namespace):
    """The requests of a load (:func:`specsim.answers.load.request_lengths`) from --input-len, --output-len and
    --workload; a length not given is that of the runs a --calibration file was fitted to, where those runs are of one
    workload's lengths (its ``serving`` record), else the reference article's."""
    from specsim.answers.load import request_lengths

    defaults = calibrated_lengths(args)
    return request_lengths(args.input_len, args.output_len, getattr(args, "workload", None), defaults)


def calibrated_context(args: argparse.Namespace) -> None:
    """Where --context was not given and a --calibration file's runs are of one workload's lengths, the per-batch answers
    take those runs' mean context (prompt plus half the output), not the reference article's 1128, and say so."""
    unset = getattr(args, "context", None)
    if getattr(unset, "basis", None) is None:  # given, or a command without --context (cli.flags.UnsetInt has one)
        return
    runs = calibrated_context_of(args)
    if runs is not None:
        args.context = type(unset)(*runs)


def calibrated_context_of(args: argparse.Namespace) -> tuple | None:
    """(the mean context of the runs a --calibration was fitted to, where it comes from in words), where those runs
    are of one workload's lengths (:func:`calibrated_lengths`); None otherwise.  The one home of that context's basis,
    for a --context not given."""
    lengths = calibrated_lengths(args)
    if lengths is None:
        return None
    prompt, output, where = lengths
    return calibration(args).context_tokens, f"{where}: {prompt:,} in, {output:,} out"


def calibrated_lengths(args: argparse.Namespace) -> tuple | None:
    """(prompt, output, where from) of the runs a --calibration file was fitted to, where they are one workload's
    lengths and the requests are not otherwise given (--workload, --trace): the lengths every answer at a load takes
    for those not given; None otherwise."""
    if getattr(args, "workload", None) is not None or getattr(args, "trace", None) is not None:
        return None
    cal = calibration(args)
    if cal is None or cal.lengths is None:
        return None
    return *cal.lengths, f"the runs {cal.name} was fitted to"


def model_options(args: argparse.Namespace, prefix: str = "") -> dict:
    """get_model keyword arguments from --weight-dtype, --kv-dtype, --tp, --moe-effective-experts (or their --draft- forms)."""
    keys = {"weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype", "tp": "tp"}
    opts = {key: getattr(args, prefix + attr, None) for key, attr in keys.items()}
    if not prefix:
        opts["routing_effective_experts"] = getattr(args, "moe_effective_experts", None)
        opts["routing_correlation"] = getattr(args, "moe_routing_correlation", None)
    return {k: v for k, v in opts.items() if v is not None}


def deployment(args: argparse.Namespace, *, draft: bool = True, judged_at: str | None = None):
    """The deployment the flags describe: --hardware, --target (or --model), --draft, --timing, --engine, the model
    options and --calibration (:meth:`specsim.speculation.deployment.Deployment.build`), with the engine's round-term
    flags over the preset's; ``draft`` False builds one that only decodes (``steptime``).  ``judged_at``: the
    acceptance, in words, a command's answers are at where no flag gives one and it is not a calibration's runs' own
    (watch: :data:`specsim.watch.judge.LIVE_ACCEPTANCE`), which sets a calibration's held-out error aside and says so
    beside the calibration's line, as an acceptance flag does."""
    from specsim.cli.report import progress
    from specsim.speculation.deployment import Deployment

    ngram = getattr(args, "ngram_cpu_ns", None)
    dep = Deployment.build(
        args.hardware,
        getattr(args, "target", None) or getattr(args, "model", None),
        getattr(args, "draft", None),
        timing=getattr(args, "timing", None),  # (capacity times nothing: no --timing)
        engine=args.engine,
        engine_overhead_ms=getattr(args, "engine_overhead_ms", None),
        target_options=model_options(args),
        draft_options=model_options(args, "draft_") if draft else None,
        ngram_cpu_s_per_token=None if ngram is None else ngram * 1e-9,
        decode_only=not draft,
        calibration=calibration(args),
        progress=progress,
    )
    overlap = getattr(args, "engine_overlap", None)
    engine = dep.engine.with_spec(
        getattr(args, "engine_round_ms", None),
        getattr(args, "engine_step_ms", None),
        getattr(args, "engine_seq_us", None),
        None if overlap is None else overlap == "on",
        getattr(args, "engine_seq_step_us", None),
    )
    if engine is not dep.engine and dep.engine.name == "none":
        raise ValueError(
            "--engine none adds no engine time: the --engine-round-ms/-step-ms/-seq-us/-seq-step-us/-overlap "
            "flags need an engine"
        )
    cal = calibration(args)
    unjudged = []  # what the answer rests on that the fit's runs did not judge
    if cal is not None and engine is not dep.engine:  # a fitted term replaced: said by default, not only under -v
        _said_replaced(args, dep.engine, cal.name)
        unjudged.append("replaced terms")
    named = getattr(args, "draft", None) if draft else None
    if cal is not None and cal.drafter is not None and not cal.drafts_with(named):
        unjudged.append(f"drafter ({named})")  # its rounds and acceptance are the preset's, not the runs' drafter's
    given = acceptance_flag(args)
    label = None if given is None else f"the one {given} gives"  # (the flag's text: not the runs' acceptance)
    if given is None and judged_at is not None:
        given = label = judged_at
    if cal is not None and given is not None and cal.acceptance is not None:
        # The fit's speculative held-out error is of its runs at their own acceptance (each load's predicted with the
        # acceptance of the others): an acceptance given in its place is one no run judged a speedup at.
        engine = engine.judged_at(given, label)
        unjudged.append(f"acceptance ({given})")
    if unjudged:  # the fit's held-out error no longer describes this answer
        held = cal.said()
        dep = dataclasses.replace(
            dep,
            choices=tuple(
                f"{c}; that is the fit's error, not this answer's, whose {' and '.join(unjudged)} no run judged"
                if c == held
                else c
                for c in dep.choices
            ),
        )
    served = None if cal is None or cal.serving is None else cal.serving.get("memory_util")
    if served is not None and hasattr(args, "memory_util") and args.memory_util is None:
        # The engine's memory setting the runs were served at, as a --memory-util not given: the calibrated engine's.
        args.memory_util = served
        print(
            f"note: --memory-util {served:g}: the memory setting {cal.name}'s runs were served at (--memory-util to set "
            "another)",
            file=sys.stderr,
        )
    return dataclasses.replace(dep, engine=engine)


def _said_replaced(args: argparse.Namespace, fitted, name: str) -> None:
    """One note naming the round-term flags that replace what a calibration fitted, with the fitted values."""
    from specsim.engines import TERM_FLAGS

    said = [
        f"{flag} {getattr(args, flag[2:].replace('-', '_')):g} for the fitted {getattr(fitted.spec, key) * scale:.4g} "
        f"{flag.rsplit('-', 1)[1]}"
        for key, (flag, scale) in TERM_FLAGS.items()
        if getattr(args, flag[2:].replace("-", "_"), None) is not None
    ]
    if getattr(args, "engine_overlap", None) is not None:
        said.append(f"--engine-overlap {args.engine_overlap} for the calibrated engine's own")
    print(
        f"note: {'; '.join(said)}: these replace what {name} fitted, and the answer is no longer its alone",
        file=sys.stderr,
    )


def harness():
    """The timing harness, or one line saying how to install torch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError(
            "the timing harness needs torch: pip install '.[harness]' from a checkout, or 'specsim-llm[harness]' (for the CPU build: pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu)"
        ) from None
    from specsim import harness as module

    return module
