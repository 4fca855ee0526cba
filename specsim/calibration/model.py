"""The model of benchmark runs: each run predicted from its load and lengths by the serving model, with the values a
fit varies.

A run's prediction is :mod:`specsim.serving.steady`'s, the same serving model every answer uses: its population from
its load (a closed loop of users, Poisson arrivals, an offline batch), lengths and tokens per round
(:func:`~specsim.serving.steady.closed_population`), the decoding step of the deployment at that batch (a decode step,
or a speculative round with the engine's host work, :class:`~specsim.speculation.deployment.RoundTime`), a prompt's
marginal time (:meth:`~specsim.speculation.deployment.Deployment.prefill_s`), and the times composed from them
(:func:`~specsim.serving.steady.closed_loop_times`, :func:`~specsim.serving.steady.open_loop_times`,
:func:`~specsim.serving.steady.offline_times`).  Never from the run's own measured duration or TPOT: a held-out run is
predicted from what a user would know before running it.

What a fit varies (:class:`Values`): the profile's efficiency scale (roofline and hybrid sources), the engine's time per
iteration and per sequence of it, its prefill efficiency, the host terms of a speculative round and the share of them
an overlapping engine hides, and one acceptance rate per sweep whose acceptance is not recorded.  The GPU passes at a
run's batch are computed once per efficiency scale and reused; a closed loop's and an offline batch's batches depend on
the acceptance only, so they are held between fits and settled again after each (:meth:`RunModel.settle`).  Poisson
arrivals' batch feeds back on its own step, steeply near capacity: it is solved at every evaluation, the step taken
linear in the batch about the one held (:meth:`RunModel._rate_times`), and the line re-centred at each settle.  A run
at a rate past what the engine serves there (:func:`~specsim.serving.steady.past_capacity`) is timed as the answers
time it, as the full engine: the closed loop of the N_e it holds, whose queue never runs dry (charged
:func:`~specsim.serving.preemption.saturated_charge`), its TTFT and end-to-end latency inf (not fitted); a run judged by
its end-to-end latency that the values a fit tries take there is fitted to the full engine's and its queue's growth over
its requests (:func:`~specsim.serving.steady.finite_run_wait_s`), a residual finite and continuous at the crossing.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass

import numpy as np

from specsim.calibration.runs import with_sweep_acceptance
from specsim.core.names import given_as
from specsim.core.workloads import mean_context_tokens
from specsim.engines import SpecHost
from specsim.serving.drain import batch_drains
from specsim.serving.preemption import (
    closed_loop_charge,
    drained_charge,
    saturated_charge,
    saturated_kv_bound,
    wave_of,
)
from specsim.serving.steady import (
    EngineLimits,
    admitted_at_once,
    closed_loop_meets,
    closed_loop_times,
    closed_population,
    decode_rounds,
    decode_rounds_spread,
    drained_batch_times,
    engine_population,
    finite_run_wait_s,
    iteration_s,
    offline_times,
    open_batches_s,
    open_loop_itl_s,
    open_loop_times,
    own_step_s,
    past_capacity,
)
from specsim.speculation.acceptance import alpha_from_acceptance_length, tokens_per_round

__all__ = ["RunModel", "Values", "memoised", "scale_upper"]

#: Observables a run is judged by, in the order a tool's record is read (:attr:`BenchRun.observable`).
OBSERVABLE_KEYS = {"tpot": "tpot_s", "e2e": "e2e_s", "throughput": "output_tokens_per_s"}


@dataclass(frozen=True)
class Values:
    """What a fit varies, at one point: the profile's efficiency scale, the engine's time per iteration and per sequence
    of it, its prefill efficiency, the round's host terms and hidden share (None: the version's own), and the acceptance
    rate of each sweep that records none (NaN where not fitted)."""

    scale: float = 1.0
    iteration_s: float = 0.0
    iteration_seq_s: float = 0.0
    prefill_scale: float = 1.0
    host: SpecHost = dataclasses.field(default_factory=SpecHost)
    share: float | None = None
    alphas: tuple = ()

    @classmethod
    def at_preset(cls, engine, alpha: float, sweeps: int) -> "Values":
        """An engine preset as shipped: no efficiency scale, its iteration, prefill and round terms and its own hidden
        share, and ``sweeps`` acceptance rates at ``alpha`` (where a fit starts, and what the preset predicts)."""
        return cls(
            1.0, engine.iteration_s, engine.iteration_seq_s, engine.prefill_scale, engine.spec, None, (alpha,) * sweeps
        )


class RunModel:
    """The runs as arrays, and their predictions for one set of :class:`Values`, through the deployment."""

    def __init__(
        self, dep, runs: list, limits: EngineLimits | None = None, kv_bytes: tuple | None = None, use=None
    ) -> None:
        self._made = (dep, limits, kv_bytes)
        self.dep = memoised(dep)
        # a run without a recorded acceptance takes its sweep's from the recorded runs among ``use`` (default all)
        runs = with_sweep_acceptance(runs, use)
        self.runs = runs
        self.limits = (EngineLimits() if limits is None else limits).for_deployment(dep)
        self.kv_bytes = kv_bytes  # (plain, speculating) KV bytes per GPU beside the weights; None: not bounded
        r = [c.run for c in runs]
        self.kinds = np.array([c.kind for c in runs])
        self.load_kind = np.array([x.kind for x in r])
        self.load = np.array([x.load_value for x in r], dtype=float)
        self.prompt = np.array([x.prompt_tokens for x in r], dtype=float)
        # the prompt tokens each run prefilled and those a prefix-cache hit served (EngineLimits.prompt_split): the
        # prefill's time and the budget take the first, the KV cache holds the whole prompt
        self.prefilled, self.cached = self.limits.prompt_split(self.prompt)
        self.output = np.array([x.output_tokens for x in r], dtype=float)
        self.context = mean_context_tokens(self.prompt, self.output)
        self.steps = np.array([c.setup.steps if c.setup else 0 for c in runs], dtype=float)
        self.spread = np.array([c.setup.acceptance_spread if c.setup else 0.0 for c in runs], dtype=float)
        self.topk = np.array([c.setup.topk if c.setup else 1 for c in runs], dtype=float)
        self.verify = np.array([c.setup.verify if c.setup else 1 for c in runs], dtype=float)
        known = [c.known_accept_length for c in runs]
        self.known_al = np.array([np.nan if k is None else k for k in known], dtype=float)
        # The chain's alpha for each recorded or pinned length, found once (the fit asks for it at every step).
        recorded = ~np.isnan(self.known_al) & (self.steps > 0)
        self.known_alpha = np.zeros(len(runs))
        if recorded.any():
            self.known_alpha[recorded] = alpha_from_acceptance_length(self.known_al[recorded], self.steps[recorded])
        self.sweeps = list(dict.fromkeys(c.sweep for c, k in zip(runs, self.known_al) if np.isnan(k)))
        self.sweep_index = np.array(
            [self.sweeps.index(c.sweep) if np.isnan(k) else -1 for c, k in zip(runs, self.known_al)]
        )
        # Without speculation and with every request alike, a closed loop's users move in step (closed_population).
        self.fixed = np.array([x.fixed_lengths and c.kind == "plain" for x, c in zip(r, runs)])
        self.same_lengths = np.array([bool(x.fixed_lengths) for x in r])  # a full engine's wave (preemption.wave_of)
        self.observable = np.array([x.observable for x in r])
        self.measured = np.array([x.value for x in r], dtype=float)
        self.ttft = np.array([np.nan if x.ttft_s is None else x.ttft_s for x in r], dtype=float)
        # A lone request's TTFT is its prefill and one iteration; under load it is mostly waiting (see residuals).
        self.alone = (self.load == 1) & np.isin(self.load_kind, ("concurrency", "batch"))
        self.completed = np.array([x.completed for x in r], dtype=float)
        # The requests the engine holds: its max_num_seqs (a speculating engine's own where it differs, SGLang's 48)
        # and what its KV cache holds at the run's mean context, as every answer at a load takes them.
        self.in_engine = np.ones(len(runs))
        self.limited_by = np.full(len(runs), "", dtype=object)
        for kind in np.unique(self.load_kind):
            m = self.load_kind == kind
            self.in_engine[m], self.limited_by[m] = engine_population(
                dep, kind, self.load[m], self.prompt[m], self.output[m], self.steps[m], self.limits, kv_bytes
            )
        # An offline run whose KV cache binds on an engine that preempts (vLLM) drains as a closed loop of the N_e it
        # holds, admitting many at once (steady.drained_batch_times, as the answers' offline batches do).
        self.drains = (self.load_kind == "batch") & batch_drains(self.limited_by, self.limits)
        self.admitted = np.zeros(len(runs))
        if self.drains.any():
            at_once = admitted_at_once(dep, self.prompt, self.output, self.steps, self.limits, kv_bytes)
            self.admitted = np.where(self.drains, at_once, 0.0)
        self.fit_scale = _scales(dep.source)
        self.batch = np.ones(len(runs))
        self.batch_own = np.zeros(len(runs))
        # Runs at a rate past what the engine serves at the values last settled: timed as the full engine (settle)
        self.full = np.zeros(len(runs), dtype=bool)
        self._version = 0
        self._cache: dict = {}
        self._populations: dict = {}
        self._deployments: dict = {}
        self._iterations: dict = {}
        self._engines: dict = {}
        self._prompt_passes: dict = {}
        self._scaled: dict = {}
        self._times: dict = {}
        self._charges: dict = {}
        self._counts: dict = {}
        self._shares: dict = {}
        self._acceptances: dict = {}
        self._meets: dict = {}  # id(population), closed loop of users -> (population, steady.closed_loop_meets)

    def pooled_from(self, use: np.ndarray) -> RunModel:
        """This model where the acceptance of runs that record none is pooled from the runs ``use`` only (a held-out
        fit's training runs): itself where that changes nothing."""
        now = [c.known_accept_length for c in self.runs]
        then = [c.known_accept_length for c in with_sweep_acceptance(self.runs, use)]
        if all(a == b or (a is not None and b is not None and np.isclose(a, b, rtol=1e-12)) for a, b in zip(now, then)):
            return self  # (the same records pooled in another order round differently in the last bit)
        return RunModel(self._made[0], self.runs, *self._made[1:], use=use)

    def trained_on(self, use: np.ndarray, nudged: list, start: Values, alpha0: float) -> tuple:
        """(model, its nudged copies, start values) for a fit on runs ``use`` (a held-out fit's training runs): where
        they pool another acceptance for a run that records none (:meth:`pooled_from`), models made again and settled
        at ``start`` with an alpha of ``alpha0`` for each sweep fitted, as the whole fit's before its first fit."""
        model = self.pooled_from(use)
        if model is self:
            return self, nudged, start
        begin = dataclasses.replace(start, alphas=(alpha0,) * len(model.sweeps))
        model.settle(begin)
        return model, [m.pooled_from(use) for m in nudged], begin

    # -- acceptance and populations -------------------------------------------------------------------------------
    def acceptance(self, alphas, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(per-token alpha, tokens per round) of runs ``index``: the recorded or pinned length (and the chain's alpha for
        it), else its sweep's rate; 1 token a round for a plain run.  Read-only, kept for the last few asked: every
        residual asks for them several times (the rounds, the population, a rate run's r(c)), most at the same ones."""
        a = np.asarray(alphas, dtype=float)
        return _kept(self._acceptances, ("alpha", a.tobytes(), index.tobytes()), lambda: self._acceptance(a, index), 64)

    def _acceptance(self, a: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        al = self.known_al[index].copy()
        s = self.sweep_index[index]
        alpha = np.zeros(index.size)
        unknown = s >= 0
        if unknown.any():
            alpha[unknown] = a[s[unknown]]
            al[unknown] = tokens_per_round(alpha[unknown], self.steps[index][unknown])
        spec = (~unknown) & (self.steps[index] > 0)
        alpha[spec] = self.known_alpha[index][spec]
        alpha.flags.writeable = al.flags.writeable = False
        return alpha, al

    def rounds(self, alphas, index: np.ndarray) -> np.ndarray:
        """D, the rounds a request of runs ``index`` decodes (read-only, kept as :meth:`acceptance` is)."""

        def make():
            alpha, al = self.acceptance(alphas, index)
            out = np.asarray(decode_rounds(alpha, self.steps[index], self.output[index] - 1.0, al), dtype=float)
            out.flags.writeable = False
            return out

        key = ("rounds", np.asarray(alphas, dtype=float).tobytes(), index.tobytes())
        return _kept(self._acceptances, key, make, 64)

    def population(self, alphas, index: np.ndarray):
        """The closed-loop population of runs ``index`` (meaningful for the closed loops among them): it depends on the
        runs and their acceptance only, so it is kept for the last few acceptances asked (a fit's engine terms move
        far more often than its acceptances)."""
        alpha, al = self.acceptance(alphas, index)
        key = (index.tobytes(), alpha.tobytes(), al.tobytes())
        return _kept(self._populations, key, lambda: self._population(alpha, al, index), 64)

    def _population(self, alpha: np.ndarray, al: np.ndarray, index: np.ndarray):
        g = self.steps[index]
        fixed = self.fixed[index]
        pops = [
            closed_population(
                alpha[m],
                g[m],
                self.in_engine[index][m],
                self.prefilled[index][m],
                self.output[index][m],
                self.limits,
                al[m],
                fixed_lengths=f,
                users=np.where(
                    (self.load_kind[index][m] == "concurrency") | self.drains[index][m],
                    self.load[index][m],
                    self.in_engine[index][m],
                ),
            )
            for f in (False, True)
            for m in [fixed == f]
            if m.any()
        ]
        if len(pops) == 1:
            return pops[0]
        out = {}
        for field in dataclasses.fields(pops[0]):
            arr = np.empty(index.size)
            for f, p in zip((False, True), pops):
                arr[fixed == f] = getattr(p, field.name)
            out[field.name] = arr
        return type(pops[0])(**out)

    def settle(self, values: Values) -> None:
        """Hold each run's decode batch (and that of the iterations carrying its own prompt) at the serving model's for
        ``values``: a closed loop's from its population, an offline batch its wave, Poisson arrivals' 1 + lambda D t_dec
        and their own prompts' iterations lambda D t_dec, the others an arrival finds (where the line of the step that
        :meth:`_rate_times` solves on is centred; three passes); where that fixed point is past what the engine serves
        (:func:`~specsim.serving.steady.past_capacity`), the full engine's, the closed loop of the N_e it holds
        (:attr:`full`), as the answers at a rate take it."""
        everything = np.arange(len(self.runs))
        batch, own = self.batch.copy(), self.batch_own.copy()
        full = np.zeros(len(self.runs), dtype=bool)
        closed = (self.load_kind == "concurrency") | self.drains
        if closed.any():
            pop = self.population(values.alphas, everything[closed])
            batch[closed], own[closed] = pop.batch, pop.batch_own
        offline = (self.load_kind == "batch") & ~self.drains  # its own: half the wave, where its slowest finish
        batch[offline], own[offline] = self.in_engine[offline], np.maximum(self.in_engine[offline] / 2.0, 1.0)
        rate = self.load_kind == "rate"
        for _ in range(4 if rate.any() else 0):
            self._set_batches(batch, own, full)
            t = self.times(values, everything[rate])
            others = self.load[rate] * self.rounds(values.alphas, everything[rate]) * t["itl_s"]
            # past capacity the open loop's batch is at the engine's bound (its fixed point lies beyond it)
            batch[rate] = np.where(t["past"], self.in_engine[rate], np.minimum(1.0 + others, self.in_engine[rate]))
            own[rate] = np.minimum(others, self.in_engine[rate])  # the others an arrival finds (steady._open_loop)
        if rate.any():  # the fourth pass judged the third's batches, kept; the full engine's population where past
            full[rate] = t["past"]
            batch, own = self.batch.copy(), self.batch_own.copy()
            if full.any():
                pop = self.population(values.alphas, everything[full])
                batch[full], own[full] = pop.batch, pop.batch_own
        self._set_batches(batch, own, full)

    def _set_batches(self, batch: np.ndarray, own: np.ndarray, full: np.ndarray | None = None) -> None:
        full = self.full if full is None else full
        same = np.array_equal(batch, self.batch) and np.array_equal(own, self.batch_own)
        if not (same and np.array_equal(full, self.full)):
            self.batch, self.batch_own, self.full = batch.copy(), own.copy(), full.copy()
            self._version += 1
            self._cache.clear()
            self._times.clear()

    # -- the deployment at a point --------------------------------------------------------------------------------
    def deployment(self, values: Values):
        """The deployment at ``values``: its profile scaled, the engine's iteration and round terms and prefill efficiency
        (the last few kept: a fit asks for the same engine at each of its acceptances)."""
        key = (
            values.scale,
            values.iteration_s,
            values.iteration_seq_s,
            values.prefill_scale,
            values.host,
            values.share,
        )
        return _kept(self._deployments, key, lambda: self._deployment(values), 16)

    def _deployment(self, values: Values):
        dep, _ = self._at_iteration(values)
        return dataclasses.replace(dep, engine=self._engine(values, rounds=True))

    def _at_iteration(self, values: Values) -> tuple:
        """(the deployment at ``values``' efficiency scale, its engine with ``values``' iteration terms and prefill
        efficiency), the last few kept: a fit of the round's host terms asks for the same ones at every step."""
        key = (values.scale, values.iteration_s, values.iteration_seq_s, values.prefill_scale)

        def make():
            dep = self.dep
            if self.fit_scale and values.scale != 1.0:
                dep = _kept(self._scaled, values.scale, lambda: _scaled(dep, values.scale), 16)
            return dep, self._engine(values)

        return _kept(self._iterations, key, make, 16)

    def _engine(self, values: Values, rounds: bool = False):
        """The engine with ``values``' iteration terms and prefill efficiency (and with ``rounds``, its round's host terms
        and hidden share), the last few kept.  Whatever the efficiency scale: a scaled deployment keeps its engine
        (:func:`_scaled` replaces the profile and source), so a fit's step in the scale alone builds no engine (three
        validated engine presets a step were a fifth of the DO files' calibration)."""
        key = (values.iteration_s, values.iteration_seq_s, values.prefill_scale) + (
            (values.host, values.share) if rounds else ()
        )

        def make():
            if rounds:
                share = (
                    {}
                    if values.share is None
                    else {"overlap_share": values.share, "kernel_overlap_share": values.share}
                )
                return dataclasses.replace(self._engine(values), spec=values.host, kernel_spec=values.host, **share)
            engine = self.dep.engine.with_iteration_ms(values.iteration_s * 1e3, values.iteration_seq_s * 1e6)
            return dataclasses.replace(engine, prefill_scale=values.prefill_scale)

        return _kept(self._engines, key, make, 32)

    def _passes(self, values: Values) -> dict:
        """The GPU parts that depend only on the efficiency scale and the held batches: decode steps at each run's
        batch, own batch and nudged batch (:func:`_nudged`), the base pass, a prompt's marginal time (target, and with
        the draft), cached."""
        key = ("passes", round(float(values.scale), 12))
        if key not in self._cache:
            dep = self.deployment(Values(scale=values.scale))
            b = np.maximum(self.batch, 1.0)
            both = np.concatenate([b, np.maximum(self.batch_own, 1.0), _nudged(b)])
            decode = np.asarray(dep.decode(both, np.concatenate([self.context] * 3)).total_s, dtype=float)
            n = len(self.runs)
            self._cache[key] = {
                "decode": decode[:n],
                "decode_own": decode[n : 2 * n],
                "decode_up": decode[2 * n :],
                **self._prompts(dep, values.scale),
            }
        return self._cache[key]

    def _prompts(self, dep, scale: float) -> dict:
        """The passes the batches do not change (a prompt's marginal time, the base passes) at efficiency scale
        ``scale``, the last few kept across settles: a fit's passes after a settle start where the last one ended."""

        def make():
            spec = self.steps > 0
            return {
                "prefill": dep.prefill_s(self.prefilled, draft=spec, cached_tokens=self.cached)
                if len(self.runs)
                else np.zeros(0),
                "base": dep.prefill_base_s(),
                # a prefill batch run apart (SGLang), speculating: the drafter's draft extend passes over it too
                "batch_base": dep.prefill_base_s(draft=spec),
            }

        return _kept(self._prompt_passes, scale, make, 64)

    def _rounds(self, values: Values, index: np.ndarray) -> list:
        """Speculative rounds of runs ``index`` at their batches, own batches and nudged batches (passes with the
        iteration terms, without the host work), one group per draft width, cached per scale and iteration terms."""
        key = ("rounds", round(float(values.scale), 12), values.iteration_s, values.iteration_seq_s, tuple(index))
        if key not in self._cache:
            dep = self.deployment(dataclasses.replace(values, host=SpecHost(), share=None, alphas=()))
            groups = []
            for w in np.unique(self.topk[index]):
                j = np.flatnonzero(self.topk[index] == w)
                i = index[j]
                held = np.maximum(self.batch[i], 1.0)
                b = np.concatenate([held, np.maximum(self.batch_own[i], 1.0), _nudged(held)])
                r = dep.round_time(
                    b,
                    np.concatenate([self.context[i]] * 3),
                    np.concatenate([self.steps[i]] * 3),
                    w,
                    np.concatenate([self.verify[i]] * 3),
                )
                groups.append((j, w, b, r))
            self._cache[key] = groups
        return self._cache[key]

    def steps_s(self, values: Values, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(step at the batch, step at the own batch, step at the nudged batch) of runs ``index``: a decode step with
        the engine's iteration terms, or a round with its host work composed by the round itself (serial, or hidden as
        the engine version hides it); read-only, cached until the batches are settled again.  They depend on the
        efficiency scale, the iteration terms and the round's host terms and hidden share alone: a fit's steps in an
        acceptance or the prefill efficiency (the Jacobian's columns) ask for the same ones.  Keyed by those numbers'
        bits (:func:`_point`), as :meth:`times` is."""
        key = ("steps", _point(values, steps=True), index.tobytes())
        if key not in self._cache:
            steps = self._steps_at(values, index)
            for a in steps:
                a.flags.writeable = False
            self._cache[key] = steps
        return self._cache[key]

    def _steps_at(self, values: Values, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = self._passes(values)
        b, own_b, up_b, spec = self._layout(index)[:4]
        step = p["decode"][index] + values.iteration_s + values.iteration_seq_s * b
        own = p["decode_own"][index] + values.iteration_s + values.iteration_seq_s * own_b
        up = p["decode_up"][index] + values.iteration_s + values.iteration_seq_s * up_b
        if spec.size:
            dep = self._sharing(values.share)
            for j, w, bb, r in self._rounds(values, index[spec]):
                host, hidden = dep.round_host(bb, np.concatenate([self.steps[index[spec][j]]] * 3), w, host=values.host)
                total = np.asarray(r.with_host(host, hidden).total_s, dtype=float)
                n = j.size
                step[spec[j]], own[spec[j]], up[spec[j]] = total[:n], total[n : 2 * n], total[2 * n :]
        return step, own, up

    def _layout(self, index: np.ndarray) -> tuple:
        """What the settled batches and the runs alone decide of runs ``index``, whatever the values: (held batch, own
        batch, nudged batch (:func:`_nudged`), which speculate, each load kind's (kind, mask, runs) in :meth:`_times_at`'s
        order, each observable's mask), read-only, kept until the batches are settled again.  A fit asks for them at
        every residual, the same ones between settles (made there, they were ~4% of tests/test_calibration.py's CPU)."""
        key = ("layout", index.tobytes())
        if key not in self._cache:
            b = np.maximum(self.batch[index], 1.0)
            kind = np.where(self.drains[index], "drain", self.load_kind[index])
            kinds = [
                (k, m, index[m]) for k in ("concurrency", "drain", "rate", "batch") for m in [kind == k] if m.any()
            ]
            seen = {name: self.observable[index] == name for name in OBSERVABLE_KEYS}
            made = (b, np.maximum(self.batch_own[index], 1.0), _nudged(b), np.flatnonzero(self.steps[index] > 0))
            for a in (*made, *(x for k in kinds for x in k[1:]), *seen.values()):
                a.flags.writeable = False
            self._cache[key] = (*made, kinds, seen)
        return self._cache[key]

    def _sharing(self, share: float | None):
        """The deployment whose engine hides ``share`` of a round's host work (None: the version's own), for the round's
        host work at a fit's host terms (:meth:`~specsim.speculation.deployment.Deployment.round_host` takes them):
        that reads the engine's hidden share alone, so a fit's step in a host term makes no engine (a validated preset
        and a deployment at each were 13% of the Python calls of calibrate-engine --plan
        examples/bench/plan/plan.yaml)."""
        if share is None:
            return self.dep
        shared = {"overlap_share": share, "kernel_overlap_share": share}
        return _kept(
            self._shares,
            share,
            lambda: dataclasses.replace(self.dep, engine=dataclasses.replace(self.dep.engine, **shared)),
            16,
        )

    def times(self, values: Values, index: np.ndarray) -> dict:
        """The serving model's times (TPOT, ITL, TTFT, end-to-end, rates) of runs ``index`` at ``values``, the last
        2,048 kept until the batches are settled again (about 7 kB each at 100 runs): a fit asks for the same point
        again (the shipped plan's calibration for 1,688 of its 5,046 points).  The key is the values' bits (:func:`_point`),
        so -0.0 and 0.0 are two points; each call gets its own arrays."""
        key = (_point(values), index.tobytes())
        kept = _kept(self._times, key, lambda: self._times_at(values, index), 2048)
        return {k: v.copy() for k, v in kept.items()}

    def _times_at(self, values: Values, index: np.ndarray) -> dict:
        out = {
            k: np.full(index.size, np.nan)
            for k in ("tpot_s", "itl_s", "ttft_s", "e2e_s", "output_tokens_per_s", "prefill_share")
        }
        out["past"] = np.zeros(index.size, dtype=bool)
        # a run's end-to-end latency as an e2e-judged run's residual takes it: e2e_s, but past capacity at a rate the
        # finite run's (_rate_times)
        out["e2e_run_s"] = np.full(index.size, np.nan)
        if not index.size:
            return out
        step, own_at, up = self.steps_s(values, index)
        p = self._passes(values)
        t_pf = p["prefill"][index] / values.prefill_scale
        base = p["base"] + values.iteration_s + values.iteration_seq_s
        batch_base = p["batch_base"][index] + values.iteration_s + values.iteration_seq_s
        for k, sel, i in self._layout(index)[4]:
            parts = (step[sel], own_at[sel], t_pf[sel], base, batch_base[sel])
            if k in ("concurrency", "drain"):
                t = self._closed_times(values, i, k, *parts)
            elif k == "rate":
                t = self._rate_times(values, i, up[sel], *parts)
                out["past"][sel] = t.pop("past")
            else:
                alpha, al = self.acceptance(values.alphas, i)
                t = offline_times(
                    self.load[i],
                    self.in_engine[i],
                    self.prefilled[i],
                    self.output[i],
                    self.rounds(values.alphas, i),
                    step[sel],
                    t_pf[sel],
                    base,
                    self.limits,
                    decode_rounds_spread(alpha, self.steps[i], self.output[i] - 1.0, self.in_engine[i], self.spread[i]),
                    tail_step_s=own_at[sel],
                )
            for key in out:
                if key != "past":
                    out[key][sel] = t.get(key, t["e2e_s"]) if key == "e2e_run_s" else t[key]
        return out

    def _closed_times(self, values: Values, i: np.ndarray, k: str, step, own_at, t_pf, base, batch_base) -> dict:
        """The times of runs ``i`` as a closed loop (:func:`~specsim.serving.steady.closed_loop_times`): of its users
        (``k`` "concurrency"), of the N_e an offline batch drains through ("drain"), or of the N_e Poisson arrivals past
        its capacity fill, users that never run out ("full"; steady._open_loop's full engine, whose rate is the
        capacity :func:`~specsim.serving.steady.past_capacity` takes), each charged the preemption
        :mod:`specsim.serving.preemption` gives that loop."""
        pop = self.population(values.alphas, i)
        own = own_step_s(pop.batch_own, own_at, step, base)

        def resume_s(L):
            # (the deployment as _passes' prompts take it, prefill efficiency apart; built only where a run is
            # preempted, so that a fit's kept deployments are not pushed out by one it does not use)
            spec = self.steps[i] > 0
            return self.deployment(Values(scale=values.scale)).prefill_s(L, draft=spec) / values.prefill_scale

        # (a full engine's charge depends on its population and acceptance too, through its wave: preemption.wave_of; a
        # closed loop's where lengths vary, closed_loop_charge)
        waved = k == "full" or (k == "concurrency" and not self.same_lengths[i].all())
        alpha = self.acceptance(values.alphas, i)[0] if waved else None

        def counts():
            # (m, L) alone: a resume's time is the last thing each charge asks, of the L it has counted
            args = (self.limits, self.load[i], self.in_engine[i], self.limited_by[i], self.prompt[i], self.output[i])
            wave, unasked = None, lambda L: None
            if waved:
                wave = wave_of(pop, self.limits, self.steps[i], self.same_lengths[i], self.prefilled[i], alpha, args[5])
            if k == "full":
                kv_bound = saturated_kv_bound(self.limited_by[i], self.in_engine[i], self.limits, self.steps[i])
                out = saturated_charge(self.limits, self.in_engine[i], kv_bound, *args[4:], unasked, wave)
            elif k == "concurrency":
                out = closed_loop_charge(*args, unasked, wave)
            else:
                out = drained_charge(*args, unasked)
            return None if out is None else out[:2]

        # The counts depend on the runs and their population alone, kept: a fit's steps in the efficiency scale, the
        # prefill efficiency and the engine's other terms ask for the same ones (unfinished_share's iteration was 17% of
        # the CPU of tests/test_calibration.py's slowest test, re-made at each scale); the charge adds the prompt's
        # time, kept per scale and prefill efficiency (6% of calibrate-engine --plan examples/bench/plan/plan.yaml's).
        wave_key = np.asarray(pop.cycle).tobytes() + alpha.tobytes() if waved else b""
        counted = _kept(self._counts, (k, i.tobytes(), wave_key), counts, 64)
        preempted = None
        if counted is not None:
            key = (k, i.tobytes(), values.scale, values.prefill_scale, wave_key)
            preempted = _kept(self._charges, key, lambda: (*counted, resume_s(counted[1])), 64)
        requests = self.completed[i] if k == "concurrency" else None
        # What the population alone decides of the times (steady.closed_loop_meets), kept with it: a fit's steps in the
        # engine's terms time the same population again (a third of closed_loop_times' CPU in calibrate-engine --plan).
        key = (id(pop), k == "concurrency")
        if key in self._meets and self._meets[key][0] is not pop:  # (an id is not reused while its object is kept)
            del self._meets[key]
        kept = _kept(
            self._meets, key, lambda: (pop, closed_loop_meets(pop, self.prefilled[i], self.limits, requests)), 128
        )
        t = closed_loop_times(
            pop,
            step,
            own,
            t_pf,
            self.load[i] if k == "concurrency" else self.in_engine[i],
            self.output[i],
            self.prefilled[i],
            self.limits,
            requests,
            batch_base,
            preempted,
            kept[1],
        )
        if k == "drain":  # an offline batch that drains through that loop
            t = drained_batch_times(
                t,
                self.load[i],
                self.in_engine[i],
                self.admitted[i],
                self.prefilled[i],
                self.output[i],
                t_pf,
                step,
                batch_base,
                self.limits,
            )
        return t

    def _rate_times(self, values: Values, i: np.ndarray, up, step, own_at, t_pf, base, batch_base) -> dict:
        """The times of runs ``i`` at a Poisson rate: the open loop's (:func:`~specsim.serving.steady.open_loop_times`)
        at its own fixed point, and where that is past what the engine serves (:func:`~specsim.serving.steady.
        past_capacity`, the answers' rule, with the capacity the full engine's rate, charged where it preempts), the
        full engine's (:meth:`_closed_times`), its TTFT and end-to-end latency inf (the queue grows over the run); "past"
        says where.

        The decoding batch is solved at every evaluation, not held: b = 1 + lambda D t_dec, with t_dec the open loop's
        at the step at b, the step taken linear in b about the held batch (its slope from the step there and at the
        nudged batch, :func:`_nudged`).  Near capacity b feeds back steeply on its own step, so a batch held between
        settles left the residual nearly blind to the terms there (a fit of runs at 0.5-0.98x capacity made at known
        terms ended at scale 1, not identified, its runs' TPOT up to 49% off); settling re-centres the line on the
        solution."""
        lam, D, N_e = self.load[i], self.rounds(values.alphas, i), self.in_engine[i]
        held, own_held, nudged = self._layout(i)[:3]
        slope = (up - step) / (nudged - held)
        apart = (batch_base, self.prefilled[i], self.limits.max_batched_tokens) if self.limits.prefill_apart else None

        def step_at(b, k=slice(None)):  # the step at b sequences (and at the own batch), linear about the held ones
            return step[k] + slope[k] * (b - held[k]), own_at[k] + slope[k] * (b - own_held[k])

        def implied(b):  # the batch the open loop whose step is at b implies: 1 + lambda D t_dec
            s = step_at(b)[0]
            return 1.0 + lam * D * open_loop_itl_s(lam, s, t_pf, apart)

        # Newton on b (exact in one step but for prefill batches run apart); none where b grows faster than the batch
        # it implies: no fixed point, past capacity.
        b = held
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            for _ in range(_NEWTON if apart is not None else 1):
                now = implied(b)
                drop = 1.0 - (implied(b + 1.0) - now)
                b = np.where(np.isfinite(now) & (drop > 0.0), np.maximum(b + (now - b) / drop, 1.0), np.inf)
        at = np.minimum(b, N_e)
        others = np.minimum(b - 1.0, N_e)  # the others an arrival finds, lambda D t_dec (steady._open_loop)
        s, s_own = step_at(at)[0], step_at(np.maximum(others, 1.0))[1]
        left = np.maximum(self.limits.prefill_budget(at, self.steps[i]), 1.0)
        k_p = np.maximum(np.ceil(self.prefilled[i] / left), 1.0)
        t = open_loop_times(lam, D, s, own_step_s(others, s_own, s, base), t_pf, k_p, self.output[i], apart)
        t_dec = t["itl_s"]
        with np.errstate(invalid="ignore"):
            budget = np.maximum(self.limits.prefill_budget(np.minimum(b, 1e18), self.steps[i]), 1.0)
            extra = lam * t_pf * t_dec + open_batches_s(t_dec, lam, apart)
            # the capacity, the full engine's rate at its population's batches: r(c), the closed loop of the N_e it
            # holds, charged where its KV cache binds and it preempts (a queue behind it is served at that rate, as
            # steady._open_loop's admission chain takes it; none charged elsewhere, r(c) of steady._engine_rates)
            pop = self.population(values.alphas, i)
            parts = (step_at(pop.batch)[0], step_at(np.maximum(pop.batch_own, 1.0))[1], t_pf, base, batch_base)
            engine = self._closed_times(values, i, "full", *parts)
            past = past_capacity(
                lam * t_pf,
                b,
                N_e,
                lam * self.prefilled[i] * t_dec,
                budget,
                iteration_s(s, extra),
                t_dec,
                lam,
                engine["requests_per_s"],
            )
        if past.any():
            j = np.flatnonzero(past)
            full = {key: np.broadcast_to(value, np.shape(i))[j] for key, value in engine.items()}
            for key in t:
                t[key][j] = full[key] if key not in ("ttft_s", "e2e_s") else np.inf
            # what a run judged by its end-to-end latency is fitted to there: the full engine's, and its queue's growth
            # over the run's requests (steady.finite_run_wait_s), finite where the steady state has none
            t["e2e_run_s"] = t["e2e_s"].copy()
            t["e2e_run_s"][j] = full["e2e_s"] + finite_run_wait_s(
                np.maximum(self.completed[i[j]], 1.0), lam[j], full["requests_per_s"]
            )
        t["past"] = past
        return t

    def settle_start(self, values: Values, preset_key: str) -> None:
        """:meth:`settle` at ``values`` (the preset, where a fit starts), refusing runs the serving model cannot time
        there: a rate past what the engine serves is timed as the full engine (its TPOT and throughput), but its queue
        grows over the run, so a run judged by end-to-end latency alone (no TPOT recorded) has no steady state to fit
        (the solver stopped on it with scipy's "Residuals are not finite in the initial point")."""
        self.settle(values)
        times = self.predict(values, np.arange(len(self.runs)))
        past = [c for c, t in zip(self.runs, times) if not np.isfinite(t)]
        if past:
            # Named with its arm: plain and speculative files written one per rate share their names (rate-1.0.json).
            named = "; ".join(f"{_arm(c)} {c.run.where}: {c.run.load}" for c in past[:3]) + (
                "; ..." if len(past) > 3 else ""
            )
            raise ValueError(
                f"{named} is past what the serving model's engine serves at the preset ({preset_key}'s terms, where "
                "the fit starts) and is judged by end-to-end latency (no TPOT recorded): past capacity the queue grows "
                "over the run, so its end-to-end latency is no steady state to fit; leave it out, give its TPOT, or run "
                "the rate with a concurrency cap (vllm bench serve --max-concurrency, GuideLLM --max-concurrency)"
                + _kept_up_said(past[:3])
            )

    def full_said(self) -> list[str]:
        """A line for each run at a rate the settled values time as the full engine (:attr:`full`): its N_e and what
        holds it (the KV cache or max_num_seqs), its TTFT not fitted."""
        out = []
        for n, c in enumerate(self.runs):
            if self.full[n]:
                kv = saturated_kv_bound(self.limited_by[n], self.in_engine[n], self.limits, self.steps[n])
                out.append(
                    f"{_arm(c)} {c.run.where}: {c.run.load} is past what the fitted engine serves: timed as the full "
                    f"engine (N_e {self.in_engine[n]:.0f}, held by {'its KV cache' if kv else 'max_num_seqs'}), its "
                    "TTFT not fitted (the queue grows over the run)"
                    + (
                        f"; judged by its end-to-end latency, which has no steady state there: fitted as the full "
                        f"engine's and its queue's growth over its {self.completed[n]:.0f} requests (the fluid "
                        "view, specsim.serving.steady.finite_run_wait_s)"
                        if self.observable[n] == "e2e"
                        else ""
                    )
                    + _kept_up_said([c])
                )
        return out

    def predict(self, values: Values, index: np.ndarray) -> np.ndarray:
        """Each run's observable (its TPOT, end-to-end latency or output throughput, as recorded) at ``values``."""
        t, seen = self.times(values, index), self._layout(index)[5]
        out = np.empty(index.size)
        for name, key in OBSERVABLE_KEYS.items():
            out[seen[name]] = t[key][seen[name]]
        return out

    def residuals(self, values: Values, index: np.ndarray, ttft_weight: float = 0.0) -> np.ndarray:
        """Relative errors of runs ``index`` at ``values``: each observable, and (weighted) the recorded TTFT of each run
        whose request waited for no other (one user, or a batch of one).

        Only those: a lone request's TTFT is its prompt's prefill and one iteration, which is what the prefill efficiency
        is.  Under load a closed loop's TTFT is mostly waiting (for the iteration running, and for the other users'
        prompts, which arrive together where users run in step), which the mean-value model gets within 8% of the
        request-level simulator with lengths that vary (``tests/test_steady.py``) and not for users in step, and which
        the server's own queue adds to.  Fitted to those waits, the prefill efficiency absorbs their error and carries it
        into every TPOT at load; there the TPOTs, whose prefill share grows with the load, inform it instead."""
        t, seen = self.times(values, index), self._layout(index)[5]
        pred = np.empty(index.size)
        for name, key in (OBSERVABLE_KEYS | {"e2e": "e2e_run_s"}).items():
            pred[seen[name]] = t[key][seen[name]]
        res = pred / self.measured[index] - 1.0
        if ttft_weight:
            has = np.isfinite(self.ttft[index]) & self.alone[index]
            res = np.concatenate([res, ttft_weight * (t["ttft_s"][has] / self.ttft[index][has] - 1.0)])
        return res


#: Newton steps on a rate run's batch where prefill batches run apart (elsewhere one is exact: the step is linear in b).
_NEWTON = 4


def _nudged(batch: np.ndarray) -> np.ndarray:
    """The batch a rate run's step is also computed at, for its slope in the batch (:meth:`RunModel._rate_times`): 5%
    or one sequence fewer, whichever is more (a secant across the span a settle moves the batch, not a derivative), one
    more below two.  Below, not above: no batch past those the run model holds is asked of the step-time source (a
    kernel table measured up to the engine's max_num_seqs would answer past it from the roofline, and note it)."""
    return np.where(batch >= 2.0, batch - np.maximum(1.0, 0.05 * batch), batch + 1.0)


#: Why a prompt can cost an engine less than specsim charges it, as the notes that suspect it say (the engine's prefix
#: cache served part of it: :meth:`specsim.serving.limits.EngineLimits.prompt_split`, ``--prefix-hit``).
PREFIX_CACHE_SAID = (
    " (vLLM's is on by default, vllm/config/cache.py 0.34.0 L267; a multi-turn benchmark resends each conversation's "
    "history)"
)


def _arm(c) -> str:
    """A run's arm, as its notes name it: plain and speculative files written one per rate share their names."""
    return "plain" if c.setup is None else "speculative"


def _kept_up_said(runs: list) -> str:
    """What the recorded mean TTFT of ``runs`` (judged past what the engine serves) tells: a queue that grew over the
    run makes it long; a short one is an engine that kept up, so the preset or the fit is off for it, not the run; ""
    where none recorded it."""
    ttfts = [f"{c.run.ttft_s * 1e3:.3g} ms" for c in runs if c.run.ttft_s is not None]
    if not ttfts:
        return ""
    return (
        f"; recorded mean TTFT {', '.join(ttfts)}: where it stayed short, your engine kept up at the rate and the "
        f"model's prompts or steps are slower than its, as where it served prompts in part from its prefix cache"
        f"{PREFIX_CACHE_SAID}, which specsim charges in full unless {given_as('prefix_hit')} gives the share "
        "it served; check the hardware, the engine, the tensor parallelism and the dtypes too"
    )


def _point(values: Values, steps: bool = False) -> tuple:
    """``values`` as a key for what :meth:`RunModel.times` keeps (with ``steps``, what :meth:`RunModel.steps_s` reads:
    no prefill efficiency, no acceptance): where every number is a float, their bits (-0.0 and 0.0 two points, as their
    reprs are); else the repr, which was the key everywhere (its dataclass wrapper and float formatting, two a residual,
    were ~3% of tests/test_calibration.py's CPU by cProfile; the bits cost a fifth)."""
    h = values.host
    numbers = (values.scale, values.iteration_s, values.iteration_seq_s) + (() if steps else (values.prefill_scale,))
    numbers += (h.round_s, h.step_s, h.seq_s, h.seq_step_s) + (() if values.share is None else (values.share,))
    numbers += () if steps else values.alphas
    if type(values) is Values and type(h) is SpecHost and all(type(x) is float for x in numbers):
        return (steps, values.share is None, struct.pack(f"{len(numbers)}d", *numbers))
    return (
        steps,
        repr((values.scale, values.iteration_s, values.iteration_seq_s, h, values.share)) if steps else repr(values),
    )


def _kept(store: dict, key, make, size: int):
    """``store[key]``, made by ``make()`` where missing; the store keeps its last ``size`` entries (oldest out first)."""
    if key not in store:
        if len(store) >= size:
            del store[next(iter(store))]
        store[key] = make()
    return store[key]


def memoised(dep):
    """``dep`` with the parts of its source that do not depend on the efficiency kept between calls: answers the same
    passes as ``dep`` gives them, from memory where asked again (a fit's runs at every step, a plan's runs' estimates).

    >>> from specsim.speculation.deployment import Deployment
    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    >>> kept = memoised(dep)
    >>> bool(np.array_equal(kept.decode([1, 8, 64], 1128).total_s, dep.decode([1, 8, 64], 1128).total_s))
    True
    """
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.memo import MemoSource
    from specsim.timing.roofline import RooflineSource

    source = dep.source
    # A roofline's passes are counted once, whatever the efficiency scale (_scaled shares the counts).
    if isinstance(source, HybridSource):
        source = HybridSource(RooflineSource(source.roofline.hardware, {}), MemoSource(source.kernels))
    elif isinstance(source, RooflineSource):
        source = RooflineSource(source.hardware, {})
    else:
        source = MemoSource(source)
    return dataclasses.replace(dep, source=source)


def _scales(source) -> bool:
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.roofline import RooflineSource

    return isinstance(source, (RooflineSource, HybridSource))


def _scaled(dep, scale: float):
    """The deployment with its profile's compute and bandwidth efficiencies times ``scale`` (each at most 1)."""
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.memo import MemoSource
    from specsim.timing.roofline import RooflineSource

    hw = dep.hardware
    hw = dataclasses.replace(
        hw, compute_eff=min(1.0, hw.compute_eff * scale), bandwidth_eff=min(1.0, hw.bandwidth_eff * scale)
    )
    hybrid = isinstance(dep.source, HybridSource)
    roof = RooflineSource(hw, (dep.source.roofline if hybrid else dep.source).counts)
    # Kept: the deployment at one scale asks for the same passes several times (a prompt's base is the base pass).
    source = MemoSource(HybridSource(roof, dep.source.kernels) if hybrid else roof)
    return dataclasses.replace(dep, hardware=hw, source=source)


def scale_upper(hardware) -> float:
    """The largest efficiency scale: where the first of the profile's efficiencies reaches the datasheet peak."""
    return 1.0 / max(hardware.compute_eff, hardware.bandwidth_eff)
