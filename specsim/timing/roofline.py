"""The article's whole-pass roofline as a step-time source (``specsim.steptime``, unchanged)."""

from __future__ import annotations

from ..hardware import HardwareProfile
from ..models import ModelShape
from ..steptime import StepTime, step_time

__all__ = ["RooflineSource"]


class RooflineSource:
    """t(b, q, L) from one roofline over the whole pass, with the profile's per-pass overhead.

    >>> from specsim.hardware import load_hardware
    >>> from specsim.models import get_model
    >>> src = RooflineSource(load_hardware("h100-sxm"))
    >>> round(float(src.step_time(get_model("article-8b"), 1, 1, 1128).total_s) * 1e3, 3)
    6.525
    """

    name = "roofline"
    gpu_time_only = False  # the profile's per-pass overhead is already in every step

    def __init__(self, hardware: HardwareProfile):
        self.hardware = hardware
        self.notes: list[str] = []

    def describe(self) -> str:
        hw = self.hardware
        return (f"roofline: profile {hw.name} (compute eff {hw.compute_eff:.2f}, bandwidth eff {hw.bandwidth_eff:.2f}, "
                f"{hw.overhead_s * 1e3:.2f} ms/pass)")

    def step_time(self, model: ModelShape, batch: object = 1, tokens_per_seq: object = 1, context: object = 0) -> StepTime:
        return step_time(self.hardware, model, batch, tokens_per_seq, context)
