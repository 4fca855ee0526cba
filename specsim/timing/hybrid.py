"""The default source: the roofline for a decode step, measured kernels for what verification adds.

    t_hybrid(b, q, L) = t_roofline(b, 1, L) * t_kernels(b, q, L) / t_kernels(b, 1, L)

A decode or draft step (q = 1) is the roofline's, with the profile's per-pass
overhead, and so is a prompt's pass (compute-bound: a decode step's ratio does not
carry to it); a verification pass is that step scaled by the ratio the measured
kernels give between a pass of q tokens per sequence and a decode step of the
same batch and context.  This combination is the default because the fidelity
table (``benchmarks/validate_steptimes.py``) measures it best on both counts:
on public per-token latencies of serving engines the roofline with an engine
preset beats the kernel sum (held-out MAPE in the README), while the cost of
verification relative to decode is what the kernel measurements show and the
whole-pass roofline misses (it holds t_V / t_T at 1 up to the ridge).  Where
the kernel data end, the ratio is the roofline's own and the point is flagged.
On a GPU the database lacks, the ratio comes from a device of the same compute
capability (:func:`~specsim.timing.kernel_db.kin_devices`): a ratio, unlike an
absolute time, carries over between GPUs of one architecture and a similar
balance of compute to bandwidth.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specsim.describe.models import ModelShape
from specsim.timing.base import StepTime
from specsim.timing.kernels import KernelSource
from specsim.timing.roofline import RooflineSource

__all__ = ["HybridSource"]


class HybridSource:
    """Roofline decode steps, kernel-measured verification-to-decode ratio."""

    name = "hybrid"
    gpu_time_only = False  # its decode steps are the roofline's, with the profile's per-pass overhead

    def __init__(self, roofline: RooflineSource, kernels: KernelSource):
        self.roofline = roofline
        self.kernels = kernels

    @property
    def notes(self) -> list[str]:
        return self.kernels.notes

    def noted_items(self) -> list[tuple]:
        return self.kernels.noted_items()

    def take_notes(self, items: list[tuple]) -> None:
        self.kernels.take_notes(items)

    def brief(self) -> str:
        return f"{self.roofline.brief()}, verification from {self.kernels.brief()}"

    def describe(self) -> str:
        return (
            f"hybrid: decode and draft steps and prompts from the {self.roofline.describe()}; verification / decode ratio from "
            f"{self.kernels.describe()[len('kernels: ') :]}"
        )

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
    ) -> StepTime:
        if prompt:
            # A prompt's pass is the roofline's own: the kernels' ratio of a verification pass to a decode step carries
            # a memory-bound step's calibration; a long prompt is compute-bound, and scaling it by that ratio moved the
            # public-rows fit's held-out error from 9.3% to 12.4% (benchmarks/validate_steptimes.py).
            roof = self.roofline.step_time(model, batch, tokens_per_seq, context, prompt)
            return dataclasses.replace(roof, source=self.name)
        decode = self.roofline.step_time(model, batch, 1, context)
        k = self.kernels.step_time(model, batch, tokens_per_seq, context)
        if np.all(np.asarray(tokens_per_seq) == 1):  # a decode or draft step: the pass is its own decode step
            roof, k1 = decode, k
        else:
            roof = self.roofline.step_time(model, batch, tokens_per_seq, context, prompt)
            k1 = self.kernels.step_time(model, batch, 1, context)
        # A kin device's kernels (kernel_db.kin_devices) give the ratio of the passes' own work only: collectives run
        # over this GPU's link, so they are the roofline's, added after (never a PCIe all-reduce over NVLink kernels).
        apart = getattr(self.kernels, "kin", None) is not None and model.tp > 1
        own = (lambda t: t.total_s - t.comm_s) if apart else (lambda t: t.total_s)  # noqa: E731
        ratio = own(k) / own(k1)  # k has the full (b, q, L) shape, so total does too
        fb = np.zeros(np.shape(ratio), bool)
        for part in (k.fallback, k1.fallback):
            if part is not None:
                fb |= part
        if fb.any():  # where either pass left the data, the roofline's own ratio (never a roofline over a kernel sum)
            ratio = np.where(fb, own(roof) / own(decode), ratio)
        total = own(decode) * ratio + (roof.comm_s if apart else 0.0)
        return dataclasses.replace(roof, total_s=total, source=self.name, fallback=fb if fb.any() else None)
