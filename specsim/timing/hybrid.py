"""The default source: the roofline for a decode step, measured kernels for what verification adds.

    t_hybrid(b, q, L) = t_roofline(b, 1, L) * k~(b, q, L) / k~(b, 1, L)      (the collectives apart, below)

A decode or draft step (q = 1) is the roofline's, with the profile's per-pass
overhead, and so is a prompt's pass (compute-bound: a decode step's ratio does not
carry to it); a verification pass is that step scaled by the ratio the measured
kernels give between a pass of q tokens per sequence and a decode step of the
same batch and context.  This combination is the default because the fidelity
table (``benchmarks/validate_steptimes.py``) measures it best on both counts:
on public per-token latencies of serving engines the roofline with an engine
preset beats the kernel sum (held-out MAPE in the README), while the cost of
verification relative to decode is what the kernel measurements show and the
whole-pass roofline misses (it holds t_V / t_T at 1 up to the ridge).  Where
the kernel data end, the ratio is the roofline's own and the point is flagged.
On a GPU the database lacks, the ratio comes from a device of the same compute
capability (:func:`~specsim.timing.kernel_db.kin_devices`): a ratio, unlike an
absolute time, carries over between GPUs of one architecture and a similar
balance of compute to bandwidth.

The ratio is of the two passes as the roofline prices them, k~: the kernels'
pass with its GEMMs untiled and without its collectives.  A GEMM's measured time
is a staircase in its tokens m: a partial tile or wave costs a whole one (the
H100's Llama-3.1-8B GEMMs rise 5.5% from m = 160 to 161 and 10% from 256 to
257).  The roofline has no tiles, and a ratio of the measured passes carried the
decode step's staircase inverted into the verification pass: where the decode
step jumps and the pass of q b tokens does not, t_hybrid fell as the batch grew
(22.95 to 22.56 ms at b = 160 to 161, H100, 8B, q = 4, L = 1128), which neither
source does alone.  Untiled, each pass's GEMMs are their line's lower convex
hull (:meth:`~specsim.timing.kernels.KernelTable.gemm_hull`): without tiles a
GEMM takes the larger of its weights' read and its FLOP, convex in m, and tiles
only add to it.  Likewise the measured all-reduce changes algorithm with the
message (H100, TP 4, vLLM: 7.2 us at 16 tokens' activations, 11.4 at 32, 12.8 at
64), which the roofline's collective (the profile's link latency plus bytes over
bandwidth) does not: every pass's collectives are the roofline's, added after
the ratio of the passes' own work, as they must be over a kin device's kernels
(never a PCIe all-reduce over NVLink kernels).  Tile quantisation stays in
``--timing kernels``.  The ratio is at least 1: a pass of q tokens does more
work than a decode step (the kernel source's own floor).  What is not removed:
a MoE target's decode step reads more experts as its batch grows while a
verification pass has read them all, and the roofline's step grows less with
them than the measured fused-MoE kernels', so at short contexts its verification
pass can still fall with the batch, by at most 0.25% a batch on the H100 and
H200 (Qwen3-30B-A3B, 128 cached tokens).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specsim.describe.models import ModelShape
from specsim.timing.base import StepTime
from specsim.timing.kernels import KernelSource
from specsim.timing.memo import MemoSource
from specsim.timing.roofline import RooflineSource

__all__ = ["HybridSource"]

#: The models whose last decode step a hybrid source keeps at once (HybridSource.step_time): a round's target and draft.
_MODELS_KEPT = 16
#: The kernels' passes whose untiled time a hybrid source keeps at once (HybridSource._untiled_own_s).
_UNTILED_KEPT = 4096


class HybridSource:
    """Roofline decode steps, kernel-measured verification-to-decode ratio."""

    name = "hybrid"
    gpu_time_only = False  # its decode steps are the roofline's, with the profile's per-pass overhead

    def __init__(self, roofline: RooflineSource, kernels: KernelSource):
        self.roofline = roofline
        self.kernels = kernels
        self._decode_steps: dict = {}  # id(model) -> (model, its (b, L), its last decode step's (roofline, kernels, untiled own s))
        # (id of a kernels' pass, its tokens) -> (that pass, its untiled own s), kept with the kernels' passes where they
        # are kept (_untiled_own_s)
        self._untiled: dict | None = kernels.derived if isinstance(kernels, MemoSource) else None

    @property
    def notes(self) -> list[str]:
        return self.kernels.notes

    def noted_items(self) -> list[tuple]:
        return self.kernels.noted_items()

    def take_notes(self, items: list[tuple]) -> None:
        self.kernels.take_notes(items)

    def brief(self) -> str:
        return f"{self.roofline.brief()}, verification from {self.kernels.brief()}"

    def describe(self) -> str:
        return (
            f"hybrid: decode and draft steps and prompts from the {self.roofline.describe()}; verification / decode ratio from "
            f"{self.kernels.describe()[len('kernels: ') :]}"
        )

    def step_time(
        self,
        model: ModelShape,
        batch: object = 1,
        tokens_per_seq: object = 1,
        context: object = 0,
        prompt: bool = False,
    ) -> StepTime:
        if prompt:
            # A prompt's pass is the roofline's own: the kernels' ratio of a verification pass to a decode step carries
            # a memory-bound step's calibration; a long prompt is compute-bound, and scaling it by that ratio moved the
            # public-rows fit's held-out error from 9.3% to 12.4% (benchmarks/validate_steptimes.py).
            roof = self.roofline.step_time(model, batch, tokens_per_seq, context, prompt)
            return dataclasses.replace(roof, source=self.name)
        # A round asks for its decode step, then its verification's ratio to it at the same batch and context: the
        # last decode step of each model is kept (the kernels' passes in the order they came, which their notes keep).
        key = tuple((a.shape, a.tobytes()) for a in (np.asarray(batch, float), np.asarray(context, float)))
        kept = self._decode_steps.get(id(model))
        decode, k1, own1 = kept[2] if kept is not None and kept[0] is model and kept[1] == key else (None, None, None)
        decode = self.roofline.step_time(model, batch, 1, context) if decode is None else decode
        b, q = np.asarray(batch, float), np.asarray(tokens_per_seq, float)
        if np.all(q == 1):  # a decode or draft step: the pass is its own decode step
            roof = decode
            if np.ndim(tokens_per_seq):
                k = k1 = self.kernels.step_time(model, batch, tokens_per_seq, context)
                own1 = None
            else:
                k = k1 = self._kernels(decode, model, batch, 1, context) if k1 is None else k1
        else:
            roof = self.roofline.step_time(model, batch, tokens_per_seq, context, prompt)
            k = self._kernels(roof, model, batch, tokens_per_seq, context)
            k1 = self._kernels(decode, model, batch, 1, context) if k1 is None else k1
        # The ratio is of the passes as the roofline prices them (module docstring): each pass's GEMMs untiled and its
        # collectives apart, the roofline's added after.  At q = 1 both are the same pass: ratio 1, the roofline's step.
        own = self._untiled_own_s(model, b * q, k)
        if own1 is None:
            own1 = own if k is k1 and not np.ndim(tokens_per_seq) else self._untiled_own_s(model, b, k1)
        if not np.ndim(tokens_per_seq) or not np.all(q == 1):
            if len(self._decode_steps) >= _MODELS_KEPT:
                self._decode_steps.clear()  # (a source asked of many models keeps no more than a few of them)
            self._decode_steps[id(model)] = (model, key, (decode, k1, own1))  # the model kept: its id is not reused
        # (b, q, L)-shaped, as total is.  Never under 1: a pass of q tokens does more work than a decode step (the kernel
        # source's own floor, which its collectives, measured a few percent apart run to run, no longer carry here).
        ratio = np.maximum(own / own1, 1.0)
        fb = np.zeros(np.shape(ratio), bool)
        for part in (k.fallback, k1.fallback):
            if part is not None:
                fb |= part
        if fb.any():  # where either pass left the data, the roofline's own ratio (never a roofline over a kernel sum)
            ratio = np.where(fb, (roof.total_s - roof.comm_s) / (decode.total_s - decode.comm_s), ratio)
        total = (decode.total_s - decode.comm_s) * ratio + roof.comm_s
        return dataclasses.replace(roof, total_s=total, source=self.name, fallback=fb if fb.any() else None)

    def _kernels(self, roof: StepTime | None, model: ModelShape, batch, tokens_per_seq, context) -> StepTime:
        """The kernels' pass, given ``roof``, the roofline's of the same arguments where this source has it: where the
        roofline is the kernel source's own (a :class:`RooflineSource` of the same profile, whose passes it falls back
        to), those are the passes it would time again (:meth:`KernelSource.step_time`'s ``roof``): half the roofline's
        work of a verification pass, the same answer to the bit."""
        own = (
            roof is not None
            and type(self.roofline) is RooflineSource
            and isinstance(self.kernels, KernelSource)
            and self.roofline.hardware is self.kernels.hardware
        )
        if own:
            return self.kernels.step_time(model, batch, tokens_per_seq, context, roof=roof)
        return self.kernels.step_time(model, batch, tokens_per_seq, context)

    def _untiled_own_s(self, model: ModelShape, tokens: np.ndarray, k: StepTime) -> np.ndarray:
        """The kernels' pass ``k`` of ``tokens`` tokens (b q) without its collectives and with its GEMMs untiled: less
        what the measured GEMMs take over their line's lower convex hull
        (:meth:`~specsim.timing.kernels.KernelTable.gemm_hull`), seconds.  Where ``k`` left the data it is the
        roofline's, which has no tiles.

        Kept with the kernels' passes where they are kept (a :class:`~specsim.timing.memo.MemoSource`, as a fit's
        deployments have, one hybrid source a scale sharing it: :func:`specsim.calibration.model.memoised`): a fit asks
        for the same decode steps at every efficiency scale it tries, and neither the kernels' pass nor its tiles change
        with the scale (about a fifth of the hybrid source's CPU in tests/test_calibration.py)."""
        tokens = np.asarray(tokens, dtype=float)
        key = ("untiled own s", id(k), tokens.shape, tokens.tobytes())
        kept = None if self._untiled is None else self._untiled.get(key)
        if kept is not None and kept[0] is k:  # (the pass kept with it: its id is not reused while it is a key)
            return kept[1]
        table = self.kernels.table(model)
        tiles = 0.0 if table is None else np.nan_to_num(table.gemm(tokens) - table.gemm_hull(tokens))
        if k.fallback is not None:
            tiles = np.where(k.fallback, 0.0, tiles)
        own = k.total_s - k.comm_s - tiles
        if self._untiled is not None:  # (elsewhere each pass is a new one: none is asked again)
            if len(self._untiled) >= _UNTILED_KEPT:
                self._untiled.clear()
            if isinstance(own, np.ndarray):
                own.flags.writeable = False  # one array for every caller
            self._untiled[key] = (k, own)
        return own
