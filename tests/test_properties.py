"""Property-based tests (Hypothesis): every input format's reader, and the physical invariants of the model.

Readers: a config.json, a hardware profile, a benchmark file, a trace, a /metrics page and a measured-step CSV, each
built from a valid file with fields replaced by hostile values (and as raw text), either parse to a valid object or
raise the project's input error, a ValueError or KeyError whose message is one line (what the CLI prints, exit 2),
never another exception.  Invariants: a larger pass never costs less (step time non-decreasing in batch and in
tokens per sequence, on every step-time source), speculative speedup never exceeds the tokens a round emits, and a
round's named parts add up to its time.

Every test runs a fixed, derandomised set of examples (``derandomize=True``: the same examples on every run and
machine) of bounded count, so the suite stays deterministic and its time bounded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "examples" / "bench"

#: A fixed example set, no deadline (values are checked, never speed), tmp_path reused across examples.
FIXED = settings(
    derandomize=True, deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FEW = settings(
    derandomize=True, deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Values a hostile file puts where a number, a name or a flag belongs.
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**63, 10**400, 0.5, 1e308, -1e-300, "", "7", "1e3", "nan", "bf16", "\x00", "é" * 3]),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-3, max_value=3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "bits", "quant_method"]), st.integers(-2, 2), max_size=2),
)


def _input_error(err: BaseException) -> bool:
    """The project's one-line input error: ValueError or KeyError with a message of one line."""
    if not isinstance(err, (ValueError, KeyError)):
        return False
    message = err.args[0] if err.args else ""
    return isinstance(message, str) and bool(message.strip()) and "\n" not in message.strip()


def _parses_or_refuses(read, *args) -> object:
    try:
        return read(*args)
    except Exception as err:  # noqa: BLE001 - the property is about which exceptions escape
        assert _input_error(err), f"{type(err).__name__}: {err}"
        return None


def _mutate(record: dict, data) -> dict:
    """``record`` with one to three of its keys (or one new key) given hostile values, or removed."""
    out = dict(record)
    keys = sorted(out)
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        key = data.draw(st.sampled_from(keys + ["an_extra_key"]), label="key")
        if data.draw(st.booleans(), label="remove") and key in out:
            del out[key]
        else:
            out[key] = data.draw(HOSTILE, label=f"value of {key}")
    return out


def _dump(value: object) -> str:
    return json.dumps(value, allow_nan=True, default=str)


# -- readers -------------------------------------------------------------------------------------------
LLAMA = json.loads((REPO / "specsim" / "describe" / "catalog" / "llama-3.2-1b.json").read_text())


@FIXED
@given(data=st.data())
def test_config_json_reader_parses_or_refuses_in_one_line(data, tmp_path):
    from specsim.describe.models import ModelShape, get_model

    path = tmp_path / "m" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(_dump(_mutate(LLAMA, data)))
    model = _parses_or_refuses(get_model, str(path))
    assert model is None or (isinstance(model, ModelShape) and model.params > 0 and model.n_layers >= 1)


@FEW
@given(text=st.text(max_size=200))
def test_config_json_reader_refuses_any_text_in_one_line(text, tmp_path):
    from specsim.describe.models import get_model

    (tmp_path / "raw.json").write_text(text, encoding="utf-8")
    _parses_or_refuses(get_model, str(tmp_path / "raw.json"))


PROFILE = {
    "name": "mine",
    "peak_flop_per_s": 9.89e14,
    "peak_bytes_per_s": 3.35e12,
    "memory_bytes": 8.0e10,
    "compute_eff": 0.6,
    "bandwidth_eff": 0.8,
    "overhead_s": 5e-4,
    "max_devices": 8,
}


@FIXED
@given(data=st.data())
def test_hardware_profile_reader_parses_or_refuses_in_one_line(data, tmp_path):
    import yaml

    from specsim.describe.hardware import HardwareProfile, load_hardware

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(_mutate(PROFILE, data), allow_unicode=True))
    profile = _parses_or_refuses(load_hardware, str(path))
    assert profile is None or (isinstance(profile, HardwareProfile) and profile.flop_per_s > 0)


@FEW
@given(text=st.text(max_size=200))
def test_hardware_profile_reader_refuses_any_text_in_one_line(text, tmp_path):
    from specsim.describe.hardware import load_hardware

    (tmp_path / "raw.yaml").write_text(text, encoding="utf-8")
    _parses_or_refuses(load_hardware, str(tmp_path / "raw.yaml"))


VLLM_RECORD = json.loads((BENCH / "vllm-plain.jsonl").read_text().splitlines()[0])
SGLANG_RECORD = json.loads((BENCH / "sglang-plain.jsonl").read_text().splitlines()[0])
GUIDELLM = json.loads((BENCH / "guidellm-plain.json").read_text())


@FIXED
@given(data=st.data(), tool=st.sampled_from(["vllm", "sglang", "guidellm"]))
def test_benchmark_file_readers_parse_or_refuse_in_one_line(data, tool, tmp_path):
    from specsim.calibration.bench_files import read_bench_file

    if tool == "guidellm":
        report = json.loads(json.dumps(GUIDELLM))
        bench = report["benchmarks"][0]
        part = data.draw(st.sampled_from(["config", "metrics", "top"]), label="part")
        if part == "config":
            bench["config"]["strategy"] = _mutate(bench["config"]["strategy"], data)
        elif part == "metrics":
            name = data.draw(st.sampled_from(sorted(bench["metrics"])), label="metric")
            metric = bench["metrics"][name]
            inner = metric.get("successful", {}) if isinstance(metric, dict) else {}
            # A metric's "successful" part is a mapping of statistics, or a count (request_totals): mutate what it is.
            # (Found when ruff's formatting changed this function's code and so hypothesis's derandomized examples.)
            changed = _mutate(inner, data) if isinstance(inner, dict) else data.draw(HOSTILE, label="successful value")
            bench["metrics"][name] = (
                data.draw(HOSTILE, label="metric value") if data.draw(st.booleans()) else {"successful": changed}
            )
        else:
            report = _mutate(report, data)
        path = tmp_path / "g.json"
        path.write_text(_dump(report))
    else:
        path = tmp_path / f"{tool}.jsonl"
        path.write_text(_dump(_mutate(VLLM_RECORD if tool == "vllm" else SGLANG_RECORD, data)) + "\n")
    runs = _parses_or_refuses(read_bench_file, path)
    # A run is judged by a positive value (its TPOT, end-to-end latency or throughput); a decode batch where one follows.
    assert runs is None or (
        len(runs) >= 1
        and all(r.value > 0 and r.completed >= 1 and (r.decode_batch is None or r.decode_batch > 0) for r in runs)
    )


TRACE_ROW = {"arrival_s": 0.5, "prompt_tokens": 100, "output_tokens": 20}


@FIXED
@given(data=st.data(), form=st.sampled_from(["jsonl", "csv"]))
def test_trace_reader_parses_or_refuses_in_one_line(data, form, tmp_path):
    from specsim.serving.workloads import Requests, read_trace

    rows = [TRACE_ROW, _mutate(TRACE_ROW, data), {**TRACE_ROW, "arrival_s": 2.0}]
    if form == "jsonl":
        path = tmp_path / "t.jsonl"
        path.write_text("".join(_dump(r) + "\n" for r in rows))
    else:
        header = data.draw(
            st.sampled_from(
                [list(TRACE_ROW), list(TRACE_ROW) + ["arrival_s"], ["prompt_tokens", "arrival_s", "output_tokens"]]
            )
        )
        path = tmp_path / "t.csv"
        path.write_text(
            ",".join(header) + "\n" + "".join(",".join(str(r.get(k, "")) for k in header) + "\n" for r in rows)
        )
    requests = _parses_or_refuses(read_trace, path)
    assert requests is None or (
        isinstance(requests, Requests) and len(requests) == 3 and np.all(np.diff(requests.arrival_s) >= 0)
    )


@FEW
@given(text=st.text(max_size=300), suffix=st.sampled_from([".csv", ".jsonl"]))
def test_trace_reader_refuses_any_text_in_one_line(text, suffix, tmp_path):
    from specsim.serving.workloads import read_trace

    (tmp_path / f"raw{suffix}").write_text(text, encoding="utf-8")
    _parses_or_refuses(read_trace, tmp_path / f"raw{suffix}")


SAMPLE = st.tuples(
    st.sampled_from(
        [
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_draft_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total",
            "vllm:spec_decode_num_drafts_created",
            "sglang:spec_accept_length",
            "other_metric",
        ]
    ),
    st.sampled_from(
        [
            '{model_name="m"}',
            '{model_name="m",position="0"}',
            '{model_name="m",position="1"}',
            '{model_name="n"}',
            '{position="x"}',
            "",
            "{bad",
            '{model_name="m",model_name="m"}',
        ]
    ),
    st.sampled_from(["0", "1", "3", "100", "300", "250", "-5", "NaN", "+Inf", "1e308", "abc", "12 1700000000"]),
)


@FIXED
@given(samples=st.lists(SAMPLE, min_size=1, max_size=8))
def test_metrics_page_reader_reads_or_refuses_in_one_line(samples):
    from specsim.speculation.metrics import acceptance_from_prometheus

    page = "".join(f"{name}{labels} {value}\n" for name, labels, value in samples)
    metrics = _parses_or_refuses(acceptance_from_prometheus, page, "page", None)
    if metrics is not None:
        assert metrics.drafts > 0 and 1 <= metrics.mean_draft_length <= 64
        assert 0 <= metrics.accepted_tokens <= metrics.draft_tokens
        assert json.dumps(metrics.to_dict(), allow_nan=False)  # JSON-ready: no NaN or inf


@FEW
@given(text=st.text(max_size=300))
def test_metrics_page_reader_refuses_any_text_in_one_line(text):
    from specsim.speculation.metrics import acceptance_from_prometheus

    _parses_or_refuses(acceptance_from_prometheus, text, "page", None)


MEASURED = {
    "model": "llama-3.2-1b",
    "batch": 4,
    "tokens_per_seq": 1,
    "context": 512,
    "median_s": 0.002,
    "p10_s": 0.0019,
    "p90_s": 0.0021,
    "min_s": 0.0018,
    "dtype": "bf16",
}


@FIXED
@given(data=st.data())
def test_measured_csv_reader_parses_or_refuses_in_one_line(data, tmp_path):
    import pandas as pd

    from specsim.timing.measurements import load_measurements

    rows = [dict(MEASURED, batch=b) for b in (1, 2, 4, 8, 16, 32, 64, 128)]
    at = data.draw(st.integers(0, len(rows) - 1), label="row")
    rows[at] = _mutate(rows[at], data)
    pd.DataFrame(rows).to_csv(tmp_path / "m.csv", index=False)
    df = _parses_or_refuses(load_measurements, tmp_path / "m.csv")
    if df is not None:
        assert (
            len(df) == 8 and np.all(np.isfinite(df.measured_s)) and np.all(df.measured_s > 0) and np.all(df.batch >= 1)
        )


# -- physical invariants ---------------------------------------------------------------------------------
SOURCES = ("roofline", "hybrid", "kernels")
MODELS = ("llama-3.2-1b", "llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b", "gemma-3-27b", "tiny-5m")


@pytest.fixture(scope="module")
def deployments():
    from specsim.speculation.deployment import Deployment

    return {
        (source, engine): Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing=source, engine=engine)
        for source in SOURCES
        for engine in ("vllm", "sglang", "none")
    }


@FIXED
@given(
    source=st.sampled_from(SOURCES),
    model=st.sampled_from(MODELS),
    batch=st.integers(1, 512),
    more_batch=st.integers(0, 512),
    tokens=st.integers(1, 17),
    more_tokens=st.integers(0, 16),
    context=st.integers(0, 32_768),
)
def test_a_larger_pass_never_costs_less(source, model, batch, more_batch, tokens, more_tokens, context):
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing import make_source

    src = make_source(source, load_hardware("h100-sxm"))
    m = get_model(model)
    small = float(src.step_time(m, batch, tokens, context).total_s)
    more_b = float(src.step_time(m, batch + more_batch, tokens, context).total_s)
    more_q = float(src.step_time(m, batch, tokens + more_tokens, context).total_s)
    assert small > 0 and more_b >= small * (1 - 1e-12) and more_q >= small * (1 - 1e-12), (small, more_b, more_q)


@FIXED
@given(
    key=st.sampled_from([(s, e) for s in SOURCES for e in ("vllm", "sglang", "none")]),
    alpha=st.floats(0.0, 1.0),
    gamma=st.integers(0, 16),
    batch=st.integers(1, 256),
    context=st.integers(0, 16_384),
)
def test_speedup_never_exceeds_the_tokens_a_round_emits(deployments, key, alpha, gamma, batch, context):
    from specsim.speculation.acceptance import expected_tokens
    from specsim.speculation.search import speedup

    s = float(speedup(deployments[key], alpha, gamma, batch, context))
    tokens = float(expected_tokens(alpha, gamma))
    assert 0 < s <= tokens * (1 + 1e-12), (s, tokens)
    if gamma == 0:
        assert s == pytest.approx(1.0, rel=1e-12)


@FIXED
@given(
    key=st.sampled_from([(s, e) for s in SOURCES for e in ("vllm", "sglang", "none")]),
    steps=st.integers(0, 16),
    batch=st.integers(1, 256),
    context=st.integers(0, 16_384),
)
def test_the_parts_of_a_round_add_up_to_its_time(deployments, key, steps, batch, context):
    r = deployments[key].round_time(batch, context, steps)
    parts = r.parts()
    assert all(np.all(v >= -1e-15) for v in parts.values()), parts
    assert float(sum(parts.values())) == pytest.approx(float(r.total_s), rel=1e-12, abs=1e-15)
