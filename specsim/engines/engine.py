"""What one serving engine is, as one object: every engine module of this package makes one (its ``ENGINE``) and the
registry in :mod:`specsim.engines` lists them.

Code outside this package asks the object and never compares an engine's name (``tests/test_structure.py`` holds
it): adding an engine is one module and one registry line.  An :class:`Engine` holds what does not change with the
version asked for (its presets and the releases they cover, the platforms it runs on, the metric names of each
release, what it calls each drafter, its benchmark writer and the files its benchmark client writes, its config
writers); an :class:`~specsim.engines.base.EnginePreset` is one version's times, and names its engine
(``REGISTRY[preset.name]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from specsim.engines.base import as_release

__all__ = ["BenchFiles", "DefaultLimits", "Engine", "EngineSupport", "KvPolicy", "rocm_large_moe_said"]


@dataclass(frozen=True)
class EngineSupport:
    """How one engine takes a drafter: its name there, the first release that takes it, and how it pins acceptance."""

    name: str  #: vLLM's speculative_config method, SGLang's --speculative-algorithm, TensorRT-LLM's decoding_type
    since: tuple[int, int, int]  #: the first release that takes it (as specsim checked; its floor where older)
    where: str  #: the source file that says so
    #: The last release that takes it (None: every release from ``since`` specsim knows) and the source that refuses it
    #: after (vLLM 0.34.0 refuses parallel_drafting outside DFlash and DSpark, so P-EAGLE and PARD end at 0.33).
    until: tuple[int, int, int] | None = None
    until_where: str = ""
    #: Config keys beyond the method and the draft length that the engine needs for it, as (key, value) pairs.
    keys: tuple = ()
    #: The first release that pins this drafter's acceptance for a benchmark (None: every release that takes it).
    pin_since: tuple[int, int, int] | None = None
    #: Whether a pinned acceptance length may be fractional (TensorRT-LLM's two-model path reads a whole number).
    fractional_pin: bool = True
    #: Where that release's source reads the pinned acceptance (the refusal below ``pin_since`` names it).
    pin_where: str = ""
    #: The tokens of the engine's budget this drafter takes beside each request's 1 + gamma, from each release on:
    #: (first release, (per request, per drafted token, True where max_num_seqs requests' come off the whole budget up
    #: front rather than each scheduled request's)) rows, oldest first; none before the first (vLLM's draft_slots).
    slots: tuple = ()
    #: The KV slots a speculating request's blocks cover past the tokens scheduled for it: (per drafted token, beside
    #: them), the engine's rule for this drafter (vLLM's num_lookahead_tokens); (0, 0): none.
    lookahead: tuple = (0, 0)


@dataclass(frozen=True)
class KvPolicy:
    """How an engine holds its requests' KV cache (:meth:`Engine.kv_policy`): what a waiting request must find free to
    be admitted, how a running request's blocks grow, and what the engine does when they run out.

    A request's admission sets aside its prompt (and the tokens it decoded before, where it resumes) and up to
    ``ahead_tokens`` of the tokens it has still to decode; a running request holds whole blocks of ``block_tokens`` for
    its tokens and, speculating, the round's drafts and the lookahead slots.  Where the engine sets aside every token to
    come (``ahead_tokens`` inf) nothing runs out once admitted; else the blocks of running requests can outgrow the cache,
    and the engine then preempts the request it admitted last: its blocks are freed, it goes back to the front of the
    queue and, admitted again, recomputes its prompt and the tokens it had decoded (:mod:`specsim.serving.kv_blocks`
    plays it)."""

    #: Tokens still to decode that admission sets aside beside the tokens a request holds: inf, all of them (the whole
    #: length reserved up front, never preempted); 0, none (blocks as tokens arrive, preemption where they run out).
    ahead_tokens: float = math.inf
    #: Tokens per block: a request holds its tokens rounded up to whole blocks.
    block_tokens: int = 1
    #: (per drafted token, beside them): the slots a speculating request's blocks cover past the tokens scheduled.
    lookahead: tuple = (0, 0)
    #: The rule in words, with the engine release and the source it was read from.
    where: str = "each request reserves its whole length (prompt and output) when admitted; nothing is preempted"

    def __post_init__(self) -> None:
        if not self.ahead_tokens >= 0 or isinstance(self.block_tokens, bool) or not 1 <= int(self.block_tokens) <= 4096:
            raise ValueError(f"a KV policy needs ahead_tokens >= 0 and 1-4096 tokens a block, got {self!r}")

    @property
    def said(self) -> str:
        """The policy in a few words, as the serving outputs name it."""
        if not self.preempts:
            return "prompt + output reserved per request"
        ahead = (
            "" if self.ahead_tokens == 0 else f" (up to {self.ahead_tokens:,.0f} output tokens set aside at admission)"
        )
        return (
            f"{self.block_tokens}-token blocks taken as tokens arrive{ahead}, the request admitted last preempted and "
            "recomputed where they run out"
        )

    @property
    def preempts(self) -> bool:
        """Whether running requests' blocks can outgrow the cache, so that the engine preempts (not all set aside)."""
        return math.isfinite(self.ahead_tokens)

    def slots(self, gamma: int) -> int:
        """Tokens a request decoding a round of ``gamma`` drafts holds past its context: the drafts scheduled and the
        lookahead slots (0 for plain decoding)."""
        per, beside = self.lookahead
        return int(gamma) * (1 + per) + beside if gamma > 0 else 0


@dataclass(frozen=True)
class DefaultLimits:
    """An engine's own scheduling limits on a GPU when the user sets none, and where specsim read them."""

    max_num_seqs: int  #: sequences in flight at most (vLLM's max_num_seqs, SGLang's max_running_requests)
    max_batched_tokens: int  #: tokens an iteration takes (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size)
    where: str  #: the engine, release and source file they come from
    #: A speculating server's max_num_seqs where the engine sets another (SGLang: 48), else None (the same).
    spec_max_num_seqs: int | None = None
    #: Whether prompt chunks run in batches of their own while the decoding sequences wait, the budget then being the
    #: prompts' alone (SGLang without --enable-mixed-chunk), or ride in the decoding iterations, whose tokens count
    #: against the budget (vLLM, TensorRT-LLM).
    prefill_apart: bool = False
    #: The share of prompt tokens served from the prefix cache (a calibration's runs' where they were fitted with one,
    #: :attr:`specsim.serving.limits.EngineLimits.prefix_hit`; 0 otherwise: none).
    prefix_hit: float = 0.0


@dataclass(frozen=True)
class MemoryShare:
    """The share of device memory an engine gives its weights and KV cache when the user sets none (vLLM's
    gpu_memory_utilization, SGLang's mem_fraction_static), and where specsim read the rule."""

    plain: float  #: without speculation
    #: with a drafter (an engine may set more aside for its graphs and buffers, or size the cache from what the
    #: drafter's weights leave)
    speculating: float
    where: str  #: the rule's inputs and result, the engine release and the source file
    #: Bytes per GPU the engine's start-up takes out of its setting before the cache, where specsim counts them (vLLM's
    #: profiling pass and buffers: :func:`specsim.engines.vllm.start_up`); None where the rule counts none apart.
    start_up_bytes: float | None = None


@dataclass(frozen=True)
class BenchFiles:
    """The result files an engine's benchmark client writes, as :mod:`specsim.calibration.bench_files` reads them."""

    #: What the files are, for messages (the client, its flag and the format).
    describes: str
    #: The ``backend`` values (vLLM's keys) or ``--backend`` names of its client that mean this engine's server.
    backends: tuple[str, ...]
    #: The key under which a file records the mean acceptance length (None: the files record none).
    acceptance_key: str | None
    #: Whether the files record the decoded tokens per iteration (``avg_decoded_tokens_per_iter``, summarised over the
    #: run) rather than an acceptance length: TensorRT-LLM's client.
    decoded_per_iteration: bool = False
    #: Whether one result (a JSON object) is a file of this client's.
    recognises: Callable[[dict], bool] = lambda record: False
    #: The order in which the clients' files are told apart (lowest first: TensorRT-LLM's client writes vLLM's keys too).
    precedence: int = 0
    #: The key under which a file records P(drafted token k accepted), k = 1..K, a list of shares of the drafts
    #: (None: the files record none).
    per_position_key: str | None = None
    #: The keys whose values, where a file records them, name the dataset a run drew its prompts from (runs of alike
    #: lengths that name different ones are of different datasets; :func:`specsim.calibration.runs.group_sweeps`).
    dataset_keys: tuple[str, ...] = ()
    #: Those of :attr:`backends` that name only the API spoken, an OpenAI-compatible client that any server answers:
    #: a hint at the server (said where it differs from --engine), not proof that two files' servers differ.
    api_backends: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Engine:
    """One serving engine (vLLM, SGLang, TensorRT-LLM): what ``--engine NAME`` and ``--format NAME`` name.

    The hooks default to an engine that writes nothing of its own; each engine module's subclass fills in what its
    engine does.
    """

    def __repr__(self) -> str:  # a notebook's echo: the engine and its presets (each one's terms: specsim engines show)
        return f"Engine({self.name}: presets {', '.join(p.key for p in self.presets)})"

    #: What ``--engine`` and ``--format`` take.
    name: str
    #: How prose names it (``vLLM``).
    title: str
    #: The platforms it runs on (a hardware profile's ``platform``: ``cuda``, ``rocm``, ``cpu``).
    platforms: tuple[str, ...]
    #: Its presets, one per span of releases that schedule a round alike (:class:`~specsim.engines.base.EnginePreset`).
    presets: tuple = ()
    #: (first release, last release, preset version) for each preset.
    ranges: tuple = ()
    #: Other names of its presets' versions (``spec-v1``).
    aliases: dict = field(default_factory=dict)
    #: The newest release whose source specsim read (what ``@latest`` writes and checks against).
    newest: str = ""
    #: The Prometheus metric names of each span of releases (:class:`~specsim.engines.base.MetricNames`).
    metric_names: tuple = ()
    #: Drafter kind -> how this engine takes it (:class:`EngineSupport`), read from the engine's source.
    methods: dict = field(default_factory=dict)
    #: Drafter kind -> what was looked for and not found (a refusal names it).
    unsupported: dict = field(default_factory=dict)
    #: What this engine calls the key that names a drafter (a refusal's wording).
    method_key: str = "method"
    #: The preset whose rounds run serially, which the public speculative speedups of this engine were measured on
    #: (:mod:`specsim.calibration.public`; None: no public speculative sweep of it is fitted).
    serial_preset: str | None = None
    #: Whether the engine lets the draft run at a tensor parallelism of its own (vLLM's draft_tensor_parallel_size).
    own_draft_tp: bool = True
    #: Whether its config takes a token tree (SGLang's top-k and draft tokens); the others draft a chain here.
    takes_trees: bool = False
    #: Where the decoding requests' rounds overflow the token budget: True where the one the scheduler reaches with
    #: fewer tokens left than its round gets what is left, its drafts cut (vLLM), False where it waits whole with those
    #: after it (TensorRT-LLM); :meth:`specsim.serving.limits.EngineLimits.decoding_scheduled` plays it.
    cuts_overflowing_round: bool = True
    #: Where this engine keeps a draft model's KV cache in the dtype it keeps the target's (its one cache setting): the
    #: source that says so.  None: a draft model keeps its own config's dtype (not read for this engine).
    draft_cache_rule: str | None = None
    #: How much more KV cache specsim gives than this engine printed at start-up on public threads and logs: (median,
    #: lowest, highest of specsim's over the printed, less 1, and the starts; :mod:`specsim.calibration.kv_capacity`,
    #: recomputed by ``tests/test_capacity.py``).  None: not measured.
    kv_error: tuple | None = None
    #: How much longer public plain TPOT of large MoE targets at tensor parallelism on ROCm GPUs is than specsim's plain
    #: step for this engine's presets as placed there (:meth:`on_platform`; SGLang's time per collective is sized on
    #: other runs, so these check it): (median, lowest and highest source's median, runs, what the runs are).  None: not
    #: measured, or the presets carry ROCm terms fitted to the same kind of runs (vLLM's).
    rocm_large_moe_longer: tuple | None = None
    #: Whether the engine's own share already sets memory aside for activations and graphs (SGLang's reserve).
    reserve_counts_activations: bool = False
    #: What specsim's KV cache for this engine is, where its share less the weights is not all of it (vLLM: less its
    #: start-up's profiling pass and buffers); "" for the general wording (:func:`specsim.serving.capacity.kv_error_said`).
    cache_said: str = ""
    #: Its benchmark writer (:class:`~specsim.engines.writers.BenchWriter`).
    bench: object = None
    #: The result files its benchmark client writes.
    bench_files: BenchFiles | None = None

    def __str__(self) -> str:
        return self.name

    def past_newest(self, release: tuple) -> bool:
        """Whether ``release`` is newer than every release a preset covers (the last of :attr:`ranges`): its source was
        not read, so neither its flags, config keys and metric names nor its defaults are known, and no preset models
        it."""
        return bool(self.ranges) and as_release(release) > as_release(self.ranges[-1][1])

    # -- hooks: what differs between engines ---------------------------------------------------------------------
    def draft_tp(self, preset, separate_model: bool, target_tp: int, requested: int | None) -> tuple[int, str]:
        """(the draft's tensor parallelism, a line naming the choice) as this engine runs a drafter."""
        raise NotImplementedError

    def on_platform(self, preset, hardware, model=None):
        """The preset as this engine's build for ``hardware``'s platform runs it, serving the target ``model`` where
        known (the same preset by default)."""
        return preset

    def check_pair(self, dep) -> None:
        """Refuse a target and drafter this engine cannot serve together (nothing by default)."""

    def settings(self, dep) -> tuple[list[str], list[str]]:
        """(what to give the engine for the target besides the speculative config, notes for the user)."""
        return [], []

    def serve_line(self, dep, flags: list[str]) -> str | None:
        """A note with the command that serves the target with ``flags`` and the configuration (None: none)."""
        return None

    def render_schedule(self, ranges: list, dep, checkpoint, version: tuple, min_gain: float, max_batch: int):
        """(the schedule ``ranges`` in this engine's own form for release ``version``, notes)."""
        raise NotImplementedError

    def per_batch_missing(self, dep, ranges: list, version: tuple) -> str | None:
        """Why release ``version`` cannot change the draft length with the batch for this deployment (None: it can)."""
        return None

    def rising_schedule(self, version: tuple) -> str:
        """Where release ``version`` takes a per-batch schedule whose draft length may rise with the batch (speculation
        off at small batches and on at larger ones), the source that says so; "" where a schedule written for it never
        rises (its batch-1 length the largest, or no per-batch control): :func:`specsim.speculation.schedule.
        gamma_schedule` takes the rule, and charges K = 0 inside such a schedule the drafter's pass
        (:func:`specsim.speculation.schedule.zero_k_speedup`)."""
        return ""

    def capped_rise(self, version: tuple, dep) -> str:
        """Where release ``version`` takes, for ``dep``'s drafter, a per-batch schedule that may fall and rise back but
        never above its batch-1 length, and no off tier that specsim writes, the source that says so; "" elsewhere:
        :func:`specsim.speculation.schedule.capped_gammas` takes the rule."""
        return ""

    def fp8_cache_backend(self, hardware) -> str:
        """What this engine does with an FP8 KV cache on ``hardware`` that specsim does not model, in a clause that
        follows a semicolon ("": nothing specsim has read)."""
        return ""

    def serial_rounds(self, preset, hardware, kv_dtype: str) -> str:
        """Why this engine cannot hide a round's host work behind the GPU with a ``kv_dtype`` cache on ``hardware``,
        where ``preset`` would ("": nothing stops it)."""
        return ""

    def graphless_draft_steps(self, preset, hardware, target, drafter_kind: str | None) -> tuple[float, str]:
        """(seconds each draft step of a round after its first adds per layer of the drafter's network, why): where this
        engine runs those steps without a CUDA graph for a ``drafter_kind`` drafter of ``target`` with its KV cache on
        ``hardware``, what that costs over a graphed step and the source of the size; (0.0, "") where it graphs them."""
        return 0.0, ""

    def release_overlaps(self, preset, drafter_kind: str | None) -> str:
        """Why the release ``preset`` names hides a ``drafter_kind`` drafter's round host work behind the GPU where the
        preset's own kinds (its range's) leave that drafter serial, with the source ("": as the preset says)."""
        return ""

    def gpu_lookup(self, preset, drafter_kind: str | None) -> str:
        """Why this engine runs a ``drafter_kind`` drafter's lookup (n-gram, suffix) as a GPU kernel, with its source,
        in place of the drafter's CPU scan ("": the host scans, as the drafter's ``host_s`` charges)."""
        return ""

    def graphed_draft_steps(self, preset, drafter_kind: str | None) -> int:
        """How many of a round's first draft steps keep their CUDA graph where :meth:`graphless_draft_steps` charges the
        rest: 1 (the first step, a round's prefill of the accepted tokens, keeps its graph) unless the engine runs every
        step of this drafter without one."""
        return 1

    def default_limits(self, preset, hardware, offline: bool) -> DefaultLimits | None:
        """The limits this engine takes on ``hardware`` when the user sets none, for a server or (``offline``) a batch
        run in-process; None where specsim has not read them."""
        return None

    def limits_refused(self, max_num_seqs: int, max_batched_tokens: int) -> str | None:
        """Why this engine refuses to start with these limits (its own rule, its source named), or None."""
        return None

    def draft_slots(self, preset, drafter) -> tuple[int, int, bool]:
        """The tokens of its budget this engine counts for ``drafter`` beside each speculating request's own 1 + gamma
        at ``preset``'s release (:func:`~specsim.engines.base.preset_release`): (per request, per drafted token of it,
        whether they come off the whole budget for max_num_seqs requests up front rather than per request scheduled),
        the newest of its method's :attr:`EngineSupport.slots` rows that the release has reached, none where there
        is no such row; :meth:`specsim.serving.steady.EngineLimits.prefill_budget` applies them."""
        from specsim.engines.base import preset_release

        support = self.methods.get(drafter.kind)
        release = preset_release(self.name, preset, self.ranges)
        rows = () if support is None else support.slots
        return next((slots for first, slots in reversed(rows) if release >= first), (0, 0, False))

    def kv_policy(self, preset, drafter) -> KvPolicy:
        """How this engine holds its requests' KV cache at ``preset``'s release serving ``drafter`` (None: plain), as its
        default scheduler does: by default each request reserves its whole length (:class:`KvPolicy`'s defaults)."""
        return KvPolicy()

    def memory_share(
        self,
        preset,
        hardware,
        model,
        draft,
        method: str | None,
        max_batched_tokens: int | None,
        given: float | None,
        max_num_seqs: int | None = None,
    ):
        """This engine's own :class:`MemoryShare` on ``hardware`` for ``model`` (its tensor parallelism, attention and
        weights) and ``draft`` (its weights; None: plain), speculating by ``method`` (the engine's name of the drafter)
        with ``max_batched_tokens`` per iteration and ``max_num_seqs`` sequences at most (None: the engine's defaults),
        its memory setting ``given`` where the user gave one (``--memory-util``: the engine's own knob); None where the
        engine has no rule of its own (:func:`specsim.serving.capacity.memory_share` then takes ``given`` as it is)."""
        return None

    def static_gamma(self, dep, ranges: list, version: tuple) -> int | None:
        """The one draft length release ``version``'s config runs at every batch, where it has no per-batch control
        of a chain schedule that changes with the batch (None: it follows the schedule, or stops speculating)."""
        return None


def _more(share: float) -> str:
    """A signed share of time in words: 0.97 -> '97% longer', -0.25 -> '25% shorter'."""
    return f"{share:.0%} longer" if share >= 0 else f"{-share:.0%} shorter"


def rocm_large_moe_said(measured: tuple, target: str, preset, hardware: str) -> str:
    """The note on a large MoE target at tensor parallelism on a ROCm profile: what an engine's public ROCm runs
    measure against specsim's plain step (its ``rocm_large_moe_longer``), and whether ``preset`` carries the engine's
    ROCm time per collective here (placed: ``platform`` rocm) or has no ROCm terms for this device."""
    median, lo, hi, n, rows = measured
    said = (
        f"{target}: on {rows} the engine took a median {_more(median)} per token than specsim's plain step "
        f"({_more(lo)} to {_more(hi)} by source, {n} runs, with the ROCm build's time per collective)"
    )
    if preset.platform == "rocm":
        return (
            f"{said}: specsim's {preset.key} preset charges {preset.collective_s * 1e6:.1f} us per tensor-parallel "
            "collective there, sized on AMD's nightly CI runs of DeepSeek, not on these, which check it "
            "(docs/reports/2026-12-05-rocm-sglang-pass.md); how much of it a speculative round also pays is not "
            "measured (those sources' MTP speedups as specsim predicts them: docs/reports/2026-12-02-concurrency.md): "
            "calibrate-engine on your own runs"
        )
    return (
        f"{said}: specsim's {preset.key} preset has no ROCm terms for {hardware} (SGLang ROCm's time per collective "
        "is sized on MI300X and MI355X only); the missing time is not modelled: calibrate-engine on your own runs"
    )


def draft_collectives_assumed(dep) -> list[str]:
    """The engine's time per tensor-parallel collective charged to a sharded drafter's steps, said by default where it
    makes a round at batch 1 more than 10% longer: the time was fitted on plain decoding (target passes) at TP 2-8, and
    no public run of a draft model at tensor parallelism measures what its steps pay (docs/model/engines.md).  A
    calibration is judged on its own runs: not said there."""
    import numpy as np

    from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS

    if dep.draft is None or dep.draft.tp == 1 or not dep.engine.collective_s or dep.engine.calibration:
        return []
    steps = min(3, dep.drafter.max_steps or 3)  # a reference round the drafter can run, as the other notes take
    one = dep.draft_step(1, DEFAULT_CONTEXT_TOKENS)
    charged = float(np.asarray(dep.drafter.draft_passes(np.asarray(float(steps))))) * one.engine_s
    total = float(np.asarray(dep.round_time(1, DEFAULT_CONTEXT_TOKENS, steps).total_s))
    if charged <= 0.10 * (total - charged):
        return []
    return [
        f"assumed: {dep.engine.collective_s * 1e6:.1f} us per tensor-parallel collective ({dep.engine.label}), fitted "
        f"on plain decoding's target passes, is charged to each draft step too ({one.engine_s * 1e3:.2f} ms a step at "
        f"TP {dep.draft.tp}): it makes a round of {steps} draft step{'s' if steps > 1 else ''} at batch 1 "
        f"{total / (total - charged):.2f}x as long; no public run of a draft model at tensor parallelism measures it "
        "(docs/model/engines.md; calibrate-engine on your runs does)"
    ]
