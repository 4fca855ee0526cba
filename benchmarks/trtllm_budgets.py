"""What one token budget per source costs the corpus's TensorRT-LLM figures.

The InferenceX TensorRT-LLM sources set ``max_num_tokens`` per load: roundup64(k c + ISL + 64) with k = 1 for the
plain server and 1 + 3 next-n layers for the MTP one (at least 8192 on the plain arm of the 1.2 source), ISL the
dataset's nominal prompt length (1024 or 8192); their manifests say so.  ``validate_corpus.py`` models one budget
per source (TensorRT-LLM's own 8192).  This predicts the speedups with the preset as shipped both ways, each run in
a model of its own budget, and prints the mean absolute error of each against the measured ones.  The acceptance is the
MTP layer's published one, one position's, taken at every depth of these 3-step runs: since 2026-12-05 the corpus does
not report that as column (a*) (docs/reports/2026-12-05-corpus-definitions.md), and here it is only the common ground
of the two budgets, a sensitivity and not an accuracy.

    python benchmarks/trtllm_budgets.py
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_corpus import (  # noqa: E402
    ROOT,
    _error,
    _speedups,
    build,
    deployments,
    limits_of,
    preset_predictions,
    runs_of,
)

#: (source, the plain arm's least max_num_tokens): each source's manifest states the rule.
SOURCES = (
    ("b200-trtllm-dsr1-fp8-mtp", 8192),
    ("b200-trtllm-dsr1-fp8-ep8-mtp", 0),
    ("h200-trtllm-dsr1-fp8-ep8-mtp", 0),
)
MTP_TOKENS_PER_SEQ = 4  # 1 + num_nextn_predict_layers 3


def run_budget(c, plain_floor: int) -> int:
    """The max_num_tokens the source's launch script gave this run's server."""
    isl = 8192 if c.run.prompt_tokens > 4096 else 1024
    per_seq = MTP_TOKENS_PER_SEQ if c.setup is not None else 1
    tokens = int(math.ceil((per_seq * c.run.load_value + isl + 64) / 64) * 64)
    return tokens if c.setup is not None else max(tokens, plain_floor)


def main() -> int:
    print(
        "speedup with the published acceptance at every depth (a sensitivity, not column (a*)), mean absolute error: "
        "one budget per source, and each run's own max_num_tokens"
    )
    for name, floor in SOURCES:
        folder = ROOT / name
        for spec in deployments(folder):
            dep, _ = build(spec, folder)
            runs = runs_of(spec, folder)
            limits = limits_of(spec, dep)
            one = _speedups(runs, preset_predictions(dep, runs, limits)[1])
            budgets = [run_budget(c, floor) for c in runs]
            pred = np.array(
                [
                    preset_predictions(dep, [c], dataclasses.replace(limits, max_batched_tokens=b))[1][0]
                    for c, b in zip(runs, budgets)
                ]
            )
            own = _speedups(runs, pred)
            print(
                f"{name:<32} one budget ({limits.max_batched_tokens}): {_error(one)[0]:.1%}   each run's own "
                f"({min(budgets)}-{max(budgets)}): {_error(own)[0]:.1%}   largest change of a predicted speedup: "
                f"{max(abs(own[k][1] / one[k][1] - 1) for k in one):.2%}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
