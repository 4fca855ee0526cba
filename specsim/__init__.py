"""specsim: a performance model of speculative decoding.

Speculative decoding lets a small drafter propose gamma tokens that a large
target model verifies in one pass.  Whether it pays depends on the acceptance
rate alpha, on gamma, and on the time of each pass and of each round.  specsim
models those times from hardware profiles, model shapes and step-time sources,
and gives tokens per step, speedup, the optimal gamma or token tree, engine
schedules and a serving simulation.

The entry points:

    deployment  Deployment: target, drafter, step-time source and engine; the
                only place a pass or a round gets its time (round_time, parts)
    speedup     speedup, optimal_gamma, optimal_tree over a deployment
    capacity    memory budget and throughput; serving: request-level simulation
    schedule    per-batch-size schedules in each engine's form
    cli         the ``specsim`` command

Imports flow one way; tests/test_structure.py lists the layers.
"""

__version__ = "0.1.0"
