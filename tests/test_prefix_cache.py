"""A prompt's share served from the engine's prefix cache (EngineLimits.prefix_hit, EngineLimits.prompt_split): the
one prefill formula (Deployment.prefill_s) charges the tokens left over the cached ones, the serving model and the
simulator take it alike, calibrate-engine and the answers at a load take it from one flag, and a share outside [0, 1]
is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specsim.cli.main import main
from specsim.core.workloads import Workload
from specsim.serving.simulator import EngineLimits, StepTable, simulate
from specsim.serving.steady import steady_state
from specsim.serving.workloads import Requests
from specsim.speculation.deployment import Deployment
from specsim.timing.roofline import pass_flop

DEP = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
SPREAD = Workload("test", 1000, 0.3, 256, 0.3, 8000, 4000, "test: lognormal, spread 0.3")
REPO = Path(__file__).resolve().parent.parent
PROMPTS = np.array([1.0, 16.0, 1000.0, 5806.0, 30000.0])


def test_no_hit_is_the_prefill_as_it_was():
    """h = 0 caches nothing: the marginal time is t(1, P, 0) - t(1, 1, 0) of a prompt's pass, the formula before the
    share existed, to 1e-12, for the target and with the drafter."""
    new, cached = EngineLimits().prompt_split(PROMPTS)
    assert cached.tolist() == [0.0] * PROMPTS.size and new.tolist() == PROMPTS.tolist()
    for draft in (False, True):
        before = (
            DEP.gpu_pass(DEP.target, 1, PROMPTS, 0, prompt=True).total_s - DEP.gpu_pass(DEP.target, 1, 1, 0).total_s
        )
        if draft:
            before = before + DEP.gpu_pass(DEP.draft, 1, PROMPTS, 0, prompt=True).total_s
            before = before - DEP.gpu_pass(DEP.draft, 1, 1, 0).total_s
        got = DEP.prefill_s(new, draft=draft, cached_tokens=cached)
        np.testing.assert_allclose(got, before / DEP.engine.prefill_scale, rtol=1e-12, atol=0)


def test_a_hit_computes_the_tokens_left_over_the_whole_prompt():
    """At h = 0.8 of 5,806 tokens, 4,644 are cached: the pass computes 1,162 new tokens' matmuls and their attention
    over all 5,806 (the roofline's FLOP are those of 1,162 tokens at a context of 4,644, no more and no less), and its
    time lies between the 1,162 tokens alone and the whole prompt's."""
    limits = EngineLimits(prefix_hit=0.8)
    new, cached = limits.prompt_split(5806)
    assert (float(new), float(cached)) == (1162.0, 4644.0)
    model = DEP.target
    flop = pass_flop(model, 1, new, cached, prompt=True)
    whole = pass_flop(model, 1, 5806.0, 0.0, prompt=True)
    matmul = sum(f for f, _ in model.matmul_flop_by_dtype(new, 1))
    assert float(flop) == pytest.approx(matmul + float(model.pass_attention_flop(cached, new)), rel=1e-12)
    assert float(flop) < float(whole)
    t = float(DEP.prefill_s(new, cached_tokens=cached))
    assert float(DEP.prefill_s(new)) < t < float(DEP.prefill_s(5806.0))
    # the steady state charges that one formula
    s = steady_state(DEP, 0.8, [0], [4], 5806, 256, limits=limits)
    assert float(s.prefill_s[0, 0]) == pytest.approx(t, rel=1e-12)
    assert float(s.input_tokens[0]) == 5806.0  # the request's prompt as given: the KV cache holds it whole


def test_the_last_token_is_always_prefilled():
    """vLLM recomputes at least a whole-hit prompt's last token (max_cache_hit_length = num_tokens - 1)."""
    new, cached = EngineLimits(prefix_hit=1.0).prompt_split([0, 1, 100])
    assert new.tolist() == [0.0, 1.0, 1.0] and cached.tolist() == [0.0, 0.0, 99.0]


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_a_share_outside_zero_to_one_is_refused_by_the_limits(share):
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        EngineLimits(prefix_hit=share)


@pytest.mark.parametrize("gamma", [0, 3])
def test_with_a_hit_a_closed_loop_is_the_simulators_as_without(gamma):
    """The closed loops of tests/test_steady.py (lognormal lengths, spread 0.3, 12 requests per user, the first two per
    user and those ending after the last arrival left out) at h = 0.8: held to the same tolerances as at h = 0, 3% in
    TPOT and 8% in TTFT (the simulator's only randomness is seeded; the model ignores the spread of the batch and of the
    prefill across requests).  The prefill must move the answer: TTFT at 64 users falls by more than a tenth."""
    limits = EngineLimits(256, 8192, prefix_hit=0.8)
    table = StepTable(DEP, 256, 6000, 3, 8192, 0.8)
    concurrency = [1, 16, 64]
    P, O = SPREAD.sample(200_000, np.random.default_rng(0))
    context = float((O * (P + O / 2)).sum() / O.sum())
    model = steady_state(DEP, 0.8, [gamma], concurrency, P.mean(), O.mean(), limits=limits, context=context)
    none = steady_state(DEP, 0.8, [gamma], concurrency, P.mean(), O.mean(), limits=EngineLimits(256, 8192))
    assert model.ttft_s[0, 2] < 0.9 * none.ttft_s[0, 2]
    for j, c in enumerate(concurrency):
        p, o = SPREAD.sample(max(12 * c, 300), np.random.default_rng(j + 1))
        run = simulate(Requests(p, o, None), table, limits, 0.8, gamma, np.random.default_rng(7), concurrency=c)
        n = run.arrival_s.size
        keep = (np.arange(n) >= 2 * c) & (run.finish_s <= np.nanmax(run.arrival_s)) & (run.output > 1)
        tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
        ttft = (run.first_token_s - run.arrival_s)[keep].mean()
        assert model.tpot_s[0, j] == pytest.approx(tpot, rel=0.03), c
        assert model.ttft_s[0, j] == pytest.approx(ttft, rel=0.08), c


@pytest.mark.parametrize("share", ["-0.1", "1.5", "nan", "x"])
def test_the_commands_refuse_a_share_outside_zero_to_one(share, capsys):
    assert main(["optimal-gamma", "--rate", "0.5", "--prefix-hit", share]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert "--prefix-hit" in lines[-1] and "[0, 1]" in lines[-1] and "Traceback" not in "".join(lines)


def test_the_answer_at_a_rate_says_and_takes_the_share(capsys):
    assert main(["optimal-gamma", "--rate", "2", "--input-len", "4000", "--prefix-hit", "0.8", "--json"]) == 0
    hit = capsys.readouterr().out
    assert main(["optimal-gamma", "--rate", "2", "--input-len", "4000", "--json"]) == 0
    none = capsys.readouterr().out
    assert "prefix-cache hit 0.8 of prompt tokens" in hit and "prefix-cache hit" not in none
    assert hit != none


def test_a_calibration_keeps_its_runs_share_and_the_answers_on_it_take_it_unless_given(capsys, tmp_path):
    """calibrate-engine --prefix-hit writes the share into the file's serving record; an answer at a load from the file
    takes it and says so in its limits, and --prefix-hit given there (0 included) replaces it."""
    from specsim.calibration.file import read_calibration

    bench, out = REPO / "examples" / "bench", tmp_path / "cal.yaml"
    argv = ["--plain", str(bench / "vllm-plain.jsonl"), "--hardware", "h100", "--engine", "vllm@0.10"]
    assert main(["calibrate-engine", *argv, "--timing", "roofline", "--prefix-hit", "0.6", "--out", str(out)]) == 0
    assert "prefix cache: 0.6 of each prompt's tokens served from it, not prefilled (--prefix-hit)" in (
        capsys.readouterr().out
    )
    assert read_calibration(out).serving["prefix_hit"] == 0.6
    ask = [
        "optimal-gamma",
        "--calibration",
        str(out),
        "--draft",
        "eagle3",
        "--concurrency",
        "16",
        "--input-len",
        "3000",
    ]
    ask += ["--json"]
    assert main(ask) == 0
    assert (
        "prefix-cache hit 0.6 of prompt tokens (the limits cal.yaml's runs were fitted under, its prefix-cache share from --prefix-hit;"
        in (capsys.readouterr().out)
    )
    assert main([*ask, "--prefix-hit", "0"]) == 0
    assert "prefix-cache hit" not in capsys.readouterr().out


def test_serve_sim_plays_the_share(capsys):
    """serve-sim takes --prefix-hit into the simulator: at 4 requests/s of the chat workload (seeded), the plain arm's
    mean TTFT falls with 0.8 of each prompt cached, and its limits say the share."""
    import json

    ask = ["serve-sim", "--rate", "4", "--requests", "300", "--workload", "chat", "--json"]
    assert main(ask) == 0
    none = json.loads(capsys.readouterr().out)
    assert main([*ask, "--prefix-hit", "0.8"]) == 0
    text = capsys.readouterr().out
    hit = json.loads(text)
    assert "prefix-cache hit 0.8 of prompt tokens" in text and "prefix-cache hit" not in json.dumps(none)
    assert hit["off"]["ttft_s"]["mean"] < 0.9 * none["off"]["ttft_s"]["mean"]


def test_calibrate_engine_reads_the_share_from_the_metrics_page(capsys, tmp_path):
    """Where --prefix-hit is not given, a vLLM /metrics page given for the runs' acceptance gives the share too:
    vllm:prefix_cache_hits over vllm:prefix_cache_queries (vllm/v1/metrics/loggers.py 0.30.0 L589-606), said as read
    from there; the page of examples/ without them gives none, and --prefix-hit given wins over the page."""
    page = tmp_path / "metrics.txt"
    counters = 'vllm:prefix_cache_queries_total{engine="0"} 4000.0\nvllm:prefix_cache_hits_total{engine="0"} 3000.0\n'
    page.write_text((REPO / "examples" / "vllm-metrics.txt").read_text() + counters)
    bench = REPO / "examples" / "bench"
    argv = ["--plain", str(bench / "guidellm-plain.json"), "--spec", str(bench / "guidellm-eagle3.json")]
    argv += ["--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.30", "--timing", "roofline"]
    assert main(["calibrate-engine", *argv, "--metrics", str(page)]) == 0
    out = capsys.readouterr().out
    assert (
        "prefix cache: 0.75 of each prompt's tokens served from it, not prefilled (metrics.txt: "
        "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, 3,000 of 4,000 prompt tokens" in out
    )
    assert main(["calibrate-engine", *argv, "--metrics", str(REPO / "examples" / "vllm-metrics.txt")]) == 0
    assert "prefix cache:" not in capsys.readouterr().out
    assert main(["calibrate-engine", *argv, "--metrics", str(page), "--prefix-hit", "0.5"]) == 0
    assert "prefix cache: 0.5 of each prompt's tokens served from it, not prefilled (--prefix-hit)" in (
        capsys.readouterr().out
    )


COUNTERS = 'vllm:prefix_cache_queries_total{engine="0"} 4000.0\nvllm:prefix_cache_hits_total{engine="0"} 3000.0\n'


def test_plain_runs_take_the_share_from_a_metrics_page(capsys, tmp_path):
    """Plain runs alone with a vLLM /metrics page: the share is its vllm:prefix_cache_hits over
    vllm:prefix_cache_queries (3,000 of 4,000), said as read from the page, and written into the calibration file
    with where it came from, which the file's answers say; a file whose record of it is not text is refused.  Before
    2026-12-07 --metrics without --spec was refused ("--draft, --steps and --metrics describe speculative
    runs"), so a user with plain runs and a page had to copy the share by hand."""
    from specsim.calibration.file import read_calibration

    page, out = tmp_path / "plain-metrics.txt", tmp_path / "cal.yaml"
    page.write_text(COUNTERS)
    argv = ["calibrate-engine", "--plain", str(REPO / "examples" / "bench" / "vllm-plain.jsonl"), "--hardware", "h100"]
    argv += ["--engine", "vllm@0.30", "--timing", "roofline", "--metrics", str(page), "--out", str(out)]
    assert main(argv) == 0
    assert (
        "prefix cache: 0.75 of each prompt's tokens served from it, not prefilled (plain-metrics.txt: "
        "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, 3,000 of 4,000 prompt tokens since the "
        "server started)" in capsys.readouterr().out
    )
    serving = read_calibration(out).serving
    assert serving["prefix_hit"] == 0.75
    assert serving["prefix_hit_from"].startswith("plain-metrics.txt: vllm:prefix_cache_hits_total / ")
    ask = ["optimal-gamma", "--calibration", str(out), "--concurrency", "16", "--input-len", "3000", "--json"]
    assert main(ask) == 0
    assert "fitted under, its prefix-cache share from plain-metrics.txt: vllm:prefix_cache_hits_total" in (
        capsys.readouterr().out
    )
    text = out.read_text()
    start = text.index("  prefix_hit_from:")
    end = text.index("  input_tokens:", start)
    out.write_text(text[:start] + "  prefix_hit_from: 3\n" + text[end:])
    assert main(ask) == 2
    assert "serving: prefix_hit_from must be where the share came from (text), or null, got 3" in (
        capsys.readouterr().err
    )


def test_runs_that_record_their_acceptance_take_the_share_from_a_metrics_page(capsys, tmp_path):
    """Speculative runs whose files record their acceptance (vllm bench serve's) with a page that counts prefix-cache
    hits: the page gives the share and no acceptance (it was refused before as "used for none")."""
    page = tmp_path / "metrics.txt"
    page.write_text((REPO / "examples" / "vllm-metrics.txt").read_text() + COUNTERS)
    bench = REPO / "examples" / "bench"
    argv = ["calibrate-engine", "--plain", str(bench / "vllm-plain.jsonl"), "--spec", str(bench / "vllm-eagle3.jsonl")]
    argv += ["--hardware", "h100", "--draft", "eagle3", "--steps", "3", "--engine", "vllm@0.30", "--timing", "roofline"]
    assert main([*argv, "--metrics", str(page)]) == 0
    out = capsys.readouterr().out
    assert "prefix cache: 0.75 of each prompt's tokens served from it, not prefilled (metrics.txt:" in out
    assert "acceptance length of the" not in out  # the files' own acceptance, not the page's


@pytest.mark.parametrize(
    ("extra", "engine", "said"),
    [
        (  # a page without the counters gives nothing to plain runs
            "vllm-metrics.txt",
            "vllm@0.30",
            "--metrics vllm-metrics.txt: the runs are plain (no --spec), so none takes an acceptance length from it, "
            "and it shows no vllm:prefix_cache_hits_total and vllm:prefix_cache_queries_total (or none queried)",
        ),
        (  # the share given twice: the page would be read for nothing
            "counters.txt --prefix-hit 0.5",
            "vllm@0.30",
            "--metrics counters.txt would be used for nothing: the runs are plain (no --spec), so none takes an "
            "acceptance length from it, and --prefix-hit gives the prefix-cache share: drop one of them",
        ),
        (  # an engine whose prefix-cache counters specsim has not read
            "counters.txt",
            "sglang@0.5",
            "--metrics counters.txt: the runs are plain (no --spec), so none takes an acceptance length from it, and "
            "specsim reads no prefix-cache counters of sglang@0.5's metrics",
        ),
    ],
)
def test_a_page_that_gives_plain_runs_nothing_is_refused(extra, engine, said, capsys, tmp_path):
    (tmp_path / "counters.txt").write_text(COUNTERS)
    (tmp_path / "vllm-metrics.txt").write_text((REPO / "examples" / "vllm-metrics.txt").read_text())
    out = tmp_path / "cal.yaml"
    argv = ["calibrate-engine", "--plain", str(REPO / "examples" / "bench" / "vllm-plain.jsonl"), "--hardware", "h100"]
    argv += [
        "--engine",
        engine,
        "--timing",
        "roofline",
        "--out",
        str(out),
        "--metrics",
        str(tmp_path / extra.split()[0]),
    ]
    assert main([*argv, *extra.split()[1:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert said in err[-1] and "Traceback" not in "\n".join(err), err
    assert not out.exists()


def test_a_mean_share_charges_the_mean_tokens_and_at_most_the_mean_prefill():
    """docs/serving.md's limit of one share for every request: a multi-turn mix (30% of 5,806-token prompts missing,
    the rest 0.953 cached: token-weighted share 0.667) prefills, on average, the tokens the mean share leaves (to the
    floor's one token), and its mean prefill time is at most the mean share's, since the prefill's attention over the
    cached tokens makes its time concave in the share (new (cached + new / 2) = P^2 (1 - h^2) / 2), and within 10%:
    the spread's cost is in TTFT's tail, not its mean.  Deterministic (no sampling)."""
    P, miss, hit = 5806.0, 0.3, 0.953
    mean_share = (1.0 - miss) * hit
    mixed_new = miss * P + (1.0 - miss) * float(EngineLimits(prefix_hit=hit).prompt_split(P)[0])
    new, cached = EngineLimits(prefix_hit=mean_share).prompt_split(P)
    assert abs(mixed_new - float(new)) <= 1.0

    def prefill(h):
        n, c = EngineLimits(prefix_hit=h).prompt_split(P)
        return float(DEP.prefill_s(n, cached_tokens=c))

    mixed = miss * prefill(0.0) + (1.0 - miss) * prefill(hit)
    assert 0.9 * prefill(mean_share) < mixed <= prefill(mean_share)
