"""What an FP8 KV cache changes in a speculative round beyond its bytes, where an engine serves it on other kernels.

vLLM serves an FP8 cache on FlashInfer where FlashAttention cannot take it (sm 8.x; sm 12.x before 0.28), and FlashInfer
without TRT-LLM attention supports only single-token decode graphs before 0.33 (from 0.33.0 its FA2 decode below sm 9.0
takes speculative queries in full graphs: flashinfer.py 0.33.0 L1187-1191), so vLLM drops to piecewise CUDA graphs when
speculating (config/compilation.py, 0.24.0 L1387-1401).  Model Runner V2, vLLM's default runner for dense models from
0.24/0.25, graphs the draft steps after a round's first only in FULL mode and runs them with no graph otherwise
(v1/worker/gpu/spec_decode/autoregressive/speculator.py, 0.24.0 L82-95, vllm-project/vllm#39773).  A round of gamma
draft steps then pays

    t_round += (gamma - 1) t_g,    t_g = (draft layers) x (the engine's graph-less time per layer)

(:func:`graphless_draft_s`, the one home of the term; the engine says where and how much:
:meth:`specsim.engines.engine.Engine.graphed_draft_steps` where the first step has no graph either, as vLLM 0.15-0.25
run a draft model (and PARD) on the V1 runner and 0.31-0.33 a draft model on Model Runner V2, neither of which graphs
it with any cache, for s t_g;
:meth:`specsim.engines.engine.Engine.graphless_draft_steps`).  The piecewise target passes and FlashInfer's kernels are
not modelled; the serial rounds FlashInfer's metadata build forces are (:meth:`~specsim.engines.engine.Engine.serial_rounds`).
"""

from __future__ import annotations

import numpy as np

from specsim.engines import REGISTRY


def graphless_draft(dep) -> tuple[float, str]:
    """(t_g, why): the seconds each draft step after a round's first adds where ``dep``'s engine runs it without a CUDA
    graph for its drafter, target cache and GPU (the engine's per-layer time times the drafter network's layers), and
    why with the source of the size; (0.0, "") elsewhere.

    >>> from specsim.speculation.deployment import Deployment
    >>> fp8 = {"kv_dtype": "fp8"}
    >>> a100 = Deployment.build("a100-sxm-80gb", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0", target_options=fp8)
    >>> round(graphless_draft(a100)[0] * 1e3, 3)
    0.425
    >>> graphless_draft(Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0", target_options=fp8))
    (0.0, '')
    """
    engine = REGISTRY.get(dep.engine.name)  # None for engine none
    if engine is None or dep.drafter is None or dep.draft is None:
        return 0.0, ""
    per_layer, why = engine.graphless_draft_steps(dep.engine, dep.hardware, dep.target, dep.drafter.kind)
    return per_layer * dep.draft.n_layers, why


def graphless_draft_s(dep, steps: object) -> np.ndarray | float:
    """(s - 1) t_g, seconds: what a round of ``steps`` draft steps adds where ``dep``'s engine runs every draft pass
    after the first without a CUDA graph (:func:`graphless_draft`; 0 elsewhere, and for a drafter of one pass); s t_g
    where it runs the first without one too (:meth:`~specsim.engines.engine.Engine.graphed_draft_steps`: vLLM 0.15-0.25's
    draft model and PARD, 0.31-0.33's draft model).

    >>> from specsim.speculation.deployment import Deployment
    >>> a100 = Deployment.build("a100-sxm-80gb", "llama-3.1-8b", "eagle3", engine="vllm@0.24.0",
    ...                         target_options={"kv_dtype": "fp8"})
    >>> [round(float(t) * 1e3, 3) for t in graphless_draft_s(a100, [1, 3, 5])]
    [0.0, 0.85, 1.7]
    """
    per_step, _ = graphless_draft(dep)
    if not per_step:
        return 0.0
    graphed = REGISTRY[dep.engine.name].graphed_draft_steps(dep.engine, dep.drafter.kind)
    passes = np.asarray(dep.drafter.draft_passes(np.asarray(steps, dtype=float)), dtype=float)
    return np.maximum(passes - graphed, 0.0) * per_step


def graphless_provenance(dep) -> list[str]:
    """The -v line saying which draft steps run without a CUDA graph and the source of their time (none elsewhere)."""
    _, why = graphless_draft(dep)
    return [f"draft steps without a CUDA graph: {why}"] if why else []


def graphless_assumed(dep) -> list[str]:
    """The graph-less draft steps' size said by default where it moves a round at batch 1 by more than 10%: the engine
    runs those steps without a CUDA graph by its source, but what each costs is an estimate (the engine's per-layer
    time: specsim's own eager-PyTorch harness, not the engine's compiled model), and an assumption that moves the
    answer that much is said without -v.

    >>> from specsim.speculation.deployment import Deployment
    >>> graphless_assumed(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.34.0"))
    []
    >>> graphless_assumed(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0"))[0][:61]
    'assumed: each draft pass vllm 0.33.0 (preset vllm@latest) run'
    """
    from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS

    per_step, _ = graphless_draft(dep)
    if not per_step:
        return []
    steps = min(3, dep.drafter.max_steps or 3)  # a reference round the drafter can run
    r = dep.round_time(1, DEFAULT_CONTEXT_TOKENS, steps)
    added, total = float(np.asarray(r.graphless_s)), float(np.asarray(r.total_s))
    if added <= 0.10 * (total - added):
        return []
    return [
        f"assumed: each draft pass {dep.engine.label} runs without a CUDA graph costs {per_step * 1e3:.2f} ms more "
        f"({per_step / dep.draft.n_layers * 1e3:.3f} ms a layer: eager PyTorch in specsim's own harness, not the "
        "engine's compiled model, which launches fewer kernels; no public measurement of the engine's own): it makes "
        f"a round of {steps} draft step{'s' if steps > 1 else ''} at batch 1 {total / (total - added):.2f}x as long "
        "(-v gives which passes and why)"
    ]


def fp8_cache_notes(dep) -> list[str]:
    """The note on an FP8 KV cache where it costs more than its bytes: no FP8 tensor cores to read it, or an engine
    that serves it on other kernels and graphs (:meth:`specsim.engines.engine.Engine.fp8_cache_backend`), saying what
    of that is modelled (graph-less draft steps, serial rounds) and what is not."""
    if dep.target.kv_dtype != "fp8":
        return []
    # Found on the public A100 study (docs/reports/2026-12-02-concurrency.md), after looking at it: the serial rounds
    # are modelled (Engine.serial_rounds, from 2026-12-03), and the draft steps Model Runner V2 runs without a CUDA
    # graph (Engine.graphless_draft_steps, sized off the harness, not the study); the kernels and the piecewise target
    # passes are not.
    engine = REGISTRY.get(dep.engine.name)  # None for engine none
    why = "" if engine is None else engine.fp8_cache_backend(dep.hardware)
    graphless_s, _ = graphless_draft(dep)
    graphed = engine is None or dep.drafter is None or engine.graphed_draft_steps(dep.engine, dep.drafter.kind)
    which = "" if graphed else " (all of them)"
    modelled = (
        f"; the draft steps it runs without a CUDA graph are modelled, {graphless_s * 1e3:.3f} ms more each"
        + (which or " after a round's first")
        + " (-v gives the source of the size)"
        if graphless_s
        else ""
    )
    modelled += f"; its rounds are modelled serial: {dep.engine.serial_why}" if dep.engine.serial_why else ""
    name, gpu = dep.target.name, dep.hardware.name
    if dep.hardware.peak_fp8_flop_per_s is None:
        return [
            f"{name}: an FP8 KV cache on {gpu}, which has no FP8 tensor cores, is counted at half the bytes; its "
            "attention kernels dequantize it, which can cost more than it saves (vLLM 0.24 on an A100: speculative "
            f"TPOT 60% longer at concurrency 1 than with an FP16 cache){why}: "
            + ("the kernels and the piecewise passes are not modelled" if why else "not modelled")
            + modelled
        ]
    if why:
        return [
            f"{name}: an FP8 KV cache on {gpu} is counted at half the bytes{why}: the kernels and the piecewise passes "
            "are not modelled" + modelled
        ]
    return []
