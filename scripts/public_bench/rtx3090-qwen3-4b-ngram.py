"""Transcribe LottoLottoLotto/4x3090-llm-benchmarks, campaign tli-synth-ext, target Qwen3-4B (BF16, vLLM 0.25.0, one
RTX 3090): the plain arm (--no-spec, and its rerun) and n-gram speculation (k = 4), per synthetic prompt kind, into
`vllm bench serve --save-result` JSON lines under examples/bench/public/rtx3090-qwen3-4b-ngram/.

Written in place of the requested "rtx3090-qwen3-4b-draft": the archive has NO Qwen3-4B rows with a Qwen3-0.6B or
Qwen3-1.7B draft model.  Its Qwen3-4B rows are plain, n-gram k = 4 and TinyLlama-1.1B draft_model (cross-vocabulary,
use_heterogeneous_vocab; left out); its Qwen3-0.6B / Qwen3-1.7B-base drafts serve Mistral-7B (cross-vocabulary too).

Repository: LottoLottoLotto/4x3090-llm-benchmarks @ bd222811dbbd2bd0552cea7cac52d00b89d04caa.  File read:
data/benchmarks.jsonl (schema v2), rows with source == "tli-synth-ext" and model == "Qwen3-4B" whose spec_decode is null
(run ids qwen3-4b--no-spec/*, qwen3-4b--no-spec-rerun/*) or has method "ngram" (qwen3-4b--ngram-k4/*); 27 rows.

FIELD MAPPING (source field -> vLLM key):
    concurrency -> max_concurrency; request_rate "inf" (closed loop)
    completed = num_prompts = ASSUMED_PROMPTS_PER_USER x concurrency: NOT recorded (see below)
    total_input_tokens = completed x prompt_tokens (512); total_output_tokens = completed x gen_tokens (256)
    output_tok_s -> output_throughput (aggregate output tok/s; the mean of knobs.tok_s_all, 2 repeats)
    duration = total_output_tokens / output_throughput (derived)
    spec_decode.acceptance (draft acceptance rate, accepted / drafted tokens) -> spec_decode_acceptance_rate (x 100, %)
    spec_decode_acceptance_length = 1 + k x spec_decode.acceptance   (k = 4; derived)
    date -> date; engine -> backend ("vllm"); model_id = "Qwen/Qwen3-4B" (checkpoint_ref "Qwen3-4B", quant bf16)
    knobs.prompt_kind (code | prose | repetitive) -> the file name; no latency is recorded (no TTFT, TPOT, ITL)

ASSUMED_PROMPTS_PER_USER = 4: as for the archive's vllm bench serve campaign that records it (laguna-dflash).  The count
scales duration and totals together; the throughput and acceptance do not depend on it.

    python scripts/public_bench/rtx3090-qwen3-4b-ngram.py RAW_FOLDER     (RAW_FOLDER/data/benchmarks.jsonl)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _lotto3090 import ngram_record

SOURCE = "rtx3090-qwen3-4b-ngram"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
KINDS = ("code", "prose", "repetitive")
ARMS = {"qwen3-4b--no-spec": "plain", "qwen3-4b--no-spec-rerun": "plain-rerun", "qwen3-4b--ngram-k4": "ngram-k4"}


def main(raw: Path) -> None:
    rows = [json.loads(line) for line in (raw / "data" / "benchmarks.jsonl").read_text().splitlines() if line.strip()]
    rows = [
        r
        for r in rows
        if r["source"] == "tli-synth-ext"
        and r["model"] == "Qwen3-4B"
        and (r["spec_decode"] is None or r["spec_decode"]["method"] == "ngram")
    ]
    assert len(rows) == 27, len(rows)
    files: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["concurrency"]):
        arm, kind, _ = row["run_id"].split("/", 1)[1].split("/")
        assert kind == row["knobs"]["prompt_kind"] and row["quant"] == "bf16" and row["tp"] == 1, row["run_id"]
        assert (row["engine"], row["engine_version"], row["prompt_tokens"], row["gen_tokens"]) == (
            "vllm",
            "0.25.0",
            512,
            256,
        )
        files.setdefault(f"{ARMS[arm]}-{kind}.jsonl", []).append(ngram_record(row, "Qwen/Qwen3-4B"))
    OUT.mkdir(parents=True, exist_ok=True)
    for name, recs in files.items():
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


SOURCE_YAML = """\
source: rtx3090-qwen3-4b-ngram
title: one RTX 3090, vLLM 0.25.0 server, Qwen3-4B BF16, plain vs n-gram speculation (k = 4), synthetic code / prose / repetitive prompts
repository: LottoLottoLotto/4x3090-llm-benchmarks
commit: "bd222811dbbd2bd0552cea7cac52d00b89d04caa"
paths:
  - data/benchmarks.jsonl          # rows source "tli-synth-ext", model "Qwen3-4B", spec_decode null or ngram
engine: vllm
engine_version: "0.25.0"
engine_spec: vllm@0.25.0   # specsim's --engine for these runs: 0.25.0
max_num_seqs: 8
max_batched_tokens: 8192   # the engine's limits as specsim models them: max_num_seqs 8, max_num_batched_tokens 8192 (the launch flags)
hardware: rtx-3090               # new profile hardware/rtx-3090.yaml
gpus: 1
tp: 1
parallelism: one RTX 3090 (power-capped 220 W), TP 1, --language-model-only, max_num_seqs 8, max_num_batched_tokens 8192, max_model_len 8192, attention backend flash_attn
target: qwen3-4b
weight_dtype: bf16
kv_dtype: bf16                   # --kv-cache-dtype auto
drafter: ngram
draft_checkpoint: null           # n-gram prompt lookup: {"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":1,"prompt_lookup_max":4}
load: concurrency
lengths: >-
  synthetic prompt-continuation corpora (templated code, prose, repetitive text), 512 in / 256 out; closed loop of
  1, 4, 8 users; request count not recorded (4 per user assumed)
acceptance: >-
  recorded as the draft acceptance rate (accepted / drafted tokens) per row; spec_decode_acceptance_length = 1 + 4 x rate
  derived from it
runs:
  - {file: plain-code.jsonl, kind: plain, prompts: code, concurrency: [1, 4, 8]}
  - {file: plain-rerun-code.jsonl, kind: plain, prompts: code, concurrency: [1, 4, 8]}
  - {file: ngram-k4-code.jsonl, kind: spec, steps: 4, prompts: code, concurrency: [1, 4, 8]}
  - {file: plain-prose.jsonl, kind: plain, prompts: prose, concurrency: [1, 4, 8]}
  - {file: plain-rerun-prose.jsonl, kind: plain, prompts: prose, concurrency: [1, 4, 8]}
  - {file: ngram-k4-prose.jsonl, kind: spec, steps: 4, prompts: prose, concurrency: [1, 4, 8]}
  - {file: plain-repetitive.jsonl, kind: plain, prompts: repetitive, concurrency: [1, 4, 8]}
  - {file: plain-rerun-repetitive.jsonl, kind: plain, prompts: repetitive, concurrency: [1, 4, 8]}
  - {file: ngram-k4-repetitive.jsonl, kind: spec, steps: 4, prompts: repetitive, concurrency: [1, 4, 8]}
mapping: |
  concurrency -> max_concurrency; request_rate "inf"
  completed = num_prompts = 4 x concurrency (ASSUMED: not recorded)
  total_input_tokens = completed x 512; total_output_tokens = completed x 256
  output_tok_s (mean of 2 repeats) -> output_throughput; duration = total_output_tokens / output_throughput
  spec_decode.acceptance -> spec_decode_acceptance_rate (x 100); spec_decode_acceptance_length = 1 + 4 x acceptance
  date -> date; engine -> backend; model_id Qwen/Qwen3-4B
notes: |
  - Substitute for the requested rtx3090-qwen3-4b-draft: the archive has no Qwen3-4B rows with a Qwen3-0.6B or
    Qwen3-1.7B draft model (its Qwen3-4B speculation is n-gram and TinyLlama-1.1B, cross-vocabulary; the Qwen drafts
    serve Mistral-7B). This folder keeps the same-vocabulary arm that exists: n-gram, k = 4.
  - Only aggregate output tok/s is recorded (mean of 2 repeats): no TTFT, TPOT, ITL, no request count. Records carry
    no mean_tpot_ms (the reader of the day the folder was converted refused them; specsim's reader now judges such a
    run by its throughput, from its duration and totals).
  - Two plain sessions (--no-spec and --no-spec-rerun, separate servers on ports 18240 / 18241) are kept as separate
    files; they agree within 1-2%.
  - The n-gram acceptance is identical at c = 1, 4, 8 for code (0.4496) and repetitive (0.4583), and differs for
    prose (0.2259, 0.2921, 0.2916): it appears to be read once per prompt kind in some sessions. 1 + k x rate counts
    only verification passes that carried a draft (n-gram proposes nothing when no n-gram matches).
  - The prompts are synthetic continuations of templated corpora; the author warns (notes, in Russian) that they
    inflate acceptance and speculative gains against real prompts (campaign tli-real).
  - Power limit 220 W per GPU. RTX 3090 has no built-in specsim profile: hardware/rtx-3090.yaml was added.
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
