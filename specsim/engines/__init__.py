"""Serving engines: one module per engine (:mod:`.vllm`, :mod:`.sglang`, :mod:`.trtllm`), each making one
:class:`~specsim.engines.engine.Engine` (its ``ENGINE``: versioned presets, what it calls each drafter, the platforms it
runs on, its metric names, config and benchmark writers), listed in :data:`REGISTRY`; what a preset holds is
:mod:`.base`'s.  Code outside this package asks the engine object and compares no engine name (a test holds it):
adding an engine is one module and one line of :data:`REGISTRY`.

A preset is named ``engine@version`` (``vllm@0.10``, ``sglang@0.5``); a bare name is the current release
(:data:`DEFAULT_VERSIONS`), a numbered release maps to the preset covering it (each module's ``RANGES``).  Every output
that uses a preset names it, its version and terms.
"""

from __future__ import annotations

import dataclasses

from specsim.core.names import draft_option, given_as
from specsim.engines import sglang, trtllm, vllm
from specsim.engines.base import (
    HOST_STEP_UPPER_S,
    MAX_TERM_S,
    TERM_FLAGS,
    TERM_UNIT,
    TERM_UPPER,
    TERMS,
    EnginePreset,
    MetricNames,
    SpecHost,
    bound_text,
    parse_version,
    preset_release,
)
from specsim.engines.engine import DefaultLimits, Engine, EngineSupport
from specsim.engines.writers import version_text

__all__ = [
    "DEFAULT_ENGINE",
    "DEFAULT_VERSIONS",
    "ENGINES",
    "ENGINE_NAMES",
    "REGISTRY",
    "MAX_TERM_S",
    "PRESETS",
    "TERMS",
    "TERM_FLAGS",
    "TERM_UNIT",
    "TERM_UPPER",
    "HOST_STEP_UPPER_S",
    "DefaultLimits",
    "Engine",
    "EnginePreset",
    "EngineSupport",
    "MetricNames",
    "SpecHost",
    "as_run_here",
    "check_platform",
    "default_limits",
    "metric_names",
    "draft_tp",
    "get_engine",
    "named_release",
    "release_said",
    "release_text",
    "engine_record",
    "parse_version",
    "source_and_engine",
]

#: Every engine, by the name ``--engine`` takes: adding one is its module and a line here.
REGISTRY: dict[str, Engine] = {e.name: e for e in (vllm.ENGINE, sglang.ENGINE, trtllm.ENGINE)}
#: The engine a command models when none is named.
DEFAULT_ENGINE = vllm.ENGINE.name
#: Every preset by ``name@version``; ``none`` adds no engine time (the reference article's model; its kernels are
#: read from the default engine's tables).
PRESETS = {p.key: p for e in REGISTRY.values() for p in e.presets}
PRESETS["none"] = EnginePreset("none", DEFAULT_ENGINE, 0.0, 0.0, "no engine time", draft_overhead_by_layers=False)
#: The version a bare engine name means: the current release.
DEFAULT_VERSIONS = {name: "latest" for name in REGISTRY}
_RANGES = {name: e.ranges for name, e in REGISTRY.items()}
_ALIASES = {(name, alias): key for name, e in REGISTRY.items() for alias, key in e.aliases.items()}

ENGINE_NAMES = tuple(REGISTRY) + ("none",)
#: The preset each bare name means (the current release).
ENGINES = {name: PRESETS[name if name == "none" else f"{name}@{DEFAULT_VERSIONS[name]}"] for name in ENGINE_NAMES}


def _known(name: str) -> str:
    ranges = [f"{bound_text(a)}-{bound_text(b)}" for a, b, _ in _RANGES[name]]
    return ", ".join(ranges + ["latest"] + [alias for (n, alias) in _ALIASES if n == name])


def get_engine(spec: str | EnginePreset) -> EnginePreset:
    """A preset by ``name`` (the current release) or ``name@version``; a preset is returned as it is (resolved once,
    where the CLI reads ``--engine``: :func:`specsim.cli.flags.engine_type`).

    A numbered version maps to the preset covering it (``vllm@0.11`` is ``vllm@0.10``); a version no preset
    covers is refused, and so is an empty one.  The preset keeps the text it was named by (:attr:`EnginePreset.named`).

    >>> get_engine("vllm@0.11").key, get_engine("sglang").key, get_engine("vllm@0.33.0").key
    ('vllm@0.10', 'sglang@latest', 'vllm@latest')
    >>> get_engine("vllm@0.11").named, get_engine(get_engine("SGLang")).named
    ('vllm@0.11', 'sglang')
    """
    if isinstance(spec, EnginePreset):
        return spec
    if not isinstance(spec, str):  # str(None) is "none", the engine that adds no time: a caller's None meant another
        raise TypeError(
            f"an engine is a name ({', '.join(ENGINE_NAMES)}, optionally with @version) or an EnginePreset, got "
            f"{type(spec).__name__}"
            + (
                f": None is not 'none' (no engine time); left out, an answer takes {DEFAULT_ENGINE}"
                if spec is None
                else ""
            )
        )
    text = spec.strip().lower()
    return dataclasses.replace(_resolve(spec, text), named=text)


def _resolve(spec: str, text: str) -> EnginePreset:
    """The preset ``text`` (``spec`` lower-cased and stripped) names: :func:`get_engine`'s parse, its one home."""
    name, at, version = text.partition("@")
    if name not in ENGINE_NAMES:
        import difflib

        close = difflib.get_close_matches(name, ENGINE_NAMES, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(
            f"unknown engine {name!r}; {hint}choose {', '.join(ENGINE_NAMES)}, optionally with @version (vllm@0.10)"
        )
    if name == "none" and at:
        raise ValueError("engine 'none' has no versions")
    if at and not version:
        raise ValueError(
            f"{given_as('engine')} {spec!r} names no version after '@': give one ({name}@{DEFAULT_VERSIONS[name]}) "
            "or the bare name for the current release"
        )
    if not version:
        return ENGINES[name]
    version = _ALIASES.get((name, version), version)
    if f"{name}@{version}" in PRESETS:
        return PRESETS[f"{name}@{version}"]
    number = parse_version(name, version)
    if number is not None:
        for first, last, key in _RANGES[name]:
            if first <= number <= last:
                return dataclasses.replace(PRESETS[f"{name}@{key}"], asked=version)
    raise ValueError(f"no {name} preset for version {version!r}; known: {_known(name)}{_unread(name, number)}")


def _unread(name: str, number: tuple | None) -> str:
    """Why a numbered release past every preset's range is refused (empty for any other version)."""
    engine = REGISTRY[name]
    if number is None or not engine.past_newest(number):
        return ""
    return (
        f" ({version_text(number)} is newer than the newest {engine.title} release specsim has read, {engine.newest}: "
        "its flags, config keys, metric names and defaults are unread)"
    )


def engine_record(preset: EnginePreset) -> dict:
    """What ``specsim engines`` shows of a preset: its terms, the releases it covers and the drafters its engine takes
    (the first release that takes each, and the source that says so), as ``--json`` carries them.

    >>> r = engine_record(get_engine("vllm@0.24.0"))
    >>> r["preset"], r["releases"], r["drafters"]["eagle3"].split(" (")[0], r["drafters"]["dspark"].split(" (")[0]
    ('vllm@0.14', '0.14.0-0.27.99', 'eagle3', 'dspark from 0.25.0')
    """
    engine = REGISTRY.get(preset.name)
    drafters = {}
    for kind, how in (engine.methods if engine else {}).items():
        # A drafter taken by the oldest release specsim covers is said so, not dated: older ones were not read.
        since = "" if how.since <= engine.ranges[0][0] else f" from {version_text(how.since)}"
        until = f" to {version_text(how.until)}" if how.until else ""
        drafters[kind] = f"{how.name}{since}{until}" + (" (every release covered)" if not since and not until else "")
        if engine.past_newest(how.since):  # its first release is past every preset: refused at each one specsim covers
            drafters[kind] += f" (newer than the newest release read, {engine.newest}: refused at every one covered)"
        drafters[kind] += f" ({how.where})"
    return {
        "preset": preset.key,
        "engine": engine.title if engine else preset.name,
        "releases": preset_releases(preset),
        "release": release_said(preset) or preset.release,
        "iteration_ms": preset.iteration_s * 1e3,
        "kernel_iteration_ms": preset.kernel_iteration_s * 1e3,
        "collective_us": preset.collective_s * 1e6,
        "round_host": preset.spec.describe(),
        "round_host_terms": {
            "round_ms": preset.spec.round_s * 1e3,
            "draft_step_ms": preset.spec.step_s * 1e3,
            "sequence_us": preset.spec.seq_s * 1e6,
            "sequence_step_us": preset.spec.seq_step_s * 1e6,
        },
        "overlapped_for": sorted(preset.overlap_kinds),
        "drafters": drafters,
        "description": preset.describe(),
    }


def preset_releases(preset: EnginePreset) -> str | None:
    """The releases ``preset`` covers, "0.28.0-0.33.99" (None: an engine specsim has no ranges for): what a calibration
    keeps beside the preset's key, so that a key whose releases a later specsim moves (``vllm@latest``) is not read as
    another's.

    >>> preset_releases(get_engine("vllm@0.24.0")), preset_releases(get_engine("none"))
    ('0.14.0-0.27.99', None)
    """
    name, _, key = preset.key.partition("@")
    for first, last, k in _RANGES.get(name, ()):
        if k == key:
            return f"{version_text(first)}-{version_text(last)}"
    return None


def named_release(spec: str | EnginePreset) -> tuple[str, tuple[int, int, int], str] | None:
    """(engine, release, how to name it) that ``--engine`` names: the one release its answers, refusals, metric names
    and writers all go by (:func:`~specsim.engines.base.preset_release`, its one home): a numbered release as given; a
    preset's key, alias, ``latest`` or a bare name the newest release it covers, as specsim read it; None for ``none``.

    >>> named_release("vllm@0.11.2"), named_release("vllm@0.10"), named_release("sglang"), named_release("none")
    (('vllm', (0, 11, 2), 'vllm 0.11.2'), ('vllm', (0, 13, 0), 'vllm@0.10 (vLLM 0.13.0, the newest release of 0.10-0.13)'), ('sglang', (0, 5, 23), 'sglang 0.5.23'), None)
    """
    preset = get_engine(spec)  # refuses what names no preset
    name, _, version = preset.named_as.partition("@")
    if name not in REGISTRY:  # none, or a preset a library user built for an engine specsim does not model
        return None
    engine = REGISTRY[name]
    release = preset_release(name, preset, engine.ranges)
    key = _ALIASES.get((name, version), version)
    if parse_version(name, version) is not None and f"{name}@{key}" not in PRESETS:
        return name, release, f"{name} {version}"
    if not version or key == "latest":
        return name, release, f"{name} {version_text(release)}"
    return name, release, f"{name}@{version} ({release_said(preset)})"


def release_text(preset: EnginePreset) -> str | None:
    """The release ``preset`` stands for, "0.27.0" (:func:`named_release`), as ``--json`` gives it; None for ``none``.

    >>> release_text(get_engine("vllm@0.14")), release_text(get_engine("sglang@0.5.3")), release_text(get_engine("none"))
    ('0.27.0', '0.5.3', None)
    """
    named = named_release(preset)
    return None if named is None else version_text(named[1])


def release_said(preset: EnginePreset) -> str:
    """The release a preset named without one is read at, in words ("vLLM 0.27.0, the newest release of 0.14-0.27");
    "" for a numbered release (its number says it) and for ``none``: what the step-time line, the writers and
    :func:`named_release` print beside the preset's key."""
    engine = REGISTRY.get(preset.name)
    if engine is None or preset.asked:
        return ""
    release = preset_release(preset.name, preset, engine.ranges)
    first, last = next(((a, b) for a, b, k in engine.ranges if k == preset.version), engine.ranges[-1][:2])

    return f"{engine.title} {version_text(release)}, the newest release of {bound_text(first)}-{bound_text(last)}"


def metric_names(spec: str | EnginePreset) -> tuple[MetricNames, tuple[int, int, int], str]:
    """(the names, the release, how to name it) of the Prometheus metrics the release ``--engine`` names exports: a
    numbered release as given, a preset or bare name the newest release it covers (:func:`named_release`).  A
    release that exports no speculative metric is refused, naming the first that does.

    >>> names, release, shown = metric_names("vllm@0.11.0")
    >>> names.drafts, release, shown
    ('vllm:spec_decode_num_drafts_total', (0, 11, 0), 'vllm 0.11.0')
    """
    named = named_release(spec)
    if named is None:
        raise ValueError(
            f"{given_as('engine')} none serves no metrics: name the engine the server runs (vllm, sglang or trtllm, "
            "with @version)"
        )
    name, release, shown = named
    tables = REGISTRY[name].metric_names
    for names in tables:
        if names.first <= release <= names.last:
            return names, release, shown
    first = tables[0]
    if release < first.first:
        v = version_text(first.first)
        raise ValueError(
            f"{shown} exports no speculative-decoding metrics that specsim reads ({name} {v} is the first: "
            f"{first.source})"
        )
    raise ValueError(
        f"{shown} is newer than the {name} releases whose metric names specsim read ({first.source}; up to "
        f"{'.'.join(map(str, tables[-1].last[:2]))})"
    )


def draft_tp(preset: EnginePreset, separate_model: bool, target_tp: int, requested: int | None) -> tuple[int, str]:
    """(the draft's tensor parallelism, a line naming the choice and the alternative) as ``preset``'s engine runs a
    drafter beside a target at TP ``target_tp`` (each engine module's ``draft_tp``); ``engine none`` takes what is asked,
    else 1.  ``separate_model`` is a draft model (heads follow their own rules)."""
    engine = REGISTRY.get(preset.name)
    if engine is None:
        tp = requested or 1
        flag = draft_option("tp")
        return tp, f"draft at TP {tp}" + (
            f" (no engine named; {flag} to change)" if requested is None else f" ({flag})"
        )
    return engine.draft_tp(preset, separate_model, target_tp, requested)


def default_limits(preset: EnginePreset, hardware, offline: bool = False) -> DefaultLimits:
    """The limits of ``preset``'s engine on ``hardware`` when the user sets none: those a calibration's runs were served
    under where ``preset`` carries them (its ``served_limits``), else the engine's own where specsim has read them
    (each engine's ``default_limits``), else the serving model's defaults, said so."""
    from specsim.core.defaults import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS

    engine = REGISTRY.get(preset.name)
    own = None if engine is None else engine.default_limits(preset, hardware, offline)
    if preset.served_limits is not None:  # a calibration's: its runs' server, whose prompts ride as the engine's do
        seqs, tokens, spec_seqs, where, hit = preset.served_limits[:5]
        return DefaultLimits(seqs, tokens, where, spec_seqs, own is not None and own.prefill_apart, hit)
    if own is not None:
        return own
    why = "specsim's defaults" + ("" if engine is None else f"; {engine.title}'s own are not read: give yours")
    return DefaultLimits(DEFAULT_MAX_NUM_SEQS, DEFAULT_MAX_BATCHED_TOKENS, why)


def limits_refused(preset: EnginePreset, max_num_seqs: int, max_batched_tokens: int) -> str | None:
    """Why ``preset``'s engine would not start with these limits (its own check, its source named), or None."""
    engine = REGISTRY.get(preset.name)
    return None if engine is None else engine.limits_refused(max_num_seqs, max_batched_tokens)


def check_platform(preset: EnginePreset, hardware) -> None:
    """Refuse an engine on hardware it does not run on (TensorRT-LLM on an AMD GPU): its presets, writers and benchmark
    plans would be for a deployment no one can make."""
    engine = REGISTRY.get(preset.name)
    platform = getattr(hardware, "platform", "cuda")
    if engine is None or platform in engine.platforms:
        return
    others = [name for name, e in REGISTRY.items() if platform in e.platforms]
    kind = {"rocm": "an AMD GPU (ROCm)", "cpu": "a CPU", "cuda": "an NVIDIA GPU"}.get(platform, platform)
    raise ValueError(
        f"{preset.name} does not run on {hardware.name}, {kind}: it runs on {', '.join(engine.platforms)}; engines "
        f"that run there: {', '.join(others) or 'none specsim models'}"
    )


def source_and_engine(
    hardware,
    timing: str | None = None,
    engine: str | None = None,
    engine_overhead_ms: float | None = None,
    progress=None,
    model=None,
):
    """The step-time source and the engine preset that apply to it, as ``--timing`` and ``--engine`` choose them.

    ``timing`` and ``engine`` default to :data:`specsim.timing.DEFAULT_TIMING` and
    :data:`DEFAULT_ENGINE`; for a target ``model`` the default source is :func:`specsim.timing.default_timing`'s (the
    measured kernels for a large MoE target at tensor parallelism that they compose, said in the source's notes); the
    kernel source reads the engine's own kernels, and GPU-time sources take the preset's GPU-time values;
    ``engine_overhead_ms`` replaces the per-iteration time.  The preset is as the engine's build for the profile's
    platform runs ``model`` (:meth:`specsim.engines.engine.Engine.on_platform`).

    >>> from specsim.describe.hardware import load_hardware
    >>> source, preset = source_and_engine(load_hardware("h100-sxm"), "roofline", "trtllm")
    >>> source.name, round(preset.iteration_s * 1e3, 2)
    ('roofline', 0.2)
    """
    from specsim.timing import DEFAULT_TIMING, default_source, make_source

    preset = engine if isinstance(engine, EnginePreset) else get_engine(DEFAULT_ENGINE if engine is None else engine)
    check_platform(preset, hardware)
    source, why = (None, None)
    if timing is None and model is not None:
        source, why = default_source(hardware, model, preset.kernel_engine, progress)
    if source is None:
        source = make_source(DEFAULT_TIMING if timing is None else timing, hardware, preset.kernel_engine, progress)
    else:
        source.notes.insert(0, why)
    preset = preset.for_source(source)
    engine = REGISTRY.get(preset.name)
    if engine is not None:
        preset = engine.on_platform(preset, hardware, model)
    if engine_overhead_ms is not None:
        from specsim.core.limits import check_real
        from specsim.engines.base import HOST_STEP_UPPER_S

        ms = check_real(
            "engine_overhead_ms", engine_overhead_ms, 0.0, HOST_STEP_UPPER_S * 1e3
        )  # --engine-overhead-ms's
        preset = preset.with_iteration_ms(ms)
    return source, preset


def as_run_here(preset: EnginePreset, hardware, target, drafter_kind: str | None = None) -> EnginePreset:
    """``preset`` as it runs ``target`` on ``hardware``: overlapped rounds for a drafter its release overlaps beyond the
    preset's kinds (:meth:`specsim.engines.engine.Engine.release_overlaps`), serial rounds where its engine cannot hide
    their host work there (:meth:`specsim.engines.engine.Engine.serial_rounds`), each said in its release line."""
    engine = REGISTRY.get(preset.name)  # None for engine none
    more = (
        "" if engine is None or drafter_kind in preset.overlap_kinds else engine.release_overlaps(preset, drafter_kind)
    )
    if more:
        kinds = preset.overlap_kinds | {drafter_kind}
        preset = dataclasses.replace(preset, overlap_kinds=kinds, release=f"{preset.release}; {more}")
    why = "" if engine is None else engine.serial_rounds(preset, hardware, target.kv_dtype)
    if not why:
        return preset
    return dataclasses.replace(
        preset,
        overlap_kinds=frozenset(),
        overlap_chains_only=False,
        release=f"{preset.release}; rounds serial: {why}",
        serial_why=why,
    )
