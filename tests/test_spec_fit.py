"""The engine's cost of speculating: the public rows, the fit the presets ship, its held-out error, and the answers
the fitted presets give (issue 18)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from specsim.calibration.public import (
    FIT_KINDS,
    SERIAL_PRESETS,
    evaluate,
    load_public_speculation,
    round_terms,
    specdecode_bench_speedup,
)
from specsim.engines import PRESETS, SpecHost
from specsim.engines.base import ROUNDING_DIGITS
from specsim.speculation.acceptance import alpha_from_acceptance_length
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma, speedup

#: Its module fixtures (the public rows evaluated under the hybrid source, about 5 s) are made once, on one worker: a
#: module spread over both workers makes them on each.
pytestmark = pytest.mark.xdist_group("spec-fit")


@pytest.fixture(scope="module")
def rows():
    return load_public_speculation()


@pytest.fixture(scope="module")
def fit_by_source(rows):
    """The public rows evaluated under a step-time source, by its name, made once per source for the module: the
    shipped-terms test reads the kernels' fit and the large MoE's tests take it by default, and each evaluated it
    (about 10 s a time on the 2-core machine)."""
    fits = {}

    def get(name):
        if name not in fits:
            fits[name] = evaluate(rows, name)
        return fits[name]

    return get


@pytest.fixture(scope="module")
def hybrid(fit_by_source):
    return fit_by_source("hybrid")


@pytest.fixture(scope="module")
def fit_under(fit_by_source):
    """The public fit under the step-time source a deployment takes (a large MoE target at TP 8 takes the measured
    kernels by default: specsim.timing.default_timing)."""
    return lambda dep: fit_by_source(dep.source.name)


def test_public_rows_cover_both_engines_several_sources_and_batches(rows):
    fit = rows[rows.kind.isin(FIT_KINDS)]
    assert set(fit.engine) == {"vllm", "sglang"}
    assert fit.groupby("engine").source.nunique().min() >= 2  # a source can be held out and the rest still fit
    batches = set(fit.batch) | set(fit.batch_to.dropna())
    assert batches >= {1, 4, 8, 32} and (rows.kind == "overlap_gain").sum() == 2 and (rows.kind == "plain").sum() >= 8
    assert rows.url.str.startswith("https://").all()
    # Every row names its hardware and whether the source stated it.
    assert rows.hardware_note.notna().all()


def test_rows_missing_what_their_kind_needs_or_of_an_unknown_kind_are_refused(rows, tmp_path):
    bad = rows.copy()
    bad.loc[0, "accept_length"] = np.nan
    bad.to_csv(tmp_path / "a.csv", index=False)
    with pytest.raises(ValueError, match=r"speedup rows \[0\] lack one of base, spec, accept_length"):
        load_public_speculation(tmp_path / "a.csv")
    other = rows.copy()
    other.loc[3, "kind"] = "guess"
    other.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(ValueError, match=r"unknown row kinds \['guess'\]"):
        load_public_speculation(tmp_path / "b.csv")


#: One step of the rounding SpecHost.rounded applies to each term (0.01 ms, 0.001 ms, 0.1 us, 0.1 us), seconds.
_ROUNDING_STEP_S = 10.0 ** -np.array(ROUNDING_DIGITS)


def _within_a_rounding_step(shipped: SpecHost, fitted: SpecHost) -> bool:
    """The shipped terms are the fit up to one step of its rounding: the least-squares optimum moves in the last
    printed digit between scipy releases (vLLM's per-sequence term with --timing kernels: 0.1516 us with scipy 1.17.1,
    0.1492 us with 1.18.1, which round to 0.2 and 0.1); a hand-edited constant is off by more."""
    gap = np.abs(np.array(dataclasses.astuple(shipped)) - np.array(dataclasses.astuple(fitted)))
    return bool(np.all(gap <= _ROUNDING_STEP_S * 1.000001))


def test_shipped_host_terms_are_the_fit_and_overlapping_versions_carry_them(hybrid, fit_by_source):
    kernels = fit_by_source("kernels")
    for engine, key in SERIAL_PRESETS.items():
        assert _within_a_rounding_step(PRESETS[key].spec, hybrid.fitted[engine]), engine
        assert _within_a_rounding_step(PRESETS[key].kernel_spec, kernels.fitted[engine]), engine
        # The overlapping versions do the same host work, hidden: same terms.
        assert PRESETS[f"{engine}@latest"].spec == PRESETS[key].spec
    assert PRESETS["vllm@0.14"].spec == PRESETS["vllm@0.10"].spec
    # The share of H spec v2 hides is the one fitted to its measured gains over spec v1, per step-time source.
    assert PRESETS["sglang@latest"].overlap_share == hybrid.shares["sglang"]
    assert PRESETS["sglang@latest"].kernel_overlap_share == kernels.shares["sglang"]


def test_held_out_error_per_engine_beats_what_specsim_printed_before(hybrid):
    # Mean over each engine's sources of the held-out mean absolute error: the terms fitted without a source predict
    # it better than specsim without engine round costs did (the whole draft-pass overhead, no host work).
    held, before = hybrid.error_by("source", "held_out"), hybrid.error_by("source", "before")
    engine_of = hybrid.table.drop_duplicates("source").set_index("source").engine
    by_engine = lambda s: s.groupby(engine_of[s.index]).mean()  # noqa: E731
    assert (by_engine(held) < by_engine(before)).all()
    assert by_engine(held)["sglang"] < 0.75 * by_engine(before)["sglang"]
    assert by_engine(held).max() < 12.0  # percent


def test_spec_v2_hides_a_share_of_the_host_work_that_predicts_the_other_rows_gain(hybrid):
    t = hybrid.table[hybrid.table.kind == "overlap_gain"]
    assert len(t) == 2 and (t.held_out > 1.0).all()
    # Measured 10.8% and 13.7% faster with spec v2.  Each row predicted with the share fitted on the other alone:
    # within 2% (a share that fitted one row by chance would miss the other's deployment, Llama-3.1-8B on an H100 at
    # 5 steps against DeepSeek-V3 at TP 8 with 3 MTP steps).
    assert ((t.held_out / t.measured_value - 1).abs() < 0.02).all()
    # Hiding all of H, as the model did before, overstates both gains by more than 15%.
    full = hybrid.terms.predict(hybrid.fitted["sglang"], hybrid.alphas, 1.0)[t.index]
    assert (full / t.measured_value.to_numpy() - 1 > 0.15).all()
    assert 0.2 < hybrid.shares["sglang"] < 0.6 and all(0.2 < v < 0.6 for v in hybrid.held_out_shares.values())


def test_specdecode_bench_peer_is_its_published_affine_model():
    row = pd.DataFrame(
        [
            {
                "target": "llama-3.1-8b",
                "hardware": "h100-sxm",
                "engine": "vllm",
                "drafter": "eagle",
                "kind": "speedup",
                "batch": 1,
                "steps": 3,
                "context": 512,
                "accept_length": 1.0,
                "batch_to": np.nan,
            }
        ]
    )
    # plain: 5.88590713 + 0.0210103 + 0.0201035 + 1.20683946 ms; round adds 3 tokens and the proposal.
    plain = 5.88590713e-3 + 2.10103129e-5 + 3.92645679e-8 * 512 + 1.20683946e-3
    rnd = (
        5.88590713e-3
        + 2.10103129e-5 * 4
        + 3.92645679e-8 * 512
        + 2.13526175e-3
        + 8.41429603e-7 * 4
        + 2.37768493e-9 * 512
        + 1.20683946e-3
    )
    assert specdecode_bench_speedup(row)[0] == pytest.approx(plain / rnd, rel=1e-12)
    other = row.assign(target="qwen3-32b")
    assert np.isnan(specdecode_bench_speedup(other)[0])


def test_round_terms_leave_the_host_work_out_and_price_the_drafters_passes_before_and_after(rows):
    one = rows[(rows.source == "vllm-20780") & (rows.kind == "speedup")].head(1).reset_index(drop=True)
    now, before = round_terms(one, "hybrid"), round_terms(one, "hybrid", before=True)
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.10")
    r = dep.round_time(1, 512, 2)
    assert now.passes[0, 0] == pytest.approx(float(r.passes_s), rel=1e-12)
    # Before: each of the 2 draft steps and the extend pass paid the roofline's whole 0.5 ms overhead, not 1/32 of it.
    assert before.passes[0, 0] - now.passes[0, 0] == pytest.approx(3 * 0.5e-3 * (1 - 1 / 32), rel=1e-9)
    assert now.predict(SpecHost())[0] == pytest.approx(2.36 * float(dep.decode(1, 512).total_s / r.passes_s), rel=1e-12)


# -- the answers the fitted presets give (issue 18) --------------------------------
#: The published EAGLE-3 head for Llama-3.1-8B at 3 steps: acceptance length 2.79 (vllm-project/vllm#20780).
EAGLE3_ALPHA = float(alpha_from_acceptance_length(2.79, 3))
BATCH = [1, 2, 4, 8, 16, 32, 64]


def _sglang_eagle3(version: str) -> Deployment:
    return Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine=f"sglang@{version}")


def test_sglang_spec_v1_loses_a_tenth_of_its_eagle3_speedup_from_batch_2_to_16():
    best = optimal_gamma(_sglang_eagle3("0.5"), EAGLE3_ALPHA, [2, 16], 512)
    assert best.speedup[1] <= 0.9 * best.speedup[0]


def test_the_overlapping_versions_fall_less_with_batch():
    def fall(dep):
        s = optimal_gamma(dep, EAGLE3_ALPHA, [2, 16], 512).speedup
        return s[1] / s[0]

    assert fall(_sglang_eagle3("latest")) > fall(_sglang_eagle3("0.5"))
    v10 = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.10")
    v14 = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", engine="vllm@0.14")
    s10, s14 = speedup(v10, EAGLE3_ALPHA, 3, [1, 32], 512), speedup(v14, EAGLE3_ALPHA, 3, [1, 32], 512)
    assert s14[1] / s14[0] > s10[1] / s10[0] and np.all(s14 > s10)


def test_host_work_lowers_every_speedup_and_never_makes_a_round_cheaper_than_its_passes():
    dep = _sglang_eagle3("0.5")
    r = dep.round_time(np.array(BATCH, float), 512, 4)
    assert np.all(r.total_s >= r.passes_s) and np.all(r.exposed_host_s > 0)
    # Spec v2 hides the share h of H it was fitted to hide: max(t_pass, h H) + (1 - h) H, between the serial round
    # and one that hides all of H.
    v2 = _sglang_eagle3("latest").round_time(np.array(BATCH, float), 512, 4)
    h = PRESETS["sglang@latest"].overlap_share
    assert 0.0 < h < 1.0 and v2.overlapped == h
    np.testing.assert_allclose(v2.total_s, np.maximum(v2.passes_s, h * v2.host_s) + (1 - h) * v2.host_s, rtol=1e-15)
    assert np.all(np.maximum(v2.passes_s, v2.host_s) <= v2.total_s) and np.all(v2.total_s < v2.passes_s + v2.host_s)


def test_presets_state_the_batch_range_their_rows_span(rows):
    fit = rows[rows.kind.isin(FIT_KINDS)]
    top = fit.assign(top=fit[["batch", "batch_to"]].max(axis=1)).groupby("engine").top.max()
    assert f"at batch 1-{int(top['vllm'])} (beyond: extrapolated)" in PRESETS["vllm@0.10"].spec_basis
    assert f"at batch 1-{int(top['sglang'])} (beyond: extrapolated)" in PRESETS["sglang@0.5"].spec_basis


def test_explain_prints_a_round_whose_parts_add_up_and_whose_speedup_is_the_models(capsys):
    import json

    from specsim.cli.main import main

    assert (
        main(
            [
                "explain",
                "--draft",
                "eagle3",
                "--engine",
                "sglang@0.5",
                "--batch",
                "1,16",
                "--alpha",
                "0.75",
                "--gamma",
                "3",
                "--context",
                "512",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    dep = _sglang_eagle3("0.5")
    s = speedup(dep, 0.75, 3, [1, 16], 512)
    for row, expect in zip(out, s):
        assert sum(row["parts_s"].values()) == pytest.approx(row["t_round_s"], rel=1e-12)
        assert row["speedup"] == pytest.approx(float(expect), rel=1e-12) and row["gamma"] == 3
        assert any("sglang@0.5" in line for line in row["provenance"])
    assert out[1]["parts_s"]["engine host time"] > out[0]["parts_s"]["engine host time"] > 0


# -- a large MoE target with an EAGLE-3 head at TP 8 (SGLang's AutoSpec sweep, sgl-project/sglang#22246) -------------
_SWEEPS = {
    "sglang-22246": ("qwen3-235b-a22b", {}, "eagle3"),
    "sglang-22246-glm": ("glm-4.7", {"weight_dtype": "fp8"}, "mtp"),
}


def _moe(source: str, host: SpecHost | None = None) -> Deployment:
    target, options, drafter = _SWEEPS[source]
    engine = (
        PRESETS["sglang@0.5"]
        if host is None
        else dataclasses.replace(PRESETS["sglang@0.5"], spec=host, kernel_spec=host)
    )
    # SGLang shards the drafter like the target.
    return Deployment.build(
        "h200", target, drafter, engine=engine, target_options={"tp": 8, **options}, draft_options={"tp": 8}
    )


def test_best_steps_for_a_235b_moe_with_an_eagle3_head_at_tp8_do_not_grow_with_batch(fit_under):
    # At the acceptance the sweep implies, with the shipped SGLang spec v1 preset and the default step-time source (the
    # measured kernels for this target; the acceptance fitted under it): the steps SGLang's own sweep found best (4
    # from batch 1 to 16, 3 at 32, 2 at 64) are within 1% of specsim's best speedup at every batch, and specsim's best
    # ends below where it starts.  Without the per-sequence-and-step term they are 3-8% short at batch 16-64 (specsim
    # would pick 6 at 16 and 4 at 64).  Within 1%, not the argmax itself: the optimum is flat, and the kernel source's
    # argmax moves between ties 0.2% apart (3 or 4 at batch 2, 4 or 5 at 16).
    batches = [1, 2, 4, 8, 16, 32, 64]
    found = dict(zip(batches, (4, 4, 4, 4, 4, 3, 2)))
    dep = _moe("sglang-22246")
    alpha = fit_under(dep).alphas["sglang-22246"]

    def shortfall(d):
        best = optimal_gamma(d, alpha, batches, 512, gamma_max=16)
        at_found = [float(np.squeeze(speedup(d, alpha, found[b], b, 512))) for b in batches]
        return best.gamma, 1 - np.array(at_found) / np.asarray(best.speedup, dtype=float)

    gammas, short = shortfall(dep)
    assert np.all(short < 0.01) and gammas[-1] < gammas[0], (gammas.tolist(), short.round(4).tolist())
    bare = dataclasses.replace(dep.engine.spec, seq_step_s=0.0)
    _, short = shortfall(dep.with_engine(dataclasses.replace(dep.engine, spec=bare)))
    assert short.max() > 0.02, short.round(4).tolist()


@pytest.mark.parametrize("source", sorted(_SWEEPS))
def test_the_held_out_steps_choice_loses_little_of_the_measured_best_throughput(fit_under, rows, source):
    # Each sweep held out: terms fitted without it (under the source the deployment takes by default), its acceptance
    # fitted alone.  Choosing the steps (within the range the sweep measured) by the model costs at most 5% of the best
    # measured throughput at any batch.
    sweep = rows[rows.source == source]
    steps = sorted(set(sweep.steps.astype(int)) | {3})
    measured = {(int(r.batch), int(r.steps)): r.spec for _, r in sweep.iterrows()}
    measured |= {(int(r.batch), 3): r.base for _, r in sweep.iterrows()}
    fit = fit_under(_moe(source))
    dep = _moe(source, fit.held_out[source])
    alpha = fit.held_out_alphas[source]
    for b in sorted(set(sweep.batch.astype(int))):
        have = [s for s in steps if (b, s) in measured]
        pick = max(have, key=lambda s: float(speedup(dep, alpha, s, [b], 512)[0]))
        assert measured[(b, pick)] >= 0.95 * max(measured[(b, s)] for s in have), (source, b, pick)


def test_under_sglang_the_drafter_is_sharded_like_the_target_by_default(capsys):
    from specsim.cli.main import main

    argv = [
        "optimal-gamma",
        "--target",
        "qwen3-235b-a22b",
        "--draft",
        "eagle3",
        "--tp",
        "8",
        "--hardware",
        "h200",
        "--batch",
        "1,64",
        "--alpha",
        "0.6",
        "--json",
    ]
    assert main(argv + ["--engine", "sglang@0.5"]) == 0
    sglang = capsys.readouterr().out
    assert main(argv + ["--engine", "sglang@0.5", "--draft-tp", "1"]) == 0
    forced = capsys.readouterr().out
    assert main(argv + ["--engine", "vllm@0.10"]) == 0
    vllm = capsys.readouterr().out
    # SGLang has no draft TP of its own: TP 8 whatever --draft-tp says; vLLM builds an EAGLE head at the target's TP too
    # (its draft_tensor_parallel_size is ignored for heads, vllm-project/vllm#31345): each run names the choice.
    for out in (sglang, forced, vllm):
        assert "KV bf16, TP 8); plus a draft-extend pass" in out
    assert "draft at TP 8: SGLang's draft worker shares the target's tensor-parallel group" in sglang
    assert "--draft-tp 1 does not apply" in forced and "--draft-tp 1 does not apply" not in sglang
    assert "draft at TP 8: vLLM builds EAGLE and MTP heads at the target's TP" in vllm


def test_explain_says_each_batch_once():
    from specsim.answers.anatomy import round_anatomy

    dep = _sglang_eagle3("0.5")
    one = round_anatomy(dep, 0.75, "alpha 0.75", [4], 512, gamma=3).findings()
    two = round_anatomy(dep, 0.75, "alpha 0.75", [4, 16], 512, gamma=3).findings()
    assert [line.split(":")[0] for line in one if line.startswith("batch ")] == ["batch 4"]
    assert [line.split(":")[0] for line in two if line.startswith("batch ")] == ["batch 4", "batch 16"]
