"""SGLang's soft admission bound at a full engine: the running requests' ages where a queue forms, how fast a standing
queue is admitted, and what the engine holds meanwhile, in the request-level simulator, against what iid-uniform ages
predict (``docs/serving.md``, the wait for admission).

Below its bound the engine is a symmetric queue (every request in it moves at the same r(n) / n of its work a second),
so given n in it the requests' attained work is iid uniform over a request's (F. P. Kelly 1979, *Reversibility and
Stochastic Networks*, ch. 3; fixed lengths).  SGLang admits a request of P in, O out where its a = P + min(O, A) fits
beside the running requests' promises, each its context and min(tokens still to come, A) (A = 4,096;
``specsim.serving.kv_blocks.KvBlocks.admits``): a request u of the way through its output promises
p(u) = P + min(u O + A, O), growing over its first (O - A) / O and at P + O after.  K, the promise the cache holds, is
its bytes over a mean promise's (``held_tokens``) times that promise: the chain's c unfloored.  Refused at n (the sum
S_n of n promises past K - a), the ages are no longer uniform: the old ones (at p's top) are denser by
phi(n) = P(S_{n-1} + P + O > K - a) / P(S_n > K - a), and a full engine whose ages stayed as refused (frozen) would
shed requests at phi r(n).

Printed, per arm: the mean count C at which admission first fails, E[C], and E[phi(C)] from the promises' exact sum
distribution; the simulator's queue episodes (from the first admission pass that leaves a request waiting to the first
that leaves none), over the run's middle half: their time, the mean count in the engine while they stood and the
admissions a second over r(c) (the chain's rate at its c), the count at onset and the share of the requests past
(O - A) / O then (uniform: A / O; the derivation: (A / O) E[phi(C)]; "fresh": episodes none ended within c / r(c)
before), the departures a second over r(c) in bands of the time since the onset; and the steady state's TTFT as it is,
with departures past c at E[phi(C)] r(c) (frozen ages), and with c at K over the mean promise, unfloored (the chain's
waits at its floor and ceiling weighed by the fraction).  ``--engine vllm`` reads the episodes of vLLM at
max_num_seqs 32 (a hard bound) as the control.  No figure here is fitted to anything.

    python benchmarks/soft_bound_ages.py [--loads 0.8,0.9] [--seeds 2] [--requests 12000] [--engine sglang]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

#: (engine, prompt, output, limits replaced): SGLang's soft bound, and vLLM at max_num_seqs 32 (a hard bound, its cache
#: holding far more: ``steady_vs_sim_open.py``'s case 10) as the control the episodes' figures are read against
CASES = {"sglang": ("sglang", 1000, 8000, {}), "vllm": ("vllm", 1000, 2000, {"max_num_seqs": 32})}
BANDS_S = (0.0, 10.0, 30.0, 80.0, 160.0, np.inf)


def promise_pmf(low: float, top: float, young: float, step_tokens: float = 4.0) -> np.ndarray:
    """One running request's promise on a lattice of ``step_tokens`` from ``low``: uniform over [low, top) with chance
    ``young`` (as many equal masses at the odd points, the bins' middles), else ``top`` (its last point)."""
    k = max(int(round((top - low) / (2.0 * step_tokens))), 0)
    one = np.zeros(2 * k + 1)
    if k:
        one[1::2] = young / k
    one[-1] += 1.0 - young if k else 1.0
    return one


def derivation(c_real: float, held: float, slots: float, P: float, O: float, ahead: float = 4096.0) -> dict:
    """E[C], the mean count at which admission first fails, and E[phi(C)] (the module's docstring) for an engine whose
    cache holds ``c_real`` mean promises of ``held`` tokens, ages iid uniform: the sums of n promises built up one
    request at a time (FFT convolution), each compared with K - a.

    >>> d = derivation(52.5, 9000.0, 0.0, 1000.0, 8000.0, ahead=8000.0)  # every promise its whole length: hard, 52
    >>> round(d["E[C]"], 6), round(d["E[phi(C)]"], 6)
    (52.0, 1.0)
    """
    from scipy.signal import fftconvolve

    step = 4.0
    K, a = c_real * held, P + min(O, ahead)
    young = max(O - ahead, 0.0) / O
    low, top = P + min(ahead, O) + slots, P + O + slots
    one = promise_pmf(low, top, young, step)
    sums, refused, old_refused = np.ones(1), [0.0], [0.0]  # n = 0: nothing held, admitted where a fits
    for n in range(1, int(c_real) + 8):
        # with a request at the top (the oldest) among n: the other n - 1 beside it
        x = (n - 1) * low + step * np.arange(sums.size)
        old_refused.append(float(sums[x + top + a > K].sum()))
        sums = np.clip(fftconvolve(sums, one), 0.0, None)
        sums /= sums.sum()
        x = n * low + step * np.arange(sums.size)
        refused.append(float(sums[x + a > K].sum()))
    refused, old_refused = np.array(refused), np.array(old_refused)
    at = np.diff(refused, prepend=0.0)  # P(C = n)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.where(refused > 0.0, old_refused / refused, 1.0)
    return {
        "E[C]": float(np.sum(1.0 - refused)),
        "E[phi(C)]": float(np.sum(at * phi)),
        "young": young,
        "c_real": c_real,
    }


class Episodes:
    """Queue episodes of one simulated engine, read at each admission pass: (onset s, count at onset, ages at onset,
    end s, admissions while it stood, its requests in the engine integrated over its time)."""

    def __init__(self):
        self.open, self.rows = None, []

    def see(self, eng, admitted: int) -> None:
        count = eng.running.size + len(eng.prefilling)
        if self.open is not None:
            self.open[3] += admitted
            self.open[4] += self.open[5] * (eng.t - self.open[6])
            self.open[5], self.open[6] = count, eng.t
        if eng.waiting and self.open is None:
            run = eng.running
            ages = (eng.output[run] - eng.remaining[run]) / eng.output[run]
            ages = np.concatenate([ages, np.zeros(len(eng.prefilling))])
            self.open = [eng.t, ages.size, ages, 0, 0.0, count, eng.t]
        elif not eng.waiting and self.open is not None:
            t0, n0, ages, admitted_in, held = self.open[:5]
            self.rows.append((t0, n0, ages, eng.t, admitted_in, held))
            self.open = None


def simulate(case, limits, load: float, n: int, seed: int, gamma: int) -> tuple:
    """(plain, speculating) runs and the episodes each engine had."""
    from specsim.serving import simulator
    from specsim.serving.simulator import serve_compare
    from specsim.serving.workloads import Requests
    from specsim.speculation.deployment import Deployment

    seen: list = []
    original = simulator._Engine.admit

    def admit(self):
        before = len(self.waiting)
        original(self)
        if not hasattr(self, "episodes"):
            self.episodes = Episodes()
            seen.append(self.episodes)
        self.episodes.see(self, before - len(self.waiting))

    simulator._Engine.admit = admit
    try:
        arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / load, n))
        reqs = Requests(np.full(n, case[1]), np.full(n, case[2]), arrivals)
        dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine=case[0])
        plain, spec, _ = serve_compare(dep, reqs, 0.8, gamma, limits if case[3] else None, seed=seed)
    finally:
        simulator._Engine.admit = original
    return (plain, spec), [e.rows for e in seen]


def read(run, rows, young: float, r_c: float) -> dict:
    """Episodes of the run's middle half: count and old share at onset, departures over r(c) by time since onset."""
    n = run.arrival_s.size
    a = np.sort(run.arrival_s)
    lo, hi = a[n // 4], a[3 * n // 4]
    rows = [r for r in rows if lo <= r[0] < hi]
    finish = np.sort(run.finish_s[np.isfinite(run.finish_s)])
    gone, spent = np.zeros(len(BANDS_S) - 1), np.zeros(len(BANDS_S) - 1)
    for t0, _, _, t1, _, _ in rows:
        for k in range(len(BANDS_S) - 1):
            s, e = t0 + BANDS_S[k], min(t1, t0 + BANDS_S[k + 1])
            if e > s:
                spent[k] += e - s
                gone[k] += np.searchsorted(finish, e, side="right") - np.searchsorted(finish, s, side="right")
    ages = np.concatenate([r[2] for r in rows]) if rows else np.zeros(0)
    ends = np.array([r[3] for r in rows])
    fresh = [r for k, r in enumerate(rows) if k == 0 or r[0] - ends[k - 1] > r[1] / r_c]
    young_at = np.concatenate([r[2] for r in fresh]) if fresh else np.zeros(0)
    return {
        "fresh": len(fresh),
        "fresh_old": float(np.mean(young_at >= young)) if young_at.size else np.nan,
        "fresh_count": float(np.mean([r[1] for r in fresh])) if fresh else np.nan,
        "episodes": len(rows),
        "count": float(np.mean([r[1] for r in rows])) if rows else np.nan,
        "old": float(np.mean(ages >= young)) if ages.size else np.nan,
        "length_s": float(np.mean([r[3] - r[0] for r in rows])) if rows else np.nan,
        "time_s": float(sum(r[3] - r[0] for r in rows)),
        "admitted": float(sum(r[4] for r in rows)),
        "held": float(sum(r[5] for r in rows)),
        "gone": gone,
        "spent": spent,
        "r_c": r_c,
    }


def readings(call: tuple, i: int, theory: dict, ttft_s: float) -> str:
    """The steady state's TTFT of arm ``i`` read two other ways, from the chain's own call (``admission_wait_s``'s
    arguments): departures past c at E[phi(C)] r(c), the ages frozen as refused (the chain's geometric tail at that
    rate, the states up to c as they are); and c at the cache's unfloored mean promises, the chain's waits at its floor
    and ceiling weighed by the fraction."""
    from specsim.serving.arrivals import admission_grid, admission_wait_s, fixed_times_factor

    lam, c, _, rates_of, scv = call
    lam = float(np.ravel(lam)[0])
    c = np.broadcast_to(np.asarray(c, dtype=float), (2, 1))
    scv = float(np.ravel(np.broadcast_to(scv, (2, 1)))[i])
    r = np.asarray(rates_of(c), dtype=float).reshape(2, -1)[i]
    top = float(c[i, 0])
    n = np.arange(1.0, top + 1.0)
    log_pi = np.concatenate([[0.0], np.cumsum(np.log(lam) - np.log(np.interp(n, admission_grid(top), r)))])
    pi = np.exp(log_pi - log_pi.max())
    q = lam / (theory["E[phi(C)]"] * r[-1])
    wait = {}
    for name, rho in (("as is", lam / r[-1]), ("frozen", q)):
        tail = pi[-1] * rho / (1.0 - rho)
        wait[name] = tail / (1.0 - rho) / (pi.sum() + tail) / lam * float(fixed_times_factor(top, rho, scv))
    low, frac = np.floor(theory["c_real"]), theory["c_real"] % 1.0
    both = [
        float(np.ravel(admission_wait_s(lam, np.full((2, 1), k), np.ones((2, 1)), rates_of, scv))[i])
        for k in (low, low + 1.0)
    ]
    base = ttft_s - wait["as is"]
    return (
        f"frozen ages {base + wait['frozen']:.4f} s, c at {theory['c_real']:.2f}"
        f" {base + (1.0 - frac) * both[0] + frac * both[1]:.4f} s"
    )


def _mean(values: list) -> float:
    """The mean of the finite ones (a seed with no episode has none), nan where none is."""
    v = np.asarray(values, dtype=float)
    return float(np.mean(v[np.isfinite(v)])) if np.isfinite(v).any() else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="0.8,0.9", help="multiples of the plain arm's KV-bound capacity")
    ap.add_argument("--seeds", type=int, default=2, help="runs from seeds 0 to N - 1")
    ap.add_argument("--requests", type=int, default=12000, help="Poisson arrivals a run simulates")
    ap.add_argument("--engine", choices=sorted(CASES), default="sglang", help="vllm: the hard bound's control")
    args = ap.parse_args(argv)
    import dataclasses

    from specsim.serving.arrivals import admission_grid
    from specsim.serving.capacity import sequence_kv_bytes
    from specsim.serving.kv_blocks import held_tokens
    from specsim.serving.steady import engine_limits, served_state
    from specsim.speculation.deployment import Deployment

    case = CASES[args.engine]
    engine, P, O = case[:3]
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine=engine)
    limits, _ = engine_limits(dep.engine, dep.hardware)
    limits = dataclasses.replace(limits, **case[3])
    policy = limits.for_deployment(dep).kv_policy
    big = served_state(dep, 0.8, [0, 3], [4096], P, O, limits=limits)
    cap = served_state(dep, 0.8, [0, 3], [float(big.in_engine[0, 0])], P, O, limits=limits)
    kv = big.kv_bytes
    theory = []
    for i, g in enumerate((0, 3) if engine == "sglang" else ()):
        h = float(held_tokens(policy, P, O, g))
        per = (
            sequence_kv_bytes(dep, h, with_draft=bool(g), draft_tokens=3)
            if g
            else sequence_kv_bytes(dep, h, with_draft=False)
        )
        theory.append(derivation(float(kv[i] / per), h, float(policy.slots(g)), P, O))
        print(
            f"g{g}: chain c {float(big.in_engine[i, 0]):.0f}, cache {float(kv[i] / per):.2f} mean promises of {h:,.0f};"
            f" iid-uniform ages: E[C] {theory[i]['E[C]']:.2f}, E[phi(C)] {theory[i]['E[phi(C)]']:.4f},"
            f" old share at onset {(1 - theory[i]['young']) * theory[i]['E[phi(C)]']:.3f} (uniform"
            f" {1 - theory[i]['young']:.3f})"
        )
    for x in (float(v) for v in args.loads.split(",")):
        lam = x * float(cap.requests_per_s[0, 0])
        from specsim.serving import steady

        got = []
        spy = steady.admission_wait_s

        def keep(*a, _spy=spy):
            got.append(a)
            return _spy(*a)

        steady.admission_wait_s = keep
        try:
            s = served_state(dep, 0.8, [0, 3], [lam], P, O, limits=limits, kind="rate")
        finally:
            steady.admission_wait_s = spy
        c = np.broadcast_to(got[-1][1], (2, 1)).astype(float)
        r = np.asarray(got[-1][3](c), dtype=float).reshape(2, -1)
        assert np.allclose(admission_grid(c)[:, 0, -1], c[:, 0])
        per_seed = [simulate(case, limits, lam, args.requests, seed, 3) for seed in range(args.seeds)]
        for i in (0, 1):
            young = theory[i]["young"] if theory else 0.5  # no promise to grow: the share past half its output
            reads = [read(runs[i], rows[i], young, float(r[i, -1])) for runs, rows in per_seed]
            gone = sum(d["gone"] for d in reads)
            spent = sum(d["spent"] for d in reads)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = gone / spent / float(r[i, -1])
            bands = ", ".join(
                f"{BANDS_S[k]:g}-{BANDS_S[k + 1]:g} s {ratio[k]:.3f} ({spent[k]:,.0f} s)" for k in range(ratio.size)
            )
            print(
                f"{x:g} x g{3 * i} (rho {lam / float(r[i, -1]):.3f}): {sum(d['episodes'] for d in reads)} episodes,"
                f" {sum(d['time_s'] for d in reads):,.0f} s in all; in them the engine held"
                f" {sum(d['held'] for d in reads) / max(sum(d['time_s'] for d in reads), 1e-9):.2f} on average and"
                f" admitted {sum(d['admitted'] for d in reads) / max(sum(d['time_s'] for d in reads), 1e-9) / r[i, -1]:.3f}"
                " x r(c) a second; count at onset"
                f" {_mean([d['count'] for d in reads]):.2f}, old share {_mean([d['old'] for d in reads]):.3f}"
                f" ({sum(d['fresh'] for d in reads)} fresh, none ended within c / r(c) before: count"
                f" {_mean([d['fresh_count'] for d in reads]):.2f}, old share"
                f" {_mean([d['fresh_old'] for d in reads]):.3f});"
                f" departures / r(c) since onset: {bands}; steady TTFT {float(s.ttft_s[i, 0]):.4f} s"
                + (f", {readings(got[-1], i, theory[i], float(s.ttft_s[i, 0]))}" if theory else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
