"""Independent runs of one load, summarised: each figure the mean over the runs with a Student t interval of that
mean (serve-sim --runs, serve-sweep --runs); the request-level simulator (:mod:`specsim.serving.simulator`) makes the
runs' summaries."""

from __future__ import annotations

import numpy as np

__all__ = [
    "CONFIDENCE",
    "DEFAULT_RUNS",
    "deepest_gamma",
    "past_capacity",
    "queue_verdict",
    "second_half_s",
    "student_t",
    "summarize_runs",
]


#: Confidence level of the intervals serve-sim prints over independent runs.
CONFIDENCE = 0.95
#: Independent runs of a Poisson or closed-loop load by default (Student t with 9 degrees of freedom: 2.26 standard
#: errors).  A trace is one fixed set of requests: it is replayed once (repeating it would count its requests again
#: and put an interval over the acceptance draws alone).
DEFAULT_RUNS = 10
_SUMMED = ("requests", "served", "never_fit", "slo_met", "preemptions", "recomputed_tokens")


def student_t(dof: int, level: float = CONFIDENCE) -> float:
    """The factor of a standard error a two-sided ``level`` interval spans either side of a mean: Student's t with
    ``dof`` degrees of freedom at 0.5 + level / 2.  The one home of that quantile (intervals over runs here and in
    serve-sim's notes, the fitted terms' intervals of :mod:`specsim.calibration.engine_fit`).

    >>> round(student_t(9), 3), round(student_t(1), 2)
    (2.262, 12.71)
    """
    from scipy.special import stdtrit

    return float(stdtrit(dof, 0.5 + level / 2))


def deepest_gamma(gamma_by_batch, spec_runs) -> int:
    """The largest gamma a round of the speculating arm ran at: the fixed gamma (``gamma_by_batch`` one number, as
    :func:`specsim.serving.simulator.serve_compare`'s meta keeps it), or the schedule's at the batch sizes any of
    ``spec_runs`` (the speculating arm's runs) decoded at; 0 where none decoded.  serve-sim's and serve-sweep's one
    home of it, which they set beside the steps an acceptance was measured at (:func:`specsim.answers.load.past_measured`).

    >>> deepest_gamma([5], [])
    5
    """
    policy = np.atleast_1d(gamma_by_batch)
    if policy.size == 1:
        return int(policy[0])
    ran = [np.flatnonzero(np.asarray(run.batch_time_s) > 0) for run in spec_runs]
    return max((int(policy[b].max()) for b in ran if b.size), default=0)


def second_half_s(summary: dict) -> float:
    """The time the second half of one run's requests took to arrive, at its arrival rate: a summary of several runs
    (:func:`summarize_runs`) sums their requests and averages the rate, so the count is per run."""
    per_run = (summary["served"] + summary["never_fit"]) / summary.get("runs", 1)
    return per_run / 2.0 / summary["arrival_rate_per_s"]


def queue_verdict(summary: dict) -> str | None:
    """Whether the engine kept up with a run's arrivals (a summary of :meth:`ServeResult.summary`, or of
    :func:`summarize_runs`): ``"kept up"``, ``"grew"`` (past its capacity: the queue grew through the run, so a longer
    run queues more and the run's figures are of its length, not of a steady state), ``"burst"`` (the second half of
    the requests arrived in under a tenth of the time the engine took to finish what was left: no steady rate to read),
    or None where the run has no arrival figures.

    Under a steady load the requests in the system at the last arrival are about as many as at the middle one.  Growth
    counts when it is over 10 requests and three times sqrt(n) for the n at the middle arrival (a steady queue of n
    requests wanders by about sqrt(n); near capacity, 60 to 74 in 400 requests is that wander), and over 5% of the
    arrival rate."""
    rate, drain, growth = summary["arrival_rate_per_s"], summary["drain_s"], summary["queue_growth_per_s"]
    if rate is None or drain is None or growth is None:
        return None
    middle, last = summary["in_system_at_middle_arrival"], summary["in_system_at_last_arrival"]
    if not (last - middle > max(10.0, 3.0 * np.sqrt(max(middle, 0.0))) and growth > 0.05 * rate):
        return "kept up"
    return "burst" if second_half_s(summary) < 0.1 * drain else "grew"


def past_capacity(summary: dict, closed_loop: bool) -> bool | None:
    """Whether a run was past the engine's capacity (:func:`queue_verdict` "grew" or "burst"), as serve-sim and each
    serve-sweep row say it in ``--json``; None for a closed loop (its users send only when served) or a run without
    arrival figures."""
    verdict = None if closed_loop else queue_verdict(summary)
    return None if verdict is None else verdict != "kept up"


def summarize_runs(summaries: list[dict], level: float = CONFIDENCE) -> dict:
    """One summary of independent runs (:meth:`ServeResult.summary` each, e.g. one per seed).

    Each latency percentile, rate, mean batch and arrival figure is the mean over the runs, and ``ci`` holds the
    half-width of its ``level`` confidence interval, Student t over the runs: ``t(level, R-1) s / sqrt(R)``.
    The runs are independent where a single run's requests are not (a queue's latencies are correlated), which
    is why the interval is over runs and not a bootstrap over one run's requests.  Counts are summed over the
    runs, ``max_running_batch`` is the largest, batch shares are averaged.  A figure that any run lacks (no
    request with a second token: no TPOT) is None, with no interval.  One run: no intervals (None).
    """
    runs = len(summaries)
    if runs < 1:
        raise ValueError("summarize_runs needs at least one run")
    scale = student_t(runs - 1, level) / np.sqrt(runs) if runs > 1 else None

    def mean_ci(values):
        if any(v is None for v in values):
            return None, None
        x = np.asarray(values, dtype=float)
        if scale is None:
            return float(x.mean()), None
        # Runs that agree to rounding (equal requests with speculation off are one run whatever the seed) have no
        # spread: their float noise (1e-16 ms) is not an interval.
        spread = float(x.std(ddof=1))
        return float(x.mean()), (0.0 if spread <= 1e-9 * float(np.abs(x).max()) else scale * spread)

    first = summaries[0]
    out, ci = {"speculation": first["speculation"], "runs": runs, "confidence": level}, {}
    for key, value in first.items():
        if key == "speculation":
            continue
        values = [s[key] for s in summaries]
        if key in _SUMMED:
            out[key] = int(sum(values))
        elif key == "max_running_batch":
            out[key] = int(max(values))
        elif key == "running_batch_time_share":
            batches = sorted({b for v in values for b in v})
            out[key] = {b: float(np.mean([v.get(b, 0.0) for v in values])) for b in batches}
        elif isinstance(value, dict):
            pairs = {q: mean_ci([v[q] for v in values]) for q in value}
            out[key], ci[key] = {q: m for q, (m, _) in pairs.items()}, {q: h for q, (_, h) in pairs.items()}
        else:
            out[key], ci[key] = mean_ci(values)
    out["ci"] = ci
    return out
