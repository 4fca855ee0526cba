"""Recurrent layers: Gated DeltaNet (Qwen3-Next, Qwen3.5/3.6) and Mamba-2 (Nemotron-H), their weights, state and FLOP.

State
    A recurrent layer's mixer keeps a fixed state per sequence instead of a KV cache: ``H`` heads of a
    ``P x N`` matrix (GDN: value heads x value dim x key dim; Mamba-2: heads x head dim x ``ssm_state_size``),
    in ``state_dtype`` (fp32 for Qwen3.5 and Nemotron 3), plus a convolution window of ``K - 1`` columns of
    ``conv_dim = H P + 2 G N`` channels (``G`` key heads or B/C groups) in the model's 16-bit type: the shapes
    of vLLM's ``MambaStateShapeCalculator`` (vllm/model_executor/layers/mamba/mamba_utils.py, 0.24.0).
Weights
    GDN (transformers' Qwen3NextGatedDeltaNet): in_proj_qkvz and in_proj_ba of ``2 G N + 2 H P + 2 H`` rows, a
    bias-free depthwise convolution, dt_bias and A_log per head, a gated RMSNorm of ``P`` weights shared by the
    heads, out_proj ``H P -> d``.  Mamba-2 (NemotronHMamba2Mixer): in_proj of ``2 H P + 2 G N + H`` rows, the
    convolution and its bias, A_log, D and dt_bias per head, a gated RMSNorm over ``H P``, out_proj.
FLOP
    Per token and layer, about ``7 H P N`` for GDN (decay, retrieval ``S^T k``, rank-1 delta update, output)
    and ``5 H P N`` for Mamba-2 (decay and accumulate, output), plus ``2 conv_dim K`` for the convolution.
    A decode step moves ``2 x state`` bytes for ``~6 H P N`` FLOP: under one FLOP per byte, bound by memory.
A pass of q tokens per sequence (``recurrent_verify``)
    ``checkpoint``: the state is read once and one state (and one window column) is written per token, so
    that the accepted prefix can pick its own -- vLLM 0.24.0 writes them in the verification kernel
    (vllm/model_executor/layers/fla/ops/fused_sigmoid_gating.py: "keep the states for multi-query tokens";
    mamba_mixer2.py for Mamba-2) and reserves ``1 + num_speculative_tokens`` state pages per request
    (MambaSpec.max_memory_usage_bytes, vllm/v1/kv_cache_interface.py); SGLang 0.5.23 allocates an
    ``intermediate_ssm_state_cache`` of one state per draft token (srt/mem_cache/memory_pool.py).
    ``replay``: one checkpoint is kept with the per-token inputs (x, dt, B) of the last
    :data:`~specsim.describe.ops.REPLAY_BUFFER_TOKENS` steps; a pass reads the checkpoint, recomputes from the
    logged inputs and writes the checkpoint back once per buffer (vLLM's opt-in ``use_replayssm``, 0.28+:
    "skip the per-step full-state store, writing the checkpoint back only on flush", vllm/config/cache.py).
A prompt (:func:`prompt_bytes`)
    goes through the chunked kernels, not the verification kernel: the state is read and written once, and one
    state per chunk of ``rec_chunk`` tokens is written and read back, not one per token.  Gated DeltaNet chunks by
    :data:`GDN_CHUNK_TOKENS` (``chunk_gated_delta_rule_fwd_h`` keeps ``h`` of shape (B, NT, H, V, K), NT =
    cdiv(T, FLA_CHUNK_SIZE): vllm/model_executor/layers/fla/ops/chunk_delta_h.py at vLLM 05f989d; ``chunk_fwd_o``
    reads it back); Mamba-2 by the config's ``chunk_size`` (``mamba_chunk_scan_combined``'s chunk states).
"""

from __future__ import annotations

import numpy as np

from specsim.describe.ops import BYTES_PER_ELEMENT, REPLAY_BUFFER_TOKENS, Op

# Every function takes a specsim.describe.shapes.ModelShape (not imported: shapes imports this module).

__all__ = [
    "GDN_CHUNK_TOKENS",
    "pass_bytes",
    "prompt_bytes",
    "recurrent_flop",
    "recurrent_ops",
    "scratch_bytes",
    "state_bytes",
]

#: Tokens per chunk of Gated DeltaNet's prompt kernels: FLA_CHUNK_SIZE of vLLM's chunked delta rule
#: (vllm/model_executor/layers/fla/ops/chunk_delta_h.py, chunk_gated_delta_rule_fwd_h, at vLLM 05f989d).
GDN_CHUNK_TOKENS = 64


def recurrent_ops(shape, tp: int) -> list[Op]:
    """The projections, convolution and per-head vectors of the recurrent layers, and their state, on one of ``tp`` ranks."""
    n = shape.n_recurrent_layers
    if not n:
        return []
    d, H, P, N, G, K = (
        shape.hidden_size,
        shape.rec_heads,
        shape.rec_head_dim,
        shape.rec_state_dim,
        shape.rec_groups,
        shape.rec_conv_kernel,
    )
    conv = H * P + 2 * G * N
    if shape.recurrent_kind == "gdn":
        rows, per_head, norm, flop = 2 * G * N + 2 * H * P + 2 * H, 2 * H, P * tp, 7.0 * H * P * N
    else:
        rows, per_head, norm, flop = 2 * H * P + 2 * G * N + H, 3 * H, H * P, 5.0 * H * P * N
    vectors = (conv * K + (conv if shape.rec_conv_bias else 0) + per_head + norm) / tp
    return [
        Op("recurrent_in", "linear", n, rows / tp, d),
        Op("recurrent_out", "linear", n, d, H * P / tp),
        Op("recurrent_vectors", "norms", n, vectors=vectors),
        Op(
            "recurrent_state",
            "state",
            n,
            state_elems=H * P * N / tp,
            conv_elems=conv * (K - 1) / tp,
            conv_channels=conv / tp,
            flop_per_token=(flop + 2.0 * conv * K) / tp,
        ),
    ]


def _states(shape) -> tuple[Op, ...]:
    return tuple(op for op in shape.ops() if op.part == "state")


def _sizes(shape) -> tuple[float, float]:
    """(bytes per state element, bytes per convolution element)."""
    return BYTES_PER_ELEMENT[shape.state_dtype_], BYTES_PER_ELEMENT[shape.head_dtype_]


def _logged_bytes(shape) -> float:
    """Bytes of one token's logged inputs per layer and rank when replaying (x, dt and B: H P + H + G N values)."""
    values = shape.rec_heads * shape.rec_head_dim + shape.rec_heads + shape.rec_groups * shape.rec_state_dim
    return values / shape.tp * BYTES_PER_ELEMENT[shape.head_dtype_]


def state_bytes(shape) -> float:
    """Bytes of recurrent state (states and convolution windows of every recurrent layer) a sequence holds per rank."""
    s, c = _sizes(shape)
    return float(sum(op.count * (op.state_elems * s + op.conv_elems * c) for op in _states(shape)))


def scratch_bytes(shape, draft_tokens: object) -> np.ndarray:
    """Bytes a speculating sequence reserves beyond its state for ``draft_tokens`` drafted tokens, per rank:
    ``checkpoint``, one state and one window column per draft token; ``replay``, the logged inputs of
    REPLAY_BUFFER_TOKENS steps."""
    x = np.asarray(draft_tokens, dtype=float)
    s, c = _sizes(shape)
    total = np.zeros(x.shape)
    for op in _states(shape):
        if shape.recurrent_verify == "checkpoint":
            per_layer = x * (op.state_elems * s + op.conv_channels * c)
        else:
            per_layer = np.where(x > 0, REPLAY_BUFFER_TOKENS * _logged_bytes(shape), 0.0)
        total = total + op.count * per_layer
    return total


def pass_bytes(shape, tokens_per_seq: object) -> np.ndarray:
    """State bytes one sequence's pass of ``tokens_per_seq`` tokens moves, per rank: ``checkpoint``, the state and
    window read once and a state and a window column written per token (a decode step: one read, one write);
    ``replay``, the checkpoint read, written back once per REPLAY_BUFFER_TOKENS tokens, the inputs logged and read."""
    q = np.asarray(tokens_per_seq, dtype=float)
    s, c = _sizes(shape)
    total = np.zeros(q.shape)
    for op in _states(shape):
        held = op.state_elems * s + op.conv_elems * c
        if shape.recurrent_verify == "checkpoint":
            per_layer = held + q * (op.state_elems * s + op.conv_channels * c)
        else:
            per_layer = held * (1.0 + q / REPLAY_BUFFER_TOKENS) + 2.0 * q * _logged_bytes(shape)
        total = total + op.count * per_layer
    return total


def prompt_bytes(shape, tokens_per_seq: object) -> np.ndarray:
    """State bytes one sequence's prompt of ``tokens_per_seq`` tokens moves through the chunked kernels, per rank: the
    state and window read and written once, and the state at each of its chunks written and read back (``rec_chunk``
    tokens each); a verification pass of as many tokens writes one per token (:func:`pass_bytes`)."""
    q = np.asarray(tokens_per_seq, dtype=float)
    s, c = _sizes(shape)
    chunks = np.ceil(q / shape.rec_chunk)
    total = np.zeros(q.shape)
    for op in _states(shape):
        held = op.state_elems * s + op.conv_elems * c
        total = total + op.count * (2.0 * held + 2.0 * chunks * op.state_elems * s)
    return total


def recurrent_flop(shape, tokens: object, tokens_per_seq: object = 1) -> np.ndarray:
    """FLOP of the recurrences (not their projections) for ``tokens`` tokens per rank; replaying, each sequence also
    recomputes the tokens logged since its checkpoint, half of REPLAY_BUFFER_TOKENS on average."""
    m = np.asarray(tokens, dtype=float)
    per_token = sum(op.count * op.flop_per_token for op in _states(shape))
    if shape.recurrent_verify == "replay" and per_token:
        m = m + m / np.asarray(tokens_per_seq, dtype=float) * REPLAY_BUFFER_TOKENS / 2.0
    return m * per_token
