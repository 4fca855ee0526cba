"""How output names a count (the noun after a number takes its plural unless the number, as printed, is 1) and lists
names that carry numbers (in the numbers' order, as a person reads them)."""

from __future__ import annotations

import re

__all__ = ["by_number", "counted"]


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
