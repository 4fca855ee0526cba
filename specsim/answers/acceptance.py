"""Which acceptance an answer rests on, and the label every answer prints beside it.

In order of precedence: per-position rates the user gives (``"0.92,0.81,0.70"`` or an
:class:`~specsim.speculation.acceptance.Acceptance`), a saved ``/metrics`` page, one alpha, a calibration's acceptance
measured on real prompts (where the drafter is the one it measured), else the drafter's published acceptance for the
deployment's target, the workload and the context
(:meth:`specsim.speculation.drafters.Drafter.default_acceptance`).  The command line's ``--acceptance``, ``--metrics``,
``--alpha`` and ``--calibration`` call this, so that a notebook resolves the same acceptance with the same label.
"""

from __future__ import annotations

import numpy as np

from specsim.core.limits import is_real

__all__ = ["acceptance_label", "checked_label", "resolve_acceptance"]


def resolve_acceptance(
    dep=None,
    *,
    alpha: float | None = None,
    acceptance=None,
    metrics: str | None = None,
    metrics_gamma: int | None = None,
    metrics_model: str | None = None,
    calibration=None,
    draft: str | None = None,
    workload: str | None = None,
    context: int | None = None,
    full_source: bool = False,
) -> tuple[object, str]:
    """(acceptance, label): a float alpha or an :class:`~specsim.speculation.acceptance.Acceptance`, and what it is.

    Parameters
    ----------
    dep : Deployment, optional
        Whose drafter's published acceptance applies when none is given (for its target, ``workload`` and
        ``context``); without it, the default of the drafter ``draft`` names (or the calibration's drafter).
    alpha : float, optional
        One per-token acceptance rate in [0, 1].
    acceptance : str or Acceptance, optional
        Per-position acceptance, P(drafted token k accepted) for k = 1, 2, ... (a string is parsed as ``--acceptance``).
    metrics, metrics_gamma, metrics_model : optional
        A saved ``/metrics`` page, with the draft steps an SGLang page was measured at and the model it names.
    calibration : Calibration, optional
        A :func:`specsim.calibration.file.read_calibration` result: its measured acceptance applies where ``draft``
        is None or its drafter.
    draft : str, optional
        The drafter as named beside the calibration (``--draft``).
    workload : str, optional
        Which workload's published acceptance to read (``chat`` unless given; a name of :mod:`specsim.core.workloads`).
    context : int, optional
        Cached tokens per sequence, for the published rows that depend on it, in tokens.
    full_source : bool
        Append the published default's source in full to its label (``-v``); a calibration's per-position shares add
        the file's record of them.

    >>> resolve_acceptance(alpha=0.8)
    (0.8, 'alpha 0.8')
    >>> resolve_acceptance(acceptance="0.9,0.8")[0].max_gamma
    2
    """
    from specsim.speculation.acceptance import Acceptance, parse_acceptance
    from specsim.speculation.drafters import drafter_class

    if alpha is not None and not (is_real(alpha) and np.isfinite(alpha) and 0 <= alpha <= 1):
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r:.40}")
    if context is not None and not (is_real(context) and context >= 0):  # a mean context may be a fraction
        raise ValueError(f"context must be a number of tokens >= 0, got {context!r:.40}")
    if acceptance is not None and not isinstance(acceptance, (str, Acceptance)):
        raise ValueError(
            f"acceptance must be per-position rates as text ('0.9,0.8') or an Acceptance, got {acceptance!r:.40}"
        )
    if acceptance is not None:
        acc = parse_acceptance(acceptance) if isinstance(acceptance, str) else acceptance
    elif metrics is not None:
        from specsim.speculation.metrics import acceptance_from_page

        acc = acceptance_from_page(metrics, metrics_gamma, metrics_model)
    elif alpha is not None:
        return alpha, acceptance_label(alpha)
    else:
        cal = calibration
        measured, why = (None, "") if cal is None else cal.acceptance_for(draft)
        if measured is not None:
            # its label, the file's record of it in full with -v (the same where the file's acceptance is one alpha)
            return measured, measured.source if full_source else cal.acceptance_label
        kind = (
            type(dep.drafter)
            if dep is not None
            else drafter_class(draft if draft is not None or cal is None else cal.drafter)
        )
        acc, label = (
            kind.default_acceptance(dep.target, workload, context) if dep is not None else kind.default_acceptance()
        )
        full = kind.published()[1]
        if full_source and full not in label:  # the default's source in full: target, workload, draft length, number
            label += f"; the default in full: {full}"
        if why:
            label += f"; {why}"
        return acc, label
    return acc, acceptance_label(acc)


def acceptance_label(acceptance) -> str:
    """What an acceptance given as it is (an alpha, or an :class:`~specsim.speculation.acceptance.Acceptance`) is called
    where no label names it: an answer's ``acceptance`` key, as :func:`resolve_acceptance` labels ``--alpha``.

    >>> acceptance_label(0.8), acceptance_label([0.6, 0.8])
    ('alpha 0.8', 'alpha 0.6, 0.8')
    """
    from specsim.speculation.acceptance import checked_acceptance

    describe = getattr(checked_acceptance(acceptance), "describe", None)  # a bool or a string is not an alpha
    if describe is not None:
        return describe()
    return "alpha " + ", ".join(f"{float(a):g}" for a in np.ravel(acceptance))


def checked_label(acceptance, label: str | None) -> str:
    """``label`` for ``acceptance``, refused where it names another alpha: a row shows the label as the acceptance it
    was computed at, so ``gamma_answer(dep, 0.6, "alpha 0.8", ...)`` would print 0.8 beside figures of 0.6.

    >>> checked_label(0.8, "alpha 0.800 (the published default)"), checked_label(0.8, None)
    ('alpha 0.800 (the published default)', 'alpha 0.8')
    """
    import re

    from specsim.speculation.acceptance import checked_acceptance

    if label is None:  # left out: the acceptance's own, as gamma_answer names it
        return acceptance_label(acceptance)
    checked_acceptance(acceptance)  # a bool or a string is not an alpha
    said = re.match(r"alpha (\d+(?:\.\d+)?)", label or "")
    if said is not None and is_real(acceptance) and abs(float(said.group(1)) - float(acceptance)) > 5e-4:
        raise ValueError(f"the label says alpha {said.group(1)} but the acceptance given is {float(acceptance):g}")
    return label
