"""A window's acceptance and load through the serving model: the speedup there, and the break-even acceptance there.

A production engine serves arrivals, so a window is read as an open loop (:mod:`specsim.serving.steady`, kind
``rate``): its finished requests per second per replica, with its mean prompt and output tokens per request, served by
the deployment (its step-time source and engine preset, or the engine a calibration file fitted) plain and speculating
at the draft length in use.  The speedup is the ratio of the TPOTs at that rate (the throughput is the rate both ways
while the engine keeps up; past what one of them serves, that one's TPOT is its full engine's).

The acceptance enters the model as one alpha per window: the alpha whose acceptance length at the draft length is the
window's (:func:`specsim.speculation.acceptance.alpha_from_acceptance_length`).  The break-even is the acceptance
length at which the speedup at that rate is 1: the model's speedup on a grid of alphas (one vectorised call of the
serving model for every window at once), the first crossing of 1 interpolated.  It may not exist: at a load where
speculation never pays (the drafter's passes cost more than any acceptance saves) or where it always does.

The verdict (:func:`verdict_of`) allows the model's own error, as every answer's does: the error ``e`` of a speedup
that :func:`specsim.answers.verdict.model_error` gives the deployment, the corpus's measured +-7.00% (a calibration's
held-out plain + speculative error is of its runs at their own measured acceptance, and the watch judges each window at
the one it measured and its thresholds at the lengths where the speedup is 1 +/- e: the error is set aside, as for an
answer at ``--alpha``, by :meth:`specsim.engines.base.EnginePreset.judged_at`, saying why; a calibration whose error
is of no acceptance of its own, its runs pinned, keeps it).  Two more crossings on the same grid, the acceptance
lengths ``L+`` and ``L-`` where the speedup first reaches 1 + e and 1 - e, bound the break-even (the speedup rises
with the acceptance at a load, the grid's assumption for the break-even too).  The window pays where its interval's
bottom is above ``L+``; it costs more than it saves where its top is below ``L-``; where the interval lies between them
it is too close to call (the acceptance is known, and the model cannot tell a gain from a loss there: the answers'
words); where it crosses one of them the acceptance is not known well enough (undecided).  Against the break-even
alone, the replayed day of docs/watch.md said "pays" at 12:00, a modelled 1.059x with the interval [2.110, 2.117],
where the answers' verdict of a 5.9% gain is "too close to call" (a review); the rule is now one.  The interval is the mean accepted tokens per draft over the window's drafts, 95%, normal (:func:`acceptance_interval`).  The
unit is the draft (a round), whose accepted tokens' variance ``v`` the per-position counts give whole
(E[A^2] = sum (2k + 1) c_k: the tokens of one round are not independent, a token is accepted only after every earlier
one).  Rounds are not independent either: those of one request share its prompt (code accepts more than chat), and
requests of one kind of traffic share theirs.  Once the drift reference is set the spread is ``phi v / n`` for ``n``
drafts, ``phi`` the overdispersion it measured between windows (:mod:`.drift`).  Before the first, nothing has
measured ``phi``, and the spread is ``v / min(n, N)`` for ``N`` requests finished in the window: the request is the
unit, as though each request's rounds were one draw (:func:`window_sd`); while a later reference gathers (after a
flagged drop, a new draft length or an engine restart: the same traffic), ``phi v / n`` with the ``phi`` the last one
measured, where that is less.  That is a bound, not an estimate: a request's mean accepted tokens varies
less than one round's (the law of total variance, Var(mean of m) = tau^2 + sigma^2 / m <= tau^2 + sigma^2 = v), and the
requests drafting in a window are at least those finishing in it; it assumes requests independent.  Requests that
draft unequally weigh unequally: with ``m_i`` drafts each, Var(window mean) = sum m_i^2 Var(mean_i) / (sum m_i)^2
<= v / N_eff, Kish's effective count N_eff = (sum m_i)^2 / sum m_i^2 <= N.  Where the engine exports a histogram of
each finished request's generated tokens (vLLM's request_generation_tokens, SGLang's generation_tokens_histogram from
0.5.13; TensorRT-LLM none), drafts are taken in proportion to tokens and N_eff is estimated from it
(:func:`specsim.watch.windows.effective_requests`; the window's ``effective_requests``), and the spread is
``v / min(n, N_eff)``; elsewhere ``v / min(n, N)``, which assumes the draft counts not too unequal (tau^2 CV^2 <=
sigma^2 for the share tau^2 of v between requests and CV the spread of drafts per request).  On a stationary stream
of requests whose alpha varies (Beta, sd 0.15 about 0.6) with lognormal output lengths (CV 0.7), windows of a minute at
4 requests/s, the draft count's spread alone was 0.18 of the windows' own and put the top of the interval below the
stream's acceptance length in 36% of windows (a "costs" verdict at a break-even there, nominally 2.5%); the request
count's is 2.0 of it, and did so in none of 300 (tests/test_watch.py holds it).  On 90% chat (alpha 0.4, 80 tokens
out) beside 10% agent requests (alpha 0.9, 2,000 out) at 1 request/s, the few long requests carry most drafts: the
request count missed there in 18 of 150 minute windows, N_eff from vLLM's 1-2-5 buckets (about 9 of 60 requests) in 2,
with a spread 1.9 times the windows' own (tests/test_watch.py).
A window with no spread to give (an engine that says its acceptance in a gauge alone, before the reference) has no
interval and no verdict unless no acceptance pays or every one does.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from specsim.answers.verdict import VERDICTS
from specsim.core.defaults import DEFAULT_GAMMA_MAX

__all__ = [
    "ALPHAS",
    "CONFIDENCE_Z",
    "JUDGEMENTS",
    "LIVE_ACCEPTANCE",
    "SHOWN",
    "Judgement",
    "Judge",
    "acceptance_interval",
    "verdict_of",
    "window_sd",
]

#: The acceptance the watch judges at, in words (:meth:`specsim.engines.base.EnginePreset.judged_at`'s ``given``): no
#: calibration's runs' own, whatever a window measures.
LIVE_ACCEPTANCE = "the acceptance each window measures"
#: The alphas on which the break-even is searched: 0 to 0.995, every 0.005.
ALPHAS = np.round(np.arange(0.0, 0.9951, 0.005), 3)
#: A two-sided 95% normal interval.
CONFIDENCE_Z = 1.959964
#: A window's verdicts: its interval above the acceptance where the speedup is 1 + the model's error; below the one
#: where it is 1 - that error; inside the two (the model cannot tell: the answers' words, :data:`VERDICTS`); across
#: either (the acceptance is not known well enough).
#: "no room": the model's speculating engine holds not one of the window's requests beside its weights at the window's
#: gamma (its KV share too small for one), so it has no speedup to judge by, while the engine runs them.
JUDGEMENTS = ("pays", "costs", VERDICTS[2], "undecided", "no room")
#: Each of :data:`JUDGEMENTS` as a watch's row and summary print it.
SHOWN = dict(
    zip(
        JUDGEMENTS,
        (
            "pays",
            "COSTS MORE",
            VERDICTS[2],
            "acceptance unsure",
            "NO ROOM in the model: its engine holds none of these requests beside its weights (the memory share taken "
            "is not the server's?), no speedup to judge",
        ),
    )
)


def _served_ratio(state) -> np.ndarray:
    """Plain TPOT over each row's (row 0 plain) at each rate; where the speculating engine cannot serve the rate
    (saturated: its queue grows; SGLang's 48 running requests, say) and the plain one can, at most the share of the
    rate it serves: it costs, whatever its TPOT while it runs.  Where neither keeps up, the output each serves, as the
    answers at a load weigh a rate no engine keeps up with (:func:`specsim.answers.load.objective`): a full engine's
    shorter TPOT called an overloaded engine's speculation paying where it serves fewer requests than plain decoding."""
    ratio = state.tpot_s[0][None, :] / state.tpot_s
    served = state.requests_per_s / np.asarray(state.load, dtype=float)[None, :]
    output = np.asarray(state.output_tokens_per_s, dtype=float)
    both = state.saturated & state.saturated[0][None, :]
    ratio = np.where(both, output / output[0][None, :], ratio)
    return np.where(state.saturated & ~state.saturated[0][None, :], np.minimum(served, ratio), ratio)


@dataclass(frozen=True, eq=False)
class Judgement:
    """The model's view of one window."""

    alpha: float  #: the window's acceptance as one alpha at its draft length
    gamma: int
    speedup: float  #: plain TPOT over speculative TPOT at the window's rate, lengths and acceptance (NaN: "no room")
    break_even_length: float | None  #: the acceptance length at which the speedup is 1 (None: see ``break_even``)
    break_even: str  #: "found", "never" (no acceptance pays at this load) or "always" (any does)
    interval: tuple | None  #: the window's acceptance length, 95% (low, high); None without a spread
    verdict: str  #: one of :data:`JUDGEMENTS`
    running_model: float  #: requests the model expects in the engine at this rate, speculating
    best_gamma: int  #: the gamma the model picks at this load and acceptance (0: plain decoding)
    best_speedup: float
    error: float  #: the model's error of a speedup it is judged by (``ModelError.share``: 0.07 is +-7.00%)
    #: the acceptance length where the speedup is 1 + error ("pays" above it) and where it is 1 - error ("costs" below
    #: it), each as :meth:`Judge._crossing` gives it: (length or None, "found" / "never" / "always")
    pays_above: tuple
    costs_below: tuple
    #: the model's speedup at each gamma from 0 (plain decoding, 1) to the judge's gamma_max at this window's load and
    #: acceptance: what a held schedule proposal is weighed against (:meth:`specsim.watch.watcher.Watcher`)
    speedups: tuple = ()

    def to_dict(self) -> dict:
        return {
            "alpha": self.alpha,
            "gamma": self.gamma,
            "speedup": self.speedup,
            "break_even_length": self.break_even_length,
            "break_even": self.break_even,
            "interval": list(self.interval) if self.interval else None,
            "verdict": self.verdict,
            "running_model": self.running_model,
            "best_gamma": self.best_gamma,
            "best_speedup": self.best_speedup,
            "error": self.error,
            "pays_above_length": self.pays_above[0],
            "pays_above": self.pays_above[1],
            "costs_below_length": self.costs_below[0],
            "costs_below": self.costs_below[1],
        }


def window_sd(window, phi: float | None = None) -> float | None:
    """The standard deviation of a window's acceptance length before a drift reference is set: the spread ``v`` of one
    draft's accepted tokens over the fewer of its drafts ``n`` and the requests ``N`` finished in it, counted as
    their effective number ``N_eff`` where the engine's histogram of their tokens gives it (the module's docstring: a
    request's rounds are not independent, and until a reference measures how much they are not, the request is the
    unit), or ``phi v / n`` where an earlier reference of this watch measured the overdispersion ``phi``
    and that is less; None without draft counts (a gauge's window) or a draft variance.

    >>> from specsim.watch.windows import Window
    >>> w = Window(0.0, 60.0, "m", 1, "", drafts=30000.0, acceptance_length=2.0, per_position=(0.6, 0.3, 0.1),
    ...            gamma=3, requests_per_s=4.0, input_tokens=1000.0, output_tokens=256.0)
    >>> round(window_sd(w), 4), round(window_sd(w, phi=8.0), 4)  # v = 1: over 240 requests; over 30,000 / 8 drafts
    (0.0645, 0.0163)
    """
    if not window.drafts:
        return None
    var = window.draft_variance()
    if var is None:
        return None
    # the requests a window finished, as many equal ones as their unequal draft counts are worth where the engine's
    # histogram of their tokens says (Kish's count), else as counted (None where the engine does not count them: the
    # drafts); none finished: one unit
    requests = window.effective_requests if window.effective_requests is not None else window.finished_requests
    units = min(window.drafts, window.drafts if requests is None else requests)
    if phi is not None:
        units = max(units, window.drafts / phi)
    return math.sqrt(var / max(units, 1.0))


def acceptance_interval(window, sd: float | None = None) -> tuple | None:
    """The window's acceptance length, 95%: (low, high) with the standard deviation ``sd`` where given (the drift
    reference's, :meth:`specsim.watch.drift.DropDetector.sd`, or :func:`window_sd` with a phi), else
    :func:`window_sd`'s; None without a spread (a gauge's window before the reference)."""
    sd = window_sd(window) if sd is None else sd
    if sd is None:
        return None
    return window.acceptance_length - CONFIDENCE_Z * sd, window.acceptance_length + CONFIDENCE_Z * sd


def _loads(windows: list) -> tuple:
    """(requests/s, prompt tokens, output tokens) of each window: the load the serving model is asked at."""
    return tuple(
        np.array([getattr(w, k) for w in windows]) for k in ("requests_per_s", "input_tokens", "output_tokens")
    )


def _length(alpha: np.ndarray, gamma: int) -> np.ndarray:
    """E(alpha, gamma), the tokens one verification emits (one alpha per position)."""
    from specsim.speculation.acceptance import tokens_per_round

    return np.asarray(tokens_per_round(np.asarray(alpha, dtype=float), gamma), dtype=float)


class Judge:
    """The serving model of one deployment, asked about windows.

    ``dep``: the deployment (its engine preset, or a calibration's fitted engine); ``limits``: the engine's
    max_num_seqs and token budget; ``gamma_max``: the largest gamma the best-gamma search tries (the drafter's own
    limit applies); ``memory_utilization``: the engine's share of GPU memory (the KV cache the model holds)."""

    def __init__(self, dep, limits, gamma_max: int = DEFAULT_GAMMA_MAX, memory_utilization: float | None = None):
        from specsim.answers.verdict import model_error
        from specsim.core.limits import MAX_GAMMA, check_int
        from specsim.serving.capacity import free_kv_bytes, no_room_at
        from specsim.serving.steady import EngineLimits
        from specsim.speculation.search import checked_deployment

        # each named as given, in the range --gamma-max takes: 0, -1 and 2.5 were read as 1, 1 and 2 (max(int(top), 1))
        dep, gamma_max = checked_deployment(dep), check_int("gamma_max", gamma_max, 1, MAX_GAMMA)
        if not isinstance(limits, EngineLimits):
            raise TypeError(f"limits is an EngineLimits (specsim.serving.steady), got {type(limits).__name__}")
        # An engine whose weights leave no KV cache in its share cannot be the one serving the page: refused, as every
        # answer at a load refuses it, rather than judged as an engine with one request running.
        # The same for the drafter beside it (at one draft token: the least it holds), since the page speculates.
        free = free_kv_bytes(
            dep, 1, 1, 1, memory_utilization, limits.max_batched_tokens, limits.max_num_seqs, limits.spec_max_num_seqs
        )
        for speculating in (False, True):
            if free[speculating] <= 0:
                raise ValueError(no_room_at(dep, speculating, free[speculating], memory_utilization, limits))
        # A calibration's held-out error is of its runs at their own acceptance; every window is judged at the one it
        # measured (the thresholds at others still): set aside, saying why, where it is of an acceptance (judged_at).
        engine = dep.engine.judged_at(LIVE_ACCEPTANCE, LIVE_ACCEPTANCE)
        dep = dep if engine is dep.engine else dataclasses.replace(dep, engine=engine)
        self.dep, self.limits, self.memory_utilization = dep, limits, memory_utilization
        #: the error of the model's speedups, as every answer at an acceptance carries it (model_error, judged_at)
        self.error = model_error(dep)
        top = gamma_max
        if dep.drafter is not None and dep.drafter.max_steps is not None:
            top = min(top, dep.drafter.max_steps)
        self.gamma_max = max(int(top), 1)

    def state(self, acceptance, gammas, loads, P, O, gamma_top, kind: str = "rate"):
        """The steady state of ``loads`` (requests/s, or users where ``kind`` is "concurrency") of requests of ``P`` in
        and ``O`` out, with the KV cache the engine holds at their medians and the drafter's scratch for
        ``gamma_top``."""
        from specsim.serving.capacity import free_kv_bytes
        from specsim.serving.steady import steady_state

        kv = free_kv_bytes(
            self.dep,
            float(np.median(P)),
            float(np.median(O)),
            gamma_top,
            self.memory_utilization,
            self.limits.max_batched_tokens,
            self.limits.max_num_seqs,
            self.limits.spec_max_num_seqs,
        )
        return steady_state(self.dep, acceptance, gammas, loads, P, O, kind, self.limits, kv)

    def judge(self, windows: list, spread: list | None = None) -> list:
        """A :class:`Judgement` per window (None for a window that is not :attr:`~.windows.Window.usable`); ``spread``
        gives per window the standard deviation of its acceptance length (None: :func:`acceptance_interval`'s own, the
        request as the unit)."""
        out: list = [None] * len(windows)
        spread = [None] * len(windows) if spread is None else spread
        for gamma, idx in self._by_gamma(windows).items():
            ws = [windows[i] for i in idx]
            alpha, state, ratio, best, room = self._speeds(gamma, ws)
            crossings = self._thresholds(gamma, ws)
            e = self.error.share
            for j, i in enumerate(idx):
                interval = acceptance_interval(ws[j], spread[i])
                (length, how), up, down = crossings[j]
                out[i] = Judgement(
                    float(alpha[j]),
                    gamma,
                    float(ratio[gamma, j]) if room[j] else math.nan,
                    length,
                    how,
                    interval,
                    verdict_of(interval, up, down) if room[j] else JUDGEMENTS[4],
                    float(state.in_engine[gamma, j]),
                    int(best[j]),
                    float(ratio[best[j], j]),
                    e,
                    up,
                    down,
                    tuple(float(v) for v in ratio[:, j]),
                )
        return out

    def thresholds(self, windows: list) -> list:
        """Per window (None for one that is not :attr:`~.windows.Window.usable`) the three crossings a
        :class:`Judgement` holds, of the speedup 1 (``break_even``), 1 + error (``pays_above``) and 1 - error
        (``costs_below``), each (acceptance length or None, "found" / "never" / "always"), as :meth:`judge` gives them:
        without the speedup at the window's own acceptance, which a table of thresholds (:func:`.publish.break_even_tables`)
        does not take (a fifth of its time)."""
        out: list = [None] * len(windows)
        for gamma, idx in self._by_gamma(windows).items():
            for i, crossings in zip(idx, self._thresholds(gamma, [windows[i] for i in idx])):
                out[i] = crossings
        return out

    def speedups(self, windows: list) -> list:
        """Per window (None for one that is not :attr:`~.windows.Window.usable`) the model's speedup at its rate,
        lengths and acceptance, :meth:`judge`'s ``speedup`` (NaN: "no room"), without the thresholds, whose grid of
        alphas takes four fifths of a judgement: what a search for the acceptance of a given speedup asks."""
        out: list = [None] * len(windows)
        for gamma, idx in self._by_gamma(windows).items():
            _, _, ratio, _, room = self._speeds(gamma, [windows[i] for i in idx])
            for j, i in enumerate(idx):
                out[i] = float(ratio[gamma, j]) if room[j] else math.nan
        return out

    def _by_gamma(self, windows: list) -> dict:
        """The usable windows' indices by the gamma they are judged at (the gamma in use, at most :attr:`gamma_max`)."""
        by_gamma: dict = {}
        for i, w in enumerate(windows):
            if w.usable and w.gamma:
                by_gamma.setdefault(min(int(w.gamma), self.gamma_max), []).append(i)
        return by_gamma

    def _speeds(self, gamma: int, ws: list) -> tuple:
        """(alpha, state, ratio, best, room) of windows ``ws`` judged at ``gamma``: each window's acceptance as one
        alpha, the serving model's steady state at it for every gamma (rows plain, 1..gamma_max), the speedups
        (:func:`_served_ratio`), the best gamma and where the speculating engine at ``gamma`` holds a request."""
        from specsim.answers.load import scores
        from specsim.speculation.acceptance import alpha_from_acceptance_length
        from specsim.speculation.schedule import DEFAULT_SCHEDULE_RTOL
        from specsim.speculation.search import argmax_gamma

        rates, P, O = _loads(ws)
        lengths = np.array([min(w.acceptance_length, gamma + 1.0) for w in ws])
        alpha = np.asarray(alpha_from_acceptance_length(lengths, gamma), dtype=float)
        # Speedup at each window's own alpha, and every gamma's for the best one: rows plain, 1..gamma_max.
        rows = np.arange(self.gamma_max + 1)
        state = self.state(alpha[None, :], rows[:, None], rates, P, O, self.gamma_max)
        ratio = _served_ratio(state)  # (gamma, window)
        # The best as optimal-gamma picks it at a rate, on the one rule of the answers (scores: a gamma whose engine
        # has no room for one of the window's requests beside its weights is never picked, and one that falls behind
        # the rate loses to one that keeps up), where the watch's own rule on this ratio picked a gamma with no room
        # (1.9x at 8,000-token prompts under --memory-util 0.23, tests/test_watch.py); as the schedule the watch
        # writes takes it (load_schedule's rtol): the smallest gamma within 1% of the most, so that two gammas
        # within noise of each other do not trade places window after window.
        best = argmax_gamma(scores(state, "rate"), DEFAULT_SCHEDULE_RTOL)
        # where the speculating engine at the window's gamma holds no request, its "speedup" is no number to judge
        room = np.broadcast_to(np.asarray(state.limited_by), state.tpot_s.shape)[gamma] != "no room"
        return alpha, state, ratio, best, room

    def _thresholds(self, gamma: int, ws: list) -> list:
        """Per window of ``ws`` judged at ``gamma``, the crossings of 1, 1 + error and 1 - error on the alpha grid."""
        rates, P, O = _loads(ws)
        # The break-even on the alpha grid at the gamma in use.
        grid = self.state(
            np.r_[0.0, ALPHAS][:, None], np.r_[0, np.full(ALPHAS.size, gamma)][:, None], rates, P, O, gamma
        )
        curve = _served_ratio(grid)[1:]  # (alpha, window)
        e = self.error.share
        return [
            tuple(self._crossing(curve[:, j], gamma, level) for level in (1.0, 1.0 + e, 1.0 - e))
            for j in range(len(ws))
        ]

    @staticmethod
    def _crossing(curve: np.ndarray, gamma: int, level: float = 1.0) -> tuple:
        """(the acceptance length where the speedup first reaches ``level`` on the alpha grid, "found"), or (None,
        "never": no acceptance reaches it / "always": every one does)."""
        ok = np.isfinite(curve)
        above = ok & (curve >= level)
        if not above.any():
            return None, "never"
        k = int(np.argmax(above))
        if k == 0:
            return None, "always"
        a0, a1, s0, s1 = ALPHAS[k - 1], ALPHAS[k], curve[k - 1], curve[k]
        alpha = a0 + (level - s0) * (a1 - a0) / (s1 - s0) if np.isfinite(s0) and s1 != s0 else a1
        return float(_length(alpha, gamma)), "found"


def verdict_of(interval: tuple | None, pays_above: tuple, costs_below: tuple) -> str:
    """One of :data:`JUDGEMENTS` for a window's acceptance-length ``interval`` (None: no spread, every length
    possible), the crossing of 1 + error (``pays_above``) and of 1 - error (``costs_below``), each (length or None,
    "found" / "never" / "always") as :meth:`Judge._crossing` gives it.

    >>> up, down = (2.10, "found"), (1.90, "found")  # speedup 1 + e at 2.10, 1 - e at 1.90
    >>> [verdict_of(i, up, down) for i in ((2.2, 2.3), (1.7, 1.8), (1.95, 2.05), (2.05, 2.15), None)]
    ['pays', 'costs', 'too close to call', 'undecided', 'undecided']
    >>> verdict_of((1.0, 4.0), (None, "never"), (None, "always"))  # every acceptance within the error of 1
    'too close to call'
    """
    low, high = interval if interval is not None else (-math.inf, math.inf)
    (up, up_kind), (down, down_kind) = pays_above, costs_below
    if down_kind == "never" or (down_kind == "found" and high < down):
        return JUDGEMENTS[1]
    if up_kind == "always" or (up_kind == "found" and low > up):
        return JUDGEMENTS[0]
    below_up = up_kind == "never" or high <= up
    above_down = down_kind == "always" or low >= down
    return JUDGEMENTS[2] if below_up and above_down else JUDGEMENTS[3]
