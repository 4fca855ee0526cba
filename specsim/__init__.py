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

#: The library's front door, as docs/library.md uses it: ``specsim.Deployment``, ``specsim.gamma_answer`` and the rest
#: at the top level (and in a notebook's completion), each imported from its module when first used, so that
#: ``import specsim`` and a command's cold start load none of them.
_API = {
    "Deployment": "specsim.speculation.deployment",
    "resolve_acceptance": "specsim.answers.acceptance",
    "deployment_capacity": "specsim.answers",
    "gamma_answer": "specsim.answers",
    "speedup_rows": "specsim.answers",
    "closed_form_answer": "specsim.answers",
    "steptime_rows": "specsim.answers",
    "capacity_record": "specsim.answers",
    "load_answer": "specsim.answers.load",
    "request_lengths": "specsim.answers.load",
    "round_anatomy": "specsim.answers.anatomy",
    "load_anatomy": "specsim.answers.anatomy",
    "compare_answer": "specsim.answers.compare",
    "schedule_answer": "specsim.answers.schedule",
    "serve_sim": "specsim.answers.serve",
    "sim_load": "specsim.answers.serve",
    "optimal_gamma": "specsim.speculation.search",
    "Acceptance": "specsim.speculation.acceptance",
    "read_calibration": "specsim.calibration.file",
    "calibrate_engine": "specsim.calibration.engine_calibration",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'specsim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
