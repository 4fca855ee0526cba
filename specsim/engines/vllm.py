"""vLLM: its presets per version, its speculative_config writers and its benchmark plan.

Presets (:class:`~specsim.engines.base.EnginePreset`): the versions where vLLM changed how it schedules a round --
0.10-0.13 serial, 0.14-0.27 async scheduling with EAGLE/MTP (vllm-project/vllm#31998), 0.28-0.34 also with draft models
(vllm-project/vllm#48341; read in vllm/config/vllm.py of the 0.28.0 wheel) -- with the terms fitted to public rows
(:mod:`specsim.calibration.fidelity`, :mod:`specsim.calibration.public`).

Writers: ``speculative_config`` with a per-batch-size schedule (``num_speculative_tokens_per_batch_size``, a list of
``[start_bs, end_bs, k]`` with inclusive ranges, docs/features/speculative_decoding/dynamic_speculative_decoding.md of
vLLM 0.24), the target's serve flags, and the benchmark plan's server and client commands.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from specsim.core.names import draft_option, given_as
from specsim.engines.base import (
    _BASIS,
    _SPEC_BASIS,
    HEADS,
    MetricNames,
    RecurrentVerify,
    SpecHost,
    as_release,
    make_preset,
    parse_version,
    preset_release,
)
from specsim.engines.engine import BenchFiles, DefaultLimits, Engine, EngineSupport, KvPolicy, MemoryShare
from specsim.engines.writers import BenchWriter
from specsim.engines.writers import version_text as _version_text

__all__ = [
    "ENGINE",
    "METHODS",
    "PLATFORMS",
    "METRIC_NAMES",
    "NAME",
    "NEWEST",
    "PRESETS",
    "RANGES",
    "ALIASES",
    "ROCM_COLLECTIVE_S",
    "ROCM_SPEC",
    "VllmBench",
    "PER_BATCH_SINCE",
    "OFF_HOST_WORK",
    "RISING_WHERE",
    "check_vllm_pair",
    "draft_tp",
    "engine_settings",
    "on_platform",
    "render_schedule",
    "rocm_build",
    "to_vllm",
    "vllm_notes",
]

NAME = "vllm"
#: The hardware platforms (a profile's ``platform``) this engine runs on: vLLM builds for CUDA, ROCm and CPU (docs/getting_started/installation).
PLATFORMS = ("cuda", "rocm", "cpu")
#: vLLM's n-gram lookup window, as the reference article's example sets it.
PLAIN = dict(
    kernel_engine="vllm",
    iteration_s=0.0,
    kernel_iteration_s=0.0,
    basis=_BASIS + ", pooled over engines (no single-GPU vLLM rows); both end at their bound 0 (2 us fitted on a "
    "roofline step): not identified, held at 0",
    collective_s=28.4e-6,
    kernel_collective_s=9.1e-6,
)
# Speculative host terms printed by benchmarks/validate_speculation.py (tests/test_spec_fit.py refits them): fitted
# on the serial versions, roofline step (spec) and GPU time (kernel_spec).
SPEC = SpecHost(round_s=0.05e-3, step_s=0.428e-3, seq_s=0.7e-6, seq_step_s=7.2e-6)
KERNEL_SPEC = SpecHost(round_s=0.0, step_s=0.475e-3, seq_s=0.2e-6, seq_step_s=6.8e-6)
#: vLLM's ROCm build on AMD Instinct: the round's host terms fitted to AMD's MI355X sweeps (vLLM blog 2026-07-13,
#: Kimi-K2.5 and MiniMax-M2.5 with EAGLE-3 heads at TP 4, concurrency 4-64; :mod:`specsim.calibration.rocm`, printed by
#: benchmarks/validate_moe_rocm.py, held to its fit by tests/test_moe_rocm.py), counted as time the round waits for.
ROCM_SPEC = SpecHost(round_s=0.0, step_s=0.0208e-3, seq_s=0.0, seq_step_s=79.2e-6)
#: vLLM ROCm's engine time per tensor-parallel collective, fitted with the profile's bandwidth efficiency to the same
#: sweeps' plain rows (CUDA's is 28.4 us): both ran at TP 4, so a one-GPU step on these builds is not measured.
ROCM_COLLECTIVE_S = 62.7e-6
ROCM_BASIS = (
    "fitted to AMD's MI355X sweeps (vLLM blog 2026-07-13: Kimi-K2.5 and MiniMax-M2.5, EAGLE-3, TP 4, "
    "concurrency 4-64; specsim/calibration/data/moe_rocm_sweeps.csv), as time the round waits for"
)
#: The batch sizes the fitted rows span: beyond them the per-sequence term is extrapolated, and outputs say so.
_RANGE = " at batch 1-32 (beyond: extrapolated)"
#: Recurrent layers: the verification kernel writes one state per draft position and the next round reads the one at
#: num_accepted_tokens - 1 (vllm/model_executor/layers/fla/ops/fused_sigmoid_gating.py, mamba_mixer2.py of 0.24.0); each
#: request holds 1 + num_speculative_tokens state pages (MambaSpec.max_memory_usage_bytes, vllm/v1/kv_cache_interface.py,
#: 0.24.0 and 0.33.0; num_speculative_blocks = num_speculative_tokens in model_executor/layers/mamba/abstract.py).
#: ReplaySSM (use_replayssm, vllm/config/cache.py) is opt-in, default False, from 0.28.0 to 0.33.0.
RECURRENT = RecurrentVerify(
    "checkpoint",
    0,
    "vLLM 0.24.0 fla/ops/fused_sigmoid_gating.py; 1 + num_speculative_tokens "
    "state pages in v1/kv_cache_interface.py of 0.11.0, 0.24.0 and 0.33.0; "
    "use_replayssm off by default in config/cache.py, 0.28.0-0.33.0",
)
PRESETS = [
    make_preset(
        "vllm",
        "0.10",
        "vLLM 0.10-0.13: V1 engine, speculative rounds serial (async scheduling off with speculation)",
        PLAIN,
        SPEC,
        KERNEL_SPEC,
        _SPEC_BASIS + ", vLLM rows" + _RANGE,
        recurrent=RECURRENT,
    ),
    make_preset(
        "vllm",
        "0.14",
        "vLLM 0.14-0.27: async scheduling on by default with EAGLE/MTP (vllm-project/vllm#31998, "
        "0.14.0 of 2026-01-17); draft models and n-gram serial",
        PLAIN,
        SPEC,
        KERNEL_SPEC,
        _SPEC_BASIS + ", vLLM rows (serial versions; the same host work, overlapped)" + _RANGE,
        HEADS,
        recurrent=RECURRENT,
    ),
    make_preset(
        "vllm",
        "latest",
        "vLLM 0.28 and later (vllm-project/vllm#48341): async scheduling also with draft models; n-gram serial",
        PLAIN,
        SPEC,
        KERNEL_SPEC,
        _SPEC_BASIS + ", vLLM rows (serial versions; the same host work, overlapped)" + _RANGE,
        HEADS | {"draft_model"},
        recurrent=RECURRENT,
    ),
]
#: Numbered releases each preset covers, (first, last) inclusive; the last ends at the newest release read (0.34.0).
RANGES = [((0, 10, 0), (0, 13, 99), "0.10"), ((0, 14, 0), (0, 27, 99), "0.14"), ((0, 28, 0), (0, 34, 99), "latest")]
ALIASES: dict[str, str] = {}
#: The newest release whose source the writers were checked against (what ``vllm@latest`` writes for).
NEWEST = "0.34.0"

_METRICS_SOURCE = (
    "vllm/v1/spec_decode/metrics.py (SpecDecodingProm) and vllm/v1/metrics/loggers.py (PrometheusStatLogger), "
    "read in the 0.10.0, 0.10.2, 0.11.0, 0.33.0 and 0.34.0 wheels"
)
#: What vLLM's V1 engine exports on /metrics (the server's, on by default; --disable-log-stats turns it off).  The
#: speculative counters are created only with a speculative_config; the per-position children are created at start for
#: positions 0..num_speculative_tokens-1 (spec_decode/metrics.py: 0.10.0 L152-166, 0.33.0 L250-263), so their count is
#: the configured draft length.  Labels: model_name (served_model_name) and engine (the engine index; loggers.py 0.10.0
#: L167, 0.33.0 L499).
#: Metrics that tell releases apart (every vLLM metric is on the page from the server's start): the first release whose
#: vllm/v1/metrics/loggers.py creates each, read in every x.y.0 wheel from 0.10.0 to 0.33.0 (and 0.10.1.1, 0.10.2); 0.34.0
#: creates the same "vllm:" names as 0.33.0 in loggers.py and spec_decode/metrics.py.
_VLLM_LATER = (
    ("vllm:inter_token_latency_seconds", (0, 10, 2)),
    ("vllm:request_time_per_output_token_seconds", (0, 11, 0)),
    ("vllm:engine_sleep_state", (0, 12, 0)),
    ("vllm:request_prefill_kv_computed_tokens", (0, 13, 0)),
    ("vllm:prompt_tokens_cached", (0, 16, 0)),
    ("vllm:num_requests_waiting_by_reason", (0, 20, 0)),
    ("vllm:request_num_preemptions", (0, 30, 0)),
    ("vllm:admission_rejections", (0, 32, 0)),
)
#: The last release each was on a default page: gpu_cache_usage_perc hidden from 0.11.0 (shown with
#: --show-hidden-metrics-for-version), removed in 0.12.0; time_per_output_token_seconds hidden from 0.12.0, removed in 0.15.0.
_VLLM_EARLIER = (("vllm:gpu_cache_usage_perc", (0, 10, 99)), ("vllm:time_per_output_token_seconds", (0, 11, 99)))
_VLLM_NAMES = dict(
    engine="vllm",
    path="/metrics",
    prefix="vllm:",
    model_label="model_name",
    replica_label="engine",
    running="vllm:num_requests_running",
    waiting="vllm:num_requests_waiting",
    requests="vllm:request_success_total",
    prompt_tokens="vllm:prompt_tokens_total",
    generation_tokens="vllm:generation_tokens_total",
    drafts="vllm:spec_decode_num_drafts_total",
    draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    accepted="vllm:spec_decode_num_accepted_tokens_total",
    accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
    position_label="position",
    # Counters of prompt tokens queried in the prefix cache and of those it held ("Prefix cache queries, in terms of
    # number of queried tokens", "Prefix cache hits, in terms of number of cached tokens": vllm/v1/metrics/loggers.py
    # 0.30.0 L589-606, 0.34.0 L661-680, read at every x.y.0 from 0.30.0 to 0.34.0; earlier releases not read here, a
    # page without them gives no share).
    prefix_cache_queries="vllm:prefix_cache_queries_total",
    prefix_cache_hits="vllm:prefix_cache_hits_total",
    # Observed once per finished request beside request_success (loggers.py: 0.10.0 L317 and L557, 0.33.0 and 0.34.0
    # L875 and L1321, 0.34.0's success counter at L1290; every x.y.0 from 0.10.0 to 0.34.0 read), labels model_name and
    # engine; edges build_1_2_5_buckets (max_model_len) through 0.29.0, histogram_buckets("request_tokens") from 0.30.0
    # (0.34.0 L822-824; the same unless --custom-histogram-buckets replaces them, from 0.32.0).
    generation_histogram="vllm:request_generation_tokens",
    later=_VLLM_LATER,
    earlier=_VLLM_EARLIER,
    created=True,
    counter_labels=(("engine", "0"),),
    request_labels=(("finished_reason", "length"),),
    gauge_labels=(("engine", "0"),),
    source=_METRICS_SOURCE,
)
METRIC_NAMES = [
    MetricNames(
        first=(0, 10, 0),
        last=(0, 10, 99),
        note=(
            "vLLM 0.10 counts speculation for one engine only: with data parallelism its Prometheus logger refuses speculative "
            "decoding (NotImplementedError, loggers.py 0.10.0 L170-175)"
        ),
        **_VLLM_NAMES,
    ),
    MetricNames(
        first=(0, 11, 0),
        last=(0, 34, 99),
        note=("one series per engine under data parallelism from 0.11.0 (vllm-project/vllm#24049)"),
        **_VLLM_NAMES,
    ),
]


def on_platform(preset, hardware):
    """The preset as it runs on ``hardware``'s software stack: on an AMD profile (``platform: rocm``) vLLM's ROCm build,
    whose rounds wait for their host work (:data:`ROCM_SPEC`; no overlap measured there); unchanged on CUDA, and for a
    preset already placed or calibrated."""
    if getattr(hardware, "platform", "cuda") != "rocm" or preset.platform == "rocm" or preset.calibration:
        return preset
    return rocm_build(preset)


def rocm_build(preset, spec: SpecHost | None = ROCM_SPEC, collective_s: float = ROCM_COLLECTIVE_S):
    """``preset`` as vLLM's ROCm build runs it, marked as placed: its time per collective and, with ``spec``, its round
    terms, waited for (None keeps the CUDA round as shipped).  The one place the ROCm variant is made: on_platform ships
    it, :mod:`specsim.calibration.rocm` fits its terms through it."""
    out = preset.on_rocm(
        collective_s, f"its ROCm build on AMD Instinct, {collective_s * 1e6:.1f} us per collective (fitted)"
    )
    if spec is None:
        return out
    return dataclasses.replace(out, spec=spec, kernel_spec=spec, overlap_kinds=frozenset(), spec_basis=ROCM_BASIS)


#: From this release the draft model's own TP check is gone and its layers take the target's group (:func:`draft_tp`).
_DRAFT_TP_GLOBAL_SINCE = (0, 34, 0)


def draft_tp(preset, separate_model: bool, target_tp: int, requested: int | None) -> tuple[int, str]:
    """(the draft's TP, one line naming the choice and the alternative) as vLLM runs a drafter next to a target at TP
    ``target_tp``.  ``draft_tensor_parallel_size`` defaults to the target's (vllm/config/speculative.py,
    ``_verify_and_get_draft_tp``, 0.24.0-0.33.0).  EAGLE-family and MTP heads are built from the target's parallel
    config whatever it says (v1/spec_decode/llm_base_proposer.py; vllm-project/vllm#31345 closed unfixed, the fix #31886
    open).  A draft model at another TP than the target's is refused from 0.17.0 to 0.33 (v1/spec_decode/draft_model.py
    _raise_if_draft_tp_mismatch, 0.33.0 L63-77).  0.34.0 moved the draft model to v1/worker/gpu/spec_decode/standalone_ar
    without that check: its config takes 1 (config/speculative.py L1530-1551) and builds the draft's parallel config at
    TP 1 (L1584-1603), but the draft's layers take the worker's tensor-parallel group (model_executor/layers/linear.py
    L304-311, get_tensor_model_parallel_world_size), which is the target's: read, not run, it runs at the target's TP."""
    if requested not in (None, 1, target_tp):
        raise ValueError(
            f"draft tensor parallelism {requested} must be 1 or the target's {target_tp} (vLLM's "
            "draft_tensor_parallel_size: 'cannot be other value than 1 or target model tensor_parallel_size', "
            "vllm/config/speculative.py)"
        )
    if not separate_model:
        line = (
            f"draft at TP {target_tp}: vLLM builds EAGLE and MTP heads at the target's TP, draft_tensor_parallel_size "
            "notwithstanding (vllm-project/vllm#31345; #31886 open)"
        )
        return target_tp, line + (
            f"; {draft_option('tp')} {requested} has no effect there" if requested not in (None, target_tp) else ""
        )
    if requested in (None, target_tp):
        return target_tp, (
            f"draft at TP {target_tp}: vLLM's default draft_tensor_parallel_size, the target's ({draft_option('tp')} 1 "
            "for a draft model on one GPU: vLLM 0.15-0.16 only)"
        )
    release = preset_release(NAME, preset, RANGES)  # the one release the preset stands for (vllm@0.14: 0.27.0)
    if release >= _DRAFT_TP_GLOBAL_SINCE:
        return target_tp, (
            f"draft at TP {target_tp}: vLLM {_version_text(release)} takes draft_tensor_parallel_size {requested} "
            "(vllm/config/speculative.py L1530-1551) but builds the draft's layers on the worker's tensor-parallel "
            "group, the target's (model_executor/layers/linear.py L304-311; as read in 0.34.0's source, not run); "
            f"{draft_option('tp')} {requested} has no effect there"
        )
    if release >= (0, 17, 0):
        raise ValueError(
            f"vLLM 0.17-0.33 refuse a draft model at TP {requested} beside a target at TP {target_tp} "
            "('draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same: "
            f"vllm/v1/spec_decode/draft_model.py): drop {draft_option('tp')}, or model vllm@0.15"
        )
    return requested, (
        f"draft at TP {requested} ({draft_option('tp')}); vLLM 0.17-0.33 refuse a draft model at another TP "
        f"than the target's {target_tp} (vllm/v1/spec_decode/draft_model.py)"
    )


def _lookup(drafter) -> dict:
    """prompt_lookup_min / prompt_lookup_max of a lookup drafter (vllm/config/speculative.py), else nothing."""
    sizes = getattr(drafter, "lookup", None)
    return {"prompt_lookup_min": sizes[0], "prompt_lookup_max": sizes[1]} if sizes else {}


#: The first release with num_speculative_tokens_per_batch_size (vllm-project/vllm#32374; absent from
#: vllm/config/speculative.py in every release 0.20.0-0.23.0, present 0.24.0-0.33.0).
PER_BATCH_SINCE = (0, 24, 0)
#: Why a vLLM schedule may start off and rise with the batch: validate_and_normalize_dynamic_sd_schedule
#: (vllm/v1/spec_decode/dynamic/utils.py L7-74, the same file in the 0.24.0 and 0.34.0 wheels) asks of each
#: [start, end, K] only start >= 1, start <= end and K >= 0, the ranges not overlapping, the first starting at 1, and
#: nothing of the order of K; build_dynamic_sd_schedule_lookup (L77-148) caps each K at num_speculative_tokens, which
#: must be > 0 (L91-92), and gives a batch past the last range its K.
RISING_WHERE = (
    "vLLM's num_speculative_tokens_per_batch_size takes any K >= 0 in any order (validate_and_normalize_dynamic_sd_"
    "schedule, vllm/v1/spec_decode/dynamic/utils.py, read in 0.24.0 and 0.34.0)"
)
#: What K = 0 in that schedule still runs: the drafter's first pass over the batch's tokens, to keep its KV cache in
#: sync (0.24.0 vllm/v1/spec_decode/llm_base_proposer.py L538-547; 0.34.0 v1/worker/gpu/spec_decode/standalone_ar/
#: speculator.py L425-439, target_dependent_ar/speculator.py L237-252); releases between were not read.
OFF_RUNS_DRAFT_PASS = (
    "vLLM runs the drafter's first pass at K = 0 to keep its KV cache in sync (0.24.0 "
    "v1/spec_decode/llm_base_proposer.py L538-547; 0.34.0 v1/worker/gpu/spec_decode/standalone_ar/speculator.py "
    "L425-439): specsim's schedule per batch charges it one draft step and its launch's host work (zero_k_speedup), at "
    "loads nothing"
)
#: What else a batch at K = 0 does on the host, read in 0.24.0 and 0.34.0: no drafted token is scheduled (0.24.0
#: v1/core/sched/scheduler.py L583-598 schedules none from the empty placeholders async_scheduler.py L22-25 set at K = 0),
#: so no spec-decode metadata is built and the plain sampler runs, not the rejection sampler (0.24.0
#: v1/worker/gpu_model_runner.py L2161-2170 and _sample L3592-3596; 0.34.0 v1/worker/gpu/model_runner.py L1749-1751); the
#: proposer prepares and launches its first pass and returns before sampling from it (0.24.0
#: v1/spec_decode/llm_base_proposer.py L538-547; 0.34.0 target_dependent_ar/speculator.py L245-252 skips the sample,
#: standalone_ar/speculator.py L436-439 returns before the further steps); n-gram returns before its scan at k <= 0
#: (0.24.0 v1/spec_decode/ngram_proposer.py L226-228).  So of a round's host terms (SpecHost) K = 0 pays one launched
#: draft step's, step_s, and none of round_s, seq_s or seq_step_s (:meth:`specsim.engines.SpecHost.seconds`, proposes
#: False).
OFF_HOST_WORK = (
    "at K = 0 vLLM schedules no drafted token and runs the plain sampler, not the rejection sampler (0.24.0 "
    "v1/worker/gpu_model_runner.py L2161-2170, L3592-3596; 0.34.0 v1/worker/gpu/model_runner.py L1749-1751): the "
    "drafter's pass is charged one draft step's launch (the preset's per-step host term), nothing per sequence"
)


def to_vllm(ranges: list, draft_model: str, dep=None, version: tuple | None = None) -> dict[str, Any] | None:
    """vLLM ``speculative_config`` for ``version`` (default :data:`NEWEST`); None if gamma is 0 everywhere (or, before
    0.24.0, at batch 1).

    From 0.24.0 with the per-batch-size schedule ``num_speculative_tokens_per_batch_size``: a list of inclusive
    ``[start, end, K]`` ranges from batch 1 (vllm/v1/spec_decode/dynamic/utils.py), ``num_speculative_tokens`` the
    largest K (the lookup clamps every K to it).  Before 0.24.0 vLLM V1 has no per-batch control: the batch-1 length.
    ``draft_tensor_parallel_size`` is written for a draft model beside a tensor-parallel target (vLLM builds heads at
    the target's TP whatever it says: :func:`draft_tp`).  A draft quantised on load gets ``"quantization"`` (a field of
    vLLM's SpeculativeConfig).  :func:`vllm_notes` holds what vLLM says of these keys at that version.
    """
    version = parse_version(NAME, NEWEST) if version is None else as_release(version)
    dynamic = version >= PER_BATCH_SINCE
    k_max = max(r.gamma for r in ranges) if dynamic else ranges[0].gamma
    if k_max == 0:
        return None
    drafter = None if dep is None else dep.drafter
    if drafter is not None:
        drafter.support("vllm", version)
    config: dict[str, Any] = {}
    if drafter is not None:  # named, a draft model's too (its "model" implies it, but a checkpoint named like an
        # EAGLE head would be read as one: vllm/config/speculative.py guesses the method from the name), as bench-plan
        config["method"] = drafter.support(NAME).name
    if draft_model is not None:
        config["model"] = draft_model
    config["num_speculative_tokens"] = k_max
    config.update(_lookup(drafter))
    if drafter is not None:
        config.update(drafter.support(NAME).keys)  # parallel_drafting for P-EAGLE and PARD
    if dep is not None and dep.target.tp > 1 and dep.draft is not None and drafter.shares_vocabulary:
        config["draft_tensor_parallel_size"] = dep.draft.tp
    if dep is not None and dep.draft is not None and dep.draft.checkpoint_dtype and dep.draft.weight_dtype == "fp8":
        config["quantization"] = "fp8"
    if dynamic:
        config["num_speculative_tokens_per_batch_size"] = [[r.start_batch, r.end_batch, r.gamma] for r in ranges]
    return config


#: The first release without Model Runner V1 (0.34.0: v1/worker/ holds no gpu_model_runner.py, and config/vllm.py no
#: use_v2_model_runner).
_V1_RUNNER_GONE = (0, 34, 0)


def vllm_notes(ranges: list, version: tuple | None = None, method: str | None = None) -> list[str]:
    """What vLLM ``version`` does with the config :func:`to_vllm` writes, read from that version's source: the
    per-batch key's caveats (CUDA graphs, data parallelism, methods), its tail, and the per-context key no release has."""
    version = parse_version(NAME, NEWEST) if version is None else as_release(version)
    v = _version_text(version)
    off = next((r.start_batch for r in ranges if r.gamma == 0), None)
    if version < PER_BATCH_SINCE:
        return [
            f"vLLM {v} has no per-batch-size speculation control (num_speculative_tokens_per_batch_size arrived in 0.24.0, "
            "vllm-project/vllm#32374; V1 before it had none): the batch-1 length is written for every batch"
            + (f", though specsim has speculation off from batch {off}" if off is not None else "")
        ]
    notes = [
        f"the schedule ends at batch {ranges[-1].end_batch}; vLLM gives larger batches the last range's K "
        "(build_dynamic_sd_schedule_lookup, vllm/v1/spec_decode/dynamic/utils.py)"
    ]
    offs = [r.batches for r in ranges if r.gamma == 0]
    if offs:
        notes.append(f"K = 0 at batch {', '.join(offs)}: {OFF_RUNS_DRAFT_PASS}")
    if version < (0, 25, 0):
        notes.append(
            f"vLLM {v} switches full CUDA graphs to PIECEWISE with this key, and its Model Runner V2 does not take it "
            "(vllm/config/vllm.py, _maybe_override_dynamic_sd_cudagraph_mode)"
        )
    elif version < _V1_RUNNER_GONE:
        notes.append(
            f"vLLM {v} runs this key with PIECEWISE CUDA graphs on Model Runner V1; full graphs need "
            "VLLM_USE_V2_MODEL_RUNNER=1 (vllm/config/vllm.py, _maybe_override_dynamic_sd_cudagraph_mode)"
        )
    else:  # 0.34.0 has Model Runner V2 alone (no v1/worker/gpu_model_runner.py, no use_v2_model_runner in
        # config/vllm.py), and the override to PIECEWISE, which spared V2, went with V1 (0.33.0 L1069-1086 has it)
        notes.append(f"vLLM {v} runs this key on Model Runner V2, its one runner, with its full CUDA graphs")
    if version < (0, 26, 0):
        notes.append(
            f"vLLM {v} does not guard this key under data parallelism: with --data-parallel-size > 1 ranks can pick "
            "different K and deadlock (guarded from 0.26.0); leave it out there"
        )
    else:
        notes.append(
            f"with --data-parallel-size > 1 vLLM {v} drops this key and runs num_speculative_tokens for every batch "
            "(vllm/config/vllm.py, _maybe_disable_dynamic_sd_for_data_parallel)"
        )
    tested = ("eagle", "eagle3", "dflash")
    if method is not None and method not in tested:
        notes.append(
            f"vLLM's documentation says dynamic speculation was tested with EAGLE, EAGLE-3 and DFlash only; method "
            f"{method} 'may or may not work out of the box' (docs/features/speculative_decoding/"
            "dynamic_speculative_decoding.md)"
        )
    notes.append(
        "vLLM has no per-context-length key in any release through 0.34.0 (RFC vllm-project/vllm#48627 and PR "
        "#48944 open): specsim schedule --contexts shows where context would change K"
    )
    return notes


def engine_settings(dep, engine: str) -> tuple[list[str], list[str]]:
    """(settings for the target, notes) that the engine needs besides ``speculative_config``.

    vLLM command-line flags (docs.vllm.ai, "Engine Arguments"): ``--tensor-parallel-size``,
    ``--quantization fp8`` for FP8 quantisation of a 16-bit checkpoint on load, ``--kv-cache-dtype fp8``.
    TensorRT-LLM ``LlmArgs`` keys for ``--extra_llm_api_options`` (``tensor_parallel_size``,
    ``kv_cache_config.dtype``) are written into its YAML by :func:`to_trtllm`.  A pre-quantised checkpoint
    needs no flag (both engines read its ``quantization_config``); a dtype the engine cannot produce on load
    becomes a note asking for a quantised checkpoint.
    """
    t = dep.target
    flags: list[str] = []
    notes: list[str] = []
    if engine == "vllm":
        if t.tp > 1:
            flags += ["--tensor-parallel-size", str(t.tp)]
        if t.kv_dtype == "fp8":
            flags += ["--kv-cache-dtype", "fp8"]
    for model, who in ((t, "target"), (dep.draft, "draft")):
        if model is None or not model.checkpoint_dtype:
            continue
        if engine == "vllm" and model.weight_dtype == "fp8":
            if who == "target":
                flags += ["--quantization", "fp8"]
        else:
            notes.append(
                f"the {who} {model.name} is modelled in {model.weight_dtype} but its checkpoint is "
                f"{model.checkpoint_dtype}: serve a {model.weight_dtype}-quantised checkpoint of it "
                + (
                    "(vLLM quantises to FP8 on load only)"
                    if engine == "vllm"
                    else "(TensorRT-LLM reads pre-quantised checkpoints)"
                )
            )
    return flags, notes


def check_vllm_pair(dep) -> None:
    """Refuse a pair vLLM's draft-model speculation rejects: its vocabulary sizes must be equal.

    vLLM asserts equal vocab sizes of draft and target (vllm-project/vllm issue #5203; the opt-in padding of
    PR #42775 was still open in 2026-05), so a Qwen2.5 0.5B draft (151,936) for a 14B+ target (152,064) fails
    to start even though the tokenizers agree.
    """
    if not dep.drafter.shares_vocabulary:
        return
    if dep.target.vocab_size != dep.draft.vocab_size:
        raise ValueError(
            f"vLLM requires the draft's vocab_size to equal the target's: {dep.draft.name} has {dep.draft.vocab_size:,}, "
            f"{dep.target.name} {dep.target.vocab_size:,} (vllm-project/vllm#5203); pad the draft's embedding and config "
            "to the target's size, or choose another draft"
        )


class VllmBench(BenchWriter):
    """vLLM: ``vllm serve`` and ``vllm bench serve``.

    Read from the released wheels (the tags' code): ``vllm/config/speculative.py`` (``SpeculativeConfig``: ``method``,
    ``model``, ``num_speculative_tokens``, ``draft_tensor_parallel_size``, ``prompt_lookup_min``/``max``, and from
    0.20.0 ``rejection_sample_method: synthetic`` with ``synthetic_acceptance_length`` in [1, k + 1], turned into the
    per-position schedule [1, ..., 1, frac, 0, ...] by ``_acceptance_length_to_rates``; 0.19 had only a per-token
    ``synthetic_acceptance_rate`` on Model Runner V2), ``vllm/engine/arg_utils.py`` (``--speculative-config`` JSON,
    ``--tensor-parallel-size``, ``--max-num-seqs``, ``--enable-prefix-caching``/``--no-enable-prefix-caching``),
    ``vllm/benchmarks/serve.py`` and ``vllm/benchmarks/datasets.py`` (``vllm bench serve`` from 0.10.0: ``--backend``,
    ``--base-url``, ``--model``, ``--dataset-name random|custom``, ``--random-input-len``, ``--random-output-len``,
    ``--random-range-ratio``, ``--custom-output-len``, ``--num-prompts``, ``--max-concurrency``, ``--request-rate``,
    ``--ignore-eos``, ``--save-result``, ``--result-dir``, ``--result-filename``; ``spec_decode_acceptance_length``
    in the result from 0.14.0).  ``draft_model`` is refused by vLLM before 0.15.0 (``arg_utils.py``).
    """

    name, newest = "vllm", "0.34.0"

    def check(self, version, drafter, pins, topk):
        if version < (0, 10, 0):
            raise ValueError(
                f"vllm {_version_text(version)}: specsim writes plans for vLLM 0.10.0 and later, where "
                "`vllm bench serve` exists (vllm/entrypoints/cli/benchmark/serve.py)"
            )
        if topk > 1:
            raise ValueError(
                "vLLM drafts chains in these plans (top-k 1); a token tree is an SGLang or TensorRT-LLM plan"
            )
        drafter.support("vllm", version)
        if any(p is not None for p in pins) and version < (0, 20, 0):
            raise ValueError(
                f"vllm {_version_text(version)} cannot pin acceptance at a length: synthetic_acceptance_length "
                "arrived in 0.20.0 (vllm-project/vllm#40662; 0.19 pins only a per-token rate on Model Runner V2); "
                f"use vllm 0.20.0 or later, or {given_as('pin=False', '--no-pin')} (real acceptance on "
                f"{given_as('prompts')} at both step counts, "  # design_plan's pin and prompts, bench-plan's flags
                "its /metrics saved around each run)"
            )
        notes = []
        if version < (0, 14, 0):
            notes.append(
                f"vllm {_version_text(version)}'s client records no acceptance length (from 0.14.0): every "
                "speculative run saves /metrics before and after, and calibrate-engine reads the difference"
            )
        return notes

    def _spec_config(self, plan, server):
        drafter = plan.drafter_type
        config = {"method": drafter.support("vllm").name, "num_speculative_tokens": server.steps}
        if plan.draft_checkpoint:
            config["model"] = plan.draft_checkpoint
        config |= _lookup(drafter) | dict(drafter.support(NAME).keys)
        if drafter.shares_vocabulary and plan.draft_tp != plan.tp:
            config["draft_tensor_parallel_size"] = plan.draft_tp
        if server.pinned_accept_length is not None:
            config |= {
                "rejection_sample_method": "synthetic",
                "synthetic_acceptance_length": server.pinned_accept_length,
            }
        return config

    def server(self, plan, server):
        import json

        cmd = [
            "vllm",
            "serve",
            plan.served_model,
            "--port",
            str(plan.port),
            "--tensor-parallel-size",
            str(plan.tp),
            "--max-num-seqs",
            str(plan.max_concurrency),
            "--no-enable-prefix-caching",
        ]
        if server.steps is not None:
            cmd += ["--speculative-config", json.dumps(self._spec_config(plan, server), separators=(",", ":"))]
        return {}, cmd, None

    def client(self, plan, run, url):
        cmd = [
            "vllm",
            "bench",
            "serve",
            "--backend",
            "vllm",
            "--base-url",
            url,
            "--model",
            plan.served_model,
            "--num-prompts",
            str(run.num_prompts),
            "--max-concurrency",
            str(run.concurrency),
            "--request-rate",
            "inf",
            "--ignore-eos",
            "--save-result",
            "--result-dir",
            "results",
            "--result-filename",
            run.file.split("/", 1)[1],
        ]
        if run.input_tokens is None:
            cmd += [
                "--dataset-name",
                "custom",
                "--dataset-path",
                "prompts.jsonl",
                "--custom-output-len",
                str(run.output_tokens),
            ]
        else:
            cmd += [
                "--dataset-name",
                "random",
                "--random-input-len",
                str(run.input_tokens),
                "--random-output-len",
                str(run.output_tokens),
                "--random-range-ratio",
                "0",
            ]
        return cmd

    def prompts_prep(self, plan):
        return ['cp "$PROMPTS" prompts.jsonl   # vllm bench serve --dataset-name custom reads {"prompt": ...} lines']


def render_schedule(
    ranges: list, dep, checkpoint: str | None, version: tuple, min_gain: float, max_batch: int
) -> tuple[str, list]:
    """(the speculative_config JSON of ``ranges`` for vLLM ``version``, one schedule entry a line as vLLM's documentation
    shows them, and the notes that go with it); a line saying to leave it unset where speculation pays nowhere."""
    import json

    config = to_vllm(ranges, checkpoint, dep, version)
    if config is None:
        return (
            f"# speculation does not pay (gain >= {min_gain:g}) at any batch size 1..{max_batch}: leave speculative_config unset",
            [],
        )
    schedule = config.get("num_speculative_tokens_per_batch_size")
    head = json.dumps({k: v for k, v in config.items() if k != "num_speculative_tokens_per_batch_size"}, indent=2)
    if schedule is None:
        text = head
    else:
        entries = ",\n    ".join(json.dumps(entry) for entry in schedule)
        text = head[:-2] + f',\n  "num_speculative_tokens_per_batch_size": [\n    {entries}\n  ]\n}}'
    sizes = _lookup(dep.drafter)
    notes = [f"written for vLLM {_version_text(version)}"]
    if sizes:
        notes.append(
            f"prompt_lookup_min {sizes['prompt_lookup_min']} and prompt_lookup_max {sizes['prompt_lookup_max']} are "
            "specsim's n-gram sizes (the maximum the reference article's, the minimum specsim's own), not vLLM's "
            "default (either one unset takes the other's value, both unset 5: vllm/config/speculative.py 0.34.0 "
            "L551-556): write your server's"
        )
    return text, notes + vllm_notes(ranges, version, dep.drafter.support(NAME).name)


#: vLLM's KV block: config/cache.py 0.33.0 L185 (CacheConfig.DEFAULT_BLOCK_SIZE 16).
KV_BLOCK_TOKENS = 16
#: How vLLM v1 holds its requests' KV cache, read in 0.33.0's source.
KV_POLICY_WHERE = (
    "vLLM admits a request when its prompt's blocks fit (scheduler_reserve_full_isl True, watermark 0.0: "
    "config/scheduler.py L190, L196; v1/core/sched/scheduler.py L1435-1451), allocates 16-token blocks as tokens "
    "arrive, with the lookahead slots of the drafts (L911-918), and where a running request cannot get one preempts "
    "the request it admitted last (L938, L970): its blocks freed, back to the front of the queue, its prompt and "
    "output recomputed when it resumes (L1799-1842); no admission in an iteration that preempted (L1050); 0.33.0"
)


# -- the engine as one object -------------------------------------------------------------------------------------
#: Where vLLM names its drafting methods: SpeculativeMethod and SpeculativeConfig in this file of each release.
_VLLM_SPEC = "vllm/config/speculative.py"
_PARALLEL = "vllm/config/speculative.py parallel_drafting: in 0.16.0, not 0.15.0 (PR #32887)"
#: vLLM 0.34.0 raises for parallel_drafting with any method but dflash and dspark (config/speculative.py 0.34.0
#: L1688-1693, "parallel_drafting is only supported by the dflash and dspark methods"), so P-EAGLE (eagle3 with it) and
#: PARD (draft_model with it) run to 0.33.
_PARALLEL_UNTIL = (0, 33, 99)
_PARALLEL_GONE = (
    "vllm/config/speculative.py 0.34.0 L1688-1693 raises 'parallel_drafting is only supported by the dflash and dspark "
    "methods'"
)
#: The tokens of max_num_batched_tokens a drafter takes beside each request's 1 + num_speculative_tokens (K):
#: SpeculativeConfig.max_num_new_slots_for_drafting (vllm/config/speculative.py 0.33.0 L2058-2098, the same table at
#: 0.28.0-0.32.0 but DFlash K and DSpark K - 1 there: 0.30.0 L1853-1891, 0.31.0 L1882-1920, 0.32.0 L1888-1926, DSpark's
#: K - 1 through parallel_drafting, which __post_init__ sets for dflash and dspark at 0.30.0 L1461, 0.31.0 L1462, 0.32.0
#: L1468): 1 for a draft model, K for PARD, K - 1 for P-EAGLE, 0 for EAGLE, EAGLE-3, MTP, n-gram and suffix.  From 0.28.0
#: the scheduler charges each request it schedules, running or waiting, num_new_tokens + those slots
#: (vllm/v1/core/sched/scheduler.py 0.33.0 L719-721, L847, L1003, L1295, L1571; 0.30.0 L583, L808, L1263; 0.31.0 L584,
#: L826, L1314; 0.32.0 L613, L857, L1367; input_budget, absent from 0.27.0); 0.34.0 keeps that scheduler (L737, L1019,
#: L1635) and the slots (1 for a draft model: v1/worker/gpu/spec_decode/standalone_ar/config.py L24-26; 0 for every
#: other method: speculator_config.py L128-130) but refuses parallel_drafting outside DFlash and DSpark, so P-EAGLE
#: and PARD end at 0.33 (config/speculative.py 0.34.0 L1688-1693); from 0.17.0 to 0.27.0 vllm/config/vllm.py
#: _set_max_num_scheduled_tokens took max_num_seqs x the slots off the whole budget (read at 0.17.1, 0.20.0, 0.24.0 and
#: 0.27.0: (K - 1 where parallel_drafting, which DFlash and DSpark set) + 1 for a draft model; absent from 0.16.0).  Rows:
#: (first release, (per request, per drafted token, up front)); :meth:`Engine.draft_slots` reads them.
_SLOTS_UP_FRONT, _SLOTS_PER_REQUEST = (0, 17, 0), (0, 28, 0)
_PARALLEL_SLOTS = ((_SLOTS_UP_FRONT, (-1, 1, True)), (_SLOTS_PER_REQUEST, (-1, 1, False)))  # P-EAGLE: K - 1
#: The KV slots a request's blocks cover past its scheduled tokens (1 + K): vllm/config/vllm.py 0.33.0 L626-652
#: num_lookahead_tokens, K for EAGLE, EAGLE-3, MTP, DSpark (use_eagle, speculative.py L2116-2120) and a draft model,
#: K + 1 for DFlash, 0 for n-gram and suffix; the scheduler allocates them with every running request's slots
#: (v1/core/sched/scheduler.py 0.33.0 L914-918, kv_cache_manager.py allocate_slots L549-552).
_LOOKAHEAD = (1, 0)
#: vLLM's ``method`` for each drafter kind and the first release that takes it (releases before 0.10.0 are below what
#: specsim writes for).  P-EAGLE and PARD run the EAGLE-3 and draft-model proposers with ``parallel_drafting: true``.
METHODS = {
    "draft_model": EngineSupport(
        "draft_model",
        (0, 15, 0),
        "vllm/engine/arg_utils.py: 'not supported yet' before 0.15.0",
        slots=((_SLOTS_UP_FRONT, (1, 0, True)), (_SLOTS_PER_REQUEST, (1, 0, False))),
        lookahead=_LOOKAHEAD,
    ),
    "eagle": EngineSupport("eagle", (0, 10, 0), _VLLM_SPEC, lookahead=_LOOKAHEAD),
    "eagle3": EngineSupport("eagle3", (0, 10, 0), _VLLM_SPEC, lookahead=_LOOKAHEAD),
    "mtp": EngineSupport("mtp", (0, 10, 0), _VLLM_SPEC, lookahead=_LOOKAHEAD),
    "ngram": EngineSupport("ngram", (0, 10, 0), _VLLM_SPEC),
    "peagle": EngineSupport(
        "eagle3",
        (0, 16, 0),
        _PARALLEL,
        keys=(("parallel_drafting", True),),
        slots=_PARALLEL_SLOTS,
        lookahead=_LOOKAHEAD,
        until=_PARALLEL_UNTIL,
        until_where=_PARALLEL_GONE,
    ),
    "pard": EngineSupport(
        "draft_model",
        (0, 16, 0),
        _PARALLEL,
        keys=(("parallel_drafting", True),),
        slots=((_SLOTS_UP_FRONT, (0, 1, True)), (_SLOTS_PER_REQUEST, (0, 1, False))),  # K
        lookahead=_LOOKAHEAD,
        until=_PARALLEL_UNTIL,
        until_where=_PARALLEL_GONE,
    ),
    "dflash": EngineSupport(
        "dflash",
        (0, 20, 0),
        "vllm/config/speculative.py SpeculativeMethod: in 0.20.0, not 0.19.1 (PR #38300)",
        slots=_PARALLEL_SLOTS[:1] + ((_SLOTS_PER_REQUEST, (0, 1, False)), ((0, 33, 0), (0, 0, False))),
        lookahead=(1, 1),  # a bonus query beside one per draft token
    ),
    "dspark": EngineSupport(
        "dspark",
        (0, 25, 0),
        "vllm/config/speculative.py SpeculativeMethod: in 0.25.0 (DSparkModelTypes, L60), not 0.24.0 (PR #46995)",
        # K - 1 as P-EAGLE to 0.32.0 (0.25.0-0.27.0 set parallel_drafting for it: speculative.py 0.25.0 L910, 0.26.0
        # L963, 0.27.0 L984, so max_num_seqs x (K - 1) off the budget up front; 0.30.0-0.32.0 at L1461, L1462, L1468,
        # K - 1 a request), 0 from 0.33.0
        slots=_PARALLEL_SLOTS + (((0, 33, 0), (0, 0, False)),),
        lookahead=_LOOKAHEAD,  # anchor sampling (sample_from_anchor, its default): no bonus query
    ),
    "suffix": EngineSupport(
        "suffix",
        (0, 12, 0),
        "vllm/config/speculative.py SpeculativeMethod: in 0.12.0, not 0.11.0 (PR #25784; needs pip install "
        "arctic-inference)",
    ),
}


def _per_batch_missing(dep, ranges: list, version: tuple) -> str | None:
    if version < PER_BATCH_SINCE:
        v = _version_text(version)
        return f"vLLM {v} has no num_speculative_tokens_per_batch_size (from 0.24.0, vllm-project/vllm#32374)"
    return None


def _is_bench_file(record: dict) -> bool:
    """A result of ``vllm bench serve`` (vllm/benchmarks/serve.py: ``backend`` with ``endpoint_type`` or ``model_id``,
    ``spec_decode_acceptance_length`` from 0.14.0) or of benchmarks/benchmark_serving.py before it (no endpoint_type)."""
    keys = ("endpoint_type", "model_id", "spec_decode_acceptance_length")
    return ("backend" in record and any(k in record for k in keys)) or ("mean_tpot_ms" in record and "date" in record)


#: vllm/engine/arg_utils.py get_batch_defaults (EngineArgs._set_default_args_v1 in 0.10, _set_default_args in 0.11;
#: the same values in every x.y.0 wheel from 0.10.0 to 0.34.0; the A100 exception is vLLM PR #17885): a GPU with 70 GiB or more that is not an A100 gets the larger limits, every other GPU the smaller;
#: (max_num_seqs, max_num_batched_tokens) for the OpenAI server (vllm serve) and the LLM class (offline batches).
_LARGE_GPU_BYTES = 70 * 2**30
_BATCH_DEFAULTS = {
    (True, False): (1024, 8192),
    (True, True): (1024, 16384),
    (False, False): (256, 2048),
    (False, True): (256, 8192),
}
#: From 0.28.0 a GPU of 160 GiB or more (B200, B300, MI300X and larger) takes 1024 sequences and 16,384 tokens for the
#: server too (get_batch_defaults, 0.28.0 L2582-2591, 0.30.0 L2730, 0.33.0 L2973, 0.34.0 L3010; absent from 0.25.0,
#: 0.26.0 and 0.27.0); from 0.33.0 a GB10 (compute capability 12.1) stays on the smaller tier whatever its memory
#: (is_gb10, 0.33.0 L2963 and L2984-2988).
_HUGE_GPU_BYTES, _HUGE_SINCE, _HUGE_DEFAULTS = 160 * 2**30, (0, 28, 0), (1024, 16384)
_GB10_SMALL_SINCE = (0, 33, 0)
#: Where each x.y.0 wheel from 0.10.0 to 0.34.0 sets each tier in vllm/engine/arg_utils.py (the function named in
#: _BATCH_DEFAULTS_FUNCTION, else get_batch_defaults), lines from the tier's test to its closing brace: (160 GiB or more,
#: None before 0.28; 70 GiB or more and not an A100 (nor a GB10 from 0.33); the rest).  The values are those above in
#: every one (each wheel's lines read 2026-12-06).
_BATCH_DEFAULTS_FUNCTION = {(0, 10): "EngineArgs._set_default_args_v1", (0, 11): "EngineArgs._set_default_args"}
_BATCH_DEFAULTS_LINES = {
    (0, 10): (None, "L1584-1593", "L1594-1603"),
    (0, 11): (None, "L1605-1614", "L1615-1624"),
    (0, 12): (None, "L1827-1836", "L1837-1846"),
    (0, 13): (None, "L1797-1806", "L1807-1816"),
    (0, 14): (None, "L1846-1855", "L1856-1865"),
    (0, 15): (None, "L1837-1846", "L1847-1856"),
    (0, 16): (None, "L1877-1886", "L1887-1896"),
    (0, 17): (None, "L1974-1983", "L1984-1993"),
    (0, 18): (None, "L2008-2017", "L2018-2027"),
    (0, 19): (None, "L2053-2062", "L2063-2072"),
    (0, 20): (None, "L2208-2217", "L2218-2227"),
    (0, 21): (None, "L2246-2255", "L2256-2265"),
    (0, 22): (None, "L2311-2320", "L2321-2330"),
    (0, 23): (None, "L2316-2325", "L2326-2335"),
    (0, 24): (None, "L2404-2413", "L2414-2423"),
    (0, 25): (None, "L2426-2435", "L2436-2445"),
    (0, 26): (None, "L2460-2469", "L2470-2479"),
    (0, 27): (None, "L2544-2553", "L2554-2563"),
    (0, 28): ("L2582-2591", "L2592-2601", "L2602-2611"),
    (0, 29): ("L2698-2707", "L2708-2717", "L2718-2727"),
    (0, 30): ("L2730-2739", "L2740-2749", "L2750-2759"),
    (0, 31): ("L2858-2867", "L2868-2877", "L2878-2887"),
    (0, 32): ("L2923-2932", "L2933-2942", "L2943-2952"),
    (0, 33): ("L2973-2982", "L2983-2996", "L2997-3006"),
    (0, 34): ("L3010-3019", "L3020-3033", "L3034-3043"),
}


def _batch_defaults_read(release: tuple, tier: int) -> tuple[str, str]:
    """(the x.y.0 wheel the batch defaults were read in for ``release``, where in it: the function and the lines of
    ``tier``: 0 huge, 1 large, 2 the rest), as the limits note cites them; 0.34.0 past the newest read.

    >>> _batch_defaults_read((0, 34, 0), 1), _batch_defaults_read((0, 27, 0), 2), _batch_defaults_read((0, 24, 0), 1)
    (('0.34.0', 'get_batch_defaults L3020-3033'), ('0.27.0', 'get_batch_defaults L2554-2563'), ('0.24.0', 'get_batch_defaults L2404-2413'))
    >>> _batch_defaults_read((0, 10, 2), 2)
    ('0.10.0', 'EngineArgs._set_default_args_v1 L1594-1603')
    """
    line = min(tuple(release[:2]), max(_BATCH_DEFAULTS_LINES))
    if line not in _BATCH_DEFAULTS_LINES:  # before 0.10: no preset covers it (RANGES)
        raise ValueError(f"vLLM {_version_text(release)}'s batch defaults were not read: 0.10.0 or later")
    function = _BATCH_DEFAULTS_FUNCTION.get(line, "get_batch_defaults")
    return f"{line[0]}.{line[1]}.0", f"{function} {_BATCH_DEFAULTS_LINES[line][tier]}"


def default_limits(hardware, offline: bool, release: tuple = (0, 24, 0)) -> DefaultLimits:
    """vLLM ``release``'s own max_num_seqs and max_num_batched_tokens on ``hardware`` when neither is set (both arms
    alike; the token budget counts the decoding sequences' tokens: v1/core/sched/scheduler.py schedules the running
    requests first, from the same token_budget)."""
    name = f"{hardware.name} {getattr(hardware, 'device', '') or ''}".lower()
    gb10 = release >= _GB10_SMALL_SINCE and hardware.sm == (12, 1)
    large = hardware.memory_bytes >= _LARGE_GPU_BYTES and "a100" not in name and not gb10
    huge = release >= _HUGE_SINCE and hardware.memory_bytes >= _HUGE_GPU_BYTES and not gb10
    seqs, tokens = _HUGE_DEFAULTS if huge else _BATCH_DEFAULTS[(large, offline)]
    read, lines = _batch_defaults_read(release, 0 if huge else 1 if large else 2)
    tier = (
        "a GPU of 160 GiB or more"
        if huge
        else "a GPU of 70 GiB or more other than an A100"
        if large
        else "an A100 or a GPU under 70 GiB"
    )
    where = (
        f"vLLM's defaults (as read at {read}) for {'an offline LLM batch' if offline else 'an OpenAI server'} on "
        f"{tier}: vllm/engine/arg_utils.py {lines}"
    )
    return DefaultLimits(seqs, tokens, where)


#: vLLM's gpu_memory_utilization when --gpu-memory-utilization is not given: (first release, share), newest last.
#: CacheConfig.gpu_memory_utilization: 0.9 in every x.y.0 wheel from 0.10.0 to 0.19.0 (vllm/config.py L1626 in 0.10.0,
#: vllm/config/cache.py from 0.11.0), Field(default=0.92) in every one from 0.20.0 to 0.25.0 (cache.py L66 in 0.20.0).  From 0.20.0 the start-up also sets aside its
#: CUDA graphs' estimated memory (vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1" from 0.20.0,
#: "0" in 0.19.0; v1/worker/gpu_worker.py determine_available_memory), which specsim does not count (the rest of the
#: start-up it does: :func:`start_up`).
_MEMORY_UTILIZATION = ((0, 0, 0), 0.9), ((0, 20, 0), 0.92)
#: vLLM 0.34.0 leaves gpu_memory_utilization unset (config/cache.py 0.34.0 L216, "1.0 with the extensible KV cache
#: ... and 0.92 otherwise", L226-227) and turns its extensible KV cache on by default on CUDA and ROCm (L395-405;
#: config/vllm.py _resolve_extensible_kv_cache L3180-3256: off only for kv_cache_memory_bytes, num_gpu_blocks_override,
#: elastic EP or some KV connectors), which resolves the share to 1.0 (resolved_gpu_memory_utilization, cache.py
#: L495-501; v1/worker/utils.py request_memory L742-743: requested = total x 1.0).  After warmup it sizes the cache
#: (v1/worker/extensible_kv_cache.py measure_kv_cache_bytes, L612-618) as min(requested - non-KV use, free + committed
#: - margin) - max(transient peak, torch's reserve growth), margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, 0.75 x the peak)
#: (L64-65: 1 GiB, 3 GiB on ROCm): with requested the whole device the second bound holds, so the cache is what the
#: weights, the memory outside torch and the peak leave of the memory free at start, less the margin.  specsim takes
#: the peak as :func:`start_up`'s profiling pass (not measured on 0.34) and the whole device as free at start (the CUDA
#: context, which that leaves out, is not counted; nor the CUDA graphs, as for 0.20-0.33).
_EXTENSIBLE_SINCE = (0, 34, 0)
_EXTENSIBLE_MARGIN_FLOOR_BYTES = {"cuda": 1 * 2**30, "rocm": 3 * 2**30}
_EXTENSIBLE_MARGIN_FRACTION = 0.75
_EXTENSIBLE_SAID = (
    "extensible KV cache (on by default on CUDA and ROCm: vllm/config/cache.py 0.34.0 L395-405), which resolves "
    "gpu_memory_utilization to 1.0 (resolved_gpu_memory_utilization, L495-501) and sizes the cache from the memory "
    "free after warmup (v1/worker/extensible_kv_cache.py measure_kv_cache_bytes, L612-618), taken here as the whole "
    "device (the CUDA context not counted)"
)
#: The rule in words (the capacity line's, --memory-util's help).
MEMORY_UTILIZATION_SAID = ", ".join(
    f"{u:g} from {_version_text(first)}"
    if first > (0, 0, 0)
    else f"{u:g} before {_version_text(_MEMORY_UTILIZATION[i + 1][0])}"
    for i, (first, u) in enumerate(_MEMORY_UTILIZATION)
)


#: What vLLM's start-up takes before it sizes the KV cache, beside the weights (v1/worker/gpu_worker.py
#: determine_available_memory, the same accounting in the 0.10.0 to 0.26 source; from 0.27.0 measured as the fall in
#: free memory, the same quantities): the peak of torch's allocation in a profiling pass (v1/worker/gpu_model_runner.py
#: profile_run: one forward pass of max_num_batched_tokens tokens, then the sampler over min(max_num_batched_tokens,
#: max_num_seqs) rows of logits over the whole vocabulary) and the memory outside torch that grew since the worker
#: started (NCCL and all-reduce buffers, workspaces).  Two figures have no source but start-up logs, and are taken
#: from one model's, Llama-3.1-8B-Instruct on H100 SXMs under vLLM 0.19.0 at TP 1, 2 and 4 (llm-d-incubation/
#: llm-d-planner accuracy/results/v0.19.0/logs at d3121e05: torch peak increase 1.89 GiB at each, non-torch increase
#: 0.25, 2.07 and 2.13 GiB); the other starts of specsim/calibration/data/kv_capacity_public.csv judge them
#: (docs/reports/2026-12-05-vllm-startup-memory.md).  The sampler's bytes per logit: (1.89 GiB less the pass's hidden
#: states, 8192 x 4096 x 2 bytes) over 1024 x 128256 logits, with 0.19.0's sampler (top-k/top-p in Triton from 0.17;
#: 0.11.1 to 0.16 sort in torch, about twice the bytes, not measured, and taken as the same).
SAMPLER_BYTES_PER_LOGIT = 14.9
#: Memory outside torch at TP 1, and per GPU at TP 2 or more over NVLink (the figures above, the latter their mean:
#: NCCL's buffers on the H100s' NVSwitch; one TP-4 start over PCIe, vllm-project/vllm#29070, logged 0.09 GiB, so GPUs
#: without NVLink, whose interconnect is under NVLINK_BYTES_PER_S, take the TP-1 figure).
OUTSIDE_TORCH_BYTES = 0.25 * 2**30
OUTSIDE_TORCH_NVLINK_BYTES = 2.1 * 2**30
NVLINK_BYTES_PER_S = 100e9
#: Bytes of an activation in the profiling pass (bf16 or fp16, whatever the weights' format; an fp32 model's would be 4).
ACTIVATION_BYTES = 2
#: From this release a fused MoE's buffers come from a workspace that is kept, not freed, so they are still held when
#: the sampler peaks (v1/worker/workspace.py, new in 0.13.0; fused_moe/modular_kernel.py get_simultaneous, fused_moe.py
#: workspace_shapes: M x topk x max(N / 2, K) and M x topk x max(N, K), N the gate-up width per GPU, K the hidden size).
MOE_WORKSPACE_SINCE = (0, 13, 0)


@dataclasses.dataclass(frozen=True)
class StartUp:
    """What a vLLM server's start-up takes per GPU before its KV cache, beside the weights (:func:`start_up`)."""

    #: The profiling pass's peak: the larger of its forward pass and its sampler (with a kept MoE workspace).
    peak_bytes: float
    #: What sets it: "the sampler's logits" (beside a kept MoE workspace), or "the MLP's activations".
    peak_part: str
    outside_torch_bytes: float
    tokens: int  #: the pass's tokens (max_num_batched_tokens)
    rows: int  #: the sampler's rows (min(tokens, max_num_seqs))
    limits_said: str  #: where the two limits come from
    #: What an extensible KV cache (vLLM 0.34) keeps free beyond the peak, max(margin_floor_bytes, 0.75 x the peak)
    margin_bytes: float = 0.0
    margin_floor_bytes: float = 0.0

    @property
    def bytes(self) -> float:
        return self.peak_bytes + self.outside_torch_bytes + self.margin_bytes

    def said(self) -> str:
        margin = (
            f"; a margin of {self.margin_bytes / 1e9:.2f} GB, the larger of {self.margin_floor_bytes / 2**30:g} GiB and "
            f"{_EXTENSIBLE_MARGIN_FRACTION:g} x the peak (extensible_kv_cache.py L64-65)"
            if self.margin_bytes
            else ""
        )
        return (
            f"less {self.bytes / 1e9:.2f} GB for its start-up{' and its cache margin' if self.margin_bytes else ''} "
            f"(a profiling pass's peak of {self.peak_bytes / 1e9:.2f} GB, "
            f"{self.peak_part}, at {self.tokens} tokens and {self.rows} sequences, {self.limits_said}; "
            f"{self.outside_torch_bytes / 1e9:.2f} GB outside torch{margin}; measured on vLLM 0.19.0 H100 starts: "
            "docs/reports/2026-12-05-vllm-startup-memory.md)"
        )


def start_up(
    hardware,
    model,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    release: tuple = (0, 19, 0),
) -> StartUp:
    """What vLLM ``release``'s start-up takes per GPU before the KV cache of ``model`` on ``hardware``
    (:class:`StartUp`), its profiling pass at ``max_batched_tokens`` tokens and ``max_num_seqs`` sequences (None: vLLM's
    server defaults on this GPU).  A speculating server's pass (its drafter's, and the rejection sampler's dummy run
    beside the sampler's) is taken as the plain one's: not measured."""
    limits = default_limits(hardware, offline=False, release=release)
    tokens = int(max_batched_tokens) if max_batched_tokens else limits.max_batched_tokens
    seqs = int(max_num_seqs) if max_num_seqs else limits.max_num_seqs
    rows = min(tokens, seqs)
    said = "the engine's limits in use" if max_batched_tokens or max_num_seqs else "vLLM's server defaults on this GPU"
    h, tp = model.hidden_size, model.tp
    up = 3 if model.gated_mlp else 2  # gate and up out, and the activation's out (or up's and the activation's)
    per_token = (2 * h + up * model.intermediate_size / tp) if model.n_mlp_layers else 0.0
    kept = 0.0
    if model.is_moe:  # a fused MoE's caches: each routed copy's gate-up, activation and down outputs
        per_token = max(per_token, 2 * h + model.n_active_experts * (up * model.moe_intermediate_size / tp + h))
        if release >= MOE_WORKSPACE_SINCE:
            n = (2 if model.gated_mlp else 1) * model.moe_intermediate_size / tp
            kept = tokens * model.n_active_experts * (max(n / 2, h) + max(n, h)) * ACTIVATION_BYTES
    forward = tokens * per_token * ACTIVATION_BYTES
    sampler = rows * model.vocab_size * SAMPLER_BYTES_PER_LOGIT + tokens * h * ACTIVATION_BYTES + kept
    part = "the sampler's logits" + (" beside the fused MoE's kept workspace" if kept else "")
    if forward > sampler:
        part = "the MLP's activations"
    nvlink = tp > 1 and (hardware.interconnect_bytes_per_s or 0.0) >= NVLINK_BYTES_PER_S
    outside = OUTSIDE_TORCH_NVLINK_BYTES if nvlink else OUTSIDE_TORCH_BYTES
    return StartUp(max(forward, sampler), part, outside, tokens, rows, said)


def memory_share(
    preset,
    hardware,
    model,
    max_batched_tokens: int | None = None,
    given: float | None = None,
    max_num_seqs: int | None = None,
):
    """vLLM's share of the device for its weights and KV cache: its gpu_memory_utilization (``given``, else its own
    default for the release ``preset`` was asked for, its range's newest where none was named; from 0.34 the whole
    device, its extensible KV cache's) less what its start-up takes before the cache (:func:`start_up`, and from 0.34
    the margin that cache keeps free), speculating or not."""
    release = preset_release(NAME, preset, RANGES)
    taken = start_up(hardware, model, max_batched_tokens, max_num_seqs, release)
    if given is not None:
        share, text = given, f"{given:g} as given"
    else:
        extensible = release >= _EXTENSIBLE_SINCE
        share = 1.0 if extensible else next(u for first, u in reversed(_MEMORY_UTILIZATION) if release >= first)
        spans = ""
        if preset.asked:
            version = _version_text(release)
        else:
            first = next((first for first, last, key in RANGES if key == preset.version), RANGES[-1][0])
            version = f"{first[0]}.{first[1]}-{release[0]}.{release[1]}"
            older = next(u for start, u in reversed(_MEMORY_UTILIZATION) if first >= start)
            if extensible:  # the range's newest sizes its cache so, its older releases by their 0.92
                engine = given_as("engine")  # Deployment.build's engine, the command's --engine
                spans = (
                    f"; {release[0]}.{release[1]}'s, the newest of {version}, as {engine} names no release: name yours "
                    f"({engine} vllm@0.33.0: {_MEMORY_UTILIZATION[-1][1]:g} of the device) where it is older"
                )
                version = f"{release[0]}.{release[1]}"
            elif older != share:  # a preset named without its release, whose range changed the default: the newest's
                engine = given_as("engine")
                spans = (
                    f"; {release[0]}.{release[1]}'s, the range's newest, as {engine} names no release: name yours "
                    f"({engine} vllm@{first[0]}.{first[1]}.0) where it is older"
                )
        if extensible:
            floor = _EXTENSIBLE_MARGIN_FLOOR_BYTES["rocm" if hardware.platform == "rocm" else "cuda"]
            margin = max(floor, _EXTENSIBLE_MARGIN_FRACTION * taken.peak_bytes)
            taken = dataclasses.replace(taken, margin_bytes=margin, margin_floor_bytes=floor)
            text = f"vLLM {version}'s {_EXTENSIBLE_SAID}{spans}"
        else:
            text = (
                f"vLLM {version}'s gpu_memory_utilization default {share:g} (vllm/config/cache.py: "
                f"{MEMORY_UTILIZATION_SAID}{spans})"
            )
    left = max(share - taken.bytes / hardware.memory_bytes, 0.0)
    return MemoryShare(left, left, f"{text}, {taken.said()}", taken.bytes)


def _flashinfer_serves_fp8_cache(hardware) -> tuple[str, bool] | None:
    """Where vLLM runs an FP8 KV cache on FlashInfer: (the GPU's family as the reasons print it, whether FlashInfer's
    metadata build copies from the GPU on every pass there); None elsewhere.

    FlashAttention takes an FP8 cache only as FA3 on sm90 (v1/attention/backends/flash_attn.py, 0.24.0), and FlashInfer
    serves it through TRT-LLM attention on sm100: what is left is Ampere and Ada (sm 8.x), which copy on every build,
    and RTX Blackwell (sm 12.x), which copies only on builds with prefill rows, as vllm-project/vllm#57352 lists them.
    A CUDA profile that gives no compute capability is placed by its FP8 tensor cores: without them it is Ampere or
    older, which counts as sm 8.x."""
    if hardware.platform != "cuda":
        return None
    sm = hardware.sm
    if sm is None:
        return None if hardware.peak_fp8_flop_per_s is not None else ("sm 8.x (a GPU without FP8 tensor cores)", True)
    if sm[0] == 8:
        return f"sm 8.x (Ampere and Ada; this GPU is {hardware.compute_capability})", True
    if sm[0] == 12:
        return f"sm 12.x (RTX Blackwell; this GPU is {hardware.compute_capability})", False
    return None


#: Model Runner V2 is vLLM's default runner for these architectures in 0.24.0 (config/vllm.py
#: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES, L68-77); from 0.25.0 also for every model neither MoE nor hybrid
#: (_is_default_v2_model_runner_model, 0.25.0 L557-575).  0.21.0 and older run V2 only under VLLM_USE_V2_MODEL_RUNNER=1.
_V2_DEFAULT_SINCE = (0, 24, 0)
_V2_ALL_DENSE_SINCE = (0, 25, 0)
#: From 0.29.0 V2 is the default for every generating model on CUDA, MoE and hybrid included: use_v2_model_runner
#: returns True unless a feature it lacks is asked for (config/vllm.py 0.29.0 L645-677, use_v2_model_runner; 0.28.0's
#: _is_default_v2_model_runner_model, L691-712, still kept MoE and hybrid models not listed on V1; gone from 0.29.0).
_V2_ALL_SINCE = (0, 29, 0)
_V2_ARCHITECTURES_0_24 = frozenset(
    {
        "Qwen3ForCausalLM",
        "DeepseekV2ForCausalLM",
        "Qwen2MoeForCausalLM",
        "GraniteMoeForCausalLM",
        "LlamaForCausalLM",
        "MistralForCausalLM",
    }
)
#: The drafters V2's AutoRegressiveSpeculator runs a step at a time (init_speculator, v1/worker/gpu/spec_decode/
#: __init__.py, 0.24.0); V2 sends draft_model and n-gram to the V1 runner (config/vllm.py
#: _get_v2_model_runner_unsupported_features, L2027-2032), and DFlash drafts in one pass.
_V2_STEP_KINDS = frozenset({"eagle", "eagle3", "mtp"})
#: FlashInfer on RTX Blackwell reports UNIFORM_BATCH from 0.28.0 (v1/attention/backends/flashinfer.py
#: get_cudagraph_support, 0.28.0 L1019-1023: ``is_sm12x or ...``), so vLLM keeps full graphs there; from 0.30.0 through
#: 0.34.0 sm 12.x is an XQA architecture (is_device_capability_family(120)) whose TRT-LLM decode, where
#: can_use_trtllm_attention holds and XQA takes the head size, gives UNIFORM_BATCH (0.30.0 L991-1009, 0.31.0 L985-1003,
#: 0.32.0 L1050-1077, 0.33.0 L1196-1223, 0.34.0 L1223-1250).  On sm 8.x (no TRT-LLM attention:
#: vllm/utils/flashinfer.py supports_trtllm_attention, 0.30.0 L592-614) it reports UNIFORM_SINGLE_TOKEN_DECODE to
#: 0.32.0 (read in every x.y.0 wheel to 0.32.0); from 0.33.0 a GPU below sm 9.0 decodes on FlashInfer's FA2 wrapper,
#: which takes uniform multi-token (speculative) queries, and reports UNIFORM_BATCH for causal attention
#: (_use_fa2_native_decode, 0.33.0 L118-120 and L1187-1191; 0.34.0 L120-122 and L1214-1218), so full graphs stay.
_SM12_FULL_GRAPHS_SINCE = (0, 28, 0)
_SM8_FULL_GRAPHS_SINCE = (0, 33, 0)
#: The extra time of a pass without a CUDA graph, per layer: this project's own harness (eager PyTorch, not vLLM) timed
#: a 16-layer Llama-3.2-1B pass at batch 1 at 9.0 ms eager against 2.2 ms in a CUDA graph on an H200
#: (data/h200-2026-11-30/README.md in the team's shared folder: measure-loop's t_draft), (9.0 - 2.2) / 16 ms a layer.  No
#: public measurement of a vLLM draft step without a graph against one with it was found; vLLM's graph-less steps run
#: its compiled model (fewer launches than eager PyTorch) but build their attention metadata each step.
GRAPHLESS_LAYER_S = (9.0e-3 - 2.2e-3) / 16
GRAPHLESS_SAID = (
    "the harness's eager PyTorch pass over its CUDA-graphed one, (9.0 - 2.2) ms / 16 layers of Llama-3.2-1B at batch 1 "
    "on an H200 (data/h200-2026-11-30: not vLLM, which runs its compiled model), held at every batch"
)


#: Where vLLM runs every pass of a draft model, the round's first (the accepted tokens' prefill) included, without a CUDA
#: graph: (first, last release, drafter kinds, why).  0.31.0-0.33.x, Model Runner V2 (config/vllm.py
#: _get_v2_model_runner_unsupported_features lists "draft_model" at 0.30.0 L2844, not at 0.31.0 L3073-3083): its
#: draft-model speculator captures no graph, init_cudagraph_manager and capture are "pass  # CUDA graph not yet
#: supported" (v1/worker/gpu/spec_decode/draft_model/speculator.py 0.31.0 L67-71; standalone_ar/speculator.py 0.32.0
#: and 0.33.0 L67-71), every pass with cudagraph_runtime_mode NONE (0.31.0 L132, L209, L309; 0.33.0 L143-147).  0.34.0
#: builds a graph manager for it (standalone_ar/speculator.py L62-73).  PARD stays on V1 there ("parallel drafting for
#: EAGLE speculative decoding", 0.31.0 L3088-3092), whose drafter is graphed.
#: 0.15.0-0.25.x, the V1 runner: it initialised the drafter's cudagraph dispatcher keys only for use_eagle() (and
#: extract_hidden_states), not uses_draft_model() (gpu_model_runner.py 0.15.0 L5397-5399, 0.20.0 L6387-6396, 0.25.0
#: L6983-6995, read in those wheels; "or self.speculative_config.uses_draft_model()" from 0.26.0 L7131-7145, 0.27.0-0.30.0
#: the same: vllm-project/vllm#47460), and its dispatch returns NONE while "not self.keys_initialized"
#: (cudagraph_dispatcher.py 0.15.0 L207-211, 0.20.0 L273-279, 0.25.0 L274-280), which every pass of the draft model's
#: DraftModelProposer (a SpecDecodeBaseProposer) asks, so 0.15-0.25 ran a draft model eager, and PARD (the same proposer
#: with parallel_drafting, from 0.16.0) too: Model Runner V2, where it is the default, sends both to V1 (config/vllm.py
#: 0.25.0 L2068-2079, a method other than eagle, eagle3, mtp, dflash and dspark is unsupported there).
_EAGER_DRAFT_MODEL = (
    (
        (0, 15, 0),
        (0, 25, 99),
        frozenset({"draft_model", "pard"}),
        "runs a draft model (or PARD) on its V1 runner, which set up the drafter's CUDA graph keys for EAGLE-family "
        "drafters only before 0.26 (v1/worker/gpu_model_runner.py of 0.15.0, 0.20.0 and 0.25.0; vllm-project/vllm#47460 "
        "from 0.26.0): every draft pass, the first included, dispatched with cudagraph_runtime_mode NONE",
    ),
    (
        (0, 31, 0),
        (0, 33, 99),
        frozenset({"draft_model"}),
        "runs a draft model on its Model Runner V2, whose draft-model speculator captures no CUDA graph before 0.34 "
        "('CUDA graph not yet supported', v1/worker/gpu/spec_decode/draft_model/speculator.py of 0.31.0, "
        "standalone_ar/speculator.py of 0.32.0-0.33.0: every draft pass, the first included, with "
        "cudagraph_runtime_mode NONE)",
    ),
)
#: Where vLLM's Model Runner V2 runs a lookup drafter as Triton kernels on the GPU: (first release, drafter kinds, why).
#: From 0.32.0 V2 takes n-gram (config/vllm.py _get_v2_model_runner_unsupported_features lists "ngram" at 0.31.0
#: L3074-3078, not at 0.32.0 L2914-2948) and its speculator for use_ngram(), method "ngram" or "ngram_gpu", is
#: NgramGPUSpeculator (v1/worker/gpu/spec_decode/__init__.py 0.32.0 L79-84): a scan kernel over each request's token
#: ids and a finalize kernel (ngram/speculator.py 0.32.0 L20-148, launched L244-277), on the main stream after the
#: sampler (model_runner.py 0.32.0 L2239), so after the target's forward, not beside it.  From 0.34.0 suffix decoding
#: runs so too (SuffixSpeculator, suffix/speculator.py 0.34.0, its local scan L731; speculator_config.py L305), where
#: 0.32-0.33 left it to V1's CPU proposer (0.33.0 L3067).  0.34.0 keeps NgramGPUSpeculator for "ngram"
#: (speculator_config.py L303, ngram/config.py L11-15).
_GPU_LOOKUP = (
    (
        (0, 32, 0),
        frozenset({"ngram"}),
        "runs n-gram on Model Runner V2's NgramGPUSpeculator, Triton kernels after the sampler "
        "(v1/worker/gpu/spec_decode/ngram/speculator.py, 0.32.0-0.34.0), not the V1 runner's CPU scan",
    ),
    (
        (0, 34, 0),
        frozenset({"suffix"}),
        "runs suffix decoding on Model Runner V2's SuffixSpeculator, Triton kernels after the sampler "
        "(v1/worker/gpu/spec_decode/suffix/speculator.py, 0.34.0), not the V1 runner's CPU suffix trees",
    ),
)
# What a serial n-gram round waits for on the V1 runner, read in the 0.15.0, 0.18.0 and 0.25.0 wheels (looked for after
# h100-qwen2.5-7b-ngram's 1.6x over-prediction at batch 1: found by looking at that source).  Async scheduling is on by
# default without speculation and off for method "ngram" (config/vllm.py 0.15.0 L589-600, 0.18.0 L718-752, 0.25.0
# L1005-1015; asked for, 0.18.0 raises, L692-705), so a plain arm hides its step's host work and the n-gram arm waits
# for all of it: EngineCore.step schedules, executes and updates in turn (v1/engine/core.py 0.18.0 L378-407), then
# post_step fetches the drafts (L409-417); the runner copies the sampled ids to the host with a blocking .cpu()
# (_bookkeeping_sync, gpu_model_runner.py 0.18.0 L3156-3175; RejectionSampler.parse_output, rejection_sampler.py L236)
# and only then runs the numba scan (L4038-4041, L4239-4247), on one thread (ngram_proposer.py L48: min(1, ...)).  The
# 1 + k verify is a uniform decode batch (L740, L3290-3309) under a FULL CUDA graph on FlashAttention (flash_attn.py
# L269-272), as the plain step.  SPEC charges its fitted terms alone (0.09 ms a round at batch 1, k = 5): the base
# step's host work a serial round exposes is no term, as nothing outside the corpus sizes it (vllm-project/vllm#29184:
# sync "ngram" against async "ngram_gpu", +30.5% tok/s at 2 prompts on an H20, acceptance not given), and one charge
# per round splits the two serial n-gram sources: 1 ms takes h100-qwen2.5-7b-ngram's (a) from 85.8% to 65.6% and
# rtx3090-qwen3-4b-ngram's (vLLM 0.25.0) from 3.8% (+0.9%) to 5.3% (-5.1%).
#: Where a release's async scheduling hides a lookup drafter's round host work, which the preset (n-gram serial, as
#: the V1 runner's CPU proposer forces) does not: (first release, drafter kinds, why).  0.32.0 turns async scheduling
#: off for any method but EAGLE/MTP, "ngram_gpu", draft_model, DSpark and DFlash whatever the runner (config/vllm.py
#: 0.32.0 L1594-1610), so "ngram", which specsim writes, runs serial there though V2 drafts it on the GPU; from 0.33.0
#: that check is the V1 runner's only (v1_async_sched_incompat, 0.33.0 L1651-1666), and V2 keeps async scheduling on for
#: n-gram; 0.34.0 has no such check (L1610-1637) and runs suffix decoding on V2 too.
_ASYNC_LOOKUP = (
    (
        (0, 33, 0),
        frozenset({"ngram"}),
        "n-gram rounds overlapped from 0.33.0: its Model Runner V2 keeps async scheduling on for n-gram "
        "(config/vllm.py: 0.32.0 turned it off for method ngram, 0.33.0 only on the V1 runner)",
    ),
    (
        (0, 34, 0),
        frozenset({"suffix"}),
        "suffix decoding rounds overlapped from 0.34.0: it runs on Model Runner V2 with async scheduling on "
        "(config/vllm.py 0.34.0; V1 and its CPU suffix proposer, which forced them serial, are gone)",
    ),
)
#: On ROCm 0.31.0 keeps DeepSeek-V3.2/V4 and GLM-DSA targets on V1 (ROCM_DEFAULT_MRV1_ARCHITECTURES, 0.31.0 L75-77).
_ROCM_V1_0_31 = frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "GlmMoeDsaForCausalLM"})


def _eager_draft_model(release: tuple, drafter_kind, hardware=None, target=None) -> str:
    """Why vLLM ``release`` runs every pass of this drafter without a CUDA graph (:data:`_EAGER_DRAFT_MODEL`), "" where
    it does not (or, given the GPU and target, where that release keeps the target on the runner that graphs it)."""
    why = next(
        (w for first, last, kinds, w in _EAGER_DRAFT_MODEL if first <= release <= last and drafter_kind in kinds), ""
    )
    rocm = getattr(hardware, "platform", "cuda") == "rocm"
    if why and (0, 31, 0) <= release < (0, 32, 0) and rocm and getattr(target, "architecture", None) in _ROCM_V1_0_31:
        return ""  # V1 there, whose drafter is graphed from 0.26
    return why


def _release_said(preset, release: tuple) -> str:
    """The release a rule was read at, as the lines say it: a preset named without its release is read at its range's
    newest (0.34.0 for latest: :func:`~specsim.engines.base.preset_release`), said as the range."""
    if preset.asked:
        return _version_text(release)
    first = next((first for first, last, key in RANGES if key == preset.version), RANGES[-1][0])
    engine = given_as("engine")  # Deployment.build's engine, the command's --engine
    return f"{first[0]}.{first[1]}-{release[0]}.{release[1]} (read at its newest; {engine} vllm@X.Y.Z names yours)"


class _Vllm(Engine):
    def default_limits(self, preset, hardware, offline):
        return default_limits(hardware, offline, preset_release(NAME, preset, RANGES))

    def kv_policy(self, preset, drafter):
        support = None if drafter is None else self.methods.get(drafter.kind)
        return KvPolicy(0.0, KV_BLOCK_TOKENS, (0, 0) if support is None else support.lookahead, KV_POLICY_WHERE)

    def limits_refused(self, max_num_seqs, max_batched_tokens):
        # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len (read at commit 01230b40, the 0.11 line):
        # "max_num_batched_tokens (...) must be greater than or equal to max_num_seqs (...)", raised at start-up
        if max_batched_tokens >= max_num_seqs:
            return None
        return (
            f"vLLM refuses to start with max_num_batched_tokens {max_batched_tokens:,} below max_num_seqs "
            f"{max_num_seqs:,} (vllm/config/scheduler.py, SchedulerConfig)"
        )

    def memory_share(self, preset, hardware, model, draft, method, max_batched_tokens, given, max_num_seqs=None):
        return memory_share(preset, hardware, model, max_batched_tokens, given, max_num_seqs)

    def fp8_cache_backend(self, hardware):
        # vLLM 0.24.0: v1/attention/backends/flash_attn.py supports_kv_cache_dtype (fp8 needs FA3 on sm90), so
        # cuda.py's backend priorities fall to FLASHINFER; its get_cudagraph_support is UNIFORM_SINGLE_TOKEN_DECODE
        # without TRT-LLM attention (sm100), and config/compilation.py sets cudagraph_mode=PIECEWISE for spec decode
        # (uniform_decode_query_len > 1) below UNIFORM_BATCH.  FlashInfer is the FP8-cache default on Ampere, Ada and
        # RTX Blackwell (vllm-project/vllm#57352).
        if _flashinfer_serves_fp8_cache(hardware) is None:
            return ""
        return (
            "; vLLM (0.12 to 0.34 read) runs it on FlashInfer, not FlashAttention, and with speculation drops to "
            "piecewise CUDA graphs (attention outside the graph in every pass) where FlashInfer graphs single-token "
            "decodes only (sm 8.x before 0.33, sm 12.x before 0.28), and from 0.24 its Model Runner V2 "
            "runs an EAGLE or MTP round's draft steps after the first with no CUDA graph at all there"
        )

    def serial_rounds(self, preset, hardware, kv_dtype):
        # FlashInfer's metadata builder (v1/attention/backends/flashinfer.py, read at 0.24.0) copies seq_lens from the
        # GPU, a copy that waits for every queued kernel, so the CPU cannot prepare the next pass while one runs
        # (vllm-project/vllm#29134): on every build on Ampere and Ada, on Hopper and RTX Blackwell only on builds with
        # prefill rows (#57352, open at 2026-09-17, which would plan without it).
        served = _flashinfer_serves_fp8_cache(hardware)
        if kv_dtype != "fp8" or not preset.overlap_kinds or served is None or not served[1]:
            return ""
        return (
            f"FlashInfer, which serves an FP8 KV cache on {served[0]}, waits for the GPU in every pass's metadata build "
            "(vllm-project/vllm#29134, #57352)"
        )

    def graphless_draft_steps(self, preset, hardware, target, drafter_kind):
        # vLLM 0.24.0: with an FP8 cache on sm 8.x / 12.x, FlashInfer's UNIFORM_SINGLE_TOKEN_DECODE makes
        # config/compilation.py (L1387-1401) set cudagraph_mode=PIECEWISE when speculating (fp8_cache_backend), and
        # Model Runner V2's speculator captures draft decodes (positions > 0) only in FULL mode, NONE otherwise
        # (v1/worker/gpu/spec_decode/autoregressive/speculator.py L82-95, "PIECEWISE cudagraphs are not supported for
        # draft decodes", vllm-project/vllm#39773; the same in 0.25.0-0.29.0 and 0.34.0).  The first draft step (the
        # prefill at position 0) keeps its piecewise graph.
        release = preset_release(NAME, preset, RANGES)
        eager = _eager_draft_model(release, drafter_kind, hardware, target)
        if eager:
            return GRAPHLESS_LAYER_S, (
                f"vLLM {_version_text(release)} {eager}; each costs {GRAPHLESS_LAYER_S * 1e3:.3f} ms a draft layer "
                f"more: {GRAPHLESS_SAID}"
            )
        served = _flashinfer_serves_fp8_cache(hardware)
        if target.kv_dtype != "fp8" or served is None or drafter_kind not in _V2_STEP_KINDS:
            return 0.0, ""
        # served is sm 8.x or 12.x (a profile without its capability and without FP8 tensor cores counts as 8.x)
        twelve = hardware.sm is not None and hardware.sm[0] == 12
        graphed = release >= (_SM12_FULL_GRAPHS_SINCE if twelve else _SM8_FULL_GRAPHS_SINCE)
        if release < _V2_DEFAULT_SINCE or graphed:
            return 0.0, ""
        dense = not target.is_moe and not target.is_hybrid
        on_v2 = release >= _V2_ALL_SINCE or (release >= _V2_ALL_DENSE_SINCE and dense)
        if target.architecture not in _V2_ARCHITECTURES_0_24 and not on_v2:
            return 0.0, ""
        said = _release_said(preset, release)
        return GRAPHLESS_LAYER_S, (
            f"vLLM {said}: its Model Runner V2 (the default for {target.architecture or 'this model'}) "
            f"runs every draft step after a round's first without a CUDA graph, as FlashInfer's FP8 cache on {served[0]} "
            "leaves piecewise graphs and its speculator graphs draft decodes only in FULL mode "
            "(v1/worker/gpu/spec_decode/autoregressive/speculator.py, vllm-project/vllm#39773); each costs "
            f"{GRAPHLESS_LAYER_S * 1e3:.3f} ms a draft layer more: {GRAPHLESS_SAID}"
        )

    def release_overlaps(self, preset, drafter_kind):
        release = preset_release(NAME, preset, RANGES)
        if not preset.overlap_kinds:  # a build whose rounds wait for their host work (ROCm's)
            return ""
        return "; ".join(w for first, kinds, w in _ASYNC_LOOKUP if release >= first and drafter_kind in kinds)

    def gpu_lookup(self, preset, drafter_kind):
        release = preset_release(NAME, preset, RANGES)
        why = next((w for first, kinds, w in _GPU_LOOKUP if release >= first and drafter_kind in kinds), "")
        return f"vLLM {_release_said(preset, release)} {why}" if why else ""

    def graphed_draft_steps(self, preset, drafter_kind):
        # a draft model's prefill pass too runs without a graph where _EAGER_DRAFT_MODEL says; platform and target do
        # not matter here: graphless_draft_steps says whether any step is charged
        return 0 if _eager_draft_model(preset_release(NAME, preset, RANGES), drafter_kind) else 1

    def draft_tp(self, preset, separate_model, target_tp, requested):
        return draft_tp(preset, separate_model, target_tp, requested)

    def on_platform(self, preset, hardware, model=None):
        return on_platform(preset, hardware)  # vLLM ROCm's terms apply whatever the target

    def check_pair(self, dep):
        check_vllm_pair(dep)

    def settings(self, dep):
        return engine_settings(dep, NAME)

    def serve_line(self, dep, flags):
        return (
            f"serve the target with: vllm serve {dep.target.source or dep.target.name} {' '.join(flags)} "
            "--speculative-config '<the JSON above>'"
            if flags
            else None
        )

    def render_schedule(self, ranges, dep, checkpoint, version, min_gain, max_batch):
        return render_schedule(ranges, dep, checkpoint, version, min_gain, max_batch)

    def per_batch_missing(self, dep, ranges, version):
        return _per_batch_missing(dep, ranges, version)

    def static_gamma(self, dep, ranges, version):
        return ranges[0].gamma if len(ranges) > 1 and version < PER_BATCH_SINCE else None  # to_vllm's batch-1 length

    def rising_schedule(self, version):
        return RISING_WHERE if as_release(version) >= PER_BATCH_SINCE else ""


ENGINE = _Vllm(
    name=NAME,
    title="vLLM",
    platforms=PLATFORMS,
    presets=tuple(PRESETS),
    ranges=tuple(RANGES),
    aliases=ALIASES,
    newest=NEWEST,
    metric_names=tuple(METRIC_NAMES),
    methods=METHODS,
    method_key="method",
    serial_preset="vllm@0.10",
    own_draft_tp=True,
    takes_trees=False,
    # measured 2026-12-05 with the start-up counted (start_up), on the starts its figures do not come from
    kv_error=(0.012, 0.007, 0.516, 12),
    cache_said=(
        "what the weights and its start-up (the profiling pass's peak, the buffers outside torch) leave in vLLM's "
        "share; its CUDA graphs, which it also subtracts from 0.20.0, not counted; judged on vLLM 0.10-0.19 starts, "
        "not the three its start-up figures come from"
    ),
    draft_cache_rule=(
        "vLLM 0.24.0 builds a draft model from the target's VllmConfig with only its model, parallel and quantization "
        "configs replaced, so its layers take the target's cache_config and its --kv-cache-dtype "
        "(vllm/v1/spec_decode/draft_model.py _create_draft_vllm_config)"
    ),
    bench=VllmBench(),
    bench_files=BenchFiles(
        describes="vllm bench serve --save-result JSON (vLLM 0.10 and later; benchmark_serving.py before it)",
        # --backend of vllm/benchmarks/serve.py (0.10-0.33) that names a vLLM server
        backends=("vllm",),
        # "vllm" is vllm bench serve's OpenAI Completions client (vllm/benchmarks/lib/endpoint_request_func.py,
        # 0.34.0 L1181: "vllm": async_request_openai_completions, as "openai"; sglang.bench_serving's "vllm" likewise,
        # python/sglang/bench_serving.py at sgl-project/sglang@0033168f ASYNC_REQUEST_FUNCS): an SGLang server answers it
        api_backends=("vllm",),
        acceptance_key="spec_decode_acceptance_length",
        recognises=_is_bench_file,
        precedence=2,
        # written beside the acceptance length from 0.14.0 (vllm/benchmarks/serve.py L988-989; 0.34.0 L1384-1385): the
        # accepted tokens counted at each draft position over the run, each over the run's drafts (0.34.0 L1145-1157),
        # one per position of the server's num_speculative_tokens (vllm/v1/spec_decode/metrics.py 0.34.0 L252-262)
        per_position_key="spec_decode_per_position_acceptance_rates",
        # each --metadata KEY=VALUE is written at the top level (serve.py 0.14.0 L1688-1698, 0.34.0 L2309-2319); the
        # result names no dataset itself: a --metadata dataset=NAME names it.  --label is not read: it names the run's
        # file (serve.py 0.34.0 L1621-1626), often per configuration or load, and would split one sweep
        dataset_keys=("dataset", "dataset_name", "dataset_path"),
    ),
)
