"""The flags of the ``specsim`` commands: argument types that refuse bad input with the allowed range, and the flag
groups several commands share.  Each command declares its own flags beside its handler (:mod:`specsim.cli.model`
and the other command modules); :mod:`specsim.cli.main` assembles the parser from them."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from typing import Callable

from specsim.core.defaults import (
    ARTICLE_CONTEXT,
    DEFAULT_BATCHES,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_DRAFT,
    DEFAULT_GAMMA_MAX,
    DEFAULT_HARDWARE,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_TARGET,
    UnsetInt,
)
from specsim.core.limits import (
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_GAMMA,
    MAX_RATE_PER_S,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_TP,
    repeated,
)
from specsim.describe.models import KV_DTYPE_CHOICES, WEIGHT_DTYPE_CHOICES
from specsim.engines import DEFAULT_ENGINE, ENGINE_NAMES, PRESETS, EnginePreset, get_engine
from specsim.engines.trtllm import FREE_GPU_MEMORY_FRACTION
from specsim.engines.vllm import MEMORY_UTILIZATION_SAID as VLLM_MEMORY_SAID
from specsim.serving.capacity import DEFAULT_MEMORY_UTILIZATION
from specsim.speculation.acceptance import DEFAULT_SIBLING_FACTOR
from specsim.speculation.drafters import NGRAM_CPU_S_PER_TOKEN, default_acceptance_help
from specsim.timing import DEFAULT_TIMING, TIMING_CHOICES

#: --memory-util's help, wherever a command takes it.
MEMORY_UTIL_HELP = (
    "the engine's memory setting: vLLM's --gpu-memory-utilization (a share of the device for weights, its start-up "
    "and KV cache) and SGLang's --mem-fraction-static (for weights and KV cache), TensorRT-LLM's "
    "free_gpu_memory_fraction (a share of what the weights leave); "
    f"default: the engine's own: vLLM's gpu_memory_utilization default ({VLLM_MEMORY_SAID}; from 0.34.0 the whole "
    "device less a margin, its extensible KV cache's), SGLang's mem_fraction_static from its reserve by "
    f"GPU, TP and drafter, TensorRT-LLM's {FREE_GPU_MEMORY_FRACTION}; {DEFAULT_MEMORY_UTILIZATION} with --engine none"
)


__all__ = [
    "ENGINE_CHOICES",
    "MAX_RATES",
    "MAX_SERVE_RUNS",
    "add_acceptance_args",
    "add_deployment_args",
    "add_load_args",
    "given",
    "Unset",
    "UnsetInt",
    "add_memory_args",
    "add_model_args",
    "add_round_cost_args",
    "add_serving_args",
    "engine_limits",
    "limits_and_source",
    "add_timing_args",
    "add_tree_args",
    "alpha_type",
    "batches_type",
    "context_type",
    "csv_text",
    "engine_type",
    "fraction",
    "gamma_max_type",
    "output_len_type",
    "gamma_type",
    "int_at_least",
    "int_list",
    "names",
    "nonempty",
    "nonneg_number",
    "number",
    "positive_number",
    "rate",
    "rate_list",
    "concurrency_list",
    "spread_type",
    "add_workload_arg",
    "workload_type",
]


ENGINE_CHOICES = ", ".join(list(ENGINE_NAMES) + [k for k in PRESETS if "@" in k])
#: What --max-num-seqs and --max-batched-tokens default to (specsim.engines.default_limits: each engine's own).
LIMITS_SEQS_HELP = "the engine's own on the GPU: vLLM's 256 or 1024, SGLang's 48 speculating, TensorRT-LLM's 2048"
LIMITS_TOKENS_HELP = (
    "the engine's own on the GPU: vLLM's 2048 or 8192, SGLang's chunked_prefill_size by GPU memory (prompt tokens only), "
    "TensorRT-LLM's 8192"
)


def alpha_type(text: str) -> float:
    value = number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"alpha must be in [0, 1], got {text}")
    return value


def spread_type(text: str) -> float:
    """A standard deviation of the acceptance rate across prompts (``--acceptance-spread``)."""
    value = number(text)
    if not 0.0 <= value <= 0.5:
        raise argparse.ArgumentTypeError(
            f"acceptance spread must be in [0, 0.5] (a rate's standard deviation), got {text}"
        )
    return value


def number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def gain_type(text: str) -> float:
    """A speedup to require: 1 (any gain) up to the most any round gives (MAX_GAMMA + 1 tokens a pass)."""
    value = number(text)
    if not 1.0 <= value <= MAX_GAMMA + 1:
        raise argparse.ArgumentTypeError(f"must be a speedup in [1, {MAX_GAMMA + 1}], got {text}")
    return value


def overhead_ms(text: str) -> float:
    """An engine's time per iteration beside its kernels, ms: at most the fit's bound (engines.base.HOST_STEP_UPPER_S)."""
    from specsim.engines.base import HOST_STEP_UPPER_S

    value = number(text)
    if not 0 <= value <= HOST_STEP_UPPER_S * 1e3:
        raise argparse.ArgumentTypeError(f"must be in [0, {HOST_STEP_UPPER_S * 1e3:g}] ms, got {text}")
    return value


def nonneg_number(text: str) -> float:
    value = number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def int_at_least(minimum: int, what: str, maximum: int = 2**31 - 1, why: str = "") -> Callable[[str], int]:
    """A parser of integers in [minimum, maximum]; ``why`` (" (...)") follows the range where its lower end needs a
    reason."""

    def parse(text: str) -> int:
        shown = text if len(text) <= 30 else f"a {len(text)}-character value"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{what} must be an integer in [{minimum}, {maximum}]{why}, got {shown!r}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{what} must be an integer in [{minimum}, {maximum}]{why}, got {shown}")
        return value

    parse.__name__ = what
    return parse


def list_items(text: str, what: str) -> list[str]:
    """The items of a comma-separated list, an empty one (``1,,4``, a trailing comma) refused by name (it was
    dropped)."""
    items = [item.strip() for item in text.split(",")]
    if not any(items):  # nothing at all: the caller's "needs a list" line
        return []
    if len(items) > 1 and "" in items:
        raise argparse.ArgumentTypeError(
            f"{what} has an empty item in {text!r}: give values separated by single commas"
        )
    return items


def once_each(values: list, what: str, text: str) -> list:
    """``values`` (a list flag's, parsed), one given twice however written (4,4 or 4,4.0) refused by name: it was
    answered twice."""
    twice = repeated(values)
    if twice:
        shown = f"{twice[0]:g}" if isinstance(twice[0], (int, float)) else str(twice[0])
        raise argparse.ArgumentTypeError(f"{what} lists {shown} more than once in {text!r}: give each value once")
    return values


def int_list(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], list[int]]:
    one = int_at_least(minimum, what, maximum)

    def parse(text: str) -> list[int]:
        items = list_items(text, what)
        if not items:
            raise argparse.ArgumentTypeError(
                f"{what} needs a comma-separated list of integers >= {minimum}, got {text!r}"
            )
        return once_each([one(item) for item in items], what, text)

    parse.__name__ = what
    return parse


def csv_text(values) -> str:
    return ",".join(map(str, values))


def fraction(text: str) -> float:
    value = number(text)
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


gamma_type = int_at_least(0, "gamma", MAX_GAMMA)


gamma_max_type = int_at_least(0, "gamma-max", MAX_GAMMA)


# At least 2 where a trace's requests may have 1: every request of --output-len has the same length, and TPOT is timed
# over the tokens after the first, so a load of 1-token requests has no TPOT or ITL to answer with.
output_len_type = int_at_least(2, "output-len", MAX_CONTEXT, " (TPOT is timed over the tokens after the first)")


class Unset(list):
    """A list flag's default that the user did not give (an explicit value parses to a plain list): how a command
    tells its --batch default from a --batch that clashes with --concurrency."""


def given(value: object) -> bool:
    """Whether a flag's value was given on the command line rather than left at its :class:`Unset` default."""
    return value is not None and not isinstance(value, (Unset, UnsetInt))


def refuse_gamma_with_gamma_max(args, command: str) -> None:
    """Refuse ``--gamma`` beside ``--gamma-max`` in ``command`` (explain, compare, serve-sim, serve-sweep): one fixes the
    gamma, the other bounds the search for the best one, which then does not run (the bound was taken without a
    word)."""
    if getattr(args, "gamma", None) is not None and "--gamma-max" in flags_given(args, command):
        raise ValueError("--gamma-max bounds the search for the best gamma, and --gamma fixes it: drop one")


def flags_given(args, command: str, besides: tuple = ()) -> list[str]:
    """The flags of ``command`` the user typed (``args.typed_flags``, as :func:`specsim.cli.main.main` records them,
    whatever their value) or whose value in ``args`` is not the parser's default (what a calibration file set, or a
    caller that built ``args`` itself), but for the destinations ``besides``: for a mode that uses few of a command's
    flags to refuse the others by name rather than ignore them."""
    import argparse

    from specsim.cli.main import build_parser

    sub = next(a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction))

    typed = getattr(args, "typed_flags", frozenset())

    def default(a):  # as argparse leaves it: a string default goes through the flag's type
        return a.type(a.default) if isinstance(a.default, str) and callable(a.type) else a.default

    return [
        a.option_strings[-1]
        for a in sub.choices[command]._actions
        if a.option_strings
        and a.dest not in besides
        and a.dest not in ("help", "verbose")
        and (getattr(args, a.dest, a.default) != default(a) or not typed.isdisjoint(a.option_strings))
    ]


context_type = int_at_least(0, "context", MAX_CONTEXT)


batches_type = int_list(1, "batch", MAX_BATCH)


def add_deployment_args(
    p: argparse.ArgumentParser, *, defaults: bool = True, batch: bool = True, context: bool = True, timed: bool = True
) -> None:
    # --hardware, --target, --draft, --timing and --engine stay unset when not given, so that a --calibration file can
    # refuse the ones that name another deployment; the library's defaults apply (Deployment.build).
    p.add_argument(
        "--hardware",
        help=f"built-in profile name or path to a YAML profile (default {DEFAULT_HARDWARE}; list: specsim hardware)",
    )
    p.add_argument(
        "--target", help=f"target model: built-in name or path to a Hugging Face config.json (default {DEFAULT_TARGET})"
    )
    p.add_argument(
        "--draft",
        help=f"drafter: a draft model (built-in name or config.json), eagle, eagle3 (or eagle3:HEAD/config.json), "
        "mtp (the target's own MTP layers), ngram, peagle (P-EAGLE; peagle:HEAD/config.json), pard (or "
        "pard:MODEL), dflash (or dflash:DRAFTER/config.json), dspark (or dspark:DRAFTER/config.json) or suffix "
        f"(suffix decoding) (default: the model catalog's draft for a built-in target, as specsim models lists it; "
        f"else {DEFAULT_DRAFT})",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="a calibrate-engine --out file: the fitted profile, engine terms and measured acceptance of your engine "
        "(its hardware, target, tensor parallelism, timing and engine; flags naming others are refused)",
    )
    p.add_argument(
        "--draft-checkpoint",
        metavar="ID",
        help="the drafter's checkpoint for engine configurations (default: the draft model's, or a known "
        "EAGLE head for the target)",
    )
    p.add_argument(
        "--ngram-cpu-ns",
        type=nonneg_number,
        metavar="NS",
        help=f"with --draft ngram: CPU nanoseconds per cached token scanned per round (default "
        f"{NGRAM_CPU_S_PER_TOKEN * 1e9:.2g}, vLLM PR #56732)",
    )
    if batch:
        p.add_argument(
            "--batch",
            type=batches_type,
            default=Unset(DEFAULT_BATCHES) if defaults else None,
            help=f"comma-separated batch sizes (default {','.join(map(str, DEFAULT_BATCHES))})",
        )
    if context:
        p.add_argument(
            "--context",
            type=context_type,
            # A calibration's runs' own where they are of one workload's lengths (cli.args.calibrated_context).
            default=UnsetInt(DEFAULT_CONTEXT_TOKENS, ARTICLE_CONTEXT) if defaults else None,
            help=f"cached tokens per sequence, L (default {DEFAULT_CONTEXT_TOKENS}: a {DEFAULT_INPUT_TOKENS}-token prompt plus "
            f"half of {DEFAULT_OUTPUT_TOKENS} generated)",
        )
    add_model_args(p, draft=True)
    add_timing_args(p, timed)
    if timed:  # (an answer that times nothing, capacity, takes no step-time source and no engine times)
        add_round_cost_args(p)


def add_load_args(p: argparse.ArgumentParser, instead: str = "instead of --batch") -> None:
    """--concurrency or --rate (the answer at a load instead of per decode batch) with the benchmark's lengths and the
    engine's scheduling limits; ``instead``: what the loads replace in this command, as its help says it."""
    from specsim.answers.load import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS

    load = p.add_mutually_exclusive_group()
    load.add_argument(
        "--concurrency",
        type=int_list(1, "concurrency", MAX_BATCH),
        nargs="?",
        const=list(DEFAULT_BATCHES),
        help="answer at these closed-loop loads (users, as vllm bench serve --max-concurrency; alone: "
        f"{','.join(map(str, DEFAULT_BATCHES))}): TPOT, ITL, TTFT and throughput with and without speculation, "
        f"prefill included; {instead}",
    )
    load.add_argument("--rate", type=rate_list, help=f"answer at these Poisson request rates (requests/s); {instead}")
    p.add_argument(
        "--input-len",
        type=int_at_least(1, "input-len", MAX_CONTEXT),
        help=f"prompt tokens of every request at --concurrency/--rate (default {DEFAULT_INPUT_TOKENS}, the reference "
        "article's; vllm bench serve's --random-input-len); --workload gives a distribution instead",
    )
    p.add_argument(
        "--output-len",
        type=output_len_type,
        help=f"output tokens of every request (default {DEFAULT_OUTPUT_TOKENS}, the article's; --random-output-len)",
    )
    p.add_argument(
        "--max-num-seqs",
        type=int_at_least(1, "max-num-seqs", MAX_BATCH),
        default=None,
        help=f"the engine's sequences in flight at most, both arms (default: {LIMITS_SEQS_HELP}); more users queue",
    )
    add_prefix_hit_arg(p)
    p.add_argument(
        "--max-batched-tokens",
        type=int_at_least(1, "max-batched-tokens", MAX_CONTEXT),
        default=None,
        help=f"tokens per iteration, decode plus prefill chunks (SGLang's --chunked-prefill-size; default: {LIMITS_TOKENS_HELP})",
    )


def prefix_hit_type(text: str) -> float:
    """``--prefix-hit``: a share in [0, 1] (:func:`specsim.serving.limits.check_prefix_hit`), else one line."""
    from specsim.serving.limits import check_prefix_hit

    try:
        return check_prefix_hit(text, "--prefix-hit")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_prefix_hit_arg(p: argparse.ArgumentParser) -> None:
    """``--prefix-hit``: the share of prompt tokens the engine's prefix cache serves (the one flag for it)."""
    p.add_argument(
        "--prefix-hit",
        type=prefix_hit_type,
        metavar="SHARE",
        help="share of each prompt's tokens served from the engine's prefix cache, in [0, 1]: those are not prefilled, "
        "the rest attend over them (default 0: every prompt token prefilled; a --calibration's: the share its runs "
        "were fitted with)",
    )


def limits_and_source(args: argparse.Namespace, preset, hardware, offline: bool = False):
    """(the engine's limits, where those not given come from, the flags not given): --max-num-seqs and
    --max-batched-tokens, each one not given at the engine's default on ``hardware``, which for a --calibration's
    preset is the limits its runs were fitted under (:func:`specsim.serving.steady.engine_limits`)."""
    from specsim.serving.steady import check_limits
    from specsim.serving.steady import engine_limits as limits_of

    flags = ("--max-num-seqs", "--max-batched-tokens")
    given = (getattr(args, "max_num_seqs", None), getattr(args, "max_batched_tokens", None))
    missing = [flag for flag, value in zip(flags, given) if value is None]
    limits, where = limits_of(preset, hardware, offline, *given)
    if len(missing) < 2:
        check_limits(preset, limits, ("--max-batched-tokens", "--max-num-seqs"))
    if getattr(args, "prefix_hit", None) is not None:  # (the limits' label says it where it is not 0)
        limits = replace(limits, prefix_hit=args.prefix_hit)
        where = f"{where}; the prefix-cache hit share as given" if where and args.prefix_hit else where
    return limits, where, missing


def memory_limits(args: argparse.Namespace, dep) -> tuple:
    """(max_batched_tokens, max_num_seqs) for a memory check: those given, else a --calibration's (its preset's
    ``served_limits``, as :func:`limits_and_source` has them, and watch's
    capacity), else None each: the engine's own (:func:`specsim.serving.capacity.capacity`)."""
    given = (getattr(args, "max_batched_tokens", None), getattr(args, "max_num_seqs", None))
    if dep.engine.served_limits is None:
        return given
    limits, _, _ = limits_and_source(args, dep.engine, dep.hardware)
    return limits.max_batched_tokens, limits.max_num_seqs


def engine_limits(args: argparse.Namespace, preset, hardware, offline: bool = False):
    """(the engine's limits, a clause naming where those not given come from, :func:`limits_and_source`)."""
    limits, where, missing = limits_and_source(args, preset, hardware, offline)
    return limits, (f" ({where}; {' and '.join(missing)} to set)" if missing else "")


def engine_type(text: str) -> EnginePreset:
    """``--engine``, resolved here once: the preset it names (keeping the text, :attr:`EnginePreset.named`), which every
    command hands on as it is."""
    try:
        return get_engine(text)
    except ValueError as err:  # one line naming the engines and versions known
        raise argparse.ArgumentTypeError(str(err)) from None


def add_model_args(p: argparse.ArgumentParser, *, draft: bool) -> None:
    """Precision, tensor parallelism and routing skew; unset means what the config.json says (and TP 1)."""
    tp = int_at_least(1, "tp", MAX_TP)
    p.add_argument(
        "--weight-dtype",
        choices=WEIGHT_DTYPE_CHOICES,
        help="storage of the target's linear layers (default: the config.json's torch_dtype or quantization_config)",
    )
    p.add_argument(
        "--kv-dtype", choices=KV_DTYPE_CHOICES, help="the target's KV-cache dtype (default: its activation dtype)"
    )
    p.add_argument("--tp", type=tp, help="tensor-parallel GPUs for the target (default 1)")
    p.add_argument(
        "--moe-effective-experts",
        type=number,
        metavar="E_EFF",
        help="effective number of experts for skewed routing (default: uniform over all experts)",
    )
    p.add_argument(
        "--moe-routing-correlation",
        type=number,
        metavar="RHO",
        help="share of its predecessor's experts a sequence's next token reuses, in [0, 1) (default 0: "
        "independent routing, the bound; 0.2 is the fit to public MoE sweeps, not the default: "
        "docs/reports/2026-12-01-routing-default.md)",
    )
    if draft:
        p.add_argument(
            "--draft-tp",
            type=tp,
            help="tensor-parallel GPUs for the draft: 1 or the target's --tp (default: what the engine does with "
            "this drafter, the target's in vLLM, SGLang and TensorRT-LLM; the output names the choice)",
        )
        p.add_argument(
            "--draft-weight-dtype",
            choices=WEIGHT_DTYPE_CHOICES,
            help="the draft's weight storage (default: its config; a head derived from the target: the target's "
            "16-bit precision; MTP: the target's)",
        )
        p.add_argument(
            "--draft-kv-dtype",
            choices=KV_DTYPE_CHOICES,
            help="the draft's KV-cache dtype (default: a head's and, on vLLM and SGLang, whose one cache setting holds "
            "both, a draft model's: the target's; else its config)",
        )


def add_timing_args(p: argparse.ArgumentParser, timed: bool = True) -> None:
    """--engine, and where an answer is timed (``timed``), --timing and --engine-overhead-ms."""
    if timed:
        _add_timing_source(p)
    p.add_argument(
        "--engine",
        type=engine_type,
        metavar="ENGINE[@VERSION]",
        help=f"serving engine and version whose CPU time, round costs and kernels apply: {ENGINE_CHOICES} "
        f"(default {DEFAULT_ENGINE}, its current release; none: add nothing)"
        if timed
        else f"serving engine and version whose memory share and start-up apply: {ENGINE_CHOICES} (default "
        f"{DEFAULT_ENGINE}, its current release; none: 0.9 of the device, no start-up)",
    )
    if timed:
        p.add_argument(
            "--engine-overhead-ms",
            type=overhead_ms,
            help="the engine's time per iteration, ms, replacing the --engine preset's fitted value",
        )


def _add_timing_source(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timing",
        metavar="SOURCE",
        help=f"step-time source: {TIMING_CHOICES} (default {DEFAULT_TIMING}: the roofline for decode steps, "
        "measured kernels for the cost of verification; kernels for a MoE target of 10B+ active parameters at "
        "tensor parallelism that they compose; see docs/model/step-time-sources.md)",
    )


def add_round_cost_args(p: argparse.ArgumentParser) -> None:
    """Overrides of the engine's host work per speculative round (README, Fidelity: the fitted values)."""
    p.add_argument(
        "--engine-round-ms", type=nonneg_number, metavar="MS", help="engine host time per speculative round, ms"
    )
    p.add_argument("--engine-step-ms", type=nonneg_number, metavar="MS", help="engine host time per draft step, ms")
    p.add_argument(
        "--engine-seq-us", type=nonneg_number, metavar="US", help="engine host time per sequence per round, us"
    )
    p.add_argument(
        "--engine-seq-step-us", type=nonneg_number, metavar="US", help="engine time per sequence per draft step, us"
    )
    p.add_argument(
        "--engine-overlap",
        choices=["on", "off"],
        help="whether the engine overlaps a round's host work with the GPU (default: as the version does)",
    )


def workload_type(text: str) -> str:
    """A workload's name in the one catalogue (:mod:`specsim.core.workloads`; ``code`` is code-completion's old name)."""
    from specsim.core.workloads import get_workload

    try:
        return get_workload(text).name
    except ValueError as err:  # one line naming the workloads
        raise argparse.ArgumentTypeError(str(err)) from None


def add_workload_arg(p: argparse.ArgumentParser, *, at_load_only: bool, default: str | None = None) -> None:
    """The one --workload: a name of :mod:`specsim.core.workloads`, giving the drafter's published acceptance and, where
    the answer is at a load (all of a serving command's; a model command's at --concurrency or --rate, ``at_load_only``),
    the requests' prompt and output lengths."""
    from specsim.core.defaults import DEFAULT_WORKLOAD
    from specsim.core.workloads import WORKLOADS

    gives = (
        "the requests' prompt and output lengths, and the drafter's published acceptance on it"
        if not at_load_only
        else "the drafter's published acceptance on it and, at --concurrency or --rate, the requests' prompt and output "
        "lengths"
    )
    default_said = (
        f"default {DEFAULT_WORKLOAD}"
        if not at_load_only
        else f"default {DEFAULT_WORKLOAD}'s acceptance, with --input-len and --output-len at a load"
    )
    p.add_argument(
        "--workload",
        type=workload_type,
        default=default,
        metavar="WORKLOAD",
        help=f"{', '.join(WORKLOADS)}: {gives} ({default_said}; code is code-completion's old name; reasoning reads "
        "math's acceptance; sources: docs/deployments/acceptance.md, specsim.core.workloads)",
    )


def _alpha_help() -> str:
    """--alpha's help: every drafter kind's published default, which needs every kind's class (so it is built only when
    help is printed; :meth:`specsim.cli.main._Parser.format_help`)."""
    return f"per-token acceptance rate in [0, 1] (default: {default_acceptance_help()})"


def add_acceptance_args(p: argparse.ArgumentParser, *, workload: bool = True) -> None:
    """One alpha, per-position rates, or a saved /metrics page (one of them; alpha defaults to the library's), and
    with ``workload`` the --workload whose published acceptance applies when none of them is given."""
    if workload:
        add_workload_arg(p, at_load_only=True)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--alpha", type=alpha_type, help=_alpha_help)  # a callable: resolved when help is printed
    group.add_argument(
        "--acceptance",
        metavar="RATES",
        help="per-position acceptance, P(drafted token k accepted) for k = 1, 2, ... as vLLM's per-position "
        "counters give it (e.g. 0.92,0.81,0.70); gamma stops at the last position given",
    )
    group.add_argument(
        "--metrics",
        metavar="FILE",
        help="a saved /metrics page: vLLM's spec_decode counters (per-position when present) or SGLang's "
        "spec_accept_length (then give --metrics-gamma)",
    )
    p.add_argument(
        "--metrics-gamma",
        type=int_at_least(1, "metrics-gamma", MAX_GAMMA),
        help="with an SGLang --metrics page: the --speculative-num-steps it was measured at",
    )
    p.add_argument(
        "--metrics-model",
        metavar="NAME",
        help="with a --metrics page holding several models' counters: the model_name label to read",
    )


def add_memory_util(p) -> None:
    """--memory-util, the engine's memory setting, wherever a command sizes a KV cache (a parser or an argument group)."""
    p.add_argument("--memory-util", type=fraction, default=None, help=MEMORY_UTIL_HELP)


def add_memory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-context",
        type=int_at_least(1, "max-context", MAX_CONTEXT),
        help="tokens each sequence reserves (prompt + completion), for the memory check (default: --context)",
    )
    add_memory_util(p)


def add_tree_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tree",
        default="chain",
        metavar="SPEC",
        help="chain (default: the gamma search) or topk:K,depth:D,tokens:N: the largest token tree; the best "
        "tree within it (top-k <= K, depth <= D, verified tokens <= N) is chosen per batch size",
    )
    p.add_argument(
        "--sibling-factor",
        type=fraction,
        help=f"tree acceptance of the r-th ranked sibling relative to the first, per rank (default "
        f"{DEFAULT_SIBLING_FACTOR:g}, an assumption)",
    )


def add_serving_args(p: argparse.ArgumentParser, *, lengths: bool = True) -> None:
    """The flags of serve-sim and serve-sweep; ``lengths`` False leaves --workload and --requests unset (a trace gives them)."""
    from specsim.core.defaults import DEFAULT_WORKLOAD
    from specsim.serving.simulator import DEFAULT_REQUESTS

    add_acceptance_args(p, workload=False)
    add_deployment_args(p, batch=False, context=False)
    add_workload_arg(p, at_load_only=False, default=DEFAULT_WORKLOAD if lengths else None)
    p.add_argument(
        "--requests",
        type=int_at_least(1, "requests", MAX_REQUESTS),
        default=DEFAULT_REQUESTS if lengths else None,
        help=f"requests to simulate (default {DEFAULT_REQUESTS})",
    )
    p.add_argument("--seed", type=int_at_least(0, "seed", MAX_SEED), default=0, help="random seed (default 0)")
    p.add_argument(
        "--gamma",
        type=int_at_least(1, "gamma", MAX_GAMMA),
        help="fixed gamma (default: the optimal gamma per running batch size)",
    )
    p.add_argument(
        "--gamma-max",
        type=int_at_least(1, "gamma-max", MAX_GAMMA, " (the speculative arm speculates; the plain arm runs beside it)"),
        default=DEFAULT_GAMMA_MAX,
        help=f"largest gamma of the per-batch schedule (default {DEFAULT_GAMMA_MAX})",
    )
    p.add_argument(
        "--max-num-seqs",
        type=int_at_least(1, "max-num-seqs", MAX_BATCH),
        default=None,
        help=f"sequences in flight at most, both arms (default: {LIMITS_SEQS_HELP})",
    )
    p.add_argument(
        "--max-batched-tokens",
        type=int_at_least(1, "max-batched-tokens", MAX_BATCH),
        default=None,
        help=f"tokens per iteration for decode plus prefill chunks (default: {LIMITS_TOKENS_HELP})",
    )
    add_prefix_hit_arg(p)
    add_memory_util(p)
    p.add_argument("--slo-ttft-ms", type=positive_number, help="time-to-first-token objective, ms (> 0)")
    p.add_argument("--slo-tpot-ms", type=positive_number, help="time-per-output-token objective, ms (> 0)")
    p.add_argument("--json", action="store_true", help="print JSON")


def positive_number(text: str) -> float:
    value = number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


#: Rates one serve-sweep simulates (each is two full simulations).
MAX_RATES = 64


#: serve-sim's independent runs at most (the default is the library's: specsim.serving.simulator.DEFAULT_RUNS).
MAX_SERVE_RUNS = 100


def rate(text: str) -> float:
    value = positive_number(text)
    if value > MAX_RATE_PER_S:
        raise argparse.ArgumentTypeError(f"a request rate must be in (0, {MAX_RATE_PER_S:g}] per second, got {text}")
    return value


def rate_list(text: str) -> list[float]:
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"rates needs a comma-separated list of request rates > 0, got {text!r}")
    if len(items) > MAX_RATES:
        raise argparse.ArgumentTypeError(
            f"rates lists {len(items):,} rates; at most {MAX_RATES} per sweep (each is two "
            "simulations): split the sweep"
        )
    return once_each([rate(item) for item in list_items(text, "rates")], "rates", text)


def concurrency_list(text: str) -> list[int]:
    """serve-sweep's closed loops: users each, at most MAX_RATES of them (each is two simulations per run)."""
    users = int_list(1, "concurrency", MAX_BATCH)(text)
    if len(users) > MAX_RATES:
        raise argparse.ArgumentTypeError(
            f"concurrency lists {len(users):,} loads; at most {MAX_RATES} per sweep (each is two simulations): split "
            "the sweep"
        )
    return users


def names(what: str):
    """A comma-separated list of names, refused when it names none (--only ',' once meant every figure)."""

    def parse(text: str) -> list[str]:
        found = [n.strip() for n in text.split(",") if n.strip()]
        if not found:
            raise argparse.ArgumentTypeError(f"--{what} needs a comma-separated list of names, got {text!r}")
        return once_each(found, what, text)  # a name twice was drawn and listed twice

    parse.__name__ = what
    return parse


def nonempty(what: str, kind: str = "file"):
    """A path flag's value, refused when empty: from a shell, --out '' is an empty argument that was once skipped."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"--{what} needs a {kind} name, got an empty one")
        return text

    parse.__name__ = what
    return parse
