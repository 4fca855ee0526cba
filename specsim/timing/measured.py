"""Step times from your own measurements (``specsim measure`` CSVs), interpolated.

A ``specsim measure`` CSV holds whole-pass times t(b, q, L) of one or more
models on one device.  For each model shape in the file this source builds the
(b, q, L) grid of its points (the median where a point was measured twice) and
answers by linear interpolation along each axis present in the data (an axis
with one value, e.g. one context, must be matched exactly).  Points outside the
measured box, or next to a grid point that was not measured, get the roofline's
answer and are flagged in ``StepTime.fallback``.

Models are matched by shape (layers, widths, heads, vocabulary, dtype), not by
name: the same architecture measured under another name still matches, and two
dtypes of one model are kept apart.  A model with no rows in the file is an
error, not a silent fallback: measure your draft too, or pick another source.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from specsim.core.files import file_digest
from specsim.core.names import given_as
from specsim.describe.hardware import HardwareProfile
from specsim.describe.models import ModelShape
from specsim.timing._grid import interp_grid
from specsim.timing.base import StepTime
from specsim.timing.measurements import load_measurements
from specsim.timing.roofline import step_time

__all__ = ["MeasuredSource"]

_MATCH = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "weight_dtype",
    "kv_dtype",
)


def _shape_key(model: ModelShape) -> tuple:
    return tuple(getattr(model, k) for k in _MATCH)


#: A measured pass may cost this much less than a smaller one (timing noise) before the file is refused.
MONOTONE_TOLERANCE = 0.10


def _monotone(grid: np.ndarray, axes: tuple, name: str, model: str) -> np.ndarray:
    """The grid with the physical rule every source follows: a pass of more sequences or more tokens per sequence
    never costs less.  Dips within :data:`MONOTONE_TOLERANCE` are timing noise and are raised to the smaller pass's
    time; a larger dip means the file is not step times of one model, and it is refused with the point named."""
    out = grid.copy()
    for axis, what in ((1, "tokens per sequence"), (0, "batch")):
        moved = np.moveaxis(out, axis, 0)
        running = np.fmax.accumulate(moved, axis=0)  # NaN (unmeasured) points neither raise nor lower the run
        dip = np.isfinite(moved) & (moved < running * (1.0 - MONOTONE_TOLERANCE))
        if np.any(dip):
            i = tuple(int(v[0]) for v in np.nonzero(np.moveaxis(dip, 0, axis)))
            b, q, L = (axes[k][i[k]] for k in range(3))
            raise ValueError(
                f"{name}: {model} at batch {b:g}, {q:g} tokens per sequence, context {L:g} takes "
                f"{grid[i] * 1e3:.3g} ms, more than {MONOTONE_TOLERANCE:.0%} less than a pass with fewer "
                f"{what}; a larger pass never costs less: these are not step times of one model"
            )
        out = np.moveaxis(np.where(np.isfinite(moved), np.fmax(moved, running), moved), 0, axis)
    return out


class MeasuredSource:
    """Interpolated step times from a measurement CSV, the roofline outside it.

    Parameters
    ----------
    path : str or Path
        A CSV in the form ``specsim measure`` writes (or any CSV that
        ``specsim calibrate`` reads).
    hardware : HardwareProfile
        The roofline used outside the measured points.
    """

    name = "measured"
    #: Harness measurements time the GPU passes only: engine presets add their GPU-time value.
    gpu_time_only = True

    def __init__(self, path: str | Path, hardware: HardwareProfile):
        self.path = Path(path)
        self.hardware = hardware
        df = load_measurements(self.path)
        self.sha256 = file_digest(self.path)
        self.devices = sorted(set(map(str, df["device_name"]))) if "device_name" in df.columns else []
        self.notes: list[str] = []
        self._grids: dict[tuple, tuple] = {}
        self._names: dict[tuple, str] = {}
        df = df.assign(_key=[_shape_key(s) for s in df["shape"]])
        for key, rows in df.groupby("_key", sort=False):
            med = rows.groupby(["batch", "tokens_per_seq", "context"])["measured_s"].median()
            axes = tuple(np.array(sorted(set(med.index.get_level_values(i))), float) for i in range(3))
            grid = np.full(tuple(a.size for a in axes), np.nan)
            idx = tuple(np.searchsorted(axes[i], med.index.get_level_values(i).to_numpy(float)) for i in range(3))
            grid[idx] = med.to_numpy(float)
            self._grids[key] = (axes, _monotone(grid, axes, self.path.name, str(rows["model_name"].iloc[0])))
            self._names[key] = str(rows["model_name"].iloc[0])

    def noted_items(self) -> list[tuple]:
        """(key, text) of every note so far (its text is its key)."""
        return [(n, n) for n in self.notes]

    def take_notes(self, items: list[tuple]) -> None:
        """Note what another copy of this source noted (a run in a worker process), each once."""
        self.notes.extend(text for _, text in items if text not in self.notes)

    def brief(self) -> str:
        return f"measured {self.path.name}"

    def describe(self) -> str:
        where = f" on {', '.join(self.devices)}" if self.devices else ""
        return f"measured: {self.path.name} (sha256 {self.sha256}){where}, roofline ({self.hardware.name}) outside it"

    def models(self) -> list[str]:
        return list(self._names.values())

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
    ) -> StepTime:
        """Interpolated t(b, q, L); the roofline where the file has no data (flagged).  A ``prompt``'s pass is read from
        the same grid (the file's passes of q tokens): prompts longer than its q are the roofline's."""
        key = _shape_key(model)
        if key not in self._grids:
            raise ValueError(
                f"{self.path.name} has no measurements of {model.name} ({model.n_layers} layers, hidden {model.hidden_size}, "
                f"{model.weight_dtype}); it has {', '.join(self.models())}: measure this model too, or use "
                f"{given_as('timing')} roofline|kernels"
            )
        roof = step_time(self.hardware, model, batch, tokens_per_seq, context, prompt)
        axes, grid = self._grids[key]
        total = interp_grid(axes, grid, [batch, tokens_per_seq, context])
        fallback = ~np.isfinite(total)
        if np.any(fallback):
            note = (
                f"{model.name}: {int(np.count_nonzero(fallback))} of {fallback.size} points lie outside the measurements "
                f"in {self.path.name} (b {axes[0][0]:.0f}-{axes[0][-1]:.0f}, q {axes[1][0]:.0f}-{axes[1][-1]:.0f}, "
                f"L {axes[2][0]:.0f}-{axes[2][-1]:.0f}); the roofline answers there"
            )
            if note not in self.notes:
                self.notes.append(note)
        total = np.where(fallback, roof.total_s, total)
        return dataclasses.replace(
            roof, total_s=total, source=self.name, fallback=fallback if np.any(fallback) else None
        )
