"""Write examples/bench/: benchmark files in the formats of vLLM, SGLang and GuideLLM, for calibrate-engine.

The formats are the tools' own (keys and nesting from vllm/benchmarks/serve.py, sglang/bench_serving.py and
GuideLLM's report schema 2), trimmed to the summary a saved result holds without per-request detail.  The
numbers are NOT measurements: they are specsim's own model of Llama-3.1-8B with an EAGLE-3 head (3 steps) on an
H100 under a serial vLLM, with known terms (below) and 2% Gaussian noise (seed 0), so that calibrate-engine's
fit can be seen recovering them.  Run from the repository root:

    python scripts/make_bench_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from specsim.bench_files import BenchRun
from specsim.deployment import Deployment
from specsim.engine_calibrate import _Model
from specsim.engines import SpecHost
from specsim.metrics import accept_length_from_page

OUT = Path("examples/bench")
#: The terms the samples are generated with: the fit should find them (to within what 2% noise allows).
TRUE_SCALE, TRUE_ITER_S, TRUE_HOST = 0.85, 0.40e-3, SpecHost(round_s=1.0e-3, step_s=0.30e-3, seq_s=20e-6)
CONCURRENCY = (1, 4, 16, 64)
PROMPT, OUTPUT, PROMPTS = 1000, 256, 200
AL_VLLM, AL_SGLANG = 2.80, 2.75
STEPS = 3


def tpot(dep, kind: str, batch: float, al: float | None) -> float:
    run = BenchRun("-", 1, "vllm", None, "-", PROMPTS, 1.0, batch, PROMPT, OUTPUT, al)
    model = _Model(dep, [run], [kind], STEPS, 1, STEPS + 1, True)
    return float(model.predict(model.deployment(TRUE_SCALE, TRUE_ITER_S, TRUE_HOST), np.array([0]))[0])


def main() -> None:
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="vllm@0.10")
    rng = np.random.default_rng(0)
    al_guidellm, _ = accept_length_from_page("examples/vllm-metrics.txt")
    OUT.mkdir(parents=True, exist_ok=True)
    files: dict[str, list] = {}
    for c in CONCURRENCY:
        # A closed loop of c users: about c sequences decode (prefill takes a few per cent of each request's time).
        batch = c * 0.95 if c > 1 else 1.0
        for kind in ("plain", "spec"):
            for tool, al in (("vllm", AL_VLLM), ("sglang", AL_SGLANG), ("guidellm", al_guidellm)):
                t = tpot(dep, kind, batch, al if kind == "spec" else None) * (1 + rng.normal(0, 0.02))
                ttft = 0.030 + 0.002 * c
                latency = ttft + t * (OUTPUT - 1)
                duration = PROMPTS * t * (OUTPUT - 1) / batch
                common = {"completed": PROMPTS, "duration": duration, "total_input_tokens": PROMPTS * PROMPT,
                          "total_output_tokens": PROMPTS * OUTPUT, "request_throughput": PROMPTS / duration,
                          "output_throughput": PROMPTS * OUTPUT / duration, "mean_ttft_ms": ttft * 1e3,
                          "median_ttft_ms": ttft * 1e3, "mean_tpot_ms": t * 1e3, "median_tpot_ms": t * 1e3,
                          "p99_tpot_ms": t * 1.1e3, "mean_itl_ms": t * 1e3 * (al if kind == "spec" else 1.0)}
                if tool == "vllm":
                    record = {"date": "20261201-120000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
                              "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
                              "num_prompts": PROMPTS, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": c,
                              "failed": 0, "max_concurrent_requests": c, **common}
                    if kind == "spec":
                        drafts = PROMPTS * OUTPUT / al
                        record |= {"spec_decode_acceptance_rate": (al - 1) / STEPS * 100, "spec_decode_acceptance_length": al,
                                   "spec_decode_num_drafts": int(drafts), "spec_decode_draft_tokens": int(drafts * STEPS),
                                   "spec_decode_accepted_tokens": int(drafts * (al - 1))}
                elif tool == "sglang":
                    record = {"backend": "sglang", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": c,
                              "sharegpt_output_len": None, "random_input_len": PROMPT, "random_output_len": OUTPUT,
                              "random_range_ratio": 1.0, "total_output_tokens_retokenized": PROMPTS * OUTPUT,
                              "concurrency": PROMPTS * latency / duration, "accept_length": al if kind == "spec" else None,
                              **common}
                else:
                    def summary(mean: float) -> dict:
                        return {"successful": {"mean": mean, "median": mean, "count": PROMPTS}}

                    record = {"config": {"strategy": {"type_": "concurrent", "streams": c},
                                         "backend": {"model": "meta-llama/Llama-3.1-8B-Instruct"}},
                              "metrics": {"request_totals": {"successful": PROMPTS, "incomplete": 0, "errored": 0, "total": PROMPTS},
                                          "time_per_output_token_ms": summary(t * 1e3),
                                          "request_latency": summary(latency),
                                          "request_concurrency": summary(batch * latency / (t * (OUTPUT - 1))),
                                          "prompt_token_count": summary(float(PROMPT)),
                                          "output_token_count": summary(float(OUTPUT))}}
                files.setdefault(f"{tool}-{kind}", []).append(record)
    names = {"vllm": "vllm-{}.jsonl", "sglang": "sglang-{}.jsonl", "guidellm": "guidellm-{}.json"}
    for key, records in files.items():
        tool, kind = key.split("-")
        path = OUT / names[tool].format("plain" if kind == "plain" else "eagle3")
        if tool == "guidellm":
            report = {"metadata": {"version": 2, "guidellm_version": "0.7.3", "python_version": "3.12.3", "platform": "Linux"},
                      "config": {}, "benchmarks": records}
            path.write_text(json.dumps(report, indent=1) + "\n")
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in records))  # one line per run, as both tools append
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
