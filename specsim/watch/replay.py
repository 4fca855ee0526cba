"""A simulated engine's metrics pages, in an engine's own format: to try ``specsim watch`` without an engine, and to
test it against a real Prometheus server.

:func:`simulate_day` plays a day of traffic (a request rate that changes over the day, an acceptance that may change at
given times) through the serving simulator (:func:`specsim.serving.simulator.simulate`) and keeps what an engine's
metrics count (:class:`~specsim.serving.counters.StepCounters`).  :func:`pages` writes them, read every ``page_s``
seconds of the day, as the release's /metrics pages would show them (:class:`~specsim.engines.base.MetricNames`: names,
labels, what is counted per iteration and what when a request finishes, ``_created`` samples, and, untyped at 0, the names
that tell the release from earlier ones, as its page shows them), with prometheus_client,
each sample stamped with its time.  :class:`ReplayServer` serves them one per GET on the engine's path, for a
Prometheus server to scrape (it keeps the stamps: ``honor_timestamps``), on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from numbers import Real

import numpy as np

from specsim.engines.base import as_release

__all__ = [
    "DayCounters",
    "ReplayAnswer",
    "ReplayServer",
    "acceptance_said",
    "arrivals",
    "drop_seconds",
    "edges_125",
    "openmetrics",
    "pages",
    "replay_answer",
    "simulate_day",
]

#: The example day's drafter, where ``specsim replay`` is not told: a per-token acceptance of 0.6 and 3 draft tokens a
#: round, a drafter that pays at low load and stops paying in the day's overload (specsim's example, not a measurement).
EXAMPLE_ALPHA = 0.6
EXAMPLE_GAMMA = 3


def arrivals(profile: list, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times (seconds) of a rate that holds ``rate`` requests/s from each ``(start_s, rate)`` of
    ``profile`` to the next start; the last pair ends the day (its rate is not used)."""
    out = []
    for (start, rate), (end, _) in zip(profile[:-1], profile[1:]):
        n = rng.poisson(rate * (end - start)) if rate > 0 else 0
        out.append(np.sort(rng.uniform(start, end, n)))
    return np.concatenate(out) if out else np.zeros(0)


@dataclass(frozen=True, eq=False)
class DayCounters:
    """A simulated day's counters (:class:`~specsim.serving.counters.StepCounters`) and how it was made."""

    counters: object
    seconds: float
    gamma: int
    description: str
    #: The longest sequence the engine takes (vLLM's max_model_len: the target's max_position_embeddings, or the day's
    #: requests where it states none), which the edges of a histogram of generated tokens go up to (:func:`edges_125`)
    max_model_len: int = 0


def simulate_day(
    dep,
    profile: list,
    acceptance,
    gamma: int,
    input_tokens: int,
    output_tokens: int,
    *,
    changes: list | None = None,
    seed: int = 0,
    limits=None,
    memory_utilization: float | None = None,
) -> DayCounters:
    """Play the requests of ``profile`` (:func:`arrivals`; every request ``input_tokens`` in, ``output_tokens`` out)
    through ``dep`` speculating ``gamma`` tokens at ``acceptance``, then at each ``(seconds, acceptance)`` of ``changes``
    from then on; the engine's KV cache is the capacity model's (as serve-sim's)."""
    from specsim.serving.capacity import free_kv_bytes
    from specsim.serving.counters import StepCounters
    from specsim.serving.simulator import simulate_speculating
    from specsim.serving.steady import engine_limits
    from specsim.serving.workloads import Requests

    rng = np.random.default_rng(seed)
    times = arrivals(profile, rng)
    n = times.size
    if n == 0:
        raise ValueError("the day's rates bring no request")
    requests = Requests(np.full(n, int(input_tokens)), np.full(n, int(output_tokens)), times, "a replayed day")
    limits = engine_limits(dep.engine, dep.hardware)[0] if limits is None else limits
    _, spec_kv = free_kv_bytes(
        dep,
        input_tokens,
        output_tokens,
        gamma,
        memory_utilization,
        limits.max_batched_tokens,
        limits.max_num_seqs,
        limits.spec_max_num_seqs,
    )
    counters = StepCounters(n, gamma)
    simulate_speculating(dep, requests, acceptance, gamma, limits, spec_kv, rng, changes, counters)
    what = (
        f"{n:,} requests of {input_tokens} in, {output_tokens} out over {profile[-1][0]:,.0f} s; gamma {gamma}; "
        f"{dep.brief()}"
    )
    longest = max(int(dep.target.max_position_embeddings), int(input_tokens) + int(output_tokens))
    return DayCounters(counters, float(profile[-1][0]), int(gamma), what, longest)


def edges_125(max_model_len: int) -> list:
    """The upper edges 1, 2, 5, 10, 20, ... up to ``max_model_len``: vLLM's build_1_2_5_buckets(max_model_len), the
    edges of its request_generation_tokens (vllm/v1/metrics/loggers.py 0.10.0 L610; buckets.py L195 of 0.33.0), which
    a replayed page takes where its engine's names fix none (:attr:`~specsim.engines.base.MetricNames.generation_edges`:
    SGLang's are its own; a reader takes whatever edges a page has).

    >>> edges_125(100)
    [1, 2, 5, 10, 20, 50, 100]
    """
    out, scale = [], 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > max_model_len:
                return out
            out.append(mantissa * scale)
        scale *= 10


def _markers(names, release: tuple | None) -> tuple:
    """The names that tell ``release`` from earlier ones (:attr:`MetricNames.later`, those it exports) that a page
    does not write already: a replayed page of that release shows them, as the engine's does (None: none)."""
    if release is None:
        return ()
    written = {n.removesuffix("_total") for n in names.counters() + names.gauges()}
    return tuple(name for name, since in names.later if since <= as_release(release) and name not in written)


def _families(
    names, state: dict, ks: list, models: tuple, gamma: int, stamps: list, created: float, markers: tuple = ()
):
    """prometheus_client metric families of the reads ``ks`` of ``state`` (:meth:`StepCounters.at`; one page where
    ``ks`` holds one, a whole day in one family each for OpenMetrics), stamped ``stamps`` (None: unstamped), the same
    counts under each of ``models``; ``markers`` (:func:`_markers`) untyped at 0, for the names alone."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        UnknownMetricFamily,
    )
    from prometheus_client.utils import floatToGoString

    def labels(model, extra: tuple, more: dict | None = None):
        out = {names.model_label: model} | dict(extra) | (more or {})
        return list(out), list(out.values())

    def counter(name, key, extra=(), more=None, column=None, family=None):
        family = family or CounterMetricFamily(name.removesuffix("_total"), name, labels=labels("", extra, more)[0])
        for model in models:
            for k, stamp in zip(ks, stamps):
                if (
                    column is not None
                    and names.drafted_per_position is not None
                    and not state["finished_drafted_per_position"][k][column]
                ):
                    continue  # a position's children are created when it first drafts
                value = state[key][k] if column is None else state[key][k][column]
                family.add_metric(
                    labels(model, extra, more)[1],
                    float(value),
                    created=created if names.created else None,
                    timestamp=stamp,
                )
        return family

    def gauge(name, values, extra=(), more=None):
        family = GaugeMetricFamily(name, name, labels=labels("", extra, more)[0])
        for model in models:
            for k, stamp in zip(ks, stamps):
                if np.isfinite(values[k]):
                    family.add_metric(labels(model, extra, more)[1], float(values[k]), timestamp=stamp)
        return family

    at_finish = names.counted_at_finish
    c, g = names.counter_labels, names.gauge_labels
    yield gauge(names.running, state["running"], g)
    yield gauge(names.waiting, state["waiting"], g)
    yield counter(names.requests, "finished", c, dict(names.request_labels))
    tokens = dict(names.token_labels)
    yield counter(names.prompt_tokens, "finished_prompt_tokens" if at_finish else "prompt_tokens", c, tokens)
    yield counter(names.generation_tokens, "finished_output_tokens" if at_finish else "generation_tokens", c, tokens)
    for name, key in (
        (names.drafts, "drafts"),
        (names.draft_tokens, "draft_tokens"),
        (names.accepted, "accepted"),
        (names.verify_calls, "finished_verifications"),
    ):
        if name is not None:
            yield counter(name, key, c)
    for name, key in (
        (
            names.accepted_per_position,
            "finished_accepted_per_position" if names.per_position_at_finish else "accepted_per_position",
        ),
        (names.drafted_per_position, "finished_drafted_per_position"),
    ):
        if name is not None:  # one family, a series per position
            family = None
            for position in range(gamma):
                family = counter(name, key, c, {names.position_label: str(position)}, position, family)
            yield family
    if names.generation_histogram is not None:  # each finished request's output tokens, counted as it finishes
        family = HistogramMetricFamily(names.generation_histogram, names.generation_histogram, labels=labels("", c)[0])
        edges = [floatToGoString(e) for e in state["output_edges"]] + ["+Inf"]
        for model in models:
            for k, stamp in zip(ks, stamps):
                counts = list(state["finished_output_buckets"][k]) + [state["finished"][k]]
                family.add_metric(
                    labels(model, c)[1],
                    [(e, float(n)) for e, n in zip(edges, counts)],
                    float(state["finished_output_tokens"][k]),
                    timestamp=stamp,
                )
        yield family
    if names.accept_length_gauge is not None:
        yield gauge(names.accept_length_gauge, state["accept_length"], g)
    if names.gamma_gauge is not None:
        yield gauge(names.gamma_gauge, np.full(len(state["running"]), float(gamma)), g)
    if names.gamma_info is not None:
        info, label = names.gamma_info
        yield gauge(info, np.ones(len(state["running"])), g, {label: str(gamma), "spec_enabled": "true"})
    for name in markers:  # what the simulator does not count: only the name is read (check_names)
        family = UnknownMetricFamily(name, name, labels=labels("", g)[0])
        for model in models:
            for stamp in stamps:
                family.add_metric(labels(model, g)[1], 0.0, timestamp=stamp)
        yield family


def _state(day: DayCounters, names, times: np.ndarray) -> dict:
    state = day.counters.at(times)
    if names.accept_length_gauge is not None:
        state["accept_length"] = day.counters.accept_length_window(times, max(names.gauge_window, 1))
    if names.generation_histogram is not None:
        state["output_edges"] = list(names.generation_edges) or edges_125(day.max_model_len or 1)
        state["finished_output_buckets"] = day.counters.finished_output_buckets(times, state["output_edges"])
    return state


def pages(
    day: DayCounters,
    names,
    model,
    page_s: float,
    start_s: float = 0.0,
    stamps: bool = True,
    release: tuple | None = None,
) -> list:
    """The /metrics page of ``day`` read every ``page_s`` seconds from 0 to its end, as ``names``'s release writes it
    for ``model`` (a name, or several that then show the same counts), each sample stamped ``start_s`` (Unix seconds)
    plus its time in the day where ``stamps``; with the names that tell ``release`` from earlier ones where given."""
    from prometheus_client.exposition import generate_latest

    models = (model,) if isinstance(model, str) else tuple(model)
    times = np.arange(0.0, day.seconds + 1e-9, float(page_s))
    state = _state(day, names, times)

    class _Page:
        def __init__(self, k):
            self.k = k

        def collect(self):
            return _families(
                names,
                state,
                [self.k],
                models,
                day.gamma,
                [start_s + times[self.k] if stamps else None],
                start_s,
                _markers(names, release),
            )

    return [generate_latest(_Page(k)).decode() for k in range(times.size)]


def openmetrics(
    day: DayCounters, names, model: str, page_s: float, start_s: float, release: tuple | None = None
) -> str:
    """The whole day as one OpenMetrics text, every read ``page_s`` seconds apart stamped from ``start_s`` (with the
    names that tell ``release`` where given, as :func:`pages`): what
    ``promtool tsdb create-blocks-from openmetrics`` turns into blocks a Prometheus server then holds (a past day to
    replay with ``specsim watch --prometheus --start --end``)."""
    from prometheus_client.openmetrics.exposition import generate_latest

    times = np.arange(0.0, day.seconds + 1e-9, float(page_s))
    state = _state(day, names, times)

    class _Day:
        def collect(self):
            return _families(
                names,
                state,
                list(range(times.size)),
                (model,),
                day.gamma,
                list(start_s + times),
                start_s,
                _markers(names, release),
            )

    return generate_latest(_Day(), escaping="allow-utf-8").decode()  # names as the engine spells them (colons kept)


def acceptance_said(acceptance, gamma: int) -> str:
    """What replay calls the acceptance it plays: ``alpha A``, or a calibration's per-position shares (their
    :meth:`~specsim.speculation.acceptance.Acceptance.brief`) and, past the steps they were measured at, that they are
    continued (:func:`specsim.answers.load.past_measured`, as every answer says it)."""
    from specsim.answers.load import past_measured

    if isinstance(acceptance, Real):
        return f"alpha {acceptance:g}"
    return acceptance.brief() + past_measured(gamma, acceptance.measured_steps)


def drop_seconds(at: str) -> float:
    """When in the day ``--drop-at`` changes the acceptance: a duration (:func:`~specsim.watch.sources.parse_duration`;
    ``0`` or ``0s`` the day's start).  ValueError naming what is allowed otherwise."""
    from specsim.watch.sources import parse_duration

    return parse_duration(at) if at not in ("0", "0s") else 0.0


@dataclass(frozen=True)
class ReplayAnswer:
    """replay: the day simulated (:class:`~specsim.watch.replay.DayCounters`) and what it was of: the engine release
    whose pages it writes, the served model's label, the acceptance played and its words, the drop, the start and the
    seconds between pages."""

    deployment: object  #: the Deployment simulated
    day: DayCounters  #: the simulated day
    engine: str  #: the release whose metrics the pages hold, as said ("vllm 0.34.0")
    model: str  #: the model_name label of the pages
    acceptance: object  #: the alpha, or the Acceptance (a calibration's per-position shares), played
    label: str  #: what the record calls the acceptance (:func:`acceptance_said`)
    drop: tuple | None  #: (when as given, the alpha from then on), or None
    start_s: float  #: the day's start, Unix seconds
    page_seconds: float  #: seconds of the day between two pages

    @property
    def description(self) -> str:
        """The day in one line, without the hint to ``-v`` for every source (what ``-v`` and ``--json`` print)."""
        from specsim.speculation.deployment import BRIEF_HINT

        return self.day.description.replace(BRIEF_HINT, "")

    def to_dict(self, written: str | None = None) -> dict:
        """What ``specsim replay --json`` prints: the engine, model and day, its gamma and acceptance (``alpha`` null
        where it plays per-position shares), the drop, the start, the seconds between pages, the sources of every
        number (``provenance``, ``deployment``) and the file ``written`` (--out) where given."""
        from specsim.speculation.acceptance import acceptance_rates

        record = {
            "engine": self.engine,
            "model": self.model,
            "day": self.description,
            "seconds": self.day.seconds,
            "gamma": self.day.gamma,
            "alpha": self.acceptance if isinstance(self.acceptance, Real) else None,
            "acceptance": self.label,
            "acceptance_rates": acceptance_rates(self.acceptance),
            "drop": None if self.drop is None else {"at": self.drop[0], "to": self.drop[1]},
            "start": self.start_s,
            "page_seconds": self.page_seconds,
            "provenance": self.deployment.provenance(),
            "deployment": self.deployment.identity(),
        }
        return record if written is None else record | {"written": written}

    def openmetrics(self, names, release: tuple | None = None) -> str:
        """The whole day as one OpenMetrics text in ``names``'s release (:func:`openmetrics`)."""
        return openmetrics(self.day, names, self.model, self.page_seconds, self.start_s, release)

    def pages(self, names, release: tuple | None = None) -> list:
        """The day's /metrics pages, one every :attr:`page_seconds` (:func:`pages`)."""
        return pages(self.day, names, self.model, self.page_seconds, start_s=self.start_s, release=release)


def replay_answer(
    dep,
    profile: list,
    acceptance,
    gamma: int,
    input_tokens: int,
    output_tokens: int,
    *,
    engine: str,
    model: str | None = None,
    label: str | None = None,
    drop: tuple | None = None,
    start_s: float = 0.0,
    page_seconds: float = 60.0,
    seed: int = 0,
) -> ReplayAnswer:
    """Simulate the day of ``profile`` ((start seconds, requests/s) pairs, the last time its end) through ``dep``
    speculating ``gamma`` tokens at ``acceptance`` (an alpha or an Acceptance), changing to ``drop``'s alpha at its
    time (``(at, alpha)``, ``at`` as ``--drop-at`` takes it, :func:`drop_seconds`); ``engine`` is the release the
    pages are written in as said, ``model`` their model_name label (default: the target's checkpoint, else its name),
    ``label`` the acceptance's words (default: :func:`acceptance_said`)."""
    changes = None if drop is None else [(drop_seconds(drop[0]), drop[1])]
    day = simulate_day(dep, profile, acceptance, gamma, input_tokens, output_tokens, changes=changes, seed=seed)
    return ReplayAnswer(
        deployment=dep,
        day=day,
        engine=engine,
        model=model or dep.target.source or dep.target.name,
        acceptance=acceptance,
        label=acceptance_said(acceptance, gamma) if label is None else label,
        drop=None if drop is None else tuple(drop),
        start_s=start_s,
        page_seconds=page_seconds,
    )


#: How often a :class:`ReplayServer`'s loop looks whether it was asked to stop, seconds.
_POLL_S = 0.02


class ReplayServer:
    """Serves ``texts`` one per GET of ``path`` (the last again once they run out), on ``host``:``port`` (0: any free
    port); ``served`` counts the GETs.  Anything but GET of ``path`` is answered 404 or 405.  Leaving it stops the
    server within :data:`_POLL_S` (http.server's own 0.5 s made every exit wait that long, a quarter second on average)."""

    def __init__(self, texts: list, path: str = "/metrics", host: str = "127.0.0.1", port: int = 0):
        self.texts, self.path, self.served = list(texts), path, 0
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server name
                if self.path.split("?")[0] != owner.path:
                    self.send_error(404)
                    return
                with lock:  # a page counts as served once written whole: a scraper that gave up gets it again
                    body = owner.texts[min(owner.served, len(owner.texts) - 1)].encode()
                    try:
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        self.wfile.flush()
                    except OSError:
                        return
                    owner.served += 1

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(_POLL_S,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{self.path}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
