"""``specsim replay``: a simulated engine's metrics over a day, in an engine release's own format, to try ``specsim watch``
(and Prometheus, its rules and a dashboard) without an engine: served one page per GET for Prometheus to scrape, or
written as one OpenMetrics file for ``promtool tsdb create-blocks-from openmetrics`` (:mod:`specsim.watch.replay`)."""

from __future__ import annotations

import argparse
import re
import sys
import time

from specsim.cli import report
from specsim.cli.flags import add_deployment_args, alpha_type, int_at_least, output_len_type, positive_number
from specsim.core.limits import MAX_CONTEXT, MAX_GAMMA

__all__ = ["run_replay"]

#: specsim's example day when --rates is not given: a quiet night, a morning rise, a midday peak, an evening fall
#: (requests/s per replica from each hour on).  An illustration, not a measured trace.
DEFAULT_RATES = "0:3,6h:6,9h:12,12h:18,15h:10,19h:6,22h:3,24h"
#: A replay that Prometheus scrapes live must fit the samples it takes: up to an hour older than its newest and about
#: ten minutes ahead of its clock (Prometheus 2.42's head block).
LIVE_SPAN_S = 3300.0


def _profile(text: str) -> list:
    """``0:3,6h:6,...,24h``: (start seconds, requests/s) pairs; the last time ends the day."""
    from specsim.watch.sources import parse_duration

    pairs = []
    for part in str(text).split(","):
        when, sep, rate = part.strip().partition(":")
        try:
            # the day's start, in any unit the later times take ("0h"); a duration elsewhere is > 0
            start = 0.0 if re.fullmatch(r"0+(\.0*)?(ms|s|m|h|d|w)?", when.strip()) else parse_duration(when)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"--rates {text!r}: {err}") from None
        try:  # float's own "could not convert string to float: 'x'" named neither what nor what is allowed
            value = float(rate) if sep else 0.0
        except ValueError:
            value = float("nan")
        if value < 0 or value != value or value > 1e5:
            raise argparse.ArgumentTypeError(f"--rates {text!r}: a rate is requests/s in [0, 1e5], got {rate!r}")
        pairs.append((start, value))
    if len(pairs) < 2 or sep or any(b[0] <= a[0] for a, b in zip(pairs[:-1], pairs[1:])) or pairs[0][0] != 0:
        raise argparse.ArgumentTypeError(
            f"--rates {text!r}: give TIME:RATE pairs from 0 on, times rising, and the day's end "
            "alone last (e.g. 0:3,6h:8,24h)"
        )
    return pairs


def _acceptance(args: argparse.Namespace) -> tuple:
    """Sets --gamma not given, and --alpha not given where the day plays one alpha: a calibration's measured acceptance
    as every answer from the file takes it (:func:`specsim.calibration.file.read_calibration`: the per-position shares
    its runs recorded, continued past their last position, where it has them, else its per-token rate), at the steps
    it was measured at, where --draft names the drafter they were measured with (the check every command makes,
    :meth:`~specsim.calibration.file.Calibration.acceptance_for`), else the example day's, saying why not the
    calibration's.  (the acceptance played: an alpha or those shares, what it is in words, the flags taken, whose they
    are.)"""
    from specsim.cli.args import calibration
    from specsim.watch.replay import EXAMPLE_ALPHA, EXAMPLE_GAMMA, acceptance_said

    cal = calibration(args)
    measured, why = (None, "") if cal is None else cal.acceptance_for(args.draft)
    shares = measured if measured is not None and measured.alpha is None and args.alpha is None else None
    given = (("alpha" if shares is None else "acceptance", args.alpha), ("gamma", args.gamma))
    taken = [name for name, value in given if value is None]
    if measured is not None:
        args.alpha = round(float(measured.alpha), 4) if args.alpha is None and shares is None else args.alpha
        args.gamma = (cal.acceptance_steps or EXAMPLE_GAMMA) if args.gamma is None else args.gamma
    args.alpha = EXAMPLE_ALPHA if args.alpha is None and shares is None else args.alpha
    args.gamma = EXAMPLE_GAMMA if args.gamma is None else args.gamma
    whose = f"{cal.name}'s measured acceptance" if measured is not None else "the example day's" + (why and f" ({why})")
    played = args.alpha if shares is None else shares  # past their positions the chain goes on at the last one's rate
    return played, acceptance_said(played, args.gamma), taken, whose


def _lengths(args: argparse.Namespace, runs: tuple | None) -> list:
    """Sets --input-len and --output-len not given: a calibration's runs' lengths (``runs``, from
    :func:`specsim.cli.args.calibrated_lengths`), else the reference article's; (flag, value, where) of those taken from
    the runs, to be said."""
    from specsim.answers.load import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS

    said = []
    for flag, key, index, default in (
        ("input-len", "input_len", 0, DEFAULT_INPUT_TOKENS),
        ("output-len", "output_len", 1, DEFAULT_OUTPUT_TOKENS),
    ):
        if getattr(args, key) is None:
            setattr(args, key, int(runs[index]) if runs is not None else default)
            if runs is not None:
                said.append((flag, getattr(args, key), runs[2]))
    return said


def run_replay(args: argparse.Namespace) -> int:
    from specsim.cli.args import calibrated_lengths, deployment, metric_names_of
    from specsim.core.files import atomic_write_text, check_output
    from specsim.watch.replay import ReplayServer, drop_seconds, replay_answer
    from specsim.watch.sources import parse_time

    if (args.out is None) == (args.listen is None):
        raise ValueError(
            "give --out FILE (an OpenMetrics file of the whole day, for promtool's backfill) or --listen "
            "[HOST:]PORT (pages served one per GET, for Prometheus to scrape), one of them"
        )
    if args.out is not None:
        check_output(args.out)  # before the day is simulated
    if (args.drop_at is None) != (args.drop_to is None):
        raise ValueError("--drop-at and --drop-to go together: when the acceptance changes, and to what alpha")
    if args.draft is None and args.calibration is None:  # a calibration names the drafter its runs were served with
        raise ValueError("name the drafter the simulated engine runs with --draft (a draft model, eagle3, mtp, ...)")
    # The page is the release's that times the day: --engine, else the calibration's engine, as watch reads it (the
    # day of an SGLang calibration was written in vLLM's names).
    names, release, shown, _ = metric_names_of(args)
    profile = args.rates or _profile(DEFAULT_RATES)
    day_s = profile[-1][0]
    if not 1.0 <= args.page_seconds <= day_s:  # a page a second at most (a day of them is 86,400), one over the day
        raise ValueError(f"--page-seconds must be in [1, {day_s:g}] (the day's length), got {args.page_seconds:g}")
    drop = None
    if args.drop_at is not None:
        try:
            at = drop_seconds(args.drop_at)
        except ValueError as e:  # the flag named, as argparse names the others'
            raise ValueError(f"--drop-at: {e}") from None
        if at >= day_s:
            raise ValueError(f"--drop-at {args.drop_at} is past the day's end ({day_s:.0f} s)")
        drop = (args.drop_at, args.drop_to)
    if args.listen is not None and day_s > LIVE_SPAN_S:
        raise ValueError(
            f"a day of {day_s:.0f} s does not fit what Prometheus scrapes live (samples up to an hour old): "
            f"--listen replays at most {LIVE_SPAN_S:.0f} s; write --out and backfill it with promtool"
        )
    start = (
        parse_time(args.start, flag="--start")
        if args.start is not None
        else (time.time() - day_s + 300.0 if args.listen is not None else time.time() - day_s)
    )
    dep = deployment(args)
    dep.drafter.support(names.engine, release)
    model = args.served_model or dep.target.source or dep.target.name
    played, accepted, taken, whose = _acceptance(args)
    lengths_said = [f"--{f} {v} ({where})" for f, v, where in _lengths(args, calibrated_lengths(args))]
    print(
        f"simulating {day_s / 3600:.3g} h of {shown} serving {model} ({dep.target.name} + {dep.drafter.label} on "
        f"{report.on_gpus(dep)}; {accepted}, gamma {args.gamma}"
        + (f" ({' and '.join(taken)}: {whose}, not given)" if taken else "")
        + (f", alpha {args.drop_to:g} from {args.drop_at}" if drop else "")
        + (f"; rates {DEFAULT_RATES} requests/s, specsim's example day" if args.rates is None else "")
        + ")",
        file=sys.stderr,
    )
    if lengths_said:
        print(f"note: {' and '.join(lengths_said)}: not given", file=sys.stderr)
    report.print_notes(dep)  # specsim's defaults among them (hardware, target, ...), as every answer says them
    if report.VERBOSE:  # the day's one-line description names the step times briefly; here every source
        print("\n".join(dep.provenance()), file=sys.stderr)
    answer = replay_answer(
        dep,
        profile,
        played,
        args.gamma,
        args.input_len,
        args.output_len,
        engine=shown,
        model=model,
        label=accepted,
        drop=drop,
        start_s=start,
        page_seconds=args.page_seconds,
        seed=args.seed,
    )
    if args.out is not None:
        atomic_write_text(args.out, answer.openmetrics(names, release))
        if args.json:
            from specsim.cli.report import print_json

            print_json(answer.to_dict(written=str(args.out)))
            return 0
        day = answer.description if report.VERBOSE else answer.day.description
        print(
            f"wrote {args.out}: {day}; stamped from {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(start))} "
            f"every {args.page_seconds:g} s (backfill: promtool tsdb create-blocks-from openmetrics {args.out} DATA_DIR)"
        )
        return 0
    texts = answer.pages(names, release)
    host, port = args.listen
    with ReplayServer(texts, path=names.path, host=host, port=port) as server:
        if args.json:  # one line, then the pages are served until interrupted
            import json

            print(json.dumps(answer.to_dict() | {"serving": server.url, "pages": len(texts)}), flush=True)
        print(
            f"serving {len(texts)} pages of {shown}, one per GET, on {server.url} (stamped from "
            f"{time.strftime('%H:%M:%S', time.gmtime(start))} UTC; scrape with honor_timestamps); Ctrl-C to stop",
            flush=True,
            file=sys.stderr if args.json else sys.stdout,  # stdout holds the one JSON line
        )
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    return 0


def _parser_replay(sub) -> None:
    from specsim.answers.load import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS
    from specsim.cli.watch import _listen
    from specsim.watch.replay import EXAMPLE_ALPHA, EXAMPLE_GAMMA

    p = sub.add_parser(
        "replay",
        help="a simulated engine's metrics over a day, to try specsim watch without an engine",
        description="Plays a day of traffic (--rates) through the serving simulator speculating --gamma tokens "
        "at --alpha (changing to --drop-to at --drop-at) and writes what the engine's metrics would show, "
        "in the format of --engine's release (else the --calibration's engine's, else specsim's default engine's newest): one OpenMetrics file of the whole day (--out, for promtool tsdb "
        "create-blocks-from openmetrics) or pages served one per GET, each sample stamped (--listen, for "
        "Prometheus to scrape with honor_timestamps; at most 55 minutes).",
    )
    p.add_argument(
        "--alpha",
        type=alpha_type,
        help="the drafter's per-token acceptance (default: a --calibration's measured acceptance as the answers take "
        "it: the per-position shares its runs recorded, continued past their last position, where it has them, else "
        f"its alpha; without one, or with a --draft other than its runs' drafter, {EXAMPLE_ALPHA}, the example "
        "day's; the first line says which is played)",
    )
    p.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        help=f"draft tokens a round (default: the steps a --calibration's acceptance was measured at, where that "
        f"acceptance is played, else {EXAMPLE_GAMMA}, the example day's)",
    )
    p.add_argument(
        "--rates", type=_profile, help=f"TIME:RATE,...,END: requests/s from each time on (default {DEFAULT_RATES})"
    )
    p.add_argument("--drop-at", metavar="TIME", help="when the acceptance changes (e.g. 19h)")
    p.add_argument("--drop-to", type=alpha_type, metavar="ALPHA", help="the alpha from --drop-at on")
    p.add_argument(
        "--input-len",
        type=int_at_least(1, "input-len", MAX_CONTEXT),
        help="prompt tokens of every request (default: the runs a --calibration was fitted to, where they are one "
        f"workload's lengths, else {DEFAULT_INPUT_TOKENS}, the reference article's)",
    )
    p.add_argument(
        "--output-len",
        type=output_len_type,
        help=f"output tokens of every request (default: as --input-len, else {DEFAULT_OUTPUT_TOKENS})",
    )
    p.add_argument(
        "--page-seconds",
        type=positive_number,
        default=60.0,
        help="seconds of the day between two pages, from 1 to the day's length (default 60)",
    )
    p.add_argument(
        "--start",
        help="the day's start (ISO 8601 or Unix seconds; default: so that it ends now, 5 minutes ahead with --listen)",
    )
    p.add_argument(  # a label only: the target simulated is --target's (deployment() reads --model as steptime's)
        "--model", dest="served_model", help="the model_name label (default: the target's checkpoint name)"
    )
    p.add_argument("--seed", type=int_at_least(0, "seed", 2**31 - 1), default=0, help="random seed (default 0)")
    p.add_argument("--out", metavar="FILE", help="write the day as one OpenMetrics file")
    p.add_argument(
        "--json",
        action="store_true",
        help="print what was written or served as JSON (with --listen: one line, then the pages until Ctrl-C)",
    )
    p.add_argument(
        "--listen", type=_listen, metavar="[HOST:]PORT", help="serve the pages (127.0.0.1 unless a host is given)"
    )
    add_deployment_args(p, defaults=False, batch=False, context=False)
    drafter = next(a for a in p._actions if "--draft" in a.option_strings)
    drafter.help = (
        "the drafter the simulated engine runs (required without --calibration, whose drafter it takes: a draft "
        "model, eagle3, mtp, ...)"
    )
    p.set_defaults(func=run_replay)


PARSERS = {"replay": _parser_replay}
