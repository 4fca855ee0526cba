"""The answer of each model command, as a library result: rows to print or serialise, and what they imply.

The command line (the modules of :mod:`specsim.cli`) turns these into tables or JSON and adds nothing: every number,
every recommendation and every finding it prints is computed here from the deployment, the speedup search,
the capacity model and the schedule, so that a notebook gets the same answer from the same call.

optimal-gamma's chain search, speedup, steptime and measure-loop live here; the answers of ``optimal-gamma --tree``
(:mod:`.tree`), ``compare`` (:mod:`.compare`) and ``explain`` (:mod:`.anatomy`) in their own modules, so that a command
builds only its own answer's class (issue 28: every module and record class a command loads is paid at each cold start).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from specsim.answers.context import context_basis
from specsim.answers.frames import Framed
from specsim.answers.verdict import (
    VERDICTS,
    judged_at,
    model_error,
    on_the_line,
    on_the_line_said,
    too_close_said,
    verdict,
)
from specsim.core.defaults import ARTICLE_CONTEXT_TOKENS, DEFAULT_BATCHES, DEFAULT_GAMMA_MAX, DEFAULT_RTOL
from specsim.core.limits import (
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_GAMMA,
    check_int,
    check_real,
    whole_batches,
    whole_numbers,
)
from specsim.core.names import given_as
from specsim.engines import ENGINES, REGISTRY
from specsim.engines.vllm import ROCM_BASIS, ROCM_SPEC
from specsim.serving.capacity import (
    Capacity,
    capacity,
    require_target_fits,
    reserved_context,
)
from specsim.speculation.acceptance import acceptance_rates, tokens_per_round
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import (
    OptimalGamma,
    checked_deployment,
    not_weighed,
    optimal_gamma,
    search_bound,
    speedup_from_cost_ratio,
)
from specsim.timing.assumptions import model_assumptions
from specsim.timing.roofline import RooflineSource

__all__ = [
    "GammaAnswer",
    "capacity_at",
    "capacity_record",
    "checked_capacity",
    "closed_form_answer",
    "deployment_capacity",
    "gamma_answer",
    "hardware_record",
    "loop_rows",
    "memory_counted",
    "row_source",
    "scheduled_batches",
    "speedup_rows",
    "steptime_rows",
    "weighed_at_batch",
    "why_off",
]


def row_source(dep: Deployment, times, i: int) -> str:
    """Which source produced row i's step times (and whether the roofline stood in for it)."""
    name = dep.source.name
    for t in (times.target, times.draft, times.verify):
        if t is None:
            continue
        if t.fallback is not None and bool(
            np.asarray(t.fallback).reshape(-1)[i] if np.ndim(t.fallback) else t.fallback
        ):
            return name + _OUTSIDE
    return name


#: What a row's timing_source adds where the roofline stood in for the source (outside its kernel data).
_OUTSIDE = ", roofline outside the kernel data"


def why_off(rows: list, first_round: dict | None = None) -> str:
    """The reason speculation is off, from the numbers rather than a fixed sentence; ``first_round``: the round of gamma
    = 1 at the largest batch it is off at (its ``batch``, ``round_s`` and ``host_s``, the engine's host work it waits
    for), named where that work is at least a quarter of the round."""
    off = [r for r in rows if r["gamma"] == 0]
    if first_round is not None and first_round["host_s"] >= 0.25 * first_round["round_s"]:
        return (
            "even gamma = 1 costs more than the tokens it saves at this acceptance; the engine's host work per round is "
            f"{first_round['host_s'] * 1e3:.2f} ms of its {first_round['round_s'] * 1e3:.2f} ms at batch "
            f"{first_round['batch']} ({first_round['host_s'] / first_round['round_s']:.0%}; explain --gamma 1 shows "
            "the parts)."
        )
    if all(r["bound_verify"] == "memory" for r in off):
        return (
            "even gamma = 1 costs more (one draft step plus a verification pass) than the tokens it saves "
            "at this acceptance; every pass there is memory-bound."
        )
    return "verification of gamma+1 tokens per sequence is compute-bound there and costs more than the tokens it saves."


# -- optimal-gamma -------------------------------------------------------------------------
@dataclass(frozen=True)
class GammaAnswer(Framed):
    """optimal-gamma for chains: the best gamma per batch, with its step times, memory and where it pays most."""

    deployment: Deployment
    acceptance: str
    capacity: Capacity
    best: OptimalGamma
    rows: list
    batches: list
    #: The same answer with the draft at the other tensor-parallel size engines allow (None on one GPU).
    other: tuple | None
    #: The round of gamma = 1 at the largest batch speculation is off at (:func:`why_off`); None where it is on.
    first_round: dict | None = None
    #: What stopped the search at its top gamma (:func:`specsim.speculation.search.search_bound`).
    gamma_bound: str = ""

    def __repr__(self) -> str:  # a notebook's echo: the answer, not every field (rows holds the rest)
        picks = ", ".join(f"batch {r['batch']}: gamma {r['gamma']} {r['speedup']:.3f}x" for r in self.rows[:6])
        more = f", ... ({len(self.rows)} batches)" if len(self.rows) > 6 else ""
        return f"GammaAnswer({self.deployment!r}, {self.acceptance.split(' (')[0]}; {picks}{more})"

    @property
    def model_error(self):
        """The error its verdicts are judged against (:func:`specsim.answers.verdict.model_error`)."""
        return model_error(self.deployment)

    def frame_records(self) -> list[dict]:
        """The records its table shows: its :attr:`rows`."""
        return self.rows

    @property
    def off_batches(self) -> list:
        return [r["batch"] for r in self.rows if r["gamma"] == 0]

    @property
    def off_reason(self) -> str:
        if self.best.gamma_max == 0:  # nothing searched: no reason from the numbers
            return f"{not_weighed()}."
        return why_off(self.rows, self.first_round)

    @property
    def peak(self) -> dict | None:
        """Where speculation pays clearly most, when that is not the smallest batch; with the reason for an MoE target."""
        best, dep = self.best, self.deployment
        if not best.peaks_later:
            return None
        i = best.peak
        why = (
            f": a decode step at batch {self.batches[0]} reads few of {dep.target.name}'s experts and verifying gamma+1 "
            "tokens per sequence reads many more; at larger batches decode already reads most of them"
            if dep.target.is_moe
            else ""
        )
        if dep.target.is_moe and dep.engine.spec_basis != ROCM_BASIS and self.batches[i] > 16:
            # The one public sweep of large MoE targets past concurrency 16 (AMD's, vLLM ROCm) falls from 4 to 64, by
            # the round's per-sequence host work (specsim.calibration.rocm); no CUDA sweep past 16 fits this preset's.
            # Said wherever the round terms are not those fitted there (SGLang's ROCm build keeps the CUDA round's).
            why += (
                f". Beyond batch 16 this rests on {dep.engine.key}'s per-sequence round terms, fitted on dense targets at "
                "batch 1-32: the only published large-MoE sweep to 64 (vLLM ROCm on MI355X, vLLM blog 2026-07-13) falls "
                f"from 4 to 64, and fits {ROCM_SPEC.seq_step_s * 1e6:.0f} us per sequence per draft step there "
                "(specsim.calibration.rocm)"
            )
        return {"batch": self.batches[i], "speedup": float(best.speedup[i]), "gamma": int(best.gamma[i]), "why": why}


def _other_draft_tp(dep: Deployment) -> tuple[Deployment, str] | None:
    """The same deployment with the draft at the other TP (1 or the target's) and how that alternative stands with the
    engine: run as asked, or not something this engine does (:func:`specsim.engines.draft_tp`); None on one GPU, for
    n-gram, and where the engine has no draft TP of its own (SGLang, TensorRT-LLM)."""
    from specsim.engines import draft_tp

    engine = REGISTRY.get(dep.engine.name)  # None for engine none
    if dep.target.tp == 1 or dep.draft is None or dep.engine.draft_shares_tp or (engine and not engine.own_draft_tp):
        return None
    other = dep.target.tp if dep.draft.tp == 1 else 1
    try:
        alternative = dep.with_draft(dataclasses.replace(dep.draft, tp=other))
    except ValueError:  # the draft's heads do not split that many ways
        return None
    try:
        ran, _ = draft_tp(dep.engine, dep.drafter.shares_vocabulary, dep.target.tp, other)
    except ValueError as refused:
        return alternative, f"which {dep.engine.key} refuses ({str(refused).split(' (')[0]})"
    if ran != other:
        return alternative, f"which {dep.engine.key} does not do for {dep.drafter.label} (it runs it at TP {ran})"
    return alternative, ""


def gamma_answer(
    dep: Deployment,
    acceptance: object,
    label: str | None = None,
    batches: list = DEFAULT_BATCHES,
    context: int = ARTICLE_CONTEXT_TOKENS,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    rtol: float = DEFAULT_RTOL,
    cap: Capacity | None = None,
    measured_steps: int | None = None,
) -> GammaAnswer:
    """The best gamma per batch size, each row with its step times, bounds, memory fit and recommendation (which says
    where a gamma drafts past the ``measured_steps`` the acceptance was measured at: an
    :class:`~specsim.speculation.acceptance.Acceptance`'s own where not given).

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance` and ``label`` what the rows call
    it (None: :func:`specsim.answers.acceptance.acceptance_label`); ``batches`` decode batch sizes in sequences;
    ``context`` cached tokens per sequence; ``gamma_max`` the largest gamma searched; ``rtol`` the share of the best
    speedup within which the smallest gamma is picked; ``cap`` the memory the rows are checked against (None:
    :func:`deployment_capacity` at ``context`` with the engine's own share and limits).  Each left out is what
    ``specsim optimal-gamma`` takes without its flag (:mod:`specsim.core.defaults`).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> [(r["batch"], r["gamma"], round(r["speedup"], 3), r["verdict"]) for r in gamma_answer(dep, 0.8, batches=[1, 64]).rows]
    [(1, 4, 1.739, 'speculate'), (64, 3, 1.717, 'speculate')]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.answers.acceptance import acceptance_label, checked_label

    # a row shows it as the acceptance it was computed at
    label = acceptance_label(acceptance) if label is None else checked_label(acceptance, label)
    context = check_int("context", context, 0, MAX_CONTEXT)  # NaN, a fraction: named before any arithmetic
    cap = checked_capacity(dep, context, cap)
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    if measured_steps is None:  # a calibration's acceptance knows the steps it was measured at
        measured_steps = getattr(acceptance, "measured_steps", None)
    batches = whole_numbers("batch", batches, 1, MAX_BATCH, "batches")
    # a context where the engine runs a decode step
    dep.require_drafts_within_positions(context, 0, given_as("context"))
    b = whole_batches(batches)
    best = optimal_gamma(dep, acceptance, b, context, gamma_max, rtol)
    if cap.scratch_draft_tokens:  # a hybrid target's scratch, sized for the num_speculative_tokens this answer sets
        cap = capacity(
            dep,
            cap.context_tokens,
            cap.memory_utilization,
            max(int(np.max(best.gamma)), 1),
            "the largest optimal gamma of these batch sizes",
            cap.max_batched_tokens,
            cap.max_num_seqs,
        )
    times = best.outcome
    tokens = np.broadcast_to(times.tokens, b.shape)
    alternative = _other_draft_tp(dep)
    other_dep = alternative[0] if alternative else None
    other = (
        (other_dep, optimal_gamma(other_dep, acceptance, b, context, gamma_max, rtol), alternative[1])
        if other_dep
        else None
    )
    # what the text prints above its table: the memory, its basis and the largest batches that fit
    memory = {
        "usable_bytes": cap.usable_bytes,
        "memory_basis": cap.memory_basis,
        "reserved_tokens_per_sequence": int(cap.context_tokens),
        "max_batch_without_draft": cap.max_batch_without_draft,
        "max_batch_with_draft": cap.max_batch_with_draft,
    }
    rates = acceptance_rates(acceptance)
    bound = search_bound(dep, acceptance, gamma_max, context)
    error = model_error(dep)
    rows = []
    for i, batch in enumerate(batches):
        gamma = int(best.gamma[i])
        off = gamma == 0
        row = {
            "batch": batch,
            "gamma": gamma,
            "speedup": float(best.speedup[i]),
            "tokens_per_round": float(tokens[i]),
            "context_tokens": int(context),
            "context_basis": context_basis(context),
            "acceptance": label,
            "acceptance_rates": rates,
            "drafter": dep.drafter.kind,
            **_round_parts(times, i, off, np.shape(times.round_s)),
            "bound_target": str(times.target.bound[i]),
            "bound_draft": str(times.draft.bound[i]),
            "bound_verify": str((times.target if off else times.verify).bound[i]),
            "at_gamma_max": bool(best.at_limit[i]),
            "gamma_bound": bound if best.at_limit[i] else None,  # what the text adds beside the recommendation
            "fits_without_draft": batch <= cap.max_batch_without_draft,
            "fits_with_draft": batch <= cap.max_batch_with_draft,
            "capacity": memory,
            "recommendation": _recommend(best, i, error, measured_steps),
            "verdict": _verdict(best, i, error),
            "on_the_line": _on_the_line(best, i, error),
            "model_error": error.record(),
            "timing_source": row_source(dep, times, i),
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
        }
        if other is not None:
            row[f"speedup_draft_tp{other_dep.draft.tp}"] = float(other[1].speedup[i])
            row[f"gamma_draft_tp{other_dep.draft.tp}"] = int(other[1].gamma[i])
        rows.append(row)
    off = [r["batch"] for r in rows if r["gamma"] == 0]
    first = None
    if off:
        one = dep.outcome(acceptance, 1, float(max(off)), context)
        first = {"batch": max(off), "round_s": float(one.round_s), "host_s": float(np.asarray(one.host_s))}
    return GammaAnswer(dep, label, cap, best, rows, list(batches), other, first, bound)


def weighed_at_batch(best: OptimalGamma, i: int) -> tuple[int, float] | None:
    """The speculating gamma a verdict at batch row ``i`` of ``best`` weighs and its speedup: the gamma picked, or where
    plain decoding is picked, the best speculating gamma; None where no speculating gamma was searched."""
    if best.speculating is None:
        return None
    if best.gamma[i] > 0:
        return int(best.gamma[i]), float(best.speedup[i])
    return int(best.speculating[0][i]), float(best.speculating[1][i])


def _verdict(best: OptimalGamma, i: int, error) -> str | None:
    """:func:`specsim.answers.verdict.verdict` at batch row ``i``: the gain of the gamma :func:`weighed_at_batch`;
    None where no speculating gamma was searched."""
    weighed = weighed_at_batch(best, i)
    if weighed is None:
        return None
    return verdict(weighed[1] - 1.0, error, bool(best.gamma[i] > 0))


def _on_the_line(best: OptimalGamma, i: int, error) -> bool:
    """Whether the gain :func:`_verdict` weighs at batch row ``i`` is :func:`specsim.answers.verdict.on_the_line`, as a
    schedule's parts on the line are (False where none is weighed)."""
    weighed = weighed_at_batch(best, i)
    return weighed is not None and on_the_line(weighed[1] - 1.0, error)


def _recommend(best: OptimalGamma, i: int, error, measured_steps: int | None) -> str:
    """A batch row's recommendation: the gamma picked, turn speculation off, or too close to call
    (:func:`_verdict`), and where its gain is on the line, that (:func:`specsim.answers.verdict.on_the_line_said`)."""
    from specsim.answers.load import _change, past_measured

    gamma = int(best.gamma[i])
    weighed = weighed_at_batch(best, i)
    line = "" if weighed is None else on_the_line_said(weighed[1] - 1.0, error, gamma > 0)
    if _verdict(best, i, error) == VERDICTS[2]:
        said = too_close_said(f"gamma={weighed[0]}", f"{_change(weighed[1] - 1)} speedup", error)
        return said + past_measured(weighed[0], measured_steps) + line
    return (
        f"speculate with gamma={gamma}" + past_measured(gamma, measured_steps) if gamma > 0 else "turn speculation off"
    ) + line


def deployment_capacity(
    dep: Deployment,
    context: int,
    max_context: int | None,
    memory_utilization: float | None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
) -> Capacity:
    """The memory budget of ``dep`` at the tokens each sequence reserves: ``context`` cached tokens, or ``max_context``
    tokens where given (None: ``context``), with the engine's share of device memory at ``memory_utilization`` (a
    fraction), ``max_batched_tokens`` tokens per iteration and ``max_num_seqs`` sequences (each None: the engine's own);
    refuses a target whose weights do not fit, and a context past what the target or the draft was built for
    (``max_position_embeddings``).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> cap = deployment_capacity(dep, 1128, None, None)
    >>> cap.context_tokens, cap.max_batch_without_draft, cap.max_batch_with_draft
    (1128, 411, 316)
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    check_int("context", context, 0, MAX_CONTEXT)  # NaN, a fraction: named before any arithmetic
    if max_context is not None:  # by its own name: the positions' check below names the tokens reserved "context"
        check_int(given_as("max_context"), max_context, 0, MAX_CONTEXT)
    tokens = reserved_context(context, max_context)
    names = given_as("context") + ("" if max_context is None else f" and {given_as('max_context')}")
    dep.require_within_positions(tokens, names)
    cap = capacity(dep, tokens, memory_utilization, max_batched_tokens=max_batched_tokens, max_num_seqs=max_num_seqs)
    require_target_fits(dep, cap)
    return cap


def checked_capacity(dep: Deployment, context: float, cap: Capacity | None) -> Capacity:
    """The memory an answer at ``context`` cached tokens a sequence (a number its caller checked) is checked against:
    ``cap`` (a :func:`deployment_capacity`, as a command sizes it at its --memory-util and limits), or where None,
    :func:`deployment_capacity` at ``context`` with the engine's own share and limits, which refuses a target whose
    weights do not fit and a context past the positions.  A ``cap`` reserving fewer tokens than ``context`` is refused:
    its fits are of the tokens it reserved (at least the context; --max-context more).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> checked_capacity(dep, 1128, None)
    Traceback (most recent call last):
    ...
    ValueError: llama-3.1-70b in bf16 (141.1 GB of weights per GPU) does not fit on one h100-sxm (77.0 GB usable per GPU): target_options['tp'] 2 fits
    """
    if cap is None:
        return deployment_capacity(dep, int(np.ceil(context)), None, None)
    if cap.context_tokens < context:
        raise ValueError(
            f"the capacity given reserves {cap.context_tokens:,} tokens a sequence, fewer than the context asked at, "
            f"{context:,}: size it at the answer's (deployment_capacity(dep, context, ...))"
        )
    return cap


def scheduled_batches(cap: Capacity, max_num_seqs: int) -> int:
    """The largest decode batch a schedule runs to: the speculating engine's ``max_num_seqs``, or fewer where fewer
    sequences fit in memory with the draft (``cap``, :func:`deployment_capacity` at the requests' context): what
    ``schedule`` writes up to, and ``watch`` too, so that the command a watch names writes what the watch wrote."""
    fits = int(cap.max_batch_with_draft)
    return fits if 1 <= fits < max_num_seqs else int(max_num_seqs)


def hardware_record(hw) -> dict:
    """hardware --json: a profile's own keys (:func:`specsim.describe.hardware.profile_to_mapping`) with what the table
    and ``hardware show`` derive from them: the ridge, at the efficiencies and at the datasheet peaks, and where the
    efficiencies come from."""
    from specsim.describe.hardware import profile_to_mapping

    return {
        **profile_to_mapping(hw),
        "ridge_flop_per_byte": hw.ridge_flop_per_byte,
        "datasheet_ridge_flop_per_byte": hw.peak_ridge_flop_per_byte,
        "efficiencies_from": "calibrated" if hw.calibration else "datasheet + article preset",
    }


def capacity_at(
    dep: Deployment,
    context: int,
    memory_utilization: float | None = None,
    gamma: int | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
) -> Capacity:
    """The memory budget :func:`capacity_record` describes (its arguments), alone: what ``capacity``'s table prints."""
    dep.require_within_positions(context, given_as("context"))
    if gamma is not None:
        check_int("gamma", gamma, 0, MAX_GAMMA)  # sizes a hybrid target's scratch: -2 was taken as the default
    return capacity(  # one token at least: a sequence of context 0 holds the one it decodes (reserved_context)
        dep,
        reserved_context(context, None),
        memory_utilization,
        gamma,
        max_batched_tokens=max_batched_tokens,
        max_num_seqs=max_num_seqs,
    )


def capacity_record(
    dep: Deployment,
    context: int,
    memory_utilization: float | None = None,
    gamma: int | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
) -> dict:
    """capacity: the memory budget of ``dep`` at ``context`` tokens per sequence (:func:`specsim.serving.capacity.capacity`, a
    hybrid target's scratch sized for ``gamma`` draft tokens) with the deployment's names and the smallest tensor
    parallelism that fits (:func:`specsim.serving.capacity.smallest_fitting_tp`); ``context`` in tokens (refused past
    the target's or the draft's positions), ``memory_utilization`` the engine's share of device memory (None: the
    engine's own; ``max_batched_tokens`` and ``max_num_seqs`` the engine's limits its start-up is sized by, None: its
    own).  At TP 2 a 70B target's weights and vLLM 0.33's start-up at its 0.92 share leave each H100 less than one
    8,192-token sequence's cache beside the draft's weights; 0.34, whose cache takes the whole device less its
    start-up and a margin, holds one:

    >>> record = capacity_record(Deployment.build("h100-sxm", "llama-3.3-70b", "llama-3.2-1b", engine="vllm@0.33.0"), 8192)
    >>> record["target_fits"], record["smallest_fitting_tp"]
    (False, 4)
    >>> capacity_record(Deployment.build("h100-sxm", "llama-3.3-70b", "llama-3.2-1b", engine="vllm@0.34.0"), 8192)[
    ...     "smallest_fitting_tp"
    ... ]
    2
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.serving.capacity import fitting_tp_for
    from specsim.serving.steady import engine_limits

    cap = capacity_at(dep, context, memory_utilization, gamma, max_batched_tokens, max_num_seqs)
    # the limits the engine runs with, as the load answers name them (max_num_seqs and max_batched_tokens: those given)
    limits, where = engine_limits(dep.engine, dep.hardware, False, max_num_seqs, max_batched_tokens)
    return {
        "hardware": dep.hardware.name,
        "target": dep.target.name,
        "draft": dep.drafter.name,
        **cap.to_dict(),
        "engine_limits": limits.label + (f" ({where})" if where else ""),
        "context_basis": context_basis(context),
        "smallest_fitting_tp": fitting_tp_for(dep, cap),
        "memory_counted": memory_counted(dep),
        "notes": dep.memory_notes(),
    }


def memory_counted(dep: Deployment) -> list[str]:
    """How the weights and the KV cache per token of the target and the draft are counted (``capacity -v``; the JSON's
    ``memory_counted``): :meth:`specsim.describe.shapes.ModelShape.memory_said` of each."""
    return [line for m in (dep.target, dep.draft) if m is not None for line in m.memory_said()]


# -- speedup and steptime ---------------------------------------------------------------------
def closed_form_answer(alpha: float, gamma: int, cost_ratio: float) -> dict:
    """speedup --cost-ratio: the closed form E / (gamma c + 1) of the reference article, at per-token acceptance rate
    ``alpha`` (in [0, 1]), ``gamma`` draft tokens a round and ``cost_ratio`` c, a draft step's time over a target
    step's (dimensionless).

    >>> closed_form_answer(0.8, 4, 0.05)
    {'alpha': 0.8, 'gamma': 4, 'cost_ratio': 0.05, 'tokens_per_round': 3.3616, 'speedup': 2.8013333333333335}
    """
    alpha = check_real("alpha", alpha, 0.0, 1.0)
    gamma = check_int("gamma", gamma, 0, MAX_GAMMA)
    cost_ratio = check_real("cost_ratio", cost_ratio, 0.0, float("inf"))  # any finite ratio, as --cost-ratio
    return {
        "alpha": alpha,
        "gamma": gamma,
        "cost_ratio": cost_ratio,
        "tokens_per_round": float(tokens_per_round(alpha, gamma)),
        "speedup": float(speedup_from_cost_ratio(alpha, gamma, cost_ratio)),
    }


def _round_parts(times, i: int, off: bool, shape: tuple) -> dict:
    """Row ``i``'s step times from ``times`` (a :class:`RoundOutcome` over batches of ``shape``), as optimal-gamma's and
    speedup's rows print them: ``off`` (gamma 0, plain decoding) gives the decode step the row's speedup stands on
    (t_V = t_T, no host or graph-less time, the round = :attr:`RoundOutcome.time_s`), not the round gamma 0 would run."""
    verify = times.target if off else times.verify
    return {
        "t_target_s": float(times.target.total_s[i]),
        "t_draft_s": float(times.draft.total_s[i]),
        "t_verify_s": float(verify.total_s[i]),
        "t_host_s": 0.0 if off else float(np.broadcast_to(times.host_s, shape)[i]),
        "t_graphless_s": 0.0 if off else float(np.broadcast_to(times.round.graphless_s, shape)[i]),
        "t_round_s": float(np.broadcast_to(times.time_s, shape)[i]),
        "cost_ratio": float(times.cost_ratio[i]),
    }


def speedup_rows(
    dep: Deployment,
    acceptance: object,
    label: str | None,
    gamma: int,
    batches: list | None = None,
    context: int | None = None,
    *,
    cap: Capacity | None = None,
) -> tuple[list[dict], int]:
    """speedup: one (acceptance, gamma) per batch size, with the three step times; and the context used.

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`, ``label`` what the rows call it; ``gamma`` draft tokens a
    round; ``batches`` decode batch sizes in sequences (None: :data:`~specsim.core.defaults.DEFAULT_BATCHES`);
    ``context`` cached tokens per sequence (None: :data:`~specsim.core.defaults.DEFAULT_CONTEXT_TOKENS`); ``cap`` the
    memory the deployment is checked against (:func:`checked_capacity`; None: the engine's own at ``context``, which
    refuses a target whose weights do not fit, as ``speedup`` does).  Times are in seconds (``t_round_s``, ...).

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> rows, context = speedup_rows(dep, 0.8, "alpha 0.8", 3, [1, 64], 1128)
    >>> context, [(r["batch"], round(r["speedup"], 3)) for r in rows]
    (1128, [(1, 1.737), (64, 1.717)])
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.answers.acceptance import checked_label

    label = checked_label(acceptance, label)  # a row shows it as the acceptance it was computed at
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    batches = whole_numbers("batch", DEFAULT_BATCHES if batches is None else batches, 1, MAX_BATCH, "batches")
    context = ARTICLE_CONTEXT_TOKENS if context is None else check_int("context", context, 0, MAX_CONTEXT)
    gamma = check_int("gamma", gamma, 0, MAX_GAMMA)
    checked_capacity(dep, context, cap)  # a 70B target on one H100 was answered 2.79x at gamma 3
    dep.require_drafts_within_positions(context, gamma)
    b = np.array(batches, dtype=float)
    times = dep.outcome(acceptance, gamma, b, context)
    s = np.broadcast_to(times.speedup, b.shape)
    tokens = np.broadcast_to(
        times.tokens, b.shape
    )  # per batch where the verified prefix varies with it (DSpark, suffix)
    rates = acceptance_rates(acceptance)
    return [
        {
            "batch": batch,
            "alpha": rates["alpha"],  # None where the rates are per position
            "acceptance": label,
            "acceptance_rates": rates,
            "gamma": gamma,
            "tokens_per_round": float(tokens[i]),
            "speedup": float(s[i]),
            "context_tokens": int(context),
            "context_basis": context_basis(context),
            **_round_parts(times, i, gamma == 0, b.shape),
            "timing_source": row_source(dep, times, i),
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
        }
        for i, batch in enumerate(batches)
    ], context


def steptime_rows(
    dep: Deployment, batches: list, tokens_per_seq: object, context: object
) -> tuple[list[dict], list[str]]:
    """steptime: one engine iteration of ``dep``'s target per (tokens per sequence, context, batch size), with its
    roofline parts, and the sources of its numbers; ``batches`` decode batch sizes in sequences, ``tokens_per_seq`` the
    tokens each sequence runs in the pass (1 for a decode step, gamma + 1 for a verification) and ``context`` its
    cached tokens, each a number or a list of them.  Times are in seconds.  A target whose weights do not fit, or a
    context past its positions, is refused (:func:`deployment_capacity` at the longest context), as ``steptime`` refuses
    them.

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> rows, sources = steptime_rows(dep, [1, 64], 1, 1128)
    >>> [(r["batch"], round(r["step_time_s"] * 1e3, 3)) for r in rows]
    [(1, 6.156), (64, 9.635)]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    model = dep.target
    contexts = whole_numbers("context", context, 0, MAX_CONTEXT)
    # a 70B target on one H100 (141 GB of weights) was timed from the library, where the command refuses it
    deployment_capacity(dep, max(contexts), None, None)
    batches = whole_numbers("batch", batches, 1, MAX_BATCH, "batches")
    qs = whole_numbers("tokens_per_seq", tokens_per_seq, 1, MAX_GAMMA + 1)
    provenance = [dep.source.describe(), dep.engine.describe()] + model_assumptions(dep.hardware, [model])
    b = np.array(batches, dtype=float)
    rows = []
    for q in qs:
        for L in contexts:
            t = dep.pass_time(model, b, q, L)
            fallback = np.zeros(b.shape, bool) if t.fallback is None else np.broadcast_to(t.fallback, b.shape)
            comm = np.broadcast_to(np.asarray(t.comm_s, float), b.shape)
            overhead = np.broadcast_to(
                np.asarray(t.overhead_s, float), b.shape
            )  # per batch where the engine adds per-sequence time
            rows += [
                {
                    "batch": batch,
                    "tokens_per_seq": q,
                    "context": L,
                    "step_time_s": float(t.total_s[i]),
                    "compute_s": float(t.compute_s[i]),
                    "memory_s": float(t.memory_s[i]),
                    "overhead_s": float(overhead[i]),
                    "comm_s": float(comm[i]),
                    "bound": str(t.bound[i]),
                    "flop": float(t.flop[i]),
                    "bytes": float(t.bytes[i]),
                    # the weight matmuls' ridge at their precision (FP8 runs faster): bound is flop / bytes against it
                    "ridge_flop_per_byte": float(dep.hardware.ridge_for(model.weight_dtype)),
                    "timing_source": dep.source.name + (_OUTSIDE if fallback[i] else ""),
                    "provenance": provenance,
                    "deployment": dep.identity(),
                }
                for i, batch in enumerate(batches)
            ]
    return rows, provenance


# -- measure-loop --------------------------------------------------------------------------------
def loop_rows(
    results: list[dict], target, draft, alpha: float, gamma: int, context: int, tokens: int, profile=None
) -> list[dict]:
    """measure-loop: each measured loop with the formula's speedup from its own pass times and, given a profile,
    the model's prediction at the loop's mean context (the prompt plus half the generated tokens)."""
    from specsim.core.workloads import mean_context_tokens
    from specsim.speculation.search import speedup_from_times

    out = []
    for r in results:
        r = dict(r)
        r["formula_speedup_from_measured_passes"] = float(
            speedup_from_times(alpha, gamma, r["t_target_s"], r["t_draft_s"], r["t_verify_s"])
        )
        r["expected_tokens_per_pass"] = float(tokens_per_round(alpha, gamma))
        if profile is not None:
            dep = Deployment(profile, target, draft, RooflineSource(profile), ENGINES["none"])
            r["predicted_speedup"] = float(
                dep.outcome(alpha, gamma, r["batch"], mean_context_tokens(context, tokens)).speedup
            )
            r["profile"] = profile.name
            r["prediction_source"] = f"roofline: profile {profile.name}, no engine time (the harness times bare passes)"
        out.append(r)
    return out
