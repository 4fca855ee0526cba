"""StepCounters, what an engine's metrics count while the simulator plays requests: each count told by hand and read
back at chosen times, the acceptance-length window, and a simulated day whose counters add up to its requests."""

from __future__ import annotations

import numpy as np
import pytest

from specsim.serving.counters import StepCounters

TIMES = [0.5, 1.0, 2.2, 3.0, 4.5, 10.0]


def _told() -> StepCounters:
    """Four requests, gamma at most 3: two rounds of two sequences, an iteration of one with a prompt chunk, one of
    prompt chunks only, a round at gamma 2 of three sequences, a round without speculation; then three requests end."""
    c = StepCounters(4, 3)
    # requests 0 and 2 accept 2 and 3 of 3 tokens, then 0 and 1; 7 and 3 tokens generated; 9 prompt tokens at the end
    c.rounds(np.array([1.0, 2.0]), np.array([0, 2]), np.array([[2, 0], [3, 1]]), 3, np.array([7.0, 3.0]), 2, 1, 9)
    # request 1 accepts 1 of 2; 2 tokens and 1 first token, 50 prompt tokens
    c.iteration(2.5, np.array([1]), np.array([1]), 2, 2.0, 50.0, 1, 3, 0)
    # nothing decoding (so no drafts whatever gamma is told), 20 prompt tokens and 2 first tokens
    c.iteration(3.0, np.array([], dtype=int), np.array([]), 3, 0.0, 20.0, 2, 2, 0)
    # requests 0, 1 and 2 at gamma 2 accept 1, 0 and 2
    c.rounds(np.array([4.0]), np.array([0, 1, 2]), np.array([[1], [0], [2]]), 2, np.array([5.0]), 3, 2)
    # request 3 decodes without speculation
    c.rounds(np.array([5.0]), np.array([3]), np.array([[0]]), 0, np.array([1.0]), 1, 0)
    c.finished(np.array([0, 2]), np.array([4.0, 4.0]), np.array([10, 30]), np.array([5, 6]))
    c.finished(np.array([1]), np.array([6.0]), np.array([20]), np.array([4]))
    return c


# Each iteration as the definitions count it: (end, drafts, draft tokens, accepted, accepted per position, generated,
# prompt tokens, running, waiting).  A draft is one speculating sequence in one round, its tokens gamma; position k
# counts the drafts that had token k accepted.
EVENTS = [
    (1.0, 2, 6, 5, [2, 2, 1], 7, 0, 2, 1),
    (2.0, 2, 6, 1, [1, 0, 0], 3, 9, 2, 1),
    (2.5, 1, 2, 1, [1, 0, 0], 3, 50, 3, 0),
    (3.0, 0, 0, 0, [0, 0, 0], 2, 20, 2, 0),
    (4.0, 3, 6, 3, [2, 1, 0], 5, 0, 3, 2),
    (5.0, 0, 0, 0, [0, 0, 0], 1, 0, 1, 0),
]
# Each finished request as its rounds counted it: (time, prompt, output, verifications, accepted per position,
# drafted per position).
DONE = [
    (4.0, 10, 5, 3, [2, 1, 0], [3, 3, 2]),
    (4.0, 30, 6, 3, [3, 2, 1], [3, 3, 2]),
    (6.0, 20, 4, 2, [1, 0, 0], [2, 2, 0]),
]


def test_every_count_is_cumulated_to_each_time_as_the_definitions_count_it():
    got = _told().at(TIMES)
    keys = ("drafts", "draft_tokens", "accepted", "accepted_per_position", "generation_tokens", "prompt_tokens")
    for t_index, t in enumerate(TIMES):
        ended = [e for e in EVENTS if e[0] <= t]
        for i, key in enumerate(keys, 1):
            want = np.sum([e[i] for e in ended], axis=0) if ended else np.zeros(3 if i == 4 else ())
            assert np.array_equal(got[key][t_index], want), (key, t)
        assert got["running"][t_index] == (ended[-1][7] if ended else 0), t
        assert got["waiting"][t_index] == (ended[-1][8] if ended else 0), t
        done = [d for d in DONE if d[0] <= t]
        assert got["finished"][t_index] == len(done)
        for i, key in enumerate(
            (
                "finished_prompt_tokens",
                "finished_output_tokens",
                "finished_verifications",
                "finished_accepted_per_position",
                "finished_drafted_per_position",
            ),
            1,
        ):
            want = np.sum([d[i] for d in done], axis=0) if done else np.zeros(3 if i >= 4 else ())
            assert np.array_equal(got[key][t_index], want), (key, t)
    assert got["accepted_per_position"].shape == (len(TIMES), 3) and got["drafts"].shape == (len(TIMES),)
    assert all(np.asarray(v).dtype == float for v in got.values())


def test_iterations_told_out_of_order_are_counted_in_time_order():
    # The running and waiting requests are those after the last iteration that ended by then, whatever the order told.
    c = StepCounters(2, 2)
    c.rounds(np.array([3.0]), np.array([0]), np.array([[1]]), 2, np.array([2.0]), 1, 4)
    c.rounds(np.array([1.0, 2.0]), np.array([1]), np.array([[2, 0]]), 2, np.array([3.0, 1.0]), 2, 5)
    got = c.at([1.5, 2.5, 3.5])
    assert list(got["running"]) == [2, 2, 1] and list(got["waiting"]) == [5, 5, 4]
    assert list(got["generation_tokens"]) == [3, 4, 6] and list(got["accepted"]) == [2, 2, 3]
    c.finished(np.array([0]), np.array([5.0]), np.array([1]), np.array([1]))
    c.finished(np.array([1]), np.array([4.0]), np.array([2]), np.array([2]))
    got = c.at([4.5, 5.0])
    assert list(got["finished"]) == [1, 2] and list(got["finished_prompt_tokens"]) == [2, 3]


def test_of_iterations_that_end_together_the_last_told_is_the_last():
    # Eighteen iterations end at 1 s, told one after another (the running requests 0..17), then two that ended before
    # them: at 1 s the running requests are those after the last told of the eighteen.
    c = StepCounters(1, 1)
    idle = (np.array([], dtype=int), np.zeros((0, 1)), 0, np.array([1.0]))
    for running in range(18):
        c.rounds(np.array([1.0]), *idle, running, 0)
    for _ in range(2):
        c.rounds(np.array([0.5]), *idle, 99, 0)
    got = c.at([0.5, 1.0])
    assert list(got["running"]) == [99, 17] and list(got["generation_tokens"]) == [2, 20]


def test_nothing_told_reads_as_zero_and_a_scalar_time_as_one():
    c = StepCounters(3, 4)
    got = c.at(7.0)
    for key in got:
        assert got[key].shape == ((1, 4) if key.endswith("per_position") else (1,)), key
    for key, value in got.items():
        assert value.shape[0] == 1 and not value.any(), key
    assert np.isnan(c.accept_length_window([1.0, 2.0], 3)).all() and c.accept_length_window(5.0, 1).shape == (1,)


def test_a_finished_request_keeps_the_counts_it_ended_with():
    # What a request counted when it ended is its own: later rounds and the caller's arrays change nothing.
    c = StepCounters(1, 2)
    c.rounds(np.array([1.0]), np.array([0]), np.array([[1]]), 2, np.array([2.0]), 1, 0)
    at = np.array([1.0])
    c.finished(np.array([0]), at, np.array([3]), np.array([2]))
    at[0] = 9.0
    c.rounds(np.array([2.0]), np.array([0]), np.array([[2]]), 2, np.array([3.0]), 1, 0)
    got = c.at([1.0, 3.0])
    assert list(got["finished"]) == [1, 1] and list(got["finished_verifications"]) == [1, 1]
    assert got["finished_accepted_per_position"].tolist() == [[1, 0], [1, 0]]
    assert got["finished_drafted_per_position"].tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_the_acceptance_length_window_is_the_last_speculating_iterations(iterations):
    # 1 + accepted / drafts over the last `iterations` iterations that drafted (those without drafts are not in it).
    got = _told().accept_length_window(TIMES, iterations)
    drafting = [e for e in EVENTS if e[1] > 0]
    for t, value in zip(TIMES, got):
        last = [e for e in drafting if e[0] <= t][-iterations:]
        if not last:
            assert np.isnan(value), t
        else:
            assert value == pytest.approx(1 + sum(e[3] for e in last) / sum(e[1] for e in last)), t


def test_a_simulated_day_counts_every_request_token_and_draft_once():
    # Every request of a replayed day ends: its tokens, prompt and drafts are each counted once, the engine's totals
    # equal the finished requests' sums, and no count goes down.
    from specsim.speculation.deployment import Deployment
    from specsim.watch.replay import arrivals, simulate_day

    dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.20.0")
    gamma, prompt, output = 3, 200, 40
    profile = [(0, 3.0), (40, 0)]
    day = simulate_day(dep, profile, 0.6, gamma, prompt, output, seed=3)
    n = arrivals(profile, np.random.default_rng(3)).size  # the requests the day drew
    times = np.linspace(0.0, 1e4, 400)
    got = day.counters.at(times)
    end = {key: value[-1] for key, value in got.items()}
    assert end["finished"] == n and end["generation_tokens"] == n * output and end["prompt_tokens"] == n * prompt
    assert end["finished_output_tokens"] == n * output and end["finished_prompt_tokens"] == n * prompt
    assert end["drafts"] == end["finished_verifications"] > 0 and end["draft_tokens"] == gamma * end["drafts"]
    assert np.array_equal(end["finished_drafted_per_position"], np.full(gamma, end["drafts"]))
    assert np.array_equal(end["accepted_per_position"], end["finished_accepted_per_position"])
    assert end["accepted"] == end["accepted_per_position"].sum() > 0
    assert (np.diff(end["accepted_per_position"]) <= 0).all()  # token k+1 is accepted only after token k
    for key, value in got.items():
        if key not in ("running", "waiting"):
            assert (np.diff(value, axis=0) >= 0).all(), key
    window = day.counters.accept_length_window(times[-1], 10**6)
    assert window[0] == pytest.approx(1 + end["accepted"] / end["drafts"])
