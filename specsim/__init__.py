"""specsim: a performance model of speculative decoding.

Speculative decoding lets a small drafter propose gamma tokens that a large
target model verifies in one pass.  Whether it pays depends on the acceptance
rate alpha, on gamma, and on the time of each pass and of each round.  specsim
models those times from hardware profiles, model shapes and step-time sources,
and gives tokens per step, speedup, the optimal gamma or token tree, engine
schedules and a serving simulation.

The packages, lowest floor first (tests/test_structure.py holds the order):

    core         records, limits on inputs, files, defaults
    describe     hardware profiles, model shapes from config.json, tensor parallelism
    timing       step-time sources behind one interface (roofline, measured kernels, hybrid)
    engines      one module per engine: presets by release, writers, metric names
    speculation  acceptance, drafters, the Deployment (the only place a pass or a round gets its time), searches,
                 schedules, sweeps
    serving      capacity, the serving model at a load (serving.steady), the request-level simulator
    harness      the torch timing harness (the harness extra)
    calibration  fits to measurements and to an engine's benchmark files
    article      the reference article's numbers and toys
    answers      each command's answer as a library result
    watch        a running engine's metrics against the serving model
    figures      the plots
    cli          the ``specsim`` command

Imports flow one way; tests/test_structure.py lists the layers.
"""

__version__ = "0.1.0"
