"""Every notebook runs top to bottom in a fresh kernel, and is committed without outputs."""

from __future__ import annotations

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from conftest import REPO  # noqa: E402

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_expected_notebooks_exist():
    names = [p.stem for p in NOTEBOOKS]
    assert "01-quickstart" in names and "02-why-batch-size-matters" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    # The kernel imports this checkout's specsim, installed or not.
    monkeypatch.setenv("PYTHONPATH", str(REPO), prepend=os.pathsep)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs if out.output_type == "error"]
    assert not errors
    # Plots were drawn, not silently skipped.
    images = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if "image/png" in out.get("data", {})]
    assert images, f"{path.name} drew no figure"
