"""Transcribe public speculative-decoding benchmark results into `vllm bench serve --save-result` JSON lines.

Two public repositories committed per-run results of their own harnesses (not vLLM's result format), with plain and
speculative runs of one deployment at several concurrencies.  This script reads their files (a local copy of each
repository's result folder) and writes, per deployment, the fields calibrate-engine reads, in vLLM's keys, to
``examples/bench/public/``: the numbers are the sources' own, only renamed.  The mapping (source field -> vLLM key):

manojarulmurugan/SpecDecoding-Study-vLLM-SGLang @ d96e4fb6ecef886add914a3e12204a10603ec6e2,
``phase3_results/runs/core_factorial_*.json`` (vLLM 0.24.0, one NVIDIA A100-SXM4-80GB, Llama-3.1-8B-Instruct FP16 and
its AWQ-INT4 checkpoint, FP16 or FP8 KV cache, EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B at 5 tokens; closed
loops of 1, 8, 32 and 64 users, 3 repeats, workloads gsm8k, humaneval, rag_shared_prefix):
    completed = measured.num_requests - measured.num_errors; duration = measured.wall_time_s;
    total_output_tokens = measured.total_completion_tokens; total_input_tokens = measured.prompt_tokens_mean x completed
    (the 48 earliest files lack prompt_tokens_mean: the mean of the same cell's other repeats);
    mean_tpot_ms = (measured.e2e_latency_ms.mean - measured.ttft_ms.mean) / (output tokens per request - 1)
    (exact for equal outputs, as gsm8k's and rag's are; humaneval's vary, and its TPOT is then weighted by tokens);
    max_concurrency = config.concurrency; spec_decode_acceptance_length = measured.accepted_length_tau.
keke0712/specdec_rtx5090 @ 39638ec53ed807489cbd9b2bd12d69d01a81a63b, ``results/summary/{matched_baseline,specdec_k5}
_formal_c*.json`` (vLLM, version not stated, one RTX 5090, Qwen3-14B-AWQ with a Qwen3-0.6B draft model at 5 tokens,
V1 model runner and async scheduling off on both sides; closed loops of 1-32 users; one fixed short prompt of about 77
output tokens; the input tokens are not recorded):
    completed = successful_runs; duration = measured_wall_time_s; total_output_tokens = total_output_tokens;
    mean_tpot_ms = tpot_s.mean x 1000; max_concurrency = concurrency; total_input_tokens: not recorded, written as
    ``ASSUMED_PROMPT`` tokens per request (stated in the folder's README); no acceptance length (the source's summary
    files record none).

    python scripts/convert_public_bench.py SOURCE1_FOLDER SOURCE2_FOLDER
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

OUT = Path("examples/bench/public")
#: The RTX 5090 study's prompt length, which it does not record: a one-sentence prompt (assumed).
ASSUMED_PROMPT = 32


def _vllm(model: str, concurrency: int, completed: int, duration: float, prompt: float, output_total: float, tpot_ms: float,
          al: float | None, date: str) -> dict:
    rec = {"date": date, "backend": "vllm", "model_id": model, "max_concurrency": concurrency, "request_rate": "inf",
           "completed": completed, "duration": duration, "total_input_tokens": round(prompt * completed),
           "total_output_tokens": int(output_total), "mean_tpot_ms": tpot_ms}
    if al is not None:
        rec["spec_decode_acceptance_length"] = al
    return rec


def study(folder: Path) -> None:
    runs = [json.loads(p.read_text()) for p in sorted((folder / "phase3_results" / "runs").glob("core_factorial_*.json"))]
    prompts = collections.defaultdict(list)
    for d in runs:
        c, m = d["config"], d["measured"]
        if "prompt_tokens_mean" in m:
            prompts[(c["model"], c["workload"])].append(m["prompt_tokens_mean"])
    files = collections.defaultdict(list)
    for d in runs:
        c, m = d["config"], d["measured"]
        f = c["factors"]
        completed = m["num_requests"] - m["num_errors"]
        out = m["total_completion_tokens"] / completed
        prompt = m.get("prompt_tokens_mean") or sum(prompts[(c["model"], c["workload"])]) / len(prompts[(c["model"], c["workload"])])
        tpot_ms = (m["e2e_latency_ms"]["mean"] - m["ttft_ms"]["mean"]) / (out - 1)
        spec = f["spec_decode"] != "none"
        name = f"{f['weight_quant']}-kv{f['kv_quant']}-{'eagle3' if spec else 'plain'}-{c['workload'].split('_')[0]}.jsonl"
        files[name].append(_vllm(c["model"], c["concurrency"], completed, m["wall_time_s"], prompt, m["total_completion_tokens"],
                                 tpot_ms, m.get("accepted_length_tau") if spec else None, d["env"]["timestamp_utc"][:19]))
    target = OUT / "a100-llama-3.1-8b-eagle3"
    target.mkdir(parents=True, exist_ok=True)
    for name, records in sorted(files.items()):
        records.sort(key=lambda r: (r["max_concurrency"], r["date"]))
        (target / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{target}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


def rtx5090(folder: Path) -> None:
    target = OUT / "rtx5090-qwen3-14b-awq-draft"
    target.mkdir(parents=True, exist_ok=True)
    for prefix, name in (("matched_baseline_formal", "plain.jsonl"), ("specdec_k5_formal", "draft-model.jsonl")):
        records = []
        for p in sorted((folder / "results" / "summary").glob(f"{prefix}_c*.json")):
            d = json.loads(p.read_text())
            records.append(_vllm("Qwen/Qwen3-14B-AWQ", d["concurrency"], d["successful_runs"], d["measured_wall_time_s"],
                                 ASSUMED_PROMPT, d["total_output_tokens"], d["tpot_s"]["mean"] * 1e3, None, p.stem[-22:-7]))
        records.sort(key=lambda r: r["max_concurrency"])
        (target / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{target}: 2 files")


if __name__ == "__main__":
    study(Path(sys.argv[1]))
    rtx5090(Path(sys.argv[2]))
