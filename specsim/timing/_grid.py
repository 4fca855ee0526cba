"""Multilinear interpolation on a rectilinear grid that may have unmeasured (NaN) cells.

Shared by the kernel source (decode attention over (b, L)) and the measured
source (whole passes over (b, q, L)).  Never extrapolates: a point outside the
axes, or one that needs a NaN corner with non-zero weight, gives NaN, which the
sources turn into a flagged roofline fallback.  An axis with a single value
must be matched exactly.  Beside it, the envelopes a measured line is read
through: its lower convex hull and its suffix minimum.
"""

from __future__ import annotations

import numpy as np

__all__ = ["interp_grid", "lower_hull", "suffix_min"]


def interp_grid(axes: tuple, grid: np.ndarray, points: list) -> np.ndarray:
    """Interpolate ``grid`` (one dimension per axis, increasing axes) at broadcast ``points``.

    >>> interp_grid((np.array([0.0, 1.0]),), np.array([0.0, 2.0]), [np.array([0.25, 2.0])]).tolist()
    [0.5, nan]
    """
    if len(axes) == 2 and axes[0].size > 1 and axes[1].size > 1:
        return _bilinear(axes, grid, points)
    return _general(axes, grid, points)


def _general(axes: tuple, grid: np.ndarray, points: list) -> np.ndarray:
    """Any number of axes: each of the 2^d corners with its weight."""
    pts = np.broadcast_arrays(*(np.asarray(p, float) for p in points))
    shape = np.shape(pts[0])
    inside = np.ones(shape, bool)
    lo, frac = [], []
    for ax, x in zip(axes, pts):
        inside &= (x >= ax[0]) & (x <= ax[-1])
        if ax.size == 1:
            lo.append(np.zeros(shape, int))
            frac.append(np.zeros(shape))
            continue
        i = np.clip(np.searchsorted(ax, x, side="right") - 1, 0, ax.size - 2)
        lo.append(i)
        frac.append((x - ax[i]) / (ax[i + 1] - ax[i]))
    out = np.zeros(shape)
    for corner in range(2 ** len(axes)):
        offs = [(corner >> d) & 1 for d in range(len(axes))]
        if any(o and ax.size == 1 for o, ax in zip(offs, axes)):
            continue
        w = np.ones(shape)
        index = []
        for d, ax in enumerate(axes):
            w = w * (frac[d] if offs[d] else 1.0 - frac[d])
            index.append(np.minimum(lo[d] + offs[d], ax.size - 1))
        # A corner with zero weight must not poison the result with its NaN.
        out = out + np.where(w > 0, w * grid[tuple(index)], 0.0)
    return np.where(inside, out, np.nan)


def _bilinear(axes: tuple, grid: np.ndarray, points: list) -> np.ndarray:
    """:func:`interp_grid` on two axes of two or more values each, in fewer array operations (the kernel source's
    decode attention is one per pass).  The same rule: no extrapolation, a NaN corner counts only with weight > 0."""
    (xa, ya), (x, y) = axes, (np.asarray(points[0], float), np.asarray(points[1], float))
    # (np.minimum and np.maximum clip as np.clip does, in a fifth of its time: this runs once a pass)
    i = np.minimum(np.maximum(np.searchsorted(xa, x, side="right") - 1, 0), xa.size - 2)
    j = np.minimum(np.maximum(np.searchsorted(ya, y, side="right") - 1, 0), ya.size - 2)
    xi, yj = xa[i], ya[j]
    fx, fy = (x - xi) / (xa[i + 1] - xi), (y - yj) / (ya[j + 1] - yj)
    # The cell's corner (i, j) in the grid read flat; its neighbours at + 1, at + ya.size and at + ya.size + 1.
    flat, at = grid.ravel(), i * ya.size + j
    out = 0.0
    for wx, di in ((1.0 - fx, 0), (fx, ya.size)):
        for wy, dj in ((1.0 - fy, 0), (fy, 1)):
            w = wx * wy
            out = out + np.where(w > 0, w * flat[at + (di + dj)], 0.0)
    inside = (x >= xa[0]) & (x <= xa[-1]) & (y >= ya[0]) & (y <= ya[-1])
    return np.where(inside, out, np.nan)


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y`` at ``x`` on the lower convex hull of the points (x, y), ``x`` increasing: the greatest convex function at
    or under every point (Andrew's monotone chain, its lower half).  A loop over the points: a table's line is built
    once, and a hull is sequential.

    >>> lower_hull(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 3.0, 3.0, 4.0])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    keep: list[int] = []
    for i in range(x.size):
        # The last kept point lies on or above the chord from the one before it to this one: not a vertex.
        while len(keep) >= 2 and (y[keep[-1]] - y[keep[-2]]) * (x[i] - x[keep[-2]]) >= (y[i] - y[keep[-2]]) * (
            x[keep[-1]] - x[keep[-2]]
        ):
            keep.pop()
        keep.append(i)
    return np.minimum(np.interp(x, x[keep], y[keep]), y)  # (a point on a chord: never above it by a rounding)


def suffix_min(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """t_eff(x) = min over x' >= x of t(x'): more work never costs less.

    Measured kernels are not monotone (GEMMs at m = 128 ran faster than at
    m = 64 on the H100, a different tile choice or noise); an engine pads a
    pass up to a faster captured size, so the larger size's time is the one to
    use.  NaN (unmeasured) cells are left alone.
    """
    flipped = np.flip(values, axis)
    filled = np.where(np.isnan(flipped), np.inf, flipped)
    out = np.flip(np.minimum.accumulate(filled, axis=axis), axis)
    return np.where(np.isnan(values), np.nan, out)
