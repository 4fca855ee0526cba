"""The KV cache specsim gives an engine, against what engines printed at start-up in public threads.

Each row of ``specsim/calibration/data/kv_capacity_public.csv`` (:mod:`specsim.calibration.kv_capacity`) is one server start that a user pasted into a public
issue: the engine and release, GPU, tensor parallelism, checkpoint, its memory setting where the command gave one, and
the KV cache the engine allocated per GPU (vLLM's "Available KV cache memory", SGLang's "KV Cache is allocated ... K
size, V size", TensorRT-LLM's "available KV cache memory when calculating max tokens"), with the thread's address.
specsim's figure is :func:`specsim.serving.capacity.capacity`'s bytes beside the weights (plain, or with the drafter
where the server speculated), under the engine's own rule (:func:`specsim.serving.capacity.memory_share`) or the
setting given.  Nothing is fitted to these rows: they measure the capacity model, which counts weights but not the
activations, CUDA graphs and buffers an engine's start-up profiling subtracts.

    python benchmarks/validate_kv_capacity.py            # per row, then per engine: median and mean of predicted / printed - 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from specsim.calibration.kv_capacity import held_out, load_kv_public, predicted_gib  # noqa: E402


def main(argv=None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = load_kv_public()
    errors: dict = {}
    print(
        f"{'engine':<22} {'hardware':<14} {'TP':>2}  {'model':<22} {'setting':>7}  {'printed GiB':>11}  "
        f"{'specsim GiB':>11}  {'error':>7}  thread"
    )
    for r in rows:
        got = predicted_gib(r)
        e = got / r["kv_gib_printed"] - 1
        if held_out(r):
            errors.setdefault(r["engine"].split("@")[0], []).append(e)
        setting = "default" if r["memory_setting"] is None else f"{r['memory_setting']:g}"
        print(
            f"{r['engine']:<22} {r['hardware']:<14} {r['tp']:>2}  {r['model']:<22} {setting:>7}  "
            f"{r['kv_gib_printed']:>11.2f}  {got:>11.2f}  {e:>+7.1%}  {'' if held_out(r) else '(figures from) '}{r['url']}"
        )
    print(
        "\nspecsim's KV cache over the printed one, less 1, per engine (rows; not the starts marked 'figures from', "
        "which vLLM's start-up figures were taken from): median, mean, range"
    )
    for engine, e in errors.items():
        e = np.asarray(e)
        print(
            f"  {engine:<8} ({e.size:>2}): median {np.median(e):+.1%}, mean {e.mean():+.1%}, {e.min():+.1%} to {e.max():+.1%}"
        )
    allof = np.concatenate([np.asarray(v) for v in errors.values()])
    print(f"  all      ({allof.size:>2}): median {np.median(allof):+.1%}, mean absolute {np.abs(allof).mean():.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
