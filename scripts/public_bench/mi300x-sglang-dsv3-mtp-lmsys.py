"""Transcribe the LMSYS / AMD blog's DeepSeek-V3 MTP table (8x MI300X, SGLang 0.4.10.post1) into vLLM's result keys.

Repository: lm-sys/lm-sys.github.io at commit 03d5107bbe479b2fa51ec61ac1372903ead0f403, file
``blog/2025-09-02-sglang-amd-deepseek-v3-mtp.md`` ("Accelerating DeepSeek V3 Inference via Multi-Token Prediction in
SGLang", Chang Liu, Andy Luo, AMD AIG team): Table 1 (random dataset, max concurrency 1-64, mean end-to-end latency per
request in ms, without and with MTP), the launch commands and the client command.  The converter reads a verbatim
excerpt of that file (the tables and the setup sections).  Writes examples/bench/public/mi300x-sglang-dsv3-mtp-lmsys/.

The blog records ONLY the mean end-to-end latency per request (no TPOT, TTFT, ITL, throughput, duration, token counts or
acceptance); its throughput figures are images.  Table 2 (ShareGPT, c 4-64) is not transcribed: its request count and
lengths are not stated, so no per-request token means can be given.

FIELD MAPPING (Table 1 -> vLLM key):
    "Max Concurrency" -> max_concurrency; request_rate = "inf" (ASSUMED: the tables vary the max concurrency; the
        blog's client snippet shows --request-rate 1 --num-prompt 300 and no --max-concurrency, so it is not the
        command that produced the table verbatim)
    "Without MTP" -> mean_e2el_ms of plain.jsonl; "With MTP" -> mean_e2el_ms of mtp-k2.jsonl ("Speedup Ratio" is
        their quotient and is not stored)
    num_prompts = completed = 300 (ASSUMED from the client snippet's --num-prompt 300)
    total_input_tokens = 300 x 512.5 and total_output_tokens = 300 x 512 (ASSUMED: the expected sums of the client's
        lengths: sglang.bench_serving's random dataset at v0.4.10.post1 (sgl-project/sglang 33f0de337) draws input
        lengths uniform in [max(int(1024 r), 1), 1024] and output lengths uniform in [int(1024 r), 1024] with the
        default --random-range-ratio r = 0.0, so means (1 + 1024) / 2 and (0 + 1024) / 2; ignore_eos is that client's
        default)
    duration: NOT derivable (no throughput, no run time) and omitted
    date = "2025-08-18" (the blog: "Data measured on 18/08/2025"); backend = "sglang"; model_id =
        "deepseek-ai/DeepSeek-V3" (the blog's "DeepSeek V3 ... downloaded from HuggingFace"; the exact repository is
        not named)

    python scripts/public_bench/mi300x-sglang-dsv3-mtp-lmsys.py RAW_FOLDER   (RAW_FOLDER/blog_*.md, the excerpt)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from _manifest import manifest_yaml

SOURCE = "mi300x-sglang-dsv3-mtp-lmsys"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
REPO = "lm-sys/lm-sys.github.io"
COMMIT = "03d5107bbe479b2fa51ec61ac1372903ead0f403"
PATH = "blog/2025-09-02-sglang-amd-deepseek-v3-mtp.md"
DATE = "2025-08-18"
MODEL = "deepseek-ai/DeepSeek-V3"
ASSUMED_PROMPTS = 300
MEAN_INPUT = (1 + 1024) / 2
MEAN_OUTPUT = (0 + 1024) / 2


def parse_table1(text: str) -> list[tuple[int, float, float]]:
    """Table 1's rows: (max concurrency, without MTP, with MTP)."""
    start = text.index("### Random Dataset")
    end = text.index("### ShareGPT", start)
    rows = []
    for line in text[start:end].splitlines():
        m = re.match(r"^\|\s*(\d+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|$", line.strip())
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3))))
    if len(rows) != 7:
        raise ValueError(f"Table 1: expected 7 rows, read {len(rows)}")
    return rows


def record(conc: int, e2el_ms: float) -> dict:
    return {
        "date": DATE,
        "backend": "sglang",
        "model_id": MODEL,
        "max_concurrency": conc,
        "request_rate": "inf",
        "num_prompts": ASSUMED_PROMPTS,
        "completed": ASSUMED_PROMPTS,
        "total_input_tokens": round(ASSUMED_PROMPTS * MEAN_INPUT),
        "total_output_tokens": round(ASSUMED_PROMPTS * MEAN_OUTPUT),
        "mean_e2el_ms": e2el_ms,
    }


MAPPING = """Table 1 of blog/2025-09-02-sglang-amd-deepseek-v3-mtp.md (lm-sys/lm-sys.github.io @03d5107b) -> vLLM key:
"Max Concurrency" -> max_concurrency; request_rate = "inf" (ASSUMED closed loop; see notes)
"Without MTP" (ms) -> plain.jsonl mean_e2el_ms; "With MTP" (ms) -> mtp-k2.jsonl mean_e2el_ms
num_prompts = completed = 300 (ASSUMED: the blog's client snippet, --num-prompt 300)
total_input_tokens = 300 x 512.5 = 153750; total_output_tokens = 300 x 512 = 153600 (ASSUMED: the expected lengths of
  sglang.bench_serving's random dataset at v0.4.10.post1 with its default --random-range-ratio 0.0: input uniform in
  [1, 1024], output uniform in [0, 1024])
duration: not derivable, omitted; date = "2025-08-18" ("Data measured on 18/08/2025"); backend = "sglang";
model_id = deepseek-ai/DeepSeek-V3 (assumed repository name)
"""

NOTES = """ONLY THE MEAN END-TO-END LATENCY is recorded: no TPOT, TTFT, ITL, throughput, run time, token counts or
acceptance length. TPOT cannot be derived without TTFT and the output lengths; the records carry mean_e2el_ms and
no duration (the blog's throughput is shown only as figures). A reader needs E2E-only runs to use this folder.
Load: the tables vary "max concurrency" (1, 2, 4, 8, 16, 32, 64), written as a closed loop (request_rate "inf").
The blog's client snippet (python3 -m sglang.bench_serving --backend sglang --dataset-name random --num-prompt 300
--request-rate 1 --random-input 1024 --random-output 1024) has no --max-concurrency, so the exact client command of
the tables is not shown; if --request-rate 1 was kept, the loads at c 32 and 64 (mean E2E 21-44 s, i.e. about 21-44
requests in flight at 1 request/s) would be rate-limited rather than concurrency-limited. num_prompts = 300 is from
that snippet (assumed).
Lengths (assumed, from the client's defaults at v0.4.10.post1, sgl-project/sglang 33f0de337): sglang.bench_serving's
"random" dataset, --random-input 1024 --random-output 1024, default --random-range-ratio 0.0, so input lengths uniform
in [1, 1024] and output lengths uniform in [0, 1024] (means 512.5 and 512; the totals are these means x 300, not the
seed-1 draws), ignore_eos on (that client's default); the prompts are ShareGPT text cut or repeated to the drawn
length (random_sample), not random token ids.
Servers: SGLang v0.4.10.post1 with ROCm 6.3.0 ("installed in the system environment"; the reproduce section uses the
image lmsysorg/sglang:v0.5.0rc0-rocm630-mi30x instead), 8x MI300X, --tp-size 8 --attention-backend aiter
--mem-fraction-static 0.85 --chunked-prefill-size 131072 --enable-metrics --trust-remote-code; no --kv-cache-dtype
(KV in the model's bf16), no --max-running-requests, no --cuda-graph-max-bs, radix cache on (the default; the text
describes --disable-radix but the commands do not pass it). MTP arm: --speculative-algorithm NEXTN
--speculative-draft-model-path /models/DeepSeek-V3-NextN/ --speculative-num-steps 2 --speculative-eagle-topk 1
--speculative-num-draft-tokens 3 --speculative-accept-threshold-single=0.001. That threshold (default 1.0) relaxes
only SGLang's sampling verification; sglang.bench_serving's sglang backend of that version sends temperature 0.0,
which takes the greedy exact-match verification (python/sglang/srt/speculative/eagle_utils.py at 33f0de337), so it
presumably had no effect on these runs (if the client sampled, the MTP arm would not be lossless).
Draft checkpoint: the NextN (MTP) layer of DeepSeek-V3 extracted to /models/DeepSeek-V3-NextN/ (the download step of
the blog fetches deepseek-ai/DeepSeek-R1 and lmsys/DeepSeek-R1-NextN instead; the V3 NextN repository is not named).
Target: DeepSeek-V3 (FP8 checkpoint; whether V3 or V3-0324 is not stated). Single runs, date 2025-08-18.
Not transcribed: Table 2 (ShareGPT, c 4-64: without MTP 3981.91-11900.36 ms, with MTP 2215.44-8763.65 ms), whose
request count and lengths are unknown.
Audited 2026-12-03 against the blog at 03d5107b: the 14 mean end-to-end latencies are Table 1's, row for row. What
the audit could not settle is said above: the load of the table's rows (the client snippet has --request-rate 1 and
no --max-concurrency) and the lengths (the client's defaults, assumed).
"""

#: Where the manifest's engine and limits come from, written beside them.
COMMENTS = {
    "engine_spec": "specsim's --engine for these runs: 0.4.10.post1",
    "max_batched_tokens": "the engine's limits as specsim models them: --chunked-prefill-size 131072; no "
    "--max-running-requests, so SGLang 0.4.10.post1's own (specsim's default limits for it): 48 on the MTP arm "
    "(server_args.py L514-516 sets 48 for EAGLE, which NEXTN becomes, when it is not given; binding at c 64) and at "
    "least 2048 on the plain arm (sized from the KV pool)",
    "memory_util": "the engine's share of GPU memory for weights and KV cache as the recipe set it: "
    "--mem-fraction-static 0.85, both arms (parallelism below)",
}


def main(folder: Path) -> None:
    text = next(folder.glob("blog_*.md")).read_text()
    rows = parse_table1(text)
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        "plain.jsonl": [record(c, plain) for c, plain, _ in rows],
        "mtp-k2.jsonl": [record(c, mtp) for c, _, mtp in rows],
    }
    runs = []
    for name, records in files.items():
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        entry = {"file": name, "kind": "plain" if name.startswith("plain") else "spec"}
        if entry["kind"] == "spec":
            entry["steps"] = 2
        entry["concurrency"] = [r["max_concurrency"] for r in records]
        runs.append(entry)
        print(f"{SOURCE}/{name}: {len(records)} runs")
    doc = {
        "source": SOURCE,
        "title": "8x MI300X, SGLang 0.4.10.post1, DeepSeek-V3 FP8 (TP8), plain vs NextN MTP (2 steps, 3 draft tokens); "
        "mean E2E latency only (LMSYS blog, AMD)",
        "repository": REPO,
        "commit": COMMIT,
        "paths": [PATH],
        "engine": "sglang",
        "engine_version": "0.4.10.post1",
        "engine_spec": "sglang@0.4.10",
        "max_batched_tokens": 131072,
        "memory_util": 0.85,
        "hardware": "mi300x",
        "gpus": 8,
        "tp": 8,
        "parallelism": "TP8 only (--tp-size 8), no EP, no DP attention; --attention-backend aiter, "
        "--mem-fraction-static 0.85, --chunked-prefill-size 131072",
        "target": "deepseek-v3",
        "weight_dtype": "fp8",
        "kv_dtype": "bf16",
        "drafter": "mtp",
        "draft_checkpoint": "DeepSeek-V3-NextN (local /models/DeepSeek-V3-NextN/; Hugging Face repository not named)",
        "load": "concurrency",
        "lengths": "sglang.bench_serving random dataset, --random-input 1024 --random-output 1024, default "
        "--random-range-ratio 0.0 (input uniform in [1, 1024], output uniform in [0, 1024]; assumed from "
        "the client's defaults), ignore_eos (the client's default), ShareGPT text as prompt content; "
        "300 prompts (assumed)",
        "acceptance": "not recorded",
        "runs": runs,
        "mapping": MAPPING,
        "notes": NOTES,
    }
    (OUT / "source.yaml").write_text(manifest_yaml(doc, COMMENTS))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
