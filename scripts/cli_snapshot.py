"""Record what the CLI prints for a fixed list of invocations, and compare two recordings.

A refactor must not change what users see.  This script runs every invocation of
``scripts/cli-invocations.txt`` against a source tree (the working tree, or any git revision checked
out into a temporary worktree), keeps stdout, stderr and the exit status of each, and compares two
such recordings: exact text first; where the text differs and both sides are JSON, it names the
fields that differ and the largest relative difference of any number.

    python scripts/cli_snapshot.py --base 9407f2f            # record that revision and the working tree, compare
    python scripts/cli_snapshot.py --base 9407f2f --only serve-gemma-window,og-default

Each tree gets its own kernel cache (a table built by one version is never read by the other).
Fixtures are generated here, deterministically, so both sides read the same bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
INVOCATIONS = HERE / "cli-invocations.txt"


def invocations(path: Path = INVOCATIONS) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, args = line.partition("|")
        out.append((name.strip(), args.strip()))
    return out


def write_fixtures(folder: Path) -> None:
    """A vLLM and an SGLang /metrics page, two logits arrays, two request traces and an EAGLE-3 head config, always the same bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    drafts, per_pos = 40_000, (33_200, 25_600, 18_900)
    lines = []
    for name, value in (
        ("num_drafts", drafts),
        ("num_draft_tokens", drafts * 3),
        ("num_accepted_tokens", sum(per_pos)),
    ):
        lines += [
            f"# TYPE vllm:spec_decode_{name}_total counter",
            f'vllm:spec_decode_{name}_total{{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"}} {value}',
        ]
    lines.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",'
        f'position="{k}"}} {v}'
        for k, v in enumerate(per_pos)
    ]
    (folder / "metrics-vllm.txt").write_text("\n".join(lines) + "\n")
    (folder / "metrics-sglang.txt").write_text(
        "# TYPE sglang:spec_accept_length gauge\n"
        'sglang:spec_accept_length{model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.1\n'
    )
    rng = np.random.default_rng(7)
    target = rng.normal(0, 2, (300, 64))
    np.save(folder / "target.npy", target)
    np.save(folder / "draft.npy", target + rng.normal(0, 1, target.shape))
    arrivals = np.cumsum(rng.exponential(0.25, 60))
    rows = ["arrival_s,prompt_tokens,output_tokens"] + [
        f"{a:.6f},{int(p)},{int(o)}" for a, p, o in zip(arrivals, rng.integers(50, 2000, 60), rng.integers(2, 400, 60))
    ]
    (folder / "trace.csv").write_text("\n".join(rows) + "\n")
    long = ["arrival_s,prompt_tokens,output_tokens"] + [f"{i * 0.01:.2f},30000,400" for i in range(60)]
    (folder / "trace-long.csv").write_text("\n".join(long) + "\n")
    head = folder / "eagle3-head"  # the fields of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's config.json
    head.mkdir(exist_ok=True)
    (head / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLMEagle3"],
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_hidden_layers": 1,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "vocab_size": 128256,
                "draft_vocab_size": 32000,
                "max_position_embeddings": 2048,
                "rms_norm_eps": 1e-05,
                "tie_word_embeddings": False,
                "torch_dtype": "float16",
            }
        )
    )


def record(tree: Path, work: Path, only: set[str] | None) -> dict:
    """Run every invocation against ``tree``; returns name -> {rc, stdout, stderr} with temp paths normalised."""
    fx, cache = work / "fx", work / "cache"
    write_fixtures(fx)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "SPECSIM_CACHE_DIR": str(cache),
        "MPLBACKEND": "Agg",
        "PYTHONHASHSEED": "0",
    }
    results = {}
    for name, args in invocations():
        if only and name not in only:
            continue
        out = work / "out" / name
        out.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "specsim", *shlex.split(args.format(fx=fx, out=out))]
        proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=600)

        def clean(text: str) -> str:
            return (
                text.replace(str(out), "<out>")
                .replace(str(fx), "<fx>")
                .replace(str(cache), "<cache>")
                .replace(str(tree), "<tree>")
            )

        results[name] = {"rc": proc.returncode, "stdout": clean(proc.stdout), "stderr": clean(proc.stderr)}
        print(f"  {name}: rc {proc.returncode}, {len(proc.stdout)} bytes", file=sys.stderr)
    return results


def _numbers(a, b, path="$"):
    """Yield (path, relative difference or None for a structural difference) between two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                yield f"{path}.{key}", None
            else:
                yield from _numbers(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield path, None
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _numbers(x, y, f"{path}[{i}]")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if a != b:
            scale = max(abs(a), abs(b))
            yield path, abs(a - b) / scale if scale and math.isfinite(scale) else math.inf
    elif a != b:
        yield path, None


def compare(base: dict, new: dict) -> list[str]:
    """One line per invocation: identical, or what differs."""
    lines = []
    for name in base:
        a, b = base[name], new.get(name)
        if b is None:
            lines.append(f"{name}: missing in the new recording")
            continue
        parts = []
        if a["rc"] != b["rc"]:
            parts.append(f"exit {a['rc']} -> {b['rc']}")
        if a["stdout"] != b["stdout"]:
            try:
                diffs = list(_numbers(json.loads(a["stdout"]), json.loads(b["stdout"])))
                structural = [p for p, d in diffs if d is None]
                numeric = [d for _, d in diffs if d is not None]
                parts.append(
                    f"stdout JSON differs at {len(diffs)} place(s)"
                    + (f"; largest relative number difference {max(numeric):.3g}" if numeric else "")
                    + (f"; other: {', '.join(structural[:4])}" if structural else "")
                    + (f"; first: {diffs[0][0]}" if diffs else "")
                )
            except json.JSONDecodeError:
                al, bl = a["stdout"].splitlines(), b["stdout"].splitlines()
                first = next((i for i, (x, y) in enumerate(zip(al, bl)) if x != y), min(len(al), len(bl)))
                parts.append(f"stdout text differs from line {first + 1}")
        if a["stderr"] != b["stderr"]:
            parts.append("stderr differs")
        lines.append(f"{name}: " + ("identical" if not parts else "; ".join(parts)))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="git revision to compare the working tree with")
    parser.add_argument("--only", type=lambda t: set(t.split(",")), help="comma-separated invocation names")
    parser.add_argument("--keep", metavar="DIR", help="also write both recordings as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cli-snapshot-") as tmp:
        tmp = Path(tmp)
        worktree = tmp / "base-tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), args.base], cwd=REPO, check=True, capture_output=True
        )
        try:
            print(f"recording {args.base}", file=sys.stderr)
            base = record(worktree, tmp / "base", args.only)
            print("recording the working tree", file=sys.stderr)
            new = record(REPO, tmp / "new", args.only)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=REPO, capture_output=True)
        if args.keep:
            keep = Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "base.json").write_text(json.dumps(base, indent=1))
            (keep / "new.json").write_text(json.dumps(new, indent=1))
    lines = compare(base, new)
    print("\n".join(lines))
    same = sum(line.endswith(": identical") for line in lines)
    print(f"\n{same} of {len(lines)} invocations identical")
    return 0 if same == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main())
