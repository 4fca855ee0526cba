"""The serving model: what an engine iteration costs at a load, and the steady state of that load.

Users benchmark and serve at a *load* (``vllm bench serve --max-concurrency N``, a GuideLLM sweep, Poisson arrivals),
not at a decode batch.  A continuous-batching engine (vLLM, SGLang, TensorRT-LLM) runs iterations; each carries

* the ``b`` sequences that are decoding: one decode token each, or, speculating, one round (gamma draft steps and a
  verification of gamma + 1 tokens; :meth:`specsim.speculation.deployment.Deployment.outcome`), and
* in the token budget left (``max_batched_tokens - b (gamma + 1)``, less a speculating vLLM's drafting slots: one a
  scheduled request for a draft model from 0.28.0; the whole budget where the engine counts only the prompts' tokens
  against it, as SGLang's chunked_prefill_size: :meth:`EngineLimits.prefill_budget`), chunks of the prompts waiting to
  prefill, oldest first (chunked prefill).

An iteration's time is the step of its decoding sequences plus the marginal time of its prompt chunks
(:meth:`Deployment.prefill_s`: the target's, and the drafter's network over the same tokens when speculating, each
prompt costing its whole prefill once however it is cut).  :func:`iteration_s` is that sum, the one home of it: the
steady state below and the request-level simulator (:mod:`specsim.serving.simulator`) both call it.

Steady state (mean-value analysis; every quantity a mean over requests of ``P`` prompt and ``O`` output tokens):

    D    = rounds a request decodes: (O - 1 + overshoot) / E, E the tokens per round, overshoot the mean excess of
           the last round, sum_k k c_k / E for per-position acceptance c_k (renewal theory; 0 without speculation)
    k_p  = iterations a prompt's prefill spans: ceil(P / budget left beside the others decoding), more where the
           prompts that arrive need more of the budget than is left (the prefill queue; then no users move in step)
    w    = iterations a request waits before the scheduler takes it: 1 in a closed loop with others running (the
           user's next request arrives while the next iteration is already running), 0 alone; 1/2 for Poisson arrivals
    C    = w + k_p + D, a request's iterations in the engine

Closed loop of ``N`` users, ``N_e = min(N, max_num_seqs, sequences the KV cache holds)`` of them in the engine (the
others queue: the engine's admission), all quantities explicit, with no division that can vanish:

    b     = 1 + (N_e - 1) D / C                     sequences in an iteration a decoding request sees (itself included)
    t_dec = step(b) + (N_e - 1) t_pf / C            an iteration of its decode phase: the others' prompts ride in it
    t_own = step(b) + t_pf / k_p + (N_e - 1) t_pf / C   an iteration carrying its own prompt's chunk
    TPOT  = D t_dec / (O - 1);   ITL = t_dec (one streamed chunk per round)
    TTFT  = w t_mean + k_p t_own + queue wait;   t_mean = step(b) + N_e t_pf / C
    rate  = N_e / (w t_mean + k_p t_own + D t_dec);   output throughput = rate x O

Where the KV cache holds fewer than N and the engine preempts (vLLM), each request is preempted m times and resumes
L tokens each time (:mod:`specsim.serving.preemption`, derived there from vLLM's rule): the others' resumes ride in
every iteration beside their prompts, (N_e - 1) m t_r / (C + m k_r) with t_r a resume's marginal time and k_r its
iterations; its own take m (k_r t_dec + t_r) of its time in the engine, and it waits m / (2 rate) at the queue's front
(in its decode phase, out of the queue wait: E2E stays N / rate).

Poisson arrivals at ``lambda`` requests/s: a decoding request sees ``b = 1 + lambda D t_dec`` sequences (Little's law
for the others) and ``lambda t_dec`` prompts per iteration, so ``t_dec = step(b) + lambda t_pf t_dec``, solved for
``t_dec`` by bisection.  Where no solution keeps ``b`` within the engine's limits, or the prompts alone need the whole
engine (``lambda t_pf >= 1``) or more than the budget, the load is past the engine's capacity: it is marked
``saturated``, served at the rate of the full engine (the closed loop at its limit), its TTFT unbounded (inf: the queue
grows), never a negative or divergent number.  Where the KV cache holds that full engine and the engine preempts
(vLLM), its queue never runs dry: it is charged as a closed loop of users that never run out
(:func:`specsim.serving.preemption.saturated_charge`).  Below capacity the arrivals that find the engine at N_e (its
admission bound) wait for a request to end: the engine as its flow-equivalent server, departures at the rate of a
closed loop of n users for n up to N_e, a birth-death chain whose queue's mean wait is scaled by M/D/c's factor over
it where every request needs the same iterations (the engine as c servers of fixed work)
(:func:`specsim.serving.arrivals.admission_chain`); it is in TTFT and end-to-end, not in N_e's in-engine count.  With a
queue behind it the full engine serves its charged rate where it preempts, below r(c): the chain's capacity, where the
load turns past capacity and the full engine's output meets the open loop's lambda O.  The
same chain has the engine full a share Q of the time; where its KV cache binds and it preempts, the finishes then are
a full engine's, charged Q times the saturated counts (:func:`specsim.serving.preemption.queued_charge`, in
:func:`open_loop_times`).

An offline batch (``LLM.generate`` of ``N`` prompts at once, ``trtllm-bench``): every prompt prefills (in the budget),
then the ``N`` sequences decode together, in waves of the N_e the engine holds; throughput is ``N O`` over the whole.
Where the KV cache holds fewer than N and the engine preempts (vLLM), it admits far more than N_e on their prompts and
preempts the newest as they grow: the batch runs as a closed loop of N_e whose queue drains
(:func:`specsim.serving.drain.drained_times`, charged :func:`specsim.serving.preemption.drained_charge`).

Checked against the request-level simulator, which plays the same iterations request by request
(``tests/test_steady.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from specsim.core.defaults import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS
from specsim.serving.arrivals import GRID, admission_chain, admission_grid, cells_apart, landed_iteration_s, on_grid
from specsim.serving.bursts import burst_clustering, burst_iterations, burst_riding
from specsim.serving.decoding import decoding_step, kept_seconds
from specsim.serving.drain import batch_drains, drained_times
from specsim.serving.limits import EngineLimits, check_limits, engine_limits
from specsim.serving.preemption import (
    closed_loop_charge,
    drained_charge,
    queued_charge,
    saturated_charge,
    saturated_kv_bound,
    wave_of,
)
from specsim.serving.rounds import decode_rounds, decode_rounds_sd, decode_rounds_spread

__all__ = [
    "DEFAULT_MAX_BATCHED_TOKENS",
    "DEFAULT_MAX_NUM_SEQS",
    "EngineLimits",
    "check_limits",
    "engine_limits",
    "engine_population",
    "finite_run_wait_s",
    "LOAD_KINDS",
    "SteadyState",
    "decode_rounds",
    "decode_rounds_spread",
    "iteration_s",
    "kv_sequences",
    "landed_iteration_s",
    "open_loop_itl_s",
    "past_capacity",
    "preemption_expected",
    "served_state",
    "steady_state",
]

#: The kinds of load: a closed loop of users, Poisson arrivals, an offline batch.
LOAD_KINDS = ("concurrency", "rate", "batch")
#: Iterations a closed-loop user's next request waits for: the one already running when it arrives.
CLOSED_LOOP_WAIT = 1.0
#: ... and a Poisson arrival's: on average half of the iteration it lands in, where one is running (open_loop_times).
OPEN_LOOP_WAIT = 0.5
_BISECTIONS = 48


def iteration_s(step_s: object, prefill_s: object = 0.0) -> np.ndarray:
    """One engine iteration: the step of its decoding sequences (a decode step or a speculative round, engine time
    included) plus the marginal time of the prompt chunks riding in it (:meth:`Deployment.prefill_s` of the tokens each
    chunk extends its prompt by).  The one place an iteration's parts are added up.

    >>> round(float(iteration_s(0.010, 0.004)), 6)
    0.014
    """
    return np.asarray(step_s, dtype=float) + np.asarray(prefill_s, dtype=float)


def kv_sequences(kv_capacity_bytes: object, sequence_bytes: object) -> np.ndarray:
    """Sequences a KV cache of ``kv_capacity_bytes`` holds at ``sequence_bytes`` each (inf where unbounded)."""
    cap = np.asarray(kv_capacity_bytes, dtype=float)
    per = np.asarray(sequence_bytes, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isinf(cap), np.inf, np.floor(cap / np.maximum(per, 1.0)))


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields
class SteadyState:
    """A load's steady state per gamma (leading axis) and load (second axis), seconds and tokens.

    ``gamma`` 0 is plain decoding.  Where ``saturated``, the load is past what the engine serves: the rate and TPOT are
    those of the full engine and the TTFT is inf (the queue grows without bound).
    """

    kind: str  #: a key of LOAD_KINDS
    load: np.ndarray  #: users, requests/s or the batch, per load
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    gamma: np.ndarray
    tokens_per_round: np.ndarray  #: E (1 for plain decoding)
    rounds: np.ndarray  #: D, decode iterations per request
    decode_batch: np.ndarray  #: b, sequences in an iteration a decoding request sees
    in_engine: np.ndarray  #: N_e, requests the engine holds (admitted)
    prefill_iterations: np.ndarray  #: k_p
    step_s: np.ndarray  #: the decoding sequences' step (decode step or round) at b
    prefill_s: np.ndarray  #: the marginal time of one prompt
    tpot_s: np.ndarray
    itl_s: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    requests_per_s: np.ndarray
    output_tokens_per_s: np.ndarray
    #: time-weighted mean of the sequences decoding while the engine is busy (idle time left out)
    mean_batch: np.ndarray
    prefill_share: np.ndarray  #: the share of the engine's time its prompts take
    saturated: np.ndarray
    limited_by: np.ndarray  #: "", "max_num_seqs", "kv cache" or "no room" per load: what holds N_e below the load
    outcome: object = None  #: the RoundOutcome at b (its parts), None for plain decoding only
    #: (plain, speculating) KV bytes per GPU beside the weights where the capacity model sized them (:func:`served_state`)
    kv_bytes: tuple | None = None
    #: the part of ``ttft_s`` an arrival waits for admission where the engine is full (an open loop below capacity:
    #: :func:`specsim.serving.arrivals.admission_wait_s`; 0 elsewhere)
    admission_s: object = 0.0
    #: the users that move in step in a closed loop of fixed lengths, g of a convoy (finishing together, arriving
    #: together, each first token behind the group's prompts: :func:`closed_population`); 1 where nothing moves in step
    group: object = 1.0
    #: m, the preemptions charged a request (:mod:`specsim.serving.preemption`; 0 where none are)
    preemptions: object = 0.0
    #: r(c), requests/s, where a Poisson load is past capacity only in the long run: past r_q, the rate of the full
    #: engine with a queue behind it, preempting, but below r(c), that engine's with none queued (:func:`_metastable`);
    #: NaN elsewhere
    unqueued_per_s: object = np.nan


def engine_population(dep, kind, load, P, O, gamma, limits, kv_bytes=None):
    """(N_e, what limits it): the requests an engine of ``limits`` holds at once (its max_num_seqs and the sequences its
    KV cache holds, speculating or not, each at the tokens it holds on average as the engine's KV policy holds them:
    its whole length where the engine reserves it, else about the mean context with its rounds' slots
    (:func:`specsim.serving.kv_blocks.held_tokens`, the simulator's ledger's rule); ``kv_bytes`` the (plain,
    speculating) KV bytes, :func:`specsim.serving.capacity.free_kv_bytes`, else ``limits.kv_capacity_bytes`` for both),
    at least one ("no room" where the cache holds none).  Where the KV cache holds it and the engine takes blocks as
    tokens arrive (vLLM), the engine admits on prompts and preempts as they grow (:func:`preemption_expected`).  The one
    home of the engine's population: the answers at a load and calibrate-engine's runs both take it."""
    from specsim.serving.kv_blocks import held_tokens

    policy = limits.kv_policy
    spec = np.asarray(gamma) > 0
    held = _sequences_held(dep, gamma, limits, kv_bytes, lambda g: held_tokens(policy, P, O, g))
    seqs = limits.seqs(spec)
    cap = np.minimum(seqs, held)
    if kind == "rate":  # the engine holds what arrives, up to its limits
        return np.maximum(cap, 1.0), np.where(np.broadcast_to(held, np.shape(cap)) < 1, "no room", "")
    n_e = np.minimum(load, cap)
    limited = np.where(
        load <= cap, "", np.where(held < 1, "no room", np.where(held < seqs, "kv cache", "max_num_seqs"))
    )
    if kind == "batch":
        # An offline batch's requests decode together only as many as the token budget gives a whole round: the
        # prompts after them wait while the running take the budget (EngineLimits.decoding_scheduled), so the batch
        # runs in waves of that many.  A closed loop and Poisson arrivals need no cap: a prompt prefills only in what
        # the decoding leave, so no more decode than the budget holds (tests/test_steady.py).
        fits = np.maximum(limits.decoding_scheduled(n_e, gamma)[0], 1.0)
        limited = np.where((fits < n_e) & (held >= 1), "max_batched_tokens", limited)
        n_e = np.minimum(n_e, fits)
    return np.maximum(n_e, 1.0), limited


def _sequences_held(dep, gamma, limits, kv_bytes, tokens_of):
    """Sequences the KV cache (``kv_bytes`` (plain, speculating), else ``limits.kv_capacity_bytes``) holds at
    ``tokens_of(gamma)`` tokens each, per gamma: the target's KV, and speculating the draft's and its scratch
    (:func:`specsim.serving.capacity.sequence_kv_bytes`)."""
    from specsim.serving.capacity import sequence_kv_bytes

    spec = np.asarray(gamma) > 0
    kv = np.where(spec, *kv_bytes[::-1]) if kv_bytes is not None else np.full(spec.shape, limits.kv_capacity_bytes)
    per_plain = sequence_kv_bytes(dep, tokens_of(0), with_draft=False)
    per_spec = (
        sequence_kv_bytes(dep, tokens_of(gamma), with_draft=True, draft_tokens=np.maximum(np.max(gamma), 1))
        if dep.drafter is not None
        else per_plain
    )
    return kv_sequences(kv, np.where(spec, per_spec, per_plain))


def admitted_at_once(dep, P, O, gamma, limits, kv_bytes=None) -> np.ndarray:
    """N_0: the requests of a burst (an offline batch) that an engine of ``limits`` admits at once, per gamma: those
    whose admission fits beside the others' (:func:`specsim.serving.kv_blocks.admission_tokens`: the prompt's blocks for
    vLLM, far more than the N_e it holds at their mean context; the whole length where the engine reserves it), at most
    max_num_seqs.  The token budget takes them one chunk at a time (:func:`burst_iterations`), and those admitted first
    grow meanwhile: not counted.  On an H100 with Llama-3.1-8B at 1,000/8,000 tokens this gives 496 plain and 382
    speculating with Llama-3.2-1B, where the simulator admitted 482 and 355 in its first 20 s (the 59 iterations 482
    prompts take through a budget of 8,192 grow each by a few dozen tokens; ``benchmarks/steady_vs_sim_open.py``)."""
    from specsim.serving.kv_blocks import admission_tokens

    held = _sequences_held(dep, gamma, limits, kv_bytes, lambda g: admission_tokens(limits.kv_policy, P, O))
    return np.minimum(limits.seqs(np.asarray(gamma) > 0), held)


def preemption_expected(state: "SteadyState", limits: EngineLimits) -> np.ndarray:
    """Where (per gamma and load) an engine of ``limits`` is expected to preempt: its KV cache holds fewer requests than
    the load brings and it takes blocks as tokens arrive, admitting on the prompts' (vLLM; its
    :class:`~specsim.engines.engine.KvPolicy`), so that the requests it admitted last are preempted as the others grow
    and recompute their tokens when admitted again (:class:`specsim.serving.kv_blocks.KvBlocks` plays it; a closed
    loop's steady state charges the recompute and the wait at the queue's front in the mean,
    :mod:`specsim.serving.preemption`, and so is a Poisson load's past the capacity of the full engine the cache holds,
    marked ``capacity``, and below that capacity where its Poisson swings fill the cache, the ``preemptions`` charged
    :func:`specsim.serving.preemption.queued_charge`, and an offline batch's as its queue drains,
    :func:`specsim.serving.preemption.drained_charge`)."""
    gamma = np.asarray(state.gamma).reshape(-1, 1)
    kv_full = (np.asarray(state.limited_by) == "capacity") & (state.in_engine < limits.seqs(gamma > 0))
    swings = np.asarray(state.preemptions) > 0.0
    kv_bound = np.broadcast_to((np.asarray(state.limited_by) == "kv cache") | kv_full | swings, state.tpot_s.shape)
    return kv_bound & bool(limits.kv_policy.preempts)


def _prefill_iterations(P, budget_left, demand_iterations):
    """k_p: iterations a prompt of P tokens spans at ``budget_left`` tokens an iteration, at least the iterations the
    queue of prompts needs (``demand_iterations``)."""
    return np.maximum(np.maximum(np.ceil(P / budget_left), 1.0), demand_iterations)


def steady_state(
    dep,
    acceptance,
    gamma,
    load,
    input_tokens,
    output_tokens,
    kind: str = "concurrency",
    limits: EngineLimits | None = None,
    kv_bytes: tuple | None = None,
    context: object = None,
    fixed_lengths: bool = False,
    requests: object = None,
    acceptance_spread: float = 0.0,
) -> SteadyState:
    """The steady state of ``load`` (users, requests/s or an offline batch, by ``kind``) of requests of
    ``input_tokens`` in and ``output_tokens`` out, plain (gamma 0) and speculating each gamma; ``fixed_lengths``: every
    request has exactly these lengths (a closed loop's plain users then move in step, :func:`closed_population`);
    ``requests``: a closed loop's run of that many requests, from all users starting at once (its means, not the limit,
    :func:`closed_loop_times`); ``acceptance_spread``: the standard deviation of the acceptance rate across the
    prompts, which an offline batch's slowest request waits for (:func:`decode_rounds_spread`; the other loads' means
    do not depend on it).

    ``limits`` default to :class:`EngineLimits`'s (the commands and :mod:`specsim.answers` give the engine's own on the
    GPU, :func:`specsim.engines.default_limits`).
    ``gamma`` gives the leading axis, ``load`` (with the lengths broadcast to it) the second.  ``kv_bytes`` is the KV
    cache (plain, speculating) in bytes per GPU (default: ``limits``'s, unbounded unless set); ``context`` the mean
    cached context of a decoding sequence (default prompt plus half the output).  See the module's docstring.

    >>> from specsim.speculation.deployment import Deployment
    >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    >>> s = steady_state(dep, 0.8, [0, 4], [1, 64], 1000, 256)
    >>> [[round(float(t) * 1e3, 2) for t in row] for row in s.tpot_s]
    [[6.53, 15.23], [3.46, 11.31]]
    """
    if kind not in LOAD_KINDS:
        raise ValueError(f"a load is one of {', '.join(LOAD_KINDS)}, got {kind!r}")
    limits = (EngineLimits() if limits is None else limits).for_deployment(dep)
    x = np.atleast_1d(np.asarray(load, dtype=float))
    P = np.broadcast_to(np.asarray(input_tokens, dtype=float), x.shape).astype(float)
    O = np.broadcast_to(np.asarray(output_tokens, dtype=float), x.shape).astype(float)
    if np.any(x <= 0) or not np.all(np.isfinite(x)):
        raise ValueError(f"a {kind} must be a finite number > 0, got {load!r}")
    if np.any(O < 2) or np.any(P < 0):
        raise ValueError(
            "a request needs at least 2 output tokens (TPOT times the tokens after the first) and a prompt >= 0"
        )
    g = np.atleast_1d(np.asarray(gamma, dtype=float)).reshape(-1, 1)
    L = P + O / 2.0 if context is None else np.broadcast_to(np.asarray(context, dtype=float), x.shape)
    spec = np.broadcast_to(g > 0, (g.shape[0], x.size))
    # the prompt's tokens a prefix-cache hit leaves to prefill, over those it serves (EngineLimits.prompt_split): the
    # prefill's time and the budget take those; the KV cache holds the whole prompt
    new, cached = limits.prompt_split(P)
    if limits.include_prefill:
        t_pf = dep.prefill_s(new, draft=spec, cached_tokens=cached)
    else:
        t_pf, P, new, cached = np.zeros(spec.shape), np.zeros_like(P), np.zeros_like(P), np.zeros_like(P)
    n_e, limited = engine_population(dep, kind, x, P, O, g, limits, kv_bytes)
    steps = _Steps(dep, acceptance, g, L, fixed_lengths, cached)
    if kind == "rate":
        state = _open_loop(steps, x, new, O, t_pf, n_e, limited, limits)
    elif kind == "batch":
        admitted = admitted_at_once(dep, P, O, g, limits, kv_bytes)
        state = _offline(steps, x, new, O, t_pf, n_e, limited, limits, acceptance_spread, admitted)
    else:
        state = _closed_loop(steps, x, new, O, t_pf, n_e, limited, limits, requests)
    return state if not np.any(cached) else replace(state, input_tokens=P)


class NoRoom(ValueError):
    """The engine cannot hold one request beside the weights (:func:`served_state`'s refusal)."""


def _require_one_request(
    dep, kv: tuple, input_tokens: float, output_tokens: float, share, limits, users: int | None = None
) -> None:
    """Refuse a load answer whose plain engine cannot hold one request of these lengths beside the weights: an engine
    that cannot start has no TPOT to give.  A speculating engine without that room is answered, its gammas marked
    "no room" (:func:`engine_population`), and the answer then does not speculate."""
    from specsim.serving.capacity import no_room_at, sequence_kv_bytes

    context = input_tokens + output_tokens / 2.0
    need = float(sequence_kv_bytes(dep, context, with_draft=False))
    if kv[0] < need:
        longest = input_tokens + output_tokens
        raise NoRoom(no_room_at(dep, False, kv[0], share, limits, longest, need, context, users))


def served_state(
    dep,
    acceptance,
    gammas: list,
    loads,
    input_tokens,
    output_tokens,
    kind: str = "concurrency",
    limits: EngineLimits | None = None,
    memory_utilization: float | None = None,
    context: object = None,
    fixed_lengths: bool = True,
    requests: object = None,
) -> SteadyState:
    """:func:`steady_state` as the answering commands take it: ``limits`` the engine's own on the GPU unless given
    (:func:`engine_limits`), the KV cache the capacity model leaves at ``memory_utilization`` (the engine's own share
    unless given; :func:`specsim.serving.capacity.free_kv_bytes`) with the drafter's scratch sized for the largest of
    ``gammas``, at the requests' mean lengths.  ``fixed_lengths`` is True by default, unlike :func:`steady_state`'s: a
    benchmark's requests all have the lengths given; ``requests`` a closed loop's run of that many (its means).  The one
    home of that assembly: ``specsim optimal-gamma --concurrency``, the public rows' fit
    (:func:`specsim.calibration.fidelity.evaluate_serving`) and bench-plan's estimate of each run all come here."""
    from specsim.serving.capacity import free_kv_bytes

    if limits is None:
        limits, _ = engine_limits(dep.engine, dep.hardware, kind == "batch")
    kv = free_kv_bytes(
        dep,
        float(np.mean(input_tokens)),
        float(np.mean(output_tokens)),
        max(gammas),
        memory_utilization,
        limits.max_batched_tokens,
        limits.max_num_seqs,
        limits.spec_max_num_seqs,
    )
    users = int(np.ceil(np.max(loads))) if kind != "rate" else None  # a concurrency's or a batch's sequences at once
    _require_one_request(
        dep, kv, float(np.mean(input_tokens)), float(np.mean(output_tokens)), memory_utilization, limits, users
    )
    state = steady_state(
        dep,
        acceptance,
        gammas,
        loads,
        input_tokens,
        output_tokens,
        kind,
        limits,
        kv,
        context,
        fixed_lengths=fixed_lengths,
        requests=requests,
    )
    return replace(state, kv_bytes=kv)


class _Steps:
    """The decoding sequences' step of one deployment at one acceptance, per gamma and context: what the serving model
    asks of the deployment (the calibration gives its own, with its fitted terms)."""

    def __init__(self, dep, acceptance, gamma, context, fixed_lengths=False, cached=0.0):
        self.dep, self.acceptance, self.gamma, self.context = dep, acceptance, gamma, context
        self.cached = cached  # a prompt's tokens a prefix-cache hit serves: its KV holds them beside those prefilled
        self.fixed_lengths = fixed_lengths
        self.prefix = dep.drafter is not None and dep.drafter.varies_verification
        self.kept: dict = {}  # batch -> its step seconds (seconds)

    def __call__(self, batch):
        """(step seconds, tokens per round, outcome) at ``batch`` sequences."""
        return decoding_step(self.dep, self.acceptance, self.gamma, batch, self.context)

    def seconds(self, batch) -> np.ndarray:
        """The step seconds of ``self(batch)``, kept (:func:`~specsim.serving.decoding.kept_seconds`)."""
        return kept_seconds(self.kept, self, batch)

    @property
    def base_s(self) -> float:
        """The pass of an iteration that only prefills, beside no decoding sequence (:meth:`Deployment.prefill_base_s`)."""
        return self.dep.prefill_base_s()

    @property
    def batch_base_s(self) -> np.ndarray:
        """The base pass of a prefill batch run apart (:attr:`EngineLimits.prefill_apart`), per gamma: speculating, the
        drafter's draft extend passes over the batch too."""
        return self.dep.prefill_base_s(draft=np.asarray(self.gamma) > 0)


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields
class Population:
    """Where a load's requests spend their iterations (the module's docstring): the part of the serving model that does
    not depend on how long an iteration takes, for a closed loop."""

    in_engine: np.ndarray  #: N_e
    wait: np.ndarray  #: w
    rounds: np.ndarray  #: D
    prefill_iterations: np.ndarray  #: k_p
    cycle: np.ndarray  #: C = w + k_p + D
    group: np.ndarray  #: g, the users that move in step (1 unless lengths are fixed and nothing is random)
    batch: np.ndarray  #: b = g + (N_e - g) D / C, the sequences a decoding request's iterations carry
    batch_own: np.ndarray  #: (N_e - g) D / C, those of the iterations that carry its own prompt
    #: Whether the users move in convoys (lengths fixed, nothing random): groups of g, a group of one included, each
    #: prefilling in its own iterations, the next arriving during them (:func:`convoy_prompts`).
    convoy: np.ndarray
    #: Prompt tokens an iteration carrying a request's own prompt takes beside the others decoding (None: not known).
    own_budget: np.ndarray | None = None
    #: The standard deviation of a request's rounds where every request has the same lengths and speculates
    #: (acceptance's chance alone, :func:`decode_rounds_sd`); inf where lengths vary, whose spread parts a run's first
    #: burst at once, and for plain users (None: not known, as inf).
    rounds_sd: np.ndarray | None = None


def closed_population(
    acceptance,
    gamma,
    in_engine,
    input_tokens,
    output_tokens,
    limits: EngineLimits,
    tokens_per_round: object = None,
    fixed_lengths: bool = False,
    users: object = None,
) -> Population:
    """The population of a closed loop of ``in_engine`` requests in the engine: explicit in the lengths, gamma and the
    tokens per round (default the chain's at ``acceptance``); the prefill budget's fixed point in b converges in a few
    passes (b only grows the budget's use).

    ``fixed_lengths``: every request has exactly these lengths.  Without speculation nothing then sets the users apart:
    the requests whose prompts went through one iteration's budget together finish together, and their successors
    arrive together, cycle after cycle (a convoy).  The users move in groups of g = the prompts one iteration's budget
    holds (at most N_e), each group prefilling in its own iterations, outside the others' decode phases (groups of one
    too, where one prompt fills an iteration: a chain, each arriving during the one before's prefill); g = 1, spread
    uniformly, otherwise: a random acceptance or length sets them apart.  A request's own prompt runs beside the others
    decoding (b - g), not beside itself; all N_e prompts that fit the budget with nobody decoding are one convoy that
    waits for no iteration; and where the queue of prompts, not a group's own, sets k_p, every iteration is full of
    whichever prompts wait and nobody moves in step.  ``users``: the closed loop's (default
    ``in_engine``); where more queue than the engine holds, each is let in as another finishes, not during the
    prefill of the one before, and groups of one are spread uniformly (the simulator plays it so)."""
    g = np.asarray(gamma, dtype=float)
    n_e, P, O = (np.asarray(v, dtype=float) for v in (in_engine, input_tokens, output_tokens))
    queued = (n_e if users is None else np.asarray(users, dtype=float)) - n_e
    D = decode_rounds(acceptance, g, O - 1.0, tokens_per_round)
    b = np.ones(np.broadcast_shapes(D.shape, n_e.shape, P.shape))
    # One convoy of all N_e: their prompts fit the budget with nobody decoding (they all finish together and arrive
    # together), so they prefill in one iteration and wait for none.
    whole = fixed_lengths & (g == 0) & (n_e * P <= limits.prefill_budget(0.0, g))

    def grouped(budget):  # the prompts one iteration's budget holds, at most N_e; one where nothing moves in step
        fits = np.minimum(n_e, np.maximum(np.floor(budget / np.maximum(P, 1.0)), 1.0))
        return np.where(whole, n_e, np.where(g > 0, 1.0, fits)) if fixed_lengths else np.ones_like(budget)

    def beside(group):  # a request's own prompt runs beside the others decoding, not beside itself: b - g
        return np.maximum(limits.prefill_budget(np.maximum(b - group, 0.0), g), 1.0)

    def cycle(b):  # the next b from b, with what it was computed from
        left = np.maximum(limits.prefill_budget(b, g), 1.0)
        group = grouped(beside(grouped(left)))
        own_left = beside(group)
        wait = np.minimum(CLOSED_LOOP_WAIT, n_e - group)
        # The prompts of all N_e requests pass through the budget once per cycle of C iterations; a group's together.
        own = np.maximum(np.ceil(group * P / own_left), 1.0)
        k_p = _prefill_iterations(group * P, own_left, n_e * P / left - wait - D)
        C = wait + k_p + D
        return group + (n_e - group) * D / C, (group, own_left, wait, own, k_p, C)

    for _ in range(30):
        new, parts = cycle(b)
        settled = np.isclose(new, b, rtol=1e-9, atol=1e-12)
        b, last = new, b
        if settled.all():
            break
    if not settled.all():
        # Where the decoding sequences alone nearly fill the budget (b (gamma + 1) near it), the passes swing between a
        # b that starves the prompts and one they starve (20-token prompts at a 256-token budget: 255.5, 50.8, 255.5,
        # ...): the next b falls as b grows, so bisection finds the one b it returns.
        lo, hi = np.ones_like(b), np.broadcast_to(np.maximum(n_e, 1.0), b.shape).astype(float)
        for _ in range(_BISECTIONS):
            mid = (lo + hi) / 2.0
            up = cycle(mid)[0] > mid
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        last = np.where(settled, last, lo)
        new, parts = cycle(last)
        b = np.where(settled, new, lo)
    group, own_left, wait, own, k_p, C = parts
    shape = b.shape
    # Where the queue of prompts, not a group's own, sets k_p, every iteration is full of whichever prompts wait, first
    # come first served: the users no longer move in step, and the others' prompts land uniformly (tests/test_steady.py:
    # 8,000-token prompts at a 512-token budget gave a TPOT 9 times the simulator's with convoys kept).
    queue_bound = k_p > own + 1e-9
    return Population(
        np.broadcast_to(n_e, shape),
        np.broadcast_to(wait, shape),
        np.broadcast_to(D, shape),
        k_p,
        C,
        np.broadcast_to(group, shape),
        b,
        b - group,
        np.broadcast_to(np.asarray(fixed_lengths) & (g == 0) & ((group > 1) | (queued <= 0)) & ~queue_bound, shape),
        np.broadcast_to(own_left, shape),
        # plain users of one length move in convoys or are spread by the queue (above), and lengths that vary part the
        # users at once: no parting to follow (inf)
        np.broadcast_to(
            np.where((g > 0) & np.asarray(fixed_lengths, dtype=bool), decode_rounds_sd(acceptance, g, O - 1.0), np.inf),
            shape,
        ),
    )


def convoy_prompts(in_engine: object, group: object, cycle: object, rounds: object, convoy: object = None) -> tuple:
    """(own, waited, decode): the prompts a request of a closed loop meets per cycle, by where: its own group's, which
    share its prefill iteration (itself included); the group's whose prefill is the iteration it waits for; and those
    in its decode phase.  The three sum to ``in_engine``.

    ``convoy``: whether the users move in step (default: groups of more than one).  Without convoys the others'
    prompts land uniformly: N_e / C in the iteration waited for (an average
    one) and (N_e - 1) D / C in the decode phase.  In convoys, the users leave the run's first burst in groups of g
    (the last one the remainder r), whose prefill iterations follow one another, cycle after cycle: group k arrives
    during group k - 1's prefill iteration (group 0 during a decode iteration) and decodes through the prefills of the
    groups after it, and, in the next cycle, of those before k - 1.  So a request meets sum g_k^2 / N_e prompts in its
    own iteration, sum_k g_k g_(k-1) / N_e in the one it waits for, and the rest in its decode phase: with two equal
    groups, half a group in its decode phase where a uniform spread puts a whole one (the simulator plays it so,
    ``tests/test_steady.py``)."""
    n, g = np.asarray(in_engine, dtype=float), np.asarray(group, dtype=float)
    cycle, rounds = np.asarray(cycle, dtype=float), np.asarray(rounds, dtype=float)
    convoy = g > 1 if convoy is None else np.asarray(convoy, dtype=bool)
    full = np.floor(n / g)
    r = n - full * g
    own = np.where(convoy, (full * g**2 + r**2) / n, 1.0)
    # Consecutive groups g, g, ..., g, r: (full - 1) pairs of two full groups and, with a remainder, one (g, r) pair.
    waited = np.where(convoy, (np.maximum(full - 1.0, 0.0) * g**2 + np.where(r > 0, r * g, 0.0)) / n, n / cycle)
    decode = np.where(convoy, n - own - waited, (n - 1.0) * rounds / cycle)
    return own, waited, decode


def own_step_s(batch_own: object, step_at_own: object, step_s: object, base_s: float) -> np.ndarray:
    """The step of an iteration carrying a request's own prompt: that of the ``batch_own`` others decoding beside it
    (``step_at_own``, the step at that batch); below one sequence, partly a prefill-only iteration, which runs the
    base pass (a decode step over no context) instead of a step."""
    others = np.asarray(batch_own, dtype=float)
    share = np.minimum(others, 1.0)
    return np.where(others >= 1.0, step_at_own, (1.0 - share) * base_s + share * np.asarray(step_s, dtype=float))


def prefill_batches(prompts: object, prompt_tokens: object, budget: object, group: object = 1.0) -> np.ndarray:
    """Prefill batches per decoding iteration of an engine that runs them apart (:attr:`EngineLimits.prefill_apart`),
    where ``prompts`` of ``prompt_tokens`` arrive per decoding iteration at ``budget`` tokens a batch: the prompts that
    arrive during one iteration share the next batch (arriving at random, 1 - exp(-prompts) of the iterations are
    followed by one) and each chunk past a prompt's first is a batch of its own; in convoys (``group`` > 1), a group's
    prompts arrive together, ceil(g P / budget) batches a group.

    >>> [round(float(x), 3) for x in prefill_batches([0.01, 1.0, 0.01, 0.1], [1000, 1000, 20000, 1000], 8192, [1, 1, 1, 8])]
    [0.01, 0.632, 0.03, 0.013]
    """
    m, P, g = (np.asarray(v, dtype=float) for v in (prompts, prompt_tokens, group))
    b = np.asarray(budget, dtype=float)
    spread = 1.0 - np.exp(-m) + m * (np.maximum(np.ceil(P / b), 1.0) - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        convoy = m / np.maximum(g, 1.0) * np.maximum(np.ceil(g * P / b), 1.0)
    return np.where(g > 1, convoy, spread)


def open_batches_s(t_dec: object, rate_per_s: object, apart: tuple | None) -> np.ndarray:
    """Under Poisson arrivals at ``rate_per_s``, the prefill batches' base passes per decoding iteration of ``t_dec``
    where prefill runs apart (``apart``: base pass, prompt tokens, budget; :func:`prefill_batches` of the lambda t_dec
    prompts arriving in it), 0 where it does not (``apart`` None)."""
    if apart is None:
        return np.zeros(np.shape(t_dec))
    base, P, budget = apart
    return prefill_batches(np.asarray(rate_per_s, dtype=float) * t_dec, P, budget) * base


def closed_loop_meets(
    population: Population, input_tokens: object = None, limits: EngineLimits | None = None, requests: object = None
) -> dict:
    """What a closed loop's population, its prompts' ``input_tokens``, the ``limits`` and a run's ``requests`` decide of
    :func:`closed_loop_times` whatever an iteration takes: the prompts a request meets per cycle where
    (:func:`convoy_prompts`), those per iteration of its decode phase in the steady state and in the run
    ("arriving_steady", "arriving"), the share of a predecessor's prompt the iteration it waits for carries ("chunk"),
    and a run's waves, first burst and the others' prompts its clusters add ("crowd", :func:`burst_clustering`).
    Apart from closed_loop_times so that a caller timing one population at many steps (calibrate-engine's fit, at every
    residual) keeps them."""
    p = population
    limits = EngineLimits() if limits is None else limits
    P = None if input_tokens is None else np.asarray(input_tokens, dtype=float)
    apart = limits.prefill_apart
    # Where a request meets the prompts of a cycle (convoy_prompts): its own iteration, the one it waits for, its decode.
    own_prompts, waited_prompts, decode_prompts = convoy_prompts(p.in_engine, p.group, p.cycle, p.rounds, p.convoy)
    arriving = decode_prompts / p.rounds  # the others' prompts per iteration of its decode phase, on average
    out = {"own": own_prompts, "waited": waited_prompts, "arriving_steady": arriving, "crowd": None}
    # Prefill apart, it arrives as the iteration after the round its predecessor ended in starts, and the prompts of a
    # round's finishers are prefilled two iterations after it, all in one batch (a prefill batch runs whenever prompts
    # wait): the iteration waited for is a prefill batch where the round before its predecessor's ended requests too,
    # else a round.  A round ends requests with probability q = 1 - exp(-m) (m prompts arriving per round), and a
    # round's finishers make the iteration two after it a prefill batch, which ends none: rounds and batches run as a
    # chain whose rounds with finishers follow another with finishers q / (1 + q) of the time (q = 1: round, round,
    # batch, batch).  So the wait is a batch of the m / q prompts of a round that ended some with probability
    # q / (1 + q), else a round (the simulator plays it so, tests/test_steady.py); in convoys, the group before it's
    # prefill batch.
    if apart:
        out["q"] = 1.0 - np.exp(-arriving)
    # In a chain whose prompts span k_p >= 2 iterations, the wait carries the predecessor's later chunks, full budgets
    # of prompt tokens (its last chunk and its successor's first fill one), at most its whole prompt (taken at the
    # prompt's mean cost per token; docs/serving.md says why this charge, after looking at the simulator's grid).
    chunk = 1.0
    if P is not None and p.own_budget is not None:
        spans = np.maximum(np.ceil(P / p.own_budget), 1.0)
        full = np.minimum(p.own_budget, P) / np.maximum(P, 1.0)
        rest = np.minimum((spans - 1.0) * full, 1.0)  # the predecessor's iterations after the first: full budgets
        chunk = np.where(np.asarray(p.convoy, dtype=bool) & (p.group == 1) & (spans > 1), rest, 1.0)
    out["chunk"] = chunk
    if requests is not None:
        waves = np.maximum(np.asarray(requests, dtype=float) / p.in_engine, 1.0)
        budget = float(limits.max_batched_tokens)
        # The burst's prompts are cut to fill each iteration's budget (chunked prefill): budget / P prompts an iteration.
        out["g0"] = np.minimum(p.in_engine, budget / np.maximum(P, 1.0))
        out["burst"] = burst_iterations(p.in_engine, P, budget)
        out["waves"] = waves
        if p.rounds_sd is not None and not apart:
            # Speculating users of one length part by acceptance alone, so the burst's clusters last many cycles
            # (burst_clustering): an arrival meets kappa times the others' prompts in the iteration it waits for and in
            # its own, and as many fewer in its decode phase (each meets the others' prompts once a cycle).
            kappa = burst_clustering(p.in_engine * P / budget, p.cycle, p.rounds_sd, waves)
            crowd = np.where(p.convoy, 0.0, (kappa - 1.0) * (p.in_engine - 1.0) / p.cycle)
            crowd = np.minimum(crowd * (p.wait * chunk + p.prefill_iterations), decode_prompts)
            out["crowd"], arriving = crowd, arriving - crowd / p.rounds
        # In convoys, the last wave decodes with no prompt arriving after it: the groups after its own in that cycle,
        # (N_e - own) / 2 of them (convoy_prompts).  Spread uniformly, counted by prompt: each of the n - N_e prompts
        # sent after the burst meets the decode phases a steady prompt meets, and the burst's ride in the decode
        # phases of those whose own prompt completed before theirs (burst_riding: none where the burst fits one
        # iteration).
        after = (p.in_engine - own_prompts) / 2.0 / p.rounds
        arriving = np.where(
            p.convoy,
            ((waves - 1.0) * arriving + after) / waves,
            ((waves - 1.0) * arriving + burst_riding(p.in_engine, P, budget) / p.rounds) / waves,
        )
    out["arriving"] = arriving
    if apart:
        out["batches"] = prefill_batches(arriving, P, limits.max_batched_tokens, p.group)
    return out


def closed_loop_times(
    population: Population,
    step_s: object,
    own_s: object,
    prefill_s: object,
    load: object,
    output_tokens: object,
    input_tokens: object = None,
    limits: EngineLimits | None = None,
    requests: object = None,
    base_s: object = 0.0,
    preempted: tuple | None = None,
    meets: dict | None = None,
) -> dict:
    """The times of a closed loop of ``load`` users from its population, the decoding step ``step_s`` at its batch,
    the step ``own_s`` of the iterations carrying a request's own prompt and a prompt's marginal time ``prefill_s``: the
    one home of TPOT, ITL, TTFT, end-to-end latency and rates at a concurrency (the module's docstring; a group of g
    prefills together, its own g prompts in its k_p iterations, the other groups' in its decode phase).

    Where the engine runs prefill apart (``limits.prefill_apart``, SGLang's way), a request's own prompt goes through
    prefill batches of the base pass ``base_s`` and its chunks, and its decode phase waits through the others' prefill
    batches (:func:`prefill_batches`), each the base pass and its prompts' marginal time.

    With ``requests`` (a benchmark's run of that many requests, with ``input_tokens`` and ``limits``), the run's means
    rather than the steady state's: a run of W = n / N_e waves starts with every user's request at once, so the first N_e
    prompts queue for the budget together (iterations each filled with budget / P prompts' tokens; the first wave's mean
    TTFT is :func:`burst_iterations` of them), and its last wave decodes with no prompt arriving beside it (the users
    stop).  Counted by prompt, the others' prefill in the decode phases is ((W - 1) d + r) / W a request, d the steady
    state's and r the burst's prompts left after a first-wave prompt completes (:func:`burst_riding`, none where the
    burst fits one iteration): each of the n - N_e prompts sent after the burst meets the decode phases a steady prompt
    meets.  In convoys, the last wave carries only the groups after its own.  Speculating users of one length part by
    acceptance alone, so the burst's clusters last many cycles: after it an arrival meets kappa times the others'
    prompts in the iteration it waits for and in its own (:func:`burst_clustering`), as many fewer in its decode phase.
    Each user's requests run back to back, so the run's throughput is its N_e users' over the mean end-to-end latency.
    The step is the steady state's: as the users stop, the last wave decodes at a smaller batch (a run of 1.5 waves at
    64 users: 52 sequences beside a request on average in the simulator, 63 in the long run), so such runs' TPOT is
    4-7% over the simulator's where the step grows with the batch.

    ``preempted``: (m, L, t_r) where the engine preempts (:mod:`specsim.serving.preemption`): each request's m resumes of
    L tokens, t_r the marginal time of one.  The others' resumes ride in every iteration beside their prompts; its own
    take ceil(L / budget) iterations each, in which it does not decode, and it waits half an inter-finish interval
    before each; that wait comes out of the queue's (E2E stays N / rate).

    ``meets``: :func:`closed_loop_meets` of the population, ``input_tokens``, ``limits`` and ``requests`` (made here
    where not given): what they alone decide, kept by a caller that times one population at many steps."""
    p = population
    limits = EngineLimits() if limits is None else limits
    meets = closed_loop_meets(p, input_tokens, limits, requests) if meets is None else meets
    O = np.asarray(output_tokens, dtype=float)
    t_pf = np.asarray(prefill_s, dtype=float)
    base = np.asarray(base_s, dtype=float)
    apart = limits.prefill_apart
    # The pass of an iteration carrying a request's own prompt: beside the others decoding, or a prefill batch's own.
    own_pass = base if apart else own_s
    # Its own prompt's iterations: its group's prompts, and, without convoys, the others' as in any iteration.
    beside = np.where(p.convoy, 0.0, (p.in_engine - 1.0) * t_pf / p.cycle)
    m, resume_s, resume_its, resumes = 0.0, 0.0, 0.0, 0.0
    if preempted is not None:
        m, resumed, resume_s = (np.asarray(v, dtype=float) for v in preempted)
        budget = limits.max_batched_tokens if p.own_budget is None else np.maximum(p.own_budget, 1.0)
        resume_its = m * np.maximum(np.ceil(resumed / budget), 1.0)
        # the others' resumes in any iteration: spread over a cycle's iterations, its own resumes' included
        resumes = (p.in_engine - 1.0) * m * resume_s / (p.cycle + resume_its)
        beside = beside + resumes
    t_own = iteration_s(own_pass, meets["own"] * t_pf / p.prefill_iterations + beside)
    # The iteration a request waits for (closed_loop_meets says what it carries): any iteration, on average; in
    # convoys, the prefill of the group before it; prefill apart, a batch of the m / q prompts of a round that ended
    # some with probability q / (1 + q), else a round.
    waited = iteration_s(step_s, meets["waited"] * t_pf * meets["chunk"] + resumes)
    if apart:
        q = meets["q"]
        spread = (np.asarray(step_s, dtype=float) + q * base + meets["arriving_steady"] * t_pf) / (1.0 + q)
        waited = np.where(p.convoy, iteration_s(base, meets["waited"] * t_pf), spread)
    first = p.wait * waited + p.prefill_iterations * t_own
    if requests is not None:
        waves = meets["waves"]
        if meets["crowd"] is not None:
            first = first + meets["crowd"] * t_pf
        first = meets["burst"] * iteration_s(own_pass, meets["g0"] * t_pf) / waves + (1.0 - 1.0 / waves) * first
    others = meets["arriving"] * t_pf + resumes
    if apart:
        others = others + meets["batches"] * base
    t_dec = iteration_s(step_s, others)
    # its own resumes: their iterations, each carrying its resume, in which it holds blocks and does not decode
    resuming = resume_its * t_dec + m * resume_s
    engine_s = first + p.rounds * t_dec + resuming
    rate = p.in_engine / engine_s
    stalled = m / (2.0 * rate)  # before each resume, the rest of an inter-finish interval at the queue's front
    queue_s = np.maximum(np.maximum(np.asarray(load, dtype=float) - p.in_engine, 0.0) / rate - stalled, 0.0)
    decoding = p.rounds * t_dec + resuming + stalled
    return {
        "tpot_s": decoding / (O - 1.0),
        "itl_s": t_dec + (resuming + stalled) / p.rounds,
        "ttft_s": queue_s + first,
        "e2e_s": queue_s + engine_s + stalled,
        "requests_per_s": rate,
        "output_tokens_per_s": rate * O,
        "mean_batch": rate * p.rounds * t_dec,
        "prefill_share": rate * (t_pf + m * resume_s),
    }


def _closed_loop(
    steps: _Steps, N, P, O, t_pf, n_e, limited, limits, requests=None, kv_full=None, drained=False
) -> SteadyState:
    """A closed loop of N users (the module's docstring); ``kv_full``: where the KV cache holds the N_e of an engine
    that Poisson arrivals past its capacity fill, charged as users that never run out (:func:`saturated_charge`);
    ``drained``: the closed loop of N_e that an offline batch of N runs as, charged as its queue drains
    (:func:`drained_charge`), with no queue wait (:func:`drained_times` adds the drain's)."""
    per_round = None
    for _ in range(3):  # E depends on b only for drafters that verify a prefix per request (DSpark, suffix decoding)
        pop = closed_population(steps.acceptance, steps.gamma, n_e, P, O, limits, per_round, steps.fixed_lengths, N)
        step, E, out = steps(pop.batch)
        if not steps.prefix:
            break
        per_round = E
    own = own_step_s(pop.batch_own, steps(np.maximum(pop.batch_own, 1.0))[0], step, steps.base_s)
    resume_s = functools.partial(_resume_s, steps)
    whole = P + steps.cached  # the KV a request holds: its prompt whole, the tokens a prefix-cache hit serves too
    if drained:
        preempted = drained_charge(limits, N, n_e, limited, whole, O, resume_s)
    elif kv_full is None:
        wave = wave_of(pop, limits, steps.gamma, steps.fixed_lengths, P, steps.acceptance, O)
        preempted = closed_loop_charge(limits, N, n_e, limited, whole, O, resume_s, wave)
    else:
        wave = wave_of(pop, limits, steps.gamma, steps.fixed_lengths, P, steps.acceptance, O)
        preempted = saturated_charge(limits, n_e, kv_full, whole, O, resume_s, wave)
    t = closed_loop_times(
        pop, step, own, t_pf, n_e if drained else N, O, P, limits, requests, steps.batch_base_s, preempted
    )
    shape = t["tpot_s"].shape
    return SteadyState(
        "concurrency",
        N,
        P,
        O,
        steps.gamma.astype(int),
        np.broadcast_to(E, shape),
        pop.rounds,
        pop.batch,
        pop.in_engine,
        pop.prefill_iterations,
        np.broadcast_to(step, shape),
        np.broadcast_to(t_pf, shape),
        saturated=np.zeros(shape, dtype=bool),
        limited_by=np.broadcast_to(limited, shape),
        outcome=out,
        group=np.broadcast_to(np.where(pop.convoy, pop.group, 1.0), shape),
        preemptions=0.0 if preempted is None else np.broadcast_to(preempted[0], shape),
        **t,
    )


def _resume_s(steps: _Steps, L: np.ndarray) -> np.ndarray:
    """The marginal prefill time of a resume of L tokens (the target's, and the drafter's where speculating)."""
    return steps.dep.prefill_s(L, draft=np.broadcast_to(steps.gamma > 0, L.shape))


def open_loop_times(
    rate_per_s: object,
    rounds: object,
    step_s: object,
    own_s: object,
    prefill_s: object,
    prefill_iterations: object,
    output_tokens: object,
    apart: tuple | None = None,
    admission_s: object = 0.0,
    preempted: tuple | None = None,
    budget_left: object = 1.0,
) -> dict:
    """The times under Poisson arrivals at ``rate_per_s`` from the decoding step at its batch (``step_s``) and that of the
    iterations carrying a request's own prompt (``own_s``): t_dec = step / (1 - lambda t_pf), the others' prompts riding
    in each iteration; inf where the prompts alone need the whole engine.  The one home of an open loop's times.
    ``admission_s``: the mean wait for admission where the engine is full (:func:`admission_chain`), in TTFT.
    ``preempted``: (m, L, t_r) below capacity where the swings fill a KV cache that preempts
    (:func:`specsim.serving.preemption.queued_charge`): as a closed loop's (:func:`closed_loop_times`), the others'
    resumes ride in every iteration (lambda m t_r a second, beside the prompts' lambda t_pf; the batch ``step_s`` is at
    is the fixed point's with them), its own take ceil(L / ``budget_left``) iterations each and m t_r, and it waits half an
    inter-finish interval, 1 / (2 lambda), at the queue's front before each, all in its decode phase.

    ``apart``: (base pass, prompt tokens, budget) of an engine that runs prefill batches apart
    (:attr:`EngineLimits.prefill_apart`): a request's own prompt goes through prefill batches of the base pass, and
    each decoding iteration is followed by :func:`prefill_batches` of lambda t_dec arriving prompts, so t_dec =
    (step + batches(lambda t_dec) base) / (1 - lambda t_pf), solved by iterating from the bound without batches (the
    batches grow more slowly than t_dec: a contraction wherever lambda base < 1 - lambda t_pf)."""
    lam, t_pf, D = (np.asarray(v, dtype=float) for v in (rate_per_s, prefill_s, rounds))
    m, resume_s, resume_its = 0.0, 0.0, 0.0
    if preempted is not None:
        m, resumed, resume_s = (np.asarray(v, dtype=float) for v in preempted)
        resume_its = m * np.maximum(np.ceil(resumed / np.maximum(budget_left, 1.0)), 1.0)
    share = lam * (t_pf + m * resume_s)
    t_dec = open_loop_itl_s(lam, step_s, t_pf + m * resume_s, apart)
    own = own_s if apart is None else apart[0]
    k_p = np.asarray(prefill_iterations, dtype=float)
    # The iteration an arrival lands in, whose rest it waits for and whose arrivals' prompts ride with its own: a long
    # one, as a random instant falls in long intervals more often than short ones.  Where prefill batches run apart the
    # model's TTFT was within 10% of the simulator's without it and is 27% over with it at 80% of capacity: there it
    # stays the mean iteration.
    landed = landed_iteration_s(t_dec, lam, t_pf) if apart is None else t_dec
    t_own = iteration_s(own, t_pf / k_p + share * landed)
    # An arrival waits for the iteration it lands in only where one is running: the engine is busy while any request
    # is in it, and requests in a system with room for all are Poisson in number (M/G/inf), so busy = 1 - exp(-lambda
    # x a request's time in it).  At a vanishing rate the engine is idle and TTFT is a lone request's.
    with np.errstate(invalid="ignore"):
        busy = -np.expm1(-lam * (D * t_dec + k_p * t_own))
    ttft = OPEN_LOOP_WAIT * np.where(busy > 0.0, busy * landed, 0.0) + k_p * t_own + admission_s
    O = np.asarray(output_tokens, dtype=float)
    shape = np.shape(t_dec)
    # Little's law over the time the engine is busy (idle left out), as the simulator's running batch counts it; a
    # lone request's share of its time in the engine at a vanishing rate.
    with np.errstate(invalid="ignore", divide="ignore"):
        decoding = np.where(busy > 0.0, lam * D * t_dec / busy, D * t_dec / (D * t_dec + k_p * t_own))
    resuming = 0.0  # its own resumes and the waits before them
    if preempted is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            resuming = np.where(m > 0.0, resume_its * t_dec + m * resume_s + m / (2.0 * lam), 0.0)
    return {
        "tpot_s": (D * t_dec + resuming) / (O - 1.0),
        "itl_s": t_dec + resuming / D,
        "ttft_s": ttft,
        "e2e_s": ttft + D * t_dec + resuming,
        "requests_per_s": np.broadcast_to(lam, shape).copy(),
        "output_tokens_per_s": np.broadcast_to(lam * O, shape).copy(),
        "mean_batch": decoding,
        "prefill_share": np.minimum(share, 1.0),
    }


def open_loop_itl_s(rate_per_s: object, step_s: object, prefill_s: object, apart: tuple | None = None) -> np.ndarray:
    """t_dec, the decode iteration of an open loop at ``rate_per_s`` whose decoding step is ``step_s``: step / (1 -
    lambda t_pf), with the prefill batches run apart where ``apart`` says so; inf where the prompts alone need the whole
    engine (:func:`open_loop_times`, whose ITL it is; calibrate-engine's Newton on a rate run's batch asks for it alone).

    >>> open_loop_itl_s([10.0, 70.0], 0.02, 0.015).tolist()  # 0.02 / (1 - 0.15); past, the prompts need 1.05 s a second
    [0.023529411764705882, inf]
    """
    lam, t_pf = np.asarray(rate_per_s, dtype=float), np.asarray(prefill_s, dtype=float)
    share = lam * t_pf
    step = np.asarray(step_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        free = np.where(share < 1.0, 1.0 - share, np.nan)
        t_dec = step / free
        for _ in range(_BISECTIONS if apart is not None else 0):
            t_next = (step + open_batches_s(t_dec, lam, apart)) / free
            if np.array_equal(t_next, t_dec, equal_nan=True):
                break  # a fixed point to the bit: every iteration left would give it again
            t_dec = t_next
        return np.where(np.isfinite(t_dec), t_dec, np.inf)


def _open_fixed_point(steps: _Steps, lam, D, cap, extra, full_engine) -> np.ndarray:
    """t_dec where the iteration at the batch 1 + lambda D t_dec, carrying ``extra(t_dec)`` beside its step, lasts
    t_dec, by bisection; ``full_engine()`` the full engine's state (a closed loop at ``cap``), asked only where the batch
    reaches ``cap`` first."""

    def longer(t_dec):
        """Where the iteration at t_dec's batch is longer than t_dec (the root lies above it), and that batch."""
        b = np.minimum(1.0 + lam * D * t_dec, cap)
        return iteration_s(steps.seconds(b), extra(t_dec)) > t_dec, b

    # The bisection's upper end: an iteration of one sequence, grown by a quarter until the iteration at its batch is
    # no longer (no batch past about 1.25 times the answer's is asked of the step-time source, nor noted).  Where the
    # batch reaches the engine's limit first, the engine full (a closed loop at its limit): no stable load has a longer
    # decode iteration, and a load past its capacity is served at its rate.
    shape = np.shape(cap)
    hi = np.broadcast_to(steps.seconds(np.ones(shape)), shape).astype(float)
    for _ in range(_BISECTIONS):
        up, b = longer(hi)
        if not np.any(up & (b < cap)):
            break
        hi = np.where(up & (b < cap), 1.25 * hi, hi)
    if np.any(up):
        hi = np.where(up, np.broadcast_to(full_engine().itl_s, shape), hi)
    lo = np.zeros(shape)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        up = longer(mid)[0]  # the iteration is longer than assumed
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return hi


def _open_loop(steps: _Steps, lam, P, O, t_pf, n_e, limited, limits) -> SteadyState:
    """Poisson arrivals: bisection on the decode iteration t_dec = step(1 + lambda D t_dec) + lambda t_pf t_dec."""
    g = steps.gamma
    D = decode_rounds(steps.acceptance, g, O - 1.0)
    shape = np.broadcast_shapes(D.shape, np.shape(t_pf), np.shape(n_e))
    cap = np.broadcast_to(n_e, shape)
    apart = (steps.batch_base_s, P, limits.max_batched_tokens) if limits.prefill_apart else None
    # The full engine a load past capacity is served at; where its KV cache holds it, preempting as a closed loop of
    # users that never run out would (specsim.serving.preemption.saturated_charge).
    kv_full = saturated_kv_bound(limited, cap, limits, g)
    held_full = []

    def full_engine():
        if not held_full:
            held_full.append(_closed_loop(steps, cap, P, O, t_pf, cap, limited, limits, kv_full=kv_full))
        return held_full[0]

    def extra(t_dec, share=lam * t_pf):
        """The prompts' time per decoding iteration of t_dec (``share`` of it: their marginal time, and the resumes'
        where charged), and any prefill batches' base pass."""
        return share * t_dec + open_batches_s(t_dec, lam, apart)

    t_dec = _open_fixed_point(steps, lam, D, cap, extra, full_engine)
    b = 1.0 + lam * D * t_dec
    # Arrivals that find the engine full queue until a request ends (specsim.serving.arrivals): the engine as the
    # closed loop of n users at each n up to its bound; service times spread as exponential's unless lengths are fixed.
    # Where the full engine's KV cache binds and it preempts, a queue behind it is served at the charged full engine's
    # rate, below r(c): the capacity the load crosses, where the full engine served past it takes over continuously.
    full_pop = closed_population(steps.acceptance, g, cap, P, O, limits, None, steps.fixed_lengths, cap)
    resume_s = functools.partial(_resume_s, steps)
    floor_of = _queued_floor(full_pop, cap, kv_full, P + steps.cached, O, g, limits, resume_s)
    queued = None if floor_of is None else (floor_of, lambda: full_engine().requests_per_s)
    asked: list = []  # (top, r(n)) of the chain's last rates asked: where a load crossed r_q, its top reached c
    wait, full_share = admission_chain(
        lam,
        cap,
        b,
        lambda top: asked.append((top, r := _engine_rates(steps, P, O, t_pf, top, limits))) or r,
        1.0 - steps.fixed_lengths,
        queued,
        # a pass after the first asks the cells still growing alone (each of its inputs at those cells, as one row)
        (
            lambda top, alone: _engine_rates(
                _Steps(
                    steps.dep,
                    alone(steps.acceptance),
                    alone(steps.gamma, GRID),  # (the rest _engine_rates spreads over each cell's grid itself)
                    alone(steps.context),
                    steps.fixed_lengths,
                    alone(steps.cached),
                ),
                *map(alone, (P, O, t_pf, top)),
                limits,
            )[0]
        )
        if cells_apart(shape, steps.acceptance, steps.gamma, steps.context, steps.cached, P, O, t_pf)
        else None,
    )
    # Below capacity the swings that fill a KV cache that preempts charge a full engine's preemptions, Q of the time:
    # their resumes ride in every iteration beside the prompts, so the fixed point is solved again with them.
    wave = None
    if np.any(np.asarray(full_share) > 0.0) and np.any(kv_full):  # the full engine's wave, its population at N_e
        wave = wave_of(full_pop, limits, g, steps.fixed_lengths, P, steps.acceptance, O)
    charged = queued_charge(limits, full_share, cap, kv_full, P + steps.cached, O, resume_s, wave)
    share = lam * t_pf
    if charged is not None:
        share = lam * (t_pf + charged[0] * charged[2])
        t_dec = _open_fixed_point(steps, lam, D, cap, functools.partial(extra, share=share), full_engine)
        b = 1.0 + lam * D * t_dec
    step, E, out = steps(np.minimum(b, cap))
    left = np.maximum(limits.prefill_budget(b, g), 1.0)
    # r(c) as the chain found it: the wait is unbounded exactly where lambda reaches it (admission_chain asks the
    # closed loop at c only where the rate may reach it, so no batch the answer does not use is asked of the source)
    reached = np.where(np.isfinite(wait), np.inf, lam)
    saturated = past_capacity(
        share, b, cap, lam * P * t_dec, left, iteration_s(step, extra(t_dec, share)), t_dec, lam, reached
    )
    if np.any(saturated):
        full_engine()
    full = held_full[0] if held_full else None
    k_p = _prefill_iterations(P, left, 1.0)
    # The iterations carrying a request's own prompt carry the others decoding, lambda D t_dec as an arrival finds
    # them, not the request itself.
    others = np.minimum(lam * D * t_dec, cap)
    own = own_step_s(others, steps(np.maximum(others, 1.0))[0], step, steps.base_s)
    admission = np.nan_to_num(wait, posinf=0.0)
    t = open_loop_times(lam, D, step, own, t_pf, k_p, O, apart, admission, charged, left)

    def held(name, value):
        """``value``, or where the load is past capacity the full engine's (computed only where one is)."""
        return value if full is None else np.where(saturated, np.broadcast_to(getattr(full, name), shape), value)

    pick = {k: held(k, v) for k, v in t.items()}
    pick.update(ttft_s=np.where(saturated, np.inf, t["ttft_s"]), e2e_s=np.where(saturated, np.inf, t["e2e_s"]))
    pick.update(_metastable(lam, cap, saturated & np.isfinite(reached), queued, *asked[-1]))
    return SteadyState(
        "rate",
        lam,
        P,
        O,
        g.astype(int),
        held("tokens_per_round", E),
        D,
        held("decode_batch", b),
        np.where(saturated, cap, lam * (t["e2e_s"] - np.nan_to_num(wait, posinf=0.0))),
        k_p,
        step,
        t_pf,
        saturated=saturated,
        limited_by=np.broadcast_to(np.where((limited != "no room") & saturated, "capacity", limited), shape),
        outcome=out,
        admission_s=np.where(saturated, 0.0, admission),
        preemptions=held("preemptions", np.broadcast_to(0.0 if charged is None else charged[0], shape)),
        **pick,
    )


def _metastable(lam, cap, crossed, queued, top, rates) -> dict:
    """SteadyState's ``unqueued_per_s``: r(c) where a load ``crossed`` r_q, the rate of the full engine with a queue
    behind it (``queued``: where that is below r(c); None where r_q is r(c)), and is below r(c); NaN elsewhere.
    ``top`` and ``rates``: the admission chain's last numbers in the engine and r at its grid, whose top is c wherever a
    load crossed r_q (the chain asks up to c before it finds a load past r_q), so r(c) is not asked again.

    Such a load is metastable.  Below c the admission chain drifts down to where r(n) meets the load, so the engine
    keeps up with nothing queued until a Poisson swing first fills it; from then a queue behind it is served at r_q,
    less than the load, and does not drain.  The steady state is the second, the long run.  How soon a run comes to it
    is not modelled: the chain's mean first passage to c is 3.6 times the simulator's (a vLLM engine of 127 requests
    at 1,000/256, 18.8/s, 4 seeds), whose number in the system has a tail six times the chain's (P(n >= 0.95 c) 2.3%
    against 0.38% at 17.5/s; prompts arriving in a burst slow every decode beside them, which the flow-equivalent
    server's r(n) does not hold)."""
    r_c = np.asarray(rates)[..., -1]
    meta = crossed & (queued is not None) & (np.asarray(top) >= cap) & (lam < r_c)
    return {"unqueued_per_s": np.where(meta, r_c, np.nan)}


def _queued_floor(population, in_engine, kv_full, whole, O, gamma, limits, resume_s):
    """floor_of(r): a bound under the rate of the full engine that a queue keeps full (:func:`_closed_loop` with
    ``kv_full``, charged :func:`saturated_charge`), from a bound r under its rate with none preempted, r(c), asked of
    no step at its batch (:func:`specsim.serving.arrivals.admission_chain`'s ``queued``); None where nothing is
    charged.  In :func:`closed_loop_times` the charge adds to a request's time in the engine its own resumes' iterations
    and time, its_r t_dec + m t_r, and the others' resumes in each of its C + its_r iterations, (N_e - 1) m t_r / (C +
    its_r) each: at most N_e m t_r + its_r t_dec in all; t_dec is at most the time in the engine with none preempted,
    N_e / r(c), over its D rounds, and D >= (O - 1) / (gamma + 1) (a round emits at most gamma + 1 tokens).  So
    r_q >= 1 / ((1 + its_r / D) / r + m t_r), with m, L and its_r = m ceil(L / budget) the counts of every finish's
    growth (z = 1: the wave's z only lowers them)."""
    charged = saturated_charge(limits, in_engine, kv_full, whole, O, resume_s)
    if charged is None:
        return None
    m, L, t_r = charged
    budget = limits.max_batched_tokens if population.own_budget is None else np.maximum(population.own_budget, 1.0)
    its = m * np.maximum(np.ceil(L / budget), 1.0)
    rounds = np.maximum((np.asarray(O, dtype=float) - 1.0) / (np.asarray(gamma, dtype=float) + 1.0), 1.0)

    def floor_of(r):
        with np.errstate(divide="ignore"):
            return np.where(m > 0.0, 1.0 / ((1.0 + its / rounds) / r + m * t_r), np.inf)

    return floor_of


def past_capacity(
    share, batch, in_engine, prompt_tokens, budget_left, iteration, t_dec, rate_per_s=0.0, engine_rate_per_s=np.inf
) -> np.ndarray:
    """Where Poisson arrivals are past what the engine serves (:func:`steady_state` marks them ``saturated`` and serves
    them as the full engine): at the decode iteration ``t_dec`` of the open loop's fixed point, the prompts alone need
    the whole engine (their ``share`` of it, lambda t_pf, reaches 1), the decoding ``batch`` it implies (1 + lambda D
    t_dec) is past the ``in_engine`` it holds, the ``prompt_tokens`` arriving per iteration (lambda P t_dec) are more
    than the ``budget_left`` beside the decoding, the ``iteration`` at t_dec is longer than t_dec (no fixed point: prefill
    batches run apart that grow faster than it), or the ``rate_per_s`` reaches ``engine_rate_per_s``, the full
    engine's rate, where the wait for admission is unbounded (:func:`specsim.serving.arrivals.admission_wait_s`): the
    closed loop of the N_e it holds, charged its preemptions where its KV cache binds and it preempts (a queue behind
    it is served at that rate, below r(c), the same N_e's with none preempted: :func:`_engine_rates` at c), so that the
    output served meets the full engine's there.  The one home of that judgement: the answers at a rate (the rate as
    the admission chain found it) and calibrate-engine's runs at one (that closed loop at the values it tries) both
    take it.

    >>> past_capacity([0.5, 1.0, 0.5], [10.0, 10.0, 300.0], 256.0, 100.0, 8192.0, 0.02, 0.02).tolist()
    [False, True, True]
    >>> past_capacity(0.5, 10.0, 256.0, 100.0, 8192.0, 0.02, 0.02, [20.0, 25.0], 25.0).tolist()  # r(c) 25/s
    [False, True]
    """
    with np.errstate(invalid="ignore"):
        return (
            ((np.asarray(rate_per_s) > 0.0) & (np.asarray(rate_per_s) >= np.asarray(engine_rate_per_s)))
            | (np.asarray(share) >= 1.0)
            | (np.asarray(batch) > np.asarray(in_engine) + 1e-9)
            | (np.asarray(prompt_tokens) > budget_left)
            | (np.asarray(iteration) > np.asarray(t_dec) * (1 + 1e-6))
        )


def finite_run_wait_s(requests: object, rate_per_s: object, served_per_s: object) -> np.ndarray:
    """The mean queue wait, seconds, of a run of ``requests`` arriving at ``rate_per_s`` to an engine that serves
    ``served_per_s`` (its full engine's rate), past capacity: the queue grows over the run, the k-th arrival waiting
    (k - 1) (1 / r - 1 / lambda) in the fluid view (arrivals and departures at their means), so the mean is (n - 1) / 2
    (1 / r - 1 / lambda); 0 where the engine keeps up.  No steady state (the answers' end-to-end latency there is
    inf): calibrate-engine's residual of a run judged by its end-to-end latency takes it where the values it tries put
    the run past capacity, so that the residual stays finite and grows with how far past they are.

    >>> finite_run_wait_s(201, [10.0, 5.0], [5.0, 10.0]).tolist()  # 100 x (0.2 - 0.1) s; the engine keeps up
    [10.0, 0.0]
    """
    n, lam, r = (np.asarray(v, dtype=float) for v in (requests, rate_per_s, served_per_s))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum((n - 1.0) / 2.0 * (1.0 / r - 1.0 / lam), 0.0)


def _engine_rates(steps: _Steps, P, O, t_pf, bound, limits) -> np.ndarray:
    """r(n): the requests/s of a closed loop of n users with none queued, per gamma and load, at the numbers n from 1 to
    ``bound`` of :func:`admission_grid` (last axis): a Poisson load's engine as its flow-equivalent server
    (:mod:`specsim.serving.arrivals`), whose r(bound) is the full engine's rate a load past capacity is served at."""
    n = admission_grid(np.broadcast_to(bound, np.shape(t_pf)))
    grid = [on_grid(x, n) for x in (P, O, t_pf, steps.context, steps.acceptance, steps.cached)]
    users = n.reshape(len(n), -1)  # (gamma, load x grid point), as a closed loop takes its users
    at = _Steps(steps.dep, grid[4], steps.gamma, grid[3], steps.fixed_lengths, grid[5])
    return _closed_loop(at, users, *grid[:3], users, "", limits).requests_per_s.reshape(n.shape)


def offline_times(
    requests: object,
    in_engine: object,
    input_tokens: object,
    output_tokens: object,
    rounds: object,
    step_s: object,
    prefill_s: object,
    base_s: object,
    limits: EngineLimits,
    slowest: object = 0.0,
    last_step_s: object = None,
    tail_step_s: object = None,
) -> dict:
    """The times of an offline batch of ``requests`` at once, ``in_engine`` at a time: full waves of N_e and a last one
    of what is left (at ``last_step_s``, default ``step_s``).  Each wave prefills its prompts through the budget
    (``ceil(n P / budget)`` iterations of the base pass and every prompt's marginal time), then decodes its ``rounds``
    and waits ``slowest`` rounds more for its slowest request (:func:`decode_rounds_spread`), those at ``tail_step_s``
    (the step at half the wave: its requests finish one by one; default ``step_s``).  The one home of an offline
    batch's times."""
    N, n_e, P, O = (np.asarray(v, dtype=float) for v in (requests, in_engine, input_tokens, output_tokens))
    D, step, t_pf = (np.asarray(v, dtype=float) for v in (rounds, step_s, prefill_s))
    last_step = step if last_step_s is None else np.asarray(last_step_s, dtype=float)
    tail = step if tail_step_s is None else np.asarray(tail_step_s, dtype=float)
    full = np.floor(N / n_e)
    rest = N - full * n_e  # the last wave's requests (0: the waves are all full)
    extra = np.asarray(slowest, dtype=float)
    decode = D + extra

    def wave(n, step):
        prefill = iteration_s(
            np.maximum(np.ceil(n * P / limits.max_batched_tokens), 1.0) * np.asarray(base_s, dtype=float), n * t_pf
        )
        return prefill, prefill + D * step + extra * np.minimum(tail, step)

    prefill_full, wave_full = wave(n_e, step)
    prefill_rest, wave_rest = wave(rest, last_step)
    total = full * wave_full + np.where(rest > 0, wave_rest, 0.0)
    # A request of the k-th full wave starts after k - 1 of them; the last wave's after all the full ones.
    ttft = (full * n_e * ((full - 1.0) / 2.0 * wave_full + prefill_full) + rest * (full * wave_full + prefill_rest)) / N
    return {
        "tpot_s": D * step / (O - 1.0),
        "itl_s": step,
        "ttft_s": ttft,
        "e2e_s": ttft + decode * step,
        "requests_per_s": N / total,
        "output_tokens_per_s": N * O / total,
        "mean_batch": N * D * step / total,
        "prefill_share": N * t_pf / total,
        "prefill_iterations": np.maximum(np.ceil(n_e * P / limits.max_batched_tokens), 1.0),
    }


def _offline(steps: _Steps, N, P, O, t_pf, n_e, limited, limits, spread: float = 0.0, admitted=None) -> SteadyState:
    """An offline batch of N requests at once (:func:`offline_times`); where the KV cache holds fewer and the engine
    preempts, admitting ``admitted`` at once (:func:`admitted_at_once`), a closed loop whose queue drains
    (:func:`specsim.serving.drain.drained_times`)."""
    waves = _waves(steps, N, P, O, t_pf, n_e, limited, limits, spread)
    drains = batch_drains(limited, limits)
    if admitted is None or not np.any(drains):
        return waves
    loop = _closed_loop(steps, N, P, O, t_pf, n_e, limited, limits, drained=True)
    fields = ("tpot_s", "itl_s", "ttft_s", "e2e_s", "requests_per_s", "output_tokens_per_s", "mean_batch")
    looped = {k: getattr(loop, k) for k in (*fields, "prefill_share")}
    t = drained_batch_times(looped, N, n_e, admitted, P, O, t_pf, loop.step_s, steps.batch_base_s, limits)
    t |= {f: getattr(loop, f) for f in ("tokens_per_round", "decode_batch", "prefill_iterations", "step_s")}
    return replace(waves, **{f: np.where(drains, v, getattr(waves, f)) for f, v in t.items()})


def drained_batch_times(loop: dict, N, n_e, admitted, P, O, t_pf, step_s, batch_base_s, limits: EngineLimits) -> dict:
    """An offline batch of N drained through the closed loop of the N_e its KV cache holds (``loop``: that loop's
    times, :func:`closed_loop_times` charged :func:`specsim.serving.preemption.drained_charge`, its iteration
    ``step_s``), ``admitted`` of them at once (:func:`admitted_at_once`): their prompts' burst, then the drain's waits
    (:func:`specsim.serving.drain.drained_times`).  The one home of that composition: the answers' offline batches
    and calibrate-engine's offline runs both take it."""
    n_0 = np.floor(np.clip(admitted, n_e, N))
    # The N_0 prompts admitted at once fill each iteration's budget, budget / P of them an iteration, beside the
    # others decoding (a prefill batch's own base pass where prefill runs apart).
    burst_s = burst_iterations(n_0, np.broadcast_to(P, n_0.shape), float(limits.max_batched_tokens)) * iteration_s(
        batch_base_s if limits.prefill_apart else step_s,
        np.minimum(n_0, limits.max_batched_tokens / np.maximum(P, 1.0)) * t_pf,
    )
    return drained_times(N, n_e, n_0, loop, burst_s, O)


def _waves(steps: _Steps, N, P, O, t_pf, n_e, limited, limits, spread: float = 0.0) -> SteadyState:
    """An offline batch of N requests at once in waves of N_e (:func:`offline_times`)."""
    D = decode_rounds(steps.acceptance, steps.gamma, O - 1.0)
    b = np.broadcast_to(n_e, np.broadcast_shapes(np.shape(n_e), D.shape))
    step, E, out = steps(b)
    rest = N - np.floor(N / n_e) * n_e
    last = steps(np.maximum(np.broadcast_to(rest, b.shape), 1.0))[0]
    tail = steps(np.maximum(b / 2.0, 1.0))[0]
    t = offline_times(
        N,
        n_e,
        P,
        O,
        D,
        step,
        t_pf,
        steps.base_s,
        limits,
        decode_rounds_spread(steps.acceptance, steps.gamma, O - 1.0, n_e, spread),
        last,
        tail,
    )
    shape = t["tpot_s"].shape
    k_p = np.broadcast_to(t.pop("prefill_iterations"), shape)
    return SteadyState(
        "batch",
        N,
        P,
        O,
        steps.gamma.astype(int),
        np.broadcast_to(E, shape),
        D,
        b,
        np.broadcast_to(n_e, shape),
        k_p,
        step,
        np.broadcast_to(t_pf, shape),
        saturated=np.zeros(shape, dtype=bool),
        limited_by=np.broadcast_to(limited, shape),
        outcome=out,
        **t,
    )


def load_label(kind: str, value: float) -> str:
    """``concurrency 16``, ``rate 4/s``, ``batch 64``.

    >>> load_label("concurrency", 16.0), load_label("rate", 2.5), load_label("batch", 64)
    ('concurrency 16', 'rate 2.5/s', 'batch 64')
    """
    if kind == "rate":
        return f"rate {value:g}/s"
    return f"{kind} {value:g}"
