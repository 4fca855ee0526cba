"""Each step of the preemption charge's derivation (:mod:`specsim.serving.preemption`) against the request-level
simulator, read off the simulator's own ledger while it runs (read-only instrumentation: this script wraps
:class:`specsim.serving.kv_blocks.KvBlocks` and the simulated engine's admission in this process; the product is not
changed).

For each case, plain and speculating, over the steady part of the run (a closed loop: past the case's first waves
and before the last, as ``steady_vs_sim_kv.py`` reads it; Poisson arrivals: the middle half of the finishes, as
``steady_vs_sim_open.py``), it prints

* the charge: N_e (the steady state's), m (preemptions a request), L (tokens a resume recomputes), R = m L;
* the simulator's m, L and R over the requests finished in the span, the share of them preempted at least once, the
  most times one request was, and all its preemptions over the whole run (the count the benchmarks print: the
  instrumented run is the same run);
* who is preempted: the share of victims that were the newest admitted of the requests in flight (vLLM 0.33.0
  ``v1/core/sched/scheduler.py`` L938-970: ``self.running[-1]``), the output they had decoded (and the tokens they
  had gained since their last admission), the share preempted again after a resume;
* the wait at the queue's front from a preemption to the resume, in inter-finish intervals (the charge: half of
  one), and m times it: the preempted requests in the queue by Little's law (the charge: m / 2);
* the fragment: the free KV an iteration leaves after its admissions, as a share of the queue's head's need
  (quantiles), and the share of iterations following one with a finish that preempted;
* the finishes: per iteration (mean lambda, variance / mean), the share of iterations with none, z, beside the
  share Poisson finishes would leave, e^-lambda, and the share convoys of G = (the prompt tokens an iteration's budget
  takes beside N_e decoding) / P prompts finishing together would, 1 - lambda / G; and R as O z, O e^-lambda and
  O (1 - lambda / G).

Why O z: vLLM frees a finished request's blocks after its step and grows the running requests' blocks before it
admits (scheduler.py L938-970 before the waiting loop at L1066), and admits while the head's prompt fits, so an
iteration meets its growth with what the last admissions left, f (less than the head's need, P), and what the
iteration before it freed.  After an iteration with a finish that is at least P + O, more than an iteration's growth
b (N_e tokens plain): it never preempts.  After one with none it preempts where b > f, the newest, just admitted and
holding about P; with f spread evenly over [0, P) that is b / P of them, about b tokens recomputed.  Per request, z b
over the lambda = b / O finishes an iteration: R = O z.  Where outputs are long lambda is small and z near 1: R = O,
the charge's.

* what sets z past capacity, the iterations with a finish taken apart: the share of the finished requests preempted
  at least once, p1; the share of iterations with a finish of a request never preempted, beside lambda (1 - p1) / G
  (their prompts went through the budget back to back, G an iteration: one wave a cycle); the share with finishes of
  preempted requests alone, beside p1 lambda (each finishes once, alone, off the wave: its wait moved it); and the
  preemptions a preempted request, m / p1, beside 1 + r, r = 1 - (b - O + L - P) / P (in [0, 1]), the chance that a
  finish off the wave frees room for the queue's head, a request just preempted that is then the newest again, with
  the fragment f spread evenly over [0, P).  Plain, the shares hold within a few hundredths; speculating, acceptance
  spreads the wave's edges and the lone finishes meet others (``docs/serving.md``).

With ``--cycle`` it prints instead the preempted wait's anatomy (``docs/serving.md``, "Long outputs past capacity"):
the rule keeps the requests in arrival order (the running are the oldest unfinished, the preempted wait behind them), so
the requests preempted and waiting, S - N_e, are those admitted once and not running; it prints their number by Little
(m x the mean wait x the rate) and as the time mean of the engine's own count, the mean wait of a request's first
preemption and of the later ones, the bursts in which that queue empties and the engine admits fresh requests, their
period in finishes (and over N_e), and where in it the preemptions fall.

    python benchmarks/preemption_anatomy.py [--only 0,3] [--cycle]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # steady_vs_sim_kv beside it

# (label, users (None: Poisson at a multiple of the KV-bound capacity), prompt, output, gamma, rate multiple, requests,
# closed loops: waves skipped at the start)
CASES = [
    # short outputs, the CLI's default 256: as steady_vs_sim_kv.py (case 10) and steady_vs_sim_open.py (case 7) run them
    ("closed 512u 1000/256", 512, 1000, 256, 3, None, 8 * 512, 3),
    ("poisson 1.5x 1000/256", None, 1000, 256, 3, 1.5, 4000, 0),
    ("poisson 1.1x 1000/256", None, 1000, 256, 3, 1.1, 4000, 0),
    # the same, run four to six times longer: the runs above are not yet past their start
    ("closed 512u 1000/256 late", 512, 1000, 256, 3, None, 48 * 512, 40),
    ("poisson 1.5x 1000/256 long", None, 1000, 256, 3, 1.5, 16000, 0),
    ("poisson 1.1x 1000/256 long", None, 1000, 256, 3, 1.1, 16000, 0),
    # long outputs: steady_vs_sim_kv.py's cases 0 and 1, steady_vs_sim_open.py's case 0 at 1.5x
    ("closed 512u 1000/2000", 512, 1000, 2000, 3, None, 8 * 512, 3),
    ("closed 512u 1000/8000", 512, 1000, 8000, 3, None, 8 * 512, 3),
    ("poisson 1.5x 1000/2000", None, 1000, 2000, 3, 1.5, 3000, 0),
    # shorter and longer outputs past capacity, run long
    ("poisson 1.5x 1000/128 long", None, 1000, 128, 3, 1.5, 16000, 0),
    ("poisson 1.5x 1000/1024 long", None, 1000, 1024, 3, 1.5, 8000, 0),
    # held out from the preempted wait's derivation (docs/serving.md, "Long outputs past capacity"): chosen before it
    # was run on any case, read only after it was fixed
    ("poisson 1.3x 1000/4000 held out", None, 1000, 4000, 3, 1.3, 3000, 0),
    ("poisson 1.5x 2000/8000 held out", None, 2000, 8000, 3, 1.5, 3000, 0),
    ("poisson 1.5x 500/4000 held out", None, 500, 4000, 3, 1.5, 3000, 0),
    # the long-output rows the wait was looked at on (docs/serving.md): steady_vs_sim_open.py's 1,000/8,000 at 1.5 x,
    # 1,000/2,000 at 1.1 x
    ("poisson 1.5x 1000/8000", None, 1000, 8000, 3, 1.5, 3000, 0),
    ("poisson 1.1x 1000/2000", None, 1000, 2000, 3, 1.1, 3000, 0),
    # 1,000/2,000 run longer, and at 2 x: whether the wait is the run's start (docs/serving.md)
    ("poisson 1.5x 1000/2000 long", None, 1000, 2000, 3, 1.5, 8000, 0),
    ("poisson 1.1x 1000/2000 long", None, 1000, 2000, 3, 1.1, 8000, 0),
    ("poisson 2x 1000/2000", None, 1000, 2000, 3, 2.0, 3000, 0),
]


class Ledger:
    """What the wrapped simulator did: preemptions, admissions and each iteration's free KV."""

    def __init__(self):
        self.preempted = []  # (t, request, recomputed tokens, decoded since its last admission, newest?, resumed?)
        self.steps = []  # (t, free tokens after admissions, head's need in tokens, finished just before?, preempted?)
        self.order = {}  # request -> its last admission's sequence number
        self.seq = 0
        self.finished_since = 0
        self.preempted_now = 0
        self.times = {}  # request -> times preempted
        self.admitted_at = {}  # request -> the tokens it was admitted with last
        self.out_since = {}  # preempted request -> when
        self.waits = []  # (preempted at, admitted again at)
        self.series = []  # (t, requests in flight, preempted requests waiting) after each iteration's admissions
        self.first = set()  # requests preempted at least once (a preemption's "first" if not in it before)
        self.pending = {}  # preempted request -> whether that preemption was its first
        self.waits_first = []  # (preempted at, admitted again at, its first preemption?)
        self.fresh = {}  # request -> when it was first admitted
        self.now = lambda: float("nan")


_NOW: list = []  # the ledger the wrapped simulator writes to now


def instrument() -> None:
    """Wrap the simulator's KV ledger and admission in this process (once) so that the ledger last pushed on ``_NOW``
    records what they do."""
    from specsim.serving import simulator
    from specsim.serving.kv_blocks import KvBlocks

    if getattr(KvBlocks._preempt, "anatomy", False):
        return
    preempt, admit_one, release, engine_admit = (
        KvBlocks._preempt,
        KvBlocks.admit,
        KvBlocks.release,
        simulator._Engine.admit,
    )

    def per_token(kv) -> float:
        b = kv.policy.block_tokens
        return (float(kv.bytes_of(2 * b)) - float(kv.bytes_of(b))) / b

    def _preempt(self, eng, j):
        ledger = _NOW[-1]
        flight = [int(i) for i in eng.running] + [int(item[0]) for item in eng.prefilling]
        newest = max(flight, key=lambda i: ledger.order.get(i, -1)) == j
        was_running = j in set(int(i) for i in eng.running)
        before = self.recomputed_tokens
        preempt(self, eng, j)
        done = self.recomputed_tokens - before
        if done:
            decoded = done - int(eng.prompt[j]) if was_running else 0
            since = done - ledger.admitted_at.get(j, done)  # tokens gained since its last admission
            ledger.times[j] = ledger.times.get(j, 0) + 1
            ledger.preempted.append((eng.t, j, done, since, newest, ledger.times[j] > 1, decoded))
            ledger.out_since[j] = eng.t
            ledger.pending[j] = j not in ledger.first
            ledger.first.add(j)
            ledger.preempted_now += 1

    def admit(self, i, tokens):
        ledger = _NOW[-1]
        ledger.seq += 1
        ledger.order[int(i)] = ledger.seq
        ledger.admitted_at[int(i)] = int(tokens)
        ledger.fresh.setdefault(int(i), ledger.now())
        if int(i) in ledger.out_since:  # a resume: how long it waited preempted
            ledger.waits.append((ledger.out_since.pop(int(i)), ledger.now()))
            ledger.waits_first.append((*ledger.waits[-1], ledger.pending.pop(int(i))))
        admit_one(self, i, tokens)

    def _release(self, ids):
        _NOW[-1].finished_since += int(np.size(ids))
        release(self, ids)

    def _engine_admit(self):
        _NOW[-1].now = lambda: self.t
        engine_admit(self)
        ledger, kv = _NOW[-1], self.kv
        ledger.series.append((self.t, len(self.running) + len(self.prefilling), len(ledger.out_since)))
        if not kv.on_demand or kv.stale or not self.waiting:
            ledger.finished_since, ledger.preempted_now = 0, 0
            return
        unit = per_token(kv)
        head = int(self.prefill_len[self.waiting[0]])
        ledger.steps.append(
            (self.t, (kv.capacity - kv.used) / unit, head, ledger.finished_since > 0, ledger.preempted_now > 0)
        )
        ledger.finished_since, ledger.preempted_now = 0, 0

    _preempt.anatomy = True
    KvBlocks._preempt, KvBlocks.admit, KvBlocks.release = _preempt, admit, _release
    simulator._Engine.admit = _engine_admit


class Clock:
    """An observer (:class:`specsim.serving.counters.StepCounters`'s interface) that keeps the end of every iteration
    and every finish time: how many requests finish in each iteration."""

    def __init__(self):
        self.ends, self.finishes = [], []

    def iteration(self, end, *args, **kwargs):
        self.ends.append(float(end))

    def rounds(self, ends, *args, **kwargs):
        self.ends.extend(np.asarray(ends, dtype=float).tolist())

    def finished(self, ids, at, *args):
        self.finishes.extend(np.asarray(at, dtype=float).tolist())

    def per_iteration(self, t0: float, t1: float) -> np.ndarray:
        """Requests finished in each iteration ending in (t0, t1]."""
        ends = np.unique(np.asarray(self.ends))
        ends = ends[(ends > t0) & (ends <= t1)]
        at = np.asarray(self.finishes)
        at = at[(at > t0) & (at <= t1)]
        return np.bincount(np.searchsorted(ends, at), minlength=ends.size)[: ends.size]


def _case_runs(case) -> tuple:
    """(runs, ledgers, steady state, limits, deployment): ``case`` (one of :data:`CASES`) simulated plain and
    speculating with the ledger on."""
    from specsim.serving.steady import engine_limits, served_state
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    label, users, P, O, gamma, multiple, n, skip = case
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm")
    limits, _ = engine_limits(dep.engine, dep.hardware)
    if users is None:  # the KV-bound capacity as steady_vs_sim_open.py takes it
        big = served_state(dep, 0.8, [0], [4096], P, O, limits=limits)
        cap = served_state(dep, 0.8, [0], [float(big.in_engine[0, 0])], P, O, limits=limits)
        load = multiple * float(cap.requests_per_s[0, 0])
        s = served_state(dep, 0.8, [0, gamma], [load], P, O, limits=limits, kind="rate")
        arrivals = np.cumsum(np.random.default_rng(0).exponential(1.0 / load, n))
    else:
        s = served_state(dep, 0.8, [0, gamma], [users], P, O, limits=limits)
        arrivals = None
    runs, captured = ledgered_runs(dep, Requests(np.full(n, P), np.full(n, O), arrivals), 0.8, gamma, limits, users)
    return runs, captured, s, limits, dep


def run_case(case) -> list[dict]:
    """Simulate ``case`` (one of :data:`CASES`) plain and speculating with the ledger on; one row of counts per arm."""
    runs, captured, s, limits, dep = _case_runs(case)
    return [
        _row(run, ledger, limits.arm(i > 0).for_deployment(dep), s, i, case)
        for i, (run, ledger) in enumerate(zip(runs, captured))
    ]


def ledgered_runs(dep, requests, alpha, gamma, limits, users, seed=None):
    """(runs, ledgers): serve_compare's plain and speculating runs of ``requests``, each watched by a fresh
    :class:`Ledger` (``preemption_varied.py`` reads its ledgers too)."""
    from specsim.serving import simulator

    captured, real_simulate = [], simulator.simulate

    def capture(*a, **k):  # serve_compare's two runs, each with a fresh ledger
        ledger = Ledger()
        captured.append(ledger)
        _NOW.append(ledger)
        k["observer"] = ledger.clock = Clock()
        return real_simulate(*a, **k)

    instrument()
    simulator.simulate = capture
    try:
        extra = {} if seed is None else {"seed": seed}
        runs = simulator.serve_compare(dep, requests, alpha, gamma, limits, concurrency=users, **extra)[:2]
    finally:
        simulator.simulate = real_simulate
    return runs, captured


def _row(run, ledger, arm_limits, s, i: int, case) -> dict:
    """The counts of one arm's run over its steady part (the module's docstring)."""
    from specsim.serving.preemption import closed_loop_preemption

    label, users, P, O, gamma, multiple, n, skip = case
    n_e = float(s.in_engine[i, 0])
    g = gamma if i else 0
    m, L = closed_loop_preemption(arm_limits.kv_policy, np.inf if users is None else users, n_e, "kv cache", P, O)
    ends = np.sort(run.finish_s)
    a, b = (skip * users, n - users) if users is not None else (n // 4, 3 * n // 4)
    t0, t1 = float(ends[a]), float(ends[b])
    finished = int(((run.finish_s > t0) & (run.finish_s <= t1)).sum())
    ev = [e for e in ledger.preempted if t0 < e[0] <= t1]
    st = [e for e in ledger.steps if t0 < e[0] <= t1]
    counts = np.bincount([e[1] for e in ev]) if ev else np.zeros(1)
    done = np.array([e[2] for e in ev], dtype=float)
    f = np.array([e[1] / max(e[2], 1) for e in st])
    after_finish = np.array([e[3] for e in st], dtype=bool)
    pre = np.array([e[4] for e in st], dtype=bool)
    k = ledger.clock.per_iteration(t0, t1)
    lam, zero = float(k.mean()), float(np.mean(k == 0))
    waits = np.array([y - x for x, y in ledger.waits if t0 < x <= t1])
    wait = float(waits.mean()) * finished / max(t1 - t0, 1e-12) if waits.size else 0.0
    group = float(arm_limits.prefill_budget(n_e, g)) / P  # prompts an iteration's budget takes beside N_e decoding
    # the iterations with a finish taken apart: finishes of requests never preempted, and those of preempted ones alone
    its = np.unique(np.asarray(ledger.clock.ends))
    its = its[(its > t0) & (its <= t1)]
    hit = np.zeros(run.finish_s.size, dtype=bool)
    hit[[e[1] for e in ledger.preempted]] = True
    span = (run.finish_s > t0) & (run.finish_s <= t1)
    at = np.searchsorted(its, run.finish_s)
    never, only = np.zeros(its.size, dtype=bool), np.zeros(its.size, dtype=bool)
    never[at[span & ~hit]] = True
    only[at[span & hit]] = True
    p1 = float(hit[span].mean()) if span.any() else float("nan")
    refill = float(np.clip(1.0 - (lam * O - O + float(L) - P) / P, 0.0, 1.0))  # r: a lone finish admits the head

    def mean(j):
        return float(np.mean([e[j] for e in ev])) if ev else float("nan")

    return {
        "arm": f"g{g}",
        "n_e": n_e,
        "charge": (float(m), float(L), float(m * L)),
        "sim": (len(ev) / max(finished, 1), float(done.mean()) if ev else 0.0, float(done.sum()) / max(finished, 1)),
        "share_preempted": len({e[1] for e in ev}) / max(finished, 1),
        "most": int(counts.max()),
        "newest": mean(4),
        "decoded": (mean(6), mean(3)),
        "again": mean(5),
        "wait": wait,
        "queue": len(ev) / max(finished, 1) * wait,
        "f_q": np.quantile(f, [0.1, 0.5, 0.9]) if f.size else np.full(3, np.nan),
        "after_finish": float(pre[after_finish].mean()) if after_finish.any() else float("nan"),
        "lambda": lam,
        "zero": (zero, math.exp(-lam), max(1.0 - lam / group, 0.0)),
        "dispersion": float(k.var() / max(lam, 1e-9)),
        "total": run.preemptions,
        "p1": p1,
        "wave": (float(never.mean()), lam * (1.0 - p1) / group),
        "alone": (float((only & ~never).mean()), p1 * lam),
        "nu": (len(ev) / max(finished, 1) / max(p1, 1e-12), 1.0 + refill),
    }


def _cycle(run, ledger, s, i: int, case) -> dict:
    """The preempted wait's anatomy over the steady part (``--cycle``): the preempted requests waiting, S - N_e, by
    Little (m x wait x rate) and as the engine's own time mean; the bursts in which the queue of preempted requests
    empties (the first iteration of each run of iterations with at most 2% of its 90th percentile waiting, runs apart by
    more than a fifth of N_e / rate), their period in finishes, and where in it the preemptions fall."""
    label, users, P, O, gamma, multiple, n, skip = case
    n_e = float(s.in_engine[i, 0])
    ends = np.sort(run.finish_s)
    a, b = (skip * users, n - users) if users is not None else (n // 4, 3 * n // 4)
    t0, t1 = float(ends[a]), float(ends[b])
    span = (run.finish_s > t0) & (run.finish_s <= t1)
    rate = int(span.sum()) / max(t1 - t0, 1e-12)
    ev = [e for e in ledger.preempted if t0 < e[0] <= t1]
    m = len(ev) / max(int(span.sum()), 1)
    hit = np.zeros(run.finish_s.size, dtype=bool)
    hit[[e[1] for e in ledger.preempted]] = True
    w = np.array([(y - x, f) for x, y, f in ledger.waits_first if t0 < x <= t1], dtype=float).reshape(-1, 2)
    wait = (
        float(w[:, 0].mean()) if w.size else 0.0,
        *(float(w[w[:, 1] == k, 0].mean()) if np.any(w[:, 1] == k) else float("nan") for k in (1, 0)),
    )
    ser = np.array([e for e in ledger.series if t0 < e[0] <= t1], dtype=float).reshape(-1, 3)
    dt = np.diff(ser[:, 0])
    zone, running = (float((ser[:-1, k] * dt).sum() / max(dt.sum(), 1e-12)) for k in (2, 1))
    low = np.flatnonzero(ser[:, 2] <= max(1.0, 0.02 * np.quantile(ser[:, 2], 0.9)))
    at = ser[low, 0]
    bursts = at[np.r_[True, np.diff(at) > 0.2 * n_e / max(rate, 1e-12)]] if at.size else at
    period = float(np.diff(bursts).mean()) if bursts.size > 1 else float("nan")
    pt = np.array([(x, f) for x, y, f in ledger.waits_first if t0 < x <= t1], dtype=float).reshape(-1, 2)
    k = np.searchsorted(bursts, pt[:, 0]) - 1
    inside = (k >= 0) & (k < bursts.size - 1)
    phase = (pt[inside, 0] - bursts[k[inside]]) / (bursts[k[inside] + 1] - bursts[k[inside]])
    first = pt[inside, 1] == 1
    # a period's fresh admissions, and finishes of requests never preempted, between the first burst and the last
    periods = max(bursts.size - 1, 1)
    fresh = np.array(list(ledger.fresh.values()), dtype=float)
    between = (run.finish_s >= bursts[0]) & (run.finish_s < bursts[-1]) if bursts.size > 1 else span & False
    per_period = (
        float(((fresh >= bursts[0]) & (fresh < bursts[-1])).sum()) / periods if bursts.size > 1 else float("nan"),
        float((between & ~hit).sum()) / periods if bursts.size > 1 else float("nan"),
    )
    return {
        "arm": f"g{gamma if i else 0}",
        "n_e": n_e,
        "rate": rate,
        "m": m,
        "p1": float(hit[span].mean()) if span.any() else float("nan"),
        "wait": wait,
        "little": m * wait[0] * rate,
        "zone": (zone, *np.quantile(ser[:, 2], [0.1, 0.5, 0.9])),
        "running": running,
        "bursts": int(bursts.size),
        "period": period * rate,
        "per_period": per_period,
        "phase": (
            float(phase[first].mean()) if first.any() else float("nan"),
            float(phase.mean()) if phase.size else float("nan"),
        ),
    }


def cycle_table(picks) -> None:
    """``--cycle``: :func:`_cycle`'s row for each case and arm."""
    print(
        "case | arm | N_e | rate /s | m | p1 | wait s: all / first / again | S - N_e: Little / time mean (q10, q50,"
        " q90) | in flight | bursts | period, finishes (/ N_e) | a period: fresh admitted, never-preempted finished"
        " | phase: first preemptions (all)"
    )
    for k in picks:
        case = CASES[k]
        runs, captured, s = _case_runs(case)[:3]
        for i, (run, ledger) in enumerate(zip(runs, captured)):
            r = _cycle(run, ledger, s, i, case)
            z, (wa, wf, wl) = r["zone"], r["wait"]
            print(
                f"{k} {case[0]} | {r['arm']} | {r['n_e']:.1f} | {r['rate']:.3f} | {r['m']:.3f} | {r['p1']:.3f}"
                f" | {wa:.1f} / {wf:.1f} / {wl:.1f} | {r['little']:.1f} / {z[0]:.1f} ({z[1]:.0f}, {z[2]:.0f}, {z[3]:.0f})"
                f" | {r['running']:.1f} | {r['bursts']} | {r['period']:.1f} ({r['period'] / r['n_e']:.2f})"
                f" | {r['per_period'][0]:.1f}, {r['per_period'][1]:.1f}"
                f" | {r['phase'][0]:.3f} ({r['phase'][1]:.3f})",
                flush=True,
            )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated case indices")
    ap.add_argument("--cycle", action="store_true", help="the preempted wait's anatomy instead (the bursts' cycle)")
    args = ap.parse_args(argv)
    try:
        picks = range(len(CASES)) if args.only is None else [int(x) for x in args.only.split(",")]
    except ValueError:
        ap.error(f"--only takes case indices separated by commas, 0 to {len(CASES) - 1}, got {args.only!r}")
    if any(not 0 <= k < len(CASES) for k in picks):
        ap.error(f"--only takes case indices 0 to {len(CASES) - 1}, got {args.only!r}")
    if args.cycle:
        cycle_table(picks)
        return 0
    print(
        "case | arm | N_e | charge m / L / R | sim m / L / R | preempted >= 1 | most | newest | decoded (since"
        " admitted) | again | wait (finishes) | m x wait | f / head q10,q50,q90 | preempting after a finish"
        " | finishes an iteration, var/mean | z (e^-lambda, 1 - lambda/G) | O z (O e^-lambda, O (1 - lambda/G))"
        " | all preemptions | p1 | never-preempted's iterations (lambda (1 - p1) / G) | preempted's alone (p1 lambda)"
        " | m / p1 (1 + r)"
    )
    for k in picks:
        for r in run_case(CASES[k]):
            q, (cm, cL, cR), (sm, sL, sR), (z, zp, zc) = r["f_q"], r["charge"], r["sim"], r["zero"]
            O = CASES[k][3]
            print(
                f"{k} {CASES[k][0]} | {r['arm']} | {r['n_e']:.1f} | {cm:.3f} / {cL:.0f} / {cR:.0f}"
                f" | {sm:.3f} / {sL:.0f} / {sR:.0f} | {r['share_preempted']:.3f} | {r['most']} | {r['newest']:.3f}"
                f" | {r['decoded'][0]:.0f} ({r['decoded'][1]:.0f}) | {r['again']:.3f} | {r['wait']:.1f}"
                f" | {r['queue']:.1f} | {q[0]:.2f},{q[1]:.2f},{q[2]:.2f} | {r['after_finish']:.4f}"
                f" | {r['lambda']:.3f}, {r['dispersion']:.2f} | {z:.3f} ({zp:.3f}, {zc:.3f})"
                f" | {O * z:.0f} ({O * zp:.0f}, {O * zc:.0f}) | {r['total']} | {r['p1']:.3f}"
                f" | {r['wave'][0]:.3f} ({r['wave'][1]:.3f}) | {r['alone'][0]:.3f} ({r['alone'][1]:.3f})"
                f" | {r['nu'][0]:.2f} ({r['nu'][1]:.2f})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
