"""The roofline step-time model of one forward pass.

A forward pass of ``b`` sequences, each adding ``q`` new tokens on top of
``L`` tokens already in its KV cache, takes (shared/design/article-model.md)

    t(b, q, L) = overhead + max(flop / achieved_flop_per_s,
                                bytes / achieved_bytes_per_s) + comm

    flop  = 2 * N * b * q                                  (weight matmuls)
          + 4 * n_layers * n_heads * head_dim * L * b * q  (QK^T and PV)
    bytes = W(b q) + kv_bytes_per_token * b * (L + q) + b * S(q)

with N the parameters multiplied per token, W the weight bytes read by a pass
of b q tokens (constant for a dense model; the experts those tokens touch for
a mixture of experts, :meth:`~specsim.describe.models.ModelShape.weight_bytes_read`),
the KV cache of every sequence read once (also when q > 1; local layers read
at most their window) and the q new tokens' K and V written; S(q) is the
recurrent state a hybrid model's sequence reads and writes in a pass of q
tokens (one read and q per-token checkpoints, as vLLM and SGLang verify:
:meth:`~specsim.describe.shapes.ModelShape.recurrent_pass_bytes`), and the
recurrences add their FLOP (7 H P N per token and Gated DeltaNet layer, 5 H P N
per Mamba-2 layer).  The matmul FLOP
run at the rate of their weights' dtype (FP8 at the FP8 peak, 4-bit weights
dequantised: :meth:`~specsim.describe.hardware.HardwareProfile.flop_per_s_for`);
attention at the 16-bit rate.  ``comm`` is zero on one device and the
tensor-parallel collectives of :mod:`specsim.describe.parallel` otherwise; all the
other terms are per rank.  ``q = 1`` is a decode (or draft) step and
``q = gamma + 1`` the verification pass that scores gamma drafted tokens plus
the bonus position.

One roofline spans the whole pass: compute and memory traffic overlap
perfectly, and the pass is bound by whichever is slower.  This is the model
that reproduces every number the reference article quotes; a per-operator
roofline or a sum of the two terms does not (article-model.md lists the
alternatives that fail).  Weight-only (dequantising) GEMMs are the one
exception: they are a roofline of their own, added to the rest's
(:func:`_serial_phases_s`), because they turn compute-bound at a few tens of
tokens while the attention beside them is still reading the KV cache.  The
overhead is per forward pass and does not shrink with the model: it is why a
1B draft costs about 0.19 of an 8B target step at batch 1, not 1/8.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specsim.describe.hardware import WEIGHT_ONLY_DTYPES, HardwareProfile
from specsim.describe.models import ModelShape
from specsim.describe.ops import BYTES_PER_ELEMENT
from specsim.describe.parallel import check_tp, comm_time_s
from specsim.timing.base import StepTime, check_pass

#: Passes' counts a :class:`RooflineSource` keeps at most (then it starts again): a fit's few thousand.
_COUNTS_KEPT = 20_000

__all__ = [
    "PassCounts",
    "RooflineSource",
    "compute_time_s",
    "counted_step_time",
    "dequant_time_s",
    "pass_bytes",
    "pass_counts",
    "pass_flop",
    "recurrent_time_s",
    "step_time",
    "weight_only_dtypes",
]


def _mixer_flop(
    model: ModelShape, batch: np.ndarray, tokens_per_seq: np.ndarray, context: np.ndarray, prompt: bool = False
) -> np.ndarray:
    """FLOP of the token mixers beyond their weights: attention over the cache (a ``prompt``'s tokens also over each
    other, causally: :meth:`~specsim.describe.shapes.ModelShape.pass_attention_flop`; the q new tokens of any other pass
    each over the L cached ones, the article's count) and the recurrences of hybrid layers."""
    tokens = batch * tokens_per_seq
    if prompt:
        out = model.pass_attention_flop(context, tokens_per_seq) * batch
    else:
        out = model.attention_flop(context) * tokens
    if model.is_hybrid:
        out = out + model.recurrent_flop(tokens, tokens_per_seq)
    return out


def pass_flop(
    model: ModelShape, batch: np.ndarray, tokens_per_seq: np.ndarray, context: np.ndarray, prompt: bool = False
) -> np.ndarray:
    """FLOP of one forward pass on one rank: weight matmuls plus attention over the cache (and recurrences); a
    ``prompt``'s pass samples one token per sequence and attends causally within itself."""
    tokens = batch * tokens_per_seq
    matmul = sum(flop for flop, _ in model.matmul_flop_by_dtype(tokens, batch if prompt else None))
    return matmul + _mixer_flop(model, batch, tokens_per_seq, context, prompt)


def compute_time_s(
    hardware: HardwareProfile,
    model: ModelShape,
    batch: np.ndarray,
    tokens_per_seq: np.ndarray,
    context: np.ndarray,
    prompt: bool = False,
) -> np.ndarray:
    """Arithmetic time of one pass: each dtype's matmuls at its rate, attention and recurrences at the 16-bit rate,
    and the dequantisation of weight-only weights' last, partly filled tile of tokens."""
    return _compute_s(hardware, pass_counts(model, batch, tokens_per_seq, context, prompt))


def _compute_s(hardware: HardwareProfile, counts: "PassCounts") -> np.ndarray:
    return _weight_only_compute_s(hardware, counts) + _other_compute_s(hardware, counts)


def _weight_only_compute_s(hardware: HardwareProfile, counts: "PassCounts") -> np.ndarray:
    """Arithmetic time of a pass's weight-only (dequantising) GEMMs, their last tile's dequantisation included: those
    of :attr:`PassCounts.dequant`, whose weights (and so bytes) are known; none for a model given by its parameters."""
    own = _weight_only_of(counts)
    matmul = sum(flop / hardware.flop_per_s_for(d) for flop, d in counts.matmul_flop if d in own)
    return matmul + _dequant_s(hardware, counts.dequant, counts.shape)


def _other_compute_s(hardware: HardwareProfile, counts: "PassCounts") -> np.ndarray:
    """Arithmetic time of the rest of a pass: the other weights' matmuls, attention and recurrences."""
    own = _weight_only_of(counts)
    matmul = sum(flop / hardware.flop_per_s_for(d) for flop, d in counts.matmul_flop if d not in own)
    return matmul + counts.mixer_flop / hardware.flop_per_s


def _weight_only_of(counts: "PassCounts") -> set:
    """The weight-only dtypes a pass's own roofline times: those :func:`_dequantised` lists with their weights, so that
    its arithmetic and its bytes (:func:`_weight_only_bytes`) are of the same GEMMs."""
    return {d for _, _, d in counts.dequant}


def dequant_time_s(hardware: HardwareProfile, model: ModelShape, batch: object, tokens_per_seq: object) -> np.ndarray:
    """What dequantising weight-only GEMMs (W4A16, W8A16, NVFP4/MXFP4 weights) add at few tokens per weight
    (:meth:`~specsim.describe.hardware.HardwareProfile.dequant_time_s`); 0 for any other storage.

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> hw, m = load_hardware("h100-sxm"), get_model("llama-3.1-8b", weight_dtype="int4")
    >>> [round(float(dequant_time_s(hw, m, b, 1)) * 1e6, 1) for b in (1, 8, 16)]
    [88.2, 47.0, 0.0]
    """
    b, q = np.asarray(batch, dtype=float), np.asarray(tokens_per_seq, dtype=float)
    return _dequant_s(hardware, _dequantised(model, b, q), np.broadcast_shapes(b.shape, q.shape))


def _dequantised(model: ModelShape, b: np.ndarray, q: np.ndarray) -> tuple:
    """(weights, tokens per weight, dtype) of each weight-only GEMM dtype of a pass (none for a model given by its
    parameters)."""
    if model.params_override is not None:
        return ()
    return tuple((w, per, d) for w, per, d in model.matmul_weights_by_dtype(b * q, q) if d in WEIGHT_ONLY_DTYPES)


def weight_only_dtypes(model: ModelShape) -> tuple[str, ...]:
    """The weight-only dtypes whose GEMMs a pass of ``model`` times on a roofline of their own
    (:func:`_serial_phases_s`): the blocks' or the experts' storage where it is dequantised (gpt-oss's MXFP4 experts
    under 16-bit blocks), none for a model given by its parameters."""
    one = np.ones(1)
    return tuple(dict.fromkeys(d for _, _, d in _dequantised(model, one, one)))


def _dequant_s(hardware: HardwareProfile, dequantised: tuple, shape: tuple) -> np.ndarray:
    out = np.zeros(shape)
    for weights, per_weight, _ in dequantised:
        out = out + hardware.dequant_time_s(weights, per_weight)
    return out


def _weight_only_bytes(counts: "PassCounts") -> np.ndarray:
    """Bytes of the weight-only GEMMs' weights a pass reads (0 where it has none)."""
    return sum((w * BYTES_PER_ELEMENT[d] for w, _, d in counts.dequant), np.zeros(counts.shape))


def pass_bytes(
    model: ModelShape, batch: np.ndarray, tokens_per_seq: np.ndarray, context: np.ndarray, prompt: bool = False
) -> np.ndarray:
    """Bytes of one forward pass on one rank: the weights it needs, each sequence's KV read and new KV written, and the
    recurrent state each sequence reads and writes (:meth:`~specsim.describe.shapes.ModelShape.recurrent_pass_bytes`;
    a ``prompt``'s through the chunked kernels)."""
    out = model.weight_bytes_read(batch * tokens_per_seq, tokens_per_seq) + batch * (
        model.kv_bytes(context) + model.kv_bytes_per_token * tokens_per_seq
    )
    if model.is_hybrid:
        out = out + batch * model.recurrent_pass_bytes(tokens_per_seq, prompt)
    return out


def recurrent_time_s(
    hardware: HardwareProfile, model: ModelShape, batch: object, tokens_per_seq: object, prompt: bool = False
) -> np.ndarray:
    """The roofline's time of a pass's recurrences alone (states moved and their FLOP; not their projections), seconds:
    what a per-operator source charges the recurrent layers where it has no measured kernel for them."""
    b, q = np.asarray(batch, dtype=float), np.asarray(tokens_per_seq, dtype=float)
    if not model.is_hybrid:
        return np.zeros(np.broadcast_shapes(b.shape, q.shape))
    return np.maximum(
        model.recurrent_flop(b * q, q) / hardware.flop_per_s,
        b * model.recurrent_pass_bytes(q, prompt) / hardware.bytes_per_s,
    )


def step_time(
    hardware: HardwareProfile,
    model: ModelShape,
    batch: object = 1,
    tokens_per_seq: object = 1,
    context: object = 0,
    prompt: bool = False,
) -> StepTime:
    """Modelled time of one forward pass, with its parts.

    Parameters
    ----------
    hardware : HardwareProfile
        Peaks, efficiencies and overhead.
    model : ModelShape
        The model that runs the pass.
    batch : array_like
        Sequences in the batch, b >= 1.
    tokens_per_seq : array_like
        New tokens per sequence, q >= 1 (1 for decode, gamma + 1 for verification).
    context : array_like
        Tokens already cached per sequence, L >= 0.
    prompt : bool
        The q tokens are a prompt's (or a chunk of one): each attends causally to those before it, and only the last
        is sampled (the LM head runs at one token per sequence).  Otherwise every new token attends to the L cached
        ones and is sampled: a decode step or a verification (the article's count).

    All three arrays broadcast against each other.

    Examples
    --------
    The article's 8B target on an H100 at batch 1 and L = 1128 takes 6.525 ms,
    of which 0.028 ms is arithmetic:

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> t = step_time(load_hardware("h100-sxm"), get_model("article-8b"), 1, 1, 1128)
    >>> round(float(t.total_s) * 1e3, 3), round(float(t.compute_s) * 1e3, 3), str(t.bound)
    (6.525, 0.028, 'memory')
    """
    return _timed(hardware, model, pass_counts(model, *check_pass(batch, tokens_per_seq, context), prompt))


@dataclass(frozen=True, eq=False)  # identity: numpy arrays in its fields
class PassCounts:
    """What one pass does on one rank, whatever the GPU's efficiencies: its (b, q, L), FLOP and bytes, the matmul FLOP
    by weight dtype, the token mixers' FLOP and the weight-only GEMMs to dequantise (:func:`step_time` times them)."""

    b: np.ndarray
    q: np.ndarray
    L: np.ndarray
    flop: np.ndarray
    nbytes: np.ndarray
    matmul_flop: list  # (FLOP, weight dtype) per dtype
    mixer_flop: np.ndarray
    dequant: tuple  # (weights, tokens per weight, dtype) per weight-only dtype

    @property
    def shape(self) -> tuple:
        return np.broadcast_shapes(self.b.shape, self.q.shape)


def pass_counts(model: ModelShape, b: np.ndarray, q: np.ndarray, L: np.ndarray, prompt: bool = False) -> PassCounts:
    """The :class:`PassCounts` of a pass of ``b`` sequences of ``q`` new tokens over ``L`` cached ones (float arrays)."""
    matmul = model.matmul_flop_by_dtype(b * q, b if prompt else None)
    mixer = _mixer_flop(model, b, q, L, prompt)
    flop = sum(f for f, _ in matmul) + mixer
    return PassCounts(b, q, L, flop, pass_bytes(model, b, q, L, prompt), matmul, mixer, _dequantised(model, b, q))


def counted_step_time(hardware: HardwareProfile, model: ModelShape, counts: PassCounts) -> StepTime:
    """:func:`step_time` of a pass already counted by :func:`pass_counts`: for a caller that times the same passes on
    many profiles (a profile fit, :mod:`specsim.calibration.profile`), the counts not depending on the efficiencies.

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> from specsim.timing.base import check_pass
    >>> hw, m = load_hardware("h100-sxm"), get_model("article-8b")
    >>> counts = pass_counts(m, *check_pass(1, 1, 1128))
    >>> float(counted_step_time(hw, m, counts).total_s) == float(step_time(hw, m, 1, 1, 1128).total_s)
    True
    """
    return _timed(hardware, model, counts)


def _timed(hardware: HardwareProfile, model: ModelShape, counts: PassCounts) -> StepTime:
    """The roofline's time of a pass from its counts (the module's equation): the weight-only GEMMs' own roofline
    beside the rest's, one after the other (:func:`_serial_phases_s`)."""
    wo_compute_s, wo_memory_s = (
        _weight_only_compute_s(hardware, counts),
        _weight_only_bytes(counts) / hardware.bytes_per_s,
    )
    compute_s = wo_compute_s + _other_compute_s(hardware, counts)
    memory_s = counts.nbytes / hardware.bytes_per_s
    overhead_s = hardware.overhead_for(model.n_layers)
    comm_s = 0.0
    if model.tp > 1:
        check_tp(hardware, model.tp, f"tensor parallelism of {model.name}")
        comm_s = comm_time_s(hardware, model, counts.b * counts.q)
    total_s = overhead_s + _serial_phases_s(compute_s, memory_s, wo_compute_s, wo_memory_s) + comm_s
    return StepTime(total_s, compute_s, memory_s, overhead_s, counts.flop, counts.nbytes, comm_s=comm_s)


def _serial_phases_s(compute_s, memory_s, wo_compute_s, wo_memory_s) -> np.ndarray:
    """A pass's time beyond its overhead: max(C, M) over the whole pass, except that weight-only (dequantising) GEMMs
    are a roofline of their own, max(C_wo, M_wo), run before or after the rest's, max(C - C_wo, M - M_wo).

    The whole-pass roofline lets one kernel's arithmetic hide behind another's memory traffic.  The GEMMs and the
    attention of a decode step are separate kernels that run one after the other (vLLM 0.24.0's Llama layer,
    ``vllm/model_executor/models/llama.py``: qkv_proj, attention, o_proj, gate_up_proj, down_proj), so they cannot. For
    16-bit weights that costs nothing below the ridge, where both parts are memory-bound (the article's model, kept).  A
    weight-only GEMM reads 4 times fewer bytes and dequantises, so it is compute-bound from a few tens of tokens
    (:data:`~specsim.describe.hardware.DEQUANT_FLOP_PER_WEIGHT`): at 32-64 decoding sequences its arithmetic and the
    attention's KV reads add, not overlap.  Its rate is :data:`~specsim.describe.hardware.W4A16_COMPUTE_FRACTION` of the
    16-bit one (an assumption, cited there); Marlin's ``bench.py`` (IST-DASLab/marlin) as posted in vLLM's integration
    thread levels off at 140 TFLOP/s from 64 tokens on (vllm-project/vllm#2497; the GPU is not named), where the A100
    profile gives 0.8 x 0.6 x 312 = 150.  Nothing here is fitted.

    >>> [float(x) for x in _serial_phases_s(np.array([6.0, 1.0]), np.array([7.0, 3.0]), np.array([5.0, 0.0]), 0.0)]
    [12.0, 3.0]
    """
    return np.maximum(wo_compute_s, wo_memory_s) + np.maximum(compute_s - wo_compute_s, memory_s - wo_memory_s)


class RooflineSource:
    """t(b, q, L) from one roofline over the whole pass (weight-only GEMMs on one of their own beside it,
    :func:`_serial_phases_s`), with the profile's per-pass overhead.

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> src = RooflineSource(load_hardware("h100-sxm"))
    >>> round(float(src.step_time(get_model("article-8b"), 1, 1, 1128).total_s) * 1e3, 3)
    6.525
    """

    name = "roofline"
    gpu_time_only = False  # the profile's per-pass overhead is already in every step

    def __init__(self, hardware: HardwareProfile, counts: dict | None = None):
        self.hardware = hardware
        self.notes: list[str] = []
        # The passes' counts kept between calls (None: none kept); sources of one GPU at other efficiencies may share
        # one (a fit's efficiency scale: :mod:`specsim.calibration.model`), the counts being the same whatever they are.
        self.counts = counts

    def brief(self) -> str:
        return f"roofline of profile {self.hardware.name}"

    def describe(self) -> str:
        hw = self.hardware
        return (
            f"roofline: profile {hw.name} (compute eff {hw.compute_eff:.2f}, bandwidth eff {hw.bandwidth_eff:.2f}, "
            f"{hw.overhead_s * 1e3:.2f} ms/pass)"
        )

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
    ) -> StepTime:
        if self.counts is None:
            return step_time(self.hardware, model, batch, tokens_per_seq, context, prompt)
        args = check_pass(batch, tokens_per_seq, context)
        key = (id(model), bool(prompt)) + tuple((a.shape, a.tobytes()) for a in args)
        counts = self.counts.get(key)
        if counts is None:
            if len(self.counts) >= _COUNTS_KEPT:
                self.counts.clear()
            counts = self.counts[key] = pass_counts(model, *args, prompt)
            self.counts[id(model)] = model  # an id is never reused while it is a key
        return _timed(self.hardware, model, counts)
