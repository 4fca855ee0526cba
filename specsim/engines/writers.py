"""What every engine's benchmark writer answers (:mod:`specsim.calibration.plan` lays the runs out; each engine's
module of this package says how its server and client run them), and the helpers they share."""

from __future__ import annotations

from specsim.engines.base import Release

__all__ = ["BenchWriter", "SHAREGPT_PREP", "version_text"]


class BenchWriter:
    """What one engine needs: its server and client commands and how it pins acceptance, per version."""

    name: str
    #: The newest release whose source these commands were checked against (what ``@latest`` writes for).
    newest: str
    health = "/health"
    metrics = "/metrics"
    #: What a real-acceptance run records of the acceptance (its saved metrics pages, else its client), for the README.
    real_acceptance = "the acceptance rate and its per-position shape (the spec_decode counters of the metrics pages)"

    def check(self, version: tuple, drafter: str, pins: list[float | None], topk: int) -> list[str]:
        """Refuse what this version cannot run; return notes on what it runs differently."""
        raise NotImplementedError

    def server(self, plan, server) -> tuple[dict, list[str], dict | None]:
        """(environment, command, extra config files {name: text})."""
        raise NotImplementedError

    def client(self, plan, run, url: str) -> list[str]:
        raise NotImplementedError

    def prompts_prep(self, plan) -> list[str]:
        """Shell lines that turn the user's prompts (JSONL, one {"prompt": ...} per line) into the client's format."""
        return []


def version_text(v: tuple) -> str:
    """A release as its engine numbers it: "1.3.0", "1.3.0rc8" (:class:`~specsim.engines.base.Release`)."""
    return str(v) if isinstance(v, Release) else f"{v[0]}.{v[1]}.{v[2]}"


#: Turns {"prompt": ...} lines into the ShareGPT list that sglang.bench_serving (and TensorRT-LLM's client) read with
#: --dataset-name sharegpt: [{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ""}]}].
SHAREGPT_PREP = (
    "python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; "
    'json.dump([{"conversations":[{"from":"human","value":r["prompt"]},{"from":"gpt","value":""}]} for r in rows], '
    'open("prompts.sharegpt.json","w"))\' "$PROMPTS"'
)
