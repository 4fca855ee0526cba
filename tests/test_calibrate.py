"""Calibration: recovers known parameters, judges on held-out points, writes provenance, rejects bad CSVs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from specsim.calibration.profile import calibrate, predict
from specsim.cli.main import main
from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.timing.measurements import load_measurements
from specsim.timing.roofline import step_time


def synthetic(tmp_path, truth, noise=0.0, seed=0, models=("llama-3.2-1b", "llama-3.1-8b")):
    """Step times from a known profile, with multiplicative noise, in the CSV form calibrate reads."""
    rng = np.random.default_rng(seed)
    rows = [
        {"model": m, "batch": b, "tokens_per_seq": q, "context": L}
        for m in models
        for b in (1, 4, 16, 64, 128, 256, 512)
        for q in (1, 3, 5, 9)
        for L in (256, 2048, 8192)
    ]
    df = pd.DataFrame(rows)
    df["median_s"] = 0.0
    df["device_name"] = "synthetic"
    for m in models:
        sel = df.model == m
        t = step_time(
            truth,
            get_model(m),
            df[sel].batch.to_numpy(float),
            df[sel].tokens_per_seq.to_numpy(float),
            df[sel].context.to_numpy(float),
        )
        df.loc[sel, "median_s"] = t.total_s * np.exp(rng.normal(0, noise, sel.sum()))
    path = tmp_path / "measured.csv"
    df.to_csv(path, index=False)
    return path


def test_recovers_known_parameters_exactly_without_noise(tmp_path):
    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(
        base, compute_eff=0.47, bandwidth_eff=0.71, overhead_s=0.12e-3, per_layer_overhead_s=9e-6
    )
    result = calibrate(synthetic(tmp_path, truth), base, per_layer="yes")
    p = result.profile
    assert p.compute_eff == pytest.approx(0.47, rel=1e-3)
    assert p.bandwidth_eff == pytest.approx(0.71, rel=1e-3)
    assert p.overhead_s == pytest.approx(0.12e-3, abs=2e-6)
    assert p.per_layer_overhead_s == pytest.approx(9e-6, rel=1e-2)
    assert result.summary()["holdout_after"]["mape"] < 1e-3


def test_noisy_fit_reaches_the_noise_floor_on_held_out_points(tmp_path):
    # 5% log-normal noise: held-out MAPE of the true model is about 4%; the fit must not be much worse,
    # and far better than the article's preset on these synthetic "measurements".
    base = load_hardware("h200")
    truth = dataclasses.replace(
        base, compute_eff=0.55, bandwidth_eff=0.7, overhead_s=0.05e-3, per_layer_overhead_s=15e-6
    )
    result = calibrate(synthetic(tmp_path, truth, noise=0.05, seed=3), base, holdout=0.3, seed=1)
    s = result.summary()
    assert s["holdout_after"]["mape"] < 0.06
    assert s["holdout_after"]["mape"] < 0.5 * s["holdout_before"]["mape"]
    assert s["holdout_points"] == round(0.3 * s["points"])


def test_per_layer_term_only_when_the_data_call_for_it(tmp_path):
    base = load_hardware("h100-sxm")
    flat = dataclasses.replace(base, compute_eff=0.5, bandwidth_eff=0.7, overhead_s=0.3e-3, per_layer_overhead_s=0.0)
    assert not calibrate(synthetic(tmp_path, flat), base).per_layer
    layered = dataclasses.replace(flat, overhead_s=0.0, per_layer_overhead_s=20e-6)
    assert calibrate(synthetic(tmp_path, layered), base).per_layer


def test_cli_writes_profile_with_provenance_and_residual_plot(tmp_path, capsys):
    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(base, compute_eff=0.5, bandwidth_eff=0.75, overhead_s=0.2e-3)
    path = synthetic(tmp_path, truth, noise=0.02)
    out = tmp_path / "mine.yaml"
    assert main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    data = yaml.safe_load(out.read_text())
    assert data["name"] == "h100-sxm-calibrated" == report["name"] and data["calibration"]["source"] == "measured.csv"
    assert len(data["calibration"]["source_sha256"]) == 64
    assert data["calibration"]["holdout_mape_after"] == pytest.approx(report["holdout_after"]["mape"], abs=1e-6)
    assert (tmp_path / "mine-residuals.png").read_bytes()[:4] == b"\x89PNG"
    # The written profile is usable by every command.
    assert main(["optimal-gamma", "--hardware", str(out), "--batch", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["gamma"] >= 1


def test_builtin_profiles_are_never_overwritten(tmp_path, capsys):
    from specsim.describe.hardware import builtin_dir

    base = load_hardware("h100-sxm")
    path = synthetic(tmp_path, base)
    target = builtin_dir() / "h100-sxm.yaml"
    before = target.read_bytes()
    assert main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(target)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert target.read_bytes() == before
    assert (
        main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(tmp_path / "x.yaml"), "--name", "h200"])
        == 2
    )
    assert "built-in datasheet profile" in capsys.readouterr().err


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda df: df.drop(columns=["median_s"]), "missing column(s) median_s"),
        (lambda df: df.drop(columns=["model"]), "missing column(s) model"),
        (lambda df: df.head(5), "calibration needs at least 8"),
        (
            lambda df: df.assign(median_s=df.median_s.where(df.index != 3, np.nan)),
            "missing or non-numeric value at data row 4",
        ),
        (lambda df: df.assign(median_s=df.median_s.where(df.index != 2, -1.0)), "step times must be > 0"),
        (
            lambda df: df.assign(batch=df.batch.astype(object).where(df.index != 0, "x")),
            "column batch has a missing or non-numeric",
        ),
        (lambda df: df.assign(model="gpt-9"), "unknown model 'gpt-9'"),
    ],
)
def test_bad_csvs_are_clear_errors(tmp_path, capsys, edit, message):
    path = synthetic(tmp_path, load_hardware("h100-sxm"))
    edit(pd.read_csv(path)).to_csv(path, index=False)
    code = main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(tmp_path / "p.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.yaml").exists()


def test_empty_or_missing_file(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="not a readable CSV"):
        load_measurements(tmp_path / "empty.csv")
    with pytest.raises(ValueError, match="does not exist"):
        load_measurements(tmp_path / "none.csv")


def test_committed_calibrated_profiles_meet_the_target():
    # hardware/measurements: calibrated on composed public vLLM kernel timings (see its README).
    for name in ("h100-sxm-vllm", "h200-vllm", "a100-sxm-80gb-vllm"):
        cal = load_hardware(name).calibration
        assert cal["holdout_mape_after"] <= 0.10, name
        assert cal["holdout_mape_after"] < cal["holdout_mape_before"], name
    assert load_hardware("cpu").calibration["devices"][0].startswith("CPU")


def test_committed_profiles_reproduce_from_the_committed_tables(repo):
    # Recalibrating the committed table gives the committed profile (same data, split and seed).
    result = calibrate(
        repo / "hardware" / "measurements" / "h200-vllm-kernel-steps.csv", load_hardware("h200"), name="h200-vllm"
    )
    committed = load_hardware("h200-vllm")
    assert result.profile.compute_eff == pytest.approx(committed.compute_eff, rel=1e-6)
    assert result.profile.bandwidth_eff == pytest.approx(committed.bandwidth_eff, rel=1e-6)
    assert result.profile.overhead_s == pytest.approx(committed.overhead_s, rel=1e-6, abs=1e-12)


def test_predict_uses_each_rows_model(tmp_path):
    base = load_hardware("h100-sxm")
    df = load_measurements(synthetic(tmp_path, base))
    np.testing.assert_allclose(predict(base, df), df.measured_s, rtol=1e-12)


def test_predict_groups_rows_by_shape_not_by_name(tmp_path):
    # One model name at two dtypes: each half must be predicted with its own weight bytes.
    import numpy as np
    import pandas as pd

    from specsim.calibration.profile import predict
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing.measurements import load_measurements
    from specsim.timing.roofline import step_time

    hw = load_hardware("h100-sxm")
    rows = []
    for dtype in ("bf16", "fp8"):
        m = get_model("llama-3.2-1b", weight_dtype=dtype, kv_dtype=dtype)
        for b in (1, 8, 64, 256):
            rows.append(
                {
                    "model": "llama-3.2-1b",
                    "batch": b,
                    "tokens_per_seq": 1,
                    "context": 512,
                    "dtype": dtype,
                    "median_s": float(step_time(hw, m, b, 1, 512).total_s),
                }
            )
    pd.DataFrame(rows).to_csv(tmp_path / "m.csv", index=False)
    df = load_measurements(tmp_path / "m.csv")
    np.testing.assert_allclose(predict(hw, df), df["measured_s"].to_numpy(), rtol=1e-12)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(base, compute_eff=0.5, bandwidth_eff=0.75, overhead_s=0.2e-3)
    return calibrate(synthetic(tmp_path_factory.mktemp("fit"), truth, noise=0.02), base)


def test_residual_figure_draws_the_errors_it_reports(fitted):
    from specsim.figures.plots import plot_residuals

    fig = plot_residuals(fitted)
    before, after = fig.axes
    assert before.get_shared_y_axes().joined(before, after) and before.get_xscale() == "log"
    for ax, which in ((before, "before"), (after, "after")):
        e = np.abs(fitted.errors(which, True))
        assert f"held-out MAPE {e.mean():.1%}, worst {e.max():.1%}" in ax.get_title()
        drawn = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
        data = fitted.data
        expected = 100.0 * (data[f"{which}_s"] / data["measured_s"] - 1.0)
        np.testing.assert_allclose(np.sort(drawn), np.sort(expected.to_numpy()), rtol=1e-12)
        xs = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections])
        np.testing.assert_allclose(np.sort(xs), np.sort((data.batch * (1 + 0.04 * data.tokens_per_seq)).to_numpy()))
    labels = [t.get_text() for t in after.get_legend().get_texts()]
    assert {"llama-3.2-1b, held out", "llama-3.2-1b, fitted", "llama-3.1-8b, held out", "llama-3.1-8b, fitted"} == set(
        labels
    )
    assert "predicted / measured - 1" in before.get_ylabel()


def test_implausible_flags_each_kind_of_bad_fit(fitted):
    from specsim.calibration.profile import implausible

    assert implausible(fitted) == []  # a clean fit of the data's own model
    at_bound = dataclasses.replace(fitted, profile=dataclasses.replace(fitted.profile, compute_eff=1.0))
    assert any("compute_eff = 1.000 sits at its bound" in w for w in implausible(at_bound))
    floor = dataclasses.replace(fitted, profile=dataclasses.replace(fitted.profile, bandwidth_eff=0.02))
    assert any("bandwidth_eff = 0.020 sits at its bound" in w for w in implausible(floor))
    worse = fitted.data.assign(after_s=fitted.data.before_s * 1.01 + fitted.data.measured_s * 0.3)
    warnings = implausible(dataclasses.replace(fitted, data=worse))
    assert any("is large" in w for w in warnings) and any("worse than the base profile" in w for w in warnings)
    same = fitted.data.assign(after_s=fitted.data.before_s)
    assert not any("worse than the base" in w for w in implausible(dataclasses.replace(fitted, data=same)))


@pytest.mark.parametrize(
    "text, value",
    [
        ("True", True),
        (" true ", True),
        ("1", True),
        ("1.0", True),
        (True, True),
        ("False", False),
        ("FALSE", False),
        ("0", False),
        ("0.0", False),
        (np.bool_(False), False),
    ],
)
def test_csv_booleans_are_read_strictly(text, value):
    from specsim.timing.measurements import _flag

    assert _flag(text, "tie_embeddings", "here") is value


@pytest.mark.parametrize("text", ["yes", "no", "", "2", "nan"])
def test_csv_booleans_refuse_anything_else(text):
    from specsim.timing.measurements import _flag

    with pytest.raises(ValueError, match=f"^here: tie_embeddings must be true or false, got {text!r}$"):
        _flag(text, "tie_embeddings", "here")


def test_profile_yaml_keeps_field_order_and_wraps_long_notes(fitted):
    from specsim.calibration.profile import profile_yaml

    text = profile_yaml(fitted.profile)
    assert text.splitlines()[0].startswith("name:")
    assert max(len(line) for line in text.splitlines()) <= 110  # notes wrap near 100 columns
    assert yaml.safe_load(text)["name"] == fitted.profile.name


def test_summary_is_computed_from_the_right_rows(fitted):
    data = fitted.data
    held, train = data[data.holdout], data[~data.holdout]

    def mape(rows, which):
        return float(np.abs(rows[f"{which}_s"] / rows["measured_s"] - 1).mean())

    s = fitted.summary()
    assert s["points"] == len(data) and s["train_points"] == len(train) and s["holdout_points"] == len(held) > 0
    assert s["holdout_before"]["mape"] == pytest.approx(mape(held, "before"), rel=1e-12)
    assert s["holdout_after"]["mape"] == pytest.approx(mape(held, "after"), rel=1e-12)
    assert s["train_after"]["mape"] == pytest.approx(mape(train, "after"), rel=1e-12)
    assert s["holdout_after"]["max_abs_error"] == pytest.approx(float(np.abs(held.after_s / held.measured_s - 1).max()))
    np.testing.assert_allclose(fitted.errors("after", False), (train.after_s / train.measured_s - 1).to_numpy())
    p = fitted.profile
    assert (s["compute_eff"], s["bandwidth_eff"], s["overhead_s"], s["per_layer_overhead_s"]) == (
        p.compute_eff,
        p.bandwidth_eff,
        p.overhead_s,
        p.per_layer_overhead_s,
    )
    assert s["per_layer_overhead_fitted"] is fitted.per_layer


def test_summary_of_an_empty_half_is_nan_not_an_error(fitted):
    none_held = dataclasses.replace(fitted, data=fitted.data.assign(holdout=False))
    s = none_held.summary()
    assert np.isnan(s["holdout_after"]["mape"]) and np.isnan(s["holdout_after"]["max_abs_error"])


def test_holdout_fraction_bounds_are_inclusive(tmp_path):
    base = load_hardware("h100-sxm")
    path = synthetic(tmp_path, base, models=("llama-3.2-1b",))
    for ok in (0.05, 0.8):
        assert calibrate(path, base, holdout=ok, per_layer="no").summary()["holdout_points"] > 0
    for bad in (0.049, 0.81):
        with pytest.raises(ValueError, match=r"holdout fraction must be in \[0.05, 0.8\]"):
            calibrate(path, base, holdout=bad)


def test_without_a_per_layer_term_none_is_fitted(tmp_path):
    base = load_hardware("h100-sxm")
    result = calibrate(
        synthetic(tmp_path, dataclasses.replace(base, overhead_s=3e-4), models=("llama-3.2-1b",)), base, per_layer="no"
    )
    assert result.profile.per_layer_overhead_s == 0.0 and result.per_layer is False
    assert result.profile.overhead_s == pytest.approx(3e-4, rel=0.02)


def _points_csv(tmp_path, truth, points, models=("llama-3.2-1b",), repeats=2):
    """``points`` distinct (b, q, L) per model, each measured ``repeats`` times, from a known profile."""
    grid = [(b, q, L) for b in (1, 8, 64, 256) for q in (1, 5) for L in (256, 4096)][:points]
    rows = []
    for m in models:
        shape = get_model(m)
        for b, q, L in grid:
            t = float(step_time(truth, shape, b, q, L).total_s)
            rows += [{"model": m, "batch": b, "tokens_per_seq": q, "context": L, "median_s": t}] * repeats
    path = tmp_path / f"p{points}-{len(models)}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_distinct_point_minimum_is_exact(tmp_path):
    base = load_hardware("h100-sxm")
    # 3 parameters and a quarter held out: 5 distinct points leave 4 to fit (enough), 4 leave 3 (not).
    assert calibrate(_points_csv(tmp_path, base, 5), base, per_layer="no").summary()["train_points"] == 8
    with pytest.raises(
        ValueError,
        match=r"^too few distinct points: 4 distinct \(model, batch, tokens, context\) points leave 3 "
        r"to fit 3 parameters; measure at least 5 distinct points$",
    ):
        calibrate(_points_csv(tmp_path, base, 4), base, per_layer="no")
    # 4 parameters with a per-layer term: two models of 3 points each (6 distinct, 2 held out) leave 4, one short.
    with pytest.raises(ValueError, match=r"leave 4 to fit 4 parameters; measure at least 7 distinct points$"):
        calibrate(_points_csv(tmp_path, base, 3, models=("llama-3.2-1b", "llama-3.1-8b")), base, per_layer="yes")


def test_per_layer_switch(tmp_path):
    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(base, overhead_s=0.1e-3, per_layer_overhead_s=20e-6)
    two = synthetic(tmp_path, truth)
    assert calibrate(two, base, per_layer="auto").per_layer is True  # two layer counts and a real per-layer term
    assert calibrate(two, base, per_layer="no").per_layer is False
    one = _points_csv(tmp_path, truth, 8)
    assert calibrate(one, base, per_layer="auto").per_layer is False  # one layer count cannot separate the terms
    with pytest.raises(
        ValueError, match=r"^a per-layer overhead needs measurements of at least two layer counts \(models\)$"
    ):
        calibrate(one, base, per_layer="yes")
    with pytest.raises(ValueError, match=r"^per_layer must be auto, yes or no, got 'maybe'$"):
        calibrate(one, base, per_layer="maybe")


def test_provenance_records_the_fit(tmp_path):
    import hashlib

    base = load_hardware("h100-sxm")
    path = synthetic(tmp_path, dataclasses.replace(base, compute_eff=0.5), noise=0.01)
    result = calibrate(path, base, holdout=0.3, seed=7, name="mine")
    prov, s = result.profile.calibration, result.summary()
    assert prov["source"] == "measured.csv" and prov["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prov["devices"] == ["synthetic"] and prov["base_profile"] == "h100-sxm" and result.profile.name == "mine"
    assert (prov["holdout_fraction"], prov["split_seed"], prov["per_layer_overhead_fitted"]) == (
        0.3,
        7,
        result.per_layer,
    )
    assert (prov["points"], prov["train_points"], prov["holdout_points"]) == (
        s["points"],
        s["train_points"],
        s["holdout_points"],
    )
    assert prov["holdout_mape_after"] == pytest.approx(s["holdout_after"]["mape"], abs=1e-6)
    assert prov["holdout_mape_before"] == pytest.approx(s["holdout_before"]["mape"], abs=1e-6)
    assert prov["train_mape_after"] == pytest.approx(s["train_after"]["mape"], abs=1e-6)
    assert f"{s['holdout_after']['mape']:.1%}" in result.profile.notes


# -- noisy timings against a bad model (issue 30) ----------------------------------------------------------
def _timed(tmp_path, truth, burst=None, spread=0.02, seed=0, models=("llama-3.2-1b",)):
    """A `specsim measure`-like CSV: five repeats per point of a known profile's step time, each repeat scaled by
    exp(N(0, spread)), and, with ``burst``, every point's repeats scaled together by a factor drawn in [1, burst] (a
    busy machine: other processes take the cores for a while).  median_s, p10_s, p90_s and min_s as the harness writes."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        shape = get_model(m)
        for b in (1, 4, 16, 64, 256):
            for q in (1, 3, 5):
                for L in (256, 2048, 8192):
                    t = float(step_time(truth, shape, b, q, L).total_s)
                    load = rng.uniform(1.0, burst, 5) if burst else np.ones(5)
                    reps = t * load * np.exp(rng.normal(0.0, spread, 5))
                    rows.append(
                        {
                            "model": m,
                            "batch": b,
                            "tokens_per_seq": q,
                            "context": L,
                            "repeats": 5,
                            "median_s": float(np.median(reps)),
                            "p10_s": float(np.percentile(reps, 10)),
                            "p90_s": float(np.percentile(reps, 90)),
                            "min_s": float(reps.min()),
                        }
                    )
    path = tmp_path / "timed.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_timings_that_agree_are_fitted_and_written(tmp_path, capsys):
    from specsim.calibration.profile import repeat_spread

    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(base, compute_eff=0.5, bandwidth_eff=0.75, overhead_s=0.2e-3)
    path = _timed(tmp_path, truth)
    result = calibrate(path, base)
    assert result.profile.overhead_s == pytest.approx(0.2e-3, rel=0.1)
    # Five repeats at 2% log-normal noise: p90 - p10 is about 2 x 1.28 x 2% of the median, well under NOISY_SPREAD.
    assert 0.02 < repeat_spread(result.data) < 0.08
    out = tmp_path / "p.yaml"
    assert main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(out)]) == 0 and out.exists()


def test_timings_of_a_busy_machine_are_refused_as_noise_in_one_line(tmp_path, capsys):
    # Each repeat slowed by a factor up to 20: the medians scatter beyond what any profile describes (this seed's fit
    # needs a fixed cost of 5 ms above the fastest pass of 1.3 ms and misses held-out points by 29%), and the repeats
    # of a point spread by a median 93% of it.
    from specsim.calibration.profile import NoisyTimings

    base = load_hardware("h100-sxm")
    truth = dataclasses.replace(base, compute_eff=0.5, bandwidth_eff=0.75, overhead_s=0.2e-3)
    path = _timed(tmp_path, truth, burst=20.0)
    with pytest.raises(
        NoisyTimings,
        match=r"^timed.csv: the timings are too noisy to fit: the repeats of a point spread by a "
        r"median \d+% .*with more repeats; nothing written$",  # measure_sweep's repeats; the command's --repeats
    ):
        calibrate(path, base)
    out = tmp_path / "p.yaml"
    assert main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "too noisy to fit" in err[0] and "measure again on an idle machine" in err[0]
    assert "with more --repeats; nothing written" in err[0], err
    assert not out.exists() and not (tmp_path / "p-residuals.png").exists()


def test_agreeing_timings_no_roofline_fits_are_a_bad_model_not_noise(tmp_path, capsys):
    # Repeats within 1%, but every pass takes 5 ms except the smallest, 1 ms: a fixed cost that the fastest pass
    # contradicts.  The timings do not vary; the model cannot hold them.
    df = pd.read_csv(_timed(tmp_path, load_hardware("h100-sxm"), spread=0.005))
    small = (df.batch == 1) & (df.tokens_per_seq == 1)
    scale = np.where(small, 1e-3, 5e-3) / df["median_s"]
    for col in ("median_s", "p10_s", "p90_s", "min_s"):
        df[col] = df[col] * scale
    path = tmp_path / "flat.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "p.yaml"
    assert main(["calibrate", str(path), "--hardware", "h100-sxm", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the roofline does not describe these measurements" in err[0], err
    assert "at 1: passes faster than the datasheet's" in err[0] and "while the repeats agree within 1%" in err[0]
    assert not out.exists()


def test_an_overhead_past_the_profiles_limit_is_judged_not_raised(tmp_path):
    # Every pass at 1.5 s (a machine swapping): the fit stops at the profile's 1 s limit instead of building a profile
    # the profile refuses (issue 30: "overhead_s must be in [0, 1] seconds, got 1.018"), and says why in one line.
    df = pd.read_csv(_timed(tmp_path, load_hardware("h100-sxm"), spread=0.005))
    scale = 1.5 / df["median_s"]
    for col in ("median_s", "p10_s", "p90_s", "min_s"):
        df[col] = df[col] * scale
    df.to_csv(tmp_path / "slow.csv", index=False)
    with pytest.raises(ValueError, match=r"at the profile's limit of 1 s") as err:
        calibrate(tmp_path / "slow.csv", load_hardware("h100-sxm"))
    assert "overhead_s must be" not in str(err.value)


def test_a_fit_that_holds_on_spread_timings_is_written_with_a_warning(tmp_path):
    from specsim.calibration.profile import implausible

    # Repeats slowed by up to 3x: they spread by a median 52%, yet this seed's fit misses held-out points by 13%.
    base = load_hardware("h100-sxm")
    result = calibrate(_timed(tmp_path, dataclasses.replace(base, compute_eff=0.5, overhead_s=0.2e-3), burst=3.0), base)
    assert any("timings of a busy machine" in w for w in implausible(result))


def test_a_file_without_repeat_percentiles_is_never_called_noise(tmp_path):
    # The inverse-q table of the hostile-input rows (verification cheaper than decode): with no percentiles to judge
    # noise by, an unphysical fit is the model's failure.
    rows = [
        {"model": "llama-3.2-1b", "batch": b, "tokens_per_seq": q, "context": L, "median_s": 0.01 / q}
        for b in (1, 4, 16)
        for q in (1, 2, 4)
        for L in (0, 512)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "inv.csv", index=False)
    with pytest.raises(
        ValueError,
        match=r"^inv.csv: the roofline does not describe these measurements: the fit needs "
        r"bandwidth_eff at 1: .*; nothing written$",
    ):
        calibrate(tmp_path / "inv.csv", load_hardware("h100-sxm"), per_layer="no")
