"""The KV cache a simulated engine's requests hold, as the engine's policy holds it
(:class:`specsim.engines.engine.KvPolicy`, :meth:`specsim.engines.engine.Engine.kv_policy`).

Two ways of holding it, each an engine's default:

* **Reserved whole.**  A request is admitted where the bytes of its whole length (prompt and output) fit beside what
  the admitted requests reserved, and keeps them to its end (TensorRT-LLM's GUARANTEED_NO_EVICT; specsim's rule where
  no engine's is known).  Nothing runs out once admitted.
* **Blocks as tokens arrive.**  A request is admitted where its prompt (and, set aside, up to ``ahead_tokens`` of the
  tokens still to come) fits beside what the others hold and set aside; each iteration a running request holds whole
  blocks for its context and, speculating, its round's drafts and the engine's lookahead slots
  (:meth:`~specsim.engines.engine.KvPolicy.slots`).  Where they do not fit the engine preempts the request it admitted
  last (a prompt still prefilling before one decoding), frees its blocks and puts it at the front of the queue; admitted
  again, it recomputes its prompt and the tokens it had decoded, as one prefill, and goes on decoding (vLLM v1 from
  0.33.0's source; SGLang's retraction, which takes the request that has decoded least).

:class:`KvBlocks` is the ledger of the request-level simulator (:mod:`specsim.serving.simulator`): it admits, frees,
makes room before an iteration (preempting), and says how many rounds of a run of decoding iterations fit before the
blocks run out.  The steady state sizes the engine's population on the same policy
(:func:`specsim.serving.steady.engine_population`, :func:`held_tokens`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["KvBlocks", "admission_tokens", "held_tokens"]


def held_tokens(policy, input_tokens: object, output_tokens: object, gamma: object) -> np.ndarray:
    """The tokens a request of ``input_tokens`` in and ``output_tokens`` out holds in the KV cache on average over its
    time in the engine, as ``policy`` holds it, speculating ``gamma`` drafts a round (0: plain): for an engine that
    reserves the whole length, prompt and output; else its prompt, half its output (the mean of a context that grows
    from the prompt to the whole length), what it sets aside of the tokens still to come (up to ``ahead_tokens``), the
    drafts and lookahead slots of its rounds, and half a block (the mean of a whole block's rounding).

    >>> from specsim.engines.engine import KvPolicy
    >>> float(held_tokens(KvPolicy(), 1000, 256, 3)), float(held_tokens(KvPolicy(0.0, 16, (1, 0)), 1000, 256, 3))
    (1256.0, 1141.5)
    """
    P, O = np.asarray(input_tokens, dtype=float), np.asarray(output_tokens, dtype=float)
    if not policy.preempts:
        return P + O + np.zeros(np.shape(gamma))
    A = min(float(policy.ahead_tokens), 1e18)
    # the mean over the output decoded t of t + min(O - t, A): O where A covers it all, else what the text says
    beyond = np.maximum(O - A, 0.0)
    ahead = np.where(O > A, (beyond**2 / 2.0 + A * beyond + O * A) / np.maximum(O, 1.0), O)
    slots = np.vectorize(policy.slots, otypes=[float])(np.asarray(gamma))
    return P + ahead + slots + (policy.block_tokens - 1) / 2.0


def admission_tokens(policy, input_tokens: object, output_tokens: object) -> np.ndarray:
    """The tokens a fresh request of ``input_tokens`` in and ``output_tokens`` out must find room for to be admitted, as
    ``policy`` counts them (:meth:`KvBlocks.admits`'s rule for a request with nothing decoded): its whole length where
    the engine reserves it; else its prompt's whole blocks and what it sets aside of its output (up to
    ``ahead_tokens``: none for vLLM, whose waiting loop asks only for the prompt's blocks, 0.33.0
    ``v1/core/sched/scheduler.py`` L1435-1451; 4,096 for SGLang).

    >>> from specsim.engines.engine import KvPolicy
    >>> [float(admission_tokens(p, 1000, 8000)) for p in (KvPolicy(), KvPolicy(0.0, 16), KvPolicy(4096.0, 1))]
    [9000.0, 1008.0, 5096.0]
    """
    P, O = np.asarray(input_tokens, dtype=float), np.asarray(output_tokens, dtype=float)
    if not policy.preempts:
        return P + O
    b = float(policy.block_tokens)
    return np.ceil((P + np.minimum(O, min(float(policy.ahead_tokens), 1e18))) / b) * b


class KvBlocks:
    """The KV cache of one simulated engine: ``capacity_bytes`` per GPU, held per ``policy`` by requests whose whole
    lengths take ``reserve`` bytes each; ``bytes_of`` gives a request's bytes at a number of tokens
    (:func:`specsim.serving.capacity.sequence_kv_bytes` for the arm), None where each request reserves ``reserve``
    whole whatever the policy (the simulator's callers that size no other)."""

    def __init__(self, policy, capacity_bytes: float, reserve: np.ndarray, bytes_of=None):
        self.policy, self.capacity, self.reserve = policy, float(capacity_bytes), reserve
        self.bytes_of = bytes_of if policy.preempts else None
        self.held = np.zeros(reserve.size)  # bytes each request holds now (blocks as tokens arrive)
        self.used = 0.0
        # The in-flight requests' whole lengths, and the most a request holds past its whole length at a gamma (its
        # round's slots and a block): where these fit, nothing can run out and the blocks need not be counted (the
        # answer is the same; only the work is saved).  ``stale``: ``held`` and ``used`` not counted since.
        self.reserved, self._slack, self.gamma, self.stale = 0.0, {}, 0, False
        self._one: dict = {}  # blocks -> bytes of one request holding them, read once each
        self._table = np.zeros(0)  # bytes_of(k blocks) at index k, for every k asked so far (bytes_at)
        self.preemptions = 0
        self.recomputed_tokens = 0
        self.preempted_now = False  # the engine preempted since the last admission: it admits none this iteration

    @property
    def on_demand(self) -> bool:
        """Whether requests take blocks as tokens arrive (and may be preempted), not their whole length up front."""
        return self.bytes_of is not None

    def _roomy(self, requests: int, gamma: int, extra: float = 0.0) -> bool:
        """Whether ``requests`` in flight (their whole lengths ``self.reserved``, and ``extra`` more bytes) fit with
        every one's slots at ``gamma`` and a block past its whole length: then none can run out."""
        slack = self._slack.get(gamma)
        if slack is None:
            slack = self._slack[gamma] = float(self.bytes_of(self.policy.slots(gamma) + self.policy.block_tokens))
        return self.reserved + extra + requests * slack <= self.capacity

    def _bytes_one(self, tokens: float) -> float:
        """:meth:`bytes_at` of one request, read once per number of blocks."""
        blocks = math.ceil(tokens / self.policy.block_tokens)  # (a float's ceiling, as int(np.ceil(...)) gives it)
        held = self._one.get(blocks)
        if held is None:
            held = self._one[blocks] = float(self.bytes_of(blocks * self.policy.block_tokens))
        return held

    def bytes_at(self, tokens: object) -> np.ndarray:
        """Bytes a request holds at ``tokens`` tokens: whole blocks.  ``bytes_of`` is asked once per number of blocks
        (a sequence's bytes are elementwise in its tokens): the simulation asks the same few thousand block counts
        again at every iteration, and each call cost more than the arithmetic it did (the table's entries are the
        same ``bytes_of(blocks * block_tokens)``, bit for bit)."""
        b = self.policy.block_tokens
        blocks = np.ceil(np.asarray(tokens, dtype=float) / b)
        most = float(blocks.max()) if blocks.size else 0.0
        if not (blocks.size and math.isfinite(most) and float(blocks.min()) >= 0.0 and most < 1e7):
            return np.asarray(self.bytes_of(blocks * b), dtype=float)
        if most >= self._table.size:
            size = max(int(most) + 1, 2 * self._table.size)
            held = np.asarray(self.bytes_of(np.arange(size, dtype=float) * b), dtype=float)
            self._table = np.broadcast_to(held, (size,)).copy()
        return np.asarray(self._table[blocks.astype(np.int64)])

    def admits(self, i: int, tokens: int, eng) -> bool:
        """Whether request ``i``, waiting with ``tokens`` to prefill (its prompt, or its prompt and output so far where
        it resumes), may be admitted beside what ``eng``'s in-flight requests hold and set aside."""
        if not self.on_demand:
            return self.used + self.reserve[i] <= self.capacity
        if self.preempted_now:
            return False
        if self._roomy(eng.running.size + len(eng.prefilling) + 1, self.gamma, self.reserve[i]):
            return True
        if self.stale:
            self._count(eng, self.gamma)
        ahead = self.policy.ahead_tokens
        own = self._bytes_one(tokens + min(float(eng.remaining[i]), ahead))
        if ahead == 0.0:
            return self.used + own <= self.capacity
        ids = np.concatenate([eng.running, np.array([item[0] for item in eng.prefilling], dtype=np.int64)])
        tokens_held = np.concatenate([eng.ctx[eng.running], eng.prefill_len[ids[eng.running.size :]]])
        promised = self.bytes_at(tokens_held + np.minimum(eng.remaining[ids], ahead)).sum()
        return promised + own <= self.capacity

    def admit(self, i: int, tokens: int) -> None:
        """Request ``i`` admitted: its whole length reserved, or its ``tokens``' blocks held."""
        if not self.on_demand:
            self.used += self.reserve[i]
            return
        self.held[i] = self._bytes_one(tokens)
        self.used += self.held[i]
        self.reserved += self.reserve[i]

    def release(self, ids: np.ndarray) -> None:
        """Requests ``ids`` finished: what they hold is free, one at a time in order, as the engine frees them."""
        for r in (self.held if self.on_demand else self.reserve)[ids].tolist():
            self.used -= r
        if self.on_demand:
            self.held[ids] = 0.0
            self.reserved -= float(self.reserve[ids].sum())

    def make_room(self, eng, gamma: int) -> None:
        """Before an iteration at ``gamma``: each of ``eng``'s decoding requests takes the blocks of its context and its
        round's slots; where they do not all fit, the requests admitted last (prompts prefilling, then the decoding from
        the newest) are preempted until they do, the oldest kept.  A no-op where requests reserve their whole length."""
        if not self.on_demand:
            return
        self.preempted_now, self.gamma = False, gamma
        self.stale = self._roomy(eng.running.size + len(eng.prefilling), gamma)
        if not self.stale:
            self._count(eng, gamma)

    def _count(self, eng, gamma: int) -> None:
        """Count the blocks of ``eng``'s in-flight requests at ``gamma`` (:meth:`make_room`), preempting where they do
        not fit."""
        self.stale = False
        run = eng.running
        prefilling = np.array([item[0] for item in eng.prefilling], dtype=np.int64)
        need = np.concatenate([self.bytes_at(eng.ctx[run] + self.policy.slots(gamma)), self.held[prefilling]])
        keep = max(int(need.cumsum().searchsorted(self.capacity, side="right")), 1)
        if keep < need.size:  # (most iterations all fit: nothing to preempt)
            for j in np.concatenate([run, prefilling])[keep:][::-1].tolist():
                self._preempt(eng, j)
        kept = need[: min(keep, run.size)]  # what the decoding requests kept now hold (their ids are distinct)
        self.held[run[: kept.size]] = kept
        # the same two sums as summing ``held`` at those ids; the prompts' only where some are kept (+ 0.0 is exact)
        used = kept.sum()
        if keep > run.size:
            used = used + self.held[prefilling[: keep - run.size]].sum()
        self.used = float(used)

    def _preempt(self, eng, j: int) -> None:
        """Preempt request ``j``: its blocks freed, back to the front of ``eng``'s queue, to recompute what it held."""
        at = next((k for k, item in enumerate(eng.prefilling) if item[0] == j), None)
        if at is None:
            eng.running = eng.running[eng.running != j]
            eng.prefill_len[j] = done = int(eng.ctx[j])  # prompt and output so far, prefilled again as one prompt
        else:
            done = int(eng.prefill_len[j] - eng.cached[j] - eng.prefilling[at][1])  # what it computed of its prompt
            del eng.prefilling[at]
        self.held[j] = 0.0
        eng.cached[j] = 0  # its resume recomputes what it held whole (what the prefix cache keeps of it: not modelled)
        self.reserved -= self.reserve[j]
        eng.waiting.appendleft(j)
        self.recomputed_tokens += done
        # Admitted here while the budget gave it no token yet, it had nothing to recompute: vLLM admits a request only
        # as it schedules its first chunk (scheduler.py 0.33.0's waiting loop), so there it never left the queue.
        if done:
            self.preemptions += 1
            self.preempted_now = True

    def rounds_that_fit(self, ids: np.ndarray, ctx: np.ndarray, grown, gamma: int, rounds: int) -> int:
        """Of ``rounds`` decoding iterations of requests ``ids`` from contexts ``ctx`` (``grown()``: their tokens grown
        by the start of each round, requests x rounds, asked only where the blocks may run out), how many run before
        their blocks outgrow the cache (the first always: :meth:`make_room` made room for it); all of them where
        requests reserve their whole length."""
        if not self.on_demand or rounds <= 1 or self._roomy(ids.size, gamma):
            return rounds
        grown = grown()
        others = self.used - self.held[ids].sum()
        slots = self.policy.slots(gamma)
        if self.bytes_at(ctx + grown[:, -1] + slots).sum() + others <= self.capacity:  # the last fits: all do
            return rounds
        need = self.bytes_at(ctx[:, None] + grown + slots).sum(axis=0) + others
        over = np.flatnonzero(need > self.capacity)
        return rounds if over.size == 0 else max(int(over[0]), 1)
