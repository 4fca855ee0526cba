"""The house rules of the code (STYLE.md): imports flow one way, no import cycle, no module over 800 lines and no
function over 80, and each formula the deployment layer owns is computed in one place only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specsim"

#: Every module's layer, lowest first.  A module may import from its own layer or any lower one, never a higher one.
#: parallel sits below the timing sources because the roofline and the kernel source price tensor-parallel
#: collectives (STYLE.md draws it beside the drafters); drafters and engines sit above the sources because an engine
#: preset chooses its source's kernels.
LAYERS = [
    ["specsim", "specsim.limits", "specsim.defaults", "specsim._io", "specsim.shapes", "specsim.acceptance", "specsim.calibration",
     "specsim.timing._grid", "specsim.harness", "specsim.harness.defaults"],
    ["specsim.hardware", "specsim.models", "specsim.sampling", "specsim.workloads", "specsim.metrics"],
    ["specsim.parallel", "specsim.measurements", "specsim.calibration.bench_files", "specsim.toy", "specsim.harness.model"],
    ["specsim.timing.base", "specsim.harness.timing"],
    ["specsim.timing.roofline", "specsim.harness.specloop"],
    ["specsim.timing.kernels", "specsim.timing.measured", "specsim.calibrate"],
    ["specsim.timing.hybrid", "specsim.timing.memo"],
    ["specsim.timing"],
    ["specsim.drafters", "specsim.engines"],
    ["specsim.deployment"],
    ["specsim.speedup"],
    ["specsim.capacity", "specsim.schedule", "specsim.article", "specsim.sweep", "specsim.fidelity", "specsim.spec_fit",
     "specsim.calibration.file"],
    ["specsim.serving", "specsim.answers", "specsim.report", "specsim.plots", "specsim.calibration.runs"],
    ["specsim.calibration.engine_fit", "specsim.calibration.plan"],
    ["specsim.figures"],
    ["specsim.commands._args"],
    ["specsim.commands.model", "specsim.commands.deploy", "specsim.commands.load", "specsim.commands.measure",
     "specsim.commands.info", "specsim.commands.engine"],
    ["specsim.commands"],
    ["specsim.cli", "specsim.__main__"],
]
LAYER = {module: i for i, modules in enumerate(LAYERS) for module in modules}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """specsim modules ``name`` imports, at module level or inside functions."""
    out = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module
            candidates = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        out |= {c for c in candidates if c in MODULES and c != name}
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    assert sorted(set(MODULES) - set(LAYER)) == [] and sorted(set(LAYER) - set(MODULES)) == []


def test_no_import_goes_up_a_layer():
    upward = sorted(f"{a} (layer {LAYER[a]}) imports {b} (layer {LAYER[b]})" for a, deps in GRAPH.items() for b in deps
                    if LAYER[b] > LAYER[a])
    assert upward == []


def test_no_import_cycle():
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(GRAPH[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_and_function_sizes(name):
    text = MODULES[name].read_text()
    assert len(text.splitlines()) <= 800, f"{name} has {len(text.splitlines())} lines"
    long = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80]
    assert long == []


def _source_without_docstrings(path: Path) -> str:
    """The code of a module with its docstrings blanked (formulas quoted in prose do not count)."""
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                for i in range(first.lineno - 1, first.end_lineno):
                    lines[i] = ""
    return "\n".join(lines)


@pytest.mark.parametrize("pattern, home", [
    # The collective count of a tensor-parallel pass: 2 all-reduces per layer and one all-gather.
    (r"2\s*\*\s*(?:self|model|m)\.n_layers", {"specsim.parallel"}),
    # A round's time from its parts: steps x draft step + fixed part.
    (r"round_seconds\(", {"specsim.deployment", "specsim.speedup", "specsim.spec_fit"}),
    # The step-time source answers a pass only through the deployment (and the sources composing each other).
    (r"\.gpu_pass\(|source\.step_time\(|src\.step_time\(", {"specsim.deployment", "specsim.speedup", "specsim.serving",
                                                            "specsim.sweep", "specsim.figures", "specsim.fidelity",
                                                            "specsim.timing.kernels"}),
    # A sequence's KV footprint for admission and capacity.
    (r"sequence_kv_bytes\(", {"specsim.capacity", "specsim.serving"}),
])
def test_formulas_have_one_home(pattern, home):
    found = {name for name, path in MODULES.items() if re.search(pattern, _source_without_docstrings(path))}
    assert found <= home, f"{pattern!r} also appears in {sorted(found - home)}"


def test_a_rounds_time_is_composed_only_by_round_seconds():
    # The old copies added gamma draft steps to the verification pass by hand: "g * t_D + t_V" in five modules.
    pattern = re.compile(r"(?:gamma|\bg|depth|steps)\s*\*\s*[\w.\[\]]*draft[\w.\[\]]*\s*\+")
    found = {name for name, path in MODULES.items() if pattern.search(_source_without_docstrings(path))}
    assert found == set()
