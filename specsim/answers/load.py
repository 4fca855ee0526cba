"""Answers at a load: what a benchmark at a concurrency (or a request rate) measures, with and without speculation.

Users measure and serve at a load (``vllm bench serve --max-concurrency N --random-input-len P --random-output-len O``),
not at a decode batch.  :func:`load_answer` solves each load by the serving model (:mod:`specsim.serving.steady`: the
decoding sequences' step and the prompt chunks beside them, the engine's max_num_seqs and KV capacity), plain and at
every gamma up to ``gamma_max``, and picks per load the gamma a benchmark would: the most output tokens per second in a
closed loop (the same as the shortest end-to-end latency at a fixed number of users), the shortest TPOT under Poisson
arrivals (whose throughput is the arrival rate while the engine keeps up).  Each row carries what a benchmark prints:
TPOT, ITL, TTFT and output throughput, both ways, and the mean decode batch the load implies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (a benchmark's prompt and output lengths unless told, the reference article's: their home is core.defaults)
from specsim.answers.frames import Framed
from specsim.core.defaults import DEFAULT_GAMMA_MAX, DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS
from specsim.core.limits import (
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_GAMMA,
    MAX_RATE_PER_S,
    MAX_REQUESTS,
    check_int,
    check_real,
    whole_numbers,
)
from specsim.core.names import given_as
from specsim.core.workloads import mean_context_tokens
from specsim.serving.steady import EngineLimits, SteadyState, check_limits, engine_limits, load_label, served_state
from specsim.speculation.search import checked_deployment

__all__ = [
    "DEFAULT_INPUT_TOKENS",
    "DEFAULT_OUTPUT_TOKENS",
    "LoadAnswer",
    "RequestLengths",
    "check_positions",
    "checked_loads",
    "lengths_defaults_said",
    "load_answer",
    "past_measured",
    "request_lengths",
]


@dataclass(frozen=True, eq=False)
class RequestLengths:
    """A load's requests: their mean prompt and output tokens, the workload's samples where a distribution gives them
    (None: every request alike), and how they were given, for the header."""

    input_tokens: float
    output_tokens: float
    prompt_sample: np.ndarray | None
    output_sample: np.ndarray | None
    description: str

    @property
    def context_tokens(self) -> int:
        """The mean context of a request, its prompt plus half its output (the context every answer's acceptance and
        header use), in tokens."""
        return int(mean_context_tokens(self.input_tokens, self.output_tokens))


def request_lengths(
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    workload: str | None = None,
    defaults: tuple[int, int, str] | None = None,
) -> RequestLengths:
    """The requests of a load: every request ``input_tokens`` in and ``output_tokens`` out (a benchmark's fixed
    lengths; either one unset takes ``defaults``, (prompt, output, where from), else the reference article's, said so),
    or with neither given, a serving workload's distributions (:data:`specsim.core.workloads.WORKLOADS`, 20,000
    requests drawn with seed 0), where ``workload`` names one; a length and a workload together are refused
    (:func:`~specsim.core.workloads.lengths_or_workload`, as serve-sim refuses them).

    >>> print(request_lengths(2000).description)
    every request 2000 in, 256 out [output_tokens 256 (default: the article's completion)]
    >>> request_lengths(2000, 100).context_tokens
    2050
    """
    P, O = input_tokens, output_tokens
    P = None if P is None else check_int("input_tokens", P, 1, MAX_CONTEXT)
    O = None if O is None else check_int("output_tokens", O, 1, MAX_CONTEXT)
    if workload is not None and (P is not None or O is not None):
        from specsim.core.workloads import lengths_or_workload

        raise ValueError(lengths_or_workload())
    if P is None and O is None and workload is not None:
        from specsim.core.workloads import get_workload

        w = get_workload(workload)
        p, o = w.sample(20_000, np.random.default_rng(0))
        return RequestLengths(
            float(p.mean()),
            float(o.mean()),
            p,
            o,
            f"workload {w.name} ({w.source}; means {p.mean():.0f} in, {o.mean():.0f} out)",
        )
    said = lengths_defaults_said(P, O, defaults)
    P = (DEFAULT_INPUT_TOKENS if defaults is None else defaults[0]) if P is None else P
    O = (DEFAULT_OUTPUT_TOKENS if defaults is None else defaults[1]) if O is None else O
    return RequestLengths(float(P), float(O), None, None, f"every request {P} in, {O} out{said}")


def lengths_defaults_said(
    input_tokens: int | None, output_tokens: int | None, defaults: tuple[int, int, str] | None = None
) -> str:
    """The fixed lengths not given, as every header cites them (empty where both are given): ``defaults``' (prompt,
    output, where from), else the reference article's; each named as its caller gives it (:func:`given_as`: the
    keyword to Python, ``--input-len`` and ``--output-len`` on the command line).

    >>> lengths_defaults_said(2000, None)
    " [output_tokens 256 (default: the article's completion)]"
    >>> lengths_defaults_said(None, 300, (700, 256, "the runs cal.yaml was fitted to"))
    ' [input_tokens 700 (default: the runs cal.yaml was fitted to)]'
    >>> from specsim.core.names import as_flags
    >>> with as_flags():
    ...     lengths_defaults_said(None, None, (700, 256, "the runs cal.yaml was fitted to"))
    ' [--input-len 700 and --output-len 256 (default: the runs cal.yaml was fitted to)]'
    """
    given_in, given_out = given_as("input_tokens"), given_as("output_tokens")
    if input_tokens is None and output_tokens is None and defaults is not None:
        return f" [{given_in} {defaults[0]} and {given_out} {defaults[1]} (default: {defaults[2]})]"
    said = []
    if input_tokens is None:
        why = "the reference article's prompt" if defaults is None else defaults[2]
        said.append(f"{given_in} {DEFAULT_INPUT_TOKENS if defaults is None else defaults[0]} (default: {why})")
    if output_tokens is None:
        why = "the article's completion" if defaults is None else defaults[2]
        said.append(f"{given_out} {DEFAULT_OUTPUT_TOKENS if defaults is None else defaults[1]} (default: {why})")
    return f" [{'; '.join(said)}]" if said else ""


@dataclass(frozen=True, eq=False)
class LoadAnswer(Framed):
    """The best gamma per load with what a benchmark measures at it, plain and speculating."""

    deployment: object
    acceptance: str
    kind: str  #: "concurrency", "rate" or "batch"
    loads: list
    input_tokens: float
    output_tokens: float
    lengths: str  #: how the lengths were given, for the header
    limits: EngineLimits
    state: SteadyState  #: every gamma searched (rows) at every load (columns)
    best: np.ndarray  #: the row of the best gamma per load (0: plain decoding)
    fixed_gamma: int | None = None
    #: The deepest draft step the acceptance was measured at (a calibration's); a gamma past it extrapolates it.
    measured_steps: int | None = None
    #: The best is the smallest gamma within this share of the most (0: the most itself), as the batch view's --rtol.
    rtol: float = 0.0
    #: What stopped the search at its top gamma (:func:`specsim.speculation.search.search_bound`): a best gamma there
    #: says it, as the batch view's ("": not said).
    gamma_bound: str = ""
    #: Every request of the given lengths (a benchmark's), not a workload's distribution of them: what the admission wait
    #: takes as a request's spread of time in the engine (:func:`specsim.serving.arrivals.admission_said`).
    fixed_lengths: bool = True
    #: The rates the answer was computed at, as every record's ``acceptance_rates`` gives them
    #: (:func:`specsim.speculation.acceptance.acceptance_rates`).
    rates: dict | None = None
    #: Where the engine's limits not given come from (:func:`specsim.serving.steady.engine_limits`; "": all given).
    limits_from: str = ""

    def __repr__(self) -> str:  # a notebook's echo: the answer per load, not every field (rows holds the rest)
        # Each load's gamma with what it was picked on (:func:`objective`: output tok/s, or at a rate the TPOT speedup
        # while an arm keeps up) and, where that is output tok/s, the TPOT speedup beside it, labelled.
        tpot = objective_is_tpot(self.state, self.kind)
        picks = []
        for j, r in enumerate(self.rows[:6]):
            gain = float(self.objective()[int(self.best[j]), j])
            if r["speedup_tpot"] is None:
                beside = f"TPOT n/a, {' and '.join(r['past_capacity'])} past capacity"
            else:
                beside = f"TPOT {r['speedup_tpot']:.3f}x"
            picks.append(
                f"{r['load']}: gamma {r['gamma']} " + (beside if tpot[j] else f"{gain:.3f}x output tok/s ({beside})")
            )
        picks = ", ".join(picks)
        more = f", ... ({len(self.loads)} loads)" if len(self.loads) > 6 else ""
        return f"LoadAnswer({self.deployment!r}, {self.acceptance.split(' (')[0]}; {picks}{more})"

    def records(self, limits_said: str | None = None) -> list[dict]:
        """What ``optimal-gamma``, ``speedup`` and ``compare`` at a load print with ``--json``: each of :attr:`rows` with
        the acceptance (its label and its rates), the engine's limits and where they come from (``limits_said``, the
        clause after their label: None, :attr:`limits_from` in brackets), each arm's KV cache per GPU, the requests'
        lengths and the sources of every number (``provenance``, ``deployment``)."""
        if limits_said is None:
            limits_said = f" ({self.limits_from})" if self.limits_from else ""
        kv, dep = self.state.kv_bytes, self.deployment
        shared = {
            "acceptance": self.acceptance,
            "acceptance_rates": self.rates,
            "engine_limits": self.limits.label + limits_said,
            "kv_cache_bytes_per_gpu": None if kv is None else {"plain": float(kv[0]), "speculating": float(kv[1])},
            "provenance": dep.provenance(),
            "deployment": dep.identity(),
            "lengths": self.lengths,
        }
        return [r | shared for r in self.rows]

    @property
    def rows(self) -> list[dict]:
        s = self.state
        speedup = self.tpot_speedup()
        out = []
        for j, load in enumerate(self.loads):
            i = int(self.best[j])

            def at(x, i=i, j=j):
                return float(np.broadcast_to(x, s.tpot_s.shape)[i, j])

            def plain(x, j=j):
                return float(np.broadcast_to(x, s.tpot_s.shape)[0, j])

            past = self.past_capacity(i, j)
            out.append(
                {
                    "load": load_label(self.kind, float(load)),
                    self.kind: int(load) if self.kind == "concurrency" else float(load),  # users are whole
                    "gamma": int(s.gamma[i, 0]),
                    # a ratio against an arm past capacity is of its full engine's TPOT, not the load's: no speedup
                    "speedup_tpot": None if past else float(speedup[i, j]),
                    "past_capacity": past,
                    "throughput_ratio": at(s.output_tokens_per_s) / plain(s.output_tokens_per_s),
                    "plain": _figures(s, 0, j),
                    "spec": _figures(s, i, j),
                    "recommendation": self._recommend(i, j),
                    "verdict": self.verdict(i, j),
                    "on_the_line": self._line(i, j) != "",
                    "model_error": self.model_error.record(),
                }
            )
        return out

    @property
    def model_error(self):
        """The error a gain must clear to be called: :func:`specsim.answers.verdict.model_error` of the deployment."""
        from specsim.answers.verdict import model_error

        return model_error(self.deployment)

    def _weighed(self, i: int, j: int) -> int | None:
        """The row of the speculating gamma the verdict at load ``j`` weighs: the one picked (row ``i``), else the best
        speculating one (None: none searched, or none has room)."""
        return i if i > 0 else self._best_speculating_row(j)

    def verdict(self, i: int, j: int) -> str | None:
        """:func:`specsim.answers.verdict.verdict` at load ``j`` with gamma row ``i`` picked: the gain of the gamma
        weighed (:meth:`objective` - 1) against :attr:`model_error`; None where no speculating gamma was weighed."""
        from specsim.answers.verdict import verdict

        k = self._weighed(i, j)
        if k is None:
            return None
        return verdict(float(self.objective()[k, j]) - 1.0, self.model_error, i > 0 and self._gains(i, j))

    def _line(self, i: int, j: int) -> str:
        """What the recommendation at load ``j`` adds where the gain :meth:`verdict` weighs is on the line
        (:func:`specsim.answers.verdict.on_the_line_said`, as optimal-gamma at a batch says it); "" elsewhere."""
        from specsim.answers.verdict import on_the_line_said

        k = self._weighed(i, j)
        if k is None:
            return ""
        return on_the_line_said(float(self.objective()[k, j]) - 1.0, self.model_error, i > 0 and self._gains(i, j))

    def _gains(self, i: int, j: int) -> bool:
        """Whether gamma row ``i`` beats plain decoding at load ``j`` (a fixed gamma may lose)."""
        return self.fixed_gamma is None or self.objective()[i, j] >= 1.0

    def _too_close(self, i: int, j: int) -> str:
        """The recommendation where the gain weighed is inside the model's error; "" where it is not."""
        from specsim.answers.verdict import VERDICTS, too_close_said

        if self.verdict(i, j) != VERDICTS[2]:
            return ""
        k = self._weighed(i, j)
        gain = float(self.objective()[k, j])
        tpot = bool(objective_is_tpot(self.state, self.kind)[j])
        said = f"a TPOT speedup of {gain:.3f}x" if tpot else f"{_change(gain - 1)} output tok/s"
        return too_close_said(f"gamma={int(self.state.gamma[k, 0])}", said, self.model_error)

    def _grid(self, x) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), self.state.tpot_s.shape)

    def objective(self) -> np.ndarray:
        """What the best gamma of a load maximises, per gamma searched (rows) and load (columns), against plain
        decoding: :func:`objective`."""
        return objective(self.state, self.kind)

    def scores(self) -> np.ndarray:
        """What a load's gamma is picked on, per gamma searched (rows) and load (columns): :func:`scores`."""
        return scores(self.state, self.kind)

    def past_capacity(self, i: int, j: int) -> list[str]:
        """The arms ("plain", "speculating" at gamma row ``i``) whose engine cannot serve load ``j``: an open loop's
        rate past what it serves, its queue growing and its TPOT the full engine's.  Where either is, the TPOT ratio
        is no speedup at that load: one arm serves the rate and the other does not (:attr:`rows` gives None)."""
        behind = np.broadcast_to(np.asarray(self.state.saturated, dtype=bool), self.state.tpot_s.shape)[:, j]
        return [arm for arm, row in (("plain", 0), ("speculating", i)) if behind[row]]

    def best_within(self, rtol: float) -> np.ndarray:
        """The row of the best gamma per load as :attr:`best` picks it, with ``rtol`` in place of :attr:`rtol` (what
        optimal-gamma at these loads gives with that --rtol)."""
        return _best(self.state, self.kind, self.fixed_gamma is not None, rtol)

    def tpot_speedup(self) -> np.ndarray:
        """Plain TPOT over each gamma's TPOT, per gamma searched (rows) and load (columns): the speedup printed."""
        tpot = self._grid(self.state.tpot_s)
        return tpot[0] / tpot

    def best_speculating(self, j: int) -> tuple[int, dict, float] | None:
        """The speculating gamma that serves load ``j`` best where one has room (the one a recommendation not to
        speculate weighs, :meth:`_held_back`), what a benchmark would measure with it, and its TPOT speedup (None where
        either arm is past capacity: :meth:`past_capacity`); None where no speculating gamma was searched or none has
        room."""
        k = self._best_speculating_row(j)
        if k is None:
            return None
        speedup = None if self.past_capacity(k, j) else float(self.tpot_speedup()[k, j])
        return int(self.state.gamma[k, 0]), _figures(self.state, k, j), speedup

    def _best_speculating_row(self, j: int) -> int | None:
        """The row of :meth:`best_speculating`'s gamma (None: none searched, or none has room)."""
        s = self.state
        if s.tpot_s.shape[0] < 2 or _no_room(s)[1:, j].all():
            return None
        return 1 + int(np.argmax(self.scores()[1:, j]))

    def key_batch(self, j: int) -> float:
        """The decode batch load ``j`` runs at with its best gamma: what an engine's schedule is keyed by."""
        return float(self._grid(self.state.decode_batch)[int(self.best[j]), j])

    def _recommend(self, i: int, j: int) -> str:
        """The recommendation at load ``j`` with gamma row ``i`` picked (:meth:`_said`), and where its gain is on the
        line, that (:meth:`_line`)."""
        return self._said(i, j) + self._line(i, j)

    def _said(self, i: int, j: int) -> str:
        s = self.state
        close = self._too_close(i, j)
        if close:
            return close + self._fewer_held(self._weighed(i, j), j, named=False, output=False)
        if self.fixed_gamma is not None:  # (a gamma that has no room is refused: load_answer)
            if self.objective()[i, j] < 1.0:  # the gamma asked for loses to plain decoding at this load: say how
                loss = self._loss(i, j)
                return f"gamma {self.fixed_gamma} loses: {loss}; do not speculate at this load" + (
                    self._fewer_held(i, j, named=False, output=False)  # (the loss is said already)
                )
            return f"gamma {self.fixed_gamma}" + self._fewer_held(i, j, named=False)
        if i == 0:
            if np.shape(s.gamma)[0] < 2:  # gamma_max 0: no speculating gamma was searched, none weighed against plain
                from specsim.speculation.search import not_weighed

                return f"speculation off: {not_weighed()}"
            if self.speculation_has_no_room:
                return "do not speculate (no room for the drafter)"
            return "do not speculate" + self._held_back(j)
        return (
            f"speculate with gamma={int(s.gamma[i, 0])}"
            + self._bound(i)
            + self._slower_tokens(i, j)
            + self._fewer_held(i, j, named=False)
            + self._past(i)
        )

    def _slower_tokens(self, i: int, j: int) -> str:
        """Where gamma row ``i`` is chosen on output tok/s (:func:`objective`) while its TPOT is longer than plain
        decoding's: the gain and where it comes from, beside the TPOT given up (" (...)"; "" where TPOT is no worse).
        A speedup under 1 beside "speculate" reads as a contradiction unless it says so."""
        s = self.state
        if self.kind == "rate" or self.tpot_speedup()[i, j] >= 1.0:
            return ""
        out = self._grid(s.output_tokens_per_s)[:, j]
        ttft = self._grid(s.ttft_s)[:, j]
        tpot = self._grid(s.tpot_s)[:, j]
        shorter = " from a shorter TTFT" if np.isfinite(ttft[[0, i]]).all() and ttft[i] < ttft[0] else ""
        return f" ({_change(out[i] / out[0] - 1)} output tok/s{shorter}; TPOT {_change(tpot[i] / tpot[0] - 1)})"

    def _bound(self, i: int) -> str:
        """Where gamma row ``i`` is the top of the search: the bound that stopped it, in the batch view's words
        (:attr:`gamma_bound`: the drafter's most tokens a round, the last position the acceptance was measured at, or
        the --gamma-max asked for); "" below the top."""
        top = int(self.state.gamma[-1, 0])
        if self.fixed_gamma is not None or not self.gamma_bound or i == 0 or int(self.state.gamma[i, 0]) != top:
            return ""
        return f" ({self.gamma_bound})"

    def _past(self, i: int) -> str:
        """Where gamma row ``i`` drafts past the deepest step the acceptance was measured at: that it extrapolates."""
        return past_measured(int(self.state.gamma[i, 0]), self.measured_steps)

    def _loss(self, i: int, j: int) -> str:
        """How gamma row ``i`` loses to plain decoding at load ``j``, by what the load's best gamma is chosen on
        (:func:`objective`)."""
        s = self.state
        behind = np.broadcast_to(np.asarray(s.saturated, dtype=bool), s.tpot_s.shape)[:, j]
        if self.kind == "rate" and behind[i] and not behind[0]:
            return "it falls behind the arrivals, which plain decoding keeps up with"
        if self.kind == "rate" and not behind[i]:
            return f"TPOT speedup {self.tpot_speedup()[i, j]:.2f}x"
        out = np.broadcast_to(np.asarray(s.output_tokens_per_s, dtype=float), s.tpot_s.shape)[:, j]
        return f"{_change(out[i] / out[0] - 1)} output tok/s"

    def planned_limit_said(self, max_num_seqs_given: bool = False) -> str:
        """One line where the engine's max_num_seqs holds users back at some load (either arm) and that limit is a
        calibration's whose ``serving`` record says bench-plan chose it (the plan's largest load:
        :func:`specsim.calibration.plan.servers_max_num_seqs`, carried in the preset's ``served_limits``), not one
        ``max_num_seqs_given``: the limit, who set it and how to answer for another server's; "" otherwise."""
        served = self.deployment.engine.served_limits
        seqs, who = self.limits.max_num_seqs, None if served is None or len(served) < 6 else served[5]
        if max_num_seqs_given or not who or served[0] != seqs:
            return ""
        arms = [arm for arm in ("plain", "spec") if int(self.limits.seqs(arm == "spec")) == seqs]
        at = [r["load"] for r in self.rows if any(r[arm]["limited_by"] == "max_num_seqs" for arm in arms)]
        if not at:
            return ""
        return (
            f"limited by max_num_seqs {seqs} at {', '.join(at)}, which {who}; give {given_as('max_num_seqs')} to answer "
            "for your server's"
        )

    def _held_back(self, j: int) -> str:
        """Why no gamma pays at load ``j`` where the speculating engine holds fewer requests than the plain one: the
        best gamma's :meth:`_fewer_held` ("" where it holds as many)."""
        k = self._best_speculating_row(j)
        return "" if k is None else self._fewer_held(k, j)

    def _fewer_held(self, k: int, j: int, named: bool = True, output: bool = True) -> str:
        """At load ``j``, where gamma row ``k``'s engine holds fewer requests than plain decoding's (its KV cache beside
        the drafter, or its own max_num_seqs): the requests each holds, and what that does to output tok/s and TTFT
        (" (...)", the gamma ``named``; "" where it holds as many).  Said beside a gamma that is recommended too: its
        gain in output may then be a fraction of a percent, bought with longer queues."""
        s = self.state
        held = np.broadcast_to(np.asarray(s.in_engine, dtype=float), s.tpot_s.shape)[:, j]
        limited = np.broadcast_to(np.asarray(s.limited_by), s.tpot_s.shape)[:, j]
        # ("capacity": a rate past what the engine serves, which holds what its KV cache or max_num_seqs lets it.)
        if held[k] >= held[0] or limited[k] not in ("kv cache", "max_num_seqs", "capacity"):
            return ""
        out = np.broadcast_to(np.asarray(s.output_tokens_per_s, dtype=float), s.tpot_s.shape)[:, j]
        ttft = np.broadcast_to(np.asarray(s.ttft_s, dtype=float), s.tpot_s.shape)[:, j]
        behind = np.broadcast_to(np.asarray(s.saturated, dtype=bool), s.tpot_s.shape)[:, j]
        gain = [f"{_change(out[k] / out[0] - 1)} output tok/s"] if output else []
        if self.kind == "rate" and behind[k] and not behind[0]:  # its output is a queue's: what matters is that
            gain = ["it falls behind the arrivals"] if output else []
        what = {"kv cache": "KV cache holds", "capacity": "engine holds"}.get(str(limited[k]), f"{limited[k]} admits")
        if np.isfinite(ttft[[0, k]]).all() and ttft[0] > 0:
            longer = ttft[k] / ttft[0]
            gain.append(f"TTFT {longer:.3g}x" if longer >= 2 else f"TTFT {_change(longer - 1)}")
        return (
            f" ({f'at gamma {int(s.gamma[k, 0])} ' if named else ''}its {what} {held[k]:.0f} "
            f"request{'' if round(held[k]) == 1 else 's'} against "
            f"{held[0]:.0f} without the drafter" + (f": {', '.join(gain)})" if gain else ")")
        )

    @property
    def speculation_has_no_room(self) -> bool:
        """Whether the speculating engine cannot hold one request beside the weights at every load."""
        return bool(self.state.tpot_s.shape[0] > 1 and _no_room(self.state)[1:].all())


def past_measured(gamma: int, steps: int | None) -> str:
    """What a recommendation of ``gamma`` adds where it drafts past the ``steps`` its acceptance was measured at (a
    calibration's): that its acceptance is carried past them (one rate per token, or per-position shares continued,
    :meth:`specsim.speculation.acceptance.Acceptance.beyond`); "" otherwise.

    >>> past_measured(9, 2)
    ' (past the 2 draft steps its acceptance was measured at: extrapolated)'
    """
    if steps is None or gamma <= steps:
        return ""
    return f" (past the {steps} draft step{'s' if steps != 1 else ''} its acceptance was measured at: extrapolated)"


def _change(x: float) -> str:
    """A relative change as the recommendations print it: whole percents, and one decimal under 10%.

    >>> _change(-0.47), _change(0.0044)
    ('-47%', '+0.4%')
    """
    return f"{x:+.0%}" if abs(x) >= 0.1 else f"{x:+.1%}"


def _figures(s: SteadyState, i: int, j: int) -> dict:
    """What a benchmark prints at row ``i``, load ``j``; a time with no bound (TTFT past capacity: the queue grows) is
    None, as JSON can carry it."""

    def v(x):
        value = float(np.broadcast_to(x, s.tpot_s.shape)[i, j])
        return value if np.isfinite(value) else None

    return {
        "tpot_s": v(s.tpot_s),
        "itl_s": v(s.itl_s),
        "ttft_s": v(s.ttft_s),
        "admission_wait_s": v(s.admission_s),
        "output_tokens_per_s": v(s.output_tokens_per_s),
        "requests_per_s": v(s.requests_per_s),
        "batch_a_request_sees": v(s.decode_batch),
        "mean_batch": v(s.mean_batch),
        "prefill_share": v(s.prefill_share),
        "in_engine": v(s.in_engine),
        "users_in_step": v(s.group),
        "tokens_per_round": v(s.tokens_per_round),
        # past capacity only in the long run: r(c), what the full engine serves with none queued (SteadyState)
        "unqueued_requests_per_s": v(s.unqueued_per_s),
        "saturated": bool(np.broadcast_to(s.saturated, s.tpot_s.shape)[i, j]),
        "limited_by": str(np.broadcast_to(s.limited_by, s.tpot_s.shape)[i, j]),
    }


def checked_loads(kind: str, loads) -> list:
    """``loads`` of ``kind`` as the answers take them, or ValueError naming what is allowed: users of a closed loop
    (whole, at most :data:`~specsim.core.limits.MAX_BATCH`), Poisson rates a second (above 0, at most
    :data:`~specsim.core.limits.MAX_RATE_PER_S`), or an offline batch's requests sent at once."""
    if kind == "concurrency":
        return _once(kind, whole_numbers("concurrency", loads, 1, MAX_BATCH, "concurrencies"))
    if kind == "batch":
        return _once(kind, whole_numbers("batch", loads, 1, MAX_REQUESTS, "batches"))
    if kind == "rate":
        rates = np.atleast_1d(np.asarray(loads, dtype=object))
        if rates.ndim != 1 or rates.size == 0:
            raise ValueError(f"rates must be a non-empty list of numbers, got {loads!r:.60}")
        return _once(kind, [check_real("rate", r, 0.0, MAX_RATE_PER_S, above=True) for r in rates])
    raise ValueError(f"kind must be concurrency, rate or batch, got {kind!r}")


def _once(kind: str, loads: list) -> list:
    """``loads``, one given twice refused by name (the command line refuses it as its flag's list: it was answered
    twice)."""
    from specsim.core.limits import repeated

    twice = repeated(loads)
    if twice:
        raise ValueError(f"{kind} {twice[0]:g} is given more than once: give each load once")
    return loads


def load_answer(
    dep,
    acceptance,
    label: str | None,
    kind: str,
    loads,
    input_tokens: float,
    output_tokens: float,
    *,
    gamma: int | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    limits: EngineLimits | None = None,
    memory_utilization: float | None = None,
    prompt_sample=None,
    output_sample=None,
    lengths: str = "",
    measured_steps: int | None = None,
    rtol: float = 0.0,
) -> LoadAnswer:
    """The best gamma (or ``gamma``, fixed) at each load of ``kind`` with what a benchmark measures there.

    ``dep`` the :class:`~specsim.speculation.deployment.Deployment`; ``acceptance`` an alpha or an
    :class:`~specsim.speculation.acceptance.Acceptance`, ``label`` what the rows call it; ``loads`` users of a closed
    loop (``kind`` "concurrency"), Poisson arrival rates in requests per second ("rate") or the requests of an offline
    batch ("batch"); ``gamma_max`` the largest gamma searched; ``limits`` the engine's max_num_seqs and token budget
    (:class:`~specsim.serving.steady.EngineLimits`; None: the engine's own on the GPU); ``lengths`` how the lengths
    were given, for the header.  ``input_tokens`` and ``output_tokens`` are every request's lengths in tokens (a
    benchmark's fixed lengths: its plain users move in step), unless ``prompt_sample`` and ``output_sample`` give a
    workload's distribution (then their means, and the prefill and context weighted over it).  The KV cache is the capacity model's at ``memory_utilization`` (a fraction
    of device memory; None: the engine's own).
    ``measured_steps``: the deepest draft step the acceptance was measured at, where known (a recommendation past it
    says that it extrapolates; an :class:`~specsim.speculation.acceptance.Acceptance`'s own where not given).
    ``rtol``: the best is the smallest gamma within that share of the most (plain decoding included), as
    :func:`specsim.speculation.search.optimal_gamma` takes it per decode batch.

    >>> from specsim.speculation.deployment import Deployment
    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="roofline", engine="none")
    >>> at = load_answer(dep, 0.8, "alpha 0.8", "concurrency", [1, 64], 1000, 256)
    >>> [(r["load"], r["gamma"], round(r["throughput_ratio"], 3)) for r in at.rows]
    [('concurrency 1', 4, 1.705), ('concurrency 64', 3, 1.305)]
    """
    dep = checked_deployment(dep)  # a name or a profile is refused by the keyword's name
    from specsim.answers.acceptance import checked_label
    from specsim.answers.verdict import judged_at
    from specsim.speculation.search import search_bound

    label = checked_label(acceptance, label)  # a row shows it as the acceptance it was computed at
    dep = judged_at(dep, acceptance, label)  # a calibration's error is of its runs' own acceptance, not another's
    loads = checked_loads(kind, loads)
    gamma_max = check_int("gamma_max", gamma_max, 0, MAX_GAMMA)
    gamma = None if gamma is None else check_int("gamma", gamma, 0, MAX_GAMMA)
    if prompt_sample is None:  # a benchmark's lengths, or a window's means (a workload's sample is checked when drawn)
        input_tokens = check_real("input_tokens", input_tokens, 1, MAX_CONTEXT)
        output_tokens = check_real("output_tokens", output_tokens, 2, MAX_CONTEXT)  # a TPOT needs a second token
    if measured_steps is None:
        measured_steps = getattr(acceptance, "measured_steps", None)
    limits_from = ""
    if limits is None:  # the engine's own on the GPU (vLLM's), else the serving model's defaults
        limits, limits_from = engine_limits(dep.engine, dep.hardware, kind == "batch")
    check_limits(dep.engine, limits)
    P, O = float(input_tokens), float(output_tokens)
    context, fixed = None, prompt_sample is None
    if not fixed:
        p, o = np.asarray(prompt_sample, dtype=float), np.asarray(output_sample, dtype=float)
        P, O = float(p.mean()), float(o.mean())
        context = float((o * mean_context_tokens(p, o)).sum() / o.sum())
    check_positions(dep, P, O, fixed)
    top = gamma_max if gamma is None else gamma
    if dep.drafter is not None and dep.drafter.max_steps is not None:
        top = min(top, dep.drafter.max_steps)
    measured = getattr(acceptance, "max_gamma", None)
    if measured is not None:
        top = min(top, measured)
    gammas = [0] + ([gamma] if gamma is not None else list(range(1, top + 1)))
    state = served_state(dep, acceptance, gammas, loads, P, O, kind, limits, memory_utilization, context, fixed)
    if gamma is not None and _no_room(state)[1:].any():  # the gamma asked for cannot run: no figures to give for it
        from specsim.serving.capacity import no_room_at

        raise ValueError(no_room_at(dep, True, state.kv_bytes[1], memory_utilization, limits, P + O))
    if not (np.isfinite(rtol) and 0 <= rtol < 0.5):
        raise ValueError(f"rtol must be in [0, 0.5), got {rtol!r}")
    best = _best(state, kind, gamma is not None, rtol)
    bound = "" if gamma is not None else search_bound(dep, acceptance, gamma_max)
    from specsim.speculation.acceptance import acceptance_rates

    return LoadAnswer(
        dep,
        label,
        kind,
        list(loads),
        P,
        O,
        lengths,
        limits,
        state,
        best,
        gamma,
        measured_steps,
        rtol,
        bound,
        fixed,
        acceptance_rates(acceptance),
        limits_from,
    )


def check_positions(dep, input_tokens: float, output_tokens: float, fixed: bool = True) -> None:
    """Refuse requests that grow past what the target or the draft was built for (``max_position_embeddings``), as the
    decode-batch view refuses such a context and serve-sim such a request: an engine rejects them."""
    tokens = input_tokens + output_tokens
    model = dep.past_positions(tokens)
    if model is not None:
        what = "every request" if fixed else "the workload's mean request"
        raise ValueError(
            f"{what} grows to {tokens:,.0f} tokens ({input_tokens:,.0f} in + {output_tokens:,.0f} out), past "
            f"{model.name}'s max_position_embeddings ({model.max_position_embeddings:,}); give "
            f"{given_as('input_tokens')} and {given_as('output_tokens')} within it"
        )


def objective(state: SteadyState, kind: str) -> np.ndarray:
    """What the best gamma at a load maximises, relative to plain decoding, per gamma (rows) and load (columns): the
    output tokens per second in a closed loop or an offline batch; at Poisson rates the TPOT speedup while the arrivals
    are kept up with (0 where that gamma falls behind), the throughput where no gamma keeps up."""
    shape = state.tpot_s.shape
    throughput = np.broadcast_to(np.asarray(state.output_tokens_per_s, dtype=float), shape)
    ratio = throughput / throughput[0]
    if kind != "rate":
        return ratio
    tpot = np.broadcast_to(np.asarray(state.tpot_s, dtype=float), shape)
    behind = np.broadcast_to(np.asarray(state.saturated, dtype=bool), shape)
    speed = np.where(behind, 0.0, tpot[0] / tpot)
    return np.where(objective_is_tpot(state, kind), speed, ratio)


def objective_is_tpot(state: SteadyState, kind: str) -> np.ndarray:
    """Per load: whether :func:`objective` weighs the TPOT speedup there (a Poisson rate some gamma keeps up with),
    not the output tokens per second."""
    behind = np.broadcast_to(np.asarray(state.saturated, dtype=bool), state.tpot_s.shape)
    return (~behind).any(axis=0) & (kind == "rate")


def _no_room(state: SteadyState) -> np.ndarray:
    """Per gamma (rows) and load: whether that engine has no room for one request beside the weights."""
    return np.broadcast_to(np.asarray(state.limited_by) == "no room", state.tpot_s.shape)


def scores(state: SteadyState, kind: str) -> np.ndarray:
    """What a load's gamma is picked on, per gamma (rows) and load (columns): :func:`objective`, and -inf for an engine
    with no room for one request beside the weights, which no pick takes (its state is of one request held, not of
    the load).  The one rule for optimal-gamma at a load (:func:`_best`), the best speculating gamma a verdict weighs
    and the schedule at loads (:func:`specsim.speculation.schedule.load_gammas`)."""
    return np.where(_no_room(state), -np.inf, objective(state, kind))


def _best(state: SteadyState, kind: str, fixed: bool, rtol: float = 0.0) -> np.ndarray:
    """The row of the best gamma per load, the most of :func:`scores` (the smallest gamma within ``rtol`` of it:
    :func:`specsim.speculation.search.argmax_gamma`); ties to the smaller gamma."""
    from specsim.speculation.search import argmax_gamma

    if fixed:
        return np.ones(state.tpot_s.shape[1], dtype=int)
    return argmax_gamma(scores(state, kind), rtol)
