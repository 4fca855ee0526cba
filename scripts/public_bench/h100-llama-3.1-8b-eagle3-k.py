"""Transcribe pramodjella/speculative-decoding-draft-length-audit (EAGLE-3 head, K = 1..7, static batches 1..64, one H100)
into `vllm bench serve --save-result` JSON lines under examples/bench/public/h100-llama-3.1-8b-eagle3-k/.

Repository: pramodjella/speculative-decoding-draft-length-audit (no snapshot could be fetched; the files were read through
the stored-file index, which holds one version of each, at the commits below).  Files read:
    results/eagle3_batch/vllm_eagle3_b8_llama8b.json                        @ 0c0fa77f0ce0889af076945d0d58e828c7150669
    results/eagle3_batch/eagle3_batch/vllm_eagle3_b8_llama8b_lowk.json      @ bcac2584d71512564326bebdc65662fb6e97c3bf
    results/eagle3_batch/eagle3_batch/vllm_eagle3_b16_b16.json              @ 0c0fa77f0ce0889af076945d0d58e828c7150669
    results/eagle3_batch/vllm_eagle3_b32_llama8b.json                       @ 0c0fa77f0ce0889af076945d0d58e828c7150669
    results/eagle3_batch/eagle3_batch/vllm_eagle3_b64_llama8b.json          @ 0c0fa77f0ce0889af076945d0d58e828c7150669
    results/eagle3_multik_llama8b.json (batch 1, per request)               @ bcac2584d71512564326bebdc65662fb6e97c3bf
    modal_vllm_eagle3.py (the harness; read for the protocol, not copied)   @ 0c0fa77f0ce0889af076945d0d58e828c7150669
    results/eagle3_8b/fixedK_by_workload.csv (used only to check the batch-1 file) @ bcac2584d71512564326bebdc65662fb6e97c3bf

What ran: vLLM V1 (unpinned `pip install vllm`; the study's findings say 0.23) offline `LLM.generate`, greedy, 64 output
tokens (batch runs) or 128 (batch 1), no chat template, on Modal `gpu="H100"` (Modal's H100s are SXM); target
meta-llama/Llama-3.1-8B-Instruct in BF16, EAGLE-3 head yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (chain) at K speculative tokens.
The first n prompts of openai_humaneval (test `prompt`), gsm8k main (test `question`) and HuggingFaceH4/mt_bench_prompts
(first turn) are run one workload after another, in groups of `batch` prompts: each group is one `llm.generate(group)`
call (an offline batch) that runs to completion before the next, with `max_num_seqs = batch`.

FIELD MAPPING (source field -> vLLM key):
  batch JSONs, results[] rows (method baseline -> plain file, eagle3 -> eagle3-k{K} file):
    groups g = ceil(prompts / batch), prompts = tokens / 64 (every request reached 64 tokens: tokens = prompts x 64)
    batch 8 (64 prompts, 8 groups of 8) and batch 32 (64 prompts, 2 groups of 32): ONE record per run = the mean group,
      an offline batch: request_rate "inf", max_concurrency null, completed = batch,
      duration = tokens / tok_per_s / g   (tok_per_s = tokens / secs, unrounded; secs agrees within its 1 ms rounding),
      total_output_tokens = tokens / g, total_input_tokens = completed x ASSUMED_PROMPT[workload],
      output_throughput = tok_per_s
    "batch 16" (vllm_eagle3_b16_b16.json: run with the default n = 4, so tokens = 256): one offline batch of the 4 prompts
      really run: completed = 4, duration = tokens / tok_per_s, total_output_tokens = tokens (max_num_seqs was 16)
    batch 64 (humaneval, gsm8k: 96 prompts = groups of 64 + 32; mt_bench: 80 = 64 + 16): the groups are unequal, so the
      run is written as what it is: an offline batch of every prompt, 64 at a time in waves, each wave ending with its
      slowest request (one llm.generate per group; the manifest's max_num_seqs 64 makes the waves): max_concurrency
      null, request_rate "inf", completed = prompts, duration = tokens / tok_per_s, total_output_tokens = tokens,
      total_input_tokens = prompts x ASSUMED_PROMPT.  (Until 2026-12-03 a closed loop of 64, which refills as requests
      finish: the harness does not, and a speculating group's requests finish at different rounds.)
    accepted_tokens_per_step -> spec_decode_acceptance_length (= 1 + accepted / drafts, vLLM counters), humaneval rows
      ONLY: the counters are cumulative since engine start and each engine runs humaneval, then gsm8k, then mt_bench, so
      the gsm8k and mt_bench values pool the earlier workloads and are dropped.  The humaneval value also counts that
      run's warm-up call (the first group's prompts once more).
  eagle3_multik_llama8b.json rows (batch 1; 30 prompts per workload; K = 0 is the plain arm): one record per request,
    each an offline batch of one: completed = 1, duration = latency (s), total_output_tokens = gen,
    total_input_tokens = ASSUMED_PROMPT[workload], mean_e2el_ms = latency x 1000,
    spec_decode_acceptance_length = accept_len (per request, so per workload: clean).
  backend = "vllm", model_id = target (meta-llama/Llama-3.1-8B-Instruct).  No date is recorded per run and the commit
  dates are unknown (no snapshot): `date` is omitted.  No TTFT, TPOT or ITL is recorded anywhere.

ASSUMED_PROMPT: the prompt lengths are not recorded.  The values are estimates of the mean length, in Llama-3 tokens with
the BOS token, of the first prompts of each dataset as the harness takes them (raw strings, no chat template):
HumanEval prompts (function signature + docstring) about 130, GSM8K test questions about 60, MT-Bench first turns about 70.

    python scripts/public_bench/h100-llama-3.1-8b-eagle3-k.py RAW_FOLDER

RAW_FOLDER holds the five batch JSONs and eagle3_multik_llama8b.json under their base names.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

SOURCE = "h100-llama-3.1-8b-eagle3-k"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
OUTPUT_TOKENS = 64
WORKLOADS = ("humaneval", "gsm8k", "mt_bench")
#: Mean prompt length per workload (Llama-3 tokens with BOS), assumed: the source records none.
ASSUMED_PROMPT = {"humaneval": 130, "gsm8k": 60, "mt_bench": 70}
#: (file, suffix of the plain file for that run's own baseline)
BATCH_FILES = (
    ("vllm_eagle3_b16_b16.json", ""),
    ("vllm_eagle3_b8_llama8b.json", ""),
    ("vllm_eagle3_b8_llama8b_lowk.json", "-b8lowk"),
    ("vllm_eagle3_b32_llama8b.json", ""),
    ("vllm_eagle3_b64_llama8b.json", ""),
)


def _name(k: int, workload: str, suffix: str = "") -> str:
    arm = "plain" if k == 0 else f"eagle3-k{k}"
    return f"{arm}-{workload.replace('_', '-')}{suffix}.jsonl"


def _base(completed: int, duration: float, prompt: int, output: int) -> dict:
    return {
        "backend": "vllm",
        "model_id": MODEL,
        "request_rate": "inf",
        "max_concurrency": None,
        "completed": completed,
        "duration": duration,
        "total_input_tokens": prompt,
        "total_output_tokens": output,
    }


def batch_record(row: dict, batch: int) -> tuple[int, dict]:
    """One batch-JSON row as a record; returns (order key, record)."""
    tokens, tps, w = row["tokens"], row["tok_per_s"], row["workload"]
    prompts = tokens // OUTPUT_TOKENS
    assert prompts * OUTPUT_TOKENS == tokens, row
    span = tokens / tps  # the run's wall time, from its throughput
    if prompts <= batch:  # one group ("batch 16": the 4 prompts really run)
        rec = _base(prompts, span, prompts * ASSUMED_PROMPT[w], tokens)
        key = prompts
    elif prompts % batch == 0:  # equal groups: the mean group
        groups = prompts // batch
        rec = _base(batch, span / groups, batch * ASSUMED_PROMPT[w], tokens // groups)
        key = batch
    else:  # unequal groups (batch 64): an offline batch of every prompt, run `batch` at a time in waves
        rec = _base(prompts, span, prompts * ASSUMED_PROMPT[w], tokens)
        key = batch
    rec["output_throughput"] = tps
    al = row.get("accepted_tokens_per_step")
    if row["method"] == "eagle3" and w == "humaneval" and al is not None:
        rec["spec_decode_acceptance_length"] = al
    return key, rec


def main(raw: Path) -> None:
    files: dict[str, list[tuple[float, dict]]] = collections.defaultdict(list)
    runs: dict[str, dict] = {}

    multik = json.loads((raw / "eagle3_multik_llama8b.json").read_text())
    assert multik["target"] == MODEL
    for r in multik["rows"]:
        rec = _base(1, r["latency"], ASSUMED_PROMPT[r["workload"]], r["gen"])
        rec["mean_e2el_ms"] = round(r["latency"] * 1e3, 6)
        if r["K"] and r["accept_len"] is not None:
            rec["spec_decode_acceptance_length"] = r["accept_len"]
        name = _name(r["K"], r["workload"])
        files[name].append((1 + r["idx"] / 100, rec))
        runs[name] = {"k": r["K"], "workload": r["workload"]}

    for fname, suffix in BATCH_FILES:
        doc = json.loads((raw / fname).read_text())
        assert doc["target"] == MODEL
        for row in doc["results"]:
            assert row["batch"] == doc["batch"]
            key, rec = batch_record(row, doc["batch"])
            k = row["K"] if row["method"] == "eagle3" else 0
            name = _name(k, row["workload"], suffix if k == 0 else "")
            files[name].append((key, rec))
            runs[name] = {"k": k, "workload": row["workload"], "suffix": suffix if k == 0 else ""}

    OUT.mkdir(parents=True, exist_ok=True)
    for name, recs in files.items():
        recs.sort(key=lambda kr: kr[0])
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for _, r in recs))
    order = sorted(files, key=lambda n: (runs[n]["k"], WORKLOADS.index(runs[n]["workload"]), "b8lowk" in n))
    lines = []
    for n in order:
        info = runs[n]
        batches = sorted({int(key) for key, _ in files[n]})
        spec = "kind: plain" if info["k"] == 0 else f"kind: spec, steps: {info['k']}"
        lines.append(
            f"  - {{file: {n}, {spec}, workload: {info['workload']}, runs: {len(files[n])}, "
            f"batches: [{', '.join(map(str, batches))}]}}"
        )
    (OUT / "source.yaml").write_text(SOURCE_YAML.replace("@RUNS@", "\n".join(lines)))
    print(f"{OUT}: {len(files)} files, {sum(len(v) for v in files.values())} runs")


SOURCE_YAML = """\
source: h100-llama-3.1-8b-eagle3-k
title: one H100 (SXM), vLLM V1 offline LLM.generate, Llama-3.1-8B-Instruct BF16 + EAGLE-3 head, K = 1..7, static batches 1..64
repository: pramodjella/speculative-decoding-draft-length-audit
commit: "0c0fa77f0ce0889af076945d0d58e828c7150669"   # and bcac2584d71512564326bebdc65662fb6e97c3bf: see paths
paths:
  - results/eagle3_batch/vllm_eagle3_b8_llama8b.json                     # @ 0c0fa77f0ce0889af076945d0d58e828c7150669
  - results/eagle3_batch/eagle3_batch/vllm_eagle3_b8_llama8b_lowk.json   # @ bcac2584d71512564326bebdc65662fb6e97c3bf
  - results/eagle3_batch/eagle3_batch/vllm_eagle3_b16_b16.json           # @ 0c0fa77f0ce0889af076945d0d58e828c7150669
  - results/eagle3_batch/vllm_eagle3_b32_llama8b.json                    # @ 0c0fa77f0ce0889af076945d0d58e828c7150669
  - results/eagle3_batch/eagle3_batch/vllm_eagle3_b64_llama8b.json       # @ 0c0fa77f0ce0889af076945d0d58e828c7150669
  - results/eagle3_multik_llama8b.json                                   # @ bcac2584d71512564326bebdc65662fb6e97c3bf
  - modal_vllm_eagle3.py                                                 # harness, read for the protocol only
engine: vllm
engine_version: null        # unpinned `pip install vllm` in the Modal image; the study's findings.md says "vLLM 0.23 V1"
engine_spec: vllm@0.23.0   # specsim's --engine for these runs: the study's findings.md says vLLM 0.23 V1 (the Modal image pins none)
max_num_seqs: 64   # the engine's limits as specsim models them: each batch run's own is its batch (a wave of 1-32 fits in 64); the batch-64 runs' waves of 64
hardware: h100-sxm          # Modal gpu="H100"; the variant is not recorded, Modal's H100s are SXM
gpus: 1
tp: 1
parallelism: one GPU; offline LLM(...).generate, max_num_seqs = batch for batch > 1 (vLLM default at batch 1), CUDA graphs on, max_model_len 2048, FLASH_ATTN
target: llama-3.1-8b
weight_dtype: bf16
kv_dtype: bf16
drafter: eagle3
draft_checkpoint: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
load: batch
lengths: >-
  first n prompts of openai_humaneval (test prompt), gsm8k main (test question), HuggingFaceH4/mt_bench_prompts
  (first turn), raw strings without chat template; greedy; max_tokens 64 (batch runs; EOS not ignored, but every request
  reached 64) or 128 (batch 1; one humaneval request stopped at 81). Prompt lengths NOT recorded: assumed means
  humaneval 130, gsm8k 60, mt_bench 70 Llama-3 tokens (with BOS).
acceptance: >-
  recorded: batch runs, vLLM counters accepted/drafts + 1 (accepted_tokens_per_step), cumulative per engine across the
  three workloads, so kept for humaneval only; batch 1, per request (accept_len), kept for every workload.
runs:
@RUNS@
mapping: |
  batch JSONs (results[] rows; baseline -> plain-*, eagle3 -> eagle3-k{K}-*); prompts = tokens / 64, groups g = ceil(prompts / batch)
    batch 8 and 32 (equal groups): one record = the mean group, an offline batch: request_rate "inf", max_concurrency null,
      completed = batch, duration = tokens / tok_per_s / g, total_output_tokens = tokens / g
    "batch 16" (4 prompts really run): completed = 4, duration = tokens / tok_per_s, total_output_tokens = tokens
    batch 64 (groups 64 + 32, or 64 + 16 for mt_bench): an offline batch of every prompt in waves of 64
      (max_num_seqs 64 above): max_concurrency null, request_rate "inf", completed = prompts,
      duration = tokens / tok_per_s, total_output_tokens = tokens
    total_input_tokens = completed x assumed prompt (humaneval 130, gsm8k 60, mt_bench 70)
    tok_per_s -> output_throughput
    accepted_tokens_per_step -> spec_decode_acceptance_length (humaneval rows only)
  eagle3_multik_llama8b.json (batch 1; K = 0 -> plain-*): one record per request, an offline batch of one:
    completed = 1, duration = latency, total_output_tokens = gen, total_input_tokens = assumed prompt,
    mean_e2el_ms = latency x 1000, accept_len -> spec_decode_acceptance_length
  backend "vllm"; model_id meta-llama/Llama-3.1-8B-Instruct; date omitted (not recorded, commit dates unknown)
notes: |
  - Only throughput (and wall seconds, rounded to 1 ms) is recorded for the batch runs; durations are derived from it.
    No TTFT, TPOT or ITL anywhere: these records carry no mean_tpot_ms (the reader of the day the folder was converted
    refused them; specsim's reader now judges such a run by its throughput, from its duration and totals).
  - "batch 16" is really one batch of 4 prompts (run with the harness's default n = 4, max_num_seqs 16); the records say
    completed 4. Its acceptance is over 4 prompts and its wall time (0.3-0.45 s) is short.
  - The two batch-8 runs are separate engine sessions with their own no-spec baselines, which differ by 12-14%
    (humaneval 1153.65 vs 1012.94 tok/s): plain-*.jsonl holds the baseline of the K = 3, 4, 5 run
    (vllm_eagle3_b8_llama8b.json), plain-*-b8lowk.jsonl the baseline of the K = 1, 2 run (..._lowk.json). Compare
    eagle3-k1/k2 at batch 8 with the -b8lowk baseline.
  - Acceptance: the batch runs read vLLM's counters once per workload from an engine that ran humaneval, gsm8k and
    mt_bench in that order, so only humaneval's value is that workload's own (it includes the warm-up call on the first
    group's prompts); gsm8k and mt_bench values (running averages) are dropped. Batch-1 acceptance is per request.
  - Batch 1 is a different protocol (an earlier script, eagle3_multik_llama8b.json): 30 prompts per workload, one
    llm.generate per prompt, 128 output tokens, latency per request, default max_num_seqs; K = 1, 2, 3, 5, 7 (no 4).
    The batch-1 file was transcribed from the index's pages and rebuilt: its JSON re-serialisation has the index's
    77,098 characters and reproduces fixedK_by_workload.csv (accept_len, net_speedup) to 4 decimals.
  - Batch 64 is written as an offline batch of all its prompts in waves of 64 (64 + 32; mt_bench, which has 80
    prompts, 64 + 16): the harness generates each group to its end before the next, so each wave ends with its
    slowest request (until 2026-12-03 a closed loop of 64, which refills: exact for the plain runs only). Batches 8
    and 32 are the mean of 8 and 2 equal groups (offline batches of 8 and 32).
  - K grid: batch 1: 1, 2, 3, 5, 7; batch 8: 1, 2 (lowk run) and 3, 4, 5; "16" (4), 32, 64: 1-4. No K = 6.
  - One repeat per point. The output is short (64 tokens), so prefill is a noticeable share of each batch's time,
    and the assumed prompt lengths matter there.
  - Audited 2026-12-03 (modal_vllm_eagle3.py at 0c0fa77 and the raw JSONs; every batch record reproduced). A group's
    wall time ends with its slowest request (one llm.generate per group, no refill), and the prompts' acceptance
    differs: in the batch-1 records humaneval's acceptance length at K = 3 runs from 1.33 to 2.59 by prompt, so the
    slowest of 8 consecutive prompts needs 1.14-1.19 times the mean rounds at K = 3 (all 30: 1.29-1.48), growing with
    K. specsim counts the prompts' spread of acceptance where it is given (decode_rounds_spread; the validation
    takes it from the batch-1 records, benchmarks/validate_corpus.py prompt_spreads).
  - Each workload's untimed warm-up generates the first group's prompts, and vLLM V1 caches prefixes by default:
    the first group's prefill was probably served from the cache (total_input_tokens assumes none was; prompts of
    60-130 tokens against 64 output tokens each).
  - The batch-8 runs at K = 1 and 2 (the lowk session) have their own plain run, 14% slower per step (7.90 ms) than
    the other session's (6.93 ms). The study's findings.md says batch 8 ran K = 1-5; its file for that session
    holds K = 3-5, the lowk file K = 1-2.
"""

if __name__ == "__main__":
    main(Path(sys.argv[1]))
