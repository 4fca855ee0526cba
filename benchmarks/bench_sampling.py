"""Benchmark: Monte Carlo rate of the vectorised acceptance rule against a per-sequence Python loop.

Target (issue: acceptance rule): at least 1,000,000 drafted tokens per second on
one core for a 32-token vocabulary and gamma = 4.  Both implementations run the
same rule on the same bigram pair in the same process; the ratio is what to
read, since absolute rates depend on the machine.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sampling.py
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")  # one core, before numpy loads its BLAS

import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from specsim.article.toy import speculative_step_bigram, toy_pair

GAMMA = 4


def vectorised(target, draft, sequences: int, steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    context = np.zeros(sequences, dtype=np.int64)
    start = time.perf_counter()
    for _ in range(steps):
        step = speculative_step_bigram(target, draft, context, GAMMA, rng)
        context = step.tokens[np.arange(sequences), step.num_accepted]
    return time.perf_counter() - start


def python_loop(target, draft, sequences: int, seed: int) -> float:
    """The same rule, one sequence and one token at a time, with Python floats."""
    rnd = random.Random(seed)
    p = target.probs.tolist()
    q = draft.probs.tolist()
    vocab = len(p)

    def draw(row):
        u, acc = rnd.random() * sum(row), 0.0
        for i, w in enumerate(row):
            acc += w
            if u < acc:
                return i
        return vocab - 1

    start = time.perf_counter()
    for _ in range(sequences):
        drafted, prefix = [], [0]
        for _ in range(GAMMA):
            x = draw(q[prefix[-1]])
            drafted.append(x)
            prefix.append(x)
        for i, x in enumerate(drafted):
            ctx = prefix[i]
            if rnd.random() * q[ctx][x] < p[ctx][x]:
                continue
            draw([max(0.0, a - b) for a, b in zip(p[ctx], q[ctx])])
            break
        else:
            draw(p[prefix[-1]])
    return time.perf_counter() - start


def main() -> None:
    target, draft = toy_pair(0)
    sequences, steps = 100_000, 10
    vectorised(target, draft, 1000, 1, seed=1)  # warm up
    t_vec = vectorised(target, draft, sequences, steps, seed=2)
    loop_sequences = 20_000
    t_loop = python_loop(target, draft, loop_sequences, seed=3)
    rate_vec = sequences * steps * GAMMA / t_vec
    rate_loop = loop_sequences * GAMMA / t_loop
    print(f"32-token bigram, gamma = {GAMMA}, one thread")
    print(
        f"  vectorised (numpy): {sequences * steps:,} steps in {t_vec:.2f} s = {rate_vec:,.0f} drafted tokens/s   (target >= 1,000,000)"
    )
    print(f"  Python loop       : {loop_sequences:,} steps in {t_loop:.2f} s = {rate_loop:,.0f} drafted tokens/s")
    print(f"  ratio             : {rate_vec / rate_loop:.0f}x")


if __name__ == "__main__":
    main()
