"""Transcribe xuhuan51/dspark-spec-serving-benchmark (native DSpark drafter in vLLM 0.26.0, Qwen3-8B, one A30 per arm)
into `vllm bench serve --save-result` JSON lines under examples/bench/public/a30-qwen3-8b-dspark/.

Repository: xuhuan51/dspark-spec-serving-benchmark @ f74b5e9b673736a0f46f2a34fceff91ee38c9835 (read through the stored-file
index; the fetchable snapshot, defa3b68, predates these files).  Files read:
    results/vllm026_qwen3_8b_dspark_serving.csv      the numbers (one row per concurrency, both arms)
    reports/vllm026_dspark_serving_validation.md     setup: A30 24 GiB, Qwen3-8B BF16, draft dspark_qwen3_8b_block7 BF16,
                                                     vLLM 0.26.0, context 2048, 256 output tokens, temperature 0,
                                                     ignore_eos, c = 1, 2, 4, 8, 16, max_num_seqs 4 (c <= 4) and 16
                                                     (c >= 8), baseline and DSpark on two separate A30s; dated 2026-08-05
    benchmark/spec_decode_microbench.py              the client (closed loop of c workers over one fixed chat prompt;
                                                     requests = max(--min-requests 8, --requests-per-concurrency 4 x c))
    scripts/run_vllm_dspark.sh, scripts/run_vllm_local_baseline.sh   the servers (num_speculative_tokens 7, method dspark)

FIELD MAPPING (source field -> vLLM key), per CSV row and arm (baseline_* -> plain.jsonl, dspark_* -> dspark-k7.jsonl):
    concurrency -> max_concurrency; request_rate "inf" (closed loop)
    completed = num_prompts = max(8, 4 x concurrency): the client's defaults (the report's commands set neither
        --min-requests nor --requests-per-concurrency); not in the CSV
    total_output_tokens = completed x 256 (max_tokens 256 with ignore_eos: the client counts 256 per request)
    total_input_tokens = completed x ASSUMED_PROMPT (not recorded; see below)
    {arm}_toks_per_s -> output_throughput; duration = total_output_tokens / output_throughput (derived)
    {arm}_tpot_ms -> median_tpot_ms: the CSV does not say mean or median; the client's per-concurrency ladder.csv, from
        which the compact CSV's three columns (tok/s, TPOT, accepted length) come, holds only tpot_ms_p50 (its
        summary.json also has the mean).  TPOT = (end-to-end - first content chunk) / 255 per request.
    dspark_accepted_length -> spec_decode_acceptance_length (client: 1 + delta accepted / delta drafts of vLLM's
        counters over the run, bonus token included)
    date = "2026-08-05" (the report's date); backend "vllm"; model_id "Qwen/Qwen3-8B" (served as "qwen")

ASSUMED_PROMPT = 37: the one fixed prompt ("Write a detailed but direct explanation of how LLM inference decode works. Use
concrete systems terms and continue until the token budget is exhausted.", about 28 Qwen3 tokens) in Qwen3's chat
template (about 9 more tokens); an estimate, not a count.

    python scripts/public_bench/a30-qwen3-8b-dspark.py RAW_FOLDER     (RAW_FOLDER/results/vllm026_qwen3_8b_dspark_serving.csv)
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

SOURCE = "a30-qwen3-8b-dspark"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
MODEL = "Qwen/Qwen3-8B"
DATE = "2026-08-05"
OUTPUT_TOKENS = 256
ASSUMED_PROMPT = 37
STEPS = 7


def record(c: int, tps: float, tpot_ms: float, al: float | None) -> dict:
    n = max(8, 4 * c)
    out = n * OUTPUT_TOKENS
    rec = {
        "date": DATE,
        "backend": "vllm",
        "model_id": MODEL,
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": c,
        "completed": n,
        "duration": out / tps,
        "total_input_tokens": n * ASSUMED_PROMPT,
        "total_output_tokens": out,
        "output_throughput": tps,
        "median_tpot_ms": tpot_ms,
    }
    if al is not None:
        rec["spec_decode_acceptance_length"] = al
    return rec


def main(raw: Path) -> None:
    rows = list(csv.DictReader((raw / "results" / "vllm026_qwen3_8b_dspark_serving.csv").open()))
    plain = [
        record(int(r["concurrency"]), float(r["baseline_toks_per_s"]), float(r["baseline_tpot_ms"]), None) for r in rows
    ]
    spec = [
        record(
            int(r["concurrency"]),
            float(r["dspark_toks_per_s"]),
            float(r["dspark_tpot_ms"]),
            float(r["dspark_accepted_length"]),
        )
        for r in rows
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    for name, recs in (("plain.jsonl", plain), ("dspark-k7.jsonl", spec)):
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: 2 files, {len(plain) + len(spec)} runs")


SOURCE_YAML = """\
source: a30-qwen3-8b-dspark
title: NVIDIA A30 (one per arm), vLLM 0.26.0 OpenAI server, Qwen3-8B BF16 + native DSpark block drafter (7 tokens)
repository: xuhuan51/dspark-spec-serving-benchmark
commit: "f74b5e9b673736a0f46f2a34fceff91ee38c9835"
paths:
  - results/vllm026_qwen3_8b_dspark_serving.csv
  - reports/vllm026_dspark_serving_validation.md
  - benchmark/spec_decode_microbench.py
  - scripts/run_vllm_dspark.sh
  - scripts/run_vllm_local_baseline.sh
engine: vllm
engine_version: "0.26.0"
engine_spec: vllm@0.26.0   # specsim's --engine for these runs: the release the study names
max_num_seqs: 16
max_batched_tokens: 4096   # the engine's limits as specsim models them: max_num_seqs 16 at c >= 8 (4 at c <= 4, never binding), max_num_batched_tokens 4096
hardware: a30                  # new profile hardware/a30.yaml (NVIDIA A30 datasheet peaks)
gpus: 1                        # per arm: baseline and DSpark served from two separate A30s
tp: 1
parallelism: one A30 per server, TP 1 (target and draft); max_num_seqs 4 for c <= 4, 16 for c >= 8; max_model_len 2048, max_num_batched_tokens 4096
target: qwen3-8b
weight_dtype: bf16
kv_dtype: bf16
drafter: dspark
draft_checkpoint: deepseek-ai/dspark_qwen3_8b_block7   # served from a local copy named dspark_qwen3_8b_block7
load: concurrency
lengths: >-
  one fixed chat prompt (about 37 tokens with Qwen3's chat template: assumed, not recorded), 256 output tokens with
  ignore_eos, temperature 0; closed loop of c = 1, 2, 4, 8, 16 over max(8, 4c) requests (client defaults)
acceptance: recorded (per run, 1 + accepted / drafts from vLLM's counters before and after the run)
runs:
  - {file: plain.jsonl, kind: plain, concurrency: [1, 2, 4, 8, 16]}
  - {file: dspark-k7.jsonl, kind: spec, steps: 7, concurrency: [1, 2, 4, 8, 16]}
mapping: |
  concurrency -> max_concurrency; request_rate "inf"
  completed = num_prompts = max(8, 4 x concurrency)   (client defaults; not in the CSV)
  total_output_tokens = completed x 256; total_input_tokens = completed x 37 (assumed)
  baseline_toks_per_s / dspark_toks_per_s -> output_throughput; duration = total_output_tokens / output_throughput
  baseline_tpot_ms / dspark_tpot_ms -> median_tpot_ms (the client's ladder records only the p50; see notes)
  dspark_accepted_length -> spec_decode_acceptance_length
  date "2026-08-05" (the report's date); backend "vllm"; model_id Qwen/Qwen3-8B
notes: |
  - The source HAS a plain arm: the baseline columns (same vLLM 0.26.0, dtype, payload and max_num_seqs, no
    speculative config), served from a different A30 than the DSpark arm.
  - The CSV holds only tok/s, TPOT and accepted length per concurrency, one repeat; request count, prompt length, TTFT
    and duration are not in it. The request count is the client's default (max(8, 4c): 8, 8, 16, 32, 64), so c = 1
    and 2 are runs of only 8 requests.
  - The CSV's TPOT does not say whether it is a mean or a median. It is written as median_tpot_ms because the client's
    ladder.csv, whose columns the compact CSV mirrors, records tpot_ms_p50 only. One fixed prompt, ignore_eos and a
    constant concurrency make the mean and the median close, but there is no mean_tpot_ms. The reader of the day the
    folder was converted required mean_tpot_ms and refused these records; specsim's reader now judges a run by its
    median TPOT where the mean is absent, and says so ("TPOT ms (median)").
  - num_speculative_tokens 7 (the block size), method "dspark" (vLLM 0.26.0's native DSpark path).
  - The server scripts' defaults differ in gpu_memory_utilization (baseline 0.90, DSpark 0.98); the report says the
    servers had matched budgets per concurrency point. Qwen3 thinking was left on (the default).
  - A30 has no built-in specsim profile: hardware/a30.yaml was added (datasheet peaks; bandwidth_eff 0.8,
    compute_eff 0.6, overhead_s 0.5 ms are the reference article's preset, not measurements of this device).
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
