"""Where an engine's metrics are read: its own page (``--url``), a Prometheus server that scrapes it (``--prometheus``),
or a saved capture of its scrapes (``--file``).

The first two send GET requests to the address the user names and nothing else.  A page is read by prometheus_client's
parser (:func:`specsim.speculation.metrics.parse_prometheus`); Prometheus by its HTTP API (``/api/v1/query_range`` for
the counters at each window's end, ``avg_over_time`` for the gauges over each window, ``resets`` for restarts inside
one, ``/api/v1/label/__name__/values`` for the names a selector holds), so that a past day can be replayed window by
window.  A capture (:class:`FileSource`) is answered as Prometheus would answer the same queries on the same samples.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone

from specsim.core.names import given_as

__all__ = ["MAX_PAGE_BYTES", "EndpointSource", "FileSource", "PrometheusSource", "parse_time", "selector_matchers"]

#: Largest page or API reply read: a /metrics page of one engine is tens of kilobytes.
MAX_PAGE_BYTES = 32 * 2**20
#: Seconds a request may take.
TIMEOUT_S = 10.0
#: Points a Prometheus range query returns per series at most (the server refuses more than 11,000).
MAX_POINTS = 10_000


def _get(url: str, what: str, timeout: float = TIMEOUT_S) -> tuple[bytes, str]:
    """(body, content type) of a GET, or one line saying why there is none."""
    request = urllib.request.Request(
        url, headers={"User-Agent": "specsim-watch", "Accept": "text/plain, application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310 - the address the user named
            body = reply.read(MAX_PAGE_BYTES + 1)
            kind = reply.headers.get("Content-Type", "")
            announced = reply.headers.get("Content-Length", "")
    except http.client.HTTPException as err:  # another service on the port, a chunked reply cut off
        raise ValueError(f"{what} did not answer HTTP ({type(err).__name__}: {str(err).strip()[:80]!r})") from None
    except urllib.error.HTTPError as err:
        detail = ""
        try:
            detail = json.loads(err.read(65536) or b"{}").get("error", "")
        except (ValueError, AttributeError):
            pass
        raise ValueError(f"{what} answered HTTP {err.code} {err.reason}" + (f": {detail}" if detail else "")) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):  # say the limit it ran out of
            reason = f"no reply within {timeout:g} s"
        raise ValueError(f"cannot reach {what}: {reason}") from None
    # read(n) returns what came before the connection closed: a page cut off there would be read as whole, without
    # the counters after the cut (mid-watch, a restart that did not happen).
    if announced.isdigit() and len(body) < int(announced) <= MAX_PAGE_BYTES:
        raise ValueError(
            f"{what} sent {len(body):,} of the {int(announced):,} bytes it announced: the page was cut off"
        )
    if len(body) > MAX_PAGE_BYTES:
        raise ValueError(f"{what} sent more than {MAX_PAGE_BYTES // 2**20} MiB: not a metrics page")
    return body, kind


def _check_url(url: str, flag: str) -> str:
    if re.match(r"^[A-Za-z0-9_.\-]+:[0-9]+(/|$)", url):  # HOST:PORT without a scheme (urlsplit reads a path or one)
        raise ValueError(f"{flag} {url!r} has no scheme: give http://{url}")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("", "file") and parts.path:
        # A saved page is one read: a window is the difference of two, so a file cannot be watched.
        raise ValueError(
            f"{flag} {url!r} is a file: a watch reads a live page over http(s) (e.g. http://127.0.0.1:8000) again and "
            "again, a window being what changed between reads; a saved capture of stamped scrapes is what --file "
            "reads, a saved page's acceptance what specsim alpha --metrics FILE reads"
        )
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{flag} {url!r} is not an http(s) address (e.g. http://127.0.0.1:8000)")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError:
        raise ValueError(f"{flag} {url!r}: the port must be a number in [0, 65535]") from None
    return url


class EndpointSource:
    """An engine's own metrics page, read at each call of :meth:`read`."""

    def __init__(self, url: str, names):
        url = _check_url(url, given_as("url"))
        parts = urllib.parse.urlsplit(url)
        self.defaulted_path = parts.path in ("", "/")
        self.url = urllib.parse.urlunsplit(parts._replace(path=names.path)) if self.defaulted_path else url
        self.names = names

    def describe(self) -> str:
        return self.url + (
            f" ({self.names.engine} serves its metrics on {self.names.path})" if self.defaulted_path else ""
        )

    def read(self) -> tuple[float, list]:
        """(time, samples) of one read: the time is the read's, or the samples' own where every one is stamped (a page
        replayed with its times)."""
        from specsim.speculation.metrics import parse_prometheus

        body, kind = _get(self.url, self.url)
        t = time.time()
        text = body.decode("utf-8", errors="replace")
        if "\x00" in text or text.count("\ufffd") > 16:  # bytes that are not text: named, not printed
            raise ValueError(f"{self.url} answered {len(body):,} bytes that are not UTF-8 text: not a metrics page")
        if "json" in kind or text.lstrip()[:1] in ("{", "["):
            raise ValueError(
                f"{self.url} answered JSON, not a Prometheus page ({self.names.engine} serves its Prometheus "
                f"page on {self.names.path})"
            )
        stamps: list = []
        samples = parse_prometheus(text, self.url, stamps)
        if stamps and all(s is not None for s in stamps):
            t = max(stamps)
        return t, samples


_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)$")
_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
#: The longest duration read (a window, a look back): a year, past any watch's window and within every clock's range.
MAX_DURATION_S = 366 * 86400.0


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``5m``, ``24h``, ``1d``."""
    text = str(text).strip()
    try:
        value = float(text)
    except ValueError:
        m = _DURATION.match(text)
        if m is None:
            raise ValueError(
                f"{text!r} is not a duration (seconds, or a number with ms, s, m, h, d or w: 5m, 24h)"
            ) from None
        value = float(m.group(1)) * _UNITS[m.group(2)]
    if not math.isfinite(value) or value <= 0 or value > MAX_DURATION_S:
        raise ValueError(f"a duration must be > 0 and at most 366d, got {text!r}")
    return value


def parse_time(text: str, now: float | None = None, flag: str | None = None) -> float:
    """Unix seconds from ``now``, ``-24h`` (before now), Unix seconds, or an ISO 8601 time (UTC unless it says),
    from 1970-01-01T00:00:00Z to the end of the year 9999, as a capture's stamps are
    (:data:`specsim.speculation.metrics.MAX_STAMP_S`): Unix seconds past it (1e308 was read) overflowed the C library's
    time_t where printed, and a day stamped there is no day (1e308 + 60 is 1e308); ``flag`` names the option."""
    from specsim.speculation.metrics import MAX_STAMP_S

    now = time.time() if now is None else now
    text = str(text).strip()
    said = f"{flag} {text!r}" if flag else repr(text)
    if text == "now":
        value = now
    elif text.startswith("-"):
        value = now - parse_duration(text[1:])
    else:
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not (math.isfinite(value) and value > 0):
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                raise ValueError(
                    f"{said} is not a time: give now, -24h (before now), Unix seconds or 2026-12-01T00:00:00Z"
                ) from None
            value = (when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)).timestamp()
    if not 0.0 <= value <= MAX_STAMP_S:
        raise ValueError(
            f"{said} is {value:.4g} Unix seconds: a time must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z "
            f"(Unix seconds 0 to {MAX_STAMP_S:.0f})"
        )
    return value


_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def selector_matchers(selector: str | None) -> str:
    """The label matchers inside ``{...}`` (or bare), checked, to add to every query; '' for none."""
    if selector is None:
        return ""
    inner = selector.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    pos, parts = 0, []
    while pos < len(inner.strip()):
        m = _MATCHER.match(inner, pos)
        if m is None:
            raise ValueError(
                f"{given_as('selector')} {selector!r} is not a list"
                f' of label matchers: give e.g. \'{{job="vllm",instance="a:8000"}}\''
            )
        if m.group(1) == "__name__":
            raise ValueError(
                f"{given_as('selector')} chooses the engine's series by label; specsim names the metrics itself (drop __name__)"
            )
        parts.append(f'{m.group(1)}{m.group(2)}"{m.group(3)}"')
        pos = m.end()
    return ",".join(parts)


#: How far back Prometheus looks for a series' last sample at an evaluation time (its --query.lookback-delta default,
#: 5m): a counter whose last sample is older is not there.
LOOKBACK_S = 300.0


class _RangeReads:
    """Reads at start, start + step, ... <= end of a source that holds a span of the metrics (a Prometheus server, a
    saved capture): the window arithmetic, one for both.  A source gives, per metric name, its series' values at those
    times (:meth:`_at`), their averages over the window before each (:meth:`_averaged`) and the resets summed over its
    series within it (:meth:`_resets`), as PromQL's instant selector, ``avg_over_time`` and ``sum(resets())`` do."""

    names = None

    def _at(self, name: str, start: float, end: float, step: float) -> list:
        raise NotImplementedError

    def _averaged(self, name: str, start: float, end: float, step: float, window_s: float) -> list:
        raise NotImplementedError

    def _resets(self, name: str, start: float, end: float, step: float, window_s: float) -> list:
        raise NotImplementedError

    def reads(self, start: float, end: float, step: float) -> list:
        """(time, samples, gauge samples over the window ending then, restarted) at start, start + step, ... <= end:
        counters at each time, gauges averaged over the step before it (None at the first), ``restarted`` where a
        counter reset inside that step."""
        names = self.names
        times = [start + k * step for k in range(int(math.floor((end - start) / step + 1e-9)) + 1)]
        at: dict = {t: [] for t in times}
        gauges: dict = {t: [] for t in times}
        resets: dict = {t: 0.0 for t in times}
        index = {round((t - start) / step): t for t in times}

        def when(t):
            return index.get(round((t - start) / step))

        for name in names.counters():
            for labels, values in self._at(name, start, end, step):
                labels.pop("__name__", None)
                for t, v in values:
                    if when(t) is not None:
                        at[when(t)].append((name, labels, v))
        window_s = max(int(round(step * 1000)), 1) / 1000  # PromQL durations are whole milliseconds
        gamma_info = (names.gamma_info or (None,))[0]
        for name in names.gauges():
            instant = name == gamma_info  # an info gauge's labels, not its average, say the draft length
            series = self._at(name, start, end, step) if instant else self._averaged(name, start, end, step, window_s)
            for labels, values in series:
                labels.pop("__name__", None)
                for t, v in values:
                    if when(t) is not None:
                        (at if instant else gauges)[when(t)].append((name, labels, v))
        for name in (
            names.requests,
            names.drafts or names.verify_calls or names.drafted_per_position or names.accepted,
        ):
            if name is None:
                continue
            for t, v in self._resets(name, start, end, step, window_s):
                if when(t) is not None:
                    resets[when(t)] += v
        return [(t, at[t], gauges[t] if k else None, resets[t] > 0 and k > 0) for k, t in enumerate(times)]


class PrometheusSource(_RangeReads):
    """A Prometheus server that scrapes the engine: the metrics at each window's end, over any range it holds."""

    def __init__(self, url: str, names, matchers: str = ""):
        self.url = _check_url(url, given_as("url", "--prometheus")).rstrip("/")
        self.names, self.matchers = names, matchers

    def describe(self) -> str:
        return f"{self.url} (Prometheus" + (f", series {{{self.matchers}}})" if self.matchers else ")")

    def _api(self, path: str, params: dict) -> object:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        body, _ = _get(url, f"Prometheus at {self.url}")
        try:
            reply = json.loads(body)
        except ValueError:
            raise ValueError(f"{self.url} is not a Prometheus server: {path} did not answer JSON") from None
        if not isinstance(reply, dict) or reply.get("status") != "success":
            raise ValueError(
                f"Prometheus at {self.url} refused the query: {reply.get('error', reply) if isinstance(reply, dict) else reply}"
            )
        return reply.get("data")

    def _selector(self, name: str) -> str:
        return f"{name}{{{self.matchers}}}" if self.matchers else name

    def names_present(self, start: float, end: float) -> set:
        """The metric names of the selected series in [start, end] that any engine's prefix starts (for the checks)."""
        from specsim.engines import REGISTRY

        prefixes = "|".join(re.escape(e.metric_names[0].prefix) for e in REGISTRY.values())
        match = "{" + ",".join(filter(None, [f'__name__=~"({prefixes}).+"', self.matchers])) + "}"
        data = self._api(
            "/api/v1/label/__name__/values", {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        )
        return set(data or [])

    def range(self, query: str, start: float, end: float, step: float) -> list:
        """[(labels, [(t, value), ...])] of a range query, in pieces of at most :data:`MAX_POINTS` steps."""
        out: dict = {}
        t0 = start
        while t0 <= end + 1e-9:
            t1 = min(end, t0 + step * (MAX_POINTS - 1))
            data = self._api(
                "/api/v1/query_range", {"query": query, "start": f"{t0:.3f}", "end": f"{t1:.3f}", "step": f"{step:.3f}"}
            )
            for series in (data or {}).get("result", []):
                key = tuple(sorted(series["metric"].items()))
                out.setdefault(key, []).extend((float(t), float(v)) for t, v in series["values"])
            t0 = t1 + step
        return [(dict(k), v) for k, v in out.items()]

    def _at(self, name, start, end, step):
        return self.range(self._selector(name), start, end, step)

    def _averaged(self, name, start, end, step, window_s):
        return self.range(f"avg_over_time({self._selector(name)}[{round(window_s * 1000)}ms])", start, end, step)

    def _resets(self, name, start, end, step, window_s):
        query = f"sum(resets({self._selector(name)}[{round(window_s * 1000)}ms]))"
        return [point for _, values in self.range(query, start, end, step) for point in values]


class FileSource(_RangeReads):
    """A saved capture of an engine's metrics, every sample stamped (:func:`specsim.speculation.metrics.read_capture`):
    read as the Prometheus server that held the same samples would answer :class:`PrometheusSource`'s queries, so that
    a day replayed from the file and from the server give the same windows.

    The PromQL semantics are Prometheus 2.42's (Debian's package, which the suite's server is; promql/engine.go at
    v2.42.0): a series' value at time t is its last sample at or before t, if that is at most :data:`LOOKBACK_S` older
    (``vectorSelectorSingle``: none where ``t < refTime - lookbackDelta``); ``avg_over_time`` and ``resets`` over a
    window w take the samples in [t - w, t], both ends in (``matrixIterSlice``: ``t >= mint``), ``resets`` counting
    each sample below the one before it (functions.go ``funcResets``).  Prometheus 3.0 left the lower end out of both
    (a sample exactly at t - w, or exactly the lookback old, no longer counts): against a Prometheus 3 server the
    gauges of windows whose start falls on a sample differ by that sample.  Times are compared in whole milliseconds,
    as Prometheus keeps them.  A file holds no staleness markers, as a backfilled server holds none."""

    def __init__(self, path: str, names):
        import numpy as np

        from specsim.speculation.metrics import read_capture

        self.url, self.names = str(path), names
        name, samples, stamps = read_capture(path)
        unstamped = sum(s is None for s in stamps)
        distinct = {s for s in stamps if s is not None}
        if len(distinct) < 2 and unstamped in (0, len(stamps)):
            said = "no time stamps" if unstamped else f"one time stamp ({_iso(next(iter(distinct)))})"
            raise ValueError(
                f"{self.url} is one page with {said}: one moment, and a window is what changed between two; "
                "give a capture of two or more stamped scrapes (what specsim replay --out writes), or "
                f"{given_as('EndpointSource(url)', '--url')} for a live page (a saved page's acceptance is what "
                "specsim alpha --metrics FILE reads)"
            )
        if unstamped:
            raise ValueError(
                f"{self.url}: {unstamped:,} of its {len(stamps):,} samples carry no time stamp: a capture's every "
                "sample needs one (name{labels} value TIMESTAMP)"
            )
        series: dict = {}
        for (metric, labels, value), stamp in zip(samples, stamps):
            series.setdefault(metric, {}).setdefault(tuple(sorted(labels.items())), []).append(
                (round(stamp * 1000), value)
            )
        self.series = {}
        for metric, by_labels in series.items():
            self.series[metric] = {}
            for labels, points in by_labels.items():
                points.sort(key=lambda p: p[0])  # scrapes appended out of order: Prometheus keeps them by time
                ms = np.array([p[0] for p in points], dtype=np.int64)
                values = np.array([p[1] for p in points], dtype=float)
                self.series[metric][labels] = (ms, values)
        self.first_s, self.last_s = min(distinct), max(distinct)
        self.stamps = len(distinct)

    def describe(self) -> str:
        return f"{self.url} (a saved capture: {self.stamps:,} scrapes from {_iso(self.first_s)} to {_iso(self.last_s)})"

    def names_present(self, start: float, end: float) -> set:
        """The metric names with a sample in [start, end] that any engine's prefix starts (as
        :meth:`PrometheusSource.names_present`)."""
        from specsim.engines import REGISTRY

        prefixes = tuple(e.metric_names[0].prefix for e in REGISTRY.values())
        lo, hi = round(start * 1000), round(end * 1000)
        return {
            metric
            for metric, by_labels in self.series.items()
            if metric.startswith(prefixes) and any(((ms >= lo) & (ms <= hi)).any() for ms, _ in by_labels.values())
        }

    @staticmethod
    def _times(start: float, end: float, step: float):
        """A range query's evaluation times, whole milliseconds (start, start + step, ... <= end)."""
        import numpy as np

        first, last, every = round(start * 1000), round(end * 1000), max(round(step * 1000), 1)
        return np.arange(first, last + 1, every, dtype=np.int64)

    def _at(self, name, start, end, step):
        import numpy as np

        times = self._times(start, end, step)
        out = []
        for labels, (ms, values) in self.series.get(name, {}).items():
            last = np.searchsorted(ms, times, side="right") - 1
            found = (last >= 0) & (ms[np.maximum(last, 0)] >= times - round(LOOKBACK_S * 1000))
            points = [(t / 1000, float(values[k])) for t, k, ok in zip(times, last, found) if ok]
            if points:
                out.append((dict(labels), points))
        return out

    def _within(self, ms, times, window_s):
        """For each time, the slice [lo, hi) of the samples in [t - window, t]."""
        import numpy as np

        return np.searchsorted(ms, times - round(window_s * 1000), side="left"), np.searchsorted(
            ms, times, side="right"
        )

    def _averaged(self, name, start, end, step, window_s):
        import numpy as np

        times = self._times(start, end, step)
        out = []
        for labels, (ms, values) in self.series.get(name, {}).items():
            lo, hi = self._within(ms, times, window_s)
            points = [(t / 1000, float(np.mean(values[a:b]))) for t, a, b in zip(times, lo, hi) if b > a]
            if points:
                out.append((dict(labels), points))
        return out

    def _resets(self, name, start, end, step, window_s):
        import numpy as np

        times = self._times(start, end, step)
        total = np.zeros(times.size)
        present = np.zeros(times.size, dtype=bool)
        for ms, values in self.series.get(name, {}).values():
            lo, hi = self._within(ms, times, window_s)
            fell = np.r_[0, np.cumsum(values[1:] < values[:-1])]  # fell[i]: samples below their previous up to i
            total += np.where(hi > lo, fell[np.maximum(hi - 1, 0)] - fell[np.minimum(lo, len(ms) - 1)], 0)
            present |= hi > lo
        return [(t / 1000, float(v)) for t, v, ok in zip(times, total, present) if ok]


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
