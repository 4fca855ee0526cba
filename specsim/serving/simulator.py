"""A request-level simulation of one serving engine, with and without speculation.

Users do not choose a batch size; they send traffic.  This module plays requests through one engine
instance iteration by iteration, the way vLLM's continuous batching runs them:

* **Admission and the KV cache.**  A waiting request is admitted (first come, first served) while fewer than
  ``max_num_seqs`` are in flight and the KV cache (target and, when speculating, draft, in the memory the capacity
  model leaves after the weights: :func:`specsim.serving.capacity.capacity`) can hold it as the engine holds it
  (its :class:`~specsim.engines.engine.KvPolicy`, :mod:`specsim.serving.kv_blocks`): vLLM admits on the prompt's
  blocks, takes blocks as tokens arrive and, where they run out, preempts the request it admitted last, which
  recomputes its prompt and output when admitted again; TensorRT-LLM's default and engine none reserve
  ``prompt + output`` up front; SGLang sets aside up to 4,096 output tokens.  Preemptions are counted.  A request
  whose whole length can never fit is reported, never dropped silently.
* **Chunked prefill.**  Each iteration carries every running sequence's decode tokens and, in the
  token budget left (``max_batched_tokens``), prompt chunks of admitted requests, oldest first.  A
  mixed iteration costs the decode round plus the marginal cost of each prompt's piece: extending that
  prompt's prefill from the tokens done to the tokens done after it, with a prompt's prefill
  ``t(1, P, 0) - t(1, 1, 0)`` from the same step-time source (the weights are read once for both;
  :meth:`specsim.speculation.deployment.Deployment.prefill_s`), so that pieces of several prompts in one iteration
  attend each to its own prompt, and a prompt costs its whole prefill once however it is cut.
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

import dataclasses
import functools
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from specsim.core.defaults import DEFAULT_GAMMA_MAX
from specsim.core.limits import MAX_GAMMA, check_int, is_real
from specsim.core.workloads import lengths_or_workload, mean_context_tokens, trace_alone
from specsim.serving.capacity import capacity, fitting_tp_for, no_room_said, sequence_kv_bytes
from specsim.serving.kv_blocks import KvBlocks
from specsim.serving.runs import CONFIDENCE, DEFAULT_RUNS, deepest_gamma, past_capacity, summarize_runs
from specsim.serving.steady import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS, EngineLimits, iteration_s
from specsim.serving.step_table import StepTable
from specsim.speculation.acceptance import as_acceptance
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma

__all__ = [
    "CONFIDENCE",
    "DEFAULT_MAX_BATCHED_TOKENS",
    "DEFAULT_MAX_NUM_SEQS",
    "DEFAULT_REQUESTS",
    "DEFAULT_RUNS",
    "DEFAULT_SLO_ATTAINMENT",
    "EngineLimits",
    "ServeResult",
    "StepTable",
    "serve_compare_runs",
    "simulate_speculating",
    "requests_for",
    "serve_compare",
    "serve_sweep",
    "simulate",
    "summarize_runs",
    "sweep_findings",
    "sweep_load",
]

#: Requests simulated per run unless told otherwise.
DEFAULT_REQUESTS = 1000
#: A rate "meets the SLOs" when at least this share of served requests meets both.
DEFAULT_SLO_ATTAINMENT = 0.9

_JUMP = 256  # rounds advanced at most in one vectorised step


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
    kv_full: bool = False  # some request waited for KV memory while a sequence was free (not for max_num_seqs)
    #: Requests the engine preempted when their blocks ran out (each time), and the tokens it recomputed for them: the
    #: prompt and output each had when preempted, or the part of a prompt it had prefilled (:mod:`.kv_blocks`).
    preemptions: int = 0
    recomputed_tokens: int = 0

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
        """Time-weighted mean of the sequences decoding while the engine was busy: its iterations of prompts alone
        count, at 0, as the steady state's Little's-law mean counts them; idle time does not."""
        busy = self.batch_time_s.sum()
        return float((np.arange(self.batch_time_s.size) * self.batch_time_s).sum() / busy) if busy > 0 else 0.0

    def _arrivals(self) -> dict:
        """Why requests/s served is not the offered rate: the arrivals' own rate over their span (a Poisson stream
        of n requests comes at its rate only on average), the drain after the last arrival (served/s counts from
        the first arrival to the last finish), and the requests waiting or running at the middle and the last
        arrival (a queue that grows between them is past the engine's capacity)."""
        arrived = np.sort(self.arrival_s[np.isfinite(self.arrival_s)])
        span = float(arrived[-1] - arrived[0]) if arrived.size > 1 else 0.0
        last = arrived[-1] if arrived.size else np.nan
        middle = arrived[arrived.size // 2] if arrived.size else np.nan

        def in_system(t):
            return int(((self.arrival_s <= t) & ~self.rejected & ~(self.finish_s <= t)).sum())

        grew = in_system(last) - in_system(middle)
        finished = int(((self.finish_s > middle) & (self.finish_s <= last)).sum())
        return {
            "arrival_rate_per_s": _ratio(arrived.size - 1, span),
            "drain_s": float(np.nanmax(self.finish_s) - last) if self.served.any() else None,
            "in_system_at_middle_arrival": in_system(middle),
            "in_system_at_last_arrival": in_system(last),
            "queue_growth_per_s": _ratio(grew, float(last - middle)) if last > middle else None,
            # What the engine finished while the queue grew (arrivals less growth only on average: a Poisson second
            # half can come faster than the whole stream's rate).
            "served_per_s_after_middle": _ratio(finished, float(last - middle)) if last > middle else None,
        }

    def summary(self, slo_ttft_s: float | None = None, slo_tpot_s: float | None = None) -> dict:
        """Percentiles, throughput, batch and goodput, in seconds and tokens per second."""

        def pct(x):
            # Nothing to average (no request served, or none with a second token for TPOT): None, said as n/a.
            return {f"p{q}": float(np.percentile(x, q)) if x.size else None for q in (50, 90, 99)} | {
                "mean": float(np.mean(x)) if x.size else None
            }

        span = self.makespan_s
        out = {
            "speculation": self.speculation,
            "requests": int(self.arrival_s.size),
            "served": int(self.served.sum()),
            "never_fit": int(self.rejected.sum()),
            "preemptions": self.preemptions,
            "recomputed_tokens": self.recomputed_tokens,
            "ttft_s": pct(self.ttft_s),
            "tpot_s": pct(self.tpot_s),
            "e2e_s": pct(self.e2e_s),
            "output_tokens_per_s": _ratio(self.output[self.served].sum(), span),
            "requests_per_s": _ratio(self.served.sum(), span),
            "mean_running_batch": self.mean_batch,
            "running_batch_time_share": {
                int(b): float(v / self.batch_time_s.sum()) for b, v in enumerate(self.batch_time_s) if v > 0
            }
            if self.batch_time_s.sum() > 0
            else {},
            "max_running_batch": int(np.flatnonzero(self.batch_time_s > 0).max())
            if np.any(self.batch_time_s > 0)
            else 0,
            "mean_in_system": _ratio(self.in_system_integral, span),
            **self._arrivals(),
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
            out["goodput_requests_per_s"] = _ratio(ok.sum(), span)
        return out


def _ratio(amount: float, span_s: float) -> float | None:
    """``amount`` per second of ``span_s``, or None where no finite rate follows (no span, or one so short that the
    rate overflows: arrivals a denormal apart); a summary never holds inf, which JSON cannot carry."""
    if not span_s > 0:
        return None
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        rate = float(amount) / float(span_s)
    return rate if np.isfinite(rate) else None


class _Engine:
    """The state of one simulated engine while requests play through it (see :func:`simulate`)."""

    def __init__(
        self,
        requests,
        table: StepTable,
        limits: EngineLimits,
        cum: np.ndarray,
        gamma_by_batch: np.ndarray,
        rng: np.random.Generator,
        concurrency: int | None,
        reserve: np.ndarray,
        changes: list | None = None,
        observer=None,
        cum_by_request: np.ndarray | None = None,
        kv_bytes_of=None,
    ):
        n = len(requests)
        self.cum_by_request = cum_by_request  # (requests, gamma) cumulative rates, where prompts accept differently
        self.n, self.table, self.limits, self.cum, self.gamma_by_batch, self.rng = (
            n,
            table,
            limits,
            cum,
            gamma_by_batch,
            rng,
        )
        self.changes = deque(changes or ())  # (from time, cumulative rates): the acceptance from then on
        self.observer = observer
        self.concurrency = concurrency
        self.kv = KvBlocks(limits.kv_policy, limits.kv_capacity_bytes, reserve, kv_bytes_of)
        self.speculating = False
        self._budget: dict = {}  # the prompt tokens an iteration takes beside (b, g): the limits' rule, read once each
        self._scheduled: dict = {}  # (b, g) -> the decoding sequences an iteration schedules, read once each
        self._per_round: dict = {}  # gamma -> 1 + the drafts a round accepts at the mean rate (until the rates change)
        self.kv_full = False
        self.prompt = np.asarray(requests.prompt, dtype=np.int64)
        self.output = np.asarray(requests.output, dtype=np.int64)
        self.prefill_len = self.prompt.copy()  # tokens a request prefills when admitted: more where it resumes
        # of those, the tokens a prefix-cache hit serves (limits.prompt_split): 0 once preempted (:mod:`.kv_blocks`)
        self.cached = limits.prompt_split(self.prompt)[1].astype(np.int64)
        self.rejected = reserve > limits.kv_capacity_bytes
        if concurrency is None:
            if requests.arrival_s is None:
                raise ValueError("a closed-loop request set needs a concurrency")
            self.arrival = np.asarray(requests.arrival_s, dtype=float).copy()
        else:
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
                raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
            self.arrival = np.full(n, np.nan)
            self.arrival[: min(concurrency, n)] = 0.0
        self.first = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.ctx = np.zeros(n)
        self.remaining = self.output.copy()
        self.batch_time = np.zeros(limits.max_num_seqs + 1)
        self.in_system = 0.0
        self.next_arrival = 0  # requests[:next_arrival] have arrived (arrival order)
        self.waiting: deque = deque()
        self.prefilling: deque = deque()  # [request, prompt tokens left]
        self.running = np.zeros(0, dtype=np.int64)
        self.t = 0.0
        self.closed_next = min(concurrency, n) if concurrency is not None else n
        self.done = 0

    @property
    def _limit(self) -> int:
        """Requests that have been sent so far (all of them in an open loop)."""
        return self.n if self.concurrency is None else self.closed_next

    def arrive(self, upto: float) -> None:
        while self.next_arrival < self._limit and self.arrival[self.next_arrival] <= upto:
            i = self.next_arrival
            if self.rejected[i]:
                self.done += 1
                if self.concurrency is not None:
                    self.release(self.arrival[i])
            else:
                self.waiting.append(i)
                self.in_system += upto - self.arrival[i]  # in the system since it arrived, inside the last step
            self.next_arrival += 1

    def release(self, at: float) -> None:
        """A user of the closed loop sends the next request at ``at``: just after the engine has started its next
        iteration, so the request waits for that one (the serving model's w, :data:`specsim.serving.steady.CLOSED_LOOP_WAIT`);
        an idle engine takes it at once."""
        if self.concurrency is not None and self.closed_next < self.n:
            self.arrival[self.closed_next] = np.nextafter(at, np.inf)
            self.closed_next += 1

    def finish_requests(self, ids: np.ndarray, at) -> None:
        if self.observer is not None:
            self.observer.finished(ids, np.broadcast_to(at, ids.shape), self.prompt[ids], self.output[ids])
        self.finish[ids] = at
        self.kv.release(ids)
        self.done += ids.size
        if self.concurrency is not None:
            for when in np.broadcast_to(at, ids.shape).tolist():
                self.release(when)

    def _rates(self, ids: np.ndarray) -> np.ndarray:
        """The cumulative rates sequences ``ids`` draw from: the engine's, or each request's own."""
        return self.cum if self.cum_by_request is None else self.cum_by_request[ids]

    def change_acceptance(self) -> None:
        """The acceptance from the latest change at or before now (a drafter that meets other prompts from then on)."""
        while self.changes and self.changes[0][0] <= self.t:
            self.cum = self.changes.popleft()[1]
            self._per_round.clear()

    def _next_event_s(self) -> float:
        """The next arrival or acceptance change, inf where none is due: a jump of rounds stops at it."""
        arrival = self.arrival[self.next_arrival] if self.next_arrival < self._limit else np.inf
        return min(arrival, self.changes[0][0]) if self.changes else arrival

    def admit(self) -> None:
        """First come, first served while sequences and KV memory last (the engine's KV policy: :class:`KvBlocks`)."""
        limits = self.limits
        while (
            self.waiting
            and self.running.size + len(self.prefilling) < limits.max_num_seqs
            and self.kv.admits(self.waiting[0], int(self.prefill_len[self.waiting[0]]), self)
        ):
            i = self.waiting.popleft()
            self.kv.admit(i, int(self.prefill_len[i]))
            self.prefilling.append([i, int(self.prefill_len[i] - self.cached[i]) if limits.include_prefill else 0])
        if self.waiting and self.running.size + len(self.prefilling) < limits.max_num_seqs:
            self.kv_full = True  # a request waits with a sequence free: the KV cache alone holds it back

    def _advance(self, dt_or_ends, emitted: np.ndarray, remaining: np.ndarray | None = None) -> None:
        """Book the time spent and the tokens each running sequence emitted; retire the finished ones.  ``remaining``:
        the running sequences' tokens left, where the caller has read them already."""
        run = self.running
        left = self.remaining[run] if remaining is None else remaining
        emitted = np.minimum(emitted, left)
        self.ctx[run] += emitted
        left = left - emitted
        self.remaining[run] = left
        over = left == 0
        if np.count_nonzero(over):  # (np.ndim's answer, read off the attribute: a Python float has none)
            self.finish_requests(run[over], dt_or_ends[over] if getattr(dt_or_ends, "ndim", 0) else dt_or_ends)
            self.running = run[~over]

    def scheduled(self, b: int, g: int) -> tuple:
        """(n, drafts): the first n of the ``b`` running sequences (in the order they started decoding) that an
        iteration at gamma ``g`` schedules, the last of them with ``drafts`` draft tokens where the budget cut its round
        (None: a whole round); the rest wait (:meth:`EngineLimits.decoding_scheduled`, the limits' rule)."""
        got = self._scheduled.get((b, g))
        if got is None:
            whole, partial = (int(x) for x in self.limits.decoding_scheduled(b, g))
            got = self._scheduled[b, g] = (whole + 1, partial - 1) if partial else (whole, None)
        return got

    def _cut(self, emitted: np.ndarray, n: int, drafts: int | None) -> np.ndarray:
        """``emitted`` (sequences x rounds) for the first n sequences scheduled: the last's accepted drafts cut to
        ``drafts`` (one draw u a round accepts the first k drafts with u < c_k, so a round cut to fewer drafts accepts
        the least of the two counts), and no token for the sequences that wait."""
        if drafts is not None:
            emitted[n - 1] = 1 + np.minimum(emitted[n - 1] - 1, drafts)
        emitted[n:] = 0
        return emitted

    def prefill_iteration(self, b: int, g: int) -> None:
        """One iteration: every running sequence's round and prompt chunks in the token budget left; where the engine
        runs prefill apart (:attr:`EngineLimits.prefill_apart`), a prefill batch of the base pass and the chunks alone,
        the running sequences waiting."""
        budget = self._budget.get((b, g))
        if budget is None:
            budget = self._budget[b, g] = max(int(self.limits.prefill_budget(b, g)), 0)
        table = self.table
        chunk, completed, prefill_s = 0, [], 0.0
        for item in self.prefilling:
            take = min(item[1], budget - chunk)
            # Each prompt's piece attends to its own earlier tokens only (and those a prefix-cache hit served): it costs
            # what extending that prompt's prefill from its tokens done so far costs, so a prompt prefilled in pieces
            # costs its whole prefill once.
            i = item[0]
            prefill_s += table.chunk_s(int(self.prefill_len[i]) - item[1], take, self.speculating, int(self.cached[i]))
            item[1] -= take
            chunk += take
            if item[1] == 0:
                completed.append(item[0])
            if chunk >= budget:
                break
        n, drafts = self.scheduled(b, g) if b and not self.limits.prefill_apart else (0, None)
        decoding = n
        ctx = self.ctx[self.running[:n]].sum() / n if n else 0.0  # the mean, as np.mean sums it
        base = table.base_spec_s if self.speculating and self.limits.prefill_apart else table.base_s
        dt = float(iteration_s(float(table.round_s(n, ctx, g)) if n else base, prefill_s))
        emitted = (
            self._cut(
                _emit(self.rng, self._rates(self.running), g, b, 1, table.verified(n, np.array([ctx]), g)), n, drafts
            )[:, 0]
            if n
            else np.zeros(0)
        )
        if self.observer is not None:
            self.observer.iteration(
                self.t + dt,
                self.running[:decoding],
                emitted[:decoding, None] - 1,
                g,
                np.minimum(emitted, self.remaining[self.running[: emitted.size]]).sum(),
                chunk,
                len(completed),
                b + len(self.prefilling),
                len(self.waiting),
                drafts,
            )
        self.in_system += (b + len(self.prefilling) + len(self.waiting)) * dt
        self.batch_time[n if not self.limits.prefill_apart else b] += dt
        self.t += dt
        if decoding:
            self._advance(self.t, emitted)
        decoding_next = []
        for i in completed:
            self.prefilling.popleft()
            self.first[i] = self.t if math.isnan(self.first[i]) else self.first[i]  # a resumed request's came before
            self.ctx[i] = self.prefill_len[i] + 1
            self.remaining[i] -= 1
            if self.remaining[i] == 0:
                self.finish_requests(np.array([i]), self.t)
            else:
                decoding_next.append(i)
        if decoding_next:  # they join the running set in the order their prompts completed
            self.running = np.concatenate([self.running, np.array(decoding_next, dtype=self.running.dtype)])

    def wait_for_arrival(self) -> bool:
        """Idle until the next request arrives; False when none will."""
        if self.next_arrival >= self._limit:
            if self.waiting:  # pragma: no cover - admission always succeeds on an empty engine for fitting requests
                raise RuntimeError("a waiting request could not be admitted on an idle engine")
            return False
        self.t = max(self.t, self.arrival[self.next_arrival])
        return True

    def decode_jump(self, b: int, g: int) -> None:
        """Advance up to _JUMP rounds with this running set, stopping at the first completion or arrival.

        About as many rounds are drawn as the nearest completion needs at the mean rate (a few more), not all _JUMP.
        """
        run = self.running
        rem = self.remaining[run]
        # the first n decode (the budget's rule, :meth:`scheduled`), the rest wait: all of them unless the budget binds
        n, drafts = self.scheduled(b, g)
        ctx = self.ctx[run[:n]].sum() / n  # the mean, as np.mean sums it (and cheaper in this loop)
        per_round = self._per_round.get(g)
        if per_round is None:  # the tokens a round emits at the mean rate, read once per gamma and acceptance
            per_round = self._per_round[g] = 1.0 + (float(self.cum[:g].sum()) if g else 0.0)
        least = int(rem[:n].min())
        rounds = min(_JUMP, max(4, math.ceil(float(least) / per_round) + 3))
        if g == 0 and self.observer is None and n == b and drafts is None:
            # Plain decoding draws nothing: each round emits one token a sequence, so the round a sequence finishes in
            # is its tokens left less one, and until the first finishes the mean context grows by one a round (the
            # numbers the general case below gives, without its (sequences, rounds) arrays).
            finished_by = np.maximum(np.minimum(rem - 1, rounds), 0)
            k = min(max(least - 1, 0) + 1, rounds)  # the first to finish, from the least left (clipped as finished_by)
            k = self.kv.rounds_that_fit(
                run, self.ctx[run], lambda: np.minimum(np.arange(k)[None, :], rem[:, None] - 1), g, k
            )
            mean_before = ctx + np.arange(k, dtype=float)
            emitted = None
        else:
            verified = (
                self.table.verified(n, ctx + per_round * np.arange(rounds), g)
                if g and self.table.verified_table is not None
                else None
            )
            emitted = self._cut(_emit(self.rng, self._rates(run), g, b, rounds, verified), n, drafts)
            cum_e = emitted.cumsum(axis=1)
            # The round each sequence finishes in (rounds: none): every round emits at least one token to a scheduled
            # sequence, so its cum_e rises strictly and the rounds before it are those still short of what is left
            # (one that waits emits none, and finishes in none).
            finished_by = (cum_e < rem[:, None]).sum(axis=1)
            k = int(min(finished_by.min() + 1, rounds))
            k = self.kv.rounds_that_fit(run, self.ctx[run], lambda: np.pad(cum_e[:, : k - 1], ((0, 0), (1, 0))), g, k)
            mean_before = ctx + np.concatenate(([0.0], np.minimum(cum_e[:n, : k - 1], rem[:n, None]).sum(axis=0) / n))
        ends = self.t + self.table.round_s(n, mean_before, g).cumsum()
        due = self._next_event_s()
        if due < ends[-1]:
            k = int(ends.searchsorted(due, side="left")) + 1
            ends = ends[:k]
        if self.observer is not None:
            kept = np.minimum(cum_e[:, :k], rem[:, None])
            self.observer.rounds(
                ends,
                run[:n],
                emitted[:n, :k] - 1,
                g,
                np.diff(kept.sum(axis=0), prepend=0),  # the tokens kept in each round (whole numbers: exact)
                b + len(self.prefilling),
                len(self.waiting),
                cut=drafts,  # the last's drafts where the budget cut its round
            )
        span = ends[-1] - self.t
        self.in_system += (b + len(self.prefilling) + len(self.waiting)) * span
        self.batch_time[n] += span
        self._advance(
            ends[np.minimum(finished_by, k - 1)], np.full(run.size, k) if emitted is None else cum_e[:, k - 1], rem
        )
        self.t = ends[-1]
        # Arrivals that came during the jump join the queue with their own times (in_system counted them from t).


def _most_running(max_num_seqs: int, concurrency: object = None) -> int:
    """The most sequences an engine can run at once: its ``max_num_seqs``, or the users of a closed loop where they are
    fewer (each has one request in flight).  A concurrency that is not a whole number >= 1 is left to
    :func:`simulate` to refuse."""
    if isinstance(concurrency, (int, np.integer)) and not isinstance(concurrency, bool) and concurrency >= 1:
        return min(int(max_num_seqs), int(concurrency))
    return int(max_num_seqs)


def simulate(
    requests,
    table: StepTable,
    limits: EngineLimits,
    acceptance: object = 0.0,
    gamma: object = 0,
    rng: np.random.Generator | None = None,
    concurrency: int | None = None,
    reserve_bytes: np.ndarray | None = None,
    label: str = "",
    acceptance_changes: list | None = None,
    observer=None,
    acceptance_spread: float = 0.0,
    kv_bytes_of=None,
) -> ServeResult:
    """Play ``requests`` through one engine.

    Parameters
    ----------
    requests : specsim.serving.workloads.Requests
        Arrivals (None with ``concurrency``: a closed loop), prompt and output tokens.
    table : StepTable
        Round times of the deployment.
    limits : EngineLimits
        max_num_seqs, token budget, KV capacity in bytes.
    acceptance : float or Acceptance
        Per-token alpha or per-position rates (used when gamma > 0).
    gamma : int or ndarray
        0: no speculation; an int: fixed gamma; an array indexed by running batch (1..max_num_seqs).
    rng : numpy Generator
        Draws of accepted tokens.
    concurrency : int or None
        Users of a closed loop: each sends its next request when the last one finishes.
    reserve_bytes : ndarray or None
        KV bytes each request reserves for its whole length (:func:`specsim.serving.capacity.sequence_kv_bytes`);
        None: nothing is reserved, and only ``max_num_seqs`` limits admission.
    kv_bytes_of : callable or None
        A request's KV bytes at a number of tokens (``sequence_kv_bytes`` for the arm): with it, requests hold the KV
        cache as the engine's policy holds it (``limits.kv_policy``: blocks as tokens arrive and preemption where they
        run out, for vLLM; :mod:`specsim.serving.kv_blocks`); None: each reserves ``reserve_bytes`` whole.
    acceptance_changes : list of (seconds, acceptance) or None
        The acceptance from each of these times on (a new system prompt or checkpoint meets the drafter then); a
        round that starts after a change draws from it.
    observer : object or None
        Told what the engine does, as an engine's metrics count it (:class:`specsim.serving.counters.StepCounters`): each round's accepted
        drafts per sequence, the tokens and prompt tokens of each iteration, each finished request.
    acceptance_spread : float
        The standard deviation of the acceptance rate across the requests' prompts: each request draws its own rate,
        the rate plus that times a standard normal, kept in [0, 1] (0: every request draws from the one rate; needs one
        rate, not one per position, and no ``acceptance_changes``).  :func:`specsim.serving.rounds.decode_rounds_spread`
        is the same model.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    if np.ndim(gamma) == 0:
        gamma_by_batch = np.full(limits.most_seqs + 1, int(gamma), dtype=int)
    else:
        gamma_by_batch = np.asarray(gamma, dtype=int)
    gmax = int(gamma_by_batch.max())
    # a speculating engine's own max_num_seqs (SGLang's 48), and the budget its drafter's slots take (vLLM's)
    limits = limits.arm(gmax > 0).for_deployment(table.dep)
    if gamma_by_batch.size < _most_running(limits.max_num_seqs, concurrency) + 1:
        raise ValueError(
            "a gamma schedule needs one entry per batch size 0..max_num_seqs (0..the users, where a closed loop has "
            "fewer)"
        )
    if gmax > table.gamma_max:
        raise ValueError(f"the step table holds gamma up to {table.gamma_max}, the policy uses {gmax}")
    cum = as_acceptance(acceptance).cumulative_rates(gmax)
    changes = sorted((float(t), as_acceptance(a).cumulative_rates(gmax)) for t, a in (acceptance_changes or ()))
    reserve = np.zeros(len(requests)) if reserve_bytes is None else np.asarray(reserve_bytes, dtype=float)
    by_request = None
    if acceptance_spread > 0 and gmax > 0:
        alpha = as_acceptance(acceptance).alpha
        if alpha is None or changes:
            raise ValueError("a spread of acceptance across prompts needs one acceptance rate and no changes of it")
        rates = np.clip(alpha + acceptance_spread * rng.standard_normal(len(requests)), 0.0, 1.0)
        by_request = rates[:, None] ** np.arange(1, gmax + 1)
    eng = _Engine(
        requests,
        table,
        limits,
        cum,
        gamma_by_batch,
        rng,
        concurrency,
        reserve,
        changes,
        observer,
        by_request,
        kv_bytes_of,
    )
    eng.speculating = gmax > 0  # the drafter's network runs over every prompt too
    while eng.done < eng.n:
        eng.change_acceptance()
        eng.arrive(eng.t)
        eng.kv.make_room(eng, int(gamma_by_batch[eng.running.size]) if eng.running.size else 0)
        eng.admit()
        b = eng.running.size
        g = int(gamma_by_batch[b]) if b else 0
        if eng.prefilling:
            eng.prefill_iteration(b, g)
        elif b:
            eng.decode_jump(b, g)
        elif not eng.wait_for_arrival():
            break
    notes = []
    if eng.rejected.any():
        notes.append(f"{int(eng.rejected.sum())} request(s) need more KV than the engine holds and were never served")
    return ServeResult(
        eng.arrival,
        eng.first,
        eng.finish,
        eng.prompt,
        eng.output,
        eng.rejected,
        eng.batch_time,
        eng.in_system,
        label,
        notes,
        eng.kv_full,
        eng.kv.preemptions,
        eng.kv.recomputed_tokens,
    )


def simulate_speculating(
    dep: Deployment,
    requests,
    acceptance: object,
    gamma: int,
    limits: EngineLimits,
    kv_bytes: float,
    rng: np.random.Generator,
    acceptance_changes: list | None = None,
    observer=None,
) -> ServeResult:
    """Play ``requests`` (with their arrival times) through ``dep`` speculating ``gamma`` tokens a round, each request
    reserving its whole length of target and draft KV in ``kv_bytes``: one engine's run as serve-sim's speculative one
    plays it, with ``acceptance_changes`` and an ``observer`` (:func:`simulate`)."""
    prompt, output = np.asarray(requests.prompt), np.asarray(requests.output)
    table = StepTable(dep, limits.most_seqs, int((prompt + output).max()), gamma, limits.max_batched_tokens, acceptance)
    reserve = sequence_kv_bytes(dep, (prompt + output).astype(float), True, max(int(gamma), 1))
    return simulate(
        requests,
        table,
        dataclasses.replace(limits, kv_capacity_bytes=kv_bytes),
        acceptance,
        gamma,
        rng,
        reserve_bytes=reserve,
        kv_bytes_of=functools.partial(sequence_kv_bytes, dep, with_draft=True, draft_tokens=max(int(gamma), 1)),
        label=f"gamma {gamma}",
        acceptance_changes=acceptance_changes,
        observer=observer,
    )


def _emit(
    rng: np.random.Generator, cum: np.ndarray, gamma: int, batch: int, rounds: int, verified: np.ndarray | None = None
) -> np.ndarray:
    """Tokens each of ``batch`` sequences emits in each of ``rounds`` rounds: 1 + accepted drafts (``cum``: the
    cumulative rates, or a row of them per sequence).  With ``verified``
    (the mean draft tokens verified per sequence in each round, a prefix-verifying drafter's), a sequence verifies
    floor(v) or floor(v) + 1 of them, with the mean v, and accepts only among those."""
    if gamma == 0:
        return np.ones((batch, rounds), dtype=np.int64)
    u = rng.random((batch, rounds, 1))
    # one set of cumulative rates for every sequence, or one row per sequence (prompts that accept differently)
    accepted = u < (cum[None, None, :gamma] if cum.ndim == 1 else cum[:, None, :gamma])
    if verified is not None:
        v = np.broadcast_to(np.asarray(verified, dtype=float), (rounds,))
        n = np.floor(v)[None, :] + (rng.random((batch, rounds)) < (v - np.floor(v))[None, :])
        accepted &= np.arange(gamma)[None, None, :] < n[:, :, None]
    return 1 + accepted.sum(axis=2)


def serve_compare(
    dep: Deployment,
    requests,
    acceptance: object,
    gamma: object = "schedule",
    limits: EngineLimits | None = None,
    concurrency: int | None = None,
    seed: int = 0,
    memory_utilization: float | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    context_hint: float | None = None,
    shared: dict | None = None,
):
    """Simulate ``requests`` without and with speculation on ``dep``: ``(plain, spec, meta)``.

    ``gamma``: an int (fixed) or ``"schedule"`` (the optimal gamma per running batch at ``context_hint``,
    default the workload's mean prompt plus half its mean output).  The KV capacity is the capacity
    model's (:func:`specsim.serving.capacity.capacity`): the plain run holds the target alone, the speculative run
    the target and the draft, and each request holds :func:`specsim.serving.capacity.sequence_kv_bytes` of its
    tokens, window layers capped at their window, as the engine's KV policy holds them (``limits.kv_policy``): where
    the engine reserves the whole length a run of equal requests admits exactly the batch ``specsim capacity`` reports
    at that length; vLLM, taking blocks as tokens arrive, holds more and preempts (``meta["kv_policy"]`` says which).

    ``shared``: the gamma schedules and step tables of other runs on this ``dep`` at this ``acceptance`` (a sweep's:
    a seed draws the same lengths at every rate), taken where they are for these lengths and filled where not.
    """
    # The engine's own limits where none are given (vLLM's start-up profiles with them).
    budget, seqs = (None, None) if limits is None else (limits.max_batched_tokens, limits.max_num_seqs)
    limits = EngineLimits() if limits is None else limits
    prompt, output = np.asarray(requests.prompt), np.asarray(requests.output)
    max_context = int((prompt + output).max())
    hint = float(mean_context_tokens(prompt.mean(), output.mean())) if context_hint is None else float(context_hint)
    # A closed loop never runs more sequences than it has users: the schedule and the step table stop there (and the
    # step-time source is not asked, nor notes anything, about batches the load cannot reach).
    most = _most_running(limits.most_seqs, concurrency)
    gamma_max = check_int("gamma_max", gamma_max, 0, MAX_GAMMA)
    if gamma == "schedule":
        best = _shared(
            shared,
            ("schedule", most, hint, gamma_max),
            lambda: optimal_gamma(dep, acceptance, np.arange(1, most + 1), hint, gamma_max),
        )
        policy = np.r_[0, best.gamma]
        label = f"per-batch optimal gamma (0..{best.gamma_max}) at L = {hint:.0f}"
    else:
        if isinstance(gamma, str):
            raise ValueError(f"gamma must be 'schedule' or a whole number in [0, {MAX_GAMMA}], got {gamma!r:.40}")
        policy = check_int("gamma", gamma, 0, MAX_GAMMA)  # 0.5 was run as 0, speculation silently off
        label = f"gamma {policy}"
    gmax = int(np.max(policy))
    # A hybrid target's speculative scratch is reserved for the engine's num_speculative_tokens: the largest gamma run.
    scratch = max(gmax, 1)
    cap = capacity(
        dep,
        max(int(hint), 1),
        memory_utilization,
        scratch,
        f"the largest gamma of the simulation's policy ({label})",
        budget,
        seqs,
    )
    for speculating, free in ((False, cap.free_bytes_without_draft), (True, cap.free_bytes_with_draft)):
        if free <= 0:
            raise ValueError(no_room_said(dep, speculating, free, cap.memory_basis, fits_at=fitting_tp_for(dep, cap)))
    table = _shared(
        shared,
        ("table", most, max_context, gmax, limits.max_batched_tokens),
        lambda: StepTable(dep, most, max_context, gmax, limits.max_batched_tokens, acceptance),
    )
    lengths = (prompt + output).astype(float)
    runs = []
    for name, with_draft, free, rule in (
        ("off", False, cap.free_bytes_without_draft, 0),
        ("on", True, cap.free_bytes_with_draft, policy),
    ):
        run_limits = dataclasses.replace(limits, kv_capacity_bytes=free)
        runs.append(
            simulate(
                requests,
                table,
                run_limits,
                acceptance,
                rule,
                np.random.default_rng(seed),
                concurrency,
                sequence_kv_bytes(dep, lengths, with_draft, scratch),
                label="off" if name == "off" else label,
                kv_bytes_of=functools.partial(sequence_kv_bytes, dep, with_draft=with_draft, draft_tokens=scratch),
            )
        )
    per_token = (
        dep.target.kv_bytes_per_token,
        dep.target.kv_bytes_per_token + (dep.draft.kv_bytes_per_token if dep.draft is not None else 0.0),
    )
    meta = {
        "kv_capacity_tokens_plain": cap.free_bytes_without_draft / per_token[0],
        "kv_capacity_tokens_spec": cap.free_bytes_with_draft / per_token[1],
        "kv_capacity_bytes_plain": cap.free_bytes_without_draft,
        "kv_capacity_bytes_spec": cap.free_bytes_with_draft,
        "memory_basis": cap.memory_basis,  # whose share of memory the cache is of (the engine's default, or given)
        "gamma_policy": label,
        "gamma_by_batch": np.atleast_1d(policy).tolist(),
        "context_hint": hint,
        "scratch_draft_tokens": cap.scratch_draft_tokens,
        "scratch_basis": cap.scratch_basis,
        "kv_policy": limits.for_deployment(dep).kv_policy.said,  # how the engine holds them (its own KvPolicy)
    }
    return runs[0], runs[1], meta


def _shared(store: dict | None, key: tuple, make):
    """``store[key]``, made by ``make()`` where missing (always made where there is no ``store``)."""
    if store is None:
        return make()
    if key not in store:
        store[key] = make()
    return store[key]


def _compare_one(job):
    """One run, and the notes its step-time source took meanwhile (in another process, they are the parent's to keep)."""
    dep, requests, acceptance, gamma, limits, concurrency, seed, memory_utilization, gamma_max = job
    result = serve_compare(dep, requests, acceptance, gamma, limits, concurrency, seed, memory_utilization, gamma_max)
    return result, dep.source.noted_items() if hasattr(dep.source, "noted_items") else []


def _tables_read_here(dep: Deployment) -> None:
    """Read what the step-time source composes for the target and the drafter (kernel tables) in this process, before
    the jobs leave for an executor's workers: each then receives them with the deployment, rather than every worker
    composing (and announcing) them at once where the cache does not hold them yet."""
    for model in (dep.target, dep.draft):
        if model is not None:
            dep.gpu_pass(model, 1, 1, 1)


def serve_compare_runs(
    dep: Deployment,
    request_sets: list,
    acceptance: object,
    gamma: object,
    limits: EngineLimits,
    concurrency: int | None,
    seeds: list,
    memory_utilization: float | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    executor=None,
    done=None,
) -> list:
    """:func:`serve_compare` of each request set with its seed (independent runs of one load): in order, through
    ``executor`` (any ``concurrent.futures`` executor, e.g. a process pool over the cores) where given; ``done`` is called
    once per finished run (a progress bar).  Each run's result is the same whichever executor runs it."""
    jobs = [
        (dep, r, acceptance, gamma, limits, concurrency, seed, memory_utilization, gamma_max)
        for r, seed in zip(request_sets, seeds)
    ]
    if executor is None:
        out = []
        for job in jobs:
            out.append(_compare_one(job)[0])
            if done is not None:
                done()
        return out
    _tables_read_here(dep)
    futures = [executor.submit(_compare_one, job) for job in jobs]
    for future in futures:
        future.add_done_callback(lambda _: done() if done is not None else None)
    out = []
    for future in futures:
        result, noted = future.result()
        out.append(result)
        if hasattr(dep.source, "take_notes"):  # what the runs' step-time source noted, each once, as in one process
            dep.source.take_notes(noted)
    return out


def requests_for(
    target,
    *,
    rate: float | None = None,
    concurrency: int | None = None,
    trace: str | None = None,
    workload: str | None = None,
    n: int | None = None,
    rng: np.random.Generator | None = None,
    lengths: tuple | None = None,
    draft=None,
):
    """The requests of a serving run, ``(requests, concurrency)``: Poisson arrivals at ``rate``, a closed loop of
    ``concurrency`` users, or a ``trace`` file (which gives its own lengths: no ``workload`` or ``n`` with it).

    ``workload`` and ``n`` default to :data:`specsim.core.workloads.DEFAULT_WORKLOAD` and :data:`DEFAULT_REQUESTS`;
    ``lengths`` (prompt, output) gives every request the same lengths instead, as a benchmark's random dataset does
    (``vllm bench serve --random-input-len P --random-output-len O``).  Every request must fit the target's context
    and the ``draft`` model's where one is given (``max_position_embeddings``, else specsim's limit).
    """
    from specsim.core.limits import MAX_CONTEXT
    from specsim.core.workloads import DEFAULT_WORKLOAD, get_workload
    from specsim.serving.workloads import Requests, read_trace

    if sum(x is not None for x in (rate, concurrency, trace)) != 1:
        raise ValueError("give exactly one of a rate, a concurrency or a trace")
    if trace is not None and (n is not None or workload is not None or lengths is not None):
        raise ValueError(trace_alone())
    if lengths is not None and workload is not None:
        raise ValueError(lengths_or_workload("lengths"))
    rng = np.random.default_rng(0) if rng is None else rng
    spec = get_workload(DEFAULT_WORKLOAD if workload is None else workload)
    n = DEFAULT_REQUESTS if n is None else n
    if trace is not None:
        requests = read_trace(trace)
    elif lengths is not None:
        P, O = (int(v) for v in lengths)
        arrivals = None if concurrency is not None else Requests.poisson(rate, n, spec, rng).arrival_s
        requests = Requests(
            np.full(n, P),
            np.full(n, O),
            arrivals,
            f"{'closed loop' if arrivals is None else f'Poisson, {rate:g} requests/s'}, every request {P} in, {O} out",
        )
    elif concurrency is not None:
        requests = Requests.closed_loop(n, spec, rng)
    else:
        requests = Requests.poisson(rate, n, spec, rng)
    # the tighter of the target's and the draft model's positions (a draft reads every token the target does)
    bound = min((m for m in (target, draft) if m is not None), key=lambda m: m.max_position_embeddings or MAX_CONTEXT)
    limit = bound.max_position_embeddings or MAX_CONTEXT
    lengths = np.asarray(requests.prompt) + np.asarray(requests.output)
    too_long = np.flatnonzero(lengths > limit)
    if too_long.size:
        raise ValueError(
            f"{too_long.size} request(s) need more than {limit:,} tokens (prompt + output), "
            + (
                f"{bound.name}'s context limit (max_position_embeddings)"
                if bound.max_position_embeddings
                else "specsim's limit"
            )
            + f"; the first, request {too_long[0] + 1}, needs {int(lengths[too_long[0]]):,}"
        )
    return requests, concurrency


def _sweep_requests(
    dep: Deployment, rate: float | None, users: int | None, workload, n: int, seed: int, lengths: tuple | None
):
    """The requests of one run of one load, drawn from ``seed``: Poisson arrivals at ``rate`` or a closed loop of
    ``users``, with the workload's lengths or every request ``lengths`` (:func:`requests_for`, which checks them
    against the target's context)."""
    from specsim.serving.workloads import Requests

    rng = np.random.default_rng(seed)
    if lengths is not None:
        return requests_for(dep.target, rate=rate, concurrency=users, n=n, rng=rng, lengths=lengths, draft=dep.draft)[0]
    if users is not None:
        return Requests.closed_loop(n, workload, rng)
    return Requests.poisson(rate, n, workload, rng)


def _sweep_point(args):
    """One run of one load (its requests drawn beforehand, :func:`_sweep_requests`; ``users`` None for Poisson
    arrivals): the summaries without and with speculation, and the deepest gamma it ran (:func:`deepest_gamma`)."""
    dep, requests, users, acceptance, gamma, limits, seed, slo_ttft_s, slo_tpot_s, gamma_max, shared = args
    plain, spec, meta = serve_compare(
        dep, requests, acceptance, gamma, limits, users, seed=seed, gamma_max=gamma_max, shared=shared
    )
    return (
        plain.summary(slo_ttft_s, slo_tpot_s),
        spec.summary(slo_ttft_s, slo_tpot_s),
        deepest_gamma(meta["gamma_by_batch"], [spec]),
    )


#: The columns of a sweep's row per arm (``off_`` and ``on_``), each with the summary figure it holds.
_SWEEP_COLUMNS = {
    "tpot_p50_s": ("tpot_s", "p50"),
    "tpot_p99_s": ("tpot_s", "p99"),
    "ttft_p50_s": ("ttft_s", "p50"),
    "ttft_p99_s": ("ttft_s", "p99"),
    "e2e_p50_s": ("e2e_s", "p50"),
    "tokens_per_s": ("output_tokens_per_s", None),
    "mean_batch": ("mean_running_batch", None),
}


def _sweep_row(load: str, value: float, runs: list) -> dict:
    """One row of a sweep from the (off, on) summaries of its runs at ``load`` ("rate" or "concurrency") ``value``:
    each figure the mean over the runs (:func:`summarize_runs`) and, with more than one run, ``<column>_ci``, the
    half-width of its 95% interval; ``gamma_ran`` the deepest gamma any of them ran."""
    row = {load: value, "gamma_ran": max(r[2] for r in runs)}  # (past an acceptance's measured steps: extrapolated)
    for i, name in enumerate(("off", "on")):
        s = summarize_runs([r[i] for r in runs])
        for column, (key, q) in _SWEEP_COLUMNS.items():
            value, half = (s[key], s["ci"][key]) if q is None else (s[key][q], s["ci"][key][q])
            row[f"{name}_{column}"] = value
            if len(runs) > 1:
                row[f"{name}_{column}_ci"] = half
        if "slo_met" in s:  # summed over the runs: the share of every run's served requests that met both SLOs
            row[f"{name}_slo_attainment"] = s["slo_met"] / max(s["served"], 1)
        row[f"{name}_past_capacity"] = past_capacity(s, load == "concurrency")
    if len(runs) > 1:
        row["runs"] = len(runs)
    return row


def _sweep_one(job):
    """One run of one rate (:func:`_sweep_point`), and the notes its step-time source took meanwhile (as
    :func:`_compare_one`)."""
    dep = job[0]
    return _sweep_point(job), dep.source.noted_items() if hasattr(dep.source, "noted_items") else []


def _sweep_point_noted(job):
    """One run of one rate here, in this process: its notes are already in ``dep.source`` (none to take back)."""
    return _sweep_point(job), None


def serve_sweep(
    dep: Deployment,
    rates,
    workload=None,
    n: int | None = None,
    acceptance: object = None,
    gamma: object = "schedule",
    limits: EngineLimits | None = None,
    seed: int = 0,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    executor=None,
    runs: int = 1,
    done=None,
    lengths: tuple | None = None,
    concurrencies=None,
):
    """:func:`serve_compare` at each Poisson ``rate`` (requests/s), or at each closed loop of ``concurrencies`` users
    (``rates`` None: ``vllm bench serve --max-concurrency`` swept), as a DataFrame with one row per load (its column
    ``rate`` or ``concurrency``); ``done`` is called as each simulation (a load and a seed) finishes (a progress bar).

    ``workload`` (a :class:`~specsim.core.workloads.Workload` or its name) and ``n`` default to
    :data:`specsim.core.workloads.DEFAULT_WORKLOAD` and :data:`DEFAULT_REQUESTS`; ``lengths`` (prompt, output)
    gives every request the same lengths instead, as ``vllm bench serve --random-input-len P --random-output-len O
    --request-rate R`` does (no ``workload`` with it).  ``acceptance`` None: the drafter's published acceptance on the
    workload at its median request's context, as serve-sweep takes it (at fixed lengths: chat's at theirs).  Every run's requests are drawn here, before any is simulated, so
    that a rate or a length the target cannot take is refused at once.

    The simulations are independent: ``executor`` (any :class:`concurrent.futures.Executor`, e.g. a
    ``ProcessPoolExecutor``, or a cluster's, such as dask.distributed's ``Client.get_executor()``) runs them
    in parallel; None runs them here, one after the other.  Each rate uses the same ``seed``, so the rates
    differ only in arrival spacing.  What the step-time source notes in a worker (data it extrapolates) is taken back
    into ``dep.source``, each note once, so the notes are the same whichever executor ran the rates.

    ``runs`` > 1 runs each rate with seeds ``seed``, ``seed + 1``, ... (as ``serve-sim --runs``): each figure is
    then the mean over the runs, beside it ``<column>_ci`` holds the half-width of its 95% confidence interval
    (:func:`summarize_runs`: Student t over the runs), SLO attainment is pooled over the runs' requests, and
    ``runs`` says how many.  One run (the default) gives the run's own figures and no interval columns.
    """
    import pandas as pd

    from specsim.core.workloads import DEFAULT_WORKLOAD, get_workload

    if lengths is not None and workload is not None:
        raise ValueError(lengths_or_workload("lengths"))
    workload = get_workload(DEFAULT_WORKLOAD if workload is None else workload)
    if acceptance is None:
        from specsim.core.workloads import acceptance_question

        context, question = acceptance_question(workload, lengths)
        acceptance, _ = dep.drafter.default_acceptance(dep.target, question, context)
    n = DEFAULT_REQUESTS if n is None else n
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a whole number >= 1, got {runs!r}")
    if (rates is None) == (concurrencies is None):
        raise ValueError("give request rates or concurrencies to sweep, not both")
    if concurrencies is not None:
        users = [int(c) for c in concurrencies]
        if not users or any(isinstance(c, bool) or int(c) != c or c < 1 for c in concurrencies):
            raise ValueError(f"concurrencies must be whole numbers >= 1, got {list(concurrencies)!r}")
        load, values, loads = "concurrency", users, [(None, c) for c in users]
    else:
        if isinstance(rates, (str, bytes)) or not hasattr(rates, "__iter__"):
            raise ValueError(f"rates must be a list of request rates (requests/s), got {rates!r:.40}")
        values = [float(rate) for rate in rates]
        if not values or not all(np.isfinite(v) and v > 0 for v in values):
            raise ValueError(f"rates must be a non-empty list of request rates > 0 (requests/s), got {values!r:.60}")
        load, loads = "rate", [(rate, None) for rate in values]
    for name, slo in (("slo_ttft_s", slo_ttft_s), ("slo_tpot_s", slo_tpot_s)):
        if slo is not None and not (is_real(slo) and np.isfinite(slo) and slo > 0):
            raise ValueError(f"{name} must be a time > 0 in seconds, or None, got {slo!r:.40}")
    # One job per load and seed, load by load, so that a load's runs come back together and in order; the jobs run
    # here share their step tables (a process of an executor's builds its own).
    shared: dict = {}
    jobs = [
        (
            dep,
            _sweep_requests(dep, rate, users, workload, n, seed + k, lengths),
            users,
            acceptance,
            gamma,
            limits,
            seed + k,
            slo_ttft_s,
            slo_tpot_s,
            gamma_max,
            shared,
        )
        for rate, users in loads
        for k in range(runs)
    ]
    if executor is not None:
        _tables_read_here(dep)
    finished = []
    for result, noted in map(_sweep_point_noted, jobs) if executor is None else executor.map(_sweep_one, jobs):
        finished.append(result)
        if noted is not None and hasattr(dep.source, "take_notes"):
            dep.source.take_notes(noted)
        if done is not None:
            done()
    return pd.DataFrame([_sweep_row(load, v, finished[i * runs : (i + 1) * runs]) for i, v in enumerate(values)])


def sweep_findings(frame, attainment: float = DEFAULT_SLO_ATTAINMENT) -> dict:
    """The first load (a rate, or a concurrency where the sweep was of closed loops) at which speculation no longer
    lowers TPOT p50, and the largest load meeting the SLOs (``attainment`` of requests) without and with speculation;
    None where no swept load qualifies."""
    if len(frame) == 0:
        raise ValueError("the sweep holds no load: sweep at least one rate or concurrency")
    load = sweep_load(frame)[0]
    worse = frame[frame.on_tpot_p50_s >= frame.off_tpot_p50_s]
    out = {f"speculation_stops_helping_at_{load}": None if worse.empty else float(worse[load].min())}
    for name in ("off", "on"):
        col = f"{name}_slo_attainment"
        if col in frame:
            ok = frame[frame[col] >= attainment]
            out[f"max_{load}_meeting_slo_{name}"] = None if ok.empty else float(ok[load].max())
    return out


def sweep_load(frame) -> tuple[str, str, str]:
    """A :func:`serve_sweep` frame's loads: (the column that holds them, their unit, an axis label): closed loops'
    users where the sweep was of those, else Poisson rates."""
    if "concurrency" in frame:
        return "concurrency", "users", "concurrency (users of a closed loop)"
    return "rate", "requests/s", "request rate (requests/s, Poisson)"
