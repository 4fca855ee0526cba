"""What a fit's Jacobian says of its values, linearised at the fit (Bates and Watts, *Nonlinear Regression Analysis*,
1988, section 2.3): each value's 95% interval, and the pairs of values the runs cannot tell apart.  The fits are
:mod:`specsim.calibration.engine_fit`'s; ``free`` is its list of params (a name, bounds, a unit and what is near 0)."""

from __future__ import annotations

import numpy as np

__all__ = ["CONFIDENCE", "FLAT", "HOLD_FIRST", "TRADE_OFF", "flat", "intervals", "traded"]

CONFIDENCE = 0.95
#: Two fitted values whose estimates correlate beyond this cannot be told apart by the runs.
TRADE_OFF = 0.99
#: A direction of the values along which the runs' errors change less than this share of the most they change along any
#: (the Jacobian's smallest singular value over its largest) is one no run's time moves along: 70 times the resolution of
#: the solver's finite-difference Jacobian (its step is the square root of the double's epsilon, 1.5e-8, and so is the
#: smallest ratio it resolves).  Examples/bench/sglang-*'s fits with a load left out (three speculative runs for round_s,
#: seq_s and the hidden share) ended at 3e-9 to 2.4e-8; their pinned fits' smallest ratio was 7e-4.
FLAT = 1e-6
#: Which of two values that trade off is held: the first of this order (the acceptance last: it is the workload's).
HOLD_FIRST = (
    "iteration_seq_s",
    "prefill_scale",
    "iteration_s",
    "scale",
    "seq_step_s",
    "seq_s",
    "step_s",
    "round_s",
    "overlap_share",
    "alpha",
)


def traded(free: list, x: np.ndarray, r: np.ndarray, jac: np.ndarray) -> tuple | None:
    """The pair of fitted values that trade off, the one to hold first, and their correlation; None if none do.  Two
    values trade off where their estimates correlate beyond :data:`TRADE_OFF` and the one to hold is not pinned down:
    its 95% half-width is more than half its value (or than what is near 0 for it, ``near_zero`` of engine_fit's
    ``_Param``: a tenth of its range, or ``HOST_NEAR_ZERO_S`` for a host time per iteration or round).

    Two sweeps' acceptances share no run: where they correlate, it is through an engine term both trade off with, and
    that term is held (the one correlating most with the two), not an acceptance: holding one of them instead leaves
    the term free and the choice of which acceptance to a rounding error (a fit that did so was seen to flip between
    passes)."""
    from specsim.serving.runs import student_t

    dof = r.size - len(free)
    if len(free) < 2 or dof < 1:
        return None
    cov = np.linalg.pinv(jac.T @ jac) * (float(np.sum(r**2)) / dof)
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(sd, sd)
    np.fill_diagonal(corr, 0.0)
    t = student_t(dof, CONFIDENCE)
    terms = [k for k, p in enumerate(free) if not p.name.startswith("alpha")]
    for i, j in sorted(zip(*np.nonzero(np.triu(np.abs(corr) > TRADE_OFF))), key=lambda ij: -abs(corr[ij])):
        if free[i].name.startswith("alpha") and free[j].name.startswith("alpha") and terms:
            k = max(terms, key=lambda k: abs(corr[k, i]) + abs(corr[k, j]))
            return free[k], free[i], float(corr[k, i])
        rank = [HOLD_FIRST.index(p.name.split(":")[0]) for p in (free[i], free[j])]
        k = i if rank[0] <= rank[1] else j
        held, other = free[k], free[j if k == i else i]
        if t * sd[k] > max(0.5 * abs(x[k]), held.near_zero):
            return held, other, float(corr[i, j])
    return None


def intervals(free: list, x: np.ndarray, r: np.ndarray, jac: np.ndarray) -> dict[str, tuple[float, float]]:
    """95% intervals of ``free``, linearised at the fit (t over the residual degrees of freedom), clipped at the bounds."""
    from specsim.serving.runs import student_t

    dof = r.size - len(free)
    if dof < 1 or not free:
        return {}
    s2 = float(np.sum(r**2)) / dof
    cov = np.linalg.pinv(jac.T @ jac) * s2
    t = student_t(dof, CONFIDENCE)
    out = {}
    for k, (p, v) in enumerate(zip(free, x)):
        half = t * float(np.sqrt(max(cov[k, k], 0.0)))
        out[p.name] = (max(p.lower, (v - half) * p.unit), min(p.upper, (v + half) * p.unit))
    return out


def flat(free: list, jac: np.ndarray) -> tuple | None:
    """(the value to hold, the one it moves with most, their direction's singular value over the largest) where the
    Jacobian has a direction no run's time moves along (:data:`FLAT`): the runs cannot tell those values apart, whatever
    the residuals (where there are no more runs than values, the intervals and :func:`traded` have no residual degrees of
    freedom to judge them by, and the solver stops wherever it started along it).  Held is the first of those carrying
    at least a tenth of the direction in :data:`HOLD_FIRST`'s order, never an acceptance (the workload's); None if none
    is flat or the direction is the acceptances' alone."""
    if len(free) < 2 or jac.shape[0] < len(free):
        return None
    _, s, vt = np.linalg.svd(jac, full_matrices=False)
    if not s[0] > 0 or s[-1] > FLAT * s[0]:
        return None
    weight = np.abs(vt[-1])
    carried = [k for k in np.argsort(-weight) if weight[k] >= 0.1 * weight.max()]
    terms = [k for k in carried if not free[k].name.startswith("alpha")]
    if len(carried) < 2 or not terms:
        return None
    k = min(terms, key=lambda k: HOLD_FIRST.index(free[k].name))
    return free[k], free[next(j for j in carried if j != k)], float(s[-1] / s[0])
