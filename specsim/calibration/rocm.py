"""vLLM's ROCm build on AMD Instinct: its pass overhead and its round's host terms, fitted to AMD's published MI355X
sweeps and judged on the sweep left out.

The measurements (``specsim/calibration/data/moe_rocm_sweeps.csv``) are the vLLM blog post by AMD, "EAGLE3
Speculative Decoding on AMD Instinct GPUs" (2026-07-13, revised 2026-08-04, figures 4 and 5): output throughput per
GPU with and without an EAGLE-3 head at concurrency 4-64, 1024 prompt and 1024 output tokens of random prompts, on
4 x MI355X at TP 4, for Kimi-K2.5 (MXFP4, the DeepSeek-V3 architecture with 384 experts; vLLM ROCm 0.19.0, 7 draft
tokens) and MiniMax-M2.5 (FP8, 256 experts; a ROCm nightly of 2026-07, 3 draft tokens).  Both speedups fall from
concurrency 4 to 64 (Kimi 1.89 to 1.69, MiniMax 1.80 to 1.38), where every CUDA preset, with any routing
correlation, predicts them to rise again past 16: decode at 64 sequences already reads most experts, so verifying
gamma + 1 tokens per sequence reads few more.

Two fits, in this order:

1. The plain step: the plain rows (a decode step is ``c / (throughput per GPU x TP)``: prefill is inside the measured
   throughput, about 1% of the time at 1024 tokens) fit the ``mi355x`` profile's bandwidth efficiency and vLLM ROCm's
   engine time per tensor-parallel collective, by least squares on the relative error, both sources together.  A
   step at concurrency 4 takes 12 ms where the weights it reads take 2: the rest is fixed per pass, and is put on the
   collectives (2 per layer and the logits gather, 123-127 a pass here) because both sweeps ran at TP 4 and a
   one-GPU step on these builds is not measured; a per-pass overhead fits the same rows as well and would also
   charge one-GPU deployments.
2. The round: with that profile, the speculative rows fit vLLM ROCm's host terms per draft step and per sequence per
   draft step (:class:`~specsim.engines.SpecHost`, counted as time the round waits for), and the acceptance length of
   a source that does not publish it (MiniMax), by least squares on the relative error of the speedup.

What is reported is each source's speedups with the round terms fitted on the *other* source alone (its profile
fitted on both sources' plain rows: the plain rows are not what is judged).  The terms shipped
(:data:`specsim.engines.vllm.ROCM_SPEC`, ``ROCM_COLLECTIVE_S`` and the profile's ``bandwidth_eff``) are the fit on
both; ``tests/test_moe_rocm.py`` holds them to it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from specsim.core.workloads import mean_context_tokens
from specsim.describe.hardware import HardwareProfile, load_hardware
from specsim.engines import EnginePreset, SpecHost, get_engine
from specsim.engines.vllm import rocm_build
from specsim.speculation.acceptance import alpha_from_acceptance_length
from specsim.speculation.deployment import Deployment, speedup_of

__all__ = ["DATA", "RocmFit", "evaluate", "fit_plain", "fit_round", "load_sweeps", "rocm_engine", "speedups"]

DATA = Path(__file__).resolve().parent / "data" / "moe_rocm_sweeps.csv"
PROFILE = "mi355x"


def load_sweeps(path: Path = DATA) -> pd.DataFrame:
    """The sweeps, one row per source and concurrency, with the measured decode step (ms) and speedup."""
    frame = pd.read_csv(path)
    frame["plain_step_ms"] = 1e3 * frame.concurrency / (frame.plain_tok_s_gpu * frame.tp)
    frame["speedup"] = frame.spec_tok_s_gpu / frame.plain_tok_s_gpu
    frame["context"] = mean_context_tokens(frame.input_tokens, frame.output_tokens)
    return frame


def rocm_engine(version: str, collective_s: float, spec: SpecHost | None) -> EnginePreset:
    """vLLM ``version`` as its ROCm build runs it with these terms (:func:`specsim.engines.vllm.rocm_build`); a nightly
    is modelled on vllm@0.24.0."""
    return rocm_build(get_engine(f"vllm@{version}" if version[0].isdigit() else "vllm@0.24.0"), spec, collective_s)


def _deployment(rows: pd.DataFrame, profile: HardwareProfile, engine: EnginePreset) -> Deployment:
    first = rows.iloc[0]
    return Deployment.build(
        profile,
        first.target,
        first.drafter,
        engine=engine,
        target_options={"tp": int(first.tp), "weight_dtype": first.weight_dtype},
        draft_options={"weight_dtype": first.draft_dtype},
    )


def fit_plain(frame: pd.DataFrame, base: HardwareProfile | None = None) -> tuple[HardwareProfile, float]:
    """(the profile with its fitted bandwidth efficiency, vLLM ROCm's engine seconds per collective) that fit the
    plain rows of ``frame`` best."""
    base = load_hardware(PROFILE) if base is None else base

    def residuals(p):
        profile = dataclasses.replace(base, bandwidth_eff=float(min(p[1], 1.0)))
        out = []
        for _, rows in frame.groupby("source", sort=False):
            dep = _deployment(rows, profile, rocm_engine(rows.engine_version.iloc[0], p[0] * 1e-6, None))
            model = dep.decode(rows.concurrency.to_numpy(float), rows.context.to_numpy(float)).total_s * 1e3
            out.append(model / rows.plain_step_ms.to_numpy() - 1)
        return np.concatenate(out)

    fit = least_squares(
        residuals, [30.0, base.bandwidth_eff], bounds=([0, 0.05], [1000, 1.0]), xtol=1e-12, ftol=1e-12, gtol=1e-12
    )
    return dataclasses.replace(base, bandwidth_eff=float(fit.x[1])), float(fit.x[0] * 1e-6)


def speedups(
    rows: pd.DataFrame, profile: HardwareProfile, collective_s: float, spec: SpecHost | None, accept_length: float
) -> np.ndarray:
    """The model's speedup AL * t_decode / t_round at each row's concurrency, with ROCm's ``collective_s`` and round
    terms ``spec`` (None: the CUDA preset's round as shipped)."""
    dep = _deployment(rows, profile, rocm_engine(rows.engine_version.iloc[0], collective_s, spec))
    c, ctx, k = rows.concurrency.to_numpy(float), rows.context.to_numpy(float), float(rows.steps.iloc[0])
    decode = dep.decode(c, ctx).total_s
    rnd = dep.round_time(c, ctx, k).total_s
    return speedup_of(accept_length, decode, rnd)


def _published_length(rows: pd.DataFrame) -> float | None:
    value = rows.accept_length.iloc[0]
    return None if pd.isna(value) else float(value)


def fit_round(frame: pd.DataFrame, profile: HardwareProfile, collective_s: float) -> tuple[SpecHost, dict[str, float]]:
    """(round terms, acceptance length per source) fitted to the speculative rows of ``frame``: the per-draft-step
    and per-sequence-per-draft-step terms, and the length of each source that does not publish its own."""
    groups = list(frame.groupby("source", sort=False))
    free = [name for name, rows in groups if _published_length(rows) is None]

    def unpack(p):
        lengths = {name: _published_length(rows) for name, rows in groups}
        lengths.update(dict(zip(free, p[2:])))
        return SpecHost(step_s=p[0] * 1e-3, seq_step_s=p[1] * 1e-6), lengths

    def residuals(p):
        spec, lengths = unpack(p)
        return np.concatenate(
            [
                speedups(rows, profile, collective_s, spec, lengths[name]) / rows.speedup.to_numpy() - 1
                for name, rows in groups
            ]
        )

    start = [0.4, 50.0] + [2.5] * len(free)
    fit = least_squares(
        residuals,
        start,
        bounds=([0, 0] + [1.0] * len(free), [20, 1000] + [9.0] * len(free)),
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
    )
    return unpack(fit.x)


@dataclass(frozen=True)
class RocmFit:
    """The fitted profile and collective time, the round terms fitted on all sources, and each source's held-out
    speedups."""

    profile: HardwareProfile
    collective_s: float
    spec: SpecHost
    lengths: dict
    #: One row per source and concurrency: measured speedup, held out (round terms fitted on the other source; a
    #: source's unpublished acceptance length fitted at its lowest concurrency alone), and the CUDA preset's.
    table: pd.DataFrame

    def error(self, column: str = "held_out") -> pd.Series:
        """Mean absolute relative error per source, percent."""
        t = self.table
        return ((t[column] / t.measured - 1).abs() * 100).groupby(t.source, sort=False).mean()


def _length_at_first(rows: pd.DataFrame, profile: HardwareProfile, collective_s: float, spec: SpecHost | None) -> float:
    """The acceptance length that gives the measured speedup at the source's lowest concurrency (as issue 29 fitted
    alpha at concurrency 4), with round terms ``spec``."""
    first = rows.iloc[:1]
    return float(rows.speedup.iloc[0] / speedups(first, profile, collective_s, spec, 1.0)[0])


def evaluate(frame: pd.DataFrame | None = None) -> RocmFit:
    """Both fits and the held-out comparison (see the module docstring)."""
    frame = load_sweeps() if frame is None else frame
    profile, coll = fit_plain(frame)
    spec, lengths = fit_round(frame, profile, coll)
    parts = []
    for name, rows in frame.groupby("source", sort=False):
        held_spec, _ = fit_round(frame[frame.source != name], profile, coll)
        length = _published_length(rows) or _length_at_first(rows, profile, coll, held_spec)
        cuda_length = _published_length(rows) or _length_at_first(rows, profile, coll, None)
        parts.append(
            rows.assign(
                measured=rows.speedup,
                held_out=speedups(rows, profile, coll, held_spec, length),
                fitted=speedups(rows, profile, coll, spec, lengths[name]),
                cuda=speedups(rows, profile, coll, None, cuda_length),
                held_out_length=length,
                alpha=float(alpha_from_acceptance_length(length, float(rows.steps.iloc[0]))),
            )
        )
    return RocmFit(profile, coll, spec, lengths, pd.concat(parts, ignore_index=True))
