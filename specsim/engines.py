"""Serving-engine presets: the CPU time per engine iteration that kernel times miss.

A serving engine does more per iteration than its GPU kernels: scheduling,
preparing inputs, sampling, detokenising and Python bookkeeping.  Kernel sums
(and kernel-calibrated rooflines) miss it, and it is why they fall short of the
per-token latency engines report.  Each preset holds

``iteration_s``
    CPU/scheduler time per engine iteration on top of a roofline step (which
    already carries its profile's per-pass overhead): used with the
    ``hybrid`` and ``roofline`` sources.  Added to a plain decode step t_T
    and to a speculative round's verification pass t_V (one iteration each).
``kernel_iteration_s``
    The same on top of bare GPU time (``kernels`` and ``measured`` sources).
``draft_step_s``
    Extra time per draft forward pass inside a speculative round (its launch
    and sampling), added to t_D.
``spec_round_s``
    Extra time per speculative round (rejection sampler, KV rollback,
    bookkeeping), added to t_V.
``collective_s`` / ``kernel_collective_s``
    Extra time per tensor-parallel collective (2 per layer plus the logits
    gather) in a real engine iteration, beyond the isolated all-reduce kernel
    (4.5 us on an H100 pair in the kernel database).  Fitted, with the
    single-GPU values above held fixed, on a training half of the public
    multi-GPU TPOT rows and judged on the other half
    (:func:`specsim.fidelity.fit_collectives`).

Both are fitted to public measured per-token latencies (TPOT) of that engine
(``silicon_sample.csv`` of aiconfigurator-core 0.12.0) minus each source's
prediction for the same model, device, concurrency and lengths, on a training
half of the rows; the other half is held out and its error reported
(:mod:`specsim.fidelity`; ``benchmarks/validate_steptimes.py`` prints the fit
and the errors, the README's "Fidelity" section states them, and a test checks
that the numbers below are what the fit gives).  The public data hold no
single-GPU vLLM rows but one, so vLLM takes the fit pooled over all engines.
On kernel sums the fits are 0 to 0.07 ms: the kernel sum alone already
comes close to the measured TPOT (TensorRT-LLM's C++ runtime hides its CPU
time behind the GPU's).  ``draft_step_s`` and
``spec_round_s`` have no public measurement we could find; they are 0 and every
output that uses a preset says so.  ``--engine-overhead-ms`` replaces
``iteration_s`` explicitly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .parallel import collective_count

__all__ = ["DEFAULT_ENGINE", "ENGINES", "EnginePreset", "get_engine", "source_and_engine"]


@dataclass(frozen=True)
class EnginePreset:
    """Per-iteration and per-round times of a serving engine, seconds."""

    name: str
    #: Which engine's kernels the kernel source reads for this preset.
    kernel_engine: str
    iteration_s: float
    kernel_iteration_s: float
    draft_step_s: float
    spec_round_s: float
    #: Where the numbers come from.
    basis: str
    #: Time per tensor-parallel collective inside an engine iteration, on top of the profile's (or the kernel
    #: database's) all-reduce: the effective cost engines show, fitted on multi-GPU rows.
    collective_s: float = 0.0
    kernel_collective_s: float = 0.0

    def __post_init__(self) -> None:
        for key in ("iteration_s", "kernel_iteration_s", "draft_step_s", "spec_round_s", "collective_s", "kernel_collective_s"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and 0 <= value <= 1.0):
                raise ValueError(f"engine {self.name!r}: {key} must be in [0, 1] seconds, got {value!r}")

    def describe(self) -> str:
        if self.name == "none":
            return "engine: none (no CPU time added)"
        return (f"engine: {self.name} preset, {self.iteration_s * 1e3:.2f} ms per iteration on a roofline step, "
                f"{self.kernel_iteration_s * 1e3:.2f} ms on GPU time ({self.basis}); per draft step "
                f"{self.draft_step_s * 1e3:.2f} ms and per round {self.spec_round_s * 1e3:.2f} ms: no public measurement"
                + (f"; {self.collective_s * 1e6:.1f} us more per tensor-parallel collective (fitted on multi-GPU TPOT)"
                   if self.collective_s else ""))

    def collectives_s(self, model) -> float:
        """Engine time of a pass's tensor-parallel collectives (2 per layer and the logits gather); 0 on one GPU."""
        return self.collective_s * collective_count(model)

    def for_source(self, source: object) -> "EnginePreset":
        """The preset as it applies to a step-time source: sources of bare GPU time take ``kernel_iteration_s``."""
        if getattr(source, "gpu_time_only", False):
            return dataclasses.replace(self, iteration_s=self.kernel_iteration_s, collective_s=self.kernel_collective_s)
        return self

    def with_iteration_ms(self, ms: float) -> "EnginePreset":
        """The preset with an explicit per-iteration time (``--engine-overhead-ms``)."""
        s = ms / 1e3
        return dataclasses.replace(self, iteration_s=s, kernel_iteration_s=s, basis="set by --engine-overhead-ms")


_BASIS = "fitted to public TPOT, aiconfigurator-core 0.12.0 silicon_sample.csv"

# Values printed by benchmarks/validate_steptimes.py (hybrid and kernels candidates); tests/test_engines.py refits them.
ENGINES = {
    "vllm": EnginePreset("vllm", "vllm", 0.0, 0.0, 0.0, 0.0, _BASIS + ", pooled over engines (no single-GPU vLLM rows)",
                         collective_s=28.4e-6, kernel_collective_s=6.9e-6),
    "sglang": EnginePreset("sglang", "sglang", 0.0, 0.066e-3, 0.0, 0.0, _BASIS + ", SGLang rows",
                           collective_s=12.5e-6, kernel_collective_s=15.1e-6),
    "trtllm": EnginePreset("trtllm", "trtllm", 0.20e-3, 0.0, 0.0, 0.0, _BASIS + ", TensorRT-LLM rows",
                           collective_s=23.9e-6, kernel_collective_s=12.3e-6),
    "none": EnginePreset("none", "vllm", 0.0, 0.0, 0.0, 0.0, "no engine time"),
}
DEFAULT_ENGINE = "vllm"


def get_engine(name: str) -> EnginePreset:
    """A preset by name.

    >>> get_engine("none").iteration_s
    0.0
    """
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose {', '.join(ENGINES)}")
    return ENGINES[name]


def source_and_engine(hardware, timing: str | None = None, engine: str | None = None,
                      engine_overhead_ms: float | None = None, progress=None):
    """The step-time source and the engine preset that apply to it, as ``--timing`` and ``--engine`` choose them.

    ``timing`` and ``engine`` default to :data:`specsim.timing.DEFAULT_TIMING` and
    :data:`DEFAULT_ENGINE`; the kernel source reads the engine's own kernels, and
    GPU-time sources take the preset's GPU-time value; ``engine_overhead_ms``
    replaces the per-iteration time.

    >>> from specsim.hardware import load_hardware
    >>> source, preset = source_and_engine(load_hardware("h100-sxm"), "roofline", "trtllm")
    >>> source.name, round(preset.iteration_s * 1e3, 2)
    ('roofline', 0.2)
    """
    from .timing import DEFAULT_TIMING, make_source

    preset = get_engine(DEFAULT_ENGINE if engine is None else engine)
    source = make_source(DEFAULT_TIMING if timing is None else timing, hardware, preset.kernel_engine, progress)
    preset = preset.for_source(source)
    if engine_overhead_ms is not None:
        preset = preset.with_iteration_ms(engine_overhead_ms)
    return source, preset
