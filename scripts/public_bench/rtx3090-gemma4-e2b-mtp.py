"""Transcribe LottoLottoLotto/4x3090-llm-benchmarks, campaign vllm026-gemma4-mtp (Gemma-4-E2B-it QAT + its MTP
"assistant" drafter at k = 1, 2, 3, vLLM 0.26.0, one RTX 3090) into `vllm bench serve --save-result` JSON lines under
examples/bench/public/rtx3090-gemma4-e2b-mtp/.

Repository: LottoLottoLotto/4x3090-llm-benchmarks @ bd222811dbbd2bd0552cea7cac52d00b89d04caa (the data was published in
abe16012127e68882114d87b50f4dd327c72ff20).  File read: data/benchmarks.jsonl (schema v2, one row per measured operating
point), the 12 rows with source == "vllm026-gemma4-mtp" (run ids baseline_c{1,4,16}, mtp-k{1,2,3}_c{1,4,16}); also read
HARDWARE.md and METHODOLOGY.md.  Each row is the median over its repeats (5; 20 for the MTP arms at c = 1).

FIELD MAPPING (source field -> vLLM key):
    concurrency -> max_concurrency; request_rate "inf" (closed loop of `concurrency` users)
    completed = num_prompts = ASSUMED_PROMPTS_PER_USER x concurrency: NOT recorded (see below)
    total_input_tokens = completed x prompt_tokens (1024); total_output_tokens = completed x gen_tokens (512)
        (fixed random lengths, ignore_eos)
    output_tok_s -> output_throughput; duration = total_output_tokens / output_throughput (derived)
    req_s -> request_throughput; total_tok_s -> total_token_throughput
    ttft_p50_ms -> median_ttft_ms; tpot_p50_ms -> median_tpot_ms; itl_p50_ms -> median_itl_ms (medians; no means recorded)
    samples.draft_acceptance_pct_median -> spec_decode_acceptance_rate (vLLM's key is a percentage too: accepted / drafted
        tokens x 100, here the median over the repeats)
    spec_decode_acceptance_length = 1 + k x draft_acceptance_pct_median / 100   (k = spec_decode.k; derived)
    date -> date; engine -> backend ("vllm"); model_id = checkpoint_ref ("gemma-4-E2B-it-qat-mobile-ct": the served
        checkpoint's folder name; its Hugging Face owner is not recorded)

ASSUMED_PROMPTS_PER_USER = 4: the rows record no request count.  In the same archive the campaign run with
`vllm bench serve` that records one (laguna-dflash, knobs.num_prompts) mostly sent 4 requests per user (16 at c = 4,
64 at c = 16, 128 at c = 32, 256 at c = 64).  The count scales duration and the totals together; throughputs,
latencies and the acceptance do not depend on it.

    python scripts/public_bench/rtx3090-gemma4-e2b-mtp.py RAW_FOLDER     (RAW_FOLDER/data/benchmarks.jsonl)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _lotto3090 import closed_loop_record

SOURCE = "rtx3090-gemma4-e2b-mtp"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
CAMPAIGN = "vllm026-gemma4-mtp"


def record(row: dict) -> tuple[str, dict]:
    rec = closed_loop_record(row, row["checkpoint_ref"]) | {
        "request_throughput": row["req_s"],
        "output_throughput": row["output_tok_s"],
        "total_token_throughput": row["total_tok_s"],
        "median_ttft_ms": row["ttft_p50_ms"],
        "median_tpot_ms": row["tpot_p50_ms"],
        "median_itl_ms": row["itl_p50_ms"],
    }
    spec = row["spec_decode"]
    if spec is None:
        return "plain.jsonl", rec
    assert spec["method"] == "mtp", spec
    pct = row["samples"]["draft_acceptance_pct_median"]
    rec["spec_decode_acceptance_rate"] = pct
    rec["spec_decode_acceptance_length"] = round(1 + spec["k"] * pct / 100, 10)
    return f"mtp-k{spec['k']}.jsonl", rec


def main(raw: Path) -> None:
    rows = [json.loads(line) for line in (raw / "data" / "benchmarks.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["source"] == CAMPAIGN]
    assert len(rows) == 12, len(rows)
    files: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["concurrency"]):
        assert (row["engine"], row["engine_version"], row["tp"], row["prompt_tokens"], row["gen_tokens"]) == (
            "vllm",
            "0.26.0",
            1,
            1024,
            512,
        ), row["run_id"]
        name, rec = record(row)
        files.setdefault(name, []).append(rec)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, recs in files.items():
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


SOURCE_YAML = """\
source: rtx3090-gemma4-e2b-mtp
title: one RTX 3090, vLLM 0.26.0 (model runner v2) server, Gemma-4-E2B-it QAT (compressed-tensors) + its MTP assistant drafter, k = 1, 2, 3
repository: LottoLottoLotto/4x3090-llm-benchmarks
commit: "bd222811dbbd2bd0552cea7cac52d00b89d04caa"
paths:
  - data/benchmarks.jsonl          # rows with source "vllm026-gemma4-mtp"
  - HARDWARE.md
  - METHODOLOGY.md
engine: vllm
engine_version: "0.26.0"
engine_spec: vllm@0.26.0   # specsim's --engine for these runs: 0.26.0
max_num_seqs: 64
max_batched_tokens: 8192   # the engine's limits as specsim models them: max_num_seqs 64, max_num_batched_tokens 8192 (the launch flags)
hardware: rtx-3090               # new profile hardware/rtx-3090.yaml (GA102 whitepaper peaks)
gpus: 1
tp: 1
parallelism: one RTX 3090 (power-capped 220 W), TP 1, VLLM_USE_V2_MODEL_RUNNER=1, --language-model-only, max_num_seqs 64, max_num_batched_tokens 8192, max_model_len 8192, prefix caching off
target: null                     # Gemma-4-E2B-it is not in specsim's catalog and its config.json was not found (see notes)
weight_dtype: null               # QAT mixed int2/4/8 (compressed-tensors checkpoint gemma-4-E2B-it-qat-mobile-ct); no specsim dtype name
kv_dtype: bf16                   # --kv-cache-dtype auto (the checkpoint's 16-bit dtype)
drafter: mtp
draft_checkpoint: gemma-4-E2B-it-assistant   # folder name as launched; Hugging Face owner not recorded
load: concurrency
lengths: random tokens, 1024 in / 512 out (fixed, ignore_eos), prefix caching off; closed loop of 1, 4, 16 users
acceptance: >-
  recorded as vLLM's draft acceptance rate (accepted / drafted tokens, %), median over the repeats;
  spec_decode_acceptance_length = 1 + k x rate derived from it
runs:
  - {file: plain.jsonl, kind: plain, concurrency: [1, 4, 16]}
  - {file: mtp-k1.jsonl, kind: spec, steps: 1, concurrency: [1, 4, 16]}
  - {file: mtp-k2.jsonl, kind: spec, steps: 2, concurrency: [1, 4, 16]}
  - {file: mtp-k3.jsonl, kind: spec, steps: 3, concurrency: [1, 4, 16]}
mapping: |
  concurrency -> max_concurrency; request_rate "inf"
  completed = num_prompts = 4 x concurrency (ASSUMED: not recorded)
  total_input_tokens = completed x 1024; total_output_tokens = completed x 512
  output_tok_s -> output_throughput; duration = total_output_tokens / output_throughput
  req_s -> request_throughput; total_tok_s -> total_token_throughput
  ttft_p50_ms -> median_ttft_ms; tpot_p50_ms -> median_tpot_ms; itl_p50_ms -> median_itl_ms
  samples.draft_acceptance_pct_median -> spec_decode_acceptance_rate (%)
  spec_decode_acceptance_length = 1 + k x draft_acceptance_pct_median / 100
  date -> date; engine -> backend; checkpoint_ref -> model_id
notes: |
  - Medians only (TTFT, TPOT, ITL p50): there is no mean_tpot_ms, so the reader of the day the folder was converted
    refused these records; specsim's reader now judges a run by its median TPOT where the mean is absent. ITL is per streamed chunk, so it exceeds TPOT in the MTP arms.
  - Each row is the median over repeats: 5 repeats, except the MTP arms at c = 1 (20). Acceptance is the median of the
    per-repeat rates, not the rate of one repeat. At c = 1 the MTP repeats vary widely (k = 2: 195-322 tok/s,
    acceptance 13-59%): the author notes greedy chat outputs were nondeterministic even for the baseline.
  - The request count per run is not recorded: 4 per user is assumed (the archive's vllm bench serve campaign
    laguna-dflash mostly used that), so duration and totals are scaled by that choice; throughputs, latencies and
    acceptance are the source's.
  - The drafter is Gemma 4's MTP "assistant" model with centroid masking of the draft vocabulary (4096 of 262,144
    tokens active), confirmed in the server log per the author.
  - Target config: Gemma-4-E2B-it is not in specsim's catalog. Its config.json (google/gemma-4-E2B-it, or the QAT
    checkpoint's) was looked for in the stored GitHub index (find_files path config.json, searches for gemma4 /
    Gemma4ForConditionalGeneration / its text_config values) and not found as a file: only test fixtures and scripts
    quoting parts of it. No config.json is in this folder, so the runs cannot be modelled until one is supplied
    (E2B text model per those fixtures: 35 layers, hidden 1536, 8 heads, 1 KV head, head_dim 256 / 512 global,
    20 KV-shared layers, sliding window 512, per-layer embeddings of 256, vocabulary 262,144; not verified).
  - The QAT checkpoint mixes int2/int4/int8 weights (compressed-tensors); specsim has no dtype for it.
  - Power limit 220 W per GPU (the rig's default), which lowers the card's clocks under load.
  - RTX 3090 has no built-in specsim profile: hardware/rtx-3090.yaml was added (GA102 whitepaper peaks; bandwidth_eff
    0.8, compute_eff 0.6, overhead_s 0.5 ms are the reference article's preset, not measurements).
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
