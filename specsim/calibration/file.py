"""One file for a fit to the user's engine: what ``calibrate-engine --out`` writes and ``--calibration`` reads.

A calibration holds everything a prediction needs to be the fitted one: the profile with its fitted efficiency (the
whole profile, so that no other file is needed), the target, tensor parallelism and drafter that were benchmarked,
the step-time source, the engine preset and version with the fitted time per iteration and round terms, the
acceptance measured on the user's own prompts (or fitted, with its interval) where the runs had real acceptance, and
where each value came from: fitted (with its 95% interval), held at the preset (and why), the runs and their SHA-256.

Every command that predicts takes ``--calibration FILE``.  The deployment it describes is then the calibrated one:
a ``--hardware`` or ``--target`` other than the calibrated one is refused (a fit of one GPU and model says nothing of
another), and so are ``--timing``, ``--engine`` and ``--tp`` that differ; the engine's round-term flags still override
single terms, named as the user's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specsim.core.names import FLAGS, given_as

__all__ = ["SCHEMA", "Calibration", "read_calibration", "calibration_mapping"]

SCHEMA = 1
_KEYS = (
    "specsim_calibration",
    "date",
    "profile",
    "base_hardware",
    "target",
    "target_name",
    "tp",
    "drafter",
    "draft_tp",
    "timing",
    "engine",
    "iteration_s",
    "round_terms",
    "terms",
    "runs",
    "errors",
)


@dataclass(frozen=True)
class Calibration:
    """A calibration file, read and checked."""

    path: str
    profile: object  # HardwareProfile with the fitted efficiencies
    base_hardware: str
    target: str
    target_name: str
    tp: int
    target_options: dict
    drafter: str | None
    draft_tp: int | None
    timing: str
    engine: str
    iteration_s: float
    iteration_seq_s: float
    round_terms: dict  # SpecHost field -> seconds
    acceptance: object | None  # Acceptance measured on real runs, or None
    acceptance_label: str | None
    record: dict
    prefill_scale: float = 1.0
    overlap_share: float | None = None
    #: What the runs were served at (:func:`serving_record`); None in a file written before 2026-12-04.
    serving: dict | None = None
    #: The deepest draft step the acceptance was measured at (a longer chain extrapolates it); None where unknown.
    acceptance_steps: int | None = None
    #: The file's sha256, its first 12 hex digits: which file, whatever it is named (every answer's provenance says it).
    sha256: str = ""

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def said_file(self) -> str:
        """The file's name with its sha256 where it was read from disk: which file, whatever it is named."""
        return f"{self.name}, sha256 {self.sha256}" if self.sha256 else self.name

    @property
    def context_tokens(self) -> int | None:
        """The mean context of the runs it was fitted to, the prompt plus half the output, where they are one
        workload's lengths: the context a per-batch answer takes where none is given; None otherwise."""
        if self.lengths is None:
            return None
        from specsim.core.workloads import mean_context_tokens

        return int(round(float(mean_context_tokens(*self.lengths))))

    @property
    def lengths(self) -> tuple[int, int] | None:
        """(prompt, output) tokens of the runs it was fitted to, where those are one workload's lengths (its
        ``serving`` record); None otherwise: the lengths an answer takes for those not given."""
        if self.serving is None or not self.serving["lengths_alike"]:
            return None
        return round(self.serving["input_tokens"]), round(self.serving["output_tokens"])

    def said(self) -> str:
        """What an answer from this calibration rests on, in one line: how far off the fit was on its own runs with each
        load left out (what cannot be held out said as such), and how many warnings its fit gave (in the file)."""
        errors = (self.record.get("errors") or {}).get("held_out") or {}
        parts = [
            f"{what} {errors[key]:.1%}"
            for key, what in (("plain", "plain"), ("spec", "speculative"))
            if errors.get(key) is not None
        ]
        runs = len(self.record.get("runs", []))
        why = "; ".join(r for rs in (self.record.get("not_held_out") or {}).values() for r in rs)
        # The loads the error was measured over: an answer past them (64 users from runs at 1-32) is not one of them.
        line = (
            f"{self.name}: with each load of its {runs} runs{self._loads()} left out, its fit was off by "
            f"{' and '.join(parts)} "
            "(mean absolute error)"
            if parts
            else f"{self.name}: no held-out error: " + (why or f"the file records none for its {runs} runs")
        )
        warned = len(self.record.get("warnings") or [])
        if warned:
            line += f"; its fit gave {warned} warning{'s' if warned > 1 else ''} (the file's warnings)"
        if "fit_sha256" not in self.record:  # a file of before 2026-12-05, or one whose seal was taken off
            line += "; it carries no fit_sha256 (written before 2026-12-05, or edited): its values are taken as written"
        return line

    def _loads(self) -> str:
        """The loads its runs were at, as their labels say them (`` (concurrency 1, 2, 4; rate 2/s)``; "" where none).

        >>> cal = Calibration.__new__(Calibration)
        >>> runs = [{"load": "concurrency 1"}, {"load": "concurrency 4"}, {"load": "concurrency 1"}, {"load": "rate 2/s"}]
        >>> object.__setattr__(cal, "record", {"runs": runs})
        >>> cal._loads()
        ' (concurrency 1, 4; rate 2/s)'
        """
        kinds: dict[str, list[str]] = {}
        for run in self.record.get("runs") or []:
            label = str(run.get("load") or "")
            kind, _, value = label.partition(" ")
            if label and value not in kinds.setdefault(kind, []):
                kinds[kind].append(value)
        said = "; ".join(f"{kind} {', '.join(values)}".strip() for kind, values in kinds.items())
        return f" ({said})" if said else ""

    def speedup_error(self) -> tuple[float | None, str]:
        """(share, where from): the relative error a speedup answered from this calibration carries, from the errors
        its fit had with each load left out (``errors.held_out``): plain plus speculative, for a speedup is the ratio of
        the two arms' times and the relative errors of a ratio add at most.  (None, why) where the file keeps no
        held-out error of both arms (a fit of plain runs alone, or one whose loads could not be left out).

        >>> cal = Calibration.__new__(Calibration)
        >>> object.__setattr__(cal, "path", "cal.yaml")
        >>> object.__setattr__(cal, "record", {"errors": {"held_out": {"plain": 0.016, "spec": 0.018}}})
        >>> cal.speedup_error()
        (0.034, 'cal.yaml held out: plain 1.60% + speculative 1.80% (calibrate-engine, each load left out)')
        """
        errors = (self.record.get("errors") or {}).get("held_out") or {}
        plain, spec = errors.get("plain"), errors.get("spec")
        if plain is None or spec is None:
            missing = " and ".join(w for w, v in (("plain", plain), ("speculative", spec)) if v is None)
            why = "; ".join(r for rs in (self.record.get("not_held_out") or {}).values() for r in rs)
            return None, f"{self.name} keeps no held-out {missing} error" + (f" ({why})" if why else "")
        share = round(float(plain) + float(spec), 12)
        return share, (
            f"{self.name} held out: plain {plain:.2%} + speculative {spec:.2%} (calibrate-engine, each load left out)"
        )

    def brief(self) -> str:
        return f"calibration {self.name} (fitted {self.record.get('date', '?')} to {len(self.record.get('runs', []))} runs)"

    def __repr__(self) -> str:  # a notebook's echo: which deployment it fitted and how far off, not every term
        tp = f" at TP {self.tp}" if self.tp > 1 else ""
        drafter = f" + {self.drafter}" if self.drafter else ""
        return (
            f"Calibration({self.target_name}{tp}{drafter} on {self.base_hardware}, {self.timing} step times, engine "
            f"{self.engine}; {self.said()})"
        )

    def fixes(self, hardware=None, target=None, timing=None, engine=None, engine_overhead_ms=None, target_options=None):
        """The deployment this calibration describes, as :meth:`~specsim.speculation.deployment.Deployment.build`
        arguments; a given one that names another deployment (hardware, target, tensor parallelism, step-time source,
        engine, dtypes) is refused, for a fit of one deployment says nothing of another, and so is a time per iteration
        that would replace the fitted one."""
        from specsim.describe.models import get_model
        from specsim.engines import get_engine

        options = dict(target_options or {})

        def differs(keyword: str, given, theirs, flag: str | None = None) -> None:
            # as its caller gave it: the keyword to Python (hardware, target_options['tp']), the flag on the command line
            named = given_as(keyword, flag)
            raise ValueError(
                f"{named} {given} but {self.name} calibrates {theirs}: a fit of one deployment says nothing of "
                f"another (drop {named}, or calibrate that deployment)"
            )

        if hardware is not None and hardware not in (self.base_hardware, self.profile.name):
            from specsim.describe.hardware import load_hardware

            name = hardware.name if hasattr(hardware, "name") else load_hardware(hardware).name
            if name not in (self.base_hardware, self.profile.name):  # the base profile, or the fitted one itself
                differs("hardware", getattr(hardware, "name", hardware), self.base_hardware)
        if target is not None and target != self.target and get_model(target).name != self.target_name:
            differs("target", target, self.target_name)
        if options.get("tp") is not None and options["tp"] != self.tp:
            differs("target_options['tp']", options["tp"], f"tensor parallelism {self.tp}", "--tp")
        if timing is not None and timing != self.timing:
            differs("timing", timing, f"the {self.timing} step-time source")
        theirs, given = get_engine(self.engine), None if engine is None else get_engine(engine)
        if given is not None and given.key != theirs.key:
            differs("engine", given.named_as, self.engine)
        if engine_overhead_ms is not None:
            raise ValueError(
                f"{given_as('engine_overhead_ms')} replaces the time per iteration {self.name} fitted: drop one of them"
            )
        for key in ("weight_dtype", "kv_dtype"):
            given = options.get(key)
            if given is None:
                continue
            # Not given at the fit: the target's own at the options that were (its config.json's), which the fit ran at.
            fitted = self.target_options.get(key) or getattr(get_model(self.target, **self.target_options), key)
            if given != fitted:
                as_fitted = f"a {fitted} {key.split('_')[0]} target"
                differs(f"target_options['{key}']", given, as_fitted, "--" + key.replace("_", "-"))
        return {
            "hardware": self.profile,
            "target": self.target,
            "tp": self.tp,
            "timing": self.timing,
            "engine": theirs,
            "target_options": self.target_options,
        }

    def drafts_with(self, draft: str | None) -> bool:
        """Whether ``--draft`` (None: not given) names this calibration's drafter, however it is named: a draft model by
        checkpoint or by built-in name (a plan records meta-llama/Llama-3.2-1B-Instruct, where --draft llama-3.2-1b is
        the same model), any other drafter as the fit recorded it."""
        from specsim.describe.models import get_model
        from specsim.speculation.drafters import DraftModel, drafter_class

        if draft is None or draft == self.drafter:
            return True
        if self.drafter is None or not drafter_class(draft) is drafter_class(self.drafter) is DraftModel:
            return False
        try:
            return get_model(draft).name == get_model(self.drafter).name
        except (KeyError, ValueError, OSError):  # a name or path that is no model: not this drafter
            return False

    def acceptance_for(self, draft: str | None) -> tuple:
        """(the acceptance its runs measured, "") where ``draft`` (``--draft``; None: not given) names its drafter
        (:meth:`drafts_with`), else (None, why not, in words): the one check, and its words, of every command that
        takes a calibration's acceptance (the answers' :func:`specsim.answers.acceptance.resolve_acceptance`, replay).

        >>> cal = Calibration.__new__(Calibration)
        >>> for key, value in (("path", "cal.yaml"), ("drafter", "eagle3"), ("acceptance", 0.7)):
        ...     object.__setattr__(cal, key, value)
        >>> cal.acceptance_for(None), cal.acceptance_for("eagle3")
        ((0.7, ''), (0.7, ''))
        >>> cal.acceptance_for("ngram")
        (None, "cal.yaml's acceptance is of eagle3, not draft ngram")
        """
        if self.acceptance is not None and self.drafts_with(draft):
            return self.acceptance, ""
        return None, (
            f"{self.name} has no speculative runs: no acceptance or round terms were measured"
            if self.drafter is None
            else f"{self.name} measured no acceptance on real prompts (its runs were pinned)"
            if self.acceptance is None
            else f"{self.name}'s acceptance is of {self.drafter}, not {given_as('draft')} {draft}"
        )

    @property
    def served_limits(self) -> tuple | None:
        """(max_num_seqs, max_batched_tokens, the speculating server's max_num_seqs where it differs, where they come
        from, the prefix-cache hit share the runs were fitted with, who chose the max_num_seqs: bench-plan's plan where
        it did, None where the file does not say): the limits its runs were served under (its ``serving`` record), which the preset it calibrates carries
        (its ``served_limits``), so that every answer on it, the library's as the commands', takes them for a limit
        not given; None in a file written before the record was."""
        if self.serving is None:
            return None
        s = self.serving
        where = f"the limits {self.name}'s runs were fitted under"  # (the label names a prefix-cache hit share)
        if s.get("prefix_hit") and s.get("prefix_hit_from"):
            where += f", its prefix-cache share from {s['prefix_hit_from']}"
        seqs_from = s.get("max_num_seqs_from")
        return (
            s["max_num_seqs"],
            s["max_batched_tokens"],
            s.get("spec_max_num_seqs"),
            where,
            s.get("prefix_hit", 0.0),
            seqs_from,
        )

    def apply(self, preset, drafter: type | None = None):
        """``preset`` with this calibration's fitted terms (:func:`apply_to_engine`); ``drafter``: the class of the
        deployment's drafter, whose rounds keep the preset's terms where the runs were of another kind's rounds."""
        return apply_to_engine(self, preset, drafter)


def calibration_mapping(
    fit,
    dep,
    target_spec: str,
    drafter_spec: str | None,
    timing: str,
    files: list[str],
    acceptance=None,
    acceptance_label: str | None = None,
    target_options: dict | None = None,
    engine_spec: str | None = None,
    limits=None,
    memory_utilization: float | None = None,
    acceptance_steps: int | None = None,
    acceptance_per_position: tuple | None = None,
    prefix_hit_from: str | None = None,
    max_num_seqs_from: str | None = None,
) -> dict:
    """The calibration file's content: the fit of :func:`specsim.calibration.engine_fit.fit_engine` on ``dep``; ``engine_spec``
    the engine and release the runs were served by (``vllm@0.20.0``), which every writer of the calibrated deployment
    uses (default the preset's key); ``limits`` the engine's limits the fit was made under
    (:class:`~specsim.serving.steady.EngineLimits`), kept with the runs' mean lengths (:func:`serving_record`);
    ``acceptance_per_position`` the per-position shares the acceptance's runs recorded, which answers from the file take
    (:func:`read_calibration`) where the acceptance's alpha is the chain's; ``prefix_hit_from`` where the limits'
    prefix-cache share came from (kept beside it), ``max_num_seqs_from`` who chose its max_num_seqs."""
    import datetime

    from specsim.describe.hardware import profile_to_mapping
    from specsim.engines import TERMS, preset_releases

    hw = fit.deployment.hardware
    # The fitted profile keeps its base's kernel-database device, so that the hybrid and kernel sources still find it.
    device = dep.hardware.device or dep.hardware.name.removesuffix("-vllm")
    profile = profile_to_mapping(
        dataclasses.replace(
            hw,
            name=f"{dep.hardware.name}-{dep.engine.name}-fitted",
            device=device,
            calibration=None,
            description=f"{hw.description} - "
            + (
                "fitted by calibrate-engine"
                if fitted_any(fit.terms | fit.acceptance)
                else "calibrate-engine fitted nothing"
            ),
        )
    )
    terms = {name: _clean(t.to_dict()) for name, t in fit.terms.items()}
    terms |= {f"acceptance {sweep}": _clean(t.to_dict()) for sweep, t in fit.acceptance.items()}
    record = {
        "specsim_calibration": SCHEMA,
        "fitted_by": "specsim calibrate-engine",
        "date": datetime.date.today().isoformat(),
        "profile": profile,
        "base_hardware": dep.hardware.name,
        "target": target_spec,
        "target_name": dep.target.name,
        "tp": dep.target.tp,
        "target_options": dict(target_options or {}),
        "drafter": drafter_spec,
        "draft_tp": dep.draft.tp if dep.draft is not None else None,
        "timing": timing,
        "engine": engine_spec or dep.engine.key,
        "engine_preset": dep.engine.key,
        "engine_releases": preset_releases(dep.engine),  # what the key covered: vllm@latest moves with specsim
        "iteration_s": float(fit.iteration_s),
        "iteration_seq_s": float(fit.iteration_seq_s),
        "prefill_scale": float(fit.prefill_scale),
        "round_terms": {t: float(getattr(fit.host, t)) for t in TERMS},
        "overlap_share": fit.overlap_share,
        "terms": terms,
        "acceptance": None,
        "runs": [
            {
                "file": c.run.where,
                "kind": c.kind,
                "load": c.run.load,
                "requests": int(c.run.completed),  # a run's means are of this many, its first burst and last wave in
                "steps": c.setup.steps if c.setup else None,
                "judged_by": c.run.observable,
                "measured": float(c.run.value),
                "fitted": _none_if_nan(float(p)),
                "held_out": _none_if_nan(float(q)),
                "prefill_share": _none_if_nan(float(r)),
            }
            for c, p, q, r in zip(fit.runs, fit.predicted, fit.held_out, fit.prefill_share)
        ],
        "files": [{"path": f, "sha256": hashlib.sha256(Path(f).read_bytes()).hexdigest()} for f in files],
        "errors": {
            which: {kind or "all": _none_if_nan(fit.error(which, kind)) for kind in (None, "plain", "spec")}
            for which in ("held_out", "held_out_steps", "held_out_sweep", "predicted", "preset")
        },
        "not_held_out": dict(fit.not_held_out),
        "warnings": list(fit.warnings),
    }
    if limits is not None:
        record["serving"] = serving_record(fit.runs, limits, memory_utilization, prefix_hit_from, max_num_seqs_from)
    if acceptance is not None:  # with the deepest draft step it was measured at (acceptance_steps; None: unknown)
        record["acceptance"] = (
            {"alpha": acceptance.alpha} if acceptance.alpha is not None else {"cumulative": list(acceptance.cumulative)}
        ) | {"source": acceptance_label, "measured_steps": acceptance_steps}
        if acceptance_per_position is not None:
            record["acceptance"]["per_position"] = [float(c) for c in acceptance_per_position]
    record["fit_sha256"] = fit_digest(record)
    return record


def fitted_any(terms: dict) -> bool:
    """Whether any of ``terms`` (name -> :class:`~specsim.calibration.engine_fit.Term`, or its mapping as a calibration
    file keeps it) was fitted: none where every value is held at the preset or not identified.

    >>> fitted_any({"scale": {"status": "held"}, "acceptance a": {"status": "not identified"}})
    False
    >>> fitted_any({"scale": {"status": "fitted"}})
    True
    """
    return any((t.get("status") if isinstance(t, dict) else t.status) == "fitted" for t in terms.values())


def fit_digest(record: dict) -> str:
    """The sha256 (16 hex digits) of a calibration's content but this key itself, as calibrate-engine wrote it: a file
    whose engine, step-time source, fitted terms or profile were changed by hand after the fit no longer matches, and
    is refused (each value was fitted with the others; one changed alone is no fit).  JSON with sorted keys, so that
    YAML's round trip (its key order, tuples as lists, floats written by repr) gives the same digest."""
    content = {k: v for k, v in record.items() if k != "fit_sha256"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]


def serving_record(
    runs: list,
    limits,
    memory_utilization: float | None = None,
    prefix_hit_from: str | None = None,
    max_num_seqs_from: str | None = None,
) -> dict:
    """What the runs were served at, for the commands that answer at a load from the file: the engine's max_num_seqs
    and token budget the fit used (``max_num_seqs_from``: who chose that max_num_seqs, bench-plan's plan where it did;
    None: not said), its memory setting (``--memory-util``; None: the engine's own), the prefix-cache
    share and where it came from (``prefix_hit_from``: ``--prefix-hit`` or a /metrics page; None: none), the runs' mean prompt
    and output tokens, and whether every run is within
    :data:`specsim.calibration.runs.SAME_LENGTHS` of those (one workload's lengths, which the commands then take as
    theirs unless given)."""
    from specsim.calibration.runs import alike

    prompts = np.array([float(c.run.prompt_tokens) for c in runs])
    outputs = np.array([float(c.run.output_tokens) for c in runs])
    record = {
        "max_num_seqs": int(limits.max_num_seqs),
        "max_num_seqs_from": max_num_seqs_from,  # who chose it (the answers say it where it holds users back)
        # A speculating engine's own where it differs (SGLang's 48 without --max-running-requests); None: the same.
        "spec_max_num_seqs": None if limits.spec_max_num_seqs is None else int(limits.spec_max_num_seqs),
        "max_batched_tokens": int(limits.max_batched_tokens),
        "memory_util": None if memory_utilization is None else float(memory_utilization),
        # the share of prompt tokens served from the prefix cache the fit took (--prefix-hit; 0: none)
        "prefix_hit": float(limits.prefix_hit),
        "prefix_hit_from": prefix_hit_from if limits.prefix_hit else None,
    }
    if not (np.all(np.isfinite(prompts) & (prompts >= 1)) and np.all(np.isfinite(outputs) & (outputs >= 1))):
        return record | {"input_tokens": None, "output_tokens": None, "lengths_alike": False}  # a file without them
    P, O = float(prompts.mean()), float(outputs.mean())
    same = bool(np.all(alike(prompts, outputs, P, O)))
    return record | {"input_tokens": round(P, 1), "output_tokens": round(O, 1), "lengths_alike": same}


def _none_if_nan(x: float):
    return None if x != x else float(x)


def _clean(d: dict) -> dict:
    return {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in d.items()}


def _check_identity(where: str, data: dict) -> None:
    """The keys that name what was calibrated, each refused with the file and field: the acceptance key every version
    writes (null where no run measured one: a file without it is not taken as pinned runs'), the engine, the drafter's
    tensor parallelism."""
    from specsim.engines import PRESETS, get_engine, parse_version, preset_releases

    if "acceptance" not in data:
        raise ValueError(
            f"{where}: the key 'acceptance' is missing (calibrate-engine writes null where no run measured one)"
        )
    if not isinstance(data["engine"], str) or not data["engine"]:
        raise ValueError(f"{where}: engine must be a non-empty string, got {data['engine']!r}")
    try:
        preset = get_engine(data["engine"])
    except ValueError as err:  # the file named, as its other fields are
        raise ValueError(f"{where}: engine: {err}") from None
    fitted = data.get("engine_preset")
    if fitted is not None and preset.key != fitted:  # the terms were fitted on that preset's round
        raise ValueError(
            f"{where}: engine {data['engine']} is of the preset {preset.key}, but the terms were fitted on "
            f"{fitted} (engine_preset): calibrate runs of that engine"
        )
    covered = data.get("engine_releases")  # (a file of before 2026-12-05 has none)
    # A release named by its number maps to its preset as the check above holds; a bare name or an alias moves.  Without
    # engine_preset (an unsealed file's, deleted) that check did not run: the number alone vouches for nothing.
    named = preset.named_as
    numbered = (
        fitted is not None and named not in PRESETS and parse_version(preset.name, named.partition("@")[2]) is not None
    )
    if covered is not None and not numbered and covered != preset_releases(preset):
        raise ValueError(
            f"{where}: its terms were fitted on {fitted or preset.key} when that preset covered releases {covered}; "
            f"this specsim's covers {preset_releases(preset)}: calibrate again, naming the release that served the "
            f"runs ({given_as('engine')} NAME@VERSION)"
        )
    draft_tp = data.get("draft_tp")
    if draft_tp is not None and (isinstance(draft_tp, bool) or not isinstance(draft_tp, int) or draft_tp < 1):
        raise ValueError(f"{where}: draft_tp must be a whole number >= 1 or null, got {draft_tp!r}")


def read_calibration(path: str | Path) -> Calibration:
    """The calibration file at ``path`` (a str or :class:`~pathlib.Path`, as ``specsim calibrate-engine --out`` wrote
    it), every key checked; refused in one line naming the key where it is not one, or the file where it is none.

    >>> read_calibration("no-such-calibration.yaml")
    Traceback (most recent call last):
    ...
    ValueError: calibration file 'no-such-calibration.yaml' does not exist
    """
    from specsim.core.files import file_digest
    from specsim.core.limits import load_yaml
    from specsim.describe.hardware import profile_from_mapping
    from specsim.engines import TERMS

    if not isinstance(path, (str, Path)):  # pathlib's own words name neither the keyword nor what it takes
        raise TypeError(
            f"path is a calibration file's path (a str or a Path), got {type(path).__name__}"
            + (": a calibration read already goes to Deployment.build(calibration=)" if hasattr(path, "fixes") else "")
        )
    p = Path(path)
    if not p.is_file():
        from specsim.core.limits import not_a_file

        raise ValueError(f"calibration file {str(p)!r} {not_a_file(p)}")
    data = load_yaml(p, "calibration file")
    where = p.name
    if isinstance(data, dict) and "specsim_calibration" in data and data["specsim_calibration"] != SCHEMA:
        raise ValueError(
            f"{where}: a specsim calibration of schema {data['specsim_calibration']!r:.20}; this specsim reads schema "
            f"{SCHEMA} (calibrate-engine --out writes one)"
        )
    if not isinstance(data, dict) or data.get("specsim_calibration") != SCHEMA:
        raise ValueError(
            f"{where}: not a specsim calibration (specsim_calibration: {SCHEMA}; calibrate-engine --out writes one)"
        )
    for key in _KEYS:
        if key not in data:
            raise ValueError(f"{where}: the key {key!r} is missing")
    _check_identity(where, data)
    profile = _check_profile(
        where, profile_from_mapping(data["profile"], f"{where}: profile"), data.get("base_hardware")
    )
    for key in ("target", "target_name", "timing", "engine", "base_hardware"):
        if not isinstance(data[key], str) or not data[key]:
            raise ValueError(f"{where}: {key} must be a non-empty string, got {data[key]!r}")
    tp = data["tp"]
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"{where}: tp must be a whole number >= 1, got {tp!r}")
    terms = data["round_terms"]
    if not isinstance(terms, dict) or set(terms) != set(TERMS):
        raise ValueError(f"{where}: round_terms must hold {', '.join(TERMS)}")
    seq = data.get("iteration_seq_s", 0.0)
    for key, value in list(terms.items()) + [("iteration_s", data["iteration_s"]), ("iteration_seq_s", seq)]:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{where}: {key} must be a time in [0, 1] seconds, got {value!r}")
    prefill = data.get("prefill_scale", 1.0)
    share = data.get("overlap_share")
    if isinstance(prefill, bool) or not isinstance(prefill, (int, float)) or not 0.05 <= prefill <= 20:
        raise ValueError(f"{where}: prefill_scale must be a number in [0.05, 20], got {prefill!r}")
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1):
        raise ValueError(f"{where}: overlap_share must be a share in [0, 1] or null, got {share!r}")
    acc, label, steps = _read_acceptance(where, data.get("acceptance"))
    _check_record(where, data)
    serving = _read_serving(where, data.get("serving"))
    draft_tp = data.get("draft_tp")
    options = data.get("target_options") or {}
    from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES

    if (
        not isinstance(options, dict)
        or set(options) - {"weight_dtype", "kv_dtype"}
        or options.get("weight_dtype", "bf16") not in WEIGHT_DTYPE_CHOICES
        or options.get("kv_dtype", "bf16") not in KV_DTYPE_CHOICES
    ):
        raise ValueError(
            f"{where}: target_options must hold a weight_dtype and a kv_dtype specsim reads, got {options!r}"
        )
    sealed = data.get("fit_sha256")
    if "fit_sha256" in data and sealed != fit_digest(data):  # after the checks by key; a null seal is no seal
        raise ValueError(
            f"{where}: its content differs from what calibrate-engine wrote (fit_sha256 {sealed!s:.20} does not match "
            f"it): a fitted value changed alone is no fit, as each was fitted with the others; calibrate again, or "
            f"{_change_beside('--engine-round-ms', '--memory-util')}"
        )
    _check_terms_agree(where, data)  # (after the seal: a sealed file edited is said so first)
    return Calibration(
        str(p),
        profile,
        data["base_hardware"],
        data["target"],
        data["target_name"],
        tp,
        dict(options),
        data.get("drafter"),
        draft_tp,
        data["timing"],
        data["engine"],
        float(data["iteration_s"]),
        float(seq),
        {k: float(v) for k, v in terms.items()},
        acc,
        label,
        data,
        float(prefill),
        None if share is None else float(share),
        serving,
        steps,
        file_digest(p),
    )


def _read_acceptance(where: str, raw: object) -> tuple:
    """(Acceptance, label, the deepest draft step it was measured at) of the file's ``acceptance`` (Nones where it is
    null), checked key by key.  Where it holds ``per_position``, the shares the runs recorded (checked as a benchmark
    file's are, :func:`specsim.speculation.acceptance.checked_shares`), the answers take them, ``continued`` past their
    last position (an assumption the label says), not the chain at the file's alpha: 1 + c_1 + ... + c_gamma is what
    the same drafter accepts at gamma <= K on the same prompts, exactly, where alpha^k gives only the runs' acceptance
    length at their own steps.  The label says the rates and the rule; the Acceptance's source adds the file's record of
    them (what ``-v`` prints)."""
    from specsim.speculation.acceptance import Acceptance, checked_shares

    if raw is None:
        return None, None, None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: acceptance must be a mapping with alpha or cumulative")
    record = raw.get("source") or "calibrate-engine"
    label = f"acceptance from {where}: {record}"
    try:
        acc = Acceptance(alpha=raw.get("alpha"), cumulative=tuple(raw.get("cumulative") or ()), source=label)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: acceptance: {err}") from None
    steps = raw.get("measured_steps")  # (a file written before 2026-12-05 has none)
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 64):
        raise ValueError(
            f"{where}: acceptance: measured_steps must be a whole number in [1, 64] or null, got {steps!r}"
        )
    if raw.get("per_position") is None:
        if acc.alpha is not None:  # an answer drafting past the steps it was measured at says it extrapolates
            acc = dataclasses.replace(acc, measured_steps=steps)
        return acc, label, steps
    try:
        shares = checked_shares(raw["per_position"])
    except ValueError as err:
        raise ValueError(f"{where}: acceptance.per_position {err}") from None
    if acc.alpha is None:
        raise ValueError(
            f"{where}: acceptance.per_position goes beside one alpha (calibrate-engine writes them so), not beside "
            "cumulative rates: keep one of them"
        )
    if steps is not None and len(shares) > steps:
        raise ValueError(
            f"{where}: acceptance.per_position holds {len(shares)} positions, but measured_steps is {steps}: runs of "
            f"{steps} draft steps count at most {steps}"
        )
    acc = Acceptance(cumulative=shares, continued=True)
    label = f"acceptance from {where}: its runs' {acc.brief()}"
    full = f"{label}; the file's record of them (its alpha {raw['alpha']:g} is not used): {record}"
    return dataclasses.replace(acc, source=full), label, steps


def _read_serving(where: str, raw: object) -> dict | None:
    """The file's ``serving`` record (:func:`serving_record`), checked key by key; None where the file has none."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: serving must be a mapping (max_num_seqs, max_batched_tokens, ...), got {raw!r:.60}")
    # (a file written before 2026-12-04 has no memory_util, one before 2026-12-05 no spec_max_num_seqs)
    # (a file written before 2026-12-07 has no prefix_hit: its fit prefilled every prompt token)
    # (one written on 2026-12-07 before its prefix_hit_from: where its share came from, not said; before its
    # max_num_seqs_from: who chose its max_num_seqs, not said)
    raw = {"memory_util": None, "spec_max_num_seqs": None, "prefix_hit": 0.0, "prefix_hit_from": None} | raw
    raw = {"max_num_seqs_from": None} | raw
    known = ("max_num_seqs", "max_batched_tokens", "spec_max_num_seqs", "input_tokens", "output_tokens")
    known += ("lengths_alike", "memory_util", "prefix_hit", "prefix_hit_from", "max_num_seqs_from")
    for key in known:
        if key not in raw:
            raise ValueError(f"{where}: serving: the key {key!r} is missing")
    extra = sorted(set(raw) - set(known))
    if extra:
        raise ValueError(f"{where}: serving: {extra[0]!r} is not a key of it ({', '.join(known)})")

    def number(value, low, high, whole) -> bool:
        kinds = int if whole else (int, float)
        return isinstance(value, kinds) and not isinstance(value, bool) and low <= value <= high

    said = {
        "max_num_seqs": (number(raw["max_num_seqs"], 1, 65536, True), "a whole number in [1, 65536]"),
        "max_batched_tokens": (number(raw["max_batched_tokens"], 1, 4_194_304, True), "a whole number in [1, 4194304]"),
        "spec_max_num_seqs": (
            raw["spec_max_num_seqs"] is None or number(raw["spec_max_num_seqs"], 1, 65536, True),
            "a whole number in [1, 65536], or null",
        ),
        "memory_util": (
            raw["memory_util"] is None or (isinstance(raw["memory_util"], float) and 0.0 < raw["memory_util"] <= 1.0),
            "a share in (0, 1], or null",
        ),
        "lengths_alike": (isinstance(raw["lengths_alike"], bool), "true or false"),
        "prefix_hit": (number(raw["prefix_hit"], 0.0, 1.0, False), "a share in [0, 1]"),
        "prefix_hit_from": (
            raw["prefix_hit_from"] is None
            or (isinstance(raw["prefix_hit_from"], str) and raw["prefix_hit_from"] != ""),
            "where the share came from (text), or null",
        ),
        "max_num_seqs_from": (
            raw["max_num_seqs_from"] is None
            or (isinstance(raw["max_num_seqs_from"], str) and raw["max_num_seqs_from"] != ""),
            "who chose max_num_seqs (text), or null",
        ),
    }
    unknown = raw["input_tokens"] is None and raw["output_tokens"] is None and raw["lengths_alike"] is False
    for key in ("input_tokens", "output_tokens"):
        said[key] = (
            unknown or number(raw[key], 1, 10_000_000, False),
            "tokens in [1, 10000000] (or both lengths null, with lengths_alike false)",
        )
    for key, (ok, allowed) in said.items():
        if not ok:
            raise ValueError(f"{where}: serving: {key} must be {allowed}, got {raw[key]!r:.40}")
    return dict(raw)


def _change_beside(*flags: str) -> str:
    """How a change to a calibrated value is given instead of an edit, as the caller gives values: on the command line
    a flag beside ``--calibration``; to Python, an engine term on the calibrated deployment's engine
    (:meth:`~specsim.engines.base.EnginePreset.with_spec`'s keyword), ``--memory-util`` as an answer's
    ``memory_utilization``.  The text said the flags to Python callers too, which have none.

    >>> _change_beside("--engine-round-ms", "--memory-util")
    "give the change beside the calibration instead (its deployment's engine.with_spec(round_ms=...), an answer's memory_utilization=..., ...)"
    >>> from specsim.core.names import as_flags
    >>> with as_flags():
    ...     _change_beside("--engine-round-ms", "--memory-util")
    'give the change as a flag beside --calibration (--engine-round-ms, --memory-util, ...)'
    """
    from specsim.engines.base import TERM_FLAGS, spec_keyword

    terms = {flag for flag, _ in TERM_FLAGS.values()}
    keywords = {flag: keyword for keyword, flag in FLAGS.items()} | {
        TERM_FLAGS[t][0]: spec_keyword(t) for t in TERM_FLAGS
    }
    named = [given_as(keywords[f], f) for f in flags]
    if named == list(flags):
        return f"give the change as a flag beside {given_as('calibration')} ({', '.join(named)}, ...)"
    said = [
        f"its deployment's engine.with_spec({n}=...)" if f in terms else f"an answer's {n}=..."
        for f, n in zip(flags, named)
    ]
    return f"give the change beside the calibration instead ({', '.join(said)}, ...)"


def _check_terms_agree(where: str, data: dict) -> None:
    """Refuse a file whose values used (``round_terms``, ``iteration_s``, ``iteration_seq_s``, ``prefill_scale``) and
    whose fit's record of them (``terms``: each one's value) disagree: calibrate-engine writes one value twice, so an
    edit to one side is caught where no seal (``fit_sha256``) is there to catch it (an unsealed file used the edited
    ``round_terms`` while its record said the fitted value)."""
    used = dict(data["round_terms"]) | {
        k: data[k] for k in ("iteration_s", "iteration_seq_s", "prefill_scale") if k in data
    }
    for key, value in used.items():
        said = ((data.get("terms") or {}).get(key) or {}).get("value")
        if isinstance(said, bool) or not isinstance(said, (int, float)):
            continue  # (a term the record does not give a number for: nothing to compare)
        if not math.isclose(float(said), float(value), rel_tol=1e-9, abs_tol=1e-15):
            where_used = f"round_terms.{key}" if key in data["round_terms"] else key
            raise ValueError(
                f"{where}: {where_used} {value:.6g} disagrees with terms.{key}.value {said:.6g}, which calibrate-engine "
                f"writes as the same value: one was edited; calibrate again, or "
                f"{_change_beside('--engine-round-ms', '--engine-step-ms')}"
            )


def _check_record(where: str, data: dict) -> None:
    """The fit's record that the answers read and say (its terms' statuses, errors, warnings, runs): refused in one line
    where a key is not of its kind (a hand-edited ``terms: x`` was a traceback)."""
    kinds = {
        "terms": (dict, "a mapping of each term to its fit (status, value)"),
        "errors": (dict, "a mapping of error kinds (held_out, ...) to their errors"),
        "not_held_out": (dict, "a mapping of error kinds to the reasons they could not be held out"),
        "warnings": (list, "a list of the fit's warnings"),
        "runs": (list, "a list of the runs fitted"),
    }
    for key, (kind, what) in kinds.items():
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise ValueError(f"{where}: {key} must be {what}, got {value!r:.60}")
    if any(not isinstance(t, dict) for t in (data.get("terms") or {}).values()):
        raise ValueError(f"{where}: terms must be a mapping of each term to its fit (status, value)")
    held = (data.get("errors") or {}).get("held_out") or {}
    if not isinstance(held, dict) or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"))
        for v in held.values()
    ):
        raise ValueError(f"{where}: errors: held_out must map plain, spec and all to errors (numbers or null)")
    if any(not isinstance(w, str) for w in data.get("warnings") or []):
        raise ValueError(f"{where}: warnings must be a list of the fit's warnings (text)")
    if any(
        not isinstance(r, list) or not all(isinstance(x, str) for x in r)
        for r in (data.get("not_held_out") or {}).values()
    ):
        raise ValueError(f"{where}: not_held_out must map error kinds to lists of reasons (text)")


def _check_profile(where: str, profile, base: object):
    """The calibration's fitted profile, refused where it is not its stated GPU's: a fit scales a profile's
    efficiencies, never its datasheet peaks, so those must be the built-in profile's it names.  Memory is not fitted
    either: it is the built-in profile's now (a file written before 2026-12-04 holds the datasheet's decimal reading,
    7% short of what the device reports)."""
    from specsim.describe.hardware import load_hardware

    if not isinstance(base, str) or not base:
        raise ValueError(f"{where}: base_hardware must be the profile the fit started from, got {base!r}")
    try:
        built_in = load_hardware(base)
    except (KeyError, ValueError):
        return profile  # a user's own profile file: nothing built in to compare with
    for key in ("peak_flop_per_s", "peak_bytes_per_s"):
        mine, theirs = getattr(profile, key), getattr(built_in, key)
        if mine is None or theirs is None or abs(mine / theirs - 1) > 1e-6:
            raise ValueError(
                f"{where}: the fitted profile's {key} is {mine:.4g} but {base}'s is {theirs:.4g}: this calibration "
                f"was not fitted on {base} (a fit scales a profile's efficiencies, never its peaks)"
            )
    # The GPU it names: the kernel tables it reads (the fit keeps its base's device) and the name every header prints.
    if profile.kernel_device != built_in.kernel_device:
        raise ValueError(
            f"{where}: the fitted profile reads the kernels of device {profile.kernel_device} but {base}'s are "
            f"{built_in.kernel_device}'s: this calibration was not fitted on {base} (a fit keeps its base's device)"
        )
    if not profile.name.startswith(f"{base}-"):
        raise ValueError(
            f"{where}: the fitted profile is named {profile.name!r}, not {base}'s ({base}-ENGINE-fitted, as "
            f"calibrate-engine names it): this calibration was not fitted on {base}"
        )
    return dataclasses.replace(profile, memory_bytes=built_in.memory_bytes)


def apply_to_engine(cal: Calibration, preset, drafter: type | None = None):
    """The preset with the calibration's time per iteration and round terms (its overlap rule is the version's).

    A round's host terms and the share of them hidden behind the GPU are those of the drafter kind the runs used (a
    draft model's rounds run serially where an EAGLE head's overlap); for a ``drafter`` of another kind the preset's
    round terms stay, said in the round's basis, and only the plain step's terms (per iteration, prompts) apply."""
    from specsim.engines import TERMS, SpecHost
    from specsim.speculation.drafters import drafter_class

    engine = preset.with_iteration_ms(cal.iteration_s * 1e3, cal.iteration_seq_s * 1e6)
    theirs = drafter_class(cal.drafter)
    basis = (
        f"fitted by calibrate-engine ({cal.said_file})"
        if fitted_any(cal.record.get("terms") or {})
        else f"the preset's, {preset.basis}: calibrate-engine fitted nothing ({cal.said_file})"
    )
    if drafter is not None and drafter is not theirs:
        # a file of plain runs alone (drafter null) was fitted to no rounds: drafter_class(None) is the default kind's
        fitted_to = f"was fitted to {theirs.label}'s" if cal.drafter is not None else "has no speculative runs"
        return dataclasses.replace(
            engine,
            basis=basis,
            spec_basis=f"the preset's, {preset.spec_basis}: {cal.name} "
            + (f"{fitted_to} rounds, not {drafter.label}'s" if cal.drafter is not None else fitted_to)
            + " (calibrate with this drafter's runs to fit its rounds)",
            calibration=f"{cal.name} (its plain steps; rounds the preset's: it {fitted_to})",
            calibration_file=cal.name,
            calibration_sha256=cal.sha256,
            prefill_scale=cal.prefill_scale,
            held_out_error=cal.speedup_error(),
            served_limits=cal.served_limits,
            # its runs' own still: an answer at another acceptance (--alpha) adds that reason to this one (judged_at)
            judged_acceptance=cal.acceptance,
        ).unjudged(
            f"{cal.name}'s held-out error is of {theirs.label}'s rounds, not {drafter.label}'s"
            if cal.drafter is not None
            else f"{cal.name} has no speculative runs: no held-out error of {drafter.label}'s rounds"
        )
    host = SpecHost(**cal.round_terms)
    terms = cal.record.get("terms") or {}
    fitted = [t for t in TERMS if (terms.get(t) or {}).get("status") == "fitted"]
    spec_basis = (
        f"fitted by calibrate-engine ({cal.name}): {', '.join(fitted)}, the others held at the preset"
        if fitted
        else f"the preset's, {preset.spec_basis}: {cal.name} fitted none of the round's terms (see its terms)"
    )
    if cal.overlap_share is not None:
        engine = dataclasses.replace(
            engine,
            overlap_share=cal.overlap_share,
            kernel_overlap_share=cal.overlap_share,
            overlap_basis=f"fitted by calibrate-engine ({cal.said_file})",
        )
    return dataclasses.replace(
        engine,
        basis=basis,
        spec=host,
        kernel_spec=host,
        spec_basis=spec_basis,
        calibration=cal.name,
        calibration_file=cal.name,
        calibration_sha256=cal.sha256,
        prefill_scale=cal.prefill_scale,
        held_out_error=cal.speedup_error(),
        served_limits=cal.served_limits,
        judged_acceptance=cal.acceptance,  # its runs' own: an answer at another sets the error aside (judged_at)
    )
