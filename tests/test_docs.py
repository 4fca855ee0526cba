"""The documentation site builds strictly, its CLI reference is the parser's, and what it names exists.

* ``mkdocs build --strict`` fails on any warning: a page missing from the navigation or the navigation naming a page
  that does not exist, a link or an anchor that does not resolve.
* docs/reference/cli.md is what scripts/gen_cli_reference.py writes from ``build_parser()`` now, so a flag added,
  renamed or re-described cannot leave it stale.
* Every repository path (``specsim/...``, ``benchmarks/...``, ...) and every ``specsim.`` name the README and the docs
  give in backticks exists, and every relative link and image of the README resolves (MkDocs checks the pages under
  docs/, not the README).
* The python blocks of the pages in :data:`EXECUTED` run, in order, in one namespace (as a notebook would).

The commands of the console blocks are run by tests/test_readme.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Top-level folders and files of the repository: a backticked path that starts with one of them must exist.
ROOTS = (
    "specsim/",
    "benchmarks/",
    "scripts/",
    "examples/",
    "tests/",
    "notebooks/",
    "hardware/",
    "figures/",
    "docs/",
    ".ci/",
    "pyproject.toml",
    "mkdocs.yml",
)


#: Pages whose ```python blocks run here (the others' need a cluster or show an API without running it).
EXECUTED = ("docs/library.md",)
_PYTHON = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)


def _pages() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))


def _code_spans(text: str) -> list[str]:
    """Inline code of a page, outside fenced and indented blocks."""
    text = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.S | re.M)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    return re.findall(r"`([^`\n]+)`", text)


def test_the_docs_build_strictly(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert (tmp_path / "site" / "figures" / "drafters.png").is_file()  # figures/ is served through docs/figures


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cli_reference", REPO / "scripts" / "gen_cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_what_the_parser_says_now():
    generated = _generator().render()
    committed = (REPO / "docs" / "reference" / "cli.md").read_text()
    assert committed == generated, "docs/reference/cli.md is stale: run python scripts/gen_cli_reference.py"


def test_the_cli_reference_lists_every_command_and_flag():
    from specsim.cli.main import build_parser

    text = (REPO / "docs" / "reference" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, parser in sub.choices.items():
        assert f"## specsim {name}\n" in text, name
        section = text.split(f"## specsim {name}\n", 1)[1].split("\n## specsim ", 1)[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in section, f"specsim {name}: {flag} missing from the CLI reference"


def test_every_path_the_docs_name_exists():
    missing, checked = [], 0
    for page in _pages():
        for span in _code_spans(page.read_text()):
            for word in span.split():
                word = word.rstrip(".,;:)")
                if word.startswith(ROOTS) and not any(c in word for c in "<>{}$"):
                    checked += 1
                    if not (list(REPO.glob(word)) if "*" in word else (REPO / word).exists()):
                        missing.append(f"{page.relative_to(REPO)}: {word}")
    assert checked > 100 and not missing, "paths the docs name that do not exist:\n" + "\n".join(missing)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_specsim_name_the_docs_give_resolves():
    names = {
        (page, m)
        for page in _pages()
        for span in _code_spans(page.read_text())
        for m in re.findall(r"\bspecsim(?:\.\w+)+", span)
    }
    unresolved = sorted(f"{p.relative_to(REPO)}: {n}" for p, n in names if not _resolves(n))
    assert names and not unresolved, "names the docs give that do not exist:\n" + "\n".join(unresolved)


@pytest.mark.parametrize(
    "target", sorted(set(re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text())))
)
def test_the_readme_links_resolve(target):
    if target.startswith(("http://", "https://")):
        return
    assert (REPO / target).exists(), f"README.md links to {target}, which does not exist"


@pytest.mark.parametrize("page", EXECUTED)
def test_the_python_blocks_of_a_page_run(page, tmp_path, monkeypatch):
    """In a scratch folder that sees the repository's examples/ and hardware/, /tmp/ standing for it (as the console
    blocks of tests/test_readme.py); a block that times passes with the torch harness is skipped where torch is not
    installed (no later block needs what it defines)."""
    blocks = _PYTHON.findall((REPO / page).read_text())
    assert blocks, f"{page} has no python block"
    for name in ("examples", "hardware"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    has_torch = importlib.util.find_spec("torch") is not None
    namespace: dict = {"__name__": "__docs__"}
    for i, block in enumerate(blocks, 1):
        if "specsim.harness" in block and not has_torch:
            continue
        exec(compile(block.replace("/tmp/", f"{tmp_path}/"), f"{page}, python block {i}", "exec"), namespace)


def test_the_index_answers_what_to_run_at_n_users(capsys):
    """docs/index.md's task table had no row for a question a new user asks first, what to run at N users; its row
    names the command that answers at a concurrency, and that command, with N, P and O given, answers it."""
    from specsim.cli.main import main

    rows = [line for line in (REPO / "docs" / "index.md").read_text().splitlines() if line.startswith("| ")]
    (row,) = [r for r in rows if "N users" in r.split("|")[1]]
    (command,) = [span for span in re.findall(r"`([^`]+)`", row) if span.startswith("specsim ")]
    argv = command.split()[1:]
    assert argv[0] == "optimal-gamma" and "--concurrency" in argv, command
    given = {"N": "8", "P": "1000", "O": "256"}
    assert main([given.get(word, word) for word in argv]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("concurrency 8 ") for line in out.splitlines()), out
