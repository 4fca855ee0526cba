"""The published-acceptance table and its lookup: rows as their sources print them, the fallback named, context
dependence monotone where published, the default question's numbers unchanged, workload refusals."""

from __future__ import annotations

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.describe.models import get_model
from specsim.speculation.acceptance_data import (
    ACCEPTANCE_WORKLOADS,
    CONTEXT_CURVES,
    ROWS,
    ContextCurve,
    PublishedRow,
    find_row,
    resolve,
    target_family,
)
from specsim.speculation.drafters import Eagle3Head, MtpHead, NgramDrafter, drafter_class


@pytest.mark.parametrize(
    "kind, target, workload, tau, gamma",
    [
        # DSpark (arXiv:2607.05147) Table 1, EAGLE-3 row of Qwen3-8B: MT-Bench 2.66, HumanEval 4.33, GSM8K 5.30 at gamma 7.
        ("eagle3", "qwen3-8b", "chat", 2.66, 7),
        ("eagle3", "qwen3-8b", "code-completion", 4.33, 7),
        ("eagle3", "qwen3-8b", "math", 5.30, 7),
        # vLLM's P-EAGLE blog (2026-03-13), EAGLE-3 (AL) table, GPT-OSS-20B at K = 7: MT-Bench 3.27, HumanEval 3.03.
        ("eagle3", "gpt-oss-20b", "chat", 3.27, 7),
        ("eagle3", "gpt-oss-120b", "code-completion", 3.03, 7),
    ],
)
def test_the_lookup_returns_the_cited_row_and_its_acceptance_gives_back_the_published_length(
    kind, target, workload, tau, gamma
):
    found = resolve(drafter_class(kind), get_model(target), workload, 1128)
    assert not found.fell_back
    assert f"mean acceptance length {tau:g} at {gamma} drafted tokens" in found.row
    # The one alpha a row holds reproduces the published mean acceptance length at its gamma (to 1e-6 tokens).
    assert float(found.acceptance.expected_tokens(gamma)) == pytest.approx(tau, abs=1e-6)
    assert found.label.startswith(f"alpha {found.acceptance.alpha:.3f} (published for an EAGLE-3 head on a ")


def test_workload_and_family_change_the_answer_where_rows_differ():
    qwen = get_model("qwen3-8b")
    chat, code, math = (
        resolve(Eagle3Head, qwen, w, 1128).acceptance.alpha for w in ("chat", "code-completion", "math")
    )
    assert chat < code < math  # DSpark Table 1: 2.66 < 4.33 < 5.30
    assert resolve(Eagle3Head, get_model("gpt-oss-20b"), "chat", 1128).acceptance.alpha != chat


def test_the_drafters_own_default_is_found_as_a_row_and_elsewhere_the_fallback_is_named():
    llama = get_model("llama-3.1-8b")
    own = resolve(Eagle3Head, llama, "chat", 1128)
    assert not own.fell_back and own.acceptance.alpha == Eagle3Head.published()[0].alpha
    assert "published for an EAGLE-3 head on a llama target, chat: vLLM issue #26191" in own.label
    other = resolve(Eagle3Head, llama, "math", 1128)  # no chain measurement of EAGLE-3 on Llama for maths
    assert other.fell_back and other.acceptance.alpha == own.acceptance.alpha
    assert "fell back: no published row for a llama target on math" in other.label
    unknown = resolve(Eagle3Head, get_model("article-8b"), "chat", 1128)
    assert unknown.fell_back and "the target article-8b (no known family)" in unknown.label


def test_the_default_line_names_the_size_it_was_measured_on_where_the_targets_differs(capsys):
    # vLLM #26191 measured EAGLE-3 on Llama-3.1-8B-Instruct: on a 70B target the short line says so, as an assumption
    big = resolve(Eagle3Head, get_model("llama-3.1-70b"), "chat", 2150)
    assert not big.fell_back
    assert "measured on llama-3.1-8b (8.0B parameters); assumed: it holds for this 70.6B target" in big.label
    fell = resolve(Eagle3Head, get_model("llama-3.1-70b"), "math", 2150)  # the fallback names it too
    assert fell.fell_back and "measured on llama-3.1-8b (8.0B parameters)" in fell.label
    assert "measured on" not in resolve(Eagle3Head, get_model("llama-3.1-8b"), "chat", 1128).label  # its own size
    assert "measured on" not in resolve(Eagle3Head, get_model("qwen3-8b"), "chat", 1128).label  # a row of Qwen3-8B
    assert "measured on qwen3-8b" in resolve(Eagle3Head, get_model("qwen3-32b"), "chat", 1128).label
    # a row that writes its model as the Hub does (SpecDecode-Bench's "Llama-3.1-8B-Instruct") is found in the catalog
    assert "measured on llama-3.1-8b (8.0B" in resolve(NgramDrafter, get_model("llama-3.1-70b"), "chat", 2150).label
    argv = "optimal-gamma --target llama-3.1-70b --draft eagle3 --tp 4 --hardware h100 --batch 64".split()
    assert main(argv) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("alpha 0.744")]
    assert "measured on llama-3.1-8b (8.0B parameters); assumed: it holds for this 70.6B target" in line


def test_each_drafters_own_default_names_the_family_of_the_model_it_was_measured_on():
    # P-EAGLE inherited the EAGLE-3 head's ("llama", "chat") and Llama-3.1-8B though its default is GPT-OSS-20B's
    from specsim.speculation.drafters import DRAFTERS, PEagleHead

    for kind, cls in DRAFTERS.items():
        if cls.published_target is not None and cls.published_for is not None and cls.published_for[0] != "*":
            assert target_family(get_model(cls.published_target)) == cls.published_for[0], kind
    on_llama = resolve(PEagleHead, get_model("llama-3.1-8b"), "chat", 1128)
    assert on_llama.fell_back and "measured on gpt-oss-20b (20.9B parameters)" in on_llama.label


def test_ngram_reads_its_rows_and_refuses_where_none_is_published():
    edit = resolve(NgramDrafter, get_model("qwen3-8b"), "code-editing", 1128)  # PR #24344's code editing, any target
    assert not edit.fell_back and edit.acceptance.cumulative == NgramDrafter.published()[0].cumulative
    assert "on any target, code-editing" in edit.label
    chat = resolve(NgramDrafter, get_model("llama-3.1-8b"), "chat", 1128)
    assert chat.acceptance.cumulative == (0.160, 0.128, 0.107) and "ShareGPT" in chat.row
    assert (
        resolve(NgramDrafter, get_model("llama-3.1-8b"), "chat", 1128).acceptance.cumulative
        > resolve(NgramDrafter, get_model("llama-3.1-8b"), "math", 1128).acceptance.cumulative
    )
    with pytest.raises(ValueError) as err:
        resolve(NgramDrafter, get_model("qwen3-8b"), "chat", 1128)
    assert str(err.value).startswith(
        "no published row for n-gram prompt lookup on a qwen3 target, chat; n-gram acceptance depends on the workload"
    )


def test_without_a_question_the_default_and_its_label_are_todays():
    acc, label = Eagle3Head.default_acceptance()
    assert label == (
        "alpha 0.744 (the published default for an EAGLE-3 head: vLLM issue #26191; pass alpha, acceptance "
        "or metrics for yours)"  # resolve_acceptance's keywords; the command's line names its flags
    )
    assert acc == Eagle3Head.published()[0]


@pytest.mark.parametrize("curve", CONTEXT_CURVES, ids=lambda c: f"{c.drafter}-{c.family}")
def test_context_dependence_falls_monotonically_and_is_one_at_the_first_published_point(curve):
    contexts = np.geomspace(10, 500_000, 200)
    f = curve.factor(contexts)
    assert np.all(np.diff(f) <= 1e-12) and f[0] == 1.0 and f[-1] < 1.0
    (first, _), (last, _) = curve.points[0], curve.points[-1]
    alphas = curve.alphas()  # the per-token acceptance at each published context (a tau curve's solved from E)
    assert float(curve.factor(first)) == 1.0 and np.all(np.diff(alphas) <= 0)
    assert float(curve.factor(last)) == pytest.approx(alphas[-1] / alphas[0], rel=1e-12)
    assert float(curve.factor(10 * last)) == float(curve.factor(last))  # held flat past the data, no extrapolation


def test_context_scales_the_chosen_acceptance_and_says_so_where_published_and_nowhere_else():
    qwen35 = get_model("qwen3.5-27b")  # MTP of a Qwen3.5 target: vLLM #47602's llama.cpp points
    short, long = (resolve(MtpHead, qwen35, "chat", L) for L in (100, 86_000))
    assert short.context_factor == 1.0 and long.context_factor == pytest.approx(0.475 / 0.855)
    assert long.acceptance.cumulative[0] == pytest.approx(0.875 * 0.475 / 0.855)
    assert "at 86,000 tokens of context x0.556 per token (vLLM issue #47602" in long.label
    llama = resolve(Eagle3Head, get_model("llama-3.1-8b"), "chat", 100_000)
    assert (
        llama.context_factor == 1.0
        and "no published context dependence for an EAGLE-3 head on a llama target" in llama.label
    )


def test_per_position_rates_scale_by_the_factor_per_depth():
    from specsim.speculation.acceptance import Acceptance
    from specsim.speculation.acceptance_data import _scaled

    got = _scaled(Acceptance(cumulative=(0.8, 0.6, 0.3)), 0.5).cumulative
    np.testing.assert_allclose(got, [0.4, 0.15, 0.0375])  # each depth's conditional rate halves


@pytest.mark.parametrize(
    "row, message",
    [
        (dict(workload="agentic"), "workload 'agentic' is not one of chat, code-completion"),
        (dict(tau=9.0, gamma=7), "tau 9.0 must be in [1, gamma + 1]"),
        (dict(tau=None, gamma=None, cumulative=()), "give tau and gamma, or per-position rates"),
        (dict(tau=None, gamma=None, cumulative=(0.2, 0.5)), "must not increase with depth"),
    ],
)
def test_bad_rows_are_refused(row, message):
    base = dict(
        drafter="eagle3", family="llama", workload="chat", target="t", dataset="d", source="s", tau=3.0, gamma=7
    )
    with pytest.raises(ValueError, match=None) as err:
        PublishedRow(**{**base, **row})
    assert message in str(err.value)
    with pytest.raises(ValueError, match="non-increasing acceptance"):
        ContextCurve("x", "y", ((100, 0.5), (1000, 0.6)), "rising")


def test_every_row_names_a_known_workload_and_family_and_finds_itself():
    families = {"llama", "qwen3", "qwen3.5", "gpt-oss", "*"}
    for row in ROWS:
        assert row.workload in ACCEPTANCE_WORKLOADS and row.family in families
        assert find_row(row.drafter, row.family, row.workload) is row
    assert target_family(get_model("deepseek-v3")) == "deepseek" and target_family(get_model("gemma-3-27b")) == "gemma3"


def _third_line(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_the_default_question_prints_todays_numbers(capsys):
    # The default deployment (Llama-3.1-8B + Llama-3.2-1B draft, chat, 1,128 tokens) keeps alpha 0.8: no row is
    # published for a draft model, so the article's value stands, and the output says it fell back.
    default = _third_line(capsys, ["optimal-gamma", "--batch", "1,64"])
    given = _third_line(capsys, ["optimal-gamma", "--batch", "1,64", "--alpha", "0.8"])
    assert default[2].startswith("alpha 0.800 (the published default for a draft model: ") and "fell back" in default[2]
    assert default[3:] == given[3:]  # every number after the acceptance line is the same as with --alpha 0.8
    eagle = _third_line(capsys, ["optimal-gamma", "--batch", "1,64", "--draft", "eagle3", "--workload", "chat"])
    eagle_alpha = _third_line(
        capsys,
        ["optimal-gamma", "--batch", "1,64", "--draft", "eagle3", "--alpha", repr(Eagle3Head.published()[0].alpha)],
    )
    assert eagle[3:] == eagle_alpha[3:]


def test_workload_flag_reaches_the_lookup_and_bad_ones_are_refused_in_one_line(capsys):
    out = _third_line(
        capsys,
        ["speedup", "--gamma", "3", "--batch", "1", "--draft", "eagle3", "--target", "qwen3-8b", "--workload", "math"],
    )
    assert "published for an EAGLE-3 head on a qwen3 target, math: DSpark paper (arXiv:2607.05147) Table 1" in out[2]
    assert main(["optimal-gamma", "--workload", "agentic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "specsim optimal-gamma: error: argument --workload: unknown workload 'agentic'; choose chat, "
        "summarization, reasoning, math, code-completion, code-editing (see specsim optimal-gamma --help)"
    ]
    assert main(["compare", "--workload", "math", "--alpha", "0.7"]) == 2
    assert capsys.readouterr().err.strip() == (
        "specsim compare: error: --workload chooses a published acceptance; --alpha gives yours: drop one of them"
    )
    assert main(["serve-sim", "--rate", "1", "--workload", "agentic"]) == 2
    assert capsys.readouterr().err.strip() == (
        "specsim serve-sim: error: argument --workload: unknown workload 'agentic'; choose chat, summarization, "
        "reasoning, math, code-completion, code-editing (see specsim serve-sim --help)"
    )


def test_workload_is_one_catalogue_every_command_reads_alike(capsys):
    """Every --workload takes the same names (each giving lengths and a published acceptance), and a name the model
    commands take per batch is taken at a load and by serve-sim too: one catalogue, not two."""
    from specsim.cli.main import build_parser
    from specsim.core.workloads import WORKLOADS, acceptance_of

    assert set(ACCEPTANCE_WORKLOADS) <= set(WORKLOADS)  # every published benchmark class is a workload a user can name
    assert all(w.acceptance in ACCEPTANCE_WORKLOADS for w in WORKLOADS.values())
    assert [n for n in WORKLOADS if acceptance_of(n)[1]] == ["reasoning"]  # the only one reading another's rows
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    takers = [name for name, p in sub.items() if any(a.dest == "workload" for a in p._actions)]
    assert {"optimal-gamma", "speedup", "explain", "compare", "schedule", "serve-sim", "serve-sweep"} <= set(takers)
    for name in takers:
        flag = next(a for a in sub[name]._actions if a.dest == "workload")
        assert [flag.type(n) for n in WORKLOADS] == list(WORKLOADS), name
        assert flag.type("code") == "code-completion", name
    # reasoning per batch: math's published acceptance, and the label says it is another workload's
    out = _third_line(
        capsys,
        [
            "speedup",
            "--gamma",
            "3",
            "--batch",
            "1",
            "--draft",
            "eagle3",
            "--target",
            "qwen3-8b",
            "--workload",
            "reasoning",
        ],
    )
    assert out[2].startswith(
        "alpha 0.878 (reasoning reads math's published acceptance (GSM8K), the nearest measured; published for an "
        "EAGLE-3 head on a qwen3 target, math: DSpark paper"
    )
    # math at a load: its own lengths (once refused at a load, or the article's lengths kept), and its own acceptance
    assert (
        main(["optimal-gamma", "--concurrency", "4", "--draft", "eagle3", "--target", "qwen3-8b", "--workload", "math"])
        == 0
    )
    out = capsys.readouterr().out
    assert "requests: workload math (GSM8K answered by Llama-3.1-8B-Instruct" in out and "means 94 in, 171 out" in out
    assert "alpha 0.878 (published for an EAGLE-3 head on a qwen3 target, math:" in out


@pytest.mark.parametrize(
    "name, prompt, output", [("math", 91.5, 161.5), ("summarization", 788.5, 337.5), ("code-editing", 156, 144.5)]
)
def test_a_measured_workload_has_the_median_lengths_of_its_trace(name, prompt, output):
    """The SpecDecode-Bench traces' medians (GSM8K, CNN/DailyMail and InstructCoder answered by Llama-3.1-8B-Instruct):
    20,000 seeded draws give them back within 3%.  The draws are fixed, so this checks the constants and the sampler,
    not chance: the standard error of a lognormal median at sigma 1.09, the widest, over 20,000 draws is 1%, so 3% would
    hold for almost any seed."""
    from specsim.core.workloads import get_workload

    p, o = get_workload(name).sample(20_000, np.random.default_rng(0))
    assert np.median(p) == pytest.approx(prompt, rel=0.03) and np.median(o) == pytest.approx(output, rel=0.03)


def test_serving_code_editing_is_its_own_workload_and_code_stays_an_alias():
    from specsim.core.workloads import get_workload

    edit, code = get_workload("code-editing"), get_workload("code")
    assert code.name == "code-completion" and code.prompt_median == 1500 and code.output_median == 13
    assert edit.acceptance == "code-editing" and (edit.prompt_median, edit.output_median) == (156, 144.5)
    # The log-spreads give back the means the source reports (lognormal: mean = median exp(sigma^2 / 2)), within 1%.
    assert edit.prompt_median * np.exp(edit.prompt_sigma**2 / 2) == pytest.approx(171, rel=0.01)
    assert edit.output_median * np.exp(edit.output_sigma**2 / 2) == pytest.approx(262, rel=0.01)


def test_serve_sim_reads_the_workloads_acceptance(capsys):
    assert (
        main(
            [
                "serve-sim",
                "--rate",
                "2",
                "--requests",
                "20",
                "--runs",
                "1",
                "--draft",
                "ngram",
                "--workload",
                "code-editing",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "acceptance: acceptance 0.4434, 0.4051, 0.3832, 0.3722, 0.3613 (published for n-gram prompt lookup on any target, "
        "code-editing: vLLM PR #24344" in out
    )
    assert (
        main(
            [
                "serve-sim",
                "--rate",
                "2",
                "--requests",
                "20",
                "--runs",
                "1",
                "--draft",
                "ngram",
                "--workload",
                "reasoning",
            ]
        )
        == 0
    )
    assert "on a llama target, math: SpecDecode-Bench" in capsys.readouterr().out  # reasoning reads maths' rows


def test_a_drafters_default_acceptance_reads_the_context_and_the_help_says_per_position():
    from specsim.speculation.drafters import default_acceptance_help

    qwen35 = get_model("qwen3.5-27b")
    long, label = MtpHead.default_acceptance(qwen35, "chat", 86_000)
    assert long.cumulative == resolve(MtpHead, qwen35, "chat", 86_000).acceptance.cumulative
    assert long.cumulative[0] < MtpHead.default_acceptance(qwen35, "chat", 100)[0].cumulative[0] and "86,000" in label
    mtp = MtpHead.default_acceptance()[0]
    assert (
        f"{MtpHead.label} {', '.join(f'{c:g}' for c in mtp.cumulative)} by position"
        in default_acceptance_help().split("; ")
    )
    with pytest.raises(ValueError) as err:
        MtpHead.support("llama.cpp")
    assert str(err.value) == (
        f"llama.cpp does not run {MtpHead.label} (draft mtp) in any release: not among its drafting "
        "methods; engines that do: vllm from 0.10.0, sglang from 0.4.3, trtllm from 1.0.0"
    )
