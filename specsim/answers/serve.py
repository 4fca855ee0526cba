"""serve-sim as a library result: independent runs of one load through the request-level simulator, with and without
speculation, and each figure's mean over the runs with its interval."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.core.names import given_as
from specsim.core.words import counted
from specsim.serving.runs import deepest_gamma
from specsim.serving.simulator import DEFAULT_RUNS, requests_for, serve_compare_runs, summarize_runs
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import checked_deployment

__all__ = ["ServeSimAnswer", "SimLoad", "serve_sim", "sim_load"]


@dataclass(frozen=True)
class ServeSimAnswer:
    """serve-sim: each run's requests and its (plain, speculative, meta) results, in seed order, and the summaries of
    the runs without and with speculation (:func:`~specsim.serving.simulator.summarize_runs`), each with whether the
    runs were past the engine's capacity (``past_capacity``: :func:`specsim.serving.runs.past_capacity`)."""

    deployment: Deployment
    seeds: list
    request_sets: list
    results: list  # (plain, spec, meta) per run
    concurrency: int | None  # the closed loop's users, None for an open loop or a trace
    off: dict
    on: dict
    limits: object = None  #: the engine's limits the runs were served under (EngineLimits)
    #: The deepest draft step the acceptance was measured at (a calibration's); a gamma run past it extrapolates it.
    measured_steps: int | None = None
    label: str = ""  #: what the record calls the acceptance (:func:`serve_sim`'s ``label``)
    acceptance: object = None  #: the alpha or Acceptance the runs speculated with
    load: SimLoad | None = None  #: the load the runs are of (its rate, workload, and how its lengths were given)
    #: Where the engine's limits not given come from (:func:`specsim.serving.limits.engine_limits`; "": all given).
    limits_from: str = ""

    @property
    def meta(self) -> dict:
        """The first run's facts of the simulation (gamma policy and per batch, KV capacities, the context seen)."""
        return self.results[0][2]

    @property
    def deepest_gamma(self) -> int:
        """The largest gamma a round of the speculating arm ran at: the fixed gamma, or the schedule's at the batch
        sizes any run decoded at."""
        return deepest_gamma(self.meta["gamma_by_batch"], [spec for _, spec, _ in self.results])

    @property
    def gamma_policy(self) -> str:
        """How the speculating arm picks gamma (the simulation's words), and, where a gamma it ran drafts past the
        steps its acceptance was measured at, that it is extrapolated, as the answering commands say it
        (:func:`specsim.answers.load.past_measured`)."""
        from specsim.answers.load import past_measured

        return self.meta["gamma_policy"] + past_measured(self.deepest_gamma, self.measured_steps)

    def held_back(self) -> str | None:
        """Why the speculating arm ran fewer sequences at once than the plain one, where a limit did it: the engine's
        own max_num_seqs while speculating, or the KV cache left beside the draft (a request of a speculating run waited
        for memory with a sequence free, as the engine's KV policy admits).  A smaller batch, not a slower round,
        is then most of the difference.  None where no limit held it (speculation finishes requests sooner, so fewer
        are in flight at one rate)."""
        off, on = self.off.get("max_running_batch"), self.on.get("max_running_batch")
        if off is None or on is None or on >= off:
            return None
        head = f"speculation on ran at most {counted(on, 'sequence')} at once, off {off}: "
        limits = self.limits
        if limits is None:  # an answer built without them: the engine's own on the GPU, as serve_sim takes them
            from specsim.serving.steady import engine_limits

            limits = engine_limits(self.deployment.engine, self.deployment.hardware)[0]
        most = limits.arm(True).max_num_seqs
        if on >= most:
            return head + f"the engine's max_num_seqs while speculating ({most})"
        if not any(spec.kv_full for _, spec, _ in self.results):
            return None
        meta = self.meta
        return head + (
            f"beside the draft's weights and KV the cache holds {meta['kv_capacity_tokens_spec']:,.0f} tokens, against "
            f"{meta['kv_capacity_tokens_plain']:,.0f} without it ({meta['kv_policy']}; specsim "
            "capacity gives the batch at a length)"
        )

    def queued(self) -> dict:
        """Per arm ("off", "on"), where a closed loop has more users than the engine ran at once because a limit held
        it: {"users", "running" (the most sequences it ran at once), "waiting" (the users less those), "limited_by"
        ("max_num_seqs" where it ran its max_num_seqs, "kv cache" where a request waited for memory with a sequence
        free), "said" (:func:`~specsim.serving.limits.queued_said`)}; None for an arm no limit held."""
        from specsim.serving.limits import queued_said
        from specsim.serving.steady import engine_limits

        limits = (
            self.limits
            if self.limits is not None
            else engine_limits(self.deployment.engine, self.deployment.hardware)[0]
        )
        out = {}
        for k, (name, summary) in enumerate((("off", self.off), ("on", self.on))):
            running = summary.get("max_running_batch")
            out[name] = None
            if not self.concurrency or running is None or running >= self.concurrency:
                continue
            if running >= limits.arm(bool(k)).max_num_seqs:
                by = "max_num_seqs"
            elif any(r[k].kv_full for r in self.results):
                by = "kv cache"
            else:
                continue
            said = queued_said(self.concurrency, running, by)
            out[name] = {"users": self.concurrency, "running": running, "waiting": self.concurrency - running}
            out[name] |= {"limited_by": by, "said": said}
        return out

    def provenance(self, limits_said: str | None = None, csv: str | None = None) -> list[str]:
        """Where every figure comes from, as ``serve-sim`` prints it: the deployment's sources, then the load (with
        how its lengths were given), the acceptance and gamma policy, the engine's limits (``limits_said``, the clause
        after their label: None, :attr:`limits_from` in brackets) with each arm's KV capacity, and the runs (with
        ``csv``, the file the first run's requests were written to)."""
        from specsim.serving.simulator import CONFIDENCE

        dep, meta, seeds, load = self.deployment, self.meta, self.seeds, self.load
        if limits_said is None:
            limits_said = f" ({self.limits_from})" if self.limits_from else ""
        requests = self.request_sets[0]
        span = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}-{seeds[-1]}"
        if len(seeds) > 1:
            interval = (
                f"; each figure is the mean over the runs ± the half-width of its {CONFIDENCE:.0%} "
                "confidence interval (Student t over runs)"
            )
        elif load is not None and load.trace:
            interval = "; a trace is replayed once: no interval"
        else:
            interval = f"; no interval: pass {given_as('runs')} 10 for one"
        return dep.provenance() + [
            f"load: {self._load_said()}" + ("" if load is None else load.lengths_said),
            f"acceptance: {self.label}; speculation: {self.gamma_policy}",
            f"engine limits: {self.limits.label}{limits_said}; KV capacity {meta['kv_capacity_tokens_plain']:,.0f} "
            f"tokens without the draft, {meta['kv_capacity_tokens_spec']:,.0f} with it ({meta['kv_policy']}; "
            f"memory: {meta['memory_basis']})" + _window_clause(dep),
            f"runs: {len(seeds)} of {counted(len(requests), 'request')} ({span})"
            + interval
            + ("" if csv is None else f"; {given_as('csv')} holds the run with seed {seeds[0]}"),
        ]

    def _load_said(self) -> str:
        """The load as the record names it: the requests' source and the closed loop's users."""
        requests = self.request_sets[0]
        return requests.source + _users_said(self.concurrency, len(requests))

    def to_dict(self, limits_said: str | None = None, csv: str | None = None) -> dict:
        """What ``specsim serve-sim --json`` prints: the load, the acceptance (its label and rates), the gamma policy,
        the context, what speculation changes (:meth:`changes`), each arm's summary, the seeds, where every figure
        comes from (:meth:`provenance`, ``limits_said`` and ``csv`` as it takes them; ``deployment``), the gamma per
        batch, what held the speculating batch back (:meth:`held_back`), the users queued (:meth:`queued`), the
        engine's limits and each arm's KV capacity in tokens."""
        from specsim.answers.context import LOAD_CONTEXT
        from specsim.speculation.acceptance import acceptance_rates

        if limits_said is None:
            limits_said = f" ({self.limits_from})" if self.limits_from else ""
        meta, load = self.meta, self.load
        return {
            "load": self._load_said(),
            "rate": None if load is None else load.rate,
            "concurrency": self.concurrency,
            "workload": None if load is None else load.workload,
            "requests_per_run": len(self.request_sets[0]),
            "acceptance": self.label,
            "acceptance_rates": acceptance_rates(self.acceptance),
            "gamma_policy": self.gamma_policy,
            "context_tokens": int(round(meta["context_hint"])),
            "context_basis": LOAD_CONTEXT,
            "changes": self.changes(),
            "off": self.off,
            "on": self.on,
            "seeds": self.seeds,
            "provenance": self.provenance(limits_said, csv),
            "deployment": self.deployment.identity(),
            "gamma_by_batch": meta["gamma_by_batch"],
            "speculating_batch_held": self.held_back(),
            "queued": self.queued(),
            "engine_limits": self.limits.label + limits_said,
            "kv_capacity_tokens": {
                "plain": meta["kv_capacity_tokens_plain"],
                "speculating": meta["kv_capacity_tokens_spec"],
            },
        }

    def to_frame(self):
        """A pandas DataFrame of the two arms' summaries, one row each (``arm`` "off" and "on", nested figures
        flattened: ``tpot_s.p50``), with what both share (acceptance, engine limits, provenance, deployment, ...)
        and the deployment's notes in ``attrs`` (:func:`specsim.answers.frames.answer_frame`)."""
        from specsim.answers.frames import SOURCE_KEYS, answer_frame

        record = self.to_dict()
        shared = {k: record[k] for k in SOURCE_KEYS if k in record}
        return answer_frame([{"arm": arm} | record[arm] | shared for arm in ("off", "on")], self.deployment)

    def __repr__(self) -> str:  # a notebook's echo: the two arms' medians, not every request (results holds them)
        def p50(arm):
            tpot = arm["tpot_s"]["p50"]
            return "no TPOT" if tpot is None else f"TPOT p50 {tpot * 1e3:.2f} ms"

        users = f"{counted(self.concurrency, 'user')}, " if self.concurrency else ""
        return (
            f"ServeSimAnswer({self.deployment!r}, {users}{counted(len(self.seeds), 'run')} of {len(self.request_sets[0]):,} "
            f"requests; off: {p50(self.off)}, on: {p50(self.on)})"
        )

    def changes(self) -> dict:
        """What speculation changes at this load, each as (on / off - 1): ``tpot_p50`` (None where an arm served no
        request a second token) and ``output_tokens_per_s`` (None also where the arms served different requests: some
        never fit one arm's cache, so their throughputs do not compare)."""
        off, on = self.off, self.on
        if off["tpot_s"]["p50"] is None or on["tpot_s"]["p50"] is None:
            return {"tpot_p50": None, "output_tokens_per_s": None}
        same = on["never_fit"] == off["never_fit"]
        return {
            "tpot_p50": on["tpot_s"]["p50"] / off["tpot_s"]["p50"] - 1,
            "output_tokens_per_s": on["output_tokens_per_s"] / off["output_tokens_per_s"] - 1 if same else None,
        }


def _users_said(concurrency: int | None, requests: int) -> str:
    """The load line's users: a closed loop with fewer requests than users is a burst of its requests."""
    if not concurrency:
        return ""
    if requests < concurrency:
        return f", {counted(concurrency, 'user')} but {counted(requests, 'request')}: a burst of {requests:,}"
    return f", {counted(concurrency, 'user')}"


def _window_clause(dep) -> str:
    """Serve-sim's KV capacity is in full-attention tokens; say when window layers make a request reserve less."""
    t = dep.target
    if not t.n_sliding_layers:
        return ""
    return (
        f"; {t.n_sliding_layers} of {t.n_layers} layers keep at most {t.sliding_window:,} tokens, so a request "
        "reserves less than its length (the same KV as specsim capacity)"
    )


@dataclass(frozen=True)
class SimLoad:
    """The requests of each run of one load, with their seeds, and the closed loop's users (None for an open loop or a
    trace)."""

    seeds: list
    request_sets: list
    concurrency: int | None
    rate: float | None = None  #: the Poisson arrivals' requests per second (None: a closed loop or a trace)
    #: The workload the requests were drawn from (None: fixed lengths or a trace, which give their own).
    workload: str | None = None
    trace: bool = False  #: the requests are a trace's, replayed once
    lengths_said: str = ""  #: the load's clause on how its lengths were given (:func:`sim_load`'s ``lengths_said``)

    @property
    def requests(self) -> int:
        """Requests over every run (what decides whether spreading the runs over processes pays)."""
        return sum(len(r) for r in self.request_sets)

    def __repr__(self) -> str:  # a notebook's echo: the runs and their requests, not every length (request_sets)
        seeds = self.seeds
        said = (
            f"seed {seeds[0]}"
            if len(seeds) == 1
            else f"seeds {seeds[0]}-{seeds[-1]}"
            if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds)))
            else f"seeds {', '.join(map(str, seeds[:4]))}" + (", ..." if len(seeds) > 4 else "")
        )
        users = f", {counted(self.concurrency, 'user')}" if self.concurrency else ""
        first = self.request_sets[0] if self.request_sets else None
        source = f"; {first.source}" if first is not None and first.source else ""
        sizes = {len(r) for r in self.request_sets}
        size = f"{next(iter(sizes)):,}" if len(sizes) == 1 else f"{min(sizes):,}-{max(sizes):,}"
        return f"SimLoad({counted(len(self.request_sets), 'run')} of {size} requests ({said}){users}{source})"


def sim_load(
    dep: Deployment,
    *,
    rate: float | None = None,
    concurrency: int | None = None,
    trace=None,
    workload=None,
    n: int | None = None,
    lengths: tuple | None = None,
    seed: int = 0,
    runs: int | None = None,
    lengths_said: str = "",
) -> SimLoad:
    """The requests of ``runs`` runs of one load (seeds ``seed``, ``seed + 1``, ...;
    :data:`~specsim.serving.simulator.DEFAULT_RUNS`, or one for a ``trace``, which is replayed once): a Poisson
    ``rate``, a closed loop of ``concurrency`` users or a ``trace`` (:func:`~specsim.serving.simulator.requests_for`,
    which also reads ``workload``, ``n`` and fixed ``lengths``, (prompt, output) tokens); ``rate`` in requests per
    second; ``dep`` the :class:`~specsim.speculation.deployment.Deployment` the requests are checked against; at most
    :data:`~specsim.core.limits.MAX_SIMULATED_REQUESTS` requests in all.  ``lengths_said``: how lengths not given
    were chosen, a clause the record's load line carries (the command line's cited defaults, e.g. a calibration's).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> load = sim_load(dep, concurrency=4, n=20, runs=2, lengths=(500, 50))
    >>> len(load.request_sets), len(load.request_sets[0])
    (2, 20)
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.core.limits import MAX_BATCH, MAX_SEED, MAX_SIMULATED_REQUESTS, check_int

    seed = check_int("seed", seed, 0, MAX_SEED)
    if runs is not None:
        runs = check_int("runs", runs, 1, MAX_SIMULATED_REQUESTS)
    if concurrency is not None:
        concurrency = check_int("concurrency", concurrency, 1, MAX_BATCH)
    if lengths is not None and (
        isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__len__") or len(lengths) != 2
    ):
        raise ValueError(f"lengths must be (prompt tokens, output tokens), got {lengths!r:.40}")
    if trace is not None and runs not in (None, 1):
        raise ValueError(
            f"{given_as('runs')} {runs} with {given_as('trace')}: a trace is one fixed set of requests and is replayed "
            f"once (new runs draw new arrivals, which a trace does not have); drop {given_as('runs')}"
        )
    count = (1 if trace is not None else DEFAULT_RUNS) if runs is None else runs
    seeds = list(range(seed, seed + count))
    request_sets, users = [], None
    for s in seeds:
        requests, users = requests_for(
            dep.target,
            rate=rate,
            concurrency=concurrency,
            trace=trace,
            workload=workload,
            n=n,
            rng=np.random.default_rng(s),
            lengths=lengths,
            draft=dep.draft,
        )
        if len(requests) * len(seeds) > MAX_SIMULATED_REQUESTS:
            raise ValueError(
                f"{given_as('runs')} {len(seeds)} of {len(requests):,} requests simulate "
                f"{len(requests) * len(seeds):,}; at most "
                f"{MAX_SIMULATED_REQUESTS:,} per command: pass fewer runs or requests"
            )
        request_sets.append(requests)
    from specsim.core.defaults import DEFAULT_WORKLOAD

    drawn = trace is None and lengths is None  # the requests are a workload's: the record names it
    named = (workload or DEFAULT_WORKLOAD) if drawn else None
    return SimLoad(seeds, request_sets, users, rate, named, trace is not None, lengths_said)


def serve_sim(
    dep: Deployment,
    load: SimLoad,
    acceptance: object,
    gamma: object = "schedule",
    limits=None,
    *,
    memory_utilization: float | None = None,
    gamma_max: int | None = None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    executor=None,
    done=None,
    label: str | None = None,
) -> ServeSimAnswer:
    """Each run of ``load`` (:func:`sim_load`) with and without speculation, through ``executor`` where given (any
    ``concurrent.futures`` executor), ``done`` called per finished run; the summaries over the runs, with each figure's
    95% interval where there are several (SLO attainment against ``slo_ttft_s`` and ``slo_tpot_s``, in seconds).
    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`; ``gamma`` draft tokens a round, or "schedule" for the best
    per batch size (up to ``gamma_max``); ``limits`` the engine's max_num_seqs and token budget
    (:class:`~specsim.serving.steady.EngineLimits`; None: the engine's own on the GPU); ``memory_utilization`` its
    share of device memory, a fraction (None: its own); ``label`` what the record calls the acceptance (None: its
    rates, :meth:`~specsim.speculation.acceptance.Acceptance.brief`).  :meth:`ServeSimAnswer.to_dict` is the record
    ``specsim serve-sim --json`` prints.

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> answer = serve_sim(dep, sim_load(dep, concurrency=4, n=20, runs=1, lengths=(500, 50)), 0.8, gamma=3)
    >>> answer
    ServeSimAnswer(Deployment(llama-3.1-8b + llama-3.2-1b on h100-sxm, roofline step times, engine none), 4 users, 1 run of 20 requests; off: TPOT p50 6.20 ms, on: TPOT p50 3.83 ms)
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.core.limits import check_real
    from specsim.serving.simulator import DEFAULT_GAMMA_MAX
    from specsim.serving.steady import check_limits, engine_limits

    for name, slo in (("slo_ttft_s", slo_ttft_s), ("slo_tpot_s", slo_tpot_s)):
        if slo is not None:
            check_real(name, slo, 0.0, float("inf"), above=True)  # any finite time, as --slo-ttft-ms
    from specsim.answers.acceptance import checked_label
    from specsim.speculation.acceptance import as_acceptance

    label = checked_label(acceptance, as_acceptance(acceptance).brief() if label is None else label)
    if limits is None:  # the engine's own on the GPU
        limits, limits_from = engine_limits(dep.engine, dep.hardware)
    else:
        limits, limits_from = check_limits(dep.engine, limits), ""
    results = serve_compare_runs(
        dep,
        load.request_sets,
        acceptance,
        gamma,
        limits,
        load.concurrency,
        load.seeds,
        memory_utilization,
        DEFAULT_GAMMA_MAX if gamma_max is None else gamma_max,
        executor,
        done,
    )
    from specsim.serving.runs import past_capacity

    off, on = (summarize_runs([r[i].summary(slo_ttft_s, slo_tpot_s) for r in results]) for i in (0, 1))
    off, on = (s | {"past_capacity": past_capacity(s, load.concurrency is not None)} for s in (off, on))
    steps = getattr(acceptance, "measured_steps", None)  # a calibration's acceptance knows the steps it was measured at
    return ServeSimAnswer(
        dep,
        load.seeds,
        load.request_sets,
        results,
        load.concurrency,
        off,
        on,
        limits,
        steps,
        label,
        acceptance,
        load,
        limits_from,
    )
