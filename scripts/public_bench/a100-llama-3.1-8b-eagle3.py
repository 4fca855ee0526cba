"""Transcribe manojarulmurugan/SpecDecoding-Study-vLLM-SGLang (EAGLE-3 at 5 tokens on one A100, a 2^3 factorial of
weights x KV cache x speculation) into `vllm bench serve --save-result` JSON lines under
examples/bench/public/a100-llama-3.1-8b-eagle3/ (moved here from scripts/convert_public_bench.py, with the fields that
transcription dropped added; the file names and the earlier fields' values are unchanged).

manojarulmurugan/SpecDecoding-Study-vLLM-SGLang @ d96e4fb6ecef886add914a3e12204a10603ec6e2,
``phase3_results/runs/core_factorial_*.json`` (288 files; vLLM 0.24.0, one NVIDIA A100-SXM4-80GB, Llama-3.1-8B-Instruct
FP16 and its AWQ-INT4 checkpoint, FP16 or FP8 KV cache, EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B at 5 tokens;
closed loops of 1, 8, 32 and 64 users, 3 repeats, workloads gsm8k, humaneval, rag_shared_prefix).  The mapping (source
field -> vLLM key), per run file:
    completed = measured.num_requests - measured.num_errors; num_prompts = measured.num_requests;
    failed = measured.num_errors; duration = measured.wall_time_s;
    total_output_tokens = measured.total_completion_tokens; total_input_tokens = measured.prompt_tokens_mean x completed
    (the 48 earliest files lack prompt_tokens_mean: the mean of the same (model, workload)'s other files);
    mean_tpot_ms = (measured.e2e_latency_ms.mean - measured.ttft_ms.mean) / (output tokens per request - 1)
    (exact for equal outputs, as gsm8k's and rag's are; humaneval's vary, and its TPOT is then weighted by tokens);
    max_concurrency = config.concurrency; request_rate "inf"; date = env.timestamp_utc (to the second);
    model_id = config.model; backend "vllm";
    measured.ttft_ms {mean, p50, p95, p99} -> mean_ttft_ms, median_ttft_ms, p95_ttft_ms, p99_ttft_ms;
    measured.itl_ms {mean, p50, p95, p99} -> mean_itl_ms, median_itl_ms, p95_itl_ms, p99_itl_ms (gap between streamed
        chunks: a speculative chunk carries several tokens, so ITL ~ TPOT x acceptance length);
    measured.e2e_latency_ms {mean, p50, p95, p99} -> mean_e2el_ms, median_e2el_ms, p95_e2el_ms, p99_e2el_ms;
    measured.throughput_tok_s -> output_throughput (= total_completion_tokens / wall_time_s);
    speculative runs only: measured.accepted_length_tau -> spec_decode_acceptance_length;
        measured.acceptance_rate x 100 -> spec_decode_acceptance_rate (vLLM's key is a percentage);
        measured.spec_num_drafts -> spec_decode_num_drafts.
    Not mapped: goodput_tok_s, request_*_tok_s_mean, emergent_batch_size, kv_cache_usage, queue_depth, num_preemptions,
    accuracy (no vLLM key).

    python scripts/public_bench/a100-llama-3.1-8b-eagle3.py STUDY_FOLDER     (STUDY_FOLDER/phase3_results/runs/*.json)
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

SOURCE = "a100-llama-3.1-8b-eagle3"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
_STATS = (("mean", "mean"), ("median", "p50"), ("p95", "p95"), ("p99", "p99"))


def _latencies(m: dict) -> dict:
    out = {}
    for src, key in (("ttft_ms", "ttft"), ("itl_ms", "itl"), ("e2e_latency_ms", "e2el")):
        for name, stat in _STATS:
            out[f"{name}_{key}_ms"] = m[src][stat]
    return out


def study(folder: Path) -> None:
    runs = [
        json.loads(p.read_text()) for p in sorted((folder / "phase3_results" / "runs").glob("core_factorial_*.json"))
    ]
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
        prompt = m.get("prompt_tokens_mean") or sum(prompts[(c["model"], c["workload"])]) / len(
            prompts[(c["model"], c["workload"])]
        )
        tpot_ms = (m["e2e_latency_ms"]["mean"] - m["ttft_ms"]["mean"]) / (out - 1)
        spec = f["spec_decode"] != "none"
        rec = {
            "date": d["env"]["timestamp_utc"][:19],
            "backend": "vllm",
            "model_id": c["model"],
            "max_concurrency": c["concurrency"],
            "request_rate": "inf",
            "completed": completed,
            "duration": m["wall_time_s"],
            "total_input_tokens": round(prompt * completed),
            "total_output_tokens": int(m["total_completion_tokens"]),
            "mean_tpot_ms": tpot_ms,
        }
        if spec:
            rec["spec_decode_acceptance_length"] = m.get("accepted_length_tau")
        rec |= {"num_prompts": m["num_requests"], "failed": m["num_errors"], "output_throughput": m["throughput_tok_s"]}
        rec |= _latencies(m)
        if spec:
            rec["spec_decode_acceptance_rate"] = m["acceptance_rate"] * 100
            rec["spec_decode_num_drafts"] = int(m["spec_num_drafts"])
        name = (
            f"{f['weight_quant']}-kv{f['kv_quant']}-{'eagle3' if spec else 'plain'}-{c['workload'].split('_')[0]}.jsonl"
        )
        files[name].append(rec)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, records in sorted(files.items()):
        records.sort(key=lambda r: (r["max_concurrency"], r["date"]))
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    lines = []
    for name in sorted(files):
        spec = "-eagle3-" in name
        lines.append(f"  - {{file: {name}, kind: {'spec, steps: 5' if spec else 'plain'}, runs: {len(files[name])}}}")
    (OUT / "source.yaml").write_text(SOURCE_YAML.replace("@RUNS@", "\n".join(lines)))
    print(f"{OUT}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


SOURCE_YAML = """\
source: a100-llama-3.1-8b-eagle3
title: one A100-SXM4-80GB, vLLM 0.24.0 OpenAI server, Llama-3.1-8B-Instruct FP16 / AWQ-INT4 x FP16 / FP8 KV, EAGLE-3 head at 5 tokens
repository: manojarulmurugan/SpecDecoding-Study-vLLM-SGLang
commit: "d96e4fb6ecef886add914a3e12204a10603ec6e2"
paths:
  - phase3_results/runs/core_factorial_*.json     # 288 files
engine: vllm
engine_version: "0.24.0"          # env.engine_version, per run
engine_spec: vllm@0.24.0   # specsim's --engine for these runs: the release every run recorded
hardware: a100-sxm-80gb           # env.gpu_name NVIDIA A100-SXM4-80GB
gpus: 1
tp: 1
max_num_seqs: 256
max_batched_tokens: 2048   # the engine's limits as specsim models them: the launch command sets neither (harness/engines/vllm_adapter.py at 7934c29), so vLLM 0.24.0's defaults for an OpenAI server on an A100 (vllm/engine/arg_utils.py get_batch_defaults: 2048 and 256; A100s are kept out of the 8192 of GPUs with 70 GiB or more, vLLM PR #17885)
memory_util: 0.85   # the engine's share of GPU memory for weights and KV cache as the recipe set it: the harness's gpu_memory_utilization 0.85 (parallelism below)
parallelism: one GPU, OpenAI server, the study's closed-loop harness; max_model_len 8192, gpu_memory_utilization 0.85, prefix caching off
target: llama-3.1-8b              # fp16-* files; w4a16-* files: Meta-Llama-3.1-8B-Instruct-AWQ-INT4/config.json
weight_dtype: null                # fp16-* files fp16; w4a16-* files int4-awq (the config's quantization_config)
kv_dtype: null                    # kvfp16 files fp16, kvfp8 files fp8 (file name)
drafter: eagle3
draft_checkpoint: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
load: concurrency
lengths: >-
  gsm8k 8-shot (about 715 prompt tokens, 256 out), humaneval (about 205 in, 335-374 out, up to 512, EOS not ignored),
  rag_shared_prefix (Spec-Bench questions with a shared prefix, about 700 in, 256 out); greedy; 64 requests at c = 1,
  160 at 8, 320 at 32, 512 at 64; 3 repeats per cell
acceptance: >-
  recorded per run (accepted_length_tau = 1 + accepted / drafts from the server's counters; also acceptance_rate and
  spec_num_drafts)
runs:
@RUNS@
mapping: |
  completed = num_requests - num_errors; num_prompts = num_requests; failed = num_errors; duration = wall_time_s
  total_output_tokens = total_completion_tokens; total_input_tokens = prompt_tokens_mean x completed
    (48 earliest files lack prompt_tokens_mean: mean of the same model/workload's other files)
  mean_tpot_ms = (e2e_latency_ms.mean - ttft_ms.mean) / (total_completion_tokens / completed - 1)
  ttft_ms {mean, p50, p95, p99} -> mean_ttft_ms, median_ttft_ms, p95_ttft_ms, p99_ttft_ms
  itl_ms {mean, p50, p95, p99} -> mean_itl_ms, median_itl_ms, p95_itl_ms, p99_itl_ms
  e2e_latency_ms {mean, p50, p95, p99} -> mean_e2el_ms, median_e2el_ms, p95_e2el_ms, p99_e2el_ms
  throughput_tok_s -> output_throughput
  accepted_length_tau -> spec_decode_acceptance_length; acceptance_rate x 100 -> spec_decode_acceptance_rate;
    spec_num_drafts -> spec_decode_num_drafts (speculative runs)
  config.concurrency -> max_concurrency; request_rate "inf"; env.timestamp_utc -> date; config.model -> model_id
notes: |
  - mean_tpot_ms is derived (the study records TTFT, ITL and end-to-end latency, not TPOT): exact for equal output
    lengths (gsm8k: 256 each; rag: 256 each on the FP16 weights); humaneval's outputs vary, so its TPOT is weighted by
    tokens, and so, by well under 1%, is the AWQ-INT4 weights' rag (252.6-256 tokens a request on average).
  - ITL is the gap between streamed chunks: in the EAGLE-3 runs a chunk carries several tokens, so mean_itl_ms is
    about mean_tpot_ms x acceptance length; in the plain runs ITL and TPOT agree.
  - File names: {weights fp16|w4a16}-kv{fp16|fp8}-{plain|eagle3}-{gsm8k|humaneval|rag}.jsonl, 12 runs each (4
    concurrencies x 3 repeats). w4a16 = hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 with awq_marlin; its
    config.json (Llama-3.1-8B's with the checkpoint's AWQ quantization_config, 4 bits, group 128) is in
    Meta-Llama-3.1-8B-Instruct-AWQ-INT4/.
  - The acceptance is kept in the records; a validation that fits without it should take it away.
  - The engine chose two attention paths (the study's server logs, phase3_results/server_logs/ at d96e4fb, read
    2026-12-03): with an FP16 cache FlashAttention 2 and FULL plus PIECEWISE CUDA graphs in both arms; with an FP8
    cache FlashInfer, where the plain servers still captured FULL graphs but every speculating server logged
    "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention backend FlashInferBackend ...
    setting cudagraph_mode=PIECEWISE" and captured PIECEWISE graphs only. The launch flags are otherwise the same
    (configs/factorial/*.yaml, harness/engines/vllm_adapter.py). specsim does not model that cost (it warns).
deployments:   # the four deployments of these runs, as specsim models each (benchmarks/validate_corpus.py)
  - {name: "fp16 weights, fp16 KV", files: "fp16-kvfp16-*", target: llama-3.1-8b, weight_dtype: fp16, kv_dtype: fp16}
  - {name: "fp16 weights, fp8 KV", files: "fp16-kvfp8-*", target: llama-3.1-8b, weight_dtype: fp16, kv_dtype: fp8}
  - {name: "AWQ-INT4 weights, fp16 KV", files: "w4a16-kvfp16-*", target: Meta-Llama-3.1-8B-Instruct-AWQ-INT4/config.json, kv_dtype: fp16}
  - {name: "AWQ-INT4 weights, fp8 KV", files: "w4a16-kvfp8-*", target: Meta-Llama-3.1-8B-Instruct-AWQ-INT4/config.json, kv_dtype: fp8}
sweep_by: file   # each speculative file is one dataset (gsm8k, humaneval, rag) at one step count; gsm8k's and rag's lengths are alike
"""

if __name__ == "__main__":
    study(Path(sys.argv[1]))
