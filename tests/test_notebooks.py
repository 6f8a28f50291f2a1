"""Every notebook runs top to bottom (its code cells, in order, in one namespace)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notebook = json.loads(path.read_text())
    assert not any(cell.get("outputs") for cell in notebook["cells"]), "commit notebooks without outputs"
    namespace: dict = {"__name__": "__notebook__"}
    for number, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            exec(compile(source, f"{path.name} cell {number}", "exec"), namespace)  # noqa: S102
