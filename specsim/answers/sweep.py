"""serve-sweep as a library result: serve-sim at each Poisson rate or closed loop of users, the findings over the
loads, and the record ``specsim serve-sweep --json`` prints."""

from __future__ import annotations

from dataclasses import dataclass

from specsim.speculation.deployment import Deployment

__all__ = ["ServeSweepAnswer", "serve_sweep_answer", "sweep_workload"]


@dataclass(frozen=True)
class ServeSweepAnswer:
    """serve-sweep: one row per load (:func:`~specsim.serving.simulator.serve_sweep`'s frame), with what the runs
    were of (the acceptance, gamma, requests, runs, SLOs and engine limits) for its findings and record."""

    deployment: Deployment
    frame: object  #: the sweep, one row per load (a pandas DataFrame)
    acceptance: object  #: the alpha or Acceptance the speculating arm ran with
    label: str  #: what the record calls the acceptance
    gamma: object  #: draft tokens a round, or "schedule"
    gamma_max: int | None  #: the largest gamma the schedule searches
    requests: str  #: the requests, as the header says them (lengths or workload, defaults cited)
    workload: str | None  #: the workload the requests were drawn from (None: fixed lengths)
    lengths: tuple | None  #: (prompt, output) tokens of every request (None: a workload's)
    requests_per_run: int
    runs: int
    seed: int
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    limits: object  #: the engine's limits every row ran under (EngineLimits)
    #: Where the engine's limits not given come from (:func:`specsim.serving.limits.engine_limits`; "": all given).
    limits_from: str = ""

    def findings(self) -> dict:
        """Where speculation stops lowering TPOT p50 and the largest loads meeting the SLOs
        (:func:`~specsim.serving.simulator.sweep_findings`)."""
        from specsim.serving.simulator import sweep_findings

        return sweep_findings(self.frame)

    @property
    def gamma_policy(self) -> str:
        """serve_compare's words for the sweep's policy (serve-sim prints them): a fixed gamma, or the per-batch schedule
        over the range the search tries (a block's or a per-position acceptance's end), each load at its own mean
        context; a gamma past the steps a calibration's acceptance was measured at said as extrapolated, as serve-sim
        says it (:attr:`specsim.answers.serve.ServeSimAnswer.gamma_policy`): the fixed gamma, or the schedule's deepest
        at each load (the frame's ``gamma_ran``, :func:`specsim.serving.runs.deepest_gamma`) that drafts past them."""
        from specsim.answers.load import past_measured
        from specsim.serving.simulator import sweep_load
        from specsim.speculation.acceptance import as_acceptance
        from specsim.speculation.search import searched_gamma_max

        steps = getattr(self.acceptance, "measured_steps", None)
        if self.gamma != "schedule":
            return f"gamma {self.gamma}" + past_measured(int(self.gamma), steps)
        top = searched_gamma_max(self.deployment, as_acceptance(self.acceptance), self.gamma_max)
        said = f"per-batch optimal gamma (0..{top}) at each load's mean context"
        load, unit, _ = sweep_load(self.frame)
        past: dict = {}  # gamma -> the loads whose runs ran it as their deepest, past the steps measured
        for value, ran in zip(self.frame[load], self.frame["gamma_ran"]):
            if past_measured(int(ran), steps):
                past.setdefault(int(ran), []).append(f"{value:g}")
        if not past:
            return said
        loads = ", ".join(
            f"gamma {g} at {', '.join(v)} {'user' if v == ['1'] and unit == 'users' else unit}"
            for g, v in sorted(past.items())
        )
        return f"{said}; {loads}{past_measured(max(past), steps)}"

    def to_dict(self, limits_said: str | None = None, plot: str | None = None) -> dict:
        """What ``specsim serve-sweep --json`` prints: the rows (``rates`` or ``concurrencies``), :meth:`findings`, the
        acceptance (its label and rates), :attr:`gamma_policy`, the requests, runs and seeds, the SLOs the findings
        are judged by, the engine's limits (``limits_said``, the clause after their label: None, :attr:`limits_from`
        in brackets), the sources of every number (``provenance``, ``deployment``) and the figure ``plot`` wrote."""
        from specsim.serving.simulator import DEFAULT_SLO_ATTAINMENT, sweep_load
        from specsim.speculation.acceptance import acceptance_rates

        if limits_said is None:
            limits_said = f" ({self.limits_from})" if self.limits_from else ""
        plural = "rates" if sweep_load(self.frame)[0] == "rate" else "concurrencies"
        lengths, dep = self.lengths, self.deployment
        return {
            plural: self.frame.to_dict(orient="records"),
            "findings": self.findings(),
            "acceptance": self.label,
            "acceptance_rates": acceptance_rates(self.acceptance),
            "gamma_policy": self.gamma_policy,
            "workload": self.workload,
            "lengths": None if lengths is None else {"input_len": lengths[0], "output_len": lengths[1]},
            "requests": self.requests,
            "requests_per_run": self.requests_per_run,
            "runs": self.runs,
            "seeds": list(range(self.seed, self.seed + self.runs)),
            # the SLOs the attainment columns and the findings' largest loads are judged by (None: not given)
            "slo": {"ttft_s": self.slo_ttft_s, "tpot_s": self.slo_tpot_s, "attainment": DEFAULT_SLO_ATTAINMENT},
            "engine_limits": self.limits.label + limits_said,  # serve-sim's words: they bound every row
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
            "plot": plot,
        }


def sweep_workload(lengths: tuple | None, workload: str | None):
    """The workload a sweep draws its requests from: ``workload`` (its name), the default where neither it nor fixed
    ``lengths`` are given, None where the lengths are (serve_sweep refuses both)."""
    from specsim.core.workloads import DEFAULT_WORKLOAD, get_workload

    return None if lengths is not None and workload is None else get_workload(workload or DEFAULT_WORKLOAD)


def serve_sweep_answer(
    dep: Deployment,
    acceptance: object,
    *,
    rates=None,
    concurrencies=None,
    workload=None,
    n: int | None = None,
    lengths: tuple | None = None,
    gamma: object = "schedule",
    gamma_max: int | None = None,
    limits=None,
    seed: int = 0,
    runs: int = 1,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    executor=None,
    done=None,
    label: str | None = None,
    requests: str | None = None,
) -> ServeSweepAnswer:
    """:func:`~specsim.serving.simulator.serve_sweep` at each of ``rates`` (Poisson, requests per second) or
    ``concurrencies`` (closed loops of users), as an answer with its findings and record
    (:meth:`ServeSweepAnswer.to_dict`, what ``specsim serve-sweep --json`` prints).  ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`, ``label`` what the record calls it (None: its rates); the
    requests a ``workload`` (its name; None: the default) or fixed ``lengths`` (prompt, output) tokens, ``requests``
    how the record says them (None: the lengths, or the workload and its source); ``limits`` the engine's
    (:class:`~specsim.serving.steady.EngineLimits`; None: its own on the GPU); the rest as ``serve_sweep`` takes them.

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> swept = serve_sweep_answer(dep, 0.8, concurrencies=[1, 8], n=20, lengths=(500, 50), gamma=3)
    >>> swept.to_dict()["requests"], swept.findings()["speculation_stops_helping_at_concurrency"]
    ('every request 500 in, 50 out', None)
    """
    from specsim.answers.acceptance import checked_label
    from specsim.serving.limits import check_limits, engine_limits
    from specsim.serving.simulator import DEFAULT_GAMMA_MAX, DEFAULT_REQUESTS, serve_sweep
    from specsim.speculation.acceptance import as_acceptance

    label = checked_label(acceptance, as_acceptance(acceptance).brief() if label is None else label)
    if limits is None:  # the engine's own on the GPU
        limits, limits_from = engine_limits(dep.engine, dep.hardware)
    else:
        limits, limits_from = check_limits(dep.engine, limits), ""
    drawn = sweep_workload(lengths, workload)
    n = DEFAULT_REQUESTS if n is None else n
    gamma_max = DEFAULT_GAMMA_MAX if gamma_max is None else gamma_max
    frame = serve_sweep(
        dep,
        rates,
        drawn,
        n,
        acceptance,
        gamma,
        limits,
        seed,
        slo_ttft_s,
        slo_tpot_s,
        gamma_max,
        executor=executor,
        runs=runs,
        done=done,
        lengths=lengths,
        concurrencies=concurrencies,
    )
    if requests is None:
        requests = (
            f"every request {lengths[0]} in, {lengths[1]} out"
            if drawn is None
            else f"workload {drawn.name} ({drawn.source})"
        )
    return ServeSweepAnswer(
        dep,
        frame,
        acceptance,
        label,
        gamma,
        gamma_max,
        requests,
        None if lengths is not None else drawn.name,
        lengths,
        n,
        runs,
        seed,
        slo_ttft_s,
        slo_tpot_s,
        limits,
        limits_from,
    )
