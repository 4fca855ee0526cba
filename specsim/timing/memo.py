"""A step-time source that keeps its answers: for callers that ask the same passes many times.

A fit (:mod:`specsim.calibration.engine_fit`) re-evaluates the same runs hundreds of times while only a roofline's
efficiency changes; the kernel database's answer for a pass does not.  :class:`MemoSource` wraps any source and
answers a repeated (model, batch, tokens per sequence, context) from memory, exactly as the wrapped source did.
"""

from __future__ import annotations

import numpy as np

from specsim.timing.base import StepTime

__all__ = ["MemoSource"]


class MemoSource:
    """Another source's answers, each computed once.

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> from specsim.timing.roofline import RooflineSource
    >>> src = MemoSource(RooflineSource(load_hardware("h100-sxm")))
    >>> m = get_model("llama-3.2-1b")
    >>> src.step_time(m, 4, 1, 512) is src.step_time(m, 4, 1, 512), src.name
    (True, 'roofline')
    """

    def __init__(self, inner):
        self.inner = inner
        self.name, self.gpu_time_only = inner.name, inner.gpu_time_only
        self._answers: dict = {}
        self._models: dict = {}  # id -> model: an id is never reused while it is a key
        #: What a caller derives from these answers alone, kept with them by the caller's own keys (the hybrid source's
        #: untiled kernel passes, :meth:`~specsim.timing.hybrid.HybridSource._untiled_own_s`).
        self.derived: dict = {}

    @property
    def notes(self) -> list:
        return self.inner.notes

    @property
    def kin(self):
        """The kin device whose kernels the inner source reads, if any (:class:`~specsim.timing.kernels.KernelSource`'s
        ``kin``)."""
        return getattr(self.inner, "kin", None)

    def table(self, model):
        """The inner source's kernel table for ``model`` (:meth:`~specsim.timing.kernels.KernelSource.table`: what the
        hybrid source reads each pass's GEMMs untiled from), None where the inner source has none."""
        table = getattr(self.inner, "table", None)
        return None if table is None else table(model)

    def describe(self) -> str:
        return self.inner.describe()

    def brief(self) -> str:
        return self.inner.brief()

    def step_time(
        self, model, batch: object = 1, tokens_per_seq: object = 1, context: object = 0, prompt: bool = False
    ) -> StepTime:
        args = [np.asarray(x, dtype=float) for x in (batch, tokens_per_seq, context)]
        key = (id(model), bool(prompt)) + tuple((a.shape, a.tobytes()) for a in args)
        if key not in self._answers:
            self._models[id(model)] = model
            self._answers[key] = self.inner.step_time(model, *args, prompt=prompt)
        return self._answers[key]
