"""Hostile and edge-case input, one row per case, for every command and every file format specsim reads.

Each bad input must end in exit status 2 with exactly one line on stderr that names what is wrong (the
expected words are beside each row), no traceback, and nothing written.  Valid edge cases at the end must
give the right answer.
"""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.describe.hardware import builtin_dir

HAS_TORCH = importlib.util.find_spec("torch") is not None

PROFILE = "name: mine\npeak_flop_per_s: 9.89e+14\npeak_bytes_per_s: 3.35e+12\nmemory_bytes: 8.0e+10\n"
CONFIG = (
    '{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, '
    '"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256%s}'
)
MOE = (
    '{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 4, '
    '"num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "moe_intermediate_size": 768, '
    '"num_experts": 128, "num_experts_per_tok": %d}'
)
CSV_HEAD = "model,batch,tokens_per_seq,context,median_s\n"
SHAPE_HEAD = "vocab_size,hidden_size,intermediate_size,n_layers,n_heads,n_kv_heads,head_dim,tie_embeddings,batch,tokens_per_seq,context,median_s\n"
METRICS = (
    'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {d}\n'
    'vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="m"}} {t}\n'
    'vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="m"}} {a}\n'
)
POS = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{k}"}} {v}\n'


def _csv_rows(n: int, layers: str = "16", tie: str = "True", same: bool = False) -> str:
    rows = [
        f"128256,2048,8192,{layers},32,8,64,{tie},{1 if same else 2 ** (i % 6)},{1 + (0 if same else i % 3)},"
        f"{0 if same else 128 * (i // 6)},0.0015\n"
        for i in range(n)
    ]
    return SHAPE_HEAD + "".join(rows)


def _npy_with_header(path, shape, descr="<f8"):
    """A .npy file whose header claims ``shape`` but which holds no data (the header alone is checked)."""
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)


HEAD3 = (
    '{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1, '
    '"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256%s}'
)


# Files each case can refer to as {name}; written fresh into tmp_path for every case.
def _past_capacity_e2e() -> str:
    """The example vllm bench serve file with its last run at 1,000 requests/s without --max-concurrency (a rate no H100
    serves Llama-3.1-8B at) and its TPOT taken away, judged by its end-to-end latency alone (mean_e2el_ms: its TTFT and
    the TPOT's tokens)."""
    from pathlib import Path

    lines = (
        (Path(__file__).resolve().parent.parent / "examples" / "bench" / "vllm-plain.jsonl").read_text().splitlines()
    )
    last = json.loads(lines[-1]) | {"max_concurrency": None, "request_rate": 1000.0}
    last["mean_e2el_ms"] = last["mean_ttft_ms"] + last["mean_tpot_ms"] * (
        last["total_output_tokens"] / last["completed"] - 1
    )
    for key in ("mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms"):
        last.pop(key, None)
    return "\n".join([*lines[:-1], json.dumps(last)]) + "\n"


FILES = {
    # --prompts that are not JSONL of {"prompt": ...} lines (run.sh failed at the first real-acceptance run)
    "prose.jsonl": "hello\n",
    "blank.jsonl": "\n\n",
    "twice.jsonl": '{"prompt": "a", "prompt": "b"}\n',
    # SGLang's page: the mean accept length alone (sglang:spec_accept_length), no steps
    "sglang.txt": 'sglang:spec_accept_length{model_name="m"} 2.5\n',
    "sglang-nan.txt": 'sglang:spec_accept_length{model_name="m"} NaN\n',
    # drafts of mixed lengths (a dynamic schedule): 2.5 drafted tokens a draft
    "mixed-metrics.txt": 'vllm:spec_decode_num_drafts_total{model_name="m"} 1000\n'
    'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 2500\n'
    'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 1500\n',
    # vLLM's V0 engine: a gauge of the acceptance rate and token counters, no count of drafts (vllm/engine/metrics.py)
    "v0-metrics.txt": 'vllm:spec_decode_draft_acceptance_rate{model_name="m"} 0.6\n'
    'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 300\n'
    'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 180\n',
    "alias.yaml": "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    + PROFILE.replace("name: mine", "name: x"),
    "deep.yaml": PROFILE + "sources: " + "[" * 5000 + "]" * 5000 + "\n",
    "dupkey.yaml": PROFILE + "memory_bytes: 1.0e+11\n",
    "tiny-peak.yaml": PROFILE.replace("9.89e+14", "1.0e-300"),
    "huge-overhead.yaml": PROFILE + "overhead_s: 1.0e+308\n",
    "string-number.yaml": PROFILE.replace("9.89e+14", "lots"),
    "list.yaml": "- 1\n- 2\n",
    "latin1.yaml": b"name: m\xe9\n",
    "fp8q.json": CONFIG % ', "quantization_config": {"quant_method": "gptq", "bits": 3}',
    "bnb.json": CONFIG % ', "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true}',
    "dtype.json": CONFIG % ', "torch_dtype": "float8_e4m3fn"',
    "moe.json": CONFIG % ', "num_local_experts": 8',
    "badjson.json": "{not json",
    "moe-k.json": MOE % 200,
    "arch.json": (CONFIG % "").replace("LlamaForCausalLM", "MambaForCausalLM"),
    "mxfp4-dense.json": CONFIG % ', "quantization_config": {"quant_method": "mxfp4"}',
    "ct-mixed.json": CONFIG
    % (
        ', "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {'
        '"a": {"weights": {"num_bits": 8, "type": "float"}}, "b": {"weights": {"num_bits": 4, "type": "int"}}}}'
    ),
    "layer-types.json": CONFIG % ', "sliding_window": 512, "layer_types": ["sliding_attention", "full_attention"]',
    "swa-some.json": CONFIG % ', "sliding_window": 4096, "use_sliding_window": true',
    "kvheads5.json": (CONFIG % "").replace('"num_key_value_heads": 8', '"num_key_value_heads": 5'),
    "head.json": (
        '{"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "intermediate_size": 8192, '
        '"num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, '
        '"draft_vocab_size": 32000}'
    ),
    "sglang-metrics.txt": 'sglang:spec_accept_length{model_name="m"} 2.5\n',
    "capture.om": 'vllm:spec_decode_num_drafts_total{model_name="m"} 1 1796083200\n'
    'vllm:spec_decode_num_drafts_total{model_name="m"} 9 1796083260\n# EOF\n',
    "trace-neg.csv": "arrival_s,prompt_tokens,output_tokens\n-1,10,10\n",
    "trace-back.csv": "arrival_s,prompt_tokens,output_tokens\n0,10,10\n2,10,10\n1,10,10\n",
    "trace-zero.csv": "arrival_s,prompt_tokens,output_tokens\n0,10,0\n",
    "trace-long.jsonl": '{"arrival_s": 0, "prompt_tokens": 5000000, "output_tokens": 10}\n',
    "trace-header.csv": "time,prompt,output\n0,10,10\n",
    "trace-text.jsonl": '{"arrival_s": "soon", "prompt_tokens": 10, "output_tokens": 10}\n',
    "trace-text.csv": "arrival_s,prompt_tokens,output_tokens\n0,10,10\n0.5,ten,10\n",
    "trace-blank-cell.csv": "arrival_s,prompt_tokens,output_tokens\n0,10,10\n0.5,10,\n",
    "head-obj.json": '{"a": 1}',
    "head-int-arch.json": '{"architectures": 5}',
    "head-nested-arch.json": '{"architectures": [["LlamaForCausalLMEagle3"]]}',
    "head-zero-vocab.json": HEAD3 % ', "draft_vocab_size": 0',
    "head-bool-vocab.json": HEAD3 % ', "draft_vocab_size": true',
    "head-inf.json": HEAD3.replace('"hidden_size": 4096', '"hidden_size": Infinity') % "",
    "head-deep.json": '{"a": ' * 200 + "1" + "}" * 200,
    "head-bnb.json": HEAD3 % ', "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true}',
    "two-models.txt": (
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="a"} 10\n'
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="b"} 10\n'
    ),
    "ansi.yaml": PROFILE.replace("name: mine", 'name: "a\\x1b[31mred"'),  # YAML's escape: the file holds a backslash
    "big.yaml": PROFILE + "#" * (2 * 1024 * 1024) + "\n",
    "huge-int.yaml": PROFILE.replace("8.0e+10", "9" * 400),
    "huge5k.yaml": PROFILE.replace("8.0e+10", "9" * 5000),  # past Python's 4300-digit int conversion limit
    "list-key.yaml": PROFILE + "? [a, b]\n: 1\n",
    "huge5k.json": CONFIG % (', "max_position_embeddings": ' + "9" * 5000),
    "trace-huge.jsonl": '{"arrival_s": 0, "prompt_tokens": %s, "output_tokens": 5}\n' % ("9" * 5000),
    "trace-bool.jsonl": '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": true}\n',
    "trace-far.csv": "arrival_s,prompt_tokens,output_tokens\n0,10,10\n1e17,10,10\n",
    # Verification cheaper than decode (t proportional to 1/q): not step times of one model.
    "inverse-q.csv": CSV_HEAD
    + "".join(f"llama-3.2-1b,{b},{q},{L},{0.01 / q}\n" for b in (1, 4, 16) for q in (1, 2, 4) for L in (0, 512)),
    "nospec-metrics.txt": 'vllm:num_requests_running{model_name="m"} 3\n',
    "array.json": "[1, 2]",
    "fraclayers.json": (CONFIG % "").replace('"num_hidden_layers": 16', '"num_hidden_layers": 8.9'),
    "bench-unknown.json": '{"hello": 1}',
    "plan-bad.yaml": (
        "specsim_bench_plan: 1\nengine: vllm\nversion: 0.24.0\npreset: vllm@0.14\nhardware: h100-sxm\n"
        "target: llama-3.1-8b\ndrafter: eagle3\ntp: 1\ndraft_tp: 1\nruns:\n- {kind: spec, file: r.json, steps: 3, "
        "pinned_accept_length: 4.5}\n"
    ),
    "bench-c8.jsonl": '{"backend": "sglang", "total_output_tokens_retokenized": 1, "max_concurrency": 8, "completed": 10, '
    '"duration": 5, "total_input_tokens": 100, "total_output_tokens": 1000, "mean_tpot_ms": 5, "accept_length": 2.5}\n',
    "bench-v3.json": '{"metadata": {"version": 3}, "benchmarks": []}',
    "bench-past-capacity-e2e.jsonl": _past_capacity_e2e(),
    # GuideLLM 0.4's report: args and benchmarks, no metadata (src/guidellm/benchmark/schemas/generative/report.py)
    "bench-guidellm04.json": '{"args": {}, "benchmarks": [{"metrics": {}}]}',
    "bench-nan.jsonl": '{"backend": "vllm", "model_id": "m", "date": "x", "max_concurrency": 4, "completed": 10, "duration": 5, '
    '"total_input_tokens": 100, "total_output_tokens": 1000, "mean_tpot_ms": NaN}\n',
    "bench-inf-tpot.jsonl": '{"backend": "sglang", "total_output_tokens_retokenized": 1, "max_concurrency": 4, "completed": 10, '
    '"duration": 5, "total_input_tokens": 100, "total_output_tokens": 1000, "mean_tpot_ms": Infinity}\n',
    # a TTFT written in seconds under mean_ttft_ms (0.05 s as 0.05 ms, beside a TPOT of 5 ms) had been fitted, exit 0
    "bench-ttft-seconds.jsonl": '{"backend": "sglang", "total_output_tokens_retokenized": 1, "max_concurrency": 4, '
    '"completed": 10, "duration": 1.25, "total_input_tokens": 100, "total_output_tokens": 1000, "mean_tpot_ms": 5, '
    '"mean_ttft_ms": 0.05}\n',
    "bench-one-token.jsonl": '{"backend": "sglang", "total_output_tokens_retokenized": 1, "max_concurrency": 4, "completed": 10, '
    '"duration": 5, "total_input_tokens": 100, "total_output_tokens": 10, "mean_tpot_ms": 5}\n',
    "bigvocab.json": (CONFIG % "").replace(
        '"vocab_size": 128256', '"vocab_size": 151936'
    ),  # Qwen's size, Llama's shape
    "missing-cols.csv": "model,batch\nllama-3.2-1b,1\n",
    "nan.csv": CSV_HEAD
    + "".join(f"llama-3.2-1b,{b},1,0,{'nan' if b == 4 else 0.001}\n" for b in (1, 2, 4, 8, 16, 32, 64, 128)),
    "negative.csv": CSV_HEAD
    + "".join(f"llama-3.2-1b,{b},1,0,{-0.001 if b == 8 else 0.001}\n" for b in (1, 2, 4, 8, 16, 32, 64, 128)),
    "unknown-model.csv": CSV_HEAD + "".join(f"gpt-17,{b},1,0,0.001\n" for b in (1, 2, 4, 8, 16, 32, 64, 128)),
    "fraclayers.csv": _csv_rows(12, layers="8.9"),
    "tie-no.csv": _csv_rows(12, tie="no"),
    "identical.csv": _csv_rows(20, same=True),
    "binary.csv": b"\x00\x01\x02\xff\xfe",
    "metrics-dup.txt": METRICS.format(d=100, t=300, a=150) * 2,
    "metrics-rising.txt": METRICS.format(d=100, t=200, a=90) + POS.format(k=0, v=40) + POS.format(k=1, v=50),
    "metrics-above.txt": METRICS.format(d=100, t=200, a=190) + POS.format(k=0, v=120) + POS.format(k=1, v=70),
    "metrics-garbage.txt": "this is not prometheus\n",
    "metrics-empty.txt": "",
    # a page saved cut off mid-number (77700.0 kept as 777) had been read as 777
    "metrics-cut.txt": METRICS.format(d=100, t=300, a=150).rstrip("\n")[:-2],
    "metrics-negative.txt": METRICS.format(d=100, t=300, a=-5),
    "metrics-no-drafts.txt": METRICS.format(d=0, t=0, a=0),
}


def _write(tmp_path, command: str | None = None):
    """The input files, and the empty folder out/, in ``tmp_path``: those ``command`` names ({tmp}/NAME), or all of them
    where it names the folder itself or is not given (each case wrote all 94, 2 to 3 files used: a third of the cases'
    time was opening files; no file's text names another)."""
    writers = {
        name: (lambda path, c=content: path.write_bytes(c if isinstance(c, bytes) else c.encode()))
        for name, content in FILES.items()
    }
    writers |= {
        "huge.npy": lambda path: _npy_with_header(path, (100000, 100000)),
        "objects.npy": lambda path: np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True),
        "three-d.npy": lambda path: np.save(path, np.zeros((2, 3, 4))),
        "nan-logits.npy": lambda path: np.save(path, np.array([[0.0, np.nan]])),
        "ok-logits.npy": lambda path: np.save(path, np.zeros((4, 10))),
        "other-vocab.npy": lambda path: np.save(path, np.zeros((4, 12))),
        "empty.npy": lambda path: path.write_bytes(b""),
        "empty-bench.json": lambda path: path.write_bytes(b"  \n"),
    }
    named = (
        None
        if command is None or re.search(r"\{tmp\}(?!/)", command)
        else set(re.findall(r"\{tmp\}/([\w.\-]+)", command))
    )
    for name, write in writers.items():
        if named is None or name in named:
            write(tmp_path / name)
    (tmp_path / "out").mkdir()


CASES = [
    # optimal-gamma, and the deployment flags every model command shares
    ("optimal-gamma --alpha 1.5", "alpha must be in [0, 1]"),
    ("optimal-gamma --alpha nan", "expected a finite number"),
    ("optimal-gamma --batch 0", "batch must be an integer in [1, 65536]"),
    ("optimal-gamma --batch 1e30", "batch must be an integer in [1, 65536]"),
    ("optimal-gamma --batch " + "9" * 400, "a 400-character value"),
    ("optimal-gamma --gamma-max 1000000000", "gamma-max must be an integer in [0, 64]"),
    ("serve-sim --gamma-max 0", "gamma-max must be an integer in [1, 64] (the speculative arm speculates;"),
    ("watch --gamma-max 0", "gamma-max must be an integer in [1, 64] (the search weighs gamma 1 and up"),
    ("watch --output-len 1", "(TPOT is timed over the tokens after the first), got 1"),
    # serve-sim and serve-sweep ran one output token, TPOT n/a, and pointed at optimal-gamma with it, which refuses it
    (
        "serve-sim --concurrency 16 --input-len 1000 --output-len 1",
        "output-len must be an integer in [2, 4194304] (TPOT",
    ),
    ("serve-sweep --concurrency 1,16 --output-len 1", "output-len must be an integer in [2, 4194304] (TPOT"),
    ("optimal-gamma --context -1", "context must be an integer in [0, 4194304]"),
    ("optimal-gamma --rtol 0.7", "rtol must be in [0, 0.5)"),
    ("optimal-gamma --memory-util 0", "must be in (0, 1]"),
    (
        "optimal-gamma --context 4096 --max-context 1024",
        "--max-context (1024) must be at least the mean --context (4096)",
    ),
    ("optimal-gamma --hardware nope", "unknown hardware 'nope'"),
    ("optimal-gamma --target nope", "unknown model 'nope'"),
    ("optimal-gamma --timing guess", "unknown step-time source 'guess'"),
    ("optimal-gamma --timing measured:", "needs a file"),
    ("optimal-gamma --timing measured:{tmp}/missing-cols.csv", "missing column(s)"),
    ("optimal-gamma --engine tgi", "unknown engine 'tgi'; choose vllm, sglang, trtllm, none"),
    (
        "optimal-gamma --engine vllm@0.9",
        "no vllm preset for version '0.9'; known: 0.10-0.13, 0.14-0.27, 0.28-0.34, latest",
    ),
    ("optimal-gamma --engine sglang@0.7.1", "no sglang preset for version '0.7.1'"),
    ("optimal-gamma --engine-round-ms -1", "must be >= 0"),
    ("optimal-gamma --engine-step-ms nan", "--engine-step-ms"),
    ("optimal-gamma --engine-seq-us 2e9", "seq_s must be a finite time in [0, 1] seconds"),
    ("optimal-gamma --engine none --engine-seq-us 5", "--engine none adds no engine time"),
    ("optimal-gamma --engine-seq-step-us -3", "--engine-seq-step-us"),
    ("optimal-gamma --engine-seq-step-us inf", "--engine-seq-step-us"),
    ("optimal-gamma --engine-seq-step-us 5e6", "seq_step_s must be a finite time in [0, 1] seconds"),
    ("optimal-gamma --engine none --engine-seq-step-us 5", "--engine none adds no engine time"),
    ("explain --plot /nonexistent-folder/x.png", "folder '/nonexistent-folder' does not exist"),
    ("explain --plot out.txt", "--plot must end in .png or .svg"),
    ("explain --gamma 0", "gamma"),
    ("steptime --model llama-3.1-70b", "does not fit on one h100-sxm (81.6 GB usable per GPU): --tp 2 fits"),
    ("speedup --gamma 3 --target llama-3.1-70b", "does not fit on one h100-sxm"),
    ("explain --target llama-3.1-70b", "does not fit on one h100-sxm"),
    ("optimal-gamma --engine-overhead-ms -1", "--engine-overhead-ms: must be in [0, 100] ms, got -1"),
    ("optimal-gamma --engine-overhead-ms 1e300", "--engine-overhead-ms: must be in [0, 100] ms, got 1e300"),
    # hardware profiles (YAML)
    ("optimal-gamma --hardware {tmp}/alias.yaml", "YAML aliases (*name) are not allowed"),
    ("optimal-gamma --hardware {tmp}/deep.yaml", "nested deeper than 16 levels"),
    ("optimal-gamma --hardware {tmp}/dupkey.yaml", "duplicate key 'memory_bytes'"),
    ("optimal-gamma --hardware {tmp}/tiny-peak.yaml", "peak_flop_per_s must be in [1e+09, 1e+18]"),
    ("optimal-gamma --hardware {tmp}/huge-overhead.yaml", "overhead_s must be in [0, 1] seconds"),
    ("optimal-gamma --hardware {tmp}/string-number.yaml", "peak_flop_per_s"),
    ("optimal-gamma --hardware {tmp}/list.yaml", "hardware file"),
    ("optimal-gamma --hardware {tmp}/latin1.yaml", "not UTF-8"),
    # model configs (config.json)
    ("optimal-gamma --target {tmp}/fp8q.json", "gptq with 3-bit weights is not modelled; supported: 4-bit"),
    ("optimal-gamma --target {tmp}/bnb.json", "quant_method 'bitsandbytes' is not modelled"),
    ("optimal-gamma --target {tmp}/dtype.json", "torch_dtype 'float8_e4m3fn' is not one of"),
    ("optimal-gamma --target {tmp}/moe.json", "LlamaForCausalLM with experts is not a known layout"),
    ("optimal-gamma --target {tmp}/badjson.json", "not valid JSON"),
    ("optimal-gamma --target {tmp}/array.json", "expected a JSON object"),
    ("optimal-gamma --target {tmp}/fraclayers.json", "num_hidden_layers must be a positive integer"),
    ("optimal-gamma --draft {tmp}/bigvocab.json", "the vocabularies differ"),
    ("schedule --target qwen2.5-7b --draft {tmp}/bigvocab.json --format vllm", "vLLM requires the draft's vocab_size"),
    # speedup and steptime
    ("speedup --alpha 0.8 --gamma -1 --cost-ratio 0.1", "gamma must be an integer in [0, 64]"),
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio -1", "must be >= 0"),
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio 0.1 --batch 4", "--cost-ratio replaces the step-time model"),
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio 0.1 --batch 1", "drop --batch or drop --cost-ratio"),
    (  # vLLM's own start-up check; the budget alone, below the default max_num_seqs, is the same engine
        "serve-sim --max-batched-tokens 1 --concurrency 4 --requests 20",
        "vLLM refuses to start with max_num_batched_tokens 1 below max_num_seqs 1,024",
    ),
    (
        "optimal-gamma --concurrency 8 --max-batched-tokens 100 --max-num-seqs 101",
        "vLLM refuses to start with max_num_batched_tokens 100 below max_num_seqs 101",
    ),
    # every flag of the model or the load, not a chosen few: these were ignored and the closed form printed
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio 0.1 --concurrency 8", "drop --concurrency or drop --cost-ratio"),
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio 0.1 --tp 4 --kv-dtype fp8", "drop --kv-dtype, --tp or drop"),
    ("speedup --alpha 0.8 --gamma 3 --cost-ratio 0.1 --engine sglang", "drop --engine or drop --cost-ratio"),
    ("speedup --alpha 0.8", "required: --gamma"),
    # fixed lengths and a workload: refused as serve-sim refuses them (the answers took the lengths and chat's acceptance)
    ("optimal-gamma --concurrency 8 --workload chat --input-len 500", "--workload a distribution: drop one"),
    ("speedup --gamma 3 --rate 2 --workload code --output-len 100", "--workload a distribution: drop one"),
    ("steptime --tokens-per-seq 0", "tokens-per-seq must be an integer in [1, 65]"),
    ("steptime --model {tmp}/moe.json", "LlamaForCausalLM with experts is not a known layout"),
    # alpha and the metrics page
    ("alpha --acceptance-length 0.5 --gamma 3", "acceptance length"),
    ("alpha --acceptance-length 2.0", "--gamma"),
    ("alpha --metrics {tmp}/metrics-dup.txt", "appears twice"),
    (  # a capture where a page is read: it said "the series ... appears twice; a metrics page gives each series once"
        "serve-sim --rate 2 --metrics {tmp}/capture.om",
        'capture.om is a capture of stamped scrapes (the series vllm:spec_decode_num_drafts_total{model_name="m"} at '
        "several time stamps), not one page: save one /metrics page",
    ),
    ("alpha --metrics {tmp}/metrics-rising.txt", "position 1 was accepted 50 times, more than position 0 (40)"),
    ("alpha --metrics {tmp}/metrics-above.txt", "more than the 100 drafts"),
    ("alpha --metrics {tmp}/metrics-garbage.txt", "line 1: not a Prometheus sample"),
    ("alpha --metrics {tmp}/metrics-empty.txt", "is empty"),
    (
        "alpha --metrics {tmp}/metrics-cut.txt",
        "metrics-cut.txt' does not end in a line feed: the Prometheus text format",
    ),
    ("alpha --metrics {tmp}/metrics-negative.txt", "must be a count in [0, 2**53]"),
    ("alpha --metrics {tmp}/metrics-no-drafts.txt", "num_drafts_total is 0"),
    ("alpha --metrics {tmp}/none.txt", "does not exist"),
    ("alpha --metrics {tmp}", "is a folder"),  # it said a folder "does not exist"
    ("figures --only roofline,roofline --out {tmp}/figs", "only lists roofline more than once"),  # drawn twice
    ("explain --gamma 5 --gamma-max 3", "--gamma-max bounds the search for the best gamma, and --gamma fixes it"),
    # the same pair was taken without a word by the commands that share explain's flags (gamma 10 run past a bound of 2)
    (
        "serve-sim --concurrency 2 --requests 6 --alpha 0.8 --gamma 10 --gamma-max 2",
        "--gamma-max bounds the search for the best gamma, and --gamma fixes it",
    ),
    (
        "serve-sweep --concurrency 2 --requests 6 --alpha 0.8 --gamma 10 --gamma-max 2",
        "--gamma-max bounds the search for the best gamma, and --gamma fixes it",
    ),
    ("compare --alpha 0.8 --gamma 10 --gamma-max 2", "--gamma-max bounds the search for the best gamma, and --gamma"),
    (
        "compare --alpha 0.8 --gamma 10 --gamma-max 2 --concurrency 4",
        "--gamma-max bounds the search for the best gamma, and --gamma fixes it",
    ),
    # alpha read SGLang's mean accept length without accept_length_from_page's range: "its mean accept length is nan
    # tokens a verification", or with --gamma "got nan with gamma 3"
    (
        "alpha --metrics {tmp}/sglang-nan.txt",
        "sglang-nan.txt: sglang:spec_accept_length nan is not a length in [1, 65]",
    ),
    (
        "alpha --metrics {tmp}/sglang-nan.txt --gamma 3",
        "sglang-nan.txt: sglang:spec_accept_length nan is not a length in [1, 65]",
    ),
    (  # it asked for vLLM's counters, "is speculative decoding enabled on that server?"
        "alpha --metrics {tmp}/sglang.txt",
        "sglang.txt is an SGLang page: its mean accept length is 2.5 tokens a verification",
    ),
    ("alpha --metrics /dev/null", "metrics file '/dev/null' is not a regular file"),
    ("hardware show {tmp}", "is a folder (give a YAML profile)"),
    # a folder of benchmark results, as a user keeps one: it said "benchmark file '...' is a folder", not what to give
    ("calibrate-engine --plain {tmp} --hardware h100", "is a folder (give the benchmark files in it, "),
    ("models show {tmp}", "config.json' does not exist (give a config.json or its folder)"),
    # capacity, schedule, compare
    ("capacity --memory-util 2", "must be in (0, 1]"),
    ("schedule --max-batch 1000000000", "max-batch must be an integer in [1, 65536]"),
    ("schedule --min-gain 0.5", "--min-gain: must be a speedup in [1, 65], got 0.5"),
    ("schedule --min-gain 1e300", "--min-gain: must be a speedup in [1, 65], got 1e300"),
    ("schedule --format vllm --json", "cannot be combined with --format vllm"),
    ("schedule --format table --json", "--json prints the schedule as JSON; it cannot be combined with --format table"),
    ("compare --batch x", "batch must be an integer in [1, 65536]"),
    ("compare --gamma 65", "gamma must be an integer in [0, 64]"),
    # toy and acceptance (logits files)
    ("toy nonsense", "invalid choice: 'nonsense'"),
    ("toy exactness --seed -1", "seed must be an integer in [0, 4294967295]"),
    ("acceptance --target-logits {tmp}/huge.npy --draft-logits {tmp}/huge.npy", "the limit is 100,000,000"),
    (
        "acceptance --target-logits {tmp}/objects.npy --draft-logits {tmp}/objects.npy",
        "arrays of Python objects are not read",
    ),
    ("acceptance --target-logits {tmp}/empty.npy --draft-logits {tmp}/empty.npy", "not a readable .npy array"),
    ("acceptance --target-logits {tmp}/three-d.npy --draft-logits {tmp}/three-d.npy", "shape [positions, vocab]"),
    ("acceptance --target-logits {tmp}/nan-logits.npy --draft-logits {tmp}/nan-logits.npy", "NaN or +infinite"),
    (
        "acceptance --target-logits {tmp}/ok-logits.npy --draft-logits {tmp}/other-vocab.npy",
        "same positions and vocabulary",
    ),
    (
        "acceptance --target-logits {tmp}/ok-logits.npy --draft-logits {tmp}/ok-logits.npy --temperature -1",
        "must be >= 0",
    ),
    ("acceptance --target-logits {tmp}/none.npy --draft-logits {tmp}/ok-logits.npy", "does not exist"),
    # calibrate (measurement CSVs) and its outputs
    ("calibrate {tmp}/missing-cols.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "missing column(s)"),
    (
        "calibrate {tmp}/nan.csv --hardware h100-sxm --out {tmp}/out/p.yaml",
        "missing or non-numeric value at data row 3",
    ),
    ("calibrate {tmp}/negative.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "step times must be > 0 seconds"),
    ("calibrate {tmp}/unknown-model.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "unknown model 'gpt-17'"),
    ("calibrate {tmp}/fraclayers.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "n_layers must be an integer"),
    (
        "calibrate {tmp}/tie-no.csv --hardware h100-sxm --out {tmp}/out/p.yaml",
        "tie_embeddings must be true or false, got 'no'",
    ),
    ("calibrate {tmp}/identical.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "too few distinct points"),
    ("calibrate {tmp}/binary.csv --hardware h100-sxm --out {tmp}/out/p.yaml", "measurements file"),
    ("calibrate {tmp}/nan.csv --hardware h100-sxm --out {tmp}/out/p.txt", "--out must end in .yaml or .yml"),
    ("calibrate {tmp}/nan.csv --hardware h100-sxm --out {tmp}/nowhere/p.yaml", "does not exist"),
    (
        "calibrate {tmp}/nan.csv --hardware h100-sxm --out {builtin}/measurements/h100-sxm-vllm.yaml",
        "never overwritten",
    ),
    ("calibrate {tmp}/nan.csv --hardware h100-sxm --out {builtin}/h100-sxm.yaml", "never overwritten"),
    # compose-kernels, hardware, models, figures, reproduce
    # Issue 11: architectures, precision and tensor parallelism.
    ("optimal-gamma --target {tmp}/arch.json", "unsupported architecture 'MambaForCausalLM'"),
    (
        "optimal-gamma --target {tmp}/moe-k.json --draft qwen3-0.6b",
        "num_experts_per_tok (200) exceeds num_experts (128)",
    ),
    (
        "optimal-gamma --target {tmp}/mxfp4-dense.json",
        "mxfp4 quantisation is modelled for the experts of an MoE model only",
    ),
    ("optimal-gamma --target {tmp}/ct-mixed.json", "compressed-tensors groups mix fp8, int4"),
    ("optimal-gamma --target {tmp}/layer-types.json", "layer_types must list one type per layer (16)"),
    (
        "optimal-gamma --target {tmp}/swa-some.json",
        "use_sliding_window=true (windows on some layers only) is not modelled",
    ),
    ("steptime --model {tmp}/kvheads5.json", "num_attention_heads (32) must be a multiple of num_key_value_heads (5)"),
    ("optimal-gamma --weight-dtype fp4", "argument --weight-dtype: invalid choice: 'fp4'"),
    ("optimal-gamma --kv-dtype int4", "argument --kv-dtype: invalid choice: 'int4'"),
    ("optimal-gamma --target llama-3.3-70b --tp 16", "--tp 16 exceeds the 8 devices of one h100-sxm node"),
    ("optimal-gamma --target llama-3.3-70b --tp 3", "tensor parallelism 3 must divide the 64 attention heads"),
    ("optimal-gamma --target llama-3.3-70b --tp 0", "tp must be an integer in [1, 1024], got 0"),
    ("steptime --model qwen2.5-7b --tp 8", "tensor parallelism 8 must divide the 28 attention heads"),
    (
        "steptime --model qwen2.5-7b --tp 7 --hardware mi300x",
        "tensor parallelism 7 and the 4 KV heads must divide one another",
    ),
    (
        "steptime --model qwen3-30b-a3b --tp 8 --hardware cpu-epyc-2vcpu",
        "--tp 8 exceeds the 1 devices of one cpu-epyc-2vcpu node",
    ),
    (
        "optimal-gamma --target llama-3.3-70b --tp 4 --draft-tp 2",
        "draft tensor parallelism 2 must be 1 or the target's 4",
    ),
    ("optimal-gamma --target llama-3.3-70b", "does not fit on one h100-sxm (81.6 GB usable per GPU): --tp 2 fits"),
    ("schedule --target llama-3.3-70b --format vllm", "does not fit on one h100-sxm"),
    (
        "optimal-gamma --target qwen3-30b-a3b --draft qwen3-0.6b --moe-effective-experts 4",
        "routing_effective_experts must lie between the experts per token and the number of experts (8..128), got 4.0",
    ),
    (
        "optimal-gamma --moe-effective-experts 16",
        "model 'llama-3.1-8b': routing_effective_experts applies to routed experts; the model has none",
    ),
    # Issue 12: drafters, trees, acceptance.
    ("optimal-gamma --draft eagle3 --tree topk:2,depth:2,tokens:9", "holds at most 7 tokens"),
    ("optimal-gamma --draft eagle3 --tree topk4", "--tree takes chain or topk:K,depth:D,tokens:N"),
    ("optimal-gamma --draft ngram --tree topk:2,depth:3,tokens:6", "token trees need a drafting network"),
    ("optimal-gamma --acceptance 0.6,0.8", "per-position acceptance must not increase with depth"),
    ("optimal-gamma --acceptance 1.5", "per-position acceptance rates must be numbers in [0, 1]"),
    ("optimal-gamma --acceptance 0.9 --alpha 0.8", "not allowed with argument"),
    ("optimal-gamma --metrics {tmp}/nospec-metrics.txt", "missing counter(s)"),
    ("optimal-gamma --metrics {tmp}/sglang-metrics.txt", "give --metrics-gamma"),
    ("optimal-gamma --draft mtp", "declares no multi-token-prediction layers"),
    ("optimal-gamma --draft eagle3:{tmp}/head.json", "it is a head for another model"),
    ("optimal-gamma --draft eagle3:{tmp}/nowhere.json", "head config"),
    ("schedule --draft eagle3 --tree topk:2,depth:3,tokens:6 --format vllm", "--tree schedules are written for SGLang"),
    ("schedule --target qwen3-8b --draft eagle3 --format vllm", "no published eagle3 head is known for qwen3-8b"),
    (
        "schedule --target deepseek-v3 --draft mtp --tp 8 --hardware h200 --draft-checkpoint x --format vllm",
        "--draft-checkpoint does not apply to --draft mtp",
    ),
    ("optimal-gamma --draft ngram --draft-tp 2", "--draft ngram runs no network"),
    ("optimal-gamma --ngram-cpu-ns 3", "--ngram-cpu-ns applies to --draft ngram only"),
    ("optimal-gamma --sibling-factor 0.5", "--sibling-factor applies to --tree"),
    # Issue 13: serving simulation.
    # each names the row's line, as a cell that is not a number does (they said "request N", one less than its line)
    ("serve-sim --trace {tmp}/trace-neg.csv", "line 2 (request 1): arrival_s must be a finite time >= 0, got -1"),
    (
        "serve-sim --trace {tmp}/trace-back.csv",
        "line 4 (request 3): arrival_s 1 is before the previous request's 2 (line 3)",
    ),
    ("serve-sim --trace {tmp}/trace-zero.csv", "line 2 (request 1): output_tokens must be a whole number >= 1, got 0"),
    (
        "serve-sim --trace {tmp}/trace-long.jsonl",
        "need more than 131,072 tokens (prompt + output), llama-3.1-8b's context limit",
    ),
    ("serve-sim --trace {tmp}/trace-header.csv", "the header must name arrival_s, prompt_tokens, output_tokens"),
    ("serve-sim --trace {tmp}/trace-text.jsonl", "arrival_s must be a number, got 'soon'"),
    # A CSV cell that is not a number is named by its line and column, as a JSON line's is.
    (
        "serve-sim --trace {tmp}/trace-text.csv",
        "trace trace-text.csv, line 3: prompt_tokens must be a number, got 'ten'",
    ),
    (
        "serve-sim --trace {tmp}/trace-blank-cell.csv",
        "trace-blank-cell.csv, line 3: output_tokens must be a number, got ''",
    ),
    ("serve-sim --trace {tmp}/nowhere.csv", "does not exist"),
    ("serve-sim --rate 0", "argument --rate: must be > 0, got 0"),
    ("serve-sim --rate 4 --slo-tpot-ms -5", "argument --slo-tpot-ms: must be > 0, got -5"),
    ("serve-sim --rate 4 --concurrency 3", "not allowed with argument"),
    ("serve-sim --alpha 0.8", "one of the arguments --rate --concurrency --trace is required"),
    ("serve-sim --trace {tmp}/trace-back.csv --requests 5", "--trace gives the requests"),
    ("serve-sim --rate 4 --csv {tmp}/out/x.txt", "--csv must end in .csv"),
    ("serve-sweep --rates 1,0", "must be > 0, got 0"),
    ("serve-sweep --rates ,", "rates needs a comma-separated list of request rates > 0, got ','"),
    ("serve-sweep --rates 1,2 --plot {tmp}/out/x.pdf", "--plot must end in .png or .svg"),
    ("serve-sim --rate 4 --target llama-3.3-70b", "does not fit on h100-sxm"),
    ("compose-kernels --hardware mi300x --out {tmp}/out", "no device 'mi300x'"),
    ("compose-kernels --out {tmp}/nan.csv", "nan.csv': it is a file, not a folder (give a folder, or move the file)"),
    ("hardware show nope", "unknown hardware 'nope'"),
    ("models show nope", "unknown model 'nope'"),
    ("figures --only nope --out {tmp}/out", "unknown figure(s) nope"),
    ("reproduce --what", "unrecognized arguments: --what"),
    # issue 21: serving at tiny rates, far arrivals, values read as the wrong type, measured passes that break physics
    ("serve-sim --rate 1e-15 --requests 50", "a rate of 1e-15 requests/s spreads 50 requests over about 5e+16 s"),
    ("serve-sweep --rates 1e-300 --requests 20", "the simulated horizon is at most 1e+07 s"),
    ("serve-sim --trace {tmp}/trace-far.csv", "arrivals reach 1e+17 s; at most 1e+07 s"),
    ("serve-sim --rate 8 --runs 0", "runs must be an integer in [1, 100], got 0"),
    (
        "serve-sim --rate 8 --runs 100 --requests 20000",
        "--runs 100 of 20,000 requests simulate 2,000,000; at most 1,000,000 per command",
    ),
    ("serve-sim --trace {tmp}/trace-bool.jsonl", "line 1: output_tokens must be a number, got True"),
    (
        "optimal-gamma --timing measured:{tmp}/inverse-q.csv --target llama-3.2-1b --draft llama-3.2-1b --alpha 0.8",
        "takes 5 ms, more than 10% less than a pass with fewer tokens per sequence",
    ),
    # issue 21: EAGLE head configs get the target's validation
    ("optimal-gamma --draft eagle3:{tmp}/head-obj.json", "architecture None is not an EAGLE head"),
    ("optimal-gamma --draft eagle3:{tmp}/head-int-arch.json", "is not an EAGLE head; read: LlamaForCausalLMEagle3"),
    (
        "optimal-gamma --draft eagle3:{tmp}/head-nested-arch.json",
        "architecture a list that names none is not an EAGLE head",
    ),
    (
        "optimal-gamma --draft eagle3:{tmp}/head-zero-vocab.json",
        "draft_vocab_size must be a whole number of tokens in [1, 10000000], got 0",
    ),
    ("optimal-gamma --draft eagle3:{tmp}/head-bool-vocab.json", "draft_vocab_size must be a whole number of tokens"),
    ("optimal-gamma --draft eagle3:{tmp}/head-inf.json", "Infinity is not a JSON number"),
    ("optimal-gamma --draft eagle3:{tmp}/head-deep.json", "nests 200 levels deep; at most 64"),
    ("optimal-gamma --draft eagle3:{tmp}/head-bnb.json", "quant_method 'bitsandbytes' is not modelled"),
    # issue 21: bounded work, names that reach the terminal, contexts past the model, empty file names
    (
        "schedule --draft eagle3 --alpha 0.8 --tree topk:16,depth:16,tokens:256 --max-batch 65536 --format sglang",
        "46,142 trees x 65,536 batch sizes (3,023,962,112 evaluations) is past the limit of 20,000,000",
    ),
    ("serve-sweep --rates " + ",".join(["1"] * 65), "at most 64 per sweep"),
    ("serve-sim --rate 4 --requests 300000", "requests must be an integer in [1, 200000]"),
    (
        "optimal-gamma --context 4194304",
        "a context of 4,194,304 tokens is past llama-3.1-8b's max_position_embeddings (131,072)",
    ),
    ("figures --only nope --list", "--list lists every figure; --only names the ones to make: give one of them"),
    # capacity answered with nothing fitting (and "target_fits": true) where every other command refuses
    ("capacity --context 4000000", "a context of 4,000,000 tokens is past llama-3.1-8b's max_position_embeddings"),
    (
        "capacity --context 4000000 --json",
        "a context of 4,000,000 tokens is past llama-3.1-8b's max_position_embeddings",
    ),
    ("optimal-gamma --metrics {tmp}/two-models.txt", "choose one with --model-name (specsim alpha) or --metrics-model"),
    ("optimal-gamma --metrics-model a", "--metrics-model goes with a --metrics page"),
    ("hardware show {tmp}/ansi.yaml", "name holds a control character ('\\x1b')"),
    ("hardware show {tmp}/big.yaml", "a profile is a few kB, the limit is 1,048,576"),
    (
        "measure-loop --target tiny-28m --draft llama-3.2-1b --batch 1 --tokens 4",
        "target tiny-28m has a vocabulary of 8,192 and draft llama-3.2-1b 128,256: the vocabularies differ",
    ),
    (
        "hardware show {tmp}/huge-int.yaml",
        "huge-int.yaml', line 4: an integer of 400 characters; numbers here have at most 64",
    ),
    (
        "steptime --model {tmp}/huge5k.json",
        "huge5k.json': an integer of 5,000 characters; numbers here have at most 64",
    ),
    (
        "serve-sim --trace {tmp}/trace-huge.jsonl",
        "trace trace-huge.jsonl, line 1: an integer of 5,000 characters; numbers here have at most 64",
    ),
    (
        "hardware show {tmp}/huge5k.yaml",
        "huge5k.yaml', line 4: an integer of 5,000 characters; numbers here have at most 64",
    ),
    ("hardware show {tmp}/list-key.yaml", "a key must be a plain name, not a list or mapping"),
    (
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --spec examples/bench/vllm-eagle3.jsonl --hardware "
        "h100 --draft eagle3 --steps 3 --engine vllm@0.10 --memory-util 0.05 --out {tmp}/out/mu.yaml",
        "--memory-util 0.05 leaves 2.0 GB per GPU after the engine's start-up (specsim's estimate, 2.29 GB) for 16.1 GB",
    ),
    (  # between the weights and the weights with the start-up: a file every answer would refuse, not written
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --spec examples/bench/vllm-eagle3.jsonl --hardware "
        "h100 --draft eagle3 --steps 3 --engine vllm@0.10 --memory-util 0.205 --out {tmp}/out/mu.yaml",
        "--memory-util 0.205 leaves 15.2 GB per GPU after the engine's start-up",
    ),
    (
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --spec examples/bench/vllm-eagle3.jsonl --hardware "
        "h100 --draft eagle3 --steps 3 --engine vllm@0.10 --verify-tokens 2",
        "--verify-tokens 2 is fewer than --steps 3 plus the target's own token: a chain (--topk 1) verifies 4",
    ),
    (  # the page counts 3 draft positions (vllm:spec_decode_num_accepted_tokens_per_pos): its length was given to runs
        # said to be at 5 steps without a word
        "calibrate-engine --plain examples/bench/guidellm-plain.json --spec examples/bench/guidellm-eagle3.json "
        "--hardware h100 --draft eagle3 --steps 5 --engine vllm@0.10 --metrics examples/vllm-metrics.txt",
        "--metrics vllm-metrics.txt counts 3 draft positions (vllm:spec_decode_num_accepted_tokens_per_pos), the runs "
        "it would give its acceptance length are at --steps 5",
    ),
    (  # every run records its acceptance length: the page was said to apply and applied to none
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --spec examples/bench/vllm-eagle3.jsonl --hardware "
        "h100 --draft eagle3 --steps 3 --engine vllm@0.10 --metrics examples/vllm-metrics.txt",
        "--metrics vllm-metrics.txt: every speculative run's file records its acceptance length",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-unknown.json --hardware h100 --target llama-3.1-8b",
        "bench-unknown.json: not a benchmark file specsim reads; read: vllm bench serve",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-v3.json --hardware h100 --target llama-3.1-8b",
        "GuideLLM report schema version 3; read: 1 (GuideLLM 0.5 and 0.6), 2 (0.7 and later)",
    ),
    (  # a rate past what the engine serves, judged by end-to-end latency alone: scipy's "Residuals are not finite in
        # the initial point." (one with its TPOT is fitted as the full engine: tests/test_calibration.py)
        "calibrate-engine --plain {tmp}/bench-past-capacity-e2e.jsonl --hardware h100",
        "bench-past-capacity-e2e.jsonl#4: rate 1000/s is past what the serving model's engine serves at the preset "
        "(vllm@latest's terms, where the fit starts) and is judged by end-to-end latency (no TPOT recorded)",
    ),
    (  # GuideLLM wrote metadata.version from 0.5.0: an older report was "not a benchmark file specsim reads"
        "calibrate-engine --plain {tmp}/bench-guidellm04.json --hardware h100 --target llama-3.1-8b",
        "bench-guidellm04.json: a GuideLLM report with no metadata.version, as GuideLLM 0.4 and older wrote; read: "
        "schema version 1 (GuideLLM 0.5 and 0.6), 2 (0.7 and later)",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-nan.jsonl --hardware h100 --target llama-3.1-8b",
        "NaN is not a JSON number",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-inf-tpot.jsonl --hardware h100 --target llama-3.1-8b",
        "mean_tpot_ms must be a finite number, got inf",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-ttft-seconds.jsonl --hardware h100 --target llama-3.1-8b",
        "bench-ttft-seconds.jsonl#1: mean_ttft_ms 0.05 is under a tenth of mean_tpot_ms 5",
    ),
    (  # GPUStack's benchmark-runner report (tests/data/gpustack-qwen3.5/SOURCES.md): its TPOT counts streamed chunks;
        # it had been fitted, every run "under the model's floor", the user told to check --hardware
        "calibrate-engine --plain tests/data/gpustack-qwen3.5/plain-bf16.jsonl --hardware h200 --target qwen3.5-35b-a3b "
        "--engine vllm@0.17.1",
        "plain-bf16.jsonl#1: mean_tpot_ms 1.06 is 0.16 of the 6.433 ms per token after the first that its mean_e2el_ms "
        "1850, mean_ttft_ms 46.01 and 281.41 output tokens per request give",
    ),
    (
        "calibrate-engine --plain {tmp}/bench-one-token.jsonl --hardware h100 --target llama-3.1-8b",
        "a mean of 1 output tokens per request leaves no decode steps to time",
    ),
    (
        "calibrate-engine --plain examples/bench/vllm-eagle3.jsonl --hardware h100",
        "vllm-eagle3.jsonl#1: given as a plain run but it reports an acceptance length of 2.80",
    ),
    (
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --spec examples/bench/vllm-eagle3.jsonl --hardware h100",
        "--spec runs need --draft and --steps",
    ),
    (
        "calibrate-engine --plain examples/bench/vllm-plain.jsonl --hardware h100 --target qwen3-8b",
        "--target qwen3-8b but the benchmark files ran meta-llama/Llama-3.1-8B-Instruct",
    ),
    (
        "calibrate-engine --plan examples/bench/plan/plan.yaml --hardware h100",
        "--plan names the deployment and its runs: drop --hardware",
    ),
    (
        "calibrate-engine --spec examples/bench/vllm-eagle3.jsonl --draft eagle3 --steps 3 --hardware h100",
        "give --plan PLAN.yaml (specsim bench-plan) or --plain FILE",
    ),
    ("calibrate-engine --plain examples/bench/vllm-plain.jsonl", "--hardware is required with --plain/--spec"),
    ("calibrate-engine --plain {tmp}/empty-bench.json --hardware h100", "empty-bench.json: the file is empty"),
    ("calibrate-engine --plan {tmp}/no-such/plan.yaml", "does not exist or is not a file (bench-plan writes"),
    (
        "calibrate-engine --plan {tmp}/plan-bad.yaml",
        "plan-bad.yaml: run 1: pinned_accept_length must be in [1, 4] for 3 draft steps",
    ),
    ("optimal-gamma --calibration {tmp}/plan-bad.yaml", "plan-bad.yaml: not a specsim calibration"),
    (
        "bench-plan --engine vllm@0.19.1 --draft eagle3 --out {tmp}/plan-out",
        "vllm 0.19.1 cannot pin acceptance at a length: synthetic_acceptance_length arrived in 0.20.0",
    ),
    (
        "bench-plan --engine vllm@0.24.0 --draft eagle3 --pin-accept-length 2.5,5.5 --out {tmp}/plan-out",
        "a pinned acceptance length of 5.5 at 4 draft steps is outside [1, 5]",
    ),
    (
        "bench-plan --engine vllm@0.24.0 --draft eagle3 --steps 3 --out {tmp}/plan-out",
        "--steps needs two numbers of draft steps",
    ),
    (
        "bench-plan --engine vllm@0.24.0 --draft eagle3 --concurrency 1,2 --out {tmp}/plan-out",
        "--concurrency needs at least 3 loads",
    ),
    (
        "bench-plan --engine vllm@0.14.1 --draft llama-3.2-1b --out {tmp}/plan-out",
        "vllm 0.14.1 refuses method draft_model (vllm/engine/arg_utils.py: 'not supported yet' before 0.15.0)",
    ),
    (
        "bench-plan --engine sglang@0.4.7 --draft eagle3 --out {tmp}/plan-out",
        "specsim writes plans for SGLang 0.4.8 and later",
    ),
    (
        "bench-plan --engine trtllm --draft llama-3.2-1b --pin-accept-length 2.5,3 --out {tmp}/plan-out",
        "TensorRT-LLM's two-model path (DraftTarget) reads TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS as a whole number",
    ),
    (
        "bench-plan --engine vllm --draft eagle3 --no-pin --out {tmp}/plan-out",
        "--no-pin measures acceptance on your prompts",
    ),
    ("bench-plan --engine vllm --draft eagle3 --prompts {tmp}/missing.jsonl --out {tmp}/plan-out", "--prompts"),
    ("alpha --metrics {tmp}/v0-metrics.txt", "a vLLM V0 engine's page (vllm:spec_decode_draft_acceptance_rate, no"),
    ("optimal-gamma --concurrency 1,,4", "concurrency has an empty item in '1,,4'"),
    ("optimal-gamma --acceptance 0.9,,0.7", "--acceptance has an empty position in '0.9,,0.7'"),
    ("optimal-gamma --rate 4,4.0", "rates lists 4 more than once in '4,4.0'"),
    ("bench-plan --engine vllm@0.24.0 --pin-accept-length 2,,3 --out {tmp}/plan-out", "has an empty item in '2,,3'"),
    ("optimal-gamma --batch 4,4", "batch lists 4 more than once in '4,4': give each value once"),
    ("serve-sweep --rates 2,1,1", "rates lists 1 more than once in '2,1,1'"),
    (
        "alpha --metrics {tmp}/mixed-metrics.txt --gamma 3",
        "mixed-metrics.txt's drafts vary in length (2.50 drafted tokens a draft on average: a dynamic schedule)",
    ),
    (
        "alpha --metrics examples/vllm-metrics.txt --gamma 5",
        "--gamma 5 but examples/vllm-metrics.txt's drafts are of gamma 3 (drafted tokens per draft): the page says it",
    ),
    (
        "replay --draft llama-3.2-1b --rates 0:3,1h --page-seconds 0.001 --out {tmp}/out/day.om",
        "--page-seconds must be in [1, 3600] (the day's length), got 0.001",
    ),
    ("replay --draft llama-3.2-1b --rates 0:3,1h --page-seconds 0 --out {tmp}/out/day.om", "must be > 0, got 0"),
    (  # it said "could not convert string to float: 'x'", not what a rate is
        "replay --draft llama-3.2-1b --rates 0:3,2h:x,4h --out {tmp}/out/day.om",
        "--rates '0:3,2h:x,4h': a rate is requests/s in [0, 1e5], got 'x'",
    ),
    (  # it said "a duration must be > 0 and at most 366d, got '1e308'", naming no flag
        "replay --draft llama-3.2-1b --rates 0:3,1h --drop-at 1e308 --drop-to 0.5 --out {tmp}/out/day.om",
        "specsim replay: error: --drop-at: a duration must be > 0 and at most 366d, got '1e308'",
    ),
    (  # it simulated the day, wrote day.om stamped 1e+308 (1e308 + 60 is 1e308) and ended in time_t's OverflowError
        "replay --draft llama-3.2-1b --rates 0:0.2,2m --start 1e308 --out {tmp}/out/day.om",
        "--start '1e308' is 1e+308 Unix seconds: a time must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z",
    ),
    (  # it said "--start to --end spans 0 s, less than one --interval (60 s)": 1e308 less 11 windows is 1e308
        "watch --prometheus http://127.0.0.1:9 --job vllm --engine vllm@0.26.0 --draft llama-3.2-1b --end 1e308",
        "--end '1e308' is 1e+308 Unix seconds: a time must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z",
    ),
    (
        "watch --prometheus http://127.0.0.1:9 --job vllm --engine vllm@0.26.0 --draft llama-3.2-1b --start 1900-01-01 "
        "--end 2026-12-01T00:00:00Z",
        "--start '1900-01-01' is -2.209e+09 Unix seconds: a time must be from 1970-01-01T00:00:00Z",
    ),
    (
        "bench-plan --engine vllm@0.24.0 --draft eagle3 --input-tokens 512,200000 --out {tmp}/plan-out",
        "a context of 200,256 tokens is past llama-3.1-8b's max_position_embeddings (131,072); give --input-tokens",
    ),
    (
        "bench-plan --engine vllm@0.24.0 --draft eagle3 --output-tokens 200000 --out {tmp}/plan-out",
        "a context of 202,048 tokens is past llama-3.1-8b's max_position_embeddings",
    ),
    (
        "bench-plan --engine vllm --draft eagle3 --no-pin --prompts {tmp}/p.jsonl --input-tokens 100,300 --out "
        "{tmp}/plan-out",
        "--input-tokens sets the pinned runs; --no-pin runs your --prompts as they are: drop one",
    ),
    (  # the default's own value, typed: given all the same
        "bench-plan --engine vllm --draft eagle3 --no-pin --prompts {tmp}/p.jsonl --input-tokens=512,2048 --out "
        "{tmp}/plan-out",
        "--input-tokens sets the pinned runs; --no-pin runs your --prompts as they are: drop one",
    ),
    (  # the alias typed is the one named: the library's message names --input-tokens (main._as_typed)
        "bench-plan --engine vllm@0.34.0 --input-len 1000 --out {tmp}/plan-out",
        "error: --input-len needs two prompt lengths: one cannot tell the KV-cache reads from the rest",
    ),
    (
        "bench-plan --engine vllm --draft eagle3 --no-pin --prompts {tmp}/p.jsonl --input-len 100,300 --out "
        "{tmp}/plan-out",
        "error: --input-len sets the pinned runs; --no-pin runs your --prompts as they are: drop one",
    ),
    (
        "bench-plan --engine vllm --draft eagle3 --no-pin --prompts {tmp}/p.jsonl --pin-accept-length 2,3 --out "
        "{tmp}/plan-out",
        "--pin-accept-length sets the pinned runs",
    ),
    ("bench-plan --engine vllm --draft eagle3 --out {tmp}/alias.yaml", "exists and is not an empty folder"),
    (
        "bench-plan --engine vllm --draft eagle3 --prompts {tmp}/prose.jsonl --out {tmp}/plan-out",
        'prose.jsonl line 1: not a JSON object; each line is one {"prompt": "..."}',
    ),
    (  # it said "not a JSON object" of an object, swallowing the duplicate key's own line
        "bench-plan --engine vllm --draft eagle3 --prompts {tmp}/twice.jsonl --out {tmp}/plan-out",
        "--prompts twice.jsonl line 1: the key 'prompt' appears twice; each once",
    ),
    (
        "bench-plan --engine vllm --draft eagle3 --prompts {tmp}/blank.jsonl --out {tmp}/plan-out",
        "--prompts blank.jsonl holds no prompt",
    ),
    ("bench-plan --engine none --draft eagle3 --out {tmp}/plan-out", "--engine none serves nothing"),
]
if HAS_TORCH:
    CASES += [
        ("measure --model tiny-5m --device cpu --batch 1 --out {tmp}/nowhere/x.csv", "does not exist"),
        ("measure --model tiny-5m --device cpu --batch 1 --out {tmp}/out/x.txt", "--out must end in .csv"),
        (
            "measure --model llama-3.1-70b --device cpu --batch 1 --out {tmp}/out/x.csv",
            "needs 141.1 GB of bf16 weights",
        ),
        ("measure-loop --target tiny-5m --draft tiny-5m --alpha 2", "alpha must be in [0, 1]"),
        ("measure-loop --target tiny-5m --draft tiny-5m --gamma 100000", "gamma must be an integer in [1, 64]"),
    ]


@pytest.mark.parametrize("command, message", CASES, ids=[c[0][:60] for c in CASES])
def test_bad_input_gets_one_line_and_exit_2(command, message, tmp_path, capsys):
    _write(tmp_path, command)
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    argv = command.format(tmp=tmp_path, builtin=builtin_dir()).split(" ")
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.strip().splitlines() if not line.startswith(("note: ", "specsim: building"))]
    assert code == 2, (command, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before  # nothing written


def test_builtin_profiles_are_untouched_by_the_rows_above():
    assert (builtin_dir() / "measurements" / "h100-sxm-vllm.yaml").read_text().startswith(("name:", "#"))


# -- valid edge cases give the right answer -------------------------------------
def test_identical_distributions_give_alpha_exactly_one(tmp_path, capsys):
    logits = np.random.default_rng(0).normal(size=(16, 300))
    np.save(tmp_path / "t.npy", logits)
    assert (
        main(
            [
                "acceptance",
                "--target-logits",
                str(tmp_path / "t.npy"),
                "--draft-logits",
                str(tmp_path / "t.npy"),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["alpha"] == pytest.approx(1.0, abs=1e-12)


def test_gamma_zero_is_plain_decoding_and_alpha_one_accepts_everything(capsys):
    assert main(["speedup", "--alpha", "0.5", "--gamma", "0", "--cost-ratio", "0.3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["speedup"] == 1.0
    assert main(["speedup", "--alpha", "1", "--gamma", "4", "--cost-ratio", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens_per_round"] == 5.0


def test_fractional_draft_length_is_reported_not_rounded(tmp_path, capsys):
    # 100 drafts, 250 drafted and 180 accepted tokens: a dynamic schedule. gamma is not 2, and alpha is not 0.93.
    (tmp_path / "m.txt").write_text(METRICS.format(d=100, t=250, a=180))
    assert main(["alpha", "--metrics", str(tmp_path / "m.txt"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gamma"] is None and data["alpha"] is None
    assert data["mean_draft_length"] == 2.5 and data["acceptance_rate"] == pytest.approx(0.72)


def test_a_position_no_draft_reached_is_null_in_json(tmp_path, capsys):
    page = METRICS.format(d=100, t=300, a=40) + POS.format(k=0, v=40) + POS.format(k=1, v=0) + POS.format(k=2, v=0)
    (tmp_path / "m.txt").write_text(page)
    assert main(["alpha", "--metrics", str(tmp_path / "m.txt"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["per_position_conditional"][0] == pytest.approx(0.4) and data["per_position_conditional"][2] is None


def test_an_empty_csv_name_is_refused_not_ignored(capsys):
    # From a shell, --csv '' is an empty argument: it used to be skipped silently.
    assert main(["serve-sim", "--rate", "4", "--requests", "10", "--csv", ""]) == 2
    assert "--csv needs a file name, got an empty one" in capsys.readouterr().err


def test_calibrate_engine_refuses_to_write_over_a_file_it_reads(tmp_path, capsys):
    import shutil

    plan = tmp_path / "plan"
    shutil.copytree("examples/bench/plan", plan)
    before = (plan / "plan.yaml").read_bytes()
    assert main(["calibrate-engine", "--plan", str(plan / "plan.yaml"), "--out", str(plan / "plan.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "which calibrate-engine reads: give another file" in err[0], err
    assert (plan / "plan.yaml").read_bytes() == before
