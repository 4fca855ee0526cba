"""Windows in, verdicts out: what ``specsim watch`` says of each window, and which verdicts hold.

Three verdicts, each with the window it starts in and its evidence:

``costs``
    speculation at the gamma in use costs more than it saves at this load: the window's acceptance length, with its
    interval, is below the acceptance length where the serving model's speedup at the window's rate and lengths is
    1 less the model's error (:mod:`.judge`), and the gamma that would pay there, if one does, is named; it holds until
    a window pays or is too close to call (a window whose interval crosses a threshold changes nothing).
``dropped``
    acceptance dropped from a to b since a window: the change-point test flagged it (:mod:`.drift`); it holds until the
    test has a new reference.
``schedule``
    the schedule should now be another: the gamma the model picks at this load and acceptance beats the one in use by
    ``min_gain`` or more; the schedule at the acceptance seen is written in the engine's own format.  Held, it ends
    below half of ``min_gain``, and another gamma replaces the one proposed only where it beats it by that half.

Exit codes for ``--once`` and bounded runs, from the verdicts that hold at the last window, the most urgent first:
:data:`EXIT_CODES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specsim.core.names import given_as

__all__ = ["DEFAULT_MIN_GAIN", "EXIT_CODES", "Row", "Verdict", "Watcher", "schedule_writer"]

#: A gamma other than the one in use is worth a schedule change where the model gives it this much more speedup
#: (specsim's default, an assumption: about the model's own error on held-out loads, docs/reports/2026-12-02-concurrency.md).
DEFAULT_MIN_GAIN = 0.05
#: Exit status per verdict, most urgent first (0: none holds; 2 is bad input, as for every command).
EXIT_CODES = {"costs": 3, "dropped": 4, "schedule": 5}


def three_figures(x: float) -> str:
    """A rate to three significant figures, its zeros kept ("18.0" beside "11.9", where :3g printed "18"): the
    table's requests/s and the verdicts' sentences."""
    if not (x > 0 and math.isfinite(x)):
        return f"{x:g}"
    x = float(f"{x:.3g}")  # rounded first: 9.996 is "10.0", not "10.00"
    return f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}"


@dataclass(frozen=True)
class Verdict:
    kind: str  #: a key of EXIT_CODES
    since: int  #: the window it starts in
    since_s: float
    text: str  #: what it says, with its evidence
    detail: str = ""  #: what goes with it (a schedule in the engine's format, its notes as comment lines)
    schedule: str = ""  #: the schedule alone, in the engine's format
    notes: tuple = ()  #: what the schedule's writer noted

    def to_dict(self) -> dict:
        """The verdict as ``--json`` gives it; a schedule also as its own record (``schedule``: the engine's text, that
        text parsed where it is JSON, as vLLM's speculative_config is, and the notes), not only inside ``detail``."""
        import json

        record = None
        if self.schedule:
            try:
                config = json.loads(self.schedule)
            except ValueError:  # SGLang's flags, TensorRT-LLM's YAML: the text is the configuration
                config = None
            record = {"text": self.schedule, "config": config, "notes": list(self.notes)}
        return {
            "kind": self.kind,
            "since": self.since,
            "since_s": self.since_s,
            "text": self.text,
            "detail": self.detail,
            "schedule": record,
        }


@dataclass(frozen=True, eq=False)
class Row:
    """One window with what the model says of it and the verdicts that start in it."""

    index: int
    window: object
    judgement: object  #: None where the window is not usable
    started: tuple  #: verdicts that start in this window
    holding: tuple  #: the kinds that hold at it
    note: str = ""
    #: Where the drift test set its reference in this window: its acceptance length, overdispersion and the windows
    #: within which it flags a drop of the smallest size (None elsewhere).
    drift: dict | None = None

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "window": self.window.to_dict(),
            "model": self.judgement.to_dict() if self.judgement is not None else None,
            "started": [v.to_dict() for v in self.started],
            "holding": list(self.holding),
            "note": self.note,
            "drift": self.drift,
        }


def _extrapolated(proposed: int, measured: float | None) -> str:
    """What a proposed gamma past the draft steps the window measured rests on, as optimal-gamma and schedule say it:
    one rate per token (the alpha of the window's acceptance length) carried past them, which a drafter trained for a
    few steps may not keep."""
    if not measured or proposed <= int(measured):
        return ""
    return (
        f"; gamma {proposed} is past the {int(measured)} draft steps the window's acceptance was measured at: "
        "extrapolated, one rate per token"
    )


class Watcher:
    """The state of a watch: windows so far, the drift test, the verdicts that hold.

    ``judge``: a :class:`~.judge.Judge`; ``detector``: a :class:`~.drift.DropDetector`; ``schedule``: a callable
    (acceptance length, per-position shares, window) -> (text, notes) writing the schedule at that acceptance in the
    engine's format, or None; ``clock``: how a time prints."""

    def __init__(self, judge, detector, schedule=None, min_gain: float = DEFAULT_MIN_GAIN, clock=None):
        self.judge, self.detector, self.schedule = judge, detector, schedule
        self._over_limit_said = False
        self.min_gain = float(min_gain)
        self.clock = clock or (lambda t: f"{t:.0f}")
        self.rows: list = []
        self.holding: dict = {}
        self._drop_until_reference = False
        self._last_schedule = None

    def add(self, window) -> Row:
        """Judge one window (in the order they come), update the verdicts, return its :class:`Row`."""
        return self.add_all([window])[0]

    def add_all(self, windows: list) -> list:
        """:meth:`add` for several windows in order, the model asked once for all of them (a replayed day)."""
        from specsim.watch.judge import window_sd

        first = len(self.rows)
        drift = []  # per window: (sd, drop, reference acceptance length once set, the test where set in it)
        moved: dict = {}  # per window where the draft length moved: what the drift test did
        for k, w in enumerate(windows):
            if w.restarted:
                self.detector.reset()
                drift.append((None, None, None, None))
            elif w.usable:
                sd, was = self.detector.sd(w.drafts), self.detector.ready
                if sd is None and self.detector.measured_phi is not None:  # gathering a new reference (judge.window_sd)
                    sd = window_sd(w, self.detector.measured_phi)
                drop = self.detector.update(first + k, w)
                d = self.detector
                test = (
                    None
                    if was or not d.ready
                    else {
                        "reference": d.mu0,
                        "overdispersion": d.phi,
                        "smallest_drop": d.delta,
                        "windows_to_flag": d.windows_to_flag(w.drafts),
                        "false_alarm_per_window": d.false_alarm,
                        "text": d.describe(w.drafts),
                    }
                )
                drift.append((sd, drop, d.mu0, test))
                if d.moved is not None:
                    moved[k] = (
                        f"the draft length moved from {d.moved[0]:.2f} to {d.moved[1]:.2f} tokens a draft (a per-batch-size "
                        "schedule at another load, say): the acceptance length is not comparable, a new drift reference"
                    )
            else:
                drift.append((None, None, None, None))
        judgements = self.judge.judge(list(windows), [d[0] for d in drift])
        starts = [r.window.start_s for r in self.rows] + [w.start_s for w in windows]
        out = []
        for k, (w, j, (sd, drop, mu0, test)) in enumerate(zip(windows, judgements, drift)):
            index, started, note = first + k, [], "" if test is None else test["text"]
            if w.restarted:
                note = w.notes[0] if w.notes else "the engine restarted"
            elif j is None:
                note = self._why_idle(w)
            else:
                if drop is not None:
                    when = starts[drop.since]
                    how = (
                        f"CUSUM {drop.statistic:.2f} >= {self.detector.h:.2f}"
                        if drop.test == "CUSUM"
                        else f"{drop.test}, z = {drop.statistic:.1f}"
                    )
                    started.append(
                        Verdict(
                            "dropped",
                            drop.since,
                            when,
                            f"acceptance dropped from {drop.before:.3f} to {drop.after:.3f} since {self.clock(when)} "
                            f"(window {drop.since}; flagged in window {index}: {how}, at most one false alarm per "
                            f"{1 / self.detector.false_alarm:,.0f} windows without a change)",
                        )
                    )
                    self._drop_until_reference = True
                elif self._drop_until_reference and mu0 is not None:
                    self._drop_until_reference = False
                    self.holding.pop("dropped", None)
                    note = "a new drift reference; " + note
                started += self._model_verdicts(index, w, j)
                note = "; ".join(n for n in (moved.get(k, ""), note, self._past_the_limit(w)) if n)
            for v in started:
                self.holding[v.kind] = v
            self.rows.append(Row(index, w, j, tuple(started), tuple(self.holding), note, test))
            out.append(self.rows[-1])
        return out

    def _past_the_limit(self, w) -> str:
        """Said once: a window whose engine runs more sequences than the model's max_num_seqs (a calibration's runs'
        limit, or the engine's default, under a server started with more): the model holds the load below what runs."""
        seqs = float(self.judge.limits.seqs(True))
        if self._over_limit_said or w.running is None or w.running <= seqs * 1.05:
            return ""
        self._over_limit_said = True
        return (
            f"the engine runs {w.running:.1f} sequences, more than the max_num_seqs {seqs:g} the model holds it to "
            f"({self.judge.limits.label}): its verdicts hold the load below what runs; give the server's --max-num-seqs"
        )

    def _model_verdicts(self, index, window, j) -> list:
        out = []
        if j.verdict == "costs":
            if "costs" not in self.holding:
                shown = self.judge.error.shown
                if j.costs_below[1] == "never":
                    why = f"no acceptance brings the model's speedup within {shown} of 1"  # at the rate, below
                else:
                    low, high = j.interval  # (a window without an interval is undecided: specsim.watch.judge)
                    even = f" (break-even {j.break_even_length:.3f})" if j.break_even_length is not None else ""
                    why = (
                        f"acceptance length {window.acceptance_length:.3f} [{low:.3f}, {high:.3f}] is below "
                        f"{j.costs_below[0]:.3f}, where the model's speedup is 1 less its error of {shown}{even}"
                    )
                running = (
                    f", {window.running:.1f} running (the model expects {j.running_model:.1f})"
                    if window.running is not None
                    else ""
                )
                other = (
                    f"; gamma {j.best_gamma} would give {j.best_speedup:.3f}"
                    if j.best_gamma and j.best_gamma != j.gamma and j.best_speedup > 1.0
                    else ""
                )
                out.append(
                    Verdict(
                        "costs",
                        index,
                        window.start_s,
                        f"speculation at gamma {j.gamma} costs more than it saves at this load: {why} at "
                        f"{three_figures(window.requests_per_s)} requests/s per replica{running}; the model's speedup "
                        f"{j.speedup:.3f}{other}",
                    )
                )
        elif j.verdict not in ("undecided", "no room"):
            # It pays, or the model cannot tell (too close to call): no longer shown to cost.  A window whose acceptance
            # is not known well enough (undecided), or one the model holds no request of (no room), leaves the verdict
            # as it was.
            self.holding.pop("costs", None)
        # Hysteresis: a change is proposed at min_gain and withdrawn below half of it, so that a gain hovering at the
        # threshold does not start and end the verdict window after window.
        gain = j.best_speedup / j.speedup - 1.0 if j.best_gamma != j.gamma else 0.0
        better = gain >= (self.min_gain / 2.0 if "schedule" in self.holding else self.min_gain)
        last = self._last_schedule
        if better and "schedule" in self.holding and last is not None and last != j.best_gamma and j.speedups:
            # A proposal held: another gamma replaces it only where it beats the proposed one by the same half of
            # min_gain, not where the two trade the first place within noise window after window (6, 5, 6 at a steady
            # load: a review's finding).
            better_than_last = j.speedups[j.best_gamma] / j.speedups[last] - 1.0 >= self.min_gain / 2.0
            key = j.best_gamma if better_than_last else last
        else:
            key = j.best_gamma
        if better:
            if "schedule" not in self.holding or self._last_schedule != key:
                text, detail, written, notes = (
                    (f"gamma {j.best_gamma}" if j.best_gamma else "no speculation"),
                    "",
                    "",
                    [],
                )
                if self.schedule is not None:
                    written, notes = self.schedule(window, j.best_gamma)
                    detail = written + "".join(f"\n# note: {n}" for n in notes)
                out.append(
                    Verdict(
                        "schedule",
                        index,
                        window.start_s,
                        f"the schedule should now be {text} at this load: the model's speedup {j.best_speedup:.3f} "
                        f"against {j.speedup:.3f} at gamma {j.gamma} (acceptance length {window.acceptance_length:.3f})"
                        + _extrapolated(j.best_gamma, window.gamma),
                        detail,
                        written,
                        tuple(notes),
                    )
                )
                self._last_schedule = key
        else:
            self.holding.pop("schedule", None)
            self._last_schedule = None
        return out

    @staticmethod
    def _why_idle(window) -> str:
        from specsim.watch.windows import MIN_DRAFTS

        if window.drafts is not None and window.drafts < 1 and window.requests_per_s:
            # Requests served and not one speculative step: a schedule that turns speculation off at this load
            # (TensorRT-LLM's draft_len_schedule can give 0), or an engine that stopped drafting.
            return (
                f"no speculative step while {three_figures(window.requests_per_s)} requests/s were served: speculation is off at "
                "this load (a draft-length schedule giving 0, or an engine that stopped drafting)"
            )
        if window.drafts is not None and window.drafts < MIN_DRAFTS:
            return f"idle: {window.drafts:.0f} speculating steps (fewer than {MIN_DRAFTS})"
        if not window.requests_per_s:
            if window.drafts:  # drafting, so not idle: the load is what is missing
                return (
                    f"no request finished while {window.drafts:.0f} speculative steps ran: no load to judge by (a "
                    "window shorter than its requests, or a page without the finished-request counter)"
                )
            if window.requests_per_s is None and window.notes:  # not read, rather than none finished
                return window.notes[0]
            return "idle: no request finished"
        if window.acceptance_length is None:
            return "no acceptance in this window" + (f" ({window.notes[0]})" if window.notes else "")
        if window.gamma is None:
            return (  # window_between's gamma, watch's --gamma
                "the page does not say the draft length (no per-position counters or draft-length gauge): "
                f"give {given_as('gamma')}"
            )
        return "no load figures in this window"

    def tally(self) -> dict:
        """Windows judged so far per verdict (:data:`specsim.watch.judge.JUDGEMENTS`, in its order; those with none
        left out)."""
        from specsim.watch.judge import JUDGEMENTS

        seen = [r.judgement.verdict for r in self.rows if r.judgement is not None]
        return {k: seen.count(k) for k in JUDGEMENTS if k in seen}

    def exit_code(self) -> int:
        """The most urgent verdict holding at the last window (:data:`EXIT_CODES`), 0 where none does."""
        codes = [EXIT_CODES[k] for k in self.holding]
        return min(codes) if codes else 0

    def untested_said(self) -> str:
        """The summary's line where no drop could be tested in this watch: no reference was ever set and no drop was
        flagged (a drop found inside the windows gathering the reference was tested, and a reference gathered again
        after a drop is not that); "" otherwise."""
        d = self.detector
        if d.ready or any(r.drift for r in self.rows) or any(v.kind == "dropped" for r in self.rows for v in r.started):
            return ""
        return (
            f"no reference set: {d.collected} usable window(s) of the {d.reference} it needs ({given_as('reference')}; "
            "counted since "
            "the engine last restarted), so no drop could be tested"
        )


def schedule_writer(dep, judge, names, release: tuple, shown: str, draft_checkpoint: str | None = None):
    """The :class:`Watcher`'s ``schedule``: (window) -> (the schedule at the window's acceptance and lengths in the
    engine's own format, notes).  Each window's acceptance (the alpha of its acceptance length at the gamma in use, as
    the judge weighs it, and the judge's KV cache share) is solved at the closed-loop loads
    :data:`specsim.core.defaults.DEFAULT_BATCHES` by the serving model
    (:func:`specsim.answers.load.load_answer`), keyed by decode batch (:func:`specsim.speculation.schedule.load_schedule`)
    and written for the engine and ``release`` the metrics are of (``names``; ``shown`` as the output names it), with the
    drafter's checkpoint (``draft_checkpoint``, else the drafter's known one)."""
    from specsim.answers import deployment_capacity, scheduled_batches
    from specsim.answers.load import load_answer, request_lengths
    from specsim.core.defaults import DEFAULT_BATCHES
    from specsim.core.limits import MAX_BATCH
    from specsim.engines import REGISTRY
    from specsim.speculation.acceptance import alpha_from_acceptance_length
    from specsim.speculation.schedule import load_schedule

    def write(window, proposed: int | None = None):
        # The acceptance the verdict weighed every gamma at (Judge.judge): the alpha of the window's acceptance length.
        # Per-position counts stop at the gamma in use, so a schedule from them could not reach the longer gamma a
        # verdict proposes: the two would disagree.
        gamma = min(int(window.gamma), judge.gamma_max)  # the gamma in use as the judge reads it (Judge.judge)
        alpha = float(alpha_from_acceptance_length(min(window.acceptance_length, gamma + 1.0), gamma))
        acc, flag = alpha, f"--alpha {alpha:.3f}"
        weighed = []
        if window.per_position:
            weighed.append(
                f"the window's per-position counts cover positions 1-{len(window.per_position)}; every gamma is "
                f"weighed at the alpha of its acceptance length, {alpha:.3f}, as the verdict is"
            )
        try:
            answer = load_answer(
                dep,
                acc,
                "watched",
                "concurrency",
                list(DEFAULT_BATCHES),
                window.input_tokens,
                window.output_tokens,
                gamma_max=judge.gamma_max,
                limits=judge.limits,
                memory_utilization=judge.memory_utilization,
            )
            # up to the batch the schedule command runs to at these lengths (scheduled_batches), which it is named by
            cap = deployment_capacity(
                dep,
                request_lengths(round(window.input_tokens), round(window.output_tokens)).context_tokens,
                None,
                judge.memory_utilization,
                judge.limits.max_batched_tokens,
                judge.limits.max_num_seqs,
            )
            most = scheduled_batches(cap, min(int(judge.limits.seqs(True)), MAX_BATCH))
            ranges = load_schedule(answer, most, 1.0)
            dep.drafter.support(names.engine, release)
            checkpoint = dep.drafter.checkpoint(dep.target, draft_checkpoint)
            text, notes = REGISTRY[names.engine].render_schedule(ranges, dep, checkpoint, release, 1.0, most)
        except ValueError as err:
            return f"# no {shown} configuration: {err}", []
        running = window.running
        at = next((r for r in ranges if running is not None and r.start_batch <= round(running) <= r.end_batch), None)
        if proposed is not None and at is not None and at.gamma != proposed:
            # The verdict is this load's own best; the schedule never rises with the batch and keys closed loops by the
            # batch they decode (load_schedule), so at the batch running now it can give another gamma: said.
            weighed.append(
                f"at the {round(running)} sequences running now specsim's schedule gives gamma {at.gamma}, not the "
                f"verdict's {proposed}: a schedule's gamma never rises with the batch, and it is fitted over every load, "
                "the verdict at this one"
            )
        again = (
            f"specsim schedule --concurrency {flag} --input-len {window.input_tokens:.0f} --output-len "
            f"{window.output_tokens:.0f} --format {names.engine} --engine {shown.replace(' ', '@')}"
        )
        return text, notes + weighed + [
            f"the same from: {again} (with this command's --target, --draft, --hardware, --calibration, "
            "--max-num-seqs, --max-batched-tokens or --memory-util)"
        ]

    return write
