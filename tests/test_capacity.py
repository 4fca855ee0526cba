"""Memory capacity and throughput: hand-checked budgets, and the tables' internal consistency."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from specsim.serving.capacity import capacity, throughput_table
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma


def test_8b_with_1b_draft_at_8192_tokens_by_hand():
    # By hand: usable 0.92 (vLLM's default from 0.20.0 to 0.33) * 85,520,809,984 bytes
    # (81,559 MiB, the H100's memory as nvidia-smi reports it), less vLLM's start-up: its profiling pass at its server
    # defaults on an H100 (8192 tokens, 1024 sequences), the sampler's 1024 x 128,256 logits at 14.9 bytes with the
    # pass's 8192 x 4096 hidden states (above the MLP's 8192 x (2 x 4096 + 3 x 14,336) activations, 2 bytes each), and
    # 0.25 GiB outside torch at TP 1; weights 8,030,261,248 * 2 and 1,235,814,400 * 2 bytes;
    # KV per sequence 131,072 * 8192 (target) and 32,768 * 8192 (draft) bytes.
    cap = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0"), 8192)
    sampler, mlp = 1024 * 128_256 * 14.9 + 8192 * 4096 * 2, 8192 * (2 * 4096 + 3 * 14_336) * 2
    assert sampler > mlp
    usable = 0.92 * 81_559 * 2**20 - (sampler + 0.25 * 2**30)
    assert cap.usable_bytes == pytest.approx(usable, rel=1e-12)
    assert cap.start_up_bytes == pytest.approx(sampler + 0.25 * 2**30, rel=1e-12)
    sglang = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="sglang"), 8192)
    assert sglang.start_up_bytes is None  # its reserve is its share's own term, not counted apart
    w_t, w_d = 8_030_261_248 * 2, 1_235_814_400 * 2
    assert cap.max_batch_without_draft == int((usable - w_t) // (131_072 * 8192)) == 56
    assert cap.max_batch_with_draft == int((usable - w_t - w_d) // ((131_072 + 32_768) * 8192)) == 43


def test_vllm_0_34_sizes_its_cache_from_the_whole_device_less_its_start_up_and_a_margin_by_hand():
    # vLLM 0.34.0's extensible KV cache, on by default (config/cache.py 0.34.0 L395-405), resolves
    # gpu_memory_utilization to 1.0 (L495-501) and keeps free, beyond what the weights and the start-up hold, the peak
    # and a margin of max(1 GiB, 0.75 x the peak), 3 GiB on ROCm (v1/worker/extensible_kv_cache.py L64-65, L612-618).
    # By hand on the H100 (85,520,809,984 bytes) at vLLM's server defaults: the sampler's peak as in the 0.33 case.
    sampler = 1024 * 128_256 * 14.9 + 8192 * 4096 * 2
    margin = 0.75 * sampler
    assert margin > 2**30
    usable = 81_559 * 2**20 - (sampler + 0.25 * 2**30 + margin)
    w_t, w_d = 8_030_261_248 * 2, 1_235_814_400 * 2
    for engine in ("vllm@0.34.0", "vllm@latest"):  # latest is read at its newest release, 0.34
        cap = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine=engine), 8192)
        assert cap.usable_bytes == pytest.approx(usable, rel=1e-12)
        assert cap.start_up_bytes == pytest.approx(sampler + 0.25 * 2**30 + margin, rel=1e-12)
        assert cap.max_batch_without_draft == int((usable - w_t) // (131_072 * 8192)) == 61
        assert cap.max_batch_with_draft == int((usable - w_t - w_d) // ((131_072 + 32_768) * 8192)) == 47
        assert "extensible KV cache" in cap.memory_basis and "0.92 rule" not in cap.memory_basis
    # a small peak keeps the floor: at 32 sequences the MLP's 8192 x (2 x 4096 + 3 x 14,336) x 2 bytes set the peak
    mlp = 8192 * (2 * 4096 + 3 * 14_336) * 2
    bare = Deployment.build("h100-sxm", "llama-3.1-8b", None, decode_only=True, engine="vllm@0.34.0")
    few = capacity(bare, 1, max_num_seqs=32)
    assert 0.75 * mlp < 2**30
    assert few.start_up_bytes == pytest.approx(mlp + 0.25 * 2**30 + 2**30, rel=1e-12)
    # ROCm keeps 3 GiB at least: the MI300X's sampler peak at 16,384 tokens is below 4 GiB
    rocm = capacity(Deployment.build("mi300x", "llama-3.1-8b", None, decode_only=True, engine="vllm@0.34.0"), 1)
    peak = 1024 * 128_256 * 14.9 + 16_384 * 4096 * 2
    assert 0.75 * peak < 3 * 2**30
    assert rocm.start_up_bytes == pytest.approx(peak + 0.25 * 2**30 + 3 * 2**30, rel=1e-12)
    # 0.33.0 kept 0.92 and no margin; a share given is taken less the start-up alone (measure_kv_cache_bytes's first
    # bound, requested - non-KV use, holds wherever the share leaves the margin free)
    older = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0"), 8192)
    assert older.usable_bytes == pytest.approx(0.92 * 81_559 * 2**20 - (sampler + 0.25 * 2**30), rel=1e-12)
    given = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.34.0"), 8192, 0.9)
    assert given.usable_bytes == pytest.approx(0.9 * 81_559 * 2**20 - (sampler + 0.25 * 2**30), rel=1e-12)


def test_vllms_start_up_is_its_profiling_pass_and_the_memory_outside_torch():
    # The pass's peak is the larger of the MLP's activations at the token budget and the sampler's logits at
    # min(budget, max_num_seqs) rows: at a 20,000-token budget (vLLM V0's --max-model-len) on a 24 GB GPU (256
    # sequences by default) the MLP's; at TP 2 the memory outside torch is 2.1 GiB per GPU and the MLP's width halves.
    from specsim.engines.vllm import start_up

    dep = Deployment.build("rtx-3090", "llama-3.1-8b", None, decode_only=True)
    long = start_up(dep.hardware, dep.target, 20_000)
    assert (long.tokens, long.rows, long.peak_part) == (20_000, 256, "the MLP's activations")
    assert long.bytes == pytest.approx(20_000 * (2 * 4096 + 3 * 14_336) * 2 + 0.25 * 2**30, rel=1e-12)
    tp2 = Deployment.build("h100-sxm", "llama-3.1-8b", None, decode_only=True, target_options={"tp": 2})
    both = start_up(tp2.hardware, tp2.target)
    assert (both.tokens, both.rows, both.peak_part) == (8192, 1024, "the sampler's logits")
    assert both.outside_torch_bytes == 2.1 * 2**30
    assert start_up(tp2.hardware, tp2.target, 100_000).peak_bytes == pytest.approx(
        100_000 * (2 * 4096 + 3 * 14_336 / 2) * 2, rel=1e-12
    )
    # The limits given are the pass's: at 256 sequences the H100's sampler holds a quarter of the logits, and the MLP's
    # activations at 8192 tokens set the peak; every capacity at a load computes with the limits it runs at.
    h100 = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0")  # no margin (0.34's)
    few = start_up(h100.hardware, h100.target, None, 256)
    assert (few.rows, few.peak_part) == (256, "the MLP's activations")
    assert few.limits_said == "the engine's limits in use"  # given, or an answer's engine limits: said where they are
    assert start_up(h100.hardware, h100.target).limits_said == "vLLM's server defaults on this GPU"
    assert few.peak_bytes == pytest.approx(8192 * (2 * 4096 + 3 * 14_336) * 2, rel=1e-12)
    sampler, mlp = 1024 * 128_256 * 14.9 + 8192 * 4096 * 2, 8192 * (2 * 4096 + 3 * 14_336) * 2
    assert capacity(h100, 1128, max_num_seqs=256).usable_bytes - capacity(h100, 1128).usable_bytes == pytest.approx(
        sampler - mlp, rel=1e-9
    )
    # A fused MoE keeps its workspace through the sampler's peak from vLLM 0.13.0 (v1/worker/workspace.py): Qwen3-30B-A3B
    # (hidden 2048, 8 of 128 experts, 768 wide) adds 8192 tokens x 8 x (2048 + 2048) x 2 bytes to the sampler's logits
    # (its 151,936-word vocabulary) and hidden states; 0.12 frees it, and the sampler alone sets the peak.
    moe = Deployment.build("h100-sxm", "qwen3-30b-a3b", None, decode_only=True)
    sampler = 1024 * 151_936 * 14.9 + 8192 * 2048 * 2
    kept = start_up(moe.hardware, moe.target, release=(0, 19, 0))
    assert kept.peak_bytes == pytest.approx(sampler + 8192 * 8 * (2048 + 2048) * 2, rel=1e-12)
    assert kept.peak_part == "the sampler's logits beside the fused MoE's kept workspace"
    assert start_up(moe.hardware, moe.target, release=(0, 12, 0)).peak_bytes == pytest.approx(sampler, rel=1e-12)
    # NCCL's 2.1 GiB per GPU were measured over NVLink; GPUs joined by PCIe take the TP-1 figure.
    pcie = Deployment.build("rtx-3090", "llama-3.1-8b", None, decode_only=True, target_options={"tp": 2})
    assert start_up(pcie.hardware, pcie.target).outside_torch_bytes == 0.25 * 2**30
    # A share given is taken less the start-up too (vLLM subtracts it from --gpu-memory-utilization's budget).
    given = capacity(dep.with_tp(1), 1, 0.9)
    assert given.usable_bytes == pytest.approx(
        0.9 * dep.hardware.memory_bytes - start_up(dep.hardware, dep.target).bytes
    )


def test_70b_does_not_fit_on_one_h100_in_bf16_but_fp8_does():
    dep = Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b")
    cap = capacity(dep, 1128)
    assert not cap.target_fits and cap.max_batch_without_draft == 0 and cap.max_batch_with_draft == 0
    import dataclasses

    fp8 = Deployment(dep.hardware, dataclasses.replace(dep.target, weight_dtype="fp8"), dep.draft)
    assert capacity(fp8, 1128).target_fits


def test_draft_always_costs_batch_capacity():
    for hw in ("h100-sxm", "h200", "a100-sxm-80gb", "l40s"):
        cap = capacity(Deployment.build(hw), 4096)
        assert cap.max_batch_with_draft < cap.max_batch_without_draft


def test_capacity_rejects_bad_inputs():
    dep = Deployment.build()
    with pytest.raises(ValueError, match="memory utilization"):
        capacity(dep, 1024, 1.5)
    with pytest.raises(ValueError, match="context must be an integer >= 1"):
        capacity(dep, 0)


def test_throughput_table_is_consistent_with_the_speedup_model():
    dep = Deployment.build()
    t = throughput_table(dep, 0.8, [1, 16, 128, 512], 1128)
    np.testing.assert_allclose(t.speedup, t.latency_plain_s / t.latency_spec_s)
    np.testing.assert_allclose(t.tokens_per_s_spec, t.batch / t.latency_spec_s)
    best = optimal_gamma(dep, 0.8, [1, 16, 128, 512], 1128)
    np.testing.assert_allclose(t.speedup, best.speedup, rtol=1e-12)
    assert t.gamma.tolist() == best.gamma.tolist()


def test_fixed_gamma_costs_throughput_at_high_batch_and_gains_at_low_batch():
    dep = Deployment.build()
    t = throughput_table(dep, 0.8, [1, 800], 128, gamma=4)
    assert t.tokens_per_s_spec.iloc[0] > t.tokens_per_s_plain.iloc[0]
    assert t.tokens_per_s_spec.iloc[1] < t.tokens_per_s_plain.iloc[1]


def test_fit_flags_follow_capacity():
    dep = Deployment.build()
    cap = capacity(dep, 8192)
    t = throughput_table(
        dep,
        0.8,
        [cap.max_batch_with_draft, cap.max_batch_with_draft + 1, cap.max_batch_without_draft + 1],
        1128,
        max_context=8192,
    )
    assert t.fits_with_draft.tolist() == [True, False, False]
    assert t.fits_without_draft.tolist() == [True, True, False]


def test_max_context_below_the_mean_context_is_refused(capsys):
    from specsim.cli.main import main

    assert main(["optimal-gamma", "--context", "4096", "--max-context", "1024", "--timing", "roofline"]) == 2
    err = capsys.readouterr().err
    assert (
        len(err.strip().splitlines()) == 1 and "--max-context (1024) must be at least the mean --context (4096)" in err
    )


def test_capacity_to_dict_is_every_field_under_its_own_name():
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    cap = capacity(Deployment.build(), 8192)
    fields = [
        "memory_bytes",
        "usable_bytes",
        "target_weight_bytes",
        "draft_weight_bytes",
        "target_kv_bytes_per_seq",
        "draft_kv_bytes_per_seq",
        "context_tokens",
        "gpus",
        "speculating_usable_bytes",
        "memory_basis",
        "memory_utilization",
        "usable_share",
        "start_up_bytes",
        "max_batched_tokens",
        "max_num_seqs",
        "target_fits",
        "both_fit",
        "max_batch_without_draft",
        "max_batch_with_draft",
    ]
    assert cap.to_dict() == {name: getattr(cap, name) for name in fields}
    # The share used is said even where none was given (the engine's own: vLLM 0.33's 0.92 less its start-up), and for
    # a target alone too (no speculating share of its own: the plain one).
    from specsim.engines.vllm import start_up

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", None, decode_only=True, engine="vllm@0.33.0")
    own = 0.92 - start_up(dep.hardware, dep.target).bytes / dep.hardware.memory_bytes
    alone = capacity(dep, 1128)
    assert dataclasses.replace(alone, speculating_usable_bytes=None).usable_share["speculating"] == pytest.approx(own)
    spec = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0")
    assert capacity(spec, 1128).usable_share == {
        "plain": pytest.approx(own, abs=1e-12),
        "speculating": pytest.approx(own, abs=1e-12),
    }


def test_throughput_table_columns_are_consistent_with_each_other():
    # Per-sequence rates are the reciprocal of latency, device rates multiply by the batch, gamma stays in range.
    from specsim.serving.capacity import throughput_table
    from specsim.speculation.deployment import Deployment

    t = throughput_table(Deployment.build(), 0.9, [1, 8, 64], 1128, gamma_max=2)
    np.testing.assert_allclose(t.tokens_per_s_seq_spec, 1.0 / t.latency_spec_s, rtol=1e-12)
    np.testing.assert_allclose(t.tokens_per_s_seq_plain, 1.0 / t.latency_plain_s, rtol=1e-12)
    np.testing.assert_allclose(t.tokens_per_s_spec, t.batch * t.tokens_per_s_seq_spec, rtol=1e-12)
    np.testing.assert_allclose(t.speedup, t.latency_plain_s / t.latency_spec_s, rtol=1e-12)
    assert t.batch.dtype.kind == "i" and t.batch.tolist() == [1, 8, 64]
    assert t.gamma.max() == 2  # at alpha 0.9 the unconstrained optimum is larger: gamma_max is respected


def test_capacity_accepts_its_boundaries_and_refuses_past_them():
    from specsim.engines.vllm import start_up
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    dep = Deployment.build()
    full = capacity(dep, 1, 1.0)  # all of the memory less vLLM's start-up, one token per sequence
    assert full.usable_bytes == pytest.approx(full.memory_bytes - start_up(dep.hardware, dep.target).bytes, rel=1e-12)
    assert full.context_tokens == 1
    for util in (0.0, 1.0001):
        with pytest.raises(ValueError, match=r"memory utilization must be in \(0, 1\]"):
            capacity(dep, 1128, util)
    for context in (0, 1.5, True):
        with pytest.raises(ValueError, match="context must be an integer >= 1 token"):
            capacity(dep, context)


def _sglang(hardware, target, draft, engine, **options):
    return Deployment.build(hardware, target, draft, engine=engine, target_options=options or None)


def test_sglang_takes_its_own_share_of_memory_as_its_source_computes_it():
    # By hand from SGLang's server_args (MiB; gpu_mem the device's nvidia-smi total): mem_fraction_static =
    # round((gpu_mem - reserved) / gpu_mem, 3), reserved = 512 + 1.5 chunked_prefill_size + 2 cuda_graph_max_bs
    # + 1024 TP / 8 + prefill graphs (8 MiB per captured size, 1.5 GiB with MLA; from 0.5.10), at least 10 GiB over
    # 60 GiB, plus what a speculating server of 0.5.10-0.5.13 sets aside (4 GiB for a head, 6 GiB for a draft model).
    def share(dep, **kw):
        cap = capacity(dep, 1024, **kw)
        spec = cap.usable_bytes if cap.speculating_usable_bytes is None else cap.speculating_usable_bytes
        return cap.usable_bytes / cap.memory_bytes, (cap.usable_bytes - spec) / 2**20

    h100 = 81_559.0
    sizes_8k = 8 + 14 + 8 + 8 + 12 + 8  # captured prefill sizes up to 8192: 4..32/4, 48..256/16, ..., 4608..8192/512
    plain = 512 + 1.5 * 8192 + 2 * 256 + 1024 / 8 + 8 * sizes_8k
    assert share(_sglang("h100-sxm", "llama-3.1-8b", "eagle3", "sglang@0.5.23")) == (
        pytest.approx(round((h100 - plain) / h100, 3), abs=1e-12),
        0.0,
    )
    # 0.5.12 sets 4 GiB more aside for an EAGLE-3 head, 6 GiB for a draft model, none for n-gram.
    for draft, extra in (("eagle3", 4096), ("llama-3.2-1b", 6144), ("ngram", 0)):
        got, reserve = share(_sglang("h100-sxm", "llama-3.1-8b", draft, "sglang@0.5.12"))
        assert got == pytest.approx(round((h100 - plain) / h100, 3), abs=1e-12), draft
        spec = round((h100 - plain - extra) / h100, 3)
        assert reserve == pytest.approx((got - spec) * h100, rel=1e-9), draft
    # An MLA target at TP 8 on an H200: the MLA prefill graphs' 1.5 GiB and the TP term.
    h200 = 143_771.0
    mla = 512 + 1.5 * 8192 + 2 * 512 + 1024 + 1536
    got, _ = share(_sglang("h200", "deepseek-v3", "mtp", "sglang@0.5.23", tp=8, weight_dtype="fp8"))
    assert got == pytest.approx(round((h200 - mla) / h200, 3), abs=1e-12)
    # A 32 GiB GPU: 0.5.20 raised its chunked_prefill_size to 4096 and cuda_graph_max_bs to 48; no 10 GiB floor.
    r5090 = 32_607.0
    sizes_4k, sizes_2k = 8 + 14 + 8 + 8 + 12, 8 + 14 + 8 + 8 + 4
    new = 512 + 1.5 * 4096 + 2 * 48 + 1024 / 8 + 8 * sizes_4k
    old = 512 + 1.5 * 2048 + 2 * 24 + 1024 / 8 + 8 * sizes_2k
    assert share(_sglang("rtx-5090", "llama-3.2-1b", None, "sglang@0.5.23"))[0] == pytest.approx(
        round((r5090 - new) / r5090, 3), abs=1e-12
    )
    assert share(_sglang("rtx-5090", "llama-3.2-1b", None, "sglang@0.5.17"))[0] == pytest.approx(
        round((r5090 - old) / r5090, 3), abs=1e-12
    )
    # ROCm runs no prefill graphs; 0.4.10.post1 took a table (32 GiB past 160 GiB) and 2 GiB for any drafter.
    mi300x = 196_608.0
    got, reserve = share(_sglang("mi300x", "deepseek-v3", "mtp", "sglang@0.4.10", tp=8, weight_dtype="fp8"))
    assert got == pytest.approx(round((mi300x - 32 * 1024) / mi300x, 3), abs=1e-12)
    assert reserve == pytest.approx((got - round((mi300x - 34 * 1024) / mi300x, 3)) * mi300x, rel=1e-9)
    # A share given is the share taken, speculating or not (SGLang's --mem-fraction-static), and vLLM takes its own:
    # 0.9 before 0.20.0, 0.92 from (vllm/config/cache.py), less its start-up (for a dense target the same term at
    # every release: its one measured sampler figure is applied to all of them).
    from specsim.engines.vllm import start_up

    assert share(_sglang("h100-sxm", "llama-3.1-8b", "eagle3", "sglang@0.5.12"), memory_utilization=0.85) == (0.85, 0.0)
    for engine, own in (("vllm@0.33.0", 0.92), ("vllm@0.20.0", 0.92), ("vllm@0.19.0", 0.9), ("vllm@0.10", 0.9)):
        dep = _sglang("h100-sxm", "llama-3.1-8b", "eagle3", engine)
        own -= start_up(dep.hardware, dep.target).bytes / dep.hardware.memory_bytes
        assert share(dep) == (pytest.approx(own, abs=1e-12), 0.0)
    # and from 0.34 (vllm, its newest) the whole device less the start-up and its extensible cache's margin
    dep = _sglang("h100-sxm", "llama-3.1-8b", "eagle3", "vllm")
    taken = start_up(dep.hardware, dep.target)
    own = 1.0 - (taken.bytes + max(2**30, 0.75 * taken.peak_bytes)) / dep.hardware.memory_bytes
    assert share(dep) == (pytest.approx(own, abs=1e-12), 0.0)


def test_the_budget_given_sizes_sglangs_reserve_and_the_reserve_costs_batch():
    # --chunked-prefill-size (the limits' max_batched_tokens) enters the activation term: 32768 tokens reserve 36 GiB
    # more than 8192 do, and 48 more captured prefill sizes; SGLang's smaller share holds fewer sequences than vLLM's
    # 0.9 on the same deployment.
    dep = _sglang("h100-sxm", "llama-3.1-8b", "eagle3", "sglang@0.5.23")
    small, large = capacity(dep, 4096, max_batched_tokens=8192), capacity(dep, 4096, max_batched_tokens=32768)
    sizes = 8 * (8 + 14 + 8 + 8 + 12 + 8 + 48)  # the captured prefill sizes run on to 32768 as well
    assert small.usable_bytes - large.usable_bytes == pytest.approx(
        (round((81_559 - 13_904) / 81_559, 3) - round((81_559 - 13_904 - 1.5 * 24_576 - sizes + 464) / 81_559, 3))
        * 81_559
        * 2**20,
        rel=1e-9,
    )
    vllm = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm"), 4096)
    assert small.max_batch_with_draft < vllm.max_batch_with_draft


def test_tensorrt_llm_gives_its_cache_a_share_of_what_the_weights_leave():
    # KV = f (M - W), f free_gpu_memory_fraction (0.9 unless given), W the weights of the target and, speculating, of
    # the drafter too (tensorrt_llm/_torch/pyexecutor/_util.py): by hand on an H100 for Qwen3-32B with an EAGLE-3 head.
    dep = Deployment.build("h100-sxm", "qwen3-32b", "eagle3", engine="trtllm")
    m, w_t, w_d = 81_559 * 2**20, dep.target.weight_bytes, dep.draft.weight_bytes
    for given, f in ((None, 0.9), (0.75, 0.75)):
        cap = capacity(dep, 4096, given)
        assert cap.free_bytes_without_draft == pytest.approx(f * (m - w_t), rel=1e-12)
        assert cap.free_bytes_with_draft == pytest.approx(f * (m - w_t - w_d), rel=1e-12)
    # More room than vLLM's 0.9 of the device leaves beside 65 GB of weights (18.0 GB against 11.5), and a drafter costs
    # f of its weights' bytes.
    vllm = capacity(Deployment.build("h100-sxm", "qwen3-32b", "eagle3", engine="vllm"), 4096)
    assert capacity(dep, 4096).max_batch_without_draft > vllm.max_batch_without_draft


def test_the_kv_cache_is_never_below_what_engines_printed_and_the_note_gives_how_far_above():
    # specsim counts the weights and not what an engine's start-up profiling also takes, so on public start-ups its
    # cache can only be larger than the engine's; the figures every capacity line prints are these rows' (rounded to
    # whole percents: 0.005).
    from specsim.calibration.kv_capacity import held_out, load_kv_public, predicted_gib
    from specsim.engines import REGISTRY
    from specsim.serving.capacity import kv_error_said

    rows = [r for r in load_kv_public() if held_out(r)]  # not the starts vLLM's start-up figures come from
    assert len(load_kv_public()) - len(rows) == 3
    engines = np.array([r["engine"].split("@")[0] for r in rows])
    over = np.array([predicted_gib(r) / r["kv_gib_printed"] - 1 for r in rows])
    assert (over > 0).all() and all(r["url"] for r in rows)
    measured = {name: e.kv_error for name, e in REGISTRY.items() if e.kv_error is not None}
    assert set(measured) == set(engines)
    for engine, (median, low, high, n) in measured.items():
        mine = over[engines == engine]
        assert mine.size == n, engine
        assert (np.median(mine), mine.min(), mine.max()) == pytest.approx((median, low, high), abs=0.005), engine
        assert f"on {n} public start-up" in kv_error_said(engine)
    assert "not measured on public start-ups" in kv_error_said("trtllm")


def test_a_recomputed_capacity_keeps_the_engines_own_rule_and_never_exceeds_the_gpu():
    # A hybrid target's answer resizes its scratch for the gammas it sets: the share stays the engine's own (SGLang's
    # speculating reserve, TensorRT-LLM's fraction of what the weights leave), not the plain share read back as given.
    from specsim.answers import deployment_capacity, gamma_answer

    for engine in ("sglang@0.5.12", "trtllm"):
        dep = Deployment.build("h200", "qwen3.5-27b", "eagle3", engine=engine)
        cap = deployment_capacity(dep, 1128, None, None)
        answer = gamma_answer(dep, 0.8, "alpha 0.8", [1, 64], 1128, 8, 0.0, cap)
        again = capacity(dep, 1128, None, answer.capacity.scratch_draft_tokens)
        assert "as given" not in answer.capacity.memory_basis, engine
        assert answer.capacity.max_batch_with_draft == again.max_batch_with_draft, engine
    # Weights past the GPU under TensorRT-LLM: no cache, and no more usable memory than the GPU has.
    big = capacity(Deployment.build("h100-sxm", "llama-3.1-70b", "llama-3.2-1b", engine="trtllm"), 1128)
    assert big.usable_bytes <= big.memory_bytes and not big.target_fits and big.max_batch_without_draft == 0
    # SGLang 0.5.10 turns the prefill graphs off for a speculating server (0.5.11 does not): its speculating reserve is
    # the plain one less those graphs (464 MiB at 8192 tokens) plus 4 GiB for a head.
    h100, plain = 81_559.0, 512 + 1.5 * 8192 + 2 * 256 + 1024 / 8 + 8 * 58
    for release, graphs in (("0.5.10", 0), ("0.5.11", 464)):
        cap = capacity(_sglang("h100-sxm", "llama-3.1-8b", "eagle3", f"sglang@{release}"), 1024)
        spec = round((h100 - (plain - 464 + graphs) - 4096) / h100, 3)
        assert cap.speculating_usable_bytes == pytest.approx(spec * cap.memory_bytes, rel=1e-12), release


@pytest.mark.parametrize(
    ("context", "shown"), [(1, "at 1 token 0.131 + 0.033 MB"), (8192, "at 8192 tokens 1.074 + 0.268 GB")]
)
def test_capacitys_memory_line_shows_a_short_contexts_kv_in_mb(context, shown, capsys):
    # 131,072 and 32,768 bytes a token (the hand-checked budget above): 0.131 + 0.033 MB at one token, where GB to three
    # places would print 0.000 + 0.000; 1.074 + 0.268 GB at 8192.
    from specsim.cli.main import main

    assert main(["capacity", "--context", str(context)]) == 0
    memory = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("memory"))
    assert memory.endswith(f"KV per sequence {shown}"), memory


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("--target", "deepseek-v3", "--tp", "8", "--draft", "mtp", "--hardware", "h200"),
        ("--target", "gpt-oss-120b", "--draft", "eagle3", "--hardware", "h200", "--context", "4096"),
    ],
)
def test_capacity_verbose_shows_how_each_models_weights_and_kv_per_token_are_counted(argv, capsys):
    # capacity -v printed what capacity printed: nothing of how the weights and the KV per sequence were counted.  The
    # lines give each model's parameters and storage, and its layers, heads and cache dtype; their bytes are the JSON's.
    import json
    import re

    from specsim.cli.main import main

    assert main(["capacity", *argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert main(["capacity", "-v", *argv]) == 0
    out = capsys.readouterr().out
    assert main(["capacity", *argv]) == 0
    assert ": KV " not in capsys.readouterr().out  # -v's alone
    said = [line for line in out.splitlines() if ": weights " in line or ": KV " in line]
    assert said == record["memory_counted"] and len(said) == 4
    weights = [float(re.search(r"= ([\d.]+) GB per GPU", line).group(1)) for line in said if ": weights " in line]
    assert weights == pytest.approx(
        [record["target_weight_bytes"] / 1e9, record["draft_weight_bytes"] / 1e9], abs=0.006
    )
    per_token = re.search(r"= ([\d,]+) bytes per token", said[1]).group(1)
    dep = Deployment.build(record["hardware"], record["target"], None if not argv else argv[argv.index("--draft") + 1],
                           target_options={"tp": 8} if "--tp" in argv else None)  # fmt: skip
    assert int(per_token.replace(",", "")) == dep.target.kv_bytes_per_token
    full = dep.target.n_full_layers == dep.target.n_attention_layers  # no window: a sequence holds per token x context
    if full:
        assert int(per_token.replace(",", "")) * record["context_tokens"] == pytest.approx(
            record["target_kv_bytes_per_seq"]
        )


@pytest.mark.parametrize(
    "argv",
    [
        ("--target", "glm-4.5-air", "--tp", "4", "--draft", "mtp"),  # the MTP layers read the target's vocabulary
        ("--target", "llama-3.1-8b", "--draft", "eagle3"),
    ],
)
def test_capacity_verbose_counts_the_parameters_its_weight_bytes_hold(argv, capsys):
    # Every model here stores all its weights at 16 bits, so a weights line's parameters x 2 bytes / TP are its GB per
    # GPU.  An MTP drafter's line said 3.62B parameters (the target's vocabulary matrices among them) = 2.38 GB per GPU
    # at TP 2: its bytes leave those matrices out, its count did not.
    import re

    from specsim.cli.main import main

    assert main(["capacity", "-v", *argv]) == 0
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
    tp = int(argv[argv.index("--tp") + 1]) if "--tp" in argv else 1
    lines = [line for line in capsys.readouterr().out.splitlines() if ": weights " in line and " parameters " in line]
    assert len(lines) == 2
    for line in lines:
        count, unit, gb = re.search(r"weights ([\d.]+)([KMBT]?) parameters .*= ([\d.]+) GB per GPU", line).groups()
        assert float(count) * scale[unit] * 2 / tp / 1e9 == pytest.approx(float(gb), rel=0.01, abs=0.006), line
