"""The tree is formatted and linted by ruff (pyproject.toml's [tool.ruff]: line length 120), checked here so that the
README's test command, and so CI, runs it (issue 37)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: it is in the test extra (pip install '.[test]')")
    return [found]


@pytest.mark.parametrize("check", [["format", "--check"], ["check"]], ids=["format", "lint"])
def test_ruff_finds_nothing_to_change(check):
    run = subprocess.run(_ruff() + check + ["."], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
