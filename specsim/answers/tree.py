"""optimal-gamma --tree as a library result: the best token tree within the bounds per batch size, next to the best chain.

Its own module so that the chain search (:func:`specsim.answers.gamma_answer`) does not build this class (issue 28).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.answers.verdict import VERDICTS, judged_at, model_error, too_close_said, verdict
from specsim.core.names import given_as
from specsim.serving.capacity import Capacity
from specsim.speculation.acceptance import DEFAULT_SIBLING_FACTOR, TreeSpec, acceptance_rates
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, optimal_tree

__all__ = ["TreeAnswer", "tree_answer"]


@dataclass(frozen=True)
class TreeAnswer:
    """optimal-gamma --tree: the best tree within the bounds per batch size, next to the best chain."""

    deployment: Deployment
    acceptance: str
    capacity: Capacity
    bounds: TreeSpec
    sibling: float
    sibling_assumed: bool
    rows: list

    @property
    def model_error(self):
        """The error its verdicts are judged against (:func:`specsim.answers.verdict.model_error`)."""
        return model_error(self.deployment)


def tree_answer(
    dep: Deployment,
    acceptance: object,
    label: str | None,
    bounds: TreeSpec,
    batches: list,
    context: int,
    gamma_max: int,
    rtol: float,
    sibling: float | None,
    cap: Capacity,
) -> TreeAnswer:
    """The best tree per batch size within ``bounds`` (each row beside the best chain), with its memory fit, context and
    the sibling factor it assumed or was given."""
    from specsim.answers.acceptance import checked_label

    label = checked_label(acceptance, label)  # a row shows it as the acceptance it was computed at
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    rates = acceptance_rates(acceptance)
    from specsim.answers.context import context_basis
    from specsim.core.limits import whole_batches

    # a context where the engine runs a decode step
    dep.require_drafts_within_positions(context, 0, given_as("context"))
    b = whole_batches(batches)
    factor = DEFAULT_SIBLING_FACTOR if sibling is None else sibling
    trees, speedups, tokens = optimal_tree(dep, acceptance, bounds, b, context, sibling, rtol)
    chain = optimal_gamma(dep, acceptance, b, context, gamma_max, rtol)
    from types import SimpleNamespace

    from specsim.answers import row_source

    def source(i: int, t) -> str:
        """Which source timed this row's passes (the roofline standing in outside the kernel data): the tree's decode
        and verification of its tokens, or the chain's round where no tree pays."""
        if t is None:
            return row_source(dep, chain.outcome, i)
        one = np.array([b[i]])
        passes = SimpleNamespace(
            target=dep.decode(one, context), draft=None, verify=dep.pass_time(dep.target, one, t.tokens, context)
        )
        return row_source(dep, passes, 0)

    rows, error = [], model_error(dep)
    for i, batch in enumerate(batches):
        t = trees[i]
        rows.append(
            {
                "batch": batch,
                "tree": None if t is None else {"topk": t.topk, "depth": t.depth, "tokens": t.tokens},
                "speedup": float(speedups[i]),
                "tokens_per_round": float(tokens[i]),
                "chain_gamma": int(chain.gamma[i]),
                "chain_speedup": float(chain.speedup[i]),
                "context_tokens": int(context),
                "context_basis": context_basis(context),
                # the r-th ranked sibling's acceptance relative to the first's, per rank (assumed where not given)
                "sibling_factor": {"value": factor, "assumed": sibling is None},
                "fits_without_draft": batch <= cap.max_batch_without_draft,
                "fits_with_draft": batch <= cap.max_batch_with_draft,
                "recommendation": _recommend(t, float(speedups[i]), chain, i, error),
                "verdict": _verdict(t, float(speedups[i]), chain, i, error),
                "model_error": error.record(),
                "acceptance": label,
                "acceptance_rates": rates,
                "drafter": dep.drafter.kind,
                "timing_source": source(i, t),
                "provenance": dep.provenance(),
                "deployment": dep.identity(),
            }
        )
    return TreeAnswer(dep, label, cap, bounds, factor, sibling is None, rows)


def _weighed(t, speedup: float, chain, i: int) -> tuple[str, float] | None:
    """The speculation a tree row's verdict weighs and its speedup: the tree picked, else the best speculating chain
    (None: none searched)."""
    if t is not None:
        return (
            f"chain, gamma={t.depth}" if t.is_chain else f"tree topk={t.topk} depth={t.depth} tokens={t.tokens}"
        ), speedup
    if chain.speculating is None:
        return None
    return f"gamma={int(chain.speculating[0][i])}", float(chain.speculating[1][i])


def _verdict(t, speedup: float, chain, i: int, error) -> str | None:
    """:func:`specsim.answers.verdict.verdict` of a tree row (None where nothing speculating was weighed)."""
    weighed = _weighed(t, speedup, chain, i)
    return None if weighed is None else verdict(weighed[1] - 1.0, error, t is not None)


def _recommend(t, speedup: float, chain, i: int, error) -> str:
    """A tree row's recommendation: the tree (or chain) picked, turn speculation off, or too close to call."""
    from specsim.answers.load import _change

    if _verdict(t, speedup, chain, i, error) == VERDICTS[2]:
        what, gain = _weighed(t, speedup, chain, i)
        return too_close_said(what, f"{_change(gain - 1)} speedup", error)
    return "turn speculation off" if t is None else _weighed(t, speedup, chain, i)[0]
