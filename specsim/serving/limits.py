"""The engine's scheduling limits: the sequences it holds, the tokens an iteration takes, and how its token budget
schedules the decoding sequences and the prompt chunks beside them.

A continuous-batching engine's iteration carries at most ``max_num_seqs`` sequences and ``max_batched_tokens`` tokens
(vLLM's max_num_batched_tokens, TensorRT-LLM's max_num_tokens; SGLang's chunked_prefill_size counts the prompts'
tokens alone).  The decoding sequences take their 1 + gamma tokens each first, and a speculating vLLM's drafting slots
beside them; the prompts get what is left (:meth:`EngineLimits.prefill_budget`), and where the decoding sequences'
rounds overflow the budget the first of them get whole rounds and the rest wait
(:meth:`EngineLimits.decoding_scheduled`).  The steady state (:mod:`specsim.serving.steady`), the simulator and the
calibration's model take these rules from here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from specsim.core.defaults import DEFAULT_MAX_BATCHED_TOKENS, DEFAULT_MAX_NUM_SEQS
from specsim.engines.engine import KvPolicy

__all__ = ["EngineLimits", "check_limits", "check_prefix_hit", "engine_limits", "limited_said", "queued_said"]


@dataclass(frozen=True)
class EngineLimits:
    """The engine's scheduling limits: sequences in flight, tokens per iteration, KV bytes it can hold."""

    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    #: Bytes of KV cache (per GPU) the running requests may hold (:func:`specsim.serving.capacity.capacity`).
    kv_capacity_bytes: float = float("inf")
    #: False: prompts cost no time (the per-batch model's setting, for checks).
    include_prefill: bool = True
    #: A speculating engine's max_num_seqs where it differs (SGLang's 48 when --max-running-requests is not given);
    #: None: ``max_num_seqs`` for both.
    spec_max_num_seqs: int | None = None
    #: Whether prompt chunks run in prefill batches of their own, the decoding sequences waiting while one runs, with a
    #: budget that is the prompts' alone (SGLang's chunked_prefill_size without --enable-mixed-chunk), or ride in the
    #: decoding iterations, whose tokens count against the budget (vLLM's max_num_batched_tokens, TensorRT-LLM's
    #: max_num_tokens).
    prefill_apart: bool = False
    #: The tokens of the budget a speculating engine counts for drafting beside each request's 1 + gamma: (per request
    #: scheduled, per drafted token of it, True where they come off the whole budget for max_num_seqs requests up front),
    #: the engine's rule for the deployment's drafter (:meth:`for_deployment`; vLLM's draft_slots).
    draft_slots: tuple = (0, 0, False)
    #: Where the decoding sequences' rounds overflow the budget, whether the one the budget reaches with fewer tokens
    #: left than a round gets them, its drafts cut (vLLM), or waits whole with those after it (TensorRT-LLM): the
    #: engine's rule (:meth:`for_deployment`; :attr:`specsim.engines.engine.Engine.cuts_overflowing_round`).
    cuts_overflowing_round: bool = True
    #: How the engine holds the requests' KV cache: reserved whole when admitted, or in blocks as tokens arrive with
    #: preemption where they run out (:meth:`for_deployment` takes the engine's, :meth:`Engine.kv_policy`).
    kv_policy: KvPolicy = KvPolicy()
    #: The share of each new request's prompt tokens the engine's prefix cache serves, in [0, 1] (0: none, every prompt
    #: token computed; vLLM caches prefixes by default, enable_prefix_caching, vllm/config/cache.py 0.30.0 L130, but what
    #: a workload hits is the workload's): :meth:`prompt_split`.
    prefix_hit: float = 0.0

    def __post_init__(self) -> None:
        for key, most in (("max_num_seqs", 65536), ("max_batched_tokens", 4_194_304), ("spec_max_num_seqs", 65536)):
            value = getattr(self, key)
            if key == "spec_max_num_seqs" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise ValueError(f"{key} must be a whole number in [1, {most}], got {value!r}")
        if not self.kv_capacity_bytes > 0:
            raise ValueError(f"KV capacity must be > 0 bytes, got {self.kv_capacity_bytes!r}")
        check_prefix_hit(self.prefix_hit)

    def seqs(self, speculating: object) -> np.ndarray:
        """max_num_seqs of a speculating (True) or plain engine, elementwise."""
        spec = self.max_num_seqs if self.spec_max_num_seqs is None else self.spec_max_num_seqs
        return np.where(np.asarray(speculating, dtype=bool), float(spec), float(self.max_num_seqs))

    def arm(self, speculating: bool) -> "EngineLimits":
        """These limits as the plain or the speculating engine runs them: one max_num_seqs."""
        if not speculating or self.spec_max_num_seqs is None:
            return self
        return replace(self, max_num_seqs=self.spec_max_num_seqs, spec_max_num_seqs=None)

    @property
    def label(self) -> str:
        """The limits in words, as every output names them: "max_num_seqs 256, max_batched_tokens 2048"."""
        spec = "" if self.spec_max_num_seqs is None else f" ({self.spec_max_num_seqs} speculating)"
        budget = " (prompt tokens only, prefill batches apart)" if self.prefill_apart else ""
        hit = f", prefix-cache hit {self.prefix_hit:g} of prompt tokens" if self.prefix_hit else ""
        return f"max_num_seqs {self.max_num_seqs}{spec}, max_batched_tokens {self.max_batched_tokens}{budget}{hit}"

    def prompt_split(self, prompt_tokens: object) -> tuple[np.ndarray, np.ndarray]:
        """(tokens prefilled, tokens served from the prefix cache) of a new request's prompt of ``prompt_tokens``: the
        cached ones floor(h P) for the hit share h (:attr:`prefix_hit`), at most P - 1, since vLLM recomputes at least a
        full prompt's last token to sample from it (max_cache_hit_length = request.num_tokens - 1,
        vllm/v1/core/kv_cache_manager.py 0.30.0 L289-295).  The prefilled tokens attend over the cached ones
        (:meth:`specsim.speculation.deployment.Deployment.prefill_s`); the request's KV holds all P (its blocks counted
        once per request: a conversation's requests sharing blocks is not modelled).  A preempted request's resume
        recomputes its tokens whole (what the prefix cache still holds of them then is not modelled).  The one home of
        the split: the steady state, the simulator and the calibration's model take it from here.

        >>> [x.tolist() for x in EngineLimits(prefix_hit=0.8).prompt_split([1000, 1, 0])]
        [[200.0, 1.0, 0.0], [800.0, 0.0, 0.0]]
        """
        p = np.asarray(prompt_tokens, dtype=float)
        cached = np.minimum(np.floor(self.prefix_hit * p), np.maximum(p - 1.0, 0.0))
        return p - cached, cached

    @property
    def most_seqs(self) -> int:
        """The most sequences either arm holds."""
        return max(self.max_num_seqs, self.spec_max_num_seqs or 0)

    def prefill_budget(self, batch: object, gamma: object) -> np.ndarray:
        """Prompt tokens an iteration takes beside ``batch`` decoding sequences speculating ``gamma`` tokens each (0:
        plain): the budget less their ``gamma + 1`` tokens each and, speculating, the engine's drafting slots
        (:attr:`draft_slots`: each decoding sequence's and the prompt chunk's beside them, or max_num_seqs' taken up
        front; a second prompt's chunk in the same iteration would take its own, not counted: a few tokens of
        thousands), or the whole budget where prefill runs apart.
        The one home of chunked prefill's budget (this module, the simulator and the calibration's model).

        >>> limits = EngineLimits(256, 8192, draft_slots=(1, 0, False))  # vLLM 0.33 with a draft model
        >>> float(limits.prefill_budget(40, 3)), float(limits.prefill_budget(40, 0))
        (7991.0, 8152.0)
        """
        b, g = np.asarray(batch, dtype=float), np.asarray(gamma, dtype=float)
        used = b * (g + 1.0)
        if self.prefill_apart:
            return np.full(np.shape(used), float(self.max_batched_tokens))
        slots, up_front = self._slots(g)
        return float(self.max_batched_tokens) - used - slots * (float(self.max_num_seqs) if up_front else b + 1.0)

    def _slots(self, g: np.ndarray) -> tuple:
        """(the drafting slots a scheduled request takes at gamma ``g``, whether they come off the budget up front for
        max_num_seqs requests): :attr:`draft_slots` read at ``g``."""
        per_request, per_draft, up_front = self.draft_slots
        return np.where(g > 0, per_request + per_draft * g, 0.0), up_front

    def decoding_scheduled(self, batch: object, gamma: object) -> tuple[np.ndarray, np.ndarray]:
        """(whole, partial): of ``batch`` decoding sequences speculating ``gamma`` tokens each (0: plain), how many an
        iteration gives a whole round, and the tokens it gives the one after them (0: none).  The budget takes the
        running requests in order, each its 1 + gamma tokens and drafting slots, while tokens are left; the one it
        reaches with fewer left than a round gets what is left, its drafts cut to fit, and those after it wait for the
        next iteration, holding their KV.  vLLM 0.33.0's v1/core/sched/scheduler.py: the running loop stops at L795-797
        (token_budget > 0, input_budget > draft_slots), caps num_new_tokens at the budget left at L846-848 and trims the
        request's spec_token_ids to what was scheduled at L1010-1021; the waiting requests get nothing while the running
        took it all (L1062, L1295).  An engine that does not cut a round (:attr:`cuts_overflowing_round` False:
        TensorRT-LLM's micro-batch scheduler stops at the first decoding request whose 1 + drafts do not fit) gives the
        one it reaches nothing.  Nothing is cut where prefill runs apart (the budget is the prompts' alone).  The one
        home of that rule: the simulator plays it, the offline batch's population takes it (:func:`engine_population`).

        >>> limits = EngineLimits(256, 2048, draft_slots=(1, 0, False))  # vLLM 0.33 with a draft model
        >>> [tuple(int(x) for x in limits.decoding_scheduled(b, 8)) for b in (100, 256)]
        [(100, 0), (204, 7)]
        >>> whole, partial = EngineLimits(256, 2048, cuts_overflowing_round=False).decoding_scheduled(256, 8)
        >>> int(whole), int(partial)  # TensorRT-LLM: 227 whole rounds of 9, the 228th waits for its 9
        (227, 0)
        """
        b, g = np.asarray(batch, dtype=float), np.asarray(gamma, dtype=float)
        if self.prefill_apart:
            b = np.broadcast_to(b, np.broadcast_shapes(b.shape, g.shape))
            return b.copy(), np.zeros(b.shape)
        slots, up_front = self._slots(g)
        # up front (0.17.0-0.27.0): max_num_scheduled_tokens is the budget less max_num_seqs x the slots, and no request
        # is charged them again; from 0.28.0 each scheduled request is charged its slots (input_budget)
        tokens = float(self.max_batched_tokens) - (slots * float(self.max_num_seqs) if up_front else 0.0)
        per = g + 1.0 + (0.0 if up_front else slots)
        whole = np.minimum(b, np.floor(np.maximum(tokens, 0.0) / per))
        left = tokens - whole * per - (0.0 if up_front else slots)
        partial = np.where((b > whole) & self.cuts_overflowing_round, np.clip(left, 0.0, g), 0.0)
        # at least one token for the first: a budget vLLM refuses to start with (config/vllm.py
        # _set_max_num_scheduled_tokens, 0.33.0 L2350-2375), or below one TensorRT-LLM round, still moves
        return whole, np.where((whole == 0) & (b > 0), np.maximum(partial, 1.0), partial)

    def for_deployment(self, dep) -> "EngineLimits":
        """These limits with ``dep``'s engine's drafting slots for its drafter (:meth:`Engine.draft_slots`; none
        without a drafter or an engine specsim has read), its rule for a round that overflows the budget
        (:attr:`Engine.cuts_overflowing_round`; vLLM's without an engine) and its KV policy (:meth:`Engine.kv_policy`;
        these limits' own without an engine specsim has read): what the steady state, the simulator and the
        calibration's model take, each from here."""
        from specsim.engines import REGISTRY

        engine = None if dep.engine is None else REGISTRY.get(dep.engine.name)
        slots = (0, 0, False) if engine is None or dep.drafter is None else engine.draft_slots(dep.engine, dep.drafter)
        cuts = True if engine is None else engine.cuts_overflowing_round
        policy = self.kv_policy if engine is None else engine.kv_policy(dep.engine, dep.drafter)
        if slots == self.draft_slots and cuts == self.cuts_overflowing_round and policy == self.kv_policy:
            return self
        return replace(self, draft_slots=tuple(slots), cuts_overflowing_round=cuts, kv_policy=policy)


def check_prefix_hit(share: object, name: str = "the prefix-cache hit share") -> float:
    """``share`` as a float in [0, 1] (the share of prompt tokens a prefix cache serves), else ValueError naming
    ``name``, the value and what is allowed."""
    try:
        value = float(share)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # (NaN fails too)
        raise ValueError(
            f"{name} must be a number in [0, 1] (the share of prompt tokens served from the prefix cache), got {share!r}"
        )
    return value


def engine_limits(
    preset, hardware, offline: bool = False, max_num_seqs: int | None = None, max_batched_tokens: int | None = None
) -> tuple[EngineLimits, str]:
    """(the limits, where those not given come from: "" if both are): ``max_num_seqs`` and ``max_batched_tokens`` as
    given, each one not given at ``preset``'s engine's own on ``hardware`` (:func:`specsim.engines.default_limits`;
    ``offline``: a batch run in-process, not a server)."""
    from specsim.engines import default_limits

    own = default_limits(preset, hardware, offline)
    limits = EngineLimits(
        max_num_seqs or own.max_num_seqs,
        max_batched_tokens or own.max_batched_tokens,
        spec_max_num_seqs=None if max_num_seqs else own.spec_max_num_seqs,
        prefill_apart=own.prefill_apart,
        prefix_hit=own.prefix_hit,
    )
    if max_num_seqs is not None and max_batched_tokens is not None:
        return limits, ""
    # One given: said first, as the engine's own text names both of its limits (SGLang's "max_running_requests 48
    # speculating" read as if it held beside a max_num_seqs given).
    if max_num_seqs is not None:
        return limits, f"max_num_seqs as given, the budget at {own.where}"
    if max_batched_tokens is not None:
        return limits, f"max_batched_tokens as given, max_num_seqs at {own.where}"
    return limits, own.where


def check_limits(
    preset, limits: EngineLimits, names: tuple[str, str] = ("max_batched_tokens", "max_num_seqs")
) -> EngineLimits:
    """``limits`` where ``preset``'s engine would start with them, else ValueError with the engine's own rule and
    source (:func:`specsim.engines.limits_refused`: vLLM refuses a token budget below its max_num_seqs) and what to
    give, ``names`` naming the token budget and max_num_seqs as the caller took them (the CLI: its flags)."""
    from specsim.engines import limits_refused

    refused = limits_refused(preset, limits.max_num_seqs, limits.max_batched_tokens)
    if refused:
        raise ValueError(f"{refused}: give a {names[0]} of at least the max_num_seqs, or a smaller {names[1]}")
    return limits


def limited_said(limited_by: str) -> str:
    """What holds the requests an engine runs below the load, as every answer names it ("" where nothing does).

    >>> limited_said("max_num_seqs")
    'limited by max_num_seqs'
    """
    return f"limited by {limited_by}" if limited_by else ""


def queued_said(users: int, running: int, limited_by: str) -> str:
    """A closed loop's users that wait in the engine's queue beside the requests it runs, in words.

    >>> queued_said(64, 16, "max_num_seqs")
    '48 of the 64 users wait in the queue beside the 16 the engine runs (limited by max_num_seqs)'
    """
    return (
        f"{users - running:,} of the {users:,} users wait in the queue beside the {running:,} the engine runs "
        f"({limited_said(limited_by)})"
    )
