"""A simulated engine's metrics pages, in an engine's own format: to try ``specsim watch`` without an engine, and to
test it against a real Prometheus server.

:func:`simulate_day` plays a day of traffic (a request rate that changes over the day, an acceptance that may change at
given times) through the serving simulator (:func:`specsim.serving.simulator.simulate`) and keeps what an engine's
metrics count (:class:`~specsim.serving.simulator.StepCounters`).  :func:`pages` writes them, read every ``page_s``
seconds of the day, as the release's /metrics pages would show them (:class:`~specsim.engines.base.MetricNames`: names,
labels, what is counted per iteration and what when a request finishes, ``_created`` samples), with prometheus_client,
each sample stamped with its time.  :class:`ReplayServer` serves them one per GET on the engine's path, for a
Prometheus server to scrape (it keeps the stamps: ``honor_timestamps``), on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from specsim.core.records import record

__all__ = ["DayCounters", "ReplayServer", "arrivals", "page", "pages", "simulate_day"]


def arrivals(profile: list, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times (seconds) of a rate that holds ``rate`` requests/s from each ``(start_s, rate)`` of
    ``profile`` to the next start; the last pair ends the day (its rate is not used)."""
    out = []
    for (start, rate), (end, _) in zip(profile[:-1], profile[1:]):
        n = rng.poisson(rate * (end - start)) if rate > 0 else 0
        out.append(np.sort(rng.uniform(start, end, n)))
    return np.concatenate(out) if out else np.zeros(0)


@record(eq=False)
class DayCounters:
    """A simulated day's counters (:class:`~specsim.serving.simulator.StepCounters`) and how it was made."""

    counters: object
    seconds: float
    gamma: int
    description: str


def simulate_day(dep, profile: list, acceptance, gamma: int, input_tokens: int, output_tokens: int, *,
                 changes: list | None = None, seed: int = 0, limits=None, memory_utilization: float | None = None) -> DayCounters:
    """Play the requests of ``profile`` (:func:`arrivals`; every request ``input_tokens`` in, ``output_tokens`` out)
    through ``dep`` speculating ``gamma`` tokens at ``acceptance``, then at each ``(seconds, acceptance)`` of ``changes``
    from then on; the engine's KV cache is the capacity model's (as serve-sim's)."""
    from specsim.answers.load import kv_bytes
    from specsim.serving.simulator import StepCounters, simulate_speculating
    from specsim.serving.steady import EngineLimits
    from specsim.serving.workloads import Requests

    rng = np.random.default_rng(seed)
    times = arrivals(profile, rng)
    n = times.size
    if n == 0:
        raise ValueError("the day's rates bring no request")
    requests = Requests(np.full(n, int(input_tokens)), np.full(n, int(output_tokens)), times, "a replayed day")
    limits = EngineLimits() if limits is None else limits
    _, spec_kv = kv_bytes(dep, input_tokens, output_tokens, gamma, memory_utilization)
    counters = StepCounters(n, gamma)
    simulate_speculating(dep, requests, acceptance, gamma, limits, spec_kv, rng, changes, counters)
    what = (f"{n:,} requests of {input_tokens} in, {output_tokens} out over {profile[-1][0]:,.0f} s; gamma {gamma}; "
            f"{dep.brief()}")
    return DayCounters(counters, float(profile[-1][0]), int(gamma), what)


def _families(names, state: dict, k: int, models: tuple, gamma: int, stamp: float | None, created: float):
    """prometheus_client metric families of one page: the k-th read of ``state`` (:meth:`StepCounters.at`), the same
    counts under each of ``models``."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    def labels(model, extra: tuple, more: dict | None = None):
        out = {names.model_label: model} | dict(extra) | (more or {})
        return list(out), list(out.values())

    def counter(name, value, extra=(), more=None):
        family = CounterMetricFamily(name.removesuffix("_total"), name, labels=labels("", extra, more)[0])
        for model in models:
            family.add_metric(labels(model, extra, more)[1], float(value), created=created if names.created else None,
                              timestamp=stamp)
        return family

    def per_position(name, values, extra):
        keys, _ = labels("", extra, {names.position_label: "0"})
        family = CounterMetricFamily(name.removesuffix("_total"), name, labels=keys)
        for model in models:
            for position, value in enumerate(values):
                if names.drafted_per_position is not None and not state["finished_drafted_per_position"][k][position]:
                    continue  # created when a position first drafts
                family.add_metric(labels(model, extra, {names.position_label: str(position)})[1], float(value),
                                  created=created if names.created else None, timestamp=stamp)
        return family

    def gauge(name, value, extra=(), more=None):
        family = GaugeMetricFamily(name, name, labels=labels("", extra, more)[0])
        for model in models:
            family.add_metric(labels(model, extra, more)[1], float(value), timestamp=stamp)
        return family

    at_finish = names.counted_at_finish
    c, g = names.counter_labels, names.gauge_labels
    yield gauge(names.running, state["running"][k], g)
    yield gauge(names.waiting, state["waiting"][k], g)
    yield counter(names.requests, state["finished"][k], c, dict(names.request_labels))
    yield counter(names.prompt_tokens, state["finished_prompt_tokens" if at_finish else "prompt_tokens"][k], c)
    yield counter(names.generation_tokens, state["finished_output_tokens" if at_finish else "generation_tokens"][k], c)
    if names.drafts is not None:
        yield counter(names.drafts, state["drafts"][k], c)
    if names.draft_tokens is not None:
        yield counter(names.draft_tokens, state["draft_tokens"][k], c)
    if names.accepted is not None:
        yield counter(names.accepted, state["accepted"][k], c)
    if names.accepted_per_position is not None:
        key = "finished_accepted_per_position" if names.per_position_at_finish else "accepted_per_position"
        yield per_position(names.accepted_per_position, state[key][k][:gamma], c)
    if names.drafted_per_position is not None:
        yield per_position(names.drafted_per_position, state["finished_drafted_per_position"][k][:gamma], c)
    if names.verify_calls is not None:
        yield counter(names.verify_calls, state["finished_verifications"][k], c)
    if names.accept_length_gauge is not None and np.isfinite(state["accept_length"][k]):
        yield gauge(names.accept_length_gauge, state["accept_length"][k], g)
    if names.gamma_gauge is not None:
        yield gauge(names.gamma_gauge, gamma, g)
    if names.gamma_info is not None:
        info, label = names.gamma_info
        yield gauge(info, 1.0, g, {label: str(gamma), "spec_enabled": "true"})


def pages(day: DayCounters, names, model, page_s: float, start_s: float = 0.0, stamps: bool = True) -> list:
    """The /metrics page of ``day`` read every ``page_s`` seconds from 0 to its end, as ``names``'s release writes it
    for ``model`` (a name, or several that then show the same counts), each sample stamped ``start_s`` (Unix seconds)
    plus its time in the day where ``stamps``."""
    models = (model,) if isinstance(model, str) else tuple(model)
    from prometheus_client.exposition import generate_latest

    times = np.arange(0.0, day.seconds + 1e-9, float(page_s))
    state = day.counters.at(times)
    if names.accept_length_gauge is not None:
        state["accept_length"] = day.counters.accept_length_window(times, max(names.gauge_window, 1))

    class _Page:
        def __init__(self, k):
            self.k = k

        def collect(self):
            stamp = start_s + times[self.k] if stamps else None
            return _families(names, state, self.k, models, day.gamma, stamp, start_s)

    return [generate_latest(_Page(k)).decode() for k in range(times.size)]


def page(day: DayCounters, names, model: str, at_s: float) -> str:
    """The one page of ``day`` read at ``at_s`` seconds into it, without time stamps (as a live server shows it)."""
    from prometheus_client.exposition import generate_latest

    state = day.counters.at([at_s])
    if names.accept_length_gauge is not None:
        state["accept_length"] = day.counters.accept_length_window([at_s], max(names.gauge_window, 1))

    class _Page:
        def collect(self):
            return _families(names, state, 0, (model,), day.gamma, None, 0.0)

    return generate_latest(_Page()).decode()


class ReplayServer:
    """Serves ``texts`` one per GET of ``path`` (the last again once they run out), on ``host``:``port`` (0: any free
    port); ``served`` counts the GETs.  Anything but GET of ``path`` is answered 404 or 405."""

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
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

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
