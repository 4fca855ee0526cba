"""Reading what serving engines' own benchmark tools write: one :class:`BenchRun` per benchmark run.

Three tools, their formats taken from their source:

``vllm bench serve --save-result``  one JSON object per file (``--append-result`` appends one per line);
    read: ``model_id``, ``max_concurrency``, ``request_rate``, ``completed``, ``duration``,
    ``total_input_tokens``, ``total_output_tokens``, ``mean_tpot_ms`` and, where the server ran speculation
    and the tool read its ``/metrics`` before and after, ``spec_decode_acceptance_length`` (vLLM's
    ``vllm/benchmarks/serve.py``; ``benchmarks/benchmark_serving.py`` before ``vllm bench`` wrote the same
    keys without the ``spec_decode_`` ones).
``python -m sglang.bench_serving --output-file``  JSON lines, one per run; read: ``backend``,
    ``max_concurrency``, ``request_rate``, ``completed``, ``duration``, ``total_input_tokens``,
    ``total_output_tokens``, ``mean_tpot_ms`` and ``accept_length`` (the server's
    ``avg_spec_accept_length``, null without speculation) (SGLang's ``python/sglang/bench_serving.py``).
``python -m tensorrt_llm.serve.scripts.benchmark_serving --save-result``  vLLM's keys, and per run the summary of
    each request's ``avg_decoded_tokens_per_iter`` (``tensorrt_llm/serve/scripts/benchmark_serving.py``): its mean is the
    acceptance length of a speculative run.
``guidellm benchmark --output-path *.json``  a report of several benchmarks; schema version 1 (GuideLLM 0.6)
    and 2 (0.7): ``benchmarks[].config.strategy`` (``type_``, ``streams`` or ``rate``) and, of the successful
    requests, the means of ``metrics.time_per_output_token_ms``, ``request_latency``, ``request_concurrency``,
    ``prompt_token_count`` and ``output_token_count`` (``src/guidellm/benchmark/schemas``).  GuideLLM
    records no acceptance: a speculative run needs a saved ``/metrics`` page.

The decode batch of a run is Little's law over the decode phase: requests finish at ``completed / duration``
per second and each spends ``TPOT * (output - 1)`` seconds decoding (TPOT excludes the first token), so on
average ``completed / duration * TPOT * (output - 1)`` sequences decode together (at least 1: TPOT is timed
only while something decodes).  GuideLLM's measured mean
concurrency gives the same figure as ``concurrency * TPOT * (output - 1) / latency``.  The mean cached context
is the mean prompt plus half the mean output (:func:`specsim.workloads.mean_context_tokens`).
"""

from __future__ import annotations

import math
from pathlib import Path

from specsim.core.records import record
from specsim.core.limits import MAX_JSON_BYTES, loads_json
from specsim.serving.workloads import mean_context_tokens

__all__ = ["TOOLS", "BenchRun", "read_bench_file"]

#: The tools and versions read, as outputs name them.
TOOLS = {
    "vllm": "vllm bench serve --save-result JSON (vLLM 0.10 and later; benchmark_serving.py before it)",
    "trtllm": "TensorRT-LLM benchmark_serving --save-result JSON (vLLM's keys and avg_decoded_tokens_per_iter)",
    "sglang": "sglang.bench_serving --output-file JSON lines (SGLang 0.4 and later)",
    "guidellm": "GuideLLM benchmark report, schema version 1 (0.6) or 2 (0.7 and later)",
}
#: Most runs read from one file (a sweep of concurrencies is tens).
MAX_RUNS_PER_FILE = 1000
#: Requests in flight (or sequences decoding) past the configured concurrency by more than this factor cannot have been
#: measured in one run (Little's law; the slack covers means of unequal requests).
LITTLE_SLACK = 1.25


@record
class BenchRun:
    """One benchmark run: its load, its mean TPOT and what follows for the decode batch and context."""

    path: str
    index: int  # the run's position in its file (line or benchmark), from 1
    tool: str  # a key of TOOLS
    model: str | None  # the model the tool names, where it names one
    load: str  # the configured load: "concurrency 16", "rate 4/s", "rate inf"
    completed: int
    tpot_s: float
    decode_batch: float
    prompt_tokens: float  # means per request
    output_tokens: float
    accept_length: float | None  # tokens per verification pass, where the tool read it
    rate_per_s: float = 0.0  # requests finished per second (completed / duration; GuideLLM: concurrency / latency)
    concurrency: int | None = None  # the configured concurrency, where the load is one
    server: str | None = None  # the engine the tool says it benchmarked, where it names one

    @property
    def others_rate_per_s(self) -> float:
        """The rate at which other requests arrive while one decodes: all of them in an open loop (Poisson arrivals
        see the time averages), the other ``c - 1`` users' share in a closed loop of ``c`` (a request's own successor
        arrives after it ends)."""
        c = self.concurrency
        return self.rate_per_s * (c - 1) / c if c else self.rate_per_s

    @property
    def where(self) -> str:
        return f"{Path(self.path).name}#{self.index}"

    @property
    def context(self) -> float:
        return float(mean_context_tokens(self.prompt_tokens, self.output_tokens))


def _number(where: str, record: dict, key: str, *, positive: bool = True, optional: bool = False) -> float | None:
    value = record.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: {key} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{where}: {key} must be positive, got {value!r}")
    if value < 0:
        raise ValueError(f"{where}: {key} must not be negative, got {value!r}")
    return float(value)


def _load(where: str, record: dict) -> str:
    concurrency = record.get("max_concurrency")
    if concurrency is not None:
        n = _number(where, record, "max_concurrency")
        if n != int(n):
            raise ValueError(f"{where}: max_concurrency must be a whole number, got {concurrency!r}")
        return f"concurrency {int(n)}"
    rate = record.get("request_rate")
    if rate in ("inf", "Infinity") or (isinstance(rate, float) and math.isinf(rate)):
        return "rate inf"
    return f"rate {_number(where, record, 'request_rate'):g}/s"


def _concurrency(load: str) -> int | None:
    kind, _, value = load.partition(" ")
    return int(value) if kind == "concurrency" else None


#: The client backends of vllm bench serve and sglang.bench_serving that name the engine behind them (an OpenAI-style
#: backend such as ``openai-chat`` names none).
_SERVERS = {"vllm": "vllm", "sglang": "sglang", "sglang-oai": "sglang", "sglang-native": "sglang", "tensorrt-llm": "trtllm",
            "trt": "trtllm", "tgi": "tgi", "lmdeploy": "lmdeploy", "deepspeed-mii": "deepspeed-mii", "scalellm": "scalellm"}


def _server(where: str, record: dict) -> str | None:
    backend = record.get("backend")
    if backend is None:
        return None
    if not isinstance(backend, str):
        raise ValueError(f"{where}: backend must be a string, got {backend!r}")
    return _SERVERS.get(backend.strip().lower())


def _little(where: str, completed: float, duration: float, tpot_s: float, output: float) -> float:
    if output < 2:
        raise ValueError(f"{where}: a mean of {output:g} output tokens per request leaves no decode steps to time "
                         "(TPOT needs at least 2 output tokens)")
    return max(1.0, completed / duration * tpot_s * (output - 1))


def _serve_run(path: Path, index: int, record: object, tool: str) -> BenchRun:
    where = f"{path.name}#{index}"
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a {tool} result is a JSON object, got {type(record).__name__}")
    completed = _number(where, record, "completed")
    duration = _number(where, record, "duration")
    tpot_s = _number(where, record, "mean_tpot_ms") / 1e3
    prompt = _number(where, record, "total_input_tokens", positive=False) / completed
    output = _number(where, record, "total_output_tokens") / completed
    if tool == "trtllm":
        # Tokens per iteration of each request (its avg_decoded_tokens_per_iter), summarised over the run: the
        # acceptance length where the server speculated, 1 where it did not.
        key = "avg_decoded_tokens_per_iter"
        summary = record.get(key)
        if not isinstance(summary, dict):
            raise ValueError(f"{where}: {key} must be an object with a mean, got {summary!r}")
        al = _number(f"{where}: {key}", summary, "mean")
        al = None if al == 1.0 else al
    else:
        key = "spec_decode_acceptance_length" if tool == "vllm" else "accept_length"
        al = _number(where, record, key, optional=True)
    if al is not None and al < 1:
        raise ValueError(f"{where}: {key} must be at least 1 (tokens per verification pass), got {al:g}")
    model = record.get("model_id")  # vLLM names it; SGLang's result does not
    if model is not None and not isinstance(model, str):
        raise ValueError(f"{where}: model_id must be a string, got {model!r}")
    load = _load(where, record)
    return BenchRun(str(path), index, tool, model, load, int(completed), tpot_s,
                    _little(where, completed, duration, tpot_s, output), prompt, output, al, completed / duration,
                    _concurrency(load), _server(where, record))


def _mean(where: str, metrics: dict, key: str) -> float:
    try:
        summary = metrics[key]["successful"]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: metrics.{key}.successful is missing") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{where}: metrics.{key}.successful must be an object")
    return _number(f"{where}: metrics.{key}.successful", summary, "mean", positive=False)


def _guidellm_runs(path: Path, report: dict) -> list[BenchRun]:
    version = (report.get("metadata") or {}).get("version") if isinstance(report.get("metadata"), dict) else None
    if version not in (1, 2):
        raise ValueError(f"{path.name}: GuideLLM report schema version {version!r}; read: 1 (GuideLLM 0.6), 2 (0.7 and later)")
    benchmarks = report.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ValueError(f"{path.name}: a GuideLLM report holds a non-empty list 'benchmarks'")
    runs = []
    for index, bench in enumerate(benchmarks, start=1):
        where = f"{path.name}#{index}"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise ValueError(f"{where}: a GuideLLM benchmark is an object with 'metrics'")
        strategy = (bench.get("config") or {}).get("strategy") if isinstance(bench.get("config"), dict) else None
        if not isinstance(strategy, dict):
            raise ValueError(f"{where}: config.strategy is missing")
        kind = strategy.get("type_")
        if kind == "concurrent":
            streams = _number(where, strategy, "streams")
            if streams != int(streams):
                raise ValueError(f"{where}: config.strategy.streams must be a whole number of streams, got {strategy['streams']!r}")
            load = f"concurrency {int(streams)}"
        elif kind == "synchronous":
            load = "concurrency 1"
        elif kind in ("constant", "poisson"):
            load = f"rate {_number(where, strategy, 'rate'):g}/s"
        elif kind == "throughput":
            load = "rate inf"
        else:
            raise ValueError(f"{where}: strategy type_ {kind!r}; read: synchronous, concurrent, constant, poisson, throughput")
        m = bench["metrics"]
        tpot_s = _mean(where, m, "time_per_output_token_ms") / 1e3
        latency = _mean(where, m, "request_latency")
        concurrency = _mean(where, m, "request_concurrency")
        output = _mean(where, m, "output_token_count")
        prompt = _mean(where, m, "prompt_token_count")
        totals = m.get("request_totals")
        completed = totals.get("successful") if isinstance(totals, dict) else None
        if isinstance(completed, bool) or not isinstance(completed, int) or completed < 1:
            raise ValueError(f"{where}: metrics.request_totals.successful must be a positive count, got {completed!r}")
        if tpot_s <= 0 or latency <= 0:
            raise ValueError(f"{where}: time_per_output_token_ms and request_latency must be positive")
        if output < 2:
            raise ValueError(f"{where}: a mean of {output:g} output tokens per request leaves no decode steps to time")
        backend = (bench.get("config") or {}).get("backend")
        model = backend.get("model") if isinstance(backend, dict) and isinstance(backend.get("model"), str) else None
        if concurrency <= 0:
            raise ValueError(f"{where}: metrics.request_concurrency.successful.mean must be positive, got {concurrency:g}")
        streams = _concurrency(load)
        if streams is not None and concurrency > LITTLE_SLACK * streams:
            raise ValueError(f"{where}: a mean of {concurrency:g} requests in flight at {streams} stream(s) is more than the "
                             "load lets in: these fields are not of one run")
        batch = max(1.0, concurrency * tpot_s * (output - 1) / latency)
        runs.append(BenchRun(str(path), index, "guidellm", model, load, completed, tpot_s, batch, prompt, output, None,
                             concurrency / latency, streams))
    return runs


def _records(path: Path) -> list:
    """The file's JSON: one document, or JSON lines (vLLM's --append-result, SGLang's --output-file)."""
    from specsim.core.files import read_text

    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ValueError(f"benchmark file {str(path)!r} is {size:,} bytes; the limit is {MAX_JSON_BYTES:,}")
    text = read_text(path, "benchmark file")
    try:
        return [loads_json(text, path.name, allow_infinity=True)]
    except ValueError as err:
        if "Extra data" not in str(err):
            raise
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if len(records) >= MAX_RUNS_PER_FILE:
                raise ValueError(f"{path.name}: more than {MAX_RUNS_PER_FILE} runs in one file")
            records.append(loads_json(line, f"{path.name}, line {number}", allow_infinity=True))
    return records


def _tool_of(path: Path, record: dict) -> str:
    if "benchmarks" in record and "metadata" in record:
        return "guidellm"
    if "avg_decoded_tokens_per_iter" in record:
        return "trtllm"
    if "total_output_tokens_retokenized" in record or ("accept_length" in record and "spec_decode_acceptance_length" not in record):
        return "sglang"
    if "backend" in record and ("endpoint_type" in record or "model_id" in record or "spec_decode_acceptance_length" in record):
        return "vllm"
    if "mean_tpot_ms" in record and "date" in record:
        return "vllm"  # benchmark_serving.py before vllm bench: no endpoint_type
    raise ValueError(f"{path.name}: not a benchmark file specsim reads; read: " + "; ".join(TOOLS.values()))


def read_bench_file(path: str | Path) -> list[BenchRun]:
    """Every run of one benchmark file, its tool detected from its keys; refused with one line if it is none of them."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"benchmark file {str(p)!r} does not exist or is not a file")
    records = _records(p)
    if not records:
        raise ValueError(f"{p.name}: no benchmark runs in the file")
    runs: list[BenchRun] = []
    for index, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise ValueError(f"{p.name}#{index}: a benchmark result is a JSON object")
        tool = _tool_of(p, record)
        if tool == "guidellm":
            runs += _guidellm_runs(p, record)
        else:
            runs.append(_serve_run(p, index, record, tool))
    if len(runs) > MAX_RUNS_PER_FILE:
        raise ValueError(f"{p.name}: more than {MAX_RUNS_PER_FILE} runs in one file")
    return runs
