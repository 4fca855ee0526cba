"""Where the admission wait's chain (:mod:`specsim.serving.arrivals`) and the request-level simulator part, per rate row
of :mod:`steady_vs_sim_open`'s cases.

The chain takes the engine as its flow-equivalent server: with n requests in the system they leave at r(min(n, c)), the
rate of a closed loop of n users (:func:`specsim.serving.steady.served_state` at ``--concurrency n``), c the requests
the engine holds (N_e).  For each row this prints:

* the chain's stationary wait (exponential times in the engine, before the factor for fixed times) and what the same
  chain's mean wait is over the arrivals the open benchmark reads (the middle half of ``--requests`` Poisson arrivals)
  when it starts empty, as the simulator does: the forward equations dp/dt = p Q of the birth-death generator Q
  integrated from p(0) = [1, 0, ...] (scipy's ``expm_multiply``), the wait of an arrival at t being
  sum_{n >= c} p_n(t) (n - c + 1) / r(c).  Their ratio is how far a run of that length reads below the stationary wait
  even were the chain exact: the queue near capacity relaxes over thousands of seconds;
* what the factor 1/2 would be for c servers of fixed times at lambda / r(c): the ratio of M/D/c's mean queue to
  M/M/c's, in Cosmetatos' closed form (G. P. Cosmetatos 1976, "Some approximate equilibrium results for the multi-server
  queue (M/G/r)", Oper. Res. Q. 27(3), 615-620: 1/2 [1 + (1 - rho)(c - 1)(sqrt(4 + 5c) - 2) / (16 rho c)]) and exactly
  (Crommelin's chain of the number present one service time apart, Q' = max(Q - c, 0) + Poisson(c rho), iterated to its
  stationary distribution, against Erlang C);
* with ``--seeds N``: the simulator's own birth-death rates over its runs (seeds 0 to N - 1, the runs of
  :mod:`steady_vs_sim_open`, ``--cache`` shared with it): over the same middle half, the departures that happened with n
  in the system per second spent at n, against r(min(n, c)) in bands of n, and the share of time in each band against
  the chain's.  A process whose jumps are single arrivals and departures meets lambda pi(n - 1) = mu(n) pi(n) with its
  own mu(n) (level crossing), so these rates are the whole of where the chain's distribution and the simulator's part.

With ``--parts N`` (seeds 0 to N - 1 of ``--requests`` arrivals), per row instead: a TTFT's three parts in the steady
state and in the simulator, over the arrivals of the middle half.  The simulator's are read per request from its
engine loop (its ``_Engine.admit`` wrapped in this process, which records the loop's time at each call and when each
request leaves the queue; the simulator's result keeps neither): the rest of the iteration it lands in (from its arrival
to the first pass of the loop at or after it), its wait for admission (from there to its admission) and its own prefill
(from there to its first token).  The steady state's: :attr:`SteadyState.admission_s`; the landed part
``OPEN_LOOP_WAIT busy E[T^2]/E[T]`` (:func:`specsim.serving.arrivals.landed_iteration_s`), its busy fraction 1 - exp(-lambda
(D t_dec + k_p t_own)) solved for k_p t_own from the rest of its TTFT (:func:`specsim.serving.steady.open_loop_times`).

With ``--capped N`` (seeds 0 to N - 1 of ``--requests`` arrivals), per row instead: the simulator's mean TTFT over the
middle half with the arm's engine held to the chain's c requests (its ``max_num_seqs``, or a speculating engine's own,
set to c) against the same seeds' runs as the engine has them, and their difference paired by seed: what an engine whose
bound is soft (SGLang's admits by the tokens its running requests promise, which depend on their ages) gains from
holding more than c at times.

With ``--full N``, per case and arm instead: the simulator's full engine with a queue standing (N Poisson arrivals at 1.3
x r(c), seed 0; the requests finishing between the N/4-th and the 3N/4-th finish over that span) against r(c), the rate
the chain gives the engine past its bound.

    python benchmarks/admission_anatomy.py [--only 2,9,10,11] [--requests 3000] [--seeds 20] [--cache DIR] [--full 2000]
    [--parts 8] [--capped 16] [--loads 0.7,0.8]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # steady_vs_sim_open beside it

#: Numbers in the system past c that the chain's forward equations keep (its weight there is far below any digit shown).
_PAST = 1500


def _rows(k: int):
    """(label, deployment, limits, case, load multiple, rate, arm, c, r at n = 1..c) of case ``k``'s rate rows."""
    from steady_vs_sim_open import CASES

    from specsim.serving.steady import engine_limits, served_state
    from specsim.speculation.deployment import Deployment

    case = CASES[k]
    hw, target, draft, engine, P, O, gamma, kind, loads = case[:9]
    options = case[9] if len(case) > 9 else {}
    if kind != "rate":
        return
    dep = Deployment.build(hw, target, draft, engine=engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)
    limits = dataclasses.replace(limits, **options.get("limits", {}))
    big = served_state(dep, 0.8, [0, gamma], [4096], P, O, limits=limits)
    cs = [int(round(float(big.in_engine[i, 0]))) for i in (0, 1)]
    rates = [served_state(dep, 0.8, [0, gamma], list(range(1, c + 1)), P, O, limits=limits) for c in cs]
    for x in loads:
        for arm in (0, 1):
            ref = arm if options.get("own") else 0
            lam = x * float(rates[ref].requests_per_s[ref, -1])
            r = np.asarray(rates[arm].requests_per_s[arm], dtype=float)
            if lam >= r[-1]:
                continue  # past capacity: no stationary wait
            label = f"{k} {engine} {P}/{O} rate {x:g} ({lam:.3g}) g{gamma if arm else 0}"
            yield label, dep, limits, case, x, lam, arm, cs[arm], r


def chain(lam: float, c: int, r: np.ndarray, requests: int) -> tuple[float, float, float, np.ndarray]:
    """(model's stationary wait through :func:`specsim.serving.arrivals.admission_wait_s` at exponential times, the
    chain's stationary wait at whole n, its mean over the middle half of ``requests`` arrivals from empty, its
    stationary distribution of the number in the system)."""
    from scipy.sparse import diags
    from scipy.sparse.linalg import expm_multiply

    from specsim.serving.arrivals import admission_grid, admission_wait_s

    n_whole = np.arange(1.0, c + 1.0)
    model = float(
        admission_wait_s(lam, float(c), float(c), lambda top: np.interp(admission_grid(top), n_whole, r), 1.0)
    )
    K = c + _PAST
    n = np.arange(K + 1)
    mu = np.concatenate([[0.0], r, np.full(K - c, r[-1])])
    birth = np.full(K + 1, lam)
    birth[-1] = 0.0
    generator_t = diags([-(birth + mu), birth[:-1], mu[1:]], [0, -1, 1], format="csc")  # d p / dt = Q^T p
    wait_at = np.where(n >= c, (n - c + 1) / r[-1], 0.0)
    log_pi = np.concatenate([[0.0], np.cumsum(np.log(lam) - np.log(mu[1:]))])
    pi = np.exp(log_pi - log_pi.max())
    pi /= pi.sum()
    t0, t1 = requests / 4 / lam, 3 * requests / 4 / lam
    p0 = np.zeros(K + 1)
    p0[0] = 1.0
    ts = np.linspace(0.0, t1, 400)
    waits = expm_multiply(generator_t, p0, start=0.0, stop=t1, num=ts.size, endpoint=True) @ wait_at
    return model, float(pi @ wait_at), float(np.mean(waits[ts >= t0])), pi


def fixed_times_ratio(c: int, rho: float) -> tuple[float, float]:
    """(Cosmetatos' approximation, the exact value) of M/D/c's mean queue over M/M/c's at ``c`` servers and load ``rho``
    (the module's docstring).

    >>> [round(v, 3) for v in fixed_times_ratio(1, 0.8)]  # M/D/1: exactly half M/M/1's (Pollaczek-Khinchine)
    [0.5, 0.5]
    """
    from scipy.stats import poisson

    from specsim.serving.arrivals import fixed_times_factor

    cosmetatos = float(fixed_times_factor(c, rho))  # capped at 1, M/M/c's own
    K = c + 2000
    arrivals = poisson.pmf(np.arange(K + 1), c * rho)
    p = np.zeros(K + 1)
    p[0] = 1.0
    for _ in range(100_000):
        left = np.concatenate([[p[: c + 1].sum()], p[c + 1 :]])  # max(Q - c, 0)
        new = np.convolve(left, arrivals)[: K + 1]
        new /= new.sum()
        done = np.abs(new - p).max() < 1e-14
        p = new
        if done:
            break
    md = float(np.sum(np.maximum(np.arange(K + 1) - c, 0) * p))
    a = c * rho
    log_terms = np.arange(c) * np.log(a) - np.array([math.lgamma(k + 1.0) for k in range(c)])
    log_last = c * np.log(a) - math.lgamma(c + 1.0) - np.log(1.0 - rho)
    top = max(log_terms.max(), log_last)
    erlang_c = np.exp(log_last - top) / (np.exp(log_terms - top).sum() + np.exp(log_last - top))
    return float(cosmetatos), md / float(erlang_c * rho / (1.0 - rho))


def simulated(case, lam: float, arm: int, limits, requests: int, seeds: int, cache) -> tuple[np.ndarray, np.ndarray]:
    """(seconds spent with n in the system, departures from n), summed over the seeds' middle halves."""
    from steady_vs_sim_open import _runs

    time_at, departures = np.zeros(0), np.zeros(0)
    for seed in range(seeds):
        run = _runs(case, lam, requests, seed, limits, cache)[arm]
        arrived = np.sort(run.arrival_s)
        t = np.concatenate([arrived, run.finish_s[np.isfinite(run.finish_s)]])
        step = np.concatenate([np.ones(arrived.size), -np.ones(t.size - arrived.size)])
        order = np.lexsort((step, t))  # a departure before an arrival at the same instant
        t, step = t[order], step[order]
        after = np.cumsum(step).astype(int)
        before = np.concatenate([[0], after[:-1]])
        span = np.diff(np.concatenate([t, t[-1:]]))
        inside = (t >= arrived[requests // 4]) & (t < arrived[3 * requests // 4])
        a = np.bincount(after[inside], weights=span[inside])
        d = np.bincount(before[inside & (step < 0)])
        size = max(time_at.size, a.size, d.size)
        time_at = np.pad(time_at, (0, size - time_at.size)) + np.pad(a, (0, size - a.size))
        departures = np.pad(departures, (0, size - departures.size)) + np.pad(d, (0, size - d.size))
    return time_at, departures


def bands_said(c: int, r: np.ndarray, pi: np.ndarray, time_at: np.ndarray, departures: np.ndarray) -> str:
    """Per band of n: the simulator's departures over r(min(n, c)) times its time there, and its time share / the
    chain's."""
    n = np.arange(time_at.size)
    r_n = np.concatenate([[0.0], r])[np.minimum(n, c)]
    share = time_at / time_at.sum()
    out = []
    for lo, hi in ((1, c - 30), (c - 30, c - 10), (c - 10, c), (c, c + 10), (c + 10, 10**9)):
        m = (n >= max(lo, 1)) & (n < hi)
        expected = float(np.sum(time_at[m] * r_n[m]))
        ratio = f"{departures[m].sum() / expected:.3f}" if expected > 0 else "-"
        chain_share = float(pi[max(lo, 1) : hi].sum())
        out.append(f"[{max(lo, 1)},{'' if hi > 10**8 else hi}) {ratio} time {share[m].sum():.3f}/{chain_share:.3f}")
    return "; ".join(out)


def full_engine(k: int, requests: int, cache) -> None:
    """Print the simulator's full engine's departures per second against r(c), per arm of case ``k`` (``--full``)."""
    from steady_vs_sim_open import _runs

    said = set()
    for label, _, limits, case, _, _, arm, c, r in _rows(k):
        if arm in said:
            continue
        said.add(arm)
        run = _runs(case, 1.3 * float(r[-1]), requests, 0, limits, cache)[arm]
        done = np.sort(run.finish_s[np.isfinite(run.finish_s)])
        rate = (3 * requests // 4 - requests // 4) / (done[3 * requests // 4] - done[requests // 4])
        print(
            f"{label.split(' rate ')[0]} g{label.rsplit('g', 1)[1]} | {c} | r(c) {r[-1]:.4g}/s | simulator {rate:.4g}/s"
            f" ({rate / r[-1] - 1:+.1%})",
            flush=True,
        )


def _recording():
    """Wrap the simulator's ``_Engine.admit`` in this process to record, per engine, the loop's time at each call and
    each request's admission (the module's docstring, ``--parts``); returns the list each engine's record joins."""
    import specsim.serving.simulator as simulator

    records, admit = [], simulator._Engine.admit

    def recorded(engine) -> None:
        if not records or records[-1][0] is not engine:
            records.append((engine, [], {}, []))
        _, ticks, admitted, held = records[-1]
        ticks.append(engine.t)
        before = list(engine.waiting)
        admit(engine)
        for i in before[: len(before) - len(engine.waiting)]:  # first come, first served: the queue's head left
            admitted.setdefault(i, engine.t)
        # the requests in the engine from this pass to the next, where others still wait (NaN where none does)
        held.append(engine.running.size + len(engine.prefilling) if engine.waiting else np.nan)

    simulator._Engine.admit = recorded
    return records


def model_parts(dep, limits, case, lam: float, arm: int) -> tuple[float, float, float, float]:
    """The steady state's (landed iteration, admission wait, own prefill, TTFT), seconds (the module's docstring)."""
    from specsim.serving.arrivals import landed_iteration_s
    from specsim.serving.steady import OPEN_LOOP_WAIT, served_state

    P, O, gamma = case[4:7]
    s = served_state(dep, 0.8, [0, gamma], [lam], P, O, limits=limits, kind="rate")
    ttft, adm, t_dec, t_pf, D = (
        float(np.broadcast_to(np.asarray(v, dtype=float), s.ttft_s.shape)[arm, 0])
        for v in (s.ttft_s, s.admission_s, s.itl_s, s.prefill_s, s.rounds)
    )
    landed = float(landed_iteration_s(t_dec, lam, t_pf))
    lo, hi = 0.0, ttft  # the own prefill x solves ttft - adm = OPEN_LOOP_WAIT busy(x) landed + x, increasing in x
    for _ in range(100):
        x = 0.5 * (lo + hi)
        lo, hi = (x, hi) if OPEN_LOOP_WAIT * -np.expm1(-lam * (D * t_dec + x)) * landed + x < ttft - adm else (lo, x)
    return OPEN_LOOP_WAIT * -np.expm1(-lam * (D * t_dec + lo)) * landed, adm, lo, ttft


def parts(k: int, requests: int, seeds: int, loads) -> None:
    """Print each rate row's TTFT parts, steady state against the simulator's seeds (``--parts``), and the requests
    the simulator's engine held while others waited (time-weighted over the middle half), against the chain's c."""
    from steady_vs_sim_open import _runs

    records = _recording()
    for label, dep, limits, case, x, lam, arm, c, _ in _rows(k):
        if loads and x not in loads:
            continue
        model = model_parts(dep, limits, case, lam, arm)
        per_seed, held_time = [], np.zeros(2)
        for seed in range(seeds):
            records.clear()
            run = _runs(case, lam, requests, seed, limits, None)[arm]
            _, ticks, admitted, held = records[arm]  # plain's engine, then the speculating one
            ticks, held = np.asarray(ticks), np.asarray(held, dtype=float)
            picked = np.argsort(run.arrival_s, kind="stable")[requests // 4 : 3 * requests // 4]
            arrived = run.arrival_s[picked]
            seen = ticks[np.searchsorted(ticks, arrived)]
            entered = np.array([admitted[int(i)] for i in picked])
            per_seed.append([seen - arrived, entered - seen, run.first_token_s[picked] - entered])
            span = np.diff(ticks, append=ticks[-1])
            inside = (ticks >= arrived.min()) & (ticks < arrived.max()) & np.isfinite(held)
            held_time += [np.sum(held[inside] * span[inside]), np.sum(span[inside])]
        sim = np.array([[p.mean() for p in seed] for seed in per_seed])
        se = sim.std(axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.full(3, np.nan)
        said = " / ".join(
            f"{m * 1e3:.3g} / {v * 1e3:.3g} ± {e * 1e3:.2g}"
            for m, v, e in zip(model, sim.mean(axis=0), se, strict=False)
        )
        blocked = np.mean([np.mean(seed[1] > 0.0) for seed in per_seed])
        engine_held = f"{held_time[0] / held_time[1]:.2f}" if held_time[1] > 0 else "-"
        print(
            f"{label} | {said} | {model[3] * 1e3:.3g} / {sim.sum(axis=1).mean() * 1e3:.3g} | {blocked:.3f}"
            f" | {engine_held} / {c}",
            flush=True,
        )


def capped(k: int, requests: int, seeds: int, loads, cache) -> None:
    """Print each rate row's simulator TTFT with the engine held to the chain's c against as it is (``--capped``)."""
    from steady_vs_sim_open import _runs, middle

    for label, _, limits, case, x, lam, arm, c, _ in _rows(k):
        if loads and x not in loads:
            continue
        own = "spec_max_num_seqs" if arm and limits.spec_max_num_seqs is not None else "max_num_seqs"
        held = dataclasses.replace(limits, **{own: c})
        ttft = np.array(
            [
                [
                    middle(_runs(case, lam, requests, seed, lim, cache if lim is limits else None)[arm])["ttft"]
                    for lim in (limits, held)
                ]
                for seed in range(seeds)
            ]
        )
        (free, fixed), d = ttft.mean(axis=0), ttft[:, 1] - ttft[:, 0]
        se = ttft.std(axis=0, ddof=1) / np.sqrt(seeds)
        print(
            f"{label} | {c} | {free:.4g} ± {se[0]:.2g} | {fixed:.4g} ± {se[1]:.2g} | {d.mean():+.4g} ± "
            f"{d.std(ddof=1) / np.sqrt(seeds):.2g} ({d.mean() / free:+.1%})",
            flush=True,
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="2,9,10,11", help="comma-separated case indices of steady_vs_sim_open")
    ap.add_argument("--requests", type=int, default=3000, help="Poisson arrivals a run has (its middle half read)")
    ap.add_argument("--seeds", type=int, default=0, help="the simulator's runs to read, seeds 0 to N - 1 (0: none)")
    ap.add_argument("--cache", default=None, help="steady_vs_sim_open's folder of simulator runs")
    ap.add_argument("--full", type=int, default=0, help="instead: the full engine's rate over N arrivals at 1.3 x r(c)")
    ap.add_argument("--parts", type=int, default=0, help="instead: a TTFT's parts, model and simulator, over N seeds")
    ap.add_argument("--capped", type=int, default=0, help="instead: TTFT with the engine held to c, paired, N seeds")
    ap.add_argument("--loads", default=None, help="comma-separated load multiples to keep (all of a case's if none)")
    args = ap.parse_args(argv)
    loads = None if args.loads is None else {float(v) for v in args.loads.split(",")}
    if args.capped:
        print("row | c | simulator TTFT s as the engine has it | held to c | difference paired by seed (of the first)")
        for k in (int(v) for v in args.only.split(",")):
            capped(k, args.requests, args.capped, loads, args.cache)
        return 0
    if args.parts:
        print(
            "row | ms, model / simulator ± its standard error over seeds: the landed iteration / the wait for"
            " admission / own prefill | TTFT ms model / simulator | share of arrivals that waited for admission |"
            " requests in the engine while others waited: simulator / the chain's c"
        )
        for k in (int(v) for v in args.only.split(",")):
            parts(k, args.requests, args.parts, loads)
        return 0
    if args.full:
        print("case | c | the chain's rate past the bound | the simulator's full engine (gap)")
        for k in (int(v) for v in args.only.split(",")):
            full_engine(k, args.full, args.cache)
        return 0
    print(
        "row | c | lambda / r(c) | wait s: model at exponential times / chain at whole n / chain over the run's middle"
        " half from empty (ratio) | M/D/c over M/M/c: Cosmetatos / exact | simulator: departures / r(n) and time share simulator / chain, per band of n"
    )
    for k in (int(v) for v in args.only.split(",")):
        for label, _, limits, case, x, lam, arm, c, r in _rows(k):
            if loads and x not in loads:
                continue
            model, stationary, window, pi = chain(lam, c, r, args.requests)
            if stationary < 1e-4:
                continue
            waits = f"{model:.3g} / {stationary:.3g} / {window:.3g} ({window / stationary:.3f})"
            fixed = "{:.3f} / {:.3f}".format(*fixed_times_ratio(c, lam / r[-1]))
            said = f"{label} | {c} | {lam / r[-1]:.3f} | {waits} | {fixed}"
            if args.seeds:
                time_at, departures = simulated(case, lam, arm, limits, args.requests, args.seeds, args.cache)
                said += " | " + bands_said(c, r, pi, time_at, departures)
            print(said, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
