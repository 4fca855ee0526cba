"""Check every flag and config key that `specsim bench-plan` and `specsim schedule` write against the engines' released source.

Reads released wheels (zip files: the tags' code; nothing is installed or run) and reports, per engine version, whether
each name the plan writers use is defined there: a literal ``"--flag"`` argument, a config dataclass field
(``name:``, for flags argparse builds from fields: vLLM's FrontendArgs, SGLang's arg groups from 0.5.14), or a
``SpeculativeConfig`` key; and the drafting methods each version takes: vLLM's ``SpeculativeMethod`` literal
(vllm/config/speculative.py, its aliases resolved), SGLang's ``--speculative-algorithm`` names (the
``SpeculativeAlgorithm`` members and registrations in srt/speculative/, the argparse ``choices`` where 0.4-0.5.11 list
them, and the ``NEXTN`` alias).  Writes the names found to ``tests/data/engine_flags.yaml``, which the test suite holds the
plans against (tests/test_bench_plan.py).  TensorRT-LLM publishes no wheel on PyPI: its names are listed by hand in
that file with the commits they were read at (``trtllm: decoding_types``: the 2026 drafters' names, at one commit).

    python scripts/check_engine_flags.py FOLDER [FOLDER ...]   # searched for vllm-*.whl, sglang-*.whl, unpacked sglang-X/
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from pathlib import Path

import yaml

#: What the plan writers use, per engine: command-line flags, and keys of vLLM's --speculative-config.
VLLM_FLAGS = [
    "--port",
    "--tensor-parallel-size",
    "--max-num-seqs",
    "--enable-prefix-caching",
    "--speculative-config",
    "--backend",
    "--base-url",
    "--model",
    "--num-prompts",
    "--max-concurrency",
    "--request-rate",
    "--ignore-eos",
    "--save-result",
    "--result-dir",
    "--result-filename",
    "--dataset-name",
    "--random-input-len",
    "--random-output-len",
    "--random-range-ratio",
    "--dataset-path",
    "--custom-output-len",
]
VLLM_KEYS = [
    "method",
    "model",
    "num_speculative_tokens",
    "draft_tensor_parallel_size",
    "prompt_lookup_min",
    "prompt_lookup_max",
    "rejection_sample_method",
    "synthetic_acceptance_length",
    # schedule --format vllm: the per-batch-size schedule (vllm-project/vllm#32374) and quantisation on load
    "num_speculative_tokens_per_batch_size",
    "quantization",
    # P-EAGLE and PARD: one pass drafts every token (vllm-project/vllm#32887)
    "parallel_drafting",
]
SGLANG_FLAGS = [
    "--model-path",
    "--port",
    "--tp-size",
    "--max-running-requests",
    "--enable-metrics",
    "--disable-radix-cache",
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--backend",
    "--base-url",
    "--num-prompts",
    "--max-concurrency",
    "--request-rate",
    "--flush-cache",
    "--output-file",
    "--dataset-name",
    "--dataset-path",
    "--sharegpt-output-len",
    "--random-input-len",
    "--random-output-len",
    "--random-range-ratio",
    # schedule --format sglang: adaptive steps per batch size (sgl-project/sglang#24055)
    "--speculative-adaptive",
    "--speculative-adaptive-config",
    # block drafters: the DFlash verify window and the DSpark block (gamma)
    "--speculative-dflash-block-size",
    "--speculative-dspark-block-size",
    # NGRAM: breadth 1, the chain specsim models (the default 10 drafts a tree)
    "--speculative-ngram-max-bfs-breadth",
]
#: The drafting methods specsim may write, looked for in every version (a name not here is not reported).
VLLM_METHODS = ["draft_model", "eagle", "eagle3", "mtp", "ngram", "suffix", "dflash", "dspark"]
SGLANG_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "SUFFIX", "PARD", "PEAGLE"]
SGLANG_ENV = ["SIMULATE_ACC_LEN", "SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD"]


def _sources(wheel: Path, prefix: str) -> str:
    """The text of the wheel's (or unpacked wheel folder's) .py files under ``prefix`` (a folder, or one file)."""
    if wheel.is_dir():
        target = wheel / prefix.rstrip("/")
        files = [target] if target.is_file() else sorted(target.rglob("*.py")) if target.is_dir() else []
        return "\n".join(p.read_text("utf-8", "replace") for p in files)
    with zipfile.ZipFile(wheel) as z:
        return "\n".join(
            z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.startswith(prefix) and n.endswith(".py")
        )


def _version_key(name: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", name.split("-")[1])]


def _has_flag(text: str, flag: str) -> bool:
    field = flag[2:].replace("-", "_")
    return f'"{flag}"' in text or re.search(rf"^\s+{field}\s*:", text, re.M) is not None


def _literal_names(source: str, name: str) -> set[str]:
    """The strings a module-level ``name = Literal[...]`` holds, the aliases it names (``EagleModelTypes``) resolved."""
    tree = ast.parse(source)
    literals: dict[str, ast.expr] = {}
    for node in tree.body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else node.target
            if isinstance(node, ast.AnnAssign)
            else None
        )
        if isinstance(target, ast.Name) and node.value is not None:
            literals[target.id] = node.value

    def names(expr, seen):
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.Name) and expr.id in literals and expr.id not in seen:
            return names(literals[expr.id], seen | {expr.id})
        if isinstance(expr, ast.Subscript):
            return names(expr.slice, seen)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return set().union(*(names(e, seen) for e in expr.elts))
        if isinstance(expr, ast.BinOp):  # Literal[...] | Literal[...]
            return names(expr.left, seen) | names(expr.right, seen)
        return set()

    return names(literals[name], {name}) if name in literals else set()


def _sglang_algorithms(speculative: str, args: str) -> list[str]:
    """The ``--speculative-algorithm`` names a release takes: enum members (``DFLASH = auto()``), registrations
    (``register_speculative_algorithm("EAGLE", aliases=("NEXTN",))``), the builtin-name sets beside ``EAGLE3``,
    ``_RESERVED_ALIASES`` and argparse ``choices``."""
    choices = " ".join(re.findall(r'"--speculative-algorithm",[^)]*?choices=\[([^\]]*)\]', args, re.S))
    found = []
    for name in SGLANG_ALGORITHMS:
        quoted = rf'"{name}"'
        if (
            re.search(rf"^\s+{name}\s*=\s*(auto\(\)|\d+)", speculative, re.M)
            or re.search(rf"register(_speculative_algorithm)?\(\s*{quoted}", speculative)
            or re.search(rf"aliases=\([^)]*{quoted}", speculative)
            or re.search(rf"_RESERVED_ALIASES\s*=\s*frozenset\(\{{[^}}]*{quoted}", speculative)
            # the builtin names SGLang 0.5.12 reserves (spec_registry.py), NEXTN among them
            or re.search(
                rf'\{{[^{{}}]*"EAGLE3"[^{{}}]*{quoted}[^{{}}]*\}}|\{{[^{{}}]*{quoted}[^{{}}]*"EAGLE3"[^{{}}]*\}}',
                speculative,
            )
            or quoted in choices
        ):
            found.append(name)
    return found


def vllm(wheel: Path) -> dict:
    text = _sources(wheel, "vllm/")
    spec = _sources(wheel, "vllm/config/speculative.py") or text
    return {
        "flags": [f for f in VLLM_FLAGS if _has_flag(text, f)],
        "speculative_config": [k for k in VLLM_KEYS if re.search(rf"^\s+{k}\s*:", spec, re.M)],
        "synthetic": '"synthetic"' in spec,
        "methods": [m for m in VLLM_METHODS if m in _literal_names(spec, "SpeculativeMethod")],
    }


def sglang(wheel: Path) -> dict:
    text = _sources(wheel, "sglang/")
    adaptive = _sources(wheel, "sglang/srt/speculative/adaptive_spec_params.py")
    speculative = _sources(wheel, "sglang/srt/speculative/")
    args = _sources(wheel, "sglang/srt/server_args.py")
    return {
        "flags": [f for f in SGLANG_FLAGS if _has_flag(text, f)],
        "env": [e for e in SGLANG_ENV if re.search(rf"(?<![A-Z_]){e}(?![A-Z_])", text)],
        "match_expected": '"match-expected"' in text,
        # the per-batch-size slots of the adaptive config (integer-string keys) and whether a slot may pin step 0
        "adaptive_batch_slots": "isdigit()" in adaptive and '"candidate_steps"' in adaptive,
        "adaptive_step_zero": "non-negative" in adaptive,
        "algorithms": _sglang_algorithms(speculative, args),
    }


def main(*roots: str) -> None:
    out: dict = {"vllm": {}, "sglang": {}}
    wheels = [
        w
        for r in roots
        for w in Path(r).glob("**/*")
        if w.name.startswith(("vllm-", "sglang-"))
        and (w.suffix == ".whl" or (w.is_dir() and (w / w.name.split("-")[0]).is_dir()))
    ]
    for wheel in sorted(wheels, key=lambda w: (w.name.split("-")[0], _version_key(w.name))):
        engine, version = wheel.name.split("-")[:2]
        if version in out[engine]:
            continue
        out[engine][version] = found = (vllm if engine == "vllm" else sglang)(wheel)
        wanted = VLLM_FLAGS if engine == "vllm" else SGLANG_FLAGS
        print(
            f"{engine} {version}: flags missing {sorted(set(wanted) - set(found['flags']))}; "
            + (
                f"speculative-config keys missing {sorted(set(VLLM_KEYS) - set(found['speculative_config']))}"
                if engine == "vllm"
                else f"environment {found['env']}, match-expected {found['match_expected']}"
            )
            + f"; {'methods' if engine == 'vllm' else 'algorithms'} "
            f"{found['methods' if engine == 'vllm' else 'algorithms']}"
        )
    path = Path("tests/data/engine_flags.yaml")
    old = yaml.safe_load(path.read_text()) if path.exists() else {}
    for engine in ("vllm", "sglang"):  # versions read before from wheels not given this time stay as they were read
        kept = {v: entry for v, entry in old.get(engine, {}).items() if v not in out[engine]}
        out[engine] = dict(sorted({**kept, **out[engine]}.items(), key=lambda item: _version_key(f"x-{item[0]}")))
    out["trtllm"] = old.get("trtllm", {})
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        "# Written by scripts/check_engine_flags.py from released wheels (vLLM, SGLang); TensorRT-LLM by hand.\n"
        + yaml.safe_dump(out, sort_keys=False, width=110, default_flow_style=None)
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
