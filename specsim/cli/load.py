"""``specsim serve-sim`` and ``serve-sweep``: the request-level simulation on the command line."""

from __future__ import annotations

import argparse
import contextlib
import sys

from specsim.cli.args import deployment, resolve_acceptance
from specsim.cli.executors import CommandExecutor, add_executor_arg, open_executor, usable_cores
from specsim.cli.flags import (
    MAX_SERVE_RUNS,
    add_serving_args,
    concurrency_list,
    csv_text,
    int_at_least,
    nonempty,
    output_len_type,
    rate,
    rate_list,
)
from specsim.cli.report import describe, ms, print_json, print_notes, table
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_RATE_PER_S, MAX_WORKERS
from specsim.core.words import counted

__all__ = ["run_serve_sim", "run_serve_sweep"]


def _setup(args: argparse.Namespace, command: str):
    from specsim.cli.flags import engine_limits, refuse_gamma_with_gamma_max

    refuse_gamma_with_gamma_max(args, command)
    dep = deployment(args)
    acc, acc_label = resolve_acceptance(args, dep, *_acceptance_question(args))
    limits, args.limits_said = engine_limits(args, dep.engine, dep.hardware)
    slo = (
        None if args.slo_ttft_ms is None else args.slo_ttft_ms / 1e3,
        None if args.slo_tpot_ms is None else args.slo_tpot_ms / 1e3,
    )
    gamma = "schedule" if args.gamma is None else args.gamma
    return acc, acc_label, dep, limits, slo, gamma


def _acceptance_question(args: argparse.Namespace) -> tuple[int, str]:
    """(context, acceptance workload) whose published acceptance applies: the workload's, at the context of its median
    request halfway through its output; a trace's median request's, on chat (a trace names no workload)."""
    import numpy as np

    from specsim.core.workloads import DEFAULT_WORKLOAD, acceptance_question, mean_context_tokens
    from specsim.serving.workloads import read_trace

    if getattr(args, "trace", None) is not None:
        if args.requests is not None or args.workload is not None:
            return 0, DEFAULT_WORKLOAD  # requests_for refuses these with the trace, before anything is simulated
        requests = read_trace(args.trace)
        return int(round(np.median(mean_context_tokens(requests.prompt, requests.output)))), DEFAULT_WORKLOAD
    return acceptance_question(args.workload, _lengths(args))


#: Requests simulated in all (both arms of every run) from which serve-sim spreads its runs over the cores: fewer finish
#: in about a second, less than starting the workers costs.
PARALLEL_FROM_REQUESTS = 2000


@contextlib.contextmanager
def _runner(args: argparse.Namespace, runs: int, requests: int):
    """(executor or None, a callback per finished run): the runs on the cluster ``--executor`` names, else spread over
    ``--jobs`` processes (the cores this process may use, unless told) where there are several and enough requests to be
    worth it; a progress bar on stderr where it is a terminal and the output is not JSON."""
    from specsim.cli.report import progress_bar

    _one_place(args, "--jobs", args.jobs)
    jobs = args.jobs if args.jobs is not None else usable_cores()
    jobs = min(jobs, runs) if runs > 1 and (args.jobs is not None or requests >= PARALLEL_FROM_REQUESTS) else 1
    with progress_bar("serve-sim runs", "run", total=runs, quiet=runs <= 1 or args.json) as done:
        if args.executor is not None:
            with open_executor(args.executor, runs) as executor:
                yield executor, done
        elif jobs <= 1:
            yield None, done
        else:
            with _process_pool(jobs) as pool:
                yield pool, done


@contextlib.contextmanager
def _process_pool(jobs: int):
    """A pool of ``jobs`` processes on this machine (serve-sim's runs, serve-sweep's loads), forked where the platform
    can: the workers start with the parent's modules loaded."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    start = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(start)) as pool:
        yield CommandExecutor(pool)  # a spawned worker starts outside as_flags


def _one_place(args: argparse.Namespace, flag: str, value: int | None) -> None:
    """Refuse a process pool's size beside --executor, which runs the jobs on the cluster's own workers."""
    if args.executor is not None and value is not None:
        raise ValueError(
            f"{flag} {value} sizes a process pool on this machine, and --executor {args.executor} runs the simulations "
            f"on its cluster's workers instead: drop one of them"
        )


@contextlib.contextmanager
def _sweep_executor(args: argparse.Namespace):
    """serve-sweep's rates on the cluster --executor names, in a pool of --jobs processes, or here (None)."""
    _one_place(args, "--jobs", args.jobs)
    if args.executor is not None:
        with open_executor(args.executor, len(args.rates)) as executor:
            yield executor
    elif args.jobs is not None and args.jobs > 1:
        with _process_pool(args.jobs) as pool:
            yield pool
    else:
        yield None


def run_serve_sim(args: argparse.Namespace) -> int:
    from specsim.answers.serve import serve_sim, sim_load
    from specsim.core.files import check_output

    if args.csv:
        check_output(args.csv, (".csv",), "--csv")
    acc, acc_label, dep, limits, slo, gamma = _setup(args, "serve-sim")
    load = sim_load(
        dep,
        rate=args.rate,
        concurrency=args.concurrency,
        trace=args.trace,
        workload=args.workload,
        n=args.requests,
        lengths=_lengths(args),
        seed=args.seed,
        runs=args.runs,
        lengths_said=_lengths_said(args),
    )
    with _runner(args, len(load.seeds), load.requests) as (executor, done):
        answer = serve_sim(
            dep,
            load,
            acc,
            gamma,
            limits,
            memory_utilization=args.memory_util,
            gamma_max=args.gamma_max,
            slo_ttft_s=slo[0],
            slo_tpot_s=slo[1],
            executor=executor,
            done=done,
            label=acc_label,
        )
    requests, (plain, spec, meta) = load.request_sets[0], answer.results[0]
    if args.csv:
        _write_requests(args.csv, requests, plain, spec)
    if args.json:  # the record is the library's (ServeSimAnswer.to_dict): a notebook gets what this prints
        print_json(answer.to_dict(args.limits_said, args.csv))
    else:
        print(describe(dep, int(round(meta["context_hint"]))))
        for line in answer.provenance(args.limits_said, args.csv)[len(dep.provenance()) :]:
            print(line)
        print()
        _print_summaries(answer.off, answer.on, answer.changes())
        queued, held = answer.queued(), answer.held_back()
        off, on = queued["off"], queued["on"]
        if off is not None and on is not None and off["said"] == on["said"]:
            print(f"queue: {off['said']}, speculation off and on")
        else:
            for arm, q in (("off", off), ("on", on)):
                if q is not None:
                    print(f"queue, speculation {arm}: {q['said']}")
        if held is not None:
            print(held)
        print(_served_against_offered(args, [answer.off, answer.on], len(requests)))
    for arm, r in (("speculation off", plain), ("speculation on", spec)):
        for note in r.notes:
            print(f"note: {arm}: {note}", file=sys.stderr)
    if gamma == "schedule":
        _say_search_stopped(dep, acc, args.gamma_max, meta["context_hint"])
    print_notes(dep)
    return 0


def _sweep_context(lengths: tuple | None, workload) -> float:
    """The cached context a sweep's requests decode at, midway: of its fixed lengths, else of its workload's median."""
    from specsim.core.workloads import mean_context_tokens

    return float(mean_context_tokens(*lengths)) if lengths is not None else workload.median_context_tokens


def _say_search_stopped(dep, acc, gamma_max: int, context: float) -> None:
    """What stopped a per-batch gamma search short of --gamma-max, as optimal-gamma notes it (a DSpark block:
    --gamma-max 12 ran 0..7; an acceptance measured for 2 positions), on stderr; nothing where --gamma-max did."""
    from specsim.cli.model import _search_stopped
    from specsim.speculation.acceptance import as_acceptance
    from specsim.speculation.search import search_bound, searched_gamma_max

    accepted = as_acceptance(acc)
    top = searched_gamma_max(dep, accepted, gamma_max, context)
    if stopped := _search_stopped(dep, top, search_bound(dep, accepted, gamma_max, context)):
        print(stopped, file=sys.stderr)


def _lengths(args: argparse.Namespace) -> tuple | None:
    """(prompt, output) every request has where --input-len or --output-len is given (the other at its cited default:
    a calibration's runs' where it has them, else the article's), or where a --calibration file's runs give both."""
    from specsim.cli.args import calibrated_lengths, load_lengths

    if args.input_len is None and args.output_len is None and calibrated_lengths(args) is None:
        return None
    lengths = load_lengths(args)  # the answers' own rule for the lengths not given
    return int(lengths.input_tokens), int(lengths.output_tokens)


def _lengths_said(args: argparse.Namespace) -> str:
    """The lengths not given, with their cited default, as every header says it ("" where both are given or the
    requests are a workload's)."""
    from specsim.answers.load import lengths_defaults_said
    from specsim.cli.args import calibrated_lengths

    fitted = calibrated_lengths(args)
    if args.input_len is None and args.output_len is None and fitted is None:
        return _workload_default_said(args)
    return lengths_defaults_said(args.input_len, args.output_len, fitted)


def _workload_default_said(args: argparse.Namespace) -> str:
    """The workload no flag chose, named as a default ("; ..."; "" where --workload or --trace gives the requests):
    optimal-gamma's default at the same load is the article's fixed lengths, so the two answers' requests differ."""
    if args.workload is not None or getattr(args, "trace", None) is not None:
        return ""
    return (
        "; the default workload, not given (no --workload, --input-len or --output-len): optimal-gamma at a load "
        "takes the article's fixed lengths instead"
    )


def _write_requests(path, requests, plain, spec) -> None:
    import numpy as np
    import pandas as pd

    from specsim.core.files import atomic_write_bytes

    frames = [
        pd.DataFrame(
            {
                "speculation": name,
                "request": np.arange(len(requests)),
                "arrival_s": r.arrival_s,
                "first_token_s": r.first_token_s,
                "finish_s": r.finish_s,
                "prompt_tokens": r.prompt,
                "output_tokens": r.output,
                "never_fit": r.rejected,
            }
        )
        for name, r in (("off", plain), ("on", spec))
    ]
    atomic_write_bytes(path, pd.concat(frames).to_csv(index=False).encode())


def _sweep_said(args: argparse.Namespace, frame, cols: list, load: str, unit: str, n: int) -> list[str]:
    """The lines under serve-sweep's table on what its figures are: intervals reaching below zero, loads past capacity
    (a queue that grew through the run), and concurrencies above the requests a run sends (a burst, not a loop)."""
    names = {"tpot_p50_s": "TPOT p50", "tpot_p99_s": "TPOT p99", "tokens_per_s": "tok/s", "mean_batch": "batch"}
    said = _past_zero(
        args.runs,
        [
            (f"{names[c.split('_', 1)[1]]} {c.split('_')[0]} at {getattr(r, load):g} {unit}", getattr(r, c), ci)
            for r in frame.itertuples()
            for c in cols
            if (ci := getattr(r, f"{c}_ci", None)) is not None
        ],
    )
    lines = [said] if said else []
    past = [
        (getattr(r, load), [name for name in ("off", "on") if getattr(r, f"{name}_past_capacity") is True])
        for r in frame.itertuples()
    ]
    past = [(v, arms) for v, arms in past if arms]
    if past:  # the steady-state answers say "past capacity" there too; a run's figures depend on its length
        lines.append(
            f"past capacity (the queue grew through the run: its figures are of {counted(n, 'request')}, not of a steady "
            "state; a longer run queues more; optimal-gamma --rate gives the long run): "
            + ", ".join(f"{v:g} {unit} (speculation {' and '.join(arms)})" for v, arms in past)
        )
    bursts = [c for c in (args.concurrency or []) if c > n]
    if bursts:  # vllm bench serve's --max-concurrency caps the requests in flight; it adds none
        lines.append(
            f"{csv_text(bursts)} users: {counted(n, 'request')} a run, all sent at once and none after, one burst of "
            f"{counted(n, 'request')}, not those users' load: give --requests of several times the largest --concurrency"
        )
    return lines


def _past_zero(runs: int, figures: list) -> str | None:
    """A line where an interval reaches below zero, which none of these figures can: (name, mean, half-width) each.
    Few runs give a wide Student t (12.7 times the spread over the root of the runs at two runs): the interval is
    honest about the spread and says nothing below zero."""
    from specsim.serving.runs import CONFIDENCE, student_t

    past = [name for name, mean, half in figures if half is not None and mean is not None and half > mean]
    if not past or runs < 2:
        return None
    t = student_t(runs - 1)
    return (
        f"note: {', '.join(past[:4])}{' and more' if len(past) > 4 else ''}: the {CONFIDENCE:.0%} interval reaches "
        f"below zero, where the figure cannot go; over {runs} runs it is {t:.1f} times the runs' spread over "
        f"sqrt({runs}), so it is wide: more --runs narrow it"
    )


def _print_summaries(off: dict, on: dict, changes: dict) -> None:
    def trio(d, scale, unit):
        if d["p50"] is None:
            return "n/a"
        return f"{d['p50'] * scale:.1f} / {d['p90'] * scale:.1f} / {d['p99'] * scale:.1f} {unit}"

    def half(h):  # the decimals of the value, or two significant digits where those round an interval to 0
        return "±0" if h == 0 else f"±{h:.1f}" if round(h, 1) > 0 else f"±{h:.2g}"

    def trio_ci(d, scale, unit):
        if d["p50"] is None:
            return "n/a"
        return f"{half(d['p50'] * scale)} / {half(d['p90'] * scale)} / {half(d['p99'] * scale)} {unit}"

    def num(s, key, fmt):
        x, h = s[key], s["ci"][key]
        return "n/a" if x is None else format(x, fmt) + ("" if h is None else f" ±{format(h, fmt)}")

    runs = off["runs"]
    rows = []
    for label, key, scale, unit in (
        ("TTFT", "ttft_s", 1e3, "ms"),
        ("TPOT", "tpot_s", 1e3, "ms"),
        ("end-to-end", "e2e_s", 1, "s"),
    ):
        rows.append([f"{label} p50 / p90 / p99", trio(off[key], scale, unit), trio(on[key], scale, unit)])
        if runs > 1:
            rows.append(
                [
                    f"  {off['confidence']:.0%} interval",
                    trio_ci(off["ci"][key], scale, unit),
                    trio_ci(on["ci"][key], scale, unit),
                ]
            )
    rows += [
        ["output tokens/s", num(off, "output_tokens_per_s", ",.0f"), num(on, "output_tokens_per_s", ",.0f")],
        ["requests/s served", num(off, "requests_per_s", ".2f"), num(on, "requests_per_s", ".2f")],
        [
            "running batch mean (max)",
            f"{num(off, 'mean_running_batch', '.1f')} ({off['max_running_batch']})",
            f"{num(on, 'mean_running_batch', '.1f')} ({on['max_running_batch']})",
        ],
        [
            "requests served / never fit" + (f" ({runs} runs)" if runs > 1 else ""),
            f"{off['served']} / {off['never_fit']}",
            f"{on['served']} / {on['never_fit']}",
        ],
    ]
    if off["preemptions"] or on["preemptions"]:  # the KV cache ran out under an engine that allocates as tokens arrive
        rows.append(
            [
                "preemptions (tokens recomputed)" + (f" ({runs} runs)" if runs > 1 else ""),
                f"{off['preemptions']:,} ({off['recomputed_tokens']:,})",
                f"{on['preemptions']:,} ({on['recomputed_tokens']:,})",
            ]
        )
    if "goodput_requests_per_s" in off:
        rows.append(
            [
                "goodput (both SLOs met)",
                f"{num(off, 'goodput_requests_per_s', '.2f')} req/s ({off['slo_met']})",
                f"{num(on, 'goodput_requests_per_s', '.2f')} req/s ({on['slo_met']})",
            ]
        )
    print(table(["", "speculation off", "speculation on"], rows, "<>>"))
    print(
        "running batch: the sequences decoding, time-weighted over the engine's busy time (iterations of prompts alone "
        "at 0), as optimal-gamma's decode batch"
    )
    # every figure the table prints with an interval
    wide = [
        (f"{label} {arm}", arm_summary[key], arm_summary["ci"][key])
        for arm, arm_summary in (("off", off), ("on", on))
        for label, key in (
            ("output tokens/s", "output_tokens_per_s"),
            ("requests/s", "requests_per_s"),
            ("running batch", "mean_running_batch"),
            ("goodput", "goodput_requests_per_s"),
        )
        if key in arm_summary  # goodput only where SLOs were given
    ]
    wide += [
        (f"{label} {q} {arm}", arm_summary[key][q], arm_summary["ci"][key][q])
        for arm, arm_summary in (("off", off), ("on", on))
        for label, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end-to-end", "e2e_s"))
        for q in ("p50", "p90", "p99")
        if arm_summary[key][q] is not None
    ]
    said = _past_zero(runs, wide)
    if said:
        print(said)
    change = changes["tpot_p50"]
    if change is None:
        print(
            "\nno TPOT to compare: no served request produced a second token (TPOT is the time between output tokens)"
        )
        return
    if changes["output_tokens_per_s"] is None:  # the arms served different requests: their throughputs do not compare
        print(
            f"\nthe arms served different requests: {on['never_fit']} never fit with speculation and "
            f"{off['never_fit']} without (each needs its whole length in the cache); over the requests each served, "
            f"speculation changes TPOT p50 by {change:+.1%}; their throughputs are not compared"
        )
        return
    print(
        f"\nspeculation changes TPOT p50 by {change:+.1%} and throughput by {changes['output_tokens_per_s']:+.1%} at "
        "this load"
    )


def _same_requests(args: argparse.Namespace) -> str:
    """The flags that give optimal-gamma this run's requests: its lengths where every request has the same, else its
    workload (optimal-gamma's own default at a load is the article's lengths, not a workload's)."""
    from specsim.core.workloads import DEFAULT_WORKLOAD

    lengths = _lengths(args)
    if lengths is not None:
        return f" --input-len {lengths[0]} --output-len {lengths[1]}"
    return f" --workload {args.workload or DEFAULT_WORKLOAD}"


def _served_against_offered(args: argparse.Namespace, summaries: list[dict], n: int) -> str:
    """Why requests/s served is not the rate asked for, and whether the engine kept up
    (:func:`specsim.serving.runs.queue_verdict`): past capacity the queue grows, and arrivals less that growth are what
    the engine completes; a burst shows no steady rate: served/s is then the measure, and the line says so."""
    from specsim.serving.runs import queue_verdict, second_half_s

    if args.concurrency is not None and n < args.concurrency:
        return (
            f"requests/s served: {counted(n, 'request')} for a closed loop of {counted(args.concurrency, 'user')}, all "
            f"sent at once and none after, so this run is one burst of {counted(n, 'request')}, not {args.concurrency:,} "
            "users' load (vllm bench serve's --max-concurrency caps the requests in flight; it adds none): give "
            "--requests of several times --concurrency for a closed loop"
        )
    if args.concurrency is not None:
        burst = (
            f"; the {args.concurrency:,} users send their first requests at once, as a benchmark's run starts, and the "
            "run's TTFT holds that burst's wait for the token budget"
            if args.concurrency > 1
            else ""
        )
        return (
            f"requests/s served: a closed loop of {counted(args.concurrency, 'user')} sends a request only when one finishes, so "
            f"the offered rate is what the engine serves{burst} (optimal-gamma --concurrency {args.concurrency}"
            f"{_same_requests(args)} and this command's other flags gives the steady state"
            + (" without it)" if burst else ")")
        )
    head = (
        f"requests/s served against the offered {args.rate:g} req/s: served/s counts from the first arrival to the last "
        "finish, and a Poisson stream of this many requests comes at its rate only on average"
        if args.rate is not None
        else "requests/s served: counted from the trace's first arrival to the last finish"
    )
    lines = [head]
    for name, s in zip(("off", "on"), summaries):
        said = queue_verdict(s)
        if said is None:
            continue
        rate, drain, growth = s["arrival_rate_per_s"], s["drain_s"], s["queue_growth_per_s"]
        middle, last = s["in_system_at_middle_arrival"], s["in_system_at_last_arrival"]
        half = second_half_s(s)
        if said == "burst":
            verdict = (
                f"the requests came in a burst (the second half within {half:.2f} s, against the {drain:.1f} s the engine "
                f"took to finish what was left): past its capacity, with no steady rate to read; served/s is the measure"
            )
        elif said == "grew":
            verdict = (
                f"the queue grew from {counted(middle, 'request', '.0f')} in the system at the middle arrival to {last:.0f} at the "
                "last, "
                f"{growth:.1f}/s: the engine completes about {s['served_per_s_after_middle']:.1f} req/s of the {rate:.1f} "
                "arriving, past its "
                "capacity (a longer run queues more; optimal-gamma --rate gives the long run)"
            )
        else:
            verdict = (
                f"the engine kept up ({counted(middle, 'request', '.0f')} in the system at the middle arrival, "
                f"{last:.0f} at the last)"
            )
        lines.append(
            f"  speculation {name}: arrivals came at {rate:.2f} req/s, the last requests finished {drain:.1f} s after the "
            f"last arrival; {verdict}"
        )
    return "\n".join(lines)


def run_serve_sweep(args: argparse.Namespace) -> int:
    from specsim.answers.sweep import serve_sweep_answer, sweep_workload
    from specsim.core.files import check_output
    from specsim.serving.simulator import DEFAULT_SLO_ATTAINMENT, sweep_load

    if args.plot:
        check_output(args.plot, (".png", ".svg"), "--plot")
    acc, acc_label, dep, limits, slo, gamma = _setup(args, "serve-sweep")
    from specsim.core.limits import MAX_SIMULATED_REQUESTS
    from specsim.serving.simulator import DEFAULT_REQUESTS

    lengths = _lengths(args)
    workload = sweep_workload(lengths, args.workload)  # the library's rule; named only where it applies
    n = DEFAULT_REQUESTS if args.requests is None else args.requests
    if lengths is not None:  # the answering commands' words, the defaults cited
        from specsim.cli.args import load_lengths

        what = load_lengths(args).description
    else:
        what = f"workload {workload.name} ({workload.source})" + _workload_default_said(args)
    # Poisson rates or closed loops (--concurrency: vllm bench serve --max-concurrency swept); one of them is given.
    loads, plural = (args.rates, "rates") if args.rates is not None else (args.concurrency, "concurrencies")
    total = len(loads) * args.runs * n
    if total > MAX_SIMULATED_REQUESTS:
        raise ValueError(
            f"{len(loads)} {plural} x {counted(args.runs, 'run')} of {counted(n, 'request')} simulate "
            f"{total:,}; at most {MAX_SIMULATED_REQUESTS:,} per command: pass fewer {plural}, runs or requests"
        )
    from specsim.cli.report import progress_bar

    with (
        _sweep_executor(args) as executor,
        progress_bar(f"serve-sweep {plural}", "run", total=len(loads) * args.runs, quiet=args.json) as done,
    ):
        answer = serve_sweep_answer(
            dep,
            acc,
            rates=args.rates,
            concurrencies=args.concurrency,
            workload=args.workload,
            n=n,
            lengths=lengths,
            gamma=gamma,
            gamma_max=args.gamma_max,
            limits=limits,
            seed=args.seed,
            runs=args.runs,
            slo_ttft_s=slo[0],
            slo_tpot_s=slo[1],
            executor=executor,
            done=done,
            label=acc_label,
            requests=what,
        )
    frame, findings, policy = answer.frame, answer.findings(), answer.gamma_policy
    load, unit, _ = sweep_load(frame)
    if args.plot:
        from specsim.figures.plots import save_serve_sweep
        from specsim.speculation.acceptance import as_acceptance

        given = args.alpha is not None or args.acceptance is not None or args.metrics is not None
        accepted = as_acceptance(acc).brief() + ("" if given else " (the drafter's published default)")
        save_serve_sweep(
            frame,
            args.plot,
            # the engine too: a figure of SGLang's rounds said nothing of SGLang
            title=f"{dep.target.name} + {dep.drafter.name} on {dep.hardware.name}, {dep.engine.label}, "
            + (f"{workload.name} workload" if lengths is None else what)
            + f", {accepted}",
            slo_tpot_ms=args.slo_tpot_ms,
        )
    if gamma == "schedule":  # as serve-sim says it
        _say_search_stopped(dep, acc, args.gamma_max, _sweep_context(lengths, workload))
    if args.json:  # the record is the library's (ServeSweepAnswer.to_dict)
        print_json(answer.to_dict(args.limits_said, args.plot))
        print_notes(dep)
        return 0
    print(describe(dep, 0).replace("; context 0 tokens", ""))
    runs = (
        f", one run (seed {args.seed}; --runs for an interval over runs)"
        if args.runs == 1
        else f" x {args.runs} runs (seeds {args.seed}-{args.seed + args.runs - 1}; each figure the mean ± the "
        "half-width of its 95% confidence interval, Student t over the runs)"
    )
    closed = "" if load == "rate" else ", closed loops"
    print(
        f"{what}{closed}; {counted(n, 'request')} per {'rate' if load == 'rate' else 'concurrency'}{runs}; {acc_label}"
    )
    print(f"speculation: {policy}\nengine limits: {limits.label}{args.limits_said}\n")

    def cell(r, col: str, shown) -> str:
        ci = getattr(r, f"{col}_ci", None)
        return shown(getattr(r, col)) + ("" if ci is None else f" ± {shown(ci)}")

    cols = [
        load,
        "off_tpot_p50_s",
        "on_tpot_p50_s",
        "off_tpot_p99_s",
        "on_tpot_p99_s",
        "off_tokens_per_s",
        "on_tokens_per_s",
        "off_mean_batch",
        "on_mean_batch",
    ]
    headers = [
        "req/s" if load == "rate" else "users",
        "TPOT p50 off",
        "on",
        "TPOT p99 off",
        "on",
        "tok/s off",
        "on",
        "batch off",
        "on",
    ]
    present = [c for c in cols + [f"{c}_ci" for c in cols] if c in frame]
    rows = [
        [
            f"{getattr(r, load):g}",
            cell(r, "off_tpot_p50_s", ms),
            cell(r, "on_tpot_p50_s", ms),
            cell(r, "off_tpot_p99_s", ms),
            cell(r, "on_tpot_p99_s", ms),
            cell(r, "off_tokens_per_s", "{:,.0f}".format),
            cell(r, "on_tokens_per_s", "{:,.0f}".format),
            cell(r, "off_mean_batch", "{:.1f}".format),
            cell(r, "on_mean_batch", "{:.1f}".format),
        ]
        for r in frame[present].itertuples()
    ]
    if "off_slo_attainment" in frame:
        headers += ["SLO met off", "on"]
        rows = [
            row + [f"{a:.0%}", f"{b:.0%}"] for row, a, b in zip(rows, frame.off_slo_attainment, frame.on_slo_attainment)
        ]
    print(table(headers, rows, ">" * len(headers)))
    stop = findings[f"speculation_stops_helping_at_{load}"]
    print(
        f"\nspeculation lowers TPOT p50 at every {load} swept"
        if stop is None
        else f"\nspeculation stops lowering TPOT p50 at {stop:g} {unit}"
    )
    for said in _sweep_said(args, frame, cols[1:], load, unit, n):
        print(said)
    if f"max_{load}_meeting_slo_off" in findings:
        fmt = lambda v: f"none of the {plural} swept" if v is None else f"{v:g} {unit}"  # noqa: E731
        print(
            f"largest {load} meeting the SLOs ({DEFAULT_SLO_ATTAINMENT:.0%} of requests): "
            f"{fmt(findings[f'max_{load}_meeting_slo_off'])} without speculation, "
            f"{fmt(findings[f'max_{load}_meeting_slo_on'])} with it"
        )
    if args.plot:
        print(
            f"figure: {args.plot}"
            + (
                ""
                if args.slo_tpot_ms is None
                else f" (the dash-dot line is the TPOT objective, {args.slo_tpot_ms:g} ms)"
            )
        )
    print_notes(dep)
    return 0


# -- flags: each command's own, declared beside its handler --------------------------------------------------
def _parser_serve_sim(sub) -> None:
    p = sub.add_parser(
        "serve-sim",
        help="simulate an engine under load, with and without speculation",
        description="Continuous batching with chunked prefill, request by request: TTFT, TPOT and "
        "end-to-end latency percentiles, throughput and running batch, with and without speculation.",
    )
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=rate, help=f"Poisson arrivals, requests per second, in (0, {MAX_RATE_PER_S:g}]")
    load.add_argument(
        "--concurrency",
        type=int_at_least(1, "concurrency", MAX_BATCH),
        help="a closed loop of this many users, each sending its next request when the last finishes",
    )
    load.add_argument(
        "--trace", metavar="FILE", help="requests from a CSV or JSONL trace: arrival_s, prompt_tokens, output_tokens"
    )
    add_serving_args(p, lengths=False)
    _add_lengths(p)
    from specsim.serving.simulator import DEFAULT_RUNS

    p.add_argument(
        "--runs",
        type=int_at_least(1, "runs", MAX_SERVE_RUNS),
        help=f"independent runs, seeds --seed, --seed + 1, ...: each figure is their mean with a 95%% confidence "
        f"interval (default {DEFAULT_RUNS}, or 1 with --trace: a trace is replayed once; 1: one run, no interval)",
    )
    p.add_argument(
        "--jobs",
        type=int_at_least(1, "jobs", MAX_WORKERS),
        help="processes the runs are spread over (default: the cores this process may use, where the runs "
        f"simulate {PARALLEL_FROM_REQUESTS:,} requests or more; every figure is the same whatever the number)",
    )
    add_executor_arg(p, "--jobs")
    p.add_argument(
        "--csv",
        type=nonempty("csv"),
        metavar="FILE",
        help="write one row per request of the run with --seed (speculation off and on) to this CSV",
    )
    p.set_defaults(func=run_serve_sim)


def _add_lengths(p) -> None:
    """--input-len and --output-len: every request the same lengths, as a benchmark's random dataset."""
    p.add_argument(
        "--input-len",
        type=int_at_least(1, "input-len", MAX_CONTEXT),
        help="every request's prompt tokens, as a benchmark's random dataset (vllm bench serve --random-input-len); "
        "instead of --workload",
    )
    p.add_argument(
        "--output-len",
        # 2 at least, as optimal-gamma, compare and explain take it: one output token is the prompt's, no decode step
        # runs and no TPOT is timed, so the arms differ only by the draft's prefill
        type=output_len_type,
        help="every request's output tokens (--random-output-len); instead of --workload",
    )


def _parser_serve_sweep(sub) -> None:
    p = sub.add_parser(
        "serve-sweep",
        help="serve-sim over a range of request rates or concurrencies",
        description="serve-sim at each Poisson rate, or at each closed loop of users (vllm bench serve "
        "--max-concurrency swept): where speculation stops lowering TPOT, and the largest load that meets the SLOs "
        "with and without it.",
    )
    loads = p.add_mutually_exclusive_group(required=True)
    loads.add_argument("--rates", type=rate_list, help="comma-separated request rates per second, e.g. 1,2,4,8,16")
    loads.add_argument(
        "--concurrency",
        type=concurrency_list,
        help="comma-separated closed loops, users each, e.g. 1,4,16,64 (each user sends its next request when the "
        "last finishes)",
    )
    add_serving_args(p, lengths=False)
    _add_lengths(p)
    p.add_argument(
        "--jobs",
        "--workers",  # its name before it took serve-sim's
        dest="jobs",
        type=int_at_least(1, "jobs", MAX_WORKERS),
        help="processes the loads are spread over, as serve-sim's --jobs its runs (default 1: one after the other; "
        "every figure is the same whatever the number); --workers is the same flag",
    )
    add_executor_arg(p, "--jobs")
    p.add_argument(
        "--runs",
        type=int_at_least(1, "runs", MAX_SERVE_RUNS),
        default=1,
        help="runs per rate, seeds --seed, --seed + 1, ...: each figure is their mean with its 95%% confidence "
        "interval, printed and drawn by --plot (default 1: one run, no interval)",
    )
    p.add_argument(
        "--plot", type=nonempty("plot"), metavar="FILE", help="write the TPOT and throughput figure (.png or .svg)"
    )
    p.set_defaults(func=run_serve_sweep)


#: The commands of this module, each with the function that declares its flags.
PARSERS = {"serve-sim": _parser_serve_sim, "serve-sweep": _parser_serve_sweep}
