"""Timing one forward pass per (batch, tokens per sequence, context), written as tidy CSV rows.

For each configuration: allocate a KV cache for b sequences of L + q tokens,
run ``warmup`` untimed passes, then time ``repeats`` passes of q new tokens per
sequence on top of L cached ones.  On a GPU each pass is bracketed by CUDA
events after a device synchronisation (optionally replaying a captured CUDA
graph, which removes CPU launch overhead the way serving engines do); on a CPU
by ``time.perf_counter``.  The median is the step time; the 10th and 90th
percentiles give the spread.  Configurations whose weights, cache and
activations would not fit in device memory are skipped with a note.
"""

from __future__ import annotations

import datetime as _dt
import os
import statistics
import sys
import time
from typing import Callable, Iterable

import numpy as np
import torch

from specsim.core.names import given_as
from specsim.describe.models import ModelShape
from specsim.harness import defaults
from specsim.harness.model import TORCH_DTYPES, DecoderTimingModel, shared_length_mask

__all__ = ["CSV_COLUMNS", "check_free_memory", "device_name", "measure_sweep", "pass_bytes", "time_pass"]

CSV_COLUMNS = [
    "model",
    "params",
    "n_layers",
    "hidden_size",
    "intermediate_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "vocab_size",
    "tie_embeddings",
    "qkv_bias",
    "batch",
    "tokens_per_seq",
    "context",
    "dtype",
    "device",
    "device_name",
    "torch_version",
    "date",
    "cuda_graphs",
    "pass_kind",
    "compiled",
    "repeats",
    "median_s",
    "p10_s",
    "p90_s",
    "min_s",
    "floor_gemm_s",
    "floor_attn_s",
    "floor_s",
]


def device_name(device: torch.device) -> str:
    """The accelerator's name, or the CPU's model name, labelled as such."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return f"CPU: {line.split(':', 1)[1].strip()} ({torch.get_num_threads()} threads)"
    except OSError:
        pass
    return f"CPU ({torch.get_num_threads()} threads)"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_pass(
    run: Callable[[], object], device: torch.device, repeats: int, warmup: int, cuda_graphs: bool = False
) -> list[float]:
    """Seconds per call of ``run`` over ``repeats`` timed calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        run()
    if cuda_graphs and device.type == "cuda":
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            run()  # one more warm-up on the capture stream
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            run()
        run = graph.replay
        run()
    times = []
    for _ in range(repeats):
        _sync(device)
        if device.type == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
    return times


def _free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def check_device_and_memory(shapes: list[ModelShape], device: str, dtype: str) -> "torch.device":
    """The torch device, after checking that it exists and that the models' weights fit in 80% of its memory.

    Raises ValueError (one line) instead of letting torch allocate for minutes or fail with a traceback.
    """
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{given_as('device')} {device!r} is not a torch device (use cpu or cuda)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{given_as('device')} cuda was asked for, but torch sees no CUDA device")
        total = torch.cuda.get_device_properties(dev.index or 0).total_memory
        where = torch.cuda.get_device_name(dev.index or 0)
    elif dev.type == "cpu":
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        where = "this machine's RAM"
    else:
        raise ValueError(f"{given_as('device')} {device!r}: the harness runs on cpu or cuda")
    from specsim.describe.models import BYTES_PER_ELEMENT

    need = sum(s.params * BYTES_PER_ELEMENT[dtype] for s in shapes)
    if need > 0.8 * total:
        names = " + ".join(s.name for s in shapes)
        raise ValueError(
            f"{names} needs {need / 1e9:.1f} GB of {dtype} weights; {where} has {total / 1e9:.1f} GB "
            "(the harness uses at most 80%): pick a smaller model or another device"
        )
    return dev


def pass_bytes(shape: ModelShape, dtype: str, batch: int, capacity: int, tokens_per_seq: int) -> float:
    """Bytes a pass of ``batch`` sequences needs beyond the weights: a KV cache of ``capacity`` tokens per sequence
    (:meth:`DecoderTimingModel.allocate`), and the logits and MLP activations of ``tokens_per_seq`` new tokens (the
    largest temporaries), with 10% slack."""
    element = torch.tensor([], dtype=TORCH_DTYPES[dtype]).element_size()
    cache = 2 * shape.n_layers * batch * capacity * shape.n_kv_heads * shape.head_dim * element
    return cache + 1.1 * batch * tokens_per_seq * (shape.vocab_size + 3 * shape.intermediate_size) * element * 2


def check_free_memory(need_bytes: float, dev: torch.device, what: str) -> None:
    """ValueError (one line) when ``need_bytes`` are not free on ``dev``: checked before allocating, as a pass that
    does not fit would make torch allocate for minutes, swap, or end in an out-of-memory traceback."""
    free = _free_bytes(dev)
    if need_bytes > free:
        raise ValueError(
            f"{what} needs {need_bytes / 1e9:,.1f} GB; "
            f"{free / 1e9:,.1f} GB are free on {'the GPU' if dev.type == 'cuda' else 'this machine'}: "
            "pick a smaller batch, context or token count"
        )


def kernel_floor(
    model: DecoderTimingModel, b: int, q: int, L: int, dev: torch.device, repeats: int, warmup: int, cuda_graphs: bool
) -> tuple[float, float]:
    """(GEMM seconds, attention seconds): the pass's kernels timed alone in the same run, median of ``repeats``.

    The GEMMs are every layer's four projections (its own weights, so nothing stays in cache that would not in the
    pass) and the LM head on a (b, q) batch of activations; attention is SDPA over every layer's cached keys with the
    pass's own mask (none at q = 1, a lower-right causal bias at q > 1: the engine pass's kernels, whichever pass is timed).  What the pass takes
    beyond their sum is its own overhead: element-wise work, cache writes, launches.
    """
    import torch.nn.functional as F

    shape, hd = model.shape, model.head_dim
    span = L + q
    x = torch.randn(b, q, shape.hidden_size, dtype=model.dtype, device=dev)
    attn_in = torch.randn(b, q, model.n_heads * hd, dtype=model.dtype, device=dev)
    mlp_in = torch.randn(b, q, shape.intermediate_size, dtype=model.dtype, device=dev)
    queries = torch.randn(b, model.n_heads, q, hd, dtype=model.dtype, device=dev)
    mask = shared_length_mask(q, span)  # the kernels of the engine pass, whichever pass is timed

    def gemms():
        for layer in model.layers:
            F.linear(x, layer.wqkv, layer.bqkv)
            F.linear(attn_in, layer.wo)
            F.linear(x, layer.w_gate_up)
            F.linear(mlp_in, layer.w_down)
        F.linear(x, model.lm_head)

    def attention():
        for index in range(len(model.layers)):
            F.scaled_dot_product_attention(
                queries,
                model.k_cache[index, :b, :, :span],
                model.v_cache[index, :b, :, :span],
                attn_mask=mask,
                enable_gqa=True,
            )

    return (
        statistics.median(time_pass(gemms, dev, repeats, warmup, cuda_graphs)),
        statistics.median(time_pass(attention, dev, repeats, warmup, cuda_graphs)),
    )


def measure_sweep(
    shape: ModelShape,
    batches: Iterable[int],
    tokens_per_seq: Iterable[int],
    contexts: Iterable[int],
    dtype: str = defaults.MEASURE_DTYPE,
    device: str = defaults.MEASURE_DEVICE,
    repeats: int = defaults.MEASURE_REPEATS,
    warmup: int = defaults.MEASURE_WARMUP,
    cuda_graphs: bool = False,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    kind: str = "engine",
    compile: bool = False,
    floor: bool = False,
) -> list[dict]:
    """Time every (b, q, L) of the grid; one CSV-ready dict per configuration that fits.

    ``kind`` is the pass (:data:`~specsim.harness.model.PASS_KINDS`), ``compile`` compiles each layer, and ``floor``
    also times the pass's GEMMs and attention alone (:func:`kernel_floor`) into the ``floor_*`` columns.
    """
    if compile and warmup < 1:  # the first pass of a compiled model compiles it: timed, it would be minutes, not a step
        raise ValueError(
            f"{given_as('compile')} needs {given_as('warmup')} of at least 1: the first pass of each shape compiles "
            "the model, and that pass must not be timed"
        )
    dev = check_device_and_memory([shape], device, dtype)
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    model = DecoderTimingModel(shape, dtype=dtype, device=device, seed=seed, kind=kind, compile=compile)
    stamp = {
        "model": shape.name,
        "params": shape.params,
        "n_layers": shape.n_layers,
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "n_heads": shape.n_heads,
        "n_kv_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab_size,
        "tie_embeddings": shape.tie_embeddings,
        "qkv_bias": shape.qkv_bias,
        "dtype": dtype,
        "device": dev.type,
        "device_name": device_name(dev),
        "torch_version": torch.__version__,
        "date": _dt.date.today().isoformat(),
        "cuda_graphs": bool(cuda_graphs and dev.type == "cuda"),
        "pass_kind": kind,
        "compiled": bool(compile),
    }
    grid = [(b, q, L) for b in batches for q in tokens_per_seq for L in contexts]
    rows = []
    gen = torch.Generator(device="cpu").manual_seed(seed)
    for i, (b, q, L) in enumerate(grid, start=1):
        tag = f"[{i}/{len(grid)}] {shape.name} b={b} q={q} L={L}"
        need = pass_bytes(shape, dtype, b, L + q, q)
        if need > _free_bytes(dev):
            say(f"{tag}: skipped, needs {need / 1e9:.1f} GB beyond the weights and that much is not free")
            continue
        try:
            model.allocate(b, L + q)
            tokens = torch.randint(0, shape.vocab_size, (b, q), generator=gen).to(dev)
            lengths = torch.full((b,), L, dtype=torch.long, device=dev)
            times = time_pass(
                lambda: model(tokens, lengths, span=L + q, uniform=True), dev, repeats, warmup, cuda_graphs
            )
        except torch.OutOfMemoryError:
            model.k_cache = model.v_cache = None
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            say(f"{tag}: skipped, out of memory")
            continue
        median = statistics.median(times)
        gemm_s, attn_s = kernel_floor(model, b, q, L, dev, repeats, warmup, cuda_graphs) if floor else (None, None)
        rows.append(
            {
                **stamp,
                "batch": b,
                "tokens_per_seq": q,
                "context": L,
                "repeats": repeats,
                "median_s": median,
                "p10_s": float(np.percentile(times, 10)),
                "p90_s": float(np.percentile(times, 90)),
                "min_s": min(times),
                "floor_gemm_s": gemm_s,
                "floor_attn_s": attn_s,
                "floor_s": None if gemm_s is None else gemm_s + attn_s,
            }
        )
        over = (
            f"; kernel floor {rows[-1]['floor_s'] * 1e3:.3f} ms, pass/floor {median / rows[-1]['floor_s']:.2f}"
            if floor
            else ""
        )
        say(
            f"{tag}: {median * 1e3:.3f} ms (p10 {rows[-1]['p10_s'] * 1e3:.3f}, p90 {rows[-1]['p90_s'] * 1e3:.3f}){over}"
        )
    model.k_cache = model.v_cache = None
    return rows
