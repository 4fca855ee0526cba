"""SGLang: its presets per version, its launch-flag writers and its benchmark plan.

Presets: spec v1 (0.4-0.5.10: the overlap scheduler off for speculative decoding, sgl-project/sglang#9961;
SGLANG_ENABLE_SPEC_V2 off by default up to 0.5.10, python/sglang/srt/environ.py) and spec v2 (0.5.11-0.5.23: rounds
overlapped for top-k 1 chains, sgl-project/sglang#11398), with the terms fitted to public rows.

Writers: the static ``--speculative-*`` launch flags (python/sglang/srt/server_args.py; arg_groups/fields/spec.py from
0.5.14) for the best configuration at one batch size, and the benchmark plan's server and client commands.
"""

from __future__ import annotations

from specsim.core.names import draft_option, given_as
from specsim.engines.base import (
    _BASIS,
    _SPEC_BASIS,
    HEADS,
    MetricNames,
    RecurrentVerify,
    SpecHost,
    make_preset,
    parse_version,
    preset_release,
)
from specsim.engines.engine import BenchFiles, DefaultLimits, Engine, EngineSupport, KvPolicy, MemoryShare
from specsim.engines.writers import SHAREGPT_PREP as _SHAREGPT_PREP
from specsim.engines.writers import BenchWriter
from specsim.engines.writers import version_text as _version_text

__all__ = [
    "ENGINE",
    "METHODS",
    "UNSUPPORTED",
    "PLATFORMS",
    "ADAPTIVE_OFF_SINCE",
    "ADAPTIVE_SINCE",
    "ALIASES",
    "METRIC_NAMES",
    "NAME",
    "ROCM_COLLECTIVE_S",
    "ROCM_SIZED_ON",
    "on_platform",
    "NEWEST",
    "PRESETS",
    "RANGES",
    "SglangBench",
    "adaptive_config",
    "draft_tp",
    "render_schedule",
    "to_sglang",
]

NAME = "sglang"
#: The hardware platforms (a profile's ``platform``) this engine runs on: SGLang runs on NVIDIA and AMD GPUs and Intel Xeon CPUs (docs/platforms).
PLATFORMS = ("cuda", "rocm", "cpu")
PLAIN = dict(
    kernel_engine="sglang",
    iteration_s=0.0,
    kernel_iteration_s=0.055e-3,
    basis=_BASIS + ", SGLang rows; the roofline-step term ends at its bound 0: not identified, held at 0",
    collective_s=12.5e-6,
    kernel_collective_s=13.8e-6,
)
SPEC = SpecHost(round_s=3.01e-3, step_s=0.0, seq_s=14.8e-6, seq_step_s=49.7e-6)
KERNEL_SPEC = SpecHost(round_s=3.66e-3, step_s=0.0, seq_s=25.1e-6, seq_step_s=64.7e-6)
# The share of H that spec v2 hides (roofline step, GPU time), fitted to its measured gains over spec v1 (the
# overlap_gain rows; each row's share fitted on the other alone gives it within 2.0%): validate_speculation.py prints it.
V2_SHARE = (0.33, 0.38)
V2_SHARE_BASIS = "fitted to spec v2's measured gains, sgl-project/sglang#11398 and #12128"
_RANGE = " at batch 1-64 (beyond: extrapolated)"
#: Recurrent layers: MambaPool keeps an intermediate_ssm_state_cache of one state per draft token "during target
#: verify" for each running request, speculative_num_draft_tokens = steps + 1 of them (python/sglang/srt/mem_cache/
#: memory_pool.py, 0.5.14 and 0.5.23); the linear ReplaySSM path (enable_linear_replayssm_spec) is off by default.
RECURRENT = RecurrentVerify(
    "checkpoint",
    1,
    "SGLang 0.5.14 and 0.5.23: srt/mem_cache/memory_pool.py intermediate_ssm_state_cache "
    "of speculative_num_draft_tokens states",
)
PRESETS = [
    make_preset(
        "sglang",
        "0.5",
        "SGLang 0.4-0.5.10, spec v1: the overlap scheduler is off for speculative decoding "
        "(sgl-project/sglang#9961; SGLANG_ENABLE_SPEC_V2 defaults to off up to 0.5.10, python/sglang/srt/environ.py)",
        PLAIN,
        SPEC,
        KERNEL_SPEC,
        _SPEC_BASIS + ", SGLang rows" + _RANGE,
        draft_shares_tp=True,
        recurrent=RECURRENT,
    ),
    make_preset(
        "sglang",
        "latest",
        "SGLang 0.5.11 and later, spec v2 (sgl-project/sglang#11398; SGLANG_ENABLE_SPEC_V2 on by "
        "default from 0.5.11, the only worker from 0.5.14): rounds overlapped for top-k 1 chains, trees and n-gram serial",
        PLAIN,
        SPEC,
        KERNEL_SPEC,
        _SPEC_BASIS + ", SGLang rows (spec v1; the same host work, overlapped)" + _RANGE,
        HEADS | {"draft_model"},
        chains_only=True,
        share=V2_SHARE,
        share_basis=V2_SHARE_BASIS,
        draft_shares_tp=True,
        recurrent=RECURRENT,
    ),
]
RANGES = [((0, 4, 0), (0, 5, 10), "0.5"), ((0, 5, 11), (0, 5, 23), "latest")]
ALIASES = {"spec-v2": "latest", "spec-v1": "0.5", "0.4": "0.5"}
NEWEST = "0.5.23"

#: What SGLang exports on /metrics with --enable-metrics (off by default; arg_groups/fields/observability.py L70 of
#: 0.5.23), in prometheus_client's multiprocess mode (no _created samples).  Scheduler gauges (running, queued, the
#: acceptance length) carry model_name, engine_type, tp_rank, pp_rank (and dp_rank under data parallelism, from 0.4.10);
#: the tokenizer's counters carry model_name (and engine_type from 0.5.12) and count a request when it finishes.
#: Files: python/sglang/srt/metrics/collector.py up to 0.5.9, srt/observability/metrics_collector.py from 0.5.10.
#: Metrics that tell releases apart, the first release that exports each (read in the 0.4.10 and every 0.5.x wheel to
#: 0.5.23).  SGLang creates a metric when it is first set, so only a metric on the page says something: its absence
#: on a cold server does not.
_SGLANG_LATER = (
    ("sglang:spec_accept_rate", (0, 5, 4)),
    ("sglang:new_token_ratio", (0, 5, 6)),
    ("sglang:decode_sum_seq_lens", (0, 5, 7)),
    ("sglang:num_unique_running_routing_keys", (0, 5, 8)),
    ("sglang:full_token_usage", (0, 5, 10)),
    ("sglang:kv_available_tokens", (0, 5, 11)),
    ("sglang:fwd_occupancy", (0, 5, 12)),
    ("sglang:spec_num_steps", (0, 5, 13)),
    ("sglang:spec_verify_calls", (0, 5, 13)),
    ("sglang:spec_cap_length", (0, 5, 16)),
    ("sglang:startup_time_seconds", (0, 5, 17)),
)
#: The last release that exports each.
_SGLANG_EARLIER = (
    ("sglang:num_prefill_infight_queue_reqs", (0, 5, 1)),
    ("sglang:total_retracted_reqs", (0, 5, 2)),
    ("sglang:cache_config_info", (0, 5, 10)),
)
_SGLANG_NAMES = dict(
    engine="sglang",
    path="/metrics",
    prefix="sglang:",
    model_label="model_name",
    replica_label="dp_rank",
    running="sglang:num_running_reqs",
    waiting="sglang:num_queue_reqs",
    requests="sglang:num_requests_total",
    prompt_tokens="sglang:prompt_tokens_total",
    generation_tokens="sglang:generation_tokens_total",
    accept_length_gauge="sglang:spec_accept_length",
    counted_at_finish=True,
    gauge_window=40,
    later=_SGLANG_LATER,
    earlier=_SGLANG_EARLIER,
    counter_labels=(("engine_type", "unified"),),
    gauge_labels=(("engine_type", "unified"), ("tp_rank", "0"), ("pp_rank", "0")),
)
#: generation_tokens_histogram's edges unless --generation-tokens-buckets sets others: default_bucket_prompt_tokens, the
#: prompt histogram's, through generate_buckets' "default" rule (observability/metrics_collector.py 0.5.13 L1444-1480
#: and L1497-1505, 0.5.23 L1871-1907 and L1924-1932; observability/utils.py L34-49 of both), whatever the model.
_GENERATION_EDGES = (
    *(100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12500, 15000, 17500),
    *(20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000, 100000, 200000, 300000, 400000, 600000, 800000),
    *(1000000, 1100000),
)
_SGLANG_SOURCE = (
    "sglang/srt/metrics/collector.py (0.4.2-0.5.9) and sglang/srt/observability/metrics_collector.py "
    "(0.5.10-0.5.23), read in their wheels"
)
#: 0.5.13 and later: verification calls counted as requests finish, the steps in use as a gauge.
_COUNTED = dict(
    source=_SGLANG_SOURCE + " (spec_verify_calls_total: sgl-project/sglang#25689)",
    verify_calls="sglang:spec_verify_calls_total",
    gamma_gauge="sglang:spec_num_steps",
    # TokenizerMetricsCollector observes it per finished request beside num_requests_total (observability/
    # metrics_collector.py: 0.5.13 L1497 and L1683, 0.5.23 L1924 and L2150), whenever --enable-metrics is set
    # (0.5.13 server_args.py L5293-5295: --collect-tokens-histogram deprecated, "now automatically collected");
    # 0.5.9 created it only with that flag (metrics/collector.py L1116).
    generation_histogram="sglang:generation_tokens_histogram",
    generation_edges=_GENERATION_EDGES,
    note=(
        "SGLang counts no drafted or accepted tokens: the acceptance length is (generated tokens - finished "
        "requests) / verification calls, counted as requests finish (one token from the prompt, then one "
        "per verification plus those accepted)"
    ),
    **_SGLANG_NAMES,
)
METRIC_NAMES = [
    MetricNames(
        first=(0, 4, 2),
        last=(0, 5, 12),
        source=_SGLANG_SOURCE,
        note=(
            "SGLang before 0.5.13 exports no speculative counter: its acceptance length is a gauge of the "
            "engine's last 40 decode iterations (decode_log_interval), sampled at each read"
        ),
        **_SGLANG_NAMES,
    ),
    MetricNames(first=(0, 5, 13), last=(0, 5, 16), **_COUNTED),
    # From 0.5.17 the prompt, generated-token and finished-request counters carry is_streaming, the request's own
    # ("true" or "false"; a replay writes "false"): observability/metrics_collector.py 0.5.17 L1482-1489 and
    # L1567-1569, 0.5.23 L1855-1864 and L1940; absent in 0.5.13-0.5.16 (every wheel read).  spec_verify_calls_total
    # and the generation histogram do not carry it.
    MetricNames(
        first=(0, 5, 17),
        last=(0, 5, 23),
        request_labels=(("is_streaming", "false"),),
        token_labels=(("is_streaming", "false"),),
        **_COUNTED,
    ),
]


def draft_tp(preset, separate_model: bool, target_tp: int, requested: int | None) -> tuple[int, str]:
    """SGLang has no draft TP flag: its draft worker runs in the target's TP group (0.5.23:
    python/sglang/srt/speculative/draft_parallel.py; no such field in arg_groups/fields/*.py)."""
    line = (
        f"draft at TP {target_tp}: SGLang's draft worker shares the target's tensor-parallel group (no draft TP flag)"
    )
    unused = f"; {draft_option('tp')} {requested} does not apply" if requested not in (None, target_tp) else ""
    return target_tp, line + unused


def _sglang_flags(dep, checkpoint: str | None, depth: int, topk: int, tokens: int) -> list[str]:
    """``--speculative-algorithm`` and its draft flags (the algorithm first, the draft path next if given)."""
    flags = ["--speculative-algorithm", dep.drafter.support(NAME).name]
    if checkpoint is not None:
        flags += ["--speculative-draft-model-path", checkpoint]
    if dep.drafter.launches_steps and dep.drafter.sglang_steps:
        flags += ["--speculative-num-steps", str(depth), "--speculative-eagle-topk", str(topk)]
    return flags + dep.drafter.sglang_flags(depth) + ["--speculative-num-draft-tokens", str(tokens)]


def to_sglang(ranges: list, dep, checkpoint: str | None, at_batch: int = 1) -> list[str]:
    """SGLang launch flags for the configuration the schedule chooses at ``at_batch`` (within its tolerance of the best,
    :data:`specsim.speculation.schedule.DEFAULT_SCHEDULE_RTOL`), then one comment line per power of two.

    ``ranges`` are :class:`ScheduleRange` (chains: depth gamma, top-k 1, gamma + 1 tokens) or :class:`TreeRange`.
    The first line is empty of flags (a comment) where speculation does not pay at ``at_batch``.
    """

    def spec(r):
        if hasattr(r, "tree"):
            return None if r.tree is None else (r.tree.depth, r.tree.topk, r.tree.tokens)
        return None if r.gamma == 0 else (r.gamma, 1, r.gamma + 1)

    def at(batch):
        return next(r for r in ranges if r.start_batch <= batch <= r.end_batch)

    chosen = at(at_batch)
    lines = []
    tp = ["--tp", str(dep.target.tp)] if dep.target.tp > 1 else []
    if spec(chosen) is None:
        lines.append(f"# speculation does not pay at batch {at_batch}: launch without --speculative-algorithm")
    else:
        lines.append(" ".join(tp + _sglang_flags(dep, checkpoint, *spec(chosen))))
    top, b = ranges[-1].end_batch, 1
    while True:  # the best configuration at powers of two: where to change it if the load moves
        r = at(b)
        what = "off" if spec(r) is None else " ".join(_sglang_flags(dep, None, *spec(r))[2:])
        lines.append(f"# schedule at batch {b}: {what}" + ("" if spec(r) is None else f" (predicted {_span(r)})"))
        if b == top:
            break
        b = min(2 * b, top)
    return lines


def _span(r) -> str:
    """A range's predicted speedup: one figure for one batch size, else its spread."""
    said = "no speedup: an arm is past capacity" if r.speedups == "n/a" else f"{r.speedups}x"
    if r.start_batch == r.end_batch:
        return f"{said} at batch {r.start_batch}"
    return f"{said} in batch {r.batches}"


#: Adaptive steps per batch size: first in 0.5.13 (sgl-project/sglang#24055), step 0 (no speculation) from 0.5.14
#: ("candidate_steps must be a list of non-negative ints", python/sglang/srt/speculative/adaptive_spec_params.py).
ADAPTIVE_SINCE, ADAPTIVE_OFF_SINCE = (0, 5, 13), (0, 5, 14)
#: The algorithms the adaptive path takes (adaptive_unsupported_reason, 0.5.23: EAGLE/EAGLE3; NEXTN is EAGLE).
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")


def adaptive_config(ranges: list, dep, version: tuple) -> tuple[dict | None, list[str]]:
    """(``--speculative-adaptive-config`` JSON, notes) pinning each batch-size slot to its best steps, or (None, why
    not) where this version or drafter cannot.  A slot's key is the smallest batch of its range: SGLang routes a
    batch to the slot with the largest key at or below it (after padding the batch up to a CUDA-graph size), and a
    one-element ``candidate_steps`` pins the slot (adaptive_spec_params.py, 0.5.13-0.5.23)."""
    v = _version_text(version)
    if any(hasattr(r, "tree") for r in ranges):
        return None, [
            "SGLang's adaptive steps take top-k 1 only (adaptive_unsupported_reason; trees: sgl-project/sglang#24054 "
            "open): one static tree is written"
        ]
    if len(ranges) == 1:
        return None, []  # one length for every batch: the static flags are the whole schedule
    if version < ADAPTIVE_SINCE:
        return None, [
            f"SGLang {v} takes one static configuration (per-batch adaptive steps arrived in 0.5.13, "
            "sgl-project/sglang#24055): the first line is the schedule's choice at batch 1; the comments say where it changes"
        ]
    if dep.drafter.support(NAME).name not in ADAPTIVE_ALGORITHMS:
        return None, [
            f"SGLang's adaptive steps take EAGLE and EAGLE-3 only, not {dep.drafter.support(NAME).name} "
            "(adaptive_unsupported_reason): one static configuration is written"
        ]
    floor = 0 if version >= ADAPTIVE_OFF_SINCE else 1
    config = {str(r.start_batch): {"candidate_steps": [max(r.gamma, floor)]} for r in ranges}
    notes = []
    raised = [r for r in ranges if r.gamma < floor]
    if raised:
        notes.append(
            f"SGLang {v} takes no step 0 (from 0.5.14): batch {raised[0].start_batch} on drafts 1 step where specsim "
            "has speculation off"
        )
    notes += [
        "SGLang pads the running batch up to its CUDA-graph batch size before it picks a slot, so a batch just below a "
        "slot's key can take that slot (adaptive_spec_params.py, _route)",
        # adaptive_unsupported_reason: attention DP, multi-layer EAGLE, two-batch overlap and enable_pdmux in every
        # release read (speculative/adaptive_spec_params.py 0.5.13 L57-76, 0.5.17 L82, 0.5.23 L80-99; 0.5.13-0.5.18,
        # 0.5.21 and 0.5.23 read); 0.5.23 also when a platform serves the algorithm with its own worker (L66-73).
        "SGLang turns adaptive steps off, back to the static flags, under attention data parallelism, two-batch overlap, "
        "multi-layer EAGLE or prefill-decode multiplexing (--enable-pdmux) (adaptive_unsupported_reason)",
    ]
    return config, notes


class SglangBench(BenchWriter):
    """SGLang: ``python -m sglang.launch_server`` and ``python -m sglang.bench_serving``.

    Read from the released wheels: ``python/sglang/srt/server_args.py`` up to 0.5.13 and
    ``python/sglang/srt/arg_groups/fields/`` from 0.5.14 (``--model-path``, ``--tp-size``, ``--port``,
    ``--max-running-requests`` (forced to 48 with speculation unless given), ``--enable-metrics``,
    ``--disable-radix-cache``, ``--speculative-algorithm`` EAGLE / EAGLE3 (0.4.5) / NEXTN / STANDALONE (0.5.2) /
    NGRAM (0.5.3), ``--speculative-draft-model-path``, ``--speculative-num-steps``, ``--speculative-eagle-topk``,
    ``--speculative-num-draft-tokens``; DFLASH from 0.5.11 and DSPARK from 0.5.16 take the verify window alone, their
    steps and top-k forced to 1, DSPARK its block as ``--speculative-dspark-block-size``; NGRAM
    ``--speculative-ngram-max-bfs-breadth 1``, a chain, its default 10 a tree, 0.5.3-0.5.23),
    ``python/sglang/srt/speculative/eagle_utils.py`` and ``srt/environ.py``
    (simulated acceptance: ``SIMULATE_ACC_LEN`` from 0.4.5, ``SGLANG_SIMULATE_ACC_LEN`` from 0.5.3, the length with
    the bonus token, drawn once per verification for the whole batch; ``SGLANG_SIMULATE_ACC_METHOD`` /
    ``SIMULATE_ACC_METHOD`` ``match-expected`` from 0.4.8, the default only from 0.5.11), and
    ``python/sglang/bench_serving.py`` (``--backend sglang``, ``--base-url``, ``--dataset-name random-ids|sharegpt``,
    ``--dataset-path``, ``--sharegpt-output-len``, ``--random-input-len``, ``--random-output-len``,
    ``--random-range-ratio 1.0`` (fixed lengths), ``--num-prompts``, ``--max-concurrency``, ``--request-rate``,
    ``--flush-cache`` (so that ``accept_length``, a running total since the last flush, is the run's),
    ``--output-file``; EOS is ignored by default).
    """

    name, newest = "sglang", "0.5.23"
    real_acceptance = (
        "the mean acceptance length (the spec_accept_length gauge, all specsim reads of SGLang's metrics pages)"
    )

    def check(self, version, drafter, pins, topk):
        if version < (0, 4, 8):
            raise ValueError(
                f"sglang {_version_text(version)}: specsim writes plans for SGLang 0.4.8 and later, where the "
                "simulated acceptance can match its mean (SIMULATE_ACC_METHOD=match-expected, "
                "python/sglang/srt/speculative/eagle_utils.py)"
            )
        support = drafter.support("sglang", version)
        if support.pin_since and any(p is not None for p in pins) and version < support.pin_since:
            raise ValueError(
                f"sglang {_version_text(version)} simulates acceptance for EAGLE-family workers only; "
                f"{support.name} takes it from {_version_text(support.pin_since)} "
                f"({support.pin_where}): use {_version_text(support.pin_since)} or "
                f"{given_as('pin=False', '--no-pin')}"  # design_plan's pin, bench-plan's --no-pin
            )
        notes = []
        if (0, 5, 5) <= version <= (0, 5, 10):
            notes.append(
                f"sglang {_version_text(version)} runs spec v1 (SGLANG_ENABLE_SPEC_V2 defaults to off up to 0.5.10): "
                "rounds are serial, as specsim's sglang@0.5 preset models them"
            )
        return notes

    def _acc_env(self, version):
        return (
            ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD")
            if version >= (0, 5, 3)
            else ("SIMULATE_ACC_LEN", "SIMULATE_ACC_METHOD")
        )

    def server(self, plan, server):
        version = parse_version("sglang", plan.version)
        cmd = [
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            plan.served_model,
            "--port",
            str(plan.port),
            "--tp-size",
            str(plan.tp),
            "--max-running-requests",
            str(plan.max_concurrency),
            "--enable-metrics",
            "--disable-radix-cache",
        ]
        env = {}
        if server.steps is not None:
            drafter = plan.drafter_type
            cmd += ["--speculative-algorithm", drafter.support("sglang").name]
            if drafter.sglang_steps:
                cmd += ["--speculative-num-steps", str(server.steps), "--speculative-eagle-topk", "1"]
            cmd += drafter.sglang_flags(server.steps) + ["--speculative-num-draft-tokens", str(server.steps + 1)]
            if plan.draft_checkpoint:
                cmd += ["--speculative-draft-model-path", plan.draft_checkpoint]
            if server.pinned_accept_length is not None:
                length, method = self._acc_env(version)
                env = {length: f"{server.pinned_accept_length:g}", method: "match-expected"}
        return env, cmd, None

    def client(self, plan, run, url):
        cmd = [
            "python",
            "-m",
            "sglang.bench_serving",
            "--backend",
            "sglang",
            "--base-url",
            url,
            "--num-prompts",
            str(run.num_prompts),
            "--max-concurrency",
            str(run.concurrency),
            "--request-rate",
            "inf",
            "--flush-cache",
            "--output-file",
            run.file,
        ]
        if run.input_tokens is None:
            cmd += [
                "--dataset-name",
                "sharegpt",
                "--dataset-path",
                "prompts.sharegpt.json",
                "--sharegpt-output-len",
                str(run.output_tokens),
            ]
        else:
            cmd += [
                "--dataset-name",
                "random-ids",
                "--random-input-len",
                str(run.input_tokens),
                "--random-output-len",
                str(run.output_tokens),
                "--random-range-ratio",
                "1.0",
            ]
        return cmd

    def prompts_prep(self, plan):
        return [_SHAREGPT_PREP]


def render_schedule(
    ranges: list, dep, checkpoint: str | None, version: tuple, min_gain: float, max_batch: int
) -> tuple[str, list]:
    """(the launch command of ``ranges`` for SGLang ``version``: static flags, or the adaptive-speculation config file and
    the flags that read it where the version takes one, and the notes that go with it)."""
    import json

    lines = to_sglang(ranges, dep, checkpoint)
    adaptive, notes = adaptive_config(ranges, dep, version)
    served = dep.target.source or dep.target.name
    # A speculating server runs SPEC_MAX_RUNNING requests unless told: a schedule to another batch says so.
    running = [] if max_batch == SPEC_MAX_RUNNING else ["--max-running-requests", str(max_batch)]
    if running:
        notes = notes + [
            f"--max-running-requests {max_batch}: SGLang runs {SPEC_MAX_RUNNING} requests at once when speculating "
            "unless told (server_args.py, 0.4.10-0.5.23)"
        ]
    if adaptive is None:
        lines = [" ".join([lines[0], *running])] + lines[1:] if lines else lines
        return f"python -m sglang.launch_server --model-path {served} " + "\n".join(lines), [
            f"written for SGLang {_version_text(version)}"
        ] + notes
    steps = max(v["candidate_steps"][0] for v in adaptive.values())
    tp = ["--tp", str(dep.target.tp)] if dep.target.tp > 1 else []
    flags = ["--speculative-algorithm", dep.drafter.support(NAME).name]
    if checkpoint is not None:
        flags += ["--speculative-draft-model-path", checkpoint]
    flags += [
        "--speculative-num-steps",
        str(steps),
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        str(steps + 1),
        "--speculative-adaptive",
        "--speculative-adaptive-config",
        "sglang-adaptive.json",
    ]
    slots = ",\n  ".join(f"{json.dumps(key)}: {json.dumps(slot)}" for key, slot in adaptive.items())  # a slot a line
    text = "\n".join(
        [
            "cat > sglang-adaptive.json <<'EOF'\n{\n  " + slots + "\n}\nEOF",
            f"python -m sglang.launch_server --model-path {served} " + " ".join(tp + flags + running),
        ]
        + lines[1:]
    )
    return text, [f"written for SGLang {_version_text(version)}"] + notes


# -- the engine as one object -------------------------------------------------------------------------------------
#: Where SGLang names its speculative algorithms (--speculative-algorithm; from 0.5.14 arg_groups/fields/).
_SGLANG_ARGS = "python/sglang/srt/server_args.py"
#: SGLang's ``--speculative-algorithm`` for each drafter kind and the first release that takes it (releases before 0.4.3
#: are below what specsim writes for).  It runs MTP checkpoints such as DeepSeek-V3 as EAGLE over their NextN layers
#: (NEXTN is its alias of EAGLE: 0.5.23 python/sglang/srt/arg_groups/speculative_hook.py).
METHODS = {
    "draft_model": EngineSupport("STANDALONE", (0, 5, 2), _SGLANG_ARGS),
    "eagle": EngineSupport("EAGLE", (0, 4, 3), _SGLANG_ARGS),
    "eagle3": EngineSupport("EAGLE3", (0, 4, 5), _SGLANG_ARGS),
    "mtp": EngineSupport("EAGLE", (0, 4, 3), _SGLANG_ARGS),
    "ngram": EngineSupport(
        "NGRAM",
        (0, 5, 3),
        _SGLANG_ARGS,
        pin_since=(0, 5, 14),
        pin_where="python/sglang/srt/speculative/ngram_worker.py",
    ),
    "dflash": EngineSupport(
        "DFLASH",
        (0, 5, 11),
        "srt/speculative/spec_info.py SpeculativeAlgorithm: in 0.5.11, not 0.5.10",
        pin_since=(0, 5, 17),
        pin_where="SGLANG_SIMULATE_ACC_LEN read in srt/speculative/dflash_worker_v2.py from 0.5.17",
    ),
    "dspark": EngineSupport(
        "DSPARK", (0, 5, 16), "srt/speculative/spec_info.py SpeculativeAlgorithm: in 0.5.16, not 0.5.15"
    ),
}
#: Drafter kinds SGLang does not take, and what was looked for.
UNSUPPORTED = {
    "peagle": "no serving support found (feature request sgl-project/sglang#23171 open; SpecForge PR #575 trains "
    "P-EAGLE heads)",
    "pard": "no PARD algorithm found",
    "suffix": "SUFFIX PRs #13553, #27582, #27585 closed unmerged",
}


def _is_bench_file(record: dict) -> bool:
    """A line of ``sglang.bench_serving --output-file`` (python/sglang/bench_serving.py, 0.4-0.5.23):
    ``total_output_tokens_retokenized``, or its ``accept_length`` without vLLM's key."""
    return "total_output_tokens_retokenized" in record or (
        "accept_length" in record and "spec_decode_acceptance_length" not in record
    )


#: SGLang's chunked_prefill_size when --chunked-prefill-size is not given, by the GPU's memory (nvidia-smi's or
#: rocminfo's, per GPU, in MiB: read here in GiB): (first release of the rule, [(below GiB, tokens), ...], beyond, where).
#: Read in the wheels: 0.4.10.post1 server_args.py ServerArgs.__post_init__; 0.5.5, 0.5.8, 0.5.10 and 0.5.11
#: server_args.py _handle_gpu_memory_settings; 0.5.20 and 0.5.23 srt/arg_groups/memory_hook.py handle_gpu_memory_settings
#: (only the 20-35 GiB row changed, 2048 to 4096, in 0.5.20).  Releases 0.5.0-0.5.4 were not read: 0.4.10's rule.
_CHUNKED_PREFILL = (
    ((0, 5, 20), ((20, 2048), (35, 4096), (60, 4096), (160, 8192)), 16384, "0.5.20-0.5.23 memory_hook.py"),
    ((0, 5, 5), ((20, 2048), (35, 2048), (60, 4096), (160, 8192)), 16384, "0.5.5-0.5.19 server_args.py"),
    ((0, 0, 0), ((35, 2048), (160, 8192)), 16384, "0.4.10.post1 server_args.py"),
)
#: --max-running-requests when not given: 48 for a speculating server (EAGLE, EAGLE-3, MTP as NEXTN, standalone
#: drafts and n-gram; 0.4.10.post1 server_args.py L514-516, 0.5.11 server_args.py L3430, 0.5.23
#: speculative_hook.py _handle_eagle_family and _handle_ngram); without speculation sized from the KV pool, at least
#: 2048 (0.5.23 mem_cache/kv_cache_configurator.py resolve_max_num_reqs), which the KV capacity bounds as specsim's does.
SPEC_MAX_RUNNING = 48
PLAIN_MAX_RUNNING = 2048


def _release(preset) -> tuple[int, int, int]:
    """The release ``preset`` was asked for, else its range's newest."""
    return preset_release(NAME, preset, RANGES)


def _chunked_prefill(release: tuple[int, int, int], gib: float) -> tuple[int, str]:
    """(SGLang's default chunked_prefill_size on a GPU of ``gib`` GiB, where the rule is read)."""
    _, rows, beyond, where = next(rule for rule in _CHUNKED_PREFILL if release >= rule[0])
    return next((t for below, t in rows if gib < below), beyond), where


#: --cuda-graph-max-bs when not given, by the GPU's memory in GiB and TP: (first release, [(below GiB, (TP < 4,
#: TP >= 4)), ...], beyond).  0.5.5-0.5.19 server_args.py _handle_gpu_memory_settings; 0.5.20 and 0.5.23
#: arg_groups/memory_hook.py handle_gpu_memory_settings (the 20-35 GiB row 24/80 became 48/160).
_GRAPH_MAX_BS = (
    ((0, 5, 20), ((20, (8, 8)), (35, (48, 160)), (60, (32, 160)), (160, (256, 512))), 512),
    ((0, 0, 0), ((20, (8, 8)), (35, (24, 80)), (60, (32, 160)), (160, (256, 512))), 512),
)
#: What a speculating server sets aside beyond the rest, in MiB, by release: (first release, the EAGLE family and the
#: other heads, a STANDALONE draft model); NGRAM none.  0.4.10.post1 2048 for any algorithm (ServerArgs.__post_init__);
#: 0.5.5-0.5.9 2048 / 6144, 0.5.10-0.5.13 4096 / 6144 (server_args.py _handle_gpu_memory_settings); none from 0.5.14
#: (read in 0.5.14, 0.5.17, 0.5.20 and 0.5.23).
_SPEC_RESERVE_MIB = (((0, 5, 14), 0, 0), ((0, 5, 10), 4096, 6144), ((0, 5, 5), 2048, 6144), ((0, 0, 0), 2048, 2048))


def memory_reserve(
    release: tuple[int, int, int],
    gib: float,
    tp: int,
    mla: bool,
    platform: str,
    chunked: int,
    prefill_graphs: bool = True,
) -> tuple[float, str]:
    """(MiB SGLang sets aside for activations and graphs on a GPU of ``gib`` GiB when --mem-fraction-static is not
    given, without speculation; the rule in words).  From 0.5.5 (server_args.py _handle_gpu_memory_settings, to
    0.5.19; arg_groups/memory_hook.py handle_gpu_memory_settings from 0.5.20, read at 0.5.20 and 0.5.23): 512 +
    1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 1024 x TP / 8, plus the prefill (piecewise)
    graphs from 0.5.10, on by default on CUDA and off on ROCm (0.5.11 _handle_piecewise_cuda_graph; later releases'
    ROCm default not read): 8 MiB per captured size up to chunked_prefill_size (1.5 GiB for an MLA model), at least
    10 GiB on a GPU over 60 GiB.  Before 0.5.5, 0.4.10.post1's table (ServerArgs.__post_init__; 0.5.0-0.5.4 not
    read).  Pipeline parallelism 1, no DP attention, no multimodal tower, no DeepEP buffers."""
    mib = gib * 1024
    if release < (0, 5, 5):
        rows = ((35, 2.8 + tp / 10), (90, 9.5 + tp / 2), (160, 12 + tp / 2))
        reserved = next((r for below, r in rows if gib < below), 32.0) * 1024
        return reserved, "0.4.10.post1's table by GPU memory and TP, server_args.py; 0.5.0-0.5.4 not read"
    _, rows, beyond = next(rule for rule in _GRAPH_MAX_BS if release >= rule[0])
    graphs = next((pair for below, pair in rows if gib < below), (beyond, beyond))[0 if tp < 4 else 1]
    reserved = 512 + 1.5 * max(chunked, 2048) + 2 * graphs + 1024 * tp / 8
    piecewise = ""
    if release >= (0, 5, 10) and platform == "cuda" and prefill_graphs:
        sizes = (
            list(range(4, 33, 4))
            + list(range(48, 257, 16))
            + list(range(288, 513, 32))
            + list(range(576, 1025, 64))
            + list(range(1280, 4097, 256))
            + list(range(4608, chunked + 1, 512))
        )
        extra = 1.5 * 1024 if mla else 8 * sum(1 for n in sizes if n <= chunked)
        reserved += extra
        piecewise = f" + prefill graphs {extra:.0f}"
    floor = mib > 60 * 1024 and reserved < 10 * 1024
    where = (
        f"512 + 1.5 x chunked_prefill_size {max(chunked, 2048)} + 2 x cuda_graph_max_bs {graphs} + 1024 x TP {tp} / 8"
        f"{piecewise} MiB" + (", raised to its 10 GiB floor" if floor else "")
    )
    return (max(reserved, 10 * 1024) if mib > 60 * 1024 else reserved), where


def memory_share(preset, hardware, model, method: str | None, max_batched_tokens: int | None) -> MemoryShare:
    """SGLang's mem_fraction_static when --mem-fraction-static is not given: round((gpu_mem - reserved) / gpu_mem, 3),
    gpu_mem the GPU's memory in MiB (:func:`memory_reserve`), a speculating server's reserve raised by
    ``_SPEC_RESERVE_MIB`` in the releases that add one.  The KV pool is what that share leaves beside the weights
    (model_executor/model_runner.py: rest_memory = free memory after loading - total x (1 - mem_fraction_static))."""
    release = _release(preset)
    gib = hardware.memory_bytes / 2**30
    chunked, _ = _chunked_prefill(release, gib)
    chunked = int(max_batched_tokens) if max_batched_tokens else chunked
    reserved, rule = memory_reserve(release, gib, model.tp, model.is_mla, hardware.platform, chunked)
    spec_reserved, differs = reserved, []
    if method is not None:
        # 0.5.10 turns the prefill graphs off for any speculative algorithm (server_args.py
        # _handle_piecewise_cuda_graph, "2. Speculative decoding"; not in 0.5.11's list).
        if release == (0, 5, 10):
            spec_reserved, _ = memory_reserve(
                release, gib, model.tp, model.is_mla, hardware.platform, chunked, prefill_graphs=False
            )
            differs.append("no prefill graphs")
        if method != "NGRAM":
            _, heads, draft = next(row for row in _SPEC_RESERVE_MIB if release >= row[0])
            extra = float(draft if method == "STANDALONE" else heads)
            spec_reserved += extra
            differs += [f"{extra:.0f} MiB more for {method}"] if extra else []
    mib = gib * 1024
    plain, spec = round((mib - reserved) / mib, 3), round((mib - spec_reserved) / mib, 3)
    said = (
        f"SGLang {_version_text(release)}'s mem_fraction_static {plain:g}: the GPU's {gib:.1f} GiB less a reserve of "
    )
    said += f"{reserved / 1024:.1f} GiB ({rule})"
    if method is not None and spec != plain:
        said += f"; {spec:g} speculating ({', then '.join(differs)}: a reserve of {spec_reserved / 1024:.1f} GiB)"
    return MemoryShare(plain, spec, said)


def default_limits(preset, hardware) -> DefaultLimits:
    """SGLang's own limits on ``hardware``: chunked_prefill_size by the GPU's memory, for the release ``preset`` was
    asked for (its range's newest where none was named), and max_running_requests, 48 when speculating.  Its
    chunked_prefill_size is the prompts' budget alone: without --enable-mixed-chunk (off by default, and forced off
    by speculation) prefill and decode run as separate batches (managers/schedule_policy.py PrefillAdder subtracts
    no decode tokens, scheduler.py passes 0 unless is_mixed_chunk), and a prefill batch runs first whenever one is
    ready, the decoding sequences waiting that iteration (scheduler.py get_next_batch_to_run, "Run prefill first if
    possible": L1434 in 0.4.10.post1, L2516 in 0.5.11, L3993 in 0.5.23; 0.4.10.post1 server_args.py L522-523 turns
    --enable-mixed-chunk off with EAGLE)."""
    release = _release(preset)
    gib = hardware.memory_bytes / 2**30
    tokens, where = _chunked_prefill(release, gib)
    return DefaultLimits(
        PLAIN_MAX_RUNNING,
        tokens,
        f"SGLang {_version_text(release)}'s defaults on a GPU of {gib:.0f} GiB: chunked_prefill_size {tokens} ({where}), "
        f"max_running_requests {SPEC_MAX_RUNNING} speculating and at least {PLAIN_MAX_RUNNING} (the KV pool) without; "
        "the budget is the prompts' alone, decoding runs in its own batches",
        spec_max_num_seqs=SPEC_MAX_RUNNING,
        prefill_apart=True,
    )


#: SGLang's ROCm build (``SGLANG_USE_AITER=1``) on AMD Instinct: its engine time per tensor-parallel collective, by the
#: profile's device (:attr:`~specsim.describe.hardware.HardwareProfile.kernel_device`), in place of the CUDA presets'
#: 12.5 us, on a large MoE target (:func:`specsim.timing.large_moe`).  Sized, each from one concurrency-1 ITL alone
#: (:data:`ROCM_SIZED_ON`), as (ITL - specsim's sglang@0.5 roofline step at batch 1 and context 3600 with no time per
#: collective) / the pass's 123 collectives: the fixed time per pass the corpus's SGLang ROCm plain rows lack
#: (docs/reports/2026-12-05-corpus-definitions.md section 4), measured on independent runs
#: (docs/reports/2026-12-05-rocm-sglang-pass.md).  gfx942 (the CI's "mi30x" images, MI300X and MI325X): measured on
#: MI300X; other builds of the same CI imply 116 us (0.5.5.post2-3, ROCm 7.0) to 176 us (0.5.6, ROCm 7.0).  gfx950
#: (MI355X): 0.5.5-0.5.6 imply 214-261 us.  Measured on DeepSeek-V3/R1 at TP 8 only.
ROCM_COLLECTIVE_S = {"mi300x": 141.3e-6, "mi325x": 141.3e-6, "mi355x": 64.9e-6}
#: What each size comes from: (device, --weight-dtype, the median concurrency-1 ITL in s, the runs).  AMD's public SGLang
#: nightly CI, github.com/michael-amd/sglang-ci @192c537e, cron_log/<mi30x|mi35x>/<date>/deepseek_nightly_online.log
#: (the best of three runs a night); flags in deepseek_perf_online_csv.sh @3f59c37e: ``SGLANG_USE_AITER=1
#: sglang.launch_server --tp-size 8 --mem-fraction-static 0.9 --max-running-requests 1024``, bench_serving random
#: dataset, 3200 in / 800 out (--random-range-ratio 1), closed loop at concurrency 1.  ``tests/test_engines.py``
#: recomputes each size from its row.
ROCM_SIZED_ON = {
    "mi300x": (
        "mi300x",
        "fp8",
        20.50e-3,
        "DeepSeek-V3-0324 FP8 on 8x MI300X, SGLang 0.5.3-0.5.5 on ROCm 6.3, 34 nights 2025-10-02 to 2025-11-10",
    ),
    "mi355x": (
        "mi355x",
        "mxfp4",
        10.34e-3,
        "DeepSeek-R1 MXFP4 on 8x MI355X, SGLang 0.5.3-0.5.4 on ROCm 7.0, 14 nights 2025-10-10 to 2025-11-06",
    ),
}
_SIZED_ON = {"mi300x": "mi300x", "mi325x": "mi300x", "mi355x": "mi355x"}


def on_platform(preset, hardware, model=None):
    """The preset as SGLang's ROCm build runs a large MoE ``model`` on an AMD profile of a device it was sized on: its
    time per tensor-parallel collective (:data:`ROCM_COLLECTIVE_S`), marked as placed.  Unchanged on CUDA, for another
    target or none given (a dense target's is not measured), for another AMD device, and for a preset already placed
    or calibrated.  Its round terms stay the CUDA presets' (no SGLang ROCm round is measured apart from its passes)."""
    from specsim.timing import large_moe

    device = getattr(hardware, "kernel_device", None)
    if (
        getattr(hardware, "platform", "cuda") != "rocm"
        or preset.name != NAME
        or preset.platform == "rocm"
        or preset.calibration
        or model is None
        or not large_moe(model)
        or device not in ROCM_COLLECTIVE_S
    ):
        return preset
    collective_s = ROCM_COLLECTIVE_S[device]
    what = ROCM_SIZED_ON[_SIZED_ON[device]][3]
    return preset.on_rocm(
        collective_s,
        f"its ROCm build on AMD Instinct, {collective_s * 1e6:.1f} us per tensor-parallel "
        f"collective on a large MoE target, sized from the concurrency-1 ITL of {what} (AMD's nightly CI, "
        "michael-amd/sglang-ci @192c537e; measured on DeepSeek only, after the corpus's ROCm gap was seen: "
        "docs/reports/2026-12-05-rocm-sglang-pass.md)",
    )


#: How SGLang holds its requests' KV cache, read in 0.5.23's source.
KV_POLICY = KvPolicy(
    4096.0,
    where=(
        "SGLang admits a request where its prompt and up to 4,096 of its output tokens fit beside what the running "
        "requests hold and have still to decode, 4,096 each at most (srt/managers/schedule_policy.py "
        "CLIP_MAX_NEW_TOKENS L89-91, L785-793, L1119-1123; a fixed-length request, ignore_eos, counts all of it), and "
        "where a decoding iteration finds no room retracts the request that has decoded least, which recomputes when "
        "resumed (srt/managers/schedule_batch.py retract_decode L3451-3490, order L3542-3580); 0.5.23. Not modelled: "
        "the running requests' estimate for requests that may stop early (new_token_ratio, 0.7 decaying to 0.098: "
        "srt/environ.py L646-648), and the radix cache keeping a retracted request's prefix"
    ),
)


class _Sglang(Engine):
    def default_limits(self, preset, hardware, offline):
        return default_limits(preset, hardware)

    def kv_policy(self, preset, drafter):
        return KV_POLICY

    def on_platform(self, preset, hardware, model=None):
        return on_platform(preset, hardware, model)

    def draft_tp(self, preset, separate_model, target_tp, requested):
        return draft_tp(preset, separate_model, target_tp, requested)

    def memory_share(self, preset, hardware, model, draft, method, max_batched_tokens, given, max_num_seqs=None):
        if given is not None:  # --mem-fraction-static: one share, speculating or not (no reserve is added to it)
            return MemoryShare(given, given, f"--mem-fraction-static {given:g} as given")
        return memory_share(preset, hardware, model, method, max_batched_tokens)

    def settings(self, dep):
        from specsim.engines.vllm import engine_settings

        # What cannot be quantised on load, by vLLM's rule (FP8 on load only); the launch flags are in the schedule.
        return [], engine_settings(dep, "vllm")[1]

    def render_schedule(self, ranges, dep, checkpoint, version, min_gain, max_batch):
        return render_schedule(ranges, dep, checkpoint, version, min_gain, max_batch)

    def per_batch_missing(self, dep, ranges, version):
        config, why = adaptive_config(ranges, dep, version)
        return why[0] if config is None and len(ranges) > 1 else None

    def static_gamma(self, dep, ranges, version):
        chain = len(ranges) > 1 and hasattr(ranges[0], "gamma")
        return ranges[0].gamma if chain and adaptive_config(ranges, dep, version)[0] is None else None  # to_sglang's


#: How much longer SGLang's plain TPOT is than specsim's plain step on a ROCm profile, for DeepSeek-R1 at TP 8 on MI300X,
#: MI325X and MI355X (FP8 and MXFP4; SemiAnalysis InferenceX and a public tuning log: the plain runs of the corpus
#: sources ``examples/bench/public/mi3*-sglang-dsr1-*``, at their own limits and memory share): median, lowest and
#: highest source's median, runs (concurrency 4-64), and what the runs are; negative where it is shorter.  With SGLang
#: ROCm's time per collective (:data:`ROCM_COLLECTIVE_S`), which is sized on AMD's nightly CI, not on these runs: they
#: check it.  Shipped presets, nothing fitted to them; ``tests/test_engines.py`` recomputes it.  Measured 2026-12-05:
#: 0.97 (0.44 to 1.53) before that term; -0.035 (-0.249 to 0.045) with it; -0.044 from 2026-12-07, when a finite
#: closed loop's prompts riding in its decode phase were counted per prompt (bursts.burst_riding).
ROCM_LARGE_MOE_LONGER = (
    -0.044,
    -0.249,
    0.045,
    19,
    "public plain runs of DeepSeek-R1 at TP 8 under SGLang on MI300X, MI325X and MI355X (SemiAnalysis InferenceX and "
    "a public tuning log, concurrency 4-64)",
)


ENGINE = _Sglang(
    name=NAME,
    title="SGLang",
    platforms=PLATFORMS,
    presets=tuple(PRESETS),
    ranges=tuple(RANGES),
    aliases=ALIASES,
    newest=NEWEST,
    metric_names=tuple(METRIC_NAMES),
    methods=METHODS,
    unsupported=UNSUPPORTED,
    method_key="--speculative-algorithm",
    serial_preset="sglang@0.5",
    own_draft_tp=True,
    takes_trees=True,
    kv_error=(0.15, 0.15, 0.15, 1),  # measured 2026-12-04, not corrected
    rocm_large_moe_longer=ROCM_LARGE_MOE_LONGER,
    reserve_counts_activations=True,
    draft_cache_rule=(
        "SGLang 0.5.12's draft worker runs on the server's own server_args, whose --kv-cache-dtype sets its cache "
        "(srt/speculative/standalone_worker.py; srt/model_executor/model_runner.py configure_kv_cache_dtype)"
    ),
    bench=SglangBench(),
    bench_files=BenchFiles(
        describes="sglang.bench_serving --output-file JSON lines (SGLang 0.4 and later)",
        # --backend of python/sglang/bench_serving.py that names an SGLang server
        backends=("sglang", "sglang-oai", "sglang-native"),
        # "sglang-oai" is its OpenAI Completions client (python/sglang/bench_serving.py at sgl-project/sglang@0033168f,
        # ASYNC_REQUEST_FUNCS: async_request_openai_completions); "sglang" and "sglang-native" post to SGLang's /generate
        api_backends=("sglang-oai",),
        acceptance_key="accept_length",
        recognises=_is_bench_file,
        precedence=1,
        # the result's "dataset_name" (--dataset-name) (python/sglang/bench_serving.py 0.5.13 L1590-1592;
        # sglang/benchmark/serving.py 0.5.23 L1857-1859); its free-form "tag" is not read: it may name a load or a
        # configuration, and would split one sweep
        dataset_keys=("dataset_name",),
    ),
)
