"""Transcribe SemiAnalysis InferenceX's single-node DeepSeek-R1-0528 runs, plain and with MTP, into vLLM's result keys.

Source: SemiAnalysisAI/InferenceX-app at commit 528c4146b8f502fcbce8df7870a935a970cbae25 (2026-06-14, "refresh Cypress
fixtures"; the commit is held by the fork vngcloud/InferenceX-app, from which it was read), files
``packages/app/cypress/fixtures/api/benchmarks-history.json`` and ``packages/app/cypress/fixtures/api/benchmarks.json``:
snapshots of the InferenceX dashboard's database, one row per (configuration, concurrency, date), each naming the
GitHub Actions run of SemiAnalysisAI/InferenceX that measured it.  The launch recipes (server flags, images, client
flags) are SemiAnalysisAI/InferenceX's ``benchmarks/`` scripts and ``.github/configs/*-master.yaml`` at the commits named
in DEPLOYMENTS below (the last main-branch commit on or before each run's date).

Which rows: single-node rows (``is_multinode`` false) of one (GPU, framework, precision, TP, EP, DP-attention,
input/output length) with both a plain (``spec_method`` none) and an MTP arm at two or more concurrencies.  Per arm one
measurement campaign (one Actions run) is kept, chosen by hand in DEPLOYMENTS: for MTP the campaign with the most
concurrencies, for plain the campaign nearest in date with the same image where the configs show one (exceptions are
said in each folder's notes), so that each arm's rows come from one build; rows from other dates are left out (other
builds; the dashboard history shows the plain arm drifting by up to 40% across them).  ATOM: one deployment only.
Rows whose throughput and E2E latency imply fewer than 0.5 c or more than 1.25 c requests in flight (Little's law for
a closed loop of c) are dropped and named in the notes (one: ATOM MTP 1k/1k c 512).  The two files hold the same row
where they overlap (their values agree); benchmarks.json adds means, standard deviations and p90/p99.9 for the rows it
holds.

FIELD MAPPING (source row -> vLLM key; the source gives seconds and per-GPU throughputs):
    date = date; backend = "sglang" | "tensorrt-llm" (the framework) | "openai" (ATOM, not a vLLM/SGLang/TRT engine);
    model_id = the master config's ``model`` for the arm; max_concurrency = conc; request_rate = "inf" (the recipes'
    benchmark_lib.sh passes --request-rate inf); num_prompts = completed = N = 10 x conc (the recipes' --num-prompts);
    output_throughput = output_tput_per_gpu x TP; total_token_throughput = tput_per_gpu x TP (InferenceX's
    utils/process_result.py divides the client's throughputs by TP x PP x PCP GPUs, PP = PCP = 1 here);
    total_input_tokens, total_output_tokens: the sums of the N prompt and output lengths that InferenceX's client
    (utils/bench_serving/benchmark_serving.py, random dataset, seed 0, --random-range-ratio 0.8, --ignore-eos) draws:
    numpy's legacy MT19937 seeded with 0, input lengths randint(int(0.8 (I - t)), I - t + 1, N) + t and then output
    lengths randint(int(0.8 O), O + 1, N), where t = 2 for arms run with --use-chat-template (the chat template's
    length less one, fitted: the only value that reproduces those arms' ratios) and 0 otherwise.  Each row is checked:
    the sums' ratio must equal the row's input_tput_per_gpu / output_tput_per_gpu to within 1e-5 (they agree to 1e-12
    where they agree at all; the draws are recomputed here in pure Python).  Rows that miss by less than 1e-2 (the
    server returned slightly other output counts: ATOM's MTP arm, two B200 1k/8k rows) keep the draws' input sum (the
    client's own prompt lengths) and get total_output_tokens = total_input_tokens x output_tput_per_gpu /
    input_tput_per_gpu; rows that miss by more (another client version or prompt count; none in the kept campaigns)
    would get total_output_tokens = N x (int(0.8 O) + O) / 2 and total_input_tokens from the measured ratio.  All
    such rows are listed in the folder's notes;
    duration = total_output_tokens / output_throughput; request_throughput = completed / duration;
    {mean,median,std,p90,p99,p99.9}_{ttft,tpot,itl,e2el}_ms = the row's {stat}_{metric} x 1000, for every one the row
    holds (history rows hold medians and p99; the rows benchmarks.json holds also have means, stds, p90, p99.9).
    Left out: the *_intvty keys (1 / TPOT), power and energy, input_tput_per_gpu (used only for the check above).
    No acceptance length: the rows record none.

    python scripts/public_bench/inferencex-dsr1-mtp.py /work/research/corpus-b/inferencex-fixture-dsr1-mtp/raw
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from _manifest import manifest_yaml

OUT = Path(__file__).resolve().parents[2] / "examples" / "bench" / "public"
REPO = "SemiAnalysisAI/InferenceX-app"
COMMIT = "528c4146b8f502fcbce8df7870a935a970cbae25"
PATHS = [
    "packages/app/cypress/fixtures/api/benchmarks-history.json",
    "packages/app/cypress/fixtures/api/benchmarks.json",
]
RUN_URL = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/"
RANGE_RATIO = 0.8
CHAT_TEMPLATE_T = 2
RATIO_TOLERANCE = 1e-5
LITTLE_SLACK = 1.25
OUTPUT_TOLERANCE = 1e-2
STATS = ("mean", "median", "std", "p90", "p99", "p99.9")
METRICS = ("ttft", "tpot", "itl", "e2el")
LENGTHS = {(1024, 1024): "1k1k", (1024, 8192): "1k8k", (8192, 1024): "8k1k"}


# -- the client's random lengths: numpy's legacy RandomState(seed).randint, in pure Python -------------------------


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


def random_dataset_totals(n: int, isl: int, osl: int, t: int, seed: int = 0) -> tuple[int, int]:
    """The sums of the prompt and output lengths InferenceX's benchmark_serving.py draws for the random dataset."""
    rng = _numpy_legacy_rng(seed)
    il = isl - t
    ins = _randint(rng, int(il * RANGE_RATIO), il + 1, n)
    outs = _randint(rng, int(osl * RANGE_RATIO), osl + 1, n)
    return sum(ins) + t * n, sum(outs)


# -- the deployments -------------------------------------------------------------------------------------------------


def _recipe(commit: str, *paths: str) -> str:
    return "; ".join(f"SemiAnalysisAI/InferenceX@{commit[:10]}:{p}" for p in paths)


ITL_CHUNK_10 = (
    "ITL is per streamed chunk (--stream-interval 10; a speculative step also emits several tokens at "
    "once), so it is not a per-token time; use TPOT."
)
ITL_CHUNK_30 = ITL_CHUNK_10.replace("interval 10", "interval 30")
ITL_AMD = (
    "ITL: no --stream-interval (SGLang streams every token by default), but a speculative step emits several "
    "tokens at once, so the MTP arm's ITL exceeds its TPOT; use TPOT."
)
SGLANG_MTP_CLIENT = (
    "the MTP arm's client adds --use-chat-template (prompts wrapped in DeepSeek-R1's chat template); "
    "the plain arm's prompts are raw"
)
COMMON_LENGTHS = (
    "InferenceX's random dataset (utils/bench_serving/benchmark_serving.py, seed 0): prompt and output "
    "lengths uniform integers in [int(0.8 L), L] (--random-range-ratio 0.8) for L = {lengths}, "
    "--ignore-eos, closed loop of --max-concurrency c with --request-rate inf, 10 x c prompts and "
    "2 x c warm-up requests (from InferenceX d053ae24e, 2026-01-21; earlier campaigns, the B200 SGLang plain arm and "
    "both EP8 sources' arms, sent one test request); each prompt is consecutive token ids from a random offset, not "
    "text, on which MTP accepts less than its published rate on real text (InferenceX's own note: raw random tokens "
    "tank spec-decode acceptance); "
)

#: How specsim models each deployment (its manifest's engine_spec, engine limits and memory share), each value with
#: where it comes from, written beside it in the manifest.
ENGINE_WHY = "specsim's --engine for these runs: "
LIMITS_WHY = "the engine's limits as specsim models them: "
SGLANG_MEMORY_WHY = (
    "the engine's share of GPU memory for weights and KV cache as the recipe set it: --mem-fraction-static {}, "
    "both arms (parallelism below)"
)
TRTLLM_MEMORY_WHY = (
    "the engine's memory setting as the recipe set it (for TensorRT-LLM a share of what the weights leave): "
    "kv_cache_config free_gpu_memory_fraction {}, both arms (parallelism below)"
)

DEPLOYMENTS = [
    {
        "folder": "h200-sglang-dsr1-fp8-mtp",
        "itl": ITL_CHUNK_10,
        "hw": "h200",
        "fw": "sglang",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x H200, SGLang 0.5.12 (lmsysorg/sglang:v0.5.12-cu130), DeepSeek-R1-0528 FP8 (TP8), plain vs "
        "built-in MTP via EAGLE, 2 steps / 3 draft tokens (SemiAnalysis InferenceX)",
        "engine": "sglang",
        "backend": "sglang",
        "engine_version": "0.5.12 (image lmsysorg/sglang:v0.5.12-cu130, both arms)",
        "modelled": {
            "engine_spec": ("sglang@0.5.12", ENGINE_WHY + "0.5.12, both arms"),
            "max_num_seqs": (256, None),
            "max_batched_tokens": (
                32768,
                LIMITS_WHY + "--max-running-requests 256 at 8k/1k (512 at 1k/1k), --chunked-prefill-size 32768",
            ),
            "memory_util": (0.82, SGLANG_MEMORY_WHY.format(0.82)),
        },
        "hardware": "h200",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "bf16",
        "parallelism": "TP8, DP 1, no DP attention; MTP arm --ep-size 1 (plain: no --ep-size, SGLang's default 1). "
        "--max-running-requests and --cuda-graph-max-bs 512 at 1k/1k, 256 at 8k/1k; "
        "--chunked-prefill-size 32768, --max-prefill-tokens 32768, --mem-fraction-static 0.82, "
        "--attention-backend flashinfer, --stream-interval 10, --disable-radix-cache, no "
        "--kv-cache-dtype (KV in the model's bf16). MTP arm: --speculative-algorithm EAGLE "
        "--speculative-num-steps 2 --speculative-num-draft-tokens 3 --speculative-eagle-topk 1, "
        "SGLANG_ENABLE_SPEC_V2=1",
        "lengths_extra": SGLANG_MTP_CLIENT,
        "recipes": _recipe(
            "2fc18b7594beb9dc13f0b437f0c60f9c77af0875",
            "benchmarks/single_node/dsr1_fp8_h200.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-h200-sglang)",
        )
        + "; "
        + _recipe(
            "70bf3a25b6b196426005e417a47a3eedabe4fb11",
            "benchmarks/single_node/dsr1_fp8_h200_mtp.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-h200-sglang-mtp)",
        ),
        "arms": [
            # (file, kind, steps, isl, osl, actions run id, chat template, model id)
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "25980019087", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k2-1k1k.jsonl", "spec", 2, 1024, 1024, "26135241056", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "25980019087", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k2-8k1k.jsonl", "spec", 2, 8192, 1024, "26135241056", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "SUSPICIOUS MTP ARM (kept): at 1k/1k the MTP arm's median TPOT is no better than plain, slightly worse, "
            "at every concurrency both hold (c 4: {h200_c4_mtp} vs {h200_c4_plain} ms; see the comparison below), and "
            "only 1.1x better at 8k/1k, while the same 2-step SGLang recipe gives 1.3x on B200 (across two builds) and "
            "the 3-step one 1.6x on MI355X at c 4 (their folders). Both arms are one image (v0.5.12-cu130) three "
            "days apart, so it is not "
            "a build mismatch: low acceptance (random-token prompts in a chat template), the SGLANG_ENABLE_SPEC_V2 "
            "path or the flashinfer attention backend on Hopper are possible; no acceptance length is recorded to "
            "tell. Kept because it is a real measurement of this recipe; a validation that assumes a typical DeepSeek "
            "MTP acceptance will over-predict the gain here.",
        ],
    },
    {
        "folder": "mi355x-sglang-dsr1-fp8-mtp",
        "itl": ITL_AMD,
        "hw": "mi355x",
        "fw": "sglang",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x MI355X, SGLang 0.5.12 (lmsysorg/sglang:v0.5.12-rocm700-mi35x), DeepSeek-R1-0528 FP8 (TP8), plain vs "
        "built-in MTP via EAGLE, 3 steps / 4 draft tokens (SemiAnalysis InferenceX)",
        "engine": "sglang",
        "backend": "sglang",
        "engine_version": "0.5.12 (image lmsysorg/sglang:v0.5.12-rocm700-mi35x, both arms)",
        "modelled": {
            "engine_spec": ("sglang@0.5.12", ENGINE_WHY + "0.5.12, both arms"),
            "max_num_seqs": (256, None),
            "max_batched_tokens": (196608, LIMITS_WHY + "--chunked-prefill-size 196608"),
            "memory_util": (0.8, SGLANG_MEMORY_WHY.format(0.8)),
        },
        "hardware": "mi355x",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "TP8 (plain: no --ep-size; MTP: --ep-size 1), no DP attention; --attention-backend aiter, "
        "--kv-cache-dtype fp8_e4m3, --chunked-prefill-size 196608, --max-prefill-tokens 196608, "
        "--mem-fraction-static 0.8, --num-continuous-decode-steps 8, --disable-radix-cache, "
        "--cuda-graph-max-bs = c; MTP arm also --max-running-requests = c, SGLANG_AITER_MLA_PERSIST=1, "
        "SGLANG_ENABLE_SPEC_V2=1, --speculative-algorithm EAGLE --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 (plain: no --max-running-requests)",
        "lengths_extra": SGLANG_MTP_CLIENT,
        "recipes": _recipe(
            "475218b6482cdf55aa31d095f3c92f2793bc8437",
            "benchmarks/single_node/dsr1_fp8_mi355x.sh",
            ".github/configs/amd-master.yaml (dsr1-fp8-mi355x-sglang)",
        )
        + "; "
        + _recipe(
            "542a246068014d363d1caa75daddaa0223da26d3",
            "benchmarks/single_node/dsr1_fp8_mi355x_mtp.sh",
            ".github/configs/amd-master.yaml (dsr1-fp8-mi355x-sglang-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "26046382574", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "26197707118", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "26046382574", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "26197707118", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "The plain campaign is 2026-05-19 (the config names the same image as the MTP arm's); a 2026-05-27 plain "
            "campaign of the same image and script (concurrencies 4, 8, 16, 64) is left out. At 8k/1k the plain "
            "campaign ran concurrency 64 at TP4 (a different deployment, left out), so that arm has c 4 and 32 only.",
        ],
    },
    {
        "folder": "mi355x-sglang-dsr1-fp4-mtp",
        "itl": ITL_AMD,
        "hw": "mi355x",
        "fw": "sglang",
        "precision": "fp4",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x MI355X, SGLang 0.5.12 (lmsysorg/sglang:v0.5.12-rocm700-mi35x), DeepSeek-R1-0528 MXFP4 (TP8), plain "
        "vs built-in MTP via EAGLE, 3 steps / 4 draft tokens (SemiAnalysis InferenceX)",
        "engine": "sglang",
        "backend": "sglang",
        "engine_version": "0.5.12 (image lmsysorg/sglang:v0.5.12-rocm700-mi35x, both arms)",
        "modelled": {
            "engine_spec": ("sglang@0.5.12", ENGINE_WHY + "0.5.12, both arms"),
            "max_num_seqs": (128, None),
            "max_batched_tokens": (196608, LIMITS_WHY + "--cuda-graph-max-bs 128, --chunked-prefill-size 196608"),
            "memory_util": (0.8, SGLANG_MEMORY_WHY.format(0.8)),
        },
        "hardware": "mi355x",
        "gpus": 8,
        "weight_dtype": "mxfp4",
        "kv_dtype": "fp8",
        "parallelism": "TP8 (MTP: --ep-size 1), no DP attention; --attention-backend aiter, --kv-cache-dtype "
        "fp8_e4m3, --chunked-prefill-size = --max-prefill-tokens = 196608 (32768 at 8k/1k above "
        "c 32), --mem-fraction-static 0.8, --num-continuous-decode-steps 4, --cuda-graph-max-bs 128, "
        "--disable-radix-cache, ROCM_QUICK_REDUCE_QUANTIZATION=INT4; MTP arm also "
        "SGLANG_AITER_MLA_PERSIST=1, SGLANG_ENABLE_SPEC_V2=1, --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
        "lengths_extra": SGLANG_MTP_CLIENT,
        "recipes": _recipe(
            "475218b6482cdf55aa31d095f3c92f2793bc8437",
            "benchmarks/single_node/dsr1_fp4_mi355x.sh",
            ".github/configs/amd-master.yaml (dsr1-fp4-mi355x-sglang)",
        )
        + "; "
        + _recipe(
            "70bf3a25b6b196426005e417a47a3eedabe4fb11",
            "benchmarks/single_node/dsr1_fp4_mi355x_mtp.sh",
            ".github/configs/amd-master.yaml (dsr1-fp4-mi355x-sglang-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "26047312829", False, "amd/DeepSeek-R1-0528-MXFP4-Preview"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "26134316811", True, "amd/DeepSeek-R1-0528-MXFP4"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "26047312829", False, "amd/DeepSeek-R1-0528-MXFP4-Preview"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "26134316811", True, "amd/DeepSeek-R1-0528-MXFP4"),
        ],
        "notes": [
            "CHECKPOINT MISMATCH: the plain arm served amd/DeepSeek-R1-0528-MXFP4-Preview, the MTP arm "
            "amd/DeepSeek-R1-0528-MXFP4 (the configs' model fields); both are MXFP4 quantisations of R1-0528 with the "
            "same architecture, but not the same file. At 1k/1k the plain campaign ran concurrency 4 at TP4 (left "
            "out), so that arm has c 16 and 64 only. The MTP arm's c 64 rows have a median TTFT of 4.3 s (1k/1k) "
            "and 5.9 s (8k/1k), against 0.1-0.3 s at c 32 and below and in the plain arm (the rows do not say why).",
        ],
    },
    {
        "folder": "mi325x-sglang-dsr1-fp8-mtp",
        "itl": ITL_AMD,
        "hw": "mi325x",
        "fw": "sglang",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x MI325X, SGLang 0.5.12 (lmsysorg/sglang:v0.5.12-rocm700-mi30x), DeepSeek-R1-0528 FP8 (TP8), plain vs "
        "built-in MTP via EAGLE, 3 steps / 4 draft tokens (SemiAnalysis InferenceX)",
        "engine": "sglang",
        "backend": "sglang",
        "engine_version": "0.5.12 (image lmsysorg/sglang:v0.5.12-rocm700-mi30x, both arms)",
        "modelled": {
            "engine_spec": ("sglang@0.5.12", ENGINE_WHY + "0.5.12, both arms"),
            "max_num_seqs": (128, None),
            "max_batched_tokens": (131072, LIMITS_WHY + "--cuda-graph-max-bs 128, --chunked-prefill-size 131072"),
            "memory_util": (0.8, SGLANG_MEMORY_WHY.format(0.8)),
        },
        "hardware": "mi325x",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "TP8 (MTP: --ep-size 1), no DP attention; --attention-backend aiter, --kv-cache-dtype "
        "fp8_e4m3, --chunked-prefill-size 131072, --max-prefill-tokens 131072, --mem-fraction-static "
        "0.8, --num-continuous-decode-steps 4, --cuda-graph-max-bs 128, --disable-radix-cache, "
        "SGLANG_AITER_MLA_PERSIST=1; MTP arm also SGLANG_ENABLE_SPEC_V2=1, --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
        "lengths_extra": SGLANG_MTP_CLIENT,
        "recipes": _recipe(
            "f3dbc40c99a6dad45f76adecbc1f460cac36f039",
            "benchmarks/single_node/dsr1_fp8_mi325x.sh",
            "benchmarks/single_node/dsr1_fp8_mi325x_mtp.sh",
            ".github/configs/amd-master.yaml (dsr1-fp8-mi325x-sglang, dsr1-fp8-mi325x-sglang-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "26008679544", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "26048239142", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "26008679544", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "26048239142", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "BUILD MISMATCH AVOIDED, CONCURRENCIES DISJOINT: the dashboard's MI325X plain rows at concurrency 16 and 64 "
            "are from 2026-02-27 (run 22469096331, image lmsysorg/sglang:v0.5.9-rocm700-mi30x), an older build than "
            "the MTP arm's (v0.5.12, 2026-05-18); they are SKIPPED. Kept instead: the 2026-05-18 plain campaign of "
            "the MTP arm's image, whose stored rows are concurrency 4 and 8 only, so plain (c 4, 8) and MTP (c 16, 32, "
            "64) do not overlap: the pairing is by deployment, not by load point.",
        ],
    },
    {
        "folder": "b200-sglang-dsr1-fp8-mtp",
        "itl": ITL_CHUNK_30,
        "hw": "b200",
        "fw": "sglang",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x B200, SGLang (plain lmsysorg/sglang:v0.5.6-cu129-amd64, MTP v0.5.8-cu130-amd64), DeepSeek-R1-0528 FP8 "
        "(TP8), plain vs built-in MTP via EAGLE, 2 steps / 3 draft tokens (SemiAnalysis InferenceX)",
        "engine": "sglang",
        "backend": "sglang",
        "engine_version": "plain 0.5.6 (lmsysorg/sglang:v0.5.6-cu129-amd64), MTP 0.5.8 (lmsysorg/sglang:v0.5.8-cu130-amd64)",
        "modelled": {
            "engine_spec": (
                "sglang@0.5.8",
                ENGINE_WHY + "the speculative arm's release (the plain arm ran 0.5.6: both in specsim's spec-v1 range)",
            ),
            "max_num_seqs": (128, None),
            "max_batched_tokens": (
                16384,
                LIMITS_WHY + "--max-running-requests 128 and --chunked-prefill-size 16384 of the tighter arm",
            ),
            "memory_util": (0.82, SGLANG_MEMORY_WHY.format(0.82)),
        },
        "hardware": "b200",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "TP8, --ep-size 1, DP 1, no DP attention; --kv-cache-dtype fp8_e4m3, --attention-backend "
        "trtllm_mla, --moe-runner-backend flashinfer_trtllm, --quantization fp8, "
        "--enable-flashinfer-allreduce-fusion, --stream-interval 30, --scheduler-recv-interval 10 "
        "(30 at c >= 16), --mem-fraction-static 0.82, --disable-radix-cache. Plain: "
        "--max-running-requests 128, --cuda-graph-max-bs 128, --chunked-prefill-size 32768, "
        "--max-prefill-tokens 32768. MTP: --max-running-requests 512, --cuda-graph-max-bs 512, "
        "--chunked-prefill-size 16384, --max-prefill-tokens 16384, --fp8-gemm-backend=flashinfer_trtllm, "
        "--speculative-algorithm EAGLE --speculative-num-steps 2 --speculative-num-draft-tokens 3 "
        "--speculative-eagle-topk 1 (the script sets SGLANG_ENABLE_SPEC_V2=1 without exporting it)",
        "lengths_extra": SGLANG_MTP_CLIENT,
        "recipes": _recipe(
            "d27433dffb7b90ffc461ede429d897219e950b8b",
            "benchmarks/dsr1_fp8_b200_docker.sh",
            "benchmarks/dsr1_fp8_b200_slurm.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-sglang)",
        )
        + "; "
        + _recipe(
            "ec912828040791e8ba9b1133a1de51ac63a6f513",
            "benchmarks/dsr1_fp8_b200_mtp.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-sglang-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "20621824084", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k2-1k1k.jsonl", "spec", 2, 1024, 1024, "21741130430", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-1k8k.jsonl", "plain", None, 1024, 8192, "20621824084", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k2-1k8k.jsonl", "spec", 2, 1024, 8192, "21741130430", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "20621824084", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k2-8k1k.jsonl", "spec", 2, 8192, 1024, "21741130430", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "BUILD MISMATCH: no plain campaign of the MTP arm's image (v0.5.8-cu130, 2026-02-06) is in the fixture; "
            "the plain arm is the 2025-12-31 campaign (v0.5.6-cu129, the image named by benchmarks.json for that run), "
            "with a different max-running-requests / cuda-graph-max-bs (128 vs 512) and chunked prefill (32768 vs "
            "16384). The 2026-01-13 plain campaign (same v0.5.6 config) is left out: two of its rows used another "
            "prompt count (the ratio check finds 50 x c and 20 x c prompts). The MTP c 512 rows are beyond the plain "
            "arm's max-running-requests 128.",
            "OUTLIERS (audit of 2026-12-03): two plain rows of this campaign, which ran before InferenceX sent "
            "warm-up requests, have a p99 TTFT of 71.6 s (1k1k, c 64; p99 end-to-end 99.1 s against a median of "
            "22.0 s) and 72.7 s (8k1k, c 16); throughput times median end-to-end latency is 0.74 c and 0.71 c, inside "
            "the converter's 0.5-1.25 c check. The cause is not recorded.",
        ],
    },
    {
        "folder": "b200-trtllm-dsr1-fp8-mtp",
        "itl": "ITL is per streamed chunk (stream_interval 10); use TPOT.",
        "hw": "b200",
        "fw": "trt",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x B200, TensorRT-LLM 1.2.0rc6 / 1.3.0rc14 (trtllm-serve, PyTorch backend), DeepSeek-R1-0528 FP8 "
        "(TP8, EP1), plain vs built-in MTP, 3 next-n layers (SemiAnalysis InferenceX)",
        "engine": "trtllm",
        "backend": "tensorrt-llm",
        "engine_version": "1.2.0rc6.post2 (plain) / 1.2.0rc6.post3 (MTP) for the files without a suffix; "
        "1.3.0rc14 (both arms) for the *-trt1.3.0rc14 files (nvcr.io/nvidia/tensorrt-llm/release)",
        "modelled": {
            "engine_spec": (
                "trtllm@1.2.0rc6",
                ENGINE_WHY + "1.2.0rc6 (.post2 plain, .post3 MTP; the *-trt1.3.0rc14 files ran 1.3.0rc14: one preset "
                "covers 1.0-1.3)",
            ),
            "memory_util": (0.8, TRTLLM_MEMORY_WHY.format(0.8)),
            # one deployment per engine build (notes): no comment, the value takes several lines
            "deployments": (
                [
                    {
                        "name": "TensorRT-LLM 1.2.0rc6: plain 2026-01-29 (.post2), MTP 2026-02-05 (.post3)",
                        "files": "*[0-9]k.jsonl",
                    },
                    {
                        "name": "TensorRT-LLM 1.3.0rc14: both arms 2026-05-18",
                        "files": "*-trt1.3.0rc14.jsonl",
                        "engine_spec": "trtllm@1.3.0rc14",
                    },
                ],
                "",
            ),
        },
        "hardware": "b200",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "trtllm-serve --backend pytorch --tp_size 8 --ep_size 1, enable_attention_dp false; "
        "kv_cache_config dtype fp8, enable_block_reuse false, free_gpu_memory_fraction 0.8; "
        "stream_interval 10; moe backend TRTLLM; cuda_graph_config enable_padding, max_batch_size = c. "
        "Plain: no --max_batch_size, max_num_tokens = max(8192, roundup64(c + ISL + 64)), "
        "TLLM_OVERRIDE_LAYER_NUM=61, piecewise CUDA graphs and delayed batching "
        "(batch_wait_timeout_iters 40, batch_wait_max_tokens_ratio 0.8) at 1k/1k c >= 64, piecewise "
        "graphs at 1k/8k c >= 128 and 8k/1k c >= 64. MTP: speculative_config decoding_type MTP, "
        "num_nextn_predict_layers 3; --max_batch_size = c, max_num_tokens = roundup64(4c + ISL + 64), "
        "piecewise CUDA graphs except at 1k/1k c <= 4, 1k/8k c <= 8 and 8k/1k c <= 16",
        "lengths_extra": "the MTP arm's client adds --use-chat-template; the plain arm's prompts are raw; the client "
        "backend is openai (completions)",
        "recipes": _recipe(
            "dcc0f53a889dee2f637735b90582e15b7997618d",
            "benchmarks/dsr1_fp8_b200_trt.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-trt)",
        )
        + "; "
        + _recipe(
            "d7dbd045b23447f2fef1fb3fe44d392c33e32679",
            "benchmarks/dsr1_fp8_b200_trt_mtp.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-trt-mtp)",
        )
        + "; "
        + _recipe(
            "f3dbc40c99a6dad45f76adecbc1f460cac36f039",
            "benchmarks/single_node/dsr1_fp8_b200_trt.sh",
            "benchmarks/single_node/dsr1_fp8_b200_trt_mtp.sh",
            ".github/configs/nvidia-master.yaml (1.3.0rc14 campaign)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "21484110885", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "21726272067", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-1k8k.jsonl", "plain", None, 1024, 8192, "21484110885", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k8k.jsonl", "spec", 3, 1024, 8192, "21726272067", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "21484110885", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "21726272067", True, "deepseek-ai/DeepSeek-R1-0528"),
            (
                "plain-8k1k-trt1.3.0rc14.jsonl",
                "plain",
                None,
                8192,
                1024,
                "26016874169",
                False,
                "deepseek-ai/DeepSeek-R1-0528",
            ),
            (
                "mtp-k3-8k1k-trt1.3.0rc14.jsonl",
                "spec",
                3,
                8192,
                1024,
                "26016874169",
                True,
                "deepseek-ai/DeepSeek-R1-0528",
            ),
        ],
        "notes": [
            "TWO CAMPAIGNS: the files without a suffix are plain 2026-01-29 (image 1.2.0rc6.post2) against MTP "
            "2026-02-05 (1.2.0rc6.post3, a post-release apart); the *-trt1.3.0rc14 files are one Actions run of "
            "2026-05-18 holding both arms at 8k/1k on one image. The recipes change TRT-LLM settings with the "
            "concurrency (piecewise CUDA graphs, delayed batching, max batch size = c), so a run is one point of a "
            "per-concurrency tuned deployment, not of one fixed server. Each campaign is its own deployment "
            "(deployments, 2026-12-07): a speedup is over the plain runs of the same build, as the median TPOTs below "
            "pair them; before, benchmarks/validate_corpus.py pooled the two builds' runs at 8k/1k c 4 (plain) and "
            "c 256 (MTP) into one measured speedup (1.716 and 1.251 where each build alone gives 1.87 and 1.20).",
        ],
    },
    {
        "folder": "b200-trtllm-dsr1-fp8-ep8-mtp",
        "itl": "ITL is per streamed chunk (stream_interval 10); use TPOT.",
        "hw": "b200",
        "fw": "trt",
        "precision": "fp8",
        "tp": 8,
        "ep": 8,
        "dpa": False,
        "title": "8x B200, TensorRT-LLM 1.1.0rc2.post2 (trtllm-serve, PyTorch backend), DeepSeek-R1-0528 FP8 "
        "(attention TP8, "
        "MoE EP8), plain vs built-in MTP, 3 next-n layers (SemiAnalysis InferenceX)",
        "engine": "trtllm",
        "backend": "tensorrt-llm",
        "engine_version": "1.1.0rc2.post2 (nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2, both arms)",
        "modelled": {
            "engine_spec": ("trtllm@1.1.0rc2.post2", ENGINE_WHY + "1.1.0rc2.post2, both arms"),
            "memory_util": (0.8, TRTLLM_MEMORY_WHY.format(0.8)),
        },
        "hardware": "b200",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "trtllm-serve --backend pytorch --tp_size 8 --ep_size 8 (MoE expert parallel over the 8 GPUs, "
        "attention tensor parallel), enable_attention_dp false; moe backend DEEPGEMM; kv_cache_config "
        "dtype fp8, free_gpu_memory_fraction 0.8, enable_block_reuse false; stream_interval 10; "
        "cuda_graph_config enable_padding, max_batch_size 256. Plain: no --max_batch_size, "
        "max_num_tokens = roundup64(c + ISL + 64). MTP: speculative_config decoding_type MTP, "
        "num_nextn_predict_layers 3, --max_batch_size = c, max_num_tokens = roundup64(4c + ISL + 64)",
        "lengths_extra": "the MTP arm's client adds --use-chat-template; the plain arm's prompts are raw; the client "
        "backend is openai (completions)",
        "recipes": _recipe(
            "f6a9d0b6adf1b0eb52c7b107b275f086bbb48100",
            "benchmarks/dsr1_fp8_b200_trt_slurm.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-trt)",
        )
        + "; "
        + _recipe(
            "008b91a9dd78c335612d4a228397ffdd83c23cc4",
            "benchmarks/dsr1_fp8_b200_trt_mtp_slurm.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-b200-trt-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "20216641521", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-1k8k.jsonl", "plain", None, 1024, 8192, "20216754736", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k8k.jsonl", "spec", 3, 1024, 8192, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "20216709902", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "EXPERT PARALLELISM: the MoE layers run EP8 (--ep_size 8); specsim models tensor parallelism only, so "
            "`tp: 8` here approximates the deployment. Plain 2025-12-15, MTP 2026-01-14 (the day its recipe, PR "
            "#392, was merged; the merged script is the one named), same image.",
        ],
    },
    {
        "folder": "h200-trtllm-dsr1-fp8-ep8-mtp",
        "itl": "ITL is per streamed chunk (stream_interval 10); use TPOT.",
        "hw": "h200",
        "fw": "trt",
        "precision": "fp8",
        "tp": 8,
        "ep": 8,
        "dpa": False,
        "title": "8x H200, TensorRT-LLM 1.1.0rc2.post2 (trtllm-serve, PyTorch backend), DeepSeek-R1-0528 FP8 "
        "(attention TP8, "
        "MoE EP8), plain vs built-in MTP, 3 next-n layers (SemiAnalysis InferenceX)",
        "engine": "trtllm",
        "backend": "tensorrt-llm",
        "engine_version": "1.1.0rc2.post2 (nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2, both arms)",
        "modelled": {
            "engine_spec": ("trtllm@1.1.0rc2.post2", ENGINE_WHY + "1.1.0rc2.post2, both arms"),
            "memory_util": (0.75, TRTLLM_MEMORY_WHY.format(0.75)),
        },
        "hardware": "h200",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "trtllm-serve --backend pytorch --tp_size 8 --ep_size 8 (MoE expert parallel, attention tensor "
        "parallel), enable_attention_dp false; moe backend CUTLASS; kv_cache_config dtype fp8, "
        "free_gpu_memory_fraction 0.75, enable_block_reuse false; stream_interval 10; cuda_graph_config "
        "enable_padding, max_batch_size 128. Plain: no --max_batch_size, max_num_tokens = "
        "roundup64(c + ISL + 64). MTP: speculative_config decoding_type MTP, num_nextn_predict_layers 3, "
        "--max_batch_size = c, max_num_tokens = roundup64(4c + ISL + 64)",
        "lengths_extra": "the MTP arm's client adds --use-chat-template; the plain arm's prompts are raw; the client "
        "backend is openai (completions)",
        "recipes": _recipe(
            "f6a9d0b6adf1b0eb52c7b107b275f086bbb48100",
            "benchmarks/dsr1_fp8_h200_trt_slurm.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-h200-trt)",
        )
        + "; "
        + _recipe(
            "008b91a9dd78c335612d4a228397ffdd83c23cc4",
            "benchmarks/dsr1_fp8_h200_trt_mtp_slurm.sh",
            ".github/configs/nvidia-master.yaml (dsr1-fp8-h200-trt-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "20216641521", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-1k8k.jsonl", "plain", None, 1024, 8192, "20216754736", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k8k.jsonl", "spec", 3, 1024, 8192, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "20216709902", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "21012094241", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "EXPERT PARALLELISM: the MoE layers run EP8 (--ep_size 8); specsim models tensor parallelism only, so "
            "`tp: 8` here approximates the deployment. Plain 2025-12-15, MTP 2026-01-14, same image. A 2026-05-18 "
            "campaign (1.3.0rc14) has the MTP arm at one concurrency only and is left out.",
        ],
    },
    {
        "folder": "mi355x-atom-dsr1-fp8-mtp",
        "itl": "ITL: a speculative step emits several tokens at once, so the MTP arm's ITL exceeds its TPOT; use TPOT.",
        "hw": "mi355x",
        "fw": "atom",
        "precision": "fp8",
        "tp": 8,
        "ep": 1,
        "dpa": False,
        "title": "8x MI355X, AMD ATOM (rocm/atom images), DeepSeek-R1-0528 FP8 (TP8), plain vs built-in MTP, 3 "
        "speculative tokens (SemiAnalysis InferenceX) - ENGINE NOT MODELLED BY SPECSIM",
        "engine": "atom",
        "backend": "openai",
        "engine_version": "plain atom20260511 (rocm/atom:rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511), "
        "MTP atom 0.1.3 (rocm/atom:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.3)",
        "modelled": {
            "engine_spec": (None, ENGINE_WHY + "ATOM (AMD's own engine) is not one of the engines specsim models"),
        },
        "hardware": "mi355x",
        "gpus": 8,
        "weight_dtype": "fp8",
        "kv_dtype": "fp8",
        "parallelism": "python -m atom.entrypoints.openai_server -tp 8 (no expert parallel, no DP attention), "
        "--kv_cache_dtype fp8; plain: --block-size 16, --max-model-len 10240 at 8k/1k; MTP: --method mtp "
        "--num-speculative-tokens 3, --no-enable_prefix_caching",
        "lengths_extra": "the MTP arm's client adds --use-chat-template; the plain arm's prompts are raw",
        "recipes": _recipe(
            "70bf3a25b6b196426005e417a47a3eedabe4fb11",
            "benchmarks/single_node/dsr1_fp8_mi355x_atom.sh",
            ".github/configs/amd-master.yaml (dsr1-fp8-mi355x-atom)",
        )
        + "; "
        + _recipe(
            "96f1598815fbd1f0bc62db57fa33b6dd46541306",
            "benchmarks/single_node/fixed_seq_len/dsr1_fp8_mi355x_atom_mtp.sh",
            ".github/configs/amd-master.yaml (dsr1-fp8-mi355x-atom-mtp)",
        ),
        "arms": [
            ("plain-1k1k.jsonl", "plain", None, 1024, 1024, "26130617530", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-1k1k.jsonl", "spec", 3, 1024, 1024, "26829715287", True, "deepseek-ai/DeepSeek-R1-0528"),
            ("plain-8k1k.jsonl", "plain", None, 8192, 1024, "26130617530", False, "deepseek-ai/DeepSeek-R1-0528"),
            ("mtp-k3-8k1k.jsonl", "spec", 3, 8192, 1024, "26829715287", True, "deepseek-ai/DeepSeek-R1-0528"),
        ],
        "notes": [
            "ENGINE NOT MODELLED: ATOM is AMD's own inference engine; specsim knows vLLM, SGLang and TensorRT-LLM "
            'only, so `engine: atom` has no specsim engine model and the records\' backend is "openai" (the client '
            "spoke the OpenAI completions API). Transcribed as the one ATOM deployment (the other ATOM pairs are "
            "older or cross-checkpoint). The arms are two builds (plain 2026-05-20 atom20260511, MTP 2026-06-02 "
            "atom 0.1.3); no plain campaign of the MTP image is in the fixture.",
        ],
    },
]


# -- reading and writing ---------------------------------------------------------------------------------------------


def _rows(folder: Path) -> dict:
    """Single-node rows of both fixture files, keyed by (configuration, conc, date, run url); benchmarks.json's extra
    statistics merged into the history's row where both hold it."""
    rows: dict = {}
    for name in ("benchmarks-history.json", "benchmarks.json"):
        for r in json.loads((folder / name).read_text()):
            if r["is_multinode"] or r["disagg"]:
                continue
            key = (
                r["hardware"],
                r["framework"],
                r["precision"],
                r["spec_method"],
                r["decode_tp"],
                r["decode_ep"],
                bool(r["decode_dp_attention"]),
                r["isl"],
                r["osl"],
                r["conc"],
                r["date"],
                r["run_url"],
            )
            if key in rows:
                old = rows[key]["metrics"]
                for k, v in r["metrics"].items():
                    if k in old and abs(old[k] - v) > 1e-9 * abs(v):
                        raise ValueError(f"{key}: {k} differs between the fixture files ({old[k]} vs {v})")
                    old.setdefault(k, v)
                if r.get("image"):
                    rows[key]["image"] = r["image"]
            else:
                rows[key] = {**r, "metrics": dict(r["metrics"])}
    return rows


def _record(row: dict, dep: dict, model_id: str, chat: bool, flagged: dict) -> dict:
    m = row["metrics"]
    conc, isl, osl, tp = row["conc"], row["isl"], row["osl"], dep["tp"]
    n = 10 * conc
    ratio = m["input_tput_per_gpu"] / m["output_tput_per_gpu"]
    where = f"{LENGTHS[(isl, osl)]} c {conc} ({row['spec_method']}, {row['date']})"
    fits = []
    for t in (CHAT_TEMPLATE_T, 0) if chat else (0,):  # the template's length first; 0 only if it does not fit
        total_in, total_out = random_dataset_totals(n, isl, osl, t)
        fits.append((abs(ratio / (total_in / total_out) - 1), t, total_in, total_out))
        if fits[-1][0] < RATIO_TOLERANCE:
            break
    error, t, total_in, total_out = min(fits)
    if chat and t != CHAT_TEMPLATE_T and error < RATIO_TOLERANCE:
        flagged["t0"].append(where)
    if RATIO_TOLERANCE <= error < OUTPUT_TOLERANCE:
        total_out = round(total_in / ratio)
        flagged["output"].append(f"{where}: {error:.1e}")
    elif error >= OUTPUT_TOLERANCE:
        total_out = round(n * (int(osl * RANGE_RATIO) + osl) / 2)
        total_in = round(total_out * ratio)
        flagged["mean"].append(f"{where}: {error:.1e}")
    output_throughput = m["output_tput_per_gpu"] * tp
    duration = total_out / output_throughput
    rec = {
        "date": row["date"],
        "backend": dep["backend"],
        "model_id": model_id,
        "max_concurrency": conc,
        "request_rate": "inf",
        "num_prompts": n,
        "completed": n,
        "duration": duration,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": n / duration,
        "output_throughput": output_throughput,
        "total_token_throughput": m["tput_per_gpu"] * tp,
    }
    for metric in METRICS:
        for stat in STATS:
            value = m.get(f"{stat}_{metric}")
            if value is not None:
                rec[f"{stat}_{metric}_ms"] = value * 1e3
    return rec


def _wrap(text: str, width: int = 116) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return "\n".join(lines + [line])


def convert(folder: Path) -> None:
    rows = _rows(folder)
    facts: dict = {}
    for dep in DEPLOYMENTS:
        target = OUT / dep["folder"]
        target.mkdir(parents=True, exist_ok=True)
        flagged: dict = {"t0": [], "output": [], "mean": []}
        dropped: list = []
        runs, arm_lines = [], []
        for file, kind, steps, isl, osl, run_id, chat, model_id in dep["arms"]:
            spec = "none" if kind == "plain" else "mtp"
            chosen = sorted(
                (
                    r
                    for k, r in rows.items()
                    if k[:9]
                    == (dep["hw"], dep["fw"], dep["precision"], spec, dep["tp"], dep["ep"], dep["dpa"], isl, osl)
                    and f"/runs/{run_id}/" in r["run_url"]
                ),
                key=lambda r: r["conc"],
            )
            concs = [r["conc"] for r in chosen]
            if len(concs) < 2 or len(set(concs)) != len(concs):
                raise ValueError(f"{dep['folder']}/{file}: concurrencies {concs} (want two or more, one row each)")
            records = []
            for r in chosen:
                rec = _record(r, dep, model_id, chat, flagged)
                # Little's law: a closed loop of c keeps about c requests in flight (fewer while it fills and
                # drains); a row whose throughput and latency put that outside [0.5 c, 1.25 c] is not one run's
                # consistent figures.
                e2el = rec.get("mean_e2el_ms", rec.get("median_e2el_ms"))
                in_flight = rec["request_throughput"] * e2el / 1e3
                if not 0.5 <= in_flight / r["conc"] <= LITTLE_SLACK:
                    dropped.append(
                        f"{file} c {r['conc']} ({r['date']}): output_tput_per_gpu "
                        f"{r['metrics']['output_tput_per_gpu']:.1f} tok/s gives {in_flight:.1f} requests in "
                        f"flight with its E2E latency of {e2el / 1e3:.1f} s, against {r['conc']} users"
                    )
                    where = f"{LENGTHS[(isl, osl)]} c {r['conc']} ({r['spec_method']}, {r['date']})"
                    for key in flagged:
                        flagged[key] = [x for x in flagged[key] if not x.startswith(where)]
                    continue
                records.append(rec)
            chosen = [r for r in chosen if r["conc"] in {x["max_concurrency"] for x in records}]
            concs = [r["conc"] for r in chosen]
            (target / file).write_text("".join(json.dumps(r) + "\n" for r in records))
            entry = {"file": file, "kind": kind}
            if steps is not None:
                entry["steps"] = steps
            entry["concurrency"] = concs
            runs.append(entry)
            images = sorted({r["image"] for r in chosen if r.get("image")})
            image = " / ".join(images) if images else "not in the row (see engine_version)"
            arm_lines.append(
                f"{file}: Actions run {RUN_URL}{run_id} ({chosen[0]['date']}), concurrency "
                f"{', '.join(map(str, concs))}; image {image}"
            )
            for r in chosen:
                facts[(dep["folder"], file, r["conc"])] = r["metrics"]
            print(f"{target.name}/{file}: {len(records)} runs (c {concs})")
        lens = sorted({(a[3], a[4]) for a in dep["arms"]})
        pairs = []
        for file, kind, steps, *_ in dep["arms"]:
            if kind != "spec":
                continue
            plain = file.replace(f"mtp-k{steps}", "plain")
            common = sorted(c for (fo, f, c) in facts if fo == dep["folder"] and f == file and (fo, plain, c) in facts)
            label = file.removeprefix(f"mtp-k{steps}-").removesuffix(".jsonl")
            if not common:
                pairs.append(f"{label}: no concurrency in common")
                continue
            cells = []
            for c in common:
                a = facts[(dep["folder"], plain, c)]["median_tpot"] * 1e3
                b = facts[(dep["folder"], file, c)]["median_tpot"] * 1e3
                cells.append(f"c {c} {a:.2f} -> {b:.2f} ms (x{a / b:.2f})")
            pairs.append(f"{label}: " + ", ".join(cells))
        notes = [n.format(**_oddity_numbers(facts)) for n in dep["notes"]]
        notes.append(
            "Median TPOT, plain -> MTP, where both arms hold the concurrency (speed-up in brackets): "
            + "; ".join(pairs)
            + "."
        )
        notes.append("Runs kept (one Actions run per arm): " + "; ".join(arm_lines) + ".")
        notes.append("Recipes read: " + dep["recipes"] + ".")
        notes.append(
            "Derived, not recorded: completed / num_prompts (10 x c, the recipe's --num-prompts), the token "
            "totals (recomputed draws of the client's seed-0 random dataset, checked against the row's "
            "input/output throughput ratio), duration and request_throughput (from the totals and the "
            "measured output throughput), and the total throughputs (per-GPU figure x TP). Latencies are "
            "the rows' own (s -> ms); medians and p99 for every row, means/std/p90/p99.9 only where "
            "benchmarks.json holds the row."
        )
        if dropped:
            notes.append(
                "DROPPED (throughput contradicts latency; Little's law for a closed loop): " + "; ".join(dropped) + "."
            )
        if flagged["t0"]:
            notes.append(
                "Chat-template arm whose totals match the draws without the template's length (t = 0), "
                "though its script passes --use-chat-template: " + "; ".join(flagged["t0"]) + "."
            )
        if flagged["output"]:
            notes.append(
                "Output totals NOT reproduced by the draws (the ratio check misses by the relative error "
                "given; the server returned slightly other output counts): total_input_tokens is the draws' "
                "(the client's own prompt lengths) and total_output_tokens = total_input_tokens x "
                "output_tput_per_gpu / input_tput_per_gpu: " + "; ".join(flagged["output"]) + "."
            )
        if flagged["mean"]:
            notes.append(
                "Totals NOT reproduced by the draws at all (another client version or prompt count): "
                "total_output_tokens = N x the range mean, total_input_tokens from the measured ratio, "
                "about 1-2% uncertain: " + "; ".join(flagged["mean"]) + "."
            )
        notes.append(dep["itl"])
        notes.append("Converter: scripts/public_bench/inferencex-dsr1-mtp.py (writes all nine InferenceX folders).")
        notes.append(
            "No acceptance length is recorded. The dashboard's snapshot is a subset of the measured sweep "
            "(the recipes sweep c 4..64 or more in powers of two; only some concurrencies are stored)."
        )
        doc = {
            "source": dep["folder"],
            "title": dep["title"],
            "repository": REPO,
            "commit": COMMIT,
            "paths": PATHS,
            "engine": dep["engine"],
            "engine_version": dep["engine_version"],
            **{key: value for key, (value, _) in dep["modelled"].items()},
            "hardware": dep["hardware"],
            "gpus": dep["gpus"],
            "tp": dep["tp"],
            "parallelism": dep["parallelism"],
            "target": "deepseek-v3",
            "weight_dtype": dep["weight_dtype"],
            "kv_dtype": dep["kv_dtype"],
            "drafter": "mtp",
            "draft_checkpoint": sorted({a[7] for a in dep["arms"] if a[1] == "spec"})[0],
            "load": "concurrency",
            "lengths": COMMON_LENGTHS.format(lengths=", ".join(f"{i}/{o}" for i, o in lens))
            + dep["lengths_extra"]
            + " (output lengths exact under --ignore-eos).",
            "acceptance": "not recorded",
            "runs": runs,
            "mapping": _wrap(MAPPING) + "\n",
            "notes": "\n".join(_wrap(n) for n in notes) + "\n",
        }
        comments = {key: why for key, (_, why) in dep["modelled"].items() if why}
        (target / "source.yaml").write_text(manifest_yaml(doc, comments))


def _oddity_numbers(facts: dict) -> dict:
    try:
        plain = facts[("h200-sglang-dsr1-fp8-mtp", "plain-1k1k.jsonl", 4)]["median_tpot"] * 1e3
        mtp = facts[("h200-sglang-dsr1-fp8-mtp", "mtp-k2-1k1k.jsonl", 4)]["median_tpot"] * 1e3
    except KeyError:
        return {"h200_c4_plain": "?", "h200_c4_mtp": "?"}
    return {"h200_c4_plain": f"{plain:.2f}", "h200_c4_mtp": f"{mtp:.2f}"}


MAPPING = """Fixture row (SemiAnalysisAI/InferenceX-app @528c4146, packages/app/cypress/fixtures/api/benchmarks-history.json
and benchmarks.json; seconds, per-GPU throughputs) -> vLLM key:
date -> date; framework -> backend (sglang -> "sglang", trt -> "tensorrt-llm", atom -> "openai");
master config model -> model_id; conc -> max_concurrency; request_rate = "inf" (benchmark_lib.sh);
num_prompts = completed = 10 x conc (the recipe's --num-prompts; all requests assumed completed: the token check below
covers every prompt);
output_throughput = output_tput_per_gpu x TP; total_token_throughput = tput_per_gpu x TP (utils/process_result.py
divides by TP GPUs);
total_input_tokens, total_output_tokens = sums of the seed-0 random-dataset draws of InferenceX's
benchmark_serving.py (numpy legacy MT19937: input randint(int(0.8(I-t)), I-t+1, N) + t, then output
randint(int(0.8 O), O+1, N); t = 2 for chat-template arms, 0 for the others and where 2 does not fit), accepted
where their ratio equals input_tput_per_gpu / output_tput_per_gpu to 1e-5; where it misses by less than 1e-2 the
draws' input sum is kept and total_output = total_input x output_tput_per_gpu / input_tput_per_gpu (listed in notes);
a larger miss would give total_output = N x (int(0.8 O) + O) / 2 and total_input from the measured ratio (none here);
duration = total_output_tokens / output_throughput; request_throughput = completed / duration;
{mean,median,std,p90,p99,p99.9}_{ttft,tpot,itl,e2el} (s) -> the same key + "_ms" (x 1000), as present.
Not transcribed: *_intvty (1/TPOT), power/energy fields. Rows dropped: request_throughput x E2E latency (mean, else
median) outside [0.5 c, 1.25 c] (listed in notes)."""


if __name__ == "__main__":
    convert(Path(sys.argv[1]))
