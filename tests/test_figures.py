"""Figures: the data each one draws, read back from the returned artists."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from specsim.figures.make import FIGURES, make_all  # noqa: E402
from specsim.speculation.sweep import optimal_gamma_table  # noqa: E402

#: One worker draws every figure once (the module's fixture; the serve-sweep figure alone is 160 simulations, 14 s): two
#: workers each drew them all.
pytestmark = pytest.mark.xdist_group("figures")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Every figure drawn once, as make_all writes it: (the files, each figure's data by name)."""
    data = {}
    files = make_all(tmp_path_factory.mktemp("figures"), drawn=data)
    return files, data


@pytest.fixture(scope="module")
def drawn(made):
    return made[1]


def _y_at(line, x):
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    return float(ys[np.flatnonzero(xs == x)[0]])


def test_figure_names_are_fixed():
    assert [spec.name for spec in FIGURES] == [
        "speedup-vs-gamma",
        "speedup-vs-batch",
        "roofline",
        "step-times",
        "speedup-heatmaps",
        "optimal-gamma-vs-batch",
        "speedup-vs-batch-devices",
        "throughput-vs-latency",
        "verification-cost",
        "moe-speculation",
        "drafters",
        "serve-sweep",
        "round-anatomy",
    ]


def test_round_anatomy_shows_host_work_making_spec_v1_stop_paying_and_spec_v2_hiding_it(drawn):
    v1, v2 = drawn["round-anatomy"]["0.5"], drawn["round-anatomy"]["latest"]
    top1, top2 = v1["bars_top"], v2["bars_top"]
    tokens = np.array([r["tokens_per_round"] for r in v1["rows"]])
    # Serial host work grows with the batch: the bar (the round in decode steps) rises and crosses the tokens it yields.
    assert np.all(np.diff(top1) > 0) and top1[0] < tokens[0] and top1[-1] > tokens[-1]
    # Overlapped, the same host work hides behind the passes at small batch: every bar is lower, none above the line.
    assert np.all(top2 < top1) and np.all(top2 < tokens)
    assert all(r["hidden_host_s"] > 0 for r in v2["rows"]) and all(r["hidden_host_s"] == 0 for r in v1["rows"])
    # The bars are the rounds: the parts add up to each round's time.
    for r in v1["rows"] + v2["rows"]:
        assert sum(r["parts_s"].values()) == pytest.approx(r["t_round_s"], rel=1e-12)


def test_verification_cost_figure_shows_measured_kernels_departing_from_the_roofline(drawn):
    lines = drawn["verification-cost"]
    kern, roof = lines["ratio"][("h100-sxm", "measured kernels")], lines["ratio"][("h100-sxm", "roofline")]
    assert _y_at(roof, 16) == pytest.approx(1.0, abs=1e-3) and _y_at(kern, 64) > _y_at(roof, 64) + 0.1
    # Measured: on the A100 verification turns dear at a smaller batch than on the H100.
    assert _y_at(lines["ratio"][("a100-sxm-80gb", "measured kernels")], 64) > _y_at(kern, 64)
    hybrid = lines["speedup"][("llama-3.2-1b", "default (hybrid)")]
    flat = lines["speedup"][("llama-3.2-1b", "roofline")]
    assert _y_at(hybrid, 2) - _y_at(hybrid, 64) > 0.1 and abs(_y_at(flat, 2) - _y_at(flat, 64)) < 0.03


def test_speedup_vs_gamma_marks_the_article_optima(drawn):
    # Article Figure 2 (c = 0.05): optima gamma = 3, 6, 8, 13 with 1.63, 2.35, 3.09, 4.67.
    optima = drawn["speedup-vs-gamma"]["optima"]
    assert {a: g for a, (g, _) in optima.items() if a != 0.6} == {0.5: 3, 0.7: 6, 0.8: 8, 0.9: 13}
    assert [round(optima[a][1], 2) for a in (0.5, 0.7, 0.8, 0.9)] == [1.63, 2.35, 3.09, 4.67]
    # Each drawn curve peaks where its star is.
    for alpha, line in drawn["speedup-vs-gamma"]["lines"].items():
        assert int(np.argmax(line.get_ydata())) == optima[alpha][0]


def test_speedup_vs_batch_passes_through_the_quoted_speedups(drawn):
    # Article Figure 3: 1.90 at batch 1, 1.81 at 64, 1.49 at 128, 1.25 at 256 (within 0.005).
    lines = drawn["speedup-vs-batch"]["lines"]
    for batch, quoted in ((1, 1.90), (64, 1.81), (128, 1.49), (256, 1.25)):
        assert abs(_y_at(lines[(0.8, 4)], batch) - quoted) < 0.005
    assert _y_at(lines[(0.8, 8)], 256) < 1.0
    assert abs(_y_at(lines[(0.6, 4)], 256) - 0.86) < 0.005
    assert drawn["speedup-vs-batch"]["break_even"].get_ydata()[0] == 1.0


def test_roofline_marks_the_ridge_and_the_compute_bound_verification(drawn):
    fig = drawn["roofline"]
    assert fig["ridge"] == pytest.approx(221.4, abs=0.05)
    # Decode at L = 1128 stays memory-bound (no filled points); verification at b >= 128 is compute-bound.
    assert len(fig["points"]["target decode"].get_offsets()) == 0
    filled = fig["points"]["verification"].get_offsets()
    assert len(filled) >= 2 and np.all(filled[:, 0] > 221.4)


def test_step_times_show_verification_dearer_than_decode_at_large_batch(drawn):
    totals = drawn["step-times"]["totals"]
    assert _y_at(totals["verification"], 1) == pytest.approx(_y_at(totals["target decode"], 1), rel=1e-3)
    assert _y_at(totals["verification"], 512) > 1.5 * _y_at(totals["target decode"], 512)


def test_heatmap_traces_the_optimal_gamma(drawn):
    batch_panel = drawn["speedup-heatmaps"]["batch"]
    fits = drawn["speedup-heatmaps"]["fits"]
    # The figure's own source, the article's roofline without an engine (the default source agreed with it here only
    # until its 16-bit GEMMs were held to a back-to-back rate: it shortens gamma at batch 128 and 256).
    expected = optimal_gamma_table(
        alpha=0.8, batch=[2**k for k in range(11) if 2**k <= fits], gamma_max=16, timing="roofline", engine="none"
    ).gamma.to_numpy()
    np.testing.assert_array_equal(np.asarray(batch_panel["trace"].get_xdata()), expected)
    alpha_panel = drawn["speedup-heatmaps"]["alpha"]
    assert np.all(np.diff(alpha_panel["trace"].get_xdata()) >= 0)  # higher alpha -> longer drafts


def test_optimal_gamma_schedule_turns_off_later_for_higher_alpha_and_longer_context(drawn):
    short, long = drawn["optimal-gamma-vs-batch"][128]["off_from"], drawn["optimal-gamma-vs-batch"][1128]["off_from"]
    # At L = 128 every alpha but 0.9 turns speculation off within batch 512, the higher alpha the later.
    values = [short[a] for a in sorted(short)]
    assert short[0.9] is None and all(v is not None for v in values[:-1]) and values[:-1] == sorted(values[:-1])
    # At L = 1128 the KV reads keep verification cheap: speculation stays on to a larger batch, or to 512.
    assert all(long[a] is None or long[a] > short[a] for a in short) and sum(v is None for v in long.values()) >= 3


def test_optimal_gamma_figure_draws_integer_gammas_at_the_default_source(drawn):
    # Issue 37: the figure was drawn on the roofline with its curves lifted by 0.08, so that gamma read 0.84 or 6.15.
    from specsim.engines import DEFAULT_ENGINE, ENGINES
    from specsim.speculation.deployment import Deployment
    from specsim.speculation.schedule import gamma_schedule
    from specsim.timing import DEFAULT_TIMING

    dep = Deployment.build()
    for context, panel in drawn["optimal-gamma-vs-batch"].items():
        table = panel["table"]
        assert set(table.timing) == {DEFAULT_TIMING} and set(table.engine) == {ENGINES[DEFAULT_ENGINE].key}
        assert len({id(ax) for ax in panel["axes"]}) == len(panel["lines"]) == 5  # one panel per alpha: none hidden
        for alpha, line in panel["lines"].items():
            x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata(), dtype=float)
            best = np.asarray(panel["best"][alpha].get_ydata(), dtype=float)
            assert np.array_equal(y, np.round(y)) and np.array_equal(best, np.round(best))
            # The bold line is the schedule specsim schedule writes, batch by batch.
            expected = {
                b: r.gamma
                for r in gamma_schedule(dep, alpha, 512, context)
                for b in range(r.start_batch, r.end_batch + 1)
            }
            assert y.tolist() == [expected[int(b)] for b in x]
        for ax in panel["axes"]:
            ticks = ax.get_yticks()
            assert np.array_equal(ticks, np.arange(len(ticks)))  # 0, 1, 2, ...: whole gammas only
    title = drawn["optimal-gamma-vs-batch"][128]["axes"][0].figure.get_suptitle()
    assert f"default step-time source ({DEFAULT_TIMING}), {ENGINES[DEFAULT_ENGINE].key} preset" in title


def test_devices_crossover_moves_with_the_ridge(drawn):
    panels = drawn["speedup-vs-batch-devices"]["panels"]
    cross = {name: panel["crossings"][(0.8, 4)] for name, panel in panels.items()}
    # Ridge: H100 221 > H200 155 > A100 115 FLOP/byte; a lower ridge breaks even at a smaller batch.
    assert cross["h100-sxm"] is None or cross["h100-sxm"] > cross["h200"]
    assert cross["h200"] > cross["a100-sxm-80gb"]


def test_throughput_figure_ends_at_memory_capacity_and_shows_the_cost(drawn):
    from specsim.figures.make import _ROOFLINE
    from specsim.serving.capacity import capacity
    from specsim.speculation.deployment import Deployment

    short = drawn["throughput-vs-latency"][512]
    cap = capacity(Deployment.build(**_ROOFLINE), 512)  # the figure's own deployment
    assert short["ends"]["plain decoding"] == cap.max_batch_without_draft
    assert short["ends"]["speculation, optimal γ per batch"] == cap.max_batch_with_draft
    peak = {label: max(line.get_ydata()) for label, line in short["lines"].items()}
    # At short context the draft's memory costs peak device throughput; a fixed gamma = 4 costs more.
    assert peak["plain decoding"] > peak["speculation, optimal γ per batch"] > peak["speculation, γ = 4 at every batch"]
    # At low concurrency speculation is faster per token: the speculative curve starts left of plain decoding.
    first = {label: line.get_xdata()[0] for label, line in short["lines"].items()}
    assert first["speculation, optimal γ per batch"] < 0.7 * first["plain decoding"]


def test_make_all_writes_png_and_svg_deterministically(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from specsim.figures import make

    draws = []
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer, draw=Figure.draw: draws.append(draw(fig, renderer)))
    monkeypatch.setattr(make, "_RENDERED", {})
    first = make_all(tmp_path / "a", ["speedup-vs-gamma"])
    # Drawn three times: the layout, the PNG, the SVG (no layout engine left for savefig to draw the figure again for).
    assert len(draws) == 3
    monkeypatch.setattr(make, "_RENDERED", {})  # drawn again, not the first drawing's bytes
    second = make_all(tmp_path / "b", ["speedup-vs-gamma"])
    assert [p.name for p in first] == ["speedup-vs-gamma.png", "speedup-vs-gamma.svg"]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes()
    assert first[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list((tmp_path / "a").glob(".*.tmp"))
    # Drawn once per process: a third call writes the same files without drawing.
    monkeypatch.setattr(make, "render", lambda spec: pytest.fail(f"{spec.name} drawn twice"))
    third = make_all(tmp_path / "c", ["speedup-vs-gamma"])
    assert [p.read_bytes() for p in third] == [p.read_bytes() for p in second]


def test_committed_figures_are_current(repo, made):
    # figures/ holds exactly what make_all produces now, every PNG and SVG byte for byte: the layout is snapped to a
    # 1e-4 grid (figures.layout.freeze_layout), so the AVX-512 and AVX2 paths of numpy write the same coordinates.
    import matplotlib
    from PIL import Image

    committed = repo / "figures"
    with Image.open(committed / "speedup-vs-batch.png") as image:
        made_with = image.info.get("Software", "")
    if matplotlib.__version__ not in made_with:
        pytest.skip(f"figures were rendered by {made_with!r}; this is matplotlib {matplotlib.__version__}")
    fresh = made[0]
    assert sorted(p.name for p in fresh) == sorted(f"{spec.name}.{ext}" for spec in FIGURES for ext in ("png", "svg"))
    stale = [p.name for p in fresh if (committed / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"regenerate with: specsim figures --out figures ({', '.join(stale)} differ)"


def test_unknown_figure_name_lists_the_known_ones(tmp_path):
    with pytest.raises(KeyError, match="known: speedup-vs-gamma"):
        make_all(tmp_path, ["nope"])


def test_cli_figures(tmp_path, capsys):
    from specsim.cli.main import main

    assert main(["figures", "--out", str(tmp_path), "--only", "roofline"]) == 0
    assert (tmp_path / "roofline.png").stat().st_size > 10_000
    assert main(["figures", "--only", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown figure" in capsys.readouterr().err


def test_moe_figure_shows_speculation_peaking_at_a_moderate_batch(drawn):
    # Issue 11: speculation on an MoE target peaks past batch 1 (verification reads more experts than a decode
    # step until decode already reads most of them); on the dense target of the same family it peaks at batch 1.
    peaks = drawn["moe-speculation"]["peaks"]
    moe = {src: b for (model, src), (b, _) in peaks.items() if "MoE" in model}
    dense = {src: b for (model, src), (b, _) in peaks.items() if "dense" in model}
    assert set(moe) == set(dense) == {"default (hybrid)", "roofline"}
    assert all(8 <= b <= 64 for b in moe.values()) and all(b == 1 for b in dense.values())
    ratios = drawn["moe-speculation"]["ratio"]
    moe_ratio = ratios[("Qwen3-30B-A3B (MoE 8/128)", "roofline")]
    dense_ratio = ratios[("Qwen3-32B (dense)", "roofline")]
    # At batch 1 the MoE target's 4-token verification costs over twice its decode step; the dense one's costs the same.
    assert _y_at(moe_ratio, 1) > 2.0 and _y_at(dense_ratio, 1) == pytest.approx(1.0, abs=0.01)


def test_drafter_figure_compares_the_kinds_at_their_published_acceptance(drawn):
    lines = drawn["drafters"]
    left = "Llama-3.1-8B on H100, vllm@latest preset, L = 1128, published acceptance per drafter"
    by_name = {name: line for (panel, name), line in lines.items() if panel == left}
    named = lambda prefix: next(line for name, line in by_name.items() if name.startswith(prefix))  # noqa: E731
    tree, chain, draft = named("EAGLE-3 tree"), named("EAGLE-3 chain"), named("draft model")
    # Each drafter's legend names the acceptance it was drawn at and its source (issue 20: n-gram's is code editing).
    assert set(by_name) == {
        "draft model (α 0.8, the article)",
        "EAGLE-3 chain (α 0.744, MT-bench, vLLM #26191)",
        "EAGLE-3 tree (best of top-k 4, depth 5, 16 tokens)",
        "n-gram (0.44 to 0.36 by position, code editing, vLLM #24344)",
    }
    # A tree beats the chain at batch 1 and converges to it by batch 64; EAGLE-3's cheap head beats the 1B draft.
    assert _y_at(tree, 1) > 1.1 * _y_at(chain, 1) and _y_at(tree, 64) == pytest.approx(_y_at(chain, 64), rel=0.02)
    assert all(_y_at(chain, b) > _y_at(draft, b) for b in (1, 16, 256))
    right = "DeepSeek-V3 (FP8) on 8 x H200, vllm@latest preset, L = 1128"
    mtp = lines[(right, "MTP (0.875, DeepSeek-V3 report)")]
    assert 1.0 < _y_at(mtp, 1) < 1.8  # one MTP token at 87.5% acceptance: at most 1.875 tokens per pass
    # Issue 29: the drafters of 2026 on Qwen3-8B, each at the acceptance a command assumes there, named in its legend.
    third = "Qwen3-8B on H100, vllm@latest preset, L = 1128, the drafters of 2026"
    new = {name: line for (panel, name), line in lines.items() if panel == third}
    assert set(new) == {
        "EAGLE-3 chain (α 0.634, DSpark paper)",
        "DFlash (α 0.768, DFlash paper)",
        "DSpark (α 0.762, DSpark paper)",
        "suffix decoding (acceptance 0.62, vLLM PR #24852)",
    }
    # One block-diffusion pass drafts 15 tokens for about the cost of one EAGLE-3 step: at batch 1 it beats the chain
    # by more than its acceptance alone would; by batch 256 verifying the block eats most of the gain.
    dflash, chain3 = new["DFlash (α 0.768, DFlash paper)"], new["EAGLE-3 chain (α 0.634, DSpark paper)"]
    assert _y_at(dflash, 1) > 1.4 * _y_at(chain3, 1) and _y_at(dflash, 256) < 1.1 * _y_at(chain3, 256)


def test_serve_sweep_figure_shows_speculation_helping_until_the_engine_saturates(drawn):
    lines = drawn["serve-sweep"]
    off, on = lines[("off", "p50")], lines[("on", "p50")]
    assert _y_at(on, 0.5) < 0.75 * _y_at(off, 0.5)  # at low load speculation cuts TPOT by a quarter or more
    assert lines.get("stops_at", np.inf) >= 16  # and keeps helping until the engine is saturated (or through the sweep)
    tput_off, tput_on = lines[("off", "tokens_per_s")], lines[("on", "tokens_per_s")]
    assert _y_at(tput_on, 1) == pytest.approx(
        _y_at(tput_off, 1), rel=0.05
    )  # below saturation both serve the offered load


def _band_at(band, x):
    """The lowest and highest y of a fill_between band at ``x``."""
    vertices = band.get_paths()[0].vertices
    ys = vertices[np.isclose(vertices[:, 0], x), 1]
    return float(ys.min()), float(ys.max())


def test_serve_sweep_figure_is_the_mean_of_several_seeds_inside_its_interval(drawn):
    # Issue 37: one seed and no interval before.  Each line is the mean of 10 runs and its band the 95% interval.
    lines, frame = drawn["serve-sweep"], drawn["serve-sweep"]["frame"]
    assert (frame.runs == 10).all()
    assert set(lines["bands"]) == {(arm, q) for arm in ("off", "on") for q in ("p50", "p99", "tokens_per_s")}
    for key, band in lines["bands"].items():
        line = lines[key]
        for x, y in zip(line.get_xdata(), line.get_ydata()):
            low, high = _band_at(band, x)
            assert low < y < high and y - low == pytest.approx(high - y, rel=1e-9)
    # The intervals tell the arms apart where speculation helps: at 16 requests/s they are far apart.
    lo_off, _ = _band_at(lines["bands"][("off", "p50")], 16)
    _, hi_on = _band_at(lines["bands"][("on", "p50")], 16)
    assert hi_on < lo_off
    legend = [t.get_text() for t in lines[("off", "p50")].axes.get_legend().get_texts()]
    assert "mean of 10 runs; band: 95% interval of the mean" in legend


def _break_even_lines(ax):
    return [line for line in ax.get_lines() if line.get_label() == "break-even (S = 1)"]


def _figure_of(data):
    """The matplotlib Figure a figure's drawn data belong to: that of the first artist or axes found in them."""
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

    if isinstance(data, Figure):
        return data
    if isinstance(data, Artist) and data.figure is not None:
        return data.figure
    values = data.values() if isinstance(data, dict) else data if isinstance(data, (list, tuple)) else ()
    for value in values:
        found = _figure_of(value)
        if found is not None:
            return found
    return None


def test_every_speedup_panel_marks_break_even_and_batch_axes_read_as_plain_numbers(drawn):
    # Issue 20: one style across the figures: the labelled S = 1 line wherever a speedup is plotted, and batch or
    # rate axes ticked 1, 2, 4 ... (not 2^k).  Read off the figures the module drew (drawing them again took 7 s).
    speedup_panels = {
        "speedup-vs-gamma": [0],
        "speedup-vs-batch": [0],
        "speedup-vs-batch-devices": [0, 1, 2],
        "verification-cost": [1],
        "moe-speculation": [1],
        "drafters": [0, 1, 2],
    }
    for spec in FIGURES:
        fig = _figure_of(drawn[spec.name])
        axes = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
        for i in speedup_panels.get(spec.name, []):
            (line,) = _break_even_lines(axes[i])
            assert list(line.get_ydata()) == [1.0, 1.0], spec.name
        for ax in axes:
            if ax.get_xscale() == "log":
                assert ax.xaxis.get_major_formatter()(64, 0) == "64", (spec.name, ax.get_xlabel())


def test_figure_curves_stay_apart_and_inside_their_panels(drawn):
    # The optimal-gamma curves each have their own panel, so none hides another (alpha 0.6 vanished before).
    for panel in drawn["optimal-gamma-vs-batch"].values():
        assert all(len(ax.get_lines()) == 2 for ax in panel["axes"])  # its schedule and its exact best gamma
    # Where speedup curves cross 1 is written in their legend, not on the panel where an edge can clip it.
    labels = [
        line.get_label() for line in drawn["speedup-vs-batch-devices"]["panels"]["a100-sxm-80gb"]["lines"].values()
    ]
    assert labels[0] == "α = 0.8, γ = 4: S < 1 from b = 120"
    # Every step-time curve lies inside its panel.
    for ax in drawn["step-times"]["axes"]:
        top = ax.get_ylim()[1]
        assert all(np.nanmax(line.get_ydata()) < top for line in ax.get_lines() if len(line.get_ydata()))


def test_heat_maps_share_one_colour_scale_and_show_only_batches_that_fit(drawn):
    maps = drawn["speedup-heatmaps"]
    a, b = maps["alpha"]["image"].norm, maps["batch"]["image"].norm
    assert (a.vmin, a.vmax) == (b.vmin, b.vmax)
    batches = maps["batch"]["optimal"].index.to_numpy()
    assert batches.max() <= maps["fits"] < 2 * batches.max()
