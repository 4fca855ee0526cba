"""The engine's own cost of speculating, fitted to public speculative speedups and judged on held-out sources.

The measurements (``specsim/data/speculation_public.csv``) are what engines' users and developers
published: speculative and plain throughput or per-token latency of one deployment at one batch size,
with the acceptance length the engine reported, in vLLM's and SGLang's issues and pull requests,
SGLang's documentation, SpecForge's and AngelSlim's issues and the SpecDecode-Bench study.  Each row
names its source, the engine and version, the hardware (and whether the source stated it), the target,
tensor parallelism, the drafter, its steps, top-k and verified tokens, and the batch.  Four kinds:

``speedup``       speculative over plain throughput (or plain over speculative TPOT) at one batch, with the
                  measured acceptance length AL: the model's speedup is AL * t_decode / t_round, so the
                  acceptance needs no modelling and the comparison is of the round's time alone;
``batch_change``  S(batch_to) / S(batch) - 1 of one configuration, published without AL (AL does not depend
                  on the batch, so it cancels);
``overlap_gain``  the throughput of SGLang's spec v2 (overlap) over spec v1 at the same acceptance length;
``plain``         a plain decode step (throughput without speculation), to check the plain presets.

Left out, with their reason: SpecForge#339's plain rows at batch 16, 32 and 64 (its benchmark ran 20 MT-bench
prompts, ``mtbench:20``, so no more than 20 sequences ever decode together and the last ones run alone) and
AngelSlim#163's rows at batch 32 and 64 (its plain throughput grows 10% from 32 to 64: the nominal batch is not
the decode batch).  A row's batch must be what decodes.

The host terms H = round_s + s * step_s + b * seq_s (:class:`specsim.engines.SpecHost`) of each engine are
fitted by least squares on the relative error of the ``speedup`` and ``batch_change`` rows of its serial
versions (vLLM before 0.14, SGLang spec v1), bounded to be non-negative.  What is reported is the error
on *held-out sources*: for each source, the terms fitted on the engine's other sources (a term no other
source constrains stays 0).  ``overlap_gain`` rows are never fitted: they judge the overlap model of the
versions that hide H (t_round = max(t_pass, H)) with the terms fitted on serial versions.

Peers run on the same rows: specsim without host terms (what it printed before), and the latency model of
SpecDecode-Bench's simulator (github.com/SpecDecode-Bench/simulator, ``predictor.py``: affine fits of the
target pass, the EAGLE proposal and a per-step overhead for Llama-3.1-8B on an H100 under vLLM 0.10.1), on
the rows of that deployment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .engines import PRESETS, SpecHost

__all__ = ["DATA", "FIT_KINDS", "SERIAL_PRESETS", "SpecFit", "fit_host", "load_public_speculation", "round_terms",
           "specdecode_bench_speedup", "evaluate"]

DATA = Path(__file__).resolve().parent / "data" / "speculation_public.csv"
#: The preset of each engine whose rounds the published rows ran serially.
SERIAL_PRESETS = {"vllm": "vllm@0.10", "sglang": "sglang@0.5"}
FIT_KINDS = ("speedup", "batch_change")
KINDS = FIT_KINDS + ("overlap_gain", "plain")
#: Bounds of the fitted terms, seconds: round, draft step, sequence.
TERM_UPPER = np.array([20e-3, 5e-3, 0.5e-3])
_TIMINGS = ("hybrid", "kernels")
_RIDGE = 1e-3


def load_public_speculation(path: str | Path | None = None) -> pd.DataFrame:
    """The public rows, checked: every kind known, every number where its kind needs it."""
    df = pd.read_csv(DATA if path is None else path)
    unknown = set(df["kind"]) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown row kinds {sorted(unknown)}; allowed: {', '.join(KINDS)}")
    need = {"speedup": ["base", "spec", "accept_length", "steps", "topk", "verify_tokens"],
            "batch_change": ["batch_to", "measured", "steps", "topk", "verify_tokens"],
            "overlap_gain": ["base", "spec", "accept_length", "accept_length_2", "steps", "topk", "verify_tokens"],
            "plain": ["base"]}
    for kind, cols in need.items():
        rows = df[df["kind"] == kind]
        bad = rows[rows[cols].isna().any(axis=1)]
        if len(bad):
            raise ValueError(f"{kind} rows {bad.index.tolist()} lack one of {', '.join(cols)}")
    df["target_note"] = df["target_note"].fillna("")
    df["drafter"] = df["drafter"].fillna("")
    return df.reset_index(drop=True)


def _measured(row: pd.Series) -> float:
    """The row's measured quantity: S, S(b2)/S(b1), the v2/v1 throughput ratio, or the plain decode step (s)."""
    if row["kind"] == "batch_change":
        return 1.0 + row["measured"]
    if row["kind"] == "plain":
        return row["base"] / 1e3 if row["metric"] == "tpot_ms" else row["batch"] / row["base"]
    if row["metric"] == "tok_s":
        return row["spec"] / row["base"]
    return row["base"] / row["spec"]


@dataclass(frozen=True)
class RoundTerms:
    """Per row, what a prediction needs: the model's decode steps and round passes at the row's one or two batch
    sizes (without the engine's host work), the batches and draft steps, and the measured quantity."""

    rows: pd.DataFrame
    timing: str
    decode: np.ndarray  # (n, 2) seconds; column 1 only for batch_change rows
    passes: np.ndarray  # (n, 2) seconds
    batch: np.ndarray  # (n, 2)
    steps: np.ndarray  # (n,) draft steps that launch a pass (0 for n-gram)
    measured: np.ndarray  # (n,)

    def host(self, terms: SpecHost) -> np.ndarray:
        return terms.seconds(self.batch, self.steps[:, None])

    def predict(self, terms: SpecHost) -> np.ndarray:
        """The model's value of each row's measured quantity with host terms ``terms`` (serial rounds; the overlap
        rows compare the overlapped round with the serial one)."""
        kind = self.rows["kind"].to_numpy()
        al = self.rows["accept_length"].to_numpy(float)
        al2 = self.rows["accept_length_2"].to_numpy(float)
        h = self.host(terms)
        serial = self.passes + h
        s = self.decode / serial
        out = np.full(len(kind), np.nan)
        out[kind == "speedup"] = (al * s[:, 0])[kind == "speedup"]
        out[kind == "batch_change"] = (s[:, 1] / s[:, 0])[kind == "batch_change"]
        gain = serial[:, 0] / np.maximum(self.passes[:, 0], h[:, 0]) * al2 / al
        out[kind == "overlap_gain"] = gain[kind == "overlap_gain"]
        out[kind == "plain"] = self.decode[kind == "plain", 0]
        return out

    def errors(self, terms: SpecHost) -> np.ndarray:
        """Signed relative error of each row's prediction."""
        return self.predict(terms) / self.measured - 1.0


def round_terms(df: pd.DataFrame, timing: str = "hybrid", before: bool = False) -> RoundTerms:
    """Decode steps and round passes of every row with the step-time source ``timing`` and the serial preset of the
    row's engine (whose host terms are left out: they are what is fitted).  ``before`` prices the drafter's passes
    as specsim did before the engine's round costs were modelled: each with the source's whole per-pass overhead."""
    import dataclasses

    from .deployment import Deployment

    n = len(df)
    decode, passes, batch = np.full((n, 2), np.nan), np.full((n, 2), np.nan), np.full((n, 2), np.nan)
    steps = np.zeros(n)
    keys = ["hardware", "target", "target_note", "tp", "drafter", "engine"]
    for (hw, target, note, tp, drafter, engine), rows in df.groupby(keys, sort=False):
        options = {"tp": int(tp)} | ({"weight_dtype": "fp16"} if note == "fp16" else {})
        preset = PRESETS[SERIAL_PRESETS[engine]]
        if before:
            preset = dataclasses.replace(preset, draft_overhead_by_layers=False)
        dep = Deployment.from_names(hw, target, drafter or None, target_options=options,
                               decode_only=not drafter).with_source(timing, preset)
        for i, row in rows.iterrows():
            b = np.array([row["batch"], row["batch_to"] if row["kind"] == "batch_change" else row["batch"]], float)
            batch[i] = b
            decode[i] = dep.decode(b, row["context"]).total_s
            if row["kind"] == "plain":
                continue
            r = dep.round_time(b, row["context"], row["steps"], draft_width=row["topk"], verify_tokens=row["verify_tokens"])
            passes[i] = r.passes_s
            steps[i] = row["steps"] if dep.draft is not None else 0.0
    measured = np.array([_measured(r) for _, r in df.iterrows()])
    return RoundTerms(df, timing, decode, passes, batch, steps, measured)


def fit_host(terms: RoundTerms, index: np.ndarray) -> SpecHost:
    """Least squares on the relative error of the rows ``index`` (speedup and batch-change rows), terms bounded to
    [0, upper]; a term these rows do not constrain stays 0."""
    from scipy.optimize import least_squares

    index = np.asarray(index)
    if index.size == 0:
        return SpecHost()
    scale = TERM_UPPER / 10.0

    def residuals(x):
        # A faint pull towards 0 (1e-3 per tenth of a term's range) settles the terms the rows cannot tell apart (at
        # batch 1 a per-sequence second is a per-round second) on the smallest, and leaves an unconstrained one at 0.
        return np.concatenate([terms.errors(SpecHost(*(x * scale)))[index], _RIDGE * x])

    # trf moves nothing from a start on its lower bound: start inside, from a few points, keep the best.
    fits = [least_squares(residuals, x0=np.full(3, x0), bounds=(np.zeros(3), TERM_UPPER / scale)) for x0 in (0.05, 0.5, 2.0)]
    x = min(fits, key=lambda r: r.cost).x * scale
    # Round to what a preset prints (0.01 ms, 0.001 ms, 0.1 us) so that the shipped constants are the fit exactly.
    return SpecHost(round(float(x[0]), 5), round(float(x[1]), 6), round(float(x[2]), 7))


def specdecode_bench_speedup(rows: pd.DataFrame) -> np.ndarray:
    """The SpecDecode-Bench simulator's speedup for each row of its deployment (Llama-3.1-8B, H100, vLLM, EAGLE); NaN
    elsewhere.  Its affine fits (predictor.py, ``Llama8BH100``): a target pass of n batched tokens over K cached
    ones takes 5.886 ms + 21.01 us n + 39.26 ps K, an EAGLE proposal 2.135 ms + 0.841 us per proposed token of
    a sequence + 2.378 ps K, and every step 1.207 ms more; a round verifies k + 1 tokens per sequence."""
    out = np.full(len(rows), np.nan)
    ok = ((rows["target"] == "llama-3.1-8b") & (rows["hardware"] == "h100-sxm") & (rows["engine"] == "vllm")
          & (rows["drafter"] == "eagle") & (rows["kind"].isin(FIT_KINDS))).to_numpy()

    def s(b, k, L, al):
        kv = b * L
        plain = 5.88590713e-3 + 2.10103129e-5 * b + 3.92645679e-8 * kv + 1.20683946e-3
        rnd = (5.88590713e-3 + 2.10103129e-5 * b * (k + 1) + 3.92645679e-8 * kv
               + 2.13526175e-3 + 8.41429603e-7 * (k + 1) + 2.37768493e-9 * kv + 1.20683946e-3)
        return al * plain / rnd

    for i in np.flatnonzero(ok):
        r = rows.iloc[i]
        if r["kind"] == "speedup":
            out[i] = s(r["batch"], r["steps"], r["context"], r["accept_length"])
        else:
            out[i] = s(r["batch_to"], r["steps"], r["context"], 1.0) / s(r["batch"], r["steps"], r["context"], 1.0)
    return out


@dataclass(frozen=True)
class SpecFit:
    """The fitted terms per engine, and every row's prediction with them, held out by source, and by the peers."""

    timing: str
    terms: RoundTerms
    fitted: dict  # engine -> SpecHost on all its sources (the shipped preset)
    held_out: dict  # source -> SpecHost fitted without it
    table: pd.DataFrame  # one row per measurement, with predictions and errors

    def error_by(self, column: str, prediction: str = "held_out") -> pd.Series:
        """Mean absolute relative error (percent) of the fitted kinds per ``column`` value."""
        t = self.table[self.table["kind"].isin(FIT_KINDS)]
        return (t[prediction] / t["measured_value"] - 1).abs().groupby(t[column]).mean() * 100


def evaluate(df: pd.DataFrame | None = None, timing: str = "hybrid") -> SpecFit:
    """Fit each engine's host terms on all its sources and on all but each one; predict every row."""
    if timing not in _TIMINGS:
        raise ValueError(f"timing must be one of {', '.join(_TIMINGS)}, got {timing!r}")
    df = load_public_speculation() if df is None else df
    terms = round_terms(df, timing)
    kind, engine, source = (df[c].to_numpy() for c in ("kind", "engine", "source"))
    fit_rows = np.isin(kind, FIT_KINDS)
    fitted = {e: fit_host(terms, np.flatnonzero(fit_rows & (engine == e))) for e in SERIAL_PRESETS}
    held_out = {s: fit_host(terms, np.flatnonzero(fit_rows & (engine == engine[source == s][0]) & (source != s)))
                for s in dict.fromkeys(source)}
    table = df[["kind", "source", "engine", "engine_version", "hardware", "target", "tp", "drafter", "steps", "topk",
                "verify_tokens", "batch", "batch_to", "accept_length"]].copy()
    table["measured_value"] = terms.measured
    table["before"] = round_terms(df, timing, before=True).predict(SpecHost())
    table["no_host"] = terms.predict(SpecHost())
    table["fitted"] = np.nan
    table["held_out"] = np.nan
    for e, host in fitted.items():
        rows = engine == e
        table.loc[rows, "fitted"] = terms.predict(host)[rows]
    for s, host in held_out.items():
        rows = source == s
        table.loc[rows, "held_out"] = terms.predict(host)[rows]
    table["specdecode_bench"] = specdecode_bench_speedup(df)
    return SpecFit(timing, terms, fitted, held_out, table)
