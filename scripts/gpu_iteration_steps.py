"""Time engine iterations with chunked prefill on a GPU, and the cost of running passes without full CUDA graphs.

What the serving model (specsim.serving.steady) composes, measured as one pass each:

* ``prefill``  one prompt of P tokens (logits at its last token only), and its kernels alone (the GEMMs at m = P with
  the LM head at one row, SDPA causal attention): how fast prefill runs, against the sources' t(1, P, 0);
* ``chunk``    a chunk of c prompt tokens whose first p0 tokens are already cached: attention over the prefix;
* ``mixed``    b sequences decoding q tokens each over L cached tokens plus one chunk in the same pass, and the same
  b sequences alone (``decode``): the iteration the serving model adds up as decode step + marginal prefill; with
  ``--mixed-floor`` each iteration's kernels alone too (GEMMs over all its tokens, LM head at the sampled rows, SDPA
  per sequence), which an engine's fused elementwise work comes close to;
* ``mode``     a decode pass run three ways: captured whole in one CUDA graph, piecewise (each layer's dense parts
  captured, attention eager between them, as vLLM's CUDAGraphMode.PIECEWISE runs FlashInfer on Ampere), and eager; for
  the target and for a one-layer EAGLE-style head.

Random bf16 weights (timing does not depend on them); medians of CUDA-event times over graph replays (eager modes:
over calls, host launches included).  Writes ``iteration_steps.csv`` and ``log.txt`` under ``--out``.

Rehearsal on a CPU with tiny shapes (the test suite runs it):
  python scripts/gpu_iteration_steps.py --device cpu --dtype fp32 --target tiny-28m --draft tiny-5m --prefill 16,64 \
      --chunks 16@32 --batch 1,2 --context 32 --q 1,2 --mixed-chunks 0@0,16@0 --mode-batch 1 --repeats 2 --out /tmp/it
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specsim.describe.models import get_model  # noqa: E402
from specsim.harness.mixed import MixedPass  # noqa: E402
from specsim.harness.model import DecoderTimingModel, shared_length_mask  # noqa: E402
from specsim.harness.timing import device_name, time_pass  # noqa: E402

COLUMNS = ["part", "model", "b", "q", "L", "c", "p0", "mode", "repeats", "median_ms", "p10_ms", "p90_ms",
           "floor_gemm_ms", "floor_attn_ms"]  # fmt: skip


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def chunks(text: str) -> list[tuple[int, int]]:
    """ "c@p0,c@p0" -> [(c, p0), ...]."""
    return [tuple(int(v) for v in item.split("@")) for item in text.split(",") if item]


def ms(times: list[float]) -> tuple[float, float, float]:
    s = sorted(times)
    pick = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))] * 1e3  # noqa: E731
    return statistics.median(s) * 1e3, pick(0.1), pick(0.9)


def piecewise(mp: MixedPass, dev: torch.device):
    """A callable replaying ``mp`` as a piecewise CUDA graph: each layer's dense parts captured in one memory pool,
    attention run eagerly between them into a static output, the pieces replayed in their capture order."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        mp()  # warm-up on the capture stream
    torch.cuda.current_stream().wait_stream(stream)
    pool = torch.cuda.graph_pool_handle()

    def capture(fn):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            fn()
        return graph

    steps = [capture(mp.embed)]
    layers = []
    for index in range(len(mp.model.layers)):
        pre = capture(lambda: mp.before_attention(index))
        qh = mp.qh
        mp.attention(index)
        out = torch.empty_like(mp.attn)
        out.copy_(mp.attn)
        mp.attn = out
        post = capture(lambda: mp.after_attention(index))
        layers.append((pre, qh, out, post))
    head = capture(mp.logits)

    def run():
        steps[0].replay()
        for index, (pre, qh, out, post) in enumerate(layers):
            pre.replay()
            mp.qh = qh
            mp.attention(index)
            out.copy_(mp.attn)
            mp.attn = out
            post.replay()
        head.replay()

    return run


def iteration_floor(model: DecoderTimingModel, b: int, q: int, L: int, c: int, p0: int, dev, repeats, warmup, graphs):
    """(GEMM ms, attention ms) of an iteration's kernels alone: every layer's four projections at m = b q + c and the LM
    head at the sampled rows (b q, and the chunk's last); SDPA per layer for the decoding sequences (q queries over
    L + q keys) and for the chunk (c queries over p0 + c keys, causal).  A prompt alone is b = 0, p0 = 0."""
    shape, hd, dt = model.shape, model.head_dim, model.dtype
    m = b * q + c
    x = torch.randn(m, shape.hidden_size, dtype=dt, device=dev)
    a = torch.randn(m, model.n_heads * hd, dtype=dt, device=dev)
    h = torch.randn(m, shape.intermediate_size, dtype=dt, device=dev)
    sampled = b * q + (1 if c else 0)
    if b:
        dq = torch.randn(b, model.n_heads, q, hd, dtype=dt, device=dev)
        dkv = torch.randn(b, model.n_kv, L + q, hd, dtype=dt, device=dev)
        dmask = shared_length_mask(q, L + q)
    if c:
        cq = torch.randn(1, model.n_heads, c, hd, dtype=dt, device=dev)
        ckv = torch.randn(1, model.n_kv, p0 + c, hd, dtype=dt, device=dev)
        cmask = shared_length_mask(c, p0 + c)

    def gemms():
        for layer in model.layers:
            F.linear(x, layer.wqkv, layer.bqkv)
            F.linear(a, layer.wo)
            F.linear(x, layer.w_gate_up)
            F.linear(h, layer.w_down)
        F.linear(x[:sampled], model.lm_head)

    def attention():
        for _ in model.layers:
            if b:
                F.scaled_dot_product_attention(dq, dkv, dkv, attn_mask=dmask, enable_gqa=True)
            if c:
                F.scaled_dot_product_attention(cq, ckv, ckv, attn_mask=cmask, enable_gqa=True)

    g = statistics.median(time_pass(gemms, dev, repeats, warmup, graphs)) * 1e3
    return g, statistics.median(time_pass(attention, dev, repeats, warmup, graphs)) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--target", default="llama-3.1-8b")
    ap.add_argument("--draft", default="llama-3.2-1b")
    ap.add_argument("--prefill", default="1,128,512,1024,2048,4096,8192,16384")
    ap.add_argument("--chunks", default="512@2048,2048@2048,512@8192,2048@8192,2048@14336")
    ap.add_argument("--batch", default="1,16,64,128")
    ap.add_argument("--context", default="1024,4096")
    ap.add_argument("--q", default="1,4")
    ap.add_argument("--mixed-chunks", default="0@0,256@0,2048@0,2048@6144")
    ap.add_argument("--most-cached", type=int, default=300_000, help="skip decode batches with b * L above this")
    ap.add_argument("--mode-batch", default="1,16,64")
    ap.add_argument("--mode-context", type=int, default=1024)
    ap.add_argument("--head-vocab", type=int, default=32000)
    ap.add_argument("--parts", default="prefill,chunk,mixed,mode,draft", help="which parts of the grid to run")
    ap.add_argument(
        "--mixed-floor", action="store_true", help="also time each decode and mixed iteration's kernels alone"
    )
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device(args.device)
    graphs = dev.type == "cuda"
    log = open(out / "log.txt", "a", encoding="utf-8")

    def say(text: str) -> None:
        print(text, file=log, flush=True)
        print(text, file=sys.stderr, flush=True)

    say(f"date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}")
    say(f"device: {device_name(dev)}; torch {torch.__version__}; cuda {torch.version.cuda}; dtype {args.dtype}")
    if dev.type == "cuda":
        import subprocess

        query = "--query-gpu=name,memory.total,driver_version,clocks.max.sm"
        smi = subprocess.run(["nvidia-smi", query, "--format=csv"], capture_output=True, text=True, check=False)
        say(smi.stdout.strip() or smi.stderr.strip())
    rows = []
    writer_file = open(out / "iteration_steps.csv", "w", newline="", encoding="utf-8")
    writer = csv.DictWriter(writer_file, fieldnames=COLUMNS)
    writer.writeheader()

    def record(part, model, b, q, L, c, p0, mode, times, floor=(None, None)):
        med, p10, p90 = ms(times)
        row = dict(part=part, model=model.shape.name, b=b, q=q, L=L, c=c, p0=p0, mode=mode, repeats=len(times),
                   median_ms=round(med, 4), p10_ms=round(p10, 4), p90_ms=round(p90, 4),
                   floor_gemm_ms=None if floor[0] is None else round(floor[0], 4),
                   floor_attn_ms=None if floor[1] is None else round(floor[1], 4))  # fmt: skip
        rows.append(row)
        writer.writerow(row)
        writer_file.flush()
        extra = "" if floor[0] is None else f" (kernels: GEMM {floor[0]:.3f} + attention {floor[1]:.3f})"
        say(f"{part:8s} {model.shape.name} b={b} q={q} L={L} c={c} p0={p0} {mode}: {med:.3f} ms{extra}")

    def timed(part, model, b, q, L, c, p0, mode="graph", floor=False):
        t0 = time.perf_counter()
        try:
            mp = MixedPass(model, b, q, L, c, p0)
            if mode == "piecewise":
                run = piecewise(mp, dev)
                times = time_pass(run, dev, args.repeats, args.warmup, False)
            else:
                times = time_pass(mp, dev, args.repeats, args.warmup, mode == "graph" and graphs)
            floors = (model, b, q, L, c, p0, dev, args.repeats, args.warmup, graphs)
            fl = iteration_floor(*floors) if floor else (None, None)
        except torch.OutOfMemoryError:
            say(f"{part} {model.shape.name} b={b} q={q} L={L} c={c} p0={p0} {mode}: skipped, out of memory")
            return
        except RuntimeError as exc:  # a capture that fails: the rest of the run still measures
            say(f"{part} {model.shape.name} b={b} q={q} L={L} c={c} p0={p0} {mode}: failed, {str(exc).splitlines()[0]}")
            return
        finally:
            model.k_cache = model.v_cache = None
            mp = None
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        record(part, model, b, q, L, c, p0, mode if mode != "graph" or graphs else "eager", times, fl)
        say(f"         ({time.perf_counter() - t0:.1f} s)")

    parts = set(args.parts.split(","))
    unknown = parts - {"prefill", "chunk", "mixed", "mode", "draft"}
    if unknown:
        raise SystemExit(f"--parts: unknown {', '.join(sorted(unknown))}; allowed: prefill, chunk, mixed, mode, draft")
    start = time.perf_counter()
    with torch.inference_mode():
        target = DecoderTimingModel(get_model(args.target), dtype=args.dtype, device=args.device)
        for P in ints(args.prefill) if "prefill" in parts else []:
            timed("prefill", target, 0, 1, 0, P, 0, floor=True)
        for c, p0 in chunks(args.chunks) if "chunk" in parts else []:
            timed("chunk", target, 0, 1, 0, c, p0)
        for L in ints(args.context) if "mixed" in parts else []:
            for b in ints(args.batch):
                if b * L > args.most_cached:
                    continue
                for q in ints(args.q):
                    for c, p0 in chunks(args.mixed_chunks):
                        timed("decode" if c == 0 else "mixed", target, b, q, L, c, p0, floor=args.mixed_floor)
        if "mode" in parts:
            for b in ints(args.mode_batch):
                for q in ints(args.q):
                    for mode in ["graph", "piecewise", "eager"] if graphs else ["eager"]:
                        timed("mode", target, b, q, args.mode_context, 0, 0, mode)
            shape = get_model(args.target)
            head = DecoderTimingModel(
                dataclasses.replace(shape, name=f"{shape.name}-1-layer-head", n_layers=1, vocab_size=args.head_vocab),
                dtype=args.dtype,
                device=args.device,
            )
            for b in ints(args.mode_batch):
                for mode in ["graph", "piecewise", "eager"] if graphs else ["eager"]:
                    timed("mode", head, b, 1, args.mode_context, 0, 0, mode)
            del head
        del target
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        if "draft" in parts:
            draft = DecoderTimingModel(get_model(args.draft), dtype=args.dtype, device=args.device)
            for P in ints(args.prefill):
                timed("prefill", draft, 0, 1, 0, P, 0, floor=True)
    writer_file.close()
    say(f"done: {len(rows)} rows in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
