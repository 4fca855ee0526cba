"""vLLM Prometheus counters -> mean acceptance length, per-position rates and alpha."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.speculation.metrics import acceptance_from_prometheus, parse_prometheus
from specsim.speculation.search import expected_tokens


def exposition(drafts, gamma, per_position, model="meta-llama/Llama-3.1-8B-Instruct", engines=1):
    """A /metrics page in the format vLLM writes (prometheus_client text exposition 0.0.4)."""
    lines = []
    per_engine = [drafts / engines] * engines
    for name, help_text in (
        ("num_drafts", "Number of spec decoding drafts."),
        ("num_draft_tokens", "Number of draft tokens."),
        ("num_accepted_tokens", "Number of accepted tokens."),
        ("num_accepted_tokens_per_pos", "Accepted tokens per draft position."),
    ):
        lines.append(f"# HELP vllm:spec_decode_{name}_total {help_text}")
        lines.append(f"# TYPE vllm:spec_decode_{name}_total counter")
        for e, d in enumerate(per_engine):
            labels = f'engine="{e}",model_name="{model}"'
            share = d / drafts
            if name == "num_drafts":
                lines.append(f"vllm:spec_decode_{name}_total{{{labels}}} {d}")
            elif name == "num_draft_tokens":
                lines.append(f"vllm:spec_decode_{name}_total{{{labels}}} {d * gamma}")
            elif name == "num_accepted_tokens":
                lines.append(f"vllm:spec_decode_{name}_total{{{labels}}} {sum(per_position) * share}")
            else:
                for k, count in enumerate(per_position):
                    lines.append(f'vllm:spec_decode_{name}_total{{{labels},position="{k}"}} {count * share}')
            lines.append(f"vllm:spec_decode_{name}_created{{{labels}}} 1.7e9")
    lines.append('vllm:num_requests_running{engine="0",model_name="x"} 3.0')
    return "\n".join(lines) + "\n"


def test_recovers_a_known_alpha_within_0001():
    # Independent acceptance alpha = 0.73 at gamma = 5: position k accepted in drafts * alpha^(k+1).
    alpha, gamma, drafts = 0.73, 5, 200_000
    per_pos = [round(drafts * alpha ** (k + 1)) for k in range(gamma)]
    m = acceptance_from_prometheus(exposition(drafts, gamma, per_pos, engines=2))
    assert m.gamma == 5
    assert abs(m.alpha - alpha) < 0.001
    np.testing.assert_allclose(m.conditional_rates, alpha, atol=0.001)
    assert m.mean_acceptance_length == pytest.approx(float(expected_tokens(alpha, gamma)), abs=1e-4)
    assert m.independence_deviation() == []


def test_recovers_per_position_rates_and_flags_dependence():
    rates = [0.9, 0.7, 0.55, 0.5]  # first position much likelier, as with real drafts
    drafts = 100_000
    cumulative = np.cumprod(rates)
    m = acceptance_from_prometheus(exposition(drafts, 4, [round(drafts * c) for c in cumulative]))
    np.testing.assert_allclose(m.conditional_rates, rates, atol=0.001)
    np.testing.assert_allclose(m.cumulative_rates, cumulative, atol=0.001)
    assert m.per_position_tokens_per_step == pytest.approx(m.mean_acceptance_length, abs=1e-9)
    assert 0 in m.independence_deviation() and 3 in m.independence_deviation()


def test_cli_alpha_from_metrics(tmp_path, capsys):
    alpha, gamma, drafts = 0.8, 3, 50_000
    path = tmp_path / "metrics.txt"
    path.write_text(exposition(drafts, gamma, [round(drafts * alpha ** (k + 1)) for k in range(gamma)]))
    assert main(["alpha", "--metrics", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["alpha"] - 0.8) < 0.001 and out["gamma"] == 3 and out["independent_alpha_consistent"]
    assert main(["alpha", "--metrics", str(path)]) == 0
    assert "implied alpha = 0.800" in capsys.readouterr().out


def test_dependence_warning_in_cli(tmp_path, capsys):
    path = tmp_path / "metrics.txt"
    path.write_text(exposition(10_000, 3, [9000, 5400, 2700]))
    assert main(["alpha", "--metrics", str(path)]) == 0
    err = capsys.readouterr().err
    assert "not independent per position" in err
    assert "by more than 0.05 and more than sampling noise (4 standard errors" in err  # the rule, not "noise" alone


@pytest.mark.parametrize(
    "text, message",
    [
        ('vllm:spec_decode_num_drafts_total{engine="0"} twelve\n', "line 1: not a Prometheus sample"),
        ("# HELP x\nvllm:spec_decode_num_drafts_total{engine=0} 1\n", "line 2: not a Prometheus sample"),
        ("this is not prometheus\n", "line 1: not a Prometheus sample"),
        ("vllm:num_requests_running 1\n", "missing counter(s) vllm:spec_decode_num_drafts_total"),
    ],
)
def test_malformed_files_name_the_line_or_the_missing_counter(text, message):
    with pytest.raises(ValueError) as err:
        acceptance_from_prometheus(text, source="metrics.txt")
    assert message in str(err.value) and "metrics.txt" in str(err.value)


def test_inconsistent_counters_are_rejected():
    bad = exposition(1000, 3, [800, 640, 512]).replace(
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3000',
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000',
    )
    with pytest.raises(ValueError, match="more accepted tokens"):
        acceptance_from_prometheus(bad)


def test_several_models_need_a_choice():
    # (the second page without the first's gauge of model x: a page gives each series once)
    other = exposition(1000, 2, [500, 250], model="b").replace(
        'vllm:num_requests_running{engine="0",model_name="x"} 3.0\n', ""
    )
    text = exposition(1000, 2, [800, 640], model="a") + other
    with pytest.raises(ValueError, match="several models"):
        acceptance_from_prometheus(text)
    assert acceptance_from_prometheus(text, model_name="b").conditional_rates[0] == pytest.approx(0.5)


def test_cli_bad_metrics_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "m.txt"
    path.write_text("garbage line here {\n")
    assert main(["alpha", "--metrics", str(path)]) == 2
    err = capsys.readouterr().err
    assert "m.txt, line 1" in err and len(err.strip().splitlines()) == 1
    assert main(["alpha", "--metrics", str(tmp_path / "none.txt")]) == 2


def test_parser_handles_escapes_and_timestamps():
    samples = parse_prometheus('m{a="x\\"y",b="z"} 1.5 1700000000000\n')
    assert samples == [("m", {"a": 'x"y', "b": "z"}, 1.5)]


def test_metrics_to_dict_reports_every_quantity_under_its_name():
    m = acceptance_from_prometheus(exposition(1000, 3, [800, 560, 392]))
    d = m.to_dict()
    for key in (
        "alpha",
        "gamma",
        "mean_draft_length",
        "mean_acceptance_length",
        "acceptance_rate",
        "drafts",
        "draft_tokens",
        "accepted_tokens",
    ):
        assert d[key] == getattr(m, key), key
    assert d["per_position_cumulative"] == pytest.approx([0.8, 0.56, 0.392])
    assert d["per_position_conditional"] == pytest.approx([0.8, 0.7, 0.7])
    assert d["positions_far_from_alpha"] == m.independence_deviation() and d["independent_alpha_consistent"] is (
        not m.independence_deviation()
    )
    assert set(d) == {
        "alpha",
        "gamma",
        "mean_draft_length",
        "mean_acceptance_length",
        "acceptance_rate",
        "drafts",
        "draft_tokens",
        "accepted_tokens",
        "per_position_cumulative",
        "per_position_conditional",
        "independent_alpha_consistent",
        "positions_far_from_alpha",
    }


def test_independence_deviation_threshold_is_max_of_005_and_four_standard_errors():
    # 10,000 drafts: four standard errors of a rate near 0.75 are about 0.017, so the 0.05 floor decides.
    far = acceptance_from_prometheus(exposition(10_000, 3, [8_000, 5_200, 3_900]))  # conditional 0.80, 0.65, 0.75
    # alpha 0.744: positions 0 (0.056 away) and 1 (0.094) are flagged, position 2 (0.006) is not.
    assert far.alpha == pytest.approx(0.7442, abs=1e-4) and far.independence_deviation() == [0, 1]
    near = acceptance_from_prometheus(exposition(10_000, 3, [7_600, 5_624, 4_162]))  # 0.76, 0.74, 0.74: within 0.05
    assert near.independence_deviation() == []
    # 40 drafts: four standard errors (about 0.27) exceed 0.05, so the same 0.15 gap is not flagged.
    few = acceptance_from_prometheus(exposition(40, 3, [32, 21, 16]))
    assert few.independence_deviation() == []


def test_metrics_file_errors_name_the_file(tmp_path):
    from specsim.speculation.metrics import read_metrics_file

    with pytest.raises(ValueError, match=r"metrics file '.*missing.txt' does not exist"):
        read_metrics_file(tmp_path / "missing.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        read_metrics_file(tmp_path / "bin.txt")
    (tmp_path / "blank.txt").write_text("  \n")
    with pytest.raises(ValueError, match="is empty"):
        read_metrics_file(tmp_path / "blank.txt")
    (tmp_path / "ok.txt").write_text(exposition(100, 2, [50, 25]))
    assert read_metrics_file(tmp_path / "ok.txt").drafts == 100
    # The Prometheus text format ends every line with a line feed: a page without one was cut off (77700.0 as 777).
    (tmp_path / "cut.txt").write_text(exposition(100, 2, [50, 25]).rstrip("\n")[:-1])
    with pytest.raises(ValueError, match=r"metrics file '.*cut.txt' does not end in a line feed"):
        read_metrics_file(tmp_path / "cut.txt")
    (tmp_path / "om.txt").write_text(exposition(100, 2, [50, 25]) + "# EOF")  # OpenMetrics: its last LF optional
    assert read_metrics_file(tmp_path / "om.txt").drafts == 100


@pytest.mark.parametrize("page", ["vllm", "sglang"])
def test_alpha_reads_a_metrics_page_once(page, tmp_path, monkeypatch, capsys):
    """`alpha --metrics` tells an SGLang page from a vLLM one and reads the vLLM counters from one read of the file."""
    import specsim.core.files as files

    path = tmp_path / "metrics.txt"
    if page == "vllm":
        path.write_text(exposition(100, 2, [50, 25]))
    else:
        path.write_text('sglang:spec_accept_length{model_name="m"} 2.5\n')
    reads = []
    real = files.read_text
    monkeypatch.setattr(files, "read_text", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    assert main(["alpha", "--metrics", str(path), "--gamma", "2"]) == 0
    assert reads == [str(path)], reads
    assert "alpha = " in capsys.readouterr().out


def _page(drafts, tokens, accepted, per_pos=(), model="m", extra=""):
    lines = [
        f'vllm:spec_decode_num_drafts_total{{model_name="{model}"}} {drafts}',
        f'vllm:spec_decode_num_draft_tokens_total{{model_name="{model}"}} {tokens}',
        f'vllm:spec_decode_num_accepted_tokens_total{{model_name="{model}"}} {accepted}',
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="{model}",position="{k}"}} {v}'
        for k, v in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n" + extra


def test_label_escapes_are_read():
    samples = parse_prometheus('x{a="say \\"hi\\"",b="two\\nlines",c="back\\\\slash"} 1\n')
    assert samples == [("x", {"a": 'say "hi"', "b": "two\nlines", "c": "back\\slash"}, 1.0)]


def test_boundary_pages_are_valid():
    one = acceptance_from_prometheus(_page(1, 3, 3, (1, 1, 1)))  # one draft, everything accepted: alpha 1
    assert one.alpha == 1.0 and one.mean_acceptance_length == 4.0
    assert acceptance_from_prometheus(_page(100, 200, 100, (60, 40))).cumulative_rates.tolist() == [0.6, 0.4]
    assert acceptance_from_prometheus(_page(100, 200, 150, (100, 50))).conditional_rates.tolist() == [1.0, 0.5]
    # Per-position counts may be fractional after engines are summed; a mismatch of half a token in 1,000 is rounding.
    assert acceptance_from_prometheus(_page(1000, 2000, 1000, (600, 400.0005))).accepted_tokens == 1000


@pytest.mark.parametrize(
    "page, message",
    [
        (_page(100, 200, 102, (60, 40)), r"^metrics: per-position counts sum to 100, not the 102 accepted tokens$"),
        (_page(1, 2, 1, (1, 0.0000015)), r"per-position counts sum to 1, not the 1 accepted tokens$"),
        (_page(100, 200, 201), r"^metrics: more accepted tokens \(201\) than drafted \(200\)$"),
        (_page(100, 200, 100, (60, 40, 0)), r"^metrics: 3 per-position counters but 2 draft tokens per draft$"),
        (_page(100, 200, 100, (101, -1)), r"must be a count in \[0, 2\*\*53\]"),
        (_page(4e300, 1.2e301, 7.7e300), r"num_drafts_total must be a count in \[0, 2\*\*53\], got 4e\+300$"),
        (
            _page(100, 200, 100)
            + 'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",position="2"} 5\n',
            r"^metrics: per-position counters are not contiguous from 0: positions \[2\]$",
        ),
        (
            _page(100, 200, 100) + 'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m"} 5\n',
            r"needs a position=\"<integer>\" label",
        ),
        (
            _page(100, 200, 100) + 'vllm:spec_decode_num_drafts{model_name="m"} 100\n',
            r"^metrics: the series vllm:spec_decode_num_drafts\{model_name='m'\} appears twice; save one /metrics page per file$",
        ),
        (
            _page(100, 200, 100) + _page(5, 10, 5, model="other"),
            r"^metrics: counters of several models \(m, other\); choose one with model_name$",
        ),
        (
            'vllm:spec_decode_num_drafts_total{model_name="m"} 100\n',
            r"^metrics: missing counter\(s\) vllm:spec_decode_num_draft_tokens_total, vllm:spec_decode_num_accepted_tokens_total; "
            r"is speculative decoding enabled on that server\?$",
        ),
        (_page(0, 0, 0), r"^metrics: vllm:spec_decode_num_drafts_total is 0: no speculative steps were recorded$"),
        (
            "x" * 200 + "\n",
            r"^metrics, line 1: not a Prometheus sample: '"
            + "x" * 80
            + r"' \(.*\); expected 'name\{labels\} value \[timestamp\]'$",
        ),
    ],
)
def test_bad_pages_give_exact_messages(page, message):
    with pytest.raises(ValueError, match=message):
        acceptance_from_prometheus(page)


def test_model_selection_messages():
    page = _page(100, 200, 100, model="a") + _page(10, 20, 10, model="b")
    assert acceptance_from_prometheus(page, model_name="b").drafts == 10
    with pytest.raises(ValueError, match=r"^metrics: no speculative-decoding counters for model 'c'; found: a, b$"):
        acceptance_from_prometheus(page, model_name="c")
    with pytest.raises(ValueError, match=r"found: none$"):
        acceptance_from_prometheus("up 1\n", model_name="c")


def test_every_shipped_metrics_page_is_one_specsim_reads():
    # The sample plan's pages once held 4.0004 draft tokens a draft at 4 steps (a fractional draft count rounded apart
    # from its tokens), which no engine writes: 10 of them failed specsim's own reader.
    from pathlib import Path

    from specsim.speculation.metrics import read_metrics_file

    pages = sorted((Path(__file__).resolve().parents[1] / "examples").rglob("*metrics*.txt"))
    assert len(pages) >= 50
    for page in pages:
        if " 0\n" in page.read_text().splitlines(keepends=True)[0]:  # a server's first page: nothing drafted yet
            continue
        assert read_metrics_file(page).gamma is not None, page  # every sample drafts a fixed number of tokens


def test_a_capture_of_several_scrapes_keeps_each_sample_at_its_stamp(tmp_path):
    """OpenMetrics stamps are seconds, the text format's milliseconds; a histogram's every bucket is kept at every
    stamp (prometheus_client 0.26.0's OpenMetrics parser keeps only the first bucket of each later stamp); a series
    twice at one stamp and an exemplar are refused.  Before, a capture was refused: its series repeat."""
    from specsim.speculation.metrics import read_capture

    om = tmp_path / "two.om"
    om.write_text(
        "# TYPE h histogram\n"
        + "".join(
            f'h_bucket{{le="1.0"}} {n} {t}\nh_bucket{{le="+Inf"}} {n} {t}\nh_count {n} {t}\nh_sum {5 * n} {t}\n'
            for t, n in ((1700000000, 2), (1700000060, 4))
        )
        + "# EOF\n"
    )
    _, samples, stamps = read_capture(om)
    assert [(s[0], s[1].get("le"), s[2], t) for s, t in zip(samples, stamps) if s[0] == "h_bucket"] == [
        ("h_bucket", "1.0", 2.0, 1700000000.0),
        ("h_bucket", "+Inf", 2.0, 1700000000.0),
        ("h_bucket", "1.0", 4.0, 1700000060.0),
        ("h_bucket", "+Inf", 4.0, 1700000060.0),
    ]
    text = tmp_path / "two.txt"
    text.write_text("x_total 1 1700000000000\nx_total 3 1700000060500\n")
    assert read_capture(text)[2] == [1700000000.0, 1700000060.5]
    for name, body, message in (
        ("twice.txt", "x_total 1 1700000000000\nx_total 3 1700000000000\n", "appears twice at time stamp"),
        ("ex.om", 'x_total 1 1700000000 # {a="b"} 1\n# EOF\n', "line 1: an exemplar"),
    ):
        (tmp_path / name).write_text(body)
        with pytest.raises(ValueError, match=message):
            read_capture(tmp_path / name)
