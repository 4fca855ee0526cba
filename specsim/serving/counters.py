"""What a serving engine's metrics count while the request-level simulator plays requests through it: the observer
:func:`specsim.serving.simulator.simulate` tells each iteration, round and finished request (``observer=``)."""

from __future__ import annotations

import numpy as np

__all__ = ["StepCounters"]


class StepCounters:
    """What a serving engine's metrics count while :func:`simulate` plays requests through it (its ``observer``).

    Per iteration (a round of rounds' worth when many are advanced at once), with the time it ends: the drafts (one per
    speculating sequence and round), drafted and accepted tokens, the drafts whose token k was accepted, the tokens
    generated and the prompt tokens prefilled, and the requests running and waiting after it; per finished request,
    with its time: its prompt and output tokens, its verification passes and its accepted tokens per position, which
    engines that count a request when it finishes report (SGLang's tokenizer metrics, TensorRT-LLM's per-request
    ones).  :meth:`at` gives every count cumulated to a list of times, as a /metrics page read then would show.
    """

    def __init__(self, requests: int, gamma_max: int):
        self.gamma_max = int(gamma_max)
        # One record per call of :meth:`rounds`, kept as told and spread over its rounds when read (:meth:`_columns`):
        # (ends, drafts per round, draft tokens per round, accepted per round, accepted per round and position or None, generated per
        # round, prompt tokens of the last round, running, waiting).
        self._rows: list[tuple] = []
        self._spread: tuple[int, list] | None = None  # (records spread, the columns): read by at() and the window
        self._done: list[
            tuple
        ] = []  # (times, prompt, output, verifications, accepted per position, drafted per position)
        self._verify = np.zeros(requests)
        self._accepted = np.zeros((requests, self.gamma_max))
        self._drafted = np.zeros((requests, self.gamma_max))
        self._positions = np.arange(self.gamma_max)[None, None, :]

    def rounds(
        self,
        ends: np.ndarray,
        run: np.ndarray,
        accepted: np.ndarray,
        gamma: int,
        generated: np.ndarray,
        running: int,
        waiting: int,
        prompt: object = 0,
        cut: int | None = None,
    ) -> None:
        """``accepted``: drafted tokens each running sequence had accepted in each of the rounds ending at ``ends``;
        ``cut``: the drafts the last of ``run`` had in each round where the token budget cut its round (None: gamma),
        counted as the engine counts the draft tokens it scheduled (vLLM 0.33.0's scheduler trims the request's
        spec_token_ids to what it scheduled, v1/core/sched/scheduler.py L1010-1021; a request left no draft token is
        no draft)."""
        k = len(ends)
        per_position = None
        drafts, tokens = (float(run.size), float(run.size * gamma)) if gamma else (0.0, 0.0)
        if gamma:
            over = accepted[:, :, None] > self._positions  # (sequence, round, position): token k accepted
            per_position = over.sum(axis=0)
            self._verify[run] += k
            self._accepted[run] += over.sum(axis=1)
            self._drafted[run, :gamma] += k
            if cut is not None and cut < gamma:
                self._drafted[run[-1], cut:gamma] -= k
                drafts, tokens = drafts - (cut == 0), tokens - (gamma - cut)
                if cut == 0:
                    self._verify[run[-1]] -= k
        self._rows.append(
            (
                np.asarray(ends, dtype=float),
                drafts,
                tokens,
                accepted.sum(axis=0),
                per_position,
                np.asarray(generated, dtype=float),
                prompt,
                running,
                waiting,
            )
        )

    def _columns(self) -> list[np.ndarray]:
        """The records spread over their rounds: ends, drafts, draft tokens, accepted, accepted per position, generated,
        prompt tokens, running, waiting; one row per round (per position: a column per position)."""
        rows = self._rows
        if not rows:
            return [np.zeros(0)] * 4 + [np.zeros((0, self.gamma_max))] + [np.zeros(0)] * 4
        if self._spread is not None and self._spread[0] == len(rows):  # nothing told since: the same columns
            return self._spread[1]
        ends = np.concatenate([r[0] for r in rows])
        k = np.array([r[0].size for r in rows])
        drafts = np.repeat(np.array([r[1] for r in rows]), k)
        draft_tokens = np.repeat(np.array([r[2] for r in rows]), k)
        accepted = np.concatenate([r[3] for r in rows]).astype(float)
        per_position = np.concatenate(
            [r[4] if r[4] is not None else np.zeros((r[0].size, self.gamma_max)) for r in rows]
        )
        generated = np.concatenate([np.broadcast_to(r[5], r[0].shape) for r in rows])
        prompts = np.zeros(ends.size)
        prompts[np.cumsum(k) - 1] = [r[6] for r in rows]  # a record's prompt tokens are its last round's
        running = np.repeat(np.array([r[7] for r in rows]), k)
        waiting = np.repeat(np.array([r[8] for r in rows]), k)
        columns = [ends, drafts, draft_tokens, accepted, per_position, generated, prompts, running, waiting]
        self._spread = (len(rows), columns)
        return columns

    def iteration(
        self,
        end: float,
        run: np.ndarray,
        accepted: np.ndarray,
        gamma: int,
        generated: float,
        prompt: float,
        first_tokens: int,
        running: int,
        waiting: int,
        cut: int | None = None,
    ) -> None:
        """One iteration with prompt chunks: the running sequences' round (``cut``: as :meth:`rounds` has it),
        ``prompt`` tokens prefilled and the first token of each of ``first_tokens`` prompts it finished."""
        self.rounds(
            np.array([end]),
            run,
            accepted.reshape(run.size, 1),
            gamma if run.size else 0,
            np.array([generated + first_tokens]),
            running,
            waiting,
            prompt,
            cut,
        )

    def finished(self, ids: np.ndarray, at: np.ndarray, prompt: np.ndarray, output: np.ndarray) -> None:
        self._done.append(
            (
                np.asarray(at, dtype=float).copy(),
                prompt.astype(float),
                output.astype(float),
                self._verify[ids].copy(),
                self._accepted[ids].copy(),
                self._drafted[ids].copy(),
            )
        )

    def at(self, times: object) -> dict:
        """Every count cumulated to each of ``times`` (seconds of the simulation), and the running and waiting requests
        after the last iteration that ended by then: arrays over ``times`` (a second axis over positions)."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        keys = ("drafts", "draft_tokens", "accepted", "accepted_per_position", "generation_tokens", "prompt_tokens")
        cols = self._columns()
        order = np.argsort(cols[0], kind="stable")
        ends = cols[0][order]
        upto = np.searchsorted(ends, t, side="right")  # iterations ended by each time
        out = {key: _cumulated(col, order, upto) for key, col in zip(keys, cols[1:7])}
        for key, col in (("running", cols[7]), ("waiting", cols[8])):
            out[key] = np.r_[0.0, np.asarray(col, dtype=float)[order]][upto]  # after the last that ended; 0 before any
        if self._done:
            done = [np.concatenate([d[i] for d in self._done]) for i in range(6)]
        else:
            done = [np.zeros(0)] * 4 + [np.zeros((0, self.gamma_max))] * 2
        order = np.argsort(done[0], kind="stable")
        upto = np.searchsorted(done[0][order], t, side="right")
        out["finished"] = upto.astype(float)
        for key, col in zip(
            (
                "finished_prompt_tokens",
                "finished_output_tokens",
                "finished_verifications",
                "finished_accepted_per_position",
                "finished_drafted_per_position",
            ),
            done[1:],
        ):
            out[key] = _cumulated(col, order, upto)
        return out

    def finished_output_buckets(self, times: object, edges: object) -> np.ndarray:
        """The requests finished by each of ``times`` whose output tokens are at most each of ``edges`` (a histogram's
        cumulative buckets, as an engine's histogram of each finished request's generated tokens counts them): an
        array over (time, edge)."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        edges = np.asarray(edges, dtype=float)
        if not self._done:
            return np.zeros((t.size, edges.size))
        at = np.concatenate([d[0] for d in self._done])
        output = np.concatenate([d[2] for d in self._done])
        order = np.argsort(at, kind="stable")
        upto = np.searchsorted(at[order], t, side="right")
        return _cumulated(output[:, None] <= edges[None, :], order, upto)

    def accept_length_window(self, times: object, iterations: int) -> np.ndarray:
        """1 + accepted / drafts over the last ``iterations`` speculating iterations before each time (NaN before any):
        what an engine that logs the mean acceptance length of its last logging window shows then."""
        t = np.atleast_1d(np.asarray(times, dtype=float))
        if not self._rows:
            return np.full(t.shape, np.nan)
        ends, drafts, _, accepted = self._columns()[:4]
        keep = drafts > 0
        ends, drafts, accepted = ends[keep], drafts[keep], accepted[keep]
        cd, ca = np.r_[0.0, np.cumsum(drafts)], np.r_[0.0, np.cumsum(accepted)]
        upto = np.searchsorted(ends, t, side="right")
        start = np.maximum(upto - int(iterations), 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(upto > 0, 1.0 + (ca[upto] - ca[start]) / (cd[upto] - cd[start]), np.nan)


def _cumulated(col: np.ndarray, order: np.ndarray, upto: np.ndarray) -> np.ndarray:
    """The sums of ``col``'s rows, taken in ``order``, over the first ``upto`` of them (0 where ``upto`` is 0, and where
    nothing was counted yet)."""
    c = np.cumsum(np.asarray(col, dtype=float)[order], axis=0)
    return np.concatenate([np.zeros((1,) + c.shape[1:]), c])[upto]
