"""A lookup drafter's scan where an engine runs it on the GPU instead of the CPU.

vLLM's Model Runner V2 runs n-gram drafting from 0.32.0, and suffix decoding from 0.34.0, as Triton kernels over each
request's token ids, launched on the main stream after the sampler (:meth:`specsim.engines.engine.Engine.gpu_lookup`
says where, with the source).  The drafter's CPU scan (``host_s``) is then not charged; the kernels' time is, in the
round's fixed part, after the verification pass it waits for:

    t_lookup = (bytes the scan reads) / (the profile's achieved bandwidth)

the bytes from the drafter (:meth:`~specsim.speculation.drafters.base.Drafter.lookup_bytes`: each sequence's token
ids, int32), the bandwidth the roofline's (``bandwidth_eff x peak_bytes_per_s``).  An estimate: a memory-bound scan,
not a measurement of the kernels; their launch latency (two launches a round) is not counted.
"""

from __future__ import annotations

import numpy as np

from specsim.engines import REGISTRY


def gpu_lookup(dep) -> str:
    """Why ``dep``'s engine runs its drafter's lookup on the GPU ("" where the host scans, or no engine)."""
    engine = REGISTRY.get(dep.engine.name)  # None for engine none
    if engine is None or dep.drafter is None:
        return ""
    return engine.gpu_lookup(dep.engine, dep.drafter.kind)


def gpu_lookup_s(dep, batch: object, context: object) -> np.ndarray | float | None:
    """t_lookup, seconds a round's lookup kernels take on the GPU per (batch, context); None where the engine leaves
    the lookup to the host (the drafter's ``host_s`` is charged there).

    >>> from specsim.speculation.deployment import Deployment
    >>> on_gpu = Deployment.build("h100-sxm", "llama-3.1-8b", "ngram", engine="vllm@0.33.0")
    >>> round(float(gpu_lookup_s(on_gpu, 64, 4000)) * 1e6, 3)  # 64 x 4000 x 4 bytes at 0.8 x 3.35 TB/s
    0.382
    >>> gpu_lookup_s(Deployment.build("h100-sxm", "llama-3.1-8b", "ngram", engine="vllm@0.31.0"), 64, 4000) is None
    True
    """
    if not gpu_lookup(dep):
        return None
    return np.asarray(dep.drafter.lookup_bytes(batch, context), dtype=float) / dep.hardware.bytes_per_s


def drafter_lookup_s(dep, batch: object, context: object) -> tuple:
    """(the drafter's CPU seconds, its lookup kernels' GPU seconds) a round of ``dep`` pays per (batch, context): the
    drafter's ``host_s`` where the host scans, the kernels' :func:`gpu_lookup_s` where the engine runs them."""
    on_gpu = gpu_lookup_s(dep, batch, context)
    return (dep.drafter.host_s(batch, context), 0.0) if on_gpu is None else (0.0, on_gpu)


def gpu_lookup_provenance(dep) -> list[str]:
    """The -v line saying where the lookup runs and what its time is made of (none where the host scans)."""
    why = gpu_lookup(dep)
    if not why:
        return []
    return [
        f"drafter lookup on the GPU: {why}; its CPU scan is not charged, its kernels are, after the verification "
        f"pass: the token ids it reads ({dep.drafter.lookup_bytes(1, 1):g} bytes a cached token a sequence) at the "
        f"profile's {dep.hardware.bytes_per_s / 1e12:.2f} TB/s (an estimate of a memory-bound scan, not measured; "
        "kernel launches not counted)"
    ]
