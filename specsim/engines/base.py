"""What an engine preset holds (every engine has one per version), and how a version is read.

Serving-engine presets: the CPU time per engine iteration and per speculative round that kernel times miss.

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
    training half of the rows (:mod:`specsim.calibration.fidelity`).  Engines overlap most of a plain step's host
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
    (:func:`specsim.speculation.deployment.round_seconds`): 40% for SGLang's spec v2, fitted to its measured gains
    over spec v1, and all of it for vLLM, whose gain no public measurement gives.  The
    terms are fitted to public speculative speedups across batch sizes (:mod:`specsim.calibration.public`,
    ``specsim/calibration/data/speculation_public.csv``) on the serial versions; an overlapping version does the
    same host work, hidden, so it carries the same terms.  ``spec`` applies on a roofline step,
    ``kernel_spec`` on bare GPU time.

A preset is named ``engine@version`` (``vllm@0.10``, ``sglang@0.5``); a bare name is the current
release (:data:`DEFAULT_VERSIONS`).  Every output that uses a preset names it, its version and terms.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np

from specsim.core.names import given_as
from specsim.describe.parallel import collective_count

__all__ = [
    "HOST_STEP_UPPER_S",
    "MAX_TERM_S",
    "TERMS",
    "TERM_UNIT",
    "TERM_UPPER",
    "EnginePreset",
    "MetricNames",
    "RecurrentVerify",
    "SpecHost",
    "make_preset",
    "Release",
    "as_release",
    "bound_text",
    "parse_version",
    "preset_release",
]

#: Largest engine term accepted, seconds (a second per iteration is no engine anyone runs).
MAX_TERM_S = 1.0
#: The most an engine's host work per iteration, or per speculative round, is fitted to (seconds): a step that alone
#: holds a lone user under 10 tokens/s; past it, the runs are not of the deployment named.  It was 20 ms until
#: 2026-12-05, a guess at the most any engine spends beside its kernels; SGLang 0.4.10 on 8x MI300X serving
#: DeepSeek-V3 measured 25 ms [21, 29] per iteration (the LMSYS blog's runs,
#: examples/bench/public/mi300x-sglang-dsv3-mtp-lmsys): the guess refused a measurement.
HOST_STEP_UPPER_S = 100e-3
#: Upper bounds of the round's host terms where they are fitted (the public fit and calibrate-engine), seconds, in
#: :data:`TERMS` order: per round, per draft step, per sequence, per sequence and draft step.
TERM_UPPER = np.array([HOST_STEP_UPPER_S, 5e-3, 0.5e-3, 0.5e-3])
#: The unit each of them is fitted in (seconds, the same order): the solvers' scale, where the public fit's faint pull
#: towards 0 is measured, and what "moved by a share of itself" means near 0.  A tenth of each range as the ranges were
#: until 2026-12-05, so that the per-round bound widened then moves no fit's path.
TERM_UNIT = np.array([2e-3, 0.5e-3, 0.05e-3, 0.05e-3])


def _check_term(owner: str, key: str, value: object) -> None:
    if not (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_TERM_S
    ):
        raise ValueError(f"engine {owner}: {key} must be a finite time in [0, {MAX_TERM_S:g}] seconds, got {value!r}")


#: Decimal places of seconds :meth:`SpecHost.rounded` keeps per term (round, draft step, sequence, sequence and step).
ROUNDING_DIGITS = (5, 6, 7, 7)


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

    def seconds(self, batch: object, steps: object, seq_steps: object = None, proposes: bool = True) -> np.ndarray:
        """H(b, s) = round_s + s * step_s + b * seq_s + b * s' * seq_step_s, broadcast over batch, steps and
        ``seq_steps`` s' (default ``steps``; an n-gram proposal's length, which launches no draft step).

        ``proposes`` False: ``steps`` draft passes launched that propose no token (vLLM's batch at K = 0, which runs the
        drafter's first pass and returns before sampling it), s * step_s alone: no drafted token to verify, so no
        rejection sampler or accepted lengths (round_s), none scheduled per sequence (seq_s, seq_step_s)."""
        b, s = np.asarray(batch, dtype=float), np.asarray(steps, dtype=float)
        if not proposes:
            return np.broadcast_to(s * self.step_s, np.broadcast(b, s).shape).astype(float)
        per_seq = s if seq_steps is None else np.asarray(seq_steps, dtype=float)
        return self.round_s + s * self.step_s + b * self.seq_s + b * per_seq * self.seq_step_s

    @property
    def is_zero(self) -> bool:
        return not any(getattr(self, key) for key in TERMS)

    @classmethod
    def rounded(cls, values) -> "SpecHost":
        """Terms from fitted seconds (in :data:`TERMS` order), rounded to what :meth:`describe` prints (0.01 ms, 0.001 ms,
        0.1 us, 0.1 us), so that a shipped constant is its fit exactly; a missing last term is 0."""
        return cls(*(round(float(v), d) for v, d in zip(values, ROUNDING_DIGITS)))

    def describe(self) -> str:
        return (
            f"{self.round_s * 1e3:.2f} ms per round + {self.step_s * 1e3:.3f} ms per draft step + "
            f"{self.seq_s * 1e6:.1f} us per sequence + {self.seq_step_s * 1e6:.1f} us per sequence per draft step"
        )


@dataclass(frozen=True)
class RecurrentVerify:
    """How an engine version takes a pass of several tokens per sequence through recurrent (GDN, Mamba-2) layers.

    ``mode`` is ``checkpoint`` (one state written per token, the accepted prefix picks its own) or ``replay`` (one
    checkpoint and the logged inputs; :mod:`specsim.describe.recurrent`); ``extra_states`` is the scratch states a
    speculating sequence holds beyond one per draft token (SGLang and TensorRT-LLM size theirs by the draft tokens
    plus the bonus position); ``basis`` names the source file and version it was read from.
    """

    mode: str = "checkpoint"
    extra_states: int = 0
    basis: str = "no engine: the per-token checkpoints of vLLM's and SGLang's defaults"

    def __post_init__(self) -> None:
        from specsim.describe.ops import RECURRENT_VERIFY_MODES

        if self.mode not in RECURRENT_VERIFY_MODES:
            raise ValueError(
                f"recurrent verification must be one of {', '.join(RECURRENT_VERIFY_MODES)}, got {self.mode!r}"
            )
        if isinstance(self.extra_states, bool) or not isinstance(self.extra_states, int) or self.extra_states < 0:
            raise ValueError(f"recurrent scratch extra_states must be an integer >= 0, got {self.extra_states!r}")

    def scratch_tokens(self, gamma: object) -> np.ndarray:
        """Per-token scratch states a sequence speculating ``gamma`` tokens holds (0 when not speculating)."""
        g = np.asarray(gamma, dtype=float)
        return np.where(g > 0, g + self.extra_states, 0.0)

    def apply(self, model):
        """The model as this engine runs it: a hybrid target takes the engine's mode; any other model is returned as is."""
        if not getattr(model, "is_hybrid", False) or model.recurrent_verify == self.mode:
            return model
        return dataclasses.replace(model, recurrent_verify=self.mode)

    def describe(self) -> str:
        what = (
            "one state written per token, the accepted prefix's kept"
            if self.mode == "checkpoint"
            else "one checkpoint replayed from logged inputs"
        )
        return f"recurrent layers verified by {self.mode} ({what}; {self.basis})"


#: The terms of :class:`SpecHost`, in the order the fits use, with the override flag and its unit per second of each.
TERM_FLAGS = {
    "round_s": ("--engine-round-ms", 1e3),
    "step_s": ("--engine-step-ms", 1e3),
    "seq_s": ("--engine-seq-us", 1e6),
    "seq_step_s": ("--engine-seq-step-us", 1e6),
}
TERMS = tuple(TERM_FLAGS)


def spec_keyword(term: str) -> str:
    """The keyword :meth:`EnginePreset.with_spec` takes ``term`` by (a library caller's name for its flag).

    >>> spec_keyword("round_s"), spec_keyword("seq_step_s")
    ('round_ms', 'seq_step_us')
    """
    return TERM_FLAGS[term][0].removeprefix("--engine-").replace("-", "_")


@dataclass(frozen=True)
class EnginePreset:
    """Per-iteration and per-round times of one version of a serving engine, seconds."""

    def __repr__(
        self,
    ) -> str:  # a notebook's echo: which preset (its terms: describe(), the fields: dataclasses.fields)
        named = f", as {self.named}" if self.named and self.named != self.key else ""
        calibrated = f", calibrated by {self.calibration_file}" if self.calibration_file else ""
        return f"EnginePreset({self.key}{named}{calibrated})"

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
    #: The calibration file whose fitted terms these are ("" for a shipped preset), and the first 12 hex digits of its
    #: sha256 (which file, whatever its name).
    calibration: str = ""
    calibration_file: str = field(default="", compare=False)  #: the file's name alone (``calibration`` may say more)
    calibration_sha256: str = field(default="", compare=False)
    #: A calibration's measured error of a speedup, (share, where from), or (None, why it has none) where its fit kept
    #: no held-out error that describes this preset (:meth:`specsim.calibration.file.Calibration.speedup_error`); None
    #: for a shipped preset, whose error is the corpus's (:func:`specsim.answers.verdict.model_error`).
    held_out_error: tuple | None = field(default=None, compare=False)
    #: The limits a calibration's runs were served under, (max_num_seqs, max_batched_tokens, the speculating server's
    #: max_num_seqs where it differs, where they come from, the prefix-cache hit share they were fitted with, who chose
    #: the max_num_seqs where the file says) (:meth:`specsim.calibration.file.Calibration.served_limits`):
    #: what an answer on this preset takes for a limit not given (:func:`specsim.engines.default_limits`); None for a
    #: shipped preset, which takes the engine's own.
    served_limits: tuple | None = field(default=None, compare=False)
    #: The acceptance the runs behind ``held_out_error`` were measured at (a calibration's, on its own prompts): an
    #: answer at another is one no run judged (:meth:`judged_at`); None where the error is of no acceptance of its own.
    judged_acceptance: object | None = field(default=None, compare=False)
    #: Engine time per running sequence per iteration (scheduling, sampling and output processing of each request) on
    #: top of ``iteration_s``: 0 in the shipped presets (their public rows do not separate it), fitted by calibrate-engine
    #: where the user's runs span batch sizes and prompt lengths.
    iteration_seq_s: float = 0.0
    #: How this version verifies through recurrent layers, with the file and version it was read from.
    recurrent: RecurrentVerify = field(default_factory=RecurrentVerify)
    #: The numbered release ``--engine`` named where it maps to a preset of another name (``0.24.0`` for
    #: ``vllm@0.24.0``, preset ``vllm@0.14``): printed beside the preset, not part of its identity.
    asked: str = field(default="", compare=False)
    #: The software stack whose terms these are: ``cuda`` as shipped; ``rocm`` once placed on an AMD profile
    #: (:func:`specsim.engines.vllm.on_platform`, :func:`specsim.engines.sglang.on_platform`), or where a caller placed
    #: it itself.
    platform: str = "cuda"
    #: The engine's prefill speed over the step-time source's for a prompt (its efficiency on long, compute-bound
    #: passes relative to the profile's): 1 as shipped, fitted to the runs' TTFT by calibrate-engine.  A prompt's
    #: marginal time in an iteration is the source's over this.  The public TPOT rows the presets come from, predicted
    #: by the serving model with this and the time per iteration fitted per engine, ask 1.08 (SGLang) and 0.99
    #: (TensorRT-LLM) of the default source (benchmarks/validate_steptimes.py, table 1b; 0.86 and 0.81 of the kernel
    #: source, whose prompts are GEMMs and attention alone): 1 is kept, not fitted, since the presets' other terms are
    #: fitted under table 1's closed form.
    prefill_scale: float = 1.0
    #: The text ``--engine`` resolved to this preset (``vllm@0.24.0``, ``sglang@spec-v1``, ``vllm``), as
    #: :func:`specsim.engines.get_engine` read it: the release the user named, which the drafter check, the metrics
    #: reader and the writers go by (:attr:`named_as`).  Empty for a preset built directly.  Not part of its identity.
    named: str = field(default="", compare=False)
    #: Why this preset runs its rounds serially on the deployment it was built for, where its version would hide their
    #: host work elsewhere (:meth:`specsim.engines.engine.Engine.serial_rounds`); "" otherwise.
    serial_why: str = ""

    def __post_init__(self) -> None:
        if not (
            isinstance(self.prefill_scale, (int, float))
            and not isinstance(self.prefill_scale, bool)
            and 0.05 <= self.prefill_scale <= 20.0
        ):
            raise ValueError(
                f"engine {self.name!r}: prefill_scale must be a number in [0.05, 20], got {self.prefill_scale!r}"
            )
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
    def named_as(self) -> str:
        """What named this preset: the text ``--engine`` gave, else its key."""
        return self.named or self.key

    @property
    def label(self) -> str:
        """The key, and the calibration file whose terms it carries where it carries one's."""
        shown = f"{self.name} {self.asked} (preset {self.key})" if self.asked else self.key
        shown += ", its ROCm build" if self.platform == "rocm" else ""
        return shown + (f" calibrated by {self.calibration}" if self.calibration else "")

    def overlaps(self, drafter_kind: str | None, draft_width: object = 1) -> bool:
        """Whether this version overlaps a round's host work with the GPU for this drafter and draft width."""
        if drafter_kind not in self.overlap_kinds:
            return False
        return not self.overlap_chains_only or bool(np.all(np.asarray(draft_width) == 1))

    def hidden_share(self, drafter_kind: str | None, draft_width: object = 1) -> np.ndarray | float:
        """The share of a round's host work this version hides behind the GPU for this drafter (0: serial), per draft
        width where ``draft_width`` is an array (a version that overlaps chains only runs trees serially)."""
        if drafter_kind not in self.overlap_kinds:
            return 0.0
        if not self.overlap_chains_only:
            return float(self.overlap_share)
        if np.ndim(draft_width) == 0:
            return float(self.overlap_share) if float(draft_width) == 1 else 0.0
        return np.where(np.asarray(draft_width) == 1, float(self.overlap_share), 0.0)

    def iteration_time(self, batch: object) -> np.ndarray | float:
        """The engine's time around one iteration of ``batch`` running sequences: e_iter + b * e_seq_iter."""
        if not self.iteration_seq_s:
            return self.iteration_s
        return self.iteration_s + self.iteration_seq_s * np.asarray(batch, dtype=float)

    def round_host(
        self,
        batch: object,
        steps: object,
        seq_steps: object = None,
        proposes: bool = True,
        host: SpecHost | None = None,
    ) -> np.ndarray:
        """H(b, s): the host seconds a round adds (:class:`SpecHost`; ``proposes`` False: passes that propose none);
        ``host``: terms in place of this version's."""
        return (self.spec if host is None else host).seconds(batch, steps, seq_steps, proposes)

    def describe(self) -> str:
        if self.name == "none":
            return "engine: none (no CPU time added)"
        overlap = (
            f"{self.overlap_share:.0%} of it overlapped with the GPU ({self.overlap_basis}) for "
            + ", ".join(sorted(self.overlap_kinds))
            + (" chains (top-k 1)" if self.overlap_chains_only else "")
            + ", serial otherwise"
            if self.overlap_kinds
            else "serial (not overlapped with the GPU)"
        )
        prefill = "the calibration's" if self.calibration else "as shipped"
        where = (  # the ROCm build's is said in its release line; a calibration keeps the preset's (it fits no such term)
            "its ROCm build's, above"
            if self.platform == "rocm"
            else "fitted on public plain-decoding rows at TP 2-8, docs/reports/2026-12-01-fidelity.md; charged to every "
            "pass at tensor parallelism, a sharded drafter's steps too"
        )
        shown = self.label if self.calibration or self.asked else f"{self.key} preset"  # the release the runs named
        return (
            f"engine: {shown} ({self.release}); per iteration {self.iteration_s * 1e3:.2f} ms on a roofline step, "
            f"{self.kernel_iteration_s * 1e3:.2f} ms on GPU time ({self.basis})"
            + (f" + {self.iteration_seq_s * 1e6:.1f} us per sequence" if self.iteration_seq_s else "")
            + (
                f"; {self.collective_s * 1e6:.1f} us more per tensor-parallel collective ({where})"
                if self.collective_s
                else ""
            )
            + f"; prompts at x{self.prefill_scale:.2f} the source's speed ({prefill})"
            + f"; speculative round host time {self.spec.describe()} ({self.spec_basis}), {overlap}"
        )

    def collectives_s(self, model) -> float:
        """Engine time of a pass's tensor-parallel collectives (2 per layer and the logits gather); 0 on one GPU."""
        return self.collective_s * collective_count(model)

    def for_source(self, source: object) -> "EnginePreset":
        """The preset as it applies to a step-time source: sources of bare GPU time take the ``kernel_`` terms."""
        if getattr(source, "gpu_time_only", False):
            return dataclasses.replace(
                self,
                iteration_s=self.kernel_iteration_s,
                collective_s=self.kernel_collective_s,
                spec=self.kernel_spec,
                overlap_share=self.kernel_overlap_share,
            )
        return self

    def on_rocm(self, collective_s: float, said: str) -> "EnginePreset":
        """This preset as an engine's ROCm build runs it, marked as placed: ``collective_s`` per tensor-parallel
        collective (measured and kernel sources alike), ``said`` added to its release line.  The one place an engine's
        ROCm variant is made (vLLM's ``rocm_build``, SGLang's ``on_platform``)."""
        return dataclasses.replace(
            self,
            collective_s=collective_s,
            kernel_collective_s=collective_s,
            platform="rocm",
            release=f"{self.release}; {said}",
        )

    def plain_view(self) -> "EnginePreset":
        """This preset as plain decoding reads it: what only a speculative round reads (its host terms, overlap rule and
        draft rules) and its labels (version, release, bases) each set to one value, so that two presets whose plain
        decode steps and prompts are timed alike compare equal.  The release's rules that plain decoding does read
        (the KV policy, the default limits) live in :class:`~specsim.serving.limits.EngineLimits`, which a caller
        compares beside it (calibrate-engine's search for a better-fitting version of plain runs fits each such pair
        once).

        >>> from specsim.engines import PRESETS
        >>> PRESETS["sglang@0.5"].plain_view() == PRESETS["sglang@latest"].plain_view()  # overlap rules apart
        True
        >>> PRESETS["sglang@0.5"].plain_view() == PRESETS["trtllm@latest"].plain_view()
        False
        """
        return dataclasses.replace(
            self,
            basis="",
            version="",
            release="",
            spec=SpecHost(),
            kernel_spec=SpecHost(),
            spec_basis="",
            overlap_kinds=frozenset(),
            overlap_chains_only=False,
            overlap_share=1.0,
            kernel_overlap_share=1.0,
            overlap_basis="",
            draft_shares_tp=False,
            draft_overhead_by_layers=True,
            serial_why="",
        )

    def with_iteration_ms(self, ms: float, seq_us: float | None = None) -> "EnginePreset":
        """The preset with an explicit per-iteration time (``--engine-overhead-ms``) and, where given, per-sequence time."""
        s = ms / 1e3
        seq = {} if seq_us is None else {"iteration_seq_s": seq_us / 1e6}
        return dataclasses.replace(
            self, iteration_s=s, kernel_iteration_s=s, basis=f"set by {given_as('engine_overhead_ms')}", **seq
        )

    def unjudged(self, why: str) -> "EnginePreset":
        """This preset with its calibration's held-out error set aside because the answer rests on something its runs
        did not judge (``why``: a term a flag replaced, another drafter's rounds, an acceptance given beside the file),
        so that :func:`specsim.answers.verdict.model_error` takes the corpus's error, saying ``why``.  The one place
        such a fall-back is made; a second reason joins the first; a shipped preset, which keeps no error, is
        returned as it is.

        >>> p = EnginePreset("x", "vllm", 0.0, 0.0, "test")
        >>> p.unjudged("why") is p
        True
        >>> dataclasses.replace(p, held_out_error=(0.03, "f.yaml held out")).unjudged("why").held_out_error
        (None, 'why')
        """
        if self.held_out_error is None:
            return self
        share, said = self.held_out_error
        return dataclasses.replace(self, held_out_error=(None, why if share is not None else f"{said}; {why}"))

    def judged_at(self, acceptance: object, given: str) -> "EnginePreset":
        """This preset for an answer at ``acceptance`` (``given``: what gives it, in words): where its calibration's
        held-out error is of its runs at their own measured acceptance (:attr:`judged_acceptance`) and ``acceptance``
        is another, that error is set aside (:meth:`unjudged`), for the fit predicted each load with the acceptance its
        runs measured, never at one given in its place.  The one place this is decided: the command line, which knows
        only that a flag gives an acceptance before it reads it, passes the flag's text as ``acceptance``; the answers
        pass the one they are at (:func:`specsim.answers.verdict.judged_at`, which each answer that takes an acceptance
        calls), so that a library caller gets the same fall-back.  Once set aside, a second call changes nothing.

        >>> from specsim.speculation.acceptance import Acceptance
        >>> own = Acceptance(alpha=0.7)
        >>> p = EnginePreset("x", "vllm", 0.0, 0.0, "test", calibration_file="f.yaml")
        >>> p = dataclasses.replace(p, held_out_error=(0.03, "f.yaml held out"), judged_acceptance=own)
        >>> p.judged_at(Acceptance(alpha=0.7), "its own").held_out_error
        (0.03, 'f.yaml held out')
        >>> p.judged_at(0.8, "alpha 0.8").held_out_error
        (None, "f.yaml's held-out error is of its runs' own acceptance, not alpha 0.8")
        """
        own = self.judged_acceptance
        if own is None or acceptance is own or (type(acceptance) is type(own) and acceptance == own):
            return self
        why = f"{self.calibration_file}'s held-out error is of its runs' own acceptance, not {given}"
        return dataclasses.replace(self.unjudged(why), judged_acceptance=None)

    def with_spec(
        self,
        round_ms: float | None = None,
        step_ms: float | None = None,
        seq_us: float | None = None,
        overlap: bool | None = None,
        seq_step_us: float | None = None,
    ) -> "EnginePreset":
        """The preset with some speculative terms replaced (``--engine-round-ms``, ``--engine-step-ms``,
        ``--engine-seq-us``, ``--engine-seq-step-us``, ``--engine-overlap``); the others keep the preset's values."""
        given = dict(zip(TERMS, (round_ms, step_ms, seq_us, seq_step_us)))
        if all(v is None for v in given.values()) and overlap is None:
            return self
        changes = {k: v / TERM_FLAGS[k][1] for k, v in given.items() if v is not None}
        for key, value in changes.items():
            _check_term(repr(self.name), key, value)
        spec = dataclasses.replace(self.spec, **changes)
        kernel_spec = dataclasses.replace(self.kernel_spec, **changes)
        # as its caller gave each: the keyword (round_ms) to Python, the flag (--engine-round-ms) on the command line
        said_as = {k: given_as(spec_keyword(k), TERM_FLAGS[k][0]) for k in TERMS}
        overlap_named = given_as("overlap", "--engine-overlap")
        named = ", ".join(said_as[k] for k in changes)
        out = dataclasses.replace(
            self,
            spec=spec,
            kernel_spec=kernel_spec,
            spec_basis=self.spec_basis + (f"; {named} set by the user" if named else ""),
        )
        # a fit's held-out error is of its own terms: no run judged these
        replaced = ", ".join([said_as[k] for k in changes] + [overlap_named] * (overlap is not None))
        out = out.unjudged(f"{self.calibration}'s held-out error is of its fitted terms, not {replaced}")
        if overlap is not None:
            # on: the drafters any overlapping release hides, beside those this one hides already (n-gram from vLLM
            # 0.33, suffix from 0.34: Engine.release_overlaps), which "on" must not take back
            kinds = (
                (frozenset({"draft_model", "eagle", "eagle3", "mtp"}) | self.overlap_kinds) if overlap else frozenset()
            )
            out = dataclasses.replace(
                out,
                overlap_kinds=kinds,
                overlap_chains_only=False,
                release=out.release + f"; overlap {'on' if overlap else 'off'} by {overlap_named}",
            )
        return out


_BASIS = "fitted to public TPOT, aiconfigurator-core 0.12.0 silicon_sample.csv"
_SPEC_BASIS = "fitted to public speculative speedups, specsim/calibration/data/speculation_public.csv"
#: The drafter kinds whose rounds an overlapping version hides: the heads (EAGLE, EAGLE-3, MTP).
HEADS = frozenset({"eagle", "eagle3", "mtp"})


def make_preset(
    name: str,
    version: str,
    release: str,
    plain: dict,
    spec: SpecHost,
    kernel_spec: SpecHost,
    spec_basis: str,
    overlap: frozenset = frozenset(),
    chains_only: bool = False,
    share: tuple = (1.0, 1.0),
    share_basis: str = "no public measurement: all of it",
    draft_shares_tp: bool = False,
    recurrent: RecurrentVerify | None = None,
) -> EnginePreset:
    """One version's preset from its engine's plain-decoding terms ``plain`` and its round terms."""
    return EnginePreset(
        name=name,
        version=version,
        release=release,
        spec=spec,
        kernel_spec=kernel_spec,
        spec_basis=spec_basis,
        overlap_kinds=overlap,
        overlap_chains_only=chains_only,
        overlap_share=share[0],
        kernel_overlap_share=share[1],
        overlap_basis=share_basis,
        draft_shares_tp=draft_shares_tp,
        recurrent=recurrent or RecurrentVerify(),
        **plain,
    )


#: A numbered version: digits only (ASCII), two or three parts, then release-candidate, post and dev suffixes
#: (TensorRT-LLM's 1.2.0rc6.post1, SGLang's 0.4.10.post1).
_VERSION = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?((?:rc|\.post|post|\.dev|dev)[0-9]+)*", re.ASCII)
_TAIL = re.compile(r"(rc|\.?post|\.?dev)([0-9]+)", re.ASCII)
#: What a final release's tail sorts as: no pre-release (0), no post-release (-1), no dev-release (above every dev).
_FINAL = (0, 0, -1, math.inf)


class Release(tuple):
    """A pre-, post- or dev-release (1.3.0rc8, 0.4.10.post1): its (major, minor, patch), as every release is a tuple
    here, and its tail, ordered as PEP 440 orders versions (1.3.0.dev1 < 1.3.0rc7 < 1.3.0rc8 < 1.3.0 < 1.3.0.post1 <
    1.3.1).  A plain (major, minor, patch) tuple is a final release: compared with one, 1.3.0rc8 < (1, 3, 0).

    A tuple, not packaging's Version: every release bound in the engine modules is a plain tuple (``SCHEDULE_SINCE``,
    ranges to x.y.99), and those must keep comparing with what ``--engine`` names; packaging is no declared dependency
    (it arrives only through matplotlib's own requirements).

    >>> rc7, rc8, post = Release("1.3.0rc7"), Release("1.3.0rc8"), Release("1.3.0.post1")
    >>> rc7 < rc8 < (1, 3, 0) < post < (1, 3, 1), (1, 2, 99) < rc7, rc8 == (1, 3, 0)
    (True, True, False)
    >>> Release("1.1.0rc2.post2") < Release("1.1.0rc3"), str(Release("0.4.10.post1")), tuple(Release("0.4.10.post1"))
    (True, '0.4.10.post1', (0, 4, 10))
    """

    def __new__(cls, text: str):
        m = _VERSION.fullmatch(text)
        if m is None or not m.group(4):
            raise ValueError(f"not a pre-, post- or dev-release: {text!r}")
        self = super().__new__(cls, (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)))
        tail = text[m.end(3 if m.group(3) else 2) :]  # the whole tail (group 4 holds its last part alone)
        pre, post, dev = (0, 0), -1, math.inf
        for kind, n in _TAIL.findall(tail):
            if kind == "rc":
                pre = (-1, int(n))
            elif kind.endswith("post"):
                post = int(n)
            else:
                dev = int(n)
        if pre == (0, 0) and post == -1:  # a dev-release of a final sorts below its pre-releases (PEP 440)
            pre = (-2, 0)
        self.text = f"{self[0]}.{self[1]}.{self[2]}{tail}"
        self.key = (*self, *pre, post, dev)
        return self

    def __getnewargs__(self):
        return (self.text,)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Release({self.text!r})"

    def __hash__(self) -> int:
        return hash(self.key)

    def _other(self, other):
        if isinstance(other, Release):
            return other.key
        return (*other, *_FINAL) if isinstance(other, tuple) else None

    def __eq__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key == k

    def __ne__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key != k

    def __lt__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key < k

    def __le__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key <= k

    def __gt__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key > k

    def __ge__(self, other):
        k = self._other(other)
        return NotImplemented if k is None else self.key >= k


def bound_text(v) -> str:
    """A range's bound as the ranges say it: "0.10", "0.5.3", "1.3.0rc29" (a pre-release whole; x.y.0 and x.y.99 as x.y).

    >>> bound_text((0, 10, 0)), bound_text((0, 13, 99)), bound_text((0, 5, 3)), bound_text(Release("1.3.0rc29"))
    ('0.10', '0.13', '0.5.3', '1.3.0rc29')
    """
    if isinstance(v, Release):
        return str(v)
    return f"{v[0]}.{v[1]}" + (f".{v[2]}" if v[2] not in (0, 99) else "")


def as_release(version) -> tuple:
    """``version`` (a tuple, a list read from JSON, or a :class:`Release`) as a tuple that keeps its tail."""
    return version if isinstance(version, Release) else tuple(version)


def parse_version(name: str, text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a numbered version, a :class:`Release` where it has a pre-, post- or dev-release tail
    (ordered as PEP 440 orders them), None if ``text`` is not one.

    >>> parse_version("vllm", "0.24.0"), parse_version("sglang", "0.5"), parse_version("vllm", "latest")
    ((0, 24, 0), (0, 5, 0), None)
    >>> parse_version("trtllm", "1.2.0rc6.post1")  # a pre-release's post-release, as TensorRT-LLM numbers them
    Release('1.2.0rc6.post1')
    """
    m = _VERSION.fullmatch(text)
    if m is None:
        return None
    if m.group(4):
        return Release(text)
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def preset_release(name: str, preset, ranges) -> tuple[int, int, int]:
    """The one release ``preset`` stands for, which its answers, notes, refusals and writers are all read at: the
    release it was asked for (``specsim ... --engine vllm@0.24.0``), else the newest of its range in ``ranges``
    ((first, last, preset version) rows) as specsim read it.  A range that ends at x.y.99 (every patch of x.y) is read
    at x.y.0, the wheel whose source was read, and the one a writer can name (vllm@0.14 is vLLM 0.27.0, vllm@latest
    0.34.0); a range ending at a patch (sglang@0.5, 0.5.10) at that patch.  :func:`specsim.engines.named_release` asks
    it for a preset named by ``--engine``."""
    release = parse_version(name, preset.asked) if preset.asked else None
    if release is None:
        last = next((last for first, last, key in ranges if key == preset.version), ranges[-1][1])
        release = (last[0], last[1], 0) if last[2] == 99 else last
    return release


@dataclass(frozen=True)
class MetricNames:
    """The Prometheus sample names one engine's releases ``first``..``last`` export, as read from their source (``source``
    names the files and versions): what ``specsim watch`` and the ``--metrics`` readers look for on a page.

    A name is the sample's as a page shows it (a counter's with ``_total``); None where those releases export none.
    Acceptance comes from counters of drafts and accepted tokens where the engine has them, else from a counter of
    verification calls beside the generated tokens and finished requests, else from a gauge of the mean acceptance
    length (sampled: a page says what the engine's last logging window saw).
    """

    engine: str
    first: tuple  #: the first release these names hold for
    last: tuple  #: the last
    source: str  #: the files and versions the names were read from
    path: str  #: the page's path on the server
    prefix: str  #: what every one of the engine's names starts with
    model_label: str
    replica_label: str | None  #: the label telling data-parallel engines apart, where the engine sets one
    running: str  #: requests in the running batch (a gauge)
    waiting: str  #: requests queued (a gauge)
    requests: str  #: finished requests (a counter)
    prompt_tokens: str  #: a counter
    generation_tokens: str  #: a counter
    drafts: str | None = None  #: verification passes with a draft, per sequence (a counter)
    draft_tokens: str | None = None  #: drafted tokens (a counter)
    accepted: str | None = None  #: accepted drafted tokens (a counter)
    accepted_per_position: str | None = None  #: drafts whose token k was accepted, by ``position_label`` (a counter)
    drafted_per_position: str | None = None  #: drafts that proposed a token k, by ``position_label`` (a counter)
    position_label: str | None = None
    verify_calls: str | None = None  #: verification passes per sequence, counted when a request finishes
    accept_length_gauge: str | None = None  #: mean acceptance length over the engine's last logging window
    gamma_gauge: str | None = None  #: the draft length in use (a gauge)
    gamma_info: tuple | None = None  #: (info gauge, label) whose label holds the configured draft length
    #: Prompt tokens looked up in the prefix cache and those it served (counters): the share of prompt tokens the
    #: cache served since the server started (:func:`specsim.speculation.metrics.prefix_hit_from_page`).
    prefix_cache_queries: str | None = None
    prefix_cache_hits: str | None = None
    #: Each finished request's generated tokens, a histogram (its name, without ``_bucket``): how unequal the requests
    #: a window's acceptance averages over are (:func:`specsim.watch.windows.effective_requests`).
    generation_histogram: str | None = None
    #: Its upper edges (``le``, ``+Inf`` aside) where the engine fixes them whatever the model, as a replay writes
    #: them; () where they follow the longest sequence (vLLM's build_1_2_5_buckets(max_model_len):
    #: :func:`specsim.watch.replay.edges_125`).  A reader takes whatever edges a page has.
    generation_edges: tuple = ()
    #: (name, release) pairs: a metric a release before that one does not export; a page showing it is of that release
    #: or a later one.  A name is the metric's (a counter's without ``_total``, a histogram's without ``_bucket``).
    later: tuple = ()
    #: (name, release) pairs: a metric the releases after that one no longer export; a page showing it is of that
    #: release or an earlier one.
    earlier: tuple = ()
    #: Tokens, requests and verification passes are counted when a request finishes, not as they are generated.
    counted_at_finish: bool = False
    #: The per-position counters too (TensorRT-LLM's per-request metrics).
    per_position_at_finish: bool = False
    #: Counters carry ``_created`` samples (prometheus_client outside multiprocess mode).
    created: bool = False
    #: Labels the engine sets on its counters and on its gauges besides the model's, as (name, value) pairs of one
    #: ordinary launch (what a replay writes).
    counter_labels: tuple = ()
    gauge_labels: tuple = ()
    request_labels: tuple = ()  #: the finished-request counter's own (a finish reason)
    token_labels: tuple = ()  #: the prompt- and generated-token counters' own (SGLang's is_streaming)
    #: Decode iterations the acceptance-length gauge averages over (the engine's logging interval).
    gauge_window: int = 0
    note: str = ""  #: what a reader of these releases should know (said where it changes an answer)

    @property
    def releases(self) -> str:
        last = "" if self.first == self.last else f"-{bound_text(self.last)}"
        return f"{self.engine} {bound_text(self.first)}{last}"

    def counters(self) -> tuple[str, ...]:
        """Every counter name these releases export that a reader of acceptance or load uses (a histogram's ``_bucket``
        and ``_sum`` samples among them: counters too)."""
        names = (
            self.requests,
            self.prompt_tokens,
            self.generation_tokens,
            self.drafts,
            self.draft_tokens,
            self.accepted,
            self.accepted_per_position,
            self.drafted_per_position,
            self.verify_calls,
        )
        histogram = (
            (f"{self.generation_histogram}_bucket", f"{self.generation_histogram}_sum")
            if self.generation_histogram
            else ()
        )
        return tuple(n for n in names if n is not None) + histogram

    def gauges(self) -> tuple[str, ...]:
        names = (
            self.running,
            self.waiting,
            self.accept_length_gauge,
            self.gamma_gauge,
            self.gamma_info[0] if self.gamma_info else None,
        )
        return tuple(n for n in names if n is not None)

    @property
    def acceptance_basis(self) -> str:
        """Where these releases' acceptance comes from, in a line."""
        if self.drafts is not None:
            return "counters of drafts and accepted tokens" + (
                " (per position too)" if self.accepted_per_position else ""
            )
        if self.drafted_per_position is not None:
            return (
                f"{self.drafted_per_position} and {self.accepted_per_position} per position (counted as requests finish), "
                f"else {self.accepted} over {self.draft_tokens} / gamma"
            )
        if self.verify_calls is not None:
            return (
                f"{self.verify_calls} beside {self.generation_tokens} and {self.requests} (counted as requests finish): "
                "(generated - finished) / verification calls"
            )
        return f"the {self.accept_length_gauge} gauge, sampled (the engine's last logging window at each read)"
