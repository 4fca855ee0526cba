"""The step table of the request-level simulator (:mod:`specsim.serving.simulator`): a deployment's round times on a
(batch, context, gamma) grid, read once and interpolated linearly in context as the simulated engine runs.

Step times come from the deployment's step-time source and engine preset (:meth:`Deployment.outcome`, a decode step
at gamma 0); a prompt's marginal time in an iteration from :meth:`Deployment.prefill_s` on a grid of prompt tokens.
"""

from __future__ import annotations

import numpy as np

from specsim.serving.steady import DEFAULT_MAX_BATCHED_TOKENS
from specsim.speculation.deployment import Deployment

__all__ = ["StepTable"]


class StepTable:
    """Round times of a deployment on a (batch 1..max_batch, context grid, gamma 0..gamma_max) grid, at ``acceptance``.

    ``round_s(b, L, gamma)``: the time of a round of a gamma chain (:meth:`Deployment.outcome`; ``t_T`` for gamma 0).
    ``verified(b, L, gamma)``: the draft tokens a drafter that verifies a prefix per request (DSpark, suffix decoding)
    verifies on average at that batch (None for every other drafter: all gamma).  ``prefill_s(P, speculating)``: the
    marginal time of ``P`` prompt tokens in an iteration, the drafter's network over them too when speculating.
    """

    def __init__(
        self,
        dep: Deployment,
        max_batch: int,
        max_context: int,
        gamma_max: int = 0,
        max_prefill_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
        acceptance: object = 0.0,
    ):
        # the simulator takes the engine's budget rule for its drafter from it (EngineLimits.for_deployment)
        self.dep = dep
        b = np.arange(1, max_batch + 1, dtype=float)
        grid = np.unique(np.r_[0.0, np.round(np.geomspace(16, max(max_context, 32), 28))])
        self.contexts = grid
        self.gamma_max = int(gamma_max)
        gammas = np.arange(self.gamma_max + 1, dtype=float)
        self.verified_table = None
        if dep.drafter is None:
            self.table = dep.decode(b[:, None, None], grid[None, :, None]).total_s
        else:  # gamma 0 is the decode step; a round's time depends on the acceptance only where the verified prefix does
            out = dep.outcome(acceptance, gammas[None, None, :], b[:, None, None], grid[None, :, None])
            self.table = out.time_s
            if dep.drafter.varies_verification:
                self.verified_table = np.broadcast_to(
                    _verified(dep, acceptance, gammas, b, grid), (b.size, grid.size, gammas.size)
                )
        self.table = np.broadcast_to(self.table, (b.size, grid.size, gammas.size))  # (batch, context, gamma)
        tokens = np.unique(np.round(np.geomspace(1, max(max_prefill_tokens, max_context, 2), 40)))
        self.prefill_tokens = tokens
        self.prefill_table = dep.prefill_s(tokens)
        self.prefill_table_spec = dep.prefill_s(tokens, draft=True)
        self.base_s = dep.prefill_base_s()
        self.base_spec_s = dep.prefill_base_s(draft=True)  # a prefill batch's, speculating: the draft extend too
        self._rows: dict = {}
        self._prefill: dict = {}

    def round_s(self, batch: int, context: np.ndarray, gamma: int) -> np.ndarray:
        row = self._rows.get((batch, gamma))
        if row is None:  # one contiguous row per (batch, gamma), read once: the simulator asks for it every round
            row = self._rows[batch, gamma] = np.ascontiguousarray(self.table[batch - 1, :, gamma])
        return np.interp(context, self.contexts, row)

    def verified(self, batch: int, context: np.ndarray, gamma: int) -> np.ndarray | None:
        """Mean draft tokens verified per sequence (None: every drafted token, the chain's gamma)."""
        if self.verified_table is None or gamma == 0:
            return None
        return np.interp(context, self.contexts, self.verified_table[batch - 1, :, gamma])

    def prefill_s(self, tokens: float, speculating: bool = False, cached: int = 0) -> float:
        """The marginal time of prefilling ``tokens`` of a prompt over ``cached`` of its tokens a prefix-cache hit
        served (:meth:`Deployment.prefill_s`): read off the table's grid without a hit, from the deployment with one."""
        if tokens <= 0:
            return 0.0
        key = (tokens, speculating, cached)
        seconds = self._prefill.get(key)
        if seconds is None and cached:  # (a grid per cached length would be read for a few chunks each: asked instead)
            seconds = self._prefill[key] = float(self.dep.prefill_s(tokens, draft=speculating, cached_tokens=cached))
        elif seconds is None:  # the same prompt lengths and chunk boundaries come back many times in a run
            seconds = self._prefill[key] = float(
                np.interp(tokens, self.prefill_tokens, self.prefill_table_spec if speculating else self.prefill_table)
            )
        return seconds

    def chunk_s(self, upto: int, take: int, speculating: bool, cached: int = 0) -> float:
        """The marginal time of a prompt's chunk of ``take`` tokens after its first ``upto`` (``cached`` of them served
        by a prefix-cache hit, the rest prefilled): what extending its prefill by them costs, so that a prompt prefilled
        in chunks costs its whole prefill once."""
        done = upto - cached
        return self.prefill_s(done + take, speculating, cached) - self.prefill_s(done, speculating, cached)


def _verified(dep: Deployment, acceptance: object, gammas: np.ndarray, b: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The mean verified draft tokens per sequence of a prefix-verifying drafter on the table's grid (0 at gamma 0)."""
    v = dep.drafter.verified(
        dep, acceptance, np.maximum(gammas[None, None, :], 1.0), b[:, None, None], grid[None, :, None]
    )
    return np.where(gammas[None, None, :] == 0, 0.0, v)
