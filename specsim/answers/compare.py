"""compare as a library result: latency and throughput per batch size, and at the largest batch that fits."""

from __future__ import annotations

from dataclasses import dataclass

from specsim.answers import deployment_capacity
from specsim.core.limits import whole_batches
from specsim.serving.capacity import Capacity, throughput_table
from specsim.speculation.deployment import Deployment

__all__ = ["CompareAnswer", "compare_answer"]


@dataclass(frozen=True)
class CompareAnswer:
    """compare: latency and throughput per batch size (:attr:`frame`), and at the largest batch that fits."""

    frame: object  # pandas DataFrame, one row per batch (see capacity.throughput_table)
    capacity: Capacity
    deployment: Deployment
    acceptance: object
    options: tuple  # (context, gamma, gamma_max, max_context, memory_utilization)

    def largest_batches(self) -> tuple | None:
        """(the largest batch that fits with the draft, the largest without it), or None where the draft does not fit
        beside the target."""
        cap = self.capacity
        if not (cap.target_fits and cap.both_fit and cap.max_batch_with_draft > 0):
            return None
        return cap.max_batch_with_draft, max(cap.max_batch_without_draft, 1)

    def at_largest(self) -> tuple | None:
        """(tokens/s with speculation at its largest batch, tokens/s without the draft at its largest batch), or None
        where the draft does not fit beside the target (:meth:`largest_batches`)."""
        batches = self.largest_batches()
        if batches is None:
            return None
        context, gamma, gamma_max, max_context, util = self.options
        best = throughput_table(
            self.deployment,
            self.acceptance,
            list(batches),
            context,
            gamma,
            gamma_max,
            max_context,
            util,
        )
        return float(best.tokens_per_s_spec.iloc[0]), float(best.tokens_per_s_plain.iloc[1])


def compare_answer(
    dep: Deployment,
    acceptance: object,
    batches: list,
    context: int,
    gamma: int | None,
    gamma_max: int,
    max_context: int | None,
    memory_utilization: float,
) -> CompareAnswer:
    from specsim.core.limits import MAX_GAMMA, check_int

    batches = whole_batches(batches)
    if gamma is not None:
        gamma = check_int("gamma", gamma, 0, MAX_GAMMA)
    cap = deployment_capacity(dep, context, max_context, memory_utilization)
    frame = throughput_table(dep, acceptance, batches, context, gamma, gamma_max, max_context, memory_utilization)
    return CompareAnswer(frame, cap, dep, acceptance, (context, gamma, gamma_max, max_context, memory_utilization))
