"""Acceptance measured by a serving engine: alpha from vLLM's Prometheus counters.

vLLM exports, per engine and model (Prometheus text exposition on /metrics):

    vllm:spec_decode_num_drafts_total              verification passes with drafts
    vllm:spec_decode_num_draft_tokens_total        drafted tokens
    vllm:spec_decode_num_accepted_tokens_total     accepted drafted tokens
    vllm:spec_decode_num_accepted_tokens_per_pos_total{position="k"}
                                                   drafts whose token k was accepted

From these:

* mean acceptance length  E = 1 + accepted / drafts  (tokens per target pass);
* gamma = draft_tokens / drafts (num_speculative_tokens);
* cumulative per-position rate  c_k = count_k / drafts = P(tokens 0..k accepted);
* conditional rate  a_k = c_k / c_{k-1}  (c_{-1} = 1): P(token k accepted | 0..k-1 were);
* implied alpha: the alpha whose E(alpha, gamma) equals the measured E.

Under the independence assumption of Leviathan et al. every a_k equals alpha.
Real drafts usually accept the first position more often than later ones; when
the a_k differ from alpha by more than sampling noise, :func:`acceptance_from_prometheus`
flags it, and E at gamma <= the measured gamma should then come from the
per-position form 1 + sum_k c_k (``expected_tokens_per_position``).

Pages are read by prometheus_client's parser of the text format; a malformed one is reported with the line it
refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specsim.core.limits import MAX_GAMMA
from specsim.core.names import given_as
from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length, tokens_per_round

__all__ = [
    "AcceptanceMetrics",
    "acceptance_between",
    "acceptance_from_page",
    "acceptance_from_prometheus",
    "parse_prometheus",
    "is_openmetrics",
    "read_capture",
    "read_metrics_file",
    "read_page",
]

#: Longest line of a /metrics page read: vLLM's speculative-decoding samples are under 200 characters, and a label
#: (a model path) is far shorter than this; a longer line is not a Prometheus page of a server.
MAX_LINE_CHARS = 4096

#: A capture whose every stamp is earlier (2001-09-09T01:46:40Z) was not scraped in milliseconds: read as the text
#: format's milliseconds, OpenMetrics's seconds (a file that lost its '# EOF') fall in 1970.
EARLIEST_CAPTURE_S = 1e9

#: The latest time stamp read, seconds: the end of the year 9999, the last an ISO 8601 time (and Python's datetime) says.
MAX_STAMP_S = 253402300799.0

_PREFIX = "vllm:spec_decode_"
#: What a vLLM page's speculation counters hold: vllm:spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens
#: ("Number of spec decoding drafts / draft tokens / accepted tokens") and _num_accepted_tokens_per_pos ("Accepted
#: tokens per draft position") are prometheus_client Counters made once, with the server's stat logger
#: (SpecDecodingProm, vllm/v1/spec_decode/metrics.py L177-264 at 0.30.0, built in PrometheusStatLogger.__init__,
#: vllm/v1/metrics/loggers.py L482), and only incremented (SpecDecodingProm.observe, L266-281): a page holds every draft
#: since the server started.
SINCE_START = (
    "its counters count every draft since the server started, so a page saved after several runs holds all of them: "
    "save it from a server that ran these runs alone (bench-plan saves a page before and after each run)"
)
_COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos")


def _samples(text: str):
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        yield from family.samples


def _once_each(samples: list, source: str, repeated: bool = False) -> None:
    """Refuse a page that gives one series (a name and its labels) twice: the exposition format holds each series once
    (Prometheus refuses the scrape), and a reader that adds them up counts it twice (a doubled draft count once halved
    the acceptance length watch judged by).  ``repeated``: a capture of several scrapes, where a series appears once
    per time stamp (twice at one stamp is still refused)."""
    seen: dict = {}  # each series' first time stamp
    for s in samples:
        key = (s.name, tuple(sorted(s.labels.items()))) + ((s.timestamp,) if repeated else ())
        if key in seen:
            labels = ",".join(f'{k}="{v}"' for k, v in key[1])
            if not repeated and None not in (s.timestamp, seen[key]) and s.timestamp != seen[key]:
                # a capture (replay --out) given where a page is read: it said the series "appears twice"
                raise ValueError(
                    f"{source} is a capture of stamped scrapes (the series {s.name}{{{labels}}} at several time "
                    "stamps), not one page: save one /metrics page (curl -s http://HOST:PORT/metrics > FILE); "
                    "specsim watch --file reads a capture"
                )
            at = f" at time stamp {s.timestamp:.3f}" if repeated and s.timestamp is not None else ""
            raise ValueError(
                f"{source}: the series {s.name}{{{labels}}} appears twice{at}; a metrics page gives each series once"
            )
        seen[key] = s.timestamp


def is_openmetrics(text: str) -> bool:
    """An OpenMetrics exposition ends with ``# EOF`` (its line feed optional); the Prometheus text format has no such
    line.  The two differ in the unit of a sample's time stamp: seconds in OpenMetrics ("Timestamps MUST be Unix Epoch
    in seconds", the OpenMetrics 1.0 specification), milliseconds in the text format.

    >>> is_openmetrics("x_total 1 1700000000.5\\n# EOF\\n"), is_openmetrics("x_total 1 1700000000500\\n")
    (True, False)
    """
    return text.rstrip().rsplit("\n", 1)[-1].strip() == "# EOF"


def parse_prometheus(
    text: str, source: str = "metrics", stamps: list | None = None, repeated: bool = False
) -> list[tuple[str, dict[str, str], float]]:
    """Samples of a Prometheus text exposition as ``(name, labels, value)``, read by prometheus_client's parser.

    A line that parser refuses raises one ValueError naming the line (found by reading the page's sample lines one at
    a time, only once the page as a whole was refused); a line longer than :data:`MAX_LINE_CHARS` is refused before
    any parsing.  ``stamps``, a list, receives each sample's time stamp in seconds, to the millisecond Prometheus keeps
    (None where it has none).  ``repeated``: a capture of several scrapes (:func:`read_capture`), each series once per
    stamp.

    An OpenMetrics text (:func:`is_openmetrics`: what ``specsim replay --out`` writes and ``promtool tsdb
    create-blocks-from openmetrics`` reads) is read by the same parser, its stamps taken in seconds.
    prometheus_client's own OpenMetrics parser is not used: as of 0.26.0 it drops, without a word, every sample of a
    histogram's series after the first at each later time stamp (``text_fd_to_metric_families`` takes a sample whose
    stamp equals its group's last and whose series it has seen at an earlier stamp for a duplicate), so a capture's
    buckets would be lost; its exemplars (``# {...}`` after a value), which the text format's parser would read as a
    time stamp, are refused.

    >>> parse_prometheus('# TYPE x counter\\nx_total{engine="0"} 12.0\\n')
    [('x_total', {'engine': '0'}, 12.0)]
    """
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_CHARS:  # before the parser copies it
            raise ValueError(
                f"{source}, line {number} is {len(raw):,} characters long; a /metrics line has at most {MAX_LINE_CHARS:,}"
            )
    try:
        samples = list(_samples(text))
    except ValueError as err:
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                list(_samples(line + "\n"))
            except ValueError as line_err:
                raise ValueError(
                    f"{source}, line {number}: not a Prometheus sample: {line[:80]!r} ({line_err}); expected "
                    "'name{labels} value [timestamp]'"
                ) from None
        raise ValueError(f"{source}: not a Prometheus text page ({err})") from None
    openmetrics = is_openmetrics(text)
    if openmetrics:
        _no_exemplars(lines, source)
    # The text format's parser gives milliseconds / 1000; an OpenMetrics stamp is seconds already (x 1000 back).
    scale = 1e6 if openmetrics else 1e3
    for s in samples:
        if s.timestamp is not None and not 0 <= float(s.timestamp) * scale / 1e3 <= MAX_STAMP_S:  # NaN too
            unit = "seconds" if openmetrics else "milliseconds"
            raise ValueError(
                f"{source}: {s.name} has the time stamp {float(s.timestamp) * scale / 1e3:g} s; a stamp is Unix time "
                f"in {unit} from 1970 to the year 9999"
            )
    samples = [
        s._replace(timestamp=None if s.timestamp is None else round(float(s.timestamp) * scale) / 1e3) for s in samples
    ]
    _once_each(samples, source, repeated)
    if stamps is not None:  # the samples' own time stamps (seconds), None where a sample has none
        stamps.extend(s.timestamp for s in samples)
    return [(s.name, dict(s.labels), float(s.value)) for s in samples]


def _no_exemplars(lines: list, source: str) -> None:
    """Refuse an OpenMetrics sample with an exemplar (``value [stamp] # {labels} value [stamp]``), naming its line."""
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line.startswith("#") and " # {" in line:  # (a label value holding " # {" is refused too: none seen)
            raise ValueError(
                f"{source}, line {number}: an exemplar ({line[:80]!r}): specsim reads samples without exemplars"
            )


@dataclass(frozen=True)
class AcceptanceMetrics:
    """Speculative-decoding counters of one serving run, and what follows from them."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: tuple[float, ...]

    @property
    def mean_draft_length(self) -> float:
        """Drafted tokens per draft: num_speculative_tokens when it is fixed, a mean under a dynamic schedule."""
        return self.draft_tokens / self.drafts

    @property
    def gamma(self) -> int | None:
        """Speculative tokens per draft when every draft had the same length, else None.

        A whole ``draft_tokens / drafts`` is read as a fixed gamma; a fractional
        one (vLLM's per-batch-size schedules, which ``specsim schedule``
        writes) means gamma varied, and is never rounded.
        """
        g = self.mean_draft_length
        return int(round(g)) if abs(g - round(g)) <= 1e-9 * max(1.0, g) else None

    @property
    def mean_acceptance_length(self) -> float:
        """E = 1 + accepted / drafts: tokens emitted per verification pass."""
        return 1.0 + self.accepted_tokens / self.drafts

    @property
    def acceptance_rate(self) -> float:
        """accepted / drafted tokens (vLLM's 'draft acceptance rate'; not alpha)."""
        return self.accepted_tokens / self.draft_tokens

    @property
    def cumulative_rates(self) -> np.ndarray:
        """c_k = P(draft tokens 0..k all accepted), per position."""
        return np.asarray(self.accepted_per_position) / self.drafts

    @property
    def conditional_rates(self) -> np.ndarray:
        """a_k = P(token k accepted | tokens 0..k-1 accepted), per position."""
        c = self.cumulative_rates
        previous = np.r_[1.0, c[:-1]]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(previous > 0, c / previous, np.nan)

    @property
    def alpha(self) -> float | None:
        """The alpha whose E(alpha, gamma) equals the measured mean acceptance length.

        None when gamma varied between drafts: the counters then mix drafts of
        different lengths, and no single E(alpha, gamma) describes them.
        """
        if self.gamma is None:
            return None
        return float(alpha_from_acceptance_length(self.mean_acceptance_length, self.gamma))

    @property
    def per_position_tokens_per_step(self) -> float | None:
        """E from the per-position rates, 1 + sum_k c_k (None without per-position counts)."""
        if not self.accepted_per_position:
            return None
        cumulative = np.cumprod(np.clip(self.conditional_rates, 0.0, 1.0))
        return float(tokens_per_round(Acceptance(cumulative=tuple(cumulative.tolist())), cumulative.size))

    def independence_deviation(self) -> list[int]:
        """Positions whose conditional rate is far from alpha.

        Far means more than 0.05 away and more than four standard errors of a
        binomial proportion over the drafts that reached that position (a
        false alarm under independence has probability below 1e-4 per position).
        """
        if not self.accepted_per_position or self.alpha is None:
            return []
        alpha = self.alpha
        reached = np.r_[self.drafts, np.asarray(self.accepted_per_position[:-1])]
        out = []
        for k, (rate, n) in enumerate(zip(self.conditional_rates, reached)):
            if n <= 0 or not np.isfinite(rate):
                continue
            stderr = math.sqrt(max(alpha * (1 - alpha), 1e-12) / n)
            if abs(rate - alpha) > max(0.05, 4 * stderr):
                out.append(k)
        return out

    def to_dict(self) -> dict:
        """Everything the counters say, JSON-ready (undefined rates are None, never NaN)."""

        def clean(values: np.ndarray) -> list:
            return [float(v) if np.isfinite(v) else None for v in values]

        far = self.independence_deviation()
        return {
            "alpha": self.alpha,
            "gamma": self.gamma,
            "mean_draft_length": self.mean_draft_length,
            "mean_acceptance_length": self.mean_acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "drafts": self.drafts,
            "draft_tokens": self.draft_tokens,
            "accepted_tokens": self.accepted_tokens,
            "per_position_cumulative": clean(self.cumulative_rates),
            "per_position_conditional": clean(self.conditional_rates),
            "independent_alpha_consistent": (not far) if self.alpha is not None else None,
            "positions_far_from_alpha": far,
        }


def check_count(source: str, name: str, value: float) -> None:
    """Refuse a counter sample no server could have kept, naming it: not finite, below 0, or past 2**53 (a Prometheus
    counter is a float64, which no longer counts one by one past it; 1e300 drafts printed a 301-digit count).  The one
    check of a counter's value, for ``specsim alpha --metrics`` and ``specsim watch`` alike."""
    if not math.isfinite(value) or not 0 <= value <= 2**53:
        raise ValueError(f"{source}: {name} must be a count in [0, 2**53], got {value!r}")


def acceptance_from_prometheus(text: str, source: str = "metrics", model_name: str | None = None) -> AcceptanceMetrics:
    """Sum vLLM's speculative-decoding counters over engines and read them out.

    Counters are matched with or without the ``_total`` suffix; ``_created``
    samples are ignored.  If the file holds several ``model_name`` labels,
    ``model_name`` picks one.
    """
    totals = {key: 0.0 for key in _COUNTERS[:3]}
    per_pos: dict[int, float] = {}
    models = set()
    found = set()
    samples = parse_prometheus(text, source)
    for name, labels, _ in samples:
        if name.startswith(_PREFIX) and "model_name" in labels:
            models.add(labels["model_name"])
    if model_name is None and len(models) > 1:
        raise ValueError(
            f"{source}: counters of several models ({', '.join(sorted(models))}); choose one with "
            + given_as("model_name", "--model-name (specsim alpha) or --metrics-model (the model commands)")
        )
    if model_name is not None and model_name not in models:
        raise ValueError(
            f"{source}: no speculative-decoding counters for model {model_name!r}; found: {', '.join(sorted(models)) or 'none'}"
        )
    seen: set = set()
    for name, labels, value in samples:
        if not name.startswith(_PREFIX) or name.endswith("_created"):
            continue
        series = (name.removesuffix("_total"), tuple(sorted(labels.items())))
        if series in seen:
            raise ValueError(
                f"{source}: the series {name}{{{', '.join(f'{k}={v!r}' for k, v in sorted(labels.items()))}}} "
                "appears twice; save one /metrics page per file"
            )
        seen.add(series)
        if model_name is not None and labels.get("model_name") != model_name:
            continue
        key = name[len(_PREFIX) :].removesuffix("_total")
        if key not in _COUNTERS:
            continue
        check_count(source, name, value)
        found.add(key)
        if key == "num_accepted_tokens_per_pos":
            if "position" not in labels or not labels["position"].isdigit():
                raise ValueError(f'{source}: {name} needs a position="<integer>" label, got {labels!r}')
            pos = int(labels["position"])
            per_pos[pos] = per_pos.get(pos, 0.0) + value
        else:
            totals[key] += value
    missing = [f"{_PREFIX}{key}_total" for key in _COUNTERS[:3] if key not in found]
    if missing and any(name == f"{_PREFIX}draft_acceptance_rate" for name, _, _ in samples):
        # The V0 engine's gauges (spec_decode_draft_acceptance_rate, _efficiency: vllm/engine/metrics.py) without V1's
        # num_drafts counter.
        raise ValueError(
            f"{source}: a vLLM V0 engine's page ({_PREFIX}draft_acceptance_rate, no {_PREFIX}num_drafts_total): "
            "specsim reads the V1 engine's counters (vllm/v1/spec_decode/metrics.py); serve with the V1 engine"
        )
    if missing:
        raise ValueError(
            f"{source}: missing counter(s) {', '.join(missing)}; is speculative decoding enabled on that server?"
        )
    if totals["num_drafts"] <= 0:
        raise ValueError(f"{source}: {_PREFIX}num_drafts_total is 0: no speculative steps were recorded")
    if per_pos and sorted(per_pos) != list(range(len(per_pos))):
        raise ValueError(f"{source}: per-position counters are not contiguous from 0: positions {sorted(per_pos)}")
    metrics = AcceptanceMetrics(
        drafts=totals["num_drafts"],
        draft_tokens=totals["num_draft_tokens"],
        accepted_tokens=totals["num_accepted_tokens"],
        accepted_per_position=tuple(per_pos[k] for k in sorted(per_pos)),
    )
    if not 1.0 <= metrics.mean_draft_length <= MAX_GAMMA:
        raise ValueError(
            f"{source}: {metrics.draft_tokens:g} draft tokens over {metrics.drafts:g} drafts is "
            f"{metrics.mean_draft_length:.4g} per draft; a draft proposes 1 to {MAX_GAMMA} tokens"
        )
    if metrics.accepted_tokens > metrics.draft_tokens:
        raise ValueError(
            f"{source}: more accepted tokens ({metrics.accepted_tokens:g}) than drafted ({metrics.draft_tokens:g})"
        )
    if per_pos and metrics.gamma is not None and len(per_pos) != metrics.gamma:
        raise ValueError(f"{source}: {len(per_pos)} per-position counters but {metrics.gamma} draft tokens per draft")
    if per_pos and metrics.gamma is None and len(per_pos) < metrics.mean_draft_length:
        raise ValueError(
            f"{source}: {len(per_pos)} per-position counters but {metrics.draft_tokens:g} draft tokens in "
            f"{metrics.drafts:g} drafts ({metrics.mean_draft_length:.6g} a draft): a draft proposes at most one token per "
            "position"
        )
    counts = [per_pos[k] for k in sorted(per_pos)]
    if counts and counts[0] > metrics.drafts:
        raise ValueError(f"{source}: {counts[0]:g} drafts accepted position 0, more than the {metrics.drafts:g} drafts")
    rising = [k for k in range(1, len(counts)) if counts[k] > counts[k - 1]]
    if rising:
        k = rising[0]
        raise ValueError(
            f"{source}: position {k} was accepted {counts[k]:g} times, more than position {k - 1} ({counts[k - 1]:g}); "
            "a token is only accepted after every earlier one was"
        )
    if per_pos and abs(sum(per_pos.values()) - metrics.accepted_tokens) > 1e-6 * max(1.0, metrics.accepted_tokens):
        raise ValueError(
            f"{source}: per-position counts sum to {sum(per_pos.values()):g}, not the {metrics.accepted_tokens:g} accepted tokens"
        )
    return metrics


def read_metrics_file(path: str | Path, model_name: str | None = None) -> AcceptanceMetrics:
    """:func:`acceptance_from_prometheus` on a saved ``/metrics`` page."""
    name, text = _page(path)
    return acceptance_from_prometheus(text, source=name, model_name=model_name)


def prefix_hit_from_page(path: str | Path, names) -> tuple[float, str] | None:
    """(the share of prompt tokens the prefix cache served, where it comes from) on a saved ``/metrics`` page, from
    ``names``' counters (:class:`specsim.engines.base.MetricNames` ``prefix_cache_hits`` over ``prefix_cache_queries``,
    summed over the page's engines and models: since the server started, every run it served and its warm-up
    included); None where the release names none, the page shows neither or nothing was queried.

    >>> import pathlib, tempfile
    >>> from specsim.engines import metric_names
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "m.txt"
    >>> _ = f.write_text("vllm:prefix_cache_queries_total 1000.0\\nvllm:prefix_cache_hits_total 800.0\\n")
    >>> prefix_hit_from_page(f, metric_names("vllm@0.30.0")[0])[0]
    0.8
    """
    if names.prefix_cache_queries is None or names.prefix_cache_hits is None:
        return None
    name, text = _page(path)
    sums = {names.prefix_cache_queries: 0.0, names.prefix_cache_hits: 0.0}
    seen = set()
    for key, _, value in parse_prometheus(text, name):
        if key in sums:
            check_count(name, key, value)
            sums[key] += value
            seen.add(key)
    queries, hits = sums[names.prefix_cache_queries], sums[names.prefix_cache_hits]
    if len(seen) < 2 or queries <= 0:
        return None
    if hits > queries:
        raise ValueError(
            f"{name}: {names.prefix_cache_hits} ({hits:g}) exceeds {names.prefix_cache_queries} ({queries:g})"
        )
    said = (
        f"{name}: {names.prefix_cache_hits} / {names.prefix_cache_queries}, {hits:,.0f} of {queries:,.0f} prompt tokens"
    )
    return hits / queries, said + " since the server started"


def read_capture(path: str | Path) -> tuple[str, list, list]:
    """(file name, samples, their stamps in seconds) of a saved capture of several scrapes: an OpenMetrics file with
    time stamps (what ``specsim replay --out`` writes, what ``promtool tsdb create-blocks-from openmetrics`` reads) or
    Prometheus text pages with stamps one after another (an exporter's dump, a federation's); each series once per
    stamp, checked as :func:`read_page` checks a page (empty, cut off, a line that is not a sample).

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "two.om"
    >>> _ = f.write_text("# TYPE x counter\\nx_total 1 1700000000\\nx_total 3 1700000060\\n# EOF\\n")
    >>> read_capture(f)
    ('two.om', [('x_total', {}, 1.0), ('x_total', {}, 3.0)], [1700000000.0, 1700000060.0])
    """
    name, text = _page(path)
    stamps: list = []
    samples = parse_prometheus(text, name, stamps, repeated=True)
    stamped = [s for s in stamps if s is not None]
    if stamped and not is_openmetrics(text) and max(stamped) < EARLIEST_CAPTURE_S:
        import time

        first, last = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) for t in (min(stamped), max(stamped)))
        when = f"in {first[:4]}" if first[:4] == last[:4] else "before 2001"
        raise ValueError(
            f"{name}: its time stamps, read in milliseconds as the Prometheus text format's are, fall {when} "
            f"({first} to {last}): stamps in seconds are OpenMetrics's, whose file ends with a '# EOF' line, which "
            "this one lacks (cut off?); add it back if the file is whole, or write the stamps in milliseconds"
        )
    return name, samples, stamps


def _page(path: str | Path) -> tuple[str, str]:
    """(file name, text) of a saved ``/metrics`` page; an empty page is refused, and so is one cut off: the Prometheus
    text format ends every line with a line feed (https://prometheus.io/docs/instrumenting/exposition_formats/:
    "Lines are separated by a line feed character (\\n). The last line must end with a line feed character."), so a
    page that does not end in one lost its end (``77700.0`` saved as ``777`` read as 777).  An OpenMetrics page ends
    with ``# EOF``, its line feed optional."""
    from specsim.core.files import read_text

    text = read_text(path, "metrics file")
    if not text.strip():
        raise ValueError(f"metrics file {str(path)!r} is empty")
    if not text.endswith("\n") and text.rsplit("\n", 1)[-1].strip() != "# EOF":
        raise ValueError(
            f"metrics file {str(path)!r} does not end in a line feed: the Prometheus text format ends every line with "
            "one, so the page was cut off; save it again whole (curl -s http://HOST:PORT/metrics > FILE)"
        )
    return Path(path).name, text


def _is_sglang(text: str) -> bool:
    return "sglang:spec_accept_length" in text and "vllm:spec_decode" not in text


def _sglang_accept_length(text: str, name: str) -> float:
    """The mean of a page's ``sglang:spec_accept_length`` gauges (one per model or rank)."""
    return float(np.mean([v for key, _, v in parse_prometheus(text, name) if key == "sglang:spec_accept_length"]))


def read_page(path: str | Path, model_name: str | None = None) -> float | AcceptanceMetrics:
    """A saved ``/metrics`` page, read once: an SGLang page's mean accept length (its ``sglang:spec_accept_length``
    gauges, checked as :func:`accept_length_from_page` checks them), or a vLLM page's counters."""
    name, text = _page(path)
    if _is_sglang(text):
        return _accept_length(name, text)[0]
    return acceptance_from_prometheus(text, source=name, model_name=model_name)


def accept_length_from_page(path: str | Path, model_name: str | None = None) -> tuple[float, str]:
    """(AL, where it came from): tokens per verification pass from a saved ``/metrics`` page of vLLM
    (1 + accepted / drafts, counters since the server's start: :data:`SINCE_START`) or SGLang
    (``sglang:spec_accept_length``)."""
    return _accept_length(*_page(path), model_name)


def _accept_length(name: str, text: str, model_name: str | None = None) -> tuple[float, str]:
    """:func:`accept_length_from_page` of a page already read: ``name`` its file's name, ``text`` the page."""
    if _is_sglang(text):
        length = _sglang_accept_length(text, name)
        if not (np.isfinite(length) and 1.0 <= length <= MAX_GAMMA + 1):
            raise ValueError(
                f"{name}: sglang:spec_accept_length {length:g} is not a length in [1, {MAX_GAMMA + 1}] "
                f"(a round emits at most {MAX_GAMMA} drafted tokens plus one)"
            )
        return length, f"{name}: SGLang mean accept length"
    m = acceptance_from_prometheus(text, source=name, model_name=model_name)
    return m.mean_acceptance_length, f"{name}: vLLM 1 + accepted / drafts; {SINCE_START}"


def per_position_from_page(path: str | Path, model_name: str | None = None) -> tuple[float, ...] | None:
    """c_1..c_K from a saved vLLM ``/metrics`` page: each draft position's accepted tokens over the drafts
    (``vllm:spec_decode_num_accepted_tokens_per_pos`` over ``vllm:spec_decode_num_drafts``), what ``vllm bench
    serve`` records as ``spec_decode_per_position_acceptance_rates``; None where the page counts no positions (SGLang's,
    or a vLLM page without the counter)."""
    name, text = _page(path)
    if _is_sglang(text):
        return None
    m = acceptance_from_prometheus(text, source=name, model_name=model_name)
    return tuple(float(c) for c in m.cumulative_rates) if m.accepted_per_position else None


def acceptance_from_page(path: str | Path, sglang_gamma: int | None = None, model_name: str | None = None):
    """An :class:`~specsim.speculation.acceptance.Acceptance` from a saved ``/metrics`` page, read once.

    vLLM pages give per-position rates where their per-position counters exist, else the alpha of the mean
    acceptance length.  SGLang pages give only ``sglang:spec_accept_length``, the mean tokens per verification;
    ``sglang_gamma`` (its ``--speculative-num-steps``) turns it into an alpha; ``model_name`` picks one model's counters
    on a page that holds several (``--metrics-model``).
    """
    from specsim.speculation.acceptance import Acceptance

    name, text = _page(path)
    if _is_sglang(text):
        if sglang_gamma is None:
            raise ValueError(
                f"{name}: SGLang reports only the mean accept length; give {given_as('metrics_gamma')}, the "
                "--speculative-num-steps it ran with"
            )
        length = _sglang_accept_length(text, name)
        if not 1.0 <= length <= sglang_gamma + 1:
            raise ValueError(f"{name}: sglang:spec_accept_length {length:g} is outside [1, {sglang_gamma + 1}]")
        alpha = float(alpha_from_acceptance_length(length, sglang_gamma))
        return Acceptance(alpha=alpha, source=f"{name}: SGLang mean accept length {length:.3f} at {sglang_gamma} steps")
    if sglang_gamma is not None:
        raise ValueError(
            f"{given_as('metrics_gamma')} is for SGLang pages; vLLM's counters say the draft length themselves"
        )
    m = acceptance_from_prometheus(text, source=name, model_name=model_name)
    if m.accepted_per_position:
        return Acceptance(cumulative=tuple(float(c) for c in m.cumulative_rates), source=f"{name}, vLLM counters")
    if m.alpha is None:
        raise ValueError(f"{name}: no per-position counters and a varying draft length: cannot infer acceptance")
    return Acceptance(alpha=float(m.alpha), source=f"{name}, vLLM mean acceptance length (no per-position counters)")


def acceptance_between(
    before: str | Path | None, after: str | Path, model_name: str | None = None
) -> AcceptanceMetrics:
    """The counters of one benchmark run: a vLLM ``/metrics`` page saved after it less the page saved before it (the
    counters run from the server's start).  A page before the first speculative step carries no counters: it counts
    as zero.  SGLang pages hold a gauge, not counters: refused here (its client records ``accept_length`` itself).

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> page = "vllm:spec_decode_num_drafts_total {}\\nvllm:spec_decode_num_draft_tokens_total {}\\nvllm:spec_decode_num_accepted_tokens_total {}\\n"
    >>> _ = (d / "a.txt").write_text(page.format(100, 300, 150)); _ = (d / "b.txt").write_text(page.format(300, 900, 550))
    >>> round(acceptance_between(d / "a.txt", d / "b.txt").mean_acceptance_length, 3)
    3.0
    """
    name, text = _page(after)
    if _is_sglang(text):
        raise ValueError(
            f"{name}: an SGLang page holds the accept-length gauge, not counters: its client's accept_length "
            "(with --flush-cache) is the run's"
        )
    end = acceptance_from_prometheus(text, source=name, model_name=model_name)
    start = None
    if before is not None:
        bname, btext = _page(before)
        drafts = sum(
            v for key, _, v in parse_prometheus(btext, bname) if key.removesuffix("_total") == _PREFIX + "num_drafts"
        )
        if drafts > 0:  # a server that has not speculated yet shows its counters at 0, or none
            start = acceptance_from_prometheus(btext, source=bname, model_name=model_name)
    if start is None:
        return end
    where = f"{name} less {Path(before).name}"
    if len(start.accepted_per_position) not in (0, len(end.accepted_per_position)):
        raise ValueError(
            f"{where}: the pages hold {len(start.accepted_per_position)} and {len(end.accepted_per_position)} "
            "per-position counters: not one server"
        )
    diff = {k: getattr(end, k) - getattr(start, k) for k in ("drafts", "draft_tokens", "accepted_tokens")}
    pos = tuple(
        e - b
        for e, b in zip(
            end.accepted_per_position, start.accepted_per_position or (0.0,) * len(end.accepted_per_position)
        )
    )
    if any(v < 0 for v in diff.values()) or any(v < 0 for v in pos):
        raise ValueError(
            f"{where}: a counter went down between the pages: the server restarted, or the pages are swapped"
        )
    if diff["drafts"] <= 0:
        raise ValueError(f"{where}: no speculative steps between the two pages")
    return AcceptanceMetrics(diff["drafts"], diff["draft_tokens"], diff["accepted_tokens"], pos)
