"""Sources of step time behind one interface: t(model, b, q, L) -> :class:`~specsim.timing.base.StepTime`.

Every source has ``name``, ``describe()`` (one line of provenance: which
profile, which database and version, which file), ``notes`` (lines about
points it could not answer itself) and ``step_time(model, batch,
tokens_per_seq, context)``, vectorised over broadcast arrays
(:class:`~specsim.timing.base.StepTimeSource`).

``roofline``
    The article's whole-pass roofline over a hardware profile
    (:mod:`.roofline`); ``specsim reproduce`` and the article's figures use it.
``kernels``
    Per-operator latencies measured on real GPUs by NVIDIA AIConfigurator
    (``aiconfigurator-core``), composed per pass (:mod:`.kernels`).
``hybrid`` (the default)
    The roofline for decode and draft steps, the kernel database's ratio for
    what a verification pass costs relative to a decode step (:mod:`.hybrid`).
``measured:FILE``
    Your own ``specsim measure`` CSV, interpolated (:mod:`.measured`).

Which engine's time is added on top, and how a round of speculation is
composed from these passes, is the deployment's business
(:mod:`specsim.speculation.deployment`), not a source's.
"""

from __future__ import annotations

from typing import Callable

from specsim.describe.hardware import HardwareProfile
from specsim.timing.base import StepTime, StepTimeSource

__all__ = ["DEFAULT_TIMING", "StepTime", "StepTimeSource", "TIMING_CHOICES", "make_source"]

#: Chosen by the fidelity table (benchmarks/validate_steptimes.py, README "Fidelity").
DEFAULT_TIMING = "hybrid"
TIMING_CHOICES = "hybrid, roofline, kernels or measured:FILE"


def make_source(spec: str, hardware: HardwareProfile, kernel_engine: str = "vllm",
                progress: Callable[[str], None] | None = None) -> StepTimeSource:
    """The source named by ``spec``: ``roofline``, ``kernels``, ``hybrid`` or ``measured:FILE``.

    Where the kernel database has no such device, the roofline answers and the
    source says so in its ``notes`` (the caller prints them).

    >>> from specsim.describe.hardware import load_hardware
    >>> make_source("roofline", load_hardware("h100-sxm")).name
    'roofline'
    """
    from specsim.timing.roofline import RooflineSource

    if spec == "roofline":
        return RooflineSource(hardware)
    if spec in ("kernels", "hybrid"):
        from specsim.timing.hybrid import HybridSource
        from specsim.timing.kernels import KernelDataError, KernelSource

        try:
            kernels = KernelSource(hardware, kernel_engine, progress)
        except KernelDataError as exc:
            src = RooflineSource(hardware)
            src.notes.append(f"{exc}; using the roofline instead")
            return src
        return kernels if spec == "kernels" else HybridSource(RooflineSource(hardware), kernels)
    if spec.startswith("measured:"):
        from specsim.timing.measured import MeasuredSource

        path = spec[len("measured:"):]
        if not path:
            raise ValueError("--timing measured:FILE needs a file, e.g. measured:h200.csv")
        return MeasuredSource(path, hardware)
    raise ValueError(f"unknown step-time source {spec!r}; choose {TIMING_CHOICES}")
