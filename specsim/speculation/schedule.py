"""Batch-size-dependent speculation schedules, in the forms serving engines accept.

The optimal gamma falls with the batch size (verification turns compute-bound)
and reaches 0 where speculation stops paying.  Engines now take such a
schedule but ship no defaults, because the right values depend on hardware,
models and acceptance rate.  :func:`gamma_schedule` computes the optimal gamma
for every batch size 1..max_batch, applies a minimum gain (speculate only
where the predicted speedup is at least ``min_gain``, so that a schedule does
not switch on for a 1% model-predicted gain that noise can erase) and merges
equal neighbours into ranges.

Engine formats (checked against each engine's documentation and source):

vLLM (docs/features/speculative_decoding/dynamic_speculative_decoding.md,
https://docs.vllm.ai/en/latest/features/speculative_decoding/dynamic_speculative_decoding/,
vLLM 0.24): ``speculative_config["num_speculative_tokens_per_batch_size"]`` is
a list of ``[start_bs, end_bs, k]`` with inclusive ranges; ``k = 0`` turns
speculation off in that range; ``num_speculative_tokens`` is the largest k.  Its validator takes any k >= 0 in any
order, so a schedule for it may start off and rise (:func:`rising_gammas`; the others never rise:
:func:`monotone_gammas`).  At k = 0 vLLM still runs the drafter's first pass (:data:`specsim.engines.vllm.
OFF_RUNS_DRAFT_PASS`) and launches it on the host (:data:`specsim.engines.vllm.OFF_HOST_WORK`), which off
here (speedup 1) does not charge.

TensorRT-LLM (PR NVIDIA/TensorRT-LLM#10860; ``get_draft_len_for_batch_size``
in tensorrt_llm/_torch/speculative/utils.py and its unit tests):
``speculative_config.draft_len_schedule`` maps an inclusive *upper* batch
threshold to a draft length, ``{4: 4, 8: 2, 32: 1}`` meaning 1-4 -> 4,
5-8 -> 2, 9-32 -> 1; batch sizes above the largest key get 0, but
draft-target (two-model) decoding floors a runtime draft length of 0 to 1, so
speculation is switched off above a batch size with ``max_concurrency``.

Per drafter (issue 12):

* vLLM ``speculative_config["method"]`` is ``draft_model``, ``eagle``, ``eagle3``, ``mtp`` or ``ngram``
  (vllm/config/speculative.py, ``SpeculativeMethod``; docs/features/speculative_decoding/); ``model`` names
  the draft or head checkpoint (none for ``mtp``, which reads the target's own layers, or ``ngram``, which
  takes ``prompt_lookup_min`` / ``prompt_lookup_max``).  vLLM drafts chains here: a tree schedule is refused.
* SGLang takes launch flags, one static configuration (docs.sglang.io, "Speculative Decoding"):
  ``--speculative-algorithm`` STANDALONE (draft model), EAGLE, EAGLE3 or NGRAM (MTP checkpoints such as
  DeepSeek-V3 run as EAGLE over their NextN layers), ``--speculative-draft-model-path``,
  ``--speculative-num-steps`` (depth), ``--speculative-eagle-topk`` (top-k, 1 for a chain) and
  ``--speculative-num-draft-tokens`` (tokens verified per sequence).  :func:`to_sglang` prints the
  configuration for one batch size and, as comments, where another is better.
* TensorRT-LLM ``speculative_config.decoding_type`` is ``Draft_Target``, ``Eagle3`` (with
  ``speculative_model_dir``), ``MTP`` (``num_nextn_predict_layers``) or ``NGram``
  (``max_matching_ngram_size``) with ``max_draft_len`` (nvidia.github.io/TensorRT-LLM, "Speculative
  Decoding"); only draft-target decoding takes a ``draft_len_schedule``, and the documentation says the
  others cannot switch speculation off dynamically, so they get the batch-1 draft length.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX
from specsim.speculation.deployment import Deployment, speedup_of
from specsim.speculation.search import optimal_gamma, optimal_tree, speedup

__all__ = [
    "BATCH_WEIGHTS",
    "DEFAULT_MAX_BATCH",
    "ScheduleRange",
    "batch_grid",
    "capped_gammas",
    "context_table",
    "gamma_schedule",
    "load_gammas",
    "load_schedule",
    "merge_ranges",
    "monotone_gammas",
    "rising_gammas",
    "zero_k_speedup",
    "static_cost",
    "tree_schedule",
]

#: vLLM's default max_num_seqs.
DEFAULT_MAX_BATCH = 256


class _RangeText:
    """How a range of batch sizes prints: its batch sizes and its predicted speedups, each one figure where its ends
    agree (as printed: ``1.586``, not ``1.586-1.586``).

    >>> ScheduleRange(12, 23, 2, 1.0312, 1.0309).speedups, ScheduleRange(12, 23, 2, 1.0, 1.2).batches
    ('1.031', '12-23')
    >>> ScheduleRange(1, 9, 3, float("nan"), float("nan")).speedups  # an arm past capacity at every load of it
    'n/a'
    """

    @property
    def batches(self) -> str:
        return str(self.start_batch) if self.start_batch == self.end_batch else f"{self.start_batch}-{self.end_batch}"

    @property
    def speedups(self) -> str:
        low, high = ("n/a" if math.isnan(x) else f"{x:.3f}" for x in (self.min_speedup, self.max_speedup))
        return low if low == high else f"{low}-{high}"


@dataclass(frozen=True)
class ScheduleRange(_RangeText):
    """Batch sizes start..end (inclusive) that share one gamma."""

    start_batch: int
    end_batch: int
    gamma: int
    min_speedup: float
    max_speedup: float
    #: How far below the best gamma of its batch sizes the range's speedup falls at most (0: the best everywhere).
    shortfall: float = 0.0
    #: At loads (:func:`load_schedule`): the smallest of its loads' gain over plain decoding by what the load answer
    #: maximises and judges (:meth:`~specsim.answers.load.LoadAnswer.objective`), which its verdict weighs as
    #: optimal-gamma at those loads does; None per batch, where that is :attr:`min_speedup`.
    min_objective: float | None = None
    #: At loads: the largest of its loads' gains by that objective (None per batch: :attr:`max_speedup`).
    max_objective: float | None = None


#: A schedule counts a shortfall within this fraction of a batch's best speedup as none: near the optimum the curve
#: is flat (gamma 3 and 4 differ by under 0.3% at batch 10-64 on an H100), and an exact argmax over measured
#: kernel times switches gamma back and forth on differences smaller than the data's own 1-2% noise.
DEFAULT_SCHEDULE_RTOL = 0.01
#: Speculate where the predicted speedup is at least this (1: any predicted gain).
DEFAULT_MIN_GAIN = 1.0
#: How a schedule weighs the batch sizes (per batch) or the loads (at loads) whose shortfalls below their own best it
#: sums to choose among the schedules an engine takes (:func:`monotone_gammas`, :func:`rising_gammas`, the choice
#: between a written schedule and none in :func:`gamma_schedule`; :func:`load_gammas`): each alike.  It moves which
#: schedule is written, and no source gives a better one: nothing tells how often an engine runs at each batch size,
#: and at a load the serving model gives one decode batch, the steady state's time-weighted mean
#: (:func:`specsim.serving.steady.steady_state`), not a distribution of batch sizes to weigh by.  Every schedule that
#: sums says so (:meth:`specsim.answers.schedule.ScheduleAnswer.notes`).
BATCH_WEIGHTS = "alike"


def merge_ranges(ranges: list, labels: list | None = None) -> list:
    """Neighbouring ranges with the same gamma (a tree range's tree) and the same label (``labels``, one per range,
    where given) joined into one: its batch sizes, its speedups' spread, its largest shortfall and its smallest gain at
    loads.  The ranges an engine is configured with change only with the gamma; a schedule judged per range (``judge``
    of :func:`gamma_schedule`, :func:`load_schedule`, :func:`tree_schedule`) is split also where the verdict changes,
    and merges back into them.

    >>> judged = [ScheduleRange(1, 9, 2, 1.2, 1.3), ScheduleRange(10, 40, 2, 1.02, 1.19, 0.01)]
    >>> judged.append(ScheduleRange(41, 64, 0, 1.0, 1.0))
    >>> [(r.batches, r.gamma, r.speedups, r.shortfall) for r in merge_ranges(judged)]
    [('1-40', 2, '1.020-1.300', 0.01), ('41-64', 0, '1.000', 0.0)]
    >>> [r.batches for r in merge_ranges(judged, ["speculate", "too close to call", None])]
    ['1-9', '10-40', '41-64']
    """
    out: list = []
    keys: list = []
    for r, label in zip(ranges, [None] * len(ranges) if labels is None else labels):
        key = (getattr(r, "gamma", None), getattr(r, "tree", None), label)
        if not out or keys[-1] != key:
            out.append(r)
            keys.append(key)
            continue
        last = out[-1]
        gains = [g for g in (last.min_objective, r.min_objective) if g is not None]
        tops = [g for g in (last.max_objective, r.max_objective) if g is not None]
        out[-1] = dataclasses.replace(
            last,
            end_batch=r.end_batch,
            min_speedup=float(np.fmin(last.min_speedup, r.min_speedup)),  # nan (no speedup known) left out
            max_speedup=float(np.fmax(last.max_speedup, r.max_speedup)),
            shortfall=max(last.shortfall, r.shortfall),
            min_objective=min(gains) if gains else None,
            max_objective=max(tops) if tops else None,
        )
    return out


def _labels(judge, gains: np.ndarray) -> list:
    """``judge``'s label for each gain (a speedup, or a load's gain by its objective), or one label for all where no
    judge is given: where a judged schedule splits a gamma's range (its verdict changes there)."""
    return [None] * len(gains) if judge is None else [judge(float(g)) for g in gains]


def load_schedule(
    answer,
    max_batch: int,
    min_gain: float = DEFAULT_MIN_GAIN,
    rtol: float = DEFAULT_SCHEDULE_RTOL,
    judge=None,
) -> list[ScheduleRange]:
    """The schedule of the loads a :class:`~specsim.answers.load.LoadAnswer` solved, keyed, as engines key a schedule,
    by the decode batch each load runs at (its best gamma's); the batch sizes between two loads take the nearer load's
    gamma, and the last load's runs to ``max_batch``, where every range ends (a load past it informs none).

    The gammas follow :func:`gamma_schedule`'s rule: of the schedules that never rise along the loads (by that decode
    batch), the one whose loads fall least below their own best (by what the load answer maximises:
    :meth:`~specsim.answers.load.LoadAnswer.objective`), a shortfall within ``rtol`` counting as none; speculation off
    where that gamma's objective is below ``min_gain`` times plain decoding's, and off from there on (gated on the
    objective, not the TPOT speedup, so that a load's schedule speculates where optimal-gamma at that load does).  Each load's own best stays in the
    load answer's table; a range's ``shortfall`` is the most its loads fall below it.  Without the rule, a load held
    below its users by the KV cache (16,000-token prompts at 64 users on an H100 decode 19 sequences at once, against
    16 at 16 users) took a larger gamma than a lighter load beside it, and the schedule rose with the batch.

    ``judge`` (a function of a load's gain by that objective, over plain decoding's, to its verdict) splits a gamma's
    range where the verdict of its loads changes, so that each range's verdict holds for every load in it; without
    it the ranges change only with the gamma (what an engine is configured with; :func:`merge_ranges` of the split
    ones).  It never rises, whatever the engine release takes: at a load, K = 0 inside a
    written schedule is not charged the drafter's pass some releases still run there (:func:`zero_k_speedup`), so a
    schedule that starts off and rises is written per batch only (:func:`gamma_schedule`)."""
    order, row = load_gammas(answer, min_gain, rtol)
    surface = answer.scores()[:, order]  # (a gamma with no room, -inf, is no best to fall short of)
    gammas = np.asarray(answer.state.gamma)[:, 0].astype(int)
    speed = answer.tpot_speedup()[:, order]
    columns = np.arange(len(order))
    gamma = gammas[row]
    # A load that one arm cannot serve (a rate past its capacity) has no TPOT speedup (LoadAnswer.past_capacity): nan,
    # which a range's spread leaves out and prints as n/a.
    behind = np.array([bool(answer.past_capacity(int(r), j)) for r, j in zip(row, order)], dtype=bool)
    sp = np.where(gamma > 0, np.where(behind, np.nan, speed[row, columns]), 1.0)
    short = 1.0 - surface[row, columns] / surface.max(axis=0)
    gained = np.where(gamma > 0, surface[row, columns], 1.0)
    keys = [max(answer.key_batch(j), 1.0) for j in order]
    segments: list[ScheduleRange] = []  # the range of each load
    start = 1
    for k, b in enumerate(keys):
        # Halfway to the next load's decode batch, never past max_batch: a load can run at a decode batch beyond it
        # (--max-batch below the loads, or saturated loads whose plain arm holds more than fits with the draft).
        end = max_batch if k == len(keys) - 1 else min(max_batch, max(start, int((b + keys[k + 1]) / 2)))
        g, s_, f, o = int(gamma[k]), float(sp[k]), float(max(short[k], 0.0)), float(gained[k])
        segments.append(ScheduleRange(start, end, g, s_, s_, f, o, o))
        start = end + 1
        if start > max_batch:
            break
    return merge_ranges(segments, _labels(judge, gained[: len(segments)]))  # where the gamma (or verdict) changes


def load_gammas(
    answer, min_gain: float = DEFAULT_MIN_GAIN, rtol: float = DEFAULT_SCHEDULE_RTOL
) -> tuple[list[int], np.ndarray]:
    """The loads of a :class:`~specsim.answers.load.LoadAnswer` in the order :func:`load_schedule` keys them (by the
    decode batch each runs at) and, for each, the row of the gamma it gives the load (0: speculation off): the rule
    its docstring states.  A load's own best (``answer.best``, optimal-gamma's at it) is the smallest gamma within
    optimal-gamma's --rtol of the most (0 unless given); this one is the schedule's --rtol and never rises."""
    value = answer.scores()  # as optimal-gamma at a load picks: a gamma with no room for a request scores -inf
    order = sorted(range(len(answer.loads)), key=lambda j: (max(answer.key_batch(j), 1.0), j))
    surface = value[:, order]
    if surface.shape[0] == 1:
        return order, np.zeros(len(order), int)
    # Pays by what the load answer weighs (its objective, as optimal-gamma at loads picks and judges): a gamma that
    # serves a closed loop more output per second pays there even where its TPOT is a hair longer (a shorter TTFT).
    # A gamma that falls behind Poisson arrivals scores 0, one with no room -inf: floored to a share above 0 so that the
    # shortfalls (1 - score / best) still compare; neither pays.
    pays = surface[1:] >= min_gain * surface[0]
    return order, monotone_gammas(np.maximum(surface, 1e-12), rtol, pays)


def static_cost(dep: Deployment, acceptance, gamma: int, ranges: list, context: int) -> list[dict]:
    """What running ``gamma`` at every batch costs against the schedule ``ranges`` (an engine release with no per-batch
    control writes one length): for each range whose gamma differs, the batch where the static length falls furthest
    below the range's, with both speedups (a gamma of 0 is plain decoding, speedup 1)."""
    out = []
    for r in ranges:
        if r.gamma == gamma:
            continue
        batches = np.arange(r.start_batch, r.end_batch + 1, dtype=float)

        def speedup(g):
            return np.ones_like(batches) if g == 0 else dep.outcome(acceptance, g, batches, context).speedup

        static, best = speedup(gamma), speedup(r.gamma)
        i = int(np.argmax(best - static))
        out.append({"batch": int(batches[i]), "static": float(static[i]), "gamma": r.gamma, "best": float(best[i])})
    return out


def gamma_schedule(
    dep: Deployment,
    alpha: float,
    max_batch: int = DEFAULT_MAX_BATCH,
    context: int = DEFAULT_CONTEXT_TOKENS,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    min_gain: float = DEFAULT_MIN_GAIN,
    rtol: float = DEFAULT_SCHEDULE_RTOL,
    judge=None,
    rising: str = "",
    capped: str = "",
) -> list[ScheduleRange]:
    """A gamma for every batch size 1..max_batch that an engine can run, merged into ranges (split also where
    ``judge``, a function of a batch's speedup to its verdict, changes: see :func:`merge_ranges`).

    Gamma never rises with batch (engines that tune it per batch size choose fewer steps as the batch grows:
    SGLang's AutoSpec, TensorRT-LLM's draft_len_schedule): of all schedules that never rise, the one whose
    speedups fall least below each batch's best, where a shortfall within ``rtol`` counts as none (then the
    smaller gamma wins: less draft work).  Without that rule the measured kernels' steps (a GEMM dearer once
    b(gamma+1) passes 256) made schedules switch back and forth for 1-3%.  A gamma is taken only where it
    pays (its speedup at least ``min_gain``); speculation off (gamma = 0, speedup 1) is one of the schedule's choices,
    and as gamma never rises it holds for every larger batch: the schedule turns off only where no gamma up to the one
    it ran last pays (:func:`monotone_gammas`).  Each range carries how far below the best of its batches it is
    (``shortfall``).  Where the engine release takes a schedule that rises with the batch (``rising``, the source that
    says so: vLLM's per-batch key), each batch takes its own gamma by the same rtol and gain, off where none pays
    (:func:`rising_gammas`).  Where it takes one that may rise back but never above its batch-1 length and writes no
    off tier (``capped``, the source that says so: TensorRT-LLM's one-model draft_len_schedule), every batch speculates,
    by :func:`capped_gammas`, unless leaving speculation unset falls less below the batches' best.

    >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    >>> [(r.start_batch, r.end_batch, r.gamma) for r in gamma_schedule(dep, 0.6, 256, context=128, rtol=0)]
    [(1, 86, 2), (87, 188, 1), (189, 256, 0)]
    """
    from specsim.core.limits import MAX_BATCH, check_int

    max_batch = check_int("max batch", max_batch, 1, MAX_BATCH)
    if not np.isfinite(min_gain) or min_gain < 1.0:
        raise ValueError(f"min gain must be >= 1 (1 = any predicted gain), got {min_gain!r}")
    batch = np.arange(1, int(max_batch) + 1)
    if not (np.isfinite(rtol) and 0 <= rtol < 0.5):
        raise ValueError(f"rtol must be in [0, 0.5), got {rtol!r}")
    # The exact argmax per batch bounds gamma (an Acceptance stops it at its last measured position).
    top = optimal_gamma(dep, alpha, batch, context, gamma_max, 0.0).gamma_max
    if top == 0:  # gamma_max 0: speculation off at every batch, as optimal_gamma answers
        return [ScheduleRange(1, int(max_batch), 0, 1.0, 1.0, 0.0)]
    grid = np.arange(top + 1)
    surface = np.broadcast_to(speedup(dep, alpha, grid[:, None], batch[None, :], context), (grid.size, batch.size))
    # Off where no gamma the schedule can still take pays, and off from there on: at large batches the gain hovers
    # about 1 as the kernels' steps cross it, and a schedule that switched back on would rise with batch.
    if capped:
        gamma = capped_gammas(surface, rtol)
        gamma, values = _or_unset(gamma, surface[gamma, np.arange(batch.size)], surface)
    elif rising:
        gamma, values = _configured_or_unset(dep, alpha, batch, context, surface, rtol, min_gain)
    else:
        gamma = monotone_gammas(surface, rtol, surface[1:] >= min_gain)
        values = np.where(gamma > 0, surface[gamma, np.arange(batch.size)], 1.0)
    short = 1.0 - values / surface.max(axis=0)  # row 0 is gamma = 0, speedup 1: the best is at least 1
    # Split where gamma changes (or, judged, the verdict); each run becomes one range.
    labels = np.asarray(_labels(judge, values), dtype=object)
    starts = np.flatnonzero(np.r_[True, (gamma[1:] != gamma[:-1]) | (labels[1:] != labels[:-1])])
    ends = np.r_[starts[1:] - 1, len(batch) - 1]
    return [
        ScheduleRange(
            int(batch[s]),
            int(batch[e]),
            int(gamma[s]),
            float(values[s : e + 1].min()),
            float(values[s : e + 1].max()),
            float(short[s : e + 1].max()),
        )
        for s, e in zip(starts, ends)
    ]


def zero_k_speedup(dep: Deployment, alpha: float, batch: np.ndarray, context: int) -> np.ndarray:
    """Per batch, the speedup of a batch a written per-batch schedule gives K = 0: the target's decode step, the
    drafter's one pass over the sequence's new token, which vLLM runs at K = 0 to keep the drafter's KV cache in sync
    (:data:`specsim.engines.vllm.OFF_RUNS_DRAFT_PASS`), taken as one draft step (t_D, with what it adds where the
    engine runs it without a CUDA graph), and the engine's host work for that pass: one launched draft step that
    proposes no token, the preset's per-step host term alone, hidden as the preset hides a round's
    (:meth:`~specsim.speculation.deployment.Deployment.zero_k_round_s`; :data:`specsim.engines.vllm.OFF_HOST_WORK`:
    what else such a batch does on the host, read).  A drafter with no network (n-gram) launches none: 1.  ``alpha`` is
    not used: K = 0 yields one token whatever the acceptance."""
    t_target = np.asarray(dep.decode(batch, context).total_s, dtype=float)
    return speedup_of(1.0, t_target, dep.zero_k_round_s(batch, context))  # one token a round


def _configured_or_unset(dep, alpha, batch, context, surface, rtol, min_gain) -> tuple[np.ndarray, np.ndarray]:
    """(gammas, speedups) per batch of a schedule for an engine release whose per-batch key lets it rise and whose K =
    0 inside it still runs the drafter's pass (vLLM from 0.24.0: :func:`zero_k_speedup`): the cheapest schedule that
    rises to one peak at most (:func:`rising_gammas`) with K = 0 charged that pass, unless leaving speculation unset
    (plain decoding, speedup 1 at every batch) falls less below each batch's best in all, then that."""
    configured = np.array(surface, dtype=float)
    configured[0] = zero_k_speedup(dep, alpha, batch, context)
    # Written, K = 0 is no longer free: a gamma that loses less than it (a draft step's worth) is taken too.
    gamma = rising_gammas(configured, rtol, (surface[1:] >= min_gain) | (surface[1:] > configured[0]))
    return _or_unset(gamma, configured[gamma, np.arange(batch.size)], surface)


def _or_unset(gamma: np.ndarray, values: np.ndarray, surface: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gammas, speedups) of a written schedule that speculates, or costs, at every batch, unless leaving speculation
    unset (plain decoding, speedup 1 at every batch) falls less below each batch's best, summed alike
    (:data:`BATCH_WEIGHTS`): then that."""
    best = surface.max(axis=0)  # of plain decoding (row 0, unset: 1) and every gamma
    if np.sum(1.0 - values / best) >= np.sum(1.0 - 1.0 / best):
        return np.zeros(gamma.size, dtype=int), np.ones(gamma.size)
    return gamma, values


def capped_gammas(surface: np.ndarray, rtol: float) -> np.ndarray:
    """Per column of ``surface`` (speedup over gamma = 0, 1, ... by rows, batch by columns), the gammas >= 1 of the
    schedule whose first column takes the largest gamma it holds and whose later columns, never above it, rise to one
    peak at most and then never again (:func:`rising_gammas` on them), falling least below each column's best by
    :func:`monotone_gammas`'s cost (a shortfall within ``rtol`` counting as none, summed alike); of equally cheap ones,
    the smaller first gamma.  For TensorRT-LLM's one-model ``draft_len_schedule``, whose validator asks the smallest key's
    length to be max_draft_len and every other at most that, nothing of their order, and whose 0-length tier specsim
    does not write (:data:`specsim.engines.trtllm.CAPPED_RISE`): a MoE target that loses at small batches and gains at
    larger ones keeps its batch-1 length where it pays later, and falls to 1 between, where :func:`monotone_gammas`
    stays at 1 once it gets there.

    >>> surface = np.array([[1.0] * 5, [0.95, 0.97, 1.10, 1.20, 1.15], [0.90, 0.93, 1.25, 1.30, 1.10]])
    >>> capped_gammas(surface, 0.0).tolist()  # 2 at batch 1 (to run 2 later), 1 at batch 2, back up to 2 where it pays
    [2, 1, 2, 2, 1]
    >>> monotone_gammas(surface, 0.0).tolist()  # never rising: holds 2 at batch 2, 4% below gamma 1 there
    [2, 2, 2, 2, 1]
    """
    cost, _ = _shortfall_costs(surface, rtol, None)  # rows: gamma 1, 2, ...
    columns = np.arange(surface.shape[1])
    picks = []
    for top in range(1, surface.shape[0]):
        later = rising_gammas(surface[: top + 1, 1:], rtol) if surface.shape[1] > 1 else np.array([], dtype=int)
        gamma = np.r_[top, later].astype(int)
        picks.append((float(cost[gamma - 1, columns].sum()), top, gamma))
    return min(picks, key=lambda p: (p[0], p[1]))[2]


def _shortfall_costs(surface: np.ndarray, rtol: float, pays: np.ndarray | None) -> tuple[np.ndarray, int]:
    """(the cost of each row of ``surface`` at each column, the gamma of its first row): how far each falls below its
    column's best, a shortfall within ``rtol`` counting as none; inf where a speculating gamma does not pay (``pays``),
    and speculation off (row 0, present only with ``pays``) at row 0's own shortfall, without ``rtol``.  The one cost
    that :func:`monotone_gammas` and :func:`rising_gammas` minimise."""
    if pays is None:
        rows, first = surface[1:], 1
        allowed = np.ones(rows.shape, dtype=bool)
    else:
        rows, first = surface, 0
        allowed = np.vstack([np.ones((1, surface.shape[1]), dtype=bool), np.asarray(pays, dtype=bool)])
    best = np.where(allowed, rows, -np.inf).max(axis=0)
    cost = np.where(allowed, np.maximum(1.0 - rows / best - rtol, 0.0), np.inf)
    if pays is not None:  # off against on is --min-gain's call, not --rtol's: a gain that pays is never rounded to none
        cost[0] = 1.0 - rows[0] / best
    return cost, first


def rising_gammas(surface: np.ndarray, rtol: float, pays: np.ndarray | None = None) -> np.ndarray:
    """Per column of ``surface`` (speedup over gamma = 0, 1, ... by rows, batch by columns), the gammas of the schedule
    that may rise along the columns (from speculation off, 0, where ``pays`` allows it) and then never rises again,
    falling least below each column's best by :func:`monotone_gammas`'s cost (a shortfall within ``rtol`` counting as
    none, only gammas that pay); of equally cheap schedules, one that never rises where there is one (rising, it holds
    a gamma rather than climb to it; falling, the smaller gamma).  For an engine whose schedule may rise with the batch (vLLM's num_speculative_tokens_per_batch_size takes
    any K >= 0 in any order: :data:`specsim.engines.vllm.RISING_WHERE`): a MoE target whose verification reads more
    experts than its decode step at small batches is off there and on where speculation pays, where
    :func:`monotone_gammas` stays off from the first batch where none pays.  It rises once at most (up, then down): each
    batch's own best over measured kernel times flips gamma 4, 3, 4, 3 on differences of 1-3% (the GEMMs' steps at
    m = b(gamma+1) = 256), which that rule, as the never-rising one, keeps out of a schedule.

    >>> surface = np.array([[1.0, 1.0, 1.0, 1.0], [0.9, 0.98, 1.15, 1.20], [0.8, 0.95, 1.12, 1.30]])
    >>> rising_gammas(surface, 0.02, surface[1:] >= 1.0).tolist()  # off, off, then gamma 1, then 2
    [0, 0, 1, 2]
    >>> monotone_gammas(surface, 0.02, surface[1:] >= 1.0).tolist()  # never rising: off from batch 1 on
    [0, 0, 0, 0]
    >>> surface = np.array([[1.0] * 4, [1.5, 1.5, 1.40, 1.30], [1.6, 1.45, 1.45, 1.28]])
    >>> rising_gammas(surface, 0.0).tolist(), monotone_gammas(surface, 0.0).tolist()  # no cheaper one rises
    ([2, 2, 2, 1], [2, 2, 2, 1])
    """
    cost, first = _shortfall_costs(surface, rtol, pays)
    n_gamma, n_batch = cost.shape
    idx = np.arange(n_gamma)
    up, down = cost[:, 0].copy(), cost[:, 0].copy()  # cheapest paths into each gamma, still rising / past the top
    back_up = np.zeros((n_gamma, n_batch), dtype=int)  # the predecessor's gamma (it was rising too)
    back_down = np.zeros((n_gamma, n_batch), dtype=int)  # the predecessor's gamma, + n_gamma where it was rising
    for j in range(1, n_batch):
        # Rising into g: from some g' <= g, staying where equal (a running minimum, the last of equal ones).
        arg_up = np.maximum.accumulate(np.where(up <= np.minimum.accumulate(up), idx, 0))
        # Past the top into g: from some g' >= g of either phase, a falling one first on a tie, then the smaller g'.
        arg_d = np.empty(n_gamma, dtype=int)
        arg_u = np.empty(n_gamma, dtype=int)
        arg_d[-1] = arg_u[-1] = n_gamma - 1
        for g in range(n_gamma - 2, -1, -1):
            arg_d[g] = g if down[g] <= down[arg_d[g + 1]] else arg_d[g + 1]
            arg_u[g] = g if up[g] <= up[arg_u[g + 1]] else arg_u[g + 1]
        from_down = down[arg_d] <= up[arg_u]
        back_up[:, j] = arg_up
        back_down[:, j] = np.where(from_down, arg_d, arg_u + n_gamma)
        up, down = cost[:, j] + up[arg_up], cost[:, j] + np.where(from_down, down[arg_d], up[arg_u])
    out = np.empty(n_batch, dtype=int)
    rising = bool(up.min() < down.min())
    out[-1] = int(np.argmin(up if rising else down))
    for j in range(n_batch - 1, 0, -1):
        if rising:
            out[j - 1] = back_up[out[j], j]
        else:
            prev = back_down[out[j], j]
            rising, out[j - 1] = prev >= n_gamma, prev % n_gamma
    return out + first


def monotone_gammas(surface: np.ndarray, rtol: float, pays: np.ndarray | None = None) -> np.ndarray:
    """Per column of ``surface`` (speedup over gamma = 0, 1, ... by rows, batch by columns), the gammas >= 1 of the
    schedule that never rises along the columns and falls least below each column's best, a shortfall within
    ``rtol`` counting as none; ties go to the smaller gamma.

    With ``pays`` (True where a speculating gamma of ``surface`` pays enough to be run; row 0, speculation off, always
    may be), the schedule may also turn speculation off (gamma 0, which then holds for every later column: it never
    rises) and takes only gammas that pay: of those schedules, the one that falls least below each column's best,
    speculation off counted at row 0's value without ``rtol`` (whether to speculate is ``pays``'s call). Choosing the speculating gammas first and cutting where the chosen one
    stops paying could hold a large gamma for later columns that no longer pays at the next one, and turn speculation
    off where a smaller gamma pays for many more.

    >>> surface = np.array([[1.0, 1.0, 1.0, 1.0], [1.5, 1.5, 1.40, 1.30], [1.6, 1.52, 1.45, 1.28]])
    >>> monotone_gammas(surface, 0.02).tolist()  # gamma 2 at batch 3 would be 3.4% better, but only after a drop to 1
    [2, 2, 2, 1]
    >>> surface = np.array([[1.0, 1.0, 1.0, 1.0], [1.10, 1.05, 1.10, 1.20], [1.20, 0.95, 1.30, 1.50]])
    >>> monotone_gammas(surface, 0.0).tolist()  # gamma 2 throughout, which loses at batch 2: cut there, off from it on
    [2, 2, 2, 2]
    >>> monotone_gammas(surface, 0.0, surface[1:] >= 1.0).tolist()  # gamma 1 pays at every batch after the first
    [2, 1, 1, 1]
    """
    cost, first = _shortfall_costs(surface, rtol, pays)
    n_gamma, n_batch = cost.shape
    total = cost[:, 0].copy()
    back = np.zeros((n_gamma, n_batch), dtype=int)
    for j in range(1, n_batch):
        # The cheapest path into gamma g comes from some g' >= g: a running minimum from the top row down; on a tie the
        # smaller predecessor (found first from the bottom of each suffix) keeps the schedule from holding a large gamma.
        suffix = np.minimum.accumulate(total[::-1])[::-1]
        arg = np.empty(n_gamma, dtype=int)
        arg[-1] = n_gamma - 1
        for g in range(n_gamma - 2, -1, -1):
            arg[g] = g if total[g] <= suffix[g + 1] else arg[g + 1]
        back[:, j] = arg
        total = cost[:, j] + suffix
    out = np.empty(n_batch, dtype=int)
    out[-1] = int(np.argmin(total))
    for j in range(n_batch - 1, 0, -1):
        out[j - 1] = back[out[j], j]
    return out + first


@dataclass(frozen=True)
class TreeRange(_RangeText):
    """Batch sizes start..end (inclusive) that share one tree (None: speculation off)."""

    start_batch: int
    end_batch: int
    tree: Any
    min_speedup: float
    max_speedup: float
    #: How far below the best gamma of its batch sizes the range's speedup falls at most (0: the best everywhere).
    shortfall: float = 0.0
    #: At loads (:func:`load_schedule`): the smallest of its loads' gain over plain decoding by what the load answer
    #: maximises and judges (:meth:`~specsim.answers.load.LoadAnswer.objective`), which its verdict weighs as
    #: optimal-gamma at those loads does; None per batch, where that is :attr:`min_speedup`.
    min_objective: float | None = None
    #: At loads: the largest of its loads' gains by that objective (None per batch: :attr:`max_speedup`).
    max_objective: float | None = None


def tree_schedule(
    dep: Deployment,
    acceptance: object,
    bounds: Any,
    max_batch: int = DEFAULT_MAX_BATCH,
    context: int = DEFAULT_CONTEXT_TOKENS,
    min_gain: float = DEFAULT_MIN_GAIN,
    rtol: float = DEFAULT_SCHEDULE_RTOL,
    sibling: float | None = None,
    judge=None,
) -> list[TreeRange]:
    """The best tree within ``bounds`` for every batch size 1..max_batch, merged into ranges (split also where
    ``judge``, a function of a batch's speedup to its verdict, changes: see :func:`merge_ranges`)."""
    from specsim.core.limits import MAX_BATCH, check_int

    max_batch = check_int("max batch", max_batch, 1, MAX_BATCH)
    batch = np.arange(1, max_batch + 1)
    trees, speedup, _ = optimal_tree(dep, acceptance, bounds, batch, context, sibling, rtol)
    trees = [t if t is not None and s >= min_gain else None for t, s in zip(trees, speedup)]
    labels = _labels(judge, np.where([t is not None for t in trees], speedup, 1.0))
    out: list[TreeRange] = []
    for _, group in itertools.groupby(range(max_batch), key=lambda i: (trees[i], labels[i])):
        idx = list(group)
        tree = trees[idx[0]]
        s = speedup[idx] if tree is not None else np.ones(len(idx))
        out.append(TreeRange(idx[0] + 1, idx[-1] + 1, tree, float(s.min()), float(s.max())))
    return out


def batch_grid(top: int) -> list[int]:
    """Powers of two below ``top``, then ``top``: the batch sizes of a (batch, context) table.

    >>> batch_grid(100)
    [1, 2, 4, 8, 16, 32, 64, 100]
    """
    out, b = [], 1
    while b < top:
        out.append(b)
        b *= 2
    return out + [top]


def context_table(
    dep: Deployment,
    acceptance: object,
    batches,
    contexts,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    rtol: float = DEFAULT_SCHEDULE_RTOL,
    bounds: Any = None,
    sibling: float | None = None,
) -> list[dict]:
    """The best gamma (or tree) and its speedup for every (batch, context): long contexts keep verification
    memory-bound, so the choice depends on context as much as on batch.  One dict per cell."""
    rows = []
    for L in contexts:
        if bounds is None:
            best = optimal_gamma(dep, acceptance, np.asarray(batches, float), L, gamma_max, rtol)
            for b, g, s in zip(batches, best.gamma, best.speedup):
                rows.append({"batch": int(b), "context": int(L), "gamma": int(g), "speedup": float(s)})
        else:
            trees, speedup, _ = optimal_tree(dep, acceptance, bounds, np.asarray(batches, float), L, sibling, rtol)
            for b, t, s in zip(batches, trees, speedup):
                rows.append(
                    {"batch": int(b), "context": int(L), "tree": None if t is None else t.label(), "speedup": float(s)}
                )
    return rows
