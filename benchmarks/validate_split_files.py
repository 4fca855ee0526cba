"""calibrate-engine on benchmark files written one per concurrency, with no acceptance recorded, judged held out.

This is how ``vllm bench serve --save-result`` leaves a user's sweep: one JSON file per ``--max-concurrency``, and no
acceptance unless the server's metrics were read.  The A100 source of the corpus (``examples/bench/public/
a100-llama-3.1-8b-eagle3``: vLLM 0.24.0, Llama-3.1-8B-Instruct and its AWQ-INT4 checkpoint, FP16 and FP8 KV cache,
an EAGLE-3 head at 5 steps, gsm8k, humaneval and a RAG set at concurrency 1, 8, 32 and 64, three repeats) is cut that
way: each (deployment, dataset, repeat) becomes eight files, four plain and four speculative, their
``spec_decode_*`` fields taken away.  Each such sweep is fitted by the command a user runs
(``specsim calibrate-engine --plain ... --spec ... --json``), and what it prints held out is collected: the TPOT error
of each load left out of the fit (its acceptance included), plain and speculative, and the speedup error at each load.

    python benchmarks/validate_split_files.py [--repeats 3] [--json FILE]

Whole loads are held out; the source itself is one the corpus report (``docs/reports/2026-12-02-concurrency.md``)
already shows, and what was changed after looking at it is said there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

SOURCE = Path("examples/bench/public/a100-llama-3.1-8b-eagle3")
DATASETS = ("gsm8k", "humaneval", "rag")


def split(path: Path, repeat: int, out: Path, stem: str) -> list[Path]:
    """The ``repeat``-th run at each concurrency of ``path``, one file each, without its acceptance fields."""
    seen: dict[int, int] = {}
    files = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        c = rec["max_concurrency"]
        seen[c] = seen.get(c, -1) + 1
        if seen[c] != repeat:
            continue
        rec = {k: v for k, v in rec.items() if not k.startswith("spec_decode")}
        files.append(out / f"{stem}-c{c}.json")
        files[-1].write_text(json.dumps(rec))
    return files


def fit(deployment: dict, dataset: str, repeat: int) -> dict:
    prefix = deployment["files"].rstrip("*")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = split(SOURCE / f"{prefix}plain-{dataset}.jsonl", repeat, tmp, "plain")
        spec = split(SOURCE / f"{prefix}eagle3-{dataset}.jsonl", repeat, tmp, "eagle3")
        target = deployment["target"]
        if target.endswith(".json"):
            target = str(SOURCE / target)
        cmd = [sys.executable, "-m", "specsim", "calibrate-engine", "--plain", *map(str, plain)]
        cmd += ["--spec", *map(str, spec), "--draft", "eagle3", "--steps", "5", "--hardware", "a100-sxm-80gb"]
        cmd += ["--engine", "vllm@0.24.0", "--target", target, "--kv-dtype", deployment["kv_dtype"], "--json"]
        # The engine's limits the runs were served with (the manifest's, from vLLM's defaults on an A100).
        cmd += ["--max-num-seqs", str(deployment["max_num_seqs"])]
        cmd += ["--max-batched-tokens", str(deployment["max_batched_tokens"])]
        if deployment.get("weight_dtype"):
            cmd += ["--weight-dtype", deployment["weight_dtype"]]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{deployment['name']} {dataset} repeat {repeat}: {done.stderr.strip()}")
        s = json.loads(done.stdout)
    held = s["error"]["held_out"]
    speed = [g["held_out"] / g["measured"] - 1 for g in s["speedup"] if g["held_out"] is not None]
    return {
        "deployment": deployment["name"],
        "dataset": dataset,
        "repeat": repeat,
        "plain": held["plain"],
        "spec": held["spec"],
        "speedup": float(np.mean(np.abs(speed))) if speed else None,
        "acceptance": [a["value"] for a in s["acceptance"].values()] if isinstance(s["acceptance"], dict) else None,
        "refused": [w for w in s["warnings"] if "refused" in w],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3, choices=(1, 2, 3), help="repeats per cell to cut (default 3)")
    p.add_argument("--json", help="write every sweep's figures to this JSON file")
    args = p.parse_args()
    src = yaml.safe_load((SOURCE / "source.yaml").read_text())
    rows = []
    for d in src["deployments"]:
        d = {**src, **d}
        for dataset in DATASETS:
            for repeat in range(args.repeats):
                rows.append(fit(d, dataset, repeat))
                r = rows[-1]
                print(
                    f"{r['deployment']:<26} {dataset:<9} #{repeat + 1}  plain {100 * r['plain']:5.1f}%  "
                    f"speculative {100 * r['spec']:5.1f}%  speedup {100 * r['speedup']:5.1f}%",
                    flush=True,
                )
    print("\nheld-out mean absolute error per deployment (each load left out, its acceptance included), all sweeps:")
    print(f"{'deployment':<26} {'sweeps':>6} {'plain TPOT':>10} {'spec TPOT':>10} {'speedup':>8}")
    for name in dict.fromkeys(r["deployment"] for r in rows):
        mine = [r for r in rows if r["deployment"] == name]
        cols = [100 * np.mean([r[k] for r in mine]) for k in ("plain", "spec", "speedup")]
        print(f"{name:<26} {len(mine):>6} {cols[0]:>9.1f}% {cols[1]:>9.1f}% {cols[2]:>7.1f}%")
    cols = [100 * np.mean([r[k] for r in rows]) for k in ("plain", "spec", "speedup")]
    print(f"{'all':<26} {len(rows):>6} {cols[0]:>9.1f}% {cols[1]:>9.1f}% {cols[2]:>7.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
