"""The deployment: the one place a forward pass or a round of speculative decoding gets its time.

A deployment is a target model served on a device (hardware profile, tensor parallelism), a drafter
(:mod:`specsim.speculation.drafters`), a source of step times (:mod:`specsim.timing`) and a serving engine's
preset (:mod:`specsim.engines`).  Every answer specsim gives (speedup, the optimal gamma or tree,
capacity, schedules, the serving simulation, reports) takes its times from here; none of them adds
pass times itself.

The time of a pass on the GPU is the source's, t(b, q, L) for b sequences of q new tokens over L cached
ones.  What the engine adds is composed here, from the preset's terms:

    t_decode = t_T(b, 1, L) + e_iter + b e_seq + c_T             a plain decode step of the target

    t_step   = t_D(b, w, L) + c_D                                one draft step, w tokens per sequence
                                                                 (1 for a chain, the top-k of a tree)
    t_fixed  = t_V(b, n, L) + t_X(b, n, L) + h(b, L)             verification of n tokens per sequence
               + e_iter + b e_seq + c_T + c_X                    (gamma + 1 for a chain), the head's
                                                                 draft-extend pass, the drafter's host time
    t_pass   = s * t_step + t_fixed                              s draft steps per round (gamma, or a
                                                                 tree's depth)
    H        = e_round + s * e_step + b * e_seq + b * s * e_ss   the engine's host work per round
    t_round  = t_pass + H                        (serial engines)
             = max(t_pass, h H) + (1 - h) H      (engines that overlap a share h of it with the GPU)

with ``e_iter`` the engine's time per iteration and ``e_seq`` per sequence of it (0 in the shipped presets; fitted by
calibrate-engine), ``c_T``, ``c_D``, ``c_X`` its time around the
tensor-parallel collectives of the target's, the draft's and the extend pass
(:meth:`specsim.engines.EnginePreset.collectives_s`), and ``e_round``, ``e_step``, ``e_seq``, ``e_ss`` the host
time a speculative round adds per round, per draft step, per sequence and per sequence and step
(:class:`specsim.engines.SpecHost`; n-gram lookup runs no draft step, so its s is 0 for ``e_step``, and its
proposed tokens count as steps for ``e_ss``).  Which engine versions overlap, for which drafters, and what share
h they hide is the preset's (:meth:`~specsim.engines.EnginePreset.hidden_share`).
``t_X`` is present only for drafters with a draft-extend pass (EAGLE, MTP), ``h`` only for n-gram lookup.
Everything is vectorised over broadcast batch, context, steps and token counts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS, DEFAULT_DRAFT, DEFAULT_HARDWARE, DEFAULT_TARGET
from specsim.core.limits import MAX_CONTEXT, as_calibration, check_int
from specsim.core.names import draft_option, given_as
from specsim.core.words import ends, points
from specsim.describe.hardware import (
    FP8_MATMUL_SPEEDUP,
    HardwareProfile,
    load_hardware,
)
from specsim.describe.models import ModelShape, catalog_draft, get_model, model_options
from specsim.describe.parallel import check_tp
from specsim.engines import (
    DEFAULT_ENGINE,
    REGISTRY,
    EnginePreset,
    SpecHost,
    as_run_here,
    draft_tp,
    get_engine,
    release_said,
    release_text,
    source_and_engine,
)
from specsim.engines.engine import draft_collectives_assumed, rocm_large_moe_said
from specsim.speculation.acceptance import _check_gamma, plan_arrays, tokens_per_round
from specsim.speculation.drafters import Drafter, DraftModel, drafter_class, drafter_runs_on, make_drafter
from specsim.speculation.fp8_cache import (
    fp8_cache_notes,
    graphless_assumed,
    graphless_draft_s,
    graphless_provenance,
)
from specsim.speculation.gpu_lookup import drafter_lookup_s, gpu_lookup_provenance
from specsim.timing import (
    LARGE_MOE_LONGER,
    LARGE_MOE_LONGER_KERNELS,
    large_moe,
    large_moe_at_tp,
)
from specsim.timing.assumptions import model_assumptions
from specsim.timing.base import StepTime, StepTimeSource

__all__ = [
    "BRIEF_HINT",
    "MAX_VOCAB_PADDING",
    "Deployment",
    "VocabularyMismatch",
    "check_shared_vocabulary",
    "DraftStep",
    "RoundFixed",
    "RoundOutcome",
    "RoundTime",
    "round_seconds",
    "speedup_from_round",
    "speedup_from_times",
    "speedup_of",
]

#: Largest difference in embedding rows read as padding of one vocabulary (Qwen2.5: 128; llama.cpp allows 100).
MAX_VOCAB_PADDING = 128


def round_seconds(
    steps: object, draft_step_s: object, fixed_s: object, host_s: object = 0.0, hidden: object = 0.0
) -> np.ndarray:
    """t_round = s * t_step + t_fixed, plus the engine's host work H, of which an engine that overlaps it with the
    GPU hides the share ``hidden`` behind the passes: t_pass + H when serial (``hidden`` 0), max(t_pass, h H) +
    (1 - h) H otherwise.  The one place a round's parts are added up (``hidden`` may be an array: per draft width).

    >>> round(float(round_seconds(4, 1.0e-3, 6.5e-3)), 6), round(float(round_seconds(4, 1.0e-3, 6.5e-3, 2e-3)), 6)
    (0.0105, 0.0125)
    >>> round(float(round_seconds(4, 1.0e-3, 6.5e-3, 2e-3, hidden=1.0)), 6), round(float(round_seconds(4, 1.0e-3, 6.5e-3, 2e-3, hidden=0.4)), 6)
    (0.0105, 0.0117)
    """
    passes = np.asarray(steps, dtype=float) * np.asarray(draft_step_s, dtype=float) + np.asarray(fixed_s, dtype=float)
    host = np.asarray(host_s, dtype=float)
    h = np.asarray(hidden, dtype=float)
    if not np.all((h >= 0.0) & (h <= 1.0)):
        raise ValueError(f"the hidden share of a round's host work must be in [0, 1], got {hidden!r}")
    return np.maximum(passes, h * host) + (1.0 - h) * host if np.any(h) else passes + host


def speedup_of(tokens: object, decode_s: object, round_s: object) -> np.ndarray:
    """S = E t_T / t_round: plain decoding spends a decode step per token, speculation a round per E tokens.  The one
    home of the speedup formula (:attr:`RoundOutcome.speedup`, the article's closed form with t_T = 1, the fits).

    >>> round(float(speedup_of(3.3616, 6.525e-3, 11.565e-3)), 3)
    1.897
    """
    return np.asarray(tokens, dtype=float) * np.asarray(decode_s, dtype=float) / np.asarray(round_s, dtype=float)


def speedup_from_round(alpha: object, gamma: object, t_target_s: object, t_round_s: object) -> np.ndarray:
    """Speedup S = E * t_T / t_round from a decode step and a round in seconds; exactly 1 at gamma = 0.

    >>> round(float(speedup_from_round(0.8, 4, 6.525e-3, 11.565e-3)), 3)
    1.897
    """
    g = np.asarray(gamma, dtype=float)
    # gamma = 0 is plain decoding: exactly 1, whatever rounding t_V picked up.
    return np.where(g == 0, 1.0, speedup_of(tokens_per_round(alpha, g), t_target_s, t_round_s))


def speedup_from_times(
    alpha: object, gamma: object, t_target_s: object, t_draft_s: object, t_verify_s: object
) -> np.ndarray:
    """Speedup S = E * t_T / (gamma * t_D + t_V) from pass times in seconds, no engine host time (the round from
    :func:`round_seconds`): what bare measured passes give.

    ``alpha`` is a per-token rate (float or array) or an :class:`~specsim.speculation.acceptance.Acceptance` (per-position).

    >>> round(float(speedup_from_times(0.8, 4, 6.525e-3, 1.26e-3, 6.525e-3)), 3)
    1.897
    """
    return speedup_from_round(alpha, gamma, t_target_s, round_seconds(gamma, t_draft_s, t_verify_s))


def default_draft(target: ModelShape) -> tuple[str, str]:
    """(the drafter where none is given, the line that says why): the model catalog's draft for a built-in target where
    it names one other than :data:`DEFAULT_DRAFT` (its family's smallest model, or a head where no smaller model shares
    its tokenizer: ``specsim models`` lists them), else DEFAULT_DRAFT with no line (the default pair, named in --help).

    >>> default_draft(get_model("qwen3-8b"))[0], default_draft(get_model("llama-3.1-70b"))
    ('qwen3-0.6b', ('llama-3.2-1b', ''))
    """
    named = catalog_draft(target.name)
    if named in (None, "none", DEFAULT_DRAFT):
        return DEFAULT_DRAFT, ""
    return (
        named,
        f"drafter {named}: no {given_as('draft')} given; the model catalog's draft for {target.name} (specsim models)",
    )


class VocabularyMismatch(ValueError):
    """A draft model whose tokenizer is not the target's (:func:`check_shared_vocabulary`)."""


def check_shared_vocabulary(target: ModelShape, draft: ModelShape) -> None:
    """Refuse a draft model whose tokenizer is not the target's.

    Speculative decoding compares the draft's and the target's distributions token by token: they must share a
    tokenizer.  Embedding tables padded to different multiples (Qwen2.5: 151,936 rows up to 7B, 152,064 from 14B;
    the ids past 151,646 are unused) are the same vocabulary; a larger difference is another tokenizer.
    """
    if abs(target.vocab_size - draft.vocab_size) > MAX_VOCAB_PADDING:
        raise VocabularyMismatch(
            f"target {target.name} has a vocabulary of {target.vocab_size:,} and draft {draft.name} "
            f"{draft.vocab_size:,}: the vocabularies differ, and a draft must share the target's tokenizer "
            f"(sizes up to {MAX_VOCAB_PADDING} apart are read as padding of one vocabulary)"
        )


def _plus(t: StepTime, extra_s: float) -> StepTime:
    """A step time with ``extra_s`` of engine time added to its total and overhead."""
    if not np.any(extra_s):
        return t
    return dataclasses.replace(t, total_s=t.total_s + extra_s, overhead_s=t.overhead_s + extra_s)


def _overhead_share(t: StepTime, share: float) -> StepTime:
    """A pass that keeps ``share`` of the per-pass overhead its source added (a roofline's; kernel sums add none)."""
    if not np.any(t.overhead_s) or share >= 1.0:
        return t
    cut = t.overhead_s * (1.0 - share)
    return dataclasses.replace(t, total_s=t.total_s - cut, overhead_s=t.overhead_s - cut)


def _zero_like(t: StepTime) -> StepTime:
    """A pass that costs nothing (an n-gram drafter's draft step), shaped like ``t``."""
    return dataclasses.replace(  # one array of zeros, as t is shaped, for each array part
        t,
        **dict.fromkeys(("total_s", "compute_s", "memory_s", "flop", "bytes"), np.zeros(np.shape(t.total_s))),
        overhead_s=0.0,
        fallback=None,
        comm_s=0.0,
    )


def _take_rows(t: StepTime, rows: np.ndarray, ndim: int) -> StepTime:
    """A pass timed once per distinct value along the leading axis (``ndim`` axes in all), spread to the candidates
    ``rows`` index; parts that do not vary along that axis have fewer axes and are kept."""
    return dataclasses.replace(
        t,
        **{
            f.name: getattr(t, f.name)[rows]
            for f in dataclasses.fields(t)
            if isinstance(getattr(t, f.name), np.ndarray) and getattr(t, f.name).ndim == ndim
        },
    )


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class DraftStep:
    """One draft step: the pass on the GPU (zero for n-gram lookup) and the engine's time around its collectives."""

    gpu: StepTime
    engine_s: float

    @property
    def total_s(self) -> np.ndarray:
        """t_step."""
        return self.as_step().total_s

    def as_step(self) -> StepTime:
        """The GPU pass with the engine's time in its total and overhead."""
        return _plus(self.gpu, self.engine_s)


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class RoundFixed:
    """What a round's passes cost once, whatever its draft steps: verification, the extend pass, the drafter's host
    time and the engine's per-iteration time."""

    verify: StepTime  #: the target's verification pass on the GPU
    extend: StepTime | None  #: the head's draft-extend pass on the GPU (None without one)
    host_s: np.ndarray | float  #: the drafter's host time (n-gram scan)
    engine_s: np.ndarray | float  #: e_iter + b e_seq + c_T + c_X
    total_s: np.ndarray  #: t_fixed
    #: the drafter's lookup kernels where the engine runs them on the GPU instead of host_s
    #: (:func:`specsim.speculation.gpu_lookup.gpu_lookup_s`)
    lookup_s: np.ndarray | float = 0.0
    #: the part of engine_s around the verification's and the extend pass's tensor-parallel collectives (c_T, c_X)
    collectives_s: tuple[float, float] = (0.0, 0.0)

    def as_step(self) -> StepTime:
        """The verification pass's parts with the whole fixed part as its total (engine time counted as overhead)."""
        out = dataclasses.replace(self.verify, total_s=self.total_s)
        return dataclasses.replace(out, overhead_s=out.overhead_s + self.engine_s) if np.any(self.engine_s) else out


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class RoundTime:
    """One speculative round: ``steps`` draft steps, the fixed part and the engine's host work, broadcast over
    (batch, context, steps, tokens)."""

    steps: np.ndarray
    draft: DraftStep
    fixed: RoundFixed
    host_s: np.ndarray | float = 0.0  #: H, the engine's host work per round
    overlapped: np.ndarray | float = 0.0  #: the share of H the engine overlaps with the round's passes (0: serial)
    #: Draft passes the round runs (None: one per draft step; a parallel drafter runs one for all of them).
    passes: np.ndarray | None = None
    #: What the round's draft steps run without a CUDA graph add over graphed ones, seconds
    #: (:func:`specsim.speculation.fp8_cache.graphless_draft_s`; 0 where the engine graphs every draft step).
    graphless_s: np.ndarray | float = 0.0

    @property
    def draft_passes(self) -> np.ndarray:
        """s in t_pass: the draft passes of the round (``steps`` for a chain drafter)."""
        return self.steps if self.passes is None else self.passes

    @property
    def passes_s(self) -> np.ndarray:
        """t_pass = s * t_step + t_fixed (+ the draft steps' time without a CUDA graph): the round's passes without the
        engine's host work."""
        return round_seconds(self.draft_passes, self.draft.total_s, self.fixed.total_s + self.graphless_s)

    @property
    def total_s(self) -> np.ndarray:
        """t_round: t_pass + H, or max(t_pass, h H) + (1 - h) H where the engine overlaps a share h of H."""
        return round_seconds(
            self.draft_passes, self.draft.total_s, self.fixed.total_s + self.graphless_s, self.host_s, self.overlapped
        )

    @property
    def exposed_host_s(self) -> np.ndarray:
        """The part of H the round waits for: all of it when serial, what the passes do not cover when overlapped."""
        return self.total_s - self.passes_s

    @property
    def hidden_host_s(self) -> np.ndarray:
        """The part of H that runs behind the GPU."""
        if not np.any(self.overlapped):
            return np.zeros(np.shape(self.total_s))
        host = np.broadcast_to(np.asarray(self.host_s, dtype=float), np.shape(self.total_s))
        return host - self.exposed_host_s

    def with_host(self, host_s: object, overlapped: object) -> "RoundTime":
        """The same passes with other host work and hidden share (what a fit of the engine's terms varies)."""
        return dataclasses.replace(self, host_s=host_s, overlapped=overlapped)

    def parts(self) -> dict[str, np.ndarray]:
        """Where the round's time goes, seconds per named part; the parts add up to :attr:`total_s`."""
        f, s = self.fixed, self.draft_passes
        parts = {
            "draft steps": s * self.draft.gpu.total_s,
            "draft-step collectives": s * self.draft.engine_s,
            "verification": f.verify.total_s,
        }
        if np.any(self.graphless_s):
            parts["draft steps without a CUDA graph"] = self.graphless_s
        if f.extend is not None:
            parts["draft extend"] = f.extend.total_s
        if np.any(np.asarray(f.host_s) != 0):
            parts["drafter host time"] = f.host_s
        if np.any(np.asarray(f.lookup_s) != 0):
            parts["drafter lookup on the GPU"] = f.lookup_s
        # The engine's time around tensor-parallel collectives apart from its time per iteration, as the draft steps'.
        parts["engine per iteration"] = f.engine_s - sum(f.collectives_s)
        parts |= {n: c for n, c in zip(("verification collectives", "draft-extend collectives"), f.collectives_s) if c}
        parts["engine host time"] = self.exposed_host_s
        return {name: np.broadcast_to(np.asarray(v, dtype=float), np.shape(self.total_s)) for name, v in parts.items()}


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields break a field-wise __eq__ and __hash__
class RoundOutcome:
    """What a round yields: ``tokens`` (E) per sequence in the round's time, against the plain decode step it replaces.

    Broadcast over the plan's axes (gamma, or candidate trees) and batch and context.  A round of no draft steps
    (gamma 0) is plain decoding: one token per decode step, speedup exactly 1.

    >>> out = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none").outcome(0.8, 4, 1, 1128)
    >>> round(float(out.tokens), 4), round(float(out.speedup), 3), round(float(out.latency_per_token_s) * 1e3, 3)
    (3.3616, 1.897, 3.441)
    """

    decode: StepTime  #: t_T: a plain decode step of the target, engine time included
    round: RoundTime  #: t_round with its named parts
    tokens: np.ndarray  #: E: tokens per sequence per round, the bonus token included
    acceptance: object  #: the acceptance the tokens came from (an alpha or an Acceptance)
    plan: object  #: the plan (a TreeSpec, gamma, or a sequence of TreeSpecs)

    def __repr__(self) -> str:  # a notebook's echo: the round's figures per point, not every part's arrays (round)
        return (
            f"RoundOutcome({points(np.shape(self.speedup))}: draft steps "
            f"{ends(np.broadcast_to(self.steps, np.shape(self.speedup)), 'g')}, tokens "
            f"{ends(np.broadcast_to(self.tokens, np.shape(self.speedup)), '.3f')}, speedup {ends(self.speedup, '.3f')}, "
            f"round {ends(self.time_s * 1e3, '.3f')} ms)"
        )

    @property
    def steps(self) -> np.ndarray:
        return self.round.steps

    @property
    def time_s(self) -> np.ndarray:
        """Seconds per round: t_round, or the decode step where the plan drafts nothing."""
        return np.where(self.steps == 0, self.decode.total_s, self.round.total_s)

    @property
    def speedup(self) -> np.ndarray:
        """S = E t_T / t_round (:func:`speedup_of`); exactly 1 where the plan drafts nothing."""
        return np.where(self.steps == 0, 1.0, speedup_of(self.tokens, self.decode.total_s, self.time_s))

    @property
    def latency_per_token_s(self) -> np.ndarray:
        """Seconds per generated token of one sequence (TPOT): the round's time over its tokens."""
        return self.time_s / np.asarray(self.tokens, dtype=float)

    def parts(self) -> dict[str, np.ndarray]:
        """Where the round's time goes (:meth:`RoundTime.parts`)."""
        return self.round.parts()

    # The numbers of the speedup formula, as the tables print them.
    @property
    def target(self) -> StepTime:
        """t_T, the decode step."""
        return self.decode

    @property
    def draft(self) -> StepTime:
        """One draft step, the engine's time around its collectives included."""
        return self.round.draft.as_step()

    @property
    def verify(self) -> StepTime:
        """The round's fixed part (verification, extend pass, drafter host time, engine per iteration) with the
        verification pass's roofline parts."""
        return self.round.fixed.as_step()

    @property
    def host_s(self) -> np.ndarray:
        """The engine's host time the round waits for."""
        return self.round.exposed_host_s

    @property
    def round_s(self) -> np.ndarray:
        """t_round (also where the plan drafts nothing: the round gamma 0 would run)."""
        return self.round.total_s

    @property
    def cost_ratio(self) -> np.ndarray:
        """c = t_D / t_T."""
        return self.draft.total_s / self.decode.total_s

    @property
    def verify_ratio(self) -> np.ndarray:
        """t_V / t_T: how much dearer a round's fixed part is than a decode step."""
        return self.verify.total_s / self.decode.total_s


def _defaults_taken(given: dict, profile, target, drafter, source, preset) -> tuple:
    """The parts of a deployment no argument chose, as (part, value) pairs (:attr:`Deployment.defaults_taken`)."""
    built = {
        "hardware": profile.name,
        "target": target.name,
        "draft": None if drafter is None else drafter.name,
        "timing": source.name,
        "engine": preset.key,
    }
    return tuple((part, value) for part, value in built.items() if given[part] is None and value is not None)


#: What closes :meth:`Deployment.brief`: where the rest is (a command printing everything already drops it).
BRIEF_HINT = "; -v for every source"


@dataclass(frozen=True)
class Deployment:
    """A target served on a device, with a drafter, a step-time source and an engine preset.

    ``drafter`` may be given as a draft model's :class:`~specsim.describe.models.ModelShape` (a draft-model
    drafter) or left None for a deployment that only decodes (``specsim steptime``).  ``source`` and ``engine``
    default to the command line's (:data:`specsim.timing.DEFAULT_TIMING`, the hybrid, and
    :data:`specsim.engines.DEFAULT_ENGINE`, vllm@latest); the article's bare roofline is ``timing="roofline"``,
    ``engine="none"``.

    Examples
    --------
    The article's preset: an 8B target, a 1B draft, an H100 and L = 1128, on the article's bare roofline with no
    engine time (the defaults, as on the command line, are :data:`specsim.timing.DEFAULT_TIMING` and
    :data:`specsim.engines.DEFAULT_ENGINE`).

    >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    >>> round(float(dep.decode(1, 1128).total_s) * 1e3, 3), round(float(dep.round_time(1, 1128, 4).total_s) * 1e3, 3)
    (6.525, 11.566)
    """

    hardware: HardwareProfile
    target: ModelShape
    drafter: Drafter | None = None
    source: StepTimeSource | None = None
    engine: EnginePreset | None = None
    #: Choices made for the user where they gave none, each with its source (the draft's TP under this engine).
    choices: tuple = ()
    #: The parts no argument chose, (part, value) pairs: ("hardware", "h100-sxm"), ("timing", "hybrid"), ...; their
    #: note is :meth:`defaults_said`.
    defaults_taken: tuple = ()

    def __repr__(self) -> str:  # a notebook's echo: who, on what, timed how (the fields in full: dataclasses.fields)
        drafter = f" + {self.drafter.name}" if self.drafter is not None else ""
        source = self.source.name if self.source is not None else "?"
        engine = self.engine.label if self.engine is not None else "?"  # the release asked for beside its preset
        return f"Deployment({self.target.name}{drafter} on {self.hardware.name}, {source} step times, engine {engine})"

    def __post_init__(self) -> None:
        if isinstance(self.drafter, ModelShape):
            object.__setattr__(self, "drafter", DraftModel(self.drafter.name, self.drafter))
        # One default for the library and the command line: the default step-time source and engine preset.
        if self.source is None:
            source, preset = source_and_engine(self.hardware, None, self.engine, model=self.target)
            object.__setattr__(self, "source", source)
            object.__setattr__(self, "engine", preset)
        elif self.engine is None:
            object.__setattr__(self, "engine", get_engine(DEFAULT_ENGINE).for_source(self.source))
        # A hybrid target's recurrent layers are verified as this engine version does it (its preset's rule).
        object.__setattr__(self, "target", self.engine.recurrent.apply(self.target))
        if isinstance(self.drafter, DraftModel):
            object.__setattr__(self, "drafter", self._cached_as_served(self.drafter))
        draft = self.draft
        if draft is None:
            return
        if draft.tp not in (1, self.target.tp):
            raise ValueError(
                f"draft tensor parallelism {draft.tp} must be 1 or the target's {self.target.tp} "
                "(vLLM's draft_tensor_parallel_size; SGLang and TensorRT-LLM run the draft at the target's)"
            )
        # (EAGLE-3 heads predict over a reduced draft vocabulary mapped onto the target's: no check there.)
        if self.drafter.shares_vocabulary:
            check_shared_vocabulary(self.target, draft)

    def _cached_as_served(self, drafter: DraftModel) -> DraftModel:
        """A draft model with the KV-cache dtype this engine keeps it in (:meth:`draft_cache`): the one home of the
        rule, applied whenever a deployment is made or its engine or draft changes."""
        own = drafter.own_kv_dtype or drafter.step_model.kv_dtype
        want = drafter.step_model.kv_dtype if drafter.kv_given else self.draft_cache(own)[0]
        if drafter.own_kv_dtype == own and drafter.step_model.kv_dtype == want:
            return drafter
        return dataclasses.replace(
            drafter, own_kv_dtype=own, step_model=dataclasses.replace(drafter.step_model, kv_dtype=want)
        )

    def draft_cache(self, own: str) -> tuple[str, str | None]:
        """(a draft model's KV-cache dtype where the user gave none, the engine's rule or None): the target's where the
        engine keeps one cache setting for both (the engine's ``draft_cache_rule``:
        :class:`~specsim.engines.engine.Engine`), else ``own``, its config's."""
        rule = getattr(REGISTRY.get(self.engine.name), "draft_cache_rule", None)
        return (own, None) if rule is None else (self.target.kv_dtype, rule)

    @property
    def draft(self) -> ModelShape | None:
        """The network one draft step runs (a draft model, an EAGLE or MTP head); None for n-gram or no drafter."""
        return None if self.drafter is None else self.drafter.step_model

    # -- construction ------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        hardware: "str | HardwareProfile | None" = None,
        target: str | None = None,
        draft: str | None = None,
        *,
        timing: str | None = None,
        engine: "str | EnginePreset | None" = None,
        engine_overhead_ms: float | None = None,
        target_options: dict | None = None,
        draft_options: dict | None = None,
        ngram_cpu_s_per_token: float | None = None,
        decode_only: bool = False,
        calibration=None,
        progress=None,
    ) -> "Deployment":
        """The one constructor: hardware and models by built-in name or file path (or the profile itself), with a
        step-time source and engine preset, and optionally a calibration of the user's engine.

        ``hardware`` and ``target`` default to :data:`~specsim.core.defaults.DEFAULT_HARDWARE` and ``DEFAULT_TARGET``;
        ``draft`` to the model catalog's draft for a built-in target where it names one (qwen3-0.6b for a Qwen3 target,
        eagle3 for Kimi K2; said in a note), else ``DEFAULT_DRAFT``.  ``draft`` is a drafter
        (:func:`specsim.speculation.drafters.make_drafter`): a model name or config.json, ``eagle``, ``eagle3``, ``mtp``
        or ``ngram``; ``decode_only`` builds a deployment without one.  ``target_options`` and
        ``draft_options`` go to :func:`~specsim.describe.models.get_model` (``weight_dtype``, ``kv_dtype``, ``tp``,
        ``routing_effective_experts``); a tensor-parallel size is checked against the profile's node.  ``timing``
        and ``engine`` default to :data:`specsim.timing.DEFAULT_TIMING` and :data:`specsim.engines.DEFAULT_ENGINE`, as
        on the command line (:func:`specsim.engines.source_and_engine`); ``engine_overhead_ms`` replaces the preset's
        per-iteration time.

        ``calibration`` (:func:`specsim.calibration.file.read_calibration`'s result) makes it the calibrated deployment,
        as ``--calibration`` does: its fitted profile, target, tensor parallelism, step-time source and engine, and
        its drafter where ``draft`` is None; an argument naming another deployment is refused; the engine preset
        carries the fitted terms.
        """
        t_opts, d_opts = model_options(target_options, "target_options"), model_options(draft_options, "draft_options")
        given = {"hardware": hardware, "target": target, "draft": draft, "timing": timing, "engine": engine}
        if calibration is not None:
            fixed = as_calibration(calibration).fixes(hardware, target, timing, engine, engine_overhead_ms, t_opts)
            hardware, target, timing, engine = fixed["hardware"], fixed["target"], fixed["timing"], fixed["engine"]
            t_opts = fixed["target_options"] | t_opts | {"tp": fixed["tp"]}
            if not decode_only and draft is None:
                draft = calibration.drafter or DEFAULT_DRAFT
                # the calibration sets every part; a calibration of plain runs names no drafter: the default's, said
                given = dict.fromkeys(given, "calibration") | {"draft": calibration.drafter and "calibration"}
                if calibration.draft_tp is not None and "tp" not in d_opts:
                    d_opts["tp"] = calibration.draft_tp
        hardware = DEFAULT_HARDWARE if hardware is None else hardware
        target = DEFAULT_TARGET if target is None else target
        defaulted = draft is None
        profile = hardware if isinstance(hardware, HardwareProfile) else load_hardware(hardware)
        # each TP as its caller gave it: target_options['tp'] to Python, --tp on the command line (core.names)
        for what, opts in ((given_as("target_options['tp']", "--tp"), t_opts), (draft_option("tp"), d_opts)):
            if opts.get("tp") is not None:
                check_tp(profile, opts["tp"], what)
        target_model = get_model(target, **t_opts)
        choices = ()
        if defaulted:  # (a decode-only deployment builds no drafter: nothing to say)
            draft, why = (DEFAULT_DRAFT, "") if decode_only else default_draft(target_model)
            choices = (why,) if why else ()
            given["draft"] = "the catalog" if why else None  # the catalog's choice says so in its own note
        source, preset = source_and_engine(profile, timing, engine, engine_overhead_ms, progress, target_model)
        kind = drafter_class(draft)
        preset = as_run_here(preset, profile, target_model, None if decode_only else kind.kind)
        if not decode_only:  # the release the preset was named by (EnginePreset.named); a misspelt drafter named first
            drafter_runs_on(kind, str(draft), preset)
        if not decode_only and kind.launches_steps and target_model.tp > 1:
            d_opts["tp"], line = draft_tp(preset, kind.shares_vocabulary, target_model.tp, d_opts.get("tp"))
            choices += (line,)
        try:
            drafter = None if decode_only else make_drafter(str(draft), target_model, d_opts, ngram_cpu_s_per_token)
            if calibration is not None:
                preset = calibration.apply(preset, None if decode_only else kind)
                choices += (calibration.said(),)
                given = dict.fromkeys(given, "calibration") | {"draft": given["draft"]}
            taken = _defaults_taken(given, profile, target_model, drafter, source, preset)
            return cls(profile, target_model, drafter, source, preset, choices, taken)
        except VocabularyMismatch as err:
            if defaulted:
                raise ValueError(
                    f"no {given_as('draft')} given, and the default draft {draft} does not share {target_model.name}'s "
                    f"tokenizer ({err}): give {given_as('draft')}, a smaller model of its family, eagle3 or ngram"
                ) from None
            raise

    def with_source(
        self,
        timing: str | None = None,
        engine: "str | EnginePreset | None" = None,
        engine_overhead_ms: float | None = None,
        progress=None,
    ) -> "Deployment":
        """This deployment with a step-time source and engine preset, by name (``vllm@0.10``) or as a preset (see
        :func:`specsim.engines.source_and_engine`)."""
        source, preset = source_and_engine(self.hardware, timing, engine, engine_overhead_ms, progress, self.target)
        return dataclasses.replace(self, source=source).with_engine(preset)

    def with_engine(self, preset: EnginePreset) -> "Deployment":
        """This deployment served by another engine preset, as that engine runs it here (serial rounds where it cannot
        hide their host work on this GPU and cache: :meth:`specsim.engines.engine.Engine.serial_rounds`)."""
        kind = getattr(self.drafter, "kind", None)
        return dataclasses.replace(self, engine=as_run_here(preset, self.hardware, self.target, kind))

    def with_draft(self, step_model: ModelShape) -> "Deployment":
        """The same deployment with the drafter's network replaced (another TP size or dtype of it, or another draft model)."""
        if self.drafter is None:
            return dataclasses.replace(self, drafter=DraftModel(step_model.name, step_model))
        return dataclasses.replace(self, drafter=self.drafter.with_step_model(step_model))

    def with_tp(self, tp: int) -> "Deployment":
        """The same deployment on ``tp`` tensor-parallel GPUs; a draft that ran at the target's TP (> 1) follows it."""
        draft = self.draft
        follows = draft is not None and draft.tp == self.target.tp and draft.tp > 1
        drafter = self.drafter
        if follows:
            drafter = drafter.with_step_model(dataclasses.replace(draft, tp=tp))
        return dataclasses.replace(self, target=dataclasses.replace(self.target, tp=tp), drafter=drafter)

    # -- passes ------------------------------------------------------------------------
    def gpu_pass(
        self, model: ModelShape, batch: object, tokens_per_seq: object, context: object, prompt: bool = False
    ) -> StepTime:
        """One forward pass of ``model`` on the GPU, as the step-time source gives it (no engine time); ``prompt``: the
        tokens are a prompt's, causal among themselves with the last sampled (:func:`specsim.timing.roofline.step_time`)."""
        return self.source.step_time(model, batch, tokens_per_seq, context, prompt=prompt)

    def pass_time(self, model: ModelShape, batch: object, tokens_per_seq: object, context: object) -> StepTime:
        """One engine iteration running a pass of ``model``: the GPU pass plus e_iter and the collectives' engine time."""
        return _plus(
            self.gpu_pass(model, batch, tokens_per_seq, context),
            self.engine.iteration_time(batch) + self.engine.collectives_s(model),
        )

    def drafter_pass(self, batch: object, tokens_per_seq: object, context: object) -> StepTime:
        """A pass of the drafter's network inside a round, with its layers' share of the source's per-pass overhead
        (:attr:`~specsim.engines.EnginePreset.draft_overhead_by_layers`)."""
        t = self.gpu_pass(self.draft, batch, tokens_per_seq, context)
        if not self.engine.draft_overhead_by_layers:
            return t
        return _overhead_share(t, self.draft.n_layers / self.target.n_layers)

    def prefill_s(self, prompt_tokens: object, draft: bool = False, cached_tokens: object = 0) -> np.ndarray:
        """The marginal time of prefilling ``prompt_tokens`` in an iteration that also decodes: t(1, P, 0) - t(1, 1, 0)
        from the step-time source, the first a prompt's pass (its tokens attend causally to each other, the LM head runs
        at its last; checked against passes measured on an H200, benchmarks/validate_iteration_steps.py) and the
        weights read once for both, 0 for no tokens, over the engine's prefill
        efficiency (:attr:`~specsim.engines.EnginePreset.prefill_scale`: 1 as shipped, fitted to TTFT by
        calibrate-engine).  With ``draft``, a speculating engine's drafter network (a draft model, an EAGLE or MTP head)
        runs over the same prompt tokens too; ``draft`` may be an array (which prompts' engines speculate).  What chunked
        prefill adds to the iteration it rides in (:mod:`specsim.serving.steady`, the one serving model).
        ``cached_tokens``: tokens of the same prompt already in the KV cache before these (a prefix-cache hit,
        :meth:`specsim.serving.limits.EngineLimits.prompt_split`), which the ``prompt_tokens`` attend over and whose KV
        the pass reads but does not compute: t(1, P, C) - t(1, 1, 0), the same at C = 0.

        >>> dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
        >>> [round(float(t) * 1e3, 2) for t in dep.prefill_s([0, 1, 1000])]
        [0.0, 0.0, 21.43]
        >>> round(float(dep.prefill_s(1000, draft=True)) * 1e3, 2)
        24.17
        >>> [round(float(t) * 1e3, 2) for t in dep.prefill_s([1000, 200], cached_tokens=[0, 800])]  # 800 cached
        [21.43, 0.05]
        """
        p = np.asarray(prompt_tokens, dtype=float)

        def marginal(model) -> np.ndarray:
            base, new = (
                np.asarray(self.gpu_pass(model, 1, 1, 0).total_s, dtype=float),
                self.gpu_pass(model, 1, np.maximum(p, 1.0), cached_tokens, prompt=True).total_s,
            )
            return np.asarray(new, dtype=float) - base

        total = marginal(self.target)
        if self.draft is not None and np.any(draft):
            total = np.where(draft, total + marginal(self.draft), total)
        else:
            total = np.broadcast_to(total, np.broadcast_shapes(total.shape, np.shape(draft)))
        return np.where(p > 0, total / self.engine.prefill_scale, 0.0)

    def prefill_base_s(self, draft: object = False) -> float | np.ndarray:
        """The base pass of an iteration that only prefills (no sequence decoding in it): the target's decode step of
        one sequence over no context, the engine's time included; the prompts' tokens add :meth:`prefill_s`.  With
        ``draft``, a speculating engine's drafter network passes over the batch too, its weights read once more: SGLang
        runs its draft extend after every prefill batch (``EAGLEWorker.forward_batch_generation``: an extend batch runs
        ``forward_target_extend`` then ``forward_draft_extend``, python/sglang/srt/speculative/eagle_worker.py,
        sgl-project/sglang at 00559ea), for EAGLE heads, MTP layers and draft models alike.  The one home of the base
        pass: the steady state, the simulator and calibrate-engine's runs take it from here.  ``draft`` may be an array
        (which runs or gammas speculate): the base per element."""
        base = float(np.asarray(self.decode(1, 0).total_s))
        if self.draft is None or not np.any(draft):
            return base if np.ndim(draft) == 0 else np.full(np.shape(draft), base)
        extend = float(np.asarray(self.gpu_pass(self.draft, 1, 1, 0).total_s))
        return base + extend if np.ndim(draft) == 0 else np.where(draft, base + extend, base)

    def past_positions(self, tokens: float):
        """The first of the target and the draft that one sequence of ``tokens`` tokens overflows (past its
        ``max_position_embeddings``), None where both hold it: what every refusal of a context or a request checks."""
        for model in (self.target, self.draft):
            if model is not None and model.max_position_embeddings and tokens > model.max_position_embeddings:
                return model
        return None

    def require_within_positions(self, tokens: int, give: str = "") -> None:
        """Refuse a context of ``tokens`` past what the target or the draft was built for (:meth:`past_positions`);
        ``give`` closes the line with what to give instead; ``tokens`` must be a whole number (NaN is named)."""
        check_int("context", tokens, 0, MAX_CONTEXT)
        model = self.past_positions(tokens)
        if model is not None:
            raise ValueError(
                f"a context of {int(tokens):,} tokens is past {model.name}'s max_position_embeddings "
                f"({model.max_position_embeddings:,})" + (f"; give {give} within it" if give else "")
            )

    def drafts_room(self, context: object) -> np.ndarray | None:
        """The draft tokens a round at ``context`` cached tokens per sequence can have verified before the target's
        last position (0 at the least), per element; None where the target states no positions.  vLLM schedules at
        most max_model_len - num_computed_tokens - 1 tokens of a request, its last sampled token and drafts, keeping a
        position for the token the round samples (vllm/v1/core/sched/scheduler.py 0.33.0 L852-857;
        num_sampled_tokens_per_step is 1 for a generating model, L154-161), and cuts its drafts to what it scheduled
        (L1013-1021); max_model_len is the target's positions unless the server is started shorter.  So a round at
        context L verifies at most max_position_embeddings - 2 - L drafts, and a gamma above that runs as that.

        >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
        >>> dep.drafts_room([1128, 131068, 131072]).tolist()
        [129942, 2, 0]
        """
        limit = self.target.max_position_embeddings
        return np.maximum(np.floor(limit - 2 - np.asarray(context, dtype=float)), 0).astype(np.int64) if limit else None

    def require_drafts_within_positions(self, context: int, gamma: int, give: str = "a context") -> None:
        """Refuse a round of ``gamma`` drafts at ``context`` that passes what :meth:`drafts_room` leaves: the engine
        would verify fewer than the answer prices (the gamma searches stop there instead); and any round, plain decoding
        too (``gamma`` 0), at a context where no decode step runs: vLLM ends a request once it holds max_model_len
        tokens (``check_stop``: request.num_tokens >= max_model_len, vllm/v1/core/sched/utils.py 0.33.0 L114-119), so
        its last decode step caches max_model_len - 2 tokens (its input token takes position max_model_len - 2, the
        token it samples is the last).  Refusals name ``give``, the flag the context came from."""
        limit, room = self.target.max_position_embeddings, self.drafts_room(context)
        if limit and context > limit - 2:
            raise ValueError(
                f"a context of {int(context):,} tokens leaves {self.target.name} no decode step: vLLM ends a request "
                f"once it holds max_model_len tokens ({limit:,}, its max_position_embeddings; request.num_tokens >= "
                "max_model_len, vllm/v1/core/sched/utils.py 0.33.0 L114-119), so a decoding sequence caches at most "
                f"{limit - 2:,}; give {give} of at most {limit - 2:,} tokens"
            )
        if room is not None and gamma > room:
            raise ValueError(
                f"gamma {gamma} at a context of {int(context):,} tokens drafts past {self.target.name}'s last positions "
                f"(max_position_embeddings {limit:,}): vLLM verifies {int(room)} draft token(s) there (a request's "
                "scheduled tokens stop at max_model_len - num_computed_tokens - 1, vllm/v1/core/sched/scheduler.py "
                f"0.33.0 L852-857); give a gamma of at most {int(room)}, or a context of at most "
                f"{max(limit - 2 - gamma, 0):,} tokens"
            )

    def decode(self, batch: object, context: object = DEFAULT_CONTEXT_TOKENS) -> StepTime:
        """t_decode: a plain decode step of the target (one token per sequence), engine time included."""
        return self.pass_time(self.target, batch, 1, context)

    def draft_step(
        self,
        batch: object,
        context: object = DEFAULT_CONTEXT_TOKENS,
        width: object = 1,
        steps: object = 1,
        tokens: object = None,
    ) -> DraftStep:
        """t_step: one draft pass of ``width`` tokens per sequence, or the tokens a parallel drafter's one pass carries for
        ``steps`` draft tokens (zero on the GPU for a drafter that runs no network)."""
        self._require_drafter()
        tokens = self.drafter.draft_tokens(np.asarray(steps, dtype=float), width) if tokens is None else tokens
        if (gpu := self.drafter.draft_pass(self, batch, tokens, context)) is None:
            return DraftStep(_zero_like(self.gpu_pass(self.target, batch, 1, context)), 0.0)
        return DraftStep(gpu, self.engine.collectives_s(self.draft))

    def round_fixed(self, batch: object, context: object, verify_tokens: object) -> RoundFixed:
        """t_fixed: the verification of ``verify_tokens`` per sequence and everything else a round pays once."""
        self._require_drafter()
        verify = self.gpu_pass(self.target, batch, verify_tokens, context)
        # A head re-reads the verified tokens to get the next round's hidden states; n-gram scans on the host, or in
        # kernels on the GPU where the engine runs it there (then after the verification, whose tokens it reads).
        extend, (host, lookup) = (
            self.drafter.extend(self, batch, verify_tokens, context),
            drafter_lookup_s(self, batch, context),
        )
        fixed = verify.total_s
        if np.any(host):
            fixed = fixed + host
        if np.any(lookup):
            fixed = fixed + lookup
        if extend is not None:
            fixed = fixed + extend.total_s
        # e_iter + b e_seq + c_T + c_X, in that order; c_T and c_X kept apart for the round's parts
        collectives = (
            self.engine.collectives_s(self.target),
            self.engine.collectives_s(self.draft) if extend is not None else 0.0,
        )
        engine_s = self.engine.iteration_time(batch) + collectives[0] + collectives[1]
        fixed = fixed + engine_s if np.any(engine_s) else fixed
        return RoundFixed(verify, extend, host, engine_s, fixed, lookup, collectives)

    def round_host(
        self, batch: object, steps: object, draft_width: object = 1, proposes: bool = True, host: SpecHost | None = None
    ) -> tuple[np.ndarray, float]:
        """(H, hidden): the engine's host work per round of ``steps`` draft steps, and the share of it this engine
        version overlaps with the GPU for this drafter and draft width (0: serial).  n-gram lookup launches no draft
        step; its ``steps`` proposed tokens carry the per-sequence work of steps.  ``proposes`` False: the steps are
        launched but propose no token (a batch at K = 0 whose engine still runs the drafter's pass:
        :func:`specsim.speculation.schedule.zero_k_speedup`), their launches alone (:meth:`specsim.engines.SpecHost.
        seconds`).  ``host``: terms in place of the engine's (what a calibration's fit varies at every step, without an
        engine made for each)."""
        self._require_drafter()
        steps = np.asarray(steps, dtype=float)
        return (
            self.engine.round_host(
                batch, self.drafter.launched_steps(steps), self.drafter.host_steps(steps), proposes, host
            ),
            self.engine.hidden_share(self.drafter.overlap_kind, draft_width),
        )

    def zero_k_round_s(self, batch: object, context: object = DEFAULT_CONTEXT_TOKENS) -> np.ndarray:
        """Seconds of an iteration at K = 0 where the engine still runs the drafter's first pass (vLLM from 0.24.0 inside
        a per-batch schedule: :data:`specsim.engines.vllm.OFF_RUNS_DRAFT_PASS`): the decode step, that pass as one draft
        step (and what it adds without a CUDA graph where the engine runs it so), and its launch on the host, a draft
        step that proposes no token (:meth:`round_host`, ``proposes`` False: :data:`specsim.engines.vllm.OFF_HOST_WORK`),
        hidden by the share this engine version hides of a round's."""
        return round_seconds(  # the decode step, the pass (without a CUDA graph where so), its launch: round_host's
            1.0,
            self.draft_step(batch, context).total_s,
            self.decode(batch, context).total_s + graphless_draft_s(self, 1.0),
            *self.round_host(batch, 1.0, 1, False),
        )

    def round_time(
        self,
        batch: object,
        context: object = DEFAULT_CONTEXT_TOKENS,
        steps: object = 1,
        draft_width: object = 1,
        verify_tokens: object = None,
    ) -> RoundTime:
        """t_round for ``steps`` draft steps of ``draft_width`` tokens and ``verify_tokens`` verified per sequence
        (default steps + 1: a chain of gamma = steps), broadcast over all of them."""
        s = np.asarray(steps, dtype=float)
        _check_gamma(s)
        n = s + 1.0 if verify_tokens is None else np.asarray(verify_tokens, dtype=float)
        host, overlapped = self.round_host(batch, s, draft_width)
        return RoundTime(
            s,
            self.draft_step(batch, context, draft_width, s),
            self.round_fixed(batch, context, n),
            host,
            overlapped,
            self.drafter.draft_passes(s),
            graphless_draft_s(self, s),
        )

    def outcome(
        self,
        acceptance: object,
        plan: object = 1,
        batch: object = 1,
        context: object = DEFAULT_CONTEXT_TOKENS,
        sibling: float | None = None,
    ) -> RoundOutcome:
        """What a round under ``plan`` yields at ``acceptance``: its tokens E, its time with named parts, and so its
        speedup and latency per token (:class:`RoundOutcome`), broadcast over the plan's axes, batch and context.

        ``plan`` is a :class:`~specsim.speculation.acceptance.TreeSpec`, gamma for a chain (a number or an array; a
        chain is the tree of top-k 1), or a sequence of trees, which adds a leading axis of candidates
        (:func:`~specsim.speculation.acceptance.plan_arrays`).  ``acceptance`` is an alpha (float or array) or an
        :class:`~specsim.speculation.acceptance.Acceptance`; ``sibling`` the tree's sibling factor.
        """
        extra = np.broadcast(np.asarray(batch), np.asarray(context)).ndim
        steps, width, verify = plan_arrays(plan, extra)
        if self.drafter is not None and not self.drafter.drafts_trees and np.any(width > 1):
            raise ValueError(
                f"token trees need a drafting network (draft model, EAGLE or MTP); {self.drafter.label} drafts a chain"
            )
        decode = self.decode(batch, context)  # first: the target's data are read before the drafter's
        if self.drafter is not None and self.drafter.max_steps is not None and np.any(steps > self.drafter.max_steps):
            raise ValueError(
                f"{self.drafter.label} drafts at most {self.drafter.max_steps} tokens a round (its block): "
                f"gamma {int(np.max(steps))} is beyond it"
            )
        # A drafter that verifies a prefix per request (DSpark, suffix decoding) says how many tokens, on average.
        verified = None if self.drafter is None else self.drafter.verified(self, acceptance, steps, batch, context)
        if verified is not None:
            tokens = tokens_per_round(acceptance, np.broadcast_to(steps, np.shape(verified)), verified=verified)
            return RoundOutcome(
                decode, self.round_time(batch, context, steps, width, 1.0 + verified), tokens, acceptance, plan
            )
        tokens = tokens_per_round(acceptance, plan, sibling)
        if tokens.ndim and steps.ndim and tokens.shape != steps.shape and tokens.size == steps.size:
            tokens = tokens.reshape(steps.shape)
        if np.ndim(width) and width.shape[0] > 1:
            r = self._candidate_rounds(batch, context, steps, width, verify)
        else:
            r = self.round_time(batch, context, steps, width, verify)
        return RoundOutcome(decode, r, tokens, acceptance, plan)

    def _candidate_rounds(
        self, batch: object, context: object, steps: np.ndarray, width: np.ndarray, verify: np.ndarray
    ) -> RoundTime:
        """The rounds of many candidate plans (a leading axis), each distinct draft width and verified size timed once."""
        # The tokens a draft pass carries: the width for a chain drafter, more for a parallel one's single pass.
        tokens = np.broadcast_to(self.drafter.draft_tokens(steps, width), width.shape)
        widths, wi = np.unique(tokens.reshape(-1), return_inverse=True)
        sizes, vi = np.unique(verify.reshape(-1), return_inverse=True)
        tail = (1,) * (width.ndim - 1)
        draft = self.draft_step(batch, context, tokens=widths.reshape((-1,) + tail))
        fixed = self.round_fixed(batch, context, sizes.reshape((-1,) + tail))
        n = width.ndim
        draft = DraftStep(_take_rows(draft.gpu, wi, n), draft.engine_s)
        fixed = dataclasses.replace(
            fixed,
            verify=_take_rows(fixed.verify, vi, n),
            extend=None if fixed.extend is None else _take_rows(fixed.extend, vi, n),
            total_s=np.asarray(fixed.total_s)[vi],
        )
        host, overlapped = self.round_host(batch, steps, width)
        return RoundTime(
            steps, draft, fixed, host, overlapped, self.drafter.draft_passes(steps), graphless_draft_s(self, steps)
        )

    def _require_drafter(self) -> None:
        if self.drafter is None:
            raise ValueError(
                f"this deployment of {self.target.name} has no drafter: a round needs a draft model, EAGLE, "
                "MTP or n-gram drafter"
            )

    # -- provenance --------------------------------------------------------------------
    def provenance(self) -> list[str]:
        """One line per input that shaped the step times: the source, the engine preset, precision and parallelism."""
        lines = [self.source.describe(), self.engine.describe()]
        if self.drafter is not None:
            lines += self.drafter.provenance()
            lines += self._draft_overhead_line()
            lines += graphless_provenance(self) + gpu_lookup_provenance(self)
        lines += model_assumptions(self.hardware, [m for m in (self.target, self.draft) if m is not None])
        if getattr(self.target, "is_hybrid", False):
            lines.append(self.engine.recurrent.describe())
        return lines + list(self.choices) + self.defaults_said()

    def defaults_said(self, timed: bool = True) -> list[str]:
        """The note naming specsim's defaults taken (:attr:`defaults_taken`; none where every part was given): the
        header names each part, and this which of them nobody chose.  ``timed`` False leaves out the step-time source,
        for an answer that times nothing (:meth:`memory_notes`)."""
        taken = [f"{part} {value}" for part, value in self.defaults_taken if timed or part != "timing"]
        return [f"specsim's defaults, not given: {', '.join(taken)}"] if taken else []

    def _draft_overhead_line(self) -> list[str]:
        """The per-pass overhead a draft pass inside a round sheds (drafter_pass: t_D differs from steptime's), as the
        source gives it (a profile's per pass and per layer; kernel sums add none): no line where it sheds none."""
        if self.draft is None:
            return []
        # at one sequence and the article's context, which a measured source's rows hold (at context 0 a source of
        # measured steps noted a point outside them that no answer asked for)
        whole = float(np.max(self.gpu_pass(self.draft, 1, 1, DEFAULT_CONTEXT_TOKENS).overhead_s))
        kept = float(np.max(self.drafter_pass(1, 1, DEFAULT_CONTEXT_TOKENS).overhead_s))
        if whole - kept <= 0:
            return []
        return [
            f"a draft pass inside a round carries its layers' share of the source's per-pass overhead: "
            f"{self.draft.n_layers}/{self.target.n_layers} of {whole * 1e3:.3f} ms = {kept * 1e3:.3f} ms, "
            f"{(whole - kept) * 1e3:.3f} ms less than a pass alone (as steptime times one) carries"
        ]

    def identity(self) -> dict:
        """The deployment as keys, for ``--json`` beside :meth:`provenance`'s sentences: specsim's version, the hardware
        profile, the target and the draft with their precision and tensor parallelism, the drafter, the step-time
        source, the engine as named and its preset, and the calibration file the preset carries with its sha256 (None
        without one)."""
        from specsim import __version__

        def model(m):
            return (
                None
                if m is None
                else {"name": m.name, "tp": m.tp, "weight_dtype": m.weight_dtype, "kv_dtype": m.kv_dtype}
            )

        return {
            "specsim_version": __version__,
            "hardware": self.hardware.name,
            "target": model(self.target),
            "drafter": None if self.drafter is None else self.drafter.kind,
            "draft": model(self.draft),
            "timing_source": self.source.name,
            "engine": self.engine.named_as,
            "engine_preset": self.engine.key,
            "engine_release": release_text(self.engine),
            "calibration": (
                {
                    "file": self.engine.calibration_file or self.engine.calibration,
                    "sha256": self.engine.calibration_sha256 or None,
                }
                if self.engine.calibration
                else None
            ),
        }

    def brief(self) -> str:
        """The provenance in one line: source, profile, kernel data, engine preset and version (all of it: provenance)."""
        engine = self.engine
        overlap = ""
        if self.drafter is not None and engine.name != "none":
            overlap = ", round host work " + ("overlapped" if engine.overlaps(self.drafter.overlap_kind) else "serial")
        models = [m for m in (self.target, self.draft) if m is not None]
        tags = []
        if {d for m in models for d in (m.weight_dtype, m.expert_dtype_)} & {"fp8", "int8"}:
            tags.append(f"FP8/INT8 matmuls at {FP8_MATMUL_SPEEDUP:g}x BF16")
        if any(m.is_moe for m in models):
            tags.append(
                "experts read as uniformly routed"
                if not any(m.routing_effective_experts for m in models)
                else "experts read under " + given_as("target_options['routing_effective_experts']")
            )
            if any(m.routing_correlation for m in models):
                tags.append(f"a sequence's tokens route alike (rho {max(m.routing_correlation for m in models):g})")
        if any(m.tp > 1 for m in models):
            tags.append("2 all-reduces per layer + logits gather per pass")
        assumed = f"; assumed: {', '.join(tags)}" if tags else ""
        shown = engine.label + (f" ({release_said(engine)})" if release_said(engine) else "")  # a preset's release
        return f"step times: {self.source.name} ({self.source.brief()}); engine {shown}{overlap}{assumed}{BRIEF_HINT}"

    def notes(self) -> list[str]:
        """What the step-time source could not answer from its own data, the choices made for the user, and defaults the
        configs relied on."""
        notes = list(self.choices) + self.defaults_said() + list(self.source.notes) + self._model_notes()
        notes += fp8_cache_notes(self) + graphless_assumed(self)
        notes += self._overlap_assumed() + draft_collectives_assumed(self)
        notes += self._host_unmeasured()
        notes += self._int4_estimated()
        notes += self._large_moe_measured()
        notes += self._draft_cache_said()
        return notes

    def memory_notes(self) -> list[str]:
        """The notes a memory answer (``specsim capacity``) stands on: the choices made for the user, specsim's defaults
        among them, the defaults the models' configs relied on (a cache sized on them) and the draft's cache dtype; not
        the notes on step times, which it does not time, nor the step-time source among the defaults."""
        return list(self.choices) + self.defaults_said(timed=False) + self._model_notes() + self._draft_cache_said()

    def _model_notes(self) -> list[str]:
        """What the target's and the draft's configs left unsaid, each note named by its model."""
        return [f"{model.name}: {n}" for model in (self.target, self.draft) if model is not None for n in model.notes]

    def _large_moe_measured(self) -> list[str]:
        """Where the target is a large MoE model at tensor parallelism on an NVIDIA GPU, what the public plain TPOT of
        such targets measures against specsim's plain step, said by default: it moves a plain TPOT by far more than 10%
        (:data:`LARGE_MOE_LONGER`; :data:`LARGE_MOE_LONGER_KERNELS` where measured kernels price the target's step).
        On a ROCm profile those rows do not apply (NVIDIA GPUs'): vLLM ROCm's per-collective time is fitted to large MoE
        runs of its own (docs/reports/2026-12-01-moe-rocm.md), and an engine measured there says what its runs found
        instead (its ``rocm_large_moe_longer``: SGLang's :data:`specsim.engines.sglang.ROCM_LARGE_MOE_LONGER`, a check of
        SGLang ROCm's time per collective, which is sized on other runs)."""
        t = self.target
        if self.engine.calibration:
            return []
        rocm = getattr(self.hardware, "platform", "cuda") == "rocm"
        measured = getattr(REGISTRY.get(self.engine.name), "rocm_large_moe_longer", None)  # None: engine none
        if rocm and measured is not None and large_moe(t) and t.tp >= 2:
            return [rocm_large_moe_said(measured, t.name, self.engine, self.hardware.name)]
        if not large_moe_at_tp(t, self.hardware):
            return []
        (low, lo, hi, n_low), (every, _, _, n_all) = LARGE_MOE_LONGER
        k_low, k_lo, k_hi, k_n = LARGE_MOE_LONGER_KERNELS
        rows = (
            "on public plain runs of large MoE targets at tensor parallelism 2-8 (DeepSeek-R1/V3, Qwen3-235B-A22B, "
            "Qwen3.5-397B-A17B, MiniMax-M2.5 on H200 and B200 under SGLang, TensorRT-LLM and vLLM; aiconfigurator-core "
            "0.12.0)"
        )
        why = (
            "a speculative round also pays is not measured: calibrate-engine on your own runs "
            "(docs/reports/2026-12-04-large-moe-plain-step.md)"
        )
        step = self.gpu_pass(t, 1, 1, DEFAULT_CONTEXT_TOKENS)
        if step.source == "kernels" and (step.fallback is None or not np.any(step.fallback)):
            return [
                f"{t.name}: its plain step is composed from measured kernels; {rows} engines took a median {k_low:.0%} "
                f"longer per token than that at 1-8 users ({k_lo:.0%} to {k_hi:.0%} by model, {k_n} runs), and "
                f"{low:.0%} longer than the hybrid source's roofline step; how much of the rest {why}"
            ]
        return [
            f"{t.name}: {rows} engines took a median {low:.0%} longer per token than specsim's plain step at 1-8 users "
            f"({lo:.0%} to {hi:.0%} by model, {n_low} runs) and {every:.0%} at 1-256 ({n_all} runs); with "
            f"{given_as('timing')} kernels, {k_low:.0%} ({k_lo:.0%} to {k_hi:.0%} by model) at 1-8 users where the "
            f"kernel database composes the target; the missing time is not modelled, and how much of it {why}"
        ]

    def _draft_cache_said(self) -> list[str]:
        """Where the engine's rule gives a draft model a cache that is not 16-bit, said by default: at long contexts a
        draft model's KV reads are most of its step."""
        from specsim.describe.ops import BYTES_PER_ELEMENT

        d = self.drafter
        if not isinstance(d, DraftModel) or d.kv_given or BYTES_PER_ELEMENT[d.step_model.kv_dtype] == 2:
            return []
        kv, rule = self.draft_cache(d.own_kv_dtype)  # (set by _cached_as_served)
        if rule is None:
            return []
        return [
            f"{d.name}: KV {kv}, the target's: {rule}; {draft_option('kv_dtype')} prices another, which this engine "
            "cannot serve"
        ]

    def _int4_estimated(self) -> list[str]:
        """Where the roofline prices an INT4 weight-only target's step, what the one engine run that measured such steps
        found, said by default: it moves speedups by more than 10% (docs/targets.md, "Measured errors";
        ``benchmarks/validate_targets.py`` prints it)."""
        if self.target.weight_dtype != "int4" or self.engine.calibration:  # a calibration is judged on its own runs
            return []
        step = self.gpu_pass(self.target, 1, 1, DEFAULT_CONTEXT_TOKENS)
        if step.source not in ("roofline", "hybrid") and (step.fallback is None or not np.any(step.fallback)):
            return []  # priced from measured weight-only kernels
        return [
            f"{self.target.name}: its INT4 weight-only GEMMs are a roofline estimate; on the one public run that measured "
            "them (vLLM 0.24.0's awq_marlin on an A100, Llama-3.1-8B at 1-64 users; docs/targets.md) the INT4 step "
            "relative to FP16 was 19-37% longer than this estimate, most at 1-32 users, and the speedup of speculation "
            "on it 5-18% off; not corrected here (one engine, one GPU; docs/reports/2026-12-06-awq-a100-step.md)"
        ]

    def _host_unmeasured(self) -> list[str]:
        """An engine whose round host terms are 0 because nothing measured them (TensorRT-LLM's preset), said by
        default: the host work of a round moves speedups by more than 10% on the engines where it was measured."""
        if (
            self.drafter is None
            or self.engine.calibration
            or REGISTRY.get(self.engine.name) is None  # engine none adds no engine time by design
            or not (self.engine.spec.is_zero and self.engine.kernel_spec.is_zero)
            or not self.engine.spec_basis.startswith("no public")
        ):
            return []
        return [
            f"assumed: {self.engine.label}'s speculative rounds have no engine host work ({self.engine.spec_basis}): "
            "the speedups count none of it, as if the engine hid all of it; calibrate-engine on your runs measures it"
        ]

    def _overlap_assumed(self) -> list[str]:
        """The engine's overlap of a round's host work with the GPU where no measurement gives it (the preset assumes all
        of it), said by default where it moves a round at batch 1 by more than 10% (issue 37: 2.44x against 1.92x)."""
        kind = getattr(self.drafter, "kind", None)
        if (
            self.drafter is None
            or not self.engine.overlaps(kind)
            or not self.engine.overlap_basis.startswith("no public")
        ):
            return []
        serial = dataclasses.replace(self, engine=self.engine.with_spec(overlap=False))
        steps = min(3, self.drafter.max_steps or 3)  # a reference round the drafter can run
        hidden = float(np.asarray(self.round_time(1, DEFAULT_CONTEXT_TOKENS, steps).total_s))
        waited = float(np.asarray(serial.round_time(1, DEFAULT_CONTEXT_TOKENS, steps).total_s))
        if waited <= 1.10 * hidden:
            return []
        return [
            f"assumed: {self.engine.label} hides all of a round's host work behind the GPU for {self.drafter.label} (no "
            f"public measurement gives the share); without that a round of {steps} draft step{'s' if steps > 1 else ''} "
            f"at batch 1 takes {waited / hidden - 1:.0%} longer, and its speedup lower by that factor, a round of more "
            f"steps more (the host work grows with each; {given_as('overlap', '--engine-overlap')} off to see it at "
            "yours)"
        ]
