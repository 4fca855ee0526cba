"""Per-step times composed from the public vLLM kernel timings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specsim.kernels import compose_steps, load_tables
from specsim.models import get_model

from conftest import REPO  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "public-kernel-timings"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/public-kernel-timings is not beside the checkout")


@pytest.fixture(scope="module")
def h100():
    return load_tables("h100-sxm", DATA)


def test_gemm_lookup_is_exact_on_grid_points(h100):
    raw = pd.read_csv(DATA / "h100_sxm_vllm0.24.0_gemm_bf16.csv")
    row = raw[(raw.m == 64) & (raw.n == 4096) & (raw.k == 4096)].latency_ms.mean()
    assert h100.gemm_s(64, 4096, 4096) == pytest.approx(row * 1e-3, rel=1e-12)


def test_gemm_interpolates_between_and_never_extrapolates(h100):
    lo, hi = h100.gemm_s(64, 12288, 4096), h100.gemm_s(64, 16384, 4096)
    mid = h100.gemm_s(64, 14336, 4096)
    assert min(lo, hi) <= mid <= max(lo, hi)
    assert np.isnan(h100.gemm_s(64, 4096, 100_000))  # k beyond the grid
    # n beyond the grid is split into equal pieces that fit: the 128,256-wide LM head is two GEMMs.
    assert h100.gemm_s(1, 128256, 4096) == pytest.approx(2 * h100.gemm_s(1, 64128, 4096))


def test_composed_1b_decode_step_matches_the_design_note(h100):
    # article-model.md: "summed vLLM kernels of a Llama-3.2-1B-shaped decode step on an H100 take about 1.3 ms at batch 1".
    df = compose_steps(h100, get_model("llama-3.2-1b"), batches=(1,), tokens_per_seq=(1,), contexts=(511, 1023))
    assert ((df.step_time_s > 1.2e-3) & (df.step_time_s < 1.45e-3)).all()


def test_composition_adds_up_and_covers_the_grid(h100):
    df = compose_steps(h100, get_model("llama-3.1-8b"))
    np.testing.assert_allclose(df.step_time_s, df.gemm_s + df.attention_s, rtol=1e-12)
    assert set(df.batch) == {1, 2, 4, 8, 16, 32, 64, 128, 256} and set(df.tokens_per_seq) == {1, 2, 3, 5, 9}
    # Attention data stop at smaller kv_len for large batches: those configurations are left out, not invented.
    assert len(df) < 9 * 5 * 5


def test_a100_has_no_head_dim_64_attention():
    a100 = load_tables("a100-sxm-80gb", DATA)
    assert compose_steps(a100, get_model("llama-3.2-1b")).empty


def test_unknown_device():
    with pytest.raises(KeyError, match="available: h100-sxm"):
        load_tables("tpu-v5", DATA)


def test_committed_tables_are_current(repo, h100, tmp_path):
    committed = pd.read_csv(repo / "hardware" / "measurements" / "h100-sxm-vllm-kernel-steps.csv")
    fresh = pd.concat([compose_steps(h100, get_model(m)) for m in ("llama-3.2-1b", "llama-3.1-8b")], ignore_index=True)
    np.testing.assert_allclose(committed.step_time_s, fresh.step_time_s, rtol=1e-8)
