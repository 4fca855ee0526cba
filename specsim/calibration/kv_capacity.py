"""The KV cache specsim gives an engine, judged on what engines printed at start-up in public threads.

``data/kv_capacity_public.csv`` holds server starts that users pasted into public issues, and start-up logs a public
project committed: the engine, GPU, tensor
parallelism, checkpoint, the memory setting where the command gave one, and the KV cache the engine allocated per GPU.
:func:`predicted_gib` is :func:`specsim.serving.capacity.capacity`'s bytes beside the weights for the same server.
Nothing is fitted to these rows.  ``benchmarks/validate_kv_capacity.py`` prints them, and ``tests/test_capacity.py``
recomputes each engine's ``kv_error`` (:class:`specsim.engines.engine.Engine`) from them.
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["DATA", "FIGURES_FROM", "held_out", "load_kv_public", "predicted_gib"]

DATA = Path(__file__).resolve().parent / "data" / "kv_capacity_public.csv"
#: The starts vLLM's start-up figures were taken from (:data:`specsim.engines.vllm.SAMPLER_BYTES_PER_LOGIT`,
#: the memory outside torch): Llama-3.1-8B-Instruct on H100s at TP 1, 2 and 4.  They judge nothing.
FIGURES_FROM = tuple(
    "https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/accuracy/results/"
    f"v0.19.0/logs/meta-llama-llama-3-1-8b---h100-80gb--tp{tp}pp1dp1--8192.log"
    for tp in (1, 2, 4)
)


def held_out(row: dict) -> bool:
    """Whether ``row`` judges the model: it is not one of the starts a figure was taken from."""
    return row["url"] not in FIGURES_FROM


def load_kv_public(path: Path = DATA) -> list[dict]:
    """The rows, the numeric columns as numbers (None: not given)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    for r in rows:
        r["tp"] = int(r["tp"])
        r["kv_gib_printed"] = float(r["kv_gib_printed"])
        r["memory_setting"] = float(r["memory_setting"]) if r["memory_setting"] else None
        r["max_batched_tokens"] = int(r["max_batched_tokens"]) if r["max_batched_tokens"] else None
    return rows


def predicted_gib(row: dict) -> float:
    """specsim's KV cache per GPU for a row's server (plain, or beside its drafter), GiB."""
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    options = {"tp": row["tp"]} if row["tp"] > 1 else {}
    options |= {key: row[key] for key in ("weight_dtype", "kv_dtype") if row[key]}
    drafter = row["drafter"] or None
    dep = Deployment.build(
        row["hardware"],
        row["model"],
        drafter,
        engine=row["engine"],
        target_options=options,
        draft_options={"tp": row["tp"]} if drafter and row["tp"] > 1 else None,
        decode_only=drafter is None,
    )
    cap = capacity(dep, 1024, row["memory_setting"], max_batched_tokens=row["max_batched_tokens"])
    return (cap.free_bytes_with_draft if drafter else cap.free_bytes_without_draft) / 2**30
