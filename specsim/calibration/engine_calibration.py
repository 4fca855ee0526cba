"""calibrate-engine as library calls: the deployment the runs were served on, the fit of its terms, the acceptance
measured on real prompts, the calibration file's content and the summary the command prints.

The runs come from :func:`specsim.calibration.inputs.runs_from_plan` or :func:`~specsim.calibration.inputs.runs_from_files`;
the fit is :func:`specsim.calibration.engine_fit.fit_engine`; the file is :func:`specsim.calibration.file.calibration_mapping`
(read back by :func:`~specsim.calibration.file.read_calibration`).  A notebook that calls :func:`calibrate_engine` on the
same runs gets the command's fit, file and JSON.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from specsim.core.names import given_as, keyword_and_flag, passed_as

__all__ = [
    "EngineCalibration",
    "PlainFloor",
    "calibrate_engine",
    "measured_acceptance",
    "plain_floor",
    "recorded_shares",
    "timing_for",
]


def timing_for(
    hardware, asked: str | None = None, model=None, kernel_engine: str | None = None
) -> tuple[str, str | None]:
    """(step-time source, what was taken for it): ``asked``, or by default the library's
    (:data:`specsim.timing.DEFAULT_TIMING`; for a target ``model`` served with ``kernel_engine``'s kernels,
    :func:`specsim.timing.default_timing`'s) where the kernel database has the GPU or a device of its compute
    capability (:func:`specsim.timing.kernel_db.kin_devices`) and the roofline where it has neither, said as such.  An
    explicit kernels or hybrid on a GPU without data is refused.  ``hardware`` is a profile or its name."""
    from specsim.describe.hardware import load_hardware
    from specsim.engines import DEFAULT_ENGINE, ENGINES
    from specsim.timing import DEFAULT_TIMING, default_timing, make_source

    profile = hardware if not isinstance(hardware, str) else load_hardware(hardware)
    if asked is None and model is not None:
        chosen, why = default_timing(profile, model, kernel_engine or ENGINES[DEFAULT_ENGINE].kernel_engine)
        if why:
            return chosen, why.removeprefix("step times: ")
    source = (
        make_source(asked or DEFAULT_TIMING, profile, ENGINES[DEFAULT_ENGINE].kernel_engine)
        if (asked or DEFAULT_TIMING) != "roofline"
        else None
    )
    if source is not None and source.name == "roofline":
        reason = source.notes[-1] if source.notes else "no kernel data"
        if asked:
            raise ValueError(
                f"{given_as('timing')} {asked}: {reason.removesuffix('; using the roofline instead')}; use "
                f"{given_as('timing')} roofline"
            )
        return "roofline", f"roofline (the default {DEFAULT_TIMING} needs kernel data: {reason.split(';')[0]})"
    timing = asked or DEFAULT_TIMING
    return timing, None if asked else f"{timing} (the library's default)"


def measured_acceptance(fit):
    """(Acceptance, label, the deepest draft step it was measured at) the runs measured on real prompts: the recorded
    lengths of unpinned runs (their per-token rate pooled as the fit pools it for a run that records none,
    :func:`specsim.calibration.runs.pooled_alpha`), else the rate the fit found for a sweep that recorded none; (None,
    None, None) where every speculative run was pinned or none was fitted.  What the calibration file keeps as its
    acceptance."""
    from specsim.calibration.runs import pooled_alpha, verifications
    from specsim.speculation.acceptance import Acceptance

    real = [c for c in fit.runs if c.kind == "spec" and c.setup.pinned_accept_length is None]
    by_sweep = {}  # sweep -> (alpha, label, deepest step): the recorded lengths' rate, else the fitted one
    for sweep in dict.fromkeys(c.sweep for c in real):
        swept = [c for c in real if c.sweep == sweep]
        recorded = [c for c in swept if c.run.accept_length is not None]
        term = fit.acceptance.get(sweep)
        if recorded:
            alpha = pooled_alpha([(c.setup.steps, c.run.accept_length, verifications(c.run)) for c in recorded])
            label = (
                f"alpha {alpha:.3f}, the per-token rate of the acceptance length {_told_by(recorded)}, each run's "
                f"weighted by its verifications{_measured_at(recorded)}"
            )
            shares = recorded_shares(fit, sweep)
            if shares is not None:
                label += "; " + _shape(*shares)
            by_sweep[sweep] = (alpha, label, _deepest(recorded))
        elif term is not None and term.status == "fitted":
            interval = f", 95% interval {term.low:.3f}-{term.high:.3f}" if term.low is not None else ""
            label = (
                f"alpha {term.value:.3f} fitted to the runs of sweep {sweep}, which recorded no acceptance{interval}"
                f"{_measured_at(swept)}"
            )
            by_sweep[sweep] = (term.value, label, _deepest(swept))
    if not by_sweep:
        return None, None, None
    (_, (alpha, label, deepest)), *others = by_sweep.items()
    if others:  # one acceptance per file: the first sweep's, the others named (a workload each)
        label += "; the file keeps this sweep's alone: " + ", ".join(
            f"sweep {sweep} gave alpha {a:.3f} ({keyword_and_flag('alpha')} {a:.3f} to answer for it)"
            for sweep, (a, _, _) in others
        )
    return Acceptance(alpha=round(alpha, 4)), label, deepest


def _told_by(runs) -> str:
    """Who gave these runs their acceptance length: their files ("4 runs of a.json recorded"), a saved /metrics page
    where the files record none ("metrics.txt gave 4 runs of b.json"), or both."""
    from specsim.core.words import counted

    parts = []
    for page in dict.fromkeys(c.run.accept_length_page for c in runs):
        named = [c for c in runs if c.run.accept_length_page == page]
        files = ", ".join(sorted({c.run.name for c in named}))
        parts.append(
            f"{counted(len(named), 'run')} of {files} recorded"
            if page is None
            else f"{page} gave {counted(len(named), 'run')} of {files}"
        )
    return " and ".join(parts)


def recorded_shares(fit, sweep: str | None = None) -> tuple[tuple, int] | None:
    """(c_1..c_K, runs): the per-position acceptance shares the recorded chain runs of ``sweep`` (default: the first
    sweep measured on real prompts, the one the calibration file keeps) counted, pooled over those at the most positions
    any of them counted (:func:`specsim.calibration.runs.pooled_shares`); None where none counted them."""
    from specsim.calibration.runs import pooled_shares, told_acceptance

    real = [c for c in fit.runs if c.kind == "spec" and c.setup.pinned_accept_length is None]
    if sweep is None:
        sweep = next(iter(dict.fromkeys(c.sweep for c in real)), None)
    told = told_acceptance(real).get(sweep, [])
    depth = max((len(t[3]) for t in told if t[3] is not None), default=0)
    pooled = pooled_shares(told, depth)
    return None if pooled is None else (tuple(round(float(c), 4) for c in pooled[0]), pooled[1])


def _shape(shares: tuple, runs: int) -> str:
    """The recorded per-position shares beside alpha^k at the alpha that gives their acceptance length at their depth:
    where they fall faster or slower than a constant rate's, one alpha misstates other depths, which is why answers
    from the file take the shares (:func:`specsim.calibration.file.read_calibration`)."""
    import numpy as np

    from specsim.speculation.acceptance import alpha_from_acceptance_length

    k = len(shares)
    alpha = float(alpha_from_acceptance_length(min(1.0 + sum(shares), k + 1.0), k))
    chain = alpha ** np.arange(1, k + 1)
    gap = float(np.max(np.abs(np.asarray(shares) - chain)))
    return (
        f"per-position acceptance {', '.join(f'{c:.3f}' for c in shares)} recorded at {k} positions (pooled over "
        f"{runs} run{'s' if runs != 1 else ''}; at fewer draft steps a run that records none takes their sum) against "
        f"alpha^k {', '.join(f'{c:.3f}' for c in chain)} at the alpha {alpha:.3f} of their length: at most "
        f"{gap:.3f} apart; answers from the file take the shares (read_calibration)"
    )


def _steps(runs: list) -> list[int]:
    """The numbers of draft steps ``runs`` drafted, in order."""
    return sorted({int(c.setup.steps) for c in runs if c.setup is not None and c.setup.steps})


def _deepest(runs: list) -> int | None:
    """The deepest draft step ``runs`` measured an acceptance at (None: none)."""
    steps = _steps(runs)
    return steps[-1] if steps else None


def _measured_at(runs: list) -> str:
    """Where an acceptance was measured, in draft steps, and that a longer chain extrapolates it: one rate per token
    carried past the deepest position the runs drafted (an EAGLE head trained for a few steps accepts less beyond)."""
    steps = _steps(runs)
    if not steps:
        return ""
    at = " and ".join(map(str, steps))
    return f" at {at} draft step{'s' if steps != [1] else ''} (one rate per token: a gamma past {steps[-1]} extrapolates it)"


def _num(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


@dataclass(frozen=True, eq=False)
class EngineCalibration:
    """A fit of the engine's terms to the runs, with what the command writes and prints of it."""

    fit: object  #: the :class:`~specsim.calibration.engine_fit.EngineFit`
    deployment: object  #: the deployment the runs were served on, with the preset's terms
    runs: list
    files: list
    notes: list
    target: str  #: the target as given (a built-in name or a config.json)
    drafter: str | None  #: the drafter of the speculative runs (None: plain runs only)
    timing: str
    engine: str  #: the engine and release that served the runs
    target_options: dict  #: tp, weight and KV dtypes as given
    limits: object = None  #: the engine's limits the fit was made under (:class:`specsim.serving.steady.EngineLimits`)
    memory_utilization: float | None = None  #: the engine's memory setting the runs were served at (None: its own)
    floor: PlainFloor | None = None  #: the plain runs under the least the model gives them (:func:`plain_floor`)
    #: where the prefix-cache share the fit took came from (``--prefix-hit`` or a /metrics page's counters; None: none)
    prefix_hit_from: str | None = None
    #: who chose the max_num_seqs of ``limits`` (bench-plan's plan, where the runs are its; None: not said)
    max_num_seqs_from: str | None = None

    def __repr__(self) -> str:  # a notebook's echo: the runs, the held-out error and each term's status, not every run
        kinds = [getattr(r, "kind", None) for r in self.runs]
        held_out = ((self.summary().get("error") or {}).get("held_out")) or {}
        error = ", ".join(
            f"{what} {held_out[key]:.1%}"
            for key, what in (("plain", "plain"), ("spec", "speculative"))
            if held_out.get(key)
        )
        by_status: dict = {}
        for term in self.fit.terms.values():
            by_status.setdefault(term.status, []).append(term.name)
        terms = "; ".join(f"{status}: {', '.join(names)}" for status, names in by_status.items())
        return (
            f"EngineCalibration({self.deployment!r}; {len(self.runs)} runs ({kinds.count('plain')} plain); held-out "
            f"error {error or 'none'}; {terms})"
        )

    def mapping(self) -> dict:
        """The calibration file's content (:func:`specsim.calibration.file.calibration_mapping`), with the acceptance
        measured on real prompts (:func:`measured_acceptance`)."""
        from specsim.calibration.file import calibration_mapping

        acceptance, label, steps = measured_acceptance(self.fit)
        shares = recorded_shares(self.fit) if acceptance is not None else None
        return calibration_mapping(
            self.fit,
            self.deployment,
            self.target,
            self.drafter,
            self.timing,
            self.files,
            acceptance,
            label,
            {k: v for k, v in self.target_options.items() if k != "tp"},
            self.engine,
            self.limits,
            self.memory_utilization,
            steps,
            shares[0] if shares is not None else None,
            self.prefix_hit_from,
            self.max_num_seqs_from,
        )

    def summary(self, out=None) -> dict:
        """What ``calibrate-engine --json`` prints; ``out`` is the calibration file written (None: none)."""
        from specsim.calibration.bench_files import TOOLS

        fit, dep = self.fit, self.deployment
        rows = [
            {
                "file": c.run.where,
                "tool": c.run.tool,
                "kind": c.kind,
                "load": c.run.load,
                "sweep": c.sweep if c.setup else None,
                "steps": c.setup.steps if c.setup else None,
                "accept_length": c.known_accept_length if c.setup else None,
                "accept_length_pinned": bool(c.setup and c.setup.pinned_accept_length is not None),
                # not recorded by this run: its sweep's recorded runs' (runs.with_sweep_acceptance)
                "accept_length_from_sweep": bool(
                    c.setup
                    and c.setup.pinned_accept_length is None
                    and c.run.accept_length is None
                    and c.setup.sweep_accept_length is not None
                ),
                # how a run that recorded none took its sweep's (runs.POOLED_BASES; None: recorded, pinned or fitted)
                "accept_length_basis": c.setup.sweep_accept_basis if c.setup else None,
                # P(drafted token k accepted), k = 1..steps, where the file counted them (vLLM)
                "per_position": list(c.run.per_position) if c.run.per_position else None,
                "dataset": c.run.dataset,
                "judged_by": c.run.observable,
                "statistic": c.run.statistic,
                "measured": float(c.run.value),
                "fitted": _num(fit.predicted[i]),
                "held_out_load": _num(fit.held_out[i]),
                "held_out_steps": _num(fit.held_out_steps[i]),
                "held_out_sweep": _num(fit.held_out_sweep[i]),
                "preset": _num(fit.preset[i]),
                "prefill_share": _num(fit.prefill_share[i]),
                "ttft_s": c.run.ttft_s,
                "fitted_ttft_s": _num(fit.ttft[i]),
            }
            for i, c in enumerate(fit.runs)
        ]
        which = ("held_out", "held_out_steps", "held_out_sweep", "predicted", "preset")
        return {
            "runs": rows,
            "tools": sorted({TOOLS[c.run.tool] for c in self.runs}),
            "deployment": dep.identity(),
            "provenance": dep.provenance(),
            "engine_preset": dep.engine.key,
            "terms": {name: t.to_dict() for name, t in fit.terms.items()},
            "acceptance": {k: t.to_dict() for k, t in fit.acceptance.items()},
            # sweep -> how far its fitted acceptance moved with every measured time 1e-9 longer or shorter (not pinned; kept)
            "unpinned": dict(fit.unpinned),
            "compute_eff": fit.deployment.hardware.compute_eff,
            "bandwidth_eff": fit.deployment.hardware.bandwidth_eff,
            "error": {w: {kind or "all": _num(fit.error(w, kind)) for kind in (None, "plain", "spec")} for w in which},
            "not_held_out": fit.not_held_out,
            "error_by_load": [{"load": load, "plain": _num(p), "spec": _num(s)} for load, p, s in fit.error_by_load()],
            "speedup": [{"group": g, "measured": m, "held_out": p} for g, m, p in fit.speedups(fit.held_out)],
            "plain_floor": None if self.floor is None else self.floor.to_dict(fit),
            "warnings": list(fit.warnings),
            "notes": list(self.notes),
            # runs at a rate past what the fitted engine serves, timed as the full engine (RunModel.full_said)
            "fit_notes": list(fit.notes),
            "residual_dof": fit.dof,
            "calibration": str(out) if out else None,
            "use": f"specsim optimal-gamma --calibration {out or 'calibration.yaml'}",
        }


@dataclass(frozen=True)
class PlainFloor:
    """The plain runs that took less than the least the model can give them: their step with every value a fit varies
    to shorten it at its bound (no engine time per iteration or per sequence, prompts at the fastest the fit allows, a
    roofline's efficiency at its highest), which leaves the step-time source's own pass and the engine time a fit holds
    (its time per tensor-parallel collective, which calibrate-engine does not fit).  Their error, fitted or held out, is
    that floor's at their loads, not a fit's scatter: no fitted term reaches them.

    ``runs``: indices into the fit's runs; ``least``: the model's least for each, in the run's observable (seconds, or
    output tokens per second, then the most); ``over``: how much slower than measured that least is (a share).  The
    parts, at the first of them (the lowest load): ``batch`` sequences decoding over ``context`` cached tokens, the
    source's GPU pass ``source_s`` and the engine's held ``collectives`` x ``collective_s``.
    """

    runs: tuple
    least: tuple
    over: tuple
    source: str
    batch: float
    context: float
    source_s: float
    collective_s: float
    collectives: int

    def to_dict(self, fit) -> dict:
        return {
            "loads": [fit.runs[i].run.load for i in self.runs],
            "least": list(self.least),
            "over": list(self.over),
            "source": self.source,
            "batch": self.batch,
            "context": self.context,
            "source_s": self.source_s,
            "collective_s": self.collective_s,
            "collectives": self.collectives,
        }


def plain_floor(fit, dep, limits=None, kv_bytes=None) -> PlainFloor | None:
    """The plain runs of ``fit`` (an :class:`~specsim.calibration.engine_fit.EngineFit` on ``dep``, under ``limits`` and
    ``kv_bytes`` as it was fitted) more than the runs' noise under the model's least (:class:`PlainFloor`); None if
    none is.  The noise is :data:`~specsim.calibration.engine_fit.WRONG_ENGINE_ERROR` (a percent or two, 3%)."""
    from specsim.calibration.engine_fit import PREFILL_BOUNDS, WRONG_ENGINE_ERROR
    from specsim.calibration.model import RunModel, scale_upper
    from specsim.describe.parallel import collective_count

    model = RunModel(dep, fit.runs, limits, kv_bytes)
    plain = np.flatnonzero(model.kinds == "plain")
    if not plain.size:
        return None
    scale = scale_upper(dep.hardware) if model.fit_scale else fit.values.scale
    least = dataclasses.replace(
        fit.values, scale=scale, iteration_s=0.0, iteration_seq_s=0.0, prefill_scale=PREFILL_BOUNDS[1]
    )
    model.settle(least)
    predicted, measured = model.predict(least, plain), model.measured[plain]
    rate = model.observable[plain] == "throughput"  # faster is more tokens per second
    over = np.where(rate, measured / predicted, predicted / measured) - 1.0
    under = np.flatnonzero(over > WRONG_ENGINE_ERROR)
    if not under.size:
        return None
    first = plain[under[0]]
    at = model.deployment(least)
    b, L = float(model.batch[first]), float(model.context[first])
    # The decode step at the least, less the engine's time in it (its held collectives: the iteration terms are at 0).
    engine_s = at.engine.iteration_time(b) + at.engine.collectives_s(at.target)
    return PlainFloor(
        tuple(int(plain[k]) for k in under),
        tuple(float(predicted[k]) for k in under),
        tuple(float(over[k]) for k in under),
        dep.source.name,
        b,
        L,
        float(np.asarray(at.decode(b, L).total_s)) - float(engine_s),
        float(at.engine.collective_s),
        collective_count(at.target),  # none on one GPU
    )


def _spec_share_said(dep, limits, memory_utilization: float | None) -> str:
    """The speculative runs' share where their server was started with its own max_num_seqs and its start-up takes
    another share (vLLM profiles a pass at max_num_seqs: :func:`specsim.engines.vllm.start_up`); else nothing."""
    from specsim.serving.capacity import memory_share

    seqs = limits.spec_max_num_seqs
    if seqs is None or seqs == limits.max_num_seqs:
        return ""
    spec = memory_share(dep, memory_utilization, limits.max_batched_tokens, seqs)
    plain = memory_share(dep, memory_utilization, limits.max_batched_tokens, limits.max_num_seqs)
    return "" if spec == plain else f"; the speculative runs' server, at max_num_seqs {seqs}: {spec.where}"


def runs_kv_bytes(dep, runs: list, limits, memory_utilization: float | None = None) -> tuple:
    """(plain, speculating) KV bytes per GPU the runs' engine holds beside the weights, at ``memory_utilization`` of the
    GPU's memory (the engine's own share unless given) with its token budget ``limits``: what bounds the users each run
    holds (:func:`specsim.serving.steady.engine_population`).  The runs' mean lengths and most draft steps size a hybrid
    target's scratch; the free bytes themselves do not depend on them."""
    from specsim.serving.capacity import free_kv_bytes

    return free_kv_bytes(
        dep,
        sum(c.run.prompt_tokens for c in runs) / len(runs),
        sum(c.run.output_tokens for c in runs) / len(runs),
        max((c.setup.steps for c in runs if c.setup is not None), default=1),
        memory_utilization,
        limits.max_batched_tokens,
        limits.max_num_seqs,
        limits.spec_max_num_seqs,
    )


def _queued(over: dict, limits) -> str:
    """The note naming the runs (``over``: kind -> loads) with more users or requests at once than the engine's
    max_num_seqs, which queues the others: by kind where a speculating engine runs fewer (SGLang's 48) or only one kind
    passes it (the plain runs at the same load were named too)."""

    def loads(kind):
        return ", ".join(sorted(over[kind], key=lambda load: float(load.split()[-1])))

    plain, spec = float(limits.seqs(False)), float(limits.seqs(True))
    kinds = sorted(over, key=lambda kind: kind == "spec")  # plain first
    if plain == spec and len(kinds) == 2 and over["plain"] == over["spec"]:
        who, limit = f"runs at {loads('plain')}", f"{plain:g}"
    else:
        who = " and ".join(f"{'speculative' if k == 'spec' else 'plain'} runs at {loads(k)}" for k in kinds)
        limit = ", ".join(f"{spec:g} speculating" if k == "spec" else f"{plain:g} plain" for k in kinds)
    return (
        f"{who} have more users or requests at once than the engine's max_num_seqs {limit}: it runs that many at "
        "once and queues the others, and so does the serving model they are fitted with"
    )


def past_max_num_seqs(runs: list, limits) -> str | None:
    """The first run whose sequences decoding at once (Little's law over its file's duration, TPOT and output: a
    :class:`~specsim.calibration.bench_files.BenchRun`'s ``decode_batch``) pass what the engine's max_num_seqs lets
    in, beyond the slack means of unequal requests take (:data:`~specsim.calibration.bench_files.LITTLE_SLACK`),
    said; else None.  Users past max_num_seqs queue (the serving model holds them); decoding sequences cannot.  A run
    that decodes more than its own concurrency lets in is no limit's to blame: its fields are not of one run, which
    :func:`specsim.calibration.runs.check_runs` says, so it is left to that (it had been told to raise --max-num-seqs,
    which cannot help)."""
    from specsim.calibration.bench_files import LITTLE_SLACK

    def of_one_run(r) -> bool:
        return r.decode_batch is not None and (r.concurrency is None or r.decode_batch <= LITTLE_SLACK * r.concurrency)

    told = [c for c in runs if of_one_run(c.run)]
    # what the runs allow: the most any of them decodes at once, less the slack
    need = max((math.ceil(c.run.decode_batch / LITTLE_SLACK) for c in told), default=0)
    for c in told:
        r, seqs = c.run, float(limits.seqs(c.kind == "spec"))
        if r.decode_batch > LITTLE_SLACK * seqs:
            return (
                f"{r.where}: duration, TPOT and output tokens give {r.decode_batch:.4g} sequences decoding at once "
                f"(Little's law) at {r.load}, more than the engine's max_num_seqs {seqs:g} lets in; these runs need one of "
                f"{need} or more"
            )
    return None


def _paced_said(runs: list) -> str:
    """What the fit leaves out of runs at a Poisson rate: the wait for admission where the engine is full
    (:mod:`specsim.serving.arrivals`), which the answers at ``--rate`` add; "" where no run is paced."""
    from specsim.calibration.runs import load_key

    paced = [c.run for c in runs if c.run.kind == "rate"]
    if not paced:
        return ""
    loads = sorted({r.load for r in paced}, key=load_key)  # by number: as text "rate 1/s" follows "rate 1.5/s"
    by_e2e = sorted({r.load for r in paced if r.observable == "e2e"}, key=load_key)
    sent = {}  # how the files say the runs not sent as Poisson arrivals were sent, with their loads
    for r in paced:
        if r.arrivals is not None:
            sent.setdefault(r.arrivals, []).append(r.load)
    head = (
        f"runs at a rate ({', '.join(loads)}), fitted as Poisson arrivals, the serving model's one open loop, though "
        + "; ".join(
            f"those at {', '.join(sorted(set(at), key=load_key))} were sent at {how}" for how, at in sent.items()
        )
        if sent
        else f"runs at a Poisson rate ({', '.join(loads)})"
    )
    return (
        f"{head}: their fitted TTFT leaves out the wait for admission where the "
        "engine is full (specsim.serving.arrivals), which the answers at a rate add, and no TTFT under load is fitted; "
        + (
            f"those at {', '.join(by_e2e)}, judged by end-to-end latency, are fitted without that wait"
            if by_e2e
            else "they are judged by TPOT, which it does not touch"
        )
    )


def nothing_fitted_said(preset_key: str) -> str:
    """The warning of a fit where nothing was fitted: a file of it answers with the preset's terms, not the engine's."""
    return (
        f"nothing was fitted: every term is held at {preset_key}'s preset or not identified (above), and no "
        f"acceptance was fitted: a calibration file of these runs answers with {preset_key}'s terms, not your "
        "engine's (its error on these runs is the table's)"
    )


def prompts_past_peak_said(fit, dep) -> str | None:
    """A warning where the fitted prefill efficiency has the prompts run faster than the GPU's datasheet peak computes
    them (the roofline's prompts, ``--timing roofline`` or ``hybrid``: the prefill efficiency times the fitted profile's
    compute efficiency above 1), as an engine that served part of each prompt from its prefix cache does: a datasheet
    peak is an estimate, so the fit is kept and said, not refused; None elsewhere."""
    from specsim.calibration.model import PREFIX_CACHE_SAID, _scales

    term, hw = fit.terms.get("prefill_scale"), fit.deployment.hardware
    if term is None or term.status != "fitted" or not _scales(dep.source) or term.value * hw.compute_eff <= 1.0:
        return None
    return (
        f"prefill efficiency x{term.value:.2f} fitted: the prompts ran {term.value * hw.compute_eff:.2f}x as fast as "
        f"{hw.name}'s datasheet peak computes them (at the fitted compute efficiency {hw.compute_eff:.2f}), as where "
        f"the engine served part of each prompt from its prefix cache{PREFIX_CACHE_SAID}: give that share with "
        f"{keyword_and_flag('prefix_hit')} (or a vLLM /metrics page counting vllm:prefix_cache_hits with "
        f"{keyword_and_flag('metrics')}), or check the hardware and the dtypes"
    )


def calibrate_engine(
    runs: list,
    files: list,
    notes: list,
    *,
    hardware,
    target: str,
    engine,
    drafter: str | None = None,
    tp: int | None = None,
    draft_tp: int | None = None,
    timing: str | None = None,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    limits=None,
    prefix_hit: tuple | None = None,
    memory_utilization: float | None = None,
    done=None,
    max_num_seqs_from: str | None = None,
) -> EngineCalibration:
    """Fit the engine's terms to ``runs`` (with the ``files`` they were read from and the ``notes`` of reading them),
    served by ``engine`` (``vllm@0.20.0``, or the preset :func:`specsim.engines.get_engine` resolved it to) on ``hardware`` with ``target`` at tensor parallelism ``tp``, the
    speculative runs with ``drafter`` (its TP ``draft_tp``, default the target's), step times from ``timing``
    (:func:`timing_for`), the engine's max_num_seqs and token budget ``limits``
    (:class:`specsim.serving.steady.EngineLimits`; the engine's own on the GPU unless given,
    :func:`specsim.engines.default_limits`, said in the notes), its KV cache at ``memory_utilization`` of the GPU's
    memory (the engine's own share unless given, :func:`specsim.serving.capacity.memory_share`, said in the notes);
    ``weight_dtype`` and ``kv_dtype`` the target's weight and KV-cache formats (None: the model's own, bf16);
    ``prefix_hit``: (the share of the runs' prompt tokens their engine's prefix cache served, where that comes from),
    which the fit's prefills and the file keep (:meth:`specsim.serving.limits.EngineLimits.prompt_split`; default
    none); ``done`` is called after each fit (a progress bar); ``max_num_seqs_from``: who chose the max_num_seqs of
    ``limits`` (bench-plan's plan: :func:`specsim.calibration.plan.servers_max_num_seqs`), which the file keeps and the
    answers from it say where it holds users back.  ``specsim calibrate-engine`` reads the runs from
    benchmark files; a fit needs runs without speculation and with it:

    >>> calibrate_engine([], [], [], hardware="h100-sxm", target="llama-3.1-8b", engine="vllm")
    Traceback (most recent call last):
    ...
    ValueError: no runs to fit: give benchmark runs without speculation and with it
    """
    from specsim.calibration.engine_fit import fit_engine
    from specsim.calibration.inputs import served_target
    from specsim.core.defaults import DEFAULT_DRAFT
    from specsim.describe.models import get_model
    from specsim.engines import get_engine
    from specsim.serving.limits import check_prefix_hit
    from specsim.serving.steady import engine_limits
    from specsim.speculation.deployment import Deployment

    if not runs:
        raise ValueError("no runs to fit: give benchmark runs without speculation and with it")
    target = served_target(target, runs)  # refused where the runs name another model
    engine = get_engine(engine)  # the file keeps the release as named (engine.named_as)

    spec_runs = any(c.kind == "spec" for c in runs)
    # A draft TP other than the target's is passed on, refused there if bad (tp=0 was once dropped as falsy and the
    # runs fitted at TP 1; draft_tp=2 beside tp=1 was dropped unsaid); the target's own is the build's default (a draft
    # model at the target's TP, nothing for a drafter that runs no network, as a plan of n-gram at TP 2 records it).
    draft_options = {"tp": draft_tp} if spec_runs and draft_tp is not None and draft_tp != (tp or 1) else None
    options = (("tp", tp), ("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype))
    target_options = {k: v for k, v in options if v is not None}
    timing, timing_note = timing_for(hardware, timing, get_model(target, **target_options), engine.kernel_engine)
    notes = list(notes) + ([f"step times: {timing_note}"] if timing_note else [])
    # its errors name this function's keywords, not the options they are passed on as (core.names)
    with passed_as({"draft_options['tp']": "draft_tp", "target_options['tp']": "tp"}):
        dep = Deployment.build(
            hardware,
            target,
            (drafter or DEFAULT_DRAFT) if spec_runs else None,
            timing=timing,
            engine=engine,
            target_options=target_options,
            draft_options=draft_options,
            decode_only=not spec_runs,
        )
    if limits is None:
        limits, where = engine_limits(dep.engine, dep.hardware, all(c.run.kind == "batch" for c in runs))
        notes.append(f"engine limits: {limits.label} ({where})")
    if prefix_hit is not None:  # what the runs' prefix cache served: their prefill and budget take the rest
        limits = dataclasses.replace(limits, prefix_hit=check_prefix_hit(prefix_hit[0]))
        notes.append(
            f"prefix cache: {limits.prefix_hit:g} of each prompt's tokens served from it, not prefilled ({prefix_hit[1]})"
        )
    past = past_max_num_seqs(runs, limits)  # (a --max-num-seqs the runs pass is refused where the CLI reads it)
    if past is not None:
        said = given_as("limits.max_num_seqs", "--max-num-seqs")
        notes.append(f"{past}: give {said} as the runs were served with, if it was not this")
    # Users of a closed loop, or an offline batch's requests sent at once (engine_population holds both at the limit).
    at_once = [c.run.concurrency or (c.run.load_value if c.run.kind == "batch" else 0) for c in runs]
    over = {}  # the loads of each kind of run past its engine's max_num_seqs
    for c, n in zip(runs, at_once):
        if n > float(limits.seqs(c.kind == "spec")):
            over.setdefault(c.kind, set()).add(c.run.load)
    # The serving model queues them as the engine does (specsim.serving.steady: N_e = min(N, max_num_seqs, ...)).
    if over:
        notes.append(_queued(over, limits))
    from specsim.serving.capacity import capacity, memory_share

    share = memory_share(dep, memory_utilization, limits.max_batched_tokens, limits.max_num_seqs)
    if memory_utilization is not None:  # a share that leaves the target's weights no room: every answer refuses it
        # Where only the draft's weights or the cache lack room, the runs are fitted and predicted at what the cache
        # holds, and said (RunModel); where the target's do, no answer from the file could be given.
        cap = capacity(
            dep, 1, memory_utilization, max_batched_tokens=limits.max_batched_tokens, max_num_seqs=limits.max_num_seqs
        )
        if not cap.target_fits:
            start = cap.start_up_bytes or 0.0
            raise ValueError(
                f"{given_as('memory_utilization')} {memory_utilization:g} leaves {cap.usable_bytes / 1e9:.1f} GB per GPU"
                + (f" after the engine's start-up (specsim's estimate, {start / 1e9:.2f} GB)" if start else "")
                + f" for {cap.target_weight_bytes / 1e9:.1f} GB of the target's weights: every answer from this "
                "calibration would refuse it; give the share the runs were served at"
            )
    notes.append(
        f"KV cache: the engine's share of memory, {share.where}" + _spec_share_said(dep, limits, memory_utilization)
    )
    from specsim.calibration.runs import SAME_LENGTHS, unpaired_said

    alone = unpaired_said(runs)
    if alone:
        notes.append(
            f"speculative runs at {', '.join(alone)} have no plain run at their load and lengths (within "
            f"{SAME_LENGTHS:.0%}) judged by the same figure: fitted with the others (the plain terms from the other loads and lengths); no "
            "speedup is given there"
        )
    paced = _paced_said(runs)
    if paced:
        notes.append(paced)
    kv = runs_kv_bytes(dep, runs, limits, memory_utilization)
    fit = fit_engine(dep, runs, limits=limits, kv_bytes=kv, done=done)
    from specsim.calibration.file import fitted_any

    if not fitted_any(fit.terms | fit.acceptance):
        fit = dataclasses.replace(fit, warnings=[*fit.warnings, nothing_fitted_said(dep.engine.key)])
    past_peak = prompts_past_peak_said(fit, dep)
    if past_peak:
        fit = dataclasses.replace(fit, warnings=[*fit.warnings, past_peak])
    return EngineCalibration(
        fit,
        dep,
        runs,
        files,
        notes,
        target,
        drafter if spec_runs else None,
        timing,
        engine.named_as,
        target_options,
        limits,
        memory_utilization,
        plain_floor(fit, dep, limits, kv),
        prefix_hit[1] if prefix_hit is not None and limits.prefix_hit else None,
        max_num_seqs_from,
    )
