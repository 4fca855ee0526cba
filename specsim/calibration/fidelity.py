"""How well each step-time source predicts what serving engines measure.

The public measurements are the single-GPU rows of ``silicon_sample.csv``,
which ``aiconfigurator-core`` ships (Apache-2.0): per-token latency (TPOT) of
vLLM, SGLang and TensorRT-LLM serving Llama-3.1-8B-Instruct and Qwen3-32B on
H100 SXM and H200 at a fixed concurrency, for several prompt (ISL) and output
(OSL) lengths, with the engine version and date of each run.

A measured TPOT under a steady concurrency ``c`` is a decode step of ``c``
sequences at the mean context plus the prefills that interleave with it:
every request is replaced after OSL tokens, so each decode iteration carries
on average ``c / OSL`` prompt prefills of ISL tokens (chunked prefill spreads
them over iterations; their sum is what a token waits for on average):

    TPOT = t(c, 1, ISL + OSL / 2) + engine_iteration + share * (c / OSL) * t_prefill(ISL)

``share`` is how much of that prefill work lands inside other requests'
decode: 1 when the engine mixes prefill chunks into decode iterations as
requests come and go (TensorRT-LLM's in-flight batching fits it), 0 when
requests of one length run in lockstep (a fixed-concurrency benchmark starts
them together, so every prefill falls in the TTFT) or the engine runs prefill
as separate batches.  The engine's per-iteration time and this share are the
two free parameters per (source, engine); they are fitted on a training half
of the rows (least squares on relative error, both bounded: time in [0, 5] ms,
share in [0, 1]) and judged on the other half, split by a hash of the row id
so that the split is fixed and independent of row order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from specsim.core.workloads import mean_context_tokens
from specsim.describe.hardware import load_hardware
from specsim.describe.models import get_model
from specsim.describe.parallel import collective_count
from specsim.timing import make_source
from specsim.timing.roofline import step_time

__all__ = [
    "CANDIDATES",
    "OUT_OF_SAMPLE_MODELS",
    "PUBLIC_MODELS",
    "SERVING_BOUNDS",
    "FidelityResult",
    "LARGE_MOE_MODELS",
    "ServingFit",
    "evaluate",
    "evaluate_out_of_sample",
    "evaluate_serving",
    "fit_collectives",
    "held_out_by_id",
    "judge_large_moe",
    "large_moe_bias",
    "load_large_moe_tpot",
    "load_out_of_sample_tpot",
    "load_public_tpot",
    "predict_tpot",
    "serving_parts",
]

#: model_path in silicon_sample.csv -> specsim built-in.
PUBLIC_MODELS = {"meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b", "Qwen/Qwen3-32B": "qwen3-32b"}
#: system in silicon_sample.csv -> specsim profile.
PUBLIC_SYSTEMS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "a100_sxm": "a100-sxm-80gb"}
_PRECISIONS = {"bf16": "bf16", "fp8": "fp8"}


def silicon_sample_path() -> Path:
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            "the public TPOT measurements ship with aiconfigurator-core; pip install 'aiconfigurator-core==0.12.0'"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "systems" / "silicon_sample.csv"


def held_out_by_id(ids: object) -> list[bool]:
    """Which rows are judged, not fitted: those whose id's sha256 is odd.  The one split of every public TPOT table
    here, fixed by the ids alone (independent of row order and of which rows a loader keeps).

    >>> held_out_by_id([1, 2, 3])
    [True, True, False]
    """
    return [int(hashlib.sha256(str(i).encode()).hexdigest(), 16) % 2 == 1 for i in ids]


def load_public_tpot(path: str | Path | None = None) -> pd.DataFrame:
    """Single-GPU, aggregated-serving TPOT rows for the models and devices specsim describes."""
    df = pd.read_csv(silicon_sample_path() if path is None else path)
    df = df[
        _one_stage_aggregated(df)
        & (df["tp_size"] == 1)
        & df["model_path"].isin(PUBLIC_MODELS)
        & df["system"].isin(PUBLIC_SYSTEMS)
    ].copy()
    # A missing precision is the checkpoint's own bf16 (the GEMM quant mode is empty on those rows too).
    df["precision"] = df["precision"].fillna("bf16")
    df = df[df["precision"].isin(_PRECISIONS) & df["silicon_tpot_ms"].notna() & (df["batch_size"] >= 1)]
    df["model"] = df["model_path"].map(PUBLIC_MODELS)
    df["hardware"] = df["system"].map(PUBLIC_SYSTEMS)
    df["concurrency"] = df["batch_size"].astype(int)
    df["holdout"] = held_out_by_id(df["id"])
    keep = [
        "id",
        "backend",
        "backend_version",
        "model",
        "hardware",
        "precision",
        "isl",
        "osl",
        "concurrency",
        "silicon_tpot_ms",
        "silicon_ttft_ms",
        "holdout",
        "silicon_data_source",
    ]
    return df[keep].reset_index(drop=True)


#: Candidate step-time sources: name -> (source kind, profile suffix).
CANDIDATES = {
    "roofline (article profile)": ("roofline", ""),
    "roofline (kernel-calibrated *-vllm profile)": ("roofline", "-vllm"),
    "kernels": ("kernels", ""),
    "hybrid (default)": ("hybrid", ""),
}


#: Rows the fit never sees: multi-GPU (tensor-parallel) and mixture-of-experts deployments of catalog models.
#: model_path -> (specsim built-in, {precision in the CSV: weight dtype, None for the checkpoint's own}).
OUT_OF_SAMPLE_MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": ("llama-3.1-8b", {"bf16": "bf16", "fp8": "fp8"}),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ("llama-3.1-8b", {"fp8": "fp8"}),
    "Qwen/Qwen3-32B": ("qwen3-32b", {"bf16": "bf16", "fp8": "fp8"}),
    "meta-llama/Llama-3.1-70B": ("llama-3.1-70b", {"bf16": "bf16", "fp8": "fp8"}),
    "openai/gpt-oss-120b": ("gpt-oss-120b", {"fp4": "checkpoint"}),  # its own: MXFP4 experts, bf16 attention
}


def _one_stage_aggregated(df: pd.DataFrame) -> pd.Series:
    """The rows of one aggregated serving instance that specsim describes: prefill and decode on the same GPUs, one
    pipeline stage, no attention data parallelism and no expert parallelism (tensor parallelism only)."""
    return (
        (df["mode"] == "agg")
        & (df["pp_size"].fillna(1) == 1)
        & (df["attention_dp_size"].fillna(1) <= 1)
        & (df["moe_ep_size"].fillna(1) <= 1)
    )


def load_out_of_sample_tpot(path: str | Path | None = None) -> pd.DataFrame:
    """Public TPOT rows of the tensor-parallel and MoE deployments specsim now describes (no expert or
    attention data parallelism, one pipeline stage), on the devices it has profiles for."""
    df = pd.read_csv(silicon_sample_path() if path is None else path)
    df["precision"] = df["precision"].fillna("bf16")
    keep = (
        _one_stage_aggregated(df)
        & df["model_path"].isin(OUT_OF_SAMPLE_MODELS)
        & df["system"].isin(PUBLIC_SYSTEMS)
        & df["silicon_tpot_ms"].notna()
        & (df["batch_size"] >= 1)
    )
    df = df[keep].copy()
    df["model"] = df["model_path"].map(lambda p: OUT_OF_SAMPLE_MODELS[p][0])
    df["weight_dtype"] = [
        OUT_OF_SAMPLE_MODELS[p][1].get(prec, "unmodelled") for p, prec in zip(df["model_path"], df["precision"])
    ]
    df = df[df["weight_dtype"] != "unmodelled"]
    df["tp"] = df["tp_size"].astype(int)
    # The single-GPU dense rows are the fit's own data (load_public_tpot); leave them out here.
    df = df[(df["tp"] > 1) | (df["model"] == "gpt-oss-120b") | (df["model"] == "llama-3.1-70b")]
    df["hardware"] = df["system"].map(PUBLIC_SYSTEMS)
    df["concurrency"] = df["batch_size"].astype(int)
    # Concurrency above 256 is capped by the engines' max_num_seqs / memory in these runs (TPOT falls as
    # concurrency rises): the running batch is unknown, so those rows cannot be predicted and are left out.
    df = df[df["concurrency"] <= 256]
    df["holdout"] = held_out_by_id(df["id"])
    keep_cols = [
        "id",
        "backend",
        "backend_version",
        "model",
        "hardware",
        "precision",
        "weight_dtype",
        "tp",
        "isl",
        "osl",
        "concurrency",
        "silicon_tpot_ms",
        "holdout",
        "silicon_data_source",
    ]
    return df[keep_cols].reset_index(drop=True)


def _row_model(model_name: str, precision: str, row_dtype: object, tp: int):
    """The row's model, as :func:`_row_options` reads the row."""
    return get_model(model_name, **_row_options(precision, tp, row_dtype))


def predict_tpot(df: pd.DataFrame, candidate: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode step and amortised prefill per token (seconds) of every row, without engine time."""
    kind, suffix = CANDIDATES[candidate]
    out = np.full(len(df), np.nan)
    pre = np.full(len(df), np.nan)
    df = df.assign(
        tp=df["tp"].fillna(1) if "tp" in df else 1,
        weight_dtype=df["weight_dtype"].fillna("") if "weight_dtype" in df else "",
    )
    for (hw_name, backend, model_name, precision, tp, row_dtype), rows in df.groupby(
        ["hardware", "backend", "model", "precision", "tp", "weight_dtype"]
    ):
        hardware = load_hardware(hw_name + suffix)
        model = _row_model(model_name, precision, row_dtype, int(tp))
        src = make_source(kind, hardware, backend)
        c = rows["concurrency"].to_numpy(float)
        isl = rows["isl"].to_numpy(float)
        osl = rows["osl"].to_numpy(float)
        decode = src.step_time(model, c, 1, mean_context_tokens(isl, osl)).total_s
        if kind == "kernels":
            prefill = src.prefill_time(model, isl)
        else:
            prefill = step_time(hardware, model, 1, isl, 0).total_s
        idx = df.index.get_indexer(rows.index)
        out[idx] = decode
        pre[idx] = (c / osl) * prefill
    return out, pre


@dataclass(frozen=True)
class FidelityResult:
    """Per-row predictions and errors, and the fitted engine times, of one candidate."""

    candidate: str
    rows: pd.DataFrame  # with predicted_ms, error (signed fraction), holdout
    engine_iteration_s: dict  # backend -> fitted seconds
    prefill_share: dict  # backend -> fitted share of interleaved prefill

    def mape(self, holdout: bool | None = True, by: str | None = None):
        rows = self.rows if holdout is None else self.rows[self.rows["holdout"] == holdout]
        err = rows["error"].abs() * 100
        return err.mean() if by is None else err.groupby(rows[by]).mean()


def evaluate(df: pd.DataFrame, candidate: str, fit_engine: bool = True) -> FidelityResult:
    """Fit each engine's per-iteration time and prefill share on the training rows; errors on all rows.

    With ``fit_engine=False`` no engine time is added and every prefill counts (share 1).
    """
    from scipy.optimize import least_squares

    decode, prefill = predict_tpot(df, candidate)
    measured = df["silicon_tpot_ms"].to_numpy(float) / 1e3
    fitted, shares = {}, {}
    pred = decode + prefill
    holdout = df["holdout"].to_numpy()

    def fit(train: np.ndarray) -> np.ndarray:
        res = least_squares(
            lambda th: (decode[train] + th[0] + th[1] * prefill[train]) / measured[train] - 1,
            x0=[1e-3, 0.5],
            bounds=([0.0, 0.0], [5e-3, 1.0]),
        )
        return res.x

    all_train = np.flatnonzero(~holdout)
    pooled = fit(all_train) if fit_engine and all_train.size >= 2 else np.array([0.0, 1.0])
    fitted["pooled"], shares["pooled"] = float(pooled[0]), float(pooled[1])
    for backend, rows in df.groupby("backend"):
        idx = df.index.get_indexer(rows.index)
        train = idx[~holdout[idx]]
        theta = np.array([0.0, 1.0])
        if fit_engine:
            # An engine with fewer than two training rows takes the fit pooled over all engines.
            theta = fit(train) if train.size >= 2 else pooled
        fitted[backend], shares[backend] = float(theta[0]), float(theta[1])
        pred[idx] = decode[idx] + theta[0] + theta[1] * prefill[idx]
    out = df.copy()
    out["predicted_ms"] = pred * 1e3
    out["error"] = pred / measured - 1
    return FidelityResult(candidate, out, fitted, shares)


def _collective_counts(df: pd.DataFrame) -> np.ndarray:
    return np.array([collective_count(get_model(m, tp=int(tp))) for m, tp in zip(df["model"], df["tp"])], float)


def fit_collectives(df: pd.DataFrame, candidate: str, fitted: FidelityResult) -> dict:
    """Per engine, the extra time per tensor-parallel collective that the multi-GPU training rows show.

    The single-GPU engine time and prefill share stay as ``fitted``; one parameter per engine is fitted by least
    squares on relative error over the rows with ``holdout`` False and ``tp`` > 1 (bounded to [0, 1] ms).
    """
    from scipy.optimize import least_squares

    decode, prefill = predict_tpot(df, candidate)
    base = decode + _engine_terms(df, fitted, prefill)
    measured = df["silicon_tpot_ms"].to_numpy(float) / 1e3
    counts = _collective_counts(df)
    out = {}
    for backend, rows in df.groupby("backend"):
        idx = df.index.get_indexer(rows.index)
        idx = idx[~df["holdout"].to_numpy(bool)[idx] & (counts[idx] > 0)]
        if idx.size < 2:
            continue
        res = least_squares(
            lambda th: (base[idx] + th[0] * counts[idx]) / measured[idx] - 1, x0=[1e-5], bounds=([0.0], [1e-3])
        )
        out[backend] = float(res.x[0])
    return out


def _engine_terms(df: pd.DataFrame, fitted: FidelityResult, prefill: np.ndarray) -> np.ndarray:
    engine = np.array([fitted.engine_iteration_s.get(b, fitted.engine_iteration_s["pooled"]) for b in df["backend"]])
    share = np.array([fitted.prefill_share.get(b, fitted.prefill_share["pooled"]) for b in df["backend"]])
    return engine + share * prefill


def evaluate_out_of_sample(
    df: pd.DataFrame, candidate: str, fitted: FidelityResult, collective_s: dict | None = None
) -> pd.DataFrame:
    """Predict multi-GPU and MoE rows with the engine time and prefill share fitted on single-GPU dense rows.

    ``collective_s`` (per engine, seconds per tensor-parallel collective) adds :func:`fit_collectives`'
    engine term; without it the rows are judged with the physics alone.  Returns the rows with
    ``predicted_ms`` and ``error``.
    """
    decode, prefill = predict_tpot(df, candidate)
    extra = np.array([(collective_s or {}).get(b, 0.0) for b in df["backend"]]) * _collective_counts(df)
    pred = decode + _engine_terms(df, fitted, prefill) + extra
    out = df.copy()
    out["predicted_ms"] = pred * 1e3
    out["error"] = pred / (df["silicon_tpot_ms"].to_numpy(float) / 1e3) - 1
    return out


def _row_engine(backend: str, version: str):
    """The preset of the release a row was measured on (``sglang@0.5.8.post1``): its default limits are the engine's."""
    from specsim.engines import get_engine

    return get_engine(f"{backend}@{version}")


def _row_options(precision: str, tp: int = 1, row_dtype: object = "") -> dict:
    """A public row's target options: ``row_dtype`` "checkpoint" keeps the checkpoint's own dtypes, another names the
    weights', empty falls back to the precision's.  The rows do not record the KV cache's dtype: bf16, the engines'
    default for these checkpoints."""
    options = {"kv_dtype": "bf16", "tp": tp}
    if row_dtype == "checkpoint":
        return options
    return options | {"weight_dtype": row_dtype if isinstance(row_dtype, str) and row_dtype else _PRECISIONS[precision]}


def _deployment(hardware, model_name: str, options: dict, kind: str, preset):
    from specsim.speculation.deployment import Deployment

    return Deployment.build(hardware, model_name, timing=kind, engine=preset, target_options=options, decode_only=True)


#: Bounds of the serving model's fit: the engine's time per iteration (s) and its prefill efficiency.
SERVING_BOUNDS = ((0.0, 5e-3), (0.2, 5.0))


def serving_parts(df: pd.DataFrame, candidate: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the plain TPOT (seconds) the one serving model gives (:func:`specsim.serving.steady.served_state`, as
    ``specsim optimal-gamma --concurrency N --input-len ISL --output-len OSL`` answers: a closed loop of the row's users
    with its fixed lengths, the engine's own limits and KV cache on the GPU) with the engine's per-iteration time at 0 and
    its prefill efficiency at 1; and what one second per iteration and a prefill efficiency of 1/2 add to it.  A closed
    loop's TPOT is linear in both (its population does not depend on time), so ``base + it * per_iteration +
    (1 / scale - 1) * per_prefill`` is the TPOT at any (it, scale)."""
    from specsim.serving.steady import served_state

    kind, suffix = CANDIDATES[candidate]
    out = np.full((3, len(df)), np.nan)
    keys = ["hardware", "backend", "backend_version", "model", "precision", "isl", "osl"]
    for (hw_name, backend, version, model_name, precision, isl, osl), rows in df.groupby(keys):
        engine = _row_engine(backend, version)
        for k, (it, scale) in enumerate(((0.0, 1.0), (1.0, 1.0), (0.0, 0.5))):
            preset = dataclasses.replace(engine, iteration_s=it, kernel_iteration_s=it, prefill_scale=scale)
            dep = _deployment(load_hardware(hw_name + suffix), model_name, _row_options(precision), kind, preset)
            loads = rows["concurrency"].to_numpy(float)
            state = served_state(dep, 0.0, [0], loads, float(isl), float(osl))
            out[k, df.index.get_indexer(rows.index)] = np.asarray(state.tpot_s, dtype=float)[0]
    return out[0], out[1] - out[0], out[2] - out[0]


@dataclass(frozen=True)
class ServingFit:
    """The public rows under the one serving model: per engine the fitted per-iteration time and prefill efficiency,
    which of them ended on a bound, and every row's prediction and error."""

    candidate: str
    rows: pd.DataFrame  # with predicted_ms, error (signed fraction), holdout
    iteration_s: dict  # backend -> seconds
    prefill_scale: dict  # backend -> efficiency
    at_bound: dict  # backend -> names of the terms on a bound

    def mape(self, holdout: bool | None = True, by: str | None = None):
        rows = self.rows if holdout is None else self.rows[self.rows["holdout"] == holdout]
        err = rows["error"].abs() * 100
        return err.mean() if by is None else err.groupby(rows[by]).mean()


def evaluate_serving(df: pd.DataFrame, candidate: str) -> ServingFit:
    """Fit each engine's per-iteration time and prefill efficiency (:attr:`EnginePreset.prefill_scale`) under the one
    serving model on the training rows (least squares on relative error, within :data:`SERVING_BOUNDS`; an engine with
    fewer than two training rows takes the fit pooled over all); errors on all rows."""
    from scipy.optimize import least_squares

    base, per_it, per_pf = serving_parts(df, candidate)
    measured = df["silicon_tpot_ms"].to_numpy(float) / 1e3
    holdout = df["holdout"].to_numpy()
    (lo_it, hi_it), (lo_s, hi_s) = SERVING_BOUNDS

    def predict(theta, idx):
        return base[idx] + theta[0] * per_it[idx] + (1.0 / theta[1] - 1.0) * per_pf[idx]

    def fit(train):
        res = least_squares(
            lambda th: predict(th, train) / measured[train] - 1, x0=[1e-3, 1.0], bounds=([lo_it, lo_s], [hi_it, hi_s])
        )
        return res.x

    def bound(theta):
        names = ("per iteration", "prefill efficiency")
        lows, highs = (lo_it, lo_s), (hi_it, hi_s)
        return [
            n
            for n, v, lo, hi in zip(names, theta, lows, highs)
            if abs(v - lo) < 1e-6 * max(hi, 1) or abs(v - hi) < 1e-6 * max(hi, 1)
        ]

    pooled = fit(np.flatnonzero(~holdout))
    its, scales, at = {"pooled": float(pooled[0])}, {"pooled": float(pooled[1])}, {"pooled": bound(pooled)}
    pred = np.empty(len(df))
    for backend, rows in df.groupby("backend"):
        idx = df.index.get_indexer(rows.index)
        train = idx[~holdout[idx]]
        theta = fit(train) if train.size >= 2 else pooled
        its[backend], scales[backend], at[backend] = float(theta[0]), float(theta[1]), bound(theta)
        pred[idx] = predict(theta, idx)
    out = df.copy()
    out["predicted_ms"] = pred * 1e3
    out["error"] = pred / measured - 1
    return ServingFit(candidate, out, its, scales, at)


#: Large mixture-of-experts targets (10B active parameters or more) that the public rows serve at tensor parallelism:
#: model_path -> specsim built-in.  No fit sees them; they judge the shipped presets' plain step.
LARGE_MOE_MODELS = {
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",  # the same architecture and shapes (config.json)
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
}
#: The devices of those rows that specsim has profiles for.
LARGE_MOE_SYSTEMS = PUBLIC_SYSTEMS | {"b200_sxm": "b200"}


def load_large_moe_tpot(path: str | Path | None = None) -> pd.DataFrame:
    """Public plain TPOT rows of :data:`LARGE_MOE_MODELS` at tensor parallelism 2-8 (no expert or attention data
    parallelism, one pipeline stage) on the devices of :data:`LARGE_MOE_SYSTEMS`, at concurrency 1-256 (above, the
    engines' limits cap the running batch in these runs: see :func:`load_out_of_sample_tpot`), with BF16 or FP8 weights
    (the FP4 rows are left out), measured on a release specsim has a preset for (rows of nightly builds or with no
    version are left out)."""
    df = pd.read_csv(silicon_sample_path() if path is None else path)
    df["precision"] = df["precision"].fillna("bf16")
    keep = (
        _one_stage_aggregated(df)
        & (df["tp_size"].fillna(1) >= 2)
        & df["model_path"].isin(LARGE_MOE_MODELS)
        & df["system"].isin(LARGE_MOE_SYSTEMS)
        & df["precision"].isin(_PRECISIONS)
        & df["silicon_tpot_ms"].notna()
        & df["batch_size"].between(1, 256)
        & df["backend_version"].notna()
    )
    df = df[keep].copy()

    def preset_known(backend: str, version: str) -> bool:
        try:
            _row_engine(backend, version)
        except ValueError:
            return False
        return True

    known = {k: preset_known(*k) for k in set(zip(df["backend"], df["backend_version"]))}
    df = df[[known[k] for k in zip(df["backend"], df["backend_version"])]]
    # The sample repeats some measurements under other ids (the same TPOT to 0.01 ms): each counts once.
    df["tpot_key"] = df["silicon_tpot_ms"].round(1)
    config = ["backend", "backend_version", "model_path", "system", "precision", "tp_size", "isl", "osl", "batch_size"]
    df = df.drop_duplicates(config + ["tpot_key"])
    df["model"] = df["model_path"].map(LARGE_MOE_MODELS)
    df["weight_dtype"] = df["precision"].map(_PRECISIONS)
    df["hardware"] = df["system"].map(LARGE_MOE_SYSTEMS)
    df["tp"] = df["tp_size"].astype(int)
    df["concurrency"] = df["batch_size"].astype(int)
    keep_cols = ["id", "backend", "backend_version", "model", "hardware", "precision", "weight_dtype", "tp", "isl",
                 "osl", "concurrency", "silicon_tpot_ms", "silicon_data_source"]  # fmt: skip
    return df[keep_cols].reset_index(drop=True)


def judge_large_moe(df: pd.DataFrame, candidate: str = "hybrid (default)") -> pd.DataFrame:
    """The shipped presets' plain TPOT of each row under the one serving model (as ``specsim optimal-gamma --concurrency
    N --input-len ISL --output-len OSL --engine BACKEND@VERSION`` answers, KV cache in BF16: the rows do not record it;
    ``candidate`` one of :data:`CANDIDATES`, or ``"default"``: the source an answer takes, :func:`~specsim.timing.default_timing`),
    with ``predicted_ms``, ``error`` (signed, predicted over measured less 1) and ``limited_by`` (what holds the modelled
    engine below the row's users, empty where it holds them all: such a row judges the capacity model, not the step;
    "no room" where the engine's share of memory holds no request at all, and no prediction).
    Nothing is fitted."""
    from specsim.serving.steady import NoRoom, served_state

    kind, suffix = (None, "") if candidate == "default" else CANDIDATES[candidate]  # default: as an answer takes it
    pred = np.full(len(df), np.nan)
    limited = np.full(len(df), "", dtype=object)
    keys = ["hardware", "backend", "backend_version", "model", "weight_dtype", "tp", "isl", "osl"]
    for (hw_name, backend, version, model_name, dtype, tp, isl, osl), rows in df.groupby(keys):
        dep = _deployment(
            load_hardware(hw_name + suffix),
            model_name,
            _row_options("", int(tp), dtype),
            kind,
            _row_engine(backend, version),
        )
        idx = df.index.get_indexer(rows.index)
        try:
            state = served_state(dep, 0.0, [0], rows["concurrency"].to_numpy(float), float(isl), float(osl))
        except NoRoom:  # the engine's share of memory leaves no request room beside the weights: not a step's error
            limited[idx] = "no room"
            continue
        pred[idx] = np.asarray(state.tpot_s, dtype=float)[0] * 1e3
        limited[idx] = np.asarray(state.limited_by, dtype=object)[0]
    out = df.copy()
    out["predicted_ms"] = pred
    out["limited_by"] = limited
    out["error"] = pred / df["silicon_tpot_ms"].to_numpy(float) - 1
    return out


def large_moe_bias(judged: pd.DataFrame, at_most: int = 8) -> tuple[float, float, float, int]:
    """(median, lowest and highest per-model median) of how much longer the measured plain TPOT is than the predicted,
    as a fraction of the predicted, over the rows at concurrency ``at_most`` or less where the modelled engine holds every
    user; and how many rows."""
    low = judged[(judged["concurrency"] <= at_most) & (judged["limited_by"] == "")]
    longer = low["silicon_tpot_ms"] / low["predicted_ms"] - 1
    per_model = longer.groupby(low["model"]).median()
    return float(longer.median()), float(per_model.min()), float(per_model.max()), int(low.shape[0])
