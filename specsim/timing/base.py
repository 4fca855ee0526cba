"""What every step-time source returns, and what every source checks on the way in.

A source answers t(model, b, q, L): the time of one forward pass of ``b`` sequences, each adding ``q`` new
tokens on top of ``L`` cached tokens, as a :class:`StepTime` with its parts.  The sources themselves
(the roofline, the kernel database, measured CSVs, the hybrid of the first two) live beside this module;
:func:`check_pass` is the one gate their arguments go through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from specsim.core.limits import MAX_BATCH, MAX_CONTEXT
from specsim.describe.models import ModelShape

__all__ = ["StepTime", "StepTimeSource", "check_pass"]


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class StepTime:
    """The parts of a modelled forward pass, broadcast over (b, q, L).

    Attributes
    ----------
    total_s : ndarray
        Step time, seconds.
    compute_s, memory_s : ndarray
        Arithmetic time and memory time, seconds (the larger one counts).
    overhead_s : float
        Fixed per-pass overhead, seconds.
    comm_s : ndarray or float
        Tensor-parallel communication, seconds (0 on one device).
    flop, bytes : ndarray
        Work of the pass, FLOP and bytes.
    source : str
        Which step-time source produced ``total_s`` (``"roofline"`` here; the
        sources in :mod:`specsim.timing` set their own label).
    fallback : ndarray of bool or None
        Where a data-driven source had no data and the roofline answered
        instead; None when every point came from the named source.

    ``compute_s``, ``memory_s``, ``flop`` and ``bytes`` are always the
    roofline's: they explain which bound a pass sits at, whichever source
    gave its time.
    """

    total_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    overhead_s: float
    flop: np.ndarray
    bytes: np.ndarray
    source: str = "roofline"
    fallback: np.ndarray | None = None
    comm_s: np.ndarray | float = 0.0

    @property
    def compute_bound(self) -> np.ndarray:
        """True where arithmetic, not memory traffic, sets the step time."""
        return self.compute_s > self.memory_s

    @property
    def bound(self) -> np.ndarray:
        """``"compute"`` or ``"memory"`` per point."""
        return np.where(self.compute_bound, "compute", "memory")

    @property
    def intensity_flop_per_byte(self) -> np.ndarray:
        """Arithmetic intensity of the pass, FLOP per byte."""
        return self.flop / self.bytes


def _number(value: float) -> str:
    """An integer-valued number in full (4194305, not 4.1943e+06), anything else in %g."""
    return str(int(value)) if np.isfinite(value) and float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _as_array(name: str, value: object, minimum: float, maximum: float) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be numbers in [{_number(minimum)}, {_number(maximum)}]") from None
    # One pass: NaN and infinities fail a comparison with the finite bounds.  Every pass of every answer comes here,
    # and three passes (finite, low, high) took a tenth of a calibration's fit.
    inside = minimum <= float(arr) <= maximum if arr.ndim == 0 else ((arr >= minimum) & (arr <= maximum)).all()
    if not inside:
        bad = arr[~(np.isfinite(arr) & (arr >= minimum) & (arr <= maximum))][0]  # a boolean mask gives a flat array
        raise ValueError(f"{name} must be in [{_number(minimum)}, {_number(maximum)}], got {_number(bad)}")
    return arr


def check_pass(batch: object, tokens_per_seq: object, context: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(b, q, L) as float arrays, each inside specsim's limits (a prefill pass has q = prompt tokens)."""
    return (
        _as_array("batch", batch, 1, MAX_BATCH),
        _as_array("tokens_per_seq", tokens_per_seq, 1, MAX_CONTEXT),
        _as_array("context", context, 0, MAX_CONTEXT),
    )


class StepTimeSource(Protocol):
    """The interface of every source: a name, one line of provenance, notes on points it could not answer itself."""

    name: str
    notes: list
    #: True where step times are bare GPU time (no per-pass overhead): engine presets then add their GPU-time value.
    gpu_time_only: bool

    def describe(self) -> str: ...

    def brief(self) -> str: ...

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
    ) -> StepTime: ...
