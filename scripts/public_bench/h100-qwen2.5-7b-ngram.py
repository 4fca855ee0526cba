"""Transcribe waynehacking8/trtllm-triton-serving's study 9 (vLLM on one H100, Qwen2.5-7B-Instruct, plain against n-gram
speculation at 5 tokens, closed loop of 1-128 non-streaming requests) into `vllm bench serve --save-result` JSON lines
under examples/bench/public/h100-qwen2.5-7b-ngram/.

Repository: waynehacking8/trtllm-triton-serving @ 208b7ed7772e6b5af45c70f3509cf553f5625ed2 (MIT; the snapshot read; the two
result files were committed in d430ba9b395f2924c06b512ec8f812061362f296 of 2026-06-01 and are unchanged since).  Files:
    results/spec_concurrency_baseline.json   the plain arm: per concurrency c, requests, out_tokens_total, wall_s,
                                             throughput_tok_s
    results/spec_concurrency_ngram.json      the n-gram arm: the same, plus draft_acceptance (accepted / draft tokens from
                                             vLLM's /metrics counters read before and after the measured requests)
    bench/spec_concurrency.py                the client: one fixed prompt ("Repeat the following text exactly, word for
                                             word:" and a 2 x 334-character passage) to /v1/completions, max_tokens 200,
                                             temperature 0, stream false; per c a warm-up of c requests, then 4c requests
                                             through a semaphore of c; throughput = sum of completion_tokens / wall time
    bench/spec_decode.py                     the server setup of the study it follows (study 6): vLLM, Qwen2.5-7B(-Instruct),
                                             TP=1, speculative_config {method: ngram, num_speculative_tokens: 5,
                                             prompt_lookup_max: 4}
    README.md                                study 9: "baseline vs n-gram vLLM servers run sequentially on the same GPU",
                                             "verifying 5 draft tokens per step"; the GPUs: H100 80GB (SXM5, 3.35 TB/s:
                                             bench/roofline_check.py)

FIELD MAPPING (source row -> vLLM key), per row of each file (baseline -> plain.jsonl, ngram -> ngram-k5.jsonl):
    concurrency -> max_concurrency; request_rate "inf" (closed loop of c)
    requests -> num_prompts = completed (4c)
    out_tokens_total -> total_output_tokens (200 a request in every row: every request ran to max_tokens)
    wall_s -> duration; throughput_tok_s -> output_throughput (= out_tokens_total / wall_s, rounded to 0.1)
    total_input_tokens = completed x ASSUMED_PROMPT (not recorded; see below)
    draft_acceptance -> spec_decode_acceptance_rate (x 100: vLLM's accepted / draft tokens, its own definition)
    spec_decode_acceptance_length = 1 + STEPS x draft_acceptance: DERIVED, assuming every draft was 5 tokens long
        (vLLM's n-gram proposer proposes num_speculative_tokens tokens where it finds a match and nothing where it does
        not; a match near the end of the context gives fewer, which would make the true length smaller)
    date "2026-06-01" (the commit adding the results); backend "vllm"; model_id "Qwen/Qwen2.5-7B-Instruct" (served as
    "qwen2.5-7b"; bench/spec_decode.py names Qwen2.5-7B-Instruct)

ASSUMED_PROMPT = 150: the one prompt is 668 characters (94 words, many of them product names split into several
tokens), sent to /v1/completions without a chat template; about 4.4 characters a Qwen2.5 token. An estimate, not a count.

    python scripts/public_bench/h100-qwen2.5-7b-ngram.py RAW_FOLDER     (RAW_FOLDER/results/spec_concurrency_*.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SOURCE = "h100-qwen2.5-7b-ngram"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
MODEL = "Qwen/Qwen2.5-7B-Instruct"
DATE = "2026-06-01"
ASSUMED_PROMPT = 150
STEPS = 5


def record(row: dict) -> dict:
    n = int(row["requests"])
    rec = {
        "date": DATE,
        "backend": "vllm",
        "model_id": MODEL,
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": int(row["concurrency"]),
        "completed": n,
        "duration": float(row["wall_s"]),
        "total_input_tokens": n * ASSUMED_PROMPT,
        "total_output_tokens": int(row["out_tokens_total"]),
        "output_throughput": float(row["throughput_tok_s"]),
    }
    rate = row.get("draft_acceptance")
    if rate is not None:
        rec["spec_decode_acceptance_rate"] = round(100 * float(rate), 6)
        rec["spec_decode_acceptance_length"] = round(1 + STEPS * float(rate), 6)
    return rec


def main(raw: Path) -> None:
    arms = (("baseline", "plain.jsonl"), ("ngram", "ngram-k5.jsonl"))
    OUT.mkdir(parents=True, exist_ok=True)
    count = 0
    for tag, name in arms:
        rows = json.loads((raw / "results" / f"spec_concurrency_{tag}.json").read_text())["rows"]
        (OUT / name).write_text("".join(json.dumps(record(r)) + "\n" for r in rows))
        count += len(rows)
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: {len(arms)} files, {count} runs")


SOURCE_YAML = """\
source: h100-qwen2.5-7b-ngram
title: one H100 80GB (SXM5), vLLM OpenAI server (release not recorded), Qwen2.5-7B-Instruct BF16, plain vs n-gram speculation (k = 5), one echo-the-passage prompt, non-streaming
repository: waynehacking8/trtllm-triton-serving
commit: "208b7ed7772e6b5af45c70f3509cf553f5625ed2"
paths:
  - results/spec_concurrency_baseline.json
  - results/spec_concurrency_ngram.json
  - bench/spec_concurrency.py
  - bench/spec_decode.py
  - bench/roofline_check.py
  - README.md
engine: vllm
engine_version: null              # not recorded for the H100 box (see engine_spec and notes)
engine_spec: vllm@0.18.0   # ASSUMED: the H100 runs' vLLM release is not recorded; 0.18.0 is the one the same repository records for its other vLLM box days later (results/sm120_environment.txt); specsim's vLLM preset is one for 0.14.0-0.27.x
hardware: h100-sxm             # "4x NVIDIA H100 80GB, NVLink" (README), 3.35 TB/s HBM3 a GPU (bench/roofline_check.py: H100 SXM5)
gpus: 1
tp: 1
parallelism: one H100, TP 1 (bench/spec_decode.py for the study this one extends; README study 9, "on the same GPU"); both servers at vLLM's defaults otherwise (max_num_seqs, max_num_batched_tokens, gpu_memory_utilization not given)
target: qwen2.5-7b
weight_dtype: bf16
kv_dtype: bf16
drafter: ngram
draft_checkpoint: null           # n-gram prompt lookup: {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4} (bench/spec_decode.py)
load: concurrency
lengths: >-
  one fixed prompt to /v1/completions, about 150 tokens (assumed: 668 characters, not counted), 200 output tokens a
  request (every request reached max_tokens 200: out_tokens_total = 200 x requests in every row), temperature 0,
  non-streaming; closed loop of c = 1, 4, 16, 32, 64, 128 over 4c requests after a warm-up of c
acceptance: >-
  recorded as a rate (accepted / draft tokens over the measured requests, from vLLM's /metrics before and after);
  the acceptance length is derived from it as 1 + 5 x rate, assuming every draft was 5 tokens long
runs:
  - {file: plain.jsonl, kind: plain, concurrency: [1, 4, 16, 32, 64, 128]}
  - {file: ngram-k5.jsonl, kind: spec, steps: 5, concurrency: [1, 4, 16, 32, 64, 128]}
mapping: |
  concurrency -> max_concurrency; request_rate "inf"
  requests -> num_prompts = completed (4 x concurrency)
  out_tokens_total -> total_output_tokens; wall_s -> duration; throughput_tok_s -> output_throughput
  total_input_tokens = completed x 150 (assumed)
  draft_acceptance -> spec_decode_acceptance_rate (x 100)
  spec_decode_acceptance_length = 1 + 5 x draft_acceptance (DERIVED; see acceptance)
  date "2026-06-01" (the commit adding the results); backend "vllm"; model_id Qwen/Qwen2.5-7B-Instruct (served as "qwen2.5-7b")
notes: |
  - Only throughput is recorded: no TTFT, TPOT, ITL or end-to-end latency (the client is non-streaming and keeps
    only the completion-token count of each response). The speedup judged is the n-gram arm's output throughput over
    the plain arm's at the same concurrency, each the 4c requests' tokens over their wall time (queueing, prefill
    and the last requests' tail included).
  - The vLLM release is not recorded for the H100 box (the repository pins the TensorRT-LLM container only); see
    engine_spec. The server commands of study 9 are not committed: the n-gram configuration is study 6's
    (bench/spec_decode.py: method ngram, num_speculative_tokens 5, prompt_lookup_max 4, TP 1), which study 9's
    README text repeats ("verifying 5 draft tokens per step").
  - The task echoes the prompt ("Repeat the following text exactly, word for word"), so the n-gram drafts are almost
    always right (97-99% of draft tokens accepted at every load). The prompt length is an estimate.
  - At c = 128 both arms are slower than at c = 64 (plain 5,868 against 7,572 tok/s; n-gram 6,919 against 10,956):
    the source does not say why (the client sends 512 requests through one httpx client; nothing in the committed
    files shows the server's batch). Kept as measured.
  - Each load is one run of 4c requests (4 requests at c = 1), measured once.
"""


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/public_bench/h100-qwen2.5-7b-ngram.py RAW_FOLDER")
    main(Path(sys.argv[1]))
