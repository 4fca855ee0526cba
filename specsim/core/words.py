"""How output names a count (the noun after a number takes its plural unless the number, as printed, is 1) and lists
names that carry numbers (in the numbers' order, as a person reads them), and shows an array in a line."""

from __future__ import annotations

import re

import numpy as np

__all__ = ["by_number", "counted", "ends", "points"]


def counted(n: float, noun: str, spec: str = ",") -> str:
    """``n`` formatted by ``spec`` and ``noun``, plural (an ``s`` added) unless ``n`` prints as 1.

    >>> counted(1, "request"), counted(2_048, "user"), counted(0, "sequence")
    ('1 request', '2,048 users', '0 sequences')
    >>> counted(1.2, "request", ".0f"), counted(1.6, "request", ".0f")
    ('1 request', '2 requests')
    """
    shown = format(n, spec)
    return f"{shown} {noun}" + ("" if shown == "1" else "s")


def by_number(names) -> list:
    """``names`` sorted with their runs of digits compared as numbers: a benchmark's files one per concurrency in the
    concurrency's order, not the text's.

    >>> by_number(["eagle3-c16.jsonl", "eagle3-c4.jsonl", "eagle3-c1.jsonl"])
    ['eagle3-c1.jsonl', 'eagle3-c4.jsonl', 'eagle3-c16.jsonl']
    """
    return sorted(
        names, key=lambda name: [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name)]
    )


def ends(values: object, spec: str) -> str:
    """``values`` flattened and formatted by ``spec`` in a line, the first three and the last two where more than six: a
    notebook's echo of an array (the array itself holds every value).

    >>> ends([1, 2, 3], "d"), ends(range(1, 101), "d")
    ('[1, 2, 3]', '[1, 2, 3, ..., 99, 100]')
    """
    flat = [format(v, spec) for v in np.ravel(values)]
    return "[" + ", ".join(flat if len(flat) <= 6 else [*flat[:3], "...", *flat[-2:]]) + "]"


def points(shape: tuple) -> str:
    """How many points an array of ``shape`` holds, with the shape where it has more than one axis.

    >>> points((1,)), points((256,)), points((3, 2))
    ('1 point', '256 points', '6 points (3, 2)')
    """
    return counted(int(np.prod(shape)), "point") + (f" {shape}" if len(shape) > 1 else "")
