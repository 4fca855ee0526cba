"""What every converter of LottoLottoLotto/4x3090-llm-benchmarks (data/benchmarks.jsonl, schema v2) writes alike: a
closed loop's row as the `vllm bench serve --save-result` keys it records, with the request count the archive does
not record assumed (ASSUMED_PROMPTS_PER_USER, as the archive's one vllm bench serve campaign records it, laguna-dflash),
and an n-gram arm's acceptance.  Standard library only; the converters import it as a sibling (run as scripts)."""

from __future__ import annotations

ASSUMED_PROMPTS_PER_USER = 4


def closed_loop_record(row: dict, model_id: str) -> dict:
    """The row's closed loop: date, backend, model, request count (assumed), duration (derived: output tokens over the
    recorded output throughput), token totals (count x the row's fixed lengths) and output throughput."""
    c = row["concurrency"]
    n = ASSUMED_PROMPTS_PER_USER * c
    out = n * row["gen_tokens"]
    return {
        "date": row["date"],
        "backend": row["engine"],
        "model_id": model_id,
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": c,
        "completed": n,
        "duration": out / row["output_tok_s"],
        "total_input_tokens": n * row["prompt_tokens"],
        "total_output_tokens": out,
    }


def ngram_record(row: dict, model_id: str) -> dict:
    """A plain or n-gram (k = 4) row: the closed loop, its output throughput, and the n-gram arm's acceptance rate
    (accepted / drafted tokens, in %) with the length it gives, 1 + k x rate (derived)."""
    rec = closed_loop_record(row, model_id) | {"output_throughput": row["output_tok_s"]}
    spec = row["spec_decode"]
    if spec is not None:
        assert spec["method"] == "ngram" and spec["k"] == 4, spec
        rec["spec_decode_acceptance_rate"] = round(spec["acceptance"] * 100, 10)
        rec["spec_decode_acceptance_length"] = round(1 + spec["k"] * spec["acceptance"], 10)
    return rec
