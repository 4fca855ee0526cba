"""The ``specsim`` command.

Each subcommand is a ``_cmd_*`` function that takes the parsed arguments and
returns an exit status.  Defaults come from the library (``speedup.DEFAULT_*``)
and are only referenced here.  Errors in user input (``ValueError``,
``KeyError``, ``OSError``) become one line on stderr and exit status 2.

The hot path (``specsim optimal-gamma``) imports numpy and PyYAML only;
matplotlib, pandas, scipy and torch are imported inside the commands that need
them.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, Sequence

from specsim import __version__
from specsim.cli import commands
from specsim.serving.capacity import DEFAULT_MEMORY_UTILIZATION
from specsim.engines import DEFAULT_ENGINE, ENGINES, PRESETS, get_engine

ENGINE_CHOICES = ", ".join(["vllm", "sglang", "trtllm", "none"] + [k for k in PRESETS if "@" in k])
from specsim.harness import defaults as hd
from specsim.core.limits import (MAX_BATCH, MAX_CONTEXT, MAX_GAMMA, MAX_LOOP_TOKENS, MAX_RATE_PER_S, MAX_REPEATS, MAX_REQUESTS, MAX_SEED, MAX_TP, MAX_WORKERS)
from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES
from specsim.timing import DEFAULT_TIMING, TIMING_CHOICES
from specsim.speculation.schedule import DEFAULT_MAX_BATCH, DEFAULT_MIN_GAIN, DEFAULT_SCHEDULE_RTOL
from specsim.core.defaults import (DEFAULT_ALPHA, DEFAULT_BATCHES, DEFAULT_CONTEXT_TOKENS, DEFAULT_DRAFT, DEFAULT_GAMMA_MAX, DEFAULT_HARDWARE, DEFAULT_RTOL, DEFAULT_SERVING_GAMMA_MAX, DEFAULT_TARGET)

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message instead of usage plus error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- argument types: each rejects bad input with the allowed range ----------------
def _alpha(text: str) -> float:
    value = _float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"alpha must be in [0, 1], got {text}")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _nonneg_float(text: str) -> float:
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _int_at_least(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], int]:
    def parse(text: str) -> int:
        shown = text if len(text) <= 30 else f"a {len(text)}-character value"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer in [{minimum}, {maximum}], got {shown!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{what} must be an integer in [{minimum}, {maximum}], got {shown}")
        return value

    parse.__name__ = what
    return parse


def _int_list(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], list[int]]:
    one = _int_at_least(minimum, what, maximum)

    def parse(text: str) -> list[int]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{what} needs a comma-separated list of integers >= {minimum}, got {text!r}")
        return [one(item) for item in items]

    parse.__name__ = what
    return parse


def _csv(values) -> str:
    return ",".join(map(str, values))


def _fraction(text: str) -> float:
    value = _float(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


_gamma = _int_at_least(0, "gamma", MAX_GAMMA)
_gamma_max = _int_at_least(0, "gamma-max", MAX_GAMMA)
_context = _int_at_least(0, "context", MAX_CONTEXT)
_batches = _int_list(1, "batch", MAX_BATCH)


# -- output helpers ------------------------------------------------------------


# -- commands --------------------------------------------------------------------


# -- parser ----------------------------------------------------------------------
def _add_deployment_args(p: argparse.ArgumentParser, *, defaults: bool = True, batch: bool = True, context: bool = True) -> None:
    # --hardware, --target, --draft, --timing and --engine stay unset when not given, so that a --calibration file can
    # refuse the ones that name another deployment; the library's defaults apply (Deployment.build).
    p.add_argument("--hardware",
                   help=f"built-in profile name or path to a YAML profile (default {DEFAULT_HARDWARE}; list: specsim hardware)")
    p.add_argument("--target",
                   help=f"target model: built-in name or path to a Hugging Face config.json (default {DEFAULT_TARGET})")
    p.add_argument("--draft",
                   help=f"drafter: a draft model (built-in name or config.json), eagle, eagle3 (or eagle3:HEAD/config.json), "
                   f"mtp (the target's own MTP layers) or ngram (default {DEFAULT_DRAFT})")
    p.add_argument("--calibration", metavar="FILE",
                   help="a calibrate-engine --out file: the fitted profile, engine terms and measured acceptance of your engine "
                   "(its hardware, target, tensor parallelism, timing and engine; flags naming others are refused)")
    p.add_argument("--draft-checkpoint", metavar="ID",
                   help="the drafter's checkpoint for engine configurations (default: the draft model's, or a known "
                   "EAGLE head for the target)")
    p.add_argument("--ngram-cpu-ns", type=_nonneg_float, metavar="NS",
                   help="with --draft ngram: CPU nanoseconds per cached token scanned per round (default 0.15, vLLM PR #56732)")
    if batch:
        p.add_argument("--batch", type=_batches, default=list(DEFAULT_BATCHES) if defaults else None,
                       help=f"comma-separated batch sizes (default {','.join(map(str, DEFAULT_BATCHES))})")
    if context:
        p.add_argument("--context", type=_context, default=DEFAULT_CONTEXT_TOKENS if defaults else None,
                       help=f"cached tokens per sequence, L (default {DEFAULT_CONTEXT_TOKENS}: a 1000-token prompt plus half of 256 generated)")
    _add_model_args(p, draft=True)
    _add_timing_args(p)
    _add_round_cost_args(p)


def _engine(text: str) -> str:
    try:
        get_engine(text)
    except ValueError as err:  # one line naming the engines and versions known
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _add_model_args(p: argparse.ArgumentParser, *, draft: bool) -> None:
    """Precision, tensor parallelism and routing skew; unset means what the config.json says (and TP 1)."""
    tp = _int_at_least(1, "tp", MAX_TP)
    p.add_argument("--weight-dtype", choices=WEIGHT_DTYPE_CHOICES,
                   help="storage of the target's linear layers (default: the config.json's torch_dtype or quantization_config)")
    p.add_argument("--kv-dtype", choices=KV_DTYPE_CHOICES, help="the target's KV-cache dtype (default: its activation dtype)")
    p.add_argument("--tp", type=tp, help="tensor-parallel GPUs for the target (default 1)")
    p.add_argument("--moe-effective-experts", type=_float, metavar="E_EFF",
                   help="effective number of experts for skewed routing (default: uniform over all experts)")
    if draft:
        p.add_argument("--draft-tp", type=tp,
                       help="tensor-parallel GPUs for the draft: 1 (default) or the target's --tp (vLLM's default; "
                            "with --engine sglang always the target's, as its draft worker shares the TP group)")
        p.add_argument("--draft-weight-dtype", choices=WEIGHT_DTYPE_CHOICES, help="the draft's weight storage (default: its config)")
        p.add_argument("--draft-kv-dtype", choices=KV_DTYPE_CHOICES, help="the draft's KV-cache dtype (default: its config)")


def _add_timing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timing", metavar="SOURCE",
                   help=f"step-time source: {TIMING_CHOICES} (default {DEFAULT_TIMING}: the roofline for decode steps, "
                   "measured kernels for the cost of verification; see README, Fidelity)")
    p.add_argument("--engine", type=_engine, metavar="ENGINE[@VERSION]",
                   help=f"serving engine and version whose CPU time, round costs and kernels apply: {ENGINE_CHOICES} "
                   f"(default {DEFAULT_ENGINE}, its current release; none: add nothing)")
    p.add_argument("--engine-overhead-ms", type=_nonneg_float,
                   help="the engine's time per iteration, ms, replacing the --engine preset's fitted value")


def _add_round_cost_args(p: argparse.ArgumentParser) -> None:
    """Overrides of the engine's host work per speculative round (README, Fidelity: the fitted values)."""
    p.add_argument("--engine-round-ms", type=_nonneg_float, metavar="MS", help="engine host time per speculative round, ms")
    p.add_argument("--engine-step-ms", type=_nonneg_float, metavar="MS", help="engine host time per draft step, ms")
    p.add_argument("--engine-seq-us", type=_nonneg_float, metavar="US", help="engine host time per sequence per round, us")
    p.add_argument("--engine-seq-step-us", type=_nonneg_float, metavar="US",
                   help="engine time per sequence per draft step, us")
    p.add_argument("--engine-overlap", choices=["on", "off"],
                   help="whether the engine overlaps a round's host work with the GPU (default: as the version does)")


def _add_acceptance_args(p: argparse.ArgumentParser) -> None:
    """One alpha, per-position rates, or a saved /metrics page (one of them; alpha defaults to the library's)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--alpha", type=_alpha, help=f"per-token acceptance rate in [0, 1] (default {DEFAULT_ALPHA})")
    group.add_argument("--acceptance", metavar="RATES",
                       help="per-position acceptance, P(drafted token k accepted) for k = 1, 2, ... as vLLM's per-position "
                       "counters give it (e.g. 0.92,0.81,0.70); gamma stops at the last position given")
    group.add_argument("--metrics", metavar="FILE",
                       help="a saved /metrics page: vLLM's spec_decode counters (per-position when present) or SGLang's "
                       "spec_accept_length (then give --metrics-gamma)")
    p.add_argument("--metrics-gamma", type=_int_at_least(1, "metrics-gamma", MAX_GAMMA),
                   help="with an SGLang --metrics page: the --speculative-num-steps it was measured at")
    p.add_argument("--metrics-model", metavar="NAME",
                   help="with a --metrics page holding several models' counters: the model_name label to read")


def _add_memory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-context", type=_int_at_least(1, "max-context", MAX_CONTEXT),
                   help="tokens each sequence reserves (prompt + completion), for the memory check (default: --context)")
    p.add_argument("--memory-util", type=_fraction, default=DEFAULT_MEMORY_UTILIZATION,
                   help=f"fraction of device memory the engine uses (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's gpu_memory_utilization)")


def _parser_optimal_gamma(sub) -> None:
    p = sub.add_parser("optimal-gamma", help="the best gamma per batch size, with its speedup and step times",
                       description="The speedup-maximising gamma per batch size; gamma 0 means turn speculation off.")
    _add_acceptance_args(p)
    _add_deployment_args(p)
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--rtol", type=_nonneg_float, default=DEFAULT_RTOL,
                   help="pick the smallest gamma within this fraction of the best speedup (default 0: exact argmax)")
    _add_tree_args(p)
    _add_memory_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_optimal_gamma)


def _add_tree_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tree", default="chain", metavar="SPEC",
                   help="chain (default: the gamma search) or topk:K,depth:D,tokens:N: the largest token tree; the best "
                   "tree within it (top-k <= K, depth <= D, verified tokens <= N) is chosen per batch size")
    p.add_argument("--sibling-factor", type=_fraction,
                   help="tree acceptance of the r-th ranked sibling relative to the first, per rank (default 0.6, an assumption)")


def _parser_explain(sub) -> None:
    p = sub.add_parser("explain", help="where a speculative round's time goes against batch, next to a plain decode step",
                       description="A round's parts per batch size (draft steps, verification, draft extend, collectives, "
                       "the engine's per-iteration and host time, hidden or not) next to the plain decode step it "
                       "replaces and the tokens it yields: why speculation stops paying.")
    _add_acceptance_args(p)
    _add_deployment_args(p)
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA),
                   help="draft steps per round (default: the best gamma per batch, at least 1)")
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--plot", type=_nonempty("plot"), metavar="FILE.png", help="also draw the breakdown as a PNG")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_explain)


def _parser_speedup(sub) -> None:
    p = sub.add_parser("speedup", help="speedup of one (alpha, gamma), from a cost ratio or the step-time model",
                       description="Speedup for a given alpha and gamma: from --cost-ratio c (closed form, "
                       "verification costs one decode step) or from the step-time model per batch size.")
    _add_acceptance_args(p)
    p.add_argument("--gamma", type=_gamma, required=True, help="drafted tokens per step, >= 0")
    p.add_argument("--cost-ratio", type=_nonneg_float, help="c = t_D / t_T; replaces the step-time model")
    _add_deployment_args(p, defaults=False)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_speedup)


def _parser_steptime(sub) -> None:
    p = sub.add_parser("steptime", help="modelled time of one forward pass, with its compute, memory and overhead parts")
    p.add_argument("--hardware", help=f"profile name or YAML path (default {DEFAULT_HARDWARE})")
    p.add_argument("--model", help=f"model name or config.json path (default {DEFAULT_TARGET})")
    p.add_argument("--calibration", metavar="FILE", help="a calibrate-engine --out file (its profile, target and engine terms)")
    p.add_argument("--batch", type=_batches, default=list(DEFAULT_BATCHES), help="comma-separated batch sizes")
    p.add_argument("--tokens-per-seq", type=_int_list(1, "tokens-per-seq", MAX_GAMMA + 1), default=[1],
                   help="comma-separated new tokens per sequence, q (1: decode; gamma+1: verification; default 1)")
    p.add_argument("--context", type=_int_list(0, "context", MAX_CONTEXT), default=[DEFAULT_CONTEXT_TOKENS],
                   help=f"comma-separated cached tokens per sequence (default {DEFAULT_CONTEXT_TOKENS})")
    _add_model_args(p, draft=False)
    _add_timing_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_steptime)


def _parser_alpha(sub) -> None:
    p = sub.add_parser("alpha", help="alpha from a measured mean acceptance length or a saved vLLM /metrics page",
                       description="Invert E(alpha, gamma): vLLM's mean acceptance length is 1 + accepted/drafts. "
                       "With --metrics, read vLLM's spec_decode counters and per-position acceptance.")
    p.add_argument("--acceptance-length", type=_float, help="mean tokens per verification pass, in [1, gamma+1]")
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA), help="speculative tokens per step of the measurement")
    p.add_argument("--metrics", help="a saved Prometheus /metrics page of a vLLM server")
    p.add_argument("--model-name", help="with --metrics: the model_name label to read, if several")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_alpha)


def _parser_capacity(sub) -> None:
    p = sub.add_parser("capacity", help="memory: do the models fit, and the largest batch with and without the draft")
    _add_deployment_args(p, batch=False)
    p.add_argument("--memory-util", type=_fraction, default=DEFAULT_MEMORY_UTILIZATION,
                   help=f"fraction of device memory the engine uses (default {DEFAULT_MEMORY_UTILIZATION}, vLLM's gpu_memory_utilization)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_capacity)


def _parser_schedule(sub) -> None:
    p = sub.add_parser("schedule", help="batch-size-dependent gamma (or tree) schedule for vLLM, SGLang or TensorRT-LLM",
                       description="The optimal gamma (or token tree) for every batch size 1..--max-batch, merged into "
                       "ranges, printed as a vLLM speculative_config, SGLang launch flags or a TensorRT-LLM "
                       "speculative_config, for the drafter --draft names.")
    _add_acceptance_args(p)
    _add_deployment_args(p, batch=False)
    p.add_argument("--max-batch", type=_int_at_least(1, "max-batch", MAX_BATCH), default=DEFAULT_MAX_BATCH,
                   help=f"largest batch size (max_num_seqs) to schedule (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--min-gain", type=_float, default=DEFAULT_MIN_GAIN,
                   help="speculate only where the predicted speedup is at least this (e.g. 1.05; default 1)")
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma (default {DEFAULT_GAMMA_MAX})")
    p.add_argument("--rtol", type=_nonneg_float, default=DEFAULT_SCHEDULE_RTOL,
                   help=f"take the smallest gamma within this fraction of the best speedup (default {DEFAULT_SCHEDULE_RTOL}; 0: exact argmax)")
    _add_memory_args(p)
    _add_tree_args(p)
    p.add_argument("--contexts", type=_int_list(0, "contexts", MAX_CONTEXT),
                   help="comma-separated context lengths: also print the (batch, context) table of the best choice")
    p.add_argument("--format", choices=["vllm", "sglang", "trtllm", "json", "table"], default="table", help="output form (default table)")
    p.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    p.set_defaults(func=commands.run_schedule)


def _parser_compare(sub) -> None:
    p = sub.add_parser("compare", help="latency and throughput with and without speculation, per batch size")
    _add_acceptance_args(p)
    _add_deployment_args(p)
    p.add_argument("--gamma", type=_gamma, help="fixed gamma (default: the optimal gamma per batch size)")
    p.add_argument("--gamma-max", type=_gamma_max, default=DEFAULT_GAMMA_MAX, help=f"largest gamma searched (default {DEFAULT_GAMMA_MAX})")
    _add_memory_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_compare)


def _add_serving_args(p: argparse.ArgumentParser, *, lengths: bool = True) -> None:
    """The flags of serve-sim and serve-sweep; ``lengths`` False leaves --workload and --requests unset (a trace gives them)."""
    from specsim.serving.simulator import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS, DEFAULT_REQUESTS
    from specsim.serving.workloads import DEFAULT_WORKLOAD, WORKLOADS

    _add_acceptance_args(p)
    _add_deployment_args(p, batch=False, context=False)
    p.add_argument("--workload", choices=list(WORKLOADS), default=DEFAULT_WORKLOAD if lengths else None,
                   help=f"prompt and output length distribution (default {DEFAULT_WORKLOAD}; see specsim.serving.workloads for sources)")
    p.add_argument("--requests", type=_int_at_least(1, "requests", MAX_REQUESTS), default=DEFAULT_REQUESTS if lengths else None,
                   help=f"requests to simulate (default {DEFAULT_REQUESTS})")
    p.add_argument("--seed", type=_int_at_least(0, "seed", MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA),
                   help="fixed gamma (default: the optimal gamma per running batch size)")
    p.add_argument("--gamma-max", type=_int_at_least(1, "gamma-max", MAX_GAMMA), default=DEFAULT_SERVING_GAMMA_MAX,
                   help=f"largest gamma of the per-batch schedule (default {DEFAULT_SERVING_GAMMA_MAX})")
    p.add_argument("--max-num-seqs", type=_int_at_least(1, "max-num-seqs", MAX_BATCH), default=DEFAULT_MAX_NUM_SEQS,
                   help=f"sequences in flight at most (default {DEFAULT_MAX_NUM_SEQS}, vLLM's)")
    p.add_argument("--max-batched-tokens", type=_int_at_least(1, "max-batched-tokens", MAX_BATCH), default=DEFAULT_MAX_BATCHED_TOKENS,
                   help=f"tokens per iteration for decode plus prefill chunks (default {DEFAULT_MAX_BATCHED_TOKENS})")
    p.add_argument("--memory-util", type=_fraction, default=DEFAULT_MEMORY_UTILIZATION,
                   help=f"fraction of device memory the engine uses (default {DEFAULT_MEMORY_UTILIZATION})")
    p.add_argument("--slo-ttft-ms", type=_positive_float, help="time-to-first-token objective, ms (> 0)")
    p.add_argument("--slo-tpot-ms", type=_positive_float, help="time-per-output-token objective, ms (> 0)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


#: Rates one serve-sweep simulates (each is two full simulations).
MAX_RATES = 64
#: serve-sim's independent runs at most (the default is the library's: specsim.serving.simulator.DEFAULT_RUNS).
MAX_SERVE_RUNS = 100


def _rate(text: str) -> float:
    value = _positive_float(text)
    if value > MAX_RATE_PER_S:
        raise argparse.ArgumentTypeError(f"a request rate must be in (0, {MAX_RATE_PER_S:g}] per second, got {text}")
    return value


def _rate_list(text: str) -> list[float]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"rates needs a comma-separated list of request rates > 0, got {text!r}")
    if len(items) > MAX_RATES:
        raise argparse.ArgumentTypeError(f"rates lists {len(items):,} rates; at most {MAX_RATES} per sweep (each is two "
                                         "simulations): split the sweep")
    return [_rate(item) for item in items]


def _names(what: str):
    """A comma-separated list of names, refused when it names none (--only ',' once meant every figure)."""
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not names:
            raise argparse.ArgumentTypeError(f"--{what} needs a comma-separated list of names, got {text!r}")
        return names

    parse.__name__ = what
    return parse


def _nonempty(what: str, kind: str = "file"):
    """A path flag's value, refused when empty: from a shell, --out '' is an empty argument that was once skipped."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"--{what} needs a {kind} name, got an empty one")
        return text

    parse.__name__ = what
    return parse


def _parser_serve_sim(sub) -> None:
    p = sub.add_parser("serve-sim", help="simulate an engine under load, with and without speculation",
                       description="Continuous batching with chunked prefill, request by request: TTFT, TPOT and "
                       "end-to-end latency percentiles, throughput and running batch, with and without speculation.")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=_rate, help=f"Poisson arrivals, requests per second, in (0, {MAX_RATE_PER_S:g}]")
    load.add_argument("--concurrency", type=_int_at_least(1, "concurrency", MAX_BATCH),
                      help="a closed loop of this many users, each sending its next request when the last finishes")
    load.add_argument("--trace", metavar="FILE", help="requests from a CSV or JSONL trace: arrival_s, prompt_tokens, output_tokens")
    _add_serving_args(p, lengths=False)
    from specsim.serving.simulator import DEFAULT_RUNS

    p.add_argument("--runs", type=_int_at_least(1, "runs", MAX_SERVE_RUNS),
                   help=f"independent runs, seeds --seed, --seed + 1, ...: each figure is their mean with a 95%% confidence "
                   f"interval (default {DEFAULT_RUNS}, or 1 with --trace: a trace is replayed once; 1: one run, no interval)")
    p.add_argument("--csv", type=_nonempty("csv"), metavar="FILE",
                   help="write one row per request of the run with --seed (speculation off and on) to this CSV")
    p.set_defaults(func=commands.run_serve_sim)


def _parser_serve_sweep(sub) -> None:
    p = sub.add_parser("serve-sweep", help="serve-sim over a range of request rates",
                       description="serve-sim at each Poisson rate: where speculation stops lowering TPOT, and the "
                       "largest rate that meets the SLOs with and without it.")
    p.add_argument("--rates", type=_rate_list, required=True, help="comma-separated request rates per second, e.g. 1,2,4,8,16")
    _add_serving_args(p)
    p.add_argument("--workers", type=_int_at_least(1, "workers", MAX_WORKERS), default=1,
                   help="parallel simulations (a process pool; default 1)")
    p.add_argument("--plot", type=_nonempty("plot"), metavar="FILE", help="write the TPOT and throughput figure (.png or .svg)")
    p.set_defaults(func=commands.run_serve_sweep)


def _parser_toy(sub) -> None:
    p = sub.add_parser("toy", help="the article's seeded toy experiments: exactness, tokens per step, draft re-alignment")
    p.add_argument("experiment", choices=["exactness", "tokens-per-step", "distill"])
    p.add_argument("--seed", type=_int_at_least(0, "seed", MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_toy)


def _parser_acceptance(sub) -> None:
    p = sub.add_parser("acceptance", help="alpha measured from target and draft logits at a temperature",
                       description="Read two [positions, vocab] logit arrays (.npy or .npz) over the same positions and "
                       "vocabulary; print alpha = mean sum min(p, q), its spread and tokens per step for gamma 1..8.")
    p.add_argument("--target-logits", required=True, help=".npy or .npz file, shape [positions, vocab]")
    p.add_argument("--draft-logits", required=True, help=".npy or .npz file, same shape")
    p.add_argument("--temperature", type=_nonneg_float, default=1.0, help="serving temperature (0 = greedy; default 1)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_acceptance)


def _parser_measure(sub) -> None:
    p = sub.add_parser("measure", help="time real forward passes with the PyTorch harness (needs torch) and write a CSV",
                       description="Build a Llama-architecture decoder with the model's shape and random weights, and time "
                       "one forward pass per (batch, tokens per sequence, context).")
    p.add_argument("--model", required=True, help="built-in model name or config.json path (on a CPU: tiny-28m, tiny-5m)")
    p.add_argument("--batch", type=_batches, default=list(hd.MEASURE_BATCHES), help=f"comma-separated batch sizes (default {_csv(hd.MEASURE_BATCHES)})")
    p.add_argument("--tokens-per-seq", type=_int_list(1, "tokens-per-seq", MAX_GAMMA + 1), default=list(hd.MEASURE_TOKENS_PER_SEQ),
                   help=f"comma-separated q values (default {_csv(hd.MEASURE_TOKENS_PER_SEQ)})")
    p.add_argument("--context", type=_int_list(0, "context", MAX_CONTEXT), default=list(hd.MEASURE_CONTEXTS),
                   help=f"comma-separated cached lengths (default {_csv(hd.MEASURE_CONTEXTS)})")
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=hd.MEASURE_DTYPE,
                   help=f"weights and KV cache (default {hd.MEASURE_DTYPE}; fp32 is faster on most CPUs)")
    p.add_argument("--device", choices=["cuda", "cpu"], default=hd.MEASURE_DEVICE, help=f"default {hd.MEASURE_DEVICE}")
    p.add_argument("--repeats", type=_int_at_least(1, "repeats", MAX_REPEATS), default=hd.MEASURE_REPEATS,
                   help=f"timed passes per configuration (default {hd.MEASURE_REPEATS})")
    p.add_argument("--warmup", type=_int_at_least(0, "warmup", MAX_REPEATS), default=hd.MEASURE_WARMUP,
                   help=f"untimed passes first (default {hd.MEASURE_WARMUP})")
    p.add_argument("--cuda-graphs", action="store_true", help="capture each pass in a CUDA graph and time its replay")
    p.add_argument("--pass", dest="pass_kind", choices=["engine", "reference"], default=hd.MEASURE_PASS,
                   help=f"engine: fused norm, grouped-query SDPA, no dense mask; reference: the plain formulation "
                   f"(default {hd.MEASURE_PASS})")
    p.add_argument("--compile", action="store_true", help="torch.compile each layer (fuses the element-wise work; "
                   "compiling takes minutes on a GPU)")
    p.add_argument("--floor", action="store_true", help="also time each pass's GEMMs and attention alone: floor_* columns, "
                   "and the pass over its kernel floor in the progress lines")
    p.add_argument("--seed", type=_int_at_least(0, "seed", MAX_SEED), default=0)
    p.add_argument("--out", type=_nonempty("out"), required=True, help="CSV file to write (atomically; checked before the sweep starts)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_measure)


def _parser_measure_loop(sub) -> None:
    p = sub.add_parser("measure-loop", help="time an end-to-end speculative loop (controlled acceptance) against plain decoding")
    p.add_argument("--target", default=hd.LOOP_TARGET, help=f"target model (default {hd.LOOP_TARGET}, CPU-sized)")
    p.add_argument("--draft", default=hd.LOOP_DRAFT, help=f"draft model (default {hd.LOOP_DRAFT})")
    p.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, help=f"acceptance probability per drafted token (default {DEFAULT_ALPHA})")
    p.add_argument("--gamma", type=_int_at_least(1, "gamma", MAX_GAMMA), default=hd.LOOP_GAMMA, help=f"drafted tokens per step (default {hd.LOOP_GAMMA})")
    p.add_argument("--batch", type=_batches, default=list(hd.LOOP_BATCHES), help=f"comma-separated batch sizes (default {_csv(hd.LOOP_BATCHES)})")
    p.add_argument("--context", type=_context, default=hd.LOOP_CONTEXT, help=f"cached tokens before generating (default {hd.LOOP_CONTEXT})")
    p.add_argument("--tokens", type=_int_at_least(1, "tokens", MAX_LOOP_TOKENS), default=hd.LOOP_TOKENS,
                   help=f"tokens generated per sequence (default {hd.LOOP_TOKENS})")
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=hd.LOOP_DTYPE, help=f"default {hd.LOOP_DTYPE}")
    p.add_argument("--device", choices=["cuda", "cpu"], default=hd.LOOP_DEVICE, help=f"default {hd.LOOP_DEVICE}")
    p.add_argument("--repeats", type=_int_at_least(1, "repeats", MAX_REPEATS), default=hd.LOOP_REPEATS, help=f"default {hd.LOOP_REPEATS}")
    p.add_argument("--seed", type=_int_at_least(0, "seed", MAX_SEED), default=0)
    p.add_argument("--hardware", help="profile to predict the speedup with (e.g. a calibrated cpu profile)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_measure_loop)


def _parser_calibrate(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a profile's efficiencies and overheads to measured step times",
                       description="Robust least squares on measured step times; held-out points judge the fit before and after.")
    p.add_argument("measurements", help="CSV from specsim measure or specsim compose-kernels")
    p.add_argument("--hardware", required=True, help="base profile whose datasheet peaks are kept")
    p.add_argument("--out", type=_nonempty("out"), required=True, help="profile YAML to write (a residual plot is written beside it)")
    p.add_argument("--name", help="name of the fitted profile (default: <--hardware>-calibrated)")
    p.add_argument("--holdout", type=_fraction,
                   help="fraction of distinct points held out of the fit (default 0.25: specsim.calibration.profile.DEFAULT_HOLDOUT)")
    p.add_argument("--per-layer", choices=["auto", "yes", "no"], default="auto", help="fit a per-layer overhead (default auto)")
    p.add_argument("--seed", type=_int_at_least(0, "seed", MAX_SEED), default=0, help="seed of the train / held-out split")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_calibrate)


def _parser_calibrate_engine(sub) -> None:
    p = sub.add_parser("calibrate-engine", help="fit the engine's terms to your engine's own benchmark files",
                       description="Reads a bench-plan folder's results (--plan), or vllm bench serve --save-result JSON, "
                       "sglang.bench_serving JSON lines, TensorRT-LLM benchmark_serving JSON or GuideLLM reports (--plain, "
                       "--spec), and fits the profile's efficiency, the engine's time per iteration, the host terms of a "
                       "speculative round and the acceptance the files do not record, each with a 95% interval; the error "
                       "is judged on loads held out of the fit.  --out writes one file every predicting command takes with "
                       "--calibration.")
    p.add_argument("--plan", type=_nonempty("plan"), metavar="PLAN.yaml", help="a specsim bench-plan manifest: its deployment and the results its run.sh wrote")
    p.add_argument("--plain", nargs="+", default=[], metavar="FILE", help="benchmark files of runs without speculation")
    p.add_argument("--spec", nargs="+", default=[], metavar="FILE", help="benchmark files of runs with speculation")
    p.add_argument("--hardware", help="the GPU the runs were on (a profile name or YAML); no benchmark file says it")
    p.add_argument("--target", help="the served model (default: the model the files name, where specsim knows it)")
    p.add_argument("--draft", help="the drafter of the speculative runs: a draft model, eagle, eagle3, mtp or ngram")
    p.add_argument("--steps", type=_int_at_least(1, "steps", MAX_GAMMA),
                   help="draft steps per round the runs used (vLLM num_speculative_tokens, SGLang --speculative-num-steps)")
    p.add_argument("--topk", type=_int_at_least(1, "topk", MAX_GAMMA), default=1, help="draft tokens per step (default 1: a chain)")
    p.add_argument("--verify-tokens", type=_int_at_least(1, "verify-tokens", 4096),
                   help="tokens verified per sequence (default steps + 1; SGLang --speculative-num-draft-tokens)")
    p.add_argument("--tp", type=_int_at_least(1, "tp", MAX_TP), help="tensor-parallel GPUs of the target (default 1)")
    p.add_argument("--weight-dtype", choices=WEIGHT_DTYPE_CHOICES,
                   help="storage of the target's linear layers (default: the config.json's torch_dtype or quantization_config)")
    p.add_argument("--kv-dtype", choices=KV_DTYPE_CHOICES, help="the target's KV-cache dtype (default: its activation dtype)")
    p.add_argument("--timing", choices=["roofline", "hybrid", "kernels"],
                   help=f"step-time source the terms apply to (default {DEFAULT_TIMING} where the kernel database has the "
                   "GPU, else roofline; the roofline's and hybrid's efficiency is fitted too)")
    p.add_argument("--engine", type=_engine, metavar="ENGINE[@VERSION]",
                   help="the engine and version that served the runs (default: the files' backend, else "
                   f"{DEFAULT_ENGINE}; its current release)")
    p.add_argument("--metrics", metavar="FILE",
                   help="a /metrics page saved after the speculative runs, for runs whose file has no acceptance length")
    p.add_argument("--out", type=_nonempty("out"), metavar="CALIBRATION.yaml", help="write the calibration: use it with --calibration FILE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_calibrate_engine)


def _parser_bench_plan(sub) -> None:
    from specsim.calibration.plan import (DEFAULT_CONCURRENCY, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, DEFAULT_STEPS)

    p = sub.add_parser("bench-plan", help="write the benchmark of your engine that calibrate-engine needs",
                       description="Writes a folder with run.sh (your engine's own server and benchmark client over a "
                       "design that separates every term calibrate-engine fits: plain and speculative runs at the same "
                       "loads, two prompt lengths, two numbers of draft steps, acceptance pinned by the engine at known "
                       "lengths, and a run with real acceptance on your prompts), README.md and plan.yaml.")
    p.add_argument("--engine", type=_engine, required=True, metavar="ENGINE@VERSION",
                   help="vllm, sglang or trtllm with the version you run (vllm@0.24.0); the flags are that version's")
    p.add_argument("--hardware", help=f"the GPU (default {DEFAULT_HARDWARE})")
    p.add_argument("--target", help=f"the served model: a built-in name or its config.json (default {DEFAULT_TARGET})")
    p.add_argument("--served-model", metavar="ID", help="what the server loads (default: the target's Hugging Face ID)")
    p.add_argument("--draft", help=f"the drafter (default {DEFAULT_DRAFT}): a draft model, eagle, eagle3, mtp or ngram")
    p.add_argument("--draft-checkpoint", metavar="ID", help="the drafter's checkpoint (default: the draft model's, or a known head)")
    _add_model_args(p, draft=True)
    p.add_argument("--timing", metavar="SOURCE", help=f"step-time source of the wall-time estimate (default {DEFAULT_TIMING})")
    p.add_argument("--concurrency", type=_int_list(1, "concurrency", MAX_BATCH), default=list(DEFAULT_CONCURRENCY),
                   help=f"comma-separated concurrency levels (default {_csv(DEFAULT_CONCURRENCY)})")
    p.add_argument("--input-tokens", type=_int_list(1, "input-tokens", MAX_CONTEXT), default=list(DEFAULT_INPUT_TOKENS),
                   help=f"two prompt lengths of the random runs (default {_csv(DEFAULT_INPUT_TOKENS)})")
    p.add_argument("--output-tokens", type=_int_at_least(2, "output-tokens", MAX_CONTEXT), default=DEFAULT_OUTPUT_TOKENS,
                   help=f"tokens generated per request (default {DEFAULT_OUTPUT_TOKENS})")
    p.add_argument("--steps", type=_int_list(1, "steps", MAX_GAMMA), default=list(DEFAULT_STEPS),
                   help=f"two numbers of draft steps (default {_csv(DEFAULT_STEPS)})")
    p.add_argument("--pin-accept-length", type=lambda t: [_float(x) for x in t.split(",") if x.strip()], metavar="AL,AL",
                   help="the acceptance length pinned at each step count (default: the drafter's published acceptance)")
    p.add_argument("--no-pin", action="store_true",
                   help="real acceptance on --prompts at every step count (for engine versions that cannot pin it)")
    p.add_argument("--prompts", type=_nonempty("prompts"), metavar="FILE.jsonl", help="your prompts, one {\"prompt\": ...} per line, for the real-acceptance run")
    p.add_argument("--port", type=_int_at_least(1, "port", 65535), default=8000, help="the server's port (default 8000)")
    p.add_argument("--out", type=_nonempty("out", "folder"), required=True, metavar="FOLDER", help="a new (or empty) folder for the plan")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_bench_plan)


def _parser_compose_kernels(sub) -> None:
    p = sub.add_parser("compose-kernels", help="per-step times composed from AIConfigurator's measured kernels, as a CSV for calibrate")
    p.add_argument("--hardware", type=_names("hardware"), default=[DEFAULT_HARDWARE],
                   help=f"comma-separated profiles whose device the database has (default {DEFAULT_HARDWARE})")
    p.add_argument("--engine", choices=["vllm", "sglang", "trtllm"], default=ENGINES[DEFAULT_ENGINE].kernel_engine,
                   help=f"whose kernels (default {ENGINES[DEFAULT_ENGINE].kernel_engine})")
    p.add_argument("--models", type=_names("models"),
                   default=[DEFAULT_DRAFT, DEFAULT_TARGET], help=f"comma-separated models (default {DEFAULT_DRAFT},{DEFAULT_TARGET})")
    p.add_argument("--out", type=_nonempty("out", "folder"), required=True, help="output folder for <hardware>-<engine>-kernel-steps.csv")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_compose_kernels)


def _parser_hardware(sub) -> None:
    p = sub.add_parser("hardware", help="list hardware profiles, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one profile")
    p.add_argument("name", nargs="?", help="profile name or YAML path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_hardware)


def _parser_models(sub) -> None:
    p = sub.add_parser("models", help="list built-in model shapes, or show one")
    p.add_argument("action", nargs="?", choices=["show"], help="show one model")
    p.add_argument("name", nargs="?", help="model name or config.json path (with show)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_models)


def _parser_figures(sub) -> None:
    p = sub.add_parser("figures", help="regenerate every figure (PNG and SVG) with fixed file names")
    p.add_argument("--out", type=_nonempty("out", "folder"), default="figures", help="output folder, created if missing (default: figures)")
    p.add_argument("--only", type=_names("only"),
                   help="comma-separated figure names (see --list)")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument("--json", action="store_true", help="print JSON (the files written, or with --list the names)")
    p.set_defaults(func=commands.run_figures)


def _parser_reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help="recompute every number the reference article quotes; exit 0 only if all match")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=commands.run_reproduce)


#: One function per subcommand, in the order ``specsim --help`` lists them.
_SUBCOMMANDS = (_parser_optimal_gamma, _parser_explain, _parser_speedup, _parser_steptime, _parser_alpha, _parser_capacity, _parser_schedule, _parser_compare, _parser_serve_sim, _parser_serve_sweep, _parser_toy, _parser_acceptance, _parser_measure, _parser_measure_loop, _parser_calibrate, _parser_bench_plan, _parser_calibrate_engine, _parser_compose_kernels, _parser_hardware, _parser_models, _parser_figures, _parser_reproduce)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specsim",
        description="Roofline model of speculative decoding: step times, speedup and the optimal gamma.",
        epilog="Start with: specsim optimal-gamma --alpha 0.8",
    )
    parser.add_argument("--version", action="version", version=f"specsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in _SUBCOMMANDS:
        add(sub)
    for command in sub.choices.values():
        command.add_argument("-v", "--verbose", action="store_true",
                             help="print every source and assumption behind the numbers (by default one line; --json has all)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help, --version or a usage error
        return int(stop.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "action", None) == "show" and not args.name:
        print(f"specsim {args.command} show: error: give a NAME (list them with: specsim {args.command})", file=sys.stderr)
        return 2
    from specsim.cli import report

    report.VERBOSE = bool(getattr(args, "verbose", False))
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. specsim ... | head
        return 0
    except KeyError as err:
        message = err.args[0] if err.args else str(err)
    except (ValueError, OSError) as err:
        message = str(err)
    print(f"specsim {args.command}: error: {message}", file=sys.stderr)
    return 2
