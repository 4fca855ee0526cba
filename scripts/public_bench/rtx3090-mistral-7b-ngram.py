"""Transcribe LottoLottoLotto/4x3090-llm-benchmarks, campaigns tli-synth-ext and tli-synth, target Mistral-7B-v0.3 (BF16,
vLLM 0.25.0, one RTX 3090): the plain arm (--no-spec, its rerun, and tli-synth's baseline-no-spec) and n-gram speculation
(k = 4), per synthetic prompt kind, into `vllm bench serve --save-result` JSON lines under
examples/bench/public/rtx3090-mistral-7b-ngram/.

Repository: LottoLottoLotto/4x3090-llm-benchmarks @ bd222811dbbd2bd0552cea7cac52d00b89d04caa (the commit the corpus's
rtx3090-qwen3-4b-ngram and rtx3090-gemma4-e2b-mtp folders read; this is another deployment of the same archive, not an
independent source).  File read: data/benchmarks.jsonl (schema v2), rows with model == "Mistral-7B" (model_variant
"Mistral-7B-v0.3", which the archive's model-map.json maps to mistralai/Mistral-7B-v0.3) whose spec_decode is null or
has method "ngram", from source "tli-synth-ext" (run ids mistral7b--no-spec/*, mistral7b--no-spec-rerun/*,
mistral7b--ngram-k4/*; 27 rows) and source "tli-synth" (baseline-no-spec/*, ngram-k4/*; 8 rows).

Left out: the same campaigns' draft_model_tli arms (Qwen3-0.6B / Qwen3-1.7B-base drafting for Mistral across
vocabularies; specsim does not model a cross-vocabulary drafter) and campaign tli-real (real dolly-15k prompts, base and
Instruct-v0.3, plain and n-gram at 1, 4, 8 users), whose prompt lengths are not recorded (prompt_tokens null), so a
record would need an assumed input length.

FIELD MAPPING (source field -> vLLM key):
    concurrency -> max_concurrency; request_rate "inf" (closed loop)
    completed = num_prompts = ASSUMED_PROMPTS_PER_USER x concurrency: NOT recorded (see below)
    total_input_tokens = completed x prompt_tokens (512); total_output_tokens = completed x gen_tokens (256)
    output_tok_s -> output_throughput (aggregate output tok/s; the mean of knobs.tok_s_all, 2 repeats)
    duration = total_output_tokens / output_throughput (derived)
    spec_decode.acceptance (draft acceptance rate, accepted / drafted tokens) -> spec_decode_acceptance_rate (x 100, %)
    spec_decode_acceptance_length = 1 + k x spec_decode.acceptance   (k = 4; derived)
    date -> date; engine -> backend ("vllm"); model_id = "mistralai/Mistral-7B-v0.3" (model-map.json)
    knobs.prompt_kind (code | prose | repetitive) -> the file name and the manifest's workload; no latency is recorded
    (no TTFT, TPOT, ITL)

ASSUMED_PROMPTS_PER_USER = 4: as rtx3090-qwen3-4b-ngram assumes for the same harness (the archive's vllm bench serve
campaign that records it, laguna-dflash).  The count scales duration and totals together; the throughput and
acceptance do not depend on it.

The target's config.json (Mistral-7B-v0.3/config.json in the folder) is not in the archive: see the manifest's notes.

    python scripts/public_bench/rtx3090-mistral-7b-ngram.py RAW_FOLDER     (RAW_FOLDER/data/benchmarks.jsonl)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _lotto3090 import ngram_record

SOURCE = "rtx3090-mistral-7b-ngram"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
# (campaign, arm in the run id) -> file stem
ARMS = {
    ("tli-synth-ext", "mistral7b--no-spec"): "plain",
    ("tli-synth-ext", "mistral7b--no-spec-rerun"): "plain-rerun",
    ("tli-synth-ext", "mistral7b--ngram-k4"): "ngram-k4",
    ("tli-synth", "baseline-no-spec"): "plain-synth",
    ("tli-synth", "ngram-k4"): "ngram-k4-synth",
}
ROWS = {"tli-synth-ext": 27, "tli-synth": 8}


def main(raw: Path) -> None:
    rows = [json.loads(line) for line in (raw / "data" / "benchmarks.jsonl").read_text().splitlines() if line.strip()]
    rows = [
        r
        for r in rows
        if r["source"] in ROWS
        and r["model"] == "Mistral-7B"
        and (r["spec_decode"] is None or r["spec_decode"]["method"] == "ngram")
    ]
    for campaign, count in ROWS.items():
        assert sum(r["source"] == campaign for r in rows) == count, campaign
    files: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["concurrency"]):
        arm, kind, _ = row["run_id"].split("/", 1)[1].split("/")
        assert kind == row["knobs"]["prompt_kind"] and row["model_variant"] == "Mistral-7B-v0.3", row["run_id"]
        assert (row["quant"], row["tp"], row["kv_cache_dtype"], row["power_limit_w"]) == ("bf16", 1, "auto", 220)
        assert (row["engine"], row["engine_version"], row["prompt_tokens"], row["gen_tokens"]) == (
            "vllm",
            "0.25.0",
            512,
            256,
        )
        files.setdefault(f"{ARMS[row['source'], arm]}-{kind}.jsonl", []).append(
            ngram_record(row, "mistralai/Mistral-7B-v0.3")
        )
    OUT.mkdir(parents=True, exist_ok=True)
    for name, recs in files.items():
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    (OUT / "Mistral-7B-v0.3").mkdir(exist_ok=True)
    (OUT / "Mistral-7B-v0.3" / "config.json").write_text(CONFIG_JSON)
    (OUT / "source.yaml").write_text(SOURCE_YAML)
    print(f"{OUT}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


# mistralai/Mistral-7B-v0.3's config.json (Hugging Face; see the manifest's notes for where it was read).
CONFIG_JSON = """\
{
  "architectures": [
    "MistralForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.42.0.dev0",
  "use_cache": true,
  "vocab_size": 32768
}
"""

SOURCE_YAML = """\
source: rtx3090-mistral-7b-ngram
title: one RTX 3090, vLLM 0.25.0 server, Mistral-7B-v0.3 BF16, plain vs n-gram speculation (k = 4), synthetic code / prose / repetitive prompts
repository: LottoLottoLotto/4x3090-llm-benchmarks
commit: "bd222811dbbd2bd0552cea7cac52d00b89d04caa"
paths:
  - data/benchmarks.jsonl          # rows source "tli-synth-ext" and "tli-synth", model "Mistral-7B" (Mistral-7B-v0.3), spec_decode null or ngram
  - model-map.json                 # Mistral-7B-v0.3 -> mistralai/Mistral-7B-v0.3
engine: vllm
engine_version: "0.25.0"
engine_spec: vllm@0.25.0   # specsim's --engine for these runs: 0.25.0
max_num_seqs: 8
max_batched_tokens: 8192   # the engine's limits as specsim models them: max_num_seqs 8, max_num_batched_tokens 8192 (the launch flags)
memory_util: 0.92          # --gpu-memory-utilization 0.92, every arm
hardware: rtx-3090
gpus: 1
tp: 1
parallelism: one RTX 3090 (power-capped 220 W), TP 1, --language-model-only, max_num_seqs 8, max_num_batched_tokens 8192, max_model_len 8192, attention backend flash_attn, --generation-config vllm; the same launch line in every arm but the speculative config
target: Mistral-7B-v0.3/config.json   # mistralai/Mistral-7B-v0.3 (not in specsim's catalog, whose mistral-7b is v0.1)
weight_dtype: bf16
kv_dtype: bf16                   # --kv-cache-dtype auto
drafter: ngram
draft_checkpoint: null           # n-gram prompt lookup: {"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":1,"prompt_lookup_max":4}
load: concurrency
lengths: >-
  synthetic prompt-continuation corpora (templated code, prose, repetitive text), 512 in / 256 out; closed loop of
  1, 4, 8 users (tli-synth-ext) and 1, 2, 4, 8 users (tli-synth, repetitive only); request count not recorded (4 per
  user assumed)
acceptance: >-
  recorded as the draft acceptance rate (accepted / drafted tokens) per row; spec_decode_acceptance_length = 1 + 4 x rate
  derived from it
runs:
  - {file: plain-code.jsonl, kind: plain, workload: code, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-rerun-code.jsonl, kind: plain, workload: code, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: ngram-k4-code.jsonl, kind: spec, steps: 4, workload: code, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-prose.jsonl, kind: plain, workload: prose, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-rerun-prose.jsonl, kind: plain, workload: prose, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: ngram-k4-prose.jsonl, kind: spec, steps: 4, workload: prose, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-repetitive.jsonl, kind: plain, workload: repetitive, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-rerun-repetitive.jsonl, kind: plain, workload: repetitive, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: ngram-k4-repetitive.jsonl, kind: spec, steps: 4, workload: repetitive, campaign: tli-synth-ext, concurrency: [1, 4, 8]}
  - {file: plain-synth-repetitive.jsonl, kind: plain, workload: repetitive, campaign: tli-synth, concurrency: [1, 2, 4, 8]}
  - {file: ngram-k4-synth-repetitive.jsonl, kind: spec, steps: 4, workload: repetitive, campaign: tli-synth, concurrency: [1, 2, 4, 8]}
mapping: |
  concurrency -> max_concurrency; request_rate "inf"
  completed = num_prompts = 4 x concurrency (ASSUMED: not recorded)
  total_input_tokens = completed x 512; total_output_tokens = completed x 256
  output_tok_s (mean of 2 repeats) -> output_throughput; duration = total_output_tokens / output_throughput
  spec_decode.acceptance -> spec_decode_acceptance_rate (x 100); spec_decode_acceptance_length = 1 + 4 x acceptance
  date -> date; engine -> backend; model_id mistralai/Mistral-7B-v0.3 (model-map.json)
  knobs.prompt_kind -> the file name and the run's workload (each prompt kind its own speculative sweep)
notes: |
  - Another deployment of the archive rtx3090-qwen3-4b-ngram reads (same commit, harness, GPU, engine build and
    launch flags): not an independent source. Converted blind: committed (d8a2c960) before
    benchmarks/validate_corpus.py was run on it; its one run, --only rtx3090-mistral-7b-ngram at d8a2c960, mean
    absolute speedup error (mean signed, groups): (a) 5.3% (-5.3%, 10), (a*) n/a, (b') 2.2% (-1.6%, 10), (c) 1.8%
    (-0.1%, 10), (d) n/a (one step count). Nothing was changed after it.
  - Only aggregate output tok/s is recorded (mean of 2 repeats): no TTFT, TPOT, ITL, no request count. Records carry
    no mean_tpot_ms; specsim's reader judges such a run by its throughput, from its duration and totals.
  - Plain sessions: tli-synth-ext's --no-spec and --no-spec-rerun (two servers) and tli-synth's baseline-no-spec (a
    third) are kept as separate files; at 1, 4, 8 users they agree within 3.2% across sessions and prompt kinds.
  - The n-gram acceptance is identical at every concurrency of a prompt kind except prose at 8 users (code 0.4773,
    repetitive 0.5181 in both campaigns, prose 0.4409 / 0.4409 / 0.4338): it appears to be read once per prompt kind
    in some sessions, as in rtx3090-qwen3-4b-ngram. 1 + k x rate counts only verification passes that carried a
    draft (n-gram proposes nothing when no n-gram matches).
  - The prompts are synthetic continuations of templated corpora; the author warns (notes, in Russian) that they
    inflate acceptance and speculative gains against real prompts (campaign tli-real, not transcribed: its prompt
    lengths are not recorded).
  - Target config: Mistral-7B-v0.3 is not in specsim's catalog (its mistral-7b is Mistral-7B-Instruct-v0.1: vocabulary
    32,000, sliding window 4096). Mistral-7B-v0.3/config.json is mistralai/Mistral-7B-v0.3's (Hugging Face, the
    checkpoint model-map.json names; vocabulary 32,768, no sliding window, rope_theta 1e6), not in the archive. Its
    text was read from a stored public GitHub markdown file that quotes mistralai/Mistral-7B-Instruct-v0.3's
    config.json verbatim under a "## config.json" heading (stored-index file id 61558565367; the repository holding
    it could not be resolved with the tools used), which the base and Instruct v0.3 checkpoints share as far as
    known (same shapes: embed_tokens and lm_head 32768 x 4096). 7,248,023,552 parameters as specsim counts them.
  - Power limit 220 W per GPU; hardware/rtx-3090.yaml is the profile (added for rtx3090-qwen3-4b-ngram).
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
