"""Memory capacity and throughput: what speculation costs at high concurrency.

Memory
    Every quantity is per GPU: with tensor parallelism over N GPUs each holds
    1/N of the target's weights and KV heads (see ``ModelShape.tp``), and a
    draft at TP 1 sits whole on the first GPU, which therefore binds.  Local
    (sliding-window) layers keep at most their window of KV per sequence.
    A device with ``memory_bytes`` of which a serving engine may use a
    fraction ``memory_utilization`` (vLLM's ``gpu_memory_utilization``,
    default 0.9) holds the weights of every model it serves and, in what is
    left, the KV cache of the running sequences.  Each sequence reserves KV
    for ``context`` tokens (the longest it gets: prompt plus completion), in
    the target and, when speculating, in the draft too:

        max batch without draft = floor((U - W_T) / (kv_T * L))
        max batch with draft    = floor((U - W_T - W_D) / ((kv_T + kv_D) * L))

    with U = memory_utilization * memory_bytes, the share being the engine's own
    where the user gives none (:func:`memory_share`: vLLM's 0.92 (0.9 before 0.20.0), SGLang's
    mem_fraction_static from its reserve, which a speculating server may raise;
    TensorRT-LLM's free_gpu_memory_fraction of what the weights leave; a
    speculating engine's share its own, :attr:`Capacity.speculating_usable_bytes`; vLLM's less what its start-up
    takes, :func:`specsim.engines.vllm.start_up`).  Other engines' activations, CUDA graphs and
    the few lookahead slots of the gamma drafted tokens are not counted (the
    utilisation margin covers them).  A hybrid target's recurrent layers add a
    fixed state per sequence (:mod:`specsim.describe.recurrent`), and a
    speculating sequence the engine's scratch for its drafted tokens: one state
    per draft token where the engine checkpoints per token (vLLM reserves
    1 + num_speculative_tokens state pages per request, SGLang and TensorRT-LLM
    one per draft token plus the bonus position; the preset's ``recurrent``
    says which), sized for ``draft_tokens`` (default
    :data:`DEFAULT_SCRATCH_DRAFT_TOKENS`).  Chunked attention layers (Llama 4)
    reserve up to a whole chunk.  The draft's weights and cache take
    memory that would otherwise hold target KV (the article's "memory
    pressure"), so the largest batch shrinks.

Throughput
    Per sequence, plain decoding emits 1 / t_T tokens per second and
    speculation E / (gamma t_D + t_V); the device emits b times that.  At low
    concurrency speculation buys latency; at high concurrency the smaller
    maximum batch and the dearer verification pass cost device throughput.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from specsim.core.defaults import DEFAULT_CONTEXT_TOKENS, DEFAULT_GAMMA_MAX
from specsim.core.names import given_as
from specsim.core.workloads import mean_context_tokens
from specsim.describe.models import BYTES_PER_ELEMENT
from specsim.speculation.deployment import Deployment
from specsim.speculation.search import optimal_gamma

if TYPE_CHECKING:  # pandas is imported where a table is built, keeping the CLI's hot path light
    import pandas as pd

__all__ = [
    "free_kv_bytes",
    "DEFAULT_MEMORY_UTILIZATION",
    "memory_share",
    "DEFAULT_SCRATCH_DRAFT_TOKENS",
    "kv_error_said",
    "no_room_said",
    "no_room_at",
    "Capacity",
    "capacity",
    "default_scratch_tokens",
    "require_target_fits",
    "reserved_context",
    "sequence_kv_bytes",
    "scratch_bytes",
    "smallest_fitting_tp",
    "fitting_tp_for",
    "throughput_table",
]

#: Fraction of device memory the weights and KV cache take where no engine's own rule applies (engine none): vLLM's
#: gpu_memory_utilization default before 0.20.0 (vLLM's own rule: :func:`specsim.engines.vllm.memory_share`).
DEFAULT_MEMORY_UTILIZATION = 0.9
#: Draft tokens a hybrid target's speculative state scratch is sized for when the caller does not say: 8, above the 5-7
#: tokens vLLM's speculative-decoding examples configure, as an engine reserves scratch for its configured
#: num_speculative_tokens, not the gamma of the moment.  The answers that set a gamma size it for that gamma instead.
DEFAULT_SCRATCH_DRAFT_TOKENS = 8


@dataclass(frozen=True)
class Capacity:
    """Memory budget of a deployment at one context length (bytes and sequences)."""

    memory_bytes: float
    usable_bytes: float
    target_weight_bytes: float
    draft_weight_bytes: float
    target_kv_bytes_per_seq: float
    #: KV bytes of one sequence in the target and the draft together (:func:`sequence_kv_bytes`).
    kv_bytes_per_seq: float
    context_tokens: int
    #: GPUs the deployment spans (the target's tensor-parallel size); every byte above is per GPU.
    gpus: int = 1
    #: Of the bytes per sequence: a hybrid target's recurrent state, and the speculative scratch of a speculating
    #: sequence (its draft tokens as sized: :data:`DEFAULT_SCRATCH_DRAFT_TOKENS` unless given); 0 for attention models.
    recurrent_state_bytes_per_seq: float = 0.0
    scratch_bytes_per_seq: float = 0.0
    scratch_draft_tokens: int = 0
    #: Where the scratch's draft tokens come from (the user's --gamma, the command's optimal gamma, a cited default).
    scratch_basis: str = ""
    #: The usable bytes of the speculating engine, per GPU: ``usable_bytes`` where its share is the plain one's; less
    #: where it sets more aside (SGLang before 0.5.14); more where its cache is a share of what the weights leave
    #: (TensorRT-LLM: the draft's weights take only that share of their bytes from the cache).  None: ``usable_bytes``.
    speculating_usable_bytes: float | None = None
    #: Where the usable share comes from (:func:`memory_share`), and the share the user gave (None: the engine's own).
    memory_basis: str = ""
    memory_utilization: float | None = None
    #: The engine's tokens per iteration the share was computed with (SGLang's reserve; None: the engine's default).
    max_batched_tokens: int | None = None
    #: The engine's sequences at most the share was computed with (vLLM's start-up; None: the engine's default).
    max_num_seqs: int | None = None
    #: Bytes per GPU the engine's start-up took out of the setting before the cache (vLLM's; None: none counted apart).
    start_up_bytes: float | None = None

    def __repr__(self) -> str:  # a notebook's echo: the budget and the batches it holds (to_dict: every byte count)
        gb = 1e9
        gpus = f", {self.gpus} GPUs" if self.gpus > 1 else ""
        return (
            f"Capacity({self.context_tokens:,} tokens a sequence: {self.usable_bytes / gb:.1f} of "
            f"{self.memory_bytes / gb:.1f} GB usable per GPU{gpus}, weights {self.target_weight_bytes / gb:.1f} + "
            f"{self.draft_weight_bytes / gb:.1f} GB; max batch {self.max_batch_without_draft} without the draft, "
            f"{self.max_batch_with_draft} with it)"
        )

    @property
    def target_fits(self) -> bool:
        """Whether the target's weights fit at all."""
        return self.target_weight_bytes < self.usable_bytes

    @property
    def both_fit(self) -> bool:
        """Whether target and draft weights fit together (beside the engine's extra reserve for speculating)."""
        return self.free_bytes_with_draft > 0

    @property
    def draft_kv_bytes_per_seq(self) -> float:
        """The draft's share of a sequence's KV bytes."""
        return self.kv_bytes_per_seq - self.target_kv_bytes_per_seq

    @property
    def free_bytes_without_draft(self) -> float:
        """Bytes left for the KV cache beside the target's weights (negative: the target does not fit)."""
        return self.usable_bytes - self.target_weight_bytes

    @property
    def speculating_usable(self) -> float:
        """Bytes the speculating engine's share gives weights and KV cache (the plain engine's where it sets no other)."""
        return self.usable_bytes if self.speculating_usable_bytes is None else self.speculating_usable_bytes

    @property
    def free_bytes_with_draft(self) -> float:
        """Bytes left for the KV cache beside the target's and the draft's weights, in the speculating engine's share."""
        return self.speculating_usable - self.target_weight_bytes - self.draft_weight_bytes

    @property
    def max_batch_without_draft(self) -> int:
        """Most sequences of ``context_tokens`` that fit beside the target alone."""
        free = self.free_bytes_without_draft
        return max(0, int(free // self.target_kv_bytes_per_seq)) if free > 0 else 0

    @property
    def max_batch_with_draft(self) -> int:
        """Most sequences that fit with the draft's weights and KV cache as well."""
        free = self.free_bytes_with_draft
        return max(0, int(free // self.kv_bytes_per_seq)) if free > 0 else 0

    @property
    def usable_share(self) -> dict:
        """The share of device memory left to the weights and KV cache, plain and speculating."""
        return {
            "plain": self.usable_bytes / self.memory_bytes,
            "speculating": self.speculating_usable / self.memory_bytes,
        }

    def to_dict(self) -> dict:
        return {
            "memory_bytes": self.memory_bytes,
            "usable_bytes": self.usable_bytes,
            "target_weight_bytes": self.target_weight_bytes,
            "draft_weight_bytes": self.draft_weight_bytes,
            "target_kv_bytes_per_seq": self.target_kv_bytes_per_seq,
            "draft_kv_bytes_per_seq": self.draft_kv_bytes_per_seq,
            "context_tokens": self.context_tokens,
            "gpus": self.gpus,
            "speculating_usable_bytes": self.speculating_usable_bytes,
            "memory_basis": self.memory_basis,
            # The setting as given (None: the engine's own, memory_basis), and the share of memory it leaves the
            # weights and KV cache, plain and speculating: what the setting came to.
            "memory_utilization": self.memory_utilization,
            "usable_share": self.usable_share,
            "start_up_bytes": self.start_up_bytes,
            "max_batched_tokens": self.max_batched_tokens,
            "max_num_seqs": self.max_num_seqs,
            "target_fits": self.target_fits,
            "both_fit": self.both_fit,
            "max_batch_without_draft": self.max_batch_without_draft,
            "max_batch_with_draft": self.max_batch_with_draft,
        } | (
            {
                "recurrent_state_bytes_per_seq": self.recurrent_state_bytes_per_seq,
                "scratch_bytes_per_seq": self.scratch_bytes_per_seq,
                "scratch_draft_tokens": self.scratch_draft_tokens,
                "scratch_basis": self.scratch_basis,
            }
            if self.recurrent_state_bytes_per_seq
            else {}
        )


def sequence_kv_bytes(
    dep: Deployment, tokens: object, with_draft: bool = True, draft_tokens: object = None
) -> np.ndarray:
    """Bytes one sequence of ``tokens`` tokens holds on one GPU: the target's KV cache and recurrent state and,
    speculating, the draft's KV and the target's speculative state scratch for ``draft_tokens`` drafted tokens.

    The one home of a sequence's footprint: window layers hold at most their window, chunked layers a chunk, an MLA
    cache its latent, tensor parallelism splits (or replicates) KV heads
    (:meth:`specsim.describe.shapes.ModelShape.kv_bytes_reserved`); recurrent layers hold their state
    (:mod:`specsim.describe.recurrent`) and, per the engine preset's ``recurrent``, one more state per draft token.
    ``specsim capacity`` and the serving simulation both reserve this.

    >>> dep = Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b")
    >>> float(sequence_kv_bytes(dep, 1000)), float(sequence_kv_bytes(dep, 1000, with_draft=False))
    (163840000.0, 131072000.0)
    """
    kv = np.asarray(dep.target.kv_bytes_reserved(tokens), dtype=float) + dep.target.recurrent_state_bytes
    if with_draft and dep.draft is not None:
        kv = kv + dep.draft.kv_bytes_reserved(tokens) + dep.draft.recurrent_state_bytes
    if with_draft and dep.drafter is not None and dep.target.is_hybrid:
        kv = kv + scratch_bytes(dep, draft_tokens)
    return kv


def default_scratch_tokens(dep: Deployment) -> tuple[int, str]:
    """(draft tokens, why) a hybrid target's speculative scratch is sized for when the question names no gamma.

    An engine sizes it by its configured ``num_speculative_tokens`` (vLLM: 1 + num_speculative_tokens state pages per
    request, :data:`specsim.engines.vllm.RECURRENT`), which no engine defaults for a drafter with a network: a block
    drafter's is its block (the most it drafts a round, :attr:`~specsim.speculation.drafters.Drafter.max_steps`),
    any other's :data:`DEFAULT_SCRATCH_DRAFT_TOKENS`.
    """
    steps = None if dep.drafter is None else dep.drafter.max_steps
    if steps is not None and steps <= DEFAULT_SCRATCH_DRAFT_TOKENS * 4:
        return (
            int(steps),
            f"the most {dep.drafter.label} drafts a round, its num_speculative_tokens; {given_as('gamma')} to size another",
        )
    return DEFAULT_SCRATCH_DRAFT_TOKENS, (
        "specsim's default num_speculative_tokens, the largest gamma of its serving "
        f"schedules (no engine defaults one); {given_as('gamma')} to size another"
    )


def scratch_bytes(dep: Deployment, draft_tokens: object = None) -> np.ndarray:
    """The speculative state scratch one speculating sequence of a hybrid target holds on one GPU, for ``draft_tokens``
    drafted tokens (default :func:`default_scratch_tokens`), as the deployment's engine preset reserves it
    (:meth:`specsim.engines.base.RecurrentVerify.scratch_tokens`, the one home of the count)."""
    tokens = default_scratch_tokens(dep)[0] if draft_tokens is None else draft_tokens
    verify = dep.engine.recurrent
    return verify.apply(dep.target).recurrent_scratch_bytes(verify.scratch_tokens(tokens))


def reserved_context(context: int, max_context: int | None) -> int:
    """Tokens each sequence reserves: ``max_context`` if given, else the mean ``context``, one at least (a decoding
    sequence holds the token it decodes; a context of 0 is a step over an empty cache, not a sequence of no memory).

    >>> reserved_context(1128, None), reserved_context(1128, 4096), reserved_context(0, None)
    (1128, 4096, 1)
    """
    if max_context is None:
        return max(int(context), 1)
    if max_context < context:
        raise ValueError(
            f"{given_as('max_context')} ({max_context}) must be at least the mean {given_as('context')} ({context}): a "
            "sequence "
            "reserves at least the tokens it holds on average"
        )
    return int(max_context)


def no_room_said(
    dep: Deployment,
    speculating: bool,
    free: float,
    basis: str,
    need: float | None = None,
    context: float = 0.0,
    fits_at: int | None = None,
    fits_all: tuple[int, int | None] | None = None,
) -> str:
    """One line for an engine that cannot hold a request beside its weights: ``free`` bytes per GPU left for the KV
    cache (negative: the weights take more than the share leaves them), ``need`` a request's bytes at ``context`` tokens
    where known, ``basis`` the share's rule; what to change, first: ``fits_at``, the smallest tensor-parallel size that
    holds one request (:func:`smallest_fitting_tp`; None: none in a node), with ``fits_all`` (users at once, the
    smallest size that holds them all, None: none in a node) where the question names its users.  The one wording of it
    (the answers at a load, serve-sim, watch: :func:`no_room_at`)."""
    what = f"{dep.target.name} with {dep.drafter.name}" if speculating else dep.target.name
    where = f"{dep.hardware.name} x {dep.target.tp}" if dep.target.tp > 1 else dep.hardware.name
    if free < 0:
        said = (
            f"{what} does not fit on {where}: the weights take {-free / 1e9:.2f} GB per GPU more than the engine's "
            "share of memory leaves them"
        )
    elif need is None:
        said = f"{what} does not fit on {where}: no memory is left for the KV cache beside the weights"
    else:
        said = (
            f"{what} on {where} leaves {free / 1e9:.2f} GB per GPU for the KV cache beside the weights, less than one "
            f"request of {context:,.0f} tokens needs ({need / 1e9:.2f} GB)"
        )
    held = f"{dep.target.name}{' and its draft' if dep.drafter is not None else ''} with one request"
    # as its caller gave them: target_options['tp'] to Python, --tp on the command line (core.names)
    tp, dtype = given_as("target_options['tp']", "--tp"), given_as("target_options['weight_dtype']", "--weight-dtype")
    share = given_as("memory_utilization")
    if fits_at is not None and fits_at > dep.target.tp:
        users, tp_all = fits_all if fits_all is not None and fits_all[0] > 1 else (1, fits_at)
        more = (
            ""
            if tp_all == fits_at
            else f"no tensor-parallel size in a node holds all {users:,} at once; "
            if tp_all is None
            else f"{tp} {tp_all} holds all {users:,} at once; "
        )
        return (
            f"give {tp} {fits_at}, the smallest that holds {held} here ({more}or a smaller {dtype}, or "
            f"{share}): "
            f"{said}; the engine's share of memory: {basis}"
        )
    if fits_at is None:  # no size of a node holds it: the dtype, the share or the device must change
        return (
            f"no tensor-parallel size in a node ({dep.hardware.max_devices} GPUs) holds {held} here: give a smaller "
            f"{dtype} or {share}, or a device with more memory: {said}; the engine's share of memory: {basis}"
        )
    return f"{said}; the engine's share of memory: {basis}; give a smaller {dtype}, or {share}"


def no_room_at(
    dep: Deployment,
    speculating: bool,
    free: float,
    memory_utilization: float | None,
    limits,
    tokens: float = 1,
    need: float | None = None,
    context: float = 0.0,
    users: int | None = None,
) -> str:
    """:func:`no_room_said` for an engine of ``limits`` (its max_batched_tokens and max_num_seqs) at
    ``memory_utilization`` (None: the engine's own share), leading with the smallest tensor-parallel size that holds one
    request of ``tokens`` tokens (:func:`smallest_fitting_tp`), and ``users`` of them at once where the question names
    its users: the one refusal of an engine without room, in every answer at a load and in watch."""
    basis = memory_share(dep, memory_utilization, limits.max_batched_tokens, limits.max_num_seqs).where
    longest = max(round(float(tokens)), 1)

    def fits(batch: int) -> int | None:
        return smallest_fitting_tp(
            dep, longest, memory_utilization, batch, limits.max_batched_tokens, limits.max_num_seqs
        )

    fits_at = fits(1)
    fits_all = fits_at if (users or 1) == 1 else fits(users)
    return no_room_said(dep, speculating, free, basis, need, context, fits_at, (users or 1, fits_all))


def kv_error_said(engine: str) -> str:
    """What ``engine``'s KV cache leaves out, and how far off it was on public start-ups (its ``kv_error``)."""
    from specsim.engines import REGISTRY

    e = REGISTRY.get(engine)
    title = e.title if e is not None else "the engine"
    if e is not None and e.cache_said:
        left = e.cache_said
    elif e is not None and e.reserve_counts_activations:
        left = f"what the weights leave in {title}'s share, whose reserve is meant for activations and graphs"
    else:
        left = f"what the weights leave in {title}'s share; the activations, graphs and buffers of its start-up not counted"
    if e is None or e.kv_error is None:
        return f"{left}; not measured on public start-ups"
    median, low, high, n = e.kv_error
    span = f"{low:.0%}" if n == 1 else f"a median {median:.1%} ({low:.1%} to {high:.1%})"
    starts = f"{n} public start-up" + ("s" if n > 1 else "")
    return f"{left}: on {starts} specsim's cache was {span} larger than {title}'s (benchmarks/validate_kv_capacity.py)"


def memory_share(
    dep: Deployment,
    memory_utilization: float | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
):
    """The share of device memory ``dep``'s engine gives weights and KV cache (a
    :class:`~specsim.engines.engine.MemoryShare`), by the engine's own rule on this GPU for this target and drafter with
    ``max_batched_tokens`` per iteration and ``max_num_seqs`` sequences at most (None: the engine's defaults; vLLM's
    start-up profiles with them), ``memory_utilization`` its memory setting where given (vLLM's
    --gpu-memory-utilization and SGLang's --mem-fraction-static: a share of the device; TensorRT-LLM's
    free_gpu_memory_fraction: a share of what the weights leave); for engine none, :data:`DEFAULT_MEMORY_UTILIZATION`
    unless given.  The one place the share is chosen."""
    from specsim.engines import REGISTRY, default_limits
    from specsim.engines.engine import MemoryShare

    if dep.engine.served_limits is not None:  # a calibration's: those its runs were served under, where none is given
        served = default_limits(dep.engine, dep.hardware)
        max_batched_tokens = served.max_batched_tokens if max_batched_tokens is None else max_batched_tokens
        max_num_seqs = served.max_num_seqs if max_num_seqs is None else max_num_seqs
    given = memory_utilization
    if given is not None and not 0.0 < given <= 1.0:
        raise ValueError(f"memory utilization must be in (0, 1], got {given!r}")
    engine = REGISTRY.get(dep.engine.name)
    support = engine.methods.get(dep.drafter.kind) if engine is not None and dep.drafter is not None else None
    method = support.name if support is not None else None
    own = (
        None
        if engine is None
        else engine.memory_share(
            dep.engine, dep.hardware, dep.target, dep.draft, method, max_batched_tokens, given, max_num_seqs
        )
    )
    if own is not None:
        return own
    if given is not None:
        return MemoryShare(given, given, f"{given:g} as given")
    u = DEFAULT_MEMORY_UTILIZATION
    return MemoryShare(u, u, f"no engine: {u:g}, vLLM's gpu_memory_utilization default before 0.20.0")


def capacity(
    dep: Deployment,
    context: int = DEFAULT_CONTEXT_TOKENS,
    memory_utilization: float | None = None,
    draft_tokens: int | None = None,
    draft_tokens_basis: str | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
) -> Capacity:
    """Memory budget of ``dep`` with every sequence holding ``context`` tokens (a hybrid target's speculative scratch
    sized for ``draft_tokens``, the engine's num_speculative_tokens, ``draft_tokens_basis`` saying where it comes from,
    None: the caller's gamma; default :func:`default_scratch_tokens`), the engine's share of memory :func:`memory_share`'s at its limits
    ``max_batched_tokens`` and ``max_num_seqs`` (None: its defaults).

    Examples
    --------
    Llama-3.1-8B with a Llama-3.2-1B draft on an H100 80 GB at 8192 tokens, at vLLM 0.34's whole device (its
    extensible KV cache) less what its start-up takes and the margin that cache keeps free (3.5 GiB), and at 0.33's
    0.92 of the device less the start-up (2.1 GiB):

    >>> cap = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b"), 8192)
    >>> cap.max_batch_without_draft, cap.max_batch_with_draft
    (61, 47)
    >>> cap = capacity(Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", engine="vllm@0.33.0"), 8192)
    >>> cap.max_batch_without_draft, cap.max_batch_with_draft
    (56, 43)
    """
    share = memory_share(dep, memory_utilization, max_batched_tokens, max_num_seqs)
    if isinstance(context, bool) or int(context) != context or context < 1:
        raise ValueError(f"context must be an integer >= 1 token for a capacity estimate, got {context!r}")
    scratch = dep.target.is_hybrid and dep.drafter is not None
    if draft_tokens is None:
        tokens, basis = default_scratch_tokens(dep)
    else:  # a count given without its basis is the caller's gamma: capacity_at's keyword, the command's --gamma
        tokens, basis = int(draft_tokens), draft_tokens_basis or given_as("gamma")
    return Capacity(
        memory_bytes=dep.hardware.memory_bytes,
        usable_bytes=share.plain * dep.hardware.memory_bytes,
        target_weight_bytes=dep.target.weight_bytes,
        draft_weight_bytes=dep.draft.weight_bytes if dep.draft is not None else 0.0,
        target_kv_bytes_per_seq=float(sequence_kv_bytes(dep, context, with_draft=False)),
        kv_bytes_per_seq=float(sequence_kv_bytes(dep, context, draft_tokens=tokens)),
        context_tokens=int(context),
        gpus=dep.target.tp,
        recurrent_state_bytes_per_seq=dep.target.recurrent_state_bytes,
        scratch_bytes_per_seq=float(scratch_bytes(dep, tokens)) if scratch else 0.0,
        scratch_draft_tokens=int(tokens) if scratch else 0,
        scratch_basis=basis if scratch else "",
        speculating_usable_bytes=share.speculating * dep.hardware.memory_bytes if dep.drafter else None,
        memory_basis=share.where,
        memory_utilization=memory_utilization,
        max_batched_tokens=max_batched_tokens,
        max_num_seqs=max_num_seqs,
        start_up_bytes=share.start_up_bytes,
    )


def smallest_fitting_tp(
    dep: Deployment,
    context: int = DEFAULT_CONTEXT_TOKENS,
    memory_utilization: float | None = None,
    batch: int = 1,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
) -> int | None:
    """The fewest tensor-parallel GPUs (a power of two the heads allow, within one node) that hold the target,
    its draft and ``batch`` sequences of ``context`` tokens; None if no node size does.

    The draft keeps its own TP unless it was at the target's, in which case it follows.

    >>> smallest_fitting_tp(Deployment.build("h100-sxm", "llama-3.3-70b", "llama-3.2-1b"), 8192, batch=16)
    4
    """
    n = 1
    while n <= dep.hardware.max_devices:
        if n > 1 and dep.hardware.interconnect_bytes_per_s is None:
            return None
        try:
            trial = dep.with_tp(n)
        except ValueError:  # the heads do not split n ways
            n *= 2
            continue
        if (
            capacity(
                trial, context, memory_utilization, max_batched_tokens=max_batched_tokens, max_num_seqs=max_num_seqs
            ).max_batch_with_draft
            >= batch
        ):
            return n
        n *= 2
    return None


def fitting_tp_for(dep: Deployment, cap: Capacity) -> int | None:
    """:func:`smallest_fitting_tp` at ``cap``'s own context, memory setting and engine limits."""
    return smallest_fitting_tp(
        dep,
        cap.context_tokens,
        cap.memory_utilization,
        max_batched_tokens=cap.max_batched_tokens,
        max_num_seqs=cap.max_num_seqs,
    )


def require_target_fits(dep: Deployment, cap: Capacity) -> None:
    """Refuse step-time answers for a target whose weights cannot be held: name the TP (or dtype) that can."""
    if cap.target_fits:
        return
    n = fitting_tp_for(dep, cap)
    where = f"{dep.hardware.name} x {dep.target.tp}" if dep.target.tp > 1 else f"one {dep.hardware.name}"
    smaller = [d for d in ("fp8", "int4") if BYTES_PER_ELEMENT[d] < BYTES_PER_ELEMENT[dep.target.weight_dtype]]
    tp, dtype = given_as("target_options['tp']", "--tp"), given_as("target_options['weight_dtype']", "--weight-dtype")
    fix = (
        f"{tp} {n} fits"
        if n is not None
        else f"no tensor-parallel size within one node ({dep.hardware.max_devices} GPUs) fits; "
        + (f"try {dtype} {' or '.join(smaller)}, or " if smaller else "")
        + "a device with more memory"
    )
    raise ValueError(
        f"{dep.target.name} in {dep.target.weight_dtype} ({cap.target_weight_bytes / 1e9:.1f} GB of weights per GPU) "
        f"does not fit on {where} ({cap.usable_bytes / 1e9:.1f} GB usable per GPU): {fix}"
    )


def throughput_table(
    dep: Deployment,
    alpha: float,
    batch: object,
    context: int = DEFAULT_CONTEXT_TOKENS,
    gamma: int | None = None,
    gamma_max: int = DEFAULT_GAMMA_MAX,
    max_context: int | None = None,
    memory_utilization: float | None = None,
) -> "pd.DataFrame":
    """Latency and throughput with and without speculation, one row per batch size.

    ``gamma`` None uses the optimal gamma per batch size; an integer fixes it.
    ``max_context`` (default ``context``) sizes the KV reservation for the
    memory check.  Columns: batch, gamma, speedup, latency_plain_s and
    latency_spec_s (seconds per token per sequence), tokens_per_s_seq_plain,
    tokens_per_s_seq_spec, tokens_per_s_plain, tokens_per_s_spec (the whole
    deployment, all its tensor-parallel GPUs), tokens_per_s_per_gpu_plain,
    tokens_per_s_per_gpu_spec, fits_without_draft, fits_with_draft.
    """
    import pandas as pd

    b = np.atleast_1d(np.asarray(batch, dtype=float))
    if gamma is None:
        best = optimal_gamma(dep, alpha, b, context, gamma_max)
        g = best.gamma
    else:
        g = np.full(b.shape, int(gamma))
        dep.require_drafts_within_positions(context, int(gamma))
    out = dep.outcome(alpha, g, b, context)
    latency_plain, latency_spec = out.decode.total_s, out.latency_per_token_s
    cap = capacity(dep, reserved_context(context, max_context), memory_utilization)
    return pd.DataFrame(
        {
            "batch": b.astype(int),
            "gamma": g.astype(int),
            "speedup": out.speedup,
            "latency_plain_s": latency_plain,
            "latency_spec_s": latency_spec,
            "tokens_per_s_seq_plain": 1.0 / latency_plain,
            "tokens_per_s_seq_spec": 1.0 / latency_spec,
            "tokens_per_s_plain": b / latency_plain,
            "tokens_per_s_spec": b / latency_spec,
            "tokens_per_s_per_gpu_plain": b / latency_plain / dep.target.tp,
            "tokens_per_s_per_gpu_spec": b / latency_spec / dep.target.tp,
            "fits_without_draft": b <= cap.max_batch_without_draft,
            # gamma = 0 rows still hold the draft in memory if the engine serves it.
            "fits_with_draft": b <= cap.max_batch_with_draft,
        }
    )


def free_kv_bytes(
    dep,
    input_tokens: float,
    output_tokens: float,
    gamma_top: int,
    memory_utilization: float | None = None,
    max_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    spec_max_num_seqs: int | None = None,
) -> tuple:
    """(plain, speculating) bytes of KV cache an engine holds beside the weights (:func:`specsim.serving.capacity.capacity`
    at the mean context of requests of these lengths, at ``memory_utilization``, the engine's own share unless given,
    with ``max_batched_tokens`` per iteration and ``max_num_seqs`` sequences at most, ``spec_max_num_seqs`` the
    speculating server's where it was started with its own: None, the same), the drafter's scratch sized for
    ``gamma_top``: what the serving model's engine holds.  Each arm's share is its own server's: vLLM's start-up
    profiles a pass at the server's max_num_seqs (:func:`specsim.engines.vllm.start_up`)."""

    def free(seqs: int | None) -> Capacity:
        context = max(int(mean_context_tokens(input_tokens, output_tokens)), 1)
        top = max(int(gamma_top), 1)
        return capacity(dep, context, memory_utilization, top, "the largest gamma searched", max_batched_tokens, seqs)

    plain = free(max_num_seqs)
    spec = plain if spec_max_num_seqs in (None, max_num_seqs) else free(spec_max_num_seqs)
    return plain.free_bytes_without_draft, spec.free_bytes_with_draft
