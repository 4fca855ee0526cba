"""Serving-engine presets: the CPU time per engine iteration and per speculative round that kernel times miss.

A serving engine does more per iteration than its GPU kernels: scheduling, preparing inputs, sampling,
detokenising and Python bookkeeping.  Kernel sums (and kernel-calibrated rooflines) miss it.  Each
preset holds, per engine *and version*:

Plain decoding
    ``iteration_s``: CPU/scheduler time per engine iteration on top of a roofline step (which already
    carries its profile's per-pass overhead), used with the ``hybrid`` and ``roofline`` sources;
    ``kernel_iteration_s``: the same on top of bare GPU time (``kernels`` and ``measured``).
    ``collective_s`` / ``kernel_collective_s``: time per tensor-parallel collective beyond the isolated
    all-reduce kernel.  Fitted to public per-token latencies (TPOT) of each engine
    (``silicon_sample.csv`` of aiconfigurator-core 0.12.0) minus each source's prediction, on a
    training half of the rows (:mod:`specsim.fidelity`).  Engines overlap most of a plain step's host
    work with the GPU (vLLM's async scheduling, SGLang's overlap scheduler); what they do not is in
    ``iteration_s``.

Speculative rounds (:class:`SpecHost`)
    The host work a speculative round adds, which no kernel measures: reading the accepted lengths
    back to the host, the rejection sampler and bookkeeping (``round_s``), launching and sampling each
    draft step (``step_s``), per-sequence scheduling of the drafted tokens (``seq_s``) and the work
    each sequence carries at each draft step (``seq_step_s``: its sampling, tree and mask building,
    acceptance bookkeeping, and what verifying its drafted tokens costs beyond the kernel tables):

        H(b, s) = round_s + s * step_s + b * seq_s + b * s * seq_step_s

    An n-gram proposal launches no draft step (s = 0 for ``step_s``) but its proposed tokens carry the
    per-sequence work as a chain's steps do (s = gamma for ``seq_step_s``).

    An engine that does not overlap it with the GPU (vLLM before 0.14, SGLang's spec v1, which turns
    its overlap scheduler off for EAGLE: sgl-project/sglang#9961) pays t_GPU + H per round; one that
    does (vLLM >= 0.14 for EAGLE and MTP, vllm-project/vllm#31998; SGLang spec v2 for top-k 1 chains,
    sgl-project/sglang#11398) hides a share h of it, max(t_GPU, h H) + (1 - h) H
    (:func:`specsim.deployment.round_seconds`): 40% for SGLang's spec v2, fitted to its measured gains
    over spec v1, and all of it for vLLM, whose gain no public measurement gives.  The
    terms are fitted to public speculative speedups across batch sizes (:mod:`specsim.spec_fit`,
    ``specsim/data/speculation_public.csv``) on the serial versions; an overlapping version does the
    same host work, hidden, so it carries the same terms.  ``spec`` applies on a roofline step,
    ``kernel_spec`` on bare GPU time.

A preset is named ``engine@version`` (``vllm@0.10``, ``sglang@0.5``); a bare name is the current
release (:data:`DEFAULT_VERSIONS`).  Every output that uses a preset names it, its version and terms.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

from .parallel import collective_count

__all__ = ["DEFAULT_ENGINE", "DEFAULT_VERSIONS", "ENGINES", "ENGINE_NAMES", "PRESETS", "EnginePreset", "SpecHost", "get_engine",
           "parse_version", "source_and_engine"]

#: Largest engine term accepted, seconds (a second per iteration is no engine anyone runs).
MAX_TERM_S = 1.0


def _check_term(owner: str, key: str, value: object) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and 0 <= value <= MAX_TERM_S):
        raise ValueError(f"engine {owner}: {key} must be a finite time in [0, {MAX_TERM_S:g}] seconds, got {value!r}")


@dataclass(frozen=True)
class SpecHost:
    """Host seconds a speculative round adds: per round, per draft step, per sequence of the batch and per sequence
    and draft step."""

    round_s: float = 0.0
    step_s: float = 0.0
    seq_s: float = 0.0
    seq_step_s: float = 0.0

    def check(self, owner: str) -> None:
        for key in TERMS:
            _check_term(owner, key, getattr(self, key))

    def seconds(self, batch: object, steps: object, seq_steps: object = None) -> np.ndarray:
        """H(b, s) = round_s + s * step_s + b * seq_s + b * s' * seq_step_s, broadcast over batch, steps and
        ``seq_steps`` s' (default ``steps``; an n-gram proposal's length, which launches no draft step)."""
        b, s = np.asarray(batch, dtype=float), np.asarray(steps, dtype=float)
        per_seq = s if seq_steps is None else np.asarray(seq_steps, dtype=float)
        return self.round_s + s * self.step_s + b * self.seq_s + b * per_seq * self.seq_step_s

    @property
    def is_zero(self) -> bool:
        return not any(getattr(self, key) for key in TERMS)

    @classmethod
    def rounded(cls, values) -> "SpecHost":
        """Terms from fitted seconds (in :data:`TERMS` order), rounded to what :meth:`describe` prints (0.01 ms, 0.001 ms,
        0.1 us, 0.1 us), so that a shipped constant is its fit exactly; a missing last term is 0."""
        digits = (5, 6, 7, 7)
        return cls(*(round(float(v), d) for v, d in zip(values, digits)))

    def describe(self) -> str:
        return (f"{self.round_s * 1e3:.2f} ms per round + {self.step_s * 1e3:.3f} ms per draft step + "
                f"{self.seq_s * 1e6:.1f} us per sequence + {self.seq_step_s * 1e6:.1f} us per sequence per draft step")


#: The terms of :class:`SpecHost`, in the order the fits use, with the override flag and its unit per second of each.
_TERM_FLAGS = {"round_s": ("--engine-round", 1e3), "step_s": ("--engine-step", 1e3), "seq_s": ("--engine-seq", 1e6),
               "seq_step_s": ("--engine-seq-step", 1e6)}
TERMS = tuple(_TERM_FLAGS)


@dataclass(frozen=True)
class EnginePreset:
    """Per-iteration and per-round times of one version of a serving engine, seconds."""

    name: str
    #: Which engine's kernels the kernel source reads for this preset.
    kernel_engine: str
    iteration_s: float
    kernel_iteration_s: float
    #: Where the plain-decoding numbers come from.
    basis: str
    collective_s: float = 0.0
    kernel_collective_s: float = 0.0
    version: str = ""
    #: What this version is, in a line (releases it covers, how it schedules speculation).
    release: str = ""
    spec: SpecHost = field(default_factory=SpecHost)
    kernel_spec: SpecHost = field(default_factory=SpecHost)
    #: Where the speculative terms come from.
    spec_basis: str = "no public measurement"
    #: Drafter kinds whose round host work this version overlaps with the GPU.
    overlap_kinds: frozenset = frozenset()
    #: Overlap only for chains (top-k 1), as SGLang's spec v2.
    overlap_chains_only: bool = False
    #: The share of a round's host work an overlapping version hides behind the GPU (:func:`round_seconds`), on a
    #: roofline step and on bare GPU time.
    overlap_share: float = 1.0
    kernel_overlap_share: float = 1.0
    #: Where the share comes from.
    overlap_basis: str = "no public measurement: all of it"
    #: The drafter always runs in the target's tensor-parallel group (SGLang's draft worker; no draft TP of its own).
    draft_shares_tp: bool = False
    #: A drafter's passes (draft steps, draft extend) carry the share of a source's per-pass overhead that their layers
    #: are of the target's: the overhead beyond the roofline is per kernel, so per layer (on the H200, the kernel
    #: database exceeds the bare roofline by 20 us per layer for Llama-3.1-8B and 24 us for Llama-3.2-1B at batch 1),
    #: and a one-layer EAGLE head does not pay a 32-layer target's.  The engine's per-draft-step host time covers their
    #: launch.  False for the preset that adds nothing: the article's model charges every pass the whole overhead.
    draft_overhead_by_layers: bool = True
    #: The calibration file whose fitted terms these are ("" for a shipped preset).
    calibration: str = ""
    #: Engine time per running sequence per iteration (scheduling, sampling and output processing of each request) on
    #: top of ``iteration_s``: 0 in the shipped presets (their public rows do not separate it), fitted by calibrate-engine
    #: where the user's runs span batch sizes and prompt lengths.
    iteration_seq_s: float = 0.0

    def __post_init__(self) -> None:
        for key in ("iteration_s", "kernel_iteration_s", "collective_s", "kernel_collective_s", "iteration_seq_s"):
            _check_term(repr(self.name), key, getattr(self, key))
        self.spec.check(repr(self.name))
        self.kernel_spec.check(repr(self.name))
        for key in ("overlap_share", "kernel_overlap_share"):
            share = getattr(self, key)
            if not (isinstance(share, (int, float)) and not isinstance(share, bool) and 0.0 <= share <= 1.0):
                raise ValueError(f"engine {self.name!r}: {key} must be a share in [0, 1], got {share!r}")

    @property
    def key(self) -> str:
        """``name@version`` (just the name for the preset that adds nothing)."""
        return f"{self.name}@{self.version}" if self.version else self.name

    @property
    def label(self) -> str:
        """The key, and the calibration file whose terms it carries where it carries one's."""
        return self.key + (f" calibrated by {self.calibration}" if self.calibration else "")

    def overlaps(self, drafter_kind: str | None, draft_width: object = 1) -> bool:
        """Whether this version overlaps a round's host work with the GPU for this drafter and draft width."""
        if drafter_kind not in self.overlap_kinds:
            return False
        return not self.overlap_chains_only or bool(np.all(np.asarray(draft_width) == 1))

    def hidden_share(self, drafter_kind: str | None, draft_width: object = 1) -> float:
        """The share of a round's host work this version hides behind the GPU for this drafter (0: serial)."""
        return float(self.overlap_share) if self.overlaps(drafter_kind, draft_width) else 0.0

    def iteration_time(self, batch: object) -> np.ndarray | float:
        """The engine's time around one iteration of ``batch`` running sequences: e_iter + b * e_seq_iter."""
        if not self.iteration_seq_s:
            return self.iteration_s
        return self.iteration_s + self.iteration_seq_s * np.asarray(batch, dtype=float)

    def round_host(self, batch: object, steps: object, seq_steps: object = None) -> np.ndarray:
        """H(b, s): the host seconds a round adds (:class:`SpecHost`)."""
        return self.spec.seconds(batch, steps, seq_steps)

    def describe(self) -> str:
        if self.name == "none":
            return "engine: none (no CPU time added)"
        overlap = (f"{self.overlap_share:.0%} of it overlapped with the GPU ({self.overlap_basis}) for "
                   + ", ".join(sorted(self.overlap_kinds))
                   + (" chains (top-k 1)" if self.overlap_chains_only else "") + ", serial otherwise"
                   if self.overlap_kinds else "serial (not overlapped with the GPU)")
        kind = f"calibrated by {self.calibration}" if self.calibration else "preset"
        return (f"engine: {self.key} {kind} ({self.release}); per iteration {self.iteration_s * 1e3:.2f} ms on a roofline step, "
                f"{self.kernel_iteration_s * 1e3:.2f} ms on GPU time ({self.basis})"
                + (f" + {self.iteration_seq_s * 1e6:.1f} us per sequence" if self.iteration_seq_s else "")
                + (f"; {self.collective_s * 1e6:.1f} us more per tensor-parallel collective" if self.collective_s else "")
                + f"; speculative round host time {self.spec.describe()} ({self.spec_basis}), {overlap}")

    def collectives_s(self, model) -> float:
        """Engine time of a pass's tensor-parallel collectives (2 per layer and the logits gather); 0 on one GPU."""
        return self.collective_s * collective_count(model)

    def for_source(self, source: object) -> "EnginePreset":
        """The preset as it applies to a step-time source: sources of bare GPU time take the ``kernel_`` terms."""
        if getattr(source, "gpu_time_only", False):
            return dataclasses.replace(self, iteration_s=self.kernel_iteration_s, collective_s=self.kernel_collective_s,
                                       spec=self.kernel_spec, overlap_share=self.kernel_overlap_share)
        return self

    def with_iteration_ms(self, ms: float, seq_us: float | None = None) -> "EnginePreset":
        """The preset with an explicit per-iteration time (``--engine-overhead-ms``) and, where given, per-sequence time."""
        s = ms / 1e3
        out = dataclasses.replace(self, iteration_s=s, kernel_iteration_s=s, basis="set by --engine-overhead-ms")
        if seq_us is not None:
            _check_term(repr(self.name), "iteration_seq_s", seq_us / 1e6)
            out = dataclasses.replace(out, iteration_seq_s=seq_us / 1e6)
        return out

    def with_spec(self, round_ms: float | None = None, step_ms: float | None = None, seq_us: float | None = None,
                  overlap: bool | None = None, seq_step_us: float | None = None) -> "EnginePreset":
        """The preset with some speculative terms replaced (``--engine-round-ms``, ``--engine-step-ms``,
        ``--engine-seq-us``, ``--engine-seq-step-us``, ``--engine-overlap``); the others keep the preset's values."""
        given = dict(zip(TERMS, (round_ms, step_ms, seq_us, seq_step_us)))
        if all(v is None for v in given.values()) and overlap is None:
            return self
        changes = {k: v / _TERM_FLAGS[k][1] for k, v in given.items() if v is not None}
        for key, value in changes.items():
            _check_term(repr(self.name), key, value)
        spec = dataclasses.replace(self.spec, **changes)
        kernel_spec = dataclasses.replace(self.kernel_spec, **changes)
        named = ", ".join(_TERM_FLAGS[k][0] for k in changes)
        out = dataclasses.replace(self, spec=spec, kernel_spec=kernel_spec,
                                  spec_basis=self.spec_basis + (f"; {named} set by the user" if named else ""))
        if overlap is not None:
            kinds = frozenset({"draft_model", "eagle", "eagle3", "mtp"}) if overlap else frozenset()
            out = dataclasses.replace(out, overlap_kinds=kinds, overlap_chains_only=False,
                                      release=out.release + f"; overlap {'on' if overlap else 'off'} by --engine-overlap")
        return out


_BASIS = "fitted to public TPOT, aiconfigurator-core 0.12.0 silicon_sample.csv"
_SPEC_BASIS = "fitted to public speculative speedups, specsim/data/speculation_public.csv"
_HEADS = frozenset({"eagle", "eagle3", "mtp"})
#: The batch sizes the fitted rows span: beyond them the per-sequence term is extrapolated, and outputs say so.
_VLLM_RANGE = " at batch 1-32 (beyond: extrapolated)"
_SGLANG_RANGE = " at batch 1-64 (beyond: extrapolated)"

# Plain-decoding values printed by benchmarks/validate_steptimes.py (tests/test_engines.py refits them).
_PLAIN = {
    "vllm": dict(kernel_engine="vllm", iteration_s=0.0, kernel_iteration_s=0.0,
                 basis=_BASIS + ", pooled over engines (no single-GPU vLLM rows)", collective_s=28.4e-6, kernel_collective_s=9.1e-6),
    "sglang": dict(kernel_engine="sglang", iteration_s=0.0, kernel_iteration_s=0.066e-3, basis=_BASIS + ", SGLang rows",
                   collective_s=12.5e-6, kernel_collective_s=15.1e-6),
    "trtllm": dict(kernel_engine="trtllm", iteration_s=0.20e-3, kernel_iteration_s=0.0, basis=_BASIS + ", TensorRT-LLM rows",
                   collective_s=23.9e-6, kernel_collective_s=12.3e-6),
}
# Speculative host terms printed by benchmarks/validate_speculation.py (tests/test_spec_fit.py refits them): fitted
# on each engine's serial versions, roofline step (spec) and GPU time (kernel_spec).
_VLLM_SPEC = SpecHost(round_s=0.0, step_s=0.425e-3, seq_s=0.0, seq_step_s=5.4e-6)
_VLLM_KERNEL_SPEC = SpecHost(round_s=0.0, step_s=0.475e-3, seq_s=0.2e-6, seq_step_s=6.8e-6)
_SGLANG_SPEC = SpecHost(round_s=2.62e-3, step_s=0.0, seq_s=4.2e-6, seq_step_s=50.3e-6)
_SGLANG_KERNEL_SPEC = SpecHost(round_s=3.87e-3, step_s=0.0, seq_s=26.4e-6, seq_step_s=64.7e-6)

# The share of H that SGLang's spec v2 hides (roofline step, GPU time), fitted to its measured gains over spec v1 (the
# overlap_gain rows; each row's share fitted on the other alone gives it within 1.1%): validate_speculation.py prints it.
_SGLANG_V2_SHARE = (0.40, 0.31)
_SGLANG_V2_SHARE_BASIS = "fitted to spec v2's measured gains, sgl-project/sglang#11398 and #12128"


def _preset(name: str, version: str, release: str, spec: SpecHost, kernel_spec: SpecHost, spec_basis: str,
            overlap: frozenset = frozenset(), chains_only: bool = False, share: tuple = (1.0, 1.0),
            share_basis: str = "no public measurement: all of it") -> EnginePreset:
    return EnginePreset(name=name, version=version, release=release, spec=spec, kernel_spec=kernel_spec, spec_basis=spec_basis,
                        overlap_kinds=overlap, overlap_chains_only=chains_only, overlap_share=share[0],
                        kernel_overlap_share=share[1], overlap_basis=share_basis, draft_shares_tp=name == "sglang",
                        **_PLAIN[name])


#: Every preset by ``name@version``.  The versions are where an engine changed how it schedules a round.
PRESETS = {p.key: p for p in (
    _preset("vllm", "0.10", "vLLM 0.10-0.13: V1 engine, speculative rounds serial (async scheduling off with speculation)",
            _VLLM_SPEC, _VLLM_KERNEL_SPEC, _SPEC_BASIS + ", vLLM rows" + _VLLM_RANGE),
    _preset("vllm", "0.14", "vLLM 0.14-0.27: async scheduling on by default with EAGLE/MTP (vllm-project/vllm#31998, "
            "0.14.0 of 2026-01-17); draft models and n-gram serial", _VLLM_SPEC, _VLLM_KERNEL_SPEC,
            _SPEC_BASIS + ", vLLM rows (serial versions; the same host work, overlapped)" + _VLLM_RANGE, _HEADS),
    # vllm/config/vllm.py of the 0.28.0 wheel first lets draft_model keep async scheduling by default (it is missing
    # from the methods that turn it off; 0.27.0 still lists it): vllm-project/vllm#48341, merged 2026-07-11.
    _preset("vllm", "latest", "vLLM 0.28 and later (vllm-project/vllm#48341): async scheduling also with draft models; "
            "n-gram serial", _VLLM_SPEC, _VLLM_KERNEL_SPEC,
            _SPEC_BASIS + ", vLLM rows (serial versions; the same host work, overlapped)" + _VLLM_RANGE,
            _HEADS | {"draft_model"}),
    _preset("sglang", "0.5", "SGLang 0.4-0.5.10, spec v1: the overlap scheduler is off for speculative decoding "
            "(sgl-project/sglang#9961; SGLANG_ENABLE_SPEC_V2 defaults to off up to 0.5.10, python/sglang/srt/environ.py)", _SGLANG_SPEC, _SGLANG_KERNEL_SPEC, _SPEC_BASIS + ", SGLang rows" + _SGLANG_RANGE),
    _preset("sglang", "latest", "SGLang 0.5.11 and later, spec v2 (sgl-project/sglang#11398; SGLANG_ENABLE_SPEC_V2 on by "
            "default from 0.5.11, the only worker from 0.5.14): "
            "rounds overlapped for top-k 1 chains, trees and n-gram serial", _SGLANG_SPEC, _SGLANG_KERNEL_SPEC,
            _SPEC_BASIS + ", SGLang rows (spec v1; the same host work, overlapped)" + _SGLANG_RANGE, _HEADS | {"draft_model"},
            chains_only=True, share=_SGLANG_V2_SHARE, share_basis=_SGLANG_V2_SHARE_BASIS),
    _preset("trtllm", "latest", "TensorRT-LLM 1.0-1.3: C++ runtime; speculative host terms 0", SpecHost(), SpecHost(),
            "no public measurement across batch sizes"),
)}
PRESETS["none"] = EnginePreset("none", "vllm", 0.0, 0.0, "no engine time", draft_overhead_by_layers=False)

#: The version a bare engine name means: the current release.
DEFAULT_VERSIONS = {"vllm": "latest", "sglang": "latest", "trtllm": "latest"}
#: Numbered releases each preset covers, (first, last) inclusive as (major, minor, patch): ``vllm@0.11`` is the 0.10
#: preset, ``vllm@0.33`` the current one.  The boundaries are where each engine changed how it schedules a round (see
#: each preset's release line); the current preset ends at the newest release whose source was read (vLLM 0.33.0,
#: SGLang 0.5.23), so that a later number is refused rather than assumed.
_RANGES = {"vllm": [((0, 10, 0), (0, 13, 99), "0.10"), ((0, 14, 0), (0, 27, 99), "0.14"), ((0, 28, 0), (0, 33, 99), "latest")],
           "sglang": [((0, 4, 0), (0, 5, 10), "0.5"), ((0, 5, 11), (0, 5, 23), "latest")],
           "trtllm": [((1, 0, 0), (1, 3, 99), "latest")]}
#: Other names of a version.
_ALIASES = {("sglang", "spec-v2"): "latest", ("sglang", "spec-v1"): "0.5", ("sglang", "0.4"): "0.5"}
#: A numbered version: digits only (ASCII), two or three parts, an optional release-candidate or post suffix.
_VERSION = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?((?:rc|\.post|post)[0-9]+)?", re.ASCII)


def parse_version(name: str, text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a numbered version, None if ``text`` is not one.

    >>> parse_version("vllm", "0.24.0"), parse_version("sglang", "0.5"), parse_version("vllm", "latest")
    ((0, 24, 0), (0, 5, 0), None)
    """
    m = _VERSION.fullmatch(text)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


ENGINE_NAMES = ("vllm", "sglang", "trtllm", "none")
#: The preset each bare name means (the current release).
ENGINES = {name: PRESETS[name if name == "none" else f"{name}@{DEFAULT_VERSIONS[name]}"] for name in ENGINE_NAMES}
DEFAULT_ENGINE = "vllm"


def _known(name: str) -> str:
    def show(v):
        return f"{v[0]}.{v[1]}" + (f".{v[2]}" if v[2] not in (0, 99) else "")

    ranges = [f"{show(a)}-{show(b)}" for a, b, _ in _RANGES[name]]
    return ", ".join(ranges + ["latest"] + [alias for (n, alias) in _ALIASES if n == name])


def get_engine(spec: str) -> EnginePreset:
    """A preset by ``name`` (the current release) or ``name@version``.

    A numbered version maps to the preset covering it (``vllm@0.11`` is ``vllm@0.10``); a version no preset
    covers is refused, and so is an empty one.

    >>> get_engine("vllm@0.11").key, get_engine("sglang").key, get_engine("vllm@0.33.0").key
    ('vllm@0.10', 'sglang@latest', 'vllm@latest')
    """
    text = str(spec).strip().lower()
    name, at, version = text.partition("@")
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}; choose {', '.join(ENGINE_NAMES)}, optionally with @version (vllm@0.10)")
    if at and not version:
        raise ValueError(f"--engine {spec!r} names no version after '@': give one ({name}@{DEFAULT_VERSIONS.get(name, 'latest')}) "
                         "or the bare name for the current release")
    if not version:
        return ENGINES[name]
    if name == "none":
        raise ValueError("engine 'none' has no versions")
    version = _ALIASES.get((name, version), version)
    if f"{name}@{version}" in PRESETS:
        return PRESETS[f"{name}@{version}"]
    number = parse_version(name, version)
    if number is not None:
        for first, last, key in _RANGES[name]:
            if first <= number <= last:
                return PRESETS[f"{name}@{key}"]
    raise ValueError(f"no {name} preset for version {version!r}; known: {_known(name)}")


def source_and_engine(hardware, timing: str | None = None, engine: str | None = None,
                      engine_overhead_ms: float | None = None, progress=None):
    """The step-time source and the engine preset that apply to it, as ``--timing`` and ``--engine`` choose them.

    ``timing`` and ``engine`` default to :data:`specsim.timing.DEFAULT_TIMING` and
    :data:`DEFAULT_ENGINE`; the kernel source reads the engine's own kernels, and
    GPU-time sources take the preset's GPU-time values; ``engine_overhead_ms``
    replaces the per-iteration time.

    >>> from specsim.hardware import load_hardware
    >>> source, preset = source_and_engine(load_hardware("h100-sxm"), "roofline", "trtllm")
    >>> source.name, round(preset.iteration_s * 1e3, 2)
    ('roofline', 0.2)
    """
    from .timing import DEFAULT_TIMING, make_source

    preset = engine if isinstance(engine, EnginePreset) else get_engine(DEFAULT_ENGINE if engine is None else engine)
    source = make_source(DEFAULT_TIMING if timing is None else timing, hardware, preset.kernel_engine, progress)
    preset = preset.for_source(source)
    if engine_overhead_ms is not None:
        preset = preset.with_iteration_ms(engine_overhead_ms)
    return source, preset
