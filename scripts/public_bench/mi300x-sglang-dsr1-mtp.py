"""Transcribe benenzhu/sglang_P's hand-written DeepSeek-R1-0528 MI300X summary (plain vs MTP) into vLLM's result keys.

Repository: benenzhu/sglang_P (a personal fork of SGLang main as of 2026-01-26, upstream commit a883906a2, plus an
FP8 block-scale GEMM change for MI300X) at commit a5d5c4554788b148c0f9be6d2c21c48dda5b4ed8 (2026-01-30).  Files read:
``__tune.md`` (the author's summary of ``benchmark_serving.py`` output; last changed in ff43a396dd, its first version
7f7c2df668 of 2026-01-29 had other MTP numbers at c 32 and 64), ``run_server.sh`` (server flags; its history gives the
plain arm's flags at 910cd2e72d and the MTP arm's at 7f7c2df668), ``run_bench.sh`` and ``run_bench_all.sh`` (client
flags).  Writes examples/bench/public/mi300x-sglang-dsr1-mtp/.

Arms (__tune.md's headings): "AFTER fix" = plain.jsonl (the fork with its FP8 fix, no speculation); "add eagle (MTP=3)"
c 4, 8, 16 = mtp-k3.jsonl (the sweep of the first version, unchanged in the final one); "add eagle (MTP=3)" c 32, 64,
titled "(max_running=128)" = mtp-k3-maxrun128.jsonl (a rerun with --max-running-requests 128 that replaced the first
version's c 32 / 64 figures).  Not transcribed: "BEFORE" (the fork before its FP8 fix, another build) and the first
version's superseded c 32 / 64 MTP figures (median TPOT 20.21 / 37.02 ms, mean 22.42 / 35.38 ms, output 1160.75 /
1139.65 tok/s), whose server setting is not stated.

FIELD MAPPING (__tune.md -> vLLM key):
    "CONC<c>" -> max_concurrency = c; request_rate = "inf" (the client's --request-rate inf)
    "Mean TPOT (ms)" -> mean_tpot_ms; "Median TPOT (ms)" -> median_tpot_ms; "P99 TPOT (ms)" -> p99_tpot_ms (as given)
    Output Throughput table "CONC<c> | x" (MTP arm only) -> output_throughput = x
    num_prompts = completed = 2 x c: NOT in __tune.md; run_bench.sh and run_bench_all.sh (whose result file name
        dsr1_fp8_mi300x_docker_conc{c}.json is the sweep's) pass --num-prompts $((CONC * 2)); all assumed completed
    total_input_tokens, total_output_tokens: NOT recorded; the sums of the lengths the client draws:
        kimbochen/bench_serving's benchmark_serving.py (cloned by run_bench.sh), random dataset, --random-input-len
        1024 --random-output-len 1024 --random-range-ratio 0.8, seed 0 (its default): numpy's legacy MT19937 seeded
        with 0, input lengths randint(819, 1025, N) then output lengths randint(819, 1025, N), N = 2 x c; the same
        sampler whose draws reproduce SemiAnalysis InferenceX's recorded token ratios exactly (its copy of the same
        script); here not checkable (the summary records no token counts)
    duration = total_output_tokens / output_throughput (MTP arm only; the plain arm records no throughput, so it has
        no duration and no request_throughput); request_throughput = completed / duration
    date: not recorded; the commit date of the __tune.md version that first holds the figure (2026-01-29 for all)
    backend = "sglang"; model_id = "deepseek-ai/DeepSeek-R1-0528" (the servers load /root/DeepSeek-R1-0528; run_bench.sh
        names deepseek-ai/DeepSeek-R1-0528 in a comment)
    No acceptance length: none is recorded.

    python scripts/public_bench/mi300x-sglang-dsr1-mtp.py RAW_FOLDER      (RAW_FOLDER/__tune.md)
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

from _manifest import manifest_yaml

SOURCE = "mi300x-sglang-dsr1-mtp"
OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public" / SOURCE
REPO = "benenzhu/sglang_P"
COMMIT = "a5d5c4554788b148c0f9be6d2c21c48dda5b4ed8"
MODEL = "deepseek-ai/DeepSeek-R1-0528"
DATE = "2026-01-29"
ISL = OSL = 1024
RANGE_RATIO = 0.8
PROMPTS_PER_USER = 2


def _numpy_legacy_rng(seed: int) -> random.Random:
    """A random.Random in the state numpy's legacy ``np.random.seed(seed)`` leaves MT19937 in (init_genrand)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    rng = random.Random()
    rng.setstate((3, tuple(mt) + (624,), None))
    return rng


def _randint(rng: random.Random, low: int, high: int, n: int) -> list[int]:
    """numpy RandomState.randint(low, high, n) for int64: masked rejection sampling on 32-bit draws."""
    span = high - 1 - low
    if span == 0:
        return [low] * n
    mask = (1 << span.bit_length()) - 1
    out = []
    for _ in range(n):
        while True:
            v = rng.getrandbits(32) & mask
            if v <= span:
                break
        out.append(low + v)
    return out


def random_dataset_totals(n: int, seed: int = 0) -> tuple[int, int]:
    rng = _numpy_legacy_rng(seed)
    ins = _randint(rng, int(ISL * RANGE_RATIO), ISL + 1, n)
    outs = _randint(rng, int(OSL * RANGE_RATIO), OSL + 1, n)
    return sum(ins), sum(outs)


def parse(text: str) -> tuple[dict, dict]:
    """__tune.md -> ({section: {c: {stat: value}}}, {c: MTP output throughput})."""
    sections: dict = {}
    section = conc = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("## "):
            section, conc = s[3:].rstrip(":").strip(), None
            sections.setdefault(section, {})
            continue
        m = re.match(r"^CONC(\d+)\b[^|]*$", s)
        if m and section is not None:
            conc = int(m.group(1))
            sections[section].setdefault(conc, {})
            continue
        m = re.match(r"^(Mean|Median|P99) TPOT \(ms\):\s*([0-9.]+)", s)
        if m and section is not None and conc is not None:
            sections[section][conc][m.group(1).lower()] = float(m.group(2))
    throughput = {}
    for s in text.split("## Output Throughput", 1)[1].splitlines():
        m = re.match(r"^\|\s*CONC(\d+)\s*\|\s*\**([0-9.]+)\**\s*\|", s.strip())
        if m:
            throughput[int(m.group(1))] = float(m.group(2))
    return sections, throughput


def record(conc: int, stats: dict, throughput: float | None) -> dict:
    n = PROMPTS_PER_USER * conc
    total_in, total_out = random_dataset_totals(n)
    rec = {
        "date": DATE,
        "backend": "sglang",
        "model_id": MODEL,
        "max_concurrency": conc,
        "request_rate": "inf",
        "num_prompts": n,
        "completed": n,
    }
    if throughput is not None:
        duration = total_out / throughput
        rec.update({"duration": duration, "request_throughput": n / duration, "output_throughput": throughput})
    rec.update({"total_input_tokens": total_in, "total_output_tokens": total_out})
    for stat in ("mean", "median", "p99"):
        if stat in stats:
            rec[f"{stat}_tpot_ms"] = stats[stat]
    return rec


MAPPING = """__tune.md (benenzhu/sglang_P @a5d5c455) -> vLLM key:
"CONC<c>" heading -> max_concurrency = c; request_rate = "inf" (client --request-rate inf)
"Mean TPOT (ms)" -> mean_tpot_ms; "Median TPOT (ms)" -> median_tpot_ms; "P99 TPOT (ms)" -> p99_tpot_ms
"Output Throughput (tok/s)" table (MTP arm only) -> output_throughput
num_prompts = completed = 2 x c (run_bench.sh / run_bench_all.sh --num-prompts $((CONC * 2)); not in __tune.md)
total_input_tokens, total_output_tokens = sums of the client's seed-0 random-dataset draws (kimbochen/bench_serving
  benchmark_serving.py: numpy legacy MT19937 seed 0, input randint(819, 1025, N) then output randint(819, 1025, N),
  N = 2 x c); NOT recorded, not checkable here
duration = total_output_tokens / output_throughput; request_throughput = completed / duration (MTP arm only)
date = commit date of the first __tune.md version holding the figure (2026-01-29); backend = "sglang";
model_id = deepseek-ai/DeepSeek-R1-0528 (served from /root/DeepSeek-R1-0528)
"""

NOTES = """Arms: plain.jsonl = __tune.md's "AFTER fix" / "fp8_fix" (the fork with its FP8 block-scale GEMM change,
no speculation); mtp-k3.jsonl = "add eagle (MTP=3)" at c 4, 8, 16, the original sweep; mtp-k3-maxrun128.jsonl = the
same arm's c 32 and 64, re-run with --max-running-requests 128 (headed "CONC32 (max_running=128)"): a separate file
because the setting differs from the sweep's (run_server.sh at 7f7c2df668 and at HEAD: --max-running-requests 256).
At c <= 64 neither cap binds on the running batch, yet the rerun's c 64 median TPOT (27.97 ms) is far below the
first version's (37.02 ms): other state changed between the runs, or the cap acts through memory/graph settings.
The first version's c 32 / 64 MTP figures (median 20.21 / 37.02 ms, mean 22.42 / 35.38 ms, 1160.75 / 1139.65 tok/s)
were replaced by the author and are NOT transcribed; nor is the "BEFORE" / "current" arm (the fork before its FP8
fix: median TPOT 28.76, 37.19, 47.17, 46.60, 61.34 ms at c 4-64), another build than the MTP arm's.
Server flags (run_server.sh): both arms --tp 8 --attention-backend aiter --kv-cache-dtype fp8_e4m3
--chunked-prefill-size 131072 --max-prefill-tokens 131072 --num-continuous-decode-steps 4 --mem-fraction-static 0.8
--disable-radix-cache. Plain: --cuda-graph-max-bs 256, no --max-running-requests (run_server.sh at 910cd2e72d, the
commit that added the fix and the benchmark script; assumed to be the plain arm's). MTP: --cuda-graph-max-bs 512
--speculative-algorithm EAGLE --max-running-requests 256 (128 for the rerun); no --speculative-num-steps /
--speculative-eagle-topk / --speculative-num-draft-tokens, so SGLang picks its DeepSeek defaults (3 steps, top-k 1,
4 draft tokens), matching the author's "MTP=3"; the draft is the checkpoint's own NextN layer.
Engine: the fork is SGLang main as of 2026-01-26 (upstream a883906a2, #16892; no release number) plus the author's
changes (python/sglang/srt/layers/quantization/fp8_utils.py and cuda_graph_runner.py in 910cd2e72d).
Derived or assumed, not recorded: num_prompts / completed (2 x c, from the committed client scripts), the token
totals (seed-0 draws of the client's random dataset; the summary gives no token counts to check them against; the
mean is about 920 in and 920 out per request, but with only 8-128 requests the sums differ from 921.5 x N by up to
2%), duration and request_throughput (MTP arm only, from the totals and the recorded output throughput). The plain
arm has NO duration (no throughput is recorded for it): reading it needs a reader that accepts a closed-loop run
without a duration. Dates are commit dates (2026-01-29), not recorded run dates. TPOT: means and medians as
given; the plain arm has no mean at c 16, 32, 64 (median and p99 only). Single runs; no TTFT, ITL or E2E latency and
no acceptance length are recorded. The figures are a hand-copied summary of benchmark_serving.py's console output;
no result JSON is committed.
Audited 2026-12-03: the plain arm and the MTP arm's c 4-16 are __tune.md's figures at 7f7c2df668, an earlier
version than the one cited, which also holds the first c 32 / 64 MTP figures named above as replaced (they match);
the c 32 / 64 rerun was not read again (the index the audit used holds no later version). The token totals of all
ten rows reproduce the client's seed-0 draws. The plain arm's median TPOT stands in for its mean at c 16-64: at c 4
and 8, where both are recorded, they differ by 0.3%; the MTP arm's mean and median differ by up to 9% (c 16), so
both arms are read by their medians (calibrate-engine says so: a mean against a median is not the same
statistic); read by its mean, the MTP arm's c 16 TPOT is 14.49 ms, not 13.24.
"""

#: Where the manifest's engine and limits come from, written beside them.
COMMENTS = {
    "engine_spec": "specsim's --engine for these runs: SGLang main of 2026-01-26: between the 0.5.8 and 0.5.9 "
    "releases, specsim's spec-v1 range",
    "max_batched_tokens": "the engine's limits as specsim models them: --max-running-requests 256 (128 for the rerun "
    "file), --chunked-prefill-size 131072",
    "memory_util": "the engine's share of GPU memory for weights and KV cache as the recipe set it: "
    "--mem-fraction-static 0.8, both arms (run_server.sh, notes below)",
}


def main(folder: Path) -> None:
    sections, throughput = parse((folder / "__tune.md").read_text())
    plain = sections["AFTER fix"]
    mtp = sections["add eagle (MTP=3)"]
    files = {
        "plain.jsonl": [record(c, plain[c], None) for c in sorted(plain)],
        "mtp-k3.jsonl": [record(c, mtp[c], throughput[c]) for c in sorted(mtp) if c <= 16],
        "mtp-k3-maxrun128.jsonl": [record(c, mtp[c], throughput[c]) for c in sorted(mtp) if c > 16],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    runs = []
    for name, records in files.items():
        (OUT / name).write_text("".join(json.dumps(r) + "\n" for r in records))
        entry = {"file": name, "kind": "plain" if name.startswith("plain") else "spec"}
        if entry["kind"] == "spec":
            entry["steps"] = 3
        entry["concurrency"] = [r["max_concurrency"] for r in records]
        runs.append(entry)
        print(f"{SOURCE}/{name}: {len(records)} runs")
    doc = {
        "source": SOURCE,
        "title": "8x MI300X, SGLang fork (main of 2026-01-26 + FP8 GEMM change), DeepSeek-R1-0528 FP8 (TP8), plain vs "
        "built-in MTP via EAGLE, 3 steps (benenzhu/sglang_P __tune.md)",
        "repository": REPO,
        "commit": COMMIT,
        "paths": ["__tune.md", "run_server.sh", "run_bench.sh", "run_bench_all.sh"],
        "engine": "sglang",
        "engine_version": "SGLang main of 2026-01-26 (upstream a883906a2) in the fork benenzhu/sglang_P; no release "
        "number stated",
        "engine_spec": "sglang@0.5.8",
        "max_num_seqs": 256,
        "max_batched_tokens": 131072,
        "memory_util": 0.8,
        "hardware": "mi300x",
        "gpus": 8,
        "tp": 8,
        "parallelism": "TP8 only (no EP, no DP attention); --num-continuous-decode-steps 4; plain --cuda-graph-max-bs "
        "256; MTP --cuda-graph-max-bs 512 and --max-running-requests 256 (c 4-16) or 128 (c 32, 64 rerun)",
        "target": "deepseek-v3",
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "drafter": "mtp",
        "draft_checkpoint": MODEL,
        "load": "concurrency",
        "lengths": "random dataset of kimbochen/bench_serving (backend vllm, OpenAI completions): input and output "
        "lengths uniform integers in [819, 1024] (--random-input-len 1024 --random-output-len 1024 "
        "--random-range-ratio 0.8), --ignore-eos, seed 0, 2 x c prompts, closed loop of c "
        "(--max-concurrency c, --request-rate inf), no warm-up",
        "acceptance": "not recorded",
        "runs": runs,
        "mapping": MAPPING,
        "notes": NOTES,
    }
    (OUT / "source.yaml").write_text(manifest_yaml(doc, COMMENTS))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
