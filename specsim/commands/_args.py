"""From parsed arguments to library objects: the deployment, the acceptance and the model options a flag names."""

from __future__ import annotations

import argparse
import dataclasses

from ..defaults import DEFAULT_DRAFT

__all__ = ["deployment", "harness", "model_options", "resolve_acceptance"]


def resolve_acceptance(args: argparse.Namespace):
    """(value, label): --acceptance or --metrics as an Acceptance, else --alpha (the library default if unset)."""
    from ..acceptance import default_acceptance, parse_acceptance
    from ..metrics import acceptance_from_page

    if getattr(args, "metrics_gamma", None) is not None and getattr(args, "metrics", None) is None:
        raise ValueError("--metrics-gamma goes with an SGLang --metrics page")
    if getattr(args, "metrics_model", None) is not None and getattr(args, "metrics", None) is None:
        raise ValueError("--metrics-model goes with a --metrics page")
    if getattr(args, "acceptance", None) is not None:
        acc = parse_acceptance(args.acceptance)
    elif getattr(args, "metrics", None) is not None:
        acc = acceptance_from_page(args.metrics, args.metrics_gamma, getattr(args, "metrics_model", None))
    elif args.alpha is not None:
        return args.alpha, f"alpha {args.alpha:g}"
    else:
        return default_acceptance(_drafter_kind(getattr(args, "draft", None)))
    return acc, acc.describe()


def _drafter_kind(draft: str | None) -> str:
    """The drafter kind --draft names (a model name or path is a draft model)."""
    from ..drafters import DRAFTERS

    kind = str(draft or DEFAULT_DRAFT).partition(":")[0].lower()
    return kind if kind in DRAFTERS else "draft_model"


def model_options(args: argparse.Namespace, prefix: str = "") -> dict:
    """get_model keyword arguments from --weight-dtype, --kv-dtype, --tp, --moe-effective-experts (or their --draft- forms)."""
    keys = {"weight_dtype": "weight_dtype", "kv_dtype": "kv_dtype", "tp": "tp"}
    opts = {key: getattr(args, prefix + attr, None) for key, attr in keys.items()}
    if not prefix:
        opts["routing_effective_experts"] = getattr(args, "moe_effective_experts", None)
    return {k: v for k, v in opts.items() if v is not None}


def deployment(args: argparse.Namespace, *, draft: bool = True):
    """The deployment the flags describe: --hardware, --target (or --model), --draft, --timing, --engine and the
    model options; ``draft`` False builds one that only decodes (``steptime``)."""
    from ..deployment import Deployment
    from ..engines import get_engine
    from ..report import progress

    ngram = getattr(args, "ngram_cpu_ns", None)
    draft_options = model_options(args, "draft_") if draft else None
    if draft and "tp" not in draft_options and get_engine(args.engine).draft_shares_tp and (args.tp or 1) > 1:
        draft_options["tp"] = args.tp  # the engine's draft worker shares the target's tensor-parallel group
    dep = Deployment.build(args.hardware, getattr(args, "target", None) or getattr(args, "model", None),
                           getattr(args, "draft", None), args.timing, args.engine, args.engine_overhead_ms,
                           target_options=model_options(args), draft_options=draft_options,
                           ngram_cpu_s_per_token=None if ngram is None else ngram * 1e-9, progress=progress, decode_only=not draft)
    overlap = getattr(args, "engine_overlap", None)
    engine = dep.engine.with_spec(getattr(args, "engine_round_ms", None), getattr(args, "engine_step_ms", None),
                                  getattr(args, "engine_seq_us", None), None if overlap is None else overlap == "on",
                                  getattr(args, "engine_seq_step_us", None))
    if engine is not dep.engine and dep.engine.name == "none":
        raise ValueError("--engine none adds no engine time: the --engine-round-ms/-step-ms/-seq-us/-seq-step-us/-overlap "
                         "flags need an engine")
    return dataclasses.replace(dep, engine=engine)


def harness():
    """The timing harness, or one line saying how to install torch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("the timing harness needs torch: pip install 'specsim[harness]' (for the CPU build: pip install torch "
                         "--index-url https://download.pytorch.org/whl/cpu)") from None
    from .. import harness as module

    return module
