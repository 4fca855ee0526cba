"""How output names a count: the noun after a number takes its plural unless the number, as printed, is 1."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: float, noun: str, spec: str = ",") -> str:
    """``n`` formatted by ``spec`` and ``noun``, plural (an ``s`` added) unless ``n`` prints as 1.

    >>> counted(1, "request"), counted(2_048, "user"), counted(0, "sequence")
    ('1 request', '2,048 users', '0 sequences')
    >>> counted(1.2, "request", ".0f"), counted(1.6, "request", ".0f")
    ('1 request', '2 requests')
    """
    shown = format(n, spec)
    return f"{shown} {noun}" + ("" if shown == "1" else "s")
