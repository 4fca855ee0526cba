"""Transcribe llm-d's speculative-decoding benchmark report (Qwen3-32B + EAGLE-3 on 2x H200, vLLM) into vLLM's keys.

Repository: llm-d/llm-d at commit b4099d9d710e7e8c0877110e599211c19c6cf684 (the files of pull request #2074, "Add
speculative decoding well-lit path (EAGLE-3 / speculators)", opened 2026-07-20), file
``guides/spec-decoding/benchmark-results/vllm-qwen3-32b-eagle3/README.md``: two arms, plain (Arm A, the
optimized-baseline overlay) and EAGLE-3 at 3 tokens (Arm B, ``guides/spec-decoding/modelserver/gpu/vllm/eagle3/
patch-vllm.yaml``), Qwen/Qwen3-32B at TP 2, one replica, behind the llm-d router, driven by inference-perf v0.6.0 at
a 5-stage constant-rate ladder (1, 2, 4, 8, 16 QPS, 120 s a stage).  The converter reads a verbatim excerpt of that
file (its setup list and its two tables).  Writes examples/bench/public/h200-qwen3-32b-eagle3-llmd/.

The report records per stage: TPOT p50, output tokens/s, mean ITL, TTFT p50 and request latency p50.  It records no
request count, no token totals, no run time and no acceptance length.

FIELD MAPPING (report tables -> vLLM key, one record per stage and arm):
    QPS -> request_rate; burstiness = 1.0 (inference-perf's constant-rate timer draws exponential intervals and
        rescales them to end at the stage's duration: kubernetes-sigs/inference-perf@0949afc8
        inference_perf/loadgen/load_timer.py ConstantLoadTimer, which vLLM's bench serve does at burstiness 1);
        max_concurrency = null (an open loop)
    num_prompts = completed = int(QPS x 120) (ConstantLoadTimer sends int(rate x duration) requests; that all of them
        completed is ASSUMED, the report names no failures)
    total_input_tokens = completed x 2048, total_output_tokens = completed x 256 (ASSUMED: the means of the profile's
        lengths, normal(2048, 1024) in [10, 4096] and normal(256, 128) in [10, 512]; the drawn lengths are not recorded)
    "tok/s" -> output_throughput; duration = total_output_tokens / output_throughput (DERIVED); request_throughput =
        completed / duration; total_token_throughput = (input + output totals) / duration (DERIVED)
    "TPOT p50 (ms)" -> median_tpot_ms; "ITL mean (ms)" -> mean_itl_ms; "TTFT p50 (s)" x 1000 -> median_ttft_ms;
        "Req Lat p50 (s)" x 1000 -> median_e2el_ms
    date = "2026-07-20" (the pull request's; the run date is not stated); backend = "vllm"; model_id = "Qwen/Qwen3-32B"
    Stages 8 and 16 QPS are left out: their median request latency (55-167 s) is of the order of or longer than the
    120 s stage, so requests finished after it and the run time of their records cannot be derived.

    python scripts/public_bench/h200-qwen3-32b-eagle3-llmd.py RAW_FOLDER   (RAW_FOLDER/README.md, the excerpt)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from _manifest import manifest_yaml

SOURCE = "h200-qwen3-32b-eagle3-llmd"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
REPO = "llm-d/llm-d"
COMMIT = "b4099d9d710e7e8c0877110e599211c19c6cf684"
PATH = "guides/spec-decoding/benchmark-results/vllm-qwen3-32b-eagle3/README.md"
DATE = "2026-07-20"
MODEL = "Qwen/Qwen3-32B"
STAGE_S = 120
MEAN_INPUT = 2048
MEAN_OUTPUT = 256
STEPS = 3
KEPT = (1, 2, 4)  # QPS whose records can be built (see the docstring)
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|$")


def _cells(text: str, header: str) -> dict[int, list[float]]:
    """The numeric cells of the table whose header line starts with ``header``, by QPS (thousands commas removed;
    percentage columns skipped)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2 :]:
        m = ROW.match(line.strip())
        if not m:
            break
        cells = [c.strip().replace(",", "") for c in m.group(2).split("|")]
        rows[int(m.group(1))] = [float(c) for c in cells if not c.endswith("%")]
    if sorted(rows) != [1, 2, 4, 8, 16]:
        raise ValueError(f"table {header!r}: expected QPS 1, 2, 4, 8, 16, read {sorted(rows)}")
    return rows


def record(qps: int, tpot_ms: float, tok_s: float, itl_ms: float, ttft_s: float, e2el_s: float) -> dict:
    completed = int(qps * STAGE_S)
    total_in, total_out = completed * MEAN_INPUT, completed * MEAN_OUTPUT
    duration = total_out / tok_s
    return {
        "date": DATE,
        "backend": "vllm",
        "model_id": MODEL,
        "request_rate": qps,
        "burstiness": 1.0,
        "max_concurrency": None,
        "num_prompts": completed,
        "completed": completed,
        "failed": 0,
        "duration": round(duration, 4),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": round(completed / duration, 6),
        "output_throughput": tok_s,
        "total_token_throughput": round((total_in + total_out) / duration, 4),
        "median_tpot_ms": tpot_ms,
        "mean_itl_ms": itl_ms,
        "median_ttft_ms": round(ttft_s * 1000, 3),
        "median_e2el_ms": round(e2el_s * 1000, 3),
    }


MAPPING = """Tables of guides/spec-decoding/benchmark-results/vllm-qwen3-32b-eagle3/README.md (llm-d/llm-d @b4099d9d) ->
vLLM key, one record per stage: QPS -> request_rate, burstiness 1.0 (inference-perf's constant-rate timer: exponential
intervals rescaled to the stage, kubernetes-sigs/inference-perf@0949afc8 inference_perf/loadgen/load_timer.py),
max_concurrency null; num_prompts = completed = QPS x 120 (the timer sends int(rate x 120 s) requests; all completed,
ASSUMED); total_input_tokens = completed x 2048, total_output_tokens = completed x 256 (ASSUMED: the profile's mean
lengths); "tok/s" -> output_throughput; duration = total_output_tokens / output_throughput (DERIVED);
request_throughput and total_token_throughput from those (DERIVED); "TPOT p50 (ms)" -> median_tpot_ms; "ITL mean (ms)"
-> mean_itl_ms; "TTFT p50 (s)" x 1000 -> median_ttft_ms; "Req Lat p50 (s)" x 1000 -> median_e2el_ms; date 2026-07-20
(the pull request's), backend vllm, model_id Qwen/Qwen3-32B.
"""

NOTES = """Source: the benchmark report of llm-d pull request #2074 (rahul-tuli, "Add speculative decoding well-lit path
(EAGLE-3 / speculators)", opened 2026-07-20, open when read), read at commit b4099d9d, with the spec arm's
launch (guides/spec-decoding/modelserver/gpu/vllm/eagle3/patch-vllm.yaml at b4099d9d: vllm serve Qwen/Qwen3-32B
--tensor-parallel-size=2 --speculative-config {"model": "RedHatAI/Qwen3-32B-speculator.eagle3", "method": "eagle3",
"num_speculative_tokens": 3}, no other engine flag, so vLLM's own limits and memory share) and the guide
(guides/spec-decoding/README.md at b4099d9d: Arm A is optimized-baseline/modelserver/gpu/vllm/base with Qwen3-32B,
replicas 1, TP 2, spec decoding off; the version of that overlay read here, at 05b03f75, serves Qwen/Qwen3.5-4B at TP 1
in 2 replicas, so the plain arm's file as run is not read here: the report's statement is taken).
Engine release: vllm/vllm-openai:v0.24.0, the image of guides/recipes/modelserver/components/images/gpu-vllm/
kustomization.yaml in both of its stored versions (761e4480, 64db62be); the file is not stored at b4099d9d itself, so
the release of these runs is the stored image's, not read at the runs' commit.
Both arms sit behind the llm-d router (EPP) with one replica: the router adds its own latency to TTFT and end-to-end
latency, not to TPOT.
Arrivals: inference-perf's constant-rate timer read at kubernetes-sigs/inference-perf@0949afc8 (exponential gaps
rescaled to the stage); the copy in the v0.6.0 release the report names was not read (the release is not on PyPI from
here and its tag was not mapped to a commit). specsim takes any request rate as Poisson arrivals, as it reads GuideLLM's
constant-rate runs; burstiness only bounds how fast the requests can have been sent.
ONLY 3 OF THE 5 STAGES: 8 and 16 QPS are past the deployment's capacity (median TTFT 9.8-108 s, median request latency
55-167 s against a 120 s stage, output throughput flat at about 1,650 / 1,450 tok/s), so requests finished after
their stage and no run time can be derived; they are left out. Their report rows: TPOT p50 209.7 / 210.1 ms (8 QPS),
222.5 / 220.7 ms (16 QPS), plain / EAGLE-3.
Lengths: random token ids (inference-perf's random data), input normal(2048, 1024) in [10, 4096], output normal(256,
128) in [10, 512]; the records carry the means 2048 / 256 (ASSUMED; the drawn lengths and whether the clipping clamps
or redraws are not recorded). At 1-4 QPS an open loop's output throughput is the rate times the mean output length
whatever the speed, yet the arms' tok/s differ by -8%, +3%, +3% (265 / 244, 525 / 538, 1,006 / 1,032): the arms' drawn
lengths, or the stage windows, differ; duration here is the mean length's over the measured tok/s, so it differs by
as much between the arms.
No acceptance length is recorded (the guide names vLLM's counters and says code and math see about 2.5-3.0 accepted
tokens a step on Qwen3-32B with EAGLE-3, chat about 2.1-2.3, not for these random-token prompts).
ITL is the mean gap between streamed chunks (a speculative step can stream several tokens), so not a per-token time;
use TPOT. Single runs, one stage each.
Audited 2026-12-06 against the report at b4099d9d: the 30 values of the 1-4 QPS rows are the tables', row for row.
"""


def main(folder: Path) -> None:
    text = (folder / "README.md").read_text()
    speed = _cells(text, "| QPS | Arm A TPOT p50")
    detail = _cells(text, "| QPS | Arm A ITL mean")
    OUT.mkdir(parents=True, exist_ok=True)
    arms = {"plain.jsonl": 0, "eagle3-k3.jsonl": 1}
    runs = []
    for name, arm in arms.items():
        records = []
        for qps in KEPT:
            tpot = speed[qps][arm]
            tok_s = speed[qps][2 + arm]
            itl, ttft, e2el = detail[qps][arm], detail[qps][2 + arm], detail[qps][4 + arm]
            records.append(record(qps, tpot, tok_s, itl, ttft, e2el))
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        entry = {"file": name, "kind": "spec" if arm else "plain"}
        if arm:
            entry["steps"] = STEPS
        entry["request_rate"] = list(KEPT)
        runs.append(entry)
        print(f"{SOURCE}/{name}: {len(records)} runs")
    doc = {
        "source": SOURCE,
        "title": "2x H200 (TP2), vLLM 0.24.0 behind the llm-d router, Qwen3-32B BF16 + EAGLE-3 head "
        "(RedHatAI speculator) at 3 tokens, request rates 1, 2, 4 QPS (llm-d PR #2074)",
        "repository": REPO,
        "commit": COMMIT,
        "paths": [
            PATH,
            "guides/spec-decoding/modelserver/gpu/vllm/eagle3/patch-vllm.yaml",
            "guides/spec-decoding/README.md",
        ],
        "engine": "vllm",
        "engine_version": "0.24.0 (image vllm/vllm-openai:v0.24.0; see notes)",
        "engine_spec": "vllm@0.24.0",
        "hardware": "h200",
        "gpus": 2,
        "tp": 2,
        "parallelism": "TP2, one replica, behind the llm-d router (EPP); no engine flag but the model, TP and the "
        "speculative config, so vLLM 0.24.0's own scheduling limits and memory share",
        "target": "qwen3-32b",
        "weight_dtype": "bf16",
        "kv_dtype": "bf16",
        "drafter": "eagle3",
        "draft_checkpoint": "RedHatAI/Qwen3-32B-speculator.eagle3",
        "load": "rate",
        "lengths": "inference-perf random token ids, input normal(2048, 1024) in [10, 4096], output normal(256, 128) "
        "in [10, 512] (means 2048 / 256 assumed); QPS x 120 requests over a 120 s stage, exponential gaps",
        "acceptance": "not recorded",
        "runs": runs,
        "mapping": MAPPING,
        "notes": NOTES,
    }
    (OUT / "source.yaml").write_text(manifest_yaml(doc))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
