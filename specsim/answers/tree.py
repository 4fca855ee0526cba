"""optimal-gamma --tree as a library result: the best token tree within the bounds per batch size, next to the best chain.

Its own module so that the chain search (:func:`specsim.answers.gamma_answer`) does not build this class (issue 28).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def tree_answer(
    dep: Deployment,
    acceptance: object,
    label: str,
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
    rates = acceptance_rates(acceptance)
    from specsim.answers.context import context_basis
    from specsim.core.limits import whole_batches

    dep.require_drafts_within_positions(context, 0, "--context")  # a context where the engine runs a decode step
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

    rows = []
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
                "recommendation": "turn speculation off"
                if t is None
                else (
                    f"chain, gamma={t.depth}" if t.is_chain else f"tree topk={t.topk} depth={t.depth} tokens={t.tokens}"
                ),
                "acceptance": label,
                "acceptance_rates": rates,
                "drafter": dep.drafter.kind,
                "timing_source": source(i, t),
                "provenance": dep.provenance(),
                "deployment": dep.identity(),
            }
        )
    return TreeAnswer(dep, label, cap, bounds, factor, sibling is None, rows)
