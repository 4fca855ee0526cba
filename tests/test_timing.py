"""Step-time sources: kernel database composition, cache, fallback, measured CSVs, the hybrid default."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, speedup
from specsim.timing import make_source
from specsim.timing._grid import suffix_min as _suffix_min
from specsim.timing.kernels import KernelSource, KernelTable, build_table, cache_dir
from specsim.timing.roofline import step_time

H100 = load_hardware("h100-sxm")
B = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], float)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def table_8b():
    return build_table(get_model("llama-3.1-8b"), "h100_sxm", "vllm")


def test_kernel_decode_step_is_near_the_bandwidth_floor(table_8b):
    # An 8B bf16 decode step reads 15.0 GB of streamed weights; at the H100's 3.35 TB/s that takes 4.49 ms. Measured
    # GEMMs plus attention at batch 1 must be above that floor and within the 60-90% bandwidth that real kernels reach.
    model = get_model("llama-3.1-8b")
    floor = model.streamed_weight_bytes / H100.peak_bytes_per_s
    t = float(table_8b.gemm(np.array(1.0)) + table_8b.decode_attention(np.array(1.0), np.array(400.0)))
    assert floor / 0.9 < t < floor / 0.6


def test_more_tokens_never_cost_less(table_8b):
    m = np.arange(1, 1025, dtype=float)
    assert np.all(np.diff(table_8b.gemm(m)) >= 0)
    src = KernelSource(H100)
    model = get_model("llama-3.1-8b")
    t1 = src.step_time(model, B, 1, 1128).total_s
    for q in (2, 4, 9):
        assert np.all(src.step_time(model, B, q, 1128).total_s >= t1)


def test_verification_costs_more_than_decode_only_past_moderate_batch():
    # Measured on H100 (vLLM kernels): t_V/t_T at q = 4, L = 400 stays below 1.2 to batch 64 and exceeds 1.3 at 128.
    src = KernelSource(H100)
    model = get_model("llama-3.1-8b")
    ratio = src.step_time(model, B, 4, 400).total_s / src.step_time(model, B, 1, 400).total_s
    assert np.all(ratio[:7] < 1.2) and ratio[7] > 1.3 and ratio[8] > ratio[7]
    # The whole-pass roofline holds the ratio at 1 until the ridge, which is what the kernel data correct.
    roof = step_time(H100, model, B, 4, 400).total_s / step_time(H100, model, B, 1, 400).total_s
    assert roof[4] == pytest.approx(1.0, abs=1e-3)


def test_outside_the_data_the_roofline_answers_and_says_so():
    src = KernelSource(H100)
    model = get_model("llama-3.1-8b")
    t = src.step_time(model, np.array([1.0, 4096.0]), 1, 400)  # batch 4096 is past every measured batch
    assert t.fallback is not None and t.fallback.tolist() == [False, True]
    assert t.total_s[1] == pytest.approx(float(step_time(H100, model, 4096, 1, 400).total_s))
    assert any("outside the vllm kernel data" in n for n in src.notes)


def test_a_device_the_database_lacks_falls_back_with_a_note():
    src = make_source("kernels", load_hardware("mi300x"))
    assert src.name == "roofline" and any("no device 'mi300x'" in n for n in src.notes)


def test_an_uncovered_head_shape_falls_back_for_that_model_only():
    # The A100 vLLM data have no head_dim-64 decode attention (Llama-3.2-1B's shape).
    src = KernelSource(load_hardware("a100-sxm-80gb"))
    t = src.step_time(get_model("llama-3.2-1b"), B, 1, 400)
    assert t.fallback is not None and t.fallback.all()
    assert any("head_dim 64" in n for n in src.notes)
    assert src.step_time(get_model("llama-3.1-8b"), 8, 1, 400).fallback is None


def test_cache_is_written_and_a_corrupt_file_is_rebuilt_not_trusted():
    model = get_model("llama-3.2-1b")
    first = KernelSource(H100).step_time(model, B, 3, 1000).total_s
    files = list(cache_dir().glob("kernels-*.json"))
    assert len(files) == 1
    files[0].write_bytes(b"not a kernel table")
    src = KernelSource(H100)
    np.testing.assert_array_equal(src.step_time(model, B, 3, 1000).total_s, first)
    assert any("unreadable and is rebuilt" in n for n in src.notes)
    assert (
        KernelTable.load(
            files[0],
            {k: v for k, v in src.table(model).meta.items() if k != "files" and k != "attention_cells_scaled_in_batch"},
        )
        is not None
    )


def test_what_the_database_cannot_compose_is_cached_and_not_looked_for_again(monkeypatch):
    """gemma-3-27b's head shape has no decode-attention measurements on the H200: found once, the next process (a
    serve-sim worker, the next command) reads that from the cache, neither composing it again nor saying it builds it;
    a missing package, which may be installed by the next run, is never cached."""
    import specsim.timing.kernels as kernels

    h200, model = load_hardware("h200"), get_model("gemma-3-27b")
    said: list[str] = []
    first = KernelSource(h200, progress=said.append)
    assert first.table(model) is None and len(said) == 1
    (why,) = [n for n in first.notes if "using the roofline for gemma-3-27b" in n]
    assert "no decode-attention measurements" in why

    def refuse(*args, **kwargs):
        raise AssertionError("composed again")

    monkeypatch.setattr(kernels, "build_table", refuse)
    again = KernelSource(h200, progress=said.append)
    assert again.table(model) is None and len(said) == 1 and why in again.notes
    # A cache file for another database version or shape is not taken as that answer.
    (path,) = [p for p in cache_dir().glob("kernels-*.json") if p.stat().st_size < 2000]
    assert kernels._cached_missing(path, {"other": 1}) is None

    def missing_package(*args, **kwargs):
        raise kernels.KernelEnvironmentError("the kernel source needs aiconfigurator-core")

    monkeypatch.setattr(kernels, "build_table", missing_package)
    small = get_model("llama-3.2-1b")
    assert KernelSource(h200).table(small) is None
    assert not [p for p in cache_dir().glob("kernels-*.json") if p != path]


@pytest.mark.parametrize("gpu", ["h100-pcie", "l4"])
def test_a_device_whose_database_folder_is_empty_is_never_priced_by_it(gpu):
    """aiconfigurator-core 0.12.0 ships empty h100_pcie and l4 folders: the step-time line said "verification from ...
    kernels on l4" over what was the roofline everywhere; now the kernels source is the roofline, and a note says why,
    and the hybrid takes its ratio from a kin device with data."""
    from specsim.timing.kernels import KernelDataError

    hw = load_hardware(gpu)
    with pytest.raises(KernelDataError, match="has no vllm gemm measurements on"):
        KernelSource(hw)
    src = make_source("kernels", hw)
    assert src.name == "roofline" and any("using the roofline instead" in n for n in src.notes)
    # The hybrid borrows the ratio of the nearest device of its compute capability that has data (the H100 SXM for
    # the PCIe card, the L40S for the L4), said in its note.
    hybrid = make_source("hybrid", hw)
    kin = {"h100-pcie": "h100_sxm", "l4": "l40s"}[gpu]
    assert hybrid.name == "hybrid" and hybrid.kernels.device == kin
    assert any("has no vllm gemm measurements" in n and "the same compute capability" in n for n in hybrid.notes)
    assert KernelSource(load_hardware("l40s")).device == "l40s"  # a folder with data keeps its source


def test_suffix_min_is_the_cheapest_larger_size():
    np.testing.assert_array_equal(_suffix_min(np.array([3.0, 5.0, 4.0, np.nan, 6.0])), [3.0, 4.0, 4.0, np.nan, 6.0])


def _untiled_ratio(kern: KernelSource, model, b, q, L):
    """The kernels' pass of q tokens a sequence over their decode step, each without its collectives and with its GEMMs
    at their line's lower convex hull (no tiles), at least 1: the ratio the hybrid source scales the roofline by."""
    table = kern.table(model)

    def own(tokens):
        t = kern.step_time(model, b, tokens, L)
        return t.total_s - t.comm_s - (table.gemm(b * tokens) - table.gemm_hull(b * tokens))

    return np.maximum(own(q) / own(1), 1.0)


def test_hybrid_decode_is_the_roofline_and_verification_follows_the_kernels():
    hybrid = make_source("hybrid", H100)
    model = get_model("llama-3.1-8b")
    roof = step_time(H100, model, B, 1, 1128).total_s
    np.testing.assert_allclose(hybrid.step_time(model, B, 1, 1128).total_s, roof, rtol=1e-12)
    ratio = _untiled_ratio(KernelSource(H100), model, B, 5, 1128)
    np.testing.assert_allclose(hybrid.step_time(model, B, 5, 1128).total_s / roof, ratio, rtol=1e-12)


def test_the_untiled_gemm_line_is_the_convex_hull_under_the_measured_one(table_8b):
    """The H100's 8B GEMMs rise 5.5% from m = 160 to 161 (a new tile); their line without tiles is convex, under the
    measured line, on it at the hull's vertices, and rises over one token by what a token adds between vertices."""
    m = np.arange(1.0, 1025.0)
    g, hull = table_8b.gemm(m), table_8b.gemm_hull(m)
    assert g[160] / g[159] - 1 > 0.05 and hull[160] / hull[159] - 1 < 0.002
    assert np.all(hull <= g) and np.all(np.diff(hull) >= 0)
    assert np.all(np.diff(hull, 2) >= -1e-12 * hull[1:-1])  # convex
    on = np.isclose(table_8b.gemm_hull_s, table_8b.gemm_s, rtol=1e-12)
    assert on[0] and on[-1] and 2 < on.sum() < on.size


@pytest.mark.parametrize(
    "hardware, model, tp, contexts",
    [
        ("h100-sxm", "llama-3.1-8b", 1, (128.0, 1128.0, 8000.0)),
        ("h100-sxm", "llama-3.1-70b", 4, (128.0, 1128.0, 8000.0)),
        ("a100-sxm-80gb", "qwen3-8b", 2, (128.0, 1128.0, 8000.0)),
        # A MoE target at short contexts still falls, by at most 0.14% a batch at 128 cached tokens (1.2% from b = 64 to
        # 256 at q = 2), 0.07% at 512: the experts a decode step reads grow with its batch while a verification
        # pass's have all been read, and the roofline's decode step grows less with them than the measured fused-MoE
        # kernels' (2.7 against 3.5 us a layer and sequence at b = 31): not tile quantisation, and not corrected here.
        ("h200", "qwen3-30b-a3b", 1, (1128.0, 8000.0)),
    ],
)
def test_the_hybrid_verification_pass_never_falls_with_the_batch_or_its_tokens(hardware, model, tp, contexts):
    """A verification pass of b + 1 sequences, or of one more token each, does more work: neither the roofline's pass
    nor the kernels' ever costs less.  The hybrid's did where the measured decode step jumps at a new GEMM tile (H100,
    8B: 14.52 to 14.91 ms at b = 160 to 161) and its pass of q tokens does not: t_hybrid(256 -> 257, q = 2, L = 128)
    fell 7.2%, Llama-3.1-70B at TP 4 2.1%, Qwen3-30B-A3B 0.35% (b = 128 -> 129, L = 1128)."""
    hybrid = make_source("hybrid", load_hardware(hardware))
    shape = get_model(model, tp=tp)
    b = np.arange(1.0, 513.0)[:, None, None]
    t = hybrid.step_time(shape, b, np.arange(1.0, 9.0)[None, :, None], np.array(contexts)).total_s
    assert t.shape == (512, 8, len(contexts))
    assert hybrid.step_time(shape, b, 8, np.array(contexts)).fallback is None  # all measured: the kernels' ratio
    by_batch, by_tokens = np.diff(t, axis=0) / t[:-1], np.diff(t, axis=1) / t[:, :-1]
    worst = np.unravel_index(np.argmin(by_batch), by_batch.shape)
    assert by_batch.min() >= -1e-12, f"falls {by_batch.min():.2%} from b = {worst[0] + 1} at q = {worst[1] + 1}"
    assert by_tokens.min() >= -1e-12


def test_a_hybrid_over_kernels_kept_in_memory_answers_as_over_the_kernels():
    """A calibration wraps the hybrid's kernels in a MemoSource (specsim.calibration.model); the hybrid reads each
    pass's GEMMs untiled from the kernels' table through it, as from the kernels themselves."""
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.memo import MemoSource
    from specsim.timing.roofline import RooflineSource

    model = get_model("llama-3.1-8b")
    kern = KernelSource(H100)
    plain = HybridSource(RooflineSource(H100), kern).step_time(model, B, 4, 1128).total_s
    kept = HybridSource(RooflineSource(H100), MemoSource(kern)).step_time(model, B, 4, 1128).total_s
    np.testing.assert_array_equal(kept, plain)
    assert MemoSource(RooflineSource(H100)).table(model) is None


def test_a_fits_hybrid_sources_untile_each_kernels_pass_once_whatever_the_efficiency_scale(monkeypatch):
    """A fit builds one hybrid source per efficiency scale it tries, each over the same kept kernels
    (specsim.calibration.model._scaled); each took every decode step's GEMMs off the kernel table again to untile them,
    though neither the kernels' pass nor its tiles change with the scale.  The untiled pass is kept with the kept
    kernels: a second scale reads no table, and every step is the one a source that keeps nothing gives, to the bit."""
    from specsim.timing.hybrid import HybridSource
    from specsim.timing.memo import MemoSource
    from specsim.timing.roofline import RooflineSource

    model = get_model("llama-3.1-8b")
    kern = KernelSource(H100)
    kept = MemoSource(kern)
    reads = []
    real = KernelTable.gemm_hull
    monkeypatch.setattr(KernelTable, "gemm_hull", lambda self, m: reads.append(m) or real(self, m))
    for scale in (1.0, 0.8, 0.6):
        hw = dataclasses.replace(H100, compute_eff=H100.compute_eff * scale, bandwidth_eff=H100.bandwidth_eff * scale)
        before = len(reads)
        steps = [HybridSource(RooflineSource(hw), kept).step_time(model, B, q, 1128).total_s for q in (1, 4)]
        if scale != 1.0:
            assert len(reads) == before  # the decode step and the verification untiled at the first scale, kept
        for q, got in zip((1, 4), steps):
            np.testing.assert_array_equal(
                got, HybridSource(RooflineSource(hw), kern).step_time(model, B, q, 1128).total_s
            )


def test_a_rounds_passes_are_each_priced_once_and_as_a_source_that_keeps_none_prices_them(monkeypatch):
    """The hybrid priced a round's passes again and again: its kernel source timed the roofline's pass beside the
    hybrid's own (for its fallback), and the verification timed the decode step the round had just timed, so a round of
    an 8B target with a 1B draft asked the roofline for the target's decode step 4 times, its verification twice and
    the draft's step twice (the watch's and the answers' steady states ask thousands of rounds).  Each once now, and
    the round's time is that of a source that keeps nothing, to the bit, at the context asked after another."""
    import collections

    import specsim.timing.kernels as kernels_module
    import specsim.timing.roofline as roofline_module

    real, asked = roofline_module.step_time, []

    def counted(hardware, model, batch=1, tokens_per_seq=1, context=0, prompt=False):
        asked.append((model.name, float(np.max(tokens_per_seq)), float(np.max(context))))
        return real(hardware, model, batch, tokens_per_seq, context, prompt)

    monkeypatch.setattr(roofline_module, "step_time", counted)
    monkeypatch.setattr(kernels_module, "step_time", counted)
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    assert dep.source.name == "hybrid"
    for context in (1128.0, 1128.0, 4000.0):
        asked.clear()
        kept = dep.outcome(0.8, 3, B, context).time_s
        fresh = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b").outcome(0.8, 3, B, context).time_s
        np.testing.assert_array_equal(kept, fresh)
    asked.clear()
    dep.outcome(0.8, 3, B, 1128.0)
    passes = collections.Counter(asked)
    copies = [dataclasses.replace(dep.draft) for _ in range(40)]  # held: each its own id
    for copy in copies:
        dep.source.step_time(copy, B, 1, 1128.0)
    assert len(dep.source._decode_steps) <= 16  # what a source asked of many models keeps stays bounded
    assert passes == {
        ("llama-3.1-8b", 1.0, 1128.0): 1,
        ("llama-3.1-8b", 4.0, 1128.0): 1,
        ("llama-3.2-1b", 1.0, 1128.0): 1,
    }


def test_where_a_verification_pass_leaves_the_kernel_data_the_hybrid_ratio_is_the_rooflines_own():
    """A pass of 1024 x 33 tokens is past the H100's largest measured GEMM (m = 32768) while its decode step is not: the
    ratio was a roofline pass over a kernel sum (one with the per-pass overhead, one without); it is the roofline's."""
    hybrid = make_source("hybrid", H100)
    model = get_model("llama-3.1-8b")
    b = np.array([512.0, 1024.0])
    t = hybrid.step_time(model, b, 33, 400)
    assert t.fallback.tolist() == [False, True]
    roof = step_time(H100, model, b, 33, 400).total_s / step_time(H100, model, b, 1, 400).total_s
    decode = step_time(H100, model, b, 1, 400).total_s
    assert t.total_s[1] / decode[1] == pytest.approx(roof[1], rel=1e-12)
    assert t.total_s[0] / decode[0] != pytest.approx(roof[0], rel=1e-3)  # inside the data: the kernels' ratio


def test_a_gpu_the_database_lacks_borrows_the_verification_ratio_of_its_architectures_device():
    """The A30 and the A100 are both GA100 (compute capability 8.0): the default source on the A30 keeps the A30's own
    roofline decode step and takes what verification adds from the A100's kernels; absolute kernel times are never
    borrowed (the kernels source stays the roofline), nor is the A100's NVLink all-reduce."""
    a30, a100 = load_hardware("a30"), load_hardware("a100-sxm-80gb")
    model = get_model("qwen3-8b")
    hybrid = make_source("hybrid", a30)
    assert hybrid.name == "hybrid" and hybrid.kernels.device == "a100_sxm"
    assert any(
        "read from the vllm kernels of the a100-sxm-80gb (the same compute capability, 8.0)" in n for n in hybrid.notes
    )
    assert "kin of a30" in hybrid.brief() and "standing in for a30" in hybrid.describe()
    # A calibration's profile of the A30 (calibrate-engine names it a30-vllm-fitted, device a30) looks up the A30: the
    # note named the fitted name as the device the database lacks ("no device 'a30-vllm-fitted'"), as if it had been
    # looked up under that name; it names the device looked up, and the profile beside it.
    fitted = make_source("hybrid", dataclasses.replace(a30, name="a30-vllm-fitted", device="a30"))
    assert fitted.kernels.device == "a100_sxm"
    assert any(n.startswith("the kernel database has no device 'a30' (profile a30-vllm-fitted):") for n in fitted.notes)
    roof = step_time(a30, model, B, 1, 400).total_s
    np.testing.assert_allclose(hybrid.step_time(model, B, 1, 400).total_s, roof, rtol=1e-12)
    kern = KernelSource(a100)
    ratio = _untiled_ratio(kern, model, B, 8, 400)
    np.testing.assert_allclose(hybrid.step_time(model, B, 8, 400).total_s / roof, ratio, rtol=1e-12)
    # Where the roofline held verification at a decode step's cost (below the ridge), the kernels do not.
    assert ratio[4] > 1.1 and step_time(a30, model, 16, 8, 400).total_s / roof[4] == pytest.approx(1.0, abs=0.02)
    assert make_source("kernels", a30).name == "roofline"
    # At TP 2 the ratio is of the A100's kernels without their collectives, which are the A30 profile's (PCIe), added.
    tp2 = get_model("qwen3-8b", tp=2)
    kin2 = hybrid.kernels
    verify, decode = kin2.step_time(tp2, 16, 8, 400), kin2.step_time(tp2, 16, 1, 400)
    assert float(verify.comm_s) == pytest.approx(float(step_time(a30, tp2, 16, 8, 400).comm_s), rel=1e-12)
    roof1, roof8 = step_time(a30, tp2, 16, 1, 400), step_time(a30, tp2, 16, 8, 400)
    own = _untiled_ratio(kin2, tp2, 16, 8, 400)
    expected = (roof1.total_s - roof1.comm_s) * own + roof8.comm_s
    assert float(hybrid.step_time(tp2, 16, 8, 400).total_s) == pytest.approx(float(expected), rel=1e-12)
    assert float(expected) != pytest.approx(float(roof1.total_s * verify.total_s / decode.total_s), rel=1e-3)


def test_a_kin_device_shares_the_compute_capability_and_is_the_nearest_in_balance_first():
    from specsim.timing.kernel_db import kin_devices

    # Three database devices are compute capability 9.0: an H20-like card (148 TFLOPS, 4.0 TB/s: ridge 37) is
    # nearest the H200 (989 / 4.8 = 206) in the log of the ridge; one of 989 TFLOPS over 2.0 TB/s is nearest the PCIe
    # H100 (756 / 2.0 = 378), whose folder is empty: the source then takes the next, the H100 SXM.
    def card(name, flop, nbytes, cc="9.0"):
        return dataclasses.replace(
            H100, name=name, peak_flop_per_s=flop, peak_bytes_per_s=nbytes, compute_capability=cc
        )

    assert kin_devices(card("h20ish", 148e12, 4.0e12)) == ["h200", "h100-sxm", "h100-pcie"]
    narrow = card("narrow", 989e12, 2.0e12)
    assert kin_devices(narrow) == ["h100-pcie", "h100-sxm", "h200"]
    assert make_source("hybrid", narrow).kernels.device == "h100_sxm"
    assert kin_devices(card("unnamed", 989e12, 2.0e12, cc=None)) == []
    assert kin_devices(card("sm87", 989e12, 2.0e12, cc="8.7")) == []
    assert "h100-sxm" not in kin_devices(load_hardware("h100-sxm-vllm"))  # never its own device


def test_article_numbers_are_unchanged_by_the_new_sources():
    dep = Deployment.build("h100-sxm", "article-8b", "article-1b", timing="roofline", engine="none")
    assert np.round(speedup(dep, 0.8, 4, [1, 64, 128, 256]), 2).tolist() == [1.9, 1.81, 1.49, 1.25]


def test_engine_time_adds_to_decode_and_verification_not_to_draft_steps():
    none = Deployment.build(timing="roofline", engine="none")
    bare = none.outcome(0.8, 3, B, 1128)
    vllm = Deployment.build(timing="roofline", engine="vllm").outcome(0.8, 3, B, 1128)
    from specsim.engines import get_engine

    e = get_engine("vllm")
    np.testing.assert_allclose(vllm.target.total_s - bare.target.total_s, e.iteration_s)
    np.testing.assert_allclose(vllm.verify.total_s - bare.verify.total_s, e.iteration_s)
    # Under an engine the draft's pass keeps its layers' share (16 of 32) of the roofline's per-pass overhead.
    share = none.draft.n_layers / none.target.n_layers
    assert share == 0.5
    np.testing.assert_allclose(
        bare.draft.total_s - vllm.draft.total_s, (1 - share) * none.hardware.overhead_s, rtol=1e-12
    )
    np.testing.assert_allclose(bare.host_s, 0.0)
    # A draft-model round on this vLLM version is serial or overlapped as the preset says; either way it waits
    # for the host work H, or for its passes if those take longer.
    passes = 3 * vllm.draft.total_s + vllm.verify.total_s
    H = e.round_host(B, 3)
    expect = np.maximum(passes, H) if e.overlaps("draft_model") else passes + H
    np.testing.assert_allclose(vllm.round_s, expect, rtol=1e-14)
    over = Deployment.build(timing="roofline", engine="vllm", engine_overhead_ms=2.0).outcome(0.8, 3, B, 1128)
    np.testing.assert_allclose(over.target.total_s - bare.target.total_s, 2e-3)


def test_default_speedup_of_a_one_layer_draft_falls_with_batch():
    # Issue 9's check: 8B target, 1-layer draft of its width, gamma 3, L 400 on the H100 with the default source.
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "examples/draft-1layer-llama-3.1-8b/config.json")
    s = speedup(dep, 0.8, 3, [2, 16, 64, 128, 256], 400)
    assert np.all(np.diff(s) < 0.005)  # never rises by more than the kernel data's noise
    assert s[0] - s[2] > 0.05 and s[2] - s[4] > 0.4
    roof = Deployment.build(
        "h100-sxm", "llama-3.1-8b", "examples/draft-1layer-llama-3.1-8b/config.json", timing="roofline"
    )
    r = speedup(roof, 0.8, 3, [2, 16, 64], 400)
    assert r[2] >= r[0]  # the roofline alone predicts no decay to batch 64


def test_default_optimal_gamma_is_smaller_than_the_rooflines_at_moderate_batch():
    # At L = 1128 and alpha 0.8 both pick gamma 4 at batch 1; at batch 32 the measured verification cost
    # (1.10x a decode step at q = 5 where the roofline says 1.00x) makes gamma 3 the better choice.
    hybrid = optimal_gamma(Deployment.build(engine="none"), 0.8, [1, 32], 1128).gamma
    roof = optimal_gamma(Deployment.build(timing="roofline", engine="none"), 0.8, [1, 32], 1128).gamma
    assert hybrid[0] == roof[0] and hybrid[1] < roof[1]


# -- measured ------------------------------------------------------------------
def _measured_csv(path, model, profile, dtype="bf16"):
    b, q, L = np.meshgrid([1, 4, 16], [1, 3, 5], [0, 512, 2048], indexing="ij")
    t = step_time(profile, model, b.ravel(), q.ravel(), L.ravel()).total_s
    df = pd.DataFrame(
        {
            "model": model.name,
            "vocab_size": model.vocab_size,
            "hidden_size": model.hidden_size,
            "intermediate_size": model.intermediate_size,
            "n_layers": model.n_layers,
            "n_heads": model.n_heads,
            "n_kv_heads": model.n_kv_heads,
            "head_dim": model.head_dim,
            "tie_embeddings": model.tie_embeddings,
            "qkv_bias": model.qkv_bias,
            "batch": b.ravel(),
            "tokens_per_seq": q.ravel(),
            "context": L.ravel(),
            "dtype": dtype,
            "device_name": "synthetic",
            "median_s": t,
        }
    )
    df.to_csv(path, index=False)
    return df


def test_measured_source_interpolates_exactly_where_the_data_are_linear(tmp_path):
    model = get_model("llama-3.2-1b")
    _measured_csv(tmp_path / "m.csv", model, H100)
    src = make_source(f"measured:{tmp_path / 'm.csv'}", H100)
    at_grid = src.step_time(model, 4, 3, 512).total_s
    assert float(at_grid) == pytest.approx(float(step_time(H100, model, 4, 3, 512).total_s), rel=1e-12)
    between = src.step_time(model, 10, 2, 1000)
    lo, hi = (float(step_time(H100, model, b, q, L).total_s) for b, q, L in ((4, 1, 512), (16, 3, 2048)))
    assert lo < float(between.total_s) < hi and between.fallback is None
    outside = src.step_time(model, np.array([4.0, 64.0]), 1, 512)
    assert outside.fallback.tolist() == [False, True] and src.notes


def test_measured_source_matches_by_shape_and_refuses_a_missing_model(tmp_path):
    model = get_model("llama-3.2-1b")
    _measured_csv(tmp_path / "m.csv", dataclasses.replace(model, name="renamed"), H100)
    src = make_source(f"measured:{tmp_path / 'm.csv'}", H100)
    assert src.step_time(model, 4, 1, 0).fallback is None  # same shape, other name: matched
    with pytest.raises(ValueError, match="no measurements of llama-3.1-8b"):
        src.step_time(get_model("llama-3.1-8b"), 4, 1, 0)
    with pytest.raises(ValueError, match="no measurements"):
        src.step_time(get_model("llama-3.2-1b", weight_dtype="fp8"), 4, 1, 0)  # another dtype is another model


@pytest.mark.parametrize(
    "spec, message",
    [
        ("measured:", "needs a file"),
        ("guess", "unknown step-time source"),
        ("measured:/nonexistent.csv", "does not exist"),
    ],
)
def test_bad_timing_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        make_source(spec, H100)


def test_composed_1b_decode_step_matches_the_design_note():
    # shared/design/article-model.md: "summed vLLM kernels of a Llama-3.2-1B-shaped decode step on an H100 take about
    # 1.3 ms at batch 1" (from the same database, an earlier snapshot).
    t = KernelSource(H100).step_time(get_model("llama-3.2-1b"), 1, 1, np.array([511.0, 1023.0])).total_s
    assert np.all((t > 1.2e-3) & (t < 1.45e-3))


def test_compose_kernels_writes_only_measured_points(tmp_path, capsys):
    from specsim.cli.main import main

    assert (
        main(
            [
                "compose-kernels",
                "--hardware",
                "h100-sxm,a100-sxm-80gb",
                "--models",
                "llama-3.2-1b,llama-3.1-8b",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    h100 = pd.read_csv(tmp_path / "h100-sxm-vllm-kernel-steps.csv")
    a100 = pd.read_csv(tmp_path / "a100-sxm-80gb-vllm-kernel-steps.csv")
    assert set(h100.model) == {"llama-3.2-1b", "llama-3.1-8b"} and set(a100.model) == {
        "llama-3.1-8b"
    }  # A100: no head_dim 64
    assert len(h100) < 2 * 9 * 5 * 5  # large batches at long context are outside the data, left out, not invented
    assert report[0]["steps"] == len(h100) and "aiconfigurator-core" in report[0]["source"]
    from specsim.timing.measurements import load_measurements

    assert len(load_measurements(tmp_path / "h100-sxm-vllm-kernel-steps.csv")) == len(h100)  # calibrate reads it


def test_compose_kernels_refuses_a_device_without_data(tmp_path, capsys):
    from specsim.cli.main import main

    assert main(["compose-kernels", "--hardware", "mi300x", "--out", str(tmp_path)]) == 2
    assert "no device 'mi300x'" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_measured_dips_within_noise_are_raised_to_the_smaller_pass(tmp_path):
    # A pass of 2 tokens per sequence measured 3% below the 1-token pass (noise) costs what the 1-token pass does.
    from specsim.timing.measured import MeasuredSource

    rows = ["model,batch,tokens_per_seq,context,median_s"]
    for b in (1, 4, 16):
        for q, t in ((1, 0.0100), (2, 0.0097), (4, 0.0120)):
            for L in (0, 512):
                rows.append(f"llama-3.2-1b,{b},{q},{L},{t * (1 + 0.01 * b)}")
    path = tmp_path / "noisy.csv"
    path.write_text("\n".join(rows) + "\n")
    src = MeasuredSource(path, load_hardware("h100-sxm"))
    model = get_model("llama-3.2-1b")
    one, two, four = (float(src.step_time(model, 4, q, 512).total_s) for q in (1, 2, 4))
    assert two == one < four


# -- the composition, checked against the database rows (the mutation run's gaps) ----------------------------------
def _raw(kind: str, engine: str, name: str, device: str = "h100_sxm") -> pd.DataFrame:
    from specsim.timing.kernels import _newest, database_root

    return pd.read_parquet(_newest(database_root() / device / kind / engine) / name)


def test_moe_layer_is_the_balanced_kernel_at_the_token_count_that_reads_as_many_experts():
    from specsim.timing.kernels import _moe_uniform

    bal_m = np.array([1.0, 2, 4, 8, 16, 32, 64, 128])
    bal_s = 1e-5 * (1.0 + bal_m / 4.0)  # linear in m, so the log-m interpolation is checkable by hand

    def bal(x):
        return np.interp(np.log(x), np.log(bal_m), bal_s, left=np.nan, right=np.nan)

    for model, experts in (
        (get_model("qwen3-30b-a3b"), 128.0),
        (get_model("qwen3-30b-a3b", routing_effective_experts=64), 64.0),
    ):
        m = np.array([1.0, 3.0, 16.0, 100.0, 200.0])
        touched = experts * (1.0 - (1.0 - 8.0 / experts) ** m)
        expect = bal(np.maximum(touched / 8.0, 1.0)) + np.maximum(bal(m) - bal(np.full_like(m, experts / 8.0)), 0.0)
        got = _moe_uniform(model, m, bal_m, bal_s)
        np.testing.assert_allclose(got[:4], expect[:4], rtol=1e-12)
        assert np.isnan(got[4])  # past the measured tokens
        assert got[0] == pytest.approx(bal_s[0]) and np.all(np.diff(got[:4]) > 0)
    # Uniform routing reads fewer experts than balanced routing in between: cheaper than the balanced row at 16 tokens.
    assert _moe_uniform(get_model("qwen3-30b-a3b"), np.array([16.0]), bal_m, bal_s)[0] < bal(np.array([16.0]))[0]


def test_moe_line_is_the_balanced_rows_of_the_models_shape_and_a_missing_shape_is_refused():
    from specsim.timing.kernels import KernelDataError, _moe_line, database_root

    model = get_model("qwen3-30b-a3b", tp=2)
    frame = _raw("moe", "vllm", "moe_perf.parquet")
    rows = frame[
        (frame.hidden_size == 2048)
        & (frame.inter_size == 768)
        & (frame.topk == 8)
        & (frame.num_experts == 128)
        & (frame.moe_tp_size == 2)
        & (frame.moe_ep_size == 1)
        & (frame.distribution == "balanced")
        & (frame.moe_dtype == "bfloat16")
    ]
    line = rows.groupby("num_tokens").latency.mean()
    root = database_root()
    m, s, _ = _moe_line(model, root, root / "h100_sxm", "vllm", "here")
    np.testing.assert_array_equal(m, line.index.to_numpy(float))
    np.testing.assert_allclose(s, _suffix_min(line.to_numpy(float) * 1e-3), rtol=1e-12)
    with pytest.raises(
        KernelDataError,
        match=r"^here: no fused-MoE measurements for 128 experts, top-8, hidden 2048, expert size "
        r"700, TP 2, bf16 experts$",
    ):
        _moe_line(dataclasses.replace(model, moe_intermediate_size=700), root, root / "h100_sxm", "vllm", "here")


def test_built_moe_table_adds_every_moe_layer_once_and_stops_where_the_moe_rows_stop():
    from specsim.timing.kernel_db import sustained_matmul_flop_per_s
    from specsim.timing.kernels import _GEMM_DTYPES, _gemm_line, _moe_line, _moe_uniform, database_root

    model = get_model("qwen3-30b-a3b", tp=2)
    table = build_table(model, "h100_sxm", "vllm")
    gemm = _raw("gemm", "vllm", "gemm_perf.parquet")
    dense = gemm[gemm.gemm_dtype == _GEMM_DTYPES["bf16"]]
    dense_m, dense_s = _gemm_line(model, dense, "x", sustained_matmul_flop_per_s("h100_sxm"))
    root = database_root()
    moe_m, moe_s, _ = _moe_line(model, root, root / "h100_sxm", "vllm", "x")
    moe = _moe_uniform(model, dense_m, moe_m, moe_s)
    n = table.gemm_m.size
    assert n <= dense_m.size and np.all(np.isfinite(moe[:n])) and (n == dense_m.size or np.isnan(moe[n]))
    np.testing.assert_array_equal(table.gemm_m, dense_m[:n])
    np.testing.assert_allclose(table.gemm_s, dense_s[:n] + model.n_moe_layers * moe[:n], rtol=1e-12)
    assert model.n_moe_layers == 48 and table.meta["shape"]["tp"] == 2


def test_allreduce_line_is_the_fastest_graph_captured_bf16_allreduce_at_the_tp_size():
    from specsim.timing.kernels import _comm_line, database_root

    frame = _raw("comm", "vllm", "custom_allreduce_perf.parquet")
    rows = frame[(frame.num_gpus == 4) & (frame.allreduce_dtype == "bfloat16")]
    label = "backend" if "backend" in rows.columns else "implementation"
    graph = rows[rows[label].astype(str).str.contains("graph")]
    line = (graph if len(graph) else rows).groupby("message_size").latency.min()
    root = database_root()
    elems, secs = _comm_line(get_model("llama-3.1-8b", tp=4), root / "h100_sxm", "vllm")
    np.testing.assert_array_equal(elems, line.index.to_numpy(float))
    np.testing.assert_allclose(secs, line.to_numpy(float) * 1e-3, rtol=1e-12)
    assert _comm_line(get_model("llama-3.1-8b"), root / "h100_sxm", "vllm")[0].size == 0  # one GPU: no collective
    table = build_table(get_model("llama-3.1-8b", tp=4), "h100_sxm", "vllm")
    assert table.meta["allreduce"] == "measured" and table.comm_s.size == secs.size


def _table(**changes) -> KernelTable:
    base = dict(
        gemm_m=np.array([1.0, 100.0]),
        gemm_s=np.array([1e-3, 2e-3]),
        attn_b=np.array([1.0, 8.0]),
        attn_L=np.array([16.0, 1024.0]),
        attn_s=np.array([[1e-5, 2e-5], [3e-5, 4e-5]]),
        ctx_flop_per_s=1e14,
        prefill_isl=np.array([10.0, 100.0, 1000.0]),
        prefill_attn_s=np.array([1e-3, 2e-3, 3e-3]),
        meta={"shape": {"n_layers": 4, "n_sliding_layers": 2, "sliding_window": 100}},
    )
    return KernelTable(**(base | changes))


def test_prefill_attention_sums_the_layers_and_a_local_layer_pays_its_window_times_the_chunks():
    t = _table()
    one = lambda n: np.interp(n, [10.0, 100.0, 1000.0], [1e-3, 2e-3, 3e-3])  # noqa: E731
    got = t.prefill_attention(np.array([50.0, 500.0]))
    np.testing.assert_allclose(got, [4 * one(50.0), 2 * one(500.0) + 2 * one(100.0) * 5.0], rtol=1e-12)
    assert np.isnan(t.prefill_attention(np.array([5000.0]))).all()
    assert np.isnan(
        _table(prefill_isl=np.array([10.0]), prefill_attn_s=np.array([1e-3])).prefill_attention(np.array([10.0]))
    ).all()
    dense = _table(meta={"shape": {"n_layers": 4}})
    np.testing.assert_allclose(dense.prefill_attention(np.array([500.0])), 4 * one(500.0), rtol=1e-12)


def test_allreduce_is_log_log_interpolated_and_nan_outside_or_without_data():
    t = _table(comm_elems=np.array([100.0, 10000.0]), comm_s=np.array([1e-5, 1e-3]))
    np.testing.assert_allclose(t.allreduce(np.array([1000.0, 100.0, 10000.0])), [1e-4, 1e-5, 1e-3], rtol=1e-12)
    assert np.isnan(t.allreduce(np.array([50.0, 0.0, 20000.0]))).all()
    assert np.isnan(_table().allreduce(np.array([1000.0]))).all()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"gemm_m": np.array([[1.0, 2.0]]), "gemm_s": np.array([[1.0, 2.0]])}, "gemm_m must be one-dimensional"),
        ({"prefill_attn_s": np.zeros((1, 3))}, "prefill_attn_s must be one-dimensional"),
        (
            {"gemm_m": np.array([1.0]), "gemm_s": np.array([1e-3])},
            "GEMM grid must be increasing with at least two points",
        ),
        ({"gemm_m": np.array([2.0, 1.0])}, "GEMM grid must be increasing"),
        ({"gemm_s": np.array([1e-3, 2e-3, 3e-3])}, "GEMM grid must be increasing"),
        ({"attn_s": np.ones((3, 2))}, "attention grid does not match its axes"),
        ({"attn_b": np.array([1.0]), "attn_s": np.ones((1, 2))}, "attention grid does not match its axes"),
        ({"attn_L": np.array([16.0]), "attn_s": np.ones((2, 1))}, "attention grid does not match its axes"),
        ({"attn_b": np.array([8.0, 1.0])}, "attention axes must be increasing"),
        ({"attn_L": np.array([16.0, 16.0])}, "attention axes must be increasing"),
        ({"gemm_s": np.array([1e-3, np.inf])}, "GEMM times must be finite and positive"),
        ({"gemm_s": np.array([0.0, 1e-3])}, "GEMM times must be finite and positive"),
        ({"attn_s": np.full((2, 2), np.nan)}, "attention times must be positive where measured"),
        ({"attn_s": np.array([[np.nan, 0.0], [1e-5, 1e-5]])}, "attention times must be positive where measured"),
        ({"attn_scaled": np.zeros((3, 2))}, "scaled-cell mask does not match"),
        ({"ctx_flop_per_s": 0.0}, "context-attention FLOP rate must be positive"),
        ({"ctx_flop_per_s": np.nan}, "context-attention FLOP rate must be positive"),
        ({"comm_elems": np.array([1.0, 2.0]), "comm_s": np.array([1e-5])}, "all-reduce grid must be increasing"),
        ({"comm_elems": np.array([2.0, 1.0]), "comm_s": np.array([1e-5, 1e-5])}, "all-reduce grid must be increasing"),
        ({"comm_elems": np.array([1.0, 2.0]), "comm_s": np.array([1e-5, 0.0])}, "all-reduce grid must be increasing"),
    ],
)
def test_a_malformed_table_is_refused_with_what_is_wrong(changes, message):
    with pytest.raises(ValueError, match=f"^kernel table: {message}"):
        _table(**changes)


def test_a_table_survives_its_cache_file_and_is_refused_for_another_model(tmp_path):
    t = _table(
        attn_scaled=np.array([[0.0, 1.0], [0.0, 0.0]]),
        comm_elems=np.array([1.0, 2.0]),
        comm_s=np.array([1e-5, 2e-5]),
        meta={"shape": {"n_layers": 4}, "model": "a"},
    )
    t.save(tmp_path / "t.json")
    back = KernelTable.load(tmp_path / "t.json", {"model": "a"})
    for name in (
        "gemm_m",
        "gemm_s",
        "attn_b",
        "attn_L",
        "attn_s",
        "prefill_isl",
        "prefill_attn_s",
        "attn_scaled",
        "comm_elems",
        "comm_s",
    ):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))
    assert back.ctx_flop_per_s == t.ctx_flop_per_s and back.meta == t.meta
    with pytest.raises(ValueError, match="built for another model, device or database"):
        KernelTable.load(tmp_path / "t.json", {"model": "b"})
    assert _table().uses_scaled_attention(np.array([4.0]), np.array([100.0])).tolist() == [False]
    assert back.uses_scaled_attention(np.array([1.0, 8.0]), np.array([1024.0, 16.0])).tolist() == [True, False]


def test_decode_attention_past_the_last_measured_batch_scales_in_batch_only_from_a_saturated_one():
    from specsim.timing.kernels import SCALE_FROM_BATCH, _fill_by_batch

    b = np.array([16.0, 64.0, 128.0, 256.0])
    grid = np.array([[1.0, 2.0], [4.0, 8.0], [np.nan, 16.0], [np.nan, np.nan]])
    filled, mask = _fill_by_batch(b, grid)
    assert SCALE_FROM_BATCH == 64
    np.testing.assert_array_equal(filled, [[1.0, 2.0], [4.0, 8.0], [8.0, 16.0], [16.0, 32.0]])
    np.testing.assert_array_equal(mask, [[False, False], [False, False], [True, False], [True, True]])
    small = _fill_by_batch(np.array([16.0, 32.0, 64.0]), np.array([[1.0], [2.0], [np.nan]]))
    assert np.isnan(small[0][2, 0]) and not small[1].any()  # the last measured batch, 32, is below 64: not scaled
    assert grid[2, 0] != grid[2, 0]  # the input is left as it was


def test_prefill_is_the_gemms_at_the_prompt_plus_context_attention_and_the_roofline_past_the_data():
    src = KernelSource(H100)
    model = get_model("llama-3.1-8b")
    table = src.table(model)
    isl = np.array([128.0, 4e6])
    got = src.prefill_time(model, isl)
    assert got[0] == pytest.approx(float(table.gemm(128.0) + table.prefill_attention(np.array(128.0))), rel=1e-12)
    assert got[1] == pytest.approx(float(step_time(H100, model, 1, 4e6, 0).total_s), rel=1e-12)
    none = KernelSource(load_hardware("h100-sxm"))
    mla = get_model("deepseek-v3", tp=8)  # not composed from the database: the roofline answers
    assert none.prefill_time(mla, np.array([64.0]))[0] == pytest.approx(float(step_time(H100, mla, 1, 64.0, 0).total_s))


def test_composed_steps_are_the_sources_times_at_measured_points_only():
    from specsim.timing.kernels import compose_steps

    src = KernelSource(H100)
    model = get_model("llama-3.2-1b")
    rows = compose_steps(src, model, batches=(1, 4, 4096), tokens_per_seq=(1, 3), contexts=(511, 1023))
    assert sorted(set(rows.batch)) == [1, 4] and len(rows) == 2 * 2 * 2  # batch 4096 is outside the data
    for r in rows.itertuples():
        assert r.step_time_s == pytest.approx(
            float(src.step_time(model, r.batch, r.tokens_per_seq, r.context).total_s), rel=1e-12
        )
    assert (
        (rows.params == model.params).all() and (rows.n_layers == 16).all() and (rows.device_name == "h100_sxm").all()
    )
    assert rows.source.iloc[0].startswith("aiconfigurator-core ") and rows.source.iloc[0].endswith(" vllm kernels")
    assert compose_steps(
        KernelSource(H100), get_model("deepseek-v3", tp=8), batches=(1,), tokens_per_seq=(1,), contexts=(511,)
    ).empty  # no table, no rows
    assert list(rows.columns) == [
        "model",
        "params",
        "n_layers",
        "hidden_size",
        "intermediate_size",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "vocab_size",
        "tie_embeddings",
        "qkv_bias",
        "batch",
        "tokens_per_seq",
        "context",
        "dtype",
        "device",
        "device_name",
        "step_time_s",
        "source",
    ]
    assert all(rows[c].dtype.kind == "i" for c in ("batch", "tokens_per_seq", "context"))
    # Rows run over the grid batch first, then tokens per sequence, then context (the order calibrate's CSVs have).
    assert list(zip(rows.batch, rows.tokens_per_seq, rows.context)) == [
        (b, q, L) for b in (1, 4) for q in (1, 3) for L in (511, 1023)
    ]
    assert (
        (rows.hidden_size == 2048).all()
        and (rows.vocab_size == model.vocab_size).all()
        and (rows.dtype == "bf16").all()
    )
    assert (rows.device == "h100-sxm").all() and (rows.n_heads == 32).all() and (rows.head_dim == 64).all()
    # Attention scaled in batch past the measured cells is not a measurement: those points are left out.
    big = get_model("llama-3.1-8b")
    grid = dict(
        batches=(64, 128), tokens_per_seq=(1, 3), contexts=(511, 4095)
    )  # 128 at 4095: scaled; the rest measured
    kept = compose_steps(src, big, **grid)
    table = src.table(big)
    for b in grid["batches"]:
        for q in grid["tokens_per_seq"]:
            for L in grid["contexts"]:
                scaled = bool(table.uses_scaled_attention(np.array(float(b)), np.array(float(L + q))))
                fallback = src.step_time(big, b, q, L).fallback is not None
                present = ((kept.batch == b) & (kept.tokens_per_seq == q) & (kept.context == L)).any()
                assert present == (not scaled and not fallback), (b, q, L)
    assert len(kept) == 6 and not ((kept.batch == 128) & (kept.context == 4095)).any()


def _grid_csv(path, times: dict, model="llama-3.2-1b", device="synthetic gpu"):
    rows = ["model,batch,tokens_per_seq,context,median_s,device_name"]
    rows += [f"{model},{b},{q},{L},{t},{device}" for (b, q, L), t in times.items()]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_monotone_raises_dips_within_the_tolerance_along_both_axes_and_refuses_larger_ones_by_the_point():
    from specsim.timing.measured import MONOTONE_TOLERANCE, _monotone

    axes = (np.array([1.0, 4.0]), np.array([1.0, 2.0, 4.0]), np.array([512.0]))
    grid = np.array(
        [
            [[10.0], [9.5], [12.0]],  # q = 2 dips 5% below q = 1: raised to 10
            [[9.2], [13.0], [np.nan]],
        ]
    )  # batch 4 at q = 1 dips 8% below batch 1: raised; NaN stays NaN
    out = _monotone(grid, axes, "f.csv", "m")
    np.testing.assert_array_equal(out[:, :, 0], [[10.0, 10.0, 12.0], [10.0, 13.0, np.nan]])
    assert grid[0, 1, 0] == 9.5 and MONOTONE_TOLERANCE == 0.10
    edge = np.array([[[10.0], [9.0 + 1e-9], [12.0]]])  # just inside the 10% tolerance
    assert _monotone(edge, (axes[0][:1],) + axes[1:], "f.csv", "m")[0, 1, 0] == 10.0
    bad = np.array([[[10.0], [8.9], [12.0]]])
    message = (
        "f.csv: m at batch 1, 2 tokens per sequence, context 512 takes 8.9e+03 ms, more than 10% less than a pass with "
        "fewer tokens per sequence; a larger pass never costs less: these are not step times of one model"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _monotone(bad, (axes[0][:1],) + axes[1:], "f.csv", "m")
    with pytest.raises(
        ValueError, match=r"^g\.csv: n at batch 4, 1 tokens per sequence, context 512 takes .* fewer batch;"
    ):
        _monotone(np.array([[[10.0], [11.0]], [[8.0], [12.0]]]), (axes[0], axes[1][:2], axes[2]), "g.csv", "n")


def test_measured_source_takes_the_median_of_repeats_and_names_file_devices_and_hash(tmp_path):
    import hashlib

    from specsim.timing.measured import MeasuredSource

    times = {(b, q, L): 1e-3 * b * q + L * 1e-6 for b in (1, 4) for q in (1, 2) for L in (0, 512)}
    path = _grid_csv(tmp_path / "grid.csv", times)
    with path.open("a") as f:  # a repeat of one point, twice as slow, and another: the median of the three
        f.write("llama-3.2-1b,1,1,0,0.003,other gpu\nllama-3.2-1b,1,1,0,0.002,other gpu\n")
    src = MeasuredSource(path, H100)
    model = get_model("llama-3.2-1b")
    assert float(src.step_time(model, 1, 1, 0).total_s) == pytest.approx(0.002)
    assert float(src.step_time(model, 4, 2, 512).total_s) == pytest.approx(times[(4, 2, 512)])
    # Linear between grid points along each axis.
    assert float(src.step_time(model, 2.5, 2, 512).total_s) == pytest.approx(
        0.5 * (times[(1, 2, 512)] + times[(4, 2, 512)])
    )
    sha = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert src.describe() == (
        f"measured: grid.csv (sha256 {sha}) on other gpu, synthetic gpu, roofline (h100-sxm) outside it"
    )
    assert src.brief() == "measured grid.csv" and src.models() == ["llama-3.2-1b"]
    assert src.name == "measured" and src.gpu_time_only
    t = src.step_time(model, np.array([4.0, 8.0, 4.0]), np.array([1.0, 1.0, 3.0]), 0)
    assert t.fallback.tolist() == [False, True, True] and t.source == "measured"
    np.testing.assert_allclose(
        t.total_s[1:], step_time(H100, model, np.array([8.0, 4.0]), np.array([1.0, 3.0]), 0).total_s
    )
    assert src.notes == [
        "llama-3.2-1b: 2 of 3 points lie outside the measurements in grid.csv (b 1-4, q 1-2, L 0-512); "
        "the roofline answers there"
    ]
    src.step_time(model, np.array([8.0]), 1, 0)
    assert len(src.notes) == 2  # another count is another note; the same one is not repeated
    src.step_time(model, np.array([8.0]), 1, 0)
    assert len(src.notes) == 2


def test_measured_source_refuses_a_model_it_has_not_measured_with_what_it_has(tmp_path):
    from specsim.timing.measured import MeasuredSource

    src = MeasuredSource(
        _grid_csv(tmp_path / "g.csv", {(b, q, L): 1e-3 * b * q for b in (1, 4) for q in (1, 2) for L in (0, 9)}), H100
    )
    with pytest.raises(
        ValueError,
        match=r"^g\.csv has no measurements of llama-3\.1-8b \(32 layers, hidden 4096, bf16\); it has "
        r"llama-3\.2-1b: measure this model too, or use timing roofline\|kernels$",  # Deployment.build's keyword
    ):
        src.step_time(get_model("llama-3.1-8b"), 1, 1, 0)


def test_table_edges_the_mutation_run_probed():
    from specsim.timing.kernels import _moe_uniform

    # Two prefill points are enough to interpolate; one is not (NaN in the input's shape); below the first point is NaN.
    two = _table(
        prefill_isl=np.array([1.0, 100.0]), prefill_attn_s=np.array([1e-3, 2e-3]), meta={"shape": {"n_layers": 2}}
    )
    np.testing.assert_allclose(two.prefill_attention(np.array([50.5])), [2 * 1.5e-3], rtol=1e-12)
    one = _table(prefill_isl=np.array([10.0]), prefill_attn_s=np.array([1e-3]))
    assert one.prefill_attention(np.array([10.0, 20.0])).shape == (2,)
    assert np.isnan(_table().prefill_attention(np.array([5.0]))).all()
    # A local layer's one-token prefill is its one-token measurement (divided by max(local, 1) = 1).
    local = _table(prefill_isl=np.array([1.0, 10.0]), prefill_attn_s=np.array([1e-3, 2e-3]))
    np.testing.assert_allclose(local.prefill_attention(np.array([1.0])), [4e-3], rtol=1e-12)
    # The balanced line starting past one token: one token is outside it.
    model = get_model("qwen3-30b-a3b")
    assert np.isnan(_moe_uniform(model, np.array([1.0]), np.array([2.0, 4.0, 8.0]), np.array([1e-5, 2e-5, 3e-5]))).all()
    # A balanced line that stops before every expert is read (E/k = 16 tokens): the step past it is the last measured one.
    m = np.array([1.0, 2, 4, 8, 12])
    s = 1e-5 * (1 + m)
    got = _moe_uniform(model, np.array([10.0]), m, s)
    bal = lambda x: np.interp(np.log(x), np.log(m), s)  # noqa: E731
    touched = 128 * (1 - (1 - 1 / 16) ** 10)
    assert got[0] == pytest.approx(bal(touched / 8) + max(bal(10.0) - bal(12.0), 0.0), rel=1e-12)


def test_measured_source_edges_the_mutation_run_probed(tmp_path):
    from specsim.timing.measured import MeasuredSource

    # Three points per axis, none shared between axes: the note names each axis's own range.
    times = {(b, q, L): 1e-3 * b * q + L * 1e-6 for b in (2, 4, 8) for q in (1, 2, 3) for L in (0, 256, 512)}
    path = _grid_csv(tmp_path / "three.csv", times)
    src = MeasuredSource(path, H100)
    src.step_time(get_model("llama-3.2-1b"), np.array([1.0, 4.0]), 1, 0)
    assert src.notes == [
        "llama-3.2-1b: 1 of 2 points lie outside the measurements in three.csv (b 2-8, q 1-3, L 0-512); the "
        "roofline answers there"
    ]
    # No device column: nothing named.
    bare = tmp_path / "bare.csv"
    bare.write_text(
        "\n".join(
            ["model,batch,tokens_per_seq,context,median_s"]
            + [f"llama-3.2-1b,{b},{q},{L},{t}" for (b, q, L), t in times.items()]
        )
        + "\n"
    )
    assert (
        MeasuredSource(bare, H100).describe().startswith("measured: bare.csv (sha256 ")
        and " on " not in MeasuredSource(bare, H100).describe().split(")")[1]
    )
    # Two models, the larger first: kept in file order, each by its own name, and both named when a third is asked for.
    two = tmp_path / "two.csv"
    lines = ["model,batch,tokens_per_seq,context,median_s"]
    for name in ("qwen3-0.6b", "llama-3.2-1b"):
        lines += [f"{name},{b},{q},{L},{t}" for (b, q, L), t in times.items()]
    two.write_text("\n".join(lines) + "\n")
    both = MeasuredSource(two, H100)
    assert both.models() == ["qwen3-0.6b", "llama-3.2-1b"]
    with pytest.raises(ValueError, match=r"it has qwen3-0\.6b, llama-3\.2-1b: measure this model too"):
        both.step_time(get_model("llama-3.1-8b"), 2, 1, 0)
    # A dip of exactly the tolerance is noise (raised: 10 x 0.9 is 9 in binary too); a larger one is refused, naming the
    # file and the model.
    from specsim.timing.measured import _monotone

    exact = _monotone(np.array([[[10.0], [9.0]]]), (np.array([1.0]), np.array([1.0, 2.0]), np.array([0.0])), "f", "m")
    assert exact[0, 1, 0] == 10.0
    dip = dict(times)
    dip[(4, 3, 256)] = 0.5 * times[(4, 2, 256)]
    with pytest.raises(
        ValueError, match=r"^dip\.csv: llama-3\.2-1b at batch 4, 3 tokens per sequence, context 256 takes"
    ):
        MeasuredSource(_grid_csv(tmp_path / "dip.csv", dip), H100)


def test_allreduce_line_reads_the_newest_version_prefers_graph_capture_and_needs_two_sizes(tmp_path):
    from specsim.timing.kernels import KernelDataError, _comm_line, _newest

    dev = tmp_path / "dev"

    def write(version, rows, label="backend"):
        folder = dev / "comm" / "vllm" / version
        folder.mkdir(parents=True)
        pd.DataFrame(rows, columns=["num_gpus", "allreduce_dtype", label, "message_size", "latency"]).to_parquet(
            folder / "custom_allreduce_perf.parquet"
        )

    old = [(2, "bfloat16", "nccl", 1024, 9.0), (2, "bfloat16", "nccl", 4096, 9.0)]
    new = [
        (2, "bfloat16", "nccl", 1024, 0.010),
        (2, "bfloat16", "cuda_graph", 1024, 0.020),
        (2, "bfloat16", "cuda_graph", 1024, 0.015),
        (2, "bfloat16", "cuda_graph", 4096, 0.030),
        (2, "float16", "cuda_graph", 4096, 0.001),
        (4, "bfloat16", "cuda_graph", 8192, 0.001),
    ]
    write("0.9.2", old)
    write("0.10.0", new)  # newer by number, older by text
    model = get_model("llama-3.1-8b", tp=2)
    elems, secs = _comm_line(model, dev, "vllm")
    np.testing.assert_array_equal(elems, [1024.0, 4096.0])
    np.testing.assert_allclose(secs, [15e-6, 30e-6], rtol=1e-12)  # graph-captured rows only, the fastest of them
    assert _newest(dev / "comm" / "vllm").name == "0.10.0"
    assert _comm_line(get_model("llama-3.1-8b"), dev, "vllm")[0].size == 0
    # An older schema names the column "implementation"; without graph rows every row counts; one size is too few.
    dev2 = tmp_path / "dev2"
    dev, dev_saved = dev2, dev
    write(
        "1.0",
        [
            (2, "bfloat16", "nccl", 1024, 0.010),
            (2, "bfloat16", "custom", 1024, 0.008),
            (2, "bfloat16", "nccl", 2048, 0.012),
        ],
        label="implementation",
    )
    np.testing.assert_allclose(_comm_line(model, dev2, "vllm")[1], [8e-6, 12e-6], rtol=1e-12)
    # aiconfigurator-core 0.12.0's a100_sxm and l40s trtllm 1.0.0 tables name no kernel column at all: every row counts
    folder = tmp_path / "dev4" / "comm" / "vllm" / "1.0"
    folder.mkdir(parents=True)
    pd.DataFrame(
        [(2, "bfloat16", 1024, 0.010), (2, "bfloat16", 1024, 0.009), (2, "bfloat16", 2048, 0.012)],
        columns=["num_gpus", "allreduce_dtype", "message_size", "latency"],
    ).to_parquet(folder / "custom_allreduce_perf.parquet")
    np.testing.assert_allclose(_comm_line(model, tmp_path / "dev4", "vllm")[1], [9e-6, 12e-6], rtol=1e-12)
    dev = tmp_path / "dev3"
    write("1.0", [(2, "bfloat16", "cuda_graph", 1024, 0.010)])
    assert _comm_line(model, dev, "vllm")[0].size == 0
    with pytest.raises(KernelDataError, match=r"^no measurements in .*nothing$"):
        _newest(tmp_path / "nothing")
    assert _comm_line(model, tmp_path / "none", "vllm")[0].size == 0 and dev_saved.is_dir()


def test_build_table_names_what_it_cannot_compose_and_records_what_it_read():
    from specsim.timing.kernels import KernelDataError, database_root

    where = "kernel database: llama-3.1-8b on h100_sxm (vllm)"
    with pytest.raises(
        KernelDataError, match=rf"^{re.escape(where)}: no measurements for weight dtype int4 / KV dtype bf16$"
    ):
        build_table(get_model("llama-3.1-8b", weight_dtype="int4"), "h100_sxm", "vllm")
    # vLLM's MLA tables time whole attention blocks, not the kernel: no composition from them.
    with pytest.raises(
        KernelDataError,
        match=r"^kernel database: deepseek-v3 on h100_sxm \(vllm\): no multi-head latent attention kernels "
        r"measured for vllm$",
    ):
        build_table(get_model("deepseek-v3"), "h100_sxm", "vllm")
    # TensorRT-LLM's compose it 1.7-2x too long against its own public rows (table 4b): refused, with the reason.
    with pytest.raises(KernelDataError, match=r"not composed from trtllm's kernels: composed from its measured"):
        build_table(get_model("deepseek-v3", tp=8), "h200_sxm", "trtllm")
    # SGLang's are the kernel's: DeepSeek-V3 at TP 8 reads them at 16 heads per rank, and its experts from the fused-MoE
    # table; decode attention at batch 4 and context 1023 (BF16 cache) is the measured cells' (no faster than a larger
    # batch's, as every table's), times the 61 layers.
    mla = build_table(get_model("deepseek-v3", tp=8, kv_dtype="bf16"), "h200_sxm", "sglang")
    assert [f.split("/")[1] for f in mla.meta["files"]] == ["gemm", "mla", "moe"]
    gen = _raw("mla", "sglang", "generation_mla_perf.parquet", "h200_sxm")
    gen = gen[(gen.num_heads == 16) & (gen.kv_cache_dtype == "bfloat16")]
    cells = gen.pivot_table(index="batch_size", columns="step", values="latency", aggfunc="mean")[1023]
    assert float(mla.decode_attention(np.array(4.0), np.array(1023.0))) == pytest.approx(
        cells.loc[4:].min() * 1e-3 * 61, rel=1e-9
    )
    # A prompt runs MLA uncompressed: the best measured rate counts each row's FLOP as the model's own prompt pass does
    # (heads x (2 (nope + rope) + 2 v) per token pair, causal), one layer, times the row's batch.
    ctx = _raw("mla", "sglang", "context_mla_perf.parquet", "h200_sxm")
    ctx = ctx[(ctx.num_heads == 16) & (ctx.kv_cache_dtype == "bfloat16") & (ctx.step == 0)]
    pairs = ctx.isl.to_numpy(float) * (ctx.isl.to_numpy(float) - 1) / 2
    flop = 16 * (2 * (128 + 64) + 2 * 128) * pairs * ctx.batch_size.to_numpy(float)
    assert mla.ctx_flop_per_s == pytest.approx(float(np.max(flop / (ctx.latency.to_numpy(float) * 1e-3))), rel=1e-9)
    with pytest.raises(KernelDataError, match=r"^kernel database has no device folder 'tpu_v9'$"):
        build_table(get_model("llama-3.1-8b"), "tpu_v9", "vllm")
    table = build_table(get_model("llama-3.1-8b"), "h100_sxm", "vllm")
    assert table.meta["allreduce"] == "none" and table.meta["engine"] == "vllm" and table.meta["device"] == "h100_sxm"
    assert all(f.startswith("h100_sxm/") for f in table.meta["files"]) and len(table.meta["files"]) == 2
    assert table.meta["files"][0].startswith("h100_sxm/gemm/vllm/") and table.meta["files"][1].startswith(
        "h100_sxm/attention/vllm/"
    )
    assert table.meta["attention_cells_scaled_in_batch"] == int(table.attn_scaled.sum()) > 0
    assert table.meta["database"].startswith("aiconfigurator-core ")
    # Context attention: one sequence's prefill per measured length, and the best FLOP rate over all rows.
    ctx = _raw("attention", "vllm", "context_attention_perf.parquet")
    ctx = ctx[
        (ctx.num_heads == 32)
        & (ctx.num_key_value_heads == 8)
        & (ctx.head_dim == 128)
        & (ctx.kv_cache_dtype == "bfloat16")
    ]
    for col, value in (("window_size", 0), ("beam_width", 1), ("step", 0)):
        if col in ctx.columns:
            ctx = ctx[ctx[col] == value]
    one = ctx[ctx.batch_size == 1].groupby("isl").latency.mean()
    np.testing.assert_array_equal(table.prefill_isl, one.index.to_numpy(float))
    np.testing.assert_allclose(table.prefill_attn_s, one.to_numpy(float) * 1e-3, rtol=1e-12)
    rate = (
        2.0
        * 32
        * 128
        * ctx.isl.to_numpy(float) ** 2
        * ctx.batch_size.to_numpy(float)
        / (ctx.latency.to_numpy(float) * 1e-3)
    ).max()
    assert table.ctx_flop_per_s == pytest.approx(rate, rel=1e-12)
    # Decode attention: the mean latency per (batch, context) cell, one layer, in seconds, before any scaling.
    gen = _raw("attention", "vllm", "generation_attention_perf.parquet")
    gen = gen[
        (gen.num_heads == 32)
        & (gen.num_key_value_heads == 8)
        & (gen.head_dim == 128)
        & (gen.kv_cache_dtype == "bfloat16")
    ]
    for col, value in (("window_size", 0), ("beam_width", 1)):
        if col in gen.columns:
            gen = gen[gen[col] == value]
    cell = gen[(gen.batch_size == 8) & (gen.step == 1024)].latency
    if len(cell):
        j, i = list(table.attn_L).index(1024.0), list(table.attn_b).index(8.0)
        assert table.attn_s[i, j] <= cell.mean() * 1e-3 * (1 + 1e-12)  # the cheapest of it and the longer contexts
    tp2 = build_table(get_model("llama-3.2-1b", tp=2), "h100_sxm", "vllm")
    assert tp2.meta["allreduce"] == "measured" and tp2.meta["shape"]["tp"] == 2
    assert database_root().name == "data" and database_root().parent.name == "systems"


def test_grid_interpolation_is_multilinear_matches_single_value_axes_and_never_lets_a_nan_corner_through():
    from specsim.timing._grid import interp_grid

    axes = (np.array([1.0, 2.0, 4.0]), np.array([10.0]), np.array([0.0, 100.0]))
    grid = np.array([[[1.0, 2.0]], [[3.0, np.nan]], [[5.0, 6.0]]])
    # Broadcast points of different shapes; the middle axis has one value and must be hit exactly.
    b = np.array([[1.0], [3.0]])
    got = interp_grid(axes, grid, [b, 10.0, np.array([0.0, 50.0])])
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got[0], [1.0, 1.5], rtol=1e-15)  # b = 1: linear in the last axis
    assert got[1, 0] == pytest.approx(4.0) and np.isnan(got[1, 1])  # b = 3, L = 0: halfway 3 -> 5; L = 50 needs the NaN
    assert np.isnan(interp_grid(axes, grid, [1.0, 10.5, 0.0]))  # off the single value
    assert interp_grid(axes, grid, [4.0, 10.0, 100.0]) == pytest.approx(6.0)  # the last grid point, exactly
    assert interp_grid(axes, grid, [2.0, 10.0, 0.0]) == pytest.approx(3.0)  # on a grid point next to a NaN
    assert np.isnan(interp_grid(axes, grid, [0.5, 10.0, 0.0])) and np.isnan(interp_grid(axes, grid, [5.0, 10.0, 0.0]))
    # Integer inputs are read as numbers on the same axes.
    assert interp_grid(axes, grid, [np.array([3]), np.array([10]), np.array([0])])[0] == pytest.approx(4.0)


def test_gemm_line_interpolates_a_synthetic_grid_exactly_splits_wide_matrices_and_clips_narrow_ones():
    # A synthetic GEMM table whose latency is g(m) * (1 + n k / 1e6) ms: bilinear in (n, k), so the grid's linear
    # interpolation reproduces it exactly between measured shapes, and g is not monotone in m (1 costs more than 2).
    from specsim.timing.kernels import KernelDataError, _gemm_line

    g = {1.0: 3.0, 2.0: 1.0, 4.0: 2.0, 8.0: 4.0}
    ns, ks = (4096.0, 8192.0, 16384.0), (4096.0, 8192.0)
    rows = [(m, n, k, g[m] * (1 + n * k / 1e6)) for m in g for n in ns for k in ks]
    rows += [(2.0, 4096.0, 4096.0, 1.0 * (1 + 4096 * 4096 / 1e6) + 0.5)]  # a repeat: its mean with the row above
    frame = pd.DataFrame(rows, columns=["m", "n", "k", "latency"])
    frame.loc[(frame.m == 2.0) & (frame.n == 4096.0) & (frame.k == 4096.0), "latency"] -= 0.25  # both: mean unchanged
    model = get_model(
        "llama-3.2-1b"
    )  # qkv 3072x2048, o 2048x2048, gate_up 16384x2048, down 2048x8192 (16 each), lm_head
    m, s = _gemm_line(model, frame, "syn")

    def f(mm, n, k):
        return g[mm] * (1 + n * k / 1e6) * 1e-3

    # n below the smallest measured (4096) and k below 4096 are priced at the smallest; lm_head (128,256 wide) is
    # eight pieces of 16,032 columns.
    raw = np.array(
        [
            16 * (f(x, 4096, 4096) + f(x, 4096, 4096) + f(x, 16384, 4096) + f(x, 4096, 8192))
            + 8 * f(x, 128256 / 8, 4096)
            for x in g
        ]
    )
    np.testing.assert_array_equal(m, [1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(s, np.minimum.accumulate(raw[::-1])[::-1], rtol=1e-12)
    assert s[0] == s[1] < raw[0]  # more work never costs less: m = 1 takes m = 2's cheaper time

    # A shape missing at m = 8 ends the line at 4; missing at the smallest m, or covering one m only, is refused.
    hole = frame[~((frame.m == 8.0) & (frame.n == 4096.0) & (frame.k == 4096.0))]
    m_hole, s_hole = _gemm_line(model, hole, "syn")
    np.testing.assert_array_equal(m_hole, [1.0, 2.0, 4.0])
    np.testing.assert_allclose(s_hole, np.minimum.accumulate(raw[2::-1])[::-1], rtol=1e-12)  # an unmeasured neighbour
    # of zero weight (m = 8 beside m = 4) does not blank m = 4: the one interpolation of the grids, interp_grid
    for broken in (
        frame[~((frame.m == 1.0) & (frame.n == 4096.0) & (frame.k == 4096.0))],
        frame[~((frame.m == 2.0) & (frame.n == 4096.0) & (frame.k == 4096.0))],
    ):
        with pytest.raises(KernelDataError) as err:
            _gemm_line(model, broken, "h100_sxm gemm")
        assert str(err.value) == "h100_sxm gemm: the GEMM data do not cover this model's matrix shapes"


def test_measured_source_defaults_fallback_context_one_row_models_and_a_bare_description(tmp_path):
    import hashlib

    from specsim.timing.measured import MeasuredSource

    times = {(b, q, L): 1e-3 * b * q + L * 1e-6 for b in (1, 4) for q in (1, 2) for L in (0, 512)}
    lines = ["model,batch,tokens_per_seq,context,median_s"] + [
        f"llama-3.2-1b,{b},{q},{L},{t}" for (b, q, L), t in times.items()
    ]
    lines.append("qwen3-0.6b,2,1,64,0.004")  # a model measured at one point only
    path = tmp_path / "bare.csv"
    path.write_text("\n".join(lines) + "\n")
    src = MeasuredSource(path, H100)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert src.describe() == f"measured: bare.csv (sha256 {sha}), roofline (h100-sxm) outside it"  # no device column
    model = get_model("llama-3.2-1b")
    # The defaults are one sequence, one token, no context: the measured point (1, 1, 0) exactly.
    assert float(src.step_time(model).total_s) == times[(1, 1, 0)]
    # Outside the grid the roofline answers at the context asked for.
    out = src.step_time(model, 8, 1, 512)
    assert out.fallback is not None and bool(np.all(out.fallback))
    assert (
        float(out.total_s)
        == float(step_time(H100, model, 8, 1, 512).total_s)
        != float(step_time(H100, model, 8, 1, 0).total_s)
    )
    # A model measured at one point answers there, by its own name.
    assert src.models() == ["llama-3.2-1b", "qwen3-0.6b"]
    assert float(src.step_time(get_model("qwen3-0.6b"), 2, 1, 64).total_s) == 0.004


@pytest.mark.parametrize(
    "value, text",
    [
        (4194305.0, "4194305"),
        (2.5, "2.5"),
        (1e15, "1e+15"),
        (999999999999999.0, "999999999999999"),
        (1e20, "1e+20"),
        (float("inf"), "inf"),
        (-3.0, "-3"),
    ],
)
def test_numbers_in_messages_are_whole_in_full_below_1e15_and_g_format_otherwise(value, text):
    from specsim.timing.base import _number

    assert _number(value) == text


def test_moe_line_from_a_synthetic_database_needs_two_rows_and_refuses_a_dtype_it_has_no_table_for(tmp_path):
    from specsim.timing.kernels import KernelDataError, _moe_line

    model = get_model("qwen3-30b-a3b", tp=2)
    shape = dict(
        hidden_size=2048,
        inter_size=768,
        topk=8,
        num_experts=128,
        moe_tp_size=2,
        moe_ep_size=1,
        distribution="balanced",
        moe_dtype="bfloat16",
    )

    def database(rows, version="1.0.0"):
        folder = tmp_path / version / "dev" / "moe" / "vllm" / version
        folder.mkdir(parents=True)
        pd.DataFrame([{**shape, **r} for r in rows]).to_parquet(folder / "moe_perf.parquet")
        return tmp_path / version / "dev"

    two = database([{"num_tokens": 4, "latency": 0.03}, {"num_tokens": 1, "latency": 0.02}], "1.0.0")
    m, s, _ = _moe_line(model, tmp_path, two, "vllm", "syn")
    np.testing.assert_array_equal(m, [1.0, 4.0])
    np.testing.assert_allclose(s, [2e-5, 3e-5], rtol=1e-12)
    one = database([{"num_tokens": 1, "latency": 0.02}], "2.0.0")
    message = "syn: no fused-MoE measurements for 128 experts, top-8, hidden 2048, expert size 768, TP 2, {} experts"
    with pytest.raises(KernelDataError) as err:
        _moe_line(model, tmp_path, one, "vllm", "syn")
    assert str(err.value) == message.format("bf16")
    # An expert precision the database has no fused-MoE table for (NVFP4 here) is refused the same way, not a crash.
    with pytest.raises(KernelDataError) as err:
        _moe_line(dataclasses.replace(model, expert_dtype="nvfp4"), tmp_path, two, "vllm", "syn")
    assert str(err.value) == message.format("nvfp4")


def test_a_release_that_did_not_measure_a_table_or_a_shape_falls_back_to_the_newest_that_did(tmp_path):
    # aiconfigurator-core 0.12.0 ships releases with some tables only (b200 gemm/trtllm/1.3.0rc23: a reuse.yaml naming
    # 1.3.0rc20) and tables with other models' shapes only (trtllm 1.3.0rc23's moe tables): the newest release that
    # measured the table, and the shape, is read; where none did, the refusal names the table.
    from specsim.timing.kernels import KernelDataError, _moe_line, holding

    engine = tmp_path / "moe" / "trtllm"
    for version in ("1.0.0", "1.2.0", "1.3.0"):
        (engine / version).mkdir(parents=True)
    (engine / "1.3.0" / "reuse.yaml").write_text("reuse: []\n")
    assert holding(engine, "reuse.yaml").name == "1.3.0"
    with pytest.raises(
        KernelDataError,
        match=r"no moe_perf.parquet in any release of .*/moe/trtllm \(the newest, 1.3.0, holds reuse.yaml\)",
    ):
        holding(engine, "moe_perf.parquet")
    model = get_model("qwen3-30b-a3b", tp=2)
    shape = dict(hidden_size=2048, inter_size=768, topk=8, num_experts=128, moe_tp_size=2, moe_ep_size=1)
    rows = [{**shape, "distribution": "balanced", "moe_dtype": "bfloat16", "num_tokens": n, "latency": t} for n, t in
            ((1, 0.02), (4, 0.03))]  # fmt: skip
    pd.DataFrame(rows).to_parquet(engine / "1.0.0" / "moe_perf.parquet")
    other = [{**r, "hidden_size": 4096} for r in rows]  # another model's shape only
    pd.DataFrame(other).to_parquet(engine / "1.2.0" / "moe_perf.parquet")
    assert holding(engine, "moe_perf.parquet").name == "1.2.0"
    m, s, folder = _moe_line(model, tmp_path, tmp_path, "trtllm", "syn")
    assert folder.name == "1.0.0" and list(m) == [1.0, 4.0]
    np.testing.assert_allclose(s, [2e-5, 3e-5], rtol=1e-12)


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    """A database root with the shipped H100 attention tables and our own GEMM and fused-MoE tables (no all-reduce)."""
    from specsim.timing.kernels import _newest, database_root

    real = database_root() / "h100_sxm"
    root = tmp_path_factory.mktemp("db")
    (root / "h100_sxm").mkdir()
    (root / "h100_sxm" / "attention").symlink_to(real / "attention")
    gemm = pd.read_parquet(_newest(real / "gemm" / "vllm") / "gemm_perf.parquet")
    moe = pd.read_parquet(_newest(real / "moe" / "vllm") / "moe_perf.parquet")
    return root, gemm[gemm.gemm_dtype == "bfloat16"], moe


def _database(root, gemm, moe, name):
    for kind, file, frame in (("gemm", "gemm_perf.parquet", gemm), ("moe", "moe_perf.parquet", moe)):
        folder = root / "h100_sxm" / kind / "vllm" / name
        folder.mkdir(parents=True)
        frame.to_parquet(folder / file)


def test_built_moe_table_on_a_synthetic_database_stops_where_either_table_stops_and_names_a_missing_all_reduce(
    synthetic_root, tmp_path
):
    import shutil

    from specsim.timing.kernels import KernelDataError

    root, gemm, moe = synthetic_root
    model = get_model("qwen3-30b-a3b", tp=2)
    shipped = build_table(model, "h100_sxm", "vllm")

    def build(gemm_rows, moe_rows):
        shutil.rmtree(root / "h100_sxm" / "gemm", ignore_errors=True)
        shutil.rmtree(root / "h100_sxm" / "moe", ignore_errors=True)
        _database(root, gemm_rows, moe_rows, "9.9.9")
        return build_table(model, "h100_sxm", "vllm", root=root)

    # The shipped rows without an all-reduce table: the same GEMM + MoE line, and the all-reduce priced by the roofline.
    full = build(gemm, moe)
    np.testing.assert_array_equal(full.gemm_m, shipped.gemm_m)
    np.testing.assert_allclose(full.gemm_s, shipped.gemm_s, rtol=1e-12)
    assert (
        full.meta["allreduce"] == "roofline" and shipped.meta["allreduce"] == "measured" and full.comm_elems.size == 0
    )
    # GEMMs measured only up to m = 8192, inside the MoE rows (to 16384): the line keeps every GEMM point.
    short = build(gemm[gemm.m <= 8192], moe)
    assert short.gemm_m[-1] == 8192.0 and short.gemm_m.size == np.unique(gemm.m[gemm.m <= 8192]).size
    # MoE rows from 1.9 tokens: one token (8 experts of 128, 1 balanced token) is outside, two (1.94) inside: refused.
    rows = moe[moe.num_tokens >= 2].astype({"num_tokens": float})
    first = rows[rows.num_tokens == 2.0].assign(num_tokens=1.9)
    with pytest.raises(KernelDataError) as err:
        build(gemm, pd.concat([first, rows]))
    assert str(err.value) == (
        "kernel database: qwen3-30b-a3b on h100_sxm (vllm): the fused-MoE measurements do not cover the "
        "GEMM token range"
    )


def test_built_table_names_the_model_device_and_engine_when_its_experts_have_no_fused_moe_rows():
    from specsim.timing.kernels import KernelDataError

    model = dataclasses.replace(get_model("qwen3-30b-a3b", tp=2), expert_dtype="nvfp4")
    with pytest.raises(KernelDataError) as err:
        build_table(model, "h100_sxm", "vllm")
    assert str(err.value) == (
        "kernel database: qwen3-30b-a3b on h100_sxm (vllm): no fused-MoE measurements for 128 experts, "
        "top-8, hidden 2048, expert size 768, TP 2, nvfp4 experts"
    )


def test_attention_rows_are_those_of_one_rank_with_at_least_one_kv_head():
    from specsim.timing.kernels import _attention_rows, _attention_shape

    frame = _raw("attention", "vllm", "generation_attention_perf.parquet")
    # 32 heads, 8 KV heads: 4 and 1 per rank
    rows = _attention_rows(frame, *_attention_shape(get_model("llama-3.1-8b", tp=8)))
    assert not rows.empty and set(rows.num_heads) == {4} and set(rows.num_key_value_heads) == {1}
    assert set(rows.head_dim) == {128}


def test_kernel_notes_are_recorded_once_per_key():
    src = KernelSource(H100)
    src._note("a")
    src._note("a")
    src._note("b", key=1)
    src._note("c", key=1)
    src._note("d")
    assert src.notes == ["a", "b", "d"]  # a note without a key is keyed by its text


def test_allreduce_from_a_table_clamps_below_one_element_and_keeps_the_input_shape_without_data():
    t = _table(comm_elems=np.array([1.0, 1024.0]), comm_s=np.array([1e-5, 4e-5]))
    np.testing.assert_allclose(
        t.allreduce(np.array([1.0, 0.5, 32.0])), [1e-5, 1e-5, 2e-5], rtol=1e-12
    )  # log-log: 32 halfway
    assert np.isnan(t.allreduce(np.array([2048.0]))).all()
    none = _table()
    assert none.allreduce(np.array([1.0, 2.0, 3.0])).shape == (3,) and np.isnan(none.allreduce(np.array([[1.0]]))).all()


def test_a_database_package_without_its_data_folder_is_named(monkeypatch, tmp_path):
    import importlib.machinery
    import importlib.util

    from specsim.timing import kernels

    spec = importlib.machinery.ModuleSpec("aiconfigurator_core", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    with pytest.raises(kernels.KernelDataError) as err:
        kernels.database_root()
    assert (
        str(err.value)
        == f"aiconfigurator-core is installed but has no kernel data folder at {tmp_path / 'systems' / 'data'}"
    )
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(kernels.KernelDataError) as err:
        kernels.database_root()
    assert (
        str(err.value)
        == f"the kernel source needs aiconfigurator-core=={kernels.AIC_VERSION} (pip install 'aiconfigurator-core=={kernels.AIC_VERSION}')"
    )


def test_roofline_description_prints_the_profiles_efficiencies_and_overhead_in_milliseconds():
    from specsim.timing.roofline import RooflineSource

    hw = dataclasses.replace(H100, compute_eff=0.5, bandwidth_eff=0.75, overhead_s=0.0123)
    assert RooflineSource(hw).describe() == (
        "roofline: profile h100-sxm (compute eff 0.50, bandwidth eff 0.75, 12.30 ms/pass)"
    )


def test_a_table_without_scaled_cells_round_trips_through_the_cache_with_a_zero_mask(tmp_path):
    table = _table()
    assert table.attn_scaled is None
    path = tmp_path / "t.json"
    table.save(path)
    back = KernelTable.load(path, {})
    np.testing.assert_array_equal(back.attn_scaled, np.zeros(table.attn_s.shape))
    np.testing.assert_array_equal(back.gemm_s, table.gemm_s)
    np.testing.assert_array_equal(back.attn_L, table.attn_L)


def test_grid_interpolation_on_one_axis_is_np_interp_inside_and_nan_outside():
    from specsim.timing._grid import interp_grid

    ax = np.array([0.0, 1.0, 4.0])
    got = interp_grid((ax,), np.array([0.0, 2.0, 8.0]), [np.array([0.5, 1.0, 2.5, 4.0, 5.0, -1.0])])
    np.testing.assert_allclose(got[:4], np.interp([0.5, 1.0, 2.5, 4.0], ax, [0.0, 2.0, 8.0]), rtol=1e-12)
    assert np.isnan(got[4:]).all() and got.shape == (6,)


def test_the_two_axis_interpolation_is_the_textbook_rule_to_the_bit():
    """interp_grid's two-axis path (the kernel source's decode attention, once a pass; read flat and clipped without
    np.clip, for speed) gives the textbook bilinear rule's answers, its corners summed in the same order, bit for bit
    (the general path sums them in another order: test_the_two_axis_interpolation_is_the_general_one, to a rounding):
    inside, on the nodes, beside and on an unmeasured (NaN) cell, outside either axis, broadcast."""
    from specsim.timing._grid import _bilinear

    rng = np.random.default_rng(3)
    xa, ya = np.array([1.0, 2.0, 4.0, 8.0, 64.0, 512.0]), np.array([0.0, 128.0, 1024.0, 8192.0, 16384.0])
    grid = rng.random((xa.size, ya.size))
    grid[2, 3] = grid[5, 4] = np.nan
    x = np.r_[rng.uniform(0.5, 600.0, 200), xa, 0.5, 600.0][:, None]
    y = np.r_[rng.uniform(-10.0, 17000.0, 50), ya, -1.0, 17000.0][None, :]
    got = _bilinear((xa, ya), grid, [x, y])
    assert got.shape == (208, 57) and np.isnan(got).any() and np.isfinite(got).sum() > 4000
    i, j = (
        np.clip(np.searchsorted(xa, x, "right") - 1, 0, xa.size - 2),
        np.clip(np.searchsorted(ya, y, "right") - 1, 0, 3),
    )
    fx, fy = (x - xa[i]) / (xa[i + 1] - xa[i]), (y - ya[j]) / (ya[j + 1] - ya[j])
    want = 0.0
    for wx, di in ((1.0 - fx, 0), (fx, 1)):
        for wy, dj in ((1.0 - fy, 0), (fy, 1)):
            want = want + np.where(wx * wy > 0, wx * wy * grid[i + di, j + dj], 0.0)
    inside = (x >= 1.0) & (x <= 512.0) & (y >= 0.0) & (y <= 16384.0)
    np.testing.assert_array_equal(got, np.where(inside, want, np.nan))
    assert _bilinear((xa, ya), grid, [np.array(3.0), np.array(500.0)]).shape == ()


def test_hybrid_source_is_the_roofline_pass_with_its_total_scaled_by_the_kernel_ratio_and_flags_either_fallback():
    from specsim.timing.roofline import RooflineSource

    hybrid = make_source("hybrid", H100)
    model = get_model("llama-3.1-8b")
    assert (
        hybrid.step_time(model).total_s == hybrid.step_time(model, 1, 1, 0).total_s
    )  # defaults: one token, no context
    t = hybrid.step_time(model, 4, 3, 2048)
    roof = RooflineSource(H100).step_time(model, 4, 3, 2048)
    k, k1 = hybrid.kernels.step_time(model, 4, 3, 2048), hybrid.kernels.step_time(model, 4, 1, 2048)
    decode = RooflineSource(H100).step_time(model, 4, 1, 2048)
    assert float(t.total_s) == pytest.approx(float(decode.total_s * _untiled_ratio(hybrid.kernels, model, 4, 3, 2048)))
    assert float(t.total_s) != pytest.approx(float(decode.total_s * k.total_s / k1.total_s), rel=1e-3)  # tiles out
    assert (t.bytes, t.flop, t.memory_s, t.source, t.fallback) == (roof.bytes, roof.flop, roof.memory_s, "hybrid", None)
    # 256 x 200 tokens lie past the measured GEMMs while one token per sequence does not: the pass is flagged.
    far = hybrid.step_time(model, np.array([4.0, 256.0]), np.array([3.0, 200.0]), 512)
    assert hybrid.kernels.step_time(model, 256, 1, 512).fallback is None
    assert far.fallback.tolist() == [False, True]
    # A third point whose one-token pass also falls back (a context past the attention data): each pass's flags count.
    three = hybrid.step_time(
        model, np.array([4.0, 256.0, 4.0]), np.array([3.0, 200.0, 3.0]), np.array([512.0, 512.0, 1e5])
    )
    assert hybrid.kernels.step_time(
        model, np.array([4.0, 256.0, 4.0]), 1, np.array([512.0, 512.0, 1e5])
    ).fallback.tolist() == [False, False, True]
    assert three.fallback.tolist() == [False, True, True]
    assert RooflineSource(H100).step_time(model).total_s == step_time(H100, model, 1, 1, 0).total_s


def test_pass_inputs_name_the_first_value_out_of_range_of_any_shape_and_take_the_bounds_themselves():
    from specsim.core.limits import MAX_BATCH
    from specsim.timing.base import _as_array

    assert _as_array("batch", [1, MAX_BATCH], 1, MAX_BATCH).tolist() == [1.0, float(MAX_BATCH)]
    with pytest.raises(ValueError) as err:
        _as_array("batch", [[float(MAX_BATCH), 0.0], [np.inf, 2.0]], 1, MAX_BATCH)
    assert str(err.value) == f"batch must be in [1, {MAX_BATCH}], got 0"
    with pytest.raises(ValueError) as err:
        _as_array("context", "many", 0, 10)
    assert str(err.value) == "context must be numbers in [0, 10]"


def test_a_measured_source_without_its_file_is_refused_with_an_example():
    with pytest.raises(ValueError) as err:
        make_source("measured:", H100)
    assert str(err.value) == "timing measured:FILE needs a file, e.g. measured:h200.csv"


def test_kernel_source_notes_name_the_data_limits_and_only_the_scaled_points_it_answers():
    src = KernelSource(H100)
    model = get_model("llama-3.1-8b")
    table = src.table(model)
    # Batch 128 at context 4,095 leans on attention scaled in batch; 128 x 300 tokens also lie past the GEMMs.
    t = src.step_time(model, np.array([128.0, 128.0]), np.array([1.0, 300.0]), 4095)
    assert t.source == "kernels" and t.fallback.tolist() == [False, True]
    assert src.notes == [
        f"llama-3.1-8b: some points lie outside the vllm kernel data on h100_sxm, measured at b up to "
        f"{table.attn_b[-1]:.0f}, b*q up to {table.gemm_m[-1]:.0f} and contexts {table.attn_L[0]:.0f}-"
        f"{table.attn_L[-1]:.0f}; the roofline answers there (the --json rows of steptime, optimal-gamma and speedup give "
        "each point's timing_source)",
        "llama-3.1-8b: at batch 128 attending 4096 tokens (the cached context and the pass's own) the decode-attention data "
        "stop at a smaller batch; attention there is "
        "scaled linearly in batch from the largest measured one",
    ]
    assert table.attn_b[-1] != table.attn_b[-2] and table.attn_b[-1] != table.attn_b[1]


def test_measured_all_reduces_are_noted_only_where_a_message_size_is_missing():
    src = KernelSource(H100)
    model = get_model("llama-3.1-70b", tp=4)
    src.step_time(model, 1, 1, 512)
    assert not any("all-reduce" in n for n in src.notes)
    src.step_time(model, 256, 300, 512)  # 76,800 tokens x 8,192 values: past the largest measured message (2^29)
    assert (
        "llama-3.1-70b: no measured vllm all-reduce at TP 4 on h100_sxm for some message sizes; the profile's link "
        "bandwidth and latency answer there"
    ) in src.notes


def test_kernel_tables_carry_their_schema_and_database_and_cache_into_a_folder_they_create(monkeypatch, tmp_path):
    from specsim.timing.kernels import _SCHEMA, database_version

    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path / "a" / "b"))
    src = KernelSource(H100)
    table = src.table(get_model("llama-3.2-1b"))
    assert table.meta["schema"] == _SCHEMA and table.meta["database"] == f"aiconfigurator-core {database_version()}"
    assert len(list((tmp_path / "a" / "b").glob("kernels-*.json"))) == 1 and src.notes == []
    again = KernelSource(H100)  # a new process reads the cached table back: it matches, nothing is rebuilt
    np.testing.assert_array_equal(again.table(get_model("llama-3.2-1b")).gemm_s, table.gemm_s)
    assert again.notes == []


def test_cache_folder_defaults_to_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECSIM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "specsim"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "specsim"


def test_kernel_source_refusals_are_word_for_word(monkeypatch):
    import importlib.metadata

    from specsim.timing import kernels

    with pytest.raises(ValueError) as err:
        KernelSource(H100, engine="tgi")
    assert str(err.value) == "kernel database engine must be vllm, sglang or trtllm, got 'tgi'"
    with pytest.raises(kernels.KernelDataError) as err:
        kernels.device_folder(dataclasses.replace(H100, name="tpu-v5"))
    assert str(err.value) == f"the kernel database has no device 'tpu-v5'; it has {', '.join(kernels.DEVICE_FOLDERS)}"

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(kernels.sys, "path", [])  # and no dist-info folder on the path
    with pytest.raises(kernels.KernelDataError) as err:
        kernels.database_version()
    assert str(err.value) == (
        f"the kernel source needs aiconfigurator-core=={kernels.AIC_VERSION} "
        f"(pip install 'aiconfigurator-core=={kernels.AIC_VERSION}')"
    )


def test_table_edges_below_the_first_gemm_and_without_scaled_cells():
    t = _table()
    assert np.isnan(t.gemm(np.array([0.5]))).all() and np.isnan(t.gemm(np.array([101.0]))).all()
    none = t.uses_scaled_attention(4.0, np.array([16.0, 32.0, 64.0]))
    assert none.dtype == bool and none.shape == (3,) and not none.any()


def test_the_roofline_refuses_a_models_tp_beyond_the_node_naming_the_model():
    model = dataclasses.replace(get_model("llama-3.1-8b"), tp=16)
    with pytest.raises(ValueError) as err:
        step_time(H100, model, 1, 1, 0)
    assert (
        str(err.value)
        == "tensor parallelism of llama-3.1-8b 16 exceeds the 8 devices of one h100-sxm node (max_devices in its profile)"
    )


def test_fill_by_batch_scales_only_from_a_measured_batch_of_at_least_64_and_never_wraps_around():
    from specsim.timing.kernels import _fill_by_batch

    b = np.array([64.0, 128.0, 256.0, 512.0])
    grid = np.array([[2.0, np.nan, 1.0], [np.nan, 3.0, np.nan], [np.nan, 5.0, np.nan], [np.nan, 7.0, np.nan]])
    out, filled = _fill_by_batch(b, grid)
    np.testing.assert_array_equal(out[:, 0], [2.0, 4.0, 8.0, 16.0])  # t(b) = t(b0) b / b0, step by step
    assert np.isnan(out[0, 1]) and list(out[1:, 1]) == [3.0, 5.0, 7.0]  # nothing below the first measured batch
    np.testing.assert_array_equal(out[:, 2], [1.0, 2.0, 4.0, 8.0])
    assert filled.dtype == bool and filled.sum() == 6 and not filled[0].any()
    small = _fill_by_batch(np.array([16.0, 32.0]), np.array([[1.0], [np.nan]]))[0]
    assert np.isnan(small[1, 0])  # from batch 16 the GPU is not saturated: no scaling


def test_attention_rows_keep_only_beam_1_and_full_attention_rows_of_the_shape():
    from specsim.timing.kernels import _attention_rows, _attention_shape

    model = get_model("llama-3.1-8b")
    shape = dict(num_heads=32, num_key_value_heads=8, head_dim=128, kv_cache_dtype="bfloat16")
    frame = pd.DataFrame(
        [
            {**shape, "beam_width": 1, "window_size": 0, "latency": 1.0},
            {**shape, "beam_width": 4, "window_size": 0, "latency": 2.0},
            {**shape, "beam_width": 1, "window_size": 128, "latency": 3.0},
        ]
    )
    assert _attention_rows(frame, *_attention_shape(model)).latency.tolist() == [1.0]
    assert _attention_rows(
        frame.drop(columns=["beam_width", "window_size"]), *_attention_shape(model)
    ).latency.tolist() == [
        1.0,
        2.0,
        3.0,
    ]


def test_built_attention_is_the_raw_rows_composed_and_the_context_rate_the_best_measured_one():
    from specsim.timing.kernels import _attention_rows, _attention_shape, _fill_by_batch

    model = get_model("llama-3.1-8b")
    table = build_table(model, "h100_sxm", "vllm")
    gen = _attention_rows(_raw("attention", "vllm", "generation_attention_perf.parquet"), *_attention_shape(model))
    piv = gen.pivot_table(index="batch_size", columns="step", values="latency", aggfunc="mean")
    attn, filled = _fill_by_batch(piv.index.to_numpy(float), _suffix_min(piv.to_numpy(float) * 1e-3, axis=0))
    np.testing.assert_allclose(table.attn_s, attn, rtol=1e-12)
    ctx = _attention_rows(_raw("attention", "vllm", "context_attention_perf.parquet"), *_attention_shape(model))
    ctx = ctx[ctx.step == 0]
    flop = 2.0 * 32 * 128 * ctx.isl.to_numpy(float) ** 2 * ctx.batch_size.to_numpy(float)
    assert table.ctx_flop_per_s == pytest.approx(float(np.max(flop / (ctx.latency.to_numpy(float) * 1e-3))), rel=1e-12)
    assert (ctx.batch_size > 1).any()


def test_built_table_refusals_on_synthetic_databases_name_where_they_read(tmp_path):
    from specsim.timing.kernels import KernelDataError, _newest, database_root

    real = database_root() / "h100_sxm"
    gemm = pd.read_parquet(_newest(real / "gemm" / "vllm") / "gemm_perf.parquet")
    attn = _newest(real / "attention" / "vllm")
    model = get_model("llama-3.1-8b")
    where = "kernel database: llama-3.1-8b on h100_sxm (vllm)"

    def root(name, gemm_rows, context=None):
        dev = tmp_path / name / "h100_sxm"
        (dev / "gemm" / "vllm" / "1.0").mkdir(parents=True)
        gemm_rows.to_parquet(dev / "gemm" / "vllm" / "1.0" / "gemm_perf.parquet")
        folder = dev / "attention" / "vllm" / "1.0"
        folder.mkdir(parents=True)
        (folder / "generation_attention_perf.parquet").symlink_to(attn / "generation_attention_perf.parquet")
        ctx = pd.read_parquet(attn / "context_attention_perf.parquet") if context is None else context
        ctx.to_parquet(folder / "context_attention_perf.parquet")
        return tmp_path / name

    with pytest.raises(KernelDataError) as err:
        build_table(model, "h100_sxm", "vllm", root=root("fp8", gemm[gemm.gemm_dtype != "bfloat16"]))
    assert str(err.value) == f"{where}: no bfloat16 GEMM measurements"
    bf16 = gemm[gemm.gemm_dtype == "bfloat16"]
    with pytest.raises(KernelDataError) as err:
        build_table(model, "h100_sxm", "vllm", root=root("hole", bf16[bf16.m == 1]))  # one m: no line
    assert str(err.value) == f"{where}: the GEMM data do not cover this model's matrix shapes"
    ctx = pd.read_parquet(attn / "context_attention_perf.parquet")
    with pytest.raises(KernelDataError) as err:
        build_table(model, "h100_sxm", "vllm", root=root("noctx", bf16, ctx[ctx.num_heads != 32]))
    assert str(err.value) == f"{where}: no context-attention measurements for this head shape"
    # Context rows of a later step (a prefill onto a filled cache) are not a prefill from an empty one: left out.
    later = ctx.assign(step=1, latency=ctx.latency * 100)
    mixed = build_table(model, "h100_sxm", "vllm", root=root("steps", bf16, pd.concat([ctx, later])))
    shipped = build_table(model, "h100_sxm", "vllm")
    np.testing.assert_allclose(mixed.prefill_attn_s, shipped.prefill_attn_s, rtol=1e-12)
    assert mixed.ctx_flop_per_s == shipped.ctx_flop_per_s


def test_gemm_line_of_two_covered_points_is_a_line_and_clips_n_and_k_at_their_own_smallest_values():
    from specsim.timing.kernels import _gemm_line

    ns, ks = (4096.0, 16384.0), (2048.0, 8192.0)  # the smallest n (4096) differs from the smallest k (2048)
    frame = pd.DataFrame(
        [(m, n, k, m * (1 + n * k / 1e6)) for m in (1.0, 2.0) for n in ns for k in ks],
        columns=["m", "n", "k", "latency"],
    )
    model = get_model("llama-3.2-1b")
    m, s = _gemm_line(model, frame, "syn")
    np.testing.assert_array_equal(m, [1.0, 2.0])

    def f(x, n, k):
        return x * (1 + n * k / 1e6) * 1e-3

    # qkv (3072 wide) and o (2048) are priced at n = 4096; k = 2048 is measured as it is; lm_head: 8 pieces of 16,032.
    expected = [
        16 * (f(x, 4096, 2048) + f(x, 4096, 2048) + f(x, 16384, 2048) + f(x, 4096, 8192)) + 8 * f(x, 128256 / 8, 2048)
        for x in (1.0, 2.0)
    ]
    np.testing.assert_allclose(s, expected, rtol=1e-12)
    # A MoE model's routed experts are priced by the fused-MoE tables, not as GEMMs here.
    moe = get_model("qwen3-30b-a3b")
    dense = [(op.n, op.k, op.count) for op in moe.ops() if op.is_matmul and op.part != "expert"]
    assert any(op.part == "expert" for op in moe.ops() if op.is_matmul)
    wide = pd.DataFrame(
        [(mm, n, k, 1.0) for mm in (1.0, 2.0) for n in (64.0, 262144.0) for k in (64.0, 65536.0)],
        columns=["m", "n", "k", "latency"],
    )
    got = _gemm_line(moe, wide, "syn")[1]
    np.testing.assert_allclose(got, [1e-3 * sum(c * np.ceil(n / 262144.0) for n, _, c in dense)] * 2, rtol=1e-12)


def test_suffix_min_runs_along_the_axis_asked_for():
    grid = np.array([[3.0, 1.0, 2.0], [2.0, 5.0, 4.0]])
    np.testing.assert_array_equal(_suffix_min(grid, axis=0), [[2.0, 1.0, 2.0], [2.0, 5.0, 4.0]])
    np.testing.assert_array_equal(_suffix_min(grid, axis=1), [[1.0, 1.0, 2.0], [2.0, 4.0, 4.0]])


def test_a_cached_table_is_plain_json_and_a_foreign_file_is_refused(tmp_path):
    import io

    table = _table()
    path = tmp_path / "t.json"
    table.save(path)
    assert json.loads(path.read_text())["meta"] == table.meta  # data only: nothing in it is code or a pickle
    with pytest.raises(ValueError) as err:
        KernelTable.load(path, {"device": "another"})
    assert str(err.value) == "cached kernel table was built for another model, device or database"
    evil = tmp_path / "evil.json"
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array([{"not": "data"}], dtype=object))  # an archive with a pickled object is not JSON
    evil.write_bytes(buffer.getvalue())
    with pytest.raises(ValueError):
        KernelTable.load(evil, {})
    evil.write_text('[{"meta": {}}]')  # JSON, but not a table
    with pytest.raises(ValueError, match="^not a kernel table$"):
        KernelTable.load(evil, {})


def test_a_process_reads_each_database_file_once_and_builds_the_same_tables_from_it(monkeypatch):
    """Every table built on a device and engine read its GEMM and attention files whole again (73 ms of pandas for
    h100_sxm's vLLM GEMMs, 80% of a build): a process now reads each once, in the columns the tables use, and a
    second model on the same device and engine reads nothing.  The tables are those of files read afresh."""
    from specsim.timing import kernel_db
    from specsim.timing.kernels import _CACHED_ARRAYS

    reads = []
    real = pd.read_parquet

    def counted(path, **kwargs):
        reads.append(path.name)
        return real(path, **kwargs)

    kernel_db._kept.cache_clear()  # (whatever an earlier test read)
    monkeypatch.setattr(pd, "read_parquet", counted)
    models = [get_model(n) for n in ("llama-3.1-8b", "llama-3.2-1b", "qwen3-8b")]
    tables = [build_table(m, "h100_sxm", "vllm") for m in models]
    assert sorted(reads) == [
        "context_attention_perf.parquet",
        "gemm_perf.parquet",
        "generation_attention_perf.parquet",
    ]
    for model, table in zip(models, tables):
        kernel_db._kept.cache_clear()
        fresh = build_table(model, "h100_sxm", "vllm")
        assert fresh.meta == table.meta
        for name in ("ctx_flop_per_s", *_CACHED_ARRAYS):
            np.testing.assert_array_equal(getattr(fresh, name), getattr(table, name), err_msg=name)
    assert len(reads) == 3 + 3 * 3


def test_tables_of_one_device_and_engine_grid_the_gemms_once_and_select_each_attention_shape_once(monkeypatch):
    """Every table grouped the GEMM file's rows of its dtype into the (m, n, k) grid again (a third of a build once
    the file is read once) and selected its attention rows again: once per process, file and dtype or shape now."""
    from specsim.timing import kernel_db, kernels

    grids, shapes = [], []
    real_grid, real_rows = kernels.gemm_grid, kernels._attention_rows
    monkeypatch.setattr(kernels, "gemm_grid", lambda frame, dtype: grids.append(dtype) or real_grid(frame, dtype))
    monkeypatch.setattr(
        kernels, "_attention_rows", lambda frame, *shape: shapes.append(shape) or real_rows(frame, *shape)
    )
    kernel_db._kept.cache_clear()
    for name in ("llama-3.1-8b", "llama-3.2-1b", "qwen3-8b"):  # qwen3-8b: llama-3.1-8b's attention shape
        build_table(get_model(name), "h100_sxm", "vllm")
    assert grids == ["bfloat16"]
    assert shapes == [(32, 8, 128, "bfloat16")] * 2 + [(32, 8, 64, "bfloat16")] * 2


def test_a_moe_layers_measured_line_is_found_once_per_process_and_release(monkeypatch):
    """Every MoE table filtered the fused-MoE file's 100,000 rows for its layer again: once per process now, and the
    table built again from the line kept is the one built from the file."""
    from specsim.timing import kernel_db, kernels

    lines = []
    real = kernels._moe_balanced
    monkeypatch.setattr(kernels, "_moe_balanced", lambda frame, *shape: lines.append(shape) or real(frame, *shape))
    kernel_db._kept.cache_clear()
    model = get_model("qwen3-30b-a3b")
    first = build_table(model, "h100_sxm", "vllm")
    assert lines == [(2048, 768, 8, 128, 1, "bf16")]  # the newest release measured it
    again = build_table(model, "h100_sxm", "vllm")
    assert len(lines) == 1
    for name in ("moe_m", "moe_s", "gemm_s", "gemm_hull_s"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name))


def test_a_database_file_rewritten_in_a_process_is_read_again(tmp_path):
    from specsim.timing.kernel_db import read_frame

    path = tmp_path / "gemm_perf.parquet"
    pd.DataFrame({"m": [1, 2], "latency": [0.5, 0.7]}).to_parquet(path)
    assert read_frame(path, ("m", "latency", "not_in_it")).latency.tolist() == [0.5, 0.7]
    pd.DataFrame({"m": [1, 2, 4], "latency": [0.5, 0.7, 0.9]}).to_parquet(path)  # another size: another file
    assert read_frame(path, ("m", "latency", "not_in_it")).latency.tolist() == [0.5, 0.7, 0.9]
    assert list(read_frame(path, ("latency",)).columns) == ["latency"]


def test_reading_the_database_without_pyarrow_names_what_is_missing(monkeypatch, tmp_path):
    from specsim.timing import kernel_db

    def no_pyarrow(path):
        raise ImportError("Unable to find a usable engine")

    monkeypatch.setattr(pd, "read_parquet", no_pyarrow)
    with pytest.raises(kernel_db.KernelDataError) as err:
        kernel_db.read_frame(tmp_path / "gemm_perf.parquet")
    assert str(err.value) == (
        "reading gemm_perf.parquet needs pyarrow, which aiconfigurator-core installs: Unable to find a usable engine"
    )


def test_the_kernel_databases_version_is_read_as_importlib_reads_it():
    import importlib.metadata

    from specsim.timing.kernels import AIC_DISTRIBUTION, database_version

    assert database_version() == importlib.metadata.version(AIC_DISTRIBUTION)


def test_a_deployment_built_again_lists_no_folder_and_parses_no_built_in_profile_again(monkeypatch):
    """Every deployment built listed sys.path's folders for the kernel database's dist-info (6 of its 7 ms) and parsed
    its built-in hardware profile's YAML again (5 ms), the same answers each time.  Once a process now (per sys.path;
    per version of the file): a second build lists nothing and parses nothing, and gives the same profile."""
    import importlib.metadata
    import os

    import specsim.core.limits as limits
    import specsim.timing.kernel_db as kernel_db
    from specsim.timing.kernels import AIC_DISTRIBUTION, database_version

    first = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    listed, parsed = [], []
    real_listdir, real_load = os.listdir, limits.load_yaml
    monkeypatch.setattr(kernel_db.os, "listdir", lambda *a: listed.append(a) or real_listdir(*a))
    monkeypatch.setattr(limits, "load_yaml", lambda *a, **k: parsed.append(a) or real_load(*a, **k))
    again = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    assert (listed, parsed) == ([], [])
    assert again.hardware == first.hardware and again.source.kernels.version == first.source.kernels.version
    assert database_version() == importlib.metadata.version(AIC_DISTRIBUTION)


def test_the_two_axis_interpolation_is_the_general_one():
    # _bilinear is interp_grid's fast path for the kernel source's (batch, context) tables: the same numbers, NaN cells
    # of zero weight included, at and between the nodes and outside them.
    from specsim.timing import _grid

    rng = np.random.default_rng(3)
    axes = (np.array([1.0, 2.0, 4.0, 8.0]), np.array([0.0, 100.0, 1000.0]))
    grid = rng.random((4, 3))
    grid[2, 1] = np.nan
    x = np.concatenate([axes[0], rng.uniform(0.5, 9.0, 200)])[:, None]
    y = np.concatenate([axes[1], rng.uniform(-10.0, 1100.0, 200)])[None, :]
    fast = _grid.interp_grid(axes, grid, [x, y])
    general = _grid._general(axes, grid, [x, y])
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(general))
    np.testing.assert_allclose(fast[~np.isnan(fast)], general[~np.isnan(general)], rtol=1e-12)
    assert np.isfinite(fast[1, 1]) and np.isnan(fast[2, 1])  # node (2, 100) is measured; (4, 100) is not


def test_sixteen_bit_gemms_are_held_to_the_rate_measured_back_to_back_on_that_gpu():
    """The database's 16-bit GEMMs outrun GEMMs timed one after another (Vidur's A100 and H100, the H200 measured
    here) at compute-bound sizes; the composed line is held to the shipped median rate there and kept below it."""
    from pathlib import Path

    import specsim.timing.kernel_db as kdb
    from specsim.timing.kernels import _GEMM_DTYPES, _gemm_line, _meta

    shipped = pd.read_csv(Path(kdb.__file__).with_name("data") / "sustained_gemm.csv")
    big = shipped[shipped.m >= kdb.SUSTAINED_FROM_TOKENS]
    assert set(big.device) == {"a100_sxm", "h100_sxm", "h200_sxm"}
    for device, rows in big.groupby("device"):
        assert kdb.sustained_matmul_flop_per_s(device) == pytest.approx(rows.tflops.median() * 1e12, rel=1e-12)
    assert kdb.sustained_matmul_flop_per_s("b200_sxm") is None

    model = get_model("llama-3.1-8b")
    rate = kdb.sustained_matmul_flop_per_s("a100_sxm")
    gemm = _raw("gemm", "vllm", "gemm_perf.parquet", "a100_sxm")
    gemm = gemm[gemm.gemm_dtype == _GEMM_DTYPES["bf16"]]
    free_m, free_s = _gemm_line(model, gemm, "x")
    table = build_table(model, "a100_sxm", "vllm")
    np.testing.assert_array_equal(table.gemm_m, free_m)
    weights = sum(op.n * op.k * op.count for op in model.ops() if op.is_matmul and op.part != "expert")
    floor = 2.0 * free_m * weights / rate
    np.testing.assert_allclose(table.gemm_s, np.maximum(free_s, floor), rtol=1e-12)
    # It binds where the database is compute-bound and faster (m = 2048: about 270 TFLOP/s) and not at a decode step.
    at = {int(m): i for i, m in enumerate(free_m)}
    assert free_s[at[2048]] < 0.9 * floor[at[2048]] and table.gemm_s[at[2048]] == floor[at[2048]]
    assert table.gemm_s[0] == free_s[0] > 10 * floor[0]
    assert _meta(model, "a100_sxm", "vllm", "0")["sustained_matmul_flop_per_s"] == rate

    # FP8 weights: no back-to-back FP8 rate is shipped, so the database's line stands.
    fp8 = get_model("llama-3.1-8b", weight_dtype="fp8")
    raw = _raw("gemm", "vllm", "gemm_perf.parquet")
    np.testing.assert_allclose(
        build_table(fp8, "h100_sxm", "vllm").gemm_s,
        _gemm_line(fp8, raw[raw.gemm_dtype == _GEMM_DTYPES["fp8"]], "x")[1],
        rtol=1e-12,
    )
    assert _meta(fp8, "h100_sxm", "vllm", "0")["sustained_matmul_flop_per_s"] is None
    # -v and --json name the rate and who measured it; a device without one says nothing of it.
    from specsim.timing.kernels import KernelSource

    said = KernelSource(load_hardware("a100-sxm-80gb"), "vllm").describe()
    assert f"16-bit GEMMs held to {rate / 1e12:.0f} TFLOP/s" in said and "microsoft/vidur@7d47513" in said
    assert "held to" not in KernelSource(load_hardware("b200"), "vllm").describe()
