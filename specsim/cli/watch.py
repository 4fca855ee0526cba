"""``specsim watch``: a running engine's acceptance and load, window by window, against the serving model's break-even,
with a change-point test for drops in acceptance; its verdicts as lines, exit codes, gauges, alerting rules, a
dashboard and a plot (:mod:`specsim.watch`)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from contextlib import contextmanager

from specsim.cli.flags import add_deployment_args, add_memory_util, fraction, int_at_least, output_len_type
from specsim.core.defaults import DEFAULT_GAMMA_MAX
from specsim.core.limits import MAX_BATCH, MAX_CONTEXT, MAX_GAMMA

__all__ = ["run_watch"]

#: Reads of an engine's page per window (``--url``): the running batch is the mean of its gauge over them.
READS_PER_WINDOW = 5
#: Windows a span from Prometheus or a capture holds at most: a year of 10-minute windows is 52,704; a capture stamped
#: across decades (a stamp of 0) read at its default span would judge millions, for hours.
MAX_SPAN_WINDOWS = 100_000
#: Seconds a live Prometheus watch waits after a window's end before asking for it (a scrape or two of lag).
PROMETHEUS_LAG_S = 15.0


def _clock(span_s: float):
    fmt = "%H:%M:%S" if span_s < 86400 else "%Y-%m-%d %H:%M"
    return lambda t: time.strftime(fmt, time.gmtime(t))


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    host = host if sep else "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--listen {text!r}: give PORT (on 127.0.0.1) or HOST:PORT, a port in 1-65535")
    return host or "127.0.0.1", int(port)


def _duration(text: str) -> float:
    from specsim.watch.sources import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _finite(obj):
    """``obj`` with every NaN or infinity as None (JSON carries neither)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


class _Output:
    """Rows and verdicts as text lines or JSON lines, flushed as they come."""

    def __init__(self, as_json: bool, clock):
        self.json, self.clock, self.header_done = as_json, clock, False

    def emit(self, record_type: str, **fields) -> None:
        print(json.dumps(_finite({"type": record_type} | fields), allow_nan=False), flush=True)

    def header(self, lines: list, meta: dict) -> None:
        if self.json:
            self.emit("header", lines=lines, **meta)
            return
        for line in lines:
            print(line)
        print()
        width = len(self.clock(0.0))
        print(
            f"{'window end':>{width}}  {'accept. length [95%]':<22} {'by position':<15} {'g':>2} {'running (model)':>15} "
            f"{'req/s':>6} {'in/out':>9}  {'speedup':>7} {'break-even':>10} {'verdict thresholds':>22}  verdict",
            flush=True,
        )

    def row(self, row) -> None:
        if self.json:
            self.emit("window", **row.to_dict())
            for v in row.started:
                self.emit("verdict", **v.to_dict())
            return
        from specsim.watch.judge import SHOWN
        from specsim.watch.watcher import three_figures

        w, j = row.window, row.judgement
        when = self.clock(w.end_s)
        pad = " " * len(when)
        if j is None:
            print(f"{when}  {row.note}", flush=True)
        else:
            low, high = j.interval if j.interval else (math.nan, math.nan)
            length = (
                f"{w.acceptance_length:.3f} [{low:.3f}, {high:.3f}]" if j.interval else f"{w.acceptance_length:.3f}"
            )
            pos = " ".join(f"{c:.2f}".lstrip("0") for c in (w.per_position or ())[:4]) or "-"
            running = "-" if w.running is None else f"{w.running:.1f}"
            be = {"never": "none pays", "always": "any pays"}.get(j.break_even, f"{j.break_even_length or 0:.3f}")
            verdict = SHOWN[j.verdict]
            speedup = "no room" if j.verdict == "no room" else f"{j.speedup:.3f}x"
            print(
                f"{when}  {length:<22} {pos:<15} {j.gamma:>2} {running + f' ({j.running_model:.1f})':>15} "
                f"{three_figures(w.requests_per_s):>6} {w.input_tokens:>4.0f}/{w.output_tokens:<4.0f}  {speedup:>7} {be:>10} "
                f"{_thresholds(j):>22}  {verdict}",
                flush=True,
            )
            if row.note:
                print(f"{pad}  {row.note}")
        for v in row.started:
            print(f"{pad}  >> {v.text}", flush=True)
            if v.detail:
                print("\n".join(f"{pad}     {line}" for line in v.detail.splitlines()), flush=True)

    def footer(self, code: int, holding: dict, drift: str = "", tally: dict | None = None, error=None) -> None:
        """The exit status and what holds; ``drift``: where the drift test never set its reference, why (a watch that
        ended before it could test a drop, which its status alone does not say); ``tally``: the windows judged per
        verdict, against the model's ``error`` (a :class:`~specsim.answers.verdict.ModelError`)."""
        if self.json:
            judged = {} if error is None else {"verdicts": tally or {}, "model_error": error.record()}
            self.emit(
                "summary", exit_code=code, holding=sorted(holding), **judged, **({"drift": drift} if drift else {})
            )
            return
        if error is not None and tally:
            from specsim.watch.judge import SHOWN

            print(
                "\nwindows judged: "
                + ", ".join(f"{n} {SHOWN[k]}" for k, n in tally.items())
                + f" (too close to call: the model's speedup within its error, {error.shown}, of 1; {error.short})"
            )
        if drift:
            print(f"\ndrift test: {drift}")
        if holding:
            print(
                "\nholding at the last window: "
                + "; ".join(f"{k} (since {self.clock(v.since_s)})" for k, v in holding.items())
            )
        print(
            f"exit status {code}"
            + (" (3: costs more than it saves, 4: acceptance dropped, 5: schedule; the most urgent)" if code else "")
        )


def _thresholds(j) -> str:
    """The table's cell of the two acceptance lengths a window's verdict weighs its interval against
    (:func:`specsim.watch.judge.verdict_of`): COSTS MORE below the first (the model's speedup 1 less its error), pays
    above the second (1 plus it); where no acceptance reaches a speedup, or every one does, that said instead.

    >>> _thresholds(type("J", (), {"costs_below": (2.2081, "found"), "pays_above": (2.3512, "found")}))
    'costs<2.208 pays>2.351'
    >>> _thresholds(type("J", (), {"costs_below": (None, "always"), "pays_above": (None, "never")}))
    'costs never pays never'
    """
    (down, down_kind), (up, up_kind) = j.costs_below, j.pays_above
    # costs below the length where the speedup reaches 1 - e: none where every length reaches it, any where none does
    costs = {"always": "costs never", "never": "costs always"}.get(down_kind) or f"costs<{down:.3f}"
    pays = {"always": "pays always", "never": "pays never"}.get(up_kind) or f"pays>{up:.3f}"
    return f"{costs} {pays}"


def _check(args) -> None:
    sources = [flag for flag in ("url", "prometheus", "file") if getattr(args, flag) is not None]
    if not sources and not (args.alert_rules or args.dashboard):
        raise ValueError(
            "give the engine's page (--url http://HOST:PORT/metrics), a Prometheus server that scrapes it "
            "(--prometheus http://HOST:9090) or a saved capture of its scrapes (--file FILE), or "
            "--alert-rules/--dashboard to write those alone"
        )
    if len(sources) > 1:
        raise ValueError(
            "read the engine's page (--url), Prometheus (--prometheus) or a saved capture (--file), one of them, not "
            f"both {' and '.join('--' + f for f in sources)}"
        )
    for flag in ("job", "selector"):
        if getattr(args, flag) is not None and args.prometheus is None:
            raise ValueError(f"--{flag} chooses what Prometheus holds: give it with --prometheus")
    for flag in ("start", "end"):
        if getattr(args, flag) is not None and args.prometheus is None and args.file is None:
            raise ValueError(
                f"--{flag} chooses the span Prometheus or a capture holds: give it with --prometheus or --file"
            )
    if args.job is not None and args.selector is not None:
        raise ValueError('give --job or --selector, not both (a selector can say job="..." itself)')
    if args.once and args.windows is not None:
        raise ValueError("--once reads one window; --windows N reads N: give one of them")
    if args.plot is not None and not str(args.plot).lower().endswith((".png", ".svg")):
        raise ValueError(f"--plot {args.plot!r}: write a .png or a .svg file")
    if not sources and args.plot is not None:
        raise ValueError("--plot draws a watched period: give --url, --prometheus or --file")
    from specsim.core.files import check_output

    for flag in ("plot", "alert_rules", "dashboard"):  # before the watch: an hour's windows must not be lost at the end
        if getattr(args, flag) is not None:
            check_output(getattr(args, flag), flag="--" + flag.replace("_", "-"))


def _deployment(args, model: str | None):
    """The deployment to model, with the lines that say what was taken for what the user did not give."""
    from specsim.cli.args import calibration, deployment
    from specsim.describe.models import get_model
    from specsim.watch.judge import LIVE_ACCEPTANCE

    said = []
    cal = calibration(args)
    if args.target is None and cal is None:
        if model is None:
            raise ValueError("name the served model's shape with --target (a built-in name or a config.json)")
        try:
            get_model(model)
        except (ValueError, KeyError, OSError):
            raise ValueError(
                f"the engine serves {model!r}, which is not a built-in model: give its shape with --target "
                "(a built-in name or its config.json)"
            ) from None
        args.target = model
        said.append(f"target: {model}, the model the engine names (--target to model another)")
    if args.draft is None and cal is None:
        raise ValueError(
            "name the drafter the engine runs with --draft (a draft model, eagle3, mtp, ngram, ...): its metrics do not say"
        )
    # Each window is judged at the acceptance it measures, never the calibration's runs' own: its held-out error set
    # aside, and the calibration's line in the provenance saying it is the fit's error, not this watch's.
    dep = deployment(args, judged_at=LIVE_ACCEPTANCE)
    if model is not None and not said:
        try:
            served = get_model(model)
        except (ValueError, KeyError, OSError):
            served = None  # a name that is not a built-in model: its shape is unknown, nothing to compare
        if served is not None and _shape(served) != _shape(dep.target):
            if cal is not None:
                # A calibration is one deployment's: its fitted terms say nothing of another model's engine.
                raise ValueError(
                    f"the engine serves {model!r} ({served.name}), and {args.calibration} is a calibration of "
                    f"{dep.target.name}: calibrate this deployment (specsim calibrate-engine), or leave out --calibration"
                )
            said.append(
                f"the engine serves {model!r} ({served.name}); modelled as {dep.target.name}, as --target names it"
            )
    return dep, said


def _shape(model) -> tuple:
    """What tells two models apart, whatever their names (a config.json's folder, a built-in's, a checkpoint's): their
    layers, widths, heads, vocabulary and experts."""
    return tuple(
        getattr(model, k, None)
        for k in ("n_layers", "hidden_size", "intermediate_size", "n_heads", "n_kv_heads", "vocab_size", "n_experts")
    )


class _Unreadable(ValueError):
    """What the engine's metrics gave that the watch cannot read on (a read that failed, a page it cannot read, a draft
    length off --gamma): the source's fault, retried or given up on with status 2.  Raised by :func:`_reading` alone,
    around the calls that read and check the metrics, so that any other error mid-watch is known to be specsim's own
    (:func:`_watch`)."""


@contextmanager
def _reading():
    """Calls that read and check the engine's metrics: their ValueError is the metrics' (:class:`_Unreadable`)."""
    try:
        yield
    except ValueError as err:
        raise _Unreadable(str(err)) from err


class WatchFault(RuntimeError):
    """A fault of specsim's own mid-watch (a bug, not the engine's metrics): not caught by the CLI's one-line handler,
    so that it ends with Python's traceback and status 1, to be reported, rather than as bad input or a give-up."""


class _Failures:
    """Reads that failed in a row: the first of a streak said, then one line a window; a watch that stops by itself
    (--once, --windows) gives up once a whole window's reads have failed, and says why (it once retried for ever)."""

    def __init__(self, args, output, per_window: int, again: str):
        self.bounded = args.once or args.windows is not None
        self.output, self.per_window, self.again, self.streak = output, per_window, again, 0

    def failed(self, err: ValueError, window_s: float) -> str | None:
        """Count one failed read; the reason to give up, where it is time to."""
        self.streak += 1
        if (self.streak - 1) % self.per_window == 0:  # on stderr with --json too: stdout keeps the JSON alone
            more = "" if self.streak == 1 else f" ({self.streak} reads in a row)"
            print(
                f"{time.strftime('%H:%M:%S', time.gmtime())}  read failed{more}: {err}; {self.again}", file=sys.stderr
            )
        if self.bounded and self.streak >= self.per_window:
            return f"no read succeeded for a whole window ({self.streak} reads over {window_s:g} s); the last: {err}"
        return None


def _live_url(args, source, names, gamma, model, first, output, watcher, gauges) -> str | None:
    """Read the page until the windows are done; the reason it gave up, where it did."""
    from specsim.watch.windows import read_samples, window_between

    windows = 1 if args.once else args.windows
    prev, gauges_seen, reads, done = first, [first.gauges], 0, 0
    poll = args.interval / READS_PER_WINDOW
    next_at = time.time() + poll
    failures = _Failures(args, output, READS_PER_WINDOW, "reading again")
    while windows is None or done < windows:
        time.sleep(max(0.0, next_at - time.time()))
        next_at += poll
        try:
            with _reading():
                t, samples = source.read()
                reading = read_samples(samples, names, t, model, source.url)
        except _Unreadable as err:
            gave_up = failures.failed(err, args.interval)
            if gave_up is not None:
                return gave_up
            continue
        failures.streak = 0
        gauges_seen.append(reading.gauges)
        reads += 1
        if reads % READS_PER_WINDOW:
            continue
        with _reading():
            window = window_between(prev, reading, names, gauges_seen, gamma)
        row = watcher.add(window)
        output.row(row)
        if gauges is not None:
            gauges.update(row)
        prev, gauges_seen, done = reading, [reading.gauges], done + 1
    return None


def _open(args, names, release, shown, matchers):
    """(source, model, first read of a page or None, Prometheus reads or None), every check of what it holds done."""
    from specsim.watch.sources import EndpointSource, FileSource, PrometheusSource
    from specsim.watch.windows import check_names, models_on, read_samples

    model = args.served_model
    if args.url is not None:
        source = EndpointSource(args.url, names)
        t, samples = source.read()
        args.names_note = check_names({n for n, _, _ in samples}, names, release, shown, source.url, args.named_by)
        first = read_samples(samples, names, t, model, source.url)
        return source, first.model, first, None
    if args.file is not None:
        source = FileSource(args.file, names)
    else:
        source = PrometheusSource(args.prometheus, names, args.matchers)
    start, end = _span(args, source)
    present = source.names_present(start, end)
    if not present and args.file is not None and not source.names_present(source.first_s, source.last_s):
        check_names(
            set(source.series), names, release, shown, source.url, args.named_by
        )  # no engine's metrics at all: as a page's
    if not present:  # nothing at all under this selection and span: not a page of another kind, but no data
        when = f"{_iso(start)} to {_iso(end)}"
        raise ValueError(
            f"{source.describe()} holds no series from {when}: check --start and --end"
            + ("" if args.file is not None else ", and --job or --selector")
        )
    args.names_note = check_names(present, names, release, shown, source.describe(), args.named_by)
    reads = source.reads(start, end, args.interval)
    found = set()
    for _, samples, gauges, _ in reads:  # SGLang before 0.5.13 says its acceptance in a gauge alone
        found |= models_on(samples + (gauges or []), names)
    if model is None and len(found) > 1:
        raise ValueError(
            f"{source.describe()} holds the metrics of several models ({', '.join(sorted(found))}): choose one with --model"
        )
    if model is not None and model not in found:
        raise ValueError(
            f"{source.describe()} has no speculative metrics of model {model!r}; it has: {', '.join(sorted(found)) or 'none'}"
        )
    if not found:
        raise ValueError(
            f"{source.describe()} holds none of {shown}'s speculative metrics from {start:.0f} to {end:.0f}"
        )
    return source, model or next(iter(found)), None, reads


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _span(args, source) -> tuple[float, float]:
    """(start, end) of the windows read from Prometheus or a capture (``source.first_s``, ``source.last_s``), each
    defaulted where not given: Prometheus's end now, a capture's its last stamp ("now" and "-24h" count from there);
    the start as many windows back as the drift reference needs (with --once as many again), a capture's its first
    stamp.  A capture's defaults are said in ``args.span_said``."""
    from specsim.watch.sources import parse_time

    capture = args.file is not None
    now = source.last_s if capture else time.time()
    end = parse_time(args.end, now, "--end") if args.end is not None else now
    # Unless given, the reference and a window after it; with --once as many after it as the reference holds, so that a
    # drop in any of them is tested against windows before it (the last alone took a drop a window older into its
    # reference, and missed it).
    after = args.reference if args.once else 1
    start = (
        parse_time(args.start, now, "--start")
        if args.start is not None
        else end - (args.reference + after) * args.interval
    )
    if capture and args.start is None:
        start = max(start, source.first_s) if args.once else source.first_s
    if capture:
        args.span_said = [
            ""
            if args.start is not None
            else f"--start not given: the capture's first stamp, {_iso(start)}"
            if not args.once
            else f"--start not given: {_iso(start)}, the --reference windows and as many after them back from --end "
            "(--once; the capture's first stamp at most)",
            f"--end not given: the capture's last stamp, {_iso(end)}" if args.end is None else "",
        ]
    if end <= start:  # it said "--start to --end spans -3600 s, less than one --interval", naming neither time
        given = "" if args.end is not None else " (--end not given: the capture's last stamp)" if capture else " (now)"
        raise ValueError(f"--start {_iso(start)} is not before --end {_iso(end)}{given}: give a --start before --end")
    if end - start < args.interval:
        raise ValueError(f"--start to --end spans {end - start:.0f} s, less than one --interval ({args.interval:g} s)")
    windows = math.floor((end - start) / args.interval + 1e-9)  # whole windows, as the reads take them
    if windows > MAX_SPAN_WINDOWS:
        raise ValueError(
            f"--start to --end ({_iso(start)} to {_iso(end)}) holds {windows:,} windows of "
            f"--interval {args.interval:g} s; at most {MAX_SPAN_WINDOWS:,}: give a shorter span or a longer --interval"
        )
    return start, end


def _header(args, source, names, shown, model, dep, limits, detector, judge, said) -> list:
    from specsim.cli import report
    from specsim.cli.args import calibration

    cal = calibration(args)
    lines = [
        f"watching {source.describe()}: {shown} metrics of {model} ({names.source})",
        f"acceptance from {names.acceptance_basis}",
        f"the model: {dep.target.name} + {dep.drafter.label} on {report.on_gpus(dep)}; engine {dep.engine.label}"
        + (
            f"; the break-even of your engine, calibrated by {cal.name}"
            if cal is not None
            else "; the break-even of the engine's preset (no --calibration: calibrate-engine fits yours)"
        ),
        dep.brief() if not report.VERBOSE else "\n".join(dep.provenance()),
        "load: each window's finished requests/s per replica with its mean prompt and output tokens, as Poisson "
        f"arrivals (the serving model's open loop); {limits.label}{args.limits_said}",
        "verdict: the acceptance length's 95% interval (its unit the draft, widened by the drift test's "
        "overdispersion; the request until a reference has measured it) against the acceptance lengths where the "
        "model's speedup is 1 plus and 1 less its error (the table's verdict thresholds, pays> and costs<): pays above "
        "the first, COSTS MORE below the second, too close to call between them (the model cannot tell), acceptance "
        "unsure where the interval crosses one; a schedule "
        f"change where another gamma gains {args.min_gain:.0%} or more",
        judge.error.said(rtol=False),
        detector.describe(),
    ] + [f"note: {s}" for s in said + getattr(args, "span_said", []) if s]
    if getattr(args, "names_note", ""):  # the release the page's names could not confirm
        lines.append(f"note: {args.names_note}")
    if args.url is not None and args.once:
        lines.append(
            f"note: --once with --url reads one window: the drift test needs a reference of {args.reference} "
            "windows (watch longer, or read history from --prometheus)"
        )
    return lines


def run_watch(args: argparse.Namespace) -> int:
    from specsim.cli.args import metric_names_of
    from specsim.cli.flags import engine_limits
    from specsim.watch.drift import DropDetector
    from specsim.watch.judge import Judge
    from specsim.watch.sources import selector_matchers
    from specsim.watch.watcher import Watcher, schedule_writer
    from specsim.watch.windows import prometheus_windows

    _check(args)
    names, release, shown, said = metric_names_of(args)
    said += [note for note in (names.note,) if note]
    args.matchers = selector_matchers(args.selector if args.job is None else f'{{job="{args.job}"}}')
    source, model, first, reads = (None, args.served_model, None, None)
    if args.url is not None or args.prometheus is not None or args.file is not None:
        source, model, first, reads = _open(args, names, release, shown, args.matchers)
    dep, more = _deployment(args, model)
    said += more
    limits, args.limits_said = engine_limits(args, dep.engine, dep.hardware)
    judge = Judge(dep, limits, args.gamma_max, args.memory_util)
    gamma = _draft_length(args.gamma, names, shown, first)
    history = None if reads is None else prometheus_windows(reads, names, model, gamma, source.url)
    if args.alert_rules or args.dashboard:
        _write_rules(
            args,
            names,
            judge,
            gamma or (int(first.gamma) if first is not None and first.gamma else None),
            args.matchers,
            watching=source is not None,
        )
        if source is None:
            return 0
    clock = _clock((reads[-1][0] - reads[0][0]) if reads else (args.windows or 1) * args.interval)
    detector = DropDetector(args.min_drop, args.false_alarm, args.reference)
    writer = schedule_writer(dep, judge, names, release, shown, args.draft_checkpoint)
    watcher = Watcher(judge, detector, writer, args.min_gain, clock)
    output = _Output(args.json, clock)
    gauges = server = None
    if args.listen is not None:
        from specsim.watch.publish import Gauges

        gauges = Gauges(model, shown, dep.brief(), judge.error)
        server = gauges.serve(*args.listen)
        said.append(f"specsim's gauges on http://{args.listen[0]}:{args.listen[1]}/metrics while the watch runs")
    output.header(
        _header(args, source, names, shown, model, dep, limits, detector, judge, said),
        {
            "model": model,
            "engine": shown,
            "source": source.describe(),
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
            "model_error": judge.error.record(),
        },
    )
    try:
        gave_up = _watch(args, source, names, model, gamma, first, history, output, watcher, gauges)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    if gave_up is not None:  # the windows asked for were not read: an error, whatever the windows before said (no plot)
        if output.json:
            output.emit("summary", exit_code=2, holding=sorted(watcher.holding), error=gave_up)
        print(f"specsim watch: error: {gave_up}", file=sys.stderr)
        return 2
    if args.plot is not None and any(r.judgement is not None for r in watcher.rows):
        from specsim.figures.plots import save_watch

        save_watch([r.to_dict() for r in watcher.rows], args.plot, f"{shown}, {model}: acceptance and break-even")
        if not args.json:
            print(f"wrote {args.plot}")
    elif args.plot is not None:  # it drew empty axes, an error of ±0.00% and a day that was not the window's
        print(
            f"note: --plot {args.plot} not written: no window was judged (idle, a restart or no drafts)",
            file=sys.stderr,
        )
    code = watcher.exit_code()
    output.footer(code, watcher.holding, watcher.untested_said(), watcher.tally(), judge.error)
    return code


def _draft_length(gamma: int | None, names, shown: str, first) -> int | None:
    """``--gamma``, refused where the metrics never say the draft length and it is not given, or where the page's
    first read says another (before the header: it was refused a window later, a minute's wait at the default)."""
    from specsim.watch.windows import check_gamma

    if gamma is None and names.gamma_gauge is None and names.gamma_info is None and names.accepted_per_position is None:
        raise ValueError(
            f"{shown}'s metrics do not say the draft length: give --gamma (the engine's number of draft tokens)"
        )
    if first is not None:
        check_gamma(gamma, first, names)
    return gamma


def _watch(args, source, names, model, gamma, first, history, output, watcher, gauges) -> str | None:
    """Print the windows of ``history`` (Prometheus) and those read live until done; the reason the watch gave up,
    where it did.  A window it cannot read on (the page's draft length moved off --gamma) ends it the same way, so that
    --json ends with the summary and its error, not with the rows alone.  Any other error is specsim's own, not the
    engine's: --json ends with a summary of exit_code 1 that says so, and :class:`WatchFault` carries it out with its
    traceback (an OSError, a closed pipe among them, is left to the CLI)."""
    try:
        if history is not None:
            for row in watcher.add_all(history):
                output.row(row)
                if gauges is not None:
                    gauges.update(row)
            if args.end is None and not args.once and args.file is None:  # a capture has no later windows
                last_t = history[-1].end_s  # the last read's time (a span holds two reads or more: _open)
                return _live_prometheus(args, source, names, model, gamma, last_t, output, watcher, gauges)
            return None
        return _live_url(args, source, names, gamma, model, first, output, watcher, gauges)
    except KeyboardInterrupt:
        return None
    except _Unreadable as err:
        return str(err)
    except OSError:
        raise
    except Exception as err:
        said = (
            f"stopped by a fault of specsim's own, not the engine's ({type(err).__name__}: {err}); please report it "
            "with the traceback"
        )
        if output.json:
            output.emit("summary", exit_code=1, holding=sorted(watcher.holding), error=said)
        raise WatchFault(said) from err


def _live_prometheus(args, source, names, model, gamma, last_t, output, watcher, gauges) -> str | None:
    """Ask Prometheus for each window as it ends; the reason it gave up, where it did."""
    from specsim.watch.windows import prometheus_windows

    done, limit = 0, args.windows
    # A failed query is asked again a fifth of a window later, as a page is read (it spun at once, thousands a second);
    # a watch that stops by itself gives up after a whole window of them.
    failures = _Failures(args, output, READS_PER_WINDOW, "asking again")
    while limit is None or done < limit:
        due = last_t + args.interval
        time.sleep(max(0.0, due + PROMETHEUS_LAG_S - time.time()))
        try:
            with _reading():
                reads = source.reads(last_t, due, args.interval)
        except _Unreadable as err:
            gave_up = failures.failed(err, args.interval)
            if gave_up is not None:
                return gave_up
            time.sleep(args.interval / READS_PER_WINDOW)
            continue
        failures.streak = 0
        with _reading():
            windows = prometheus_windows(reads, names, model, gamma, source.url)
        for row in watcher.add_all(windows):
            output.row(row)
            if gauges is not None:
                gauges.update(row)
        last_t, done = due, done + 1
    return None


def _write_rules(args, names, judge, gamma, matchers, watching: bool) -> None:
    """Write --alert-rules and --dashboard (together or neither) and say so; with --json and nothing ``watching``,
    stdout's one JSON document says what was written (as replay --out --json does)."""
    from specsim.cli.args import load_lengths
    from specsim.core.files import atomic_write_many
    from specsim.watch.publish import rules_answer

    if gamma is None:
        raise ValueError("--alert-rules tabulates the break-even at the engine's draft length: give --gamma")
    # The lengths every answer at a load takes: given, else a --calibration's runs', else the reference article's.
    requests = load_lengths(args)
    answer = rules_answer(
        names,
        judge,
        gamma,
        requests,
        rules=bool(args.alert_rules),
        with_dashboard=bool(args.dashboard),
        selector=matchers,
        min_drop=args.min_drop,
        interval_s=args.interval,
    )
    files = []
    if args.alert_rules:
        files.append((args.alert_rules, answer.rules_text().encode()))
    if args.dashboard:
        files.append((args.dashboard, answer.dashboard_text().encode()))
    atomic_write_many(files)
    lengths = "" if args.input_len and args.output_len else f" ({requests.description})"
    for path, _ in files:
        print(
            f"wrote {path}" + (lengths if path == args.alert_rules else ""),
            file=sys.stderr if args.json else sys.stdout,
        )
    if not args.json or watching:  # the windows' JSON follows on stdout where a source is watched
        return
    from specsim.cli.report import print_json

    print_json(answer.to_dict([path for path, _ in files]))


# -- flags ---------------------------------------------------------------------------------------------------------
def _parser_watch(sub) -> None:
    from specsim.serving.steady import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS
    from specsim.watch.drift import DEFAULT_FALSE_ALARM, DEFAULT_MIN_DROP, DEFAULT_REFERENCE
    from specsim.watch.watcher import DEFAULT_MIN_GAIN

    p = sub.add_parser(
        "watch",
        help="watch a running engine's metrics: acceptance drift and whether speculation still pays",
        description="Reads a vLLM, SGLang or TensorRT-LLM server's Prometheus metrics (its page, --url, or a "
        "Prometheus server that scrapes it, --prometheus, which can replay a past day, or a saved capture of its "
        "scrapes, --file) window by window: "
        "the acceptance length and per-position acceptance, the running batch and request rate, the draft "
        "length, the serving model's speedup at that load and the break-even acceptance there.  Verdicts: "
        "speculation costs more than it saves (exit 3), acceptance dropped (a change-point test with a "
        "stated false-alarm rate; exit 4), another schedule is better (written in the engine's format; "
        "exit 5).  Only GET requests, only to the addresses given.",
    )
    where = p.add_argument_group("where the metrics are")
    where.add_argument(
        "--url", help="the engine's metrics page (http://HOST:PORT; the engine's path is added when none is given)"
    )
    where.add_argument(
        "--prometheus", metavar="URL", help="a Prometheus server that scrapes the engine (http://HOST:9090)"
    )
    where.add_argument(
        "--file",
        metavar="FILE",
        help="a saved capture of the engine's scrapes, every sample time-stamped (an OpenMetrics file as specsim "
        "replay --out writes, or stamped text pages one after another), read as Prometheus would read it",
    )
    where.add_argument("--job", help="with --prometheus: the scrape job of the engine")
    where.add_argument(
        "--selector",
        help='with --prometheus: label matchers of the engine\'s series, e.g. \'{job="vllm",instance="a:8000"}\'',
    )
    where.add_argument(
        "--model",
        dest="served_model",
        metavar="NAME",
        help="the model_name label to watch where the engine serves several",
    )
    where.add_argument(
        "--start",
        help="with --prometheus or --file: the first window's start (ISO 8601, Unix seconds or -24h; default: "
        "as many windows back as the drift reference needs; a --file's first stamp)",
    )
    where.add_argument(
        "--end",
        help="with --prometheus or --file: the last window's end (a replay; default: now, and keep watching; a "
        "--file's last stamp, from which its now and -24h count)",
    )
    when = p.add_argument_group("windows")
    when.add_argument("--interval", type=_duration, default=60.0, help="seconds per window, or 30s, 5m (default 60)")
    when.add_argument(
        "--windows", type=int_at_least(1, "windows", 10**7), help="stop after N windows (default: until stopped)"
    )
    when.add_argument(
        "--once",
        action="store_true",
        help="one window, then exit with the verdicts' status (for cron and CI); with --prometheus and no --start, the "
        "--reference windows before the last and as many to it, a drop in any of these flagged",
    )
    when.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        help="the engine's draft length where its metrics do not say it (SGLang before 0.5.13)",
    )
    tests = p.add_argument_group("verdicts")
    tests.add_argument(
        "--min-drop",
        type=fraction,
        default=DEFAULT_MIN_DROP,
        help=f"the smallest drop of the acceptance length to flag, a share (default {DEFAULT_MIN_DROP:g})",
    )
    tests.add_argument(
        "--false-alarm",
        type=fraction,
        default=DEFAULT_FALSE_ALARM,
        help=f"false alarms per window at most without a change (default {DEFAULT_FALSE_ALARM:g})",
    )
    tests.add_argument(
        "--reference",
        type=int_at_least(3, "reference", 10**5),
        default=DEFAULT_REFERENCE,
        help=f"windows that set the drift test's reference (default {DEFAULT_REFERENCE})",
    )
    tests.add_argument(
        "--min-gain",
        type=fraction,
        default=DEFAULT_MIN_GAIN,
        help=f"propose another gamma where the model gains this share or more (default {DEFAULT_MIN_GAIN:g})",
    )
    tests.add_argument(
        "--gamma-max",
        type=int_at_least(1, "gamma-max", MAX_GAMMA, " (the search weighs gamma 1 and up against plain decoding)"),
        default=DEFAULT_GAMMA_MAX,
        help=f"the largest gamma the best-gamma search tries (default {DEFAULT_GAMMA_MAX}, as every command's)",
    )
    engine = p.add_argument_group("the engine's limits")
    engine.add_argument(
        "--max-num-seqs",
        type=int_at_least(1, "max-num-seqs", MAX_BATCH),
        default=None,
        help=f"the engine's sequences in flight at most (default: vLLM's own on the GPU; {DEFAULT_MAX_NUM_SEQS} else)",
    )
    engine.add_argument(
        "--max-batched-tokens",
        type=int_at_least(1, "max-batched-tokens", MAX_CONTEXT),
        default=None,
        help=f"tokens per iteration (default: vLLM's own on the GPU; {DEFAULT_MAX_BATCHED_TOKENS} else)",
    )
    add_memory_util(engine)
    out = p.add_argument_group("output")
    out.add_argument(
        "--listen",
        type=_listen,
        metavar="[HOST:]PORT",
        help="serve specsim's gauges for Prometheus to scrape (127.0.0.1 unless a host is given)",
    )
    out.add_argument("--plot", metavar="FILE", help="draw the watched period (.png or .svg) when the watch ends")
    out.add_argument(
        "--alert-rules", metavar="FILE", help="write Prometheus alerting rules for the same verdicts (YAML)"
    )
    out.add_argument("--dashboard", metavar="FILE", help="write a Grafana dashboard (JSON)")
    out.add_argument(
        "--input-len",
        type=int_at_least(1, "input-len", MAX_CONTEXT),
        help="with --alert-rules: the prompt tokens the break-even table assumes (default 1000, the article's)",
    )
    out.add_argument(
        "--output-len",
        type=output_len_type,
        help="with --alert-rules: the output tokens (default 256, the article's)",
    )
    out.add_argument(
        "--json",
        action="store_true",
        help="JSON lines: a header, one object per window and per verdict, a summary (on a failure, the summary "
        "with its error: alone where the watch could not start)",
    )
    add_deployment_args(p, defaults=False, batch=False, context=False)
    for action in p._actions:  # the watch's own default: the model the engine's page names (_deployment)
        if action.dest == "target":
            action.help = (
                "target model: built-in name or path to a Hugging Face config.json (default: the model the engine's "
                "page names, where it is a built-in one; --alert-rules and --dashboard alone read no page: give it)"
            )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    return run_watch(args)


def json_failure(message: str, exit_code: int) -> None:
    """A failure with ``--json`` (bad flags, an address that cannot be reached, a page without the speculative metrics,
    a watch that ended on an error; Ctrl-C before the first window, ``exit_code`` 130), said on stdout as the summary
    record a watch's JSON lines end with: ``exit_code`` the status (2, or 130), nothing holding, ``error`` the
    message of the stderr line.  A failure before the watch started gives this line alone (no header); one during it
    ends the rows.  (:func:`specsim.cli.main._json_failure` calls it.)"""
    _Output(True, None).emit("summary", exit_code=exit_code, holding=[], error=message)


PARSERS = {"watch": _parser_watch}
#: With --json, how a failure is said on stdout (specsim.cli.main._json_failure).
JSON_FAILURES = {"watch": json_failure}
