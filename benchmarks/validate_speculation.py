"""How well specsim predicts published speculative speedups, per source and engine, with sources held out.

    python benchmarks/validate_speculation.py            # tables per source and engine, both step-time sources
    python benchmarks/validate_speculation.py --rows     # and every row

The rows are ``specsim/calibration/data/speculation_public.csv`` (see :mod:`specsim.calibration.public` for what each kind compares).
For each engine the host terms of a speculative round (per round, per draft step, per sequence) are fitted on
all its sources (what the presets ship) and, for each source, on the others only (the held-out error).  The
peers run on the same rows: specsim as it was before the engine's round costs were modelled ("before": every
draft pass with the source's whole per-pass overhead, no host work), the round passes alone ("no host"), and
SpecDecode-Bench's simulator on the rows of its own deployment (Llama-3.1-8B, H100, vLLM, EAGLE).  Errors are
mean absolute relative errors of the speedup (or of the speedup ratio between two batches), percent.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from specsim.calibration.public import FIT_KINDS, evaluate, load_public_speculation

COLUMNS = {
    "before": "specsim before",
    "no_host": "passes only",
    "held_out": "held out",
    "fitted": "fitted (in-sample)",
    "specdecode_bench": "SpecDecode-Bench sim",
}


def error_table(fit) -> pd.DataFrame:
    t = fit.table[fit.table.kind.isin(FIT_KINDS)]
    out = pd.DataFrame({label: fit.error_by("source", col) for col, label in COLUMNS.items()}).round(1)
    out.insert(0, "rows", t.groupby("source").size())
    out.insert(0, "engine", t.drop_duplicates("source").set_index("source").engine)
    by_engine = out.groupby("engine")[list(COLUMNS.values())].mean().round(1)
    by_engine.insert(0, "rows", out.groupby("engine").rows.sum())
    by_engine.index = [f"{e} (mean over sources)" for e in by_engine.index]
    by_engine.insert(0, "engine", "")
    return pd.concat([out.sort_values(["engine", "rows"], ascending=[False, False]), by_engine])


def step_choices(table: pd.DataFrame, prediction: str = "held_out"):
    """Per step-sweep source: the best measured steps per batch, the steps the prediction ranks first among the measured
    ones, and the share of the best measured throughput that pick loses (rows give throughput relative to ref_steps)."""
    out = []
    for source, rows in table[table.kind == "step_sweep"].groupby("source", sort=False):
        best, picked, loss = [], [], []
        for _, g in rows.groupby("batch"):
            steps = [3] + g.steps.astype(int).tolist()  # the reference steps: throughput ratio 1 by definition
            measured = np.array([1.0] + g.measured_value.tolist())
            predicted = np.array([1.0] + g[prediction].tolist())
            best.append(steps[int(np.argmax(measured))])
            picked.append(steps[int(np.argmax(predicted))])
            loss.append(1.0 - measured[int(np.argmax(predicted))] / measured.max())
        out.append((source, best, picked, loss))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every row with its predictions")
    args = parser.parse_args(argv)
    df = load_public_speculation()
    print(
        f"{len(df)} public rows from {df.source.nunique()} sources: "
        + ", ".join(f"{k} {v}" for k, v in df.groupby("kind").size().items())
        + "\n"
    )
    for timing in ("hybrid", "kernels"):
        fit = evaluate(df, timing)
        print(f"== step-time source: {timing}; host terms fitted per engine on its serial versions ==")
        for engine, host in fit.fitted.items():
            print(f"  {engine}: {host.describe()}")
        with pd.option_context("display.width", 250):
            print("\nSpeedup error, % (mean absolute, per source):")
            print(error_table(fit).to_string())
        t = fit.table
        gain = t[t.kind == "overlap_gain"]
        print(
            "\nSGLang spec v2 over v1 at the same acceptance length: the share of H spec v2 hides, fitted on these rows "
            f"{fit.shares.get('sglang', 1.0):.2f}; each row with the share fitted on the other (held out), and hiding all of H:"
        )
        for i, r in gain.iterrows():
            full = fit.terms.predict(fit.fitted[r.engine], fit.alphas, 1.0)[i]
            print(
                f"  {r.source} ({r.target}, {r.drafter} {int(r.steps)} steps): measured {r.measured_value:.3f}x; "
                f"share {fit.held_out_shares[i]:.2f} from the other row: {r.held_out:.3f}x "
                f"({(r.held_out / r.measured_value - 1) * 100:+.1f}%); all of H hidden: {full:.3f}x "
                f"({(full / r.measured_value - 1) * 100:+.1f}%)"
            )
        change = t[t.kind == "batch_change"]
        print("\nSpeedup change from batch 1 to 32 (SpecDecode-Bench, vLLM 0.10.1, EAGLE k = 3):")
        for _, r in change.iterrows():
            print(
                f"  {r.target} TP {int(r.tp)}: measured {r.measured_value - 1:+.1%}; before {r.before - 1:+.1%}, "
                f"held out {r.held_out - 1:+.1%}, fitted {r.fitted - 1:+.1%}"
            )
        print(
            "\nSGLang's step sweeps (AutoSpec, sglang#22246): the steps that measured best per batch, and the steps the model"
        )
        print(
            "picks among those measured with the sweep held out (its acceptance fitted alone: "
            + ", ".join(f"{k} alpha {v:.3f}" for k, v in fit.held_out_alphas.items())
            + "), with the throughput that pick loses:"
        )
        for source, best, picked, loss in step_choices(t):
            print(f"  {source}: measured best {best}; picked {picked}; lost " + ", ".join(f"{x:.1%}" for x in loss))
        plain = t[t.kind == "plain"]
        err = (plain.no_host / plain.measured_value - 1) * 100
        print(
            "\nPlain decode step of the preset against the sources' plain throughput (per sequence, includes prefill), %:"
        )
        print(
            "  "
            + "; ".join(
                f"{s}: " + ", ".join(f"b{int(b)} {e:+.0f}" for b, e in zip(g.batch, err[g.index]))
                for s, g in plain.groupby("source", sort=False)
            )
        )
        if args.rows:
            cols = [
                "kind",
                "source",
                "target",
                "tp",
                "drafter",
                "steps",
                "topk",
                "verify_tokens",
                "batch",
                "batch_to",
                "accept_length",
                "measured_value",
                "before",
                "no_host",
                "held_out",
                "fitted",
                "specdecode_bench",
            ]
            with pd.option_context("display.width", 250, "display.max_rows", 200):
                print(t[cols].round(3).to_string(index=False))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
