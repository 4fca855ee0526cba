"""A request-level simulation of one serving engine, with and without speculation.

Users do not choose a batch size; they send traffic.  This module plays requests through one engine
instance iteration by iteration, the way vLLM's continuous batching runs them:

* **Admission.**  A waiting request is admitted (first come, first served) while fewer than
  ``max_num_seqs`` are in flight and the KV cache can hold it: each admitted request reserves
  ``prompt + output`` tokens of KV (target and, when speculating, draft) in the memory the capacity
  model leaves after the weights (:func:`specsim.capacity.capacity`).  Real engines allocate blocks as
  tokens arrive and preempt when they run out; reserving up front is the conservative version.  A
  request that can never fit is reported, never dropped silently.
* **Chunked prefill.**  Each iteration carries every running sequence's decode tokens and, in the
  token budget left (``max_batched_tokens``), prompt chunks of admitted requests, oldest first.  A
  mixed iteration costs the decode round plus the marginal cost of the prefill tokens,
  ``t(1, P, 0) - t(1, 1, 0)`` from the same step-time source (the weights are read once for both).
  The iteration that finishes a prompt emits its first token (time to first token).
* **Decode.**  Without speculation an iteration emits one token per running sequence and takes
  ``t_T(b, L)``.  With speculation it is a round: ``gamma t_D + t_V`` at the running batch ``b`` and
  mean context ``L``, ``gamma`` fixed or from a per-batch schedule, and each sequence emits
  ``1 + A`` tokens (never past its output length), ``A`` drawn from the acceptance model: with
  ``c_k = P(drafted token k accepted)``, ``A = #{k <= gamma : u < c_k}`` for one uniform ``u`` per
  sequence and round (exactly the per-position distribution; ``c_k = alpha^k`` for one alpha).

Step times come from the deployment's step-time source and engine preset, tabulated once on a
(batch, context, gamma) grid and interpolated linearly in context.  Between events (an arrival, a
completion, the end of a prefill) the running set is fixed, so many rounds are advanced in one
vectorised step; there is no per-token Python loop.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .deployment import Deployment
from .speedup import optimal_gamma

__all__ = ["DEFAULT_MAX_BATCHED_TOKENS", "DEFAULT_MAX_NUM_SEQS", "DEFAULT_REQUESTS", "DEFAULT_SLO_ATTAINMENT", "EngineLimits", "ServeResult",
           "StepTable", "serve_compare", "serve_sweep", "simulate", "sweep_findings"]

#: Requests simulated per run unless told otherwise.
DEFAULT_REQUESTS = 1000
#: A rate "meets the SLOs" when at least this share of served requests meets both.
DEFAULT_SLO_ATTAINMENT = 0.9

#: vLLM's default max_num_seqs.
DEFAULT_MAX_NUM_SEQS = 256
#: Token budget per iteration for chunked prefill (vLLM's max_num_batched_tokens; set your engine's).
DEFAULT_MAX_BATCHED_TOKENS = 8192
_JUMP = 256  # rounds advanced at most in one vectorised step


@dataclass(frozen=True)
class EngineLimits:
    """The engine's scheduling limits: sequences in flight, tokens per iteration, KV tokens it can hold."""

    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    kv_capacity_tokens: float = float("inf")
    #: False: prompts cost no time (the per-batch model's setting, for checks).
    include_prefill: bool = True

    def __post_init__(self) -> None:
        for key in ("max_num_seqs", "max_batched_tokens"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65536:
                raise ValueError(f"{key} must be a whole number in [1, 65536], got {value!r}")
        if not self.kv_capacity_tokens > 0:
            raise ValueError(f"KV capacity must be > 0 tokens, got {self.kv_capacity_tokens!r}")


class StepTable:
    """Round times of a deployment on a (batch 1..max_batch, context grid, gamma 0..gamma_max) grid.

    ``round_s(b, L, gamma)``: ``t_T`` for gamma 0, ``gamma t_D + t_V`` otherwise.  ``prefill_s(P)``: the
    marginal time of ``P`` prompt tokens in an iteration.
    """

    def __init__(self, dep: Deployment, max_batch: int, max_context: int, gamma_max: int = 0,
                 max_prefill_tokens: int = DEFAULT_MAX_BATCHED_TOKENS):
        b = np.arange(1, max_batch + 1, dtype=float)
        grid = np.unique(np.r_[0.0, np.round(np.geomspace(16, max(max_context, 32), 28))])
        self.contexts = grid
        self.gamma_max = int(gamma_max)
        rounds = [dep.decode(b[:, None], grid[None, :]).total_s]
        rounds += [dep.round_time(b[:, None], grid[None, :], g).total_s for g in range(1, self.gamma_max + 1)]
        self.table = np.stack(rounds, axis=-1)  # (batch, context, gamma)
        tokens = np.unique(np.round(np.geomspace(1, max(max_prefill_tokens, 2), 40)))
        base = float(np.asarray(dep.gpu_pass(dep.target, 1, 1, 0).total_s))
        self.prefill_tokens = tokens
        self.prefill_table = np.asarray(dep.gpu_pass(dep.target, 1, tokens, 0).total_s, dtype=float) - base
        self.base_s = base

    def round_s(self, batch: int, context: np.ndarray, gamma: int) -> np.ndarray:
        row = self.table[batch - 1, :, gamma]
        return np.interp(context, self.contexts, row)

    def prefill_s(self, tokens: float) -> float:
        if tokens <= 0:
            return 0.0
        return float(np.interp(tokens, self.prefill_tokens, self.prefill_table))


@dataclass
class ServeResult:
    """Per-request times (seconds; NaN where a request never ran) and what the engine did."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    rejected: np.ndarray  # True: the request can never fit in the KV cache
    batch_time_s: np.ndarray  # seconds spent with b running sequences, index b
    in_system_integral: float  # integral over time of (waiting + in flight) requests
    speculation: str
    notes: list = field(default_factory=list)

    @property
    def served(self) -> np.ndarray:
        return np.isfinite(self.finish_s)

    @property
    def ttft_s(self) -> np.ndarray:
        return (self.first_token_s - self.arrival_s)[self.served]

    @property
    def tpot_s(self) -> np.ndarray:
        """Time per output token after the first, per request with more than one output token."""
        ok = self.served & (self.output > 1)
        return (self.finish_s - self.first_token_s)[ok] / (self.output[ok] - 1)

    @property
    def e2e_s(self) -> np.ndarray:
        return (self.finish_s - self.arrival_s)[self.served]

    @property
    def makespan_s(self) -> float:
        return float(np.nanmax(self.finish_s) - np.nanmin(self.arrival_s)) if self.served.any() else 0.0

    @property
    def mean_batch(self) -> float:
        """Time-weighted mean running batch while the engine was busy."""
        busy = self.batch_time_s[1:].sum()
        return float((np.arange(1, self.batch_time_s.size) * self.batch_time_s[1:]).sum() / busy) if busy > 0 else 0.0

    def summary(self, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> dict:
        """Percentiles, throughput, batch and goodput, in seconds and tokens per second."""
        def pct(x):
            return {f"p{q}": float(np.percentile(x, q)) if x.size else float("nan") for q in (50, 90, 99)} | {
                "mean": float(np.mean(x)) if x.size else float("nan")}

        span = self.makespan_s
        out = {
            "speculation": self.speculation,
            "requests": int(self.arrival_s.size),
            "served": int(self.served.sum()),
            "never_fit": int(self.rejected.sum()),
            "ttft_s": pct(self.ttft_s),
            "tpot_s": pct(self.tpot_s),
            "e2e_s": pct(self.e2e_s),
            "output_tokens_per_s": float(self.output[self.served].sum() / span) if span > 0 else float("nan"),
            "requests_per_s": float(self.served.sum() / span) if span > 0 else float("nan"),
            "mean_running_batch": self.mean_batch,
            "running_batch_time_share": {int(b): float(v / self.batch_time_s.sum())
                                         for b, v in enumerate(self.batch_time_s) if v > 0} if self.batch_time_s.sum() > 0 else {},
            "max_running_batch": int(np.flatnonzero(self.batch_time_s > 0).max()) if np.any(self.batch_time_s > 0) else 0,
            "mean_in_system": float(self.in_system_integral / span) if span > 0 else float("nan"),
        }
        if slo_ttft_s is not None or slo_tpot_s is not None:
            ok = self.served.copy()
            ttft = self.first_token_s - self.arrival_s
            tpot = np.where(self.output > 1, (self.finish_s - self.first_token_s) / np.maximum(self.output - 1, 1), 0.0)
            if slo_ttft_s is not None:
                ok &= ttft <= slo_ttft_s
            if slo_tpot_s is not None:
                ok &= tpot <= slo_tpot_s
            out["slo_met"] = int(ok.sum())
            out["goodput_requests_per_s"] = float(ok.sum() / span) if span > 0 else float("nan")
        return out


def _cumulative(acceptance: object, gamma_max: int) -> np.ndarray:
    """c_1..c_gamma_max for sampling accepted counts."""
    if gamma_max == 0:
        return np.zeros(0)
    if hasattr(acceptance, "cumulative") and getattr(acceptance, "alpha", None) is None:
        c = np.asarray(acceptance.cumulative, dtype=float)
        if c.size < gamma_max:
            raise ValueError(f"acceptance is measured for {c.size} positions; the speculation policy uses gamma up to {gamma_max}")
        return c[:gamma_max]
    alpha = float(getattr(acceptance, "alpha", acceptance))
    return alpha ** np.arange(1, gamma_max + 1)


def simulate(requests, table: StepTable, limits: EngineLimits, acceptance: object = 0.0, gamma: object = 0,
             rng: np.random.Generator | None = None, concurrency: int | None = None,
             reserve_tokens_per_request: np.ndarray | None = None, label: str = "") -> ServeResult:
    """Play ``requests`` through one engine.

    Parameters
    ----------
    requests : specsim.workloads.Requests
        Arrivals (None with ``concurrency``: a closed loop), prompt and output tokens.
    table : StepTable
        Round times of the deployment.
    limits : EngineLimits
        max_num_seqs, token budget, KV capacity.
    acceptance : float or Acceptance
        Per-token alpha or per-position rates (used when gamma > 0).
    gamma : int or ndarray
        0: no speculation; an int: fixed gamma; an array indexed by running batch (1..max_num_seqs).
    rng : numpy Generator
        Draws of accepted tokens.
    concurrency : int or None
        Users of a closed loop: each sends its next request when the last one finishes.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    n = len(requests)
    prompt = np.asarray(requests.prompt, dtype=np.int64)
    output = np.asarray(requests.output, dtype=np.int64)
    if np.ndim(gamma) == 0:
        gamma_by_batch = np.full(limits.max_num_seqs + 1, int(gamma), dtype=int)
    else:
        gamma_by_batch = np.asarray(gamma, dtype=int)
        if gamma_by_batch.size < limits.max_num_seqs + 1:
            raise ValueError("a gamma schedule needs one entry per batch size 0..max_num_seqs")
    gmax = int(gamma_by_batch.max())
    if gmax > table.gamma_max:
        raise ValueError(f"the step table holds gamma up to {table.gamma_max}, the policy uses {gmax}")
    cum = _cumulative(acceptance, gmax)
    reserve = (prompt + output).astype(float) if reserve_tokens_per_request is None else reserve_tokens_per_request
    rejected = reserve > limits.kv_capacity_tokens
    if concurrency is None:
        if requests.arrival_s is None:
            raise ValueError("a closed-loop request set needs a concurrency")
        arrival = np.asarray(requests.arrival_s, dtype=float).copy()
    else:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
        arrival = np.full(n, np.nan)
        arrival[: min(concurrency, n)] = 0.0
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    ctx = np.zeros(n)
    remaining = output.copy()
    batch_time = np.zeros(limits.max_num_seqs + 1)
    in_system = 0.0
    next_arrival = 0  # requests[:next_arrival] have arrived (arrival order)
    waiting: deque = deque()
    prefilling: deque = deque()  # [request, prompt tokens left]
    running = np.zeros(0, dtype=np.int64)
    kv_used = 0.0
    t = 0.0
    closed_next = min(concurrency, n) if concurrency is not None else n
    done = 0
    notes = []

    def arrive(upto: float) -> None:
        nonlocal next_arrival, done, in_system
        limit = n if concurrency is None else closed_next
        while next_arrival < limit and arrival[next_arrival] <= upto:
            if rejected[next_arrival]:
                done += 1
                if concurrency is not None:
                    release(arrival[next_arrival])
            else:
                waiting.append(next_arrival)
                in_system += upto - arrival[next_arrival]  # in the system since it arrived, inside the last step
            next_arrival += 1
            limit = n if concurrency is None else closed_next

    def release(at: float) -> None:
        """A user of the closed loop sends the next request at ``at``."""
        nonlocal closed_next
        if concurrency is not None and closed_next < n:
            arrival[closed_next] = at
            closed_next += 1

    def finish_requests(ids: np.ndarray, at) -> None:
        nonlocal kv_used, done
        for i, when in zip(ids.tolist(), np.broadcast_to(at, ids.shape).tolist()):
            finish[i] = when
            kv_used -= reserve[i]
            done += 1
            release(when)

    while done < n:
        arrive(t)
        while waiting and running.size + len(prefilling) < limits.max_num_seqs and kv_used + reserve[waiting[0]] <= limits.kv_capacity_tokens:
            i = waiting.popleft()
            kv_used += reserve[i]
            prefilling.append([i, int(prompt[i]) if limits.include_prefill else 0])
        in_flight = running.size + len(prefilling)
        b = running.size
        g = int(gamma_by_batch[b]) if b else 0
        if prefilling:
            # One iteration: every running sequence's round and prompt chunks in the budget left.
            budget = max(limits.max_batched_tokens - b * (g + 1), 0)
            chunk = 0
            completed_prefill = []
            for item in prefilling:
                take = min(item[1], budget - chunk)
                item[1] -= take
                chunk += take
                if item[1] == 0:
                    completed_prefill.append(item[0])
                if chunk >= budget:
                    break
            dt = table.prefill_s(chunk) + (float(table.round_s(b, ctx[running].mean(), g)) if b else table.base_s)
            emitted = _emit(rng, cum, g, b, 1)[:, 0] if b else np.zeros(0)
            in_system += (in_flight + len(waiting)) * dt
            batch_time[b] += dt
            t += dt
            if b:
                emitted = np.minimum(emitted, remaining[running])
                ctx[running] += emitted
                remaining[running] -= emitted
                over = running[remaining[running] == 0]
                if over.size:
                    finish_requests(over, t)
                    running = running[remaining[running] > 0]
            for i in completed_prefill:
                prefilling.popleft()
                first[i] = t
                ctx[i] = prompt[i] + 1
                remaining[i] -= 1
                if remaining[i] == 0:
                    finish_requests(np.array([i]), t)
                else:
                    running = np.append(running, i)
            continue
        if b == 0:
            # Idle until the next arrival.
            limit = n if concurrency is None else closed_next
            if next_arrival >= limit:
                if waiting:  # pragma: no cover - admission always succeeds on an empty engine for fitting requests
                    raise RuntimeError("a waiting request could not be admitted on an idle engine")
                break
            t = max(t, arrival[next_arrival])
            continue
        # Advance up to _JUMP rounds with this running set: stop at the first completion or arrival.  Draw about
        # as many rounds as the nearest completion needs at the mean rate (a few more), not all _JUMP.
        rem = remaining[running]
        per_round = 1.0 + (cum[:g].sum() if g else 0.0)
        rounds = int(min(_JUMP, max(4, np.ceil(rem.min() / per_round) + 3)))
        e = _emit(rng, cum, g, b, rounds)
        cum_e = np.cumsum(e, axis=1)
        finished_by = np.where(cum_e >= rem[:, None], np.arange(rounds)[None, :], rounds).min(axis=1)
        k = int(min(finished_by.min() + 1, rounds))
        mean_before = ctx[running].mean() + np.r_[0.0, np.minimum(cum_e[:, : k - 1], rem[:, None]).mean(axis=0)]
        ends = t + np.cumsum(table.round_s(b, mean_before, g))
        limit = n if concurrency is None else closed_next
        if next_arrival < limit and arrival[next_arrival] < ends[-1]:
            k = int(np.searchsorted(ends, arrival[next_arrival], side="left")) + 1
            ends = ends[:k]
        span = ends[-1] - t
        in_system += (in_flight + len(waiting)) * span
        batch_time[b] += span
        got = np.minimum(cum_e[:, k - 1], rem)
        ctx[running] += got
        remaining[running] = rem - got
        done_now = remaining[running] == 0
        if done_now.any():
            finish_requests(running[done_now], ends[np.minimum(finished_by[done_now], k - 1)])
            running = running[~done_now]
        t = ends[-1]
        # Arrivals that came during the jump join the queue with their own times (in_system counted them from t).
    if rejected.any():
        notes.append(f"{int(rejected.sum())} request(s) need more KV than the engine holds and were never served")
    return ServeResult(arrival, first, finish, prompt, output, rejected, batch_time, in_system, label, notes)


def _emit(rng: np.random.Generator, cum: np.ndarray, gamma: int, batch: int, rounds: int) -> np.ndarray:
    """Tokens each of ``batch`` sequences emits in each of ``rounds`` rounds: 1 + accepted drafts."""
    if gamma == 0:
        return np.ones((batch, rounds), dtype=np.int64)
    u = rng.random((batch, rounds, 1))
    return 1 + (u < cum[None, None, :gamma]).sum(axis=2)


def serve_compare(dep: Deployment, requests, acceptance: object, gamma: object = "schedule",
                  limits: EngineLimits | None = None, concurrency: int | None = None, seed: int = 0,
                  memory_utilization: float | None = None, gamma_max: int = 8, context_hint: float | None = None):
    """Simulate ``requests`` without and with speculation on ``dep``: ``(plain, spec, meta)``.

    ``gamma``: an int (fixed) or ``"schedule"`` (the optimal gamma per running batch at ``context_hint``,
    default the workload's mean prompt plus half its mean output).  The KV capacity comes from the capacity
    model: the plain run holds the target alone, the speculative run the target and the draft.
    """
    from .capacity import DEFAULT_MEMORY_UTILIZATION, capacity

    limits = EngineLimits() if limits is None else limits
    util = DEFAULT_MEMORY_UTILIZATION if memory_utilization is None else memory_utilization
    prompt, output = np.asarray(requests.prompt), np.asarray(requests.output)
    max_context = int((prompt + output).max())
    hint = float(prompt.mean() + output.mean() / 2) if context_hint is None else float(context_hint)
    cap = capacity(dep, max(int(hint), 1), util)
    free_plain = cap.usable_bytes - cap.target_weight_bytes
    free_spec = cap.usable_bytes - cap.target_weight_bytes - cap.draft_weight_bytes
    per_token_plain = dep.target.kv_bytes_per_token
    per_token_spec = per_token_plain + (dep.draft.kv_bytes_per_token if dep.draft is not None else 0.0)
    if free_plain <= 0:
        raise ValueError(f"{dep.target.name} does not fit on {dep.hardware.name}: no memory is left for the KV cache")
    if gamma == "schedule":
        best = optimal_gamma(dep, acceptance, np.arange(1, limits.max_num_seqs + 1), hint, gamma_max)
        policy = np.r_[0, best.gamma]
        label = f"per-batch optimal gamma at L = {hint:.0f}"
    else:
        policy = int(gamma)
        label = f"gamma {policy}"
    gmax = int(np.max(policy))
    table = StepTable(dep, limits.max_num_seqs, max_context, gmax, limits.max_batched_tokens)
    plain_limits = EngineLimits(limits.max_num_seqs, limits.max_batched_tokens, free_plain / per_token_plain,
                                limits.include_prefill)
    spec_limits = EngineLimits(limits.max_num_seqs, limits.max_batched_tokens, max(free_spec, 0.0) / per_token_spec,
                               limits.include_prefill)
    plain = simulate(requests, table, plain_limits, acceptance, 0, np.random.default_rng(seed), concurrency, label="off")
    spec = simulate(requests, table, spec_limits, acceptance, policy, np.random.default_rng(seed), concurrency, label=label)
    meta = {"kv_capacity_tokens_plain": plain_limits.kv_capacity_tokens, "kv_capacity_tokens_spec": spec_limits.kv_capacity_tokens,
            "gamma_policy": label, "gamma_by_batch": np.atleast_1d(policy).tolist(), "context_hint": hint}
    return plain, spec, meta


def _sweep_point(args):
    dep, rate, workload, n, acceptance, gamma, limits, seed, slo_ttft_s, slo_tpot_s, gamma_max = args
    from .workloads import Requests

    requests = Requests.poisson(rate, n, workload, np.random.default_rng(seed))
    plain, spec, meta = serve_compare(dep, requests, acceptance, gamma, limits, seed=seed, gamma_max=gamma_max)
    row = {"rate": rate}
    for name, result in (("off", plain), ("on", spec)):
        summary = result.summary(slo_ttft_s, slo_tpot_s)
        row.update({f"{name}_tpot_p50_s": summary["tpot_s"]["p50"], f"{name}_tpot_p99_s": summary["tpot_s"]["p99"],
                    f"{name}_ttft_p50_s": summary["ttft_s"]["p50"], f"{name}_ttft_p99_s": summary["ttft_s"]["p99"],
                    f"{name}_e2e_p50_s": summary["e2e_s"]["p50"],
                    f"{name}_tokens_per_s": summary["output_tokens_per_s"], f"{name}_mean_batch": summary["mean_running_batch"]})
        if "slo_met" in summary:
            row[f"{name}_slo_attainment"] = summary["slo_met"] / max(summary["served"], 1)
    return row


def serve_sweep(dep: Deployment, rates, workload, n: int, acceptance: object, gamma: object = "schedule",
                limits: EngineLimits | None = None, seed: int = 0, slo_ttft_s: float | None = None,
                slo_tpot_s: float | None = None, gamma_max: int = 8, executor=None):
    """:func:`serve_compare` at each Poisson ``rate`` (requests/s), as a DataFrame with one row per rate.

    The simulations are independent: ``executor`` (any :class:`concurrent.futures.Executor`, e.g. a
    ``ProcessPoolExecutor``, or a cluster's, such as dask.distributed's ``Client.get_executor()``) runs them
    in parallel; None runs them here, one after the other.  Each rate uses the same ``seed``, so the rates
    differ only in arrival spacing.
    """
    import pandas as pd

    jobs = [(dep, float(rate), workload, n, acceptance, gamma, limits, seed, slo_ttft_s, slo_tpot_s, gamma_max) for rate in rates]
    rows = list(executor.map(_sweep_point, jobs)) if executor is not None else [_sweep_point(j) for j in jobs]
    return pd.DataFrame(rows)


def sweep_findings(frame, attainment: float = DEFAULT_SLO_ATTAINMENT) -> dict:
    """The first rate at which speculation no longer lowers TPOT p50, and the largest rate meeting the SLOs
    (``attainment`` of requests) without and with speculation; None where no swept rate qualifies."""
    worse = frame[frame.on_tpot_p50_s >= frame.off_tpot_p50_s]
    out = {"speculation_stops_helping_at_rate": None if worse.empty else float(worse.rate.min())}
    for name in ("off", "on"):
        col = f"{name}_slo_attainment"
        if col in frame:
            ok = frame[frame[col] >= attainment]
            out[f"max_rate_meeting_slo_{name}"] = None if ok.empty else float(ok.rate.max())
    return out
