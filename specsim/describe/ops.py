"""The vocabulary of a pass's operations: storage types, :class:`Op`, and the recurrent modes engines use.

:mod:`specsim.describe.shapes` builds one list of :class:`Op` per model (the weights of every layer and the
state of its recurrent layers); parameter counts, resident and streamed bytes, matmul FLOP and every timing
source's per-operator composition read that list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "BYTES_PER_ELEMENT",
    "KV_DTYPE_CHOICES",
    "Op",
    "RECURRENT_KINDS",
    "RECURRENT_VERIFY_MODES",
    "REPLAY_BUFFER_TOKENS",
    "WEIGHT_DTYPE_CHOICES",
]

BYTES_PER_ELEMENT = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # 4-bit integer weights with a 16-bit scale and a 4-bit zero point per group of 128 (AWQ and GPTQ's
    # usual layout): 4 + 20/128 bits.
    "int4": (4 + 20 / 128) / 8,
    # 8-bit integer weights with 16-bit activations (GPTQ 8-bit, compressed-tensors W8A16): a 16-bit scale per
    # group of 128, dequantised to 16 bits in the GEMM.
    "w8a16": (8 + 16 / 128) / 8,
    # OCP microscaling FP4: an 8-bit shared scale per 32 values (4.25 bits), gpt-oss's expert format.
    "mxfp4": 4.25 / 8,
    # NVIDIA NVFP4: an FP8 scale per 16 values (4.5 bits).
    "nvfp4": 4.5 / 8,
}
#: Recurrent mixers priced: Gated DeltaNet and Mamba-2.
RECURRENT_KINDS = ("gdn", "mamba2")
#: How a pass of several tokens per sequence goes through recurrent layers: a state written per token
#: (vLLM's and SGLang's default) or one checkpoint replayed from logged inputs (vLLM's opt-in use_replayssm).
RECURRENT_VERIFY_MODES = ("checkpoint", "replay")
#: Steps a replaying engine logs before it writes its checkpoint back: vLLM's replayssm_buffer_len default
#: (vllm/config/cache.py, 0.33.0) and TensorRT-LLM's MIN_REPLAY_HISTORY_SIZE
#: (tensorrt_llm/_torch/pyexecutor/mamba_cache_manager.py).
REPLAY_BUFFER_TOKENS = 16
#: Dtypes the CLI offers for --weight-dtype and --kv-dtype (the others are read from config.json files).
WEIGHT_DTYPE_CHOICES = ("bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
KV_DTYPE_CHOICES = ("bf16", "fp16", "fp8")


def _positive_int(where: str, key: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{where}: {key} must be {kind}, got {value!r}")


@dataclass(frozen=True)
class Op:
    """One operation of a forward pass on one tensor-parallel rank: a matmul of ``n x k`` and its vectors, or a state.

    ``part`` says how it is stored and read: ``linear`` (the blocks' weight dtype, read every pass),
    ``expert`` (the expert dtype, read when a token routes to it), ``head`` (embedding and LM head, in
    the head dtype), ``norms`` (norm weights and other vectors, head dtype) or ``state`` (a recurrent
    layer's per-sequence state: no parameters, read and written by every pass).  ``count`` is how many
    instances the model holds (layers, or layers times experts); ``vectors`` the parameters beside the
    matmul (biases, norm weights, attention sinks); ``gather``: an embedding table, rows looked up, not
    multiplied.
    """

    name: str
    part: str
    count: int
    n: float = 0.0
    k: float = 0.0
    vectors: float = 0.0
    gather: bool = False
    #: Part ``state`` only (a recurrent layer's state, no weights): elements one sequence keeps on one rank, of the
    #: recurrent state (``state_dtype``) and of the convolution window (the model's 16-bit type); the convolution
    #: channels (``conv_channels``, one column per extra token of a pass); FLOP per token of the recurrence itself.
    state_elems: float = 0.0
    conv_elems: float = 0.0
    conv_channels: float = 0.0
    flop_per_token: float = 0.0

    @property
    def params(self) -> float:
        """Parameters of one instance on one rank."""
        return self.n * self.k + self.vectors

    @property
    def is_matmul(self) -> bool:
        """Whether a pass multiplies activations by this weight (an (n, k) GEMM)."""
        return self.n > 0 and self.k > 0 and not self.gather
