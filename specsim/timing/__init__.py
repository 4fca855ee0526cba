"""Sources of step time behind one interface: t(model, b, q, L) -> :class:`~specsim.timing.base.StepTime`.

Every source has ``name``, ``describe()`` (one line of provenance: which
profile, which database and version, which file), ``notes`` (lines about
points it could not answer itself) and ``step_time(model, batch,
tokens_per_seq, context)``, vectorised over broadcast arrays
(:class:`~specsim.timing.base.StepTimeSource`).

``roofline``
    The article's whole-pass roofline over a hardware profile, weight-only
    GEMMs on a roofline of their own beside it (:mod:`.roofline`);
    ``specsim reproduce`` and the article's figures use it.
``kernels``
    Per-operator latencies measured on real GPUs by NVIDIA AIConfigurator
    (``aiconfigurator-core``), composed per pass (:mod:`.kernels`).
``hybrid`` (the default)
    The roofline for decode and draft steps, the kernel database's ratio for
    what a verification pass costs relative to a decode step (:mod:`.hybrid`);
    on a GPU the database lacks, the ratio of a device of the same compute
    capability where it has one (said in a note).
``measured:FILE``
    Your own ``specsim measure`` CSV, interpolated (:mod:`.measured`).

Which engine's time is added on top, and how a round of speculation is
composed from these passes, is the deployment's business
(:mod:`specsim.speculation.deployment`), not a source's.
"""

from __future__ import annotations

from typing import Callable

from specsim.core.names import given_as
from specsim.describe.hardware import HardwareProfile
from specsim.timing.base import StepTime, StepTimeSource
from specsim.timing.kernel_db import BACKENDS

__all__ = [
    "DEFAULT_TIMING",
    "LARGE_MOE_ACTIVE",
    "LARGE_MOE_LONGER",
    "LARGE_MOE_LONGER_KERNELS",
    "LARGE_MOE_MAE",
    "SOURCES",
    "StepTime",
    "StepTimeSource",
    "TIMING_CHOICES",
    "default_source",
    "default_timing",
    "large_moe",
    "large_moe_at_tp",
    "make_source",
]

#: Chosen by the fidelity table (benchmarks/validate_steptimes.py, README "Fidelity").
DEFAULT_TIMING = "hybrid"
TIMING_CHOICES = "hybrid, roofline, kernels or measured:FILE"


def _roofline(arg: str, hardware: HardwareProfile, kernel_engine: str, progress) -> StepTimeSource:
    from specsim.timing.roofline import RooflineSource

    return RooflineSource(hardware)


def _kernel_source(hybrid: bool):
    """The kernel database's source (or the hybrid over it); where it has no such device, the hybrid over a kin
    device's kernels (:func:`~specsim.timing.kernel_db.kin_devices`) or the roofline, with a note."""

    def build(arg: str, hardware: HardwareProfile, kernel_engine: str, progress) -> StepTimeSource:
        from specsim.describe.hardware import load_hardware
        from specsim.timing.hybrid import HybridSource
        from specsim.timing.kernel_db import kin_devices
        from specsim.timing.kernels import KernelDataError, KernelSource
        from specsim.timing.roofline import RooflineSource

        try:
            kernels = KernelSource(hardware, kernel_engine, progress)
        except KernelDataError as exc:
            for kin in kin_devices(hardware) if hybrid else ():
                try:
                    kernels = KernelSource(hardware, kernel_engine, progress, kin=load_hardware(kin))
                except KernelDataError:
                    continue
                lacks = str(exc).split("; it has ")[0]  # (the database's device list is not this note's)
                kernels.notes.append(
                    f"{lacks}: decode steps are the roofline's of {hardware.name}, and what a verification pass "
                    f"costs over a decode step is read from the {kernel_engine} kernels of the {kin} (the same "
                    f"compute capability, {hardware.compute_capability}), not measured on this GPU"
                )
                return HybridSource(RooflineSource(hardware), kernels)
            src = RooflineSource(hardware)
            src.notes.append(f"{exc}; using the roofline instead")
            return src
        return HybridSource(RooflineSource(hardware), kernels) if hybrid else kernels

    return build


def _measured(arg: str, hardware: HardwareProfile, kernel_engine: str, progress) -> StepTimeSource:
    from specsim.timing.measured import MeasuredSource

    if not arg:
        raise ValueError(f"{given_as('timing')} measured:FILE needs a file, e.g. measured:h200.csv")
    return MeasuredSource(arg, hardware)


#: Every step-time source by name: ``name`` or ``name:ARG`` builds ``SOURCES[name](ARG, hardware, kernel_engine,
#: progress)``.  A new source is one module and one line here.
SOURCES: dict[str, Callable] = {
    "roofline": _roofline,
    "kernels": _kernel_source(False),
    "hybrid": _kernel_source(True),
    "measured": _measured,
}


def make_source(
    spec: str,
    hardware: HardwareProfile,
    kernel_engine: str = BACKENDS[0],
    progress: Callable[[str], None] | None = None,
) -> StepTimeSource:
    """The source named by ``spec`` (:data:`SOURCES`): ``roofline``, ``kernels``, ``hybrid`` or ``measured:FILE``.

    Where the kernel database has no measurements of the device, ``hybrid``
    takes its ratio from a device of the same compute capability and
    ``kernels`` is the roofline; either says so in its ``notes`` (the caller
    prints them).

    >>> from specsim.describe.hardware import load_hardware
    >>> make_source("roofline", load_hardware("h100-sxm")).name
    'roofline'
    """
    name, colon, arg = spec.partition(":")
    build = SOURCES.get(name)
    if build is None or (colon and name != "measured") or (name == "measured" and not colon):
        raise ValueError(f"unknown step-time source {spec!r}; choose {TIMING_CHOICES}")
    return build(arg, hardware, kernel_engine, progress)


#: Active parameters from which a MoE target counts as large (the public rows that judge such targets, table 4b of
#: ``benchmarks/validate_steptimes.py``, are of targets with 10.4B-36.6B).
LARGE_MOE_ACTIVE = 10e9
#: How much longer engines' plain TPOT is than specsim's plain step on the public rows of large MoE targets at tensor
#: parallelism (:func:`specsim.calibration.fidelity.judge_large_moe`, shipped presets, nothing fitted; table 4b of
#: ``benchmarks/validate_steptimes.py`` prints it, ``tests/test_engines.py`` recomputes it): at 1-8 users (median,
#: lowest and highest model's median, runs), then at 1-256 users.  Measured 2026-12-04, the highest model's 0.74 and
#: 0.69 then; 0.83 and 0.71 since fixed-length users whose prompts fill an iteration each move as a chain (2026-12-05);
#: 331 runs at 1-256 users since SGLang's cache is sized as it admits (its prompt and output set aside, 4,096 output
#: tokens at most: :meth:`specsim.engines.engine.Engine.kv_policy`), which leaves DeepSeek-V3's 128 users of 8,192 in and
#: 1,024 out on B200 x 8 (SGLang 0.5.9) judging the KV capacity (2026-12-06; the figures unchanged at two places).
#: Not corrected.
LARGE_MOE_LONGER = ((0.41, 0.30, 0.83, 128), (0.30, 0.21, 0.71, 331))
#: The same at 1-8 users with the measured-kernel source (``--timing kernels``, where the kernel database composes the
#: target; ``specsim/timing/data/refused_compositions.csv``), on the same rows.
LARGE_MOE_LONGER_KERNELS = (0.18, -0.04, 0.33, 128)
#: Mean absolute error of the plain TPOT on those rows (331 of 354: the others judge the KV capacity) with the default
#: source (:func:`default_timing`: the measured kernels where they compose the target, else hybrid) and with the
#: hybrid source throughout, and the rows (:func:`specsim.calibration.fidelity.judge_large_moe`, shipped presets,
#: nothing fitted; ``tests/test_engines.py`` recomputes it).  Measured 2026-12-04 (0.164 and 0.251); 2026-12-05 with the
#: chain of fixed-length users (:func:`specsim.serving.steady.closed_population`); 2026-12-06 on 331 rows (SGLang's cache
#: sized as it admits, :data:`LARGE_MOE_LONGER`: 0.1646 and 0.2517).
LARGE_MOE_MAE = (0.165, 0.252, 331)


def large_moe(model) -> bool:
    """A MoE target of at least :data:`LARGE_MOE_ACTIVE` active parameters, at any tensor parallelism: the class of
    target the public large-MoE rows measure (:func:`large_moe_at_tp`; SGLang ROCm's time per collective,
    :func:`specsim.engines.sglang.on_platform`)."""
    return model.is_moe and model.active_params >= LARGE_MOE_ACTIVE


def large_moe_at_tp(model, hardware: HardwareProfile) -> bool:
    """A MoE target of at least :data:`LARGE_MOE_ACTIVE` active parameters at tensor parallelism 2 or more, on an NVIDIA
    GPU: what the public rows of table 4b measure (NVIDIA GPUs' only)."""
    return large_moe(model) and model.tp >= 2 and getattr(hardware, "platform", "cuda") == "cuda"


def default_source(hardware: HardwareProfile, model, kernel_engine: str = BACKENDS[0], progress=None):
    """(the measured-kernel source, why) where an answer that asks for no source takes the kernels for ``model``, else
    (None, None): a large MoE target at tensor parallelism (:func:`large_moe_at_tp`) whose step the kernel database
    composes from this GPU's own measurements.  On the public rows of such targets the hybrid source's decode step, the
    roofline's, is a median 45% short at 1-8 users, and the measured kernels' is 16% (:data:`LARGE_MOE_MAE`;
    docs/reports/2026-12-04-large-moe-plain-step.md).  Where the database cannot compose the target (TensorRT-LLM's
    kernels for an MLA model, ``timing/data/refused_compositions.csv``), or has only a kin device's kernels, the
    default stays.  The source returned is the one that looked the target's table up (built once)."""
    if not large_moe_at_tp(model, hardware):
        return None, None
    from specsim.timing.kernels import KernelDataError, KernelSource

    try:
        source = KernelSource(hardware, kernel_engine, progress)
    except KernelDataError:
        return None, None
    if source.table(model) is None:
        return None, None
    default, hybrid, rows = LARGE_MOE_MAE
    return source, (
        f"step times: kernels, the default for a MoE target of {LARGE_MOE_ACTIVE / 1e9:.0f}B or more active parameters "
        f"at tensor parallelism whose step the kernel database composes (on {rows} public plain runs of such targets, "
        f"mean absolute TPOT error {default:.1%} this way against {hybrid:.1%} with the hybrid source throughout: "
        f"benchmarks/validate_steptimes.py, table 4b); {given_as('timing')} hybrid for the other"
    )


def default_timing(
    hardware: HardwareProfile, model, kernel_engine: str = BACKENDS[0], progress=None
) -> tuple[str, str | None]:
    """(source name, why) an answer takes where none is asked: :data:`DEFAULT_TIMING`, or ``kernels`` where
    :func:`default_source` takes them, said in ``why``."""
    source, why = default_source(hardware, model, kernel_engine, progress)
    return ("kernels", why) if source is not None else (DEFAULT_TIMING, None)
