"""A figure's layout, computed once and frozen: what :func:`specsim.figures.make.make_all` and every command's
``--plot`` (:func:`specsim.figures.plots._save`) run before writing a figure, so that its files are the same bytes on
every machine."""

from __future__ import annotations

from typing import Any


def freeze_layout(fig: Any) -> None:
    """Run the constrained layout once, snap every axes to a 1e-4 grid of the figure, and switch the layout off.

    The layout solver's floating-point result differs in the last bits between CPUs (AVX-512 or not), which
    changed SVG coordinates in their sixth decimal; positions rounded to 1e-4 of the figure (0.1 pt on a
    14-inch figure) make every coordinate derive from the same numbers on every machine.

    The layout goes (None, not "none": "none" leaves a placeholder engine, for which savefig draws the figure once more
    before drawing it, a quarter of make_all's drawing; the rc settings keep None from choosing a layout of its own).
    """
    import matplotlib

    fig.draw_without_rendering()
    positions = [(ax, [round(v, 4) for v in ax.get_position().bounds]) for ax in fig.axes]
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
    for ax, bounds in positions:
        ax.set_position(bounds)
