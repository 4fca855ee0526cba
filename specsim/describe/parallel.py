"""Tensor parallelism: what ``N`` ranks exchange in every forward pass.

How a model's weights, heads and KV cache split over ``N`` ranks lives on
:class:`~specsim.describe.models.ModelShape` (its ``tp`` field; byte and FLOP counts
there are per rank).  This module adds the collectives that Megatron-style
tensor parallelism (Shoeybi et al. 2019, arXiv:1909.08053) needs in a decoder
pass of ``m = b q`` tokens:

* two all-reduces per layer of the ``m x hidden`` activations, after the
  attention output projection and after the MLP (or MoE) down projection;
* one all-gather of the ``m x V`` logits, each rank holding ``V / N`` columns
  of the LM head (vLLM gathers them for sampling).

A collective of ``S`` bytes takes a fixed latency plus the ring algorithm's
traffic over the per-GPU link bandwidth ``B`` (one direction):

    all-reduce  t = latency + 2 (N - 1) / N * S / B
    all-gather  t = latency +     (N - 1) / N * S / B

(the bandwidth-optimal ring of Patarasuk and Yuan 2009; NCCL reports "bus
bandwidth" with the same factors).  ``B`` and the latency come from the
hardware profile: the link's datasheet figure and a measured small-message
all-reduce.  The kernel step-time source replaces this formula by the kernel
database's measured all-reduce latencies where it has them.  Communication is
not overlapped with compute (engines run these collectives between the
matmuls that need their results).

Expert parallelism (experts placed whole on ranks, tokens sent to them by
all-to-all) is not modelled: ``--tp`` splits every expert's columns, as vLLM
and SGLang do by default.
"""

from __future__ import annotations

import numpy as np

from specsim.core.names import given_as
from specsim.describe.hardware import HardwareProfile
from specsim.describe.models import ModelShape

__all__ = [
    "ACTIVATION_BYTES",
    "allgather_s",
    "allreduce_s",
    "check_tp",
    "collective_count",
    "collectives_per_pass",
    "comm_bytes",
    "comm_time_s",
]

#: Activations and logits travel in 16-bit.
ACTIVATION_BYTES = 2.0


def check_tp(hardware: HardwareProfile, tp: int, what: str | None = None) -> None:
    """Refuse a tensor-parallel size the profile cannot describe; ``what`` names it (default: ``tp`` to a Python
    caller, ``--tp`` on the command line, :func:`specsim.core.names.given_as`).

    >>> from specsim.describe.hardware import load_hardware
    >>> check_tp(load_hardware("h100-sxm"), 16)
    Traceback (most recent call last):
    ...
    ValueError: tp 16 exceeds the 8 devices of one h100-sxm node (max_devices in its profile)
    """
    what = given_as("tp") if what is None else what
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"{what} must be a positive integer, got {tp!r}")
    if tp > hardware.max_devices:
        raise ValueError(
            f"{what} {tp} exceeds the {hardware.max_devices} devices of one {hardware.name} node "
            f"(max_devices in its profile)"
        )
    if tp > 1 and hardware.interconnect_bytes_per_s is None:
        raise ValueError(
            f"{what} {tp} needs the device-to-device bandwidth, which profile {hardware.name} does not give "
            f"(add interconnect_bytes_per_s and interconnect_latency_s)"
        )


def allreduce_s(hardware: HardwareProfile, n: int, nbytes: object) -> np.ndarray:
    """Time of one ring all-reduce of ``nbytes`` bytes over ``n`` ranks, seconds (0 for one rank).

    >>> from specsim.describe.hardware import load_hardware
    >>> round(float(allreduce_s(load_hardware("h100-sxm"), 4, 4e6)) * 1e6, 1)  # 4 MB over NVLink
    17.8
    """
    size = np.asarray(nbytes, dtype=float)
    if n <= 1:
        return np.zeros_like(size)
    return hardware.interconnect_latency_s + 2.0 * (n - 1) / n * size / hardware.interconnect_bytes_per_s


def allgather_s(hardware: HardwareProfile, n: int, nbytes: object) -> np.ndarray:
    """Time of one ring all-gather producing ``nbytes`` bytes on every rank, seconds."""
    size = np.asarray(nbytes, dtype=float)
    if n <= 1:
        return np.zeros_like(size)
    return hardware.interconnect_latency_s + (n - 1) / n * size / hardware.interconnect_bytes_per_s


def collectives_per_pass(model: ModelShape) -> tuple[int, int]:
    """(all-reduces, all-gathers) of one forward pass: ``2 n_layers`` and 1 on a tensor-parallel model, none on one GPU.

    One all-reduce after each row-parallel output: a layer's mixer (attention or recurrent) and its MLP.  A block
    with only one of them (Nemotron-H's pattern) has one.  The one place this count lives: the roofline's and the
    kernel source's communication time, the engine presets' time per collective and the fidelity fit all take it
    from here.

    >>> from specsim.describe.models import get_model
    >>> collectives_per_pass(get_model("llama-3.1-70b", tp=4)), collectives_per_pass(get_model("llama-3.1-70b"))
    ((160, 1), (0, 0))
    """
    outputs = 2 * model.n_layers - model.n_mixer_free_layers - model.n_ffn_free_layers
    return (outputs, 1) if model.tp > 1 else (0, 0)


def collective_count(model: ModelShape) -> int:
    """Collectives of one forward pass, all-reduces and all-gathers together."""
    return sum(collectives_per_pass(model))


def comm_bytes(model: ModelShape, tokens: object) -> tuple[np.ndarray, np.ndarray]:
    """(bytes of one activation all-reduce, bytes of the logits all-gather) for ``tokens`` tokens."""
    m = np.asarray(tokens, dtype=float)
    return m * model.hidden_size * ACTIVATION_BYTES, m * model.vocab_size * ACTIVATION_BYTES


def comm_time_s(hardware: HardwareProfile, model: ModelShape, tokens: object) -> np.ndarray:
    """Communication of one forward pass of ``tokens`` tokens on a ``model.tp``-way model, seconds.

    ``2 n_layers`` all-reduces of the activations and one all-gather of the logits.

    >>> from specsim.describe.hardware import load_hardware
    >>> from specsim.describe.models import get_model
    >>> hw = load_hardware("h100-sxm")
    >>> float(comm_time_s(hw, get_model("llama-3.1-70b"), 1))
    0.0
    >>> round(float(comm_time_s(hw, get_model("llama-3.1-70b", tp=4), 1)) * 1e3, 3)
    0.734
    """
    if model.tp == 1:
        return np.zeros(np.shape(np.asarray(tokens, dtype=float)))
    act, logits = comm_bytes(model, tokens)
    reduces, gathers = collectives_per_pass(model)
    return reduces * allreduce_s(hardware, model.tp, act) + gathers * allgather_s(hardware, model.tp, logits)
