"""Transcribe keke0712/specdec_rtx5090 (Qwen3-14B-AWQ with a Qwen3-0.6B draft model at 5 tokens, one RTX 5090) into
`vllm bench serve --save-result` JSON lines under examples/bench/public/rtx5090-qwen3-14b-awq-draft/.

keke0712/specdec_rtx5090 @ 39638ec53ed807489cbd9b2bd12d69d01a81a63b (no snapshot could be fetched; read through the
stored-file index): ``results/summary/*.json`` (one per run: closed loops of 1-32 users, one fixed short prompt, about
77 output tokens, greedy), ``results/crossover_summary.csv`` (one row per run: the same latency percentiles and, for
the speculative runs, the draft counters read from the server's Prometheus page before and after the run) and
``results/telemetry/*.prom`` (those Prometheus pages, read to check which server served each run).

Which runs are which (read in the telemetry, 2026-12-03; the earlier transcription took the first as plain):
    * ``matched_baseline_formal_c*`` (2026-08-17), which the study calls its matched plain baseline, were served by the
      speculating server: their Prometheus pages carry the same ``process_start_time_seconds`` (1786951680.16) as the
      ``specdec_k5_formal`` runs', its ``vllm:spec_decode_num_drafts_total`` rises by 1920 over the 64 requests at
      concurrency 1 (28530 to 30450, as a speculative run's 30 rounds a request), and their KV usage equals the
      speculative runs' (``kv_max_pct`` 0.190 and 0.760 at 1 and 4 users, against 0.41 for plain servers at 4).  They
      are speculative runs and are not transcribed.
    * ``matched_baseline_formal_rerun{1,2}_c{4,16}`` (2026-08-22) ran on a server without speculation (its page has no
      ``vllm:spec_decode_*`` series; process start 1787396432.28 for rerun1) on the V1 model runner with async
      scheduling off, as the speculating server: **plain.jsonl**.
    * ``specdec_k5_formal_c*`` (2026-08-17, 1-32 users) and ``specdec_k5_formal_rerun{1,2}_c{4,16}`` (2026-08-22):
      **draft-model.jsonl**.
    * ``default_vllm_formal*`` (the study's arm A, default vLLM: V2 model runner, async scheduling on) is a different
      engine path from the speculating server's, and is not transcribed.

The mapping (source field -> vLLM key), per summary file:
    completed = successful_runs; num_prompts = requested_runs; failed = failed_runs; duration = measured_wall_time_s;
    total_output_tokens = total_output_tokens; max_concurrency = concurrency; request_rate "inf";
    mean_tpot_ms = tpot_s.mean x 1000; total_input_tokens = ``PROMPT`` x completed; date = the file name's timestamp
    (YYYYMMDD_HHMMSS); model_id "Qwen/Qwen3-14B-AWQ"; backend "vllm";
    ttft_s {mean, median_p50, p95} x 1000 -> mean_ttft_ms, median_ttft_ms, p95_ttft_ms;
    e2e_s {mean, median_p50, p95} x 1000 -> mean_e2el_ms, median_e2el_ms, p95_e2el_ms;
    tpot_s {median_p50, p95} x 1000 -> median_tpot_ms, p95_tpot_ms;
    request_throughput_rps -> request_throughput; output_token_throughput_tps -> output_throughput;
    crossover_summary.csv, the row whose summary_file is this file (speculative runs):
        mean_acceptance_length -> spec_decode_acceptance_length (1 + accepted_tokens / draft_rounds);
        acceptance_pct -> spec_decode_acceptance_rate (%); draft_rounds -> spec_decode_num_drafts;
        draft_tokens -> spec_decode_draft_tokens; accepted_tokens -> spec_decode_accepted_tokens.
    No ITL is recorded (the client times the first token and the end of each request only).

    python scripts/public_bench/rtx5090-qwen3-14b-awq-draft.py STUDY_FOLDER
        (STUDY_FOLDER/results/summary/*.json and STUDY_FOLDER/results/crossover_summary.csv)
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

SOURCE = "rtx5090-qwen3-14b-awq-draft"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
#: The prompt's length in tokens: not in the summaries; the server's own count, vllm:request_prompt_tokens_sum over
#: _count, is 25 on every page read (1825 / 73 before the first speculative run, 200 / 8 before a plain rerun).
PROMPT = 25
#: (summary files, output file): the runs each file holds (the module's docstring says why these).
ARMS = (
    (("matched_baseline_formal_rerun1_c*.json", "matched_baseline_formal_rerun2_c*.json"), "plain.jsonl"),
    (
        ("specdec_k5_formal_c*.json", "specdec_k5_formal_rerun1_c*.json", "specdec_k5_formal_rerun2_c*.json"),
        "draft-model.jsonl",
    ),
)


def _ms(stats: dict, *pairs: tuple[str, str]) -> dict:
    return {key: stats[src] * 1e3 for key, src in pairs}


def rtx5090(folder: Path) -> None:
    crossover = {
        Path(r["summary_file"].replace("\\", "/")).name: r
        for r in csv.DictReader((folder / "results" / "crossover_summary.csv").open())
    }
    OUT.mkdir(parents=True, exist_ok=True)
    counts = {}
    for patterns, name in ARMS:
        records = []
        for p in sorted(p for pattern in patterns for p in (folder / "results" / "summary").glob(pattern)):
            d = json.loads(p.read_text())
            rec = {
                "date": p.stem[-22:-7],
                "backend": "vllm",
                "model_id": "Qwen/Qwen3-14B-AWQ",
                "max_concurrency": d["concurrency"],
                "request_rate": "inf",
                "completed": d["successful_runs"],
                "duration": d["measured_wall_time_s"],
                "total_input_tokens": PROMPT * d["successful_runs"],
                "total_output_tokens": int(d["total_output_tokens"]),
                "mean_tpot_ms": d["tpot_s"]["mean"] * 1e3,
                "num_prompts": d["requested_runs"],
                "failed": d["failed_runs"],
                "request_throughput": d["request_throughput_rps"],
                "output_throughput": d["output_token_throughput_tps"],
            }
            rec |= _ms(d["ttft_s"], ("mean_ttft_ms", "mean"), ("median_ttft_ms", "median_p50"), ("p95_ttft_ms", "p95"))
            rec |= _ms(d["e2e_s"], ("mean_e2el_ms", "mean"), ("median_e2el_ms", "median_p50"), ("p95_e2el_ms", "p95"))
            rec |= _ms(d["tpot_s"], ("median_tpot_ms", "median_p50"), ("p95_tpot_ms", "p95"))
            row = crossover[p.name]
            assert (
                int(row["concurrency"]) == d["concurrency"] and int(row["successful_runs"]) == d["successful_runs"]
            ), p.name
            if name == "draft-model.jsonl":
                rec |= {
                    "spec_decode_acceptance_length": float(row["mean_acceptance_length"]),
                    "spec_decode_acceptance_rate": float(row["acceptance_pct"]),
                    "spec_decode_num_drafts": int(float(row["draft_rounds"])),
                    "spec_decode_draft_tokens": int(float(row["draft_tokens"])),
                    "spec_decode_accepted_tokens": int(float(row["accepted_tokens"])),
                }
            else:
                assert row["mean_acceptance_length"] == "", p.name
            records.append(rec)
        records.sort(key=lambda r: (r["max_concurrency"], r["date"]))
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        counts[name] = len(records)
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: 2 files, {sum(counts.values())} runs")


SOURCE_YAML = """\
source: rtx5090-qwen3-14b-awq-draft
title: one RTX 5090, vLLM OpenAI server (V1 runner, async scheduling off), Qwen3-14B-AWQ + Qwen3-0.6B draft model at 5 tokens
repository: keke0712/specdec_rtx5090
commit: "39638ec53ed807489cbd9b2bd12d69d01a81a63b"
paths:
  - results/summary/matched_baseline_formal_rerun{1,2}_c{4,16}_*.json
  - results/summary/specdec_k5_formal_c{1,2,4,8,16,32}_*.json
  - results/summary/specdec_k5_formal_rerun{1,2}_c{4,16}_*.json
  - results/crossover_summary.csv
  - results/telemetry/*.prom                      # read to tell which server served each run (notes)
engine: vllm
engine_version: null              # not stated in the study's files
engine_spec: vllm@0.27   # specsim's --engine for these runs: no version stated; both arms ran with async scheduling off, so a draft model's rounds are serial: --engine vllm@0.27 names release 0.27 of specsim's vllm@0.14 preset (releases 0.14-0.27, serial draft-model rounds; a draft model runs from 0.15)
max_num_seqs: 16   # the engine's limits as specsim models them: max_num_seqs 16 (the parallelism line: c = 32 queues)
hardware: rtx-5090
gpus: 1
tp: 1
parallelism: one GPU; max_num_seqs 16 (c = 32 queues); both arms on the V1 model runner with async scheduling off (the study's "matched baseline")
target: Qwen3-14B-AWQ/config.json
weight_dtype: null                 # the config's quantization_config (AWQ, 4 bits, group 128)
kv_dtype: null
drafter: qwen3-0.6b
draft_checkpoint: Qwen/Qwen3-0.6B
load: concurrency
lengths: >-
  one fixed short prompt of 25 tokens (the server's vllm:request_prompt_tokens_sum / _count), about 77 output tokens
  (4928 / 64), greedy; closed loops of 1, 2, 4, 8, 16, 32 users; 64 requests at c <= 4, 80 at 8, 160 at 16, 320 at 32
acceptance: >-
  recorded per run (results/crossover_summary.csv: draft_rounds, draft_tokens, accepted_tokens from the server's
  Prometheus counters before and after each run; mean_acceptance_length = 1 + accepted / rounds = 2.667 in every run)
runs:
  - {file: plain.jsonl, kind: plain, concurrency: [4, 16]}              # two runs at each
  - {file: draft-model.jsonl, kind: spec, steps: 5, concurrency: [1, 2, 4, 8, 16, 32]}   # three runs at 4 and 16
mapping: |
  completed = successful_runs; num_prompts = requested_runs; failed = failed_runs; duration = measured_wall_time_s
  total_output_tokens = total_output_tokens; total_input_tokens = 25 x completed (the server's prompt count)
  mean_tpot_ms = tpot_s.mean x 1000; median_tpot_ms = tpot_s.median_p50 x 1000; p95_tpot_ms = tpot_s.p95 x 1000
  ttft_s {mean, median_p50, p95} x 1000 -> mean_ttft_ms, median_ttft_ms, p95_ttft_ms
  e2e_s {mean, median_p50, p95} x 1000 -> mean_e2el_ms, median_e2el_ms, p95_e2el_ms
  request_throughput_rps -> request_throughput; output_token_throughput_tps -> output_throughput
  crossover_summary.csv (speculative runs): mean_acceptance_length -> spec_decode_acceptance_length,
    acceptance_pct -> spec_decode_acceptance_rate, draft_rounds -> spec_decode_num_drafts,
    draft_tokens -> spec_decode_draft_tokens, accepted_tokens -> spec_decode_accepted_tokens
  concurrency -> max_concurrency; request_rate "inf"; file-name timestamp -> date; model_id Qwen/Qwen3-14B-AWQ
notes: |
  - Which runs are plain was read in the telemetry (2026-12-03), not in the study's labels. Its first "matched
    baseline" sweep (matched_baseline_formal_c*, 2026-08-17) was served by the speculating server: the same
    process_start_time_seconds as the speculative sweep, vllm:spec_decode_num_drafts_total rising by 1920 over the 64
    requests at 1 user, the speculative runs' KV usage. Those runs are speculative and not transcribed; before
    2026-12-03 this folder held them as plain.jsonl, so every speedup validated here was one speculating server over
    another. The plain runs are the reruns at 4 and 16 users (2026-08-22) on a server without speculation.
  - The plain reruns are interleaved with the speculative reruns of the same day (19:02-19:30 by the file names'
    clock); the first speculative sweep is five days earlier. The study reports a run-to-run spread of 10-26% in
    throughput.
  - The client ran in Korea and the server in China over an SSH tunnel: TTFT and end-to-end latency include the
    network round trip; TPOT = (end-to-end - TTFT) / (tokens - 1) per request, which the tunnel's latency does not
    enter (its jitter may).
  - Acceptance is recorded per run and is the same in every run (33.3% of drafted tokens accepted, 2.667 tokens per
    verification pass; 50 accepted tokens and 30 rounds per request): one fixed prompt decoded greedily gives the
    same output, and so the same acceptance, every time. It is kept in the records; a validation that fits without
    it should take it away.
  - The study's default-vLLM arm (A: V2 model runner, async scheduling on) is another engine path and is not
    transcribed.
  - No ITL is recorded. No engine version is stated.
  - Qwen3-14B-AWQ/config.json is Qwen3-14B's with an AWQ quantization_config (4 bits, group 128).
"""

if __name__ == "__main__":
    rtx5090(Path(sys.argv[1]))
