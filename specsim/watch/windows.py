"""From reads of an engine's metrics to windows: what the engine did for one model between two reads.

A read (:class:`Reading`) keeps, for one model, each counter the engine's release exports (:class:`MetricNames`) by
replica (vLLM's ``engine``, SGLang's ``dp_rank``) and position, summed over every other label (a finish reason, a
streaming flag), and each gauge by replica (the largest over other labels: every tensor-parallel rank of SGLang may
report the same running count).  A window (:func:`window_between`) is the difference of two reads: the counts since the
first, each replica's own.  A counter that went down means the engine restarted: that window has no counts, and the
next starts at the restart's first read.

Acceptance comes from the best the page holds (:attr:`MetricNames.acceptance_basis`): counters of drafts and accepted
tokens (per position where counted), else drafted tokens over the draft length, else verification calls beside the
tokens and requests of finished requests, else the engine's gauge of its last logging window, averaged over the reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specsim.core.names import given_as
from specsim.speculation.metrics import check_count

__all__ = [
    "MIN_DRAFTS",
    "Reading",
    "Window",
    "check_gamma",
    "check_names",
    "effective_requests",
    "models_on",
    "prometheus_windows",
    "read_samples",
    "window_between",
]

#: A window with fewer speculating sequence steps than this says too little of acceptance to judge (a 95% interval of
#: a mean acceptance length over 50 drafts is about +-0.3 tokens at gamma 3): its row is shown as idle.
MIN_DRAFTS = 50
#: How far past its largest finite edge the ``+Inf`` bucket of a histogram of generated tokens is taken to reach: vLLM's
#: edges are build_1_2_5_buckets(max_model_len) (vllm/v1/metrics/loggers.py, 0.10.0 L319; buckets.py L195 and
#: loggers.py L822 of 0.33.0), which stop at the last 1-2-5 step not past max_model_len, and no request generates
#: more than max_model_len tokens, so its ``+Inf`` bucket ends before the next step, at most 2.5 times the last edge.
#: Other edges (vLLM 0.33's custom_histogram_buckets, SGLang's) are taken to end there too: an assumption.
INF_BUCKET_REACH = 2.5
#: Points per bucket at which :func:`effective_requests` spreads its requests.
_BUCKET_POINTS = 64


def _prefixes() -> dict[str, str]:
    from specsim.engines import REGISTRY

    return {e.metric_names[0].prefix: name for name, e in REGISTRY.items()}


_SUFFIXES = {"total", "created", "bucket", "sum", "count"}


def check_names(present: set, names, release: tuple, shown: str, source: str, named_by: str = "names lists") -> str:
    """Refuse, in one line, names on a page (or a Prometheus server's selection) that are not ``shown``'s: another
    engine's, none of the engine's speculative metrics, a name a later release added, or the verification counter that
    ``shown`` exports missing.  Return what the names cannot tell ("" where they confirm the release): a page without
    the names the release added since an earlier one may be of that earlier release (a page some names are not
    exported on, or a replayed one), and the release is then taken as named.  ``named_by`` says where the release came
    from, after "the sglang 0.5.23 metrics": to a Python caller its own ``names`` ("names lists"), on the command line
    the flag or file it came from ("--engine names", "cal.yaml was fitted to": specsim.cli.args)."""
    ours = {n for n in present if n.startswith(names.prefix)}
    if not ours:
        others = sorted(
            {engine for prefix, engine in _prefixes().items() if any(n.startswith(prefix) for n in present)}
        )
        if others:
            raise ValueError(
                f"{source} holds {', '.join(others)} metrics ({'/'.join(p for p, e in _prefixes().items() if e in others)}"
                f" names), not the {shown} metrics {named_by}"
            )
        raise ValueError(
            f"{source} holds no {names.prefix} metrics: it is not a {names.engine} metrics page "
            f"(the engine serves them on {names.path})"
        )
    speculative = [
        n
        for n in (
            names.drafts,
            names.accepted,
            names.accepted_per_position,
            names.verify_calls,
            names.accept_length_gauge,
        )
        if n is not None
    ]
    counted = [n for n in speculative if n != names.accept_length_gauge]
    if counted and not any(n in ours for n in speculative):  # a gauge alone appears only once the engine has logged one
        raise ValueError(
            f"{source} shows none of {shown}'s speculative-decoding metrics ({', '.join(speculative)}): "
            "speculation is off on that server, or its release is not the one named"
        )

    def shows(metric):
        return any(n == metric or (n.startswith(metric + "_") and n[len(metric) + 1 :] in _SUFFIXES) for n in ours)

    for name, since in names.later:
        if since > release and shows(name):
            raise ValueError(
                f"{source} shows {name}, which {names.engine} exports from {'.'.join(map(str, since))} on: "
                f"the server runs a later release than the {shown} {named_by}"
            )
    for name, last in names.earlier:
        if last < release and shows(name):
            raise ValueError(
                f"{source} shows {name}, which {names.engine} exports up to {'.'.join(map(str, last[:2]))}: "
                f"the server runs an earlier release than the {shown} {named_by}"
            )
    if names.verify_calls is not None and names.verify_calls not in ours:
        raise ValueError(
            f"{source} lacks {names.verify_calls}, which {shown} exports: the server runs an earlier release "
            f"than {named_by}"
        )
    # The page is at least as new as the newest name it shows; where that is older than the newest the release has,
    # it may be of a release between the two.
    markers = [(name, since) for name, since in names.later if since <= release]
    shown_since = max((since for name, since in markers if shows(name)), default=(0, 0, 0))
    if not markers or shown_since >= max(since for _, since in markers):
        return ""
    name, since = max(markers, key=lambda m: m[1])
    return (
        f"{source} does not show {name}, which {names.engine} exports from {'.'.join(map(str, since))} on: its "
        f"release cannot be told from an earlier one by its names, and is taken as {shown} names"
    )


def models_on(samples, names) -> set:
    """The models whose speculative metrics a page holds (the ``model_label`` values)."""
    speculative = {
        n
        for n in (
            names.drafts,
            names.draft_tokens,
            names.accepted,
            names.accepted_per_position,
            names.verify_calls,
            names.accept_length_gauge,
        )
        if n is not None
    }
    return {labels.get(names.model_label) for name, labels, _ in samples if name in speculative} - {None}


def _choose_model(samples, names, model: str | None, source: str) -> str:
    found = models_on(samples, names)
    if not found:  # before the engine has logged an acceptance gauge: the models of its other series
        found = {labels.get(names.model_label) for name, labels, _ in samples if name.startswith(names.prefix)} - {None}
    if model is not None:
        if model not in found:
            raise ValueError(
                f"{source} has no speculative metrics of model {model!r}; it has: {', '.join(sorted(found)) or 'none'}"
            )
        return model
    if len(found) > 1:
        raise ValueError(
            f"{source} holds the metrics of several models ({', '.join(sorted(found))}): choose one with "
            f"{given_as('model')}"  # read_samples' model, watch's --model
        )
    if not found:
        raise ValueError(
            f"{source} labels no speculative metric with {names.model_label}: not a page of the release named"
        )
    return next(iter(found))


@dataclass(frozen=True, eq=False)
class Reading:
    """One read of one model's metrics: counters by (name, replica, position) and gauges by (name, replica)."""

    t: float  #: seconds (Unix time where the read is live)
    model: str
    counters: dict
    gauges: dict
    gamma: float | None = None  #: the draft length the page states, where it states one


def read_samples(samples, names, t: float, model: str | None = None, source: str = "metrics") -> Reading:
    """The :class:`Reading` of ``model`` (the page's only one when None) from ``(name, labels, value)`` samples."""
    model = _choose_model(samples, names, model, source)
    counters: dict = {}
    gauges: dict = {}
    gamma = None
    counter_names, gauge_names = set(names.counters()), set(names.gauges())
    buckets = f"{names.generation_histogram}_bucket" if names.generation_histogram else None
    spelled: dict = {}  # a bucket's series by (replica, edge, its other labels)
    for name, labels, value in samples:
        if labels.get(names.model_label, model) != model:
            continue
        replica = labels.get(names.replica_label, "") if names.replica_label else ""
        if name in counter_names:
            check_count(source, name, value)
            position = (
                labels.get(names.position_label)
                if name in (names.accepted_per_position, names.drafted_per_position)
                else None
            )
            if position is not None and not position.isdigit():
                raise ValueError(f'{source}: {name} needs a {names.position_label}="<integer>" label, got {position!r}')
            position = None if position is None else int(position)
            if name == buckets:  # a bucket's upper edge is its position: "+Inf", "100" or Prometheus 3's "100.0"
                position = _edge(source, name, labels.get("le"))
                # Across a Prometheus 2 -> 3 upgrade one bucket is two series ("100", then "100.0"), the old one
                # repeating its last value for the lookback after the restart: one counter, taken once (the newer,
                # the larger), not summed; series apart in other labels (a finish reason) still add up.
                series = (replica, position, frozenset((k, v) for k, v in labels.items() if k != "le"))
                spelled[series] = max(spelled.get(series, 0.0), float(value))
                continue
            key = (name, replica, position)
            counters[key] = counters.get(key, 0.0) + float(value)
        elif name in gauge_names:
            if names.gamma_info is not None and name == names.gamma_info[0]:
                text = labels.get(names.gamma_info[1], "")
                if text.isdigit():
                    gamma = float(text)
                continue
            if not math.isfinite(value):
                continue
            key = (name, replica)
            gauges[key] = max(gauges.get(key, -math.inf), float(value))
    for (replica, position, _), value in spelled.items():
        counters[(buckets, replica, position)] = counters.get((buckets, replica, position), 0.0) + value
    if names.gamma_gauge is not None:
        steps = [v for (n, _), v in gauges.items() if n == names.gamma_gauge]
        gamma = max(steps) if steps else gamma
    if names.accepted_per_position is not None and names.drafted_per_position is None:
        positions = {k[2] for k in counters if k[0] == names.accepted_per_position}
        gamma = float(len(positions)) if positions else gamma  # children created at start for each configured position
    return Reading(float(t), model, counters, gauges, gamma)


def _edge(source: str, name: str, text: str | None) -> float:
    """A histogram bucket's ``le`` label as a number (``+Inf`` the infinity), or one line saying it is not one."""
    try:
        edge = float(text)
    except (TypeError, ValueError):
        edge = math.nan
    if not edge >= 0:  # NaN too
        raise ValueError(f'{source}: {name} needs an le="<number>" or le="+Inf" label, got {text!r}')
    return edge


@dataclass(frozen=True, eq=False)
class Window:
    """What the engine did for one model between two reads (summed over its replicas; load per replica)."""

    start_s: float
    end_s: float
    model: str
    replicas: int
    basis: str  #: where the acceptance comes from
    restarted: bool = False
    drafts: float | None = None  #: speculating sequence steps (None where only a gauge is read)
    acceptance_length: float | None = None  #: tokens per verification, 1 + accepted / drafts
    per_position: tuple | None = None  #: c_k, the share of drafts whose tokens 0..k were all accepted
    draft_length: float | None = None  #: drafted tokens per draft
    gamma: int | None = None  #: the draft length the engine is configured with
    running: float | None = None  #: mean requests running per replica
    waiting: float | None = None
    requests_per_s: float | None = None  #: finished requests per second per replica
    input_tokens: float | None = None  #: per finished request
    output_tokens: float | None = None
    #: Kish's effective count of the requests finished in the window, weighted by their generated tokens, from the
    #: engine's histogram of them (:func:`effective_requests`); None where the engine exports none
    effective_requests: float | None = None
    notes: tuple = ()

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    @property
    def finished_requests(self) -> float | None:
        """Requests finished in the window, over its replicas (None where the page does not count them)."""
        return None if self.requests_per_s is None else self.requests_per_s * self.seconds * self.replicas

    @property
    def usable(self) -> bool:
        """Enough counted to judge: not a restart, an acceptance and a load."""
        counted = self.drafts is None or self.drafts >= MIN_DRAFTS
        return (
            not self.restarted
            and counted
            and self.acceptance_length is not None
            and self.requests_per_s is not None
            and self.requests_per_s > 0
            and self.input_tokens is not None
            and self.output_tokens is not None
            and self.output_tokens >= 2
        )

    def draft_variance(self) -> float | None:
        """Variance of the accepted tokens of one draft (that of the round's tokens, one more:
        :func:`~specsim.speculation.acceptance.round_tokens_variance`) from the per-position shares c_k where counted,
        else from the alpha of the acceptance length at gamma (accepting each next token with one probability); None
        without a gamma."""
        if self.acceptance_length is None:
            return None
        from specsim.speculation.acceptance import alpha_from_acceptance_length, round_tokens_variance

        if self.per_position:
            c = np.asarray(self.per_position, dtype=float)
            return float(round_tokens_variance(c, c.size))
        if self.gamma is None:
            return None
        alpha = float(alpha_from_acceptance_length(min(self.acceptance_length, self.gamma + 1.0), self.gamma))
        return float(round_tokens_variance(alpha ** np.arange(1, self.gamma + 1), self.gamma))

    def to_dict(self) -> dict:
        return {
            "start_s": self.start_s,
            "end_s": self.end_s,
            "model": self.model,
            "replicas": self.replicas,
            "basis": self.basis,
            "restarted": self.restarted,
            "drafts": self.drafts,
            "acceptance_length": self.acceptance_length,
            "per_position": list(self.per_position) if self.per_position else None,
            "draft_length": self.draft_length,
            "gamma": self.gamma,
            "running": self.running,
            "waiting": self.waiting,
            "requests_per_s": self.requests_per_s,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "effective_requests": self.effective_requests,
            "notes": list(self.notes),
        }


def effective_requests(edges, cumulative, total: float) -> float | None:
    """Kish's effective count ``(sum o)^2 / sum o^2`` of the requests a histogram of their generated tokens ``o``
    counts: the requests a window's acceptance length averages over, weighted as it weighs them (by their drafts, in
    proportion to their tokens; :func:`specsim.watch.judge.window_sd`).  ``edges``: the buckets' upper edges (``le``,
    rising, ``inf`` for ``+Inf``); ``cumulative``: the requests at or below each; ``total``: their tokens (the
    histogram's ``_sum``).  None without a request or a token.

    ``sum o`` is ``total``; ``sum o^2`` is estimated, each bucket's requests spread over it as a power law
    (:data:`_BUCKET_POINTS` points on a log scale from its lower to its upper edge, the first bucket's from 0 on a
    linear one; ``+Inf``'s reaching :data:`INF_BUCKET_REACH` times the largest finite edge) tilted by one factor
    ``exp(k u)`` at the share ``u`` of the way through its bucket, the same ``k`` for every bucket, chosen so that the
    buckets' tokens add up to ``total`` (``k`` = 0: log-uniform within each bucket; the most and the least the buckets
    allow where ``total`` is outside them).  At most the requests counted (Cauchy-Schwarz).

    Ninety requests of 5 tokens and ten of 60 are worth 1,050^2 / 38,250 = 28.8 equal ones; their histogram says:

    >>> round(effective_requests([10, 100, float("inf")], [90, 100, 100], 90 * 5 + 10 * 60), 1)
    31.1
    >>> effective_requests([10, 100, float("inf")], [0, 0, 0], 0.0) is None
    True
    """
    edges = np.asarray(edges, dtype=float)
    counts = np.maximum(np.diff(np.r_[0.0, np.maximum.accumulate(np.asarray(cumulative, dtype=float))]), 0.0)
    requests = float(counts.sum())
    if requests <= 0 or not total > 0:
        return None
    finite = edges[np.isfinite(edges)]
    upper = np.where(np.isfinite(edges), edges, INF_BUCKET_REACH * (finite[-1] if finite.size else 1.0))
    lower = np.r_[0.0, upper[:-1]]
    u = (np.arange(_BUCKET_POINTS) + 0.5) / _BUCKET_POINTS
    logged = lower[:, None] > 0
    ratio = np.where(logged, upper[:, None] / np.where(logged, lower[:, None], 1.0), 1.0)
    o = np.where(logged, lower[:, None] * ratio**u, upper[:, None] * u)  # (bucket, point)
    keep = counts > 0
    o, counts = o[keep], counts[keep]

    def moments(k):
        w = np.exp(k * (u - 1.0))
        w /= w.sum()
        return float(counts @ (o @ w)), float(counts @ (o**2 @ w))

    low, high = -200.0, 200.0  # exp(k u): all but a share 1e-80 of a bucket within its first or last point
    for _ in range(60):  # the buckets' tokens rise with k: bisect for the k that gives total
        mid = 0.5 * (low + high)
        low, high = (mid, high) if moments(mid)[0] < total else (low, mid)
    squares = moments(0.5 * (low + high))[1]
    return min(total**2 / squares, requests)


def _mean_gauge(gauges: list, name: str | None):
    """(mean per replica over the reads, replicas) of a gauge from a window's reads (None where never shown)."""
    if name is None:
        return None, 0
    per_replica: dict = {}
    for g in gauges:
        for (n, replica), v in g.items():
            if n == name:
                per_replica.setdefault(replica, []).append(v)
    if not per_replica:
        return None, 0
    return float(np.mean([np.mean(v) for v in per_replica.values()])), len(per_replica)


def check_gamma(gamma: int | None, reading: Reading, names) -> None:
    """Refuse a ``--gamma`` other than the draft length the page says (its per-position series, or a gauge of it)."""
    if gamma is not None and reading.gamma is not None and int(round(reading.gamma)) != gamma:
        raise ValueError(
            f"{given_as('gamma')} {gamma} but the engine's metrics say {int(round(reading.gamma))} draft tokens "
            f"({names.accepted_per_position or names.gamma_gauge or names.gamma_info[0]})"
        )


def window_between(
    first: Reading, last: Reading, names, gauges: list | None = None, gamma: int | None = None
) -> Window:
    """The window from ``first`` to ``last``; ``gauges`` are the gauge dicts of the reads in it (default both ends'),
    averaged per replica; ``gamma`` is the draft length the user gave, checked against the page's."""
    gauges = [first.gauges, last.gauges] if gauges is None else gauges
    page_gamma = last.gamma
    notes = []
    check_gamma(gamma, last, names)
    g = gamma if gamma is not None else (int(round(page_gamma)) if page_gamma is not None else None)
    running, replicas = _mean_gauge(gauges, names.running)
    waiting, _ = _mean_gauge(gauges, names.waiting)
    replicas = max(replicas, 1)
    base = dict(
        start_s=first.t, end_s=last.t, model=last.model, replicas=replicas, gamma=g, running=running, waiting=waiting
    )
    went_down = [k for k, v in last.counters.items() if v < first.counters.get(k, 0.0) - 1e-9]
    gone = [k for k in first.counters if k not in last.counters and first.counters[k] > 0]
    if went_down or gone:
        said = (  # a counter only falls when its process starts again; one that is gone was not restarted with it
            f"{went_down[0][0]} went down between reads: the engine restarted"
            if went_down
            else f"{gone[0][0]} is no longer reported: the engine restarted without it (or its series stopped)"
        )
        return Window(basis="", restarted=True, notes=(f"{said}; counting starts again from this read",), **base)
    seconds = last.t - first.t
    if seconds <= 0:
        raise ValueError(f"reads at {first.t} and {last.t}: a window needs a later second read")

    def d(name, position=None):
        if name is None:
            return 0.0
        return sum(
            v - first.counters.get(k, 0.0) for k, v in last.counters.items() if k[0] == name and k[2] == position
        )

    def positions(name):
        return sorted({k[2] for k in last.counters if k[0] == name and k[2] is not None})

    requests = d(names.requests)
    per_position, drafts, draft_length, length, summed = None, None, None, None, False
    if names.drafts is not None and any(k[0] == names.drafts for k in last.counters):
        drafts = d(names.drafts)
        accepted = d(names.accepted)
        if drafts > 0:
            length = 1.0 + accepted / drafts
            draft_length = d(names.draft_tokens) / drafts
            pos = positions(names.accepted_per_position)
            drafted = int(round(draft_length))
            if pos:
                per_position = tuple(d(names.accepted_per_position, k) / drafts for k in pos)
                g, per_position = _as_drafted(g, per_position, draft_length, names, notes)
                base["gamma"] = g
            elif g is None and names.draft_tokens is not None and abs(draft_length - drafted) < 1e-9:
                # No per-position series (a scrape that drops them): drafts that all drafted the same number of tokens
                # say the draft length (drafts of several lengths, an n-gram drafter's or a schedule's, do not).
                g = base["gamma"] = drafted
                notes.append(
                    f"draft length {g} from {names.draft_tokens} over {names.drafts} (no per-position counters)"
                )
        basis = names.acceptance_basis
    elif names.drafted_per_position is not None and d(names.drafted_per_position, 0) > 0:
        drafts = d(names.drafted_per_position, 0)
        pos = positions(names.accepted_per_position)
        per_position = tuple(d(names.accepted_per_position, k) / drafts for k in pos)
        length, summed = 1.0 + sum(d(names.accepted_per_position, k) for k in pos) / drafts, True
        draft_length = sum(d(names.drafted_per_position, k) for k in positions(names.drafted_per_position)) / drafts
        basis = (
            f"{names.drafted_per_position} and {names.accepted_per_position}, per position (counted as requests finish)"
        )
    elif names.draft_tokens is not None and g and d(names.draft_tokens) > 0:
        drafts = d(names.draft_tokens) / g
        length = 1.0 + d(names.accepted) / drafts
        draft_length = float(g)
        basis = f"{names.accepted} over {names.draft_tokens} / {g} (no per-position counts: drafts taken as drafted tokens / gamma)"
    elif names.verify_calls is not None and any(k[0] == names.verify_calls for k in last.counters):
        drafts = d(names.verify_calls)
        if drafts > 0:
            length = (d(names.generation_tokens) - requests) / drafts
        basis = names.acceptance_basis
    else:
        length, _ = _mean_gauge(gauges, names.accept_length_gauge)
        basis = names.acceptance_basis
    length, per_position = _counted(length, per_position, g, summed, notes)
    rate = requests / seconds / replicas
    return Window(
        basis=basis,
        drafts=drafts,
        acceptance_length=length,
        per_position=per_position,
        draft_length=draft_length,
        requests_per_s=rate,
        input_tokens=d(names.prompt_tokens) / requests if requests > 0 else None,
        output_tokens=d(names.generation_tokens) / requests if requests > 0 else None,
        effective_requests=_histogram_requests(names.generation_histogram, d, positions),
        notes=tuple(notes),
        **base,
    )


def _histogram_requests(histogram: str | None, d, positions) -> float | None:
    """:func:`effective_requests` of the window's differences ``d`` of ``histogram``'s buckets (None where the page
    shows none)."""
    edges = positions(f"{histogram}_bucket") if histogram else []
    if not edges:
        return None
    return effective_requests(edges, [d(f"{histogram}_bucket", e) for e in edges], d(f"{histogram}_sum"))


def _as_drafted(g, per_position: tuple, draft_length: float, names, notes: list) -> tuple:
    """(gamma, per-position shares) a window is judged at: where every draft drafted the same number of tokens, fewer
    than the ``g`` configured (a per-batch schedule at a higher load), that number and the shares up to it, said in
    ``notes`` (the page's series stop at the configured length, the last ones counting nothing here); else as given."""
    drafted = int(round(draft_length))
    if g is None or abs(draft_length - drafted) >= 1e-9 or not 1 <= drafted < g:
        return g, per_position
    notes.append(
        f"every draft drafted {drafted} of the {g} tokens configured ({names.draft_tokens} over {names.drafts}): "
        f"judged at gamma {drafted}"
    )
    return drafted, per_position[:drafted]


def _falling_shares(per_position: tuple) -> bool:
    """Whether a window's per-position shares can be counts' (:func:`specsim.speculation.acceptance.checked_shares`, the
    one check of shares; counters are exact, so only float rounding is allowed, not a file's)."""
    from specsim.speculation.acceptance import checked_shares

    try:
        checked_shares(list(per_position), tol=1e-9)
    except ValueError:
        return False
    return True


def _counted(length, per_position, g, summed: bool, notes: list) -> tuple:
    """(length, per-position shares) of a window, each None where it cannot be, said in ``notes``: a length outside
    [1, g + 1], and shares that are not falling shares of the drafts in [0, 1] (a token follows only accepted ones),
    with the length where it was ``summed`` from those counts."""
    if length is not None and g is not None and not 1.0 - 1e-9 <= length <= g + 1.0 + 1e-9:
        notes.append(f"acceptance length {length:.3f} is outside [1, {g + 1}] for {g} draft tokens: not counted")
        length = None
    if per_position and not _falling_shares(per_position):
        shown = ", ".join(f"{c:.3g}" for c in per_position)
        notes.append(f"per-position acceptance {shown} is not a falling share of the drafts in [0, 1]: not counted")
        per_position = None
        if summed:
            length = None
    return length, per_position


#: The note of a window without the model's counters at its start or end.
NO_SAMPLES = (
    "no samples: no counter of the model at the window's start or end within the look-back (the engine not up, or a "
    "gap in the scrapes)"
)


def prometheus_windows(
    reads: list, names, model: str | None, gamma: int | None = None, source: str = "metrics"
) -> list:
    """Windows between successive reads of a Prometheus server (:meth:`specsim.watch.sources.PrometheusSource.reads`:
    (time, samples, gauge samples, restarted) per read).  A read with no series of the model (the engine was not up)
    gives a window with no samples, and so does one with gauges but no counter (the counters' last sample past the
    look-back, a gap in the scrapes: the window to it is no restart, and the one from it would count everything since
    the engine started as its own); a counter reset inside a window (Prometheus ``resets()``) marks it restarted."""
    import dataclasses

    readings = []
    for t, samples, gauge_samples, restarted in reads:
        try:
            reading = read_samples(samples + (gauge_samples or []), names, t, model, source)
        except ValueError:
            reading = None  # no series of the model at that time: the engine was not up
        readings.append((reading if reading is not None and reading.counters else None, restarted))
    out = []
    for (a, _), (b, restarted), (t, *_rest) in zip(readings[:-1], readings[1:], reads[1:]):
        if a is None or b is None:
            out.append(
                Window(t - (reads[1][0] - reads[0][0]), t, model or "", 1, "", restarted=False, notes=(NO_SAMPLES,))
            )
            continue
        w = window_between(a, b, names, [b.gauges], gamma)
        if restarted and not w.restarted:
            w = dataclasses.replace(
                w,
                restarted=True,
                notes=(
                    "a counter reset inside the window (Prometheus resets()): the "
                    "engine restarted; counting starts again from this window's end",
                ),
            )
        out.append(w)
    return out
