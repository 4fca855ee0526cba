"""The one serving model (specsim.serving.steady): its steady state against the request-level simulator that plays the
same iterations request by request, the rounds a request decodes against Monte Carlo, and no answer that diverges or
goes negative, whatever the load."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsim.core.workloads import Workload
from specsim.serving.simulator import EngineLimits, StepTable, simulate
from specsim.serving.steady import decode_rounds, iteration_s, steady_state
from specsim.serving.workloads import Requests
from specsim.speculation.acceptance import Acceptance
from specsim.speculation.deployment import Deployment

DEP = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline")
#: Lengths that vary (as real prompts and outputs do), so that no two users stay in step.
SPREAD = Workload("test", 1000, 0.3, 256, 0.3, 8000, 4000, "test: lognormal, spread 0.3")
LIMITS = EngineLimits(256, 8192)


def _steady_part(result, warmup: int) -> np.ndarray:
    """Requests of a simulated run past its first ``warmup`` and finished before its last arrival (no ramp, no drain)."""
    n = result.arrival_s.size
    return (np.arange(n) >= warmup) & (result.finish_s <= np.nanmax(result.arrival_s)) & (result.output > 1)


@pytest.fixture(scope="module")
def table():
    return StepTable(DEP, 256, 6000, 3, 8192, 0.8)


#: SGLang's way: prompt chunks in prefill batches of their own, the decoding sequences waiting, and a budget that is
#: the prompts' alone (chunked_prefill_size), small enough to bind at 256 users.
PROMPTS_ONLY = EngineLimits(256, 4096, prefill_apart=True)


@pytest.mark.parametrize("gamma, limits", [(0, LIMITS), (3, LIMITS), (0, PROMPTS_ONLY), (3, PROMPTS_ONLY)])
def test_a_closed_loop_is_the_simulators_within_three_percent_in_tpot_and_eight_in_ttft(table, gamma, limits):
    """Closed loops of 1-256 users with lognormal lengths (spread 0.3), each run 12 requests per user (300 at least),
    the first two per user and those ending after the last arrival left out.  The simulator is deterministic but for
    its acceptance draws and lengths (seeded); the mean-value model ignores the variance of the batch and of the prefill
    cost across requests, which is its error: up to 2.5% in TPOT at 256 users, measured when this test was written.
    With prefill batches apart (SGLang's way, a budget of 4096 prompt tokens) TPOT stays within 2.3% and TTFT within
    3.8% (measured 2026-12-03, with the drafter's draft extend in each prefill batch; at 32 and 128 users, not run
    here, TTFT within 5.9%).  Before the wait counted the chain of rounds and prefill batches (closed_loop_times: a
    round's finishers are prefilled two iterations after it), the TTFT of 256 speculating users was 13.6% over."""
    concurrency = [1, 4, 16, 64, 256]
    P, O = SPREAD.sample(200_000, np.random.default_rng(0))
    model = steady_state(
        DEP,
        0.8,
        [gamma],
        concurrency,
        P.mean(),
        O.mean(),
        limits=limits,
        context=float((O * (P + O / 2)).sum() / O.sum()),
    )
    for j, c in enumerate(concurrency):
        n = max(12 * c, 300)
        p, o = SPREAD.sample(n, np.random.default_rng(j + 1))
        run = simulate(Requests(p, o, None), table, limits, 0.8, gamma, np.random.default_rng(7), concurrency=c)
        keep = _steady_part(run, 2 * c)
        tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
        ttft = (run.first_token_s - run.arrival_s)[keep].mean()
        assert model.tpot_s[0, j] == pytest.approx(tpot, rel=0.03), c
        assert model.ttft_s[0, j] == pytest.approx(ttft, rel=0.08), c
        # The decode batch (sequences decoding over the busy time, prompt-only iterations at 0) over the whole run:
        # within 5.0% when written (2026-12-06), the simulator's lower by its ramp and drain; 1 user 0.985 in both.
        assert model.mean_batch[0, j] == pytest.approx(run.mean_batch, rel=0.06), c


@pytest.mark.parametrize("gamma", [0, 3])
def test_prefill_batches_apart_cost_the_decoding_sequences_what_the_simulator_plays(table, gamma):
    """SGLang runs prompt chunks in prefill batches of their own, the decoding sequences waiting (its scheduler runs a
    prefill batch first whenever one is ready): each batch reads the weights once more.  At 64 users the simulator's
    TPOT is 8-10% longer that way than with the chunks riding in the decoding iterations (measured when this was
    written); the model follows it within 2%, and the model that lets the chunks ride is more than 5% off it."""
    P, O = SPREAD.sample(200_000, np.random.default_rng(0))
    context = float((O * (P + O / 2)).sum() / O.sum())
    riding = EngineLimits(256, 4096)
    apart, ride = (
        steady_state(DEP, 0.8, [gamma], [64], P.mean(), O.mean(), limits=lim, context=context).tpot_s[0, 0]
        for lim in (PROMPTS_ONLY, riding)
    )
    p, o = SPREAD.sample(768, np.random.default_rng(4))
    run = simulate(Requests(p, o, None), table, PROMPTS_ONLY, 0.8, gamma, np.random.default_rng(7), concurrency=64)
    keep = _steady_part(run, 128)
    tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
    assert apart == pytest.approx(tpot, rel=0.02)
    assert abs(ride / tpot - 1.0) > 0.05


def test_a_speculating_prefill_batch_run_apart_reads_the_drafters_weights_too(monkeypatch):
    """SGLang runs its drafter's draft extend after every prefill batch (EAGLEWorker.forward_batch_generation): the
    base pass of a speculating prefill batch is the target's and the drafter's.  At 64 users with prefill apart, the
    speculating TPOT is longer with it than without; the plain TPOT does not move, nor does a speculating one where the
    chunks ride in decoding iterations."""
    base, spec = DEP.prefill_base_s(), DEP.prefill_base_s(draft=True)
    drafter = float(np.asarray(DEP.gpu_pass(DEP.draft, 1, 1, 0).total_s))
    assert spec == pytest.approx(base + drafter) and drafter > 0.05 * base  # a 1B drafter beside an 8B target

    def tpot(limits):
        return steady_state(DEP, 0.8, [0, 3], [64], 1000, 256, limits=limits).tpot_s[:, 0]

    riding = EngineLimits(256, 4096)
    apart, ride = tpot(PROMPTS_ONLY), tpot(riding)
    monkeypatch.setattr(Deployment, "prefill_base_s", lambda self, draft=False: base)
    apart_without, ride_without = tpot(PROMPTS_ONLY), tpot(riding)
    assert apart[1] > apart_without[1] * 1.001 and apart[0] == pytest.approx(apart_without[0], rel=1e-12)
    assert ride == pytest.approx(ride_without, rel=1e-12)


@pytest.mark.parametrize("gamma", [0, 3])
def test_poisson_arrivals_up_to_sixty_percent_of_capacity_are_the_simulators_within_four_percent(table, gamma):
    """3,000 Poisson arrivals per rate, the first 300 and those ending after the last arrival left out.  Near capacity
    the mean-value model misses the queue's fluctuations (it under-predicts), so only rates below 80% of the full
    engine's are held to it.

    At 1% of capacity the engine is mostly idle when a request arrives, so its TTFT is a lone request's: the model's
    mean TTFT there is held within 2% (its wait weighted by the chance an iteration is running; it charged half an
    iteration at any rate, and the own prompt's iteration a round of the request itself: +8% plain and +22% speculating
    before, the simulator's TTFT fixed by seed).  Under load an arrival lands in a long iteration more often than in a
    short one (landed_iteration_s): with that the model's TTFT is within 6.4% of the simulator's up to 80% of capacity
    (-6.1% and -6.4% at 60%, measured 2026-12-06), held within 8%; with the mean iteration it was 4-19% under."""
    P, O = SPREAD.sample(200_000, np.random.default_rng(0))
    capacity = float(steady_state(DEP, 0.8, [gamma], [256], P.mean(), O.mean(), limits=LIMITS).requests_per_s[0, 0])
    rates = [0.01 * capacity, 0.1 * capacity, 0.35 * capacity, 0.6 * capacity]
    model = steady_state(DEP, 0.8, [gamma], rates, P.mean(), O.mean(), kind="rate", limits=LIMITS)
    assert not model.saturated.any()
    for j, rate in enumerate(rates):
        run = simulate(
            Requests.poisson(rate, 3000, SPREAD, np.random.default_rng(j)),
            table,
            LIMITS,
            0.8,
            gamma,
            np.random.default_rng(7),
        )
        keep = _steady_part(run, 300)
        # The decode batch over the engine's busy time: within 5.8% of the whole run's when written (2026-12-06); at
        # 1% of capacity it counted the idle time too (0.40 against the simulator's 1.22, plain).
        assert model.mean_batch[0, j] == pytest.approx(run.mean_batch, rel=0.07), rate
        ttft = (run.first_token_s - run.arrival_s)[keep].mean()
        assert model.ttft_s[0, j] == pytest.approx(ttft, rel=0.02 if j == 0 else 0.08), rate
        if j == 0:
            continue
        tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
        assert model.tpot_s[0, j] == pytest.approx(tpot, rel=0.04 if j < 3 else 0.06), rate


def test_an_offline_batch_is_the_simulators_within_four_percent_in_throughput(table):
    """Every request sent at once, equal lengths: the simulator prefills them in the budget and decodes them together
    until the slowest is done (speculating, requests need different numbers of rounds; the model adds the expected
    slowest's excess at the step of half the batch: it under-predicts by 2.3-3.0% at 8-256 requests, measured when this
    test was written).  Past max_num_seqs (256 here) the model runs the waves one after another, which plain decoding of
    equal requests does (1.9% under at 300); a speculating engine starts the next requests as the first ones finish,
    which the model does not follow (6% under at 300), so that case is not held to it."""
    for n, gammas in ((8, (0, 3)), (64, (0, 3)), (256, (0, 3)), (300, (0,))):
        model = steady_state(DEP, 0.8, list(gammas), [n], 500, 128, kind="batch", limits=LIMITS)
        for i, gamma in enumerate(gammas):
            run = simulate(
                Requests(np.full(n, 500), np.full(n, 128), np.zeros(n)),
                table,
                LIMITS,
                0.8,
                gamma,
                np.random.default_rng(3),
            )
            throughput = run.output.sum() / np.nanmax(run.finish_s)
            assert model.output_tokens_per_s[i, 0] == pytest.approx(throughput, rel=0.04), (n, gamma)


@pytest.mark.parametrize("n", [64, 256])
def test_an_offline_batch_of_prompts_that_accept_differently_is_the_simulators_within_seven_and_a_half_percent(
    table, n
):
    """The same offline batch, each request's prompt with its own rate (0.8 plus 0.1 times a standard normal): the
    simulator draws them, the model adds their spread to the slowest request's wait (decode_rounds_spread).  The mean
    throughput of three seeds; measured when this test was written: the model +0.5% at 64 requests and -4.9% at 256,
    where without the prompts' spread it was +10.4% and +1.1%.  At 256 the model is -5.7% against the mean of 20 seeds
    (3-22; their standard error 0.3%), the same before and after the simulator took vLLM's drafting slots (2026-12-06),
    and three seeds' mean moves by up to 0.8% when any change reorders the draws (-5.3% before that change, -6.0% after):
    held within 7.5%.  Not held: 8 requests, where the model is 13% over the simulator (a few prompts far below the rate
    need many more rounds than the model's linear spread counts)."""
    model = steady_state(DEP, 0.8, [3], [n], 500, 128, kind="batch", limits=LIMITS, acceptance_spread=0.1)
    throughput = []
    for seed in (3, 4, 5):
        run = simulate(
            Requests(np.full(n, 500), np.full(n, 128), np.zeros(n)),
            table,
            LIMITS,
            0.8,
            3,
            np.random.default_rng(seed),
            acceptance_spread=0.1,
        )
        throughput.append(run.output.sum() / np.nanmax(run.finish_s))
    assert model.output_tokens_per_s[0, 0] == pytest.approx(np.mean(throughput), rel=0.075)


@pytest.mark.parametrize("budget", [2048, 8192])
def test_plain_users_of_one_output_length_move_in_step_as_the_simulator_plays_them(budget):
    """Every request 256 tokens out (a fixed-length benchmark), prompts about 716 tokens (spread 20, as gsm8k's), 2048
    tokens an iteration (vLLM's own on an A100; convoys of two) or 8192 (an H100's; of eleven, so that 16, 32 and 64
    users leave a smaller last group): the steady state's convoys (closed_population's groups, convoy_prompts) are the
    simulator's within 2% in TPOT and 6% in TTFT at 8-64 users, over 40 requests per user with the first 20 left out
    (the convoys form from the run's start).  Measured when this test was written: TPOT within 0.7%, TTFT within 4.1%
    (at 64 users, 2048 tokens; 0.7% elsewhere).  Before convoy_prompts the model put a whole group of others' prompts in
    each decode phase where the simulator puts half (two groups): 1.3% over in TPOT at 2048 tokens, 4.2% at 8192, and
    14% in TTFT at 16 users.  Deterministic: plain decoding draws nothing."""
    limits = EngineLimits(256, budget)
    table = StepTable(DEP, 256, 1200, 0, budget, 0.8)
    concurrency = [8, 16, 32, 64]
    model = steady_state(DEP, 0.8, [0], concurrency, 716, 256, limits=limits, fixed_lengths=True)
    for j, c in enumerate(concurrency):
        n = 40 * c
        p = np.round(716 + 20 * np.random.default_rng(1).standard_normal(n)).astype(int)
        run = simulate(
            Requests(p, np.full(n, 256), None), table, limits, 0.8, 0, np.random.default_rng(7), concurrency=c
        )
        keep = np.arange(n) >= 20 * c
        tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
        ttft = (run.first_token_s - run.arrival_s)[keep].mean()
        assert model.tpot_s[0, j] == pytest.approx(tpot, rel=0.02), c
        assert model.ttft_s[0, j] == pytest.approx(ttft, rel=0.06), c


@pytest.mark.parametrize("prompt, users", [(1300, [8, 16]), (1600, [8, 16, 32, 48, 56, 64])])
def test_plain_users_whose_prompts_take_an_iteration_each_queue_as_a_chain(prompt, users):
    """Fixed lengths, 2048 tokens an iteration, prompts longer than half of it: one prompt an iteration, so the users
    move in step one by one, each arriving during the prefill iteration of the one before (a convoy of groups of one),
    and its TTFT is that iteration and its own.  The steady state's TTFT is the simulator's within 6% and its TPOT within
    2% (over 40 requests per user, the first 20 left out).  Measured when this test was written: TTFT within 0.3%, TPOT
    within 1.1%; before the chain, groups of one were taken as spread uniformly, the iteration waited for an average one:
    TTFT 34% under at 1300 tokens and 8 users, 18-36% under at 1600.  Where the budget's remainder takes part of the next
    prompt (1000 tokens at 56-64 users, 1300 at 32-64), the run's first burst leaves a packed stream of prompts that
    dissolves into the chain one user a cycle: over this test's window the simulator's TTFT is 6-36% longer, and from
    about N_e cycles on it is the chain's (1000 tokens, 56 users: 82.1 ms over cycles 20-40, 54.6 ms from cycle 60,
    the model 54.7).  The model gives the long run; a short benchmark sees the transient.  Deterministic: plain decoding
    draws nothing."""
    limits = EngineLimits(256, 2048)
    table = StepTable(DEP, 256, 2000, 0, 2048, 0.8)
    model = steady_state(DEP, 0.8, [0], users, prompt, 256, limits=limits, fixed_lengths=True)
    for j, c in enumerate(users):
        n = 40 * c
        run = simulate(
            Requests(np.full(n, prompt), np.full(n, 256), None),
            table,
            limits,
            0.8,
            0,
            np.random.default_rng(7),
            concurrency=c,
        )
        keep = np.arange(n) >= 20 * c
        tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
        ttft = (run.first_token_s - run.arrival_s)[keep].mean()
        assert model.tpot_s[0, j] == pytest.approx(tpot, rel=0.02), c
        assert model.ttft_s[0, j] == pytest.approx(ttft, rel=0.06), c


@pytest.mark.parametrize(
    "prompt, output, budget, users, before",
    [
        (2000, 64, 512, 56, "TTFT -56%, TPOT +144%"),  # the queue of prompts, not a group's own, sets k_p
        (128, 256, 2048, 16, "TTFT +105%"),  # all 16 prompts fit the budget with nobody decoding: one convoy, no wait
        (512, 256, 512, 1, "TTFT +48%"),  # a lone prompt that fills the budget: one iteration, not two
        (4000, 256, 2048, 16, "TTFT +24%"),  # a chain of two-iteration prompts: the wait is one full budget's iteration
        # just past a multiple of the budget: the last chunk is 22 tokens, and charging it alone put TTFT at 134.28 ms
        # against the simulator's 224.87 ms (225.49 ms with the later chunks charged as full budgets)
        (4070, 256, 2048, 16, "TTFT -40%"),
    ],
)
def test_plain_users_of_fixed_lengths_are_the_simulators_in_the_long_run_where_the_budget_binds(
    prompt, output, budget, users, before
):
    """Fixed lengths, plain, long past the run's first burst (60 cycles, the last 30 kept): TTFT within 3% and TPOT
    within 2% of the simulator.  Before (the helper's grid of 882 cells, 2026-12-05): where the queue of prompts set
    k_p the users were still taken to move in convoys, the others' prompts each request's decode phase met bunched
    (TPOT up to 9 times the simulator's at 8000-token prompts); the budget of a request's own prefill was taken with
    itself decoding beside it; and a chain's wait was charged its predecessor's whole prompt where it waits for its
    later chunks' iterations (full budgets).  Measured when this test was written: within 1.4% (TTFT) and 0.7% (TPOT)
    at each case; the grid's long-run cells off by more than 5% in TTFT went from 162 to 80 of 441 plain, in TPOT from
    66 to 4 (docs/serving.md says which charge of the wait was kept, and why)."""
    limits = EngineLimits(256, budget)
    table = StepTable(DEP, 256, prompt + output + 10, 0, budget, 0.8)
    n = 60 * users
    run = simulate(
        Requests(np.full(n, prompt), np.full(n, output), None),
        table,
        limits,
        0.8,
        0,
        np.random.default_rng(7),
        concurrency=users,
    )
    keep = np.arange(n) >= n // 2
    tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
    ttft = (run.first_token_s - run.arrival_s)[keep].mean()
    model = steady_state(DEP, 0.8, [0], [users], prompt, output, limits=limits, fixed_lengths=True)
    assert model.ttft_s[0, 0] == pytest.approx(ttft, rel=0.03), before
    assert model.tpot_s[0, 0] == pytest.approx(tpot, rel=0.02), before


def test_plain_users_queued_past_max_num_seqs_are_let_in_as_others_finish_not_in_a_chain():
    """The chain's counterpart: 24 users of 1600-token prompts at max_num_seqs 16, fixed lengths.  A queued user is let
    in as another finishes, so groups of one spread as if at random, and the steady state's TTFT (mostly the queue) is
    the simulator's within 3%, TPOT within 2%.  Measured when this test was written: TTFT 1.2% over, TPOT 0.1%; as a
    chain, the users would be taken to wait out a prefill each, as in the 70B example of docs/serving.md, where the
    chain put TTFT 9% over the simulator's."""
    limits = EngineLimits(16, 2048)
    table = StepTable(DEP, 16, 2000, 0, 2048, 0.8)
    model = steady_state(DEP, 0.8, [0], [24], 1600, 256, limits=limits, fixed_lengths=True)
    n = 40 * 24
    run = simulate(
        Requests(np.full(n, 1600), np.full(n, 256), None),
        table,
        limits,
        0.8,
        0,
        np.random.default_rng(7),
        concurrency=24,
    )
    keep = np.arange(n) >= 20 * 24
    tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
    ttft = (run.first_token_s - run.arrival_s)[keep].mean()
    assert model.tpot_s[0, 0] == pytest.approx(tpot, rel=0.02)
    assert model.ttft_s[0, 0] == pytest.approx(ttft, rel=0.03)


def test_a_benchmarks_run_of_plain_convoys_is_the_simulators_from_its_first_burst_to_its_last_wave():
    """A benchmark's run, not the steady state: 200 requests of 1000 in and 256 out from c users starting at once, the
    engine holding c (as the calibration samples run): the run's means (steady_state's ``requests``: the first burst's
    prompt queue, the last wave with no prompt after its own group's) are the simulator's within 2% in TPOT and 3% in
    TTFT.  Measured when this test was written: TPOT within 1.1%, TTFT within 1.6%; before the last wave's convoy
    accounting, -4.3% in TPOT at 64 users.  Not held: speculating runs' TTFT from the first burst, 7.0% and 5.0% over the
    simulator's (seeds 0-3) at 16 and 64 users since the burst's clusters are followed (burst_clustering; 10.8% and
    15.4% under before)."""
    for c in (4, 16, 64):
        limits = EngineLimits(max_num_seqs=c)
        table = StepTable(DEP, c, 1256, 0, 8192)
        run = simulate(
            Requests(np.full(200, 1000), np.full(200, 256), None),
            table,
            limits,
            0.0,
            0,
            np.random.default_rng(1),
            concurrency=c,
        )
        model = steady_state(DEP, 0.8, [0], [c], 1000, 256, limits=limits, fixed_lengths=True, requests=200)
        assert model.tpot_s[0, 0] == pytest.approx(np.mean(run.tpot_s), rel=0.02), c
        assert model.ttft_s[0, 0] == pytest.approx(np.mean(run.ttft_s), rel=0.03), c


@pytest.mark.parametrize("users", [64, 128])
def test_a_speculating_benchmark_run_of_one_length_stays_clustered_after_its_burst_as_the_simulator_plays_it(
    table, users
):
    """1,000 requests of 1000 in and 256 out from all users at once, gamma 3: speculating users of one length part by
    acceptance alone, so the first burst's clusters last tens of cycles (burst_clustering; the simulator's mean TTFT
    over waves 10-20 of 128 users is 1.26 times its waves 160-320's, the steady state's within 1%).  The run's mean
    TTFT is the simulator's (seeds 0-3) within 6%: measured +1.8% (128 users) and +2.6% (64) against seeds 0-7, whose
    means' standard error is 1.0% and 0.8% (a seed's sd 2.8% and 2.2%), so 6% is about three standard errors of four
    seeds' mean past the model's bias (a false failure, on another draw of seeds, about 1 in 500).  Before, with the
    others' prompts spread uniformly over the cycle after the burst, it was 25.5% and 22.9% under.  TPOT (+0.5%,
    +0.2%; before +3.3%, +1.9%) and output tokens/s (+0.7%, +0.9%, unchanged: what an arrival meets more in its first
    iterations it meets less in its decode) are held within 3%."""
    n = 1000
    model = steady_state(DEP, 0.8, [3], [users], 1000, 256, limits=LIMITS, fixed_lengths=True, requests=n)
    runs = [
        simulate(
            Requests(np.full(n, 1000), np.full(n, 256), None),
            table,
            LIMITS,
            0.8,
            3,
            np.random.default_rng(seed),
            concurrency=users,
        )
        for seed in range(4)
    ]
    ttft = np.mean([np.mean(r.first_token_s - r.arrival_s) for r in runs])
    tpot = np.mean([(r.finish_s - r.first_token_s).sum() / (r.output - 1).sum() for r in runs])
    rate = np.mean([r.output.sum() / r.makespan_s for r in runs])
    assert model.ttft_s[0, 0] == pytest.approx(ttft, rel=0.06)
    assert model.tpot_s[0, 0] == pytest.approx(tpot, rel=0.03)
    assert model.output_tokens_per_s[0, 0] == pytest.approx(rate, rel=0.03)


@pytest.mark.parametrize("users, prompt", [(32, 716), (64, 716), (1, 6000)])
def test_a_bursts_ttft_is_the_simulators(users, prompt):
    """One wave sent at once, 2048 tokens an iteration: the prompts are cut to fill each iteration (chunked prefill), the
    i-th completing in iteration ceil(i P / budget) (burst_iterations), so the wave's mean TTFT is the simulator's
    within 6%; a lone 6000-token prompt takes three iterations.  Measured when this test was written: 0.0-3.1% over (on
    the A100 preset: 2.0% at 32 users, 3.1% at 64); before, each iteration carried a whole number of prompts (23% under
    at 32-64 users) and a prompt longer than the budget was counted (k + 1) / 2 times.  Waves after the burst are not
    held: the convoys it leaves take many cycles to settle into the steady state's groups (a run of 8 waves: 15-18%
    under the simulator's mean TTFT)."""
    limits = EngineLimits(256, 2048)
    table = StepTable(DEP, 256, prompt + 300, 0, 2048, 0.8)
    run = simulate(
        Requests(np.full(users, prompt), np.full(users, 256), None), table, limits, 0.0, 0, concurrency=users
    )
    model = steady_state(DEP, 0.8, [0], [users], prompt, 256, limits=limits, fixed_lengths=True, requests=users)
    assert model.ttft_s[0, 0] == pytest.approx(np.mean(run.ttft_s), rel=0.06)


def test_the_rounds_a_request_decodes_are_monte_carlos():
    """200,000 requests per case (50,000 for the longest two): the mean rounds to emit m tokens has a standard error
    under 0.011 round; 0.05 is four and a half of them and more (false failure under 1e-5 per case)."""
    rng = np.random.default_rng(0)
    # The short ones (under 40 rounds) are counted exactly, 40-50 blended with the renewal limit (150 tokens here): the
    # limit gave 0.82 of a round for one token left.
    for alpha, gamma, m, n in (
        (0.6, 3, 20, 200_000),
        (0.9, 7, 63, 200_000),
        (0.3, 2, 9, 200_000),
        (0.7, 3, 1, 200_000),
        (0.9, 7, 12, 200_000),
        (0.8, 4, 255, 50_000),
        (0.8, 4, 150, 50_000),
    ):
        # A round emits 1 + the drafts k with u < alpha^k, counted one k at a time: the same draws and counts as a
        # (requests, rounds, gamma) array of comparisons summed over gamma, in a third of its CPU (1.9 s to 0.5 s).
        # int16 holds them: a request's tokens over its m + 1 rounds are at most 256 x 5 = 1,280.
        u = rng.random((n, m + 1))
        tokens = np.ones(u.shape, dtype=np.int16)
        for rate in alpha ** np.arange(1, gamma + 1):
            tokens += u < rate
        rounds = (np.cumsum(tokens, axis=1, dtype=np.int16) < m).sum(axis=1) + 1
        assert float(decode_rounds(alpha, gamma, m)) == pytest.approx(rounds.mean(), abs=0.05), (alpha, gamma, m)
    assert float(decode_rounds(0.8, 0, 255)) == 255.0  # plain decoding: one token an iteration
    # two tokens: one round, and a second where the first kept none of its drafts (1 - 0.8 of the time)
    assert float(decode_rounds(0.8, 4, 2)) == pytest.approx(1.2, rel=1e-12)


def test_short_outputs_are_counted_over_any_shape_and_more_tokens_never_take_fewer_rounds():
    """The exact count for short outputs, over the (gamma, load) grids the answers ask (it took the acceptance's shape
    alone, and two loads with --output-len 40 failed to broadcast), each element as asked alone; and across the switch
    to the renewal limit no more tokens take fewer rounds (at alpha 0.95, gamma 3 they did, by 0.05 of a round, and at
    alpha 1 by 0.375)."""
    gammas, tokens = np.array([[0], [1], [3], [7]]), np.array([1.0, 4.5, 39.0, 300.0, np.nan])
    grid = decode_rounds(0.7, gammas, tokens)
    alone = [[float(decode_rounds(0.7, int(g), t)) for t in tokens] for g in gammas[:, 0]]
    np.testing.assert_allclose(grid, alone, rtol=1e-12)
    assert grid[2, 0] == 1.0 and np.isnan(grid[:, 4]).all() and grid[0, 3] == 300.0
    m = np.linspace(0.0, 400.0, 16001)
    for alpha, gamma in ((0.95, 3), (1.0, 3), (0.99, 7), (0.8, 4), (0.3, 1)):
        assert np.diff(decode_rounds(alpha, gamma, m)).min() >= 0.0, (alpha, gamma)
    assert steady_state(DEP, 0.8, [0, 3], [1, 64], 1000, 40).tpot_s.shape == (2, 2)


def test_a_load_past_max_num_seqs_queues_and_its_ttft_carries_the_wait():
    limits = EngineLimits(32, 8192)
    s = steady_state(DEP, 0.8, [0, 3], [16, 32, 64, 128], 1000, 256, limits=limits)
    assert (
        (s.in_engine[:, 1:] == 32).all()
        and (s.limited_by[:, 2:] == "max_num_seqs").all()
        and (s.limited_by[:, :2] == "").all()
    )
    # The engine is full from 32 users on: the same TPOT and throughput, and each user more waits its share in the queue.
    assert np.allclose(s.tpot_s[:, 1:], s.tpot_s[:, 1:2]) and np.allclose(
        s.output_tokens_per_s[:, 1:], s.output_tokens_per_s[:, 1:2]
    )
    wait = (64 - 32) / s.requests_per_s[:, 2]
    assert np.allclose(s.ttft_s[:, 2] - s.ttft_s[:, 1], wait)


def test_a_kv_cache_that_holds_fewer_sequences_than_max_num_seqs_limits_the_engine_and_says_so():
    from specsim.serving.capacity import sequence_kv_bytes

    per = float(sequence_kv_bytes(DEP, 1000 + 128, with_draft=False))
    s = steady_state(DEP, 0.8, [0], [64], 1000, 256, limits=LIMITS, kv_bytes=(20.5 * per, 20.5 * per))
    assert s.in_engine[0, 0] == 20 and s.limited_by[0, 0] == "kv cache"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    users=st.floats(1, 5000),
    rate=st.floats(0.01, 5000),
    prompt=st.floats(0, 30000),
    output=st.floats(2, 8000),
    gamma=st.integers(0, 6),
    fixed=st.booleans(),
    budget=st.integers(1, 20000),
)
def test_no_load_gives_an_answer_that_diverges_or_goes_negative(users, rate, prompt, output, gamma, fixed, budget):
    """Whatever the load, lengths and budget, with fixed lengths (convoys, chains, the queue-bound case) or not."""
    limits = EngineLimits(256, budget)
    for kind, load in (("concurrency", users), ("rate", rate), ("batch", users)):
        s = steady_state(DEP, 0.7, [gamma], [load], prompt, output, kind=kind, limits=limits, fixed_lengths=fixed)
        assert np.isfinite(s.tpot_s).all() and (s.tpot_s > 0).all(), kind
        assert np.isfinite(s.output_tokens_per_s).all() and (s.output_tokens_per_s > 0).all(), kind
        assert ((s.ttft_s > 0) | (np.isinf(s.ttft_s) & s.saturated)).all(), kind
        assert (s.prefill_share >= 0).all() and (s.prefill_share <= 1 + 1e-9).all(), kind


def test_an_iteration_is_its_step_plus_its_prompt_chunks():
    assert float(iteration_s(0.010, 0.004)) == pytest.approx(0.014)
    assert iteration_s([0.01, 0.02], 0.0).tolist() == [0.01, 0.02]


@pytest.mark.parametrize(
    ("alpha", "gamma", "count", "spread"), [(0.6, 3, 8, 0.0), (0.6, 3, 8, 0.1), (0.5, 5, 32, 0.12)]
)
def test_the_slowest_requests_wait_is_a_monte_carlos_with_prompts_of_different_acceptance(alpha, gamma, count, spread):
    # decode_rounds_spread: the expected most rounds of `count` requests of 63 tokens beyond the mean, the chance spread
    # of a request's rounds and (spread > 0) its prompt's own acceptance, drawn here as alpha + N(0, spread) per request.
    # 3000 batches: the Monte Carlo mean of (max - mean) has a standard error under 1.5% of it (seed fixed, so the
    # test is deterministic); the normal approximation and Blom's order statistic are held to 15%.
    from specsim.serving.steady import decode_rounds_spread

    rng = np.random.default_rng(11)
    batches, tokens = 3000, 63
    a = np.clip(alpha + spread * rng.standard_normal((batches, count)), 0.0, 0.999)
    need = np.full((batches, count), float(tokens))
    rounds = np.zeros((batches, count))
    while np.any(need > 0):
        u = rng.random((batches, count, gamma))
        accepted = np.cumprod(u < a[..., None], axis=-1).sum(axis=-1)
        live = need > 0
        rounds += live
        need -= np.where(live, 1 + accepted, 0)
    simulated = float(np.mean(rounds.max(axis=1) - rounds.mean(axis=1)))
    model = float(decode_rounds_spread(alpha, gamma, tokens, count, spread))
    assert model == pytest.approx(simulated, rel=0.15)


#: vLLM 0.33.0's scheduler charges each request it schedules num_new_tokens + draft_slots of max_num_batched_tokens
#: (vllm/v1/core/sched/scheduler.py L719-721, L847, L1003 for running requests, L1295 and L1571 for waiting ones), with
#: draft_slots = SpeculativeConfig.max_num_new_slots_for_drafting (vllm/config/speculative.py L2058-2098): 1 for a draft
#: model, K for PARD, K - 1 for P-EAGLE, 0 for EAGLE, EAGLE-3, MTP and n-gram.  The same in the 0.28.0 and 0.29.0
#: source.  From 0.17.0 to 0.27.0 the scheduler instead took max_num_seqs x those slots off the whole budget up front
#: (vllm/config/vllm.py _set_max_num_scheduled_tokens, read at 0.17.1, 0.20.0, 0.24.0 and 0.27.0).
@pytest.mark.parametrize(
    "engine, draft, gamma, per_sequence, up_front",
    [
        ("vllm@latest", "llama-3.2-1b", 3, 1, 0),  # a draft model: one slot a request
        ("vllm@0.33.0", "pard", 3, 3, 0),  # PARD: K (0.34.0 refuses it: config/speculative.py L1688-1693)
        ("vllm@0.33.0", "peagle", 3, 2, 0),  # P-EAGLE: K - 1 (the same)
        ("vllm@latest", "eagle3", 3, 0, 0),
        ("vllm@latest", "ngram", 3, 0, 0),
        ("vllm@0.24.0", "llama-3.2-1b", 3, 0, 1),  # 0.17-0.27: max_num_seqs slots off the budget
        ("vllm@0.24.0", "eagle3", 3, 0, 0),
        # DSpark: parallel_drafting set for it from its first release (speculative.py 0.25.0 L910, 0.27.0 L984), so
        # K - 1 up front to 0.27, K - 1 a request at 0.28, none from 0.33 (a separate query pass)
        ("vllm@0.26.0", "dspark", 3, 0, 2),
        ("vllm@0.28.0", "dspark", 3, 2, 0),
        # 0.30.0-0.32.0 read: the same table (speculative.py 0.32.0 L1888-1926), DFlash K and DSpark K - 1 a request
        ("vllm@0.32.0", "dspark", 3, 2, 0),
        ("vllm@0.32.0", "dflash", 3, 3, 0),
        ("vllm@0.33.0", "dflash", 3, 0, 0),
        ("vllm@latest", "dspark", 3, 0, 0),
        ("sglang@latest", "llama-3.2-1b", 3, 0, 0),  # SGLang counts no drafting slots
    ],
)
def test_a_speculating_vllm_charges_each_scheduled_request_its_drafters_slots(
    engine, draft, gamma, per_sequence, up_front
):
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", draft, timing="roofline", engine=engine)
    limits = EngineLimits(256, 8192).for_deployment(dep)
    b = 40
    # b decoding sequences of gamma + 1 tokens and their slots, and the slots of the one prompt chunk beside them
    slots = per_sequence * (b + 1) + up_front * 256
    assert float(limits.prefill_budget(b, gamma)) == 8192 - b * (gamma + 1) - slots
    assert float(limits.prefill_budget(b, 0)) == 8192 - b  # gamma 0: the plain engine, no speculative_config


def test_the_simulator_holds_no_more_decoding_draft_model_sequences_than_vllms_budget_schedules():
    """Prompts of 20 tokens and outputs of 1,000 at a budget of 256 tokens: the decoding sequences fill the budget and
    the prompts wait for what they leave.  vLLM 0.33.0 schedules the running requests first (scheduler.py L795), each
    taking 1 + gamma tokens and its draft slot (L847, L1003), and a waiting prompt only from what is left (L1062, L1295):
    a prompt completes, adding a decoding sequence, only while b (gamma + 2) + 1 < 256, so at gamma 3 at most 51 + 1
    decode, where counting 1 + gamma alone lets 64 in."""
    gamma, budget = 3, 256
    limits = EngineLimits(256, budget).for_deployment(DEP)
    table = StepTable(DEP, 256, 1100, gamma, budget, 0.8)
    run = simulate(Requests(np.full(400, 20), np.full(400, 1000), None), table, limits, 0.8, gamma, concurrency=256)
    most = int(np.flatnonzero(run.batch_time_s > 0).max())
    assert most <= (budget - 1) // (gamma + 2) + 1


@pytest.mark.parametrize("gamma", [0, 3])
def test_where_the_decoding_sequences_fill_the_budget_the_steady_state_is_the_simulators(gamma):
    """256 users of 20-token prompts and 1,000-token outputs at a 256-token budget: the decoding sequences' gamma + 1
    tokens each (and, speculating with a draft model, a slot each: vLLM 0.33.0) nearly fill the budget, and a prompt
    prefills in what they leave, as vLLM's scheduler takes the running requests first (scheduler.py L795-1003) and the
    waiting only from the rest (L1062-1346).  The closed loop's passes swung between a b that starves the prompts and
    one they starve (255.5, 50.8, ...) and returned the thirtieth: TPOT 7.39 ms plainly against the simulator's 12.50,
    a decode batch of 50 against 248, TTFT 30 s against 0.22 s; speculating, a batch of 17 against 50.  Measured when
    this test was written, over users' requests 4-8 (the first burst left out): TPOT within 0.3%, the decode batch
    within 1.1%, TTFT 15% over plainly (255 against 221 ms: the chain of prompts waiting for one another's budget) and
    1.7% speculating.  Deterministic plainly; speculating, seeded."""
    c, budget = 256, 256
    limits = EngineLimits(256, budget)
    model = steady_state(DEP, 0.8, [gamma], [c], 20, 1000, limits=limits, fixed_lengths=True)
    table = StepTable(DEP, 256, 1100, gamma, budget, 0.8)
    n = 8 * c
    run = simulate(
        Requests(np.full(n, 20), np.full(n, 1000), None),
        table,
        limits,
        0.8,
        gamma,
        np.random.default_rng(7),
        concurrency=c,
    )
    keep = (np.arange(n) >= 3 * c) & (run.finish_s <= np.nanmax(run.arrival_s))
    tpot = (run.finish_s - run.first_token_s)[keep].sum() / (run.output[keep] - 1).sum()
    ttft = (run.first_token_s - run.arrival_s)[keep].mean()
    assert model.tpot_s[0, 0] == pytest.approx(tpot, rel=0.02)
    assert model.mean_batch[0, 0] == pytest.approx(run.mean_batch, rel=0.03)
    assert model.ttft_s[0, 0] == pytest.approx(ttft, rel=0.2)


def _vllm_running_loop(batch, gamma, budget, slots):
    """The tokens vLLM 0.33.0's scheduler gives each of ``batch`` running decoding requests of ``gamma`` drafts, replayed
    from v1/core/sched/scheduler.py: token_budget = input_budget = max_num_batched_tokens (L719-722); the loop runs
    while token_budget > 0 and input_budget > draft_slots (L795-797); num_new_tokens = min(1 + gamma, token_budget,
    input_budget - draft_slots) (L839-848); each scheduled request takes num_new_tokens off token_budget and that plus
    its slots off input_budget (L1002-1003)."""
    token_budget = input_budget = budget
    given = []
    for _ in range(batch):
        if token_budget <= 0 or input_budget <= slots:
            break
        new = min(1 + gamma, token_budget, input_budget - slots)
        given.append(new)
        token_budget -= new
        input_budget -= new + slots
    return given


@pytest.mark.parametrize(
    "batch, gamma, budget, slots",
    [(100, 8, 2048, 1), (256, 8, 2048, 1), (256, 8, 2048, 0), (60, 3, 256, 1), (70, 3, 256, 0), (300, 4, 1024, 3)],
)
def test_the_budget_schedules_the_running_decoders_as_vllms_loop_does(batch, gamma, budget, slots):
    """Where the decoding sequences' rounds overflow the token budget, vLLM gives whole rounds to the first, cuts the
    drafts of the one it reaches with fewer tokens left, and schedules none after it."""
    given = _vllm_running_loop(batch, gamma, budget, slots)
    whole, partial = EngineLimits(256, budget, draft_slots=(slots, 0, False)).decoding_scheduled(batch, gamma)
    assert int(whole) == sum(1 for t in given if t == gamma + 1)
    assert int(partial) == sum(t for t in given if t < gamma + 1)
    assert len(given) - int(whole) == (1 if partial else 0)


def _trtllm_micro_batch(batch, gamma, budget):
    """The decoding requests TensorRT-LLM's micro-batch scheduler schedules of ``batch`` running ones of ``gamma`` drafts,
    replayed from MicroBatchScheduler::operator() (cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp at commit
    0a949d31): each takes beam width 1 + its draft tokens, and the first that would take batchNumTokens past
    max_num_tokens ends the loop (break), its drafts uncut."""
    given, used = [], 0
    for _ in range(batch):
        if used + 1 + gamma > budget:
            break
        given.append(1 + gamma)
        used += 1 + gamma
    return given


@pytest.mark.parametrize("batch, gamma, budget", [(256, 8, 2048), (100, 3, 256), (60, 3, 256), (300, 4, 1024)])
def test_the_budget_schedules_trtllms_decoders_whole_or_not_at_all(batch, gamma, budget):
    """TensorRT-LLM does not cut an overflowing round: the request its budget reaches with fewer tokens left than
    1 + gamma waits, with those after it.  specsim gave that request the tokens left, as vLLM does (256 x 9 at 2,048:
    227 whole and 5 tokens to the 228th, where TensorRT-LLM schedules 227)."""
    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="trtllm@latest")
    limits = EngineLimits(2048, budget).for_deployment(dep)
    given = _trtllm_micro_batch(batch, gamma, budget)
    whole, partial = limits.decoding_scheduled(batch, gamma)
    assert (int(whole), int(partial)) == (len(given), 0)


class _Scheduled:
    """An observer of the simulator: for each round it plays, the sequences scheduled, the gamma and the requests in
    flight (the observer's calls: :class:`specsim.serving.counters.StepCounters`)."""

    def __init__(self):
        self.played, self.ends = [], []

    def iteration(self, end_s, ids, accepted, gamma, kept, prompt_tokens, prompts_done, in_flight, waiting, cut=None):
        self.played.append((len(ids), gamma, in_flight))
        self.ends.append(end_s)

    def rounds(self, ends, ids, accepted, gamma, kept, in_flight, waiting, cut=None):
        self.played.extend([(len(ids), gamma, in_flight)] * len(ends))
        self.ends.extend(ends)

    def finished(self, ids, at, prompt, output):
        pass


#: The overflow case below: 128 users at a 512-token budget under a schedule drafting 8 from 100 running sequences on.
OVERFLOW_USERS, OVERFLOW_BUDGET = 128, 512


def _play_the_overflow(observer):
    """Simulate the overflow case (two requests a user, 20-token prompts, 1,000 out) told to ``observer``."""
    limits = EngineLimits(256, OVERFLOW_BUDGET).for_deployment(DEP)
    schedule = np.where(np.arange(257) >= 100, 8, 1)
    table = StepTable(DEP, 256, 1100, 8, OVERFLOW_BUDGET, 0.8)
    n = 2 * OVERFLOW_USERS
    requests = Requests(np.full(n, 20), np.full(n, 1000), None)
    rng = np.random.default_rng(3)
    return simulate(requests, table, limits, 0.8, schedule, rng, concurrency=OVERFLOW_USERS, observer=observer)


def test_the_simulator_decodes_no_more_sequences_than_the_budget_gives_rounds():
    """A per-batch schedule that drafts 8 tokens from 100 running sequences on: 128 users of 20-token prompts at a
    512-token budget all decode at gamma 1 (3 tokens each with a draft model's slot), then a round of 10 each overflows
    the budget.  vLLM schedules floor(512 / 10) = 51 whole rounds and one cut to the 2 tokens left less its slot
    (L795-1003, replayed above), the others waiting; the simulator ran all 128 rounds, 1,280 tokens an iteration."""
    seen = _Scheduled()
    run = _play_the_overflow(seen)
    at_8 = [(count, in_flight) for count, gamma, in_flight in seen.played if gamma == 8]
    assert max(in_flight for _, in_flight in at_8) >= 100  # the rounds overflowed the budget
    assert max(count for count, _ in at_8) == len(_vllm_running_loop(OVERFLOW_USERS, 8, OVERFLOW_BUDGET, 1))
    assert run.served.all()


def test_an_offline_batch_decodes_in_waves_the_budget_holds():
    """256 prompts of 20 tokens and 1,000 out at once, gamma 3 with a draft model at a 256-token budget: vLLM gives 51
    sequences a round an iteration (the others wait, scheduler.py L795-1003), so the batch decodes in waves of 51, not
    all 256 together (the model said 20,489 tokens/s, twice the simulator's 10,960, before it took the budget's cap).
    Throughput against the simulator's, which plays the scheduler's loop, within 10% (5.2% when written)."""
    budget, n, gamma = 256, 256, 3
    limits = EngineLimits(256, budget).for_deployment(DEP)
    model = steady_state(DEP, 0.8, [gamma], [n], 20, 1000, kind="batch", limits=limits)
    assert model.in_engine[0, 0] == len(_vllm_running_loop(n, gamma, budget, 1))
    assert model.limited_by[0, 0] == "max_batched_tokens"
    table = StepTable(DEP, 256, 1100, gamma, budget, 0.8)
    run = simulate(
        Requests(np.full(n, 20), np.full(n, 1000), np.zeros(n)), table, limits, 0.8, gamma, np.random.default_rng(7)
    )
    assert model.output_tokens_per_s[0, 0] == pytest.approx(n * 1000 / run.makespan_s, rel=0.10)


def test_the_counters_count_the_drafts_the_budget_left():
    """The engine's counters count the draft tokens it scheduled: where the budget cuts a running request's round (vLLM
    0.33.0 trims its spec_token_ids to what was scheduled, scheduler.py L1010-1021), its drafts are those left, and a
    request left none is no draft.  The simulator's counters counted gamma for it.  The case above: at gamma 8 and 100
    or more running, vLLM's loop gives 51 whole rounds and 1 token to the 52nd, so each such iteration counts 51
    drafts of 8 tokens (it counted 52 and 416)."""
    from specsim.serving.counters import StepCounters

    counters, seen = StepCounters(2 * OVERFLOW_USERS, 8), _Scheduled()

    class Both:  # the counters, and what was played round by round beside them
        def iteration(self, *args):
            seen.iteration(*args)
            counters.iteration(*args)

        def rounds(self, *args, **named):
            seen.rounds(*args, **named)
            counters.rounds(*args, **named)

        def finished(self, *args):
            counters.finished(*args)

    _play_the_overflow(Both())
    given = _vllm_running_loop(OVERFLOW_USERS, 8, OVERFLOW_BUDGET, 1)
    counted = counters.at(np.array(seen.ends))
    drafts, tokens = np.diff(counted["drafts"], prepend=0.0), np.diff(counted["draft_tokens"], prepend=0.0)
    cut = [i for i, (count, gamma, _) in enumerate(seen.played) if gamma == 8 and count == len(given)]
    assert cut  # rounds the budget cut
    assert set(drafts[cut]) == {sum(1 for t in given if t > 1)}
    assert set(tokens[cut]) == {sum(t - 1 for t in given)}


@pytest.mark.parametrize("users, prompt, requests", [(64, 1024, 120), (16, 3000, 24)])
def test_a_speculating_benchmark_run_of_under_two_waves_is_the_simulators(users, prompt, requests):
    """A benchmark's run of 1.5-1.9 waves (GuideLLM's max_requests under twice its streams), speculating at 3 steps,
    alpha 0.72: users moving apart, the burst's later prompts ride in the decode phases of the first wave's earlier ones
    (burst_riding), so the run's mean TPOT is the simulator's within 7%.  Measured when this test was written: +4.4% and
    +4.8% (the model's step is the steady batch's; the simulator's last wave decodes at a smaller one); before the
    burst was counted, -9.0% and -11.6% (a GuideLLM report at 64 users and 120 requests fitted 13% off held out).  The
    simulator's mean over 4 seeds: one seed's mean TPOT spreads 0.5% and 1.2% (sd over 40 seeds), so 4 seeds' by 0.6%
    at most, and the margin left (2.2 points) is over 3.5 of those (the seeds are fixed: a false failure needs numpy's
    streams to change, and then under 1e-3)."""
    limits = EngineLimits(max_num_seqs=users)
    table = StepTable(DEP, users, prompt + 256, 3, 8192)
    acceptance = Acceptance(cumulative=tuple(0.72**k for k in (1, 2, 3)))
    tpot = [
        np.mean(
            simulate(
                Requests(np.full(requests, prompt), np.full(requests, 256), None),
                table,
                limits,
                acceptance,
                3,
                np.random.default_rng(seed),
                concurrency=users,
            ).tpot_s
        )
        for seed in range(4)
    ]
    model = steady_state(DEP, 0.72, [3], [users], prompt, 256, limits=limits, fixed_lengths=True, requests=requests)
    assert model.tpot_s[0, 0] == pytest.approx(np.mean(tpot), rel=0.07)


def test_an_open_loops_iteration_with_prefill_apart_stops_at_its_fixed_point_to_the_bit(monkeypatch):
    """open_loop_itl_s iterates t_dec = (step + the prefill batches' base passes at t_dec) / (1 - lambda t_pf) a fixed
    48 times where prefill batches run apart (SGLang), though it reaches its fixed point to the bit in far fewer, after
    which every iteration gives it again: a calibration's fit of SGLang runs at a rate asks for it at every residual (2.6
    s of the 7.2 s of user CPU of test_rate_runs_near_capacity_made_by_the_serving_model_give_back_its_terms).  It now
    stops there: the same t_dec as all 48 iterations, to the bit."""
    from specsim.serving import steady

    lam = np.array([0.5, 5.0, 20.0, 60.0, 200.0])
    step, t_pf = np.array([0.010, 0.012, 0.015, 0.02, 0.03]), np.array([0.004, 0.01, 0.02, 0.015, 0.01])
    apart = (0.006, np.array([1000.0, 4000.0, 2000.0, 1000.0, 500.0]), 8192.0)
    free = np.where(lam * t_pf < 1.0, 1.0 - lam * t_pf, np.nan)
    every = step / free
    for _ in range(steady._BISECTIONS):  # the iteration run in full: what open_loop_itl_s gave before
        every = (step + steady.open_batches_s(every, lam, apart)) / free
    every = np.where(np.isfinite(every), every, np.inf)
    calls = []
    batches = steady.open_batches_s
    monkeypatch.setattr(steady, "open_batches_s", lambda *a, **k: calls.append(1) or batches(*a, **k))
    got = steady.open_loop_itl_s(lam, step, t_pf, apart)
    assert 0 < len(calls) < steady._BISECTIONS, len(calls)
    np.testing.assert_array_equal(got, every)
    assert np.isinf(got[-1]) and np.all(np.isfinite(got[:-1]))  # the last one's prompts need the whole engine


def test_a_waves_edge_is_integrated_once_per_distinct_share_to_the_bit(monkeypatch):
    """preemption._edge integrated its 801-point grid for every cell of the serving model, though the cells share a few
    values (2 distinct of 4,824 in `watch --alert-rules` at vLLM 0.26.0: 54 ms a call, twice, of that command's ~1.5 s
    of CPU; 0.1 ms now).
    It now integrates each distinct value once: the same answer to the bit as each value on its own, in its own shape."""
    from specsim.serving import preemption

    rng = np.random.default_rng(0)
    per_iteration = np.repeat(rng.uniform(0.5, 60.0, (1, 3)), 40, axis=0)  # 3 distinct values in 120 cells
    per_iteration[0, 0] = np.nan  # (NaN stays NaN, alone)
    alone = np.array([[preemption._edge(np.array([x]))[0] for x in row] for row in per_iteration])
    rows = []
    trapezoid = np.trapezoid
    monkeypatch.setattr(np, "trapezoid", lambda y, *a, **k: rows.append(y.shape[:-1]) or trapezoid(y, *a, **k))
    got = preemption._edge(per_iteration)
    assert rows == [(4,)], rows  # 3 values and the NaN, not the 120 cells
    assert got.shape == per_iteration.shape
    np.testing.assert_array_equal(got, alone)
    assert np.shape(preemption._edge(6.5)) == ()


def test_an_open_loops_second_bisection_asks_no_batch_of_the_source_again():
    """An open loop whose full engine is charged preemptions solves its fixed point twice on the same steps
    (steady._open_loop), and the second bisection asked the step-time source again for every batch the first had asked
    before their answers parted (40 of the 478 passes of `watch --alert-rules` at vllm@0.26.0, 239 passes apart).  The
    steps now keep the seconds their bisections asked: no batch is asked twice, and both answers are those of steps
    that keep nothing, to the bit."""
    from types import SimpleNamespace

    from specsim.serving import steady

    asked = []

    def decode(batch, context):
        asked.append(np.asarray(batch, float).tobytes())
        return SimpleNamespace(total_s=0.008 + 2e-5 * np.asarray(batch, float) + 1e-9 * context)

    dep = SimpleNamespace(drafter=None, decode=decode)
    lam, D, cap = np.array([5.0, 40.0, 90.0]), np.array([255.0]), np.full(3, 1e6)
    t_pf = np.array([0.002, 0.003, 0.004])

    def solved(steps, share):
        return steady._open_fixed_point(steps, lam, D, cap, lambda t_dec: share * t_dec, lambda: None)

    steps = steady._Steps(dep, 0.6, np.array([0]), np.array([1000.0]))
    got = [solved(steps, lam * t_pf), solved(steps, lam * t_pf * 1.5)]
    assert len(asked) == len(set(asked)), f"{len(asked) - len(set(asked))} of {len(asked)} batches asked again"
    want = [
        solved(steady._Steps(dep, 0.6, np.array([0]), np.array([1000.0])), s) for s in (lam * t_pf, lam * t_pf * 1.5)
    ]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
