"""The README's two set-up commands, and CI running the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path


def _commands(readme: str) -> list[str]:
    # Set-up commands are the indented or fenced lines that create the virtual environment.
    return [line.strip() for line in readme.splitlines() if re.match(r"^\s*python3 -m venv \.venv &&", line)]


def test_readme_has_exactly_two_setup_commands(repo):
    commands = _commands((repo / "README.md").read_text())
    assert len(commands) == 2
    main_job, tests = commands
    assert main_job.endswith("specsim optimal-gamma")
    # Both cores of the CI machine (pytest-xdist, the test extra); loadgroup keeps tests that share files in one worker.
    assert tests.endswith("python -m pytest -n 2 --dist loadgroup")


def test_ci_runs_the_readme_test_command(repo):
    tests = _commands((repo / "README.md").read_text())[1]
    ci = (repo / ".ci" / "run").read_text()
    assert tests in ci.splitlines()


def test_torch_is_pinned_before_the_package_in_ci(repo):
    # A looser torch pulls a multi-GB CUDA build; the exact CPU wheel lies on the CI machine.
    tests = _commands((repo / "README.md").read_text())[1]
    assert tests.index("torch==2.13.0") < tests.index("'.[test,harness]'")


def test_every_package_folder_ships_in_the_wheel(repo):
    # The test suite imports specsim from the checkout, so a package missing from pyproject's list (specsim.cli.commands
    # was) only breaks an installed specsim: `pip install .` then `specsim` ends in an ImportError.
    import tomllib

    listed = set(tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(repo).parts) for p in (repo / "specsim").rglob("__init__.py")}
    assert folders - listed == set(), f"packages missing from pyproject.toml: {sorted(folders - listed)}"


def test_the_distribution_installs_this_project_under_a_name_of_its_own():
    # "specsim" on PyPI is another project (issue 37): this one installs as specsim-llm, imported and run as specsim.
    import importlib.metadata
    import tomllib

    import specsim

    name = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]["name"]
    assert name == "specsim-llm"
    assert importlib.metadata.version(name) == specsim.__version__
    assert "specsim" in {
        e.name for e in importlib.metadata.entry_points(group="console_scripts") if e.dist.name == name
    }
