"""schedule as a library result: the gamma (or tree) per batch-size range, where the memory stops it, and by context.

The ranges come from :func:`specsim.speculation.schedule.gamma_schedule` (each batch size's best gamma, never rising
with batch, or, where the engine release takes a schedule that rises, rising to one peak at most:
:meth:`specsim.engines.engine.Engine.rising_schedule`), :func:`~specsim.speculation.schedule.tree_schedule` (the best
tree within bounds) or, at a load, :func:`~specsim.speculation.schedule.load_schedule` (the loads' gammas by the same
rule along the decode batch each runs at, keyed by it).  An
engine's configuration is then written from the ranges by that engine's ``render_schedule``
(:data:`specsim.engines.REGISTRY`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from specsim.answers.context import LOAD_CONTEXT, context_basis
from specsim.core.defaults import ARTICLE_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX
from specsim.core.names import given_as
from specsim.serving.capacity import Capacity
from specsim.speculation.acceptance import acceptance_rates
from specsim.speculation.deployment import Deployment
from specsim.speculation.schedule import DEFAULT_MAX_BATCH, DEFAULT_MIN_GAIN, DEFAULT_SCHEDULE_RTOL, merge_ranges
from specsim.speculation.search import checked_deployment

__all__ = ["ScheduleAnswer", "fold_on_the_line", "schedule_answer"]


@dataclass(frozen=True, eq=False)
class ScheduleAnswer:
    """The schedule of one deployment at one acceptance: its ranges, and what the memory says of them."""

    deployment: Deployment
    acceptance: object
    label: str
    capacity: Capacity
    ranges: list
    tree: object  #: the tree bounds searched (a :class:`~specsim.speculation.acceptance.TreeSpec`), None for chains
    max_batch: int
    context: int
    gamma_max: int
    rtol: float
    sibling: float | None
    contexts: tuple  #: context lengths of :meth:`by_context` (empty: none asked)
    load: object = None  #: the :class:`~specsim.answers.load.LoadAnswer` the ranges come from, at a load
    max_batch_from: str = "given"  #: where :attr:`max_batch` came from
    #: The ranges split also where their verdict changes (:attr:`judged`); None: none split.
    judged_ranges: list | None = None
    #: ``(range, verdict, parts)`` for each range of :attr:`judged` that holds parts on the line (their gains within
    #: :data:`~specsim.answers.verdict.VERDICT_RESOLUTION` of the error, their own verdict another): ``verdict`` is
    #: that of the rest of it (:func:`fold_on_the_line`).
    on_the_line: tuple = ()
    min_gain: float = DEFAULT_MIN_GAIN  #: speculation only where the predicted gain is at least this
    #: Where the engine release the schedule is for lets it rise with the batch, the source that says so
    #: (:meth:`specsim.engines.engine.Engine.rising_schedule`); "": it never rises.
    rising: str = ""
    #: Where the engine release takes a schedule that may rise back to its batch-1 length but writes no off tier, the
    #: source that says so (:meth:`specsim.engines.engine.Engine.capped_rise`); "": not so.
    capped: str = ""

    def __repr__(self) -> str:  # a notebook's echo: the schedule, not every field (ranges and to_dict hold the rest)
        def what(r) -> str:
            if hasattr(r, "gamma"):
                return f"gamma {r.gamma}"
            return "off" if r.tree is None else r.tree.label()

        shown = "; ".join(f"batch {r.batches}: {what(r)}" for r in self.ranges[:6])
        more = f"; ... ({len(self.ranges)} ranges)" if len(self.ranges) > 6 else ""
        return f"ScheduleAnswer({self.deployment!r}, {self.label.split(' (')[0]}; {shown}{more})"

    @property
    def judged(self) -> list:
        """The ranges as the table and --json print them: :attr:`ranges` (what an engine is configured with, split
        where the gamma changes) split also where the verdict changes within one gamma, so that each range's verdict
        (weighed at its smallest gain) holds at every batch size or load in it, but for the parts on the line it keeps
        (:attr:`on_the_line`, :func:`fold_on_the_line`), whose own verdict the notes give."""
        return self.ranges if self.judged_ranges is None else self.judged_ranges

    @property
    def rule(self) -> str:
        """How the schedule's gamma may change with batch, in words that follow "gamma": never rising, or, where the engine release takes
        a schedule that rises (:attr:`rising`), rising once (from off) then never again
        (:func:`specsim.speculation.schedule.rising_gammas`, per batch only)."""
        if self.capped:
            return "never exceeds its batch-1 value and, after batch 1, rises to one peak at most, then never again"
        if self.rising:
            return "rises with batch to one peak at most, then never again"
        return "never rises with batch"

    @property
    def notes(self) -> list[str]:
        """Where the schedule runs past what fits in memory with the draft, and, at loads, past the largest decode
        batch they run at (the last load's gamma carried on: no load informs those batches)."""
        from specsim.answers.verdict import model_error

        cap = self.capacity
        out = []
        if cap.max_batch_with_draft < self.max_batch:
            out.append(
                f"batch sizes above {cap.max_batch_with_draft} do not fit in memory with the draft at "
                f"{cap.context_tokens} tokens per sequence (specsim capacity)"
            )
        out += self._contexts_past_memory()
        if self.load is not None:
            out += self._past_the_loads()
            out += self._off_their_best()
        elif self.tree is None:
            out += self._capped_said() if self.capped else self._off_where_it_pays() + self._turns_on()
        out += self._too_close() + self._weights()
        out += self._line_notes(model_error(self.deployment)) if self.on_the_line else []
        steps = getattr(self.acceptance, "measured_steps", None)  # a calibration's acceptance knows its steps
        past = sorted({r.gamma for r in self.ranges if self.tree is None and steps is not None and r.gamma > steps})
        if past:  # as optimal-gamma's recommendation says it (answers.load.past_measured)
            out.append(
                f"gamma {', '.join(map(str, past))} drafts past the {steps} draft step{'s' if steps != 1 else ''} its "
                f"acceptance was measured at: extrapolated, {self.acceptance.beyond()}"
            )
        return out

    def _off_where_it_pays(self) -> list[str]:
        """Per batch: the ranges the schedule turns off that hold batch sizes where speculation pays on its own (the
        best gamma's gain at least --min-gain and past the model's error, where optimal-gamma at that batch says speculate).
        Where the engine release's schedule never rises (:attr:`rising` empty), gamma never rises with batch,
        so speculation stays off from the first batch where the schedule's gamma does not pay; a target whose gain
        grows with batch (a MoE's verification touches more experts than its decode step at small batches) is then
        off where optimal-gamma says speculate, and the table alone would not say so."""
        from specsim.answers.verdict import model_error
        from specsim.speculation.search import optimal_gamma

        error = model_error(self.deployment)
        out = []
        unset = self.rising and len(self.ranges) == 1  # a rising schedule's other off ranges are K = 0 (_turns_on)
        for r in self.ranges if not self.rising or unset else ():
            if r.gamma != 0:
                continue
            batch = np.arange(r.start_batch, r.end_batch + 1)
            best = optimal_gamma(self.deployment, self.acceptance, batch, self.context, self.gamma_max, 0.0)
            pays = (best.gamma > 0) & (best.speedup >= self.min_gain) & (best.speedup - 1.0 > error.share)
            if not pays.any():
                continue
            i = int(np.argmax(np.where(pays, best.speedup, -np.inf)))
            where = batch[pays]
            span = str(where[0]) if where[0] == where[-1] else f"{where[0]}-{where[-1]}"
            there = (
                f"at {int(pays.sum())} of these batch sizes ({span}), the most gamma {int(best.gamma[i])} at "
                f"{float(best.speedup[i]):.3f}x at batch {int(batch[i])}: optimal-gamma --batch gives each batch's best"
            )
            if unset:
                zero = self._zero_k(batch[~pays])
                out.append(
                    f"speculation is left unset at batch {r.batches}, though it pays, past specsim's measured error of "
                    f"{error.shown}, {there}; a schedule written to speculate there runs the drafter at every batch size "
                    f"(the engine release runs its pass even at K = 0: {zero}x at the others) and, over batch sizes "
                    f"{r.batches} weighed alike, falls further below each one's best than plain decoding does"
                )
                continue
            out.append(
                f"speculation is off at batch {r.batches}: gamma never rises with batch, and from batch {r.start_batch} "
                f"the schedule's gamma does not pay ({given_as('min_gain')} {self.min_gain:g}); yet on its own it pays, past specsim's "
                f"measured error of {error.shown}, {there}, and a schedule that starts speculating past where it first "
                "failed is not one this command writes"
            )
        return out

    def _turns_on(self) -> list[str]:
        """Where the engine release lets the schedule rise (:attr:`rising`), the ranges where it loses (below
        --min-gain): written, speculation is never free there, as K = 0 still runs the drafter's pass
        (:func:`specsim.speculation.schedule.zero_k_speedup`), so the schedule takes what loses least, K = 0 or a gamma;
        said with what leaving speculation unset would give instead and why the schedule is written (a MoE target whose
        verification reads more experts than its decode step at small batches pays only at larger ones)."""
        from specsim.speculation.schedule import ScheduleRange, speedup, zero_k_speedup

        if not self.rising or min(r.min_speedup for r in self.ranges) >= self.min_gain:
            return []
        parts = []
        for r in self.ranges:
            batch = np.arange(r.start_batch, r.end_batch + 1)
            zero = zero_k_speedup(self.deployment, self.acceptance, batch, self.context)
            value = zero if r.gamma == 0 else speedup(self.deployment, self.acceptance, r.gamma, batch, self.context)
            loses = np.flatnonzero(value < self.min_gain)
            if loses.size == 0:
                continue
            at = batch[loses[0] : loses[-1] + 1]  # the losing batches of one range are one run: gain grows, then falls
            seen = ScheduleRange(int(at[0]), int(at[-1]), r.gamma, float(value[loses].min()), float(value[loses].max()))
            parts.append(
                (f"K = 0 at batch {seen.batches}" if r.gamma == 0 else f"gamma {r.gamma} at batch {seen.batches}")
                + f": {seen.speedups}x"
                + (
                    ""
                    if r.gamma == 0
                    else f" (K = 0 there {float(zero[loses].min()):.3f}-{float(zero[loses].max()):.3f}x)"
                )
            )
        paying = [r for r in self.ranges if r.max_speedup >= self.min_gain and r.gamma > 0]
        if not parts or not paying:
            return []
        top = max(paying, key=lambda x: x.max_speedup)
        where = "; ".join(parts)
        return [
            f"the schedule loses where no gamma pays ({where}): written, speculation is never free, as the engine "
            f"release runs the drafter's pass even at K = 0, so it takes what loses least there; leaving speculation "
            f"unset instead runs those batch sizes at 1x and forgoes the gain elsewhere (up to {top.max_speedup:.3f}x, "
            f"gamma {top.gamma} at batch {top.batches}): over batch sizes 1-{self.ranges[-1].end_batch}, weighed alike, "
            f"this schedule falls less below each one's best, so it is written; where your engine runs mostly where it "
            f"loses, leave speculation unset. The schedule may rise with batch: {self.rising}"
        ]

    def _capped_said(self) -> list[str]:
        """Where the engine release's schedule may rise back to its batch-1 length and writes no off tier
        (:attr:`capped`): the rule's source, and where the schedule loses (below 1: every batch drafts at least 1)."""
        if len(self.ranges) == 1 and self.ranges[0].gamma == 0:
            return [
                f"speculation is left unset: every schedule this engine release takes drafts at every batch size, and "
                f"over batch sizes 1-{self.max_batch} weighed alike the best of them falls further below each one's "
                f"best than plain decoding does ({self.capped})"
            ]
        losing = [f"gamma {r.gamma} at batch {r.batches}: {r.speedups}x" for r in self.ranges if r.min_speedup < 1.0]
        where = f"; it loses at {'; '.join(losing)}, where no gamma pays and none is 0" if losing else ""
        gain = (
            f"; {given_as('min_gain')} {self.min_gain:g} cannot turn speculation off at a batch size here (no off tier): every "
            "batch size drafts, or none if you leave speculation unset"
            if self.min_gain != 1.0
            else ""
        )
        return [f"the schedule {self.rule}: {self.capped}{where}{gain}"]

    def _zero_k(self, batch: np.ndarray) -> str:
        """The speedups a written schedule's K = 0 gives at ``batch`` (:func:`specsim.speculation.schedule.
        zero_k_speedup`), as a range prints them."""
        from specsim.speculation.schedule import ScheduleRange, zero_k_speedup

        zero = zero_k_speedup(self.deployment, self.acceptance, batch, self.context)
        return ScheduleRange(int(batch[0]), int(batch[-1]), 0, float(zero.min()), float(zero.max())).speedups

    def _weights(self) -> list[str]:
        """How the schedule weighs what it sums to choose (:data:`specsim.speculation.schedule.BATCH_WEIGHTS`): the batch
        sizes, per batch, or the loads, alike; nothing where nothing is summed (one batch size or load, or trees, each
        batch taking its own best)."""
        from specsim.speculation.schedule import BATCH_WEIGHTS

        if self.load is not None and len(self.load.loads) > 1:
            return [
                f"the schedule is, of those the engine takes, the one whose shortfalls below each load's best, summed "
                f"over the {len(self.load.loads)} loads given weighed {BATCH_WEIGHTS}, are least (specsim's default: the serving model "
                "gives each load its mean decode batch, not a distribution of batch sizes to weigh by; give the loads "
                "your engine sees)"
            ]
        if self.load is not None or self.tree is not None or self.max_batch < 2:
            return []
        return [
            f"the schedule is, of those the engine takes, the one whose shortfalls below each batch size's best, summed "
            f"over batch sizes 1-{self.max_batch} weighed {BATCH_WEIGHTS}, are least (specsim's default: no source says how often an "
            "engine runs at each; --concurrency or --rate schedule the decode batches those loads run at)"
        ]

    def _too_close(self) -> list[str]:
        """The speculating ranges whose smallest predicted speedup is inside the model's measured error
        (:func:`specsim.answers.verdict.verdict`): scheduled, as the schedule speculates wherever it predicts a gain,
        but too close to call there."""
        from specsim.answers.verdict import VERDICTS, model_error

        error = model_error(self.deployment)
        close = [r for r in self.judged if self._verdict(r, error) == VERDICTS[2]]
        return [
            f"{self._what(r)} at batch {r.batches}: {self._weighed_said(r)}, is inside specsim's measured error of "
            f"{error.shown} ({error.short}): too close to call there; measure both "
            "arms before relying on it (specsim bench-plan)"
            for r in close
        ]

    @staticmethod
    def _weighed(r) -> float:
        """What a range's verdict weighs: at loads the smallest of its loads' gains by what optimal-gamma at a load
        weighs (the range's ``min_objective``: :class:`~specsim.speculation.schedule.ScheduleRange`), else its smallest
        speedup."""
        return r.min_speedup if r.min_objective is None else r.min_objective

    def _weighed_said(self, r) -> str:
        """:meth:`_weighed` in words, for the too-close note."""
        if r.min_objective is None:
            return f"its smallest predicted speedup, {r.min_speedup:.3f}x"
        return f"the smallest gain of its loads as optimal-gamma at a load weighs it, {r.min_objective:.3f}x"

    def _what(self, r) -> str:
        """A range's speculation as the notes name it ("gamma 2", "tree topk 2, depth 2, tokens 6", "the chain"); "" where
        it is off."""
        if self.tree is None:
            return f"gamma {r.gamma}" if r.gamma > 0 else ""
        label = "" if r.tree is None else r.tree.label()
        return "the chain" if label == "chain" else f"tree {label}" if label else ""

    def _verdict(self, r, error) -> str | None:
        """:func:`specsim.answers.verdict.verdict` of a speculating range at its smallest predicted speedup (a range
        holding parts on the line: that of the rest of it, :attr:`on_the_line`); None where the range is off or no
        speedup is known (an arm past capacity at every load of it)."""
        from specsim.answers.verdict import verdict

        if not self._what(r) or math.isnan(self._weighed(r)):
            return None
        held = next((said for whole, said, _ in self.on_the_line if whole is r), None)
        return held or verdict(self._weighed(r) - 1.0, error, True)

    def _line_notes(self, error) -> list[str]:
        """One line per part of a range taken on the line (:attr:`on_the_line`): its own verdict, which optimal-gamma
        at it gives, and why its row says another."""
        from specsim.answers.verdict import line_said

        return [
            f"{self._what(r)} at batch {part.batches}: {self._weighed_said(part)}, is {line_said(error)}, "
            f"{self._verdict_alone(part, error)} taken alone (as optimal-gamma at it says), so its row {r.batches} "
            f"keeps the verdict of the {'loads' if self.load is not None else 'batch sizes'} either side, {said}, "
            "rather than flip for it"
            for r, said, parts in self.on_the_line
            for part in parts
        ]

    def _verdict_alone(self, part, error) -> str:
        """The verdict of a part on the line by its own smallest gain (or, a part called "speculate" between
        too-close ranges, that too)."""
        from specsim.answers.verdict import verdict

        return verdict(self._weighed(part) - 1.0, error, True)

    @functools.cached_property
    def _fit_by_context(self) -> dict:
        """The most sequences that fit in memory with the draft at each of :attr:`contexts` tokens per sequence (the
        memory of :attr:`capacity`, each sequence holding that context)."""
        from specsim.serving.capacity import capacity, reserved_context

        cap = self.capacity
        return {
            L: capacity(
                self.deployment,
                reserved_context(int(L), None),
                cap.memory_utilization,
                cap.scratch_draft_tokens or None,
                cap.scratch_basis or None,
                max_batched_tokens=cap.max_batched_tokens,
                max_num_seqs=cap.max_num_seqs,
            ).max_batch_with_draft
            for L in self.contexts
        }

    def _contexts_past_memory(self) -> list[str]:
        """The --contexts columns whose larger batches do not fit in memory with the draft at that context
        (:attr:`_fit_by_context`): their cells are a speedup no deployment reaches."""
        short = []
        for L, fits in self._fit_by_context.items():
            if fits < 1:
                short.append(f"L={L} at every batch (not one sequence fits)")
            elif fits < self.max_batch:
                short.append(f"L={L} above batch {fits}")
        if not short:
            return []
        return [
            f"by batch and context: the cells at {', '.join(short)} do not fit in memory with the draft at that many "
            "tokens per sequence (specsim capacity --context L)"
        ]

    def _past_the_loads(self) -> list[str]:
        """The batch sizes past the heaviest load's decode batch, where the decode-batch schedule at the loads' context
        (:func:`specsim.speculation.schedule.gamma_schedule`, its rtol and never-rising rule) gives another gamma there
        than the one they carry."""
        from specsim.speculation.schedule import gamma_schedule

        load = self.load
        top = max(range(len(load.loads)), key=lambda j: (load.key_batch(j), j))
        batch = max(math.ceil(load.key_batch(top) - 1e-9), 1)
        carried = self.ranges[-1].gamma
        if batch >= self.max_batch or self.ranges[-1].end_batch <= batch:
            return []
        view = gamma_schedule(
            self.deployment,
            self.acceptance,
            self.max_batch,
            self.context,
            self.gamma_max,
            DEFAULT_MIN_GAIN,
            self.rtol,
            rising=self.rising,
        )
        there = next(r.gamma for r in view if r.start_batch <= self.max_batch <= r.end_batch)
        if there == carried:
            return []
        return [
            f"batch sizes {batch + 1}-{self.max_batch} are past the batch the heaviest load's rounds run at "
            f"({load.key_batch(top):.1f}, {load.kind} {load.loads[top]:g}; the table's decode batch is its time-weighted "
            f"mean, prefill-only iterations counting none): they carry its gamma {carried}, which no "
            f"load informs; give the loads the engine will see, or take the decode-batch schedule at this context "
            f"(schedule --context {self.context}, without --{load.kind}: gamma {there} at batch {self.max_batch})"
        ]

    def _off_their_best(self) -> list[str]:
        """At loads: the loads whose gamma here is not the one the loads' table and optimal-gamma at them give (each
        one's own best, the smallest within optimal-gamma's --rtol of the most: 0 unless given), each with why (this
        command's --rtol, where the smaller gamma wins; gamma never rising with the decode batch; --min-gain) and both
        gammas' verdicts, and what optimal-gamma gives with this --rtol: the two commands pick by one rule
        (:func:`specsim.speculation.schedule.load_gammas`) at different --rtol defaults."""
        from specsim.answers.verdict import model_error, verdict
        from specsim.speculation.schedule import load_gammas

        load, error = self.load, model_error(self.deployment)
        value = load.objective()
        gammas = np.asarray(load.state.gamma)[:, 0].astype(int)
        picks = load.best_within(self.rtol)
        order, rows = load_gammas(load, self.min_gain, self.rtol)
        parts, theirs = [], []
        for j, i in zip(order, rows):
            own = int(load.best[j])
            if gammas[i] == gammas[own]:
                continue
            short = 1.0 - value[i, j] / value[own, j]
            if gammas[i] == 0:
                why = f"off: its gain or a lighter load's is below {given_as('min_gain')} {self.min_gain:g}"
            else:  # within --rtol the smaller gamma wins, unless a heavier load's holds it up (gamma never rises)
                inside = short <= self.rtol + 1e-12
                why = f"{short:.1%} below, {'within' if inside else 'past'} {given_as('rtol')} {self.rtol:g}" + (
                    ", the smaller gamma winning"
                    if inside and gammas[i] < gammas[own]
                    else f", held {'up' if gammas[i] > gammas[own] else 'down'} there as gamma never rises with batch"
                )
            said = [verdict(value[k, j] - 1.0, error, True) for k in (i, own) if gammas[k] > 0]
            if len(said) == 2:
                why += f"; both {said[0]}" if said[0] == said[1] else f"; {said[0]} against {said[1]}"
            parts.append(f"{load.kind} {load.loads[j]:g} gamma {gammas[i]} against {gammas[own]} ({why})")
            theirs.append(str(gammas[int(picks[j])]))
        if not parts:
            return []
        return [
            f"gamma here against optimal-gamma's at the load (its own best, the loads' table's, at optimal-gamma's "
            f"--rtol {load.rtol:g}), by what optimal-gamma at a load maximises: {'; '.join(parts)}; optimal-gamma --rtol "
            f"{self.rtol:g} gives gamma {', '.join(theirs)} there: one rule, the smallest gamma within --rtol of the "
            "most, which the schedule keeps from rising with batch"
        ]

    def by_context(self) -> list[dict] | None:
        """The best gamma (or tree) and its speedup per (batch, context) of :attr:`contexts`
        (:func:`specsim.speculation.schedule.context_table`), each cell saying whether its batch fits in memory with the
        draft at its context (``fits_in_memory``); None where no contexts were asked."""
        if not self.contexts:
            return None
        from specsim.speculation.schedule import batch_grid, context_table

        fit = self._fit_by_context
        cells = context_table(
            self.deployment,
            self.acceptance,
            batch_grid(self.max_batch),
            list(self.contexts),
            self.gamma_max,
            self.rtol,
            self.tree,
            self.sibling,
        )
        return [c | {"fits_in_memory": bool(c["batch"] <= fit[c["context"]])} for c in cells]

    def _line_record(self, r, error) -> dict:
        """What --json carries of a range's parts on the line (:attr:`on_the_line`): each one's batch sizes, gains and
        own verdict; nothing where it holds none."""
        parts = next((parts for whole, _, parts in self.on_the_line if whole is r), ())
        if not parts:
            return {}
        return {
            "on_the_line": [
                {"start_batch": p.start_batch, "end_batch": p.end_batch, "min_speedup": p.min_speedup}
                | ({} if p.min_objective is None else {"min_objective": p.min_objective})
                | {"verdict": self._verdict_alone(p, error)}
                for p in parts
            ]
        }

    def to_dict(self) -> dict:
        """What ``specsim schedule --format json`` prints."""
        from specsim.answers.verdict import model_error

        key = "gamma" if self.tree is None else "tree"
        error = model_error(self.deployment)
        out = {
            "ranges": [
                {
                    "start_batch": r.start_batch,
                    "end_batch": r.end_batch,
                    key: r.gamma if self.tree is None else (None if r.tree is None else r.tree.label()),
                    # null where an arm is past capacity at every load of the range (no speedup there)
                    "min_speedup": None if math.isnan(r.min_speedup) else r.min_speedup,
                    "max_speedup": None if math.isnan(r.max_speedup) else r.max_speedup,
                }
                | ({"shortfall": r.shortfall} if self.tree is None else {})
                | ({} if r.min_objective is None else {"min_objective": r.min_objective})
                | {"verdict": self._verdict(r, error)}
                | self._line_record(r, error)
                for r in self.judged
            ],
            "model_error": error.record(),
            "max_batch": {"value": self.max_batch, "from": self.max_batch_from},
            "context_tokens": int(self.context),
            "context_basis": context_basis(self.context) if self.load is None else LOAD_CONTEXT,
            "acceptance": self.label,
            "acceptance_rates": acceptance_rates(self.acceptance),
            "drafter": self.deployment.drafter.kind,
            "provenance": self.deployment.provenance(),
            "deployment": self.deployment.identity(),
            "notes": self.notes,
        }
        if self.contexts:
            out["by_context"] = self.by_context()
        if self.load is not None:  # the loads the ranges come from, as the table prints them first
            out["loads"] = self.load.rows
            out["engine_limits"] = self.load.limits.label
        return out


def schedule_answer(
    dep: Deployment,
    acceptance: object,
    label: str | None,
    cap: Capacity,
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    context: int = ARTICLE_CONTEXT_TOKENS,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    min_gain: float = DEFAULT_MIN_GAIN,
    rtol: float = DEFAULT_SCHEDULE_RTOL,
    tree=None,
    sibling: float | None = None,
    contexts=(),
    load=None,
    max_batch_from: str = "given",
    rising: str = "",
    capped: str = "",
) -> ScheduleAnswer:
    """The schedule for batch sizes 1..``max_batch``: per batch at ``context`` tokens (chains up to ``gamma_max``, or
    trees within ``tree``'s bounds), or with ``load`` (a :func:`specsim.answers.load.load_answer`) each load's best
    gamma keyed by its decode batch.  Speculation only where the predicted speedup is at least ``min_gain``; ``rtol``
    takes the smallest gamma within that fraction of the best; ``cap`` is the memory budget
    (:func:`specsim.answers.deployment_capacity`); ``max_batch_from`` says where ``max_batch`` came from.  ``dep`` the
    :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`, ``label`` what the answer calls it (None: :func:`specsim.answers.acceptance.acceptance_label`); ``max_batch`` and
    ``context`` in sequences and tokens; ``sibling`` the sibling factor of ``tree``'s acceptance, a ranked sibling's
    relative to the first, per rank (None: :data:`~specsim.speculation.acceptance.DEFAULT_SIBLING_FACTOR`); ``contexts`` more context lengths, in tokens, for the by-context table; ``rising``
    the source that lets the engine release's schedule rise with the batch ("": it never rises;
    :meth:`specsim.engines.engine.Engine.rising_schedule`); ``capped`` the source that lets it rise back to its batch-1
    length, no off tier written ("": not so; :meth:`specsim.engines.engine.Engine.capped_rise`).

    >>> from specsim.answers import deployment_capacity
    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> answer = schedule_answer(dep, 0.8, "alpha 0.8", deployment_capacity(dep, 1128, None, None), max_batch=256)
    >>> [(r.batches, r.gamma) for r in answer.ranges]
    [('1-125', 3), ('126-256', 2)]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.answers.acceptance import checked_label
    from specsim.answers.verdict import judged_at, model_error, verdict
    from specsim.speculation.schedule import gamma_schedule, load_schedule, tree_schedule

    label = checked_label(acceptance, label)  # the answer shows it as the acceptance it was computed at
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    error = model_error(dep)

    def judge(gain: float) -> str | None:  # as ScheduleAnswer._verdict weighs a range, at one batch or load
        return None if math.isnan(gain) else verdict(gain - 1.0, error, True)

    for L in contexts or ():  # the batch view's columns: refused past the positions, as --context is
        dep.require_within_positions(L, given_as("contexts"))
        dep.require_drafts_within_positions(L, 0, given_as("contexts"))  # and where the engine runs no decode step
    if load is None:
        dep.require_drafts_within_positions(context, 0, given_as("context"))
    if load is not None or tree is not None:  # per batch only: at loads K = 0 is not charged (load_schedule)
        rising = capped = ""
    if load is not None:
        judged = load_schedule(load, max_batch, min_gain, rtol, judge)
    elif tree is None:
        judged = gamma_schedule(dep, acceptance, max_batch, context, gamma_max, min_gain, rtol, judge, rising, capped)
    else:
        judged = tree_schedule(dep, acceptance, tree, max_batch, context, min_gain, rtol, sibling, judge)
    judged, folded = fold_on_the_line(judged, error)
    ranges = merge_ranges(judged)  # an engine's: split only where the gamma changes
    return ScheduleAnswer(
        dep,
        acceptance,
        label,
        cap,
        ranges,
        tree,
        max_batch,
        context,
        gamma_max,
        rtol,
        sibling,
        tuple(contexts or ()),
        load,
        max_batch_from,
        judged if len(judged) > len(ranges) else None,
        folded,
        min_gain,
        rising,
        capped,
    )


def _gains(r) -> tuple[float, float]:
    """A range's smallest and largest gain as its verdict weighs them: at loads by the load answer's objective, else
    its predicted speedups."""
    if r.min_objective is None:
        return r.min_speedup, r.max_speedup
    return r.min_objective, r.max_objective if r.max_objective is not None else r.min_objective


def fold_on_the_line(judged: list, error) -> tuple[list, tuple]:
    """``judged`` (ranges split where the gamma or the verdict changes) with each run whose gains all lie on the line
    (:func:`specsim.answers.verdict.on_the_line`) between two ranges of its gamma (or tree) that share another verdict
    folded into one range with them: the verdict of a gain 0.05 pp under the error is the other within what the error
    is known to, and a schedule that flipped for it (speculate at batch 86-254, too close to call at 255-256, speculate
    at 257-314) says nothing an engine or a user can act on.  Returns the ranges and, for each range that took parts,
    ``(range, verdict, parts)``: its verdict, that of the ranges either side, and the parts, whose own verdict the notes
    give.  A range whose gains are not all on the line is never folded: each row's verdict holds for every batch size
    or load in it outside the parts named.

    >>> from specsim.answers.verdict import ModelError
    >>> from specsim.speculation.schedule import ScheduleRange
    >>> e = ModelError(0.0685, "test", "test")
    >>> rows = [ScheduleRange(1, 254, 1, 1.069, 1.2), ScheduleRange(255, 256, 1, 1.0676, 1.0683)]
    >>> rows += [ScheduleRange(257, 314, 1, 1.0686, 1.11), ScheduleRange(315, 423, 1, 1.02, 1.068)]
    >>> ranges, folded = fold_on_the_line(rows, e)
    >>> [r.batches for r in ranges], [(r.batches, said, [p.batches for p in parts]) for r, said, parts in folded]
    (['1-314', '315-423'], [('1-314', 'speculate', ['255-256'])])
    """
    from specsim.answers.verdict import on_the_line, verdict

    def said(r) -> str | None:  # as ScheduleAnswer._verdict weighs a speculating range
        low = _gains(r)[0]
        on = getattr(r, "gamma", None) != 0 and getattr(r, "tree", True) is not None
        return verdict(low - 1.0, error, True) if on and not math.isnan(low) else None

    def key(r) -> tuple:
        return getattr(r, "gamma", None), getattr(r, "tree", None)

    out: list = []
    held: dict = {}  # id of a folded range -> (verdict, parts)
    for r in judged:
        out.append(r)
        if len(out) < 3:
            continue
        a, b, c = out[-3:]
        va = held[id(a)][0] if id(a) in held else said(a)
        vb = None if id(b) in held else said(b)  # (a range that took parts is no part itself)
        if not (key(a) == key(b) == key(c) and va is not None and vb is not None and va == said(c) != vb):
            continue
        if not all(on_the_line(g - 1.0, error) for g in _gains(b)):
            continue
        whole = merge_ranges([a, b, c])[0]
        held[id(whole)] = (va, held.pop(id(a), (va, []))[1] + [b])
        out[-3:] = [whole]
    folded = tuple((r, held[id(r)][0], tuple(held[id(r)][1])) for r in out if id(r) in held)
    return out, folded
