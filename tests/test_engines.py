"""Engine presets are what the fit on public TPOT gives, and the fidelity table holds its targets."""

from __future__ import annotations

import re

import pytest

from specsim.engines import ENGINES, EnginePreset, SpecHost, get_engine
from specsim.fidelity import evaluate, load_public_tpot


@pytest.fixture(scope="module")
def public():
    return load_public_tpot()


@pytest.fixture(scope="module")
def hybrid(public):
    return evaluate(public, "hybrid (default)")


def test_public_rows_span_two_engines_two_devices_two_models(public):
    assert len(public) >= 100
    assert {"trtllm", "sglang"} <= set(public.backend) and set(public.hardware) == {"h100-sxm", "h200"}
    assert set(public.model) == {"llama-3.1-8b", "qwen3-32b"}
    assert 0.35 < public.holdout.mean() < 0.65


def test_shipped_presets_are_the_fit(hybrid, public):
    fit = hybrid.engine_iteration_s
    for name in ("vllm", "sglang", "trtllm"):
        assert ENGINES[name].iteration_s == pytest.approx(fit[name], abs=0.01e-3), name
    kernels = evaluate(public, "kernels").engine_iteration_s
    for name in ("vllm", "sglang", "trtllm"):
        assert ENGINES[name].kernel_iteration_s == pytest.approx(kernels[name], abs=0.01e-3), name


def test_shipped_collective_times_are_the_multi_gpu_fit_and_help_held_out_rows(hybrid, public):
    from specsim.fidelity import evaluate_out_of_sample, fit_collectives, load_out_of_sample_tpot

    multi = load_out_of_sample_tpot()
    assert (multi.tp > 1).sum() >= 300 and 0.35 < multi.holdout.mean() < 0.65
    fit = fit_collectives(multi, "hybrid (default)", hybrid)
    for name in ("vllm", "sglang", "trtllm"):
        assert ENGINES[name].collective_s == pytest.approx(fit[name], abs=0.1e-6), name
    kernels = fit_collectives(multi, "kernels", evaluate(public, "kernels"))
    for name in ("vllm", "sglang", "trtllm"):
        assert ENGINES[name].kernel_collective_s == pytest.approx(kernels[name], abs=0.1e-6), name
    held = lambda r: r[r.holdout & (r.tp > 1)].error.abs().mean()  # noqa: E731
    physics = held(evaluate_out_of_sample(multi, "hybrid (default)", hybrid))
    engine = held(evaluate_out_of_sample(multi, "hybrid (default)", hybrid, fit))
    assert engine < 0.2 and engine < 0.7 * physics  # fractions: held-out multi-GPU TPOT error


def test_default_source_beats_the_bare_article_roofline_on_held_out_rows(hybrid, public):
    bare = evaluate(public, "roofline (article profile)", fit_engine=False)
    assert hybrid.mape() < 0.9 * bare.mape()
    assert hybrid.mape() < 10.0  # percent, the held-out goal
    assert hybrid.mape(True, "backend")["trtllm"] < 6.0


def test_bad_presets_and_names():
    with pytest.raises(ValueError, match="iteration_s"):
        EnginePreset("x", "vllm", -1.0, 0.0, "test")
    with pytest.raises(ValueError, match="seq_s must be a finite time"):
        EnginePreset("x", "vllm", 0.0, 0.0, "test", spec=SpecHost(0.0, 0.0, float("nan")))
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        get_engine("tgi")


@pytest.mark.parametrize("spec, key", [("vllm", "vllm@latest"), ("vllm@0.10", "vllm@0.10"), ("vllm@0.11", "vllm@0.10"),
                                       ("vllm@0.13.2", "vllm@0.10"), ("VLLM@0.14.0", "vllm@0.14"), ("vllm@0.19", "vllm@0.14"),
                                       ("sglang", "sglang@latest"), ("sglang@0.4", "sglang@0.5"), ("sglang@0.5.3", "sglang@0.5"),
                                       ("sglang@spec-v2", "sglang@latest"), ("sglang@spec-v1", "sglang@0.5"),
                                       ("trtllm", "trtllm@latest"), ("none", "none")])
def test_versions_resolve_to_the_preset_covering_them(spec, key):
    assert get_engine(spec).key == key


@pytest.mark.parametrize("spec, message", [("vllm@0.9", "no vllm preset for version '0.9'; known: 0.10-0.13, 0.14-0.19, latest"),
                                           ("vllm@1.0", "no vllm preset for version '1.0'"), ("sglang@0.6", "no sglang preset"),
                                           ("vllm@abc", "no vllm preset for version 'abc'"), ("none@1", "has no versions"),
                                           ("trtllm@0.20", "known: latest")])
def test_versions_no_preset_covers_are_refused_with_the_known_ones(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        get_engine(spec)


def test_versions_differ_only_in_what_they_overlap():
    serial, chains, both = get_engine("vllm@0.10"), get_engine("vllm@0.14"), get_engine("vllm@latest")
    assert serial.spec == chains.spec == both.spec and serial.iteration_s == both.iteration_s
    assert not serial.overlaps("eagle3") and chains.overlaps("eagle3") and chains.overlaps("mtp")
    assert not chains.overlaps("draft_model") and both.overlaps("draft_model") and not both.overlaps("ngram")
    v2 = get_engine("sglang@latest")
    assert v2.overlaps("eagle3", 1) and not v2.overlaps("eagle3", 4) and not get_engine("sglang@0.5").overlaps("eagle3", 1)
    assert "vllm@0.10" in serial.describe() and "serial" in serial.describe() and "overlapped" in chains.describe()


def test_overrides_replace_only_the_terms_given_and_refuse_bad_ones():
    base = get_engine("sglang@0.5")
    out = base.with_spec(round_ms=1.5, seq_us=20.0)
    assert out.spec == SpecHost(1.5e-3, base.spec.step_s, 20e-6) and out.kernel_spec.round_s == 1.5e-3
    assert "--engine-round, --engine-seq set by the user" in out.spec_basis
    assert base.with_spec() is base
    assert base.with_spec(overlap=True).overlaps("draft_model") and not base.with_spec(overlap=False).overlaps("eagle3")
    for bad in (-1.0, float("inf"), float("nan"), 2e3):
        with pytest.raises(ValueError, match="round_s must be a finite time in"):
            base.with_spec(round_ms=bad)
