"""Issue 29's GPUs: AMD MI355X and MI325X, NVIDIA B300, GB300 (per GPU) and RTX PRO 6000 Blackwell Server.

Every number cites where it comes from; datasheet values are checked as published (dense, no sparsity), the
all-reduce latencies against the kernel database they were read from, and the kernel source reads the devices the
database has and says which it does not.
"""

from __future__ import annotations

import numpy as np
import pytest

from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.timing import make_source
from specsim.timing.kernels import DEVICE_FOLDERS, database_root

NEW = ("mi355x", "mi325x", "b300", "gb300", "rtx-pro-6000")
NUMBERS = (
    "peak_flop_per_s",
    "peak_fp8_flop_per_s",
    "peak_bytes_per_s",
    "memory_bytes",
    "interconnect_bytes_per_s",
    "interconnect_latency_s",
)


@pytest.mark.parametrize("name", NEW)
def test_every_number_names_its_source(name):
    hw = load_hardware(name)
    for key in NUMBERS:
        source = hw.sources.get(key, "")
        assert any(
            mark in source for mark in ("https://", "aiconfigurator-core", "ISSCC", "derived", "assumed", ".com")
        ), (name, key)
    assert "article" in hw.notes and hw.compute_eff == 0.6
    for key, preset in (("bandwidth_eff", 0.8), ("overhead_s", 0.5e-3)):
        # The article's preset, or a fit that names the measurements it was fitted to (mi355x: AMD's vLLM ROCm sweeps).
        assert getattr(hw, key) == preset or "fitted" in hw.sources.get(key, ""), (name, key)


# Published dense peaks (no sparsity), bandwidth and memory: vendor pages and the kernel database's system files
# (aiconfigurator-core 0.12.0 systems/*.yaml), as each profile's sources say.
@pytest.mark.parametrize(
    "name, bf16_tflops, fp8_tflops, tbps, gb, link_gbps",
    [
        ("mi355x", 2516.6, 5033.2, 8.0, 288 * 2**30 / 1e9, 537.6),  # 288 GiB
        ("mi325x", 1307.4, 2614.9, 6.0, 256 * 2**30 / 1e9, 448.0),  # 256 GiB
        ("b300", 2250.0, 4500.0, 7.75, 288.4, 900.0),
        ("gb300", 2500.0, 5000.0, 8.0, 298.0, 900.0),
        ("rtx-pro-6000", 467.8, 935.6, 1.792, 102.6, 64.0),
    ],
)
def test_published_figures(name, bf16_tflops, fp8_tflops, tbps, gb, link_gbps):
    hw = load_hardware(name)
    assert (hw.peak_flop_per_s / 1e12, hw.peak_fp8_flop_per_s / 1e12) == pytest.approx((bf16_tflops, fp8_tflops))
    assert (hw.peak_bytes_per_s / 1e12, hw.memory_bytes / 1e9, hw.interconnect_bytes_per_s / 1e9) == pytest.approx(
        (tbps, gb, link_gbps)
    )
    # Dense FP8 is twice dense BF16 on every one of them.
    assert hw.peak_fp8_flop_per_s == pytest.approx(2 * hw.peak_flop_per_s, rel=1e-3)


def test_the_mi355x_fp8_peak_is_its_cu_count_times_its_rate_per_clock():
    # ISSCC 2026 (CDNA 4): 8,192 FP8 FLOP per clock per CU, 256 CUs, 2.4 GHz.
    assert load_hardware("mi355x").peak_fp8_flop_per_s == pytest.approx(256 * 8192 * 2.4e9, rel=1e-4)


def test_the_nvl72_domain_and_the_pcie_card():
    assert load_hardware("gb300").max_devices == 72 and load_hardware("b300").max_devices == 8
    assert load_hardware("rtx-pro-6000").interconnect_bytes_per_s < 0.1 * load_hardware("b300").interconnect_bytes_per_s


@pytest.mark.parametrize(
    "name, folder", [("b300", "b300_sxm"), ("gb300", "gb300"), ("rtx-pro-6000", "rtx_pro_6000_server")]
)
def test_the_all_reduce_latency_is_the_databases_smallest_message(name, folder):
    import pandas as pd

    files = sorted((database_root() / folder / "comm" / "vllm").glob("*/custom_allreduce_perf.parquet"))
    frame = pd.read_parquet(files[-1])
    rows = frame[
        (frame["message_size"] == 128)
        & (frame["allreduce_dtype"] == "bfloat16")
        & frame["backend"].astype(str).str.contains("graph")
    ]
    at_two = rows[rows["num_gpus"] == 2]["latency"].min() * 1e-3
    assert DEVICE_FOLDERS[name] == folder
    assert load_hardware(name).interconnect_latency_s == pytest.approx(at_two, rel=0.1)


@pytest.mark.parametrize("name", ["b300", "gb300", "rtx-pro-6000"])
def test_the_kernel_source_reads_the_new_nvidia_devices(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    src = make_source("kernels", load_hardware(name))
    assert src.name == "kernels"
    t = src.step_time(get_model("llama-3.1-8b"), np.array([1.0, 16.0]), np.array([1.0, 4.0]), 1128)
    assert t.fallback is None and np.all(np.diff(t.total_s) > 0)


@pytest.mark.parametrize("name", ["mi355x", "mi325x"])
def test_amd_devices_fall_back_to_their_roofline_and_say_so(name):
    src = make_source("hybrid", load_hardware(name))
    assert src.name == "roofline" and "no device" in src.notes[0] and "using the roofline" in src.notes[0]


def test_a_bandwidth_bound_decode_step_tracks_the_memory_bandwidth():
    # Llama-3.1-8B at batch 1: the weights stream at bandwidth_eff of the peak; MI355X's 8 TB/s beats MI325X's 6.
    m = get_model("llama-3.1-8b")
    from specsim.timing.roofline import step_time

    fast, slow = (step_time(load_hardware(n), m, 1, 1, 1128) for n in ("mi355x", "mi325x"))
    achieved = load_hardware("mi355x").bytes_per_s / load_hardware("mi325x").bytes_per_s  # 8 x 0.678 over 6 x 0.8
    assert float(slow.memory_s / fast.memory_s) == pytest.approx(achieved, rel=1e-9)
    assert achieved == pytest.approx(8.0 * load_hardware("mi355x").bandwidth_eff / (6.0 * 0.8), rel=1e-9)
