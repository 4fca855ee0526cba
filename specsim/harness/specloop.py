"""An end-to-end speculative decoding loop with controlled acceptance, timed against plain decoding.

Random weights carry no meaning, so acceptance is controlled: each drafted
token is accepted with probability alpha, independently, which is exactly the
assumption behind E(alpha, gamma).  One speculative step for a batch:

1. draft gamma tokens with the draft model (the first draft pass feeds the last
   two emitted tokens, so the draft's cache catches up after a step that
   accepted everything; later passes feed one token);
2. verify all of them with one target pass of gamma + 1 tokens per sequence;
3. accept a per-sequence prefix (controlled by alpha) plus one target token;
4. roll both KV caches back to the accepted length (the length pointer moves by
   accepted + 1; rejected entries are masked and later overwritten).

Plain decoding runs the target one token per pass on the same batch from the
same context.  Neither loop synchronises with the host inside it, as engines'
device-side loops do not: acceptance is drawn on the device, every pass is
told how many keys to read (a bound the host knows: the context plus gamma + 1
per round so far, the rejected slots masked), and the speculative loop runs a
fixed number of rounds, ceil(tokens / E(alpha, gamma)), counting the tokens it
emitted once at the end.  The measured speedup is wall-clock, end to end,
including each pass's Python launch work (eager PyTorch: no CUDA graph around a
round); the three pass times are also timed separately so that the formula
S = E t_T / (gamma t_D + t_V) can be checked on measured step times as well as
on the roofline's.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

from specsim.describe.models import ModelShape
from specsim.harness import defaults
from specsim.harness.model import DecoderTimingModel
from specsim.harness.timing import _sync, time_pass
from specsim.speculation.acceptance import tokens_per_round

__all__ = ["check_loop_memory", "run_speculative_loop"]


class _Loop:
    """Plain and speculative generation of ``tokens`` tokens per sequence with a target and a draft model."""

    def __init__(self, target, draft, gamma: int, alpha: float, batch: int, context: int, tokens: int, dev, gen):
        self.target, self.draft, self.gamma, self.alpha = target, draft, gamma, alpha
        self.batch, self.context, self.tokens, self.dev, self.gen = batch, context, tokens, dev, gen
        self.rows = torch.arange(batch, device=dev)

    def plain(self) -> float:
        dev, batch, context = self.dev, self.batch, self.context
        lengths = torch.full((batch,), context, dtype=torch.long, device=dev)
        last = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        _sync(dev)
        start = time.perf_counter()
        for i in range(self.tokens):
            logits = self.target(last, lengths, span=context + i + 1, uniform=True)
            last = logits[:, -1].argmax(-1, keepdim=True)
            lengths += 1
        _sync(dev)
        return time.perf_counter() - start

    @property
    def rounds(self) -> int:
        """Rounds the speculative loop runs: enough for ``tokens`` per sequence at the expected rate."""
        return max(1, math.ceil(self.tokens / float(tokens_per_round(self.alpha, self.gamma))))

    def speculative(self) -> tuple[float, float, float]:
        """(seconds, mean tokens generated per sequence, mean tokens per verification pass)."""
        dev, batch, gamma, rows = self.dev, self.batch, self.gamma, self.rows
        lengths = torch.full((batch,), self.context, dtype=torch.long, device=dev)  # tokens in both caches
        history = torch.zeros((batch, 2), dtype=torch.long, device=dev)  # last two emitted tokens
        generated = torch.zeros(batch, dtype=torch.long, device=dev)
        _sync(dev)
        start = time.perf_counter()
        for r in range(self.rounds):
            span = self.context + r * (gamma + 1) + gamma + 2  # no sequence reads past this in round r
            drafted = []
            feed, at = history, lengths - 1
            for _ in range(gamma):
                logits = self.draft(feed, at, span=span)
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                drafted.append(nxt)
                feed, at = nxt, at + feed.shape[1]
            proposal = torch.cat(drafted, dim=1)  # (b, gamma)
            target_logits = self.target(torch.cat([history[:, 1:], proposal], dim=1), lengths, span=span)
            correction = target_logits.argmax(-1)  # the target's token at each position
            accept = torch.rand((batch, gamma), generator=self.gen, device=dev) < self.alpha
            accepted = torch.cumprod(accept.long(), dim=1).sum(dim=1)
            emitted = torch.cat([proposal, correction[:, -1:]], dim=1)
            emitted[rows, accepted] = correction[rows, accepted]
            last_two = torch.stack([emitted[rows, (accepted - 1).clamp(min=0)], emitted[rows, accepted]], dim=1)
            history = torch.where((accepted > 0)[:, None], last_two, torch.stack([history[:, 1], emitted[:, 0]], dim=1))
            lengths = lengths + accepted + 1  # roll back: rejected positions are beyond the new length
            generated += accepted + 1
        _sync(dev)
        elapsed = time.perf_counter() - start
        mean_generated = float(generated.float().mean())  # the loop's one read of the device's counts
        return elapsed, mean_generated, mean_generated / self.rounds

    def pass_times(self, repeats: int) -> tuple[float, float, float]:
        """The three passes on their own at the loop's mean context: t_T, t_D and t_V (median seconds)."""
        dev, batch = self.dev, self.batch
        span = self.context + self.tokens // 2
        mid = torch.full((batch,), span, dtype=torch.long, device=dev)
        one = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        many = torch.zeros((batch, self.gamma + 1), dtype=torch.long, device=dev)
        return (
            statistics.median(time_pass(lambda: self.target(one, mid, span + 1, True), dev, repeats, 2)),
            statistics.median(time_pass(lambda: self.draft(one, mid, span + 1, True), dev, repeats, 2)),
            statistics.median(time_pass(lambda: self.target(many, mid, span + self.gamma + 1, True), dev, repeats, 2)),
        )


def check_loop_memory(
    target_shape: ModelShape,
    draft_shape: ModelShape,
    gamma: int,
    batch: int,
    context: int,
    tokens: int,
    dtype: str = defaults.LOOP_DTYPE,
    device: str = defaults.LOOP_DEVICE,
):
    """``(device, cache capacity per sequence)`` of a loop, after checking that both models' weights, KV caches and
    activations fit in free memory; ValueError (one line) before anything is allocated otherwise."""
    from specsim.describe.models import BYTES_PER_ELEMENT
    from specsim.harness.timing import check_device_and_memory, check_free_memory, pass_bytes

    dev = check_device_and_memory([target_shape, draft_shape], device, dtype)
    # Every round may emit gamma + 1 tokens per sequence; the loop runs at most `tokens` rounds.
    capacity = context + (gamma + 1) * (tokens + 1) + 2
    weights = sum(s.params * BYTES_PER_ELEMENT[dtype] for s in (target_shape, draft_shape))
    check_free_memory(
        weights
        + pass_bytes(target_shape, dtype, batch, capacity, gamma + 1)
        + pass_bytes(draft_shape, dtype, batch, capacity, 2),
        dev,
        f"the loop at batch {batch} (weights, and KV caches of {capacity:,} tokens per sequence: context "
        f"{context:,} plus {tokens:,} tokens at up to gamma + 1 = {gamma + 1} a round)",
    )
    return dev, capacity


def run_speculative_loop(
    target_shape: ModelShape,
    draft_shape: ModelShape,
    alpha: float,
    gamma: int,
    batch: int,
    context: int,
    tokens: int = defaults.LOOP_TOKENS,
    dtype: str = defaults.LOOP_DTYPE,
    device: str = defaults.LOOP_DEVICE,
    seed: int = 0,
    repeats: int = defaults.LOOP_REPEATS,
) -> dict:
    """Measured tokens per second with and without speculation, and the pass times.

    ``tokens`` new tokens are generated per sequence in each loop.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1 for a speculative loop, got {gamma!r}")
    dev, capacity = check_loop_memory(target_shape, draft_shape, gamma, batch, context, tokens, dtype, device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    target = DecoderTimingModel(target_shape, dtype=dtype, device=device, seed=seed)
    draft = DecoderTimingModel(draft_shape, dtype=dtype, device=device, seed=seed + 1)
    target.allocate(batch, capacity)
    draft.allocate(batch, capacity)
    loop = _Loop(target, draft, gamma, alpha, batch, context, tokens, dev, gen)
    loop.plain()  # warm up both loops (allocator, kernels)
    loop.speculative()
    plain_per_token = statistics.median(loop.plain() / tokens for _ in range(repeats))
    spec_runs = [loop.speculative() for _ in range(repeats)]
    spec_per_token = statistics.median(elapsed / generated for elapsed, generated, _ in spec_runs)
    tokens_per_pass = statistics.mean(run[2] for run in spec_runs)
    t_target, t_draft, t_verify = loop.pass_times(repeats * 3)
    return {
        "target": target_shape.name,
        "draft": draft_shape.name,
        "alpha": alpha,
        "gamma": gamma,
        "batch": batch,
        "context": context,
        "tokens": tokens,
        "dtype": dtype,
        "device": dev.type,
        "plain_s_per_token": plain_per_token,
        "spec_s_per_token": spec_per_token,
        "measured_speedup": plain_per_token / spec_per_token,
        "measured_tokens_per_pass": tokens_per_pass,
        "t_target_s": t_target,
        "t_draft_s": t_draft,
        "t_verify_s": t_verify,
    }
