"""Benchmark runs as the fit sees them: what each ran with, which sweep its acceptance is shared with, and what no
engine could have measured.

A run (:class:`CalRun`) is a benchmark file's run (:class:`~specsim.calibration.bench_files.BenchRun`: its load, its
mean prompt and output lengths, the latencies and throughput its tool recorded) and what it ran with
(:class:`SpecSetup`: draft steps, tree width, pinned acceptance).  Its model is the serving model's
(:mod:`specsim.calibration.model`, on :mod:`specsim.serving.steady`): the run is predicted from its load and lengths, never
from its own measured duration or TPOT.

Sweeps
    A drafter's acceptance is a property of the drafter and what it is asked, not of the load or of the file a run was
    saved in: runs of one deployment and dataset share one acceptance rate, whatever files they come in and whatever
    their number of draft steps (the per-token rate, E(alpha, s) = 1 + alpha + ... + alpha^s at s steps).
    :func:`group_sweeps` groups the speculative runs that way: by the model they name, the dataset they name where
    they name one, and their mean prompt and output lengths within :data:`SAME_LENGTHS` of each other (``lengths``,
    the default), by file (``file``), or all in one (``all``); a bench-plan names its own.  The grouping is printed, and ``--sweep-by`` overrides it.  A run that
    records no acceptance where others of its sweep do takes theirs (:func:`with_sweep_acceptance`): a rate is fitted
    only for a sweep that records none.  Where its sweep's deeper runs recorded per-position acceptance, a run at fewer
    steps takes 1 + the sum of their first shares, the same drafter's acceptance there, exactly.

Runs that no engine could have produced are refused before any fit (:func:`check_runs`, :func:`check_design`), and
:func:`identifiable` says which terms a set of runs can separate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from specsim.calibration.bench_files import LITTLE_SLACK, BenchRun
from specsim.core.names import given_as
from specsim.core.words import by_number, counted

__all__ = [
    "nudged_runs",
    "ALPHA_BOUNDS",
    "POOLED_BASES",
    "SWEEP_RULES",
    "CalRun",
    "SpecSetup",
    "check_design",
    "check_runs",
    "group_sweeps",
    "identifiable",
    "load_key",
    "model_key",
    "prompt_spreads",
    "alike",
    "over",
    "pooled_alpha",
    "pooled_shares",
    "told_acceptance",
    "unpaired_loads",
    "unpaired_said",
    "verifications",
    "with_prompt_spreads",
    "with_sweep_acceptance",
]

#: Bounds of a fitted per-token acceptance rate.
ALPHA_BOUNDS = (0.01, 0.99)
#: Decode batches closer than this ratio cannot tell a per-sequence term (or an efficiency) from a constant.
SPREAD = 1.5
#: A recorded acceptance length further than this from the pinned one says the pin did not take.
PIN_TOLERANCE = 0.10
#: Runs whose mean prompt and output lengths are within this share of each other ran one dataset (random datasets are
#: exact; real ones vary a few percent between runs as the prompts a run draws differ).
SAME_LENGTHS = 0.10
#: How speculative runs are grouped into sweeps that share one acceptance.
SWEEP_RULES = ("lengths", "file", "all")


@dataclass(frozen=True)
class SpecSetup:
    """What a speculative run ran with: draft steps per round, tokens per step, tokens verified per sequence, the
    acceptance length the engine was made to produce (None: real acceptance), the sweep its acceptance is shared
    with (set by :func:`group_sweeps` or a bench plan), and the standard deviation of the acceptance rate across its
    prompts (what an offline batch's slowest request waits for, :func:`specsim.serving.rounds.decode_rounds_spread`;
    0: every prompt alike)."""

    steps: int
    topk: int = 1
    verify_tokens: int | None = None
    pinned_accept_length: float | None = None
    sweep: str | None = None
    acceptance_spread: float = 0.0
    #: A run that records no acceptance where its sweep's other runs do: the length they give at its steps
    #: (:func:`with_sweep_acceptance`; None: recorded, pinned, or recorded nowhere in its sweep, so fitted)
    sweep_accept_length: float | None = None
    #: How :attr:`sweep_accept_length` was taken from the sweep's records (a key of :data:`POOLED_BASES`; None: not)
    sweep_accept_basis: str | None = None
    #: Who gave :attr:`steps`, where not the caller's ``steps`` (``--steps``): a bench plan's row, named
    steps_from: str | None = None

    @property
    def steps_said(self) -> str:
        """Where the steps came from, as a refusal names it: ``--steps``, or the plan's row."""
        return self.steps_from or given_as("steps")

    @property
    def steps_remedy(self) -> str:
        """What to do where the runs are of other steps than given."""
        if self.steps_from is not None:
            return f"correct {self.steps_from}'s steps, or rerun it"
        return f"give {given_as('steps')} as the runs used"

    @property
    def verify(self) -> int:
        return self.steps + 1 if self.verify_tokens is None else self.verify_tokens

    @property
    def max_accept_length(self) -> int:
        """The most tokens one verification can yield: every draft step's token accepted, plus the target's own."""
        return self.steps + 1


@dataclass(frozen=True)
class CalRun:
    """A benchmark run and what it ran: ``setup`` None for a plain run."""

    run: BenchRun
    setup: SpecSetup | None = None

    @property
    def kind(self) -> str:
        return "plain" if self.setup is None else "spec"

    @property
    def sweep(self) -> str:
        return (self.setup.sweep if self.setup is not None and self.setup.sweep else None) or self.run.path

    @property
    def known_accept_length(self) -> float | None:
        """Tokens per verification the engine was pinned at or recorded (None: the fit finds it; 1 for a plain run)."""
        if self.setup is None:
            return 1.0
        if self.setup.pinned_accept_length is not None:
            return self.setup.pinned_accept_length
        return self.run.accept_length if self.run.accept_length is not None else self.setup.sweep_accept_length


def load_key(load: str) -> tuple:
    """Sort key of a load label: concurrencies by number, then rates, then offline batches.

    >>> sorted(["rate 2/s", "batch 8", "concurrency 16", "concurrency 4"], key=load_key)
    ['concurrency 4', 'concurrency 16', 'rate 2/s', 'batch 8']
    """
    kind, _, value = load.partition(" ")
    number = value.rstrip("/s")
    try:
        x = float("inf") if number == "inf" else float(number)
    except ValueError:
        x = float("inf")
    return ({"concurrency": 0, "rate": 1}.get(kind, 2), x, load)


def model_key(name: str) -> str:
    """One spelling of a model name: a Hugging Face ID or a local folder's last part, case folded, 'Meta-' dropped
    (meta-llama/Meta-Llama-3.1-8B-Instruct and meta-llama/Llama-3.1-8B-Instruct are one model)."""
    last = name.rstrip("/").split("/")[-1].lower()
    return last[len("meta-") :] if last.startswith("meta-") else last


def prompt_spreads(runs: list[CalRun]) -> dict[str, tuple[float, int]]:
    """Each sweep's spread of acceptance across its prompts, where its speculative runs include requests measured one
    at a time with their acceptance length (offline batches of one): (the rate's standard deviation across prompts,
    :func:`specsim.speculation.acceptance.prompt_spread` per step count and averaged over step counts; the requests
    it was read from).  Part of the recorded acceptance, as the rate is."""
    from specsim.speculation.acceptance import prompt_spread

    singles: dict = {}
    for c in runs:
        if c.setup is not None and c.run.load == "batch 1" and c.run.accept_length is not None:
            _check_accept_lengths(c)  # each request's own line, before the spread reads them together
            singles.setdefault((c.sweep, c.setup.steps), []).append(c.run)
    per: dict = {}
    for (sweep, steps), rs in singles.items():
        if len(rs) >= 2:
            spread = prompt_spread([r.accept_length for r in rs], [r.output_tokens for r in rs], steps)[1]
            per.setdefault(sweep, []).append((spread, len(rs)))
    return {sweep: (float(np.mean([v for v, _ in got])), sum(n for _, n in got)) for sweep, got in per.items()}


def with_prompt_spreads(runs: list[CalRun], given: float | None = None) -> tuple[list[CalRun], list[str]]:
    """(runs, notes): every speculative run given the spread of acceptance across its sweep's prompts: ``given`` (the
    user's), else the one its own single-request runs record (:func:`prompt_spreads`), else 0; the notes say which,
    where an offline batch, which waits for its slowest request, is among the runs."""
    import dataclasses

    recorded = {} if given is not None else prompt_spreads(runs)
    out = []
    for c in runs:
        if c.setup is not None:
            value = given if given is not None else recorded.get(c.sweep, (0.0, 0))[0]
            c = dataclasses.replace(c, setup=dataclasses.replace(c.setup, acceptance_spread=value))
        out.append(c)
    notes = []
    if any(c.setup is not None and c.run.kind == "batch" for c in out):
        if given is not None:
            notes.append(f"acceptance spread across prompts: {given:g} ({given_as('acceptance_spread')})")
        for sweep, (value, n) in recorded.items():
            notes.append(
                f"acceptance spread across prompts of sweep {sweep}: {value:.3f}, from {n} requests measured one at a "
                "time (their acceptance lengths, less what chance gives each)"
            )
        unread = list(dict.fromkeys(c.sweep for c in out if c.setup is not None and c.sweep not in recorded))
        if given is None and unread:
            # named by sweep where another sweep's spread was read from its files: a bare "0 assumed" read as its denial
            which = f" of sweep{'s' if len(unread) > 1 else ''} {'; '.join(unread)}" if recorded else ""
            notes.append(
                f"acceptance spread across prompts{which}: 0 assumed (every prompt accepts alike; "
                f"{given_as('acceptance_spread')}): an "
                "offline batch waits for its slowest request, and prompts that accept less are slower, so with a "
                "real spread the speculative runs take longer than this fit's model says"
            )
    return out, notes


#: How a run that records no acceptance takes its sweep's (:func:`_pooled_length`), as outputs say it.
POOLED_BASES = {
    "same steps": "the tokens per verification of the sweep's runs at its draft steps, pooled",
    "per position": "1 + the sum of the first (its draft steps) per-position acceptance shares the sweep's deeper runs "
    "recorded, pooled: exact for a drafter that proposes the same tokens",
    "chain": "the chain at the per-token rate of the sweep's runs (one rate at every position, assumed)",
}


def verifications(run: BenchRun) -> float:
    """The verifications a run with a recorded acceptance length made: its output tokens over that length (what a
    sweep's pooling weighs each run by, :func:`pooled_alpha`)."""
    return run.output_tokens * max(run.completed, 1) / run.accept_length


def told_acceptance(runs: list[CalRun], use: np.ndarray | None = None) -> dict[str, list[tuple]]:
    """sweep -> what its recorded chain runs among ``use`` (a mask; default all) record: (steps, acceptance length,
    verifications, per-position shares or None) each, the verifications their output tokens over the length.  A pinned
    run's length is what the engine was made to produce and a tree's is not a chain's, so neither is among them."""
    use = np.ones(len(runs), dtype=bool) if use is None else np.asarray(use, dtype=bool)
    told: dict[str, list] = {}
    for c, u in zip(runs, use):
        s, r = c.setup, c.run
        if u and s is not None and s.topk == 1 and s.pinned_accept_length is None and r.accept_length is not None:
            told.setdefault(c.sweep, []).append((s.steps, r.accept_length, verifications(r), r.per_position))
    return told


def pooled_alpha(told: list[tuple]) -> float:
    """The per-token rate of a sweep's recorded runs ``told`` (:func:`told_acceptance`): the mean of each run's
    (:func:`~specsim.speculation.acceptance.alpha_from_acceptance_length` of its length at its steps) weighted by its
    verifications, as a sweep shares one rate at any number of steps.

    >>> round(pooled_alpha([(1, 1.5, 100.0, None), (1, 1.9, 300.0, None)]), 3)
    0.8
    """
    from specsim.speculation.acceptance import alpha_from_acceptance_length

    alphas = alpha_from_acceptance_length([t[1] for t in told], [t[0] for t in told])
    weights = np.array([t[2] for t in told])
    return float(np.sum(alphas * weights) / np.sum(weights))


def pooled_shares(told: list[tuple], depth: int) -> tuple[np.ndarray, int] | None:
    """(c_1..c_depth, runs) pooled over a sweep's recorded runs ``told`` (:func:`told_acceptance`) whose per-position
    shares reach ``depth``: each position's share weighted by the run's verifications (its drafts), what the engine's
    counters say of those runs as one; None where none reaches it.

    >>> pooled_shares([(3, 2.2, 100.0, (0.7, 0.4, 0.1)), (2, 2.1, 300.0, (0.7, 0.4))], 2)[0].tolist()
    [0.7, 0.4]
    """
    deeper = [(np.asarray(t[3][:depth], dtype=float), t[2]) for t in told if t[3] is not None and len(t[3]) >= depth]
    if not deeper or depth < 1:
        return None
    return sum(c * v for c, v in deeper) / sum(v for _, v in deeper), len(deeper)


def _pooled_length(told: list[tuple], steps: int) -> tuple[float, str]:
    """(acceptance length, basis: a key of :data:`POOLED_BASES`) at ``steps`` draft steps that a sweep's recorded runs
    ``told`` (:func:`told_acceptance`) give: where some ran at ``steps``, their tokens per verification pooled (their
    output tokens over their verifications, what the engine's counters say of them as one run); else, where some ran
    deeper and recorded per-position shares, 1 + the sum of the first ``steps`` of those shares pooled over them (the
    share of all their drafts whose token at each position was accepted: a chain drafter proposes the same first
    ``steps`` tokens whatever its depth, so this is what it accepts at ``steps``, with no assumption on the shape); else
    the chain at their per-token rate (:func:`pooled_alpha`).

    >>> _pooled_length([(3, 2.5, 100.0, None), (3, 3.0, 300.0, None)], 3)
    (2.875, 'same steps')
    >>> round(_pooled_length([(1, 1.5, 100.0, None)], 3)[0], 4)
    1.875
    >>> _pooled_length([(3, 2.2, 100.0, (0.7, 0.4, 0.1))], 2)
    (2.1, 'per position')
    """
    from specsim.speculation.acceptance import Acceptance, tokens_per_round

    same = [(t[1], t[2]) for t in told if t[0] == steps]
    if same:
        return sum(length * v for length, v in same) / sum(v for _, v in same), "same steps"
    shares = pooled_shares(told, steps)
    if shares is not None:
        return float(tokens_per_round(Acceptance(cumulative=tuple(shares[0])), steps)), "per position"
    return float(tokens_per_round(pooled_alpha(told), steps)), "chain"


def with_sweep_acceptance(runs: list[CalRun], use: np.ndarray | None = None) -> list[CalRun]:
    """``runs`` with each speculative chain run that records no acceptance (nor is pinned) given its sweep's, from the
    recorded chain runs of that sweep among ``use`` (a mask; default all; :func:`told_acceptance`): a sweep has one
    acceptance (issue 35), so none is fitted where it is recorded.  A held-out fit passes its training runs as ``use``:
    a left-out load's or step count's acceptance is then taken from the other runs' records (:func:`_pooled_length`
    says how they are pooled, and :attr:`SpecSetup.sweep_accept_basis` which way each run took)."""
    import dataclasses

    told = told_acceptance(runs, use)
    out = []
    for c in runs:
        s = c.setup
        if s is not None:
            free = s.topk == 1 and s.pinned_accept_length is None and c.run.accept_length is None
            value, basis = _pooled_length(told[c.sweep], s.steps) if free and c.sweep in told else (None, None)
            if (value, basis) != (s.sweep_accept_length, s.sweep_accept_basis):
                c = dataclasses.replace(
                    c, setup=dataclasses.replace(s, sweep_accept_length=value, sweep_accept_basis=basis)
                )
        out.append(c)
    return out


def group_sweeps(runs: list[CalRun], by: str = "lengths") -> tuple[list[CalRun], list[str]]:
    """(runs, lines saying how they were grouped): each speculative run without a sweep of its own (a bench plan names
    one) joins the first sweep whose model matches (a run naming none matches any), whose dataset matches where both
    files name one (:attr:`BenchRun.dataset`: vLLM's --metadata dataset=NAME, SGLang's
    --dataset-name, GuideLLM's data; a run naming none matches any) and whose mean prompt and output lengths are both
    within :data:`SAME_LENGTHS` of its (``by="lengths"``), one sweep per file (``"file"``) or one for all (``"all"``)."""
    import dataclasses

    if by not in SWEEP_RULES:
        raise ValueError(f"{given_as('sweep_by')} {by!r}; choose {', '.join(SWEEP_RULES)}")
    groups: list[tuple[str, float, float, str, str | None]] = []  # (model, prompt, output, name, dataset)
    ruled: set = set()  # the sweeps the lengths rule made (a bench plan's are named by the plan)
    out = []
    for c in runs:
        if c.setup is None or c.setup.sweep:
            out.append(c)
            continue
        r = c.run
        if by == "file":
            name = r.name
        elif by == "all":
            name = "all speculative runs"
        else:
            model = model_key(r.model) if r.model else ""
            # (a run that names no model is of the one deployment: runs naming two models are refused, check_runs)
            name = next(
                (
                    g[3]
                    for g in groups
                    if (model == g[0] or "" in (model, g[0]))
                    and (r.dataset == g[4] or None in (r.dataset, g[4]))
                    and alike(r.prompt_tokens, r.output_tokens, g[1], g[2])
                ),
                None,
            )
            if name is None:
                name = (
                    (f"{r.dataset}: " if r.dataset else "")
                    + f"{r.prompt_tokens:.0f} in / {r.output_tokens:.0f} out"
                    + (f" ({r.model})" if r.model else "")
                )
                groups.append((model, r.prompt_tokens, r.output_tokens, name, r.dataset))
            ruled.add(name)
        out.append(dataclasses.replace(c, setup=dataclasses.replace(c.setup, sweep=name)))
    lines = []
    for name in dict.fromkeys(c.sweep for c in out if c.setup is not None):
        members = [c for c in out if c.setup is not None and c.sweep == name]
        told = [c.run.accept_length is not None or c.setup.pinned_accept_length is not None for c in members]
        if any(told) and not all(told):  # a plain file given with --spec records none (a study may mix, as the H100's)
            silent = by_number({c.run.name for c, t in zip(members, told) if not t})
            pooled = any(c.setup.sweep_accept_length is not None for c in with_sweep_acceptance(members))
            lines.append(
                f"{', '.join(silent[:3])}{', ...' if len(silent) > 3 else ''}: no acceptance recorded, where the other "
                f"speculative runs of sweep {name} record one; "
                + (
                    "it takes theirs (at its draft steps, their tokens per verification pooled; at fewer steps than "
                    "their per-position shares cover, the sum of those shares; at other steps, the chain at their "
                    "per-token rate), none fitted"
                    if pooled
                    else "theirs are pinned or trees', so one acceptance is fitted for the runs without"
                )
                + f": if it is a plain run given as {given_as('spec_groups', '--spec')}, drop it"
            )
        files = by_number({c.run.name for c in members})
        steps = sorted({c.setup.steps for c in members})
        lines.append(
            f"sweep {name}: {len(members)} speculative runs at {', '.join(map(str, steps))} draft steps from "
            f"{counted(len(files), 'file')} ({', '.join(files[:3])}{', ...' if len(files) > 3 else ''}); one acceptance"
            + (_told_apart(members, name) if name in ruled else "")
        )
    return out, lines


def _told_apart(members: list[CalRun], name: str) -> str:
    """What the line of a sweep ``name`` grouped by the lengths rule says of its dataset: that its files name it (the
    names its own name does not already give), or that they name none, so that datasets of alike lengths are not told
    apart."""
    named = sorted({c.run.dataset for c in members if c.run.dataset})
    unsaid = [d for d in named if not name.startswith(f"{d}: ")]
    if unsaid:
        return f"; dataset as the files name it: {', '.join(unsaid)}"
    if named:
        return "; the files name its dataset, which sets it apart from others of alike lengths"
    return (
        "; the files name no dataset (vLLM: --metadata dataset=NAME), so datasets of alike lengths are not "
        f"told apart ({given_as('sweep_by')} file separates them)"
    )


# -- what no engine could have measured ---------------------------------------------------------------------------
def _check_accept_lengths(c: CalRun, whole_drafts: bool = False) -> None:
    """Refuse a speculative run whose recorded or pinned acceptance length its draft steps cannot give, naming it; and,
    with ``whole_drafts`` (a drafter that proposes every draft step each round), one whose counters give a whole draft
    step fewer at every draft."""
    r, setup = c.run, c.setup
    for value, what in (
        (r.accept_length, "an acceptance length"),
        (setup.pinned_accept_length, "a pinned acceptance length"),
    ):
        if value is not None and not 1.0 <= value <= setup.max_accept_length + 1e-9:
            raise ValueError(
                f"{r.where}: {what} of {value:g} tokens per verification is outside [1, "
                f"{setup.max_accept_length}]: {setup.steps} draft steps accept at most {setup.steps} "
                "tokens plus the target's own"
            )
    if r.per_position is not None and setup.topk == 1 and len(r.per_position) != setup.steps:
        # vLLM counts one position per configured draft token (vllm/v1/spec_decode/metrics.py 0.34.0 L252-262)
        raise ValueError(
            f"{r.where}: the file records per-position acceptance at {len(r.per_position)} positions, but the run "
            f"drafts {setup.steps} steps ({setup.steps_said}): the engine counts one per configured draft token, so the file is "
            f"of {len(r.per_position)} steps"
        )
    per_draft, most = r.draft_tokens_per_draft, setup.verify - 1
    _check_rate(r, setup, whole_drafts)
    if per_draft is not None and per_draft > most * 1.005:  # (to 0.5%, as the counters' other checks)
        raise ValueError(
            f"{r.where}: spec_decode_draft_tokens / spec_decode_num_drafts = {per_draft:.6g} draft tokens a draft, "
            f"but {setup.steps} draft steps ({setup.steps_said}) propose at most {most}: the file is of more steps "
            f"({setup.steps_remedy})"
        )
    # vLLM's scheduler cuts a request's drafts to the token budget and its positions left (v1/core/sched/scheduler.py,
    # 0.24.0 L583-594), so a run of K steps can count a little under K a draft, never a whole step under at every draft.
    # A drafter that proposes a depth per request (suffix decoding, DSpark) or a match's length (n-gram) counts fewer.
    if whole_drafts and per_draft is not None and most > 1 and per_draft <= (most - 1) * 1.005:
        raise ValueError(
            f"{r.where}: spec_decode_draft_tokens / spec_decode_num_drafts = {per_draft:.6g} draft tokens a draft, "
            f"but {setup.steps} draft steps ({setup.steps_said}) propose {most}, cut only where the token budget or the "
            f"model's positions run out: the file is of fewer steps ({setup.steps_remedy})"
        )


def _check_rate(r, setup, whole_drafts: bool) -> None:
    """Refuse a run whose acceptance rate (accepted over drafted tokens, vLLM's spec_decode_acceptance_rate, where the
    file has no counts to check it by) its acceptance length (1 + accepted over drafts) cannot give at its draft steps:
    a draft proposes at most ``most`` tokens, so the rate is at least 100 (L - 1) / most; a drafter that proposes every
    step proposes more than ``most - 1`` a draft (the check on the counts below), so at most 100 (L - 1) / (most - 1)
    (at one step, exactly 100 (L - 1)).
    Half a point either way, as :func:`specsim.calibration.bench_files._check_fields` allows a rate written rounded.
    A file with a rate that contradicted its length had been fitted on the length, the rate unread."""
    rate, al, most = r.acceptance_rate_pct, r.accept_length, setup.verify - 1
    if rate is None or al is None or r.accept_length_page is not None or most < 1:
        return
    low = 100.0 * (al - 1.0) / most
    high = (100.0 * (al - 1.0) / (most - 1) if most > 1 else low) if whole_drafts else 100.0
    if not low - 0.5 <= rate <= min(high, 100.0) + 0.5:
        allowed = f"{low:.3g}%" if high <= low * 1.0005 else f"{low:.3g}-{min(high, 100.0):.3g}%"
        raise ValueError(
            f"{r.where}: spec_decode_acceptance_rate {rate:g}% but an acceptance length of {al:g} at {setup.steps} "
            f"draft steps ({setup.steps_said}) gives {allowed} (accepted over drafted tokens, a draft of at most "
            f"{most}{f' and more than {most - 1}' if whole_drafts else ''} tokens): these fields are not "
            "of one run, or not of these steps"
        )


def check_runs(dep, runs: list[CalRun]) -> None:
    """Refuse runs that break a physical limit, one line naming the run, the field and the limit: acceptance past
    what the draft steps allow or off its pin, more sequences decoding than the load lets in (Little's law), a context
    past the model's positions, weights that do not fit the GPUs.  A measured time is never refused on an efficiency
    estimate: where the model cannot reach it, the fit says so (:mod:`specsim.calibration.engine_fit`)."""
    from specsim.serving.capacity import capacity

    target = dep.target
    limit = target.max_position_embeddings
    cap = capacity(dep, 1)
    if not cap.target_fits:
        raise ValueError(
            f"{target.name} ({target.weight_bytes / 1e9:.1f} GB of weights per GPU at TP {target.tp}) does not fit in "
            f"{dep.hardware.name}'s {dep.hardware.memory_bytes / 1e9:.0f} GB: no run could have served it; check "
            f"{given_as('hardware')} and {given_as('tp')}"
        )
    if dep.drafter is not None and not cap.both_fit:
        raise ValueError(
            f"{target.name} with {dep.drafter.name} does not fit in {dep.hardware.name}'s "
            f"{dep.hardware.memory_bytes / 1e9:.0f} GB: no speculative run could have served them"
        )
    for c in runs:
        r = c.run
        if limit and r.prompt_tokens + r.output_tokens > limit:
            raise ValueError(
                f"{r.where}: a mean request of {r.prompt_tokens + r.output_tokens:,.0f} tokens (prompt plus output) "
                f"is past {target.name}'s max_position_embeddings ({limit:,}): these runs are not of this model"
            )
        if r.concurrency is not None and r.decode_batch is not None and r.decode_batch > LITTLE_SLACK * r.concurrency:
            raise ValueError(
                f"{r.where}: duration, TPOT and output tokens give {r.decode_batch:.4g} sequences decoding at once "
                f"(Little's law) at {r.load}: more than the load lets in, so these fields are not of one run"
            )
        if c.setup is None:
            continue
        _check_accept_lengths(c, whole_drafts=dep.drafter is not None and dep.drafter.drafts_every_step)
        al, setup = r.accept_length, c.setup
        if (
            al is not None
            and setup.pinned_accept_length is not None
            and abs(al / setup.pinned_accept_length - 1) > PIN_TOLERANCE
        ):
            raise ValueError(
                f"{r.where}: the file records an acceptance length of {al:.2f} but the run was pinned at "
                f"{setup.pinned_accept_length:.2f}: the engine did not apply the pinned acceptance"
            )


def identifiable(runs: list[CalRun], fit_scale: bool, batches: dict | None = None) -> dict[str, str]:
    """Which terms the design of ``runs`` can separate: name -> "" where it can be fitted, else why it cannot.

    ``batches`` maps a run's index in ``runs`` to its decode batch (the serving model's, from its load); without it, the
    load's own number (users or requests at once) stands in."""

    def batch(i, c):
        return batches[i] if batches is not None else c.run.load_value

    plain = [batch(i, c) for i, c in enumerate(runs) if c.kind == "plain"]
    spec = [(batch(i, c), c) for i, c in enumerate(runs) if c.kind == "spec"]
    out = {"iteration_s": "" if plain else "no plain runs"}
    prompts = [c.run.prompt_tokens for c in runs if c.kind == "plain"]

    def spread(values) -> bool:
        return len(values) > 1 and max(values) / max(min(values), 1e-9) >= SPREAD

    if not fit_scale:
        out["scale"] = "the step-time source is bare GPU time (no efficiency to fit)"
    else:
        out["scale"] = "" if spread(plain) else "the plain runs' decode batches are less than 1.5x apart"
    if not spread(plain):
        out["iteration_seq_s"] = "the plain runs' decode batches are less than 1.5x apart"
    elif fit_scale and not spread([p + 1 for p in prompts]):
        out["iteration_seq_s"] = (
            "the plain runs are at one prompt length: a time per sequence cannot be told from the KV-cache reads"
        )
    else:
        out["iteration_seq_s"] = ""
    ttft = [
        c.run.load_value for c in runs if c.kind == "plain" and c.run.ttft_s is not None and c.run.prompt_tokens > 0
    ]
    out["prefill_scale"] = "" if len(set(ttft)) >= 2 else "no plain runs record a TTFT at two loads"
    if not spec:
        return out
    steps = sorted({c.setup.steps for _, c in spec})
    out["round_s"] = ""
    two_steps = len(steps) > 1
    out["step_s"] = "" if two_steps else f"the speculative runs are at one number of draft steps ({steps[0]})"
    out["seq_s"] = (
        "" if spread([b for b, _ in spec]) else "the speculative runs' decode batches are less than 1.5x apart"
    )
    by_steps = [[b for b, c in spec if c.setup.steps == s] for s in steps]
    if not two_steps:
        out["seq_step_s"] = out["step_s"]
    elif sum(spread(b) for b in by_steps) < 2:
        out["seq_step_s"] = "fewer than two step counts have runs at decode batches at least 1.5x apart"
    else:
        out["seq_step_s"] = ""
    return out


def alike(prompt: object, output: object, prompt_ref: object, output_ref: object):
    """Whether mean prompt and output lengths are within :data:`SAME_LENGTHS` of a reference's (one dataset), elementwise:
    the one test of sweeps (:func:`group_sweeps`), of a speedup's plain runs (:func:`over`) and of a calibration's
    record of its runs' lengths."""
    p, o = np.asarray(prompt, dtype=float), np.asarray(output, dtype=float)
    return (np.abs(p / np.maximum(np.asarray(prompt_ref, dtype=float), 1.0) - 1) <= SAME_LENGTHS) & (
        np.abs(o / np.asarray(output_ref, dtype=float) - 1) <= SAME_LENGTHS
    )


def over(plain, spec) -> bool:
    """Whether a speculative run's speedup is over plain run ``plain`` (both :class:`BenchRun`): the same load and
    observable, and mean prompt and output lengths within :data:`SAME_LENGTHS` of each other (one dataset)."""
    return (
        plain.load == spec.load
        and plain.observable == spec.observable
        and bool(alike(plain.prompt_tokens, plain.output_tokens, spec.prompt_tokens, spec.output_tokens))
    )


def unpaired_loads(runs: list[CalRun]) -> list[str]:
    """The loads of speculative runs that no plain run is at with their lengths (:func:`over`): those runs are fitted
    with the others (the plain terms come from the other loads or lengths), and give no speedup, having nothing to be
    one over."""
    return sorted({c.run.load for c in _unpaired(runs)}, key=load_key)


def _unpaired(runs: list[CalRun]) -> list[CalRun]:
    plain = [c.run for c in runs if c.kind == "plain"]
    return [c for c in runs if c.kind == "spec" and not any(over(p, c.run) for p in plain)]


def unpaired_said(runs: list[CalRun]) -> list[str]:
    """:func:`unpaired_loads` as the notes say them: a load, where every speculative run at it is unpaired; else the
    load with the runs that are (the others there have their plain runs, and their speedups are given)."""
    alone = _unpaired(runs)
    out = []
    for load in unpaired_loads(runs):
        there = [c for c in runs if c.kind == "spec" and c.run.load == load]
        mine = [c.run.where for c in alone if c.run.load == load]
        out.append(load if len(mine) == len(there) else f"{load} ({len(mine)} of its {len(there)}: {', '.join(mine)})")
    return out


def check_one_model(runs: list[CalRun]) -> None:
    """Refuse runs whose files name different models (by :func:`model_key`), each model said with how many runs name
    it and where the first does: one line of a file of twelve can be another model's."""
    models: dict[str, list] = {}
    for c in runs:
        if c.run.model:
            models.setdefault(model_key(c.run.model), []).append(c.run)
    if len(models) > 1:
        said = sorted(
            f"{group[0].model} ({len(group)} run{'s' * (len(group) > 1)}: {group[0].where}"
            + (", ..." if len(group) > 1 else "")
            + ")"
            for group in models.values()
        )
        raise ValueError("the runs name different models: " + ", ".join(said) + "; fit one deployment at a time")


def check_design(dep, runs: list[CalRun]) -> None:
    """Refuse what cannot be fitted together: no plain runs, runs at one load only, plain runs that report speculation, runs of different models or engines, a speculative run without
    a drafter, a tree without its acceptance, files of one sweep at different steps that say they are one."""
    plain = [c for c in runs if c.kind == "plain"]
    spec = [c for c in runs if c.kind == "spec"]
    if not plain:
        raise ValueError(
            f"no plain runs: the fit needs a benchmark without speculation at each load ({given_as('plain')} FILE)"
        )
    if len({c.run.load for c in runs}) < 2:
        raise ValueError(
            f"every run is at one load ({runs[0].run.load}): nothing tells a per-iteration time from the rest "
            "and nothing can be held out; benchmark at two or more loads (concurrencies or request rates)"
        )
    if len({c.run.load for c in plain}) < 2:  # (speculative runs at other loads have no plain terms to stand on)
        raise ValueError(
            f"the plain runs are all at one load ({plain[0].run.load}): nothing tells the per-iteration time from the "
            "step's; benchmark without speculation at two or more loads (concurrencies or request rates)"
        )
    for c in plain:
        if c.run.accept_length is not None and c.run.accept_length > 1:
            raise ValueError(
                f"{c.run.where}: given as a plain run but it reports an acceptance length of "
                f"{c.run.accept_length:.2f}: the server ran speculation"
            )
    for c in spec:  # (one at a load no plain run is at is fitted with the others: unpaired_loads says so)
        if c.setup.topk > 1 and c.run.accept_length is None and c.setup.pinned_accept_length is None:
            raise ValueError(
                f"{c.run.where}: a token tree (top-k {c.setup.topk}) without a recorded acceptance length: "
                f"pass {given_as('metrics')} with the server's /metrics page saved after the run"
            )
    if spec and dep.drafter is None:
        raise ValueError(f"speculative runs need a drafter: pass {given_as('drafter', '--draft')}")
    check_one_model(runs)
    # A backend that names only an OpenAI-compatible client (vllm bench serve's "vllm") is any server's: it does not
    # make two files' servers differ (calibration.inputs.runs_engine says it where it is not --engine's).
    servers = {c.run.server for c in runs if c.run.server and not c.run.server_hinted}
    if len(servers) > 1:
        raise ValueError(
            "the runs were served by different engines (" + ", ".join(sorted(servers)) + "); fit one engine at a time"
        )
    if dep.engine.name == "none":
        raise ValueError(
            f"{given_as('engine')} none adds no engine time: name the engine and version that served the runs "
            "(vllm, sglang or trtllm, e.g. vllm@0.10)"
        )


def nudged_runs(runs: list[CalRun], eps: float) -> list[CalRun]:
    """``runs`` with every measured time scaled by (1 + eps) and every throughput and rate by 1 / (1 + eps): nothing a
    speedup depends on changes beyond eps, so a fit the runs pin predicts the same to about eps."""
    out = []
    for c in runs:
        r = c.run
        times = {
            k: getattr(r, k) * (1.0 + eps)
            for k in ("tpot_s", "ttft_s", "itl_s", "e2e_s", "duration_s")
            if getattr(r, k) is not None
        }
        if r.output_tokens_per_s is not None:
            times["output_tokens_per_s"] = r.output_tokens_per_s / (1.0 + eps)
        if r.rate_per_s:
            times["rate_per_s"] = r.rate_per_s / (1.0 + eps)
        out.append(replace(c, run=replace(r, **times)))
    return out
