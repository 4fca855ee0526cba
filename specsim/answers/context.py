"""Where an answer's context comes from, as every answer's JSON says it (one home)."""

from __future__ import annotations

__all__ = ["LOAD_CONTEXT", "context_basis"]

#: An answer at a load takes the context of its requests (:attr:`specsim.answers.load.RequestLengths.context_tokens`).
LOAD_CONTEXT = "the load's requests: their prompt plus half their output"


def context_basis(context) -> str:
    """Where an answer's context comes from: "given" by the caller, or what a command's --context not given says (the
    reference article's lengths, or a calibration's runs': cli.flags.UnsetInt carries it).

    >>> context_basis(1128)
    'given'
    """
    return getattr(context, "basis", "given")
