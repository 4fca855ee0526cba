"""The decoding sequences' step of one deployment at a batch: what the serving model (:mod:`specsim.serving.steady`)
asks of the step-time source, and the step seconds its bisections asked, kept.

An open loop solves its fixed point twice where a full engine's preemptions are charged (``_open_loop``), and the second
bisection asks again for the batches the first one asked before their answers part.  Each such step is now the one
already made: ``watch --alert-rules`` at vllm@0.26.0 asks the hybrid source 445 passes where it asked 478, and
``optimal-gamma --rate 24,25.2,25.8,26.5,27,28`` 402 where it asked 435 (counted by wrapping its step_time)."""

from __future__ import annotations

import numpy as np

__all__ = ["decoding_step", "kept_seconds"]

#: The batches whose step seconds one serving model's steps (one deployment at one acceptance, gamma and context) keep
#: at once: two bisections of 48 steps and their upward searches (``_open_fixed_point``), ~77 kB each at 201 x 24 cells.
_SECONDS_KEPT = 128


def decoding_step(dep, acceptance, gamma, batch, context) -> tuple:
    """(step seconds, tokens per round, outcome) of the decoding sequences at ``batch`` (plain where gamma is 0)."""
    if dep.drafter is None or not np.any(gamma):
        step = np.asarray(dep.decode(batch, context).total_s, dtype=float)
        return (
            np.broadcast_to(step, np.broadcast_shapes(step.shape, np.shape(gamma))),
            np.ones(np.broadcast_shapes(step.shape, np.shape(gamma))),
            None,
        )
    out = dep.outcome(acceptance, gamma, batch, context)
    return (
        np.asarray(out.time_s, dtype=float),
        np.where(np.asarray(gamma) == 0, 1.0, np.asarray(out.tokens, dtype=float)),
        out,
    )


def kept_seconds(kept: dict, steps, batch) -> np.ndarray:
    """``steps(batch)``'s step seconds, the one in ``kept`` where this batch was asked before: ``kept`` belongs to
    ``steps`` alone (one deployment, acceptance, gamma and context), so the batch's dtype, shape and values are the whole
    key.  At most :data:`_SECONDS_KEPT` kept; each read-only, one array for every caller."""
    b = np.asarray(batch)
    key = (b.dtype.str, b.shape, b.tobytes())
    seconds = kept.get(key)
    if seconds is None:
        seconds = steps(batch)[0]
        if seconds.flags.writeable:
            seconds.flags.writeable = False
        if len(kept) >= _SECONDS_KEPT:
            kept.clear()
        kept[key] = seconds
    return seconds
