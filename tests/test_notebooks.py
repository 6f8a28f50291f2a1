"""Every notebook runs top to bottom in a Jupyter kernel (nbclient) and is committed without outputs.

Each notebook runs in a fresh ``python3`` kernel whose working directory is a
temporary folder (files it writes land there); it finds its data through the
``AGENTAB_NOTEBOOK_DIR`` environment variable, set to the notebooks folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["01_quickstart.ipynb", "02_sample_size.ipynb", "03_real_runs.ipynb",
                                         "04_harness.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_clean(path):
    raw = json.loads(path.read_text())
    nb = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.cells and nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), "start with a title"
    for number, cell in enumerate(raw["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"cell {number}: commit notebooks without outputs"
            assert cell.get("execution_count") is None, f"cell {number}: commit notebooks without execution counts"


@pytest.mark.slow  # each notebook in a fresh kernel: run by `pytest -m slow` (CI)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTAB_NOTEBOOK_DIR", str(NOTEBOOK_DIR))
    before = _files(NOTEBOOK_DIR)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, if any cell fails
    assert all(cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code")
    assert _files(NOTEBOOK_DIR) == before, "a notebook wrote beside the notebooks instead of its working directory"
