"""Sources of step time behind one interface: t(model, b, q, L) -> :class:`~specsim.steptime.StepTime`.

Every source has ``name``, ``describe()`` (one line of provenance: which
profile, which database and version, which file), ``notes`` (lines about
points it could not answer itself) and ``step_time(model, batch,
tokens_per_seq, context)``, vectorised over broadcast arrays.

``roofline``
    The article's whole-pass roofline over a hardware profile
    (:mod:`specsim.steptime`); ``specsim reproduce`` and the article's figures
    use it.
``kernels``
    Per-operator latencies measured on real GPUs by NVIDIA AIConfigurator
    (``aiconfigurator-core``), composed per pass (:mod:`.kernels`).
``hybrid`` (the default)
    The roofline for decode and draft steps, the kernel database's ratio for
    what a verification pass costs relative to a decode step (:mod:`.hybrid`).
``measured:FILE``
    Your own ``specsim measure`` CSV, interpolated (:mod:`.measured`).
"""

from __future__ import annotations

from typing import Callable, Protocol

from ..hardware import HardwareProfile
from ..models import ModelShape
from ..steptime import StepTime

__all__ = ["DEFAULT_TIMING", "StepTimeSource", "TIMING_CHOICES", "make_source", "source_and_engine"]

#: Chosen by the fidelity table (benchmarks/validate_steptimes.py, README "Fidelity").
DEFAULT_TIMING = "hybrid"
TIMING_CHOICES = "hybrid, roofline, kernels or measured:FILE"


class StepTimeSource(Protocol):
    name: str
    notes: list
    #: True where step times are bare GPU time (no per-pass overhead): engine presets then add their GPU-time value.
    gpu_time_only: bool

    def describe(self) -> str: ...

    def step_time(self, model: ModelShape, batch: object = 1, tokens_per_seq: object = 1, context: object = 0) -> StepTime: ...


def make_source(spec: str, hardware: HardwareProfile, kernel_engine: str = "vllm",
                progress: Callable[[str], None] | None = None) -> StepTimeSource:
    """The source named by ``spec`` (``roofline``, ``kernels`` or ``hybrid`` (the default)
    The roofline for decode and draft steps, the kernel database's ratio for
    what a verification pass costs relative to a decode step (:mod:`.hybrid`).
``measured:FILE``).

    Where the kernel database has no such device, the roofline answers and the
    source says so in its ``notes`` (the caller prints them).

    >>> from specsim.hardware import load_hardware
    >>> make_source("roofline", load_hardware("h100-sxm")).name
    'roofline'
    """
    from .roofline import RooflineSource

    if spec == "roofline":
        return RooflineSource(hardware)
    if spec in ("kernels", "hybrid"):
        from .hybrid import HybridSource
        from .kernels import KernelDataError, KernelSource

        try:
            kernels = KernelSource(hardware, kernel_engine, progress)
        except KernelDataError as exc:
            src = RooflineSource(hardware)
            src.notes.append(f"{exc}; using the roofline instead")
            return src
        return kernels if spec == "kernels" else HybridSource(RooflineSource(hardware), kernels)
    if spec.startswith("measured:"):
        from .measured import MeasuredSource

        path = spec[len("measured:"):]
        if not path:
            raise ValueError("--timing measured:FILE needs a file, e.g. measured:h200.csv")
        return MeasuredSource(path, hardware)
    raise ValueError(f"unknown step-time source {spec!r}; choose {TIMING_CHOICES}")


def source_and_engine(hardware: HardwareProfile, timing: str | None = None, engine: str | None = None,
                      engine_overhead_ms: float | None = None, progress: Callable[[str], None] | None = None):
    """The step-time source and the engine preset that apply to it, as ``--timing`` and ``--engine`` choose them.

    ``timing`` and ``engine`` default to :data:`DEFAULT_TIMING` and
    :data:`specsim.engines.DEFAULT_ENGINE`; the kernel source reads the
    engine's own kernels, and GPU-time sources take the preset's GPU-time
    value; ``engine_overhead_ms`` replaces the per-iteration time.

    >>> from specsim.hardware import load_hardware
    >>> source, preset = source_and_engine(load_hardware("h100-sxm"), "roofline", "trtllm")
    >>> source.name, round(preset.iteration_s * 1e3, 2)
    ('roofline', 0.2)
    """
    from ..engines import DEFAULT_ENGINE, get_engine

    preset = get_engine(DEFAULT_ENGINE if engine is None else engine)
    source = make_source(DEFAULT_TIMING if timing is None else timing, hardware, preset.kernel_engine, progress)
    preset = preset.for_source(source)
    if engine_overhead_ms is not None:
        preset = preset.with_iteration_ms(engine_overhead_ms)
    return source, preset
