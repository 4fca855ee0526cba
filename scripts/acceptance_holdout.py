"""Check the published-acceptance lookup on measurements it was not built from, one held-out source at a time.

For each held-out measurement (a mean acceptance length at a number of drafted tokens, or a context point) the
script asks :func:`specsim.speculation.acceptance_data.resolve` what it would assume for that drafter, target and
workload, computes the tokens per verification pass it implies at the measurement's gamma, and prints the relative
error.  Run: ``.venv/bin/python scripts/acceptance_holdout.py``.
"""

from __future__ import annotations

from specsim.describe.models import get_model
from specsim.speculation.acceptance_data import CONTEXT_CURVES, resolve
from specsim.speculation.drafters import Eagle3Head, NgramDrafter

#: (held-out source, drafter class, target, workload, gamma, measured tokens per pass).
HELD_OUT = [
    ("SpecDecode-Bench traces (derived), Llama-3.1-8B ShareGPT", Eagle3Head, "llama-3.1-8b", "chat", 1, 1.66),
    ("SpecDecode-Bench traces (derived), Llama-3.1-8B ShareGPT", Eagle3Head, "llama-3.1-8b", "chat", 3, 2.25),
    ("SpecDecode-Bench traces (derived), Llama-3.1-8B ShareGPT", Eagle3Head, "llama-3.1-8b", "chat", 5, 2.48),
    ("vLLM P-EAGLE blog, EAGLE-3 at K=3 (rows are its K=7)", Eagle3Head, "gpt-oss-20b", "chat", 3, 2.70),
    ("vLLM P-EAGLE blog, EAGLE-3 at K=3 (rows are its K=7)", Eagle3Head, "gpt-oss-20b", "code-completion", 3, 2.65),
    ("DSpark Table 1, Qwen3-4B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-4b", "chat", 7, 2.39),
    ("DSpark Table 1, Qwen3-4B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-4b", "code-completion", 7, 4.16),
    ("DSpark Table 1, Qwen3-4B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-4b", "math", 7, 5.14),
    ("DSpark Table 1, Qwen3-14B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-14b", "chat", 7, 2.62),
    ("DSpark Table 1, Qwen3-14B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-14b", "code-completion", 7, 4.14),
    ("DSpark Table 1, Qwen3-14B (rows are its Qwen3-8B)", Eagle3Head, "qwen3-14b", "math", 7, 5.24),
    # A tree of 16 verified tokens over 7 draft steps (AngelSlim heads): a tree of a head emits at least its chain's.
    ("DFlash paper Table 1, EAGLE-3 tree-16, Qwen3-8B AngelSlim", Eagle3Head, "qwen3-8b", "chat", 7, 2.83),
    ("DFlash paper Table 1, EAGLE-3 tree-16, Qwen3-8B AngelSlim", Eagle3Head, "qwen3-8b", "code-completion", 7, 3.17),
    ("DFlash paper Table 1, EAGLE-3 tree-16, Qwen3-8B AngelSlim", Eagle3Head, "qwen3-8b", "math", 7, 3.23),
    ("SpecDecode-Bench traces (derived), InstructCoder n-gram", NgramDrafter, "llama-3.1-8b", "code-editing", 3, 2.03),
    ("vLLM PR #24344, InstructCoder n-gram (seq-normalised)", NgramDrafter, "llama-3.1-8b", "code-editing", 5, 1.95),
]

#: DFlash Table 4, Qwen3.5-27B: the curve is built from gov_report; hotpotqa and qasper are held out.
HELD_OUT_CONTEXT = [
    ("hotpotqa", {1024: 4.91, 8192: 4.46, 16384: 3.61}),
    ("qasper", {1024: 5.27, 8192: 4.17, 16384: 3.57}),
]


def main() -> None:
    from specsim.speculation.acceptance import Acceptance, alpha_from_acceptance_length

    print(
        f"{'held-out source':58s} {'target':13s} {'workload':15s} {'K':>2s} {'measured':>8s} {'lookup':>7s} {'error':>7s} "
        f"{'one default':>11s} {'error':>7s}  row"
    )
    for source, cls, target, workload, gamma, measured in HELD_OUT:
        found = resolve(cls, get_model(target), workload, None)
        predicted = float(found.acceptance.expected_tokens(gamma))
        before = float(cls.published()[0].expected_tokens(gamma))  # the one default of every target and workload before
        print(
            f"{source:58s} {target:13s} {workload:15s} {gamma:2d} {measured:8.2f} {predicted:7.2f} "
            f"{predicted / measured - 1:+7.1%} {before:11.2f} {before / measured - 1:+7.1%}  "
            f"{'fell back' if found.fell_back else found.row.split(':')[0][:40]}"
        )
    curve = next(c for c in CONTEXT_CURVES if c.drafter == "dflash")
    print("\nDFlash Table 4 context curve (built from gov_report) on held-out datasets, 15 drafted tokens:")
    for name, points in HELD_OUT_CONTEXT:
        alpha0 = float(alpha_from_acceptance_length(points[1024], 15))
        for context, measured in points.items():
            predicted = float(Acceptance(alpha=alpha0 * float(curve.factor(context))).expected_tokens(15))
            print(
                f"  {name:9s} {context:6d} tokens: measured tau {measured:.2f}, curve {predicted:.2f} ({predicted / measured - 1:+.1%})"
            )


if __name__ == "__main__":
    main()
