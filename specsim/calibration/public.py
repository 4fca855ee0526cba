"""The engine's own cost of speculating, fitted to public speculative speedups and judged on held-out sources.

The measurements (``specsim/calibration/data/speculation_public.csv``) are what engines' users and developers
published: speculative and plain throughput or per-token latency of one deployment at one batch size,
with the acceptance length the engine reported, in vLLM's and SGLang's issues and pull requests,
SGLang's documentation, SpecForge's and AngelSlim's issues and the SpecDecode-Bench study.  Each row
names its source, the engine and version, the hardware (and whether the source stated it), the target,
tensor parallelism, the drafter, its steps, top-k and verified tokens, and the batch.  Five kinds:

``speedup``       speculative over plain throughput (or plain over speculative TPOT) at one batch, with the
                  measured acceptance length AL: the model's speedup is AL * t_decode / t_round, so the
                  acceptance needs no modelling and the comparison is of the round's time alone;
``batch_change``  S(batch_to) / S(batch) - 1 of one configuration, published without AL (AL does not depend
                  on the batch, so it cancels);
``step_sweep``    the throughput with s draft steps over that with ``ref_steps`` at the same batch, from a source
                  that swept both (SGLang's AutoSpec pull request: Qwen3-235B-A22B, steps 1-6, batch 1-64); the
                  source did not publish its acceptance, so one per-position rate alpha per source is fitted with
                  the terms (AL(s) = (1 - alpha^(s+1)) / (1 - alpha)), and again alone when the source is held out;
``overlap_gain``  the throughput of SGLang's spec v2 (overlap) over spec v1 at the same acceptance length;
``plain``         a plain decode step (throughput without speculation), to check the plain presets.

Left out, with their reason: SpecForge#339's plain rows at batch 16, 32 and 64 (its benchmark ran 20 MT-bench
prompts, ``mtbench:20``, so no more than 20 sequences ever decode together and the last ones run alone) and
AngelSlim#163's rows at batch 32 and 64 (its plain throughput grows 10% from 32 to 64: the nominal batch is not
the decode batch).  A row's batch must be what decodes.

The host terms H = round_s + s * step_s + b * seq_s + b * s * seq_step_s (:class:`specsim.engines.SpecHost`) of each
engine are fitted by least squares on the relative error of the ``speedup``, ``batch_change`` and ``step_sweep`` rows of its serial
versions (vLLM before 0.14, SGLang spec v1), bounded to be non-negative.  What is reported is the error
on *held-out sources*: for each source, the terms fitted on the engine's other sources (a term no other
source constrains stays 0).  ``overlap_gain`` rows fit one number, with the terms of the serial versions: the share h
of H that the overlapping versions hide (t_round = max(t_pass, h H) + (1 - h) H); each row's held-out prediction uses
the share fitted on the engine's other overlap rows.

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

from specsim.engines import PRESETS, REGISTRY, TERM_UNIT, TERM_UPPER, SpecHost
from specsim.engines import vllm as _vllm
from specsim.speculation.acceptance import tokens_per_round
from specsim.speculation.deployment import speedup_of

__all__ = [
    "DATA",
    "FIT_KINDS",
    "SERIAL_PRESETS",
    "SpecFit",
    "fit_alpha",
    "fit_host",
    "load_public_speculation",
    "round_terms",
    "specdecode_bench_speedup",
    "evaluate",
]

DATA = Path(__file__).resolve().parent / "data" / "speculation_public.csv"
#: The preset of each engine whose rounds the published rows ran serially (each engine's ``serial_preset``).
SERIAL_PRESETS = {name: e.serial_preset for name, e in REGISTRY.items() if e.serial_preset}
FIT_KINDS = ("speedup", "batch_change", "step_sweep")
KINDS = FIT_KINDS + ("overlap_gain", "plain")
#: Bounds of a fitted per-position acceptance rate (``step_sweep`` sources).
ALPHA_BOUNDS = (0.05, 0.98)
_TIMINGS = ("hybrid", "kernels")
_RIDGE = 1e-3
#: A ``target_note`` that names the checkpoint's weight dtype (a row of an FP16 or FP8 checkpoint of a catalog model).
_DTYPE_NOTES = ("fp16", "fp8")


def load_public_speculation(path: str | Path | None = None) -> pd.DataFrame:
    """The public rows, checked: every kind known, every number where its kind needs it."""
    df = pd.read_csv(DATA if path is None else path)
    unknown = set(df["kind"]) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown row kinds {sorted(unknown)}; allowed: {', '.join(KINDS)}")
    need = {
        "speedup": ["base", "spec", "accept_length", "steps", "topk", "verify_tokens"],
        "batch_change": ["batch_to", "measured", "steps", "topk", "verify_tokens"],
        "step_sweep": ["base", "spec", "steps", "ref_steps", "topk", "verify_tokens"],
        "overlap_gain": ["base", "spec", "accept_length", "accept_length_2", "steps", "topk", "verify_tokens"],
        "plain": ["base"],
    }
    for kind, cols in need.items():
        rows = df[df["kind"] == kind]
        bad = rows[rows[cols].isna().any(axis=1)]
        if len(bad):
            raise ValueError(f"{kind} rows {bad.index.tolist()} lack one of {', '.join(cols)}")
    df["target_note"] = df["target_note"].fillna("")
    df["drafter"] = df["drafter"].fillna("")
    return df.reset_index(drop=True)


def _measured(row: pd.Series) -> float:
    """The row's measured quantity: S, S(b2)/S(b1), the throughput ratio of two step counts or of spec v2 over v1, or
    the plain decode step (s)."""
    if row["kind"] == "batch_change":
        return 1.0 + row["measured"]
    if row["kind"] == "plain":
        return row["base"] / 1e3 if row["metric"] == "tpot_ms" else row["batch"] / row["base"]
    if row["metric"] == "tok_s":
        return row["spec"] / row["base"]
    return row["base"] / row["spec"]


@dataclass(frozen=True)
class RoundTerms:
    """Per row, what a prediction needs: the model's decode steps and rounds at the row's one or two (batch, draft
    steps) points (the rounds without the engine's host work, one :class:`~specsim.speculation.deployment.RoundTime`
    per deployment over its rows), those points, and the measured quantity."""

    rows: pd.DataFrame
    timing: str
    decode: np.ndarray  # (n, 2) seconds; column 1 only for batch_change rows
    rounds: tuple  # (row indices, RoundTime over (rows, 2)) per deployment; column 1 at batch_to or at ref_steps
    batch: np.ndarray  # (n, 2)
    steps: np.ndarray  # (n, 2) draft steps that launch a pass (0 for n-gram)
    seq_steps: np.ndarray  # (n, 2) the steps the per-sequence-and-step term counts (an n-gram proposal's length)
    measured: np.ndarray  # (n,)

    @property
    def passes(self) -> np.ndarray:
        """(n, 2) seconds of each row's round without the engine's host work (NaN for plain rows)."""
        out = np.full(self.decode.shape, np.nan)
        for index, r in self.rounds:
            out[index] = r.passes_s
        return out

    def host(self, terms: SpecHost) -> np.ndarray:
        return terms.seconds(self.batch, self.steps, self.seq_steps)

    def round_s(self, terms: SpecHost, share: float = 0.0) -> np.ndarray:
        """(n, 2) seconds of each row's round with the host work of ``terms``, the share ``share`` of it hidden."""
        h = self.host(terms)
        out = np.full(self.decode.shape, np.nan)
        for index, r in self.rounds:
            out[index] = r.with_host(h[index], share).total_s
        return out

    def predict(self, terms: SpecHost, alphas: dict | None = None, share: float = 1.0) -> np.ndarray:
        """The model's value of each row's measured quantity with host terms ``terms`` (serial rounds; the overlap
        rows compare the round that hides the share ``share`` of H with the serial one); ``alphas`` holds the
        acceptance rate of each ``step_sweep`` source (its rows are NaN without one)."""
        kind = self.rows["kind"].to_numpy()
        al = self.rows["accept_length"].to_numpy(float)
        al2 = self.rows["accept_length_2"].to_numpy(float)
        serial = self.round_s(terms)
        out = np.full(len(kind), np.nan)
        speedup = kind == "speedup"
        out[speedup] = (al * speedup_of(1.0, self.decode[:, 0], serial[:, 0]))[speedup]
        change = kind == "batch_change"
        out[change] = (
            speedup_of(1.0, self.decode[:, 1], serial[:, 1]) / speedup_of(1.0, self.decode[:, 0], serial[:, 0])
        )[change]
        sweep = kind == "step_sweep"
        # Each row's source's rate, NaN where none (what Series.map(dict) gives, without its 2 ms a call: the fits call
        # this some 2,000 times per evaluation, where the map was a quarter of the time).
        alpha = np.array([(alphas or {}).get(s, np.nan) for s in self.rows["source"]], dtype=float)
        known = sweep & np.isfinite(alpha)
        if known.any():
            # AL(s) = 1 + alpha + ... + alpha^s: the source published no acceptance, one rate per source stands for it.
            tokens = tokens_per_round(alpha[known, None], self.steps[known])
            out[known] = speedup_of(tokens[:, 0], 1.0, serial[known, 0]) / speedup_of(
                tokens[:, 1], 1.0, serial[known, 1]
            )
        gain = kind == "overlap_gain"
        if gain.any():
            out[gain] = (serial[:, 0] / self.round_s(terms, share)[:, 0] * al2 / al)[gain]
        out[kind == "plain"] = self.decode[kind == "plain", 0]
        return out

    def errors(self, terms: SpecHost, alphas: dict | None = None, share: float = 1.0) -> np.ndarray:
        """Signed relative error of each row's prediction."""
        return self.predict(terms, alphas, share) / self.measured - 1.0


def round_terms(df: pd.DataFrame, timing: str = "hybrid", before: bool = False) -> RoundTerms:
    """Decode steps and rounds of every row with the step-time source ``timing`` and the serial preset of the
    row's engine (whose host terms are left out: they are what is fitted).  ``before`` prices the drafter's passes
    as specsim did before the engine's round costs were modelled: each with the source's whole per-pass overhead."""
    import dataclasses

    from specsim.speculation.deployment import Deployment

    n = len(df)
    decode, batch = np.full((n, 2), np.nan), np.full((n, 2), np.nan)
    steps, seq_steps = np.zeros((n, 2)), np.zeros((n, 2))
    rounds = []
    keys = ["hardware", "target", "target_note", "tp", "drafter", "engine"]
    for (hw, target, note, tp, drafter, engine), rows in df.groupby(keys, sort=False):
        options = {"tp": int(tp)} | ({"weight_dtype": note} if note in _DTYPE_NOTES else {})
        preset = PRESETS[SERIAL_PRESETS[engine]]
        if before:
            preset = dataclasses.replace(preset, draft_overhead_by_layers=False)
        # Both engines shard the drafter like the target (SGLang's draft worker shares its TP group; vLLM's
        # draft_tensor_parallel_size defaults to the target's).
        dep = Deployment.build(
            hw, target, drafter or None, target_options=options, draft_options={"tp": int(tp)}, decode_only=not drafter
        ).with_source(timing, preset)
        i = rows.index.to_numpy()
        change, sweep = (rows["kind"] == "batch_change").to_numpy(), (rows["kind"] == "step_sweep").to_numpy()
        b = np.stack([rows["batch"], np.where(change, rows["batch_to"], rows["batch"])], axis=1).astype(float)
        context = rows["context"].to_numpy(float)[:, None]
        batch[i], decode[i] = b, dep.decode(b, context).total_s
        if not drafter:
            continue
        s = np.stack([rows["steps"], np.where(sweep, rows["ref_steps"], rows["steps"])], axis=1).astype(float)
        verify = np.stack(
            [rows["verify_tokens"], np.where(sweep, rows["ref_steps"] + 1, rows["verify_tokens"])], axis=1
        ).astype(float)
        rounds.append((i, dep.round_time(b, context, s, rows["topk"].to_numpy(float)[:, None], verify)))
        steps[i] = s if dep.draft is not None else 0.0
        seq_steps[i] = s
    measured = np.array([_measured(r) for _, r in df.iterrows()])
    return RoundTerms(df, timing, decode, tuple(rounds), batch, steps, seq_steps, measured)


def _sweep_sources(terms: RoundTerms, index: np.ndarray) -> list:
    rows = terms.rows.iloc[index]
    return list(dict.fromkeys(rows.loc[rows["kind"] == "step_sweep", "source"]))


def fit_host(terms: RoundTerms, index: np.ndarray) -> tuple[SpecHost, dict]:
    """Least squares on the relative error of the rows ``index`` (speedup, batch-change and step-sweep rows), terms
    bounded to [0, upper], with one acceptance rate per step-sweep source among them; a term these rows do not
    constrain stays 0.  Returns the terms and the fitted rates by source."""
    from scipy.optimize import least_squares

    index = np.asarray(index)
    if index.size == 0:
        return SpecHost(), {}
    scale = TERM_UNIT
    sweeps = _sweep_sources(terms, index)
    k = len(TERM_UPPER)

    def residuals(x):
        # A faint pull towards 0 (1e-3 per unit) settles the terms the rows cannot tell apart (at
        # batch 1 a per-sequence second is a per-round second) on the smallest, and leaves an unconstrained one at 0.
        alphas = dict(zip(sweeps, x[k:]))
        return np.concatenate([terms.errors(SpecHost(*(x[:k] * scale)), alphas)[index], _RIDGE * x[:k]])

    lo = np.concatenate([np.zeros(k), np.full(len(sweeps), ALPHA_BOUNDS[0])])
    hi = np.concatenate([TERM_UPPER / scale, np.full(len(sweeps), ALPHA_BOUNDS[1])])
    # trf moves nothing from a start on its lower bound: start inside, from a few points, keep the best.
    fits = [
        least_squares(residuals, x0=np.concatenate([np.full(k, x0), np.full(len(sweeps), 0.6)]), bounds=(lo, hi))
        for x0 in (0.05, 0.5, 2.0)
    ]
    best = min(fits, key=lambda r: r.cost).x
    x = best[:k] * scale
    host = SpecHost.rounded(x)
    return host, {src: round(float(a), 3) for src, a in zip(sweeps, best[k:])}


def fit_alpha(terms: RoundTerms, index: np.ndarray, host: SpecHost) -> dict:
    """The acceptance rate of each step-sweep source among rows ``index`` with the host terms held at ``host``: what
    a held-out sweep is predicted with (its rate is the workload's, not the engine's, and was not published)."""
    from scipy.optimize import least_squares

    out = {}
    for src in _sweep_sources(terms, index):
        rows = np.asarray(index)[terms.rows.iloc[index]["source"].to_numpy() == src]
        fit = least_squares(lambda a: terms.errors(host, {src: a[0]})[rows], x0=[0.6], bounds=ALPHA_BOUNDS)
        out[src] = round(float(fit.x[0]), 3)
    return out


#: The one deployment SpecDecode-Bench's simulator was fitted to (its predictor.py, ``Llama8BH100``).
_SPECDECODE_BENCH_DEPLOYMENT = {
    "target": "llama-3.1-8b",
    "hardware": "h100-sxm",
    "engine": _vllm.NAME,
    "drafter": "eagle",
}


def specdecode_bench_speedup(rows: pd.DataFrame) -> np.ndarray:
    """The SpecDecode-Bench simulator's speedup for each row of its deployment (Llama-3.1-8B, H100, vLLM, EAGLE); NaN
    elsewhere.  Its affine fits (predictor.py, ``Llama8BH100``): a target pass of n batched tokens over K cached
    ones takes 5.886 ms + 21.01 us n + 39.26 ps K, an EAGLE proposal 2.135 ms + 0.841 us per proposed token of
    a sequence + 2.378 ps K, and every step 1.207 ms more; a round verifies k + 1 tokens per sequence."""
    out = np.full(len(rows), np.nan)
    ok = rows["kind"].isin(FIT_KINDS).to_numpy().copy()
    for column, value in _SPECDECODE_BENCH_DEPLOYMENT.items():
        ok &= (rows[column] == value).to_numpy()

    def s(b, k, L, al):
        kv = b * L
        plain = 5.88590713e-3 + 2.10103129e-5 * b + 3.92645679e-8 * kv + 1.20683946e-3
        rnd = (
            5.88590713e-3
            + 2.10103129e-5 * b * (k + 1)
            + 3.92645679e-8 * kv
            + 2.13526175e-3
            + 8.41429603e-7 * (k + 1)
            + 2.37768493e-9 * kv
            + 1.20683946e-3
        )
        return al * plain / rnd

    for i in np.flatnonzero(ok):
        r = rows.iloc[i]
        if r["kind"] == "speedup":
            out[i] = s(r["batch"], r["steps"], r["context"], r["accept_length"])
        else:
            out[i] = s(r["batch_to"], r["steps"], r["context"], 1.0) / s(r["batch"], r["steps"], r["context"], 1.0)
    return out


def fit_share(terms: RoundTerms, index: np.ndarray, host: SpecHost) -> float:
    """The share of H an overlapping version hides, fitted to the overlap-gain rows ``index`` with the serial version's
    terms ``host`` (least squares on their relative errors); 1 (all of it) when there are none."""
    from scipy.optimize import least_squares

    index = np.asarray(index)
    if index.size == 0:
        return 1.0
    fit = least_squares(lambda x: terms.errors(host, share=float(x[0]))[index], x0=[0.5], bounds=(0.0, 1.0))
    return round(float(fit.x[0]), 2)


@dataclass(frozen=True)
class SpecFit:
    """The fitted terms per engine, and every row's prediction with them, held out by source, and by the peers."""

    timing: str
    terms: RoundTerms
    fitted: dict  # engine -> SpecHost on all its sources (the shipped preset)
    held_out: dict  # source -> SpecHost fitted without it
    table: pd.DataFrame  # one row per measurement, with predictions and errors
    #: The acceptance rate of each step-sweep source: fitted with its engine's terms, and alone with the held-out ones.
    alphas: dict = None
    held_out_alphas: dict = None
    #: The share of H an overlapping version hides, per engine with overlap-gain rows (all of them), and per such row
    #: (fitted on the engine's other overlap rows).
    shares: dict = None
    held_out_shares: dict = None

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
    fitted, alphas = {}, {}
    for e in SERIAL_PRESETS:
        fitted[e], a = fit_host(terms, np.flatnonzero(fit_rows & (engine == e)))
        alphas.update(a)
    held_out, held_alphas = {}, {}
    for s in dict.fromkeys(source):
        held_out[s], _ = fit_host(terms, np.flatnonzero(fit_rows & (engine == engine[source == s][0]) & (source != s)))
        held_alphas.update(fit_alpha(terms, np.flatnonzero(source == s), held_out[s]))
    table = df[
        [
            "kind",
            "source",
            "engine",
            "engine_version",
            "hardware",
            "target",
            "tp",
            "drafter",
            "steps",
            "topk",
            "verify_tokens",
            "batch",
            "batch_to",
            "accept_length",
        ]
    ].copy()
    table["measured_value"] = terms.measured
    table["before"] = round_terms(df, timing, before=True).predict(SpecHost(), held_alphas)
    table["no_host"] = terms.predict(SpecHost(), held_alphas)
    table["fitted"] = np.nan
    table["held_out"] = np.nan
    for e, host in fitted.items():
        rows = engine == e
        table.loc[rows, "fitted"] = terms.predict(host, alphas)[rows]
    for s, host in held_out.items():
        rows = source == s
        table.loc[rows, "held_out"] = terms.predict(host, held_alphas)[rows]
    # Overlap-gain rows: the hidden share, on all of an engine's rows (what the preset ships) and for each row on the
    # others (its held-out prediction); the host terms are the serial fit's.
    gain = kind == "overlap_gain"
    shares = {e: fit_share(terms, np.flatnonzero(gain & (engine == e)), fitted[e]) for e in dict.fromkeys(engine[gain])}
    held_shares = {}
    for i in np.flatnonzero(gain):
        held_shares[i] = fit_share(
            terms, np.flatnonzero(gain & (engine == engine[i]) & (np.arange(len(df)) != i)), fitted[engine[i]]
        )
        table.loc[i, "fitted"] = terms.predict(fitted[engine[i]], alphas, shares[engine[i]])[i]
        table.loc[i, "held_out"] = terms.predict(fitted[engine[i]], alphas, held_shares[i])[i]
    table["specdecode_bench"] = specdecode_bench_speedup(df)
    return SpecFit(timing, terms, fitted, held_out, table, alphas, held_alphas, shares, held_shares)
