"""What each ``specsim`` subcommand does: build the library's answer, print it.

One ``run_<command>(args)`` per subcommand of :mod:`specsim.cli.main`, which parses the arguments and dispatches
here.  No physics, default or threshold lives here: every number printed comes from a library module
(:mod:`specsim.answers`, :mod:`specsim.speculation.schedule`, :mod:`specsim.serving.simulator`, :mod:`specsim.serving.capacity`, ...) and
:mod:`specsim.cli.report` formats it.

``model``    optimal-gamma, speedup, steptime, compare, capacity, alpha
``deploy``   schedule, in each engine's form
``load``     serve-sim, serve-sweep
``measure``  measure, measure-loop, calibrate, compose-kernels (the timing harness and calibration)
``engine``   bench-plan, calibrate-engine (your own engine's benchmarks)
``info``     toy, acceptance, hardware, models, reproduce, figures
"""

from __future__ import annotations

from specsim.cli.deploy import run_schedule
from specsim.cli.info import run_acceptance, run_figures, run_hardware, run_models, run_reproduce, run_toy
from specsim.cli.load import run_serve_sim, run_serve_sweep
from specsim.cli.engine import run_bench_plan, run_calibrate_engine
from specsim.cli.measure import run_calibrate, run_compose_kernels, run_measure, run_measure_loop
from specsim.cli.model import (run_alpha, run_capacity, run_compare, run_explain, run_optimal_gamma, run_speedup, run_steptime)

__all__ = ["run_acceptance", "run_bench_plan", "run_alpha", "run_calibrate", "run_calibrate_engine", "run_capacity", "run_compare", "run_compose_kernels", "run_figures",
           "run_explain", "run_hardware", "run_measure", "run_measure_loop", "run_models", "run_optimal_gamma", "run_reproduce", "run_schedule",
           "run_serve_sim", "run_serve_sweep", "run_speedup", "run_steptime", "run_toy"]
